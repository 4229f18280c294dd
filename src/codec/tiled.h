/* tiled.h -- the generic fast path of score and accumulate for methods
 * with a `values` op (codec.h).
 *
 * Codes are turned, one tile of c->tile_tokens tokens at a time, into their
 * accum-domain vectors in c->tile (allocated once at vq_codec_create: about 16 KB
 * of floats, at least 16 tokens or one KIVI key group, vq_tile_tokens), and the tile is
 * scored against all n_q queries, or
 * summed into the n_q accumulators, by the dense kernels (kernels/dense.h). The
 * whole cache is never decoded: each code is read once per call, as in the
 * methods' own kernels, which stay the scalar reference these are tested
 * against (tests/test_codec_tiled.c).
 *
 * vq_codec_score / vq_codec_accumulate (codec.c) take this path when the
 * codec has a tile and the kernel table in use is a SIMD one (so
 * VQ_FORCE_ISA=scalar runs the references). Arguments are checked by those wrappers. */
#ifndef VQ_CODEC_TILED_H
#define VQ_CODEC_TILED_H

#include "codec/codec.h"

/* tokens per tile for a method whose block holds block_tokens tokens and
 * whose vectors have accum_size floats: about 16 KB of floats (at least 16
 * tokens), a whole number of blocks */
size_t vq_tile_tokens(size_t block_tokens, size_t accum_size);

/* 1 when c may take the tiled score / accumulate */
int vq_codec_tiled_score_ok(const vq_codec *c);
int vq_codec_tiled_accum_ok(const vq_codec *c);

void vq_codec_score_tiled(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n, float *scores);
void vq_codec_accumulate_tiled(vq_codec *c, const float *w, int n_q, const uint8_t *codes, size_t n, float *acc);

#endif
