/* git.h -- the commit the working directory is at, for result files.
 *
 * cli_git_commit: the full SHA-1 of `git rev-parse HEAD` with "-dirty"
 * appended when tracked files have uncommitted changes (the numbers then
 * came from uncommitted code); "unknown" outside a repository or without
 * git. Runs git through popen. */
#ifndef VQ_TOOLS_UTIL_GIT_H
#define VQ_TOOLS_UTIL_GIT_H

#include <stddef.h>

void cli_git_commit(char *buf, size_t cap);

#endif
