/* tok_pretok.c -- pre-tokenizer regexes as hand-written matchers (see
 * tok_pretok.h for the regexes and the conventions). */
#include "tok/tok_pretok.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "tok/tok_unicode.h"

typedef enum {
    PASS_GPT2,        /* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S) */
    PASS_LLAMA3,      /* the llama3 regex, \p{N}{1,3} */
    PASS_QWEN2,       /* the llama3 regex with \p{N} */
    PASS_NUM_EACH,    /* \p{N} */
    PASS_NUM_RUN,     /* \p{N}+ */
    PASS_PUNCT_RUN,   /* [\p{P}\$\+<=>\^`\|]+ */
    PASS_DIGIT3       /* [0-9][0-9][0-9] */
} pass_kind;

static const struct {
    const char *name;
    vq_pretok_kind kind;
} k_names[] = {
    /* names as llama.cpp's converter writes them */
    { "default", VQ_PRETOK_DEFAULT },   { "gpt-2", VQ_PRETOK_GPT2 },
    { "gpt2", VQ_PRETOK_GPT2 },         { "phi-2", VQ_PRETOK_GPT2 },
    { "llama3", VQ_PRETOK_LLAMA3 },     { "llama-v3", VQ_PRETOK_LLAMA3 },
    { "llama-bpe", VQ_PRETOK_LLAMA3 },  { "falcon3", VQ_PRETOK_LLAMA3 },
    { "pixtral", VQ_PRETOK_LLAMA3 },    { "qwen2", VQ_PRETOK_QWEN2 },
    { "deepseek-r1-qwen", VQ_PRETOK_QWEN2 }, { "smollm", VQ_PRETOK_SMOLLM },
    { "starcoder", VQ_PRETOK_SMOLLM },  { "refact", VQ_PRETOK_SMOLLM },
    { "command-r", VQ_PRETOK_SMOLLM },  { "codeshell", VQ_PRETOK_SMOLLM },
    { "exaone", VQ_PRETOK_SMOLLM },     { "minerva-7b", VQ_PRETOK_SMOLLM },
};

int vq_pretok_from_name(const char *name, size_t len, vq_pretok_kind *out)
{
    for (size_t i = 0; i < sizeof k_names / sizeof k_names[0]; i++) {
        if (strlen(k_names[i].name) == len && memcmp(k_names[i].name, name, len) == 0) {
            *out = k_names[i].kind;
            return 1;
        }
    }
    return 0;
}

const char *vq_pretok_kind_name(vq_pretok_kind k)
{
    switch (k) {
    case VQ_PRETOK_DEFAULT: return "default";
    case VQ_PRETOK_GPT2: return "gpt2";
    case VQ_PRETOK_LLAMA3: return "llama3";
    case VQ_PRETOK_QWEN2: return "qwen2";
    case VQ_PRETOK_SMOLLM: return "smollm";
    }
    return "?";
}

void vq_pretok_ws_free(vq_pretok_ws *ws)
{
    if (!ws)
        return;
    free(ws->cp);
    free(ws->cls);
    free(ws->off);
    free(ws->ends_a);
    free(ws->ends_b);
    memset(ws, 0, sizeof *ws);
}

static vq_status ws_reserve(vq_pretok_ws *ws, size_t units, char *err)
{
    if (units + 1 <= ws->cap)
        return VQ_OK;
    size_t cap = units + 1;
    if (cap > ((size_t)-1) / sizeof(size_t))
        return vq_fail(err, VQ_ERR_NOMEM, "pretok: text of %zu units too large", units);
    int ok = vq_resize(&ws->cp, cap * sizeof *ws->cp);
    ok &= vq_resize(&ws->cls, cap);
    ok &= vq_resize(&ws->off, cap * sizeof *ws->off);
    ok &= vq_resize(&ws->ends_a, cap * sizeof *ws->ends_a);
    ok &= vq_resize(&ws->ends_b, cap * sizeof *ws->ends_b);
    if (!ok)
        return vq_fail(err, VQ_ERR_NOMEM, "pretok: out of memory for %zu units", units);
    ws->cap = cap;
    return VQ_OK;
}

/* ---- matchers -------------------------------------------------------------
 * Each matcher splits the chunk [b, e) of units, appending piece ends to
 * out (ends are unit indices, increasing; the last is e). Gaps between
 * matches become pieces too. */

typedef struct {
    const uint32_t *cp;
    const uint8_t *cls;
    size_t b, e;       /* the chunk */
    size_t *out;
    size_t n_out;
    size_t prev_end;
} chunk_ctx;

#define OUT_OF_CHUNK 0xFFFFFFFEu

static uint32_t cp_at(const chunk_ctx *c, size_t p) { return p < c->e ? c->cp[p] : OUT_OF_CHUNK; }
static uint8_t cls_at(const chunk_ctx *c, size_t p) { return p < c->e ? c->cls[p] : 0; }

static void emit(chunk_ctx *c, size_t end)
{
    if (end > c->prev_end) {
        c->out[c->n_out++] = end;
        c->prev_end = end;
    }
}

/* [^\s\p{L}\p{N}] */
static int is_rest(uint8_t cls)
{
    return cls && !(cls & (VQ_TOK_CP_SPACE | VQ_TOK_CP_LETTER | VQ_TOK_CP_NUMBER));
}

static uint32_t ascii_lower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

/* 's|'t|'re|'ve|'m|'ll|'d (case-insensitive when ci). Returns the match
 * length in units, 0 if none. */
static size_t match_contraction(const chunk_ctx *c, size_t p, int ci)
{
    if (cp_at(c, p) != '\'')
        return 0;
    uint32_t a = cp_at(c, p + 1), b = cp_at(c, p + 2);
    if (ci) {
        a = ascii_lower(a);
        b = ascii_lower(b);
    }
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
        return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        return 3;
    return 0;
}

/* The regex pre-tokenizers (gpt2, llama3, qwen2): at each point of the
 * chunk a contraction ('s 't ... , case-insensitive for llama3/qwen2) or
 * else the piece the splitter's alternatives match; a piece function
 * answers the end (> p) of the piece starting at p. */
typedef size_t (*piece_fn)(const chunk_ctx *c, size_t p, size_t arg);

static void split_regex(chunk_ctx *c, int ci, piece_fn piece, size_t arg)
{
    size_t p = c->b;
    while (p < c->e) {
        size_t m = match_contraction(c, p, ci);
        p = m ? p + m : piece(c, p, arg);
        emit(c, p);
    }
}

static size_t piece_gpt2(const chunk_ctx *c, size_t p, size_t unused)
{
    (void)unused;
    uint32_t cp = cp_at(c, p);
    uint8_t cls = cls_at(c, p);
    /* the optional leading ' ' of the next three alternatives */
    uint8_t nxt = cp == ' ' ? cls_at(c, p + 1) : cls;
    size_t q = p + (cp == ' ');
    if (nxt & VQ_TOK_CP_LETTER) { /* ' ?\p{L}+' */
        while (cls_at(c, q) & VQ_TOK_CP_LETTER)
            q++;
        return q;
    }
    if (nxt & VQ_TOK_CP_NUMBER) { /* ' ?\p{N}+' */
        while (cls_at(c, q) & VQ_TOK_CP_NUMBER)
            q++;
        return q;
    }
    if (is_rest(nxt)) { /* ' ?[^\s\p{L}\p{N}]+' */
        while (is_rest(cls_at(c, q)))
            q++;
        return q;
    }
    size_t nws = 0;
    while (cls_at(c, p + nws) & VQ_TOK_CP_SPACE)
        nws++;
    if (nws > 1 && p + nws < c->e) { /* '\s+(?!\S)': leave the last space */
        return p + nws - 1;
    }
    if (nws > 0) { /* \s+ up to the end of the chunk, or a single space */
        return p + nws;
    }
    return p + 1; /* unreachable with the classes above, kept for safety */
}

/* max_digits: 3 for llama3 (\p{N}{1,3}), 1 for qwen2 (\p{N}). */
static size_t piece_llama3(const chunk_ctx *c, size_t p, size_t max_digits)
{
    uint32_t cp = cp_at(c, p);
    uint8_t cls = cls_at(c, p);
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (!(cp == '\r' || cp == '\n' || (cls & VQ_TOK_CP_NUMBER))) {
        if ((cls & VQ_TOK_CP_LETTER) || (cls_at(c, p + 1) & VQ_TOK_CP_LETTER)) {
            size_t q = p + 1;
            while (cls_at(c, q) & VQ_TOK_CP_LETTER)
                q++;
            return q;
        }
    }
    /* \p{N}{1,K} */
    if (cls & VQ_TOK_CP_NUMBER) {
        size_t q = p + 1;
        while (q - p < max_digits && (cls_at(c, q) & VQ_TOK_CP_NUMBER))
            q++;
        return q;
    }
    /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
    uint8_t nxt = cp == ' ' ? cls_at(c, p + 1) : cls;
    if (is_rest(nxt)) {
        size_t q = p + (cp == ' ');
        while (is_rest(cls_at(c, q)))
            q++;
        while (cp_at(c, q) == '\r' || cp_at(c, q) == '\n')
            q++;
        return q;
    }
    size_t nws = 0, last_nl_end = 0;
    while (cls_at(c, p + nws) & VQ_TOK_CP_SPACE) {
        uint32_t w = cp_at(c, p + nws);
        nws++;
        if (w == '\r' || w == '\n')
            last_nl_end = p + nws;
    }
    if (last_nl_end) { /* \s*[\r\n]+ */
        return last_nl_end;
    }
    if (nws > 1 && p + nws < c->e) { /* \s+(?!\S) */
        return p + nws - 1;
    }
    if (nws > 0) { /* \s+ */
        return p + nws;
    }
    return p + 1;
}

static int is_punct_run_unit(uint32_t cp, uint8_t cls)
{
    return (cls & VQ_TOK_CP_PUNCT) || cp == '$' || cp == '+' || cp == '<' || cp == '=' ||
           cp == '>' || cp == '^' || cp == '`' || cp == '|';
}

static void split_simple(chunk_ctx *c, pass_kind kind)
{
    size_t p = c->b;
    while (p < c->e) {
        uint32_t cp = c->cp[p];
        uint8_t cls = c->cls[p];
        size_t q = p;
        switch (kind) {
        case PASS_NUM_EACH:
            if (cls & VQ_TOK_CP_NUMBER)
                q = p + 1;
            break;
        case PASS_NUM_RUN:
            while (q < c->e && (c->cls[q] & VQ_TOK_CP_NUMBER))
                q++;
            break;
        case PASS_PUNCT_RUN:
            while (q < c->e && is_punct_run_unit(c->cp[q], c->cls[q]))
                q++;
            break;
        case PASS_DIGIT3:
            if (p + 3 <= c->e && cp >= '0' && cp <= '9' && c->cp[p + 1] >= '0' &&
                c->cp[p + 1] <= '9' && c->cp[p + 2] >= '0' && c->cp[p + 2] <= '9')
                q = p + 3;
            break;
        default:
            break;
        }
        if (q > p) { /* a match: close the gap before it, then the match */
            emit(c, p);
            emit(c, q);
            p = q;
        } else {
            p++;
        }
    }
    emit(c, c->e); /* trailing gap */
}

static size_t run_pass(pass_kind kind, const vq_pretok_ws *ws, const size_t *ends, size_t n,
                       size_t *out)
{
    chunk_ctx c = { ws->cp, ws->cls, 0, 0, out, 0, 0 };
    size_t b = 0;
    for (size_t i = 0; i < n; i++) {
        c.b = c.prev_end = b;
        c.e = ends[i];
        switch (kind) {
        case PASS_GPT2: split_regex(&c, 0, piece_gpt2, 0); break;
        case PASS_LLAMA3: split_regex(&c, 1, piece_llama3, 3); break;
        case PASS_QWEN2: split_regex(&c, 1, piece_llama3, 1); break;
        default: split_simple(&c, kind); break;
        }
        emit(&c, c.e);
        b = ends[i];
    }
    return c.n_out;
}

vq_status vq_pretok_split(vq_pretok_kind kind, const char *text, size_t len, vq_pretok_ws *ws,
                          const size_t **piece_ends, size_t *n_pieces, char *err)
{
    *n_pieces = 0;
    *piece_ends = NULL;
    if (!text && len)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "pretok: NULL text");
    /* at most one unit per byte */
    VQ_TRY(ws_reserve(ws, len, err));
    *piece_ends = ws->ends_a;
    if (len == 0)
        return VQ_OK;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = vq_tok_utf8_next(text + i, len - i, &cp);
        ws->cp[n] = cp;
        ws->cls[n] = vq_tok_cp_class(cp);
        ws->off[n] = i;
        n++;
        i += k;
    }
    ws->off[n] = len;

    pass_kind passes[4];
    size_t n_passes = 0;
    switch (kind) {
    case VQ_PRETOK_GPT2: passes[n_passes++] = PASS_GPT2; break;
    case VQ_PRETOK_LLAMA3: passes[n_passes++] = PASS_LLAMA3; break;
    case VQ_PRETOK_QWEN2: passes[n_passes++] = PASS_QWEN2; break;
    case VQ_PRETOK_SMOLLM:
        passes[n_passes++] = PASS_NUM_EACH;
        passes[n_passes++] = PASS_GPT2;
        break;
    case VQ_PRETOK_DEFAULT:
        passes[n_passes++] = PASS_PUNCT_RUN;
        passes[n_passes++] = PASS_GPT2;
        passes[n_passes++] = PASS_NUM_RUN;
        passes[n_passes++] = PASS_DIGIT3;
        break;
    default:
        return vq_fail(err, VQ_ERR_INVALID_ARG, "pretok: unknown kind %d", (int)kind);
    }

    size_t *cur = ws->ends_a, *nxt = ws->ends_b;
    size_t n_cur = 1;
    cur[0] = n;
    for (size_t k = 0; k < n_passes; k++) {
        size_t m = run_pass(passes[k], ws, cur, n_cur, nxt);
        size_t *t = cur;
        cur = nxt;
        nxt = t;
        n_cur = m;
    }
    for (size_t i = 0; i < n_cur; i++)
        cur[i] = ws->off[cur[i]];
    *piece_ends = cur;
    *n_pieces = n_cur;
    return VQ_OK;
}
