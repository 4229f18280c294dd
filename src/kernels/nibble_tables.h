/* nibble_tables.h -- per-query byte tables that score 1-bit codes four
 * coordinates at a time (the "fast scan" lookup of kernels.h signscore).
 *
 * A query quantized to integer levels v_d in [0, 15] (kernels/qplanes.h with
 * qbits <= VQ_NIBBLE_QBITS) has D/4 tables of 16 bytes: table p, entry e =
 *   sum of v_{4p+k} over the k < 4 with bit k of e set   (<= 60).
 * For D bits z (LSB first), nibble p of z being bits 4p..4p+3,
 *   sum_p table_p[nibble p of z] = sum_d v_d z_d,
 * the integer dot that bitdot's pq counts by popcounts. The tables of a
 * unit of 32 coordinates (4 bytes of z) take 128 bytes, the low nibbles'
 * (even p) first and the high nibbles' (odd p) 64 bytes later, so that one
 * 64-byte register holds each half (vq_nibble_table_at). D is a multiple
 * of 32. */
#ifndef VQ_KERNELS_NIBBLE_TABLES_H
#define VQ_KERNELS_NIBBLE_TABLES_H

#include <stddef.h>
#include <stdint.h>

#define VQ_NIBBLE_QBITS 4 /* the most query bits the tables take */

/* bytes of the tables of a D-dimensional query */
static inline size_t vq_nibble_tables_bytes(size_t D) { return 4 * D; }

/* where table p starts: unit p / 8, half p % 2, place p % 8 / 2 in it */
static inline size_t vq_nibble_table_at(size_t p) { return 128 * (p / 8) + 64 * (p % 2) + 16 * (p % 8 / 2); }

/* tables[vq_nibble_table_at(p) + e] as above from the levels v[0..D)
 * (each <= 15) */
void vq_nibble_tables(const uint8_t *v, size_t D, uint8_t *tables);

#endif
