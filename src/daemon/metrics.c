/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * metrics.c - the metrics file's sources (docs/design.md §6.8): the daemon's
 * own families (its version, start time and reloads) and, after them,
 * each part's that runs: the PM engine, binding requests, the hotplug
 * monitor and helper, the FUSE session. Registered once the parts are
 * made, before the monitor runs; dropped first at teardown.
 */
#include "daemon.h"
#include "nfd.h"

#include "buses/pci-metrics.h"
#include "core/metrics.h"
#include "drivers/binding.h"
#include "drivers/sriov.h"
#include "fuse/fs.h"
#include "hotplug/helper.h"
#include "hotplug/monitor.h"
#include "pm/pm.h"
#include "util/log.h"
#include "version.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The daemon's resident memory (/proc/self/statm's second field), in bytes;
 * -1 when unreadable. */
static double resident_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "re");
	if (!f)
		return -1;
	unsigned long size, resident;
	int n = fscanf(f, "%lu %lu", &size, &resident);
	fclose(f);
	long page = sysconf(_SC_PAGESIZE);
	return n == 2 && page > 0 ? (double)resident * (double)page : -1;
}

/* The allocator's figures. A sanitizer build replaces malloc with its own
 * allocator, whose mallinfo2() is all zeros: ask that allocator instead. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DM_SANITIZER_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DM_SANITIZER_HEAP 1
#endif
#endif
#ifdef DM_SANITIZER_HEAP
#include <sanitizer/allocator_interface.h>
#endif

void daemon_heap(size_t *in_use, size_t *free)
{
#ifdef DM_SANITIZER_HEAP
	*in_use = __sanitizer_get_current_allocated_bytes();
	*free = __sanitizer_get_free_bytes();
#else
	struct mallinfo2 mi = mallinfo2();
	*in_use = mi.uordblks + mi.hblkhd;
	*free = mi.fordblks;
#endif
}

/* Memory over days: what the heap holds for the daemon and what it keeps
 * free (a free that grows is fragmentation; an in_use that grows, a leak
 * or a cache), beside the resident size. */
static void memory_metrics(struct dm_metrics *w)
{
	size_t in_use, free;
	daemon_heap(&in_use, &free);
	dm_metrics_family(w, "driverfsd_heap_bytes", "gauge",
			  "The malloc heap: bytes in use (every arena and mapped block), "
			  "and free bytes it keeps.");
	dm_metrics_sample(w, "driverfsd_heap_bytes", (double)in_use, "state", "in_use", NULL);
	dm_metrics_sample(w, "driverfsd_heap_bytes", (double)free, "state", "free", NULL);
	double rss = resident_bytes();
	if (rss >= 0) {
		dm_metrics_family(w, "process_resident_memory_bytes", "gauge",
				  "Resident memory size in bytes.");
		dm_metrics_sample(w, "process_resident_memory_bytes", rss, NULL);
	}
}

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
	memory_metrics(w);
}

void daemon_register_metrics(struct daemon *d)
{
	struct {
		dm_metrics_fn fn;
		void *data;
	} sources[] = {
		{ daemon_metrics, d },
		{ d->pm ? dm_pm_metrics : NULL, d->pm },
		{ d->binder ? dm_binding_metrics : NULL, d->binder },
		{ d->o->snapshot || !d->binder ? NULL : dm_sriov_metrics, d->binder },
		{ d->monitor ? dm_monitor_metrics : NULL, d->monitor },
		{ d->helper ? dm_helper_metrics : NULL, d->helper },
		{ d->fs ? dm_fs_metrics : NULL, d->fs },
		/* per-device PCI families, from sysfs: a live machine's */
		{ d->o->snapshot ? NULL : dm_pci_metrics, d->model },
		{ d->cfg.nfd_file && !d->o->snapshot ? daemon_nfd_metrics : NULL, NULL },
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
