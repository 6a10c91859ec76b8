/* The shared checking procedure of the convolution tests; see ref_conv_check.h. */
#include "ref_conv_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/hash.h"
#include "harness.h"

/* Host data of one case: float for the device, double for the reference. */
typedef struct conv_data {
    const ref_conv_op *op;
    float *inp, *weight, *bias, *dout;
    double *inp_d, *weight_d, *bias_d, *dout_d;
    double *out_d;  /* scratch for the reference forward */
} conv_data;

static void data_init(conv_data *c, const ref_conv_op *op, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->op = op;
    size_t nb = op->bias_count ? op->bias_count : 1;
    c->inp = malloc(op->inp_count * sizeof(float));
    c->weight = malloc(op->weight_count * sizeof(float));
    c->bias = malloc(nb * sizeof(float));
    c->dout = malloc(op->out_count * sizeof(float));
    c->out_d = malloc(op->out_count * sizeof(double));
    CU_ASSERT_FATAL(c->inp && c->weight && c->bias && c->dout && c->out_d);
    th_fill_uniform(c->inp, op->inp_count, -1, 1, &seed);
    th_fill_uniform(c->weight, op->weight_count, -1, 1, &seed);
    th_fill_uniform(c->bias, nb, -1, 1, &seed);
    th_fill_uniform(c->dout, op->out_count, -1, 1, &seed);
    c->inp_d = th_to_double(c->inp, op->inp_count);
    c->weight_d = th_to_double(c->weight, op->weight_count);
    c->bias_d = th_to_double(c->bias, nb);
    c->dout_d = th_to_double(c->dout, op->out_count);
}

static void data_free(conv_data *c)
{
    free(c->inp), free(c->weight), free(c->bias), free(c->dout);
    free(c->inp_d), free(c->weight_d), free(c->bias_d), free(c->dout_d), free(c->out_d);
}

/* L = sum(dout * forward(inp, weight, bias)) on the current double arrays;
 * th_numeric_grad perturbs one of them in place. */
static double loss(const double *x, void *ctx)
{
    (void)x;
    conv_data *c = ctx;
    c->op->ref_forward(c->out_d, c->inp_d, c->weight_d, c->op->with_bias ? c->bias_d : NULL,
                       c->op->desc);
    double sum = 0;
    for (size_t i = 0; i < c->op->out_count; i++) sum += c->dout_d[i] * c->out_d[i];
    return sum;
}

/* ---- finite differences, once per reference problem --------------------
 * A suite checks one case under several algorithms and knobs: the same
 * data through the same reference, so the same finite differences.  They
 * cost two reference forwards an element (nearly all of a suite's time),
 * so each problem's are kept, known by its data and its reference output
 * (which also tells shapes of equal sizes apart). */
#define FD_MEMO 64
typedef struct fd_memo {
    uint64_t key;
    size_t inp_count, weight_count, bias_count;
    double *inp, *weight, *bias;
} fd_memo;
static fd_memo memo[FD_MEMO];
static size_t memo_count, memo_next;

static double *copy_doubles(const double *x, size_t n)
{
    double *y = malloc((n ? n : 1) * sizeof *y);
    CU_ASSERT_FATAL(y != NULL);
    memcpy(y, x, n * sizeof *y);
    return y;
}

/* The element of a sample of `count` spread over n (both ends in it). */
static size_t sample_at(size_t k, size_t count, size_t n)
{
    return count > 1 ? k * (n - 1) / (count - 1) : 0;
}

/* The largest gap, relative to 1 + |difference|, between `grad` (the
 * reference backward's gradient of x) and central differences at
 * REF_CONV_FD_SAMPLE elements of x: L is linear in each element, so they
 * agree up to rounding. */
static double sampled_gap(conv_data *c, double *x, size_t n, const double *grad)
{
    double worst = 0;
    for (size_t k = 0; k < REF_CONV_FD_SAMPLE; k++) {
        size_t i = sample_at(k, REF_CONV_FD_SAMPLE, n);
        double fd;
        th_numeric_grad(loss, c, x + i, 1, 1e-2, &fd); /* x[i] perturbed and put back */
        worst = fmax(worst, fabs(fd - grad[i]) / (1 + fabs(fd)));
    }
    return worst;
}

/* The reference backward's gradients of `c` into num_inp and num_weight
 * (zeroed first); returns their largest sampled gap. */
static double reference_grads(conv_data *c, double *num_inp, double *num_weight)
{
    const ref_conv_op *op = c->op;
    memset(num_inp, 0, op->inp_count * sizeof *num_inp);
    memset(num_weight, 0, op->weight_count * sizeof *num_weight);
    op->ref_backward(num_inp, num_weight, c->inp_d, c->weight_d, c->dout_d, op->desc);
    return fmax(sampled_gap(c, c->inp_d, op->inp_count, num_inp),
                sampled_gap(c, c->weight_d, op->weight_count, num_weight));
}

double ref_conv_backward_gap(const ref_conv_op *op, uint64_t seed)
{
    conv_data c;
    data_init(&c, op, seed);
    double *num_inp = malloc(op->inp_count * sizeof(double));
    double *num_weight = malloc(op->weight_count * sizeof(double));
    CU_ASSERT_FATAL(num_inp && num_weight);
    double gap = reference_grads(&c, num_inp, num_weight);
    free(num_inp), free(num_weight);
    data_free(&c);
    return gap;
}

/* num_*: dL/d(inp, weight, bias) by central differences, or for a large
 * case with a reference backward, by that backward checked against a
 * sample of them (c->out_d holds the reference forward of the
 * unperturbed data). */
static void numeric_grads(conv_data *c, double *num_inp, double *num_weight, double *num_bias)
{
    const ref_conv_op *op = c->op;
    size_t nb = op->with_bias ? op->bias_count : 0;
    uint64_t key = TT_HASH_INIT;
    key = tt_hash_bytes(key, c->inp_d, op->inp_count * sizeof(double));
    key = tt_hash_bytes(key, c->weight_d, op->weight_count * sizeof(double));
    key = tt_hash_bytes(key, c->bias_d, nb * sizeof(double));
    key = tt_hash_bytes(key, c->dout_d, op->out_count * sizeof(double));
    key = tt_hash_bytes(key, c->out_d, op->out_count * sizeof(double));
    for (size_t i = 0; i < memo_count; i++) {
        const fd_memo *m = &memo[i];
        if (m->key == key && m->inp_count == op->inp_count &&
            m->weight_count == op->weight_count && m->bias_count == nb) {
            memcpy(num_inp, m->inp, op->inp_count * sizeof *num_inp);
            memcpy(num_weight, m->weight, op->weight_count * sizeof *num_weight);
            memcpy(num_bias, m->bias, nb * sizeof *num_bias);
            return;
        }
    }
    if (op->ref_backward && op->inp_count + op->weight_count > REF_CONV_FD_ALL) {
        /* a reference wrong anywhere it is sampled fails here, before it
         * stands in for the differences of the rest */
        double gap = reference_grads(c, num_inp, num_weight);
        if (gap > REF_CONV_REF_GAP)
            printf("\n    %s: the reference backward is %.2e off finite differences", op->name,
                   gap);
        CU_ASSERT(gap <= REF_CONV_REF_GAP);
    } else {
        th_numeric_grad(loss, c, c->inp_d, op->inp_count, 1e-2, num_inp);
        th_numeric_grad(loss, c, c->weight_d, op->weight_count, 1e-2, num_weight);
    }
    if (nb) th_numeric_grad(loss, c, c->bias_d, nb, 1e-2, num_bias);
    fd_memo *m = &memo[memo_next];
    memo_next = (memo_next + 1) % FD_MEMO;
    if (memo_count < FD_MEMO) memo_count++;
    else free(m->inp), free(m->weight), free(m->bias);
    *m = (fd_memo){key, op->inp_count, op->weight_count, nb, copy_doubles(num_inp, op->inp_count),
                   copy_doubles(num_weight, op->weight_count), copy_doubles(num_bias, nb)};
}

/* want = base + times * grad, compared with what the device holds. */
static double grad_error(tt_buffer *buf, const float *base, const double *grad, double times,
                         size_t n)
{
    float *got = malloc(n * sizeof *got);
    double *want = malloc(n * sizeof *want);
    CU_ASSERT_FATAL(got && want);
    th_download(got, buf, n);
    for (size_t i = 0; i < n; i++) want[i] = (base ? base[i] : 0.0) + times * grad[i];
    double e = th_max_rel_error(got, want, n, REF_CONV_GRAD_FLOOR);
    free(got), free(want);
    return e;
}

static int runs_here(int runs, const char *name, tt_conv_algo algo)
{
    if (runs) return 1;
    char why[96];
    snprintf(why, sizeof why, "the backend has no %s convolution", tt_conv_algo_name(algo));
    th_left_out(name, why);
    return 0;
}

int ref_conv2d_runs_here(const char *name, const tt_conv2d_desc *desc)
{
    return runs_here(tt_conv2d_runs_on(th_backend(), desc), name, desc->algo);
}

int ref_convt_runs_here(const char *name, const tt_conv_transpose2d_desc *desc)
{
    return runs_here(tt_conv_transpose2d_runs_on(th_backend(), desc), name, desc->algo);
}

static tt_mem mem_or_none(tt_buffer *buf) { return buf ? tt_mem_of(buf) : (tt_mem){0}; }

ref_conv_errors ref_conv_check_case(const ref_conv_op *op, uint64_t seed)
{
    ref_conv_errors err = {0};
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    conv_data c;
    data_init(&c, op, seed);
    size_t nb = op->bias_count;

    /* ---- forward into a NaN-filled output: every element must be written */
    float *got = malloc(op->out_count * sizeof *got);
    CU_ASSERT_FATAL(got != NULL);
    for (size_t i = 0; i < op->out_count; i++) got[i] = NAN;
    tt_buffer *inp = th_upload(c.inp, op->inp_count, "test.inp");
    tt_buffer *weight = th_upload(c.weight, op->weight_count, "test.weight");
    tt_buffer *bias = op->with_bias ? th_upload(c.bias, nb, "test.bias") : NULL;
    tt_buffer *out = th_upload(got, op->out_count, "test.out");
    tt_buffer *dout = th_upload(c.dout, op->out_count, "test.dout");
    tt_buffer *ws = NULL;
    if (op->pass_workspace && op->workspace_bytes)
        TH_OK(tt_buffer_alloc(be, op->workspace_bytes, TT_MEM_OTHER, "test.workspace", &ws));
    tt_mem ws_mem = mem_or_none(ws);

    uint64_t allocations = be->mem.allocations;
    TH_OK(op->forward(be, tt_mem_of(out), tt_mem_of(inp), tt_mem_of(weight), mem_or_none(bias),
                      op->desc, ws_mem));
    th_download(got, out, op->out_count);
    loss(NULL, &c);
    err.forward = th_max_rel_error(got, c.out_d, op->out_count, REF_CONV_FWD_FLOOR);
    CU_ASSERT(err.forward < REF_CONV_FWD_TOL);
    /* a given workspace means no allocation; an own one is freed again */
    if (op->pass_workspace) CU_ASSERT_EQUAL(be->mem.allocations, allocations);
    if (!op->pass_workspace && op->workspace_bytes)
        CU_ASSERT(be->mem.allocations == allocations + 1);
    CU_ASSERT_EQUAL(be->mem.current[TT_MEM_WORKSPACE], 0);

    /* ---- finite differences on the double reference (L is linear in each
     * argument, so central differences are exact up to rounding) */
    double *num_inp = malloc(op->inp_count * sizeof(double));
    double *num_weight = malloc(op->weight_count * sizeof(double));
    double *num_bias = malloc((nb ? nb : 1) * sizeof(double));
    CU_ASSERT_FATAL(num_inp && num_weight && num_bias);
    numeric_grads(&c, num_inp, num_weight, num_bias);

    /* ---- backward twice into non-zero gradients: each run adds once */
    float *base_inp = malloc(op->inp_count * sizeof(float));
    float *base_weight = malloc(op->weight_count * sizeof(float));
    float *base_bias = malloc((nb ? nb : 1) * sizeof(float));
    CU_ASSERT_FATAL(base_inp && base_weight && base_bias);
    th_fill_uniform(base_inp, op->inp_count, -1, 1, &seed);
    th_fill_uniform(base_weight, op->weight_count, -1, 1, &seed);
    th_fill_uniform(base_bias, nb ? nb : 1, -1, 1, &seed);
    tt_buffer *dinp = th_upload(base_inp, op->inp_count, "test.dinp");
    tt_buffer *dweight = th_upload(base_weight, op->weight_count, "test.dweight");
    tt_buffer *dbias = op->with_bias ? th_upload(base_bias, nb, "test.dbias") : NULL;
    for (int times = 1; times <= 2; times++) {
        allocations = be->mem.allocations;
        TH_OK(op->backward(be, tt_mem_of(dinp), tt_mem_of(dweight), mem_or_none(dbias),
                           tt_mem_of(dout), tt_mem_of(inp), tt_mem_of(weight), op->desc,
                           ws_mem));
        if (op->pass_workspace) CU_ASSERT_EQUAL(be->mem.allocations, allocations);
        CU_ASSERT_EQUAL(be->mem.current[TT_MEM_WORKSPACE], 0);
        double e_inp = grad_error(dinp, base_inp, num_inp, times, op->inp_count);
        double e_weight = grad_error(dweight, base_weight, num_weight, times, op->weight_count);
        double e_bias = dbias ? grad_error(dbias, base_bias, num_bias, times, nb) : 0.0;
        CU_ASSERT(e_inp < REF_CONV_GRAD_TOL);
        CU_ASSERT(e_weight < REF_CONV_GRAD_TOL);
        CU_ASSERT(e_bias < REF_CONV_GRAD_TOL);
        err.dinp = fmax(err.dinp, e_inp);
        err.dweight = fmax(err.dweight, e_weight);
        err.dbias = fmax(err.dbias, e_bias);
    }

    /* ---- each gradient alone, the other two absent, into zeros */
    tt_buffer *alone[3] = {th_zeros(op->inp_count, "test.dinp_alone"),
                           th_zeros(op->weight_count, "test.dweight_alone"),
                           op->with_bias ? th_zeros(nb, "test.dbias_alone") : NULL};
    for (int which = 0; which < 3; which++) {
        if (!alone[which]) continue;
        tt_mem g[3] = {{0}, {0}, {0}};
        g[which] = tt_mem_of(alone[which]);
        TH_OK(op->backward(be, g[0], g[1], g[2], tt_mem_of(dout), tt_mem_of(inp),
                           tt_mem_of(weight), op->desc, ws_mem));
    }
    double e_alone = fmax(grad_error(alone[0], NULL, num_inp, 1, op->inp_count),
                          grad_error(alone[1], NULL, num_weight, 1, op->weight_count));
    if (alone[2]) e_alone = fmax(e_alone, grad_error(alone[2], NULL, num_bias, 1, nb));
    CU_ASSERT(e_alone < REF_CONV_GRAD_TOL);

    printf("\n    %-28s forward %.2e  dinp %.2e  dweight %.2e  dbias %.2e  alone %.2e",
           op->name, err.forward, err.dinp, err.dweight, err.dbias, e_alone);

    for (int i = 0; i < 3; i++) tt_buffer_free(alone[i]);
    tt_buffer_free(inp), tt_buffer_free(weight), tt_buffer_free(bias), tt_buffer_free(out);
    tt_buffer_free(dout), tt_buffer_free(ws), tt_buffer_free(dinp), tt_buffer_free(dweight);
    tt_buffer_free(dbias);
    free(got), free(num_inp), free(num_weight), free(num_bias);
    free(base_inp), free(base_weight), free(base_bias);
    data_free(&c);
    return err;
}

/* ---- PyTorch cross-check ------------------------------------------------ */

/* Reads x, w, b, dy (float32, concatenated) from argv[1]; writes y, dx, dw,
 * db (float32) to argv[2]; exits 3 without torch. */
static const char *torch_script =
    "import sys\n"
    "try:\n"
    "    import numpy as np, torch\n"
    "    import torch.nn.functional as F\n"
    "except Exception:\n"
    "    sys.exit(3)\n"
    "src, dst, expr = sys.argv[1], sys.argv[2], sys.argv[3]\n"
    "xs, ws, ys = [tuple(int(v) for v in a.split(',')) for a in sys.argv[4:7]]\n"
    "nb = int(sys.argv[7])\n"
    "d = np.fromfile(src, dtype=np.float32).astype(np.float64)\n"
    "def take(shape):\n"
    "    global d\n"
    "    n = int(np.prod(shape)); t = torch.tensor(d[:n]).reshape(shape); d = d[n:]\n"
    "    return t.requires_grad_()\n"
    "x = take(xs); w = take(ws); b = take((nb,)) if nb else None; dy = take(ys).detach()\n"
    "y = eval(expr)\n"
    "assert tuple(y.shape) == ys, (tuple(y.shape), ys)\n"
    "(y * dy).sum().backward()\n"
    "parts = [y.detach(), x.grad, w.grad] + ([b.grad] if nb else [])\n"
    "np.concatenate([p.numpy().ravel() for p in parts]).astype(np.float32).tofile(dst)\n";

int ref_conv_check_torch(const ref_conv_op *op, const char *torch_expr, const int inp_shape[4],
                         const int weight_shape[4], const int out_shape[4], uint64_t seed)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    if (access("/usr/bin/python3", X_OK) != 0) {
        printf("\n    torch cross-check skipped: no /usr/bin/python3");
        return 0;
    }
    conv_data c;
    data_init(&c, op, seed);
    size_t nb = op->with_bias ? op->bias_count : 0;
    size_t total_out = op->out_count + op->inp_count + op->weight_count + nb;
    char src[] = "/tmp/tt_conv_torch_in_XXXXXX", dst[] = "/tmp/tt_conv_torch_out_XXXXXX";
    int fd_src = mkstemp(src), fd_dst = mkstemp(dst);
    CU_ASSERT_FATAL(fd_src >= 0 && fd_dst >= 0);
    close(fd_dst);
    FILE *f = fdopen(fd_src, "wb");
    CU_ASSERT_FATAL(f != NULL);
    fwrite(c.inp, sizeof(float), op->inp_count, f);
    fwrite(c.weight, sizeof(float), op->weight_count, f);
    fwrite(c.bias, sizeof(float), nb, f);
    fwrite(c.dout, sizeof(float), op->out_count, f);
    fclose(f);

    char script[] = "/tmp/tt_conv_torch_py_XXXXXX";
    int fd_py = mkstemp(script);
    CU_ASSERT_FATAL(fd_py >= 0);
    CU_ASSERT_FATAL(write(fd_py, torch_script, strlen(torch_script)) == (ssize_t)strlen(torch_script));
    close(fd_py);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             TH_PYTHON " %s %s %s \"%s\" %d,%d,%d,%d %d,%d,%d,%d %d,%d,%d,%d %zu", script,
             src, dst, torch_expr, inp_shape[0], inp_shape[1], inp_shape[2], inp_shape[3],
             weight_shape[0], weight_shape[1], weight_shape[2], weight_shape[3], out_shape[0],
             out_shape[1], out_shape[2], out_shape[3], nb);
    int rc = system(cmd);
    float *torch = malloc(total_out * sizeof(float));
    CU_ASSERT_FATAL(torch != NULL);
    size_t got_floats = 0;
    if (rc == 0) {
        f = fopen(dst, "rb");
        CU_ASSERT_FATAL(f != NULL);
        got_floats = fread(torch, sizeof(float), total_out, f);
        fclose(f);
    }
    unlink(src), unlink(dst), unlink(script);
    int compared = 0;
    if (rc != 0 && WIFEXITED(rc) && WEXITSTATUS(rc) == 3) {
        printf("\n    torch cross-check skipped: python3 has no torch");
    } else {
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        CU_ASSERT_EQUAL_FATAL(got_floats, total_out);
        tt_buffer *inp = th_upload(c.inp, op->inp_count, "torch.inp");
        tt_buffer *weight = th_upload(c.weight, op->weight_count, "torch.weight");
        tt_buffer *bias = nb ? th_upload(c.bias, nb, "torch.bias") : NULL;
        tt_buffer *dout = th_upload(c.dout, op->out_count, "torch.dout");
        tt_buffer *out = th_zeros(op->out_count, "torch.out");
        tt_buffer *dinp = th_zeros(op->inp_count, "torch.dinp");
        tt_buffer *dweight = th_zeros(op->weight_count, "torch.dweight");
        tt_buffer *dbias = nb ? th_zeros(nb, "torch.dbias") : NULL;
        TH_OK(op->forward(be, tt_mem_of(out), tt_mem_of(inp), tt_mem_of(weight),
                          mem_or_none(bias), op->desc, (tt_mem){0}));
        TH_OK(op->backward(be, tt_mem_of(dinp), tt_mem_of(dweight), mem_or_none(dbias),
                           tt_mem_of(dout), tt_mem_of(inp), tt_mem_of(weight), op->desc,
                           (tt_mem){0}));
        tt_buffer *bufs[4] = {out, dinp, dweight, dbias};
        size_t counts[4] = {op->out_count, op->inp_count, op->weight_count, nb};
        double floors[4] = {REF_CONV_FWD_FLOOR, REF_CONV_GRAD_FLOOR, REF_CONV_GRAD_FLOOR,
                            REF_CONV_GRAD_FLOOR};
        double tols[4] = {REF_CONV_FWD_TOL, REF_CONV_GRAD_TOL, REF_CONV_GRAD_TOL,
                          REF_CONV_GRAD_TOL};
        double errs[4] = {0, 0, 0, 0};
        size_t at = 0;
        for (int i = 0; i < 4; i++) {
            if (!bufs[i]) continue;
            float *dev = malloc(counts[i] * sizeof(float));
            CU_ASSERT_FATAL(dev != NULL);
            th_download(dev, bufs[i], counts[i]);
            errs[i] = th_max_rel_error_f(dev, torch + at, counts[i], floors[i]);
            CU_ASSERT(errs[i] < tols[i]);
            at += counts[i];
            free(dev);
        }
        printf("\n    %-28s vs torch: forward %.2e  dinp %.2e  dweight %.2e  dbias %.2e",
               op->name, errs[0], errs[1], errs[2], errs[3]);
        for (int i = 0; i < 4; i++) tt_buffer_free(bufs[i]);
        tt_buffer_free(inp), tt_buffer_free(weight), tt_buffer_free(bias);
        tt_buffer_free(dout);
        compared = 1;
    }
    free(torch);
    data_free(&c);
    return compared;
}
