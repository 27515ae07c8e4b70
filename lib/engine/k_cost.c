/* The cost-aware draft length (k_cost.h).
 *
 * Why. A round of k drafts costs k drafter forwards, one target forward over its candidates
 * (about k of a chain, 2k of SLEM's tree) and some fixed work, and emits one token more than
 * it accepts. Which k pays best depends on the machine more than on anything else. On an AMD
 * Zen 4 (2 cores, no AMX) a target forward of the Q4_K_M 1B shape costs 1.3x one token's at
 * 5 tokens, 2.7x at 13 and then ~4 ms a token (int8 dot products bound it; hsd bench
 * forward), and SLEM's best fixed k on the inflated pair was 3; on a Sapphire Rapids (AMX)
 * the same forward of 13 costs ~1.5x and the best k was 6-7; on a GPU it is ~1x
 * (bench/notes/k_cost.md). So the costs are measured, not assumed, and the choice is made
 * again every round:
 *
 *   rate(k) = tokens(k) / (k·draft + target(others + 1 + mu·k) + over)
 *   tokens(k) = 1 + sum_{i=1..lam·k} prod_{j<=i} h_j
 *
 * - target(n): the target forward's time at n tokens, a decayed mean per size over the
 *   engine's verification forwards (a property of the model and the CPU, kept across
 *   requests), read between sizes by linear interpolation and past the sizes seen by the
 *   secant to the nearest size at least two apart (below them, half its slope). The
 *   cost is convex in n (flat while the weights' stream bounds it, then linear in the
 *   arithmetic), so the secant is optimistic outside: a size predicted cheap gets tried and
 *   measured (upwards by at most half again the largest size seen). Until two sizes were
 *   seen, the next round measures another, two drafts away (one where k_max allows no more).
 * - h_j: the acceptance of verification level j given every level before it accepted,
 *   counted per level over decayed rounds (it follows the text). Levels are not alike: the
 *   first is the hardest (the drafter has just been corrected), deeper ones run at the
 *   drafter's in-sync rate, so one geometric rate would undercount deep levels and trap k
 *   at 1. A level seen rarely leans on the pooled rate of levels 2 and on (prior 0.8).
 * - Where rounds of this k were seen, tokens(k) leans on them too: the model's value counts
 *   as two rounds beside their decayed mean. A wider tree is more than a deeper one (SLEM's
 *   k drafts give 2k candidates, alternatives among them, so its first level is easier at
 *   larger k), which the per-level counts pooled over every k do not see.
 * - lam, mu: the verified depth and the candidates per draft (running averages); 1: the
 *   pending id the forward carries before the candidates; others: the other sequences'
 *   tokens in the same forward (a running batch).
 *
 * Timings vary between runs, so the k sequence does too. SLEM's and AR's output does not
 * depend on k (one target draw per emitted token: round_slem.c); the sampled output of SD,
 * union and TLI for a given seed does. */
#include "lib/engine/k_cost.h"

#include <math.h>
#include <stdbool.h>

/* The constants: a simulation of tests/test_k_cost.c's kind moved by at most 2 points of the
 * optimal rate over the values tried (bench/notes/k_cost.md) */
enum { KC_SPREAD = 2 };    /* tokens between two sizes for a slope */
#define KC_SIZE_DECAY 0.9  /* per forward of that size */
#define KC_TEXT_DECAY 0.85 /* per round: acceptance follows the text */
#define KC_EMA 0.3         /* the weight of a new sample in the running averages */
#define KC_BLEND 2.0       /* the model counts as this many rounds beside a k's own */
#define KC_EXPLORE 0.1     /* the optimism for a k with no rounds of its own */
#define KC_PRIOR 0.8       /* a level's acceptance before any count (weight 1) */

static void ema(double *v, double x) { *v = *v > 0 ? (1 - KC_EMA) * *v + KC_EMA * x : x; }

void hsd_kcost_target(hsd_kcost_machine *m, int32_t n, double ms) {
    if (n < 1 || n > HSD_KCOST_SIZES || !(ms > 0) || !isfinite(ms)) return;
    m->ms[n] = KC_SIZE_DECAY * m->ms[n] + ms;
    m->w[n] = KC_SIZE_DECAY * m->w[n] + 1;
}

void hsd_kcost_draft(hsd_kcost_machine *m, int32_t drafts, double ms) {
    if (drafts > 0 && ms >= 0 && isfinite(ms)) ema(&m->draft_ms, ms / drafts > 1e-6 ? ms / drafts : 1e-6);
}

void hsd_kcost_over(hsd_kcost_machine *m, double ms) {
    if (isfinite(ms)) ema(&m->over_ms, ms > 1e-6 ? ms : 1e-6);
}

void hsd_kcost_round(hsd_kcost_seq *s, int32_t k, int32_t m, int32_t depth, int32_t acc) {
    if (k < 1) return;
    for (int32_t i = 0; i < HSD_KCOST_LEVELS; i++) s->s[i] *= KC_TEXT_DECAY, s->n[i] *= KC_TEXT_DECAY;
    for (int32_t i = 0; i < HSD_KCOST_K; i++) s->acc[i] *= KC_TEXT_DECAY, s->rk[i] *= KC_TEXT_DECAY;
    if (k < HSD_KCOST_K) s->acc[k] += acc, s->rk[k] += 1;
    /* levels 1..acc accepted, level acc + 1 (when verified) the first rejection */
    for (int32_t i = 0; i < depth && i < HSD_KCOST_LEVELS; i++) {
        s->n[i] += 1;
        if (i >= acc) break;
        s->s[i] += 1;
    }
    s->last_all = depth > 0 && acc >= depth;
    ema(&s->lam, depth > 0 ? (double)depth / k : 1e-3);
    ema(&s->mu, m > 0 ? (double)m / k : 1e-3);
    s->rounds++;
}

/* the decayed mean time of size n (> 0: seen) */
static double size_ms(const hsd_kcost_machine *m, int32_t n) { return m->w[n] > 0 ? m->ms[n] / m->w[n] : -1; }

/* the secant slope from size a to the nearest seen size at least KC_SPREAD away in
 * direction dir (+1, -1), else the nearest one (k_max 2 gives a chain only sizes 2 and 3);
 * -1: none */
static double secant(const hsd_kcost_machine *m, int32_t a, int dir) {
    for (int32_t spread = KC_SPREAD; spread >= 1; spread--)
        for (int32_t b = a + dir * spread; b >= 1 && b <= HSD_KCOST_SIZES; b += dir)
            if (m->w[b] > 0) {
                const double s = (size_ms(m, b) - size_ms(m, a)) / (b - a);
                return s > 0 ? s : 0; /* noise: a forward never gets cheaper with more tokens */
            }
    return -1;
}

double hsd_kcost_target_ms(const hsd_kcost_machine *m, double n) {
    if (isnan(n)) return -1;
    int32_t lo = 0, hi = 0; /* the smallest and largest sizes seen */
    for (int32_t i = 1; i <= HSD_KCOST_SIZES; i++)
        if (m->w[i] > 0) hi = i, lo = lo ? lo : i;
    if (!lo || hi == lo) return -1; /* two sizes at least */
    if (n >= hi) return size_ms(m, hi) + secant(m, hi, -1) * (n - hi);
    if (n <= lo) { /* half the secant's slope: between it (too cheap below, the cost being
                    * convex) and flat (what a memory-bound forward is) */
        const double t = size_ms(m, lo) - 0.5 * secant(m, lo, +1) * (lo - n);
        return t > 0.5 * size_ms(m, lo) ? t : 0.5 * size_ms(m, lo);
    }
    int32_t a = (int32_t)n, b = a + 1; /* seen sizes around n, then a line between them */
    while (!(m->w[a] > 0)) a--;
    while (b <= hi && !(m->w[b] > 0)) b++;
    if (a == (int32_t)n && (double)a == n) return size_ms(m, a);
    const double ta = size_ms(m, a), t = ta + (size_ms(m, b) - ta) * (n - a) / (b - a);
    return t > ta ? t : ta;
}

/* level i's (from 0) acceptance given the levels before it */
static double level_rate(const hsd_kcost_seq *s, int32_t i, double pooled) {
    if (i >= HSD_KCOST_LEVELS) return pooled;
    return (s->s[i] + pooled) / (s->n[i] + 1.0);
}

double hsd_kcost_tokens(const hsd_kcost_seq *s, int32_t k) {
    double ps = KC_PRIOR, pn = 1.0; /* levels 2 and on, pooled, with the prior's one count */
    for (int32_t i = 1; i < HSD_KCOST_LEVELS; i++) ps += s->s[i], pn += s->n[i];
    const double pooled = ps / pn, L = (s->lam > 0 ? s->lam : 1.0) * k;
    double e = 0, reach = 1;
    for (int32_t i = 0; i < L; i++) {
        reach *= level_rate(s, i, i ? pooled : KC_PRIOR);
        e += reach * (L - i < 1 ? L - i : 1); /* a fractional last level counts in part */
    }
    if (k < HSD_KCOST_K && s->rk[k] > 0) e = (s->acc[k] + KC_BLEND * e) / (s->rk[k] + KC_BLEND);
    return 1 + e;
}

int32_t hsd_kcost_choose(const hsd_kcost_machine *m, const hsd_kcost_seq *s, int32_t k,
                         int32_t k_max, int32_t others) {
    if (k_max < 1) k_max = 1;
    if (k < 1) k = 1;
    if (k > k_max) k = k_max;
    if (hsd_kcost_target_ms(m, 1) < 0) {
        bool seen = false;
        for (int32_t i = 1; i <= HSD_KCOST_SIZES && !seen; i++) seen = m->w[i] > 0;
        if (!seen) return k; /* nothing measured yet */
        /* one size seen: measure another two drafts away, up when the round accepted every
         * level it verified (longer drafts may pay), else down; within [1, k_max] */
        const bool all = s->rounds > 0 && s->last_all;
        int32_t x = (all || k <= 2) ? k + 2 : k - 2;
        if (x > k_max) x = k > 2 ? k - 2 : (k > 1 ? k - 1 : (k_max > 1 ? 2 : 1));
        return x;
    }
    const double mu = s->mu > 0 ? s->mu : 1.0;
    /* past the largest size seen the secant is optimistic (the cost is convex): climb there
     * by at most half again (or 4 tokens), so that a wrong guess costs one modest round (a
     * BF16 1B target on Zen 4: 13 tokens 90 ms, the secant's 33 tokens 145, measured 258) */
    int32_t hi = 0;
    for (int32_t i = 1; i <= HSD_KCOST_SIZES; i++)
        if (m->w[i] > 0) hi = i;
    const double n_cap = hi + 4 > 1.5 * hi ? hi + 4 : 1.5 * hi;
    int32_t best = k;
    double best_rate = -1;
    for (int32_t x = 1; x <= k_max; x++) {
        const double n = others + 1 + mu * x;
        if (n > n_cap && x > 1) break;
        const double t = x * m->draft_ms + hsd_kcost_target_ms(m, n) + m->over_ms;
        double e = hsd_kcost_tokens(s, x);
        /* optimism where this k has few rounds of its own: a k the model undervalues (a
         * wider tree's easier first level) still gets tried, and then its rounds speak */
        if (x < HSD_KCOST_K) e *= 1 + KC_EXPLORE / sqrt(1 + s->rk[x]);
        const double rate = e / t;
        if (rate > best_rate * (1 + 1e-9)) best = x, best_rate = rate;
    }
    return best;
}
