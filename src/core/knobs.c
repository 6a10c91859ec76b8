/* The table of TT_* environment variables, read once (see knobs.h). */
#include "core/knobs.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

const tt_knob tt_knob_table[TT_KNOB_COUNT] = {
    [TT_KNOB_DEVICE] = {"TT_DEVICE", TT_KNOB_USER, "src/backend/opencl/cl_device.c",
                        "a device index or part of its name, vendor or platform",
                        "The device to run on when no --device is given (default: the first "
                        "GPU, else the first device)."},
    [TT_KNOB_KERNEL_DIR] = {"TT_KERNEL_DIR", TT_KNOB_USER, "src/backend/opencl/cl_program.c",
                            "a folder holding <program>.cl files (e.g. opencl/)",
                            "Loads the kernels from this folder instead of the copies built "
                            "into the library, for kernel development."},
    [TT_KNOB_CACHE_DIR] = {"TT_CACHE_DIR", TT_KNOB_USER,
                           "src/core/fs.c",
                           "a folder (default: under $XDG_CACHE_HOME/tiletrain, else "
                           "~/.cache/tiletrain)",
                           "Where built kernel programs, Vulkan pipelines, CLBlast tuning "
                           "files and the convolution find-db are kept."},
    [TT_KNOB_DATA_CACHE_DIR] = {"TT_DATA_CACHE_DIR", TT_KNOB_USER, "src/core/fs.c",
                                "a folder (default $XDG_CACHE_HOME/tiletrain/tiles, else "
                                "~/.cache/tiletrain/tiles)",
                                "Where the tile cache keeps decoded images, unless the run "
                                "names a folder."},
    [TT_KNOB_NO_TUNING] = {"TT_NO_TUNING", TT_KNOB_USER, "src/backend/opencl/cl_tuning.c",
                           "set and not 0",
                           "Runs CLBlast with its own parameters: the device's tuning file "
                           "(tiletrain tune) is not applied."},
    [TT_KNOB_CONV_ALGO] = {"TT_CONV_ALGO", TT_KNOB_USER, "src/ops/conv_algo_name.c",
                           "auto, im2col_gemm, direct, winograd, implicit_gemm, "
                           "winograd4x4, winograd4x4_fused or direct_w16",
                           "The default of --algo (train, mem, bench, eval, predict): the "
                           "convolution algorithm of every layer; --algo wins, and an unknown "
                           "name is an error."},
    [TT_KNOB_POISON_ACTIVATIONS] = {"TT_POISON_ACTIVATIONS", TT_KNOB_DEBUG, "src/model/exec.c",
                                    "set (NaN), or a number",
                                    "Fills the activation arena with this value before each "
                                    "forward, so that a read of memory no launch wrote shows."},
    [TT_KNOB_PLAN_DUMP] = {"TT_PLAN_DUMP", TT_KNOB_DEBUG, "src/model/arena_plan.c", "set",
                           "Prints the memory plan's timeline (each buffer's bytes and "
                           "lifetime) to stderr when a model plans its activations."},
    [TT_KNOB_LOOP_LIMIT] = {"TT_LOOP_LIMIT", TT_KNOB_TEST, "src/ops/device_traits.c",
                            "a number of loop iterations",
                            "The loop iterations one shader invocation may run in all, instead "
                            "of the device's (lavapipe: 65535, else none): kernels that loop "
                            "long split their launches below it."},
    [TT_KNOB_DISPATCH_FLOPS] = {"TT_DISPATCH_FLOPS", TT_KNOB_TEST, "src/ops/device_traits.c",
                                "a number of floating-point operations, 0 for none",
                                "The work one convolution launch may hold, instead of the "
                                "device's (GPUs: 2^32, under a watchdog's 2 s on the slowest "
                                "of them; CPUs: none): longer launches run as bands of rows."},
    [TT_KNOB_KERNEL_WG_LIMIT] = {"TT_KERNEL_WG_LIMIT", TT_KNOB_TEST, "src/backend/backend.c",
                                 "a number of work-items",
                                 "The most work-items a work-group of any kernel may have, "
                                 "below the device's and the kernel's own (as register use "
                                 "holds kernels on Mali, Adreno or Intel GPUs): launches past it "
                                 "are refused, and ops with a free work-group size fit it."},
    [TT_KNOB_SHADER_DIR] = {"TT_SHADER_DIR", TT_KNOB_USER, "src/backend/vulkan/vk_pipeline.c",
                            "a folder holding <program>/<kernel>.spv files (the build writes "
                            "them to build/shaders/)",
                            "Loads the Vulkan shaders from this folder instead of the copies "
                            "built into the library, for shader development."},
    [TT_KNOB_VULKAN_VALIDATION] = {"TT_VULKAN_VALIDATION", TT_KNOB_DEBUG,
                                   "src/backend/vulkan/vk_device.c", "0 or 1",
                                   "1: the Vulkan backend runs with the Khronos validation "
                                   "layer, and every validation message becomes an error of "
                                   "the backend's next call."},
    [TT_KNOB_VULKAN_STAGING] = {"TT_VULKAN_STAGING", TT_KNOB_TEST, "src/backend/vulkan/vk_device.c",
                                "0 or 1",
                                "1: Vulkan buffers are not mapped and every transfer goes "
                                "through a staging buffer, as on discrete GPUs, even where "
                                "device memory is host-visible."},
    [TT_KNOB_VULKAN_LOADER] = {"TT_VULKAN_LOADER", TT_KNOB_TEST, "src/backend/vulkan/vk_loader.c",
                               "a file name or path",
                               "The Vulkan loader to open instead of libvulkan.so.1: a name "
                               "that does not exist shows what a machine without Vulkan "
                               "sees."},
    [TT_KNOB_VULKAN_ADDRESSED] = {"TT_VULKAN_ADDRESSED", TT_KNOB_TEST,
                                  "src/backend/vulkan/vk_device.c", "0 or 1",
                                  "1: every Vulkan launch runs the addressed shader variant "
                                  "(buffers by device address), not only those whose buffers "
                                  "exceed a storage binding; 0: never, as on a device without "
                                  "buffer device addresses."},
    [TT_KNOB_UNET_BANDED] = {"TT_UNET_BANDED", TT_KNOB_TEST, "src/model/unet_config.c", "0 or 1",
                             "Whether a checkpointed UNet with a norm runs the banded step "
                             "(src/model/exec_band.c): 1 in fp32 too (its tensors fp32, its "
                             "gradients the plain step's up to the order of sums), 0 never, "
                             "instead of with 16-bit storage only."},
    [TT_KNOB_UNET_BAND_ROWS] = {"TT_UNET_BAND_ROWS", TT_KNOB_TEST, "src/model/exec_band.c",
                                "an even number of rows, at least 2",
                                "The rows of every band of the banded step, instead of as "
                                "many as a band room holds (a 32nd of the largest tensor, at "
                                "least 12 rows)."},
    [TT_KNOB_CONV_PERTURB] = {"TT_CONV_PERTURB", TT_KNOB_TEST, "src/ops/conv_algo.c",
                              "an algorithm's name (see --algo)",
                              "Every run of that convolution algorithm gets one wrong element "
                              "(the middle one, off by the output's largest value): a planted "
                              "wrong kernel, which the autotuner's check must refuse."},
    [TT_KNOB_FAULT] = {"TT_FAULT", TT_KNOB_TEST, "src/core/fault.c",
                       "KIND:N (N >= 1) with KIND write, alloc, launch, submit, host, read or "
                       "coll; or count",
                       "The Nth call of that kind in the process fails as the real failure "
                       "would: a file written through the one atomic writer (checkpoints, "
                       "plans, reports, caches) or a line appended to train.jsonl as a full disk, a device buffer as device "
                       "memory running out, a kernel launch or a Vulkan queue submission as a "
                       "lost device, a host allocation of the library as memory running out, "
                       "a file read (images, masks, tile cache, checkpoints, lists, configs, "
                       "the caches, the log read for the report) as EIO, an MPI "
                       "collective as a dropped network; so that a test can walk a failure "
                       "over every such call of a run.  count fails nothing and prints how "
                       "many calls of each kind the command made."},
    [TT_KNOB_MPI_TIMEOUT] = {"TT_MPI_TIMEOUT", TT_KNOB_USER, "src/dist/dist_mpi.c",
                             "seconds (default 600; 0: no limit)",
                             "How long an MPI collective of a data-parallel rank may wait "
                             "before the job is stopped naming the rank: Open MPI waits on "
                             "forever when the network to a rank is cut."},
};

const char *tt_knob_kind_name(tt_knob_kind kind)
{
    return kind == TT_KNOB_USER    ? "user setting"
           : kind == TT_KNOB_DEBUG ? "debugging"
                                   : "test knob";
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *values[TT_KNOB_COUNT]; /* copies; NULL: unset */

static void load(void)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < TT_KNOB_COUNT; i++) {
        free(values[i]);
        const char *v = getenv(tt_knob_table[i].name);
        values[i] = v ? strdup(v) : NULL; /* out of memory reads as unset */
    }
    pthread_mutex_unlock(&lock);
}

void tt_knobs_reload(void)
{
    pthread_once(&once, load);
    load();
}

const char *tt_knob_str(tt_knob_id id)
{
    pthread_once(&once, load);
    return (unsigned)id < TT_KNOB_COUNT ? values[id] : NULL;
}

int tt_knob_set(tt_knob_id id)
{
    const char *v = tt_knob_str(id);
    return v && *v;
}

int tt_knob_flag(tt_knob_id id, int fallback)
{
    const char *v = tt_knob_str(id);
    if (v && strcmp(v, "0") == 0) return 0;
    if (v && strcmp(v, "1") == 0) return 1;
    return fallback;
}

