/* The forward's thread pool (threadpool.h). One forward(1) of a 1B model hands out ~65 jobs
 * of ~0.5 ms back to back, so the hand-off must cost microseconds or less: a worker waits for
 * the next job by spinning on a generation counter (with a pause, so the sibling hardware
 * thread and the memory system keep their share), and only after HSD_POOL_SPIN_NS without
 * work does it sleep on the condition variable. The caller takes the mutex and signals only
 * when a worker has gone to sleep, so a hand-off to spinning workers is one atomic increment. */
#include "kernels/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

/* How long a worker spins for the next job before sleeping: longer than the gaps inside a
 * forward (norms, attention, RoPE between two products: tens of µs), short enough that an
 * idle pool (a drafter running alone, sampling) stops taking a core within 0.05 ms. */
#define HSD_POOL_SPIN_NS 50000
/* The caller waiting for the workers: spins this many rounds (a few µs, no pause: the
 * workers finish their last chunk within that), then yields the core each round, because
 * on a loaded machine the worker it waits for may be the one that needs it. */
#define HSD_POOL_WAIT_SPIN 20000

typedef struct hsd_pool_worker {
    hsd_pool *pool;
    int32_t tid;
    pthread_t thread;
} hsd_pool_worker;

struct hsd_pool {
    int32_t size;
    hsd_pool_worker *workers; /* size-1 of them */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_uint gen;     /* incremented once per job */
    atomic_int pending;  /* workers still running the current job */
    atomic_int sleepers; /* workers blocked (or about to block) on cv */
    atomic_int quit;
    hsd_pool_fn fn;
    void *arg;
    int32_t nth;
};

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Returns once gen differs from seen (or quit is set). */
static void wait_job(hsd_pool *pool, unsigned seen) {
    int64_t t0 = 0;
    for (uint32_t i = 1;; i++) {
        if (atomic_load_explicit(&pool->gen, memory_order_acquire) != seen) return;
        CPU_RELAX();
        if ((i & 255) == 0) { /* read the clock rarely: it costs more than a pause */
            int64_t t = now_ns();
            if (!t0)
                t0 = t;
            else if (t - t0 > HSD_POOL_SPIN_NS)
                break;
        }
    }
    /* Sleep. sleepers++ then reading gen (here) pairs with gen++ then reading sleepers (in
     * hsd_pool_run), both sequentially consistent: either the caller sees the sleeper and
     * signals under the mutex, or this thread sees the new generation and does not wait. */
    pthread_mutex_lock(&pool->mu);
    atomic_fetch_add(&pool->sleepers, 1);
    while (atomic_load(&pool->gen) == seen && !atomic_load(&pool->quit))
        pthread_cond_wait(&pool->cv, &pool->mu);
    atomic_fetch_sub(&pool->sleepers, 1);
    pthread_mutex_unlock(&pool->mu);
}

static void *worker_main(void *p) {
    hsd_pool_worker *w = p;
    hsd_pool *pool = w->pool;
    unsigned seen = 0;
    for (;;) {
        wait_job(pool, seen);
        if (atomic_load(&pool->quit)) break;
        seen = atomic_load_explicit(&pool->gen, memory_order_acquire);
        if (w->tid < pool->nth) pool->fn(pool->arg, w->tid, pool->nth);
        atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_release);
    }
    return NULL;
}

hsd_pool *hsd_pool_create(int32_t n_threads) {
    hsd_pool *pool = calloc(1, sizeof *pool);
    if (!pool) return NULL;
    pool->size = n_threads < 1 ? 1 : n_threads;
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->cv, NULL);
    if (pool->size > 1) {
        pool->workers = calloc((size_t)pool->size - 1, sizeof *pool->workers);
        if (!pool->workers) {
            hsd_pool_free(pool);
            return NULL;
        }
        for (int32_t i = 0; i < pool->size - 1; i++) {
            pool->workers[i].pool = pool;
            pool->workers[i].tid = i + 1;
            if (pthread_create(&pool->workers[i].thread, NULL, worker_main, &pool->workers[i])) {
                pool->size = i + 1; /* keep the ones that started */
                break;
            }
        }
    }
    return pool;
}

void hsd_pool_free(hsd_pool *pool) {
    if (!pool) return;
    if (pool->workers) {
        pthread_mutex_lock(&pool->mu);
        atomic_store(&pool->quit, 1);
        pthread_cond_broadcast(&pool->cv);
        pthread_mutex_unlock(&pool->mu);
        for (int32_t i = 0; i < pool->size - 1; i++) pthread_join(pool->workers[i].thread, NULL);
        free(pool->workers);
    }
    pthread_cond_destroy(&pool->cv);
    pthread_mutex_destroy(&pool->mu);
    free(pool);
}

int32_t hsd_pool_size(const hsd_pool *pool) {
    return pool ? pool->size : 1;
}

void hsd_pool_run(hsd_pool *pool, hsd_pool_fn fn, void *arg, int32_t nth) {
    if (!pool || pool->size <= 1 || nth <= 1) {
        for (int32_t t = 0; t < (nth < 1 ? 1 : nth); t++) fn(arg, t, nth < 1 ? 1 : nth);
        return;
    }
    if (nth > pool->size) nth = pool->size;
    pool->fn = fn;
    pool->arg = arg;
    pool->nth = nth;
    atomic_store_explicit(&pool->pending, pool->size - 1, memory_order_relaxed);
    atomic_fetch_add(&pool->gen, 1); /* seq_cst: publishes fn/arg/nth, orders the read below */
    if (atomic_load(&pool->sleepers) > 0) {
        pthread_mutex_lock(&pool->mu);
        pthread_cond_broadcast(&pool->cv);
        pthread_mutex_unlock(&pool->mu);
    }
    fn(arg, 0, nth);
    for (int spins = 0; atomic_load_explicit(&pool->pending, memory_order_acquire) > 0;)
        if (++spins > HSD_POOL_WAIT_SPIN) sched_yield();
}
