/* Printing a JSON result: the one way every subcommand writes its --json output. */
#ifndef HSD_CLI_JSON_OUT_H
#define HSD_CLI_JSON_OUT_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

/* Prints o (jansson dump flags, e.g. JSON_COMPACT) and a newline to stdout, then releases
 * it. */
static inline void hsd_cli_put_json(json_t *o, size_t flags) {
    char *s = json_dumps(o, flags);
    if (s) puts(s);
    free(s);
    json_decref(o);
}

#endif
