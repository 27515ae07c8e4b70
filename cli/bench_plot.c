/* The bench generate plot: two panels (decode tokens/s, τ), one group of bars per
 * (direction, temperature), one bar per algorithm, over all prompt sets together. */
#include <stdio.h>

#include "cli/bench_generate.h"
#include "cli/svg.h"

static const char *colors[] = {"#888888", "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1"};

static const hsd_bench_cell *find(const hsd_bench_cell *cells, int n, int dir, float temp, int set, int algo) {
    for (int i = 0; i < n; i++)
        if (cells[i].dir == dir && cells[i].temp == temp && cells[i].set == set && cells[i].algo == algo)
            return &cells[i];
    return NULL;
}

static double value(const hsd_bench_cell *c, int panel) {
    if (!c || !c->runs) return -1;
    return panel == 0 ? c->dec_tps / c->runs : c->tau_all;
}

int hsd_bench_plot(const char *path, const hsd_bench_cell *cells, int n_cells,
                   const char *const *dir_names, int n_dirs, const float *temps, int n_temps,
                   const int *algos, int n_algos) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "hsd bench generate: cannot write %s\n", path);
        return 1;
    }
    int all = 0; /* the "all sets" rows have the largest set index */
    for (int i = 0; i < n_cells; i++)
        if (cells[i].set > all) all = cells[i].set;
    const double bar = 22, gap = 34, left = 60, top = 40, ph = 200, pgap = 70;
    int groups = n_dirs * n_temps;
    double gw = bar * n_algos + gap, W = left + groups * gw + 20, H = top + 2 * ph + pgap + 60;
    hsd_svg_begin(f, W, H);
    hsd_svg_text(f, W / 2, 20, 14, "middle",
                 "hsd bench generate, mean over all prompts");
    const char *titles[2] = {"decode tokens/s (1000 / TPOT)", "tau (tokens per target forward)"};
    for (int panel = 0; panel < 2; panel++) {
        double y0 = top + panel * (ph + pgap), maxv = 0;
        for (int g = 0; g < groups; g++)
            for (int a = 0; a < n_algos; a++) {
                double v = value(find(cells, n_cells, g / n_temps, temps[g % n_temps], all, algos[a]), panel);
                if (v > maxv) maxv = v;
            }
        if (maxv <= 0) maxv = 1;
        maxv *= 1.15; /* room for the value labels */
        hsd_svg_text(f, left, y0 + 12, 12, "start", titles[panel]);
        hsd_svg_line(f, left - 4, y0 + ph, W - 10, y0 + ph, "black");
        hsd_svg_line(f, left - 4, y0 + 16, left - 4, y0 + ph, "black");
        char lab[96];
        snprintf(lab, sizeof lab, panel == 0 ? "%.0f" : "%.2f", maxv / 1.15);
        hsd_svg_text(f, left - 8, y0 + ph - (ph - 20) / 1.15 + 4, 10, "end", lab);
        hsd_svg_text(f, left - 8, y0 + ph + 4, 10, "end", "0");
        for (int g = 0; g < groups; g++) {
            double gx = left + g * gw + gap / 2;
            for (int a = 0; a < n_algos; a++) {
                double v = value(find(cells, n_cells, g / n_temps, temps[g % n_temps], all, algos[a]), panel);
                if (v < 0) continue;
                double h = (ph - 20) * v / maxv, x = gx + a * bar;
                hsd_svg_rect(f, x, y0 + ph - h, bar - 3, h, colors[algos[a] % 6]);
                snprintf(lab, sizeof lab, panel == 0 ? "%.0f" : "%.2f", v);
                hsd_svg_text(f, x + (bar - 3) / 2, y0 + ph - h - 3, 8, "middle", lab);
            }
            snprintf(lab, sizeof lab, "%s, T=%g", dir_names[g / n_temps], temps[g % n_temps]);
            hsd_svg_text(f, gx + bar * n_algos / 2, y0 + ph + 14, 10, "middle", lab);
        }
    }
    double ly = H - 22;
    for (int a = 0; a < n_algos; a++) {
        static const char *names[] = {"ar", "sd (self)", "union", "tli", "slem", "slrs", "auto"};
        hsd_svg_rect(f, left + a * 95, ly - 10, 12, 12, colors[algos[a] % 6]);
        hsd_svg_text(f, left + a * 95 + 16, ly, 11, "start", names[algos[a] % 7]);
    }
    hsd_svg_end(f);
    fclose(f);
    return 0;
}
