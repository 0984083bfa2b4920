/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * binding-private.h - what the transactions (binding.c) tell the device
 * files that show them (binding-file.c); only these two include it.
 */
#ifndef DM_BINDING_PRIVATE_H
#define DM_BINDING_PRIVATE_H

#include "binding.h"

#include <stdbool.h>
#include <stddef.h>

/* The longest report of a request (a line per step, undo and reason). */
#define DM_BINDING_REPORT_MAX 8192

/* The driver the device at @devdir (<sysfs root><devpath>) is bound to
 * now, into @buf ("" when none). */
void dm_binding_driver_of(const char *devdir, char *buf, size_t size);

/* The outcome of @devpath's last request that wrote anything: whether it
 * succeeded (not for the kernel's default), failed, and the driver it left
 * bound ("" none); false when it had none. */
bool dm_binding_last_outcome(struct dm_binder *b, const char *devpath, bool *done, bool *failed,
			     char *left, size_t size);

#endif
