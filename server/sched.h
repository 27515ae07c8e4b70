/* The scheduler: one thread owns the engine and its running batch (include/hsd.h); HTTP
 * threads submit requests and read their output under one mutex. Requests past the free
 * slots wait in a bounded FIFO queue; beyond it a request is refused (503). */
#ifndef HSD_SERVER_SCHED_H
#define HSD_SERVER_SCHED_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/server.h"

typedef enum srv_state { RQ_QUEUED = 0, RQ_RUNNING, RQ_DONE } srv_state;

typedef struct srv_req {
    /* set before submit, read-only afterwards */
    srv_parsed in;
    char *prompt; /* the prompt text (chat: rendered); NULL when in.has_ids */
    size_t prompt_len;
    char id[48];
    int64_t created;
    double t_arrive; /* ms, hsd_clock_ms */
    /* under the scheduler's mutex */
    srv_state state;
    int64_t batch_id;
    char *text; /* generated text so far (decoded, all of it) */
    size_t len, cap;
    int32_t n_gen;
    bool cancel;    /* the client is gone: the scheduler cancels it */
    bool failed;    /* ended by an error (err): timeout, shutdown, refused prompt, engine */
    srv_error err;
    bool has_result;
    hsd_stop_reason stop;
    hsd_algo algo;
    int32_t n_prompt, n_ids, rounds, drafted, accepted;
    double ttft_ms, total_ms, queue_ms;
    int refs;
    struct srv_req *next;
} srv_req;

#define SRV_N_CODES 12
typedef struct srv_metrics {
    long http[SRV_N_CODES]; /* responses by status, see srv_metrics_code */
    long finished, cancelled, timed_out, rejected, failed, steps;
    long prompt_tokens, generated_tokens;
    long by_algo[HSD_ALGO_AUTO + 1], rounds[HSD_ALGO_AUTO + 1], drafted[HSD_ALGO_AUTO + 1],
        accepted[HSD_ALGO_AUTO + 1];
} srv_metrics;

typedef struct srv_sched {
    hsd_engine *e;
    hsd_batch *b;
    int32_t n_slots, max_queue;
    double timeout_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv_work; /* the scheduler waits for work */
    pthread_cond_t cv_out;  /* connections wait for output */
    srv_req *qhead, *qtail;
    int32_t n_queued;
    srv_req **run; /* n_slots running requests (NULL: free) */
    int32_t n_running;
    bool quit, shutting_down;
    srv_metrics m;
    pthread_t th;
    bool started;
} srv_sched;

/* hsd_clock_ms-style monotonic milliseconds. */
double srv_now_ms(void);

int srv_sched_start(srv_sched *s, hsd_engine *e, int32_t n_slots, int32_t max_queue,
                    double timeout_s, char *msg, size_t cap);
/* Takes a reference for the scheduler. 0, or -1 with err (503 queue full / shutting down). */
int srv_sched_submit(srv_sched *s, srv_req *r, srv_error *err);
/* The client is gone: cancelled within one round (or dropped from the queue). */
void srv_sched_cancel(srv_sched *s, srv_req *r);
/* Drops one reference (the connection's or the scheduler's); frees at zero. */
void srv_req_release(srv_sched *s, srv_req *r);
srv_req *srv_req_new(void);
/* Ends every request with a final error (shutting down), stops the thread. */
void srv_sched_stop(srv_sched *s);
/* Counts an HTTP response. */
void srv_metrics_http(srv_sched *s, int status);
/* Prometheus text (malloc'd). */
char *srv_metrics_text(srv_sched *s);

#endif
