/* libFuzzer: GGUF tokenizer.ggml.* metadata loading from arbitrary bytes; a loaded tokenizer must encode/decode. */
#include "fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hsd_tokenizer *t = NULL;
    if (hsd_tokenizer_load_memory(data, size, HSD_TOKENIZER_GGUF, "fuzz", &t) == HSD_OK) {
        hsd_fuzz_exercise(t);
        hsd_tokenizer_free(t);
    }
    return 0;
}
