/* hadamard.c -- scalar reference fast Walsh-Hadamard transform. */
#include "core/hadamard.h"

#include <math.h>

static int is_pow2(size_t n) { return n && !(n & (n - 1)); }

int vq_fwht_supported(size_t n)
{
    if (is_pow2(n))
        return 1;
    return n % 3 == 0 && is_pow2(n / 3);
}

static void fwht_pow2(float *x, size_t n)
{
    for (size_t h = 1; h < n; h <<= 1) {
        for (size_t i = 0; i < n; i += h << 1) {
            for (size_t j = i; j < i + h; j++) {
                float a = x[j], b = x[j + h];
                x[j] = a + b;
                x[j + h] = a - b;
            }
        }
    }
    float s = 1.0f / sqrtf((float)n);
    for (size_t i = 0; i < n; i++)
        x[i] *= s;
}

void vq_fwht(float *x, size_t n)
{
    if (is_pow2(n)) {
        fwht_pow2(x, n);
        return;
    }
    size_t m = n / 3;
    for (int b = 0; b < 3; b++)
        fwht_pow2(x + (size_t)b * m, m);
}
