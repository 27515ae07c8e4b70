/* The body of the streaming attention kernel, included once per CPU kernel level by
 * kernels/attention.c with these defined:
 *   SFX           name suffix (scalar, avx2, avx512)
 *   ATTR          the level's target attribute (empty for scalar)
 *   W             vector width in floats (1 for scalar)
 *   VT            vector type; VZERO, VSET1(x), VLOAD(p), VSTORE(p, v), VFMA(a, b, c) = a*b+c,
 *                 VMUL(a, b), VSUB(a, b), VHSUM(v) (to float, a fixed reduction tree), VEXP(v)
 *   CONVERT(type, src, dst, n)   n cache elements (n a multiple of W) to fp32
 * One arithmetic per level: every row goes through the same steps whatever shares its call.
 * The body undefines all of them at its end, ready for the next level. */

#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)

/* s[0..n) = exp(s[0..n) - m), whole vectors (the buffer is padded to a multiple of W, the
 * pad lanes are computed and ignored): each lane runs the same polynomial, so a value's exp
 * does not depend on its lane or on n. */
ATTR static void CAT(exp_sub, SFX)(float *s, int32_t n, float m) {
    const VT mv = VSET1(m);
    for (int32_t j = 0; j < n; j += W) VSTORE(s + j, VEXP(VSUB(VLOAD(s + j), mv)));
}

/* exp(x) of one value through the same vector polynomial (the running-max correction). */
ATTR static float CAT(exp_one, SFX)(float x) {
    float b[W];
    for (int32_t i = 0; i < W; i++) b[i] = x;
    VSTORE(b, VEXP(VLOAD(b)));
    return b[0];
}

ATTR static void CAT(attn_rows, SFX)(const hsd_attn_kv *kv, const hsd_attn_row *rows,
                                     int32_t n_rows, float scale, float softcap, float *scratch) {
    const int32_t hd = kv->hd, B = HSD_ATTN_BLOCK;
    const size_t esz = hsd_attn_elem_bytes(kv->type);
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
        /* the block's keys and values, once for every row of the call: an F32 block of
         * consecutive positions is read in place, others converted (or gathered) to fp32 */
        const float *kbf = kf, *vbf = vf;
        if (kv->type == HSD_DT_F32 && (!kv->map || be <= kv->L)) {
            kbf = (const float *)kb + (size_t)b0 * hd, vbf = (const float *)vb + (size_t)b0 * hd;
        } else {
            for (int32_t p = bs; p < be;) {
                int32_t run = be - p; /* a run of physically consecutive positions */
                size_t phys = (size_t)p;
                if (kv->map && p >= kv->L) phys = (size_t)kv->L + kv->map[p - kv->L], run = 1;
                else if (kv->map && p + run > kv->L) run = kv->L - p;
                CONVERT(kv->type, kb + phys * hd * esz, kf + (size_t)(p - b0) * hd, run * hd);
                CONVERT(kv->type, vb + phys * hd * esz, vf + (size_t)(p - b0) * hd, run * hd);
                p += run;
            }
        }
        for (int32_t r = 0; r < n_rows; r++) {
            const hsd_attn_row *rw = &rows[r];
            const int32_t r0 = rw->first > b0 ? rw->first : b0;
            const int32_t r1 = rw->last + 1 < be ? rw->last + 1 : be, n = r1 - r0;
            if (n <= 0) continue;
            const float *kr = kbf + (size_t)(r0 - b0) * hd, *vr = vbf + (size_t)(r0 - b0) * hd;
            /* scores: one dot product per position, vectorised over the head dimension */
            for (int32_t j = 0; j < n; j++) {
                VT a = VZERO;
                for (int32_t d = 0; d < hd; d += W)
                    a = VFMA(VLOAD(rw->q + d), VLOAD(kr + (size_t)j * hd + d), a);
                s[j] = VHSUM(a) * scale;
            }
            if (softcap > 0)
                for (int32_t j = 0; j < n; j++) s[j] = softcap * tanhf(s[j] / softcap);
            float mb = s[0];
            for (int32_t j = 1; j < n; j++) mb = s[j] > mb ? s[j] : mb;
            if (mb > mx[r]) { /* the running max grows: rescale what is summed so far */
                if (mx[r] != -INFINITY) {
                    const float c = CAT(exp_one, SFX)(mx[r] - mb);
                    const VT cv = VSET1(c);
                    for (int32_t d = 0; d < hd; d += W) VSTORE(rw->out + d, VMUL(VLOAD(rw->out + d), cv));
                    sum[r] *= c;
                }
                mx[r] = mb;
            }
            for (int32_t j = n; j < n + W; j++) s[j] = mx[r]; /* pad lanes: finite */
            CAT(exp_sub, SFX)(s, n, mx[r]);
            for (int32_t j = 0; j < n; j++) sum[r] += s[j];
            /* out += sum_j p_j v_j in position order, vectorised over the head dimension */
            for (int32_t d = 0; d < hd; d += W) {
                VT acc = VLOAD(rw->out + d);
                for (int32_t j = 0; j < n; j++)
                    acc = VFMA(VSET1(s[j]), VLOAD(vr + (size_t)j * hd + d), acc);
                VSTORE(rw->out + d, acc);
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
#undef VHSUM
#undef VEXP
#undef CONVERT
