/* Character tables generated from HF tokenizers' behaviour over the whole code space
 * (tokenize/unicode_case.c, _classes.c, _scripts.c, _gc_bmp.c and _gc_supp.c, written by
 * tests/unicode/gen_tables.js). They replace the system libraries' answers where HF's Rust
 * crates follow another Unicode version; see docs/UNICODE.md. */
#ifndef HSD_TOKENIZE_UNICODE_TABLES_H
#define HSD_TOKENIZE_UNICODE_TABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t lo, hi;
} hsd_uc_range;
typedef struct {
    uint32_t cp, to;
} hsd_uc_pair;
typedef struct {
    uint32_t cp, n, to[3];
} hsd_uc_long;
typedef struct {
    uint32_t lo, hi;
    uint8_t gc; /* ICU UCharCategory numbering */
} hsd_uc_gc_run;

extern const hsd_uc_pair hsd_uc_lower_map[];
extern const size_t hsd_uc_n_lower_map;
extern const hsd_uc_long hsd_uc_lower_long[];
extern const size_t hsd_uc_n_lower_long;
extern const hsd_uc_range hsd_uc_marks[], hsd_uc_bert_mn[], hsd_uc_bert_control[],
    hsd_uc_bert_punct[], hsd_uc_numeric[], hsd_uc_onig_word_extra[], hsd_uc_rust_word_extra[];
extern const size_t hsd_uc_n_marks, hsd_uc_n_bert_mn, hsd_uc_n_bert_control, hsd_uc_n_bert_punct,
    hsd_uc_n_numeric, hsd_uc_n_onig_word_extra, hsd_uc_n_rust_word_extra;
/* regex_gc in two tables, code points below U+10000 and from U+10000 on */
extern const hsd_uc_gc_run hsd_uc_regex_gc_bmp[], hsd_uc_regex_gc_supp[], hsd_uc_scripts[];
extern const size_t hsd_uc_n_regex_gc_bmp, hsd_uc_n_regex_gc_supp, hsd_uc_n_scripts;

/* Binary search of a sorted range table. */
static inline bool hsd_uc_in(const hsd_uc_range *r, size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < r[mid].lo)
            hi = mid;
        else if (cp > r[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

#endif
