/* Double-precision references for group norm and batch norm; see ref_norm.h. */
#include "ref_norm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void ref_group_norm_forward(double *y, double *mean, double *rstd, const double *x,
                            const double *weight, const double *bias, int batch, int channels,
                            int height, int width, int groups, double eps)
{
    size_t hw = (size_t)height * width, per_group = (size_t)(channels / groups) * hw;
    for (int n = 0; n < batch; n++)
        for (int g = 0; g < groups; g++) {
            size_t base = ((size_t)n * channels + (size_t)g * (channels / groups)) * hw;
            double mu = 0, var = 0;
            for (size_t i = 0; i < per_group; i++) mu += x[base + i];
            mu /= (double)per_group;
            for (size_t i = 0; i < per_group; i++) var += (x[base + i] - mu) * (x[base + i] - mu);
            var /= (double)per_group;
            double r = 1 / sqrt(var + eps);
            if (mean) mean[n * groups + g] = mu;
            if (rstd) rstd[n * groups + g] = r;
            for (size_t i = 0; i < per_group; i++) {
                int c = g * (channels / groups) + (int)(i / hw);
                y[base + i] = (x[base + i] - mu) * r * (weight ? weight[c] : 1) +
                              (bias ? bias[c] : 0);
            }
        }
}

/* Per-channel mean and biased variance over (N, H, W). */
static void channel_stats(double *mean, double *var, const double *x, int batch, int channels,
                          size_t hw, int c)
{
    double mu = 0, v = 0;
    for (int n = 0; n < batch; n++)
        for (size_t k = 0; k < hw; k++) mu += x[((size_t)n * channels + c) * hw + k];
    mu /= (double)batch * hw;
    for (int n = 0; n < batch; n++)
        for (size_t k = 0; k < hw; k++) {
            double d = x[((size_t)n * channels + c) * hw + k] - mu;
            v += d * d;
        }
    *mean = mu;
    *var = v / ((double)batch * hw);
}

static void affine_per_channel(double *y, const double *x, const double *mean, const double *var,
                               const double *weight, const double *bias, int batch, int channels,
                               size_t hw, double eps)
{
    for (int n = 0; n < batch; n++)
        for (int c = 0; c < channels; c++) {
            double r = 1 / sqrt(var[c] + eps);
            for (size_t k = 0; k < hw; k++) {
                size_t i = ((size_t)n * channels + c) * hw + k;
                y[i] = (x[i] - mean[c]) * r * (weight ? weight[c] : 1) + (bias ? bias[c] : 0);
            }
        }
}

void ref_batch_norm_forward_train(double *y, double *mean, double *var, const double *x,
                                  const double *weight, const double *bias, int batch,
                                  int channels, int height, int width, double eps)
{
    size_t hw = (size_t)height * width;
    double *m = malloc(2 * (size_t)channels * sizeof *m), *v = m + channels;
    if (!m) return;
    for (int c = 0; c < channels; c++) channel_stats(&m[c], &v[c], x, batch, channels, hw, c);
    affine_per_channel(y, x, m, v, weight, bias, batch, channels, hw, eps);
    if (mean) memcpy(mean, m, (size_t)channels * sizeof *m);
    if (var) memcpy(var, v, (size_t)channels * sizeof *v);
    free(m);
}

void ref_batch_norm_forward_eval(double *y, const double *x, const double *running_mean,
                                 const double *running_var, const double *weight,
                                 const double *bias, int batch, int channels, int height,
                                 int width, double eps)
{
    affine_per_channel(y, x, running_mean, running_var, weight, bias, batch, channels,
                       (size_t)height * width, eps);
}

void ref_batch_norm_backward_eval(double *dinp, double *dweight, double *dbias, const double *dy,
                                  const double *x, const double *running_mean,
                                  const double *running_var, const double *weight,
                                  const double *bias, int batch, int channels, int height,
                                  int width, double eps, int relu)
{
    size_t hw = (size_t)height * width;
    for (int c = 0; c < channels; c++) {
        double r = 1.0 / sqrt(running_var[c] + eps), w = weight ? weight[c] : 1.0;
        double b = bias ? bias[c] : 0.0, sum_g = 0, sum_gx = 0;
        for (int n = 0; n < batch; n++)
            for (size_t i = ((size_t)n * channels + c) * hw, end = i + hw; i < end; i++) {
                double xhat = (x[i] - running_mean[c]) * r;
                double g = relu && !(xhat * w + b > 0) ? 0.0 : dy[i];
                dinp[i] = g * w * r;
                sum_g += g;
                sum_gx += g * xhat;
            }
        if (dweight) dweight[c] = sum_gx;
        if (dbias) dbias[c] = sum_g;
    }
}

void ref_batch_norm_update_running(double *running_mean, double *running_var, const double *mean,
                                   const double *var, int channels, int count, double momentum)
{
    for (int c = 0; c < channels; c++) {
        double unbiased = count > 1 ? var[c] * count / (count - 1) : var[c];
        running_mean[c] = (1 - momentum) * running_mean[c] + momentum * mean[c];
        running_var[c] = (1 - momentum) * running_var[c] + momentum * unbiased;
    }
}

static const char torch_prelude[] =
    "import sys\n"
    "try:\n"
    "    import numpy as np\n"
    "    import torch\n"
    "except ImportError as e:\n"
    "    print('torch is not importable:', e)\n"
    "    sys.exit(3)\n"
    "inp = np.fromfile(sys.argv[1], dtype=np.float32)\n"
    "def emit(*arrays):\n"
    "    np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in arrays])"
    ".astype(np.float32).tofile(sys.argv[2])\n";

int ref_norm_torch_run(const char *body, const float *inp, size_t n_in, float *out, size_t n_out,
                  char *why, size_t why_size)
{
    const char *python = TH_PYTHON;
    if (access(python, X_OK) != 0) {
        snprintf(why, why_size, "%s is missing", python);
        return 1;
    }
    char dir[] = "/tmp/tt-torch-XXXXXX";
    if (!mkdtemp(dir)) {
        snprintf(why, why_size, "cannot make a temporary folder");
        return 1;
    }
    char script[64], in_path[64], out_path[64], log_path[64], cmd[1024];
    snprintf(script, sizeof script, "%s/check.py", dir);
    snprintf(in_path, sizeof in_path, "%s/in.f32", dir);
    snprintf(out_path, sizeof out_path, "%s/out.f32", dir);
    snprintf(log_path, sizeof log_path, "%s/log.txt", dir);
    int result = 1;
    FILE *f = fopen(script, "w");
    if (f) {
        fputs(torch_prelude, f);
        fputs(body, f);
        fclose(f);
    }
    f = fopen(in_path, "wb");
    if (f) {
        fwrite(inp, sizeof *inp, n_in, f);
        fclose(f);
    }
    snprintf(cmd, sizeof cmd, "%s %s %s %s >%s 2>&1", python, script, in_path, out_path, log_path);
    int rc = system(cmd);
    if (rc != 0) {
        char line[160] = "";
        f = fopen(log_path, "r");
        if (f) {
            char *got = NULL;
            while (fgets(line, sizeof line, f)) got = line; /* the last line says why */
            if (got) line[strcspn(line, "\n")] = '\0';
            fclose(f);
        }
        snprintf(why, why_size, "python exited with %d: %s", rc, line);
    } else if (!(f = fopen(out_path, "rb"))) {
        snprintf(why, why_size, "the torch script wrote no result");
    } else {
        size_t got = fread(out, sizeof *out, n_out, f);
        int extra = fgetc(f) != EOF;
        fclose(f);
        if (got != n_out || extra) snprintf(why, why_size, "torch result has the wrong size");
        else result = 0;
    }
    unlink(script), unlink(in_path), unlink(out_path), unlink(log_path), rmdir(dir);
    return result;
}

size_t ref_norm_relu_check(const float *plain, const float *fused, const float *dy, float *masked,
                           size_t n, size_t *zeros)
{
    size_t same = 0;
    *zeros = 0;
    for (size_t i = 0; i < n; i++) {
        float relu = plain[i] > 0.0f ? plain[i] : 0.0f;
        *zeros += fused[i] == 0.0f;
        same += memcmp(&relu, &fused[i], sizeof relu) == 0;
        masked[i] = plain[i] > 0.0f ? dy[i] : 0.0f;
    }
    return same;
}
