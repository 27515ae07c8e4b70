/* TEMPORARY — delete at merge. The tokenizer library is written on another branch; these
 * stand-ins let the `models` branch link (hsd generate) until then. */
#include "hsd.h"
#include "lib/error.h"

static hsd_status missing(void) {
    return hsd_error(HSD_ERR_UNSUPPORTED, "tokenizers are not built into this branch (stub)");
}
hsd_status hsd_tokenizer_load_file(const char *path, hsd_tokenizer **out) {
    (void)path;
    *out = NULL;
    return missing();
}
hsd_status hsd_tokenizer_load_memory(const void *data, size_t size, hsd_tokenizer_format format,
                                     const char *name, hsd_tokenizer **out) {
    (void)data, (void)size, (void)format, (void)name;
    *out = NULL;
    return missing();
}
void hsd_tokenizer_free(hsd_tokenizer *tok) { (void)tok; }
hsd_status hsd_tokenizer_encode(const hsd_tokenizer *tok, const char *text, size_t len,
                                bool add_special, int32_t *ids, size_t cap, size_t *n_ids) {
    (void)tok, (void)text, (void)len, (void)add_special, (void)ids, (void)cap;
    *n_ids = 0;
    return missing();
}
hsd_status hsd_tokenizer_encode_alloc(const hsd_tokenizer *tok, const char *text, size_t len,
                                      bool add_special, int32_t **ids, size_t *n_ids) {
    (void)tok, (void)text, (void)len, (void)add_special;
    *ids = NULL;
    *n_ids = 0;
    return missing();
}
hsd_status hsd_tokenizer_decode_alloc(const hsd_tokenizer *tok, const int32_t *ids, size_t n_ids,
                                      bool skip_special, char **text, size_t *len) {
    (void)tok, (void)ids, (void)n_ids, (void)skip_special, (void)len;
    *text = NULL;
    return missing();
}
int32_t hsd_tokenizer_vocab_size(const hsd_tokenizer *tok) { (void)tok; return 0; }
const char *hsd_tokenizer_id_to_token(const hsd_tokenizer *tok, int32_t id) { (void)tok, (void)id; return NULL; }
int32_t hsd_tokenizer_token_to_id(const hsd_tokenizer *tok, const char *token) { (void)tok, (void)token; return -1; }
const uint8_t *hsd_tokenizer_token_bytes(const hsd_tokenizer *tok, int32_t id, size_t *len) {
    (void)tok, (void)id;
    if (len) *len = 0;
    return NULL;
}
bool hsd_tokenizer_is_special(const hsd_tokenizer *tok, int32_t id) { (void)tok, (void)id; return false; }
int32_t hsd_tokenizer_bos_id(const hsd_tokenizer *tok) { (void)tok; return -1; }
int32_t hsd_tokenizer_eos_id(const hsd_tokenizer *tok) { (void)tok; return -1; }
int32_t hsd_tokenizer_unk_id(const hsd_tokenizer *tok) { (void)tok; return -1; }
