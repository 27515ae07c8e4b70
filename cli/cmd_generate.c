#include <stdio.h>

#include "cli/cli.h"

/* Placeholder until the model core lands (issue: Model core on CPU). */
int hsd_cmd_generate(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "hsd: 'generate' is not available yet in this build\n");
    return 2;
}
