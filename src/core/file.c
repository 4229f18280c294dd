/* file.c -- bounded whole-file reads and crash-safe (atomic) writes. */
#include "core/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/crc32.h"

vq_status vq_file_read_all(const char *path, size_t max_bytes, uint8_t **out,
                           size_t *len, char *err)
{
    if (!path || !out || !len)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "read: NULL argument");
    *out = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return vq_fail(err, VQ_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return vq_fail(err, VQ_ERR_IO, "'%s' is not a regular file", path);
    }
    if ((uint64_t)sb.st_size > max_bytes) {
        close(fd);
        return vq_fail(err, VQ_ERR_FORMAT, "'%s' is %lld bytes, more than the %zu allowed", path,
                       (long long)sb.st_size, max_bytes);
    }
    size_t n = (size_t)sb.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        close(fd);
        return vq_fail(err, VQ_ERR_NOMEM, "out of memory reading '%s'", path);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            free(buf);
            close(fd);
            return vq_fail(err, VQ_ERR_IO, "error reading '%s'", path);
        }
        got += (size_t)r;
    }
    close(fd);
    *out = buf;
    *len = n;
    return VQ_OK;
}

struct vq_file_writer {
    int fd;
    char *err;
    const char *path;
};

vq_status vq_file_put(vq_file_writer *w, const void *data, size_t n)
{
    const uint8_t *p = data;
    while (n > 0) {
        ssize_t r = write(w->fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return vq_fail(w->err, VQ_ERR_IO, "error writing '%s': %s", w->path, strerror(errno));
        p += r;
        n -= (size_t)r;
    }
    return VQ_OK;
}

/* Remove the "<path>.tmp.<pid>" files of writers that were killed before
 * their rename (no process <pid> exists any more). Best effort: a live or
 * unknown pid (EPERM) is left alone. */
static void remove_stale_temps(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    size_t dl = slash ? (size_t)(slash - path) : 0;
    if (dl >= sizeof dir)
        return;
    if (slash) {
        memcpy(dir, path, dl);
        dir[dl] = '\0';
        if (dl == 0)
            dir[0] = '/', dir[1] = '\0';
    } else {
        dir[0] = '.', dir[1] = '\0';
    }
    size_t bl = strlen(base);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, base, bl) != 0 || strncmp(e->d_name + bl, ".tmp.", 5) != 0)
            continue;
        const char *p = e->d_name + bl + 5;
        char *end;
        errno = 0;
        long pid = strtol(p, &end, 10);
        if (errno || end == p || *end || pid <= 0 || pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char full[4096 + 300];
        snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        unlink(full);
    }
    closedir(d);
}

vq_status vq_file_write_atomic(const char *path, vq_file_fill_fn fill, void *user, char *err)
{
    if (!path || !fill)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "write: NULL argument");
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 32);
    if (!tmp)
        return vq_fail(err, VQ_ERR_NOMEM, "out of memory");
    snprintf(tmp, pl + 32, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        vq_status st = vq_fail(err, VQ_ERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
        free(tmp);
        return st;
    }
    vq_file_writer w = { fd, err, path };
    vq_status st = fill(&w, user);
    if (st == VQ_OK && fsync(fd) != 0)
        st = vq_fail(err, VQ_ERR_IO, "fsync '%s': %s", tmp, strerror(errno));
    if (close(fd) != 0 && st == VQ_OK)
        st = vq_fail(err, VQ_ERR_IO, "close '%s': %s", tmp, strerror(errno));
    if (st == VQ_OK && rename(tmp, path) != 0)
        st = vq_fail(err, VQ_ERR_IO, "rename '%s' -> '%s': %s", tmp, path, strerror(errno));
    if (st != VQ_OK)
        unlink(tmp);
    else
        remove_stale_temps(path);
    free(tmp);
    return st;
}

struct buf_arg { const void *data; size_t n; };

static vq_status fill_buffer(vq_file_writer *w, void *user)
{
    struct buf_arg *a = user;
    return vq_file_put(w, a->data, a->n);
}

vq_status vq_file_write_buffer(const char *path, const void *data, size_t n, char *err)
{
    struct buf_arg a = { data, n };
    return vq_file_write_atomic(path, fill_buffer, &a, err);
}
