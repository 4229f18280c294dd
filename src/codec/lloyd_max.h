/* lloyd_max.h -- optimal scalar quantizers (Lloyd 1982 / Max 1960) for the
 * densities the TurboQuant-style codecs assume, computed numerically.
 *
 * vq_lloyd_max(density, bits, q) runs Lloyd's iteration on the analytic
 * density (thresholds = midpoints of neighbouring centroids, centroids =
 * conditional means of their cell, both in closed form) until no value
 * moves by more than 1e-12, for a unit-scale density:
 *   VQ_LM_GAUSSIAN  : N(0, 1)
 *   VQ_LM_LAPLACIAN : density exp(-|x|) / 2 (scale beta = 1, variance 2)
 * Scale the result by sigma (Gaussian) or beta (Laplacian) for other scales.
 * The result is symmetric; for bits = 1 the Gaussian centroids are
 * +-sqrt(2/pi) = +-0.7979 and the Laplacian ones +-1. Reference values
 * (Max 1960, table for the normal density): MSE 0.3634, 0.1175, 0.03454,
 * 0.009497 for 1..4 bits; the tests check these.
 *
 * Deterministic, no allocation, a few microseconds per call. */
#ifndef VQ_CODEC_LLOYD_MAX_H
#define VQ_CODEC_LLOYD_MAX_H

#define VQ_LM_MAX_BITS 4
#define VQ_LM_MAX_LEVELS (1 << VQ_LM_MAX_BITS)

typedef enum { VQ_LM_GAUSSIAN = 0, VQ_LM_LAPLACIAN = 1 } vq_lm_density;

typedef struct {
    int levels;                         /* 2^bits */
    float centroid[VQ_LM_MAX_LEVELS];   /* increasing */
    float threshold[VQ_LM_MAX_LEVELS];  /* threshold[i] between centroid i and i+1 (levels-1 used) */
    double mse;                         /* expected squared error at unit scale */
} vq_lloyd_max_q;

/* bits in 1..VQ_LM_MAX_BITS; returns 0, or -1 for bad arguments. */
int vq_lloyd_max(vq_lm_density density, int bits, vq_lloyd_max_q *q);

/* The b-bit Lloyd-Max quantizer of the residual u - c1(u) of u ~ N(0, 1)
 * after its bits1-bit Lloyd-Max quantizer c1 (vq_lloyd_max, GAUSSIAN, as
 * float): the density of stage 2 of turboquant_rvq with fit=1. On stage-1
 * cell j the residual is u - c1[j], so its density is the sum over j of
 * phi(r + c1[j]) on t1[j] - c1[j] < r < t1[j+1] - c1[j]; cell moments in
 * closed form (erfc, phi), as above. Unit scale is N(0, 1)'s: scale the
 * result by the stage-1 sigma. bits and bits1 in 1..VQ_LM_MAX_BITS;
 * returns 0, or -1 for bad arguments. */
int vq_lloyd_max_residual(int bits1, int bits, vq_lloyd_max_q *q);

/* Index of the cell holding x (x already divided by the scale): the
 * number of thresholds below x (they increase; NaN gives 0), counted
 * without branches (the cell of random data is unpredictable). */
static inline int vq_lm_index(const vq_lloyd_max_q *q, float x)
{
    int i = 0;
    for (int k = 0; k < q->levels - 1; k++)
        i += x > q->threshold[k];
    return i;
}

#endif
