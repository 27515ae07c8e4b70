/* Streaming attention (kernels/attention.h): one body (kernels/attention_body.h) compiled for
 * the scalar, AVX2 and AVX-512 levels; the level comes from the one CPU probe
 * (kernels/cpu_features.h) and falls back a level where the head dimension is not a multiple
 * of the vector width. */
#include "kernels/attention.h"

#include <math.h>
#include <string.h>

#include "kernels/cpu_features.h"
#include "kernels/quant.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "kernels/simd_exp.h"
#define HSD_ATTN_X86 1
#endif

size_t hsd_attn_row_bytes(hsd_dtype type, int32_t hd) {
    if (type == HSD_DT_Q8_0) return (size_t)(hd + HSD_ATTN_Q8_BLOCK - 1) / HSD_ATTN_Q8_BLOCK * HSD_ATTN_Q8_BYTES;
    return (size_t)hd * (type == HSD_DT_F32 ? 4 : 2);
}

size_t hsd_attn_scratch_floats(int32_t hd, int32_t n_rows) {
    /* a zero row, a score row per row (the block + 16: whole vectors), max, sum */
    return (size_t)hd + (size_t)n_rows * (HSD_ATTN_BLOCK + 16) + 2 * (size_t)n_rows;
}

/* ---- scalar ---------------------------------------------------------------------------- */

/* Elements d.. of a cache row as fp32 (the body inlines it with a constant type). Q8_0: value
 * q * d, d the block's fp16 scale (the product of a 7-bit integer and an 11-bit significand
 * is exact in fp32, so every level gets the same bits). */
static inline __attribute__((always_inline)) float kload_scalar(hsd_dtype t, const uint8_t *row, int32_t d) {
    if (t == HSD_DT_Q8_0) {
        const uint8_t *b = row + (size_t)(d / HSD_ATTN_Q8_BLOCK) * HSD_ATTN_Q8_BYTES;
        uint16_t h;
        memcpy(&h, b, 2);
        return (float)(int8_t)b[2 + d % HSD_ATTN_Q8_BLOCK] * hsd_fp16_to_fp32(h);
    }
    if (t == HSD_DT_F32) return ((const float *)(const void *)row)[d];
    uint16_t h;
    memcpy(&h, row + 2 * (size_t)d, 2);
    return t == HSD_DT_F16 ? hsd_fp16_to_fp32(h) : hsd_bf16_to_fp32(h);
}

#define SFX scalar
#define ATTR
#define W 1
#define VT float
#define VZERO 0.0f
#define VSET1(x) (x)
#define VLOAD(p) (*(p))
#define VSTORE(p, v) (*(p) = (v))
#define VFMA(a, b, c) fmaf((a), (b), (c))
#define VMUL(a, b) ((a) * (b))
#define VSUB(a, b) ((a) - (b))
#define VADD(a, b) ((a) + (b))
#define VMAX(a, b) fmaxf((a), (b))
#define VHSUM(v) (v)
#define VHMAX(v) (v)
#define VREDUCE(a) ((a)[0])
#define VEXP(v) expf(v)
#define KLOAD kload_scalar
#include "kernels/attention_body.h"

#ifdef HSD_ATTN_X86
/* ---- AVX2 + FMA + F16C ------------------------------------------------------------------ */
#define HSD_AVX2 __attribute__((target("avx2,fma,f16c")))

HSD_AVX2 static inline float attn_hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

HSD_AVX2 static inline float attn_hmax8(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Lane i of the result = the sum of a[i]'s eight lanes: pairs interleaved and added
 * (unpack, then 64-bit shuffles), then the two 128-bit halves. */
HSD_AVX2 static inline __m256 attn_reduce8(const __m256 *a) {
    __m256 t[4], u[2];
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++)
        t[k] = _mm256_add_ps(_mm256_unpacklo_ps(a[2 * k], a[2 * k + 1]),
                             _mm256_unpackhi_ps(a[2 * k], a[2 * k + 1]));
#pragma GCC unroll 2
    for (int k = 0; k < 2; k++)
        u[k] = _mm256_add_ps(_mm256_shuffle_ps(t[2 * k], t[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm256_shuffle_ps(t[2 * k], t[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm256_add_ps(_mm256_permute2f128_ps(u[0], u[1], 0x20),
                         _mm256_permute2f128_ps(u[0], u[1], 0x31));
}

/* F16C: the scalar converter's value for every half */
HSD_AVX2 static inline __attribute__((always_inline)) __m256 kload_avx2(hsd_dtype t, const uint8_t *row, int32_t d) {
    if (t == HSD_DT_Q8_0) {
        const uint8_t *b = row + (size_t)(d / HSD_ATTN_Q8_BLOCK) * HSD_ATTN_Q8_BYTES;
        uint16_t h;
        memcpy(&h, b, 2);
        const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(b + 2 + d % HSD_ATTN_Q8_BLOCK)));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(q), _mm256_set1_ps(_cvtsh_ss(h)));
    }
    if (t == HSD_DT_F32) return _mm256_loadu_ps((const float *)(const void *)row + d);
    const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(row + 2 * (size_t)d));
    return t == HSD_DT_F16 ? _mm256_cvtph_ps(x)
                           : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(x), 16));
}

#define SFX avx2
#define ATTR HSD_AVX2
#define W 8
#define VT __m256
#define VZERO _mm256_setzero_ps()
#define VSET1(x) _mm256_set1_ps(x)
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps((p), (v))
#define VFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define VMUL(a, b) _mm256_mul_ps((a), (b))
#define VSUB(a, b) _mm256_sub_ps((a), (b))
#define VADD(a, b) _mm256_add_ps((a), (b))
#define VMAX(a, b) _mm256_max_ps((a), (b))
#define VHSUM(v) attn_hsum8(v)
#define VHMAX(v) attn_hmax8(v)
#define VREDUCE(a) attn_reduce8(a)
#define VEXP(v) hsd_exp8(v)
#define KLOAD kload_avx2
#include "kernels/attention_body.h"

/* ---- AVX-512 ---------------------------------------------------------------------------- */
#define HSD_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))

HSD_AVX512 static inline float attn_hsum16(__m512 v) {
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Lane i of the result = the sum of a[i]'s sixteen lanes: pairs interleaved and added within
 * 128-bit lanes (unpack, then 64-bit shuffles), then across 128-bit lanes twice. */
HSD_AVX512 static inline __m512 attn_reduce16(const __m512 *a) {
    __m512 t[8], u[4], v[2];
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++)
        t[k] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * k], a[2 * k + 1]),
                             _mm512_unpackhi_ps(a[2 * k], a[2 * k + 1]));
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++)
        u[k] = _mm512_add_ps(_mm512_shuffle_ps(t[2 * k], t[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(t[2 * k], t[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
#pragma GCC unroll 2
    for (int k = 0; k < 2; k++)
        v[k] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * k], u[2 * k + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(u[2 * k], u[2 * k + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

/* as kload_avx2, 16 lanes */
HSD_AVX512 static inline __attribute__((always_inline)) __m512 kload_avx512(hsd_dtype t, const uint8_t *row, int32_t d) {
    if (t == HSD_DT_Q8_0) {
        const uint8_t *b = row + (size_t)(d / HSD_ATTN_Q8_BLOCK) * HSD_ATTN_Q8_BYTES;
        uint16_t h;
        memcpy(&h, b, 2);
        const __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(b + 2 + d % HSD_ATTN_Q8_BLOCK)));
        return _mm512_mul_ps(_mm512_cvtepi32_ps(q), _mm512_set1_ps(_cvtsh_ss(h)));
    }
    if (t == HSD_DT_F32) return _mm512_loadu_ps((const float *)(const void *)row + d);
    const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(row + 2 * (size_t)d));
    return t == HSD_DT_F16 ? _mm512_cvtph_ps(x)
                           : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(x), 16));
}

#define SFX avx512
#define ATTR HSD_AVX512
#define W 16
#define VT __m512
#define VZERO _mm512_setzero_ps()
#define VSET1(x) _mm512_set1_ps(x)
#define VLOAD(p) _mm512_loadu_ps(p)
#define VSTORE(p, v) _mm512_storeu_ps((p), (v))
#define VFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define VMUL(a, b) _mm512_mul_ps((a), (b))
#define VSUB(a, b) _mm512_sub_ps((a), (b))
#define VADD(a, b) _mm512_add_ps((a), (b))
#define VMAX(a, b) _mm512_max_ps((a), (b))
#define VHSUM(v) attn_hsum16(v)
#define VHMAX(v) _mm512_reduce_max_ps(v)
#define VREDUCE(a) attn_reduce16(a)
#define VEXP(v) hsd_exp16(v)
#define KLOAD kload_avx512
#include "kernels/attention_body.h"

HSD_AVX2 static void store_f16_avx2(uint16_t *dst, const float *src, int32_t n) {
    int32_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++) dst[i] = hsd_fp32_to_fp16(src[i]);
}
#endif

void hsd_attn_rows(const hsd_attn_kv *kv, const hsd_attn_row *rows, int32_t n_rows, float scale,
                   float softcap, float *scratch) {
    if (n_rows <= 0) return;
#ifdef HSD_ATTN_X86
    hsd_cpu_level lv = hsd_cpu_level_active();
    if (lv >= HSD_CPU_AVX512 && kv->hd % 16 == 0) {
        attn_rows_avx512(kv, rows, n_rows, scale, softcap, scratch);
        return;
    }
    if (lv >= HSD_CPU_AVX2 && kv->hd % 8 == 0) {
        attn_rows_avx2(kv, rows, n_rows, scale, softcap, scratch);
        return;
    }
#endif
    attn_rows_scalar(kv, rows, n_rows, scale, softcap, scratch);
}

/* llama.cpp's Q8_0 as its CPU backend writes a Q8_0 KV cache (d = fp16(amax / 127),
 * q = round-half-even(x * 127 / amax)): kernels/quant_act.c's block rule, checked against
 * llama.cpp in tests/test_gguf_quant.c. A short last block is padded with zeros (they
 * change neither amax nor the other quants). */
static void store_q8_0(uint8_t *dst, const float *src, int32_t n) {
    for (int32_t e0 = 0; e0 < n; e0 += HSD_ATTN_Q8_BLOCK, dst += HSD_ATTN_Q8_BYTES) {
        float x[HSD_ATTN_Q8_BLOCK] = {0};
        const int32_t ne = n - e0 < HSD_ATTN_Q8_BLOCK ? n - e0 : HSD_ATTN_Q8_BLOCK;
        memcpy(x, src + e0, (size_t)ne * sizeof(float));
        hsd_q8_0 b;
        hsd_quant_q8_0(x, HSD_ATTN_Q8_BLOCK, &b);
        const uint16_t h = hsd_fp32_to_fp16(b.d); /* b.d is an fp16 value: exact */
        memcpy(dst, &h, 2);
        memcpy(dst + 2, b.qs, HSD_ATTN_Q8_BLOCK);
    }
}

void hsd_attn_store(hsd_dtype type, void *dst, const float *src, int32_t n) {
    uint16_t *h = dst;
    if (type == HSD_DT_Q8_0) {
        store_q8_0(dst, src, n);
    } else if (type == HSD_DT_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
    } else if (type == HSD_DT_F16) {
#ifdef HSD_ATTN_X86
        /* F16C's conversion rounds to nearest even as hsd_fp32_to_fp16 does: the same bits */
        if (hsd_cpu_level_active() >= HSD_CPU_AVX2) {
            store_f16_avx2(h, src, n);
            return;
        }
#endif
        for (int32_t i = 0; i < n; i++) h[i] = hsd_fp32_to_fp16(src[i]);
    } else {
        for (int32_t i = 0; i < n; i++) h[i] = hsd_fp32_to_bf16(src[i]);
    }
}
