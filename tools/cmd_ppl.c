/* cmd_ppl.c -- `veloxquant ppl`: not built yet (see the open issues). */
#include "cli.h"

int cmd_ppl(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("ppl", "not implemented yet");
    return 2;
}
