/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sriov.h - a PCI physical function's SR-IOV virtual functions as one
 * transaction (docs/design.md §7.5, "SR-IOV"): its VF count set through
 * sriov_numvfs (the kernel refuses to change a non-zero count to another,
 * so through 0), refused while a VF that goes or moves is in use (the
 * binding's in-use checks; force passes them), and the new VFs bound to a
 * driver (vfio-pci for DPDK and VMs), with the PF's
 * sriov_drivers_autoprobe off meanwhile so that no native driver takes
 * them first. A failure at any step puts back the PF's count, its
 * autoprobe and every VF's binding (driver and driver_override).
 *
 * Steps, as the report names them: check, autoprobe (0 written, when a
 * driver is asked for), disable (0 to sriov_numvfs, when a non-zero count
 * changes), enable (the count), bind VF (each new VF: driver_override,
 * unbind, bind, verified by its driver link), autoprobe restored. Writes
 * go through the runner; sriov_numvfs may take DM_SRIOV_TIMEOUT_MS (a
 * driver makes every VF), a VF's binding writes DM_BIND_TIMEOUT_MS.
 * Call without the model lock.
 */
#ifndef DM_SRIOV_H
#define DM_SRIOV_H

#include "core/metrics.h"
#include "core/model.h"

#include <stdbool.h>
#include <stddef.h>

struct dm_binder; /* binding.h */

#define DM_SRIOV_TIMEOUT_MS 30000

struct dm_sriov_request {
	unsigned numvfs;
	const char *driver; /* the VFs' driver; NULL: the kernel's own probe */
	bool force, dry_run, persist;
	bool forget; /* once done, the PF's persisted VFs forgotten */
};

/* Parses what was written to a PF's sriov file: "N [DRIVER] [force]
 * [dry-run] [persist|forget]" (one trailing newline allowed); DRIVER
 * "default" is none. 0 or -EINVAL; @req->driver points into @buf. */
int dm_sriov_parse(char *buf, struct dm_sriov_request *req);

/*
 * Runs @req on the PF @pf. 0 when done (a dry run: when it would be
 * tried); -EOPNOTSUPP for a device that is no SR-IOV PF, -ERANGE for a
 * count above sriov_totalvfs, -EINVAL for a driver the bus does not have
 * (these three change nothing, and keep no report); -EBUSY when a VF is
 * in use; -EINPROGRESS when another request for @pf runs or a write did
 * not return in time (nothing undone: the kernel may finish it); else the
 * failed step's -errno, everything put back. The report is kept for
 * dm_sriov_status().
 */
int dm_sriov_request(struct dm_device *pf, const struct dm_sriov_request *req);

/*
 * At start, after dm_binding_recover() loaded @b's binding journal: each
 * SR-IOV transaction a killed daemon left in it completed (past its
 * verify step, the PF as requested: the autoprobe put back) or rolled
 * back (the count, the autoprobe and each old VF's binding as recorded),
 * logged, kept as the PF's report, and dropped. The number acted on, or
 * -errno. Call without the model lock, before the tree is served.
 */
int dm_sriov_recover(struct dm_binder *b, struct dm_model *m);

/* The state of @pf's VFs (count, total, autoprobe, each VF's driver) and
 * the report of its last request into @buf, as the sriov file has them;
 * its length. @details: root's view (the in-use reasons whole). */
int dm_sriov_status(struct dm_device *pf, bool details, char *buf, size_t size);

/* SR-IOV's state, a binder's (binding.h, dm_binder_sriov()): each PF's
 * last report and the requests' counts. 0 or -ENOMEM; NULL is nothing to
 * free. */
struct dm_sriov_state;
int dm_sriov_state_new(struct dm_sriov_state **ret);
void dm_sriov_state_free(struct dm_sriov_state *s);

/* the metrics file's source (@data the binder): requests (dry runs aside)
 * by result ok, refused, pending, invalid, failed; and VFs bound by them. */
void dm_sriov_metrics(struct dm_metrics *w, void *data);

/* The device file sriov (0644) on each SR-IOV PF (sriov_totalvfs in its
 * sysfs directory): root writes a request, anyone reads the state and the
 * last report. */
extern const struct dm_attribute_group dm_sriov_group;

#endif
