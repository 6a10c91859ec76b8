/* What both builds share: the world of one and whether mpirun started us. */
#include "dist/dist_internal.h"

#include <stdlib.h>

tt_dist tt_dist_single(void)
{
    return (tt_dist){.rank = 0, .size = 1, .local_rank = 0, .local_size = 1, .mpi = 0};
}

int tt_dist_launched_size(void)
{
    const char *names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) return atoi(v) > 0 ? atoi(v) : 1;
    }
    /* PMIx sets a rank but not always a size */
    return getenv("PMIX_RANK") ? -1 : 0;
}
