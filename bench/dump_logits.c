/* dump_logits.c -- our runtime's logits for one prompt, for the independent
 * numpy reference check (scripts/reference_forward.py,
 * figures/reference-check.md). Public API only.
 *
 * Usage: dump_logits MODEL OUT.bin [--chat] [--gen N] [--batch B] [--tail K]
 *                    [--file PATH --max-tokens T | TEXT]
 *   TEXT (default: a fixed WikiText-2 sentence) is tokenized with the
 *   model's tokenizer (BOS when the model asks for it). --chat wraps TEXT in
 *   the model's chat template first (special tokens parsed). The prompt goes
 *   through vq_ctx_forward with VQ_LOGITS_ALL in batches of B tokens
 *   (default: all at once; --batch 1 checks the decode path); then --gen N
 *   (default 0) greedy tokens (argmax, ties: lowest id) are decoded one at a
 *   time and appended. --file takes the text from a file, cut to its first
 *   T tokens (default 600); --tail K stores only the last K rows of logits
 *   (long prompts: sliding-window check).
 *
 * OUT.bin format "VQLG" version 2 (all little-endian):
 *   char[4] "VQLG"; u32 version = 2; u32 n_prompt; u32 n_vocab; u32 n_gen;
 *   u32 first_row; i32 prompt_ids[n_prompt]; i32 gen_ids[n_gen];
 *   f32 logits[n_prompt + n_gen - first_row][n_vocab]   (row i, from
 *   first_row: logits after token i of prompt_ids ++ gen_ids; gen_ids[g] is
 *   the argmax of row n_prompt-1+g).
 * The generated ids are printed (with their text) on stdout. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "veloxquant.h"

static const char *const default_text =
    " The game 's opening theme was composed by Hitoshi Sakimoto , who also "
    "wrote the music for Valkyria Chronicles II , and was performed by a full "
    "orchestra .";

static int32_t argmax(const float *x, int n)
{
    int32_t b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b])
            b = i;
    return b;
}

static void put_u32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }

int main(int argc, char **argv)
{
    const char *model_path = NULL, *out_path = NULL, *text = default_text;
    const char *file = NULL;
    int chat = 0, n_gen = 0, batch = 1 << 20, tail = -1, max_tok = 600;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--chat") == 0)
            chat = 1;
        else if (strcmp(argv[i], "--tail") == 0 && i + 1 < argc)
            tail = atoi(argv[++i]);
        else if (strcmp(argv[i], "--file") == 0 && i + 1 < argc)
            file = argv[++i];
        else if (strcmp(argv[i], "--max-tokens") == 0 && i + 1 < argc)
            max_tok = atoi(argv[++i]);
        else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
            batch = atoi(argv[++i]);
        else if (strcmp(argv[i], "--gen") == 0 && i + 1 < argc)
            n_gen = atoi(argv[++i]);
        else if (!model_path)
            model_path = argv[i];
        else if (!out_path)
            out_path = argv[i];
        else
            text = argv[i];
    }
    if (!model_path || !out_path || n_gen < 0 || n_gen > 4096 || batch < 1 || max_tok < 1) {
        fprintf(stderr, "usage: dump_logits MODEL OUT.bin [--chat] [--gen N] [--batch B] [--tail K] "
                        "[--file PATH --max-tokens T | TEXT]\n");
        return 2;
    }
    vq_model *m = NULL;
    if (vq_model_load(model_path, &m) != VQ_OK) {
        fprintf(stderr, "load: %s\n", vq_last_error());
        return 1;
    }
    char *file_text = NULL;
    if (file) {
        FILE *tf = fopen(file, "rb");
        if (!tf) {
            perror(file);
            return 1;
        }
        file_text = calloc(1, 1 << 16); /* the first 64 KiB is plenty */
        if (!file_text)
            return 1;
        size_t got = fread(file_text, 1, (1 << 16) - 1, tf);
        fclose(tf);
        while (got > 0 && ((unsigned char)file_text[got - 1] & 0xC0) == 0x80)
            got--; /* do not end inside a UTF-8 sequence */
        if (got > 0 && (unsigned char)file_text[got - 1] >= 0xC0)
            got--;
        file_text[got] = 0;
        text = file_text;
    }
    vq_model_info info;
    vq_model_info_get(m, &info);
    char *templated = NULL;
    if (chat && vq_model_chat(m, text, &templated) != VQ_OK) {
        fprintf(stderr, "chat: %s\n", vq_model_error(m));
        return 1;
    }
    const char *prompt = templated ? templated : text;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    if (vq_model_tokenize(m, prompt, strlen(prompt), 1, chat, &ids, &n_ids) != VQ_OK) {
        fprintf(stderr, "tokenize: %s\n", vq_model_error(m));
        return 1;
    }
    if (file && n_ids > (size_t)max_tok)
        n_ids = (size_t)max_tok;
    int n = (int)n_ids, V = info.n_vocab;
    int rows = n + n_gen;
    int first_row = tail >= 0 && tail < rows ? rows - tail : 0;
    vq_ctx *c = NULL;
    if (vq_ctx_create(m, n + n_gen + 1, 0, &c) != VQ_OK) {
        fprintf(stderr, "ctx: %s\n", vq_last_error());
        return 1;
    }
    float *logits = malloc((size_t)(n + n_gen) * (size_t)V * sizeof *logits);
    int32_t *gen = malloc((size_t)(n_gen + 1) * sizeof *gen);
    if (!logits || !gen)
        return 1;
    for (int i = 0; i < n; i += batch) {
        int nb = n - i < batch ? n - i : batch;
        if (vq_ctx_forward(c, ids + i, nb, logits + (size_t)i * (size_t)V, VQ_LOGITS_ALL) != VQ_OK) {
            fprintf(stderr, "forward: %s\n", vq_ctx_error(c));
            return 1;
        }
    }
    const float *last = logits + (size_t)(n - 1) * (size_t)V;
    for (int g = 0; g < n_gen; g++) {
        gen[g] = argmax(last, V);
        char piece[256];
        size_t len = vq_model_token_piece(m, gen[g], 1, piece, sizeof piece - 1);
        piece[len < sizeof piece - 1 ? len : sizeof piece - 1] = 0;
        printf("gen[%d] = %d '%s'\n", g, gen[g], piece);
        float *row = logits + (size_t)(n + g) * (size_t)V;
        if (vq_ctx_forward(c, &gen[g], 1, row, VQ_LOGITS_LAST) != VQ_OK) {
            fprintf(stderr, "forward: %s\n", vq_ctx_error(c));
            return 1;
        }
        last = row;
    }
    FILE *f = fopen(out_path, "wb");
    if (!f) {
        perror(out_path);
        return 1;
    }
    fwrite("VQLG", 1, 4, f);
    put_u32(f, 2);
    put_u32(f, (uint32_t)n);
    put_u32(f, (uint32_t)V);
    put_u32(f, (uint32_t)n_gen);
    put_u32(f, (uint32_t)first_row);
    fwrite(ids, sizeof *ids, n_ids, f);
    fwrite(gen, sizeof *gen, (size_t)n_gen, f);
    fwrite(logits + (size_t)first_row * (size_t)V, sizeof *logits,
           (size_t)(rows - first_row) * (size_t)V, f);
    if (fclose(f) != 0) {
        perror(out_path);
        return 1;
    }
    printf("%s: %d prompt tokens, %d generated, n_vocab %d -> %s\n", info.arch, n, n_gen, V,
           out_path);
    free(logits);
    free(gen);
    free(ids);
    free(templated);
    free(file_text);
    vq_ctx_free(c);
    vq_model_free(m);
    return 0;
}
