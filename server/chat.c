/* Chat messages -> prompt text. With issue 23's chat-template API in include/hsd.h (detected
 * at build time: HSD_SERVER_CHAT_API), a template renders them as HF transformers'
 * apply_chat_template does (add_generation_prompt true), and the text is the prompt as it is,
 * no BOS added (the template writes its own), as `hsd generate --chat` does. Without a
 * template: ChatML, llama-server's fallback, generated as `hsd generate -p` would (BOS
 * first). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

struct srv_chat {
#ifdef HSD_SERVER_CHAT_API
    hsd_chat_template *t;
#endif
    char *bos, *eos; /* the tokens' strings */
    char desc[300];
};

#ifdef HSD_SERVER_CHAT_API
static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }
#endif

int srv_chat_init(srv_chat **out, const char *path, const hsd_tokenizer *tok, char *msg,
                  size_t cap) {
    *out = NULL;
    (void)tok;
    srv_chat *c = calloc(1, sizeof *c);
    if (!c) return snprintf(msg, cap, "out of memory"), -1;
    snprintf(c->desc, sizeof c->desc, "built-in ChatML");
    if (path) {
#ifdef HSD_SERVER_CHAT_API
        if (hsd_chat_template_load(path, NULL, &c->t)) {
            snprintf(msg, cap, "chat template of %s: %s", path, hsd_last_error());
            srv_chat_free(c);
            return -1;
        }
        /* the variables apply_chat_template passes: the special tokens of the template's
         * own file (none when it names none) */
        c->bos = dup_or_null(hsd_chat_template_bos(c->t));
        c->eos = dup_or_null(hsd_chat_template_eos(c->t));
        snprintf(c->desc, sizeof c->desc, "template of %s", path);
#else
        snprintf(msg, cap,
                 "--chat-template %s: this build has no chat-template engine (include/hsd.h "
                 "lacks hsd_chat_render_json); only the built-in ChatML is available",
                 path);
        srv_chat_free(c);
        return -1;
#endif
    }
    *out = c;
    return 0;
}

void srv_chat_free(srv_chat *c) {
    if (!c) return;
#ifdef HSD_SERVER_CHAT_API
    hsd_chat_template_free(c->t);
#endif
    free(c->bos);
    free(c->eos);
    free(c);
}

const char *srv_chat_desc(const srv_chat *c) { return c ? c->desc : ""; }

bool srv_chat_has_template(const srv_chat *c) {
#ifdef HSD_SERVER_CHAT_API
    return c && c->t;
#else
    (void)c;
    return false;
#endif
}

static int chatml(json_t *messages, char **out, size_t *len, srv_error *err) {
    size_t n = 64;
    for (size_t i = 0; i < json_array_size(messages); i++) {
        json_t *m = json_array_get(messages, i);
        n += 32 + json_string_length(json_object_get(m, "role")) +
             json_string_length(json_object_get(m, "content"));
    }
    char *b = malloc(n);
    if (!b) return srv_fail(err, 500, "server_error", NULL, "out of memory");
    size_t at = 0;
    for (size_t i = 0; i < json_array_size(messages); i++) {
        json_t *m = json_array_get(messages, i);
        json_t *r = json_object_get(m, "role"), *c = json_object_get(m, "content");
        at += (size_t)sprintf(b + at, "<|im_start|>");
        memcpy(b + at, json_string_value(r), json_string_length(r));
        at += json_string_length(r);
        b[at++] = '\n';
        memcpy(b + at, json_string_value(c), json_string_length(c));
        at += json_string_length(c);
        at += (size_t)sprintf(b + at, "<|im_end|>\n");
    }
    at += (size_t)sprintf(b + at, "<|im_start|>assistant\n");
    *out = b;
    *len = at;
    return 0;
}

int srv_chat_render(const srv_chat *c, json_t *messages, char **out, size_t *len, srv_error *err) {
    *out = NULL;
    *len = 0;
#ifdef HSD_SERVER_CHAT_API
    if (c->t) {
        json_t *ctx = json_object();
        json_object_set(ctx, "messages", messages);
        json_object_set_new(ctx, "add_generation_prompt", json_true());
        if (c->bos) json_object_set_new(ctx, "bos_token", json_string(c->bos));
        if (c->eos) json_object_set_new(ctx, "eos_token", json_string(c->eos));
        char *js = json_dumps(ctx, JSON_COMPACT);
        json_decref(ctx);
        if (!js) return srv_fail(err, 500, "server_error", NULL, "out of memory");
        hsd_chat_params prm = hsd_chat_default_params();
        char *text = NULL;
        size_t tl = 0;
        hsd_status s = hsd_chat_render_json(c->t, js, &prm, &text, &tl);
        free(js);
        if (s)
            return srv_fail(err, 400, "invalid_request_error", "messages",
                            "the chat template failed on these messages: %s", hsd_last_error());
        *out = malloc(tl + 1);
        if (!*out) {
            hsd_free(text);
            return srv_fail(err, 500, "server_error", NULL, "out of memory");
        }
        memcpy(*out, text, tl);
        (*out)[tl] = 0;
        *len = tl;
        hsd_free(text);
        return 0;
    }
#endif
    (void)c;
    return chatml(messages, out, len, err);
}
