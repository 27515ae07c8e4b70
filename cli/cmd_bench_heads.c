/* hsd bench heads: the acceptance–cost trade-off of reduced drafter heads (SlimSpec §3.2).
 *
 * Every head generates the same prompts with the same engine settings. Per speculative round
 * the time splits into T_head (the drafter's head, timed inside its forward), T_backbone (the
 * rest of the drafter's forwards), T_verify (target forward + acceptance, from the engine)
 * and T_overhead (everything else: sampling, bridge, bookkeeping). Against the first head
 * (the full one):
 *   rho_tau = tau_M / tau_full                 acceptance preservation (tau = tokens/round),
 *   nu      = head time per drafter row, M / full,
 *   kappa   = T_head / (T_backbone + T_verify + T_overhead) of the full head,
 *   predicted rho_TPS = rho_tau (1 + kappa) / (1 + nu kappa)   (SlimSpec eq. 4),
 * and measured rho_TPS = TPS_M / TPS_full. Each prompt is generated once untimed first, so the
 * engine's prefix cache removes the prompt prefill from the timed runs, and the heads take
 * turns within each repetition. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/engine_load.h"
#include "cli/head_spec.h"
#include "cli/prompts.h"
#include "hsd.h"

#define MAX_HEADS 16
#define MAX_PROMPTS 64

typedef struct bheads_opts {
    const char *tm, *tt, *dm, *dt, *heads, *prompt_file, *prompt, *calib;
    int algo, no_mmap;
    int32_t max_prompts, n, k, threads, calib_tokens, repeat, clip;
    float temp;
    uint64_t seed;
} bheads_opts;

#define O(f) offsetof(bheads_opts, f)
static const hsd_opt bheads_table[] = {
    HSD_OPT_ROWS_PAIR(bheads_opts, tm, tt, dm, dt),
    {"algo", 0, HSD_OPT_CHOICE, O(algo), "ar|sd|union|tli|slem|slrs|auto",
     "algorithm (default auto; not ar)", 0, 0},
    {"heads", 0, HSD_OPT_STRING, O(heads), "'full;SPEC;...'",
     "heads, as --draft-head of hsd generate (default full;spec:64;lowrank:0)", 0, 0},
    {"prompts", 0, HSD_OPT_STRING, O(prompt_file), "FILE",
     "prompt file (default bench/prompts/summarization.jsonl)", 0, 0},
    {"prompt", 'p', HSD_OPT_STRING, O(prompt), "TEXT", "one prompt instead", 0, 0},
    {"max-prompts", 0, HSD_OPT_INT, O(max_prompts), "P", "prompts at most (8)", 1, MAX_PROMPTS},
    {"", 'n', HSD_OPT_INT, O(n), "N", "new tokens per generation (64)", 1, 1e9},
    {"", 'k', HSD_OPT_INT, O(k), "K", "draft length (4)", 1, 63},
    {"temp", 0, HSD_OPT_FLOAT, O(temp), "X", "temperature (0: greedy)", 0, 0},
    {"seed", 0, HSD_OPT_U64, O(seed), "S", "random seed", 0, 0},
    HSD_OPT_ROW_THREADS(bheads_opts, threads),
    HSD_OPT_ROWS_HEAD_CALIB(bheads_opts, calib, calib_tokens),
    {"repeat", 0, HSD_OPT_INT, O(repeat), "R", "timed repetitions per prompt (1)", 1, 1e6},
    {"clip", 0, HSD_OPT_INT, O(clip), "BYTES",
     "clip prompts to their last BYTES at a word start (0: whole)", 0, 1e9},
    HSD_OPT_ROW_NO_MMAP(bheads_opts, no_mmap),
};
#undef O

const hsd_cli_spec hsd_spec_bench_heads = {
    "bench heads",
    "--target M --target-tokenizer T --draft M2 --draft-tokenizer D [OPTIONS]",
    "  The first head is the baseline (full is put first if missing). Prints T_head,\n"
    "  T_backbone, T_verify, T_overhead per round, nu, rho_tau, kappa and predicted\n"
    "  (SlimSpec eq. 4) vs measured rho_TPS.\n",
    NULL, bheads_table, HSD_OPTS_N(bheads_table), 0,
};

typedef struct agg {
    char label[96], desc[160];
    double tokens, rounds, drafted, accepted, total_ms, verify_ms, head_ms, backbone_ms, head_rows;
} agg;

int hsd_cmd_bench_heads(int argc, char **argv) {
    const hsd_cli_spec *spec = &hsd_spec_bench_heads;
    hsd_gen_params gp = hsd_gen_default_params();
    bheads_opts o = {0};
    o.algo = HSD_ALGO_AUTO, o.max_prompts = 8, o.repeat = 1, o.n = 64, o.k = gp.n_draft;
    HSD_OPTS_PARSE(spec, &o, argc, argv, NULL);
    if (!o.tm || !o.tt || !o.dm || !o.dt)
        return hsd_opts_fail(spec, "--target, --target-tokenizer, --draft and --draft-tokenizer "
                                   "are required");
    if (o.algo == HSD_ALGO_AR) return hsd_opts_fail(spec, "--algo ar has no drafter head");
    int no_mmap = o.no_mmap, al = o.algo;
    const char *tm = o.tm, *tt = o.tt, *dm = o.dm, *dt = o.dt, *heads = o.heads;
    const char *calib = o.calib, *algo = hsd_algo_name((hsd_algo)o.algo);
    int32_t threads = o.threads, calib_tokens = o.calib_tokens, repeat = o.repeat;
    gp.max_new_tokens = o.n, gp.n_draft = o.k, gp.temp = o.temp, gp.seed = o.seed;
    gp.algo = (hsd_algo)al;
    gp.stop_at_eos = false; /* equal lengths keep the per-round split comparable */
    char **prompts = NULL;
    int n_prompts = 0;
    if (o.prompt) {
        if (!(prompts = malloc(sizeof *prompts)) || !(prompts[0] = strdup(o.prompt))) return 1;
        n_prompts = 1;
    } else if ((n_prompts = hsd_cli_read_prompts(
                    "bench heads", o.prompt_file ? o.prompt_file : "bench/prompts/summarization.jsonl",
                    o.max_prompts, (size_t)o.clip, &prompts)) <= 0) {
        if (n_prompts == 0) fprintf(stderr, "hsd bench heads: no prompts\n");
        return 1;
    }
    char list[1024];
    snprintf(list, sizeof list, "%s%s", heads && !strncmp(heads, "full", 4) ? "" : "full;",
             heads ? heads : "spec:64;lowrank:0");
    int rc = 1;
    hsd_cli_engine x = {0};
    agg a[MAX_HEADS];
    char *hs[MAX_HEADS]; /* each head spec, with a cached factors file once built */
    char cache[MAX_HEADS][64];
    int n_heads = 0;
    hsd_model_params mp = hsd_cli_model_params();
    if (threads > 0) mp.n_threads = threads;
    mp.use_mmap = !no_mmap;
    if (hsd_cli_engine_load("bench heads", &x, tm, tt, &mp, dm, dt, &mp)) goto done;
    hsd_model *mt = x.target, *md = x.draft;
    const hsd_tokenizer *kd = x.draft_tok;
    hsd_engine *e = x.e;
    printf("target: %s\ndrafter: %s\nalgo %s, k %d, temp %g, %d new tokens, %d prompts x %d\n",
           hsd_model_desc(mt), hsd_model_desc(md), algo, gp.n_draft, gp.temp, gp.max_new_tokens,
           n_prompts, repeat);
    /* heads are parsed and built once; SVD-built factors are saved to a temporary file so
     * that switching back to a head costs a file read, not another SVD */
    for (char *save = NULL, *spec = strtok_r(list, ";", &save); spec && n_heads < MAX_HEADS;
         spec = strtok_r(NULL, ";", &save)) {
        if (!(hs[n_heads] = strdup(spec))) goto done;
        cache[n_heads][0] = 0;
        agg *g = &a[n_heads++];
        memset(g, 0, sizeof *g);
        snprintf(g->label, sizeof g->label, "%s", spec);
        if (hsd_cli_head_apply("bench heads", spec, md, kd, e, calib, calib_tokens)) goto done;
        snprintf(g->desc, sizeof g->desc, "%s", hsd_model_head_desc(md));
        if (hsd_cli_head_is_svd(spec) && n_prompts * repeat > 1) {
            snprintf(cache[n_heads - 1], sizeof cache[0], "/tmp/hsd_bench_heads_%d_%d.safetensors",
                     (int)getpid(), n_heads - 1);
            if (hsd_model_save_head(md, cache[n_heads - 1])) {
                fprintf(stderr, "hsd bench heads: caching %s: %s\n", spec, hsd_last_error());
                goto done;
            }
            /* the same head read back from the file: "spec:K[/R]:FILE", "lowrank:R:FILE" */
            size_t len = strlen(spec) + strlen(cache[n_heads - 1]) + 2;
            char *with_file = malloc(len);
            if (!with_file) goto done;
            snprintf(with_file, len, "%s:%s", spec, cache[n_heads - 1]);
            free(hs[n_heads - 1]);
            hs[n_heads - 1] = with_file;
        }
    }
    /* Interleaved: for each prompt one untimed run prefills it (the engine's prefix cache
     * then leaves only the decode rounds to time), then every repetition runs every head in
     * turn, so that load drift on a shared machine hits all heads alike. */
    for (int pi = 0; pi < n_prompts; pi++)
        for (int rep = -1; rep < repeat; rep++)
            for (int hi = 0; hi < (rep < 0 ? 1 : n_heads); hi++) {
                agg *g = &a[hi];
                if (rep < 0) hsd_engine_reset(e);
                if (n_heads > 1 && hsd_cli_head_apply("bench heads", hs[hi], md, kd, e, calib, calib_tokens))
                    goto done;
                hsd_model_reset_timing(md);
                hsd_gen_result r = HSD_GEN_RESULT_INIT;
                if (hsd_engine_generate(e, prompts[pi], strlen(prompts[pi]), &gp, &r)) {
                    fprintf(stderr, "hsd bench heads: %s: %s\n", g->label, hsd_last_error());
                    goto done;
                }
                hsd_model_timing t;
                hsd_model_get_timing(md, &t);
                if (rep < 0) {
                    hsd_gen_result_free(&r);
                    continue;
                }
                g->tokens += r.n_ids;
                g->rounds += r.n_rounds;
                g->drafted += r.n_drafted;
                g->accepted += r.n_accepted;
                g->total_ms += r.total_ms;
                g->verify_ms += r.verify_ms;
                g->head_ms += t.head_ms;
                g->backbone_ms += t.backbone_ms;
                g->head_rows += (double)t.n_head_rows;
                hsd_gen_result_free(&r);
            }
    printf("\nper round (ms)                 %9s %9s %9s %9s %7s %7s %9s\n", "T_head", "T_backb",
           "T_verify", "T_overh", "accept", "tau", "tok/s");
    for (int i = 0; i < n_heads; i++) {
        agg *g = &a[i];
        double R = g->rounds > 0 ? g->rounds : 1;
        double over = g->total_ms - g->head_ms - g->backbone_ms - g->verify_ms;
        printf("%-30s %9.4f %9.4f %9.4f %9.4f %7.3f %7.3f %9.1f\n", g->label, g->head_ms / R,
               g->backbone_ms / R, g->verify_ms / R, over / R,
               g->drafted > 0 ? g->accepted / g->drafted : 0, g->tokens / R,
               g->total_ms > 0 ? 1000 * g->tokens / g->total_ms : 0);
    }
    agg *f = &a[0];
    double Rf = f->rounds > 0 ? f->rounds : 1;
    double nonhead = (f->total_ms - f->head_ms) / Rf,
           kappa = nonhead > 0 ? f->head_ms / Rf / nonhead : 0;
    double tau_f = f->tokens / Rf, tps_f = f->total_ms > 0 ? f->tokens / f->total_ms : 0;
    double row_f = f->head_rows > 0 ? f->head_ms / f->head_rows : 0;
    printf("\nkappa (full head) = T_head / (T_backbone + T_verify + T_overhead) = %.4f\n", kappa);
    printf("%-30s %8s %8s %10s %10s %7s  %s\n", "head", "nu", "rho_tau", "rho_TPS pr", "rho_TPS ms",
           "ms/pr", "description");
    for (int i = 0; i < n_heads; i++) {
        agg *g = &a[i];
        double R = g->rounds > 0 ? g->rounds : 1;
        double nu = row_f > 0 && g->head_rows > 0 ? (g->head_ms / g->head_rows) / row_f : 0;
        double rho_tau = tau_f > 0 ? (g->tokens / R) / tau_f : 0;
        double pred = rho_tau * (1 + kappa) / (1 + nu * kappa);
        double meas = tps_f > 0 && g->total_ms > 0 ? (g->tokens / g->total_ms) / tps_f : 0;
        printf("%-30s %8.4f %8.4f %10.4f %10.4f %7.3f  %s\n", g->label, nu, rho_tau, pred, meas,
               pred > 0 ? meas / pred : 0, g->desc);
    }
    rc = 0;
done:
    for (int i = 0; i < n_heads; i++) {
        if (cache[i][0]) unlink(cache[i]);
        free(hs[i]);
    }
    hsd_cli_free_prompts(prompts, n_prompts);
    hsd_cli_engine_free(&x);
    return rc;
}
