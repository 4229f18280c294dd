/* codec.h -- the contract every compression method implements.
 *
 * A method is a `vq_codec_ops` table (one per file in src/codec/), listed in
 * registry.c. vq_codec_create parses the spec, fills the generic fields of
 * `struct vq_codec`, and calls ops->init, which reads the method's
 * parameters from the spec (unused keys are then refused), sets the sizes
 * below and allocates the method's private state in c->impl.
 *
 * Kernels are plain scalar C: they are the reference that SIMD or GPU
 * variants are tested against. The public wrappers (codec.c) check
 * arguments, so kernels may assume: non-NULL pointers, n a multiple of
 * block_tokens, c ready (calibrated if needed). Kernels never allocate per
 * call; scratch they need lives in c->impl (sized at init) -- the codec is
 * therefore not safe for concurrent calls on one handle.
 *
 * Packed layout rule: a block (block_tokens tokens) is block_bytes
 * contiguous bytes holding its codes and all its metadata, blocks follow
 * each other with no padding. Multi-byte fields are little-endian. */
#ifndef VQ_CODEC_CODEC_H
#define VQ_CODEC_CODEC_H

#include <stdint.h>

#include "core/error.h"
#include "core/spec.h"

#define VQ_CODEC_MAX_HEAD_DIM 256 /* head_dim: a multiple of 32 up to this (vq_codec_create) */

typedef struct vq_codec_ops {
    const char *name;
    const char *default_spec;  /* e.g. "turboquant_rvq:bits=1" */
    int needs_calibration;

    /* Read parameters from spec, set c->block_tokens, block_bytes,
     * shared_bytes, query_bytes, accum_size and c->canon (canonical spec);
     * allocate c->impl. Errors via vq_fail(c->err, ...). */
    vq_status (*init)(vq_codec *c, vq_spec *spec);
    void (*destroy)(vq_codec *c);

    void (*encode)(vq_codec *c, const float *x, size_t n, uint8_t *dst);
    void (*decode)(vq_codec *c, const uint8_t *src, size_t n, float *x);

    void (*prepare_query)(vq_codec *c, const float *q, uint8_t *qbuf);
    void (*score)(vq_codec *c, const uint8_t *qbuf, int n_q,
                  const uint8_t *codes, size_t n, float *scores);
    void (*accumulate)(vq_codec *c, const float *w, int n_q,
                       const uint8_t *codes, size_t n, float *acc);
    void (*accum_finish)(vq_codec *c, const float *acc, float *out);

    /* Optional (NULL for methods without calibration state). */
    vq_status (*calibrate)(vq_codec *c, const float *x, size_t n);
    /* Serialize the method's calibration payload (not the common header,
     * which codec.c writes). dst NULL -> size in *len. */
    vq_status (*state_write)(const vq_codec *c, uint8_t *dst, size_t cap, size_t *len);
    vq_status (*state_read)(vq_codec *c, const uint8_t *src, size_t len);

    /* Optional, enables the tiled path (tiled.h): the vectors the fused
     * kernels work with, n x accum_size floats for n tokens (n a multiple
     * of block_tokens), such that accumulate adds sum_i w_i * out_i. When
     * dot_query is set, also score = <the first accum_size floats of the
     * prepared query, out_i> (query_bytes >= 4 * accum_size). */
    void (*values)(vq_codec *c, const uint8_t *codes, size_t n, float *out);
    int dot_query;

    /* Optional, for keys packed before RoPE (cache/prerope.h): the raw
     * scores of tokens [t0, t0 + n) of the one block at src against n_q
     * float queries q (qstride floats apart), each token's decoded vector
     * first turned forward by the RoPE table row tab + rows[i]*head_dim
     * (kernels/rope.h layout and pairing), into s[j*sstride + i]: decode,
     * rope_pairs, dense_dot up to float rounding, without a decoded block.
     * Returns 0, writing nothing, where the codec's parameters have no such
     * path (the caller decodes then). */
    int (*score_rope)(vq_codec *c, const uint8_t *src, size_t t0, size_t n, const float *tab, const int32_t *rows,
                      int neox, const float *q, size_t qstride, int n_q, float *s, size_t sstride);

    /* Optional: make dst->impl for a second handle of src (dst holds a
     * copy of src's generic fields, impl NULL): its own scratch, the same
     * parameters and calibration state, so that dst encodes and scores
     * exactly as src. Without it vq_codec_clone rebuilds the codec from
     * its canonical spec and copies the calibration state. */
    vq_status (*clone)(const vq_codec *src, vq_codec *dst);
} vq_codec_ops;

/* A fused value kernel decodes each row once per few queries; from this
 * many queries on (a prefill tile), decoding once into the tile is cheaper
 * for kivi and the q-blocks (per token, D=64, one core, CPU time, 24
 * queries: kivi-2 50.7 -> 30.6 ns, q4_0 38.9 -> 25.3, q8_0 32.5 -> 25.5;
 * at 8 queries about even; fp16's fused kernel stays cheaper). */
#define VQ_CODEC_TILED_MIN_Q 16

struct vq_codec {
    const vq_codec_ops *ops;
    int head_dim;
    vq_role role;
    uint64_t seed;
    size_t block_tokens;  /* tokens per encoded block (>= 1) */
    size_t block_bytes;   /* bytes per block, metadata included */
    size_t shared_bytes;  /* per-codec shared state (rotation, codebooks) */
    size_t query_bytes;   /* prepared-query buffer size */
    size_t accum_size;    /* floats per accumulator */
    int ready;            /* 0 until calibrated for methods that need it */
    char canon[VQ_SPEC_MAX_LEN]; /* canonical spec */
    char err[VQ_ERRLEN];
    void *impl;           /* method-private state */
    const void *ctx;      /* borrowed context of an internal codec (given to
                             vq_codec_create_ops, read by its init), or NULL */
    int score_own;        /* set by init: score with ops->score even when the
                             method has a tiled path (a non-float query) */
    int accum_own;        /* set by init: accumulate with ops->accumulate even
                             when the method has a tiled path (a fused kernel) */
    int accum_tiled_min_q; /* with accum_own: from this many queries on, the
                              tiled path after all (same bits); 0 = never */
    size_t value_head;    /* set by init (values): bytes at the start of a page that the
                             codec's value sums do not fetch ahead themselves, for the
                             attention loop to fetch (0: it fetches its default) */
    float *tile;          /* tiled path: tile_tokens x accum_size floats, or NULL */
    size_t tile_tokens;   /* a multiple of block_tokens */
};

/* Create a codec of a method that is not in the registry (internal
 * methods of the cache: cache/xquant.c, cache/xkv.c). The same as
 * vq_codec_create except that `spec`'s method name must be ops->name and
 * `ctx` (borrowed, may be NULL) is stored in c->ctx for ops->init. */
vq_status vq_codec_create_ops(const vq_codec_ops *ops, const char *spec, int head_dim, vq_role role,
                              uint64_t seed, const void *ctx, vq_codec **out);

/* A second handle of c that encodes, decodes and scores exactly as c and
 * can be used by another thread at the same time as c (codec handles keep
 * scratch, so one handle serves one thread at a time). */
vq_status vq_codec_clone(const vq_codec *c, vq_codec **out);

/* accum_finish of methods whose accumulator is the output vector
 * (accum_size == head_dim): a copy. */
void vq_codec_finish_copy(vq_codec *c, const float *acc, float *out);

/* decode of methods whose blocks hold one token: one(c, block t,
 * x + t*head_dim) for t < n, in order. */
typedef void vq_decode_token_fn(vq_codec *c, const uint8_t *blk, float *x);
void vq_codec_decode_each(vq_codec *c, const uint8_t *src, size_t n, float *x, vq_decode_token_fn *one);

/* Registered methods, NULL-terminated (registry.c). */
extern const vq_codec_ops *const vq_codec_registry[];

/* The methods (one file each). */
extern const vq_codec_ops vq_codec_fp16_ops;
/* codec-a: non-calibrated methods (quant_blocks.c, turboquant.c, qjl.c, rabitq.c) */
extern const vq_codec_ops vq_codec_q8_0_ops;
extern const vq_codec_ops vq_codec_q4_0_ops;
extern const vq_codec_ops vq_codec_turboquant_rvq_ops;
extern const vq_codec_ops vq_codec_turboquant_mse_ops;
extern const vq_codec_ops vq_codec_turboquant_prod_ops;
extern const vq_codec_ops vq_codec_qjl_ops;
extern const vq_codec_ops vq_codec_rabitq_ops;
extern const vq_codec_ops vq_codec_kivi_ops;
extern const vq_codec_ops vq_codec_kivix_ops; /* kivix.c: any bits, sparse outliers */
extern const vq_codec_ops vq_codec_vecinfer_ops;
extern const vq_codec_ops vq_codec_spectral_ops;

#endif
