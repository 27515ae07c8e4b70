/* The body of the streaming attention kernel, included once per CPU kernel level by
 * kernels/attention.c with these defined:
 *   SFX           name suffix (scalar, avx2, avx512)
 *   ATTR          the level's target attribute (empty for scalar)
 *   W             vector width in floats (1 for scalar); HSD_ATTN_BLOCK is a multiple of it
 *   VT            vector type; VZERO, VSET1(x), VLOAD(p), VSTORE(p, v), VFMA(a, b, c) = a*b+c,
 *                 VMUL(a, b), VSUB(a, b), VADD(a, b), VMAX(a, b), VHSUM(v) and VHMAX(v) (to
 *                 float, a fixed reduction tree), VEXP(v)
 *   VREDUCE(a)    a[0..W) to one vector whose lane i is the sum of a[i]'s lanes (a fixed tree)
 *   CONVERT(type, src, dst, nrows, hd)   nrows consecutive cache rows of hd elements to fp32
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

/* s[j0..j1) = scale * q·k_j for the block's keys kb ([B][hd] fp32), j0 and j1 multiples of W:
 * W positions at a time, one accumulator per position vectorised over the head dimension
 * (W independent FMA chains), the W accumulators reduced into one vector of W scores by a
 * fixed tree. A score's arithmetic depends only on q and its key, never on the lane it
 * occupies or on the other positions. */
ATTR static void CAT(scores, SFX)(const float *q, const float *kb, int32_t hd, int32_t j0,
                                  int32_t j1, float scale, float *s) {
    const VT sc = VSET1(scale);
    for (int32_t j = j0; j < j1; j += W) {
        VT a[W];
        const float *k = kb + (size_t)j * hd;
#pragma GCC unroll 16
        for (int32_t i = 0; i < W; i++) a[i] = VZERO;
        for (int32_t d = 0; d < hd; d += W) {
            const VT qv = VLOAD(q + d);
#pragma GCC unroll 16
            for (int32_t i = 0; i < W; i++) a[i] = VFMA(qv, VLOAD(k + (size_t)i * hd + d), a[i]);
        }
        VSTORE(s + j, VMUL(VREDUCE(a), sc));
    }
}

/* out[0..hd) += sum_{j in [j0, j1)} p_j v_j, vectorised over the head dimension with eight
 * independent FMA chains (an FMA's latency is four cycles, two issue a cycle): eight vectors
 * of the dimension at a time, or where the dimension has only four, four vectors with the
 * positions alternating between two sets of accumulators (added at the end of the block).
 * Which chain an element's terms go to depends only on the head dimension and the row's own
 * range in the block, never on what else shares the call. */
ATTR static void CAT(accum, SFX)(float *out, const float *p, const float *vb, int32_t hd,
                                 int32_t j0, int32_t j1) {
    const int32_t nv = hd / W;
    int32_t v0 = 0;
    for (; v0 + 8 <= nv; v0 += 8) {
        float *o = out + (size_t)v0 * W;
        VT a[8];
#pragma GCC unroll 8
        for (int32_t u = 0; u < 8; u++) a[u] = VLOAD(o + u * W);
        for (int32_t j = j0; j < j1; j++) {
            const VT pv = VSET1(p[j]);
            const float *v = vb + (size_t)j * hd + (size_t)v0 * W;
#pragma GCC unroll 8
            for (int32_t u = 0; u < 8; u++) a[u] = VFMA(pv, VLOAD(v + u * W), a[u]);
        }
#pragma GCC unroll 8
        for (int32_t u = 0; u < 8; u++) VSTORE(o + u * W, a[u]);
    }
    if (nv - v0 == 4) {
        float *o = out + (size_t)v0 * W;
        VT a[4], b[4];
#pragma GCC unroll 4
        for (int32_t u = 0; u < 4; u++) a[u] = VLOAD(o + u * W), b[u] = VZERO;
        int32_t j = j0;
        for (; j + 1 < j1; j += 2) {
            const VT pa = VSET1(p[j]), pb = VSET1(p[j + 1]);
            const float *v = vb + (size_t)j * hd + (size_t)v0 * W;
#pragma GCC unroll 4
            for (int32_t u = 0; u < 4; u++) {
                a[u] = VFMA(pa, VLOAD(v + u * W), a[u]);
                b[u] = VFMA(pb, VLOAD(v + hd + u * W), b[u]);
            }
        }
        if (j < j1) {
            const VT pa = VSET1(p[j]);
            const float *v = vb + (size_t)j * hd + (size_t)v0 * W;
#pragma GCC unroll 4
            for (int32_t u = 0; u < 4; u++) a[u] = VFMA(pa, VLOAD(v + u * W), a[u]);
        }
#pragma GCC unroll 4
        for (int32_t u = 0; u < 4; u++) VSTORE(o + u * W, VADD(a[u], b[u]));
        return;
    }
    for (; v0 < nv; v0++) {
        VT a = VLOAD(out + (size_t)v0 * W);
        for (int32_t j = j0; j < j1; j++)
            a = VFMA(VSET1(p[j]), VLOAD(vb + (size_t)j * hd + (size_t)v0 * W), a);
        VSTORE(out + (size_t)v0 * W, a);
    }
}

ATTR static void CAT(attn_rows, SFX)(const hsd_attn_kv *kv, const hsd_attn_row *rows,
                                     int32_t n_rows, float scale, float softcap, float *scratch) {
    const int32_t hd = kv->hd, B = HSD_ATTN_BLOCK;
    const size_t rb = hsd_attn_row_bytes(kv->type, hd);
    float *kf = scratch, *vf = kf + (size_t)B * hd, *s = vf + (size_t)B * hd;
    float *mx = s + B + 16, *sum = mx + n_rows;
    int32_t lo = rows[0].first, hi = rows[0].last;
    for (int32_t r = 0; r < n_rows; r++) {
        lo = rows[r].first < lo ? rows[r].first : lo;
        hi = rows[r].last > hi ? rows[r].last : hi;
        mx[r] = -INFINITY, sum[r] = 0.0f;
        memset(rows[r].out, 0, (size_t)hd * sizeof(float));
    }
    const uint8_t *kb = kv->k, *vb = kv->v;
    for (int32_t b0 = lo / B * B; b0 <= hi; b0 += B) {
        const int32_t bs = b0 > lo ? b0 : lo, be = b0 + B <= hi + 1 ? b0 + B : hi + 1;
        /* the block's keys and values, once for every row of the call: a whole F32 block of
         * consecutive positions is read in place, others converted (or gathered) to fp32 */
        const float *kbf = kf, *vbf = vf;
        if (kv->type == HSD_DT_F32 && bs == b0 && be == b0 + B && (!kv->map || be <= kv->L)) {
            kbf = (const float *)kb + (size_t)b0 * hd, vbf = (const float *)vb + (size_t)b0 * hd;
        } else {
            for (int32_t p = bs; p < be;) {
                int32_t run = be - p; /* a run of physically consecutive positions */
                size_t phys = (size_t)p;
                if (kv->map && p >= kv->L) phys = (size_t)kv->L + kv->map[p - kv->L], run = 1;
                else if (kv->map && p + run > kv->L) run = kv->L - p;
                CONVERT(kv->type, kb + phys * rb, kf + (size_t)(p - b0) * hd, run, hd);
                CONVERT(kv->type, vb + phys * rb, vf + (size_t)(p - b0) * hd, run, hd);
                p += run;
            }
            /* keys of the vectors' lanes outside the block's range: scores computed for them
             * are masked below, zeros keep them finite */
            const int32_t zlo = (bs - b0) / W * W, zhi = (be - b0 + W - 1) / W * W;
            if (bs - b0 > zlo) memset(kf + (size_t)zlo * hd, 0, (size_t)(bs - b0 - zlo) * hd * sizeof(float));
            if (zhi > be - b0) memset(kf + (size_t)(be - b0) * hd, 0, (size_t)(zhi - (be - b0)) * hd * sizeof(float));
        }
        for (int32_t r = 0; r < n_rows; r++) {
            const hsd_attn_row *rw = &rows[r];
            const int32_t r0 = rw->first > b0 ? rw->first : b0;
            const int32_t r1 = rw->last + 1 < be ? rw->last + 1 : be;
            if (r1 <= r0) continue;
            const int32_t j0 = r0 - b0, j1 = r1 - b0; /* the row's lanes in the block */
            const int32_t g0 = j0 / W * W, g1 = (j1 + W - 1) / W * W; /* whole vectors */
            CAT(scores, SFX)(rw->q, kbf, hd, g0, g1, scale, s);
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
            CAT(accum, SFX)(rw->out, s, vbf, hd, j0, j1);
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
#undef CONVERT
