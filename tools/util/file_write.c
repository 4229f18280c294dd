/* file_write.c -- see file_write.h. */
#include "util/file_write.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_write_file_atomic(const char *path, const void *data, size_t n, char *err, size_t cap)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        snprintf(err, cap, "path too long: %.200s", path);
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, cap, "cannot create '%s': %s", tmp, strerror(errno));
        return -1;
    }
    const char *p = data;
    const char *what = NULL;
    while (n > 0 && !what) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            what = "write";
        else
            p += k, n -= (size_t)k;
    }
    if (!what && fsync(fd) != 0)
        what = "fsync";
    if (close(fd) != 0 && !what)
        what = "close";
    if (!what && rename(tmp, path) != 0)
        what = "rename";
    if (what) {
        snprintf(err, cap, "cannot write '%s' (%s): %s", path, what, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

void cli_remove_stale_temps(const char *dir, const char *prefix, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    size_t pl = strlen(prefix), sl = strlen(suffix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        size_t nl = strlen(name);
        if (nl <= pl + sl || strncmp(name, prefix, pl) != 0 || strcmp(name + nl - sl, suffix) != 0)
            continue;
        char *end;
        errno = 0;
        long pid = strtol(name + pl, &end, 10);
        if (errno || end != name + nl - sl || pid <= 0 || pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char full[4400];
        if (snprintf(full, sizeof full, "%s/%s", dir, name) < (int)sizeof full)
            unlink(full);
    }
    closedir(d);
}
