/* hsd — command-line front end. Dispatches to one file per subcommand. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "hsd.h"

int hsd_cmd_inflate(int argc, char **argv); /* cli/cmd_inflate.c */

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} hsd_cli_cmd;

static const hsd_cli_cmd cmds[] = {
    {"tokenize", hsd_cmd_tokenize, "encode text (-t TOKENIZER [--special] [--jsonl] [TEXT])"},
    {"detokenize", hsd_cmd_detokenize, "decode ids (-t TOKENIZER [--skip-special] IDS...)"},
    {"generate", hsd_cmd_generate, "generate text (--model M --tokenizer T -p PROMPT -n N)"},
    {"synth", hsd_cmd_synth, "write a random-weight model of a real shape"},
    {"inflate", hsd_cmd_inflate, "widen/deepen a trained model to a real shape, same outputs (--model M --shape S -o OUT.gguf)"},
    {"pair", hsd_cmd_pair, "target/drafter fit and algorithm advice (--target-tokenizer T --draft-tokenizer D)"},
    {"psi-stats", hsd_cmd_psi_stats, "SLRS cost: decompositions of target tokens into drafter tokens, n_max (--draft-tokenizer D --target-tokenizer T)"},
    {"injectivity", hsd_cmd_injectivity, "find strings a tokenizer does not give back (-t T [--corpus C] [--fuzz S])"},
    {"trim", hsd_cmd_trim, "exact coverage-latency optimal draft vocabulary (-t T --corpus C --alpha A ...)"},
    {"bench", hsd_cmd_bench, "benchmarks: bench tokenize | forward | generate | bridge | head | heads"},
};

static void usage(void) {
    fprintf(stderr, "hsd %s — heterogeneous speculative decoding\nusage: hsd COMMAND [ARGS]\n",
            hsd_version());
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(stderr, "  %-11s %s\n", cmds[i].name, cmds[i].help);
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage();
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("hsd %s\n", hsd_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name)) return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "hsd: unknown command '%s'\n", argv[1]);
    usage();
    return 2;
}
