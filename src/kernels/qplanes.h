/* qplanes.h -- a query quantized to bit planes, for scores against 1-bit
 * codes by popcount (kernels.h bitdot / signscore), as RaBitQ does.
 *
 * y (D floats, D a multiple of 32) is quantized uniformly to qbits (1..8)
 * bits: y_d ~= lo + delta * v_d with v_d = round((y_d - lo)/delta) clamped
 * to [0, 2^qbits - 1], lo = min y, delta = (max y - lo)/(2^qbits - 1) (1 if
 * all equal). Layout (vq_qplanes_bytes(D, qbits) bytes):
 *   f32 lo | f32 delta | f32 sum_d v_d | qbits planes of D/8 bytes, bit d
 *   of plane j (LSB first) = bit j of v_d | with qbits <= VQ_NIBBLE_QBITS,
 *   the nibble tables of the v_d (kernels/nibble_tables.h, 4D bytes),
 *   which kernels.h signscore may read instead of the planes.
 * For sign bits z (1 = +1, 0 = -1), <y', s> = 2 <y', z> - sum y' with
 *   <y', z> = lo |z| + delta sum_j 2^j popcount(z & plane_j)
 *   sum y'  = D lo + delta sum v.
 * (Deterministic rounding: the query error is a fixed perturbation of at
 * most delta/2 per coordinate.)
 *
 * vq_qplanes_encode writes that layout through the kernel table (kernels.h
 * qplanes); vq_qplanes_encode_ref is the reference (v_d rounded half up
 * from (y_d - lo) / delta, one division; lo the first minimal y_d in
 * order, hi the first maximal) and every twin writes its bytes for finite
 * y. */
#ifndef VQ_KERNELS_QPLANES_H
#define VQ_KERNELS_QPLANES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/nibble_tables.h"

static inline size_t vq_qplanes_bytes(int D, int qbits)
{
    return 12 + (size_t)qbits * (size_t)D / 8 + (qbits <= VQ_NIBBLE_QBITS ? vq_nibble_tables_bytes((size_t)D) : 0);
}

void vq_qplanes_encode(const float *y, int D, int qbits, uint8_t *qbuf);
void vq_qplanes_encode_ref(const float *y, int D, int qbits, uint8_t *qbuf);
/* AVX2: 8 levels a step, the planes by VPMOVMSKB, the nibble tables by
 * VPSHUFB; D a multiple of 32 (else the reference). The AVX-512 table uses
 * it too (a 16-lane twin made prepared queries no cheaper:
 * figures/bench/ab-session35.txt part 5). */
void vq_qplanes_encode_avx2(const float *y, int D, int qbits, uint8_t *qbuf);

/* The header of qbuf: lo, delta and base = D lo + delta sum v (read once
 * per query, outside token loops). */
typedef struct {
    float lo, delta, base;
} vq_qplanes_consts;

static inline vq_qplanes_consts vq_qplanes_header(const uint8_t *qbuf, int D)
{
    vq_qplanes_consts k;
    float sumv;
    memcpy(&k.lo, qbuf, 4);
    memcpy(&k.delta, qbuf + 4, 4);
    memcpy(&sumv, qbuf + 8, 4);
    k.base = (float)D * k.lo + k.delta * sumv;
    return k;
}

/* The constants of kernels.h signscore for a query whose scores weigh
 * n_sets sign-bit sets by weights summing to wsum: 2 lo, 2 delta and
 * base * wsum (each set's <y', s> = 2 lo pz + 2 delta pq - base). */
static inline void vq_qplanes_score_consts(const uint8_t *qbuf, int D, float wsum, float *qc)
{
    const vq_qplanes_consts k = vq_qplanes_header(qbuf, D);
    qc[0] = 2.0f * k.lo;
    qc[1] = 2.0f * k.delta;
    qc[2] = k.base * wsum;
}

#endif
