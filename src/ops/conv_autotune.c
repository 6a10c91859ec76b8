/* Timing convolution algorithms and the on-disk find-db; see conv_autotune.h. */
#include "ops/conv_autotune.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/fs.h"
#include "core/hash.h"
#include "core/status.h"

/* One decided key of one device on one backend. */
typedef struct pick {
    uint64_t device; /* db_key() */
    char *key;
    tt_conv_algo algo;  /* AUTO while only refusals are known */
    double ms;  /* best time measured; < 0 when unknown */
    /* per algorithm: what refused it (error > 0), else all zero */
    tt_conv_verdict refused[TT_CONV_ALGO_COUNT];
} pick;

/* Faster than any launch plus clFinish on any device (GPU launches alone
 * take ~5 us): an entry below it was never measured. */
#define MIN_REAL_MS 0.005

/* A device (and backend) whose find-db file has been read (or found
 * missing/corrupt). */
typedef struct loaded_device {
    uint64_t device;
} loaded_device;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pick *picks;
static size_t pick_count, pick_capacity;
static loaded_device *loaded;
static size_t loaded_count;
static tt_conv_autotune_stats stats;
/* keys sized for every candidate and not yet timed (device, key): what a
 * first run will tune; and who hears of it */
static pick *pending;
static size_t pending_count, pending_capacity;
static uint64_t tuned_count;
static tt_conv_tune_observer observer;
static void *observer_ctx;

static int find_db_dir(char *buf, size_t size)
{
    tt_status status = tt_cache_path("find-db", buf, size);
    int found = status == NULL;
    tt_status_free(status);
    return found;
}

/* The backend whose kernels `be` runs ("opencl", "vulkan"; a dry backend
 * answers for the kind it stands in for): a time taken on one API says
 * nothing about the other, even on the same device. */
static const char *db_backend(const tt_backend *be)
{
    return tt_backend_kind_name((tt_backend_kind)be->kernels_of);
}

/* cmake/conv_code_hash.cmake */
extern const char tt_conv_code_opencl[], tt_conv_code_vulkan[];

const char *tt_conv_find_db_code(const tt_backend *be)
{
    return be->kernels_of == TT_BACKEND_VULKAN ? tt_conv_code_vulkan : tt_conv_code_opencl;
}

/* The key of be's picks in memory: the device and the backend. */
static uint64_t db_key(const tt_backend *be)
{
    uint64_t device = tt_device_key(&be->device);
    const char *backend = db_backend(be);
    return tt_hash_bytes(tt_hash_bytes(TT_HASH_INIT, &device, sizeof device), backend,
                         strlen(backend) + 1);
}

/* <dir>/<backend>-<device key>.json */
static tt_status db_path(const tt_backend *be, char *buf, size_t size)
{
    char dir[900];
    if (!find_db_dir(dir, sizeof dir))
        return tt_error_new(TT_ERR_IO, "conv find-db: no cache directory; set TT_CACHE_DIR, "
                                       "XDG_CACHE_HOME or HOME");
    unsigned long long device = (unsigned long long)tt_device_key(&be->device);
    int n = snprintf(buf, size, "%s/%s-%016llx.json", dir, db_backend(be), device);
    if (n < 0 || (size_t)n >= size)
        return tt_error_new(TT_ERR_IO, "conv find-db: path under '%s' is too long", dir);
    return NULL;
}

/* The find-db's path for messages: "its find-db" when there is none. */
static void db_path_text(const tt_backend *be, char *buf, size_t size)
{
    snprintf(buf, size, "its find-db");
    tt_status_free(db_path(be, buf, size));
}

tt_status tt_conv_find_db_path(const tt_backend *be, char *buf, size_t size)
{
    return db_path(be, buf, size);
}

/* ---- memory (called with the lock held) ---------------------------------- */

static pick *find_pick(uint64_t device, const char *key)
{
    for (size_t i = 0; i < pick_count; i++)
        if (picks[i].device == device && strcmp(picks[i].key, key) == 0) return &picks[i];
    return NULL;
}

/* The entry of `key`, made (with no pick) when there is none; NULL when
 * the host is out of memory. */
static pick *entry_of(uint64_t device, const char *key)
{
    pick *old = find_pick(device, key);
    if (old) return old;
    if (pick_count == pick_capacity) {
        size_t cap = pick_capacity ? 2 * pick_capacity : 16;
        pick *grown = tt_realloc(picks, cap * sizeof *grown);
        if (!grown) return NULL;
        picks = grown, pick_capacity = cap;
    }
    char *copy = tt_strdup(key);
    if (!copy) return NULL;
    pick fresh = {.device = device, .key = copy, .algo = TT_CONV_ALGO_AUTO, .ms = -1.0};
    picks[pick_count] = fresh;
    return &picks[pick_count++];
}

static int add_pick(uint64_t device, const char *key, tt_conv_algo algo, double ms)
{
    pick *p = entry_of(device, key);
    if (!p) return 0;
    p->algo = algo, p->ms = ms;
    return 1;
}

/* The file's "refused" object of an entry into p (unknown names and
 * malformed values skipped). */
static void read_refused(pick *p, const cJSON *refused)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, refused)
    {
        tt_conv_algo algo;
        tt_status bad = r->string ? tt_conv_algo_parse(r->string, &algo)
                                  : tt_error_new(TT_ERR_FORMAT, "no name");
        cJSON *error = cJSON_GetObjectItemCaseSensitive(r, "error");
        cJSON *bound = cJSON_GetObjectItemCaseSensitive(r, "bound");
        cJSON *reference = cJSON_GetObjectItemCaseSensitive(r, "reference");
        tt_conv_algo ref = TT_CONV_ALGO_AUTO;
        if (!bad && cJSON_IsString(reference))
            tt_status_free(tt_conv_algo_parse(reference->valuestring, &ref));
        if (!bad && algo != TT_CONV_ALGO_AUTO && cJSON_IsNumber(error) && error->valuedouble > 0)
            p->refused[algo] = (tt_conv_verdict){
                .error = error->valuedouble,
                .bound = cJSON_IsNumber(bound) ? bound->valuedouble : 0,
                .reference = ref};
        tt_status_free(bad);
    }
}

static int device_loaded(uint64_t device)
{
    for (size_t i = 0; i < loaded_count; i++)
        if (loaded[i].device == device) return 1;
    return 0;
}

/* Adds the entries of the device's find-db file to memory.  merge = 0: the
 * first read (counted; a corrupt file or entry is warned about and ignored,
 * a file of other code noted); merge = 1: before a write, quietly taking
 * the keys another process added meanwhile, so that concurrent runs do not
 * drop each other's picks.  A file that names another backend (or none,
 * outside OpenCL), or other code, is ignored. */
static void read_db_file(const tt_backend *be, uint64_t device, int merge)
{
    char path[1024];
    tt_status status = db_path(be, path, sizeof path);
    if (status) {
        tt_status_free(status);
        return;
    }
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char *text = NULL;
    cJSON *root = NULL;
    long len = -1;
    tt_status unreadable = tt_read_fault("the convolution find-db", path);
    if (!unreadable && fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (!unreadable && len >= 0 && fseek(f, 0, SEEK_SET) == 0 && !(text = tt_malloc((size_t)len + 1)))
        unreadable = tt_error_new(TT_ERR_OUT_OF_MEMORY, "reading '%s': out of host memory", path);
    else if (!unreadable && (!text || fread(text, 1, (size_t)len, f) != (size_t)len))
        unreadable = tt_error_new(TT_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
    fclose(f);
    if (!merge) stats.db_loads++;
    if (unreadable) { /* as a missing file: timed again, the file written whole again */
        if (!merge) {
            fprintf(stderr, "tiletrain: warning: convolution find-db ignored: %s; the "
                            "convolutions are timed again and the file rewritten\n",
                    tt_status_message(unreadable));
            stats.db_ignored++;
        }
        tt_status_free(unreadable);
        goto done;
    }
    text[len] = '\0';
    root = cJSON_Parse(text);
    cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
    cJSON *entries = cJSON_GetObjectItemCaseSensitive(root, "entries");
    cJSON *backend = cJSON_GetObjectItemCaseSensitive(root, "backend");
    cJSON *code = cJSON_GetObjectItemCaseSensitive(root, "code");
    const char *timed_on = cJSON_IsString(backend) ? backend->valuestring : "opencl";
    if (root && strcmp(timed_on, db_backend(be)) != 0) {
        if (!merge) {
            fprintf(stderr,
                    "tiletrain: warning: convolution find-db '%s' holds times of the %s "
                    "backend, not of %s; ignoring it (the convolutions are timed again and "
                    "the file rewritten)\n",
                    path, timed_on, db_backend(be));
            stats.db_ignored++;
        }
        goto done;
    }
    if (!cJSON_IsNumber(version) || !cJSON_IsObject(entries)) {
        if (!merge) {
            fprintf(stderr,
                    "tiletrain: warning: convolution find-db '%s' is corrupt; ignoring it "
                    "(the convolutions are timed again and the file rewritten)\n",
                    path);
            stats.db_ignored++;
        }
        goto done;
    }
    /* older layouts, or picks of other code: timed again, a note */
    if (version->valuedouble != TT_FIND_DB_VERSION || !cJSON_IsString(code) ||
        strcmp(code->valuestring, tt_conv_find_db_code(be)) != 0) {
        if (!merge) {
            fprintf(stderr,
                    "tiletrain: note: convolution find-db '%s' was timed with other kernels "
                    "than this build's; the convolutions are timed again\n",
                    path);
            stats.db_stale++;
        }
        goto done;
    }
    const cJSON *entry;
    cJSON_ArrayForEach(entry, entries)
    {
        cJSON *name = cJSON_GetObjectItemCaseSensitive(entry, "algo");
        cJSON *ms = cJSON_GetObjectItemCaseSensitive(entry, "ms");
        cJSON *refused = cJSON_GetObjectItemCaseSensitive(entry, "refused");
        tt_conv_algo algo;
        tt_status bad = cJSON_IsString(name) ? tt_conv_algo_parse(name->valuestring, &algo)
                                             : tt_error_new(TT_ERR_FORMAT, "no algo");
        if (cJSON_IsObject(refused) && entry->string && !(merge && find_pick(device, entry->string))) {
            /* refusals stand even where the pick itself is unusable */
            pick *p = entry_of(device, entry->string);
            if (p) read_refused(p, refused);
        }
        if (bad || algo == TT_CONV_ALGO_AUTO) {
            if (!merge && (bad || !cJSON_IsObject(refused))) {
                fprintf(stderr, "tiletrain: warning: convolution find-db '%s': entry '%s' has "
                                "no valid algorithm; ignoring the entry\n",
                        path, entry->string ? entry->string : "?");
                stats.db_ignored++;
            }
            tt_status_free(bad);
            continue;
        }
        if (cJSON_IsNumber(ms) && ms->valuedouble < MIN_REAL_MS) {
            /* written by versions that timed on the dry backend (a few
             * microseconds for all): no measurement, so the shape is timed
             * again (and the entry dropped at the next write) */
            if (!merge) stats.db_ignored++;
            continue;
        }
        pick *had = find_pick(device, entry->string);
        if (merge && had && had->algo != TT_CONV_ALGO_AUTO) continue;
        add_pick(device, entry->string, algo, cJSON_IsNumber(ms) ? ms->valuedouble : -1.0);
    }
done:
    cJSON_Delete(root);
    free(text);
}

/* Reads the device's find-db once per process; missing is empty. */
static void load_db(const tt_backend *be, uint64_t device)
{
    loaded_device *grown = tt_realloc(loaded, (loaded_count + 1) * sizeof *grown);
    if (!grown) return;
    loaded = grown;
    loaded[loaded_count++] = (loaded_device){device};
    read_db_file(be, device, 0);
}

/* Writes every pick of the device (merged with what the file holds now) to
 * its find-db: temporary file, fsync, rename.  Failures are warnings: the
 * pick itself stands. */
static void write_db(const tt_backend *be, uint64_t device)
{
    char path[1024], dir[900];
    tt_status status = db_path(be, path, sizeof path);
    if (status || !find_db_dir(dir, sizeof dir)) {
        if (status) fprintf(stderr, "tiletrain: warning: %s\n", tt_status_message(status));
        tt_status_free(status);
        return;
    }
    tt_status_free(tt_make_dirs(dir)); /* a failure shows as the write's warning below */
    read_db_file(be, device, 1);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "version", TT_FIND_DB_VERSION);
    char device_text[512];
    snprintf(device_text, sizeof device_text, "%s / %s / %s", be->device.name,
             be->device.platform, be->device.driver_version);
    cJSON_AddStringToObject(root, "device", device_text);
    cJSON_AddStringToObject(root, "backend", db_backend(be));
    cJSON_AddStringToObject(root, "code", tt_conv_find_db_code(be));
    cJSON *entries = cJSON_AddObjectToObject(root, "entries");
    for (size_t i = 0; i < pick_count; i++) {
        if (picks[i].device != device) continue;
        cJSON *e = cJSON_AddObjectToObject(entries, picks[i].key);
        cJSON_AddStringToObject(e, "algo", tt_conv_algo_name(picks[i].algo));
        if (picks[i].ms >= 0) cJSON_AddNumberToObject(e, "ms", picks[i].ms);
        cJSON *refused = NULL;
        for (int a = 0; a < TT_CONV_ALGO_COUNT; a++) {
            const tt_conv_verdict *v = &picks[i].refused[a];
            if (!(v->error > 0)) continue;
            if (!refused) refused = cJSON_AddObjectToObject(e, "refused");
            cJSON *r = cJSON_AddObjectToObject(refused, tt_conv_algo_name((tt_conv_algo)a));
            /* JSON has no infinity: a NaN or infinite result is stored as 1e30 */
            cJSON_AddNumberToObject(r, "error", v->error < 1e30 ? v->error : 1e30);
            cJSON_AddNumberToObject(r, "bound", v->bound);
            cJSON_AddStringToObject(r, "reference", tt_conv_algo_name(v->reference));
        }
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    status = text ? tt_file_save_atomic(path, text, strlen(text))
                  : tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    if (status) {
        fprintf(stderr, "tiletrain: warning: cannot write convolution find-db '%s': %s\n", path,
                tt_status_message(status));
        tt_status_free(status);
    } else {
        stats.db_writes++;
    }
    free(text);
}

/* ---- timing -------------------------------------------------------------- */

/* One run of `algo`, timed to its end, in *ms. */
static tt_status time_one(tt_backend *be, tt_conv_run_fn run, void *ctx, tt_conv_algo algo,
                          double *ms)
{
    double start = (1e3 * tt_seconds());
    stats.runs++;
    TT_TRY(run(ctx, algo));
    TT_TRY(tt_finish(be));
    *ms = (1e3 * tt_seconds()) - start;
    return NULL;
}

#define TIMED_ROUNDS 2
/* A candidate more than PRUNE_FACTOR times slower than the best so far
 * sits out the rest: another run cannot bring it within the noise of the
 * best, and the slow ones are most of a key's timing.  "So far" starts
 * with the runs that verified the candidates, so that one far slower there
 * is never timed at all.  Runs under PRUNE_MIN_MS are not worth saving
 * (and their times are noise). */
#define PRUNE_FACTOR 2.0
#define PRUNE_MIN_MS 5.0

/* The best time of ms[0..count) (1e300: none known); ms <= 0 is unknown. */
static double best_of(const double *ms, int count)
{
    double best = 1e300;
    for (int i = 0; i < count; i++)
        if (ms[i] > 0 && ms[i] < best) best = ms[i];
    return best;
}

static int too_slow(double ms, double best)
{
    return ms > PRUNE_MIN_MS && ms > PRUNE_FACTOR * best;
}

/* ms[i] = the best of TIMED_ROUNDS runs of candidate i, < 0 where it
 * failed (*last_failure: the last failure, or NULL); a candidate whose
 * ms[i] is < 0 on entry is left out, the others start at 1e300.  From
 * round 0 every candidate runs once untimed first (which also builds its
 * kernels; a verified candidate has built them: round 1); then each
 * round times every candidate in turn, so that a slow spell of a shared
 * host falls on all of them alike rather than on whichever was being
 * timed through it (candidate by candidate, noise picked different
 * algorithms for the same layer on different runs).  A candidate
 * too_slow() against the best, by its run while verified (checked_ms,
 * NULL: none) or after a timed round, keeps that time and runs no more. */
static void time_rounds(tt_backend *be, const char *key, const tt_conv_algo *candidates,
                        int count, tt_conv_run_fn run, void *ctx, int first_round,
                        const double *checked_ms, double *ms, tt_status *last_failure)
{
    int out[TT_CONV_ALGO_COUNT] = {0};
    if (checked_ms) {
        double known[TT_CONV_ALGO_COUNT];
        for (int i = 0; i < count; i++) known[i] = ms[i] >= 0 ? checked_ms[i] : 0;
        double best = best_of(known, count);
        for (int i = 0; i < count; i++)
            if (known[i] > 0 && too_slow(known[i], best)) {
                out[i] = 1;
                ms[i] = known[i];
                stats.pruned += TIMED_ROUNDS; /* with a check, every round is timed */
            }
    }
    for (int round = first_round; round <= TIMED_ROUNDS; round++)
        for (int i = 0; i < count; i++) {
            if (ms[i] < 0 || out[i]) continue;
            if (round >= 2 && too_slow(ms[i], best_of(ms, count))) {
                out[i] = 1;
                stats.pruned++;
                continue;
            }
            double took;
            tt_status failed = time_one(be, run, ctx, candidates[i], &took);
            if (failed) {
                fprintf(stderr, "tiletrain: warning: timing %s for %s: %s; leaving it out\n",
                        tt_conv_algo_name(candidates[i]), key, tt_status_message(failed));
                tt_status_free(*last_failure);
                *last_failure = failed;
                ms[i] = -1;
            } else if (round > 0 && took < ms[i]) {
                ms[i] = took;
            }
        }
}

/* Verifies every candidate not yet left out (ms[i] >= 0), checked_ms[i]
 * the time of its run for the check; one that fails to run is left out
 * (*last_failure), one off the reference refused: warned about, recorded
 * in key's entry, left out.  Returns how many were refused, or -1 when
 * the check is undecided (nothing recorded).  Called with the lock held. */
static int verify_all(tt_backend *be, const char *key, const tt_conv_algo *candidates,
                      int count, tt_conv_verify_fn verify, void *ctx, double *ms,
                      double *checked_ms, tt_status *last_failure)
{
    int refused = 0;
    uint64_t device = db_key(be);
    for (int i = 0; i < count; i++) {
        if (ms[i] < 0) continue;
        tt_conv_verdict v = {0};
        stats.verified++;
        tt_status failed = verify(ctx, candidates[i], &v);
        checked_ms[i] = failed ? 0 : v.ms;
        if (failed) {
            fprintf(stderr, "tiletrain: warning: checking %s for %s: %s; leaving it out\n",
                    tt_conv_algo_name(candidates[i]), key, tt_status_message(failed));
            tt_status_free(*last_failure);
            *last_failure = failed;
            ms[i] = -1;
            continue;
        }
        if (v.undecided) return -1;
        if (v.error <= v.bound) continue;
        char path[1024];
        db_path_text(be, path, sizeof path);
        fprintf(stderr,
                "tiletrain: warning: %s: %s is off %s by %.2g of the output's largest value, "
                "more than fp32 rounding allows (%.2g): refused on this device and driver "
                "(kept in %s; delete that file to check it again)\n",
                key, tt_conv_algo_name(candidates[i]),
                v.reference == candidates[i] ? "the host's double"
                                             : tt_conv_algo_name(v.reference),
                v.error, v.bound, path);
        stats.refused++;
        refused++;
        ms[i] = -1;
        pick *p = entry_of(device, key);
        if (p)
            p->refused[candidates[i]] = (tt_conv_verdict){
                .error = v.error > 0 ? v.error : 1e30, .bound = v.bound, .reference = v.reference};
    }
    return refused;
}

/* Adds (device, key) to the keys waiting to be timed, once.  Called with
 * the lock held. */
static void pending_add(uint64_t device, const char *key)
{
    for (size_t i = 0; i < pending_count; i++)
        if (pending[i].device == device && strcmp(pending[i].key, key) == 0) return;
    if (pending_count == pending_capacity) {
        size_t capacity = pending_capacity ? 2 * pending_capacity : 32;
        pick *grown = tt_realloc(pending, capacity * sizeof *grown);
        if (!grown) return; /* the count is a progress figure: short of memory, it lags */
        pending = grown, pending_capacity = capacity;
    }
    pick *p = &pending[pending_count];
    *p = (pick){.device = device, .key = tt_strdup(key), .algo = TT_CONV_ALGO_AUTO, .ms = -1};
    if (p->key) pending_count++;
}

/* Takes (device, key) off the pending keys.  Called with the lock held. */
static void pending_remove(uint64_t device, const char *key)
{
    for (size_t i = 0; i < pending_count; i++)
        if (pending[i].device == device && strcmp(pending[i].key, key) == 0) {
            free(pending[i].key);
            pending[i] = pending[--pending_count];
            return;
        }
}

/* Tells the observer, with the lock held (it must not call back in). */
static void tell(tt_conv_tune_phase phase, const tt_backend *be, const char *key,
                 tt_conv_algo algo, double ms, const tt_conv_algo *candidates,
                 const double *candidate_ms, int count)
{
    if (!observer) return;
    uint64_t device = db_key(be), waiting = 0;
    int listed = 0; /* a key no model sized (a test's own call) counts while it is timed */
    for (size_t i = 0; i < pending_count; i++)
        if (pending[i].device == device) {
            waiting++;
            listed |= strcmp(pending[i].key, key) == 0;
        }
    uint64_t total = tuned_count + waiting + (phase == TT_CONV_TUNE_START && !listed);
    tt_conv_tune_event e = {phase, be->device.name, key, algo, ms, tuned_count, total,
                            be->programs.built_from_source, candidates, candidate_ms, count};
    observer(observer_ctx, &e);
}

void tt_conv_autotune_observe(tt_conv_tune_observer fn, void *ctx)
{
    pthread_mutex_lock(&lock);
    observer = fn, observer_ctx = ctx;
    pthread_mutex_unlock(&lock);
}

tt_status tt_conv_autotune_pick(tt_backend *be, const char *key, const tt_conv_algo *candidates,
                                int count, int timed, tt_conv_run_fn run,
                                tt_conv_verify_fn verify, void *ctx, tt_conv_algo *best)
{
    TT_ASSERT(count >= 1);
    *best = candidates[0];
    if (count == 1) return NULL;
    /* a backend that runs nothing would time every candidate at 0 ms: it
     * takes what is known (so an estimate runs what the device will run)
     * and learns and keeps nothing.  Where the device would time the
     * candidates, it runs each once, so that their scratch (the timing
     * output, temporaries) counts in the estimate's peak as on the device */
    if (be->ops->runs_nothing) {
        if (!tt_conv_autotune_known(be, key, candidates, count, best))
            for (int i = 0; i < count; i++) tt_status_free(run(ctx, candidates[i]));
        return NULL;
    }
    uint64_t device = db_key(be);
    pthread_mutex_lock(&lock);
    tt_status status = NULL, last_failure = NULL;
    pick *known = find_pick(device, key);
    int from_file = 0;
    if (!known && !device_loaded(device)) {
        load_db(be, device);
        known = find_pick(device, key);
        from_file = known != NULL;
    }
    /* an entry naming an algorithm that is no candidate now is re-timed
     * (without the ones it refused) */
    for (int i = 0; known && i < count; i++)
        if (candidates[i] == known->algo) {
            *best = known->algo;
            if (from_file) stats.db_hits++;
            else stats.memory_hits++;
            goto cleanup;
        }
    tell(TT_CONV_TUNE_START, be, key, TT_CONV_ALGO_AUTO, -1, NULL, NULL, 0);
    /* queued work of the caller must not count against the first candidate */
    if ((status = tt_finish(be))) goto cleanup;
    double best_ms = 1e300, ms[TT_CONV_ALGO_COUNT];
    int found = 0, refused = 0;
    TT_ASSERT(count <= TT_CONV_ALGO_COUNT);
    for (int i = 0; i < count; i++)
        ms[i] = known && known->refused[candidates[i]].error > 0 ? -1 : 1e300;
    /* the candidates' kernels built at once, on every core, before any runs */
    tt_backend_prepare_begin(be);
    for (int i = 0; i < count; i++)
        if (ms[i] >= 0) tt_status_free(run(ctx, candidates[i]));
    if ((status = tt_backend_prepare_end(be))) goto cleanup;
    double checked_ms[TT_CONV_ALGO_COUNT] = {0};
    if (verify)
        refused = verify_all(be, key, candidates, count, verify, ctx, ms, checked_ms, &last_failure);
    if (refused < 0) { /* this call is no test: it runs the first candidate, the next decides */
        stats.undecided++;
        *best = candidates[0];
        goto cleanup;
    }
    /* the checked-only candidates wait (ms -2) while a timed one is left */
    int left = 0;
    for (int i = 0; i < count && i < timed; i++) left |= ms[i] >= 0;
    for (int i = timed; left && i < count; i++)
        if (ms[i] >= 0) ms[i] = -2;
    time_rounds(be, key, candidates, count, run, ctx, verify ? 1 : 0,
                verify ? checked_ms : NULL, ms, &last_failure);
    for (int i = 0; i < count; i++)
        if (ms[i] >= 0 && ms[i] < best_ms) best_ms = ms[i], *best = candidates[i], found = 1;
    if (!found) { /* every timed one failed to run: the others, then */
        int waiting = 0;
        for (int i = timed; i < count; i++)
            if (ms[i] == -2) ms[i] = 1e300, waiting = 1;
        if (waiting) {
            time_rounds(be, key, candidates, count, run, ctx, verify ? 1 : 0,
                        verify ? checked_ms : NULL, ms, &last_failure);
            for (int i = 0; i < count; i++)
                if (ms[i] >= 0 && ms[i] < best_ms)
                    best_ms = ms[i], *best = candidates[i], found = 1;
        }
    }
    if (!found) {
        if (refused) write_db(be, device);
        char path[1024];
        db_path_text(be, path, sizeof path);
        status = last_failure
                     ? tt_error_prefix(last_failure, "timing convolution algorithms for %s", key)
                     : tt_error_new(TT_ERR_BACKEND,
                                    "%s: every convolution algorithm this device runs was "
                                    "refused, its result off the reference (the refusals, "
                                    "with their errors, are in '%s'; delete that file to "
                                    "check them again): the device or its driver computes "
                                    "this layer wrong; try another driver or device, or "
                                    "--backend",
                                    key, path);
        last_failure = NULL;
        goto cleanup;
    }
    stats.timed++;
    if (add_pick(device, key, *best, best_ms)) write_db(be, device);
    pending_remove(device, key);
    tuned_count++;
    tell(TT_CONV_TUNE_DONE, be, key, *best, best_ms, candidates, ms, count);
cleanup:
    tt_status_free(last_failure);
    pthread_mutex_unlock(&lock);
    return status;
}

int tt_conv_autotune_known(const tt_backend *be, const char *key, const tt_conv_algo *candidates,
                           int count, tt_conv_algo *out)
{
    uint64_t device = db_key(be);
    pthread_mutex_lock(&lock);
    if (!device_loaded(device)) load_db(be, device);
    pick *known = find_pick(device, key);
    int found = 0;
    for (int i = 0; known && i < count && !found; i++)
        if (candidates[i] == known->algo) *out = known->algo, found = 1;
    pthread_mutex_unlock(&lock);
    return found;
}

int tt_conv_autotune_refused(const tt_backend *be, const char *key, tt_conv_algo algo,
                             tt_conv_verdict *verdict)
{
    uint64_t device = db_key(be);
    pthread_mutex_lock(&lock);
    if (!device_loaded(device)) load_db(be, device);
    pick *known = find_pick(device, key);
    int refused = known && (unsigned)algo < TT_CONV_ALGO_COUNT && known->refused[algo].error > 0;
    if (refused && verdict) *verdict = known->refused[algo];
    pthread_mutex_unlock(&lock);
    return refused;
}

int tt_conv_autotune_narrow(const tt_backend *be, const char *key, tt_conv_algo *candidates,
                            int count)
{
    if (count <= 1) return count;
    if (tt_conv_autotune_known(be, key, candidates, count, &candidates[0])) return 1;
    pthread_mutex_lock(&lock);
    stats.sized_unknown++;
    /* a backend that runs nothing times nothing: the plan's trial fits
     * are no work for the device */
    if (!be->ops->runs_nothing) pending_add(db_key(be), key);
    pthread_mutex_unlock(&lock);
    return count;
}

tt_conv_autotune_stats tt_conv_autotune_stats_get(void)
{
    pthread_mutex_lock(&lock);
    tt_conv_autotune_stats s = stats;
    pthread_mutex_unlock(&lock);
    return s;
}

void tt_conv_autotune_reset(void)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < pick_count; i++) free(picks[i].key);
    for (size_t i = 0; i < pending_count; i++) free(pending[i].key);
    free(picks), free(loaded), free(pending);
    picks = NULL, loaded = NULL, pending = NULL;
    pick_count = pick_capacity = loaded_count = pending_count = pending_capacity = 0;
    tuned_count = 0;
    stats = (tt_conv_autotune_stats){0};
    pthread_mutex_unlock(&lock);
}

void tt_conv_autotune_each_refusal(const tt_backend *be,
                                   void (*fn)(void *ctx, const char *key, tt_conv_algo algo,
                                              const tt_conv_verdict *verdict),
                                   void *ctx)
{
    uint64_t device = db_key(be);
    pthread_mutex_lock(&lock);
    if (!device_loaded(device)) load_db(be, device);
    for (size_t i = 0; i < pick_count; i++) {
        if (picks[i].device != device) continue;
        for (int a = 0; a < TT_CONV_ALGO_COUNT; a++)
            if (picks[i].refused[a].error > 0)
                fn(ctx, picks[i].key, (tt_conv_algo)a, &picks[i].refused[a]);
    }
    pthread_mutex_unlock(&lock);
}
