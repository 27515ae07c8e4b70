/* hsd inflate: a trained Llama model widened/deepened to a real shape without changing its
 * function (models/inflate.c), written as GGUF. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/clock.h"
#include "cli/cli.h"
#include "hsd.h"
#include "hsd_tools.h"

typedef struct inflate_opts {
    const char *in, *tok, *shape, *out;
    int dtype, drop_norm;
    int32_t layers;
} inflate_opts;

#define O(f) offsetof(inflate_opts, f)
static const hsd_opt inflate_table[] = {
    {"model", 'm', HSD_OPT_STRING, O(in), "IN",
     "llama2.c .bin, GGUF or safetensors (llama or qwen2)", 0, 0},
    {"tokenizer", 't', HSD_OPT_STRING, O(tok), "T",
     "tokenizer for the GGUF's metadata (default: IN's own when IN is a GGUF, else a "
     "placeholder vocabulary)",
     0, 0},
    {"shape", 0, HSD_OPT_STRING, O(shape), "NAME", "target shape (as hsd synth's)", 0, 0},
    {"", 'o', HSD_OPT_STRING, O(out), "OUT.gguf", "output file", 0, 0},
    {"dtype", 0, HSD_OPT_CHOICE, O(dtype), "f32|f16|bf16|q8_0|q4_k_m", "weight type (f32)", 0, 0},
    {"layers", 0, HSD_OPT_INT, O(layers), "N", "layers of the output (default: the shape's)", 1,
     4096},
    {"gguf-drop-normalizer", 0, HSD_OPT_FLAG, O(drop_norm), NULL,
     "write a byte-level BPE tokenizer's vocabulary without its normalizer (NFC, NFKC), which "
     "GGUF cannot hold: it then tokenizes like the source only on text the normalizer leaves "
     "unchanged", 0, 0},
};
#undef O

const hsd_cli_spec hsd_spec_inflate = {
    "inflate",
    "--model IN [--tokenizer T] --shape NAME -o OUT.gguf [--dtype f32|f16|bf16|q8_0|q4_k_m] [--layers N] [--gguf-drop-normalizer]",
    "  The output computes IN's logits at the cost of the shape; vocabulary and context stay\n"
    "  IN's. An unknown --shape lists the known ones.\n",
    NULL,
    inflate_table,
    HSD_OPTS_N(inflate_table),
    0,
};

int hsd_cmd_inflate(int argc, char **argv) {
    inflate_opts o = {0};
    HSD_OPTS_PARSE(&hsd_spec_inflate, &o, argc, argv, NULL);
    if (!o.in || !o.shape || !o.out)
        return hsd_opts_fail(&hsd_spec_inflate, "--model, --shape and -o are required");
    /* the --dtype choices, in hsd_ftype's order */
    static const hsd_ftype ftypes[] = {HSD_FTYPE_F32, HSD_FTYPE_F16, HSD_FTYPE_BF16,
                                       HSD_FTYPE_Q8_0, HSD_FTYPE_Q4_K_M};
    static const char *const dtype_names[] = {"f32", "f16", "bf16", "q8_0", "q4_k_m"};
    const char *in = o.in, *shape = o.shape, *out = o.out;
    const char *dtype = dtype_names[o.dtype];
    hsd_inflate_params p = hsd_inflate_default_params();
    p.shape = shape, p.tokenizer = o.tok, p.n_layers = o.layers, p.type = ftypes[o.dtype];
    p.gguf_vocab_flags = o.drop_norm ? HSD_GGUF_VOCAB_DROP_NORMALIZER : 0;
    double t0 = cli_timer_ms();
    hsd_inflate_info c;
    if (hsd_inflate_file(in, &p, out, &c) != HSD_OK) {
        fprintf(stderr, "hsd inflate: %s\n", hsd_cli_error("inflate"));
        return 1;
    }
    printf("wrote %s: %s inflated to shape %s (%s, dim %d, FFN %d, %d layers, %d heads / %d KV "
           "heads of %d, vocab %d), %.1f MB of weights, in %.1f s\n",
           out, in, shape, dtype, c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads,
           c.head_dim, c.vocab_size, c.weight_bytes / 1e6, (cli_timer_ms() - t0) / 1e3);
    return 0;
}
