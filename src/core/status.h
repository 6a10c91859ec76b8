/*
 * Building tt_status errors inside the library.
 *
 * An error is allocated only on failure.  If even that allocation fails, a
 * static out-of-memory error is returned; tt_status_free() knows not to free
 * it.  TT_TRY returns early; TT_CHECK jumps to a function's cleanup label.
 */
#ifndef TT_CORE_STATUS_H
#define TT_CORE_STATUS_H

#include "tiletrain.h"

#if defined(__GNUC__)
#define TT_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define TT_PRINTF(fmt, args)
#endif

tt_status tt_error_new(tt_code code, const char *fmt, ...) TT_PRINTF(2, 3);
/* "OP failed: CL_NAME (-N)": the operation by its words, the error by name. */
tt_status tt_error_cl(int cl_error, const char *fmt, ...) TT_PRINTF(2, 3);
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
