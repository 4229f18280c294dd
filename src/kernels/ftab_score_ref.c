/* ftab_score_ref.c -- the tables of kernels/float_tables.h and the
 * scalar reference of kernels.h ftab_score. */
#include "core/fp16.h"
#include "kernels/kernels.h"
#include "kernels/float_tables.h"

/* the sums of float_tables.h's order built up: the 4 of the first two
 * coordinates, 8 with the third, 16 with the fourth */
void vq_sign_tables_ref(const float *y, size_t m, float *tab)
{
    for (size_t p = 0; p < m / 4; p++) {
        const float *x = y + 4 * p;
        float s2[4], s3[8];
        for (unsigned e = 0; e < 4; e++)
            s2[e] = (e & 1u ? x[0] : -x[0]) + (e & 2u ? x[1] : -x[1]);
        for (unsigned e = 0; e < 8; e++)
            s3[e] = s2[e & 3u] + (e & 4u ? x[2] : -x[2]);
        for (unsigned e = 0; e < 16; e++)
            tab[16 * p + e] = s3[e & 7u] + (e & 8u ? x[3] : -x[3]);
    }
}

/* each table built up coordinate by coordinate: the entries of the first
 * j codes, then each of them plus the next coordinate's 2^b products (the
 * same products and sums, in the same order, as float_tables.h's) */
void vq_level_tables_ref(const float *y, size_t D, int b, const float *lut, const float *lut_lo, size_t n_lo,
                         float *tab)
{
    const size_t k = 4 / (size_t)b, L = (size_t)1 << b;
    for (size_t p = 0; p < D / k; p++) {
        float *t = tab + 16 * p;
        size_t have = 1; /* entries so far: codes of the first j coordinates */
        for (size_t j = 0; j < k; j++) {
            const size_t d = p * k + j;
            const float *lv = d < n_lo ? lut_lo : lut;
            for (size_t c = L; c-- > 0;) /* c = 0 last: it overwrites the entries the others read */
                for (size_t lo = 0; lo < have; lo++)
                    t[lo + c * have] = j ? t[lo] + y[d] * lv[c] : y[d] * lv[c];
            have *= L;
        }
    }
}

void vq_ftab_score_ref(const uint8_t *codes, size_t stride, size_t n, size_t m, const size_t *offs, const float *w,
                       int n_sets, const float *f, size_t hoff, const float *tabs, size_t tstride, int n_q, float *s,
                       size_t sstride)
{
    for (size_t i = 0; i < n; i++) {
        const uint8_t *row = codes + i * stride;
        const float h = f ? f[i] : vq_fp16_to_fp32((vq_fp16)(row[hoff] | row[hoff + 1] << 8));
        for (int j = 0; j < n_q; j++) {
            const float *tab = tabs + (size_t)j * tstride;
            float a[2] = { 0.0f, 0.0f };
            for (int k = 0; k < n_sets; k++) {
                const uint8_t *z = row + offs[k];
                float acc = 0.0f;
                for (size_t p = 0; p < m / 4; p++)
                    acc = acc + tab[16 * p + (z[p / 2] >> 4 * (p % 2) & 15u)];
                a[k] = acc;
            }
            float x = w[0] * a[0];
            if (n_sets == 2)
                x = x + w[1] * a[1];
            s[(size_t)j * sstride + i] = h * x;
        }
    }
}
