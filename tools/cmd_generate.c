/* cmd_generate.c -- `veloxquant generate`: not built yet (see the open issues). */
#include "cli.h"

int cmd_generate(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("generate", "not implemented yet");
    return 2;
}
