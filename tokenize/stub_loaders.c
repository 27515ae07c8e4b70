/* Temporary: replaced by llama2c.c and gguf_vocab.c (being merged). */
#include "lib/error.h"
#include "tokenize/tokenizer.h"

hsd_status hsd_tok_load_llama2c(const char *data, size_t len, const char *name,
                                hsd_tokenizer **out) {
    (void)data, (void)len, (void)out;
    return hsd_error(HSD_ERR_UNSUPPORTED, "%s: llama2.c tokenizer.bin not supported yet", name);
}
hsd_status hsd_tok_load_gguf(const char *data, size_t len, const char *name,
                             hsd_tokenizer **out) {
    (void)data, (void)len, (void)out;
    return hsd_error(HSD_ERR_UNSUPPORTED, "%s: GGUF not supported yet", name);
}
