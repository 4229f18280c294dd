/* codes_qdot_avx2.c -- AVX2 twin of vq_codes_qdot (kernels/codes_qdot.h):
 * packed 2-, 3- or 4-bit KIVI / kivix key codes against int8 queries, for
 * CPUs without AVX-512 VNNI. Compiled with -mavx2 -mfma; reached through
 * the kernel table only when the CPU has AVX2.
 *
 * A tile is 4 rows x NJ <= 4 queries, one row at a time: each row's
 * 64-code chunk is unpacked to bytes once for all the tile's queries, each
 * query's bytes are read once per row from memory (VPMADDUBSW's operand);
 * 3-bit codes are unpacked by VPSHUFB into 16-bit windows, VPMULLW and a
 * shift (codes32_3). VPMADDUBSW's pair sums are below 2 * 15 * 127 = 3810,
 * so the 16-bit lanes hold the sum of the products of up to four chunks
 * (8 x 3810 < 2^15) exactly; they are widened to 32 bits by one VPMADDWD
 * against ones every four chunks (D <= 256: once), and a tile's eight-lane
 * sums are reduced to one integer per (row, query) by VPHADDD. The integer
 * sums are exact, so their order is free, and the float part is the
 * reference's: d * (float)isum, rounded, then + base, rounded (separate
 * multiply and add) -- every score has the reference's bits. */
#include <immintrin.h>
#include <string.h>

#include "kernels/codes_qdot.h"
#include "kernels/store4.h"

/* chunks whose products the 16-bit lanes sum exactly (see above) */
#define CHUNKS16 4

/* the 32 3-bit codes (0..7) whose 16-bit windows VPSHUFB(src, ctl_even /
 * ctl_odd) gathers: word w of a lane holds code 2w (ctl_even) or 2w+1
 * (ctl_odd) at bit 6w % 8 (resp. (6w+3) % 8); multiplying by mul_even /
 * mul_odd = 2^(13 - that bit) puts the code at bits 13..15 (the bits above
 * it leave the word), and a shift right by 13 leaves it alone: the even
 * codes are the low bytes, the odd ones (shifted by 8) the high bytes --
 * 32 codes in natural order */
static inline __m256i codes32_3(__m256i src, __m256i ctl_even, __m256i ctl_odd)
{
    const __m256i mul_even = _mm256_setr_epi16(8192, 128, 512, 2048, 8192, 128, 512, 2048, /* per lane */
                                               8192, 128, 512, 2048, 8192, 128, 512, 2048);
    const __m256i mul_odd = _mm256_setr_epi16(1024, 4096, 64, 256, 1024, 4096, 64, 256, /* per lane */
                                              1024, 4096, 64, 256, 1024, 4096, 64, 256);
    const __m256i e = _mm256_srli_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(src, ctl_even), mul_even), 13);
    const __m256i o = _mm256_srli_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(src, ctl_odd), mul_odd), 13);
    return _mm256_or_si256(e, _mm256_slli_epi16(o, 8));
}

/* the 64 3-bit codes of the 24 bytes at p (nothing past them is read):
 * codes 0-15 are bytes 0-5, 16-31 bytes 6-11 (of bytes 0-15, lo's lanes),
 * 32-47 bytes 12-17, 48-63 bytes 18-23 (of bytes 8-23, hi's lanes) */
static inline void chunk64_3(const uint8_t *p, __m256i *lo, __m256i *hi)
{
    /* the windows' bytes (-1: not needed, zero) of lanes at byte 0 and 6
     * (lo), 4 and 10 (hi) of the 16 loaded */
    const __m256i lo_even = _mm256_setr_epi8(0, -1, 0, 1, 1, -1, 2, -1, 3, -1, 3, 4, 4, -1, 5, -1, /* */
                                             6, -1, 6, 7, 7, -1, 8, -1, 9, -1, 9, 10, 10, -1, 11, -1);
    const __m256i lo_odd = _mm256_setr_epi8(0, -1, 1, -1, 1, 2, 2, -1, 3, -1, 4, -1, 4, 5, 5, -1, /* */
                                            6, -1, 7, -1, 7, 8, 8, -1, 9, -1, 10, -1, 10, 11, 11, -1);
    const __m256i hi_even = _mm256_setr_epi8(4, -1, 4, 5, 5, -1, 6, -1, 7, -1, 7, 8, 8, -1, 9, -1, /* */
                                             10, -1, 10, 11, 11, -1, 12, -1, 13, -1, 13, 14, 14, -1, 15, -1);
    const __m256i hi_odd = _mm256_setr_epi8(4, -1, 5, -1, 5, 6, 6, -1, 7, -1, 8, -1, 8, 9, 9, -1, /* */
                                            10, -1, 11, -1, 11, 12, 12, -1, 13, -1, 14, -1, 14, 15, 15, -1);
    const __m256i a = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)p));
    const __m256i b = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(p + 8)));
    *lo = codes32_3(a, lo_even, lo_odd);
    *hi = codes32_3(b, hi_even, hi_odd);
}

/* the 64 codes of chunk c of a row in codes_qdot.h's order, as two
 * registers of 32 unsigned bytes (positions 0-31, 32-63) */
static inline __attribute__((always_inline)) void chunk64(const int BITS, const uint8_t *row, size_t c, __m256i *lo,
                                                          __m256i *hi)
{
    if (BITS == 4) { /* position p < 32: low nibble of byte p; p >= 32: high nibble of byte p-32 */
        const __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(row + 32 * c));
        *lo = _mm256_and_si256(b, _mm256_set1_epi8(0x0f));
        *hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), _mm256_set1_epi8(0x0f));
        return;
    }
    if (BITS == 3) { /* position p: bits 3p..3p+2 of the chunk's 24 bytes */
        chunk64_3(row + 24 * c, lo, hi);
        return;
    }
    /* position 16j + k: bits 2j of byte k */
    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(row + 16 * c));
    const __m256i m = _mm256_set1_epi8(0x03);
    *lo = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 2), b), m);
    *hi = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 6), _mm_srli_epi16(b, 4)), m);
}

/* the scores d * (float)isum + base of up to four rows i.. (nt - i of them
 * if fewer) of one query into s[i..] */
static inline void store_scores(__m128i isum, float d, float base, float *s, size_t i, size_t nt)
{
    /* vector multiply, then add: never contracted to one FMA */
    vq_store4_upto(s, i, nt, _mm_add_ps(_mm_mul_ps(_mm_set1_ps(d), _mm_cvtepi32_ps(isum)), _mm_set1_ps(base)));
}

/* one row's 32-bit lane sums against NJ queries (int8 bytes in
 * codes_qdot.h's order) into out[0..NJ-1]: the row's chunks unpacked once
 * for all queries, 16-bit pair sums over up to CHUNKS16 chunks, widened by
 * VPMADDWD against ones. nc <= CHUNKS16 (LONG 0) or any (LONG 1). */
static inline __attribute__((always_inline)) void row_sums(const int BITS, const int NJ, const int LONG,
                                                           const uint8_t *row, size_t nc, const int8_t *const q[4],
                                                           __m256i out[4])
{
    const __m256i ones = _mm256_set1_epi16(1);
    for (int j = 0; j < NJ; j++)
        out[j] = _mm256_setzero_si256();
    for (size_t c0 = 0; c0 < nc; c0 += CHUNKS16) {
        const size_t c1 = nc - c0 < CHUNKS16 ? nc : c0 + CHUNKS16;
        __m256i a16[4] = { _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                           _mm256_setzero_si256() };
        for (size_t c = c0; c < c1; c++) {
            __m256i lo, hi;
            chunk64(BITS, row, c, &lo, &hi);
            _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++) {
                const __m256i *qc = (const __m256i *)(const void *)(q[j] + 64 * c);
                const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256(qc)),
                                                   _mm256_maddubs_epi16(hi, _mm256_loadu_si256(qc + 1)));
                a16[j] = _mm256_add_epi16(a16[j], p);
            }
        }
        _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++) {
            const __m256i w = _mm256_madd_epi16(a16[j], ones);
            out[j] = LONG ? _mm256_add_epi32(out[j], w) : w;
        }
    }
}

/* NJ queries against all nt rows, four at a time (past the end: the last
 * row again, its scores not stored); NJ, BITS constants after inlining.
 * Rows 0 and 1 of a tile are reduced by VPHADDD before rows 2 and 3 are
 * summed, so that at most three rows' sums are live at once (no spills
 * of the 16 registers at NJ = 4). */
static inline __attribute__((always_inline)) void
qdot_tile(const int BITS, const int NJ, const int LONG, const uint8_t *codes, size_t rstride, size_t nt, size_t nc,
          const int8_t *const q[4], const float d[4], const float base[4], float *s, size_t sstride)
{
    for (size_t i = 0; i < nt; i += 4) {
        const uint8_t *r0 = codes + i * rstride, *last = codes + (nt - 1) * rstride;
        const uint8_t *r1 = i + 1 < nt ? r0 + rstride : last, *r2 = i + 2 < nt ? r1 + rstride : last;
        const uint8_t *r3 = i + 3 < nt ? r2 + rstride : last;
        __m256i x[4], y[4], h01[4];
        row_sums(BITS, NJ, LONG, r0, nc, q, x);
        row_sums(BITS, NJ, LONG, r1, nc, q, y);
        _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++) h01[j] = _mm256_hadd_epi32(x[j], y[j]);
        row_sums(BITS, NJ, LONG, r2, nc, q, x);
        row_sums(BITS, NJ, LONG, r3, nc, q, y);
        _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++) {
            /* lanes [r0 r1 r2 r3 | r0 r1 r2 r3]: each row's two halves */
            const __m256i t = _mm256_hadd_epi32(h01[j], _mm256_hadd_epi32(x[j], y[j]));
            store_scores(_mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1)), d[j], base[j],
                         s + (size_t)j * sstride, i, nt);
        }
    }
}

/* one bit width and chunk regime (constants after inlining), queries four
 * at a time */
static inline __attribute__((always_inline)) void qdot_bits(const int BITS, const int LONG, const uint8_t *codes,
                                                            size_t rstride, size_t nt, size_t nc, const uint8_t *qbuf,
                                                            size_t qstride, int n_q, float *s, size_t sstride)
{
    for (int j0 = 0; j0 < n_q; j0 += 4) {
        const int nj = n_q - j0 < 4 ? n_q - j0 : 4;
        const int8_t *q[4];
        float d[4], base[4];
        for (int j = 0; j < 4; j++) {
            const uint8_t *qj = qbuf + (size_t)(j0 + (j < nj ? j : nj - 1)) * qstride;
            q[j] = (const int8_t *)(const void *)(qj + VQ_CQ_HEAD);
            memcpy(&d[j], qj, sizeof d[j]);
            memcpy(&base[j], qj + sizeof d[j], sizeof base[j]);
        }
        float *o = s + (size_t)j0 * sstride;
        switch (nj) {
        case 4: qdot_tile(BITS, 4, LONG, codes, rstride, nt, nc, q, d, base, o, sstride); break;
        case 3: qdot_tile(BITS, 3, LONG, codes, rstride, nt, nc, q, d, base, o, sstride); break;
        case 2: qdot_tile(BITS, 2, LONG, codes, rstride, nt, nc, q, d, base, o, sstride); break;
        default: qdot_tile(BITS, 1, LONG, codes, rstride, nt, nc, q, d, base, o, sstride); break;
        }
    }
}

void vq_codes_qdot_avx2(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t D, const uint8_t *qbuf,
                        size_t qstride, int n_q, float *s, size_t sstride)
{
    const size_t nc = D / 64;
    if (bits < 2 || bits > 4) {
        vq_codes_qdot_ref(codes, rstride, bits, nt, D, qbuf, qstride, n_q, s, sstride);
        return;
    }
    if (nt == 0)
        return;
    const int LONG = nc > CHUNKS16;
    if (nc == 1) { /* D = 64: one chunk, a constant (the chunk loops vanish) */
        switch (bits) {
        case 2: qdot_bits(2, 0, codes, rstride, nt, 1, qbuf, qstride, n_q, s, sstride); break;
        case 3: qdot_bits(3, 0, codes, rstride, nt, 1, qbuf, qstride, n_q, s, sstride); break;
        default: qdot_bits(4, 0, codes, rstride, nt, 1, qbuf, qstride, n_q, s, sstride); break;
        }
        return;
    }
    switch (bits * 2 + LONG) { /* the width and regime constants: no branch inside */
    case 4: qdot_bits(2, 0, codes, rstride, nt, nc, qbuf, qstride, n_q, s, sstride); break;
    case 5: qdot_bits(2, 1, codes, rstride, nt, nc, qbuf, qstride, n_q, s, sstride); break;
    case 6: qdot_bits(3, 0, codes, rstride, nt, nc, qbuf, qstride, n_q, s, sstride); break;
    case 7: qdot_bits(3, 1, codes, rstride, nt, nc, qbuf, qstride, n_q, s, sstride); break;
    case 8: qdot_bits(4, 0, codes, rstride, nt, nc, qbuf, qstride, n_q, s, sstride); break;
    default: qdot_bits(4, 1, codes, rstride, nt, nc, qbuf, qstride, n_q, s, sstride); break;
    }
}
