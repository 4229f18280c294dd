/* synth_kv.h -- synthetic vectors shaped like real attention keys, for
 * codec quality tests (header-only, static functions).
 *
 * Model (per channel c of D): x_c = mean_c + scale_c * (0.8 * sum_r
 * mix[r][c] * z_r + 0.6 * e_c) with R = 8 shared latent factors z_r ~ N(0,1)
 * (keys are strongly low-rank in practice) and independent noise e_c ~
 * N(0,1). Most channels have scale 1 and a mean ~ N(0, 0.5^2); D/32 (at
 * least 2) "outlier" channels have a magnitude M uniform in [10, 50]: mean
 * +-M and scale M/4, i.e. consistently large values that vary a little
 * from token to token, like the massive channels of LLM keys (KIVI, Fig. 2;
 * KVQuant, Sec. 3).
 * With outliers = 0 there are no outlier channels (value-like data).
 * The distribution is fixed by the seed given to vq_synth_init; draws come
 * from a separate rng, so calibration and evaluation sets can be fresh
 * samples of the same distribution. */
#ifndef VQ_TEST_SYNTH_KV_H
#define VQ_TEST_SYNTH_KV_H

#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"

#define VQ_SYNTH_R 8

typedef struct {
    int D;
    int n_outliers;
    float mean[256], scale[256];
    float mix[VQ_SYNTH_R][256];
} vq_synth;

static inline void vq_synth_init(vq_synth *s, int D, uint64_t seed, int outliers)
{
    vq_rng r;
    vq_rng_seed(&r, seed);
    s->D = D;
    for (int c = 0; c < D; c++) {
        s->mean[c] = 0.5f * vq_rng_normal(&r);
        s->scale[c] = 1.0f;
    }
    s->n_outliers = !outliers ? 0 : D / 32 < 2 ? 2 : D / 32;
    for (int k = 0; k < s->n_outliers; k++) {
        int c = (int)(vq_rng_next(&r) % (uint64_t)D);
        float mag = 10.0f + 40.0f * vq_rng_uniform(&r);
        s->scale[c] = 0.25f * mag;
        s->mean[c] = mag * vq_rng_sign(&r);
    }
    for (int k = 0; k < VQ_SYNTH_R; k++)
        for (int c = 0; c < D; c++)
            s->mix[k][c] = vq_rng_normal(&r) * 0.35355339f; /* 1/sqrt(R) */
}

/* n vectors of s->D floats, row-major, into x */
static inline void vq_synth_draw(const vq_synth *s, vq_rng *r, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float z[VQ_SYNTH_R];
        for (int k = 0; k < VQ_SYNTH_R; k++)
            z[k] = vq_rng_normal(r);
        for (int c = 0; c < s->D; c++) {
            float v = 0.0f;
            for (int k = 0; k < VQ_SYNTH_R; k++)
                v += s->mix[k][c] * z[k];
            x[i * (size_t)s->D + c] = s->mean[c] + s->scale[c] * (0.8f * v + 0.6f * vq_rng_normal(r));
        }
    }
}

/* sum ||a-b||^2 / sum ||b||^2 over m floats */
static inline double vq_rel_err2(const float *a, const float *b, size_t m)
{
    double e = 0, t = 0;
    for (size_t i = 0; i < m; i++) {
        double d = (double)a[i] - b[i];
        e += d * d;
        t += (double)b[i] * b[i];
    }
    return t > 0 ? e / t : e;
}

/* plain dot products: out[j*n + i] = <q_j, x_i> */
static inline void vq_ref_scores(const float *q, int n_q, const float *x, size_t n, int D, float *out)
{
    for (int j = 0; j < n_q; j++)
        for (size_t i = 0; i < n; i++) {
            double s = 0;
            for (int d = 0; d < D; d++)
                s += (double)q[(size_t)j * D + d] * x[i * (size_t)D + d];
            out[(size_t)j * n + i] = (float)s;
        }
}

#endif
