/* Instruction-count driver for the engine (bench/notes/engine.md, "One decoding driver"): the real
 * TinyStories pair, 8 prompts, one algorithm, greedy, 64 new tokens, R repetitions, single
 * requests or batches of B. Not built by CMake; build against a libhsd.a and count with
 * cachegrind (load-independent):
 *   gcc -O2 -Iinclude bench/engine_insns.c build/libhsd.a $(pkg-config --libs libpcre2-8 \
 *       libutf8proc jansson libxxhash icu-uc openblas) -lpthread -lm -o engine_insns
 *   valgrind --tool=cachegrind --cache-sim=no ./engine_insns tli 2 [B]
 * Models are read from $HSD_SHARED/models (default /work/shared/models). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hsd.h"
int main(int argc, char **argv) {
    if (argc < 2 || hsd_algo_parse(argv[1]) < 0) {
        fprintf(stderr, "usage: engine_insns ALGO [REPETITIONS [BATCH]]\n");
        return 2;
    }
    char M[400];
    snprintf(M, sizeof M, "%s/models",
             getenv("HSD_SHARED") ? getenv("HSD_SHARED") : "/work/shared");
    char p[4][512];
    snprintf(p[0], 512, "%s/babyllama-tok105/model5000.bin", M);
    snprintf(p[1], 512, "%s/babyllama-tok105/tok105.bin", M);
    snprintf(p[2], 512, "%s/stories260K/stories260K.bin", M);
    snprintf(p[3], 512, "%s/stories260K/tok512.bin", M);
    hsd_model_params mp = hsd_model_default_params();
    mp.n_threads = 1;
    int B = argc > 3 ? atoi(argv[3]) : 0;
    mp.n_seq = B > 0 ? B : 1;
    hsd_model *t, *d;
    hsd_tokenizer *tt, *dt;
    hsd_engine *e;
    if (hsd_model_load(p[0], &mp, &t) || hsd_model_load(p[2], &mp, &d) ||
        hsd_tokenizer_load_file(p[1], &tt) || hsd_tokenizer_load_file(p[3], &dt) ||
        hsd_engine_init(t, tt, d, dt, &e)) {
        fprintf(stderr, "%s\n", hsd_last_error());
        return 1;
    }
    const char *prompts[8] = {"Once upon a time, there was a little dog named Max.",
                              "The sun was hot and the",
                              "Lily and Tom went to the park to play. They saw a",
                              "One day, a little bird",
                              "Tim had a red ball. He",
                              "The cat sat on the mat and",
                              "Mom said, \"Let's go to the",
                              "There was a big tree in the garden"};
    hsd_gen_params g = hsd_gen_default_params();
    g.algo = hsd_algo_parse(argv[1]);
    g.max_new_tokens = 64;
    long n = 0;
    for (int rep = 0; rep < (argc > 2 ? atoi(argv[2]) : 1); rep++)
        if (B > 0) {
            for (int i = 0; i + B <= 8; i += B) {
                hsd_gen_result r[8];
                if (hsd_engine_generate_batch(e, prompts + i, NULL, B, &g, r)) {
                    fprintf(stderr, "%s\n", hsd_last_error());
                    return 1;
                }
                for (int j = 0; j < B; j++) n += r[j].n_ids, hsd_gen_result_free(&r[j]);
            }
        } else
            for (int i = 0; i < 8; i++) {
                hsd_gen_result r;
                hsd_engine_reset(e);
                if (hsd_engine_generate(e, prompts[i], strlen(prompts[i]), &g, &r)) {
                    fprintf(stderr, "%s\n", hsd_last_error());
                    return 1;
                }
                n += r.n_ids;
                hsd_gen_result_free(&r);
            }
    printf("%s %ld tokens\n", argv[1], n);
    return 0;
}
