/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* binding.c - binding transactions (see binding.h). */
#include "binding.h"
#include "binding-private.h"

#include "core/array.h"
#include "core/hashmap.h"
#include "inuse.h"
#include "journal.h"
#include "kernel.h"
#include "modules.h"
#include "report.h"
#include "runner.h"
#include "sriov.h"
#include "util/log.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const step_names[] = {
	[DM_STEP_CHECK] = "check",
	[DM_STEP_OVERRIDE] = "driver_override",
	[DM_STEP_UNBIND] = "unbind",
	[DM_STEP_PROBE] = "probe",
	[DM_STEP_VERIFY] = "verify",
};

/* ---- the reports, one per device that had a request ---- */

#define REPORT_MAX DM_BINDING_REPORT_MAX

struct report {
	char *devpath; /* the key */
	bool running;
	/* the last request that wrote anything: whether it succeeded, and
	 * the driver it left bound ("" none), for the why */
	bool done, failed;
	char left[64];
	/* the reports kept so far: a reader tells a new one by it (a request
	 * that was not one, or named no driver of the bus, keeps none) */
	unsigned long seq;
	char text[REPORT_MAX];
	/* the same without what root alone reads (other users' processes,
	 * the daemon's mount points: dm_inuse_check()) */
	char pub[REPORT_MAX];
};

/* the metrics file: the requests that were not dry runs, by how they ended */
enum { RES_OK, RES_REFUSED, RES_PENDING, RES_INVALID, RES_FAILED, N_RES };

struct dm_binder {
	char *sysfs; /* "/sys", or a test's directory */
	char *proc; /* "/proc", --proc-root, or a test's directory */
	struct dm_sriov_state *sriov; /* sriov.c's reports and counts */
	struct dm_modules *modules; /* libkmod's lookups (modules.h) */
	/* whether the kernel has drivers on a bus, asked of sysfs once per
	 * bus (dm_binder_bus_has_drivers()) */
	pthread_mutex_t buses_lock;
	struct {
		char name[64];
		bool has;
	} buses[32];
	size_t n_buses;
	struct dm_journal *journal; /* the binding journal (journal.h) */
	struct dm_binder_kernel kernel;
	pthread_mutex_t observer_lock;
	struct dm_binder_observer observer;
	struct dm_report_table reports; /* struct report, by devpath */
	/* driverfsd.conf's Protect=, " name name ... " (spaces around each) */
	pthread_mutex_t protected_lock;
	char *protected_names;
	atomic_uint_fast64_t results[N_RES];
};

/* The runner's write: the daemon's kernel. */
static int runner_write(void *data, const char *label, const char *path, const char *value,
			int timeout_ms)
{
	(void)data;
	return dm_run_write(label, path, value, timeout_ms);
}

int dm_binder_new(const char *sysfs_root, const char *journal, struct dm_binder **ret)
{
	struct dm_binder *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->sysfs = strdup(sysfs_root ? sysfs_root : "/sys");
	b->proc = strdup("/proc");
	if (!b->sysfs || !b->proc || dm_sriov_state_new(&b->sriov) < 0 ||
	    dm_modules_new(NULL, &b->modules) < 0 || dm_journal_new(journal, &b->journal) < 0) {
		dm_sriov_state_free(b->sriov);
		dm_modules_free(b->modules);
		free(b->sysfs);
		free(b->proc);
		free(b);
		return -ENOMEM;
	}
	b->kernel = (struct dm_binder_kernel){ .write = runner_write };
	pthread_mutex_init(&b->observer_lock, NULL);
	pthread_mutex_init(&b->protected_lock, NULL);
	pthread_mutex_init(&b->buses_lock, NULL);
	b->reports = (struct dm_report_table)DM_REPORT_TABLE_INIT(struct report);
	*ret = b;
	return 0;
}

void dm_binder_free(struct dm_binder *b)
{
	if (!b)
		return;
	dm_report_table_clear(&b->reports);
	pthread_mutex_destroy(&b->reports.lock);
	pthread_mutex_destroy(&b->observer_lock);
	pthread_mutex_destroy(&b->protected_lock);
	free(b->protected_names);
	dm_journal_free(b->journal);
	free(b->sysfs);
	free(b->proc);
	dm_sriov_state_free(b->sriov);
	dm_modules_free(b->modules);
	pthread_mutex_destroy(&b->buses_lock);
	free(b);
}

void dm_binder_set_kernel(struct dm_binder *b, const struct dm_binder_kernel *k)
{
	b->kernel = k && k->write ? *k : (struct dm_binder_kernel){ .write = runner_write };
}

void dm_binder_set_observer(struct dm_binder *b, const struct dm_binder_observer *o)
{
	pthread_mutex_lock(&b->observer_lock);
	b->observer = o ? *o : (struct dm_binder_observer){ 0 };
	pthread_mutex_unlock(&b->observer_lock);
}

static struct dm_binder_observer observer_of(struct dm_binder *b)
{
	pthread_mutex_lock(&b->observer_lock);
	struct dm_binder_observer o = b->observer;
	pthread_mutex_unlock(&b->observer_lock);
	return o;
}

void dm_binder_get_observer(struct dm_binder *b, struct dm_binder_observer *ret)
{
	*ret = observer_of(b);
}

const char *dm_binder_sysfs(const struct dm_binder *b)
{
	return b->sysfs;
}

struct dm_sriov_state *dm_binder_sriov(struct dm_binder *b)
{
	return b->sriov;
}

int dm_binder_set_modules_dir(struct dm_binder *b, const char *dir)
{
	struct dm_modules *mo;
	int r = dm_modules_new(dir, &mo);
	if (r < 0)
		return r;
	dm_modules_free(b->modules);
	b->modules = mo;
	return 0;
}

struct dm_modules *dm_binder_modules(struct dm_binder *b)
{
	return b->modules;
}

bool dm_binder_bus_has_drivers(struct dm_binder *b, const char *name)
{
	bool has = false, found = false;
	pthread_mutex_lock(&b->buses_lock);
	for (size_t i = 0; i < b->n_buses && !found; i++)
		if (strcmp(b->buses[i].name, name) == 0) {
			found = true;
			has = b->buses[i].has;
		}
	if (!found) {
		char path[PATH_MAX];
		struct stat st;
		has = (size_t)snprintf(path, sizeof(path), "%s/bus/%s/drivers", b->sysfs, name) <
			      sizeof(path) &&
		      stat(path, &st) == 0 && S_ISDIR(st.st_mode);
		size_t cap = sizeof(b->buses) / sizeof(b->buses[0]);
		if (b->n_buses < cap && strlen(name) < sizeof(b->buses[0].name)) {
			snprintf(b->buses[b->n_buses].name, sizeof(b->buses[0].name), "%s", name);
			b->buses[b->n_buses++].has = has;
		}
	}
	pthread_mutex_unlock(&b->buses_lock);
	return has;
}

int dm_binder_set_proc_root(struct dm_binder *b, const char *dir)
{
	char *p = strdup(dir ? dir : "/proc");
	if (!p)
		return -ENOMEM;
	free(b->proc);
	b->proc = p;
	return 0;
}

const char *dm_binder_proc(const struct dm_binder *b)
{
	return b->proc;
}

int dm_binder_inuse_check(struct dm_binder *b, struct dm_device *dev, char *buf, size_t size,
			  char *pub, size_t pub_size)
{
	/* no binder (a model binding does not serve): the machine's */
	const struct dm_inuse_roots roots = { .sysfs = b ? b->sysfs : NULL,
					      .proc = b ? b->proc : NULL };
	return dm_inuse_check(&roots, dev, buf, size, pub, pub_size);
}

int dm_binder_write(struct dm_binder *b, const char *label, const char *path, const char *value,
		    int timeout_ms)
{
	return b->kernel.write(b->kernel.data, label, path, value, timeout_ms);
}

struct dm_journal *dm_binder_journal(struct dm_binder *b)
{
	return b->journal;
}

struct dm_binder *dm_binder_of(struct dm_device *dev)
{
	dm_bind_request_fn fn;
	void *data;
	dm_model_get_bind_request(dm_device_get_model(dev), &fn, &data);
	return fn == dm_binding_request ? data : NULL;
}

struct dm_binder *dm_binder_of_locked(struct dm_device *dev)
{
	dm_bind_request_fn fn;
	void *data;
	dm_model_get_bind_request_locked(dm_device_get_model(dev), &fn, &data);
	return fn == dm_binding_request ? data : NULL;
}

int dm_binder_persist_sriov(struct dm_binder *b, struct dm_device *pf, const char *name,
			    int numvfs, const char *driver, char *msg, size_t size)
{
	struct dm_binder_observer o = b ? observer_of(b) : (struct dm_binder_observer){ 0 };
	if (numvfs >= 0 && o.sriov_persisted)
		return o.sriov_persisted(o.data, pf, name, numvfs, driver, msg, size);
	if (numvfs < 0 && o.sriov_forgotten)
		return o.sriov_forgotten(o.data, name, msg, size);
	snprintf(msg, size, "no state file");
	return -EOPNOTSUPP;
}

int dm_binding_status(struct dm_binder *b, struct dm_device *dev, bool details, char *buf,
		      size_t size, unsigned long *ret_seq)
{
	const char *devpath = dm_device_get_devpath(dev);
	buf[0] = '\0';
	*ret_seq = 0;
	if (!devpath || size == 0)
		return 0;
	pthread_mutex_lock(&b->reports.lock);
	struct report *r = dm_report_table_find_locked(&b->reports, devpath);
	int n = r ? snprintf(buf, size, "%s", details ? r->text : r->pub) : 0;
	if (r)
		*ret_seq = r->seq;
	pthread_mutex_unlock(&b->reports.lock);
	return n < 0 ? 0 : (size_t)n >= size ? (int)size - 1 : n;
}

/* A kernel driver's name: what module and driver names are made of. */
static bool is_driver_name(const char *s)
{
	return strlen(s) <= DM_KERNEL_DRIVER_NAME_MAX && dm_name_is_plain(s, strlen(s));
}

/* ---- a transaction ---- */

struct txn {
	struct dm_binder *b;
	struct dm_device *dev;
	const struct dm_bind_request *req;
	char devdir[PATH_MAX]; /* <sysfs><devpath> */
	char busdir[PATH_MAX]; /* <sysfs>/bus/<bus> */
	const char *devpath, *bus;
	const char *name; /* the device's name on its bus */
	char old_driver[256]; /* "" when unbound */
	bool has_override;
	char old_override[256]; /* "" when none */
	/* what was done, for the rollback */
	bool override_set, unbound;
	/* refused for its own value (a driver the bus does not have), where a
	 * step's errno, EINVAL too, is the kernel's */
	bool invalid;
	/* the refusals a dry run found, for its last line; each the errno
	 * the real request would return at it, the first one's returned */
	int refusal;
	char refused[256];
	char text[REPORT_MAX];
	/* the report as others than root read it (dm_binding_status()) */
	char pub[REPORT_MAX];
	struct dm_report_text rt; /* writes text and pub */
	/* the journal's entry (journal.h): written before the first write,
	 * its step moved on before each, dropped when the transaction ends
	 * (done or rolled back; kept when a step is pending) */
	struct dm_journal_txn jt;
	bool journaled, pending;
};

/* A line (or lines) of the report, the same for every reader; lines
 * root reads as @full and others as @pub. */
#define say(t, ...) dm_report_say(&(t)->rt, __VA_ARGS__)
#define say_private(t, full, pub) dm_report_private(&(t)->rt, full, pub)

/* @t's report written into its own text and pub. */
static void report_init(struct txn *t)
{
	t->rt = (struct dm_report_text){ .text = t->text, .pub = t->pub, .size = REPORT_MAX };
}

/* A dry run found a reason to refuse (@what, for its last line), with
 * the errno @r the real request returns at it. */
static void dry_refusal(struct txn *t, int r, const char *what)
{
	if (!t->refusal)
		t->refusal = r;
	size_t len = strlen(t->refused);
	dm_report_append(t->refused, sizeof(t->refused), &len, len ? ", " : "");
	dm_report_append(t->refused, sizeof(t->refused), &len, what);
}

/* The driver the device at @devdir is bound to now, into @buf ("" when
 * none). */
static void driver_of(const char *devdir, char *buf, size_t size)
{
	dm_run_read_link_base(devdir, "driver", buf, size);
}

static void current_driver(const struct txn *t, char *buf, size_t size)
{
	driver_of(t->devdir, buf, size);
}

/* Whether the device's authorized (USB devices and interfaces) is 0. */
static bool deauthorized(const struct txn *t)
{
	char path[PATH_MAX + 16], value[8];
	snprintf(path, sizeof(path), "%s/authorized", t->devdir);
	return dm_run_read(path, value, sizeof(value)) >= 0 && strcmp(value, "0") == 0;
}

static bool driver_exists(const struct txn *t, const char *driver)
{
	char path[PATH_MAX + 300];
	struct stat st;
	snprintf(path, sizeof(path), "%s/drivers/%s", t->busdir, driver);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* One sysfs write of the transaction, labelled for the log. */
static int sysfs_write(struct txn *t, const char *path, const char *value)
{
	char label[512];
	/* the log's label: the file's path, cut if it must be */
	snprintf(label, sizeof(label), "binding %.200s: %.290s", t->name, path);
	return t->b->kernel.write(t->b->kernel.data, label, path, value, DM_BIND_TIMEOUT_MS);
}

static int write_override(struct txn *t, const char *value)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/driver_override", t->devdir);
	/* a lone newline clears it */
	return sysfs_write(t, path, value[0] ? value : "\n");
}

static int write_driver_file(struct txn *t, const char *driver, const char *file)
{
	char path[PATH_MAX + 300];
	snprintf(path, sizeof(path), "%s/drivers/%s/%s", t->busdir, driver, file);
	return sysfs_write(t, path, t->name);
}

static int write_probe(struct txn *t)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/drivers_probe", t->busdir);
	return sysfs_write(t, path, t->name);
}

/* Undoes what was done, in reverse: driver_override first, then the old
 * driver bound again. */
static void roll_back(struct txn *t)
{
	char now[256];
	int r = 0;
	if (t->override_set) {
		r = write_override(t, t->old_override);
		say(t, "rollback: driver_override restored to %s: %s\n",
		    t->old_override[0] ? t->old_override : "(none)", r < 0 ? strerror(-r) : "ok");
	}
	current_driver(t, now, sizeof(now));
	if (t->old_driver[0] && strcmp(now, t->old_driver) != 0) {
		if (now[0]) {
			int u = write_driver_file(t, now, "unbind");
			say(t, "rollback: unbind from %s: %s\n", now, u < 0 ? strerror(-u) : "ok");
		}
		r = write_driver_file(t, t->old_driver, "bind");
		say(t, "rollback: bind to %s again: %s\n", t->old_driver,
		    r < 0 ? strerror(-r) : "ok");
	} else if (!t->old_driver[0] && now[0]) {
		r = write_driver_file(t, now, "unbind");
		say(t, "rollback: unbind from %s: %s\n", now, r < 0 ? strerror(-r) : "ok");
	}
	current_driver(t, now, sizeof(now));
	say(t, "after rollback: %s\n", now[0] ? now : "no driver");
}

/* A step failed with @r: the report says which, and what was undone. */
static int failed(struct txn *t, enum dm_bind_step step, int r)
{
	if (r == -ETIMEDOUT) {
		t->pending = true;
		say(t, "pending: %s did not return within %d ms; the kernel may still "
		       "finish it, and its uevent will show the outcome (nothing undone)\n",
		    step_names[step], DM_BIND_TIMEOUT_MS);
		return -EINPROGRESS;
	}
	say(t, "failed: %s: %s (%s)\n", step_names[step], strerror(-r), strerrorname_np(-r));
	roll_back(t);
	return r;
}

int dm_binder_set_protected(struct dm_binder *b, const char *names)
{
	char *copy = NULL;
	if (names && *names) {
		size_t len = strlen(names);
		copy = malloc(len + 3);
		if (!copy)
			return -ENOMEM;
		snprintf(copy, len + 3, " %s ", names);
	}
	pthread_mutex_lock(&b->protected_lock);
	free(b->protected_names);
	b->protected_names = copy;
	pthread_mutex_unlock(&b->protected_lock);
	return 0;
}

bool dm_binder_is_protected(struct dm_binder *b, const char *name)
{
	char word[300];
	if (!b || !name[0] || (size_t)snprintf(word, sizeof(word), " %s ", name) >= sizeof(word))
		return false;
	pthread_mutex_lock(&b->protected_lock);
	bool found = b->protected_names && strstr(b->protected_names, word);
	pthread_mutex_unlock(&b->protected_lock);
	return found;
}

struct link_veto {
	struct txn *t;
	int n;
};

static int consumer_veto(struct dm_link *l, void *data)
{
	struct link_veto *v = data;
	/* managed links: the driver core unbinds their consumers first */
	if (dm_link_get_flags(l) & (DM_LINK_STATELESS | DM_LINK_SYNC_STATE_ONLY))
		return 0;
	struct dm_device *c = dm_link_get_consumer(l);
	const char *drv = dm_device_get_kernel_driver(c);
	if (!drv || dm_device_is_dead(c))
		return 0;
	struct dm_bus *bus = dm_device_get_bus_locked(c);
	say(v->t, "in use: %s:%s (bound to %s) depends on it through a device link; the kernel "
		  "would unbind it first\n",
	    bus ? dm_bus_get_name(bus) : "device", dm_device_get_sysname(c), drv);
	v->n++;
	return 0;
}

/* The consumers bound to a driver over the device's managed links. */
static int link_vetoes(struct txn *t)
{
	struct link_veto v = { .t = t };
	struct dm_model *m = dm_device_get_model(t->dev);
	dm_model_read_lock(m);
	dm_device_for_each_link_locked(t->dev, true, consumer_veto, &v);
	dm_model_unlock(m);
	return v.n;
}

/* What stands against unbinding: each reason a line of the report; 0 or
 * -EBUSY. */
static int vetoes(struct txn *t)
{
	char reasons[REPORT_MAX] = "", pub[REPORT_MAX] = "";
	int n = 0;
	if (dm_binder_is_protected(t->b, t->name)) {
		say(t, "in use: %s is protected (driverfsd.conf, Protect=)\n", t->name);
		n++;
	}
	if (dm_binder_is_protected(t->b, t->old_driver)) {
		say(t, "in use: its driver %s is protected (driverfsd.conf, Protect=)\n",
		    t->old_driver);
		n++;
	}
	n += link_vetoes(t);
	int r = dm_binder_inuse_check(t->b, t->dev, reasons, sizeof(reasons), pub, sizeof(pub));
	if (r < 0) {
		say(t, "in use: cannot tell (%s)\n", strerror(-r));
		return -EBUSY;
	}
	n += r;
	say_private(t, reasons, pub);
	return n > 0 ? -EBUSY : 0;
}

/* A driver that lets VFIO own its device's DMA (the kernel's rule since
 * 5.19), or none. */
static bool lets_vfio_own(const char *drv)
{
	return !drv[0] || dm_inuse_is_vfio_driver(drv) || strcmp(drv, "pci-stub") == 0 ||
	       strcmp(drv, "pcieport") == 0;
}

/* For vfio-pci: the device's IOMMU group must be viable, every other
 * member unbound or bound to a driver that lets VFIO own the group's DMA.
 * 0, -EBUSY (a companion in the way: each named), or -EOPNOTSUPP (no
 * IOMMU, and the kernel's no-IOMMU mode off: vfio-pci would not take it). */
static int iommu_group_check(struct txn *t)
{
	char link[PATH_MAX + 16], target[PATH_MAX], value[8];
	snprintf(link, sizeof(link), "%s/iommu_group", t->devdir);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0) {
		char param[PATH_MAX];
		snprintf(param, sizeof(param), "%s/module/vfio/parameters/enable_unsafe_noiommu_mode",
			 t->b->sysfs);
		if (dm_run_read(param, value, sizeof(value)) >= 0 &&
		    (value[0] == 'Y' || value[0] == '1')) {
			say(t, "no IOMMU: the kernel's no-IOMMU mode is on "
			       "(vfio.enable_unsafe_noiommu_mode): the device gets no DMA "
			       "isolation\n");
			return 0;
		}
		say(t, "refused: the device has no IOMMU group, and without an IOMMU vfio-pci "
		       "cannot isolate it (the kernel's no-IOMMU mode, "
		       "vfio.enable_unsafe_noiommu_mode, is off)\n");
		return -EOPNOTSUPP;
	}
	target[n] = '\0';
	const char *group = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/kernel/iommu_groups/%.64s/devices", t->b->sysfs, group);
	DIR *d = opendir(dir);
	if (!d) {
		say(t, "in use: IOMMU group %s cannot be read (%s)\n", group, strerror(errno));
		return -EBUSY;
	}
	int blocking = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strcmp(e->d_name, t->name) == 0)
			continue;
		char member[PATH_MAX + 300], drv[256];
		snprintf(member, sizeof(member), "%s/%s", dir, e->d_name);
		driver_of(member, drv, sizeof(drv));
		if (lets_vfio_own(drv))
			continue;
		say(t, "in use: IOMMU group %s: %s is bound to %s (VFIO needs every member "
		       "unbound or bound to vfio-pci, pci-stub or pcieport)\n",
		    group, e->d_name, drv);
		blocking++;
	}
	closedir(d);
	return blocking ? -EBUSY : 0;
}

/* The plan, one line per step that will be written. */
static void plan(struct txn *t, const char *target, bool set_override, bool unbind)
{
	const struct dm_bind_request *req = t->req;
	if (set_override)
		say(t, "plan: driver_override <- %s\n",
		    req->action == DM_BIND_TO ? target : "(none)");
	if (unbind)
		say(t, "plan: unbind from %s\n", t->old_driver);
	if (req->action == DM_BIND_TO && strcmp(t->old_driver, target) != 0)
		say(t, "plan: bind to %s\n", target);
	else if (req->action == DM_BIND_DEFAULT)
		say(t, "plan: probe (the kernel's default driver)\n");
	say(t, "plan: verify the driver link\n");
}

/* A dry run's refusal for a driver the bus does not have: the module
 * modprobe would load for that name, if libkmod knows one (modules.h). */
static void module_hint(struct txn *t, const char *driver)
{
	char module[128];
	enum dm_module_state state;
	int r = dm_modules_of_driver(t->b->modules, driver, module, sizeof(module), &state);
	if (r == 0)
		say(t, "no kernel module of that name or alias (libkmod)\n");
	else if (r > 0 && state == DM_MODULE_NOT_LOADED)
		say(t, "module %s can be loaded: modprobe %s\n", module, driver);
	else if (r > 0)
		say(t, "module %s is %s, but the bus has no driver %s\n", module,
		    state == DM_MODULE_BUILTIN ? "built in" : "loaded", driver);
	/* else no indexes to look in (or no memory): nothing to say */
}

/* The journal's entry of @t, its step now @step, written durably before
 * that step's write; 0 or -errno (the report says why). */
static int journal_step(struct txn *t, enum dm_bind_step step)
{
	char why[256];
	t->jt.step = (int)step;
	int r = dm_journal_put_txn(t->b->journal, &t->jt, why, sizeof(why));
	if (r < 0)
		say(t, "journal %s: %s\n", dm_journal_path(t->b->journal), why);
	return r;
}

/* Before the first write: what the transaction found, recorded. */
static int journal_begin(struct txn *t, const char *target, bool set_override)
{
	struct dm_journal_txn *j = &t->jt;
	*j = (struct dm_journal_txn){ 0 };
	snprintf(j->devpath, sizeof(j->devpath), "%s", t->devpath);
	snprintf(j->bus, sizeof(j->bus), "%s", t->bus);
	snprintf(j->name, sizeof(j->name), "%s", t->name);
	snprintf(j->old_driver, sizeof(j->old_driver), "%s", t->old_driver);
	j->has_override = t->has_override;
	snprintf(j->old_override, sizeof(j->old_override), "%s", t->old_override);
	j->action = (int)t->req->action;
	snprintf(j->driver, sizeof(j->driver), "%s", target ? target : "");
	j->set_override = set_override;
	int r = journal_step(t, DM_STEP_CHECK);
	if (r < 0) {
		say(t, "refused: the transaction cannot be recorded, and a daemon killed in "
		       "its middle would leave the device half-moved (nothing written)\n");
		return r;
	}
	t->journaled = true;
	return 0;
}

static int run(struct txn *t)
{
	const struct dm_bind_request *req = t->req;
	const char *target = req->action == DM_BIND_TO ? req->driver : NULL;
	char path[PATH_MAX + 32];

	if (req->preface)
		say(t, "%s", req->preface);
	current_driver(t, t->old_driver, sizeof(t->old_driver));
	snprintf(path, sizeof(path), "%s/driver_override", t->devdir);
	int r = dm_run_read(path, t->old_override, sizeof(t->old_override));
	t->has_override = r >= 0;
	if (!t->has_override || strcmp(t->old_override, "(null)") == 0)
		t->old_override[0] = '\0';
	say(t, "device %s, bound to %s, driver_override %s\n", t->name,
	    t->old_driver[0] ? t->old_driver : "no driver",
	    !t->has_override ? "(not on this bus)"
	    : t->old_override[0] ? t->old_override : "(none)");
	switch (req->action) {
	case DM_BIND_TO:
		say(t, "request: bind to %s%s%s\n", target, req->force ? ", forced" : "",
		    req->dry_run ? ", dry run" : "");
		break;
	case DM_BIND_DEFAULT:
		say(t, "request: bind to the kernel's default%s%s\n", req->force ? ", forced" : "",
		    req->dry_run ? ", dry run" : "");
		break;
	case DM_BIND_NONE:
		say(t, "request: unbind%s%s\n", req->force ? ", forced" : "",
		    req->dry_run ? ", dry run" : "");
		break;
	}

	/* check: a real request stops at the first refusal, a dry run (the
	 * plan read before the real thing) goes on and names every one */
	if (target && !driver_exists(t, target)) {
		say(t, "refused: the bus has no driver %s (is its module loaded?)\n", target);
		t->invalid = true;
		if (!req->dry_run)
			return -EINVAL;
		module_hint(t, target);
		char what[128];
		snprintf(what, sizeof(what), "the bus has no driver %s", target);
		dry_refusal(t, -EINVAL, what);
	}
	/* USB: a deauthorized interface (or device) is probed by no driver,
	 * and a libusb program cannot claim it either */
	if (req->action != DM_BIND_NONE && deauthorized(t)) {
		say(t, "refused: the device is deauthorized (its authorized is 0): no driver "
		       "can probe it, nor can a program claim it through usbfs; write 1 to "
		       "its authorized first\n");
		if (!req->dry_run)
			return -ENODEV;
		dry_refusal(t, -ENODEV, "the device is deauthorized");
	}
	/* (a dry run refused above shows the plan of the whole request) */
	bool refused = t->refusal != 0;
	/* without driver_override (USB), the kernel's default is the driver
	 * its probe picks: the one bound now, or, unbound, a probe */
	if (!refused && req->action == DM_BIND_DEFAULT && !t->has_override && t->old_driver[0]) {
		say(t, "done: bound to %s (this bus has no driver_override: the driver bound "
		       "is the kernel's choice)\n",
		    t->old_driver);
		return 0;
	}
	bool set_override = t->has_override &&
			    (target ? strcmp(t->old_override, target) != 0
				    : req->action == DM_BIND_DEFAULT && t->old_override[0]);
	bool unbind = t->old_driver[0] && (!target || strcmp(t->old_driver, target) != 0);
	if (!refused && target && !unbind && t->old_driver[0] && !set_override) {
		say(t, "done: already bound to %s\n", target);
		return 0;
	}
	if (!refused && req->action == DM_BIND_DEFAULT && t->old_driver[0] && !t->old_override[0]) {
		say(t, "done: already bound to the kernel's default, %s\n", t->old_driver);
		return 0;
	}
	if (!refused && req->action == DM_BIND_NONE && !t->old_driver[0]) {
		say(t, "done: no driver is bound\n");
		return 0;
	}
	int veto = unbind ? vetoes(t) : 0;
	if (target && dm_inuse_is_vfio_driver(target) && !req->companions_moved) {
		int g = iommu_group_check(t);
		if (g == -EOPNOTSUPP && !req->dry_run)
			return g;
		if (g == -EOPNOTSUPP)
			dry_refusal(t, g, "the device has no IOMMU group");
		else if (g < 0)
			veto = g;
	}
	if (veto < 0 && !req->force && !req->dry_run) {
		say(t, "refused: in use (force proceeds)\n");
		return veto;
	}
	if (veto < 0 && req->force && !req->dry_run) {
		say(t, "forced: proceeding although in use\n");
		log_warn("binding %s: root forced %s past its in-use checks", t->name,
			 target ? target : req->action == DM_BIND_DEFAULT ? "the default" : "an unbind");
	}
	plan(t, target, set_override, unbind);
	if (req->dry_run && t->refusal) {
		say(t, "dry run: nothing written; refused: %s%s\n", t->refused,
		    veto < 0 && !req->force ? ", in use (force passes in use alone)" : "");
		return t->refusal;
	}
	if (req->dry_run) {
		say(t, "dry run: nothing written%s\n",
		    veto < 0 && !req->force ? "; refused: in use (force proceeds)" : "");
		return veto < 0 && !req->force ? veto : 0;
	}

	/* recorded before the first write: a daemon killed from here on
	 * leaves its successor what it needs to put the device back */
	r = journal_begin(t, target, set_override);
	if (r < 0)
		return r;
	/* override: from now on only @target may bind (or, cleared, any) */
	if (set_override) {
		if ((r = journal_step(t, DM_STEP_OVERRIDE)) < 0)
			return failed(t, DM_STEP_OVERRIDE, r);
		r = write_override(t, target ? target : "");
		if (r < 0)
			return failed(t, DM_STEP_OVERRIDE, r);
		t->override_set = true;
	}
	if (unbind) {
		if ((r = journal_step(t, DM_STEP_UNBIND)) < 0)
			return failed(t, DM_STEP_UNBIND, r);
		r = write_driver_file(t, t->old_driver, "unbind");
		if (r < 0)
			return failed(t, DM_STEP_UNBIND, r);
		t->unbound = true;
	}
	/* (bound to @target already, only its override was to be set) */
	bool probe = (target && strcmp(t->old_driver, target) != 0) || req->action == DM_BIND_DEFAULT;
	if (probe && (r = journal_step(t, DM_STEP_PROBE)) < 0)
		return failed(t, DM_STEP_PROBE, r);
	if (target && strcmp(t->old_driver, target) != 0) {
		r = write_driver_file(t, target, "bind");
		/* EBUSY: the device has a driver already. Someone probed it
		 * between the unbind and this write (a udev rule's
		 * drivers_probe, another tool): when that driver is the
		 * target, through the override set above, it is where it
		 * was asked to go, and the verify step says so */
		if (r == -EBUSY) {
			char now[256];
			current_driver(t, now, sizeof(now));
			if (strcmp(now, target) == 0) {
				say(t, "bind: %s had it already\n", target);
				r = 0;
			}
		}
		if (r < 0)
			return failed(t, DM_STEP_PROBE, r);
	} else if (req->action == DM_BIND_DEFAULT) {
		r = write_probe(t);
		if (r < 0)
			return failed(t, DM_STEP_PROBE, r);
	}

	char now[256];
	if ((r = journal_step(t, DM_STEP_VERIFY)) < 0)
		return failed(t, DM_STEP_VERIFY, r);
	current_driver(t, now, sizeof(now));
	if (target && strcmp(now, target) != 0) {
		say(t, "the driver link names %s\n", now[0] ? now : "no driver");
		return failed(t, DM_STEP_VERIFY, -ENODEV);
	}
	if (req->action == DM_BIND_NONE && now[0]) {
		say(t, "the kernel bound %s again\n", now);
		return failed(t, DM_STEP_VERIFY, -EBUSY);
	}
	say(t, "done: %s\n", now[0] ? now : "no driver");
	return 0;
}

static int bind_one(struct dm_binder *b, struct dm_device *dev, const struct dm_bind_request *req,
		    bool *ret_invalid);

/* Whether driver_override in @devdir names a driver. */
static bool has_override(const char *devdir)
{
	char path[PATH_MAX + 32], ovr[256];
	snprintf(path, sizeof(path), "%.4000s/driver_override", devdir);
	return dm_run_read(path, ovr, sizeof(ovr)) >= 0 && ovr[0] && strcmp(ovr, "(null)") != 0;
}

void dm_binding_save(struct dm_binder *b, struct dm_device *dev, struct dm_binding_saved *ret)
{
	char devdir[PATH_MAX];
	const char *devpath = dm_device_get_devpath(dev);
	*ret = (struct dm_binding_saved){ 0 };
	snprintf(devdir, sizeof(devdir), "%s%.4000s", b->sysfs, devpath ? devpath : "");
	driver_of(devdir, ret->driver, sizeof(ret->driver));
	ret->had_override = has_override(devdir);
}

int dm_binding_restore(struct dm_binder *b, struct dm_device *dev,
		       const struct dm_binding_saved *saved, bool force)
{
	struct dm_bind_request back = {
		.action = saved->had_override && saved->driver[0] ? DM_BIND_TO
			  : saved->driver[0]			  ? DM_BIND_DEFAULT
								  : DM_BIND_NONE,
		.driver = saved->driver,
		.force = force,
		.companions_moved = true,
	};
	return dm_bind_device(b, dev, &back);
}

/* A member of an IOMMU group moved for a --group request, and how to put
 * it back. */
struct member {
	struct dm_device *dev;
	struct dm_binding_saved before;
	bool moved;
};

/* The members of @dev's IOMMU group (itself aside) bound to a driver that
 * keeps VFIO out, referenced, into *ret; their number, or -errno. */
static int group_companions(struct dm_binder *b, struct dm_device *dev, struct member **ret)
{
	char devdir[PATH_MAX], link[PATH_MAX + 16], target[PATH_MAX], dir[PATH_MAX];
	*ret = NULL;
	snprintf(devdir, sizeof(devdir), "%s%.4000s", b->sysfs, dm_device_get_devpath(dev));
	snprintf(link, sizeof(link), "%s/iommu_group", devdir);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return 0; /* no group: the request itself says so */
	target[n] = '\0';
	const char *group = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
	snprintf(dir, sizeof(dir), "%s/kernel/iommu_groups/%.64s/devices", b->sysfs, group);
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct member *v = NULL;
	size_t count = 0, cap = 0;
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.' || strcmp(e->d_name, dm_device_get_sysname(dev)) == 0)
			continue;
		char member_dir[PATH_MAX + 300], drv[256];
		snprintf(member_dir, sizeof(member_dir), "%s/%s", dir, e->d_name);
		driver_of(member_dir, drv, sizeof(drv));
		if (lets_vfio_own(drv))
			continue;
		struct dm_device *m = dm_model_find_on_bus(dm_device_get_model(dev), "pci", e->d_name);
		if (!m) {
			r = -ENODEV;
			break;
		}
		if (!dm_array_grow((void **)&v, &cap, count, sizeof(*v), 4)) {
			dm_device_unref(m);
			r = -ENOMEM;
			break;
		}
		v[count] = (struct member){ .dev = m };
		dm_binding_save(b, m, &v[count].before);
		count++;
	}
	closedir(d);
	if (r < 0) {
		for (size_t i = 0; i < count; i++)
			dm_device_unref(v[i].dev);
		free(v);
		return r;
	}
	*ret = v;
	return (int)count;
}

/* --group: the companions in the way move to the same driver first, each
 * by its own transaction, then the device; a failure puts back every
 * member moved, last first (a companion's override cleared and the kernel's
 * driver probed, or its old driver named when it had an override). */
static int bind_group(struct dm_binder *b, struct dm_device *dev, const struct dm_bind_request *req,
		      bool *ret_invalid)
{
	struct member *v;
	int n = group_companions(b, dev, &v);
	if (n < 0)
		return n;
	char preface[1024] = "";
	size_t len = 0;
	int r = 0;
	/* the members and their bindings, recorded before the first moves: a
	 * daemon killed in the middle has the next one put them back */
	struct dm_journal_group *g = n > 0 && !req->dry_run ? calloc(1, sizeof(*g)) : NULL;
	if (n > 0 && !req->dry_run) {
		char why[256];
		r = g ? 0 : -ENOMEM;
		if (g) {
			snprintf(g->devpath, sizeof(g->devpath), "%s", dm_device_get_devpath(dev));
			snprintf(g->driver, sizeof(g->driver), "%s", req->driver);
			for (int i = 0; i < n && r == 0; i++) {
				if (g->n == DM_JOURNAL_MEMBERS_MAX) {
					r = -E2BIG;
					break;
				}
				snprintf(g->members[g->n].devpath, sizeof(g->members[0].devpath), "%s",
					 dm_device_get_devpath(v[i].dev));
				snprintf(g->members[g->n].old_driver, sizeof(g->members[0].old_driver),
					 "%s", v[i].before.driver);
				g->members[g->n++].had_override = v[i].before.had_override;
			}
		}
		if (r == 0 && (r = dm_journal_put_group(b->journal, g, why, sizeof(why))) < 0)
			log_warn("binding %s: journal %s: %s; the group is not moved",
				 dm_device_get_sysname(dev), dm_journal_path(b->journal), why);
		if (r < 0) {
			for (int i = 0; i < n; i++)
				dm_device_unref(v[i].dev);
			free(v);
			free(g);
			return r;
		}
	}
	/* a dry run plans every member, and the device, whatever one's answer
	 * (the first refusal returned) */
	for (int i = 0; i < n && (r == 0 || req->dry_run); i++) {
		struct dm_bind_request sub = *req;
		sub.group = false;
		sub.persist = false;
		sub.companions_moved = true;
		bool invalid;
		int m = bind_one(b, v[i].dev, &sub, &invalid);
		if (r == 0) {
			r = m;
			*ret_invalid = invalid;
		}
		v[i].moved = m == 0 && !req->dry_run;
		int w = snprintf(preface + len, sizeof(preface) - len,
				 "group: %s (%s) to %s: %s%s\n", dm_device_get_sysname(v[i].dev),
				 v[i].before.driver, req->driver, m == 0 ? "done" : strerror(-m),
				 req->dry_run ? " (dry run)" : "");
		if (w > 0 && (size_t)w < sizeof(preface) - len)
			len += (size_t)w;
	}
	struct dm_bind_request own = *req;
	own.group = false;
	own.companions_moved = n > 0;
	own.preface = preface;
	if (r == 0) {
		r = bind_one(b, dev, &own, ret_invalid);
	} else if (req->dry_run) {
		bool invalid;
		(void)bind_one(b, dev, &own, &invalid);
	}
	if (r < 0) {
		for (int i = n - 1; i >= 0; i--) {
			if (!v[i].moved)
				continue;
			int back = dm_binding_restore(b, v[i].dev, &v[i].before, true);
			log_warn("binding %s: group rollback of %s to %s: %s",
				 dm_device_get_sysname(dev), dm_device_get_sysname(v[i].dev),
				 v[i].before.driver[0] ? v[i].before.driver : "no driver",
				 back < 0 ? strerror(-back) : "ok");
		}
		if (r == -EINVAL && !*ret_invalid)
			r = -EIO; /* a member's failure, not the request's value */
	}
	if (g)
		dm_journal_drop_group(b->journal, g->devpath);
	free(g);
	for (int i = 0; i < n; i++)
		dm_device_unref(v[i].dev);
	free(v);
	return r;
}

static const char *const result_names[N_RES] = {
	[RES_OK] = "ok",	     [RES_REFUSED] = "refused", [RES_PENDING] = "pending",
	[RES_INVALID] = "invalid", [RES_FAILED] = "failed",
};

int dm_bind_device(struct dm_binder *b, struct dm_device *dev, const struct dm_bind_request *req)
{
	/* the request's own value refused (no such driver), where a step's
	 * EINVAL is the kernel's: a failure, its report naming the step */
	bool invalid = false;
	int r = req->group && req->action == DM_BIND_TO && req->driver &&
				dm_inuse_is_vfio_driver(req->driver)
			? bind_group(b, dev, req, &invalid)
			: bind_one(b, dev, req, &invalid);
	if (!req->dry_run)
		atomic_fetch_add_explicit(&b->results[r == 0		 ? RES_OK
						   : r == -EBUSY	 ? RES_REFUSED
						   : r == -EINPROGRESS ? RES_PENDING
						   : (r == -EINVAL && invalid) || r == -EOPNOTSUPP
							   ? RES_INVALID
							   : RES_FAILED],
					  1, memory_order_relaxed);
	return r;
}

void dm_binding_metrics(struct dm_metrics *w, void *data)
{
	struct dm_binder *b = data;
	dm_metrics_family(w, "driverfsd_binding_requests_total", "counter",
			  "Binding requests (dry runs aside), by result: refused (in use, EBUSY), "
			  "pending (EINPROGRESS), invalid (no such driver, a device of no bus "
			  "with drivers), failed (a step failed and was rolled back).");
	for (size_t i = 0; i < N_RES; i++)
		dm_metrics_sample(w, "driverfsd_binding_requests_total",
				  (double)atomic_load_explicit(&b->results[i], memory_order_relaxed),
				  "result", result_names[i], NULL);
}

static int bind_one(struct dm_binder *b, struct dm_device *dev, const struct dm_bind_request *req,
		    bool *ret_invalid)
{
	*ret_invalid = false;
	const char *devpath = dm_device_get_devpath(dev);
	const char *name = dm_device_get_sysname(dev);
	struct dm_model *m = dm_device_get_model(dev);
	dm_model_read_lock(m);
	struct dm_bus *bus = dm_device_get_bus_locked(dev);
	const char *busname = bus ? dm_bus_get_name(bus) : NULL;
	dm_model_unlock(m);
	if (!devpath || !busname || !name)
		return -EOPNOTSUPP;
	if (req->action == DM_BIND_TO && (!req->driver || !is_driver_name(req->driver))) {
		*ret_invalid = true;
		return -EINVAL;
	}

	struct txn *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	report_init(t);
	t->b = b;
	t->dev = dev;
	t->req = req;
	t->name = name;
	t->devpath = devpath;
	t->bus = busname;
	if ((size_t)snprintf(t->devdir, sizeof(t->devdir), "%s%s", b->sysfs, devpath) >=
		    sizeof(t->devdir) ||
	    (size_t)snprintf(t->busdir, sizeof(t->busdir), "%s/bus/%s", b->sysfs, busname) >=
		    sizeof(t->busdir)) {
		free(t);
		return -ENAMETOOLONG;
	}
	struct stat st;
	if (stat(t->busdir, &st) < 0) {
		free(t);
		return -EOPNOTSUPP; /* a bus of the model the kernel has no drivers for */
	}

	pthread_mutex_lock(&b->reports.lock);
	struct report *rep = dm_report_table_get_locked(&b->reports, devpath);
	bool busy = rep && rep->running;
	if (rep && !busy)
		rep->running = true;
	pthread_mutex_unlock(&b->reports.lock);
	if (!rep || busy) {
		free(t);
		return rep ? -EINPROGRESS : -ENOMEM;
	}

	if (!req->dry_run)
		dm_device_set_binding(dev, true);
	int r = run(t);
	/* the transaction ended (done, or rolled back): its entry goes; a
	 * step pending keeps it, marked, for the next start to decide */
	if (t->journaled && t->pending) {
		char why[256];
		t->jt.pending = true;
		if (dm_journal_put_txn(b->journal, &t->jt, why, sizeof(why)) < 0)
			log_warn("binding %s: journal %s: %s", name, dm_journal_path(b->journal),
				 why);
	} else if (t->journaled) {
		dm_journal_drop_txn(b->journal, devpath);
	}
	if (!req->dry_run)
		dm_device_set_binding(dev, false);
	if (r == 0 && req->persist && !req->dry_run) {
		char why[128] = "";
		/* persistence is the observer's (persist.h), not binding's */
		struct dm_binder_observer o = observer_of(b);
		int p = o.persisted ? o.persisted(o.data, dev, busname, name,
						  req->action == DM_BIND_TO     ? req->driver
						  : req->action == DM_BIND_NONE ? "none"
										: NULL,
						  why, sizeof(why))
				    : -EOPNOTSUPP;
		if (!o.persisted)
			snprintf(why, sizeof(why), "no state file");
		say(t, p < 0 ? "persisted: no (%s)\n" : "persisted: %s\n",
		    p < 0 ? (*why ? why : strerror(-p))
		    : req->action == DM_BIND_DEFAULT ? "forgotten"
						     : "yes");
		if (p < 0)
			r = p;
	}
	if (r < 0 && !req->dry_run)
		log_warn("binding %s: %s", name, strerror(-r));
	else if (!req->dry_run)
		log_info("binding %s: %s", name, t->rt.len ? "done" : "");

	*ret_invalid = r == -EINVAL && t->invalid;
	pthread_mutex_lock(&b->reports.lock);
	/* A request for a driver the bus does not have is bad input: its
	 * EINVAL alone, nothing changed, the last report included. A step's
	 * EINVAL (the kernel's, a probe's own) is the same number: the new
	 * report, its number moved on, is what tells them apart. A dry run's
	 * report is its plan, every refusal in it: kept. */
	if (!*ret_invalid || req->dry_run) {
		memcpy(rep->text, t->text, t->rt.len + 1);
		memcpy(rep->pub, t->pub, t->rt.pub_len + 1);
		rep->seq++;
	}
	/* for the why: what a request left bound (the default is the
	 * kernel's own choice, not the request's) */
	if (!req->dry_run && !*ret_invalid) {
		rep->done = r == 0 && req->action != DM_BIND_DEFAULT;
		rep->failed = r < 0;
		current_driver(t, rep->left, sizeof(rep->left));
	}
	rep->running = false;
	pthread_mutex_unlock(&b->reports.lock);
	free(t);
	return r;
}

int dm_bind_parse(char *buf, struct dm_bind_request *req)
{
	*req = (struct dm_bind_request){ 0 };
	size_t len = strlen(buf);
	if (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	bool first = true;
	for (char *save = NULL, *word = strtok_r(buf, " ", &save); word;
	     word = strtok_r(NULL, " ", &save)) {
		if (first) {
			if (strcmp(word, "default") == 0) {
				req->action = DM_BIND_DEFAULT;
			} else if (strcmp(word, "none") == 0) {
				req->action = DM_BIND_NONE;
			} else if (is_driver_name(word)) {
				req->action = DM_BIND_TO;
				req->driver = word;
			} else {
				return -EINVAL;
			}
			first = false;
		} else if (strcmp(word, "force") == 0 && !req->force) {
			req->force = true;
		} else if (strcmp(word, "dry-run") == 0 && !req->dry_run) {
			req->dry_run = true;
		} else if (strcmp(word, "persist") == 0 && !req->persist) {
			req->persist = true;
		} else if (strcmp(word, "group") == 0 && !req->group) {
			req->group = true;
		} else {
			return -EINVAL;
		}
	}
	return first ? -EINVAL : 0;
}

int dm_binding_request(struct dm_device *dev, const char *driver, void *data)
{
	struct dm_binder *b = data;
	struct dm_bind_request req = {
		.action = driver ? DM_BIND_TO : DM_BIND_NONE,
		.driver = driver,
	};
	return dm_bind_device(b, dev, &req);
}

void dm_binding_driver_of(const char *devdir, char *buf, size_t size)
{
	driver_of(devdir, buf, size);
}

bool dm_binding_last_outcome(struct dm_binder *b, const char *devpath, bool *done, bool *failed,
			     char *left, size_t size)
{
	pthread_mutex_lock(&b->reports.lock);
	struct report *r = dm_report_table_find_locked(&b->reports, devpath);
	if (r) {
		*done = r->done;
		*failed = r->failed;
		snprintf(left, size, "%s", r->left);
	}
	pthread_mutex_unlock(&b->reports.lock);
	return r != NULL;
}

/* ---- recovery at start: what a killed daemon's journal left ---- */

/* @text kept as @devpath's report, a new one (@append: added to the one
 * recovery made for it already: @more). */
static void keep_report(struct dm_binder *b, struct dm_device *dev, const char *text, bool more,
			bool done,
			bool failed_)
{
	const char *devpath = dm_device_get_devpath(dev);
	char devdir[PATH_MAX];
	snprintf(devdir, sizeof(devdir), "%s%.4000s", b->sysfs, devpath);
	pthread_mutex_lock(&b->reports.lock);
	struct report *rep = dm_report_table_get_locked(&b->reports, devpath);
	if (rep) {
		more = more && rep->seq > 0;
		size_t len = more ? strlen(rep->text) : 0, plen = more ? strlen(rep->pub) : 0;
		if (!more) {
			rep->text[0] = rep->pub[0] = '\0';
			rep->seq++;
		}
		dm_report_append(rep->text, sizeof(rep->text), &len, text);
		dm_report_append(rep->pub, sizeof(rep->pub), &plen, text);
		rep->done = done;
		rep->failed = failed_;
		driver_of(devdir, rep->left, sizeof(rep->left));
	}
	pthread_mutex_unlock(&b->reports.lock);
}

/* Whether the device is as @j requested. */
static bool as_requested(const struct txn *t, const struct dm_journal_txn *j)
{
	char now[256], path[PATH_MAX + 32], ovr[256] = "";
	current_driver(t, now, sizeof(now));
	snprintf(path, sizeof(path), "%s/driver_override", t->devdir);
	if (dm_run_read(path, ovr, sizeof(ovr)) < 0 || strcmp(ovr, "(null)") == 0)
		ovr[0] = '\0';
	switch ((enum dm_bind_action)j->action) {
	case DM_BIND_TO:
		return strcmp(now, j->driver) == 0 && (!j->has_override || strcmp(ovr, j->driver) == 0);
	case DM_BIND_NONE:
		return !now[0];
	case DM_BIND_DEFAULT:
		return !ovr[0];
	}
	return false;
}

/* One transaction a killed daemon left: completed when it had reached its
 * verify step (or its last step was pending) and the device is as
 * requested, else rolled back by the live path's roll_back(). */
static void recover_txn(struct dm_binder *b, struct dm_model *m, const struct dm_journal_txn *j,
			bool *ret_recovered)
{
	*ret_recovered = false;
	struct dm_device *dev = dm_model_find_devpath(m, j->devpath);
	const char *step = j->step >= 0 && j->step <= DM_STEP_VERIFY ? step_names[j->step] : "?";
	if (!dev) {
		log_warn("binding journal: %s: a transaction the daemon died in (at step %s) and "
			 "the device is gone; nothing to do",
			 j->devpath, step);
		dm_journal_drop_txn(b->journal, j->devpath);
		return;
	}
	struct txn *t = calloc(1, sizeof(*t));
	if (!t) {
		dm_device_unref(dev);
		return; /* left in the journal for the next start */
	}
	struct dm_bind_request req = { .action = (enum dm_bind_action)j->action,
				       .driver = j->driver };
	report_init(t);
	t->b = b;
	t->dev = dev;
	t->req = &req;
	t->name = j->name;
	t->devpath = j->devpath;
	t->bus = j->bus;
	snprintf(t->devdir, sizeof(t->devdir), "%s%.4000s", b->sysfs, j->devpath);
	snprintf(t->busdir, sizeof(t->busdir), "%s/bus/%.60s", b->sysfs, j->bus);
	snprintf(t->old_driver, sizeof(t->old_driver), "%s", j->old_driver);
	t->has_override = j->has_override;
	snprintf(t->old_override, sizeof(t->old_override), "%s", j->old_override);
	t->override_set = j->set_override && j->step >= DM_STEP_OVERRIDE;
	const char *what = req.action == DM_BIND_TO	 ? j->driver
			   : req.action == DM_BIND_NONE ? "no driver"
							: "the kernel's default";
	dm_device_set_binding(dev, true);
	bool complete = (j->step == DM_STEP_VERIFY || j->pending) && as_requested(t, j);
	if (complete) {
		say(t, "recovered at start: completed: the daemon died at step %s%s; the device "
		       "is bound as requested (%s)\n",
		    step, j->pending ? " (pending)" : "", what);
		say(t, "device %s, was bound to %s, driver_override %s\n", t->name,
		    j->old_driver[0] ? j->old_driver : "no driver",
		    !j->has_override ? "(not on this bus)"
		    : j->old_override[0] ? j->old_override : "(none)");
	} else {
		say(t, "recovered at start: rolled back after the daemon died at step %s%s\n", step,
		    j->pending ? " (pending)" : "");
		say(t, "device %s, was bound to %s, driver_override %s; request: %s\n", t->name,
		    j->old_driver[0] ? j->old_driver : "no driver",
		    !j->has_override ? "(not on this bus)"
		    : j->old_override[0] ? j->old_override : "(none)",
		    what);
		roll_back(t);
	}
	dm_device_set_binding(dev, false);
	log_warn("binding %s: %.*s", t->name, (int)strcspn(t->text, "\n"), t->text);
	keep_report(b, dev, t->text, false, complete && req.action != DM_BIND_DEFAULT, !complete);
	dm_journal_drop_txn(b->journal, j->devpath);
	*ret_recovered = true;
	free(t);
	dm_device_unref(dev);
}

/* A group move a killed daemon left: complete when its device is bound to
 * the driver, else each member put back (dm_binding_restore(), as the live
 * rollback does). */
static void recover_group(struct dm_binder *b, struct dm_model *m, const struct dm_journal_group *g)
{
	struct dm_device *dev = dm_model_find_devpath(m, g->devpath);
	char devdir[PATH_MAX], now[256] = "", text[REPORT_MAX];
	size_t len = 0;
	text[0] = '\0';
	snprintf(devdir, sizeof(devdir), "%s%.4000s", b->sysfs, g->devpath);
	driver_of(devdir, now, sizeof(now));
	bool complete = dev && strcmp(now, g->driver) == 0;
	char line[1024];
	snprintf(line, sizeof(line), "recovered at start: group move to %s %s\n", g->driver,
		 complete ? "completed (the device is bound to it)" : "rolled back");
	dm_report_append(text, sizeof(text), &len, line);
	for (size_t i = 0; !complete && i < g->n; i++) {
		struct dm_device *md = dm_model_find_devpath(m, g->members[i].devpath);
		struct dm_binding_saved before = { .had_override = g->members[i].had_override };
		snprintf(before.driver, sizeof(before.driver), "%s", g->members[i].old_driver);
		int back = md ? dm_binding_restore(b, md, &before, true) : -ENODEV;
		snprintf(line, sizeof(line), "group: %s back to %s: %s\n",
			 strrchr(g->members[i].devpath, '/') + 1,
			 before.driver[0] ? before.driver : "no driver", back < 0 ? strerror(-back) : "ok");
		dm_report_append(text, sizeof(text), &len, line);
		if (md)
			dm_device_unref(md);
	}
	log_warn("binding journal: %s: %s", g->devpath, text);
	if (dev) {
		keep_report(b, dev, text, true, complete, !complete);
		dm_device_unref(dev);
	}
	dm_journal_drop_group(b->journal, g->devpath);
}

int dm_binding_recover(struct dm_binder *b, struct dm_model *m, char *why, size_t size)
{
	struct dm_journal_txn *txns;
	struct dm_journal_group *groups;
	size_t nt, ng;
	int r = dm_journal_load(b->journal, &txns, &nt, &groups, &ng, why, size);
	if (r < 0)
		return r;
	int n = 0;
	for (size_t i = 0; i < nt; i++) {
		bool done;
		recover_txn(b, m, &txns[i], &done);
		n += done;
	}
	for (size_t i = 0; i < ng; i++) {
		recover_group(b, m, &groups[i]);
		n++;
	}
	free(txns);
	free(groups);
	return n;
}
