/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* record.c - the transition record file (record.h). */
#include "core/array.h"
#include "pm/record.h"

#include "core/hashmap.h"
#include "core/model.h"
#include "util/log.h"
#include "util/replace.h"
#include "util/trust.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A file longer than this is not one we wrote: it is not read. */
#define RECORD_MAX_BYTES (64u << 20)
/* Compact once the file has this many lines more than twice the devices
 * it lists. */
#define RECORD_SLACK 1024

/* A listed device, and the state its driver keeps to resume it. */
struct entry {
	char *state; /* NULL: none */
	char devpath[]; /* the key */
};

struct dm_pm_record {
	char *path;
	pthread_mutex_t lock;
	int fd; /* -1 while there is no file of ours */
	struct dm_hashmap set; /* devpath -> struct entry */
	atomic_size_t n; /* entries in @set, for a look without the lock */
	size_t lines; /* in the file */
	/* what dm_pm_record_load() found: devpath -> struct entry with a
	 * state, until dm_pm_record_clear() */
	struct dm_hashmap kept;
};

static struct entry *entry_new(const char *devpath)
{
	size_t len = strlen(devpath);
	struct entry *e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return NULL;
	e->state = NULL;
	memcpy(e->devpath, devpath, len + 1);
	return e;
}

static void entry_free(struct entry *e)
{
	if (!e)
		return;
	free(e->state);
	free(e);
}

/* Creates the directories above @path that are missing. */
static int make_parents(const char *path)
{
	char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	int r = 0;
	for (char *p = strchr(copy + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (mkdir(copy, 0755) < 0 && errno != EEXIST) {
			r = -errno;
			break;
		}
		*p = '/';
	}
	free(copy);
	return r;
}

int dm_pm_record_new(const char *path, struct dm_pm_record **ret)
{
	if (!path || path[0] != '/' || path[strlen(path) - 1] == '/')
		return -EINVAL;
	int r = make_parents(path);
	if (r < 0)
		return r;
	struct dm_pm_record *rec = calloc(1, sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	rec->path = strdup(path);
	if (!rec->path) {
		free(rec);
		return -ENOMEM;
	}
	rec->fd = -1;
	pthread_mutex_init(&rec->lock, NULL);
	dm_hashmap_init(&rec->set, dm_hash_string, dm_cmp_string);
	dm_hashmap_init(&rec->kept, dm_hash_string, dm_cmp_string);
	*ret = rec;
	return 0;
}

static int free_value(void *value, void *data)
{
	(void)data;
	entry_free(value);
	return 0;
}

/* Empties @map of entries (the keys are theirs). */
static void map_clear(struct dm_hashmap *map)
{
	dm_hashmap_for_each(map, free_value, NULL);
	dm_hashmap_done(map);
	dm_hashmap_init(map, dm_hash_string, dm_cmp_string);
}

static void set_clear_locked(struct dm_pm_record *rec)
{
	map_clear(&rec->set);
	map_clear(&rec->kept);
	atomic_store(&rec->n, 0);
}

void dm_pm_record_free(struct dm_pm_record *rec)
{
	if (!rec)
		return;
	if (rec->fd >= 0)
		close(rec->fd);
	set_clear_locked(rec);
	dm_hashmap_done(&rec->set);
	dm_hashmap_done(&rec->kept);
	pthread_mutex_destroy(&rec->lock);
	free(rec->path);
	free(rec);
}

/* One whole line "<sign>DEVPATH" or, with @state, "=STATE DEVPATH" in one
 * write(2), so that a line is in the file or not. */
static int write_line(int fd, char sign, const char *state, const char *devpath)
{
	char buf[4096 + DM_PM_STATE_MAX + 2];
	int len = snprintf(buf, sizeof(buf), "%c%s%s%s\n", sign, state ? state : "",
			   state ? " " : "", devpath);
	if (len < 0 || (size_t)len >= sizeof(buf))
		return -ENAMETOOLONG;
	ssize_t n;
	while ((n = write(fd, buf, (size_t)len)) < 0 && errno == EINTR)
		;
	return n < 0 ? -errno : n != len ? -EIO : 0;
}

/* The file, created empty when this record has none open. */
static int open_locked(struct dm_pm_record *rec)
{
	if (rec->fd >= 0)
		return 0;
	/* no symlink followed (a link planted at the path must not make root
	 * truncate and write its target), and nothing but a regular file
	 * written: a fifo there would block the suspend forever */
	char why[64];
	int fd = dm_open_regular(rec->path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644, why,
				 sizeof(why));
	if (fd < 0) {
		log_err("%s: %s; the transition record cannot be written", rec->path,
			*why ? why : strerror(-fd));
		return fd;
	}
	rec->fd = fd;
	rec->lines = 0;
	return 0;
}

static void remove_locked(struct dm_pm_record *rec)
{
	if (rec->fd >= 0) {
		close(rec->fd);
		rec->fd = -1;
	}
	unlink(rec->path);
	rec->lines = 0;
}

int dm_pm_record_suspending(struct dm_pm_record *rec, const char *devpath)
{
	struct entry *e = NULL;
	int r = 0;
	pthread_mutex_lock(&rec->lock);
	if (dm_hashmap_get(&rec->set, devpath))
		goto out; /* listed already */
	e = entry_new(devpath);
	r = e ? open_locked(rec) : -ENOMEM;
	if (r == 0)
		r = write_line(rec->fd, '+', NULL, devpath);
	if (r == 0)
		r = dm_hashmap_put(&rec->set, e->devpath, e);
	if (r < 0) {
		entry_free(e);
		goto out;
	}
	rec->lines++;
	atomic_store(&rec->n, dm_hashmap_size(&rec->set));
out:
	pthread_mutex_unlock(&rec->lock);
	return r;
}

void dm_pm_record_resumed(struct dm_pm_record *rec, const char *devpath)
{
	if (atomic_load_explicit(&rec->n, memory_order_relaxed) == 0)
		return;
	pthread_mutex_lock(&rec->lock);
	struct entry *e = dm_hashmap_remove(&rec->set, devpath);
	if (e) {
		atomic_store(&rec->n, dm_hashmap_size(&rec->set));
		if (dm_hashmap_size(&rec->set) == 0) {
			remove_locked(rec);
		} else if (rec->fd >= 0 && write_line(rec->fd, '-', NULL, devpath) == 0) {
			rec->lines++;
		}
		/* a "-" that could not be written leaves a device listed that
		 * is on: the next start resumes it once more, which is safe */
		entry_free(e);
	}
	pthread_mutex_unlock(&rec->lock);
}

int dm_pm_record_keep_state(struct dm_pm_record *rec, const char *devpath, const char *state)
{
	if (!dm_pm_state_is_valid(state))
		return -EINVAL;
	char *copy = strdup(state);
	if (!copy)
		return -ENOMEM;
	int r = 0;
	pthread_mutex_lock(&rec->lock);
	struct entry *e = dm_hashmap_get(&rec->set, devpath);
	if (e && rec->fd >= 0) {
		r = write_line(rec->fd, '=', state, devpath);
		if (r == 0) {
			free(e->state);
			e->state = copy;
			copy = NULL;
			rec->lines++;
		}
	}
	pthread_mutex_unlock(&rec->lock);
	free(copy);
	return r;
}

int dm_pm_record_kept_state(struct dm_pm_record *rec, const char *devpath, char *buf,
			    size_t size)
{
	int r = -ENOENT;
	pthread_mutex_lock(&rec->lock);
	const struct entry *e = dm_hashmap_get(&rec->kept, devpath);
	if (e) {
		int n = snprintf(buf, size, "%s", e->state);
		r = n >= 0 && (size_t)n < size ? 0 : -ENOBUFS;
	}
	pthread_mutex_unlock(&rec->lock);
	return r;
}

/* A listed device's lines, as compaction writes them. */
static int write_entry(void *value, void *data)
{
	const struct entry *e = value;
	int fd = *(int *)data;
	int r = write_line(fd, '+', NULL, e->devpath);
	if (r == 0 && e->state)
		r = write_line(fd, '=', e->state, e->devpath);
	return r;
}

/* fsync()s the directory holding @path. */
static int sync_dir(const char *path)
{
	char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	int r = 0;
	int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	free(copy);
	return r;
}

/* Rewrites the file with one "+" line per listed device, and its "=" line
 * where its driver kept a state. */
static int compact_locked(struct dm_pm_record *rec)
{
	char *tmp;
	if (asprintf(&tmp, "%s.XXXXXX", rec->path) < 0)
		return -ENOMEM;
	size_t lines = 2 * dm_hashmap_size(&rec->set);
	int r = 0;
	/* A random name created with O_EXCL (which follows no symlink): a
	 * name known in advance could be planted as a symlink. */
	int fd = mkostemp(tmp, O_APPEND | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		goto out_free;
	}
	if (fchmod(fd, 0644) < 0)
		r = -errno;
	if (r == 0)
		r = dm_hashmap_for_each(&rec->set, write_entry, &fd);
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	if (r == 0 && rename(tmp, rec->path) < 0)
		r = -errno;
	if (r < 0) {
		close(fd);
		unlink(tmp);
		goto out_free;
	}
	/* the rename itself on stable storage too */
	r = sync_dir(rec->path);
	close(rec->fd);
	rec->fd = fd;
	rec->lines = lines;
out_free:
	free(tmp);
	return r;
}

int dm_pm_record_sync(struct dm_pm_record *rec)
{
	pthread_mutex_lock(&rec->lock);
	int r = 0;
	if (rec->fd >= 0) {
		if (rec->lines > 2 * dm_hashmap_size(&rec->set) + RECORD_SLACK)
			r = compact_locked(rec);
		if (r == 0 && fdatasync(rec->fd) < 0)
			r = -errno;
	}
	pthread_mutex_unlock(&rec->lock);
	return r;
}

int dm_pm_record_clear(struct dm_pm_record *rec)
{
	pthread_mutex_lock(&rec->lock);
	set_clear_locked(rec);
	remove_locked(rec);
	pthread_mutex_unlock(&rec->lock);
	return 0;
}

int dm_pm_record_clear_except(struct dm_pm_record *rec, const char *const *keep, size_t n)
{
	int r = 0;
	pthread_mutex_lock(&rec->lock);
	/* the entries to keep, each with what the earlier run kept for it,
	 * taken before the maps are emptied */
	struct dm_hashmap set;
	dm_hashmap_init(&set, dm_hash_string, dm_cmp_string);
	for (size_t i = 0; i < n && r == 0; i++) {
		if (dm_hashmap_get(&set, keep[i]))
			continue;
		struct entry *e = entry_new(keep[i]);
		const struct entry *old = dm_hashmap_get(&rec->kept, keep[i]);
		if (e && old && old->state && !(e->state = strdup(old->state)))
			r = -ENOMEM;
		if (!e)
			r = -ENOMEM;
		if (r == 0)
			r = dm_hashmap_put(&set, e->devpath, e);
		if (r < 0)
			entry_free(e);
	}
	set_clear_locked(rec);
	remove_locked(rec);
	if (r == 0 && dm_hashmap_size(&set) > 0) {
		dm_hashmap_done(&rec->set);
		rec->set = set;
		dm_hashmap_init(&set, dm_hash_string, dm_cmp_string);
		atomic_store(&rec->n, dm_hashmap_size(&rec->set));
		r = open_locked(rec);
		if (r == 0)
			r = compact_locked(rec);
	}
	map_clear(&set);
	dm_hashmap_done(&set);
	pthread_mutex_unlock(&rec->lock);
	return r;
}

/* Reads the whole file at @path (at most RECORD_MAX_BYTES), once it is
 * trusted as drivers.d files are (dm_trust_open()): its saved PCI headers
 * go back into config space, so a file anyone but root could have written
 * is refused. On an error but -ENOENT, says why in @why. */
static int read_all(const char *path, char **ret, size_t *ret_len, char *why, size_t size)
{
	/* O_NONBLOCK: a FIFO planted there must not hang the start */
	int fd = dm_trust_open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK, why, size);
	if (fd < 0)
		return fd;
	struct stat st;
	int err = fstat(fd, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -EINVAL;
	if (err < 0) {
		snprintf(why, size, "%s", err == -EINVAL ? "not a regular file" : strerror(-err));
		close(fd);
		return err;
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		int r = -errno;
		snprintf(why, size, "%s", strerror(-r));
		close(fd);
		return r;
	}
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int r = 0;
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? 2 * cap : 8192;
			char *p = cap <= RECORD_MAX_BYTES + 8192 ? realloc(buf, cap + 1) : NULL;
			if (!p) {
				r = cap > RECORD_MAX_BYTES + 8192 ? -EFBIG : -ENOMEM;
				break;
			}
			buf = p;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0) {
			if (ferror(f))
				r = -EIO;
			break;
		}
	}
	fclose(f);
	if (r < 0) {
		snprintf(why, size, "%s", strerror(-r));
		free(buf);
		return r;
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* Of a line "=STATE DEVPATH": the state, cut off in place, and *@devpath;
 * NULL when the line is not one. */
static char *parse_state_line(char *line, char **devpath)
{
	char *sp = strchr(line, ' ');
	if (line[0] != '=' || !sp || sp[1] != '/')
		return NULL;
	*sp = '\0';
	*devpath = sp + 1;
	return dm_pm_state_is_valid(line + 1) ? line + 1 : NULL;
}

int dm_pm_record_load(struct dm_pm_record *rec, char ***ret, size_t *ret_n, char *why,
		      size_t size)
{
	char *text = NULL, ignored[1];
	size_t len = 0;
	if (!why) {
		why = ignored;
		size = sizeof(ignored);
	}
	int r = read_all(rec->path, &text, &len, why, size);
	if (r < 0)
		return r;
	/* a last line without its newline was cut short: not taken */
	char *end = strrchr(text, '\n');
	*(end ? end + 1 : text) = '\0';
	/* the listed devices in order of their "+" lines; a "-" drops one
	 * (its slot becomes NULL), a later "+" lists it anew at the end, a
	 * "=" gives a listed one its state */
	struct dm_hashmap index; /* devpath -> its slot + 1 */
	dm_hashmap_init(&index, dm_hash_string, dm_cmp_string);
	struct entry **list = NULL;
	size_t n = 0, cap = 0;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line && r == 0;
	     line = strtok_r(NULL, "\n", &save)) {
		char *devpath, *state = parse_state_line(line, &devpath);
		if (state) {
			uintptr_t slot = (uintptr_t)dm_hashmap_get(&index, devpath);
			char *copy = slot ? strdup(state) : NULL;
			if (slot && !copy)
				r = -ENOMEM;
			if (copy) {
				free(list[slot - 1]->state);
				list[slot - 1]->state = copy;
			}
			continue;
		}
		if ((line[0] != '+' && line[0] != '-') || line[1] != '/')
			continue;
		devpath = line + 1;
		uintptr_t slot = (uintptr_t)dm_hashmap_remove(&index, devpath);
		if (slot) {
			entry_free(list[slot - 1]);
			list[slot - 1] = NULL;
		}
		if (line[0] == '-')
			continue;
		if (!dm_array_grow((void **)&list, &cap, n, sizeof(*list), 16)) {
			r = -ENOMEM;
			break;
		}
		list[n] = entry_new(devpath);
		if (!list[n] ||
		    dm_hashmap_put(&index, list[n]->devpath, (void *)(uintptr_t)(n + 1)) < 0) {
			entry_free(list[n]);
			r = -ENOMEM;
			break;
		}
		n++;
	}
	dm_hashmap_done(&index);
	free(text);
	/* the devpaths to the caller, the states kept here */
	char **paths = r == 0 ? calloc(n + 1, sizeof(*paths)) : NULL;
	size_t k = 0;
	if (r == 0 && !paths)
		r = -ENOMEM;
	pthread_mutex_lock(&rec->lock);
	map_clear(&rec->kept);
	for (size_t i = 0; i < n; i++) {
		struct entry *e = list[i];
		if (!e)
			continue;
		if (r == 0)
			paths[k] = strdup(e->devpath);
		if (r == 0 && !paths[k])
			r = -ENOMEM;
		if (r == 0)
			k++;
		if (r == 0 && e->state && dm_hashmap_put(&rec->kept, e->devpath, e) == 0)
			continue;
		entry_free(e);
	}
	pthread_mutex_unlock(&rec->lock);
	free(list);
	if (r < 0) {
		for (size_t i = 0; i < k; i++)
			free(paths[i]);
		free(paths);
		snprintf(why, size, "%s", strerror(-r));
		return r;
	}
	*ret = paths;
	*ret_n = k;
	return 0;
}
