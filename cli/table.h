/* One table row in two forms: aligned text for the terminal and a Markdown row for
 * bench/notes/ and bench/RESULTS.md, from the same formatted cells (so the two tables cannot
 * disagree). */
#ifndef HSD_CLI_TABLE_H
#define HSD_CLI_TABLE_H

#include <stdbool.h>
#include <stdio.h>

#define HSD_CLI_CELL 160 /* bytes per formatted cell (a direction name is up to 128) */

/* Prints n cells: text with width[k] per cell (negative: left-aligned), separated by a space,
 * or with md a Markdown row "| a | b |". */
void hsd_cli_table_row(FILE *f, char (*cells)[HSD_CLI_CELL], const int *width, int n, bool md);

#endif
