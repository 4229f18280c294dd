/* pq_axpy_ref.c -- the scalar reference of kernels.h pq_axpy. */
#include <math.h>

#include "kernels/kernels.h"

void vq_pq_axpy_ref(const uint8_t *codes, size_t stride, size_t nt, size_t M, size_t sd, const float *cb, size_t K,
                    const float *w, size_t wstride, int n_q, float *acc, size_t astride)
{
    for (size_t i = 0; i < nt; i++) {
        const uint8_t *row = codes + i * stride;
        for (int j = 0; j < n_q; j++) {
            const float wi = w[(size_t)j * wstride + i];
            float *a = acc + (size_t)j * astride;
            for (size_t m = 0; m < M; m++) {
                const float *c = cb + (m * K + row[m]) * sd;
                for (size_t d = 0; d < sd; d++)
                    a[m * sd + d] = fmaf(wi, c[d], a[m * sd + d]);
            }
        }
    }
}
