/* forward.c -- the transformer forward pass for llama / qwen2 / qwen3 /
 * gemma3 (architecture differences: see model.c's header comment).
 *
 * One batch of T tokens goes through every layer together. Every matrix
 * product is y[t][r] = dot(W row r, x[t]): the activations x[t] are
 * prepared once per (input, activation format) with vq_act_prepare, then
 * rows are claimed from the thread pool in chunks (MM_CHUNK_BYTES; vq_pool_for:
 * a descheduled thread holds up at most its one chunk); per
 * row the tokens go through vq_dot_multi (4 activation vectors per weight
 * decode) or, for one token, vq_dot. Matrices that read the same input
 * (Q/K/V, gate/up) share one pool job; interleaved gate/up of one format
 * take the gated product into theirs (gated_job). Per-row and per-token computations
 * never depend on the thread split, so logits are identical for any thread
 * count. Attention goes through the single seam vq_attn_layer (kv_iface.h). */
#include <math.h>
#include <string.h>

#include "model/forward.h"

#include "kernels/kernels.h"
#include "model/ops.h"
#include "model/quants.h"
#include "model/quants_impl.h"
#include "model/quants_x16.h"

/* One pool job multiplies up to MM_MAX matrices that read the same input
 * (Q, K, V; gate, up) when their activation formats agree: their rows are
 * numbered one after another and claimed in chunks, so the job is one
 * fork-join instead of three. */
#define MM_MAX 3
/* Weight bytes per chunk. A batch (prefill) is compute-bound: small chunks,
 * well inside L2, at least 4 per thread, balance the threads. One token
 * (decode) streams the weights from memory: long contiguous chunks, at least
 * 2 per thread, keep each thread's reads one sequential stream for the
 * hardware prefetcher (smollm2, 2 threads, AMD EPYC: decode at an empty
 * context 123-140 tok/s with 16 KB chunks, 185-189 with 128 KB; prefill of 64
 * tokens 649 against 529-543 tok/s the other way round). */
#define MM_CHUNK_BYTES 16384
#define MM_CHUNK_PER_THREAD 4
#define MM_DECODE_CHUNK_BYTES 131072
#define MM_DECODE_CHUNK_PER_THREAD 2
/* The gated product of up to this many elements (decode: one token's
 * n_ff) runs on the calling thread: its SIMD kernel takes about a
 * microsecond for 1536 elements, less than handing a job to the pool. */
#define GLU_SERIAL_ELEMS 8192

typedef struct {
    int n_mats;
    const vq_wmat *w[MM_MAX];
    float *y[MM_MAX];      /* [n][y_stride[i]] */
    size_t y_stride[MM_MAX];
    size_t row0[MM_MAX + 1]; /* first global item of each matrix; row0[n_mats] = total */
    size_t unit;           /* rows per item: 16 for interleaved matrices (whole row groups), else 1 */
    const uint8_t *act;
    size_t act_stride;
    int n;                 /* tokens */
} matmul_job;

/* Items [b, e) of the concatenated matrices (an item: `unit` rows). The
 * rows of one matrix in the chunk go through vq_dot_rows (decode) or
 * vq_dot_tile (a batch), or for interleaved matrices vq_x16_tile, whose results per (row, token) do not depend on how many
 * rows are passed, so a row's result depends only on the batch, never on
 * how rows were split over threads. */
static void matmul_chunk(void *arg, size_t b, size_t e, int tid)
{
    (void)tid;
    const matmul_job *j = arg;
    int mi = 0;
    while (j->row0[mi + 1] <= b)
        mi++;
    for (size_t g = b; g < e; g++) {
        while (j->row0[mi + 1] <= g)
            mi++;
        const vq_wmat *w = j->w[mi];
        size_t r = (g - j->row0[mi]) * j->unit;
        const uint8_t *row = w->data + r * w->row_bytes;
        float *y = j->y[mi] + r;
        size_t ys = j->y_stride[mi];
        /* the rest of this matrix's rows in the chunk at once (four rows
         * share each activation load, four tokens each weight decode) */
        size_t end = j->row0[mi + 1] < e ? j->row0[mi + 1] : e, nr = (end - g) * j->unit;
        if (w->x16) /* one token or a batch: vq_x16_tile serves both */
            vq_x16_tile((vq_wtype)w->type, row, w->row_bytes, nr, j->act, j->act_stride, (size_t)j->n,
                        (size_t)w->cols, y, ys);
        else if (j->n == 1)
            vq_dot_rows((vq_wtype)w->type, row, w->row_bytes, nr, j->act, (size_t)w->cols, y);
        else
            vq_dot_tile((vq_wtype)w->type, row, w->row_bytes, nr, j->act, j->act_stride, (size_t)j->n,
                        (size_t)w->cols, y, ys);
        g = end - 1;
    }
}

typedef struct {
    const vq_wmat *w;
    const float *x;
    uint8_t *act;
    size_t act_stride;
} act_job;

/* Prepared activations of tokens [b, e) (each token on its own). */
static void act_tokens(void *arg, size_t b, size_t e, int tid)
{
    (void)tid;
    const act_job *a = arg;
    size_t cols = (size_t)a->w->cols;
    for (size_t t = b; t < e; t++)
        vq_act_prepare((vq_wtype)a->w->type, a->x + t * cols, cols, a->act + t * a->act_stride);
}

typedef struct {
    float *gate;
    const float *up;
    int gelu;
} glu_job;

/* gate[i] = act(gate[i]) * up[i] for elements [b, e) of the batch's
 * n * width (each element on its own: any split gives the same floats;
 * the kernel table's silu_mul / gelu_mul, kernels/glu.h). */
static void glu_elems(void *arg, size_t b, size_t e, int tid)
{
    (void)tid;
    const glu_job *g = arg;
    const vq_kernels *k = vq_kernels_get();
    (g->gelu ? k->gelu_mul : k->silu_mul)(g->gate + b, g->up + b, e - b);
}

static int act_kind(const vq_wmat *w) { return (int)vq_act_kind_of((vq_wtype)w->type); }

/* c->act: x's n tokens prepared for w0's format, unless it holds them
 * already (the caller clears c->act_src whenever it rewrites an input
 * buffer) */
static void prepare_act(vq_ctx *c, const vq_wmat *w0, const float *x, int n)
{
    if (c->act_src != x || (int)c->act_type != act_kind(w0) || c->act_n != n) {
        act_job aj = { w0, x, c->act, c->act_stride };
        if (n >= 8)
            vq_pool_for(c->pool, (size_t)n, 4, act_tokens, &aj);
        else
            act_tokens(&aj, 0, (size_t)n, 0);
        c->act_src = x;
        c->act_type = (uint32_t)act_kind(w0);
        c->act_n = n;
    }
}

/* items per chunk for a job of `total` items over `bytes` of weights:
 * about MM_CHUNK_BYTES (decode: MM_DECODE_CHUNK_BYTES) of weights, and at
 * least MM_CHUNK_PER_THREAD (MM_DECODE_CHUNK_PER_THREAD) chunks per thread
 * so a late thread costs little; never below 1 item */
static size_t mm_grain(const vq_ctx *c, size_t total, size_t bytes, int n)
{
    size_t avg_item = bytes / total ? bytes / total : 1;
    size_t grain = (n == 1 ? MM_DECODE_CHUNK_BYTES : MM_CHUNK_BYTES) / avg_item;
    size_t nt = (size_t)vq_pool_size(c->pool), per = n == 1 ? MM_DECODE_CHUNK_PER_THREAD : MM_CHUNK_PER_THREAD;
    size_t cap = (total + per * nt - 1) / (per * nt);
    if (grain > cap)
        grain = cap;
    return grain < 1 ? 1 : grain;
}

/* y_i[t][r] = dot(W_i row r, x[t]) for t < n (n <= VQ_FWD_BATCH) and the
 * n_mats matrices in w (same cols, same activation format); activations
 * through prepare_act. */
static void matmul_multi(vq_ctx *c, int n_mats, const vq_wmat *const *w, const float *x, int n,
                         float *const *y, const size_t *y_stride)
{
    const vq_wmat *w0 = w[0];
    prepare_act(c, w0, x, n);
    matmul_job j;
    j.n_mats = n_mats;
    j.act = c->act;
    j.act_stride = c->act_stride;
    j.n = n;
    j.unit = w0->x16 ? VQ_X16_ROWS : 1; /* (matmul_group keeps x16 matrices together) */
    size_t total = 0, bytes = 0;
    for (int i = 0; i < n_mats; i++) {
        j.w[i] = w[i];
        j.y[i] = y[i];
        j.y_stride[i] = y_stride[i];
        j.row0[i] = total;
        total += (size_t)w[i]->rows / j.unit;
        bytes += (size_t)w[i]->rows * w[i]->row_bytes;
    }
    j.row0[n_mats] = total;
    vq_pool_for(c->pool, total, mm_grain(c, total, bytes, n), matmul_chunk, &j);
}

static void matmul(vq_ctx *c, const vq_wmat *w, const float *x, int n, float *y, size_t y_stride)
{
    matmul_multi(c, 1, &w, x, n, &y, &y_stride);
}

/* Products of several matrices over one input: consecutive matrices with
 * the same activation format share one pool job. */
static void matmul_group(vq_ctx *c, int n_mats, const vq_wmat *const *w, const float *x, int n,
                         float *const *y, const size_t *y_stride)
{
    int i = 0;
    while (i < n_mats) {
        int k = i + 1;
        while (k < n_mats && act_kind(w[k]) == act_kind(w[i]) && w[k]->cols == w[i]->cols && w[k]->x16 == w[i]->x16)
            k++;
        matmul_multi(c, k - i, w + i, x, n, y + i, y_stride + i);
        i = k;
    }
}

/* gate and up of the feed-forward block for row groups of 16 together,
 * then gate = act(gate) * up on those rows, in one job (interleaved
 * matrices of one format: a row's products do not depend on the rows
 * around it, glu_elems' elements on nothing else; so the same floats as
 * the two products and the gated product apart) */
typedef struct {
    const vq_wmat *g, *u;
    float *gate, *up; /* [n][F] */
    size_t F;
    const uint8_t *act;
    size_t act_stride;
    int n, gelu;
} gated_job;

static void gated_chunk(void *arg, size_t b, size_t e, int tid)
{
    (void)tid;
    const gated_job *j = arg;
    const size_t r0 = b * VQ_X16_ROWS, nr = (e - b) * VQ_X16_ROWS, cols = (size_t)j->g->cols;
    vq_x16_tile((vq_wtype)j->g->type, j->g->data + r0 * j->g->row_bytes, j->g->row_bytes, nr, j->act,
                j->act_stride, (size_t)j->n, cols, j->gate + r0, j->F);
    vq_x16_tile((vq_wtype)j->u->type, j->u->data + r0 * j->u->row_bytes, j->u->row_bytes, nr, j->act,
                j->act_stride, (size_t)j->n, cols, j->up + r0, j->F);
    const vq_kernels *k = vq_kernels_get();
    for (int t = 0; t < j->n; t++)
        (j->gelu ? k->gelu_mul : k->silu_mul)(j->gate + (size_t)t * j->F + r0, j->up + (size_t)t * j->F + r0, nr);
}

/* Whether gated_job serves the layer: both matrices interleaved, of one
 * format, whole row groups */
static int gated_fusable(const vq_layer *L, size_t F)
{
    const vq_wmat *g = &L->w_gate, *u = &L->w_up;
    return g->x16 && u->x16 && g->type == u->type && g->cols == u->cols && g->row_bytes == u->row_bytes &&
           (size_t)g->rows == F && (size_t)u->rows == F && F % VQ_X16_ROWS == 0;
}

static void add_bias(float *y, const float *b, int n, size_t width)
{
    if (!b)
        return;
    for (int t = 0; t < n; t++)
        for (size_t i = 0; i < width; i++)
            y[(size_t)t * width + i] += b[i];
}

/* QK-norm (if norm_w) and RoPE of token t's heads of x (q or k), in place,
 * with that token's angles cs */
static void qk_heads(const vq_model *m, const vq_layer *L, float *x, int t, int heads, const float *norm_w,
                     const float *cs)
{
    size_t hd = (size_t)L->head_dim;
    for (int h = 0; h < heads; h++) {
        float *v = x + ((size_t)t * (size_t)heads + (size_t)h) * hd;
        if (norm_w)
            vq_rmsnorm(v, v, norm_w, hd, m->rms_eps);
        vq_rope_apply(v, hd, cs, m->rope_neox);
    }
}

/* c->rope_cs for position pos and the layer's frequencies: kept from the
 * last call when it was for the same position and frequencies (decode: one
 * computation per step for all layers that share them) */
static const float *rope_angles(vq_ctx *c, const vq_layer *L, int pos)
{
    const size_t half = (size_t)L->head_dim / 2;
    if (c->rope_half != half || c->rope_pos != pos || memcmp(c->rope_freq, L->inv_freq, half * sizeof(float))) {
        vq_rope_angles(c->rope_cs, 2 * half, pos, L->inv_freq);
        memcpy(c->rope_freq, L->inv_freq, half * sizeof(float));
        c->rope_half = half;
        c->rope_pos = pos;
    }
    return c->rope_cs;
}

/* QK-norm and RoPE of the layer's queries and keys for n tokens, in place */
static void qk_prepare(vq_ctx *c, const vq_layer *L, int n, int pos0)
{
    for (int t = 0; t < n; t++) {
        const float *cs = rope_angles(c, L, pos0 + t);
        qk_heads(c->m, L, c->q, t, L->n_q_heads, L->q_norm, cs);
        qk_heads(c->m, L, c->k, t, L->n_kv_heads, L->k_norm, cs);
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
    {
        const vq_wmat *ws[3] = { &L->wq, &L->wk, &L->wv };
        float *ys[3] = { c->q, c->k, c->v };
        size_t ss[3] = { QD, KD, KD };
        matmul_group(c, 3, ws, c->xn, n, ys, ss);
    }
    add_bias(c->q, L->bq, n, QD);
    add_bias(c->k, L->bk, n, KD);
    add_bias(c->v, L->bv, n, KD);
    qk_prepare(c, L, n, pos0);
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
    if (gated_fusable(L, F)) {
        prepare_act(c, &L->w_gate, c->xn, n);
        gated_job gj = { &L->w_gate, &L->w_up, c->gate, c->up, F, c->act, c->act_stride, n, m->gelu_ffn };
        const size_t items = F / VQ_X16_ROWS, bytes = 2 * F * L->w_gate.row_bytes;
        vq_pool_for(c->pool, items, mm_grain(c, items, bytes, n), gated_chunk, &gj);
    } else {
        const vq_wmat *ws[2] = { &L->w_gate, &L->w_up };
        float *ys[2] = { c->gate, c->up };
        size_t ss[2] = { F, F };
        matmul_group(c, 2, ws, c->xn, n, ys, ss);
        /* up to a few tokens the SIMD product is quicker than a job's
         * hand-off; else 512 elements per chunk on every thread */
        glu_job gj = { c->gate, c->up, m->gelu_ffn };
        if ((size_t)n * F <= GLU_SERIAL_ELEMS)
            glu_elems(&gj, 0, (size_t)n * F, 0);
        else
            vq_pool_for(c->pool, (size_t)n * F, 512, glu_elems, &gj);
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
        const vq_wmat *te = &m->tok_embd;
        if (te->x16) { /* a tied head interleaved (quants_x16.h): the same floats */
            if (!vq_x16_dequantize_row((vq_wtype)te->type, te->data, te->row_bytes, (size_t)tokens[t], E, x))
                return vq_fail(c->err, VQ_ERR_STATE, "forward: the embedding table's layout does not match its shape");
        } else
            vq_dequantize((vq_wtype)te->type, te->data + (size_t)tokens[t] * te->row_bytes, x, E);
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
