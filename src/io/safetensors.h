/*
 * safetensors files (huggingface's format), read and written on the host.
 *
 * Layout: an 8-byte little-endian header length N; N bytes of JSON
 *   {"NAME": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]},
 *    ..., "__metadata__": {"key": "value", ...}}
 * padded with spaces so that N is a multiple of 8; then the raw little-endian
 * tensor data, offsets relative to its start, tensors back to back.
 *
 * The reader maps the whole file (reads it where it cannot be mapped) and
 * validates everything before handing out a tensor (header length vs file
 * size, JSON, dtypes, shape products vs byte lengths, offsets contiguous
 * from 0 to the end, unique names); any fault is TT_ERR_FORMAT naming the
 * file and the tensor.  A mapped file's data are read from the page cache
 * as tensors are copied out: no host copy of a whole checkpoint.  (A file
 * cut short in place while open would fault; tiletrain's writers replace
 * files by rename, never in place.)  The writer writes
 * NAME.tmp.<pid>, fsyncs it, renames it over NAME and fsyncs the directory:
 * a crash or a failed write leaves the old file whole.
 * Checkpoints use PyTorch state_dict names, so torch users load them directly.
 */
#ifndef TT_IO_SAFETENSORS_H
#define TT_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "tiletrain.h"

/* Every dtype the format names; the reader knows their sizes. */
typedef enum tt_st_dtype {
    TT_ST_BOOL, TT_ST_U8, TT_ST_I8, TT_ST_F8_E5M2, TT_ST_F8_E4M3, TT_ST_I16, TT_ST_U16,
    TT_ST_F16, TT_ST_BF16, TT_ST_I32, TT_ST_U32, TT_ST_F32, TT_ST_F64, TT_ST_I64, TT_ST_U64,
    TT_ST_DTYPE_COUNT
} tt_st_dtype;

const char *tt_st_dtype_name(tt_st_dtype dtype); /* "F32", "I64", ... */
size_t tt_st_dtype_size(tt_st_dtype dtype);      /* bytes per element */

#define TT_ST_MAX_DIMS 8
#define TT_ST_MAX_HEADER_BYTES 100000000 /* as the reference implementation */

/* One tensor of an open file. */
typedef struct tt_st_tensor {
    const char *name;
    tt_st_dtype dtype;
    int ndim;                       /* 0 for a scalar */
    int64_t shape[TT_ST_MAX_DIMS];
    uint64_t begin, end;            /* data_offsets: bytes after the header */
    const unsigned char *data;      /* little-endian, maybe unaligned */
} tt_st_tensor;

/* ---- reader ---------------------------------------------------------------- */

typedef struct tt_safetensors tt_safetensors;

/* Maps (or reads) and validates the whole file.  *out: tt_safetensors_close().
 * Errors: TT_ERR_IO (cannot open or read), TT_ERR_FORMAT (anything wrong
 * inside; the message names the file, the tensor and the fault). */
tt_status tt_safetensors_open(const char *path, tt_safetensors **out);
/* NULL is allowed. */
void tt_safetensors_close(tt_safetensors *file);

const char *tt_safetensors_path(const tt_safetensors *file);
size_t tt_safetensors_count(const tt_safetensors *file);
/* The index-th tensor in data order (0 <= index < count). */
const tt_st_tensor *tt_safetensors_at(const tt_safetensors *file, size_t index);
/* The tensor called name, or NULL. */
const tt_st_tensor *tt_safetensors_find(const tt_safetensors *file, const char *name);
/* The __metadata__ value of key, or NULL; the pointer lives as long as file. */
const char *tt_safetensors_metadata(const tt_safetensors *file, const char *key);

/* Writes a copy of `file` to `path` (atomically, as tt_st_writer_write;
 * `path` may be the file's own) with __metadata__ key set to value: every
 * tensor's bytes and every other entry as they are. */
tt_status tt_safetensors_copy_with(const tt_safetensors *file, const char *key, const char *value,
                                   const char *path);

/* Copies tensor `name` into out (host floats), after checking that it exists,
 * is F32 and has exactly the expected shape (ndim entries); each mismatch is
 * TT_ERR_FORMAT naming the file, the tensor, what it has and what was
 * expected. */
tt_status tt_safetensors_get_f32(const tt_safetensors *file, const char *name, int ndim,
                                 const int64_t *shape, float *out);
/* The same for I64 (counters such as the step). */
tt_status tt_safetensors_get_i64(const tt_safetensors *file, const char *name, int ndim,
                                 const int64_t *shape, int64_t *out);

/* ---- writer ---------------------------------------------------------------- */

typedef struct tt_st_writer tt_st_writer;

/* An empty file to fill.  *out: tt_st_writer_destroy() (NULL allowed). */
tt_status tt_st_writer_create(tt_st_writer **out);
void tt_st_writer_destroy(tt_st_writer *writer);

/* Adds a tensor whose elements (host byte order) are copied from data.
 * Names are unique and non-empty; shapes have at most TT_ST_MAX_DIMS
 * non-negative entries.  Tensors are written in the order added. */
tt_status tt_st_writer_add(tt_st_writer *writer, const char *name, tt_st_dtype dtype, int ndim,
                           const int64_t *shape, const void *data);
/* Adds a tensor and returns writer-owned storage for it (*data, valid until
 * the writer is destroyed) for the caller to fill in host byte order, e.g.
 * straight from a device read: no second copy. */
tt_status tt_st_writer_alloc(tt_st_writer *writer, const char *name, tt_st_dtype dtype, int ndim,
                             const int64_t *shape, void **data);
/* Sets a __metadata__ entry (a later call with the same key replaces it). */
tt_status tt_st_writer_metadata(tt_st_writer *writer, const char *key, const char *value);

/* Writes the file atomically: PATH.tmp.<pid>, fsync, rename over PATH, fsync
 * of the directory.  On failure the temporary file is removed and whatever
 * was at PATH is left as it was.  Errors: TT_ERR_IO naming the path and the
 * system's reason. */
tt_status tt_st_writer_write(const tt_st_writer *writer, const char *path);

#endif
