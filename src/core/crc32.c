/* crc32.c -- CRC-32 by slicing eight bytes at a time (tables built once):
 * T[0] is the byte-at-a-time table, T[k][b] the CRC of byte b followed by k
 * zero bytes, so one step folds eight input bytes with eight lookups. The
 * result is the byte-at-a-time CRC's (tests/test_core.c checks it against
 * a bitwise one). */
#include "core/crc32.h"

#include <pthread.h>

static uint32_t T[8][256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        T[0][i] = c;
    }
    for (int k = 1; k < 8; k++)
        for (uint32_t i = 0; i < 256; i++)
            T[k][i] = (T[k - 1][i] >> 8) ^ T[0][T[k - 1][i] & 0xffu];
}

static inline uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint32_t vq_crc32(uint32_t crc, const void *data, size_t n)
{
    pthread_once(&tables_once, build);
    const uint8_t *p = data;
    crc = ~crc;
    for (; n >= 8; p += 8, n -= 8) {
        const uint32_t lo = le32(p) ^ crc, hi = le32(p + 4);
        crc = T[7][lo & 0xffu] ^ T[6][(lo >> 8) & 0xffu] ^ T[5][(lo >> 16) & 0xffu] ^ T[4][lo >> 24] ^
              T[3][hi & 0xffu] ^ T[2][(hi >> 8) & 0xffu] ^ T[1][(hi >> 16) & 0xffu] ^ T[0][hi >> 24];
    }
    for (; n > 0; p++, n--)
        crc = T[0][(crc ^ *p) & 0xffu] ^ (crc >> 8);
    return ~crc;
}
