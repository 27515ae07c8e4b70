/* hsd synth: writes a random-weight model of a real shape (for loader tests and speed). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/clock.h"
#include "cli/cli.h"
#include "hsd.h"
#include "hsd_tools.h"

typedef struct synth_opts {
    const char *shape, *dir, *tokenizer;
    int format, dtype, drop_norm;
    uint64_t seed;
} synth_opts;

#define O(f) offsetof(synth_opts, f)
static const hsd_opt synth_table[] = {
    {"shape", 0, HSD_OPT_STRING, O(shape), "NAME", "model shape, e.g. tiny, tiny-qwen2, llama-3.2-1b", 0, 0},
    {"format", 0, HSD_OPT_CHOICE, O(format), "safetensors|gguf", "file format", 0, 0},
    {"", 'o', HSD_OPT_STRING, O(dir), "DIR", "output directory", 0, 0},
    {"dtype", 0, HSD_OPT_CHOICE, O(dtype), "f32|f16|bf16|q8_0", "weight type (default f32)", 0, 0},
    {"seed", 0, HSD_OPT_U64, O(seed), "S", "random seed (default 1)", 0, 0},
    {"tokenizer", 0, HSD_OPT_STRING, O(tokenizer), "FILE",
     "rows for this tokenizer's ids (tiny-* shapes: exactly them); gguf: its vocabulary in the "
     "metadata, refused where a GGUF vocabulary cannot tokenize like it (else a placeholder "
     "vocabulary)", 0, 0},
    {"gguf-drop-normalizer", 0, HSD_OPT_FLAG, O(drop_norm), NULL,
     "gguf: write a byte-level BPE tokenizer's vocabulary without its normalizer (NFC, NFKC), "
     "which GGUF cannot hold: it then tokenizes like the source only on text the normalizer "
     "leaves unchanged", 0, 0},
};
#undef O

const hsd_cli_spec hsd_spec_synth = {
    "synth",
    "--shape NAME --format safetensors|gguf -o DIR [--dtype f32|f16|bf16|q8_0] [--seed S] [--tokenizer FILE [--gguf-drop-normalizer]]",
    "  gguf writes DIR/model.gguf; safetensors writes DIR/config.json + DIR/model.safetensors\n"
    "  an unknown --shape lists the known ones\n",
    NULL,
    synth_table,
    HSD_OPTS_N(synth_table),
    0,
};

static void synth_fail(void) { fprintf(stderr, "hsd synth: %s\n", hsd_cli_error("synth")); }

int hsd_cmd_synth(int argc, char **argv) {
    synth_opts o = {0};
    o.format = -1, o.seed = 1;
    HSD_OPTS_PARSE(&hsd_spec_synth, &o, argc, argv, NULL);
    if (!o.shape || o.format < 0 || !o.dir)
        return hsd_opts_fail(&hsd_spec_synth, "--shape, --format and -o are required");
    /* the --dtype choices, in hsd_ftype's order */
    static const hsd_ftype ftypes[] = {HSD_FTYPE_F32, HSD_FTYPE_F16, HSD_FTYPE_BF16,
                                       HSD_FTYPE_Q8_0};
    static const char *const dtype_names[] = {"f32", "f16", "bf16", "q8_0"};
    const char *shape = o.shape, *dir = o.dir, *dtype = dtype_names[o.dtype];
    const char *format = o.format == 1 ? "gguf" : "safetensors";
    hsd_synth_params sp = hsd_synth_default_params();
    sp.shape = shape, sp.type = ftypes[o.dtype], sp.seed = o.seed;
    if (o.tokenizer) { /* rows for every id of the tokenizer (hsd_synth_params.tokenizer_ids) */
        hsd_tokenizer *tok;
        if (hsd_tokenizer_load_file(o.tokenizer, &tok) != HSD_OK) {
            fprintf(stderr, "hsd synth: --tokenizer: %s\n", hsd_last_error());
            return 1;
        }
        sp.tokenizer_ids = hsd_tokenizer_vocab_size(tok);
        hsd_tokenizer_free(tok);
    }
    double t0 = cli_timer_ms();
    hsd_synth_model *m;
    hsd_status s = hsd_synth_init(&sp, &m);
    if (s != HSD_OK) { synth_fail(); return 1; }
    double t1 = cli_timer_ms();
    char path[4096];
    /* a failed synth leaves nothing behind: the directory is removed again if this call made
     * it (the writers remove their own partial files) */
    struct stat dst;
    bool made_dir = stat(dir, &dst) != 0;
    if (!strcmp(format, "gguf")) {
        if (made_dir && mkdir(dir, 0755) != 0) {
            fprintf(stderr, "hsd synth: -o %s: cannot create the directory\n", dir);
            hsd_synth_free(m);
            return 1;
        }
        snprintf(path, sizeof path, "%s/model.gguf", dir);
        s = hsd_synth_write_gguf_vocab(m, path, o.tokenizer,
                                       o.drop_norm ? HSD_GGUF_VOCAB_DROP_NORMALIZER : 0);
    } else {
        snprintf(path, sizeof path, "%s", dir);
        s = hsd_synth_write_safetensors(m, dir);
    }
    if (s != HSD_OK && made_dir) rmdir(dir);
    size_t bytes = hsd_synth_weight_bytes(m);
    hsd_synth_free(m);
    if (s != HSD_OK) { synth_fail(); return 1; }
    printf("wrote %s: shape %s, %s, %.1f MB of weights (generated in %.1f s, written in %.1f s)\n", path, shape,
           dtype, bytes / 1e6, (t1 - t0) / 1e3, (cli_timer_ms() - t1) / 1e3);
    return 0;
}
