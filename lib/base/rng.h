/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
 * counter-based generator. Output block i of stream (seed, stream) is a pure function of
 * (seed, stream, i), so every algorithm that draws from one seeded hsd_rng is reproducible
 * and a draft/verify step can be replayed from its counter. Internal to the library (not in
 * the exported ABI since issue 20); tests link the static library. */
#ifndef HSD_LIB_RNG_H
#define HSD_LIB_RNG_H

#include <stdint.h>

#include "hsd.h"

/* The generator the engine's seeds drive; a plain struct so that it lives on the stack. Not
 * thread-safe per generator (each thread its own). */
typedef struct hsd_rng {
    uint32_t key[2];
    uint32_t ctr[4]; /* ctr[0..1] = block counter, ctr[2..3] = stream */
    uint32_t buf[4];
    int used; /* words of buf consumed (4 = refill) */
} hsd_rng;

/* One Philox4x32-10 block: out = philox(ctr, key). */
void hsd_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* Seeds r for (seed, stream). A NULL r is a no-op. */
void hsd_rng_init(hsd_rng *r, uint64_t seed, uint64_t stream);
/* The next 32 random bits (0 for a NULL r). */
uint32_t hsd_rng_u32(hsd_rng *r);
/* Uniform in [0, 1) with 24 random bits (exactly representable as float); 0 for NULL. */
float hsd_rng_uniform(hsd_rng *r);
/* Uniform in [0, 1) with 53 random bits; 0 for NULL. */
double hsd_rng_uniform_f64(hsd_rng *r);

#endif
