/* pq_score_ref.c -- the scalar reference of kernels.h pq_score. */
#include "kernels/kernels.h"

void vq_pq_score_ref(const uint8_t *codes, size_t stride, size_t n, size_t M, const float *tabs, size_t K,
                     size_t tstride, int n_q, float *s, size_t sstride, float *work)
{
    (void)work;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *row = codes + i * stride;
        for (int j = 0; j < n_q; j++) {
            const float *t = tabs + (size_t)j * tstride;
            float a = 0.0f;
            for (size_t m = 0; m < M; m++)
                a = a + t[m * K + row[m]];
            s[(size_t)j * sstride + i] = a;
        }
    }
}
