/* prerope.h -- keys packed before RoPE (cache config `prerope=1`; KVQuant,
 * Hooper et al. 2024).
 *
 * The model hands the cache RoPE'd keys as always. With prerope=1, when a
 * group leaves the fp16 window its keys are rotated back by -angle(pos)
 * (RoPE undone), and the codec packs the pre-RoPE keys, whose per-channel
 * statistics do not turn with the position. Scoring decodes each key block
 * and takes plain dot products after RoPE at the token's position, split
 * as RoPE(k, lo + hi).q = RoPE(k, lo).RoPE(q, -hi) (prerope.c's tables:
 * each key turns by its low angle row, the queries by minus the high row
 * once per run of keys sharing it); gather returns RoPE'd keys. So for exact codes the
 * scores equal the post-RoPE ones (up to float rounding), and the codec's
 * error is made where the channels are stable. The RoPE of each layer
 * (inv_freq[D/2] and the pairing) comes from the model:
 * vq_cache_for_model sets it; a prerope cache without it refuses appends.
 * No bytes per token are added (the tables are the model's: D/2 floats per
 * layer, and the angle tables of prerope.c: 256 x D floats per distinct
 * RoPE plus D floats per 256 positions; all counted in the cache's buffer
 * bytes). A codec with score_rope (codec.h; kivix) scores a run of keys
 * from its codes, turning each in registers (kernels.h rope_codes_dot);
 * other codecs decode the block, then rope_pairs and dense_dot. A saved
 * cache carries each layer's RoPE and centres (the prerope section of
 * docs/cache-format.md, version 4), so a loaded one scores as before.
 *
 * prerope=2: as 1, and the pre-RoPE keys are centred per (layer, KV head):
 * the mean mu of the fp16 window's non-sink tokens when the head's first
 * group is packed (residual + G tokens after the sinks) is kept (D floats per head, in the buffer bytes) and the codec packs
 * k - mu; decoding adds mu back before RoPE, so scores and gather see
 * decode(k - mu) + mu. For codecs whose error grows with |k| (the rotated
 * per-token codecs: turboquant_*, rabitq) the keys' shared offset then
 * costs nothing. */
#ifndef VQ_CACHE_PREROPE_H
#define VQ_CACHE_PREROPE_H

#include "cache/cache_internal.h"

/* each layer's RoPE: vq_cache_set_rope (veloxquant.h) */
/* refuse configs prerope cannot serve (cross-layer sharing scores the
 * anchor's codes with the codec's own kernels) */
vq_status vq_cache_prerope_check(const vq_cache *c, char *err);
/* 1 if the cache packs keys before RoPE */
int vq_cache_prerope_on(const vq_cache *c);
/* VQ_OK unless prerope=1 and layer L has no RoPE set */
vq_status vq_cache_prerope_ready(vq_cache *c, const vq_cache_layer *L);
/* keys x[n][D] at positions pos[]: undo RoPE in place (no-op without),
 * and tabulate their angles for scoring (the two calls below) */
vq_status vq_cache_prerope_unrope(vq_cache *c, const vq_cache_layer *L, const int32_t *pos, size_t n, float *x);
/* the rotation alone: changes nothing but x, so threads may run it at once
 * for different x (no-op without prerope or before the layer's RoPE is set) */
void vq_cache_prerope_unrope_rows(const vq_cache *c, const vq_cache_layer *L, const int32_t *pos, size_t n,
                                  float *x);
/* the angle tables grown to cover positions pos[0..n) (scoring reads them) */
vq_status vq_cache_prerope_tabulate(vq_cache *c, const vq_cache_layer *L, const int32_t *pos, size_t n);
/* prerope=2: keys x[n][D] (pre-RoPE) about to be packed at slots s.. of H
 * (still in H's window): subtract the head's centre, which the flush at
 * s == 0 sets from the window (no-op for other prerope values) */
vq_status vq_cache_prerope_center(vq_cache *c, const vq_cache_layer *L, const vq_cache_head *H, size_t s, size_t n,
                                  float *x);
/* keys x[n][D] decoded from packed slots s0.. of H: add the centre
 * (prerope=2), apply RoPE in place */
void vq_cache_prerope_rerope(const vq_cache *c, const vq_cache_layer *L, const vq_cache_head *H, size_t s0,
                             size_t n, float *x);
/* Raw scores of the n packed keys of page pg of H for nq queries (as
 * vq_codec_score with kc and W->qbuf); with prerope: the keys turned by
 * RoPE, dot with the float queries W->qf[nq][D] (W's prerope scratch). */
vq_status vq_cache_key_scores(vq_cache *c, const vq_cache_layer *L, const vq_cache_head *H, vq_codec *kc,
                              size_t pg, size_t n, vq_attn_worker *W, size_t nq, float *out);
/* The saved section (docs/cache-format.md): its size; write it into out
 * (cap bytes; VQ_ERR_STATE when a layer has no RoPE yet); read it into a
 * cache rebuilt from a file whose layers are loaded (sets each layer's
 * RoPE and centres, grows the tables over every stored position; a bad
 * field is VQ_ERR_FORMAT with a message in err; *used: bytes read). */
size_t vq_cache_prerope_section_bytes(const vq_cache *c);
vq_status vq_cache_prerope_section_write(const vq_cache *c, uint8_t *out, size_t cap);
vq_status vq_cache_prerope_section_read(vq_cache *c, const uint8_t *in, size_t len, size_t *used, char *err);
/* 1 if layer l's RoPE is set and equals (inv_freq[head_dim/2], neox) */
int vq_cache_prerope_matches(const vq_cache *c, int l, const float *inv_freq, int neox);
/* bytes held for RoPE tables; free them */
size_t vq_cache_prerope_bytes(const vq_cache *c);
void vq_cache_prerope_free(vq_cache *c);

#endif
