/* hsd bench: dispatches to the benchmark subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

const hsd_cli_cmd hsd_cli_bench_cmds[] = {
    {"tokenize", hsd_cmd_bench_tokenize, &hsd_spec_bench_tokenize, "encode throughput (MB/s)"},
    {"forward", hsd_cmd_bench_forward, &hsd_spec_bench_forward,
     "cost of a forward over n tokens vs n = 1"},
    {"generate", hsd_cmd_bench_generate, &hsd_spec_bench_generate,
     "every algorithm over the bench prompts, with the cost model"},
    {"bridge", hsd_cmd_bench_bridge, &hsd_spec_bench_bridge, "bridge (re-tokenization) cost"},
    {"head", hsd_cmd_bench_head, &hsd_spec_bench_head, "draft head cost per forward"},
    {"heads", hsd_cmd_bench_heads, &hsd_spec_bench_heads,
     "acceptance-cost trade-off of reduced drafter heads"},
    {"bandwidth", hsd_cmd_bench_bandwidth, &hsd_spec_bench_bandwidth,
     "memory read bandwidth and the forward(1) floor"},
    {"chat", hsd_cmd_bench_chat, &hsd_spec_bench_chat, "chat-template render cost (us per conversation)"},
};
const int hsd_cli_n_bench_cmds = (int)(sizeof hsd_cli_bench_cmds / sizeof hsd_cli_bench_cmds[0]);

int hsd_cmd_bench(int argc, char **argv) {
    for (int i = 0; argc >= 2 && i < hsd_cli_n_bench_cmds; i++)
        if (!strcmp(argv[1], hsd_cli_bench_cmds[i].name))
            return hsd_cli_bench_cmds[i].fn(argc - 1, argv + 1);
    int help = argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"));
    FILE *f = help ? stdout : stderr;
    if (argc >= 2 && !help) fprintf(stderr, "hsd bench: unknown benchmark '%s'\n", argv[1]);
    fprintf(f, "usage: hsd bench BENCHMARK [OPTIONS]   (hsd bench BENCHMARK --help)\n");
    for (int i = 0; i < hsd_cli_n_bench_cmds; i++)
        fprintf(f, "  %-9s %s\n", hsd_cli_bench_cmds[i].name, hsd_cli_bench_cmds[i].help);
    return help ? 0 : 2;
}
