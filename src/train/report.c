/*
 * OUT/report.html from OUT/train.jsonl, self-contained (inline SVG, no
 * network): loss and learning-rate curves, validation Dice per class over
 * the steps, throughput and data wait, memory per category, the device and
 * the config, and a gallery of validation images (true masks | predicted,
 * the PNGs of OUT/gallery embedded as base64).  `tiletrain report OUT` and
 * the end of `train` write it.
 */
#include "train/report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/memstats.h"
#include "core/status.h"
#include "infer/overlay.h"

typedef struct series {
    double *x, *y;
    int n, cap;
} series;

static void push(series *s, double x, double y)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 256;
        double *nx = tt_realloc(s->x, sizeof *nx * (size_t)cap), *ny = tt_realloc(s->y, sizeof *ny * (size_t)cap);
        if (!nx || !ny) {
            free(nx ? nx : s->x), free(ny ? ny : s->y);
            *s = (series){0};
            return;
        }
        s->x = nx, s->y = ny, s->cap = cap;
    }
    s->x[s->n] = x, s->y[s->n] = y, s->n++;
}

static const char *colours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

/* A line chart of several series as inline SVG. */
/* An exponential average over s (TensorBoard's: debiased, so the first
 * steps are not pulled to 0) over about `span` points; the caller frees it. */
static series smoothed(const series *s, int span)
{
    series out = {0};
    double beta = 1.0 - 2.0 / (span + 1), avg = 0, weight = 0;
    for (int i = 0; i < s->n; i++) {
        avg = beta * avg + (1 - beta) * s->y[i];
        weight = beta * weight + (1 - beta);
        push(&out, s->x[i], avg / weight);
    }
    return out;
}

static void chart(FILE *f, const char *title, series *s, const char *const *names,
                  const char *const *line_colours, int count, int log_y)
{
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int k = 0; k < count; k++)
        for (int i = 0; i < s[k].n; i++) {
            double y = log_y ? log10(fmax(s[k].y[i], 1e-12)) : s[k].y[i];
            if (!isfinite(y)) continue;
            x0 = fmin(x0, s[k].x[i]), x1 = fmax(x1, s[k].x[i]);
            y0 = fmin(y0, y), y1 = fmax(y1, y);
        }
    fprintf(f, "<h3>%s</h3>\n", title);
    if (!(x1 >= x0)) {
        fprintf(f, "<p>(no data yet)</p>\n");
        return;
    }
    if (x1 == x0) x1 = x0 + 1;
    if (y1 == y0) { /* a constant: centred, with a margin of its own size */
        double pad = y0 != 0 ? 0.1 * fabs(y0) : 1.0;
        y0 -= pad, y1 += pad;
    }
    const int W = 720, H = 240, L = 60, B = 30;
    fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' "
            "font-family='sans-serif' font-size='11'>\n", W + 180, H + B + 10);
    fprintf(f, "<rect x='%d' y='5' width='%d' height='%d' fill='none' stroke='#999'/>\n", L, W - L, H);
    for (int t = 0; t <= 4; t++) {
        double v = y0 + (y1 - y0) * t / 4;
        double y = 5 + H - (double)H * t / 4;
        fprintf(f, "<text x='%d' y='%.1f' text-anchor='end'>%.3g</text>\n", L - 4, y + 4,
                log_y ? pow(10, v) : v);
        fprintf(f, "<text x='%.1f' y='%d' text-anchor='middle'>%.0f</text>\n",
                L + (W - L) * t / 4.0, H + B, x0 + (x1 - x0) * t / 4);
    }
    for (int k = 0; k < count; k++) {
        if (!s[k].n) continue;
        const char *colour = line_colours ? line_colours[k] : colours[k % 10];
        fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='1.5' points='", colour);
        for (int i = 0; i < s[k].n; i++) {
            double y = log_y ? log10(fmax(s[k].y[i], 1e-12)) : s[k].y[i];
            if (!isfinite(y)) continue;
            fprintf(f, "%.1f,%.1f ", L + (W - L) * (s[k].x[i] - x0) / (x1 - x0),
                    5 + H - H * (y - y0) / (y1 - y0));
        }
        fprintf(f, "'/>\n<text x='%d' y='%d' fill='%s'>%s</text>\n", W + 10, 20 + 16 * k,
                colour, names[k]);
    }
    fprintf(f, "</svg>\n");
}

/* The file at `path` as base64 (RFC 4648), or 0 if it cannot be read. */
static int write_base64_file(FILE *f, const char *path)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    FILE *in = fopen(path, "rb");
    if (!in) return 0;
    tt_status unreadable = tt_read_fault("the gallery image", path);
    if (unreadable) { /* as a missing image: captioned so */
        tt_status_free(unreadable);
        fclose(in);
        return 0;
    }
    unsigned char b[3];
    size_t n;
    while ((n = fread(b, 1, 3, in)) > 0) {
        unsigned v = (unsigned)b[0] << 16 | (n > 1 ? (unsigned)b[1] << 8 : 0) | (n > 2 ? b[2] : 0);
        fputc(digits[v >> 18 & 63], f);
        fputc(digits[v >> 12 & 63], f);
        fputc(n > 1 ? digits[v >> 6 & 63] : '=', f);
        fputc(n > 2 ? digits[v & 63] : '=', f);
        if (n < 3) break;
    }
    int whole = !ferror(in);
    fclose(in);
    return whole;
}

static void html_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else fputc(*s, f);
    }
}

/* <img> of OUT_DIR/FILE inline (base64); 0 when the file is missing. */
static int embed_png(FILE *f, const char *out_dir, const char *file, const char *style)
{
    char png[8192];
    snprintf(png, sizeof png, "%s/%s", out_dir, file);
    fprintf(f, "<img style='%s' alt='", style);
    html_text(f, file);
    fprintf(f, "' src='data:image/png;base64,");
    int ok = write_base64_file(f, png);
    fprintf(f, "'>");
    return ok;
}

/* The post-processing search of the last validation: per class the
 * threshold and minimum size chosen, the competition's Dice with them and
 * with the run's own, and the gain. */
static void postprocess_table(FILE *f, const cJSON *line)
{
    const cJSON *pp = cJSON_GetObjectItem(line, "postprocess"), *c;
    if (!pp) return;
    fprintf(f, "<h2>Post-processing</h2>\n<p>Searched on the validation images at step %.0f "
               "(their full-resolution probabilities), scored by the competition's Dice (an "
               "empty truth and an empty prediction score 1); the run's own: threshold %g, "
               "minimum size %.0f. The checkpoints keep the choices; predict and eval use them "
               "unless --threshold or --min-size is given.</p>\n<table><tr><th>class</th>"
               "<th>threshold</th><th>min size</th><th>Dice</th><th>with the run's</th>"
               "<th>gain</th></tr>\n",
            cJSON_GetNumberValue(cJSON_GetObjectItem(line, "step")),
            cJSON_GetNumberValue(cJSON_GetObjectItem(pp, "threshold_default")),
            cJSON_GetNumberValue(cJSON_GetObjectItem(pp, "min_size_default")));
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(pp, "classes"))
    {
        double dice = cJSON_GetNumberValue(cJSON_GetObjectItem(c, "dice"));
        double was = cJSON_GetNumberValue(cJSON_GetObjectItem(c, "default_dice"));
        fprintf(f, "<tr><td style='text-align:left'>");
        html_text(f, cJSON_GetStringValue(cJSON_GetObjectItem(c, "name")));
        fprintf(f, "</td><td>%.2f</td><td>%.0f</td><td>%.4f</td><td>%.4f</td><td>%+.4f</td></tr>\n",
                cJSON_GetNumberValue(cJSON_GetObjectItem(c, "threshold")),
                cJSON_GetNumberValue(cJSON_GetObjectItem(c, "min_size")), dice, was, dice - was);
    }
    double mean = cJSON_GetNumberValue(cJSON_GetObjectItem(pp, "mean_dice"));
    double was = cJSON_GetNumberValue(cJSON_GetObjectItem(pp, "default_mean_dice"));
    fprintf(f, "<tr><th style='text-align:left'>mean</th><th></th><th></th><th>%.4f</th>"
               "<th>%.4f</th><th>%+.4f</th></tr></table>\n", mean, was, mean - was);
}

/* The recipe: every option not at its default, with where its value came
 * from (a flag, the plan, ...) and the reason; the defaults folded. */
static void recipe_table(FILE *f, const cJSON *rows)
{
    const cJSON *row;
    if (!cJSON_IsArray(rows)) return;
    fprintf(f, "<table><tr><th>option</th><th>value</th><th>from</th><th>why</th></tr>\n");
    for (int pass = 0; pass < 2; pass++) {
        int defaults = 0;
        if (pass == 1)
            fprintf(f, "</table>\n<details><summary>Options at their defaults</summary><p>");
        cJSON_ArrayForEach(row, rows)
        {
            const char *option = cJSON_GetStringValue(cJSON_GetObjectItem(row, "option"));
            const char *value = cJSON_GetStringValue(cJSON_GetObjectItem(row, "value"));
            const char *from = cJSON_GetStringValue(cJSON_GetObjectItem(row, "from"));
            const char *reason = cJSON_GetStringValue(cJSON_GetObjectItem(row, "reason"));
            if (!option || !value || !from) continue;
            int is_default = strcmp(from, "default") == 0;
            if (is_default != pass) continue;
            if (pass == 1) {
                fprintf(f, "%s--", defaults++ ? ", " : "");
                html_text(f, option);
                fprintf(f, " %s", value[0] ? "" : "(unset)");
                html_text(f, value);
                continue;
            }
            fprintf(f, "<tr><td style='text-align:left'>--");
            html_text(f, option);
            fprintf(f, "</td><td style='text-align:left'>");
            html_text(f, value);
            fprintf(f, "</td><td style='text-align:left'>");
            html_text(f, from);
            fprintf(f, "</td><td style='text-align:left'>");
            html_text(f, reason ? reason : "");
            fprintf(f, "</td></tr>\n");
        }
    }
    fprintf(f, "</p></details>\n");
}

tt_status tt_report_write(const char *out_dir)
{
    char path[4096], html[4096];
    snprintf(path, sizeof path, "%s/train.jsonl", out_dir);
    snprintf(html, sizeof html, "%s/report.html", out_dir);
    FILE *in = fopen(path, "r");
    if (!in)
        return tt_error_new(TT_ERR_IO, "cannot read '%s': %s; give the --out folder of a training run",
                            path, strerror(errno));
    tt_status unreadable = tt_read_fault("the training log", path);
    if (unreadable) {
        fclose(in);
        return unreadable;
    }
    series loss = {0}, lr = {0}, speed = {0}, wait = {0}, mean_dice = {0}, scale = {0};
    series raw_dice = {0}; /* --ema: the raw weights' mean Dice */
    enum { TERMS_MAX = 4 };
    series terms[TERMS_MAX] = {{0}}; /* a --loss of several terms: each one's value */
    char *term_names[TERMS_MAX] = {0};
    int term_count = 0;
    int overflows = 0; /* windows skipped at a loss scale */
    series dice[10] = {{0}};
    char *class_names[10] = {0};
    int classes = 0;
    cJSON *start = NULL, *memory = NULL, *gallery = NULL, *recipe = NULL, *augment = NULL;
    cJSON *postprocess = NULL; /* the last validation's search */
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lines = 0;
    while ((len = getline(&line, &cap, in)) > 0) {
        cJSON *o = cJSON_Parse(line);
        lines++;
        if (!o) continue; /* a line cut by a crash */
        cJSON *step = cJSON_GetObjectItem(o, "step");
        cJSON *val = cJSON_GetObjectItem(o, "validation");
        /* lines of one kind kept whole, the last of each counting (a
         * resume's start replaces the first's) */
        struct { const char *key; cJSON **kept; } kinds[] = {
            {"device", &start}, {"postprocess", &postprocess}, {"augment", &augment},
            {"recipe", &recipe}, {"memory", &memory}, {"gallery", &gallery},
        };
        int kept = 0;
        for (size_t k = 0; k < sizeof kinds / sizeof *kinds && !kept; k++)
            if (cJSON_GetObjectItem(o, kinds[k].key)) {
                cJSON_Delete(*kinds[k].kept);
                *kinds[k].kept = o;
                kept = 1;
            }
        if (kept) continue;
        if (step && val) {
            push(&mean_dice, step->valuedouble, cJSON_GetObjectItem(val, "mean_dice")->valuedouble);
            cJSON *raw = cJSON_GetObjectItem(o, "raw_mean_dice");
            if (cJSON_IsNumber(raw)) push(&raw_dice, step->valuedouble, raw->valuedouble);
            cJSON *cl = cJSON_GetObjectItem(val, "classes"), *c;
            int k = 0;
            cJSON_ArrayForEach(c, cl)
            {
                if (k >= 10) break;
                cJSON *name = cJSON_GetObjectItem(c, "name"), *d = cJSON_GetObjectItem(c, "dice");
                if (!class_names[k] && cJSON_IsString(name)) class_names[k] = tt_strdup(name->valuestring);
                if (cJSON_IsNumber(d)) push(&dice[k], step->valuedouble, d->valuedouble);
                k++;
            }
            if (k > classes) classes = k;
        } else if (step) {
            cJSON *l = cJSON_GetObjectItem(o, "loss"), *r = cJSON_GetObjectItem(o, "lr");
            cJSON *s = cJSON_GetObjectItem(o, "images_per_s"), *w = cJSON_GetObjectItem(o, "data_wait_s");
            if (cJSON_IsNumber(l)) push(&loss, step->valuedouble, l->valuedouble);
            if (cJSON_IsNumber(r)) push(&lr, step->valuedouble, r->valuedouble);
            if (cJSON_IsNumber(s)) push(&speed, step->valuedouble, s->valuedouble);
            if (cJSON_IsNumber(w)) push(&wait, step->valuedouble, w->valuedouble);
            cJSON *term;
            int k = 0;
            cJSON_ArrayForEach(term, cJSON_GetObjectItem(o, "losses"))
            {
                if (k == TERMS_MAX || !cJSON_IsNumber(term)) break;
                if (!term_names[k] && term->string) term_names[k] = tt_strdup(term->string);
                push(&terms[k++], step->valuedouble, term->valuedouble);
            }
            if (k > term_count) term_count = k;
            cJSON *ls = cJSON_GetObjectItem(o, "loss_scale");
            if (cJSON_IsNumber(ls)) {
                push(&scale, step->valuedouble, ls->valuedouble);
                overflows += cJSON_IsTrue(cJSON_GetObjectItem(o, "skipped"));
            }
        }
        cJSON_Delete(o);
    }
    free(line);
    tt_status status = NULL;
    char *page = NULL; /* the page in memory, then written atomically */
    size_t page_size = 0;
    FILE *f = NULL;
    if (ferror(in)) /* a log read in part would draw a shorter run: no page */
        status = tt_error_new(TT_ERR_IO, "cannot read '%s': %s; check the disk, then run "
                              "`tiletrain report %s`", path, strerror(errno), out_dir);
    fclose(in);
    if (status) goto cleanup;
    f = open_memstream(&page, &page_size);
    if (!f) {
        status = tt_error_new(TT_ERR_IO, "cannot write '%s': %s", html, strerror(errno));
        goto cleanup;
    }
    fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>tiletrain report</title>\n"
               "<style>body{font-family:sans-serif;margin:2em;max-width:960px}"
               "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
               "th{background:#f3f3f3}</style></head><body>\n<h1>tiletrain training report</h1>\n<p>");
    html_text(f, out_dir);
    fprintf(f, " &mdash; %d log lines, %d steps</p>\n", lines, loss.n);
    if (start) {
        cJSON *dev = cJSON_GetObjectItem(start, "device");
        cJSON *name = cJSON_GetObjectItem(dev, "name"), *api = cJSON_GetObjectItem(dev, "backend");
        fprintf(f, "<h2>Device and recipe</h2>\n<p>");
        html_text(f, cJSON_IsString(name) ? name->valuestring : "?");
        fprintf(f, " (");
        html_text(f, cJSON_IsString(api) ? api->valuestring : "?");
        fprintf(f, ")</p>\n");
    }
    recipe_table(f, cJSON_GetObjectItem(recipe, "recipe"));
    if (start) {
        char *d = cJSON_Print(start);
        fprintf(f, "<details><summary>The log's first line (device and configuration)</summary><pre>");
        html_text(f, d ? d : "");
        fprintf(f, "</pre></details>\n");
        cJSON_free(d);
    }
    cJSON *aug = cJSON_GetObjectItem(augment, "augment");
    if (aug) { /* what the network was shown */
        fprintf(f, "<h2>Augmentation</h2>\n<p><code>--augment ");
        html_text(f, cJSON_GetStringValue(cJSON_GetObjectItem(aug, "spec")));
        fprintf(f, "</code>: the run's first crops, each as drawn | with its masks over it "
                   "(dark: ignored, from outside the image).</p>\n");
        cJSON *file;
        cJSON_ArrayForEach(file, cJSON_GetObjectItem(aug, "gallery"))
        {
            if (cJSON_IsString(file))
                embed_png(f, out_dir, file->valuestring, "max-width:48%;margin:0 1% 1em 0");
            fprintf(f, "\n");
        }
    }
    fprintf(f, "<h2>Training</h2>\n");
    /* the raw points in grey, an exponential average over them in colour
     * (TensorBoard's: debiased, so the first steps are not pulled to 0) */
    int span = loss.n / 30 > 5 ? loss.n / 30 : 5;
    series smooth = smoothed(&loss, span);
    char smooth_name[96];
    snprintf(smooth_name, sizeof smooth_name, "smoothed (EMA over ~%d steps)", span);
    const char *loss_names[] = {"loss (normalised over the window)", smooth_name};
    const char *loss_colours[] = {"#c8c8c8", colours[0]};
    series ls[2] = {loss, smooth};
    chart(f, "Loss", ls, loss_names, loss_colours, 2, 1);
    free(smooth.x), free(smooth.y);
    if (term_count > 1) { /* --loss of several terms: each smoothed, before its weight */
        series each[TERMS_MAX];
        const char *each_name[TERMS_MAX];
        for (int k = 0; k < term_count; k++) {
            each[k] = smoothed(&terms[k], span);
            each_name[k] = term_names[k] ? term_names[k] : "?";
        }
        chart(f, "Loss terms (smoothed, unweighted)", each, each_name, NULL, term_count, 1);
        for (int k = 0; k < term_count; k++) free(each[k].x), free(each[k].y);
    }
    const char *lr_name[] = {"learning rate"};
    chart(f, "Learning rate", &lr, lr_name, NULL, 1, 0);
    const char *speed_name[] = {"images/s", "data wait (s)"};
    series sw[2] = {speed, wait};
    chart(f, "Throughput and data wait", sw, speed_name, NULL, 2, 0);
    if (scale.n) { /* dynamic loss scaling (train/loss_scale.h) */
        fprintf(f, "<p>Dynamic loss scale: %g at the last step; %d window%s skipped on an "
                   "overflow (the scale halved).</p>\n", scale.y[scale.n - 1], overflows,
                overflows == 1 ? "" : "s");
        const char *scale_name[] = {"loss scale"};
        chart(f, "Loss scale", &scale, scale_name, NULL, 1, 1);
    }
    fprintf(f, "<h2>Validation</h2>\n");
    series vd[12];
    const char *vn[12];
    vd[0] = mean_dice, vn[0] = raw_dice.n ? "mean Dice (EMA weights)" : "mean Dice";
    for (int k = 0; k < classes; k++) vd[k + 1] = dice[k], vn[k + 1] = class_names[k] ? class_names[k] : "?";
    /* the classes in the colours the gallery draws them in; the mean in black */
    char hex[11][8];
    const char *vc[12];
    snprintf(hex[0], sizeof hex[0], "#000000");
    for (int k = 0; k < classes; k++) {
        const uint8_t *rgb = tt_overlay_colour(k);
        snprintf(hex[k + 1], sizeof hex[k + 1], "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
    }
    for (int k = 0; k <= classes; k++) vc[k] = hex[k];
    int drawn = classes + 1;
    if (raw_dice.n) /* --ema: the raw weights' mean beside the average's */
        vd[drawn] = raw_dice, vn[drawn] = "mean Dice (raw weights)", vc[drawn] = "#999999", drawn++;
    chart(f, "Dice per class", vd, vn, vc, drawn, 0);
    cJSON *files = cJSON_GetObjectItem(gallery, "gallery"), *file;
    if (cJSON_GetArraySize(files) > 0) {
        fprintf(f, "<h3>Validation images at step %lld</h3>\n<p>Left: the true masks; right: the "
                   "prediction (full resolution, sliding window). Colours:",
                (long long)cJSON_GetNumberValue(cJSON_GetObjectItem(gallery, "step")));
        for (int k = 0; k < classes; k++) {
            const uint8_t *c = tt_overlay_colour(k);
            fprintf(f, " <span style='background:rgb(%d,%d,%d);padding:0 6px'>&nbsp;</span> ", c[0],
                    c[1], c[2]);
            html_text(f, class_names[k] ? class_names[k] : "?");
        }
        fprintf(f, "</p>\n");
        cJSON_ArrayForEach(file, files)
        {
            if (!cJSON_IsString(file)) continue;
            fprintf(f, "<figure style='margin:0 0 1em 0'>");
            int ok = embed_png(f, out_dir, file->valuestring, "max-width:100%");
            fprintf(f, "<figcaption>");
            html_text(f, file->valuestring);
            fprintf(f, "%s</figcaption></figure>\n", ok ? "" : " (missing)");
        }
    }
    postprocess_table(f, postprocess);
    if (memory) {
        cJSON *m = cJSON_GetObjectItem(memory, "memory");
        cJSON *cats = cJSON_GetObjectItem(m, "categories"), *c;
        /* the storage of what the backward reads (--precision), beside the figures */
        cJSON *precision = cJSON_GetObjectItem(cJSON_GetObjectItem(start, "config"), "precision");
        fprintf(f, "<h2>Device memory</h2>\n<p>Activations kept for the backward stored in ");
        html_text(f, cJSON_IsString(precision) ? precision->valuestring : "fp32");
        fprintf(f, ".</p>\n<table><tr><th>category</th><th>peak</th></tr>\n");
        char buf[32];
        cJSON_ArrayForEach(c, cats)
        {
            cJSON *peak = cJSON_GetObjectItem(c, "peak_bytes");
            fprintf(f, "<tr><td>%s</td><td>%s</td></tr>\n", c->string,
                    tt_format_bytes(peak ? (uint64_t)peak->valuedouble : 0, buf, sizeof buf));
        }
        cJSON *total = cJSON_GetObjectItem(m, "peak_bytes");
        fprintf(f, "<tr><th>peak total</th><th>%s</th></tr></table>\n",
                tt_format_bytes(total ? (uint64_t)total->valuedouble : 0, buf, sizeof buf));
    }
    fprintf(f, "</body></html>\n");
    if (fclose(f) != 0)
        status = tt_error_new(TT_ERR_IO, "cannot write '%s': %s", html, strerror(errno));
    else if ((status = tt_file_save_atomic(html, page, page_size)))
        tt_error_prefix(status, "cannot write '%s'", html);
    free(page);
cleanup:
    cJSON_Delete(start);
    cJSON_Delete(recipe);
    cJSON_Delete(augment);
    cJSON_Delete(postprocess);
    cJSON_Delete(memory);
    cJSON_Delete(gallery);
    free(loss.x), free(loss.y), free(lr.x), free(lr.y), free(speed.x), free(speed.y);
    for (int k = 0; k < TERMS_MAX; k++) free(terms[k].x), free(terms[k].y), free(term_names[k]);
    free(wait.x), free(wait.y), free(mean_dice.x), free(mean_dice.y), free(scale.x), free(scale.y);
    free(raw_dice.x), free(raw_dice.y);
    for (int k = 0; k < 10; k++) free(dice[k].x), free(dice[k].y), free(class_names[k]);
    return status;
}

