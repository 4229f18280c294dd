/* quants_avx2.c -- AVX2 dot kernels (stub table; kernels follow). */
#include "model/quants_impl.h"

vq_dot_kernel vq_dot_avx2_kernel(vq_wtype t)
{
    (void)t;
    return NULL;
}
