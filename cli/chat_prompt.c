/* `hsd generate --chat`: see chat_prompt.h. */
#include "cli/chat_prompt.h"
#include "cli/cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hsd_chat_template *load_template(const char *who, const char *target, const char *target_tok) {
    hsd_chat_template *t = NULL;
    char first[1024] = "";
    if (target && !hsd_chat_template_load(target, NULL, &t)) return t;
    if (target) snprintf(first, sizeof first, "%s", hsd_last_error());
    if (target_tok && (!target || strcmp(target, target_tok)) && !hsd_chat_template_load(target_tok, NULL, &t))
        return t;
    fprintf(stderr, "hsd %s: --chat: no chat template: %s%s%s\n", who, first, first[0] ? "; " : "",
            target_tok ? hsd_last_error() : "");
    return NULL;
}

char *hsd_cli_chat_prompt(const char *who, const char *target, const char *target_tok,
                          const char *messages_file, const char *system, const char *user) {
    json_t *ctx = json_object(), *msgs = NULL;
    if (messages_file) {
        json_error_t jerr;
        json_t *in = json_load_file(messages_file, 0, &jerr);
        if (!in) {
            fprintf(stderr, "hsd %s: %s: line %d, column %d: %s\n", who, messages_file, jerr.line,
                    jerr.column, jerr.text);
            json_decref(ctx);
            return NULL;
        }
        if (json_is_object(in)) json_object_update(ctx, in);
        msgs = json_is_array(in) ? json_incref(in) : json_incref(json_object_get(in, "messages"));
        json_decref(in);
        if (!json_is_array(msgs)) {
            fprintf(stderr, "hsd %s: %s: expected a list of messages or an object with \"messages\"\n", who,
                    messages_file);
            json_decref(msgs);
            json_decref(ctx);
            return NULL;
        }
    } else {
        msgs = json_array();
    }
    json_t *first = json_array_get(msgs, 0);
    const char *role = first ? json_string_value(json_object_get(first, "role")) : NULL;
    if (system && !(role && !strcmp(role, "system"))) {
        json_t *m = json_pack("{s:s, s:s}", "role", "system", "content", system);
        json_array_insert_new(msgs, 0, m);
    }
    if (user) json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "user", "content", user));
    json_object_set_new(ctx, "messages", msgs);
    hsd_chat_template *t = load_template(who, target, target_tok);
    if (!t) {
        json_decref(ctx);
        return NULL;
    }
    /* the special tokens transformers passes: those of the template's file */
    if (hsd_chat_template_bos(t) && !json_object_get(ctx, "bos_token"))
        json_object_set_new(ctx, "bos_token", json_string(hsd_chat_template_bos(t)));
    if (hsd_chat_template_eos(t) && !json_object_get(ctx, "eos_token"))
        json_object_set_new(ctx, "eos_token", json_string(hsd_chat_template_eos(t)));
    json_object_set_new(ctx, "add_generation_prompt", json_true());
    char *js = json_dumps(ctx, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(ctx);
    char *text = NULL, *out = NULL;
    size_t n = 0;
    if (!js) fprintf(stderr, "hsd %s: out of memory\n", who);
    else if (hsd_chat_render_json(t, js, NULL, &text, &n))
        fprintf(stderr, "hsd %s: --chat: the chat template: %s\n", who, hsd_last_error());
    else if ((out = malloc(n + 1))) {
        memcpy(out, text, n + 1);
    }
    free(js);
    hsd_free(text);
    hsd_chat_template_free(t);
    return out;
}

int hsd_cli_chat_eos(const char *who, hsd_engine *e, const hsd_tokenizer *tt, const char *target,
                     const char *target_tok) {
    int32_t all[256];
    int32_t n_all = 0;
    const char *paths[2] = {target, target_tok};
    for (int k = 0; k < 2; k++) {
        int32_t *ids;
        size_t n;
        if (!paths[k] || (k == 1 && target && !strcmp(target, target_tok))) continue;
        if (hsd_chat_eos_ids(paths[k], tt, &ids, &n)) {
            fprintf(stderr, "hsd %s: %s\n", who, hsd_cli_error(who));
            return 1;
        }
        for (size_t i = 0; i < n; i++) {
            bool dup = false;
            for (int32_t j = 0; j < n_all; j++) dup |= all[j] == ids[i];
            if (!dup && n_all < 256) all[n_all++] = ids[i];
        }
        hsd_free(ids);
    }
    if (hsd_engine_set_eos_ids(e, all, n_all)) {
        fprintf(stderr, "hsd %s: %s\n", who, hsd_cli_error(who));
        return 1;
    }
    return 0;
}
