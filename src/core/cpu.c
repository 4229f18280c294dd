/* cpu.c -- cpuid/xgetbv feature detection, cached (see cpu.h). */
#include "core/cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static unsigned long long xgetbv0(void)
{
    unsigned eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

static unsigned detect(void)
{
    unsigned a, b, c, d, f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    int popcnt = (c >> 23) & 1;
    if (!osxsave || !avx)
        return 0;
    unsigned long long xcr0 = xgetbv0();
    if ((xcr0 & 6) != 6) /* XMM and YMM state */
        return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    int avx2 = (b >> 5) & 1;
    if (avx2 && fma && f16c && popcnt)
        f |= VQ_CPU_AVX2;
    int avx512 = ((b >> 16) & 1) && ((b >> 17) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1);
    if ((f & VQ_CPU_AVX2) && avx512 && (xcr0 & 0xe6) == 0xe6) { /* opmask, ZMM */
        f |= VQ_CPU_AVX512;
        if ((c >> 14) & 1)
            f |= VQ_CPU_AVX512_VPOPCNT;
        if ((c >> 11) & 1)
            f |= VQ_CPU_AVX512_VNNI;
        if ((c >> 1) & 1)
            f |= VQ_CPU_AVX512_VBMI;
    }
    return f;
}
#else
static unsigned detect(void) { return 0; }
#endif

static unsigned features;
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

static void detect_and_cap(void)
{
    unsigned f = detect();
    const char *force = getenv("VQ_FORCE_ISA");
    if (force) {
        if (strcmp(force, "scalar") == 0)
            f = 0;
        else if (strcmp(force, "avx2") == 0)
            f &= VQ_CPU_AVX2;
        else if (strcmp(force, "avx512f") == 0)
            f &= VQ_CPU_AVX2 | VQ_CPU_AVX512;
    }
    features = f;
}

unsigned vq_cpu_features(void)
{
    pthread_once(&detect_once, detect_and_cap); /* concurrent first calls are safe */
    return features;
}

const char *vq_cpu_isa_name(void)
{
    unsigned f = vq_cpu_features();
    return (f & VQ_CPU_AVX512) ? "avx512" : (f & VQ_CPU_AVX2) ? "avx2" : "scalar";
}
