/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* modules.c - the kernel modules that could drive a device (see modules.h). */
#include "modules.h"

#include "core/hashmap.h"
#include "util/log.h"

#include <errno.h>
#include <libkmod.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct dm_modules {
	/* A libkmod context is not thread-safe: one, used under the lock. */
	pthread_mutex_t lock;
	struct kmod_ctx *ctx;
	bool tried;
	char *dir; /* NULL: libkmod's, /lib/modules/<release> */
	_Atomic uint64_t lookups; /* libkmod's, for the stats */
	/* the answers kept (dm_modules_candidates_kept()), by modalias */
	pthread_mutex_t kept_lock;
	struct dm_hashmap kept_map;
};

int dm_modules_new(const char *dir, struct dm_modules **ret)
{
	struct dm_modules *mo = calloc(1, sizeof(*mo));
	if (!mo)
		return -ENOMEM;
	if (dir && !(mo->dir = strdup(dir))) {
		free(mo);
		return -ENOMEM;
	}
	pthread_mutex_init(&mo->lock, NULL);
	pthread_mutex_init(&mo->kept_lock, NULL);
	dm_hashmap_init(&mo->kept_map, dm_hash_string, dm_cmp_string);
	*ret = mo;
	return 0;
}

void dm_modules_free(struct dm_modules *mo)
{
	if (!mo)
		return;
	dm_modules_forget(mo);
	dm_hashmap_done(&mo->kept_map);
	if (mo->ctx)
		kmod_unref(mo->ctx);
	pthread_mutex_destroy(&mo->lock);
	pthread_mutex_destroy(&mo->kept_lock);
	free(mo->dir);
	free(mo);
}

/* kmod logs through syslog by default: into ours, at debug level. */
static void kmod_log(void *data, int priority, const char *file, int line, const char *fn,
		     const char *format, va_list args) __attribute__((format(printf, 6, 0)));
static void kmod_log(void *data, int priority, const char *file, int line, const char *fn,
		     const char *format, va_list args)
{
	(void)data, (void)priority, (void)file, (void)line, (void)fn;
	char msg[512];
	vsnprintf(msg, sizeof(msg), format, args);
	msg[strcspn(msg, "\n")] = '\0';
	log_debug("libkmod: %s", msg);
}

/* The context, made the first time (lock held); NULL when the modules
 * directory has no indexes. */
static struct kmod_ctx *context_locked(struct dm_modules *mo)
{
	if (mo->tried)
		return mo->ctx;
	mo->tried = true;
	struct kmod_ctx *ctx;
	const char *null_config = NULL;
	/* no modprobe.d: aliases a local configuration adds are policy, not
	 * what the modules say they drive */
	ctx = kmod_new(mo->dir, &null_config);
	if (!ctx)
		return NULL;
	kmod_set_log_fn(ctx, kmod_log, NULL);
	/* without the alias index (depmod's) there is nothing to look in */
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/modules.alias.bin", kmod_get_dirname(ctx));
	if (access(path, R_OK) < 0) {
		log_info("no kernel module indexes in %s: bindings name no candidate modules",
			 kmod_get_dirname(ctx));
		kmod_unref(ctx);
		return NULL;
	}
	/* the indexes mapped once; where one cannot be (an empty
	 * modules.builtin.bin), each lookup opens the files itself */
	if (kmod_load_resources(ctx) < 0)
		log_debug("libkmod: the indexes in %s are read at each lookup",
			  kmod_get_dirname(ctx));
	mo->ctx = ctx;
	return ctx;
}

/* A modalias as the kernel writes them: "bus:" then printable ASCII, no
 * spaces, bounded. */
static bool is_modalias(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 512 || !strchr(s, ':'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return false;
	return true;
}

static const char *state_name(int state)
{
	switch (state) {
	case KMOD_MODULE_LIVE:
		return "loaded";
	case KMOD_MODULE_BUILTIN:
		return "built in";
	case KMOD_MODULE_COMING:
		return "loading";
	case KMOD_MODULE_GOING:
		return "unloading";
	default:
		return "not loaded";
	}
}

/* What modprobe @key would load (a modalias, or a module's name or alias:
 * libkmod makes dashes underscores), each module given to @fn, in libkmod's
 * order, until it returns false: 0, -ENOENT when the modules directory has
 * no index to look in, or libkmod's -errno. Under the one lock. */
static int lookup(struct dm_modules *mo, const char *key,
		  bool (*fn)(struct kmod_module *mod, void *data), void *data)
{
	pthread_mutex_lock(&mo->lock);
	struct kmod_ctx *c = context_locked(mo);
	if (!c) {
		pthread_mutex_unlock(&mo->lock);
		return -ENOENT;
	}
	struct kmod_list *list = NULL, *l;
	int r = kmod_module_new_from_lookup(c, key, &list);
	if (r >= 0) {
		bool more = true;
		kmod_list_foreach(l, list) {
			struct kmod_module *mod = kmod_module_get_module(l);
			if (more && mod)
				more = fn(mod, data);
			kmod_module_unref(mod);
		}
		kmod_module_unref_list(list);
	}
	pthread_mutex_unlock(&mo->lock);
	atomic_fetch_add_explicit(&mo->lookups, 1, memory_order_relaxed);
	return r < 0 ? r : 0;
}

struct listing {
	char *buf;
	size_t size, len;
	int n;
};

/* "NAME (state)" appended, while it fits. */
static bool list_one(struct kmod_module *mod, void *data)
{
	struct listing *s = data;
	int w = snprintf(s->buf + s->len, s->size - s->len, "%s%s (%s)", s->n ? ", " : "",
			 kmod_module_get_name(mod), state_name(kmod_module_get_initstate(mod)));
	if (w < 0 || (size_t)w >= s->size - s->len) {
		s->buf[s->len] = '\0'; /* what fits */
		return false;
	}
	s->len += (size_t)w;
	s->n++;
	return true;
}

int dm_modules_candidates(struct dm_modules *mo, const char *modalias, char *buf, size_t size)
{
	if (size)
		buf[0] = '\0';
	if (!is_modalias(modalias))
		return -EINVAL;
	struct listing s = { .buf = buf, .size = size };
	int r = size ? lookup(mo, modalias, list_one, &s) : 0;
	return r < 0 ? r : s.n;
}

/* A kernel driver's (or module's) name: letters, digits, '-', '_', '.',
 * bounded; never an alias pattern nor a path. */
static bool is_driver_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 64 || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_' || s[i] == '.'))
			return false;
	return true;
}

struct first {
	char *buf;
	size_t size;
	enum dm_module_state state;
	bool found;
};

/* The first module's name and state; no other. */
static bool first_one(struct kmod_module *mod, void *data)
{
	struct first *f = data;
	int st = kmod_module_get_initstate(mod);
	f->state = st == KMOD_MODULE_BUILTIN ? DM_MODULE_BUILTIN
		   : st == KMOD_MODULE_LIVE || st == KMOD_MODULE_COMING || st == KMOD_MODULE_GOING
			   ? DM_MODULE_LOADED
			   : DM_MODULE_NOT_LOADED;
	snprintf(f->buf, f->size, "%s", kmod_module_get_name(mod));
	f->found = true;
	return false;
}

int dm_modules_of_driver(struct dm_modules *mo, const char *driver, char *buf, size_t size,
			 enum dm_module_state *ret_state)
{
	if (size)
		buf[0] = '\0';
	*ret_state = DM_MODULE_NOT_LOADED;
	if (!is_driver_name(driver) || size == 0)
		return -EINVAL;
	struct first f = { .buf = buf, .size = size };
	int r = lookup(mo, driver, first_one, &f);
	*ret_state = f.state;
	return r < 0 ? r : f.found;
}

/* ---- answers kept (modules.h) ---- */

struct kept {
	char *alias; /* the key */
	int r;
	uint64_t gen;
	time_t at; /* CLOCK_MONOTONIC seconds */
	char text[512];
};

static time_t now_sec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static int free_kept(void *value, void *data)
{
	(void)data;
	struct kept *k = value;
	free(k->alias);
	free(k);
	return 0;
}

/* Every answer kept dropped (@mo's kept_lock held). */
static void drop_kept_locked(struct dm_modules *mo)
{
	dm_hashmap_for_each(&mo->kept_map, free_kept, NULL);
	dm_hashmap_done(&mo->kept_map);
	dm_hashmap_init(&mo->kept_map, dm_hash_string, dm_cmp_string);
}

void dm_modules_forget(struct dm_modules *mo)
{
	pthread_mutex_lock(&mo->kept_lock);
	drop_kept_locked(mo);
	pthread_mutex_unlock(&mo->kept_lock);
}

int dm_modules_candidates_kept(struct dm_modules *mo, const char *modalias, uint64_t gen,
			       char *buf, size_t size)
{
	time_t t = now_sec();
	pthread_mutex_lock(&mo->kept_lock);
	struct kept *k = dm_hashmap_get(&mo->kept_map, modalias);
	if (k && k->gen == gen && t - k->at < DM_MODULES_KEEP_SEC) {
		int r = k->r;
		snprintf(buf, size, "%s", k->text);
		pthread_mutex_unlock(&mo->kept_lock);
		return r;
	}
	pthread_mutex_unlock(&mo->kept_lock);
	/* looked up without the map's lock: two readers may both look */
	char text[sizeof(k->text)];
	int r = dm_modules_candidates(mo, modalias, text, sizeof(text));
	snprintf(buf, size, "%s", text);
	if (r == -ENOMEM || r == -EINVAL)
		return r;
	pthread_mutex_lock(&mo->kept_lock);
	k = dm_hashmap_get(&mo->kept_map, modalias);
	if (!k) {
		if (dm_hashmap_size(&mo->kept_map) >= DM_MODULES_KEPT)
			drop_kept_locked(mo);
		k = calloc(1, sizeof(*k));
		if (k && (!(k->alias = strdup(modalias)) ||
			  dm_hashmap_put(&mo->kept_map, k->alias, k) < 0)) {
			free(k->alias);
			free(k);
			k = NULL;
		}
	}
	if (k) {
		k->r = r;
		k->gen = gen;
		k->at = t;
		memcpy(k->text, text, sizeof(text));
	}
	pthread_mutex_unlock(&mo->kept_lock);
	return r;
}

uint64_t dm_modules_count_lookups(struct dm_modules *mo)
{
	return mo ? atomic_load_explicit(&mo->lookups, memory_order_relaxed) : 0;
}
