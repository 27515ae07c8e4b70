/* hsd bench generate: every algorithm over every bench prompt at each temperature, for one
 * or both directions of a model pair, with the round cost model next to the measurement
 * (the pieces: cli/bench_generate.h). This file holds the options and the outline. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench_generate.h"
#include "cli/cli.h"
#include "cli/prompts.h"
#include "hsd.h"

#define O(f) offsetof(hsd_bench, f)
static const hsd_opt bgen_table[] = {
    HSD_OPT_ROWS_PAIR(hsd_bench, tm, tt, dm, dt),
    {"prompts", 0, HSD_OPT_LIST, O(prompts), "FILE",
     "prompt set (repeatable; default bench/prompts/{summarization,code,long_context}.jsonl)", 0,
     0},
    {"max-prompts", 0, HSD_OPT_INT, O(max_prompts), "P", "prompts per set at most (0: all)", 0,
     1e9},
    {"algos", 0, HSD_OPT_STRING, O(algos_arg), "ar,sd,union,tli,slem,slrs",
     "algorithms (default ar,sd,union,tli,slem; sd = the target drafting for itself)", 0, 0},
    {"temps", 0, HSD_OPT_STRING, O(temps_arg), "0,1", "temperatures (at most 4)", 0, 0},
    {"", 'k', HSD_OPT_INT, O(k), "K", "draft length (4)", 1, 63},
    {"", 'n', HSD_OPT_INT, O(n_gen), "N", "new tokens per generation (64)", 1, 1e9},
    {"seed", 0, HSD_OPT_U64, O(seed), "S", "random seed (prompt i: S + i)", 0, 0},
    {"both", 0, HSD_OPT_FLAG, O(both), NULL, "also the swapped pair (drafter as target)", 0, 0},
    {"threads", 0, HSD_OPT_INT, O(threads), "T", "forward threads (1)", 0, 4096},
    {"clip", 0, HSD_OPT_INT, O(clip), "C",
     "clip prompts to their last C bytes at a word start (default 150 when a model's context "
     "is <= 1024 tokens, else 0 = whole)",
     0, 1e9},
    HSD_OPT_ROW_JSON(hsd_bench, json),
    {"svg", 0, HSD_OPT_STRING, O(svg), "FILE", "bars of tokens/s and tau per algorithm", 0, 0},
    {"results-md", 0, HSD_OPT_STRING, O(md), "FILE", "Markdown tables for bench/notes/", 0, 0},
    {"batch", 0, HSD_OPT_INTS, O(batch), "1,2,4,8",
     "instead: groups of B prompts batched vs one by one (B <= 64)", 1, 64},
    {"adaptive-k", 0, HSD_OPT_FLAG, O(adaptive_k), NULL,
     "adapt each run's draft length to its acceptance (up to 16)", 0, 0},
    {"cost-k", 0, HSD_OPT_FLAG, O(cost_k), NULL,
     "choose each round's draft length by measured costs and acceptance (up to 16)", 0, 0},
    {"slrs-k", 0, HSD_OPT_INT, O(slrs_k), "K", "slrs: the tree's depth limit (8)", 1, 63},
    {"slrs-top-k", 0, HSD_OPT_INT, O(slrs_top_k), "K", "slrs: children per node (2)", 0, 0},
    {"slrs-nodes", 0, HSD_OPT_INT, O(slrs_nodes), "N", "slrs: scored nodes per round (16)", 1, 1e6},
    {"slrs-lookahead", 0, HSD_OPT_CHOICE, O(slrs_rule), "determined|fixed|nmax",
     "slrs: where a branch stops (determined)", 0, 0},
    {"slrs-one-forward", 0, HSD_OPT_FLAG, O(slrs_one), NULL,
     "slrs: score the whole tree in one drafter forward", 0, 0},
};
#undef O

static void about(FILE *f) {
    fprintf(
        f,
        "  Runs every algorithm on every prompt at each temperature; AR first per prompt\n"
        "  (the reference of the speedups and of the greedy check: a greedy mismatch exits 3).\n"
        "  %s\n",
        HSD_BENCH_FORMULA);
}

const hsd_cli_spec hsd_spec_bench_generate = {
    "bench generate",
    "--target M --target-tokenizer T --draft M2 --draft-tokenizer D [OPTIONS]",
    NULL,
    about,
    bgen_table,
    HSD_OPTS_N(bgen_table),
    0,
};

/* --algos and --temps into their arrays; AR first. */
static int parse_lists(hsd_bench *b) {
    const hsd_cli_spec *spec = &hsd_spec_bench_generate;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", b->algos_arg);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        int a = hsd_algo_parse(t);
        if (a < 0 || a == HSD_ALGO_AUTO || b->n_algos == HSD_BENCH_MAX_ALGOS)
            return hsd_opts_fail(spec, "--algos: bad algorithm '%s'", t);
        b->algos[b->n_algos++] = a;
    }
    /* AR first: it is the reference of the speedups and of the greedy check */
    for (int i = 1; i < b->n_algos; i++)
        if (b->algos[i] == HSD_ALGO_AR) b->algos[i] = b->algos[0], b->algos[0] = HSD_ALGO_AR;
    snprintf(buf, sizeof buf, "%s", b->temps_arg);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        char *end;
        float v = strtof(t, &end);
        if (end == t || *end || v != v || b->n_temps == HSD_BENCH_MAX_TEMPS)
            return hsd_opts_fail(spec, "--temps: bad temperature '%s' (at most %d)", t,
                                 HSD_BENCH_MAX_TEMPS);
        b->temps[b->n_temps++] = v;
    }
    if (!b->n_algos || !b->n_temps) return hsd_opts_fail(spec, "--algos and --temps are empty");
    return 0;
}

/* A prompt set: its file's prompts, named by the file (without .jsonl). */
static int load_set(const hsd_bench *b, const char *path, hsd_bench_prompts *s) {
    const char *base = strrchr(path, '/');
    snprintf(s->name, sizeof s->name, "%s", base ? base + 1 : path);
    char *dot = strstr(s->name, ".jsonl");
    if (dot) *dot = 0;
    s->n = hsd_cli_read_prompts("bench generate", path, b->max_prompts, (size_t)b->clip, &s->p);
    if (s->n == 0) fprintf(stderr, "hsd bench generate: no prompts in %s\n", path);
    if (s->n <= 0) s->n = 0;
    return s->n == 0;
}

/* The cost model's forward costs, then every run, then the report. */
static int run_cells(hsd_bench *b) {
    size_t n_cells = (size_t)b->n_dirs * b->n_temps * (b->n_sets + 1) * b->n_algos;
    if (!(b->cells = calloc(n_cells, sizeof *b->cells))) return 1;
    for (int di = 0; di < b->n_dirs; di++)
        for (int ti = 0; ti < b->n_temps; ti++)
            for (int si = 0; si <= b->n_sets; si++)
                for (int ai = 0; ai < b->n_algos; ai++) {
                    hsd_bench_cell *x = hsd_bench_cell_at(b, di, ti, si, ai);
                    x->dir = di, x->temp = b->temps[ti], x->set = si, x->algo = b->algos[ai];
                }
    for (int di = 0; di < b->n_dirs; di++) {
        hsd_bench_dir *d = &b->dirs[di];
        int32_t tp = hsd_bench_typical_ctx(d->tt, b->sets, b->n_sets, b->n_gen);
        int32_t dp = hsd_bench_typical_ctx(d->dt, b->sets, b->n_sets, b->n_gen);
        if (!b->json) fprintf(stderr, "measuring forward costs for %s ...\n", d->name);
        if (hsd_bench_cost_measure(d->t_raw, d->d_raw, d->s_raw, tp, dp, &d->cost)) return 1;
    }
    if (hsd_bench_run_all(b)) return 1;
    hsd_bench_finish(b);
    if (b->json)
        hsd_bench_print_json(b);
    else
        hsd_bench_print_text(b);
    if (b->md && hsd_bench_write_md(b)) return 1;
    if (b->svg) {
        const char *names[2] = {b->dirs[0].name, b->dirs[1].name};
        if (hsd_bench_plot(b->svg, b->cells, (int)n_cells, names, b->n_dirs, b->temps, b->n_temps,
                           b->algos, b->n_algos))
            return 1;
    }
    return b->total_mismatches ? 3 : 0; /* a greedy mismatch is a correctness failure */
}

int hsd_cmd_bench_generate(int argc, char **argv) {
    const hsd_cli_spec *spec = &hsd_spec_bench_generate;
    hsd_bench *b = calloc(1, sizeof *b);
    if (!b) return 1;
    b->algos_arg = "ar,sd,union,tli,slem", b->temps_arg = "0,1";
    b->k = 4, b->n_gen = 64, b->threads = 1, b->clip = -1;
    b->slrs_k = 8, b->slrs_top_k = 2, b->slrs_nodes = 16;
    int rc = hsd_opts_parse(spec, b, argc, argv, NULL);
    if (rc == HSD_OPTS_OK && (!b->tm || !b->tt || !b->dm || !b->dt))
        rc = hsd_opts_fail(spec, "--target, --target-tokenizer, --draft and --draft-tokenizer "
                                 "are required");
    if (rc == HSD_OPTS_OK) rc = parse_lists(b);
    if (rc != HSD_OPTS_OK) {
        free(b);
        return rc == HSD_OPTS_HELP ? 0 : 2;
    }
    rc = 1;
    b->n_sets = b->prompts.n;
    for (int i = 0; i < b->prompts.n; i++) b->set_paths[i] = b->prompts.v[i];
    if (!b->n_sets) {
        b->set_paths[0] = "bench/prompts/summarization.jsonl";
        b->set_paths[1] = "bench/prompts/code.jsonl";
        b->set_paths[2] = "bench/prompts/long_context.jsonl";
        b->n_sets = 3;
    }
    int self = hsd_bench_has_algo(b, HSD_ALGO_SD);
    b->n_dirs = b->both ? 2 : 1;
    int32_t n_seq = 1;
    for (int i = 0; i < b->batch.n; i++)
        if (b->batch.v[i] > n_seq) n_seq = b->batch.v[i];
    if (hsd_bench_dir_open(&b->dirs[0], b->tm, b->tt, b->dm, b->dt, b->threads, self, n_seq) ||
        (b->both &&
         hsd_bench_dir_open(&b->dirs[1], b->dm, b->dt, b->tm, b->tt, b->threads, self, n_seq)))
        goto done;
    if (b->clip < 0) {
        int32_t ctx = hsd_model_n_ctx(b->dirs[0].t_raw);
        if (hsd_model_n_ctx(b->dirs[0].d_raw) < ctx) ctx = hsd_model_n_ctx(b->dirs[0].d_raw);
        b->clip = ctx <= 1024 ? 150 : 0;
    }
    for (int s = 0; s < b->n_sets; s++)
        if (load_set(b, b->set_paths[s], &b->sets[s])) goto done;
    rc = b->batch.n > 0 ? hsd_bench_batches(b) : run_cells(b);
done:
    for (int di = 0; di < b->n_dirs; di++) hsd_bench_dir_close(&b->dirs[di]);
    for (int s = 0; s < b->n_sets; s++) hsd_cli_free_prompts(b->sets[s].p, b->sets[s].n);
    free(b->cells);
    free(b);
    return rc;
}
