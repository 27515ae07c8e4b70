/* Subcommands of the `hsd` command-line tool. Each returns the process exit code (0 ok,
 * 1 failure, 2 bad command line) and parses its arguments with cli/opts.h against its spec,
 * which the registry below also exposes (usage, `hsd help-flags`, the docs test). */
#ifndef HSD_CLI_H
#define HSD_CLI_H

#include "cli/opts.h"

typedef struct hsd_cli_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const hsd_cli_spec *spec; /* NULL for a group (bench) */
    const char *help;         /* one line for `hsd --help` */
} hsd_cli_cmd;

/* `hsd bench` subcommands (cli/cmd_bench.c). */
extern const hsd_cli_cmd hsd_cli_bench_cmds[];
extern const int hsd_cli_n_bench_cmds;

#define HSD_CLI_COMMAND(name)                                                                      \
    int hsd_cmd_##name(int argc, char **argv);                                                     \
    extern const hsd_cli_spec hsd_spec_##name

HSD_CLI_COMMAND(tokenize);
HSD_CLI_COMMAND(detokenize);
HSD_CLI_COMMAND(generate);
HSD_CLI_COMMAND(template);
/* YYYY-MM-DD -> that day's 00:00:00 UTC as a Unix time (cmd_template.c); -1 if malformed */
int hsd_cli_parse_day(const char *s, int64_t *unix_out);
HSD_CLI_COMMAND(synth);
HSD_CLI_COMMAND(inflate);
HSD_CLI_COMMAND(pair);
HSD_CLI_COMMAND(psi_stats);
HSD_CLI_COMMAND(injectivity);
HSD_CLI_COMMAND(trim);
HSD_CLI_COMMAND(serve);
HSD_CLI_COMMAND(bench_tokenize);
HSD_CLI_COMMAND(bench_forward);
HSD_CLI_COMMAND(bench_generate);
HSD_CLI_COMMAND(bench_bridge);
HSD_CLI_COMMAND(bench_head);
HSD_CLI_COMMAND(bench_heads);
HSD_CLI_COMMAND(bench_bandwidth);
HSD_CLI_COMMAND(bench_chat);
int hsd_cmd_bench(int argc, char **argv);

/* hsd_model_default_params() with the settings the CLI takes from the environment (the
 * library reads none; docs/CLI.md lists them): HSD_MATMUL=scalar|avx2|avx512|amx
 * (cpu_kernels), HSD_NO_PACK=1 (no_pack), HSD_NO_BLAS (no_blas, set when present),
 * HSD_BACKEND=auto|cpu|cuda (backend), HSD_CUDA_GRAPHS=0, HSD_CUDA_GEMV=cublas,
 * HSD_CUDA_GEMM=warp, HSD_CUDA_PDL=0, HSD_CUDA_MMA=1..4 (cuda). Unknown values are reported
 * on stderr and ignored (cli/main.c). */
struct hsd_model_params hsd_cli_model_params(void);

/* hsd_last_error() for a line "hsd WHO: ...": without a leading "WHO: " (or the last word of
 * WHO, "generate" for "bench generate") that the library already put there, so that no error
 * reads "hsd synth: synth: ...". */
const char *hsd_cli_error(const char *who);

#endif
