/*
 * veloxquant.h -- public API of libveloxquant.
 *
 * VeloxQuant keeps the KV cache of transformer inference in packed form:
 * codecs encode key/value vectors into packed bytes, and attention scores and
 * accumulates straight from those bytes. Every byte the library reports as
 * held is a byte it actually holds.
 *
 * Conventions (all sections):
 *   - Every fallible call returns vq_status. VQ_OK is 0.
 *   - On failure, a message naming the problem is kept: per handle
 *     (vq_codec_error, ...) and per thread (vq_last_error). The library
 *     never prints, exits or aborts on bad input.
 *   - Handles are opaque; each `create`/`load` has a `free`, and free(NULL)
 *     is harmless.
 *   - Buffers passed in are owned by the caller unless a comment says
 *     otherwise; sizes are given by a companion `_bytes`/`_size` function.
 *
 * The header is divided into sections (core, codec, model, cache). Each
 * section is maintained with the module that implements it.
 */
#ifndef VELOXQUANT_H
#define VELOXQUANT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VQ_VERSION_MAJOR 0
#define VQ_VERSION_MINOR 1
#define VQ_VERSION_PATCH 0

/* ======================================================================== *
 *  Core: status codes and error messages                                   *
 * ======================================================================== */

typedef enum {
    VQ_OK = 0,
    VQ_ERR_INVALID_ARG,       /* a bad argument: NULL, out of range, bad spec */
    VQ_ERR_NOMEM,             /* an allocation failed */
    VQ_ERR_IO,                /* a file could not be opened, read or written */
    VQ_ERR_FORMAT,            /* a file or string is malformed */
    VQ_ERR_UNSUPPORTED,       /* valid, but not supported by this build/model */
    VQ_ERR_NEEDS_CALIBRATION, /* the codec needs calibration state it lacks */
    VQ_ERR_STATE              /* the call is not valid in the object's state */
} vq_status;

/* A short constant name for a status ("invalid argument", ...). Never NULL. */
const char *vq_status_str(vq_status st);

/* The message of the last failing call made by this thread, or "" if none.
 * The pointer stays valid until the next failing call on this thread. */
const char *vq_last_error(void);

/* Library version as "MAJOR.MINOR.PATCH". */
const char *vq_version(void);

/* ======================================================================== *
 *  Codecs: one compression method for vectors of one head_dim              *
 * ======================================================================== */

typedef struct vq_codec vq_codec;

/* Which tensor a codec encodes. Some methods treat keys and values
 * differently (KIVI: keys per channel, values per token; VecInfer: keys are
 * smoothed, values are not). */
typedef enum { VQ_ROLE_KEY = 0, VQ_ROLE_VALUE = 1 } vq_role;

/* Create a codec from a spec string `METHOD[:key=value[,key=value...]]`
 * (grammar and parameters: README.md, docs/METHODS.md) for vectors of
 * head_dim floats (a multiple of 32, 32..256). The seed fixes every random
 * choice (rotations, sign diagonals): same seed, same bytes.
 *
 * On success *out owns a codec to release with vq_codec_free.
 * Errors: VQ_ERR_INVALID_ARG (NULL, unknown method, unknown parameter,
 * out-of-range value, unsupported head_dim; the message names the part),
 * VQ_ERR_NOMEM, VQ_ERR_IO/VQ_ERR_FORMAT (a `calib=FILE` that cannot be read). */
vq_status vq_codec_create(const char *spec, int head_dim, vq_role role,
                          uint64_t seed, vq_codec **out);
void vq_codec_free(vq_codec *c);

/* Message of the last failure on this codec, "" if none. */
const char *vq_codec_error(const vq_codec *c);

/* Method name ("turboquant_rvq") and the canonical full spec with every
 * parameter spelled out ("turboquant_rvq:bits=1"). Owned by the codec. */
const char *vq_codec_name(const vq_codec *c);
const char *vq_codec_spec(const vq_codec *c);
int vq_codec_head_dim(const vq_codec *c);
vq_role vq_codec_role(const vq_codec *c);

/* Encoding granularity: encode/decode/score/accumulate take whole blocks of
 * vq_codec_block_tokens(c) tokens (1 for most methods; the group size for
 * KIVI keys). A block occupies vq_codec_block_bytes(c) contiguous bytes. */
size_t vq_codec_block_tokens(const vq_codec *c);
size_t vq_codec_block_bytes(const vq_codec *c);

/* Everything stored per token, metadata included (= block_bytes/block_tokens).
 * State shared by the whole layer/head (codebooks, bases, rotation tables) is
 * not included; vq_codec_shared_bytes reports it. */
size_t vq_codec_bytes_per_token(const vq_codec *c);
size_t vq_codec_shared_bytes(const vq_codec *c);
/* 8 * bytes_per_token / head_dim. */
double vq_codec_bits_per_element(const vq_codec *c);

/* 1 if the method needs calibration state (vecinfer, spectral). */
int vq_codec_needs_calibration(const vq_codec *c);
/* 1 if the codec can encode (calibrated, or needs none). */
int vq_codec_is_ready(const vq_codec *c);

/* Encode n tokens (n a multiple of block_tokens) of head_dim floats each,
 * row-major in x, into n/block_tokens blocks at dst
 * (n * bytes_per_token bytes). VQ_ERR_NEEDS_CALIBRATION if not ready. */
vq_status vq_codec_encode(vq_codec *c, const float *x, size_t n, void *dst);
/* Decode n tokens back to floats. */
vq_status vq_codec_decode(vq_codec *c, const void *src, size_t n, float *x);

/* Fused attention kernels on packed data.
 *
 * A query is transformed once per codec (rotation, lookup tables, quantized
 * query) into vq_codec_query_bytes(c) bytes by vq_codec_prepare_query.
 * vq_codec_score computes, for n_q prepared queries stored back to back in
 * qbuf and n encoded tokens, scores[j*n + i] = <q_j, k_i> (the plain dot
 * product with the decoded key; no scaling), reading the packed codes once.
 *
 * vq_codec_accumulate adds sum_i w[j*n + i] * v_i into acc + j*accum_size,
 * in the codec's internal domain (e.g. rotated). acc must start zeroed;
 * vq_codec_accum_finish maps one accumulator to an output vector of
 * head_dim floats (inverse rotation etc.). */
size_t vq_codec_query_bytes(const vq_codec *c);
vq_status vq_codec_prepare_query(vq_codec *c, const float *q, void *qbuf);
vq_status vq_codec_score(vq_codec *c, const void *qbuf, int n_q,
                         const void *codes, size_t n, float *scores);
size_t vq_codec_accum_size(const vq_codec *c);
vq_status vq_codec_accumulate(vq_codec *c, const float *w, int n_q,
                              const void *codes, size_t n, float *acc);
vq_status vq_codec_accum_finish(vq_codec *c, const float *acc, float *out);

/* Calibration (methods that need it): learn state from n sample vectors.
 * Other methods return VQ_OK and ignore the samples. */
vq_status vq_codec_calibrate(vq_codec *c, const float *x, size_t n);

/* Calibration state as bytes (versioned, self-describing; format in
 * docs/FORMATS.md). vq_codec_state_write with dst NULL stores the size
 * needed in *len. vq_codec_state_read checks method, head_dim, role and
 * parameters against the codec and refuses a mismatch (VQ_ERR_FORMAT). */
vq_status vq_codec_state_write(const vq_codec *c, void *dst, size_t cap, size_t *len);
vq_status vq_codec_state_read(vq_codec *c, const void *src, size_t len);

/* Enumerate the registered methods: index 0.. until NULL. Returns the method
 * name and, in *default_spec, its spec with default parameters. */
const char *vq_codec_method(int index, const char **default_spec);

/* ---- end of codec section ---------------------------------------------- */

/* ======================================================================== *
 *  Model runtime: GGUF models, tokenizers, generation                      *
 * ======================================================================== */

/* (model section: maintained with src/model/) */

/* ---- end of model section ---------------------------------------------- */

/* ======================================================================== *
 *  KV cache: packed, paged storage and attention over it                   *
 * ======================================================================== */

/* (cache section: maintained with src/cache/) */

/* ---- end of cache section ---------------------------------------------- */

#ifdef __cplusplus
}
#endif

#endif /* VELOXQUANT_H */
