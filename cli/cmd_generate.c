/* hsd generate: text from a target model, alone (AR) or with a drafter of any tokenizer,
 * through the engine of include/hsd.h (one prompt, or a --batch-file generated together). */
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/json_out.h"
#include "cli/chat_prompt.h"
#include "cli/cli.h"
#include "cli/engine_load.h"
#include "cli/head_spec.h"
#include "cli/prompts.h"
#include "hsd.h"

typedef struct gen_opts {
    const char *target, *target_tok, *draft, *draft_tok, *prompt, *batch_file;
    const char *head, *head_calib, *head_save;
    const char *system, *messages;
    int algo, backend, kv_type, kv_no_rotate, lookahead, json, adaptive_k, cost_k, no_bos, slrs_one, no_stream, chat, print_prompt,
        ignore_eos;
    int32_t n, k, k_max, top_k, threads, calib_tokens, slrs_top_k, slrs_nodes, ctx, draft_ctx;
    float temp, top_p, slrs_top_p;
    uint64_t seed;
    hsd_opt_list stop;
} gen_opts;

#define O(f) offsetof(gen_opts, f)
static const hsd_opt gen_table[] = {
    {"target|model", 'm', HSD_OPT_STRING, O(target), "M", "target model (file or directory)", 0, 0},
    {"target-tokenizer|tokenizer", 't', HSD_OPT_STRING, O(target_tok), "T",
     "target tokenizer (default for a .gguf model: its own)", 0, 0},
    {"draft", 0, HSD_OPT_STRING, O(draft), "M2", "drafter model", 0, 0},
    {"draft-tokenizer", 0, HSD_OPT_STRING, O(draft_tok), "D",
     "drafter tokenizer (default for a .gguf drafter: its own)", 0, 0},
    {"algo", 0, HSD_OPT_CHOICE, O(algo), "ar|sd|union|tli|slem|slrs|auto",
     "algorithm (default: auto with a drafter, else ar)", 0, 0},
    {"prompt", 'p', HSD_OPT_STRING, O(prompt), "TEXT", "the prompt, used as is", 0, 0},
    {"chat", 0, HSD_OPT_FLAG, O(chat), NULL,
     "render the prompt as the user turn with the target's chat template (no BOS added; stops "
     "at every end-of-turn id the model declares)", 0, 0},
    {"system", 0, HSD_OPT_STRING, O(system), "TEXT", "--chat: a system message first", 0, 0},
    {"messages", 0, HSD_OPT_STRING, O(messages), "FILE",
     "--chat: the conversation (JSON list of messages, or an object with \"messages\", \"tools\")", 0, 0},
    {"print-prompt", 0, HSD_OPT_FLAG, O(print_prompt), NULL,
     "print the prompt fed to the target before the generated text (--json: a line with "
     "prompt and prompt_ids first)", 0, 0},
    {"batch-file", 0, HSD_OPT_STRING, O(batch_file), "FILE",
     "prompts, one per line (JSON lines: their \"prompt\"), generated together", 0, 0},
    {"", 'n', HSD_OPT_INT, O(n), "N", "new tokens at most (default 128)", 1, 1e9},
    {"", 'k', HSD_OPT_INT, O(k), "K", "draft length per round; slrs: the tree's depth limit (4)", 1,
     63},
    {"adaptive-k", 0, HSD_OPT_FLAG, O(adaptive_k), NULL, "adapt k to the running acceptance", 0, 0},
    {"cost-k", 0, HSD_OPT_FLAG, O(cost_k), NULL,
     "choose k each round for the most tokens per second (measured costs, running acceptance)", 0, 0},
    {"k-max", 0, HSD_OPT_INT, O(k_max), "K", "adaptive and cost-aware k's upper bound (16)", 1, 63},
    {"temp", 0, HSD_OPT_FLOAT, O(temp), "X", "temperature; <= 0 greedy (default 0)", 0, 0},
    {"top-k", 0, HSD_OPT_INT, O(top_k), "K", "sample from the K most likely (<= 0: off)", 0, 0},
    {"top-p", 0, HSD_OPT_FLOAT, O(top_p), "P", "nucleus sampling (>= 1: off)", 0, 0},
    {"seed", 0, HSD_OPT_U64, O(seed), "S", "random seed (batch: prompt i uses S + i)", 0, 0},
    {"stop", 0, HSD_OPT_LIST, O(stop), "STR", "stop after this string (repeatable)", 0, 0},
    {"no-bos", 0, HSD_OPT_FLAG, O(no_bos), NULL, "do not put each tokenizer's BOS first", 0, 0},
    {"ignore-eos", 0, HSD_OPT_FLAG, O(ignore_eos), NULL,
     "go on past the end-of-sequence token (stop_at_eos off)", 0, 0},
    HSD_OPT_ROW_THREADS(gen_opts, threads),
    {"ctx", 0, HSD_OPT_INT, O(ctx), "N",
     "positions the target may use, past its trained context with a warning (default: the "
     "trained context; -n is capped there)",
     1, 1 << 28},
    {"draft-ctx", 0, HSD_OPT_INT, O(draft_ctx), "N",
     "positions the drafter's cache holds, at most its trained context (default: that, or what "
     "the request needs); a longer text slides the drafter to a window of it",
     1, 1 << 28},
    {"backend", 0, HSD_OPT_CHOICE, O(backend), "auto|cpu|cuda",
     "where the models run (auto: a CUDA device if there is one); prints the notices", 0, 0},
    {"kv-type", 0, HSD_OPT_CHOICE, O(kv_type), "f16|bf16|f32|q8_0|q4_0",
     "KV cache element type (default f16, as llama.cpp's; f32: exact, twice the memory; q8_0: about half f16's; q4_0: a quarter)", 0, 0},
    {"kv-no-rotate", 0, HSD_OPT_FLAG, O(kv_no_rotate), NULL,
     "q8_0 / q4_0: no Hadamard rotation of q, k, v (llama.cpp's LLAMA_ATTN_ROT_DISABLE=1)", 0, 0},
    {"json", 0, HSD_OPT_FLAG, O(json), NULL, "one JSON object (per prompt) instead of text", 0, 0},
    {"no-stream", 0, HSD_OPT_FLAG, O(no_stream), NULL,
     "print the text when generation ends instead of as it becomes final", 0, 0},
    {"draft-head", 0, HSD_OPT_STRING, O(head), "SPEC",
     "drafter head: full|trim:IDS|tli[:IDS]|spec:K[/R][:F]|lowrank:R[:F]", 0, 0},
    HSD_OPT_ROWS_HEAD_CALIB(gen_opts, head_calib, calib_tokens),
    {"save-draft-head", 0, HSD_OPT_STRING, O(head_save), "FILE",
     "write the draft head's factors (safetensors)", 0, 0},
    {"slrs-top-k", 0, HSD_OPT_INT, O(slrs_top_k), "K", "slrs: children per tree node (2)", 0, 0},
    {"slrs-top-p", 0, HSD_OPT_FLOAT, O(slrs_top_p), "P", "slrs: top-p of those (0.95)", 0, 0},
    {"slrs-nodes", 0, HSD_OPT_INT, O(slrs_nodes), "N", "slrs: scored tree nodes per round (16)", 1,
     1e6},
    {"lookahead", 0, HSD_OPT_CHOICE, O(lookahead), "determined|fixed|nmax",
     "slrs: where a branch stops (default determined)", 0, 0},
    {"slrs-one-forward", 0, HSD_OPT_FLAG, O(slrs_one), NULL,
     "slrs: score the whole tree in one drafter forward", 0, 0},
};
#undef O

const hsd_cli_spec hsd_spec_generate = {
    "generate",
    "--target M --target-tokenizer T [--draft M2 --draft-tokenizer D] -p PROMPT | --batch-file "
    "FILE [OPTIONS]",
    "  Without --draft the target generates alone (--algo ar). The prompt is used as is; each\n"
    "  model gets its tokenizer's BOS first (unless --no-bos). Greedy by default (--temp 0).\n"
    "  Stops after N tokens, at EOS, at a --stop string or at the context end.\n"
    "  --batch-file: all prompts through hsd_engine_generate_batch; --json then prints one JSON\n"
    "  object per prompt (JSONL, with \"index\" and \"prompt\").\n"
    "  --chat: -p is the user turn (after --system, or --messages FILE's conversation), rendered\n"
    "  by the target's chat template; --json then adds \"prompt\" and \"prompt_ids\" (and\n"
    "  \"draft_prompt_ids\" with a drafter).\n",
    NULL,
    gen_table,
    HSD_OPTS_N(gen_table),
    0,
};

/* The library's notices on stderr: warnings always (e.g. a --ctx past the trained context),
 * information (e.g. "CUDA backend not used (no CUDA device (...)); using CPU") when --backend was given. */
static void print_notice(hsd_log_level level, const char *msg, void *user) {
    if (level >= (*(const int *)user ? HSD_LOG_INFO : HSD_LOG_WARN))
        fprintf(stderr, "hsd: %s\n", msg);
}

/* The prompt's tokens for one model (as the engine encodes it, without its BOS). */
static int64_t prompt_tokens(const char *who, const hsd_tokenizer *tok, const char *prompt) {
    int32_t *ids = NULL;
    size_t n = 0;
    if (hsd_tokenizer_encode_alloc(tok, prompt, strlen(prompt), false, &ids, &n)) {
        fprintf(stderr, "hsd %s: %s\n", who, hsd_last_error());
        return -1;
    }
    hsd_free(ids);
    return (int64_t)n;
}

/* Cache positions for a request that needs `need`: up to the library's default cache
 * (4096 positions) as asked; past it, no more than the model was trained for, read from
 * the file by a load that builds no cache (1 position, no packing, on the CPU). */
static int32_t cache_size(const char *path, int64_t need) {
    const int64_t cap = 1 << 28;
    if (need > cap) need = cap;
    if (need <= 4096) return (int32_t)need;
    hsd_model_params p = hsd_cli_model_params();
    p.n_ctx = 1, p.n_seq = 1, p.n_threads = 1, p.no_pack = true, p.backend = HSD_BACKEND_CPU;
    hsd_model *m = NULL;
    int32_t train = 0;
    if (hsd_model_load(path, &p, &m) == HSD_OK) /* else the real load says why */
        train = hsd_model_n_ctx_train(m);
    hsd_model_free(m);
    return train > 0 && train < need ? train : (int32_t)need;
}

/* Streaming: each round's final text goes out as soon as the engine commits it. */
static bool stream_text(void *user, int32_t seq, const char *text, size_t len, const int32_t *ids,
                        int32_t n_ids) {
    (void)user, (void)seq, (void)ids, (void)n_ids;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return true;
}

/* A .gguf model carries its tokenizer: it is the default --tokenizer. */
static const char *gguf_tok(const char *model) {
    size_t n = model ? strlen(model) : 0;
    return n > 5 && !strcasecmp(model + n - 5, ".gguf") ? model : NULL;
}

/* The model parameters: the context for n_ctx tokens, n_seq sequence slots. */
static hsd_model_params model_params(const gen_opts *o, int32_t n_ctx, int32_t n_seq) {
    hsd_model_params prm = hsd_cli_model_params();
    prm.n_ctx = n_ctx;
    prm.n_seq = n_seq;
    if (o->threads > 0) prm.n_threads = o->threads;
    if (o->backend >= 0) prm.backend = (hsd_backend)o->backend;
    if (o->kv_type >= 0) prm.kv_type = (hsd_kv_type)o->kv_type;
    prm.kv_no_rotate = o->kv_no_rotate;
    return prm;
}

static json_t *result_json(const hsd_gen_result *r) {
    json_t *o = json_object(), *ids = json_array();
    for (int32_t i = 0; i < r->n_ids; i++) json_array_append_new(ids, json_integer(r->ids[i]));
    json_object_set_new(o, "algo", json_string(hsd_algo_name(r->algo)));
    json_object_set_new(o, "reason", json_string(r->reason ? r->reason : ""));
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
    json_object_set_new(o, "k_mean", json_real(r->k_mean));
    json_object_set_new(o, "stop_reason", json_string(hsd_stop_reason_name(r->stop_reason)));
    if (r->algo == HSD_ALGO_SLRS && r->slrs) {
        json_object_set_new(o, "psi_ms", json_real(r->slrs->psi_ms));
        json_object_set_new(o, "tree_nodes", json_real(r->slrs->tree_nodes));
        json_object_set_new(o, "tree_forwards", json_real(r->slrs->tree_forwards));
        json_object_set_new(o, "expected_accept", json_real(r->slrs->expected_accept));
        json_object_set_new(o, "expected_accept_em", json_real(r->slrs->expected_accept_em));
    }
    return o;
}

/* The text (unless it was streamed) and the statistics. */
static void print_result_text(const hsd_gen_result *r, bool streamed) {
    if (!streamed) fwrite(r->text, 1, r->text_len, stdout);
    /* scripts read these lines (scripts/demo.sh: "acceptance rate ... tokens/s") */
    printf("\n\nalgo %s (%s)\n", hsd_algo_name(r->algo), r->reason ? r->reason : "");
    printf("acceptance rate %.3f, tau %.2f tokens/round, %d rounds, %.1f tokens/s\n",
           r->acceptance_rate, r->tau, r->n_rounds, r->tokens_per_s);
    printf("TTFT %.3f ms, TPOT %.4f ms; time: draft %.2f ms, verify %.2f ms, bridge %.2f ms "
           "(total %.2f ms)\n",
           r->ttft_ms, r->tpot_ms, r->draft_ms, r->verify_ms, r->bridge_ms, r->total_ms);
    printf("stopped: %s\n", hsd_stop_reason_name(r->stop_reason));
    if (r->algo == HSD_ALGO_SLRS && r->slrs)
        printf("slrs: %.1f tree nodes and %.2f drafter forwards per round, psi %.3f ms/round; "
               "first-token acceptance %.3f (expected %.3f; exact matching %.3f)\n",
               r->slrs->tree_nodes, r->slrs->tree_forwards, r->slrs->psi_ms, r->first_accept_rate,
               r->slrs->expected_accept, r->slrs->expected_accept_em);
}

static void print_batch(const gen_opts *o, hsd_model *mt, char **batch, int32_t n,
                        const hsd_gen_result *rs) {
    double wall = 0;
    long tokens = 0;
    for (int32_t i = 0; i < n; i++) {
        if (rs[i].total_ms > wall) wall = rs[i].total_ms;
        tokens += rs[i].n_ids;
        if (o->json) {
            json_t *j = result_json(&rs[i]);
            json_object_set_new(j, "backend", json_string(hsd_backend_name(hsd_model_backend(mt))));
            json_object_set_new(j, "index", json_integer(i));
            json_object_set_new(j, "prompt", json_string(batch[i]));
            hsd_cli_put_json(j, JSON_COMPACT);
        } else {
            printf("=== [%d] %s\n", i, batch[i]);
            print_result_text(&rs[i], false);
            printf("\n");
        }
    }
    if (!o->json)
        printf("batch of %d prompts: %ld tokens in %.2f ms, %.1f tokens/s together\n", n, tokens,
               wall, wall > 0 ? 1000.0 * tokens / wall : 0);
}

/* --chat --json: the rendered prompt and the ids each model was fed */
static json_t *chat_json;

static void print_single(const gen_opts *o, hsd_model *mt, hsd_model *md, const hsd_gen_result *r) {
    hsd_model_timing dtime = {0, 0, 0, 0};
    if (md) hsd_model_get_timing(md, &dtime);
    if (o->json) {
        json_t *j = result_json(r);
        if (chat_json) json_object_update(j, chat_json);
        json_object_set_new(j, "backend", json_string(hsd_backend_name(hsd_model_backend(mt))));
        json_object_set_new(j, "model", json_string(hsd_model_desc(mt)));
        if (md) {
            json_object_set_new(j, "draft_head", json_string(hsd_model_head_desc(md)));
            json_object_set_new(j, "draft_head_ms", json_real(dtime.head_ms));
            json_object_set_new(j, "draft_backbone_ms", json_real(dtime.backbone_ms));
        }
        hsd_cli_put_json(j, JSON_COMPACT);
        return;
    }
    print_result_text(r, !o->no_stream);
    if (md)
        printf("drafter head %s: head %.2f ms, backbone %.2f ms over %lld forwards\n",
               hsd_model_head_desc(md), dtime.head_ms, dtime.backbone_ms,
               (long long)dtime.n_forward);
}

int hsd_cmd_generate(int argc, char **argv) {
    const hsd_cli_spec *spec = &hsd_spec_generate;
    hsd_gen_params gp = hsd_gen_default_params();
    gen_opts o = {0};
    o.algo = -1, o.backend = -1, o.kv_type = -1;
    o.n = gp.max_new_tokens, o.k = gp.n_draft, o.k_max = gp.k_max, o.temp = gp.temp;
    o.top_k = gp.top_k, o.top_p = gp.top_p, o.seed = gp.seed, o.lookahead = gp.slrs_lookahead;
    o.slrs_top_k = gp.slrs_top_k, o.slrs_top_p = gp.slrs_top_p, o.slrs_nodes = gp.slrs_max_nodes;
    HSD_OPTS_PARSE(spec, &o, argc, argv, NULL);
    if (!o.target_tok) o.target_tok = gguf_tok(o.target);
    if (o.draft && !o.draft_tok) o.draft_tok = gguf_tok(o.draft);
    if (!o.target || !o.target_tok)
        return hsd_opts_fail(spec, "--target and --target-tokenizer are required");
    if ((o.system || o.messages || o.print_prompt) && !o.chat)
        return hsd_opts_fail(spec, "--system, --messages and --print-prompt go with --chat");
    if (o.chat && o.batch_file) return hsd_opts_fail(spec, "--chat takes -p or --messages, not --batch-file");
    if (o.chat && !o.prompt && !o.messages) return hsd_opts_fail(spec, "--chat needs -p PROMPT or --messages FILE");
    if (!o.chat && !o.prompt == !o.batch_file)
        return hsd_opts_fail(spec, "give -p PROMPT or --batch-file FILE");
    if (!o.draft != !o.draft_tok)
        return hsd_opts_fail(spec, "--draft and --draft-tokenizer go together");
    if (o.draft_ctx && !o.draft) return hsd_opts_fail(spec, "--draft-ctx needs --draft");
    if ((o.head || o.head_save) && !o.draft)
        return hsd_opts_fail(spec, "--draft-head needs --draft");
    static int notices;
    notices = o.backend >= 0;
    hsd_log_set(print_notice, &notices);
    gp.algo = o.algo >= 0 ? (hsd_algo)o.algo : o.draft ? HSD_ALGO_AUTO : HSD_ALGO_AR;
    gp.max_new_tokens = o.n, gp.n_draft = o.k, gp.k_max = o.k_max, gp.adaptive_k = o.adaptive_k;
    gp.cost_k = o.cost_k;
    gp.temp = o.temp, gp.top_k = o.top_k, gp.top_p = o.top_p, gp.seed = o.seed;
    gp.stop = o.stop.v, gp.n_stop = o.stop.n, gp.add_bos = !o.no_bos;
    gp.stop_at_eos = !o.ignore_eos;
    gp.slrs_top_k = o.slrs_top_k, gp.slrs_top_p = o.slrs_top_p, gp.slrs_max_nodes = o.slrs_nodes;
    gp.slrs_lookahead = o.lookahead, gp.slrs_single_forward = o.slrs_one;
    gp.n_ctx = o.ctx;
    if (!o.json && !o.batch_file && !o.no_stream) gp.on_text = stream_text;

    char *chat_text = NULL;
    if (o.chat) {
        /* the template decides BOS: transformers encodes its text with add_special_tokens off */
        chat_text = hsd_cli_chat_prompt("generate", o.target, o.target_tok, o.messages, o.system, o.prompt);
        if (!chat_text) return 1;
        o.prompt = chat_text;
        gp.add_bos = false;
    }
    int rc = 1;
    hsd_cli_engine x = {0};
    hsd_gen_result r = HSD_GEN_RESULT_INIT, *rs = NULL;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    char **batch = NULL;
    int32_t n_batch = 0;
    if (o.batch_file) {
        n_batch = hsd_cli_read_prompts("generate", o.batch_file, 0, 0, &batch);
        if (n_batch == 0) fprintf(stderr, "hsd generate: no prompts in %s\n", o.batch_file);
        if (n_batch <= 0 || !(rs = calloc((size_t)n_batch, sizeof *rs))) goto done;
        hsd_gen_results_init(rs, n_batch);
    }
    if (hsd_cli_engine_load_toks("generate", &x, o.target_tok, o.draft ? o.draft_tok : NULL))
        goto done;
    /* each cache holds what the request needs (the longest prompt in that model's tokens,
     * its BOS, the new tokens and the last round's candidates), never more than the model's
     * context: the engine stops there, so positions past it would be memory never used
     * (-n 1000000 on a 40,960-context model) */
    int64_t pt = 0, pd = 0;
    for (int32_t i = 0; i < (batch ? n_batch : 1); i++) {
        const char *pr = batch ? batch[i] : o.prompt;
        int64_t a = prompt_tokens("generate", x.target_tok, pr), b = 0;
        if (a < 0 || (o.draft && (b = prompt_tokens("generate", x.draft_tok, pr)) < 0)) goto done;
        if (a > pt) pt = a;
        if (b > pd) pd = b;
    }
    int32_t n_seq = batch ? n_batch : 1;
    int32_t n_ctx = o.ctx > 0 ? o.ctx
                              : cache_size(o.target, pt + 1 + gp.max_new_tokens + 64 + gp.k_max);
    /* the drafter's context is its own: past it the drafter slides to a window of the text,
     * so its cache needs the text in its tokens (a drafter token per target token is not
     * promised: allow several) only up to its context */
    int32_t d_ctx = !o.draft ? 0
                    : o.draft_ctx > 0 ? o.draft_ctx
                                      : cache_size(o.draft, pd + 1 + 4 * (int64_t)gp.max_new_tokens + 64);
    hsd_model_params tp = model_params(&o, n_ctx, n_seq), dp = model_params(&o, d_ctx, n_seq);
    if (hsd_cli_engine_load_models("generate", &x, o.target, &tp, o.draft, &dp)) goto done;
    {
        /* -n capped at the context, with a notice (the engine stops there: "context") */
        int32_t train = hsd_model_n_ctx_train(x.target), kv = hsd_model_n_ctx(x.target);
        int32_t ctx = o.ctx > 0 ? o.ctx : train > 0 && train < kv ? train : kv;
        if (ctx > kv) ctx = kv;
        if (pt + 1 + gp.max_new_tokens > ctx)
            fprintf(stderr,
                    "hsd generate: -n %d capped at the context: the prompt takes %lld of %d "
                    "positions, at most %lld new tokens%s\n",
                    (int)gp.max_new_tokens, (long long)pt + 1, (int)ctx,
                    (long long)(ctx - pt - 1 > 0 ? ctx - pt - 1 : 0),
                    o.ctx > 0 ? "" : " (--ctx sets the context)");
    }
    hsd_model *mt = x.target, *md = x.draft;
    hsd_engine *e = x.e;
    if (o.head &&
        hsd_cli_head_apply("generate", o.head, md, x.draft_tok, e, o.head_calib, o.calib_tokens))
        goto done;
    if (o.head_save && hsd_model_save_head(md, o.head_save)) {
        fprintf(stderr, "hsd generate: --save-draft-head: %s\n", hsd_last_error());
        goto done;
    }
    if (o.chat) {
        if (hsd_cli_chat_eos("generate", e, x.target_tok, o.target, o.target_tok)) goto done;
        if (o.json) {
            chat_json = json_object();
            json_object_set_new(chat_json, "prompt", json_string(chat_text));
            const hsd_tokenizer *toks[2] = {x.target_tok, md ? x.draft_tok : NULL};
            const char *keys[2] = {"prompt_ids", "draft_prompt_ids"};
            for (int k = 0; k < 2 && toks[k]; k++) {
                int32_t *ids;
                size_t n;
                if (hsd_tokenizer_encode_alloc(toks[k], chat_text, strlen(chat_text), false, &ids, &n)) {
                    fprintf(stderr, "hsd generate: %s\n", hsd_cli_error("generate"));
                    goto done;
                }
                json_t *a = json_array();
                for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer(ids[i]));
                json_object_set_new(chat_json, keys[k], a);
                hsd_free(ids);
            }
            /* --print-prompt --json: the prompt's line before the result's */
            if (o.print_prompt) hsd_cli_put_json(json_incref(chat_json), JSON_COMPACT);
        } else if (o.print_prompt) {
            fputs(chat_text, stdout);
            fflush(stdout);
        }
    }
    if (md) hsd_model_reset_timing(md);
    if (batch ? hsd_engine_generate_batch(e, (const char *const *)batch, NULL, n_batch, &gp, rs)
              : hsd_engine_generate(e, o.prompt, strlen(o.prompt), &gp, &r)) {
        fprintf(stderr, "hsd generate: %s\n", hsd_cli_error("generate"));
        goto done;
    }
    if (batch)
        print_batch(&o, mt, batch, n_batch, rs);
    else
        print_single(&o, mt, md, &r);
    rc = 0;
done:
    hsd_gen_result_free(&r);
    for (int32_t i = 0; rs && i < n_batch; i++) hsd_gen_result_free(&rs[i]);
    free(rs);
    if (n_batch > 0) hsd_cli_free_prompts(batch, n_batch);
    hsd_cli_engine_free(&x);
    json_decref(chat_json);
    chat_json = NULL;
    free(chat_text);
    return rc;
}
