/* huge.c -- see huge.h. */
#include "core/huge.h"

#include <stdlib.h>
#include <sys/mman.h>

void *vq_huge_alloc(size_t bytes)
{
    if (bytes < VQ_HUGE_MIN)
        return malloc(bytes ? bytes : 1);
    if (bytes > (size_t)-1 - VQ_HUGE_MIN)
        return NULL;
    const size_t n = (bytes + VQ_HUGE_MIN - 1) & ~(VQ_HUGE_MIN - 1);
    void *p = aligned_alloc(VQ_HUGE_MIN, n);
#ifdef MADV_HUGEPAGE
    if (p)
        (void)madvise(p, n, MADV_HUGEPAGE); /* advice: failure leaves ordinary pages */
#endif
    return p;
}
