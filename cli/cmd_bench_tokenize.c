#include <stdio.h>

#include "cli/cli.h"

int hsd_cmd_bench_tokenize(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "hsd: 'bench_tokenize' is not available yet in this build\n");
    return 2;
}
