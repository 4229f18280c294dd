/* heap_bytes.c -- the allocator's own count of heap bytes (heap_bytes.h). */
#include "heap_bytes.h"

/* a libc header first: it defines __GLIBC__ (via <features.h>), which
 * heap_bytes.h's <stddef.h> (the compiler's own) does not, so without it
 * the glibc branch below was never compiled and the counter was absent */
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif

#if defined(HAVE_ASAN)
/* from <sanitizer/allocator_interface.h> (not installed everywhere) */
size_t __sanitizer_get_current_allocated_bytes(void);

int vq_test_heap_bytes(size_t *out, int exact_only)
{
    (void)exact_only;
    *out = __sanitizer_get_current_allocated_bytes();
    return 1;
}
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>

int vq_test_heap_bytes(size_t *out, int exact_only)
{
    *out = 0;
    if (exact_only)
        return 0;
    struct mallinfo2 mi = mallinfo2();
    *out = mi.uordblks + mi.hblkhd;
    return 1;
}
#else
int vq_test_heap_bytes(size_t *out, int exact_only)
{
    (void)exact_only;
    *out = 0;
    return 0;
}
#endif
