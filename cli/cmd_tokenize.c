/* hsd tokenize / detokenize. */
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/json_out.h"
#include "cli/cli.h"
#include "hsd.h"

static int fail(const char *what) {
    fprintf(stderr, "hsd: %s: %s\n", what, hsd_last_error());
    return 1;
}

/* One JSON line per input line: {"ids": [...], "decoded": "..."}. */
static int tokenize_jsonl(const hsd_tokenizer *tok, bool special) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long lineno = 0;
    int rc = 0;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        json_error_t jerr;
        json_t *in = json_loadb(line, (size_t)n, JSON_ALLOW_NUL, &jerr);
        json_t *text = in ? json_object_get(in, "text") : NULL;
        if (!text || !json_is_string(text)) {
            fprintf(stderr, "hsd: stdin line %ld: expected {\"text\": ...}%s%s\n", lineno,
                    in ? "" : ": ", in ? "" : jerr.text);
            json_decref(in);
            rc = 1;
            continue;
        }
        int32_t *ids = NULL;
        size_t nid = 0;
        char *dec = NULL;
        size_t dlen = 0;
        if (hsd_tokenizer_encode_alloc(tok, json_string_value(text), json_string_length(text),
                                       special, &ids, &nid) ||
            hsd_tokenizer_decode_alloc(tok, ids, nid, false, &dec, &dlen)) {
            fprintf(stderr, "hsd: stdin line %ld: %s\n", lineno, hsd_last_error());
            json_decref(in);
            hsd_free(ids);
            rc = 1;
            continue;
        }
        json_t *arr = json_array();
        for (size_t i = 0; i < nid; i++) json_array_append_new(arr, json_integer(ids[i]));
        json_t *out = json_object();
        json_object_set_new(out, "ids", arr);
        json_object_set_new(out, "decoded", json_stringn(dec, dlen));
        hsd_cli_put_json(out, JSON_COMPACT | JSON_ENSURE_ASCII);
        json_decref(in);
        hsd_free(ids);
        hsd_free(dec);
    }
    free(line);
    return rc;
}

typedef struct tok_opts {
    const char *path;
    int special, jsonl, skip_special;
} tok_opts;

#define O(f) offsetof(tok_opts, f)
static const hsd_opt tokenize_table[] = {
    {"tokenizer", 't', HSD_OPT_STRING, O(path), "TOKENIZER", "tokenizer file", 0, 0},
    {"special", 0, HSD_OPT_FLAG, O(special), NULL, "add special tokens (HF add_special_tokens=true)",
     0, 0},
    {"jsonl", 0, HSD_OPT_FLAG, O(jsonl), NULL,
     "read {\"text\": ...} lines on stdin, write {\"ids\", \"decoded\"}", 0, 0},
};
static const hsd_opt detokenize_table[] = {
    {"tokenizer", 't', HSD_OPT_STRING, O(path), "TOKENIZER", "tokenizer file", 0, 0},
    {"skip-special", 0, HSD_OPT_FLAG, O(skip_special), NULL, "leave special tokens out", 0, 0},
};
#undef O

const hsd_cli_spec hsd_spec_tokenize = {
    "tokenize", "-t TOKENIZER [--special] [--jsonl] [TEXT]", NULL, NULL,
    tokenize_table, HSD_OPTS_N(tokenize_table), 1,
};
const hsd_cli_spec hsd_spec_detokenize = {
    "detokenize", "-t TOKENIZER [--skip-special] IDS...", NULL, NULL,
    detokenize_table, HSD_OPTS_N(detokenize_table), -1,
};

int hsd_cmd_tokenize(int argc, char **argv) {
    tok_opts o = {0};
    int n_pos = 0;
    HSD_OPTS_PARSE(&hsd_spec_tokenize, &o, argc, argv, &n_pos);
    const char *path = o.path, *text = n_pos ? argv[1] : NULL;
    bool special = o.special, jsonl = o.jsonl;
    if (!path) return hsd_opts_fail(&hsd_spec_tokenize, "-t TOKENIZER is required");
    if (!jsonl && !text) return hsd_opts_fail(&hsd_spec_tokenize, "give TEXT or --jsonl");
    hsd_tokenizer *tok;
    if (hsd_tokenizer_load_file(path, &tok)) return fail("loading tokenizer");
    int rc = 0;
    if (jsonl) {
        rc = tokenize_jsonl(tok, special);
    } else {
        int32_t *ids;
        size_t n;
        if (hsd_tokenizer_encode_alloc(tok, text, strlen(text), special, &ids, &n)) {
            hsd_tokenizer_free(tok);
            return fail("encode");
        }
        printf("%zu tokens\n", n);
        /* Show each token's surface bytes between bars so boundaries are visible. */
        for (size_t i = 0; i < n; i++) {
            size_t len;
            const uint8_t *b = hsd_tokenizer_token_bytes(tok, ids[i], &len);
            printf("%s|", i ? "" : "|");
            for (size_t k = 0; k < len; k++) {
                if (b[k] == '\n') fputs("\\n", stdout);
                else if (b[k] < 0x20) printf("\\x%02x", b[k]);
                else putchar(b[k]);
            }
        }
        printf("\nids:");
        for (size_t i = 0; i < n; i++) printf(" %d", ids[i]);
        char *dec;
        size_t dl;
        if (hsd_tokenizer_decode_alloc(tok, ids, n, false, &dec, &dl)) rc = fail("decode");
        else {
            printf("\ndecoded: %s\nround trip: %s\n", dec,
                   dl == strlen(text) && !memcmp(dec, text, dl) ? "identical" : "DIFFERENT");
            hsd_free(dec);
        }
        hsd_free(ids);
    }
    hsd_tokenizer_free(tok);
    return rc;
}

int hsd_cmd_detokenize(int argc, char **argv) {
    tok_opts o = {0};
    int n_pos = 0;
    HSD_OPTS_PARSE(&hsd_spec_detokenize, &o, argc, argv, &n_pos);
    const char *path = o.path;
    bool skip = o.skip_special;
    if (!path) return hsd_opts_fail(&hsd_spec_detokenize, "-t TOKENIZER is required");
    int32_t *ids = calloc((size_t)n_pos + 1, sizeof *ids);
    size_t n = 0;
    for (int i = 1; ids && i <= n_pos; i++) {
        char *end;
        long v = strtol(argv[i], &end, 10);
        if (*end || end == argv[i] || v < 0 || v > 0x7fffffffL) {
            free(ids);
            return hsd_opts_fail(&hsd_spec_detokenize, "'%s' is not an id", argv[i]);
        }
        ids[n++] = (int32_t)v;
    }
    if (!ids) return 1;
    hsd_tokenizer *tok;
    if (hsd_tokenizer_load_file(path, &tok)) {
        free(ids);
        return fail("loading tokenizer");
    }
    char *text;
    int rc = 0;
    if (hsd_tokenizer_decode_alloc(tok, ids, n, skip, &text, NULL)) rc = fail("decode");
    else {
        printf("%s\n", text);
        hsd_free(text);
    }
    free(ids);
    hsd_tokenizer_free(tok);
    return rc;
}
