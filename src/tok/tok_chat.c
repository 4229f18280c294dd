/* tok_chat.c -- built-in chat templates for one user turn, ending where the
 * assistant's reply starts (add_generation_prompt):
 *
 *   chatml : [<|im_start|>system\nSYS<|im_end|>\n]<|im_start|>user\nMSG<|im_end|>\n
 *            <|im_start|>assistant\n                   (SmolLM2, Qwen2/2.5/3)
 *   gemma  : <start_of_turn>user\nMSG<end_of_turn>\n<start_of_turn>model\n
 *            (MSG trimmed, as Gemma's template does)
 *   llama3 : <|start_header_id|>user<|end_header_id|>\n\nMSG<|eot_id|>
 *            <|start_header_id|>assistant<|end_header_id|>\n\n (MSG trimmed)
 *
 * SYS is the default system prompt a ChatML template writes when the
 * conversation has none (SmolLM2: "You are a helpful AI assistant named
 * SmolLM, trained by Hugging Face"), taken literally from the GGUF's
 * tokenizer.chat_template when it is there as plain text. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tok/tok_internal.h"

typedef enum { FAM_NONE, FAM_CHATML, FAM_GEMMA, FAM_LLAMA3 } family;

static int has_token(const vq_tokenizer *t, const char *s)
{
    return vq_tok_lookup(t, s, strlen(s)) >= 0;
}

static family pick_family(const vq_tokenizer *t, const char *arch)
{
    const char *tm = t->chat_template;
    if (tm) {
        if (strstr(tm, "<|im_start|>"))
            return FAM_CHATML;
        if (strstr(tm, "<start_of_turn>"))
            return FAM_GEMMA;
        if (strstr(tm, "<|start_header_id|>"))
            return FAM_LLAMA3;
    }
    if (arch && strncmp(arch, "gemma", 5) == 0)
        return FAM_GEMMA;
    if (arch && (strcmp(arch, "qwen2") == 0 || strcmp(arch, "qwen3") == 0))
        return FAM_CHATML;
    if (has_token(t, "<|start_header_id|>"))
        return FAM_LLAMA3;
    if (has_token(t, "<|im_start|>"))
        return FAM_CHATML;
    if (has_token(t, "<start_of_turn>"))
        return FAM_GEMMA;
    return FAM_NONE;
}

/* The first "<|im_start|>system\n...<|im_end|>" in the template whose body
 * is plain text (no quote, no Jinja). Returns its length, 0 if none. */
static size_t default_system(const char *tm, const char **body)
{
    static const char open[] = "<|im_start|>system\n";
    for (const char *p = tm ? strstr(tm, open) : NULL; p; p = strstr(p + 1, open)) {
        const char *b = p + sizeof open - 1;
        const char *e = strstr(b, "<|im_end|>");
        if (!e)
            return 0;
        size_t n = (size_t)(e - b);
        if (n > 0 && !memchr(b, '\'', n) && !memchr(b, '"', n) && !memchr(b, '{', n) &&
            !memchr(b, '}', n)) {
            *body = b;
            return n;
        }
    }
    return 0;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

vq_status vq_tokenizer_chat(const vq_tokenizer *t, const char *arch, const char *user, char **out,
                            char *err)
{
    if (!out)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "chat: NULL out");
    *out = NULL;
    if (!t || !user)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "chat: NULL %s", t ? "message" : "tokenizer");
    family f = pick_family(t, arch);
    static const char *const need[][3] = {
        [FAM_CHATML] = { "<|im_start|>", "<|im_end|>", NULL },
        [FAM_GEMMA] = { "<start_of_turn>", "<end_of_turn>", NULL },
        [FAM_LLAMA3] = { "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>" },
    };
    if (f == FAM_NONE)
        return vq_fail(err, VQ_ERR_UNSUPPORTED, "chat: no built-in chat template for arch '%s'",
                       arch ? arch : "?");
    for (int i = 0; i < 3 && need[f][i]; i++)
        if (!has_token(t, need[f][i]))
            return vq_fail(err, VQ_ERR_UNSUPPORTED,
                           "chat: template needs token %s, which the vocabulary lacks",
                           need[f][i]);

    const char *msg = user;
    size_t msg_len = strlen(user);
    if (f != FAM_CHATML) { /* Jinja's | trim */
        while (msg_len && is_space(*msg))
            msg++, msg_len--;
        while (msg_len && is_space(msg[msg_len - 1]))
            msg_len--;
    }
    const char *sys = NULL;
    size_t sys_len = f == FAM_CHATML ? default_system(t->chat_template, &sys) : 0;

    const char *pre, *post;
    switch (f) {
    case FAM_CHATML:
        pre = "<|im_start|>user\n";
        post = "<|im_end|>\n<|im_start|>assistant\n";
        break;
    case FAM_GEMMA:
        pre = "<start_of_turn>user\n";
        post = "<end_of_turn>\n<start_of_turn>model\n";
        break;
    default:
        pre = "<|start_header_id|>user<|end_header_id|>\n\n";
        post = "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
        break;
    }
    static const char sys_open[] = "<|im_start|>system\n", sys_close[] = "<|im_end|>\n";
    size_t n = strlen(pre) + msg_len + strlen(post) + 1;
    if (sys_len)
        n += sizeof sys_open - 1 + sys_len + sizeof sys_close - 1;
    char *s = malloc(n);
    if (!s)
        return vq_fail(err, VQ_ERR_NOMEM, "chat: out of memory");
    size_t m = 0;
#define APPEND(p, l) (memcpy(s + m, (p), (l)), m += (l))
    if (sys_len) {
        APPEND(sys_open, sizeof sys_open - 1);
        APPEND(sys, sys_len);
        APPEND(sys_close, sizeof sys_close - 1);
    }
    APPEND(pre, strlen(pre));
    APPEND(msg, msg_len);
    APPEND(post, strlen(post));
#undef APPEND
    s[m] = 0;
    *out = s;
    return VQ_OK;
}
