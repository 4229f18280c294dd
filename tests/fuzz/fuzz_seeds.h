/* fuzz_seeds.h -- the cache shape and codecs that the seed files of the
 * cache and calib corpora are made for (tests/fuzz/make_seeds.c writes
 * them; the harnesses use the same values so seeds load). */
#ifndef VQ_TESTS_FUZZ_SEEDS_H
#define VQ_TESTS_FUZZ_SEEDS_H

#include "veloxquant.h"

#define VQ_SEED_LAYERS 3
#define VQ_SEED_FINGERPRINT 0x5eedf00dcafe1234ULL
#define VQ_SEED_HEAD_DIM 32

/* layer 0 plain, layer 1 a sliding window of 8, layer 2 soft-capped */
static inline void vq_seed_cache_shape(vq_layer_shape *ls)
{
    for (int l = 0; l < VQ_SEED_LAYERS; l++)
        ls[l] = (vq_layer_shape){ 2, 4, VQ_SEED_HEAD_DIM, l == 1 ? 8 : 0, l == 2 ? 30.0f : 0.0f };
}

/* the calibrated codecs the calib harness loads states into */
static const char *const vq_seed_calib_specs[4] = {
    "vecinfer:sub_dim=8,bits=8", "vecinfer:sub_dim=4,bits=4", "spectral:bits=2,signal_bits=2",
    "spectral:bits=4,signal_bits=4",
};

#endif
