/* hsd generate: plain autoregressive decoding with one model, reporting TTFT / TPOT. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/cli_util.h"
#include "cli/head_spec.h"
#include "hsd.h"
#include "lib/engine/sample.h"

static void usage(void) {
    fprintf(stderr,
            "usage: hsd generate --target M --target-tokenizer T [--draft M2 --draft-tokenizer D]\n"
            "                    --algo ar|sd|union|tli|slem|slrs|auto [-k K] [--adaptive-k]\n"
            "                    -p PROMPT | --batch-file FILE\n"
            "                    -n N [--temp X] [--top-k K] [--top-p P] [--seed S] [--stop STR]\n"
            "                    [--no-bos] [--threads T] [--backend auto|cpu|cuda] [--json]\n"
            "                    [--draft-head full|trim:IDS|tli[:IDS]|spec:K[/R][:F]|lowrank:R[:F]]\n"
            "                    [--head-calib CORPUS] [--calib-tokens N] [--save-draft-head FILE]\n"
            "                    [--slrs-top-k K] [--slrs-top-p P] [--slrs-nodes N]\n"
            "                    [--lookahead determined|fixed|nmax] [--slrs-one-forward]\n"
            "  slrs: -k is the draft tree's depth limit; the tree keeps the drafter's top-k/top-p\n"
            "  children per node (default 2, 0.95) and at most N scored nodes per round (16), one\n"
            "  drafter forward per tree level, or one in all with --slrs-one-forward (the nodes to\n"
            "  score then come from walking the target and draft vocabularies' byte tries).\n"
            "  --model/--tokenizer are aliases of --target/--target-tokenizer; a .gguf model's own\n"
            "  tokenizer is the default. The prompt is used\n"
            "  as is; each model gets its tokenizer's BOS first (unless --no-bos).\n"
            "  --draft-head replaces the drafter's LM head (trimmed, T∩D for TLI, SpecVocab,\n"
            "  SlimSpec low-rank; SVD-built unless FILE is given, calibrated on CORPUS if set).\n"
            "  --batch-file FILE instead of -p: one prompt per line (a line that is a JSON object\n"
            "  with a \"prompt\" field, as in bench/prompts/*.jsonl, gives that field; empty lines\n"
            "  are skipped), all generated together (hsd_engine_generate_batch: prompt i uses seed\n"
            "  S + i). --json then prints one JSON object per prompt (JSONL, with \"index\").\n"
            "       hsd generate --model M --tokenizer T -p PROMPT -n N [--temp X] [--top-k K]\n"
            "                    [--top-p P] [--seed S] [--threads T] [--json]\n"
            "       hsd generate --model M --prompt-ids 1,2,3 -n N ...   (no tokenizer: ids only)\n"
            "  Greedy by default (--temp 0). Stops after N tokens, at EOS or at the context end.\n"
            "  --backend: where the models run (default auto: a CUDA device if there is one).\n");
}

/* --backend, shared by both paths; given explicitly, the library's notices (e.g. "no CUDA
 * device, using CPU") are shown on stderr. */
static hsd_backend g_backend = HSD_BACKEND_AUTO;

static void print_notice(hsd_log_level level, const char *msg, void *user) {
    (void)user;
    if (level >= HSD_LOG_INFO) fprintf(stderr, "hsd: %s\n", msg);
}

static int set_backend(const char *v) {
    int b = hsd_backend_parse(v);
    if (b < 0) {
        fprintf(stderr, "hsd generate: unknown --backend '%s' (auto, cpu, cuda)\n", v);
        return 2;
    }
    g_backend = (hsd_backend)b;
    hsd_log_set(print_notice, NULL);
    return 0;
}

/* A .gguf model carries its tokenizer: it is the default --tokenizer. */
static const char *gguf_tok(const char *model) {
    size_t n = model ? strlen(model) : 0;
    return n > 5 && !strcasecmp(model + n - 5, ".gguf") ? model : NULL;
}

static int generate_single(int argc, char **argv) {
    const char *model_path = NULL, *tok_path = NULL, *prompt = NULL, *prompt_ids = NULL;
    int32_t n_gen = 128, threads = 0;
    hsd_sampler_params sp = {0.0f, 0, 1.0f};
    uint64_t seed = 0;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) { json = 1; continue; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(); return 0; }
        if (!v) { fprintf(stderr, "hsd generate: %s needs a value\n", a); usage(); return 2; }
        i++;
        if (!strcmp(a, "--model") || !strcmp(a, "-m")) model_path = v;
        else if (!strcmp(a, "--tokenizer") || !strcmp(a, "-t")) tok_path = v;
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) prompt = v;
        else if (!strcmp(a, "--prompt-ids")) prompt_ids = v;
        else if (!strcmp(a, "-n")) n_gen = atoi(v);
        else if (!strcmp(a, "--temp")) sp.temp = strtof(v, NULL);
        else if (!strcmp(a, "--top-k")) sp.top_k = atoi(v);
        else if (!strcmp(a, "--top-p")) sp.top_p = strtof(v, NULL);
        else if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--backend")) { if (set_backend(v)) return 2; }
        else { fprintf(stderr, "hsd generate: unknown option %s\n", a); usage(); return 2; }
    }
    if (!tok_path && prompt) tok_path = gguf_tok(model_path);
    if (!model_path || n_gen < 1 || (!tok_path && !prompt_ids) || (tok_path && !prompt && !prompt_ids)) {
        usage();
        return 2;
    }
    int rc = 1;
    hsd_tokenizer *tok = NULL;
    hsd_model *model = NULL;
    int32_t *ids = NULL, *out_ids = NULL;
    size_t n_ids = 0;
    float *logits = NULL, *probs = NULL;
    char *text = NULL;
    hsd_status s;
    if (tok_path && (s = hsd_tokenizer_load_file(tok_path, &tok)) != HSD_OK) {
        fprintf(stderr, "hsd generate: %s\n", hsd_last_error());
        goto done;
    }
    if (prompt_ids) {
        ids = malloc(4096 * sizeof *ids);
        int n = ids ? hsd_cli_parse_ints(prompt_ids, ids, 4096) : -1;
        if (n <= 0) { fprintf(stderr, "hsd generate: bad --prompt-ids '%s'\n", prompt_ids); goto done; }
        n_ids = (size_t)n;
    } else {
        if ((s = hsd_tokenizer_encode_alloc(tok, prompt, strlen(prompt), true, &ids, &n_ids)) != HSD_OK) {
            fprintf(stderr, "hsd generate: encoding the prompt: %s\n", hsd_last_error());
            goto done;
        }
        if (n_ids == 0 || (hsd_tokenizer_bos_id(tok) >= 0 && ids[0] != hsd_tokenizer_bos_id(tok))) {
            /* a model is trained with BOS first; add it if the tokenizer's post-processor did not */
            int32_t *p = realloc(ids, (n_ids + 1) * sizeof *ids);
            if (!p || hsd_tokenizer_bos_id(tok) < 0) { fprintf(stderr, "hsd generate: empty prompt and no BOS\n"); goto done; }
            ids = p;
            memmove(ids + 1, ids, n_ids * sizeof *ids);
            ids[0] = hsd_tokenizer_bos_id(tok);
            n_ids++;
        }
    }
    hsd_model_params mp = hsd_model_default_params();
    mp.n_ctx = (int32_t)n_ids + n_gen;
    if (threads > 0) mp.n_threads = threads;
    mp.backend = g_backend;
    if ((s = hsd_model_load(model_path, &mp, &model)) != HSD_OK) {
        fprintf(stderr, "hsd generate: %s\n", hsd_last_error());
        goto done;
    }
    int32_t V = hsd_model_vocab_size(model), eos = tok ? hsd_tokenizer_eos_id(tok) : -1;
    logits = malloc((size_t)V * sizeof *logits);
    probs = malloc((size_t)V * sizeof *probs);
    out_ids = malloc((size_t)n_gen * sizeof *out_ids);
    if (!logits || !probs || !out_ids) { fprintf(stderr, "hsd generate: out of memory\n"); goto done; }
    hsd_rng rng;
    hsd_rng_init(&rng, seed, 0);

    int32_t n_out = 0, last_row = (int32_t)n_ids - 1;
    double t0 = hsd_cli_now_ms(), t_first = 0;
    s = hsd_model_forward(model, ids, (int32_t)n_ids, NULL, &last_row, 1, logits);
    while (s == HSD_OK) {
        int32_t next;
        if ((s = hsd_sample(logits, V, &sp, &rng, probs, &next)) != HSD_OK) break;
        if (n_out == 0) t_first = hsd_cli_now_ms();
        if (next == eos) break;
        out_ids[n_out++] = next;
        if (n_out == n_gen || hsd_model_kv_len(model) >= hsd_model_n_ctx(model)) break;
        s = hsd_model_forward(model, &next, 1, NULL, NULL, 1, logits);
    }
    double t_end = hsd_cli_now_ms();
    if (s != HSD_OK) { fprintf(stderr, "hsd generate: %s\n", hsd_last_error()); goto done; }
    double ttft = t_first - t0;
    double tpot = n_out > 1 ? (t_end - t_first) / (n_out - 1) : 0.0;
    double tps = tpot > 0 ? 1000.0 / tpot : 0.0;
    size_t text_len = 0;
    if (tok && (s = hsd_tokenizer_decode_alloc(tok, out_ids, (size_t)n_out, true, &text, &text_len)) != HSD_OK) {
        fprintf(stderr, "hsd generate: decoding: %s\n", hsd_last_error());
        goto done;
    }
    if (json) {
        json_t *o = json_object(), *arr = json_array();
        for (int32_t i = 0; i < n_out; i++) json_array_append_new(arr, json_integer(out_ids[i]));
        json_object_set_new(o, "text", json_stringn(text ? text : "", text_len));
        json_object_set_new(o, "ids", arr);
        json_object_set_new(o, "prompt_tokens", json_integer((json_int_t)n_ids));
        json_object_set_new(o, "n_generated", json_integer(n_out));
        json_object_set_new(o, "ttft_ms", json_real(ttft));
        json_object_set_new(o, "tpot_ms", json_real(tpot));
        json_object_set_new(o, "tokens_per_s", json_real(tps));
        json_object_set_new(o, "model", json_string(hsd_model_desc(model)));
        json_object_set_new(o, "backend", json_string(hsd_backend_name(hsd_model_backend(model))));
        char *dump = json_dumps(o, JSON_COMPACT);
        if (dump) puts(dump);
        free(dump);
        json_decref(o);
    } else {
        if (text) {
            fwrite(text, 1, text_len, stdout);
        } else {
            for (int32_t i = 0; i < n_out; i++) printf("%s%d", i ? " " : "", out_ids[i]);
        }
        printf("\n\nTTFT %.3f ms, TPOT %.4f ms, %.1f tokens/s (%d prompt + %d generated tokens)\n", ttft, tpot,
               tps, (int)n_ids, n_out);
    }
    rc = 0;
done:
    free(text);
    free(ids);
    free(out_ids);
    free(logits);
    free(probs);
    hsd_model_free(model);
    hsd_tokenizer_free(tok);
    return rc;
}

/* ---- engine path: any algorithm, optional drafter with its own tokenizer ---- */

static int load_pair(const char *mp, const char *tp, int32_t n_ctx, int32_t threads, int32_t n_seq,
                     hsd_model **m, hsd_tokenizer **t) {
    hsd_model_params prm = hsd_model_default_params();
    prm.n_ctx = n_ctx;
    prm.n_seq = n_seq;
    if (threads > 0) prm.n_threads = threads;
    prm.backend = g_backend;
    if (hsd_tokenizer_load_file(tp, t) || hsd_model_load(mp, &prm, m)) {
        fprintf(stderr, "hsd generate: %s\n", hsd_last_error());
        return 1;
    }
    return 0;
}

/* Prompts of a --batch-file: one per line, or the "prompt" field of a JSON object line. */
static char **read_batch_file(const char *path, int32_t *n_out) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "hsd generate: cannot open %s\n", path);
        return NULL;
    }
    char **v = NULL, *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int32_t n = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (len == 0) continue;
        char *p = NULL;
        if (line[0] == '{') {
            json_t *j = json_loads(line, 0, NULL);
            const char *s = json_string_value(json_object_get(j, "prompt"));
            if (s) p = strdup(s);
            json_decref(j);
        }
        if (!p) p = strdup(line);
        char **nv = p ? realloc(v, (size_t)(n + 1) * sizeof *nv) : NULL;
        if (!nv) {
            free(p);
            break;
        }
        (v = nv)[n++] = p;
    }
    free(line);
    fclose(f);
    if (n == 0) fprintf(stderr, "hsd generate: no prompts in %s\n", path);
    *n_out = n;
    return v;
}

static json_t *result_json(const hsd_gen_result *r) {
    json_t *o = json_object(), *ids = json_array();
    for (int32_t i = 0; i < r->n_ids; i++) json_array_append_new(ids, json_integer(r->ids[i]));
    json_object_set_new(o, "algo", json_string(hsd_algo_name(r->algo)));
    json_object_set_new(o, "reason", json_string(r->reason));
    json_object_set_new(o, "text", json_stringn(r->text, r->text_len));
    json_object_set_new(o, "ids", ids);
    json_object_set_new(o, "n_generated", json_integer(r->n_ids));
    json_object_set_new(o, "rounds", json_integer(r->n_rounds));
    json_object_set_new(o, "drafted", json_integer(r->n_drafted));
    json_object_set_new(o, "accepted", json_integer(r->n_accepted));
    json_object_set_new(o, "acceptance_rate", json_real(r->acceptance_rate));
    json_object_set_new(o, "tau", json_real(r->tau));
    json_object_set_new(o, "tokens_per_s", json_real(r->tokens_per_s));
    json_object_set_new(o, "ttft_ms", json_real(r->ttft_ms));
    json_object_set_new(o, "tpot_ms", json_real(r->tpot_ms));
    json_object_set_new(o, "total_ms", json_real(r->total_ms));
    json_object_set_new(o, "draft_ms", json_real(r->draft_ms));
    json_object_set_new(o, "verify_ms", json_real(r->verify_ms));
    json_object_set_new(o, "bridge_ms", json_real(r->bridge_ms));
    json_object_set_new(o, "first_accept_rate", json_real(r->first_accept_rate));
    if (r->algo == HSD_ALGO_SLRS) {
        json_object_set_new(o, "psi_ms", json_real(r->psi_ms));
        json_object_set_new(o, "tree_nodes", json_real(r->tree_nodes));
        json_object_set_new(o, "tree_forwards", json_real(r->tree_forwards));
        json_object_set_new(o, "expected_accept", json_real(r->expected_accept));
        json_object_set_new(o, "expected_accept_em", json_real(r->expected_accept_em));
    }
    return o;
}

static void print_result_text(const hsd_gen_result *r) {
    fwrite(r->text, 1, r->text_len, stdout);
    printf("\n\nalgo %s (%s)\n", hsd_algo_name(r->algo), r->reason);
    printf("acceptance rate %.3f, tau %.2f tokens/round, %d rounds, %.1f tokens/s\n",
           r->acceptance_rate, r->tau, r->n_rounds, r->tokens_per_s);
    printf("TTFT %.3f ms, TPOT %.4f ms; time: draft %.2f ms, verify %.2f ms, bridge %.2f ms "
           "(total %.2f ms)\n",
           r->ttft_ms, r->tpot_ms, r->draft_ms, r->verify_ms, r->bridge_ms, r->total_ms);
    if (r->algo == HSD_ALGO_SLRS)
        printf("slrs: %.1f tree nodes and %.2f drafter forwards per round, psi %.3f ms/round; "
               "first-token acceptance %.3f (expected %.3f; exact matching %.3f)\n",
               r->tree_nodes, r->tree_forwards, r->psi_ms, r->first_accept_rate, r->expected_accept,
               r->expected_accept_em);
}

int hsd_cmd_generate(int argc, char **argv) {
    const char *tm = NULL, *tt = NULL, *dm = NULL, *dt = NULL, *prompt = NULL, *algo = NULL;
    const char *batch_file = NULL;
    const char *head_spec = NULL, *head_calib = NULL, *head_save = NULL;
    int32_t calib_tokens = 0;
    const char *stops[16];
    hsd_gen_params gp = hsd_gen_default_params();
    int32_t threads = 0;
    int json = 0, legacy = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--prompt-ids")) legacy = 1;
        if (!strcmp(a, "--json")) { json = 1; continue; }
        if (!strcmp(a, "--adaptive-k")) { gp.adaptive_k = true; continue; }
        if (!strcmp(a, "--no-bos")) { gp.add_bos = false; continue; }
        if (!strcmp(a, "--slrs-one-forward")) { gp.slrs_single_forward = true; continue; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(); return 0; }
        if (!v) continue;
        if (!strcmp(a, "--target") || !strcmp(a, "--model") || !strcmp(a, "-m")) tm = v, i++;
        else if (!strcmp(a, "--target-tokenizer") || !strcmp(a, "--tokenizer") || !strcmp(a, "-t")) tt = v, i++;
        else if (!strcmp(a, "--draft")) dm = v, i++;
        else if (!strcmp(a, "--draft-tokenizer")) dt = v, i++;
        else if (!strcmp(a, "--algo")) algo = v, i++;
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) prompt = v, i++;
        else if (!strcmp(a, "--batch-file")) batch_file = v, i++;
        else if (!strcmp(a, "-n")) gp.max_new_tokens = atoi(v), i++;
        else if (!strcmp(a, "-k")) gp.n_draft = atoi(v), i++;
        else if (!strcmp(a, "--temp")) gp.temp = strtof(v, NULL), i++;
        else if (!strcmp(a, "--top-k")) gp.top_k = atoi(v), i++;
        else if (!strcmp(a, "--top-p")) gp.top_p = strtof(v, NULL), i++;
        else if (!strcmp(a, "--seed")) gp.seed = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--threads")) threads = atoi(v), i++;
        else if (!strcmp(a, "--backend")) { if (set_backend(v)) return 2; i++; }
        else if (!strcmp(a, "--stop") && gp.n_stop < 16) stops[gp.n_stop++] = v, i++;
        else if (!strcmp(a, "--draft-head")) head_spec = v, i++;
        else if (!strcmp(a, "--head-calib")) head_calib = v, i++;
        else if (!strcmp(a, "--calib-tokens")) calib_tokens = atoi(v), i++;
        else if (!strcmp(a, "--save-draft-head")) head_save = v, i++;
        else if (!strcmp(a, "--slrs-top-k")) gp.slrs_top_k = atoi(v), i++;
        else if (!strcmp(a, "--slrs-top-p")) gp.slrs_top_p = strtof(v, NULL), i++;
        else if (!strcmp(a, "--slrs-nodes")) gp.slrs_max_nodes = atoi(v), i++;
        else if (!strcmp(a, "--lookahead")) {
            gp.slrs_lookahead = !strcmp(v, "determined") ? 0 : !strcmp(v, "fixed") ? 1 : !strcmp(v, "nmax") ? 2 : -1;
            if (gp.slrs_lookahead < 0) {
                fprintf(stderr, "hsd generate: --lookahead must be determined, fixed or nmax\n");
                return 2;
            }
            i++;
        }
    }
    /* the model-only path (ids in, ids out) stays as it was */
    if (legacy || (!dm && !algo && !batch_file)) return generate_single(argc, argv);
    if (!tt) tt = gguf_tok(tm);
    if (dm && !dt) dt = gguf_tok(dm);
    if (!tm || !tt || !(prompt || batch_file) || (prompt && batch_file) || gp.max_new_tokens < 1 ||
        (dm && !dt)) {
        usage();
        return 2;
    }
    int a = algo ? hsd_algo_parse(algo) : HSD_ALGO_AUTO;
    if (a < 0) {
        fprintf(stderr, "hsd generate: unknown --algo '%s'\n", algo);
        return 2;
    }
    gp.algo = (hsd_algo)a;
    gp.stop = stops;
    int rc = 1;
    hsd_model *mt = NULL, *md = NULL;
    hsd_tokenizer *kt = NULL, *kd = NULL;
    hsd_engine *e = NULL;
    hsd_gen_result r, *rs = NULL;
    memset(&r, 0, sizeof r);
    char **batch = NULL;
    int32_t n_batch = 0;
    size_t longest = prompt ? strlen(prompt) : 0;
    if (batch_file) {
        if (!(batch = read_batch_file(batch_file, &n_batch)) || n_batch == 0 ||
            !(rs = calloc((size_t)n_batch, sizeof *rs)))
            goto done;
        for (int32_t i = 0; i < n_batch; i++)
            if (strlen(batch[i]) > longest) longest = strlen(batch[i]);
    }
    int32_t n_ctx = (int32_t)longest + 2 * gp.max_new_tokens + 64, n_seq = batch ? n_batch : 1;
    if (load_pair(tm, tt, n_ctx, threads, n_seq, &mt, &kt)) goto done;
    if (dm && load_pair(dm, dt, n_ctx + 64, threads, n_seq, &md, &kd)) goto done;
    if (hsd_engine_init(mt, kt, md, kd, &e)) {
        fprintf(stderr, "hsd generate: %s\n", hsd_last_error());
        goto done;
    }
    if (head_spec) {
        hsd_cli_head h;
        if (!md) {
            fprintf(stderr, "hsd generate: --draft-head needs --draft\n");
            goto done;
        }
        int bad = hsd_cli_head_parse(head_spec, &h) ||
                  hsd_cli_head_apply(&h, md, kd, e, head_calib, calib_tokens);
        hsd_cli_head_free(&h);
        if (bad) goto done;
        if (head_save && hsd_model_save_head(md, head_save)) {
            fprintf(stderr, "hsd generate: --save-draft-head: %s\n", hsd_last_error());
            goto done;
        }
    }
    if (md) hsd_model_reset_timing(md);
    if (batch ? hsd_engine_generate_batch(e, (const char *const *)batch, NULL, n_batch, &gp, rs)
              : hsd_engine_generate(e, prompt, strlen(prompt), &gp, &r)) {
        fprintf(stderr, "hsd generate: %s\n", hsd_last_error());
        goto done;
    }
    hsd_model_timing dtime = {0, 0, 0, 0};
    if (md) hsd_model_get_timing(md, &dtime);
    if (batch) {
        double wall = 0;
        long tokens = 0;
        for (int32_t i = 0; i < n_batch; i++) {
            if (rs[i].total_ms > wall) wall = rs[i].total_ms;
            tokens += rs[i].n_ids;
            if (json) {
                json_t *o = result_json(&rs[i]);
                json_object_set_new(o, "backend",
                                    json_string(hsd_backend_name(hsd_model_backend(mt))));
                json_object_set_new(o, "index", json_integer(i));
                json_object_set_new(o, "prompt", json_string(batch[i]));
                char *dump = json_dumps(o, JSON_COMPACT);
                if (dump) puts(dump);
                free(dump);
                json_decref(o);
            } else {
                printf("=== [%d] %s\n", i, batch[i]);
                print_result_text(&rs[i]);
                printf("\n");
            }
        }
        if (!json)
            printf("batch of %d prompts: %ld tokens in %.2f ms, %.1f tokens/s together\n", n_batch,
                   tokens, wall, wall > 0 ? 1000.0 * tokens / wall : 0);
    } else if (json) {
        json_t *o = result_json(&r);
        json_object_set_new(o, "backend", json_string(hsd_backend_name(hsd_model_backend(mt))));
        if (md) {
            json_object_set_new(o, "draft_head", json_string(hsd_model_head_desc(md)));
            json_object_set_new(o, "draft_head_ms", json_real(dtime.head_ms));
            json_object_set_new(o, "draft_backbone_ms", json_real(dtime.backbone_ms));
        }
        char *dump = json_dumps(o, JSON_COMPACT);
        if (dump) puts(dump);
        free(dump);
        json_decref(o);
    } else {
        print_result_text(&r);
        if (md)
            printf("drafter head %s: head %.2f ms, backbone %.2f ms over %lld forwards\n",
                   hsd_model_head_desc(md), dtime.head_ms, dtime.backbone_ms,
                   (long long)dtime.n_forward);
    }
    rc = 0;
done:
    hsd_gen_result_free(&r);
    for (int32_t i = 0; i < n_batch; i++) {
        if (rs) hsd_gen_result_free(&rs[i]);
        free(batch[i]);
    }
    free(rs);
    free(batch);
    hsd_engine_free(e);
    hsd_model_free(mt);
    hsd_model_free(md);
    hsd_tokenizer_free(kt);
    hsd_tokenizer_free(kd);
    return rc;
}
