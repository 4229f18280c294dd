/* huge.h -- large, long-lived buffers that are read as streams (a model's
 * weights: model.c place_weights) on transparent huge pages where the OS
 * offers them (Linux: madvise MADV_HUGEPAGE, honoured when THP is "always" or
 * "madvise"). A decode step streams ~100 MB; with 4 KB pages every 4 KB
 * read is a TLB miss and a page walk, with 2 MB pages one in 512.
 *
 * vq_huge_alloc(bytes): NULL when memory runs out (never aborts). Requests
 * of at least VQ_HUGE_MIN bytes are rounded up to a multiple of it (under
 * 2 MB of slack) and aligned to it; smaller ones are a plain malloc. Free with free(). Where the advice is
 * not available the memory is the same, on ordinary pages. */
#ifndef VQ_CORE_HUGE_H
#define VQ_CORE_HUGE_H

#include <stddef.h>

#define VQ_HUGE_MIN ((size_t)2 << 20) /* the x86-64 huge page */

void *vq_huge_alloc(size_t bytes);

#endif
