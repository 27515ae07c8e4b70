/* hsd template: render a chat template (a model's, a tokenizer's, or a file) over a
 * conversation or a whole variable set, printing exactly the rendered text. */
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "hsd.h"

typedef struct tmpl_opts {
    const char *tok, *file, *messages, *context, *now, *name;
    int agp;
} tmpl_opts;

#define O(f) offsetof(tmpl_opts, f)
static const hsd_opt template_table[] = {
    {"tokenizer", 't', HSD_OPT_STRING, O(tok), "TOKENIZER_OR_MODEL",
     "the template of a GGUF, tokenizer_config.json or tokenizer directory", 0, 0},
    {"template", 0, HSD_OPT_STRING, O(file), "FILE", "a template file (.jinja)", 0, 0},
    {"name", 0, HSD_OPT_STRING, O(name), "NAME", "a named template variant (e.g. tool_use)", 0, 0},
    {"messages", 0, HSD_OPT_STRING, O(messages), "FILE",
     "JSON list of messages, or an object with messages (and tools)", 0, 0},
    {"context", 0, HSD_OPT_STRING, O(context), "FILE",
     "JSON object: every key becomes a template variable, exactly", 0, 0},
    {"add-generation-prompt", 0, HSD_OPT_FLAG, O(agp), NULL,
     "end with the assistant turn's opening (with --messages)", 0, 0},
    {"now", 0, HSD_OPT_STRING, O(now), "YYYY-MM-DD", "strftime_now's date (00:00:00 UTC)", 0, 0},
};
#undef O

const hsd_cli_spec hsd_spec_template = {
    "template",
    "(-t TOKENIZER_OR_MODEL | --template FILE.jinja) (--messages FILE.json | --context FILE.json) "
    "[--add-generation-prompt] [--now YYYY-MM-DD]",
    "Prints the rendered text with no newline added. With --messages, bos_token and eos_token\n"
    "come from the template's file and add_generation_prompt from the flag; with --context the\n"
    "variables are exactly the JSON's. A template that raises exits 1 with its message.\n",
    NULL, template_table, HSD_OPTS_N(template_table), 0,
};

/* days since 1970-01-01 of a proleptic Gregorian date (no timezone involved) */
int hsd_cli_parse_day(const char *s, int64_t *unix_out) {
    int y, m, d;
    char tail;
    if (!s || sscanf(s, "%4d-%2d-%2d%c", &y, &m, &d, &tail) != 3 || m < 1 || m > 12 || d < 1 || d > 31)
        return -1;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[m - 1] + (m == 2 && leap)) return -1;
    int64_t yy = y - (m <= 2), era = (yy >= 0 ? yy : yy - 399) / 400;
    int64_t yoe = yy - era * 400, mp = (m + 9) % 12;
    int64_t doy = (153 * mp + 2) / 5 + d - 1, doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    *unix_out = (era * 146097 + doe - 719468) * 86400;
    return 0;
}

/* Renders the context JSON js with t and prints exactly the text; 0, or 1 with the message on
 * stderr. */
static int render_print(const hsd_chat_template *t, const char *js, const hsd_chat_params *p) {
    char *text = NULL;
    size_t n = 0;
    int rc = 0;
    if (!js || hsd_chat_render_json(t, js, p, &text, &n)) {
        fprintf(stderr, "hsd template: %s\n", js ? hsd_last_error() : "out of memory");
        rc = 1;
    } else if (fwrite(text, 1, n, stdout) != n || fflush(stdout)) {
        fprintf(stderr, "hsd template: writing the output failed\n");
        rc = 1;
    }
    hsd_free(text);
    return rc;
}

int hsd_cmd_template(int argc, char **argv) {
    tmpl_opts o = {0};
    HSD_OPTS_PARSE(&hsd_spec_template, &o, argc, argv, NULL);
    if (!o.tok == !o.file) return hsd_opts_fail(&hsd_spec_template, "give one of -t TOKENIZER_OR_MODEL and --template FILE");
    if (!o.messages == !o.context) return hsd_opts_fail(&hsd_spec_template, "give one of --messages FILE and --context FILE");
    if (o.context && o.agp)
        return hsd_opts_fail(&hsd_spec_template, "--add-generation-prompt goes with --messages (with --context, set it in the JSON)");
    hsd_chat_params p = hsd_chat_default_params();
    if (o.now && hsd_cli_parse_day(o.now, &p.now_unix))
        return hsd_opts_fail(&hsd_spec_template, "--now '%s' is not a date YYYY-MM-DD", o.now);
    hsd_chat_template *t;
    if (hsd_chat_template_load(o.tok ? o.tok : o.file, o.name, &t)) {
        fprintf(stderr, "hsd template: %s\n", hsd_cli_error("template"));
        return 1;
    }
    json_error_t jerr;
    const char *path = o.context ? o.context : o.messages;
    if (o.context) {
        /* the file as it is: the library's JSON reader keeps what jansson would not (integers
         * past 64 bits become floats there, as nowhere else) and reports errors with offsets */
        FILE *f = fopen(path, "rb");
        char *js = NULL;
        size_t cap = 0, len = 0, k;
        char buf[65536];
        while (f && (k = fread(buf, 1, sizeof buf, f)) > 0) {
            if (len + k + 1 > cap) {
                cap = (len + k + 1) * 2;
                char *nj = realloc(js, cap);
                if (!nj) break;
                js = nj;
            }
            memcpy(js + len, buf, k);
            len += k;
        }
        if (f) fclose(f);
        if (!f || !js) {
            fprintf(stderr, "hsd template: %s: cannot read\n", path);
            free(js);
            hsd_chat_template_free(t);
            return 1;
        }
        js[len] = 0;
        int rc = 1;
        if (strlen(js) != len)
            fprintf(stderr, "hsd template: %s: a NUL byte in the JSON\n", path);
        else
            rc = render_print(t, js, &p);
        free(js);
        hsd_chat_template_free(t);
        return rc;
    }
    json_t *in = json_load_file(path, JSON_ALLOW_NUL, &jerr);
    if (!in) {
        fprintf(stderr, "hsd template: %s: line %d, column %d: %s\n", path, jerr.line, jerr.column, jerr.text);
        hsd_chat_template_free(t);
        return 1;
    }
    json_t *ctx;
    if (o.context) {
        if (!json_is_object(in)) {
            fprintf(stderr, "hsd template: %s: the context must be a JSON object\n", path);
            json_decref(in);
            hsd_chat_template_free(t);
            return 1;
        }
        ctx = json_incref(in);
    } else {
        ctx = json_is_object(in) ? json_deep_copy(in) : json_object();
        if (json_is_array(in)) json_object_set(ctx, "messages", in);
        else if (!json_is_object(in) || !json_is_array(json_object_get(in, "messages"))) {
            fprintf(stderr, "hsd template: %s: expected a list of messages or an object with \"messages\"\n", path);
            json_decref(in);
            json_decref(ctx);
            hsd_chat_template_free(t);
            return 1;
        }
        if (!json_object_get(ctx, "bos_token"))
            json_object_set_new(ctx, "bos_token", json_string(hsd_chat_template_bos(t) ? hsd_chat_template_bos(t) : ""));
        if (!json_object_get(ctx, "eos_token"))
            json_object_set_new(ctx, "eos_token", json_string(hsd_chat_template_eos(t) ? hsd_chat_template_eos(t) : ""));
        json_object_set_new(ctx, "add_generation_prompt", json_boolean(o.agp));
    }
    json_decref(in);
    char *js = json_dumps(ctx, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(ctx);
    int rc = render_print(t, js, &p);
    free(js);
    hsd_chat_template_free(t);
    return rc;
}
