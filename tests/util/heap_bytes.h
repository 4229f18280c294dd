/* heap_bytes.h -- the bytes the C heap has handed out and not had back,
 * read from the allocator itself, for tests that hold the cache's byte
 * counters against the heap (test_cache_bytes, test_cache_sinks). */
#ifndef VQ_TESTS_HEAP_BYTES_H
#define VQ_TESTS_HEAP_BYTES_H

#include <stddef.h>

/* Under AddressSanitizer: its allocated-bytes counter (exact: the bytes
 * requested). Else, unless exact_only: glibc's mallinfo2 (2.33+; in-use
 * small blocks plus mmapped ones -- approximate: blocks reused from its
 * per-thread cache do not move it). Returns 1 with *out set, or 0 (and
 * *out = 0) when no such counter exists here. */
int vq_test_heap_bytes(size_t *out, int exact_only);

#endif
