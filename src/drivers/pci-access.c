/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "pci-access.h"

#include "util/log.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/*
 * The hooks get no context pointer, hence a thread-local jump target, set
 * only for the duration of one guarded call on the calling thread.
 */
static __thread jmp_buf *pci_jump;
/* dm_pci_guarded_quiet(): libpci's messages at debug level, its error kept
 * here for the caller */
static __thread char *pci_quiet;
static __thread size_t pci_quiet_size;

static void __attribute__((noreturn, format(printf, 1, 2))) error_hook(char *msg, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, msg);
	vsnprintf(line, sizeof(line), msg, ap);
	va_end(ap);
	if (pci_quiet) {
		log_debug("libpci: %s", line);
		snprintf(pci_quiet, pci_quiet_size, "%s", line);
	} else {
		log_err("libpci: %s", line);
	}
	if (pci_jump)
		longjmp(*pci_jump, 1);
	abort(); /* unreachable: every call is guarded */
}

static void __attribute__((format(printf, 1, 2))) warning_hook(char *msg, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, msg);
	vsnprintf(line, sizeof(line), msg, ap);
	va_end(ap);
	if (pci_quiet)
		log_debug("libpci: %s", line);
	else
		log_warn("libpci: %s", line);
}

static void debug_hook(char *msg, ...)
{
	(void)msg;
}

int dm_pci_guarded(struct pci_access *pa, int (*fn)(struct pci_access *, void *), void *data)
{
	jmp_buf jump;
	jmp_buf *outer = pci_jump;
	if (setjmp(jump)) {
		pci_jump = outer;
		return -EIO;
	}
	pci_jump = &jump;
	int r = fn(pa, data);
	pci_jump = outer;
	return r;
}

int dm_pci_guarded_quiet(struct pci_access *pa, int (*fn)(struct pci_access *, void *),
			 void *data, char *err, size_t size)
{
	char *outer = pci_quiet;
	size_t outer_size = pci_quiet_size;
	err[0] = '\0';
	pci_quiet = err;
	pci_quiet_size = size;
	int r = dm_pci_guarded(pa, fn, data);
	pci_quiet = outer;
	pci_quiet_size = outer_size;
	return r;
}

static int init_fn(struct pci_access *pa, void *data)
{
	(void)data;
	pci_init(pa);
	return 0;
}

struct pci_access *dm_pci_access_new(void)
{
	return dm_pci_access_new_at(NULL);
}

struct pci_access *dm_pci_access_new_at(const char *sysfs_path)
{
	struct pci_access *pa = pci_alloc();
	if (!pa)
		return NULL;
	pa->error = error_hook;
	pa->warning = warning_hook;
	pa->debug = debug_hook;
	pa->method = PCI_ACCESS_SYS_BUS_PCI;
	/* libpci copies the value; its parameter is not const-qualified */
	if (sysfs_path && pci_set_param(pa, "sysfs.path", (char *)sysfs_path) < 0) {
		pci_cleanup(pa);
		return NULL;
	}
	if (dm_pci_guarded(pa, init_fn, NULL) < 0) {
		pci_cleanup(pa);
		return NULL;
	}
	return pa;
}

int dm_pci_parse_slot(const char *name, int *domain, int *bus, int *dev, int *func)
{
	char tail;
	if (sscanf(name, "%x:%x:%x.%x%c", domain, bus, dev, func, &tail) != 4 || *domain < 0 ||
	    *domain > 0xffff || *bus < 0 || *bus > 0xff || *dev < 0 || *dev > 0x1f || *func < 0 ||
	    *func > 7)
		return -EINVAL;
	return 0;
}
