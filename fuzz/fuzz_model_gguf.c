/* libFuzzer: GGUF model file from arbitrary bytes (loaders take paths, so the input is written to a
 * private temporary file). A model that loads must run one forward step. */
#include "fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = hsd_fuzz_write_tmp(data, size, hsd_fuzz_tmpdir(), "model.gguf");
    hsd_model_params p = hsd_model_default_params();
    p.n_ctx = 8;
    p.n_threads = 1;
    hsd_model *m = NULL;
    if (hsd_model_load(path, &p, &m) == HSD_OK) {
        int32_t vs = hsd_model_vocab_size(m);
        if (vs > 0 && vs <= (1 << 20)) {
            float *logits = malloc((size_t)vs * sizeof *logits);
            int32_t tok = 0;
            if (logits) (void)hsd_model_forward(m, &tok, 1, NULL, NULL, 1, logits);
            free(logits);
        }
        hsd_model_free(m);
    }
    return 0;
}
