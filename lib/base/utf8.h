/* UTF-8 helpers shared by tokenizers and the engine. */
#ifndef HSD_LIB_UTF8_H
#define HSD_LIB_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/buf.h"

/* Length of the (valid) UTF-8 sequence starting with byte c: 1..4. */
static inline int hsd_utf8_len(unsigned char c) {
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}
/* Length of the valid sequence at s (1..4; len >= 1 bytes available), or -k where k >= 1 is
 * the length of the maximal invalid prefix to replace by one U+FFFD (Unicode "maximal
 * subpart" practice). */
static inline int hsd_utf8_seq_check(const unsigned char *s, size_t len) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    int need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c == 0xE0) need = 2, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC) need = 2;
    else if (c == 0xED) need = 2, hi = 0x9F;
    else if (c >= 0xEE && c <= 0xEF) need = 2;
    else if (c == 0xF0) need = 3, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) need = 3;
    else if (c == 0xF4) need = 3, hi = 0x8F;
    else return -1;
    for (int i = 1; i <= need; i++) {
        if ((size_t)i >= len) return -i;
        unsigned d = s[i];
        if (i == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF)) return -i;
    }
    return need + 1;
}

/* Decodes one code point from valid UTF-8; *n receives its byte length. */
static inline uint32_t hsd_utf8_decode(const unsigned char *s, int *n) {
    unsigned c = s[0];
    if (c < 0x80) {
        *n = 1;
        return c;
    }
    if (c < 0xE0) {
        *n = 2;
        return ((c & 0x1Fu) << 6) | (s[1] & 0x3Fu);
    }
    if (c < 0xF0) {
        *n = 3;
        return ((c & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
    }
    *n = 4;
    return ((c & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) | (s[3] & 0x3Fu);
}
/* Writes the UTF-8 encoding of cp into out (>= 4 bytes); returns its length. */
int hsd_utf8_encode(uint32_t cp, char *out);
int hsd_buf_push_cp(hsd_buf *b, uint32_t cp);

/* Length of the longest valid UTF-8 prefix of s (== len when all valid). */
size_t hsd_utf8_valid_prefix(const char *s, size_t len);
/* Appends s to out, replacing each maximal invalid subsequence by U+FFFD exactly as Rust's
 * String::from_utf8_lossy does (what HF decoders produce). Returns 0 or -1 (no memory). */
int hsd_utf8_lossy_append(hsd_buf *out, const char *s, size_t len);

#endif
