/*
 * A small CSV reader (RFC 4180): comma-separated fields, fields in double
 * quotes may hold commas, line breaks and doubled quotes (""), records end
 * in LF or CRLF, a UTF-8 byte-order mark at the start is skipped, blank
 * lines are skipped.  The whole text is parsed at once into a table that
 * remembers each record's line number for error messages.  (No library
 * among tiletrain's dependencies reads CSV.)
 */
#ifndef TT_IO_CSV_H
#define TT_IO_CSV_H

#include <stddef.h>

#include "tiletrain.h"

typedef struct tt_csv_record {
    int line;      /* 1-based line where the record starts */
    int count;     /* fields */
    char **fields; /* NUL-terminated, unquoted */
} tt_csv_record;

typedef struct tt_csv {
    int count; /* records, the header included */
    tt_csv_record *records;
} tt_csv;

/* Parses `size` bytes of text.  `name` (a file name) prefixes errors:
 * "NAME:LINE: unterminated quoted field" and the like.  *out is owned by the
 * caller (tt_csv_destroy). */
tt_status tt_csv_parse(const char *text, size_t size, const char *name, tt_csv **out);

/* Reads and parses a file; a missing or unreadable file is TT_ERR_IO. */
tt_status tt_csv_read_file(const char *path, tt_csv **out);

void tt_csv_destroy(tt_csv *csv);

#endif
