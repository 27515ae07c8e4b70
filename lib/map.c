#include "lib/map.h"

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
    m->cap = pow2_at_least(expected * 2 + 1);
    m->hashes = calloc(m->cap, sizeof *m->hashes);
    m->key_off = malloc(m->cap * sizeof *m->key_off);
    m->key_len = malloc(m->cap * sizeof *m->key_len);
    m->vals = malloc(m->cap * sizeof *m->vals);
    if (!m->hashes || !m->key_off || !m->key_len || !m->vals) {
        hsd_strmap_free(m);
        return -1;
    }
    return 0;
}

void hsd_strmap_free(hsd_strmap *m) {
    free(m->hashes);
    free(m->key_off);
    free(m->key_len);
    free(m->vals);
    free(m->arena);
    memset(m, 0, sizeof *m);
}

static int strmap_grow(hsd_strmap *m) {
    hsd_strmap g = *m;
    g.cap = m->cap * 2;
    g.hashes = calloc(g.cap, sizeof *g.hashes);
    g.key_off = malloc(g.cap * sizeof *g.key_off);
    g.key_len = malloc(g.cap * sizeof *g.key_len);
    g.vals = malloc(g.cap * sizeof *g.vals);
    if (!g.hashes || !g.key_off || !g.key_len || !g.vals) {
        free(g.hashes), free(g.key_off), free(g.key_len), free(g.vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->hashes[i]) continue;
        size_t j = m->hashes[i] & (g.cap - 1);
        while (g.hashes[j]) j = (j + 1) & (g.cap - 1);
        g.hashes[j] = m->hashes[i];
        g.key_off[j] = m->key_off[i];
        g.key_len[j] = m->key_len[i];
        g.vals[j] = m->vals[i];
    }
    free(m->hashes), free(m->key_off), free(m->key_len), free(m->vals);
    *m = g;
    return 0;
}

int hsd_strmap_put(hsd_strmap *m, const void *key, size_t len, int32_t val) {
    if ((m->n + 1) * 4 > m->cap * 3 && strmap_grow(m)) return -1;
    uint64_t h = str_hash(key, len);
    size_t j = h & (m->cap - 1);
    while (m->hashes[j]) {
        if (m->hashes[j] == h && m->key_len[j] == len &&
            !memcmp(m->arena + m->key_off[j], key, len)) {
            m->vals[j] = val;
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
    m->hashes[j] = h;
    m->key_off[j] = (uint32_t)m->arena_n;
    m->key_len[j] = (uint32_t)len;
    m->vals[j] = val;
    m->arena_n += len;
    m->n++;
    return 0;
}

int32_t hsd_strmap_get(const hsd_strmap *m, const void *key, size_t len) {
    if (!m->cap) return -1;
    uint64_t h = str_hash(key, len);
    size_t j = h & (m->cap - 1);
    while (m->hashes[j]) {
        if (m->hashes[j] == h && m->key_len[j] == len &&
            !memcmp(m->arena + m->key_off[j], key, len))
            return m->vals[j];
        j = (j + 1) & (m->cap - 1);
    }
    return -1;
}

int hsd_u64map_init(hsd_u64map *m, size_t expected) {
    m->cap = pow2_at_least(expected * 2 + 1);
    m->n = 0;
    m->keys = malloc(m->cap * sizeof *m->keys);
    m->vals = malloc(m->cap * sizeof *m->vals);
    if (!m->keys || !m->vals) {
        hsd_u64map_free(m);
        return -1;
    }
    memset(m->keys, 0xff, m->cap * sizeof *m->keys);
    return 0;
}

void hsd_u64map_free(hsd_u64map *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static int u64map_grow(hsd_u64map *m) {
    hsd_u64map g;
    if (hsd_u64map_init(&g, m->cap)) return -1; /* doubles: init takes 2*expected */
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i] != UINT64_MAX) {
            size_t j = hsd_mix64(m->keys[i]) & (g.cap - 1);
            while (g.keys[j] != UINT64_MAX) j = (j + 1) & (g.cap - 1);
            g.keys[j] = m->keys[i];
            g.vals[j] = m->vals[i];
        }
    g.n = m->n;
    hsd_u64map_free(m);
    *m = g;
    return 0;
}

int hsd_u64map_put(hsd_u64map *m, uint64_t key, uint64_t val) {
    if ((m->n + 1) * 4 > m->cap * 3 && u64map_grow(m)) return -1;
    size_t j = hsd_mix64(key) & (m->cap - 1);
    while (m->keys[j] != UINT64_MAX) {
        if (m->keys[j] == key) {
            m->vals[j] = val;
            return 0;
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->keys[j] = key;
    m->vals[j] = val;
    m->n++;
    return 0;
}

int hsd_u64map_get(const hsd_u64map *m, uint64_t key, uint64_t *val) {
    if (!m->cap) return 0;
    size_t j = hsd_mix64(key) & (m->cap - 1);
    while (m->keys[j] != UINT64_MAX) {
        if (m->keys[j] == key) {
            *val = m->vals[j];
            return 1;
        }
        j = (j + 1) & (m->cap - 1);
    }
    return 0;
}
