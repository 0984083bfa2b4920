/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* journal.c - the binding journal (journal.h). */
#include "journal.h"

#include "core/hashmap.h"
#include "util/log.h"
#include "util/replace.h"
#include "util/trust.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "driverfsd-binding-journal"
#define VERSION 1
/* A journal longer than this is not one we wrote. */
#define JOURNAL_MAX_BYTES (4u << 20)
/* The longest transaction's line: 11 fields, 4 of them names, escaped. */
#define TXN_LINE_MAX_BYTES (16 * 4096)
/* The longest line: a group of DM_JOURNAL_MEMBERS_MAX members, every
 * devpath escaped. */
#define LINE_MAX_BYTES (3 * 4096 * 3 * (DM_JOURNAL_MEMBERS_MAX + 1))
/* An SR-IOV transaction's: its devpath, 6 short fields and each VF's 3
 * names (at most 63 bytes each), escaped. */
#define SRIOV_LINE_MAX_BYTES (3 * 4096 + 8 * 3 * 64 + DM_JOURNAL_VFS_MAX * 3 * (3 * 64 + 1))
/* The most words a line has: an sriov line's. */
#define SRIOV_WORDS (9 + 3 * DM_JOURNAL_VFS_MAX)
#define GROUP_WORDS (3 + 3 * DM_JOURNAL_MEMBERS_MAX)
#define WORDS_MAX (SRIOV_WORDS > GROUP_WORDS ? SRIOV_WORDS : GROUP_WORDS)

struct dm_journal {
	pthread_mutex_t lock;
	char *path;
	/* key ("txn DEVPATH" / "group DEVPATH" / "sriov DEVPATH") -> its
	 * line, both one malloc()ed block: the key first, NUL, then the line */
	struct dm_hashmap entries;
};

int dm_journal_new(const char *path, struct dm_journal **ret)
{
	struct dm_journal *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->path = strdup(path ? path : DM_BIND_JOURNAL_FILE);
	if (!j->path) {
		free(j);
		return -ENOMEM;
	}
	pthread_mutex_init(&j->lock, NULL);
	dm_hashmap_init(&j->entries, dm_hash_string, dm_cmp_string);
	*ret = j;
	return 0;
}

static int free_entry(void *value, void *data)
{
	(void)data;
	free(value);
	return 0;
}

void dm_journal_free(struct dm_journal *j)
{
	if (!j)
		return;
	dm_hashmap_for_each(&j->entries, free_entry, NULL);
	dm_hashmap_done(&j->entries);
	pthread_mutex_destroy(&j->lock);
	free(j->path);
	free(j);
}

const char *dm_journal_path(const struct dm_journal *j)
{
	return j->path;
}

/* This boot's id, into @buf ("unknown" when the kernel does not say). */
static void boot_id(char *buf, size_t size)
{
	snprintf(buf, size, "unknown");
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (!f)
		return;
	if (!fgets(buf, (int)size, f))
		snprintf(buf, size, "unknown");
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
}

static bool safe_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("._:/+@-", c);
}

/* @s as a field, appended to @buf (@len used of @size): false when full. */
static bool put_field(char *buf, size_t size, size_t *len, const char *s)
{
	char f[3 * 4096 + 4];
	size_t n = 0;
	if (!*s)
		f[n++] = '%';
	for (; *s && n + 4 < sizeof(f); s++) {
		unsigned char c = (unsigned char)*s;
		if (safe_byte(c))
			f[n++] = (char)c;
		else
			n += (size_t)snprintf(f + n, sizeof(f) - n, "%%%02X", c);
	}
	if (*s)
		return false;
	int w = snprintf(buf + *len, size - *len, " %.*s", (int)n, f);
	if (w < 0 || (size_t)w >= size - *len)
		return false;
	*len += (size_t)w;
	return true;
}

/* A field read back into @out (@size): false when it is not one. */
static bool get_field(const char *f, char *out, size_t size)
{
	size_t n = 0;
	if (strcmp(f, "%") == 0) {
		out[0] = '\0';
		return true;
	}
	for (; *f; f++) {
		unsigned c;
		if (*f == '%') {
			if (sscanf(f + 1, "%2x", &c) != 1 || !f[1] || !f[2] || c == 0)
				return false;
			f += 2;
		} else {
			c = (unsigned char)*f;
			if (!safe_byte((unsigned char)c))
				return false;
		}
		if (n + 1 >= size)
			return false;
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return true;
}

/* Stores the line @line under @key; lock held. */
static int put_locked(struct dm_journal *j, const char *key, const char *line)
{
	size_t kl = strlen(key), ll = strlen(line);
	char *block = malloc(kl + ll + 2);
	if (!block)
		return -ENOMEM;
	memcpy(block, key, kl + 1);
	memcpy(block + kl + 1, line, ll + 1);
	char *old = dm_hashmap_remove(&j->entries, key);
	free(old);
	int r = dm_hashmap_put(&j->entries, block, block);
	if (r < 0)
		free(block);
	return r;
}

struct text {
	char *buf;
	size_t len, cap;
	int r;
};

static int add_line(void *value, void *data)
{
	const char *block = value;
	const char *line = block + strlen(block) + 1;
	struct text *t = data;
	size_t n = strlen(line);
	if (t->len + n + 2 > t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 4096;
		while (cap < t->len + n + 2)
			cap *= 2;
		char *p = realloc(t->buf, cap);
		if (!p) {
			t->r = -ENOMEM;
			return -ENOMEM;
		}
		t->buf = p;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, line, n);
	t->len += n;
	t->buf[t->len++] = '\n';
	t->buf[t->len] = '\0';
	return 0;
}

/* fsync()s the directory holding @path: the rename (or the removal) on
 * stable storage too. */
static void sync_dir(const char *path)
{
	char *copy = strdup(path);
	if (!copy)
		return;
	int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	free(copy);
}

/* Creates the directories above @path that are missing (0755, root's). */
static void make_parents(const char *path)
{
	char *copy = strdup(path);
	if (!copy)
		return;
	for (char *p = strchr(copy + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		(void)mkdir(copy, 0755);
		*p = '/';
	}
	free(copy);
}

/* The file as the entries say: written whole, or removed when none is
 * left. Lock held. */
static int write_locked(struct dm_journal *j, char *why, size_t size)
{
	const char *path = j->path;
	if (why && size)
		why[0] = '\0';
	if (dm_hashmap_size(&j->entries) == 0) {
		if (unlink(path) < 0 && errno != ENOENT) {
			int r = -errno;
			if (why)
				snprintf(why, size, "cannot remove it: %s", strerror(-r));
			return r;
		}
		sync_dir(path);
		return 0;
	}
	char boot[64];
	boot_id(boot, sizeof(boot));
	struct text t = { 0 };
	char head[128];
	snprintf(head, sizeof(head), "%s %d %s", MAGIC, VERSION, boot);
	char *block = malloc(2 + strlen(head));
	if (!block)
		return -ENOMEM;
	block[0] = '\0';
	memcpy(block + 1, head, strlen(head) + 1);
	add_line(block, &t);
	free(block);
	if (t.r == 0)
		dm_hashmap_for_each(&j->entries, add_line, &t);
	if (t.r < 0) {
		free(t.buf);
		return t.r;
	}
	make_parents(path);
	char msg[128];
	int r = dm_replace_file(path, t.buf, t.len, msg, sizeof(msg));
	free(t.buf);
	if (r < 0 && why)
		snprintf(why, size, "%s", *msg ? msg : strerror(-r));
	if (r == 0)
		sync_dir(path);
	return r;
}

/* Stores @line (malloc()ed, taken) as the entry @kind of
 * @devpath and writes the file; @ok false: it did not fit. */
static int put_entry(struct dm_journal *j, const char *kind, const char *devpath, char *line,
		     bool ok, char *why, size_t size)
{
	char key[4200];
	if (!ok) {
		free(line);
		snprintf(why, size, "an entry too long");
		return -ENAMETOOLONG;
	}
	snprintf(key, sizeof(key), "%s %.4090s", kind, devpath);
	pthread_mutex_lock(&j->lock);
	int r = put_locked(j, key, line);
	if (r == 0)
		r = write_locked(j, why, size);
	else
		snprintf(why, size, "%s", strerror(-r));
	pthread_mutex_unlock(&j->lock);
	free(line);
	return r;
}

int dm_journal_put_txn(struct dm_journal *j, const struct dm_journal_txn *t, char *why,
		       size_t size)
{
	char num[16];
	const size_t max = TXN_LINE_MAX_BYTES;
	char *line = malloc(max);
	if (!line) {
		snprintf(why, size, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	size_t len = (size_t)snprintf(line, max, "txn");
	bool ok = put_field(line, max, &len, t->devpath) &&
		  put_field(line, max, &len, t->bus) &&
		  put_field(line, max, &len, t->name) &&
		  put_field(line, max, &len, t->old_driver) &&
		  put_field(line, max, &len, t->has_override ? "1" : "0") &&
		  put_field(line, max, &len, t->old_override);
	snprintf(num, sizeof(num), "%d", t->action);
	ok = ok && put_field(line, max, &len, num) &&
	     put_field(line, max, &len, t->driver) &&
	     put_field(line, max, &len, t->set_override ? "1" : "0");
	snprintf(num, sizeof(num), "%d", t->step);
	ok = ok && put_field(line, max, &len, num) &&
	     put_field(line, max, &len, t->pending ? "1" : "0");
	return put_entry(j, "txn", t->devpath, line, ok, why, size);
}

int dm_journal_put_group(struct dm_journal *j, const struct dm_journal_group *g, char *why,
			 size_t size)
{
	const size_t max = LINE_MAX_BYTES;
	char *line = malloc(max);
	if (!line) {
		snprintf(why, size, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	size_t len = (size_t)snprintf(line, max, "group");
	bool ok = put_field(line, max, &len, g->devpath) &&
		  put_field(line, max, &len, g->driver);
	for (size_t i = 0; ok && i < g->n && i < DM_JOURNAL_MEMBERS_MAX; i++)
		ok = put_field(line, max, &len, g->members[i].devpath) &&
		     put_field(line, max, &len, g->members[i].old_driver) &&
		     put_field(line, max, &len, g->members[i].had_override ? "1" : "0");
	return put_entry(j, "group", g->devpath, line, ok, why, size);
}

int dm_journal_put_sriov(struct dm_journal *j, const struct dm_journal_sriov *s, char *why,
			 size_t size)
{
	char num[32];
	const size_t max = SRIOV_LINE_MAX_BYTES;
	if (s->n > DM_JOURNAL_VFS_MAX) {
		snprintf(why, size, "more than %d VFs to record", DM_JOURNAL_VFS_MAX);
		return -E2BIG;
	}
	char *line = malloc(max);
	if (!line) {
		snprintf(why, size, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	size_t len = (size_t)snprintf(line, max, "sriov");
	bool ok = put_field(line, max, &len, s->devpath) && put_field(line, max, &len, s->name);
	snprintf(num, sizeof(num), "%ld", s->old_count);
	ok = ok && put_field(line, max, &len, num);
	snprintf(num, sizeof(num), "%d", s->autoprobe);
	ok = ok && put_field(line, max, &len, num);
	snprintf(num, sizeof(num), "%ld", s->numvfs);
	ok = ok && put_field(line, max, &len, num) && put_field(line, max, &len, s->driver);
	snprintf(num, sizeof(num), "%d", s->step);
	ok = ok && put_field(line, max, &len, num) &&
	     put_field(line, max, &len, s->pending ? "1" : "0");
	for (size_t i = 0; ok && i < s->n; i++)
		ok = put_field(line, max, &len, s->vfs[i].name) &&
		     put_field(line, max, &len, s->vfs[i].driver) &&
		     put_field(line, max, &len, s->vfs[i].override);
	return put_entry(j, "sriov", s->devpath, line, ok, why, size);
}

static void drop(struct dm_journal *j, const char *kind, const char *devpath)
{
	char key[4200], why[160];
	snprintf(key, sizeof(key), "%s %.4090s", kind, devpath);
	pthread_mutex_lock(&j->lock);
	char *old = dm_hashmap_remove(&j->entries, key);
	if (old) {
		free(old);
		if (write_locked(j, why, sizeof(why)) < 0)
			log_warn("binding journal %s: %s; its next start may act on a transaction "
				 "that ended", j->path, why);
	}
	pthread_mutex_unlock(&j->lock);
}

void dm_journal_drop_txn(struct dm_journal *j, const char *devpath)
{
	drop(j, "txn", devpath);
}

void dm_journal_drop_group(struct dm_journal *j, const char *devpath)
{
	drop(j, "group", devpath);
}

void dm_journal_drop_sriov(struct dm_journal *j, const char *devpath)
{
	drop(j, "sriov", devpath);
}

/* The words of @line (split in place at spaces) into @w (@max): their
 * number. */
static size_t split(char *line, char **w, size_t max)
{
	size_t n = 0;
	for (char *save = NULL, *p = strtok_r(line, " ", &save); p && n < max;
	     p = strtok_r(NULL, " ", &save))
		w[n++] = p;
	return n;
}

static bool get_int(const char *f, int lo, int hi, int *ret)
{
	char buf[16], *end;
	if (!get_field(f, buf, sizeof(buf)) || !buf[0])
		return false;
	long v = strtol(buf, &end, 10);
	if (*end || v < lo || v > hi)
		return false;
	*ret = (int)v;
	return true;
}

static bool parse_txn(char **w, size_t n, struct dm_journal_txn *t)
{
	int has, set, pend;
	*t = (struct dm_journal_txn){ 0 };
	return n == 12 && get_field(w[1], t->devpath, sizeof(t->devpath)) &&
	       t->devpath[0] == '/' && get_field(w[2], t->bus, sizeof(t->bus)) && t->bus[0] &&
	       get_field(w[3], t->name, sizeof(t->name)) && t->name[0] &&
	       get_field(w[4], t->old_driver, sizeof(t->old_driver)) && get_int(w[5], 0, 1, &has) &&
	       get_field(w[6], t->old_override, sizeof(t->old_override)) &&
	       get_int(w[7], 0, 2, &t->action) && get_field(w[8], t->driver, sizeof(t->driver)) &&
	       get_int(w[9], 0, 1, &set) && get_int(w[10], 0, 4, &t->step) &&
	       get_int(w[11], 0, 1, &pend) && ((t->has_override = has), (t->set_override = set),
					       (t->pending = pend), true);
}

static bool parse_group(char **w, size_t n, struct dm_journal_group *g)
{
	memset(g, 0, sizeof(*g));
	if (n < 3 || (n - 3) % 3 != 0 || (n - 3) / 3 > DM_JOURNAL_MEMBERS_MAX ||
	    !get_field(w[1], g->devpath, sizeof(g->devpath)) || g->devpath[0] != '/' ||
	    !get_field(w[2], g->driver, sizeof(g->driver)) || !g->driver[0])
		return false;
	for (size_t i = 3; i < n; i += 3) {
		int had;
		if (!get_field(w[i], g->members[g->n].devpath, sizeof(g->members[0].devpath)) ||
		    g->members[g->n].devpath[0] != '/' ||
		    !get_field(w[i + 1], g->members[g->n].old_driver,
			       sizeof(g->members[0].old_driver)) ||
		    !get_int(w[i + 2], 0, 1, &had))
			return false;
		g->members[g->n++].had_override = had;
	}
	return true;
}

/* The largest count sriov_numvfs takes (a PCI function's 16 bits). */
#define COUNT_MAX 65535

static bool parse_sriov(char **w, size_t n, struct dm_journal_sriov *s)
{
	int old, numvfs, pend;
	memset(s, 0, sizeof(*s));
	if (n < 9 || (n - 9) % 3 != 0 || (n - 9) / 3 > DM_JOURNAL_VFS_MAX ||
	    !get_field(w[1], s->devpath, sizeof(s->devpath)) || s->devpath[0] != '/' ||
	    !get_field(w[2], s->name, sizeof(s->name)) || !s->name[0] ||
	    !get_int(w[3], 0, COUNT_MAX, &old) || !get_int(w[4], -1, 1, &s->autoprobe) ||
	    !get_int(w[5], 0, COUNT_MAX, &numvfs) || !get_field(w[6], s->driver, sizeof(s->driver)) ||
	    !get_int(w[7], 0, DM_JOURNAL_SRIOV_STEP_MAX, &s->step) || !get_int(w[8], 0, 1, &pend))
		return false;
	s->old_count = old;
	s->numvfs = numvfs;
	s->pending = pend;
	for (size_t i = 9; i < n; i += 3, s->n++)
		if (!get_field(w[i], s->vfs[s->n].name, sizeof(s->vfs[0].name)) ||
		    !s->vfs[s->n].name[0] ||
		    !get_field(w[i + 1], s->vfs[s->n].driver, sizeof(s->vfs[0].driver)) ||
		    !get_field(w[i + 2], s->vfs[s->n].override, sizeof(s->vfs[0].override)))
			return false;
	return true;
}

/* One more element of *@v (@n of them, of @size bytes): NULL when out of
 * memory (*@v kept). */
static void *grow(void **v, size_t n, size_t size)
{
	void *p = realloc(*v, (n + 1) * size);
	if (p)
		*v = p;
	return p ? (char *)p + n * size : NULL;
}

int dm_journal_parse(char *text, const char *boot, struct dm_journal_txn **ret_txns,
		     size_t *ret_n_txns, struct dm_journal_group **ret_groups,
		     size_t *ret_n_groups, struct dm_journal_sriov **ret_sriovs,
		     size_t *ret_n_sriovs)
{
	*ret_txns = NULL;
	*ret_groups = NULL;
	*ret_n_txns = *ret_n_groups = 0;
	if (ret_sriovs) {
		*ret_sriovs = NULL;
		*ret_n_sriovs = 0;
	}
	/* a last line without its newline was cut short: no journal of ours
	 * (it is written whole) */
	size_t len = strlen(text);
	if (len == 0 || text[len - 1] != '\n')
		return -EINVAL;
	char *save = NULL, *line = strtok_r(text, "\n", &save);
	char **w = malloc((WORDS_MAX + 1) * sizeof(*w));
	if (!w)
		return -ENOMEM;
	if (!line || split(line, w, 4) != 3 || strcmp(w[0], MAGIC) != 0 || strcmp(w[1], "1") != 0) {
		free(w);
		return -EINVAL;
	}
	if (boot && strcmp(w[2], boot) != 0) {
		free(w);
		return -ESTALE;
	}
	struct dm_journal_txn *txns = NULL;
	struct dm_journal_group *groups = NULL;
	struct dm_journal_sriov *sriovs = NULL, *scratch = NULL;
	size_t nt = 0, ng = 0, ns = 0;
	int r = 0;
	while (r == 0 && (line = strtok_r(NULL, "\n", &save))) {
		size_t n = split(line, w, WORDS_MAX + 1);
		void *p;
		if (n == 0) {
			r = -EINVAL;
		} else if (strcmp(w[0], "txn") == 0) {
			if (!(p = grow((void **)&txns, nt, sizeof(*txns))))
				r = -ENOMEM;
			else if (parse_txn(w, n, p))
				nt++;
			else
				r = -EINVAL;
		} else if (strcmp(w[0], "group") == 0) {
			if (!(p = grow((void **)&groups, ng, sizeof(*groups))))
				r = -ENOMEM;
			else if (parse_group(w, n, p))
				ng++;
			else
				r = -EINVAL;
		} else if (strcmp(w[0], "sriov") == 0) {
			/* checked alone when not wanted */
			p = ret_sriovs ? grow((void **)&sriovs, ns, sizeof(*sriovs))
				       : scratch ? scratch
						 : (scratch = malloc(sizeof(*scratch)));
			if (!p)
				r = -ENOMEM;
			else if (parse_sriov(w, n, p))
				ns += ret_sriovs != NULL;
			else
				r = -EINVAL;
		} else {
			r = -EINVAL;
		}
	}
	free(w);
	free(scratch);
	if (r < 0) {
		free(txns);
		free(groups);
		free(sriovs);
		return r;
	}
	*ret_txns = txns;
	*ret_groups = groups;
	*ret_n_txns = nt;
	*ret_n_groups = ng;
	if (ret_sriovs) {
		*ret_sriovs = sriovs;
		*ret_n_sriovs = ns;
	}
	return 0;
}

/* The whole trusted file into *ret; -ENOENT when there is none. */
static int read_trusted(const char *path, char **ret, char *why, size_t size)
{
	/* O_NONBLOCK: a FIFO planted there must not hang the start */
	int fd = dm_trust_open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK, why, size);
	if (fd < 0)
		return fd;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > JOURNAL_MAX_BYTES) {
		snprintf(why, size, "%s",
			 !S_ISREG(st.st_mode) ? "not a regular file" : "too large for a journal");
		close(fd);
		return -EINVAL;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	size_t len = 0;
	ssize_t n;
	while (len < (size_t)st.st_size &&
	       (n = read(fd, buf + len, (size_t)st.st_size - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;
			snprintf(why, size, "%s", strerror(-r));
			free(buf);
			close(fd);
			return r;
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	if (strlen(buf) != len) {
		snprintf(why, size, "not a journal (a NUL byte in it)");
		free(buf);
		return -EINVAL;
	}
	*ret = buf;
	return 0;
}

int dm_journal_load(struct dm_journal *j, struct dm_journal_txn **ret_txns, size_t *ret_n_txns,
		    struct dm_journal_group **ret_groups, size_t *ret_n_groups, char *why,
		    size_t size)
{
	*ret_txns = NULL;
	*ret_groups = NULL;
	*ret_n_txns = *ret_n_groups = 0;
	why[0] = '\0';
	pthread_mutex_lock(&j->lock);
	const char *path = j->path;
	char *text = NULL;
	int r = read_trusted(path, &text, why, size);
	if (r == -ENOENT) {
		pthread_mutex_unlock(&j->lock);
		return 0;
	}
	char boot[64];
	boot_id(boot, sizeof(boot));
	struct dm_journal_sriov *sriovs = NULL;
	size_t ns = 0;
	if (r == 0)
		r = dm_journal_parse(text, boot, ret_txns, ret_n_txns, ret_groups, ret_n_groups,
				     &sriovs, &ns);
	free(text);
	if (r == -ESTALE)
		snprintf(why, size, "written in another boot (the kernel's bindings started afresh "
				    "since)");
	else if (r == -EINVAL && !why[0])
		snprintf(why, size, "not a binding journal (or one cut short)");
	/* what it lists stays in it until each is acted on */
	char ignored[8];
	for (size_t i = 0; r == 0 && i < *ret_n_txns; i++) {
		struct dm_journal_txn *t = &(*ret_txns)[i];
		pthread_mutex_unlock(&j->lock);
		r = dm_journal_put_txn(j, t, ignored, sizeof(ignored));
		pthread_mutex_lock(&j->lock);
	}
	for (size_t i = 0; r == 0 && i < *ret_n_groups; i++) {
		pthread_mutex_unlock(&j->lock);
		r = dm_journal_put_group(j, &(*ret_groups)[i], ignored, sizeof(ignored));
		pthread_mutex_lock(&j->lock);
	}
	for (size_t i = 0; r == 0 && i < ns; i++) {
		pthread_mutex_unlock(&j->lock);
		r = dm_journal_put_sriov(j, &sriovs[i], ignored, sizeof(ignored));
		pthread_mutex_lock(&j->lock);
	}
	pthread_mutex_unlock(&j->lock);
	free(sriovs);
	if (r < 0 && r != -EPERM && r != -ESTALE && r != -EINVAL && !why[0])
		snprintf(why, size, "%s", strerror(-r));
	if (r < 0) {
		free(*ret_txns);
		free(*ret_groups);
		*ret_txns = NULL;
		*ret_groups = NULL;
		*ret_n_txns = *ret_n_groups = 0;
	}
	return r;
}

struct sriov_list {
	struct dm_journal_sriov *v;
	size_t n;
	int r;
};

static int add_sriov(void *value, void *data)
{
	const char *block = value;
	struct sriov_list *l = data;
	if (strncmp(block, "sriov ", 6) != 0)
		return 0;
	char *line = strdup(block + strlen(block) + 1);
	char **w = malloc((WORDS_MAX + 1) * sizeof(*w));
	struct dm_journal_sriov *p = line && w ? grow((void **)&l->v, l->n, sizeof(*l->v)) : NULL;
	if (!p)
		l->r = -ENOMEM;
	else if (parse_sriov(w, split(line, w, WORDS_MAX + 1), p))
		l->n++;
	free(line);
	free(w);
	return l->r;
}

int dm_journal_sriov_entries(struct dm_journal *j, struct dm_journal_sriov **ret)
{
	struct sriov_list l = { 0 };
	pthread_mutex_lock(&j->lock);
	dm_hashmap_for_each(&j->entries, add_sriov, &l);
	pthread_mutex_unlock(&j->lock);
	if (l.r < 0) {
		free(l.v);
		*ret = NULL;
		return l.r;
	}
	*ret = l.v;
	return (int)l.n;
}
