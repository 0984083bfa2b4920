/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tree-util.h"

#include <assert.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return (*s >> 16) & 0x7fff;
}

void test_tree_build(struct test_tree *t, struct dm_model *m, size_t n, unsigned seed,
		     struct dm_bus *bus)
{
	unsigned s = seed;
	t->n = n;
	t->parent = calloc(n, sizeof(int));
	t->name = calloc(n, sizeof(char *));
	t->dev = calloc(n, sizeof(*t->dev));
	int *nchild = calloc(n + 1, sizeof(int));
	assert(t->parent && t->name && t->dev && nchild);
	for (size_t i = 0; i < n; i++) {
		/* shape: sometimes deep chains, sometimes wide fans */
		int p = i == 0 ? -1 : (rnd(&s) % 4 == 0 ? -1 : (int)(rnd(&s) % i));
		if (seed % 3 == 0 && i > 0 && rnd(&s) % 2)
			p = (int)i - 1;
		t->parent[i] = p;
		/* names that sort differently as text and as versions */
		int k = nchild[p + 1]++;
		int r = asprintf(&t->name[i], "d%d.%u", k * 7 % 23, (unsigned)i);
		assert(r > 0);
	}
	free(nchild);

	/* random order, parents first: repeatedly pick a random ready node */
	char *added = calloc(n, 1);
	for (size_t done = 0; done < n;) {
		size_t i = rnd(&s) % n;
		for (size_t k = 0; k < n; k++, i = (i + 1) % n)
			if (!added[i] && (t->parent[i] < 0 || added[t->parent[i]]))
				break;
		struct dm_device *dev;
		int r = dm_device_new(m, t->name[i], &dev);
		assert(r == 0);
		char devpath[64];
		snprintf(devpath, sizeof(devpath), "/devices/test/%zu", i);
		dm_device_set_devpath(dev, devpath);
		if (bus)
			dm_device_set_bus(dev, bus);
		r = dm_device_add(dev, t->parent[i] < 0 ? NULL : t->dev[t->parent[i]]);
		assert(r == 0);
		t->dev[i] = dev;
		added[i] = 1;
		done++;
	}
	free(added);
}

void test_tree_free(struct test_tree *t)
{
	for (size_t i = 0; i < t->n; i++) {
		dm_device_unref(t->dev[i]);
		free(t->name[i]);
	}
	free(t->dev);
	free(t->name);
	free(t->parent);
}

int test_tree_index(const struct test_tree *t, const struct dm_device *dev)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->dev[i] == dev)
			return (int)i;
	return -1;
}

static const struct test_tree *sort_tree;
static int by_name(const void *a, const void *b)
{
	return strverscmp(sort_tree->name[*(const int *)a], sort_tree->name[*(const int *)b]);
}

static size_t preorder(const struct test_tree *t, int p, int *out, size_t pos)
{
	int *kids = malloc(t->n * sizeof(int));
	size_t nk = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->parent[i] == p)
			kids[nk++] = (int)i;
	sort_tree = t;
	qsort(kids, nk, sizeof(int), by_name);
	for (size_t k = 0; k < nk; k++) {
		out[pos++] = kids[k];
		pos = preorder(t, kids[k], out, pos);
	}
	free(kids);
	return pos;
}

size_t test_tree_preorder(const struct test_tree *t, int *out)
{
	return preorder(t, -1, out, 0);
}

int test_tree_is_ancestor(const struct test_tree *t, int a, int b)
{
	for (int p = t->parent[b]; p >= 0; p = t->parent[p])
		if (p == a)
			return 1;
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void test_rm_rf(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

bool test_read_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	buf[0] = '\0';
	if (!f)
		return false;
	size_t n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
	return true;
}

void test_write_file(const char *dir, const char *name, const char *content)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f || fputs(content, f) < 0 || fclose(f) != 0) {
		fprintf(stderr, "cannot write %s\n", path);
		abort();
	}
}

char *test_logged(void (*fn)(void *), void *data)
{
	char path[] = "/tmp/driverfs-log-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		abort();
	unlink(path);
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	dm_log_setup(LOG_DEBUG, 0);
	fn(data);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	off_t len = lseek(fd, 0, SEEK_END);
	char *text = calloc(1, (size_t)len + 1);
	if (!text || pread(fd, text, (size_t)len, 0) != len)
		abort();
	close(fd);
	return text;
}
