/* export --verify: onnxruntime against tiletrain (see export_verify.h). */
#include "cli/export_verify.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/status.h"
#include "data/image.h"
#include "infer/predict.h"

/* tools/onnx_verify.py, embedded at build time (cmake/embed_text.cmake) */
extern const unsigned char tt_onnx_verify_py[];
extern const unsigned long tt_onnx_verify_py_size;

#define MAX_INPUTS 2
#define TOLERANCE "1e-4"

typedef struct scratch {
    char dir[PATH_MAX - 64];
    char files[2 * MAX_INPUTS + 1][PATH_MAX];
    int file_count;
} scratch;

static tt_status write_bytes(scratch *s, const char *name, const void *data, size_t size)
{
    char *path = s->files[s->file_count];
    char joined[PATH_MAX];
    snprintf(joined, sizeof joined, "%s/%s", s->dir, name);
    memcpy(path, joined, sizeof joined);
    FILE *f = fopen(path, "wb");
    if (!f) return tt_error_new(TT_ERR_IO, "--verify: cannot write %s: %s", path, strerror(errno));
    s->file_count++;
    int ok = fwrite(data, 1, size, f) == size;
    if (fclose(f) != 0 || !ok)
        return tt_error_new(TT_ERR_IO, "--verify: cannot write %s: %s", path, strerror(errno));
    return NULL;
}

/* The interpreter: the given one, venv/bin/python3 beside the binary
 * (tools/venv.sh's build/venv for build/tiletrain), else python3. */
static void interpreter(const char *given, char *out, size_t size)
{
    if (given && given[0]) {
        snprintf(out, size, "%s", given);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        snprintf(out, size, "%.*s/venv/bin/python3", (int)(size - 20), exe);
        if (access(out, X_OK) == 0) return;
    }
    snprintf(out, size, "python3");
}

/* A random image of the tile (pixel values 0..255, a fixed seed), or the
 * top-left tile of the given one, as interleaved RGB (*rgb: free()). */
static tt_status input_image(const char *path, int width, int height, uint8_t **rgb)
{
    size_t pixels = (size_t)width * height;
    *rgb = tt_malloc(pixels * 3);
    if (!*rgb) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "--verify: out of host memory");
    if (!path) {
        uint64_t state = 0x9e3779b97f4a7c15u;
        for (size_t i = 0; i < pixels * 3; i++) {
            state ^= state << 13, state ^= state >> 7, state ^= state << 17;
            (*rgb)[i] = (uint8_t)(state >> 24);
        }
        return NULL;
    }
    tt_image image = {0};
    TT_TRY(tt_error_prefix(tt_image_load(path, 0, &image), "--image"));
    if (image.width < width || image.height < height) {
        tt_status status = tt_error_new(TT_ERR_INVALID_ARGUMENT, "--image %s is %dx%d, smaller "
                                        "than the %dx%d the model is exported at: give a larger "
                                        "image or a smaller --size", path, image.height,
                                        image.width, height, width);
        tt_image_free(&image);
        return status;
    }
    for (int y = 0; y < height; y++)
        memcpy(*rgb + (size_t)y * width * 3, image.pixels + (size_t)y * image.width * 3,
               (size_t)width * 3);
    tt_image_free(&image);
    return NULL;
}

/* tiletrain's output for one image, and the image as (1, 3, H, W) floats,
 * into the scratch folder; its pair argument for the checker into arg. */
static tt_status reference(tt_infer_model *im, const tt_export_check *c, const char *name,
                           const uint8_t *rgb, scratch *s, char *arg, size_t arg_size)
{
    tt_status status = NULL;
    tt_model *m = im->model;
    int w = m->width, h = m->height, classes = im->spec.classes;
    size_t plane = (size_t)w * h;
    float *pixels = tt_malloc(3 * plane * sizeof *pixels);
    float *logits = tt_malloc((size_t)classes * plane * sizeof *logits);
    if (!pixels || !logits) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "--verify: out of host memory");
        goto cleanup;
    }
    for (size_t p = 0; p < plane; p++)
        for (int ch = 0; ch < 3; ch++) pixels[ch * plane + p] = rgb[p * 3 + ch];
    tt_memory_image image = {rgb, w, h};
    tt_crop_reader reader = tt_crop_reader_memory(&image);
    tt_predict_options po = tt_predict_options_default();
    po.blend = TT_BLEND_MEAN, po.overlap = 0, po.batch = 1;
    memcpy(po.mean, im->mean, sizeof po.mean);
    memcpy(po.std, im->std, sizeof po.std);
    TT_CHECK(tt_predict_image(m, &reader, &po, logits));
    if (c->head == TT_ONNX_HEAD_SIGMOID) tt_predict_sigmoid(logits, classes, plane);
    if (c->head == TT_ONNX_HEAD_SOFTMAX) tt_predict_softmax(logits, classes, plane);
    char file[64];
    snprintf(file, sizeof file, "%s.input.f32", name);
    TT_CHECK(write_bytes(s, file, pixels, 3 * plane * sizeof *pixels));
    snprintf(file, sizeof file, "%s.tiletrain.f32", name);
    TT_CHECK(write_bytes(s, file, logits, (size_t)classes * plane * sizeof *logits));
    snprintf(arg, arg_size, "%s:%s:%s:1,3,%d,%d:%d", name, s->files[s->file_count - 2],
             s->files[s->file_count - 1], h, w, classes);
cleanup:
    free(pixels);
    free(logits);
    return status;
}

/* Runs the checker; its exit status in *code. */
static tt_status run_checker(const char *python, const char *script, const char *onnx,
                             char pairs[][2 * PATH_MAX + 64], int count, int *code)
{
    char *argv[8 + MAX_INPUTS];
    int n = 0;
    argv[n++] = (char *)python, argv[n++] = (char *)script;
    argv[n++] = "--model", argv[n++] = (char *)onnx, argv[n++] = "--tolerance";
    argv[n++] = TOLERANCE;
    for (int i = 0; i < count; i++) argv[n++] = pairs[i];
    argv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return tt_error_new(TT_ERR_IO, "--verify: cannot start %s: %s", python, strerror(errno));
    if (pid == 0) {
        execvp(python, argv);
        fprintf(stderr, "tiletrain: --verify: cannot run %s: %s\n", python, strerror(errno));
        _exit(127);
    }
    int wstatus;
    while (waitpid(pid, &wstatus, 0) < 0)
        if (errno != EINTR) return tt_error_new(TT_ERR_IO, "--verify: waiting for %s: %s", python, strerror(errno));
    *code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128;
    return NULL;
}

static tt_status checked(const char *python, const char *onnx, int code)
{
    switch (code) {
    case 0: return NULL;
    case 1:
        return tt_error_new(TT_ERR_FORMAT, "--verify: onnxruntime's output of %s differs from "
                            "tiletrain's by more than " TOLERANCE " of its scale (the lines "
                            "above)", onnx);
    case 3:
        return tt_error_new(TT_ERR_UNSUPPORTED, "--verify: %s has no onnxruntime or numpy: run "
                            "tools/venv.sh (build/venv), or %s -m pip install onnxruntime numpy, "
                            "or give --python", python, python);
    case 4:
        return tt_error_new(TT_ERR_FORMAT, "--verify: onnxruntime cannot load %s (the line "
                            "above says why)", onnx);
    case 127:
        return tt_error_new(TT_ERR_IO, "--verify: cannot run %s: give --python PATH to a Python "
                            "3 with onnxruntime (tools/venv.sh makes build/venv)", python);
    default:
        return tt_error_new(TT_ERR_IO, "--verify: %s onnx_verify.py failed (exit %d)", python, code);
    }
}

tt_status tt_export_verify(tt_infer_model *model, const tt_export_check *c)
{
    tt_status status = NULL;
    scratch *s = tt_calloc(1, sizeof *s);
    char (*pairs)[2 * PATH_MAX + 64] = tt_calloc(MAX_INPUTS, sizeof *pairs);
    uint8_t *rgb = NULL;
    if (!s || !pairs) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "--verify: out of host memory");
        goto cleanup;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(s->dir, sizeof s->dir, "%s/tiletrain-verify-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(s->dir)) {
        status = tt_error_new(TT_ERR_IO, "--verify: cannot make %s: %s", s->dir, strerror(errno));
        s->dir[0] = 0;
        goto cleanup;
    }
    TT_CHECK(write_bytes(s, "onnx_verify.py", tt_onnx_verify_py, tt_onnx_verify_py_size));
    int count = 0;
    const char *names[MAX_INPUTS] = {"random", "image"}, *paths[MAX_INPUTS] = {NULL, c->image};
    for (int i = 0; i < MAX_INPUTS; i++) {
        if (i > 0 && !paths[i]) continue;
        free(rgb);
        rgb = NULL;
        TT_CHECK(input_image(paths[i], model->model->width, model->model->height, &rgb));
        TT_CHECK(reference(model, c, names[i], rgb, s, pairs[count], sizeof pairs[count]));
        count++;
    }
    char python[PATH_MAX];
    interpreter(c->python, python, sizeof python);
    int code = 0;
    TT_CHECK(run_checker(python, s->files[0], c->onnx, pairs, count, &code));
    TT_CHECK(checked(python, c->onnx, code));
cleanup:
    if (s) {
        for (int i = 0; i < s->file_count; i++) remove(s->files[i]);
        if (s->dir[0]) rmdir(s->dir);
    }
    free(s);
    free(pairs);
    free(rgb);
    return status;
}
