/* A minimal SVG writer for benchmark plots: rectangles, lines and text, nothing more, so the
 * CLI needs no plotting library and the committed plots stay small and diffable. */
#ifndef HSD_CLI_SVG_H
#define HSD_CLI_SVG_H

#include <stdio.h>

void hsd_svg_begin(FILE *f, double w, double h);
void hsd_svg_end(FILE *f);
void hsd_svg_rect(FILE *f, double x, double y, double w, double h, const char *fill);
void hsd_svg_line(FILE *f, double x1, double y1, double x2, double y2, const char *stroke);
/* anchor: "start", "middle" or "end"; the text is XML-escaped. */
void hsd_svg_text(FILE *f, double x, double y, double size, const char *anchor, const char *text);

#endif
