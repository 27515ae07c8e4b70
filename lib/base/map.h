/* Open-addressing hash maps used by tokenizers and the engine.
 *  - hsd_strmap: byte string -> int32 (keys are copied into the map's own arena);
 *  - hsd_u64map: uint64 -> uint64 (merge tables, trie edges).
 * Hashing is xxHash3. Both are insert-only and safe for concurrent readers once built. */
#ifndef HSD_LIB_MAP_H
#define HSD_LIB_MAP_H

#include <stddef.h>
#include <stdint.h>

/* One slot holds everything a probe needs, so a lookup touches one cache line (plus the key
 * bytes when the hash matches). */
typedef struct hsd_strmap_slot {
    uint64_t hash; /* 0 = empty slot */
    uint32_t key_off, key_len;
    int32_t val;
} hsd_strmap_slot;

typedef struct hsd_strmap {
    hsd_strmap_slot *slots;
    size_t cap, n; /* cap is a power of two */
    char *arena;
    size_t arena_n, arena_cap;
} hsd_strmap;

int hsd_strmap_init(hsd_strmap *m, size_t expected);
void hsd_strmap_free(hsd_strmap *m);
/* Inserts or overwrites. Returns 0, or -1 on allocation failure. */
int hsd_strmap_put(hsd_strmap *m, const void *key, size_t len, int32_t val);
/* Returns the value, or -1 when absent. */
int32_t hsd_strmap_get(const hsd_strmap *m, const void *key, size_t len);

typedef struct hsd_u64map_slot {
    uint64_t key; /* UINT64_MAX = empty */
    uint64_t val;
} hsd_u64map_slot;

typedef struct hsd_u64map {
    hsd_u64map_slot *slots;
    size_t cap, n;
} hsd_u64map;

int hsd_u64map_init(hsd_u64map *m, size_t expected);
void hsd_u64map_free(hsd_u64map *m);
/* Inserts or overwrites; key UINT64_MAX is reserved. Returns 0 or -1. */
int hsd_u64map_put(hsd_u64map *m, uint64_t key, uint64_t val);
/* Returns 1 and sets *val when present, else 0. */
int hsd_u64map_get(const hsd_u64map *m, uint64_t key, uint64_t *val);

static inline uint64_t hsd_mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

#endif
