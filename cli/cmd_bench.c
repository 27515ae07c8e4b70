#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int hsd_cmd_bench(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "tokenize")) return hsd_cmd_bench_tokenize(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "forward")) return hsd_cmd_bench_forward(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "generate")) return hsd_cmd_bench_generate(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "bridge")) return hsd_cmd_bench_bridge(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "head")) return hsd_cmd_bench_head(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "heads")) return hsd_cmd_bench_heads(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "bandwidth")) return hsd_cmd_bench_bandwidth(argc - 1, argv + 1);
    fprintf(stderr, "usage: hsd bench tokenize|forward|generate|bridge|head|heads|bandwidth ...\n");
    return 2;
}
