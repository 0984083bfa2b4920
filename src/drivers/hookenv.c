/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* hookenv.c - what hooks and helpers are run with: command lines and the
 * device's environment. */
#include "hookenv.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOOK_PATH "/usr/sbin:/usr/bin:/sbin:/bin"

void dm_strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

/*
 * Splits a command line on blanks, honouring '...' and "..." (no escapes,
 * no expansions: what is between the quotes is taken as it is). Quotes may
 * join text ("a'b c'" is one word "ab c"); '' is an empty word. Returns
 * -EBADMSG for an unterminated quote, -ENOMEM; *ret is NULL-terminated.
 */
int dm_split_command(const char *s, char ***ret, size_t *ret_n)
{
	size_t n = 0, cap = 4;
	char **v = calloc(cap + 1, sizeof(*v));
	char *word = malloc(strlen(s) + 1);
	int r = -ENOMEM;

	if (!v || !word)
		goto out_free;
	while (*s) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		size_t len = 0;
		while (*s && *s != ' ' && *s != '\t') {
			if (*s == '\'' || *s == '"') {
				const char *close = strchr(s + 1, *s);
				if (!close) {
					r = -EBADMSG;
					goto out_free;
				}
				memcpy(word + len, s + 1, (size_t)(close - s - 1));
				len += (size_t)(close - s - 1);
				s = close + 1;
			} else {
				word[len++] = *s++;
			}
		}
		if (n == cap) {
			char **nv = realloc(v, (cap * 2 + 1) * sizeof(*v));
			if (!nv)
				goto out_free;
			v = nv;
			cap *= 2;
		}
		v[n] = strndup(word, len);
		if (!v[n])
			goto out_free;
		v[++n] = NULL;
	}
	free(word);
	*ret = v;
	*ret_n = n;
	return 0;

out_free:
	free(word);
	dm_strv_free(v);
	return r;
}

/* The hook environment, built for one call. */
struct env {
	char **v; /* NULL-terminated */
	size_t n, cap;
};

static void env_done(struct env *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i]);
	free(e->v);
	*e = (struct env){ 0 };
}

static bool env_has(const struct env *e, const char *key, size_t klen)
{
	for (size_t i = 0; i < e->n; i++)
		if (strncmp(e->v[i], key, klen) == 0 && e->v[i][klen] == '=')
			return true;
	return false;
}

/* Adds KEY=VALUE (@klen bytes of @key, @vlen of @value). */
static int env_add(struct env *e, const char *key, size_t klen, const char *value, size_t vlen)
{
	if (e->n + 1 >= e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 32;
		char **v = realloc(e->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		e->v = v;
		e->cap = cap;
	}
	char *s = malloc(klen + 1 + vlen + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, key, klen);
	s[klen] = '=';
	memcpy(s + klen + 1, value, vlen);
	s[klen + 1 + vlen] = '\0';
	e->v[e->n++] = s;
	e->v[e->n] = NULL;
	return 0;
}

static int env_set(struct env *e, const char *key, const char *value)
{
	if (!value)
		return 0; /* unset, as udev leaves out what a device lacks */
	return env_add(e, key, strlen(key), value, strlen(value));
}

/* Variables the runner sets itself; the uevent's own are dropped (its
 * DRIVER names the kernel's driver, not this one). */
static bool env_is_reserved(const char *key, size_t klen)
{
	static const char *const reserved[] = { "ACTION", "DRIVERFS_PATH", "DEVPATH", "BUS",
						"CLASS",  "DRIVER",	   "DEVNAME", "PATH" };
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (strlen(reserved[i]) == klen && strncmp(reserved[i], key, klen) == 0)
			return true;
	return false;
}

/* Variables that change how a program, its dynamic loader or a shell
 * running it behaves. No kernel or udev property has these names; a device
 * whose reported strings reach its uevent (a HID name with a newline in
 * it) must not set them for a hook that runs as root. */
static bool env_is_dangerous(const char *key, size_t klen)
{
	static const char *const prefixes[] = { "LD_", "MALLOC_", "GLIBC_", "BASH_" };
	static const char *const names[] = {
		"ENV",	      "IFS",	     "SHELLOPTS",  "BASHOPTS",	  "PS4",
		"CDPATH",     "GCONV_PATH",  "LOCPATH",	   "NLSPATH",	  "HOSTALIASES",
		"RES_OPTIONS", "LOCALDOMAIN", "TMPDIR",	   "HOME",	  "SHELL",
		"PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PERL5LIB",   "PERL5OPT",
		"PERLLIB",    "RUBYOPT",     "RUBYLIB",	   "NODE_OPTIONS", "TZDIR",
	};
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (klen >= strlen(prefixes[i]) && strncmp(key, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == klen && strncmp(names[i], key, klen) == 0)
			return true;
	return false;
}

static bool env_key_is_valid(const char *key, size_t klen)
{
	if (klen == 0 || isdigit((unsigned char)key[0]) || env_is_dangerous(key, klen))
		return false;
	for (size_t i = 0; i < klen; i++)
		if (!isalnum((unsigned char)key[i]) && key[i] != '_')
			return false;
	return true;
}

/* The uevent's DEVNAME, as a /dev path (the kernel's is relative). */
static int uevent_devname(const char *uevent, char *buf, size_t size)
{
	for (const char *l = uevent; *l;) {
		size_t len = strcspn(l, "\n");
		if (len > 8 && strncmp(l, "DEVNAME=", 8) == 0) {
			const char *v = l + 8;
			int n = snprintf(buf, size, "%s%.*s", v[0] == '/' ? "" : "/dev/",
					 (int)(len - 8), v);
			return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
		}
		l += len + (l[len] == '\n');
	}
	return -ENOENT;
}

static int env_add_uevent(struct env *e, const char *uevent)
{
	for (const char *l = uevent; *l;) {
		size_t len = strcspn(l, "\n");
		const char *eq = memchr(l, '=', len);
		if (eq) {
			size_t klen = (size_t)(eq - l);
			if (env_key_is_valid(l, klen) && !env_is_reserved(l, klen) &&
			    !env_has(e, l, klen)) {
				int r = env_add(e, l, klen, eq + 1, len - klen - 1);
				if (r < 0)
					return r;
			}
		}
		l += len + (l[len] == '\n');
	}
	return 0;
}

/* What is read under the model lock, copied out before a hook runs. */
struct dev_info {
	char path[PATH_MAX];
	char *bus;
	char *class;
};

static int dev_info_read(struct dm_device *dev, struct dev_info *ret)
{
	struct dm_model *m = dm_device_get_model(dev);
	int r;

	dm_model_read_lock(m);
	r = dm_device_path_locked(dev, ret->path, sizeof(ret->path));
	struct dm_bus *bus = dm_device_get_bus_locked(dev);
	struct dm_class *class = dm_device_get_class_locked(dev);
	ret->bus = bus ? strdup(dm_bus_get_name(bus)) : NULL;
	ret->class = class ? strdup(dm_class_get_name(class)) : NULL;
	dm_model_unlock(m);

	if (r >= 0 && ((bus && !ret->bus) || (class && !ret->class)))
		r = -ENOMEM;
	if (r < 0) {
		free(ret->bus);
		free(ret->class);
		return r;
	}
	return 0;
}

int dm_hook_env(struct dm_device *dev, const char *action, const char *driver,
		const char *const *extra, char ***ret)
{
	struct dev_info info;
	struct env e = { 0 };
	char devname[PATH_MAX];
	char *uevent = malloc(DM_ATTR_MAX + 1);
	bool has_devname = false;
	int r;

	if (!uevent)
		return -ENOMEM;
	r = dev_info_read(dev, &info);
	if (r < 0) {
		free(uevent);
		return r;
	}
	/* values are read through the accessor, which takes the lock itself */
	if (dm_device_get_value(dev, "uevent", uevent, DM_ATTR_MAX + 1) < 0)
		uevent[0] = '\0';
	if (uevent_devname(uevent, devname, sizeof(devname)) == 0)
		has_devname = true;
	else if (dm_device_get_value(dev, "devnode", devname, sizeof(devname)) > 0)
		has_devname = true;

	r = env_set(&e, "ACTION", action);
	if (!r)
		r = env_set(&e, "DRIVERFS_PATH", info.path);
	if (!r)
		r = env_set(&e, "DEVPATH", dm_device_get_devpath(dev));
	if (!r)
		r = env_set(&e, "BUS", info.bus);
	if (!r)
		r = env_set(&e, "CLASS", info.class);
	if (!r)
		r = env_set(&e, "DRIVER", driver);
	if (!r)
		r = env_set(&e, "DEVNAME", has_devname ? devname : NULL);
	if (!r)
		r = env_set(&e, "PATH", HOOK_PATH);
	for (const char *const *x = extra; !r && x && *x; x++) {
		const char *eq = strchr(*x, '=');
		r = eq ? env_add(&e, *x, (size_t)(eq - *x), eq + 1, strlen(eq + 1)) : -EINVAL;
	}
	if (!r)
		r = env_add_uevent(&e, uevent);
	free(uevent);
	free(info.bus);
	free(info.class);
	if (r < 0) {
		env_done(&e);
		return r;
	}
	if (!e.v) { /* nothing was set: still a valid, empty environment */
		e.v = calloc(1, sizeof(*e.v));
		if (!e.v)
			return -ENOMEM;
	}
	*ret = e.v;
	return 0;
}
