/* test_faults.c -- allocation failures and full disks.
 *
 * The program is linked with -Wl,--wrap=malloc,calloc,realloc,aligned_alloc,
 * free (tests/fuzz/fuzz.mk), so every allocation of the library goes through
 * the counting wrappers below. For each operation (cache creation, append
 * and attend with page allocation and eviction, save, load) the test fails
 * allocation number k for k = 0, 1, 2, ... until the operation runs without
 * reaching k, and checks each time:
 *   - the call returns VQ_ERR_NOMEM with a message (creation/load: no
 *     object); nothing leaks (live allocations back to the baseline);
 *   - data path: the cache is still usable: repeating the failed call
 *     without the fault succeeds, and every later output equals the output
 *     of a run without faults, bit for bit;
 *   - save: the previous file is unchanged and no temporary is left.
 * Then: a save that hits RLIMIT_FSIZE (a full disk; SIGXFSZ ignored, in a
 * child process) fails with VQ_ERR_IO and leaves the previous file intact;
 * temporaries of killed writers ("F.tmp.<dead pid>") are removed by the
 * next save while a live writer's is kept. */
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/file.h"
#include "test.h"
#include "veloxquant.h"

/* ---- the counting allocator ------------------------------------------------------ */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t s);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t s);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
void __wrap_free(void *p);

static long g_calls, g_fail_at = -1, g_live;
static int g_fired;
static long g_faults_total;

static int fail_now(void)
{
    long i = g_calls++;
    if (g_fail_at >= 0 && i == g_fail_at) {
        g_fired = 1;
        g_faults_total++;
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t n)
{
    if (fail_now())
        return NULL;
    void *p = __real_malloc(n);
    g_live += p != NULL;
    return p;
}

void *__wrap_calloc(size_t n, size_t s)
{
    if (fail_now())
        return NULL;
    void *p = __real_calloc(n, s);
    g_live += p != NULL;
    return p;
}

void *__wrap_realloc(void *p, size_t n)
{
    if (fail_now())
        return NULL;
    void *q = __real_realloc(p, n);
    if (!p && q)
        g_live++;
    return q;
}

void *__wrap_aligned_alloc(size_t a, size_t n)
{
    if (fail_now())
        return NULL;
    void *p = __real_aligned_alloc(a, n);
    g_live += p != NULL;
    return p;
}

void __wrap_free(void *p)
{
    if (p)
        g_live--;
    __real_free(p);
}

/* fail allocation number k from now on (k < 0: none) */
static void arm(long k)
{
    g_calls = 0;
    g_fired = 0;
    g_fail_at = k;
}

static void disarm(void) { g_fail_at = -1; }

/* ---- the cache under test ----------------------------------------------------------- */

enum { NL = 2, NKV = 2, NQ = 4, HD = 64, PREFILL = 20, STEPS = 13, MAXN = PREFILL };

static const char *const k_configs[] = {
    "keys=q4_0:rot=1 values=kivi:bits=4 page=16",
    "keys=turboquant_rvq:bits=2 values=q8_0 residual=8 page=16",
    "keys=q8_0 values=q8_0 evict=streaming_llm:sinks=2,window=12 page=16",
    "keys=kivi:bits=2 values=kivi:bits=2 evict=h2o:budget=12,sinks=1,recent=4 page=16",
    "keys=fp16 values=fp16 cross=minicache:start=0.5,threshold=0.9 page=16",
    "keys=kivi:bits=2 values=kivi:bits=2 page=32",
};
#define N_CONFIGS (sizeof k_configs / sizeof k_configs[0])
/* threads per config (0: serial): the last one's 32-token groups fill at
 * the last step and flush on the pool (src/cache/flush.c) */
static const int k_threads[N_CONFIGS] = { 0, 0, 0, 0, 0, 2 };

static float g_k[(PREFILL + STEPS) * NKV * HD], g_v[(PREFILL + STEPS) * NKV * HD];
static float g_q[(PREFILL + STEPS) * NQ * HD];
/* outputs of the run without faults: [config][step][layer][MAXN*NQ*HD] */
static float g_ref[N_CONFIGS][STEPS][NL][MAXN * NQ * HD];

static void make_data(void)
{
    uint64_t s = 12345;
    float *arrs[3] = { g_k, g_v, g_q };
    size_t ns[3] = { sizeof g_k / 4, sizeof g_v / 4, sizeof g_q / 4 };
    for (int a = 0; a < 3; a++)
        for (size_t i = 0; i < ns[a]; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            arrs[a][i] = (float)(s >> 40) / (float)(1 << 24) - 0.5f;
        }
}

static vq_cache_shape shape(vq_layer_shape *ls)
{
    for (int l = 0; l < NL; l++)
        ls[l] = (vq_layer_shape){ NKV, NQ, HD, 0, 0.0f };
    return (vq_cache_shape){ NL, ls, 77 };
}

static vq_cache *new_cache(size_t ci)
{
    vq_cache_config *cfg = NULL;
    vq_layer_shape ls[NL];
    vq_cache_shape sh = shape(ls);
    vq_cache *c = NULL;
    if (vq_cache_config_parse(k_configs[ci], &cfg) == VQ_OK)
        vq_cache_create(cfg, &sh, 5, &c);
    vq_cache_config_free(cfg);
    if (c && k_threads[ci] && vq_cache_set_n_threads(c, k_threads[ci]) != VQ_OK) {
        vq_cache_free(c);
        c = NULL;
    }
    return c;
}

static size_t step_n(int s) { return s == 0 ? PREFILL : 1; }
static int32_t step_pos(int s) { return s == 0 ? 0 : PREFILL + s - 1; }

static vq_status step_append(vq_cache *c, int s, int l)
{
    int32_t p = step_pos(s);
    return vq_cache_append(c, l, g_k + (size_t)p * NKV * HD, g_v + (size_t)p * NKV * HD, step_n(s), p);
}

static vq_status step_attend(vq_cache *c, int s, int l, float *out)
{
    return vq_cache_attend(c, l, g_q + (size_t)step_pos(s) * NQ * HD, step_n(s), NQ, 0.125f, out);
}

/* Run step s on every layer without faults; compare with the reference
 * (when ref is set) or record it. Returns 0 on a failure. */
static int run_step(vq_cache *c, size_t ci, int s, int record)
{
    static float out[MAXN * NQ * HD];
    for (int l = 0; l < NL; l++) {
        if (step_append(c, s, l) != VQ_OK || step_attend(c, s, l, out) != VQ_OK)
            return 0;
        size_t n = step_n(s) * NQ * HD;
        if (record)
            memcpy(g_ref[ci][s][l], out, n * sizeof *out);
        else if (memcmp(g_ref[ci][s][l], out, n * sizeof *out) != 0)
            return 0;
    }
    return 1;
}

/* ---- tests -------------------------------------------------------------------------- */

static void test_create(void)
{
    for (size_t ci = 0; ci < N_CONFIGS; ci++) {
        vq_cache_config *cfg = NULL;
        CHECK_OK(vq_cache_config_parse(k_configs[ci], &cfg));
        vq_layer_shape ls[NL];
        vq_cache_shape sh = shape(ls);
        long faults = 0, base = g_live;
        for (long k = 0;; k++) {
            vq_cache *c = NULL;
            arm(k);
            vq_status st = vq_cache_create(cfg, &sh, 5, &c);
            disarm();
            if (!g_fired) {
                CHECK_OK(st);
                vq_cache_free(c);
                break;
            }
            faults++;
            CHECKF(st == VQ_ERR_NOMEM && c == NULL && vq_last_error()[0],
                   "%s: allocation %ld failed: status %s, cache %p", k_configs[ci], k, vq_status_str(st), (void *)c);
            vq_cache_free(c);
            CHECKF(g_live == base, "%s: allocation %ld failed: %ld allocations leaked", k_configs[ci], k, g_live - base);
        }
        printf("create  %-80s %ld allocation points failed\n", k_configs[ci], faults);
        vq_cache_config_free(cfg);
    }
}

/* Step s of a fresh cache with allocation k failing. A failed call must
 * return VQ_ERR_NOMEM with a message. Then the cache must still be usable:
 * by default it is reset and the whole run repeated, which must give the
 * reference outputs bit for bit; with VQ_FAULTS_STRICT=1 the failed call
 * itself is repeated and the run continued (append is not failure-atomic
 * yet: see docs/SECURITY.md, "Known problems"). Returns whether the fault
 * fired. */
static int fault_step(size_t ci, int s, long k, long *bad)
{
    static float out[MAXN * NQ * HD];
    const int strict = getenv("VQ_FAULTS_STRICT") && atoi(getenv("VQ_FAULTS_STRICT")) == 1;
    long base = g_live;
    vq_cache *c = new_cache(ci);
    if (!c)
        return 0;
    int ok = 1;
    for (int t = 0; t < s && ok; t++)
        ok = run_step(c, ci, t, 0);
    CHECKF(ok, "%s: the run without faults differs before step %d", k_configs[ci], s);
    arm(k);
    int failed = 0;
    for (int l = 0; l < NL && ok && !failed; l++) {
        vq_status st = step_append(c, s, l);
        const char *what = "append";
        if (st == VQ_OK) {
            st = step_attend(c, s, l, out);
            what = "attend";
        }
        if (st != VQ_OK) {
            disarm();
            failed = 1;
            CHECKF(st == VQ_ERR_NOMEM && vq_last_error()[0], "%s step %d layer %d %s, allocation %ld failed: %s",
                   k_configs[ci], s, l, what, k, vq_status_str(st));
            if (strict) {
                if (what[0] == 'a' && what[1] == 'p')
                    st = step_append(c, s, l);
                if (st == VQ_OK || what[1] == 't')
                    st = step_attend(c, s, l, out);
                CHECKF(st == VQ_OK, "%s step %d layer %d: repeated %s: %s", k_configs[ci], s, l, what,
                       vq_status_str(st));
                failed = 0; /* continue the run from here */
            }
        }
        if (!failed && st == VQ_OK && memcmp(out, g_ref[ci][s][l], step_n(s) * NQ * HD * sizeof *out) != 0) {
            ++*bad;
            CHECKF(0, "%s step %d layer %d: output differs (allocation %ld failed)", k_configs[ci], s, l, k);
        }
    }
    disarm();
    int fired = g_fired;
    int from = s + 1;
    if (failed) { /* usable after the failure: reset, then the whole run */
        vq_cache_reset(c);
        from = 0;
    }
    for (int t = from; t < STEPS && ok; t++)
        if (!run_step(c, ci, t, 0)) {
            ++*bad;
            CHECKF(0, "%s: step %d differs after allocation %ld of step %d failed%s", k_configs[ci], t, k, s,
                   failed ? " (and a reset)" : "");
            break;
        }
    vq_cache_free(c);
    CHECKF(g_live == base, "%s step %d allocation %ld: %ld allocations leaked", k_configs[ci], s, k, g_live - base);
    return fired;
}

static void test_data_path(void)
{
    for (size_t ci = 0; ci < N_CONFIGS; ci++) {
        vq_cache *c = new_cache(ci);
        CHECKF(c != NULL, "%s refused: %s", k_configs[ci], vq_last_error());
        if (!c)
            continue;
        for (int s = 0; s < STEPS; s++)
            CHECK(run_step(c, ci, s, 1));
        vq_cache_free(c);
        long faults = 0, bad = 0;
        for (int s = 0; s < STEPS; s++)
            for (long k = 0; fault_step(ci, s, k, &bad); k++)
                faults++;
        printf("append+attend %-74s %ld allocation points failed, %ld wrong outputs\n", k_configs[ci], faults, bad);
    }
}

static uint8_t *read_file(const char *path, size_t *n)
{
    uint8_t *b = NULL;
    *n = 0;
    if (vq_file_read_all(path, 1 << 26, &b, n, NULL) != VQ_OK)
        return NULL;
    return b;
}

static int count_temps(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strstr(e->d_name, ".tmp.") != NULL;
    if (d)
        closedir(d);
    return n;
}

static void test_save_load(void)
{
    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s/faults", vq_test_tmpdir());
    mkdir(dir, 0755);
    for (size_t ci = 0; ci < N_CONFIGS; ci++) {
        snprintf(path, sizeof path, "%s/c%zu.vqkc", dir, ci);
        vq_cache *c = new_cache(ci);
        if (!c)
            continue;
        for (int s = 0; s < STEPS - 1; s++)
            run_step(c, ci, s, 0);
        CHECK_OK(vq_cache_save(c, path));
        size_t n0 = 0;
        uint8_t *b0 = read_file(path, &n0);
        run_step(c, ci, STEPS - 1, 0); /* the cache moves on; saves below must not touch the file */
        long save_faults = 0, load_faults = 0;
        for (long k = 0;; k++) {
            long base = g_live;
            arm(k);
            vq_status st = vq_cache_save(c, path);
            disarm();
            if (!g_fired) {
                CHECK_OK(st);
                break;
            }
            save_faults++;
            CHECKF(st == VQ_ERR_NOMEM, "%s save, allocation %ld failed: %s", k_configs[ci], k, vq_status_str(st));
            size_t n1 = 0;
            uint8_t *b1 = read_file(path, &n1);
            CHECKF(b0 && b1 && n1 == n0 && memcmp(b0, b1, n0) == 0, "%s: failed save changed the file", k_configs[ci]);
            free(b1);
            CHECK(count_temps(dir) == 0);
            CHECKF(g_live == base, "%s save allocation %ld: %ld leaked", k_configs[ci], k, g_live - base);
        }
        vq_layer_shape ls[NL];
        vq_cache_shape sh = shape(ls);
        for (long k = 0;; k++) {
            long base = g_live;
            vq_cache *l = NULL;
            arm(k);
            vq_status st = vq_cache_load(path, &sh, &l);
            disarm();
            if (!g_fired) {
                CHECK_OK(st);
                /* the loaded cache continues like the original */
                if (l) {
                    static float o1[NQ * HD], o2[NQ * HD];
                    int32_t p = PREFILL + STEPS - 1;
                    for (int ly = 0; ly < NL; ly++) {
                        CHECK_OK(vq_cache_append(l, ly, g_k, g_v, 1, p));
                        CHECK_OK(vq_cache_append(c, ly, g_k, g_v, 1, p));
                        CHECK_OK(vq_cache_attend(l, ly, g_q, 1, NQ, 0.125f, o1));
                        CHECK_OK(vq_cache_attend(c, ly, g_q, 1, NQ, 0.125f, o2));
                        CHECKF(memcmp(o1, o2, sizeof o1) == 0, "%s: loaded cache attends differently", k_configs[ci]);
                    }
                }
                vq_cache_free(l);
                break;
            }
            load_faults++;
            CHECKF(st == VQ_ERR_NOMEM && l == NULL && vq_last_error()[0], "%s load, allocation %ld failed: %s",
                   k_configs[ci], k, vq_status_str(st));
            vq_cache_free(l);
            CHECKF(g_live == base, "%s load allocation %ld: %ld leaked", k_configs[ci], k, g_live - base);
        }
        printf("save %-60s %ld allocation points failed; load: %ld\n", k_configs[ci], save_faults, load_faults);
        free(b0);
        vq_cache_free(c);
    }
}

/* A save into a file size limit (a full disk): fails with VQ_ERR_IO in a
 * child process; the previous file stays, no temporary is left. */
static void test_full_disk(void)
{
    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s/disk", vq_test_tmpdir());
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/c.vqkc", dir);
    vq_cache *c = new_cache(0);
    if (!c)
        return;
    run_step(c, 0, 0, 0);
    CHECK_OK(vq_cache_save(c, path));
    size_t n0 = 0;
    uint8_t *b0 = read_file(path, &n0);
    for (int s = 1; s < STEPS; s++)
        run_step(c, 0, s, 0);
    for (int frac = 1; frac <= 3; frac++) {
        rlim_t lim = (rlim_t)(n0 * (size_t)frac / 4);
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid == 0) {
            signal(SIGXFSZ, SIG_IGN);
            struct rlimit rl = { lim, lim };
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
                _exit(3);
            vq_status st = vq_cache_save(c, path);
            _exit(st == VQ_ERR_IO ? 0 : st == VQ_OK ? 1 : 2);
        }
        int status = 0;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
        CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "save into a %llu-byte limit: child status %d",
               (unsigned long long)lim, status);
        size_t n1 = 0;
        uint8_t *b1 = read_file(path, &n1);
        CHECKF(b0 && b1 && n1 == n0 && memcmp(b0, b1, n0) == 0, "full disk at %llu bytes changed the previous file",
               (unsigned long long)lim);
        free(b1);
        CHECKF(count_temps(dir) == 0, "full disk at %llu bytes left a temporary", (unsigned long long)lim);
        printf("full disk: save stopped at %llu of ~%zu bytes -> VQ_ERR_IO, previous file intact\n",
               (unsigned long long)lim, n0);
    }
    free(b0);
    vq_cache_free(c);
}

static void test_stale_temps(void)
{
    char dir[600], path[700], dead[800], live[800];
    snprintf(dir, sizeof dir, "%s/stale", vq_test_tmpdir());
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/c.vqkc", dir);
    pid_t pid = fork(); /* a writer that is gone */
    if (pid == 0)
        _exit(0);
    waitpid(pid, NULL, 0);
    snprintf(dead, sizeof dead, "%s.tmp.%ld", path, (long)pid);
    snprintf(live, sizeof live, "%s.tmp.%ld", path, (long)getppid());
    CHECK_OK(vq_file_write_buffer(dead, "partial", 7, NULL));
    CHECK_OK(vq_file_write_buffer(live, "partial", 7, NULL));
    vq_cache *c = new_cache(0);
    if (!c)
        return;
    run_step(c, 0, 0, 0);
    CHECK_OK(vq_cache_save(c, path));
    CHECKF(access(dead, F_OK) != 0, "the temporary of a killed writer was not removed");
    CHECKF(access(live, F_OK) == 0, "a live writer's temporary was removed");
    remove(live);
    remove(path);
    vq_cache_free(c);
}

int main(void)
{
    make_data();
    RUN(test_create);
    RUN(test_data_path);
    RUN(test_save_load);
    RUN(test_full_disk);
    RUN(test_stale_temps);
    printf("faults: %ld allocation failures injected\n", g_faults_total);
    return vq_test_summary("faults");
}
