/* replay_main.c -- a fuzz harness as an ordinary test program: feeds every
 * file of tests/fuzz/corpus/<vq_fuzz_corpus>/ (sorted by name) to
 * LLVMFuzzerTestOneInput. Each input is read into a buffer of exactly its
 * size (so sanitizers see any overread). The harness aborts on a broken
 * contract; a crash fails the program. Seed files (seed-*, not seed-bad-*)
 * must be accepted by the library (vq_fuzz_accepted). Also takes file
 * arguments instead of the corpus. */
#include <dirent.h>
#include <string.h>

#include "fuzz.h"
#include "test.h"
#include "veloxquant.h"

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *nb = realloc(buf, cap);
            if (!nb)
                break;
            buf = nb;
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        if (r == 0)
            break;
        len += r;
    }
    fclose(f);
    uint8_t *exact = malloc(len ? len : 1);
    if (exact && len)
        memcpy(exact, buf, len);
    free(buf);
    if (!exact)
        return 0;
    printf("replay %s (%zu bytes)\n", path, len);
    fflush(stdout);
    int before = vq_fuzz_accepted;
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (strncmp(base, "seed-", 5) == 0 && strncmp(base, "seed-bad-", 9) != 0)
        CHECKF(vq_fuzz_accepted > before, "seed %s was refused: %s", path, vq_last_error());
    else
        CHECK(1); /* the input ran to the end */
    return 1;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    char name[64];
    snprintf(name, sizeof name, "fuzz_%s", vq_fuzz_corpus);
    vq_test_current = name;
    if (argc > 1) {
        for (int i = 1; i < argc; i++)
            CHECKF(replay_file(argv[i]), "cannot read %s", argv[i]);
        return vq_test_summary(name);
    }
    char dir[256];
    snprintf(dir, sizeof dir, "tests/fuzz/corpus/%s", vq_fuzz_corpus);
    DIR *d = opendir(dir);
    CHECKF(d != NULL, "corpus directory %s missing", dir);
    if (!d)
        return vq_test_summary(name);
    char **files = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nf = realloc(files, cap * sizeof *files);
            if (!nf)
                break;
            files = nf;
        }
        size_t l = strlen(dir) + strlen(e->d_name) + 2;
        files[n] = malloc(l);
        if (!files[n])
            break;
        snprintf(files[n], l, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n)
        qsort(files, n, sizeof *files, by_name);
    size_t done = 0;
    for (size_t i = 0; i < n; i++) {
        done += (size_t)replay_file(files[i]);
        free(files[i]);
    }
    free(files);
        CHECKF(done == n, "read %zu of %zu corpus files", done, n);
    CHECKF(n >= 5, "only %zu corpus files in %s", n, dir);
    printf("%s: replayed %zu corpus files\n", name, done);
    return vq_test_summary(name);
}
