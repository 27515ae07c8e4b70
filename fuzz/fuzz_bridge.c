/* libFuzzer: the string bridge between two real tokenizers driven by arbitrary bytes.
 * Byte 0 picks the (target, drafter) pair; the rest is a script of rounds, each
 *   [len][draft bytes...][keep][n_own][own ids (2 bytes each)...]
 * The draft bytes (any bytes: drafters emit byte tokens) become target candidates, the
 * "target" commits `keep` of them plus n_own arbitrary target ids, then the drafter is
 * realigned. Oracles: no crash/UB; the committed target ids spell the committed text; the
 * re-tokenized windows stay bounded; realignment never touches the frozen prompt ids. */
#include <stdbool.h>
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "lib/bridge.h"
#include "tokenize/tokenizer.h"

static const char *bridge_names[] = {"gpt2", "qwen3", "llama2", "claude", "gemma3", "synthetic_unigram"};
#define BRIDGE_N_TOK (sizeof bridge_names / sizeof bridge_names[0])
static hsd_tokenizer *bridge_toks[BRIDGE_N_TOK];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *shared = getenv("HSD_SHARED");
    if (!shared || !*shared) shared = HSD_FUZZ_SHARED;
    for (size_t i = 0; i < BRIDGE_N_TOK; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/tokenizers/%s/tokenizer.json", shared, bridge_names[i]);
        if (hsd_tokenizer_load_file(path, &bridge_toks[i]) != HSD_OK) {
            fprintf(stderr, "fuzz_bridge: %s\n", hsd_last_error());
            abort();
        }
    }
    return 0;
}

static void bridge_commit(hsd_bridge_side *T, hsd_buf *text, int32_t id) {
    if (hsd_ids_push(&T->ids, id)) abort();
    size_t len;
    const uint8_t *b = hsd_tokenizer_token_bytes(T->tok, id, &len);
    if (!b) abort();
    /* special ids commit no text, as in the engine */
    if (!hsd_tokenizer_is_special(T->tok, id) && hsd_buf_append(text, b, len)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    const hsd_tokenizer *tt = bridge_toks[data[0] % BRIDGE_N_TOK], *dt = bridge_toks[(data[0] / BRIDGE_N_TOK) % BRIDGE_N_TOK];
    hsd_bridge_side T = {tt, {0}, 0, 0, true}, D = {dt, {0}, 0, 0, false};
    hsd_buf text = {0};
    hsd_ids cand = {0};
    if (hsd_buf_append(&text, "", 0)) abort();
    /* prompt: the word "Hello" as each side encodes it */
    int32_t *ids;
    size_t n;
    if (hsd_tokenizer_encode_alloc(tt, "Hello", 5, false, &ids, &n)) abort();
    for (size_t i = 0; i < n; i++) bridge_commit(&T, &text, ids[i]);
    hsd_free(ids);
    if (hsd_tokenizer_encode_alloc(dt, "Hello", 5, false, &ids, &n)) abort();
    for (size_t i = 0; i < n; i++)
        if (hsd_ids_push(&D.ids, ids[i])) abort();
    hsd_free(ids);
    T.seg = (int32_t)T.ids.n;
    D.seg = (int32_t)D.ids.n;
    T.seg_off = D.seg_off = text.n;
    int32_t frozen = D.seg, vt = hsd_tokenizer_vocab_size(tt);
    size_t p = 1;
    while (p < size) {
        size_t len = data[p++] % 48;
        if (len > size - p) len = size - p;
        const char *draft = (const char *)data + p;
        p += len;
        if (hsd_bridge_candidates(&T, &text, draft, len, &cand, 64) != HSD_OK) abort();
        size_t keep = p < size ? data[p++] : 0;
        for (size_t i = 0; i < cand.n && i < keep; i++) bridge_commit(&T, &text, cand.p[i]);
        size_t own = p < size ? data[p++] % 4 : 0;
        for (size_t i = 0; i < own && p + 1 < size; i++, p += 2) {
            int32_t id = (int32_t)((data[p] << 8 | data[p + 1]) % (uint32_t)vt);
            if (hsd_tokenizer_id_to_token(tt, id) && !hsd_tokenizer_is_special(tt, id))
                bridge_commit(&T, &text, id);
        }
        int32_t first;
        if (hsd_bridge_resync(&D, &text, &first) != HSD_OK) abort();
        hsd_bridge_advance(&T, &text);
        if (first < frozen) abort();                     /* prompt ids are never re-tokenized */
        if (!hsd_bridge_consistent(&T, &text)) abort();  /* nothing lost or duplicated */
        if (text.n - T.seg_off > 4096 || text.n - D.seg_off > 4096) abort(); /* bounded */
    }
    hsd_ids_free(&T.ids), hsd_ids_free(&D.ids), hsd_ids_free(&cand);
    hsd_buf_free(&text);
    return 0;
}
