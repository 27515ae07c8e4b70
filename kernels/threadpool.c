#include "kernels/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#define HSD_POOL_SPIN 20000

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
    atomic_uint gen;
    atomic_int pending;
    atomic_int quit;
    hsd_pool_fn fn;
    void *arg;
    int32_t nth;
};

static void *worker_main(void *p) {
    hsd_pool_worker *w = p;
    hsd_pool *pool = w->pool;
    unsigned seen = 0;
    for (;;) {
        int spins = 0;
        while (atomic_load_explicit(&pool->gen, memory_order_acquire) == seen && spins < HSD_POOL_SPIN)
            spins++;
        if (atomic_load_explicit(&pool->gen, memory_order_acquire) == seen) {
            pthread_mutex_lock(&pool->mu);
            while (atomic_load(&pool->gen) == seen && !atomic_load(&pool->quit))
                pthread_cond_wait(&pool->cv, &pool->mu);
            pthread_mutex_unlock(&pool->mu);
        }
        if (atomic_load(&pool->quit)) break;
        seen = atomic_load(&pool->gen);
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

int32_t hsd_pool_size(const hsd_pool *pool) { return pool ? pool->size : 1; }

void hsd_pool_run(hsd_pool *pool, hsd_pool_fn fn, void *arg, int32_t nth) {
    if (!pool || pool->size <= 1 || nth <= 1) {
        for (int32_t t = 0; t < (nth < 1 ? 1 : nth); t++) fn(arg, t, nth < 1 ? 1 : nth);
        return;
    }
    if (nth > pool->size) nth = pool->size;
    pool->fn = fn;
    pool->arg = arg;
    pool->nth = nth;
    atomic_store(&pool->pending, pool->size - 1);
    pthread_mutex_lock(&pool->mu);
    atomic_fetch_add_explicit(&pool->gen, 1, memory_order_release);
    pthread_cond_broadcast(&pool->cv);
    pthread_mutex_unlock(&pool->mu);
    fn(arg, 0, nth);
    int spins = 0;
    while (atomic_load_explicit(&pool->pending, memory_order_acquire) > 0)
        if (++spins > HSD_POOL_SPIN) sched_yield();
}
