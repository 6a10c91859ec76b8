/* The monotonic clock; see clock.h. */
#include "core/clock.h"

#include <time.h>

double tt_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
