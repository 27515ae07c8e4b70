#include <stdio.h>

#include "cli/cli.h"

int hsd_cmd_detokenize(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "hsd: 'detokenize' is not available yet in this build\n");
    return 2;
}
