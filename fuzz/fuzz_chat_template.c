/* libFuzzer: chat-template parse + render. Input: template source, then optionally a NUL and
 * the context JSON (default: a small conversation). Any input must give a template or an
 * error, and a render or an error, within small limits (output 64 KiB, 20000 steps, depth 16):
 * no crash, leak, hang or unbounded allocation. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"

static const char *DEFAULT_CTX =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"sys\"}, {\"role\": \"user\", \"content\": "
    "\"hi \\u00e9\"}, {\"role\": \"assistant\", \"content\": \"yo\", \"tool_calls\": [{\"id\": "
    "\"call_123456789\", \"function\": {\"name\": \"f\", \"arguments\": {\"a\": 1}}}]}], "
    "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {}}}], "
    "\"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t tlen = nul ? (size_t)(nul - data) : size;
    char *src = malloc(tlen + 1);
    if (!src) return 0;
    memcpy(src, data, tlen);
    src[tlen] = 0;
    char *ctx = NULL;
    if (nul) {
        size_t clen = size - tlen - 1;
        ctx = malloc(clen + 1);
        if (!ctx) {
            free(src);
            return 0;
        }
        memcpy(ctx, nul + 1, clen);
        ctx[clen] = 0; /* a NUL inside the JSON just ends it early */
    }
    hsd_chat_template *t = NULL;
    if (hsd_chat_template_from_string(src, &t) == HSD_OK) {
        hsd_chat_params p = hsd_chat_default_params();
        p.now_unix = 1721952000;
        p.max_output = 1 << 16;
        p.max_steps = 20000;
        p.max_depth = 16;
        char *out = NULL;
        size_t n = 0;
        if (hsd_chat_render_json(t, ctx ? ctx : DEFAULT_CTX, &p, &out, &n) == HSD_OK) {
            if (strlen(out) > n) abort(); /* *out_len is the length (NULs may come earlier) */
            hsd_free(out);
        } else if (out) {
            abort(); /* a failed render leaves *out NULL */
        }
        hsd_chat_template_free(t);
    } else if (t) {
        abort();
    }
    free(ctx);
    free(src);
    return 0;
}
