/* unpack_avx512x.h -- 64 codes of 1..8 bits (core/bitstream.h layout, the
 * run starting on a byte) into 64 bytes with AVX-512 VBMI: one masked load
 * of the 8*bits bytes, one byte permute that gives 64-bit lane g the bytes
 * of codes 8g..8g+7, one multishift that moves code k of each lane to byte
 * k, one mask. Include only from *_avx512x.c files. */
#ifndef VQ_KERNELS_UNPACK_AVX512X_H
#define VQ_KERNELS_UNPACK_AVX512X_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    __m512i perm, shifts, low;
    __mmask64 ld; /* the 8*bits bytes of 64 codes */
} vq_unpack64_ctl;

/* the controls in registers (built from 64-bit words: no table in memory):
 * permute byte 8g + j <- byte g*bits + j, shift of byte j: j*bits */
static inline vq_unpack64_ctl vq_unpack64_init(int bits)
{
    const uint64_t ones = 0x0101010101010101ull, iota = 0x0706050403020100ull;
    vq_unpack64_ctl u;
    u.perm = _mm512_add_epi64(_mm512_set1_epi64((long long)iota),
                              _mm512_mullo_epi64(_mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7),
                                                 _mm512_set1_epi64((long long)(ones * (uint64_t)bits))));
    u.shifts = _mm512_set1_epi64((long long)(iota * (uint64_t)bits));
    u.low = _mm512_set1_epi8((char)((1u << bits) - 1u));
    u.ld = bits == 8 ? ~(__mmask64)0 : (((__mmask64)1 << (8 * bits)) - 1);
    return u;
}

/* the codes in the bytes of src that ld selects (u->ld: all 64 codes) */
static inline __attribute__((always_inline)) __m512i vq_unpack64(const uint8_t *src, __mmask64 ld,
                                                                 const vq_unpack64_ctl *u)
{
    const __m512i raw = _mm512_maskz_loadu_epi8(ld, src);
    return _mm512_and_si512(_mm512_multishift_epi64_epi8(u->shifts, _mm512_permutexvar_epi8(u->perm, raw)), u->low);
}

#endif
