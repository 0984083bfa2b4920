/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* hookenv.c - what hooks and helpers are run with: command lines and the
 * device's environment. */
#include "core/array.h"
#include "hookenv.h"

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

bool dm_uevent_key_is_valid(const char *key, size_t klen)
{
	if (klen == 0 || (key[0] >= '0' && key[0] <= '9'))
		return false;
	for (size_t i = 0; i < klen; i++)
		if (!((key[i] >= 'A' && key[i] <= 'Z') || (key[i] >= '0' && key[i] <= '9') ||
		      key[i] == '_'))
			return false;
	return true;
}

static bool value_is_clean(const char *v, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			return false;
	return true;
}

/* A kernel DEVNAME: relative to /dev, no "." or ".." component, no empty one. */
static bool devname_is_valid(const char *v, size_t len)
{
	if (len == 0 || v[0] == '/')
		return false;
	for (size_t i = 0; i < len;) {
		size_t c = 0;
		while (i + c < len && v[i + c] != '/')
			c++;
		if (c == 0 || (c == 1 && v[i] == '.') || (c == 2 && v[i] == '.' && v[i + 1] == '.'))
			return false;
		i += c + 1;
		if (i == len) /* a trailing '/' */
			return false;
	}
	return true;
}

int dm_uevent_check_devname(const char *devname)
{
	return devname_is_valid(devname, strlen(devname)) ? 0 : -EINVAL;
}

/* Whether the line @l (@len bytes) has the key @key: a duplicate scan. */
static bool line_has_key(const char *l, size_t len, const char *key, size_t klen)
{
	return len > klen && l[klen] == '=' && memcmp(l, key, klen) == 0;
}

int dm_uevent_check(const char *text)
{
	size_t total = strlen(text);
	if (total && text[total - 1] == '\n')
		total--;
	for (size_t off = 0; off < total;) {
		const char *l = text + off;
		size_t len = 0;
		while (off + len < total && l[len] != '\n')
			len++;
		const char *eq = memchr(l, '=', len);
		if (!eq || !dm_uevent_key_is_valid(l, (size_t)(eq - l)))
			return -EBADMSG;
		size_t klen = (size_t)(eq - l);
		const char *v = eq + 1;
		size_t vlen = len - klen - 1;
		if (!value_is_clean(v, vlen))
			return -EBADMSG;
		/* quoted values open and close on their line: a stray quote
		 * is the kernel's, closing a string that spans lines */
		if (vlen && (v[0] == '"' || v[vlen - 1] == '"') &&
		    (vlen < 2 || v[0] != '"' || v[vlen - 1] != '"'))
			return -EBADMSG;
		if (klen == 7 && memcmp(l, "DEVNAME", 7) == 0 && !devname_is_valid(v, vlen))
			return -EBADMSG;
		/* a key seen on an earlier line */
		for (size_t o = 0; o < off;) {
			size_t n = strcspn(text + o, "\n");
			if (line_has_key(text + o, n, l, klen))
				return -EBADMSG;
			o += n + 1;
		}
		off += len + 1;
	}
	return 0;
}

/* A decimal number as the kernel prints it (%u): digits, no sign, no
 * leading zero but for 0 itself; @len bytes. */
static bool uint_parse(const char *v, size_t len, unsigned long *ret)
{
	unsigned long n = 0;
	if (len == 0 || len > 10 || (v[0] == '0' && len > 1))
		return false;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return false;
		n = n * 10 + (unsigned long)(v[i] - '0');
	}
	*ret = n;
	return true;
}

/* @major, @minor (@malen, @milen bytes) against "MAJOR:MINOR[\n]". */
static bool devt_is(const char *major, size_t malen, const char *minor, size_t milen,
		    const char *dev)
{
	unsigned long ma, mi, dma, dmi;
	if (!dev || !uint_parse(major, malen, &ma) || !uint_parse(minor, milen, &mi))
		return false;
	size_t dlen = strlen(dev);
	if (dlen && dev[dlen - 1] == '\n')
		dlen--;
	const char *colon = memchr(dev, ':', dlen);
	return colon && uint_parse(dev, (size_t)(colon - dev), &dma) &&
	       uint_parse(colon + 1, dlen - (size_t)(colon - dev) - 1, &dmi) && ma == dma &&
	       mi == dmi;
}

bool dm_uevent_devt_is(const char *major, const char *minor, const char *dev)
{
	return major && minor && devt_is(major, strlen(major), minor, strlen(minor), dev);
}

int dm_uevent_check_devt(const char *text, const char *dev)
{
	const char *major = NULL, *minor = NULL;
	size_t malen = 0, milen = 0, n_devname = 0, n_major = 0, n_minor = 0;
	for (const char *l = text; *l;) {
		size_t len = strcspn(l, "\n");
		if (strncmp(l, "MAJOR=", 6) == 0) {
			major = l + 6;
			malen = len - 6;
			n_major++;
		} else if (strncmp(l, "MINOR=", 6) == 0) {
			minor = l + 6;
			milen = len - 6;
			n_minor++;
		} else if (strncmp(l, "DEVNAME=", 8) == 0) {
			n_devname++;
		}
		l += len + (l[len] == '\n');
	}
	if (!dev)
		return n_major || n_minor || n_devname ? -EBADMSG : 0;
	if (n_major != 1 || n_minor != 1 || n_devname > 1)
		return -EBADMSG;
	return devt_is(major, malen, minor, milen, dev) ? 0 : -EBADMSG;
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
	/* room for it and the NULL that ends the list */
	if (!dm_array_grow((void **)&e->v, &e->cap, e->n + 1, sizeof(*e->v), 32))
		return -ENOMEM;
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

/* Variables the daemon sets itself, or the kernel sets on the event (not
 * the device): a device's own are dropped (its DRIVER names the kernel's
 * driver, not this one), so the daemon's always win. */
static bool env_is_reserved(const char *key, size_t klen)
{
	static const char *const reserved[] = { "ACTION", "DRIVERFS_PATH", "DEVPATH", "DEVPATH_OLD",
						"BUS",	  "CLASS",	   "DRIVER",  "KERNEL_DRIVER", "DEVNAME",
						"PATH",	  "SUBSYSTEM",	   "SEQNUM" };
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (strlen(reserved[i]) == klen && strncmp(reserved[i], key, klen) == 0)
			return true;
	return false;
}

/*
 * Variables that change how a program, its dynamic loader, a shell or an
 * interpreter it starts behaves: a hook runs as root, and a device whose
 * strings reach its uevent text (a HID name with a newline in it) or a
 * hostile udev rule must not set them. No kernel or udev property has these
 * names. Refused:
 *  - prefixes: LD_ (the loader), MALLOC_ and GLIBC_ (glibc tunables),
 *    GCONV_ (iconv modules), BASH_ (BASH_ENV, BASH_FUNC_*), PYTHON
 *    (PYTHONPATH, PYTHONSTARTUP, PYTHONWARNINGS, ...), PERL (PERL5LIB,
 *    PERL5OPT, PERL5DB, PERLLIB, ...), RUBY, LUA_ (LUA_INIT, LUA_PATH, ...),
 *    NODE_ (NODE_OPTIONS, NODE_PATH), JAVA_ and _JAVA_ (JAVA_TOOL_OPTIONS,
 *    _JAVA_OPTIONS), JDK_, GIT_ (GIT_CONFIG_*, GIT_SSH, ...), OPENSSL_,
 *    SSL_ (SSL_CERT_FILE), TCL, TK_, GUILE_, GEM_, BUNDLE_, PHP, R_, LC_
 *    and LANG (locales read from files), XDG_ (config lookups), SYSTEMD_,
 *    DBUS_, NIX_, GCC_, GDK_ and GTK_, QT_, GIO_, GSETTINGS_, ZDOTDIR,
 *    KRB5 (Kerberos configuration), SUDO_, PAGER and EDITOR variants below;
 *  - names: ENV, IFS, SHELLOPTS, BASHOPTS, PS1, PS2, PS4, PROMPT_COMMAND,
 *    CDPATH, GLOBIGNORE, HOME, SHELL, TMPDIR, TMP, TEMP, TZ, TZDIR,
 *    LOCPATH, NLSPATH, LANGUAGE, HOSTALIASES, RES_OPTIONS, LOCALDOMAIN,
 *    BROWSER, EDITOR, VISUAL, PAGER, MANPAGER, LESSOPEN, LESSCLOSE,
 *    LESSKEY, GREP_OPTIONS, POSIXLY_CORRECT, MANPATH, TERMINFO,
 *    TERMINFO_DIRS, TERMCAP, CURL_HOME, WGETRC, SSH_ASKPASS, SSH_AUTH_SOCK,
 *    GNUPGHOME, AWKPATH, AWKLIBPATH, CLASSPATH, RUBYOPT, RUBYLIB,
 *    HISTFILE, INPUTRC, MAIL, MAILPATH, OLDPWD, PWD, USER, LOGNAME,
 *    KDEDIR, DISPLAY, WAYLAND_DISPLAY, DYLD_INSERT_LIBRARIES,
 *    http_proxy-style names are lower case and refused by the name rule.
 * Each entry is tested (tests/unit/test-hookenv.c).
 */
static const char *const env_refused_prefixes[] = {
	"LD_",	   "MALLOC_", "GLIBC_", "GCONV_", "BASH_", "PYTHON", "PERL",  "RUBY",   "LUA_",
	"NODE_",   "JAVA_",   "_JAVA_", "JDK_",	  "GIT_",  "OPENSSL_", "SSL_", "TCL",	 "TK_",
	"GUILE_",  "GEM_",    "BUNDLE_", "PHP",	  "R_",	   "LC_",    "LANG",  "XDG_",	 "SYSTEMD_",
	"DBUS_",   "NIX_",    "GCC_",	"GDK_",	  "GTK_",  "QT_",    "GIO_",  "GSETTINGS_", "KRB5",
	"SUDO_",   "DYLD_",
};
static const char *const env_refused_names[] = {
	"ENV",	       "IFS",	      "SHELLOPTS",    "BASHOPTS",    "PS1",	    "PS2",
	"PS4",	       "PROMPT_COMMAND", "CDPATH",    "GLOBIGNORE",  "HOME",	    "SHELL",
	"TMPDIR",      "TMP",	      "TEMP",	      "TZ",	     "TZDIR",	    "LOCPATH",
	"NLSPATH",     "LANGUAGE",    "HOSTALIASES",  "RES_OPTIONS", "LOCALDOMAIN", "BROWSER",
	"EDITOR",      "VISUAL",      "PAGER",	      "MANPAGER",    "LESSOPEN",    "LESSCLOSE",
	"LESSKEY",     "GREP_OPTIONS", "POSIXLY_CORRECT", "MANPATH", "TERMINFO",    "TERMINFO_DIRS",
	"TERMCAP",     "CURL_HOME",   "WGETRC",	      "SSH_ASKPASS", "SSH_AUTH_SOCK", "GNUPGHOME",
	"AWKPATH",     "AWKLIBPATH",  "CLASSPATH",    "HISTFILE",    "INPUTRC",	    "MAIL",
	"MAILPATH",    "OLDPWD",      "PWD",	      "USER",	     "LOGNAME",	    "KDEDIR",
	"DISPLAY",     "WAYLAND_DISPLAY", "ZDOTDIR",
};

bool dm_hook_env_name_is_refused(const char *key, size_t klen)
{
	for (size_t i = 0; i < sizeof(env_refused_prefixes) / sizeof(env_refused_prefixes[0]); i++) {
		size_t plen = strlen(env_refused_prefixes[i]);
		if (klen >= plen && strncmp(key, env_refused_prefixes[i], plen) == 0)
			return true;
	}
	for (size_t i = 0; i < sizeof(env_refused_names) / sizeof(env_refused_names[0]); i++)
		if (strlen(env_refused_names[i]) == klen && strncmp(env_refused_names[i], key, klen) == 0)
			return true;
	return false;
}

const char *const *dm_hook_env_refused_list(bool prefixes, size_t *ret_n)
{
	*ret_n = prefixes ? sizeof(env_refused_prefixes) / sizeof(env_refused_prefixes[0])
			  : sizeof(env_refused_names) / sizeof(env_refused_names[0]);
	return prefixes ? env_refused_prefixes : env_refused_names;
}

/* The uevent's DEVNAME, as a /dev path (the kernel's is relative; the text
 * was checked, so it is a path below /dev). */
static int uevent_devname(const char *uevent, char *buf, size_t size)
{
	for (const char *l = uevent; *l;) {
		size_t len = strcspn(l, "\n");
		if (len > 8 && strncmp(l, "DEVNAME=", 8) == 0) {
			int n = snprintf(buf, size, "/dev/%.*s", (int)(len - 8), l + 8);
			return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
		}
		l += len + (l[len] == '\n');
	}
	return -ENOENT;
}

/* The device's properties, after what the daemon set: only from a text
 * that passes dm_uevent_check(), and of those only a valid name that is
 * neither the daemon's nor refused, with a value free of control
 * characters. */
static int env_add_uevent(struct env *e, const char *uevent)
{
	if (dm_uevent_check(uevent) < 0)
		return 0;
	for (const char *l = uevent; *l;) {
		size_t len = strcspn(l, "\n");
		const char *eq = memchr(l, '=', len);
		if (eq) {
			size_t klen = (size_t)(eq - l);
			if (dm_uevent_key_is_valid(l, klen) && !dm_hook_env_name_is_refused(l, klen) &&
			    !env_is_reserved(l, klen) && !env_has(e, l, klen) &&
			    value_is_clean(eq + 1, len - klen - 1)) {
				int r = env_add(e, l, klen, eq + 1, len - klen - 1);
				if (r < 0)
					return r;
			}
		}
		l += len + (l[len] == '\n');
	}
	return 0;
}

int dm_hook_env_build(const char *const *vars, const char *uevent, char ***ret)
{
	struct env e = { 0 };
	int r = 0;
	for (const char *const *x = vars; !r && x && *x; x++) {
		const char *eq = strchr(*x, '=');
		r = eq ? env_add(&e, *x, (size_t)(eq - *x), eq + 1, strlen(eq + 1)) : -EINVAL;
	}
	if (!r && uevent)
		r = env_add_uevent(&e, uevent);
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

/* What is read under the model lock, copied out before a hook runs. */
struct dev_info {
	char path[PATH_MAX];
	char *bus;
	char *class;
	char *kernel_driver; /* the kernel's driver of the device, or NULL */
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
	const char *kdrv = dm_device_get_kernel_driver(dev);
	ret->kernel_driver = kdrv ? strdup(kdrv) : NULL;
	dm_model_unlock(m);

	if (r >= 0 && ((bus && !ret->bus) || (class && !ret->class) || (kdrv && !ret->kernel_driver)))
		r = -ENOMEM;
	if (r < 0) {
		free(ret->bus);
		free(ret->class);
		free(ret->kernel_driver);
		return r;
	}
	return 0;
}

/* Adds "KEY=VALUE" to @vars (room for it was made) when @value is set. */
static int var_add(char **vars, size_t *n, const char *key, const char *value)
{
	if (!value)
		return 0; /* unset, as udev leaves out what a device lacks */
	if (asprintf(&vars[*n], "%s=%s", key, value) < 0)
		return -ENOMEM;
	vars[++*n] = NULL;
	return 0;
}

int dm_hook_env(struct dm_device *dev, const char *action, const char *driver,
		const char *const *extra, char ***ret)
{
	struct dev_info info;
	char devname[PATH_MAX];
	char *uevent = malloc(DM_ATTR_MAX + 1);
	bool has_devname = false;
	size_t n_extra = 0, n = 0;
	int r;

	if (!uevent)
		return -ENOMEM;
	r = dev_info_read(dev, &info);
	if (r < 0) {
		free(uevent);
		return r;
	}
	/* values are read through the accessor, which takes the lock itself */
	if (dm_device_get_value(dev, "uevent", uevent, DM_ATTR_MAX + 1) < 0 ||
	    dm_uevent_check(uevent) < 0)
		uevent[0] = '\0'; /* the udev source logged it */
	if (uevent_devname(uevent, devname, sizeof(devname)) == 0)
		has_devname = true;
	else if (dm_device_get_value(dev, "devnode", devname, sizeof(devname)) > 0)
		has_devname = strncmp(devname, "/dev/", 5) == 0 &&
			      dm_uevent_check_devname(devname + 5) == 0 &&
			      value_is_clean(devname, strlen(devname));

	for (const char *const *x = extra; x && *x; x++)
		n_extra++;
	char **vars = calloc(9 + n_extra + 1, sizeof(*vars));
	r = vars ? 0 : -ENOMEM;
	if (!r)
		r = var_add(vars, &n, "ACTION", action);
	if (!r)
		r = var_add(vars, &n, "DRIVERFS_PATH", info.path);
	if (!r)
		r = var_add(vars, &n, "DEVPATH", dm_device_get_devpath(dev));
	if (!r)
		r = var_add(vars, &n, "BUS", info.bus);
	if (!r)
		r = var_add(vars, &n, "CLASS", info.class);
	if (!r)
		r = var_add(vars, &n, "DRIVER", driver);
	if (!r)
		r = var_add(vars, &n, "KERNEL_DRIVER", info.kernel_driver);
	if (!r)
		r = var_add(vars, &n, "DEVNAME", has_devname ? devname : NULL);
	if (!r)
		r = var_add(vars, &n, "PATH", HOOK_PATH);
	for (size_t i = 0; !r && i < n_extra; i++)
		if (!strchr(extra[i], '='))
			r = -EINVAL;
		else if (!(vars[n] = strdup(extra[i])))
			r = -ENOMEM;
		else
			vars[++n] = NULL;
	if (!r)
		r = dm_hook_env_build((const char *const *)vars, uevent, ret);
	dm_strv_free(vars);
	free(uevent);
	free(info.bus);
	free(info.class);
	free(info.kernel_driver);
	return r;
}
