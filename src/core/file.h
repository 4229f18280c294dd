/* file.h -- whole-file reads with a size cap, and atomic writes.
 *
 * vq_file_read_all: reads a regular file of at most max_bytes into a new
 * malloc'd buffer (*out, caller frees). VQ_ERR_IO with the path on failure.
 *
 * vq_file_write_atomic: writes to "<path>.tmp.<pid>", fsyncs, renames over
 * path. A crash at any point leaves either the old file or the new one,
 * never a partial file at path; the temporary is removed on failure. After a
 * successful write, temporaries "<path>.tmp.<pid>" of writers that were
 * killed (no such process any more) are removed. */
#ifndef VQ_CORE_FILE_H
#define VQ_CORE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "veloxquant.h"

vq_status vq_file_read_all(const char *path, size_t max_bytes, uint8_t **out,
                           size_t *len, char *err);

/* Writer callback: write `n` bytes with vq_file_put; used so large files are
 * streamed instead of assembled in memory. */
typedef struct vq_file_writer vq_file_writer;
vq_status vq_file_put(vq_file_writer *w, const void *data, size_t n);
typedef vq_status (*vq_file_fill_fn)(vq_file_writer *w, void *user);

vq_status vq_file_write_atomic(const char *path, vq_file_fill_fn fill, void *user, char *err);
/* Convenience: one buffer. */
vq_status vq_file_write_buffer(const char *path, const void *data, size_t n, char *err);

#endif
