/* See engine_load.h. */
#include "cli/engine_load.h"
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

int hsd_cli_engine_load_toks(const char *who, hsd_cli_engine *x, const char *tt, const char *dt) {
    memset(x, 0, sizeof *x);
    if (hsd_tokenizer_load_file(tt, &x->target_tok) ||
        (dt && hsd_tokenizer_load_file(dt, &x->draft_tok))) {
        fprintf(stderr, "hsd %s: %s\n", who, hsd_last_error());
        return 1;
    }
    return 0;
}

int hsd_cli_engine_load_models(const char *who, hsd_cli_engine *x, const char *tm,
                               const hsd_model_params *tp, const char *dm,
                               const hsd_model_params *dp) {
    if (hsd_model_load(tm, tp, &x->target) || (dm && hsd_model_load(dm, dp, &x->draft)) ||
        hsd_engine_init(x->target, x->target_tok, x->draft, x->draft_tok, &x->e)) {
        fprintf(stderr, "hsd %s: %s\n", who, hsd_cli_error(who));
        return 1;
    }
    return 0;
}

int hsd_cli_engine_load(const char *who, hsd_cli_engine *x, const char *tm, const char *tt,
                        const hsd_model_params *tp, const char *dm, const char *dt,
                        const hsd_model_params *dp) {
    return hsd_cli_engine_load_toks(who, x, tt, dm ? dt : NULL) ||
           hsd_cli_engine_load_models(who, x, tm, tp, dm, dp);
}

void hsd_cli_engine_free(hsd_cli_engine *x) {
    hsd_engine_free(x->e);
    hsd_model_free(x->target);
    hsd_model_free(x->draft);
    hsd_tokenizer_free(x->target_tok);
    hsd_tokenizer_free(x->draft_tok);
    memset(x, 0, sizeof *x);
}
