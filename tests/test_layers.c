/* test_layers.c -- the layer rule of src/ (docs/internals.md): a file
 * includes headers of its own folder and of the folders below it only.
 *
 *   core <- kernels <- codec <- cache <- model
 *   core <- tok <- model;  gpu: core, kernels, codec
 *
 * Reads every .c/.h/.cu/.cuh file of src/<folder>/ (run from the repo root,
 * as tests/run.sh does) and checks each `#include "dir/...` against the
 * table; a folder missing from the table is a failure too (a new folder
 * must say where it sits). Also checks that the reading found files. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

typedef struct {
    const char *dir;
    const char *may; /* space-separated folders it may include */
} layer;

static const layer LAYERS[] = {
    { "core", "core" },
    { "kernels", "core kernels" },
    { "codec", "core kernels codec" },
    { "tok", "core tok" },
    { "cache", "core kernels codec cache" },
    { "model", "core kernels codec cache tok model" },
    { "gpu", "core kernels codec gpu" },
};

static const layer *find_layer(const char *dir)
{
    for (size_t i = 0; i < sizeof LAYERS / sizeof *LAYERS; i++)
        if (strcmp(LAYERS[i].dir, dir) == 0)
            return &LAYERS[i];
    return NULL;
}

/* is `word` one of the space-separated words of `list` */
static int in_list(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ' ');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, word, n) == 0)
            return 1;
        p += len + (e != NULL);
    }
    return 0;
}

static int source_name(const char *n)
{
    const char *dot = strrchr(n, '.');
    return dot && (strcmp(dot, ".c") == 0 || strcmp(dot, ".h") == 0 || strcmp(dot, ".cu") == 0 ||
                   strcmp(dot, ".cuh") == 0);
}

/* checks one file; returns the number of includes of a folder it read */
static int check_file(const layer *L, const char *path)
{
    FILE *f = fopen(path, "r");
    CHECKF(f != NULL, "cannot open %s", path);
    if (!f)
        return 0;
    char line[1024];
    int n = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        const char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, "#include \"", 10) != 0)
            continue;
        p += 10;
        const char *slash = strchr(p, '/'), *quote = strchr(p, '"');
        if (!slash || !quote || slash > quote)
            continue; /* "veloxquant.h" and the like: the public headers */
        char dir[64];
        size_t len = (size_t)(slash - p);
        if (len >= sizeof dir)
            len = sizeof dir - 1;
        memcpy(dir, p, len);
        dir[len] = '\0';
        n++;
        CHECKF(in_list(L->may, dir), "%s:%d includes %.*s (src/%s may include: %s)", path, lineno,
               (int)(quote - p), p, L->dir, L->may);
    }
    fclose(f);
    return n;
}

static void test_layer_rule(void)
{
    DIR *src = opendir("src");
    CHECKF(src != NULL, "cannot open src/ (run from the repository root)");
    if (!src)
        return;
    int folders = 0, files = 0, includes = 0;
    struct dirent *e;
    while ((e = readdir(src)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char dpath[512];
        snprintf(dpath, sizeof dpath, "src/%s", e->d_name);
        DIR *d = opendir(dpath);
        if (!d)
            continue; /* a file directly in src/ */
        const layer *L = find_layer(e->d_name);
        CHECKF(L != NULL, "src/%s is not in the layer table of tests/test_layers.c", e->d_name);
        folders++;
        struct dirent *f;
        while (L && (f = readdir(d)) != NULL) {
            if (!source_name(f->d_name))
                continue;
            char fpath[1024];
            snprintf(fpath, sizeof fpath, "%s/%s", dpath, f->d_name);
            includes += check_file(L, fpath);
            files++;
        }
        closedir(d);
    }
    closedir(src);
    CHECKF(folders >= 6 && files >= 100 && includes >= 100, "read %d folders, %d files, %d includes", folders, files,
           includes);
}

static void test_in_list(void)
{
    CHECK(in_list("core kernels codec", "kernels"));
    CHECK(in_list("core kernels codec", "codec"));
    CHECK(!in_list("core kernels codec", "code"));
    CHECK(!in_list("core kernels codec", "cache"));
}

int main(void)
{
    RUN(test_in_list);
    RUN(test_layer_rule);
    return vq_test_summary("layers");
}
