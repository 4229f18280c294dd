/* test_files.h -- scratch files of the tests that write and damage files
 * (test_cache_persist, test_file_versions). */
#ifndef VQ_TESTS_TEST_FILES_H
#define VQ_TESTS_TEST_FILES_H

#include <stddef.h>

/* vq_test_tmpdir()/name in one of four rotating static buffers (valid
 * until the fourth next call). */
const char *vq_test_tmp_path(const char *name);

/* Write n bytes of p to path as they are (no temporary, no fsync): 0 on
 * success, -1 on failure. */
int vq_test_write_file(const char *path, const void *p, size_t n);

#endif
