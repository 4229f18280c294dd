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
 * The header is divided into sections, each using only those above it:
 *   core   status codes, error messages, version   (src/core/)
 *   codec  one compression method for vectors       (src/codec/)
 *   cache  packed, paged KV storage and attention   (src/cache/)
 *   model  GGUF models, tokenizers, contexts, generation, and the model's
 *          use of the cache (build, calibrate, save) (src/model/)
 * Each section is maintained with the module that implements it.
 */
#ifndef VELOXQUANT_H
#define VELOXQUANT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================== *
 *  Core: status codes, error messages, version                             *
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

/* The library version, written here only: vq_version(), `veloxquant
 * --version`, the shared library's soname (libveloxquant.so.MAJOR) and the
 * installed pkg-config and CMake files take it from these lines
 * (tests/test_headers.sh checks that python/pyproject.toml agrees).
 * VQ_VERSION_STRING is "MAJOR.MINOR.PATCH" of the header the caller compiled
 * against; vq_version() that of the library linked at run time. */
#define VQ_VERSION_MAJOR 0
#define VQ_VERSION_MINOR 1
#define VQ_VERSION_PATCH 0
#define VQ_VERSION_STR_(x) #x
#define VQ_VERSION_XSTR_(x) VQ_VERSION_STR_(x)
#define VQ_VERSION_STRING                                                                 \
    VQ_VERSION_XSTR_(VQ_VERSION_MAJOR) "." VQ_VERSION_XSTR_(VQ_VERSION_MINOR) "." \
    VQ_VERSION_XSTR_(VQ_VERSION_PATCH)
/* MAJOR * 10000 + MINOR * 100 + PATCH, for #if comparisons. */
#define VQ_VERSION_NUMBER (VQ_VERSION_MAJOR * 10000 + VQ_VERSION_MINOR * 100 + VQ_VERSION_PATCH)

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
 * the keys of kivi and kivix). A block occupies vq_codec_block_bytes(c) contiguous bytes. */
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
 *  KV cache: packed, paged storage and attention over it                   *
 * ======================================================================== */

/* (cache section: maintained with src/cache/) */

/* A cache holds, per layer and KV head, the keys and values appended so far
 * as packed codes of the configured codecs, in pages of P tokens taken from
 * a per-cache pool; the newest `residual` tokens (and the tokens of an
 * unfinished codec block) stay fp16 in a residual window. Attention is
 * computed straight from the packed codes (docs/cache.md).
 *
 * Usage per layer and step:  vq_cache_append(new K/V at positions pos0..)
 * then vq_cache_attend(queries of those same tokens). Prefill (n tokens)
 * and decode (1 token) take the same path. A cache is not safe for
 * concurrent calls. */

typedef struct vq_cache_config vq_cache_config;
typedef struct vq_cache vq_cache;

/* ---- configuration ------------------------------------------------------ *
 * Text form: space-separated FIELD=VALUE, each field at most once:
 *   keys=SPEC       codec of keys   (default fp16)
 *   values=SPEC     codec of values (default fp16)
 *   residual=N      newest N tokens kept fp16 (default 0, max 1048576)
 *   sinks=N         the first N tokens of each (layer, KV head) kept fp16
 *                   for the cache's life (default 0, max 4096; not with
 *                   evict or cross)
 *   prerope=0|1|2   1: keys packed before RoPE (RoPE undone on packing,
 *                   applied again when scoring; KVQuant); 2: as 1, and the
 *                   pre-RoPE keys centred per (layer, KV head). Needs each
 *                   layer's RoPE: vq_cache_for_model sets it, else
 *                   vq_cache_set_rope before the layer's first append
 *   check=none|warn|strict  read by vq_cache_for_model: a short KL test of
 *                   the config on the model (warn: message; strict: refuse)
 *   evict=SPEC      none (default) | streaming_llm:sinks=4,window=W |
 *                   h2o:budget=B,sinks=S,recent=R | snapkv:budget=B,window=32 |
 *                   tova:budget=B | pyramidkv:budget=B,window=32,min_ratio=0.5
 *   cross=SPEC      cross-layer sharing (docs/cache.md), all implemented:
 *                   none (default) | minicache:start=0.5,threshold=0.9 |
 *                   xquant:bits=4,rbits=2 | xkv:group=2,energy=0.95,bits=4,min=64
 *                   (values shown are the defaults; none of them combines
 *                   with evict: vq_cache_create refuses it)
 *   page=N|auto     tokens per page, 1..65536, rounded up to a multiple of
 *                   the codecs' block tokens; auto (the default): 1024, but
 *                   256 in a layer with a sliding window and in a cache with
 *                   evict or cross (their memory follows the live slots a
 *                   page at a time; larger pages attend faster)
 *   bits=B0,B1,...  one entry per layer, written as the `bits` parameter of
 *                   the key and value codecs of that layer (those whose
 *                   method has one)
 *   kbits=B0,...    per-layer bits of the key codec only (overrides bits
 *   vbits=B0,...    for keys); vbits the same for values. The codec must
 *                   take a `bits` parameter (kivi, kivix, turboquant, ...)
 *   vdrop=F         0 (default) .. 0.25: attention leaves out the values of
 *                   blocks of 32 tokens whose softmax weights are negligible
 *                   (per context chunk, a block below F / (the chunk's
 *                   blocks) of the chunk's weight sum for every query), so
 *                   the weight left out is at most F of the total and each
 *                   output moves by at most F times the largest |value|;
 *                   those blocks' values are not read (docs/cache.md)
 *   keep_first=N keep_last=N keep_spec=SPEC
 *                   the first/last N layers use keep_spec (default fp16)
 *                   for keys and values, ignoring keys/values/bits
 * SPEC is `METHOD[:key=value,...]` (no spaces). Errors name the field. */

/* Parse text into a new config (*out; release with vq_cache_config_free).
 * VQ_ERR_INVALID_ARG with a message naming the field on any error. */
vq_status vq_cache_config_parse(const char *text, vq_cache_config **out);
void vq_cache_config_free(vq_cache_config *cfg);
/* Canonical text (every field spelled out, fixed order); owned by cfg.
 * Parsing it gives an equal config. */
const char *vq_cache_config_str(const vq_cache_config *cfg);

/* ---- shape -------------------------------------------------------------- */

/* The shape of one attention layer: what a cache is built for
 * (vq_cache_shape) and what vq_model_layer_info reports of a model's
 * layer (the ranges are the cache's). */
typedef struct {
    int n_kv_heads;  /* 1..1024 */
    int n_q_heads;   /* n_kv_heads times 1..64; q head j uses KV head
                        j / (n_q_heads / n_kv_heads) */
    int head_dim;    /* a multiple of 32 in 32..256 */
    int window;      /* sliding window in tokens (a query at p sees keys at
                        p-window < pos <= p); 0 = full attention */
    float softcap;   /* attention logit soft-capping: s = softcap *
                        tanh(s / softcap) after scaling; 0 = none (>= 0) */
} vq_layer_shape;

/* Deprecated: the cache API's earlier name of vq_layer_shape. */
typedef vq_layer_shape vq_cache_layer_shape;

typedef struct {
    int n_layers;                  /* 1..4096 */
    const vq_layer_shape *layers;  /* n_layers entries (copied) */
    uint64_t fingerprint;  /* caller's model identity: saved with the cache
                              and compared by vq_cache_load */
} vq_cache_shape;

/* Build an empty cache for `shape` with `cfg` (both copied). seed fixes the
 * codecs' random choices (per layer and role). Codecs that need calibration
 * either get it from calib=FILE in their spec or must be calibrated with
 * vq_cache_calibrate before the first append.
 * Errors: VQ_ERR_INVALID_ARG (bad shape, bits list length != n_layers,
 * codec spec refused -- message names layer and field), VQ_ERR_UNSUPPORTED
 * (a cross-layer method with eviction, or no layers it can pair or group),
 * VQ_ERR_NOMEM, codec errors.
 * With cross=minicache, a follower layer must be appended right after its
 * anchor with the same positions (VQ_ERR_STATE otherwise). */
vq_status vq_cache_create(const vq_cache_config *cfg, const vq_cache_shape *shape,
                          uint64_t seed, vq_cache **out);
/* vq_cache_for_model (model section, below) builds the shape and
 * fingerprint from a loaded model. */
void vq_cache_free(vq_cache *c);
const char *vq_cache_error(const vq_cache *c);
/* The shape the cache was built with (layers owned by the cache). */
vq_status vq_cache_get_shape(const vq_cache *c, vq_cache_shape *out);
/* Canonical codec spec of a layer's keys (role KEY) or values. */
const char *vq_cache_codec_spec(const vq_cache *c, int layer, vq_role role);

/* Calibrate the codecs of `layer` that need it (others ignore the call)
 * on n sample tokens: k, v are [n][n_kv_heads][head_dim] floats (all heads
 * pooled). Either of k, v may be NULL to skip that role. */
vq_status vq_cache_calibrate(vq_cache *c, int layer, const float *k, const float *v, size_t n);

/* The RoPE of `layer` for a prerope=1|2 cache built with vq_cache_create
 * (vq_cache_for_model sets it from the model): inv_freq[head_dim/2], the
 * angle of pair i at position p being p * inv_freq[i] (finite, >= 0);
 * neox 1 pairs channels (i, i + head_dim/2), 0 adjacent ones (2i, 2i + 1).
 * Set it before the layer's first append; setting it again replaces it
 * (keys already packed keep the RoPE they were packed with: do not).
 * Errors: VQ_ERR_INVALID_ARG (NULL, layer out of range, a bad frequency),
 * VQ_ERR_STATE (the config has no prerope), VQ_ERR_NOMEM. */
vq_status vq_cache_set_rope(vq_cache *c, int layer, const float *inv_freq, int neox);

/* ---- data path ---------------------------------------------------------- */

/* Append n tokens (k, v: [n][n_kv_heads][head_dim] floats, post-RoPE) at
 * positions pos0..pos0+n-1. Positions must be >= 0 and increase strictly
 * over the calls on one layer (the cache never renumbers; eviction leaves
 * gaps). Before adding, the eviction policy and the sliding window are
 * enforced on the tokens already held. Steady state allocates nothing
 * (pages come from the pool).
 * Errors: VQ_ERR_INVALID_ARG, VQ_ERR_NEEDS_CALIBRATION, VQ_ERR_NOMEM. */
vq_status vq_cache_append(vq_cache *c, int layer, const float *k, const float *v,
                          size_t n, int32_t pos0);

/* Attention of the last n tokens appended to `layer` (n <= the last append's
 * count; query t has position pos0 + (count - n) + t):
 *   out[t][h] = sum_i softmax_i(cap(scale * <q[t][h], k_i>)) v_i
 * (cap: the layer's softcap, identity when 0)
 * over the held tokens i visible to it (pos_i <= its position, inside the
 * layer's window). q and out: [n][n_q_heads][head_dim] floats; n_q_heads
 * must equal the layer's. The query heads of one KV head are scored
 * together (packed data read once per KV head and query tile); the softmax
 * is online over pages, in float with a running max. Attention weights feed
 * the eviction policy, which is enforced when the call ends. */
vq_status vq_cache_attend(vq_cache *c, int layer, const float *q, size_t n,
                          int n_q_heads, float scale, float *out);

/* Run vq_cache_attend on n_threads threads owned by the cache (work split
 * over KV heads and context chunks; 1 = serial, the default; <= 0 = all
 * cores or $VQ_THREADS), and the encodes of vq_cache_append's residual
 * flushes (a layer's heads at once, for groups of 32 tokens or more). A
 * context made by vq_ctx_create_cached sets its own threads. The result
 * does not depend on the thread count beyond float rounding of the chunk
 * merge (the packed bytes not at all). VQ_ERR_NOMEM leaves the cache
 * serial. */
vq_status vq_cache_set_n_threads(vq_cache *c, int n_threads);

/* Forget every token (pages go back to the pool; codecs and their
 * calibration stay). */
void vq_cache_reset(vq_cache *c);

/* Make ready, in the cache's page pool, the pages that n_tokens more
 * tokens appended to every layer will take, their memory written once so
 * the OS maps it now: appends up to then take pages without faulting
 * fresh memory in (on transparent huge pages a first touch can cost
 * milliseconds, 26 ms per 2 MB on some VMs: a decode step that opens new
 * pages would stall). Estimated from what each KV head holds, the residual
 * window, the eviction budget and sliding windows; a cross-layer cache
 * reserves nothing. Idle pages count in vq_cache_usage.pool_free_bytes.
 * Errors: VQ_ERR_INVALID_ARG (NULL, n_tokens > INT32_MAX), VQ_ERR_NOMEM
 * (more pages than the machine's memory: refused before any is made; or an
 * allocation failed: pages made so far stay idle in the pool; the tokens
 * held are intact either way). */
vq_status vq_cache_reserve(vq_cache *c, size_t n_tokens);

/* The tokens held by (layer, kv_head), oldest first: positions and, when
 * k/v are not NULL, their vectors decoded to float ([i][head_dim]).
 * cap is the capacity of each non-NULL array in tokens; *n gets the count
 * (VQ_ERR_INVALID_ARG if it exceeds cap; call with cap 0 to size). */
vq_status vq_cache_gather(vq_cache *c, int layer, int kv_head, size_t cap,
                          int32_t *pos, float *k, float *v, size_t *n);

/* ---- memory accounting -------------------------------------------------- */

typedef struct {
    uint64_t tokens;          /* live tokens held (summed over KV heads) */
    uint64_t stored_slots;    /* packed slots stored incl. dead ones waiting
                                 for compaction, plus residual tokens */
    uint64_t fp16_bytes;      /* tokens * head_dim * 2 */
    uint64_t accounted_bytes; /* packed slots * codec bytes/token +
                                 residual tokens * head_dim * 2 */
    uint64_t resident_bytes;  /* pages in use * page bytes + residual_bytes */
    uint64_t residual_bytes;  /* residual window buffers (capacity) */
    uint64_t residual_tokens; /* tokens in the residual window (fp16) */
    uint64_t shared_bytes;    /* codec shared state (rotations, codebooks) */
} vq_cache_role_stats;

typedef struct {
    vq_cache_role_stats keys, values;
    uint64_t index_bytes;     /* slot index: page tables, residual positions,
                                 and only where needed per-slot positions
                                 (gaps), liveness (evictions), scores
                                 (h2o/tova/snapkv/pyramidkv) */
    uint64_t pool_free_bytes; /* idle pages kept by the pool (total only) */
    uint64_t buffer_bytes;    /* per-cache buffers (total only): attention
                                 scratch and partials, eviction weights and
                                 candidates, MiniCache staging */
    uint64_t total_bytes;     /* everything the cache holds on the heap for
                                 data (total only): keys and values
                                 resident + shared + index + pool_free +
                                 buffers. Fixed per-layer codec objects
                                 (handles, their query scratch) are not in it. */
} vq_cache_usage;

/* Stats of one layer (layer >= 0) or of the whole cache (layer -1). */
vq_status vq_cache_stats(const vq_cache *c, int layer, vq_cache_usage *out);

/* ---- persistence (format: docs/cache-format.md) ------------------------- */

/* Write the cache (config, shape, fingerprint, seed, codec calibration
 * state, packed pages, residual windows, positions, policy scores) to path
 * atomically: on any failure path is left as it was. */
vq_status vq_cache_save(const vq_cache *c, const char *path);
/* Load a saved cache. If expect is not NULL, the file's fingerprint and
 * shape must equal it (VQ_ERR_FORMAT otherwise: another model's cache).
 * Truncated, corrupted or inconsistent files: VQ_ERR_FORMAT and a message. */
vq_status vq_cache_load(const char *path, const vq_cache_shape *expect, vq_cache **out);

/* Write the calibration state of every calibrated codec of the cache (all
 * layers, keys and values) as one whole-model calibration file
 * (docs/FORMATS.md "Model calibration file"), atomically. A config then
 * names it as calib=FILE in a vecinfer/spectral spec; each layer picks its
 * own state. VQ_ERR_NEEDS_CALIBRATION if no codec is calibrated.
 * (Implemented in src/model/calibrate.c, beside vq_cache_calibrate_model.) */
vq_status vq_cache_save_calibration(const vq_cache *c, const char *path);

/* ---- end of cache section ---------------------------------------------- */

/* ======================================================================== *
 *  Model runtime: GGUF models, tokenizers, generation                      *
 * ======================================================================== */

/* A loaded model: weights (memory-mapped GGUF, read-only), hyperparameters
 * and tokenizer. Immutable after load, so one model may serve several
 * contexts (one thread per context). */
typedef struct vq_model vq_model;

/* Load a model. `path_or_name` is a GGUF file path, or an installed model
 * name ("smollm2-135m"), which resolves to $VQ_MODELS/NAME.gguf when
 * VQ_MODELS is set, else models/NAME.gguf relative to the working
 * directory. Every hyperparameter is read from the GGUF metadata.
 * Supported architectures: llama, qwen2, qwen3, gemma3.
 * Errors: VQ_ERR_INVALID_ARG (NULL), VQ_ERR_IO (file missing/unreadable),
 * VQ_ERR_FORMAT (malformed GGUF, missing/mis-shaped tensor or key),
 * VQ_ERR_UNSUPPORTED (architecture, weight type or rope scaling we do not
 * run), VQ_ERR_NOMEM. The message (vq_last_error) names the problem. */
vq_status vq_model_load(const char *path_or_name, vq_model **out);
void vq_model_free(vq_model *m);
/* Message of the last failure on this model, "" if none. */
const char *vq_model_error(const vq_model *m);

/* Model hyperparameters. Where layers differ (Gemma 3: sliding-window
 * layers use another RoPE base; other models may vary heads per layer),
 * the per-layer values come from vq_model_layer_info; the fields here are
 * those of layer 0 (head_dim, n_kv_heads) or the global value. */
typedef struct {
    const char *arch;      /* "llama", "qwen2", "qwen3", "gemma3" (owned by the model) */
    const char *name;      /* general.name or "" (owned by the model) */
    int n_layers;
    int n_embd;            /* residual width */
    int n_q_heads;
    int n_kv_heads;
    int head_dim;          /* key/value width per head */
    int n_ff;              /* feed-forward hidden width */
    int n_vocab;
    int n_ctx_train;       /* context length the model was trained for */
    float rope_base;       /* RoPE base of full-attention layers */
    float rope_base_local; /* RoPE base of sliding-window layers (= rope_base if none) */
    float rms_eps;
    int sliding_window;    /* window of sliding-window layers, 0 if none */
    int n_swa_layers;      /* how many layers use the sliding window */
    size_t weight_bytes;   /* bytes of all tensors in the file */
    size_t n_params;       /* elements of all tensors */
} vq_model_info;

/* Deprecated: the model API's earlier layer struct, now vq_layer_shape
 * (its field sliding_window is `window`; its rope_base is
 * vq_model_info.rope_base_local for a layer with window > 0, else
 * vq_model_info.rope_base). */
typedef vq_layer_shape vq_layer_info;

vq_status vq_model_info_get(const vq_model *m, vq_model_info *out);
/* The shape of one layer: the one vq_cache_for_model builds the cache
 * for. Its RoPE base is vq_model_info's rope_base_local when window > 0,
 * else rope_base. */
vq_status vq_model_layer_info(const vq_model *m, int layer, vq_layer_shape *out);

/* Tensor listing (for `inspect`): tensor i of vq_model_n_tensors(m).
 * *type_name is a constant string; *name is NUL-terminated and valid until
 * the next vq_model_tensor call on this thread. Any output may be NULL. */
int vq_model_n_tensors(const vq_model *m);
vq_status vq_model_tensor(const vq_model *m, int i, const char **name,
                          const char **type_name, int64_t dims[4], int *n_dims,
                          size_t *nbytes);

/* Tokenization (the tokenizer described in the GGUF; VQ_ERR_UNSUPPORTED if
 * the file has none). vq_model_tokenize: *tokens is a new malloc'd array of
 * *n ids (caller frees with free()). add_bos: prepend BOS when the model
 * asks for it; parse_special: recognise special tokens written in text. */
vq_status vq_model_tokenize(const vq_model *m, const char *text, size_t len, int add_bos,
                            int parse_special, int32_t **tokens, size_t *n);
/* Text of one token; writes at most cap bytes (no NUL added) and returns
 * the full length. Control tokens give "" unless render_special. */
size_t vq_model_token_piece(const vq_model *m, int32_t token, int render_special,
                            char *buf, size_t cap);
/* Text of n tokens as a new NUL-terminated malloc'd string (caller frees). */
vq_status vq_model_detokenize(const vq_model *m, const int32_t *tokens, size_t n,
                              char **text);
int32_t vq_model_bos(const vq_model *m);  /* -1 if none */
int32_t vq_model_eos(const vq_model *m);  /* -1 if none */
int vq_model_is_eog(const vq_model *m, int32_t token);
/* One user message in the model's chat template, ending where the
 * assistant speaks. *out malloc'd (caller frees). */
vq_status vq_model_chat(const vq_model *m, const char *user, char **out);

/* An inference context: the KV state of one sequence, scratch buffers and
 * a thread pool. Owned by the caller; uses (does not own) the model, which
 * must outlive it. max_tokens: the longest sequence it will hold (prompt
 * plus generated; 0 = the model's training context, capped at 8192);
 * n_threads <= 0: all cores (or $VQ_THREADS). */
typedef struct vq_ctx vq_ctx;

vq_status vq_ctx_create(const vq_model *m, int max_tokens, int n_threads, vq_ctx **out);
void vq_ctx_free(vq_ctx *c);
const char *vq_ctx_error(const vq_ctx *c);
/* Forget the sequence (positions restart at 0). */
void vq_ctx_reset(vq_ctx *c);
/* Tokens currently held (= position of the next token). */
int vq_ctx_n_tokens(const vq_ctx *c);
int vq_ctx_max_tokens(const vq_ctx *c);
/* Bytes of K/V the context holds now (resident), and would hold per token. */
size_t vq_ctx_kv_bytes(const vq_ctx *c);
size_t vq_ctx_kv_bytes_per_token(const vq_ctx *c);
/* Make the K/V memory that n_tokens more tokens (at most up to max_tokens)
 * will take ready now, so that the forward passes up to then do not grow
 * it: vq_cache_reserve for a context over a packed cache; the float buffer
 * is reserved at creation (nothing to do). vq_generate calls it for the
 * prompt plus max_tokens (and goes on without it when it fails).
 * Errors: VQ_ERR_INVALID_ARG, VQ_ERR_NOMEM. */
vq_status vq_ctx_reserve(vq_ctx *c, int n_tokens);

/* Run n tokens at positions n_tokens(c) .. n_tokens(c)+n-1 through the
 * model, appending their K/V. Long inputs are processed in batches
 * (matrix-matrix). Logits, if `logits` is not NULL:
 *   VQ_LOGITS_LAST: n_vocab floats for the last token;
 *   VQ_LOGITS_ALL:  n * n_vocab floats, token-major (for perplexity).
 * Errors: VQ_ERR_INVALID_ARG (token id out of range, n < 1),
 * VQ_ERR_STATE (the context would exceed max_tokens; nothing is changed). */
enum { VQ_LOGITS_LAST = 0, VQ_LOGITS_ALL = 1 };
vq_status vq_ctx_forward(vq_ctx *c, const int32_t *tokens, int n, float *logits, int which);

/* Teacher-forced scoring (perplexity): run tokens[0..n) from the
 * context's current position and add -ln p(tokens[i+1] | tokens[..i]) for
 * i in [0, n-1) to *nll_sum (natural log), and n-1 to *n_scored. A logits
 * buffer of one batch is allocated per call. Perplexity over chunks is
 * exp(total nll / total scored). Errors as vq_ctx_forward. */
vq_status vq_ctx_score(vq_ctx *c, const int32_t *tokens, int n, double *nll_sum, int *n_scored);

/* Sampling. Steps, in llama.cpp's default order:
 *   1. repetition penalty over the distinct tokens among the last
 *      repeat_last_n of history (CTRL-style: a positive logit is divided by
 *      repeat_penalty, a negative one multiplied; 1 = off);
 *   2. temperature <= 0: greedy, the argmax (ties: lowest id); stop here;
 *   3. top-k: keep the k largest logits (0 = off);
 *   4. top-p (nucleus): keep the smallest set of most likely tokens whose
 *      probability sums to >= top_p (1 = off; always >= 1 token);
 *   5. min-p: keep tokens with probability >= min_p * the top probability
 *      (0 = off); probabilities in 4-5 are those at temperature 1;
 *   6. draw from softmax(logit / temperature) over the kept tokens with the
 *      seeded RNG (same seed and inputs: same tokens). */
typedef struct {
    float temperature;
    int top_k;
    float top_p;
    float min_p;
    float repeat_penalty;
    int repeat_last_n;
    uint64_t seed;
} vq_sampler_params;

/* Defaults: temperature 0.8, top_k 40, top_p 0.95, min_p 0.05,
 * repeat_penalty 1.0, repeat_last_n 64, seed 42. */
vq_sampler_params vq_sampler_defaults(void);

typedef struct vq_sampler vq_sampler;
/* Scratch for n_vocab candidates is allocated here, once. */
vq_status vq_sampler_create(const vq_sampler_params *p, int n_vocab, vq_sampler **out);
void vq_sampler_free(vq_sampler *s);
/* Choose the next token from n_vocab logits (not modified), given the
 * tokens so far (history, n_hist; may be NULL/0). Returns the token id. */
int32_t vq_sampler_sample(vq_sampler *s, const float *logits, const int32_t *history,
                          size_t n_hist);
/* Restart the RNG stream from the seed. */
void vq_sampler_reseed(vq_sampler *s, uint64_t seed);

/* Streaming generation. on_token gets each new token and its text; return
 * nonzero to stop. */
typedef int (*vq_token_cb)(int32_t token, const char *piece, size_t len, void *user);

typedef struct {
    int max_tokens;          /* tokens to generate (default 128) */
    vq_sampler_params sampler;
    int chat;                /* wrap the prompt in the chat template */
    int stop_at_eog;         /* stop at end-of-generation tokens (default 1) */
    int prefill_batch;       /* tokens per prefill batch; 0 = default (64) */
} vq_gen_params;

vq_gen_params vq_gen_defaults(void);

typedef struct {
    int n_prompt;            /* prompt tokens (after templating and BOS) */
    int n_generated;
    double prefill_seconds;
    double decode_seconds;
    double prefill_tok_s;
    double decode_tok_s;
    size_t kv_bytes;         /* K/V held at the end */
    size_t peak_rss;         /* process high-water mark, bytes */
} vq_gen_stats;

/* Tokenize `prompt` (BOS added when the context is empty and the model
 * wants one), prefill it, then sample and decode up to max_tokens tokens,
 * calling on_token (may be NULL) for each. Generation continues the
 * context's sequence; call vq_ctx_reset to start over. stats may be NULL.
 * Errors as vq_ctx_forward, plus VQ_ERR_STATE when the prompt does not fit
 * (generation stops quietly when the context fills). */
vq_status vq_generate(vq_ctx *c, const char *prompt, const vq_gen_params *p,
                      vq_token_cb on_token, void *user, vq_gen_stats *stats);

/* ---- the packed KV cache in generation ----------------------------------
 * The model's side of the cache section's vq_cache (src/model/
 * cache_for_model.c, ctx_cached.c, calibrate.c, prompt_cache.c,
 * generate_tokens.c).
 *
 * Three lines:
 *     vq_model_load("smollm2-135m", &m);
 *     vq_cache_for_model(m, cfg, &cache);          (cfg: vq_cache_config_parse)
 *     vq_ctx_create_cached(m, cache, 0, 0, &ctx);  then vq_generate(ctx, ...)
 * Free in reverse order: ctx, cache, config, model. */

/* Identity of a model for saved caches and calibration files: a 64-bit hash
 * of the architecture, every shape hyperparameter, per-layer heads, head_dim,
 * window and RoPE base, and the first bytes of a few weight tensors. Two
 * loads of the same file give the same value. 0 if m is NULL. */
uint64_t vq_model_fingerprint(const vq_model *m);

/* KVCacheBuilder.for_model: an empty cache shaped for the model -- per layer
 * its query and KV heads, head_dim and sliding window (Gemma 3's local
 * layers never hold more than their window) -- with the model's fingerprint,
 * a fixed seed, and cfg (copied). Codecs that need calibration (vecinfer,
 * spectral) must name a calibration file in their spec (calib=FILE, written
 * by `veloxquant calibrate` / vq_cache_save_calibration, cache section); without one the
 * call fails with VQ_ERR_NEEDS_CALIBRATION and says to run
 * `veloxquant calibrate`. Errors: VQ_ERR_INVALID_ARG (NULL, config refused
 * for this model: message names layer and field),
 * VQ_ERR_FORMAT/VQ_ERR_IO (calibration file), VQ_ERR_NOMEM. */
vq_status vq_cache_for_model(const vq_model *m, const vq_cache_config *cfg, vq_cache **out);

/* (The shape it builds: vq_cache_get_shape on the result.) */

/* vq_cache_load checked against the model (shape and fingerprint): a file
 * saved with another model is refused (VQ_ERR_FORMAT). */
vq_status vq_cache_load_for_model(const vq_model *m, const char *path, vq_cache **out);

/* A context whose K/V live in `cache` (built for this model): borrowed,
 * not owned -- free the context before the cache. Attention reads the
 * packed codes (docs/cache.md). The context continues after the newest
 * position the cache holds (0 for an empty cache; a loaded prompt cache
 * continues where it was saved). max_tokens bounds positions, not tokens
 * held (with eviction positions keep counting past what is held; 0 = the
 * model's training context capped at 8192). vq_ctx_reset resets the cache.
 * Errors: VQ_ERR_INVALID_ARG (NULL, cache shaped for another model),
 * VQ_ERR_NOMEM. */
vq_status vq_ctx_create_cached(const vq_model *m, vq_cache *cache, int max_tokens, int n_threads,
                               vq_ctx **out);
/* The cache behind a context made by vq_ctx_create_cached, else NULL (for
 * vq_cache_stats / vq_cache_save). */
vq_cache *vq_ctx_cache(const vq_ctx *c);

/* vq_generate with an already tokenized prompt (no BOS or template added):
 * prefills tokens[0..n) from the context's position, then samples as
 * vq_generate does. n may be 1 (continue a loaded prompt cache with the
 * prompt's last token). Same errors and stats. */
vq_status vq_generate_tokens(vq_ctx *c, const int32_t *tokens, size_t n, const vq_gen_params *p,
                             vq_token_cb on_token, void *user, vq_gen_stats *stats);

/* Calibration on real K/V (`veloxquant calibrate`): run tokens[0..n)
 * through the model with the float K/V buffer, recording every layer's
 * post-RoPE keys and values, then vq_cache_calibrate each layer of `cache`
 * (built for this model, e.g. with vq_cache_create_for_calibration) on
 * them. progress (may be NULL) gets (stage, done, total) as it goes.
 * Errors: as vq_ctx_forward, plus codec calibration errors. */
typedef void (*vq_progress_cb)(const char *stage, size_t done, size_t total, void *user);
vq_status vq_cache_calibrate_model(vq_cache *cache, const vq_model *m, const int32_t *tokens,
                                   size_t n, int n_threads, vq_progress_cb progress, void *user);
/* for_model without the calibration requirement (codecs that need it start
 * uncalibrated): the cache that vq_cache_calibrate_model fills. */
vq_status vq_cache_create_for_calibration(const vq_model *m, const vq_cache_config *cfg,
                                          vq_cache **out);

/* Prompt caches (`generate --save-cache F` / `--load-cache F`): the packed
 * cache of a context that has run exactly tokens[0..n), saved with
 * vq_cache_save at `path`, plus a sidecar `path`.prompt (docs/FORMATS.md
 * "Prompt cache sidecar") holding the model fingerprint, the n tokens and
 * the size and CRC of the cache file it belongs to. Both files are written
 * atomically (cache first, then sidecar). Loading checks the sidecar, that
 * it names this model, that its tokens equal tokens[0..n) and that it
 * belongs to the cache file beside it, then loads the cache against the
 * model: a cache of another model or another prompt, or a truncated or
 * corrupted file, is refused (VQ_ERR_FORMAT, message says which). */
vq_status vq_prompt_cache_save(const vq_model *m, const vq_cache *c, const int32_t *tokens, size_t n,
                               const char *path);
vq_status vq_prompt_cache_load(const vq_model *m, const char *path, const int32_t *tokens, size_t n,
                               vq_cache **out);

/* ---- end of model section ---------------------------------------------- */

#ifdef __cplusplus
}
#endif

#endif /* VELOXQUANT_H */
