#include "lib/base/rng.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u /* golden ratio */
#define PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */

void hsd_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

void hsd_rng_init(hsd_rng *r, uint64_t seed, uint64_t stream) {
    if (!r) return;
    r->key[0] = (uint32_t)seed;
    r->key[1] = (uint32_t)(seed >> 32);
    r->ctr[0] = r->ctr[1] = 0;
    r->ctr[2] = (uint32_t)stream;
    r->ctr[3] = (uint32_t)(stream >> 32);
    r->used = 4;
}

uint32_t hsd_rng_u32(hsd_rng *r) {
    if (!r) return 0;
    if (r->used == 4) {
        hsd_philox4x32_10(r->ctr, r->key, r->buf);
        if (++r->ctr[0] == 0) ++r->ctr[1];
        r->used = 0;
    }
    return r->buf[r->used++];
}

float hsd_rng_uniform(hsd_rng *r) { return (float)(hsd_rng_u32(r) >> 8) * (1.0f / 16777216.0f); }

double hsd_rng_uniform_f64(hsd_rng *r) {
    uint64_t hi = hsd_rng_u32(r) >> 5, lo = hsd_rng_u32(r) >> 6; /* 27 + 26 bits */
    return (double)(hi * 67108864u + lo) * (1.0 / 9007199254740992.0);
}
