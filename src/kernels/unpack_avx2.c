/* unpack_avx2.c -- kernels.h bits_unpack with AVX2, 32 codes per step:
 * four registers of 8 codes in 32-bit lanes (codes_avx2.h), masked,
 * narrowed by two unsigned-saturating packs (exact: every code < 256),
 * and the packs' lane order undone by one dword permute. The tail (fewer
 * than 32 codes, starting on a byte): the bytes its codes lie in are
 * copied into a zeroed 32-byte block, which one step unpacks (its loads
 * stay in the block), and its codes copied out: nothing outside the codes'
 * bytes is read, nothing past out[n) written. */
#include <string.h>

#include "kernels/codes_avx2.h"
#include "kernels/kernels.h"

/* codes [0, 32 * steps) of width b at src into out (b a constant) */
static inline __attribute__((always_inline)) void unpack32s(const uint8_t *src, size_t steps, const int b,
                                                            uint8_t *out)
{
    const __m256i mask = vq_codes_mask(b), order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256i sh0 = vq_codes_shifts(b, 0), sh1 = vq_codes_shifts(b, 1);
    const __m256i shw = _mm256_setr_epi32(0, b, 2 * b, 3 * b, 0, b, 2 * b, 3 * b);
    for (size_t s = 0; s < steps; s++) {
        const uint8_t *p = src + s * 4 * (size_t)b;
        __m256i c[4];
        if (b <= 4) {
            vq_codes16(p, b, sh0, sh1, &c[0], &c[1]);
            vq_codes16(p + 2 * b, b, sh0, sh1, &c[2], &c[3]);
        } else
            for (int r = 0; r < 4; r++)
                c[r] = vq_codes8_wide(p + r * b, b, shw);
        for (int r = 0; r < 4; r++)
            c[r] = _mm256_and_si256(c[r], mask);
        /* words [c0 0-3, c1 0-3 | c0 4-7, c1 4-7], bytes: dwords of codes
         * 0-3, 8-11, 16-19, 24-27 | 4-7, 12-15, 20-23, 28-31 */
        const __m256i w01 = _mm256_packus_epi32(c[0], c[1]), w23 = _mm256_packus_epi32(c[2], c[3]);
        const __m256i by = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(w01, w23), order);
        _mm256_storeu_si256((__m256i *)(void *)(out + 32 * s), by);
    }
}

static void unpack_steps(const uint8_t *src, size_t steps, int bits, uint8_t *out)
{
    switch (bits) {
    case 1: unpack32s(src, steps, 1, out); break;
    case 2: unpack32s(src, steps, 2, out); break;
    case 3: unpack32s(src, steps, 3, out); break;
    case 4: unpack32s(src, steps, 4, out); break;
    case 5: unpack32s(src, steps, 5, out); break;
    case 6: unpack32s(src, steps, 6, out); break;
    case 7: unpack32s(src, steps, 7, out); break;
    default: memcpy(out, src, 32 * steps); break;
    }
}

void vq_bits_unpack_avx2(const uint8_t *src, size_t n, int bits, uint8_t *out)
{
    if (bits < 1 || bits > 8) {
        vq_bits_unpack_ref(src, n, bits, out);
        return;
    }
    const size_t steps = n / 32, done = steps * 32;
    unpack_steps(src, steps, bits, out);
    if (done < n) {
        uint8_t in[32] = { 0 }, codes[32];
        memcpy(in, src + done / 8 * (size_t)bits, ((n - done) * (size_t)bits + 7) / 8);
        unpack_steps(in, 1, bits, codes);
        memcpy(out + done, codes, n - done);
    }
}
