/* lut_bytes.h -- a query's float tables rounded to byte tables, the
 * prepared query of kernels/lut8_scan.h ("fast scan" of 8-bit codes:
 * vecinfer qbits=8).
 *
 * vq_lut_bytes(lut, M, qbuf): lut holds M (1..256) tables of 256 floats (table m,
 * entry c at lut[256m + c]); qbuf receives VQ_L8_HEAD + 256 M bytes:
 *   delta = max_m (max_c - min_c) / 255 (one step for every table),
 *   T[m][c] = (lut[m][c] - min_m) / delta rounded half up (0 when delta
 *   is 0; NaN entries 0), bias = sum_m min_m,
 * so that bias + delta * sum_m T[m][c_m] is sum_m lut[m][c_m] to within
 * M delta / 2. Plain loops the compiler vectorizes (no libm calls). */
#ifndef VQ_CODEC_LUT_BYTES_H
#define VQ_CODEC_LUT_BYTES_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/lut8_scan.h"

static inline size_t vq_lut_bytes_size(int M) { return VQ_L8_HEAD + 256 * (size_t)M; }

void vq_lut_bytes(const float *lut, int M, uint8_t *qbuf);

#endif
