/* rng.h -- small deterministic random numbers (splitmix64 seeding a
 * xoshiro256** state). Same seed, same stream, on every platform. */
#ifndef VQ_CORE_RNG_H
#define VQ_CORE_RNG_H

#include <stdint.h>

typedef struct { uint64_t s[4]; } vq_rng;

void vq_rng_seed(vq_rng *r, uint64_t seed);
uint64_t vq_rng_next(vq_rng *r);
/* uniform in [0, 1) with 24 random bits */
float vq_rng_uniform(vq_rng *r);
/* standard normal (Box-Muller) */
float vq_rng_normal(vq_rng *r);
/* +1.0f or -1.0f */
float vq_rng_sign(vq_rng *r);
/* derive an independent seed for a sub-stream (layer, head, role, ...) */
uint64_t vq_seed_mix(uint64_t seed, uint64_t salt);

#endif
