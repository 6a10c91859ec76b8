/* --precision auto: timing, the parity check and the precision-db; see
 * precision_auto.h. */
#include "train/precision_auto.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/status.h"
#include "train/probe.h"

#define DB_FILE "choices.txt"

/* The configuration a choice holds for: device, architecture, tile, batch. */
static void db_key(const tt_backend *be, const tt_step_config *c, char *buf, size_t size)
{
    char spec[512];
    tt_model_spec_json(&c->model, spec, sizeof spec);
    for (char *p = spec; *p; p++)
        if (*p == '\t' || *p == '\n') *p = ' ';
    snprintf(buf, size, "%s %016llx %s %dx%d b%d", be->ops->name,
             (unsigned long long)tt_device_key(&be->device), spec, c->height, c->width,
             c->micro_batch);
}

static int db_path(char *buf, size_t size)
{
    char dir[1024];
    tt_status s = tt_cache_path("precision-db", dir, sizeof dir);
    if (s) {
        tt_status_free(s);
        return 0;
    }
    return snprintf(buf, size, "%s/%s", dir, DB_FILE) < (int)size;
}

/* The whole db file in *text (malloc'd, NUL-terminated; NULL when there is
 * none).  A file that cannot be read (EIO, TT_FAULT=read, no host memory)
 * is an error naming it; the callers take it as no file, warning. */
static tt_status db_read(char **text)
{
    char path[1100];
    *text = NULL;
    if (!db_path(path, sizeof path)) return NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    tt_status status = tt_read_fault("the precision-db", path);
    long size = -1;
    if (!status && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (!status && size >= 0 && fseek(f, 0, SEEK_SET) == 0 && !(*text = tt_malloc((size_t)size + 1)))
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "reading the precision-db '%s': out of host "
                              "memory", path);
    else if (!status && (!*text || fread(*text, 1, (size_t)size, f) != (size_t)size))
        status = tt_error_new(TT_ERR_IO, "cannot read the precision-db '%s': %s", path,
                              strerror(errno));
    fclose(f);
    if (status) {
        free(*text);
        *text = NULL;
        return status;
    }
    (*text)[size] = '\0';
    return NULL;
}

/* The db's text, or NULL: none, or one that cannot be read (a warning:
 * the choice is timed again and the file written anew). */
static char *db_text(void)
{
    char *text = NULL;
    tt_status s = db_read(&text);
    if (s)
        fprintf(stderr, "tiletrain: warning: precision-db ignored: %s; the precisions are "
                        "timed again\n", tt_status_message(s));
    tt_status_free(s);
    return text;
}

/* The precision stored for `key`; 0 when none (or unreadable). */
static int db_find(const char *key, tt_precision *out)
{
    char *text = db_text();
    int found = 0;
    for (char *line = text; line && *line && !found;) {
        char *end = strchr(line, '\n');
        if (end) *end = '\0';
        char *tab = strrchr(line, '\t');
        if (tab && (size_t)(tab - line) == strlen(key) && strncmp(line, key, strlen(key)) == 0) {
            tt_status s = tt_precision_parse("precision-db", tab + 1, out);
            found = !s && *out != TT_PRECISION_AUTO;
            tt_status_free(s);
        }
        line = end ? end + 1 : NULL;
    }
    free(text);
    return found;
}

/* Stores the choice for `key`, replacing an older one; a failure is only
 * reported: the run goes on with its choice. */
static void db_store(const char *key, tt_precision chosen)
{
    char path[1100], dir[1024];
    tt_status s = tt_cache_path("precision-db", dir, sizeof dir);
    if (!s) s = tt_make_dirs(dir);
    if (s || !db_path(path, sizeof path)) {
        tt_status_free(s);
        return;
    }
    char *old = NULL;
    tt_status_free(db_read(&old)); /* unreadable: written anew, as a missing file */
    size_t cap = (old ? strlen(old) : 0) + strlen(key) + 16, used = 0;
    char *text = tt_malloc(cap);
    if (!text) {
        free(old);
        return;
    }
    for (char *line = old; line && *line;) {
        char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        int same = len > strlen(key) && strncmp(line, key, strlen(key)) == 0 && line[strlen(key)] == '\t';
        if (!same) {
            memcpy(text + used, line, len);
            used += len;
            text[used++] = '\n';
        }
        line = end ? end + 1 : NULL;
    }
    used += (size_t)snprintf(text + used, cap - used, "%s\t%s\n", key, tt_precision_name(chosen));
    s = tt_file_save_atomic(path, text, used);
    if (s) fprintf(stderr, "tiletrain: warning: precision-db not written: %s\n", tt_status_message(s));
    tt_status_free(s);
    free(text);
    free(old);
}

/* The gradient arena after one micro-batch of fixed random images and 0/1
 * targets (BCE, as bench), the model initialised from config->seed;
 * *grads malloc'd, *count floats. */
static tt_status parity_grads(tt_backend *be, const tt_step_config *config, float **grads,
                              size_t *count)
{
    *grads = NULL;
    tt_step_config c;
    tt_step *s = NULL;
    float *image = NULL;
    uint8_t *labels = NULL;
    tt_status status = tt_probe_multi_label(config, 0x2545f4914f6cdd1dULL, "precision auto", &c,
                                            &image, &labels);
    if (status) return status;
    int b = c.micro_batch;
    TT_CHECK(tt_step_create(be, &c, &s));
    TT_CHECK(tt_step_begin(s));
    TT_CHECK(tt_step_upload(s, image, labels, b));
    TT_CHECK(tt_step_micro_batch(s, b, NULL, 1.0f));
    *count = s->model->params->trainable_floats;
    *grads = tt_malloc(*count * sizeof **grads);
    if (!*grads) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "precision auto: out of host memory");
        goto cleanup;
    }
    TT_CHECK(tt_read(be, *grads, tt_mem_of(s->model->grad_buffer), *count * sizeof **grads));
cleanup:
    if (status) free(*grads), *grads = NULL;
    free(image);
    free(labels);
    tt_step_destroy(s);
    return status;
}

static double relative_l2(const float *got, const float *want, size_t n)
{
    double d2 = 0, r2 = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - want[i];
        d2 += d * d, r2 += (double)want[i] * want[i];
    }
    return r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
}

static void describe(tt_precision_choice *out)
{
    int used = snprintf(out->reason, sizeof out->reason, "%s:", tt_precision_name(out->chosen));
    for (int k = 0; k < out->trial_count && used < (int)sizeof out->reason; k++) {
        const tt_precision_trial *t = &out->trials[k];
        used += snprintf(out->reason + used, sizeof out->reason - used, " %s %.2f images/s",
                         tt_precision_name(t->precision), t->images_per_second);
        if (k > 0 && used < (int)sizeof out->reason)
            used += snprintf(out->reason + used, sizeof out->reason - used,
                             " (gradients %.1e of fp32's, %s)", t->grad_error,
                             t->passed ? "passes" : "fails the parity check");
        if (k + 1 < out->trial_count && used < (int)sizeof out->reason)
            used += snprintf(out->reason + used, sizeof out->reason - used, ";");
    }
    if (used < (int)sizeof out->reason)
        snprintf(out->reason + used, sizeof out->reason - used, "%s",
                 out->chosen == TT_PRECISION_FP32 ? "; 16 bits only when 5% faster and passing"
                                                  : "; the fastest that passes");
}

tt_status tt_precision_auto(tt_backend *be, tt_step_config *config, tt_precision_choice *out)
{
    memset(out, 0, sizeof *out);
    out->chosen = config->model.precision;
    if (config->model.precision != TT_PRECISION_AUTO) return NULL;
    tt_step_config c = *config;
    char key[1024];
    c.model.precision = TT_PRECISION_FP32;
    db_key(be, &c, key, sizeof key);
    if (db_find(key, &out->chosen)) {
        out->from_cache = 1;
        snprintf(out->reason, sizeof out->reason, "%s: chosen before on this device for this "
                 "configuration (precision-db)", tt_precision_name(out->chosen));
        config->model.precision = out->chosen;
        return NULL;
    }
    /* the modes the model offers: a 16-bit spec it refuses is left out */
    tt_precision modes[3] = {TT_PRECISION_FP32, TT_PRECISION_FP16, TT_PRECISION_BF16};
    int count = 0;
    for (int k = 0; k < 3; k++) {
        c.model.precision = modes[k];
        tt_status s = tt_model_spec_check(&c.model);
        if (!s) out->trials[count++].precision = modes[k];
        tt_status_free(s);
    }
    out->trial_count = count;
    /* speed: two rounds, alternating, each mode's best */
    for (int round = 0; round < 2; round++)
        for (int k = 0; k < count; k++) {
            c.model.precision = out->trials[k].precision;
            tt_bench_result r;
            TT_TRY(tt_probe_bench(be, &c, 1, 1, 2, &r));
            double rate = r.seconds > 0 ? r.images / r.seconds : 0;
            if (rate > out->trials[k].images_per_second) out->trials[k].images_per_second = rate;
        }
    /* parity: each 16-bit mode's gradients against fp32's */
    float *reference = NULL;
    size_t n = 0;
    c.model.precision = TT_PRECISION_FP32;
    TT_TRY(parity_grads(be, &c, &reference, &n));
    out->trials[0].passed = 1;
    for (int k = 1; k < count; k++) {
        float *grads = NULL;
        size_t m = 0;
        c.model.precision = out->trials[k].precision;
        tt_status s = parity_grads(be, &c, &grads, &m);
        if (s) {
            free(reference);
            return s;
        }
        out->trials[k].grad_error = m == n ? relative_l2(grads, reference, n) : INFINITY;
        out->trials[k].passed = out->trials[k].grad_error <= TT_PRECISION_PARITY;
        free(grads);
    }
    free(reference);
    /* the fastest that passes; 16 bits only at 5% faster than fp32 */
    int best = 0;
    for (int k = 1; k < count; k++)
        if (out->trials[k].passed &&
            out->trials[k].images_per_second >= 1.05 * out->trials[0].images_per_second &&
            out->trials[k].images_per_second > out->trials[best].images_per_second)
            best = k;
    out->chosen = out->trials[best].precision;
    describe(out);
    db_store(key, out->chosen);
    config->model.precision = out->chosen;
    return NULL;
}

tt_status tt_precision_parity(tt_backend *be, const tt_step_config *config,
                              tt_precision precision, double *error)
{
    *error = 0;
    if (precision == TT_PRECISION_FP32) return NULL;
    tt_step_config c = *config;
    float *reference = NULL, *grads = NULL;
    size_t n = 0, m = 0;
    c.model.precision = TT_PRECISION_FP32;
    tt_status status = parity_grads(be, &c, &reference, &n);
    c.model.precision = precision;
    if (!status) status = parity_grads(be, &c, &grads, &m);
    if (!status) *error = m == n ? relative_l2(grads, reference, n) : INFINITY;
    free(reference), free(grads);
    return status;
}
