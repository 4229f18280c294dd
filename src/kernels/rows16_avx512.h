/* rows16_avx512.h -- one 32-bit word from each of 16 rows of a strided
 * array by one gather (row k at base + k*stride), or, for rows close
 * together, the IEEE halves at one or two offsets of each from the rows'
 * span (vq_rows16_span_*), for the kernels that take per-row scales or
 * factors as columns (or the halves by plain loads: vq_rows16_halves_loaded;
 * include only from files compiled with -mavx512f and
 * -mavx512bw). Rows at or past `have` are not read and give 0. */
#ifndef VQ_KERNELS_ROWS16_AVX512_H
#define VQ_KERNELS_ROWS16_AVX512_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* the gather offsets k*stride, k = 0..15 (stride * 15 < 2^31) */
static inline __m512i vq_rows16_index(size_t stride)
{
    return _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                              _mm512_set1_epi32((int)stride));
}

/* the lanes of the first `have` rows (all 16 from 16 on) */
static inline __mmask16 vq_rows16_live(size_t have)
{
    return have >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << have) - 1u);
}

/* the 4 bytes at at + k*stride of the rows in `live` (ix: vq_rows16_index),
 * 0 in the other lanes */
static inline __m512i vq_rows16_words(const uint8_t *at, __m512i ix, __mmask16 live)
{
    return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, ix, at, 1);
}

/* the low IEEE halves of 16 words as floats (exact) */
static inline __m512 vq_low_halves16(__m512i words) { return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(words)); }

/* the IEEE halves at base + hoff + k*stride, k < have (<= 16), as floats
 * 0 .. have-1 (0 past them): one gather of the 4 bytes that hold the half
 * and stay inside the row's stride bytes (stride >= 4), VCVTPH2PS (exact) */
static inline __m512 vq_rows16_halves(const uint8_t *base, size_t hoff, size_t stride, __m512i ix, size_t have)
{
    const int high = hoff + 4 > stride; /* the half is the word's upper one */
    const __m512i x = vq_rows16_words(base + hoff - (high ? 2 : 0), ix, vq_rows16_live(have));
    return vq_low_halves16(high ? _mm512_srli_epi32(x, 16) : x);
}

/* the IEEE halves at p + t*stride, t < 16, as 16 words, by 16 two-byte
 * loads joined by an unpack tree (all 16 rows are read): where a block
 * of 16 rows spans too many bytes for the span loads below, cheaper than
 * the gather (q8_0 keys at head_dim 128, one core: 7.3 -> 6.6 ns a row,
 * figures/bench/ab-session50.txt part 7), and with no store to read back
 * (16 two-byte stores read by one vector load had been slower still) */
static inline __m256i vq_rows16_halves_loaded(const uint8_t *p, size_t stride)
{
    __m128i v[16];
    _Pragma("GCC unroll 16") for (size_t t = 0; t < 16; t++)
    {
        uint16_t h;
        memcpy(&h, p + t * stride, sizeof h);
        v[t] = _mm_cvtsi32_si128(h);
    }
    _Pragma("GCC unroll 8") for (int t = 0; t < 8; t++) v[t] = _mm_unpacklo_epi16(v[2 * t], v[2 * t + 1]);
    _Pragma("GCC unroll 4") for (int t = 0; t < 4; t++) v[t] = _mm_unpacklo_epi32(v[2 * t], v[2 * t + 1]);
    _Pragma("GCC unroll 2") for (int t = 0; t < 2; t++) v[t] = _mm_unpacklo_epi64(v[2 * t], v[2 * t + 1]);
    return _mm256_inserti128_si256(_mm256_castsi128_si256(v[0]), v[1], 1);
}

/* Halves from a span of rows that lie close together. Where 16 rows at
 * stride bytes span at most VQ_SPAN_REGS 64-byte registers, the IEEE
 * halves at one or two byte offsets of every row come from those plain
 * loads and one masked VPERMW each, instead of one gather per offset: on
 * Zen 4 a 16-word gather takes ~20 cycles, the span of q4_0 rows at
 * head_dim 64 (16 x 36 bytes: 9 loads and 9 VPERMW) ~17 cycles for both
 * offsets (figures/bench/ab-session47.txt part 1). */
#define VQ_SPAN_REGS 10

typedef struct {
    __m512i idx;                  /* result word k: its word within its register */
    __mmask32 take[VQ_SPAN_REGS]; /* the result words that register r supplies */
    size_t stride;                /* the rows' stride (bytes) */
    size_t hend;                  /* bytes of a row read: the larger offset + 2 */
    int nreg;                     /* registers 16 rows span; 0: the span path does not apply */
    int nfull;                    /* of them read whole for 16 rows */
    __mmask32 last;               /* for 16 rows: the words read of register nfull (0: none) */
} vq_rows16_span;

/* sp for the halves at the n byte offsets h0, h0 + step, .. of rows at
 * stride (as the n blocks of a q8_0 / q4_0 row: one offset fills words
 * 16..31 with the first's again). It applies (sp->nreg > 0) where n is 1
 * or 2, stride and the offsets are even, both halves lie inside the row's
 * stride, and 16 * stride <= 64 * VQ_SPAN_REGS; else the caller gathers. */
static inline void vq_rows16_span_init(vq_rows16_span *sp, size_t stride, size_t h0, size_t step, size_t n)
{
    uint16_t ix[32];
    const size_t h1 = n == 2 ? h0 + step : h0; /* the larger */
    sp->nreg = sp->nfull = 0, sp->last = 0, sp->stride = stride, sp->hend = h1 + 2;
    if ((n != 1 && n != 2) || stride % 2 || h0 % 2 || h1 % 2 || h1 + 2 > stride || 16 * stride > 64 * VQ_SPAN_REGS) {
        sp->idx = _mm512_setzero_si512();
        return;
    }
    for (int r = 0; r < VQ_SPAN_REGS; r++)
        sp->take[r] = 0;
    for (unsigned k = 0; k < 32; k++) {
        const size_t at = (k % 16) * stride + (k < 16 ? h0 : h1); /* row k % 16's half */
        ix[k] = (uint16_t)(at % 64 / 2);
        sp->take[at / 64] |= (__mmask32)1 << k;
    }
    sp->idx = _mm512_loadu_si512(ix);
    const size_t need = 15 * stride + sp->hend; /* bytes 16 rows read (even) */
    sp->nreg = (int)((need + 63) / 64), sp->nfull = (int)(need / 64);
    sp->last = (__mmask32)((1u << (need % 64 / 2)) - 1u);
}

/* the halves of rows 0 .. have-1 (have <= 16) at base + k*stride (sp:
 * vq_rows16_span_init, applying) as words: 0..15 the first offset's,
 * 16..31 the second's; 0 for rows at or past have. Reads only bytes
 * [0, (have - 1) * stride + the larger offset + 2) of base. */
static inline __m512i vq_rows16_span_halves(const vq_rows16_span *sp, const uint8_t *base, size_t have)
{
    __m512i out = _mm512_setzero_si512();
    if (have == 16) { /* the common case in straight loads, as two chains of merges (even and odd
                       * registers) that one OR joins: the merges' latency halved */
        __m512i odd = _mm512_setzero_si512();
        int r = 0;
        for (; r + 1 < sp->nfull; r += 2) {
            out = _mm512_mask_permutexvar_epi16(out, sp->take[r], sp->idx, _mm512_loadu_si512(base + 64 * r));
            odd = _mm512_mask_permutexvar_epi16(odd, sp->take[r + 1], sp->idx, _mm512_loadu_si512(base + 64 * r + 64));
        }
        if (r < sp->nfull)
            out = _mm512_mask_permutexvar_epi16(out, sp->take[r], sp->idx, _mm512_loadu_si512(base + 64 * r)), r++;
        if (sp->last)
            odd = _mm512_mask_permutexvar_epi16(odd, sp->take[r], sp->idx,
                                                _mm512_maskz_loadu_epi16(sp->last, base + 64 * r));
        return _mm512_or_si512(out, odd);
    }
    if (!have)
        return out;
    const size_t need = (have - 1) * sp->stride + sp->hend; /* even */
    for (int r = 0; r < sp->nreg && 64 * (size_t)r < need; r++) {
        const size_t left = need - 64 * (size_t)r;
        const __m512i x = left >= 64 ? _mm512_loadu_si512(base + 64 * r)
                                     : _mm512_maskz_loadu_epi16((__mmask32)((1u << (left / 2)) - 1u), base + 64 * r);
        out = _mm512_mask_permutexvar_epi16(out, sp->take[r], sp->idx, x);
    }
    return out;
}

/* the 16 halves of words 0..15 (hi 0) or 16..31 (hi 1) of w as floats (exact) */
static inline __m512 vq_span_floats(__m512i w, int hi)
{
    return _mm512_cvtph_ps(hi ? _mm512_extracti64x4_epi64(w, 1) : _mm512_castsi512_si256(w));
}

#endif
