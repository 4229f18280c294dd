/* crc32.h -- CRC-32 (IEEE 802.3, reflected, poly 0xEDB88320), as zlib's
 * crc32(): vq_crc32(0, "123456789", 9) == 0xCBF43926. Chainable. */
#ifndef VQ_CORE_CRC32_H
#define VQ_CORE_CRC32_H

#include <stddef.h>
#include <stdint.h>

uint32_t vq_crc32(uint32_t crc, const void *data, size_t n);

#endif
