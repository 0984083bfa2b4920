/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the binding transaction (src/drivers/binding.c, issue 33
 * item 6), without LD_PRELOAD: a binder whose sysfs root is a temporary
 * directory laid out as sysfs (a PCI function at 0000:00:02.0 bound to
 * nvme, its IOMMU group, the bus's drivers nvme and vfio-pci), and a small
 * "kernel" of the test's own as the binder's kernel: it makes each write
 * act as the kernel's would (driver_override kept, unbind and bind move
 * the driver link, drivers_probe binds the override's driver or the
 * default), logs every write, and fails the one it is told to with the
 * errno it is told.
 *
 * A bind that succeeds (its writes in order, the journal left empty); a
 * probe the driver refuses with EINVAL, rolled back (driver_override
 * restored, the old driver bound again, the report naming the step, the
 * kernel's errno and each undo); an unbind that fails, rolled back; a dry
 * run that names every reason it would be refused and writes nothing; a
 * refusal for Protect= (the device, then its driver) and force past it; a
 * request made with "persist" tells the binder's observer, the binder
 * itself knowing nothing of persistence; the journal names the device
 * during each write and not after; a transaction a killed daemon left at
 * its unbind step is rolled back at the next start, one at verify with
 * the device as requested completed; persistence built on the binder
 * records a "persist" request with the device's identity, and applies a
 * record at start to the device it names alone; an SR-IOV transaction
 * through the same binder and kernel makes and binds VFs, and a bind that
 * fails is rolled back (VFs gone, count and autoprobe as they were).
 * The in-use checks against the fake sysfs and a fake proc root (the
 * binder's, dm_binder_set_proc_root()): a disk of the subtree mounted (a
 * mountinfo line), a dm holder above it (holders/), an interface with a
 * route (net/route), a /dev node held open (a PID/fd link), the IOMMU
 * group's VFIO node held while bound to vfio-pci, an NVMe multipath
 * namespace of the subtree's controller mounted: each refuses an unbind
 * with EBUSY and its reason (root's words and others'), force proceeds; a
 * namespace another controller still reaches is no reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drivers/binding.h"
#include "drivers/inuse.h"
#include "drivers/journal.h"
#include "drivers/modules.h"
#include "drivers/persist.h"
#include "drivers/sriov.h"
#include "tree-util.h"

#define DEVNAME "0000:00:02.0"
#define DEVPATH "/devices/pci0000:00/" DEVNAME
/* a report's most (DM_BINDING_REPORT_MAX) */
#define REPORT_SIZE 8192

/* ---- the test's kernel ---- */

struct kernel {
	char root[256]; /* the sysfs root (a short temporary directory) */
	char log[4096]; /* every write: "FILE=VALUE\n", FILE relative to the root */
	const char *fail_suffix; /* the write whose path ends so fails */
	int fail_errno;
	bool probe_after_unbind; /* someone probes the device as soon as it is unbound */
	const char *journal; /* the binding journal's file */
	int journaled; /* the writes made while it named the device */
};

/* Whether the journal's file names the device now. */
static bool journal_names_device(const char *path)
{
	char text[16384];
	return test_read_file(path, text, sizeof(text)) && strstr(text, DEVPATH) != NULL;
}

/* The sysfs directory of the PCI device @name (through its link in
 * bus/pci/devices, as the kernel has it). */
static void dev_dir(const struct kernel *k, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%s/bus/pci/devices/%s", k->root, name);
}

/* @name's driver link to @drv (NULL: none). */
static void dev_set_driver(struct kernel *k, const char *name, const char *drv)
{
	char link[PATH_MAX], target[PATH_MAX];
	dev_dir(k, name, link, sizeof(link) - 8);
	strcat(link, "/driver");
	(void)unlink(link);
	if (drv) {
		snprintf(target, sizeof(target), "%s/bus/pci/drivers/%s", k->root, drv);
		assert_int_equal(symlink(target, link), 0);
	}
}

static void dev_driver(struct kernel *k, const char *name, char *buf, size_t size)
{
	char link[PATH_MAX], target[PATH_MAX];
	dev_dir(k, name, link, sizeof(link) - 8);
	strcat(link, "/driver");
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	buf[0] = '\0';
	if (n > 0) {
		target[n] = '\0';
		snprintf(buf, size, "%s", strrchr(target, '/') + 1);
	}
}

/* A small sysfs file of the device @name (its trailing newline cut). */
static void dev_read(struct kernel *k, const char *name, const char *file, char *buf, size_t size)
{
	char path[PATH_MAX];
	dev_dir(k, name, path, sizeof(path) - 64);
	strcat(path, "/");
	strcat(path, file);
	assert_true(test_read_file(path, buf, size));
	buf[strcspn(buf, "\n")] = '\0';
}

static void dev_write(struct kernel *k, const char *name, const char *file, const char *value)
{
	char dir[PATH_MAX];
	dev_dir(k, name, dir, sizeof(dir));
	test_write_file(dir, file, value);
}

static void set_driver(struct kernel *k, const char *drv)
{
	dev_set_driver(k, DEVNAME, drv);
}

static void get_driver(struct kernel *k, char *buf, size_t size)
{
	dev_driver(k, DEVNAME, buf, size);
}

static void get_override(struct kernel *k, char *buf, size_t size)
{
	dev_read(k, DEVNAME, "driver_override", buf, size);
}

/* The SR-IOV PF, its native driver, and its VFs' names and driver. */
#define PFNAME "0000:00:03.0"
#define VF_FMT "0000:00:03.%d"
#define PF_DRIVER "ixgbe"
#define VF_DRIVER "ixgbevf"

/* A PCI device @name at devices/pci0000:00/@name, linked from
 * bus/pci/devices, driver_override "(null)". */
static void make_device(const char *root, const char *name)
{
	char dir[PATH_MAX], link[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/devices/pci0000:00/%s", root, name);
	assert_true(mkdir(dir, 0755) == 0);
	snprintf(link, sizeof(link), "%s/bus/pci/devices/%s", root, name);
	assert_int_equal(symlink(dir, link), 0);
	test_write_file(dir, "driver_override", "(null)\n");
}

/* The PF's sriov_numvfs written: @n VFs made (bound to their native
 * driver when sriov_drivers_autoprobe is 1), or with 0 taken away; a
 * count changed from one not 0 is EBUSY, as the kernel answers. */
static int kernel_numvfs(struct kernel *k, const char *pf, const char *value)
{
	char buf[16], name[32], link[PATH_MAX + 32], dir[PATH_MAX];
	dev_read(k, pf, "sriov_numvfs", buf, sizeof(buf));
	int now = atoi(buf), n = atoi(value);
	if (now && n)
		return -EBUSY;
	dev_dir(k, pf, dir, sizeof(dir));
	for (int i = 0; i < now && !n; i++) {
		snprintf(name, sizeof(name), VF_FMT, i + 1);
		snprintf(link, sizeof(link), "%s/virtfn%d", dir, i);
		assert_int_equal(unlink(link), 0);
		snprintf(link, sizeof(link), "%s/bus/pci/devices/%s", k->root, name);
		assert_int_equal(unlink(link), 0);
		snprintf(link, sizeof(link), "%s/devices/pci0000:00/%s", k->root, name);
		test_rm_rf(link);
	}
	dev_read(k, pf, "sriov_drivers_autoprobe", buf, sizeof(buf));
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), VF_FMT, i + 1);
		make_device(k->root, name);
		char target[PATH_MAX];
		snprintf(link, sizeof(link), "%s/virtfn%d", dir, i);
		snprintf(target, sizeof(target), "%s/devices/pci0000:00/%s", k->root, name);
		assert_int_equal(symlink(target, link), 0);
		if (strcmp(buf, "1") == 0)
			dev_set_driver(k, name, VF_DRIVER);
	}
	dev_write(k, pf, "sriov_numvfs", value);
	return 0;
}

/* One sysfs write as the kernel takes it. */
static int kernel_write(void *data, const char *label, const char *path, const char *value,
			int timeout_ms)
{
	(void)label;
	(void)timeout_ms;
	struct kernel *k = data;
	size_t rl = strlen(k->root);
	assert_true(strncmp(path, k->root, rl) == 0 && path[rl] == '/');
	const char *rel = path + rl + 1;
	k->journaled += journal_names_device(k->journal);
	size_t len = strlen(k->log);
	snprintf(k->log + len, sizeof(k->log) - len, "%s=%s\n", rel,
		 strcmp(value, "\n") == 0 ? "(clear)" : value);
	size_t pl = strlen(path);
	if (k->fail_suffix && pl >= strlen(k->fail_suffix) &&
	    strcmp(path + pl - strlen(k->fail_suffix), k->fail_suffix) == 0)
		return -k->fail_errno;

	char now[64], ovr[64], drv[64];
	const char *base = strrchr(rel, '/') + 1;
	if (strcmp(base, "driver_override") == 0 || strcmp(base, "sriov_drivers_autoprobe") == 0) {
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		fputs(strcmp(value, "\n") == 0 ? "(null)\n" : value, f);
		fclose(f);
		return 0;
	}
	if (strcmp(base, "sriov_numvfs") == 0) {
		char pf[64];
		assert_int_equal(sscanf(rel, "devices/pci0000:00/%63[^/]/", pf), 1);
		return kernel_numvfs(k, pf, value);
	}
	/* a device's name, to the bus's probe or a driver's bind or unbind */
	dev_driver(k, value, now, sizeof(now));
	dev_read(k, value, "driver_override", ovr, sizeof(ovr));
	if (strcmp(rel, "bus/pci/drivers_probe") == 0) {
		if (now[0])
			return 0;
		dev_set_driver(k, value,
			       strcmp(ovr, "(null)") != 0    ? ovr
			       : strcmp(value, DEVNAME) == 0 ? "nvme"
							     : VF_DRIVER);
		return 0;
	}
	char file[16];
	if (sscanf(rel, "bus/pci/drivers/%63[^/]/%15s", drv, file) == 2) {
		if (strcmp(file, "unbind") == 0) {
			if (strcmp(now, drv) != 0)
				return -ENODEV;
			dev_set_driver(k, value, NULL);
			/* (a udev rule's drivers_probe, another tool) */
			if (k->probe_after_unbind && strcmp(ovr, "(null)") != 0)
				dev_set_driver(k, value, ovr);
			return 0;
		}
		if (strcmp(file, "bind") == 0) {
			if (now[0])
				return -EBUSY;
			/* the override names the one driver that may take it */
			if (strcmp(ovr, "(null)") != 0 && strcmp(ovr, drv) != 0)
				return -ENODEV;
			dev_set_driver(k, value, drv);
			return 0;
		}
	}
	fail_msg("a write the kernel has no file for: %s", rel);
	return -ENOENT;
}

/* ---- the fixture: the tree, the model, the binder ---- */

struct fixture {
	struct kernel k;
	struct dm_model *m;
	struct dm_device *dev, *pf; /* an NVMe drive; an SR-IOV PF */
	struct dm_binder *b;
	char journal[PATH_MAX + 16], proc[PATH_MAX + 16];
	/* what the observer was told */
	int persisted;
	char persisted_driver[64];
};

static void mkdirs(const char *root, const char *rel)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		(void)mkdir(path, 0755);
		*p = '/';
	}
	assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static void link_to(const char *root, const char *rel, const char *target_rel)
{
	char link[PATH_MAX], target[PATH_MAX];
	snprintf(link, sizeof(link), "%s/%s", root, rel);
	snprintf(target, sizeof(target), "%s/%s", root, target_rel);
	assert_int_equal(symlink(target, link), 0);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->k.root, sizeof(f->k.root), "/tmp/test-binder-XXXXXX");
	assert_non_null(mkdtemp(f->k.root));
	const char *r = f->k.root;
	mkdirs(r, "devices/pci0000:00");
	mkdirs(r, "bus/pci/devices");
	mkdirs(r, "bus/pci/drivers/nvme");
	mkdirs(r, "bus/pci/drivers/vfio-pci");
	mkdirs(r, "bus/pci/drivers/" PF_DRIVER);
	mkdirs(r, "bus/pci/drivers/" VF_DRIVER);
	make_device(r, DEVNAME);
	make_device(r, PFNAME);
	mkdirs(r, "kernel/iommu_groups/7/devices");
	mkdirs(r, "proc");
	mkdirs(r, "modules");
	test_write_file(r, "devices/pci0000:00/" PFNAME "/sriov_totalvfs", "4\n");
	test_write_file(r, "devices/pci0000:00/" PFNAME "/sriov_numvfs", "0\n");
	test_write_file(r, "devices/pci0000:00/" PFNAME "/sriov_drivers_autoprobe", "1\n");
	test_write_file(r, "bus/pci/drivers_probe", "");
	static const char *const files[] = { "nvme/bind", "nvme/unbind", "vfio-pci/bind",
					     "vfio-pci/unbind" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char rel[64];
		snprintf(rel, sizeof(rel), "bus/pci/drivers/%s", files[i]);
		test_write_file(r, rel, "");
	}
	link_to(r, "devices/pci0000:00/" DEVNAME "/iommu_group", "kernel/iommu_groups/7");
	link_to(r, "kernel/iommu_groups/7/devices/" DEVNAME, "devices/pci0000:00/" DEVNAME);
	set_driver(&f->k, "nvme");
	dev_set_driver(&f->k, PFNAME, PF_DRIVER);

	/* nothing of the live machine: no /proc to scan (the binder's proc
	 * root, below), no module index */
	snprintf(f->proc, sizeof(f->proc), "%s/proc", r);
	char dir[PATH_MAX + 16];
	snprintf(dir, sizeof(dir), "%s/modules", r);
	snprintf(f->journal, sizeof(f->journal), "%s/journal", r);
	f->k.journal = f->journal;

	assert_int_equal(dm_model_new(&f->m), 0);
	struct dm_bus *pci;
	assert_int_equal(dm_bus_get(f->m, "pci", NULL, &pci), 0);
	assert_int_equal(dm_device_new(f->m, DEVNAME, &f->dev), 0);
	dm_device_set_bus(f->dev, pci);
	assert_int_equal(dm_device_set_devpath(f->dev, DEVPATH), 0);
	/* its identity (persist.h), and the kernel's driver as the model has it */
	static const char *const ids[] = {
		"vendor", "0x8086", "device", "0x0953",
		"subsystem_vendor", "0x8086", "subsystem_device", "0x3702",
	};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i += 2)
		assert_int_equal(dm_device_set_value(f->dev, ids[i], ids[i + 1]), 0);
	assert_int_equal(dm_device_set_kernel_driver(f->dev, "nvme"), 0);
	assert_int_equal(dm_device_add(f->dev, NULL), 0);
	assert_int_equal(dm_device_new(f->m, PFNAME, &f->pf), 0);
	dm_device_set_bus(f->pf, pci);
	assert_int_equal(dm_device_set_devpath(f->pf, "/devices/pci0000:00/" PFNAME), 0);
	assert_int_equal(dm_device_add(f->pf, NULL), 0);

	assert_int_equal(dm_binder_new(r, f->journal, &f->b), 0);
	assert_int_equal(dm_binder_set_proc_root(f->b, f->proc), 0);
	assert_int_equal(dm_binder_set_modules_dir(f->b, dir), 0);
	const struct dm_binder_kernel k = { .write = kernel_write, .data = &f->k };
	dm_binder_set_kernel(f->b, &k);
	dm_model_set_bind_request(f->m, dm_binding_request, f->b);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	dm_device_unref(f->dev);
	dm_device_unref(f->pf);
	dm_model_free(f->m);
	dm_binder_free(f->b);
	test_rm_rf(f->k.root);
	free(f);
	return 0;
}

static void report_of(struct fixture *f, char *buf, size_t size)
{
	unsigned long seq;
	dm_binding_status(f->b, f->dev, true, buf, size, &seq);
}

/* The journal holds no transaction: each ended (done or rolled back). */
static void assert_journal_empty(struct fixture *f)
{
	struct dm_journal_txn *txns;
	struct dm_journal_group *groups;
	size_t nt = 0, ng = 0;
	char why[256];
	int r = dm_journal_load(dm_binder_journal(f->b), &txns, &nt, &groups, &ng, why, sizeof(why));
	if (r == -EPERM)
		return; /* a file of another user than root: not read (not root) */
	assert_true(r >= 0 || r == -ENOENT);
	if (r >= 0) {
		free(txns);
		free(groups);
	}
	assert_int_equal(nt, 0);
	assert_int_equal(ng, 0);
}

static void assert_state(struct fixture *f, const char *drv, const char *ovr)
{
	char now[64];
	get_driver(&f->k, now, sizeof(now));
	assert_string_equal(now, drv);
	get_override(&f->k, now, sizeof(now));
	assert_string_equal(now, ovr);
}

static void test_bind_done(void **state)
{
	struct fixture *f = *state;
	struct dm_bind_request req = { .action = DM_BIND_TO, .driver = "vfio-pci" };
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), 0);
	assert_state(f, "vfio-pci", "vfio-pci");
	/* the transaction's writes, in order */
	assert_string_equal(f->k.log, "devices/pci0000:00/" DEVNAME "/driver_override=vfio-pci\n"
				      "bus/pci/drivers/nvme/unbind=" DEVNAME "\n"
				      "bus/pci/drivers/vfio-pci/bind=" DEVNAME "\n");
	char rep[REPORT_SIZE];
	report_of(f, rep, sizeof(rep));
	assert_non_null(strstr(rep, "device " DEVNAME ", bound to nvme, driver_override (none)\n"));
	assert_non_null(strstr(rep, "plan: driver_override <- vfio-pci\n"
				    "plan: unbind from nvme\n"
				    "plan: bind to vfio-pci\n"));
	assert_non_null(strstr(rep, "done: vfio-pci\n"));
	/* recorded before the first write, dropped once done */
	assert_int_equal(f->k.journaled, 3);
	assert_false(journal_names_device(f->journal));
	assert_journal_empty(f);

	/* and back to the kernel's default: override cleared, probed */
	f->k.log[0] = '\0';
	req = (struct dm_bind_request){ .action = DM_BIND_DEFAULT };
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), 0);
	assert_state(f, "nvme", "(null)");
	assert_string_equal(f->k.log, "devices/pci0000:00/" DEVNAME "/driver_override=(clear)\n"
				      "bus/pci/drivers/vfio-pci/unbind=" DEVNAME "\n"
				      "bus/pci/drivers_probe=" DEVNAME "\n");
}

/* The device probed by someone else between the unbind and the bind, onto
 * the override the transaction set: the kernel answers the bind EBUSY, and
 * the device is where it was asked to go. Done, not rolled back. */
static void test_bound_meanwhile_to_the_target(void **state)
{
	struct fixture *f = *state;
	f->k.probe_after_unbind = true;
	struct dm_bind_request req = { .action = DM_BIND_TO, .driver = "vfio-pci" };
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), 0);
	assert_state(f, "vfio-pci", "vfio-pci");
	char rep[REPORT_SIZE];
	report_of(f, rep, sizeof(rep));
	assert_non_null(strstr(rep, "bind: vfio-pci had it already\n"));
	assert_non_null(strstr(rep, "done: vfio-pci\n"));
	assert_null(strstr(rep, "rollback"));
	assert_journal_empty(f);
}

/* A step that fails, and what the rollback writes and says: everything
 * undone, in reverse (driver_override first, then the old driver bound
 * again), the device exactly as before the request. */
static const struct rollback_case {
	const char *fail_suffix;
	int fail_errno;
	const char *writes; /* after the override's and the unbind's */
	const char *report;
} rollback_cases[] = {
	/* the probe refused by the driver with EINVAL (vfio-pci does, for a
	 * header type it does not take): the kernel's errno, not a bad
	 * request */
	{ "/drivers/vfio-pci/bind", EINVAL,
	  "bus/pci/drivers/vfio-pci/bind=" DEVNAME "\n"
	  "devices/pci0000:00/" DEVNAME "/driver_override=(clear)\n"
	  "bus/pci/drivers/nvme/bind=" DEVNAME "\n",
	  "failed: probe: Invalid argument (EINVAL)\n"
	  "rollback: driver_override restored to (none): ok\n"
	  "rollback: bind to nvme again: ok\n"
	  "after rollback: nvme\n" },
	/* the unbind fails: nvme, still bound, is not bound again */
	{ "/drivers/nvme/unbind", EIO,
	  "devices/pci0000:00/" DEVNAME "/driver_override=(clear)\n",
	  "failed: unbind: Input/output error (EIO)\n"
	  "rollback: driver_override restored to (none): ok\n"
	  "after rollback: nvme\n" },
};

static void test_step_fails_rolled_back(void **state)
{
	struct fixture *f = *state;
	for (size_t i = 0; i < sizeof(rollback_cases) / sizeof(rollback_cases[0]); i++) {
		const struct rollback_case *c = &rollback_cases[i];
		f->k.log[0] = '\0';
		f->k.fail_suffix = c->fail_suffix;
		f->k.fail_errno = c->fail_errno;
		struct dm_bind_request req = { .action = DM_BIND_TO, .driver = "vfio-pci" };
		assert_int_equal(dm_bind_device(f->b, f->dev, &req), -c->fail_errno);
		assert_state(f, "nvme", "(null)");
		char want[1024];
		snprintf(want, sizeof(want),
			 "devices/pci0000:00/" DEVNAME "/driver_override=vfio-pci\n"
			 "bus/pci/drivers/nvme/unbind=" DEVNAME "\n%s",
			 c->writes);
		assert_string_equal(f->k.log, want);
		char rep[REPORT_SIZE];
		report_of(f, rep, sizeof(rep));
		assert_non_null(strstr(rep, c->report));
		/* not taken for a request naming no driver of the bus */
		assert_null(strstr(rep, "no driver"));
		assert_journal_empty(f);
	}
}

/* A dry run is the plan read before the real thing: every reason it would
 * be refused (a driver the bus does not have, a deauthorized device, the
 * device protected), and nothing written. */
static void test_dry_run_every_reason(void **state)
{
	struct fixture *f = *state;
	test_write_file(f->k.root, "devices/pci0000:00/" DEVNAME "/authorized", "0\n");
	assert_int_equal(dm_binder_set_protected(f->b, "other " DEVNAME), 0);
	struct dm_bind_request req = { .action = DM_BIND_TO, .driver = "uio_pci_generic",
				       .dry_run = true };
	/* the first refusal's errno, as the real request returns */
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), -EINVAL);
	assert_string_equal(f->k.log, "");
	assert_state(f, "nvme", "(null)");
	char rep[REPORT_SIZE];
	report_of(f, rep, sizeof(rep));
	assert_non_null(strstr(rep, "request: bind to uio_pci_generic, dry run\n"));
	assert_non_null(strstr(rep, "refused: the bus has no driver uio_pci_generic"));
	assert_non_null(strstr(rep, "refused: the device is deauthorized"));
	assert_non_null(strstr(rep, "in use: " DEVNAME " is protected (driverfsd.conf, Protect=)\n"));
	assert_non_null(strstr(rep, "plan: bind to uio_pci_generic\n"));
	assert_non_null(strstr(rep, "dry run: nothing written; refused: the bus has no driver "
				    "uio_pci_generic, the device is deauthorized, in use (force "
				    "passes in use alone)\n"));
	/* the real request stops at the first */
	req.dry_run = false;
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), -EINVAL);
	assert_string_equal(f->k.log, "");
}

/* Protect=: the device by name, or its driver, refuses an unbind without
 * force; nothing written. Force passes. */
static void test_protect_refusal(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(dm_binder_set_protected(f->b, "nvme"), 0);
	struct dm_bind_request req = { .action = DM_BIND_TO, .driver = "vfio-pci" };
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), -EBUSY);
	assert_string_equal(f->k.log, "");
	assert_state(f, "nvme", "(null)");
	char rep[REPORT_SIZE];
	report_of(f, rep, sizeof(rep));
	assert_non_null(strstr(rep, "in use: its driver nvme is protected (driverfsd.conf, "
				    "Protect=)\n"));
	assert_non_null(strstr(rep, "refused: in use (force proceeds)\n"));

	/* the device's own name; an unbind too */
	assert_int_equal(dm_binder_set_protected(f->b, DEVNAME), 0);
	req = (struct dm_bind_request){ .action = DM_BIND_NONE };
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), -EBUSY);
	assert_string_equal(f->k.log, "");

	/* a name that only contains it is not it */
	assert_int_equal(dm_binder_set_protected(f->b, "nvme0 0000:00:02.00"), 0);
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), 0);
	assert_state(f, "", "(null)");

	/* force passes */
	assert_int_equal(dm_binder_set_protected(f->b, "vfio-pci nvme"), 0);
	req = (struct dm_bind_request){ .action = DM_BIND_TO, .driver = "nvme" };
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), 0);
	req = (struct dm_bind_request){ .action = DM_BIND_TO, .driver = "vfio-pci", .force = true };
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), 0);
	report_of(f, rep, sizeof(rep));
	assert_non_null(strstr(rep, "forced: proceeding although in use\n"));
	assert_state(f, "vfio-pci", "vfio-pci");
}

static int observe(void *data, struct dm_device *dev, const char *bus, const char *name,
		   const char *driver, char *msg, size_t size)
{
	(void)msg;
	(void)size;
	struct fixture *f = data;
	assert_ptr_equal(dev, f->dev);
	assert_string_equal(bus, "pci");
	assert_string_equal(name, DEVNAME);
	f->persisted++;
	snprintf(f->persisted_driver, sizeof(f->persisted_driver), "%s", driver ? driver : "(forget)");
	return 0;
}

/* "persist" is the observer's: told once a request succeeded, never for a
 * dry run or a failure; without one, the request says so. */
static void test_persist_observer(void **state)
{
	struct fixture *f = *state;
	struct dm_bind_request req = { .action = DM_BIND_NONE, .persist = true };
	/* no observer: done, but not persisted (-EOPNOTSUPP) */
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), -EOPNOTSUPP);
	char rep[REPORT_SIZE];
	report_of(f, rep, sizeof(rep));
	assert_non_null(strstr(rep, "persisted: no (no state file)\n"));
	assert_state(f, "", "(null)");

	const struct dm_binder_observer o = { .persisted = observe, .data = f };
	dm_binder_set_observer(f->b, &o);
	req = (struct dm_bind_request){ .action = DM_BIND_TO, .driver = "vfio-pci", .persist = true,
					.dry_run = true };
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), 0);
	assert_int_equal(f->persisted, 0);
	f->k.fail_suffix = "/drivers/vfio-pci/bind";
	f->k.fail_errno = ENXIO;
	req.dry_run = false;
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), -ENXIO);
	assert_int_equal(f->persisted, 0);
	f->k.fail_suffix = NULL;
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), 0);
	assert_int_equal(f->persisted, 1);
	assert_string_equal(f->persisted_driver, "vfio-pci");
	report_of(f, rep, sizeof(rep));
	assert_non_null(strstr(rep, "persisted: yes\n"));
	req = (struct dm_bind_request){ .action = DM_BIND_DEFAULT, .persist = true };
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), 0);
	assert_int_equal(f->persisted, 2);
	assert_string_equal(f->persisted_driver, "(forget)");
	assert_state(f, "nvme", "(null)");
}

/* A daemon killed after its unbind step (override set, no driver bound):
 * the next one's recovery rolls the transaction back, and the report says
 * so. */
static void test_recover_rolls_back(void **state)
{
	struct fixture *f = *state;
	struct dm_journal_txn j = {
		.devpath = DEVPATH, .bus = "pci", .name = DEVNAME, .old_driver = "nvme",
		.has_override = true, .action = DM_BIND_TO, .driver = "vfio-pci",
		.set_override = true, .step = DM_STEP_UNBIND,
	};
	char why[256];
	assert_int_equal(dm_journal_put_txn(dm_binder_journal(f->b), &j, why, sizeof(why)), 0);
	test_write_file(f->k.root, "devices/pci0000:00/" DEVNAME "/driver_override", "vfio-pci\n");
	set_driver(&f->k, NULL);
	assert_int_equal(dm_binding_recover(f->b, f->m, why, sizeof(why)), 1);
	assert_state(f, "nvme", "(null)");
	assert_string_equal(f->k.log, "devices/pci0000:00/" DEVNAME "/driver_override=(clear)\n"
				      "bus/pci/drivers/nvme/bind=" DEVNAME "\n");
	char rep[REPORT_SIZE];
	report_of(f, rep, sizeof(rep));
	assert_non_null(strstr(rep, "recovered at start: rolled back after the daemon died at step "
				    "unbind\n"));
	assert_non_null(strstr(rep, "after rollback: nvme\n"));
	assert_false(journal_names_device(f->journal));

	/* one that had reached verify with the device as requested: completed */
	j.step = DM_STEP_VERIFY;
	assert_int_equal(dm_journal_put_txn(dm_binder_journal(f->b), &j, why, sizeof(why)), 0);
	test_write_file(f->k.root, "devices/pci0000:00/" DEVNAME "/driver_override", "vfio-pci\n");
	set_driver(&f->k, "vfio-pci");
	f->k.log[0] = '\0';
	assert_int_equal(dm_binding_recover(f->b, f->m, why, sizeof(why)), 1);
	assert_string_equal(f->k.log, "");
	assert_state(f, "vfio-pci", "vfio-pci");
	report_of(f, rep, sizeof(rep));
	assert_non_null(strstr(rep, "recovered at start: completed: the daemon died at step verify"));
}

/* Persistence on top of the binder (persist.h): a request made with
 * "persist" is recorded by the observer it registered, with the device's
 * identity, and forgotten by "default persist"; at start a record is
 * applied through the binder, to the device it names alone. */
static void test_persistence_on_top(void **state)
{
	struct fixture *f = *state;
	if (geteuid() != 0)
		skip(); /* the state file is read only when root's */
	char path[PATH_MAX], text[1024];
	snprintf(path, sizeof(path), "%s/bindings", f->k.root);
	assert_int_equal(chmod(f->k.root, 0755), 0);
	struct dm_persist *ps;
	assert_int_equal(dm_persist_new(f->b, path, &ps), 0);
	struct dm_bind_request req = { .action = DM_BIND_TO, .driver = "vfio-pci", .persist = true };
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), 0);
	assert_true(test_read_file(path, text, sizeof(text)));
	assert_non_null(strstr(text, "\npci " DEVNAME " vfio-pci pci:8086:0953:8086:3702\n"));
	req = (struct dm_bind_request){ .action = DM_BIND_DEFAULT, .persist = true };
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), 0);
	assert_true(test_read_file(path, text, sizeof(text)));
	assert_null(strstr(text, DEVNAME));
	dm_persist_free(ps);
	assert_state(f, "nvme", "(null)");

	/* at start: the record applied through the binder's kernel */
	test_write_file(f->k.root, "bindings", "pci " DEVNAME " vfio-pci pci:8086:0953:8086:3702\n");
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(dm_persist_new(f->b, path, &ps), 0);
	assert_int_equal(dm_persist_load(ps), 0);
	f->k.log[0] = '\0';
	dm_persist_apply_all(ps, f->m);
	assert_state(f, "vfio-pci", "vfio-pci");
	assert_string_equal(f->k.log, "devices/pci0000:00/" DEVNAME "/driver_override=vfio-pci\n"
				      "bus/pci/drivers/nvme/unbind=" DEVNAME "\n"
				      "bus/pci/drivers/vfio-pci/bind=" DEVNAME "\n");
	dm_persist_free(ps);

	/* another device's record at its place: not applied */
	req = (struct dm_bind_request){ .action = DM_BIND_DEFAULT };
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), 0);
	test_write_file(f->k.root, "bindings", "pci " DEVNAME " vfio-pci pci:8086:15bc:1028:0869\n");
	assert_int_equal(dm_persist_new(f->b, path, &ps), 0);
	assert_int_equal(dm_persist_load(ps), 0);
	f->k.log[0] = '\0';
	dm_persist_apply_all(ps, f->m);
	assert_string_equal(f->k.log, "");
	assert_state(f, "nvme", "(null)");
	dm_persist_free(ps);
}

/* The PF's report (its sriov file's, as root reads it). */
static void sriov_report_of(struct fixture *f, char *buf, size_t size)
{
	assert_true(dm_sriov_status(f->pf, true, buf, size) > 0);
}

/* An SR-IOV transaction through the same binder and kernel (sriov.h): two
 * VFs made with the autoprobe off and bound to vfio-pci, then a count
 * whose first VF's bind fails rolled back (the VFs gone, the autoprobe
 * and the count as they were). */
static void test_sriov(void **state)
{
	struct fixture *f = *state;
	struct dm_sriov_request req = { .numvfs = 2, .driver = "vfio-pci" };
	assert_int_equal(dm_sriov_request(f->pf, &req), 0);
	char now[64], rep[REPORT_SIZE];
	dev_read(&f->k, PFNAME, "sriov_numvfs", now, sizeof(now));
	assert_string_equal(now, "2");
	dev_read(&f->k, PFNAME, "sriov_drivers_autoprobe", now, sizeof(now));
	assert_string_equal(now, "1");
	dev_driver(&f->k, "0000:00:03.1", now, sizeof(now));
	assert_string_equal(now, "vfio-pci");
	dev_driver(&f->k, "0000:00:03.2", now, sizeof(now));
	assert_string_equal(now, "vfio-pci");
	assert_string_equal(f->k.log,
			    "devices/pci0000:00/" PFNAME "/sriov_drivers_autoprobe=0\n"
			    "devices/pci0000:00/" PFNAME "/sriov_numvfs=2\n"
			    "bus/pci/devices/0000:00:03.1/driver_override=vfio-pci\n"
			    "bus/pci/drivers/vfio-pci/bind=0000:00:03.1\n"
			    "bus/pci/devices/0000:00:03.2/driver_override=vfio-pci\n"
			    "bus/pci/drivers/vfio-pci/bind=0000:00:03.2\n"
			    "devices/pci0000:00/" PFNAME "/sriov_drivers_autoprobe=1\n");
	sriov_report_of(f, rep, sizeof(rep));
	assert_non_null(strstr(rep, "done: 2 VFs: 0000:00:03.1=vfio-pci 0000:00:03.2=vfio-pci\n"));

	/* back to none, then 3 whose first VF's bind fails */
	req = (struct dm_sriov_request){ .numvfs = 0 };
	assert_int_equal(dm_sriov_request(f->pf, &req), 0);
	f->k.log[0] = '\0';
	f->k.fail_suffix = "/drivers/vfio-pci/bind";
	f->k.fail_errno = EINVAL;
	req = (struct dm_sriov_request){ .numvfs = 3, .driver = "vfio-pci" };
	assert_int_equal(dm_sriov_request(f->pf, &req), -EINVAL);
	dev_read(&f->k, PFNAME, "sriov_numvfs", now, sizeof(now));
	assert_string_equal(now, "0");
	dev_read(&f->k, PFNAME, "sriov_drivers_autoprobe", now, sizeof(now));
	assert_string_equal(now, "1");
	assert_string_equal(f->k.log,
			    "devices/pci0000:00/" PFNAME "/sriov_drivers_autoprobe=0\n"
			    "devices/pci0000:00/" PFNAME "/sriov_numvfs=3\n"
			    "bus/pci/devices/0000:00:03.1/driver_override=vfio-pci\n"
			    "bus/pci/drivers/vfio-pci/bind=0000:00:03.1\n"
			    /* the rollback: the new VFs gone, the autoprobe back */
			    "devices/pci0000:00/" PFNAME "/sriov_numvfs=0\n"
			    "devices/pci0000:00/" PFNAME "/sriov_drivers_autoprobe=1\n");
	sriov_report_of(f, rep, sizeof(rep));
	assert_non_null(strstr(rep, "rollback: sriov_numvfs <- 0: ok\n"));
	assert_non_null(strstr(rep, "rollback: sriov_drivers_autoprobe <- 1: ok\n"));
	assert_non_null(strstr(rep, "after rollback: 0 VFs\n"));
}

/* SR-IOV's reports and counts are its binder's: another binder on the
 * same tree (another daemon's) has none of the first's, and its own once
 * it made a request, counted once in its metrics. */
static void test_sriov_state_per_binder(void **state)
{
	struct fixture *f = *state;
	struct dm_sriov_request req = { .numvfs = 0 };
	assert_int_equal(dm_sriov_request(f->pf, &req), 0);
	char rep[REPORT_SIZE];
	sriov_report_of(f, rep, sizeof(rep));
	assert_non_null(strstr(rep, "last request (#1):\n"));

	struct dm_binder *b2;
	assert_int_equal(dm_binder_new(f->k.root, f->journal, &b2), 0);
	const struct dm_binder_kernel k = { .write = kernel_write, .data = &f->k };
	dm_binder_set_kernel(b2, &k);
	dm_model_set_bind_request(f->m, dm_binding_request, b2);
	sriov_report_of(f, rep, sizeof(rep));
	assert_null(strstr(rep, "last request"));
	assert_int_equal(dm_sriov_request(f->pf, &req), 0);
	sriov_report_of(f, rep, sizeof(rep));
	assert_non_null(strstr(rep, "last request (#1):\n"));
	dm_model_set_bind_request(f->m, dm_binding_request, f->b);

	/* the counts too: the metrics of each binder count its own request */
	assert_int_equal(dm_model_add_metrics(f->m, dm_sriov_metrics, b2), 0);
	char *text;
	size_t len;
	assert_int_equal(dm_model_show_metrics(f->m, &text, &len), 0);
	assert_non_null(strstr(text, "driverfsd_sriov_requests_total{result=\"ok\"} 1\n"));
	free(text);
	dm_binder_free(b2);
}

/* Whether a bus has drivers is asked of the binder's own sysfs root: a
 * binder whose root has no bus/pci/drivers says pci has none, whatever
 * another binder found. */
static void test_bus_drivers_per_binder(void **state)
{
	struct fixture *f = *state;
	assert_true(dm_binder_bus_has_drivers(f->b, "pci"));
	assert_false(dm_binder_bus_has_drivers(f->b, "usb"));
	char root[PATH_MAX];
	snprintf(root, sizeof(root), "%s/other", f->k.root);
	mkdirs(f->k.root, "other/bus/pci/devices");
	mkdirs(f->k.root, "other/bus/usb/drivers");
	struct dm_binder *b2;
	assert_int_equal(dm_binder_new(root, f->journal, &b2), 0);
	assert_false(dm_binder_bus_has_drivers(b2, "pci"));
	assert_true(dm_binder_bus_has_drivers(b2, "usb"));
	assert_true(dm_binder_bus_has_drivers(f->b, "pci"));
	dm_binder_free(b2);
}

/* ---- in use: the checks against the fake sysfs and a fake proc root ---- */

/* A device @name of class @cls below @parent in the model, its "dev"
 * (@devt) and "devnode" (@node) when given. */
static void add_child(struct fixture *f, struct dm_device *parent, const char *name,
		      const char *cls, const char *devt, const char *node)
{
	struct dm_device *d;
	struct dm_class *c;
	assert_int_equal(dm_device_new(f->m, name, &d), 0);
	assert_int_equal(dm_class_get(f->m, cls, &c), 0);
	dm_device_set_class(d, c, NULL);
	if (devt)
		assert_int_equal(dm_device_set_value(d, "dev", devt), 0);
	if (node)
		assert_int_equal(dm_device_set_value(d, "devnode", node), 0);
	assert_int_equal(dm_device_add(d, parent), 0);
	dm_device_unref(d);
}

/* The drive's subtree: its controller nvme0, a disk sda (8:0) and an
 * interface eth0 below it. */
static void add_subtree(struct fixture *f)
{
	add_child(f, f->dev, "nvme0", "nvme", NULL, NULL);
	add_child(f, f->dev, "sda", "block", "8:0", "/dev/sda");
	add_child(f, f->dev, "eth0", "net", NULL, NULL);
	mkdirs(f->k.root, "class/block/sda/holders");
	test_write_file(f->k.root, "class/block/sda/dev", "8:0\n");
}

/* The file @dir/@name of the fake proc root, holding @text. */
static void proc_write(struct fixture *f, const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX + 64];
	mkdirs(f->proc, dir);
	snprintf(path, sizeof(path), "%s/%s", f->proc, dir);
	test_write_file(path, name, text);
}

/* A process @pid of the fake proc root, named @comm, holding @target open
 * as its fd 3. */
static void proc_holds(struct fixture *f, const char *pid, const char *comm, const char *target)
{
	char rel[64], link[PATH_MAX + 64];
	snprintf(rel, sizeof(rel), "%s/fd", pid);
	mkdirs(f->proc, rel);
	snprintf(rel, sizeof(rel), "%s/comm", pid);
	test_write_file(f->proc, rel, comm);
	snprintf(link, sizeof(link), "%s/%s/fd/3", f->proc, pid);
	assert_int_equal(symlink(target, link), 0);
}

/* An unbind is refused with EBUSY naming @reason (root's report; others
 * read @pub_reason, NULL: the same), nothing written; with force it
 * proceeds. */
static void assert_in_use(struct fixture *f, const char *reason, const char *pub_reason)
{
	struct dm_bind_request req = { .action = DM_BIND_NONE };
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), -EBUSY);
	assert_string_equal(f->k.log, "");
	char rep[REPORT_SIZE];
	report_of(f, rep, sizeof(rep));
	if (!strstr(rep, reason))
		fail_msg("no \"%s\" in the report:\n%s", reason, rep);
	assert_non_null(strstr(rep, "refused: in use (force proceeds)\n"));
	unsigned long seq;
	dm_binding_status(f->b, f->dev, false, rep, sizeof(rep), &seq);
	if (!strstr(rep, pub_reason ? pub_reason : reason))
		fail_msg("no \"%s\" in others' report:\n%s", pub_reason ? pub_reason : reason,
			 rep);

	req.force = true;
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), 0);
	report_of(f, rep, sizeof(rep));
	assert_non_null(strstr(rep, "forced: proceeding although in use\n"));
	assert_non_null(strstr(rep, reason));
	char now[64];
	get_driver(&f->k, now, sizeof(now));
	assert_string_equal(now, "");
}

/* Nothing in use: the unbind proceeds without force (what each case
 * below adds is what refuses it). */
static void test_inuse_none(void **state)
{
	struct fixture *f = *state;
	add_subtree(f);
	proc_write(f, "self", "mountinfo",
			"25 1 8:1 / / rw - ext4 /dev/sdb1 rw\n");
	struct dm_bind_request req = { .action = DM_BIND_NONE };
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), 0);
}

static void test_inuse_mounted(void **state)
{
	struct fixture *f = *state;
	add_subtree(f);
	proc_write(f, "self", "mountinfo",
			"25 1 8:1 / / rw - ext4 /dev/sdb1 rw\n"
			"36 25 8:0 / /mnt/data rw,relatime - ext4 /dev/sda rw\n");
	assert_in_use(f, "in use: sda is mounted at /mnt/data\n",
		      "in use: sda is mounted (where: details for root only)\n");
}

static void test_inuse_holder(void **state)
{
	struct fixture *f = *state;
	add_subtree(f);
	mkdirs(f->k.root, "class/block/sda/holders/dm-0");
	mkdirs(f->k.root, "class/block/dm-0/dm");
	test_write_file(f->k.root, "class/block/dm-0/dev", "253:0\n");
	test_write_file(f->k.root, "class/block/dm-0/dm/name", "vg-data\n");
	assert_in_use(f, "in use: dm-0 (vg-data, holding sda)\n", NULL);
}

static void test_inuse_route(void **state)
{
	struct fixture *f = *state;
	add_subtree(f);
	proc_write(f, "net", "route",
			"Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask"
			"\t\tMTU\tWindow\tIRTT\n"
			"eth0\t0001A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n");
	assert_in_use(f, "in use: interface eth0 carries a route to 192.168.1.0/24\n", NULL);
}

static void test_inuse_open_node(void **state)
{
	struct fixture *f = *state;
	add_subtree(f);
	proc_holds(f, "4242", "fsck\n", "/dev/sda");
	assert_in_use(f, "in use: /dev/sda is open in process 4242 (fsck)\n",
		      "in use: /dev/sda is open in a process (which: details for root "
		      "only)\n");
}

/* The drive bound to vfio-pci: its IOMMU group's node (group 7, the
 * fixture's) held by a VM. */
static void test_inuse_vfio(void **state)
{
	struct fixture *f = *state;
	set_driver(&f->k, "vfio-pci");
	proc_holds(f, "77", "qemu-system-x86\n", "/dev/vfio/7");
	assert_in_use(f,
		      "in use: /dev/vfio/7 (VFIO, " DEVNAME " on vfio-pci) is open in process 77 "
		      "(qemu-system-x86)\n",
		      "in use: /dev/vfio/7 (VFIO, " DEVNAME " on vfio-pci) is open in a process "
		      "(which: details for root only)\n");
}

/* The subtree, and subsystem nvme-subsys0 of the controller nvme0 (and,
 * with @other, of nvme1, not the subtree's) with its namespace nvme0n1
 * (259:0), mounted at /srv. */
static void nvme_subsystem(struct fixture *f, bool other)
{
	add_subtree(f);
	const char *dir = "class/nvme-subsystem/nvme-subsys0";
	char rel[128];
	snprintf(rel, sizeof(rel), "%s/nvme0n1", dir);
	mkdirs(f->k.root, rel);
	snprintf(rel, sizeof(rel), "%s/nvme0n1/dev", dir);
	test_write_file(f->k.root, rel, "259:0\n");
	snprintf(rel, sizeof(rel), "%s/nvme0", dir);
	mkdirs(f->k.root, rel);
	if (other) {
		snprintf(rel, sizeof(rel), "%s/nvme1", dir);
		mkdirs(f->k.root, rel);
	}
	proc_write(f, "self", "mountinfo", "40 25 259:0 / /srv rw - xfs /dev/nvme0n1 rw\n");
}

/* NVMe multipath: the namespace is in the subsystem, not below the
 * controller; the subsystem's one controller is the subtree's, so its
 * namespace is, and it is mounted. */
static void test_inuse_nvme_namespace(void **state)
{
	struct fixture *f = *state;
	nvme_subsystem(f, false);
	assert_in_use(f, "in use: nvme0n1 (a multipath namespace of nvme0) is mounted at /srv\n",
		      "in use: nvme0n1 (a multipath namespace of nvme0) is mounted (where: details "
		      "for root only)\n");
}

/* A subsystem another controller (not the subtree's) still reaches keeps
 * its namespace: no reason. */
static void test_inuse_nvme_other_path(void **state)
{
	struct fixture *f = *state;
	nvme_subsystem(f, true);
	struct dm_bind_request req = { .action = DM_BIND_NONE };
	assert_int_equal(dm_bind_device(f->b, f->dev, &req), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bind_done, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bound_meanwhile_to_the_target, setup, teardown),
		cmocka_unit_test_setup_teardown(test_step_fails_rolled_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dry_run_every_reason, setup, teardown),
		cmocka_unit_test_setup_teardown(test_protect_refusal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_persist_observer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recover_rolls_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_persistence_on_top, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sriov, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sriov_state_per_binder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bus_drivers_per_binder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inuse_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inuse_mounted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inuse_holder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inuse_route, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inuse_open_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inuse_vfio, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inuse_nvme_namespace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inuse_nvme_other_path, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
