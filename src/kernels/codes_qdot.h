/* codes_qdot.h -- integer dots of packed 2- or 4-bit codes (KIVI keys'
 * rows, packed LSB first as codec/bitstream.h) with queries quantized to
 * int8, VNNI on AVX-512: the integer counterpart of codes_dot (kernels.h).
 *
 * Channels are taken 64 at a time (a chunk; D a multiple of 64). Within a
 * chunk the codes are unpacked in the order that costs the fewest
 * shuffles, and the query is stored in that order:
 *   4 bits: position p < 32 is channel 2p, p >= 32 channel 2(p-32)+1;
 *   2 bits: position 16j + k is channel 4k + j.
 * A prepared query (vq_codes_qprep) is vq_codes_query_bytes(D) bytes:
 *   float  d[D/64]  per-chunk scale, amax/127 (0 for an all-zero chunk)
 *   int8_t q[D]     round(x/d) per chunk, in the order above
 *
 * vq_codes_qdot(codes, rstride, bits, nt, D, qbuf, qstride, n_q, s, sstride):
 *   s[j*sstride + i] = sum_c d_jc * sum_{e in chunk c} code_ie * q_je
 * for nt rows at codes + i*rstride and n_q prepared queries at
 * qbuf + j*qstride. Integer sums are exact; variants differ only in the
 * float sum over chunks (relative ~1e-6). _ref is the scalar reference. */
#ifndef VQ_KERNELS_CODES_QDOT_H
#define VQ_KERNELS_CODES_QDOT_H

#include <stddef.h>
#include <stdint.h>

size_t vq_codes_query_bytes(size_t D);
void vq_codes_qprep(const float *x, size_t D, int bits, uint8_t *dst);

void vq_codes_qdot_ref(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t D, const uint8_t *qbuf,
                       size_t qstride, int n_q, float *s, size_t sstride);
void vq_codes_qdot_avx512x(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t D, const uint8_t *qbuf,
                           size_t qstride, int n_q, float *s, size_t sstride);

#endif
