/* The option table of `tiletrain train`. */
#include "train/train_options.h"

#include <math.h>
#include <string.h>

#include "ops/conv_algo.h"
#include "train/checkpoint.h"

#define OPT(name, kind, field, meta, help, lo, hi) \
    {name, kind, offsetof(tt_train_options, field), meta, help, lo, hi, NULL}
#define ENUM(name, field, meta, help, choices) \
    {name, TT_OPT_ENUM, offsetof(tt_train_options, field), meta, help, 1, 0, choices}

const tt_opt tt_train_option_table[] = {
    OPT("data", TT_OPT_STRING, data, "DIR", "data set folder (see datasets/README.md)", 1, 0),
    OPT("plan", TT_OPT_STRING, plan, "auto|off|FILE", "the recipe: auto (train's default) plans it from the data set and the device as `tiletrain plan` does (written to OUT/plan.json and train.jsonl; a --resume reads the run's back), FILE takes a plan.json's, off the built-in defaults below; every flag given overrides its part of the plan", 1, 0),
    ENUM("format", format, "F", "data set format: auto (detected from the folder), folder, kaggle-rle or raster (DIR/images/NAME.tif and DIR/masks/NAME.tif: GeoTIFF pairs, docs/guide.md)", TT_DATASET_FORMAT_CHOICES),
    OPT("csv", TT_OPT_STRING, csv, "FILE", "kaggle-rle: the CSV (default DIR/train.csv)", 1, 0),
    OPT("images", TT_OPT_STRING, images, "DIR", "folder of the images (default by format)", 1, 0),
    OPT("cache-dir", TT_OPT_STRING, cache_dir, "DIR", "tile cache (default ~/.cache/tiletrain/tiles)", 1, 0),
    OPT("tile", TT_OPT_SIZE2, tile, "HxW", "crop size trained on", 1, 0),
    OPT("fg-fraction", TT_OPT_DOUBLE, fg_fraction, "X", "share of crops centred on foreground, 0..1", 0, 1),
    OPT("val-fraction", TT_OPT_DOUBLE, val_fraction, "X", "share of images held out for validation (0: none); raster sets: of whole scenes when there are several, else about one block in round(1/X) of a grid of blocks twice the --tile over the one scene, which training crops never touch", 0, 0.9),
    OPT("val-list", TT_OPT_STRING, val_list, "FILE", "validation images, one name per line (instead of --val-fraction)", 1, 0),
    OPT("no-shuffle", TT_OPT_FLAG, no_shuffle, NULL, "images in sorted name order", 1, 0),
    OPT("augment", TT_OPT_STRING, augment, "SPEC", "augmentation of the training crops, each transform drawn per crop from the seed (exact on a resume, any rank count): none, default (flip, rot90, brightness, contrast) or a list of name[:key=value...] of flip:p, rot90:p, brightness:range:p, contrast:range:p, affine:p:shift:scale:rotate (shift-scale-rotate; pixels from outside the image are ignored), grid:p:steps:limit, elastic:p:alpha:spacing, gamma:p:range, hsv:p:hue:sat, noise:p:std, blur:p:sigma (docs/guide.md)", 1, 0),
    OPT("no-augment", TT_OPT_FLAG, no_augment, NULL, "no augmentation (--augment none)", 1, 0),
    OPT("skip-bad", TT_OPT_FLAG, skip_bad, NULL, "leave bad images out (reported) instead of stopping", 1, 0),
    OPT("max-pixels", TT_OPT_DOUBLE, max_pixels, "N", "refuse images of more pixels than this", 1, 1e12),
    OPT("mean", TT_OPT_TRIPLE, mean, "R,G,B", "subtract from pixels / 255, e.g. 0.485,0.456,0.406 (unset: nothing; a ResNet encoder: ImageNet's)", 1, 0),
    OPT("std", TT_OPT_TRIPLE, std, "R,G,B", "then divide by this, e.g. 0.229,0.224,0.225", 1e-30, 1e30),
    OPT("bands", TT_OPT_STRING, bands, "LIST", "raster data: the image bands trained on, counted from 1 (e.g. 4,3,2 or 2,3,4,8; default: all), each normalised by its own mean and standard deviation in its samples' scale; checkpoints keep them for predict", 1, 0),
    OPT("mask-nodata", TT_OPT_INT, mask_nodata, "V", "raster data: a mask value ignored in the loss besides 255 (-1: none)", -1, 254),
    ENUM("model", model, "NAME", "unet (--base-channels, --depth, --norm size it), or segmentation_models_pytorch's Unet, FPN, Linknet or DeepLabV3Plus over an encoder: unet-, fpn-, linknet- or deeplabv3plus- then resnet18, resnet34, resnet50, resnext50_32x4d or efficientnet-b0 .. -b4 (tiles multiples of 32; 16 for deeplabv3plus)", TT_MODEL_CHOICES),
    OPT("freeze-encoder-bn", TT_OPT_FLAG, freeze_encoder_bn, NULL, "the encoder models: the encoder's batch norms use and keep their running statistics, affine parameters trained (FrozenBatchNorm2d)", 1, 0),
    OPT("freeze-bn", TT_OPT_FLAG, freeze_bn, NULL, "the encoder models: every batch norm so (the decoder's too): no statistic depends on the micro-batch, so B x N equals N*B x 1", 1, 0),
    OPT("encoder-lr", TT_OPT_STRING, encoder_lr, "X|Rx", "the encoder models: the encoder's learning rate, or a ratio of --lr (0.1x); its own AdamW/SGD parameter group", 1, 0),
    OPT("drop-path", TT_OPT_DOUBLE, drop_path, "R", "EfficientNet encoders: stochastic depth, timm's drop_path_rate: block i of n drops its residual branch per image with probability R i / n in training (0: none, as smp's tu-efficientnet encoders)", 0, 0.9),
    OPT("freeze-encoder-steps", TT_OPT_INT, freeze_encoder_steps, "K", "the encoder models: encoder weights not updated for the first K steps (its optimizer state neither)", 0, 1e9),
    OPT("classes", TT_OPT_INT, classes, "C", "classes (default: from the data set)", 0, 254),
    OPT("base-channels", TT_OPT_INT, base_channels, "C", "channels of the top UNet level", 1, 1024),
    OPT("depth", TT_OPT_INT, depth, "D", "UNet levels below the top", 1, 8),
    ENUM("norm", norm, "KIND", "normalisation: none, group or batch", TT_NORM_CHOICES),
    OPT("groups", TT_OPT_INT, groups, "G", "groups of group norm", 1, 1024),
    OPT("loss", TT_OPT_STRING, loss, "SPEC", "the training loss, a sum of [WEIGHT*]NAME[:KEY=VALUE...] terms: bce (multi-label), ce (class index), focal:gamma:alpha, dice:smooth:reduce, tversky:alpha:beta:smooth:reduce, lovasz (hinge for multi-label, softmax for class index); reduce=image (per image and class) or window (per class over the whole window, two passes); every term is exact over the window and the ranks; auto: bce or ce, e.g. bce+0.5*dice (docs/guide.md)", 1, 0),
    OPT("class-weights", TT_OPT_STRING, class_weights, "W0,W1,...", "a weight per class that every loss term applies (cross-entropy divides by the weights of the valid pixels, as PyTorch's weight=; region losses take a weighted mean over classes)", 1, 0),
    OPT("steps", TT_OPT_INT, steps, "S", "optimizer steps (100 by default, or all of --epochs)", 1, 1e9),
    OPT("epochs", TT_OPT_INT, epochs, "E", "stop after E passes over the data (the last window may be short)", 1, 1e6),
    OPT("checkpointing", TT_OPT_FLAG, checkpointing, NULL, "keep block inputs only; recompute in backward (less memory; default off, on when one image does not fit)", 1, 0),
    OPT("micro-batch", TT_OPT_INT_AUTO, micro_batch, "B|auto", "images per forward pass; auto: the most that fit --mem-limit", 1, 4096),
    OPT("batch", TT_OPT_INT, batch, "N", "with --micro-batch auto: images per optimizer step; accum is N / B, rounded up", 1, 1e6),
    OPT("mem-limit", TT_OPT_BYTES, mem_limit, "SIZE", "device memory to stay under, e.g. 2GiB (default: the device's, less 10%)", 1, 0),
    OPT("accum", TT_OPT_INT, accum, "N", "micro-batches per optimizer step", 1, 1e6),
    ENUM("optimizer", optimizer, "NAME", "adamw or sgd", TT_OPTIMIZER_CHOICES),
    OPT("lr", TT_OPT_DOUBLE, lr, "X", "learning rate", 0, 10),
    OPT("weight-decay", TT_OPT_DOUBLE, weight_decay, "X", "AdamW: decoupled, 0.01 by default; SGD: coupled, 0 by default", 0, 10),
    OPT("momentum", TT_OPT_DOUBLE, momentum, "X", "SGD momentum", 0, 1),
    OPT("nesterov", TT_OPT_FLAG, nesterov, NULL, "SGD: Nesterov momentum", 1, 0),
    OPT("schedule", TT_OPT_STRING, schedule, "KIND", "constant, cosine or step, per optimizer step", 1, 0),
    OPT("warmup", TT_OPT_INT, warmup, "K", "linear warmup steps", 0, 1e9),
    OPT("min-lr", TT_OPT_DOUBLE, min_lr, "X", "cosine: the final rate", 0, 10),
    OPT("gamma", TT_OPT_DOUBLE, gamma, "X", "step: factor every --step-every steps", 1e-9, 10),
    OPT("step-every", TT_OPT_INT, step_every, "K", "step: steps between decays (default a third of --steps)", 1, 1e9),
    OPT("clip-norm", TT_OPT_DOUBLE, clip_norm, "X", "clip the global gradient norm (0: off)", 0, 1e9),
    OPT("seed", TT_OPT_U64, seed, "K", "seed of init, crops and augmentation", 1, 0),
    OPT("device", TT_OPT_STRING, device, "SPEC", "device index or part of its name; under mpirun a comma-separated list, one per rank on the machine (default: ranks spread over the GPUs)", 1, 0),
    ENUM("backend", backend, "NAME", TT_BACKEND_HELP, TT_BACKEND_CHOICES),
    ENUM("algo", algo, "NAME", TT_CONV_ALGO_HELP, TT_CONV_ALGO_CHOICES),
    ENUM("precision", precision, "P", "what the forward keeps for the backward, stored in fp32, fp16 or bf16: less activation memory (docs/guide.md); every kernel computes in fp32, weights, gradients and optimizer state stay fp32; with --checkpointing the activation gradients are stored too and the step runs in row bands; fp16 with dynamic loss scaling (--loss-scale); auto: each timed on this device at the start, with a gradient check against fp32, the fastest that passes kept (remembered per device)", TT_PRECISION_CHOICES),
    OPT("loss-scale", TT_OPT_STRING, loss_scale, "auto|off|S", "dynamic loss scaling (GradScaler's rule: the loss's gradient times S, a window with an infinite or NaN gradient skipped and S halved, S doubled after --loss-scale-interval clean windows); auto: from S = 65536 with --precision fp16, off otherwise; or the first S, a power of two", 1, 0),
    OPT("loss-scale-interval", TT_OPT_INT, loss_scale_interval, "N", "dynamic loss scaling: clean windows in a row before the scale doubles (GradScaler's growth_interval; default 2000)", 1, 1e9),
    OPT("out", TT_OPT_STRING, out, "DIR", "run folder: train.jsonl and checkpoints", 1, 0),
    OPT("init", TT_OPT_STRING, init, "FILE", "start from the weights of this safetensors file that the model has, by name (reports matched, missing, unexpected)", 1, 0),
    OPT("init-prefix", TT_OPT_STRING, init_prefix, "P", "with --init: put P before the file's names (encoder. loads a bare torchvision ResNet into the encoder)", 1, 0),
    OPT("resume", TT_OPT_STRING, resume, "FILE", "continue exactly from a checkpoint", 1, 0),
    OPT("save-grads", TT_OPT_STRING, save_grads, "FILE", "write the last window's normalised gradients", 1, 0),
    OPT("checkpoint-every", TT_OPT_INT, checkpoint_every, "K", "steps between checkpoints (0: at the end only)", 0, 1e9),
    OPT("val-every", TT_OPT_INT, val_every, "K", "validate every K steps (0: at the end only), best.safetensors by mean Dice", 0, 1e9),
    OPT("ema", TT_OPT_DOUBLE, ema, "DECAY", "keep an exponential moving average of the weights, ema = DECAY * ema + (1 - DECAY) * weights after every update (e.g. 0.999; 0: none): validation scores it and the raw weights, best.safetensors follows its score, and predict and eval use it", 0, 0.999999),
    OPT("patience", TT_OPT_INT, patience, "K", "early stopping: stop after K validations in a row without a better mean Dice, the last checkpoint written (0: off)", 0, 1e6),
    OPT("keep-best", TT_OPT_INT, keep_best, "K", "keep the checkpoints of the K best validations as OUT/best-step<N>.safetensors, deleting the one that falls out (0: only best.safetensors)", 0, TT_KEEP_BEST_MAX),
    OPT("threshold", TT_OPT_DOUBLE, threshold, "X", "multi-label validation: probability threshold", 0, 1),
    OPT("val-overlap", TT_OPT_DOUBLE, val_overlap, "X", "validation: overlap of neighbouring tiles, 0 to 0.9", 0, 0.9),
    ENUM("tta", tta, "KIND", "validation: " TT_TTA_HELP, TT_TTA_CHOICES),
    OPT("min-size", TT_OPT_INT, min_size, "N", "validation: remove predicted components under N pixels first, as predict --min-size does (class index: they become background)", 0, 1e9),
    OPT("sync-bn", TT_OPT_FLAG, sync_bn, NULL, "with --norm batch under mpirun: statistics over every rank's micro-batch (default: each rank's own, as PyTorch DDP); alone, the same host arithmetic", 1, 0),
    OPT("check-weights-every", TT_OPT_INT, check_weights_every, "K", "mpirun: compare the ranks' weights every K steps (and at every checkpoint)", 1, 1e9),
    OPT("quiet", TT_OPT_FLAG, quiet, NULL, "no per-step lines on the terminal", 1, 0),
    OPT("profile", TT_OPT_FLAG, profile, NULL, "time every launch with the device's timers (OpenCL events, Vulkan timestamps): device seconds per kind of op at the end and in train.jsonl", 1, 0),
    ENUM("log-format", log_format, "F", "text (a live line on a terminal, plain lines otherwise) or jsonl (the lines of train.jsonl on stdout)", TT_LOG_FORMAT_CHOICES),
};
const size_t tt_train_option_count = sizeof tt_train_option_table / sizeof tt_train_option_table[0];
_Static_assert(sizeof tt_train_option_table / sizeof tt_train_option_table[0] <= TT_TRAIN_OPTION_MAX,
               "train's option table outgrew TT_TRAIN_OPTION_MAX (recipe.h's given[])");

void tt_train_options_default(tt_train_options *o)
{
    memset(o, 0, sizeof *o);
    o->format = TT_DATASET_AUTO;
    o->tile[0] = o->tile[1] = 256;
    o->max_pixels = 268435456.0;
    strcpy(o->augment, "default");
    o->mean[0] = o->std[0] = NAN; /* not given */
    o->mask_nodata = -1;
    o->model = TT_MODEL_UNET;
    o->base_channels = 16;
    o->depth = 3;
    o->groups = 8;
    o->norm = TT_NORM_GROUP;
    o->algo = TT_CONV_ALGO_AUTO;
    o->precision = TT_PRECISION_FP32;
    strcpy(o->loss_scale, "auto");
    o->loss_scale_interval = TT_LOSS_SCALE_INTERVAL;
    strcpy(o->plan, "off");
    strcpy(o->loss, "auto");
    o->micro_batch = 4;
    o->batch = 16;
    o->accum = 1;
    o->optimizer = TT_OPTIMIZER_ADAMW;
    o->backend = TT_BACKEND_CHOICE_AUTO;
    o->lr = 1e-3;
    o->weight_decay = -1; /* the optimizer's own default: 0.01 AdamW, 0 SGD */
    o->momentum = 0.9;
    strcpy(o->schedule, "constant");
    o->gamma = 0.1;
    strcpy(o->out, "runs/latest");
    o->log_format = TT_LOG_TEXT;
    o->threshold = 0.5;
    o->val_overlap = 0.25;
    o->check_weights_every = 50;
}

static const char *name_of(const char *choices, int index)
{
    static _Thread_local char buf[4][64];
    static _Thread_local int next;
    next = (next + 1) % 4;
    return tt_opt_choice_name(choices, index, buf[next], sizeof buf[next]);
}

const char *tt_model_choice_name(tt_model_choice m) { return name_of(TT_MODEL_CHOICES, (int)m); }

const char *tt_optimizer_choice_name(tt_optimizer_choice o)
{
    return name_of(TT_OPTIMIZER_CHOICES, (int)o);
}

const char *tt_backend_choice_name(tt_backend_choice b)
{
    return name_of(TT_BACKEND_CHOICES, (int)b);
}

int tt_train_options_normalize(const tt_train_options *o)
{
    return !isnan(o->mean[0]) || !isnan(o->std[0]);
}
