/* unpack_avx512x.c -- kernels.h bits_unpack with AVX-512 VBMI
 * (unpack_avx512x.h), 64 codes per step; the tail reads only the bytes its
 * codes lie in and writes only its codes. */
#include "kernels/kernels.h"
#include "kernels/unpack_avx512x.h"

void vq_bits_unpack_avx512x(const uint8_t *src, size_t n, int bits, uint8_t *out)
{
    if (bits < 1 || bits > 8) {
        vq_bits_unpack_ref(src, n, bits, out);
        return;
    }
    const vq_unpack64_ctl u = vq_unpack64_init(bits);
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
        _mm512_storeu_si512(out + i, vq_unpack64(src + i / 8 * (size_t)bits, u.ld, &u));
    if (i < n) {
        const size_t left = n - i, nb = (left * (size_t)bits + 7) / 8;
        const __m512i c = vq_unpack64(src + i / 8 * (size_t)bits, ((__mmask64)1 << nb) - 1, &u); /* nb < 64 */
        _mm512_mask_storeu_epi8(out + i, ((__mmask64)1 << left) - 1, c);
    }
}
