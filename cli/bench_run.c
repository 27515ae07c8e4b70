/* hsd bench generate: every algorithm over every prompt at each temperature, summed per cell.
 *
 * Fairness: for each prompt all algorithms run back to back (AR first), so the load of this
 * shared machine drifts over all of them alike; every run starts from empty KV caches
 * (hsd_engine_reset), so TTFT includes the prefill for every algorithm. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench_generate.h"
#include "hsd.h"

hsd_bench_cell *hsd_bench_cell_at(hsd_bench *b, int d, int t, int s, int a) {
    return &b->cells[((d * b->n_temps + t) * (b->n_sets + 1) + s) * b->n_algos + a];
}

int hsd_bench_has_algo(const hsd_bench *b, int algo) {
    for (int i = 0; i < b->n_algos; i++)
        if (b->algos[i] == algo) return 1;
    return 0;
}

/* One generation; adds it to the cell. ar_ids (greedy only) holds AR's output to compare. */
static int run_one(hsd_bench *b, hsd_bench_dir *d, int algo, float temp, const char *prompt,
                   uint64_t seed, hsd_bench_cell *c, hsd_gen_result *keep, const hsd_gen_result *ar,
                   const char *where) {
    hsd_engine *e = algo == HSD_ALGO_SD ? d->self : d->pair;
    /* both engines share the target model: forget cached prefixes so each run prefills */
    hsd_engine_reset(d->pair);
    hsd_engine_reset(d->self);
    hsd_gen_params gp = hsd_gen_default_params();
    gp.algo = (hsd_algo)algo;
    gp.max_new_tokens = b->n_gen;
    gp.n_draft = b->k;
    gp.temp = temp;
    gp.seed = seed;
    gp.slrs_top_k = b->slrs_top_k;
    gp.slrs_max_nodes = b->slrs_nodes;
    gp.slrs_lookahead = b->slrs_rule;
    gp.slrs_single_forward = b->slrs_one != 0;
    gp.adaptive_k = b->adaptive_k != 0;
    gp.cost_k = b->cost_k != 0;
    if (algo == HSD_ALGO_SLRS) gp.n_draft = b->slrs_k; /* the tree's depth limit */
    hsd_gen_result r = HSD_GEN_RESULT_INIT;
    hsd_bench_counted *dc = algo == HSD_ALGO_SD ? &d->cs : &d->cd;
    long f0 = dc->n_fwd;
    if (hsd_engine_generate(e, prompt, strlen(prompt), &gp, &r)) {
        fprintf(stderr, "hsd bench generate: %s %s: %s\n", d->name, hsd_algo_name((hsd_algo)algo),
                hsd_last_error());
        return 1;
    }
    c->runs++;
    c->tps += r.tokens_per_s;
    c->dec_tps += r.tpot_ms > 0 ? 1000.0 / r.tpot_ms : 0;
    c->tau += r.tau;
    c->acc += r.acceptance_rate;
    c->ttft += r.ttft_ms;
    c->tpot += r.tpot_ms;
    c->draft_ms += r.draft_ms;
    c->verify_ms += r.verify_ms;
    c->bridge_ms += r.bridge_ms;
    c->total_ms += r.total_ms;
    c->rounds += r.n_rounds;
    c->drafted += r.n_drafted;
    c->accepted += r.n_accepted;
    c->tokens += r.n_ids;
    c->d_fwd += algo == HSD_ALGO_AR ? 0 : dc->n_fwd - f0;
    c->first_acc += r.first_accept_rate;
    if (r.slrs) { /* SLRS only; the other algorithms add 0, as before */
        c->exp_acc += r.slrs->expected_accept, c->exp_em += r.slrs->expected_accept_em;
        c->psi_ms += r.slrs->psi_ms, c->tree_nodes += r.slrs->tree_nodes;
        c->tree_fwd += r.slrs->tree_forwards;
    }
    if (ar && temp <= 0) {
        int32_t i = 0;
        while (i < r.n_ids && i < ar->n_ids && r.ids[i] == ar->ids[i]) i++;
        if (i < r.n_ids || i < ar->n_ids) {
            c->mismatches++;
            b->total_mismatches++;
            fprintf(stderr,
                    "GREEDY MISMATCH %s %s %s: ids differ from AR at %d (%d vs %d tokens)\n",
                    d->name, hsd_algo_name((hsd_algo)algo), where, i, r.n_ids, ar->n_ids);
        }
    }
    if (keep)
        *keep = r;
    else
        hsd_gen_result_free(&r);
    return 0;
}

int hsd_bench_run_all(hsd_bench *b) {
    for (int di = 0; di < b->n_dirs; di++) {
        hsd_bench_dir *d = &b->dirs[di];
        for (int ti = 0; ti < b->n_temps; ti++)
            for (int si = 0; si < b->n_sets; si++) {
                for (int pi = 0; pi < b->sets[si].n; pi++) {
                    hsd_gen_result ar = HSD_GEN_RESULT_INIT;
                    int have_ar = 0;
                    char where[96];
                    snprintf(where, sizeof where, "temp %g %s #%d", b->temps[ti], b->sets[si].name,
                             pi);
                    for (int ai = 0; ai < b->n_algos; ai++) {
                        int algo = b->algos[ai];
                        if (algo == HSD_ALGO_SD && !d->self) continue;
                        hsd_bench_cell *c = hsd_bench_cell_at(b, di, ti, si, ai);
                        if (run_one(b, d, algo, b->temps[ti], b->sets[si].p[pi],
                                    b->seed + (uint64_t)pi, c, algo == HSD_ALGO_AR ? &ar : NULL,
                                    have_ar ? &ar : NULL, where)) {
                            if (have_ar) hsd_gen_result_free(&ar);
                            return 1;
                        }
                        if (algo == HSD_ALGO_AR) have_ar = 1;
                    }
                    if (have_ar) hsd_gen_result_free(&ar);
                }
                if (!b->json)
                    fprintf(stderr, "  done: %s temp %g %s\n", d->name, b->temps[ti],
                            b->sets[si].name);
            }
    }
    return 0;
}

void hsd_bench_finish(hsd_bench *b) {
    for (int di = 0; di < b->n_dirs; di++)
        for (int ti = 0; ti < b->n_temps; ti++)
            for (int ai = 0; ai < b->n_algos; ai++) {
                hsd_bench_cell *all = hsd_bench_cell_at(b, di, ti, b->n_sets, ai);
                for (int si = 0; si < b->n_sets; si++) {
                    const hsd_bench_cell *c = hsd_bench_cell_at(b, di, ti, si, ai);
                    all->runs += c->runs;
                    all->tps += c->tps, all->dec_tps += c->dec_tps, all->tau += c->tau;
                    all->acc += c->acc, all->ttft += c->ttft, all->tpot += c->tpot;
                    all->draft_ms += c->draft_ms, all->verify_ms += c->verify_ms;
                    all->bridge_ms += c->bridge_ms, all->total_ms += c->total_ms;
                    all->rounds += c->rounds, all->drafted += c->drafted;
                    all->accepted += c->accepted, all->tokens += c->tokens, all->d_fwd += c->d_fwd;
                    all->mismatches += c->mismatches;
                    all->first_acc += c->first_acc, all->exp_acc += c->exp_acc;
                    all->exp_em += c->exp_em, all->psi_ms += c->psi_ms;
                    all->tree_nodes += c->tree_nodes, all->tree_fwd += c->tree_fwd;
                }
            }
    for (int di = 0; di < b->n_dirs; di++)
        for (int ti = 0; ti < b->n_temps; ti++)
            for (int si = 0; si <= b->n_sets; si++) {
                const hsd_bench_cell *ar =
                    hsd_bench_has_algo(b, HSD_ALGO_AR) ? hsd_bench_cell_at(b, di, ti, si, 0) : NULL;
                for (int ai = 0; ai < b->n_algos; ai++)
                    hsd_bench_predict(hsd_bench_cell_at(b, di, ti, si, ai), ar, &b->dirs[di].cost);
            }
}
