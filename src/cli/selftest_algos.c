/* tiletrain selftest --algos; see selftest_algos.h. */
#include "cli/selftest_algos.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/status.h"
#include "model/model.h"
#include "ops/conv2d.h"
#include "ops/conv_autotune.h"
#include "ops/conv_transpose2d.h"
#include "train/recipe.h"


/* A device buffer of `floats` uniform values in [-1, 1) from *seed. */
static tt_status random_buffer(tt_backend *be, size_t floats, uint64_t *seed, const char *name,
                               tt_buffer **out)
{
    float *host = tt_malloc((floats ? floats : 1) * sizeof *host);
    if (!host) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "selftest: out of host memory");
    for (size_t i = 0; i < floats; i++) {
        *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
        host[i] = (float)((double)(*seed >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    tt_status status = tt_buffer_alloc(be, floats * sizeof(float), TT_MEM_OTHER, name, out);
    if (!status) status = tt_write(be, tt_mem_of(*out), host, floats * sizeof(float));
    free(host);
    return status;
}

/* The checks of one direction of a layer (conv2d or transposed). */
static tt_status verify_dir(tt_backend *be, const tt_model_conv *c, int batch, tt_conv_dir dir,
                            tt_mem x, tt_mem w, tt_mem b, tt_mem dy, tt_conv_verdict *v,
                            int *checked)
{
    if (c->transposed) {
        tt_conv_transpose2d_desc d = {.batch = batch, .in_channels = c->in_channels,
                                      .in_h = c->height, .in_w = c->width,
                                      .out_channels = c->out_channels, .kernel_h = c->kernel,
                                      .kernel_w = c->kernel, .stride_h = c->stride,
                                      .stride_w = c->stride};
        return tt_conv_transpose2d_verify(be, &d, dir, x, w, b, dy, v, checked);
    }
    tt_conv2d_desc d = tt_model_conv_desc(c, batch, TT_CONV_ALGO_AUTO);
    return tt_conv2d_verify(be, &d, dir, x, w, b, dy, v, checked);
}

/* One layer: every direction it runs, every algorithm; one line each. */
static tt_status check_layer(tt_backend *be, const tt_model_conv *c, int batch, tt_checks *checks)
{
    size_t in_n = (size_t)batch * c->in_channels * c->height * c->width;
    size_t out_n = (size_t)batch * c->out_channels * tt_model_conv_out_plane(c);
    int groups = c->groups > 1 ? c->groups : 1;
    size_t w_n = (size_t)c->out_channels * (c->in_channels / groups) * c->kernel * c->kernel;
    uint64_t seed = 0x5e1f7e57ull + (uint64_t)in_n * 31 + w_n;
    tt_buffer *x = NULL, *w = NULL, *b = NULL, *dy = NULL;
    tt_status status = NULL;
    TT_CHECK(random_buffer(be, in_n, &seed, "selftest.x", &x));
    TT_CHECK(random_buffer(be, w_n, &seed, "selftest.w", &w));
    TT_CHECK(random_buffer(be, (size_t)c->out_channels, &seed, "selftest.b", &b));
    TT_CHECK(random_buffer(be, out_n, &seed, "selftest.dy", &dy));
    for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
        if (dir == TT_CONV_DIR_BACKWARD_DATA && c->no_input_grad) continue;
        tt_conv_verdict v[TT_CONV_ALGO_COUNT];
        int checked[TT_CONV_ALGO_COUNT];
        TT_CHECK(verify_dir(be, c, batch, (tt_conv_dir)dir, tt_mem_of(x), tt_mem_of(w),
                            tt_mem_of(b), tt_mem_of(dy), v, checked));
        FILE *out = checks->out;
        checks->out = NULL; /* one line for the direction's algorithms */
        if (out) fprintf(out, "  %-18s %-15s", c->label, tt_conv_dir_name((tt_conv_dir)dir));
        double bound = 0;
        for (int a = 0; a < TT_CONV_ALGO_COUNT; a++) {
            if (!checked[a]) continue;
            tt_check k = {.error = v[a].error, .bound = v[a].bound,
                          .failed = !(v[a].error <= v[a].bound)};
            snprintf(k.what, sizeof k.what, "%s %s %s", c->label,
                     tt_conv_dir_name((tt_conv_dir)dir), tt_conv_algo_name((tt_conv_algo)a));
            if (k.failed && v[a].reference != (tt_conv_algo)a)
                snprintf(k.note, sizeof k.note, "off %s", tt_conv_algo_name(v[a].reference));
            else if (k.failed)
                snprintf(k.note, sizeof k.note, "off the host's double");
            tt_checks_add(checks, &k);
            bound = v[a].bound;
            if (out)
                fprintf(out, " %s %.1e%s", tt_conv_algo_name((tt_conv_algo)a), v[a].error,
                        k.failed ? " FAILED" : "");
        }
        checks->out = out;
        if (out) fprintf(out, "  (bound %.1e)\n", bound);
    }
cleanup:
    tt_buffer_free(x), tt_buffer_free(w), tt_buffer_free(b), tt_buffer_free(dy);
    return status;
}

tt_status tt_selftest_algos(tt_backend *be, const tt_train_options *t, tt_checks *checks)
{
    tt_model_spec spec;
    TT_TRY(tt_recipe_model(t, 0, &spec));
    tt_model_conv *shapes = NULL;
    int count = 0, first = checks->count, before = checks->failures;
    TT_TRY(tt_model_conv_shapes(be, &spec, t->tile[0], t->tile[1], &shapes, &count));
    if (checks->out)
        fprintf(checks->out,
                "every convolution algorithm on each layer shape of %s at %dx%d, micro-batch %d\n"
                "(error: the largest difference from the reference over the output's largest "
                "value):\n",
                spec.kind, t->tile[0], t->tile[1], t->micro_batch);
    tt_status status = NULL;
    for (int i = 0; i < count && !status; i++)
        status = check_layer(be, &shapes[i], t->micro_batch, checks);
    free(shapes);
    TT_TRY(status);
    if (checks->out)
        fprintf(checks->out, "  %d checks, %d off the bound\n", checks->count - first,
                checks->failures - before);
    return NULL;
}
