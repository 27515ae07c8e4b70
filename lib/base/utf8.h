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
