/* registry.c -- the list of compression methods, in display order. */
#include "codec/codec.h"

const vq_codec_ops *const vq_codec_registry[] = {
    &vq_codec_fp16_ops,
    &vq_codec_kivi_ops,
    &vq_codec_vecinfer_ops,
    &vq_codec_spectral_ops,
    NULL,
};
