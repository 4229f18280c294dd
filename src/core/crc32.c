/* crc32.c -- table-driven CRC-32 (table built on first use). */
#include "core/crc32.h"

static uint32_t table[256];
static int table_ready;

static void build(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[i] = c;
    }
    table_ready = 1;
}

uint32_t vq_crc32(uint32_t crc, const void *data, size_t n)
{
    if (!table_ready)
        build(); /* idempotent: a race writes the same values */
    const uint8_t *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++)
        crc = table[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
    return ~crc;
}
