/* The packed k-quant layouts (matmul_kq.h): group sizes, packing from GGUF blocks, the
 * activation extras, and the scalar reference of the packed arithmetic. Portable C; packing
 * runs once per matrix at load time (or per group for row subsets), on AVX-512 with the
 * vector packer of matmul_pack_avx512.c, which gives these bytes. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "kernels/cpu_features.h"
#include "kernels/matmul_kq.h"

enum { Q4_W = 2048, Q5_W = 2560, Q6_W = 3072 };

static size_t block_bytes(hsd_dtype t) { /* weight plane + tail per super-block of a group */
    switch (t) {
    case HSD_DT_Q4_K: return Q4_W + HSD_KQP_TAIL;
    case HSD_DT_Q5_K: return Q5_W + HSD_KQP_TAIL;
    default: return Q6_W + HSD_KQP_TAIL;
    }
}

size_t hsd_kqp_group_bytes(hsd_dtype t, int32_t cols) {
    return ((size_t)(cols / HSD_QK_K) * block_bytes(t) + 63) & ~(size_t)63;
}

/* scale and min of sub-block j from a Q4_K/Q5_K block's 12 scale bytes (GGUF's 6-bit packing) */
static void k4_scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63, *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

void hsd_kqp_pack_group_ref(hsd_dtype t, const uint8_t *const *rows, int32_t count,
                            int32_t nb, uint8_t *dst) {
    const size_t W = t == HSD_DT_Q4_K ? Q4_W : t == HSD_DT_Q5_K ? Q5_W : Q6_W;
    const size_t bb = hsd_dtype_block_bytes(t);
    memset(dst, 0, hsd_kqp_group_bytes(t, nb * HSD_QK_K));
    for (int32_t j = 0; j < count; j++) {
        for (int32_t b = 0; b < nb; b++) {
            const uint8_t *g = rows[j] + (size_t)b * bb;
            uint8_t *wp = dst + (size_t)b * block_bytes(t);
            if (t == HSD_DT_Q6_K) {
                uint8_t *tail = wp + W;
                for (int D = 0; D < 32; D++) memcpy(wp + 64 * D + 4 * j, g + 4 * D, 4);
                for (int E = 0; E < 16; E++) memcpy(wp + 2048 + 64 * E + 4 * j, g + 128 + 4 * E, 4);
                for (int k = 0; k < 16; k++) tail[16 * k + j] = g[192 + k];
                memcpy(tail + 256 + 2 * j, g + 208, 2);
                continue;
            }
            const int five = t == HSD_DT_Q5_K;
            uint8_t *tail = wp + W;
            const uint8_t *qs = g + (five ? 48 : 16);
            for (int D = 0; D < 32; D++) memcpy(wp + 64 * D + 4 * j, qs + 4 * D, 4);
            if (five)
                for (int v = 0; v < 8; v++) memcpy(wp + 2048 + 64 * v + 4 * j, g + 16 + 4 * v, 4);
            for (int s = 0; s < 8; s++) {
                int sc, m;
                k4_scale_min(g + 4, s, &sc, &m);
                tail[16 * s + j] = (uint8_t)sc;
                tail[128 + 32 * (s / 2) + 2 * j + (s % 2)] = (uint8_t)m;
            }
            memcpy(tail + 256 + 2 * j, g, 2);
            memcpy(tail + 288 + 2 * j, g + 2, 2);
        }
    }
}

void hsd_kqp_pack_group(hsd_dtype t, const uint8_t *const *rows, int32_t count, int32_t nb,
                        uint8_t *dst) {
#ifdef HSD_MM_HAVE_AVX512
    /* the one probe and its override (cpu_features.h), as every kernel family */
    if (hsd_cpu_level_active() >= HSD_CPU_AVX512) {
        hsd_kqp_pack_group_avx512(t, rows, count, nb, dst);
        return;
    }
#endif
    hsd_kqp_pack_group_ref(t, rows, count, nb, dst);
}

size_t hsd_kqp_extra_bytes(int32_t n, int32_t cols) {
    const size_t per = (size_t)HSD_KQP_EXTRAS(HSD_DT_Q6_K) * sizeof(int32_t); /* the larger */
    return hsd_mm_align64((size_t)n * (size_t)(cols / HSD_QK_K) * per);
}

/* Per token and block, HSD_KQP_EXTRAS(t) int32: Q4_K/Q5_K's first 16 bytes are the int16 sums
 * of 32 (bsum_2s + bsum_2s+1, |.| <= 4096) that the mins multiply in pairs; Q6_K's are -32 x
 * the sum of each 8 activations, the start of each half sub-block's integer sum, so that
 * q - 32 costs nothing in the loop (halves: matmul_kq_avx512.c). */
void hsd_kqp_prepare(hsd_mm_acts *a, hsd_dtype t, void *buf) {
    const int64_t nb = a->cols / HSD_QK_K;
    int32_t *e = buf;
    for (int64_t i = 0; i < (int64_t)a->n * nb; i++, e += HSD_KQP_EXTRAS(t)) {
        const hsd_q8k *x = a->xk + i;
        if (t == HSD_DT_Q6_K) {
            for (int k = 0; k < 16; k++) { /* the first 8 of each 16; the rest from its bsum */
                int32_t s = 0;
                for (int j = 0; j < 8; j++) s += x->qs[16 * k + j];
                e[2 * k] = -32 * s;
                e[2 * k + 1] = -32 * (x->bsums[k] - s);
            }
        } else {
            int16_t s32[8];
            for (int s = 0; s < 8; s++) s32[s] = (int16_t)(x->bsums[2 * s] + x->bsums[2 * s + 1]);
            memset(e, 0, HSD_KQP_EXTRAS(t) * sizeof *e);
            memcpy(e, s32, sizeof s32);
        }
    }
    a->xke = buf;
}

/* ---- scalar reference ------------------------------------------------------------------ */

static float half_of(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return hsd_fp16_to_fp32(h);
}

float hsd_kqp_dot_ref(hsd_dtype t, const void *row, const hsd_q8k *x, int64_t cols) {
    const uint8_t *g = row;
    const size_t bb = hsd_dtype_block_bytes(t);
    float acc = 0.0f;
    for (int64_t b = 0; b < cols / HSD_QK_K; b++, g += bb, x++) {
        int32_t I = 0, M = 0;
        if (t == HSD_DT_Q6_K) {
            const uint8_t *ql = g, *qh = g + 128;
            const int8_t *sc = (const int8_t *)(g + 192);
            for (int k = 0; k < 16; k++) {
                int32_t s = -32 * x->bsums[k];
                for (int c = 0; c < 16; c++) {
                    int e = 16 * k + c, h = e / 128, r = e % 128, grp = r / 32, l = r % 32;
                    int lo = (ql[64 * h + 32 * (grp % 2) + l] >> (grp < 2 ? 0 : 4)) & 15;
                    int q = lo | ((qh[32 * h + l] >> (2 * grp)) & 3) << 4;
                    s += q * x->qs[e];
                }
                I += sc[k] * s;
            }
            acc = fmaf(x->d * half_of(g + 208), (float)I, acc);
            continue;
        }
        const int five = t == HSD_DT_Q5_K;
        const uint8_t *qh = g + 16, *qs = g + (five ? 48 : 16);
        for (int s = 0; s < 8; s++) {
            int sc, m;
            k4_scale_min(g + 4, s, &sc, &m);
            int32_t d = 0;
            for (int c = 0; c < 32; c++) {
                int q = (qs[32 * (s / 2) + c] >> (4 * (s % 2))) & 15;
                if (five) q |= ((qh[c] >> s) & 1) << 4;
                d += q * x->qs[32 * s + c];
            }
            I += sc * d;
            M += m * (x->bsums[2 * s] + x->bsums[2 * s + 1]);
        }
        acc = fmaf(x->d * half_of(g), (float)I, acc);
        acc = fmaf(-(x->d * half_of(g + 2)), (float)M, acc);
    }
    return acc;
}

static atomic_int tuning = -1;

void hsd_kqp_tuning_set(int amd) {
    atomic_store_explicit(&tuning, amd < 0 ? -1 : amd > 0, memory_order_relaxed);
}

bool hsd_kqp_tuning_amd(void) {
    const int t = atomic_load_explicit(&tuning, memory_order_relaxed);
    return t < 0 ? hsd_cpu_features_get()->amd : t > 0;
}
