/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * metrics.c - the metrics file's sources (docs/design.md §6.8): the daemon's
 * own families (its version, start time and reloads) and, after them,
 * each part's that runs: the PM engine, binding requests, the hotplug
 * monitor and helper, the FUSE session. Registered once the parts are
 * made, before the monitor runs; dropped first at teardown.
 */
#include "daemon.h"

#include "core/metrics.h"
#include "drivers/binding.h"
#include "fuse/fs.h"
#include "hotplug/helper.h"
#include "hotplug/monitor.h"
#include "log.h"
#include "pm/pm.h"
#include "version.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static void daemon_metrics(struct dm_metrics *w, void *data)
{
	struct daemon *d = data;
	dm_metrics_family(w, "driverfsd_build_info", "gauge",
			  "Always 1: the version of the daemon serving the mount.");
	dm_metrics_sample(w, "driverfsd_build_info", 1, "version", DRIVERFSD_VERSION, NULL);
	dm_metrics_family(w, "driverfsd_start_time_seconds", "gauge",
			  "When the daemon started serving, in seconds since the Epoch.");
	dm_metrics_sample(w, "driverfsd_start_time_seconds", (double)d->started, NULL);
	dm_metrics_family(w, "driverfsd_config_reloads_total", "counter",
			  "Reloads of the configuration and drivers.d (SIGHUP), by result.");
	dm_metrics_sample(w, "driverfsd_config_reloads_total",
			  (double)atomic_load_explicit(&d->reloads[0], memory_order_relaxed),
			  "result", "ok", NULL);
	dm_metrics_sample(w, "driverfsd_config_reloads_total",
			  (double)atomic_load_explicit(&d->reloads[1], memory_order_relaxed),
			  "result", "failed", NULL);
}

void daemon_register_metrics(struct daemon *d)
{
	struct {
		dm_metrics_fn fn;
		void *data;
	} sources[] = {
		{ daemon_metrics, d },
		{ d->pm ? dm_pm_metrics : NULL, d->pm },
		{ d->o->snapshot ? NULL : dm_binding_metrics, NULL },
		{ d->monitor ? dm_monitor_metrics : NULL, d->monitor },
		{ d->helper ? dm_helper_metrics : NULL, d->helper },
		{ d->fs ? dm_fs_metrics : NULL, d->fs },
	};
	d->started = time(NULL);
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++) {
		int r = sources[i].fn ? dm_model_add_metrics(d->model, sources[i].fn,
							      sources[i].data)
				      : 0;
		if (r < 0)
			log_warn("the metrics file: a source left out: %s", strerror(-r));
	}
}
