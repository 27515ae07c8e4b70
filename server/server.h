/* hsd serve: an OpenAI- and llama-server-compatible HTTP server over the running batch of
 * include/hsd.h (a client of the public API only, like cli/).
 *
 *   request.c   request bodies: JSON parsing and validation into srv_parsed (pure; fuzzed
 *               by fuzz/fuzz_server_request.c), the OpenAI error shape;
 *   chat.c      messages -> prompt (the chat template of --chat-template or the model, else
 *               ChatML, llama-server's fallback);
 *   sched.c     the scheduler thread that owns the engine (continuous batching), the bounded
 *               queue, cancellation, timeouts and the Prometheus counters;
 *   http.c      libmicrohttpd (thread per connection): routes, SSE streams, auth, CORS;
 *   serve.c     `hsd serve`: flags, loading, signals. */
#ifndef HSD_SERVER_H
#define HSD_SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsd.h"

typedef enum srv_kind { SRV_COMPLETION = 0, SRV_CHAT = 1 } srv_kind;

/* What a request falls back to (the server's flags). */
typedef struct srv_defaults {
    hsd_algo algo;
    int32_t k, k_max;
    bool adaptive_k, cost_k;
    bool has_draft;      /* algorithms other than ar need the drafter */
    int32_t max_tokens;  /* budget when the request names none */
    int32_t vocab;       /* target vocabulary, for prompt ids (0: unchecked) */
    int32_t n_ctx;       /* positions per sequence (--ctx; 0: the model's) */
} srv_defaults;

/* A validated request. */
typedef struct srv_parsed {
    srv_kind kind;
    char *prompt; /* completions: prompt text (owned), or NULL with ids */
    size_t prompt_len;
    int32_t *ids; /* completions: prompt as target ids (owned) */
    size_t n_ids;
    bool has_ids;
    json_t *messages; /* chat: the messages (a reference owned) */
    hsd_gen_params gen; /* stop points into stops */
    char **stops;
    int32_t n_stop;
    bool seed_given;
    bool stream, include_usage;
    char *model; /* as the client named it (owned; may be NULL) */
} srv_parsed;

typedef struct srv_error {
    int status;        /* HTTP status */
    const char *type;  /* OpenAI's type: invalid_request_error, authentication_error, ... */
    char param[64];    /* the offending field ("" if none) */
    char message[512];
} srv_error;

/* Fills e and returns -1 (for `return srv_fail(...)`). */
int srv_fail(srv_error *e, int status, const char *type, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* {"error":{"message","type","param","code"}} (code: the HTTP status, as llama-server). */
json_t *srv_error_json(const srv_error *e);

/* Parses and validates a body of /v1/completions (SRV_COMPLETION) or /v1/chat/completions.
 * 0 on success (free with srv_parsed_free), -1 with *err filled (status 400). Never crashes
 * on any input. */
int srv_parse_request(const char *body, size_t len, srv_kind kind, const srv_defaults *d,
                      srv_parsed *out, srv_error *err);
void srv_parsed_free(srv_parsed *p);

/* /tokenize and /detokenize bodies (llama-server's shapes): the answer object, or NULL with
 * *err filled. */
json_t *srv_tokenize(const hsd_tokenizer *tok, const char *body, size_t len, srv_error *err);
json_t *srv_detokenize(const hsd_tokenizer *tok, const char *body, size_t len, srv_error *err);

/* ---- chat.c ---- */
typedef struct srv_chat srv_chat;
/* path NULL: the built-in ChatML. Prints nothing; -1 with msg filled on error. */
int srv_chat_init(srv_chat **out, const char *path, const hsd_tokenizer *tok, char *msg,
                  size_t cap);
void srv_chat_free(srv_chat *c);
const char *srv_chat_desc(const srv_chat *c);
/* A real template (its text is the prompt as is, no BOS added), or the built-in ChatML. */
bool srv_chat_has_template(const srv_chat *c);
/* messages (validated by srv_parse_request) -> prompt text (malloc'd, *len bytes). */
int srv_chat_render(const srv_chat *c, json_t *messages, char **out, size_t *len, srv_error *err);

/* The end of the generated text that may be sent: stop strings are cut out as OpenAI does
 * (the text ends before the first occurrence), and while generation goes on, a tail that
 * may still grow into a stop string is held back. *hit: a stop string was found. */
size_t srv_stop_visible(const char *text, size_t len, char *const *stops, int32_t n_stop,
                        bool final, bool *hit);

#endif
