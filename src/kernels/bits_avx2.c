/* bits_avx2.c -- bitdot and signscore (kernels.h) on AVX2. Exact integer
 * results, equal to the reference; signscore's float steps the reference's.
 *
 * D of 64, 128 or 256 bits and 1..4 query planes (RaBitQ / TurboQuant's
 * defaults): the nibble-table popcount (Mula, Kurz, Lemire, "Faster
 * Population Counts Using AVX2 Instructions", 2018) over four 64-bit words
 * per register -- four tokens (D = 64), two (128) or one (256). Per query
 * and plane p, VPSHUFB looks up popcount(n) << p for the low and the high
 * nibble of each byte of z & v_p (the tokens' words split into nibbles
 * once for up to 16 queries); the byte sums over the planes stay below
 * 2 * 4 * (1 + 2 + 4 + 8) = 120, so they are exact in bytes; VPSADBW sums
 * each word's bytes. Other shapes: POPCNT on 64-bit words (32-bit words
 * when D is not a multiple of 64). */
#include <immintrin.h>
#include <string.h>

#include "kernels/kernels.h"

static inline uint64_t ld64(const uint8_t *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

static inline uint32_t ld32(const uint8_t *p)
{
    uint32_t x;
    memcpy(&x, p, 4);
    return x;
}

/* the four 64-bit words of tokens i.. (W words each, 4 / W tokens; past
 * n: token n - 1 again) */
static inline __m256i words4(const uint8_t *codes, size_t stride, size_t n, size_t i, const int W)
{
    const uint8_t *t[4];
    for (int k = 0; k < 4 / W; k++)
        t[k] = codes + (i + (size_t)k < n ? i + (size_t)k : n - 1) * stride;
    if (W == 4)
        return _mm256_loadu_si256((const __m256i *)(const void *)t[0]);
    if (W == 2)
        return _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(const void *)t[1]),
                                _mm_loadu_si128((const __m128i *)(const void *)t[0]));
    return _mm256_setr_epi64x((long long)ld64(t[0]), (long long)ld64(t[1]), (long long)ld64(t[2]),
                              (long long)ld64(t[3]));
}

/* plane v's W words repeated to fill four */
static inline __m256i plane4(const uint8_t *v, const int W)
{
    if (W == 4)
        return _mm256_loadu_si256((const __m256i *)(const void *)v);
    if (W == 2)
        return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)v));
    return _mm256_set1_epi64x((long long)ld64(v));
}

/* pq of every query by the nibble tables (see above); W words per token
 * and QB planes constants after inlining */
static inline __attribute__((always_inline)) void bitdot_nibbles(const uint8_t *codes, size_t stride, size_t n,
                                                                 const int W, const uint8_t *planes, size_t qstride,
                                                                 int n_q, const int QB, uint32_t *pq)
{
    const __m256i pc = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, /* popcount of a nibble */
                                        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
    const __m256i nib = _mm256_set1_epi8(0x0f);
    const size_t T = (size_t)(4 / W); /* tokens per register */
    enum { QCHUNK = 16 };                /* queries whose split planes a pass keeps (on the stack) */
    __m256i lut[4];
    _Pragma("GCC unroll 4") for (int p = 0; p < QB; p++)
        lut[p] = _mm256_slli_epi16(pc, p); /* entries <= 4 << 3: no bit crosses a byte */
    for (int j0 = 0; j0 < n_q; j0 += QCHUNK) {
        const int nj = n_q - j0 < QCHUNK ? n_q - j0 : QCHUNK;
        __m256i vlo[QCHUNK][4], vhi[QCHUNK][4];
        for (int j = 0; j < nj; j++)
            _Pragma("GCC unroll 4") for (int p = 0; p < QB; p++) {
                const __m256i v = plane4(planes + (size_t)(j0 + j) * qstride + (size_t)p * (size_t)(8 * W), W);
                vlo[j][p] = _mm256_and_si256(v, nib);
                vhi[j][p] = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
            }
        for (size_t i = 0; i < n; i += T) { /* the tokens' words split once for all the queries */
            const __m256i z = words4(codes, stride, n, i, W);
            const __m256i zlo = _mm256_and_si256(z, nib), zhi = _mm256_and_si256(_mm256_srli_epi16(z, 4), nib);
            for (int j = 0; j < nj; j++) {
                __m256i acc = _mm256_setzero_si256();
                _Pragma("GCC unroll 4") for (int p = 0; p < QB; p++) {
                    acc = _mm256_add_epi8(acc, _mm256_shuffle_epi8(lut[p], _mm256_and_si256(zlo, vlo[j][p])));
                    acc = _mm256_add_epi8(acc, _mm256_shuffle_epi8(lut[p], _mm256_and_si256(zhi, vhi[j][p])));
                }
                __m256i w = _mm256_sad_epu8(acc, _mm256_setzero_si256()); /* one sum per word */
                if (W >= 2)
                    w = _mm256_add_epi64(w, _mm256_shuffle_epi32(w, _MM_SHUFFLE(1, 0, 3, 2))); /* per token */
                if (W == 4)
                    w = _mm256_add_epi64(w, _mm256_permute4x64_epi64(w, _MM_SHUFFLE(1, 0, 3, 2)));
                uint32_t *o = pq + (size_t)(j0 + j) * n + i;
                if (W == 1) {
                    const __m128i r = _mm256_castsi256_si128(
                        _mm256_permutevar8x32_epi32(w, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)));
                    if (i + 4 <= n) {
                        _mm_storeu_si128((__m128i *)(void *)o, r);
                    } else {
                        uint32_t t[4];
                        _mm_storeu_si128((__m128i *)(void *)t, r);
                        for (size_t k = 0; i + k < n; k++)
                            o[k] = t[k];
                    }
                } else if (W == 2) {
                    o[0] = (uint32_t)_mm256_cvtsi256_si32(w);
                    if (i + 1 < n)
                        o[1] = (uint32_t)_mm_cvtsi128_si32(_mm256_extracti128_si256(w, 1));
                } else {
                    o[0] = (uint32_t)_mm256_cvtsi256_si32(w);
                }
            }
        }
    }
}

/* the nibble-table path's shapes (W words, QB planes: constants) */
#define NIBBLES_QB(W)                                                                                           \
    switch (qbits) {                                                                                            \
    case 1: bitdot_nibbles(codes, stride, n, W, planes, qstride, n_q, 1, pq); break;                            \
    case 2: bitdot_nibbles(codes, stride, n, W, planes, qstride, n_q, 2, pq); break;                            \
    case 3: bitdot_nibbles(codes, stride, n, W, planes, qstride, n_q, 3, pq); break;                            \
    default: bitdot_nibbles(codes, stride, n, W, planes, qstride, n_q, 4, pq); break;                           \
    }

void vq_bitdot_avx2(const uint8_t *codes, size_t stride, size_t n, size_t D, const uint8_t *planes, size_t qstride,
                    int n_q, int qbits, uint32_t *pz, uint32_t *pq)
{
    const size_t W = D % 64 == 0 ? D / 64 : 0;
    if (n > 0 && qbits >= 1 && qbits <= 4 && (W == 1 || W == 2 || W == 4)) {
        for (size_t i = 0; i < n; i++) {
            const uint8_t *z = codes + i * stride;
            uint32_t c = 0;
            for (size_t w = 0; w < W; w++)
                c += (uint32_t)__builtin_popcountll(ld64(z + 8 * w));
            pz[i] = c;
        }
        if (W == 1)
            NIBBLES_QB(1)
        else if (W == 2)
            NIBBLES_QB(2)
        else
            NIBBLES_QB(4)
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const uint8_t *z = codes + i * stride;
        uint32_t c = 0;
        if (W)
            for (size_t w = 0; w < W; w++)
                c += (uint32_t)__builtin_popcountll(ld64(z + 8 * w));
        else
            for (size_t w = 0; w < D / 32; w++)
                c += (uint32_t)__builtin_popcount(ld32(z + 4 * w));
        pz[i] = c;
        for (int j = 0; j < n_q; j++) {
            uint32_t acc = 0;
            for (int p = 0; p < qbits; p++) {
                const uint8_t *v = planes + (size_t)j * qstride + (size_t)p * (D / 8);
                uint32_t s = 0;
                if (W)
                    for (size_t w = 0; w < W; w++)
                        s += (uint32_t)__builtin_popcountll(ld64(z + 8 * w) & ld64(v + 8 * w));
                else
                    for (size_t w = 0; w < D / 32; w++)
                        s += (uint32_t)__builtin_popcount(ld32(z + 4 * w) & ld32(v + 4 * w));
                acc += s << p;
            }
            pq[(size_t)j * n + i] = acc;
        }
    }
}

/* signscore: vq_bitdot_avx2's counts for a batch of tokens and queries,
 * then the reference's float steps (vq_signscore_via, bits_ref.c) eight
 * tokens per register, one rounding per step in the same order: the
 * reference's bits. The tokens' fp16 factors are converted once per batch
 * (VCVTPH2PS: the same floats for finite halves), not once per query. */
enum { SS_TOK = 64, SS_QRY = 16, SS_PAD = 8 /* a last group of 8 reads past nt, inside the arrays */ };

void vq_signscore_avx2(const uint8_t *codes, size_t stride, size_t n, size_t D, const size_t *offs, const float *w,
                       int n_sets, const float *f, size_t hoff, const uint8_t *planes, size_t qstride,
                       const float *qc, int n_q, int qbits, float *s, size_t sstride)
{
    uint32_t pz[2][SS_TOK + SS_PAD], pq[2][SS_QRY * SS_TOK + SS_PAD];
    float fac[SS_TOK + SS_PAD];
    const __m256 w0 = _mm256_set1_ps(w[0]), w1 = _mm256_set1_ps(n_sets > 1 ? w[1] : 0.0f);
    for (size_t i0 = 0; i0 < n; i0 += SS_TOK) {
        const size_t nt = n - i0 < SS_TOK ? n - i0 : SS_TOK;
        memset(fac + nt, 0, SS_PAD * sizeof *fac); /* the lanes read past nt: defined (their scores are not stored) */
        for (size_t i = 0; i < nt; i++) {
            if (f) {
                fac[i] = f[i0 + i];
            } else {
                uint16_t h;
                memcpy(&h, codes + (i0 + i) * stride + hoff, 2);
                fac[i] = _cvtsh_ss(h);
            }
        }
        for (int j0 = 0; j0 < n_q; j0 += SS_QRY) {
            const int nj = n_q - j0 < SS_QRY ? n_q - j0 : SS_QRY;
            for (int k = 0; k < n_sets; k++) {
                vq_bitdot_avx2(codes + i0 * stride + offs[k], stride, nt, D, planes + (size_t)j0 * qstride, qstride,
                               nj, qbits, pz[k], pq[k]);
                const size_t end = (size_t)nj * nt; /* <= SS_QRY * SS_TOK (held so for the compiler's bounds) */
                memset(pz[k] + nt, 0, SS_PAD * sizeof **pz); /* as fac's */
                memset(pq[k] + (end < SS_QRY * SS_TOK ? end : SS_QRY * SS_TOK), 0, SS_PAD * sizeof **pq);
            }
            for (int j = 0; j < nj; j++) {
                const float *c = qc + 3 * (size_t)(j0 + j);
                const __m256 c0 = _mm256_set1_ps(c[0]), c1 = _mm256_set1_ps(c[1]), c2 = _mm256_set1_ps(c[2]);
                float *out = s + (size_t)(j0 + j) * sstride + i0;
                for (size_t i = 0; i < nt; i += 8) {
#define CNT(a) _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(const void *)(a)))
                    __m256 z = _mm256_mul_ps(w0, CNT(pz[0] + i));
                    __m256 p = _mm256_mul_ps(w0, CNT(pq[0] + (size_t)j * nt + i));
                    if (n_sets > 1) {
                        z = _mm256_add_ps(z, _mm256_mul_ps(w1, CNT(pz[1] + i)));
                        p = _mm256_add_ps(p, _mm256_mul_ps(w1, CNT(pq[1] + (size_t)j * nt + i)));
                    }
#undef CNT
                    const __m256 t = _mm256_add_ps(_mm256_mul_ps(c0, z), _mm256_mul_ps(c1, p));
                    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(fac + i), _mm256_sub_ps(t, c2));
                    if (i + 8 <= nt) {
                        _mm256_storeu_ps(out + i, v);
                    } else {
                        float tail[8];
                        _mm256_storeu_ps(tail, v);
                        memcpy(out + i, tail, (nt - i) * sizeof(float));
                    }
                }
            }
        }
    }
}
