/* cmd_calibrate.c -- `veloxquant calibrate`: not built yet (see the open issues). */
#include "cli.h"

int cmd_calibrate(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("calibrate", "not implemented yet");
    return 2;
}
