/* Losslessness of the acceptance rules (verify/verify.h) by Pearson chi-square tests on toy
 * vocabularies.
 *
 * Vocabularies are lists of surface byte strings; draft ids map to target ids by identical
 * bytes (as the engine does). Target p and drafter q are deterministic functions of the
 * context (the prefix is hashed into a seed and turned into logits, then temperature /
 * top-k / top-p through lib/engine/sample), so every position of a round has its own rows and the
 * test covers composition across rounds. For each rule (standard SD, union Alg 1, TLI Alg 4,
 * SLEM Alg 2) a small decoding loop generates until two tokens are committed; the law of the
 * first token and the joint law of the first two are compared with the exact target law
 * (p(t1) and p(t1) p(t2 | t1)). Negative controls (deliberately wrong rules) must fail the
 * same test, which shows the test has power. Greedy decoding must equal argmax decoding. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/rng.h"
#include "lib/engine/sample.h"
#include "tests/testutil.h"
#include "verify/verify.h"

#define MAXV 12  /* vocabulary entries */
#define MAXU 24  /* union space */
#define MAXK 3   /* drafts per round */
#define MAXM 8   /* SLEM candidates per round */
#define MAXCTX 64
#define NSAMP 20000
#define PMIN 1e-3

/* ---------------------------------------------------------------- chi-square ---------- */

/* Survival function and Pearson test: the shared implementations in tests/testutil.c. */
static double chi2_sf(double x, int df) { return hsd_test_chi2_pvalue(x, df); }

typedef struct {
    double stat, p;
    int df;
} chi2_res;

static chi2_res chi2_test(const long *obs, const double *prob, int n, long N) {
    chi2_res r;
    r.stat = hsd_test_chi2(obs, prob, n, N, &r.df);
    r.p = r.df > 0 ? chi2_sf(r.stat, r.df) : 1.0;
    return r;
}

/* ---------------------------------------------------------------- vocabularies -------- */

typedef struct {
    const char *name;
    int nt;
    const char *T[MAXV];
    int nd;
    const char *D[MAXV];
    /* derived by build_maps */
    int32_t map[MAXV];  /* draft id -> target id with identical bytes, or -1 */
    int32_t umap[MAXV]; /* draft id -> union-space id (target ids, then extras for D \ T) */
    int nu;
} vocab;

/* map[d] = the target id whose surface bytes equal draft d's, or -1. */
static void byte_map(const char *const *D, int nd, const char *const *T, int nt, int32_t *map) {
    for (int d = 0; d < nd; d++) {
        map[d] = -1;
        size_t ld = strlen(D[d]);
        for (int t = 0; t < nt; t++)
            if (strlen(T[t]) == ld && memcmp(T[t], D[d], ld) == 0) {
                map[d] = t;
                break;
            }
    }
}

static void build_maps(vocab *v) {
    byte_map(v->D, v->nd, v->T, v->nt, v->map);
    v->nu = v->nt;
    for (int d = 0; d < v->nd; d++) v->umap[d] = v->map[d] >= 0 ? v->map[d] : v->nu++;
}

static vocab VOCABS[] = {
    {"disjoint", 4, {"a", "b", "c", "d"}, 3, {"x", "y", "zz"}, {0}, {0}, 0},
    {"subset", 6, {"a", "b", "c", "d", "ab", "cd"}, 3, {"a", "cd", "d"}, {0}, {0}, 0},
    {"superset", 3, {"a", "b", " b"}, 6, {"a", "b", " b", "c", "ab", " "}, {0}, {0}, 0},
    {"overlap", 5, {"a", "b", "c", "the", "he"}, 5, {"b", "c", "the", "x", "t"}, {0}, {0}, 0},
    {"multichar", 4, {"a", "b", "ab", "abc"}, 4, {"a", "ab", "c", "bc"}, {0}, {0}, 0},
    {"same6", 6, {"a", "b", "c", "d", "e", "f"}, 6, {"a", "b", "c", "d", "e", "f"}, {0}, {0}, 0},
};
enum { V_DISJOINT, V_SUBSET, V_SUPERSET, V_OVERLAP, V_MULTI, V_SAME, NVOCAB };

static void init_vocabs(void) {
    for (int i = 0; i < NVOCAB; i++) build_maps(&VOCABS[i]);
}

/* ---------------------------------------------------------------- distributions ------- */

enum { SH_RAND, SH_PEAKED, SH_FLAT, SH_SPARSE, SH_SAMEP };
static const char *SHAPE_NAME[] = {"rand", "peaked", "flat", "sparse", "q=p"};
enum { ROLE_P = 1, ROLE_Q = 2 };

static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t ctx_hash(uint64_t salt, int role, const int32_t *ctx, int len) {
    uint64_t h = mix64(salt ^ ((uint64_t)role << 56));
    for (int i = 0; i < len; i++) h = mix64(h ^ (uint64_t)(uint32_t)(ctx[i] + 7));
    return mix64(h ^ (uint64_t)len);
}

/* A distribution over n entries, a deterministic function of (salt, role, context): Gaussian
 * logits (plus `boost`, when given) through temperature / top-k / top-p. */
static void make_dist(uint64_t salt, int role, const int32_t *ctx, int len, int n, int shape,
                      const float *boost, float *out) {
    hsd_rng r;
    hsd_rng_init(&r, ctx_hash(salt, role, ctx, len), 0x5eed);
    float logits[MAXU];
    for (int i = 0; i < n; i++) {
        double u1 = hsd_rng_uniform_f64(&r), u2 = hsd_rng_uniform_f64(&r);
        double z = sqrt(-2 * log(1 - u1)) * cos(2 * M_PI * u2);
        logits[i] = (float)(1.5 * z) + (boost ? boost[i] : 0.0f);
    }
    hsd_sampler_params sp = {1.0f, 0, 1.0f};
    if (shape == SH_PEAKED) sp.temp = 0.4f;
    if (shape == SH_FLAT) sp.temp = 12.0f;
    if (shape == SH_SPARSE) {
        sp.top_k = n - 1; /* exact zeros, and top-p on larger vocabularies */
        if (n > 4) sp.top_p = 0.95f;
    }
    assert_int_equal(hsd_sample_probs(logits, n, &sp, out), HSD_OK);
}

/* ---------------------------------------------------------------- decoding loop ------- */

typedef enum { R_SD, R_UNION, R_TLI, R_SLEM, R_BAD_ACCEPT_ALL, R_BAD_RESAMPLE_P } rule_t;
static const char *RULE_NAME[] = {"SD", "union", "TLI", "SLEM", "BAD:accept-all", "BAD:resample-p"};
/* C_TREE: a candidate tree as lib/engine/round_slem.c verifies one (siblings, then children) */
typedef enum { C_DRAFT, C_ORACLE, C_ARGMAX, C_RARE, C_TREE } cand_t;
static const char *CAND_NAME[] = {"retok", "oracle", "argmax", "rare", "tree"};

typedef struct {
    const vocab *v;
    rule_t rule;
    int k;
    int pshape, qshape;
    bool q_outside; /* boost q's logits on draft tokens outside T */
    cand_t cand;    /* SLEM candidates */
    uint64_t salt;
} config;

typedef struct {
    long rounds, drafted, accepted;
} stats;

static bool drafts_in_target_space(rule_t r) { return r == R_SD || r == R_BAD_ACCEPT_ALL || r == R_BAD_RESAMPLE_P; }

/* Target row p(. | ctx) over nt entries, zero on [nt, n_out). */
static void p_row(const config *c, const int32_t *ctx, int len, int n_out, float *out) {
    make_dist(c->salt, ROLE_P, ctx, len, c->v->nt, c->pshape, NULL, out);
    for (int i = c->v->nt; i < n_out; i++) out[i] = 0;
}

/* Drafter row q(. | ctx) over the drafter's vocabulary (T itself for same-vocab rules). */
static int q_row(const config *c, const int32_t *ctx, int len, float *out) {
    int n = drafts_in_target_space(c->rule) ? c->v->nt : c->v->nd;
    if (c->qshape == SH_SAMEP) {
        make_dist(c->salt, ROLE_P, ctx, len, n, c->pshape, NULL, out);
        return n;
    }
    float boost[MAXV];
    for (int i = 0; i < n; i++) boost[i] = c->q_outside && c->v->map[i] < 0 ? 3.0f : 0.0f;
    make_dist(c->salt, ROLE_Q, ctx, len, n, c->qshape, boost, out);
    return n;
}

/* A deliberately wrong variant of Alg 5 for the negative controls. */
static int32_t bad_verify(rule_t rule, const float *p, const float *q, int32_t n, const int32_t *d,
                          int32_t k, hsd_rng *rng, int32_t *out, int32_t *n_acc) {
    for (int32_t j = 0; j < k; j++) {
        const float *pj = p + (size_t)j * n, *qj = q + (size_t)j * n;
        if (rule == R_BAD_ACCEPT_ALL) {
            out[j] = d[j];
            continue;
        }
        double u = hsd_rng_uniform_f64(rng);
        if (u * qj[d[j]] < pj[d[j]]) {
            out[j] = d[j];
            continue;
        }
        out[j] = hsd_verify_draw(pj, n, hsd_rng_uniform_f64(rng)); /* bug: p, not the residual */
        *n_acc = j;
        return j + 1;
    }
    out[k] = hsd_verify_draw(p + (size_t)k * n, n, hsd_rng_uniform_f64(rng));
    *n_acc = k;
    return k + 1;
}

/* Greedy longest-match tokenization of text into T, stopping where no token matches. */
static int retokenize(const vocab *v, const char *text, int32_t *c, int maxc) {
    int m = 0;
    size_t pos = 0, len = strlen(text);
    while (pos < len && m < maxc) {
        int best = -1;
        size_t bl = 0;
        for (int t = 0; t < v->nt; t++) {
            size_t l = strlen(v->T[t]);
            if (l > bl && l <= len - pos && memcmp(text + pos, v->T[t], l) == 0) {
                best = t;
                bl = l;
            }
        }
        if (best < 0) break;
        c[m++] = best;
        pos += bl;
    }
    return m;
}

static int32_t argmin_f(const float *p, int n) {
    int32_t b = 0;
    for (int i = 1; i < n; i++)
        if (p[i] < p[b]) b = i;
    return b;
}

/* One round of decoding from ctx[0..*len); appends the emitted tokens. */
static void run_round(const config *c, bool greedy, hsd_rng *rng, hsd_rng *crng, int32_t *ctx,
                      int *len, stats *st) {
    const vocab *v = c->v;
    float P[(MAXM + 1) * MAXU], Q[MAXK * MAXU], qraw[MAXU], w[MAXU], scratch[MAXU];
    int32_t d[MAXM], out[MAXM + 1], tmp[MAXCTX + MAXM + 1], na = 0;
    int L = *len, kk = 0, nemit;
    memcpy(tmp, ctx, sizeof(int32_t) * L);
    if (c->rule == R_SLEM) {
        const int n = v->nt;
        int32_t *cand = d, par[MAXM], pidx[MAXM], acc_tok[MAXM];
        int m = 0;
        if (c->cand == C_DRAFT) {
            char text[128] = "";
            for (int j = 0; j < c->k; j++) {
                int nq = q_row(c, tmp, L + j, qraw);
                int32_t di = greedy ? hsd_verify_argmax(qraw, nq)
                                    : hsd_verify_draw(qraw, nq, hsd_rng_uniform_f64(rng));
                tmp[L + j] = 1000 + di; /* the drafter's own context */
                strcat(text, v->D[di]);
            }
            m = retokenize(v, text, cand, MAXM);
        } else if (c->cand == C_TREE) {
            /* two children of the root, the least likely token first (the walk must look past
             * a sibling), then the argmax; each with one oracle-drawn child */
            p_row(c, tmp, L, n, P);
            int32_t roots[2] = {argmin_f(P, n), hsd_verify_argmax(P, n)};
            for (int r = 0; r < 2; r++) {
                if (r == 1 && roots[1] == roots[0]) break;
                int32_t idx = m;
                cand[m] = roots[r], par[m++] = -1;
                tmp[L] = roots[r];
                p_row(c, tmp, L + 1, n, P);
                cand[m] = hsd_verify_draw(P, n, hsd_rng_uniform_f64(crng)), par[m++] = idx;
            }
        } else {
            for (int j = 0; j < c->k; j++) {
                p_row(c, tmp, L + j, n, P);
                cand[j] = c->cand == C_ORACLE   ? hsd_verify_draw(P, n, hsd_rng_uniform_f64(crng))
                          : c->cand == C_ARGMAX ? hsd_verify_argmax(P, n)
                                                : argmin_f(P, n);
                tmp[L + j] = cand[j];
            }
            m = c->k;
        }
        if (c->cand != C_TREE)
            for (int j = 0; j < m; j++) par[j] = j - 1; /* a chain, as a tree */
        /* row j+1: the target after candidate j's path (row 0: after the context) */
        for (int j = -1; j < m; j++) {
            int depth = 0;
            int32_t up[MAXM];
            for (int v = j; v >= 0; v = par[v]) up[depth++] = cand[v];
            for (int i = 0; i < depth; i++) tmp[L + i] = up[depth - 1 - i];
            p_row(c, tmp, L + depth, n, P + (size_t)(j + 1) * n);
        }
        /* the function lib/engine/round_slem.c calls */
        nemit = hsd_verify_slem(P, n, NULL, cand, par, m, greedy, rng, out, pidx, &na);
        for (int j = 0; j < na; j++) {
            if (j > 0) assert_int_equal(par[pidx[j]], pidx[j - 1]); /* a path from the root */
            acc_tok[j] = cand[pidx[j]];
        }
        memcpy(d, acc_tok, sizeof(int32_t) * (size_t)na); /* the check below: accepted = path */
        kk = m;
    } else {
        const int n = c->rule == R_UNION ? v->nu : v->nt; /* verification space */
        for (int j = 0; j < c->k; j++) {
            int nq = q_row(c, tmp, L + j, qraw);
            int32_t di;
            if (drafts_in_target_space(c->rule)) {
                di = greedy ? hsd_verify_argmax(qraw, nq) : hsd_verify_draw(qraw, nq, hsd_rng_uniform_f64(rng));
                d[j] = di;
                memcpy(Q + (size_t)j * n, qraw, sizeof(float) * n);
            } else if (c->rule == R_UNION) {
                di = greedy ? hsd_verify_argmax(qraw, nq) : hsd_verify_draw(qraw, nq, hsd_rng_uniform_f64(rng));
                d[j] = v->umap[di];
                hsd_verify_map_draft(qraw, nq, v->umap, n, false, Q + (size_t)j * n);
            } else { /* TLI: draft only from q restricted to T ∩ D */
                double mass = 0;
                for (int i = 0; i < nq; i++) mass += w[i] = v->map[i] >= 0 ? qraw[i] : 0.0f;
                if (mass <= 0) break; /* nothing draftable: the round is plain target sampling */
                di = greedy ? hsd_verify_argmax(w, nq) : hsd_verify_draw(w, nq, hsd_rng_uniform_f64(rng));
                d[j] = v->map[di];
                double mm = hsd_verify_map_draft(qraw, nq, v->map, n, true, Q + (size_t)j * n);
                assert_true(fabs(mm - mass) < 1e-5);
            }
            tmp[L + j] = d[j];
            kk = j + 1;
        }
        for (int j = 0; j <= kk; j++) p_row(c, tmp, L + j, n, P + (size_t)j * n);
        if (c->rule == R_BAD_ACCEPT_ALL || c->rule == R_BAD_RESAMPLE_P)
            nemit = bad_verify(c->rule, P, Q, n, d, kk, rng, out, &na);
        else
            nemit = hsd_verify_sd(P, Q, n, d, kk, greedy, rng, scratch, out, &na);
    }
    assert_int_equal(nemit, na + 1);
    for (int j = 0; j < na; j++) assert_int_equal(out[j], d[j]); /* accepted = drafted prefix */
    for (int j = 0; j < nemit && *len < MAXCTX; j++) {
        if (out[j] < 0 || out[j] >= v->nt) fail_msg("%s emitted %d outside T (|T|=%d)", RULE_NAME[c->rule], out[j], v->nt);
        ctx[(*len)++] = out[j];
    }
    st->rounds++;
    st->drafted += kk;
    st->accepted += na;
}

/* Decodes until `want` tokens are committed; res receives the first `want`. */
static void generate(const config *c, bool greedy, uint64_t trial, int want, int32_t *res, stats *st) {
    hsd_rng rng, crng;
    hsd_rng_init(&rng, c->salt, trial);
    hsd_rng_init(&crng, c->salt ^ 0xc0ffee, trial);
    int32_t ctx[MAXCTX];
    int len = 0;
    while (len < want) run_round(c, greedy, &rng, &crng, ctx, &len, st);
    memcpy(res, ctx, sizeof(int32_t) * want);
}

/* ---------------------------------------------------------------- chi-square runner --- */

typedef struct {
    chi2_res first, joint;
    double acc_rate;
} law_res;

static law_res run_law(const config *c, int N) {
    const vocab *v = c->v;
    const int nt = v->nt;
    long c1[MAXV] = {0}, c2[MAXV * MAXV] = {0};
    stats st = {0, 0, 0};
    for (int t = 0; t < N; t++) {
        int32_t r[2];
        generate(c, false, (uint64_t)t, 2, r, &st);
        c1[r[0]]++;
        c2[r[0] * nt + r[1]]++;
    }
    float p0[MAXU], p1[MAXU];
    double e1[MAXV], e2[MAXV * MAXV];
    p_row(c, NULL, 0, nt, p0);
    for (int a = 0; a < nt; a++) {
        e1[a] = p0[a];
        int32_t ctx[1] = {a};
        p_row(c, ctx, 1, nt, p1);
        for (int b = 0; b < nt; b++) e2[a * nt + b] = (double)p0[a] * p1[b];
    }
    law_res lr;
    lr.first = chi2_test(c1, e1, nt, N);
    lr.joint = chi2_test(c2, e2, nt * nt, N);
    lr.acc_rate = st.drafted ? (double)st.accepted / st.drafted : 0;
    char label[96];
    snprintf(label, sizeof label, "%s/%s%s%s p=%s q=%s%s k=%d", v->name, RULE_NAME[c->rule],
             c->rule == R_SLEM ? ":" : "", c->rule == R_SLEM ? CAND_NAME[c->cand] : "",
             SHAPE_NAME[c->pshape], SHAPE_NAME[c->qshape], c->q_outside ? "+outside" : "", c->k);
    printf("CHI2 | %-52s | first df=%2d chi2=%7.2f p=%.3g | joint df=%3d chi2=%7.2f p=%.3g | acc=%.3f\n",
           label, lr.first.df, lr.first.stat, lr.first.p, lr.joint.df, lr.joint.stat, lr.joint.p,
           lr.acc_rate);
    fflush(stdout);
    return lr;
}

/* Samples per chi-square test: NSAMP, or $HSD_CHI2_N (to probe a suspicious case harder). */
static int nsamp(void) {
    const char *e = getenv("HSD_CHI2_N");
    return e && atoi(e) > 0 ? atoi(e) : NSAMP;
}

/* p-values of every test of a correct rule, for the uniformity check at the end */
static double PVALS[1024];
static int NPVALS;

static void record_p(const law_res *lr) {
    if (lr->first.df > 0 && NPVALS < 1024) PVALS[NPVALS++] = lr->first.p;
    if (lr->joint.df > 0 && NPVALS < 1024) PVALS[NPVALS++] = lr->joint.p;
}

static void expect_lossless(const config *c) {
    law_res lr = run_law(c, nsamp());
    record_p(&lr);
    assert_true(lr.first.df >= 1);
    assert_true(lr.first.p > PMIN);
    assert_true(lr.joint.p > PMIN);
}

static const int SHAPE_PAIRS[][2] = {
    {SH_RAND, SH_RAND}, {SH_PEAKED, SH_FLAT}, {SH_FLAT, SH_PEAKED}, {SH_SPARSE, SH_SPARSE}, {SH_PEAKED, SH_PEAKED}};
#define NPAIRS ((int)(sizeof SHAPE_PAIRS / sizeof SHAPE_PAIRS[0]))

/* ---------------------------------------------------------------- tests --------------- */

static void test_chi2_sf_values(void **state) {
    (void)state;
    /* tabulated critical values */
    assert_true(fabs(chi2_sf(3.841459, 1) - 0.05) < 1e-6);
    assert_true(fabs(chi2_sf(18.307038, 10) - 0.05) < 1e-6);
    assert_true(fabs(chi2_sf(10.827566, 1) - 0.001) < 1e-7);
    assert_true(fabs(chi2_sf(59.702747, 30) - 0.001) < 1e-7);
    assert_true(fabs(chi2_sf(124.342113, 100) - 0.05) < 1e-6);
    /* df = 2: exp(-x/2) exactly; large x: continued fraction */
    for (double x = 0.1; x < 80; x *= 1.7) assert_true(fabs(chi2_sf(x, 2) - exp(-x / 2)) < 1e-12 * (1 + exp(-x / 2)) + 1e-15);
    assert_true(chi2_sf(0, 5) == 1.0);
    /* pooling: impossible outcome gives p = 0; exact counts give p = 1 */
    long obs[3] = {50, 50, 1};
    double pr[3] = {0.5, 0.5, 0};
    assert_true(chi2_test(obs, pr, 3, 101).p == 0);
    long obs2[4] = {500, 300, 199, 1};
    double pr2[4] = {0.5, 0.3, 0.1995, 0.0005};
    chi2_res r = chi2_test(obs2, pr2, 4, 1000);
    assert_int_equal(r.df, 2); /* the 0.5-expected cell is pooled with the next smallest */
    assert_true(r.p > 0.99);
}

static void test_byte_maps(void **state) {
    (void)state;
    init_vocabs();
    const vocab *m = &VOCABS[V_MULTI]; /* T = {a, b, ab, abc}, D = {a, ab, c, bc} */
    const int32_t want[4] = {0, 2, -1, -1}, wantu[4] = {0, 2, 4, 5};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(m->map[i], want[i]);
        assert_int_equal(m->umap[i], wantu[i]);
    }
    assert_int_equal(m->nu, 6);
    for (int i = 0; i < 3; i++) assert_int_equal(VOCABS[V_DISJOINT].map[i], -1);
    for (int i = 0; i < 3; i++) assert_true(VOCABS[V_SUBSET].map[i] >= 0);
    assert_int_equal(VOCABS[V_SUPERSET].nu, 6);
    assert_int_equal(VOCABS[V_SUPERSET].map[2], 2); /* " b" meets " b", not "b" */
    /* map_draft: union keeps the raw mass, TLI renormalises over T ∩ D */
    const float q[4] = {0.1f, 0.2f, 0.3f, 0.4f};
    float out[6];
    double mass = hsd_verify_map_draft(q, 4, m->umap, 6, false, out);
    assert_true(fabs(mass - 1.0) < 1e-6);
    assert_true(out[0] == 0.1f && out[1] == 0 && out[2] == 0.2f && out[3] == 0 && out[4] == 0.3f && out[5] == 0.4f);
    mass = hsd_verify_map_draft(q, 4, m->map, 4, true, out);
    assert_true(fabs(mass - 0.3) < 1e-6);
    assert_true(fabs(out[0] - 1 / 3.0) < 1e-6 && fabs(out[2] - 2 / 3.0) < 1e-6 && out[1] == 0 && out[3] == 0);
}

static void test_chi2_sd(void **state) {
    (void)state;
    init_vocabs();
    int shapes[][2] = {{SH_RAND, SH_RAND}, {SH_PEAKED, SH_FLAT}, {SH_FLAT, SH_PEAKED},
                       {SH_SPARSE, SH_SPARSE}, {SH_RAND, SH_SAMEP}};
    for (int k = 1; k <= MAXK; k++)
        for (int s = 0; s < 5; s++) {
            config c = {&VOCABS[V_SAME], R_SD, k, shapes[s][0], shapes[s][1], false, C_DRAFT, 1000 + 10 * k + s};
            expect_lossless(&c);
        }
    /* multi-character target vocabulary, drafter over the same vocabulary */
    config c = {&VOCABS[V_MULTI], R_SD, 2, SH_RAND, SH_RAND, false, C_DRAFT, 1077};
    expect_lossless(&c);
}

static void run_hetero(rule_t rule, uint64_t salt0) {
    init_vocabs();
    const int hv[] = {V_DISJOINT, V_SUBSET, V_SUPERSET, V_OVERLAP, V_MULTI};
    for (int vi = 0; vi < 5; vi++) {
        for (int s = 0; s <= NPAIRS; s++) {
            /* the last one: q puts most of its mass outside T */
            bool outside = s == NPAIRS;
            int ps = outside ? SH_RAND : SHAPE_PAIRS[s][0], qs = outside ? SH_RAND : SHAPE_PAIRS[s][1];
            config c = {&VOCABS[hv[vi]], rule, 1 + (vi + s) % MAXK, ps, qs, outside, C_DRAFT,
                        salt0 + 100 * vi + s};
            expect_lossless(&c);
        }
    }
}

static void test_chi2_union(void **state) {
    (void)state;
    run_hetero(R_UNION, 20000);
}

static void test_chi2_tli(void **state) {
    (void)state;
    run_hetero(R_TLI, 30000);
}

static void test_chi2_slem(void **state) {
    (void)state;
    init_vocabs();
    const int hv[] = {V_DISJOINT, V_SUBSET, V_SUPERSET, V_OVERLAP, V_MULTI, V_SAME};
    for (int vi = 0; vi < 6; vi++)
        for (int cm = C_DRAFT; cm <= C_TREE; cm++) {
            int ps = SH_RAND;
            config c = {&VOCABS[hv[vi]], R_SLEM, cm == C_DRAFT ? 3 : 2, ps, SH_RAND, false, (cand_t)cm,
                        40000 + 10 * vi + cm};
            law_res lr = run_law(&c, nsamp());
            record_p(&lr);
            assert_true(lr.first.p > PMIN);
            assert_true(lr.joint.p > PMIN);
            if (cm == C_ARGMAX) assert_true(lr.acc_rate > 0.3); /* match often */
            if (cm == C_RARE) assert_true(lr.acc_rate < 0.1); /* match rarely */
        }
}

/* Thm 4.1: TLI's acceptance rate is at least union's on the same (p, q). Measured with one
 * draft per round (alpha = P(first draft accepted)), checked against the exact
 * sum_t min(p(t), q(t)) of each and against each other with a margin for sampling noise. */
static void test_tli_acceptance_ge_union(void **state) {
    (void)state;
    init_vocabs();
    const int hv[] = {V_SUBSET, V_SUPERSET, V_OVERLAP, V_MULTI};
    const int N = NSAMP;
    for (int vi = 0; vi < 4; vi++)
        for (int outside = 0; outside <= 1; outside++) {
            const vocab *v = &VOCABS[hv[vi]];
            double meas[2], exact[2];
            for (int r = 0; r < 2; r++) {
                config c = {v, r ? R_TLI : R_UNION, 1, SH_RAND, SH_RAND, outside, C_DRAFT, 50000 + 10 * vi + outside};
                stats st = {0, 0, 0};
                for (int t = 0; t < N; t++) {
                    int32_t res[1];
                    generate(&c, false, (uint64_t)t, 1, res, &st);
                }
                meas[r] = (double)st.accepted / st.drafted;
                float p0[MAXU], q0[MAXU], qm[MAXU];
                p_row(&c, NULL, 0, v->nu, p0);
                q_row(&c, NULL, 0, q0);
                hsd_verify_map_draft(q0, v->nd, r ? v->map : v->umap, r ? v->nt : v->nu, r != 0, qm);
                exact[r] = 0;
                for (int i = 0; i < v->nt; i++) exact[r] += fmin(p0[i], qm[i]);
                double sd = sqrt(exact[r] * (1 - exact[r]) / st.drafted);
                assert_true(fabs(meas[r] - exact[r]) < 5 * sd + 1e-9);
            }
            printf("ACC  | %-10s q%s | union exact %.4f measured %.4f | TLI exact %.4f measured %.4f\n",
                   v->name, outside ? "+outside" : "        ", exact[0], meas[0], exact[1], meas[1]);
            assert_true(exact[1] >= exact[0] - 1e-6);
            double margin = 4 * sqrt((meas[0] * (1 - meas[0]) + meas[1] * (1 - meas[1])) / N);
            assert_true(meas[1] >= meas[0] - margin);
        }
}

/* Greedy: every rule reproduces argmax decoding token for token, whatever the drafts. */
static void test_greedy_equals_argmax(void **state) {
    (void)state;
    init_vocabs();
    const int NTOK = 12;
    int checked = 0;
    for (int vi = 0; vi < NVOCAB; vi++)
        for (int rule = R_SD; rule <= R_SLEM; rule++)
            for (int cm = C_DRAFT; cm <= (rule == R_SLEM ? C_TREE : C_DRAFT); cm++)
                for (int s = 0; s < NPAIRS + 2; s++)
                    for (int k = 1; k <= MAXK; k++) {
                        int ps = s < NPAIRS ? SHAPE_PAIRS[s][0] : SH_RAND;
                        int qs = s < NPAIRS ? SHAPE_PAIRS[s][1] : (s == NPAIRS ? SH_RAND : SH_SAMEP);
                        if (qs == SH_SAMEP && rule != R_SD) qs = SH_RAND;
                        config c = {&VOCABS[vi], (rule_t)rule, k, ps, qs, s == NPAIRS, (cand_t)cm,
                                    60000 + 1000 * vi + 100 * rule + 10 * s + k};
                        int32_t want[MAXCTX], got[MAXCTX];
                        for (int i = 0; i < NTOK; i++) {
                            float p[MAXU];
                            p_row(&c, want, i, c.v->nt, p);
                            want[i] = hsd_verify_argmax(p, c.v->nt);
                        }
                        stats st = {0, 0, 0};
                        generate(&c, true, 7, NTOK, got, &st);
                        for (int i = 0; i < NTOK; i++) assert_int_equal(got[i], want[i]);
                        if (qs == SH_SAMEP) assert_int_equal(st.accepted, st.drafted);
                        checked++;
                    }
    printf("greedy: %d configurations equal argmax decoding\n", checked);
}

/* The test has power: wrong rules must fail it. */
static void test_negative_controls(void **state) {
    (void)state;
    init_vocabs();
    config a = {&VOCABS[V_SAME], R_BAD_ACCEPT_ALL, 1, SH_RAND, SH_RAND, false, C_DRAFT, 70001};
    law_res lr = run_law(&a, NSAMP);
    assert_true(lr.first.p < PMIN);
    assert_true(lr.joint.p < PMIN);
    config b = {&VOCABS[V_SAME], R_BAD_RESAMPLE_P, 2, SH_RAND, SH_RAND, false, C_DRAFT, 70002};
    lr = run_law(&b, NSAMP);
    assert_true(lr.first.p < PMIN);
    assert_true(lr.joint.p < PMIN);
    /* the correct rule on exactly the same (p, q) and seeds passes */
    b.rule = R_SD;
    lr = run_law(&b, NSAMP);
    assert_true(lr.first.p > PMIN && lr.joint.p > PMIN);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Under losslessness the p-values of all the tests above are (nearly) uniform on [0, 1]; a
 * small bias shared by many configurations would push them towards 0 even when no single
 * test falls below 1e-3. Kolmogorov-Smirnov against U(0,1): D * sqrt(n) < 1.95 (alpha about
 * 1e-3; first and joint tests of one configuration are dependent, which the margin absorbs). */
static void test_pvalue_uniformity(void **state) {
    (void)state;
    if (NPVALS < 50) skip();
    qsort(PVALS, NPVALS, sizeof(double), cmp_double);
    double D = 0;
    for (int i = 0; i < NPVALS; i++) {
        D = fmax(D, (i + 1.0) / NPVALS - PVALS[i]);
        D = fmax(D, PVALS[i] - (double)i / NPVALS);
    }
    printf("KS   | %d p-values, min %.3g, D = %.4f, D*sqrt(n) = %.3f (limit 1.95)\n", NPVALS, PVALS[0], D,
           D * sqrt(NPVALS));
    assert_true(D * sqrt(NPVALS) < 1.95);
}

/* Same seed, same output: a round is replayable from the RNG state. */
static void test_replay(void **state) {
    (void)state;
    init_vocabs();
    for (int rule = R_SD; rule <= R_SLEM; rule++) {
        config c = {&VOCABS[V_MULTI], (rule_t)rule, 3, SH_RAND, SH_RAND, false, C_DRAFT, 80000 + rule};
        int32_t a[20], b[20];
        stats s1 = {0, 0, 0}, s2 = {0, 0, 0};
        for (uint64_t t = 0; t < 50; t++) {
            generate(&c, false, t, 20, a, &s1);
            generate(&c, false, t, 20, b, &s2);
            assert_memory_equal(a, b, sizeof a);
        }
        assert_true(s1.rounds == s2.rounds && s1.accepted == s2.accepted);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chi2_sf_values),
        cmocka_unit_test(test_byte_maps),
        cmocka_unit_test(test_chi2_sd),
        cmocka_unit_test(test_chi2_union),
        cmocka_unit_test(test_chi2_tli),
        cmocka_unit_test(test_chi2_slem),
        cmocka_unit_test(test_tli_acceptance_ge_union),
        cmocka_unit_test(test_greedy_equals_argmax),
        cmocka_unit_test(test_negative_controls),
        cmocka_unit_test(test_replay),
        cmocka_unit_test(test_pvalue_uniformity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
