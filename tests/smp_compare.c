/*
 * The smp-style models (UNet and FPN over ResNet encoders) against their
 * PyTorch twins; see smp_compare.h.
 */
#include "smp_compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/hash.h"
#include "io/safetensors.h"
#include "model/weights.h"
#include "optim/optimizer.h"
#include "train/train_options.h"
#include "ops/util.h"
#include "ref_optim.h"

/* The dropout masks' seed of the compared step (the script draws them
 * alike). */
#define DROPOUT_SEED 0x5eed0fa11ULL

/* 1 when PY imports `modules` ("torch", "torch, torchvision"); else prints
 * why the comparison is skipped. */
int smp_have(const char *modules)
{
    int ok = ref_python_has(modules);
    if (!ok)
        printf("\n  SKIPPED the torch comparison: " PY " cannot import %s (Debian: python3-torch "
               "python3-torchvision)", modules);
    return ok;
}

/* In memory where the system has a tmpfs: the twins' inputs and outputs
 * are a model's weights and gradients (125 MB for a ResNet-50 decoder),
 * written with an fsync each. */
void smp_temp_path(char *path, size_t size, const char *what)
{
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(path, size, "%s/tt-rtest-%s-XXXXXX", dir, what);
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
}

int smp_run(const char *cmd)
{
    int rc = system(cmd);
    if (rc != 0) printf("\n  FAILED (%d): %s", rc, cmd);
    return rc == 0;
}

/* The storage the models made next keep their activations in. */
tt_precision smp_storage = TT_PRECISION_FP32;
/* Their convolution algorithm: AUTO, or smp_fixed_row() in the checks of
 * frozen norms and checkpointing on shapes no other check tunes (what they
 * check does not depend on the picks; timing a new shape's candidates took
 * about 30 s of a fresh cache's run on lavapipe). */
tt_conv_algo smp_convs = TT_CONV_ALGO_AUTO;

tt_conv_algo smp_fixed_row(void)
{
    return th_backend_kind() == TT_BACKEND_VULKAN ? TT_CONV_ALGO_IM2COL_GEMM
                                                  : TT_CONV_ALGO_IMPLICIT_GEMM;
}

tt_conv_algo smp_picks_on_opencl(void)
{
    return th_backend_kind() == TT_BACKEND_VULKAN ? smp_fixed_row() : TT_CONV_ALGO_AUTO;
}
float smp_drop_path = 0;

int smp_opencl_only(void)
{
    if (th_backend_kind() != TT_BACKEND_VULKAN) return 0;
    printf("\n  (run on OpenCL: the executor's or the host's, not the backend's)");
    return 1;
}

tt_model *smp_create_checkpointing(const char *kind, const char *mode, int capacity, int height,
                                      int width, int checkpointing)
{
    tt_model_spec spec = tt_model_spec_default();
    spec.precision = smp_storage;
    snprintf(spec.kind, sizeof spec.kind, "%s", kind);
    spec.classes = CLASSES;
    spec.freeze_encoder_bn = strncmp(mode, "freeze", 6) == 0;
    spec.freeze_decoder_bn = strcmp(mode, "freeze_all") == 0;
    spec.checkpointing = checkpointing;
    spec.algo = smp_convs;
    spec.drop_path = smp_drop_path;
    tt_model *m = NULL;
    TH_OK(tt_model_create(th_backend(), &spec, capacity, height, width, 11, &m));
    return m;
}

tt_model *smp_create(const char *kind, const char *mode, int capacity, int height, int width)
{
    return smp_create_checkpointing(kind, mode, capacity, height, width, 0);
}

int smp_is_encoder(const char *name) { return strncmp(name, "encoder.", 8) == 0; }

/* Batch norm parameters that keep every ReLU input off 0 (see the top):
 * gamma in [0.05, 0.15], beta 1, or -1 on every fourth channel of a norm a
 * ReLU follows directly (a dead channel: the masks are not all ones), so a
 * ReLU sees +-1 + gamma * x_hat; the residual sum adds the norm's
 * 1 + gamma * x_hat to a non-negative identity.  Running statistics off 0
 * and 1 (eval-mode norms use them), counters at 7.  Convolutions keep the
 * model's own init. */
static void controlled(tt_model *m, float *params, float *state)
{
    TH_OK(tt_model_get_params(m, params, state));
    uint64_t seed = 21;
    /* a block's last norm has no ReLU of its own (the sum's): bn2 of a
     * basic block, bn3 of a bottleneck */
    const char *last = tt_params_find(m->params, "encoder.layer1.0.bn3.weight") ? ".bn3." : ".bn2.";
    for (int i = 0; i < m->params->count; i++) {
        const tt_param *p = &m->params->params[i];
        float *x = (p->trainable ? params : state) + p->offset;
        int relu_follows = !strstr(p->name, last) && !strstr(p->name, "downsample.");
        for (size_t k = 0; k < p->count; k++) {
            switch (p->role) {
            case TT_PARAM_NORM_WEIGHT: x[k] = (float)th_uniform(&seed, 0.05, 0.15); break;
            case TT_PARAM_NORM_BIAS: x[k] = relu_follows && k % 4 == 3 ? -1.0f : 1.0f; break;
            case TT_PARAM_RUNNING_MEAN: x[k] = (float)th_uniform(&seed, -0.1, 0.1); break;
            case TT_PARAM_RUNNING_VAR: x[k] = (float)th_uniform(&seed, 0.8, 1.2); break;
            default: break;
            }
        }
    }
    TH_OK(tt_model_set_params(m, params, state));
    for (int i = 0; i < m->counter_count; i++) *m->counters[i].value = 7;
}

/* Error relative to the tensor's largest reference magnitude, or `floor`
 * where that is smaller; NaN gives INFINITY; an all-zero reference (and
 * floor 0) needs an all-zero result. */
static double compare_floor(const float *got, const float *want, size_t n, double floor)
{
    double scale = floor, worst = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs((double)want[i]));
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if (isnan(d)) return INFINITY;
        worst = fmax(worst, scale > 0 ? d / scale : d > 0 ? INFINITY : 0);
    }
    return worst;
}

static double compare(const float *got, const float *want, size_t n)
{
    return compare_floor(got, want, n, 0);
}

/* The worst error of one class of tensors and its name. */
typedef struct {
    const char *what;
    double worst;
    char name[64];
    int count;
} worst_of;

static void note(worst_of *w, double e, const char *name)
{
    w->count++;
    if (e >= w->worst) {
        w->worst = e;
        snprintf(w->name, sizeof w->name, "%s", name);
    }
}

/* The reference's command for `mode` (step or window) on c. */
static void torch_command(char *cmd, size_t size, const char *mode, const rcase *c,
                          const char *in_path, const char *out_path, double lr)
{
    char decoder[16];
    snprintf(decoder, sizeof decoder, "%.*s", (int)strcspn(c->kind, "-"), c->kind);
    snprintf(cmd, size,
             PY " %s/tests/torch_resnet_unet_check.py %s %s %s "
             "'{\"encoder\": \"%s\", \"decoder\": \"%s\", \"classes\": %d, \"mode\": "
             "\"%s\", \"dropout_seed\": %llu, \"lr\": %g, \"drop_path\": %.9g}'",
             TT_SOURCE_DIR, mode, in_path, out_path, strchr(c->kind, '-') + 1, decoder, CLASSES,
             c->mode, (unsigned long long)DROPOUT_SEED, lr, (double)smp_drop_path);
}

/* ---- the twins' outputs, kept per input --------------------------------
 * Both backends' suites hand the twin the same bytes (the weights are
 * made alike, the data comes from the same seeds), and the float64
 * reference of one input is the same whoever asks: a twin's output is
 * kept under $TT_CACHE_DIR/torch-twins/ (CTest's test-cache) by the hash
 * (core/hash.h) of its command without the file names, its input and
 * every Python source of tests/ and python/ (what the twin imports), so
 * that the second backend's suite reads it back (and removes it) instead
 * of computing it again.  Only the twins of cases that run on both
 * backends (smp_twin_both) are kept. */

int smp_twin_both = 0;

/* h over the file's bytes; 0 when it cannot be read. */
static int hash_file(uint64_t *h, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    static unsigned char chunk[1 << 16];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) *h = tt_hash_bytes(*h, chunk, n);
    int ok = !ferror(f);
    fclose(f);
    return ok;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* h over the names and bytes of dir's *.py files, in name order. */
static int hash_python(uint64_t *h, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    char *names[256];
    int n = 0, ok = 1;
    for (struct dirent *e; (e = readdir(d)) && n < 256;) {
        size_t len = strlen(e->d_name);
        if (len > 3 && strcmp(e->d_name + len - 3, ".py") == 0) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name);
    for (int i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        *h = tt_hash_bytes(*h, names[i], strlen(names[i]) + 1);
        ok &= hash_file(h, path);
        free(names[i]);
    }
    return ok;
}

static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    static unsigned char chunk[1 << 16];
    size_t n;
    int ok = in && out;
    while (ok && (n = fread(chunk, 1, sizeof chunk, in)) > 0) ok = fwrite(chunk, 1, n, out) == n;
    ok &= in && !ferror(in);
    if (in) fclose(in);
    if (out) ok &= fclose(out) == 0;
    return ok;
}

/* Runs the twin (`cmd`, reading in_path and writing out_path; key_cmd: the
 * command with stand-in file names), or copies the kept output of the same
 * command on the same input; 1 when out_path holds the twin's output. */
static int run_twin(const char *cmd, const char *key_cmd, const char *in_path,
                    const char *out_path)
{
    const char *cache = getenv("TT_CACHE_DIR");
    uint64_t h = tt_hash_bytes(TT_HASH_INIT, key_cmd, strlen(key_cmd));
    int keyed = smp_twin_both && cache && *cache && hash_file(&h, in_path) &&
                hash_python(&h, TT_SOURCE_DIR "/tests") && hash_python(&h, TT_SOURCE_DIR "/python");
    char dir[1024], kept[1100], part[1200];
    if (keyed) {
        snprintf(dir, sizeof dir, "%s/torch-twins", cache);
        snprintf(kept, sizeof kept, "%s/%016llx.safetensors", dir, (unsigned long long)h);
        if (access(kept, R_OK) == 0 && copy_file(kept, out_path)) {
            printf("\n  (the twin's output for this input, kept by the other backend's run)");
            unlink(kept);
            return 1;
        }
    }
    if (!smp_run(cmd)) return 0;
    /* a partial file never takes the name: written aside (no fsync: a
     * cache of one CTest run), renamed */
    tt_status made = keyed ? tt_make_dirs(dir) : NULL;
    if (keyed && !made) {
        snprintf(part, sizeof part, "%s.%ld.part", kept, (long)getpid());
        if (copy_file(out_path, part)) rename(part, kept);
        else unlink(part);
    }
    tt_status_free(made);
    return 1;
}

/* The reference's input at `path`: the model's weights as they are now,
 * and `count` micro-batches of images and logits' gradients ("input",
 * "dlogits"; "input.K", "dlogits.K" for more than one). */
static void write_reference_input(tt_model *m, const rcase *c, int count, const float *input,
                                  const float *dlogits, const char *path)
{
    size_t in_n = (size_t)c->batch * 3 * c->height * c->width;
    size_t out_n = (size_t)c->batch * CLASSES * c->height * c->width;
    int64_t ishape[4] = {c->batch, 3, c->height, c->width};
    int64_t lshape[4] = {c->batch, CLASSES, c->height, c->width};
    tt_st_writer *w = NULL;
    TH_OK(tt_st_writer_create(&w));
    TH_OK(tt_weights_add(w, m));
    for (int k = 0; k < count; k++) {
        char in_name[16] = "input", out_name[16] = "dlogits";
        if (count > 1) {
            snprintf(in_name, sizeof in_name, "input.%d", k);
            snprintf(out_name, sizeof out_name, "dlogits.%d", k);
        }
        TH_OK(tt_st_writer_add(w, in_name, TT_ST_F32, 4, ishape, input + k * in_n));
        TH_OK(tt_st_writer_add(w, out_name, TT_ST_F32, 4, lshape, dlogits + k * out_n));
    }
    TH_OK(tt_st_writer_write(w, path));
    tt_st_writer_destroy(w);
}

/* Every gradient (train) and running statistic and counter of m against
 * the reference's in f ("grad.<name>", "grad32.<name>", "<name>"). */
static void compare_tensors(tt_safetensors *f, const rcase *c, tt_model *m, const float *grads,
                            const float *after, int train)
{
    const tt_param_table *pt = m->params;
    double e;
    worst_of classes[] = {{"encoder conv weights", 0, "", 0}, {"decoder conv weights", 0, "", 0},
                          {"batch norm weights/biases", 0, "", 0}, {"convolution biases", 0, "", 0},
                          {"running means", 0, "", 0}, {"running variances", 0, "", 0}};
    /* a gradient that is 0 in exact arithmetic (a bottleneck's bn2 bias:
     * its ReLU wholly open or shut before a 1x1 convolution and a batch
     * norm, whose input gradients sum to 0; a convolution's bias before
     * a batch norm) is float noise in both: a gradient is measured
     * against 1e-3 of the largest gradient of the model where it is
     * smaller, and one whose float64 reference is below 1e-9 of that
     * largest must be below 1e-5 of it (its float32 noise) */
    worst_of zero = {"zero in exact arithmetic", 0, "", 0};
    /* a gradient float32 PyTorch itself has far from float64 (past
     * 2.5e-5: behind a batch norm over a few values, as DeepLabV3+'s
     * image pooling's, the input's gradient is a difference of nearly
     * equal terms) passes within 4x of float32 PyTorch's error */
    worst_of torch32 = {"float32 PyTorch's", 0, "", 0};
    worst_of conditioned = {"ill-conditioned, ours/torch32", 0, "", 0};
    double largest = 0;
    for (size_t i = 0; i < pt->trainable_floats; i++) largest = fmax(largest, fabs(grads[i]));
    int missing = 0;
    for (int i = 0; i < pt->count && train; i++) {
        const tt_param *p = &pt->params[i];
        int64_t shape[4];
        for (int d = 0; d < p->ndim; d++) shape[d] = p->shape[d];
        float *ref = malloc(p->count * sizeof *ref);
        char name[96];
        snprintf(name, sizeof name, "%s%s", p->trainable ? "grad." : "", p->name);
        tt_status s = tt_safetensors_get_f32(f, name, p->ndim, shape, ref);
        if (s) {
            missing++;
            printf("\n  %s", tt_status_message(s));
            tt_status_free(s);
            free(ref);
            continue;
        }
        const float *got = (p->trainable ? grads : after) + p->offset;
        e = compare_floor(got, ref, p->count, p->trainable ? 1e-3 * largest : 0);
        if (p->trainable) { /* float32 PyTorch's own distance from float64 */
            float *ref32 = malloc(p->count * sizeof *ref32);
            snprintf(name, sizeof name, "grad32.%s", p->name);
            TH_OK(tt_safetensors_get_f32(f, name, p->ndim, shape, ref32));
            double e32 = compare_floor(ref32, ref, p->count, 1e-3 * largest);
            free(ref32);
            note(&torch32, e32, p->name);
            /* where float32 itself is far, within 4x of its distance */
            if (e32 > 2.5e-5 && e < 4 * e32) {
                note(&conditioned, e / e32, p->name);
                e = 0;
            }
        }
        double ref_max = 0;
        for (size_t q = 0; q < p->count; q++) ref_max = fmax(ref_max, fabs(ref[q]));
        if (p->trainable && ref_max < 1e-9 * largest) { /* 0 in exact arithmetic */
            double noise = 0;
            for (size_t q = 0; q < p->count; q++) noise = fmax(noise, fabs(got[q]));
            note(&zero, noise / largest, p->name);
            free(ref);
            continue;
        }
        worst_of *k = p->role == TT_PARAM_WEIGHT ? &classes[smp_is_encoder(p->name) ? 0 : 1]
                      : p->role == TT_PARAM_BIAS          ? &classes[3]
                      : p->role == TT_PARAM_RUNNING_MEAN  ? &classes[4]
                      : p->role == TT_PARAM_RUNNING_VAR   ? &classes[5]
                                                          : &classes[2];
        note(k, e, p->name);
        if (e >= (k - classes < 4 ? 1e-4 : 1e-5))
            printf("\n  %s: %s%s %.2e", c->label, p->trainable ? "gradient of " : "", p->name, e);
        free(ref);
    }
    CU_ASSERT_EQUAL(missing, 0);
    if (zero.count)
        printf("\n  %s: %-26s worst %.2e of %d (%s), of the largest gradient", c->label,
               zero.what, zero.worst, zero.count, zero.name);
    CU_ASSERT(zero.worst < 1e-5);
    if (train)
        printf("\n  %s: float32 PyTorch vs float64: worst gradient %.2e (%s)", c->label,
               torch32.worst, torch32.name);
    if (conditioned.count)
        printf("\n  %s: %d gradient%s where float32 PyTorch is past 2.5e-5: ours at most "
               "%.2fx its error (%s)", c->label, conditioned.count,
               conditioned.count > 1 ? "s" : "", conditioned.worst, conditioned.name);
    for (int k = 0; k < 6 && train; k++) {
        printf("\n  %s: %-26s worst %.2e of %d (%s)", c->label, classes[k].what,
               classes[k].worst, classes[k].count, classes[k].name);
        CU_ASSERT(classes[k].count > 0);
        CU_ASSERT(classes[k].worst < (k < 4 ? 1e-4 : 1e-5));
    }
    /* num_batches_tracked equal torch's */
    int counters_differ = 0;
    for (int i = 0; i < m->counter_count; i++) {
        int64_t v = -1;
        TH_OK(tt_safetensors_get_i64(f, m->counters[i].name, 0, NULL, &v));
        counters_differ += v != *m->counters[i].value;
    }
    printf("\n  %s: num_batches_tracked differing from torch: %d of %d", c->label,
           counters_differ, m->counter_count);
    CU_ASSERT_EQUAL(counters_differ, 0);
}

void smp_check_step(const rcase *c)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    int train = strcmp(c->mode, "eval") != 0;
    tt_model *m = smp_create(c->kind, c->mode, c->batch, c->height, c->width);
    const tt_param_table *pt = m->params;
    float *params = malloc(pt->trainable_floats * sizeof *params);
    float *state = malloc((pt->state_floats + 1) * sizeof *state);
    float *after = malloc((pt->state_floats + 1) * sizeof *after);
    float *grads = malloc(pt->trainable_floats * sizeof *grads);
    controlled(m, params, state);

    size_t in_n = (size_t)c->batch * 3 * c->height * c->width;
    size_t out_n = (size_t)c->batch * CLASSES * c->height * c->width;
    float *input = malloc(in_n * sizeof *input), *dlogits = malloc(out_n * sizeof *dlogits);
    float *logits = malloc(out_n * sizeof *logits), *want = malloc(out_n * sizeof *want);
    uint64_t seed = 5;
    th_fill_uniform(input, in_n, 0, 1, &seed);
    th_fill_uniform(dlogits, out_n, -1, 1, &seed);

    /* the reference's input: the weights as they are now, the image, the gradient */
    char in_path[64], out_path[64];
    smp_temp_path(in_path, sizeof in_path, "in");
    smp_temp_path(out_path, sizeof out_path, "out");
    write_reference_input(m, c, 1, input, dlogits, in_path);
    int64_t lshape[4] = {c->batch, CLASSES, c->height, c->width};

    /* the logits are read before backward (its temporaries may take their bytes) */
    TH_OK(tt_model_zero_grads(m));
    m->dropout_seed = DROPOUT_SEED, m->dropout_first = 0;
    TH_OK(tt_write(be, m->input, input, in_n * sizeof *input));
    TH_OK(tt_model_forward(m, c->batch, train));
    TH_OK(tt_read(be, logits, m->logits, out_n * sizeof *logits));
    if (train) {
        TH_OK(tt_write(be, m->dlogits, dlogits, out_n * sizeof *dlogits));
        TH_OK(tt_model_backward(m));
        TH_OK(tt_read(be, grads, tt_mem_of(m->grad_buffer), pt->trainable_floats * sizeof *grads));
    }
    TH_OK(tt_model_get_params(m, NULL, after));

    /* frozen norms (and every norm in eval mode) keep their statistics and
     * counters bit for bit; the others count the step */
    int kept_bad = 0, counted_bad = 0;
    for (int i = 0; i < pt->count; i++) {
        const tt_param *p = &pt->params[i];
        int frozen = !train || (strncmp(c->mode, "freeze", 6) == 0 && smp_is_encoder(p->name)) ||
                     strcmp(c->mode, "freeze_all") == 0;
        if (!p->trainable && frozen)
            kept_bad += memcmp(after + p->offset, state + p->offset, p->count * sizeof *after) != 0;
    }
    for (int i = 0; i < m->counter_count; i++) {
        const char *name = m->counters[i].name;
        int frozen = !train || (strncmp(c->mode, "freeze", 6) == 0 && smp_is_encoder(name)) ||
                     strcmp(c->mode, "freeze_all") == 0;
        counted_bad += *m->counters[i].value != (frozen ? 7 : 8);
    }
    printf("\n  %s: frozen statistics changed: %d tensors; counters not as expected: %d of %d",
           c->label, kept_bad, counted_bad, m->counter_count);
    CU_ASSERT_EQUAL(kept_bad, 0);
    CU_ASSERT_EQUAL(counted_bad, 0);

    char cmd[1024], key_cmd[1024];
    torch_command(cmd, sizeof cmd, "step", c, in_path, out_path, 0);
    torch_command(key_cmd, sizeof key_cmd, "step", c, "IN", "OUT", 0);
    int torch = smp_have("torch"), ran = torch && run_twin(cmd, key_cmd, in_path, out_path);
    unlink(in_path);
    if (torch) CU_ASSERT(ran);
    if (ran) {
        tt_safetensors *f = NULL;
        TH_OK(tt_safetensors_open(out_path, &f));
        float margin[2];
        int64_t one = 1;
        TH_OK(tt_safetensors_get_f32(f, "margin.relu", 1, &one, &margin[0]));
        TH_OK(tt_safetensors_get_f32(f, "margin.maxpool", 1, &one, &margin[1]));
        TH_OK(tt_safetensors_get_f32(f, "logits", 4, lshape, want));
        double e = compare(logits, want, out_n);
        printf("\n  %s: float64 margins: ReLU input %.1e, max pool gap %.1e", c->label,
               margin[0], margin[1]);
        /* float32 activations carry errors near 1e-7: a ReLU input closer to
         * 0 than 1e-6 could take either side (controlled(), other seeds) */
        CU_ASSERT(margin[0] > 1e-6);
        printf("\n  %s: logits vs torch %.2e", c->label, e);
        CU_ASSERT(e < 1e-4);
        compare_tensors(f, c, m, grads, after, train);
        tt_safetensors_close(f);
    }
    unlink(out_path);

    /* backward adds: a second step of the same batch doubles every gradient */
    if (c->twice) {
        float *grads2 = malloc(pt->trainable_floats * sizeof *grads2);
        TH_OK(tt_model_forward(m, c->batch, 1));
        TH_OK(tt_write(be, m->dlogits, dlogits, out_n * sizeof *dlogits));
        TH_OK(tt_model_backward(m));
        TH_OK(tt_read(be, grads2, tt_mem_of(m->grad_buffer), pt->trainable_floats * sizeof *grads2));
        for (size_t i = 0; i < pt->trainable_floats; i++) grads[i] *= 2;
        double twice = 0;
        for (int i = 0; i < pt->count; i++) {
            const tt_param *p = &pt->params[i];
            if (p->trainable) twice = fmax(twice, compare(grads2 + p->offset, grads + p->offset, p->count));
        }
        printf("\n  %s: backward twice vs 2x once: %.2e", c->label, twice);
        CU_ASSERT(twice < 1e-4);
        free(grads2);
    }
    free(params), free(state), free(after), free(grads);
    free(input), free(dlogits), free(logits), free(want);
    tt_model_destroy(m);
    CU_ASSERT_EQUAL(be->mem.current_total, 0);
}

/* One training step (two for `steps` 2: the gradients add up, the
 * statistics move twice) with or without checkpointing, from the
 * controlled weights: the logits of the last forward, the gradients and
 * the state after, in buffers the caller frees; the planned activations'
 * bytes returned. */
static size_t checkpointing_step(const rcase *c, int checkpointing, int steps, float **logits,
                                 float **grads, float **state)
{
    tt_backend *be = th_backend();
    tt_model *m = smp_create_checkpointing(c->kind, c->mode, c->batch, c->height, c->width,
                                       checkpointing);
    const tt_param_table *pt = m->params;
    float *params = malloc(pt->trainable_floats * sizeof *params);
    *state = malloc((pt->state_floats + 1) * sizeof **state);
    *grads = malloc(pt->trainable_floats * sizeof **grads);
    controlled(m, params, *state);
    size_t in_n = (size_t)c->batch * 3 * c->height * c->width;
    size_t out_n = (size_t)c->batch * CLASSES * c->height * c->width;
    float *input = malloc(in_n * sizeof *input), *dlogits = malloc(out_n * sizeof *dlogits);
    *logits = malloc(out_n * sizeof **logits);
    uint64_t seed = 5;
    th_fill_uniform(input, in_n, 0, 1, &seed);
    th_fill_uniform(dlogits, out_n, -1, 1, &seed);
    TH_OK(tt_model_zero_grads(m));
    for (int s = 0; s < steps; s++) {
        TH_OK(tt_write(be, m->input, input, in_n * sizeof *input));
        TH_OK(tt_model_forward(m, c->batch, 1));
        TH_OK(tt_read(be, *logits, m->logits, out_n * sizeof **logits));
        TH_OK(tt_write(be, m->dlogits, dlogits, out_n * sizeof *dlogits));
        TH_OK(tt_model_backward(m));
    }
    TH_OK(tt_read(be, *grads, tt_mem_of(m->grad_buffer), pt->trainable_floats * sizeof **grads));
    TH_OK(tt_model_get_params(m, NULL, *state));
    size_t activations = m->memory.activations;
    free(params), free(input), free(dlogits);
    tt_model_destroy(m);
    return activations;
}

/* --checkpointing makes again in the backward what the run without keeps
 * (encoder blocks, layer outputs but F1..F4, the pool, decoder conv1s):
 * the same bits in the logits, every gradient and every running
 * statistic, in less memory; trained and with every norm frozen (whose
 * outputs are made again from running statistics), at 32x32, where the
 * deepest decoder block's 2x2 planes take the norm's per-element tail and
 * their upsampled 4x4 its vectors. */
void smp_check_checkpointing(const rcase *c)
{
    tt_model *m = smp_create(c->kind, c->mode, c->batch, c->height, c->width);
    size_t trainable = m->params->trainable_floats, state_n = m->params->state_floats;
    tt_model_destroy(m);
    size_t out_n = (size_t)c->batch * CLASSES * c->height * c->width;
    float *l0, *g0, *s0, *l1, *g1, *s1;
    size_t a0 = checkpointing_step(c, 0, 2, &l0, &g0, &s0);
    size_t a1 = checkpointing_step(c, 1, 2, &l1, &g1, &s1);
    int logits_same = memcmp(l0, l1, out_n * sizeof *l0) == 0;
    int grads_same = memcmp(g0, g1, trainable * sizeof *g0) == 0;
    int state_same = memcmp(s0, s1, state_n * sizeof *s0) == 0;
    printf("\n  %s: checkpointing: logits %s, gradients %s, statistics %s; activations %zu -> %zu "
           "bytes", c->label, logits_same ? "equal" : "DIFFER", grads_same ? "equal" : "DIFFER",
           state_same ? "equal" : "DIFFER", a0, a1);
    CU_ASSERT(logits_same);
    CU_ASSERT(grads_same);
    CU_ASSERT(state_same);
    CU_ASSERT(a1 < a0);
    free(l0), free(g0), free(s0), free(l1), free(g1), free(s1);
    CU_ASSERT_EQUAL(th_backend()->mem.current_total, 0);
}

/* 16-bit storage: each kept convolution output is stored in fp16 or bf16
 * and its norm reads it there, so the step differentiates the model with
 * those outputs rounded: every gradient near fp32's, by the rounding of
 * the stored values carried through the norms (the figures printed), in
 * fewer activation bytes; with checkpointing too (what is made again is
 * fp32). */
void smp_check_16bit(const rcase *c)
{
    tt_model *m = smp_create(c->kind, c->mode, c->batch, c->height, c->width);
    size_t trainable = m->params->trainable_floats;
    tt_param_table table = *m->params; /* the layout, read after the model is gone */
    tt_param *params = malloc(sizeof *params * (size_t)table.count);
    memcpy(params, m->params->params, sizeof *params * (size_t)table.count);
    tt_model_destroy(m);
    float *l0, *g0, *s0;
    size_t a0 = checkpointing_step(c, 0, 1, &l0, &g0, &s0);
    const tt_precision kinds[2] = {TT_PRECISION_FP16, TT_PRECISION_BF16};
    /* relative L2 of all gradients, and the worst element of a tensor
     * relative to its largest (or to 1e-3 of the model's largest gradient,
     * below which a tensor is float noise about an exact 0): a norm's
     * weight gradient sums g xhat with cancellation, so one element moves
     * by far more than the rounding (2^-11 fp16, 2^-8 bf16); a broken store
     * is off by order 1 */
    const double l2_bounds[2] = {5e-3, 2e-2}, bounds[2] = {0.2, 0.5};
    for (int k = 0; k < 2; k++)
        for (int ckpt = 0; ckpt < 2; ckpt++) {
            smp_storage = kinds[k];
            float *l1, *g1, *s1;
            size_t a1 = checkpointing_step(c, ckpt, 1, &l1, &g1, &s1);
            smp_storage = TT_PRECISION_FP32;
            worst_of w = {"gradient", 0, "", 0};
            double largest = 0; /* a tensor below 1e-3 of it is float noise (0 exactly) */
            for (size_t i = 0; i < trainable; i++) largest = fmax(largest, fabs(g0[i]));
            worst_of ill = {"ill-conditioned", 0, "", 0};
            for (int i = 0; i < table.count; i++)
                if (params[i].trainable) {
                    int loose = c->ill && strncmp(params[i].name, c->ill, strlen(c->ill)) == 0;
                    note(loose ? &ill : &w,
                         compare_floor(g1 + params[i].offset, g0 + params[i].offset,
                                       params[i].count, 1e-3 * largest),
                         params[i].name);
                }
            if (ill.count)
                printf("\n  %s %s%s: %d tensors behind an ill-conditioned norm, worst %.2e of "
                       "its largest (%s)", c->label, tt_precision_name(kinds[k]),
                       ckpt ? " checkpointing" : "", ill.count, ill.worst, ill.name);
            double l2 = 0, ref = 0;
            for (size_t i = 0; i < trainable; i++)
                l2 += ((double)g1[i] - g0[i]) * ((double)g1[i] - g0[i]), ref += (double)g0[i] * g0[i];
            printf("\n  %s %s%s: gradients %.2e (L2, relative); worst tensor %.2e of its largest "
                   "(%s); activations %zu -> %zu bytes", c->label, tt_precision_name(kinds[k]),
                   ckpt ? " checkpointing" : "", sqrt(l2 / ref), w.worst, w.name, a0, a1);
            CU_ASSERT(sqrt(l2 / ref) < l2_bounds[k]);
            CU_ASSERT(w.worst < bounds[k]);
            if (!ckpt) CU_ASSERT(a1 < a0);
            free(l1), free(g1), free(s1);
        }
    free(l0), free(g0), free(s0), free(params);
    CU_ASSERT_EQUAL(th_backend()->mem.current_total, 0);
}

/* The names and shapes a checkpoint of `kind` holds (its parameters,
 * running statistics and counters, as tt_weights_add writes them), as
 * "name [d0, d1]" lines in *out (free()); their number returned. */
static int smp_c_names(const char *kind, char ***out)
{
    tt_model *m = smp_create(kind, "train", 2, 32, 32);
    const tt_param_table *pt = m->params;
    int n = pt->count + m->counter_count;
    char **names = calloc((size_t)n, sizeof *names);
    CU_ASSERT_FATAL(names != NULL);
    for (int i = 0; i < pt->count; i++) {
        const tt_param *p = &pt->params[i];
        char line[160];
        size_t used = (size_t)snprintf(line, sizeof line, "%s [", p->name);
        for (int d = 0; d < p->ndim; d++)
            used += (size_t)snprintf(line + used, sizeof line - used, "%s%d", d ? ", " : "",
                                     p->shape[d]);
        snprintf(line + used, sizeof line - used, "]");
        names[i] = strdup(line);
    }
    for (int i = 0; i < m->counter_count; i++) {
        char line[160];
        snprintf(line, sizeof line, "%s []", m->counters[i].name);
        names[pt->count + i] = strdup(line);
    }
    tt_model_destroy(m);
    *out = names;
    return n;
}

static int smp_by_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The PyTorch twins' names and shapes (python/smp_decoders.py, one
 * process for all n kinds): kind k's as "X [..]" lines in out[k], sorted,
 * their number in counts[k]; 0 when it does not run. */
static int smp_torch_names(const char *const *kinds, int n, char ***out, int *counts)
{
    char cmd[4096];
    size_t used = (size_t)snprintf(cmd, sizeof cmd, PY " %s/python/smp_decoders.py names --classes %d",
                                   TT_SOURCE_DIR, CLASSES);
    for (int k = 0; k < n && used < sizeof cmd; k++)
        used += (size_t)snprintf(cmd + used, sizeof cmd - used, " %s", kinds[k]);
    CU_ASSERT_FATAL(used < sizeof cmd);
    FILE *p = popen(cmd, "r");
    if (!p) return 0;
    int caps[SMP_MAX_KINDS] = {0};
    char line[512];
    for (int k = 0; k < n; k++) out[k] = NULL, counts[k] = 0;
    while (fgets(line, sizeof line, p)) {
        char model[64], name[160], shape[160];
        if (sscanf(line, "{\"model\": \"%63[^\"]\", \"name\": \"%159[^\"]\", \"shape\": %159[^}]}",
                   model, name, shape) != 3) {
            printf("\n  unexpected line from smp_decoders.py: %s", line);
            continue;
        }
        int k = 0;
        while (k < n && strcmp(kinds[k], model) != 0) k++;
        if (k == n) continue;
        if (counts[k] == caps[k])
            out[k] = realloc(out[k], (size_t)(caps[k] = caps[k] ? 2 * caps[k] : 256) * sizeof **out);
        char both[330];
        snprintf(both, sizeof both, "%s %s", name, shape);
        out[k][counts[k]++] = strdup(both);
    }
    int ok = pclose(p) == 0;
    for (int k = 0; k < n; k++) {
        if (!ok) {
            for (int i = 0; i < counts[k]; i++) free(out[k][i]);
            free(out[k]), out[k] = NULL, counts[k] = 0;
        } else if (counts[k]) {
            qsort(out[k], (size_t)counts[k], sizeof *out[k], smp_by_text);
        }
    }
    if (!ok) printf("\n  FAILED: %s", cmd);
    return ok;
}

int smp_every_kind(char kinds[][SMP_KIND_SIZE], int max)
{
    const char *s = TT_MODEL_CHOICES;
    int n = 0;
    while (*s && n < max) {
        size_t len = strcspn(s, "|");
        if (memchr(s, '-', len) && len < SMP_KIND_SIZE) /* not the plain unet */
            snprintf(kinds[n++], SMP_KIND_SIZE, "%.*s", (int)len, s);
        s += len + (s[len] == '|');
    }
    return n;
}

void smp_check_names(const char *const *kinds, int n)
{
    CU_ASSERT_FATAL(n <= SMP_MAX_KINDS);
    char **theirs[SMP_MAX_KINDS];
    int counts[SMP_MAX_KINDS];
    CU_ASSERT_FATAL(smp_torch_names(kinds, n, theirs, counts));
    for (int m = 0; m < n; m++) {
        char **ours;
        int o = smp_c_names(kinds[m], &ours), k = counts[m];
        qsort(ours, (size_t)o, sizeof *ours, smp_by_text);
        CU_ASSERT(k > 0);
        int only_ours = 0, only_theirs = 0, i = 0, j = 0;
        while (i < o || j < k) {
            int cmp = i == o ? 1 : j == k ? -1 : strcmp(ours[i], theirs[m][j]);
            if (cmp == 0) {
                i++, j++;
            } else if (cmp < 0) {
                if (only_ours++ < 5) printf("\n  only tiletrain's: %s", ours[i]);
                i++;
            } else {
                if (only_theirs++ < 5) printf("\n  only smp's: %s", theirs[m][j]);
                j++;
            }
        }
        printf("\n  %s: %d tensors and counters, %d in PyTorch's state_dict; %d only ours, %d "
               "only theirs (name and shape)", kinds[m], o, k, only_ours, only_theirs);
        CU_ASSERT_EQUAL(o, k);
        CU_ASSERT_EQUAL(only_ours, 0);
        CU_ASSERT_EQUAL(only_theirs, 0);
        for (i = 0; i < o; i++) free(ours[i]);
        for (j = 0; j < k; j++) free(theirs[m][j]);
        free(ours), free(theirs[m]);
    }
}

void smp_check_window(const rcase *c)
{
    tt_backend *be = th_backend();
    const double lr = 1e-3;
    tt_model *m = smp_create(c->kind, "train", c->batch, c->height, c->width);
    const tt_param_table *pt = m->params;
    float *params = malloc(pt->trainable_floats * sizeof *params);
    float *state = malloc((pt->state_floats + 1) * sizeof *state);
    float *grads = malloc(pt->trainable_floats * sizeof *grads);
    float *moved = malloc(pt->trainable_floats * sizeof *moved);
    controlled(m, params, state);
    size_t in_n = (size_t)c->batch * 3 * c->height * c->width;
    size_t out_n = (size_t)c->batch * CLASSES * c->height * c->width;
    float *input = malloc(2 * in_n * sizeof *input), *dlogits = malloc(2 * out_n * sizeof *dlogits);
    uint64_t seed = 9;
    th_fill_uniform(input, 2 * in_n, 0, 1, &seed);
    th_fill_uniform(dlogits, 2 * out_n, -1, 1, &seed);
    char in_path[64], out_path[64];
    smp_temp_path(in_path, sizeof in_path, "win");
    smp_temp_path(out_path, sizeof out_path, "wout");
    write_reference_input(m, c, 2, input, dlogits, in_path);

    /* the window: two micro-batches, their gradients added, one update */
    TH_OK(tt_model_zero_grads(m));
    for (int k = 0; k < 2; k++) {
        m->dropout_seed = DROPOUT_SEED;
        m->dropout_first = (int64_t)k * c->batch; /* crops 0 .. 2 batch - 1 */
        TH_OK(tt_write(be, m->input, input + k * in_n, in_n * sizeof *input));
        TH_OK(tt_model_forward(m, c->batch, 1));
        TH_OK(tt_write(be, m->dlogits, dlogits + k * out_n, out_n * sizeof *dlogits));
        TH_OK(tt_model_backward(m));
    }
    TH_OK(tt_read(be, grads, tt_mem_of(m->grad_buffer), pt->trainable_floats * sizeof *grads));
    tt_optimizer *opt = NULL;
    TH_OK(tt_optimizer_create(be, &(tt_optimizer_request){"adamw", lr, -1, 0, 0},
                              pt->trainable_floats, &opt));
    TH_OK(tt_optimizer_step(opt, tt_mem_of(m->param_buffer), tt_mem_of(m->grad_buffer), lr));
    tt_optimizer_destroy(opt);
    TH_OK(tt_model_get_params(m, moved, state));

    char cmd[1024], key_cmd[1024];
    torch_command(cmd, sizeof cmd, "window", c, in_path, out_path, lr);
    torch_command(key_cmd, sizeof key_cmd, "window", c, "IN", "OUT", lr);
    int torch = smp_have("torch"), ran = torch && run_twin(cmd, key_cmd, in_path, out_path);
    unlink(in_path);
    if (torch) CU_ASSERT(ran);
    if (ran) {
        tt_safetensors *f = NULL;
        TH_OK(tt_safetensors_open(out_path, &f));
        compare_tensors(f, c, m, grads, state, 1);
        /* the update: AdamW's first step moves each weight by lr g / (|g| +
         * eps) (and the decay), about lr times the gradient's sign, so a
         * weight whose gradient is not known to 10x its error (float noise
         * about 0), or is within 10x of eps (1e-8), may move otherwise
         * (a sign the other way moves it 2 lr off): those are counted, the
         * others compared */
        double worst = 0;
        size_t compared = 0, noise = 0;
        char worst_name[96] = "";
        for (int i = 0; i < pt->count; i++) {
            const tt_param *p = &pt->params[i];
            if (!p->trainable) continue;
            int64_t shape[4];
            for (int d = 0; d < p->ndim; d++) shape[d] = p->shape[d];
            float *after = malloc(p->count * sizeof *after), *g = malloc(p->count * sizeof *g);
            char name[112];
            snprintf(name, sizeof name, "after.%s", p->name);
            TH_OK(tt_safetensors_get_f32(f, name, p->ndim, shape, after));
            snprintf(name, sizeof name, "grad.%s", p->name);
            TH_OK(tt_safetensors_get_f32(f, name, p->ndim, shape, g));
            for (size_t q = 0; q < p->count; q++) {
                double ref = fabs(g[q]), err = fabs((double)grads[p->offset + q] - g[q]);
                if (ref < 1e-7 || ref < 10 * err) {
                    noise++;
                    continue;
                }
                compared++;
                double d = fabs((double)moved[p->offset + q] - after[q]) / lr;
                if (d > worst) worst = d, snprintf(worst_name, sizeof worst_name, "%s", p->name);
            }
            free(after), free(g);
        }
        printf("\n  %s: AdamW step after two micro-batches: weights within %.2e of lr of "
               "torch's (%s) over %zu weights; %zu whose gradient is noise not compared",
               c->label, worst, worst_name, compared, noise);
        CU_ASSERT(worst < 2e-2);
        CU_ASSERT(compared > noise);
        tt_safetensors_close(f);
    }
    unlink(out_path);
    free(params), free(state), free(grads), free(moved), free(input), free(dlogits);
    tt_model_destroy(m);
    CU_ASSERT_EQUAL(be->mem.current_total, 0);
}
