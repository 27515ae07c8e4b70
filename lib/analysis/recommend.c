/* The recommender (lib/analysis/recommend.h). */
#include "lib/analysis/recommend.h"

#include <stdio.h>
#include <string.h>

#include "lib/base/error.h"

hsd_status hsd_recommend_facts(const hsd_tokenizer *t, const hsd_tokenizer *d,
                               const hsd_vocab_map *vm, bool psi, hsd_pair_report *r) {
    if (!t || !d || !vm || !r)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_recommend_facts: NULL argument");
    r->t_size = r->t_special = r->d_size = r->d_special = r->d_max_surface = 0;
    for (int32_t id = 0; id < vm->n_t; id++) {
        if (!hsd_tokenizer_id_to_token(t, id)) continue;
        r->t_size++;
        r->t_special += hsd_tokenizer_is_special(t, id);
    }
    r->intersection = vm->n_t_mapped;
    int64_t sum = 0, cnt = 0;
    for (int32_t id = 0; id < vm->n_d; id++) {
        if (!hsd_tokenizer_id_to_token(d, id)) continue;
        r->d_size++;
        if (hsd_tokenizer_is_special(d, id)) {
            r->d_special++;
            continue;
        }
        size_t len;
        hsd_tokenizer_token_bytes(d, id, &len);
        if (!len) continue;
        if ((int32_t)len > r->d_max_surface) r->d_max_surface = (int32_t)len;
        sum += (int64_t)len;
        cnt++;
    }
    r->d_mean_surface = cnt ? (double)sum / (double)cnt : 0.0;
    r->ratio = r->t_size ? (double)r->intersection / (double)r->t_size : 0.0;
    r->identical = vm->identical;
    r->has_psi = false;
    /* ψ only decides between SLRS and SLEM for short drafter tokens: skip it otherwise
     * unless asked (the pair report prints it) */
    bool short_tokens = r->d_max_surface > 0 && r->d_max_surface <= HSD_PAIR_SLRS_MAX_BYTES;
    if (psi || (short_tokens && !r->identical)) {
        hsd_status s = hsd_pair_psi_summary(t, d, &r->psi);
        if (s) return s;
        r->has_psi = true;
    }
    return HSD_OK;
}

hsd_algo hsd_recommend(const hsd_pair_report *r, char *reason, size_t cap) {
    char tmp[1];
    if (!reason || !cap) reason = tmp, cap = sizeof tmp;
    if (r->identical) {
        snprintf(reason, cap,
                 "identical vocabularies: standard speculative decoding needs no translation");
        return HSD_ALGO_SD;
    }
    if (r->ratio >= HSD_PAIR_TLI_MIN_VOCAB &&
        (!r->has_corpus || r->corpus_ratio >= HSD_PAIR_TLI_MIN_CORPUS)) {
        if (r->has_corpus)
            snprintf(reason, cap,
                     "large vocabulary overlap: |T∩D|/|T| = %.3f >= %.2f and %.1f%% of the target "
                     "tokens used on the corpus are drafter tokens (>= %.0f%%)",
                     r->ratio, HSD_PAIR_TLI_MIN_VOCAB, 100.0 * r->corpus_ratio,
                     100.0 * HSD_PAIR_TLI_MIN_CORPUS);
        else
            snprintf(reason, cap, "large vocabulary overlap: |T∩D|/|T| = %.3f >= %.2f", r->ratio,
                     HSD_PAIR_TLI_MIN_VOCAB);
        return HSD_ALGO_TLI;
    }
    bool short_tokens = r->d_max_surface > 0 && r->d_max_surface <= HSD_PAIR_SLRS_MAX_BYTES;
    if (short_tokens && r->has_psi && r->psi.nodes_p75 > HSD_PAIR_SLRS_MAX_NODES) {
        snprintf(reason, cap,
                 "drafter tokens are short (longest %d bytes) but psi is costly: a quarter of "
                 "the target tokens need more than %.1f drafter tree nodes (> %.0f), %.3g "
                 "decompositions at most: SLEM works for any pair",
                 r->d_max_surface, r->psi.nodes_p75, HSD_PAIR_SLRS_MAX_NODES, r->psi.max);
        return HSD_ALGO_SLEM;
    }
    if (short_tokens) {
        if (r->has_psi)
            snprintf(reason, cap,
                     "drafter tokens are short (longest %d bytes <= %d) and psi is cheap (3 of 4 "
                     "target tokens need at most %.1f drafter tree nodes <= %.0f; n_max %d): "
                     "SLRS accepts at least as often as SLEM",
                     r->d_max_surface, HSD_PAIR_SLRS_MAX_BYTES, r->psi.nodes_p75,
                     HSD_PAIR_SLRS_MAX_NODES, r->psi.n_max);
        else
            snprintf(reason, cap,
                     "drafter tokens are short (longest %d bytes <= %d): SLRS's psi stays cheap "
                     "and accepts at least as often as SLEM",
                     r->d_max_surface, HSD_PAIR_SLRS_MAX_BYTES);
        return HSD_ALGO_SLRS;
    }
    snprintf(reason, cap,
             "overlap too small for TLI (|T∩D|/|T| = %.3f%s) and drafter tokens too long for "
             "SLRS (longest %d bytes > %d): SLEM works for any pair",
             r->ratio,
             r->has_corpus && r->corpus_ratio < HSD_PAIR_TLI_MIN_CORPUS
                 ? ", corpus-used ratio below 0.50"
                 : "",
             r->d_max_surface, HSD_PAIR_SLRS_MAX_BYTES);
    return HSD_ALGO_SLEM;
}
