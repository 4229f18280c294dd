/* git.c -- see git.h. */
#include "util/git.h"

#include <stdio.h>
#include <string.h>

void cli_git_commit(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown");
    FILE *p = popen("git rev-parse HEAD 2>/dev/null", "r");
    if (!p)
        return;
    char line[128];
    if (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\r\n")] = 0;
        size_t n = strlen(line);
        if (n == 40 && n < cap) /* a full SHA-1 that fits: copy it whole */
            memcpy(buf, line, n + 1);
    }
    pclose(p);
    /* mark a dirty tree: the numbers came from uncommitted code */
    p = popen("git status --porcelain --untracked-files=no 2>/dev/null | head -1", "r");
    if (p) {
        if (fgets(line, sizeof line, p) && strlen(buf) + 7 < cap)
            strcat(buf, "-dirty");
        pclose(p);
    }
}
