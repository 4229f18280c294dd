/* test_catalogue.c -- the bad-input catalogue, end to end through the CLI.
 *
 * Every case runs build/veloxquant (VQ_BUILD) in a fresh empty working
 * directory with TMPDIR pointing at an empty directory of its own, on input
 * files made here (tiny GGUF models written with tests/util, cut, patched or
 * rewritten; saved caches and calibration files made by the CLI or the
 * library). A case that must be refused passes when:
 *   - the process exits normally with a status in 1..127 (no signal, no
 *     sanitizer report);
 *   - exactly one stderr line starts with "veloxquant[ COMMAND]: " (the
 *     message; progress lines may precede it, usage text follow it) and it
 *     contains every expected word (the problem, and the file where there
 *     is one);
 *   - stdout is empty (no partial output), the working directory and TMPDIR
 *     are still empty, and the inputs directory holds exactly the inputs.
 * A few inputs are valid and must be handled (exit 0): invalid UTF-8 and NUL
 * bytes in text are tokenized byte for byte. The case list, with what each
 * checks, is in docs/SECURITY.md ("Bad-input catalogue"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codec/calib_set.h"
#include "core/crc32.h"
#include "core/file.h"
#include "core/io.h"
#include "gguf_writer.h"
#include "model/gguf.h"
#include "model/quants.h"
#include "test.h"
#include "tiny_model.h"
#include "veloxquant.h"

enum { REFUSE = 0, ACCEPT = 1 };

static char g_cli[PATH_MAX], g_in[PATH_MAX], g_work[PATH_MAX], g_smollm[PATH_MAX];
static int g_case;

/* ---- files ------------------------------------------------------------------ */

static const char *in_path(const char *name)
{
    static char p[8][PATH_MAX + 64];
    static int slot;
    char *s = p[slot++ & 7];
    snprintf(s, PATH_MAX + 64, "%s/%s", g_in, name);
    return s;
}

static void write_in(const char *name, const void *data, size_t n)
{
    CHECKF(vq_file_write_buffer(in_path(name), data, n, NULL) == VQ_OK, "cannot write input %s", name);
}

static uint8_t *read_in(const char *name, size_t *n)
{
    uint8_t *b = NULL;
    *n = 0;
    CHECKF(vq_file_read_all(in_path(name), (size_t)1 << 31, &b, n, NULL) == VQ_OK, "cannot read %s", name);
    return b;
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static char *slurp_text(const char *path)
{
    uint8_t *b = NULL;
    size_t n = 0;
    if (vq_file_read_all(path, 1 << 24, &b, &n, NULL) != VQ_OK)
        return NULL;
    char *s = malloc(n + 1);
    memcpy(s, b, n);
    s[n] = '\0';
    free(b);
    return s;
}

/* ---- running one case ---------------------------------------------------------- */

/* Run the CLI with argv (NULL-terminated, argv[0] = the subcommand) in a
 * fresh directory; check the outcome as the file comment says. needles:
 * NULL-terminated words the first stderr line must contain. */
static void run_case(const char *what, int expect, const char *const *needles, const char *const *args)
{
    g_case++;
    char dir[PATH_MAX + 32], tmp[PATH_MAX + 40], out[PATH_MAX + 40], err[PATH_MAX + 40];
    snprintf(dir, sizeof dir, "%s/case%02d", g_work, g_case);
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    snprintf(out, sizeof out, "%s/out%02d.txt", g_work, g_case);
    snprintf(err, sizeof err, "%s/err%02d.txt", g_work, g_case);
    mkdir(dir, 0755);
    mkdir(tmp, 0755);
    int n_in = count_entries(g_in);
    const char *argv[40];
    int argc = 0;
    argv[argc++] = g_cli;
    for (int i = 0; args[i] && argc < 39; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        if (chdir(dir) != 0)
            _exit(126);
        setenv("TMPDIR", tmp, 1);
        setenv("VQ_THREADS", "1", 1);
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo < 0 || fe < 0)
            _exit(126);
        dup2(fo, 1);
        dup2(fe, 2);
        execv(g_cli, (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    char *so = slurp_text(out), *se = slurp_text(err);
    /* the message: the first stderr line starting with "veloxquant" (progress
     * lines of long commands may come before it), else the first line */
    char first[1024] = "";
    const char *msg = se;
    for (const char *l = se; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
        if (strncmp(l, "veloxquant", 10) == 0) {
            msg = l;
            break;
        }
    if (msg) {
        size_t k = strcspn(msg, "\n");
        snprintf(first, sizeof first, "%.*s", (int)(k < sizeof first - 1 ? k : sizeof first - 1), msg);
    }
    int exited = WIFEXITED(status), code = exited ? WEXITSTATUS(status) : -1;
    printf("case %02d %-52s exit %3d  %s\n", g_case, what, exited ? code : -WTERMSIG(status), first);
    int sanitizer = se && (strstr(se, "runtime error") || strstr(se, "Sanitizer") || strstr(se, "==ERROR"));
    CHECKF(!sanitizer, "case %d (%s): sanitizer report:\n%s", g_case, what, se ? se : "");
    if (expect == REFUSE) {
        CHECKF(exited && code >= 1 && code <= 127, "case %d (%s): exit status %d (signal %d), want 1..127", g_case,
               what, code, exited ? 0 : WTERMSIG(status));
        CHECKF(strncmp(first, "veloxquant", 10) == 0 && (first[10] == ' ' || first[10] == ':'),
               "case %d (%s): first stderr line '%s'", g_case, what, first);
        for (int i = 0; needles && needles[i]; i++)
            CHECKF(strstr(first, needles[i]) != NULL, "case %d (%s): message '%s' does not name '%s'", g_case, what,
                   first, needles[i]);
        int msgs = 0;
        for (const char *l = se; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
            msgs += strncmp(l, "veloxquant", 10) == 0;
        CHECKF(msgs == 1, "case %d (%s): %d message lines", g_case, what, msgs);
        CHECKF(so && so[0] == '\0', "case %d (%s): output on stdout: '%.80s'", g_case, what, so ? so : "");
        CHECKF(count_entries(dir) == 1, "case %d (%s): files left in the working directory", g_case, what);
    } else {
        CHECKF(exited && code == 0, "case %d (%s): exit %d, want 0: %s", g_case, what, code, first);
    }
    CHECKF(count_entries(tmp) == 0, "case %d (%s): files left in TMPDIR", g_case, what);
    if (expect == REFUSE) /* an accepted case may write its output there */
        CHECKF(count_entries(g_in) == n_in, "case %d (%s): the inputs directory changed (%d -> %d entries)", g_case,
               what, n_in, count_entries(g_in));
    free(so);
    free(se);
}

#define ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define WORDS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* ---- GGUF files ---------------------------------------------------------------- */

static const vq_tiny_spec k_tiny = { "llama", 2, 64, 128, 2, 1, 32, 300, 0, 10000.0f, 1e-5f, VQ_W_F32, 0, 1, 9 };

static uint8_t *tiny_bytes(size_t *n)
{
    const char *p = in_path("tiny-src.gguf");
    CHECK(vq_tiny_write(&k_tiny, p) == 0);
    size_t len = 0;
    uint8_t *b = NULL;
    CHECK(vq_file_read_all(p, 1 << 26, &b, &len, NULL) == VQ_OK);
    *n = len;
    return b;
}

/* Byte offsets of a GGUF's sections, found by walking the format. */
typedef struct {
    size_t kv_start, first_kv_end, kv_end, first_ti_end, ti_end, data;
    size_t first_tensor_off_field; /* where tensor 0's offset is stored */
    size_t first_tensor_type_field;
    size_t first_tensor_ne0_field;
} gguf_layout;

static size_t skip_value(const uint8_t *b, size_t o, uint32_t t)
{
    static const size_t sz[13] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
    if (t == VQ_GGUF_STRING)
        return o + 8 + (size_t)vq_get_u64(b + o);
    if (t == VQ_GGUF_ARRAY) {
        uint32_t et = vq_get_u32(b + o);
        uint64_t n = vq_get_u64(b + o + 4);
        o += 12;
        for (uint64_t i = 0; i < n; i++)
            o = skip_value(b, o, et);
        return o;
    }
    return o + sz[t];
}

static gguf_layout layout(const uint8_t *b, size_t len)
{
    gguf_layout L = { 0 };
    uint64_t nt = vq_get_u64(b + 8), nkv = vq_get_u64(b + 16);
    size_t o = 24;
    L.kv_start = o;
    for (uint64_t i = 0; i < nkv; i++) {
        o += 8 + (size_t)vq_get_u64(b + o);
        uint32_t t = vq_get_u32(b + o);
        o = skip_value(b, o + 4, t);
        if (i == 0)
            L.first_kv_end = o;
    }
    L.kv_end = o;
    for (uint64_t i = 0; i < nt; i++) {
        o += 8 + (size_t)vq_get_u64(b + o);
        uint32_t nd = vq_get_u32(b + o);
        if (i == 0)
            L.first_tensor_ne0_field = o + 4;
        o += 4 + 8 * (size_t)nd;
        if (i == 0) {
            L.first_tensor_type_field = o;
            L.first_tensor_off_field = o + 4;
        }
        o += 12;
        if (i == 0)
            L.first_ti_end = o;
    }
    L.ti_end = o;
    L.data = (o + 31) / 32 * 32;
    CHECK(L.data < len);
    return L;
}

/* Rewrite a GGUF through the writer: keep every key (except `drop_key`),
 * add the tokenizer of n_tok tokens when n_tok > 0, keep every tensor except
 * `drop_tensor`, store `retype` (if not NULL) as I8 (a type the runtime
 * cannot compute with). */
static void rewrite(const uint8_t *src, size_t n, const char *out, const char *drop_key, const char *drop_tensor,
                    const char *retype, int n_tok, const char *arch)
{
    vq_gguf *g = NULL;
    char err[256];
    uint8_t *copy = malloc(n);
    memcpy(copy, src, n);
    CHECK(vq_gguf_open_memory(copy, n, &g, err) == VQ_OK);
    if (!g) {
        free(copy);
        return;
    }
    vq_gw *w = vq_gw_begin(3);
    for (uint64_t i = 0; i < vq_gguf_n_kv(g); i++) {
        vq_gguf_str k = vq_gguf_kv_key(g, i);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)k.len, k.ptr);
        if (drop_key && strcmp(key, drop_key) == 0)
            continue;
        uint32_t t = 0;
        vq_gguf_kv_type(g, i, &t, NULL, NULL);
        uint32_t u;
        float f;
        vq_gguf_str s;
        if (arch && strcmp(key, "general.architecture") == 0)
            vq_gw_add_str(w, key, arch);
        else if (t == VQ_GGUF_STRING && vq_gguf_get_str(g, key, &s)) {
            char v[512];
            snprintf(v, sizeof v, "%.*s", (int)s.len, s.ptr);
            vq_gw_add_str(w, key, v);
        } else if (t == VQ_GGUF_UINT32 && vq_gguf_get_u32(g, key, &u))
            vq_gw_add_u32(w, key, u);
        else if (t == VQ_GGUF_FLOAT32 && vq_gguf_get_f32(g, key, &f))
            vq_gw_add_f32(w, key, f);
        else
            CHECKF(0, "rewrite: key %s of type %u not handled", key, t);
    }
    if (n_tok > 0) {
        const char **toks = malloc((size_t)n_tok * sizeof *toks);
        char(*buf)[16] = malloc((size_t)n_tok * sizeof *buf);
        for (int i = 0; i < n_tok; i++) {
            snprintf(buf[i], 16, "t%d", i);
            toks[i] = buf[i];
        }
        toks[0] = "t", toks[1] = "1", toks[2] = "t1"; /* "t" + "1" -> "t1" */
        vq_gw_add_str(w, "tokenizer.ggml.model", "gpt2");
        vq_gw_add_str(w, "tokenizer.ggml.pre", "gpt2");
        vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", (uint64_t)n_tok, toks);
        const char *merges[1] = { "t 1" };
        vq_gw_add_arr_str(w, "tokenizer.ggml.merges", 1, merges);
        free(toks);
        free(buf);
    }
    for (uint64_t i = 0; i < vq_gguf_n_tensors(g); i++) {
        const vq_gguf_tensor *t = vq_gguf_tensor_at(g, i);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        if (drop_tensor && strcmp(name, drop_tensor) == 0)
            continue;
        if (retype && strcmp(name, retype) == 0) {
            uint64_t elems = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
            uint8_t *z = calloc((size_t)elems, 1);
            vq_gw_add_tensor(w, name, t->n_dims, t->ne, 24 /* GGML I8 */, z);
            free(z);
        } else {
            vq_gw_add_tensor(w, name, t->n_dims, t->ne, t->type, t->data);
        }
    }
    CHECK(vq_gw_write_file(w, in_path(out)) == 0);
    vq_gw_free(w);
    vq_gguf_close(g);
    free(copy);
}

static void gguf_cases(void)
{
    size_t n = 0;
    uint8_t *b = tiny_bytes(&n);
    if (!b)
        return;
    gguf_layout L = layout(b, n);
    remove(in_path("tiny-src.gguf"));
    write_in("tiny.gguf", b, n);

    /* the tiny model itself loads (the catalogue's inputs differ from it
     * only in the defect each case names) */
    run_case("valid tiny model (control)", ACCEPT, NULL, ARGS("inspect", in_path("tiny.gguf")));

    run_case("missing file", REFUSE, WORDS("cannot open", "no-such.gguf"),
             ARGS("inspect", in_path("no-such.gguf")));
    run_case("a directory as the model", REFUSE, WORDS("not a regular file", g_in), ARGS("inspect", g_in));
    write_in("empty.gguf", "", 0);
    run_case("empty file", REFUSE, WORDS("empty.gguf"), ARGS("inspect", in_path("empty.gguf")));

    /* truncated at every section boundary */
    struct {
        const char *what, *file;
        size_t at;
    } cuts[] = {
        { "truncated after the magic", "cut-magic.gguf", 4 },
        { "truncated after the version", "cut-version.gguf", 8 },
        { "truncated after the tensor count", "cut-ntensors.gguf", 16 },
        { "truncated after the header (no key/values)", "cut-header.gguf", L.kv_start },
        { "truncated inside the first key/value", "cut-kv0.gguf", L.first_kv_end - 2 },
        { "truncated after the key/values", "cut-kvs.gguf", L.kv_end },
        { "truncated inside the first tensor info", "cut-ti0.gguf", L.first_ti_end - 3 },
        { "truncated after the tensor infos", "cut-tis.gguf", L.ti_end },
        { "truncated at the start of tensor data", "cut-data0.gguf", L.data },
        { "truncated inside the tensor data", "cut-data.gguf", L.data + (n - L.data) / 2 },
        { "truncated by one byte", "cut-last.gguf", n - 1 },
    };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        write_in(cuts[i].file, b, cuts[i].at);
        run_case(cuts[i].what, REFUSE, WORDS(cuts[i].file), ARGS("inspect", in_path(cuts[i].file)));
    }

    uint8_t *m = malloc(n);
#define PATCHED(file, what, needle, ...)                                                              \
    do {                                                                                               \
        memcpy(m, b, n);                                                                               \
        __VA_ARGS__;                                                                                   \
        write_in(file, m, n);                                                                          \
        run_case(what, REFUSE, WORDS(needle, file), ARGS("inspect", in_path(file)));                   \
    } while (0)
    PATCHED("magic.gguf", "wrong magic", "magic", memcpy(m, "GGUX", 4));
    PATCHED("v1.gguf", "GGUF version 1", "version", vq_put_u32(m + 4, 1));
    PATCHED("v99.gguf", "GGUF version 99", "version", vq_put_u32(m + 4, 99));
    PATCHED("ntensors.gguf", "absurd tensor count (2^60)", "tensor", vq_put_u64(m + 8, 1ULL << 60));
    PATCHED("nkv.gguf", "absurd key/value count (2^62)", "gguf", vq_put_u64(m + 16, 1ULL << 62));
    PATCHED("keylen.gguf", "absurd key length", "gguf", vq_put_u64(m + L.kv_start, 1ULL << 50));
    PATCHED("dims.gguf", "absurd tensor dimension (2^40)", "gguf", vq_put_u64(m + L.first_tensor_ne0_field, 1ULL << 40));
    PATCHED("offset.gguf", "tensor data outside the file", "gguf",
            vq_put_u64(m + L.first_tensor_off_field, (uint64_t)n * 64));
    PATCHED("type99.gguf", "unknown tensor type 99", "type", vq_put_u32(m + L.first_tensor_type_field, 99));
#undef PATCHED
    free(m);

    /* a second tensor over the first one's data: rewrite with both offsets 0 */
    {
        vq_gw *w = vq_gw_begin(3);
        vq_gw_add_str(w, "general.architecture", "llama");
        uint64_t ne[2] = { 32, 2 };
        vq_gw_add_tensor_raw(w, "a.weight", 2, ne, VQ_W_F32, 0);
        vq_gw_add_tensor_raw(w, "b.weight", 2, ne, VQ_W_F32, 0);
        uint8_t *buf;
        size_t len;
        vq_gw_finish(w, &buf, &len);
        vq_gw_free(w);
        uint8_t *big = calloc(len + 512, 1);
        memcpy(big, buf, len);
        write_in("overlap.gguf", big, len + 512);
        free(big);
        free(buf);
        run_case("two tensors over the same bytes", REFUSE, WORDS("overlap", "overlap.gguf"),
                 ARGS("inspect", in_path("overlap.gguf")));
    }

    /* model-level refusals (the GGUF itself is well formed) */
    rewrite(b, n, "notensor.gguf", NULL, "token_embd.weight", NULL, 0, NULL);
    run_case("required tensor missing", REFUSE, WORDS("token_embd", "notensor.gguf"),
             ARGS("inspect", in_path("notensor.gguf")));
    rewrite(b, n, "i8.gguf", NULL, NULL, "blk.0.attn_q.weight", 0, NULL);
    run_case("unsupported tensor type (I8)", REFUSE, WORDS("blk.0.attn_q.weight", "i8.gguf"),
             ARGS("inspect", in_path("i8.gguf")));
    rewrite(b, n, "arch.gguf", NULL, NULL, NULL, 0, "mamba");
    run_case("unsupported architecture", REFUSE, WORDS("mamba", "arch.gguf"), ARGS("inspect", in_path("arch.gguf")));
    rewrite(b, n, "nolayers.gguf", "llama.block_count", NULL, NULL, 0, NULL);
    run_case("required key missing", REFUSE, WORDS("block_count", "nolayers.gguf"),
             ARGS("inspect", in_path("nolayers.gguf")));
    rewrite(b, n, "vocab.gguf", NULL, NULL, NULL, k_tiny.n_vocab + 50, NULL);
    run_case("vocabulary larger than the embeddings", REFUSE, WORDS("tokens", "vocab.gguf"),
             ARGS("generate", "--model", in_path("vocab.gguf"), "--prompt", "t1", "--max-tokens", "1"));
    rewrite(b, n, "notok.gguf", NULL, NULL, NULL, 0, NULL);
    run_case("generate with a model without a tokenizer", REFUSE, WORDS("tokeniz"),
             ARGS("generate", "--model", in_path("notok.gguf"), "--prompt", "hi", "--max-tokens", "1"));
    free(b);
}

/* ---- options, prompts and texts (the real default model) ------------------------- */

static void option_cases(void)
{
    const char *M = g_smollm;
    run_case("unknown codec method", REFUSE, WORDS("foo"),
             ARGS("generate", "--model", M, "--prompt", "hi", "--keys", "foo"));
    run_case("unknown codec parameter", REFUSE, WORDS("bitz"),
             ARGS("generate", "--model", M, "--prompt", "hi", "--keys", "kivi:bitz=2"));
    run_case("codec parameter out of range", REFUSE, WORDS("bits"),
             ARGS("generate", "--model", M, "--prompt", "hi", "--keys", "kivi:bits=9"));
    run_case("codec parameter given twice", REFUSE, WORDS("bits", "twice"),
             ARGS("generate", "--model", M, "--prompt", "hi", "--keys", "kivi:bits=2,bits=4"));
    run_case("cache flag given twice", REFUSE, WORDS("--keys", "twice"),
             ARGS("generate", "--model", M, "--prompt", "hi", "--keys", "q8_0", "--keys", "q4_0"));
    run_case("cache field in --cache and a flag", REFUSE, WORDS("keys"),
             ARGS("generate", "--model", M, "--prompt", "hi", "--cache", "keys=q8_0", "--keys", "q4_0"));
    run_case("unknown eviction policy", REFUSE, WORDS("lru"),
             ARGS("generate", "--model", M, "--prompt", "hi", "--evict", "lru:budget=4"));
    run_case("non-numeric --max-tokens", REFUSE, WORDS("--max-tokens"),
             ARGS("generate", "--model", M, "--prompt", "hi", "--max-tokens", "abc"));
    run_case("negative --ctx", REFUSE, WORDS("--ctx"), ARGS("generate", "--model", M, "--prompt", "hi", "--ctx", "-5"));
    run_case("unknown option", REFUSE, WORDS("--bogus"),
             ARGS("generate", "--model", M, "--prompt", "hi", "--bogus", "1"));
    run_case("unknown command", REFUSE, WORDS("frobnicate"), ARGS("frobnicate"));
    run_case("unknown model name", REFUSE, WORDS("no-such-model"),
             ARGS("generate", "--model", "no-such-model", "--prompt", "hi"));
    char longp[4000];
    size_t o = 0;
    for (int i = 0; i < 300; i++)
        o += (size_t)snprintf(longp + o, sizeof longp - o, "word ");
    run_case("prompt longer than the context", REFUSE, WORDS("do not fit"),
             ARGS("generate", "--model", M, "--prompt", longp, "--ctx", "64", "--max-tokens", "2"));
    run_case("invalid UTF-8 in the prompt (handled)", ACCEPT, NULL,
             ARGS("generate", "--model", M, "--prompt", "caf\xc3 \xff\xfe\x80 ok", "--max-tokens", "2", "--temp", "0"));
    /* NUL bytes cannot be passed in argv: a text file carries them */
    static const char nul_text[] = "The cat\0 sat on\0\0 the mat. \xff The dog ran. It was a sunny day and the "
                                   "children played outside until evening, then went home for dinner.";
    write_in("nul.txt", nul_text, sizeof nul_text - 1);
    run_case("NUL bytes and invalid UTF-8 in a text file (handled)", ACCEPT, NULL,
             ARGS("ppl", "--model", M, "--file", in_path("nul.txt"), "--ctx", "16", "--chunks", "1"));
    run_case("text file missing", REFUSE, WORDS("missing.txt"),
             ARGS("ppl", "--model", M, "--file", in_path("missing.txt"), "--ctx", "16"));
    write_in("tiny.txt", "a", 1);
    run_case("text file shorter than one chunk", REFUSE, WORDS("tiny.txt"),
             ARGS("ppl", "--model", M, "--file", in_path("tiny.txt"), "--ctx", "64"));
}

/* ---- the option parser: the same wording from every command ---------------------- */

static void parser_cases(void)
{
    const char *M = g_smollm;
    run_case("inspect --model (control)", ACCEPT, NULL, ARGS("inspect", "--model", in_path("tiny.gguf")));
    run_case("option without its value", REFUSE, WORDS("--prompt", "needs a value"),
             ARGS("generate", "--model", M, "--prompt"));
    run_case("abbreviated option", REFUSE, WORDS("unknown option", "--mod"), ARGS("ppl", "--mod", M));
    run_case("argument that is not an option", REFUSE, WORDS("unexpected argument", "stray"),
             ARGS("needle", "--model", M, "--ctx", "64", "stray"));
    run_case("required options missing", REFUSE, WORDS("--file", "--ctx", "required"), ARGS("ppl", "--model", M));
    run_case("value out of range", REFUSE, WORDS("bad value for --budget", "40"),
             ARGS("tune", "--model", M, "--budget", "40"));
    run_case("inspect: the model given twice", REFUSE, WORDS("twice"),
             ARGS("inspect", "--model", in_path("tiny.gguf"), in_path("tiny.gguf")));
}

/* ---- saved caches and calibration files --------------------------------------------- */

static void flip_bit(const char *src, const char *dst, size_t at, int bit)
{
    size_t n = 0;
    uint8_t *b = read_in(src, &n);
    if (!b)
        return;
    if (at >= n)
        at = n / 2;
    b[at] ^= (uint8_t)(1u << bit);
    write_in(dst, b, n);
    free(b);
}

static void copy_in(const char *src, const char *dst)
{
    size_t n = 0;
    uint8_t *b = read_in(src, &n);
    if (b)
        write_in(dst, b, n);
    free(b);
}

/* dst.prompt: the sidecar src.prompt made to match the cache file dst
 * (its size and trailing CRC), so the cache file's own checks are reached */
static void matching_sidecar(const char *src, const char *dst)
{
    char s[256], d[256];
    snprintf(s, sizeof s, "%s.prompt", src);
    snprintf(d, sizeof d, "%s.prompt", dst);
    size_t n = 0, nc = 0;
    uint8_t *b = read_in(s, &n), *c = read_in(dst, &nc);
    if (b && c && n >= 40 && nc >= 4) { /* sidecar version 2 (docs/FORMATS.md) */
        vq_put_u64(b + 20, nc);
        vq_put_u32(b + 28, vq_get_u32(c + nc - 4));
        vq_put_u32(b + n - 4, vq_crc32(0, b, n - 4));
        write_in(d, b, n);
    }
    free(b);
    free(c);
}

static void saved_cache_cases(void)
{
    const char *M = g_smollm;
    const char *P = "The capital of France is";
    /* made in a case directory, then moved into the inputs */
    const char *saved = in_path("saved.vqkc");
    char side[PATH_MAX + 80];
    snprintf(side, sizeof side, "%s.prompt", saved);
    run_case("save a prompt cache (control)", ACCEPT, NULL,
             ARGS("generate", "--model", M, "--prompt", P, "--keys", "q8_0", "--values", "q4_0", "--save-cache",
                  saved, "--max-tokens", "1", "--temp", "0"));
    CHECK(access(saved, R_OK) == 0 && access(side, R_OK) == 0);
    run_case("load it (control)", ACCEPT, NULL,
             ARGS("generate", "--model", M, "--prompt", P, "--load-cache", saved, "--max-tokens", "1", "--temp", "0"));

    run_case("saved cache of another prompt", REFUSE, WORDS("saved.vqkc"),
             ARGS("generate", "--model", M, "--prompt", "Another prompt entirely", "--load-cache", saved,
                  "--max-tokens", "1"));
    const char *gemma = vq_test_model("gemma3-270m");
    if (gemma) {
        char g[PATH_MAX];
        if (realpath(gemma, g))
            run_case("saved cache of another model", REFUSE, WORDS("another model"),
                     ARGS("generate", "--model", g, "--prompt", P, "--load-cache", saved, "--max-tokens", "1"));
    }
    run_case("--load-cache with another cache config", REFUSE, WORDS("--load-cache"),
             ARGS("generate", "--model", M, "--prompt", P, "--load-cache", saved, "--keys", "q4_0"));
    /* the cache file changed under its sidecar: bit flip, version, truncation */
    flip_bit("saved.vqkc", "flip.vqkc", 5000, 3);
    copy_in("saved.vqkc.prompt", "flip.vqkc.prompt");
    run_case("bit-flipped saved cache", REFUSE, WORDS("flip.vqkc"),
             ARGS("generate", "--model", M, "--prompt", P, "--load-cache", in_path("flip.vqkc"), "--max-tokens", "1"));
    {
        size_t n = 0;
        uint8_t *b = read_in("saved.vqkc", &n);
        if (b) {
            vq_put_u32(b + 4, 7); /* another format version, checksum made right */
            vq_put_u32(b + n - 4, vq_crc32(0, b, n - 4));
            write_in("v7.vqkc", b, n);
            write_in("cut.vqkc", b, n / 3);
            free(b);
        }
        matching_sidecar("saved.vqkc", "v7.vqkc");
        copy_in("saved.vqkc.prompt", "cut.vqkc.prompt");
    }
    run_case("saved cache of another format version", REFUSE, WORDS("v7.vqkc", "version 7"),
             ARGS("generate", "--model", M, "--prompt", P, "--load-cache", in_path("v7.vqkc"), "--max-tokens", "1"));
    run_case("truncated saved cache", REFUSE, WORDS("cut.vqkc"),
             ARGS("generate", "--model", M, "--prompt", P, "--load-cache", in_path("cut.vqkc"), "--max-tokens", "1"));
    {
        size_t n = 0;
        uint8_t *b = read_in("saved.vqkc", &n);
        if (b) {
            write_in("cut2.vqkc", b, n / 2); /* its sidecar made to match: the loader sees the cut */
            free(b);
        }
        matching_sidecar("saved.vqkc", "cut2.vqkc");
    }
    run_case("truncated saved cache, sidecar matching", REFUSE, WORDS("cut2.vqkc", "checksum"),
             ARGS("generate", "--model", M, "--prompt", P, "--load-cache", in_path("cut2.vqkc"), "--max-tokens", "1"));
    flip_bit("saved.vqkc.prompt", "sidecar.vqkc.prompt", 20, 0);
    copy_in("saved.vqkc", "sidecar.vqkc");
    run_case("bit-flipped prompt sidecar", REFUSE, WORDS("sidecar.vqkc"),
             ARGS("generate", "--model", M, "--prompt", P, "--load-cache", in_path("sidecar.vqkc"), "--max-tokens",
                  "1"));
    copy_in("saved.vqkc", "alone.vqkc");
    run_case("saved cache without its sidecar", REFUSE, WORDS("alone.vqkc"),
             ARGS("generate", "--model", M, "--prompt", P, "--load-cache", in_path("alone.vqkc"), "--max-tokens",
                  "1"));
    run_case("saving into a missing directory", REFUSE, WORDS("no-dir"),
             ARGS("generate", "--model", M, "--prompt", P, "--keys", "q8_0", "--save-cache",
                  in_path("no-dir/x.vqkc"), "--max-tokens", "1"));
    mkdir(in_path("adir"), 0755);
    run_case("saving over a directory", REFUSE, WORDS("adir"),
             ARGS("generate", "--model", M, "--prompt", P, "--keys", "q8_0", "--save-cache", in_path("adir"),
                  "--max-tokens", "1"));
}

/* A whole-model calibration file for the tiny model (head_dim 32, 2
 * layers), made with the library. */
static void make_tiny_calibration(void)
{
    vq_model *m = NULL;
    CHECK_OK(vq_model_load(in_path("tiny.gguf"), &m));
    if (!m)
        return;
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    CHECK_OK(vq_cache_config_parse("keys=vecinfer:sub_dim=8,bits=4 values=vecinfer:sub_dim=8,bits=4", &cfg));
    CHECK_OK(vq_cache_create_for_calibration(m, cfg, &c));
    if (c) {
        enum { N = 64, D = 32 };
        static float k[N * D], v[N * D];
        for (int i = 0; i < N * D; i++)
            k[i] = (float)((i * 7919) % 211) / 211.0f - 0.5f, v[i] = (float)((i * 104729) % 97) / 97.0f - 0.5f;
        for (int l = 0; l < k_tiny.n_layers; l++)
            CHECK_OK(vq_cache_calibrate(c, l, k, v, N));
        CHECK_OK(vq_cache_save_calibration(c, in_path("tiny.vqcm")));
        /* one codec's state alone (head_dim 32) */
        vq_codec *cd = NULL;
        CHECK_OK(vq_codec_create("vecinfer:sub_dim=8,bits=4", 32, VQ_ROLE_KEY, 1, &cd));
        size_t len = 0;
        if (cd && vq_codec_calibrate(cd, k, N) == VQ_OK && vq_codec_state_write(cd, NULL, 0, &len) == VQ_OK) {
            uint8_t *b = malloc(len);
            CHECK_OK(vq_codec_state_write(cd, b, len, &len));
            write_in("hd32.vqcs", b, len);
            free(b);
        }
        vq_codec_free(cd);
    }
    vq_cache_free(c);
    vq_cache_config_free(cfg);
    vq_model_free(m);
}

static void calibration_cases(void)
{
    const char *M = g_smollm;
    make_tiny_calibration();
    char spec[PATH_MAX + 64];
    snprintf(spec, sizeof spec, "vecinfer:sub_dim=8,bits=4,calib=%s", in_path("tiny.vqcm"));
    run_case("calibration file of another model", REFUSE, WORDS("another model", "tiny.vqcm"),
             ARGS("generate", "--model", M, "--prompt", "hi", "--keys", spec, "--max-tokens", "1"));
    snprintf(spec, sizeof spec, "vecinfer:sub_dim=8,bits=4,calib=%s", in_path("hd32.vqcs"));
    run_case("calibration state for another head_dim", REFUSE, WORDS("head_dim"),
             ARGS("generate", "--model", M, "--prompt", "hi", "--keys", spec, "--max-tokens", "1"));
    flip_bit("tiny.vqcm", "flip.vqcm", 30, 2);
    snprintf(spec, sizeof spec, "vecinfer:sub_dim=8,bits=4,calib=%s", in_path("flip.vqcm"));
    run_case("bit-flipped calibration file", REFUSE, WORDS("flip.vqcm"),
             ARGS("generate", "--model", in_path("tiny.gguf"), "--prompt", "hi", "--keys", spec, "--max-tokens", "1"));
    snprintf(spec, sizeof spec, "vecinfer:sub_dim=8,bits=8,calib=%s", in_path("tiny.vqcm"));
    run_case("calibration file for other codec parameters", REFUSE, WORDS("tiny.vqcm"),
             ARGS("generate", "--model", in_path("tiny.gguf"), "--prompt", "hi", "--keys", spec, "--max-tokens", "1"));
    snprintf(spec, sizeof spec, "vecinfer:sub_dim=8,bits=4,calib=%s", in_path("no-such.vqcm"));
    run_case("calibration file missing", REFUSE, WORDS("no-such.vqcm"),
             ARGS("generate", "--model", M, "--prompt", "hi", "--keys", spec, "--max-tokens", "1"));
    char text[8192];
    size_t o = 0;
    for (int i = 0; i < 200; i++)
        o += (size_t)snprintf(text + o, sizeof text - o, "Sentence %d of the calibration text. ", i);
    write_in("calib.txt", text, o);
    run_case("calibrate --out into a missing directory", REFUSE, WORDS("no-dir"),
             ARGS("calibrate", "--model", M, "--method", "vecinfer", "--file", in_path("calib.txt"), "--tokens", "64",
                  "--out", in_path("no-dir/c.vqcm")));
}

int main(void)
{
    const char *b = getenv("VQ_BUILD");
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s/veloxquant", b ? b : "build");
    CHECKF(realpath(rel, g_cli) != NULL, "CLI %s missing (make cli)", rel);
    const char *sm = vq_test_model("smollm2-135m");
    if (!sm || !realpath(sm, g_smollm) || !g_cli[0])
        return vq_test_summary("catalogue");
    char tmp[PATH_MAX];
    CHECK(realpath(vq_test_tmpdir(), tmp) != NULL);
    snprintf(g_in, sizeof g_in, "%.*s/inputs", PATH_MAX - 40, tmp);
    snprintf(g_work, sizeof g_work, "%.*s/cases", PATH_MAX - 40, tmp);
    mkdir(g_in, 0755);
    mkdir(g_work, 0755);
    RUN(gguf_cases);
    RUN(option_cases);
    RUN(saved_cache_cases);
    RUN(calibration_cases);
    RUN(parser_cases);
    printf("catalogue: %d cases\n", g_case);
    CHECKF(g_case >= 30, "only %d cases", g_case);
    return vq_test_summary("catalogue");
}
