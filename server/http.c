/* Routes, bodies, auth, CORS and SSE streams over libmicrohttpd (thread per connection).
 * A streaming response's content reader blocks on the scheduler's condition variable until
 * its request has new text (never returns 0, which would spin the daemon), and watches the
 * socket while it waits: a client that leaves is cancelled within one round. */
#ifdef HSD_HAVE_MICROHTTPD
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "server/http.h"

typedef struct conn {
    srv_server *sv;
    atomic_int refs; /* the connection, and a streaming response */
    char *body;
    size_t len, cap;
    bool too_big;
    srv_req *r;
    int fd;
    /* streaming */
    bool role_sent, done_sent, counted_stream;
    size_t sent; /* visible text bytes sent */
    char *pend;
    size_t pend_len, pend_off;
} conn;

static void conn_unref(conn *k) {
    if (atomic_fetch_sub(&k->refs, 1) != 1) return;
    if (k->r) {
        srv_sched_cancel(&k->sv->sched, k->r); /* a no-op once it is done */
        srv_req_release(&k->sv->sched, k->r);
    }
    if (k->counted_stream) atomic_fetch_sub(&k->sv->streams, 1);
    free(k->body);
    free(k->pend);
    free(k);
}

/* ---- responses ---- */

static void add_common(srv_server *sv, struct MHD_Response *resp, const char *ctype) {
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (sv->cors) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", sv->cors);
        MHD_add_response_header(resp, "Vary", "Origin");
    }
}

static enum MHD_Result reply(struct MHD_Connection *c, srv_server *sv, int status,
                             const char *ctype, char *body, size_t len) {
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, body ? body : (char *)"", body ? MHD_RESPMEM_MUST_FREE
                                                                           : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    add_common(sv, resp, ctype);
    if (status == 503) MHD_add_response_header(resp, "Retry-After", "1");
    if (status == 401) MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, resp);
    MHD_destroy_response(resp);
    srv_metrics_http(&sv->sched, status);
    return ret;
}

static enum MHD_Result reply_json(struct MHD_Connection *c, srv_server *sv, int status,
                                  json_t *j) {
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s) return reply(c, sv, 500, "application/json", NULL, 0);
    return reply(c, sv, status, "application/json", s, strlen(s));
}

static enum MHD_Result reply_error(struct MHD_Connection *c, srv_server *sv, const srv_error *e) {
    int status = e->status >= 400 && e->status < 600 ? e->status : 500;
    return reply_json(c, sv, status, srv_error_json(e));
}

static enum MHD_Result fail(struct MHD_Connection *c, srv_server *sv, int status, const char *type,
                            const char *fmt, const char *arg) {
    srv_error e;
    srv_fail(&e, status, type, NULL, fmt, arg);
    return reply_error(c, sv, &e);
}

/* A JSON string of text that should be UTF-8; bytes that are not (never expected: pieces
 * end on character boundaries) become '?', so a chunk is never lost. */
static json_t *jstr(const char *s, size_t n) {
    json_t *j = json_stringn(s, n);
    if (j) return j;
    char *t = malloc(n + 1);
    if (!t) return json_string("");
    for (size_t i = 0; i < n; i++) t[i] = (unsigned char)s[i] < 0x80 && s[i] ? s[i] : '?';
    j = json_stringn(t, n);
    free(t);
    return j ? j : json_string("");
}

/* ---- the generation responses ---- */

static const char *finish_reason(const srv_req *r, bool hit) {
    if (hit || r->stop == HSD_STOP_EOS || r->stop == HSD_STOP_STRING) return "stop";
    return "length";
}

static json_t *usage_json(const srv_req *r) {
    json_t *u = json_object();
    json_object_set_new(u, "prompt_tokens", json_integer(r->n_prompt));
    json_object_set_new(u, "completion_tokens", json_integer(r->n_ids));
    json_object_set_new(u, "total_tokens", json_integer(r->n_prompt + r->n_ids));
    return u;
}

/* llama-server's timings, and hsd's own figures */
static void add_stats(json_t *o, const srv_req *r) {
    double pm = r->ttft_ms, gm = r->total_ms - r->ttft_ms;
    if (gm < 0) gm = 0;
    json_t *t = json_object();
    json_object_set_new(t, "prompt_n", json_integer(r->n_prompt));
    json_object_set_new(t, "prompt_ms", json_real(pm));
    json_object_set_new(t, "prompt_per_token_ms", json_real(r->n_prompt ? pm / r->n_prompt : 0));
    json_object_set_new(t, "prompt_per_second", json_real(pm > 0 ? 1e3 * r->n_prompt / pm : 0));
    int32_t pn = r->n_ids > 1 ? r->n_ids - 1 : 0; /* tokens after the first */
    json_object_set_new(t, "predicted_n", json_integer(r->n_ids));
    json_object_set_new(t, "predicted_ms", json_real(gm));
    json_object_set_new(t, "predicted_per_token_ms", json_real(pn ? gm / pn : 0));
    json_object_set_new(t, "predicted_per_second", json_real(gm > 0 ? 1e3 * pn / gm : 0));
    json_object_set_new(t, "draft_n", json_integer(r->drafted));
    json_object_set_new(t, "draft_n_accepted", json_integer(r->accepted));
    json_object_set_new(o, "timings", t);
    json_t *h = json_object();
    json_object_set_new(h, "algo", json_string(hsd_algo_name(r->algo)));
    json_object_set_new(h, "rounds", json_integer(r->rounds));
    json_object_set_new(h, "drafted", json_integer(r->drafted));
    json_object_set_new(h, "accepted", json_integer(r->accepted));
    json_object_set_new(h, "acceptance_rate",
                        json_real(r->drafted ? (double)r->accepted / r->drafted : 0));
    json_object_set_new(h, "queue_ms", json_real(r->queue_ms));
    json_object_set_new(h, "stop_reason", json_string(hsd_stop_reason_name(r->stop)));
    json_object_set_new(o, "hsd", h);
}

static json_t *envelope(const srv_server *sv, const srv_req *r, const char *object) {
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(r->id));
    json_object_set_new(o, "object", json_string(object));
    json_object_set_new(o, "created", json_integer(r->created));
    json_object_set_new(o, "model", json_string(r->in.model ? r->in.model : sv->model_name));
    json_object_set_new(o, "system_fingerprint", json_string("hsd-" HSD_VERSION_STRING));
    return o;
}

/* One choice: text (or delta/message), finish reason (NULL: null). */
static json_t *choice(const srv_req *r, bool stream, json_t *text, const char *finish) {
    json_t *ch = json_object();
    json_object_set_new(ch, "index", json_integer(0));
    if (r->in.kind == SRV_COMPLETION) {
        json_object_set_new(ch, "text", text ? text : json_string(""));
    } else {
        json_t *m = json_object();
        if (!stream) json_object_set_new(m, "role", json_string("assistant"));
        if (text) json_object_set_new(m, "content", text);
        json_object_set_new(ch, stream ? "delta" : "message", m);
    }
    json_object_set_new(ch, "logprobs", json_null());
    json_object_set_new(ch, "finish_reason", finish ? json_string(finish) : json_null());
    return ch;
}

static json_t *full_response(const srv_server *sv, const srv_req *r) {
    bool hit;
    size_t end = srv_stop_visible(r->text ? r->text : "", r->len, r->in.stops, r->in.n_stop, true,
                                  &hit);
    json_t *o = envelope(sv, r, r->in.kind == SRV_COMPLETION ? "text_completion" : "chat.completion");
    json_t *chs = json_array();
    json_array_append_new(chs, choice(r, false, jstr(r->text ? r->text : "", end),
                                      finish_reason(r, hit)));
    json_object_set_new(o, "choices", chs);
    json_object_set_new(o, "usage", usage_json(r));
    add_stats(o, r);
    return o;
}

/* ---- waiting on the scheduler ---- */

static bool client_gone(int fd) {
    if (fd < 0) return false;
    struct pollfd p = {fd, POLLIN | POLLRDHUP, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
    char ch;
    return (p.revents & POLLIN) && recv(fd, &ch, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* Waits (mutex held) up to 50 ms for the scheduler's next broadcast. */
static void wait_out(srv_sched *s) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&s->cv_out, &s->mu, &ts);
}

/* ---- SSE ---- */

static void pend_append(conn *k, const char *s, size_t n) {
    char *p = realloc(k->pend, k->pend_len + n + 1);
    if (!p) return;
    k->pend = p;
    memcpy(k->pend + k->pend_len, s, n);
    k->pend_len += n;
}

static void pend_event(conn *k, json_t *j) {
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!s) return;
    pend_append(k, "data: ", 6);
    pend_append(k, s, strlen(s));
    pend_append(k, "\n\n", 2);
    free(s);
}

static json_t *chunk(const conn *k, json_t *text, const char *finish) {
    const srv_req *r = k->r;
    json_t *o = envelope(k->sv, r, r->in.kind == SRV_COMPLETION ? "text_completion"
                                                                : "chat.completion.chunk");
    json_t *chs = json_array();
    json_array_append_new(chs, choice(r, true, text, finish));
    json_object_set_new(o, "choices", chs);
    if (r->in.include_usage) json_object_set_new(o, "usage", json_null());
    return o;
}

/* The next events of the stream into k->pend; -1 when the client is gone. */
static int next_events(conn *k) {
    srv_sched *s = &k->sv->sched;
    srv_req *r = k->r;
    k->pend_len = k->pend_off = 0;
    if (r->in.kind == SRV_CHAT && !k->role_sent) {
        k->role_sent = true;
        json_t *o = chunk(k, json_string(""), NULL);
        json_t *d = json_object_get(json_array_get(json_object_get(o, "choices"), 0), "delta");
        json_object_set_new(d, "role", json_string("assistant"));
        pend_event(k, o);
        return 0;
    }
    pthread_mutex_lock(&s->mu);
    for (;;) {
        bool done = r->state == RQ_DONE, hit;
        size_t end = srv_stop_visible(r->text ? r->text : "", r->len, r->in.stops, r->in.n_stop,
                                      done && !r->failed, &hit);
        if (r->failed && end > r->len) end = r->len;
        if (end > k->sent) {
            json_t *t = jstr(r->text + k->sent, end - k->sent);
            k->sent = end;
            pthread_mutex_unlock(&s->mu);
            pend_event(k, chunk(k, t, NULL));
            return 0;
        }
        if (done) {
            if (r->failed) {
                pend_event(k, srv_error_json(&r->err));
            } else {
                json_t *o = chunk(k, r->in.kind == SRV_COMPLETION ? json_string("") : NULL,
                                  finish_reason(r, hit));
                add_stats(o, r);
                pend_event(k, o);
                if (r->in.include_usage) {
                    json_t *u = envelope(k->sv, r, r->in.kind == SRV_COMPLETION
                                                       ? "text_completion"
                                                       : "chat.completion.chunk");
                    json_object_set_new(u, "choices", json_array());
                    json_object_set_new(u, "usage", usage_json(r));
                    pend_event(k, u);
                }
            }
            pthread_mutex_unlock(&s->mu);
            pend_append(k, "data: [DONE]\n\n", 14);
            k->done_sent = true;
            return 0;
        }
        wait_out(s);
        if (r->state != RQ_DONE && client_gone(k->fd)) {
            r->cancel = true;
            pthread_cond_signal(&s->cv_work);
            pthread_mutex_unlock(&s->mu);
            return -1;
        }
    }
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    conn *k = cls;
    for (;;) {
        if (k->pend_off < k->pend_len) {
            size_t n = k->pend_len - k->pend_off;
            if (n > max) n = max;
            memcpy(buf, k->pend + k->pend_off, n);
            k->pend_off += n;
            return (ssize_t)n;
        }
        if (k->done_sent) {
            if (k->counted_stream) atomic_fetch_sub(&k->sv->streams, 1), k->counted_stream = false;
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
        if (next_events(k)) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
}

static void reader_free(void *cls) { conn_unref(cls); }

/* ---- generation requests ---- */

static enum MHD_Result generate(struct MHD_Connection *c, conn *k, srv_kind kind) {
    srv_server *sv = k->sv;
    srv_error e;
    srv_req *r = srv_req_new();
    if (!r) return fail(c, sv, 500, "server_error", "%s", "out of memory");
    if (srv_parse_request(k->body, k->len, kind, &sv->def, &r->in, &e)) {
        srv_req_release(&sv->sched, r);
        return reply_error(c, sv, &e);
    }
    if (kind == SRV_CHAT) {
        if (srv_chat_render(sv->chat, r->in.messages, &r->prompt, &r->prompt_len, &e)) {
            srv_req_release(&sv->sched, r);
            return reply_error(c, sv, &e);
        }
        if (srv_chat_has_template(sv->chat)) r->in.gen.add_bos = false; /* as generate --chat */
    } else if (!r->in.has_ids) {
        r->prompt = r->in.prompt; /* moved */
        r->prompt_len = r->in.prompt_len;
        r->in.prompt = NULL;
    }
    /* sampling without a seed: a fresh one per request, as llama-server's seed -1 */
    if (!r->in.seed_given)
        r->in.gen.seed = (uint64_t)time(NULL) * 2654435761u + atomic_fetch_add(&sv->seed_counter, 1);
    long n = atomic_fetch_add(&sv->next_id, 1);
    snprintf(r->id, sizeof r->id, "%s-%ld", kind == SRV_CHAT ? "chatcmpl" : "cmpl", n);
    r->created = (int64_t)time(NULL);
    r->t_arrive = srv_now_ms();
    if (srv_sched_submit(&sv->sched, r, &e)) {
        srv_req_release(&sv->sched, r);
        return reply_error(c, sv, &e);
    }
    k->r = r; /* the connection's reference from now on */
    srv_sched *s = &sv->sched;
    /* wait for the end (non-streaming) or the admission (streaming: a refused prompt still
     * gets a plain error response) */
    pthread_mutex_lock(&s->mu);
    while (r->state != RQ_DONE && (!r->in.stream || r->state == RQ_QUEUED)) {
        wait_out(s);
        if (r->state != RQ_DONE && client_gone(k->fd)) {
            r->cancel = true;
            pthread_cond_signal(&s->cv_work);
            pthread_mutex_unlock(&s->mu);
            return MHD_NO; /* closes the connection; the scheduler frees the slot */
        }
    }
    bool done = r->state == RQ_DONE, failed = r->failed;
    srv_error err = r->err;
    pthread_mutex_unlock(&s->mu);
    if (done && failed && (!r->in.stream || r->len == 0)) return reply_error(c, sv, &err);
    if (!r->in.stream) return reply_json(c, sv, 200, full_response(sv, r));
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, reader, k, reader_free);
    if (!resp) return MHD_NO;
    atomic_fetch_add(&k->refs, 1);
    k->counted_stream = true;
    atomic_fetch_add(&sv->streams, 1);
    add_common(sv, resp, "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    enum MHD_Result ret = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    srv_metrics_http(&sv->sched, 200);
    return ret;
}

/* ---- other endpoints ---- */

static enum MHD_Result models(struct MHD_Connection *c, srv_server *sv) {
    json_t *m = json_object();
    json_object_set_new(m, "id", json_string(sv->model_name));
    json_object_set_new(m, "object", json_string("model"));
    json_object_set_new(m, "created", json_integer(sv->created));
    json_object_set_new(m, "owned_by", json_string("hsd"));
    json_t *meta = json_object();
    json_object_set_new(meta, "target", json_string(sv->target_desc));
    json_object_set_new(meta, "draft", json_string(sv->draft_desc));
    json_object_set_new(meta, "algo", json_string(hsd_algo_name(sv->def.algo)));
    json_object_set_new(meta, "n_ctx", json_integer(sv->n_ctx));
    json_object_set_new(meta, "n_vocab", json_integer(sv->def.vocab));
    json_object_set_new(meta, "parallel", json_integer(sv->sched.n_slots));
    json_object_set_new(meta, "chat_template", json_string(srv_chat_desc(sv->chat)));
    json_object_set_new(m, "meta", meta);
    json_t *data = json_array();
    json_array_append_new(data, m);
    json_t *o = json_object();
    json_object_set_new(o, "object", json_string("list"));
    json_object_set_new(o, "data", data);
    return reply_json(c, sv, 200, o);
}

static bool authorized(struct MHD_Connection *c, const srv_server *sv) {
    if (!sv->api_key) return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncmp(h, "Bearer ", 7)) return false;
    /* compared in full whatever the first difference, so the time does not tell it */
    const char *a = h + 7, *b = sv->api_key;
    size_t la = strlen(a), lb = strlen(b);
    unsigned diff = la != lb;
    for (size_t i = 0; i < la; i++) diff |= (unsigned)(a[i] ^ b[i % (lb ? lb : 1)]);
    return diff == 0;
}

static bool is(const char *url, const char *a, const char *b) {
    return !strcmp(url, a) || (b && !strcmp(url, b));
}

static enum MHD_Result route(struct MHD_Connection *c, conn *k, const char *url,
                             const char *method) {
    srv_server *sv = k->sv;
    bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    if (is(url, "/health", "/v1/health")) {
        if (!get) goto method;
        if (!atomic_load(&sv->ready) || sv->sched.shutting_down)
            return fail(c, sv, 503, "unavailable_error", "%s",
                        sv->sched.shutting_down ? "shutting down" : "Loading model");
        json_t *o = json_object();
        json_object_set_new(o, "status", json_string("ok"));
        return reply_json(c, sv, 200, o);
    }
    if (!authorized(c, sv)) return fail(c, sv, 401, "authentication_error", "%s", "Invalid API Key");
    bool known = is(url, "/v1/completions", "/completions") ||
                 is(url, "/v1/chat/completions", "/chat/completions") ||
                 is(url, "/v1/models", "/models") || is(url, "/metrics", NULL) ||
                 is(url, "/tokenize", NULL) || is(url, "/detokenize", NULL);
    if (!known) return fail(c, sv, 404, "not_found_error", "no endpoint %s", url);
    if (!atomic_load(&sv->ready))
        return fail(c, sv, 503, "unavailable_error", "%s", "Loading model");
    if (is(url, "/metrics", NULL)) {
        if (!get) goto method;
        char *t = srv_metrics_text(&sv->sched);
        return reply(c, sv, 200, "text/plain; version=0.0.4", t, t ? strlen(t) : 0);
    }
    if (is(url, "/v1/models", "/models")) {
        if (!get) goto method;
        return models(c, sv);
    }
    if (!post) goto method;
    if (k->too_big) {
        srv_error e;
        srv_fail(&e, 413, "invalid_request_error", NULL,
                 "the request body is larger than the server's limit of %zu bytes (--max-body)",
                 sv->max_body);
        return reply_error(c, sv, &e);
    }
    if (is(url, "/tokenize", NULL) || is(url, "/detokenize", NULL)) {
        srv_error e;
        json_t *o = url[1] == 't' ? srv_tokenize(sv->tt, k->body, k->len, &e)
                                  : srv_detokenize(sv->tt, k->body, k->len, &e);
        return o ? reply_json(c, sv, 200, o) : reply_error(c, sv, &e);
    }
    return generate(c, k, is(url, "/v1/completions", "/completions") ? SRV_COMPLETION : SRV_CHAT);
method:
    return fail(c, sv, 405, "invalid_request_error", "method %s is not allowed here", method);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls) {
    (void)version;
    srv_server *sv = cls;
    conn *k = *con_cls;
    if (!k) {
        k = calloc(1, sizeof *k);
        if (!k) return MHD_NO;
        k->sv = sv;
        atomic_init(&k->refs, 1);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        k->fd = ci ? ci->connect_fd : -1;
        *con_cls = k;
        /* a declared body over the limit is refused before it is read */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > sv->max_body) k->too_big = true;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!k->too_big && k->len + *upload_size > sv->max_body) k->too_big = true;
        if (!k->too_big) {
            if (k->len + *upload_size + 1 > k->cap) {
                size_t cap = k->cap ? k->cap : 4096;
                while (cap < k->len + *upload_size + 1) cap *= 2;
                char *p = realloc(k->body, cap);
                if (!p) return MHD_NO;
                k->body = p;
                k->cap = cap;
            }
            memcpy(k->body + k->len, upload, *upload_size);
            k->len += *upload_size;
            k->body[k->len] = 0;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (!strcmp(method, "OPTIONS")) { /* CORS preflight */
        struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (!resp) return MHD_NO;
        add_common(sv, resp, "text/plain");
        if (sv->cors) {
            MHD_add_response_header(resp, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
            MHD_add_response_header(resp, "Access-Control-Allow-Headers",
                                    "Authorization, Content-Type");
            MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
        }
        enum MHD_Result ret = MHD_queue_response(c, 204, resp);
        MHD_destroy_response(resp);
        srv_metrics_http(&sv->sched, 204);
        return ret;
    }
    return route(c, k, url, method);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
    (void)cls, (void)c, (void)toe;
    conn *k = *con_cls;
    *con_cls = NULL;
    if (k) conn_unref(k);
}

int srv_http_start(srv_server *sv, const char *host, int port, char *msg, size_t cap) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    if (!strcmp(host, "localhost")) host = "127.0.0.1";
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
        snprintf(msg, cap, "--host %s is not an IPv4 address", host);
        return -1;
    }
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL,
        (uint16_t)port, NULL, NULL, handler, sv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a,
        MHD_OPTION_NOTIFY_COMPLETED, completed, sv, MHD_OPTION_CONNECTION_LIMIT, 512u,
        MHD_OPTION_CONNECTION_TIMEOUT, 120u, MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u,
        MHD_OPTION_END);
    if (!d) {
        snprintf(msg, cap, "cannot listen on %s:%d (in use, or not allowed)", host, port);
        return -1;
    }
    sv->daemon = d;
    return 0;
}

void srv_http_stop(srv_server *sv) {
    if (sv->daemon) MHD_stop_daemon(sv->daemon);
    sv->daemon = NULL;
}
#else
typedef int hsd_server_http_unused; /* built without libmicrohttpd: serve.c says so */
#endif
