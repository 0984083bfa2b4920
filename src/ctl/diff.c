/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * diff.c - driverfsctl diff A B: two models, each a saved snapshot or a
 * mount (read as driverfsctl save reads it), compared.
 *
 * Devices are the same device when they have the same path under root/.
 * Of those only on one side, a device of A and one of B are one device
 * moved when they have one identity and no other device on either side
 * has it: a bus device with a serial number its bus, vendor, product and
 * serial; any other bus device its bus and kernel name; a class device its
 * class and name. Their descendants move with them (the same path below
 * each). For every device on both sides the members (bus, class,
 * interface, driver, kernel driver, power) and the files (values, files
 * and attribute directories, by path under the device) are compared,
 * leaving out volatile ones (dm_snapshot_is_volatile()); then the
 * drivers of each bus, and the device links (A's ends taken to where
 * they moved). Files read from a hostile machine's snapshot are text to
 * show: shown escaped, never trusted for a length or a path.
 *
 * The result is built as one JSON document (--json prints it) and the
 * text is printed from that document, so the two never disagree.
 */
#include "core/array.h"
#include "commands.h"
#include "ctl.h"

#include "snapshot/format.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct dev {
	const char *path; /* into the document */
	json_object *obj;
	ssize_t match; /* its index on the other side, or -1 */
	char *key; /* its identity, for a move (NULL: none) */
};

struct side {
	const char *arg;
	json_object *doc;
	struct dev *devs; /* by path */
	size_t n;
};

static const char *str(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : NULL;
}

static json_object *member(json_object *o, const char *key, json_type type)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, type) ? v
											   : NULL;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct dev *)a)->path, ((const struct dev *)b)->path);
}

static ssize_t find(const struct side *s, const char *path)
{
	struct dev k = { .path = path };
	struct dev *d = bsearch(&k, s->devs, s->n, sizeof(k), by_path);
	return d ? d - s->devs : -1;
}

/* @arg: a directory is a mount, anything else a snapshot file. CTL_OK, or
 * the error said and CTL_USAGE (diff's "trouble"). */
static int load(struct side *s, const char *arg)
{
	struct stat st;
	s->arg = arg;
	if (stat(arg, &st) < 0) {
		ctl_fail(arg, NULL, errno);
		return CTL_USAGE;
	}
	if (S_ISDIR(st.st_mode)) {
		if (ctl_read_model(arg, false, &s->doc) != CTL_OK)
			return CTL_USAGE;
	} else if (!(s->doc = json_object_from_file(arg))) {
		fprintf(stderr, "driverfsctl: %s: not a snapshot: %s", arg, json_util_get_last_err());
		return CTL_USAGE;
	}
	const char *format = str(s->doc, "format");
	json_object *devices = member(s->doc, "devices", json_type_array);
	if (!format || strcmp(format, DM_SNAPSHOT_FORMAT) != 0 || !devices) {
		fprintf(stderr, "driverfsctl: %s: not a snapshot (no \"format\": \"%s\" and "
				"\"devices\")\n",
			arg, DM_SNAPSHOT_FORMAT);
		return CTL_USAGE;
	}
	size_t n = json_object_array_length(devices);
	s->devs = calloc(n ? n : 1, sizeof(*s->devs));
	if (!s->devs) {
		ctl_fail(arg, NULL, ENOMEM);
		return CTL_USAGE;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *d = json_object_array_get_idx(devices, i);
		const char *path = json_object_is_type(d, json_type_object) ? str(d, "path") : NULL;
		if (!path) {
			fprintf(stderr, "driverfsctl: %s: devices[%zu]: no \"path\"\n", arg, i);
			return CTL_USAGE;
		}
		s->devs[i] = (struct dev){ .path = path, .obj = d, .match = -1 };
	}
	s->n = n;
	qsort(s->devs, n, sizeof(*s->devs), by_path);
	for (size_t i = 1; i < n; i++)
		if (strcmp(s->devs[i - 1].path, s->devs[i].path) == 0) {
			fprintf(stderr, "driverfsctl: %s: the device %s is listed twice\n", arg,
				s->devs[i].path);
			return CTL_USAGE;
		}
	return CTL_OK;
}

static void side_free(struct side *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->devs[i].key);
	free(s->devs);
	json_object_put(s->doc);
}

/* ---- pairing ---- */

/* The identity a move keeps (see the top of the file), malloc()ed, or NULL. */
static char *identity(const struct dev *d)
{
	const char *bus = str(d->obj, "bus"), *cls = str(d->obj, "class");
	const char *name = str(d->obj, "sysname");
	if (!name)
		name = strrchr(d->path, '/') ? strrchr(d->path, '/') + 1 : d->path;
	json_object *values = member(d->obj, "values", json_type_object);
	const char *serial = str(values, "serial");
	char *key = NULL;
	int r = -1;
	if (bus && serial && *serial) {
		const char *vendor = str(values, "idVendor"), *product = str(values, "idProduct");
		if (!vendor)
			vendor = str(values, "vendor"), product = str(values, "device");
		r = asprintf(&key, "s\037%s\037%s\037%s\037%s", bus, vendor ? vendor : "",
			     product ? product : "", serial);
	} else if (bus) {
		r = asprintf(&key, "b\037%s\037%s", bus, name);
	} else if (cls) {
		r = asprintf(&key, "c\037%s\037%s", cls, name);
	}
	return r < 0 ? NULL : key;
}

struct keyed {
	const char *key;
	size_t index;
};

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct keyed *)a)->key, ((const struct keyed *)b)->key);
}

/* The unmatched devices of @s that have an identity, sorted by it. */
static struct keyed *unmatched_keys(struct side *s, size_t *ret_n)
{
	struct keyed *k = calloc(s->n ? s->n : 1, sizeof(*k));
	size_t n = 0;
	for (size_t i = 0; k && i < s->n; i++)
		if (s->devs[i].match < 0 && (s->devs[i].key = identity(&s->devs[i])))
			k[n++] = (struct keyed){ s->devs[i].key, i };
	if (k)
		qsort(k, n, sizeof(*k), by_key);
	*ret_n = n;
	return k;
}

/* Whether k[i]'s key is k's only one of its value. */
static bool unique(const struct keyed *k, size_t n, size_t i)
{
	return (i == 0 || strcmp(k[i - 1].key, k[i].key) != 0) &&
	       (i + 1 == n || strcmp(k[i + 1].key, k[i].key) != 0);
}

static void match(struct side *a, size_t i, struct side *b, size_t j)
{
	a->devs[i].match = (ssize_t)j;
	b->devs[j].match = (ssize_t)i;
}

/* Same path; then one identity on each side; then below a moved device. */
static int pair(struct side *a, struct side *b)
{
	for (size_t i = 0; i < a->n; i++) {
		ssize_t j = find(b, a->devs[i].path);
		if (j >= 0)
			match(a, i, b, (size_t)j);
	}
	size_t na, nb;
	struct keyed *ka = unmatched_keys(a, &na), *kb = unmatched_keys(b, &nb);
	if (!ka || !kb) {
		free(ka);
		free(kb);
		return -ENOMEM;
	}
	for (size_t i = 0, j = 0; i < na && j < nb;) {
		int c = strcmp(ka[i].key, kb[j].key);
		if (c == 0 && unique(ka, na, i) && unique(kb, nb, j))
			match(a, ka[i].index, b, kb[j].index);
		if (c <= 0)
			i++;
		if (c >= 0)
			j++;
	}
	free(ka);
	free(kb);
	/* by path, ancestors first: a descendant finds its ancestor paired */
	for (size_t i = 0; i < a->n; i++) {
		if (a->devs[i].match >= 0)
			continue;
		char up[4096];
		const char *path = a->devs[i].path;
		if (strlen(path) >= sizeof(up))
			continue;
		strcpy(up, path);
		for (char *slash; (slash = strrchr(up, '/'));) {
			*slash = '\0';
			ssize_t anc = find(a, up);
			if (anc < 0 || a->devs[anc].match < 0)
				continue;
			const char *to = b->devs[a->devs[anc].match].path;
			if (strcmp(to, up) == 0)
				break; /* the ancestor did not move */
			char *cand;
			if (asprintf(&cand, "%s%s", to, path + strlen(up)) < 0)
				return -ENOMEM;
			ssize_t j = find(b, cand);
			free(cand);
			if (j >= 0 && b->devs[j].match < 0)
				match(a, i, b, (size_t)j);
			break;
		}
	}
	return 0;
}

/* ---- the result ---- */

static json_object *jstr(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

/* A file's content as the result shows it: the text, or {"base64": ...},
 * {"error": ...}, {"unread": true}. */
static json_object *content(json_object *file)
{
	if (json_object_is_type(file, json_type_string))
		return json_object_get(file);
	const char *v;
	json_object *o = json_object_new_object();
	if ((v = str(file, "text")))
		return json_object_put(o), json_object_new_string(v);
	if ((v = str(file, "base64")))
		json_object_object_add(o, "base64", json_object_new_string(v));
	else if ((v = str(file, "error")))
		json_object_object_add(o, "error", json_object_new_string(v));
	else
		json_object_object_add(o, "unread", json_object_new_boolean(1));
	return o;
}

struct file {
	char *name; /* under the device: "queue/scheduler" */
	json_object *content; /* a reference */
};

struct files {
	struct file *v;
	size_t n, cap;
	int err;
};

static void files_add(struct files *f, const char *dir, const char *name, json_object *c)
{
	if (f->err)
		return;
	if (!dm_array_grow((void **)&f->v, &f->cap, f->n, sizeof(*f->v), 32)) {
		f->err = -ENOMEM;
		return;
	}
	char *full;
	if (asprintf(&full, "%s%s%s", dir, *dir ? "/" : "", name) < 0) {
		f->err = -ENOMEM;
		return;
	}
	f->v[f->n++] = (struct file){ full, content(c) };
}

/* Every value and file of @owner (a device or an attribute directory),
 * its directories' too, named by their paths under the device. */
static void files_of(struct files *f, json_object *owner, const char *dir, int depth)
{
	json_object *values = member(owner, "values", json_type_object);
	json_object *files = member(owner, "files", json_type_object);
	json_object *dirs = member(owner, "dirs", json_type_object);
	if (values) {
		json_object_object_foreach(values, name, v)
			if (json_object_is_type(v, json_type_string))
				files_add(f, dir, name, v);
	}
	if (files) {
		json_object_object_foreach(files, name, v)
			if (json_object_is_type(v, json_type_object))
				files_add(f, dir, name, v);
	}
	if (dirs && depth < DM_SNAPSHOT_DIR_DEPTH_MAX) {
		json_object_object_foreach(dirs, name, v) {
			char *sub;
			if (asprintf(&sub, "%s%s%s", dir, *dir ? "/" : "", name) < 0) {
				f->err = -ENOMEM;
				return;
			}
			files_of(f, v, sub, depth + 1);
			free(sub);
		}
	}
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct file *)a)->name, ((const struct file *)b)->name);
}

static void files_free(struct files *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].name);
		json_object_put(f->v[i].content);
	}
	free(f->v);
}

struct result {
	json_object *doc;
	json_object *added, *removed, *moved, *changes, *values, *drivers_added,
		*drivers_removed, *links_added, *links_removed;
	size_t volatile_skipped;
	int err;
};

static void add_value(struct result *res, const char *path, const char *name, json_object *a,
		      json_object *b)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "path", json_object_new_string(path));
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "a", a ? json_object_get(a) : NULL);
	json_object_object_add(o, "b", b ? json_object_get(b) : NULL);
	json_object_array_add(res->values, o);
}

/* The values and files of the pair, by name. */
static void compare_files(struct result *res, json_object *da, json_object *db, const char *path)
{
	struct files fa = { 0 }, fb = { 0 };
	files_of(&fa, da, "", 0);
	files_of(&fb, db, "", 0);
	if (fa.err || fb.err) {
		res->err = -ENOMEM;
		goto out;
	}
	/* qsort() takes no NULL, even for nothing */
	if (fa.n)
		qsort(fa.v, fa.n, sizeof(*fa.v), by_name);
	if (fb.n)
		qsort(fb.v, fb.n, sizeof(*fb.v), by_name);
	for (size_t i = 0, j = 0; i < fa.n || j < fb.n;) {
		int c = i == fa.n ? 1 : j == fb.n ? -1 : strcmp(fa.v[i].name, fb.v[j].name);
		const char *name = c <= 0 ? fa.v[i].name : fb.v[j].name;
		json_object *a = c <= 0 ? fa.v[i].content : NULL;
		json_object *b = c >= 0 ? fb.v[j].content : NULL;
		if (dm_snapshot_is_volatile(name))
			res->volatile_skipped++;
		else if (!a || !b || !json_object_equal(a, b))
			add_value(res, path, name, a, b);
		if (c <= 0)
			i++;
		if (c >= 0)
			j++;
	}
out:
	files_free(&fa);
	files_free(&fb);
}

static void compare_pair(struct result *res, const struct dev *a, const struct dev *b)
{
	static const char *const members[] = {
		"bus", "class", "interface", "kernel_driver", "driver", "power",
	};
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
		const char *va = str(a->obj, members[i]), *vb = str(b->obj, members[i]);
		if (va == vb || (va && vb && strcmp(va, vb) == 0))
			continue;
		json_object *o = json_object_new_object();
		json_object_object_add(o, "path", json_object_new_string(b->path));
		json_object_object_add(o, "member", json_object_new_string(members[i]));
		json_object_object_add(o, "a", jstr(va));
		json_object_object_add(o, "b", jstr(vb));
		json_object_array_add(res->changes, o);
	}
	compare_files(res, a->obj, b->obj, b->path);
}

/* How many of @s's devices below @i (by path) moved with it. */
static size_t moved_below(const struct side *a, const struct side *b, size_t i)
{
	size_t n = 0, len = strlen(a->devs[i].path);
	for (size_t k = i + 1; k < a->n; k++) {
		const char *p = a->devs[k].path;
		if (strncmp(p, a->devs[i].path, len) != 0 || (len && p[len] != '/'))
			continue;
		n += a->devs[k].match >= 0 && strcmp(p, b->devs[a->devs[k].match].path) != 0;
	}
	return n;
}

/* Whether the device's parent moved too (it moved with it). */
static bool parent_moved(const struct side *a, const struct side *b, const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return false;
	char *up = strndup(path, (size_t)(slash - path));
	ssize_t i = up ? find(a, up) : -1;
	free(up);
	return i >= 0 && a->devs[i].match >= 0 &&
	       strcmp(a->devs[i].path, b->devs[a->devs[i].match].path) != 0;
}

/* "bus/driver" of every driver of @doc, sorted, into @out (names borrowed
 * from json-c's strings, copied). */
static int bus_drivers(json_object *doc, char ***ret, size_t *ret_n)
{
	json_object *buses = member(doc, "buses", json_type_array);
	size_t n = 0, cap = 0;
	char **v = NULL;
	for (size_t i = 0; buses && i < json_object_array_length(buses); i++) {
		json_object *bus = json_object_array_get_idx(buses, i);
		json_object *drivers = member(bus, "drivers", json_type_array);
		const char *bn = str(bus, "name");
		for (size_t j = 0; bn && drivers && j < json_object_array_length(drivers); j++) {
			const char *dn = str(json_object_array_get_idx(drivers, j), "name");
			if (!dn)
				continue;
			if (!dm_array_grow((void **)&v, &cap, n, sizeof(*v), 64))
				goto fail;
			if (asprintf(&v[n], "%s/%s", bn, dn) < 0)
				goto fail;
			n++;
		}
	}
	*ret = v;
	*ret_n = n;
	return 0;
fail:
	ctl_names_free(v, n);
	return -ENOMEM;
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted lists @va and @vb merged: what only one has, into the arrays. */
static void set_diff(char **va, size_t na, char **vb, size_t nb, json_object *only_a,
		     json_object *only_b, json_object *(*make)(const char *))
{
	if (na)
		qsort(va, na, sizeof(*va), by_string);
	if (nb)
		qsort(vb, nb, sizeof(*vb), by_string);
	for (size_t i = 0, j = 0; i < na || j < nb;) {
		int c = i == na ? 1 : j == nb ? -1 : strcmp(va[i], vb[j]);
		if (c < 0)
			json_object_array_add(only_a, make(va[i]));
		else if (c > 0)
			json_object_array_add(only_b, make(vb[j]));
		if (c <= 0)
			i++;
		if (c >= 0)
			j++;
	}
}

static json_object *make_string(const char *s)
{
	return json_object_new_string(s);
}

/* "supplier\037consumer" into {"supplier", "consumer"}. */
static json_object *make_link(const char *s)
{
	json_object *o = json_object_new_object();
	const char *sep = strchr(s, '\037');
	json_object_object_add(o, "supplier", json_object_new_string_len(s, (int)(sep - s)));
	json_object_object_add(o, "consumer", json_object_new_string(sep + 1));
	return o;
}

/* The links of @s as "supplier\037consumer", A's ends (@map) taken to where
 * they moved in B. */
static int links_of(const struct side *s, const struct side *map, char ***ret, size_t *ret_n)
{
	json_object *links = member(s->doc, "links", json_type_array);
	size_t n = links ? json_object_array_length(links) : 0, k = 0;
	char **v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		json_object *l = json_object_array_get_idx(links, i);
		const char *sup = str(l, "supplier"), *con = str(l, "consumer");
		if (!sup || !con)
			continue;
		if (map) {
			ssize_t a = find(s, sup), b = find(s, con);
			if (a >= 0 && s->devs[a].match >= 0)
				sup = map->devs[s->devs[a].match].path;
			if (b >= 0 && s->devs[b].match >= 0)
				con = map->devs[s->devs[b].match].path;
		}
		if (asprintf(&v[k], "%s\037%s", sup, con) < 0) {
			ctl_names_free(v, k);
			return -ENOMEM;
		}
		k++;
	}
	*ret = v;
	*ret_n = k;
	return 0;
}

static int compare(struct side *a, struct side *b, struct result *res)
{
	int r = pair(a, b);
	if (r < 0)
		return r;
	for (size_t i = 0; i < a->n; i++)
		if (a->devs[i].match < 0)
			json_object_array_add(res->removed, json_object_new_string(a->devs[i].path));
	for (size_t j = 0; j < b->n; j++)
		if (b->devs[j].match < 0)
			json_object_array_add(res->added, json_object_new_string(b->devs[j].path));
	for (size_t i = 0; i < a->n; i++) {
		const struct dev *da = &a->devs[i];
		if (da->match < 0)
			continue;
		const struct dev *db = &b->devs[da->match];
		if (strcmp(da->path, db->path) != 0 && !parent_moved(a, b, da->path)) {
			json_object *o = json_object_new_object();
			json_object_object_add(o, "from", json_object_new_string(da->path));
			json_object_object_add(o, "to", json_object_new_string(db->path));
			json_object_object_add(o, "below",
					       json_object_new_int64((int64_t)moved_below(a, b, i)));
			json_object_array_add(res->moved, o);
		}
		compare_pair(res, da, db);
	}
	char **va, **vb;
	size_t na, nb;
	if ((r = bus_drivers(a->doc, &va, &na)) < 0)
		return r;
	if ((r = bus_drivers(b->doc, &vb, &nb)) < 0) {
		ctl_names_free(va, na);
		return r;
	}
	set_diff(va, na, vb, nb, res->drivers_removed, res->drivers_added, make_string);
	ctl_names_free(va, na);
	ctl_names_free(vb, nb);
	if ((r = links_of(a, b, &va, &na)) < 0)
		return r;
	if ((r = links_of(b, NULL, &vb, &nb)) < 0) {
		ctl_names_free(va, na);
		return r;
	}
	set_diff(va, na, vb, nb, res->links_removed, res->links_added, make_link);
	ctl_names_free(va, na);
	ctl_names_free(vb, nb);
	return res->err;
}

/* ---- the text ---- */

/* @s as the text shows it: quoted, escaped (ctl_put_text()). */
static void put_quoted(const char *s)
{
	putchar('"');
	ctl_put_text(s, strlen(s), CTL_TEXT_QUOTED);
	putchar('"');
}

/* A path under root/ as "root/...", escaped. */
static void put_path(const char *path)
{
	fputs("root", stdout);
	if (*path)
		putchar('/');
	ctl_put(path);
}

static void put_content(json_object *c)
{
	const char *v;
	if (!c)
		fputs("(none)", stdout);
	else if (json_object_is_type(c, json_type_string))
		put_quoted(json_object_get_string(c));
	else if ((v = str(c, "base64")))
		printf("(binary, %zu bytes)", strlen(v) / 4 * 3);
	else if ((v = str(c, "error"))) {
		fputs("(read error ", stdout);
		ctl_put(v);
		putchar(')');
	} else
		fputs("(not read)", stdout);
}

static size_t len_of(json_object *a)
{
	return json_object_array_length(a);
}

/* The devices of @list (sorted by path) as whole subtrees: a device whose
 * ancestor is listed is counted on its top's line, not printed. */
static void put_subtrees(json_object *list, const char *sign)
{
	size_t n = len_of(list);
	for (size_t i = 0; i < n;) {
		const char *top = json_object_get_string(json_object_array_get_idx(list, i));
		size_t len = strlen(top), below = 0;
		for (i++; i < n; i++, below++) {
			const char *p = json_object_get_string(json_object_array_get_idx(list, i));
			if (strncmp(p, top, len) != 0 || (len && p[len] != '/'))
				break;
		}
		printf("%s device ", sign);
		put_path(top);
		if (below)
			printf(" (and %zu below it)", below);
		putchar('\n');
	}
}

static void print_text(const struct result *res, const char *an, const char *bn)
{
	printf("--- %s\n+++ %s\n", an, bn);
	put_subtrees(res->removed, "-");
	put_subtrees(res->added, "+");
	for (size_t i = 0; i < len_of(res->moved); i++) {
		json_object *o = json_object_array_get_idx(res->moved, i);
		fputs("> device ", stdout);
		put_path(str(o, "from"));
		fputs(" -> ", stdout);
		put_path(str(o, "to"));
		json_object *below = member(o, "below", json_type_int);
		int64_t n = below ? json_object_get_int64(below) : 0;
		if (n)
			printf(" (and %lld below it)", (long long)n);
		putchar('\n');
	}
	for (size_t i = 0; i < len_of(res->changes); i++) {
		json_object *o = json_object_array_get_idx(res->changes, i);
		const char *a = str(o, "a"), *b = str(o, "b");
		fputs("~ ", stdout);
		put_path(str(o, "path"));
		printf(" %s: ", str(o, "member"));
		a ? put_quoted(a) : (void)fputs("(none)", stdout);
		fputs(" -> ", stdout);
		b ? put_quoted(b) : (void)fputs("(none)", stdout);
		putchar('\n');
	}
	for (size_t i = 0; i < len_of(res->values); i++) {
		json_object *o = json_object_array_get_idx(res->values, i);
		json_object *a = json_object_object_get(o, "a");
		json_object *b = json_object_object_get(o, "b");
		fputs(!a ? "+ " : !b ? "- " : "~ ", stdout);
		put_path(str(o, "path"));
		putchar('/');
		ctl_put(str(o, "name"));
		fputs(": ", stdout);
		if (a && b) {
			put_content(a);
			fputs(" -> ", stdout);
			put_content(b);
		} else {
			put_content(a ? a : b);
		}
		putchar('\n');
	}
	const struct {
		json_object *list;
		const char *sign;
	} drivers[] = { { res->drivers_removed, "-" }, { res->drivers_added, "+" } };
	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < len_of(drivers[k].list); i++) {
			printf("%s driver ", drivers[k].sign);
			ctl_put(json_object_get_string(json_object_array_get_idx(drivers[k].list, i)));
			putchar('\n');
		}
	const struct {
		json_object *list;
		const char *sign;
	} links[] = { { res->links_removed, "-" }, { res->links_added, "+" } };
	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < len_of(links[k].list); i++) {
			json_object *o = json_object_array_get_idx(links[k].list, i);
			printf("%s link ", links[k].sign);
			put_path(str(o, "supplier"));
			fputs(" -> ", stdout);
			put_path(str(o, "consumer"));
			putchar('\n');
		}
	printf("# %zu added, %zu removed, %zu moved, %zu members and %zu files changed; "
	       "%zu volatile files not compared\n",
	       len_of(res->added), len_of(res->removed), len_of(res->moved), len_of(res->changes),
	       len_of(res->values), res->volatile_skipped);
}

int ctl_cmd_diff(const char *mnt, int argc, char **argv)
{
	(void)mnt;
	const char *arg[2] = { NULL, NULL };
	bool json = false;
	int ret, n = 0;
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (argv[i][0] == '-' && argv[i][1])
			return ctl_usage_error("diff", "unknown option", argv[i]);
		else if (n == 2)
			return ctl_usage_error("diff", "unexpected argument", argv[i]);
		else
			arg[n++] = argv[i];
	}
	if (n < 2)
		return ctl_usage_error("diff", "needs two models: A B (snapshot files or mounts)",
				       NULL);
	const char *first = arg[0];
	struct side sa = { 0 }, sb = { 0 };
	struct result res = { 0 };
	ret = load(&sa, first);
	if (ret == CTL_OK)
		ret = load(&sb, arg[1]);
	if (ret == CTL_OK) {
		res.doc = json_object_new_object();
		json_object *devices = json_object_new_object(), *drivers = json_object_new_object(),
			    *links = json_object_new_object();
		json_object_object_add(res.doc, "a", json_object_new_string(first));
		json_object_object_add(res.doc, "b", json_object_new_string(arg[1]));
		json_object_object_add(res.doc, "devices", devices);
		json_object_object_add(devices, "added", res.added = json_object_new_array());
		json_object_object_add(devices, "removed", res.removed = json_object_new_array());
		json_object_object_add(devices, "moved", res.moved = json_object_new_array());
		json_object_object_add(res.doc, "changes", res.changes = json_object_new_array());
		json_object_object_add(res.doc, "values", res.values = json_object_new_array());
		json_object_object_add(res.doc, "drivers", drivers);
		json_object_object_add(drivers, "added", res.drivers_added = json_object_new_array());
		json_object_object_add(drivers, "removed",
				       res.drivers_removed = json_object_new_array());
		json_object_object_add(res.doc, "links", links);
		json_object_object_add(links, "added", res.links_added = json_object_new_array());
		json_object_object_add(links, "removed", res.links_removed = json_object_new_array());
		int r = compare(&sa, &sb, &res);
		if (r < 0) {
			ctl_fail("diff", NULL, -r);
			ret = CTL_USAGE;
		}
	}
	if (ret == CTL_OK) {
		json_object_object_add(res.doc, "volatile_skipped",
				       json_object_new_int64((int64_t)res.volatile_skipped));
		if (json)
			ctl_print_json(res.doc);
		else
			print_text(&res, first, arg[1]);
		size_t differences = len_of(res.added) + len_of(res.removed) + len_of(res.moved) +
				     len_of(res.changes) + len_of(res.values) +
				     len_of(res.drivers_added) + len_of(res.drivers_removed) +
				     len_of(res.links_added) + len_of(res.links_removed);
		ret = differences ? CTL_FAILED : CTL_OK;
		if (fflush(stdout) != 0) {
			ctl_fail("standard output", NULL, errno ? errno : EIO);
			ret = CTL_USAGE;
		}
	}
	json_object_put(res.doc);
	side_free(&sa);
	side_free(&sb);
	return ret;
}
