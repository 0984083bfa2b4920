/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by the unit tests: random trees of devices. */
#ifndef TEST_TREE_UTIL_H
#define TEST_TREE_UTIL_H

#include "core/model.h"

#include <stdbool.h>
#include <stddef.h>

struct test_tree {
	size_t n;
	int *parent; /* index of the parent, -1 for a child of root */
	char **name;
	struct dm_device **dev; /* referenced while the tree lives */
};

/* A random tree of @n devices (fan-out and depth vary with @seed), added to
 * @m in a random order that still adds parents before children. */
void test_tree_build(struct test_tree *t, struct dm_model *m, size_t n, unsigned seed,
		     struct dm_bus *bus);
void test_tree_free(struct test_tree *t);
/* Index of @dev in the tree, or -1. */
int test_tree_index(const struct test_tree *t, const struct dm_device *dev);
/* The expected global order: pre-order, children in natural name order. */
size_t test_tree_preorder(const struct test_tree *t, int *out);
/* Removes the directory @dir and everything below it (test temp dirs). */
void test_rm_rf(const char *dir);

/* Writes @content to @dir/@name (created or truncated); aborts the test
 * program when it cannot. */
void test_write_file(const char *dir, const char *name, const char *content);

/* The file @path into @buf of @size bytes (cut there), NUL-terminated:
 * true, or false when it cannot be opened (@buf ""). */
bool test_read_file(const char *path, char *buf, size_t size);

/* What dm_log() wrote to stderr while @fn(@data) ran, at debug level, as
 * one string (free it); aborts the test program when it cannot. */
char *test_logged(void (*fn)(void *), void *data);

/* True when @a is an ancestor of @b (strictly). */
int test_tree_is_ancestor(const struct test_tree *t, int a, int b);

#endif
