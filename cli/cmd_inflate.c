/* hsd inflate: a trained Llama model widened/deepened to a real shape without changing its
 * function (models/inflate.c), written as GGUF. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_util.h"
#include "hsd.h"
#include "models/inflate.h"

int hsd_cmd_inflate(int argc, char **argv);

static void usage(void) {
    fprintf(stderr,
            "usage: hsd inflate --model IN [--tokenizer T] --shape NAME -o OUT.gguf\n"
            "                   [--dtype f32|f16|bf16|q8_0] [--layers N]\n"
            "  IN: llama2.c .bin, GGUF or safetensors (llama or qwen2); shapes: %s\n"
            "  the output computes IN's logits at the cost of the shape; vocabulary and context\n"
            "  stay IN's; T (GGUF, llama2.c tokenizer.bin, tokenizer.json) goes into the GGUF's\n"
            "  metadata (default: IN's own when IN is a GGUF, else a placeholder vocabulary)\n",
            hsd_synth_shape_list());
}

int hsd_cmd_inflate(int argc, char **argv) {
    const char *in = NULL, *tok = NULL, *shape = NULL, *out = NULL, *dtype = "f32";
    int32_t layers = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return 0;
        }
        if (!v) {
            fprintf(stderr, "hsd inflate: %s needs a value\n", a);
            usage();
            return 2;
        }
        i++;
        if (!strcmp(a, "--model") || !strcmp(a, "-m"))
            in = v;
        else if (!strcmp(a, "--tokenizer") || !strcmp(a, "-t"))
            tok = v;
        else if (!strcmp(a, "--shape"))
            shape = v;
        else if (!strcmp(a, "-o"))
            out = v;
        else if (!strcmp(a, "--dtype"))
            dtype = v;
        else if (!strcmp(a, "--layers")) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 4096) {
                fprintf(stderr, "hsd inflate: --layers %s: expected an integer in 1..4096\n", v);
                return 2;
            }
            layers = (int32_t)n;
        } else {
            fprintf(stderr, "hsd inflate: unknown option %s\n", a);
            usage();
            return 2;
        }
    }
    if (!in || !shape || !out) {
        fprintf(stderr, "hsd inflate: --model, --shape and -o are required\n");
        usage();
        return 2;
    }
    hsd_dtype dt;
    if (!strcmp(dtype, "f32"))
        dt = HSD_DT_F32;
    else if (!strcmp(dtype, "f16"))
        dt = HSD_DT_F16;
    else if (!strcmp(dtype, "bf16"))
        dt = HSD_DT_BF16;
    else if (!strcmp(dtype, "q8_0"))
        dt = HSD_DT_Q8_0;
    else {
        fprintf(stderr, "hsd inflate: unknown dtype %s (f32, f16, bf16, q8_0)\n", dtype);
        return 2;
    }
    double t0 = hsd_cli_now_ms();
    hsd_tf_config c;
    size_t bytes = 0;
    if (hsd_inflate_file(in, tok, shape, layers, dt, out, &c, &bytes) != HSD_OK) {
        fprintf(stderr, "hsd %s\n", hsd_last_error());
        return 1;
    }
    printf("wrote %s: %s inflated to shape %s (%s, dim %d, FFN %d, %d layers, %d heads / %d KV "
           "heads of %d, vocab %d), %.1f MB of weights, in %.1f s\n",
           out, in, shape, dtype, c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads,
           c.head_dim, c.vocab_size, bytes / 1e6, (hsd_cli_now_ms() - t0) / 1e3);
    return 0;
}
