/* libFuzzer: safetensors checkpoint from arbitrary bytes, next to a fixed valid config.json
 * (the "tiny" synthetic shape, written at start-up by models/synth), so the fuzzer spends its time on the
 * safetensors header and tensor table rather than on config parsing. */
#include "hsd_tools.h"
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "models/synth.h"

static char dir[512];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    snprintf(dir, sizeof dir, "%s", hsd_fuzz_tmpdir());
    hsd_synth_model *sm = NULL;
    if (hsd_synth_create("tiny", HSD_DT_F32, 1, &sm) != HSD_OK ||
        hsd_synth_write_safetensors(sm, dir) != HSD_OK) {
        fprintf(stderr, "fuzz_model_safetensors: %s\n", hsd_last_error());
        abort();
    }
    hsd_synth_free(sm);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hsd_fuzz_write_tmp(data, size, dir, "model.safetensors");
    hsd_model_params p = hsd_model_default_params();
    p.n_ctx = 8;
    p.n_threads = 1;
    hsd_model *m = NULL;
    if (hsd_model_load(dir, &p, &m) == HSD_OK) {
        float logits[256];
        int32_t tok = 0;
        if (hsd_model_vocab_size(m) == 256) (void)hsd_model_forward(m, &tok, 1, NULL, NULL, 1, logits);
        hsd_model_free(m);
    }
    return 0;
}
