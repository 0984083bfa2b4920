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
 * Binding's state is a binder's (struct dm_binder, below): the sysfs root
 * its paths are under, the kernel's side of its writes, the journal, each
 * device's last report, Protect= and the requests' counts. Persistence is built on
 * it (persist.h registers an observer and calls dm_bind_device()); the
 * binder never calls persistence. Every sysfs write goes through the
 * binder's kernel (the runner's: timed, logged, bounded, unless a test
 * plays the kernel). The report of each device's last request is kept for
 * its binding file. Call without the model lock.
 */
#ifndef DM_BINDING_H
#define DM_BINDING_H

#include "core/metrics.h"
#include "core/model.h"

#include <stdbool.h>

/* ---- the binder ---- */
struct dm_binder;
struct dm_journal; /* journal.h */
struct dm_sriov_state; /* sriov.h */
struct dm_modules; /* modules.h */

/* The kernel's side of a transaction: @write makes one sysfs write (as
 * dm_run_write(): 0 or -errno, -ETIMEDOUT past @timeout_ms). The daemon's
 * is the runner's; a unit test plays the kernel through it, acting on
 * each write in a temporary directory laid out as sysfs. */
struct dm_binder_kernel {
	int (*write)(void *data, const char *label, const char *path, const char *value,
		     int timeout_ms);
	void *data;
};

/* Who is told of what binding did (persistence, persist.h): @persisted
 * when a request made with "persist" succeeded (@driver as
 * dm_persist_set() takes it: a driver, "none", or NULL to forget); the
 * SR-IOV requests' (sriov.h) @sriov_persisted (@driver NULL: the kernel's
 * own probe) and @sriov_forgotten. Each 0 or -errno, why in @msg. A NULL
 * member (or no observer): the request says it cannot be persisted. */
struct dm_binder_observer {
	int (*persisted)(void *data, struct dm_device *dev, const char *bus, const char *name,
			 const char *driver, char *msg, size_t size);
	int (*sriov_persisted)(void *data, struct dm_device *pf, const char *name, int numvfs,
			       const char *driver, char *msg, size_t size);
	int (*sriov_forgotten)(void *data, const char *name, char *msg, size_t size);
	void *data;
};

/* A binder whose sysfs is under @sysfs_root (NULL: "/sys"; a test's
 * temporary directory), its transactions journaled in the file @journal
 * (NULL: DM_BIND_JOURNAL_FILE; journal.h), its kernel the runner's, no
 * observer, nothing protected. 0 or -errno. */
int dm_binder_new(const char *sysfs_root, const char *journal, struct dm_binder **ret);
/* Frees @b (no request may run: at exit, after persist's and needs'
 * workers stopped). NULL is nothing. */
void dm_binder_free(struct dm_binder *b);
/* @k (copied; NULL: the runner's) makes @b's writes. Before any request. */
void dm_binder_set_kernel(struct dm_binder *b, const struct dm_binder_kernel *k);
/* @o (copied; NULL: none) is told of what @b did. */
void dm_binder_set_observer(struct dm_binder *b, const struct dm_binder_observer *o);
/* @b's observer now into @ret (all NULL: none). */
void dm_binder_get_observer(struct dm_binder *b, struct dm_binder_observer *ret);
/* @b's sysfs root, "/sys" or a test's. */
const char *dm_binder_sysfs(const struct dm_binder *b);
/* @b's SR-IOV state (sriov.h): each PF's last report, the requests'
 * counts. */
struct dm_sriov_state *dm_binder_sriov(struct dm_binder *b);
/* @b's lookups of kernel modules (modules.h) made in @dir (NULL:
 * /lib/modules/<release>; --modules-dir, a test's), the answers kept so
 * far dropped. Before any request. 0 or -ENOMEM. */
int dm_binder_set_modules_dir(struct dm_binder *b, const char *dir);
/* @b's lookups of kernel modules: its libkmod context and answers kept. */
struct dm_modules *dm_binder_modules(struct dm_binder *b);
/* Whether the kernel has drivers on the bus @name (<sysfs>/bus/@name/drivers
 * under @b's root), asked of sysfs once per bus (the buses are few and
 * stay). Any lock may be held. */
bool dm_binder_bus_has_drivers(struct dm_binder *b, const char *name);
/* Where @b's in-use checks read mounts, swaps, routes and processes
 * (NULL: "/proc"; --proc-root, a test's directory). Copied; before any
 * request. 0 or -ENOMEM. */
int dm_binder_set_proc_root(struct dm_binder *b, const char *dir);
/* @b's proc root, "/proc" or another. */
const char *dm_binder_proc(const struct dm_binder *b);
/* What uses @dev's subtree (inuse.h's dm_inuse_check()), read under @b's
 * sysfs and proc roots. */
int dm_binder_inuse_check(struct dm_binder *b, struct dm_device *dev, char *buf, size_t size,
			  char *pub, size_t pub_size);
/* One sysfs write through @b's kernel (the runner's, or a test's), as
 * dm_run_write(): the SR-IOV transactions' (sriov.h) too. */
int dm_binder_write(struct dm_binder *b, const char *label, const char *path, const char *value,
		    int timeout_ms);
/* @b's binding journal (journal.h), for the SR-IOV transactions' too. */
struct dm_journal *dm_binder_journal(struct dm_binder *b);
/* The binder that runs @dev's model's binding requests (the data of its
 * dm_model_set_bind_request(), set with dm_binding_request()), NULL when
 * none. For the device files and the modules built on binding. */
struct dm_binder *dm_binder_of(struct dm_device *dev);
/* The same with the model lock held (an attribute's is_visible). */
struct dm_binder *dm_binder_of_locked(struct dm_device *dev);

/* An SR-IOV request's (sriov.h) "persist": @numvfs VFs on @driver (NULL:
 * the kernel's probe) recorded for the PF @pf named @name, or with @numvfs
 * < 0 forgotten, by @b's observer (@b NULL: none). 0 or -errno, why in
 * @msg. */
int dm_binder_persist_sriov(struct dm_binder *b, struct dm_device *pf, const char *name,
			    int numvfs, const char *driver, char *msg, size_t size);

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
	bool persist; /* once done, told to the binder's observer (persistence,
		       * persist.h: recorded; default forgets) */
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
int dm_bind_device(struct dm_binder *b, struct dm_device *dev,
		   const struct dm_bind_request *req);
/* the metrics file's source (a dm_metrics_fn; @data the binder): the requests made
 * (dry runs aside) by result: ok, refused, pending, invalid, failed. */
void dm_binding_metrics(struct dm_metrics *w, void *data);

/* A device's kernel binding as it stood, to be put back: its driver
 * ("" none) and whether driver_override named one. */
struct dm_binding_saved {
	char driver[64];
	bool had_override;
};

/* @dev's binding now, into @ret (read from @b's sysfs). */
void dm_binding_save(struct dm_binder *b, struct dm_device *dev, struct dm_binding_saved *ret);

/* Puts back the binding @saved as one transaction: the old driver named
 * when an override chose it, else the kernel's default, or no driver;
 * @force passes the vetoes. As dm_bind_device(). */
int dm_binding_restore(struct dm_binder *b, struct dm_device *dev,
		       const struct dm_binding_saved *saved, bool force);

/* A request of a kernel driver's bind file (@driver) or unbind file (NULL),
 * as dm_model_set_bind_request() takes it (@data: the binder): the same
 * transaction. */
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
int dm_binding_recover(struct dm_binder *b, struct dm_model *m, char *why, size_t size);

/* The devices (by name) and kernel drivers @b never unbinds without force
 * (driverfsd.conf's Protect=, space-separated; NULL: none). Copied. */
int dm_binder_set_protected(struct dm_binder *b, const char *names);
/* Whether @name (a device's or a kernel driver's) is one @b's Protect=
 * names (@b NULL: none is). */
bool dm_binder_is_protected(struct dm_binder *b, const char *name);

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
int dm_binding_status(struct dm_binder *b, struct dm_device *dev, bool details, char *buf,
		      size_t size, unsigned long *ret_seq);

/* The device file binding (0644): root writes a request, anyone reads the
 * report of the last one, the in-use details in it to a reader whose file
 * root opened alone (dm_attr_reader()); on every device of a bus with
 * drivers. */
extern const struct dm_attribute_group dm_binding_group;

#endif
