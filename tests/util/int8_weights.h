/* int8_weights.h -- the shared check of value codecs with qbits=8 (int8
 * attention weights, kernels/kivi_qaxpy.h): against the same codec with
 * float weights, on n = 100 rows of D values (one spiky channel) and 3
 * softmax-like weight rows (positive, one large):
 *   - the same bytes (qbits changes only how sums are taken);
 *   - the sums differ (the int8 path ran) by at most the weights' rounding
 *     bound, A/254 per row and code unit with A <= max|w| * s_max and codes
 *     at most 2^bits - 1 units from the centre side they round on:
 *     n * max|w| * s_max * (2^bits - 1) / 254, plus 1e-4 for float rounding,
 *     s_max = 2 max|v| / (2^bits - 1).
 * Failures are counted by test.h's CHECK. */
#ifndef VQ_TEST_INT8_WEIGHTS_H
#define VQ_TEST_INT8_WEIGHTS_H

#include "veloxquant.h"

void vq_test_int8_weight_sums(vq_codec *plain, vq_codec *q8, int D, int bits);

#endif
