/*
 * safetensors reader and writer; see safetensors.h for the format.  The
 * header is JSON handled by cJSON; the data are little-endian on disk and
 * converted on big-endian hosts.
 */
#include "io/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/status.h"

static const struct {
    const char *name;
    size_t size;
} tt_st_dtypes[TT_ST_DTYPE_COUNT] = {
    [TT_ST_BOOL] = {"BOOL", 1}, [TT_ST_U8] = {"U8", 1},     [TT_ST_I8] = {"I8", 1},
    [TT_ST_F8_E5M2] = {"F8_E5M2", 1}, [TT_ST_F8_E4M3] = {"F8_E4M3", 1},
    [TT_ST_I16] = {"I16", 2},   [TT_ST_U16] = {"U16", 2},   [TT_ST_F16] = {"F16", 2},
    [TT_ST_BF16] = {"BF16", 2}, [TT_ST_I32] = {"I32", 4},   [TT_ST_U32] = {"U32", 4},
    [TT_ST_F32] = {"F32", 4},   [TT_ST_F64] = {"F64", 8},   [TT_ST_I64] = {"I64", 8},
    [TT_ST_U64] = {"U64", 8},
};

const char *tt_st_dtype_name(tt_st_dtype dtype)
{
    return (unsigned)dtype < TT_ST_DTYPE_COUNT ? tt_st_dtypes[dtype].name : "?";
}

size_t tt_st_dtype_size(tt_st_dtype dtype)
{
    return (unsigned)dtype < TT_ST_DTYPE_COUNT ? tt_st_dtypes[dtype].size : 0;
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

/* Copies count elements of `size` bytes, reversing each one's bytes when the
 * host is big-endian (little-endian <-> host order). */
static void copy_le(void *dst, const void *src, size_t count, size_t size)
{
    if (count == 0) return;
    if (host_is_little_endian() || size == 1) {
        memcpy(dst, src, count * size);
        return;
    }
    const unsigned char *s = src;
    unsigned char *d = dst;
    for (size_t i = 0; i < count; i++)
        for (size_t b = 0; b < size; b++) d[i * size + b] = s[i * size + size - 1 - b];
}

/* "[2, 3, 4]" into buf. */
static const char *shape_text(int ndim, const int64_t *shape, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, d ? ", " : "", shape[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

/* numel * element size, or 0 with *overflow set when it does not fit. */
static uint64_t byte_count(int ndim, const int64_t *shape, size_t elem, int *overflow)
{
    uint64_t bytes = elem;
    *overflow = 0;
    for (int d = 0; d < ndim; d++) {
        uint64_t extent = (uint64_t)shape[d];
        if (extent && bytes > UINT64_MAX / extent) {
            *overflow = 1;
            return 0;
        }
        bytes *= extent;
    }
    return bytes;
}

/* ---- reader ---------------------------------------------------------------- */

struct tt_safetensors {
    char *path;
    unsigned char *bytes; /* the whole file: mapped read-only, or read into tt_malloc'd memory */
    int mapped;
    uint64_t size;
    const unsigned char *data; /* bytes + 8 + header length */
    uint64_t data_size;
    cJSON *header;             /* owns the tensor names and metadata strings */
    size_t count;
    tt_st_tensor *tensors;     /* data order */
};

#define ST_FAULT(...) tt_error_new(TT_ERR_FORMAT, __VA_ARGS__)

/* A JSON number that is a whole number in [0, 2^53]. */
static int json_whole(const cJSON *item, uint64_t *out)
{
    if (!cJSON_IsNumber(item)) return 0;
    double v = item->valuedouble;
    if (!(v >= 0 && v <= 9007199254740992.0) || floor(v) != v) return 0;
    *out = (uint64_t)v;
    return 1;
}

/* Fills t from one header entry; errors name the file and tensor. */
static tt_status parse_tensor(const tt_safetensors *f, const cJSON *entry, tt_st_tensor *t)
{
    const char *p = f->path, *name = entry->string;
    t->name = name;
    if (!cJSON_IsObject(entry))
        return ST_FAULT("safetensors '%s': tensor '%s': header entry is not an object", p, name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(entry, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(entry, "shape");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(entry, "data_offsets");
    if (!cJSON_IsString(dtype) || !cJSON_IsArray(shape) || !cJSON_IsArray(offsets))
        return ST_FAULT("safetensors '%s': tensor '%s': needs a string \"dtype\", an array "
                        "\"shape\" and an array \"data_offsets\"", p, name);
    int found = -1;
    for (int i = 0; i < TT_ST_DTYPE_COUNT; i++)
        if (strcmp(dtype->valuestring, tt_st_dtypes[i].name) == 0) found = i;
    if (found < 0)
        return ST_FAULT("safetensors '%s': tensor '%s': unknown dtype '%s'", p, name,
                        dtype->valuestring);
    t->dtype = (tt_st_dtype)found;
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > TT_ST_MAX_DIMS)
        return ST_FAULT("safetensors '%s': tensor '%s': %d dimensions, at most %d supported", p,
                        name, ndim, TT_ST_MAX_DIMS);
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        uint64_t extent;
        if (!json_whole(cJSON_GetArrayItem(shape, d), &extent))
            return ST_FAULT("safetensors '%s': tensor '%s': shape entry %d is not a whole "
                            "number >= 0", p, name, d);
        t->shape[d] = (int64_t)extent;
    }
    if (cJSON_GetArraySize(offsets) != 2 || !json_whole(cJSON_GetArrayItem(offsets, 0), &t->begin) ||
        !json_whole(cJSON_GetArrayItem(offsets, 1), &t->end) || t->end < t->begin)
        return ST_FAULT("safetensors '%s': tensor '%s': data_offsets must be [begin, end] with "
                        "0 <= begin <= end", p, name);
    int overflow;
    char text[160];
    uint64_t want = byte_count(ndim, t->shape, tt_st_dtypes[found].size, &overflow);
    if (overflow || want != t->end - t->begin)
        return ST_FAULT("safetensors '%s': tensor '%s': %s %s needs %" PRIu64 " bytes but "
                        "data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64, p, name,
                        tt_st_dtypes[found].name, shape_text(ndim, t->shape, text, sizeof text),
                        want, t->begin, t->end, t->end - t->begin);
    return NULL;
}

static int by_begin(const void *a, const void *b)
{
    const tt_st_tensor *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Parses and checks the header of f (bytes and size set). */
static tt_status parse_header(tt_safetensors *f)
{
    const char *p = f->path;
    if (f->size < 8)
        return ST_FAULT("safetensors '%s': %" PRIu64 " bytes is too short for the 8-byte header "
                        "length; the file is truncated or not safetensors", p, f->size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | f->bytes[i];
    if (n > TT_ST_MAX_HEADER_BYTES)
        return ST_FAULT("safetensors '%s': header length %" PRIu64 " is above the limit of %d "
                        "bytes; the file is corrupted or not safetensors", p, n,
                        TT_ST_MAX_HEADER_BYTES);
    if (n > f->size - 8)
        return ST_FAULT("safetensors '%s': header length %" PRIu64 " runs past the end of the "
                        "file (%" PRIu64 " bytes); the file is truncated", p, n, f->size);
    const char *text = (const char *)f->bytes + 8;
    if (n < 2 || text[0] != '{')
        return ST_FAULT("safetensors '%s': the header does not start with '{'; the file is "
                        "corrupted or not safetensors", p);
    const char *end = NULL;
    f->header = cJSON_ParseWithLengthOpts(text, (size_t)n, &end, 0);
    if (!f->header || !cJSON_IsObject(f->header))
        return ST_FAULT("safetensors '%s': the header is not valid JSON (near byte %td of %" PRIu64
                        "); the file is corrupted", p, (end ? end : cJSON_GetErrorPtr()) - text, n);
    for (; end < text + n; end++)
        if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r' && *end != '\0')
            return ST_FAULT("safetensors '%s': bytes after the header's JSON object; the file "
                            "is corrupted", p);
    f->data = f->bytes + 8 + n;
    f->data_size = f->size - 8 - n;

    size_t count = 0;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, f->header)
    {
        if (strcmp(entry->string, "__metadata__") != 0) count++;
    }
    f->tensors = tt_calloc(count ? count : 1, sizeof *f->tensors);
    const char **names = tt_calloc(count ? count : 1, sizeof *names);
    if (!f->tensors || !names) {
        free(names);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "safetensors '%s': out of host memory", p);
    }
    tt_status status = NULL;
    int metadata_seen = 0;
    cJSON_ArrayForEach(entry, f->header)
    {
        if (strcmp(entry->string, "__metadata__") == 0) {
            const cJSON *kv;
            int ok = cJSON_IsObject(entry) && !metadata_seen++;
            cJSON_ArrayForEach(kv, entry) ok &= cJSON_IsString(kv);
            if (!ok) {
                status = ST_FAULT("safetensors '%s': __metadata__ must be one object of string "
                                  "values", p);
                goto cleanup;
            }
            continue;
        }
        TT_CHECK(parse_tensor(f, entry, &f->tensors[f->count]));
        names[f->count] = entry->string;
        f->count++;
    }
    qsort(names, count, sizeof *names, by_name);
    for (size_t i = 1; i < count; i++)
        if (strcmp(names[i - 1], names[i]) == 0) {
            status = ST_FAULT("safetensors '%s': tensor '%s' appears twice in the header", p,
                              names[i]);
            goto cleanup;
        }
    qsort(f->tensors, count, sizeof *f->tensors, by_begin);
    uint64_t at = 0;
    for (size_t i = 0; i < count; i++) {
        tt_st_tensor *t = &f->tensors[i];
        if (t->begin != at) {
            status = ST_FAULT("safetensors '%s': tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                              "] %s the previous tensor's end %" PRIu64 "; tensors must be "
                              "contiguous and must not overlap", p, t->name, t->begin, t->end,
                              t->begin < at ? "overlap" : "leave a gap after", at);
            goto cleanup;
        }
        if (t->end > f->data_size) {
            status = ST_FAULT("safetensors '%s': tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                              "] run past the %" PRIu64 " data bytes; the file is truncated", p,
                              t->name, t->begin, t->end, f->data_size);
            goto cleanup;
        }
        t->data = f->data + t->begin;
        at = t->end;
    }
    if (at != f->data_size)
        status = ST_FAULT("safetensors '%s': %" PRIu64 " bytes after the last tensor's data "
                          "(%" PRIu64 " of %" PRIu64 " used); the file is corrupted", p,
                          f->data_size - at, at, f->data_size);
cleanup:
    free(names);
    return status;
}

/* f->bytes: the file mapped (its pages read as the tensors are copied out,
 * no host copy of its own), or where it cannot be mapped read whole. */
static tt_status load_bytes(tt_safetensors *f, FILE *fp)
{
    if (f->size > 0) {
        void *map = mmap(NULL, (size_t)f->size, PROT_READ, MAP_PRIVATE, fileno(fp), 0);
        if (map != MAP_FAILED) {
            f->bytes = map;
            f->mapped = 1;
            return NULL;
        }
    }
    f->bytes = tt_malloc(f->size ? (size_t)f->size : 1);
    if (!f->bytes)
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "safetensors '%s': cannot hold %" PRIu64
                            " bytes in host memory", f->path, f->size);
    if (fread(f->bytes, 1, (size_t)f->size, fp) != (size_t)f->size)
        return tt_error_new(TT_ERR_IO, "safetensors '%s': read failed: %s", f->path,
                            ferror(fp) ? strerror(errno) : "file shrank while reading");
    return NULL;
}

tt_status tt_safetensors_open(const char *path, tt_safetensors **out)
{
    *out = NULL;
    tt_status status = NULL;
    FILE *fp = NULL;
    tt_safetensors *f = tt_calloc(1, sizeof *f);
    if (!f || !(f->path = tt_strdup(path))) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "safetensors '%s': out of host memory", path);
        goto cleanup;
    }
    fp = fopen(path, "rb");
    if (!fp) {
        status = tt_error_new(TT_ERR_IO, "safetensors '%s': cannot open: %s", path, strerror(errno));
        goto cleanup;
    }
    long size = -1;
    if (fseek(fp, 0, SEEK_END) == 0) size = ftell(fp);
    if (size < 0 || fseek(fp, 0, SEEK_SET) != 0) {
        status = tt_error_new(TT_ERR_IO, "safetensors '%s': cannot find the file size: %s", path,
                              strerror(errno));
        goto cleanup;
    }
    f->size = (uint64_t)size;
    status = tt_read_fault("the safetensors file", path);
    if (status) goto cleanup;
    TT_CHECK(load_bytes(f, fp));
    TT_CHECK(parse_header(f));
    *out = f;
    f = NULL;
cleanup:
    if (fp) fclose(fp);
    tt_safetensors_close(f);
    return status;
}

void tt_safetensors_close(tt_safetensors *f)
{
    if (!f) return;
    cJSON_Delete(f->header);
    free(f->tensors);
    if (f->mapped) munmap(f->bytes, (size_t)f->size);
    else free(f->bytes);
    free(f->path);
    free(f);
}

const char *tt_safetensors_path(const tt_safetensors *f) { return f->path; }
size_t tt_safetensors_count(const tt_safetensors *f) { return f->count; }

const tt_st_tensor *tt_safetensors_at(const tt_safetensors *f, size_t index)
{
    return index < f->count ? &f->tensors[index] : NULL;
}

const tt_st_tensor *tt_safetensors_find(const tt_safetensors *f, const char *name)
{
    for (size_t i = 0; i < f->count; i++)
        if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
    return NULL;
}

const char *tt_safetensors_metadata(const tt_safetensors *f, const char *key)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(f->header, "__metadata__");
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(meta, key);
    return cJSON_IsString(value) ? value->valuestring : NULL;
}

/* Finds name and checks its dtype and shape against the expectation. */
static tt_status get_checked(const tt_safetensors *f, const char *name, tt_st_dtype dtype,
                             int ndim, const int64_t *shape, const tt_st_tensor **out)
{
    const tt_st_tensor *t = tt_safetensors_find(f, name);
    if (!t)
        return ST_FAULT("safetensors '%s': no tensor '%s'; the file was written by another model "
                        "or version", f->path, name);
    if (t->dtype != dtype)
        return ST_FAULT("safetensors '%s': tensor '%s' is %s, expected %s", f->path, name,
                        tt_st_dtype_name(t->dtype), tt_st_dtype_name(dtype));
    int same = t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = t->shape[d] == shape[d];
    if (!same) {
        char has[160], want[160];
        return ST_FAULT("safetensors '%s': tensor '%s' has shape %s, expected %s; the file was "
                        "written for another model configuration", f->path, name,
                        shape_text(t->ndim, t->shape, has, sizeof has),
                        shape_text(ndim, shape, want, sizeof want));
    }
    *out = t;
    return NULL;
}

tt_status tt_safetensors_get_f32(const tt_safetensors *f, const char *name, int ndim,
                                 const int64_t *shape, float *out)
{
    const tt_st_tensor *t;
    TT_TRY(get_checked(f, name, TT_ST_F32, ndim, shape, &t));
    copy_le(out, t->data, (size_t)(t->end - t->begin) / 4, 4);
    return NULL;
}

tt_status tt_safetensors_get_i64(const tt_safetensors *f, const char *name, int ndim,
                                 const int64_t *shape, int64_t *out)
{
    const tt_st_tensor *t;
    TT_TRY(get_checked(f, name, TT_ST_I64, ndim, shape, &t));
    copy_le(out, t->data, (size_t)(t->end - t->begin) / 8, 8);
    return NULL;
}

/* ---- writer ---------------------------------------------------------------- */

typedef struct st_entry {
    char *name;
    tt_st_dtype dtype;
    int ndim;
    int64_t shape[TT_ST_MAX_DIMS];
    uint64_t bytes;
    void *data; /* host byte order, owned */
} st_entry;

struct tt_st_writer {
    st_entry *entries;
    size_t count, capacity;
    cJSON *metadata; /* object of strings */
};

/* cJSON prints whole numbers up to 1e15 without an exponent; the format
 * wants plain integers. */
#define TT_ST_MAX_DATA_BYTES 1000000000000000ULL

tt_status tt_st_writer_create(tt_st_writer **out)
{
    *out = tt_calloc(1, sizeof **out);
    if (!*out || !((*out)->metadata = cJSON_CreateObject())) {
        free(*out);
        *out = NULL;
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "safetensors writer: out of host memory");
    }
    return NULL;
}

void tt_st_writer_destroy(tt_st_writer *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->count; i++) free(w->entries[i].name), free(w->entries[i].data);
    free(w->entries);
    cJSON_Delete(w->metadata);
    free(w);
}

tt_status tt_st_writer_alloc(tt_st_writer *w, const char *name, tt_st_dtype dtype, int ndim,
                             const int64_t *shape, void **data)
{
    *data = NULL;
    if (!name || !*name || strcmp(name, "__metadata__") == 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "safetensors writer: tensor name '%s' is "
                            "reserved or empty", name ? name : "");
    if ((unsigned)dtype >= TT_ST_DTYPE_COUNT)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "safetensors writer: tensor '%s': unknown "
                            "dtype %d", name, (int)dtype);
    if (ndim < 0 || ndim > TT_ST_MAX_DIMS)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "safetensors writer: tensor '%s': %d "
                            "dimensions, 0 to %d supported", name, ndim, TT_ST_MAX_DIMS);
    uint64_t total = 0;
    for (size_t i = 0; i < w->count; i++) {
        if (strcmp(w->entries[i].name, name) == 0)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "safetensors writer: tensor '%s' added "
                                "twice", name);
        total += w->entries[i].bytes;
    }
    for (int d = 0; d < ndim; d++)
        if (shape[d] < 0)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "safetensors writer: tensor '%s': "
                                "negative extent %" PRId64, name, shape[d]);
    int overflow;
    uint64_t bytes = byte_count(ndim, shape, tt_st_dtypes[dtype].size, &overflow);
    if (overflow || bytes > TT_ST_MAX_DATA_BYTES - total || bytes > SIZE_MAX)
        return tt_error_new(TT_ERR_TOO_LARGE, "safetensors writer: tensor '%s' is too large",
                            name);
    if (w->count == w->capacity) {
        size_t capacity = w->capacity ? 2 * w->capacity : 16;
        st_entry *grown = tt_realloc(w->entries, capacity * sizeof *grown);
        if (!grown) goto oom;
        w->entries = grown;
        w->capacity = capacity;
    }
    st_entry *e = &w->entries[w->count];
    *e = (st_entry){.dtype = dtype, .ndim = ndim, .bytes = bytes};
    for (int d = 0; d < ndim; d++) e->shape[d] = shape[d];
    e->name = tt_strdup(name);
    e->data = tt_calloc(bytes ? (size_t)bytes : 1, 1);
    if (!e->name || !e->data) {
        free(e->name), free(e->data);
        goto oom;
    }
    w->count++;
    *data = e->data;
    return NULL;
oom:
    return tt_error_new(TT_ERR_OUT_OF_MEMORY, "safetensors writer: tensor '%s': out of host "
                        "memory", name);
}

tt_status tt_st_writer_add(tt_st_writer *w, const char *name, tt_st_dtype dtype, int ndim,
                           const int64_t *shape, const void *data)
{
    void *dst;
    TT_TRY(tt_st_writer_alloc(w, name, dtype, ndim, shape, &dst));
    size_t bytes = (size_t)w->entries[w->count - 1].bytes;
    if (bytes) memcpy(dst, data, bytes);
    return NULL;
}

tt_status tt_st_writer_metadata(tt_st_writer *w, const char *key, const char *value)
{
    cJSON *item = cJSON_CreateString(value);
    if (!item) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "safetensors writer: out of host memory");
    if (cJSON_GetObjectItemCaseSensitive(w->metadata, key))
        cJSON_ReplaceItemInObjectCaseSensitive(w->metadata, key, item);
    else
        cJSON_AddItemToObject(w->metadata, key, item);
    return NULL;
}

/* The JSON header, padded with spaces to a multiple of 8 bytes; malloc'd. */
static char *build_header(const tt_st_writer *w, size_t *length)
{
    char *text = NULL, *padded = NULL;
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    if (cJSON_GetArraySize(w->metadata) > 0)
        cJSON_AddItemReferenceToObject(root, "__metadata__", w->metadata);
    uint64_t at = 0;
    for (size_t i = 0; i < w->count; i++) {
        const st_entry *e = &w->entries[i];
        cJSON *item = cJSON_AddObjectToObject(root, e->name);
        cJSON *shape = cJSON_CreateArray();
        cJSON *offsets = cJSON_CreateArray();
        if (!item || !shape || !offsets) {
            cJSON_Delete(shape), cJSON_Delete(offsets);
            goto cleanup;
        }
        cJSON_AddStringToObject(item, "dtype", tt_st_dtypes[e->dtype].name);
        for (int d = 0; d < e->ndim; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)e->shape[d]));
        cJSON_AddItemToObject(item, "shape", shape);
        cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)at));
        cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)(at + e->bytes)));
        cJSON_AddItemToObject(item, "data_offsets", offsets);
        at += e->bytes;
    }
    text = cJSON_PrintUnformatted(root);
    if (!text) goto cleanup;
    size_t n = strlen(text), padded_n = (n + 7) / 8 * 8;
    padded = tt_malloc(padded_n + 1);
    if (!padded) goto cleanup;
    memcpy(padded, text, n);
    memset(padded + n, ' ', padded_n - n);
    padded[padded_n] = '\0';
    *length = padded_n;
cleanup:
    free(text);
    cJSON_Delete(root); /* the metadata was added by reference: not freed */
    return padded;
}

/* Writes count elements of `size` bytes in little-endian order. */
static int write_le(FILE *fp, const void *data, uint64_t bytes, size_t size)
{
    if (host_is_little_endian() || size == 1) return fwrite(data, 1, (size_t)bytes, fp) == bytes;
    unsigned char chunk[4096];
    const unsigned char *src = data;
    for (uint64_t done = 0; done < bytes;) {
        size_t take = bytes - done < sizeof chunk ? (size_t)(bytes - done) : sizeof chunk;
        copy_le(chunk, src + done, take / size, size);
        if (fwrite(chunk, 1, take, fp) != take) return 0;
        done += take;
    }
    return 1;
}

typedef struct file_content {
    const tt_st_writer *w;
    const char *header;
    size_t header_length;
} file_content;

/* The whole file: header length, header, tensors (write errors show on f). */
static tt_status write_content(FILE *fp, void *ctx)
{
    const file_content *c = ctx;
    unsigned char length_le[8];
    for (int i = 0; i < 8; i++)
        length_le[i] = (unsigned char)((uint64_t)c->header_length >> (8 * i));
    int ok = fwrite(length_le, 1, 8, fp) == 8 &&
             fwrite(c->header, 1, c->header_length, fp) == c->header_length;
    for (size_t i = 0; ok && i < c->w->count; i++)
        ok = write_le(fp, c->w->entries[i].data, c->w->entries[i].bytes,
                      tt_st_dtypes[c->w->entries[i].dtype].size);
    return NULL;
}

tt_status tt_st_writer_write(const tt_st_writer *w, const char *path)
{
    tt_status status = NULL;
    size_t header_length = 0;
    char *header = build_header(w, &header_length);
    if (!header)
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "safetensors '%s': out of host memory", path);
    file_content content = {w, header, header_length};
    status = tt_file_write_atomic(path, write_content, &content);
    free(header);
    return tt_error_prefix(status, "safetensors '%s'", path);
}

tt_status tt_safetensors_copy_with(const tt_safetensors *f, const char *key, const char *value,
                                   const char *path)
{
    tt_st_writer *w = NULL;
    TT_TRY(tt_st_writer_create(&w));
    tt_status status = NULL;
    for (size_t i = 0; i < f->count && !status; i++) {
        const tt_st_tensor *t = &f->tensors[i];
        void *data = NULL;
        status = tt_st_writer_alloc(w, t->name, t->dtype, t->ndim, t->shape, &data);
        if (!status && t->end > t->begin) memcpy(data, t->data, t->end - t->begin);
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(f->header, "__metadata__"), *entry;
    cJSON_ArrayForEach(entry, meta)
    {
        if (status) break;
        if (cJSON_IsString(entry)) status = tt_st_writer_metadata(w, entry->string, entry->valuestring);
    }
    if (!status) status = tt_st_writer_metadata(w, key, value);
    if (!status) status = tt_st_writer_write(w, path);
    tt_st_writer_destroy(w);
    return status;
}
