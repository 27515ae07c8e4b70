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

size_t hsd_utf8_valid_prefix(const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        int k = hsd_utf8_seq_check(u + i, len - i);
        if (k < 0) return i;
        i += (size_t)k;
    }
    return len;
}

int hsd_utf8_lossy_append(hsd_buf *out, const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0;
    while (i < len) {
        int k = u[i] < 0x80 ? 1 : hsd_utf8_seq_check(u + i, len - i);
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
