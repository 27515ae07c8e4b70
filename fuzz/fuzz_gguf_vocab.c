/* libFuzzer: GGUF tokenizer.ggml.* metadata loading from arbitrary bytes; a loaded tokenizer
 * must encode/decode, and writing it back as a GGUF vocabulary (models/gguf_vocab.c) must
 * either work or refuse cleanly. */
#include "fuzz/fuzz_util.h"
#include "models/gguf_vocab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hsd_tokenizer *t = NULL;
    if (hsd_tokenizer_load_memory(data, size, HSD_TOKENIZER_GGUF, "fuzz", &t) == HSD_OK) {
        hsd_fuzz_exercise(t);
        hsd_gguf_vocab v;
        if (hsd_gguf_vocab_from_tokenizer(t, hsd_tokenizer_vocab_size(t) + 1, 0, &v) == HSD_OK)
            hsd_gguf_vocab_free(&v);
        hsd_tokenizer_free(t);
    }
    return 0;
}
