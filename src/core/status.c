/* tt_status: heap-allocated error objects, NULL for success. */
#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

struct tt_error {
    tt_code code;
    int backend_code;  /* the backend's own code; 0 unless a backend failed */
    char backend[16];  /* the backend's name; "" unless a backend failed */
    char *detail;
    char message[1024];
};

static tt_error oom_error = {TT_ERR_OUT_OF_MEMORY, 0, "", NULL,
                             "out of host memory while reporting an error"};

static tt_status error_vnew(tt_code code, const char *fmt, va_list ap)
{
    tt_error *e = tt_calloc(1, sizeof *e); /* TT_FAULT=host reaches it */
    if (!e) return &oom_error;
    e->code = code;
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    return e;
}

tt_status tt_error_new(tt_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tt_status s = error_vnew(code, fmt, ap);
    va_end(ap);
    return s;
}

tt_status tt_error_backend_v(const char *backend, int code, const char *code_name,
                             tt_code code_kind, const char *fmt, va_list ap)
{
    tt_status s = error_vnew(code_kind, fmt, ap);
    if (s == &oom_error) return s;
    s->backend_code = code;
    snprintf(s->backend, sizeof s->backend, "%s", backend);
    size_t len = strlen(s->message);
    snprintf(s->message + len, sizeof s->message - len, " failed: %s (%d)", code_name, code);
    return s;
}

tt_status tt_error_backend(const char *backend, int code, const char *code_name,
                           tt_code code_kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tt_status s = tt_error_backend_v(backend, code, code_name, code_kind, fmt, ap);
    va_end(ap);
    return s;
}

tt_status tt_error_set_detail(tt_status status, const char *detail)
{
    if (!status || status == &oom_error || !detail) return status;
    free(status->detail);
    status->detail = tt_strdup(detail); /* NULL: no detail */
    return status;
}

tt_status tt_error_prefix(tt_status status, const char *fmt, ...)
{
    if (!status || status == &oom_error) return status;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char old[sizeof status->message];
    memcpy(old, status->message, sizeof old);
    /* prefix, ": ", then as much of the old message as fits */
    size_t len = strlen(prefix);
    if (len > sizeof status->message - 3) len = sizeof status->message - 3;
    memcpy(status->message, prefix, len);
    memcpy(status->message + len, ": ", 2);
    len += 2;
    size_t rest = strlen(old);
    if (rest > sizeof status->message - 1 - len) rest = sizeof status->message - 1 - len;
    memcpy(status->message + len, old, rest);
    status->message[len + rest] = '\0';
    return status;
}

tt_code tt_status_code(tt_status status) { return status ? status->code : TT_OK; }

const char *tt_status_message(tt_status status) { return status ? status->message : "ok"; }

const char *tt_status_detail(tt_status status)
{
    return status && status->detail ? status->detail : "";
}

int tt_status_backend_code(tt_status status) { return status ? status->backend_code : 0; }

const char *tt_status_backend(tt_status status) { return status ? status->backend : ""; }

const char *tt_code_name(tt_code code)
{
    static const char *const names[] = {
        "TT_OK",         "TT_ERR_INVALID_ARGUMENT", "TT_ERR_NO_DEVICE",
        "TT_ERR_BACKEND", "TT_ERR_BUILD",           "TT_ERR_OUT_OF_MEMORY",
        "TT_ERR_TOO_LARGE", "TT_ERR_IO",            "TT_ERR_FORMAT",
        "TT_ERR_UNSUPPORTED", "TT_ERR_INTERNAL", "TT_ERR_PEER",
    };
    _Static_assert(sizeof names / sizeof names[0] == TT_ERR_PEER + 1,
                   "every tt_code needs a name");
    return (unsigned)code <= TT_ERR_PEER ? names[code] : "TT_ERR_UNKNOWN";
}

void tt_status_free(tt_status status)
{
    if (!status || status == &oom_error) return;
    free(status->detail);
    free(status);
}

void tt_assert_fail(const char *what, const char *file, int line)
{
    fprintf(stderr, "tiletrain: internal error: assertion '%s' failed at %s:%d\n",
            what, file, line);
    abort();
}
