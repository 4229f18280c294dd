/* kernels.c -- the kernel tables and their one-time choice (kernels.h). */
#include "kernels/kernels.h"

#include <pthread.h>
#include <string.h>

#include "core/cpu.h"
#include "core/fp16_row.h"
#include "core/hadamard.h"

static const vq_kernels k_ref = {
    .isa = "scalar",
    .simd = 0,
    .dense_dot = vq_dense_dot_ref,
    .dense_axpy = vq_dense_axpy_ref,
    .fp16_row = vq_fp16_row_ref,
    .fp16_from_row = vq_fp16_from_row_ref,
    .half_ratio = vq_half_ratio_ref,
    .q8_0_values = vq_q8_0_values_ref,
    .q4_0_values = vq_q4_0_values_ref,
    .lut_row = vq_lut_row_ref,
    .kivi_row = vq_kivi_row_ref,
    .lut8_row = vq_lut8_row_ref,
    .kivi_group_row = vq_kivi_group_row_ref,
    .kivi_kdot = vq_kivi_kdot_ref,
    .kivi_axpy = vq_kivi_axpy_ref,
    .lut_axpy = vq_lut_axpy_ref,
    .pq_axpy = vq_pq_axpy_ref,
    .pq_score = vq_pq_score_ref,
    .outlier_adds = vq_outlier_adds_ref,
    .kivi_qaxpy = vq_kivi_qaxpy_ref,
    .lut_qaxpy = vq_lut_qaxpy_ref,
    .codes_dot = vq_codes_dot_ref,
    .codes_dot_pair = vq_codes_dot_pair_ref,
    .bitdot = vq_bitdot_ref,
    .signscore = vq_signscore_ref,
    .ftab_score = vq_ftab_score_ref,
    .sign_tables = vq_sign_tables_ref,
    .level_tables = vq_level_tables_ref,
    .qplanes = vq_qplanes_encode_ref,
    .codes_qprep = vq_codes_qprep,
    .codes_qdot = vq_codes_qdot_ref,
    .qaxpy = vq_qaxpy_ref,
    .qaxpy8 = vq_qaxpy8_ref,
    .qdot = vq_qdot_ref,
    .qdot_prepare = vq_qdot_prepare,
    .rope_pairs = vq_rope_pairs_ref,
    .fwht = vq_fwht,
    .flip_signs = vq_flip_signs_ref,
    .rope_codes_dot = vq_rope_codes_dot_ref,
    .bits_unpack = vq_bits_unpack_ref,
    .lut8_scan = vq_lut8_scan_ref,
    .nearest8 = vq_nearest8_ref,
    .silu_mul = vq_silu_mul_ref,
    .gelu_mul = vq_gelu_mul_ref,
    .ordered_matvec = vq_ordered_matvec_ref,
    .lut8_tables = vq_lut8_tables_ref,
};

#if defined(__x86_64__) || defined(__i386__)
/* Each SIMD table starts as a copy of the next lower one and replaces the
 * entries it has a twin for (filled once, before first use). */
static vq_kernels k_avx2, k_avx512;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void fill_tables(void)
{
    k_avx2 = k_ref;
    k_avx2.isa = "avx2";
    k_avx2.simd = 1;
    k_avx2.dense_dot = vq_dense_dot_avx2;
    k_avx2.dense_axpy = vq_dense_axpy_avx2;
    k_avx2.dense_f16 = 1, k_avx2.dense_q = 1;
    k_avx2.fp16_row = vq_fp16_row_f16c, k_avx2.fp16_from_row = vq_fp16_from_row_f16c;
    k_avx2.half_ratio = vq_half_ratio_avx2;
    k_avx2.q8_0_values = vq_q8_0_values_avx2;
    k_avx2.q4_0_values = vq_q4_0_values_avx2;
    k_avx2.bitdot = vq_bitdot_avx2;
    k_avx2.signscore = vq_signscore_avx2;
    k_avx2.codes_qdot = vq_codes_qdot_avx2;
    k_avx2.qdot = vq_qdot_avx2, k_avx2.qdot_prepare = vq_qdot_prepare_avx2;
    k_avx2.kivi_axpy = vq_kivi_axpy_avx2;
    k_avx2.kivi_qaxpy = vq_kivi_qaxpy_avx2, k_avx2.qaxpy8 = vq_qaxpy8_avx2;
    k_avx2.fwht = vq_fwht_avx2;
    k_avx2.lut_row = vq_lut_row_avx2;
    k_avx2.kivi_row = vq_kivi_row_avx2;
    k_avx2.lut8_row = vq_lut8_row_avx2;
    k_avx2.kivi_group_row = vq_kivi_group_row_avx2;
    k_avx2.kivi_kdot = vq_kivi_kdot_avx2;
    k_avx2.lut_axpy = vq_lut_axpy_avx2;
    k_avx2.lut_qaxpy = vq_lut_qaxpy_avx2;
    k_avx2.codes_dot = vq_codes_dot_avx2, k_avx2.codes_dot_pair = vq_codes_dot_pair_avx2;
    k_avx2.codes_qprep = vq_codes_qprep_avx2;
    k_avx2.rope_pairs = vq_rope_pairs_avx2, k_avx2.rope_codes_dot = vq_rope_codes_dot_avx2;
    k_avx2.silu_mul = vq_silu_mul_avx2, k_avx2.gelu_mul = vq_gelu_mul_avx2;
    k_avx2.flip_signs = vq_flip_signs_avx2;
    k_avx2.bits_unpack = vq_bits_unpack_avx2;
    k_avx2.nearest8 = vq_nearest8_avx2;
    k_avx2.qplanes = vq_qplanes_encode_avx2;
    k_avx2.ftab_score = vq_ftab_score_avx2;
    k_avx2.sign_tables = vq_sign_tables_avx2, k_avx2.level_tables = vq_level_tables_avx2;
    k_avx2.pq_score = vq_pq_score_avx2;
    k_avx2.outlier_adds = vq_outlier_adds_avx2;
    k_avx2.ordered_matvec = vq_ordered_matvec_avx2;
    k_avx2.lut8_tables = vq_lut8_tables_avx2;

    k_avx512 = k_avx2;
    k_avx512.isa = "avx512";
    k_avx512.dense_dot = vq_dense_dot_avx512;
    k_avx512.dense_axpy = vq_dense_axpy_avx512;
    k_avx512.fp16_row = vq_fp16_row_avx512, k_avx512.half_ratio = vq_half_ratio_avx512;
    k_avx512.q8_0_values = vq_q8_0_values_avx512;
    k_avx512.q4_0_values = vq_q4_0_values_avx512;
    k_avx512.lut_row = vq_lut_row_avx512;
    k_avx512.kivi_row = vq_kivi_row_avx512;
    k_avx512.lut8_row = vq_lut8_row_avx512;
    k_avx512.kivi_group_row = vq_kivi_group_row_avx512;
    k_avx512.kivi_kdot = vq_kivi_kdot_avx512;
    k_avx512.kivi_axpy = vq_kivi_axpy_avx512;
    k_avx512.lut_axpy = vq_lut_axpy_avx512;
    k_avx512.pq_axpy = vq_pq_axpy_avx512, k_avx512.pq_score = vq_pq_score_avx512;
    k_avx512.outlier_adds = vq_outlier_adds_avx512;
    k_avx512.ftab_score = vq_ftab_score_avx512, k_avx512.ftab_levels = 1;
    k_avx512.sign_tables = vq_sign_tables_avx512, k_avx512.level_tables = vq_level_tables_avx512;
    k_avx512.codes_dot = vq_codes_dot_avx512;
    k_avx512.qaxpy = vq_qaxpy_avx512;
    k_avx512.rope_pairs = vq_rope_pairs_avx512;
    k_avx512.fwht = vq_fwht_avx512;
    k_avx512.flip_signs = vq_flip_signs_avx512;
    k_avx512.silu_mul = vq_silu_mul_avx512, k_avx512.gelu_mul = vq_gelu_mul_avx512;
    k_avx512.ordered_matvec = vq_ordered_matvec_avx512;
    k_avx512.lut8_tables = vq_lut8_tables_avx512;
    /* entries that need VPOPCNTDQ / VNNI */
    if (vq_cpu_features() & VQ_CPU_AVX512_VPOPCNT)
        k_avx512.bitdot = vq_bitdot_avx512x, k_avx512.signscore = vq_signscore_avx512x;
    if (vq_cpu_features() & VQ_CPU_AVX512_VNNI)
        k_avx512.qdot = vq_qdot_avx512x, k_avx512.qdot_prepare = vq_qdot_prepare_avx512x,
        k_avx512.codes_qdot = vq_codes_qdot_avx512x,
        k_avx512.codes_qprep = vq_codes_qprep_avx512x;
    if ((vq_cpu_features() & (VQ_CPU_AVX512_VNNI | VQ_CPU_AVX512_VBMI)) == (VQ_CPU_AVX512_VNNI | VQ_CPU_AVX512_VBMI))
        k_avx512.kivi_qaxpy = vq_kivi_qaxpy_avx512x, k_avx512.qaxpy8 = vq_qaxpy8_avx512x,
        k_avx512.lut_qaxpy = vq_lut_qaxpy_avx512x;
    if (vq_cpu_features() & VQ_CPU_AVX512_VBMI)
        k_avx512.lut8_scan = vq_lut8_scan_avx512x, k_avx512.rope_codes_dot = vq_rope_codes_dot_avx512x,
        k_avx512.bits_unpack = vq_bits_unpack_avx512x;
    if ((vq_cpu_features() & (VQ_CPU_AVX512_VPOPCNT | VQ_CPU_AVX512_VBMI)) == (VQ_CPU_AVX512_VPOPCNT | VQ_CPU_AVX512_VBMI))
        k_avx512.signscore = vq_signscore_nibbles_avx512x; /* (the popcount twin past 4 query bits) */
}
#endif

const vq_kernels *vq_kernels_variant(const char *isa)
{
    unsigned f = vq_cpu_features();
    if (!isa || strcmp(isa, "scalar") == 0)
        return &k_ref;
#if defined(__x86_64__) || defined(__i386__)
    pthread_once(&tables_once, fill_tables);
    if (strcmp(isa, "avx2") == 0 && (f & VQ_CPU_AVX2))
        return &k_avx2;
    if (strcmp(isa, "avx512") == 0 && (f & VQ_CPU_AVX512))
        return &k_avx512;
#else
    (void)f;
#endif
    return NULL;
}

static const vq_kernels *chosen;
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static void choose(void)
{
    const vq_kernels *k = vq_kernels_variant("avx512");
    if (!k)
        k = vq_kernels_variant("avx2");
    chosen = k ? k : &k_ref;
}

const vq_kernels *vq_kernels_get(void)
{
    pthread_once(&chosen_once, choose);
    return chosen;
}

void vq_qplanes_encode(const float *y, int D, int qbits, uint8_t *qbuf) { vq_kernels_get()->qplanes(y, D, qbits, qbuf); }
