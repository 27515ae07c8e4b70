/* The drafter's window: the drafter's context is its own, independent of the target's. When
 * the committed text no longer fits in it (with room for a round's drafts), the drafter
 * starts again on a trailing window of the text and re-prefills it.
 *
 * Any window is valid because the bridge works on text: the drafter only proposes, the
 * target verifies every candidate against its own full context, so the output (its law,
 * and the greedy text) is the target's whatever the drafter saw. A window costs acceptance
 * (the drafter forgets the beginning) and one prefill of about half the drafter's context
 * every half context of text, instead of drafting stopping for good.
 *
 * Where the window starts: at a word start (a whitespace byte) of the text, so that its
 * first word is tokenized as it is inside running text, and the window's ids are the
 * drafter's tokenization of that trailing text (the bridge's resync, the same re-encoding a
 * round uses), after BOS when the prompt got one. The same-vocabulary algorithm (SD), whose
 * drafter ids are the target's, takes the target's ids from a token boundary instead. */
#include <stdlib.h>
#include <string.h>

#include "lib/engine/engine.h"
#include "lib/base/error.h"
#include "lib/base/log.h"
#include "tokenize/tokenizer.h"

static bool is_space(unsigned char c) {
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* The first word start at or after b (a whitespace byte), within 64 bytes; else the first
 * character boundary at or after b. */
static size_t window_start(const hsd_buf *text, size_t b) {
    for (size_t p = b; p < text->n && p < b + 64; p++)
        if (is_space((unsigned char)text->p[p])) return p;
    while (b < text->n && ((unsigned char)text->p[b] & 0xC0) == 0x80) b++;
    return b;
}

/* The window's ids for a drafter of another vocabulary: [BOS] + the drafter's tokenization
 * of text[b..), with W positions at most; false when none fits. */
static hsd_status text_window(hsd_eng_seq *g, int32_t bos, int32_t W, hsd_bridge_side *w,
                              bool *ok) {
    const hsd_buf *text = &g->text;
    int32_t nb = bos >= 0;
    /* bytes per drafter token, from the side being replaced */
    double bpt = g->D.ids.n > 0 ? (double)text->n / (double)g->D.ids.n : 4.0;
    if (bpt < 1.0) bpt = 1.0;
    double want = (W - nb) * bpt * 0.9;
    *ok = false;
    for (int it = 0; it < 8 && want >= 1.0; it++) {
        size_t b = text->n > (size_t)want ? text->n - (size_t)want : 0;
        b = window_start(text, b);
        w->ids.n = 0;
        if (nb && hsd_ids_push(&w->ids, bos)) return hsd_eng_oom();
        w->seg = nb;
        w->seg_off = b;
        int32_t first;
        hsd_status s = hsd_bridge_resync(w, text, &first);
        if (s) return s;
        int32_t got = (int32_t)w->ids.n;
        if (got <= W) {
            *ok = got > nb;
            return HSD_OK;
        }
        want *= 0.9 * (double)(W - nb) / (double)(got - nb); /* fewer bytes, same rate */
    }
    return HSD_OK;
}

hsd_status hsd_eng_window_fit(hsd_eng_seq *g, int32_t need) {
    const int32_t lim = g->d_limit, n_old = (int32_t)g->D.ids.n;
    if (n_old + need <= lim) return HSD_OK;
    hsd_engine *e = g->e;
    int32_t bos = g->prm->add_bos ? hsd_tokenizer_bos_id(e->dt) : -1, nb = bos >= 0;
    /* half the context: a slide every half context of text, each re-prefilling half */
    int32_t W = lim / 2 < lim - need ? lim / 2 : lim - need;
    if (W - nb < 1) return HSD_OK; /* no window fits: the caller drafts less or not at all */
    hsd_status s = HSD_OK;
    if (g->algo == HSD_ALGO_SD) {
        /* the target's own ids from a token boundary: T.ids[base..) after BOS */
        int32_t base = (int32_t)g->T.ids.n - (W - nb);
        if (base < 0) base = 0;
        if (nb && g->T.ids.p[base] == bos) nb = 0, bos = -1;
        g->D.ids.n = 0;
        if (nb && hsd_ids_push(&g->D.ids, bos)) return hsd_eng_oom();
        for (size_t i = (size_t)base; i < g->T.ids.n; i++)
            if (hsd_ids_push(&g->D.ids, g->T.ids.p[i])) return hsd_eng_oom();
        g->sd_base = base;
        g->sd_pre = nb;
        g->D.seg = (int32_t)g->D.ids.n;
        g->D.seg_off = g->text.n;
    } else {
        hsd_bridge_side w = {.tok = e->dt, .specials_silent = g->D.specials_silent};
        bool ok;
        if ((s = text_window(g, bos, W, &w, &ok)) || !ok) {
            hsd_ids_free(&w.ids);
            return s; /* no window found: the caller drafts less or not at all */
        }
        hsd_ids_free(&g->D.ids);
        g->D = w;
    }
    g->d_kv = 0;
    g->window_slides++;
    if ((s = hsd_model_kv_truncate(e->dm, 0))) return s;
    hsd_log(HSD_LOG_INFO,
            "sequence %d: the drafter's context (%d positions) is full at %d ids: it goes on "
            "from a window of the last %d ids of the text (slide %d)",
            (int)g->index, (int)lim, (int)n_old, (int)g->D.ids.n, (int)g->window_slides);
    return HSD_OK;
}
