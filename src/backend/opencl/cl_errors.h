/* OpenCL and CLBlast error codes by name: CL_OUT_OF_RESOURCES, not -5. */
#ifndef TT_CL_ERRORS_H
#define TT_CL_ERRORS_H

/* A static string; "CL_UNKNOWN_ERROR" for codes nobody named. */
const char *tt_cl_error_name(int cl_error);

#endif
