/* Shared by dist_mpi.c and dist_off.c. */
#ifndef TT_DIST_DIST_INTERNAL_H
#define TT_DIST_DIST_INTERNAL_H

#include "dist/dist.h"

/* The world size a launcher (mpirun, srun) put in the environment: 0 when
 * none started this process, -1 when one did without saying the size. */
int tt_dist_launched_size(void);

#endif
