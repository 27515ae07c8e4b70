/* See table.h. */
#include "cli/table.h"

void hsd_cli_table_row(FILE *f, char (*cells)[HSD_CLI_CELL], const int *width, int n, bool md) {
    for (int k = 0; k < n; k++)
        if (md)
            fprintf(f, "| %s ", cells[k]);
        else
            fprintf(f, "%s%*s", k ? " " : "", width[k], cells[k]);
    fputs(md ? "|\n" : "\n", f);
}
