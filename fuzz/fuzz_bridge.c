/* libFuzzer: the string bridge (lib/engine/bridge.h) driven by fuzzed text. Byte 0 picks the
 * (target, drafter) pair from a few real tokenizers; the rest is split at 0xFF bytes (never
 * valid UTF-8) into chunks. The first chunk is the prompt; each further chunk is a draft: the
 * target side turns it into candidates, commits a prefix of them (its length taken from the
 * chunk's first byte) plus whatever completes a pending UTF-8 character, and the drafter side
 * re-synchronizes. Oracles after every round (as in tests/test_bridge_fuzz.c):
 *   - the target's segment ids spell the committed text (hsd_bridge_consistent);
 *   - for drafters without a normalizer, every drafter id after the prompt spells the text;
 *   - the first changed drafter index never precedes the prompt.
 * Invalid-UTF-8 chunks are skipped: the engine only drafts whole tokens' bytes. */
#include <stdbool.h>
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "lib/engine/bridge.h"
#include "tokenize/tokenizer.h"

static const char *names[] = {"qwen3", "llama2", "gpt2", "gemma3"};
#define N_TOK (sizeof names / sizeof names[0])
static hsd_tokenizer *toks[N_TOK];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *shared = getenv("HSD_SHARED");
    if (!shared || !*shared) shared = HSD_FUZZ_SHARED;
    for (size_t i = 0; i < N_TOK; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/tokenizers/%s/tokenizer.json", shared, names[i]);
        if (hsd_tokenizer_load_file(path, &toks[i]) != HSD_OK) {
            fprintf(stderr, "fuzz_bridge: %s\n", hsd_last_error());
            abort();
        }
    }
    return 0;
}

static bool valid(const char *s, size_t n) {
    int32_t *ids = NULL;
    size_t k;
    hsd_status st = hsd_tokenizer_encode_alloc(toks[0], s, n, false, &ids, &k);
    hsd_free(ids);
    return st == HSD_OK;
}

static void commit(hsd_bridge_side *T, hsd_buf *text, int32_t id) {
    size_t len;
    const uint8_t *b = hsd_tokenizer_token_bytes(T->tok, id, &len);
    if (!b || hsd_ids_push(&T->ids, id)) abort();
    /* special ids commit no text, as in the engine (T.specials_silent) */
    if (!hsd_tokenizer_is_special(T->tok, id) && hsd_buf_append(text, b, len)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    const hsd_tokenizer *tt = toks[data[0] % N_TOK], *dt = toks[(data[0] / N_TOK) % N_TOK];
    if (tt == dt) dt = toks[(data[0] % N_TOK + 1) % N_TOK];
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    hsd_buf text = {0};
    hsd_bridge_side T = {tt, {0}, 0, 0, true}, D = {dt, {0}, 0, 0, false};
    hsd_ids cand = {0};
    bool d_plain = dt->n_norm == 0;
    int32_t d_prompt = 0;
    size_t prompt_text = 0;
    for (int chunk = 0; p < end && chunk < 64; chunk++) {
        const char *q = memchr(p, 0xFF, (size_t)(end - p));
        size_t n = (size_t)((q ? q : end) - p);
        const char *s = p;
        p = q ? q + 1 : end;
        if (!valid(s, n)) continue;
        if (chunk == 0) { /* prompt: each side encodes it whole */
            int32_t *ids = NULL;
            size_t k = 0;
            if (hsd_tokenizer_encode_alloc(tt, s, n, false, &ids, &k)) abort();
            for (size_t i = 0; i < k; i++) commit(&T, &text, ids[i]);
            hsd_free(ids);
            if (hsd_tokenizer_encode_alloc(dt, s, n, false, &ids, &k)) abort();
            for (size_t i = 0; i < k; i++)
                if (hsd_ids_push(&D.ids, ids[i])) abort();
            hsd_free(ids);
            T.seg = (int32_t)T.ids.n;
            D.seg = (int32_t)D.ids.n;
            T.seg_off = D.seg_off = prompt_text = text.n;
            d_prompt = D.seg;
            continue;
        }
        if (!n) continue;
        if (hsd_bridge_candidates(&T, &text, s, n, &cand, 64)) abort();
        size_t keep = cand.n ? (unsigned char)s[0] % (cand.n + 1) : 0;
        for (size_t i = 0; i < keep; i++) commit(&T, &text, cand.p[i]);
        for (size_t i = keep; i < cand.n && hsd_bridge_pending_tail(text.p, text.n); i++)
            commit(&T, &text, cand.p[i]);
        if (hsd_bridge_pending_tail(text.p, text.n)) break; /* a model would complete it */
        int32_t first = 0;
        if (hsd_bridge_resync(&D, &text, &first)) abort();
        hsd_bridge_advance(&T, &text);
        if (first < d_prompt) abort();
        if (!hsd_bridge_consistent(&T, &text)) abort();
        if (d_plain) {
            hsd_bridge_side whole = {dt, D.ids, d_prompt, prompt_text, false};
            if (!hsd_bridge_consistent(&whole, &text)) abort();
        }
    }
    hsd_ids_free(&cand);
    hsd_ids_free(&T.ids);
    hsd_ids_free(&D.ids);
    hsd_buf_free(&text);
    return 0;
}
