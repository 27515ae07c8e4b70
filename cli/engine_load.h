/* Loading what an engine needs (target, optional drafter, their tokenizers, the engine) and
 * releasing it: the same steps for `hsd generate` and `hsd bench heads`. */
#ifndef HSD_CLI_ENGINE_LOAD_H
#define HSD_CLI_ENGINE_LOAD_H

#include "hsd.h"

typedef struct hsd_cli_engine {
    hsd_model *target, *draft;
    hsd_tokenizer *target_tok, *draft_tok;
    hsd_engine *e;
} hsd_cli_engine;

/* Loads the target (tm, tt with params tp) and, when dm is not NULL, the drafter (dm, dt with
 * dp), then the engine. Prints "hsd WHO: why" and returns 1 on error (what was loaded stays
 * in *x for hsd_cli_engine_free). */
int hsd_cli_engine_load(const char *who, hsd_cli_engine *x, const char *tm, const char *tt,
                        const hsd_model_params *tp, const char *dm, const char *dt,
                        const hsd_model_params *dp);
/* The same in two steps, for a caller that sizes the models from the prompt's tokens: the
 * tokenizers (dt NULL: no drafter), then the models and the engine. */
int hsd_cli_engine_load_toks(const char *who, hsd_cli_engine *x, const char *tt, const char *dt);
int hsd_cli_engine_load_models(const char *who, hsd_cli_engine *x, const char *tm,
                               const hsd_model_params *tp, const char *dm,
                               const hsd_model_params *dp);
void hsd_cli_engine_free(hsd_cli_engine *x);

#endif
