/* hsd synth: writes a random-weight model of a real shape (for loader tests and speed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/cli_util.h"
#include "hsd.h"
#include "models/synth.h"

static void usage(void) {
    fprintf(stderr, "usage: hsd synth --shape NAME --format safetensors|gguf -o DIR [--dtype f32|f16|bf16|q8_0] [--seed S] [--tokenizer FILE]\n"
                    "  shapes: %s\n  gguf writes DIR/model.gguf (with the tokenizer FILE in its metadata, else a placeholder vocabulary); safetensors writes DIR/config.json + DIR/model.safetensors\n",
            hsd_synth_shape_list());
}

int hsd_cmd_synth(int argc, char **argv) {
    const char *shape = NULL, *format = NULL, *dir = NULL, *dtype = "f32", *tokenizer = NULL;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(); return 0; }
        if (!v) { usage(); return 2; }
        i++;
        if (!strcmp(a, "--shape")) shape = v;
        else if (!strcmp(a, "--format")) format = v;
        else if (!strcmp(a, "-o")) dir = v;
        else if (!strcmp(a, "--dtype")) dtype = v;
        else if (!strcmp(a, "--tokenizer")) tokenizer = v;
        else if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 10);
        else { fprintf(stderr, "hsd synth: unknown option %s\n", a); usage(); return 2; }
    }
    if (!shape || !format || !dir || (strcmp(format, "gguf") && strcmp(format, "safetensors"))) {
        usage();
        return 2;
    }
    hsd_dtype dt;
    if (!strcmp(dtype, "f32")) dt = HSD_DT_F32;
    else if (!strcmp(dtype, "f16")) dt = HSD_DT_F16;
    else if (!strcmp(dtype, "bf16")) dt = HSD_DT_BF16;
    else if (!strcmp(dtype, "q8_0")) dt = HSD_DT_Q8_0;
    else { fprintf(stderr, "hsd synth: unknown dtype %s\n", dtype); return 2; }
    double t0 = hsd_cli_now_ms();
    hsd_synth_model *m;
    hsd_status s = hsd_synth_create(shape, dt, seed, &m);
    if (s != HSD_OK) { fprintf(stderr, "hsd synth: %s\n", hsd_last_error()); return 1; }
    double t1 = hsd_cli_now_ms();
    char path[4096];
    if (!strcmp(format, "gguf")) {
        mkdir(dir, 0755);
        snprintf(path, sizeof path, "%s/model.gguf", dir);
        s = hsd_synth_write_gguf_tok(m, path, tokenizer);
    } else {
        snprintf(path, sizeof path, "%s", dir);
        s = hsd_synth_write_safetensors(m, dir);
    }
    size_t bytes = 0;
    for (int32_t i = 0; i < m->n; i++) bytes += m->t[i].nbytes;
    hsd_synth_free(m);
    if (s != HSD_OK) { fprintf(stderr, "hsd synth: %s\n", hsd_last_error()); return 1; }
    printf("wrote %s: shape %s, %s, %.1f MB of weights (generated in %.1f s, written in %.1f s)\n", path, shape,
           dtype, bytes / 1e6, (t1 - t0) / 1e3, (hsd_cli_now_ms() - t1) / 1e3);
    return 0;
}
