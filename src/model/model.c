/* model.c -- loading a GGUF model: architecture, hyperparameters, weights.
 *
 * Every hyperparameter comes from the GGUF metadata (<arch>.block_count,
 * .embedding_length, .feed_forward_length, .attention.head_count,
 * .attention.head_count_kv, .attention.key_length/.value_length,
 * .attention.layer_norm_rms_epsilon, .rope.freq_base, .rope.scaling.*,
 * .context_length, gemma3: .attention.sliding_window,
 * .attention.sliding_window_pattern when present). Every tensor the forward
 * pass uses is looked up by name and its shape and type checked here, so
 * the forward pass can trust them.
 *
 * Architecture facts (as llama.cpp runs these GGUF conversions):
 *   llama  : RMSNorm pre-norms, SwiGLU, RoPE with adjacent pairs (the
 *            converter permutes Q/K rows for it), optional rope_freqs
 *            (Llama 3 frequency factors), tied output if output.weight absent,
 *            optional Q/K/V biases (attn_q/k/v.bias, each read when present).
 *   qwen2  : as llama plus Q/K/V biases, RoPE NEOX pairing (i, i + d/2).
 *   qwen3  : as llama plus per-head RMSNorm of Q and K (before RoPE), NEOX.
 *   gemma3 : embeddings scaled by sqrt(n_embd); per-head Q/K RMSNorm; RMSNorm
 *            before and after attention and FFN (the converter already adds
 *            Gemma's "+1" to norm weights, so they are used as x * w);
 *            GeGLU with tanh GELU; NEOX RoPE; sliding-window attention on
 *            layers with (il % pattern) < pattern - 1 (pattern 6 by default),
 *            whose RoPE base is 10000 (full layers use rope.freq_base and
 *            the declared rope scaling); score scale 1/sqrt(key_length). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/huge.h"
#include "model/model_internal.h"
#include "model/quants.h"
#include "model/quants_x16.h"

#define MAX_HEAD_DIM 1024

static void key_of(const vq_model *m, const char *suffix, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s.%s", m->arch_name, suffix);
}

static int get_u32_opt(const vq_model *m, const char *suffix, uint32_t *out)
{
    char k[160];
    key_of(m, suffix, k, sizeof k);
    return vq_gguf_get_u32(m->g, k, out);
}

static vq_status get_int_req(vq_model *m, const char *suffix, int lo, int hi, int *out)
{
    char k[160];
    uint32_t v;
    key_of(m, suffix, k, sizeof k);
    if (!vq_gguf_get_u32(m->g, k, &v)) {
        if (vq_gguf_has(m->g, k))
            return vq_fail(m->err, VQ_ERR_UNSUPPORTED,
                           "model: key %s is not a single integer (per-layer arrays are not supported)", k);
        return vq_fail(m->err, VQ_ERR_FORMAT, "model: missing key %s", k);
    }
    if ((int64_t)v < lo || (int64_t)v > hi)
        return vq_fail(m->err, VQ_ERR_FORMAT, "model: %s = %u out of range [%d, %d]", k, v, lo, hi);
    *out = (int)v;
    return VQ_OK;
}

static float get_f32_opt(const vq_model *m, const char *suffix, float dflt)
{
    char k[160];
    float v;
    key_of(m, suffix, k, sizeof k);
    return vq_gguf_get_f32(m->g, k, &v) ? v : dflt;
}

/* A weight matrix [rows x cols]; required or not. */
static vq_status get_mat(vq_model *m, const char *name, int64_t rows, int64_t cols, int required,
                         vq_wmat *out)
{
    memset(out, 0, sizeof *out);
    const vq_gguf_tensor *t = vq_gguf_find_tensor(m->g, name);
    if (!t) {
        if (required)
            return vq_fail(m->err, VQ_ERR_FORMAT, "model: missing tensor %s", name);
        return VQ_OK;
    }
    if (t->n_dims != 2 || (int64_t)t->ne[0] != cols || (int64_t)t->ne[1] != rows)
        return vq_fail(m->err, VQ_ERR_FORMAT,
                       "model: tensor %s has shape [%llu, %llu] (%u dims), expected [%lld, %lld]",
                       name, (unsigned long long)t->ne[0],
                       (unsigned long long)(t->n_dims > 1 ? t->ne[1] : 1), t->n_dims,
                       (long long)cols, (long long)rows);
    if (!vq_wtype_supported(t->type))
        return vq_fail(m->err, VQ_ERR_UNSUPPORTED, "model: tensor %s has unsupported type %s (%u)",
                       name, vq_wtype_name(t->type), t->type);
    size_t be = vq_wtype_block_elems(t->type);
    if (be == 0 || (uint64_t)cols % be != 0)
        return vq_fail(m->err, VQ_ERR_FORMAT,
                       "model: tensor %s: row of %lld is not a multiple of the %s block (%zu)",
                       name, (long long)cols, vq_wtype_name(t->type), be);
    size_t rb = vq_wtype_row_bytes(t->type, (uint64_t)cols);
    if (rb == 0 || (uint64_t)rows > t->nbytes / rb)
        return vq_fail(m->err, VQ_ERR_FORMAT, "model: tensor %s: %llu bytes hold fewer than %lld rows",
                       name, (unsigned long long)t->nbytes, (long long)rows);
    out->data = out->file_data = t->data;
    out->type = t->type;
    out->rows = rows;
    out->cols = cols;
    out->row_bytes = rb;
    if ((size_t)cols > m->max_act_cols)
        m->max_act_cols = (size_t)cols;
    return VQ_OK;
}

/* A vector of n floats, converted to an owned array. */
static vq_status get_vec(vq_model *m, const char *name, int64_t n, int required, float **out)
{
    *out = NULL;
    const vq_gguf_tensor *t = vq_gguf_find_tensor(m->g, name);
    if (!t) {
        if (required)
            return vq_fail(m->err, VQ_ERR_FORMAT, "model: missing tensor %s", name);
        return VQ_OK;
    }
    if (t->n_dims != 1 || (int64_t)t->ne[0] != n)
        return vq_fail(m->err, VQ_ERR_FORMAT, "model: tensor %s has %llu elements (%u dims), expected %lld",
                       name, (unsigned long long)t->ne[0], t->n_dims, (long long)n);
    if (!vq_wtype_supported(t->type))
        return vq_fail(m->err, VQ_ERR_UNSUPPORTED, "model: tensor %s has unsupported type %s (%u)",
                       name, vq_wtype_name(t->type), t->type);
    size_t be = vq_wtype_block_elems(t->type);
    if (be == 0 || (uint64_t)n % be != 0 || vq_wtype_row_bytes(t->type, (uint64_t)n) > t->nbytes)
        return vq_fail(m->err, VQ_ERR_FORMAT, "model: tensor %s: bad size for type %s", name,
                       vq_wtype_name(t->type));
    float *v = malloc((size_t)n * sizeof(float));
    if (!v)
        return vq_fail(m->err, VQ_ERR_NOMEM, "model: out of memory");
    vq_dequantize((vq_wtype)t->type, t->data, v, (size_t)n);
    *out = v;
    return VQ_OK;
}

static vq_status parse_arch(vq_model *m)
{
    vq_gguf_str a;
    if (!vq_gguf_get_str(m->g, "general.architecture", &a))
        return vq_fail(m->err, VQ_ERR_FORMAT, "model: missing key general.architecture");
    static const struct { const char *name; vq_arch arch; } known[] = {
        { "llama", VQ_ARCH_LLAMA }, { "qwen2", VQ_ARCH_QWEN2 },
        { "qwen3", VQ_ARCH_QWEN3 }, { "gemma3", VQ_ARCH_GEMMA3 },
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (a.len == strlen(known[i].name) && memcmp(a.ptr, known[i].name, a.len) == 0) {
            m->arch = known[i].arch;
            snprintf(m->arch_name, sizeof m->arch_name, "%s", known[i].name);
            return VQ_OK;
        }
    return vq_fail(m->err, VQ_ERR_UNSUPPORTED,
                   "model: architecture '%.*s' is not supported (llama, qwen2, qwen3, gemma3)",
                   (int)(a.len > 64 ? 64 : a.len), a.ptr);
}

/* RoPE scaling: none or linear; anything else is refused. */
static vq_status rope_scale(vq_model *m, float *scale)
{
    char k[160];
    vq_gguf_str s;
    *scale = 1.0f;
    key_of(m, "rope.scaling.type", k, sizeof k);
    if (vq_gguf_get_str(m->g, k, &s)) {
        if (s.len == 4 && memcmp(s.ptr, "none", 4) == 0)
            return VQ_OK;
        if (!(s.len == 6 && memcmp(s.ptr, "linear", 6) == 0))
            return vq_fail(m->err, VQ_ERR_UNSUPPORTED,
                           "model: rope scaling '%.*s' is not supported (none, linear)",
                           (int)(s.len > 32 ? 32 : s.len), s.ptr);
        float f = get_f32_opt(m, "rope.scaling.factor", 1.0f);
        if (!(f >= 1.0f && f <= 1024.0f))
            return vq_fail(m->err, VQ_ERR_FORMAT, "model: rope.scaling.factor %g out of range", f);
        *scale = 1.0f / f;
        return VQ_OK;
    }
    float lin = get_f32_opt(m, "rope.scale_linear", 1.0f);
    if (!(lin >= 1.0f && lin <= 1024.0f))
        return vq_fail(m->err, VQ_ERR_FORMAT, "model: rope.scale_linear %g out of range", lin);
    *scale = 1.0f / lin;
    return VQ_OK;
}

static vq_status load_hparams(vq_model *m)
{
    VQ_TRY(get_int_req(m, "block_count", 1, VQ_MAX_LAYERS, &m->n_layers));
    VQ_TRY(get_int_req(m, "embedding_length", 1, 65536, &m->n_embd));
    VQ_TRY(get_int_req(m, "feed_forward_length", 1, 1 << 20, &m->n_ff));
    VQ_TRY(get_int_req(m, "attention.head_count", 1, 1024, &m->n_q_heads));
    uint32_t v;
    m->n_kv_heads = m->n_q_heads;
    if (get_u32_opt(m, "attention.head_count_kv", &v)) {
        if (v < 1 || v > (uint32_t)m->n_q_heads || m->n_q_heads % (int)v != 0)
            return vq_fail(m->err, VQ_ERR_FORMAT,
                           "model: head_count_kv %u does not divide head_count %d", v, m->n_q_heads);
        m->n_kv_heads = (int)v;
    }
    m->head_dim = m->n_embd / m->n_q_heads;
    if (get_u32_opt(m, "attention.key_length", &v))
        m->head_dim = (int)v;
    if (m->head_dim < 2 || m->head_dim > MAX_HEAD_DIM || m->head_dim % 2 != 0)
        return vq_fail(m->err, VQ_ERR_FORMAT, "model: head dim %d out of range [2, %d] or odd",
                       m->head_dim, MAX_HEAD_DIM);
    if (get_u32_opt(m, "attention.value_length", &v) && (int)v != m->head_dim)
        return vq_fail(m->err, VQ_ERR_UNSUPPORTED,
                       "model: value_length %u != key_length %d is not supported", v, m->head_dim);
    if (get_u32_opt(m, "rope.dimension_count", &v) && (int)v != m->head_dim)
        return vq_fail(m->err, VQ_ERR_UNSUPPORTED,
                       "model: partial RoPE (dimension_count %u of head dim %d) is not supported",
                       v, m->head_dim);
    m->n_ctx_train = 2048;
    if (get_u32_opt(m, "context_length", &v) && v > 0)
        m->n_ctx_train = v > (1u << 24) ? (1 << 24) : (int)v;
    m->rms_eps = get_f32_opt(m, "attention.layer_norm_rms_epsilon", 1e-5f);
    if (!(m->rms_eps > 0 && m->rms_eps < 1))
        return vq_fail(m->err, VQ_ERR_FORMAT, "model: rms epsilon %g out of range", m->rms_eps);
    m->rope_base = get_f32_opt(m, "rope.freq_base", 10000.0f);
    if (!(m->rope_base > 1.0f && m->rope_base < 1e12f))
        return vq_fail(m->err, VQ_ERR_FORMAT, "model: rope.freq_base %g out of range", m->rope_base);
    m->rope_base_local = m->rope_base;
    m->attn_softcap = get_f32_opt(m, "attn_logit_softcapping", 0.0f);
    m->final_softcap = get_f32_opt(m, "final_logit_softcapping", 0.0f);
    if (!(m->attn_softcap >= 0 && m->final_softcap >= 0))
        return vq_fail(m->err, VQ_ERR_FORMAT, "model: negative logit softcapping");
    m->attn_scale = 1.0f / sqrtf((float)m->head_dim);
    m->embd_scale = 1.0f;
    m->rope_neox = m->arch != VQ_ARCH_LLAMA;
    m->gelu_ffn = m->arch == VQ_ARCH_GEMMA3;
    if (m->arch == VQ_ARCH_GEMMA3) {
        m->embd_scale = sqrtf((float)m->n_embd);
        m->rope_base_local = 10000.0f;
        if (get_u32_opt(m, "attention.sliding_window", &v) && v > 0)
            m->sliding_window = v > (1u << 24) ? (1 << 24) : (int)v;
    }
    return VQ_OK;
}

/* Decode streams every layer matrix and the output head once per token:
 * they are copied into one buffer on huge pages (core/huge.h; a stream on
 * 4 KB pages pays a TLB miss per 4 KB), interleaved by 16 rows where those
 * kernels serve the type on this CPU (quants_x16.h), the rest as in the
 * file; the file's pages of them may then leave memory
 * (vq_gguf_drop_pages). The token embedding, read a row per token, stays
 * in the file unless it is the output head too (then its rows are read
 * back from the head's layout: vq_x16_dequantize_row). */
static int interleavable(const vq_wmat *w) { return vq_x16_available((vq_wtype)w->type) && w->rows % VQ_X16_ROWS == 0; }

static size_t wmat_bytes(const vq_wmat *w) { return (size_t)w->rows * w->row_bytes; }

static size_t arena_slice(const vq_wmat *w) { return (wmat_bytes(w) + 63) & ~(size_t)63; }

enum { LAYER_MATS = 7 }; /* wq, wk, wv, wo, w_gate, w_up, w_down */

/* the matrices placed: k < LAYER_MATS * n_layers the layers' (k / LAYER_MATS,
 * k % LAYER_MATS), then the output head */
static vq_wmat *placed_mat(vq_model *m, int k)
{
    if (k == LAYER_MATS * m->n_layers)
        return &m->output;
    vq_layer *L = &m->layers[k / LAYER_MATS];
    vq_wmat *const mats[LAYER_MATS] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down };
    return mats[k % LAYER_MATS];
}

static vq_status place_weights(vq_model *m)
{
    const int n = LAYER_MATS * m->n_layers + 1;
    size_t total = 0;
    for (int k = 0; k < n; k++)
        total += arena_slice(placed_mat(m, k));
    m->w_arena = vq_huge_alloc(total);
    if (!m->w_arena)
        return vq_fail(m->err, VQ_ERR_NOMEM, "model: out of memory for %zu bytes of weights", total);
    const int tied = m->output.data == m->tok_embd.data;
    size_t off = 0;
    for (int k = 0; k < n; k++) {
        vq_wmat *w = placed_mat(m, k);
        uint8_t *buf = m->w_arena + off;
        off += arena_slice(w);
        /* a slice of rows at a time (whole 16-row groups: the interleaved
         * layout keeps each group's bytes together), its file pages
         * dropped before the next, so that the file's copy of a large
         * matrix is never resident beside the arena (gemma3-270m's output
         * head, 178 MB, had raised the load's peak RSS from 260 MiB to
         * 415.5: test_model_gemma3); then the whole range again for the
         * pages that straddle two slices */
        const size_t slice = (size_t)VQ_X16_ROWS * 64, rb = w->row_bytes;
        w->x16 = interleavable(w);
        for (size_t r0 = 0; r0 < (size_t)w->rows; r0 += slice) {
            const size_t nr = (size_t)w->rows - r0 < slice ? (size_t)w->rows - r0 : slice;
            if (w->x16 && !vq_x16_repack((vq_wtype)w->type, w->data + r0 * rb, nr, rb, buf + r0 * rb))
                w->x16 = 0; /* (the first slice: refusals depend on the type and row size only) */
            if (!w->x16)
                memcpy(buf + r0 * rb, w->data + r0 * rb, nr * rb);
            vq_gguf_drop_pages(m->g, w->file_data + r0 * rb, nr * rb);
        }
        vq_gguf_drop_pages(m->g, w->file_data, wmat_bytes(w));
        w->data = buf;
    }
    if (tied) { /* the embedding lookup reads the head's rows (forward.c vq_forward_batch) */
        m->tok_embd.data = m->output.data;
        m->tok_embd.x16 = m->output.x16;
    }
    return VQ_OK;
}

static vq_status load_layers(vq_model *m)
{
    float scale;
    VQ_TRY(rope_scale(m, &scale));
    int pattern = 6;
    uint32_t v;
    if (m->arch == VQ_ARCH_GEMMA3 && get_u32_opt(m, "attention.sliding_window_pattern", &v)) {
        if (v < 1 || v > 1024)
            return vq_fail(m->err, VQ_ERR_FORMAT, "model: sliding_window_pattern %u out of range", v);
        pattern = (int)v;
    }
    int hd = m->head_dim;
    float *freq_factors = NULL;
    VQ_TRY(get_vec(m, "rope_freqs.weight", hd / 2, 0, &freq_factors));
    m->layers = calloc((size_t)m->n_layers, sizeof *m->layers);
    if (!m->layers) {
        free(freq_factors);
        return vq_fail(m->err, VQ_ERR_NOMEM, "model: out of memory");
    }
    vq_status st = VQ_OK;
    int64_t E = m->n_embd, F = m->n_ff;
    for (int il = 0; il < m->n_layers && st == VQ_OK; il++) {
        vq_layer *L = &m->layers[il];
        char nm[96];
        L->n_q_heads = m->n_q_heads;
        L->n_kv_heads = m->n_kv_heads;
        L->head_dim = hd;
        int64_t QD = (int64_t)L->n_q_heads * hd, KD = (int64_t)L->n_kv_heads * hd;
#define MAT(field, tname, rows, cols)                                        \
    if (st == VQ_OK) {                                                       \
        snprintf(nm, sizeof nm, "blk.%d." tname ".weight", il);              \
        st = get_mat(m, nm, rows, cols, 1, &L->field);                       \
    }
#define VEC(field, tname, kind, n, req)                                      \
    if (st == VQ_OK) {                                                       \
        snprintf(nm, sizeof nm, "blk.%d." tname "." kind, il);               \
        st = get_vec(m, nm, n, req, &L->field);                              \
    }
        MAT(wq, "attn_q", QD, E);
        MAT(wk, "attn_k", KD, E);
        MAT(wv, "attn_v", KD, E);
        MAT(wo, "attn_output", E, QD);
        MAT(w_gate, "ffn_gate", F, E);
        MAT(w_up, "ffn_up", F, E);
        MAT(w_down, "ffn_down", E, F);
        VEC(attn_norm, "attn_norm", "weight", E, 1);
        VEC(ffn_norm, "ffn_norm", "weight", E, 1);
        if (m->arch == VQ_ARCH_QWEN2 || m->arch == VQ_ARCH_LLAMA) {
            const int breq = m->arch == VQ_ARCH_QWEN2; /* llama: optional, as llama.cpp */
            VEC(bq, "attn_q", "bias", QD, breq);
            VEC(bk, "attn_k", "bias", KD, breq);
            VEC(bv, "attn_v", "bias", KD, breq);
        }
        if (m->arch == VQ_ARCH_QWEN3 || m->arch == VQ_ARCH_GEMMA3) {
            VEC(q_norm, "attn_q_norm", "weight", hd, 1);
            VEC(k_norm, "attn_k_norm", "weight", hd, 1);
        }
        if (m->arch == VQ_ARCH_GEMMA3) {
            VEC(post_attn_norm, "post_attention_norm", "weight", E, 1);
            VEC(post_ffn_norm, "post_ffw_norm", "weight", E, 1);
        }
#undef MAT
#undef VEC
        float lscale = scale;
        L->rope_base = m->rope_base;
        if (m->arch == VQ_ARCH_GEMMA3 && m->sliding_window > 0 && il % pattern < pattern - 1) {
            L->window = m->sliding_window;
            L->rope_base = m->rope_base_local;
            lscale = 1.0f;
            m->n_swa_layers++;
        }
        L->inv_freq = malloc((size_t)(hd / 2) * sizeof(float));
        if (!L->inv_freq) {
            st = vq_fail(m->err, VQ_ERR_NOMEM, "model: out of memory");
            break;
        }
        for (int i = 0; i < hd / 2; i++) {
            double f = pow((double)L->rope_base, -2.0 * i / hd) * lscale;
            if (freq_factors && L->window == 0)
                f /= freq_factors[i];
            L->inv_freq[i] = (float)f;
        }
    }
    free(freq_factors);
    return st;
}

static vq_status load_model(vq_model *m)
{
    VQ_TRY(parse_arch(m));
    vq_gguf_str s;
    if (vq_gguf_get_str(m->g, "general.name", &s))
        snprintf(m->name, sizeof m->name, "%.*s", (int)(s.len > 127 ? 127 : s.len), s.ptr);
    VQ_TRY(load_hparams(m));
    const vq_gguf_tensor *te = vq_gguf_find_tensor(m->g, "token_embd.weight");
    if (!te)
        return vq_fail(m->err, VQ_ERR_FORMAT, "model: missing tensor token_embd.weight");
    if (te->n_dims != 2 || te->ne[1] < 1 || te->ne[1] > (1u << 24))
        return vq_fail(m->err, VQ_ERR_FORMAT, "model: token_embd.weight: bad shape");
    m->n_vocab = (int)te->ne[1];
    VQ_TRY(get_mat(m, "token_embd.weight", m->n_vocab, m->n_embd, 1, &m->tok_embd));
    VQ_TRY(get_mat(m, "output.weight", m->n_vocab, m->n_embd, 0, &m->output));
    if (!m->output.data)
        m->output = m->tok_embd; /* tied embeddings */
    VQ_TRY(get_vec(m, "output_norm.weight", m->n_embd, 1, &m->output_norm));
    VQ_TRY(load_layers(m));
    VQ_TRY(place_weights(m));
    for (uint64_t i = 0; i < vq_gguf_n_tensors(m->g); i++) {
        const vq_gguf_tensor *t = vq_gguf_tensor_at(m->g, i);
        uint64_t ne = 1;
        for (uint32_t d = 0; d < t->n_dims; d++)
            ne *= t->ne[d];
        m->n_params += (size_t)ne;
        m->weight_bytes += (size_t)t->nbytes;
    }
    if (vq_gguf_has(m->g, "tokenizer.ggml.model")) {
        char terr[VQ_ERRLEN] = "";
        vq_status st = vq_tokenizer_from_gguf(m->g, &m->tok, terr);
        if (st != VQ_OK)
            return vq_fail(m->err, st, "model: tokenizer: %s", terr);
        if (vq_tokenizer_n_vocab(m->tok) > m->n_vocab)
            return vq_fail(m->err, VQ_ERR_FORMAT, "model: tokenizer has %d tokens, embeddings %d",
                           vq_tokenizer_n_vocab(m->tok), m->n_vocab);
    }
    return VQ_OK;
}

static int looks_like_path(const char *s)
{
    size_t n = strlen(s);
    struct stat sb;
    return strchr(s, '/') || (n > 5 && strcmp(s + n - 5, ".gguf") == 0) || stat(s, &sb) == 0;
}

vq_status vq_model_load(const char *path_or_name, vq_model **out)
{
    if (!out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "model: out is NULL");
    *out = NULL;
    if (!path_or_name || !*path_or_name)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "model: no path or model name");
    char path[4096];
    if (looks_like_path(path_or_name)) {
        snprintf(path, sizeof path, "%s", path_or_name);
    } else {
        const char *dir = getenv("VQ_MODELS");
        if (strlen(path_or_name) > 200 || strchr(path_or_name, '.'))
            return vq_fail(NULL, VQ_ERR_INVALID_ARG, "model: bad model name '%.64s'", path_or_name);
        snprintf(path, sizeof path, "%s/%s.gguf", dir && *dir ? dir : "models", path_or_name);
        struct stat sb;
        if (stat(path, &sb) != 0)
            return vq_fail(NULL, VQ_ERR_IO,
                           "model: '%s' is not installed (no %s; run scripts/fetch-model.sh %s)",
                           path_or_name, path, path_or_name);
    }
    vq_model *m = calloc(1, sizeof *m);
    if (!m)
        return vq_fail(NULL, VQ_ERR_NOMEM, "model: out of memory");
    snprintf(m->arch_name, sizeof m->arch_name, "?");
    char gerr[VQ_ERRLEN] = "";
    vq_status st = vq_gguf_open(path, &m->g, gerr);
    if (st != VQ_OK) {
        vq_fail(NULL, st, "model: %s", gerr);
        vq_model_free(m);
        return st;
    }
    st = load_model(m);
    if (st != VQ_OK) {
        char msg[VQ_ERRLEN];
        memcpy(msg, m->err, sizeof msg);
        vq_model_free(m);
        return vq_fail(NULL, st, "%s (%s)", msg, path);
    }
    *out = m;
    return VQ_OK;
}

void vq_model_free(vq_model *m)
{
    if (!m)
        return;
    if (m->layers) {
        for (int il = 0; il < m->n_layers; il++) {
            vq_layer *L = &m->layers[il];
            free(L->attn_norm);
            free(L->ffn_norm);
            free(L->post_attn_norm);
            free(L->post_ffn_norm);
            free(L->q_norm);
            free(L->k_norm);
            free(L->bq);
            free(L->bk);
            free(L->bv);
            free(L->inv_freq);
        }
        free(m->layers);
    }
    free(m->w_arena);
    free(m->output_norm);
    vq_tokenizer_free(m->tok);
    vq_gguf_close(m->g);
    free(m);
}

const char *vq_model_error(const vq_model *m) { return m ? m->err : ""; }

vq_status vq_model_info_get(const vq_model *m, vq_model_info *o)
{
    if (!m || !o)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "model info: NULL argument");
    memset(o, 0, sizeof *o);
    o->arch = m->arch_name;
    o->name = m->name;
    o->n_layers = m->n_layers;
    o->n_embd = m->n_embd;
    o->n_q_heads = m->n_q_heads;
    o->n_kv_heads = m->n_kv_heads;
    o->head_dim = m->head_dim;
    o->n_ff = m->n_ff;
    o->n_vocab = m->n_vocab;
    o->n_ctx_train = m->n_ctx_train;
    o->rope_base = m->rope_base;
    o->rope_base_local = m->n_swa_layers ? m->rope_base_local : m->rope_base;
    o->rms_eps = m->rms_eps;
    o->sliding_window = m->n_swa_layers ? m->sliding_window : 0;
    o->n_swa_layers = m->n_swa_layers;
    o->weight_bytes = m->weight_bytes;
    o->n_params = m->n_params;
    return VQ_OK;
}

void vq_model_layer_shape(const vq_model *m, int layer, vq_layer_shape *out)
{
    const vq_layer *L = &m->layers[layer];
    out->n_q_heads = L->n_q_heads;
    out->n_kv_heads = L->n_kv_heads;
    out->head_dim = L->head_dim;
    out->window = L->window;
    out->softcap = m->attn_softcap;
}

vq_status vq_model_layer_info(const vq_model *m, int layer, vq_layer_shape *o)
{
    if (!m || !o)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "layer info: NULL argument");
    if (layer < 0 || layer >= m->n_layers)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "layer info: layer %d out of range [0, %d)",
                       layer, m->n_layers);
    vq_model_layer_shape(m, layer, o);
    return VQ_OK;
}

int vq_model_n_tensors(const vq_model *m) { return m ? (int)vq_gguf_n_tensors(m->g) : 0; }

vq_status vq_model_tensor(const vq_model *m, int i, const char **name, const char **type_name,
                          int64_t dims[4], int *n_dims, size_t *nbytes)
{
    if (!m || i < 0 || (uint64_t)i >= vq_gguf_n_tensors(m->g))
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "model tensor: index %d out of range", i);
    const vq_gguf_tensor *t = vq_gguf_tensor_at(m->g, (uint64_t)i);
    /* names are views into the mapping: give a NUL-terminated copy kept in
     * a small per-thread buffer */
    static _Thread_local char buf[256];
    snprintf(buf, sizeof buf, "%.*s", (int)(t->name.len > 255 ? 255 : t->name.len), t->name.ptr);
    if (name)
        *name = buf;
    if (type_name)
        *type_name = vq_wtype_name(t->type);
    if (dims)
        for (int d = 0; d < 4; d++)
            dims[d] = d < (int)t->n_dims ? (int64_t)t->ne[d] : 1;
    if (n_dims)
        *n_dims = (int)t->n_dims;
    if (nbytes)
        *nbytes = (size_t)t->nbytes;
    return VQ_OK;
}
