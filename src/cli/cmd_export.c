/*
 * tiletrain export: a checkpoint as an ONNX file (deploy/onnx_export.h says
 * what the graph holds), and with --verify the file run in onnxruntime
 * against tiletrain's own logits (cli/export_verify.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "cli/commands.h"
#include "cli/export_verify.h"
#include "core/status.h"
#include "deploy/onnx_export.h"
#include "infer/model_load.h"
#include "io/safetensors.h"
#include "ops/conv_algo.h"

typedef struct export_options {
    char checkpoint[TT_OPT_STRING_MAX];
    char onnx[TT_OPT_STRING_MAX];
    int opset;
    int dynamic_size;
    int size[2];
    int batch_norm;    /* tt_onnx_batch_norm */
    int with_sigmoid, with_softmax;
    int raw_weights;
    int verify;
    char image[TT_OPT_STRING_MAX];
    char python[TT_OPT_STRING_MAX];
    char device[TT_OPT_STRING_MAX];
    char backend[TT_OPT_STRING_MAX];
    char algo[TT_OPT_STRING_MAX];
} export_options;

#define OPT(name, kind, field, meta, help, lo, hi) \
    {name, kind, offsetof(export_options, field), meta, help, lo, hi, NULL}

static const tt_opt option_table[] = {
    OPT("checkpoint", TT_OPT_STRING, checkpoint, "FILE", "trained weights (safetensors) with their \"model\" metadata", 1, 0),
    OPT("onnx", TT_OPT_STRING, onnx, "OUT.onnx", "the file to write (through OUT.onnx.tmp, renamed when whole and, with --verify, verified; else removed)", 1, 0),
    OPT("opset", TT_OPT_INT, opset, "N", "ONNX operator set, 7 to 21 (default 17; Resize and Softmax, in the models that have them, need 13)", 1, 1000),
    OPT("size", TT_OPT_SIZE2, size, "HxW", "the input's fixed size, multiples of the model's unit (32; 16 for deeplabv3plus; 2^depth for unet); default: the tile the checkpoint's run trained on; with --dynamic-size, the size the model is built and verified at (default 64x64)", 1, 0),
    OPT("dynamic-size", TT_OPT_FLAG, dynamic_size, NULL, "batch, height and width symbolic (N, H, W): any size the model takes", 1, 0),
    {"batch-norm", TT_OPT_ENUM, offsetof(export_options, batch_norm), "KIND", "fold (into the convolution before it: its weight and bias; default) or keep (BatchNormalization nodes with the running statistics)", 1, 0, "fold|keep"},
    OPT("with-sigmoid", TT_OPT_FLAG, with_sigmoid, NULL, "output `probabilities`: a sigmoid per class after the logits (multi-label)", 1, 0),
    OPT("with-softmax", TT_OPT_FLAG, with_softmax, NULL, "output `probabilities`: a softmax across classes after the logits (class-index)", 1, 0),
    {"weights", TT_OPT_ENUM, offsetof(export_options, raw_weights), "KIND", "ema (the moving average, where the checkpoint's run kept one) or raw (default ema)", 1, 0, "ema|raw"},
    OPT("verify", TT_OPT_FLAG, verify, NULL, "run the file in onnxruntime on a random image (and --image) and require its output within 1e-4 of tiletrain's predict (max |diff| / max |output|); with --dynamic-size as a batch too and at a second size", 1, 0),
    OPT("image", TT_OPT_STRING, image, "IMG", "--verify: a real image too (its top-left --size crop)", 1, 0),
    OPT("python", TT_OPT_STRING, python, "PATH", "--verify: a Python with onnxruntime and numpy (default: venv/bin/python3 beside the tiletrain binary, as tools/venv.sh makes it, else python3)", 1, 0),
    OPT("device", TT_OPT_STRING, device, "SPEC", "device index or part of its name (the model is loaded and, with --verify, run there)", 1, 0),
    {"backend", TT_OPT_CHOICE, offsetof(export_options, backend), "NAME", TT_BACKEND_HELP, 1, 0, TT_BACKEND_CHOICES},
    {"algo", TT_OPT_CHOICE, offsetof(export_options, algo), "NAME", TT_CONV_ALGO_HELP " (--verify's forward, as predict's)", 1, 0, TT_CONV_ALGO_CHOICES},
};
#define OPTION_COUNT (sizeof option_table / sizeof option_table[0])

static void help(void)
{
    printf("usage: tiletrain export --checkpoint FILE --onnx OUT.onnx [--size HxW] [--dynamic-size]\n"
           "           [--opset N] [--batch-norm fold|keep] [--with-sigmoid | --with-softmax] [--verify]\n"
           "\n"
           "Writes the checkpoint's model as ONNX: input `image`, float (N, 3, H, W) pixel\n"
           "values 0..255, normalised inside the graph with the checkpoint's mean and std;\n"
           "output `logits` (N, classes, H, W), or `probabilities` with --with-sigmoid or\n"
           "--with-softmax.  Parameters keep their PyTorch names.  --verify runs the file\n"
           "in onnxruntime and compares it with tiletrain's own prediction.\n"
           "\n"
           "example:\n"
           "  tiletrain export --checkpoint runs/a/best.safetensors --onnx model.onnx \\\n"
           "      --dynamic-size --with-sigmoid --verify\n"
           "\n"
           "options:\n");
    tt_opt_print_help(option_table, OPTION_COUNT, stdout);
}

/* The tile the checkpoint's run trained on (its "tile" metadata, which
 * `train` writes) into size, *found 1; *found 0 when it has none. */
static tt_status training_tile(const char *path, int size[2], int *found)
{
    tt_safetensors *f = NULL;
    *found = 0;
    TT_TRY(tt_safetensors_open(path, &f));
    const char *tile = tt_safetensors_metadata(f, "tile");
    tt_status status = NULL;
    if (tile && sscanf(tile, "%dx%d", &size[0], &size[1]) == 2 && size[0] > 0 && size[1] > 0)
        *found = 1;
    else if (tile)
        status = tt_error_new(TT_ERR_FORMAT, "%s: metadata tile = '%.40s' is not HxW; give "
                              "--size HxW", path, tile);
    tt_safetensors_close(f);
    return status;
}

/* The checkpoint's model at a tile of height x width. */
static tt_status load(tt_backend *be, const export_options *o, int height, int width,
                      tt_infer_model *model)
{
    tt_conv_algo algo;
    TT_TRY(tt_conv_algo_setting(o->algo, &algo));
    TT_TRY(tt_infer_model_load(be, o->checkpoint, 1, height, width, algo, TT_PRECISION_FP32,
                               model));
    return o->raw_weights ? tt_infer_model_use_raw(model, o->checkpoint) : NULL;
}

/* --verify of the file at `path`: at the export's size, and with
 * --dynamic-size at a second one too (a tile unit taller; the random image
 * alone, as --image may be smaller). */
static tt_status verify(tt_backend *be, const export_options *o, tt_infer_model *model,
                        tt_onnx_head head, const char *path)
{
    tt_export_check check = {.onnx = path, .python = o->python,
                             .image = o->image[0] ? o->image : NULL, .head = head};
    TT_TRY(tt_export_verify(model, &check));
    if (!o->dynamic_size) return NULL;
    tt_infer_model taller = {0};
    int unit = tt_model_spec_tile_unit(&model->spec);
    tt_status status = load(be, o, o->size[0] + unit, o->size[1], &taller);
    check.image = NULL;
    if (!status) status = tt_export_verify(&taller, &check);
    tt_infer_model_free(&taller);
    return status;
}

static tt_status run(const export_options *o)
{
    tt_status status = NULL;
    tt_backend *be = NULL;
    tt_infer_model model = {0};
    char tmp[TT_OPT_STRING_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", o->onnx);
    TT_TRY(tt_onnx_built()); /* before loading anything */
    tt_backend_request request = {0};
    TT_CHECK(tt_error_prefix(tt_backend_choose(o->backend, o->device, &request), "--backend"));
    TT_CHECK(tt_backend_create(&request, &be));
    TT_CHECK(load(be, o, o->size[0], o->size[1], &model));
    char description[160];
    tt_model_spec_describe(&model.spec, description, sizeof description);
    tt_onnx_options x = tt_onnx_options_default();
    x.opset = o->opset;
    x.dynamic_size = o->dynamic_size;
    x.batch_norm = (tt_onnx_batch_norm)o->batch_norm;
    x.head = o->with_sigmoid ? TT_ONNX_HEAD_SIGMOID
             : o->with_softmax ? TT_ONNX_HEAD_SOFTMAX : TT_ONNX_HEAD_LOGITS;
    memcpy(x.mean, model.mean, sizeof x.mean);
    memcpy(x.std, model.std, sizeof x.std);
    x.description = description;
    /* with --verify, OUT.tmp is checked before it becomes OUT */
    const char *path = o->verify ? tmp : o->onnx;
    TT_CHECK(tt_onnx_export(model.model, &x, path));
    if (o->verify) {
        status = verify(be, o, &model, x.head, path);
        if (!status && rename(tmp, o->onnx) != 0)
            status = tt_error_new(TT_ERR_IO, "cannot rename %s to %s: %s", tmp, o->onnx,
                                  strerror(errno));
        if (status) {
            remove(tmp);
            status = tt_error_prefix(status, "%s not written", o->onnx);
            goto cleanup;
        }
    }
    printf("wrote %s: %s, opset %d, %s, batch norm %s, input %s%s\n", o->onnx, description,
           x.opset, x.head == TT_ONNX_HEAD_SIGMOID ? "sigmoid probabilities"
           : x.head == TT_ONNX_HEAD_SOFTMAX ? "softmax probabilities" : "logits",
           x.batch_norm == TT_ONNX_BN_FOLD ? "folded" : "kept",
           x.dynamic_size ? "N x 3 x H x W" : "1 x 3 x H x W fixed",
           o->verify ? ", verified in onnxruntime" : "");
cleanup:
    tt_infer_model_free(&model);
    tt_backend_destroy(be);
    return status;
}

int tt_cmd_export(int argc, char **argv)
{
    export_options o = {.opset = TT_ONNX_OPSET_DEFAULT};
    strcpy(o.backend, "auto");
    strcpy(o.algo, "auto");
    unsigned char given[OPTION_COUNT];
    int rc = tt_cli_parse_given("export", option_table, OPTION_COUNT, &o, given, argc, argv, help);
    if (rc >= 0) return rc;
    if (!o.checkpoint[0]) return tt_cli_usage_error("export", "give --checkpoint FILE");
    if (!o.onnx[0]) return tt_cli_usage_error("export", "give --onnx OUT.onnx, the file to write");
    if (o.with_sigmoid && o.with_softmax)
        return tt_cli_usage_error("export", "--with-sigmoid and --with-softmax: give one (sigmoid "
                                  "for multi-label models, softmax for class-index ones)");
    if (o.image[0] && !o.verify)
        return tt_cli_usage_error("export", "--image is the input --verify checks: give --verify too");
    tt_status status = NULL;
    if (!given[tt_opt_index(option_table, OPTION_COUNT, "size")]) {
        o.size[0] = o.size[1] = 64;
        if (!o.dynamic_size) {
            int found = 0;
            status = training_tile(o.checkpoint, o.size, &found);
            if (!status && !found)
                return tt_cli_usage_error("export", "give --size HxW, the input size the ONNX "
                                          "graph fixes (%s records no training tile: it was "
                                          "written before checkpoints did), or --dynamic-size "
                                          "for any size", o.checkpoint);
        }
    }
    if (!status) status = run(&o);
    return status ? tt_cli_fail(status) : 0;
}
