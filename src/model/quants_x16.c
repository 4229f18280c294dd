/* quants_x16.c -- the 16-row interleaved Q4_0 / Q4_1 / Q5_0 / Q8_0 layout:
 * repacking, a row's values, the scalar reference, and dispatch to the
 * AVX-512 VNNI or AVX2 kernels (quants_x16.h). */
#include "model/quants_x16.h"

#include <math.h>
#include <string.h>

#include "core/cpu.h"
#include "core/fp16.h"
#include "core/io.h"
#include "model/quants_impl.h"

/* block bytes, the codes' offset in a 16-row block group, a block's code
 * bytes, and the bytes before them in the file's block (d, and m or qh) */
static size_t x16_bb(vq_wtype t)
{
    return t == VQ_W_Q4_1 ? 20 : t == VQ_W_Q8_0 ? 34 : t == VQ_W_Q5_0 ? 22 : 18;
}
static size_t x16_codes(vq_wtype t) { return t == VQ_W_Q4_1 ? 64 : t == VQ_W_Q5_0 ? 96 : 32; }
static size_t x16_nq(vq_wtype t) { return t == VQ_W_Q8_0 ? 32 : 16; }
static size_t x16_head(vq_wtype t) { return t == VQ_W_Q4_1 ? 4 : t == VQ_W_Q5_0 ? 6 : 2; }
int vq_x16_kind(vq_wtype t)
{
    switch (t) {
    case VQ_W_Q4_0: return VQ_X16_Q4_0;
    case VQ_W_Q4_1: return VQ_X16_Q4_1;
    case VQ_W_Q5_0: return VQ_X16_Q5_0;
    case VQ_W_Q8_0: return VQ_X16_Q8_0;
    default: return -1;
    }
}

static int x16_type(vq_wtype t) { return vq_x16_kind(t) >= 0; }

int vq_x16_available(vq_wtype t) { return x16_type(t) && (vq_cpu_features() & (VQ_CPU_AVX512_VNNI | VQ_CPU_AVX2)); }

/* Q5_0's high bits: the file's qh (bit j: element j's fifth bit) <-> the
 * interleaved word (byte i, bit 2k: element 4k + i's; bit 2k + 1: element
 * 16 + 4k + i's); spread 1 goes from the file to the word */
static uint32_t x16_qh(uint32_t v, int spread)
{
    uint32_t o = 0;
    for (int j = 0; j < 16; j++)
        for (int h = 0; h < 2; h++) {
            const int fb = 16 * h + j, wb = 8 * (j % 4) + 2 * (j / 4) + h;
            o |= (v >> (spread ? fb : wb) & 1u) << (spread ? wb : fb);
        }
    return o;
}

/* where the bytes of the file's block b of row r (< 16) sit in its
 * 16-row group: b * 16 * x16_bb(t) + pos[i] for byte i < x16_bb(t) (the
 * layout of quants_x16.h) */
static void x16_map(vq_wtype t, size_t r, size_t pos[34])
{
    const size_t co = x16_codes(t), hq = x16_head(t);
    pos[0] = 2 * r, pos[1] = 2 * r + 1; /* d */
    if (t == VQ_W_Q4_1)
        pos[2] = 32 + 2 * r, pos[3] = 33 + 2 * r; /* m */
    for (size_t i = 0; t == VQ_W_Q5_0 && i < 4; i++)
        pos[2 + i] = 32 + 4 * r + i; /* qh, its bits then spread (x16_qh) */
    for (size_t j = 0; j < x16_nq(t); j++)
        pos[hq + j] = co + (j / 4) * 64 + 4 * r + j % 4;
}

int vq_x16_repack(vq_wtype t, const void *src, size_t rows, size_t row_bytes, void *dst)
{
    const size_t bb = x16_bb(t), nb = row_bytes / bb;
    if (!x16_type(t) || rows % VQ_X16_ROWS || row_bytes % bb)
        return 0;
    const uint8_t *s = src;
    uint8_t *d = dst;
    size_t pos[VQ_X16_ROWS][34];
    for (size_t r = 0; r < VQ_X16_ROWS; r++)
        x16_map(t, r, pos[r]);
    for (size_t g = 0; g < rows / VQ_X16_ROWS; g++)
        for (size_t r = 0; r < VQ_X16_ROWS; r++)
            for (size_t b = 0; b < nb; b++) {
                const uint8_t *blk = s + (g * VQ_X16_ROWS + r) * row_bytes + b * bb;
                uint8_t *o = d + g * VQ_X16_ROWS * row_bytes + b * VQ_X16_ROWS * bb;
                for (size_t i = 0; i < bb; i++)
                    o[pos[r][i]] = blk[i];
                if (t == VQ_W_Q5_0)
                    vq_put_u32(o + 32 + 4 * r, x16_qh(vq_get_u32(blk + 2), 1));
            }
    return 1;
}

int vq_x16_dequantize_row(vq_wtype t, const void *w, size_t row_bytes, size_t r, size_t n, float *dst)
{
    const size_t bb = x16_bb(t);
    if (!x16_type(t) || n % 32 || row_bytes != n / 32 * bb)
        return 0;
    const uint8_t *grp = (const uint8_t *)w + r / VQ_X16_ROWS * VQ_X16_ROWS * row_bytes;
    size_t pos[34];
    uint8_t blk[34];
    x16_map(t, r % VQ_X16_ROWS, pos);
    for (size_t b = 0; b < n / 32; b++) { /* the file's block again, then its values */
        for (size_t i = 0; i < bb; i++)
            blk[i] = grp[b * VQ_X16_ROWS * bb + pos[i]];
        if (t == VQ_W_Q5_0)
            vq_put_u32(blk + 2, x16_qh(vq_get_u32(blk + 2), 0));
        vq_dequantize(t, blk, dst + 32 * b, 32);
    }
    return 1;
}

void vq_x16_rows16_ref(vq_wtype t, const void *w, const void *act, size_t n, float out[16])
{
    const size_t bb = x16_bb(t), co = x16_codes(t);
    const vq_act32 *a = act;
    for (size_t r = 0; r < VQ_X16_ROWS; r++) {
        float acc = 0.0f, accm = 0.0f;
        for (size_t b = 0; b < n / 32; b++) {
            const uint8_t *o = (const uint8_t *)w + b * VQ_X16_ROWS * bb;
            uint16_t dh, mh = 0;
            memcpy(&dh, o + 2 * r, 2);
            if (t == VQ_W_Q4_1)
                memcpy(&mh, o + 32 + 2 * r, 2);
            const uint32_t hw = t == VQ_W_Q5_0 ? vq_get_u32(o + 32 + 4 * r) : 0; /* x16_qh's word */
            int32_t I = 0;
            for (size_t j = 0; j < x16_nq(t); j++) {
                const uint8_t q = o[co + (j / 4) * 64 + 4 * r + j % 4];
                const unsigned hb = 8 * (unsigned)(j % 4) + 2 * (unsigned)(j / 4);
                if (t == VQ_W_Q8_0)
                    I += (int8_t)q * a[b].qs[j];
                else
                    I += (int)((q & 15) | (hw >> hb & 1) << 4) * a[b].qs[j] +
                         (int)((q >> 4) | (hw >> (hb + 1) & 1) << 4) * a[b].qs[16 + j];
            }
            const float d = vq_fp16_to_fp32(dh);
            if (t == VQ_W_Q4_1 || t == VQ_W_Q8_0) { /* Q8_0: accm stays 0 */
                const float f = (float)I * a[b].d;
                acc = fmaf(d, f, acc);
                if (t == VQ_W_Q4_1)
                    accm = fmaf(vq_fp16_to_fp32(mh), a[b].s, accm);
            } else { /* the codes' offset: 8 (Q4_0), 16 (Q5_0) */
                acc = fmaf(d, fmaf((float)I, a[b].d, (t == VQ_W_Q5_0 ? -16.0f : -8.0f) * a[b].s), acc);
            }
        }
        out[r] = t == VQ_W_Q4_1 ? acc + accm : acc;
    }
}

void vq_x16_tile(vq_wtype t, const void *w, size_t row_bytes, size_t nrows, const void *act, size_t astride,
                 size_t m, size_t n, float *out, size_t ostride)
{
    const uint8_t *p = w, *av = act;
    const unsigned f = x16_type(t) ? vq_cpu_features() : 0;
    void (*fast)(int, const void *, const void *, size_t, int, size_t, float *, size_t) =
        (f & VQ_CPU_AVX512_VNNI) ? vq_x16_tile16_avx512x : (f & VQ_CPU_AVX2) ? vq_x16_tile16_avx2 : NULL;
    const int kind = vq_x16_kind(t);
    for (size_t g = 0; g < nrows / VQ_X16_ROWS; g++) {
        const uint8_t *grp = p + g * VQ_X16_ROWS * row_bytes;
        float *o = out + g * VQ_X16_ROWS;
        size_t j = 0;
        if (fast)
            for (; j < m; j += 4)
                fast(kind, grp, av + j * astride, astride, m - j < 4 ? (int)(m - j) : 4, n,
                     o + j * ostride, ostride);
        for (; j < m; j++)
            vq_x16_rows16_ref(t, grp, av + j * astride, n, o + j * ostride);
    }
}

void vq_x16_rows(vq_wtype t, const void *w, size_t row_bytes, size_t nrows, const void *act, size_t n, float *out)
{
    vq_x16_tile(t, w, row_bytes, nrows, act, 0, 1, n, out, 0);
}
