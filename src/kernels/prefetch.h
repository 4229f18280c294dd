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

/* how far ahead a kernel fetches that spreads its hints over its inner
 * steps (a vq_pf_share over its rows, this far past them, stepped once per
 * step): a few lines per step rather than a burst per group of rows. On
 * the 2-core Xeon a core keeps only so many lines in flight, and a burst
 * stalls the loop behind it until they come in; spread hints let the
 * arithmetic run meanwhile (fp16 keys at head_dim 64, three queries, one
 * core: 15.5 -> 10.9 ns per token; figures/bench/ab-session29.txt) */
#define VQ_PF_SPREAD 2048

/* the same lead for the int8-weight block kernels (wq_avx512x.h
 * vq_block_fetch: kivi_qaxpy, qaxpy8, lut_qaxpy), past the block being
 * summed. Their per-block weight work makes each block's reads come in a
 * burst after a long stretch of arithmetic; 2 KB did not cover the wait.
 * At 4 KB (session 44, figures/bench/ab-session44.txt part 2): 16k
 * tokens, 32 layers, D 128, two threads, rvq-1 keys + KIVI-2 qbits=8
 * values: -6% against 2 KB in the same binary (-9% between builds), KIVI-2
 * qbits=8 both within the spread. The dense kernels keep VQ_PF_SPREAD (a
 * build with 4 KB for every kernel read fp16 attention 12% slower, a
 * between-builds reading). */
#define VQ_PF_SPREAD_BLOCKS 4096

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

/* A span to fetch a little at a time while other work runs: `bytes` at p
 * over about `steps` calls of vq_pf_step (the last calls may find nothing
 * left), one hint per line, each line of the span once. */
typedef struct {
    uintptr_t at, end; /* the next line to fetch; the span's end */
    size_t step;       /* bytes per call */
    uintptr_t due;     /* fetch up to here */
} vq_pf_share;

/* the span [p + off, p + off + bytes); p may be NULL with bytes 0
 * (nothing to fetch); steps 0 counts as 1 */
static inline vq_pf_share vq_pf_share_init(const void *p, size_t off, size_t bytes, size_t steps)
{
    vq_pf_share s;
    const uintptr_t a = (uintptr_t)p + off;
    s.at = s.due = a & ~(uintptr_t)63;
    s.end = bytes ? a + bytes : s.at;
    steps = steps ? steps : 1;
    s.step = (bytes + steps - 1) / steps;
    return s;
}

static inline void vq_pf_step(vq_pf_share *s)
{
    s->due += s->step;
    for (; s->at < s->due && s->at < s->end; s->at += 64)
        __builtin_prefetch((const void *)s->at, 0, 3);
}

#endif
