/* A build without MPI (-DTT_MPI=OFF, or no Open MPI found): a world of one,
 * and an error that says how to get MPI when mpirun started many. */
#include "dist/dist_internal.h"

#include <string.h>

int tt_dist_built_with_mpi(void) { return 0; }

tt_status tt_dist_start(tt_dist *dist)
{
    *dist = tt_dist_single();
    int size = tt_dist_launched_size();
    if (size > 1 || size < 0)
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "this tiletrain was built without MPI, so mpirun's ranks cannot work "
                            "together; install libopenmpi-dev (tools/deps.sh does) and rebuild "
                            "(cmake -DTT_MPI=ON), or run without mpirun");
    return NULL;
}

void tt_dist_finish(tt_dist *dist) { (void)dist; }

int tt_dist_broken(void) { return 0; }

void tt_dist_unbounded(int on) { (void)on; }

tt_status tt_dist_sum_f32(const tt_dist *d, float *v, size_t n) { (void)d, (void)v, (void)n; return NULL; }
tt_status tt_dist_sum_f64(const tt_dist *d, double *v, size_t n) { (void)d, (void)v, (void)n; return NULL; }
tt_status tt_dist_max_f64(const tt_dist *d, double *v, size_t n) { (void)d, (void)v, (void)n; return NULL; }

tt_status tt_dist_gather_u64(const tt_dist *d, const uint64_t *mine, size_t n, uint64_t *all)
{
    (void)d;
    memcpy(all, mine, n * sizeof *mine);
    return NULL;
}

tt_status tt_dist_broadcast(const tt_dist *d, void *bytes, size_t n, int root)
{
    (void)d, (void)bytes, (void)n, (void)root;
    return NULL;
}

void tt_dist_abort(const tt_dist *d, int code) { (void)d, (void)code; }
