/* writer.h -- the writer field of the library's binary files (cache files,
 * codec calibration states, model calibration files, prompt sidecars;
 * docs/FORMATS.md, docs/cache-format.md): a u32 at offset 8, right after
 * the magic and the format version, in every format version that has it
 * (VQKC 3, VQCS 2, VQCM 2, VQPT 2 and later). It holds VQ_VERSION_NUMBER
 * (MAJOR*10000 + MINOR*100 + PATCH) of the library that wrote the file.
 * It says who wrote a file, for messages and support; the format version
 * alone says how a file is read. Readers take it as hostile input: a value
 * that no library version can have written is refused (VQ_ERR_FORMAT). */
#ifndef VQ_CORE_WRITER_H
#define VQ_CORE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "veloxquant.h"

#define VQ_FILE_WRITER ((uint32_t)VQ_VERSION_NUMBER)
#define VQ_FILE_WRITER_MAX 999999u /* 99.99.99 */

/* VQ_OK when w can be a writer field, else VQ_ERR_FORMAT with a message
 * "<what>: writer field <w> out of range" kept in err (may be NULL). */
vq_status vq_file_writer_check(uint32_t w, const char *what, char *err);

/* For the message about a file of a format version this build does not
 * read: " (written by veloxquant M.m.p)" when the file's first 12 bytes
 * (p, len) hold a writer field in range, else "" (older files have none,
 * and a newer format keeps the field at offset 8). Returns buf. */
const char *vq_file_writer_note(const uint8_t *p, size_t len, char buf[48]);

#endif
