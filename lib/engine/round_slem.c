/* The SLEM round (Alg 2): the drafter's chain is turned into text, the bridge re-tokenizes
 * that text with the target's tokenizer after the committed text, and the target accepts the
 * longest prefix of those candidates that its own draws reproduce (verify/verify.h). */
#include "lib/engine/engine.h"
#include "lib/base/error.h"
#include "lib/base/timer.h"
#include "tokenize/tokenizer.h"
#include "verify/verify.h"

/* Draft text -> target candidates (rd.cand, the first rd.m of them verified). */
static hsd_status slem_candidates(hsd_eng_seq *g, const int32_t **cand, int32_t *m,
                                  int32_t *width) {
    hsd_engine *e = g->e;
    hsd_eng_round_data *rd = &g->rd;
    hsd_buf dtext = {0};
    for (int32_t j = 0; j < rd->kd; j++) {
        size_t len;
        const uint8_t *b = hsd_tokenizer_token_bytes(e->dt, rd->d[j], &len);
        if (b && !hsd_tokenizer_is_special(e->dt, rd->d[j]) && hsd_buf_append(&dtext, b, len)) {
            hsd_buf_free(&dtext);
            return hsd_eng_oom();
        }
    }
    int32_t room = g->t_limit - (int32_t)g->T.ids.n - 1;
    hsd_status s =
        hsd_bridge_candidates(&g->T, &g->text, dtext.p ? dtext.p : "", dtext.n, &rd->cand,
                              room < HSD_ENG_MAX_CAND ? (room > 0 ? room : 0) : HSD_ENG_MAX_CAND);
    hsd_buf_free(&dtext);
    /* candidates must be ids the target model knows */
    size_t n = 0;
    while (!s && n < rd->cand.n && rd->cand.p[n] >= 0 && rd->cand.p[n] < e->vt) n++;
    rd->m = (int32_t)n;
    rd->t2 = hsd_timer_ms();
    g->t_bridge += rd->t2 - rd->t1;
    *cand = rd->cand.p;
    *m = rd->m;
    *width = e->vt;
    return s;
}

static hsd_status slem_finish(hsd_eng_seq *g) {
    hsd_eng_round_data *rd = &g->rd;
    int32_t out[HSD_ENG_MAX_CAND + 1], acc = 0;
    int32_t r =
        hsd_verify_slem(g->p, g->e->vt, rd->cand.p, rd->m, g->greedy, &g->rng_verify, out, &acc);
    g->t_verify += hsd_timer_ms() - rd->t2;
    g->rounds++;
    if (rd->m) g->first_tried++, g->first_acc += acc > 0;
    g->drafted += rd->m;
    g->accepted += acc;
    return hsd_eng_commit(g, acc, out, r);
}

const hsd_eng_round hsd_eng_round_slem = {
    .name = "slem",
    .drafts = true,
    .draft_take = hsd_eng_draft_take,
    .candidates = slem_candidates,
    .finish = slem_finish,
};
