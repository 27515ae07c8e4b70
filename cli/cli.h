/* Subcommands of the `hsd` command-line tool. Each returns the process exit code. */
#ifndef HSD_CLI_H
#define HSD_CLI_H

int hsd_cmd_tokenize(int argc, char **argv);
int hsd_cmd_detokenize(int argc, char **argv);
int hsd_cmd_bench(int argc, char **argv);
int hsd_cmd_bench_tokenize(int argc, char **argv);
int hsd_cmd_bench_forward(int argc, char **argv);
int hsd_cmd_bench_generate(int argc, char **argv);
int hsd_cmd_bench_bridge(int argc, char **argv);
int hsd_cmd_bench_head(int argc, char **argv);
int hsd_cmd_bench_heads(int argc, char **argv);
int hsd_cmd_bench_bandwidth(int argc, char **argv);
int hsd_cmd_trim(int argc, char **argv);
int hsd_cmd_generate(int argc, char **argv);
int hsd_cmd_synth(int argc, char **argv);
int hsd_cmd_pair(int argc, char **argv);
int hsd_cmd_injectivity(int argc, char **argv);
int hsd_cmd_psi_stats(int argc, char **argv);

#endif
