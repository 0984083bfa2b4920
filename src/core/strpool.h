/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * strpool.h - interned strings: one copy of each distinct string, kept until
 * the pool is freed. The model keeps there the names that repeat across
 * devices (value file names, kernel driver names): sysfs has a few hundred
 * of them for any number of devices, so a device holds pointers instead of
 * copies, and a pointer stays valid for the model's life.
 *
 * Strings are packed into chunks (no allocation per string); the pool has
 * its own mutex, so devices not yet added may intern without the model
 * lock. Nothing is ever removed: only strings from a bounded set belong
 * here.
 */
#ifndef DM_STRPOOL_H
#define DM_STRPOOL_H

#include "idset.h"

#include <pthread.h>

struct dm_strpool {
	pthread_mutex_t lock;
	struct dm_idset set; /* the strings, by content */
	struct dm_strpool_chunk *chunks; /* the newest first */
	size_t left; /* free bytes at the end of the newest chunk */
};

void dm_strpool_init(struct dm_strpool *p);
void dm_strpool_done(struct dm_strpool *p);
/* The pool's copy of @s (made on first use), or NULL on ENOMEM. */
const char *dm_strpool_intern(struct dm_strpool *p, const char *s);

#endif
