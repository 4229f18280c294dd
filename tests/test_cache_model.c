/* test_cache_model.c -- the packed KV cache plugged into the real models
 * (smollm2-135m, gemma3-270m): token identity of the fp16 config, quality
 * of compressed configs (Paris, KL divergence vs the float32 buffer),
 * memory accounting of every method on a real run, prompt cache
 * save/load, calibration on real keys, eviction with RoPE positions that
 * keep counting, the three-line example, and generation reserving the
 * cache's pages ahead.
 *
 * Text: evaluation slices come from ../shared/data/wikitext-2-test.txt
 * AFTER its first quarter (the calibration part, as `veloxquant calibrate`
 * uses it); calibration samples come from the first quarter.
 *
 * Sizes (normal / quick): greedy tokens 64/16, KL slice 512 tokens on
 * smollm2 and 128 on gemma3 (runtime: the packed cache attends on one
 * thread; 512 on gemma3 alone would take ~1 min on the shared 2-core
 * machine) / 64 and 64; "Paris" within the first 16 greedy tokens. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/cache_internal.h"
#include "core/fp16.h"
#include "model/forward.h"
#include "model/kv_record.h"
#include "real_model.h"
#include "test.h"
#include "test_cache_util.h"
#include "veloxquant.h"

static vq_model *g_smol, *g_gemma;

/* ---- helpers ---------------------------------------------------------- */

typedef struct {
    int32_t tok[512];
    int n;
} tok_list;

static int collect(int32_t token, const char *piece, size_t len, void *user)
{
    (void)piece;
    (void)len;
    tok_list *t = user;
    if (t->n < 512)
        t->tok[t->n++] = token;
    return 0;
}

static vq_gen_params greedy(int n)
{
    vq_gen_params gp = vq_gen_defaults();
    gp.sampler.temperature = 0;
    gp.max_tokens = n;
    gp.stop_at_eog = 0;
    return gp;
}

/* a cache + context for cfg text; 0 on failure (counted) */
static int make_cached(vq_model *m, const char *text, int max_tokens, vq_cache **cache, vq_ctx **ctx)
{
    vq_cache_config *cfg = NULL;
    *cache = NULL;
    *ctx = NULL;
    vq_status st = vq_cache_config_parse(text, &cfg);
    if (st == VQ_OK)
        st = vq_cache_for_model(m, cfg, cache);
    if (st == VQ_OK)
        st = vq_ctx_create_cached(m, *cache, max_tokens, 0, ctx);
    vq_cache_config_free(cfg);
    CHECKF(st == VQ_OK, "cache \"%s\": %s", text, vq_last_error());
    if (st != VQ_OK) {
        vq_cache_free(*cache);
        *cache = NULL;
    }
    return st == VQ_OK;
}

static void free_cached(vq_cache *cache, vq_ctx *ctx)
{
    vq_ctx_free(ctx);
    vq_cache_free(cache);
}

static char *piece_text(vq_model *m, const tok_list *t)
{
    char *s = NULL;
    if (vq_model_detokenize(m, t->tok, (size_t)t->n, &s) != VQ_OK)
        return NULL;
    return s;
}

/* the float buffer with K/V rounded to fp16 on append: what the fp16
 * cache computes, in the float runtime (for gemma3, see test_fp16_tokens) */
typedef struct {
    vq_kv *inner;
    float *tmp;
} kv_round;

static vq_status kr_append(vq_kv *kv, int layer, const float *k, const float *v, int n, int pos0)
{
    kv_round *r = kv->impl;
    size_t nf = (size_t)n * (size_t)kv->shape.layer[layer].n_kv_heads * (size_t)kv->shape.layer[layer].head_dim;
    float *rk = r->tmp, *rv = r->tmp + nf;
    for (size_t i = 0; i < nf; i++) {
        rk[i] = vq_fp16_to_fp32(vq_fp32_to_fp16(k[i]));
        rv[i] = vq_fp16_to_fp32(vq_fp32_to_fp16(v[i]));
    }
    return r->inner->ops->append(r->inner, layer, rk, rv, n, pos0);
}
static vq_status kr_attend(vq_kv *kv, int layer, const float *q, int n, int pos0, float *out)
{
    kv_round *r = kv->impl;
    return r->inner->ops->attend(r->inner, layer, q, n, pos0, out);
}
static void kr_reset(vq_kv *kv) { ((kv_round *)kv->impl)->inner->ops->reset(((kv_round *)kv->impl)->inner); }
static size_t kr_bytes(const vq_kv *kv) { return ((kv_round *)kv->impl)->inner->ops->bytes(((kv_round *)kv->impl)->inner); }
static size_t kr_bpt(const vq_kv *kv)
{
    return ((kv_round *)kv->impl)->inner->ops->bytes_per_token(((kv_round *)kv->impl)->inner);
}
static void kr_destroy(vq_kv *kv)
{
    kv_round *r = kv->impl;
    vq_kv_free(r->inner);
    free(r->tmp);
    free(r);
    free(kv);
}
static const vq_kv_ops kr_ops = { "float32(fp16-rounded)", kr_append, kr_attend, kr_reset, kr_bytes, kr_bpt, kr_destroy, NULL };

static vq_status make_round(const vq_kv_shape *shape, vq_pool *pool, void *arg, vq_kv **out)
{
    (void)arg;
    vq_kv *kv = calloc(1, sizeof *kv);
    kv_round *r = calloc(1, sizeof *r);
    size_t mx = 0;
    for (int l = 0; l < shape->n_layers; l++) {
        size_t f = (size_t)shape->layer[l].n_kv_heads * (size_t)shape->layer[l].head_dim;
        mx = f > mx ? f : mx;
    }
    if (kv && r)
        r->tmp = malloc(2 * mx * VQ_FWD_BATCH * sizeof(float));
    if (!kv || !r || !r->tmp || vq_kv_float_create(shape, pool, &r->inner) != VQ_OK) {
        if (r)
            free(r->tmp);
        free(r);
        free(kv);
        return VQ_ERR_NOMEM;
    }
    kv->ops = &kr_ops;
    kv->shape = *shape;
    kv->pool = pool;
    kv->impl = r;
    *out = kv;
    return VQ_OK;
}

/* wikitext: the calibration part (first quarter, by bytes, cut at a line
 * end) or the evaluation part (the rest). Tokens: BOS + the first n. */
static int32_t *wiki_tokens(vq_model *m, int eval, size_t n, size_t *got)
{
    *got = 0;
    const char *path = vq_test_data("wikitext-2-test.txt");
    if (!path)
        return NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    size_t rd = buf ? fread(buf, 1, (size_t)len, f) : 0;
    fclose(f);
    if (!buf || rd != (size_t)len) {
        free(buf);
        return NULL;
    }
    buf[len] = 0;
    size_t q = (size_t)len / 4;
    while (q > 0 && buf[q - 1] != '\n')
        q--;
    const char *start = eval ? buf + q : buf;
    size_t avail = eval ? (size_t)len - q : q;
    size_t take = n * 8 < avail ? n * 8 : avail; /* ~4 bytes/token: room */
    int32_t *toks = NULL;
    size_t nt = 0;
    vq_status st = vq_model_tokenize(m, start, take, 1, 0, &toks, &nt);
    free(buf);
    if (st != VQ_OK)
        return NULL;
    *got = nt < n ? nt : n;
    return toks;
}

/* ---- fp16 config: the float runtime's tokens ----------------------------- */

/* smollm2: where the fp16 cache and the float runtime part, the float
 * runtime must see a near-tie (logits within this of each other): fp16
 * storage of K/V moves the logits by up to a few tenths (test_kl), and the
 * two paths sum attention in different orders (online softmax over pages
 * vs one normalised pass). Measured: they part at token 5 with every
 * kernel table, where the cache's token is ranked below the float
 * runtime's argmax by 0.085 (AVX-512), 0.144 (VQ_FORCE_ISA=scalar) and
 * 0.304 (the AVX2 table with its twins of session 22, Zen 2): the same
 * near-tie, moved by each table's rounding. */
#define FP16_NEAR_TIE 0.4

static void fp16_tokens(vq_model *m, const char *name, int n_gen, tok_list *float_out)
{
    const char *prompt = "The capital of France is";
    vq_gen_params gp = greedy(n_gen);
    vq_ctx *c = NULL;
    CHECK_OK(vq_ctx_create(m, 256, 0, &c));
    tok_list ref = { .n = 0 }, got = { .n = 0 }, rnd = { .n = 0 };
    CHECK_OK(vq_generate(c, prompt, &gp, collect, &ref, NULL));
    vq_ctx_free(c);
    *float_out = ref;

    vq_cache *cache;
    vq_ctx *cc;
    if (!make_cached(m, "keys=fp16 values=fp16", 256, &cache, &cc))
        return;
    CHECK_OK(vq_generate(cc, prompt, &gp, collect, &got, NULL));
    free_cached(cache, cc);

    int first_diff = -1;
    for (int i = 0; i < ref.n && i < got.n && first_diff < 0; i++)
        if (ref.tok[i] != got.tok[i])
            first_diff = i;
    if (first_diff >= 0 || got.n != ref.n) {
        /* explain a difference: the float runtime with K/V rounded to fp16
         * as they enter the buffer must give exactly the cache's tokens */
        CHECK_OK(vq_ctx_create_with_kv(m, 256, 0, make_round, NULL, &c));
        CHECK_OK(vq_generate(c, prompt, &gp, collect, &rnd, NULL));
        vq_ctx_free(c);
        int same_rounded = got.n == rnd.n && memcmp(got.tok, rnd.tok, (size_t)got.n * 4) == 0;
        printf("    %s: the float runtime with fp16-rounded K/V gives %s tokens as the fp16 cache\n", name,
               same_rounded ? "the same" : "other");
    }
    printf("  %s fp16 cache vs float32 runtime: %s over %d tokens%s\n", name,
           first_diff < 0 && got.n == ref.n ? "identical" : "diverge", n_gen,
           first_diff >= 0 ? " (see below)" : "");
    if (first_diff >= 0)
        printf("    first difference at generated token %d (gemma3-270m is sensitive: see test_kl's fp16 line)\n",
               first_diff);
    if (first_diff >= 0) {
        /* the float runtime teacher-forced on the cache's tokens: how far
         * below its own argmax the cache's choice was where they part */
        int flips = 0;
        float margin = 0.0f;
        vq_rt_golden_margins(m, prompt, got.tok, first_diff + 1, &flips, &margin);
        printf("    the float runtime ranks the cache's token %d at %.4f below its argmax\n", first_diff,
               (double)margin);
        if (strcmp(name, "smollm2-135m") == 0)
            CHECKF(margin <= FP16_NEAR_TIE, "%s: fp16 cache token %d is %.4f below the float runtime's argmax (> %g)",
                   name, first_diff, (double)margin, FP16_NEAR_TIE);
    }
}

static tok_list g_float_smol, g_float_gemma;

static void test_fp16_tokens(void)
{
    /* smollm2: the fp16 config gives the float runtime's tokens up to a
     * near-tie (FP16_NEAR_TIE, checked). gemma3-270m: it does not -- half-precision K/V storage
     * moves its logits by up to a few tenths (KL ~0.006 nats, test_kl) and
     * its greedy path flips at a near-tie a few tokens in (4 to 11,
     * depending on the float kernels' summation order); reported with the
     * first differing token, not asserted. */
    int n = vq_test_quick() ? 16 : 64;
    if (g_smol)
        fp16_tokens(g_smol, "smollm2-135m", n, &g_float_smol);
    if (g_gemma)
        fp16_tokens(g_gemma, "gemma3-270m", n, &g_float_gemma);
}

/* ---- compressed configs: Paris and KL ------------------------------------ */

static const char *const QUALITY_CFGS[] = {
    "keys=fp16 values=fp16",
    "keys=q8_0 values=q8_0",
    "keys=q4_0:rot=1 values=q4_0:rot=1",
    "keys=turboquant_rvq:bits=4 values=kivi:bits=4",
};

static void paris(vq_model *m, const char *name, const tok_list *float_toks)
{
    tok_list head = *float_toks;
    int n = head.n < 16 ? head.n : 16;
    head.n = n;
    char *ftext = piece_text(m, &head);
    int float_has = ftext && strstr(ftext, "Paris") != NULL;
    if (!float_has)
        printf("  %s: the float runtime's own first %d greedy tokens lack \"Paris\" (\"%.60s...\"): the Paris "
               "check does not apply (skipped); its configs are compared by KL\n",
               name, n, ftext ? ftext : "");
    free(ftext);
    if (!float_has)
        return;
    for (size_t i = 0; i < sizeof QUALITY_CFGS / sizeof *QUALITY_CFGS; i++) {
        vq_cache *cache;
        vq_ctx *cc;
        if (!make_cached(m, QUALITY_CFGS[i], 256, &cache, &cc))
            continue;
        vq_gen_params gp = greedy(n);
        tok_list t = { .n = 0 };
        CHECK_OK(vq_generate(cc, "The capital of France is", &gp, collect, &t, NULL));
        char *s = piece_text(m, &t);
        if (float_has)
            CHECKF(s && strstr(s, "Paris"), "%s %s: no Paris in \"%s\"", name, QUALITY_CFGS[i], s ? s : "");
        printf("  %s %-46s -> \"%.50s\"\n", name, QUALITY_CFGS[i], s ? s : "");
        free(s);
        free_cached(cache, cc);
    }
}

static void test_paris(void)
{
    if (g_smol)
        paris(g_smol, "smollm2-135m", &g_float_smol);
    if (g_gemma)
        paris(g_gemma, "gemma3-270m", &g_float_gemma);
}

/* mean KL(p_float || p_cfg) in nats over the next-token distributions of
 * every position of toks[0..n) (teacher-forced, chunks of 64) */
static void kl_run(vq_model *m, const char *name, const int32_t *toks, size_t n, const double *limits)
{
    size_t V;
    vq_model_info mi;
    vq_model_info_get(m, &mi);
    V = (size_t)mi.n_vocab;
    const size_t CH = 64;
    size_t ncfg = sizeof QUALITY_CFGS / sizeof *QUALITY_CFGS;
    vq_ctx *ref = NULL;
    CHECK_OK(vq_ctx_create(m, (int)n, 0, &ref));
    vq_cache *cache[4] = { 0 };
    vq_ctx *cc[4] = { 0 };
    double kl[4] = { 0 };
    for (size_t i = 0; i < ncfg; i++)
        make_cached(m, QUALITY_CFGS[i], (int)n, &cache[i], &cc[i]);
    float *lr = malloc(CH * V * sizeof(float)), *lc = malloc(CH * V * sizeof(float));
    for (size_t done = 0; ref && lr && lc && done < n; done += CH) {
        size_t b = n - done < CH ? n - done : CH;
        CHECK_OK(vq_ctx_forward(ref, toks + done, (int)b, lr, VQ_LOGITS_ALL));
        for (size_t i = 0; i < ncfg; i++) {
            if (!cc[i])
                continue;
            CHECK_OK(vq_ctx_forward(cc[i], toks + done, (int)b, lc, VQ_LOGITS_ALL));
            for (size_t t = 0; t < b; t++) {
                const float *a = lr + t * V, *c = lc + t * V;
                double ma = -INFINITY, mc = -INFINITY, sa = 0, sc = 0, acc = 0;
                for (size_t j = 0; j < V; j++) {
                    ma = a[j] > ma ? a[j] : ma;
                    mc = c[j] > mc ? c[j] : mc;
                }
                for (size_t j = 0; j < V; j++) {
                    sa += exp(a[j] - ma);
                    sc += exp(c[j] - mc);
                }
                double la = ma + log(sa), lcn = mc + log(sc);
                for (size_t j = 0; j < V; j++) {
                    double lpa = a[j] - la, lpc = c[j] - lcn;
                    acc += exp(lpa) * (lpa - lpc);
                }
                kl[i] += acc;
            }
        }
    }
    for (size_t i = 0; i < ncfg; i++) {
        if (!cc[i])
            continue;
        double mean = kl[i] / (double)n;
        printf("  %s KL(float || %s) over %zu tokens = %.5f nats (limit %.3f)\n", name, QUALITY_CFGS[i], n, mean,
               limits[i]);
        CHECKF(mean < limits[i], "%s %s: KL %.5f >= %.3f", name, QUALITY_CFGS[i], mean, limits[i]);
        free_cached(cache[i], cc[i]);
    }
    free(lr);
    free(lc);
    vq_ctx_free(ref);
}

static void test_kl(void)
{
    /* Limits (mean nats per token vs the float32 buffer), set from
     * measurements (the printed values) with ~2-3x headroom for other
     * text and thread counts, and far below what a broken path gives
     * (a wrong position, window or scale gives > 1 nat):
     *                               smollm2             gemma3
     *   fp16 (16 bits)              0.0048 (64 tok)     0.0057-0.0072 (64 tok)
     *   q8_0 (8.5 bits)             0.0041 (512 tok)    0.0079 (256 tok)
     *   q4_0:rot=1 (4.5 bits)       0.052              0.098
     *   turboquant_rvq:4 + kivi:4   0.041              0.100
     * fp16 K/V storage alone costs ~0.005 nats on both models (their keys
     * have large-magnitude channels, so half-precision rounding moves
     * scores by a few hundredths), which is why q8_0 is barely above it.
     * Limits: fp16 and q8_0 < 0.015 (smollm2) / 0.02-0.025 (gemma3);
     * the 4-bit configs < 0.15 / 0.25. */
    static const double lim_smol[4] = { 0.015, 0.015, 0.15, 0.15 }, lim_gemma[4] = { 0.02, 0.025, 0.25, 0.25 };
    int quick = vq_test_quick();
    struct {
        vq_model *m;
        const char *name;
        size_t n;
        const double *lim;
    } runs[2] = { { g_smol, "smollm2-135m", quick ? 64 : 512, lim_smol },
                  { g_gemma, "gemma3-270m", quick ? 64 : 128, lim_gemma } };
    for (int r = 0; r < 2; r++) {
        if (!runs[r].m)
            continue;
        size_t n = 0;
        int32_t *toks = wiki_tokens(runs[r].m, 1, runs[r].n, &n);
        CHECKF(toks && n == runs[r].n, "%s: evaluation text has %zu tokens, need %zu", runs[r].name, n, runs[r].n);
        if (toks && n == runs[r].n)
            kl_run(runs[r].m, runs[r].name, toks, n, runs[r].lim);
        free(toks);
    }
}


/* ---- memory accounting of every method on a real run ---------------------- */

static vq_status record_factory(const vq_kv_shape *shape, vq_pool *pool, void *arg, vq_kv **out)
{
    (void)arg;
    return vq_kv_record_create(shape, pool, out);
}

/* recorded real K/V of smollm2 over eval text (the float runtime's
 * post-RoPE tensors) */
typedef struct {
    vq_ctx *ctx; /* owns the recorder */
    size_t n;
} real_kv;

static int record_kv(vq_model *m, int eval, size_t n, real_kv *out)
{
    size_t got = 0;
    int32_t *toks = wiki_tokens(m, eval, n, &got);
    out->ctx = NULL;
    out->n = 0;
    if (!toks || got < n) {
        free(toks);
        CHECKF(0, "wikitext: %zu tokens, need %zu", got, n);
        return 0;
    }
    vq_status st = vq_ctx_create_with_kv(m, (int)n, 0, record_factory, NULL, &out->ctx);
    if (st == VQ_OK)
        st = vq_ctx_forward(out->ctx, toks, (int)n, NULL, VQ_LOGITS_LAST);
    free(toks);
    CHECK_OK(st);
    out->n = n;
    return st == VQ_OK;
}

/* bytes per token of the packed codec of (layer, role) of a cache, from
 * its canonical spec (calib= dropped: the size does not depend on it) */
static size_t spec_bpt(const vq_cache *c, int layer, vq_role role, int head_dim)
{
    char spec[512];
    snprintf(spec, sizeof spec, "%s", vq_cache_codec_spec(c, layer, role));
    char *k = strstr(spec, "calib=");
    if (k) {
        while (k > spec && (k[-1] == ',' || k[-1] == ':'))
            k--;
        *k = 0;
    }
    /* the cross-layer methods' internal codecs (xkv, xquant) are not in the
     * public registry; their packed bytes per token are below fp16's
     * (rank <= D coordinates or anchor codes / follower parameters plus a
     * residual of at most 8 bits), so 2*D bounds their page slack */
    if (strncmp(spec, "xkv:", 4) == 0 || strncmp(spec, "xquant:", 7) == 0)
        return 2 * (size_t)head_dim;
    vq_codec *cd = NULL;
    if (vq_codec_create(spec, head_dim, role, 1, &cd) != VQ_OK)
        return 0;
    size_t b = vq_codec_bytes_per_token(cd);
    vq_codec_free(cd);
    return b;
}

/* resident >= accounted, and resident - accounted <= per (layer, KV head,
 * role) one page minus one token (the partly filled last page) plus the
 * residual window buffers' unused capacity (reported as residual_bytes);
 * page = 256 tokens rounded up to the codec group (<= 256 + 32). */
static void check_bytes(const vq_cache *c, const char *what)
{
    vq_cache_shape sh;
    CHECK_OK(vq_cache_get_shape(c, &sh));
    uint64_t bound = 0;
    for (int l = 0; l < sh.n_layers; l++) {
        int D = sh.layers[l].head_dim;
        size_t bk = spec_bpt(c, l, VQ_ROLE_KEY, D), bv = spec_bpt(c, l, VQ_ROLE_VALUE, D);
        CHECKF(bk && bv, "%s: layer %d: codec sizes unknown", what, l);
        bound += (uint64_t)sh.layers[l].n_kv_heads * (288 * (bk + bv));
    }
    vq_cache_usage u;
    CHECK_OK(vq_cache_stats(c, -1, &u));
    uint64_t acc = u.keys.accounted_bytes + u.values.accounted_bytes;
    uint64_t res = u.keys.resident_bytes + u.values.resident_bytes;
    uint64_t resid = u.keys.residual_bytes + u.values.residual_bytes;
    CHECKF(u.keys.tokens > 0 && acc > 0, "%s: nothing held", what);
    CHECKF(res >= acc, "%s: resident %llu < accounted %llu", what, (unsigned long long)res, (unsigned long long)acc);
    CHECKF(res - acc <= bound + resid, "%s: resident %llu - accounted %llu > bound %llu + residual %llu", what,
           (unsigned long long)res, (unsigned long long)acc, (unsigned long long)bound, (unsigned long long)resid);
    printf("  %-58s held %6llu, accounted %8llu B, resident %8llu B (%.2fx vs fp16 accounted)\n", what,
           (unsigned long long)u.keys.tokens, (unsigned long long)acc, (unsigned long long)res,
           acc ? (double)(u.keys.fp16_bytes + u.values.fp16_bytes) / (double)acc : 0.0);
}

static char g_calib_file[300];

static void test_bytes_every_method(void)
{
    /* Codec methods: the real K/V of smollm2 over 300 eval tokens (more
     * than one 256-token page) appended the way the runtime does (batches
     * of 64, every layer). Eviction policies and cross-layer methods: real
     * model runs (attention weights drive the policies). */
    if (!g_smol)
        return;
    real_kv rk;
    size_t n = vq_test_quick() ? 80 : 300;
    if (!record_kv(g_smol, 1, n, &rk))
        return;
    const char *methods[] = { "fp16", "q8_0", "q4_0", "q4_0:rot=1", "turboquant_rvq:bits=2", "turboquant_mse:bits=3",
                              "turboquant_prod:bits=3", "qjl", "rabitq", "kivi:bits=2", "vecinfer", "spectral" };
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++) {
        char text[4096];
        int calib = strncmp(methods[i], "vecinfer", 8) == 0 || strncmp(methods[i], "spectral", 8) == 0;
        if (calib && !g_calib_file[0])
            continue; /* needs the calibration test's file */
        if (calib) /* the file holds spectral for layer 0, vecinfer for the rest */
            snprintf(text, sizeof text,
                     "keys=vecinfer:calib=%s values=vecinfer:calib=%s keep_first=1 keep_spec=spectral:calib=%s "
                     "residual=16",
                     g_calib_file, g_calib_file, g_calib_file);
        else
            snprintf(text, sizeof text, "keys=%s values=%s residual=16", methods[i], methods[i]);
        if (calib && strcmp(methods[i], "spectral") == 0)
            continue; /* covered by the vecinfer line */
        vq_cache_config *cfg = NULL;
        vq_cache *c = NULL;
        CHECK_OK(vq_cache_config_parse(text, &cfg));
        vq_status st = vq_cache_for_model(g_smol, cfg, &c);
        CHECKF(st == VQ_OK, "%s: %s", text, vq_last_error());
        for (int l = 0; st == VQ_OK && l < 30; l++) {
            size_t nk = 0, nv = 0;
            const float *k = vq_kv_record_keys(rk.ctx->kv, l, &nk), *v = vq_kv_record_values(rk.ctx->kv, l, &nv);
            size_t tf = 3 * 64;
            for (size_t d = 0; d < nk && st == VQ_OK; d += 64) {
                size_t b = nk - d < 64 ? nk - d : 64;
                st = vq_cache_append(c, l, k + d * tf, v + d * tf, b, (int32_t)d);
            }
            CHECKF(st == VQ_OK, "%s: append: %s", text, vq_cache_error(c));
        }
        if (st == VQ_OK)
            check_bytes(c, text);
        vq_cache_free(c);
        vq_cache_config_free(cfg);
    }
    vq_ctx_free(rk.ctx);

    /* policies and cross-layer: a real 96-token prefill + 8 decode steps */
    size_t np = vq_test_quick() ? 48 : 96;
    size_t got = 0;
    int32_t *toks = wiki_tokens(g_smol, 1, np, &got);
    const char *extra[] = { "evict=streaming_llm:sinks=4,window=32", "evict=h2o:budget=48,sinks=4,recent=16",
                            "evict=snapkv:budget=48,window=8",      "evict=tova:budget=48",
                            "evict=pyramidkv:budget=48,window=8",   "cross=minicache",
                            "cross=xkv",                            "cross=xquant" };
    for (size_t i = 0; toks && got == np && i < sizeof extra / sizeof *extra; i++) {
        char text[256];
        snprintf(text, sizeof text, "keys=q8_0 values=q8_0 %s", extra[i]);
        vq_cache_config *cfg = NULL;
        vq_cache *c = NULL;
        vq_status st = vq_cache_config_parse(text, &cfg);
        if (st == VQ_OK)
            st = vq_cache_for_model(g_smol, cfg, &c);
        vq_cache_config_free(cfg);
        if (st == VQ_ERR_UNSUPPORTED && strncmp(extra[i], "cross=", 6) == 0) {
            printf("  %-58s not built yet in this tree (%s)\n", text, vq_last_error());
            continue;
        }
        CHECKF(st == VQ_OK, "%s: %s", text, vq_last_error());
        if (st != VQ_OK)
            continue;
        vq_ctx *ctx = NULL;
        CHECK_OK(vq_ctx_create_cached(g_smol, c, 256, 0, &ctx));
        vq_gen_params gp = greedy(8);
        tok_list t = { .n = 0 };
        if (ctx)
            CHECK_OK(vq_generate_tokens(ctx, toks, np, &gp, collect, &t, NULL));
        CHECK(t.n == 8);
        check_bytes(c, text);
        vq_ctx_free(ctx);
        vq_cache_free(c);
    }
    free(toks);
}

/* ---- prompt cache save / load ---------------------------------------------- */

static void test_save_load(void)
{
    if (!g_smol)
        return;
    size_t np = 40, got = 0;
    int32_t *toks = wiki_tokens(g_smol, 1, np, &got);
    if (!toks || got != np) {
        CHECK(0);
        free(toks);
        return;
    }
    char path[1024], side[1100];
    snprintf(path, sizeof path, "%s/prompt.vqc", vq_test_tmpdir());
    snprintf(side, sizeof side, "%s.prompt", path);
    const char *cfgs[] = { "keys=q4_0:rot=1 values=q4_0:rot=1 residual=8", "keys=turboquant_rvq:bits=4 values=kivi:bits=4",
                           /* a quality plan's form: keys packed before RoPE (the file carries the RoPE) */
                           "keys=kivix:bits=4,group=16,outliers=8 values=kivix:bits=3,group=64 residual=8 sinks=4 prerope=1" };
    for (int ci = 0; ci < (int)(sizeof cfgs / sizeof *cfgs); ci++) {
        /* run prompt[0..n-1), save, then generate from the last prompt token */
        vq_cache *c = NULL;
        vq_ctx *ctx = NULL;
        if (!make_cached(g_smol, cfgs[ci], 256, &c, &ctx))
            continue;
        CHECK_OK(vq_ctx_forward(ctx, toks, (int)np - 1, NULL, VQ_LOGITS_LAST));
        CHECK_OK(vq_prompt_cache_save(g_smol, c, toks, np - 1, path));
        vq_gen_params gp = greedy(12);
        tok_list a = { .n = 0 }, b = { .n = 0 };
        CHECK_OK(vq_generate_tokens(ctx, toks + np - 1, 1, &gp, collect, &a, NULL));
        free_cached(c, ctx);

        vq_cache *lc = NULL;
        CHECK_OK(vq_prompt_cache_load(g_smol, path, toks, np - 1, &lc));
        if (lc) {
            CHECK_OK(vq_ctx_create_cached(g_smol, lc, 256, 0, &ctx));
            CHECK(vq_ctx_n_tokens(ctx) == (int)np - 1);
            CHECK_OK(vq_generate_tokens(ctx, toks + np - 1, 1, &gp, collect, &b, NULL));
            CHECKF(a.n == 12 && b.n == a.n && memcmp(a.tok, b.tok, (size_t)a.n * 4) == 0,
                   "%s: loaded cache gives other tokens", cfgs[ci]);
            free_cached(lc, ctx);
        }
    }
    vq_cache *bad = NULL;
    /* another prompt */
    toks[5] ^= 1;
    CHECK(vq_prompt_cache_load(g_smol, path, toks, np - 1, &bad) == VQ_ERR_FORMAT && !bad);
    CHECK(strstr(vq_last_error(), "another prompt") != NULL);
    toks[5] ^= 1;
    CHECK(vq_prompt_cache_load(g_smol, path, toks, np - 2, &bad) == VQ_ERR_FORMAT && !bad);
    /* another model */
    if (g_gemma) {
        CHECK(vq_prompt_cache_load(g_gemma, path, toks, np - 1, &bad) == VQ_ERR_FORMAT && !bad);
        CHECK(strstr(vq_last_error(), "another model") != NULL);
        CHECK(vq_cache_load_for_model(g_gemma, path, &bad) == VQ_ERR_FORMAT && !bad);
    }
    /* corrupted / truncated cache file */
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)len);
    CHECK(fread(buf, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
    buf[len / 2] ^= 0x40;
    f = fopen(path, "wb");
    fwrite(buf, 1, (size_t)len, f);
    fclose(f);
    CHECK(vq_prompt_cache_load(g_smol, path, toks, np - 1, &bad) == VQ_ERR_FORMAT && !bad);
    CHECK(vq_cache_load_for_model(g_smol, path, &bad) == VQ_ERR_FORMAT && !bad);
    printf("  corrupted cache refused: %s\n", vq_last_error());
    buf[len / 2] ^= 0x40;
    f = fopen(path, "wb");
    fwrite(buf, 1, (size_t)len - 100, f);
    fclose(f);
    CHECK(vq_prompt_cache_load(g_smol, path, toks, np - 1, &bad) == VQ_ERR_FORMAT && !bad);
    CHECK(vq_cache_load_for_model(g_smol, path, &bad) == VQ_ERR_FORMAT && !bad);
    printf("  truncated cache refused: %s\n", vq_last_error());
    free(buf);
    free(toks);
    remove(path);
    remove(side);
}

/* ---- calibration on real keys ------------------------------------------------ */

static double rel_mse(vq_codec *c, const float *x, size_t n, int D)
{
    size_t bpt = vq_codec_bytes_per_token(c);
    uint8_t *codes = malloc(n * bpt);
    float *y = malloc(n * (size_t)D * sizeof(float));
    double num = 0, den = 0;
    if (codes && y && vq_codec_encode(c, x, n, codes) == VQ_OK && vq_codec_decode(c, codes, n, y) == VQ_OK)
        for (size_t i = 0; i < n * (size_t)D; i++) {
            num += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
            den += (double)x[i] * x[i];
        }
    else
        num = INFINITY, den = 1;
    free(codes);
    free(y);
    return num / den;
}

static void test_calibration(void)
{
    /* Calibrated vecinfer (sub_dim=8, bits=8) vs the same codec trained on
     * Gaussian samples of the real keys' per-layer RMS (an uncalibrated
     * codebook at the right scale): relative key MSE on held-out real keys
     * (eval text) of smollm2, layers 0, 15, 29. Real keys have outlier
     * channels and structure the Gaussian codebook cannot know; we require
     * calibrated < 0.5 x Gaussian in every layer. */
    if (!g_smol)
        return;
    size_t nc = vq_test_quick() ? 96 : 256, ne = vq_test_quick() ? 48 : 128;
    real_kv cal, ev;
    if (!record_kv(g_smol, 0, nc, &cal) || !record_kv(g_smol, 1, ne, &ev)) {
        vq_ctx_free(cal.ctx);
        return;
    }
    const int D = 64, layers[3] = { 0, 15, 29 };
    for (int li = 0; li < 3; li++) {
        int l = layers[li];
        size_t n1 = 0, n2 = 0;
        const float *kc = vq_kv_record_keys(cal.ctx->kv, l, &n1), *ke = vq_kv_record_keys(ev.ctx->kv, l, &n2);
        size_t s1 = n1 * 3, s2 = n2 * 3; /* heads pooled */
        double ss = 0;
        for (size_t i = 0; i < s1 * D; i++)
            ss += (double)kc[i] * kc[i];
        float rms = (float)sqrt(ss / (double)(s1 * D));
        float *gauss = malloc(s1 * D * sizeof(float));
        uint64_t st = 12345 + (uint64_t)l;
        for (size_t i = 0; i < s1 * D; i += 2) { /* Box-Muller on a small LCG */
            st = st * 6364136223846793005ULL + 1442695040888963407ULL;
            double u1 = ((double)(st >> 11) + 1) / 9007199254740993.0;
            st = st * 6364136223846793005ULL + 1442695040888963407ULL;
            double u2 = (double)(st >> 11) / 9007199254740992.0;
            double r = sqrt(-2 * log(u1));
            gauss[i] = (float)(rms * r * cos(6.283185307179586 * u2));
            gauss[i + 1] = (float)(rms * r * sin(6.283185307179586 * u2));
        }
        vq_codec *a = NULL, *g = NULL;
        CHECK_OK(vq_codec_create("vecinfer:sub_dim=8,bits=8", D, VQ_ROLE_KEY, 7, &a));
        CHECK_OK(vq_codec_create("vecinfer:sub_dim=8,bits=8", D, VQ_ROLE_KEY, 7, &g));
        if (a && g) {
            CHECK_OK(vq_codec_calibrate(a, kc, s1));
            CHECK_OK(vq_codec_calibrate(g, gauss, s1));
            double ea = rel_mse(a, ke, s2, D), eg = rel_mse(g, ke, s2, D);
            printf("  vecinfer layer %2d held-out key rel. MSE: calibrated %.4f, Gaussian codebook %.4f (%.1fx)\n", l,
                   ea, eg, eg / ea);
            CHECKF(ea < 0.5 * eg, "layer %d: calibrated %.4f not < 0.5 x Gaussian %.4f", l, ea, eg);
        }
        vq_codec_free(a);
        vq_codec_free(g);
        free(gauss);
    }
    vq_ctx_free(cal.ctx);
    vq_ctx_free(ev.ctx);

    /* the whole-model file: calibrate on the first quarter, write, use */
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    CHECK_OK(vq_cache_config_parse("keys=vecinfer values=vecinfer", &cfg));
    CHECK(vq_cache_for_model(g_smol, cfg, &c) == VQ_ERR_NEEDS_CALIBRATION && !c);
    CHECK(strstr(vq_last_error(), "veloxquant calibrate") != NULL);
    vq_cache_config_free(cfg);
    CHECK_OK(vq_cache_config_parse("keys=vecinfer values=vecinfer keep_first=1 keep_spec=spectral", &cfg));
    CHECK_OK(vq_cache_create_for_calibration(g_smol, cfg, &c));
    vq_cache_config_free(cfg);
    size_t got = 0, nt = vq_test_quick() ? 48 : 96;
    int32_t *toks = wiki_tokens(g_smol, 0, nt, &got);
    snprintf(g_calib_file, sizeof g_calib_file, "%s/model.vqcal", vq_test_tmpdir());
    if (c && toks && got == nt) {
        CHECK_OK(vq_cache_calibrate_model(c, g_smol, toks, nt, 0, NULL, NULL));
        CHECK_OK(vq_cache_save_calibration(c, g_calib_file));
    }
    vq_cache_free(c);
    free(toks);
    c = NULL;
    /* each layer picks its own entry; layer 0 is spectral */
    vq_cache *use = NULL;
    vq_ctx *ctx = NULL;
    char text[4096];
    snprintf(text, sizeof text,
             "keys=vecinfer:calib=%s values=vecinfer:calib=%s keep_first=1 keep_spec=spectral:calib=%s", g_calib_file,
             g_calib_file, g_calib_file);
    if (make_cached(g_smol, text, 64, &use, &ctx)) {
        vq_gen_params gp = greedy(4);
        tok_list t = { .n = 0 };
        CHECK_OK(vq_generate(ctx, "The capital of France is", &gp, collect, &t, NULL));
        CHECK(t.n == 4);
        free_cached(use, ctx);
    }
    /* a single codec cannot take the whole-model file; another model refuses it */
    vq_codec *one = NULL;
    snprintf(text, sizeof text, "vecinfer:calib=%s", g_calib_file);
    CHECK(vq_codec_create(text, 64, VQ_ROLE_KEY, 1, &one) != VQ_OK && !one);
    if (g_gemma) {
        snprintf(text, sizeof text, "keys=vecinfer:calib=%s", g_calib_file);
        CHECK_OK(vq_cache_config_parse(text, &cfg));
        CHECK(vq_cache_for_model(g_gemma, cfg, &c) == VQ_ERR_FORMAT && !c);
        CHECK(strstr(vq_last_error(), "another model") != NULL);
        vq_cache_config_free(cfg);
    }
    /* a corrupted file is refused */
    char bad[1100];
    snprintf(bad, sizeof bad, "%s.bad", g_calib_file);
    FILE *f = fopen(g_calib_file, "rb"), *o = fopen(bad, "wb");
    int ch;
    long i = 0;
    while (f && o && (ch = fgetc(f)) != EOF)
        fputc(i++ == 30 ? ch ^ 1 : ch, o);
    if (f)
        fclose(f);
    if (o)
        fclose(o);
    snprintf(text, sizeof text, "keys=vecinfer:calib=%s", bad);
    CHECK_OK(vq_cache_config_parse(text, &cfg));
    CHECK(vq_cache_for_model(g_smol, cfg, &c) == VQ_ERR_FORMAT && !c);
    vq_cache_config_free(cfg);
    remove(bad);
}

/* ---- eviction on the real model ---------------------------------------------- */

#define EV_CHUNK 16
#define STREAM_PPL_LIMIT 1.6

static void test_eviction(void)
{
    if (!g_smol)
        return;
    /* streaming_llm sinks=4 window=32: generate 64 tokens after a 9-token
     * prompt; the cache then holds exactly 4 + 32 tokens per KV head:
     * positions 0..3 and the newest 32, which end at the context's position
     * - 1 (positions kept counting past what is held). */
    vq_cache *c = NULL;
    vq_ctx *ctx = NULL;
    int ngen = vq_test_quick() ? 40 : 64;
    if (!make_cached(g_smol, "keys=fp16 values=fp16 evict=streaming_llm:sinks=4,window=32", 256, &c, &ctx))
        return;
    vq_gen_params gp = greedy(ngen);
    tok_list t = { .n = 0 };
    vq_gen_stats gs;
    CHECK_OK(vq_generate(ctx, "Once upon a time, in a small village,", &gp, collect, &t, &gs));
    int pos = vq_ctx_n_tokens(ctx);
    CHECK(pos == gs.n_prompt + t.n - 1);
    int32_t p[64];
    size_t n = 0;
    CHECK_OK(vq_cache_gather(c, 7, 1, 64, p, NULL, NULL, &n));
    CHECKF(n == 36, "held %zu tokens, want 4 + 32", n);
    int ok = n == 36;
    for (size_t i = 0; ok && i < 4; i++)
        ok = p[i] == (int32_t)i;
    for (size_t i = 4; ok && i < 36; i++)
        ok = p[i] == pos - 36 + (int32_t)i;
    CHECKF(ok, "kept positions are not sinks 0..3 + the newest 32 ending at %d", pos - 1);
    vq_cache_usage u;
    CHECK_OK(vq_cache_stats(c, -1, &u));
    CHECK(u.keys.tokens == (uint64_t)30 * 3 * 36);
    char *s = piece_text(g_smol, &t);
    /* coherence: past the window the text is still varied text, not a
     * stuck token; measured below by teacher-forced perplexity */
    printf("  streaming_llm(4+32) after %d positions: \"%.120s\"\n", pos, s ? s : "");
    free(s);
    free_cached(c, ctx);

    /* Teacher-forced perplexity of eval tokens 65..191 (after a 64-token
     * prefill, then chunks of 16) with streaming_llm vs the float buffer.
     * StreamingLLM (Xiao et al. 2023): with attention sinks perplexity
     * stays near full attention; a plain window without sinks collapses.
     * Measured: sinks 4 + window 64 -> 1.25x the float perplexity;
     * sinks 0 + window 68 -> 5.0x. Checks: with sinks < 1.6x; without
     * sinks > 2x the with-sinks ratio (this also fails if positions were
     * renumbered or sinks not kept after eviction). */
    size_t nt = vq_test_quick() ? 96 : 192, got = 0;
    int32_t *toks = wiki_tokens(g_smol, 1, nt, &got);
    if (!toks || got != nt) {
        CHECK(0);
        free(toks);
        return;
    }
    /* contexts: float, streaming with sinks, streaming without sinks */
    const char *cfgs[2] = { "keys=fp16 values=fp16 evict=streaming_llm:sinks=4,window=64",
                            "keys=fp16 values=fp16 evict=streaming_llm:sinks=0,window=68" };
    vq_ctx *cs[3] = { 0 };
    vq_cache *caches[2] = { 0 };
    CHECK_OK(vq_ctx_create(g_smol, (int)nt, 0, &cs[0]));
    for (int k = 0; k < 2; k++)
        make_cached(g_smol, cfgs[k], (int)nt, &caches[k], &cs[k + 1]);
    double nll[3] = { 0, 0, 0 };
    vq_model_info mi;
    vq_model_info_get(g_smol, &mi);
    float *lg = malloc(EV_CHUNK * (size_t)mi.n_vocab * sizeof(float));
    for (int k = 0; k < 3 && cs[k]; k++) {
        CHECK_OK(vq_ctx_forward(cs[k], toks, 64, NULL, VQ_LOGITS_LAST));
        for (size_t i0 = 64; i0 + 1 < nt; i0 += EV_CHUNK) {
            size_t b = nt - 1 - i0 < EV_CHUNK ? nt - 1 - i0 : EV_CHUNK;
            CHECK_OK(vq_ctx_forward(cs[k], &toks[i0], (int)b, lg, VQ_LOGITS_ALL));
            for (size_t r = 0; r < b; r++) {
                const float *row = lg + r * (size_t)mi.n_vocab;
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < mi.n_vocab; j++)
                    mx = row[j] > mx ? row[j] : mx;
                for (int j = 0; j < mi.n_vocab; j++)
                    sum += exp(row[j] - mx);
                nll[k] += mx + log(sum) - row[toks[i0 + r + 1]];
            }
        }
    }
    double ns = (double)(nt - 65);
    double r_sinks = exp((nll[1] - nll[0]) / ns), r_nosinks = exp((nll[2] - nll[0]) / ns);
    printf("  perplexity over %zu tokens: float %.2f, streaming_llm(4+64) %.2f (%.3fx), no sinks (0+68) %.2f (%.3fx)\n",
           nt - 65, exp(nll[0] / ns), exp(nll[1] / ns), r_sinks, exp(nll[2] / ns), r_nosinks);
    CHECKF(r_sinks < STREAM_PPL_LIMIT, "streaming perplexity ratio %.3f >= %.2f", r_sinks, STREAM_PPL_LIMIT);
    if (!vq_test_quick()) /* quick: too few tokens past the window to tell */
        CHECKF(r_nosinks > 2.0 * r_sinks, "no-sink window ratio %.3f not > 2 x sinks ratio %.3f", r_nosinks, r_sinks);
    free(lg);
    free(toks);
    for (int k = 0; k < 3; k++)
        vq_ctx_free(cs[k]);
    for (int k = 0; k < 2; k++)
        vq_cache_free(caches[k]);
}

static void test_gemma_window(void)
{
    /* Gemma 3's sliding-window layers never hold more than their window:
     * append window + 100 tokens of synthetic K/V to every layer of a cache
     * built for gemma3-270m and check the per-layer token counts. */
    if (!g_gemma)
        return;
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    CHECK_OK(vq_cache_config_parse("keys=q8_0 values=q8_0", &cfg));
    CHECK_OK(vq_cache_for_model(g_gemma, cfg, &c));
    vq_cache_config_free(cfg);
    if (!c)
        return;
    vq_cache_shape sh;
    CHECK_OK(vq_cache_get_shape(c, &sh));
    int W = 0, nswa = 0;
    for (int l = 0; l < sh.n_layers; l++) {
        vq_layer_shape li;
        CHECK_OK(vq_model_layer_info(g_gemma, l, &li));
        CHECK(sh.layers[l].window == li.window && sh.layers[l].head_dim == li.head_dim &&
              sh.layers[l].n_kv_heads == li.n_kv_heads);
        if (li.window > W)
            W = li.window;
        nswa += li.window > 0;
    }
    CHECK(W > 0 && nswa > 0);
    int total = W + 100, D = sh.layers[0].head_dim;
    float *x = malloc((size_t)64 * 8 * (size_t)D * sizeof(float));
    for (size_t i = 0; i < (size_t)64 * 8 * (size_t)D; i++)
        x[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    /* as the runtime does: append a batch, attend its queries (the cache
     * enforces the window when the attend ends; during a batch of b tokens
     * it must keep window - 1 + b tokens for the batch's first query) */
    int nq = sh.layers[0].n_q_heads;
    float *q = malloc((size_t)64 * (size_t)nq * (size_t)D * sizeof(float));
    float *o = malloc((size_t)64 * (size_t)nq * (size_t)D * sizeof(float));
    for (size_t i = 0; i < (size_t)64 * (size_t)nq * (size_t)D; i++)
        q[i] = x[i % ((size_t)64 * 8 * (size_t)D)];
    for (int l = 0; l < sh.n_layers; l++)
        for (int p = 0; p < total; p += 64) {
            int b = total - p < 64 ? total - p : 64;
            CHECK_OK(vq_cache_append(c, l, x, x, (size_t)b, p));
            CHECK_OK(vq_cache_attend(c, l, q, (size_t)b, sh.layers[l].n_q_heads, 0.0625f, o));
        }
    free(q);
    free(o);
    for (int l = 0; l < sh.n_layers; l++) {
        vq_cache_usage u;
        CHECK_OK(vq_cache_stats(c, l, &u));
        uint64_t per_head = u.keys.tokens / (uint64_t)sh.layers[l].n_kv_heads;
        if (sh.layers[l].window > 0)
            CHECKF(per_head <= (uint64_t)sh.layers[l].window, "layer %d holds %llu > window %d", l,
                   (unsigned long long)per_head, sh.layers[l].window);
        else
            CHECK(per_head == (uint64_t)total);
    }
    printf("  gemma3: %d sliding-window layers (window %d) hold <= window after %d tokens\n", nswa, W, total);
    free(x);
    vq_cache_free(c);
}

/* ---- the three-line example -------------------------------------------------- */

static void test_example(void)
{
    const char *b = getenv("VQ_BUILD");
    char cmd[2048], out[512];
    snprintf(out, sizeof out, "%s/three_lines.out", vq_test_tmpdir());
    snprintf(cmd, sizeof cmd, "%s/examples/three_lines > %s 2>&1", b && *b ? b : "build", out);
    int rc = system(cmd);
    CHECKF(rc == 0, "%s -> %d", cmd, rc);
    FILE *f = fopen(out, "rb");
    char buf[4096] = "";
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = 0;
    if (f)
        fclose(f);
    CHECKF(strstr(buf, "Paris") && strstr(buf, "KV cache:"), "three_lines output: %s", buf);
    remove(out);
}

/* A packed cache attends on the context's threads (the pool is lent to
 * it), in context chunks fixed by position: logits of a prompt and of the
 * next decode steps have the same bits with 1 and 2 threads. Chunks of 64
 * tokens here, so that the 300-token context (160 in quick runs) spans
 * several. */
static void test_threads_same_logits(void)
{
    if (!g_smol)
        return;
    static const char *cfgs[] = { "keys=kivi:bits=2,qbits=8 values=q4_0:rot=1 residual=32 page=64",
                                  "keys=fp16 values=fp16 residual=16 page=64",
                                  "keys=kivix:bits=3 values=kivix:bits=2 sinks=4 prerope=1 page=64" };
    vq_model_info mi;
    CHECK_OK(vq_model_info_get(g_smol, &mi));
    const size_t V = (size_t)mi.n_vocab;
    int32_t toks[304];
    for (int i = 0; i < 304; i++)
        toks[i] = (int32_t)((i * 7919u + 13u) % 20000u + 100u);
    /* quick runs (the sanitizer suite): one config, a 160-token prompt */
    const size_t ncfg = vq_test_quick() ? 1 : sizeof cfgs / sizeof *cfgs;
    const int np = vq_test_quick() ? 160 : 300;
    for (size_t k = 0; k < ncfg; k++) {
        float *lg[2] = { malloc(4 * V * sizeof(float)), malloc(4 * V * sizeof(float)) };
        for (int th = 1; th <= 2; th++) {
            vq_cache_config *cfg = NULL;
            vq_cache *cache = NULL;
            vq_ctx *ctx = NULL;
            CHECK_OK(vq_cache_config_parse(cfgs[k], &cfg));
            CHECK_OK(vq_cache_for_model(g_smol, cfg, &cache));
            vq_cache_config_free(cfg);
            if (!cache)
                continue;
            cache->attn_chunk = 64;
            CHECK_OK(vq_ctx_create_cached(g_smol, cache, 320, th, &ctx));
            if (ctx) {
                float *o = lg[th - 1];
                CHECK_OK(vq_ctx_forward(ctx, toks, np, o, VQ_LOGITS_LAST));
                for (int t = 0; t < 3; t++)
                    CHECK_OK(vq_ctx_forward(ctx, toks + np + t, 1, o + (size_t)(t + 1) * V, VQ_LOGITS_LAST));
            }
            free_cached(cache, ctx);
        }
        CHECKF(memcmp(lg[0], lg[1], 4 * V * sizeof(float)) == 0, "%s: logits differ between 1 and 2 threads",
               cfgs[k]);
        free(lg[0]), free(lg[1]);
    }
}

static int stop_at_once(int32_t token, const char *piece, size_t len, void *user)
{
    (void)token, (void)piece, (void)len, (void)user;
    return 1;
}

/* generation reserves the cache's pages for its prompt and max_tokens
 * (vq_ctx_reserve), and a reservation made first covers a generation
 * inside it: its pool does not grow */
static void test_generate_reserves(void)
{
    if (!g_smol)
        return;
    CHECK(vq_ctx_reserve(NULL, 1) == VQ_ERR_INVALID_ARG);
    int32_t toks[64];
    for (int i = 0; i < 64; i++)
        toks[i] = 300 + 7 * i;
    vq_cache *cache = NULL;
    vq_ctx *ctx = NULL;
    if (make_cached(g_smol, "keys=q4_0:rot=1 values=q4_0:rot=1", 4096, &cache, &ctx)) {
        CHECK(vq_ctx_reserve(ctx, -1) == VQ_ERR_INVALID_ARG);
        vq_gen_params gp = greedy(2000); /* stopped after its first token */
        CHECK_OK(vq_generate_tokens(ctx, toks, 64, &gp, stop_at_once, NULL, NULL));
        vq_cache_usage u;
        CHECK_OK(vq_cache_stats(cache, -1, &u));
        /* 2,064 tokens: two whole 1024-token pages per stream made ahead */
        CHECKF(u.pool_free_bytes >= 2048 * vq_ctx_kv_bytes_per_token(ctx), "idle %llu B, %zu B per token",
               (unsigned long long)u.pool_free_bytes, vq_ctx_kv_bytes_per_token(ctx));
    }
    free_cached(cache, ctx);
    const int n_gen = vq_test_quick() ? 8 : 40;
    if (make_cached(g_smol, "keys=kivix:bits=4,group=128,outliers=64 values=kivix:bits=3,group=64 residual=16 sinks=4",
                    4096, &cache, &ctx)) {
        CHECK_OK(vq_ctx_reserve(ctx, 64 + n_gen));
        const uint64_t b = tc_pool_bytes(cache);
        vq_gen_params gp = greedy(n_gen);
        tok_list t = { { 0 }, 0 };
        CHECK_OK(vq_generate_tokens(ctx, toks, 64, &gp, collect, &t, NULL));
        CHECK(t.n == n_gen);
        CHECKF(tc_pool_bytes(cache) == b, "the pool grew %llu -> %llu B", (unsigned long long)b,
               (unsigned long long)tc_pool_bytes(cache));
    }
    free_cached(cache, ctx);
}

/* run a test and print its CPU time (the suite's budget is ~3 min) */
#define RUNT(fn)                                                                             \
    do {                                                                                     \
        clock_t t0_ = clock();                                                               \
        RUN(fn);                                                                             \
        printf("  [%s: %.1f s CPU]\n", #fn, (double)(clock() - t0_) / CLOCKS_PER_SEC);        \
    } while (0)

int main(void)
{
    const char *ps = vq_test_model("smollm2-135m"), *pg = vq_test_model("gemma3-270m");
    if (ps)
        CHECK_OK(vq_model_load(ps, &g_smol));
    if (pg)
        CHECK_OK(vq_model_load(pg, &g_gemma));
    RUNT(test_fp16_tokens);
    RUNT(test_paris);
    RUNT(test_kl);
    RUNT(test_calibration);
    RUNT(test_bytes_every_method);
    RUNT(test_save_load);
    RUNT(test_eviction);
    RUNT(test_gemma_window);
    RUNT(test_generate_reserves);
    RUNT(test_example);
    RUNT(test_threads_same_logits);
    vq_model_free(g_smol);
    vq_model_free(g_gemma);
    return vq_test_summary("cache_model");
}
