/* fuzz_gguf.c -- libFuzzer target for the GGUF reader.
 *
 * Build and run: `make fuzz` (clang, -fsanitize=fuzzer,address,undefined),
 * then `build/fuzz/fuzz/fuzz_gguf tests/fuzz/corpus/gguf -max_total_time=300`
 * (tests/fuzz/fuzz.h). The corpus in tests/fuzz/corpus/gguf/ is replayed by
 * build/tests/test_fuzz_gguf (and tests/test_gguf.c) in the ordinary suite.
 * Tensor data through the model loader: fuzz_model.c. Every accessor is exercised on files that open, and
 * every tensor's first and last data byte is read (ASan checks extents). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "model/gguf.h"

const char vq_fuzz_corpus[] = "gguf";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a private copy of exactly `size` bytes so any overread is caught */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    vq_gguf *g = NULL;
    char err[256];
    err[0] = '\0';
    vq_status st = vq_gguf_open_memory(copy, size, &g, err);
    FUZZ_CHECK(st == VQ_OK || err[0]); /* refused with a message */
    if (st == VQ_OK) {
        vq_fuzz_accepted++;
        volatile unsigned sink = 0;
        for (uint64_t i = 0; i < vq_gguf_n_kv(g); i++) {
            vq_gguf_str k = vq_gguf_kv_key(g, i);
            char key[128];
            size_t n = k.len < sizeof key - 1 ? (size_t)k.len : sizeof key - 1;
            memcpy(key, k.ptr, n);
            key[n] = '\0';
            uint32_t u;
            int64_t l;
            float f;
            int b;
            vq_gguf_str s;
            uint32_t at;
            uint64_t an;
            const void *ad;
            sink += (unsigned)vq_gguf_get_u32(g, key, &u) + (unsigned)vq_gguf_get_i64(g, key, &l) +
                    (unsigned)vq_gguf_get_f32(g, key, &f) + (unsigned)vq_gguf_get_bool(g, key, &b);
            if (vq_gguf_get_str(g, key, &s) && s.len)
                sink += (unsigned char)s.ptr[s.len - 1];
            if (vq_gguf_get_arr(g, key, &at, &an, &ad) && an)
                for (uint64_t j = 0; j < an && j < 64; j++)
                    if (vq_gguf_get_arr_str(g, key, an - 1 - j, &s) && s.len)
                        sink += (unsigned char)s.ptr[0] + (unsigned char)s.ptr[s.len - 1];
        }
        for (uint64_t i = 0; i < vq_gguf_n_tensors(g); i++) {
            const vq_gguf_tensor *t = vq_gguf_tensor_at(g, i);
            const uint8_t *p = t->data;
            if (t->nbytes)
                sink += p[0] + p[t->nbytes - 1];
        }
        (void)sink;
        vq_gguf_close(g);
    }
    free(copy);
    return 0;
}
