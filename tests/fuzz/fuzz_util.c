/* fuzz_util.c -- helpers shared by the fuzz harnesses (see fuzz.h). */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

int vq_fuzz_accepted;

int vq_fuzz_memfile(const uint8_t *data, size_t size, char *path, size_t cap)
{
    int fd = memfd_create("vq_fuzz", 0);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)w;
    }
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return fd;
}

char *vq_fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return NULL;
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}
