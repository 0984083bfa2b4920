/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * binding.h - moving a device between kernel drivers as one transaction
 * (docs/design.md §7.5): check, set driver_override, unbind the current
 * driver, probe, verify the driver link. A step that fails undoes the
 * ones before it in reverse order (driver_override restored before the
 * old driver is bound again) and the report names the step and its errno;
 * a step the kernel does not answer in time is reported as pending and not
 * undone (what the kernel does when its write returns comes as its uevent).
 * While the transaction runs the device is offered to no driver
 * (dm_device_set_binding()).
 *
 * Every sysfs access goes through the runner (timed, logged, bounded). The
 * report of each device's last request is kept for its binding file. Call without the model lock.
 */
#ifndef DM_BINDING_H
#define DM_BINDING_H

#include "core/metrics.h"
#include "core/model.h"

#include <stdbool.h>

/* The time each sysfs write of a transaction may take, in milliseconds. */
#define DM_BIND_TIMEOUT_MS 5000

enum dm_bind_action {
	DM_BIND_TO, /* bind to the driver named */
	DM_BIND_DEFAULT, /* to the kernel's own choice: override cleared, probed */
	DM_BIND_NONE, /* unbind, and bind nothing */
};

struct dm_bind_request {
	enum dm_bind_action action;
	const char *driver; /* DM_BIND_TO's */
	bool force; /* proceed past the vetoes (logged) */
	bool dry_run; /* the plan and the vetoes, nothing written */
	bool persist; /* once done, recorded (persist.h); default forgets */
	bool group; /* vfio-pci: the IOMMU group's companions in the way move too */
	/* set by the group move for each member's own transaction */
	bool companions_moved; /* the group's viability is being made */
	const char *preface; /* said first in the report */
};

/* The steps, as the report names them. */
enum dm_bind_step {
	DM_STEP_CHECK,
	DM_STEP_OVERRIDE,
	DM_STEP_UNBIND,
	DM_STEP_PROBE,
	DM_STEP_VERIFY,
};

/*
 * Runs @req on @dev. 0 when done (or, dry, when it would be tried);
 * -EBUSY when vetoed (the reasons in the report), -EINVAL for a driver the
 * bus does not have (a dry run goes on past each refusal, its report naming
 * every one, and returns the first's errno, as the real request would), -EOPNOTSUPP for a device of no bus with drivers,
 * -EINPROGRESS when another request for @dev runs or a step is pending,
 * else the -errno of the failed step (everything undone). The report is
 * kept for dm_binding_status().
 */
int dm_bind_device(struct dm_device *dev, const struct dm_bind_request *req);
/* the metrics file's source (a dm_metrics_fn; @data unused): the requests made
 * (dry runs aside) by result: ok, refused, pending, invalid, failed. */
void dm_binding_metrics(struct dm_metrics *w, void *data);

/* A device's kernel binding as it stood, to be put back: its driver
 * ("" none) and whether driver_override named one. */
struct dm_binding_saved {
	char driver[64];
	bool had_override;
};

/* @dev's binding now, into @ret (read from sysfs). */
void dm_binding_save(struct dm_device *dev, struct dm_binding_saved *ret);

/* Puts back the binding @saved as one transaction: the old driver named
 * when an override chose it, else the kernel's default, or no driver;
 * @force passes the vetoes. As dm_bind_device(). */
int dm_binding_restore(struct dm_device *dev, const struct dm_binding_saved *saved, bool force);

/* A request of a kernel driver's bind file (@driver) or unbind file (NULL),
 * as dm_model_set_bind_request() takes it: the same transaction. */
int dm_binding_request(struct dm_device *dev, const char *driver, void *data);

/* At start, before serving: the binding journal (journal.h) a killed
 * daemon left, acted on. Each transaction that had reached its verify step
 * (or was pending) and left the device as requested is completed; every
 * other one is rolled back as a failed step is (driver_override restored,
 * the old driver bound again, or none); a group move whose device is not
 * bound as requested has its members put back. Each outcome is logged and
 * is the device's report ("recovered at start: ..."); each entry is dropped
 * once acted on. The number acted on, or -errno with why in @why: -EPERM
 * for a journal anyone but root could change, -ESTALE for one of another
 * boot, -EINVAL for a file that is no journal; nothing in those is acted
 * on (the file is left). */
int dm_binding_recover(struct dm_model *m, char *why, size_t size);

/* The devices (by name) and kernel drivers never unbound without force
 * (driverfsd.conf's Protect=, space-separated; NULL: none). Copied. */
int dm_binding_set_protected(const char *names);
/* Whether @name (a device's or a kernel driver's) is one Protect= names. */
bool dm_binding_is_protected(const char *name);

/* Parses what was written to a device's binding file: "DRIVER", "default" or
 * "none", then optionally "force", "dry-run", "persist" and/or "group",
 * separated by spaces
 * (one trailing newline allowed). 0 or -EINVAL; @req->driver points into
 * @buf, which is modified. */
int dm_bind_parse(char *buf, struct dm_bind_request *req);

/* The report of @dev's last request into @buf (NUL-terminated), "" when
 * there was none; returns its length. Its number in *ret_seq: the reports
 * @dev had so far (0: none), which a request that changed nothing (bad
 * input: no such driver; a dry run's is kept) does not move. With
 * @details (root's view) the in-use reasons name the processes (pid and
 * command) and mount points; without, they say "details for root only". */
int dm_binding_status(struct dm_device *dev, bool details, char *buf, size_t size,
		      unsigned long *ret_seq);

/* The device file binding (0644): root writes a request, anyone reads the
 * report of the last one, the in-use details in it to a reader whose file
 * root opened alone (dm_attr_reader()); on every device of a bus with
 * drivers. */
extern const struct dm_attribute_group dm_binding_group;

#endif
