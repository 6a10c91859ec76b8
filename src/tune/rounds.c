/* tiletrain tune's rounds in child processes; see rounds.h. */
#include "tune/rounds.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/status.h"

extern char **environ;

#define MAX_ROUNDS 100
#define MIN_ROUND_S 5.0 /* a round needs at least one rebuild's worth of time */
#define MAX_CRASHES 3   /* rounds in a row ended by a signal: give up */

/* Runs one round: argv (NULL-terminated) with stdout into *out (malloc'd,
 * NUL-terminated).  *wstatus: waitpid's. */
static tt_status spawn_round(char *const *argv, int log_to_stdout, char **out, int *wstatus)
{
    *out = NULL;
    int fds[2];
    if (pipe(fds) != 0) return tt_error_new(TT_ERR_IO, "tune: pipe: %s", strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (log_to_stdout) posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    pid_t pid;
    int err = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (err) {
        close(fds[0]);
        return tt_error_new(TT_ERR_IO, "tune: cannot start a search round (%s): %s", argv[0],
                            strerror(err));
    }
    size_t size = 0, cap = 4096;
    char *buf = tt_malloc(cap);
    for (ssize_t got = 1; buf && got > 0;) {
        if (size + 1024 > cap) {
            char *grown = tt_realloc(buf, cap *= 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
        }
        got = read(fds[0], buf + size, cap - size - 1);
        if (got > 0) size += (size_t)got;
        else if (got < 0 && errno == EINTR) got = 1;
    }
    close(fds[0]);
    while (waitpid(pid, wstatus, 0) < 0 && errno == EINTR) {
    }
    if (!buf) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "tune: out of host memory");
    buf[size] = '\0';
    *out = buf;
    return NULL;
}

tt_status tt_tune_run_rounds(const tt_tune_rounds *r, cJSON **last, int *rounds, int *candidates,
                             int *rejected)
{
    *last = NULL;
    *rounds = *candidates = *rejected = 0;
    double start = tt_seconds();
    /* exe tune ARGS --one-round --json --output F --budget S --seed K
     * [--max-xgemm N] [--max-direct N] */
    enum { EXTRA = 16 };
    const char **argv = tt_calloc((size_t)r->arg_count + EXTRA, sizeof *argv);
    if (!argv) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "tune: out of host memory");
    char budget[32], seed[32], xgemm[32], direct[32];
    tt_status status = NULL;
    int crashes = 0; /* in a row */
    for (int k = 0; k < MAX_ROUNDS; k++) {
        double left = r->budget_s - (tt_seconds() - start);
        int xgemm_left = r->max_xgemm ? r->max_xgemm - *candidates : 0;
        if ((k > 0 && left < MIN_ROUND_S) || (r->max_xgemm && xgemm_left <= 0)) break;
        int n = 0;
        argv[n++] = "/proc/self/exe";
        argv[n++] = "tune";
        for (int i = 0; i < r->arg_count; i++) argv[n++] = r->args[i];
        snprintf(budget, sizeof budget, "%.0f", left > 1 ? left : 1);
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)(r->seed + (uint64_t)k));
        argv[n++] = "--one-round", argv[n++] = "--json";
        argv[n++] = "--output", argv[n++] = r->output;
        argv[n++] = "--budget", argv[n++] = budget;
        argv[n++] = "--seed", argv[n++] = seed;
        if (r->max_xgemm) {
            snprintf(xgemm, sizeof xgemm, "%d", xgemm_left);
            argv[n++] = "--max-xgemm", argv[n++] = xgemm;
        }
        if (r->max_direct >= 0) {
            snprintf(direct, sizeof direct, "%d", r->max_direct);
            argv[n++] = "--max-direct", argv[n++] = direct;
        }
        argv[n] = NULL;
        if (r->log) {
            fprintf(r->log, "round %d, in a new process (%.0f s left)\n", k + 1, left);
            fflush(r->log);
        }
        char *out = NULL;
        int ws = 0;
        status = spawn_round((char *const *)argv, r->log_to_stdout, &out, &ws);
        if (status) break;
        (*rounds)++;
        if (WIFSIGNALED(ws)) {
            free(out);
            if (++crashes == MAX_CRASHES) {
                status = tt_error_new(TT_ERR_IO, "tune: %d search rounds in a row ended by a "
                                      "signal (the last: %s); see docs/tune.md", crashes,
                                      strsignal(WTERMSIG(ws)));
                break;
            }
            if (r->log)
                fprintf(r->log, "round %d ended by signal %d (%s; CLBlast and PoCL have crashed "
                        "so, docs/tune.md); the best so far is in %s, going on in a new "
                        "process\n", k + 1, WTERMSIG(ws), strsignal(WTERMSIG(ws)), r->output);
            continue;
        }
        crashes = 0;
        if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
            free(out);
            status = tt_error_new(TT_ERR_IO, "tune: search round %d failed (exit status %d; its "
                                  "error is above)", k + 1, WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
            break;
        }
        cJSON *report = cJSON_Parse(out);
        free(out);
        if (!report) {
            status = tt_error_new(TT_ERR_FORMAT, "tune: search round %d printed no JSON report", k + 1);
            break;
        }
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(report, "candidates");
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(report, "rejected");
        int tried = cJSON_IsNumber(c) ? c->valueint : 0;
        *candidates += tried;
        *rejected += cJSON_IsNumber(j) ? j->valueint : 0;
        cJSON_Delete(*last);
        *last = report;
        if (tried == 0) break; /* nothing new to try */
    }
    free(argv);
    return status;
}
