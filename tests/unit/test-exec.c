/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-exec.c - exec drivers from drivers.d: parse errors with FILE:LINE,
 * all-or-nothing loading, binding by bus, match rules and priority, and the
 * hooks' arguments and environment.
 *
 * Each test writes its drivers.d into a private temporary directory; hook
 * programs are shell scripts there that append their environment to a log
 * file, which the test reads once the call returned (hooks run
 * synchronously, so nothing needs waiting for).
 */
#include "tree-util.h"
#include "config.h"
#include "drivers/exec.h"
#include "hotplug/helper.h"
#include "drivers/runner.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct fixture {
	char dir[64]; /* this test's temporary directory */
	char drivers[128]; /* its drivers.d */
	char log[128]; /* where the hook scripts append */
};

static int fixture_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	strcpy(f->dir, "/tmp/test-exec-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->drivers, sizeof(f->drivers), "%s/drivers.d", f->dir);
	assert_int_equal(mkdir(f->drivers, 0755), 0);
	snprintf(f->log, sizeof(f->log), "%s/hooks.log", f->dir);
	*state = f;
	return 0;
}

static int fixture_teardown(void **state)
{
	struct fixture *f = *state;
	test_rm_rf(f->dir);
	free(f);
	return 0;
}

/* A hook that logs "--- <args>", its environment and "=== <exit>", then
 * exits with @status. */
static void write_hook(const struct fixture *f, const char *name, int status)
{
	char path[512], body[1024];
	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	snprintf(body, sizeof(body),
		 "#!/bin/sh\n"
		 "{ echo \"--- $*\"; /usr/bin/env; echo \"=== %d\"; } >> %s\n"
		 "exit %d\n",
		 status, f->log, status);
	test_write_file(f->dir, name, body);
	assert_int_equal(chmod(path, 0755), 0);
}

/* The whole hook log, "" when no hook ran; free() it. */
static char *read_log(const struct fixture *f)
{
	FILE *s = fopen(f->log, "r");
	if (!s)
		return strdup("");
	char *buf = calloc(1, 1 << 20);
	assert_non_null(buf);
	fread(buf, 1, (1 << 20) - 1, s);
	fclose(s);
	return buf;
}

/* The @nth (from 0) record of the log whose first line is "--- @args"; a
 * copy to free(), NULL when there is none. */
static char *log_record(const char *log, const char *args, int nth)
{
	char head[256];
	snprintf(head, sizeof(head), "--- %s\n", args);
	for (const char *p = log; (p = strstr(p, head)); p++) {
		if (p != log && p[-1] != '\n')
			continue;
		if (nth-- > 0)
			continue;
		const char *end = strstr(p, "\n=== ");
		assert_non_null(end);
		return strndup(p, (size_t)(end - p + 1));
	}
	return NULL;
}

/* Whether the record has the exact line @line. */
static bool record_has(const char *rec, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = rec; (p = strstr(p, line)); p++)
		if ((p == rec || p[-1] == '\n') && p[n] == '\n')
			return true;
	return false;
}

/* Whether the record sets @key at all. */
static bool record_sets(const char *rec, const char *key)
{
	char pat[128];
	snprintf(pat, sizeof(pat), "\n%s=", key);
	return strstr(rec, pat) != NULL;
}

static void assert_record_has(const char *rec, const char *line)
{
	if (!record_has(rec, line))
		fail_msg("expected the hook environment to have %s, got:\n%s", line, rec);
}

static int count_lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* ---- model helpers ---- */

struct dev_spec {
	const char *name;
	const char *devpath;
	const char *values[8][2];
};

static struct dm_device *add_device(struct dm_model *m, struct dm_bus *bus,
				    struct dm_device *parent, const struct dev_spec *s)
{
	struct dm_device *dev;
	assert_int_equal(dm_device_new(m, s->name, &dev), 0);
	if (s->devpath)
		assert_int_equal(dm_device_set_devpath(dev, s->devpath), 0);
	for (int i = 0; i < 8 && s->values[i][0]; i++)
		assert_int_equal(dm_device_set_value(dev, s->values[i][0], s->values[i][1]), 0);
	if (bus)
		dm_device_set_bus(dev, bus);
	assert_int_equal(dm_device_add(dev, parent), 0);
	return dev;
}

/* The name of @dev's driver, "" when unbound. */
static const char *driver_of(struct dm_model *m, struct dm_device *dev)
{
	dm_model_read_lock(m);
	struct dm_driver *drv = dm_device_get_driver_locked(dev);
	const char *name = drv ? dm_driver_get_name(drv) : "";
	dm_model_unlock(m);
	return name;
}

/* ---- errors ---- */

struct expected_error {
	const char *file;
	unsigned line; /* 0: a message about the whole file */
	const char *text; /* a part of the message */
};

/* Every message of @errors is one of @want, and each of @want is there. */
static void assert_errors(const char *dir, const char *errors, const struct expected_error *want,
			  size_t n_want)
{
	for (size_t i = 0; i < n_want; i++) {
		char head[512];
		if (want[i].line)
			snprintf(head, sizeof(head), "%s/%s:%u: ", dir, want[i].file, want[i].line);
		else
			snprintf(head, sizeof(head), "%s/%s: ", dir, want[i].file);
		bool found = false;
		for (const char *p = errors; *p;) {
			size_t len = strcspn(p, "\n");
			if (strncmp(p, head, strlen(head)) == 0) {
				char *line = strndup(p, len);
				if (strstr(line, want[i].text))
					found = true;
				free(line);
			}
			p += len + (p[len] == '\n');
		}
		if (!found) {
			fprintf(stderr, "%s", errors);
			fail_msg("expected an error \"%s...%s\" among those above", head,
				 want[i].text);
		}
	}
	if (count_lines(errors) != (int)n_want) {
		/* cmocka cuts long messages: the list goes to stderr whole */
		fprintf(stderr, "%s", errors);
		fail_msg("expected exactly %zu errors, got %d (above)", n_want,
			 count_lines(errors));
	}
}

/* Runs dm_exec_check_dir() on @dir; the messages go to a malloc'd string. */
static int check_dir(const char *dir, char **ret_errors)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *errors = open_memstream(&buf, &size);
	assert_non_null(errors);
	int r = dm_exec_check_dir(dir, 0, errors);
	fclose(errors);
	*ret_errors = buf;
	return r;
}

static void test_missing_dir_is_empty(void **state)
{
	struct fixture *f = *state;
	char missing[256], *errors;
	struct dm_model *m;
	struct dm_exec_set *set = NULL;

	snprintf(missing, sizeof(missing), "%s/no-such-dir", f->dir);
	assert_int_equal(check_dir(missing, &errors), 0);
	assert_string_equal(errors, "");
	free(errors);

	assert_int_equal(dm_model_new(&m), 0);
	assert_int_equal(dm_exec_load_dir(m, NULL, missing, 0, stderr, &set), 0);
	assert_non_null(set);
	dm_exec_unload(set);
	dm_model_free(m);

	/* a directory that is not one is an error of the caller's */
	test_write_file(f->dir, "plain-file", "");
	snprintf(missing, sizeof(missing), "%s/plain-file", f->dir);
	assert_int_equal(dm_exec_check_dir(missing, 0, NULL), -ENOTDIR);
}

static void test_errors_name_file_and_line(void **state)
{
	struct fixture *f = *state;
	char dir[256], *errors, longline[400];

	snprintf(dir, sizeof(dir), "%s/bad.d", f->dir);
	assert_int_equal(mkdir(dir, 0755), 0);

	test_write_file(dir, "10-section.conf",
		   "[Driver]\n"
		   "Name=a\n"
		   "Bus=usb\n"
		   "[Frobnicate]\n" /* 4 */
		   "Key=ignored, its section was reported\n");
	test_write_file(dir, "11-keys.conf",
		   "[Driver]\n"
		   "Name=b\n"
		   "Bus=usb\n"
		   "Colour=red\n" /* 4 */
		   "[Hooks]\n"
		   "Frobnicate=/bin/true\n"); /* 6 */
	test_write_file(dir, "12-missing.conf",
		   "# no Bus\n"
		   "\n"
		   "[Driver]\n" /* 3 */
		   "Name=c\n");
	test_write_file(dir, "13-no-driver.conf", "[Match]\nidVendor=1234\n"); /* 1 */
	test_write_file(dir, "14-name.conf",
		   "[Driver]\n"
		   "Name=a/b\n" /* 2 */
		   "Bus=usb\n");
	test_write_file(dir, "15-numbers.conf",
		   "[Driver]\n"
		   "Name=d\n"
		   "Bus=usb\n"
		   "Priority=high\n" /* 4 */
		   "[Hooks]\n"
		   "Timeout=0\n"); /* 6 */
	test_write_file(dir, "16-timeout.conf",
		   "[Driver]\nName=e\nBus=usb\n[Hooks]\n"
		   "Timeout=3601\n"); /* 5 */
	test_write_file(dir, "17-relative.conf",
		   "[Driver]\nName=f\nBus=usb\n[Hooks]\n"
		   "Probe=bin/probe --now\n"); /* 5 */
	test_write_file(dir, "18-quotes.conf",
		   "[Driver]\nName=g\nBus=usb\n[Hooks]\n"
		   "Suspend=/bin/echo 'unterminated\n" /* 5 */
		   "Resume=/bin/echo \"two words\" 'and more'\n"); /* fine */
	test_write_file(dir, "19-outside.conf",
		   "Name=h\n" /* 1 */
		   "[Driver]\nName=h\nBus=usb\n");
	test_write_file(dir, "20-match.conf",
		   "[Driver]\nName=i\nBus=usb\n[Match]\n"
		   "a/b=x\n" /* 5 */
		   "idVendor=1234\n"
		   "idVendor=5678\n"); /* 7: twice */
	test_write_file(dir, "21-syntax.conf",
		   "[Driver\n" /* 1 */
		   "Name=j\n"
		   "just some words\n"); /* 3 */
	/* a line longer than the parser takes, then an error after it: the
	 * line numbers must not drift */
	memset(longline, 'x', sizeof(longline));
	memcpy(longline, "Probe=/bin/", 11);
	longline[sizeof(longline) - 1] = '\0';
	char content[1024];
	snprintf(content, sizeof(content),
		 "[Driver]\nName=k\nBus=usb\n[Hooks]\n%s\nRemove=relative\n", longline);
	test_write_file(dir, "22-long.conf", content); /* 5 and 6 */
	test_write_file(dir, "23-dup-a.conf", "[Driver]\nName=same\nBus=usb\n");
	test_write_file(dir, "24-dup-b.conf", "# again\n[Driver]\nBus=pci\nName=same\n"); /* 4 */
	test_write_file(dir, "25-both.conf",
		   "[Driver]\nName=l\nBus=usb\nClass=block\n"); /* 4 */
	test_write_file(dir, "26-class-kdrv.conf",
		   "[Driver]\nName=m\nClass=net\nKernelDriver=e1000e\n"); /* 4 */
	test_write_file(dir, "27-class-colon.conf",
		   "[Driver]\nName=usb:n\nClass=input\n"); /* 2 */
	test_write_file(dir, "28-class.conf", /* fine */
		   "[Driver]\nName=o\nClass=block\n[Match]\nremovable=1\n");
	/* not read: other names, hidden files */
	test_write_file(dir, "README", "garbage\n");
	test_write_file(dir, "25-x.conf.disabled", "garbage\n");
	test_write_file(dir, ".30-hidden.conf", "garbage\n");

	static const struct expected_error all[] = {
		{ "10-section.conf", 4, "unknown section [Frobnicate]" },
		{ "11-keys.conf", 4, "unknown key Colour in [Driver]" },
		{ "11-keys.conf", 6, "unknown key Frobnicate in [Hooks]" },
		{ "12-missing.conf", 3, "has neither Bus= nor Class=" },
		{ "13-no-driver.conf", 1, "no [Driver] section" },
		{ "14-name.conf", 2, "bad Name 'a/b'" },
		{ "15-numbers.conf", 4, "bad Priority 'high'" },
		{ "15-numbers.conf", 6, "bad Timeout '0'" },
		{ "16-timeout.conf", 5, "bad Timeout '3601'" },
		{ "17-relative.conf", 5, "absolute path, not 'bin/probe'" },
		{ "18-quotes.conf", 5, "unbalanced quotes" },
		{ "19-outside.conf", 1, "Name= outside any section" },
		{ "20-match.conf", 5, "bad attribute name 'a/b'" },
		{ "20-match.conf", 7, "idVendor= given twice (first on line 6)" },
		{ "21-syntax.conf", 1, "expected ']'" },
		{ "21-syntax.conf", 3, "expected Key=Value" },
		{ "22-long.conf", 5, "line too long" },
		{ "22-long.conf", 6, "absolute path, not 'relative'" },
		{ "24-dup-b.conf", 4, "driver same is already defined in" },
		{ "25-both.conf", 4, "has both Bus= (line 3) and Class=" },
		{ "26-class-kdrv.conf", 4, "KernelDriver= is for a bus driver" },
		{ "27-class-colon.conf", 2, "a class driver's Name= has no ':'" },
	};
	int r = check_dir(dir, &errors);
	assert_errors(dir, errors, all, sizeof(all) / sizeof(all[0]));
	assert_int_equal(r, (int)(sizeof(all) / sizeof(all[0])));
	/* the duplicate names where the first definition is */
	char first[300];
	snprintf(first, sizeof(first), "already defined in %s/23-dup-a.conf:2", dir);
	assert_non_null(strstr(errors, first));
	free(errors);
}

static void test_design_example_is_valid(void **state)
{
	struct fixture *f = *state;
	char dir[256], *errors;

	snprintf(dir, sizeof(dir), "%s/example.d", f->dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	/* the example of docs/design.md §7, comments and all */
	test_write_file(dir, "10-scanner.conf",
		   "[Driver]\n"
		   "Name=scanner-quiesce\n"
		   "Bus=usb\n"
		   "[Match]                 # all must match (absent: every device on Bus); keys are\n"
		   "                        # attribute files of the device\n"
		   "idVendor=04a9           # values are shell globs\n"
		   "product=*Scan*\n"
		   "[Hooks]                 # each optional; exit status 0 = success\n"
		   "Probe=/usr/libexec/scanner-hook probe\n"
		   "Remove=/usr/libexec/scanner-hook remove\n"
		   "Suspend=/usr/libexec/scanner-hook suspend\n"
		   "Resume=/usr/libexec/scanner-hook resume\n"
		   "Timeout=5\n");
	assert_int_equal(check_dir(dir, &errors), 0);
	assert_string_equal(errors, "");
	free(errors);
}

/* One bad file: nothing of the good ones is registered. */
static void test_invalid_file_registers_nothing(void **state)
{
	struct fixture *f = *state;
	char dir[256], *buf = NULL;
	size_t size = 0;
	struct dm_model *m;
	struct dm_bus *usb;
	struct dm_exec_set *set = (struct dm_exec_set *)&set; /* must stay as it is */

	snprintf(dir, sizeof(dir), "%s/partly-bad.d", f->dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	test_write_file(dir, "10-good.conf", "[Driver]\nName=good\nBus=usb\n");
	test_write_file(dir, "20-bad.conf", "[Driver]\nName=bad\nBus=usb\nPriority=1e3\n");

	assert_int_equal(dm_model_new(&m), 0);
	assert_int_equal(dm_bus_get(m, "usb", NULL, &usb), 0);
	struct dm_device *dev = add_device(m, usb, NULL, &(struct dev_spec){ .name = "1-1" });

	FILE *errors = open_memstream(&buf, &size);
	int r = dm_exec_load_dir(m, NULL, dir, 0, errors, &set);
	fclose(errors);
	assert_int_equal(r, 1);
	assert_ptr_equal(set, (struct dm_exec_set *)&set);
	char want[300];
	snprintf(want, sizeof(want), "%s/20-bad.conf:4: bad Priority '1e3'", dir);
	assert_non_null(strstr(buf, want));
	free(buf);

	struct dm_driver *good = dm_bus_find_driver(usb, "good");
	if (good)
		fail_msg("expected no driver registered from a set with an invalid file");
	assert_string_equal(driver_of(m, dev), "");

	dm_device_unref(dev);
	dm_model_free(m);
}

/* @dir (@size bytes): a new directory @name in the test's own. */
static void make_subdir(const struct fixture *f, const char *name, char *dir, size_t size)
{
	snprintf(dir, size, "%s/%s", f->dir, name);
	assert_int_equal(mkdir(dir, 0755), 0);
}

/* A model with a usb bus where the kernel proxy "usbhid" is registered. */
static struct dm_model *model_with_usbhid(struct dm_bus **ret_usb, struct dm_driver **ret_proxy)
{
	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	assert_int_equal(dm_bus_get(m, "usb", NULL, ret_usb), 0);
	assert_int_equal(dm_driver_new("usbhid", DM_DRIVER_KERNEL, 0, NULL, NULL, NULL, ret_proxy),
			 0);
	assert_int_equal(dm_driver_register(*ret_usb, *ret_proxy), 0);
	return m;
}

static void model_free_with_proxy(struct dm_model *m, struct dm_driver *proxy)
{
	dm_driver_unregister(proxy);
	dm_driver_unref(proxy);
	dm_model_free(m);
}

/* A name already taken on the bus (here by a kernel proxy) fails the load
 * as a whole: the drivers registered before it are unregistered again. */
static void test_name_taken_on_bus_unwinds(void **state)
{
	struct fixture *f = *state;
	char dir[256], *buf = NULL;
	size_t size = 0;
	struct dm_model *m;
	struct dm_bus *usb;
	struct dm_driver *proxy;
	struct dm_exec_set *set = NULL;

	make_subdir(f, "taken.d", dir, sizeof(dir));
	test_write_file(dir, "10-first.conf", "[Driver]\nName=first\nBus=usb\n");
	test_write_file(dir, "20-taken.conf", "[Driver]\nName=usbhid\nBus=usb\n");

	m = model_with_usbhid(&usb, &proxy);
	struct dm_device *dev = add_device(m, usb, NULL, &(struct dev_spec){ .name = "1-1" });

	FILE *errors = open_memstream(&buf, &size);
	int r = dm_exec_load_dir(m, NULL, dir, 0, errors, &set);
	fclose(errors);
	assert_int_equal(r, 1);
	assert_null(set);
	char want[512];
	snprintf(want, sizeof(want), "%s/20-taken.conf:2: bus usb already has a driver named usbhid",
		 dir);
	assert_non_null(strstr(buf, want));
	free(buf);
	/* "first" had bound the device at registration; it is gone again */
	assert_null(dm_bus_find_driver(usb, "first"));
	assert_string_equal(driver_of(m, dev), "");

	dm_device_unref(dev);
	model_free_with_proxy(m, proxy);
}

/* A reload replaces the drivers: the device the old one held goes to the
 * new one. When the new set cannot register (a name a kernel proxy holds),
 * the old set is registered again and takes its device back. When the new
 * set has no driver for it, the device goes back to the kernel proxy, as at
 * start. */
static void test_reload_replaces_or_keeps(void **state)
{
	struct dm_exec_set *set = NULL, *before;
	char dir[256], *buf = NULL;
	size_t size = 0;
	struct dm_bus *usb;
	struct dm_driver *proxy;
	struct dm_model *m;

	make_subdir(*state, "reload.d", dir, sizeof(dir));
	test_write_file(dir, "10-a.conf", "[Driver]\nName=old\nBus=usb\n");

	m = model_with_usbhid(&usb, &proxy);
	assert_int_equal(dm_exec_load_dir(m, NULL, dir, 0, stderr, &set), 0);
	struct dm_device *dev;
	assert_int_equal(dm_device_new(m, "1-1", &dev), 0);
	assert_int_equal(dm_device_set_kernel_driver(dev, "usbhid"), 0); /* the kernel's */
	dm_device_set_bus(dev, usb);
	assert_int_equal(dm_device_add(dev, NULL), 0);
	assert_string_equal(driver_of(m, dev), "old");

	/* the new set holds a name the proxy has: the old set stays */
	test_write_file(dir, "10-a.conf", "[Driver]\nName=new\nBus=usb\n");
	test_write_file(dir, "20-b.conf", "[Driver]\nName=usbhid\nBus=usb\n");
	before = set;
	FILE *errors = open_memstream(&buf, &size);
	assert_int_equal(dm_exec_reload(m, &set, dir, 0, errors), 1);
	fclose(errors);
	assert_ptr_equal(set, before);
	assert_non_null(strstr(buf, "20-b.conf:2: bus usb already has a driver named usbhid"));
	free(buf);
	assert_string_equal(driver_of(m, dev), "old");
	assert_null(dm_bus_find_driver(usb, "new"));

	/* a syntax error: nothing is even unregistered */
	test_write_file(dir, "20-b.conf", "[Driver\n");
	assert_int_equal(dm_exec_reload(m, &set, dir, 0, NULL), 1);
	assert_ptr_equal(set, before);

	/* valid: "new" takes the device from "old" */
	char path[300];
	snprintf(path, sizeof(path), "%s/20-b.conf", dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(dm_exec_reload(m, &set, dir, 0, stderr), 0);
	assert_string_equal(driver_of(m, dev), "new");
	assert_null(dm_bus_find_driver(usb, "old"));

	/* no driver for it any more: back to the kernel's */
	test_write_file(dir, "10-a.conf", "[Driver]\nName=other\nBus=pci\n");
	assert_int_equal(dm_exec_reload(m, &set, dir, 0, stderr), 0);
	assert_string_equal(driver_of(m, dev), "usbhid");

	dm_exec_unload(set);
	dm_device_unref(dev);
	model_free_with_proxy(m, proxy);
}

/* ---- binding and hooks ---- */

static void test_binding_and_hook_environment(void **state)
{
	struct fixture *f = *state;
	char dir[256], content[2048];
	struct dm_model *m;
	struct dm_bus *usb, *pci;
	struct dm_class *class;
	struct dm_exec_set *set = NULL;

	snprintf(dir, sizeof(dir), "%s/binding.d", f->dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	write_hook(f, "hook", 0);
	write_hook(f, "decline", 1);

	/* loaded first but with a lower priority than the scanner driver;
	 * no Probe=: it takes every device of its bus */
	test_write_file(dir, "10-catchall.conf", "[Driver]\nName=catchall\nBus=usb\nPriority=50\n");
	snprintf(content, sizeof(content),
		 "[Driver]\n"
		 "Name=scanner\n"
		 "Bus=usb\n"
		 "Priority=200\n"
		 "[Match]\n"
		 "idVendor=04a9\n"
		 "product=*Scan*\n"
		 "[Hooks]\n"
		 "Probe=%1$s/hook probe 'two words' \"$HOME\"\n"
		 "Remove=%1$s/hook remove\n"
		 "Suspend=%1$s/hook suspend\n"
		 "Resume=%1$s/hook resume\n"
		 "Timeout=10\n",
		 f->dir);
	test_write_file(dir, "20-scanner.conf", content);
	snprintf(content, sizeof(content),
		 "[Driver]\nName=intel\nBus=pci\n[Match]\nvendor=0x8086\n"
		 "[Hooks]\nProbe=%s/hook pci-probe\n",
		 f->dir);
	test_write_file(dir, "30-intel.conf", content);
	snprintf(content, sizeof(content),
		 "[Driver]\nName=nvidia\nBus=pci\n[Match]\nvendor=0x10de\n"
		 "[Hooks]\nProbe=%s/decline pci-decline\n",
		 f->dir);
	test_write_file(dir, "40-nvidia.conf", content);

	/* in our environment, and must not reach any hook */
	setenv("DRIVERFS_TEST_SECRET", "leaked", 1);

	assert_int_equal(dm_model_new(&m), 0);
	assert_int_equal(dm_bus_get(m, "usb", NULL, &usb), 0);
	assert_int_equal(dm_bus_get(m, "pci", NULL, &pci), 0);
	assert_int_equal(dm_class_get(m, "usbmisc", &class), 0);

	/* PCI functions exist before the drivers: registration probes them */
	struct dm_device *host = add_device(m, NULL, NULL, &(struct dev_spec){ .name = "pci0000:00" });
	struct dm_device *gpu = add_device(
		m, pci, host,
		&(struct dev_spec){ .name = "0000:00:02.0",
				    .devpath = "/devices/pci0000:00/0000:00:02.0",
				    .values = { { "vendor", "0x8086" },
						{ "devnode", "/dev/dri/card0" },
						{ "uevent", "PCI_ID=8086:46A6\nDRIVER=i915" } } });
	struct dm_device *other = add_device(
		m, pci, host,
		&(struct dev_spec){ .name = "0000:00:03.0",
				    .values = { { "vendor", "0x10de" },
						/* these come from the model, never from
						 * the uevent, even when the model has none */
						{ "uevent", "ACTION=add\nDEVPATH=/from-uevent\n"
							    "CLASS=from-uevent\nBUS=from-uevent\n"
							    "DRIVERFS_PATH=from-uevent\nPATH=/tmp\n"
							    "PCI_CLASS=30000" } } });

	assert_int_equal(dm_exec_load_dir(m, NULL, dir, 0, stderr, &set), 0);
	assert_non_null(set);
	assert_string_equal(driver_of(m, gpu), "intel");
	/* its probe exited 1: declined, left unbound */
	assert_string_equal(driver_of(m, other), "");

	/* USB devices come after the drivers: offered by priority */
	struct dm_device *usb1 = add_device(m, NULL, NULL, &(struct dev_spec){ .name = "usb1" });
	struct dm_device *scanner;
	assert_int_equal(dm_device_new(m, "1-1", &scanner), 0);
	assert_int_equal(dm_device_set_devpath(scanner,
					       "/devices/pci0000:00/0000:00:14.0/usb1/1-1"),
			 0);
	assert_int_equal(dm_device_set_value(scanner, "idVendor", "04a9"), 0);
	assert_int_equal(dm_device_set_value(scanner, "product", "CanoScan LiDE 300"), 0);
	assert_int_equal(dm_device_set_value(scanner, "devnode", "/dev/bus/usb/001/002"), 0);
	assert_int_equal(dm_device_set_value(scanner, "uevent",
					     "MAJOR=189\nMINOR=1\nDEVNAME=bus/usb/001/002\n"
					     "DEVTYPE=usb_device\nDRIVER=usb\nPRODUCT=4a9/1913/100\n"
					     /* (a line that is not a property would
					      * drop the whole text: test-hookenv) */
					     /* a device-reported string with a newline
					      * in it (a HID name): what follows must
					      * not steer the hook's loader or shell */
					     "HID_NAME=Evil\nLD_PRELOAD=/nonexistent/evil.so\n"
					     "BASH_ENV=/nonexistent/evil.sh\nIFS=/\nMALLOC_CHECK_=3\n"
					     "HOME=/nonexistent\nENV=/nonexistent/evil.sh"),
			 0);
	dm_device_set_bus(scanner, usb);
	dm_device_set_class(scanner, class, NULL);
	assert_int_equal(dm_device_add(scanner, usb1), 0);
	struct dm_device *mouse = add_device(
		m, usb, usb1,
		&(struct dev_spec){ .name = "1-2",
				    .values = { { "idVendor", "046d" }, { "product", "Mouse" } } });
	/* the scanner's vendor but another product: the glob does not match */
	struct dm_device *printer = add_device(
		m, usb, usb1,
		&(struct dev_spec){ .name = "1-3",
				    .values = { { "idVendor", "04a9" }, { "product", "PIXMA" } } });

	assert_string_equal(driver_of(m, scanner), "scanner");
	assert_string_equal(driver_of(m, mouse), "catchall");
	assert_string_equal(driver_of(m, printer), "catchall");

	/* PM hooks */
	assert_int_equal(dm_device_call_driver(scanner, DM_CALL_SUSPEND, NULL), 0);
	assert_int_equal(dm_device_call_driver(scanner, DM_CALL_RESUME, NULL), 0);
	/* a driver without PM hooks has nothing to call */
	assert_int_equal(dm_device_pm_cost(mouse, DM_CALL_SUSPEND), -1);
	assert_true(dm_device_pm_cost(scanner, DM_CALL_SUSPEND) >= 0);

	/* unload: remove() on every bound device */
	dm_exec_unload(set);
	assert_string_equal(driver_of(m, scanner), "");
	assert_string_equal(driver_of(m, gpu), "");

	char *log = read_log(f);
	/* the arguments as quoted in the file, "$HOME" not expanded */
	char *rec = log_record(log, "probe two words $HOME", 0);
	if (!rec)
		fail_msg("expected a probe of the scanner with its arguments, log:\n%s", log);
	assert_record_has(rec, "ACTION=probe");
	assert_record_has(rec, "DRIVERFS_PATH=usb1/1-1");
	assert_record_has(rec, "DEVPATH=/devices/pci0000:00/0000:00:14.0/usb1/1-1");
	assert_record_has(rec, "BUS=usb");
	assert_record_has(rec, "CLASS=usbmisc");
	assert_record_has(rec, "DRIVER=scanner");
	assert_record_has(rec, "DEVNAME=/dev/bus/usb/001/002");
	assert_record_has(rec, "PATH=/usr/sbin:/usr/bin:/sbin:/bin");
	assert_record_has(rec, "DEVTYPE=usb_device");
	assert_record_has(rec, "PRODUCT=4a9/1913/100");
	assert_record_has(rec, "MAJOR=189");
	/* the uevent's DRIVER (the kernel's) does not replace ours */
	assert_false(record_has(rec, "DRIVER=usb"));
	assert_false(record_sets(rec, "DRIVERFS_TEST_SECRET"));
	assert_false(record_sets(rec, "HOME"));
	assert_record_has(rec, "HID_NAME=Evil");
	static const char *const steering[] = { "LD_PRELOAD", "BASH_ENV", "IFS", "MALLOC_CHECK_",
						"ENV" };
	for (size_t i = 0; i < sizeof(steering) / sizeof(steering[0]); i++)
		if (record_sets(rec, steering[i]))
			fail_msg("expected the device's %s= dropped from the hook environment, got:\n%s",
				 steering[i], rec);
	free(rec);

	rec = log_record(log, "suspend", 0);
	assert_non_null(rec);
	assert_record_has(rec, "ACTION=suspend");
	assert_record_has(rec, "DRIVER=scanner");
	assert_record_has(rec, "DRIVERFS_PATH=usb1/1-1");
	free(rec);
	rec = log_record(log, "resume", 0);
	assert_non_null(rec);
	assert_record_has(rec, "ACTION=resume");
	free(rec);
	rec = log_record(log, "remove", 0);
	assert_non_null(rec);
	assert_record_has(rec, "ACTION=remove");
	assert_record_has(rec, "DEVNAME=/dev/bus/usb/001/002");
	free(rec);
	/* one probe, suspend, resume and remove for the scanner only */
	assert_null(log_record(log, "probe two words $HOME", 1));
	assert_null(log_record(log, "suspend", 1));
	assert_null(log_record(log, "remove", 1));

	/* the PCI probes: DEVNAME from the devnode value when the uevent has
	 * none; a device without a devpath or class has none of those */
	rec = log_record(log, "pci-probe", 0);
	assert_non_null(rec);
	assert_record_has(rec, "DRIVERFS_PATH=pci0000:00/0000:00:02.0");
	assert_record_has(rec, "DEVNAME=/dev/dri/card0");
	assert_record_has(rec, "BUS=pci");
	assert_record_has(rec, "DRIVER=intel");
	assert_record_has(rec, "PCI_ID=8086:46A6");
	assert_false(record_sets(rec, "CLASS"));
	free(rec);
	rec = log_record(log, "pci-decline", 0);
	assert_non_null(rec);
	assert_record_has(rec, "DRIVER=nvidia");
	assert_record_has(rec, "ACTION=probe");
	assert_record_has(rec, "BUS=pci");
	assert_record_has(rec, "DRIVERFS_PATH=pci0000:00/0000:00:03.0");
	assert_record_has(rec, "PATH=/usr/sbin:/usr/bin:/sbin:/bin");
	assert_record_has(rec, "PCI_CLASS=30000");
	assert_false(record_sets(rec, "DEVPATH"));
	assert_false(record_sets(rec, "CLASS"));
	assert_false(record_sets(rec, "DEVNAME"));
	free(rec);
	free(log);
	unsetenv("DRIVERFS_TEST_SECRET");

	struct dm_device *all[] = { host, gpu, other, usb1, scanner, mouse, printer };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		dm_device_unref(all[i]);
	dm_model_free(m);
}

/* Hook failures reach the caller as -errno. */
static void test_hook_failures(void **state)
{
	struct fixture *f = *state;
	char dir[256], content[1024], path[512];
	struct dm_model *m;
	struct dm_bus *bus;
	struct dm_exec_set *set = NULL;

	snprintf(dir, sizeof(dir), "%s/failing.d", f->dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	write_hook(f, "fail", 3);
	snprintf(path, sizeof(path), "%s/slow", f->dir);
	test_write_file(f->dir, "slow", "#!/bin/sh\nexec sleep 60\n");
	assert_int_equal(chmod(path, 0755), 0);
	snprintf(content, sizeof(content),
		 "[Driver]\nName=failing\nBus=test\n[Match]\nkind=failing\n"
		 "[Hooks]\nSuspend=%1$s/fail\nResume=%1$s/slow\nTimeout=1\n",
		 f->dir);
	test_write_file(dir, "10-failing.conf", content);
	snprintf(content, sizeof(content),
		 "[Driver]\nName=missing\nBus=test\n[Match]\nkind=missing\n"
		 "[Hooks]\nSuspend=%s/no-such-hook\n",
		 f->dir);
	test_write_file(dir, "20-missing.conf", content);

	assert_int_equal(dm_model_new(&m), 0);
	assert_int_equal(dm_bus_get(m, "test", NULL, &bus), 0);
	assert_int_equal(dm_exec_load_dir(m, NULL, dir, 0, stderr, &set), 0);
	struct dm_device *a = add_device(
		m, bus, NULL, &(struct dev_spec){ .name = "a", .values = { { "kind", "failing" } } });
	struct dm_device *b = add_device(
		m, bus, NULL, &(struct dev_spec){ .name = "b", .values = { { "kind", "missing" } } });
	assert_string_equal(driver_of(m, a), "failing");
	assert_string_equal(driver_of(m, b), "missing");

	/* exit status 3 */
	assert_int_equal(dm_device_call_driver(a, DM_CALL_SUSPEND, NULL), -EIO);
	/* Timeout=1 against a hook that sleeps 60 s */
	assert_int_equal(dm_device_call_driver(a, DM_CALL_RESUME, NULL), -ETIMEDOUT);
	/* a program that cannot be started */
	assert_int_equal(dm_device_call_driver(b, DM_CALL_SUSPEND, NULL), -ENOENT);

	dm_exec_unload(set);
	dm_device_unref(a);
	dm_device_unref(b);
	dm_model_free(m);
}

/* ---- ownership and modes (issue 14, item 6) ---- */

/* check_dir() of @dir: its error count, and whether the errors hold @what
 * and @needle. */
static void assert_refused(const char *dir, const char *what, const char *needle)
{
	char *errors;
	int r = check_dir(dir, &errors);
	if (r != 1 || !strstr(errors, what) || !strstr(errors, needle))
		fail_msg("%s: expected one error naming %s with '%s', got %d:\n%s", dir, what,
			 needle, r, errors);
	free(errors);
}

static void assert_accepted(const char *dir)
{
	char *errors;
	int r = check_dir(dir, &errors);
	if (r != 0)
		fail_msg("%s: expected no error, got %d:\n%s", dir, r, errors);
	free(errors);
}

/* drivers.d files and hook programs run code as root: one anyone but root
 * can change, or one in a directory anyone but root can change, is refused
 * with an error naming it and what is at fault. */
static void test_untrusted_files_refused(void **state)
{
	struct fixture *f = *state;
	char dir[256], conf[300], hook[300], content[600], target[300];

	if (geteuid() != 0)
		skip(); /* files must be root's to be trusted */
	snprintf(dir, sizeof(dir), "%s/trust.d", f->dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(conf, sizeof(conf), "%s/10-a.conf", dir);
	test_write_file(dir, "10-a.conf", "[Driver]\nName=a\nBus=usb\n");
	assert_int_equal(chmod(conf, 0644), 0);
	assert_accepted(dir);

	/* a group-writable drivers.d file */
	assert_int_equal(chmod(conf, 0664), 0);
	assert_refused(dir, conf, "the file is writable by group");
	/* a world-writable one */
	assert_int_equal(chmod(conf, 0646), 0);
	assert_refused(dir, conf, "the file is writable by other");
	/* one owned by another user */
	assert_int_equal(chmod(conf, 0644), 0);
	assert_int_equal(chown(conf, 1000, 1000), 0);
	assert_refused(dir, conf, "the file is owned by uid 1000");
	assert_int_equal(chown(conf, 0, 0), 0);
	assert_accepted(dir);

	/* drivers.d itself world-writable, not sticky: the file could be
	 * replaced; sticky and root's (/tmp): it cannot */
	assert_int_equal(chmod(dir, 0777), 0);
	assert_refused(dir, conf, "is writable by other");
	assert_int_equal(chmod(dir, 01777), 0);
	assert_accepted(dir);
	assert_int_equal(chmod(dir, 0755), 0);

	/* a symlink is trusted as far as its target: one to a world-writable
	 * file is refused */
	snprintf(target, sizeof(target), "%s/target.conf", f->dir);
	test_write_file(f->dir, "target.conf", "[Driver]\nName=t\nBus=pci\n");
	assert_int_equal(chmod(target, 0666), 0);
	test_write_file(dir, "ignored", "");
	snprintf(content, sizeof(content), "%s/20-link.conf", dir);
	assert_int_equal(symlink(target, content), 0);
	assert_refused(dir, content, "the file is writable by other");
	assert_int_equal(chmod(target, 0644), 0);
	assert_accepted(dir);
	assert_int_equal(unlink(content), 0);

	/* a hook program owned by uid 1000 */
	write_hook(f, "probe", 0);
	snprintf(hook, sizeof(hook), "%s/probe", f->dir);
	snprintf(content, sizeof(content), "[Driver]\nName=h\nBus=usb\n[Hooks]\nProbe=%s\n", hook);
	test_write_file(dir, "30-hook.conf", content);
	assert_accepted(dir);
	assert_int_equal(chown(hook, 1000, 1000), 0);
	assert_refused(dir, hook, "the file is owned by uid 1000");
	/* group-writable */
	assert_int_equal(chown(hook, 0, 0), 0);
	assert_int_equal(chmod(hook, 0775), 0);
	assert_refused(dir, hook, "the file is writable by group");
}

/* The runner refuses to run a program anyone but root can change, even if
 * it changed after the configuration was read. */
static void test_untrusted_program_not_run(void **state)
{
	struct fixture *f = *state;
	char hook[300];
	struct dm_run_result res;

	if (geteuid() != 0)
		skip();
	write_hook(f, "prog", 0);
	snprintf(hook, sizeof(hook), "%s/prog", f->dir);
	const char *argv[] = { hook, NULL };
	assert_int_equal(dm_run("trust", argv, NULL, 10000, &res), 0);
	dm_run_result_done(&res);
	char *log = read_log(f);
	assert_non_null(strstr(log, "=== 0"));
	free(log);
	assert_int_equal(unlink(f->log), 0);

	assert_int_equal(chmod(hook, 0777), 0);
	assert_int_equal(dm_run("trust", argv, NULL, 10000, &res), -EPERM);
	log = read_log(f);
	assert_string_equal(log, "");
	free(log);

	/* nor is the hotplug helper started with one */
	struct dm_helper *h = NULL;
	assert_int_equal(dm_helper_new(hook, 10000, NULL, NULL, &h), -EPERM);
	assert_null(h);
	assert_int_equal(chmod(hook, 0755), 0);
	assert_int_equal(dm_helper_new(hook, 10000, NULL, NULL, &h), 0);
	dm_helper_free(h);
}

/* A hook script root's alone whose #! names an interpreter anyone but root
 * can change runs that interpreter as root: the check of drivers.d, the
 * runner and the hotplug helper refuse it, naming the interpreter (issue
 * 30 item 8); a relative one too; root's own interpreter is run. */
static void test_untrusted_interpreter_refused(void **state)
{
	struct fixture *f = *state;
	char interp[300], hook[300], body[700], dir[300], ran[300];
	struct dm_run_result res;

	if (geteuid() != 0)
		skip();
	/* the interpreter: a script of its own that says it ran */
	snprintf(ran, sizeof(ran), "%s/interpreter-ran", f->dir);
	snprintf(interp, sizeof(interp), "%s/interp", f->dir);
	snprintf(body, sizeof(body), "#!/bin/sh\ntouch %s\n", ran);
	test_write_file(f->dir, "interp", body);
	assert_int_equal(chmod(interp, 0755), 0);
	/* the hook: root's, 0755, its #! with spaces and a tab and an argument */
	snprintf(hook, sizeof(hook), "%s/hook", f->dir);
	snprintf(body, sizeof(body), "#! \t%s -x\nexit 0\n", interp);
	test_write_file(f->dir, "hook", body);
	assert_int_equal(chmod(hook, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/interp.d", f->dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(body, sizeof(body), "[Driver]\nName=h\nBus=usb\n[Hooks]\nProbe=%s\n", hook);
	test_write_file(dir, "10-h.conf", body);
	const char *argv[] = { hook, NULL };

	/* root's interpreter: accepted and run */
	assert_accepted(dir);
	assert_int_equal(dm_run("trust", argv, NULL, 10000, &res), 0);
	dm_run_result_done(&res);
	assert_int_equal(access(ran, F_OK), 0);
	assert_int_equal(unlink(ran), 0);

	/* another user's */
	char needle[700];
	snprintf(needle, sizeof(needle),
		 "the #! interpreter %s of %s: the file is owned by uid 1000, not root", interp,
		 hook);
	assert_int_equal(chown(interp, 1000, 1000), 0);
	assert_refused(dir, hook, needle);
	assert_int_equal(dm_run("trust", argv, NULL, 10000, &res), -EPERM);
	assert_int_equal(access(ran, F_OK), -1); /* not run */
	struct dm_helper *h = NULL;
	assert_int_equal(dm_helper_new(hook, 10000, NULL, NULL, &h), -EPERM);
	assert_null(h);

	/* root's but writable by other */
	assert_int_equal(chown(interp, 0, 0), 0);
	assert_int_equal(chmod(interp, 0757), 0);
	assert_refused(dir, hook, "the file is writable by other");
	assert_int_equal(dm_run("trust", argv, NULL, 10000, &res), -EPERM);
	assert_int_equal(access(ran, F_OK), -1);
	assert_int_equal(chmod(interp, 0755), 0);

	/* a relative interpreter: found from the working directory */
	test_write_file(f->dir, "hook", "#!sh\nexit 0\n");
	snprintf(needle, sizeof(needle), "the #! interpreter sh of %s is not an absolute path",
		 hook);
	assert_refused(dir, hook, needle);
	assert_int_equal(dm_run("trust", argv, NULL, 10000, &res), -EPERM);
	assert_int_equal(dm_helper_new(hook, 10000, NULL, NULL, &h), -EPERM);
	assert_null(h);
}

/* dm_config_load() of @conf, with its errors in *@ret_errors (free()). */
static int load_config(const char *conf, char **ret_errors)
{
	size_t len;
	struct dm_config c;
	FILE *s = open_memstream(ret_errors, &len);
	assert_non_null(s);
	int r = dm_config_load(conf, true, s, &c);
	fclose(s);
	dm_config_done(&c);
	return r;
}

/* driverfsd.conf, as dm_config_load() (and so --check-config) reads it. */
static void test_untrusted_config_refused(void **state)
{
	struct fixture *f = *state;
	char conf[300], *errors;

	if (geteuid() != 0)
		skip();
	snprintf(conf, sizeof(conf), "%s/driverfsd.conf", f->dir);
	test_write_file(f->dir, "driverfsd.conf", "[Daemon]\nLogLevel=debug\n");
	assert_int_equal(chmod(conf, 0644), 0);
	assert_int_equal(load_config(conf, &errors), 0);
	assert_string_equal(errors, "");
	free(errors);

	assert_int_equal(chmod(conf, 0666), 0);
	assert_int_equal(load_config(conf, &errors), 1);
	assert_non_null(strstr(errors, conf));
	assert_non_null(strstr(errors, "the file is writable by other (owner uid 0, mode 0666)"));
	free(errors);

	/* in a world-writable directory that is not sticky */
	assert_int_equal(chmod(conf, 0644), 0);
	assert_int_equal(chmod(f->dir, 0777), 0);
	assert_int_equal(load_config(conf, &errors), 1);
	assert_non_null(strstr(errors, conf));
	assert_non_null(strstr(errors, "is writable by other"));
	free(errors);
	assert_int_equal(chmod(f->dir, 0700), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_missing_dir_is_empty, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_errors_name_file_and_line, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_design_example_is_valid, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_invalid_file_registers_nothing, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_name_taken_on_bus_unwinds, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_reload_replaces_or_keeps, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_binding_and_hook_environment, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_hook_failures, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_untrusted_files_refused, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_untrusted_program_not_run, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_untrusted_interpreter_refused, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_untrusted_config_refused, fixture_setup,
						fixture_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
