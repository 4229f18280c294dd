/* nibble_tables.c -- see nibble_tables.h. */
#include "kernels/nibble_tables.h"

/* The 16 entries of a table as two words of 8 bytes, each byte a sum of
 * levels (<= 60: no byte carries into the next): entry e < 8 holds v0 where
 * bit 0 of e is set (bytes 1, 3, 5, 7), v1 where bit 1 is (2, 3, 6, 7), v2
 * where bit 2 is (4..7); entries 8..15 add v3 to every byte. Little-endian
 * byte order is written out explicitly. */
void vq_nibble_tables(const uint8_t *v, size_t D, uint8_t *tables)
{
    for (size_t p = 0; p < D / 4; p++) {
        const uint64_t lo = v[4 * p] * 0x0100010001000100ull + v[4 * p + 1] * 0x0101000001010000ull +
                            v[4 * p + 2] * 0x0101010100000000ull;
        const uint64_t hi = lo + v[4 * p + 3] * 0x0101010101010101ull;
        uint8_t *t = tables + vq_nibble_table_at(p);
        for (int b = 0; b < 8; b++) {
            t[b] = (uint8_t)(lo >> (8 * b));
            t[8 + b] = (uint8_t)(hi >> (8 * b));
        }
    }
}
