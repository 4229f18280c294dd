/* codes_qdot.h -- integer dots of packed 2-, 3- or 4-bit codes (KIVI and
 * kivix keys' rows, packed LSB first as core/bitstream.h) with queries quantized to
 * int8 (VNNI on AVX-512, VPMADDUBSW on AVX2): the integer counterpart of
 * codes_dot (kernels.h).
 *
 * Channels are taken 64 at a time (a chunk; D a multiple of 64). Within a
 * chunk the codes are unpacked in the order that costs the fewest
 * shuffles, and the query is stored in that order:
 *   4 bits: position p < 32 is channel 2p, p >= 32 channel 2(p-32)+1;
 *   3 bits: position p is channel p;
 *   2 bits: position 16j + k is channel 4k + j.
 * A prepared query (vq_codes_qprep) is vq_codes_query_bytes(D) bytes:
 *   float  d       scale, amax/127 over all D values (0 if all are zero)
 *   float  base    added to every score (KIVI: the mins' part, and the
 *                  rounding's offset, below)
 *   int8_t q[D]    round(x/d), chunk by chunk in the order above
 *
 * vq_codes_qdot(codes, rstride, bits, nt, D, qbuf, qstride, n_q, s, sstride):
 *   s[j*sstride + i] = d_j * (float)(sum_e code_ie * q_je) + base_j
 * (a rounded product, then a rounded add) for nt rows at codes +
 * i*rstride and n_q prepared queries at qbuf + j*qstride. The integer sum
 * is exact, so every variant returns the reference's bits. _ref is the
 * scalar reference. */
#ifndef VQ_KERNELS_CODES_QDOT_H
#define VQ_KERNELS_CODES_QDOT_H

#include <stddef.h>
#include <stdint.h>

#define VQ_CQ_HEAD (2 * sizeof(float)) /* d and base, before q */

size_t vq_codes_query_bytes(size_t D);
/* vq_codes_qprep(q, qstride, n_q, hdr, D, bits, dst, dstride) prepares
 * n_q queries (query j: the floats at q + j*qstride) against one KIVI key
 * block whose header hdr holds D fp16 channel scales s[e], then D fp16
 * mins m[e] (little-endian): query j's prepared bytes at dst + j*dstride,
 * from x[e] = q[e] * s[e] (the query folded with the block's scales), with
 *   base = sum_e q[e] * (m[e] + h s[e]) - d * (h * sum_e qi[e])
 * for h = 2^(bits-1), the centre of the codes (the sum: fmaf(q[e],
 * fmaf(h, s[e], m[e]), lane) in 16 lanes, lane e % 16, reduced by
 * vq_sum16_lanes' tree; h * sum qi exact, then one rounded multiply and one
 * rounded subtract). So the score is sum_e x[e] c[e] + sum_e q[e] m[e]
 * up to sum_e (x[e] - d qi[e]) (c[e] - h): the query's rounding errors meet
 * the centred codes (|c - h| <= h) instead of the codes themselves (up to
 * 2h - 1), about half the error at 2 bits and a quarter of its mean square
 * at 4. Every variant writes the reference's bytes (for finite inputs). */
void vq_codes_qprep(const float *q, size_t qstride, int n_q, const uint8_t *hdr, size_t D, int bits, uint8_t *dst,
                    size_t dstride);
void vq_codes_qprep_avx2(const float *q, size_t qstride, int n_q, const uint8_t *hdr, size_t D, int bits, uint8_t *dst,
                         size_t dstride);
void vq_codes_qprep_avx512x(const float *q, size_t qstride, int n_q, const uint8_t *hdr, size_t D, int bits,
                            uint8_t *dst, size_t dstride);

void vq_codes_qdot_ref(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t D, const uint8_t *qbuf,
                       size_t qstride, int n_q, float *s, size_t sstride);
void vq_codes_qdot_avx2(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t D, const uint8_t *qbuf,
                        size_t qstride, int n_q, float *s, size_t sstride);
void vq_codes_qdot_avx512x(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t D, const uint8_t *qbuf,
                           size_t qstride, int n_q, float *s, size_t sstride);

#endif
