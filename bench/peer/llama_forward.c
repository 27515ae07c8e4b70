/* llama_forward: llama.cpp's cost of one forward over n new tokens after a cached prefix,
 * measured as `hsd bench forward` measures hsd's (cli/cmd_bench_forward.c): random tokens,
 * a P-token prefix decoded once, then for each n a warm-up decode, R timed decodes of the
 * same n tokens with logits for every row, the KV cache truncated back to the prefix after
 * each (llama_memory_seq_rm), median reported. R defaults to enough for ~1 s per n.
 *
 *   llama_forward MODEL.gguf [--n 1,2,4,8,16] [--prefix 32[,512,...]] [--reps R] [--threads 2]
 *                 [--kv f16|q8_0|q4_0] [--interleave] [--cpu-time]
 *
 * --kv q8_0 / q4_0: llama.cpp's Q8_0 / Q4_0 K and V caches (type_k = type_v; a quantised V
 * cache needs flash attention, which is then switched on; its Hadamard rotation of q, k and
 * v stays as it defaults, on); f16 (default) leaves its defaults.
 * --cpu-time: the timed decodes in process CPU time instead of wall time, as `hsd bench
 * forward --cpu-time` (with --threads 1 on a shared machine: llama.cpp's workers spin while
 * they wait for each other, so with more threads CPU time counts the waits).
 *
 * A --prefix list measures each depth in turn (increasing), the cache extended from one to
 * the next, as `hsd bench forward --prefix` does; a "prefix P" line heads each depth's rows.
 * --interleave (with a list) as `hsd bench forward --interleave`: each depth in its own
 * sequence (its own KV stream, kv_unified off, so a decode reads only its sequence's cells),
 * then rounds of one timed decode per depth in turn; per n each depth's median and the median
 * over rounds of its time / the first depth's, in hsd's columns.
 *
 * Output columns match hsd's: n, ms/forward, ms/token, forward(n)/forward(1).
 * Built by bench/peer/run.sh against llama.cpp v0.5.0 (scripts/install_llama_cpp.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "llama.h"
#include "peer_util.h"

static clockid_t clock_id = CLOCK_MONOTONIC;

static double now_ms(void) {
    return peer_ms(clock_id);
}

/* Decodes toks[0..n) at positions pos0.. into sequence seq, logits for every row if `all`. */
static int decode_seq(struct llama_context *ctx, struct llama_batch *b, const llama_token *toks,
                      int32_t n, int32_t pos0, int all, int seq) {
    b->n_tokens = n;
    for (int32_t i = 0; i < n; i++) {
        b->token[i] = toks[i];
        b->pos[i] = pos0 + i;
        b->n_seq_id[i] = 1;
        b->seq_id[i][0] = seq;
        b->logits[i] = (int8_t)(all || i == n - 1);
    }
    int rc = llama_decode(ctx, *b);
    llama_synchronize(ctx);
    return rc;
}
static int decode(struct llama_context *ctx, struct llama_batch *b, const llama_token *toks,
                  int32_t n, int32_t pos0, int all) {
    return decode_seq(ctx, b, toks, n, pos0, all, 0);
}

/* --interleave: depths p_list[0..p_n) in sequences 0..p_n-1, one timed decode per depth in
 * turn per round */
static int interleave(struct llama_context *ctx, struct llama_batch *b, const llama_token *toks,
                      const int32_t *p_list, int p_n, const int32_t *n_list, int n_n, int32_t reps) {
    llama_memory_t mem = llama_get_memory(ctx);
    for (int s = 0; s < p_n; s++)
        if (decode_seq(ctx, b, toks, p_list[s], 0, 0, s) != 0) return 1;
    printf("depths in their own sequences, interleaved\n");
    for (int k = 0; k < n_n; k++) {
        const int32_t n = n_list[k];
        double t = now_ms();
        for (int s = 0; s < p_n; s++) {
            if (decode_seq(ctx, b, toks + p_list[s], n, p_list[s], 1, s) != 0) return 1;
            llama_memory_seq_rm(mem, s, p_list[s], -1);
        }
        t = now_ms() - t;
        int R = reps > 0 ? reps : (int)(2000.0 / (t > 0.01 ? t : 0.01));
        if (R < 5) R = 5;
        if (R > 2000) R = 2000;
        double *ts = malloc((size_t)R * p_n * sizeof *ts), *col = malloc((size_t)R * sizeof *col);
        if (!ts || !col) return 1;
        for (int i = 0; i < R; i++)
            for (int s = 0; s < p_n; s++) {
                const double t0 = now_ms();
                const int rc = decode_seq(ctx, b, toks + p_list[s], n, p_list[s], 1, s);
                ts[(size_t)i * p_n + s] = now_ms() - t0;
                llama_memory_seq_rm(mem, s, p_list[s], -1);
                if (rc != 0) return 1;
            }
        printf("n %d: %d rounds, one forward per depth in turn\n%8s %12s %12s %12s\n", n, R, "depth",
               "ms/forward", "ms/token", "vs first");
        for (int s = 0; s < p_n; s++) {
            for (int i = 0; i < R; i++) col[i] = ts[(size_t)i * p_n + s];
            qsort(col, (size_t)R, sizeof *col, peer_cmp_double);
            const double med = col[R / 2];
            for (int i = 0; i < R; i++) col[i] = ts[(size_t)i * p_n + s] / ts[(size_t)i * p_n];
            qsort(col, (size_t)R, sizeof *col, peer_cmp_double);
            printf("%8d %12.4f %12.4f %11.3fx\n", p_list[s], med, med / n, col[R / 2]);
        }
        fflush(stdout);
        free(ts), free(col);
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *path = NULL, *ns = "1,2,4,8,16", *ps = "32", *kv = "f16";
    int32_t prefix = 32, reps = 0, threads = 2;
    int inter = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            path = a;
            continue;
        }
        if (!strcmp(a, "--cpu-time")) {
            clock_id = CLOCK_PROCESS_CPUTIME_ID;
            continue;
        }
        if (!strcmp(a, "--interleave")) {
            inter = 1;
            continue;
        }
        if (!v) break;
        i++;
        if (!strcmp(a, "--n"))
            ns = v;
        else if (!strcmp(a, "--prefix"))
            ps = v;
        else if (!strcmp(a, "--reps"))
            reps = atoi(v);
        else if (!strcmp(a, "--threads"))
            threads = atoi(v);
        else if (!strcmp(a, "--kv") && (!strcmp(v, "f16") || !strcmp(v, "q8_0") || !strcmp(v, "q4_0")))
            kv = v;
        else
            path = NULL, i = argc;
    }
    int32_t n_list[64], n_n = 0, max_n = 1;
    for (const char *p = ns; *p && n_n < 64;) {
        n_list[n_n] = atoi(p);
        if (n_list[n_n] < 1) break;
        if (n_list[n_n] > max_n) max_n = n_list[n_n];
        n_n++;
        p = strchr(p, ',');
        if (!p) break;
        p++;
    }
    int32_t p_list[16], p_n = 0;
    for (const char *p = ps; *p && p_n < 16;) {
        p_list[p_n] = atoi(p);
        if (p_list[p_n] < 1 || (p_n > 0 && p_list[p_n] <= p_list[p_n - 1])) {
            p_n = 0;
            break;
        }
        prefix = p_list[p_n++];
        p = strchr(p, ',');
        if (!p) break;
        p++;
    }
    if (!path || n_n == 0 || p_n == 0 || threads < 1 || (inter && p_n < 2)) {
        fprintf(stderr, "usage: llama_forward MODEL.gguf [--n 1,2,4,8,16] [--prefix 32[,P...]] [--reps R] "
                        "[--threads 2] [--kv f16|q8_0|q4_0] [--interleave] [--cpu-time]\n");
        return 2;
    }
    const char *libdir = getenv("LLAMA_LIB_DIR");
    llama_log_set(peer_quiet_log, NULL);
    if (libdir)
        ggml_backend_load_all_from_path(libdir);
    else
        ggml_backend_load_all();
    llama_backend_init();

    struct llama_model_params mp = llama_model_default_params();
    double tl = now_ms();
    struct llama_model *model = llama_model_load_from_file(path, mp);
    if (!model) {
        fprintf(stderr, "llama_forward: llama.cpp could not load %s\n", path);
        return 1;
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(prefix + max_n + 16);
    cp.n_batch = cp.n_ubatch = (uint32_t)(prefix > max_n ? prefix : max_n);
    cp.n_seq_max = 1;
    if (inter) { /* a stream per depth, each of the deepest's size (the context is split evenly) */
        cp.n_seq_max = (uint32_t)p_n;
        cp.kv_unified = false;
        cp.n_ctx = (uint32_t)p_n * (uint32_t)((prefix + max_n + 16 + 255) / 256 * 256);
    }
    cp.n_threads = cp.n_threads_batch = threads;
    cp.no_perf = true;
    if (strcmp(kv, "f16")) {
        cp.type_k = cp.type_v = !strcmp(kv, "q8_0") ? GGML_TYPE_Q8_0 : GGML_TYPE_Q4_0;
        cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_ENABLED;
    }
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "llama_forward: could not create a context\n");
        return 1;
    }
    fprintf(stderr, "llama.cpp system info: %s\n", llama_print_system_info());
    char desc[256];
    llama_model_desc(model, desc, sizeof desc);
    int32_t V = llama_vocab_n_tokens(llama_model_get_vocab(model));
    printf("model: %s (llama.cpp, loaded in %.0f ms, %.1f MB of weights)\nthreads %d, prefix %d "
           "tokens, logits for all n rows, %s KV cache\n",
           desc, now_ms() - tl, (double)llama_model_size(model) / 1e6, threads, prefix, kv);

    llama_token *toks = malloc((size_t)(prefix + max_n) * sizeof *toks);
    uint64_t s = 5;
    for (int32_t i = 0; i < prefix + max_n;
         i++) { /* random ids: the cost does not depend on them */
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        toks[i] = (llama_token)((s >> 33) % (uint64_t)V);
    }
    struct llama_batch b = llama_batch_init(prefix > max_n ? prefix : max_n, 0, 1);
    llama_memory_t mem = llama_get_memory(ctx);
    if (inter) {
        const int rc = interleave(ctx, &b, toks, p_list, p_n, n_list, n_n, reps);
        if (rc) fprintf(stderr, "llama_forward: a decode failed\n");
        llama_batch_free(b);
        free(toks);
        llama_free(ctx);
        llama_model_free(model);
        llama_backend_free();
        return rc;
    }
    for (int di = 0, have = 0; di < p_n; di++) {
        prefix = p_list[di];
        if (decode(ctx, &b, toks + have, prefix - have, have, 0) != 0) {
            fprintf(stderr, "llama_forward: prefix decode failed\n");
            return 1;
        }
        have = prefix;
        if (p_n > 1) printf("prefix %d\n", prefix);
        printf("%4s %12s %12s %10s\n", "n", "ms/forward", "ms/token", "vs n=1");
        double base = 0;
        for (int k = 0; k < n_n; k++) {
            int32_t n = n_list[k];
            double t = now_ms();
            if (decode(ctx, &b, toks + prefix, n, prefix, 1) != 0) {
                fprintf(stderr, "llama_forward: decode of %d tokens failed\n", n);
                return 1;
            }
            llama_memory_seq_rm(mem, 0, prefix, -1);
            t = now_ms() - t;
            int R = reps > 0 ? reps : (int)(1000.0 / (t > 0.01 ? t : 0.01));
            if (R < 3) R = 3;
            if (R > 2000) R = 2000;
            double *times = malloc((size_t)R * sizeof *times);
            for (int i = 0; i < R; i++) {
                double t0 = now_ms();
                decode(ctx, &b, toks + prefix, n, prefix, 1);
                times[i] = now_ms() - t0;
                llama_memory_seq_rm(mem, 0, prefix, -1);
            }
            qsort(times, (size_t)R, sizeof *times, peer_cmp_double);
            double med = times[R / 2];
            free(times);
            if (k == 0 || n == 1) base = med / n;
            printf("%4d %12.4f %12.4f %9.2fx\n", n, med, med / n, med / (base > 0 ? base : 1));
            fflush(stdout);
        }
    }
    llama_batch_free(b);
    free(toks);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
