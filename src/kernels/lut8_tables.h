/* lut8_tables.h -- a query's float tables rounded to byte tables: the
 * prepared query of kernels/lut8_scan.h ("fast scan" of byte codes:
 * turboquant_mse and vecinfer keys with qbits=8).
 *
 * vq_lut8_tables(lut, M, qbuf): lut holds M (1..256) tables of 256 floats
 * (table m, entry c at lut[256m + c]); qbuf receives
 * vq_lut8_tables_size(M) = VQ_L8_HEAD + 256 M bytes:
 *   per table min_m and max_m (scanned from entry 0 in index order, a
 *   strictly smaller / larger entry replacing: NaN entries after the first
 *   are passed over), delta = max_m (max_m - min_m) / 255 (one step for
 *   every table; a difference replaces the maximum only when strictly
 *   larger), inv = 255 / range (0 when range is not above 0),
 *   T[m][c] = the integer part of (lut[m][c] - min_m) * inv + 0.5f (each
 *   operation rounded; held to [0, 255], NaN to 0), bias = sum_m min_m in
 *   order from 0.0f,
 * so that bias + delta * sum_m T[m][c_m] is sum_m lut[m][c_m] to within
 * M delta / 2. Every variant writes the reference's bytes (where the
 * maxima or minima tie between +0 and -0 a variant may keep the other
 * zero, which changes no byte: see the reference). */
#ifndef VQ_KERNELS_LUT8_TABLES_H
#define VQ_KERNELS_LUT8_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/lut8_scan.h"

static inline size_t vq_lut8_tables_size(int M) { return VQ_L8_HEAD + 256 * (size_t)M; }

typedef void vq_lut8_tables_fn(const float *lut, int M, uint8_t *qbuf);

vq_lut8_tables_fn vq_lut8_tables_ref, vq_lut8_tables_avx2, vq_lut8_tables_avx512;

#endif
