/* Growable byte and id buffers used across the library. Growth failures are reported by
 * return value (0 = ok, -1 = out of memory); callers turn them into HSD_ERR_NOMEM. */
#ifndef HSD_LIB_BUF_H
#define HSD_LIB_BUF_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct hsd_buf {
    char *p;
    size_t n, cap;
} hsd_buf;

typedef struct hsd_ids {
    int32_t *p;
    size_t n, cap;
} hsd_ids;

static inline int hsd_buf_reserve(hsd_buf *b, size_t extra) {
    if (b->n + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + extra + 1) cap *= 2;
    char *p = (char *)realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}
/* Appends bytes and keeps the buffer NUL-terminated. */
static inline int hsd_buf_append(hsd_buf *b, const void *s, size_t n) {
    if (hsd_buf_reserve(b, n)) return -1;
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}
static inline int hsd_buf_push(hsd_buf *b, char c) { return hsd_buf_append(b, &c, 1); }
static inline void hsd_buf_free(hsd_buf *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

static inline int hsd_ids_reserve(hsd_ids *v, size_t extra) {
    if (v->n + extra <= v->cap) return 0;
    size_t cap = v->cap ? v->cap : 64;
    while (cap < v->n + extra) cap *= 2;
    int32_t *p = (int32_t *)realloc(v->p, cap * sizeof *p);
    if (!p) return -1;
    v->p = p;
    v->cap = cap;
    return 0;
}
static inline int hsd_ids_push(hsd_ids *v, int32_t id) {
    if (hsd_ids_reserve(v, 1)) return -1;
    v->p[v->n++] = id;
    return 0;
}
static inline void hsd_ids_free(hsd_ids *v) {
    free(v->p);
    v->p = NULL;
    v->n = v->cap = 0;
}

#endif
