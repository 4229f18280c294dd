/* prefetch.h -- software prefetch for the kernels that stream packed rows.
 *
 * A cache page holds a few KB of rows that a kernel reads once, in order;
 * the hardware prefetcher meets each page cold. The row kernels therefore
 * ask for the bytes VQ_PF_AHEAD past the row they are reading, and the
 * attention loop for the head of the next page. A prefetch is a hint: it
 * never faults, and an address past the data only costs a wasted line, so
 * the addresses are formed as integers (no out-of-bounds pointer). */
#ifndef VQ_KERNELS_PREFETCH_H
#define VQ_KERNELS_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

/* how far ahead of the current row a row kernel fetches (bytes) */
#define VQ_PF_AHEAD 1024

/* rows spanning fewer bytes than this are a tile the caller has just
 * written (in L1: codec/tiled.c's tiles are 16 KB): the dense kernels do
 * not prefetch them (it would only cost instructions) */
#define VQ_PF_MIN_SPAN (24u << 10)

/* hint: bytes [p + off, p + off + n) will be read soon (one line per 64 bytes) */
static inline void vq_prefetch_span(const void *p, size_t off, size_t n)
{
    const uintptr_t a = (uintptr_t)p + off;
    for (size_t o = 0; o < n; o += 64)
        __builtin_prefetch((const void *)(a + o), 0, 3);
}

#endif
