/* cpu.h -- CPU feature detection, done once, and kernel-variant forcing.
 *
 * vq_cpu_features() checks cpuid and (for AVX/AVX-512) xgetbv once and caches
 * the result. The environment variable VQ_FORCE_ISA=scalar|avx2|avx512
 * caps the reported features, so tests can run every kernel path on one
 * machine (a variant the CPU lacks is never enabled). */
#ifndef VQ_CORE_CPU_H
#define VQ_CORE_CPU_H

enum {
    VQ_CPU_AVX2 = 1 << 0,   /* AVX2 + FMA + F16C */
    VQ_CPU_AVX512 = 1 << 1, /* AVX-512 F/BW/VL/DQ */
};

unsigned vq_cpu_features(void);
/* "scalar", "avx2" or "avx512": the best variant in use */
const char *vq_cpu_isa_name(void);

#endif
