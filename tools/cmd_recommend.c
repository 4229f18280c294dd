#include "cli.h"
int cmd_recommend(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("recommend", "not implemented yet");
    return 2;
}
