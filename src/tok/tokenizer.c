/* tokenizer.c -- loading a tokenizer from GGUF metadata, the text -> id
 * map, encode (special-token partition, then SPM or BPE per fragment),
 * piece rendering and decode. The algorithms live in tok_spm.c, tok_bpe.c,
 * tok_pretok.c and tokenizer_special.c; chat templates in tok_chat.c.
 *
 * Conventions follow llama.cpp (whose test vectors we pass exactly):
 *  - SPM: a raw fragment gets a leading space when
 *    tokenizer.ggml.add_space_prefix (default true) and it starts the text
 *    or follows a special token; spaces become U+2581.
 *  - BOS is prepended when the caller asks and tokenizer.ggml.add_bos_token
 *    (default: true for SPM and the llama3 pre-tokenizer, else false) says so.
 *  - Missing scores read as 0, a missing token_type array as all normal. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tok/tok_internal.h"
#include "tok/tok_unicode.h"

/* ---- text -> id map (FNV-1a, linear probing) ---------------------------- */

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ULL;
    }
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    return h ^ (h >> 32);
}

int32_t vq_tok_lookup(const vq_tokenizer *t, const char *s, size_t len)
{
    uint64_t h = hash_bytes(s, len);
    uint32_t tag = (uint32_t)(h >> 32);
    size_t i = (size_t)h & t->map.mask;
    for (;;) {
        int32_t id = t->map.slot[i];
        if (id < 0)
            return -1;
        if (t->map.tag[i] == tag) {
            size_t l;
            const char *x = vq_tok_text(t, id, &l);
            if (l == len && memcmp(x, s, len) == 0)
                return id;
        }
        i = (i + 1) & t->map.mask;
    }
}

static vq_status build_map(vq_tokenizer *t, char *err)
{
    size_t cap = 16;
    while (cap < 2 * (size_t)t->n_vocab)
        cap *= 2;
    t->map.slot = malloc(cap * sizeof *t->map.slot);
    t->map.tag = malloc(cap * sizeof *t->map.tag);
    if (!t->map.slot || !t->map.tag)
        return vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory for the vocabulary map");
    memset(t->map.slot, 0xff, cap * sizeof *t->map.slot);
    t->map.mask = cap - 1;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        size_t len;
        const char *s = vq_tok_text(t, id, &len);
        if (len == 0)
            continue; /* an empty token can never be matched */
        uint64_t h = hash_bytes(s, len);
        size_t i = (size_t)h & t->map.mask;
        for (;;) {
            int32_t o = t->map.slot[i];
            if (o < 0) {
                t->map.slot[i] = id;
                t->map.tag[i] = (uint32_t)(h >> 32);
                break;
            }
            size_t l;
            const char *x = vq_tok_text(t, o, &l);
            if (l == len && memcmp(x, s, len) == 0) {
                t->map.slot[i] = id; /* duplicate text: the last id wins, as in llama.cpp */
                break;
            }
            i = (i + 1) & t->map.mask;
        }
    }
    return VQ_OK;
}

vq_status vq_tok_vec_push(vq_tok_vec *v, int32_t id, char *err)
{
    if (v->n == v->cap) {
        size_t nc = v->cap ? 2 * v->cap : 64;
        int32_t *p = realloc(v->ids, nc * sizeof *p);
        if (!p)
            return vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory for %zu tokens", nc);
        v->ids = p;
        v->cap = nc;
    }
    v->ids[v->n++] = id;
    return VQ_OK;
}

/* ---- loading ------------------------------------------------------------- */

static int str_eq(vq_tok_str s, const char *z)
{
    size_t n = strlen(z);
    return s.len == n && memcmp(s.ptr, z, n) == 0;
}

/* An optional token id key: absent leaves *id, present must be an integer
 * inside the vocabulary. */
static vq_status read_id(const vq_tok_meta *g, const char *key, int32_t n_vocab, int32_t *id,
                         char *err)
{
    if (!vq_tok_has(g, key))
        return VQ_OK;
    int64_t v;
    if (!vq_tok_get_i64(g, key, &v))
        return vq_fail(err, VQ_ERR_FORMAT, "tokenizer: %s is not an integer", key);
    if (v < 0 || v >= n_vocab)
        return vq_fail(err, VQ_ERR_FORMAT, "tokenizer: %s = %lld outside the vocabulary (%d tokens)",
                       key, (long long)v, (int)n_vocab);
    *id = (int32_t)v;
    return VQ_OK;
}

static vq_status read_bool(const vq_tok_meta *g, const char *key, int *out, char *err)
{
    if (!vq_tok_has(g, key))
        return VQ_OK;
    if (!vq_tok_get_bool(g, key, out))
        return vq_fail(err, VQ_ERR_FORMAT, "tokenizer: %s is not a bool", key);
    return VQ_OK;
}

static vq_status load_tokens(vq_tokenizer *t, const vq_tok_meta *g, char *err)
{
    const char *key = "tokenizer.ggml.tokens";
    uint32_t type;
    uint64_t n;
    const void *data;
    if (!vq_tok_get_arr(g, key, &type, &n, &data))
        return vq_fail(err, VQ_ERR_FORMAT, "tokenizer: %s missing", key);
    if (type != VQ_TOK_T_STRING)
        return vq_fail(err, VQ_ERR_FORMAT, "tokenizer: %s has element type %u, not string", key,
                       type);
    if (n == 0 || n >= (uint64_t)INT32_MAX)
        return vq_fail(err, VQ_ERR_FORMAT, "tokenizer: %s has %llu entries", key,
                       (unsigned long long)n);
    t->n_vocab = (int32_t)n;
    t->off = malloc((n + 1) * sizeof *t->off);
    t->type = malloc(n);
    t->flags = calloc(n, 1);
    t->score = calloc(n, sizeof *t->score);
    if (!t->off || !t->type || !t->flags || !t->score)
        return vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory for %llu tokens",
                       (unsigned long long)n);
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        vq_tok_str s;
        if (!vq_tok_get_arr_str(g, key, i, &s))
            return vq_fail(err, VQ_ERR_FORMAT, "tokenizer: %s[%llu] unreadable", key,
                           (unsigned long long)i);
        t->off[i] = total;
        total += s.len; /* each len is bounded by the file size: no overflow */
    }
    t->off[n] = total;
    if (total > (uint64_t)((size_t)-1 / 2))
        return vq_fail(err, VQ_ERR_FORMAT, "tokenizer: %s too large", key);
    t->text = malloc(total ? (size_t)total : 1);
    if (!t->text)
        return vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory for token texts");
    for (uint64_t i = 0; i < n; i++) {
        vq_tok_str s;
        vq_tok_get_arr_str(g, key, i, &s);
        if (s.len)
            memcpy(t->text + t->off[i], s.ptr, (size_t)s.len);
    }
    return VQ_OK;
}

static vq_status load_scores_types(vq_tokenizer *t, const vq_tok_meta *g, char *err)
{
    uint32_t type;
    uint64_t n;
    const void *data;
    const char *key = "tokenizer.ggml.scores";
    if (vq_tok_has(g, key)) {
        if (!vq_tok_get_arr(g, key, &type, &n, &data) || type != VQ_TOK_T_FLOAT32)
            return vq_fail(err, VQ_ERR_FORMAT, "tokenizer: %s is not an array of float32", key);
        if (n != (uint64_t)t->n_vocab)
            return vq_fail(err, VQ_ERR_FORMAT,
                           "tokenizer: %s has %llu entries but tokenizer.ggml.tokens has %d", key,
                           (unsigned long long)n, (int)t->n_vocab);
        memcpy(t->score, data, (size_t)n * sizeof(float)); /* little-endian host */
    }
    key = "tokenizer.ggml.token_type";
    memset(t->type, VQ_TOKT_NORMAL, (size_t)t->n_vocab);
    if (vq_tok_has(g, key)) {
        if (!vq_tok_get_arr(g, key, &type, &n, &data) ||
            (type != VQ_TOK_T_INT32 && type != VQ_TOK_T_UINT32))
            return vq_fail(err, VQ_ERR_FORMAT, "tokenizer: %s is not an array of int32", key);
        if (n != (uint64_t)t->n_vocab)
            return vq_fail(err, VQ_ERR_FORMAT,
                           "tokenizer: %s has %llu entries but tokenizer.ggml.tokens has %d", key,
                           (unsigned long long)n, (int)t->n_vocab);
        const unsigned char *p = data;
        for (uint64_t i = 0; i < n; i++) {
            int32_t v;
            memcpy(&v, p + 4 * i, 4);
            if (v < 0 || v > VQ_TOKT_BYTE)
                return vq_fail(err, VQ_ERR_FORMAT, "tokenizer: %s[%llu] = %d is not a token type",
                               key, (unsigned long long)i, (int)v);
            t->type[i] = (uint8_t)v;
        }
    }
    return VQ_OK;
}

static int contains_ci(const char *hay, size_t n, const char *needle)
{
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++) {
        size_t k = 0;
        while (k < m) {
            char c = hay[i + k];
            if (c >= 'A' && c <= 'Z')
                c = (char)(c + 32);
            if (c != needle[k])
                break;
            k++;
        }
        if (k == m)
            return 1;
    }
    return 0;
}

static void set_flag_by_text(vq_tokenizer *t, const char *text, uint8_t flag, int on)
{
    int32_t id = vq_tok_lookup(t, text, strlen(text));
    if (id < 0)
        return;
    if (on)
        t->flags[id] |= flag;
    else
        t->flags[id] &= (uint8_t)~flag;
}

static void set_flags(vq_tokenizer *t, const vq_tok_meta *g)
{
    /* phi-3: special tokens swallow the whitespace after them (llama.cpp
     * sets this by model name; the GGUF does not record it) */
    vq_tok_str name;
    if (vq_tok_get_str(g, "general.name", &name) &&
        (contains_ci(name.ptr, (size_t)name.len, "phi-3") ||
         contains_ci(name.ptr, (size_t)name.len, "phi3"))) {
        for (size_t r = 0; r < t->n_special; r++)
            t->flags[t->special[r]] |= VQ_TOKF_RSTRIP;
        set_flag_by_text(t, "</s>", VQ_TOKF_RSTRIP, 1);
        static const char *const keep[] = { "<unk>", "<s>", "<|endoftext|>" };
        for (size_t i = 0; i < 3; i++)
            set_flag_by_text(t, keep[i], VQ_TOKF_RSTRIP, 0);
    }
    /* end of generation: eos, eot, and the usual end-of-turn tokens */
    static const char *const eog[] = { "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                       "<|endoftext|>", "<|end_of_text|>", "<EOT>", "<|eom_id|>" };
    for (size_t i = 0; i < sizeof eog / sizeof eog[0]; i++) {
        int32_t id = vq_tok_lookup(t, eog[i], strlen(eog[i]));
        if (id >= 0 && (t->type[id] == VQ_TOKT_CONTROL || t->type[id] == VQ_TOKT_USER_DEFINED))
            t->flags[id] |= VQ_TOKF_EOG;
    }
    if (t->eos >= 0)
        t->flags[t->eos] |= VQ_TOKF_EOG;
    if (t->eot >= 0)
        t->flags[t->eot] |= VQ_TOKF_EOG;
}

static vq_status load(vq_tokenizer *t, const vq_tok_meta *g, char *err)
{
    vq_tok_str model;
    if (!vq_tok_get_str(g, "tokenizer.ggml.model", &model))
        return vq_fail(err, VQ_ERR_FORMAT, "tokenizer: tokenizer.ggml.model missing");
    if (str_eq(model, "llama"))
        t->model = VQ_TOK_SPM;
    else if (str_eq(model, "gpt2"))
        t->model = VQ_TOK_BPE;
    else
        return vq_fail(err, VQ_ERR_UNSUPPORTED,
                       "tokenizer: tokenizer.ggml.model '%.*s' not supported (llama, gpt2)",
                       (int)(model.len > 40 ? 40 : model.len), model.ptr);
    VQ_TRY(load_tokens(t, g, err));
    VQ_TRY(load_scores_types(t, g, err));
    VQ_TRY(build_map(t, err));

    t->bos = t->eos = t->unk = t->eot = -1;
    if (t->model == VQ_TOK_SPM) {
        /* SentencePiece defaults (llama.cpp's): <unk>=0, <s>=1, </s>=2 */
        if (t->n_vocab > 2) {
            t->unk = 0;
            t->bos = 1;
            t->eos = 2;
        }
        t->add_bos = 1;
        t->add_space_prefix = 1;
    } else {
        vq_tok_str pre = { "default", 7 };
        vq_tok_get_str(g, "tokenizer.ggml.pre", &pre);
        if (!vq_pretok_from_name(pre.ptr, (size_t)pre.len, &t->pre))
            return vq_fail(err, VQ_ERR_UNSUPPORTED,
                           "tokenizer: pre-tokenizer '%.*s' (tokenizer.ggml.pre) not supported",
                           (int)(pre.len > 40 ? 40 : pre.len), pre.ptr);
        t->ignore_merges = t->pre == VQ_PRETOK_LLAMA3;
        t->add_bos = t->pre == VQ_PRETOK_LLAMA3;
    }
    VQ_TRY(read_id(g, "tokenizer.ggml.bos_token_id", t->n_vocab, &t->bos, err));
    VQ_TRY(read_id(g, "tokenizer.ggml.eos_token_id", t->n_vocab, &t->eos, err));
    VQ_TRY(read_id(g, "tokenizer.ggml.unknown_token_id", t->n_vocab, &t->unk, err));
    VQ_TRY(read_id(g, "tokenizer.ggml.eot_token_id", t->n_vocab, &t->eot, err));
    VQ_TRY(read_bool(g, "tokenizer.ggml.add_bos_token", &t->add_bos, err));
    if (t->model == VQ_TOK_SPM)
        VQ_TRY(read_bool(g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix, err));

    for (int b = 0; b < 256; b++) {
        char s[8];
        size_t n;
        if (t->model == VQ_TOK_SPM) {
            static const char hex[] = "0123456789ABCDEF";
            s[0] = '<', s[1] = '0', s[2] = 'x', s[3] = hex[b >> 4], s[4] = hex[b & 15], s[5] = '>';
            n = 6;
        } else {
            n = vq_tok_utf8_put(vq_tok_byte_to_cp((uint8_t)b), s);
        }
        t->byte_tok[b] = vq_tok_lookup(t, s, n);
    }
    if (t->model == VQ_TOK_BPE)
        VQ_TRY(vq_tok_bpe_load_merges(t, g, err));
    VQ_TRY(vq_tok_special_build(t, err));
    set_flags(t, g);

    vq_tok_str tmpl;
    if (vq_tok_get_str(g, "tokenizer.chat_template", &tmpl)) {
        t->chat_template = malloc((size_t)tmpl.len + 1);
        if (!t->chat_template)
            return vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory");
        memcpy(t->chat_template, tmpl.ptr, (size_t)tmpl.len);
        t->chat_template[tmpl.len] = 0;
    }
    return VQ_OK;
}

vq_status vq_tokenizer_from_meta(const vq_tok_meta *g, vq_tokenizer **out, char *err)
{
    if (!out)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "tokenizer: NULL out");
    *out = NULL;
    if (!g)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "tokenizer: NULL metadata");
    vq_tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory");
    vq_status st = load(t, g, err);
    if (st != VQ_OK) {
        vq_tokenizer_free(t);
        return st;
    }
    *out = t;
    return VQ_OK;
}

void vq_tokenizer_free(vq_tokenizer *t)
{
    if (!t)
        return;
    free(t->text);
    free(t->off);
    free(t->score);
    free(t->type);
    free(t->flags);
    free(t->map.slot);
    free(t->map.tag);
    free(t->merges.key);
    free(t->merges.rank);
    free(t->merges.result);
    vq_tok_special_free(t);
    free(t->chat_template);
    free(t);
}

/* ---- encode -------------------------------------------------------------- */

typedef struct {
    const vq_tokenizer *t;
    vq_tok_work w;
    vq_tok_vec out;
    int prev_special; /* SPM: the next raw fragment starts the text or follows a special token */
    char *esc;        /* SPM escaped fragment */
    size_t esc_cap;
} encode_ctx;

static vq_status on_raw(void *p, const char *s, size_t len, char *err)
{
    encode_ctx *c = p;
    const vq_tokenizer *t = c->t;
    if (t->model == VQ_TOK_BPE)
        return vq_tok_bpe_encode(t, &c->w, s, len, &c->out, err);
    /* SPM: optional leading space, then ' ' -> U+2581 (3 bytes) */
    int prefix = t->add_space_prefix && c->prev_special;
    c->prev_special = 0;
    if (len > ((size_t)-1) / 3 - 3)
        return vq_fail(err, VQ_ERR_NOMEM, "tokenizer: text too large");
    size_t need = 3 * (len + 1);
    if (need > c->esc_cap) {
        char *e = realloc(c->esc, need);
        if (!e)
            return vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory (%zu bytes)", need);
        c->esc = e;
        c->esc_cap = need;
    }
    size_t m = 0;
    for (size_t i = 0; i < len + (size_t)prefix; i++) {
        char ch = (prefix && i == 0) ? ' ' : s[i - (size_t)prefix];
        if (ch == ' ') {
            memcpy(c->esc + m, "\xE2\x96\x81", 3);
            m += 3;
        } else {
            c->esc[m++] = ch;
        }
    }
    return vq_tok_spm_encode(t, &c->w, c->esc, m, &c->out, err);
}

static vq_status on_special(void *p, int32_t id, char *err)
{
    encode_ctx *c = p;
    c->prev_special = 1;
    return vq_tok_vec_push(&c->out, id, err);
}

vq_status vq_tokenizer_encode(const vq_tokenizer *t, const char *text, size_t len, int add_bos,
                              int parse_special, int32_t **tokens, size_t *n, char *err)
{
    if (!tokens || !n)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "tokenizer: NULL output");
    *tokens = NULL;
    *n = 0;
    if (!t || (!text && len))
        return vq_fail(err, VQ_ERR_INVALID_ARG, "tokenizer: NULL %s", t ? "text" : "tokenizer");
    encode_ctx c;
    memset(&c, 0, sizeof c);
    c.t = t;
    c.prev_special = 1;
    vq_status st = VQ_OK;
    if (add_bos && t->add_bos && t->bos >= 0)
        st = vq_tok_vec_push(&c.out, t->bos, err);
    if (st == VQ_OK)
        st = vq_tok_partition(t, text, len, parse_special, on_raw, on_special, &c, err);
    if (st == VQ_OK && !c.out.ids) {
        c.out.ids = malloc(sizeof *c.out.ids); /* always a freeable array */
        if (!c.out.ids)
            st = vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory");
    }
    vq_tok_work_free(&c.w);
    free(c.esc);
    if (st != VQ_OK) {
        free(c.out.ids);
        return st;
    }
    *tokens = c.out.ids;
    *n = c.out.n;
    return VQ_OK;
}

/* ---- pieces and decode --------------------------------------------------- */

typedef struct {
    char *buf;
    size_t cap, len;
} sink;

static void put(sink *k, const char *s, size_t n)
{
    if (k->len < k->cap) {
        size_t room = k->cap - k->len;
        memcpy(k->buf + k->len, s, n < room ? n : room);
    }
    k->len += n;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

size_t vq_tokenizer_piece(const vq_tokenizer *t, int32_t id, int render_special, char *buf,
                          size_t cap)
{
    if (!t || id < 0 || id >= t->n_vocab)
        return 0;
    sink k = { buf, buf ? cap : 0, 0 };
    size_t len;
    const char *s = vq_tok_text(t, id, &len);
    switch (t->type[id]) {
    case VQ_TOKT_CONTROL:
    case VQ_TOKT_UNKNOWN:
        if (render_special)
            put(&k, s, len);
        break;
    case VQ_TOKT_USER_DEFINED:
        put(&k, s, len);
        break;
    case VQ_TOKT_BYTE:
        if (len == 6 && s[0] == '<' && s[1] == '0' && s[2] == 'x' && s[5] == '>' &&
            hexval(s[3]) >= 0 && hexval(s[4]) >= 0) {
            char b = (char)(hexval(s[3]) * 16 + hexval(s[4]));
            put(&k, &b, 1);
        } else {
            put(&k, s, len);
        }
        break;
    case VQ_TOKT_NORMAL:
        if (t->model == VQ_TOK_SPM) {
            for (size_t i = 0; i < len;) {
                if (i + 3 <= len && memcmp(s + i, "\xE2\x96\x81", 3) == 0) {
                    put(&k, " ", 1);
                    i += 3;
                } else {
                    put(&k, s + i, 1);
                    i++;
                }
            }
        } else {
            for (size_t i = 0; i < len;) {
                uint32_t cp;
                size_t m = vq_tok_utf8_next(s + i, len - i, &cp);
                int b = cp == VQ_TOK_CP_INVALID ? -1 : vq_tok_cp_to_byte(cp);
                if (b >= 0) {
                    char c = (char)b;
                    put(&k, &c, 1);
                } else {
                    put(&k, s + i, m); /* not a byte-level char: as written */
                }
                i += m;
            }
        }
        break;
    default: /* unused / undefined: nothing, as llama.cpp */
        break;
    }
    return k.len;
}

vq_status vq_tokenizer_decode(const vq_tokenizer *t, const int32_t *ids, size_t n,
                              int render_special, char **out, size_t *out_len, char *err)
{
    if (!out)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "tokenizer: NULL out");
    *out = NULL;
    if (out_len)
        *out_len = 0;
    if (!t || (!ids && n))
        return vq_fail(err, VQ_ERR_INVALID_ARG, "tokenizer: NULL %s", t ? "ids" : "tokenizer");
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += vq_tokenizer_piece(t, ids[i], render_special, NULL, 0);
    char *buf = malloc(total + 1);
    if (!buf)
        return vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory (%zu bytes)", total + 1);
    size_t m = 0;
    int strip = t->model == VQ_TOK_SPM && t->add_space_prefix;
    for (size_t i = 0; i < n; i++) {
        size_t k = vq_tokenizer_piece(t, ids[i], render_special, buf + m, total - m);
        if (strip && k > 0) {
            /* undo the space the encoder put in front of the text */
            if (buf[m] == ' ') {
                memmove(buf + m, buf + m + 1, k - 1);
                k--;
            }
            strip = 0;
        }
        m += k;
    }
    buf[m] = 0;
    *out = buf;
    if (out_len)
        *out_len = m;
    return VQ_OK;
}

int32_t vq_tokenizer_n_vocab(const vq_tokenizer *t) { return t ? t->n_vocab : 0; }
int32_t vq_tokenizer_bos(const vq_tokenizer *t) { return t ? t->bos : -1; }
int32_t vq_tokenizer_eos(const vq_tokenizer *t) { return t ? t->eos : -1; }

int vq_tokenizer_is_eog(const vq_tokenizer *t, int32_t id)
{
    return t && id >= 0 && id < t->n_vocab && (t->flags[id] & VQ_TOKF_EOG);
}
