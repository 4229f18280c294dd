/* file_write.h -- the CLI's crash-safe file writes.
 *
 * cli_write_file_atomic: writes n bytes to "<path>.tmp.<pid>", fsyncs it
 * and renames it over path, so a crash leaves either the old file or the
 * new one, never a partial one. On failure the temporary is removed, a
 * message naming the file goes to err (cap bytes) and -1 is returned; 0 on
 * success.
 *
 * cli_remove_stale_temps: in directory dir, removes the files named
 * "<prefix><pid><suffix>" whose process no longer exists (temporaries of a
 * killed run); a live or unknown pid is left alone. Best effort. */
#ifndef VQ_TOOLS_UTIL_FILE_WRITE_H
#define VQ_TOOLS_UTIL_FILE_WRITE_H

#include <stddef.h>

int cli_write_file_atomic(const char *path, const void *data, size_t n, char *err, size_t cap);
void cli_remove_stale_temps(const char *dir, const char *prefix, const char *suffix);

#endif
