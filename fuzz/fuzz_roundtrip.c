/* libFuzzer: fuzzed text through real tokenizers. The first input byte picks the tokenizer,
 * the rest is the text. Oracles:
 *   - valid UTF-8 encodes (HSD_OK) and decodes, and the decoded text is valid UTF-8;
 *   - invalid UTF-8 is refused with HSD_ERR_INVALID_UTF8, never encoded;
 *   - GPT-2 (byte-level BPE, no normalizer) gives back exactly its input: it is injective.
 * Tokenizers come from $HSD_SHARED/tokenizers (default ../shared relative to the source). */
#include <stdbool.h>
#include <string.h>

#include "fuzz/fuzz_util.h"

static const char *names[] = {"gpt2", "qwen3", "llama2", "claude", "synthetic_wordpiece",
                              "synthetic_unigram", "gemma3", "deepseek_v3"};
#define N_TOK (sizeof names / sizeof names[0])
static hsd_tokenizer *toks[N_TOK];

/* Strict UTF-8 validation, written here so the oracle does not trust the library's own. */
static bool valid_utf8(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t l;
        uint32_t cp, min;
        if (c < 0x80) { i++; continue; }
        if ((c & 0xE0) == 0xC0) { l = 2; cp = c & 0x1F; min = 0x80; }
        else if ((c & 0xF0) == 0xE0) { l = 3; cp = c & 0x0F; min = 0x800; }
        else if ((c & 0xF8) == 0xF0) { l = 4; cp = c & 0x07; min = 0x10000; }
        else return false;
        if (i + l > n) return false;
        for (size_t k = 1; k < l; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += l;
    }
    return true;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *shared = getenv("HSD_SHARED");
    if (!shared || !*shared) shared = HSD_FUZZ_SHARED;
    for (size_t i = 0; i < N_TOK; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/tokenizers/%s/tokenizer.json", shared, names[i]);
        if (hsd_tokenizer_load_file(path, &toks[i]) != HSD_OK) {
            fprintf(stderr, "fuzz_roundtrip: %s\n", hsd_last_error());
            abort();
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t which = data[0] % N_TOK;
    const hsd_tokenizer *t = toks[which];
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    int32_t *ids = NULL;
    size_t nid = 0;
    hsd_status st = hsd_tokenizer_encode_alloc(t, text, n, false, &ids, &nid);
    if (!valid_utf8((const unsigned char *)text, n)) {
        if (st != HSD_ERR_INVALID_UTF8) abort(); /* invalid input must be refused */
        hsd_free(ids);
        return 0;
    }
    if (st != HSD_OK) abort();
    char *dec = NULL;
    size_t dl = 0;
    if (hsd_tokenizer_decode_alloc(t, ids, nid, false, &dec, &dl) != HSD_OK) abort();
    if (!valid_utf8((const unsigned char *)dec, dl)) abort();
    if (which == 0 && (dl != n || memcmp(dec, text, n) != 0)) abort(); /* gpt2 is injective */
    hsd_free(dec);
    hsd_free(ids);
    /* with special tokens added and skipped the output must still be valid UTF-8 */
    if (hsd_tokenizer_encode_alloc(t, text, n, true, &ids, &nid) != HSD_OK) abort();
    if (hsd_tokenizer_decode_alloc(t, ids, nid, true, &dec, &dl) != HSD_OK) abort();
    if (!valid_utf8((const unsigned char *)dec, dl)) abort();
    hsd_free(dec);
    hsd_free(ids);
    return 0;
}
