/* Streaming attention (kernels/attention.h): one body (kernels/attention_body.h) compiled for
 * the scalar, AVX2 and AVX-512 levels; the level comes from the one CPU probe
 * (kernels/cpu_features.h) and falls back a level where the head dimension is not a multiple
 * of the vector width. */
#include "kernels/attention.h"

#include <math.h>
#include <string.h>

#include "kernels/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "kernels/simd_exp.h"
#define HSD_ATTN_X86 1
#endif

size_t hsd_attn_elem_bytes(hsd_dtype type) {
    return type == HSD_DT_F32 ? 4 : 2;
}

size_t hsd_attn_scratch_floats(int32_t hd, int32_t n_rows) {
    return 2 * (size_t)HSD_ATTN_BLOCK * hd + HSD_ATTN_BLOCK + 16 + 2 * (size_t)n_rows;
}

/* ---- scalar ---------------------------------------------------------------------------- */

static void convert_scalar(hsd_dtype t, const void *src, float *dst, int32_t n) {
    const uint16_t *h = src;
    if (t == HSD_DT_F32) memcpy(dst, src, (size_t)n * sizeof(float));
    else if (t == HSD_DT_F16)
        for (int32_t i = 0; i < n; i++) dst[i] = hsd_fp16_to_fp32(h[i]);
    else
        for (int32_t i = 0; i < n; i++) dst[i] = hsd_bf16_to_fp32(h[i]);
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
#define VHSUM(v) (v)
#define VEXP(v) expf(v)
#define CONVERT convert_scalar
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

HSD_AVX2 static void convert_avx2(hsd_dtype t, const void *src, float *dst, int32_t n) {
    if (t == HSD_DT_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    const __m128i *h = src;
    for (int32_t i = 0; i < n; i += 8) {
        __m128i x = _mm_loadu_si128(h + i / 8);
        __m256 f = t == HSD_DT_F16 ? _mm256_cvtph_ps(x)
                                   : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(x), 16));
        _mm256_storeu_ps(dst + i, f);
    }
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
#define VHSUM(v) attn_hsum8(v)
#define VEXP(v) hsd_exp8(v)
#define CONVERT convert_avx2
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

HSD_AVX512 static void convert_avx512(hsd_dtype t, const void *src, float *dst, int32_t n) {
    if (t == HSD_DT_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    const __m256i *h = src;
    for (int32_t i = 0; i < n; i += 16) {
        __m256i x = _mm256_loadu_si256(h + i / 16);
        __m512 f = t == HSD_DT_F16 ? _mm512_cvtph_ps(x)
                                   : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(x), 16));
        _mm512_storeu_ps(dst + i, f);
    }
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
#define VHSUM(v) attn_hsum16(v)
#define VEXP(v) hsd_exp16(v)
#define CONVERT convert_avx512
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

void hsd_attn_store(hsd_dtype type, void *dst, const float *src, int32_t n) {
    uint16_t *h = dst;
    if (type == HSD_DT_F32) {
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
