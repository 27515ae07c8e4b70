/* Activation rounding of quantised matmuls, as llama.cpp's CPU backend does it: before a
 * matrix of a block type multiplies x, llama.cpp quantises x to 8 bits (Q8_K blocks of 256
 * for the k-quants, Q8_0/Q8_1 blocks of 32 for Q4_0/Q4_1/Q5_0/Q5_1) and takes integer dot
 * products. hsd rounds x the same way and multiplies in float, so that a GGUF gives
 * llama.cpp's logits (to float rounding) rather than those of fp32 activations, which differ
 * from them by ~1e-2 relative: enough to flip near-tied argmaxes (tests/test_gguf_quant.c). */
#include <math.h>
#include <stdlib.h>

#include "kernels/quant.h"

/* A rounded value as int8; NaN (from NaN or infinite activations: a broken model) becomes 0
 * instead of an undefined conversion (fuzz_model_gguf). */
static int8_t to_i8(float v) {
    if (v >= -127.0f && v <= 127.0f) return (int8_t)v;
    return v > 127.0f ? 127 : v < -127.0f ? -127 : 0;
}

/* Q8_K (ggml's quantize_row_q8_K_ref): scale from the signed element of largest magnitude,
 * q = min(127, round-half-even(-127/max * x)), d = 1 / (-127/max). */
static void q8_k_block(const float *x, hsd_q8k *b) {
    float max = 0.0f, amax = 0.0f;
    for (int j = 0; j < HSD_QK_K; j++)
        if (fabsf(x[j]) > amax) amax = fabsf(x[j]), max = x[j];
    float iscale = amax == 0.0f ? 0.0f : -127.0f / max;
    b->d = amax == 0.0f ? 0.0f : 1.0f / iscale;
    for (int j = 0; j < HSD_QK_K; j++) {
        b->qs[j] = to_i8(rintf(iscale * x[j]));
    }
    for (int k = 0; k < HSD_QK_K / 16; k++) {
        int s = 0;
        for (int j = 0; j < 16; j++) s += b->qs[16 * k + j];
        b->bsums[k] = (int16_t)s;
    }
}

void hsd_quant_q8k(const float *x, int64_t cols, hsd_q8k *out) {
    for (int64_t i = 0; i + HSD_QK_K <= cols; i += HSD_QK_K) q8_k_block(x + i, out++);
}

static void round_q8_k(const float *x, float *out) {
    hsd_q8k b;
    q8_k_block(x, &b);
    for (int j = 0; j < HSD_QK_K; j++) out[j] = (float)b.qs[j] * b.d;
}

/* Q8_0 / Q8_1 (ggml-cpu's x86 quantize_row_q8_0/1 and quantize_mat_q8_0_4x8): d = amax/127
 * stored as fp16, q = round-half-even(x * 127/amax), value q * fp16(d). */
static void q8_0_block(const float *x, hsd_q8_0 *b) {
    float amax = 0.0f;
    /* a comparison, not fmaxf: the same result (a NaN is skipped either way), but GCC calls
     * libm's fmaxf for every element (a Q8_0 KV cache quantises two rows per head and token,
     * and its queries too) */
    for (int j = 0; j < 32; j++) {
        const float a = fabsf(x[j]);
        if (a > amax) amax = a;
    }
    b->d = hsd_fp16_to_fp32(hsd_fp32_to_fp16(amax / 127.0f));
    float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    b->sum = 0;
    for (int j = 0; j < 32; j++) {
        b->qs[j] = to_i8(rintf(x[j] * id)); /* int8 as ggml */
        b->sum += b->qs[j];
    }
}

void hsd_quant_q8_0(const float *x, int64_t cols, hsd_q8_0 *out) {
    for (int64_t i = 0; i + 32 <= cols; i += 32) q8_0_block(x + i, out++);
}

static void round_q8_0(const float *x, float *out) {
    hsd_q8_0 b;
    q8_0_block(x, &b);
    for (int j = 0; j < 32; j++) out[j] = (float)b.qs[j] * b.d;
}

bool hsd_quant_act_round(hsd_dtype wt, const float *x, int64_t cols, float *out) {
    switch (wt) {
    case HSD_DT_Q2_K:
    case HSD_DT_Q3_K:
    case HSD_DT_Q4_K:
    case HSD_DT_Q5_K:
    case HSD_DT_Q6_K:
        for (int64_t i = 0; i + HSD_QK_K <= cols; i += HSD_QK_K) round_q8_k(x + i, out + i);
        return true;
    case HSD_DT_Q8_0: /* for kernels that multiply Q8_0 weights the way llama.cpp does */
    case HSD_DT_Q4_0:
    case HSD_DT_Q4_1:
    case HSD_DT_Q5_0:
    case HSD_DT_Q5_1:
        for (int64_t i = 0; i + 32 <= cols; i += 32) round_q8_0(x + i, out + i);
        return true;
    default:
        return false;
    }
}
