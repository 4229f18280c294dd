/* tq_stage2.h -- the stage-2 quantizer of turboquant_rvq and its scale, one
 * definition for the CPU codec (turboquant.c) and the GPU host format
 * (src/gpu/host/format.c), so that both quantize and decode alike.
 *
 *  fit=0 (the method as specified, ../shared/docs/METHODS.md): the b-bit
 *      Lloyd-Max quantizer of a Laplacian of scale sigma_r / sqrt(2),
 *      sigma_r = sqrt(1/D) * (sqrt(3 pi)/2) * 4^-b (TurboQuant's MSE bound).
 *  fit=1: the b-bit Lloyd-Max quantizer of the residual's actual density,
 *      N(0, 1/D) minus its b-bit stage-1 centroid (vq_lloyd_max_residual),
 *      at scale 1/sqrt(D). The bound's sigma_r is far below the real
 *      residual (unit scale: 0.38 vs 0.60 at b=1, 0.096 vs 0.343 at b=2), so
 *      fit=0 clips most of the residual at b >= 2.
 * Returns the scale; *q2 gets the unit-scale levels and thresholds. */
#ifndef VQ_CODEC_TQ_STAGE2_H
#define VQ_CODEC_TQ_STAGE2_H

#include <math.h>

#include "codec/lloyd_max.h"

static inline float vq_tq_stage2(int D, int bits, int fit, vq_lloyd_max_q *q2)
{
    if (fit) {
        vq_lloyd_max_residual(bits, bits, q2);
        return 1.0f / sqrtf((float)D);
    }
    vq_lloyd_max(VQ_LM_LAPLACIAN, bits, q2);
    double sigma_r = sqrt(1.0 / D) * (sqrt(3.0 * 3.14159265358979323846) / 2.0) * pow(4.0, -bits);
    return (float)(sigma_r / sqrt(2.0));
}

#endif
