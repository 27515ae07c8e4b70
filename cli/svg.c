#include "cli/svg.h"

void hsd_svg_begin(FILE *f, double w, double h) {
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            w, h, w, h);
}

void hsd_svg_end(FILE *f) { fputs("</svg>\n", f); }

/* one decimal is plenty for screen coordinates and keeps the file small */
void hsd_svg_rect(FILE *f, double x, double y, double w, double h, const char *fill) {
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x, y, w, h,
            fill);
}

void hsd_svg_line(FILE *f, double x1, double y1, double x2, double y2, const char *stroke) {
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", x1, y1, x2,
            y2, stroke);
}

void hsd_svg_text(FILE *f, double x, double y, double size, const char *anchor, const char *text) {
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\" text-anchor=\"%s\">", x, y, size,
            anchor);
    for (const char *p = text; *p; p++) {
        if (*p == '<') fputs("&lt;", f);
        else if (*p == '>') fputs("&gt;", f);
        else if (*p == '&') fputs("&amp;", f);
        else fputc(*p, f);
    }
    fputs("</text>\n", f);
}
