/* bench/inflated.sh's llama.cpp check (not part of the build or of make test): loads a GGUF
 * with llama.cpp and prints its greedy continuation of a prompt given as token ids, one id per
 * line after a "ids" line, so the script can compare them with hsd's on the same file.
 *   usage: inflated_llama_check LLAMA_LIB_DIR MODEL.gguf ID,ID,... N */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

static void quiet(enum ggml_log_level level, const char *text, void *ud) {
    (void)ud;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static bool no_progress(float progress, void *ud) { /* llama.cpp prints dots otherwise */
    (void)progress, (void)ud;
    return true;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s LLAMA_LIB_DIR MODEL.gguf ID,ID,... N\n", argv[0]);
        return 2;
    }
    llama_log_set(quiet, NULL);
    ggml_backend_load_all_from_path(argv[1]);
    llama_backend_init();
    int32_t ids[1024], n = 0, n_gen = atoi(argv[4]);
    for (char *p = argv[3]; *p && n < 1000;) {
        ids[n++] = (int32_t)strtol(p, &p, 10);
        if (*p == ',') p++;
    }
    struct llama_model_params mp = llama_model_default_params();
    mp.progress_callback = no_progress;
    struct llama_model *model = llama_model_load_from_file(argv[2], mp);
    if (!model) {
        fprintf(stderr, "llama.cpp could not load %s\n", argv[2]);
        return 1;
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256, cp.n_batch = 256, cp.n_ubatch = 256, cp.n_threads = 2, cp.n_threads_batch = 2;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "llama.cpp could not create a context for %s\n", argv[2]);
        return 1;
    }
    int32_t nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
    printf("ids");
    int32_t tok[1024];
    memcpy(tok, ids, (size_t)n * sizeof *ids);
    struct llama_batch b = llama_batch_get_one(tok, n);
    for (int i = 0; i < n_gen; i++) {
        if (llama_decode(ctx, b)) {
            fprintf(stderr, "llama_decode failed at step %d\n", i);
            return 1;
        }
        const float *lg = llama_get_logits_ith(ctx, -1);
        int32_t best = 0;
        for (int32_t v = 1; v < nv; v++)
            if (lg[v] > lg[best]) best = v;
        printf(" %d", best);
        tok[n + i] = best;
        b = llama_batch_get_one(&tok[n + i], 1);
    }
    printf("\n");
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
