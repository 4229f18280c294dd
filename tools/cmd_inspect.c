/* cmd_inspect.c -- `veloxquant inspect`: not built yet (see the open issues). */
#include "cli.h"

int cmd_inspect(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("inspect", "not implemented yet");
    return 2;
}
