/* The most loop iterations, all loops together, that one shader invocation
 * may run.  lavapipe (Mesa's gallivm loop limiter) ends every loop of an
 * invocation once they have run 65535 iterations together, without an
 * error, so the rest of the work is silently skipped.  Host code that
 * launches a kernel with a loop whose length grows with the shapes keeps
 * each invocation's share under this budget (more work-items, or several
 * launches); half the limit leaves room for the short loops around it.
 * docs/backend.md ("loops") lists every shader's count. */
#ifndef TT_BACKEND_LOOP_BUDGET_H
#define TT_BACKEND_LOOP_BUDGET_H

#define TT_LOOP_BUDGET 32768

#endif
