/* libFuzzer: hsd serve's request parser and validation (server/request.c) and what runs on
 * a validated request before the engine (the ChatML rendering, the stop-string cut). Byte 0
 * picks the endpoint: /v1/completions, /v1/chat/completions, /tokenize, /detokenize; the
 * rest is the body. Oracles: a body is either accepted with every field in range, or refused
 * with a 4xx/5xx in OpenAI's error shape (message non-empty, serializable); the stop cut
 * never runs past the text, and with final=false never past the final cut. */
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "server/server.h"

static hsd_tokenizer *tok;
static srv_chat *chat;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *shared = getenv("HSD_SHARED");
    if (!shared || !*shared) shared = HSD_FUZZ_SHARED;
    char path[1024], msg[256];
    snprintf(path, sizeof path, "%s/models/stories260K/tok512.bin", shared);
    if (hsd_tokenizer_load_file(path, &tok) != HSD_OK || srv_chat_init(&chat, NULL, tok, msg, sizeof msg)) {
        fprintf(stderr, "fuzz_server_request: %s\n", hsd_last_error());
        abort();
    }
    return 0;
}

static void check_error(const srv_error *e) {
    if (e->status < 400 || e->status > 599 || !e->message[0] || !e->type) abort();
    json_t *j = srv_error_json(e);
    char *s = json_dumps(j, JSON_COMPACT);
    if (!s) abort();
    free(s);
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int which = data[0] % 4;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    srv_error e;
    if (which >= 2) {
        json_t *o = which == 2 ? srv_tokenize(tok, body, len, &e) : srv_detokenize(tok, body, len, &e);
        if (o) {
            char *s = json_dumps(o, JSON_COMPACT);
            if (!s) abort();
            free(s);
            json_decref(o);
        } else {
            check_error(&e);
        }
        return 0;
    }
    srv_defaults d = {.algo = HSD_ALGO_AUTO, .k = 4, .k_max = 16, .has_draft = (data[0] & 4) != 0,
                      .max_tokens = 128, .vocab = hsd_tokenizer_vocab_size(tok)};
    srv_parsed p;
    if (srv_parse_request(body, len, which == 0 ? SRV_COMPLETION : SRV_CHAT, &d, &p, &e)) {
        check_error(&e);
        return 0;
    }
    const hsd_gen_params *g = &p.gen;
    if (g->max_new_tokens < 0 || g->n_draft < 1 || g->n_draft > 63 || g->k_max < 1 ||
        g->k_max > 63 || !(g->temp >= 0) || !(g->top_p > 0 && g->top_p <= 1) || g->top_k < 0 ||
        (unsigned)g->algo > HSD_ALGO_AUTO || g->n_stop != p.n_stop ||
        (g->algo != HSD_ALGO_AR && g->algo != HSD_ALGO_AUTO && !d.has_draft && g->algo != d.algo) ||
        (p.include_usage && !p.stream))
        abort();
    for (size_t i = 0; p.has_ids && i < p.n_ids; i++)
        if (p.ids[i] < 0 || p.ids[i] >= d.vocab) abort();
    const char *text = p.prompt;
    size_t tl = p.prompt_len;
    char *rendered = NULL;
    if (p.kind == SRV_CHAT) {
        if (srv_chat_render(chat, p.messages, &rendered, &tl, &e)) {
            check_error(&e);
            srv_parsed_free(&p);
            return 0;
        }
        text = rendered;
    }
    if (text) {
        bool hit, hit2;
        size_t fin = srv_stop_visible(text, tl, p.stops, p.n_stop, true, &hit);
        size_t mid = srv_stop_visible(text, tl, p.stops, p.n_stop, false, &hit2);
        if (fin > tl || mid > fin || hit != hit2) abort();
    }
    free(rendered);
    srv_parsed_free(&p);
    return 0;
}
