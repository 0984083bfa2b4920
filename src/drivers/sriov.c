/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sriov.c - SR-IOV virtual functions as one transaction (see sriov.h). */
#include "sriov.h"

#include "binding.h"
#include "inuse.h"
#include "journal.h"
#include "kernel.h"
#include "report.h"
#include "runner.h"
#include "util/log.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REPORT_MAX 16384
#define NAME_MAX_ 64

/* ---- reports, one per PF that had a request ---- */

struct report {
	char *devpath;
	bool running;
	unsigned long seq;
	char text[REPORT_MAX], pub[REPORT_MAX];
};

/* the metrics */
enum { RES_OK, RES_REFUSED, RES_PENDING, RES_INVALID, RES_FAILED, N_RES };

/* SR-IOV's state, its binder's (dm_binder_sriov()): one binder, one set
 * of reports and counts. */
struct dm_sriov_state {
	struct dm_report_table reports; /* struct report, by devpath */
	atomic_uint_fast64_t results[N_RES], vfs_bound;
};

int dm_sriov_state_new(struct dm_sriov_state **ret)
{
	struct dm_sriov_state *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->reports = (struct dm_report_table)DM_REPORT_TABLE_INIT(struct report);
	*ret = s;
	return 0;
}

void dm_sriov_state_free(struct dm_sriov_state *s)
{
	if (!s)
		return;
	dm_report_table_clear(&s->reports);
	pthread_mutex_destroy(&s->reports.lock);
	free(s);
}

/* ---- the transaction ---- */

/* A VF as it was, to be put back. */
struct vf {
	char name[NAME_MAX_];
	char driver[NAME_MAX_]; /* "" none */
	char override[NAME_MAX_]; /* "" none */
	bool moved; /* (the count kept) moved by this request */
};

struct txn {
	struct dm_device *pf;
	/* the binder (binding.h): its sysfs root, its kernel's writes, its
	 * journal */
	struct dm_binder *b;
	struct dm_journal *journal;
	const struct dm_sriov_request *req;
	struct dm_model *m;
	char devdir[PATH_MAX];
	const char *name;
	long total, old_count;
	long autoprobe; /* -1: no such file */
	struct vf *old; /* the VFs before, old_count of them */
	/* done, for the rollback */
	bool autoprobe_off, disabled, enabled;
	bool pending;
	int bound; /* VFs bound by the request */
	/* the journal's entry (journal.h): written before the first write,
	 * its step moved on before each step's, dropped at the end */
	struct dm_journal_sriov *jr;
	bool journaled;
	char text[REPORT_MAX], pub[REPORT_MAX];
	struct dm_report_text rt; /* writes text and pub */
};

#define say(t, ...) dm_report_say(&(t)->rt, __VA_ARGS__)
#define say_private(t, full, pub) dm_report_private(&(t)->rt, full, pub)

static struct txn *txn_new(void)
{
	struct txn *t = calloc(1, sizeof(*t));
	if (t)
		t->rt = (struct dm_report_text){ .text = t->text, .pub = t->pub, .size = REPORT_MAX };
	return t;
}

static bool is_driver_name(const char *s)
{
	return strlen(s) <= DM_KERNEL_DRIVER_NAME_MAX && dm_name_is_plain(s, strlen(s));
}

/* A decimal number in @dir/@file, or -1. */
static long read_number(const char *dir, const char *file)
{
	char path[PATH_MAX + 64], buf[32], *end;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (dm_run_read(path, buf, sizeof(buf)) < 0 || !buf[0])
		return -1;
	errno = 0;
	long v = strtol(buf, &end, 10);
	return end == buf || (*end && *end != '\n') || errno || v < 0 ? -1 : v;
}

/* The sysfs directory of VF @name (<sysfs>/bus/pci/devices/NAME). */
static void vf_dir(const struct txn *t, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%s/bus/pci/devices/%s", dm_binder_sysfs(t->b), name);
}

/* VF @i of the PF (its virtfnI link) into @v; false when there is none. */
static bool vf_at(const struct txn *t, long i, struct vf *v)
{
	char link[32], dir[PATH_MAX], path[PATH_MAX + 32];
	*v = (struct vf){ 0 };
	snprintf(link, sizeof(link), "virtfn%ld", i);
	dm_run_read_link_base(t->devdir, link, v->name, sizeof(v->name));
	if (!v->name[0] || !dm_name_is_plain(v->name, strlen(v->name)))
		return false;
	vf_dir(t, v->name, dir, sizeof(dir));
	dm_run_read_link_base(dir, "driver", v->driver, sizeof(v->driver));
	snprintf(path, sizeof(path), "%s/driver_override", dir);
	if (dm_run_read(path, v->override, sizeof(v->override)) < 0 ||
	    strcmp(v->override, "(null)") == 0)
		v->override[0] = '\0';
	return true;
}

static int write_value(struct txn *t, const char *path, const char *value, int timeout_ms)
{
	char label[256];
	snprintf(label, sizeof(label), "sriov %.64s", t->name);
	int r = dm_binder_write(t->b, label, path, value, timeout_ms);
	if (r == -ETIMEDOUT)
		t->pending = true;
	return r;
}

static int write_pf(struct txn *t, const char *file, const char *value, int timeout_ms)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", t->devdir, file);
	return write_value(t, path, value, timeout_ms);
}

static int write_count(struct txn *t, long n)
{
	char value[32];
	snprintf(value, sizeof(value), "%ld", n);
	return write_pf(t, "sriov_numvfs", value, DM_SRIOV_TIMEOUT_MS);
}

static int write_autoprobe(struct txn *t, long v)
{
	return write_pf(t, "sriov_drivers_autoprobe", v ? "1" : "0", DM_BIND_TIMEOUT_MS);
}

static int vf_write(struct txn *t, const char *name, const char *file, const char *value)
{
	char path[PATH_MAX + 64];
	if (strcmp(file, "driver_override") == 0)
		snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/driver_override",
			 dm_binder_sysfs(t->b), name);
	else
		snprintf(path, sizeof(path), "%s/bus/pci/drivers/%s", dm_binder_sysfs(t->b), file);
	return write_value(t, path, value, DM_BIND_TIMEOUT_MS);
}

/* VF @name to @driver (override set, unbound from another, bound,
 * verified); 0 or the -errno of the step, said in the report. */
static int vf_bind(struct txn *t, const char *name, const char *driver)
{
	char dir[PATH_MAX], now[NAME_MAX_], file[NAME_MAX_ + 16];
	vf_dir(t, name, dir, sizeof(dir));
	int r = vf_write(t, name, "driver_override", driver);
	const char *step = "driver_override";
	dm_run_read_link_base(dir, "driver", now, sizeof(now));
	if (r == 0 && now[0] && strcmp(now, driver) != 0) {
		snprintf(file, sizeof(file), "%s/unbind", now);
		step = "unbind";
		r = vf_write(t, name, file, name);
	}
	dm_run_read_link_base(dir, "driver", now, sizeof(now));
	if (r == 0 && strcmp(now, driver) != 0) {
		snprintf(file, sizeof(file), "%s/bind", driver);
		step = "bind";
		r = vf_write(t, name, file, name);
	}
	dm_run_read_link_base(dir, "driver", now, sizeof(now));
	if (r == 0 && strcmp(now, driver) != 0) {
		step = "verify";
		r = -ENODEV;
	}
	if (r < 0)
		say(t, "failed: bind VF %s to %s: %s: %s (%s)\n", name, driver, step, strerror(-r),
		    strerrorname_np(-r));
	else
		say(t, "bind VF %s to %s: ok\n", name, driver);
	return r;
}

/* VF @v put back as it was: its override, and its driver (or none). */
static void vf_put_back(struct txn *t, const struct vf *v)
{
	char dir[PATH_MAX], now[NAME_MAX_], file[NAME_MAX_ + 16];
	vf_dir(t, v->name, dir, sizeof(dir));
	int r = vf_write(t, v->name, "driver_override", v->override[0] ? v->override : "\n");
	dm_run_read_link_base(dir, "driver", now, sizeof(now));
	if (now[0] && strcmp(now, v->driver) != 0) {
		snprintf(file, sizeof(file), "%s/unbind", now);
		int u = vf_write(t, v->name, file, v->name);
		r = r < 0 ? r : u;
	}
	dm_run_read_link_base(dir, "driver", now, sizeof(now));
	if (v->driver[0] && strcmp(now, v->driver) != 0) {
		snprintf(file, sizeof(file), "%s/bind", v->driver);
		int b = vf_write(t, v->name, file, v->name);
		r = r < 0 ? r : b;
	}
	dm_run_read_link_base(dir, "driver", now, sizeof(now));
	say(t, "rollback: VF %s back to %s (driver_override %s): %s\n", v->name,
	    v->driver[0] ? v->driver : "no driver", v->override[0] ? v->override : "(none)",
	    r < 0 ? strerror(-r) : strcmp(now, v->driver) == 0 ? "ok" : "not bound as it was");
}

/* The PF's count and VFs now, a line. */
static void say_state(struct txn *t, const char *head)
{
	char line[4096];
	size_t len = 0;
	long n = read_number(t->devdir, "sriov_numvfs");
	line[0] = '\0';
	for (long i = 0; i < n && i < 64; i++) {
		struct vf v;
		if (!vf_at(t, i, &v))
			break;
		char one[160];
		snprintf(one, sizeof(one), " %s=%s", v.name, v.driver[0] ? v.driver : "none");
		dm_report_append(line, sizeof(line), &len, one);
	}
	say(t, "%s: %ld VF%s%s%s\n", head, n, n == 1 ? "" : "s", len ? ":" : "", line);
}

/* Everything done undone, last first: the new VFs gone, autoprobe as it
 * was, the old count made again and each old VF's binding put back. */
static void roll_back(struct txn *t)
{
	int r;
	if (t->pending) {
		say(t, "pending: a write did not return in time; the kernel may still finish it "
		       "(nothing undone)\n");
		return;
	}
	for (long i = 0; !t->enabled && i < t->old_count; i++)
		if (t->old[i].moved)
			vf_put_back(t, &t->old[i]);
	if (t->enabled) {
		r = write_count(t, 0);
		say(t, "rollback: sriov_numvfs <- 0: %s\n", r < 0 ? strerror(-r) : "ok");
	}
	if (t->autoprobe_off) {
		r = write_autoprobe(t, t->autoprobe);
		say(t, "rollback: sriov_drivers_autoprobe <- %ld: %s\n", t->autoprobe,
		    r < 0 ? strerror(-r) : "ok");
	}
	if (t->disabled && t->old_count > 0) {
		r = write_count(t, t->old_count);
		say(t, "rollback: sriov_numvfs <- %ld: %s\n", t->old_count, r < 0 ? strerror(-r) : "ok");
		for (long i = 0; r == 0 && i < t->old_count; i++) {
			struct vf now;
			if (!vf_at(t, i, &now) || strcmp(now.name, t->old[i].name) != 0)
				continue;
			if (strcmp(now.driver, t->old[i].driver) != 0 ||
			    strcmp(now.override, t->old[i].override) != 0)
				vf_put_back(t, &t->old[i]);
		}
	}
	say_state(t, "after rollback");
}

static int failed(struct txn *t, const char *step, int r)
{
	if (r == -ETIMEDOUT || t->pending) {
		t->pending = true;
		say(t, "pending: %s did not return in time; the kernel may still finish it, and its "
		       "uevents will show the outcome (nothing undone)\n",
		    step ? step : "bind VF");
		return -EINPROGRESS;
	}
	if (step)
		say(t, "failed: %s: %s (%s)\n", step, strerror(-r), strerrorname_np(-r));
	roll_back(t);
	return r;
}

/* What stands against the VFs that go (all of them, when the count
 * changes) or move (those not on the driver): each reason a line; 0 or
 * -EBUSY. */
static int vetoes(struct txn *t, bool count_changes)
{
	int n = 0;
	struct dm_binder *b = dm_binder_of(t->pf); /* its Protect= */
	for (long i = 0; i < t->old_count; i++) {
		const struct vf *v = &t->old[i];
		if (!count_changes && (!t->req->driver || strcmp(v->driver, t->req->driver) == 0))
			continue;
		if (!count_changes && !v->driver[0])
			continue;
		const char *why = count_changes ? "removed by the new count" : "moved";
		if (dm_binder_is_protected(b, v->name)) {
			say(t, "in use: VF %s (%s) is protected (driverfsd.conf, Protect=)\n", v->name,
			    why);
			n++;
		}
		if (v->driver[0] && dm_binder_is_protected(b, v->driver)) {
			say(t, "in use: VF %s (%s): its driver %s is protected (driverfsd.conf, "
			       "Protect=)\n",
			    v->name, why, v->driver);
			n++;
		}
		struct dm_device *dev = dm_model_find_on_bus(t->m, "pci", v->name);
		if (!dev)
			continue; /* not in the tree: nothing the daemon knows of uses it */
		char *reasons = calloc(1, REPORT_MAX), *pub = calloc(1, REPORT_MAX);
		int r = reasons && pub ? dm_binder_inuse_check(b, dev, reasons, REPORT_MAX, pub, REPORT_MAX)
				       : -ENOMEM;
		dm_device_unref(dev);
		if (r < 0) {
			say(t, "in use: VF %s: cannot tell (%s)\n", v->name, strerror(-r));
			n++;
		} else if (r > 0) {
			say(t, "VF %s (%s):\n", v->name, why);
			say_private(t, reasons, pub);
			n += r;
		}
		free(reasons);
		free(pub);
	}
	return n ? -EBUSY : 0;
}

static const char *const step_names[] = {
	[DM_SRIOV_STEP_CHECK] = "check",     [DM_SRIOV_STEP_AUTOPROBE] = "autoprobe",
	[DM_SRIOV_STEP_DISABLE] = "disable", [DM_SRIOV_STEP_ENABLE] = "enable",
	[DM_SRIOV_STEP_BIND] = "bind VF",    [DM_SRIOV_STEP_VERIFY] = "verify",
};

/* The journal's entry of @t, its step now @step, written durably before
 * that step's write; 0 or -errno (the report says why). */
static int journal_step(struct txn *t, enum dm_sriov_step step)
{
	char why[256];
	t->jr->step = (int)step;
	int r = dm_journal_put_sriov(t->journal, t->jr, why, sizeof(why));
	if (r < 0)
		say(t, "journal %s: %s\n", dm_journal_path(t->journal), why);
	return r;
}

/* Before the first write: what the transaction found (the count, the
 * autoprobe, each VF's driver and driver_override) and what it asks,
 * recorded; refused (nothing written) when it cannot be. */
static int journal_begin(struct txn *t)
{
	struct dm_journal_sriov *j = t->jr = calloc(1, sizeof(*t->jr));
	int r = -ENOMEM;
	if (j) {
		snprintf(j->devpath, sizeof(j->devpath), "%s",
			 t->devdir + strlen(dm_binder_sysfs(t->b)));
		snprintf(j->name, sizeof(j->name), "%s", t->name);
		j->old_count = t->old_count;
		j->autoprobe = t->autoprobe < 0 ? -1 : t->autoprobe > 0;
		j->numvfs = (long)t->req->numvfs;
		snprintf(j->driver, sizeof(j->driver), "%s", t->req->driver ? t->req->driver : "");
		j->n = (size_t)t->old_count;
		for (size_t i = 0; i < j->n && i < DM_JOURNAL_VFS_MAX; i++) {
			snprintf(j->vfs[i].name, sizeof(j->vfs[i].name), "%s", t->old[i].name);
			snprintf(j->vfs[i].driver, sizeof(j->vfs[i].driver), "%s", t->old[i].driver);
			snprintf(j->vfs[i].override, sizeof(j->vfs[i].override), "%s",
				 t->old[i].override);
		}
		r = journal_step(t, DM_SRIOV_STEP_CHECK);
	} else {
		say(t, "journal %s: %s\n", dm_journal_path(t->journal), strerror(ENOMEM));
	}
	if (r < 0) {
		say(t, "refused: the transaction cannot be recorded, and a daemon killed in its "
		       "middle would leave the PF's VFs half-made (nothing written)\n");
		return r;
	}
	t->journaled = true;
	return 0;
}

static int run(struct txn *t)
{
	const struct dm_sriov_request *req = t->req;
	long n = (long)req->numvfs;
	char drv[NAME_MAX_];
	dm_run_read_link_base(t->devdir, "driver", drv, sizeof(drv));
	say(t, "device %s, bound to %s, %ld of %ld VFs, sriov_drivers_autoprobe %s\n", t->name,
	    drv[0] ? drv : "no driver", t->old_count, t->total,
	    t->autoprobe < 0 ? "(none)" : t->autoprobe ? "1" : "0");
	for (long i = 0; i < t->old_count; i++)
		say(t, "VF %s: %s%s%s\n", t->old[i].name,
		    t->old[i].driver[0] ? t->old[i].driver : "no driver",
		    t->old[i].override[0] ? ", driver_override " : "", t->old[i].override);
	say(t, "request: %ld VF%s%s%s%s%s\n", n, n == 1 ? "" : "s",
	    req->driver ? " bound to " : "", req->driver ? req->driver : "",
	    req->force ? ", forced" : "", req->dry_run ? ", dry run" : "");

	bool count_changes = n != t->old_count;
	int refusal = 0;
	if (!drv[0] && count_changes) {
		say(t, "refused: the PF has no driver, and the kernel takes a VF count only from "
		       "a PF driver that can configure SR-IOV\n");
		if (!req->dry_run)
			return -ENOENT;
		refusal = -ENOENT;
	}
	int veto = vetoes(t, count_changes);
	if (veto < 0 && !req->force && !req->dry_run) {
		say(t, "refused: in use (force proceeds)\n");
		return veto;
	}
	if (veto < 0 && req->force && !req->dry_run) {
		say(t, "forced: proceeding although in use\n");
		log_warn("sriov %s: root forced %ld VFs past the in-use checks", t->name, n);
	}
	bool autoprobe_off = req->driver && n > 0 && count_changes && t->autoprobe > 0;
	if (autoprobe_off)
		say(t, "plan: sriov_drivers_autoprobe <- 0 (no native driver takes the new VFs)\n");
	if (count_changes && t->old_count > 0)
		say(t, "plan: sriov_numvfs <- 0 (the kernel changes a non-zero count only through "
		       "0)\n");
	if (count_changes && n > 0)
		say(t, "plan: sriov_numvfs <- %ld\n", n);
	if (req->driver && n > 0)
		say(t, "plan: bind %s VF%s to %s\n", count_changes ? "the new" : "the",
		    n == 1 ? "" : "s", req->driver);
	if (autoprobe_off)
		say(t, "plan: sriov_drivers_autoprobe <- %ld\n", t->autoprobe);
	if (req->dry_run) {
		if (refusal || veto < 0)
			say(t, "dry run: nothing written; refused: %s%s%s\n",
			    refusal ? "the PF has no driver" : "", refusal && veto < 0 ? ", " : "",
			    veto < 0 ? (req->force ? "in use (forced)" : "in use (force proceeds)")
				     : "");
		else
			say(t, "dry run: nothing written\n");
		return refusal ? refusal : veto < 0 && !req->force ? veto : 0;
	}

	int r;
	if (!count_changes && !req->driver) {
		say(t, "done: already %ld VF%s\n", n, n == 1 ? "" : "s");
		return 0;
	}
	if ((r = journal_begin(t)) < 0)
		return r;
	if (autoprobe_off) {
		if ((r = journal_step(t, DM_SRIOV_STEP_AUTOPROBE)) < 0)
			return failed(t, "autoprobe", r);
		r = write_autoprobe(t, 0);
		if (r < 0)
			return failed(t, "autoprobe", r);
		t->autoprobe_off = true;
	}
	if (count_changes && t->old_count > 0) {
		if ((r = journal_step(t, DM_SRIOV_STEP_DISABLE)) < 0)
			return failed(t, "disable", r);
		r = write_count(t, 0);
		if (r < 0)
			return failed(t, "disable", r);
		t->disabled = true;
	}
	if (count_changes && n > 0) {
		if ((r = journal_step(t, DM_SRIOV_STEP_ENABLE)) < 0)
			return failed(t, "enable", r);
		r = write_count(t, n);
		/* the kernel tears down what it made when it fails */
		if (r < 0)
			return failed(t, "enable", r);
		t->enabled = true;
		long now = read_number(t->devdir, "sriov_numvfs");
		if (now != n) {
			say(t, "sriov_numvfs reads %ld\n", now);
			return failed(t, "enable", -EIO);
		}
	}
	if (req->driver && n > 0 && (r = journal_step(t, DM_SRIOV_STEP_BIND)) < 0)
		return failed(t, "bind VF", r);
	for (long i = 0; req->driver && i < n; i++) {
		struct vf v;
		if (!vf_at(t, i, &v)) {
			say(t, "VF %ld: no virtfn%ld link\n", i, i);
			return failed(t, "bind VF", -ENODEV);
		}
		if (strcmp(v.driver, req->driver) == 0 && strcmp(v.override, req->driver) == 0)
			continue;
		if (!count_changes && i < t->old_count)
			t->old[i].moved = true;
		r = vf_bind(t, v.name, req->driver);
		if (r < 0)
			return failed(t, NULL, r);
		t->bound++;
	}
	/* verified: the count read back, each VF's driver link; past this a
	 * daemon killed is completed at start */
	if ((r = journal_step(t, DM_SRIOV_STEP_VERIFY)) < 0)
		return failed(t, "verify", r);
	if (t->autoprobe_off) {
		r = write_autoprobe(t, t->autoprobe);
		if (r < 0)
			return failed(t, "autoprobe", r);
		t->autoprobe_off = false;
	}
	say_state(t, "done");
	return 0;
}

static const char *const result_names[N_RES] = {
	[RES_OK] = "ok",	     [RES_REFUSED] = "refused", [RES_PENDING] = "pending",
	[RES_INVALID] = "invalid", [RES_FAILED] = "failed",
};
void dm_sriov_metrics(struct dm_metrics *w, void *data)
{
	struct dm_sriov_state *s = dm_binder_sriov(data);
	dm_metrics_family(w, "driverfsd_sriov_requests_total", "counter",
			  "SR-IOV requests (dry runs aside), by result: refused (a VF in use, "
			  "EBUSY), pending (EINPROGRESS), invalid (no SR-IOV PF, a count above "
			  "its total, no such driver), failed (a step failed and was rolled "
			  "back).");
	for (size_t i = 0; i < N_RES; i++)
		dm_metrics_sample(w, "driverfsd_sriov_requests_total",
				  (double)atomic_load_explicit(&s->results[i], memory_order_relaxed),
				  "result", result_names[i], NULL);
	dm_metrics_family(w, "driverfsd_sriov_vfs_bound_total", "counter",
			  "VFs SR-IOV requests bound to the driver they named (those of a "
			  "request rolled back too).");
	dm_metrics_sample(w, "driverfsd_sriov_vfs_bound_total",
			  (double)atomic_load_explicit(&s->vfs_bound, memory_order_relaxed), NULL);
}

/* Counted as @b's (NULL: nowhere). */
static void count_result(struct dm_binder *b, const struct dm_sriov_request *req, int r,
			 bool invalid)
{
	if (req->dry_run || !b)
		return;
	atomic_fetch_add_explicit(&dm_binder_sriov(b)->results[r == 0		  ? RES_OK
					   : invalid		  ? RES_INVALID
					   : r == -EBUSY	  ? RES_REFUSED
					   : r == -EINPROGRESS ? RES_PENDING
								 : RES_FAILED],
				  1, memory_order_relaxed);
}

int dm_sriov_request(struct dm_device *pf, const struct dm_sriov_request *req)
{
	const char *devpath = dm_device_get_devpath(pf);
	const char *name = dm_device_get_sysname(pf);
	struct dm_model *m = dm_device_get_model(pf);
	dm_model_read_lock(m);
	struct dm_bus *bus = dm_device_get_bus_locked(pf);
	bool pci = bus && strcmp(dm_bus_get_name(bus), "pci") == 0;
	dm_model_unlock(m);
	/* the binder's journal records it, its state counts it (binding.h) */
	struct dm_binder *b = dm_binder_of(pf);
	if (!devpath || !name || !pci) {
		count_result(b, req, -EOPNOTSUPP, true);
		return -EOPNOTSUPP;
	}
	if (req->driver && !is_driver_name(req->driver)) {
		count_result(b, req, -EINVAL, true);
		return -EINVAL;
	}
	if (!b) {
		count_result(b, req, -EOPNOTSUPP, true);
		return -EOPNOTSUPP;
	}
	struct txn *t = txn_new();
	if (!t)
		return -ENOMEM;
	t->pf = pf;
	t->b = b;
	t->journal = dm_binder_journal(b);
	t->req = req;
	t->m = m;
	t->name = name;
	snprintf(t->devdir, sizeof(t->devdir), "%s%.4000s", dm_binder_sysfs(b), devpath);
	t->total = read_number(t->devdir, "sriov_totalvfs");
	t->old_count = read_number(t->devdir, "sriov_numvfs");
	t->autoprobe = read_number(t->devdir, "sriov_drivers_autoprobe");
	char path[PATH_MAX + 32];
	struct stat st;
	int invalid = t->total < 0 || t->old_count < 0 ? -EOPNOTSUPP
		      : (long)req->numvfs > t->total	   ? -ERANGE
							   : 0;
	if (!invalid && req->driver) {
		snprintf(path, sizeof(path), "%s/bus/pci/drivers/%s", dm_binder_sysfs(b), req->driver);
		if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			invalid = -EINVAL;
	}
	if (invalid) {
		free(t);
		count_result(b, req, invalid, true);
		return invalid;
	}
	t->old = calloc((size_t)t->old_count + 1, sizeof(*t->old));
	if (!t->old) {
		free(t);
		return -ENOMEM;
	}
	long found = 0;
	while (found < t->old_count && vf_at(t, found, &t->old[found]))
		found++;
	t->old_count = found; /* (the links the kernel has) */

	struct dm_report_table *reports = &dm_binder_sriov(b)->reports;
	pthread_mutex_lock(&reports->lock);
	struct report *rep = dm_report_table_get_locked(reports, devpath);
	bool busy = rep && rep->running;
	if (rep && !busy)
		rep->running = true;
	pthread_mutex_unlock(&reports->lock);
	if (!rep || busy) {
		free(t->old);
		free(t);
		count_result(b, req, -EINPROGRESS, false);
		return rep ? -EINPROGRESS : -ENOMEM;
	}

	if (!req->dry_run)
		dm_device_set_binding(pf, true);
	int r = run(t);
	/* the transaction ended (done, or rolled back): its entry goes; a
	 * step pending keeps it, marked, for the next start to decide */
	if (t->journaled && t->pending) {
		char why[256];
		t->jr->pending = true;
		if (dm_journal_put_sriov(t->journal, t->jr, why, sizeof(why)) < 0)
			log_warn("sriov %s: journal %s: %s", name, dm_journal_path(t->journal), why);
	} else if (t->journaled) {
		dm_journal_drop_sriov(t->journal, devpath);
	}
	free(t->jr);
	if (!req->dry_run)
		dm_device_set_binding(pf, false);
	if (!req->dry_run)
		atomic_fetch_add_explicit(&dm_binder_sriov(b)->vfs_bound, (uint_fast64_t)t->bound, memory_order_relaxed);
	if (r == 0 && req->persist && !req->dry_run) {
		char why[128];
		int p = dm_binder_persist_sriov(dm_binder_of(pf), pf, name, (int)req->numvfs, req->driver, why,
						   sizeof(why));
		say(t, p < 0 ? "persisted: no (%s)\n" : "persisted: %s\n",
		    p < 0 ? (*why ? why : strerror(-p)) : "yes");
		if (p < 0)
			r = p;
	}
	if (r == 0 && req->forget && !req->dry_run) {
		char why[128];
		int p = dm_binder_persist_sriov(dm_binder_of(pf), pf, name, -1, NULL, why, sizeof(why));
		say(t, p < 0 ? "persisted: not forgotten (%s)\n" : "persisted: forgotten\n",
		    p < 0 ? (*why ? why : strerror(-p)) : "");
		if (p < 0)
			r = p;
	}
	if (!req->dry_run && r < 0)
		log_warn("sriov %s: %u VFs: %s", name, req->numvfs, strerror(-r));
	else if (!req->dry_run)
		log_info("sriov %s: %u VFs%s%s", name, req->numvfs, req->driver ? " on " : "",
			 req->driver ? req->driver : "");
	count_result(b, req, r, false);
	pthread_mutex_lock(&reports->lock);
	memcpy(rep->text, t->text, t->rt.len + 1);
	memcpy(rep->pub, t->pub, t->rt.pub_len + 1);
	rep->seq++;
	rep->running = false;
	pthread_mutex_unlock(&reports->lock);
	free(t->old);
	free(t);
	return r;
}

/* ---- recovery at start: what a killed daemon's journal left ---- */

/* Whether the PF has the count @j asked for, each VF on its driver. */
static bool as_requested(struct txn *t, const struct dm_journal_sriov *j)
{
	if (read_number(t->devdir, "sriov_numvfs") != j->numvfs)
		return false;
	for (long i = 0; j->driver[0] && i < j->numvfs; i++) {
		struct vf v;
		if (!vf_at(t, i, &v) || strcmp(v.driver, j->driver) != 0 ||
		    strcmp(v.override, j->driver) != 0)
			return false;
	}
	return true;
}

/* The report of a recovery kept as @devpath's last request's (its
 * binder's). */
static void keep_report(const char *devpath, const struct txn *t)
{
	struct dm_report_table *reports = &dm_binder_sriov(t->b)->reports;
	pthread_mutex_lock(&reports->lock);
	struct report *rep = dm_report_table_get_locked(reports, devpath);
	if (rep) {
		memcpy(rep->text, t->text, t->rt.len + 1);
		memcpy(rep->pub, t->pub, t->rt.pub_len + 1);
		rep->seq++;
	}
	pthread_mutex_unlock(&reports->lock);
}

/* One SR-IOV transaction a killed daemon left: completed when it had
 * reached its verify step (or its last step was pending) and the PF is as
 * requested (only the autoprobe put back), else rolled back by the live
 * path's roll_back(), told what was done by what it finds. */
static void recover_one(struct dm_binder *b, struct dm_model *m, const struct dm_journal_sriov *j)
{
	struct dm_journal *journal = dm_binder_journal(b);
	const char *step = j->step >= 0 && j->step <= DM_JOURNAL_SRIOV_STEP_MAX
				   ? step_names[j->step]
				   : "?";
	struct dm_device *pf = dm_model_find_devpath(m, j->devpath);
	if (!pf) {
		log_warn("binding journal: %s: an SR-IOV transaction the daemon died in (at step "
			 "%s) and the PF is gone; nothing to do",
			 j->devpath, step);
		dm_journal_drop_sriov(journal, j->devpath);
		return;
	}
	struct txn *t = txn_new();
	struct dm_sriov_request req = { .numvfs = (unsigned)j->numvfs,
					.driver = j->driver[0] ? j->driver : NULL };
	if (t)
		t->old = calloc(j->n + 1, sizeof(*t->old));
	if (!t || !t->old) {
		if (t)
			free(t);
		dm_device_unref(pf);
		return; /* left in the journal for the next start */
	}
	t->pf = pf;
	t->b = b;
	t->journal = journal;
	t->req = &req;
	t->m = m;
	t->name = j->name;
	snprintf(t->devdir, sizeof(t->devdir), "%s%.4000s", dm_binder_sysfs(b), j->devpath);
	t->old_count = (long)j->n;
	t->autoprobe = j->autoprobe;
	/* what the journal says is written to sysfs: names, not paths */
	bool sane = (!j->driver[0] || is_driver_name(j->driver)) && j->old_count == (long)j->n;
	for (size_t i = 0; i < j->n; i++) {
		struct vf *v = &t->old[i];
		snprintf(v->name, sizeof(v->name), "%s", j->vfs[i].name);
		snprintf(v->driver, sizeof(v->driver), "%s", j->vfs[i].driver);
		snprintf(v->override, sizeof(v->override), "%s", j->vfs[i].override);
		sane = sane && dm_name_is_plain(v->name, strlen(v->name)) &&
		       (!v->driver[0] || is_driver_name(v->driver)) &&
		       (!v->override[0] || is_driver_name(v->override));
	}
	dm_device_set_binding(pf, true);
	bool complete = sane && (j->step == DM_SRIOV_STEP_VERIFY || j->pending) && as_requested(t, j);
	long autoprobe_now = read_number(t->devdir, "sriov_drivers_autoprobe");
	if (!sane) {
		say(t, "recovered at start: nothing done: the journal's entry (at step %s) names "
		       "what is no VF or driver\n",
		    step);
	} else if (complete) {
		say(t, "recovered at start: completed: the daemon died at step %s%s; the PF has %ld "
		       "VF%s%s%s as requested\n",
		    step, j->pending ? " (pending)" : "", j->numvfs, j->numvfs == 1 ? "" : "s",
		    j->driver[0] ? " on " : "", j->driver);
		if (j->autoprobe >= 0 && autoprobe_now >= 0 && autoprobe_now != j->autoprobe) {
			int r = write_autoprobe(t, j->autoprobe);
			say(t, "sriov_drivers_autoprobe <- %d: %s\n", j->autoprobe,
			    r < 0 ? strerror(-r) : "ok");
		}
		say_state(t, "done");
	} else {
		say(t, "recovered at start: rolled back after the daemon died at step %s%s\n", step,
		    j->pending ? " (pending)" : "");
		say(t, "device %s, was: %ld VF%s, sriov_drivers_autoprobe %s; request: %ld VF%s%s%s\n",
		    t->name, j->old_count, j->old_count == 1 ? "" : "s",
		    j->autoprobe < 0 ? "(none)" : j->autoprobe ? "1" : "0", j->numvfs,
		    j->numvfs == 1 ? "" : "s", j->driver[0] ? " bound to " : "", j->driver);
		/* what was done, as found: the count changed (made, or only
		 * removed), the autoprobe off, with the count kept VFs moved */
		long now = read_number(t->devdir, "sriov_numvfs");
		t->disabled = now != t->old_count;
		t->enabled = t->disabled && now > 0;
		t->autoprobe_off = j->autoprobe >= 0 && autoprobe_now >= 0 &&
				   autoprobe_now != j->autoprobe;
		for (long i = 0; !t->disabled && i < t->old_count; i++) {
			struct vf v;
			t->old[i].moved = vf_at(t, i, &v) && strcmp(v.name, t->old[i].name) == 0 &&
					  (strcmp(v.driver, t->old[i].driver) != 0 ||
					   strcmp(v.override, t->old[i].override) != 0);
		}
		roll_back(t);
	}
	dm_device_set_binding(pf, false);
	log_warn("sriov %s: %.*s", t->name, (int)strcspn(t->text, "\n"), t->text);
	keep_report(j->devpath, t);
	dm_journal_drop_sriov(journal, j->devpath);
	free(t->old);
	free(t);
	dm_device_unref(pf);
}

int dm_sriov_recover(struct dm_binder *b, struct dm_model *m)
{
	struct dm_journal_sriov *v;
	int n = dm_journal_sriov_entries(dm_binder_journal(b), &v);
	for (int i = 0; i < n; i++)
		recover_one(b, m, &v[i]);
	free(v);
	return n;
}

int dm_sriov_parse(char *buf, struct dm_sriov_request *req)
{
	*req = (struct dm_sriov_request){ 0 };
	size_t len = strlen(buf);
	if (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	bool first = true, have_driver = false;
	for (char *save = NULL, *word = strtok_r(buf, " ", &save); word;
	     word = strtok_r(NULL, " ", &save)) {
		if (first) {
			char *end;
			errno = 0;
			unsigned long v = strtoul(word, &end, 10);
			if (word[0] < '0' || word[0] > '9' || *end || errno || v > 65535)
				return -EINVAL;
			req->numvfs = (unsigned)v;
			first = false;
		} else if (strcmp(word, "force") == 0 && !req->force) {
			req->force = true;
		} else if (strcmp(word, "dry-run") == 0 && !req->dry_run) {
			req->dry_run = true;
		} else if (strcmp(word, "persist") == 0 && !req->persist && !req->forget) {
			req->persist = true;
		} else if (strcmp(word, "forget") == 0 && !req->persist && !req->forget) {
			req->forget = true;
		} else if (!have_driver && is_driver_name(word) && strcmp(word, "force") != 0 &&
			   strcmp(word, "dry-run") != 0 && strcmp(word, "persist") != 0 &&
			   strcmp(word, "forget") != 0) {
			have_driver = true;
			req->driver = strcmp(word, "default") == 0 ? NULL : word;
		} else {
			return -EINVAL;
		}
	}
	return first ? -EINVAL : 0;
}

int dm_sriov_status(struct dm_device *pf, bool details, char *buf, size_t size)
{
	const char *devpath = dm_device_get_devpath(pf);
	if (!size)
		return 0;
	buf[0] = '\0';
	struct dm_binder *b = dm_binder_of(pf);
	if (!devpath || !b)
		return 0;
	struct txn *t = txn_new();
	if (!t)
		return -ENOMEM;
	t->b = b;
	snprintf(t->devdir, sizeof(t->devdir), "%s%.4000s", dm_binder_sysfs(b), devpath);
	long total = read_number(t->devdir, "sriov_totalvfs");
	long autoprobe = read_number(t->devdir, "sriov_drivers_autoprobe");
	int n = snprintf(buf, size, "total: %ld\nautoprobe: %s\n", total,
			 autoprobe < 0 ? "(none)" : autoprobe ? "1" : "0");
	size_t len = n > 0 && (size_t)n < size ? (size_t)n : 0;
	say_state(t, "numvfs");
	dm_report_append(buf, size, &len, t->text);
	free(t);
	struct dm_report_table *reports = &dm_binder_sriov(b)->reports;
	pthread_mutex_lock(&reports->lock);
	struct report *r = dm_report_table_find_locked(reports, devpath);
	if (r && r->seq) {
		char head[64];
		snprintf(head, sizeof(head), "last request (#%lu):\n", r->seq);
		dm_report_append(buf, size, &len, head);
		dm_report_append(buf, size, &len, details ? r->text : r->pub);
	}
	pthread_mutex_unlock(&reports->lock);
	return (int)len;
}

/* ---- the device file ---- */

static int sriov_store(struct dm_device *dev, const struct dm_attribute *attr, const char *buf,
		       size_t len)
{
	(void)attr;
	char copy[256];
	struct dm_sriov_request req;
	if (len >= sizeof(copy))
		return -EINVAL;
	memcpy(copy, buf, len);
	copy[len] = '\0';
	int r = dm_sriov_parse(copy, &req);
	return r < 0 ? r : dm_sriov_request(dev, &req);
}

static int sriov_show(struct dm_device *dev, const struct dm_attribute *attr, char **ret,
		      size_t *ret_len)
{
	(void)attr;
	size_t size = REPORT_MAX + 8192;
	char *buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	int n = dm_sriov_status(dev, dm_attr_reader() == 0, buf, size);
	if (n < 0) {
		free(buf);
		return n;
	}
	*ret = buf;
	*ret_len = (size_t)n;
	return 0;
}

static const struct dm_attribute sriov_attr = {
	.name = "sriov", .mode = 0644, .flags = DM_ATTR_LIVE,
	.show_alloc = sriov_show, .store = sriov_store,
};
static const struct dm_attribute *const sriov_attrs[] = { &sriov_attr, NULL };

/* On a PCI function whose sysfs directory has sriov_totalvfs (a stat of
 * sysfs, under the lock, as the group contract allows). */
static bool sriov_visible(struct dm_device *dev, const struct dm_attribute *attr)
{
	(void)attr;
	struct dm_bus *bus = dm_device_get_bus_locked(dev);
	const char *devpath = dm_device_get_devpath(dev);
	struct dm_binder *b = dm_binder_of_locked(dev);
	char path[PATH_MAX];
	struct stat st;
	return devpath && bus && b && strcmp(dm_bus_get_name(bus), "pci") == 0 &&
	       (size_t)snprintf(path, sizeof(path), "%s%s/sriov_totalvfs", dm_binder_sysfs(b),
				devpath) < sizeof(path) &&
	       stat(path, &st) == 0;
}

const struct dm_attribute_group dm_sriov_group = {
	.attrs = sriov_attrs,
	.is_visible = sriov_visible,
};
