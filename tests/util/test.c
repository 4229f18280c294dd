/* test.c -- harness implementation (see test.h). */
#include "test.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "veloxquant.h"

int vq_test_passed, vq_test_failed;
const char *vq_test_current = "";

void vq_test_check(int ok, const char *file, int line, const char *expr)
{
    if (ok) {
        vq_test_passed++;
        return;
    }
    vq_test_failed++;
    fprintf(stderr, "FAIL %s:%d [%s] %s\n", file, line, vq_test_current, expr);
}

void vq_test_checkf(int ok, const char *file, int line, const char *fmt, ...)
{
    if (ok) {
        vq_test_passed++;
        return;
    }
    vq_test_failed++;
    fprintf(stderr, "FAIL %s:%d [%s] ", file, line, vq_test_current);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int vq_test_summary(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, vq_test_passed, vq_test_failed);
    return vq_test_failed ? 1 : 0;
}

int vq_test_quick(void)
{
    const char *l = getenv("VQ_TEST_LEVEL");
    return l && strcmp(l, "quick") == 0;
}

const char *vq_test_model(const char *name)
{
    static char path[4][512];
    static int slot;
    char *p = path[slot++ & 3];
    const char *dir = getenv("VQ_MODELS");
    snprintf(p, 512, "%s/%s.gguf", dir ? dir : "models", name);
    if (access(p, R_OK) == 0)
        return p;
    vq_test_checkf(0, __FILE__, __LINE__, "model %s missing: run `bash scripts/fetch-model.sh %s`", p, name);
    return NULL;
}

const char *vq_test_data(const char *rel)
{
    static char path[4][512];
    static int slot;
    char *p = path[slot++ & 3];
    const char *dir = getenv("VQ_SHARED_DATA");
    snprintf(p, 512, "%s/%s", dir ? dir : "../shared/data", rel);
    if (access(p, R_OK) == 0)
        return p;
    vq_test_checkf(0, __FILE__, __LINE__, "data file %s missing", p);
    return NULL;
}

const char *vq_test_tmpdir(void)
{
    static char dir[256];
    if (!dir[0]) {
        const char *b = getenv("VQ_BUILD");
        snprintf(dir, sizeof dir, "%s/tmp/%ld", b ? b : "build", (long)getpid());
        char cmd[300];
        snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot create %s\n", dir);
    }
    return dir;
}

int vq_test_run(const char *cmd, char *out, size_t cap)
{
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

const char *vq_test_cli(void)
{
    static char path[512];
    const char *b = getenv("VQ_BUILD");
    snprintf(path, sizeof path, "%s/veloxquant", b && *b ? b : "build");
    FILE *f = fopen(path, "r");
    vq_test_checkf(f != NULL, __FILE__, __LINE__, "%s not built (run `make` first)", path);
    if (!f)
        return NULL;
    fclose(f);
    return path;
}
