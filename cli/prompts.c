/* Prompt files and corpora for the CLI (see prompts.h). */
#include "cli/prompts.h"

#include <ctype.h>
#include <stdbool.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "hsd_tools.h"

char *hsd_cli_clip_words(const char *p, size_t clip) {
    size_t n = strlen(p), start = clip && n > clip ? n - clip : 0;
    while (start > 0 && start < n && p[start - 1] != ' ') start++;
    return strdup(p + start);
}

/* Whether a JSON line's "kind" is in the comma-separated list (always, with no list). */
static bool kind_wanted(json_t *j, const char *kinds) {
    if (!kinds) return true;
    const char *k = json_string_value(json_object_get(j, "kind"));
    size_t kl = k ? strlen(k) : 0;
    for (const char *p = kinds; k && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == kl && !strncmp(p, k, len)) return true;
        p += len + (comma != NULL);
    }
    return false;
}

int hsd_cli_read_prompts(const char *who, const char *path, int max, size_t clip, char ***out) {
    return hsd_cli_read_prompts_of(who, path, NULL, max, clip, out);
}

int hsd_cli_read_prompts_of(const char *who, const char *path, const char *kinds, int max,
                            size_t clip, char ***out) {
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "hsd %s: %s: cannot open\n", who, path);
        return -1;
    }
    char **v = NULL, *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int n = 0;
    while ((max <= 0 || n < max) && (len = getline(&line, &cap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (len == 0) continue;
        char *p = NULL;
        json_t *j = line[0] == '{' ? json_loads(line, 0, NULL) : NULL;
        if (j && !kind_wanted(j, kinds)) {
            json_decref(j);
            continue;
        }
        if (j) {
            const char *s = json_string_value(json_object_get(j, "prompt"));
            if (!s) s = json_string_value(json_object_get(j, "text"));
            if (s) p = hsd_cli_clip_words(s, clip);
            json_decref(j);
            if (!s) continue;
        } else if (!kinds) {
            p = hsd_cli_clip_words(line, clip);
        } else {
            continue;
        }
        char **nv = p ? realloc(v, (size_t)(n + 1) * sizeof *nv) : NULL;
        if (!nv) {
            free(p);
            fprintf(stderr, "hsd %s: %s: out of memory\n", who, path);
            hsd_cli_free_prompts(v, n);
            v = NULL, n = -1;
            break;
        }
        (v = nv)[n++] = p;
    }
    free(line);
    fclose(f);
    *out = v;
    return n;
}

void hsd_cli_free_prompts(char **p, int n) {
    for (int i = 0; i < n; i++) free(p[i]);
    free(p);
}

int hsd_cli_load_corpus(const char *path, char ***texts, size_t **lens, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "hsd: %s: cannot open the corpus\n", path);
        return 1;
    }
    int c;
    while ((c = fgetc(f)) != EOF && isspace(c)) {
    }
    if (c == '{') {
        fclose(f);
        hsd_corpus cp;
        if (hsd_corpus_load(path, &cp) != HSD_OK) {
            fprintf(stderr, "hsd: %s\n", hsd_last_error());
            return 1;
        }
        *texts = cp.text;
        *lens = cp.len;
        *n = cp.n;
        return 0;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)(size > 0 ? size : 0) + 1);
    *texts = malloc(sizeof **texts);
    *lens = malloc(sizeof **lens);
    if (!buf || !*texts || !*lens || size < 0 || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        free(buf), free(*texts), free(*lens);
        fprintf(stderr, "hsd: %s: cannot read\n", path);
        return 1;
    }
    fclose(f);
    buf[size] = 0;
    (*texts)[0] = buf;
    (*lens)[0] = (size_t)size;
    *n = 1;
    return 0;
}

void hsd_cli_free_corpus(char **texts, size_t *lens, size_t n) {
    hsd_corpus cp = {texts, lens, n};
    hsd_corpus_free(&cp);
}
