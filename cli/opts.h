/* The one option parser of the hsd CLI: every subcommand describes its flags in a table of
 * hsd_opt entries, and hsd_opts_parse checks argv against it. Unknown flags, missing values
 * and values that are not of the flag's type (or outside its range, or not one of its
 * choices) are errors naming the flag; the usage text and `hsd help-flags` (the list the docs
 * test checks docs/CLI.md against) are generated from the same table, so they cannot drift.
 *
 * Values are written into the caller's options struct at each entry's offset, so the tables
 * can be static constants that main.c also reaches (for help-flags). */
#ifndef HSD_CLI_OPTS_H
#define HSD_CLI_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum hsd_opt_type {
    HSD_OPT_FLAG,   /* no value; sets an int to 1 */
    HSD_OPT_INT,    /* int32_t; range [min, max] when min < max */
    HSD_OPT_U64,    /* uint64_t (seeds) */
    HSD_OPT_FLOAT,  /* float; range [min, max] when min < max */
    HSD_OPT_DOUBLE, /* double; range as FLOAT */
    HSD_OPT_STRING, /* const char * (points into argv) */
    HSD_OPT_LIST,   /* repeatable string: hsd_opt_list */
    HSD_OPT_INTS,   /* comma-separated integers "1,2,4": hsd_opt_ints; range per element */
    HSD_OPT_CHOICE, /* one of the '|'-separated words in `arg`: int index */
} hsd_opt_type;

#define HSD_OPT_LIST_MAX 16
typedef struct hsd_opt_list {
    const char *v[HSD_OPT_LIST_MAX];
    int n;
} hsd_opt_list;

#define HSD_OPT_INTS_MAX 64
typedef struct hsd_opt_ints {
    int32_t v[HSD_OPT_INTS_MAX];
    int n;
} hsd_opt_ints;

typedef struct hsd_opt {
    const char *names; /* long names without "--", '|'-separated; the first is canonical */
    char short_name;   /* '-x', or 0 */
    hsd_opt_type type;
    size_t off;      /* offsetof(the command's options struct, field) */
    const char *arg; /* value's name in the usage ("M"); for CHOICE the words "a|b|c" */
    const char *help;
    double min, max; /* numeric range when min < max */
} hsd_opt;

typedef struct hsd_cli_spec {
    const char *name;          /* "generate", "bench generate" */
    const char *synopsis;      /* what follows the name in the usage line, e.g. "[OPTIONS] TEXT" */
    const char *about;         /* text printed after the option list (may be NULL) */
    void (*about_fn)(FILE *f); /* or printed by this, for text with computed values */
    const hsd_opt *opts;
    int n_opts;
    int max_pos; /* positional arguments allowed (-1: any number) */
} hsd_cli_spec;

/* Rows several commands share; T is the command's options struct, the rest its fields. */
#define HSD_OPT_ROW_JSON(T, f)                                                                     \
    { "json", 0, HSD_OPT_FLAG, offsetof(T, f), NULL, "one JSON object", 0, 0 }
#define HSD_OPT_ROW_THREADS(T, f)                                                                  \
    { "threads", 0, HSD_OPT_INT, offsetof(T, f), "T", "forward threads per model (0: 2)", 0, 4096 }
#define HSD_OPT_ROW_NO_MMAP(T, f)                                                                  \
    {                                                                                              \
        "no-mmap", 0, HSD_OPT_FLAG, offsetof(T, f), NULL,                                          \
            "read the weights instead of mapping them", 0, 0                                       \
    }
/* --target-tokenizer/--draft-tokenizer, with short forms s_t, s_d (or 0) */
#define HSD_OPT_ROWS_TOKENIZERS(T, tt, dt, s_t, s_d)                                               \
    {"target-tokenizer", s_t, HSD_OPT_STRING, offsetof(T, tt), "T", "target tokenizer", 0, 0}, {   \
        "draft-tokenizer", s_d, HSD_OPT_STRING, offsetof(T, dt), "D", "drafter tokenizer", 0, 0    \
    }
/* --target, --target-tokenizer, --draft, --draft-tokenizer */
#define HSD_OPT_ROWS_PAIR(T, tm, tt, dm, dt)                                                       \
    {"target", 0, HSD_OPT_STRING, offsetof(T, tm), "M", "target model", 0, 0},                     \
        HSD_OPT_ROWS_TOKENIZERS(T, tt, dt, 0, 0), {                                                \
        "draft", 0, HSD_OPT_STRING, offsetof(T, dm), "M2", "drafter model", 0, 0                   \
    }
/* --head-calib, --calib-tokens */
#define HSD_OPT_ROWS_HEAD_CALIB(T, calib, n)                                                       \
    {"head-calib",                                                                                 \
     0,                                                                                            \
     HSD_OPT_STRING,                                                                               \
     offsetof(T, calib),                                                                           \
     "CORPUS",                                                                                     \
     "calibrate SVD-built draft heads on this corpus",                                             \
     0,                                                                                            \
     0},                                                                                           \
    {                                                                                              \
        "calib-tokens", 0, HSD_OPT_INT, offsetof(T, n), "N", "calibration tokens (4096)", 0, 1e9   \
    }

#define HSD_OPTS_N(table) ((int)(sizeof(table) / sizeof((table)[0])))

enum { HSD_OPTS_OK = 0, HSD_OPTS_HELP = 1, HSD_OPTS_ERR = 2 };

/* Parses argv[1..argc) (argv[0] is the subcommand's name) into `dest`. Accepts "--name
 * VALUE", "--name=VALUE", "-x VALUE", "-h"/"--help" (prints the usage to stdout) and "--"
 * (the rest are positional). Positional arguments are moved to argv[1..1+*n_pos) in order
 * (n_pos may be NULL when spec->max_pos is 0). Returns HSD_OPTS_OK, HSD_OPTS_HELP, or
 * HSD_OPTS_ERR after printing "hsd NAME: <what> ..." and a hint to stderr. */
int hsd_opts_parse(const hsd_cli_spec *spec, void *dest, int argc, char **argv, int *n_pos);
/* The usage text generated from the table. */
void hsd_opts_usage(const hsd_cli_spec *spec, FILE *f);
/* One line per flag, "NAME\t--flag\tTYPE" (every alias, and "-x"; TYPE: flag, int, u64,
 * float, double, string, list, ints, choice), for `hsd help-flags`. */
void hsd_opts_list_flags(const hsd_cli_spec *spec, FILE *f);
/* Prints "hsd NAME: msg" to stderr (the command-level errors after parsing) and returns 2. */
int hsd_opts_fail(const hsd_cli_spec *spec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The parse step every command starts with: returns from the calling function with 0 after
 * --help and 2 on a bad command line. */
#define HSD_OPTS_PARSE(spec, dest, argc, argv, n_pos)                                              \
    do {                                                                                           \
        int hsd_opts_rc_ = hsd_opts_parse((spec), (dest), (argc), (argv), (n_pos));                \
        if (hsd_opts_rc_ != HSD_OPTS_OK) return hsd_opts_rc_ == HSD_OPTS_HELP ? 0 : 2;             \
    } while (0)

#endif
