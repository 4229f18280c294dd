/* test_model_tiny.c -- tiny random-weight GGUF models of every supported
 * architecture, written by the test (tests/util/tiny_model.c), loaded and
 * run by the runtime; logits compared with the float64 reference forward
 * (tests/util/ref_forward.c). Also: metadata read back, thread-count
 * independence, and the loader's / context's error paths.
 *
 * Error measure: for each token, max_i |ours_i - ref_i| / max_i |ref_i|.
 * Thresholds:
 *   F32 weights: 1e-4 (the bound). Our float32 arithmetic has
 *     relative rounding ~1e-7 per op; through a few layers of
 *     norm/matmul/softmax the observed error is ~1e-6, so 1e-4 has margin
 *     yet catches any semantic slip (a wrong RoPE pairing or window gives
 *     errors of order 1).
 *   F16 weights: 1e-3 -- the reference uses the same dequantized weights,
 *     but a kernel may round activations to half precision (2^-11).
 *   Q8_0 weights: 5e-2 -- the Q8_0 kernel quantizes activations to 8-bit
 *     blocks (relative step 1/127 of the block max), as ggml does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/quants.h"
#include "ref_forward.h"
#include "test.h"
#include "tiny_model.h"
#include "veloxquant.h"

static vq_tiny_spec base_spec(const char *arch)
{
    vq_tiny_spec s;
    memset(&s, 0, sizeof s);
    s.arch = arch;
    s.n_layers = 2;
    s.n_embd = 64;
    s.n_ff = 96;
    s.n_q_heads = 4;
    s.n_kv_heads = 2;
    s.head_dim = 16;
    s.n_vocab = 100;
    s.rope_base = 10000.0f;
    s.rms_eps = 1e-5f;
    s.wtype = VQ_W_F32;
    s.seed = 1;
    return s;
}

static double rel_err(const float *a, const double *ref, int n)
{
    double md = 0, mr = 0;
    for (int i = 0; i < n; i++) {
        md = fmax(md, fabs((double)a[i] - ref[i]));
        mr = fmax(mr, fabs(ref[i]));
    }
    return mr > 0 ? md / mr : md;
}

/* Run n tokens: the first n_prefill in one call (all logits), the rest one
 * by one (decode path); compare every token's logits with the reference. */
static void check_against_ref_k(const vq_tiny_spec *s, float k_outlier, const char *tag, int n,
                                int n_prefill, double tol)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.gguf", vq_test_tmpdir(), tag);
    CHECKF(vq_tiny_write_outliers(s, k_outlier, path) == 0, "%s: cannot write %s", tag, path);
    int V = s->n_vocab;
    int32_t *tok = malloc((size_t)n * sizeof *tok);
    for (int i = 0; i < n; i++)
        tok[i] = (int32_t)((i * 37 + 11) % V);
    double *ref = malloc((size_t)n * V * sizeof *ref);
    CHECKF(vq_ref_forward(s, path, tok, n, ref) == 0, "%s: reference failed", tag);
    vq_model *m = NULL;
    CHECK_OK(vq_model_load(path, &m));
    if (!m) {
        free(tok);
        free(ref);
        return;
    }
    float *lg = malloc((size_t)n * V * sizeof *lg);
    float *lg1 = malloc((size_t)n * V * sizeof *lg1);
    for (int threads = 1; threads <= 2; threads++) {
        float *out = threads == 1 ? lg1 : lg;
        vq_ctx *c = NULL;
        CHECK_OK(vq_ctx_create(m, n + 4, threads, &c));
        if (!c)
            break;
        CHECK_OK(vq_ctx_forward(c, tok, n_prefill, out, VQ_LOGITS_ALL));
        for (int t = n_prefill; t < n; t++)
            CHECK_OK(vq_ctx_forward(c, tok + t, 1, out + (size_t)t * V, VQ_LOGITS_LAST));
        CHECK(vq_ctx_n_tokens(c) == n);
        CHECK(vq_ctx_kv_bytes(c) == (size_t)n * vq_ctx_kv_bytes_per_token(c));
        vq_ctx_free(c);
    }
    double worst = 0;
    for (int t = 0; t < n; t++)
        worst = fmax(worst, rel_err(lg + (size_t)t * V, ref + (size_t)t * V, V));
    CHECKF(worst <= tol, "%s: relative error %.3g > %.3g", tag, worst, tol);
    printf("  %-22s max relative error %.3g (threshold %.0e)\n", tag, worst, tol);
    CHECKF(memcmp(lg, lg1, (size_t)n * V * sizeof *lg) == 0,
           "%s: logits differ between 1 and 2 threads", tag);
    vq_model_free(m);
    free(lg);
    free(lg1);
    free(tok);
    free(ref);
}

static void check_against_ref(const vq_tiny_spec *s, const char *tag, int n, int n_prefill,
                              double tol)
{
    check_against_ref_k(s, 0.0f, tag, n, n_prefill, tol);
}

/* llama with an attn_k.bias (optional in llama GGUFs, as llama.cpp reads
 * them; scripts/make_outlier_model.py adds one to SmolLM2): the runtime
 * must add it. The reference's logits with and without the bias differ by
 * far more than the tolerance, so a loader that skipped it fails. */
static void test_llama_key_bias(void)
{
    vq_tiny_spec s = base_spec("llama");
    s.tied = 1;
    s.seed = 3;
    enum { N = 12 };
    int32_t tok[N];
    for (int i = 0; i < N; i++)
        tok[i] = (int32_t)((i * 37 + 11) % s.n_vocab);
    char p0[512], p1[512];
    snprintf(p0, sizeof p0, "%s/llama_nobias.gguf", vq_test_tmpdir());
    snprintf(p1, sizeof p1, "%s/llama_kbias.gguf", vq_test_tmpdir());
    CHECK(vq_tiny_write(&s, p0) == 0);
    CHECK(vq_tiny_write_outliers(&s, 8.0f, p1) == 0);
    double *r0 = malloc((size_t)N * s.n_vocab * sizeof *r0), *r1 = malloc((size_t)N * s.n_vocab * sizeof *r1);
    CHECK(vq_ref_forward(&s, p0, tok, N, r0) == 0);
    CHECK(vq_ref_forward(&s, p1, tok, N, r1) == 0);
    double md = 0, mr = 0;
    for (int i = 0; i < N * s.n_vocab; i++) {
        md = fmax(md, fabs(r0[i] - r1[i]));
        mr = fmax(mr, fabs(r0[i]));
    }
    CHECKF(md > 1e-2 * mr, "the key bias hardly changes the reference (%.3g of %.3g)", md, mr);
    free(r0);
    free(r1);
    check_against_ref_k(&s, 8.0f, "llama_kbias_f32", N, 7, 1e-4);
}

static void test_llama(void)
{
    vq_tiny_spec s = base_spec("llama");
    s.tied = 1; /* SmolLM2 style */
    check_against_ref(&s, "llama_f32", 12, 7, 1e-4);
    /* a prompt longer than one prefill batch (64) */
    s.seed = 2;
    check_against_ref(&s, "llama_f32_long", vq_test_quick() ? 70 : 140, vq_test_quick() ? 67 : 133,
                      1e-4);
    /* decode past 1,024 positions: the float buffer's split-K chunks
     * (kv_float.c) merged, positions 1,020..1,059 decoded one by one */
    check_against_ref(&s, "llama_f32_chunks", 1060, 1020, 1e-4);
    s.wtype = VQ_W_F16;
    check_against_ref(&s, "llama_f16", 12, 7, 1e-3);
    s.wtype = VQ_W_Q8_0;
    check_against_ref(&s, "llama_q8_0", 12, 7, 5e-2);
    /* every layer matrix a multiple of 16 rows: on AVX-512 VNNI the 16-row
     * interleaved kernels (model/quants_x16.h), prefill and decode */
    s.wtype = VQ_W_Q4_1;
    check_against_ref(&s, "llama_q4_1", 12, 7, 5e-2);
    s.wtype = VQ_W_Q4_0;
    check_against_ref(&s, "llama_q4_0", 12, 7, 5e-2);
}

static void test_qwen2(void)
{
    vq_tiny_spec s = base_spec("qwen2");
    s.rope_base = 1000000.0f;
    check_against_ref(&s, "qwen2_f32", 12, 5, 1e-4);
}

static void test_qwen3(void)
{
    vq_tiny_spec s = base_spec("qwen3");
    s.head_dim = 32; /* q width 128 != n_embd 64, as in real Qwen3 */
    s.write_key_length = 1;
    check_against_ref(&s, "qwen3_f32", 12, 5, 1e-4);
    s.wtype = VQ_W_Q8_0;
    check_against_ref(&s, "qwen3_q8_0", 12, 5, 5e-2);
}

static void test_gemma3(void)
{
    /* 7 layers: 0-4 and 6 use the sliding window (4 tokens, RoPE base
     * 10000), layer 5 is global (base 1e6); GQA 4 query / 2 KV heads;
     * 12 tokens so the window cuts off context. */
    vq_tiny_spec s = base_spec("gemma3");
    s.n_layers = 7;
    s.head_dim = 32;
    s.write_key_length = 1;
    s.window = 4;
    s.rope_base = 1000000.0f;
    s.rms_eps = 1e-6f;
    check_against_ref(&s, "gemma3_f32", 12, 6, 1e-4);
    /* decode past a split-K chunk boundary with window layers (their early
     * chunks are empty) */
    check_against_ref(&s, "gemma3_f32_chunks", 1040, 1020, 1e-4);
    s.wtype = VQ_W_F16;
    check_against_ref(&s, "gemma3_f16", 12, 6, 1e-3);

    char path[512];
    snprintf(path, sizeof path, "%s/gemma3_f32.gguf", vq_test_tmpdir());
    vq_model *m = NULL;
    CHECK_OK(vq_model_load(path, &m));
    if (!m)
        return;
    vq_model_info in;
    CHECK_OK(vq_model_info_get(m, &in));
    CHECK(strcmp(in.arch, "gemma3") == 0);
    CHECK(in.n_layers == 7 && in.n_embd == 64 && in.n_q_heads == 4 && in.n_kv_heads == 2);
    CHECK(in.head_dim == 32 && in.n_ff == 96 && in.n_vocab == 100);
    CHECK(in.sliding_window == 4 && in.n_swa_layers == 6);
    CHECK(in.rope_base == 1000000.0f && in.rope_base_local == 10000.0f);
    for (int l = 0; l < 7; l++) {
        vq_layer_shape li;
        CHECK_OK(vq_model_layer_info(m, l, &li));
        CHECK(li.window == (l == 5 ? 0 : 4));
        /* the layer's RoPE base by veloxquant.h's rule: local on window layers */
        CHECK((li.window > 0 ? in.rope_base_local : in.rope_base) == (l == 5 ? 1000000.0f : 10000.0f));
    }
    CHECK(vq_model_layer_info(m, 7, &(vq_layer_shape){ 0 }) == VQ_ERR_INVALID_ARG);
    vq_model_free(m);
}

static void test_context_errors(void)
{
    vq_tiny_spec s = base_spec("llama");
    char path[512];
    snprintf(path, sizeof path, "%s/ctx_err.gguf", vq_test_tmpdir());
    CHECK(vq_tiny_write(&s, path) == 0);
    vq_model *m = NULL;
    CHECK_OK(vq_model_load(path, &m));
    if (!m)
        return;
    vq_ctx *c = NULL;
    CHECK_OK(vq_ctx_create(m, 8, 2, &c));
    int32_t tok[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
    float *lg = malloc(100 * sizeof *lg);
    CHECK(vq_ctx_forward(c, tok, 9, lg, VQ_LOGITS_LAST) == VQ_ERR_STATE);
    CHECK(vq_ctx_n_tokens(c) == 0);
    int32_t bad[2] = { 3, 100 };
    CHECK(vq_ctx_forward(c, bad, 2, lg, VQ_LOGITS_LAST) == VQ_ERR_INVALID_ARG);
    CHECK(strstr(vq_ctx_error(c), "100") != NULL);
    CHECK(vq_ctx_forward(c, tok, 0, lg, VQ_LOGITS_LAST) == VQ_ERR_INVALID_ARG);
    CHECK_OK(vq_ctx_forward(c, tok, 8, lg, VQ_LOGITS_LAST));
    CHECK(vq_ctx_forward(c, tok, 1, lg, VQ_LOGITS_LAST) == VQ_ERR_STATE);
    vq_ctx_reset(c);
    CHECK(vq_ctx_n_tokens(c) == 0 && vq_ctx_kv_bytes(c) == 0);
    CHECK_OK(vq_ctx_forward(c, tok, 3, NULL, VQ_LOGITS_LAST));
    /* no tokenizer in tiny files: tokenization is refused, not crashed */
    int32_t *t = NULL;
    size_t nt = 0;
    CHECK(vq_model_tokenize(m, "hi", 2, 1, 0, &t, &nt) == VQ_ERR_UNSUPPORTED);
    free(lg);
    vq_ctx_free(c);
    vq_model_free(m);
    vq_ctx_free(NULL);
    vq_model_free(NULL);
}

static void test_load_errors(void)
{
    char path[512];
    vq_model *m = NULL;
    /* unsupported architecture */
    vq_tiny_spec s = base_spec("gpt2");
    snprintf(path, sizeof path, "%s/gpt2.gguf", vq_test_tmpdir());
    CHECK(vq_tiny_write(&s, path) == 0);
    CHECK(vq_model_load(path, &m) == VQ_ERR_UNSUPPORTED && !m);
    CHECK(strstr(vq_last_error(), "gpt2") != NULL);
    /* not installed */
    CHECK(vq_model_load("no-such-model", &m) == VQ_ERR_IO);
    CHECK(strstr(vq_last_error(), "fetch-model") != NULL);
    CHECK(vq_model_load("/nonexistent/x.gguf", &m) == VQ_ERR_IO);
    CHECK(vq_model_load(NULL, &m) == VQ_ERR_INVALID_ARG);
    s = base_spec("qwen3");
    s.head_dim = 32; /* q width 128, but key_length not written: loader
                      * assumes 64/4 = 16 and must refuse the shapes */
    snprintf(path, sizeof path, "%s/qwen3_nokl.gguf", vq_test_tmpdir());
    CHECK(vq_tiny_write(&s, path) == 0);
    CHECK(vq_model_load(path, &m) == VQ_ERR_FORMAT && !m);
    CHECK(strstr(vq_last_error(), "attn_q") != NULL);
}

int main(void)
{
    RUN(test_llama);
    RUN(test_llama_key_bias);
    RUN(test_qwen2);
    RUN(test_qwen3);
    RUN(test_gemma3);
    RUN(test_context_errors);
    RUN(test_load_errors);
    return vq_test_summary("model_tiny");
}
