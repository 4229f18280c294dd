/* tiny_model.c -- see tiny_model.h. */
#include "tiny_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "core/rng.h"
#include "gguf_writer.h"
#include "model/quants.h"

/* floats -> bytes of type t (rows of `cols`); returns malloc'd buffer */
static void *encode(uint32_t t, const float *x, size_t n)
{
    if (t == VQ_W_F32) {
        void *b = malloc(n * 4);
        memcpy(b, x, n * 4);
        return b;
    }
    if (t == VQ_W_F16) {
        uint16_t *b = malloc(n * 2);
        for (size_t i = 0; i < n; i++)
            b[i] = vq_fp32_to_fp16(x[i]);
        return b;
    }
    size_t nb = n / 32;
    if (t == VQ_W_Q4_0 || t == VQ_W_Q4_1) {
        /* blocks of 32 (ggml block_q4_0 / q4_1): Q4_0: d = (the value of
         * largest magnitude) / -8, q = round(x / d) + 8 held to 0..15; Q4_1:
         * d = (max - min) / 15, m = min, q = round((x - m) / d); codes j and
         * 16 + j share byte j (low, high nibble) */
        const size_t bb = t == VQ_W_Q4_0 ? 18 : 20, hq = bb - 16;
        uint8_t *b = malloc(nb * bb);
        for (size_t k = 0; k < nb; k++) {
            const float *v = x + 32 * k;
            float lo = v[0], hi = v[0], big = 0;
            for (int j = 0; j < 32; j++) {
                lo = fminf(lo, v[j]), hi = fmaxf(hi, v[j]);
                if (fabsf(v[j]) > fabsf(big))
                    big = v[j];
            }
            const float d = t == VQ_W_Q4_0 ? big / -8.0f : (hi - lo) / 15.0f, base = t == VQ_W_Q4_0 ? 0 : lo;
            const uint16_t hd = vq_fp32_to_fp16(d), hm = vq_fp32_to_fp16(lo);
            memcpy(b + bb * k, &hd, 2);
            if (t == VQ_W_Q4_1)
                memcpy(b + bb * k + 2, &hm, 2);
            const float id = d != 0 ? 1.0f / d : 0;
            uint8_t q[32];
            for (int j = 0; j < 32; j++) {
                int c = (int)lrintf((v[j] - base) * id) + (t == VQ_W_Q4_0 ? 8 : 0);
                q[j] = (uint8_t)(c < 0 ? 0 : c > 15 ? 15 : c);
            }
            for (int j = 0; j < 16; j++)
                b[bb * k + hq + j] = (uint8_t)(q[j] | q[16 + j] << 4);
        }
        return b;
    }
    /* Q8_0: blocks of 32: fp16 scale d = max|x| / 127, then 32 int8
     * q = round(x / d) (ggml block_q8_0) */
    uint8_t *b = malloc(nb * 34);
    for (size_t k = 0; k < nb; k++) {
        const float *v = x + 32 * k;
        float amax = 0;
        for (int j = 0; j < 32; j++)
            amax = fmaxf(amax, fabsf(v[j]));
        float d = amax / 127.0f;
        uint16_t h = vq_fp32_to_fp16(d);
        memcpy(b + 34 * k, &h, 2);
        float id = d > 0 ? 1.0f / d : 0;
        for (int j = 0; j < 32; j++) {
            int q = (int)lrintf(v[j] * id);
            q = q > 127 ? 127 : q < -127 ? -127 : q;
            b[34 * k + 2 + j] = (uint8_t)(int8_t)q;
        }
    }
    return b;
}

static void add_mat(vq_gw *w, vq_rng *r, uint32_t t, const char *name, int rows, int cols)
{
    size_t n = (size_t)rows * (size_t)cols;
    float *x = malloc(n * sizeof *x);
    float sd = 1.0f / sqrtf((float)cols);
    for (size_t i = 0; i < n; i++)
        x[i] = sd * vq_rng_normal(r);
    void *b = encode(t, x, n);
    uint64_t ne[2] = { (uint64_t)cols, (uint64_t)rows };
    vq_gw_add_tensor(w, name, 2, ne, t, b);
    free(b);
    free(x);
}

static void add_vec(vq_gw *w, vq_rng *r, const char *name, int n, float center, float spread)
{
    float *x = malloc((size_t)n * sizeof *x);
    for (int i = 0; i < n; i++)
        x[i] = center + spread * vq_rng_normal(r);
    uint64_t ne[1] = { (uint64_t)n };
    vq_gw_add_tensor(w, name, 1, ne, VQ_W_F32, x);
    free(x);
}

int vq_tiny_write(const vq_tiny_spec *s, const char *path) { return vq_tiny_write_outliers(s, 0.0f, path); }

int vq_tiny_write_outliers(const vq_tiny_spec *s, float k_outlier, const char *path)
{
    int qwen2 = strcmp(s->arch, "qwen2") == 0, qwen3 = strcmp(s->arch, "qwen3") == 0;
    int llama = strcmp(s->arch, "llama") == 0;
    int gemma = strcmp(s->arch, "gemma3") == 0;
    if (s->n_q_heads % s->n_kv_heads || (s->wtype != VQ_W_F32 && s->n_embd % 32))
        return -1;
    vq_rng r;
    vq_rng_seed(&r, s->seed);
    vq_gw *w = vq_gw_begin(3);
    char k[128];
#define KEY(suffix) (snprintf(k, sizeof k, "%s." suffix, s->arch), k)
    vq_gw_add_str(w, "general.architecture", s->arch);
    vq_gw_add_str(w, "general.name", "tiny test model");
    vq_gw_add_u32(w, KEY("block_count"), (uint32_t)s->n_layers);
    vq_gw_add_u32(w, KEY("context_length"), 256);
    vq_gw_add_u32(w, KEY("embedding_length"), (uint32_t)s->n_embd);
    vq_gw_add_u32(w, KEY("feed_forward_length"), (uint32_t)s->n_ff);
    vq_gw_add_u32(w, KEY("attention.head_count"), (uint32_t)s->n_q_heads);
    vq_gw_add_u32(w, KEY("attention.head_count_kv"), (uint32_t)s->n_kv_heads);
    if (s->write_key_length) {
        vq_gw_add_u32(w, KEY("attention.key_length"), (uint32_t)s->head_dim);
        vq_gw_add_u32(w, KEY("attention.value_length"), (uint32_t)s->head_dim);
    }
    vq_gw_add_f32(w, KEY("rope.freq_base"), s->rope_base);
    vq_gw_add_f32(w, KEY("attention.layer_norm_rms_epsilon"), s->rms_eps);
    if (gemma && s->window > 0)
        vq_gw_add_u32(w, KEY("attention.sliding_window"), (uint32_t)s->window);
#undef KEY
    int E = s->n_embd, QD = s->n_q_heads * s->head_dim, KD = s->n_kv_heads * s->head_dim;
    uint32_t t = s->wtype;
    add_mat(w, &r, t, "token_embd.weight", s->n_vocab, E);
    add_vec(w, &r, "output_norm.weight", E, 1.0f, 0.1f);
    if (!s->tied)
        add_mat(w, &r, t, "output.weight", s->n_vocab, E);
    for (int il = 0; il < s->n_layers; il++) {
        char nm[96];
#define NM(x) (snprintf(nm, sizeof nm, "blk.%d." x, il), nm)
        add_vec(w, &r, NM("attn_norm.weight"), E, 1.0f, 0.1f);
        add_mat(w, &r, t, NM("attn_q.weight"), QD, E);
        add_mat(w, &r, t, NM("attn_k.weight"), KD, E);
        add_mat(w, &r, t, NM("attn_v.weight"), KD, E);
        add_mat(w, &r, t, NM("attn_output.weight"), E, QD);
        if (qwen2 || (llama && k_outlier > 0.0f)) {
            if (qwen2)
                add_vec(w, &r, NM("attn_q.bias"), QD, 0.0f, 0.1f);
            if (k_outlier > 0.0f) { /* outlier channels: every 8th, alternating sign */
                float *kb = malloc((size_t)KD * sizeof *kb);
                for (int i = 0; i < KD; i++)
                    kb[i] = i % 8 == 3 ? ((i / 8) % 2 ? -k_outlier : k_outlier) : 0.1f * vq_rng_normal(&r);
                uint64_t ne[1] = { (uint64_t)KD };
                vq_gw_add_tensor(w, NM("attn_k.bias"), 1, ne, VQ_W_F32, kb);
                free(kb);
            } else {
                add_vec(w, &r, NM("attn_k.bias"), KD, 0.0f, 0.1f);
            }
            if (qwen2)
                add_vec(w, &r, NM("attn_v.bias"), KD, 0.0f, 0.1f);
        }
        if (qwen3 || gemma) {
            add_vec(w, &r, NM("attn_q_norm.weight"), s->head_dim, 1.0f, 0.1f);
            add_vec(w, &r, NM("attn_k_norm.weight"), s->head_dim, 1.0f, 0.1f);
        }
        if (gemma) {
            add_vec(w, &r, NM("post_attention_norm.weight"), E, 1.0f, 0.1f);
            add_vec(w, &r, NM("post_ffw_norm.weight"), E, 1.0f, 0.1f);
        }
        add_vec(w, &r, NM("ffn_norm.weight"), E, 1.0f, 0.1f);
        add_mat(w, &r, t, NM("ffn_gate.weight"), s->n_ff, E);
        add_mat(w, &r, t, NM("ffn_up.weight"), s->n_ff, E);
        add_mat(w, &r, t, NM("ffn_down.weight"), E, s->n_ff);
#undef NM
    }
    int rc = vq_gw_write_file(w, path);
    vq_gw_free(w);
    return rc;
}

vq_tiny_spec vq_tiny_outlier_spec(void)
{
    vq_tiny_spec s;
    memset(&s, 0, sizeof s);
    s.arch = "qwen2";
    s.n_layers = 2;
    s.n_embd = 128;
    s.n_ff = 192;
    s.n_q_heads = 2;
    s.n_kv_heads = 1;
    s.head_dim = 64;
    s.n_vocab = 300;
    s.rope_base = 10000.0f;
    s.rms_eps = 1e-6f;
    s.wtype = VQ_W_F32;
    s.seed = 4;
    return s;
}
