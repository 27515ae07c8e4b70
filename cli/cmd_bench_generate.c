/* hsd bench generate: every algorithm over every bench prompt at each temperature, for one
 * or both directions of a model pair, with the round cost model next to the measurement.
 *
 * Fairness: for each prompt all algorithms run back to back (AR first), so the load of this
 * shared machine drifts over all of them alike; every run starts from empty KV caches
 * (hsd_engine_reset), so TTFT includes the prefill for every algorithm. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench_generate.h"
#include "cli/cli.h"
#include "cli/cli_util.h"
#include "hsd.h"

#define MAX_SETS 8
#define MAX_ALGOS 8
#define MAX_TEMPS 4

typedef struct prompt_set {
    char name[64];
    char **p;
    int n;
} prompt_set;

/* Counts the forwards a model gets through the engine: k' (drafter forwards per round) is
 * then measured, not assumed. */
typedef struct counted {
    hsd_model *inner;
    long n_fwd;
} counted;

static int32_t c_vocab(void *c) { return hsd_model_vocab_size(((counted *)c)->inner); }
static int32_t c_nctx(void *c) { return hsd_model_n_ctx(((counted *)c)->inner); }
static int32_t c_kvlen(void *c) { return hsd_model_kv_len(((counted *)c)->inner); }
static hsd_status c_trunc(void *c, int32_t len) { return hsd_model_kv_truncate(((counted *)c)->inner, len); }
static hsd_status c_keep(void *c, int32_t base, const int32_t *keep, int32_t n) {
    return hsd_model_kv_keep(((counted *)c)->inner, base, keep, n);
}
static hsd_status c_forward(void *c, const int32_t *t, int32_t n, const int32_t *par,
                            const int32_t *rows, int32_t n_rows, float *logits) {
    ((counted *)c)->n_fwd++;
    return hsd_model_forward(((counted *)c)->inner, t, n, par, rows, n_rows, logits);
}

static int32_t c_nseq(void *c) {
    return hsd_model_n_seq(((counted *)c)->inner);
}
static hsd_status c_select(void *c, int32_t seq) {
    return hsd_model_seq_select(((counted *)c)->inner, seq);
}
static hsd_status c_forward_batch(void *c, const hsd_model_batch_seq *seqs, int32_t n,
                                  float *logits) {
    ((counted *)c)->n_fwd++;
    return hsd_model_forward_batch(((counted *)c)->inner, seqs, n, logits);
}

static hsd_model *wrap(counted *c) {
    hsd_model_iface it = {c,      c_vocab, c_nctx, c_forward, c_kvlen,        c_trunc,
                          c_keep, NULL,    c_nseq, c_select,  c_forward_batch};
    hsd_model *m = NULL;
    return hsd_model_from_iface(&it, &m) ? NULL : m;
}

/* Keeps the last ~clip characters, starting at a word (as tests/test_engine.c does), so a
 * model with a short context (babyllama: 256 tokens, character-level) fits prompt + output. */
static char *clip_prompt(const char *p, size_t clip) {
    size_t n = strlen(p), start = clip && n > clip ? n - clip : 0;
    while (start > 0 && start < n && p[start - 1] != ' ') start++;
    return strdup(p + start);
}

static int load_set(const char *path, int max_prompts, size_t clip, prompt_set *s) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "hsd bench generate: cannot open %s\n", path);
        return 1;
    }
    const char *base = strrchr(path, '/');
    snprintf(s->name, sizeof s->name, "%s", base ? base + 1 : path);
    char *dot = strstr(s->name, ".jsonl");
    if (dot) *dot = 0;
    char *line = NULL;
    size_t cap = 0;
    s->n = 0;
    s->p = NULL;
    while (getline(&line, &cap, f) > 0 && (max_prompts <= 0 || s->n < max_prompts)) {
        json_t *j = json_loads(line, 0, NULL);
        const char *p = json_string_value(json_object_get(j, "prompt"));
        if (p) {
            char **np = realloc(s->p, (size_t)(s->n + 1) * sizeof *np);
            if (np) (s->p = np)[s->n++] = clip_prompt(p, clip);
        }
        json_decref(j);
    }
    free(line);
    fclose(f);
    return s->n == 0;
}

/* One direction: target + its tokenizer, drafter + its tokenizer, a second target instance
 * for SD (a model drafting for itself). */
typedef struct direction {
    char name[128];
    hsd_model *t_raw, *d_raw, *s_raw, *t, *d, *s;
    counted ct, cd, cs;
    hsd_tokenizer *tt, *dt;
    hsd_engine *pair, *self;
    hsd_bench_cost cost;
} direction;

static const char *stem(const char *path, char *buf, size_t cap) {
    const char *b = strrchr(path, '/');
    snprintf(buf, cap, "%s", b ? b + 1 : path);
    char *dot = strrchr(buf, '.');
    if (dot && dot != buf) *dot = 0;
    return buf;
}

static int dir_open(direction *d, const char *tm, const char *tt, const char *dm, const char *dt,
                    int32_t threads, int need_self, int32_t n_seq) {
    hsd_model_params mp = hsd_model_default_params();
    mp.n_threads = threads;
    mp.n_seq = n_seq;
    char a[64], b[64];
    snprintf(d->name, sizeof d->name, "%s<-%s", stem(tm, a, sizeof a), stem(dm, b, sizeof b));
    if (hsd_tokenizer_load_file(tt, &d->tt) || hsd_tokenizer_load_file(dt, &d->dt) ||
        hsd_model_load(tm, &mp, &d->t_raw) || hsd_model_load(dm, &mp, &d->d_raw) ||
        (need_self && hsd_model_load(tm, &mp, &d->s_raw))) {
        fprintf(stderr, "hsd bench generate: %s\n", hsd_last_error());
        return 1;
    }
    d->ct.inner = d->t_raw;
    d->cd.inner = d->d_raw;
    d->cs.inner = d->s_raw;
    if (!(d->t = wrap(&d->ct)) || !(d->d = wrap(&d->cd)) || (need_self && !(d->s = wrap(&d->cs))) ||
        hsd_engine_init(d->t, d->tt, d->d, d->dt, &d->pair) ||
        (need_self && hsd_engine_init(d->t, d->tt, d->s, d->tt, &d->self))) {
        fprintf(stderr, "hsd bench generate: %s\n", hsd_last_error());
        return 1;
    }
    return 0;
}

static void dir_close(direction *d) {
    hsd_engine_free(d->pair);
    hsd_engine_free(d->self);
    hsd_model_free(d->t);
    hsd_model_free(d->d);
    hsd_model_free(d->s);
    hsd_model_free(d->t_raw);
    hsd_model_free(d->d_raw);
    hsd_model_free(d->s_raw);
    hsd_tokenizer_free(d->tt);
    hsd_tokenizer_free(d->dt);
}

/* Mean prompt length in a tokenizer's ids plus half the generation: the context at which a
 * typical round runs, so the cost model is measured where the rounds happen. */
static int32_t typical_ctx(const hsd_tokenizer *tok, const prompt_set *sets, int n_sets, int32_t n_gen) {
    double sum = 0;
    int cnt = 0;
    for (int s = 0; s < n_sets; s++)
        for (int i = 0; i < sets[s].n; i++) {
            size_t n = 0;
            int32_t *ids = NULL;
            if (!hsd_tokenizer_encode_alloc(tok, sets[s].p[i], strlen(sets[s].p[i]), false, &ids, &n)) {
                sum += (double)n + (hsd_tokenizer_bos_id(tok) >= 0);
                cnt++;
            }
            hsd_free(ids);
        }
    return (int32_t)(cnt ? sum / cnt : 16) + n_gen / 2;
}

static void usage(void) {
    fprintf(stderr,
            "usage: hsd bench generate --target M --target-tokenizer T --draft M2 --draft-tokenizer D\n"
            "         [--prompts FILE ...] [--max-prompts P] [--algos ar,sd,union,tli,slem(,slrs)]\n"
            "         [--temps 0,1] [-k K] [-n N] [--seed S] [--both] [--threads T] [--clip C]\n"
            "         [--json] [--svg FILE] [--results-md FILE] [--batch 1,2,4,8] [--adaptive-k]\n"
            "         [--slrs-k K] [--slrs-top-k K] [--slrs-nodes N]   (slrs tree: depth 8, top-2, 16)\n"
            "         [--slrs-lookahead determined|fixed|nmax] [--slrs-one-forward]\n"
            "  Runs every algorithm on every prompt (default: bench/prompts/{summarization,code,\n"
            "  long_context}.jsonl) at each temperature; N new tokens (default 64), k = 4.\n"
            "  --both also runs the swapped pair (drafter as target). sd = the target drafting for\n"
            "  itself (a second instance). Prompts are clipped to their last C characters at a word\n"
            "  start (default 150 when a model's context is <= 1024 tokens, else 0 = whole).\n"
            "  --batch B1,B2,..: instead, for each batch size B, the prompts in groups of B through\n"
            "  hsd_engine_generate_batch vs the same prompts one by one (hsd_engine_generate, seed\n"
            "  S + index both ways): tokens/s of each and their ratio; outputs must match.\n"
            "  %s\n",
            HSD_BENCH_FORMULA);
}

typedef struct bench {
    const char *tm, *tt, *dm, *dt;
    const char *set_paths[MAX_SETS];
    prompt_set sets[MAX_SETS + 1];
    int n_sets, max_prompts, both, json, n_algos, n_temps;
    int algos[MAX_ALGOS];
    float temps[MAX_TEMPS];
    int32_t k, n_gen, threads, clip;
    int32_t slrs_k, slrs_top_k, slrs_nodes, slrs_rule, slrs_one, adaptive_k;
    uint64_t seed;
    const char *svg, *md;
    direction dirs[2];
    int n_dirs;
    int32_t batches[8];
    int n_batches;
    hsd_bench_cell *cells; /* [dir][temp][set + 1 ("all")][algo] */
    int total_mismatches;
} bench;

static hsd_bench_cell *cell_at(bench *b, int d, int t, int s, int a) {
    return &b->cells[((d * b->n_temps + t) * (b->n_sets + 1) + s) * b->n_algos + a];
}

static int parse_args(bench *b, int argc, char **argv) {
    const char *algos = "ar,sd,union,tli,slem", *temps = "0,1";
    b->k = 4, b->n_gen = 64, b->threads = 1, b->clip = -1;
    b->slrs_k = 8, b->slrs_top_k = 2, b->slrs_nodes = 16;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) { b->json = 1; continue; }
        if (!strcmp(a, "--both")) { b->both = 1; continue; }
        if (!strcmp(a, "--slrs-one-forward")) { b->slrs_one = 1; continue; }
        if (!strcmp(a, "--adaptive-k")) { b->adaptive_k = 1; continue; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return 1;
        if (!v) { fprintf(stderr, "hsd bench generate: %s needs a value\n", a); return 1; }
        i++;
        if (!strcmp(a, "--target")) b->tm = v;
        else if (!strcmp(a, "--target-tokenizer")) b->tt = v;
        else if (!strcmp(a, "--draft")) b->dm = v;
        else if (!strcmp(a, "--draft-tokenizer")) b->dt = v;
        else if (!strcmp(a, "--prompts") && b->n_sets < MAX_SETS) b->set_paths[b->n_sets++] = v;
        else if (!strcmp(a, "--max-prompts")) b->max_prompts = atoi(v);
        else if (!strcmp(a, "--algos")) algos = v;
        else if (!strcmp(a, "--temps")) temps = v;
        else if (!strcmp(a, "-k")) b->k = atoi(v);
        else if (!strcmp(a, "-n")) b->n_gen = atoi(v);
        else if (!strcmp(a, "--seed")) b->seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--threads")) b->threads = atoi(v);
        else if (!strcmp(a, "--clip")) b->clip = atoi(v);
        else if (!strcmp(a, "--svg")) b->svg = v;
        else if (!strcmp(a, "--results-md")) b->md = v;
        else if (!strcmp(a, "--batch")) {
            b->n_batches = hsd_cli_parse_ints(v, b->batches, 8);
            for (int k = 0; k < b->n_batches; k++)
                if (b->batches[k] < 1) b->n_batches = -1;
            if (b->n_batches <= 0) { fprintf(stderr, "hsd bench generate: bad --batch '%s'\n", v); return 1; }
        }
        else if (!strcmp(a, "--slrs-k")) b->slrs_k = atoi(v);
        else if (!strcmp(a, "--slrs-top-k")) b->slrs_top_k = atoi(v);
        else if (!strcmp(a, "--slrs-nodes")) b->slrs_nodes = atoi(v);
        else if (!strcmp(a, "--slrs-lookahead"))
            b->slrs_rule = !strcmp(v, "fixed") ? 1 : !strcmp(v, "nmax") ? 2 : 0;
        else { fprintf(stderr, "hsd bench generate: unknown option %s\n", a); return 1; }
    }
    if (!b->tm || !b->tt || !b->dm || !b->dt || b->k < 1 || b->k > 63 || b->n_gen < 1) return 1;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", algos);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        int a = hsd_algo_parse(t);
        if (a < 0 || a == HSD_ALGO_AUTO || b->n_algos == MAX_ALGOS) {
            fprintf(stderr, "hsd bench generate: bad algorithm '%s'\n", t);
            return 1;
        }
        b->algos[b->n_algos++] = a;
    }
    /* AR first: it is the reference of the speedups and of the greedy check */
    for (int i = 1; i < b->n_algos; i++)
        if (b->algos[i] == HSD_ALGO_AR) b->algos[i] = b->algos[0], b->algos[0] = HSD_ALGO_AR;
    snprintf(buf, sizeof buf, "%s", temps);
    for (char *t = strtok(buf, ","); t && b->n_temps < MAX_TEMPS; t = strtok(NULL, ","))
        b->temps[b->n_temps++] = strtof(t, NULL);
    if (!b->n_sets) {
        b->set_paths[0] = "bench/prompts/summarization.jsonl";
        b->set_paths[1] = "bench/prompts/code.jsonl";
        b->set_paths[2] = "bench/prompts/long_context.jsonl";
        b->n_sets = 3;
    }
    return b->n_algos == 0 || b->n_temps == 0;
}

static int has_algo(const bench *b, int algo) {
    for (int i = 0; i < b->n_algos; i++)
        if (b->algos[i] == algo) return 1;
    return 0;
}

/* One generation; adds it to the cell. ar_ids (greedy only) holds AR's output to compare. */
static int run_one(bench *b, direction *d, int algo, float temp, const char *prompt, uint64_t seed,
                   hsd_bench_cell *c, hsd_gen_result *keep, const hsd_gen_result *ar, const char *where) {
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
    if (algo == HSD_ALGO_SLRS) gp.n_draft = b->slrs_k; /* the tree's depth limit */
    hsd_gen_result r;
    counted *dc = algo == HSD_ALGO_SD ? &d->cs : &d->cd;
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
    c->exp_acc += r.expected_accept, c->exp_em += r.expected_accept_em;
    c->psi_ms += r.psi_ms, c->tree_nodes += r.tree_nodes, c->tree_fwd += r.tree_forwards;
    if (ar && temp <= 0) {
        int32_t i = 0;
        while (i < r.n_ids && i < ar->n_ids && r.ids[i] == ar->ids[i]) i++;
        if (i < r.n_ids || i < ar->n_ids) {
            c->mismatches++;
            b->total_mismatches++;
            fprintf(stderr, "GREEDY MISMATCH %s %s %s: ids differ from AR at %d (%d vs %d tokens)\n",
                    d->name, hsd_algo_name((hsd_algo)algo), where, i, r.n_ids, ar->n_ids);
        }
    }
    if (keep) *keep = r;
    else hsd_gen_result_free(&r);
    return 0;
}

static int run_all(bench *b) {
    for (int di = 0; di < b->n_dirs; di++) {
        direction *d = &b->dirs[di];
        for (int ti = 0; ti < b->n_temps; ti++)
            for (int si = 0; si < b->n_sets; si++) {
                for (int pi = 0; pi < b->sets[si].n; pi++) {
                    hsd_gen_result ar;
                    int have_ar = 0;
                    char where[96];
                    snprintf(where, sizeof where, "temp %g %s #%d", b->temps[ti], b->sets[si].name, pi);
                    for (int ai = 0; ai < b->n_algos; ai++) {
                        int algo = b->algos[ai];
                        if (algo == HSD_ALGO_SD && !d->self) continue;
                        hsd_bench_cell *c = cell_at(b, di, ti, si, ai);
                        if (run_one(b, d, algo, b->temps[ti], b->sets[si].p[pi], b->seed + (uint64_t)pi, c,
                                    algo == HSD_ALGO_AR ? &ar : NULL, have_ar ? &ar : NULL, where)) {
                            if (have_ar) hsd_gen_result_free(&ar);
                            return 1;
                        }
                        if (algo == HSD_ALGO_AR) have_ar = 1;
                    }
                    if (have_ar) hsd_gen_result_free(&ar);
                }
                if (!b->json) fprintf(stderr, "  done: %s temp %g %s\n", d->name, b->temps[ti], b->sets[si].name);
            }
    }
    return 0;
}

/* Sums the per-set cells into the "all" row, then applies the cost model everywhere. */
static void finish(bench *b) {
    for (int di = 0; di < b->n_dirs; di++)
        for (int ti = 0; ti < b->n_temps; ti++)
            for (int ai = 0; ai < b->n_algos; ai++) {
                hsd_bench_cell *all = cell_at(b, di, ti, b->n_sets, ai);
                for (int si = 0; si < b->n_sets; si++) {
                    const hsd_bench_cell *c = cell_at(b, di, ti, si, ai);
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
                const hsd_bench_cell *ar = has_algo(b, HSD_ALGO_AR) ? cell_at(b, di, ti, si, 0) : NULL;
                for (int ai = 0; ai < b->n_algos; ai++)
                    hsd_bench_predict(cell_at(b, di, ti, si, ai), ar, &b->dirs[di].cost);
            }
}

static double mean(double sum, int n) { return n ? sum / n : 0; }

static const char *set_name(const bench *b, int si) { return si < b->n_sets ? b->sets[si].name : "all"; }

static const int cost_ns[] = {1, 2, 4, 8, 16, 32, 48};
#define N_COST_NS ((int)(sizeof cost_ns / sizeof cost_ns[0]))

static void print_text(bench *b) {
    printf("%s\nk = %d, N = %d new tokens, %d thread(s), prompt clip %d chars, seed %llu\n", HSD_BENCH_FORMULA,
           b->k, b->n_gen, b->threads, b->clip, (unsigned long long)b->seed);
    for (int di = 0; di < b->n_dirs; di++) {
        direction *d = &b->dirs[di];
        const hsd_bench_cost *c = &d->cost;
        printf("\n== %s  (target: %s; drafter: %s)\n", d->name, hsd_model_desc(d->t_raw), hsd_model_desc(d->d_raw));
        printf("cost model: c_d = %.4f ms (drafter, 1 token, prefix %d)%s", c->c_draft, c->d_prefix,
               d->self ? "" : "\n");
        if (d->self) printf(", c_self = %.4f ms (target copy as drafter)\n", c->c_self);
        printf("c_t(n) ms [x c_t(1)] at prefix %d:", c->t_prefix);
        for (int i = 0; i < N_COST_NS; i++)
            printf(" n=%d %.4f [%.2f]", cost_ns[i], c->c_target[cost_ns[i]], c->c_target[cost_ns[i]] / c->c_target[1]);
        printf("\n%-5s %-14s %-6s %8s %8s %5s %5s %7s %7s %21s %6s %5s %6s %6s %6s %4s\n", "temp", "set", "algo",
               "tok/s", "dec tk/s", "tau", "acc", "TTFT", "TPOT", "draft/verify/bridge", "m", "k'", "pred",
               "meas", "ratio", "mism");
        for (int ti = 0; ti < b->n_temps; ti++)
            for (int si = 0; si <= b->n_sets; si++)
                for (int ai = 0; ai < b->n_algos; ai++) {
                    hsd_bench_cell *x = cell_at(b, di, ti, si, ai);
                    if (!x->runs) continue;
                    int n = x->runs;
                    printf("%-5g %-14s %-6s %8.0f %8.0f %5.2f %5.2f %7.2f %7.3f %6.1f/%6.1f/%6.1f %6.2f %5.2f %6.2f "
                           "%6.2f %6.2f %4d\n",
                           b->temps[ti], set_name(b, si), hsd_algo_name((hsd_algo)x->algo), mean(x->tps, n),
                           mean(x->dec_tps, n), x->tau_all, mean(x->acc, n), mean(x->ttft, n), mean(x->tpot, n),
                           mean(x->draft_ms, n), mean(x->verify_ms, n), mean(x->bridge_ms, n), x->m, x->k_prime,
                           x->predicted, x->measured, x->predicted > 0 ? x->measured / x->predicted : 0,
                           x->mismatches);
                }
        if (!has_algo(b, HSD_ALGO_SLRS)) continue;
        printf("string-level verification (all sets): first-candidate acceptance; SLRS also the expected\n"
               "acceptance sum min(p,psi) vs exact matching's sum p*psi on the same proposal, tree nodes,\n"
               "drafter forwards and psi time per round (SLRS tree: depth %d, top-%d, %d nodes, %s, %s)\n",
               b->slrs_k, b->slrs_top_k, b->slrs_nodes,
               b->slrs_rule == 1 ? "fixed depth" : b->slrs_rule == 2 ? "n_max" : "stop when determined",
               b->slrs_one ? "one forward per round" : "one forward per level");
        printf("%-5s %-6s %9s %9s %9s %7s %7s %8s\n", "temp", "algo", "first acc", "E[SLRS]", "E[EM]",
               "nodes", "fwds", "psi ms");
        for (int ti = 0; ti < b->n_temps; ti++)
            for (int ai = 0; ai < b->n_algos; ai++) {
                hsd_bench_cell *x = cell_at(b, di, ti, b->n_sets, ai);
                if (!x->runs || (x->algo != HSD_ALGO_SLEM && x->algo != HSD_ALGO_SLRS)) continue;
                int n = x->runs;
                if (x->algo == HSD_ALGO_SLEM)
                    printf("%-5g %-6s %9.3f\n", b->temps[ti], "slem", mean(x->first_acc, n));
                else
                    printf("%-5g %-6s %9.3f %9.3f %9.3f %7.1f %7.2f %8.4f\n", b->temps[ti], "slrs",
                           mean(x->first_acc, n), mean(x->exp_acc, n), mean(x->exp_em, n),
                           mean(x->tree_nodes, n), mean(x->tree_fwd, n), mean(x->psi_ms, n));
            }
    }
    printf("\ngreedy mismatches vs AR: %d\n", b->total_mismatches);
}

static json_t *cell_json(bench *b, int di, int ti, int si, hsd_bench_cell *x) {
    int n = x->runs;
    json_t *o = json_object();
    json_object_set_new(o, "direction", json_string(b->dirs[di].name));
    json_object_set_new(o, "algo", json_string(hsd_algo_name((hsd_algo)x->algo)));
    json_object_set_new(o, "temp", json_real(b->temps[ti]));
    json_object_set_new(o, "set", json_string(set_name(b, si)));
    json_object_set_new(o, "prompts", json_integer(n));
    json_object_set_new(o, "tokens_per_s", json_real(mean(x->tps, n)));
    json_object_set_new(o, "decode_tokens_per_s", json_real(mean(x->dec_tps, n)));
    json_object_set_new(o, "tau", json_real(x->tau_all));
    json_object_set_new(o, "acceptance_rate", json_real(mean(x->acc, n)));
    json_object_set_new(o, "ttft_ms", json_real(mean(x->ttft, n)));
    json_object_set_new(o, "tpot_ms", json_real(mean(x->tpot, n)));
    json_object_set_new(o, "draft_ms", json_real(mean(x->draft_ms, n)));
    json_object_set_new(o, "verify_ms", json_real(mean(x->verify_ms, n)));
    json_object_set_new(o, "bridge_ms", json_real(mean(x->bridge_ms, n)));
    json_object_set_new(o, "total_ms", json_real(mean(x->total_ms, n)));
    json_object_set_new(o, "generated_tokens", json_integer(x->tokens));
    json_object_set_new(o, "rounds", json_integer(x->rounds));
    json_object_set_new(o, "m", json_real(x->m));
    json_object_set_new(o, "k_prime", json_real(x->k_prime));
    json_object_set_new(o, "predicted_speedup", json_real(x->predicted));
    json_object_set_new(o, "measured_speedup", json_real(x->measured));
    json_object_set_new(o, "measured_speedup_e2e", json_real(x->measured_e2e));
    json_object_set_new(o, "measured_over_predicted", json_real(x->predicted > 0 ? x->measured / x->predicted : 0));
    json_object_set_new(o, "greedy_mismatches", json_integer(x->mismatches));
    if (x->algo == HSD_ALGO_SLEM || x->algo == HSD_ALGO_SLRS)
        json_object_set_new(o, "first_accept_rate", json_real(mean(x->first_acc, n)));
    if (x->algo == HSD_ALGO_SLRS) {
        json_object_set_new(o, "expected_accept", json_real(mean(x->exp_acc, n)));
        json_object_set_new(o, "expected_accept_em", json_real(mean(x->exp_em, n)));
        json_object_set_new(o, "psi_ms_per_round", json_real(mean(x->psi_ms, n)));
        json_object_set_new(o, "tree_nodes_per_round", json_real(mean(x->tree_nodes, n)));
        json_object_set_new(o, "tree_forwards_per_round", json_real(mean(x->tree_fwd, n)));
    }
    return o;
}

static void print_json(bench *b) {
    json_t *o = json_object(), *res = json_array(), *costs = json_array();
    json_object_set_new(o, "formula", json_string(HSD_BENCH_FORMULA));
    json_object_set_new(o, "k", json_integer(b->k));
    json_object_set_new(o, "n", json_integer(b->n_gen));
    json_object_set_new(o, "clip", json_integer(b->clip));
    json_object_set_new(o, "threads", json_integer(b->threads));
    for (int di = 0; di < b->n_dirs; di++) {
        const hsd_bench_cost *c = &b->dirs[di].cost;
        json_t *co = json_object(), *ct = json_array();
        for (int n = 1; n <= HSD_BENCH_COST_MAX_N; n++) json_array_append_new(ct, json_real(c->c_target[n]));
        json_object_set_new(co, "direction", json_string(b->dirs[di].name));
        json_object_set_new(co, "c_target_ms", ct);
        json_object_set_new(co, "c_draft_ms", json_real(c->c_draft));
        json_object_set_new(co, "c_self_ms", json_real(c->c_self));
        json_object_set_new(co, "target_prefix", json_integer(c->t_prefix));
        json_object_set_new(co, "draft_prefix", json_integer(c->d_prefix));
        json_array_append_new(costs, co);
        for (int ti = 0; ti < b->n_temps; ti++)
            for (int si = 0; si <= b->n_sets; si++)
                for (int ai = 0; ai < b->n_algos; ai++) {
                    hsd_bench_cell *x = cell_at(b, di, ti, si, ai);
                    if (x->runs) json_array_append_new(res, cell_json(b, di, ti, si, x));
                }
    }
    json_object_set_new(o, "cost", costs);
    json_object_set_new(o, "results", res);
    json_object_set_new(o, "greedy_mismatches", json_integer(b->total_mismatches));
    char *s = json_dumps(o, JSON_INDENT(1));
    if (s) puts(s);
    free(s);
    json_decref(o);
}

/* Markdown tables for bench/RESULTS.md (the prose around them is written by hand). */
static int write_md(bench *b) {
    FILE *f = fopen(b->md, "w");
    if (!f) {
        fprintf(stderr, "hsd bench generate: cannot write %s\n", b->md);
        return 1;
    }
    fprintf(f, "Predicted speedup per round: `%s`.\n\n", HSD_BENCH_FORMULA);
    for (int di = 0; di < b->n_dirs; di++) {
        const hsd_bench_cost *c = &b->dirs[di].cost;
        fprintf(f, "**%s**: c_d = %.4f ms", b->dirs[di].name, c->c_draft);
        if (b->dirs[di].self) fprintf(f, ", c_self = %.4f ms", c->c_self);
        fprintf(f, "; c_t(n) ms (× c_t(1)) at a %d-token prefix:", c->t_prefix);
        for (int i = 0; i < N_COST_NS; i++)
            fprintf(f, " %d: %.4f (%.2f)%s", cost_ns[i], c->c_target[cost_ns[i]],
                    c->c_target[cost_ns[i]] / c->c_target[1], i + 1 < N_COST_NS ? ";" : "");
        fprintf(f, "\n\n| temp | set | algo | tok/s | decode tok/s | τ | accept | TTFT ms | TPOT ms | "
                   "draft / verify / bridge ms | m | k' | predicted | measured | meas/pred | greedy mism. |\n"
                   "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (int ti = 0; ti < b->n_temps; ti++)
            for (int si = 0; si <= b->n_sets; si++)
                for (int ai = 0; ai < b->n_algos; ai++) {
                    hsd_bench_cell *x = cell_at(b, di, ti, si, ai);
                    int n = x->runs;
                    if (!n) continue;
                    fprintf(f, "| %g | %s | %s | %.0f | %.0f | %.2f | %.2f | %.2f | %.3f | %.1f / %.1f / %.1f | %.2f | "
                               "%.2f | %.2f | %.2f | %.2f | %s |\n",
                            b->temps[ti], set_name(b, si), hsd_algo_name((hsd_algo)x->algo), mean(x->tps, n),
                            mean(x->dec_tps, n), x->tau_all, mean(x->acc, n), mean(x->ttft, n), mean(x->tpot, n),
                            mean(x->draft_ms, n), mean(x->verify_ms, n), mean(x->bridge_ms, n), x->m, x->k_prime,
                            x->predicted, x->measured, x->predicted > 0 ? x->measured / x->predicted : 0,
                            b->temps[ti] <= 0 ? (x->mismatches ? "**MISMATCH**" : "0") : "–");
                }
        fputc('\n', f);
    }
    fclose(f);
    return 0;
}

/* ---- --batch: batched vs one by one ------------------------------------------------- */

typedef struct batch_cell {
    long prompts, tok_seq, tok_batch, rounds;
    double ms_seq, ms_batch;
    /* decode only: time after each sequence's first token, tokens after the first (the
     * batch's first tokens all come from its first round, which holds every prefill) */
    long dtok_seq, dtok_batch;
    double dms_seq, dms_batch;
    double cpu_seq, cpu_batch; /* process CPU time */
    int mismatches;
} batch_cell;

static batch_cell *bcell(bench *b, batch_cell *cells, int d, int t, int bi, int a) {
    return &cells[((d * b->n_temps + t) * b->n_batches + bi) * b->n_algos + a];
}

/* One group of prompts with one algorithm: one by one, then as one batch. Outputs are
 * compared (the batch gives prompt i the seed S + i, as the one-by-one runs get). */
static int run_group(bench *b, direction *d, int algo, float temp, char **ps, int n, uint64_t seed,
                     batch_cell *c) {
    hsd_engine *e = algo == HSD_ALGO_SD ? d->self : d->pair;
    hsd_gen_params gp = hsd_gen_default_params();
    gp.algo = (hsd_algo)algo;
    gp.max_new_tokens = b->n_gen;
    gp.n_draft = b->k;
    gp.temp = temp;
    hsd_gen_result one[64], all[64];
    memset(one, 0, sizeof one), memset(all, 0, sizeof all);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        hsd_engine_reset(d->pair);
        hsd_engine_reset(d->self);
        gp.seed = seed + (uint64_t)i;
        double t0 = hsd_cli_now_ms(), c0 = hsd_cli_cpu_ms();
        if (hsd_engine_generate(e, ps[i], strlen(ps[i]), &gp, &one[i])) rc = 1;
        c->ms_seq += hsd_cli_now_ms() - t0;
        c->cpu_seq += hsd_cli_cpu_ms() - c0;
        c->tok_seq += one[i].n_ids;
        if (one[i].n_ids > 1)
            c->dtok_seq += one[i].n_ids - 1, c->dms_seq += one[i].total_ms - one[i].ttft_ms;
    }
    gp.seed = seed;
    hsd_engine_reset(d->pair);
    hsd_engine_reset(d->self);
    double t0 = hsd_cli_now_ms(), c0 = hsd_cli_cpu_ms();
    if (!rc && hsd_engine_generate_batch(e, (const char *const *)ps, NULL, n, &gp, all)) rc = 1;
    c->ms_batch += hsd_cli_now_ms() - t0;
    c->cpu_batch += hsd_cli_cpu_ms() - c0;
    double first = 0, last = 0;
    for (int i = 0; i < n && !rc; i++) {
        if (all[i].n_ids > 1) c->dtok_batch += all[i].n_ids - 1;
        if (all[i].n_ids > 0 && (first == 0 || all[i].ttft_ms < first)) first = all[i].ttft_ms;
        if (all[i].total_ms > last) last = all[i].total_ms;
    }
    if (last > first) c->dms_batch += last - first;
    if (rc)
        fprintf(stderr, "hsd bench generate: %s %s: %s\n", d->name, hsd_algo_name((hsd_algo)algo),
                hsd_last_error());
    for (int i = 0; i < n && !rc; i++) {
        c->tok_batch += all[i].n_ids;
        c->rounds += all[i].n_rounds;
        if (one[i].n_ids != all[i].n_ids ||
            memcmp(one[i].ids, all[i].ids, (size_t)one[i].n_ids * sizeof(int32_t))) {
            c->mismatches++;
            b->total_mismatches++;
            fprintf(stderr,
                    "BATCH MISMATCH %s %s temp %g: prompt %d of a group of %d differs from its "
                    "single run\n",
                    d->name, hsd_algo_name((hsd_algo)algo), temp, i, n);
        }
    }
    c->prompts += n;
    for (int i = 0; i < n; i++) hsd_gen_result_free(&one[i]), hsd_gen_result_free(&all[i]);
    return rc;
}

static int run_batches(bench *b, batch_cell *cells) {
    char **all = NULL;
    int n_all = 0;
    for (int si = 0; si < b->n_sets; si++)
        for (int pi = 0; pi < b->sets[si].n; pi++) {
            char **na = realloc(all, (size_t)(n_all + 1) * sizeof *na);
            if (!na) return free(all), 1;
            (all = na)[n_all++] = b->sets[si].p[pi];
        }
    int rc = 0;
    for (int di = 0; di < b->n_dirs && !rc; di++)
        for (int ti = 0; ti < b->n_temps && !rc; ti++)
            for (int bi = 0; bi < b->n_batches && !rc; bi++) {
                int B = b->batches[bi];
                /* interleaved per group: every algorithm, one by one then batched */
                for (int g0 = 0; g0 < n_all && !rc; g0 += B)
                    for (int ai = 0; ai < b->n_algos && !rc; ai++) {
                        if (b->algos[ai] == HSD_ALGO_SD && !b->dirs[di].self) continue;
                        int n = n_all - g0 < B ? n_all - g0 : B;
                        rc = run_group(b, &b->dirs[di], b->algos[ai], b->temps[ti], all + g0, n,
                                       b->seed + (uint64_t)g0, bcell(b, cells, di, ti, bi, ai));
                    }
                if (!b->json)
                    fprintf(stderr, "  done: %s temp %g batch %d\n", b->dirs[di].name, b->temps[ti],
                            B);
            }
    free(all);
    return rc;
}

static void print_batches(bench *b, batch_cell *cells) {
    FILE *md = b->md ? fopen(b->md, "w") : NULL;
    if (b->md && !md) fprintf(stderr, "hsd bench generate: cannot write %s\n", b->md);
    json_t *arr = json_array();
    if (!b->json)
        printf(
            "batched (hsd_engine_generate_batch, groups of B) vs one by one (hsd_engine_generate); "
            "k = %d, "
            "N = %d, %d thread(s), prompt clip %d, seed %llu; tok/s over wall time, per CPU second "
            "(process CPU time), and decode only (wall, after the first token)\n"
            "%-26s %-5s %-6s %3s %7s %8s %10s %10s %7s %10s %10s %7s %10s %10s %7s %6s %4s\n",
            b->k, b->n_gen, b->threads, b->clip, (unsigned long long)b->seed, "direction", "temp",
            "algo", "B", "prompts", "tokens", "1by1 tok/s", "batch", "speedup", "1by1 /cpus",
            "batch", "speedup", "1by1 dec/s", "batch", "speedup", "tau", "mism");
    if (md)
        fprintf(
            md,
            "| direction | temp | algo | B | prompts | tokens | one by one tok/s | batched tok/s | "
            "batched / one by one | CPU: one by one tok/s | CPU: batched tok/s | CPU: batched / "
            "one by one | "
            "decode: one by one tok/s | decode: batched tok/s | decode: batched / one by one | τ | "
            "mismatches "
            "|\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int di = 0; di < b->n_dirs; di++)
        for (int ti = 0; ti < b->n_temps; ti++)
            for (int ai = 0; ai < b->n_algos; ai++)
                for (int bi = 0; bi < b->n_batches; bi++) {
                    batch_cell *c = bcell(b, cells, di, ti, bi, ai);
                    if (!c->prompts) continue;
                    double seq = c->ms_seq > 0 ? 1000.0 * c->tok_seq / c->ms_seq : 0;
                    double bat = c->ms_batch > 0 ? 1000.0 * c->tok_batch / c->ms_batch : 0;
                    double tau = c->rounds ? (double)c->tok_batch / c->rounds : 0;
                    double dseq = c->dms_seq > 0 ? 1000.0 * c->dtok_seq / c->dms_seq : 0;
                    double dbat = c->dms_batch > 0 ? 1000.0 * c->dtok_batch / c->dms_batch : 0;
                    double cseq = c->cpu_seq > 0 ? 1000.0 * c->tok_seq / c->cpu_seq : 0;
                    double cbat = c->cpu_batch > 0 ? 1000.0 * c->tok_batch / c->cpu_batch : 0;
                    const char *an = hsd_algo_name((hsd_algo)b->algos[ai]);
                    if (!b->json)
                        printf("%-26s %-5g %-6s %3d %7ld %8ld %10.0f %10.0f %7.2f %10.0f %10.0f "
                               "%7.2f %10.0f %10.0f "
                               "%7.2f %6.2f %4d\n",
                               b->dirs[di].name, b->temps[ti], an, b->batches[bi], c->prompts,
                               c->tok_batch, seq, bat, seq > 0 ? bat / seq : 0, cseq, cbat,
                               cseq > 0 ? cbat / cseq : 0, dseq, dbat, dseq > 0 ? dbat / dseq : 0,
                               tau, c->mismatches);
                    if (md)
                        fprintf(md,
                                "| %s | %g | %s | %d | %ld | %ld | %.0f | %.0f | %.2f | %.0f | "
                                "%.0f | %.2f | %.0f | "
                                "%.0f | %.2f | %.2f | %d |\n",
                                b->dirs[di].name, b->temps[ti], an, b->batches[bi], c->prompts,
                                c->tok_batch, seq, bat, seq > 0 ? bat / seq : 0, cseq, cbat,
                                cseq > 0 ? cbat / cseq : 0, dseq, dbat, dseq > 0 ? dbat / dseq : 0,
                                tau, c->mismatches);
                    json_t *o = json_object();
                    json_object_set_new(o, "direction", json_string(b->dirs[di].name));
                    json_object_set_new(o, "temp", json_real(b->temps[ti]));
                    json_object_set_new(o, "algo", json_string(an));
                    json_object_set_new(o, "batch", json_integer(b->batches[bi]));
                    json_object_set_new(o, "prompts", json_integer(c->prompts));
                    json_object_set_new(o, "tokens", json_integer(c->tok_batch));
                    json_object_set_new(o, "one_by_one_ms", json_real(c->ms_seq));
                    json_object_set_new(o, "batched_ms", json_real(c->ms_batch));
                    json_object_set_new(o, "one_by_one_tokens_per_s", json_real(seq));
                    json_object_set_new(o, "batched_tokens_per_s", json_real(bat));
                    json_object_set_new(o, "speedup", json_real(seq > 0 ? bat / seq : 0));
                    json_object_set_new(o, "one_by_one_cpu_ms", json_real(c->cpu_seq));
                    json_object_set_new(o, "batched_cpu_ms", json_real(c->cpu_batch));
                    json_object_set_new(o, "one_by_one_tokens_per_cpu_s", json_real(cseq));
                    json_object_set_new(o, "batched_tokens_per_cpu_s", json_real(cbat));
                    json_object_set_new(o, "cpu_speedup", json_real(cseq > 0 ? cbat / cseq : 0));
                    json_object_set_new(o, "one_by_one_decode_tokens_per_s", json_real(dseq));
                    json_object_set_new(o, "batched_decode_tokens_per_s", json_real(dbat));
                    json_object_set_new(o, "decode_speedup", json_real(dseq > 0 ? dbat / dseq : 0));
                    json_object_set_new(o, "tau", json_real(tau));
                    json_object_set_new(o, "mismatches", json_integer(c->mismatches));
                    json_array_append_new(arr, o);
                }
    if (b->json) {
        json_t *o = json_object();
        json_object_set_new(o, "k", json_integer(b->k));
        json_object_set_new(o, "n", json_integer(b->n_gen));
        json_object_set_new(o, "threads", json_integer(b->threads));
        json_object_set_new(o, "clip", json_integer(b->clip));
        json_object_set_new(o, "batch_results", arr);
        json_object_set_new(o, "mismatches", json_integer(b->total_mismatches));
        char *dump = json_dumps(o, JSON_INDENT(1));
        if (dump) puts(dump);
        free(dump);
        json_decref(o);
    } else {
        json_decref(arr);
        printf("\nmismatches (batched vs one by one): %d\n", b->total_mismatches);
    }
    if (md) fclose(md);
}

int hsd_cmd_bench_generate(int argc, char **argv) {
    bench *b = calloc(1, sizeof *b);
    if (!b) return 1;
    int rc = 1;
    if (parse_args(b, argc, argv)) {
        usage();
        free(b);
        return 2;
    }
    int self = has_algo(b, HSD_ALGO_SD);
    b->n_dirs = b->both ? 2 : 1;
    int32_t n_seq = 1;
    for (int i = 0; i < b->n_batches; i++)
        if (b->batches[i] > n_seq) n_seq = b->batches[i];
    if (n_seq > 64) {
        fprintf(stderr, "hsd bench generate: --batch at most 64\n");
        goto done;
    }
    if (dir_open(&b->dirs[0], b->tm, b->tt, b->dm, b->dt, b->threads, self, n_seq) ||
        (b->both && dir_open(&b->dirs[1], b->dm, b->dt, b->tm, b->tt, b->threads, self, n_seq)))
        goto done;
    if (b->clip < 0) {
        int32_t ctx = hsd_model_n_ctx(b->dirs[0].t_raw);
        if (hsd_model_n_ctx(b->dirs[0].d_raw) < ctx) ctx = hsd_model_n_ctx(b->dirs[0].d_raw);
        b->clip = ctx <= 1024 ? 150 : 0;
    }
    for (int s = 0; s < b->n_sets; s++)
        if (load_set(b->set_paths[s], b->max_prompts, (size_t)b->clip, &b->sets[s])) goto done;
    if (b->n_batches > 0) {
        batch_cell *bc =
            calloc((size_t)b->n_dirs * b->n_temps * b->n_batches * b->n_algos, sizeof *bc);
        if (!bc || run_batches(b, bc)) {
            free(bc);
            goto done;
        }
        print_batches(b, bc);
        free(bc);
        rc = b->total_mismatches ? 3 : 0;
        goto done;
    }
    size_t n_cells = (size_t)b->n_dirs * b->n_temps * (b->n_sets + 1) * b->n_algos;
    if (!(b->cells = calloc(n_cells, sizeof *b->cells))) goto done;
    for (int di = 0; di < b->n_dirs; di++)
        for (int ti = 0; ti < b->n_temps; ti++)
            for (int si = 0; si <= b->n_sets; si++)
                for (int ai = 0; ai < b->n_algos; ai++) {
                    hsd_bench_cell *x = cell_at(b, di, ti, si, ai);
                    x->dir = di, x->temp = b->temps[ti], x->set = si, x->algo = b->algos[ai];
                }
    for (int di = 0; di < b->n_dirs; di++) {
        direction *d = &b->dirs[di];
        int32_t tp = typical_ctx(d->tt, b->sets, b->n_sets, b->n_gen);
        int32_t dp = typical_ctx(d->dt, b->sets, b->n_sets, b->n_gen);
        if (!b->json) fprintf(stderr, "measuring forward costs for %s ...\n", d->name);
        if (hsd_bench_cost_measure(d->t_raw, d->d_raw, d->s_raw, tp, dp, &d->cost)) goto done;
    }
    if (run_all(b)) goto done;
    finish(b);
    if (b->json) print_json(b);
    else print_text(b);
    if (b->md && write_md(b)) goto done;
    if (b->svg) {
        const char *names[2] = {b->dirs[0].name, b->dirs[1].name};
        if (hsd_bench_plot(b->svg, b->cells, (int)n_cells, names, b->n_dirs, b->temps, b->n_temps, b->algos,
                           b->n_algos))
            goto done;
    }
    rc = b->total_mismatches ? 3 : 0; /* a greedy mismatch is a correctness failure */
done:
    for (int di = 0; di < b->n_dirs; di++) dir_close(&b->dirs[di]);
    for (int s = 0; s < b->n_sets; s++) {
        for (int i = 0; i < b->sets[s].n; i++) free(b->sets[s].p[i]);
        free(b->sets[s].p);
    }
    free(b->cells);
    free(b);
    return rc;
}
