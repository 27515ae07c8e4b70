/* Request bodies: JSON -> srv_parsed, with every field checked for its type and range, and
 * every parameter hsd cannot honour answered with a 400 that names it (never ignored
 * silently). Pure (no engine, no I/O), so fuzz/fuzz_server_request.c drives it directly. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

#define MAX_STOP 16
#define MAX_STOP_LEN 256

int srv_fail(srv_error *e, int status, const char *type, const char *param, const char *fmt, ...) {
    e->status = status;
    e->type = type;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

json_t *srv_error_json(const srv_error *e) {
    json_t *in = json_object();
    json_object_set_new(in, "message", json_string(e->message));
    json_object_set_new(in, "type", json_string(e->type ? e->type : "server_error"));
    json_object_set_new(in, "param", e->param[0] ? json_string(e->param) : json_null());
    json_object_set_new(in, "code", json_integer(e->status));
    json_t *o = json_object();
    json_object_set_new(o, "error", in);
    return o;
}

static int bad(srv_error *e, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(srv_error *e, const char *param, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return srv_fail(e, 400, "invalid_request_error", param, "%s", msg);
}

static int unsupported(srv_error *e, const char *param, const char *why) {
    return srv_fail(e, 400, "invalid_request_error", param, "'%s' is not supported by hsd serve: %s",
                    param, why);
}

void srv_parsed_free(srv_parsed *p) {
    if (!p) return;
    free(p->prompt);
    free(p->ids);
    json_decref(p->messages);
    for (int32_t i = 0; i < p->n_stop; i++) free(p->stops[i]);
    free(p->stops);
    free(p->model);
    memset(p, 0, sizeof *p);
}

/* An integer field: JSON integers, or reals with an integral value (JavaScript clients send
 * 1.0 for 1). */
static int get_int(json_t *v, const char *name, int64_t lo, int64_t hi, int64_t *out,
                   srv_error *e) {
    double x;
    if (json_is_integer(v)) {
        x = (double)json_integer_value(v);
        if (json_integer_value(v) < lo || json_integer_value(v) > hi)
            return bad(e, name, "'%s' must be between %lld and %lld (got %lld)", name,
                       (long long)lo, (long long)hi, (long long)json_integer_value(v));
        *out = json_integer_value(v);
        return 0;
    }
    if (json_is_real(v)) {
        x = json_real_value(v);
        if (!isfinite(x) || x != floor(x))
            return bad(e, name, "'%s' must be an integer", name);
        if (x < (double)lo || x > (double)hi)
            return bad(e, name, "'%s' must be between %lld and %lld (got %g)", name, (long long)lo,
                       (long long)hi, x);
        *out = (int64_t)x;
        return 0;
    }
    return bad(e, name, "'%s' must be an integer (got %s)", name,
               json_is_string(v) ? "a string" : json_is_null(v) ? "null" : "another type");
}

static int get_num(json_t *v, const char *name, double lo, double hi, double *out, srv_error *e) {
    if (!json_is_number(v))
        return bad(e, name, "'%s' must be a number", name);
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi)
        return bad(e, name, "'%s' must be between %g and %g (got %g)", name, lo, hi, x);
    *out = x;
    return 0;
}

static int get_bool(json_t *v, const char *name, bool *out, srv_error *e) {
    if (!json_is_boolean(v)) return bad(e, name, "'%s' must be true or false", name);
    *out = json_is_true(v);
    return 0;
}

/* "stop": a string or a list of strings (OpenAI allows up to 4; llama-server more). */
static int get_stop(json_t *v, srv_parsed *p, srv_error *e) {
    if (json_is_null(v)) return 0;
    json_t *one[1] = {v};
    json_t **items = one;
    size_t n = 1;
    if (json_is_array(v)) {
        n = json_array_size(v);
        if (n > MAX_STOP) return bad(e, "stop", "'stop' has %zu strings (at most %d)", n, MAX_STOP);
    } else if (!json_is_string(v)) {
        return bad(e, "stop", "'stop' must be a string or a list of strings");
    }
    if (n == 0) return 0;
    p->stops = calloc(n, sizeof *p->stops);
    if (!p->stops) return srv_fail(e, 500, "server_error", NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_is_array(v) ? json_array_get(v, i) : items[0];
        if (!json_is_string(s)) return bad(e, "stop", "'stop[%zu]' must be a string", i);
        size_t l = json_string_length(s);
        if (l == 0) return bad(e, "stop", "'stop[%zu]' is empty", i);
        if (l > MAX_STOP_LEN)
            return bad(e, "stop", "'stop[%zu]' is %zu bytes (at most %d)", i, l, MAX_STOP_LEN);
        if (memchr(json_string_value(s), 0, l))
            return bad(e, "stop", "'stop[%zu]' contains a NUL character", i);
        if (!(p->stops[i] = strdup(json_string_value(s))))
            return srv_fail(e, 500, "server_error", NULL, "out of memory");
        p->n_stop = (int32_t)i + 1;
    }
    p->gen.stop = (const char *const *)p->stops;
    p->gen.n_stop = p->n_stop;
    return 0;
}

/* The "hsd" extension object: {"algo", "k", "adaptive_k", "cost_k", "k_max"}. */
static int get_hsd(json_t *v, const srv_defaults *d, srv_parsed *p, srv_error *e) {
    if (!json_is_object(v)) return bad(e, "hsd", "'hsd' must be an object {algo, k, adaptive_k, cost_k}");
    const char *key;
    json_t *x;
    json_object_foreach(v, key, x) {
        int64_t i;
        if (!strcmp(key, "algo")) {
            int a = json_is_string(x) ? hsd_algo_parse(json_string_value(x)) : -1;
            if (a < 0)
                return bad(e, "hsd.algo",
                           "'hsd.algo' must be one of auto, slem, tli, slrs, sd, union, ar");
            if (a != HSD_ALGO_AR && !d->has_draft)
                return bad(e, "hsd.algo",
                           "'hsd.algo' %s needs a drafter; this server runs without --draft",
                           json_string_value(x));
            p->gen.algo = (hsd_algo)a;
        } else if (!strcmp(key, "k")) {
            if (get_int(x, "hsd.k", 1, 63, &i, e)) return -1;
            p->gen.n_draft = (int32_t)i;
        } else if (!strcmp(key, "k_max")) {
            if (get_int(x, "hsd.k_max", 1, 63, &i, e)) return -1;
            p->gen.k_max = (int32_t)i;
        } else if (!strcmp(key, "adaptive_k")) {
            if (get_bool(x, "hsd.adaptive_k", &p->gen.adaptive_k, e)) return -1;
        } else if (!strcmp(key, "cost_k")) {
            if (get_bool(x, "hsd.cost_k", &p->gen.cost_k, e)) return -1;
        } else {
            return bad(e, "hsd", "unknown field 'hsd.%.40s' (known: algo, k, k_max, adaptive_k, cost_k)",
                       key);
        }
    }
    return 0;
}

/* A UTF-8 JSON string field (jansson has checked the encoding) without NUL bytes. */
static int text_field(json_t *s, const char *name, srv_error *e) {
    if (!json_is_string(s)) return bad(e, name, "'%s' must be a string", name);
    if (memchr(json_string_value(s), 0, json_string_length(s)))
        return bad(e, name, "'%s' contains a NUL character", name);
    return 0;
}

static int get_prompt(json_t *v, const srv_defaults *d, srv_parsed *p, srv_error *e) {
    if (!v) return bad(e, "prompt", "'prompt' is required");
    if (json_is_array(v) && json_array_size(v) == 1 && json_is_string(json_array_get(v, 0)))
        v = json_array_get(v, 0); /* ["text"]: one prompt */
    if (json_is_string(v)) {
        if (text_field(v, "prompt", e)) return -1;
        p->prompt_len = json_string_length(v);
        p->prompt = malloc(p->prompt_len + 1);
        if (!p->prompt) return srv_fail(e, 500, "server_error", NULL, "out of memory");
        memcpy(p->prompt, json_string_value(v), p->prompt_len + 1);
        return 0;
    }
    if (!json_is_array(v))
        return bad(e, "prompt", "'prompt' must be a string or an array of token ids");
    size_t n = json_array_size(v);
    for (size_t i = 0; i < n; i++)
        if (!json_is_integer(json_array_get(v, i)))
            return json_is_string(json_array_get(v, i)) || json_is_array(json_array_get(v, i))
                       ? unsupported(e, "prompt", "a batch of several prompts (send one request "
                                                  "per prompt)")
                       : bad(e, "prompt", "'prompt[%zu]' must be a token id", i);
    p->ids = malloc((n ? n : 1) * sizeof *p->ids);
    if (!p->ids) return srv_fail(e, 500, "server_error", NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_int_t id = json_integer_value(json_array_get(v, i));
        if (id < 0 || (d->vocab > 0 && id >= d->vocab) || id > INT32_MAX)
            return bad(e, "prompt", "'prompt[%zu]' = %lld is not a token id of the target "
                                    "(vocabulary %d)",
                       i, (long long)id, (int)d->vocab);
        p->ids[i] = (int32_t)id;
    }
    p->n_ids = n;
    p->has_ids = true;
    return 0;
}

/* Chat messages: [{role, content}] with content a string or text parts. Validated here, so
 * that the template (chat.c) sees only well-formed messages: role a string, content a string
 * (parts are joined into one string). */
static int get_messages(json_t *v, srv_parsed *p, srv_error *e) {
    if (!v) return bad(e, "messages", "'messages' is required");
    if (!json_is_array(v) || json_array_size(v) == 0)
        return bad(e, "messages", "'messages' must be a non-empty array");
    json_t *out = json_array();
    p->messages = out;
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *m = json_array_get(v, i);
        if (!json_is_object(m)) return bad(e, "messages", "'messages[%zu]' must be an object", i);
        json_t *role = json_object_get(m, "role"), *content = json_object_get(m, "content");
        if (!json_is_string(role))
            return bad(e, "messages", "'messages[%zu].role' must be a string", i);
        const char *r = json_string_value(role);
        if (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant") &&
            strcmp(r, "developer"))
            return bad(e, "messages",
                       "'messages[%zu].role' %.40s is not one of system, developer, user, "
                       "assistant (tool messages are not supported)",
                       i, r);
        if (json_object_get(m, "tool_calls") && !json_is_null(json_object_get(m, "tool_calls")))
            return unsupported(e, "messages", "tool calls in messages");
        json_t *text;
        if (json_is_string(content)) {
            if (text_field(content, "messages", e)) return -1;
            text = json_copy(content);
        } else if (json_is_null(content) || !content) {
            text = json_string("");
        } else if (json_is_array(content)) {
            /* [{type: "text", text}] parts, joined */
            size_t len = 0;
            for (size_t j = 0; j < json_array_size(content); j++) {
                json_t *part = json_array_get(content, j), *t = json_object_get(part, "text");
                json_t *ty = json_object_get(part, "type");
                if (!json_is_object(part) || !json_is_string(ty) ||
                    strcmp(json_string_value(ty), "text"))
                    return unsupported(e, "messages",
                                       "content parts other than {\"type\": \"text\"} (images, "
                                       "audio, files)");
                if (text_field(t, "messages", e)) return -1;
                len += json_string_length(t);
            }
            char *buf = malloc(len + 1);
            if (!buf) return srv_fail(e, 500, "server_error", NULL, "out of memory");
            size_t at = 0;
            for (size_t j = 0; j < json_array_size(content); j++) {
                json_t *t = json_object_get(json_array_get(content, j), "text");
                memcpy(buf + at, json_string_value(t), json_string_length(t));
                at += json_string_length(t);
            }
            text = json_stringn(buf, at);
            free(buf);
        } else {
            return bad(e, "messages", "'messages[%zu].content' must be a string or text parts", i);
        }
        json_t *mm = json_object();
        json_object_set_new(mm, "role", json_string(r));
        json_object_set_new(mm, "content", text ? text : json_string(""));
        json_array_append_new(out, mm);
    }
    return 0;
}

/* Fields that change what a correct answer is and that hsd does not implement: a 400 unless
 * they hold their neutral value. */
static int check_unsupported(json_t *root, srv_kind kind, srv_error *e) {
    json_t *v;
    if ((v = json_object_get(root, "n")) && !json_is_null(v) &&
        !(json_is_integer(v) && json_integer_value(v) == 1))
        return unsupported(e, "n", "only n = 1 (one choice per request)");
    if ((v = json_object_get(root, "best_of")) && !json_is_null(v) &&
        !(json_is_integer(v) && json_integer_value(v) == 1))
        return unsupported(e, "best_of", "only best_of = 1");
    if ((v = json_object_get(root, "logprobs")) && !json_is_null(v) && !json_is_false(v))
        return unsupported(e, "logprobs", "log probabilities are not returned");
    if ((v = json_object_get(root, "top_logprobs")) && !json_is_null(v))
        return unsupported(e, "top_logprobs", "log probabilities are not returned");
    if ((v = json_object_get(root, "echo")) && json_is_true(v))
        return unsupported(e, "echo", "the prompt is not echoed");
    if ((v = json_object_get(root, "suffix")) && !json_is_null(v) &&
        !(json_is_string(v) && json_string_length(v) == 0))
        return unsupported(e, "suffix", "insertion (fill-in-the-middle) is not implemented");
    if ((v = json_object_get(root, "logit_bias")) && !json_is_null(v) &&
        !(json_is_object(v) && json_object_size(v) == 0))
        return unsupported(e, "logit_bias", "logit biases would change the target's distribution");
    static const char *const penalties[] = {"presence_penalty", "frequency_penalty",
                                            "repeat_penalty"};
    for (int i = 0; i < 3; i++)
        if ((v = json_object_get(root, penalties[i])) && !json_is_null(v) &&
            !(json_is_number(v) && json_number_value(v) == (i == 2 ? 1.0 : 0.0)))
            return unsupported(e, penalties[i],
                               "penalties change the target's distribution, which speculative "
                               "decoding keeps exactly");
    if ((v = json_object_get(root, "min_p")) && !json_is_null(v) &&
        !(json_is_number(v) && json_number_value(v) == 0))
        return unsupported(e, "min_p", "use top_k / top_p");
    if (kind == SRV_CHAT) {
        if ((v = json_object_get(root, "tools")) && !json_is_null(v) &&
            !(json_is_array(v) && json_array_size(v) == 0))
            return unsupported(e, "tools", "tool calls are not parsed from the output");
        if ((v = json_object_get(root, "functions")) && !json_is_null(v))
            return unsupported(e, "functions", "function calls are not parsed from the output");
        if ((v = json_object_get(root, "tool_choice")) && !json_is_null(v) &&
            !(json_is_string(v) && !strcmp(json_string_value(v), "none")))
            return unsupported(e, "tool_choice", "tool calls are not parsed from the output");
        if ((v = json_object_get(root, "response_format")) && !json_is_null(v)) {
            json_t *t = json_object_get(v, "type");
            if (!json_is_object(v) || !json_is_string(t) || strcmp(json_string_value(t), "text"))
                return unsupported(e, "response_format", "only {\"type\": \"text\"}");
        }
        if ((v = json_object_get(root, "audio")) && !json_is_null(v))
            return unsupported(e, "audio", "text only");
        if ((v = json_object_get(root, "modalities")) && !json_is_null(v)) {
            if (!json_is_array(v) || json_array_size(v) != 1 ||
                !json_is_string(json_array_get(v, 0)) ||
                strcmp(json_string_value(json_array_get(v, 0)), "text"))
                return unsupported(e, "modalities", "text only");
        }
    }
    return 0;
}

int srv_parse_request(const char *body, size_t len, srv_kind kind, const srv_defaults *d,
                      srv_parsed *p, srv_error *e) {
    memset(p, 0, sizeof *p);
    memset(e, 0, sizeof *e);
    p->kind = kind;
    p->gen = hsd_gen_default_params();
    p->gen.algo = d->algo;
    p->gen.n_draft = d->k;
    p->gen.adaptive_k = d->adaptive_k;
    p->gen.cost_k = d->cost_k;
    if (d->k_max > 0) p->gen.k_max = d->k_max;
    p->gen.max_new_tokens = d->max_tokens;
    p->gen.n_ctx = d->n_ctx;
    json_error_t je;
    json_t *root = json_loadb(body ? body : "", body ? len : 0, JSON_REJECT_DUPLICATES, &je);
    int rc = -1;
    if (!root) {
        bad(e, NULL, "invalid JSON body: %s (line %d, column %d)", je.text, je.line, je.column);
        goto out;
    }
    if (!json_is_object(root)) {
        bad(e, NULL, "the body must be a JSON object");
        goto out;
    }
    if (check_unsupported(root, kind, e)) goto out;
    json_t *v;
    int64_t i64;
    double x;
    if ((v = json_object_get(root, "model")) && !json_is_null(v)) {
        if (text_field(v, "model", e)) goto out;
        if (!(p->model = strdup(json_string_value(v)))) goto oom;
    }
    if (kind == SRV_COMPLETION) {
        if (get_prompt(json_object_get(root, "prompt"), d, p, e)) goto out;
    } else {
        if (get_messages(json_object_get(root, "messages"), p, e)) goto out;
    }
    /* max_tokens; chat's newer max_completion_tokens; llama-server's n_predict */
    static const char *const budgets[] = {"max_tokens", "max_completion_tokens", "n_predict"};
    for (int i = 0; i < 3; i++)
        if ((v = json_object_get(root, budgets[i])) && !json_is_null(v)) {
            if (i == 2 && json_is_integer(v) && json_integer_value(v) == -1) continue;
            if (get_int(v, budgets[i], 0, 1 << 24, &i64, e)) goto out;
            p->gen.max_new_tokens = (int32_t)i64;
        }
    if ((v = json_object_get(root, "temperature")) && !json_is_null(v)) {
        if (get_num(v, "temperature", 0, 100, &x, e)) goto out;
        p->gen.temp = (float)x;
    }
    if ((v = json_object_get(root, "top_p")) && !json_is_null(v)) {
        if (get_num(v, "top_p", 0, 1, &x, e)) goto out;
        if (x <= 0) {
            bad(e, "top_p", "'top_p' must be above 0");
            goto out;
        }
        p->gen.top_p = (float)x;
    }
    if ((v = json_object_get(root, "top_k")) && !json_is_null(v)) {
        if (get_int(v, "top_k", 0, 1 << 24, &i64, e)) goto out;
        p->gen.top_k = (int32_t)i64;
    }
    if ((v = json_object_get(root, "seed")) && !json_is_null(v)) {
        if (get_int(v, "seed", INT64_MIN / 2, INT64_MAX / 2, &i64, e)) goto out;
        p->gen.seed = (uint64_t)i64;
        p->seed_given = true;
    }
    if ((v = json_object_get(root, "stop")) && get_stop(v, p, e)) goto out;
    if ((v = json_object_get(root, "ignore_eos")) && !json_is_null(v)) { /* llama-server's */
        bool ig = false;
        if (get_bool(v, "ignore_eos", &ig, e)) goto out;
        p->gen.stop_at_eos = !ig;
    }
    if ((v = json_object_get(root, "stream")) && !json_is_null(v) &&
        get_bool(v, "stream", &p->stream, e))
        goto out;
    if ((v = json_object_get(root, "stream_options")) && !json_is_null(v)) {
        if (!json_is_object(v)) {
            bad(e, "stream_options", "'stream_options' must be an object");
            goto out;
        }
        if (!p->stream) {
            bad(e, "stream_options", "'stream_options' is only allowed with \"stream\": true");
            goto out;
        }
        json_t *u = json_object_get(v, "include_usage");
        if (u && !json_is_null(u) && get_bool(u, "stream_options.include_usage", &p->include_usage, e))
            goto out;
    }
    if ((v = json_object_get(root, "hsd")) && !json_is_null(v) && get_hsd(v, d, p, e)) goto out;
    rc = 0;
    goto out;
oom:
    srv_fail(e, 500, "server_error", NULL, "out of memory");
out:
    json_decref(root);
    if (rc) srv_parsed_free(p);
    return rc;
}

/* ---- /tokenize, /detokenize ---- */

static json_t *load_object(const char *body, size_t len, srv_error *e) {
    json_error_t je;
    json_t *root = json_loadb(body ? body : "", body ? len : 0, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        bad(e, NULL, "invalid JSON body: %s (line %d, column %d)", je.text, je.line, je.column);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        bad(e, NULL, "the body must be a JSON object");
        return NULL;
    }
    return root;
}

json_t *srv_tokenize(const hsd_tokenizer *tok, const char *body, size_t len, srv_error *e) {
    json_t *root = load_object(body, len, e), *out = NULL;
    if (!root) return NULL;
    json_t *c = json_object_get(root, "content"), *v;
    bool add_special = false, pieces = false;
    int32_t *ids = NULL;
    size_t n = 0;
    if (!c || text_field(c, "content", e)) {
        if (!c) bad(e, "content", "'content' is required");
        goto done;
    }
    if ((v = json_object_get(root, "add_special")) && get_bool(v, "add_special", &add_special, e))
        goto done;
    if ((v = json_object_get(root, "with_pieces")) && get_bool(v, "with_pieces", &pieces, e))
        goto done;
    if (hsd_tokenizer_encode_alloc(tok, json_string_value(c), json_string_length(c), add_special,
                                   &ids, &n)) {
        bad(e, "content", "cannot tokenize: %s", hsd_last_error());
        goto done;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        if (!pieces) {
            json_array_append_new(arr, json_integer(ids[i]));
            continue;
        }
        /* the token's own surface bytes ("▁Once" -> " Once"), as llama-server's piece */
        size_t tl = 0;
        const uint8_t *t = hsd_tokenizer_token_bytes(tok, ids[i], &tl);
        json_t *o = json_object();
        json_object_set_new(o, "id", json_integer(ids[i]));
        json_t *s = t ? json_stringn((const char *)t, tl) : NULL;
        if (!s && t) { /* a byte token that is not UTF-8 alone: its bytes as numbers */
            s = json_array();
            for (size_t b = 0; b < tl; b++) json_array_append_new(s, json_integer(t[b]));
        }
        json_object_set_new(o, "piece", s ? s : json_string(""));
        json_array_append_new(arr, o);
    }
    out = json_object();
    json_object_set_new(out, "tokens", arr);
done:
    hsd_free(ids);
    json_decref(root);
    return out;
}

json_t *srv_detokenize(const hsd_tokenizer *tok, const char *body, size_t len, srv_error *e) {
    json_t *root = load_object(body, len, e), *out = NULL;
    if (!root) return NULL;
    json_t *t = json_object_get(root, "tokens");
    int32_t *ids = NULL;
    char *text = NULL;
    size_t tl = 0;
    if (!json_is_array(t)) {
        bad(e, "tokens", "'tokens' must be an array of token ids");
        goto done;
    }
    size_t n = json_array_size(t);
    ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) {
        srv_fail(e, 500, "server_error", NULL, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_array_get(t, i);
        int32_t vs = hsd_tokenizer_vocab_size(tok);
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) >= vs) {
            bad(e, "tokens", "'tokens[%zu]' is not a token id (vocabulary %d)", i, (int)vs);
            goto done;
        }
        ids[i] = (int32_t)json_integer_value(x);
    }
    if (hsd_tokenizer_decode_alloc(tok, ids, n, false, &text, &tl)) {
        bad(e, "tokens", "cannot decode: %s", hsd_last_error());
        goto done;
    }
    out = json_object();
    json_t *s = json_stringn(text, tl);
    json_object_set_new(out, "content", s ? s : json_string(""));
done:
    free(ids);
    hsd_free(text);
    json_decref(root);
    return out;
}

/* ---- stop strings ---- */

size_t srv_stop_visible(const char *text, size_t len, char *const *stops, int32_t n_stop,
                        bool final, bool *hit) {
    size_t end = len;
    *hit = false;
    for (int32_t i = 0; i < n_stop; i++) {
        size_t sl = strlen(stops[i]);
        if (!sl || sl > len) continue;
        const char *at = memmem(text, len, stops[i], sl);
        if (at && (size_t)(at - text) < end) end = (size_t)(at - text), *hit = true;
    }
    if (*hit || final) return end;
    /* hold back a tail that is a proper prefix of a stop string */
    size_t hold = 0;
    for (int32_t i = 0; i < n_stop; i++) {
        size_t sl = strlen(stops[i]);
        if (!sl) continue;
        for (size_t k = sl - 1; k > hold && k >= 1; k--)
            if (k <= len && !memcmp(text + len - k, stops[i], k)) {
                hold = k;
                break;
            }
    }
    return len - hold;
}
