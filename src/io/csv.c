/*
 * RFC 4180 CSV reading into an in-memory table (see csv.h).
 * Strict about quotes: a quote inside an unquoted field, text after a
 * closing quote and a quote left open at the end are errors with the line.
 */
#include "io/csv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/status.h"

static tt_status oom(const char *name)
{
    return tt_error_new(TT_ERR_OUT_OF_MEMORY, "reading CSV %s: out of host memory", name);
}

/* Appends a field (copied from buf[0..len)) to record r. */
static int add_field(tt_csv_record *r, const char *buf, size_t len)
{
    char **grown = tt_realloc(r->fields, sizeof *grown * (size_t)(r->count + 1));
    if (!grown) return 0;
    r->fields = grown;
    char *field = tt_malloc(len + 1);
    if (!field) return 0;
    memcpy(field, buf, len);
    field[len] = '\0';
    r->fields[r->count++] = field;
    return 1;
}

tt_status tt_csv_parse(const char *text, size_t size, const char *name, tt_csv **out)
{
    tt_status status = NULL;
    *out = NULL;
    tt_csv *csv = tt_calloc(1, sizeof *csv);
    size_t buf_cap = 256, buf_len = 0, rec_cap = 0;
    char *buf = tt_malloc(buf_cap);
    if (!csv || !buf) {
        status = oom(name);
        goto cleanup;
    }
    size_t i = 0;
    int line = 1;
    if (size >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) i = 3;
    tt_csv_record record = {0};
    while (i < size) {
        /* start of a record; skip blank lines */
        if (text[i] == '\n' || (text[i] == '\r' && i + 1 < size && text[i + 1] == '\n')) {
            i += text[i] == '\r' ? 2 : 1;
            line++;
            continue;
        }
        record = (tt_csv_record){.line = line};
        int record_done = 0;
        while (!record_done) {
            buf_len = 0;
            int quoted = i < size && text[i] == '"';
            int quote_line = line;
            if (quoted) i++;
            for (;;) {
                if (i >= size) {
                    if (quoted) {
                        status = tt_error_new(TT_ERR_FORMAT, "%s:%d: quoted field never closed "
                                              "(missing '\"')", name, quote_line);
                        goto record_fail;
                    }
                    record_done = 1;
                    break;
                }
                char c = text[i];
                if (c == '\0') {
                    status = tt_error_new(TT_ERR_FORMAT, "%s:%d: NUL byte; is this a text file?", name, line);
                    goto record_fail;
                }
                if (quoted) {
                    if (c == '"') {
                        if (i + 1 < size && text[i + 1] == '"') {
                            i += 2;
                            c = '"';
                        } else {
                            i++;
                            quoted = 0;
                            /* after the closing quote: comma, line end or end of text */
                            if (i < size && text[i] != ',' && text[i] != '\n' &&
                                !(text[i] == '\r' && i + 1 < size && text[i + 1] == '\n')) {
                                status = tt_error_new(TT_ERR_FORMAT, "%s:%d: text after a closing "
                                                      "quote; write a quote inside a quoted field as \"\"",
                                                      name, line);
                                goto record_fail;
                            }
                            continue;
                        }
                    } else {
                        if (c == '\n') line++;
                        i++;
                    }
                } else {
                    if (c == ',') {
                        i++;
                        break;
                    }
                    if (c == '\n' || (c == '\r' && i + 1 < size && text[i + 1] == '\n')) {
                        i += c == '\r' ? 2 : 1;
                        line++;
                        record_done = 1;
                        break;
                    }
                    if (c == '"') {
                        status = tt_error_new(TT_ERR_FORMAT, "%s:%d: quote inside an unquoted field; "
                                              "quote the whole field", name, line);
                        goto record_fail;
                    }
                    i++;
                }
                if (buf_len + 1 >= buf_cap) {
                    char *grown = tt_realloc(buf, buf_cap *= 2);
                    if (!grown) {
                        status = oom(name);
                        goto record_fail;
                    }
                    buf = grown;
                }
                buf[buf_len++] = c;
            }
            if (!add_field(&record, buf, buf_len)) {
                status = oom(name);
                goto record_fail;
            }
        }
        if ((size_t)csv->count == rec_cap) {
            rec_cap = rec_cap ? rec_cap * 2 : 64;
            tt_csv_record *grown = tt_realloc(csv->records, sizeof *grown * rec_cap);
            if (!grown) {
                status = oom(name);
                goto record_fail;
            }
            csv->records = grown;
        }
        csv->records[csv->count++] = record;
        continue;
    record_fail:
        for (int f = 0; f < record.count; f++) free(record.fields[f]);
        free(record.fields);
        goto cleanup;
    }
    *out = csv;
    csv = NULL;
cleanup:
    free(buf);
    tt_csv_destroy(csv);
    return status;
}

tt_status tt_csv_read_file(const char *path, tt_csv **out)
{
    tt_status status = NULL;
    char *text = NULL;
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return tt_error_new(TT_ERR_IO, "cannot open CSV %s: %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0, got;
    text = tt_malloc(cap);
    if (!text) {
        status = oom(path);
        goto cleanup;
    }
    status = tt_read_fault("the CSV file", path);
    if (status) goto cleanup;
    while ((got = fread(text + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            char *grown = tt_realloc(text, cap *= 2);
            if (!grown) {
                status = oom(path);
                goto cleanup;
            }
            text = grown;
        }
    }
    if (ferror(f)) {
        status = tt_error_new(TT_ERR_IO, "reading CSV %s failed: %s", path, strerror(errno));
        goto cleanup;
    }
    status = tt_csv_parse(text, len, path, out);
cleanup:
    free(text);
    fclose(f);
    return status;
}

void tt_csv_destroy(tt_csv *csv)
{
    if (!csv) return;
    for (int r = 0; r < csv->count; r++) {
        for (int f = 0; f < csv->records[r].count; f++) free(csv->records[r].fields[f]);
        free(csv->records[r].fields);
    }
    free(csv->records);
    free(csv);
}
