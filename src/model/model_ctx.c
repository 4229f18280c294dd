/* model_ctx.c -- inference contexts (create, reset, forward) and the
 * model's tokenizer wrappers (public API, veloxquant.h). */
#include <stdlib.h>
#include <string.h>

#include "model/forward.h"
#include "model/quants.h"

#define CTX_DEFAULT_CAP 8192

static size_t act_bytes_for(const vq_wmat *w, size_t cur)
{
    size_t b = vq_act_bytes((vq_wtype)w->type, (size_t)w->cols);
    b = (b + 63) & ~(size_t)63;
    return b > cur ? b : cur;
}

static size_t max_act_stride(const vq_model *m)
{
    size_t s = act_bytes_for(&m->output, 0);
    for (int il = 0; il < m->n_layers; il++) {
        const vq_layer *L = &m->layers[il];
        const vq_wmat *ws[] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down };
        for (size_t i = 0; i < sizeof ws / sizeof *ws; i++)
            s = act_bytes_for(ws[i], s);
    }
    return s;
}

void vq_ctx_free(vq_ctx *c)
{
    if (!c)
        return;
    vq_kv_free(c->kv);
    vq_pool_free(c->pool);
    free(c->x);
    free(c->xn);
    free(c->tmp);
    free(c->q);
    free(c->k);
    free(c->v);
    free(c->att);
    free(c->gate);
    free(c->up);
    free(c->act);
    free(c);
}

vq_status vq_ctx_create(const vq_model *m, int max_tokens, int n_threads, vq_ctx **out)
{
    return vq_ctx_create_with_kv(m, max_tokens, n_threads, NULL, NULL, out);
}

vq_status vq_ctx_create_with_kv(const vq_model *m, int max_tokens, int n_threads, vq_kv_factory make,
                                void *arg, vq_ctx **out)
{
    if (!m || !out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "ctx: NULL argument");
    *out = NULL;
    if (max_tokens < 0)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "ctx: max_tokens %d < 0", max_tokens);
    if (max_tokens == 0)
        max_tokens = m->n_ctx_train < CTX_DEFAULT_CAP ? m->n_ctx_train : CTX_DEFAULT_CAP;
    vq_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return vq_fail(NULL, VQ_ERR_NOMEM, "ctx: out of memory");
    c->m = m;
    c->max_tokens = max_tokens;
    c->batch = VQ_FWD_BATCH;
    vq_status st = vq_pool_create(n_threads, &c->pool);
    if (st != VQ_OK) {
        vq_ctx_free(c);
        return st;
    }
    vq_kv_shape *shape = calloc(1, sizeof *shape); /* VQ_MAX_LAYERS entries: not on the stack */
    if (!shape) {
        vq_ctx_free(c);
        return vq_fail(NULL, VQ_ERR_NOMEM, "ctx: out of memory");
    }
    shape->n_layers = m->n_layers;
    shape->max_tokens = max_tokens;
    shape->scale = m->attn_scale;
    size_t qd = 0, kd = 0;
    for (int il = 0; il < m->n_layers; il++) {
        const vq_layer *L = &m->layers[il];
        vq_model_layer_shape(m, il, &shape->layer[il]);
        size_t a = (size_t)L->n_q_heads * (size_t)L->head_dim;
        size_t b = (size_t)L->n_kv_heads * (size_t)L->head_dim;
        qd = a > qd ? a : qd;
        kd = b > kd ? b : kd;
    }
    st = make ? make(shape, c->pool, arg, &c->kv) : vq_kv_float_create(shape, c->pool, &c->kv);
    free(shape);
    if (st != VQ_OK) {
        vq_ctx_free(c);
        return st;
    }
    size_t B = (size_t)c->batch, E = (size_t)m->n_embd, F = (size_t)m->n_ff;
    c->act_stride = max_act_stride(m);
    c->x = malloc(B * E * sizeof(float));
    c->xn = malloc(B * E * sizeof(float));
    c->tmp = malloc(B * E * sizeof(float));
    c->q = malloc(B * qd * sizeof(float));
    c->k = malloc(B * kd * sizeof(float));
    c->v = malloc(B * kd * sizeof(float));
    c->att = malloc(B * qd * sizeof(float));
    c->gate = malloc(B * F * sizeof(float));
    c->up = malloc(B * F * sizeof(float));
    c->act = aligned_alloc(64, B * c->act_stride);
    if (!c->x || !c->xn || !c->tmp || !c->q || !c->k || !c->v || !c->att || !c->gate || !c->up ||
        !c->act) {
        vq_ctx_free(c);
        return vq_fail(NULL, VQ_ERR_NOMEM, "ctx: out of memory for scratch buffers");
    }
    *out = c;
    return VQ_OK;
}

const char *vq_ctx_error(const vq_ctx *c) { return c ? c->err : ""; }

void vq_ctx_reset(vq_ctx *c)
{
    if (!c)
        return;
    c->kv->ops->reset(c->kv);
    c->n_tokens = 0;
    c->broken = 0;
    c->act_src = NULL;
}

int vq_ctx_n_tokens(const vq_ctx *c) { return c ? c->n_tokens : 0; }
int vq_ctx_max_tokens(const vq_ctx *c) { return c ? c->max_tokens : 0; }
size_t vq_ctx_kv_bytes(const vq_ctx *c) { return c ? c->kv->ops->bytes(c->kv) : 0; }
vq_status vq_ctx_reserve(vq_ctx *c, int n_tokens)
{
    if (!c || n_tokens < 0)
        return vq_fail(c ? c->err : NULL, VQ_ERR_INVALID_ARG, "reserve: %s", c ? "n_tokens < 0" : "NULL context");
    int room = c->max_tokens - c->n_tokens;
    int n = n_tokens < room ? n_tokens : room;
    if (!c->kv->ops->reserve || n == 0)
        return VQ_OK;
    vq_status st = c->kv->ops->reserve(c->kv, n);
    return st == VQ_OK ? VQ_OK : vq_fail(c->err, st, "%s", c->kv->err);
}

size_t vq_ctx_kv_bytes_per_token(const vq_ctx *c)
{
    return c ? c->kv->ops->bytes_per_token(c->kv) : 0;
}

vq_status vq_ctx_forward(vq_ctx *c, const int32_t *tokens, int n, float *logits, int which)
{
    if (!c || !tokens)
        return vq_fail(c ? c->err : NULL, VQ_ERR_INVALID_ARG, "forward: NULL argument");
    if (n < 1)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "forward: n = %d < 1", n);
    if (which != VQ_LOGITS_LAST && which != VQ_LOGITS_ALL)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "forward: bad logits mode %d", which);
    if (c->broken)
        return vq_fail(c->err, VQ_ERR_STATE, "forward: context failed earlier; reset it");
    if (n > c->max_tokens - c->n_tokens)
        return vq_fail(c->err, VQ_ERR_STATE, "forward: %d tokens at position %d exceed max_tokens %d",
                       n, c->n_tokens, c->max_tokens);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->m->n_vocab)
            return vq_fail(c->err, VQ_ERR_INVALID_ARG, "forward: token %d (index %d) out of range [0, %d)",
                           tokens[i], i, c->m->n_vocab);
    size_t V = (size_t)c->m->n_vocab;
    for (int done = 0; done < n;) {
        int b = n - done < c->batch ? n - done : c->batch;
        int last = done + b == n;
        float *lg = NULL;
        if (logits && which == VQ_LOGITS_ALL)
            lg = logits + (size_t)done * V;
        else if (logits && last)
            lg = logits;
        VQ_TRY(vq_forward_batch(c, tokens + done, b, lg, which == VQ_LOGITS_ALL));
        done += b;
    }
    return VQ_OK;
}

/* ---- tokenizer wrappers -------------------------------------------------- */

static vq_status need_tok(const vq_model *m)
{
    if (!m)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "tokenizer: model is NULL");
    if (!m->tok)
        return vq_fail(NULL, VQ_ERR_UNSUPPORTED, "tokenizer: the model file has no tokenizer");
    return VQ_OK;
}

vq_status vq_model_tokenize(const vq_model *m, const char *text, size_t len, int add_bos,
                            int parse_special, int32_t **tokens, size_t *n)
{
    VQ_TRY(need_tok(m));
    if (!text || !tokens || !n)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "tokenize: NULL argument");
    char err[VQ_ERRLEN] = "";
    vq_status st = vq_tokenizer_encode(m->tok, text, len, add_bos, parse_special, tokens, n, err);
    if (st != VQ_OK)
        return vq_fail(NULL, st, "tokenize: %s", err);
    return VQ_OK;
}

size_t vq_model_token_piece(const vq_model *m, int32_t token, int render_special, char *buf,
                            size_t cap)
{
    if (!m || !m->tok || token < 0 || token >= vq_tokenizer_n_vocab(m->tok))
        return 0;
    return vq_tokenizer_piece(m->tok, token, render_special, buf, cap);
}

vq_status vq_model_detokenize(const vq_model *m, const int32_t *tokens, size_t n, char **text)
{
    VQ_TRY(need_tok(m));
    if ((!tokens && n) || !text)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "detokenize: NULL argument");
    size_t cap = 64 + n * 16, len = 0;
    char *s = malloc(cap);
    if (!s)
        return vq_fail(NULL, VQ_ERR_NOMEM, "detokenize: out of memory");
    for (size_t i = 0; i < n; i++) {
        for (;;) {
            size_t room = cap - len - 1;
            size_t k = vq_model_token_piece(m, tokens[i], 0, s + len, room);
            if (k <= room) {
                len += k;
                break;
            }
            char *t = realloc(s, cap * 2 + k);
            if (!t) {
                free(s);
                return vq_fail(NULL, VQ_ERR_NOMEM, "detokenize: out of memory");
            }
            s = t;
            cap = cap * 2 + k;
        }
    }
    s[len] = 0;
    *text = s;
    return VQ_OK;
}

int32_t vq_model_bos(const vq_model *m) { return m && m->tok ? vq_tokenizer_bos(m->tok) : -1; }
int32_t vq_model_eos(const vq_model *m) { return m && m->tok ? vq_tokenizer_eos(m->tok) : -1; }
int vq_model_is_eog(const vq_model *m, int32_t token)
{
    return m && m->tok ? vq_tokenizer_is_eog(m->tok, token) : 0;
}

vq_status vq_model_chat(const vq_model *m, const char *user, char **out)
{
    VQ_TRY(need_tok(m));
    if (!user || !out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "chat: NULL argument");
    char err[VQ_ERRLEN] = "";
    vq_status st = vq_tokenizer_chat(m->tok, m->arch_name, user, out, err);
    if (st != VQ_OK)
        return vq_fail(NULL, st, "chat: %s", err);
    return VQ_OK;
}
