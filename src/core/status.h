/*
 * Building tt_status errors inside the library.
 *
 * An error is allocated only on failure.  If even that allocation fails, a
 * static out-of-memory error is returned; tt_status_free() knows not to free
 * it.  TT_TRY returns early; TT_CHECK jumps to a function's cleanup label.
 */
#ifndef TT_CORE_STATUS_H
#define TT_CORE_STATUS_H

#include <stdarg.h>

#include "tiletrain.h"

#if defined(__GNUC__)
#define TT_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define TT_PRINTF(fmt, args)
#endif

tt_status tt_error_new(tt_code code, const char *fmt, ...) TT_PRINTF(2, 3);
/* A failed call of a backend: "OP failed: NAME (CODE)", the operation by
 * the words of `fmt`, the error by the backend's name for `code`.  Keeps
 * `backend` (a short name such as "opencl") and `code` for
 * tt_status_backend() and tt_status_backend_code().  `code_kind` is
 * TT_ERR_BACKEND, or a plainer code when the backend knows what its code
 * means (TT_ERR_OUT_OF_MEMORY for a failed allocation). */
tt_status tt_error_backend(const char *backend, int code, const char *code_name,
                           tt_code code_kind, const char *fmt, ...) TT_PRINTF(5, 6);
/* The same with a va_list, for a backend's own error helper. */
tt_status tt_error_backend_v(const char *backend, int code, const char *code_name,
                             tt_code code_kind, const char *fmt, va_list ap);
/* Attaches a long detail (copied); returns the same status for chaining. */
tt_status tt_error_set_detail(tt_status status, const char *detail);
/* Prefixes the message with context: "loading X: <old message>". */
tt_status tt_error_prefix(tt_status status, const char *fmt, ...) TT_PRINTF(2, 3);

/* Always-on assertion for programmer errors (never for run-time input). */
#define TT_ASSERT(cond)                                                        \
    do {                                                                       \
        if (!(cond)) tt_assert_fail(#cond, __FILE__, __LINE__);                \
    } while (0)
_Noreturn void tt_assert_fail(const char *what, const char *file, int line);

#define TT_TRY(expr)                                                           \
    do {                                                                       \
        tt_status tt_try_status_ = (expr);                                     \
        if (tt_try_status_) return tt_try_status_;                             \
    } while (0)

/* Needs `tt_status status` in scope and a `cleanup:` label. */
#define TT_CHECK(expr)                                                         \
    do {                                                                       \
        status = (expr);                                                       \
        if (status) goto cleanup;                                              \
    } while (0)

#endif
