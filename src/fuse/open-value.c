/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* open-value.c - the copies of changing values that open files read, and
 * what each user pins in them. */
#include "open-value.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Charges @bytes to @uid (0: nothing to charge). -ENOSPC past the budget. */
static int uid_charge_locked(struct fs_opens *o, uid_t uid, size_t bytes)
{
	if (uid == 0 || bytes == 0)
		return 0;
	size_t i = 0;
	while (i < o->n_uses && o->uses[i].uid != uid)
		i++;
	size_t used = i < o->n_uses ? o->uses[i].bytes : 0;
	if (bytes > o->uid_budget || used > o->uid_budget - bytes)
		return -ENOSPC;
	if (i == o->n_uses) {
		struct uid_use *u = realloc(o->uses, (o->n_uses + 1) * sizeof(*u));
		if (!u)
			return -ENOMEM;
		o->uses = u;
		o->uses[o->n_uses++] = (struct uid_use){ .uid = uid };
	}
	o->uses[i].bytes += bytes;
	return 0;
}

static void uid_uncharge_locked(struct fs_opens *o, uid_t uid, size_t bytes)
{
	if (uid == 0 || bytes == 0)
		return;
	for (size_t i = 0; i < o->n_uses; i++) {
		if (o->uses[i].uid != uid)
			continue;
		o->uses[i].bytes -= bytes < o->uses[i].bytes ? bytes : o->uses[i].bytes;
		if (o->uses[i].bytes == 0) /* a uid with nothing open holds no entry */
			o->uses[i] = o->uses[--o->n_uses];
		return;
	}
}

/* The slot + 1 of the handle @fh, 0 when it is none of this daemon's (a
 * handle of the last daemon of a handed-over connection has another
 * epoch). Lock held. */
static size_t index_of(const struct fs_opens *o, uint64_t fh)
{
	uint64_t i = fh & 0xffffffffu;
	return fh >> 32 == o->epoch && i > 0 && i <= o->n ? (size_t)i : 0;
}

void fs_opens_set_epoch(struct fs_opens *o, uint64_t epoch)
{
	pthread_mutex_lock(&o->lock);
	o->epoch = epoch & 0x7fffffffu;
	pthread_mutex_unlock(&o->lock);
}

int fs_open_value_new(struct fs_opens *o, uid_t uid, const struct fs_open_how *how,
		      uint64_t *ret_fh)
{
	struct fs_open_value *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	pthread_mutex_init(&v->lock, NULL);
	atomic_init(&v->refs, 1);
	v->uid = uid;
	v->how = *how;
	size_t i = 0;
	pthread_mutex_lock(&o->lock);
	int r = uid_charge_locked(o, uid, FS_OPEN_COST);
	if (r < 0)
		goto out_unlock;
	while (i < o->n && o->v[i])
		i++;
	if (i == o->n) {
		size_t n = o->n ? o->n * 2 : 16;
		struct fs_open_value **t = realloc(o->v, n * sizeof(*t));
		if (!t) {
			r = -ENOMEM;
			goto out_uncharge;
		}
		memset(t + o->n, 0, (n - o->n) * sizeof(*t));
		o->v = t;
		o->n = n;
	}
	o->v[i] = v;
	pthread_mutex_unlock(&o->lock);
	*ret_fh = o->epoch << 32 | (i + 1);
	return 0;

out_uncharge:
	uid_uncharge_locked(o, uid, FS_OPEN_COST);
out_unlock:
	pthread_mutex_unlock(&o->lock);
	pthread_mutex_destroy(&v->lock);
	free(v);
	return r == -ENOSPC ? -EMFILE : r;
}

struct fs_open_value *fs_open_value_get(struct fs_opens *o, uint64_t fh)
{
	struct fs_open_value *v = NULL;
	pthread_mutex_lock(&o->lock);
	size_t i = index_of(o, fh);
	if (i && (v = o->v[i - 1]))
		atomic_fetch_add_explicit(&v->refs, 1, memory_order_relaxed);
	pthread_mutex_unlock(&o->lock);
	return v;
}

void fs_open_value_put(struct fs_open_value *v)
{
	if (!v || atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) != 1)
		return;
	pthread_mutex_destroy(&v->lock);
	dm_blob_unref(v->value);
	free(v);
}

int fs_open_value_set(struct fs_opens *o, struct fs_open_value *v, struct dm_blob *b)
{
	pthread_mutex_lock(&o->lock);
	uid_uncharge_locked(o, v->uid, v->charged);
	int r = uid_charge_locked(o, v->uid, b->len);
	if (r < 0)
		uid_charge_locked(o, v->uid, v->charged); /* what it had: fits again */
	else
		v->charged = b->len; /* read by the release, under o's lock */
	pthread_mutex_unlock(&o->lock);
	if (r < 0) {
		dm_blob_unref(b);
		return -ENOMEM;
	}
	dm_blob_unref(v->value);
	v->value = b;
	return 0;
}

void fs_open_value_release(struct fs_opens *o, uint64_t fh)
{
	struct fs_open_value *v = NULL;
	pthread_mutex_lock(&o->lock);
	size_t i = index_of(o, fh);
	if (i) {
		v = o->v[i - 1];
		o->v[i - 1] = NULL;
	}
	if (v)
		uid_uncharge_locked(o, v->uid, FS_OPEN_COST + v->charged);
	pthread_mutex_unlock(&o->lock);
	fs_open_value_put(v);
}

void fs_opens_init(struct fs_opens *o)
{
	*o = (struct fs_opens){ .uid_budget = FS_DEFAULT_UID_BUDGET };
	pthread_mutex_init(&o->lock, NULL);
}

void fs_opens_done(struct fs_opens *o)
{
	for (size_t i = 0; i < o->n; i++)
		fs_open_value_put(o->v[i]);
	free(o->v);
	free(o->uses);
	pthread_mutex_destroy(&o->lock);
}
