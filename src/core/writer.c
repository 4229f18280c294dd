/* writer.c -- the writer field of the binary files (writer.h). */
#include "core/writer.h"

#include <stdio.h>

#include "core/error.h"
#include "core/io.h"

vq_status vq_file_writer_check(uint32_t w, const char *what, char *err)
{
    if (w > VQ_FILE_WRITER_MAX)
        return vq_fail(err, VQ_ERR_FORMAT, "%s: writer field %u out of range (not a library version)", what, w);
    return VQ_OK;
}

const char *vq_file_writer_note(const uint8_t *p, size_t len, char buf[48])
{
    buf[0] = '\0';
    if (p && len >= 12) {
        uint32_t w = vq_get_u32(p + 8);
        if (w <= VQ_FILE_WRITER_MAX)
            snprintf(buf, 48, " (written by veloxquant %u.%u.%u)", w / 10000, w / 100 % 100, w % 100);
    }
    return buf;
}
