/* An OLDER version of include/hsd.h's size-prefixed structs, as a caller compiled against it
 * sees them: the same leading fields, fewer trailing ones (the new fields a later header
 * appended are missing). The ABI test (test_abi_old_caller.c) passes these to the current
 * libhsd.so: the library must read only `size` bytes of each and default the rest.
 *
 * Keep the leading fields identical to include/hsd.h (test_abi_old_caller.c checks the
 * offsets with static asserts): an older header never reorders, it only lacks the tail. */
#ifndef HSD_TESTS_ABI_OLD_H
#define HSD_TESTS_ABI_OLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsd.h"

typedef struct old_model_params {
    size_t size;
    int32_t n_ctx;
    int32_t n_threads;
    bool use_mmap;
    hsd_backend backend;
    /* (no device_weights, n_seq, cpu_kernels, no_pack, no_blas) */
} old_model_params;

typedef struct old_gen_params {
    size_t size;
    hsd_algo algo;
    int32_t max_new_tokens;
    int32_t n_draft;
    /* (no adaptive_k .. user_data: sampling, stops, SLRS, context, streaming) */
} old_gen_params;

typedef struct old_gen_result {
    size_t size;
    int32_t *ids;
    int32_t n_ids;
    char *text;
    size_t text_len;
    /* (no algo, statistics, stop reason, ...) */
} old_gen_result;

typedef struct old_model_batch_seq {
    size_t size;
    int32_t seq;
    const int32_t *tokens;
    int32_t n;
    /* (no parents, rows, n_rows: a chain, and no logits) */
} old_model_batch_seq;

typedef struct old_model_iface {
    size_t size;
    void *ctx;
    int32_t (*vocab_size)(void *ctx);
    int32_t (*n_ctx)(void *ctx);
    hsd_status (*forward)(void *ctx, const int32_t *tokens, int32_t n, const int32_t *parents,
                          const int32_t *rows, int32_t n_rows, float *logits);
    int32_t (*kv_len)(void *ctx);
    hsd_status (*kv_truncate)(void *ctx, int32_t len);
    hsd_status (*kv_keep)(void *ctx, int32_t base, const int32_t *keep, int32_t n_keep);
    void (*free)(void *ctx);
    /* (no n_seq, seq_select, forward_batch: one slot) */
} old_model_iface;

typedef struct old_head_params {
    size_t size;
    hsd_head_kind kind;
    const int32_t *keep_ids;
    int32_t n_keep;
    /* (no top_k, rank, factors_path, calib_tokens, n_calib) */
} old_head_params;

/* params that an older header knew only by their size field: every value defaults */
typedef struct old_size_only {
    size_t size;
} old_size_only;

#endif
