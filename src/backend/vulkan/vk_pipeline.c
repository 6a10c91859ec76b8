/*
 * Compute pipelines of the Vulkan backend, one per (program, kernel,
 * options, work-group size, TT_ARG_LOCAL sizes, bindings, push-constant
 * bytes, variant), made on first use and kept for the backend's life
 * (through the pipeline cache on disk of vk_pipeline_cache.c).
 *
 * The SPIR-V of (program, kernel) is shaders/<program>/<kernel>.comp as
 * compiled and embedded at build time, or <program>/<kernel>.spv under
 * $TT_SHADER_DIR; its addressed variant (shaders/common.glsl) is
 * <kernel>.addressed, with the one binding TT_VK_ADDRESS_BINDING.
 * Specialization constants are found by name in the module itself (its
 * OpName and SpecId decorations): constants 0, 1, 2 are
 * the work-group size; each -DNAME=value of the options sets the constant
 * named NAME (a define the shader does not declare is ignored, as an
 * unused define is in OpenCL C); the k-th TT_ARG_LOCAL sets TT_LOCAL<k>.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/backend_internal.h"
#include "backend/vulkan/vk_internal.h"
#include "backend/vulkan/vk_shaders.h"
#include "core/alloc.h"
#include "core/fs.h"
#include "core/knobs.h"
#include "core/parallel.h"

#define SPIRV_MAGIC 0x07230203u
#define OP_NAME 5
#define OP_DECORATE 71
#define DECORATION_SPEC_ID 1
#define MAX_CONSTANTS (3 + TT_MAX_KERNEL_ARGS + 32)

struct tt_vk_pipeline {
    tt_vk_pipeline *next;
    char program[64], kernel[64];
    char *options;
    tt_vk_pipeline_key key; /* its strings point at the fields above */
    VkPipeline pipeline;
    VkPipelineLayout layout;
    VkDescriptorSetLayout set_layout;
};

/* A SPIR-V module: embedded words, or a file's (owned). */
typedef struct module {
    const uint32_t *words;
    size_t count;
    uint32_t *owned;
} module;

static tt_status read_spirv(const char *path, module *m)
{
    FILE *f = fopen(path, "rb");
    if (!f) return tt_error_new(TT_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    tt_status status = tt_read_fault("the SPIR-V module", path);
    long size = -1;
    if (status) goto done;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 20 || size % 4 != 0 || fseek(f, 0, SEEK_SET) != 0) {
        status = tt_error_new(TT_ERR_FORMAT, "'%s' is not a SPIR-V module (%ld bytes)", path, size);
        goto done;
    }
    m->owned = tt_malloc((size_t)size);
    if (!m->owned) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "reading '%s': out of host memory", path);
        goto done;
    }
    if (fread(m->owned, 1, (size_t)size, f) != (size_t)size) {
        status = tt_error_new(TT_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        goto done;
    }
    m->words = m->owned;
    m->count = (size_t)size / 4;
done:
    fclose(f);
    return status;
}

int tt_vk_has_program(const tt_backend *backend, const char *program)
{
    (void)backend;
    return tt_vulkan_has_program(program);
}

int tt_vulkan_has_program(const char *program)
{
    size_t n = strlen(program);
    const char *dir = tt_knob_str(TT_KNOB_SHADER_DIR);
    if (dir && *dir) { /* the compiled folder: shaders/<program>/ became <dir>/<program>/ */
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, program);
        struct stat st;
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    }
    for (size_t i = 0; i < tt_embedded_shader_count; i++)
        if (strncmp(tt_embedded_shaders[i].name, program, n) == 0 &&
            tt_embedded_shaders[i].name[n] == '/')
            return 1;
    return 0;
}

static tt_status load_module(const char *program, const char *kernel, int addressed, module *m)
{
    memset(m, 0, sizeof *m);
    const char *dir = tt_knob_str(TT_KNOB_SHADER_DIR);
    const char *variant = addressed ? ".addressed" : "";
    if (dir && *dir) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s/%s%s.spv", dir, program, kernel, variant);
        TT_TRY(tt_error_prefix(read_spirv(path, m), "loading shader %s/%s (TT_SHADER_DIR)",
                               program, kernel));
    } else {
        char name[160];
        snprintf(name, sizeof name, "%s/%s%s", program, kernel, variant);
        for (size_t i = 0; i < tt_embedded_shader_count && !m->words; i++)
            if (strcmp(tt_embedded_shaders[i].name, name) == 0) {
                m->words = tt_embedded_shaders[i].words;
                m->count = tt_embedded_shaders[i].word_count;
            }
        if (!m->words)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "no shader %s/%s is built in (shaders/%s/%s.comp)", program,
                                kernel, program, kernel);
    }
    if (m->count < 5 || m->words[0] != SPIRV_MAGIC) {
        free(m->owned);
        return tt_error_new(TT_ERR_FORMAT, "shader %s/%s is not a SPIR-V module", program, kernel);
    }
    return NULL;
}

/* The SpecId of `id` in the module, or -1. */
static long spec_id_of(const module *m, uint32_t id)
{
    for (size_t i = 5; i < m->count;) {
        uint32_t n = m->words[i] >> 16, op = m->words[i] & 0xffff;
        if (n == 0 || i + n > m->count) break;
        if (op == OP_DECORATE && n >= 4 && m->words[i + 1] == id &&
            m->words[i + 2] == DECORATION_SPEC_ID)
            return (long)m->words[i + 3];
        i += n;
    }
    return -1;
}

/* The SpecId of the specialization constant named `name`, or -1. */
static long spec_id_named(const module *m, const char *name, size_t len)
{
    for (size_t i = 5; i < m->count;) {
        uint32_t n = m->words[i] >> 16, op = m->words[i] & 0xffff;
        if (n == 0 || i + n > m->count) break;
        if (op == OP_NAME && n >= 3) {
            const char *s = (const char *)&m->words[i + 2];
            size_t room = (n - 2) * 4;
            if (len < room && strncmp(s, name, len) == 0 && s[len] == '\0') {
                long id = spec_id_of(m, m->words[i + 1]);
                if (id >= 0) return id;
            }
        }
        i += n;
    }
    return -1;
}

typedef struct constants {
    VkSpecializationMapEntry entries[MAX_CONSTANTS];
    uint32_t data[MAX_CONSTANTS];
    uint32_t count;
} constants;

/* Sets constant `id` (a later value of the same id wins, as a later -D does). */
static void set_constant(constants *c, uint32_t id, uint32_t value)
{
    for (uint32_t i = 0; i < c->count; i++)
        if (c->entries[i].constantID == id) {
            c->data[i] = value;
            return;
        }
    if (c->count >= MAX_CONSTANTS) return;
    c->entries[c->count] = (VkSpecializationMapEntry){id, c->count * 4, 4};
    c->data[c->count++] = value;
}

/* The specialization constants of one pipeline (see the top of the file). */
static tt_status specialize(const module *m, const tt_vk_pipeline_key *key, constants *c)
{
    c->count = 0;
    for (uint32_t d = 0; d < 3; d++) set_constant(c, d, key->local[d]);
    const char *p = key->options ? key->options : "";
    while (*p) {
        while (*p == ' ') p++;
        if (!*p) break;
        size_t len = strcspn(p, " ");
        const char *eq = memchr(p, '=', len);
        char *end = NULL;
        long value = eq ? strtol(eq + 1, &end, 10) : 0;
        if (strncmp(p, "-D", 2) != 0 || !eq || eq == p + 2 || end == eq + 1 || end != p + len)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "shader %s/%s: option '%.*s' is not -DNAME=integer", key->program,
                                key->kernel, (int)len, p);
        long id = spec_id_named(m, p + 2, (size_t)(eq - p - 2));
        if (id >= 0) set_constant(c, (uint32_t)id, (uint32_t)value);
        p += len;
    }
    for (int k = 0; k < key->local_count; k++) {
        char name[32];
        int len = snprintf(name, sizeof name, "TT_LOCAL%d", k);
        long id = spec_id_named(m, name, (size_t)len);
        if (id < 0)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "shader %s/%s: the launch has a TT_ARG_LOCAL argument %d but the "
                                "shader declares no specialization constant %s to size it",
                                key->program, key->kernel, k, name);
        set_constant(c, (uint32_t)id, key->local_words[k]);
    }
    return NULL;
}

static tt_status create_pipeline(tt_vk_backend *vk, tt_vk_pipeline *e)
{
    const tt_vk_pipeline_key *key = &e->key;
    module m;
    constants c;
    VkShaderModule shader = VK_NULL_HANDLE;
    tt_status status = NULL;
    TT_TRY(load_module(key->program, key->kernel, key->addressed, &m));
    TT_CHECK(specialize(&m, key, &c));

    VkShaderModuleCreateInfo shader_info = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                            .codeSize = m.count * 4,
                                            .pCode = m.words};
    VkResult r = vkCreateShaderModule(vk->device, &shader_info, NULL, &shader);
    if (r != VK_SUCCESS) {
        status = tt_error_vk(r, "vkCreateShaderModule(%s/%s)", key->program, key->kernel);
        goto cleanup;
    }
    VkDescriptorSetLayoutBinding bindings[TT_VK_MAX_BINDINGS];
    int count = key->addressed ? 1 : key->bindings;
    for (int b = 0; b < count; b++)
        bindings[b] = (VkDescriptorSetLayoutBinding){
            key->addressed ? TT_VK_ADDRESS_BINDING : (uint32_t)b,
            VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkDescriptorSetLayoutCreateInfo set_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = (uint32_t)count,
        .pBindings = bindings};
    r = vkCreateDescriptorSetLayout(vk->device, &set_info, NULL, &e->set_layout);
    if (r != VK_SUCCESS) {
        status = tt_error_vk(r, "vkCreateDescriptorSetLayout(%s/%s)", key->program, key->kernel);
        goto cleanup;
    }
    VkPushConstantRange push = {VK_SHADER_STAGE_COMPUTE_BIT, 0, key->push_bytes};
    VkPipelineLayoutCreateInfo layout_info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &e->set_layout,
        .pushConstantRangeCount = key->push_bytes ? 1 : 0,
        .pPushConstantRanges = &push};
    r = vkCreatePipelineLayout(vk->device, &layout_info, NULL, &e->layout);
    if (r != VK_SUCCESS) {
        status = tt_error_vk(r, "vkCreatePipelineLayout(%s/%s)", key->program, key->kernel);
        goto cleanup;
    }
    VkSpecializationInfo spec = {c.count, c.entries, c.count * 4, c.data};
    VkComputePipelineCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = shader,
                  .pName = "main",
                  .pSpecializationInfo = &spec},
        .layout = e->layout};
    r = vkCreateComputePipelines(vk->device, vk->pipeline_cache, 1, &info, NULL, &e->pipeline);
    if (r != VK_SUCCESS)
        status = tt_error_vk(r, "vkCreateComputePipelines(%s/%s)", key->program, key->kernel);
cleanup:
    if (shader) vkDestroyShaderModule(vk->device, shader, NULL);
    free(m.owned);
    return status;
}

static int same_key(const tt_vk_pipeline_key *a, const tt_vk_pipeline_key *b)
{
    return strcmp(a->program, b->program) == 0 && strcmp(a->kernel, b->kernel) == 0 &&
           strcmp(a->options ? a->options : "", b->options ? b->options : "") == 0 &&
           memcmp(a->local, b->local, sizeof a->local) == 0 && a->local_count == b->local_count &&
           memcmp(a->local_words, b->local_words,
                  sizeof a->local_words[0] * (size_t)a->local_count) == 0 &&
           a->bindings == b->bindings && a->push_bytes == b->push_bytes &&
           a->addressed == b->addressed;
}

static void destroy_entry(tt_vk_backend *vk, tt_vk_pipeline *e)
{
    if (e->pipeline) vkDestroyPipeline(vk->device, e->pipeline, NULL);
    if (e->layout) vkDestroyPipelineLayout(vk->device, e->layout, NULL);
    if (e->set_layout) vkDestroyDescriptorSetLayout(vk->device, e->set_layout, NULL);
    free(e->options);
    free(e);
}

static tt_vk_pipeline *find(tt_vk_pipeline *list, const tt_vk_pipeline_key *key)
{
    while (list && !same_key(&list->key, key)) list = list->next;
    return list;
}

/* A new entry for `key`, its pipeline not made yet. */
static tt_status new_entry(const tt_vk_pipeline_key *key, tt_vk_pipeline **out)
{
    tt_vk_pipeline *e = NULL;
    if (strlen(key->program) >= sizeof e->program || strlen(key->kernel) >= sizeof e->kernel)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "shader %s/%s: name too long",
                            key->program, key->kernel);
    e = tt_calloc(1, sizeof *e);
    char *options = tt_strdup(key->options ? key->options : "");
    if (!e || !options) {
        free(e);
        free(options);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "pipeline cache: out of host memory");
    }
    snprintf(e->program, sizeof e->program, "%s", key->program);
    snprintf(e->kernel, sizeof e->kernel, "%s", key->kernel);
    e->options = options;
    e->key = *key;
    e->key.program = e->program;
    e->key.kernel = e->kernel;
    e->key.options = e->options;
    *out = e;
    return NULL;
}

tt_status tt_vk_pipeline_note(tt_backend *backend, const tt_vk_pipeline_key *key)
{
    tt_vk_backend *vk = backend->impl;
    if (find(vk->pipelines, key) || find(vk->prepared, key)) return NULL;
    tt_vk_pipeline *e;
    TT_TRY(new_entry(key, &e));
    e->next = vk->prepared;
    vk->prepared = e;
    return NULL;
}

typedef struct prepared_build {
    tt_vk_backend *vk;
    tt_vk_pipeline **entries;
    int *made;
} prepared_build;

static void make_one(void *ctx, size_t i)
{
    prepared_build *b = ctx;
    tt_status failed = create_pipeline(b->vk, b->entries[i]);
    b->made[i] = failed == NULL;
    tt_status_free(failed); /* the launch that needs it fails with the reason */
}

tt_status tt_vk_build_prepared(tt_backend *backend)
{
    tt_vk_backend *vk = backend->impl;
    size_t n = 0;
    for (tt_vk_pipeline *e = vk->prepared; e; e = e->next) n++;
    tt_vk_pipeline **entries = tt_calloc(n + 1, sizeof *entries);
    int *made = tt_calloc(n + 1, sizeof *made);
    tt_status status = NULL;
    if (!entries || !made) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "pipeline cache: out of host memory");
    } else {
        size_t i = 0;
        for (tt_vk_pipeline *e = vk->prepared; e; e = e->next) entries[i++] = e;
        tt_parallel_for(n, make_one, &(prepared_build){vk, entries, made});
    }
    tt_vk_pipeline *e = vk->prepared;
    vk->prepared = NULL;
    for (size_t i = 0; e; i++) {
        tt_vk_pipeline *next = e->next;
        if (made && made[i]) {
            vk->cache_dirty = 1;
            e->next = vk->pipelines;
            vk->pipelines = e;
            backend->programs.built_from_source++;
        } else {
            destroy_entry(vk, e);
        }
        e = next;
    }
    free(entries);
    free(made);
    return status;
}

tt_status tt_vk_pipeline_get(tt_backend *backend, const tt_vk_pipeline_key *key,
                             VkPipeline *pipeline, VkPipelineLayout *layout,
                             VkDescriptorSetLayout *set_layout)
{
    tt_vk_backend *vk = backend->impl;
    tt_vk_pipeline *e = find(vk->pipelines, key);
    if (e) {
        backend->programs.memory_hits++;
    } else {
        TT_TRY(new_entry(key, &e));
        tt_status s = create_pipeline(vk, e);
        if (s) {
            destroy_entry(vk, e);
            return s;
        }
        vk->cache_dirty = 1;
        e->next = vk->pipelines;
        vk->pipelines = e;
        backend->programs.built_from_source++;
    }
    *pipeline = e->pipeline;
    *layout = e->layout;
    *set_layout = e->set_layout;
    return NULL;
}

void tt_vk_pipelines_release(tt_vk_backend *vk)
{
    while (vk->prepared) {
        tt_vk_pipeline *e = vk->prepared;
        vk->prepared = e->next;
        destroy_entry(vk, e);
    }
    while (vk->pipelines) {
        tt_vk_pipeline *e = vk->pipelines;
        vk->pipelines = e->next;
        destroy_entry(vk, e);
    }
}
