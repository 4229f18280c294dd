/* qdot_avx512x.c -- AVX-512 VNNI twin of vq_qdot (kernels/qdot.h).
 * Compiled with -mavx512f/bw/vl/dq -mavx512vnni; reached through the
 * kernel table only when the CPU has VNNI.
 *
 * D <= 256: qdot_rows16 below (the reference's bits). Longer rows:
 * eight rows at a time, two blocks (64 codes) at a time: each row's 64
 * codes as unsigned bytes in one register, VPDPBUSD against the query's 64
 * int8 values gives 16 lanes of 4-product sums (lanes 0-7: the first block,
 * 8-15: the second); a transpose-add tree turns the eight rows' registers
 * into one holding each (row, block) sum, laid out
 *   [rows 0-3 block 0 | rows 0-3 block 1 | rows 4-7 block 0 | rows 4-7 block 1],
 * which is corrected for the unsigned offset, converted and scaled by the
 * rows' and the query's block scales (gathered once per eight rows and
 * block pair), and added over block pairs. Odd block counts (D = 32, 96,
 * ...) go to the reference. */
#include <float.h>
#include <immintrin.h>
#include <stdalign.h>
#include <string.h>

#include "core/vexp.h"
#include "kernels/avx512_sums.h"
#include "kernels/codes_qdot.h"
#include "kernels/prefetch.h"
#include "kernels/rows16_avx512.h"
#include "kernels/qdot.h"
#include "kernels/units16_avx512.h"
#include "kernels/unpack_avx512x.h"
#include "kernels/wq_avx512x.h"

#define QROWS 8
#define QMAXQ 8 /* queries per pass */

/* the 64 codes of blocks b, b+1 of a row as unsigned bytes */
static inline __m512i codes64(int bits, const uint8_t *blk)
{
    if (bits == 8) {
        __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)(blk + 2))),
                                       _mm256_loadu_si256((const __m256i *)(const void *)(blk + 36)), 1);
        return _mm512_xor_si512(v, _mm512_set1_epi8((char)0x80));
    }
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(blk + 2));
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(blk + 20));
    __m512i v = _mm512_inserti32x4(_mm512_castsi128_si512(a), _mm_srli_epi16(a, 4), 1);
    v = _mm512_inserti32x4(v, b, 2);
    v = _mm512_inserti32x4(v, _mm_srli_epi16(b, 4), 3);
    return _mm512_and_si512(v, _mm512_set1_epi8(0x0f));
}

/* eight rows' 16-lane sums -> the (row, block) layout above */
static inline __m512i tree8(const __m512i I[8])
{
    __m512i P[4], Q[2];
    for (int p = 0; p < 4; p++)
        P[p] = _mm512_add_epi32(_mm512_unpacklo_epi32(I[2 * p], I[2 * p + 1]),
                                _mm512_unpackhi_epi32(I[2 * p], I[2 * p + 1]));
    for (int p = 0; p < 2; p++)
        Q[p] = _mm512_add_epi32(_mm512_unpacklo_epi64(P[2 * p], P[2 * p + 1]),
                                _mm512_unpackhi_epi64(P[2 * p], P[2 * p + 1]));
    return _mm512_add_epi32(_mm512_shuffle_i32x4(Q[0], Q[1], 0x88), _mm512_shuffle_i32x4(Q[0], Q[1], 0xDD));
}

/* [a x4 | b x4 | a x4 | b x4] */
static inline __m512 pair4f(float a, float b)
{
    return _mm512_mask_blend_ps(0xF0F0, _mm512_set1_ps(a), _mm512_set1_ps(b));
}
static inline __m512i pair4i(int32_t a, int32_t b)
{
    return _mm512_mask_blend_epi32(0xF0F0, _mm512_set1_epi32(a), _mm512_set1_epi32(b));
}

#define QROWS16_MAXB 8

/* the 32-bit word at p broadcast to all lanes (one VPBROADCASTD from memory) */
static inline __m512i word_bcast(const uint8_t *p)
{
    return _mm512_broadcastd_epi32(_mm_loadu_si32(p));
}

/* the group of 16 rows from row i on (row t at *g + t * *rs): in place
 * when all 16 exist, else the rows' first `used` bytes copied to tail
 * (16 * used bytes), the missing rows repeating row nt - 1 */
static inline void rows16_group(const uint8_t *codes, size_t rstride, size_t i, size_t nt, size_t used, uint8_t *tail,
                                const uint8_t **g, size_t *rs)
{
    *g = codes + i * rstride, *rs = rstride;
    if (i + 16 > nt) {
        for (size_t t = 0; t < 16; t++)
            memcpy(tail + t * used, codes + (i + t < nt ? i + t : nt - 1) * rstride, used);
        *g = tail, *rs = used;
    }
}

/* Sixteen rows at a time, the block's codes turned so that one register
 * holds one 4-code column of all sixteen rows (units16_avx512.h
 * vq_units16_chunk: 16-byte loads of the rows and a 4x4 transpose of
 * 32-bit words; lane t holds row t): T[k] lane t = codes 4k .. 4k+3 of row
 * t, made unsigned (q8_0: bytes 0-15 and 16-31 turned apart, top bit
 * flipped; q4_0: the 16 nibble bytes turned, T[k] their low nibbles, the
 * block's codes 4k.., T[4+k] the high nibbles, codes 16+4k..). Each query
 * then needs no reduction: eight VPDPBUSD of T[k] against its block's
 * word k broadcast leave each lane one row's sum, started at -off*sum (two
 * chains, added). The turn is paid once per block for all queries. The
 * float part follows the reference's order exactly (t = dk * dq, t = t *
 * isum, acc = acc + t, block after block): the reference's bits. A last
 * group of fewer than 16 rows is copied to the stack first, its missing
 * rows repeating its last. NQ queries (1..4) at a time; nb <=
 * QROWS16_MAXB blocks. */
static inline __attribute__((always_inline)) void qdot_rows16(const int BITS, const uint8_t *codes, size_t rstride,
                                                              size_t nt, size_t nb, const uint8_t *qbuf,
                                                              size_t qstride, const int NQ, float *s, size_t sstride)
{
    const __m512i mask = _mm512_set1_epi8(BITS == 8 ? (char)0x80 : 0x0f);
    const size_t bb = BITS == 8 ? 34 : 18;
    const int32_t off = BITS == 8 ? 128 : 8;
    const size_t qoff = nb * (sizeof(float) + sizeof(int32_t));
    vq_rows16_span sp; /* or, one or two blocks, the span (rows16_avx512.h; else, and for a last group
                        * copied at another stride, 16 two-byte loads a block: vq_rows16_halves_loaded) */
    vq_rows16_span_init(&sp, rstride, 0, bb, nb);
    /* a last group of fewer than 16 rows, its missing rows repeating its last */
    uint8_t tail[16 * QROWS16_MAXB * 34];
    /* per query and block: the sums' start -off * sum q (a register to load) */
    alignas(64) int32_t start[4][QROWS16_MAXB][16];
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
        for (size_t b = 0; b < nb; b++) {
            int32_t sq;
            memcpy(&sq, qbuf + (size_t)j * qstride + nb * sizeof(float) + b * sizeof(int32_t), sizeof sq);
            _mm512_store_si512((void *)start[j][b], _mm512_set1_epi32(-off * sq));
        }
    vq_pf_share pf = vq_pf_share_init(codes, 16 * rstride + VQ_PF_SPREAD, nt * rstride, (nt + 15) / 16 * nb);
    for (size_t i = 0; i < nt; i += 16) {
        const uint8_t *g;
        size_t rs;
        rows16_group(codes, rstride, i, nt, nb * bb, tail, &g, &rs);
        __m512 acc[4];
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) acc[j] = _mm512_setzero_ps();
        const __mmask16 live = vq_rows16_live(nt - i);
        const int spans = sp.nreg && rs == rstride;
        const __m512i sw = spans ? vq_rows16_span_halves(&sp, g, 16) : _mm512_setzero_si512();
        for (size_t b = 0; b < nb; b++) {
            vq_pf_step(&pf);
            const size_t o = b * bb;
            const __m512 DK = spans ? vq_span_floats(sw, (int)b) /* the 16 rows' block scales */
                                    : _mm512_cvtph_ps(vq_rows16_halves_loaded(g + o, rs));
            __m512i T[8];
            if (BITS == 8) {
                vq_units16_chunk(g + o + 2, rs, T);
                vq_units16_chunk(g + o + 18, rs, T + 4);
                _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) T[k] = _mm512_xor_si512(T[k], mask);
            } else {
                vq_units16_chunk(g + o + 2, rs, T);
                _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
                {
                    T[4 + k] = _mm512_and_si512(_mm512_srli_epi16(T[k], 4), mask);
                    T[k] = _mm512_and_si512(T[k], mask);
                }
            }
            _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            {
                const uint8_t *qj = qbuf + (size_t)j * qstride;
                const uint8_t *qb = qj + qoff + b * 32;
                float dq;
                memcpy(&dq, qj + b * sizeof(float), sizeof dq);
                __m512i lo = _mm512_load_si512((const void *)start[j][b]), hi = _mm512_setzero_si512();
                _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
                {
                    lo = _mm512_dpbusd_epi32(lo, T[k], word_bcast(qb + 4 * k));
                    hi = _mm512_dpbusd_epi32(hi, T[4 + k], word_bcast(qb + 16 + 4 * k));
                }
                const __m512 t = _mm512_mul_ps(_mm512_mul_ps(DK, _mm512_set1_ps(dq)),
                                               _mm512_cvtepi32_ps(_mm512_add_epi32(lo, hi)));
                acc[j] = _mm512_add_ps(acc[j], t);
            }
        }
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            _mm512_mask_storeu_ps(s + (size_t)j * sstride + i, live, acc[j]);
    }
}

void vq_qdot_avx512x(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const uint8_t *qbuf,
                     size_t qstride, int n_q, float *s, size_t sstride)
{
    const size_t nb = D / 32;
    if (nb <= QROWS16_MAXB && rstride <= (1u << 26)) { /* (the bound of the scales' former gather offsets) */
        for (int j0 = 0; j0 < n_q; j0 += 4) {
            const uint8_t *q = qbuf + (size_t)j0 * qstride;
            float *o = s + (size_t)j0 * sstride;
            const int nq = n_q - j0 < 4 ? n_q - j0 : 4; /* a constant count: the sums stay in registers */
            if (bits == 8)
                switch (nq) {
                case 4: qdot_rows16(8, codes, rstride, nt, nb, q, qstride, 4, o, sstride); break;
                case 3: qdot_rows16(8, codes, rstride, nt, nb, q, qstride, 3, o, sstride); break;
                case 2: qdot_rows16(8, codes, rstride, nt, nb, q, qstride, 2, o, sstride); break;
                default: qdot_rows16(8, codes, rstride, nt, nb, q, qstride, 1, o, sstride); break;
                }
            else
                switch (nq) {
                case 4: qdot_rows16(4, codes, rstride, nt, nb, q, qstride, 4, o, sstride); break;
                case 3: qdot_rows16(4, codes, rstride, nt, nb, q, qstride, 3, o, sstride); break;
                case 2: qdot_rows16(4, codes, rstride, nt, nb, q, qstride, 2, o, sstride); break;
                default: qdot_rows16(4, codes, rstride, nt, nb, q, qstride, 1, o, sstride); break;
                }
        }
        return;
    }
    if (nb % 2) {
        vq_qdot_ref(bits, codes, rstride, nt, D, qbuf, qstride, n_q, s, sstride);
        return;
    }
    const size_t bb = bits == 8 ? 34 : 18;
    const int32_t off = bits == 8 ? 128 : 8;
    const size_t qoff = nb * (sizeof(float) + sizeof(int32_t));
    for (int j0 = 0; j0 < n_q; j0 += QMAXQ) {
        const int nq = n_q - j0 < QMAXQ ? n_q - j0 : QMAXQ;
        /* the first query pass streams the rows */
        vq_pf_share pf = vq_pf_share_init(codes, QROWS * rstride + VQ_PF_SPREAD, j0 == 0 ? nt * rstride : 0,
                                          (nt + QROWS - 1) / QROWS * (nb / 2));
        for (size_t i = 0; i < nt; i += QROWS) {
            const uint8_t *row[QROWS];
            for (int t = 0; t < QROWS; t++)
                row[t] = codes + (i + (size_t)t < nt ? i + (size_t)t : nt - 1) * rstride;
            __m512 acc[QMAXQ];
            for (int j = 0; j < nq; j++)
                acc[j] = _mm512_setzero_ps();
            for (size_t b = 0; b < nb; b += 2) {
                vq_pf_step(&pf);
                __m512i U[QROWS];
                uint16_t dk[16];
                for (int t = 0; t < QROWS; t++) {
                    const uint8_t *blk = row[t] + b * bb;
                    U[t] = codes64(bits, blk);
                    /* lane (t/4)*8 + (t%4) holds block b, +4 block b+1 */
                    int l = (t / 4) * 8 + t % 4;
                    memcpy(&dk[l], blk, 2);
                    memcpy(&dk[l + 4], blk + bb, 2);
                }
                const __m512 DK = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)dk));
                for (int j = 0; j < nq; j++) {
                    const uint8_t *qj = qbuf + (size_t)(j0 + j) * qstride;
                    float d0, d1;
                    int32_t s0, s1;
                    memcpy(&d0, qj + b * 4, 4);
                    memcpy(&d1, qj + b * 4 + 4, 4);
                    memcpy(&s0, qj + nb * 4 + b * 4, 4);
                    memcpy(&s1, qj + nb * 4 + b * 4 + 4, 4);
                    const __m512i Q = _mm512_loadu_si512((const void *)(qj + qoff + b * 32));
                    __m512i I[QROWS];
                    for (int t = 0; t < QROWS; t++)
                        I[t] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), U[t], Q);
                    __m512i R = _mm512_sub_epi32(tree8(I), pair4i(off * s0, off * s1));
                    acc[j] = _mm512_add_ps(acc[j], _mm512_mul_ps(_mm512_cvtepi32_ps(R), _mm512_mul_ps(DK, pair4f(d0, d1))));
                }
            }
            for (int j = 0; j < nq; j++) {
                /* [rows 0-3 | rows 4-7] = block-even lanes + block-odd lanes */
                __m512 x = _mm512_shuffle_f32x4(acc[j], acc[j], 0xD8); /* #0 #2 #1 #3 */
                __m256 r = _mm256_add_ps(_mm512_castps512_ps256(x), _mm512_extractf32x8_ps(x, 1));
                vq_store8_upto(s + (size_t)(j0 + j) * sstride, i, nt, r);
            }
        }
    }
}

/* ---- vq_codes_qdot (kernels/codes_qdot.h) -------------------------------- */

/* the 64 codes of chunk c of a row as bytes, in codes_qdot.h's order: the
 * chunk's bytes broadcast to every 128-bit (2 bits) or 256-bit (4 bits)
 * lane, each lane shifted by its own amount, masked; 3 bits: unpacked in
 * channel order (unpack_avx512x.h, u3) */
static inline __m512i chunk64(int bits, const uint8_t *row, size_t c, const vq_unpack64_ctl *u3)
{
    if (bits == 3)
        return vq_unpack64(row + 24 * c, u3->ld, u3);
    if (bits == 4) {
        __m512i v = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(row + 32 * c)));
        /* 16-bit shift counts: 0 in the low 256 bits, 4 in the high */
        v = _mm512_srlv_epi16(v, _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1));
        return _mm512_and_si512(v, _mm512_set1_epi8(0x0f));
    }
    __m512i v = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)(row + 16 * c)));
    /* 16-bit shift counts 0, 2, 4, 6 in the four 128-bit lanes */
    v = _mm512_srlv_epi16(v, _mm512_set_epi32(0x60006, 0x60006, 0x60006, 0x60006, 0x40004, 0x40004, 0x40004, 0x40004,
                                              0x20002, 0x20002, 0x20002, 0x20002, 0, 0, 0, 0));
    return _mm512_and_si512(v, _mm512_set1_epi8(0x03));
}

/* 128-bit lane r = the 12 bytes at p[r] + off, then zeros (masked loads:
 * nothing past the 12 bytes is read) */
static inline __m512i quad_bytes12(const uint8_t *const p[4], size_t off)
{
    const __mmask16 m = 0x0fff;
    __m512i x = _mm512_castsi128_si512(_mm_maskz_loadu_epi8(m, p[0] + off));
    x = _mm512_inserti32x4(x, _mm_maskz_loadu_epi8(m, p[1] + off), 1);
    x = _mm512_inserti32x4(x, _mm_maskz_loadu_epi8(m, p[2] + off), 2);
    return _mm512_inserti32x4(x, _mm_maskz_loadu_epi8(m, p[3] + off), 3);
}

/* one query's eight row sums from its integer lane sums: the reference's
 * bits (exact integers, then one conversion and multiply) */
static inline void codes_qdot_store(const __m512i I[QROWS], float d, float base, float *s, size_t i, size_t nt)
{
    /* (row, half) sums -> row sums */
    __m512i R = tree8(I);
    R = _mm512_shuffle_i32x4(R, R, 0xD8); /* #0 #2 #1 #3 */
    __m256i r = _mm256_add_epi32(_mm512_castsi512_si256(R), _mm512_extracti64x4_epi64(R, 1));
    vq_store8_upto(s, i, nt,
                   _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(r)), _mm256_set1_ps(base)));
}

/* acc[j][qd] += the codes P (one run of 16 positions in each 128-bit lane)
 * times the 16 query bytes at q + j*qstride, for the NQ queries */
static inline __attribute__((always_inline)) void codes_run(__m512i acc[4][4], int qd, __m512i P, const uint8_t *q,
                                                            size_t qstride, const int NQ)
{
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
        acc[j][qd] = _mm512_dpbusd_epi32(
            acc[j][qd], P, _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)(q + (size_t)j * qstride))));
}

/* 3-bit codes, four rows per register (head_dim 64, 128, 256): 128-bit lane r
 * holds 12 bytes of row r (32 codes), their codes 0-15 and 16-31
 * (positions 32h.. and 32h+16.., h the half of the chunk) each moved into
 * a run of 16 positions of codes_qdot.h's order by one in-lane byte
 * shuffle (three bytes to each 64-bit word) and one multishift, then
 * masked, so VPDPBUSD against that run of the query broadcast to every
 * lane adds into lane r row r's partial sums. Sixteen rows (four such
 * registers) per pass: their 64 partial sums become 16 row sums by two
 * rounds of unpack-and-add and one permute. Integer sums: the reference's
 * bits. NQ queries (1..4) at a time, the sums in registers. */
static inline __attribute__((always_inline)) void codes_qdot_rows16(const uint8_t *codes, size_t rstride,
                                                                    size_t nt, size_t nc, const uint8_t *qbuf,
                                                                    size_t qstride, const int NQ, float *s,
                                                                    size_t sstride)
{
    const __m512i mask = _mm512_set1_epi8(0x07);
    /* 3 bits: words 0, 1 of a lane <- bytes 0-2, 3-5 (codes 0-15) or 6-8,
     * 9-11 (codes 16-31); code k of a word at bit 3k */
    const __m512i lo3 = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, -1, -1, -1, -1, -1, 3, 4, 5, -1, -1, -1, -1, -1));
    const __m512i hi3 = _mm512_broadcast_i32x4(_mm_setr_epi8(6, 7, 8, -1, -1, -1, -1, -1, 9, 10, 11, -1, -1, -1, -1, -1));
    const __m512i sh3 = _mm512_set1_epi64(0x15120f0c09060300ll);
    /* lane 4r + quad -> row 4quad + r */
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    vq_pf_share pf = vq_pf_share_init(codes, VQ_PF_SPREAD, nt * rstride, (nt + 3) / 4 * nc);
    for (size_t i = 0; i < nt; i += 16) {
        __m512i acc[4][4]; /* [query][quad] */
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            _Pragma("GCC unroll 4") for (int qd = 0; qd < 4; qd++)
                acc[j][qd] = _mm512_setzero_si512();
        _Pragma("GCC unroll 4") for (int qd = 0; qd < 4; qd++) {
            const size_t i0 = i + 4 * (size_t)qd;
            if (i0 >= nt)
                break;
            const uint8_t *row[4];
            row[0] = codes + i0 * rstride;
            if (i0 + 4 <= nt) { /* a whole quad: no clamping */
                row[1] = row[0] + rstride, row[2] = row[1] + rstride, row[3] = row[2] + rstride;
            } else {
                for (int t = 1; t < 4; t++)
                    row[t] = codes + (i0 + (size_t)t < nt ? i0 + (size_t)t : nt - 1) * rstride;
            }
            /* the runs of each 16-byte column, their shifts as literals */
            for (size_t c = 0; c < nc; c++) {
                vq_pf_step(&pf);
                for (size_t h = 0; h < 2; h++) {
                    const __m512i R = quad_bytes12(row, 24 * c + 12 * h);
                    const uint8_t *q = qbuf + VQ_CQ_HEAD + 64 * c + 32 * h;
                    codes_run(acc, qd, _mm512_and_si512(_mm512_multishift_epi64_epi8(sh3, _mm512_shuffle_epi8(R, lo3)), mask),
                              q, qstride, NQ);
                    codes_run(acc, qd, _mm512_and_si512(_mm512_multishift_epi64_epi8(sh3, _mm512_shuffle_epi8(R, hi3)), mask),
                              q + 16, qstride, NQ);
                }
            }
        }
        const size_t left = nt - i < 16 ? nt - i : 16;
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) {
            float d, base;
            memcpy(&d, qbuf + (size_t)j * qstride, sizeof d);
            memcpy(&base, qbuf + (size_t)j * qstride + sizeof d, sizeof base);
            /* lane 4r + x of acc[j][q]: partial x of row 4q + r */
            const __m512i a01 = _mm512_add_epi32(_mm512_unpacklo_epi32(acc[j][0], acc[j][1]),
                                                 _mm512_unpackhi_epi32(acc[j][0], acc[j][1]));
            const __m512i a23 = _mm512_add_epi32(_mm512_unpacklo_epi32(acc[j][2], acc[j][3]),
                                                 _mm512_unpackhi_epi32(acc[j][2], acc[j][3]));
            const __m512i r = _mm512_add_epi32(_mm512_unpacklo_epi64(a01, a23), _mm512_unpackhi_epi64(a01, a23));
            const __m512 f = _mm512_add_ps(
                _mm512_mul_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(_mm512_permutexvar_epi32(order, r))),
                _mm512_set1_ps(base));
            _mm512_mask_storeu_ps(s + (size_t)j * sstride + i, (__mmask16)((1u << left) - 1u), f);
        }
    }
}

/* Sixteen rows at a time for 2- and 4-bit codes (head_dim 64, 128, 256), turned
 * as qdot_rows16 turns its blocks: a chunk's 16-byte columns of the
 * sixteen rows transposed by 32-bit words (vq_units16_chunk: Y[k] lane t =
 * bytes 4k..4k+3 of the column of row t), then a shift and mask per code
 * position: 2 bits, shift 2i: channels 16k + 4m + i (m the byte), query
 * positions 16i + 4k + m of codes_qdot.h's order; 4 bits, column h, low
 * nibbles: positions 16h + 4k + m, high nibbles: 32 + 16h + 4k + m. So
 * each register meets one 32-bit word of the query broadcast (VPDPBUSD)
 * and every lane accumulates its own row: no reduction, two chains per
 * query. A last group of fewer than 16 rows is copied to the stack first.
 * Integer sums: the reference's bits. NQ queries (1..4) at a time. */
static inline __attribute__((always_inline)) void codes_qdot_cols16(const uint8_t *codes, size_t rstride, int bits,
                                                                    size_t nt, size_t nc, const uint8_t *qbuf,
                                                                    size_t qstride, const int NQ, float *s,
                                                                    size_t sstride)
{
    const __m512i mask = _mm512_set1_epi8(bits == 2 ? 0x03 : 0x0f);
    const size_t used = nc * (size_t)(bits == 2 ? 16 : 32); /* code bytes of a row */
    uint8_t tail[16 * 128]; /* 16 rows of up to 128 code bytes (4 bits, head_dim 256) */
    vq_pf_share pf = vq_pf_share_init(codes, VQ_PF_SPREAD, nt * rstride, (nt + 15) / 16 * nc);
    for (size_t i = 0; i < nt; i += 16) {
        const uint8_t *g;
        size_t rs;
        rows16_group(codes, rstride, i, nt, used, tail, &g, &rs);
        __m512i acc[4][2];
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) acc[j][0] = acc[j][1] = _mm512_setzero_si512();
        for (size_t c = 0; c < nc; c++) {
            vq_pf_step(&pf);
            const size_t nh = bits == 2 ? 1 : 2; /* 16-byte columns of the chunk */
            for (size_t h = 0; h < nh; h++) {
                __m512i Y[4];
                vq_units16_chunk(g + (bits == 2 ? 16 : 32) * c + 16 * h, rs, Y);
                const uint8_t *qc = qbuf + VQ_CQ_HEAD + 64 * c;
                _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
                {
                    if (bits == 2) {
                        _Pragma("GCC unroll 4") for (int e = 0; e < 4; e++)
                        {
                            const __m512i T = _mm512_and_si512(e ? _mm512_srli_epi16(Y[k], 2 * e) : Y[k], mask);
                            _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) acc[j][e & 1] =
                                _mm512_dpbusd_epi32(acc[j][e & 1], T, word_bcast(qc + (size_t)j * qstride + 16 * e + 4 * k));
                        }
                    } else {
                        const __m512i L = _mm512_and_si512(Y[k], mask), H = _mm512_and_si512(_mm512_srli_epi16(Y[k], 4), mask);
                        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
                        {
                            const uint8_t *qj = qc + (size_t)j * qstride + 16 * h + 4 * k;
                            acc[j][0] = _mm512_dpbusd_epi32(acc[j][0], L, word_bcast(qj));
                            acc[j][1] = _mm512_dpbusd_epi32(acc[j][1], H, word_bcast(qj + 32));
                        }
                    }
                }
            }
        }
        const size_t left = nt - i < 16 ? nt - i : 16;
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
        {
            float d, base;
            memcpy(&d, qbuf + (size_t)j * qstride, sizeof d);
            memcpy(&base, qbuf + (size_t)j * qstride + sizeof d, sizeof base);
            const __m512i r = _mm512_add_epi32(acc[j][0], acc[j][1]);
            const __m512 f = _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(r)), _mm512_set1_ps(base));
            _mm512_mask_storeu_ps(s + (size_t)j * sstride + i, (__mmask16)((1u << left) - 1u), f);
        }
    }
}

static inline __attribute__((always_inline)) void codes_qdot_rows16_bits(const uint8_t *codes, size_t rstride,
                                                                         int bits, size_t nt, size_t nc,
                                                                         const uint8_t *qbuf, size_t qstride,
                                                                         int n_q, float *s, size_t sstride)
{
    for (int j0 = 0; j0 < n_q; j0 += 4) {
        const uint8_t *q = qbuf + (size_t)j0 * qstride;
        float *o = s + (size_t)j0 * sstride;
        const int nq = n_q - j0 < 4 ? n_q - j0 : 4;
        if (bits == 3)
            switch (nq) {
            case 4: codes_qdot_rows16(codes, rstride, nt, nc, q, qstride, 4, o, sstride); break;
            case 3: codes_qdot_rows16(codes, rstride, nt, nc, q, qstride, 3, o, sstride); break;
            case 2: codes_qdot_rows16(codes, rstride, nt, nc, q, qstride, 2, o, sstride); break;
            default: codes_qdot_rows16(codes, rstride, nt, nc, q, qstride, 1, o, sstride); break;
            }
        else
            switch (nq) {
            case 4: codes_qdot_cols16(codes, rstride, bits, nt, nc, q, qstride, 4, o, sstride); break;
            case 3: codes_qdot_cols16(codes, rstride, bits, nt, nc, q, qstride, 3, o, sstride); break;
            case 2: codes_qdot_cols16(codes, rstride, bits, nt, nc, q, qstride, 2, o, sstride); break;
            default: codes_qdot_cols16(codes, rstride, bits, nt, nc, q, qstride, 1, o, sstride); break;
            }
    }
}

/* head_dim 256 (gemma3): the same passes with four chunks, kept out of
 * line so that the head sizes 64 and 128 compile as before (an inlined
 * copy moved their code: +4% at D 128) */
static __attribute__((noinline)) void codes_qdot_d256(const uint8_t *codes, size_t rstride, int bits, size_t nt,
                                                      const uint8_t *qbuf, size_t qstride, int n_q, float *s,
                                                      size_t sstride)
{
    if (bits == 2)
        codes_qdot_rows16_bits(codes, rstride, 2, nt, 4, qbuf, qstride, n_q, s, sstride);
    else if (bits == 3)
        codes_qdot_rows16_bits(codes, rstride, 3, nt, 4, qbuf, qstride, n_q, s, sstride);
    else
        codes_qdot_rows16_bits(codes, rstride, 4, nt, 4, qbuf, qstride, n_q, s, sstride);
}

void vq_codes_qdot_avx512x(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t D, const uint8_t *qbuf,
                           size_t qstride, int n_q, float *s, size_t sstride)
{
    const size_t nc = D / 64;
    if (nc <= 2) { /* bits and nc constants in each call: the run loops unroll */
        if (bits == 2 && nc == 1)
            codes_qdot_rows16_bits(codes, rstride, 2, nt, 1, qbuf, qstride, n_q, s, sstride);
        else if (bits == 2)
            codes_qdot_rows16_bits(codes, rstride, 2, nt, 2, qbuf, qstride, n_q, s, sstride);
        else if (bits == 3 && nc == 1)
            codes_qdot_rows16_bits(codes, rstride, 3, nt, 1, qbuf, qstride, n_q, s, sstride);
        else if (bits == 3)
            codes_qdot_rows16_bits(codes, rstride, 3, nt, 2, qbuf, qstride, n_q, s, sstride);
        else if (nc == 1)
            codes_qdot_rows16_bits(codes, rstride, 4, nt, 1, qbuf, qstride, n_q, s, sstride);
        else
            codes_qdot_rows16_bits(codes, rstride, 4, nt, 2, qbuf, qstride, n_q, s, sstride);
        return;
    }
    if (nc == 4) {
        codes_qdot_d256(codes, rstride, bits, nt, qbuf, qstride, n_q, s, sstride);
        return;
    }
    const vq_unpack64_ctl u3 = vq_unpack64_init(3);
    for (size_t i = 0; i < nt; i += QROWS) {
        const uint8_t *row[QROWS];
        for (int t = 0; t < QROWS; t++)
            row[t] = codes + (i + (size_t)t < nt ? i + (size_t)t : nt - 1) * rstride;
        for (int j = 0; j < n_q; j++) {
            const uint8_t *qj = qbuf + (size_t)j * qstride;
            float d, base;
            memcpy(&d, qj, sizeof d);
            memcpy(&base, qj + sizeof d, sizeof base);
            __m512i I[QROWS];
            for (int t = 0; t < QROWS; t++)
                I[t] = _mm512_setzero_si512();
            for (size_t c = 0; c < nc; c++) {
                const __m512i Q = _mm512_loadu_si512((const void *)(qj + VQ_CQ_HEAD + 64 * c));
                for (int t = 0; t < QROWS; t++)
                    I[t] = _mm512_dpbusd_epi32(I[t], chunk64(bits, row[t], c, &u3), Q);
            }
            codes_qdot_store(I, d, base, s + (size_t)j * sstride, i, nt);
        }
    }
}

/* vq_codes_qprep's twin: the same bytes (q*s, amax, d and inv as the
 * reference computes them, x*inv rounded to nearest even as lrintf does
 * and held at -127 and above as the reference clamps (only an infinite
 * inv, from a denormal amax, converts to INT_MIN: the hold runs only then;
 * the saturating packs hold 127); the maxima of |q*s| by VRANGEPS; at D =
 * 64 the products q*s stay in registers for the rounding; q*(m + h s) by one FMA per lane, the lanes summed in
 * vq_sum16_lanes' tree, less d * h * sum(qi), sum(qi) by VPSADBW over the packed bytes). The header's halves are converted once for all queries. Queries go four at
 * a time: their maxima and sums are reduced together (wq_avx512x.h
 * vq_tree4x16) and d, inv divided as one vector (IEEE division: the
 * reference's quotients), so the four reduction chains overlap. Per
 * 64-channel chunk the four rounded registers are packed to bytes by two
 * rounds of saturating packs (lane L then holds channels 4L..4L+3 of each
 * register) and put in codes_qdot.h's order by one VPERMB. D a multiple of
 * 64 up to 256 (else the reference). */

static inline __attribute__((always_inline)) void codes_qprep(const float *qs, size_t qstride, int n_q,
                                                              const uint8_t *hdr, const size_t D, int bits, uint8_t *dst,
                                                              size_t dstride)
{
    /* byte p of a chunk <- the packed byte of its channel ch (codes_qdot.h's
     * order): register ch / 16, lane (ch % 16) / 4, element ch % 4, i.e.
     * byte 16 ((ch % 16) / 4) + 4 (ch / 16) + ch % 4 */
    static const int8_t order2[64] = {
        0, 16, 32, 48, 4, 20, 36, 52, 8, 24, 40, 56, 12, 28, 44, 60,
        1, 17, 33, 49, 5, 21, 37, 53, 9, 25, 41, 57, 13, 29, 45, 61,
        2, 18, 34, 50, 6, 22, 38, 54, 10, 26, 42, 58, 14, 30, 46, 62,
        3, 19, 35, 51, 7, 23, 39, 55, 11, 27, 43, 59, 15, 31, 47, 63,
    };
    static const int8_t order4[64] = {
        0, 2, 16, 18, 32, 34, 48, 50, 4, 6, 20, 22, 36, 38, 52, 54,
        8, 10, 24, 26, 40, 42, 56, 58, 12, 14, 28, 30, 44, 46, 60, 62,
        1, 3, 17, 19, 33, 35, 49, 51, 5, 7, 21, 23, 37, 39, 53, 55,
        9, 11, 25, 27, 41, 43, 57, 59, 13, 15, 29, 31, 45, 47, 61, 63,
    };
    static const int8_t order3[64] = {
        0, 1, 2, 3, 16, 17, 18, 19, 32, 33, 34, 35, 48, 49, 50, 51,
        4, 5, 6, 7, 20, 21, 22, 23, 36, 37, 38, 39, 52, 53, 54, 55,
        8, 9, 10, 11, 24, 25, 26, 27, 40, 41, 42, 43, 56, 57, 58, 59,
        12, 13, 14, 15, 28, 29, 30, 31, 44, 45, 46, 47, 60, 61, 62, 63,
    };
    __m512 S[16], M[16];
    _Pragma("GCC unroll 16") for (size_t k = 0; k < D / 16; k++) {
        S[k] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(hdr + 32 * k)));
        M[k] = _mm512_fmadd_ps(_mm512_set1_ps((float)(1 << (bits - 1))), S[k], /* m + h s */
                               _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(hdr + 2 * D + 32 * k))));
    }
    const __m512i order = _mm512_loadu_si512(bits == 4 ? order4 : bits == 3 ? order3 : order2);
    for (int j0 = 0; j0 < n_q; j0 += 4) {
        const int nj = n_q - j0 < 4 ? n_q - j0 : 4;
        __m512 mx[4], base[4], X[4][4]; /* X: q * s kept for the rounding pass when D is 64 */
        _Pragma("GCC unroll 4") for (int t = 0; t < 4; t++) {
            mx[t] = base[t] = _mm512_setzero_ps();
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) /* (gcc 13 cannot tell X is read only where written) */
                X[t][k] = _mm512_setzero_ps();
            if (t >= nj) /* absent queries reduce zeros */
                continue;
            const float *qv = qs + (size_t)(j0 + t) * qstride;
            _Pragma("GCC unroll 16") for (size_t k = 0; k < D / 16; k++) {
                const __m512 x = _mm512_loadu_ps(qv + 16 * k), xs = _mm512_mul_ps(x, S[k]);
                if (D == 64)
                    X[t][k] = xs;
                mx[t] = _mm512_range_ps(mx[t], xs, 0x0B); /* max(|mx|, |xs|), sign cleared */
                base[t] = _mm512_fmadd_ps(x, M[k], base[t]);
            }
        }
        const __m128 amax = vq_tree4x16(mx[0], mx[1], mx[2], mx[3], 0);
        const __m128 sum = vq_tree4x16(base[0], base[1], base[2], base[3], 1);
        const __m128 d = _mm_div_ps(amax, _mm_set1_ps(127.0f));
        const __m128 inv = _mm_maskz_div_ps(_mm_cmp_ps_mask(amax, _mm_setzero_ps(), _CMP_GT_OQ), _mm_set1_ps(127.0f),
                                            amax);
        /* an infinite inv (a denormal amax) converts to INT_MIN, held at -127 as
         * the reference; a finite one keeps |x * inv| <= 127 (no hold needed) */
        const int hold = _mm_cmp_ps_mask(inv, _mm_set1_ps(FLT_MAX), _CMP_NLE_UQ) != 0;
        float dv[4], sv[4], iv[4];
        _mm_storeu_ps(dv, d);
        _mm_storeu_ps(sv, sum);
        _mm_storeu_ps(iv, inv);
        _Pragma("GCC unroll 4") for (int t = 0; t < 4; t++) {
            if (t >= nj)
                break;
            const float *qv = qs + (size_t)(j0 + t) * qstride;
            uint8_t *out = dst + (size_t)(j0 + t) * dstride;
            const __m512 vi = _mm512_set1_ps(iv[t]);
            __m512i qsum = _mm512_setzero_si512(); /* the bytes + 128, by sums of absolute differences */
            _Pragma("GCC unroll 4") for (size_t c = 0; c < D / 64; c++) {
                __m512i r[4];
                _Pragma("GCC unroll 4") for (int u = 0; u < 4; u++) {
                    const size_t k = 4 * c + (size_t)u;
                    const __m512 xs = D == 64 ? X[t][k] : _mm512_mul_ps(_mm512_loadu_ps(qv + 16 * k), S[k]);
                    r[u] = _mm512_cvtps_epi32(_mm512_mul_ps(xs, vi));
                    if (hold)
                        r[u] = _mm512_max_epi32(r[u], _mm512_set1_epi32(-127));
                }
                const __m512i b = _mm512_packs_epi16(_mm512_packs_epi32(r[0], r[1]), _mm512_packs_epi32(r[2], r[3]));
                _mm512_storeu_si512((void *)(out + VQ_CQ_HEAD + 64 * c), _mm512_permutexvar_epi8(order, b));
                qsum = _mm512_add_epi64(qsum, _mm512_sad_epu8(_mm512_xor_si512(b, _mm512_set1_epi8(-128)),
                                                              _mm512_setzero_si512()));
            }
            const int32_t q_total = (int32_t)_mm512_reduce_add_epi64(qsum) - 128 * (int32_t)D;
            const float b0 = sv[t] - dv[t] * (float)(q_total * (1 << (bits - 1)));
            memcpy(out, dv + t, sizeof(float));
            memcpy(out + sizeof(float), &b0, sizeof(float));
        }
    }
}

void vq_codes_qprep_avx512x(const float *qs, size_t qstride, int n_q, const uint8_t *hdr, size_t D, int bits,
                            uint8_t *dst, size_t dstride)
{
    switch (D) { /* D a constant: the folded query stays in registers */
    case 64: codes_qprep(qs, qstride, n_q, hdr, 64, bits, dst, dstride); break;
    case 128: codes_qprep(qs, qstride, n_q, hdr, 128, bits, dst, dstride); break;
    case 192: codes_qprep(qs, qstride, n_q, hdr, 192, bits, dst, dstride); break;
    case 256: codes_qprep(qs, qstride, n_q, hdr, 256, bits, dst, dstride); break;
    default: vq_codes_qprep(qs, qstride, n_q, hdr, D, bits, dst, dstride); break;
    }
}

/* vq_qdot_prepare's twin: the same bytes (vq_qdot_prepare_avx2's steps on
 * 16 lanes; the bytes by two saturating narrowings, VPMOVSDB, which keep
 * the order) */
void vq_qdot_prepare_avx512x(const float *x, size_t D, uint8_t *dst)
{
    const size_t nb = D / 32;
    uint8_t *dp = dst, *sp = dst + nb * sizeof(float);
    int8_t *q = (int8_t *)(void *)(dst + nb * (sizeof(float) + sizeof(int32_t)));
    const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
    for (size_t b = 0; b < nb; b++) {
        const __m512 v0 = _mm512_loadu_ps(x + 32 * b), v1 = _mm512_loadu_ps(x + 32 * b + 16);
        const __m512 mx = _mm512_max_ps(_mm512_abs_ps(v1), _mm512_max_ps(_mm512_abs_ps(v0), _mm512_setzero_ps()));
        const float amax = _mm512_reduce_max_ps(mx), d = amax / 127.0f, inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        const __m512 vi = _mm512_set1_ps(inv);
        const __m512i r0 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(v0, vi)), lo), hi);
        const __m512i r1 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(v1, vi)), lo), hi);
        const int32_t isum = _mm512_reduce_add_epi32(_mm512_add_epi32(r0, r1));
        _mm_storeu_si128((__m128i *)(void *)(q + 32 * b), _mm512_cvtsepi32_epi8(r0));
        _mm_storeu_si128((__m128i *)(void *)(q + 32 * b + 16), _mm512_cvtsepi32_epi8(r1));
        memcpy(dp + b * sizeof(float), &d, sizeof d);
        memcpy(sp + b * sizeof(int32_t), &isum, sizeof isum);
    }
}
