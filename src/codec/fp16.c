/* fp16.c -- the uncompressed baseline: each element as IEEE half.
 * Block: 1 token, 2*D bytes. Score/accumulate read the halves directly
 * (kernels/dense.h on VQ_ELEM_F16 rows; where the kernel table has SIMD
 * loops for them, dense_f16, they replace the tiled path). */
#include <stdio.h>
#include <string.h>

#include "codec/codec.h"
#include "kernels/kernels.h"

static vq_status fp16_init(vq_codec *c, vq_spec *spec)
{
    (void)spec;
    c->block_tokens = 1;
    c->block_bytes = 2 * (size_t)c->head_dim;
    c->shared_bytes = 0;
    c->query_bytes = sizeof(float) * (size_t)c->head_dim;
    c->accum_size = (size_t)c->head_dim;
    c->score_own = c->accum_own = vq_kernels_get()->dense_f16;
    snprintf(c->canon, sizeof c->canon, "fp16");
    return VQ_OK;
}

static void fp16_destroy(vq_codec *c) { (void)c; }

/* the halves of vq_fp32_to_fp16 / vq_fp16_to_fp32 (kernels.h fp16_from_row,
 * fp16_row) */
static void fp16_encode(vq_codec *c, const float *x, size_t n, uint8_t *dst)
{
    vq_kernels_get()->fp16_from_row(x, dst, n * (size_t)c->head_dim);
}

static void fp16_decode(vq_codec *c, const uint8_t *src, size_t n, float *x)
{
    vq_kernels_get()->fp16_row(src, x, n * (size_t)c->head_dim);
}

/* accum-domain vectors = the values themselves (kernels.h fp16_row) */
static void fp16_values(vq_codec *c, const uint8_t *codes, size_t n, float *out)
{
    vq_kernels_get()->fp16_row(codes, out, n * (size_t)c->head_dim);
}

static void fp16_prepare_query(vq_codec *c, const float *q, uint8_t *qbuf)
{
    memcpy(qbuf, q, sizeof(float) * (size_t)c->head_dim);
}

static void fp16_score(vq_codec *c, const uint8_t *qbuf, int n_q,
                       const uint8_t *codes, size_t n, float *scores)
{
    const size_t D = (size_t)c->head_dim;
    vq_kernels_get()->dense_dot((const float *)(const void *)qbuf, D, n_q, codes, VQ_ELEM_F16, n, D, scores, n);
}

static void fp16_accumulate(vq_codec *c, const float *w, int n_q,
                            const uint8_t *codes, size_t n, float *acc)
{
    const size_t D = (size_t)c->head_dim;
    vq_kernels_get()->dense_axpy(w, n, n_q, codes, VQ_ELEM_F16, n, D, acc, D);
}

const vq_codec_ops vq_codec_fp16_ops = {
    .name = "fp16",
    .default_spec = "fp16",
    .needs_calibration = 0,
    .init = fp16_init,
    .destroy = fp16_destroy,
    .encode = fp16_encode,
    .decode = fp16_decode,
    .prepare_query = fp16_prepare_query,
    .score = fp16_score,
    .accumulate = fp16_accumulate,
    .accum_finish = vq_codec_finish_copy,
    .values = fp16_values,
    .dot_query = 1,
};
