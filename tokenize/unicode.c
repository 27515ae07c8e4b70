/* Unicode character classes with the exact definitions HF tokenizers uses (Rust's
 * char::is_whitespace; HF's own tables, generated into the unicode_*.c tables, for the classes
 * whose Unicode version differs from the system libraries'; utf8proc for the rest). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenize/tokenizer.h"
#include "tokenize/unicode_tables.h"

bool hsd_uc_is_whitespace(uint32_t c) {
    /* The White_Space property, as Rust's char::is_whitespace. */
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

bool hsd_uc_is_bert_punct(uint32_t c) {
    return hsd_uc_in(hsd_uc_bert_punct, hsd_uc_n_bert_punct, c);
}

bool hsd_uc_is_numeric(uint32_t c) {
    if (c < 0x80) return c >= '0' && c <= '9';
    return hsd_uc_in(hsd_uc_numeric, hsd_uc_n_numeric, c);
}

bool hsd_uc_is_mark(uint32_t c) {
    return c >= 0x300 && hsd_uc_in(hsd_uc_marks, hsd_uc_n_marks, c);
}

bool hsd_uc_is_bert_mn(uint32_t c) {
    return c >= 0x300 && hsd_uc_in(hsd_uc_bert_mn, hsd_uc_n_bert_mn, c);
}

bool hsd_uc_is_bert_control(uint32_t c) {
    return hsd_uc_in(hsd_uc_bert_control, hsd_uc_n_bert_control, c);
}

/* Lowercase lookup: per 256-code-point block, 0 (no mapping in the block) or 1 + the index
 * of a block of 256 deltas (cp -> cp + delta), built once from hsd_uc_lower_map: a binary
 * search over its 1500 entries per character made Lowercase 25% slower than utf8proc. */
#define LOWER_LONG INT32_MIN /* delta marking a multi-code-point lowercase */
static uint16_t lower_blk[0x110000 >> 8];
static int32_t (*lower_delta)[256];
static pthread_once_t lower_once = PTHREAD_ONCE_INIT;

static void lower_build(void) {
    size_t nb = 0;
    for (size_t i = 0; i < hsd_uc_n_lower_map; i++) {
        uint32_t b = hsd_uc_lower_map[i].cp >> 8;
        if (!lower_blk[b]) lower_blk[b] = (uint16_t)++nb;
    }
    for (size_t i = 0; i < hsd_uc_n_lower_long; i++) {
        uint32_t b = hsd_uc_lower_long[i].cp >> 8;
        if (!lower_blk[b]) lower_blk[b] = (uint16_t)++nb;
    }
    lower_delta = calloc(nb ? nb : 1, sizeof *lower_delta);
    if (!lower_delta) { /* hsd_uc_lower falls back to the binary search */
        memset(lower_blk, 0, sizeof lower_blk);
        return;
    }
    for (size_t i = 0; i < hsd_uc_n_lower_map; i++) {
        uint32_t c = hsd_uc_lower_map[i].cp;
        lower_delta[lower_blk[c >> 8] - 1][c & 255] = (int32_t)hsd_uc_lower_map[i].to - (int32_t)c;
    }
    for (size_t i = 0; i < hsd_uc_n_lower_long; i++) {
        uint32_t c = hsd_uc_lower_long[i].cp;
        lower_delta[lower_blk[c >> 8] - 1][c & 255] = LOWER_LONG;
    }
}

/* Rust char::to_lowercase; returns the number of code points written to out[0..3). */
int hsd_uc_lower(uint32_t c, uint32_t out[3]) {
    pthread_once(&lower_once, lower_build);
    if (lower_delta && c < 0x110000) {
        uint16_t b = lower_blk[c >> 8];
        int32_t d = b ? lower_delta[b - 1][c & 255] : 0;
        if (d != LOWER_LONG) {
            out[0] = (uint32_t)((int32_t)c + d);
            return 1;
        }
    } else {
        size_t lo = 0, hi = hsd_uc_n_lower_map;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (c < hsd_uc_lower_map[mid].cp)
                hi = mid;
            else if (c > hsd_uc_lower_map[mid].cp)
                lo = mid + 1;
            else {
                out[0] = hsd_uc_lower_map[mid].to;
                return 1;
            }
        }
    }
    for (size_t i = 0; i < hsd_uc_n_lower_long; i++)
        if (hsd_uc_lower_long[i].cp == c) {
            for (uint32_t k = 0; k < hsd_uc_lower_long[i].n; k++)
                out[k] = hsd_uc_lower_long[i].to[k];
            return (int)hsd_uc_lower_long[i].n;
        }
    out[0] = c;
    return 1;
}

bool hsd_uc_is_alnum_word(uint32_t c) {
    if (c < 0x80)
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               c == '_';
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
    case UTF8PROC_CATEGORY_PC:
        return true;
    default:
        return false;
    }
}

/* UnicodeScripts: the script class of a code point (0: "Any", which never splits). */
int hsd_uc_script(uint32_t c) {
    size_t lo = 0, hi = hsd_uc_n_scripts;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c < hsd_uc_scripts[mid].lo)
            hi = mid;
        else if (c > hsd_uc_scripts[mid].hi)
            lo = mid + 1;
        else
            return hsd_uc_scripts[mid].gc;
    }
    return 0;
}
