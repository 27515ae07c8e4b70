#include "lib/base/map.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static size_t pow2_at_least(size_t n) {
    size_t c = 16;
    while (c < n) c <<= 1;
    return c;
}

static uint64_t str_hash(const void *key, size_t len) {
    uint64_t h = XXH3_64bits(key, len);
    return h ? h : 1; /* 0 marks an empty slot */
}

int hsd_strmap_init(hsd_strmap *m, size_t expected) {
    memset(m, 0, sizeof *m);
    m->cap = pow2_at_least(expected + expected / 2 + 1);
    m->slots = calloc(m->cap, sizeof *m->slots);
    return m->slots ? 0 : -1;
}

void hsd_strmap_free(hsd_strmap *m) {
    free(m->slots);
    free(m->arena);
    memset(m, 0, sizeof *m);
}

static int strmap_grow(hsd_strmap *m) {
    size_t cap = m->cap * 2;
    hsd_strmap_slot *s = calloc(cap, sizeof *s);
    if (!s) return -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].hash) continue;
        size_t j = m->slots[i].hash & (cap - 1);
        while (s[j].hash) j = (j + 1) & (cap - 1);
        s[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = s;
    m->cap = cap;
    return 0;
}

int hsd_strmap_put(hsd_strmap *m, const void *key, size_t len, int32_t val) {
    if ((m->n + 1) * 4 > m->cap * 3 && strmap_grow(m)) return -1;
    uint64_t h = str_hash(key, len);
    size_t j = h & (m->cap - 1);
    while (m->slots[j].hash) {
        hsd_strmap_slot *s = &m->slots[j];
        if (s->hash == h && s->key_len == len &&
            (!len || !memcmp(m->arena + s->key_off, key, len)) /* arena NULL until a non-empty key */) {
            s->val = val;
            return 0;
        }
        j = (j + 1) & (m->cap - 1);
    }
    if (m->arena_n + len > m->arena_cap) {
        size_t c = m->arena_cap ? m->arena_cap : 4096;
        while (c < m->arena_n + len) c *= 2;
        char *a = realloc(m->arena, c);
        if (!a) return -1;
        m->arena = a;
        m->arena_cap = c;
    }
    if (len) memcpy(m->arena + m->arena_n, key, len);
    m->slots[j] = (hsd_strmap_slot){h, (uint32_t)m->arena_n, (uint32_t)len, val};
    m->arena_n += len;
    m->n++;
    return 0;
}

int32_t hsd_strmap_get(const hsd_strmap *m, const void *key, size_t len) {
    if (!m->cap) return -1;
    uint64_t h = str_hash(key, len);
    size_t j = h & (m->cap - 1);
    while (m->slots[j].hash) {
        const hsd_strmap_slot *s = &m->slots[j];
        if (s->hash == h && s->key_len == len &&
            (!len || !memcmp(m->arena + s->key_off, key, len)) /* arena NULL until a non-empty key */)
            return s->val;
        j = (j + 1) & (m->cap - 1);
    }
    return -1;
}

int hsd_u64map_init(hsd_u64map *m, size_t expected) {
    m->cap = pow2_at_least(expected + expected / 2 + 1);
    m->n = 0;
    m->slots = malloc(m->cap * sizeof *m->slots);
    if (!m->slots) return -1;
    memset(m->slots, 0xff, m->cap * sizeof *m->slots);
    return 0;
}

void hsd_u64map_free(hsd_u64map *m) {
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static int u64map_grow(hsd_u64map *m) {
    size_t cap = m->cap * 2;
    hsd_u64map_slot *s = malloc(cap * sizeof *s);
    if (!s) return -1;
    memset(s, 0xff, cap * sizeof *s);
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key != UINT64_MAX) {
            size_t j = hsd_mix64(m->slots[i].key) & (cap - 1);
            while (s[j].key != UINT64_MAX) j = (j + 1) & (cap - 1);
            s[j] = m->slots[i];
        }
    free(m->slots);
    m->slots = s;
    m->cap = cap;
    return 0;
}

int hsd_u64map_put(hsd_u64map *m, uint64_t key, uint64_t val) {
    if ((m->n + 1) * 4 > m->cap * 3 && u64map_grow(m)) return -1;
    size_t j = hsd_mix64(key) & (m->cap - 1);
    while (m->slots[j].key != UINT64_MAX) {
        if (m->slots[j].key == key) {
            m->slots[j].val = val;
            return 0;
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->slots[j].key = key;
    m->slots[j].val = val;
    m->n++;
    return 0;
}

int hsd_u64map_get(const hsd_u64map *m, uint64_t key, uint64_t *val) {
    if (!m->cap) return 0;
    size_t j = hsd_mix64(key) & (m->cap - 1);
    while (m->slots[j].key != UINT64_MAX) {
        if (m->slots[j].key == key) {
            *val = m->slots[j].val;
            return 1;
        }
        j = (j + 1) & (m->cap - 1);
    }
    return 0;
}
