#include <stdio.h>

#include "cli/cli.h"

/* Placeholder until the model core lands (issue: Model core on CPU). */
int hsd_cmd_bench_forward(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "hsd: 'bench_forward' is not available yet in this build\n");
    return 2;
}
