/* nibble_tables.c -- see nibble_tables.h. */
#include "kernels/nibble_tables.h"

void vq_nibble_tables(const uint8_t *v, size_t D, uint8_t *tables)
{
    for (size_t p = 0; p < D / 4; p++) {
        uint8_t *t = tables + 16 * p;
        t[0] = 0;
        /* entries 2^k .. 2^(k+1)-1 are entries 0 .. 2^k-1 plus v_{4p+k} */
        for (size_t k = 0; k < 4; k++)
            for (size_t e = 0; e < ((size_t)1 << k); e++)
                t[((size_t)1 << k) + e] = (uint8_t)(t[e] + v[4 * p + k]);
    }
}
