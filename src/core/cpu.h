/* cpu.h -- CPU feature detection, done once, and kernel-variant forcing.
 *
 * vq_cpu_features() checks cpuid and (for AVX/AVX-512) xgetbv once (under
 * pthread_once: concurrent first calls are safe) and caches the result. The
 * environment variable VQ_FORCE_ISA=scalar|avx2|avx512f|avx512
 * caps the reported features, so tests can run every kernel path on one
 * machine (a variant the CPU lacks is never enabled); avx512 keeps the
 * AVX-512 extensions, avx512f drops them (VPOPCNTDQ, VNNI, VBMI). The first call
 * decides; later calls return the same value. */
#ifndef VQ_CORE_CPU_H
#define VQ_CORE_CPU_H

enum {
    VQ_CPU_AVX2 = 1 << 0,          /* AVX2 + FMA + F16C + POPCNT */
    VQ_CPU_AVX512 = 1 << 1,        /* AVX-512 F/BW/VL/DQ */
    VQ_CPU_AVX512_VPOPCNT = 1 << 2, /* AVX-512 VPOPCNTDQ (with VQ_CPU_AVX512) */
    VQ_CPU_AVX512_VNNI = 1 << 3,   /* AVX-512 VNNI (with VQ_CPU_AVX512) */
    VQ_CPU_AVX512_VBMI = 1 << 4,   /* AVX-512 VBMI (with VQ_CPU_AVX512) */
};

unsigned vq_cpu_features(void);
/* "scalar", "avx2" or "avx512": the best variant in use */
const char *vq_cpu_isa_name(void);

#endif
