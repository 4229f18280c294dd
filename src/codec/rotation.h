/* rotation.h -- the randomized Hadamard rotation shared by the codecs
 * (q8_0/q4_0 rot=1, turboquant_*, rabitq, ...).
 *
 * R = M * diag(sigma): sigma is a seeded +-1 diagonal, M an orthonormal
 * transform built from the normalised Walsh-Hadamard transform
 * (src/core/hadamard.h). Every head_dim D that is a multiple of 32 up to
 * 256 is supported: write D = m * 2^k with m odd (m in {1,3,5,7}); split x
 * into m consecutive chunks of p = 2^k; M applies the FWHT of size p to
 * each chunk and then the orthonormal m-point DCT-II across the chunks
 * (position i of every chunk mixed together). For m = 1 (D = 32, 64, 128,
 * 256) M is the plain normalised FWHT. So every output coordinate depends
 * on (almost) every input coordinate, unlike a block-diagonal transform.
 *
 * R is orthonormal: vq_rot_inverse(vq_rot_forward(x)) == x to rounding and
 * <R a, R b> = <a, b>. The state is the sign diagonal, D bits, packed in
 * `sign` (bit i of byte i/8 set -> sigma_i = -1): vq_rot_shared_bytes
 * reports D/8. The struct is fixed-size and needs no allocation. */
#ifndef VQ_CODEC_ROTATION_H
#define VQ_CODEC_ROTATION_H

#include <stddef.h>
#include <stdint.h>

#define VQ_ROT_MAX_DIM 256

typedef struct {
    int dim;                        /* D */
    int m;                          /* odd factor of D: 1, 3, 5 or 7 */
    int p;                          /* chunk size, D / m, a power of two */
    uint8_t sign[VQ_ROT_MAX_DIM / 8];
    float dct[7 * 7];               /* m x m orthonormal DCT-II, row major */
} vq_rotation;

/* 1 if D (a multiple of 32 in 32..256) can be rotated. */
int vq_rot_supported(int dim);
/* Fill r for dimension dim from seed (deterministic). Returns 0 on success,
 * -1 if dim is unsupported. */
int vq_rot_init(vq_rotation *r, int dim, uint64_t seed);
/* In place x <- R x (forward) or x <- R^T x (inverse). */
void vq_rot_forward(const vq_rotation *r, float *x);
void vq_rot_inverse(const vq_rotation *r, float *x);
/* Bytes of seeded state (the packed sign diagonal): D/8. */
size_t vq_rot_shared_bytes(const vq_rotation *r);

#endif
