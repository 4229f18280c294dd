/* outlier_adds_ref.c -- the scalar reference of kernels.h outlier_adds. */
#include "core/bitstream.h"
#include "core/fp16.h"
#include "core/io.h"
#include "kernels/kernels.h"

void vq_outlier_adds_ref(const uint8_t *tab, int n_o, const uint8_t *dense, int bits, const float *sm, size_t D,
                         size_t entries, const float *q, size_t qstride, int n_q, float *s, size_t sstride)
{
    /* each entry's (token, channel, correction) first, then per query over
     * the entries, so that a query's writes stay in its row (the rows are
     * sstride floats apart: 4 KB for 1024-token pages, and a prompt tile's
     * 24 rows then share one L1 set) */
    uint32_t ot[VQ_OUTLIERS_MAX], oc[VQ_OUTLIERS_MAX];
    float dx[VQ_OUTLIERS_MAX];
    size_t no = 0;
    for (int k = 0; k < n_o && k < VQ_OUTLIERS_MAX; k++) {
        const size_t el = vq_get_u16(tab + 4 * (size_t)k);
        if (el >= entries)
            continue;
        const size_t t = el / D, c = el - t * D;
        const float x = vq_fp16_to_fp32(vq_get_u16(tab + 4 * (size_t)k + 2));
        dx[no] = x - (sm[c] * (float)vq_bits_get(dense, el, bits) + sm[D + c]);
        ot[no] = (uint32_t)t, oc[no++] = (uint32_t)c;
    }
    for (int j = 0; j < n_q; j++) {
        float *sj = s + (size_t)j * sstride;
        const float *qj = q + (size_t)j * qstride;
        for (size_t o = 0; o < no; o++)
            sj[ot[o]] += qj[oc[o]] * dx[o];
    }
}
