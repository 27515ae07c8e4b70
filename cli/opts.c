/* Table-driven option parsing for every hsd subcommand (see opts.h). */
#include "cli/opts.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int hsd_opts_fail(const hsd_cli_spec *spec, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "hsd %s: ", spec->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 2;
}

/* Whether `name` (length len) is one of the '|'-separated words of `words`; *index gets its
 * position. */
static bool word_in(const char *words, const char *name, size_t len, int *index) {
    int i = 0;
    for (const char *w = words; w && *w; i++) {
        const char *bar = strchr(w, '|');
        size_t wl = bar ? (size_t)(bar - w) : strlen(w);
        if (wl == len && !strncmp(w, name, len)) {
            if (index) *index = i;
            return true;
        }
        w = bar ? bar + 1 : NULL;
    }
    return false;
}

/* The entry a command-line word names ("--name" or "-x"), or NULL. */
static const hsd_opt *find(const hsd_cli_spec *spec, const char *word, size_t len) {
    for (int i = 0; i < spec->n_opts; i++) {
        const hsd_opt *o = &spec->opts[i];
        if (len > 2 && word[0] == '-' && word[1] == '-' &&
            word_in(o->names, word + 2, len - 2, NULL))
            return o;
        if (len == 2 && word[0] == '-' && o->short_name && word[1] == o->short_name) return o;
    }
    return NULL;
}

/* The canonical spelling of an entry, for messages: "--target" or "-n". */
static void flag_name(const hsd_opt *o, char *buf, size_t cap) {
    if (!o->names || !*o->names) {
        snprintf(buf, cap, "-%c", o->short_name);
        return;
    }
    const char *bar = strchr(o->names, '|');
    int len = bar ? (int)(bar - o->names) : (int)strlen(o->names);
    snprintf(buf, cap, "--%.*s", len, o->names);
}

static bool in_range(const hsd_opt *o, double v) {
    return !(o->min < o->max) || (v >= o->min && v <= o->max);
}

static int bad_range(const hsd_cli_spec *spec, const char *flag, const hsd_opt *o, const char *v) {
    return hsd_opts_fail(spec, "%s: %s is outside %g..%g", flag, v, o->min, o->max);
}

static int parse_long(const char *v, long long *out) {
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || errno) return 1;
    *out = x;
    return 0;
}

/* Stores one value; prints the error and returns 2 when it does not fit the entry. */
static int store(const hsd_cli_spec *spec, const hsd_opt *o, void *dest, const char *v) {
    char flag[64];
    flag_name(o, flag, sizeof flag);
    void *p = (char *)dest + o->off;
    long long x;
    char *end;
    switch (o->type) {
    case HSD_OPT_FLAG:
        *(int *)p = 1;
        return 0;
    case HSD_OPT_STRING:
        *(const char **)p = v;
        return 0;
    case HSD_OPT_INT:
        if (parse_long(v, &x) || x < INT32_MIN || x > INT32_MAX)
            return hsd_opts_fail(spec, "%s: '%s' is not an integer", flag, v);
        if (!in_range(o, (double)x)) return bad_range(spec, flag, o, v);
        *(int32_t *)p = (int32_t)x;
        return 0;
    case HSD_OPT_U64: {
        errno = 0;
        unsigned long long u = strtoull(v, &end, 10);
        if (end == v || *end || errno || v[0] == '-')
            return hsd_opts_fail(spec, "%s: '%s' is not a non-negative integer", flag, v);
        *(uint64_t *)p = (uint64_t)u;
        return 0;
    }
    case HSD_OPT_FLOAT:
    case HSD_OPT_DOUBLE: {
        errno = 0;
        double d = strtod(v, &end);
        if (end == v || *end || errno || isnan(d))
            return hsd_opts_fail(spec, "%s: '%s' is not a number", flag, v);
        if (!in_range(o, d)) return bad_range(spec, flag, o, v);
        if (o->type == HSD_OPT_FLOAT)
            *(float *)p = (float)d;
        else
            *(double *)p = d;
        return 0;
    }
    case HSD_OPT_LIST: {
        hsd_opt_list *l = p;
        if (l->n == HSD_OPT_LIST_MAX)
            return hsd_opts_fail(spec, "%s: at most %d times", flag, HSD_OPT_LIST_MAX);
        l->v[l->n++] = v;
        return 0;
    }
    case HSD_OPT_INTS: {
        hsd_opt_ints *l = p;
        l->n = 0;
        const char *s = v;
        while (*s) {
            errno = 0;
            long long e = strtoll(s, &end, 10);
            if (end == s || errno || e < INT32_MIN || e > INT32_MAX || (*end && *end != ','))
                return hsd_opts_fail(spec, "%s: '%s' is not a comma-separated list of integers",
                                     flag, v);
            if (!in_range(o, (double)e)) return bad_range(spec, flag, o, v);
            if (l->n == HSD_OPT_INTS_MAX)
                return hsd_opts_fail(spec, "%s: at most %d values", flag, HSD_OPT_INTS_MAX);
            l->v[l->n++] = (int32_t)e;
            s = *end ? end + 1 : end;
        }
        if (l->n == 0) return hsd_opts_fail(spec, "%s: empty list", flag);
        return 0;
    }
    case HSD_OPT_CHOICE: {
        int idx;
        if (!word_in(o->arg, v, strlen(v), &idx))
            return hsd_opts_fail(spec, "%s: '%s' is not one of %s", flag, v, o->arg);
        *(int *)p = idx;
        return 0;
    }
    }
    return hsd_opts_fail(spec, "%s: bad option table entry", flag);
}

static int hint(const hsd_cli_spec *spec) {
    fprintf(stderr, "run 'hsd %s --help' for the options\n", spec->name);
    return HSD_OPTS_ERR;
}

int hsd_opts_parse(const hsd_cli_spec *spec, void *dest, int argc, char **argv, int *n_pos) {
    int np = 0;
    bool only_pos = false;
    const char *first[128] = {0}; /* the value each string option got, by table index */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || !a[1]) {
            if (spec->max_pos >= 0 && np >= spec->max_pos) {
                hsd_opts_fail(spec, "unexpected argument '%s'", a);
                return hint(spec);
            }
            argv[1 + np++] = argv[i];
            continue;
        }
        if (!strcmp(a, "--")) {
            only_pos = true;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            hsd_opts_usage(spec, stdout);
            return HSD_OPTS_HELP;
        }
        const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const hsd_opt *o = find(spec, a, len);
        if (!o) {
            hsd_opts_fail(spec, "unknown option '%.*s'", (int)len, a);
            return hint(spec);
        }
        const char *v = NULL;
        if (o->type == HSD_OPT_FLAG) {
            if (eq) {
                hsd_opts_fail(spec, "%.*s takes no value", (int)len, a);
                return hint(spec);
            }
        } else if (eq) {
            v = eq + 1;
        } else if (i + 1 < argc) {
            v = argv[++i];
        } else {
            hsd_opts_fail(spec, "%s needs a value (%s)", a, o->arg ? o->arg : "VALUE");
            return hint(spec);
        }
        /* a text option given twice would silently lose the first value (`-p a -p b` kept
         * only "b"): refuse, naming both; repeatable ones are lists (--stop) */
        size_t k = (size_t)(o - spec->opts);
        if (o->type == HSD_OPT_STRING && k < sizeof first / sizeof first[0]) {
            if (first[k]) {
                hsd_opts_fail(spec, "%.*s given twice ('%s', then '%s'): it takes one value%s",
                              (int)len, a, first[k], v,
                              o->names && !strncmp(o->names, "prompt", 6) ? " (several prompts: --batch-file)" : "");
                return hint(spec);
            }
            first[k] = v;
        }
        if (store(spec, o, dest, v)) return hint(spec);
    }
    if (n_pos) *n_pos = np;
    return HSD_OPTS_OK;
}

void hsd_opts_usage(const hsd_cli_spec *spec, FILE *f) {
    fprintf(f, "usage: hsd %s %s\n", spec->name, spec->synopsis ? spec->synopsis : "[OPTIONS]");
    if (spec->n_opts) fprintf(f, "options:\n");
    for (int i = 0; i < spec->n_opts; i++) {
        const hsd_opt *o = &spec->opts[i];
        char left[160];
        int n = snprintf(left, sizeof left, "  ");
        if (o->short_name) n += snprintf(left + n, sizeof left - (size_t)n, "-%c", o->short_name);
        for (const char *w = o->names; w && *w && n < (int)sizeof left;) {
            const char *bar = strchr(w, '|');
            int wl = bar ? (int)(bar - w) : (int)strlen(w);
            n += snprintf(left + n, sizeof left - (size_t)n, "%s--%.*s", n > 2 ? ", " : "", wl, w);
            w = bar ? bar + 1 : NULL;
        }
        if (o->type != HSD_OPT_FLAG && n < (int)sizeof left)
            snprintf(left + n, sizeof left - (size_t)n, " %s", o->arg ? o->arg : "VALUE");
        if (strlen(left) > 32)
            fprintf(f, "%s\n%34s%s\n", left, "", o->help ? o->help : "");
        else
            fprintf(f, "%-34s%s\n", left, o->help ? o->help : "");
    }
    if (spec->about) fprintf(f, "%s", spec->about);
    if (spec->about_fn) spec->about_fn(f);
}

void hsd_opts_list_flags(const hsd_cli_spec *spec, FILE *f) {
    static const char *const type_names[] = {"flag",   "int",  "u64",  "float", "double",
                                             "string", "list", "ints", "choice"};
    for (int i = 0; i < spec->n_opts; i++) {
        const hsd_opt *o = &spec->opts[i];
        const char *type = type_names[o->type];
        for (const char *w = o->names; w && *w;) {
            const char *bar = strchr(w, '|');
            int wl = bar ? (int)(bar - w) : (int)strlen(w);
            fprintf(f, "%s\t--%.*s\t%s\n", spec->name, wl, w, type);
            w = bar ? bar + 1 : NULL;
        }
        if (o->short_name) fprintf(f, "%s\t-%c\t%s\n", spec->name, o->short_name, type);
    }
}
