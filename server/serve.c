/* hsd serve: flags, loading, the scheduler and the HTTP daemon, and a clean end on
 * SIGINT/SIGTERM (in-flight streams get a final error event, then the process exits 0).
 * Built with or without libmicrohttpd: without it the command names the package and
 * exits 2, and everything else of the CLI is unchanged. */
#include <libgen.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/chat_prompt.h"
#include "cli/engine_load.h"
#include "hsd.h"
#ifdef HSD_HAVE_MICROHTTPD
#include <microhttpd.h>

#include "server/http.h"
#endif

typedef struct serve_opts {
    const char *target, *target_tok, *draft, *draft_tok, *host, *api_key, *chat_template;
    const char *cors, *alias;
    int algo, adaptive_k, cost_k, backend, kv_type, kv_no_rotate;
    int32_t k, k_max, port, parallel, ctx, threads, n_predict, queue, timeout, max_body_kb;
} serve_opts;

#define O(f) offsetof(serve_opts, f)
static const hsd_opt serve_table[] = {
    {"target|model", 'm', HSD_OPT_STRING, O(target), "M", "target model (file or directory)", 0, 0},
    {"target-tokenizer|tokenizer", 't', HSD_OPT_STRING, O(target_tok), "T",
     "target tokenizer (default for a .gguf model: its own)", 0, 0},
    {"draft", 0, HSD_OPT_STRING, O(draft), "M2", "drafter model (any tokenizer)", 0, 0},
    {"draft-tokenizer", 0, HSD_OPT_STRING, O(draft_tok), "D",
     "drafter tokenizer (default for a .gguf drafter: its own)", 0, 0},
    {"algo", 0, HSD_OPT_CHOICE, O(algo), "ar|sd|union|tli|slem|slrs|auto",
     "default algorithm (auto with a drafter, else ar); requests may choose their own", 0, 0},
    {"", 'k', HSD_OPT_INT, O(k), "K", "default draft length per round (4)", 1, 63},
    {"adaptive-k", 0, HSD_OPT_FLAG, O(adaptive_k), NULL, "adapt k to the running acceptance", 0, 0},
    {"cost-k", 0, HSD_OPT_FLAG, O(cost_k), NULL,
     "choose k each round for the most tokens per second (measured costs, running acceptance)", 0, 0},
    {"k-max", 0, HSD_OPT_INT, O(k_max), "K", "adaptive and cost-aware k's upper bound (16)", 1, 63},
    {"host", 0, HSD_OPT_STRING, O(host), "ADDR", "IPv4 address to bind (127.0.0.1)", 0, 0},
    {"port", 0, HSD_OPT_INT, O(port), "PORT", "TCP port (8080; 0: any free port, printed)", 0,
     65535},
    {"parallel", 0, HSD_OPT_INT, O(parallel), "N",
     "sequence slots: requests generated together (4)", 1, 256},
    {"ctx", 'c', HSD_OPT_INT, O(ctx), "N",
     "context per slot (default: the target's trained context, at most 4096)", 1, 1 << 24},
    HSD_OPT_ROW_THREADS(serve_opts, threads),
    {"api-key", 0, HSD_OPT_STRING, O(api_key), "KEY",
     "require \"Authorization: Bearer KEY\" (not on /health)", 0, 0},
    {"chat-template", 0, HSD_OPT_STRING, O(chat_template), "FILE",
     "chat template (Jinja file, tokenizer_config.json or GGUF; default: the GGUF target's, "
     "else ChatML)",
     0, 0},
    {"cors-origin", 0, HSD_OPT_STRING, O(cors), "ORIGIN",
     "send Access-Control-Allow-Origin: ORIGIN (off by default)", 0, 0},
    {"alias", 'a', HSD_OPT_STRING, O(alias), "NAME",
     "model name in /v1/models and responses (default: the target's file name)", 0, 0},
    {"n-predict", 'n', HSD_OPT_INT, O(n_predict), "N",
     "tokens per request when it names no max_tokens (-1: up to the context)", -1, 1 << 24},
    {"queue", 0, HSD_OPT_INT, O(queue), "N",
     "requests that may wait for a slot; more get 503 (64)", 0, 100000},
    {"timeout", 0, HSD_OPT_INT, O(timeout), "S",
     "end a request after S seconds with an error event (600; 0: never)", 0, 1 << 24},
    {"max-body", 0, HSD_OPT_INT, O(max_body_kb), "KB", "largest request body; more gets 413 (4096)",
     1, 1 << 21},
    {"backend", 0, HSD_OPT_CHOICE, O(backend), "auto|cpu|cuda",
     "where the models run (auto: a CUDA device if there is one)", 0, 0},
    {"kv-type", 0, HSD_OPT_CHOICE, O(kv_type), "f16|bf16|f32|q8_0|q4_0",
     "KV cache element type (default f16, as llama.cpp's; f32: exact, twice the memory; q8_0: about half f16's; q4_0: a quarter)", 0, 0},
    {"kv-no-rotate", 0, HSD_OPT_FLAG, O(kv_no_rotate), NULL,
     "q8_0 / q4_0: no Hadamard rotation of q, k, v (llama.cpp's LLAMA_ATTN_ROT_DISABLE=1)", 0, 0},
};
#undef O

const hsd_cli_spec hsd_spec_serve = {
    "serve",
    "--target M --target-tokenizer T [--draft M2 --draft-tokenizer D] [OPTIONS]",
    "  An OpenAI- and llama-server-compatible HTTP server: POST /v1/completions,\n"
    "  /v1/chat/completions (stream or not), /tokenize, /detokenize; GET /v1/models, /health,\n"
    "  /metrics. Requests share one running batch (continuous batching): each request's output\n"
    "  equals `hsd generate` with the same parameters. Binds 127.0.0.1 unless --host says\n"
    "  otherwise. A request's \"hsd\": {\"algo\", \"k\", \"adaptive_k\", \"cost_k\"} overrides the defaults.\n"
    "  SIGINT/SIGTERM ends in-flight streams with a final error event and exits 0.\n"
    "  Needs libmicrohttpd at build time (Debian: libmicrohttpd-dev); docs/SERVER.md.\n",
    NULL,
    serve_table,
    HSD_OPTS_N(serve_table),
    0,
};

static const char *gguf_self(const char *model) {
    size_t n = model ? strlen(model) : 0;
    return n > 5 && !strcasecmp(model + n - 5, ".gguf") ? model : NULL;
}

#ifdef HSD_HAVE_MICROHTTPD
static void print_notice(hsd_log_level level, const char *msg, void *user) {
    (void)user;
    if (level >= HSD_LOG_WARN) fprintf(stderr, "hsd serve: %s\n", msg);
}

static int run(const serve_opts *o, const hsd_cli_spec *spec) {
    static srv_server sv; /* static: the daemon's threads reach it until the very end */
    memset(&sv, 0, sizeof sv);
    /* SIGINT/SIGTERM are taken by sigwait below; every thread started from here on
     * inherits the mask. SIGPIPE: a client gone mid-write is an error return, not a kill. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    hsd_log_set(print_notice, NULL);
    const char *tt = o->target_tok ? o->target_tok : gguf_self(o->target);
    const char *dt = o->draft_tok ? o->draft_tok : gguf_self(o->draft);
    sv.api_key = o->api_key;
    sv.cors = o->cors;
    sv.max_body = (size_t)o->max_body_kb * 1024;
    sv.created = (int64_t)time(NULL);
    atomic_init(&sv.ready, 0);
    char msg[512];
    /* listening first: /health answers 503 while the models load */
    if (srv_http_start(&sv, o->host, o->port, msg, sizeof msg))
        return hsd_opts_fail(spec, "%s", msg), 1;
    int port = o->port;
    if (port == 0) {
        const union MHD_DaemonInfo *di =
            MHD_get_daemon_info((struct MHD_Daemon *)sv.daemon, MHD_DAEMON_INFO_BIND_PORT);
        if (di) port = di->port;
    }
    fprintf(stderr, "hsd serve: loading on http://%s:%d\n", o->host, port);
    hsd_model_params mp = hsd_cli_model_params();
    mp.n_ctx = o->ctx;
    mp.n_seq = o->parallel;
    if (o->threads > 0) mp.n_threads = o->threads;
    if (o->backend >= 0) mp.backend = (hsd_backend)o->backend;
    if (o->kv_type >= 0) mp.kv_type = (hsd_kv_type)o->kv_type;
    mp.kv_no_rotate = o->kv_no_rotate;
    hsd_cli_engine x;
    int rc = 1;
    if (hsd_cli_engine_load("serve", &x, o->target, tt, &mp, o->draft, dt, &mp)) goto out;
    sv.e = x.e;
    sv.tt = x.target_tok;
    sv.def.algo = o->algo >= 0 ? (hsd_algo)o->algo : o->draft ? HSD_ALGO_AUTO : HSD_ALGO_AR;
    sv.def.k = o->k;
    sv.def.k_max = o->k_max;
    sv.def.adaptive_k = o->adaptive_k;
    sv.def.cost_k = o->cost_k;
    sv.def.has_draft = o->draft != NULL;
    sv.def.max_tokens = o->n_predict > 0 ? o->n_predict : 1 << 24;
    sv.def.vocab = hsd_model_vocab_size(x.target);
    sv.n_ctx = o->ctx > 0 ? o->ctx : hsd_model_n_ctx(x.target);
    sv.def.n_ctx = o->ctx; /* past the trained context only when asked (a warning) */
    {
        char *base = strdup(o->target);
        snprintf(sv.model_name, sizeof sv.model_name, "%s",
                 o->alias ? o->alias : base ? basename(base) : o->target);
        free(base);
    }
    snprintf(sv.target_desc, sizeof sv.target_desc, "%s", hsd_model_desc(x.target));
    snprintf(sv.draft_desc, sizeof sv.draft_desc, "%s", x.draft ? hsd_model_desc(x.draft) : "");
    /* the chat template: --chat-template, else the target's (a GGUF's own, or the
     * tokenizer_config.json beside its tokenizer), else ChatML */
    if (srv_chat_init(&sv.chat, o->chat_template, x.target_tok, msg, sizeof msg)) {
        fprintf(stderr, "hsd serve: %s\n", msg);
        goto out;
    }
#ifdef HSD_SERVER_CHAT_API
    const char *own[2] = {o->target, tt};
    for (int i = 0; i < 2 && !o->chat_template && !srv_chat_has_template(sv.chat); i++) {
        srv_chat *g = NULL;
        if (own[i] && !srv_chat_init(&g, own[i], x.target_tok, msg, sizeof msg))
            srv_chat_free(sv.chat), sv.chat = g;
    }
    /* with a template, the model's end-of-turn ids end generation (llama-server's
     * end-of-generation tokens), for every request */
    if (srv_chat_has_template(sv.chat) &&
        hsd_cli_chat_eos("serve", x.e, x.target_tok, o->target, tt))
        goto out;
#endif
    if (srv_sched_start(&sv.sched, x.e, o->parallel, o->queue, o->timeout, msg, sizeof msg)) {
        fprintf(stderr, "hsd serve: %s\n", msg);
        goto out;
    }
    atomic_store(&sv.ready, 1);
    char reason[160] = "";
    hsd_algo auto_algo = hsd_engine_auto_algo(x.e, reason, sizeof reason);
    fprintf(stderr,
            "hsd serve: listening on http://%s:%d  model %s, algo %s%s%s, %d slots of %d "
            "positions, chat: %s\n",
            o->host, port, sv.model_name, hsd_algo_name(sv.def.algo),
            sv.def.algo == HSD_ALGO_AUTO ? " -> " : "",
            sv.def.algo == HSD_ALGO_AUTO ? hsd_algo_name(auto_algo) : "", (int)o->parallel,
            (int)sv.n_ctx, srv_chat_desc(sv.chat));
    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "hsd serve: %s: ending in-flight requests, shutting down\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    rc = 0;
out:
    atomic_store(&sv.ready, 0);
    srv_sched_stop(&sv.sched); /* every request ends with its final event */
    /* let the streams write their last event before the sockets close (at most 5 s) */
    for (int i = 0; i < 500 && atomic_load(&sv.streams) > 0; i++) usleep(10000);
    srv_http_stop(&sv);
    srv_chat_free(sv.chat);
    sv.chat = NULL;
    hsd_cli_engine_free(&x);
    return rc;
}
#endif

int hsd_cmd_serve(int argc, char **argv) {
    serve_opts o;
    memset(&o, 0, sizeof o);
    o.algo = -1, o.backend = -1, o.kv_type = -1;
    o.k = 4, o.k_max = 16, o.port = 8080, o.parallel = 4, o.n_predict = -1, o.queue = 64;
    o.timeout = 600, o.max_body_kb = 4096;
    o.host = "127.0.0.1";
    const hsd_cli_spec *spec = &hsd_spec_serve;
    HSD_OPTS_PARSE(spec, &o, argc, argv, NULL);
    if (!o.target) return hsd_opts_fail(spec, "--target is required");
    if (!o.target_tok && !gguf_self(o.target))
        return hsd_opts_fail(spec, "--target-tokenizer is required (the target is not a .gguf)");
    if (o.draft && !o.draft_tok && !gguf_self(o.draft))
        return hsd_opts_fail(spec, "--draft-tokenizer is required (the drafter is not a .gguf)");
    if (!o.draft && o.draft_tok) return hsd_opts_fail(spec, "--draft-tokenizer without --draft");
    if (!o.draft && o.algo > 0 && o.algo != HSD_ALGO_AUTO)
        return hsd_opts_fail(spec, "--algo %s needs --draft", hsd_algo_name((hsd_algo)o.algo));
#ifdef HSD_HAVE_MICROHTTPD
    return run(&o, spec);
#else
    return hsd_opts_fail(spec,
                         "this hsd was built without libmicrohttpd; install the Debian package "
                         "libmicrohttpd-dev (scripts/bootstrap.sh does) and rebuild");
#endif
}
