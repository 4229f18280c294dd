/* rotation.c -- randomized Hadamard rotation for any head_dim multiple of
 * 32 (see rotation.h for the construction). The sign flips and the
 * transform run through the kernel table (kernels/fwht.h: every variant
 * has the reference's bits); the DCT mix is scalar. */
#include "codec/rotation.h"

#include <math.h>

#include "core/bitstream.h"
#include "core/rng.h"
#include "kernels/kernels.h"

int vq_rot_supported(int dim)
{
    if (dim < 32 || dim > VQ_ROT_MAX_DIM || dim % 32 != 0)
        return 0;
    int m = dim;
    while (m % 2 == 0)
        m /= 2;
    return m <= 7;
}

int vq_rot_init(vq_rotation *r, int dim, uint64_t seed)
{
    if (!vq_rot_supported(dim))
        return -1;
    r->dim = dim;
    r->m = dim;
    while (r->m % 2 == 0)
        r->m /= 2;
    r->p = dim / r->m;
    vq_rng g;
    vq_rng_seed(&g, vq_seed_mix(seed, 0x726f7461u /* "rota" */));
    for (int i = 0; i < VQ_ROT_MAX_DIM / 8; i++)
        r->sign[i] = 0;
    for (int i = 0; i < dim; i++)
        if (vq_rng_sign(&g) < 0)
            vq_bits_put(r->sign, (size_t)i, 1, 1);
    const double pi = 3.14159265358979323846;
    for (int j = 0; j < r->m; j++)
        for (int l = 0; l < r->m; l++)
            r->dct[j * r->m + l] = (float)(sqrt((j == 0 ? 1.0 : 2.0) / r->m) *
                                           cos(pi * (2 * l + 1) * j / (2.0 * r->m)));
    return 0;
}

/* mix position i of the m chunks with the DCT (transpose if inverse) */
static void mix_chunks(const vq_rotation *r, float *x, int transpose)
{
    const int m = r->m, p = r->p;
    float t[7];
    for (int i = 0; i < p; i++) {
        for (int j = 0; j < m; j++) {
            float s = 0.0f;
            for (int l = 0; l < m; l++)
                s += (transpose ? r->dct[l * m + j] : r->dct[j * m + l]) * x[l * p + i];
            t[j] = s;
        }
        for (int j = 0; j < m; j++)
            x[j * p + i] = t[j];
    }
}

void vq_rot_forward(const vq_rotation *r, float *x)
{
    const vq_kernels *k = vq_kernels_get();
    k->flip_signs(x, r->sign, (size_t)r->dim);
    for (int j = 0; j < r->m; j++)
        k->fwht(x + (size_t)j * r->p, (size_t)r->p);
    if (r->m > 1)
        mix_chunks(r, x, 0);
}

void vq_rot_inverse(const vq_rotation *r, float *x)
{
    const vq_kernels *k = vq_kernels_get();
    if (r->m > 1)
        mix_chunks(r, x, 1);
    for (int j = 0; j < r->m; j++)
        k->fwht(x + (size_t)j * r->p, (size_t)r->p);
    k->flip_signs(x, r->sign, (size_t)r->dim);
}

size_t vq_rot_shared_bytes(const vq_rotation *r) { return (size_t)r->dim / 8; }
