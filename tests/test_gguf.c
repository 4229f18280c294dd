/* test_gguf.c -- the GGUF reader on the real model and vocabulary files. */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "model/gguf.h"
#include "model/quants.h"
#include "test.h"

/* Opens a real file and prints a one-line summary plus a per-type count. */
static void check_real_file(const char *path, int expect_tensors)
{
    if (!path)
        return;
    vq_gguf *g = NULL;
    char err[VQ_ERRLEN] = "";
    vq_status st = vq_gguf_open(path, &g, err);
    CHECKF(st == VQ_OK, "%s: %s", path, err);
    if (st != VQ_OK)
        return;
    vq_gguf_str arch = { "", 0 };
    vq_gguf_get_str(g, "general.architecture", &arch);
    uint64_t n_tok = 0;
    uint32_t at = 0;
    CHECK(vq_gguf_get_arr(g, "tokenizer.ggml.tokens", &at, &n_tok, NULL));
    CHECK(at == VQ_GGUF_STRING && n_tok > 1000);
    vq_gguf_str t0, tl;
    CHECK(vq_gguf_get_arr_str(g, "tokenizer.ggml.tokens", 0, &t0));
    CHECK(vq_gguf_get_arr_str(g, "tokenizer.ggml.tokens", n_tok - 1, &tl));
    CHECK(!vq_gguf_get_arr_str(g, "tokenizer.ggml.tokens", n_tok, &tl));
    printf("%s: v%u, %llu kv, %llu tensors, arch '%.*s', %llu tokens, data at %llu\n", path,
           vq_gguf_version(g), (unsigned long long)vq_gguf_n_kv(g),
           (unsigned long long)vq_gguf_n_tensors(g), (int)arch.len, arch.ptr,
           (unsigned long long)n_tok, (unsigned long long)vq_gguf_data_offset(g));
    if (expect_tensors) {
        CHECK(vq_gguf_n_tensors(g) > 10);
        uint64_t count[64] = { 0 }, bytes[64] = { 0 };
        for (uint64_t i = 0; i < vq_gguf_n_tensors(g); i++) {
            const vq_gguf_tensor *t = vq_gguf_tensor_at(g, i);
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
            CHECK(vq_gguf_find_tensor(g, name) == t);
            if (t->type < 64) {
                count[t->type]++;
                bytes[t->type] += t->nbytes;
            }
        }
        for (int ty = 0; ty < 64; ty++)
            if (count[ty])
                printf("    %-6s %4llu tensors %10llu bytes%s\n", vq_wtype_name((uint32_t)ty),
                       (unsigned long long)count[ty], (unsigned long long)bytes[ty],
                       vq_wtype_supported((uint32_t)ty) ? "" : " (unsupported)");
        uint32_t ctx = 0;
        char key[128];
        snprintf(key, sizeof key, "%.*s.context_length", (int)arch.len, arch.ptr);
        CHECKF(vq_gguf_get_u32(g, key, &ctx) && ctx > 0, "%s missing", key);
    }
    vq_gguf_close(g);
}

static void test_real_files(void)
{
    check_real_file(vq_test_model("smollm2-135m"), 1);
    check_real_file(vq_test_model("gemma3-270m"), 1);
    const char *vocabs[] = { "tokenizer/ggml-vocab-gpt-2.gguf", "tokenizer/ggml-vocab-llama-spm.gguf",
                             "tokenizer/ggml-vocab-phi-3.gguf" };
    for (size_t i = 0; i < sizeof vocabs / sizeof *vocabs; i++)
        check_real_file(vq_test_data(vocabs[i]), 0);
}

int main(void)
{
    RUN(test_real_files);
    return vq_test_summary("gguf");
}
