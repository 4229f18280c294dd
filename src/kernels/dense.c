/* dense.c -- scalar references of dense.h: one loop for each kernel, the
 * element type read per element (clarity over speed: the SIMD twins are
 * the fast paths). */
#include "kernels/dense.h"

#include "core/fp16.h"

/* element idx of the rows v of E elements */
static inline float row_at(const void *v, size_t idx, vq_elem elem, size_t E)
{
    const uint8_t *h = v;
    if (elem == VQ_ELEM_F16)
        return vq_fp16_to_fp32((vq_fp16)(h[2 * idx] | h[2 * idx + 1] << 8));
    if (elem == VQ_ELEM_Q8_0 || elem == VQ_ELEM_Q4_0) { /* block (idx % E) / 32 of row idx / E */
        const size_t bb = elem == VQ_ELEM_Q8_0 ? 34 : 18, e = idx % E, k = e % 32;
        const uint8_t *b = h + idx / E * (E / 32 * bb) + e / 32 * bb;
        const float d = vq_fp16_to_fp32((vq_fp16)(b[0] | b[1] << 8));
        if (elem == VQ_ELEM_Q8_0)
            return d * (float)(int8_t)b[2 + k];
        return d * (float)((k < 16 ? b[2 + k] & 15 : b[2 + k - 16] >> 4) - 8);
    }
    return ((const float *)v)[idx];
}

void vq_dense_dot_ref(const float *q, size_t qstride, int n_q, const void *v, vq_elem elem, size_t nt, size_t E,
                      float *s, size_t sstride)
{
    for (int j = 0; j < n_q; j++) {
        const float *qj = q + (size_t)j * qstride;
        for (size_t i = 0; i < nt; i++) {
            float t = 0.0f;
            for (size_t e = 0; e < E; e++)
                t += qj[e] * row_at(v, i * E + e, elem, E);
            s[(size_t)j * sstride + i] = t;
        }
    }
}

void vq_dense_axpy_ref(const float *w, size_t wstride, int n_q, const void *v, vq_elem elem, size_t nt, size_t E,
                       float *acc, size_t astride)
{
    for (int j = 0; j < n_q; j++) {
        float *a = acc + (size_t)j * astride;
        for (size_t i = 0; i < nt; i++) {
            float wi = w[(size_t)j * wstride + i];
            for (size_t e = 0; e < E; e++)
                a[e] += wi * row_at(v, i * E + e, elem, E);
        }
    }
}
