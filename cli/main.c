/* hsd — command-line front end. Dispatches to one file per subcommand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "hsd.h"

static const hsd_cli_cmd cmds[] = {
    {"tokenize", hsd_cmd_tokenize, &hsd_spec_tokenize, "encode text"},
    {"detokenize", hsd_cmd_detokenize, &hsd_spec_detokenize, "decode ids"},
    {"generate", hsd_cmd_generate, &hsd_spec_generate,
     "generate text: AR, or speculative with a drafter"},
    {"template", hsd_cmd_template, &hsd_spec_template, "render a chat template over a conversation"},
    {"synth", hsd_cmd_synth, &hsd_spec_synth, "write a random-weight model of a real shape"},
    {"inflate", hsd_cmd_inflate, &hsd_spec_inflate,
     "widen/deepen a trained model to a real shape, same outputs"},
    {"pair", hsd_cmd_pair, &hsd_spec_pair, "target/drafter fit and algorithm advice"},
    {"psi-stats", hsd_cmd_psi_stats, &hsd_spec_psi_stats,
     "SLRS cost: decompositions of target tokens into drafter tokens, n_max"},
    {"injectivity", hsd_cmd_injectivity, &hsd_spec_injectivity,
     "find strings a tokenizer does not give back"},
    {"trim", hsd_cmd_trim, &hsd_spec_trim, "exact coverage-latency optimal draft vocabulary"},
    {"serve", hsd_cmd_serve, &hsd_spec_serve,
     "OpenAI/llama-server-compatible HTTP server (continuous batching)"},
    {"bench", hsd_cmd_bench, NULL, "benchmarks (hsd bench --help lists them)"},
};
#define N_CMDS ((int)(sizeof cmds / sizeof cmds[0]))

static void usage(FILE *f) {
    fprintf(f,
            "hsd %s — heterogeneous speculative decoding\nusage: hsd COMMAND [OPTIONS]   "
            "(hsd COMMAND --help)\n",
            hsd_version());
    for (int i = 0; i < N_CMDS; i++) fprintf(f, "  %-11s %s\n", cmds[i].name, cmds[i].help);
}

/* `hsd help-flags`: "COMMAND<TAB>FLAG<TAB>TYPE" for every flag of every subcommand, generated from the
 * option tables (tests/test_docs.c checks docs/CLI.md against it). */
static int help_flags(void) {
    for (int i = 0; i < N_CMDS; i++)
        if (cmds[i].spec) hsd_opts_list_flags(cmds[i].spec, stdout);
    for (int i = 0; i < hsd_cli_n_bench_cmds; i++)
        hsd_opts_list_flags(hsd_cli_bench_cmds[i].spec, stdout);
    return 0;
}

/* "0" and the empty string mean off, as a shell user writes them; any other value on */
static bool env_on(const char *name) {
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

static bool env_is(const char *name, const char *value) {
    const char *v = getenv(name);
    return v && !strcmp(v, value);
}

hsd_model_params hsd_cli_model_params(void) {
    hsd_model_params p = hsd_model_default_params();
    const char *mm = getenv("HSD_MATMUL"), *be = getenv("HSD_BACKEND"), *mv = getenv("HSD_CUDA_MMA");
    if (mm && *mm) {
        int k = hsd_cpu_kernels_parse(mm);
        if (k < 0)
            fprintf(stderr, "hsd: HSD_MATMUL=%s unknown (auto|scalar|avx2|avx512|amx); ignored\n",
                    mm);
        else
            p.cpu_kernels = (hsd_cpu_kernels)k;
    }
    p.no_pack = env_on("HSD_NO_PACK");
    p.no_blas = getenv("HSD_NO_BLAS") != NULL;
    /* HSD_BACKEND=cpu|cuda replaces AUTO; an explicit --backend still wins (set after this) */
    if (be && *be) {
        int b = hsd_backend_parse(be);
        if (b < 0)
            fprintf(stderr, "hsd: HSD_BACKEND=%s unknown (auto|cpu|cuda); ignored\n", be);
        else
            p.backend = (hsd_backend)b;
    }
    p.cuda.no_graphs = env_is("HSD_CUDA_GRAPHS", "0");
    p.cuda.cublas_gemv = env_is("HSD_CUDA_GEMV", "cublas");
    p.cuda.warp_gemm = env_is("HSD_CUDA_GEMM", "warp");
    p.cuda.no_pdl = env_is("HSD_CUDA_PDL", "0");
    if (mv && *mv) {
        char *end;
        long v = strtol(mv, &end, 10);
        if (*end || v < 0 || v > 4)
            fprintf(stderr, "hsd: HSD_CUDA_MMA=%s is not 1..4; ignored\n", mv);
        else
            p.cuda.mma_variant = (int32_t)v;
    }
    return p;
}

const char *hsd_cli_error(const char *who) {
    const char *msg = hsd_last_error();
    const char *last = strrchr(who, ' ');
    const char *names[2] = {who, last ? last + 1 : NULL};
    for (int i = 0; i < 2; i++) {
        size_t n = names[i] ? strlen(names[i]) : 0;
        if (n && !strncmp(msg, names[i], n) && msg[n] == ':' && msg[n + 1] == ' ') return msg + n + 2;
    }
    return msg;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("hsd %s\n", hsd_version());
        return 0;
    }
    if (!strcmp(argv[1], "help-flags")) return help_flags();
    for (int i = 0; i < N_CMDS; i++)
        if (!strcmp(argv[1], cmds[i].name)) return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "hsd: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
