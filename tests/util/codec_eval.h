/* codec_eval.h -- shared measurements for codec tests (header-only).
 *
 * vq_codec_eval encodes n vectors, decodes them, and measures:
 *   rel_mse     sum ||x^ - x||^2 / sum ||x||^2 (decode error)
 *   rel_score   ||S^ - S||_2 / ||S||_2 over all (query, key) pairs, S the
 *               fp64 dot products with the original x, S^ the fused scores
 *               computed by the codec straight from the packed codes
 *   fused_score max |fused - <q, x^>| / max |<q, x^>| (fused vs unfused)
 *   fused_acc   ||acc_fused - sum w x^|| / ||sum w x^|| per query, worst
 *               (accumulate from codes vs the weighted sum of decoded
 *               vectors; the weights are random positive, like softmax)
 * Returns 0 on success, -1 if a codec call failed (the message is left in
 * vq_last_error()). */
#ifndef VQ_TEST_CODEC_EVAL_H
#define VQ_TEST_CODEC_EVAL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth_kv.h"
#include "veloxquant.h"

typedef struct {
    double rel_mse, rel_score, fused_score, fused_acc;
} vq_codec_metrics;

static inline int vq_codec_eval(vq_codec *c, const float *x, size_t n, const float *q, int n_q,
                                uint64_t seed, vq_codec_metrics *m)
{
    const int D = vq_codec_head_dim(c);
    const size_t bt = vq_codec_block_tokens(c), bb = vq_codec_block_bytes(c);
    const size_t nb = n / bt, qb = vq_codec_query_bytes(c), as = vq_codec_accum_size(c);
    uint8_t *codes = malloc(nb * bb + 1);
    float *xh = malloc(n * (size_t)D * sizeof(float));
    float *s_true = malloc(n * (size_t)n_q * sizeof(float));
    float *s_dec = malloc(n * (size_t)n_q * sizeof(float));
    float *s_fused = malloc(n * (size_t)n_q * sizeof(float));
    uint8_t *qbuf = malloc(qb * (size_t)n_q + 1);
    float *w = malloc(n * (size_t)n_q * sizeof(float));
    float *acc = calloc(as * (size_t)n_q + 1, sizeof(float));
    float *out = malloc((size_t)D * sizeof(float));
    int rc = -1;
    if (!codes || !xh || !s_true || !s_dec || !s_fused || !qbuf || !w || !acc || !out)
        goto done;
    if (vq_codec_encode(c, x, n, codes) != VQ_OK || vq_codec_decode(c, codes, n, xh) != VQ_OK)
        goto done;
    m->rel_mse = vq_rel_err2(xh, x, n * (size_t)D);
    vq_ref_scores(q, n_q, x, n, D, s_true);
    vq_ref_scores(q, n_q, xh, n, D, s_dec);
    for (int j = 0; j < n_q; j++)
        if (vq_codec_prepare_query(c, q + (size_t)j * D, qbuf + (size_t)j * qb) != VQ_OK)
            goto done;
    if (vq_codec_score(c, qbuf, n_q, codes, n, s_fused) != VQ_OK)
        goto done;
    m->rel_score = sqrt(vq_rel_err2(s_fused, s_true, n * (size_t)n_q));
    double md = 0, mx = 0;
    for (size_t i = 0; i < n * (size_t)n_q; i++) {
        md = fmax(md, fabs((double)s_fused[i] - s_dec[i]));
        mx = fmax(mx, fabs((double)s_dec[i]));
    }
    m->fused_score = mx > 0 ? md / mx : md;
    vq_rng r;
    vq_rng_seed(&r, seed);
    for (size_t i = 0; i < n * (size_t)n_q; i++)
        w[i] = vq_rng_uniform(&r) / (float)n;
    if (vq_codec_accumulate(c, w, n_q, codes, n, acc) != VQ_OK)
        goto done;
    m->fused_acc = 0;
    for (int j = 0; j < n_q; j++) {
        if (vq_codec_accum_finish(c, acc + (size_t)j * as, out) != VQ_OK)
            goto done;
        double e = 0, t = 0;
        for (int d = 0; d < D; d++) {
            double ref = 0;
            for (size_t i = 0; i < n; i++)
                ref += (double)w[(size_t)j * n + i] * xh[i * (size_t)D + d];
            e += (out[d] - ref) * (out[d] - ref);
            t += ref * ref;
        }
        m->fused_acc = fmax(m->fused_acc, t > 0 ? sqrt(e / t) : sqrt(e));
    }
    rc = 0;
done:
    free(codes); free(xh); free(s_true); free(s_dec); free(s_fused);
    free(qbuf); free(w); free(acc); free(out);
    return rc;
}

/* n_q standard-normal queries of D floats */
static inline float *vq_gauss_queries(int n_q, int D, uint64_t seed)
{
    float *q = malloc((size_t)n_q * D * sizeof(float));
    vq_rng r;
    vq_rng_seed(&r, seed);
    for (size_t i = 0; q && i < (size_t)n_q * D; i++)
        q[i] = vq_rng_normal(&r);
    return q;
}

#endif
