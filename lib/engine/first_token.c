/* First-token determination by hard cuts (see first_token.h for the argument). */
#include "lib/engine/first_token.h"

#include <stdlib.h>
#include <string.h>

#include "lib/engine/bridge.h"
#include "lib/base/error.h"
#include "lib/base/utf8.h"
#include "tokenize/tokenizer.h"

static const char META[] = "\xe2\x96\x81"; /* U+2581, SentencePiece's space */

/* Bytes of one character (as spm.c splits: by lead byte, clamped to the string). */
static size_t char_len(const char *s, size_t n) {
    size_t l = (size_t)hsd_utf8_len((unsigned char)s[0]);
    return l > n ? n : l;
}

static uint32_t pack(const char *s, size_t l) {
    uint32_t v = 0;
    for (size_t i = 0; i < l; i++) v = v << 8 | (unsigned char)s[i];
    return v;
}

static uint64_t pair_key(uint32_t a, uint32_t b) {
    uint64_t k = (uint64_t)a << 32 | b;
    return k == UINT64_MAX ? UINT64_MAX - 1 : k; /* reserved key: sharing a slot only adds pairs */
}

static int add_pair(hsd_u64map *m, uint32_t a, uint32_t b) {
    static uint32_t meta = 0, space = ' ';
    if (!meta) meta = pack(META, 3);
    if (hsd_u64map_put(m, pair_key(a, b), 1)) return -1;
    /* tokenizers that escape spaces see "▁" where the text has ' ': record both spellings */
    uint32_t a2 = a == meta ? space : a, b2 = b == meta ? space : b;
    if ((a2 != a || b2 != b) &&
        (hsd_u64map_put(m, pair_key(a2, b), 1) || hsd_u64map_put(m, pair_key(a, b2), 1) ||
         hsd_u64map_put(m, pair_key(a2, b2), 1)))
        return -1;
    return 0;
}

static bool is_reachable(const hsd_strmap *reach, const char *s, size_t n) {
    return char_len(s, n) == n || hsd_strmap_get(reach, s, n) >= 0;
}

typedef struct by_len {
    uint32_t len;
    int32_t id;
} by_len;

static int cmp_len(const void *a, const void *b) {
    const by_len *x = a, *y = b;
    return x->len != y->len ? (x->len < y->len ? -1 : 1) : (x->id < y->id ? -1 : x->id > y->id);
}

hsd_status hsd_first_token_init(hsd_first_token *ft, const hsd_tokenizer *tok) {
    if (!ft || !tok) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_first_token_init: NULL argument");
    memset(ft, 0, sizeof *ft);
    ft->tok = tok;
    const int32_t n_ids = hsd_tokenizer_vocab_size(tok);
    for (int32_t id = 0; id < n_ids; id++) {
        if (!hsd_tokenizer_id_to_token(tok, id) || hsd_tokenizer_is_special(tok, id)) continue;
        size_t len = 0;
        hsd_tokenizer_token_bytes(tok, id, &len);
        if (len > ft->max_token_len) ft->max_token_len = len;
    }
    ft->has_rule = hsd_tok_is_bare_spm(tok);
    if (!ft->has_rule) return HSD_OK;
    /* reachable vocabulary strings, shortest first so both halves are decided before */
    by_len *order = malloc((size_t)(n_ids > 0 ? n_ids : 1) * sizeof *order);
    hsd_strmap reach;
    if (!order || hsd_strmap_init(&reach, (size_t)n_ids) ||
        hsd_u64map_init(&ft->pairs, (size_t)n_ids * 4)) {
        free(order);
        hsd_strmap_free(&reach);
        hsd_u64map_free(&ft->pairs);
        return hsd_error(HSD_ERR_NOMEM, "out of memory");
    }
    int32_t n = 0;
    for (int32_t id = 0; id < n_ids; id++) {
        size_t len;
        if (!hsd_tokenizer_id_to_token(tok, id)) continue;
        hsd_tok_str(tok, id, &len);
        order[n++] = (by_len){(uint32_t)len, id};
    }
    qsort(order, (size_t)n, sizeof *order, cmp_len);
    hsd_status st = HSD_OK;
    for (int32_t i = 0; i < n && !st; i++) {
        size_t len;
        const char *s = hsd_tok_str(tok, order[i].id, &len);
        if (len == 0 || char_len(s, len) == len) continue; /* single characters: no pair */
        bool ok = false;
        for (size_t k = char_len(s, len); k < len && !ok; k += char_len(s + k, len - k))
            ok = is_reachable(&reach, s, k) && is_reachable(&reach, s + k, len - k);
        if (!ok) continue; /* no merge can build it (e.g. "<unk>", "<0x41>") */
        if (hsd_strmap_put(&reach, s, len, order[i].id)) st = hsd_error(HSD_ERR_NOMEM, "oom");
        for (size_t k = 0; !st && k < len;) {
            size_t l1 = char_len(s + k, len - k);
            if (k + l1 >= len) break;
            size_t l2 = char_len(s + k + l1, len - k - l1);
            if (add_pair(&ft->pairs, pack(s + k, l1), pack(s + k + l1, l2)))
                st = hsd_error(HSD_ERR_NOMEM, "oom");
            k += l1;
        }
    }
    free(order);
    hsd_strmap_free(&reach);
    if (st) hsd_first_token_free(ft);
    return st;
}

void hsd_first_token_free(hsd_first_token *ft) {
    if (!ft) return;
    hsd_u64map_free(&ft->pairs);
    ft->has_rule = false;
}

size_t hsd_first_token_cut(const hsd_first_token *ft, const char *s, size_t n, size_t *last) {
    size_t first = 0, lst = 0;
    if (ft && ft->has_rule && s) {
        size_t valid = hsd_utf8_valid_prefix(s, n);
        size_t prev_off = 0, prev_len = valid ? (size_t)hsd_utf8_len((unsigned char)s[0]) : 0;
        for (size_t b = prev_len; prev_len && b < valid;) {
            size_t l = (size_t)hsd_utf8_len((unsigned char)s[b]);
            if (b + l > valid) break; /* the next character is not complete yet */
            uint64_t v;
            if (!hsd_u64map_get(&ft->pairs, pair_key(pack(s + prev_off, prev_len), pack(s + b, l)),
                                &v)) {
                if (!first) first = b;
                lst = b;
            }
            prev_off = b;
            prev_len = l;
            b += l;
        }
    }
    if (last) *last = lst;
    return first;
}

hsd_status hsd_first_token_stable(const hsd_first_token *ft, const char *s, size_t n,
                                  hsd_ids *out) {
    size_t last = 0;
    hsd_first_token_cut(ft, s, n, &last);
    if (!last) return HSD_OK;
    return hsd_tok_encode_cont(ft->tok, s, last, out);
}

hsd_status hsd_first_token_now(const hsd_first_token *ft, const char *s, size_t n, int32_t *id) {
    *id = -1;
    n -= hsd_bridge_pending_tail(s, n);
    if (!n) return HSD_OK;
    hsd_ids ids = {0};
    hsd_buf w = {0};
    hsd_status st;
    if (hsd_utf8_valid_prefix(s, n) == n)
        st = hsd_tok_encode_cont(ft->tok, s, n, &ids);
    else if (hsd_utf8_lossy_append(&w, s, n))
        st = hsd_error(HSD_ERR_NOMEM, "out of memory");
    else
        st = hsd_tok_encode_cont(ft->tok, w.p, w.n, &ids);
    if (!st && ids.n) *id = ids.p[0];
    hsd_ids_free(&ids);
    hsd_buf_free(&w);
    return st;
}
