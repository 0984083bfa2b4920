/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of what the tree does with a device's sysfs attributes
 * (src/buses/sysfs-attrs.c): the policy by name, and the paths: what a
 * device directory's files, links, hidden names and nested directories
 * become, and that no name or link leads out of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buses/sysfs-attrs.h"
#include "tree-util.h"

static void test_policy(void **state)
{
	(void)state;
	/* memory-mapped or capability-limited: not shown */
	static const char *const left_out[] = { "rom",	      "vpd",	      "legacy_io",
						"legacy_mem", "resource0",    "resource2_wc",
						"resource5_uc" };
	for (size_t i = 0; i < sizeof(left_out) / sizeof(left_out[0]); i++)
		assert_int_equal(dm_sysfs_attr_policy(left_out[i]), DM_SYSFS_LEFT_OUT);
	/* acting when written: shown as the kernel has them (a console's
	 * bind reads 1), never written through the tree */
	static const char *const read_only[] = { "driver_override", "authorized",
						 "authorized_default", "uevent",
						 "bind",	    "unbind",
						 "new_id",	    "remove_id",
						 "remove",	    "rescan",
						 "scan",	    "delete",
						 "eject",	    "reset" };
	for (size_t i = 0; i < sizeof(read_only) / sizeof(read_only[0]); i++)
		assert_int_equal(dm_sysfs_attr_policy(read_only[i]), DM_SYSFS_READ_ONLY);
	assert_int_equal(dm_sysfs_attr_policy("config"), DM_SYSFS_PCI_CONFIG);
	/* the text resource table, tunables and ordinary values pass */
	static const char *const pass[] = { "resource", "resources", "online", "size", "mtu",
					    "enable", "d3cold_allowed", "reset_method", "state" };
	for (size_t i = 0; i < sizeof(pass) / sizeof(pass[0]); i++)
		assert_int_equal(dm_sysfs_attr_policy(pass[i]), DM_SYSFS_PASS);
}

/* ---- what the tree takes from a device's sysfs directory, by path ---- */

/* A device directory made in a temporary directory, reached as the code
 * reaches sysfs ("/sys" and the devpath: a devpath of "/../tmp/..." leads
 * there), beside an "outside" that nothing of the device may show:
 *
 *   outside/secret, outside/sub/x        bus/pci (a subsystem's target)
 *   dev/  vendor 0444, enable 0644, name.with.dots, a 255-byte name,
 *         uevent 0644, bind 0200, rom, resource0, config (PCI: 128 bytes),
 *         nomode 0000, .hidden, "...", a fifo;
 *         links: escape -> ../outside/secret, escape_abs -> (its absolute
 *         path), escape_dir -> ../outside, subsystem -> ../bus/pci;
 *         queue/ (scheduler, config, iosched/quantum, power/x,
 *                 .hidden_dir/x, escape -> ../../outside,
 *                 subsystem -> ../../bus/pci: its config is still no
 *                 PCI function's)
 *         power/control (the tree's pm/), child/uevent (a device),
 *         net/eth0/uevent (glue holding a device), .cache/x,
 *         l1/l2/.../l9 (a file f in each), long/<150 a>/<60 b>/f
 */
struct sysdev {
	char base[64], dir[128];
	struct dm_model *m;
	struct dm_device *dev;
	const struct dm_attribute_group *g;
	char name255[256], a150[151], deep8[64], deep9[64], long_ok[160], long_over[220];
};

static void mkfile(const char *dir, const char *name, mode_t mode, const char *text, size_t len)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void mkdirs(const char *dir, const char *rel)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (char *p = path + strlen(dir) + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
		*p = c;
		if (!c)
			return;
	}
}

static void mklink(const char *dir, const char *name, const char *target)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(symlink(target, path), 0);
}

static int sysdev_setup(void **state)
{
	struct sysdev *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	snprintf(s->base, sizeof(s->base), "/tmp/test-sysfs-attrs-XXXXXX");
	assert_non_null(mkdtemp(s->base));
	snprintf(s->dir, sizeof(s->dir), "%s/dev", s->base);
	char path[PATH_MAX];

	mkdirs(s->base, "outside/sub");
	mkdirs(s->base, "bus/pci");
	snprintf(path, sizeof(path), "%s/outside", s->base);
	mkfile(path, "secret", 0444, "secret\n", 7);
	mkfile(path, "sub/x", 0444, "x\n", 2);

	mkdirs(s->base, "dev");
	mkfile(s->dir, "vendor", 0444, "0x8086\n", 7);
	mkfile(s->dir, "enable", 0644, "1\n", 2);
	mkfile(s->dir, "name.with.dots", 0444, "d\n", 2);
	memset(s->name255, 'n', 255);
	mkfile(s->dir, s->name255, 0444, "n\n", 2);
	mkfile(s->dir, "uevent", 0644, "DRIVER=x\n", 9);
	mkfile(s->dir, "bind", 0200, "", 0);
	mkfile(s->dir, "rom", 0444, "r", 1);
	mkfile(s->dir, "resource0", 0600, "m", 1);
	char config[128] = { 0x86, 0x80 };
	mkfile(s->dir, "config", 0644, config, sizeof(config));
	mkfile(s->dir, "nomode", 0000, "0\n", 2);
	mkfile(s->dir, ".hidden", 0444, "h\n", 2);
	mkfile(s->dir, "...", 0444, "h\n", 2);
	snprintf(path, sizeof(path), "%s/fifo", s->dir);
	assert_int_equal(mkfifo(path, 0644), 0);
	mklink(s->dir, "escape", "../outside/secret");
	snprintf(path, sizeof(path), "%s/outside/secret", s->base);
	mklink(s->dir, "escape_abs", path);
	mklink(s->dir, "escape_dir", "../outside");
	mklink(s->dir, "subsystem", "../bus/pci");

	mkdirs(s->dir, "queue/iosched");
	mkdirs(s->dir, "queue/power");
	mkdirs(s->dir, "queue/.hidden_dir");
	mkfile(s->dir, "queue/scheduler", 0644, "none\n", 5);
	mkfile(s->dir, "queue/config", 0444, "c\n", 2);
	mkfile(s->dir, "queue/iosched/quantum", 0644, "8\n", 2);
	mkfile(s->dir, "queue/power/x", 0444, "x\n", 2);
	mkfile(s->dir, "queue/.hidden_dir/x", 0444, "x\n", 2);
	mklink(s->dir, "queue/escape", "../../outside");
	mklink(s->dir, "queue/subsystem", "../../bus/pci");
	mkdirs(s->dir, "power");
	mkfile(s->dir, "power/control", 0644, "auto\n", 5);
	mkdirs(s->dir, "child");
	mkfile(s->dir, "child/uevent", 0644, "\n", 1);
	mkdirs(s->dir, "net/eth0");
	mkfile(s->dir, "net/eth0/uevent", 0644, "\n", 1);
	mkdirs(s->dir, ".cache");
	mkfile(s->dir, ".cache/x", 0444, "x\n", 2);

	/* nine levels, a file in each */
	char rel[64] = "";
	for (int d = 1; d <= 9; d++) {
		size_t len = strlen(rel);
		snprintf(rel + len, sizeof(rel) - len, "%sl%d", d > 1 ? "/" : "", d);
		mkdirs(s->dir, rel);
		snprintf(path, sizeof(path), "%s/f", rel);
		mkfile(s->dir, path, 0444, "f\n", 2);
		if (d == 8)
			snprintf(s->deep8, sizeof(s->deep8), "%s", rel);
	}
	snprintf(s->deep9, sizeof(s->deep9), "%s", rel);
	/* a path of 156 bytes, and one of 217 under it (past 200) */
	memset(s->a150, 'a', 150);
	char b60[61] = { 0 };
	memset(b60, 'b', 60);
	snprintf(s->long_ok, sizeof(s->long_ok), "long/%s", s->a150);
	snprintf(s->long_over, sizeof(s->long_over), "%s/%s", s->long_ok, b60);
	mkdirs(s->dir, s->long_over);
	snprintf(path, sizeof(path), "%s/f", s->long_ok);
	mkfile(s->dir, path, 0444, "f\n", 2);
	snprintf(path, sizeof(path), "%s/f", s->long_over);
	mkfile(s->dir, path, 0444, "f\n", 2);

	assert_int_equal(dm_model_new(&s->m), 0);
	assert_int_equal(dm_device_new(s->m, "dev", &s->dev), 0);
	snprintf(path, sizeof(path), "/..%s", s->dir);
	assert_int_equal(dm_device_set_devpath(s->dev, path), 0);
	assert_int_equal(dm_device_add(s->dev, NULL), 0);
	s->g = &dm_sysfs_attrs_group;
	*state = s;
	return 0;
}

static int sysdev_teardown(void **state)
{
	struct sysdev *s = *state;
	dm_device_unref(s->dev);
	dm_model_free(s->m);
	test_rm_rf(s->base);
	free(s);
	return 0;
}

/* The device directory is reached through /sys/..: without a /sys (a
 * build chroot) there is no way there. */
static struct sysdev *sysdev_of(void **state)
{
	if (access("/sys", X_OK) != 0)
		skip();
	return *state;
}

/* A listing, sorted, as "name:mode name:mode ..." or "name name ...". */
struct listing {
	char *item[64];
	size_t n;
};

static int add_attr(const struct dm_attribute *a, void *data)
{
	struct listing *l = data;
	assert_true(l->n < 64);
	/* the long name shown short */
	const char *name = strlen(a->name) == 255 ? "<255 n>" : a->name;
	assert_true(asprintf(&l->item[l->n++], "%s:%o", name, (unsigned)a->mode) > 0);
	return 0;
}

static int add_dir(const char *name, void *data)
{
	struct listing *l = data;
	assert_true(l->n < 64);
	l->item[l->n++] = strdup(strlen(name) == 150 ? "<150 a>" : name);
	return 0;
}

static int by_text(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The listing of @dir's files (@files) or directories, sorted, is @want. */
static void expect_listing(struct sysdev *s, bool files, const char *dir, const char *want)
{
	struct listing l = { .n = 0 };
	assert_int_equal(files ? s->g->for_each(s->dev, dir, add_attr, &l)
			       : s->g->for_each_dir(s->dev, dir, add_dir, &l),
			 0);
	char got[1024] = "";
	qsort(l.item, l.n, sizeof(l.item[0]), by_text);
	for (size_t i = 0; i < l.n; i++) {
		size_t len = strlen(got);
		snprintf(got + len, sizeof(got) - len, "%s%s", i ? " " : "", l.item[i]);
		free(l.item[i]);
	}
	if (strcmp(got, want) != 0)
		fail_msg("the %s of '%.200s':\n  got      '%s'\n  expected '%s'",
			 files ? "files" : "directories", dir ? dir : "(the device)", got, want);
}

static void expect_files(struct sysdev *s, const char *dir, const char *want)
{
	expect_listing(s, true, dir, want);
}

static void expect_dirs(struct sysdev *s, const char *dir, const char *want)
{
	expect_listing(s, false, dir, want);
}

/* The listings: regular files only (no link, no fifo, no dot file), each
 * with sysfs's mode less what the policy takes (uevent and config
 * read-only, bind write-only and so not shown, a mode of 0 not shown);
 * attribute directories only: no link, no device, no glue holding
 * devices, not the device's own power/ (a nested power/ is one), no dot
 * directory; 8 levels of them, 200 bytes of path. */
static void test_listings_keep_to_the_device(void **state)
{
	struct sysdev *s = sysdev_of(state);
	expect_files(s, NULL,
		     "<255 n>:444 config:444 enable:644 name.with.dots:444 uevent:444 vendor:444");
	expect_dirs(s, NULL, "l1 long queue");
	expect_files(s, "queue", "scheduler:644");
	expect_dirs(s, "queue", "iosched power");
	expect_files(s, "queue/power", "x:444");
	expect_files(s, "queue/iosched", "quantum:644");
	char deep7[64];
	snprintf(deep7, sizeof(deep7), "%.*s", (int)(strrchr(s->deep8, '/') - s->deep8), s->deep8);
	expect_dirs(s, deep7, "l8");
	expect_files(s, s->deep8, "f:444");
	expect_dirs(s, s->deep8, "");
	expect_files(s, s->deep9, "");
	expect_dirs(s, "long", "<150 a>");
	expect_files(s, s->long_ok, "f:444");
	expect_dirs(s, s->long_ok, "");
	expect_files(s, s->long_over, "");
	/* nothing through a name that leaves the device's directory */
	static const char *const away[] = {
		"..",	      ".",	    "",		"/",	       "/queue",
		"queue/",     "queue//iosched", "queue/..", "queue/./iosched", "queue/../queue",
		"../dev",     "escape_dir", "queue/escape", "queue/escape/sub", "power",
		"child",      "net",	    "net/eth0", "escape",	   "vendor",
	};
	for (size_t i = 0; i < sizeof(away) / sizeof(away[0]); i++) {
		expect_files(s, away[i], "");
		expect_dirs(s, away[i], "");
	}
}

/* The look-ups, one name at a time, agree: nothing outside, nothing with
 * a '/' or a dot-dot in its name, no link followed at any step. (A dot
 * file or directory, which the listings leave out, is found by its name
 * today: sysfs makes none, and which way it should go is not settled
 * here.) */
static void test_lookups_keep_to_the_device(void **state)
{
	struct sysdev *s = sysdev_of(state);
	const struct dm_attribute *a = s->g->find(s->dev, NULL, "vendor");
	assert_non_null(a);
	assert_string_equal(dm_attribute_path(a), "vendor");
	assert_int_equal(a->mode, 0444);
	a = s->g->find(s->dev, "queue/iosched", "quantum");
	assert_non_null(a);
	assert_string_equal(dm_attribute_path(a), "queue/iosched/quantum");
	assert_non_null(s->g->find(s->dev, NULL, s->name255));
	assert_non_null(s->g->find(s->dev, NULL, "name.with.dots"));
	assert_non_null(s->g->find(s->dev, "queue/power", "x"));
	assert_non_null(s->g->find(s->dev, s->deep8, "f"));
	assert_non_null(s->g->find(s->dev, s->long_ok, "f"));

	char name256[257];
	memset(name256, 'n', 256);
	name256[256] = '\0';
	static const struct {
		const char *dir, *name;
	} none[] = {
		{ NULL, "escape" },	    { NULL, "escape_abs" },	{ NULL, "escape_dir" },
		{ NULL, "subsystem" },	    { NULL, "fifo" },		{ NULL, "rom" },
		{ NULL, "resource0" },	    { NULL, "bind" },		{ NULL, "nomode" },
		{ NULL, ".." },		    { NULL, "." },		{ NULL, "" },
		{ NULL, "queue" },	    { NULL, "queue/scheduler" }, { NULL, "../dev/vendor" },
		{ NULL, "/vendor" },	    { "queue", "../vendor" },	{ "queue", ".." },
		{ "queue", "config" },	    { "queue/..", "vendor" },	{ "queue/.", "scheduler" },
		{ "queue/", "scheduler" },  { "/queue", "scheduler" },	{ "queue/escape", "secret" },
		{ "escape_dir", "secret" }, { "escape_dir/sub", "x" },	{ "..", "dev" },
		{ "../outside", "secret" }, { "power", "control" },	{ "child", "uevent" },
		{ "net/eth0", "uevent" },   { "net", "eth0" },		{ "queue", "escape" },
		{ "vendor", "x" },	    { NULL, ".hidden" },	{ "queue", ".hidden_dir" },
		{ ".cache", "x" },	    { "queue/.hidden_dir", "x" },
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		if (s->g->find(s->dev, none[i].dir, none[i].name))
			fail_msg("'%s' in '%s' was found", none[i].name,
				 none[i].dir ? none[i].dir : "(the device)");
	assert_null(s->g->find(s->dev, NULL, name256));
	assert_null(s->g->find(s->dev, s->deep9, "f"));
	assert_null(s->g->find(s->dev, s->long_over, "f"));

	/* has_dir() and has(), the look-ups of directories and of any name */
	static const char *const dirs[] = { "queue", "queue/iosched", "queue/power", "l1", "long" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!s->g->has_dir(s->dev, dirs[i]))
			fail_msg("no directory '%s'", dirs[i]);
	assert_true(s->g->has_dir(s->dev, s->deep8));
	assert_true(s->g->has_dir(s->dev, s->long_ok));
	static const char *const no_dirs[] = {
		"",	     ".",	   "..",	  "/",		 "/queue",
		"queue/",    "queue//iosched", "queue/..", "queue/./iosched", "queue/../queue",
		"../dev",    "escape_dir",	"queue/escape", "escape_dir/sub", "power",
		"child",     "net",		"net/eth0", "vendor",	"queue/scheduler",
		".cache",    "queue/.hidden_dir",
	};
	for (size_t i = 0; i < sizeof(no_dirs) / sizeof(no_dirs[0]); i++)
		if (s->g->has_dir(s->dev, no_dirs[i]))
			fail_msg("'%s' is a directory of the device", no_dirs[i]);
	assert_false(s->g->has_dir(s->dev, NULL));
	assert_false(s->g->has_dir(s->dev, s->deep9));
	assert_false(s->g->has_dir(s->dev, s->long_over));

	static const char *const has[] = { "vendor", "enable", "config", "queue", "l1" };
	for (size_t i = 0; i < sizeof(has) / sizeof(has[0]); i++)
		if (!s->g->has(s->dev, has[i]))
			fail_msg("no '%s'", has[i]);
	static const char *const has_not[] = { "escape", "escape_abs", "escape_dir", "subsystem",
					       "fifo",	 "rom",	       "bind",	     "power",
					       "child",	 "net",	       "..",	     ".",
					       "",	 "queue/scheduler", ".hidden", ".cache" };
	for (size_t i = 0; i < sizeof(has_not) / sizeof(has_not[0]); i++)
		if (s->g->has(s->dev, has_not[i]))
			fail_msg("'%s' is shown", has_not[i]);
	assert_false(s->g->has(s->dev, name256));
}

/* A value is the file's bytes (PCI config cut to its 64-byte header); a
 * file that became a link since it was looked up is not followed: the
 * read fails (ELOOP), and the next look-up finds nothing. */
static void test_reads_follow_no_link(void **state)
{
	struct sysdev *s = sysdev_of(state);
	char *buf;
	size_t len;
	const struct dm_attribute *a = s->g->find(s->dev, NULL, "vendor");
	assert_non_null(a);
	assert_int_equal(a->show_alloc(s->dev, a, &buf, &len), 0);
	assert_int_equal(len, 7);
	assert_memory_equal(buf, "0x8086\n", 7);
	free(buf);
	const struct dm_attribute *c = s->g->find(s->dev, NULL, "config");
	assert_non_null(c);
	assert_int_equal(c->show_alloc(s->dev, c, &buf, &len), 0);
	assert_int_equal(len, 64);
	free(buf);

	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/vendor", s->dir);
	assert_int_equal(unlink(path), 0);
	mklink(s->dir, "vendor", "../outside/secret");
	buf = NULL;
	int r = a->show_alloc(s->dev, a, &buf, &len);
	if (r != -ELOOP)
		fail_msg("read of vendor, now a link: %d, '%.*s'", r, r == 0 ? (int)len : 0,
			 r == 0 ? buf : "");
	assert_null(s->g->find(s->dev, NULL, "vendor"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy),
		cmocka_unit_test_setup_teardown(test_listings_keep_to_the_device, sysdev_setup,
						sysdev_teardown),
		cmocka_unit_test_setup_teardown(test_lookups_keep_to_the_device, sysdev_setup,
						sysdev_teardown),
		cmocka_unit_test_setup_teardown(test_reads_follow_no_link, sysdev_setup,
						sysdev_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
