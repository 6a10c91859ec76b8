/* OpenCL and CLBlast error codes by name (CL_OUT_OF_RESOURCES, not -5), and
 * the OpenCL backend's error constructor. */
#ifndef TT_CL_ERRORS_H
#define TT_CL_ERRORS_H

#include "core/status.h"

/* A static string; "CL_UNKNOWN_ERROR" for codes nobody named. */
const char *tt_cl_error_name(int cl_error);

/* "OP failed: CL_NAME (-N)": the operation by its words, the error by name;
 * a TT_ERR_BACKEND of backend "opencl" keeping the code, except that the
 * allocation failures (-4, -5, -6) are TT_ERR_OUT_OF_MEMORY. */
tt_status tt_error_cl(int cl_error, const char *fmt, ...) TT_PRINTF(2, 3);

#endif
