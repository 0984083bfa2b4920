/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* files.c - a loaded snapshot's files of format 2: modes of their own,
 * binary contents and attribute directories (docs/snapshot.md). */
#include "files.h"

#include "base64.h"
#include "core/array.h"
#include "format.h"
#include "json-stream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct saved_file {
	const struct dm_attribute *attr; /* interned: its path names the file */
	char *data; /* NULL: the saved read failed (reads give @err) */
	size_t len;
	int err; /* the saved read's errno, else EIO */
};

struct dm_snapshot_files {
	struct dm_driver *drv;
	struct saved_file *f; /* by path */
	size_t n, cap;
	char **dirs; /* by path */
	size_t n_dirs, cap_dirs;
};

static int files_show(struct dm_device *dev, const struct dm_attribute *attr, char **ret,
		      size_t *ret_len);

/* What every saved file is made like: a value that never changes; and
 * one whose saved read failed, which gives its error at each read (as a
 * live value: no read when it is stat()ed, for the size of a static one,
 * whose failure would hide the file). */
static const struct dm_attribute saved_kind = { .show_alloc = files_show };
static const struct dm_attribute failed_kind = { .flags = DM_ATTR_LIVE,
						 .show_alloc = files_show };

struct dm_snapshot_files *dm_snapshot_files_new(void)
{
	return calloc(1, sizeof(struct dm_snapshot_files));
}

void dm_snapshot_files_free(struct dm_snapshot_files *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++)
		free(f->f[i].data);
	free(f->f);
	for (size_t i = 0; i < f->n_dirs; i++)
		free(f->dirs[i]);
	free(f->dirs);
	if (f->drv)
		dm_driver_unref(f->drv);
	free(f);
}

bool dm_snapshot_files_empty(const struct dm_snapshot_files *f)
{
	return !f->n && !f->n_dirs;
}

void dm_snapshot_files_set_driver(struct dm_snapshot_files *f, struct dm_driver *drv)
{
	f->drv = drv;
}

struct dm_driver *dm_snapshot_files_get_driver(const struct dm_snapshot_files *f)
{
	return f ? f->drv : NULL;
}

/* ---- parsing ---- */

/* "@dir/@name" (or @name) into @buf: -EINVAL when @name is no valid name
 * or the path is too long. */
static int join(const char *dir, const char *name, char *buf, size_t size)
{
	if (!dm_name_is_valid(name) || !dm_snapshot_name_is_clean(name))
		return -EINVAL;
	int n = dir ? snprintf(buf, size, "%s/%s", dir, name) : snprintf(buf, size, "%s", name);
	return n < 0 || (size_t)n >= size ? -EINVAL : 0;
}

static int add_file(struct dm_snapshot_files *f, const char *path, mode_t mode, char *data,
		    size_t len, int err)
{
	const struct dm_attribute *a =
		dm_attribute_intern(data ? &saved_kind : &failed_kind, path, mode);
	if (!a || !dm_array_grow((void **)&f->f, &f->cap, f->n, sizeof(*f->f), 8)) {
		free(data);
		return -ENOMEM;
	}
	f->f[f->n++] = (struct saved_file){ .attr = a, .data = data, .len = len,
					     .err = err ? err : EIO };
	return 0;
}

/* A "files" entry: {"mode": "0644"} and at most one of "text", "base64",
 * "error". */
static int parse_file(struct dm_snapshot_files *f, const char *path, json_object *o)
{
	json_object *mode, *text = NULL, *b64 = NULL, *error = NULL;
	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "mode", &mode) ||
	    !json_object_is_type(mode, json_type_string))
		return -EINVAL;
	json_object_object_get_ex(o, "text", &text);
	json_object_object_get_ex(o, "base64", &b64);
	json_object_object_get_ex(o, "error", &error);
	int err = error && json_object_is_type(error, json_type_string)
			  ? dm_snapshot_errno(json_object_get_string(error))
			  : 0;
	if ((text && !json_object_is_type(text, json_type_string)) ||
	    (b64 && !json_object_is_type(b64, json_type_string)) || (error && !err) ||
	    (text != NULL) + (b64 != NULL) + (error != NULL) > 1 ||
	    json_object_object_length(o) != 1 + (text != NULL) + (b64 != NULL) + (error != NULL))
		return -EINVAL;
	const char *m = json_object_get_string(mode);
	char *end;
	unsigned long bits = strtoul(m, &end, 8);
	if (!*m || *end || strlen(m) > 4 || m[0] == '-' || m[0] == '+' || bits > 0777)
		return -EINVAL;
	char *data = NULL;
	size_t len = 0;
	if (text) {
		len = (size_t)json_object_get_string_len(text);
		if (len > DM_SNAPSHOT_FILE_MAX || !(data = malloc(len + 1)))
			return len > DM_SNAPSHOT_FILE_MAX ? -EINVAL : -ENOMEM;
		memcpy(data, json_object_get_string(text), len);
		data[len] = '\0';
	} else if (b64) {
		size_t n = (size_t)json_object_get_string_len(b64);
		if (n / 4 * 3 > DM_SNAPSHOT_FILE_MAX + 2)
			return -EINVAL;
		int r = dm_base64_decode(json_object_get_string(b64), n, &data, &len);
		if (r < 0)
			return r;
	}
	return add_file(f, path, (mode_t)bits, data, len, err);
}

static int parse_dir(struct dm_snapshot_files *f, json_object *o, const char *dir, int depth,
		     char *err, size_t err_size);

static int fail(char *err, size_t size, int r, const char *what, const char *dir,
		const char *name)
{
	if (r == -ENOMEM)
		return r;
	return dm_snapshot_fail(err, size, "%s %s%s%s: not a valid name, path or entry", what,
				dir ? dir : "", dir ? "/" : "", name);
}

static int parse_members(struct dm_snapshot_files *f, json_object *o, const char *dir, int depth,
			 char *err, size_t err_size)
{
	char path[DM_SNAPSHOT_DIR_PATH_MAX + 1 + 256];
	json_object *values = NULL, *files = NULL, *dirs = NULL;
	json_object_object_get_ex(o, "files", &files);
	json_object_object_get_ex(o, "dirs", &dirs);
	if (dir)
		json_object_object_get_ex(o, "values", &values);
	if ((values && !json_object_is_type(values, json_type_object)) ||
	    (files && !json_object_is_type(files, json_type_object)) ||
	    (dirs && !json_object_is_type(dirs, json_type_object)))
		return dm_snapshot_fail(err, err_size, "directory %s: values, files and dirs must "
					"be objects", dir ? dir : "(the device's)");
	if (values) {
		json_object_object_foreach(values, name, v) {
			int r = join(dir, name, path, sizeof(path));
			if (r < 0 || !json_object_is_type(v, json_type_string))
				return fail(err, err_size, -EINVAL, "value", dir, name);
			size_t len = (size_t)json_object_get_string_len(v);
			char *data = malloc(len + 2);
			if (!data)
				return -ENOMEM;
			memcpy(data, json_object_get_string(v), len);
			memcpy(data + len, "\n", 2);
			r = add_file(f, path, 0444, data, len + 1, 0);
			if (r < 0)
				return r;
		}
	}
	if (files) {
		json_object_object_foreach(files, name, v) {
			int r = join(dir, name, path, sizeof(path));
			if (r == 0)
				r = parse_file(f, path, v);
			if (r < 0)
				return fail(err, err_size, r, "file", dir, name);
		}
	}
	if (dirs) {
		json_object_object_foreach(dirs, name, v) {
			int r = join(dir, name, path, DM_SNAPSHOT_DIR_PATH_MAX + 1);
			if (r < 0 || depth >= DM_SNAPSHOT_DIR_DEPTH_MAX ||
			    !json_object_is_type(v, json_type_object))
				return fail(err, err_size, -EINVAL, "directory", dir, name);
			r = parse_dir(f, v, path, depth + 1, err, err_size);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int parse_dir(struct dm_snapshot_files *f, json_object *o, const char *dir, int depth,
		     char *err, size_t err_size)
{
	char *copy = strdup(dir);
	if (!copy ||
	    !dm_array_grow((void **)&f->dirs, &f->cap_dirs, f->n_dirs, sizeof(*f->dirs), 8)) {
		free(copy);
		return -ENOMEM;
	}
	f->dirs[f->n_dirs++] = copy;
	return parse_members(f, o, dir, depth, err, err_size);
}

static int file_cmp(const void *a, const void *b)
{
	return strcmp(dm_attribute_path(((const struct saved_file *)a)->attr),
		      dm_attribute_path(((const struct saved_file *)b)->attr));
}

static int dir_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int dm_snapshot_files_parse(struct dm_snapshot_files *f, json_object *o, char *err,
			    size_t err_size)
{
	int r = parse_members(f, o, NULL, 0, err, err_size);
	if (r < 0)
		return r;
	if (f->n)
		qsort(f->f, f->n, sizeof(*f->f), file_cmp);
	if (f->n_dirs)
		qsort(f->dirs, f->n_dirs, sizeof(*f->dirs), dir_cmp);
	for (size_t i = 1; i < f->n; i++)
		if (file_cmp(&f->f[i - 1], &f->f[i]) == 0)
			return dm_snapshot_fail(err, err_size, "file %s: listed twice",
						dm_attribute_path(f->f[i].attr));
	for (size_t i = 1; i < f->n_dirs; i++)
		if (strcmp(f->dirs[i - 1], f->dirs[i]) == 0)
			return dm_snapshot_fail(err, err_size, "directory %s: listed twice",
						f->dirs[i]);
	return 0;
}

/* ---- serving ---- */

static const struct dm_snapshot_files *files_of(struct dm_device *dev)
{
	return dm_device_get_bus_data(dev);
}

static const struct saved_file *find_file(const struct dm_snapshot_files *f, const char *path)
{
	size_t lo = 0, hi = f ? f->n : 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(path, dm_attribute_path(f->f[mid].attr));
		if (c == 0)
			return &f->f[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* Whether @path lies right in @dir (NULL: the device's own directory). */
static bool right_in(const char *path, const char *dir)
{
	if (!dir)
		return !strchr(path, '/');
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && path[n] == '/' && !strchr(path + n + 1, '/');
}

static int files_show(struct dm_device *dev, const struct dm_attribute *attr, char **ret,
		      size_t *ret_len)
{
	const struct saved_file *s = find_file(files_of(dev), dm_attribute_path(attr));
	if (!s)
		return -ENOENT;
	if (!s->data)
		return -s->err;
	char *copy = malloc(s->len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, s->data, s->len);
	copy[s->len] = '\0';
	*ret = copy;
	*ret_len = s->len;
	return 0;
}

static int files_for_each(struct dm_device *dev, const char *dir,
			  int (*fn)(const struct dm_attribute *, void *), void *data)
{
	const struct dm_snapshot_files *f = files_of(dev);
	int r = 0;
	for (size_t i = 0; f && !r && i < f->n; i++)
		if (right_in(dm_attribute_path(f->f[i].attr), dir))
			r = fn(f->f[i].attr, data);
	return r;
}

static const struct dm_attribute *files_find(struct dm_device *dev, const char *dir,
					     const char *name)
{
	char path[DM_SNAPSHOT_DIR_PATH_MAX + 1 + 256];
	if (join(dir, name, path, sizeof(path)) < 0)
		return NULL;
	const struct saved_file *s = find_file(files_of(dev), path);
	return s ? s->attr : NULL;
}

static int files_for_each_dir(struct dm_device *dev, const char *dir,
			      int (*fn)(const char *, void *), void *data)
{
	const struct dm_snapshot_files *f = files_of(dev);
	int r = 0;
	for (size_t i = 0; f && !r && i < f->n_dirs; i++)
		if (right_in(f->dirs[i], dir)) {
			const char *slash = strrchr(f->dirs[i], '/');
			r = fn(slash ? slash + 1 : f->dirs[i], data);
		}
	return r;
}

static bool files_has_dir(struct dm_device *dev, const char *dir)
{
	const struct dm_snapshot_files *f = files_of(dev);
	return f && dir && f->n_dirs &&
	       bsearch(&dir, f->dirs, f->n_dirs, sizeof(*f->dirs), dir_cmp) != NULL;
}

static bool files_has(struct dm_device *dev, const char *name)
{
	return files_find(dev, NULL, name) || files_has_dir(dev, name);
}

const struct dm_attribute_group dm_snapshot_files_group = {
	.for_each = files_for_each,
	.find = files_find,
	.for_each_dir = files_for_each_dir,
	.has_dir = files_has_dir,
	.has = files_has,
};
