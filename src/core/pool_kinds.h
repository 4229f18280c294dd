/* pool_kinds.h -- the thread pool's choice, per kind of job, between
 * running it in parallel and running it on the caller alone.
 *
 * A kind is a (task function, item count, grain) triple: a decode step
 * repeats the same few kinds layer after layer, token after token. Each
 * kind keeps a wall time per mode: the fastest of its first VQ_KIND_PROBE
 * runs in that mode, then an exponential average of its runs (weight 1/4
 * for the newest), except that a run in the slower mode replaces it. The
 * first VQ_KIND_PROBE runs of a kind are parallel, the next VQ_KIND_PROBE
 * on the caller alone; after that a kind runs in its faster mode, and once
 * every VQ_KIND_EXPLORE runs in the other one (VQ_KIND_EXPLORE_FAR while
 * that one took twice the time or more): one such run that is faster
 * switches the kind over (if that was noise, the runs that follow in the
 * new mode switch it back). The pool forgets every kind after
 * VQ_KIND_RESET jobs, so that all of them probe again together: a kind
 * that runs on the caller alone lets the workers fall asleep, and its
 * occasional parallel run alone pays their wake-up.
 *
 * Why measured both ways: when the two "cores" of a virtual machine share a
 * physical core, or another program holds one, each thread of a parallel
 * job runs slower than one thread alone, and a parallel job can take longer
 * than the caller alone would (seen on the 2-vCPU AMD EPYC host: decode at
 * an empty context 96-101 tok/s with two threads, 131-133 with one). An
 * estimate of the caller's time made during the parallel job is slowed by
 * the same contention, so only a run on the caller alone shows it.
 *
 * The mode never changes results: a job's chunks never depend on which
 * thread runs them (pool.h). */
#ifndef VQ_CORE_POOL_KINDS_H
#define VQ_CORE_POOL_KINDS_H

#include <stddef.h>
#include <stdint.h>

#define VQ_KIND_SLOTS 64   /* kinds remembered (direct-mapped by key) */
#define VQ_KIND_PROBE 2    /* first runs in each mode */
#define VQ_KIND_EXPLORE 64 /* then one run in the slower mode per this many */
#define VQ_KIND_EXPLORE_FAR 256 /* ... or this many when it is 2x slower or more */
#define VQ_KIND_RESET 8192 /* pool jobs between two resets of every kind */

enum { VQ_KIND_PARALLEL = 0, VQ_KIND_SERIAL = 1 };

typedef struct {
    const void *fn; /* NULL: an empty slot */
    size_t n_items, grain;
    double mean_s[2]; /* per mode: the average wall time, seconds */
    unsigned runs[2]; /* per mode: runs measured (saturating) */
    unsigned count;   /* runs of this kind since the probes */
} vq_job_kind;

/* the slot of kind (fn, n_items, grain) in kinds[VQ_KIND_SLOTS], emptied
 * and given the key if another kind held it */
static inline vq_job_kind *vq_job_kind_find(vq_job_kind *kinds, const void *fn, size_t n_items, size_t grain)
{
    uint64_t h = (uint64_t)(uintptr_t)fn ^ ((uint64_t)n_items * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)grain * 0xC2B2AE3D27D4EB4Full);
    h ^= h >> 29;
    vq_job_kind *k = &kinds[(h * 0xBF58476D1CE4E5B9ull) >> 58]; /* top 6 bits: VQ_KIND_SLOTS */
    if (k->fn != fn || k->n_items != n_items || k->grain != grain)
        *k = (vq_job_kind){ fn, n_items, grain, { 0.0, 0.0 }, { 0, 0 }, 0 };
    return k;
}

/* the mode of the kind's next run */
static inline int vq_job_kind_mode(const vq_job_kind *k)
{
    if (k->runs[VQ_KIND_PARALLEL] < VQ_KIND_PROBE)
        return VQ_KIND_PARALLEL;
    if (k->runs[VQ_KIND_SERIAL] < VQ_KIND_PROBE)
        return VQ_KIND_SERIAL;
    const int best = k->mean_s[VQ_KIND_SERIAL] < k->mean_s[VQ_KIND_PARALLEL] ? VQ_KIND_SERIAL : VQ_KIND_PARALLEL;
    const unsigned every = k->mean_s[!best] >= 2.0 * k->mean_s[best] ? VQ_KIND_EXPLORE_FAR : VQ_KIND_EXPLORE;
    return k->count % every == every - 1 ? !best : best;
}

/* a run of the kind in mode m took t seconds */
static inline void vq_job_kind_record(vq_job_kind *k, int m, double t)
{
    const int probed = k->runs[VQ_KIND_PARALLEL] >= VQ_KIND_PROBE && k->runs[VQ_KIND_SERIAL] >= VQ_KIND_PROBE;
    const int slower = k->mean_s[VQ_KIND_SERIAL] < k->mean_s[VQ_KIND_PARALLEL] ? VQ_KIND_PARALLEL : VQ_KIND_SERIAL;
    if (!k->runs[m] || (k->runs[m] < VQ_KIND_PROBE && t < k->mean_s[m]) || (probed && m == slower))
        k->mean_s[m] = t; /* a probe (the fastest), or an exploring run */
    else if (k->runs[m] >= VQ_KIND_PROBE)
        k->mean_s[m] += (t - k->mean_s[m]) * 0.25;
    if (k->runs[m] < 0xFFFFFFFFu)
        k->runs[m]++;
    if (k->runs[VQ_KIND_PARALLEL] >= VQ_KIND_PROBE && k->runs[VQ_KIND_SERIAL] >= VQ_KIND_PROBE)
        k->count++;
}

#endif
