/* Double-precision optimizer references and the python bridge; see ref_optim.h. */
#include "ref_optim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

void ref_adamw_step(double *param, const double *grad, double *exp_avg, double *exp_avg_sq,
                    size_t n, double lr, double beta1, double beta2, double eps,
                    double weight_decay, int64_t step)
{
    double bias_correction1 = 1 - pow(beta1, (double)step);
    double bias_correction2 = 1 - pow(beta2, (double)step);
    for (size_t i = 0; i < n; i++) {
        double g = grad[i];
        param[i] -= lr * weight_decay * param[i];
        exp_avg[i] = beta1 * exp_avg[i] + (1 - beta1) * g;
        exp_avg_sq[i] = beta2 * exp_avg_sq[i] + (1 - beta2) * g * g;
        double m_hat = exp_avg[i] / bias_correction1;
        double v_hat = exp_avg_sq[i] / bias_correction2;
        param[i] -= lr * m_hat / (sqrt(v_hat) + eps);
    }
}

void ref_sgd_step(double *param, const double *grad, double *momentum_buffer, size_t n, double lr,
                  double momentum, double dampening, double weight_decay, int nesterov,
                  int64_t step)
{
    for (size_t i = 0; i < n; i++) {
        double d = grad[i] + weight_decay * param[i];
        if (momentum != 0) {
            double buf = step == 1 ? d : momentum * momentum_buffer[i] + (1 - dampening) * d;
            momentum_buffer[i] = buf;
            d = nesterov ? d + momentum * buf : buf;
        }
        param[i] -= lr * d;
    }
}

const char *ref_tests_dir(void) { return TT_SOURCE_DIR "/tests"; }

/* Asked once a process for each list of modules: an import of torch takes
 * about 2 s, and the model suites ask before each of their comparisons. */
int ref_python_has(const char *module)
{
    static struct {
        char modules[64];
        int has;
    } known[8];
    static int count;
    for (int i = 0; i < count; i++)
        if (strcmp(known[i].modules, module) == 0) return known[i].has;
    char cmd[256];
    snprintf(cmd, sizeof cmd, TH_PYTHON " -c 'import %s' >/dev/null 2>&1", module);
    int has = system(cmd) == 0;
    if (count < 8 && strlen(module) < sizeof known[0].modules) {
        snprintf(known[count].modules, sizeof known[count].modules, "%s", module);
        known[count++].has = has;
    }
    return has;
}

int ref_write_floats(const char *path, const float *x, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t wrote = fwrite(x, sizeof *x, n, f);
    return (fclose(f) == 0 && wrote == n) ? 0 : -1;
}

int ref_read_floats(const char *path, float *x, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t got = fread(x, sizeof *x, n, f);
    int extra = fgetc(f) != EOF;
    fclose(f);
    return (got == n && !extra) ? 0 : -1;
}

int ref_optim_torch_run(ref_torch_case *cases, int count)
{
    if (!ref_python_has("torch")) {
        printf("\n    SKIP torch cross-check: /usr/bin/python3 cannot import torch\n");
        return 1;
    }
    char dir[] = "/tmp/tt-optim-torch-XXXXXX";
    if (!mkdtemp(dir)) return -1;
    int result = -1;
    char path[4200], cmd[8600];
    cJSON *spec = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(spec, "cases");
    for (int c = 0; c < count; c++) {
        ref_torch_case *k = &cases[c];
        cJSON *item = cJSON_CreateObject();
        cJSON_AddItemToArray(list, item);
        cJSON_AddStringToObject(item, "optimizer", k->optimizer);
        cJSON_AddNumberToObject(item, "n", (double)k->n);
        cJSON_AddNumberToObject(item, "steps", k->steps);
        cJSON_AddItemToObject(item, "lrs", cJSON_CreateDoubleArray(k->lrs, k->steps));
        cJSON *cfg = cJSON_AddObjectToObject(item, "config");
        cJSON_AddNumberToObject(cfg, "beta1", k->beta1);
        cJSON_AddNumberToObject(cfg, "beta2", k->beta2);
        cJSON_AddNumberToObject(cfg, "eps", k->eps);
        cJSON_AddNumberToObject(cfg, "weight_decay", k->weight_decay);
        cJSON_AddNumberToObject(cfg, "momentum", k->momentum);
        cJSON_AddNumberToObject(cfg, "dampening", k->dampening);
        cJSON_AddNumberToObject(cfg, "nesterov", k->nesterov);
        if (k->group_count)
            cJSON_AddItemToObject(item, "groups", cJSON_CreateDoubleArray(k->groups, 4 * k->group_count));
        snprintf(path, sizeof path, "%s/param%d.bin", dir, c);
        if (ref_write_floats(path, k->param0, k->n)) goto cleanup;
        cJSON_AddStringToObject(item, "param", path);
        snprintf(path, sizeof path, "%s/grads%d.bin", dir, c);
        if (ref_write_floats(path, k->grads, k->n * (size_t)k->steps)) goto cleanup;
        cJSON_AddStringToObject(item, "grads", path);
        snprintf(path, sizeof path, "%s/out%d.bin", dir, c);
        cJSON_AddStringToObject(item, "out", path);
    }
    char *text = cJSON_Print(spec);
    snprintf(path, sizeof path, "%s/spec.json", dir);
    FILE *f = fopen(path, "w");
    int ok = f && text && fputs(text, f) >= 0;
    if (f && fclose(f)) ok = 0;
    free(text);
    if (!ok) goto cleanup;
    snprintf(cmd, sizeof cmd, TH_PYTHON " '%s/optim_torch_check.py' '%s'", ref_tests_dir(),
             path);
    fflush(stdout);
    if (system(cmd) != 0) {
        printf("\n    torch cross-check script failed: %s\n", cmd);
        goto cleanup;
    }
    for (int c = 0; c < count; c++) {
        snprintf(path, sizeof path, "%s/out%d.bin", dir, c);
        if (ref_read_floats(path, cases[c].out, cases[c].out_count)) {
            printf("\n    torch output %s is missing or has the wrong length\n", path);
            goto cleanup;
        }
    }
    result = 0;
cleanup:
    cJSON_Delete(spec);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) result = -1;
    return result;
}
