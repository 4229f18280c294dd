/* rng.c -- splitmix64 + xoshiro256** (public-domain algorithms by
 * Vigna and Blackman). */
#include "core/rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void vq_rng_seed(vq_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

uint64_t vq_rng_next(vq_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

float vq_rng_uniform(vq_rng *r) { return (float)(vq_rng_next(r) >> 40) * (1.0f / 16777216.0f); }

float vq_rng_normal(vq_rng *r)
{
    double u1 = ((double)(vq_rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    double u2 = (double)(vq_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

float vq_rng_sign(vq_rng *r) { return (vq_rng_next(r) >> 63) ? -1.0f : 1.0f; }

uint64_t vq_seed_mix(uint64_t seed, uint64_t salt)
{
    uint64_t x = seed ^ (salt * 0xd6e8feb86659fd93ull);
    return splitmix64(&x);
}
