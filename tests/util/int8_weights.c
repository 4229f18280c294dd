/* int8_weights.c -- see int8_weights.h. */
#include "int8_weights.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

void vq_test_int8_weight_sums(vq_codec *plain, vq_codec *q8, int D, int bits)
{
    const int n = 100, nq = 3;
    float *v = malloc(sizeof(float) * (size_t)D * n), *w = malloc(sizeof(float) * (size_t)n * nq);
    size_t bytes = vq_codec_bytes_per_token(plain) * (size_t)n;
    uint8_t *ca = malloc(bytes), *cb = malloc(bytes);
    float *oa = calloc((size_t)D * nq, sizeof(float)), *ob = calloc((size_t)D * nq, sizeof(float));
    CHECK(v && w && ca && cb && oa && ob && vq_codec_bytes_per_token(q8) * (size_t)n == bytes);
    if (v && w && ca && cb && oa && ob) {
        for (int i = 0; i < D * n; i++)
            v[i] = (float)((i * 41) % 103) / 51.0f - 1.0f + (i % D == 9 ? 6.0f : 0.0f);
        float wmax = 0.0f, vmax = 0.0f;
        for (int i = 0; i < n * nq; i++)
            w[i] = (float)((i * 29) % 89) / 4000.0f + (i % n == 17 ? 0.5f : 0.0f), wmax = fmaxf(wmax, w[i]);
        for (int i = 0; i < D * n; i++)
            vmax = fmaxf(vmax, fabsf(v[i]));
        CHECK_OK(vq_codec_encode(plain, v, (size_t)n, ca));
        CHECK_OK(vq_codec_encode(q8, v, (size_t)n, cb));
        CHECK(memcmp(ca, cb, bytes) == 0);
        CHECK_OK(vq_codec_accumulate(plain, w, nq, ca, (size_t)n, oa));
        CHECK_OK(vq_codec_accumulate(q8, w, nq, cb, (size_t)n, ob));
        const float cmax = (float)((1 << bits) - 1), bound = (float)n * wmax * (2.0f * vmax / cmax) * cmax / 254.0f + 1e-4f;
        float worst = 0.0f;
        int differ = 0;
        for (int i = 0; i < D * nq; i++) {
            worst = fmaxf(worst, fabsf(oa[i] - ob[i]));
            differ |= oa[i] != ob[i];
        }
        CHECKF(worst <= bound && differ, "%s D=%d: worst %g (bound %g), differ %d", vq_codec_spec(q8), D, worst, bound,
               differ);
    }
    free(v), free(w), free(ca), free(cb), free(oa), free(ob);
}
