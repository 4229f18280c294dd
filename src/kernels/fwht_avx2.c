/* fwht_avx2.c -- AVX2 twins of fwht and flip_signs (kernels/fwht.h), the
 * 8-lane form of fwht_avx512.c: stages h = 1, 2, 4 inside a register,
 * h >= 8 across registers, then the scale. */
#include "kernels/fwht.h"

#include <immintrin.h>
#include <math.h>

#include "kernels/fwht_blocks.h"

/* stage h < 8 on one register: hi selects the lanes whose bit h is set */
static inline __m256 lane_stage(__m256 x, __m256 p, __m256 hi)
{
    return _mm256_blendv_ps(_mm256_add_ps(x, p), _mm256_sub_ps(p, x), hi);
}

static inline __attribute__((always_inline)) void fwht_regs(float *x, const size_t N)
{
    __m256 X[64];
    const size_t R = N / 8;
    const __m256 h1 = _mm256_castsi256_ps(_mm256_setr_epi32(0, -1, 0, -1, 0, -1, 0, -1));
    const __m256 h2 = _mm256_castsi256_ps(_mm256_setr_epi32(0, 0, -1, -1, 0, 0, -1, -1));
    const __m256 h4 = _mm256_castsi256_ps(_mm256_setr_epi32(0, 0, 0, 0, -1, -1, -1, -1));
    for (size_t r = 0; r < R; r++) {
        __m256 v = _mm256_loadu_ps(x + 8 * r);
        v = lane_stage(v, _mm256_permute_ps(v, 0xB1), h1);
        v = lane_stage(v, _mm256_permute_ps(v, 0x4E), h2);
        X[r] = lane_stage(v, _mm256_permute2f128_ps(v, v, 0x01), h4);
    }
    for (size_t h = 1; h < R; h <<= 1)
        for (size_t i = 0; i < R; i += h << 1)
            for (size_t j = i; j < i + h; j++) {
                const __m256 a = X[j], b = X[j + h];
                X[j] = _mm256_add_ps(a, b);
                X[j + h] = _mm256_sub_ps(a, b);
            }
    const __m256 s = _mm256_set1_ps(1.0f / sqrtf((float)N));
    for (size_t r = 0; r < R; r++)
        _mm256_storeu_ps(x + 8 * r, _mm256_mul_ps(X[r], s));
}

static int fwht_pow2_avx2(float *x, size_t n)
{
    switch (n) { /* n a constant in each: the registers stay registers */
    case 8: fwht_regs(x, 8); return 1;
    case 16: fwht_regs(x, 16); return 1;
    case 32: fwht_regs(x, 32); return 1;
    case 64: fwht_regs(x, 64); return 1;
    case 128: fwht_regs(x, 128); return 1;
    case 256: fwht_regs(x, 256); return 1;
    case 512: fwht_regs(x, 512); return 1;
    default: return 0;
    }
}

void vq_fwht_avx2(float *x, size_t n) { vq_fwht_blocks(x, n, fwht_pow2_avx2); }

void vq_flip_signs_avx2(float *x, const uint8_t *bits, size_t n)
{
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i sign = _mm256_set1_epi32((int)0x80000000u);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) { /* lane e of byte i/8: bit e */
        const __m256i b = _mm256_and_si256(_mm256_set1_epi32(bits[i / 8]), bit);
        const __m256i flip = _mm256_and_si256(_mm256_cmpeq_epi32(b, bit), sign);
        _mm256_storeu_ps(x + i, _mm256_xor_ps(_mm256_loadu_ps(x + i), _mm256_castsi256_ps(flip)));
    }
    if (i < n)
        vq_flip_signs_ref(x + i, bits + i / 8, n - i);
}
