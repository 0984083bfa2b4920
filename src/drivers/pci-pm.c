/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "pci-pm.h"

#include "drivers/pci-access.h"
#include "util/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define HEADER_SIZE 64

struct pci_pm {
	pthread_mutex_t lock; /* one pci_access, hooks of several devices */
	struct pci_access *pa;
	char *sysfs_path; /* libpci's sysfs.path: where PCI functions are */
	void (*sleep_ms)(unsigned ms, void *ctx);
	void *ctx;
};

/* PCI PM 1.2, 5.6.1: after D3hot -> D0 the function may not be accessed
 * for 10 ms (its recovery time). */
#define D3HOT_RECOVERY_MS 10

/* What suspend saved, per device (its driver data). */
struct saved_config {
	uint8_t header[HEADER_SIZE];
	int pm_cap;
};

struct op {
	struct dm_device *dev;
	struct saved_config *saved;
	bool from_d3hot; /* resume_d0_fn: the function was in D3hot */
	/* the function's libpci handle, freed by run(): libpci's error hook
	 * may jump out of the op past any free of its own */
	struct pci_dev *pdev;
};

static struct pci_dev *get_dev(struct pci_access *pa, struct op *op)
{
	int domain, bus, slot, func;
	if (dm_pci_parse_slot(dm_device_get_name(op->dev), &domain, &bus, &slot, &func) < 0)
		return NULL;
	op->pdev = pci_get_dev(pa, domain, bus, slot, func);
	return op->pdev;
}

static int find_pm_cap(struct pci_dev *d)
{
	pci_fill_info(d, PCI_FILL_IDENT | PCI_FILL_CAPS);
	struct pci_cap *cap = pci_find_cap(d, PCI_CAP_ID_PM, PCI_CAP_NORMAL);
	return cap ? (int)cap->addr : -1;
}

static int probe_fn(struct pci_access *pa, void *data)
{
	struct op *op = data;
	struct pci_dev *d = get_dev(pa, op);
	if (!d)
		return -ENODEV;
	return find_pm_cap(d) < 0 ? -ENODEV : 0;
}

/* What suspend saves, before it changes anything. */
static int save_fn(struct pci_access *pa, void *data)
{
	struct op *op = data;
	struct pci_dev *d = get_dev(pa, op);
	if (!d)
		return -ENODEV;
	op->saved->pm_cap = find_pm_cap(d);
	if (op->saved->pm_cap < 0)
		return -ENODEV;
	return pci_read_block(d, 0, op->saved->header, HEADER_SIZE) ? 0 : -EIO;
}

/* PMCSR's power state field to @state (0: D0, 3: D3hot), its other bits kept. */
static int set_power_state(struct pci_dev *d, int pm_cap, uint16_t state)
{
	uint16_t pmcsr = pci_read_word(d, pm_cap + PCI_PM_CTRL);
	pmcsr = (pmcsr & ~PCI_PM_CTRL_STATE_MASK) | state;
	return pci_write_word(d, pm_cap + PCI_PM_CTRL, pmcsr) ? 0 : -EIO;
}

static int suspend_fn(struct pci_access *pa, void *data)
{
	struct op *op = data;
	struct pci_dev *d = get_dev(pa, op);
	return d ? set_power_state(d, op->saved->pm_cap, 3) : -ENODEV;
}

/* Whether the function at the address is the one suspend saved: its vendor
 * and device ID, and its PM capability where it was. A function replaced
 * meanwhile (a hot swap, a re-enumeration) must not get another device's
 * BARs. Config space can be read in D3hot. */
static int same_function(struct op *op, struct pci_dev *d)
{
	uint32_t saved_id;
	memcpy(&saved_id, op->saved->header + PCI_VENDOR_ID, 4);
	saved_id = le32toh(saved_id);
	uint32_t id = pci_read_long(d, PCI_VENDOR_ID);
	if (id != saved_id) {
		log_warn("%s: pci-pm: not the function it suspended (ID %04x:%04x, saved %04x:%04x): "
			 "its configuration is not restored",
			 dm_device_get_name(op->dev), id & 0xffff, id >> 16, saved_id & 0xffff,
			 saved_id >> 16);
		return -ENODEV;
	}
	int cap = find_pm_cap(d);
	if (cap != op->saved->pm_cap) {
		log_warn("%s: pci-pm: not the function it suspended (PM capability at %d, saved at "
			 "%#x): its configuration is not restored",
			 dm_device_get_name(op->dev), cap, (unsigned)op->saved->pm_cap);
		return -ENODEV;
	}
	return 0;
}

/* The function, when it is still the one suspend saved. */
static int get_saved_dev(struct pci_access *pa, struct op *op, struct pci_dev **ret)
{
	struct pci_dev *d = get_dev(pa, op);
	if (!d)
		return -ENODEV;
	int r = same_function(op, d);
	if (r == 0)
		*ret = d;
	return r;
}

/* Resume's first half: back to D0, if it is still the function suspended. */
static int resume_d0_fn(struct pci_access *pa, void *data)
{
	struct op *op = data;
	struct pci_dev *d = NULL;
	int r = get_saved_dev(pa, op, &d);
	if (r < 0)
		return r;
	uint16_t pmcsr = pci_read_word(d, op->saved->pm_cap + PCI_PM_CTRL);
	op->from_d3hot = (pmcsr & PCI_PM_CTRL_STATE_MASK) == 3;
	return set_power_state(d, op->saved->pm_cap, 0);
}

/* Resume's second half, once the function recovered: it may have lost its
 * configuration in D3hot, so the header is restored from the top down, the
 * command register (offset 4) last, so that decoding is enabled only once
 * the BARs are back. The function is checked again first: this is the
 * first access since the wait. */
static int restore_fn(struct pci_access *pa, void *data)
{
	struct op *op = data;
	struct pci_dev *d = NULL;
	int r = get_saved_dev(pa, op, &d);
	if (r < 0)
		return r;
	for (int off = HEADER_SIZE - 4; off >= 4; off -= 4) {
		uint32_t v;
		memcpy(&v, op->saved->header + off, 4);
		if (!pci_write_long(d, off, le32toh(v)))
			return -EIO;
	}
	return 0;
}

/* Runs @fn on the function of @op; with @err, libpci's messages are
 * quiet and its error goes there (dm_pci_guarded_quiet()). */
static int run_on(struct pci_pm *p, int (*fn)(struct pci_access *, void *), struct op *op,
		  char *err, size_t size)
{
	pthread_mutex_lock(&p->lock);
	op->pdev = NULL;
	int r = err ? dm_pci_guarded_quiet(p->pa, fn, op, err, size) : dm_pci_guarded(p->pa, fn, op);
	if (op->pdev)
		pci_free_dev(op->pdev);
	op->pdev = NULL;
	pthread_mutex_unlock(&p->lock);
	return r;
}

static int run(struct pci_pm *p, int (*fn)(struct pci_access *, void *), struct op *op)
{
	return run_on(p, fn, op, NULL, 0);
}

/* Whether the function's sysfs directory is there now. */
static bool in_sysfs(struct pci_pm *p, struct dm_device *dev)
{
	char path[4096];
	struct stat st;
	int n = snprintf(path, sizeof(path), "%s/devices/%s", p->sysfs_path,
			 dm_device_get_name(dev));
	return n >= 0 && (size_t)n < sizeof(path) && stat(path, &st) == 0;
}

/* Whether sysfs shows a kernel driver bound to the function now: the model
 * learns of a bind only from its event, which may still be queued (or was
 * lost), and PMCSR must never be written behind a live driver. */
static bool kernel_owns(struct pci_pm *p, struct dm_device *dev)
{
	char path[4096];
	struct stat st;
	int n = snprintf(path, sizeof(path), "%s/devices/%s/driver", p->sysfs_path,
			 dm_device_get_name(dev));
	/* a path too long to check is not ours to touch */
	return n < 0 || (size_t)n >= sizeof(path) || lstat(path, &st) == 0;
}

/* D0, the recovery wait (without the lock: other functions go on), the
 * header. */
static int resume_saved(struct pci_pm *p, struct dm_device *dev, struct saved_config *saved)
{
	struct op op = { .dev = dev, .saved = saved };
	int r = run(p, resume_d0_fn, &op);
	if (r < 0)
		return r;
	if (op.from_d3hot)
		p->sleep_ms(D3HOT_RECOVERY_MS, p->ctx);
	return run(p, restore_fn, &op);
}

static int pci_pm_probe(struct dm_device *dev, void *data)
{
	/* only functions no kernel driver owns */
	if (dm_device_get_kernel_driver(dev) || kernel_owns(data, dev))
		return -ENODEV;
	struct op op = { .dev = dev };
	char err[512];
	int r = run_on(data, probe_fn, &op, err, sizeof(err));
	if (r == -EIO && !in_sysfs(data, dev)) {
		/* gone from sysfs (its remove event follows): a VF being
		 * disabled, which the kernel unbinds just before it removes
		 * it, is offered again on its way out */
		log_debug("%s: pci-pm: gone from sysfs: declined", dm_device_get_name(dev));
		return -ENODEV;
	}
	if (r == -EIO)
		log_err("libpci: %s", err);
	return r;
}

/*
 * What suspend saved, as the transition record keeps it beyond the daemon's
 * life (dm_device_keep_pm_state()): "pm=CAP,cfg=HEADER", the PM capability's
 * offset and the 64-byte header in hex, so that the resume a restart runs
 * after a SIGKILL can put the function back in D0 with its configuration.
 */
#define STATE_PREFIX "pm="
static void state_encode(const struct saved_config *s, char *buf, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	int n = snprintf(buf, size, STATE_PREFIX "%x,cfg=", (unsigned)s->pm_cap);
	for (size_t i = 0; i < HEADER_SIZE && (size_t)n + 2 < size; i++) {
		buf[n++] = hex[s->header[i] >> 4];
		buf[n++] = hex[s->header[i] & 15];
	}
	buf[n] = '\0';
}

static int nibble(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int state_decode(const char *state, struct saved_config *s)
{
	unsigned cap;
	int n = 0;
	if (sscanf(state, STATE_PREFIX "%x,cfg=%n", &cap, &n) != 1 || n == 0 || cap > 0xfc ||
	    strlen(state + n) != 2 * HEADER_SIZE)
		return -EINVAL;
	for (size_t i = 0; i < HEADER_SIZE; i++) {
		int hi = nibble(state[n + 2 * i]), lo = nibble(state[n + 2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		s->header[i] = (uint8_t)(hi << 4 | lo);
	}
	s->pm_cap = (int)cap;
	return 0;
}

static int pci_pm_suspend(struct dm_device *dev, void *data)
{
	if (kernel_owns(data, dev)) {
		log_warn("%s: pci-pm: a kernel driver owns it now; left alone",
			 dm_device_get_name(dev));
		return -DM_ECLAIM;
	}
	struct saved_config *saved = calloc(1, sizeof(*saved));
	if (!saved)
		return -ENOMEM;
	struct op op = { .dev = dev, .saved = saved };
	char state[DM_PM_STATE_MAX];
	int r = run(data, save_fn, &op);
	if (r == 0) {
		/* in the record before the function leaves D0 */
		state_encode(saved, state, sizeof(state));
		r = dm_device_keep_pm_state(dev, state);
	}
	if (r == 0)
		r = run(data, suspend_fn, &op);
	if (r < 0) {
		free(saved);
		return r;
	}
	free(dm_device_get_driver_data(dev));
	dm_device_set_driver_data(dev, saved);
	return 0;
}

static int pci_pm_resume(struct dm_device *dev, void *data)
{
	struct saved_config *saved = dm_device_get_driver_data(dev);
	if (!saved) {
		/* not suspended by this run: by an earlier one, killed since? */
		char state[DM_PM_STATE_MAX];
		struct saved_config kept;
		if (dm_device_get_kept_pm_state(dev, state, sizeof(state)) < 0)
			return 0; /* not suspended by this driver */
		if (state_decode(state, &kept) < 0) {
			log_warn("%s: pci-pm: the transition record's state is not ours: %s",
				 dm_device_get_name(dev), state);
			return -EINVAL;
		}
		return resume_saved(data, dev, &kept);
	}
	int r = resume_saved(data, dev, saved);
	dm_device_set_driver_data(dev, NULL);
	free(saved);
	return r;
}

static void pci_pm_remove(struct dm_device *dev, void *data)
{
	(void)data;
	free(dm_device_get_driver_data(dev));
	dm_device_set_driver_data(dev, NULL);
}

static const struct dm_driver_ops pci_pm_ops = {
	.probe = pci_pm_probe,
	.remove = pci_pm_remove,
	.suspend = pci_pm_suspend,
	.resume = pci_pm_resume,
};

static void pci_pm_free(void *data)
{
	struct pci_pm *p = data;
	pci_cleanup(p->pa);
	free(p->sysfs_path);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static void sleep_ms(unsigned ms, void *ctx)
{
	(void)ctx;
	struct timespec left = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };
	while (nanosleep(&left, &left) < 0 && errno == EINTR)
		;
}

int dm_pci_pm_register(struct dm_model *m, struct dm_driver **ret)
{
	return dm_pci_pm_register_env(m, NULL, ret);
}

int dm_pci_pm_register_env(struct dm_model *m, const struct dm_pci_pm_env *env,
			   struct dm_driver **ret)
{
	struct pci_pm *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	const char *sysfs_path = env && env->sysfs_path ? env->sysfs_path : "/sys/bus/pci";
	p->sysfs_path = strdup(sysfs_path);
	if (!p->sysfs_path) {
		free(p);
		return -ENOMEM;
	}
	p->pa = dm_pci_access_new_at(sysfs_path);
	if (!p->pa) {
		free(p->sysfs_path);
		free(p);
		return -EIO;
	}
	p->sleep_ms = env && env->sleep_ms ? env->sleep_ms : sleep_ms;
	p->ctx = env ? env->ctx : NULL;
	pthread_mutex_init(&p->lock, NULL);
	return dm_model_add_driver(m, "pci", "pci-pm", DM_DRIVER_USER, DM_PCI_PM_PRIORITY,
				   &pci_pm_ops, p, pci_pm_free, ret);
}
