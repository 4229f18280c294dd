/* test_files.c -- scratch files of the tests (test_files.h). */
#include "test_files.h"

#include <stdio.h>

#include "test.h"

const char *vq_test_tmp_path(const char *name)
{
    static char buf[4][512];
    static int i;
    char *b = buf[i++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", vq_test_tmpdir(), name);
    return b;
}

int vq_test_write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(p, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}
