/* The body of the streaming attention kernel, included once per CPU kernel level by
 * kernels/attention.c with these defined:
 *   SFX           name suffix (scalar, avx2, avx512)
 *   ATTR          the level's target attribute (empty for scalar)
 *   W             vector width in floats (1 for scalar); HSD_ATTN_BLOCK is a multiple of it
 *   VT            vector type; VZERO, VSET1(x), VLOAD(p), VSTORE(p, v), VFMA(a, b, c) = a*b+c,
 *                 VMUL(a, b), VSUB(a, b), VADD(a, b), VMAX(a, b), VHSUM(v) and VHMAX(v) (to
 *                 float, a fixed reduction tree), VEXP(v)
 *   VREDUCE(a)    a[0..W) to one vector whose lane i is the sum of a[i]'s lanes (a fixed tree)
 *   KLOAD(type, row, hd, d)  elements d..d+W of the cache row at row (bytes) of hd elements
 *                 as fp32 (type a constant where it is used, so that the loops specialise per
 *                 cache type)
 *   KSCALES(row, b, n, sc), KQ8(row, hd, d, sc)  the scales of a Q8_0 row's blocks b..b+n
 *                 (n <= 4) broadcast into sc[0..n), and its elements d..d+W (within one block)
 *                 times a scale: KLOAD with the scales read once
 *   scores_q8_SFX(R, qq, kp, hd, j0, j1, scale, s)  scores against Q8_0 keys from the
 *                 quantised query rows qq (kernels/attention.c)
 * One arithmetic per level: every row goes through the same steps whatever shares its call.
 * The body undefines all of them at its end, ready for the next level. */

#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)

/* exp(x) of one value through the same vector polynomial (the running-max correction). */
ATTR static float CAT(exp_one, SFX)(float x) {
    float b[W];
    for (int32_t i = 0; i < W; i++) b[i] = x;
    VSTORE(b, VEXP(VLOAD(b)));
    return b[0];
}

/* s_r[j] = scale * q_r·k_j for the R rows of a group (rows with the same visible range),
 * j in [j0, j1) (multiples of W), keys read from the cache rows kp[j] and converted on the
 * fly, once for all R rows: P = W / R positions at a time, accumulator p·R + r for position
 * j + p and row r, each an FMA chain over the head dimension, the W accumulators reduced into
 * one vector by a fixed tree. The tree sums every accumulator's lanes in the same order
 * whatever its slot, so a score's bits depend only on q_r and k_j: not on R, on the other
 * rows or on the lane it occupies (the batch invariance of kernels/attention.h). */
ATTR static inline __attribute__((always_inline)) void
CAT(scores_t, SFX)(const hsd_dtype t, const int R, const float *const *q,
                   const uint8_t *const *kp, int32_t hd, int32_t j0, int32_t j1, float scale,
                   float *const *s, uintptr_t pf, size_t rb) {
    const VT sc = VSET1(scale);
    const int P = W / R;
    for (int32_t j = j0; j < j1; j += P) {
        if (pf)
            for (int p = 0; p < P; p++)
                for (size_t o = 0; o < rb; o += 64) __builtin_prefetch((const void *)(pf + (size_t)(j + p) * rb + o), 0, ATTN_PF_LOC);
        VT a[W];
#pragma GCC unroll 16
        for (int32_t i = 0; i < W; i++) a[i] = VZERO;
        for (int32_t d = 0; d < hd; d += W) {
#pragma GCC unroll 16
            for (int p = 0; p < P; p++) {
                const VT k = KLOAD(t, kp[j + p], hd, d);
#pragma GCC unroll 16
                for (int r = 0; r < R; r++) a[p * R + r] = VFMA(VLOAD(q[r] + d), k, a[p * R + r]);
            }
        }
        float o[W];
        VSTORE(o, VMUL(VREDUCE(a), sc));
#pragma GCC unroll 16
        for (int p = 0; p < P; p++)
#pragma GCC unroll 16
            for (int r = 0; r < R; r++) s[r][j + p] = o[p * R + r];
    }
}

/* scores_t with the type and the group size as constants (R a power of two dividing W) */
#define SCORES_R(t, R)                                                                        \
    case R:                                                                                   \
        CAT(scores_t, SFX)(t, R, q, kp, hd, j0, j1, scale, s, pf, rb);                        \
        return
#if W >= 16
#define SCORES_TYPE(t) switch (R) { SCORES_R(t, 1); SCORES_R(t, 2); SCORES_R(t, 4); SCORES_R(t, 8); SCORES_R(t, 16); }
#elif W >= 8
#define SCORES_TYPE(t) switch (R) { SCORES_R(t, 1); SCORES_R(t, 2); SCORES_R(t, 4); SCORES_R(t, 8); }
#else
#define SCORES_TYPE(t) switch (R) { SCORES_R(t, 1); }
#endif
/* X(type) with the cache type as a constant, so that each loop specialises per type */
#ifndef HSD_ATTN_BY_TYPE
#define HSD_ATTN_BY_TYPE(t, X)                                                                \
    switch (t) {                                                                              \
    case HSD_DT_F16: X(HSD_DT_F16); break;                                                    \
    case HSD_DT_BF16: X(HSD_DT_BF16); break;                                                  \
    case HSD_DT_Q8_0: X(HSD_DT_Q8_0); break;                                                  \
    default: X(HSD_DT_F32); break;                                                            \
    }
#endif
/* The float caches only: Q8_0 keys go to scores_q8 (the query quantised, integer dots), so
 * no Q8_0 copy of these loops is built. */
ATTR static void CAT(scores, SFX)(hsd_dtype t, int R, const float *const *q,
                                  const uint8_t *const *kp, int32_t hd, int32_t j0, int32_t j1,
                                  float scale, float *const *s, uintptr_t pf, size_t rb) {
    switch (t) {
    case HSD_DT_F16: SCORES_TYPE(HSD_DT_F16); break;
    case HSD_DT_BF16: SCORES_TYPE(HSD_DT_BF16); break;
    default: SCORES_TYPE(HSD_DT_F32); break;
    }
}
#undef SCORES_TYPE
#undef SCORES_R

/* The S vectors of the value row vrow from vector v0 on, as fp32. v0 is a multiple of 8, so
 * that for a Q8_0 row v0 · W starts a block where W >= 4 (and with W = 1 the S <= 8 elements
 * lie in one block): each block's scale is read once. */
ATTR static inline __attribute__((always_inline)) void
CAT(vload, SFX)(const hsd_dtype t, const int S, VT *v, const uint8_t *vrow, int32_t hd, int32_t v0) {
    if (t == HSD_DT_Q8_0) {
        /* the blocks the S vectors cover (at most 4: S <= 8, W <= 16), their scales at once */
        const int nbk = W >= 4 ? (S * W + HSD_ATTN_Q8_BLOCK - 1) / HSD_ATTN_Q8_BLOCK : 1;
        VT sc[4];
        KSCALES(vrow, v0 * W / HSD_ATTN_Q8_BLOCK, nbk, sc);
#pragma GCC unroll 8
        for (int u = 0; u < S; u++) v[u] = KQ8(vrow, hd, (v0 + u) * W, sc[W >= 4 ? u * W / HSD_ATTN_Q8_BLOCK : 0]);
        return;
    }
#pragma GCC unroll 8
    for (int u = 0; u < S; u++) v[u] = KLOAD(t, vrow, hd, (v0 + u) * W);
}

/* a[r][0..S) += p_r[j] · the S vectors of the value row vrow from vector v0 on */
ATTR static inline __attribute__((always_inline)) void
CAT(accum_pos, SFX)(const hsd_dtype t, const int R, const int S, VT (*a)[8], float *const *p,
                    const uint8_t *vrow, int32_t hd, int32_t j, int32_t v0) {
    VT v[8];
    CAT(vload, SFX)(t, S, v, vrow, hd, v0);
#pragma GCC unroll 2
    for (int r = 0; r < R; r++) {
        const VT pv = VSET1(p[r][j]);
#pragma GCC unroll 8
        for (int u = 0; u < S; u++) a[r][u] = VFMA(pv, v[u], a[r][u]);
    }
}

/* out_r[0..hd) += sum_{j in [j0, j1)} p_r[j] v_j for R <= 2 rows sharing the range, the
 * values read from the cache rows vp[j] and converted on the fly, once for both rows. Each
 * element is an FMA chain over the positions in order, vectorised over the head dimension,
 * eight vectors of the dimension at a time (independent chains: an FMA's latency is four
 * cycles, two issue a cycle); where four vectors are left (a dimension of 4 vectors mod 8),
 * those have two chains each, the positions alternating between them from j0, added at the
 * end of the block. Which chain a term goes to depends only on the head dimension and the
 * row's own range in the block, never on what else shares the call. */
ATTR static inline __attribute__((always_inline)) void
CAT(accum_t, SFX)(const hsd_dtype t, const int R, float *const *out, float *const *p,
                  const uint8_t *const *vp, int32_t hd, int32_t j0, int32_t j1, uintptr_t pf, size_t rb) {
    const int32_t nv = hd / W;
    int32_t v0 = 0;
    /* the stream ahead: once per position, with the first pass over the dimension */
#define ACC_PF(j) \
    do { if (pf && v0 == 0) for (size_t o_ = 0; o_ < rb; o_ += 64) __builtin_prefetch((const void *)(pf + (size_t)(j) * rb + o_), 0, ATTN_PF_LOC); } while (0)
    for (; v0 + 8 <= nv; v0 += 8) {
        VT a[2][8];
#pragma GCC unroll 2
        for (int r = 0; r < R; r++)
#pragma GCC unroll 8
            for (int u = 0; u < 8; u++) a[r][u] = VLOAD(out[r] + (v0 + u) * W);
        for (int32_t j = j0; j < j1; j++) {
            ACC_PF(j);
            CAT(accum_pos, SFX)(t, R, 8, a, p, vp[j], hd, j, v0);
        }
#pragma GCC unroll 2
        for (int r = 0; r < R; r++)
#pragma GCC unroll 8
            for (int u = 0; u < 8; u++) VSTORE(out[r] + (v0 + u) * W, a[r][u]);
    }
    if (nv - v0 == 4) {
        VT a[2][8], b[2][4];
#pragma GCC unroll 2
        for (int r = 0; r < R; r++)
#pragma GCC unroll 4
            for (int u = 0; u < 4; u++) a[r][u] = VLOAD(out[r] + (v0 + u) * W), b[r][u] = VZERO;
        int32_t j = j0;
        for (; j + 1 < j1; j += 2) {
            ACC_PF(j);
            ACC_PF(j + 1);
            VT va[4], vb[4];
            CAT(vload, SFX)(t, 4, va, vp[j], hd, v0);
            CAT(vload, SFX)(t, 4, vb, vp[j + 1], hd, v0);
#pragma GCC unroll 2
            for (int r = 0; r < R; r++) {
                const VT pa = VSET1(p[r][j]), pb = VSET1(p[r][j + 1]);
#pragma GCC unroll 4
                for (int u = 0; u < 4; u++) {
                    a[r][u] = VFMA(pa, va[u], a[r][u]);
                    b[r][u] = VFMA(pb, vb[u], b[r][u]);
                }
            }
        }
        if (j < j1) {
            ACC_PF(j);
            CAT(accum_pos, SFX)(t, R, 4, a, p, vp[j], hd, j, v0);
        }
#pragma GCC unroll 2
        for (int r = 0; r < R; r++)
#pragma GCC unroll 4
            for (int u = 0; u < 4; u++) VSTORE(out[r] + (v0 + u) * W, VADD(a[r][u], b[r][u]));
        return;
    }
    for (; v0 < nv; v0++) {
        VT a[2];
#pragma GCC unroll 2
        for (int r = 0; r < R; r++) a[r] = VLOAD(out[r] + v0 * W);
        for (int32_t j = j0; j < j1; j++) {
            ACC_PF(j);
            const VT v = KLOAD(t, vp[j], hd, v0 * W);
#pragma GCC unroll 2
            for (int r = 0; r < R; r++) a[r] = VFMA(VSET1(p[r][j]), v, a[r]);
        }
#pragma GCC unroll 2
        for (int r = 0; r < R; r++) VSTORE(out[r] + v0 * W, a[r]);
    }
}

#undef ACC_PF
#define ACCUM_TYPE(t)                                                                         \
    if (R == 2) CAT(accum_t, SFX)(t, 2, out, p, vp, hd, j0, j1, pf, rb);                      \
    else CAT(accum_t, SFX)(t, 1, out, p, vp, hd, j0, j1, pf, rb)
ATTR static void CAT(accum, SFX)(hsd_dtype t, int R, float *const *out, float *const *p,
                                 const uint8_t *const *vp, int32_t hd, int32_t j0, int32_t j1,
                                 uintptr_t pf, size_t rb) {
    HSD_ATTN_BY_TYPE(t, ACCUM_TYPE)
}
#undef ACCUM_TYPE

ATTR static void CAT(attn_rows, SFX)(const hsd_attn_kv *kv, const hsd_attn_row *rows,
                                     int32_t n_rows, float scale, float softcap, float *scratch) {
    const int32_t hd = kv->hd, B = HSD_ATTN_BLOCK;
    const size_t rb = hsd_attn_row_bytes(kv->type, hd);
    /* a Q4_0 cache is read as the Q8_0 blocks it equals (kernels/attention.h): rt is the type
     * of the rows the row kernels read, cb their bytes */
    const bool q4 = kv->type == HSD_DT_Q4_0;
    const hsd_dtype rt = q4 ? HSD_DT_Q8_0 : kv->type;
    const size_t cb = hsd_attn_row_bytes(rt, hd);
    /* scratch: a zero cache row (the keys of lanes outside a block's range: their scores are
     * masked, zeros keep them finite), one score row per row, and for a Q8_0 cache the
     * quantised query rows (kernels/attention.c) */
    float *zero = scratch, *s0 = zero + hd + 16;
    float *mx = s0 + (size_t)n_rows * (B + 16), *sum = mx + n_rows;
    uint8_t *qq = (uint8_t *)(((uintptr_t)(sum + n_rows) + 63) & ~(uintptr_t)63);
    const size_t qstride = attn_q8_stride(hd);
    /* a tiled cache's keys and values of the block, copied out (rows, or gathered tiles) */
    uint8_t *kcopy = qq + (size_t)n_rows * qstride, *vcopy = kcopy + (size_t)B * cb;
    const bool tiled = attn_in_tiles(kv->type, kv->tiled);
#ifdef SCORES_Q8_TILES
    /* the tile kernels read the tiles; otherwise (another level, a head dimension they do not
     * take) the block's positions are copied back into rows */
    const bool fast = tiled && hd <= 256;
    const uint8_t *tp[HSD_ATTN_BLOCK / HSD_ATTN_KVTILE], *vtp[HSD_ATTN_BLOCK / HSD_ATTN_KVTILE];
#else
    const bool fast = false;
#endif
    memset(zero, 0, cb);
    if (rt == HSD_DT_Q8_0)
        for (int32_t r = 0; r < n_rows; r++) attn_q8_query(rows[r].q, hd, qq + (size_t)r * qstride);
    int32_t lo = rows[0].first, hi = rows[0].last;
    for (int32_t r = 0; r < n_rows; r++) {
        lo = rows[r].first < lo ? rows[r].first : lo;
        hi = rows[r].last > hi ? rows[r].last : hi;
        mx[r] = -INFINITY, sum[r] = 0.0f;
        memset(rows[r].out, 0, (size_t)hd * sizeof(float));
    }
    const uint8_t *kb = kv->k, *vb = kv->v;
    const uint8_t *kp[HSD_ATTN_BLOCK], *vp[HSD_ATTN_BLOCK];
    /* The float caches on AMD (attn_spread_on, kernels/attention.c): the cache rows
     * ATTN_PF_AHEAD blocks ahead are asked for one position at a time inside the score and
     * value loops, into L2, so that the requests go out between the arithmetic; only the
     * call's first blocks go out in one burst. Elsewhere every block's rows are asked for in
     * one burst at its start. */
    const bool spread = !tiled && rt != HSD_DT_Q8_0 && attn_spread_on();
    const int32_t first_b = lo / B * B;
    const uintptr_t ahead = (size_t)ATTN_PF_AHEAD * B * rb; /* bytes */
    for (int32_t b0 = first_b; b0 <= hi; b0 += B) {
        const int32_t bs = b0 > lo ? b0 : lo, be = b0 + B <= hi + 1 ? b0 + B : hi + 1;
        /* the block's cache rows, read in place (converted to fp32 in registers) by every row
         * of the call; keys outside the block's range read as the zero row. Every line of
         * the block's rows is asked for first: the loops below read a few lines at a time
         * between their arithmetic, too few misses in flight to stream from memory (with
         * these prefetches, decode at depth 2,048 of the qwen3-0.6b shape took 55 ms instead
         * of 59-60, bench/notes/attention.md) */
        for (int32_t j = 0; j < B; j++) {
            const int32_t p = b0 + j;
            if (p < bs || p >= be) {
                kp[j] = (const uint8_t *)zero, vp[j] = NULL;
                continue;
            }
            const size_t phys = (kv->map && p >= kv->L) ? (size_t)kv->L + kv->map[p - kv->L] : (size_t)p;
            if (tiled) {
                if (!fast) {
                    const int lane = (int)(phys % HSD_ATTN_KVTILE);
                    kp[j] = kcopy + (size_t)j * cb, vp[j] = vcopy + (size_t)j * cb;
                    attn_tile_get(kv->type, false, attn_tile_of(kb, (int32_t)phys, rb), lane, hd, kcopy + (size_t)j * cb);
                    attn_tile_get(kv->type, true, attn_tile_of(vb, (int32_t)phys, rb), lane, hd, vcopy + (size_t)j * cb);
                }
                continue;
            }
            vp[j] = vb + phys * rb;
            kp[j] = kb + phys * rb;
            if (spread && b0 > first_b) continue;
            if (spread) /* the blocks up to where the loops' stream starts (addresses formed as
                         * integers: past the cache's end a prefetch is only a no-op) */
                for (int32_t a = 1; a < ATTN_PF_AHEAD; a++)
                    for (size_t o = 0; o < rb; o += 64)
                        __builtin_prefetch((const void *)((uintptr_t)vp[j] + (size_t)a * B * rb + o), 0, 3),
                        __builtin_prefetch((const void *)((uintptr_t)kp[j] + (size_t)a * B * rb + o), 0, 3);
            for (size_t o = 0; o < rb; o += 64) __builtin_prefetch(vp[j] + o, 0, 3);
            __builtin_prefetch(vp[j] + rb - 1, 0, 3);
            for (size_t o = 0; o < rb; o += 64) __builtin_prefetch(kp[j] + o, 0, 3);
            __builtin_prefetch(kp[j] + rb - 1, 0, 3);
        }
        /* the loops' stream ahead, where this block has one (the call's first rows ask) */
        const uintptr_t kpf = spread && b0 + ATTN_PF_AHEAD * B <= hi ? (uintptr_t)kb + (size_t)b0 * rb + ahead : 0;
        const uintptr_t vpf = kpf ? (uintptr_t)vb + (size_t)b0 * rb + ahead : 0;
#ifdef SCORES_Q8_TILES
        if (fast)
            for (int32_t u = 0; u < B / HSD_ATTN_KVTILE; u++) {
                const int32_t P0 = b0 + u * HSD_ATTN_KVTILE;
                tp[u] = attn_block_tile(kv, false, rb, P0, bs, be, kcopy + (size_t)u * HSD_ATTN_KVTILE * rb);
                vtp[u] = attn_block_tile(kv, true, rb, P0, bs, be, vcopy + (size_t)u * HSD_ATTN_KVTILE * rb);
            }
#endif
        /* groups of consecutive rows with the same range (a token's query heads under GQA)
         * share their key loads: power-of-two parts of at most W rows */
        for (int32_t g = 0, ge; g < n_rows; g = ge) {
            for (ge = g + 1; ge < n_rows && rows[ge].first == rows[g].first && rows[ge].last == rows[g].last;) ge++;
            const int32_t r0 = rows[g].first > b0 ? rows[g].first : b0;
            const int32_t r1 = rows[g].last + 1 < be ? rows[g].last + 1 : be;
            if (r1 <= r0) continue;
            const int32_t j0 = r0 - b0, j1 = r1 - b0; /* the rows' lanes in the block */
            const int32_t g0 = j0 / W * W, g1 = (j1 + W - 1) / W * W; /* whole vectors */
            for (int32_t r = g; r < ge;) {
                int R = W;
                while (R > ge - r) R /= 2;
                const float *q[W];
                const uint8_t *qr[W];
                float *sr[W];
                for (int i = 0; i < R; i++)
                    q[i] = rows[r + i].q, qr[i] = qq + (size_t)(r + i) * qstride,
                    sr[i] = s0 + (size_t)(r + i) * (B + 16);
#ifdef SCORES_Q8_TILES
                if (fast && q4)
                    SCORES_Q4_TILES(R, qr, tp, hd, g0, g1, scale, sr);
                else if (fast)
                    SCORES_Q8_TILES(R, qr, tp, hd, g0, g1, scale, sr);
                else
#endif
                if (rt == HSD_DT_Q8_0)
                    CAT(scores_q8, SFX)(R, qr, kp, hd, g0, g1, scale, sr);
                else
                    CAT(scores, SFX)(kv->type, R, q, kp, hd, g0, g1, scale, sr, r == 0 ? kpf : 0, rb);
                r += R;
            }
            for (int32_t r = g; r < ge; r++) {
                const hsd_attn_row *rw = &rows[r];
                float *s = s0 + (size_t)r * (B + 16);
                for (int32_t j = g0; j < j0; j++) s[j] = -INFINITY;
                for (int32_t j = j1; j < g1; j++) s[j] = -INFINITY;
                if (softcap > 0)
                    for (int32_t j = j0; j < j1; j++) s[j] = softcap * tanhf(s[j] / softcap);
                VT mv = VLOAD(s + g0);
                for (int32_t j = g0 + W; j < g1; j += W) mv = VMAX(mv, VLOAD(s + j));
                const float mb = VHMAX(mv);
                if (mb > mx[r]) { /* the running max grows: rescale what is summed so far */
                    if (mx[r] != -INFINITY) {
                        const float c = CAT(exp_one, SFX)(mx[r] - mb);
                        const VT cv = VSET1(c);
                        for (int32_t d = 0; d < hd; d += W) VSTORE(rw->out + d, VMUL(VLOAD(rw->out + d), cv));
                        sum[r] *= c;
                    }
                    mx[r] = mb;
                }
                /* p_j = exp(s_j - max) over the whole vectors (masked lanes: exp(-inf) = 0) */
                const VT m = VSET1(mx[r]);
                VT sv = VZERO;
                for (int32_t j = g0; j < g1; j += W) {
                    const VT p = VEXP(VSUB(VLOAD(s + j), m));
                    VSTORE(s + j, p);
                    sv = VADD(sv, p);
                }
                sum[r] += VHSUM(sv);
            }
            /* the values: pairs of rows share each converted vector */
            for (int32_t r = g; r < ge; r += 2) {
                const int R = ge - r >= 2 ? 2 : 1;
                float *o[2] = {rows[r].out, R == 2 ? rows[r + 1].out : NULL};
                float *pr[2] = {s0 + (size_t)r * (B + 16), R == 2 ? s0 + (size_t)(r + 1) * (B + 16) : NULL};
#ifdef ACCUM_Q8_TILES
                if (fast && q4)
                    ACCUM_Q4_TILES(R, o, pr, vtp, hd, j0, j1);
                else if (fast)
                    ACCUM_Q8_TILES(R, o, pr, vtp, hd, j0, j1);
                else
#endif
                    CAT(accum, SFX)(rt, R, o, pr, vp, hd, j0, j1, r == 0 ? vpf : 0, rb);
            }
        }
    }
    for (int32_t r = 0; r < n_rows; r++) {
        const VT inv = VSET1(1.0f / sum[r]);
        for (int32_t d = 0; d < hd; d += W) VSTORE(rows[r].out + d, VMUL(VLOAD(rows[r].out + d), inv));
    }
}

#undef CAT
#undef CAT_
#undef SFX
#undef ATTR
#undef W
#undef VT
#undef VZERO
#undef VSET1
#undef VLOAD
#undef VSTORE
#undef VFMA
#undef VMUL
#undef VSUB
#undef VADD
#undef VMAX
#undef VHSUM
#undef VHMAX
#undef VEXP
#undef VREDUCE
#undef KLOAD
#undef KSCALES
#undef KQ8
#undef SCORES_Q8_TILES
#undef ACCUM_Q8_TILES
#undef SCORES_Q4_TILES
#undef ACCUM_Q4_TILES
