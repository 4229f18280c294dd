/* nibble_tables.h -- per-query byte tables that score 1-bit codes four
 * coordinates at a time (the "fast scan" lookup of kernels.h signscore).
 *
 * A query quantized to integer levels v_d in [0, 15] (kernels/qplanes.h with
 * qbits <= VQ_NIBBLE_QBITS) has D/4 tables of 16 bytes: table p, entry e =
 *   sum of v_{4p+k} over the k < 4 with bit k of e set   (<= 60).
 * For D bits z (LSB first), nibble p of z being bits 4p..4p+3,
 *   sum_p table_p[nibble p of z] = sum_d v_d z_d,
 * the integer dot that bitdot's pq counts by popcounts. */
#ifndef VQ_KERNELS_NIBBLE_TABLES_H
#define VQ_KERNELS_NIBBLE_TABLES_H

#include <stddef.h>
#include <stdint.h>

#define VQ_NIBBLE_QBITS 4 /* the most query bits the tables take */

/* bytes of the tables of a D-dimensional query (D a multiple of 4) */
static inline size_t vq_nibble_tables_bytes(size_t D) { return 4 * D; }

/* tables[16p + e] as above from the levels v[0..D) (each <= 15) */
void vq_nibble_tables(const uint8_t *v, size_t D, uint8_t *tables);

#endif
