/* The scheduler thread: continuous batching over hsd_batch (include/hsd.h). Between two
 * rounds it cancels the sequences whose clients left or whose time ran out, admits queued
 * requests into free slots, then runs one hsd_batch_step for everything active and hands
 * each request the text of its events. The engine is touched by this thread only; the
 * mutex guards the queue, the requests' output and the counters. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/clock.h"
#include "server/sched.h"

double srv_now_ms(void) { return cli_timer_ms(); }

srv_req *srv_req_new(void) {
    srv_req *r = calloc(1, sizeof *r);
    if (r) r->refs = 1, r->batch_id = -1;
    return r;
}

static void req_free(srv_req *r) {
    srv_parsed_free(&r->in);
    free(r->prompt);
    free(r->text);
    free(r);
}

void srv_req_release(srv_sched *s, srv_req *r) {
    if (!r) return;
    pthread_mutex_lock(&s->mu);
    bool last = --r->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (last) req_free(r);
}

void srv_metrics_http(srv_sched *s, int status) {
    static const int codes[SRV_N_CODES - 1] = {200, 204, 400, 401, 404, 405, 408, 413, 500, 501, 503};
    int i = 0;
    while (i < SRV_N_CODES - 1 && codes[i] != status) i++;
    pthread_mutex_lock(&s->mu);
    s->m.http[i]++;
    pthread_mutex_unlock(&s->mu);
}

/* Ends a request (under the mutex): done, with an error when err is given. */
static void finish(srv_sched *s, srv_req *r, const srv_error *err) {
    (void)s;
    r->state = RQ_DONE;
    if (err) {
        r->failed = true;
        r->err = *err;
    }
    r->refs--; /* the scheduler's reference; the connection still holds one */
    if (r->refs == 0) req_free(r); /* the connection is already gone: nobody reads it */
}

static void append_text(srv_req *r, const char *t, size_t n) {
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 256;
        while (cap < r->len + n + 1) cap *= 2;
        char *p = realloc(r->text, cap);
        if (!p) return; /* the result text is lost, the request still ends */
        r->text = p;
        r->cap = cap;
    }
    memcpy(r->text + r->len, t, n);
    r->len += n;
    r->text[r->len] = 0;
}

/* Between rounds (mutex held): cancellations, timeouts. */
static void retire(srv_sched *s, double now) {
    for (int32_t i = 0; i < s->n_slots; i++) {
        srv_req *r = s->run[i];
        if (!r) continue;
        bool late = s->timeout_ms > 0 && now - r->t_arrive > s->timeout_ms;
        if (!r->cancel && !late && !s->shutting_down) continue;
        hsd_batch_cancel(s->b, r->batch_id); /* frees the slot now */
        s->run[i] = NULL;
        s->n_running--;
        srv_error e;
        if (r->cancel) {
            s->m.cancelled++;
            srv_fail(&e, 499, "cancelled", NULL, "the client closed the connection");
        } else if (s->shutting_down) {
            s->m.failed++;
            srv_fail(&e, 503, "unavailable_error", NULL,
                     "the server is shutting down; the request was ended after %d tokens",
                     (int)r->n_gen);
        } else {
            s->m.timed_out++;
            srv_fail(&e, 408, "timeout_error", NULL,
                     "the request ran past the server's timeout of %.0f s (after %d tokens)",
                     s->timeout_ms / 1000, (int)r->n_gen);
        }
        finish(s, r, &e);
    }
    /* the queue: cancelled and late requests leave it */
    srv_req **pp = &s->qhead, *last = NULL;
    while (*pp) {
        srv_req *r = *pp;
        bool late = s->timeout_ms > 0 && now - r->t_arrive > s->timeout_ms;
        if (r->cancel || late || s->shutting_down) {
            *pp = r->next;
            s->n_queued--;
            srv_error e;
            if (r->cancel)
                s->m.cancelled++, srv_fail(&e, 499, "cancelled", NULL, "the client left");
            else if (late)
                s->m.timed_out++, srv_fail(&e, 408, "timeout_error", NULL,
                                           "the request waited past the server's timeout of "
                                           "%.0f s in the queue",
                                           s->timeout_ms / 1000);
            else
                s->m.failed++, srv_fail(&e, 503, "unavailable_error", NULL,
                                        "the server is shutting down");
            finish(s, r, &e);
            continue;
        }
        last = r;
        pp = &r->next;
    }
    s->qtail = last;
}

/* Moves queued requests into free slots (mutex held; unlocked around the engine call). */
static void admit(srv_sched *s) {
    while (s->qhead && s->n_running < s->n_slots) {
        srv_req *r = s->qhead;
        s->qhead = r->next;
        if (!s->qhead) s->qtail = NULL;
        s->n_queued--;
        r->next = NULL;
        int32_t slot = 0;
        while (s->run[slot]) slot++;
        s->run[slot] = r; /* reserved before unlocking */
        s->n_running++;
        pthread_mutex_unlock(&s->mu);
        int64_t id = -1;
        hsd_status st = r->in.has_ids
                            ? hsd_batch_add_ids(s->b, r->in.ids, r->in.n_ids, &r->in.gen, &id)
                            : hsd_batch_add(s->b, r->prompt, r->prompt_len, &r->in.gen, &id);
        char why[400];
        snprintf(why, sizeof why, "%s", st ? hsd_last_error() : "");
        pthread_mutex_lock(&s->mu);
        if (st) {
            s->run[slot] = NULL;
            s->n_running--;
            srv_error e;
            if (st == HSD_ERR_OUT_OF_RANGE || st == HSD_ERR_INVALID_UTF8 ||
                st == HSD_ERR_INVALID_ARG)
                srv_fail(&e, 400, "invalid_request_error", r->in.kind == SRV_CHAT ? "messages" : "prompt",
                         "%s", why);
            else
                srv_fail(&e, 500, "server_error", NULL, "%s", why);
            s->m.failed++;
            finish(s, r, &e);
            continue;
        }
        r->batch_id = id;
        r->state = RQ_RUNNING;
        r->queue_ms = srv_now_ms() - r->t_arrive;
    }
}

static srv_req *running(srv_sched *s, int64_t id, int32_t *slot) {
    for (int32_t i = 0; i < s->n_slots; i++)
        if (s->run[i] && s->run[i]->batch_id == id) return *slot = i, s->run[i];
    return NULL;
}

static void *loop(void *arg) {
    srv_sched *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->quit) {
        retire(s, srv_now_ms());
        if (s->shutting_down) {
            s->quit = true;
            break;
        }
        admit(s);
        if (s->n_running == 0) {
            /* idle: wake for work, and now and then for the queue's timeouts */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 200 * 1000000L;
            if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
            pthread_cond_timedwait(&s->cv_work, &s->mu, &ts);
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        const hsd_batch_event *ev = NULL;
        int32_t ne = 0;
        hsd_status st = hsd_batch_step(s->b, &ev, &ne);
        char why[400];
        snprintf(why, sizeof why, "%s", st ? hsd_last_error() : "");
        pthread_mutex_lock(&s->mu);
        s->m.steps++;
        if (st) { /* every sequence was dropped */
            srv_error e;
            srv_fail(&e, 500, "server_error", NULL, "generation failed: %s", why);
            for (int32_t i = 0; i < s->n_slots; i++)
                if (s->run[i]) {
                    srv_req *r = s->run[i];
                    s->run[i] = NULL;
                    s->n_running--;
                    s->m.failed++;
                    finish(s, r, &e);
                }
        }
        for (int32_t j = 0; j < ne; j++) {
            /* the library's event size, not ours (the array grows with the library) */
            const hsd_batch_event *evj = HSD_BATCH_EVENT_AT(ev, j);
            int32_t slot;
            srv_req *r = running(s, evj->id, &slot);
            if (!r) continue;
            append_text(r, evj->text, evj->len);
            r->n_gen += evj->n_ids;
            s->m.generated_tokens += evj->n_ids;
            if (!evj->done) continue;
            const hsd_gen_result *res = evj->result;
            r->has_result = true;
            r->stop = res->stop_reason;
            r->algo = res->algo;
            r->n_prompt = evj->n_prompt;
            r->n_ids = res->n_ids;
            r->rounds = res->n_rounds;
            r->drafted = res->n_drafted;
            r->accepted = res->n_accepted;
            r->ttft_ms = res->ttft_ms;
            r->total_ms = res->total_ms;
            s->m.finished++;
            s->m.prompt_tokens += evj->n_prompt;
            if ((unsigned)res->algo <= HSD_ALGO_AUTO) {
                s->m.by_algo[res->algo]++;
                s->m.rounds[res->algo] += res->n_rounds;
                s->m.drafted[res->algo] += res->n_drafted;
                s->m.accepted[res->algo] += res->n_accepted;
            }
            s->run[slot] = NULL;
            s->n_running--;
            finish(s, r, NULL);
        }
        pthread_cond_broadcast(&s->cv_out);
    }
    pthread_cond_broadcast(&s->cv_out);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int srv_sched_start(srv_sched *s, hsd_engine *e, int32_t n_slots, int32_t max_queue,
                    double timeout_s, char *msg, size_t cap) {
    memset(s, 0, sizeof *s);
    s->e = e;
    s->n_slots = n_slots;
    s->max_queue = max_queue;
    s->timeout_ms = timeout_s * 1000.0;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv_work, NULL);
    pthread_cond_init(&s->cv_out, NULL);
    hsd_batch_params bp = hsd_batch_default_params();
    bp.n_slots = n_slots;
    if (hsd_batch_init(e, &bp, &s->b)) return snprintf(msg, cap, "%s", hsd_last_error()), -1;
    s->run = calloc((size_t)n_slots, sizeof *s->run);
    if (!s->run) return snprintf(msg, cap, "out of memory"), -1;
    if (pthread_create(&s->th, NULL, loop, s))
        return snprintf(msg, cap, "cannot start the scheduler thread"), -1;
    s->started = true;
    return 0;
}

int srv_sched_submit(srv_sched *s, srv_req *r, srv_error *err) {
    pthread_mutex_lock(&s->mu);
    int rc = 0;
    if (s->shutting_down || s->quit) {
        rc = srv_fail(err, 503, "unavailable_error", NULL, "the server is shutting down");
    } else if (s->n_running >= s->n_slots && s->n_queued >= s->max_queue) {
        s->m.rejected++;
        rc = srv_fail(err, 503, "unavailable_error", NULL,
                      "the server is busy: %d requests running and %d queued (--parallel, "
                      "--queue); retry later",
                      (int)s->n_running, (int)s->n_queued);
    } else {
        r->refs++;
        r->state = RQ_QUEUED;
        r->next = NULL;
        if (s->qtail)
            s->qtail->next = r;
        else
            s->qhead = r;
        s->qtail = r;
        s->n_queued++;
        pthread_cond_signal(&s->cv_work);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void srv_sched_cancel(srv_sched *s, srv_req *r) {
    pthread_mutex_lock(&s->mu);
    if (r->state != RQ_DONE) {
        r->cancel = true;
        pthread_cond_signal(&s->cv_work);
    }
    pthread_mutex_unlock(&s->mu);
}

void srv_sched_stop(srv_sched *s) {
    if (!s->started) {
        hsd_batch_free(s->b);
        free(s->run);
        return;
    }
    pthread_mutex_lock(&s->mu);
    s->shutting_down = true;
    pthread_cond_signal(&s->cv_work);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    s->started = false;
    hsd_batch_free(s->b);
    s->b = NULL;
    free(s->run);
    s->run = NULL;
}

/* ---- /metrics ---- */

typedef struct mbuf {
    char *p;
    size_t n, cap;
} mbuf;

static void put(mbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(mbuf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if (b->p && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->n + (size_t)k + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return;
        b->p = p;
        b->cap = cap;
    }
}

static void counter(mbuf *b, const char *name, const char *help, long v) {
    put(b, "# HELP %s %s\n# TYPE %s counter\n%s %ld\n", name, help, name, name, v);
}

static void gauge(mbuf *b, const char *name, const char *help, long v) {
    put(b, "# HELP %s %s\n# TYPE %s gauge\n%s %ld\n", name, help, name, name, v);
}

char *srv_metrics_text(srv_sched *s) {
    static const int codes[SRV_N_CODES - 1] = {200, 204, 400, 401, 404, 405, 408, 413, 500, 501, 503};
    pthread_mutex_lock(&s->mu);
    srv_metrics m = s->m;
    long running = s->n_running, queued = s->n_queued, slots = s->n_slots;
    pthread_mutex_unlock(&s->mu);
    mbuf b = {0};
    put(&b, "# HELP hsd_http_responses_total HTTP responses by status code\n"
            "# TYPE hsd_http_responses_total counter\n");
    for (int i = 0; i < SRV_N_CODES; i++)
        if (i < SRV_N_CODES - 1)
            put(&b, "hsd_http_responses_total{code=\"%d\"} %ld\n", codes[i], m.http[i]);
        else
            put(&b, "hsd_http_responses_total{code=\"other\"} %ld\n", m.http[i]);
    counter(&b, "hsd_requests_finished_total", "generation requests that ran to their end",
            m.finished);
    counter(&b, "hsd_requests_cancelled_total",
            "generation requests whose client disconnected (sequence cancelled, slot freed)",
            m.cancelled);
    counter(&b, "hsd_requests_timed_out_total", "generation requests ended by the timeout",
            m.timed_out);
    counter(&b, "hsd_requests_rejected_total", "requests refused with 503 (queue full)",
            m.rejected);
    counter(&b, "hsd_requests_failed_total", "requests ended by an error after admission",
            m.failed);
    gauge(&b, "hsd_requests_running", "sequences in the running batch", running);
    gauge(&b, "hsd_requests_queued", "requests waiting for a slot", queued);
    gauge(&b, "hsd_slots_total", "sequence slots (--parallel)", slots);
    gauge(&b, "hsd_slots_busy", "slots in use", running);
    counter(&b, "hsd_steps_total", "batch rounds (one target forward each)", m.steps);
    counter(&b, "hsd_prompt_tokens_total", "target prompt tokens of finished requests",
            m.prompt_tokens);
    counter(&b, "hsd_generated_tokens_total", "target tokens generated", m.generated_tokens);
    static const char *const fam[4][2] = {
        {"hsd_spec_requests_total", "finished requests by algorithm"},
        {"hsd_spec_drafts_total", "rounds (draft-verify cycles) by algorithm"},
        {"hsd_spec_draft_tokens_total", "drafted tokens by algorithm"},
        {"hsd_spec_accepted_tokens_total", "accepted draft tokens by algorithm"}};
    const long *vals[4] = {m.by_algo, m.rounds, m.drafted, m.accepted};
    for (int f = 0; f < 4; f++) {
        put(&b, "# HELP %s %s\n# TYPE %s counter\n", fam[f][0], fam[f][1], fam[f][0]);
        for (int a = 0; a < HSD_ALGO_AUTO; a++)
            put(&b, "%s{algo=\"%s\"} %ld\n", fam[f][0], hsd_algo_name((hsd_algo)a), vals[f][a]);
    }
    return b.p;
}
