/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
 * counter-based generator. Output block i of stream (seed, stream) is a pure function of
 * (seed, stream, i), so every algorithm that draws from one seeded hsd_rng is reproducible
 * and a draft/verify step can be replayed from its counter. */
#ifndef HSD_LIB_RNG_H
#define HSD_LIB_RNG_H

#include <stdint.h>

#include "hsd.h"

/* One Philox4x32-10 block: out = philox(ctr, key). */
void hsd_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* The generator itself (hsd_rng, hsd_rng_init, hsd_rng_u32, hsd_rng_uniform,
 * hsd_rng_uniform_f64) is public: include/hsd_tools.h. */

#endif
