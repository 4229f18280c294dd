/* test.h -- the test harness: CHECK macros that count, and a summary line.
 *
 * Each tests/test_*.c is one program:
 *     static void test_something(void) { CHECK(x == 1); CHECK_NEAR(a, b, 1e-6); }
 *     int main(void) { RUN(test_something); return vq_test_summary("codec"); }
 * A failing CHECK prints file:line and the expression and counts a failure;
 * the test continues. vq_test_summary prints "NAME: N passed, M failed" and
 * returns the process exit status (0 only if nothing failed).
 *
 * VQ_TEST_LEVEL=quick (sanitizer runs) asks tests to use smaller sizes;
 * vq_test_quick() says so. Real-model tests find models with vq_test_model(). */
#ifndef VQ_TEST_H
#define VQ_TEST_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>

extern int vq_test_passed, vq_test_failed;
extern const char *vq_test_current;

void vq_test_check(int ok, const char *file, int line, const char *expr);
void vq_test_checkf(int ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int vq_test_summary(const char *name);
int vq_test_quick(void);
/* Path of models/NAME.gguf relative to the repo root, or NULL (and a
 * counted failure naming the fetch command) when it is missing. */
const char *vq_test_model(const char *name);
/* Path of a file under ../shared/data (or $VQ_SHARED_DATA), or NULL. */
const char *vq_test_data(const char *rel);
/* A scratch directory unique to this test process (created on first use). */
const char *vq_test_tmpdir(void);
/* Runs the shell command cmd, capturing up to cap-1 bytes of its stdout
 * into out (NUL-terminated); returns its exit status, -1 when it could not
 * run or did not exit normally. */
int vq_test_run(const char *cmd, char *out, size_t cap);
/* Path of the built CLI, $VQ_BUILD/veloxquant (default build/, run from the
 * repo root), or NULL (and a counted failure) when it is not built. */
const char *vq_test_cli(void);

#define CHECK(cond) vq_test_check(!!(cond), __FILE__, __LINE__, #cond)
#define CHECKF(cond, ...) vq_test_checkf(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define CHECK_NEAR(a, b, tol)                                                        \
    do {                                                                             \
        double vq_a_ = (a), vq_b_ = (b);                                             \
        vq_test_checkf(fabs(vq_a_ - vq_b_) <= (tol), __FILE__, __LINE__,             \
                       "%s = %g, %s = %g, |diff| > %g", #a, vq_a_, #b, vq_b_, (double)(tol)); \
    } while (0)
#define CHECK_OK(expr)                                                               \
    do {                                                                             \
        vq_status vq_st_ = (expr);                                                   \
        vq_test_checkf(vq_st_ == VQ_OK, __FILE__, __LINE__, "%s -> %s: %s", #expr,  \
                       vq_status_str(vq_st_), vq_last_error());                      \
    } while (0)
#define RUN(fn)                                                                      \
    do {                                                                             \
        vq_test_current = #fn;                                                       \
        fn();                                                                        \
    } while (0)

#endif
