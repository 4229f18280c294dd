/* fwht_avx512.c -- AVX-512F twins of fwht and flip_signs (kernels/fwht.h).
 *
 * The transform holds n/16 registers: stages h = 1, 2, 4, 8 pair lanes of
 * one register (a permute brings each lane its partner p; the lower lane
 * of a pair keeps x + p = a + b, the upper one p - x = a - b), stages
 * h >= 16 pair whole registers (a + b, a - b). Then the scale. */
#include "kernels/fwht.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/fwht_blocks.h"

/* stage h < 16 on one register: hi holds the lanes whose bit h is set */
static inline __m512 lane_stage(__m512 x, __m512 p, __mmask16 hi)
{
    return _mm512_mask_sub_ps(_mm512_add_ps(x, p), hi, p, x);
}

static inline __attribute__((always_inline)) void fwht_regs(float *x, const size_t N)
{
    __m512 X[32];
    const size_t R = N / 16;
    for (size_t r = 0; r < R; r++) {
        __m512 v = _mm512_loadu_ps(x + 16 * r);
        v = lane_stage(v, _mm512_permute_ps(v, 0xB1), 0xAAAA);            /* h = 1 */
        v = lane_stage(v, _mm512_permute_ps(v, 0x4E), 0xCCCC);            /* h = 2 */
        v = lane_stage(v, _mm512_shuffle_f32x4(v, v, 0xB1), 0xF0F0);      /* h = 4 */
        X[r] = lane_stage(v, _mm512_shuffle_f32x4(v, v, 0x4E), 0xFF00);   /* h = 8 */
    }
    for (size_t h = 1; h < R; h <<= 1)
        for (size_t i = 0; i < R; i += h << 1)
            for (size_t j = i; j < i + h; j++) {
                const __m512 a = X[j], b = X[j + h];
                X[j] = _mm512_add_ps(a, b);
                X[j + h] = _mm512_sub_ps(a, b);
            }
    const __m512 s = _mm512_set1_ps(1.0f / sqrtf((float)N));
    for (size_t r = 0; r < R; r++)
        _mm512_storeu_ps(x + 16 * r, _mm512_mul_ps(X[r], s));
}

static int fwht_pow2_avx512(float *x, size_t n)
{
    switch (n) { /* n a constant in each: the registers stay registers */
    case 16: fwht_regs(x, 16); return 1;
    case 32: fwht_regs(x, 32); return 1;
    case 64: fwht_regs(x, 64); return 1;
    case 128: fwht_regs(x, 128); return 1;
    case 256: fwht_regs(x, 256); return 1;
    case 512: fwht_regs(x, 512); return 1;
    default: return 0;
    }
}

void vq_fwht_avx512(float *x, size_t n) { vq_fwht_blocks(x, n, fwht_pow2_avx512); }

void vq_flip_signs_avx512(float *x, const uint8_t *bits, size_t n)
{
    const __m512 sign = _mm512_set1_ps(-0.0f);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        uint16_t m;
        memcpy(&m, bits + i / 8, sizeof m); /* bits i..i+15, LSB first */
        const __m512 v = _mm512_loadu_ps(x + i);
        _mm512_storeu_ps(x + i, _mm512_castsi512_ps(_mm512_mask_xor_epi32(
                                    _mm512_castps_si512(v), (__mmask16)m, _mm512_castps_si512(v), _mm512_castps_si512(sign))));
    }
    if (i < n)
        vq_flip_signs_ref(x + i, bits + i / 8, n - i);
}
