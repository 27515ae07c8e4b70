#include "lib/engine/bridge.h"

#include <string.h>

#include "lib/base/error.h"
#include "lib/base/utf8.h"
#include "tokenize/tokenizer.h"

static bool is_space(unsigned char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

/* What a committed id contributes to the text. Special ids contribute nothing: the engine
 * commits no text for them (a model can emit <unk> or BOS mid-text; babyllama does). */
static const uint8_t *surface(const hsd_bridge_side *side, int32_t id, size_t *len) {
    const hsd_tokenizer *tok = side->tok;
    if (side->specials_silent && hsd_tokenizer_is_special(tok, id)) {
        *len = 0;
        return (const uint8_t *)"";
    }
    return hsd_tokenizer_token_bytes(tok, id, len);
}


size_t hsd_bridge_pending_tail(const char *s, size_t n) {
    /* a final sequence that is a valid but incomplete UTF-8 prefix (<= 3 bytes) */
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        unsigned char c = (unsigned char)s[n - k];
        if ((c & 0xC0) == 0x80) continue; /* continuation byte: keep looking for the lead */
        int need = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 1;
        if (need > (int)k && hsd_utf8_valid_prefix(s + n - k, k) == 0) {
            /* lead byte with too few continuations: valid_prefix stops at it */
            return k;
        }
        return 0;
    }
    return 0;
}

/* Encodes text[off..) + extra as a continuation of what precedes `off`. Model output can be
 * any bytes: an incomplete final character is held back until it completes, and invalid
 * sequences inside are encoded as U+FFFD (the drafter cannot spell them anyway). */
static hsd_status encode_window(const hsd_tokenizer *tok, const hsd_buf *text, size_t off,
                                const char *extra, size_t extra_len, hsd_ids *out) {
    out->n = 0;
    hsd_buf raw = {0}, w = {0};
    hsd_status s = HSD_OK;
    /* text->p is NULL while nothing is committed (empty prompt): NULL + 0 is UB */
    if (hsd_buf_append(&raw, text->p ? text->p + off : "", text->n - off) ||
        hsd_buf_append(&raw, extra, extra_len))
        s = hsd_error(HSD_ERR_NOMEM, "out of memory");
    size_t n = raw.n - hsd_bridge_pending_tail(raw.p, raw.n);
    if (!s && hsd_utf8_valid_prefix(raw.p, n) == n) s = hsd_tok_encode_cont(tok, raw.p, n, out);
    else if (!s && hsd_utf8_lossy_append(&w, raw.p, n)) s = hsd_error(HSD_ERR_NOMEM, "oom");
    else if (!s) s = hsd_tok_encode_cont(tok, w.p, w.n, out);
    hsd_buf_free(&raw);
    hsd_buf_free(&w);
    return s;
}


/* For tokenizers whose tokens do not spell the text (normalizers, unknown-token
 * replacement), a cut is proven in text space instead: the window's text up to a word start
 * must re-encode to exactly a prefix of the ids. */
static void advance_by_reencoding(hsd_bridge_side *side, const hsd_buf *text) {
    enum { MARGIN = 48 }; /* bytes kept re-tokenizable behind the end */
    if (text->n < side->seg_off + 2 * MARGIN) return;
    size_t b = text->n - MARGIN;
    while (b > side->seg_off && !is_space((unsigned char)text->p[b])) b--;
    if (b <= side->seg_off) { /* no word start (CJK, long runs): any character boundary */
        b = text->n - MARGIN;
        while (b > side->seg_off && ((unsigned char)text->p[b] & 0xC0) == 0x80) b--;
        if (b <= side->seg_off) return;
    }
    hsd_ids pre = {0};
    if (hsd_tok_encode_cont(side->tok, text->p + side->seg_off, b - side->seg_off, &pre) == HSD_OK &&
        pre.n > 0 && pre.n <= side->ids.n - (size_t)side->seg &&
        !memcmp(pre.p, side->ids.p + side->seg, pre.n * sizeof(int32_t))) {
        side->seg += (int32_t)pre.n;
        side->seg_off = b;
    }
    hsd_ids_free(&pre);
}

void hsd_bridge_advance(hsd_bridge_side *side, const hsd_buf *text) {
    int32_t n = (int32_t)side->ids.n, limit = n - HSD_BRIDGE_LOOKBEHIND;
    size_t off = side->seg_off;
    int32_t best = side->seg, any = side->seg;
    size_t best_off = side->seg_off, any_off = side->seg_off;
    for (int32_t i = side->seg; i < limit; i++) {
        size_t len;
        const uint8_t *b = surface(side, side->ids.p[i], &len);
        if (!b || off + len > text->n || memcmp(text->p + off, b, len)) {
            if (best == side->seg) { /* diverged before any cut: prove one by re-encoding */
                advance_by_reencoding(side, text);
                return;
            }
            break;
        }
        off += len;
        /* windows must start on a character boundary (byte-level tokens can split one) */
        if (off < text->n && ((unsigned char)text->p[off] & 0xC0) == 0x80) continue;
        any = i + 1;
        any_off = off;
        /* a cut is safe-ish at a word start: the next token begins with whitespace or
         * follows whitespace */
        if (i + 1 < n && off < text->n && (is_space((unsigned char)text->p[off]) ||
                                           is_space((unsigned char)text->p[off - 1]))) {
            best = i + 1;
            best_off = off;
        }
    }
    /* text without word starts (CJK, long runs): cut at any token boundary rather than let
     * the window grow; the look-behind tokens absorb boundary effects */
    if (text->n - best_off > 512 && any > best) {
        best = any;
        best_off = any_off;
    }
    side->seg = best;
    side->seg_off = best_off;
}

hsd_status hsd_bridge_resync(hsd_bridge_side *side, const hsd_buf *text, int32_t *first_changed) {
    hsd_ids fresh = {0};
    hsd_status s = encode_window(side->tok, text, side->seg_off, NULL, 0, &fresh);
    if (s) {
        hsd_ids_free(&fresh);
        return s;
    }
    size_t old = side->ids.n - (size_t)side->seg, c = 0;
    while (c < old && c < fresh.n && side->ids.p[side->seg + c] == fresh.p[c]) c++;
    *first_changed = side->seg + (int32_t)c;
    side->ids.n = (size_t)side->seg + c;
    if (hsd_ids_reserve(&side->ids, fresh.n - c)) {
        hsd_ids_free(&fresh);
        return hsd_error(HSD_ERR_NOMEM, "out of memory");
    }
    if (fresh.n > c) /* fresh.p is NULL when the window encodes to nothing */
        memcpy(side->ids.p + side->ids.n, fresh.p + c, (fresh.n - c) * sizeof(int32_t));
    side->ids.n += fresh.n - c;
    hsd_ids_free(&fresh);
    hsd_bridge_advance(side, text);
    return HSD_OK;
}

hsd_status hsd_bridge_candidates(const hsd_bridge_side *side, const hsd_buf *text,
                                 const char *draft, size_t draft_len, hsd_ids *cand,
                                 int32_t max_cand) {
    hsd_ids win = {0};
    cand->n = 0;
    hsd_status s = encode_window(side->tok, text, side->seg_off, draft, draft_len, &win);
    if (s) goto done;
    size_t fixed = side->ids.n - (size_t)side->seg;
    bool reproduces = win.n >= fixed &&
                      (fixed == 0 || !memcmp(win.p, side->ids.p + side->seg, fixed * sizeof(int32_t)));
    if (reproduces) {
        for (size_t i = fixed; i < win.n && (int32_t)cand->n < max_cand; i++)
            if (hsd_ids_push(cand, win.p[i])) goto oom;
    } else {
        /* the committed ids are not the canonical tokenization here (e.g. the target sampled
         * a non-canonical split): continue from exactly the committed text */
        hsd_ids alone = {0};
        hsd_buf empty = {(char *)"", 0, 0};
        s = encode_window(side->tok, &empty, 0, draft, draft_len, &alone);
        for (size_t i = 0; !s && i < alone.n && (int32_t)cand->n < max_cand; i++)
            if (hsd_ids_push(cand, alone.p[i])) {
                hsd_ids_free(&alone);
                goto oom;
            }
        hsd_ids_free(&alone);
    }
done:
    hsd_ids_free(&win);
    return s;
oom:
    hsd_ids_free(&win);
    return hsd_error(HSD_ERR_NOMEM, "out of memory");
}

int hsd_bridge_consistent(const hsd_bridge_side *side, const hsd_buf *text) {
    size_t off = side->seg_off, held = hsd_bridge_pending_tail(text->p, text->n);
    for (size_t i = (size_t)side->seg; i < side->ids.n; i++) {
        size_t len;
        const uint8_t *b = surface(side, side->ids.p[i], &len);
        if (!b || off + len > text->n || memcmp(text->p + off, b, len)) return 0;
        off += len;
    }
    return off == text->n || off + held == text->n;
}
