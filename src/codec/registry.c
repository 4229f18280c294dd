/* registry.c -- the list of compression methods, in display order. */
#include "codec/codec.h"

const vq_codec_ops *const vq_codec_registry[] = {
    &vq_codec_fp16_ops,
    &vq_codec_q8_0_ops,
    &vq_codec_q4_0_ops,
    &vq_codec_turboquant_rvq_ops,
    &vq_codec_turboquant_mse_ops,
    &vq_codec_turboquant_prod_ops,
    &vq_codec_qjl_ops,
    &vq_codec_rabitq_ops,
    &vq_codec_kivi_ops,
    &vq_codec_kivix_ops,
    &vq_codec_vecinfer_ops,
    &vq_codec_spectral_ops,
    NULL,
};
