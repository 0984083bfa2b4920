/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * metrics.h - the metrics file: the daemon's counters and the model's gauges in
 * the Prometheus text exposition format 0.0.4 (docs/design.md §6.8).
 *
 * The model holds a list of sources, each a function that writes its
 * families; a read of the metrics file runs the model's own (devices per bus,
 * class and driver, suspended, unbound, with power errors) and then each
 * source's, in the order they were added, into one text. A source writes
 * each family whole: its TYPE and HELP first, then every sample of it.
 *
 * Label values come from devices (bus, class and driver names) and are
 * escaped here, the one place: a backslash, a double quote and a newline
 * as the format says, any other control character and any byte that is
 * not UTF-8 as '?', so that no name can end a sample or add one.
 */
#ifndef DM_METRICS_H
#define DM_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct dm_model;
struct dm_metrics; /* the text being written */

typedef void (*dm_metrics_fn)(struct dm_metrics *w, void *data);

/* Adds @fn(@data) to @m's sources: 0, or -ENOSPC past DM_METRICS_MAX_SOURCES. */
#define DM_METRICS_MAX_SOURCES 16
int dm_model_add_metrics(struct dm_model *m, dm_metrics_fn fn, void *data);
/* Drops every source, once no read runs one (before what they read is
 * freed). */
void dm_model_clear_metrics(struct dm_model *m);
/* The whole text, malloc()ed (never NULL on success): 0 or -ENOMEM. */
int dm_model_show_metrics(struct dm_model *m, char **ret, size_t *ret_len);
/* The length of the last text built (one built when none was yet): the
 * file's size at a stat, which builds nothing (a read, with direct_io,
 * takes the whole current text whatever the size said). 0 or -ENOMEM. */
int dm_model_metrics_size(struct dm_model *m, size_t *ret);
/* How many times the text was built, for the daemon's stats. */
uint64_t dm_model_count_metrics_builds(struct dm_model *m);

/* "# HELP @name @help" and "# TYPE @name @type" (counter, gauge,
 * histogram). */
void dm_metrics_family(struct dm_metrics *w, const char *name, const char *type,
		       const char *help);
/* "@name{l1="v1",...} @v": the labels as name, value pairs ending with a
 * NULL name (none: just the NULL). An integral value is written as one. */
void dm_metrics_sample(struct dm_metrics *w, const char *name, double v, ...);

/*
 * A histogram of durations: counts per bucket (each upper bound in
 * seconds, +Inf implied after the last), their sum and count, updated with
 * relaxed atomics (one writer or many; a reader may see an observation in
 * the count before the sum, as a scrape of any Prometheus client may).
 */
#define DM_HISTOGRAM_BUCKETS 10
struct dm_histogram {
	atomic_uint_fast64_t buckets[DM_HISTOGRAM_BUCKETS + 1]; /* the last: +Inf */
	atomic_uint_fast64_t sum_usec;
	atomic_uint_fast64_t count;
};
/* The bounds every dm_histogram has, in seconds: 1 ms to 120 s. */
extern const double dm_histogram_bounds[DM_HISTOGRAM_BUCKETS];
void dm_histogram_observe(struct dm_histogram *h, uint64_t usec);
/* The family's samples for @h: @name_bucket (cumulative, with "le"),
 * @name_sum and @name_count, with the labels (pairs, NULL-ended) on each. */
void dm_metrics_histogram(struct dm_metrics *w, const char *name, struct dm_histogram *h, ...);

#endif
