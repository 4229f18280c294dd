/* fuzz.h -- what every tests/fuzz/fuzz_*.c harness shares.
 *
 * A harness defines LLVMFuzzerTestOneInput (libFuzzer's entry point) and
 * vq_fuzz_corpus, the name of its corpus directory under tests/fuzz/corpus/.
 * The same file builds two ways (tests/fuzz/fuzz.mk):
 *   - `make fuzz`: clang -fsanitize=fuzzer,address,undefined, the fuzzer
 *     build/fuzz/fuzz/fuzz_NAME (run: bash tests/fuzz/run-fuzzers.sh);
 *   - `make tests`: any C11 compiler, linked with replay_main.c into the
 *     test program build/tests/test_fuzz_NAME, which feeds every file of
 *     tests/fuzz/corpus/NAME/ to the harness (and under `make sanitize`
 *     does so under ASan + UBSan).
 * A harness checks the library's contracts with FUZZ_CHECK: a violated
 * contract aborts, so libFuzzer saves the input and the replay fails. */
#ifndef VQ_TESTS_FUZZ_H
#define VQ_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern const char vq_fuzz_corpus[];

#define FUZZ_CHECK(cond)                                                              \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "FUZZ_CHECK failed %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                  \
        }                                                                             \
    } while (0)

/* Harnesses count the inputs the library accepted (loaded, parsed): the
 * replay checks that every seed file (seed-* but not seed-bad-*) is
 * accepted, so the seeds really reach the code behind the parser. */
extern int vq_fuzz_accepted;

/* An anonymous in-memory file holding data[0..size): returns its fd and
 * writes a path that opens it ("/proc/self/fd/N") into path; -1 if the
 * system refuses (the harness then skips the input). Close the fd after. */
int vq_fuzz_memfile(const uint8_t *data, size_t size, char *path, size_t cap);

/* A malloc'd NUL-terminated copy of data[0..size) (NULL on failure). */
char *vq_fuzz_cstr(const uint8_t *data, size_t size);

/* A tiny deterministic generator for the harnesses' own choices. */
static inline uint32_t vq_fuzz_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*s >> 33);
}

#endif
