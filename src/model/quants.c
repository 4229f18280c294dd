/* quants.c -- public entry points of the weight formats: activation
 * preparation, dot-product dispatch and the float64 reference (quants.h).
 *
 * Dispatch: the kernel for each type is chosen once (first use) from
 * vq_cpu_features(): the AVX-512 VNNI kernel where one exists and the CPU
 * has it, else the AVX2 kernel where one exists and the CPU has AVX2 (each
 * capped by VQ_FORCE_ISA), else the scalar reference. The choice is a
 * table of function pointers filled under pthread_once, so concurrent first
 * calls from several threads are safe. The 32-element activation quantizer
 * is chosen with them (its AVX-512 twin with the VNNI kernels, its AVX2
 * twin with the AVX2 ones: the same bytes). */
#include <pthread.h>
#include <string.h>

#include "core/cpu.h"
#include "model/quants_impl.h"

#define N_WTYPES 40

static vq_dot_kernel dot_table[N_WTYPES];
static vq_dot4_kernel dot4_table[N_WTYPES]; /* NULL: loop over vq_dot */
static vq_rows4_kernel rows4_table[N_WTYPES]; /* NULL: loop over vq_dot */
static vq_tile4_kernel tile4_table[N_WTYPES]; /* NULL: rows through vq_dot_multi */
static void (*act32_fn)(const float *, size_t, vq_act32 *) = vq_act_quantize32;
static pthread_once_t dot_table_once = PTHREAD_ONCE_INIT;

static void init_table(void)
{
    unsigned f = vq_cpu_features();
    if (f & VQ_CPU_AVX512_VNNI)
        act32_fn = vq_act_quantize32_avx512x;
    else if (f & VQ_CPU_AVX2)
        act32_fn = vq_act_quantize32_avx2;
    for (int t = 0; t < N_WTYPES; t++) {
        vq_dot_kernel k = NULL;
        vq_dot4_kernel k4 = NULL;
        if (f & VQ_CPU_AVX512_VNNI) {
            k = vq_dot_avx512x_kernel((vq_wtype)t);
            k4 = vq_dot4_avx512x_kernel((vq_wtype)t);
            rows4_table[t] = vq_rows4_avx512x_kernel((vq_wtype)t);
            tile4_table[t] = vq_tile4_avx512x_kernel((vq_wtype)t);
        }
        if (!k && (f & VQ_CPU_AVX2)) {
            k = vq_dot_avx2_kernel((vq_wtype)t);
            k4 = vq_dot4_avx2_kernel((vq_wtype)t);
        }
        if (!k)
            k = vq_dot_scalar_kernel((vq_wtype)t);
        dot_table[t] = k;
        dot4_table[t] = k4;
    }
}

vq_dot_fn vq_dot_variant(vq_wtype t, unsigned isa)
{
    if ((unsigned)t >= N_WTYPES)
        return NULL;
    if (isa == 0)
        return vq_dot_scalar_kernel(t);
    if (isa == VQ_CPU_AVX2 && (vq_cpu_features() & VQ_CPU_AVX2))
        return vq_dot_avx2_kernel(t);
    if (isa == VQ_CPU_AVX512_VNNI && (vq_cpu_features() & VQ_CPU_AVX512_VNNI))
        return vq_dot_avx512x_kernel(t);
    return NULL;
}

size_t vq_act_bytes(vq_wtype t, size_t n)
{
    switch (vq_act_kind_of(t)) {
    case VQ_ACT_F32: return n * sizeof(float);
    case VQ_ACT_Q32: return n / 32 * sizeof(vq_act32);
    case VQ_ACT_Q256: return n / 256 * sizeof(vq_act256);
    default: return 0;
    }
}

void vq_act_prepare(vq_wtype t, const float *x, size_t n, void *act)
{
    switch (vq_act_kind_of(t)) {
    case VQ_ACT_F32: memcpy(act, x, n * sizeof(float)); return;
    case VQ_ACT_Q32:
        pthread_once(&dot_table_once, init_table);
        act32_fn(x, n, act);
        return;
    case VQ_ACT_Q256: vq_act_quantize256(x, n, act); return;
    default: return;
    }
}

float vq_dot(vq_wtype t, const void *wrow, const void *act, size_t n)
{
    pthread_once(&dot_table_once, init_table);
    if ((unsigned)t >= N_WTYPES || !dot_table[t])
        return 0.0f;
    return dot_table[t](wrow, act, n);
}

double vq_dot_ref(vq_wtype t, const void *wrow, const float *x, size_t n)
{
    size_t be = vq_wtype_block_elems(t), bb = vq_wtype_block_bytes(t);
    if (!be || !vq_wtype_supported(t))
        return 0.0;
    const uint8_t *p = wrow;
    float buf[256];
    double acc = 0.0;
    /* dequantize 256 elements at a time (a multiple of every block size) */
    for (size_t i = 0; i < n; i += 256) {
        size_t m = n - i < 256 ? n - i : 256;
        vq_dequantize(t, p + i / be * bb, buf, m);
        for (size_t j = 0; j < m; j++)
            acc += (double)buf[j] * (double)x[i + j];
    }
    return acc;
}

void vq_dot_rows(vq_wtype t, const void *wrow, size_t row_bytes, size_t nrows, const void *act, size_t n,
                 float *out)
{
    pthread_once(&dot_table_once, init_table);
    if ((unsigned)t >= N_WTYPES || !dot_table[t]) {
        for (size_t r = 0; r < nrows; r++)
            out[r] = 0.0f;
        return;
    }
    const uint8_t *w = wrow;
    size_t r = 0;
    if (rows4_table[t])
        for (; r + 4 <= nrows; r += 4)
            rows4_table[t](w + r * row_bytes, row_bytes, act, n, out + r);
    for (; r < nrows; r++)
        out[r] = dot_table[t](w + r * row_bytes, act, n);
}

void vq_dot_tile(vq_wtype t, const void *wrow, size_t row_bytes, size_t nrows, const void *act, size_t act_stride,
                 size_t m, size_t n, float *out, size_t out_stride)
{
    pthread_once(&dot_table_once, init_table);
    const uint8_t *w = wrow, *a = act;
    size_t r = 0;
    if ((unsigned)t < N_WTYPES && tile4_table[t])
        for (; r + 4 <= nrows; r += 4) {
            size_t j = 0;
            for (; j + 4 <= m; j += 4)
                tile4_table[t](w + r * row_bytes, row_bytes, a + j * act_stride, act_stride, n,
                               out + j * out_stride + r, out_stride);
            for (; j < m; j++)
                vq_dot_rows(t, w + r * row_bytes, row_bytes, 4, a + j * act_stride, n, out + j * out_stride + r);
        }
    float col[VQ_DOT_MULTI_MAX];
    for (; r < nrows; r++)
        for (size_t j = 0; j < m; j += VQ_DOT_MULTI_MAX) {
            size_t mm = m - j < VQ_DOT_MULTI_MAX ? m - j : VQ_DOT_MULTI_MAX;
            vq_dot_multi(t, w + r * row_bytes, a + j * act_stride, act_stride, mm, n, col);
            for (size_t k = 0; k < mm; k++)
                out[(j + k) * out_stride + r] = col[k];
        }
}

void vq_dot_multi(vq_wtype t, const void *wrow, const void *act, size_t act_stride, size_t m,
                  size_t n, float *out)
{
    pthread_once(&dot_table_once, init_table);
    if ((unsigned)t >= N_WTYPES || !dot_table[t]) {
        for (size_t j = 0; j < m; j++)
            out[j] = 0.0f;
        return;
    }
    const uint8_t *a = act;
    size_t j = 0;
    if (dot4_table[t])
        for (; j + VQ_DOT_MULTI_MAX <= m; j += VQ_DOT_MULTI_MAX)
            dot4_table[t](wrow, a + j * act_stride, act_stride, n, out + j);
    for (; j < m; j++)
        out[j] = dot_table[t](wrow, a + j * act_stride, n);
}
