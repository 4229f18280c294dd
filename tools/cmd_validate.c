/* cmd_validate.c -- `veloxquant validate`: not built yet (see the open issues). */
#include "cli.h"

int cmd_validate(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("validate", "not implemented yet");
    return 2;
}
