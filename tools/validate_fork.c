/* validate_fork.c -- arms and the calibration of `veloxquant validate` in
 * child processes (fork + a pipe), so each arm's peak RSS is its own (see
 * validate.h). The child sends its validate_result as raw bytes, then the
 * count and ids of its generated tokens; a child that dies or sends too
 * little marks the arm failed with the reason. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "validate.h"

static int read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t k = read(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Run an arm in a child; *gen gets the generated tokens (malloc'd). */
void validate_run_arm_isolated(const validate_opts *o, const validate_arm *a, int is_ref, validate_result *r, int32_t **gen)
{
    *gen = NULL;
    if (o->no_fork) {
        validate_run_arm(o, a, is_ref, r, gen);
        return;
    }
    int fds[2];
    if (pipe(fds) != 0) {
        validate_run_arm(o, a, is_ref, r, gen);
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        validate_run_arm(o, a, is_ref, r, gen);
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        validate_result *res = calloc(1, sizeof *res);
        int32_t *toks = NULL;
        if (!res)
            _exit(3);
        validate_run_arm(o, a, is_ref, res, &toks);
        int n = toks ? res->n_generated : 0;
        int bad = write_all(fds[1], res, sizeof *res) || write_all(fds[1], &n, sizeof n) ||
                  (n > 0 && write_all(fds[1], toks, (size_t)n * sizeof *toks));
        close(fds[1]);
        fflush(NULL);
        _exit(bad ? 4 : 0);
    }
    close(fds[1]);
    memset(r, 0, sizeof *r);
    int n = 0;
    int got = read_all(fds[0], r, sizeof *r) == 0 && read_all(fds[0], &n, sizeof n) == 0 &&
              n >= 0 && n <= o->max_tokens;
    if (got && n > 0) {
        *gen = malloc((size_t)n * sizeof **gen);
        if (!*gen || read_all(fds[0], *gen, (size_t)n * sizeof **gen) != 0) {
            free(*gen);
            *gen = NULL;
            got = 0;
        }
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        int ok_fields = got;
        if (!ok_fields)
            memset(r, 0, sizeof *r);
        r->ok = 0;
        if (WIFSIGNALED(status))
            snprintf(r->error, sizeof r->error, "arm process died with signal %d (%s)",
                     WTERMSIG(status), strsignal(WTERMSIG(status)));
        else if (!r->error[0])
            snprintf(r->error, sizeof r->error, "arm process failed (exit %d)",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        snprintf(r->cache_canon, sizeof r->cache_canon, "%s", a->cache);
    }
}

/* Run make_calibration in a child process (its memory is not the arms'). */
int validate_calibration_isolated(const validate_opts *o, const char *cfg_text, const char *path, char *err, size_t cap)
{
    int fds[2];
    if (o->no_fork || pipe(fds) != 0)
        return validate_make_calibration(o, cfg_text, path, err, cap);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return validate_make_calibration(o, cfg_text, path, err, cap);
    }
    if (pid == 0) {
        close(fds[0]);
        char e[512] = "";
        int rc = validate_make_calibration(o, cfg_text, path, e, sizeof e);
        ssize_t w = write(fds[1], e, sizeof e);
        (void)w;
        close(fds[1]);
        _exit(rc);
    }
    close(fds[1]);
    char e[512] = "";
    ssize_t got = read(fds[0], e, sizeof e);
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    e[sizeof e - 1] = 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    snprintf(err, cap, "%s", got > 0 && e[0] ? e : "calibration process failed");
    return 1;
}
