/* sign_tables.h -- 1-bit sign codes scored against float queries through
 * per-query float tables of four coordinates: the float form of the nibble
 * tables' "fast scan" (kernels.h signscore_float), for the codecs whose
 * query stays in floats (turboquant_rvq at 1 bit, qjl).
 *
 * A query y of m floats (m a multiple of 4) has m/4 tables of 16 floats,
 * table p at floats 16p..16p+15, entry e:
 *   ((s0 y[4p] + s1 y[4p+1]) + s2 y[4p+2]) + s3 y[4p+3]
 * with s_k = +1 where bit k of e is set and -1 where it is clear, every sum
 * rounded on its own in this order (vq_sign_tables writes them; every
 * variant only reads them). For m bits z (LSB first), nibble p of z being
 * bits 4p..4p+3,
 *   A(z) = sum_p table_p[nibble p of z]   (from 0.0f, p = 0, 1, ... in order)
 * equals <y, s(z)> up to rounding, s(z)_d = +1 where bit d of z is set,
 * -1 where it is clear. */
#ifndef VQ_KERNELS_SIGN_TABLES_H
#define VQ_KERNELS_SIGN_TABLES_H

#include <stddef.h>

/* floats of the tables of an m-float query */
static inline size_t vq_sign_tables_floats(size_t m) { return 4 * m; }

/* the tables of y[0..m) into tab[0 .. 4m) as above (m a multiple of 4) */
void vq_sign_tables(const float *y, size_t m, float *tab);

#endif
