/* Speculative decoding with a drafter whose tokenizer differs from the target's, through the
 * public API only. Prints the drafted text, its statistics and whether it equals plain
 * autoregressive decoding of the target (greedy: it must).
 *   pair TARGET TARGET_TOKENIZER DRAFTER DRAFTER_TOKENIZER [PROMPT] */
#include <stdio.h>
#include <string.h>

#include "hsd.h"

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s TARGET TARGET_TOK DRAFTER DRAFTER_TOK [PROMPT]\n", argv[0]);
        return 2;
    }
    const char *prompt = argc > 5 ? argv[5] : "Once upon a time";
    hsd_tokenizer *tt = NULL, *dt = NULL;
    hsd_model *tm = NULL, *dm = NULL;
    hsd_engine *e = NULL;
    hsd_gen_result ar = HSD_GEN_RESULT_INIT, sp = HSD_GEN_RESULT_INIT;
    int rc = 1;
    /* every call returns a status; hsd_last_error() says what went wrong */
    if (hsd_model_load(argv[1], NULL, &tm) || hsd_tokenizer_load_file(argv[2], &tt) ||
        hsd_model_load(argv[3], NULL, &dm) || hsd_tokenizer_load_file(argv[4], &dt) ||
        hsd_engine_init(tm, tt, dm, dt, &e))
        goto out;
    char reason[160];
    hsd_algo algo = hsd_engine_auto_algo(e, reason, sizeof reason);
    printf("target vocab %d, drafter vocab %d, %d tokens in common\n", hsd_model_vocab_size(tm),
           hsd_model_vocab_size(dm), hsd_engine_overlap(e));
    printf("algorithm: %s (%s)\n", hsd_algo_name(algo), reason);

    hsd_gen_params p = hsd_gen_default_params(); /* greedy, AUTO */
    p.max_new_tokens = 64;
    if (hsd_engine_generate(e, prompt, strlen(prompt), &p, &sp)) goto out;
    p.algo = HSD_ALGO_AR;
    if (hsd_engine_generate(e, prompt, strlen(prompt), &p, &ar)) goto out;
    printf("%s: %s%s\n", hsd_algo_name(sp.algo), prompt, sp.text);
    printf("%d tokens, %.0f%% of drafts accepted, %.2f tokens per target forward\n", sp.n_ids,
           100 * sp.acceptance_rate, sp.tau);
    rc = sp.n_ids != ar.n_ids || strcmp(sp.text, ar.text) != 0;
    printf("ar: %s\n", rc ? "DIFFERENT" : "identical");
out:
    if (rc && hsd_last_error()[0]) fprintf(stderr, "pair: %s\n", hsd_last_error());
    hsd_gen_result_free(&sp);
    hsd_gen_result_free(&ar);
    hsd_engine_free(e); /* before the models and tokenizers it borrows */
    hsd_model_free(tm);
    hsd_model_free(dm);
    hsd_tokenizer_free(tt);
    hsd_tokenizer_free(dt);
    return rc;
}
