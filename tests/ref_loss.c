/* Double-precision references of the losses and reductions; see ref_loss.h. */
#include "ref_loss.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"

double ref_softmax_ce(const double *logits, const uint8_t *labels, int n, int c, int hw,
                      int ignore, long *count, double *dlogits)
{
    return ref_softmax_ce_weighted(logits, labels, n, c, hw, ignore, NULL, count, dlogits);
}

double ref_softmax_ce_weighted(const double *logits, const uint8_t *labels, int n, int c, int hw,
                               int ignore, const double *weights, long *count, double *dlogits)
{
    double sum = 0;
    long valid = 0;
    for (int i = 0; i < n; i++)
        for (int p = 0; p < hw; p++) {
            int label = labels[(size_t)i * hw + p];
            if (label == ignore || label >= c) continue;
            const double *x = logits + (size_t)i * c * hw + p;
            double m = x[0], e = 0, w = weights ? weights[label] : 1;
            for (int k = 1; k < c; k++) m = fmax(m, x[(size_t)k * hw]);
            for (int k = 0; k < c; k++) e += exp(x[(size_t)k * hw] - m);
            sum += w * (m + log(e) - x[(size_t)label * hw]);
            valid++;
            if (dlogits)
                for (int k = 0; k < c; k++)
                    dlogits[(size_t)i * c * hw + p + (size_t)k * hw] +=
                        w * (exp(x[(size_t)k * hw] - m) / e - (k == label));
        }
    if (count) *count = valid;
    return sum;
}

static double sigmoid(double x)
{
    if (x >= 0) return 1 / (1 + exp(-x));
    double e = exp(x);
    return e / (1 + e);
}

/* The BCE sum over `total` elements, element i of plane i / hw % c
 * weighted by weights[plane] (NULL: 1). */
static double bce_sum(const double *logits, const uint8_t *targets, size_t total, size_t hw,
                      int c, int ignore, const double *weights, long *count, double *dlogits)
{
    double sum = 0;
    long valid = 0;
    for (size_t i = 0; i < total; i++) {
        int t = targets[i];
        if (t == ignore || t > 1) continue;
        double x = logits[i], w = weights ? weights[i / hw % (size_t)c] : 1;
        sum += w * (fmax(x, 0) - x * t + log1p(exp(-fabs(x))));
        valid++;
        if (dlogits) dlogits[i] += w * (t ? -sigmoid(-x) : sigmoid(x));
    }
    if (count) *count = valid;
    return sum;
}

double ref_bce(const double *logits, const uint8_t *targets, size_t total, int ignore,
               long *count, double *dlogits)
{
    return bce_sum(logits, targets, total, 1, 1, ignore, NULL, count, dlogits);
}

double ref_bce_weighted(const double *logits, const uint8_t *targets, int n, int c, int hw,
                        int ignore, const double *weights, long *count, double *dlogits)
{
    return bce_sum(logits, targets, (size_t)n * c * hw, (size_t)hw, c, ignore, weights, count,
                   dlogits);
}

double ref_dice(const double *logits, const uint8_t *targets, int n, int c, int hw, int ignore,
                double smooth, double *dlogits)
{
    double sum = 0;
    for (size_t plane = 0; plane < (size_t)n * c; plane++) {
        const double *x = logits + plane * hw;
        const uint8_t *t = targets + plane * hw;
        double inter = 0, psum = 0, tsum = 0;
        for (int i = 0; i < hw; i++) {
            if (t[i] == ignore || t[i] > 1) continue;
            double p = sigmoid(x[i]);
            inter += p * t[i];
            psum += p;
            tsum += t[i];
        }
        double denom = psum + tsum + smooth;
        double dice = (2 * inter + smooth) / denom;
        sum += (1 - dice) / c;
        if (dlogits)
            for (int i = 0; i < hw; i++) {
                if (t[i] == ignore || t[i] > 1) continue;
                double slope = sigmoid(x[i]) * sigmoid(-x[i]);
                dlogits[plane * hw + i] += (dice - 2.0 * t[i]) / denom * slope / c;
            }
    }
    return sum;
}

double ref_sum_squares(const float *x, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += (double)x[i] * x[i];
    return sum;
}

tt_buffer *ref_upload_u8(const uint8_t *host, size_t n, const char *name)
{
    tt_buffer *buf = NULL;
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    TH_OK(tt_buffer_alloc(be, n, TT_MEM_OTHER, name, &buf));
    TH_OK(tt_write(be, tt_mem_of(buf), host, n));
    return buf;
}

tt_buffer *ref_loss_block(void)
{
    tt_buffer *buf = NULL;
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    TH_OK(tt_buffer_alloc(be, TT_LOSS_VALUE_BYTES, TT_MEM_OTHER, "loss.result", &buf));
    TH_OK(tt_loss_clear(be, tt_mem_of(buf)));
    return buf;
}

int ref_python(const char *script, const char *dir)
{
    if (access("/usr/bin/python3", X_OK) != 0) {
        printf("\n    skipped torch cross-check: /usr/bin/python3 not found\n");
        return 0;
    }
    char path[512], cmd[1200];
    snprintf(path, sizeof path, "%s/check.py", dir);
    ref_write_file(dir, "check.py", script, strlen(script));
    snprintf(cmd, sizeof cmd, TH_PYTHON " '%s' '%s'", path, dir);
    int rc = system(cmd);
    if (rc == -1 || !WIFEXITED(rc)) {
        printf("\n    skipped torch cross-check: could not run python3\n");
        return 0;
    }
    if (WEXITSTATUS(rc) == 77) {
        printf("\n    skipped torch cross-check: python3 has no torch\n");
        return 0;
    }
    CU_ASSERT_EQUAL(WEXITSTATUS(rc), 0); /* the script itself failed */
    return WEXITSTATUS(rc) == 0;
}

void ref_write_file(const char *dir, const char *name, const void *data, size_t bytes)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(data, 1, bytes, f), bytes);
    fclose(f);
}

void ref_read_file(const char *dir, const char *name, void *data, size_t bytes)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fread(data, 1, bytes, f), bytes);
    fclose(f);
}
