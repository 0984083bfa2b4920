/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the filesystem's node table (src/fuse/inode.c): lookup
 * counts, generations, names that come to mean another object, and the
 * indexes by name and by device on tables larger than their first sizes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "fuse/inode.h"

struct fixture {
	struct dm_model *m;
	struct dm_device *a, *b;
	struct fs_table *t;
};

static struct dm_device *add_device(struct dm_model *m, const char *name)
{
	struct dm_device *d = NULL;
	assert_int_equal(dm_device_new(m, name, &d), 0);
	assert_int_equal(dm_device_add(d, NULL), 0);
	return d; /* the test's reference */
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	assert_int_equal(dm_model_new(&f->m), 0);
	f->a = add_device(f->m, "a");
	f->b = add_device(f->m, "b");
	assert_int_equal(fs_table_new(&f->t), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	fs_table_free(f->t);
	dm_device_unref(f->a);
	dm_device_unref(f->b);
	dm_model_free(f->m);
	free(f);
	return 0;
}

static void lookup(struct fs_table *t, uint64_t parent, const char *name,
		   const struct fs_target *target, uint64_t *ino, uint64_t *gen)
{
	assert_int_equal(fs_table_lookup(t, parent, 1, name, target, ino, gen), 0);
	assert_true(*ino >= 2);
}

/* A lookup count keeps the node; the last forget frees its number, and a
 * number used again comes with another generation. */
static void test_counts_and_generations(void **state)
{
	struct fixture *f = *state;
	struct fs_target dir = { .kind = FS_DEV, .dev = f->a };
	uint64_t ino, gen, ino2, gen2;
	lookup(f->t, 1, "a", &dir, &ino, &gen);
	lookup(f->t, 1, "a", &dir, &ino2, &gen2);
	assert_int_equal(ino2, ino);
	assert_int_equal(gen2, gen);
	assert_int_equal(fs_table_count(f->t), 2);

	struct fs_ref r;
	assert_false(fs_table_forget(f->t, ino, 1)); /* one lookup left */
	assert_int_equal(fs_table_get(f->t, ino, &r), 0);
	assert_int_equal(r.gen, gen);
	assert_string_equal(r.name, "a");
	assert_int_equal(r.t.kind, FS_DEV);
	assert_ptr_equal(r.t.dev, f->a);
	assert_int_equal(r.parent, 1);
	fs_ref_release(&r);

	assert_true(fs_table_forget(f->t, ino, 1)); /* freed: says so */
	assert_int_equal(fs_table_get(f->t, ino, &r), -ESTALE);
	assert_int_equal(fs_table_peek(f->t, 1, "a"), 0);
	assert_int_equal(fs_table_count(f->t), 1);

	lookup(f->t, 1, "a", &dir, &ino2, &gen2);
	assert_true(ino2 != ino || gen2 != gen);
	assert_int_equal(fs_table_get(f->t, ino2, &r), 0);
	assert_int_equal(r.gen, gen2); /* what a listing is keyed by with ino */
	fs_ref_release(&r);
	/* a forget of more than was counted frees, and never the root */
	fs_table_forget(f->t, ino2, UINT64_MAX);
	assert_int_equal(fs_table_get(f->t, ino2, &r), -ESTALE);
	fs_table_forget(f->t, 1, UINT64_MAX);
	assert_int_equal(fs_table_get(f->t, 1, &r), 0);
	assert_int_equal(r.t.kind, FS_TOP);
	fs_ref_release(&r);
}

/* A name that comes to mean another object gets a new node; the old one
 * lives on, unnamed, until the kernel forgets it. */
static void test_name_meaning_another_object(void **state)
{
	struct fixture *f = *state;
	struct fs_target ta = { .kind = FS_LINK_TO_DEV, .dev = f->a };
	struct fs_target tb = { .kind = FS_LINK_TO_DEV, .dev = f->b };
	uint64_t old, new, gen;
	lookup(f->t, 1, "x", &ta, &old, &gen);
	lookup(f->t, 1, "x", &tb, &new, &gen);
	assert_true(new != old);
	assert_int_equal(fs_table_peek(f->t, 1, "x"), new);

	struct fs_ref r;
	assert_int_equal(fs_table_get(f->t, old, &r), 0);
	assert_ptr_equal(r.t.dev, f->a);
	assert_string_equal(r.name, "x");
	fs_ref_release(&r);
	fs_table_forget(f->t, old, 1);
	assert_int_equal(fs_table_get(f->t, old, &r), -ESTALE);
	assert_int_equal(fs_table_peek(f->t, 1, "x"), new);
	assert_int_equal(fs_table_get(f->t, new, &r), 0);
	assert_ptr_equal(r.t.dev, f->b);
	fs_ref_release(&r);
}

/* Thousands of files of one device, half of them in a group: each found
 * by name with its own name and group (copied: the caller's strings may
 * go), listed by device, and still found after every other one was
 * forgotten. */
static void test_many_nodes(void **state)
{
	struct fixture *f = *state;
	enum { N = 5000 };
	static uint64_t ino[N];
	uint64_t gen, dir;
	struct fs_target td = { .kind = FS_DEV, .dev = f->a };
	lookup(f->t, 1, "a", &td, &dir, &gen);
	for (int i = 0; i < N; i++) {
		char name[32], group[8];
		snprintf(name, sizeof(name), "f%d", i);
		snprintf(group, sizeof(group), "pm");
		struct fs_target t = { .kind = FS_ATTR, .dev = f->a, .group = i % 2 ? group : NULL };
		lookup(f->t, dir, name, &t, &ino[i], &gen);
		memset(group, 'x', sizeof(group) - 1);
	}
	struct fs_place *places;
	size_t n;
	assert_int_equal(fs_table_device_places(f->t, f->a, &places, &n), 0);
	assert_int_equal(n, N + 1); /* every one: none left out past a fixed count */
	free(places);
	assert_int_equal(fs_table_device_places(f->t, f->b, &places, &n), 0);
	assert_int_equal(n, 0);
	free(places);

	for (int i = 0; i < N; i += 2)
		fs_table_forget(f->t, ino[i], 1);
	for (int i = 0; i < N; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%d", i);
		struct fs_ref r;
		if (i % 2 == 0) {
			assert_int_equal(fs_table_peek(f->t, dir, name), 0);
			assert_int_equal(fs_table_get(f->t, ino[i], &r), -ESTALE);
			continue;
		}
		assert_int_equal(fs_table_peek(f->t, dir, name), ino[i]);
		assert_int_equal(fs_table_get(f->t, ino[i], &r), 0);
		assert_string_equal(r.name, name);
		assert_non_null(r.t.group);
		assert_string_equal(r.t.group, "pm");
		assert_int_equal(r.t.kind, FS_ATTR);
		assert_ptr_equal(r.t.dev, f->a);
		fs_ref_release(&r);
	}
	assert_int_equal(fs_table_device_places(f->t, f->a, &places, &n), 0);
	assert_int_equal(n, N / 2 + 1);
	for (size_t i = 0; i < n; i++)
		assert_true(places[i].ino == dir || places[i].name[0] == 'f');
	free(places);
	assert_int_equal(fs_table_count(f->t), N / 2 + 2);
}

static void note_freed(void *data)
{
	*(bool *)data = true;
}

/* A driver's file holds the driver as its directory does: unregistered (a
 * SIGHUP reload) and let go of by everyone else, it stays allocated while
 * the node does, and is freed with the node's last forget. */
static void test_driver_file_holds_its_driver(void **state)
{
	struct fixture *f = *state;
	static const struct dm_driver_ops ops = { 0 };
	static bool freed;
	struct dm_driver *drv;
	freed = false;
	assert_int_equal(dm_model_add_driver(f->m, "test", "drv", DM_DRIVER_USER, 0, &ops, &freed,
					     note_freed, &drv), 0);
	struct fs_target t = { .kind = FS_DRV_ATTR, .drv = drv };
	uint64_t ino, gen;
	lookup(f->t, 1, "kind", &t, &ino, &gen);
	dm_driver_unregister(drv);
	dm_driver_unref(drv);
	assert_false(freed); /* the node's reference */
	struct fs_ref r;
	assert_int_equal(fs_table_get(f->t, ino, &r), 0);
	assert_string_equal(dm_driver_get_name(r.t.drv), "drv");
	fs_ref_release(&r);
	assert_true(fs_table_forget(f->t, ino, 1));
	assert_true(freed);
}

struct saved {
	struct fs_saved_node n[16];
	char name[16][64];
	size_t count;
};

static int keep(const struct fs_saved_node *n, const char *name, void *data)
{
	struct saved *s = data;
	assert_true(s->count < 16);
	s->n[s->count] = *n;
	snprintf(s->name[s->count], sizeof(s->name[0]), "%.*s", (int)n->name_len, name);
	s->count++;
	return 0;
}

/* A lookup at @depth (the helper above puts every node at depth 1). */
static void lookup_at(struct fs_table *t, uint64_t parent, unsigned depth, const char *name,
		      const struct fs_target *target, uint64_t *ino, uint64_t *gen)
{
	assert_int_equal(fs_table_lookup(t, parent, depth, name, target, ino, gen), 0);
	assert_true(*ino >= 2);
}

/* handover: a mirror of the test's own, and the model as the next
 * daemon finds it: "a" and "b" are the fixture's devices, "gone" nothing */
struct test_mirror {
	struct fs_mirror_slot slots[64];
	char names[1024];
	_Atomic uint32_t used, high, ok;
	struct fs_mirror m;
};

static void mirror_init(struct test_mirror *tm)
{
	memset(tm, 0, sizeof(*tm));
	atomic_store(&tm->used, 1);
	atomic_store(&tm->ok, 1);
	tm->m = (struct fs_mirror){ .slots = tm->slots, .slots_cap = 64, .names = tm->names,
				    .names_cap = sizeof(tm->names), .names_used = &tm->used,
				    .high = &tm->high, .ok = &tm->ok };
}

static struct fixture *found_in;
static int finds;

static int find(struct dm_model *m, const struct fs_ref *dir, const char *name,
		struct fs_target *ret, char group[FS_GROUP_MAX])
{
	(void)m;
	(void)dir;
	(void)group;
	finds++;
	if (strcmp(name, "a") == 0 || strcmp(name, "b") == 0) {
		*ret = (struct fs_target){ .kind = FS_DEV,
					   .dev = name[0] == 'a' ? found_in->a : found_in->b };
		return 0;
	}
	return -ENOENT;
}

static int count_each(uint64_t ino, uint64_t parent, enum fs_kind kind, void *data)
{
	(void)ino;
	(void)parent;
	(void)kind;
	(*(size_t *)data)++;
	return 0;
}

/* A table that takes over @tm: how many nodes it took. */
static struct fs_table *adopt(struct fixture *f, struct test_mirror *tm, size_t *ret_n)
{
	struct fs_table *t;
	assert_int_equal(fs_table_new(&t), 0);
	fs_table_set_mirror(t, &tm->m);
	size_t seen = 0;
	int n = fs_table_adopt(t, f->m, find, count_each, &seen);
	assert_true(n >= 0);
	assert_int_equal((size_t)n, seen);
	*ret_n = seen;
	found_in = f;
	finds = 0;
	return t;
}

/* handover: the nodes one table mirrors (made and freed as they go) are
 * taken over by another under the same numbers, generations and lookup
 * counts, each made when first used (its parents first), the numbers left
 * unused free */
static void test_nodes_made_again_for_a_handover(void **state)
{
	struct fixture *f = *state;
	static struct test_mirror tm;
	mirror_init(&tm);
	struct fs_mirror mirror = tm.m;
	struct fs_target ta = { .kind = FS_DEV, .dev = f->a };
	struct fs_target tb = { .kind = FS_DEV, .dev = f->b };
	uint64_t a, b, c, gen_a, gen_b, gen_c;
	lookup(f->t, 1, "a", &ta, &a, &gen_a);
	fs_table_set_mirror(f->t, &mirror); /* the node already there too */
	lookup(f->t, 1, "gone", &tb, &c, &gen_c);
	lookup_at(f->t, a, 2, "b", &tb, &b, &gen_b);
	lookup_at(f->t, a, 2, "b", &tb, &b, &gen_b); /* counted twice */
	assert_true(fs_table_forget(f->t, c, 1)); /* a free number between */
	struct saved s = { .count = 0 };
	assert_int_equal(fs_mirror_each(&mirror, keep, &s), 0);
	assert_int_equal(s.count, 2);
	assert_int_equal(s.n[0].gen, gen_a);
	assert_int_equal(s.n[0].nlookup, 1);
	assert_int_equal(s.n[1].nlookup, 2);
	/* a name that runs past what was written is refused */
	uint32_t keep_used = atomic_load(&tm.used);
	atomic_store(&tm.used, tm.slots[b].name_off + 1);
	assert_int_equal(fs_mirror_each(&mirror, keep, &(struct saved){ .count = 0 }), -EINVAL);
	struct fs_table *bad;
	assert_int_equal(fs_table_new(&bad), 0);
	fs_table_set_mirror(bad, &mirror);
	size_t seen = 0;
	assert_int_equal(fs_table_adopt(bad, f->m, find, count_each, &seen), -EINVAL);
	fs_table_set_mirror(bad, NULL);
	fs_table_free(bad);
	atomic_store(&tm.used, keep_used);
	fs_table_set_mirror(f->t, NULL); /* the last daemon is gone */

	size_t n;
	struct fs_table *t2 = adopt(f, &tm, &n);
	assert_int_equal(n, 2);
	assert_int_equal(fs_table_pending(t2), 2);
	assert_int_equal(finds, 0); /* nothing looked up in the model yet */
	/* the unused number is free, and comes with another generation */
	struct fs_ref r;
	assert_int_equal(fs_table_get(t2, c, &r), -ESTALE);
	/* a number used: its parent made first, both found in the model */
	assert_int_equal(fs_table_get(t2, b, &r), 0);
	assert_int_equal(finds, 2);
	assert_int_equal(fs_table_pending(t2), 0);
	assert_int_equal(r.gen, gen_b);
	assert_int_equal(r.parent, a);
	assert_string_equal(r.name, "b");
	assert_ptr_equal(r.t.dev, f->b);
	fs_ref_release(&r);
	/* their names are the mirror's, not written again */
	assert_int_equal(atomic_load(&tm.used), keep_used);
	/* found by name as a lookup finds it, the same node */
	uint64_t again, gen;
	lookup_at(t2, a, 2, "b", &tb, &again, &gen);
	assert_int_equal(again, b);
	assert_int_equal(gen, gen_b);
	lookup(t2, 1, "new", &ta, &n, &gen);
	assert_int_equal(n, c);
	assert_int_not_equal(gen, gen_c);
	/* the old daemon's two lookups and this one: freed when the kernel
	 * forgets all three, not before */
	assert_false(fs_table_forget(t2, b, 2));
	assert_true(fs_table_forget(t2, b, 1));
	fs_table_set_mirror(t2, NULL);
	fs_table_free(t2);
}

/* handover: a file read through a backing is mirrored with where it comes
 * from (its path below its device's node, the device's devpath once), a
 * value whose pages the kernel keeps with its device, and
 * read back from the mirror alone as the next daemon's early thread does;
 * a path that is not the nodes' names, a mirror whose names were tampered
 * with, and a node made again are not taken for a source. */
static void test_file_sources_are_mirrored(void **state)
{
	struct fixture *f = *state;
	static struct test_mirror tm;
	mirror_init(&tm);
	/* at a directory this machine has: the device's identity */
	struct dm_device *v = NULL;
	assert_int_equal(dm_device_new(f->m, "virtual", &v), 0);
	assert_int_equal(dm_device_set_devpath(v, "/devices/virtual"), 0);
	assert_int_equal(dm_device_add(v, NULL), 0);
	uint64_t ident = dm_device_identity(v);
	assert_true(ident != 0);
	struct fs_target dir = { .kind = FS_DEV, .dev = v };
	struct fs_target group = { .kind = FS_GROUP, .dev = v, .group = "power" };
	struct fs_target file = { .kind = FS_ATTR, .dev = v };
	struct fs_target gfile = { .kind = FS_ATTR, .dev = v, .group = "power" };
	uint64_t d, g, x, y, z, gen;
	fs_table_set_mirror(f->t, &tm.m);
	lookup(f->t, 1, "a", &dir, &d, &gen);
	lookup_at(f->t, d, 2, "uevent", &file, &x, &gen);
	lookup_at(f->t, d, 2, "power", &group, &g, &gen);
	lookup_at(f->t, g, 3, "control", &gfile, &y, &gen);
	lookup_at(f->t, d, 2, "other", &file, &z, &gen);
	fs_table_mirror_source(f->t, x, "/devices/virtual", "uevent", 0444);
	fs_table_mirror_source(f->t, y, "/devices/virtual", "power/control", 0644);
	/* not its path below the device: not mirrored */
	fs_table_mirror_source(f->t, z, "/devices/virtual", "power/other", 0444);
	uint32_t used = atomic_load(&tm.used);
	fs_table_mirror_source(f->t, x, "/devices/virtual", "uevent", 0444); /* once */
	assert_int_equal(atomic_load(&tm.used), used);

	char path[256];
	size_t dir_len;
	uint64_t id;
	unsigned mode;
	assert_int_equal(fs_mirror_source(&tm.m, x, path, sizeof(path), &dir_len, &id, &mode),
			 FS_SOURCE_SYSFS);
	assert_string_equal(path, "/sys/devices/virtual/uevent");
	assert_int_equal(dir_len, strlen("/sys/devices/virtual"));
	assert_int_equal(id, ident);
	assert_int_equal(mode, 0444);
	assert_int_equal(fs_mirror_source(&tm.m, y, path, sizeof(path), &dir_len, &id, &mode),
			 FS_SOURCE_SYSFS);
	assert_string_equal(path, "/sys/devices/virtual/power/control");
	assert_int_equal(mode, 0644);
	/* a value whose pages the kernel keeps: its device's directory */
	uint64_t k;
	lookup_at(f->t, g, 3, "kept", &gfile, &k, &gen);
	fs_table_mirror_source(f->t, k, "/devices/virtual", NULL, 0400);
	assert_int_equal(fs_mirror_source(&tm.m, k, path, sizeof(path), &dir_len, &id, &mode),
			 FS_SOURCE_KEPT);
	assert_string_equal(path, "/sys/devices/virtual");
	assert_int_equal(mode, 0400);
	assert_int_equal(id, ident);
	/* what the kernel was told of its attributes: the last one said */
	uint64_t size;
	uint32_t mtime_ns;
	assert_int_equal(fs_mirror_told(&tm.m, k, &size, &mtime_ns), -ENOENT);
	fs_table_mirror_told(f->t, k, 0, 0);
	assert_int_equal(fs_mirror_told(&tm.m, k, &size, &mtime_ns), 0);
	assert_int_equal(size, 0);
	assert_int_equal(mtime_ns, 0);
	fs_table_mirror_told(f->t, k, 7, 3000000000u);
	assert_int_equal(fs_mirror_told(&tm.m, k, &size, &mtime_ns), 0);
	assert_int_equal(size, 7);
	assert_int_equal(mtime_ns, 3000000000u);
	/* what cannot be said again exactly: nothing */
	fs_table_mirror_told(f->t, k, 7, (uint64_t)UINT32_MAX + 1);
	assert_int_equal(fs_mirror_told(&tm.m, k, &size, &mtime_ns), -ENOENT);
	fs_table_mirror_told(f->t, k, UINT32_MAX, 1);
	assert_int_equal(fs_mirror_told(&tm.m, k, &size, &mtime_ns), -ENOENT);
	fs_table_mirror_told(f->t, x, 5, 1);
	/* directories: the device's, its attribute directory's, the root */
	assert_int_equal(fs_mirror_dir(&tm.m, d, path, sizeof(path), &dir_len, &id), 0);
	assert_string_equal(path, "/sys/devices/virtual");
	assert_int_equal(id, ident);
	assert_int_equal(fs_mirror_dir(&tm.m, g, path, sizeof(path), &dir_len, &id), 0);
	assert_int_equal(dir_len, strlen("/sys/devices/virtual"));
	assert_int_equal(fs_mirror_dir(&tm.m, 1, path, sizeof(path), &dir_len, &id), 0);
	assert_int_equal(dir_len, 0);
	assert_int_equal(id, 0);
	assert_int_equal(fs_mirror_dir(&tm.m, k, path, sizeof(path), &dir_len, &id), -ENOENT);
	assert_int_equal(fs_mirror_source(&tm.m, z, path, sizeof(path), &dir_len, &id, &mode),
			 -ENOENT);
	assert_int_equal(fs_mirror_source(&tm.m, d, path, sizeof(path), &dir_len, &id, &mode),
			 -ENOENT);
	assert_int_equal(fs_mirror_source(&tm.m, x, path, 10, &dir_len, &id, &mode),
			 -ENAMETOOLONG);
	/* a devpath with ".." in it, as a hostile state might hold: refused */
	char *dp = tm.names + atomic_load(&tm.slots[d].source);
	memcpy(dp, "/devices/../tual", 16);
	assert_int_equal(fs_mirror_source(&tm.m, x, path, sizeof(path), &dir_len, &id, &mode),
			 -ENOENT);
	memcpy(dp, "/devices/../tual", 16);
	/* the file forgotten and its number made again: no source */
	assert_true(fs_table_forget(f->t, x, 1));
	lookup_at(f->t, d, 2, "again", &file, &z, &gen);
	assert_int_equal(z, x);
	assert_int_equal(fs_mirror_source(&tm.m, x, path, sizeof(path), &dir_len, &id, &mode),
			 -ENOENT);
	assert_int_equal(fs_mirror_told(&tm.m, x, &size, &mtime_ns), -ENOENT);
	fs_table_set_mirror(f->t, NULL);
	fs_table_free(f->t); /* its references first */
	assert_int_equal(fs_table_new(&f->t), 0);
	dm_device_unref(v);
}

/* A lookup of a name whose node is taken over and not made gives that
 * node; a forget of one not made frees it (the mirror too: the next daemon
 * carries fewer); one no longer in the model keeps its number until the
 * kernel forgets it, unnamed. */
static void test_nodes_taken_over_on_demand(void **state)
{
	struct fixture *f = *state;
	static struct test_mirror tm;
	mirror_init(&tm);
	struct fs_target ta = { .kind = FS_DEV, .dev = f->a };
	struct fs_target tb = { .kind = FS_DEV, .dev = f->b };
	uint64_t a, b, g, gen_a, gen_b, gen_g, ino, gen;
	fs_table_set_mirror(f->t, &tm.m);
	lookup(f->t, 1, "a", &ta, &a, &gen_a);
	lookup_at(f->t, a, 2, "b", &tb, &b, &gen_b);
	lookup(f->t, 1, "gone", &tb, &g, &gen_g);
	fs_table_set_mirror(f->t, NULL);

	size_t n;
	struct fs_table *t2 = adopt(f, &tm, &n);
	assert_int_equal(n, 3);
	/* a lookup of "a" under the root: the same number, no model search */
	lookup(t2, 1, "a", &ta, &ino, &gen);
	assert_int_equal(ino, a);
	assert_int_equal(gen, gen_a);
	assert_int_equal(finds, 0);
	/* the kernel forgets b, never used: freed, in the mirror too */
	assert_true(fs_table_forget(t2, b, 1));
	assert_int_equal(fs_table_get(t2, b, &(struct fs_ref){ 0 }), -ESTALE);
	/* "gone" is not in the model: -ESTALE, its number kept */
	struct fs_ref r;
	assert_int_equal(fs_table_get(t2, g, &r), -ESTALE);
	assert_int_equal(fs_table_get(t2, g, &r), -ESTALE);
	assert_int_equal(finds, 1); /* looked for once */
	lookup(t2, 1, "gone", &tb, &ino, &gen); /* the name, another object now */
	assert_int_not_equal(ino, g);
	lookup_at(t2, a, 2, "c", &tb, &ino, &gen);
	assert_int_not_equal(ino, g);
	/* a name taken over that now means another kind of object: a new
	 * node, the old one unnamed */
	assert_true(fs_table_forget(t2, g, 1));
	fs_table_set_mirror(t2, NULL);

	/* the next daemon carries a, the two new nodes, not b nor g */
	size_t n3;
	struct fs_table *t3 = adopt(f, &tm, &n3);
	assert_int_equal(n3, 3);
	assert_int_equal(fs_table_get(t3, g, &r), -ESTALE);
	assert_int_equal(fs_table_get(t3, a, &r), 0);
	assert_int_equal(r.gen, gen_a);
	fs_ref_release(&r);
	fs_table_set_mirror(t3, NULL);
	fs_table_free(t3);
	fs_table_free(t2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_counts_and_generations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_name_meaning_another_object, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_nodes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_driver_file_holds_its_driver, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nodes_made_again_for_a_handover, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_nodes_taken_over_on_demand, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_sources_are_mirrored, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
