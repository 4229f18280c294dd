/* rope_avx512.c -- AVX-512 twin of rope.h's turn (rope_avx512.h), the
 * reference's bits. */
#include "kernels/rope.h"
#include "kernels/rope_avx512.h"

void vq_rope_pairs_avx512(float *x, const float *cs, size_t half, int neox, float sgn)
{
    vq_rope_row_avx512(x, cs, half, neox, sgn);
}
