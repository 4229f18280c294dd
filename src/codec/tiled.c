/* tiled.c -- see tiled.h. */
#include "codec/tiled.h"
#include "kernels/kernels.h"

#define VQ_TILE_MIN 16          /* tokens: enough rows to amortise a tile's setup */
#define VQ_TILE_BYTES (16 << 10) /* a tile of floats stays well inside L1 */

size_t vq_tile_tokens(size_t block_tokens, size_t accum_size)
{
    size_t want = VQ_TILE_BYTES / (accum_size * sizeof(float));
    if (want < VQ_TILE_MIN)
        want = VQ_TILE_MIN;
    if (block_tokens >= want)
        return block_tokens;
    return (want + block_tokens - 1) / block_tokens * block_tokens;
}

int vq_codec_tiled_score_ok(const vq_codec *c)
{
    return c->tile && c->ops->dot_query && !c->score_own && c->query_bytes % sizeof(float) == 0 &&
           c->query_bytes >= sizeof(float) * c->accum_size;
}

int vq_codec_tiled_accum_ok(const vq_codec *c) { return c->tile != NULL && !c->accum_own; }

void vq_codec_score_tiled(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n, float *scores)
{
    const size_t T = c->tile_tokens, E = c->accum_size, bpt = c->block_bytes / c->block_tokens;
    const float *q = (const float *)(const void *)qbuf;
    const vq_kernels *k = vq_kernels_get();
    for (size_t i0 = 0; i0 < n; i0 += T) {
        size_t nt = n - i0 < T ? n - i0 : T;
        c->ops->values(c, codes + i0 * bpt, nt, c->tile);
        k->dense_dot(q, c->query_bytes / sizeof(float), n_q, c->tile, VQ_ELEM_F32, nt, E, scores + i0, n);
    }
}

void vq_codec_accumulate_tiled(vq_codec *c, const float *w, int n_q, const uint8_t *codes, size_t n, float *acc)
{
    const size_t T = c->tile_tokens, E = c->accum_size, bpt = c->block_bytes / c->block_tokens;
    const vq_kernels *k = vq_kernels_get();
    for (size_t i0 = 0; i0 < n; i0 += T) {
        size_t nt = n - i0 < T ? n - i0 : T;
        c->ops->values(c, codes + i0 * bpt, nt, c->tile);
        k->dense_axpy(w + i0, n, n_q, c->tile, VQ_ELEM_F32, nt, E, acc, E);
    }
}
