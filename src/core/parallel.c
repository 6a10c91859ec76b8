#include "core/parallel.h"

#include <pthread.h>
#include <unistd.h>

#define MAX_THREADS 64

typedef struct job {
    pthread_mutex_t lock;
    size_t next, n;
    void (*fn)(void *ctx, size_t i);
    void *ctx;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    for (;;) {
        pthread_mutex_lock(&j->lock);
        size_t i = j->next < j->n ? j->next++ : j->n;
        pthread_mutex_unlock(&j->lock);
        if (i == j->n) return NULL;
        j->fn(j->ctx, i);
    }
}

int tt_host_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

void tt_parallel_for(size_t n, void (*fn)(void *ctx, size_t i), void *ctx)
{
    if (n == 0) return;
    job j = {.next = 0, .n = n, .fn = fn, .ctx = ctx};
    pthread_mutex_init(&j.lock, NULL);
    size_t extra = (size_t)tt_host_cores() < n ? (size_t)tt_host_cores() - 1 : n - 1;
    pthread_t threads[MAX_THREADS];
    size_t started = 0;
    while (started < extra && pthread_create(&threads[started], NULL, worker, &j) == 0) started++;
    worker(&j); /* the caller is one of the threads */
    for (size_t t = 0; t < started; t++) pthread_join(threads[t], NULL);
    pthread_mutex_destroy(&j.lock);
}
