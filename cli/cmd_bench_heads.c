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
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_util.h"
#include "cli/head_spec.h"
#include "hsd.h"

#define MAX_HEADS 16
#define MAX_PROMPTS 64

static void usage(void) {
    fprintf(
        stderr,
        "usage: hsd bench heads --target M --target-tokenizer T --draft M2 --draft-tokenizer D\n"
        "         [--algo sd|tli|slem|union|auto] [--heads 'full;SPEC;...'] [--prompts FILE | -p "
        "TEXT]\n"
        "         [--max-prompts P] [-n N] [-k K] [--temp X] [--seed S] [--threads T]\n"
        "         [--head-calib CORPUS] [--calib-tokens N] [--repeat R] [--clip BYTES] "
        "[--no-mmap]\n"
        "  SPEC as for hsd generate --draft-head. The first head is the baseline (full is put\n"
        "  first if missing). Prints T_head, T_backbone, T_verify, T_overhead per round, nu,\n"
        "  rho_tau, kappa and predicted (SlimSpec eq. 4) vs measured rho_TPS.\n");
}

typedef struct agg {
    char label[96], desc[160];
    double tokens, rounds, drafted, accepted, total_ms, verify_ms, head_ms, backbone_ms, head_rows;
} agg;

/* Prompts clipped to their last `clip` bytes at a word start (0 = whole), so short-context
 * models (babyllama: 256 characters) fit prompt and generation. */
static int load_prompts(const char *path, int max, size_t clip, char **out) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "hsd bench heads: %s: cannot open\n", path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    while (n < max && getline(&line, &cap, f) > 0) {
        json_t *j = json_loads(line, 0, NULL);
        const char *p = json_string_value(json_object_get(j, "prompt"));
        if (!p) p = json_string_value(json_object_get(j, "text"));
        if (p) {
            size_t len = strlen(p), start = clip && len > clip ? len - clip : 0;
            while (start > 0 && start < len && p[start - 1] != ' ') start++;
            out[n++] = strdup(p + start);
        }
        json_decref(j);
    }
    free(line);
    fclose(f);
    return n;
}

int hsd_cmd_bench_heads(int argc, char **argv) {
    int no_mmap = 0;
    const char *tm = NULL, *tt = NULL, *dm = NULL, *dt = NULL, *algo = "auto", *heads = NULL;
    const char *prompt_file = NULL, *prompt = NULL, *calib = NULL;
    int32_t max_prompts = 8, threads = 0, calib_tokens = 0, repeat = 1, clip = 0;
    hsd_gen_params gp = hsd_gen_default_params();
    gp.max_new_tokens = 64;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return 0;
        }
        if (!strcmp(a, "--no-mmap")) {
            no_mmap = 1;
            continue;
        }
        if (!v) {
            usage();
            return 2;
        }
        i++;
        if (!strcmp(a, "--target"))
            tm = v;
        else if (!strcmp(a, "--target-tokenizer"))
            tt = v;
        else if (!strcmp(a, "--draft"))
            dm = v;
        else if (!strcmp(a, "--draft-tokenizer"))
            dt = v;
        else if (!strcmp(a, "--algo"))
            algo = v;
        else if (!strcmp(a, "--heads"))
            heads = v;
        else if (!strcmp(a, "--prompts"))
            prompt_file = v;
        else if (!strcmp(a, "-p"))
            prompt = v;
        else if (!strcmp(a, "--max-prompts"))
            max_prompts = atoi(v);
        else if (!strcmp(a, "-n"))
            gp.max_new_tokens = atoi(v);
        else if (!strcmp(a, "-k"))
            gp.n_draft = atoi(v);
        else if (!strcmp(a, "--temp"))
            gp.temp = strtof(v, NULL);
        else if (!strcmp(a, "--seed"))
            gp.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--threads"))
            threads = atoi(v);
        else if (!strcmp(a, "--head-calib"))
            calib = v;
        else if (!strcmp(a, "--calib-tokens"))
            calib_tokens = atoi(v);
        else if (!strcmp(a, "--repeat"))
            repeat = atoi(v);
        else if (!strcmp(a, "--clip"))
            clip = atoi(v);
        else {
            fprintf(stderr, "hsd bench heads: unknown option %s\n", a);
            usage();
            return 2;
        }
    }
    int al = hsd_algo_parse(algo);
    if (!tm || !tt || !dm || !dt || al < 0 || al == HSD_ALGO_AR || gp.max_new_tokens < 1 ||
        repeat < 1 || max_prompts < 1 || max_prompts > MAX_PROMPTS) {
        usage();
        return 2;
    }
    gp.algo = (hsd_algo)al;
    gp.stop_at_eos = false; /* equal lengths keep the per-round split comparable */
    char *prompts[MAX_PROMPTS];
    int n_prompts = 0;
    if (prompt)
        prompts[n_prompts++] = strdup(prompt);
    else if ((n_prompts =
                  load_prompts(prompt_file ? prompt_file : "bench/prompts/summarization.jsonl",
                               max_prompts, clip > 0 ? (size_t)clip : 0, prompts)) <= 0) {
        fprintf(stderr, "hsd bench heads: no prompts\n");
        return 1;
    }
    char list[1024];
    snprintf(list, sizeof list, "%s%s", heads && !strncmp(heads, "full", 4) ? "" : "full;",
             heads ? heads : "spec:64;lowrank:0");
    int rc = 1;
    hsd_model *mt = NULL, *md = NULL;
    hsd_tokenizer *kt = NULL, *kd = NULL;
    hsd_engine *e = NULL;
    agg a[MAX_HEADS];
    hsd_cli_head hs[MAX_HEADS];
    char cache[MAX_HEADS][64];
    int n_heads = 0;
    hsd_model_params mp = hsd_model_default_params();
    if (threads > 0) mp.n_threads = threads;
    mp.use_mmap = !no_mmap;
    if (hsd_tokenizer_load_file(tt, &kt) || hsd_tokenizer_load_file(dt, &kd) ||
        hsd_model_load(tm, &mp, &mt) || hsd_model_load(dm, &mp, &md) ||
        hsd_engine_init(mt, kt, md, kd, &e)) {
        fprintf(stderr, "hsd bench heads: %s\n", hsd_last_error());
        goto done;
    }
    printf("target: %s\ndrafter: %s\nalgo %s, k %d, temp %g, %d new tokens, %d prompts x %d\n",
           hsd_model_desc(mt), hsd_model_desc(md), algo, gp.n_draft, gp.temp, gp.max_new_tokens,
           n_prompts, repeat);
    /* heads are parsed and built once; SVD-built factors are saved to a temporary file so
     * that switching back to a head costs a file read, not another SVD */
    for (char *save = NULL, *spec = strtok_r(list, ";", &save); spec && n_heads < MAX_HEADS;
         spec = strtok_r(NULL, ";", &save)) {
        hsd_cli_head *h = &hs[n_heads];
        if (hsd_cli_head_parse(spec, h)) goto done;
        cache[n_heads][0] = 0;
        agg *g = &a[n_heads++];
        memset(g, 0, sizeof *g);
        snprintf(g->label, sizeof g->label, "%s", spec);
        if (hsd_cli_head_apply(h, md, kd, e, calib, calib_tokens)) goto done;
        snprintf(g->desc, sizeof g->desc, "%s", hsd_model_head_desc(md));
        bool factors = h->p.kind == HSD_HEAD_SPECULATIVE || h->p.kind == HSD_HEAD_LOWRANK;
        if (factors && !h->p.factors_path && n_prompts * repeat > 1) {
            snprintf(cache[n_heads - 1], sizeof cache[0], "/tmp/hsd_bench_heads_%d_%d.safetensors",
                     (int)getpid(), n_heads - 1);
            if (hsd_model_save_head(md, cache[n_heads - 1])) {
                fprintf(stderr, "hsd bench heads: caching %s: %s\n", spec, hsd_last_error());
                goto done;
            }
            h->p.factors_path = cache[n_heads - 1];
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
                if (n_heads > 1 && hsd_cli_head_apply(&hs[hi], md, kd, e, calib, calib_tokens))
                    goto done;
                hsd_model_reset_timing(md);
                hsd_gen_result r;
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
        hsd_cli_head_free(&hs[i]);
    }
    for (int i = 0; i < n_prompts; i++) free(prompts[i]);
    hsd_engine_free(e);
    hsd_model_free(mt);
    hsd_model_free(md);
    hsd_tokenizer_free(kt);
    hsd_tokenizer_free(kd);
    return rc;
}
