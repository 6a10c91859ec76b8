/*
 * The run's log, one JSON object a line: the start (device and
 * configuration), each step, each validation (metrics and the gallery's
 * pictures), and the memory at the end.  report.html is drawn from it.
 */
#ifndef TT_TRAIN_LOG_H
#define TT_TRAIN_LOG_H

#include "train/trainer.h"

/* Whether the run keeps a log anywhere (a file, stdout, the caller's sink). */
int tt_trainer_logging(const tt_trainer *t);
/* One line of the log, printf-style; nothing when there is no log. */
void tt_trainer_log(tt_trainer *t, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* NULL, or a copy of the error of the first line that could not be
 * appended to OUT/train.jsonl (a full disk): the run stops with it, the
 * file ending with its last whole line, and --resume goes on from the last
 * checkpoint. */
tt_status tt_trainer_log_status(const tt_trainer *t);
/* One line of the log: `object` printed on one line, then deleted (NULL:
 * nothing, as when building it ran out of memory). */
struct cJSON;
void tt_trainer_log_json(tt_trainer *t, struct cJSON *object);
/* The first line: the device and the run's configuration. */
void tt_train_log_start(tt_trainer *trainer);
/* The augmentation: its spec and the gallery's pictures (augment/crop<k>.png). */
void tt_train_log_augment(tt_trainer *trainer, int gallery_count);
/* The post-processing search of this validation (trainer->postprocess):
 * per class the threshold, minimum size and competition Dice with them and
 * with the defaults; the means over the classes searched. */
void tt_train_log_postprocess(tt_trainer *trainer, double mean, double default_mean,
                              double seconds);
/* One optimizer step. */
void tt_train_log_step(tt_trainer *trainer, const tt_step_report *report);
/* One validation's metrics, and the first gallery_count pictures (0: none);
 * with --ema the raw weights' mean Dice beside (raw: their metrics, else NULL). */
void tt_train_log_validation(tt_trainer *trainer, const tt_metrics *metrics, int gallery_count,
                             const tt_metrics *raw);

#endif
