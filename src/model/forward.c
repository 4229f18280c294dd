/* forward.c -- the transformer forward pass for llama / qwen2 / qwen3 /
 * gemma3 (architecture differences: see model.c's header comment).
 *
 * One batch of T tokens goes through every layer together. Every matrix
 * product is y[t][r] = dot(W row r, x[t]): the activations x[t] are
 * prepared once per (matrix type, input) with vq_act_prepare, then rows are
 * split over the thread pool, each thread looping rows outer and tokens
 * inner, so each weight row is read from memory once per batch. Attention
 * goes through the single seam vq_attn_layer (kv_iface.h). */
#include <math.h>
#include <string.h>

#include "model/forward.h"
#include "model/ops.h"
#include "model/quants.h"

typedef struct {
    const vq_wmat *w;
    const uint8_t *act;
    size_t act_stride;
    int n;            /* tokens */
    float *y;         /* [n][y_stride] */
    size_t y_stride;
} matmul_job;

static void matmul_rows(void *arg, int i, int nt)
{
    const matmul_job *j = arg;
    const vq_wmat *w = j->w;
    size_t r0, r1;
    vq_pool_split((size_t)w->rows, i, nt, &r0, &r1);
    for (size_t r = r0; r < r1; r++) {
        const uint8_t *row = w->data + r * w->row_bytes;
        for (int t = 0; t < j->n; t++)
            j->y[(size_t)t * j->y_stride + r] =
                vq_dot((vq_wtype)w->type, row, j->act + (size_t)t * j->act_stride, (size_t)w->cols);
    }
}

/* y[t][r] for t < n, rows of w; x is [n][w->cols]. Activations are reused
 * when the last product had the same input buffer and weight type (the
 * caller clears c->act_src whenever it rewrites an input buffer). */
static void matmul(vq_ctx *c, const vq_wmat *w, const float *x, int n, float *y, size_t y_stride)
{
    if (c->act_src != x || c->act_type != w->type || c->act_n != n) {
        for (int t = 0; t < n; t++)
            vq_act_prepare((vq_wtype)w->type, x + (size_t)t * (size_t)w->cols, (size_t)w->cols,
                           c->act + (size_t)t * c->act_stride);
        c->act_src = x;
        c->act_type = w->type;
        c->act_n = n;
    }
    matmul_job j = { w, c->act, c->act_stride, n, y, y_stride };
    vq_pool_run(c->pool, matmul_rows, &j);
}

static void add_bias(float *y, const float *b, int n, size_t width)
{
    if (!b)
        return;
    for (int t = 0; t < n; t++)
        for (size_t i = 0; i < width; i++)
            y[(size_t)t * width + i] += b[i];
}

/* QK-norm (if w) and RoPE for n tokens x heads of one layer, in place. */
static void qk_prepare(const vq_model *m, const vq_layer *L, float *x, int n, int heads,
                       const float *norm_w, int pos0)
{
    size_t hd = (size_t)L->head_dim;
    for (int t = 0; t < n; t++)
        for (int h = 0; h < heads; h++) {
            float *v = x + ((size_t)t * (size_t)heads + (size_t)h) * hd;
            if (norm_w)
                vq_rmsnorm(v, v, norm_w, hd, m->rms_eps);
            vq_rope(v, hd, pos0 + t, L->inv_freq, m->rope_neox);
        }
}

static void norm_rows(const vq_model *m, float *y, const float *x, const float *w, int n)
{
    size_t E = (size_t)m->n_embd;
    for (int t = 0; t < n; t++)
        vq_rmsnorm(y + (size_t)t * E, x + (size_t)t * E, w, E, m->rms_eps);
}

static vq_status layer_forward(vq_ctx *c, int il, int n, int pos0)
{
    const vq_model *m = c->m;
    const vq_layer *L = &m->layers[il];
    size_t E = (size_t)m->n_embd, F = (size_t)m->n_ff;
    size_t QD = (size_t)L->n_q_heads * (size_t)L->head_dim;
    size_t KD = (size_t)L->n_kv_heads * (size_t)L->head_dim;

    /* attention block */
    norm_rows(m, c->xn, c->x, L->attn_norm, n);
    c->act_src = NULL;
    matmul(c, &L->wq, c->xn, n, c->q, QD);
    matmul(c, &L->wk, c->xn, n, c->k, KD);
    matmul(c, &L->wv, c->xn, n, c->v, KD);
    add_bias(c->q, L->bq, n, QD);
    add_bias(c->k, L->bk, n, KD);
    add_bias(c->v, L->bv, n, KD);
    qk_prepare(m, L, c->q, n, L->n_q_heads, L->q_norm, pos0);
    qk_prepare(m, L, c->k, n, L->n_kv_heads, L->k_norm, pos0);
    vq_status st = vq_attn_layer(c->kv, il, c->q, c->k, c->v, n, pos0, c->att);
    if (st != VQ_OK)
        return vq_fail(c->err, st, "forward: layer %d attention: %s", il, c->kv->err);
    c->act_src = NULL;
    matmul(c, &L->wo, c->att, n, c->tmp, E);
    if (L->post_attn_norm)
        norm_rows(m, c->tmp, c->tmp, L->post_attn_norm, n);
    for (size_t i = 0; i < (size_t)n * E; i++)
        c->x[i] += c->tmp[i];

    /* feed-forward block: down(act(gate(x)) * up(x)) */
    norm_rows(m, c->xn, c->x, L->ffn_norm, n);
    c->act_src = NULL;
    matmul(c, &L->w_gate, c->xn, n, c->gate, F);
    matmul(c, &L->w_up, c->xn, n, c->up, F);
    for (size_t i = 0; i < (size_t)n * F; i++) {
        float g = c->gate[i];
        c->gate[i] = (m->gelu_ffn ? vq_gelu_tanh(g) : vq_silu(g)) * c->up[i];
    }
    c->act_src = NULL;
    matmul(c, &L->w_down, c->gate, n, c->tmp, E);
    if (L->post_ffn_norm)
        norm_rows(m, c->tmp, c->tmp, L->post_ffn_norm, n);
    for (size_t i = 0; i < (size_t)n * E; i++)
        c->x[i] += c->tmp[i];
    return VQ_OK;
}

vq_status vq_forward_batch(vq_ctx *c, const int32_t *tokens, int n, float *logits, int all)
{
    const vq_model *m = c->m;
    size_t E = (size_t)m->n_embd, V = (size_t)m->n_vocab;
    int pos0 = c->n_tokens;
    for (int t = 0; t < n; t++) {
        float *x = c->x + (size_t)t * E;
        vq_dequantize((vq_wtype)m->tok_embd.type,
                      m->tok_embd.data + (size_t)tokens[t] * m->tok_embd.row_bytes, x, E);
        if (m->embd_scale != 1.0f)
            for (size_t i = 0; i < E; i++)
                x[i] *= m->embd_scale;
    }
    for (int il = 0; il < m->n_layers; il++) {
        vq_status st = layer_forward(c, il, n, pos0);
        if (st != VQ_OK) {
            c->broken = 1;
            return st;
        }
    }
    c->n_tokens = pos0 + n;
    if (!logits)
        return VQ_OK;
    int first = all ? 0 : n - 1, cnt = all ? n : 1;
    norm_rows(m, c->xn, c->x + (size_t)first * E, m->output_norm, cnt);
    c->act_src = NULL;
    matmul(c, &m->output, c->xn, cnt, logits, V);
    if (m->final_softcap > 0) {
        float cap = m->final_softcap;
        for (size_t i = 0; i < (size_t)cnt * V; i++)
            logits[i] = cap * tanhf(logits[i] / cap);
    }
    return VQ_OK;
}
