/* A tiny fixed-size thread pool for the forward pass: the caller thread is worker 0 and
 * n_threads-1 pthreads wait for work. Workers spin (~50 µs) on a generation counter before
 * sleeping, because one forward issues many short jobs back to back and a condition-variable
 * wake-up costs about as much as a small matmul. */
#ifndef HSD_KERNELS_THREADPOOL_H
#define HSD_KERNELS_THREADPOOL_H

#include <stdint.h>

typedef struct hsd_pool hsd_pool;
/* fn(arg, tid, nth) is called once for each tid in [0, nth). */
typedef void (*hsd_pool_fn)(void *arg, int32_t tid, int32_t nth);

/* NULL on failure. n_threads <= 1 gives a pool that runs everything on the caller. */
hsd_pool *hsd_pool_create(int32_t n_threads);
void hsd_pool_free(hsd_pool *pool);
int32_t hsd_pool_size(const hsd_pool *pool);
/* Runs the job on min(nth, size) threads and returns when all are done. */
void hsd_pool_run(hsd_pool *pool, hsd_pool_fn fn, void *arg, int32_t nth);

#endif
