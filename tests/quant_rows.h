/* Random quantised rows for the kernel tests (test_gguf_quant, test_quant_int_dots): random
 * bytes with every fp16 scale field set to a finite value of either sign, so that no block
 * holds inf/nan scales the format never produces. The xorshift state is the caller's. */
#ifndef HSD_TESTS_QUANT_ROWS_H
#define HSD_TESTS_QUANT_ROWS_H

#include <stdint.h>

#include "kernels/cpu_ops.h"
#include "kernels/quant.h"

static inline uint32_t hsd_test_xorshift(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return (uint32_t)(*s >> 16);
}

static inline void hsd_test_put_f16(uint8_t *p, float v) {
    uint16_t h = hsd_fp32_to_fp16(v);
    p[0] = (uint8_t)h, p[1] = (uint8_t)(h >> 8);
}

/* Where each block type keeps its fp16 scale d (and min m where it has one). */
static inline void hsd_test_random_quant_row(hsd_dtype t, uint8_t *row, int64_t cols, uint64_t *s) {
    size_t bb = hsd_dtype_block_bytes(t);
    int64_t nb = cols / hsd_dtype_block(t);
    for (size_t i = 0; i < bb * (size_t)nb; i++) row[i] = (uint8_t)hsd_test_xorshift(s);
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *b = row + i * bb;
        float d = ((float)(hsd_test_xorshift(s) % 2000) - 1000.0f) * 1e-4f,
              m = ((float)(hsd_test_xorshift(s) % 2000) - 1000.0f) * 1e-4f;
        switch (t) {
        case HSD_DT_Q4_1:
        case HSD_DT_Q5_1:
        case HSD_DT_Q4_K:
        case HSD_DT_Q5_K:
            hsd_test_put_f16(b, d), hsd_test_put_f16(b + 2, m);
            break;
        case HSD_DT_Q2_K:
            hsd_test_put_f16(b + 80, d), hsd_test_put_f16(b + 82, m);
            break;
        case HSD_DT_Q3_K:
            hsd_test_put_f16(b + 108, d);
            break;
        case HSD_DT_Q6_K:
            hsd_test_put_f16(b + 208, d);
            break;
        default:
            hsd_test_put_f16(b, d);
            break;
        }
    }
}

#endif
