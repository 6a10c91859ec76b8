/* The training report: OUT/report.html from OUT/train.jsonl (report.c). */
#ifndef TT_TRAIN_REPORT_H
#define TT_TRAIN_REPORT_H

#include "tiletrain.h"

/* Writes out_dir/report.html (atomically) from out_dir/train.jsonl; a
 * missing log, or one that cannot be read to its end (EIO, TT_FAULT=read),
 * is TT_ERR_IO naming it, and no page is written then.  A gallery image
 * that cannot be read is captioned missing. */
tt_status tt_report_write(const char *out_dir);

#endif
