/* Tokenizer injectivity: strings s with decode(encode(s, add_special=false),
 * skip_special=false) != s (paper Sec 3.2 / Appendix F). Such strings make the string bridge
 * of SLEM/SLRS/TLI re-encode differently from what was committed, so the engine needs the
 * look-behind fix for them. This module checks a corpus, shrinks each failure to a minimal
 * counterexample (delta debugging over characters), classifies its cause by experiment, and
 * fuzzes for new failures with ICU-generated adversarial text. */
#ifndef HSD_LIB_INJECTIVITY_H
#define HSD_LIB_INJECTIVITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsd.h"
#include "hsd_tools.h"

/* The corpus check, the fuzzer, their results and hsd_inj_cause are public
 * (include/hsd_tools.h); the three steps below are what they are built from. */

/* decode(encode(s)) with the settings above; *same tells whether it equals s. `decoded` may be
 * NULL; otherwise it receives a malloc'ed NUL-terminated copy (release with free). */
hsd_status hsd_inj_roundtrip(const hsd_tokenizer *tok, const char *s, size_t n, char **decoded,
                             size_t *dlen, bool *same);

/* Shrinks a non-injective s (valid UTF-8) to a 1-minimal non-injective string: removing any
 * one more character makes it round-trip (ddmin over characters, bounded number of tests).
 * *out is malloc'ed. If s round-trips, *out is a copy of s. */
hsd_status hsd_inj_minimize(const hsd_tokenizer *tok, const char *s, size_t n, char **out,
                            size_t *out_len);

/* Decides the cause of a (minimal) non-injective string by experiment, in this order: an added
 * token's content present and encoded as that token (a literal "<unk>" counts here); the unk
 * id produced; the tokenizer's
 * normalizer or NFC/NFKC/NFKC-casefold/accent stripping maps s and its decoding to the same
 * string; they differ only in whitespace/control characters; U+FFFD appeared; else other. */
hsd_status hsd_inj_classify(const hsd_tokenizer *tok, const char *s, size_t n, hsd_inj_cause *cause);

#endif
