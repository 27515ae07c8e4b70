/* llama_prefill: llama.cpp's prefill of a P-token prompt from an empty cache, as a user's
 * first request sees it: one llama_decode call over the prompt (n_batch = P, n_ubatch 512,
 * llama.cpp's default micro-batch), logits for the last row only. Random ids: the cost does
 * not depend on them. Reports the median over R repetitions (the cache cleared between) in
 * ms and prompt tokens/s, to put beside `hsd generate --json -n 1`'s ttft_ms.
 *
 *   llama_prefill MODEL.gguf [--p 512,2048] [--reps 3] [--threads 2]
 *
 * Built by bench/prefill.sh against llama.cpp v0.5.0 (scripts/install_llama_cpp.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "llama.h"
#include "peer_util.h"

static double now_ms(void) {
    return peer_ms(CLOCK_MONOTONIC);
}

int main(int argc, char **argv) {
    const char *path = NULL, *ps = "512,2048";
    int reps = 3, threads = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            path = a;
            continue;
        }
        if (!v) break;
        i++;
        if (!strcmp(a, "--p"))
            ps = v;
        else if (!strcmp(a, "--reps"))
            reps = atoi(v);
        else if (!strcmp(a, "--threads"))
            threads = atoi(v);
        else
            path = NULL, i = argc;
    }
    int32_t p_list[16], n_p = 0, max_p = 1;
    for (const char *p = ps; *p && n_p < 16;) {
        p_list[n_p] = atoi(p);
        if (p_list[n_p] < 1) break;
        if (p_list[n_p] > max_p) max_p = p_list[n_p];
        n_p++;
        p = strchr(p, ',');
        if (!p) break;
        p++;
    }
    if (!path || n_p == 0 || reps < 1 || threads < 1) {
        fprintf(stderr,
                "usage: llama_prefill MODEL.gguf [--p 512,2048] [--reps 3] [--threads 2]\n");
        return 2;
    }
    const char *libdir = getenv("LLAMA_LIB_DIR");
    llama_log_set(peer_quiet_log, NULL);
    if (libdir)
        ggml_backend_load_all_from_path(libdir);
    else
        ggml_backend_load_all();
    llama_backend_init();
    struct llama_model *model = llama_model_load_from_file(path, llama_model_default_params());
    if (!model) {
        fprintf(stderr, "llama_prefill: llama.cpp could not load %s\n", path);
        return 1;
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)max_p + 16;
    cp.n_batch = (uint32_t)max_p;
    cp.n_ubatch = 512;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "llama_prefill: could not create a context\n");
        return 1;
    }
    int32_t V = llama_vocab_n_tokens(llama_model_get_vocab(model));
    char desc[256];
    llama_model_desc(model, desc, sizeof desc);
    printf("model: %s (llama.cpp), threads %d, n_ubatch %u, logits for the last row\n", desc,
           threads, cp.n_ubatch);
    llama_token *toks = malloc((size_t)max_p * sizeof *toks);
    uint64_t s = 5;
    for (int32_t i = 0; i < max_p; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        toks[i] = (llama_token)((s >> 33) % (uint64_t)V);
    }
    struct llama_batch b = llama_batch_init(max_p, 0, 1);
    llama_memory_t mem = llama_get_memory(ctx);
    printf("%6s %12s %12s\n", "P", "ms", "tokens/s");
    for (int k = 0; k < n_p; k++) {
        int32_t P = p_list[k];
        double *times = malloc((size_t)reps * sizeof *times);
        for (int r = 0; r < reps; r++) {
            llama_memory_clear(mem, true);
            b.n_tokens = P;
            for (int32_t i = 0; i < P; i++) {
                b.token[i] = toks[i];
                b.pos[i] = i;
                b.n_seq_id[i] = 1;
                b.seq_id[i][0] = 0;
                b.logits[i] = (int8_t)(i == P - 1);
            }
            double t0 = now_ms();
            if (llama_decode(ctx, b) != 0) {
                fprintf(stderr, "llama_prefill: decode of %d tokens failed\n", P);
                return 1;
            }
            llama_synchronize(ctx);
            times[r] = now_ms() - t0;
        }
        qsort(times, (size_t)reps, sizeof *times, peer_cmp_double);
        double med = times[reps / 2];
        printf("%6d %12.1f %12.1f\n", P, med, 1000.0 * P / med);
        fflush(stdout);
        free(times);
    }
    llama_batch_free(b);
    free(toks);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
