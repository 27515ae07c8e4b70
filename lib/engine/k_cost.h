/* The cost-aware draft length (hsd_gen_params.cost_k): before each round, the k in [1, k_max]
 * with the most expected emitted tokens per millisecond, from measured costs and the running
 * acceptance. k_cost.c says why and how; this header is the engine's seam and the test's. */
#ifndef HSD_LIB_ENGINE_K_COST_H
#define HSD_LIB_ENGINE_K_COST_H

#include <stdbool.h>
#include <stdint.h>

#define HSD_KCOST_SIZES 256 /* target forward sizes (tokens) the cost table keeps */
#define HSD_KCOST_LEVELS 64 /* verification levels whose acceptance is counted */

/* What the machine charges, per engine (kept across requests: it depends on the models and
 * the CPU, not on the text): the target forward's time per token count (decayed sums of ms
 * and of weight per size), the drafter's time per draft and the round's other work (bridge,
 * sampling, the drafter's catch-up feed) as running averages (0: not seen). */
typedef struct hsd_kcost_machine {
    double ms[HSD_KCOST_SIZES + 1], w[HSD_KCOST_SIZES + 1];
    double draft_ms, over_ms;
} hsd_kcost_machine;

#define HSD_KCOST_K 64 /* draft lengths whose rounds are counted (k < 64) */

/* What the text gives, per sequence: decayed counts of the rounds that reached level i of
 * their verification with every level before it accepted (n[i]) and that accepted it too
 * (s[i]), levels 1.. (index i - 1); per draft length k, the decayed sum of accepted
 * candidates (acc[k]) over a decayed count of rounds (rk[k]); the verified depth and the
 * candidates per draft (running averages, 0: not seen). */
typedef struct hsd_kcost_seq {
    double s[HSD_KCOST_LEVELS], n[HSD_KCOST_LEVELS];
    double acc[HSD_KCOST_K], rk[HSD_KCOST_K];
    double lam, mu;
    int32_t rounds;
    bool last_all; /* the last round accepted every level it verified */
} hsd_kcost_seq;

/* A target forward of n tokens took ms. */
void hsd_kcost_target(hsd_kcost_machine *m, int32_t n, double ms);
/* A drafting phase that gave `drafts` drafts took ms. */
void hsd_kcost_draft(hsd_kcost_machine *m, int32_t drafts, double ms);
/* A round's work outside the two models' forwards took ms. */
void hsd_kcost_over(hsd_kcost_machine *m, double ms);
/* A round of k drafts verified m candidates down to `depth` levels and accepted acc. */
void hsd_kcost_round(hsd_kcost_seq *s, int32_t k, int32_t m, int32_t depth, int32_t acc);
/* The predicted time of a target forward of n tokens; < 0 while fewer than two sizes were
 * seen (or n is NaN). */
double hsd_kcost_target_ms(const hsd_kcost_machine *m, double n);
/* The expected tokens a round of k drafts emits (1 + the expected accepted levels). */
double hsd_kcost_tokens(const hsd_kcost_seq *s, int32_t k);
/* The next round's k in [1, k_max] for a sequence whose round had k drafts, the target
 * forward carrying `others` tokens of other sequences beside its own. */
int32_t hsd_kcost_choose(const hsd_kcost_machine *m, const hsd_kcost_seq *s, int32_t k,
                         int32_t k_max, int32_t others);

#endif
