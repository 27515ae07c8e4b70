#include "lib/base/utf8.h"

int hsd_utf8_encode(uint32_t cp, char *o) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

int hsd_buf_push_cp(hsd_buf *b, uint32_t cp) {
    char t[4];
    return hsd_buf_append(b, t, (size_t)hsd_utf8_encode(cp, t));
}

/* Length of the valid sequence at s (1..4), or -k where k >= 1 is the length of the maximal
 * invalid prefix to replace by one U+FFFD (Unicode "maximal subpart" practice). */
static int seq_check(const unsigned char *s, size_t len) {
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

size_t hsd_utf8_valid_prefix(const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        int k = seq_check(u + i, len - i);
        if (k < 0) return i;
        i += (size_t)k;
    }
    return len;
}

int hsd_utf8_lossy_append(hsd_buf *out, const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0;
    while (i < len) {
        int k = u[i] < 0x80 ? 1 : seq_check(u + i, len - i);
        if (k > 0) {
            i += (size_t)k;
            continue;
        }
        if (hsd_buf_append(out, s + run, i - run)) return -1;
        if (hsd_buf_append(out, "\xEF\xBF\xBD", 3)) return -1;
        i += (size_t)(-k);
        run = i;
    }
    return hsd_buf_append(out, s + run, len - run);
}
