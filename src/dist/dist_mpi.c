/* The MPI build of dist.h: Open MPI (or any MPI-3) underneath, errors
 * returned rather than fatal, counts above INT_MAX sent in pieces, and a
 * watchdog that stops the job when a collective does not return. */
#include "dist/dist_internal.h"

#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fault.h"
#include "core/knobs.h"

int tt_dist_built_with_mpi(void) { return 1; }

static atomic_int broken; /* tt_dist_broken() */

int tt_dist_broken(void) { return atomic_load(&broken); }

/* One MPI call's code as a status naming the call. */
static tt_status check(int code, const char *call)
{
    if (code == MPI_SUCCESS) return NULL;
    atomic_store(&broken, 1);
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
    text[length] = 0;
    return tt_error_new(TT_ERR_PEER, "%s failed: %s (another rank may have stopped)", call,
                        length ? text : "unknown MPI error");
}

/* A collective's code as check() gives it.  Not called once an MPI call
 * of this rank failed: the ranks are out of step, and a later collective
 * would pair with another one of theirs.  When TT_FAULT=coll:N names this
 * one (core/fault.h), the error of a network that dropped this rank.  The
 * watchdog times it from enter() to leave(). */
#define COLLECTIVE(call, name) \
    ((refusal = refused(name)) ? refusal : (enter(name), check(leave(call), name)))

/* The watchdog.  Open MPI's TCP transport returns no error when the link
 * to a peer is cut (a network down, a socket reset): it prints the failed
 * readv or writev and waits on in the collective, and so does every rank.
 * A collective of this rank that has not returned in TT_MPI_TIMEOUT
 * seconds stops the job (MPI_Abort, which reaches mpirun over its own
 * connection), naming this rank and the call.  The wait includes the
 * other ranks' work up to the call (rank 0 writing a checkpoint), hence
 * the generous default; the wait for rank 0's validation is unbounded
 * (tt_dist_unbounded). */
static const long default_timeout_s = 600;
static _Atomic double entered;          /* tt_seconds() at the collective's start; 0: in none */
static int unbounded;                   /* tt_dist_unbounded: entered stays 0 */
static const char *_Atomic entered_call; /* its name */
static atomic_int inside;               /* 1 from enter() to leave(), bounded or not */
static struct {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int started, stop;
    long timeout_s;
    int rank, size;
} watch = {.lock = PTHREAD_MUTEX_INITIALIZER}; /* wake: on CLOCK_MONOTONIC, made by watch_start */

static void enter(const char *call)
{
    atomic_store(&entered_call, call);
    atomic_store(&inside, 1);
    atomic_store(&entered, unbounded ? 0.0 : tt_seconds());
}

void tt_dist_unbounded(int on) { unbounded = on; }

static int leave(int code)
{
    atomic_store(&entered, 0.0);
    atomic_store(&inside, 0);
    return code;
}

static void *watch_collectives(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&watch.lock);
    while (!watch.stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&watch.wake, &watch.lock, &until);
        double since = atomic_load(&entered);
        if (watch.stop || since == 0.0 || tt_seconds() - since < (double)watch.timeout_s) continue;
        /* nobody to return an error to: the caller is the one waiting; and
         * Open MPI takes MPI_Abort from any thread, the main one being in MPI */
        fprintf(stderr, "tiletrain: error: rank %d of %d: %s has not returned in %ld s: another "
                "rank stopped answering (the network to it cut, or the rank hung), so every "
                "rank stops; the last checkpoint is kept: restart with --resume.  A longer "
                "wait: TT_MPI_TIMEOUT=SECONDS\n",
                watch.rank, watch.size, atomic_load(&entered_call), watch.timeout_s);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    pthread_mutex_unlock(&watch.lock);
    return NULL;
}

/* Starts the watchdog for a job of several ranks, unless TT_MPI_TIMEOUT is 0. */
static tt_status watch_start(const tt_dist *d)
{
    const char *knob = tt_knob_str(TT_KNOB_MPI_TIMEOUT);
    char *end = NULL;
    long seconds = knob && *knob ? strtol(knob, &end, 10) : default_timeout_s;
    if (knob && *knob && (*end || seconds < 0))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "TT_MPI_TIMEOUT=%s: not a number of seconds "
                            "(0: no limit)", knob);
    if (d->size < 2 || seconds == 0) return NULL;
    watch.timeout_s = seconds;
    watch.rank = d->rank;
    watch.size = d->size;
    watch.stop = 0;
    pthread_condattr_t monotonic;
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC); /* a clock set back waits no longer */
    int made = pthread_cond_init(&watch.wake, &monotonic) == 0;
    pthread_condattr_destroy(&monotonic);
    if (made && pthread_create(&watch.thread, NULL, watch_collectives, NULL) != 0) {
        pthread_cond_destroy(&watch.wake);
        made = 0;
    }
    if (!made)
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "no thread for the watchdog of the MPI "
                            "collectives (TT_MPI_TIMEOUT=0 runs without one)");
    watch.started = 1;
    return NULL;
}

static void watch_stop(void)
{
    if (!watch.started) return;
    pthread_mutex_lock(&watch.lock);
    watch.stop = 1;
    pthread_cond_signal(&watch.wake);
    pthread_mutex_unlock(&watch.lock);
    pthread_join(watch.thread, NULL);
    pthread_cond_destroy(&watch.wake);
    watch.started = 0;
}

/* Stopped from outside.  When one rank fails in a way Open MPI does not
 * return as an error (its TCP transport ends a rank whose send failed on
 * a cut connection, a rank killed), mpirun ends the others with SIGTERM.
 * Each of them says so before it goes, naming itself and the collective
 * it was waiting in, then dies of the signal as it would have: what a
 * reader of the job's log needs to tell the rank that failed (Open MPI's
 * own lines above) from the ones that were stopped.  Only in a job of
 * several ranks, and only where SIGTERM had its default action. */
static struct {
    int installed;
    struct sigaction before;
    char who[64]; /* "tiletrain: error: rank R of N: " */
} term;

static void say(const char *text) /* async-signal-safe */
{
    for (size_t n = strlen(text); n > 0;) {
        ssize_t put = write(STDERR_FILENO, text, n);
        if (put <= 0) return;
        text += put;
        n -= (size_t)put;
    }
}

static void on_sigterm(int sig)
{
    say(term.who);
    if (atomic_load(&inside)) {
        say("stopped by SIGTERM while waiting in ");
        say(atomic_load(&entered_call));
        say(": mpirun stops every rank when one of them fails (its error is above) or when "
            "it is stopped itself");
    } else {
        say("stopped by SIGTERM");
    }
    say("; the last checkpoint is kept: restart with --resume\n");
    sigaction(sig, &term.before, NULL);
    raise(sig); /* blocked until this handler returns, then the default action */
}

static void term_start(const tt_dist *d)
{
    struct sigaction now, mine;
    if (d->size < 2 || sigaction(SIGTERM, NULL, &now) != 0 || now.sa_handler != SIG_DFL) return;
    snprintf(term.who, sizeof term.who, "tiletrain: error: rank %d of %d: ", d->rank, d->size);
    memset(&mine, 0, sizeof mine);
    mine.sa_handler = on_sigterm;
    sigemptyset(&mine.sa_mask);
    term.installed = sigaction(SIGTERM, &mine, &term.before) == 0;
}

static void term_stop(void)
{
    if (term.installed) sigaction(SIGTERM, &term.before, NULL);
    term.installed = 0;
}

static _Thread_local tt_status refusal; /* COLLECTIVE's, handed straight back */

static tt_status refused(const char *call)
{
    if (atomic_load(&broken))
        return tt_error_new(TT_ERR_PEER, "%s not called: an earlier MPI call of this rank "
                            "failed", call);
    if (!tt_fault_hit(TT_FAULT_COLL)) return NULL;
    atomic_store(&broken, 1);
    return tt_error_new(TT_ERR_PEER, "%s failed: the connection to the other ranks was lost "
                        "(TT_FAULT)", call);
}

tt_status tt_dist_start(tt_dist *d)
{
    *d = tt_dist_single();
    if (!tt_dist_launched_size()) return NULL; /* alone: MPI is not even started */
    int provided = 0;
    TT_TRY(check(MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread"));
    d->mpi = 1;
    /* errors come back to us, to be reported with the rank that met them */
    TT_TRY(check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler"));
    TT_TRY(check(MPI_Comm_rank(MPI_COMM_WORLD, &d->rank), "MPI_Comm_rank"));
    TT_TRY(check(MPI_Comm_size(MPI_COMM_WORLD, &d->size), "MPI_Comm_size"));
    MPI_Comm node;
    TT_TRY(check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL,
                                     &node), "MPI_Comm_split_type"));
    tt_status s = check(MPI_Comm_rank(node, &d->local_rank), "MPI_Comm_rank");
    if (!s) s = check(MPI_Comm_size(node, &d->local_size), "MPI_Comm_size");
    MPI_Comm_free(&node);
    if (!s) term_start(d);
    return s ? s : watch_start(d);
}

void tt_dist_finish(tt_dist *d)
{
    watch_stop();
    term_stop();
    if (d->mpi) MPI_Finalize();
    d->mpi = 0;
}

/* An MPI call over n elements of `size` bytes, at most INT_MAX at a time. */
#define IN_PIECES(n, piece, call)                                              \
    for (size_t done_ = 0; done_ < (n); done_ += (piece)) {                    \
        int count_ = (int)((n) - done_ < (piece) ? (n) - done_ : (piece));     \
        TT_TRY(call);                                                          \
    }

static const size_t piece = (size_t)1 << 28;

tt_status tt_dist_sum_f32(const tt_dist *d, float *v, size_t n)
{
    if (d->size < 2) return NULL;
    IN_PIECES(n, piece, COLLECTIVE(MPI_Allreduce(MPI_IN_PLACE, v + done_, count_, MPI_FLOAT, MPI_SUM,
                                            MPI_COMM_WORLD), "MPI_Allreduce (sum of floats)"));
    return NULL;
}

tt_status tt_dist_sum_f64(const tt_dist *d, double *v, size_t n)
{
    if (d->size < 2) return NULL;
    IN_PIECES(n, piece, COLLECTIVE(MPI_Allreduce(MPI_IN_PLACE, v + done_, count_, MPI_DOUBLE, MPI_SUM,
                                            MPI_COMM_WORLD), "MPI_Allreduce (sum of doubles)"));
    return NULL;
}

tt_status tt_dist_max_f64(const tt_dist *d, double *v, size_t n)
{
    if (d->size < 2) return NULL;
    IN_PIECES(n, piece, COLLECTIVE(MPI_Allreduce(MPI_IN_PLACE, v + done_, count_, MPI_DOUBLE, MPI_MAX,
                                            MPI_COMM_WORLD), "MPI_Allreduce (max)"));
    return NULL;
}

tt_status tt_dist_gather_u64(const tt_dist *d, const uint64_t *mine, size_t n, uint64_t *all)
{
    if (n > (size_t)INT_MAX)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_dist_gather_u64: %zu values at once", n);
    for (size_t i = 0; i < n; i++) all[(size_t)d->rank * n + i] = mine[i];
    if (d->size < 2) return NULL;
    return COLLECTIVE(MPI_Allgather(mine, (int)n, MPI_UINT64_T, all, (int)n, MPI_UINT64_T,
                               MPI_COMM_WORLD), "MPI_Allgather");
}

tt_status tt_dist_broadcast(const tt_dist *d, void *bytes, size_t n, int root)
{
    if (d->size < 2) return NULL;
    IN_PIECES(n, piece, COLLECTIVE(MPI_Bcast((char *)bytes + done_, count_, MPI_BYTE, root,
                                        MPI_COMM_WORLD), "MPI_Bcast"));
    return NULL;
}

void tt_dist_abort(const tt_dist *d, int code)
{
    if (d->mpi && d->size > 1) MPI_Abort(MPI_COMM_WORLD, code);
}
