/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the binding journal (src/drivers/journal.c): what is put is
 * read back as it was, names with spaces, newlines and percent signs
 * included; the file goes when its last entry is dropped; a journal of
 * another boot, a line cut short or any text that is not one is refused;
 * a file anyone but root could change is refused with the reason and
 * nothing in it is read (issue 33 item 1). An SR-IOV transaction's entry
 * (item 5) likewise; a journal without one reads as before. Files must be root's to be
 * trusted: skipped for anyone else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drivers/binding.h"
#include "drivers/journal.h"

static char dir[64], path[128];
static struct dm_journal *jr;

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-journal-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	chmod(dir, 0755);
	snprintf(path, sizeof(path), "%s/journal", dir);
	return dm_journal_new(path, &jr);
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	dm_journal_free(jr);
	jr = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct dm_journal_txn sample(const char *devpath)
{
	struct dm_journal_txn t = { .has_override = true, .action = DM_BIND_TO,
				    .set_override = true, .step = DM_STEP_UNBIND };
	snprintf(t.devpath, sizeof(t.devpath), "%s", devpath);
	snprintf(t.bus, sizeof(t.bus), "pci");
	snprintf(t.name, sizeof(t.name), "%s", strrchr(devpath, '/') + 1);
	snprintf(t.old_driver, sizeof(t.old_driver), "e1000e");
	snprintf(t.driver, sizeof(t.driver), "vfio-pci");
	return t;
}

static void test_round_trip(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char why[256];
	struct dm_journal_txn a = sample("/devices/pci0000:00/0000:00:1f.6");
	/* what a hostile name may hold: spaces, newlines, %, non-ASCII */
	struct dm_journal_txn b = sample("/devices/odd/a b\n%41\xc3\xa9 x");
	memset(b.old_driver, 0, sizeof(b.old_driver));
	b.has_override = false;
	b.pending = true;
	b.step = DM_STEP_VERIFY;
	assert_int_equal(dm_journal_put_txn(jr, &a, why, sizeof(why)), 0);
	assert_int_equal(dm_journal_put_txn(jr, &b, why, sizeof(why)), 0);
	struct dm_journal_group g = { .n = 1 };
	snprintf(g.devpath, sizeof(g.devpath), "%s", a.devpath);
	snprintf(g.driver, sizeof(g.driver), "vfio-pci");
	snprintf(g.members[0].devpath, sizeof(g.members[0].devpath), "/devices/pci0000:00/x y");
	snprintf(g.members[0].old_driver, sizeof(g.members[0].old_driver), "snd_hda_intel");
	assert_int_equal(dm_journal_put_group(jr, &g, why, sizeof(why)), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);

	struct dm_journal_txn *txns;
	struct dm_journal_group *groups;
	size_t nt, ng;
	assert_int_equal(dm_journal_load(jr, &txns, &nt, &groups, &ng, why, sizeof(why)), 0);
	assert_int_equal(nt, 2);
	assert_int_equal(ng, 1);
	const struct dm_journal_txn *ra = strcmp(txns[0].devpath, a.devpath) == 0 ? &txns[0] : &txns[1];
	const struct dm_journal_txn *rb = ra == &txns[0] ? &txns[1] : &txns[0];
	assert_memory_equal(ra, &a, sizeof(a));
	assert_memory_equal(rb, &b, sizeof(b));
	assert_string_equal(groups[0].members[0].devpath, "/devices/pci0000:00/x y");
	assert_string_equal(groups[0].members[0].old_driver, "snd_hda_intel");
	free(txns);
	free(groups);

	dm_journal_drop_txn(jr, a.devpath);
	dm_journal_drop_group(jr, a.devpath);
	assert_int_equal(stat(path, &st), 0);
	dm_journal_drop_txn(jr, b.devpath);
	assert_int_equal(stat(path, &st), -1); /* the last entry gone: the file too */
	assert_int_equal(dm_journal_load(jr, &txns, &nt, &groups, &ng, why, sizeof(why)), 0);
	assert_int_equal(nt + ng, 0);
}

static void test_not_a_journal(void **state)
{
	(void)state;
	struct dm_journal_txn *txns;
	struct dm_journal_group *groups;
	size_t nt, ng;
	static const char *const bad[] = {
		"",
		"driverfsd-binding-journal 1 B\ntxn /a pci x e1000e 1 % 0 vfio-pci 1 2 0", /* cut */
		"driverfsd-binding-journal 2 B\n",
		"something else 1 B\n",
		"driverfsd-binding-journal 1 B\ntxn /a pci x e1000e 1 % 0 vfio-pci 1 9 0\n",
		"driverfsd-binding-journal 1 B\ntxn /a pci x e1000e 1 % 7 vfio-pci 1 2 0\n",
		"driverfsd-binding-journal 1 B\ntxn a pci x e1000e 1 % 0 vfio-pci 1 2 0\n",
		"driverfsd-binding-journal 1 B\ntxn /a pci x e1000e 1 %zz 0 vfio-pci 1 2 0\n",
		"driverfsd-binding-journal 1 B\ntxn /a pci x e1000e 1 %00 0 vfio-pci 1 2 0\n",
		"driverfsd-binding-journal 1 B\ntxn /a pci x e1000e 1 % 0 vfio-pci 1 2\n",
		"driverfsd-binding-journal 1 B\ntxn /a pci x e\xff 1 % 0 vfio-pci 1 2 0\n",
		"driverfsd-binding-journal 1 B\ngroup /a vfio-pci /b e1000e\n",
		"driverfsd-binding-journal 1 B\nrm -rf /\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *text = strdup(bad[i]);
		assert_int_equal(dm_journal_parse(text, "B", &txns, &nt, &groups, &ng, NULL, NULL), -EINVAL);
		free(text);
	}
	char ok[] = "driverfsd-binding-journal 1 B\ntxn /a pci x e1000e 1 % 0 vfio-pci 1 2 0\n";
	char other[sizeof(ok)];
	memcpy(other, ok, sizeof(ok));
	assert_int_equal(dm_journal_parse(other, "C", &txns, &nt, &groups, &ng, NULL, NULL), -ESTALE);
	assert_int_equal(dm_journal_parse(ok, "B", &txns, &nt, &groups, &ng, NULL, NULL), 0);
	assert_int_equal(nt, 1);
	assert_string_equal(txns[0].old_driver, "e1000e");
	assert_string_equal(txns[0].old_override, "");
	assert_int_equal(txns[0].step, DM_STEP_UNBIND);
	free(txns);
	free(groups);
}

/* An SR-IOV transaction's entry (issue 33 item 5): put, kept by a load
 * (which returns binding entries only), listed back as it was, dropped. */
static void test_sriov_round_trip(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char why[256];
	struct dm_journal_sriov *s = calloc(1, sizeof(*s)), *back;
	assert_non_null(s);
	snprintf(s->devpath, sizeof(s->devpath), "/devices/pci0000:00/0000:04:00.0");
	snprintf(s->name, sizeof(s->name), "0000:04:00.0");
	s->old_count = 2;
	s->autoprobe = 1;
	s->numvfs = 4;
	snprintf(s->driver, sizeof(s->driver), "vfio-pci");
	s->step = DM_SRIOV_STEP_BIND;
	s->n = 2;
	snprintf(s->vfs[0].name, sizeof(s->vfs[0].name), "0000:04:00.2");
	snprintf(s->vfs[0].driver, sizeof(s->vfs[0].driver), "mlx5_core");
	snprintf(s->vfs[1].name, sizeof(s->vfs[1].name), "0000:04:00.3");
	snprintf(s->vfs[1].override, sizeof(s->vfs[1].override), "a b\n%%");
	assert_int_equal(dm_journal_put_sriov(jr, s, why, sizeof(why)), 0);

	struct dm_journal_txn *txns;
	struct dm_journal_group *groups;
	size_t nt, ng;
	assert_int_equal(dm_journal_load(jr, &txns, &nt, &groups, &ng, why, sizeof(why)), 0);
	assert_int_equal(nt + ng, 0);
	free(txns);
	free(groups);
	assert_int_equal(dm_journal_sriov_entries(jr, &back), 1);
	assert_memory_equal(back, s, sizeof(*s));
	free(back);
	dm_journal_drop_sriov(jr, s->devpath);
	struct stat st;
	assert_int_equal(stat(path, &st), -1);
	assert_int_equal(dm_journal_sriov_entries(jr, &back), 0);
	free(back);
	/* more VFs than a line records: refused, nothing written */
	s->n = DM_JOURNAL_VFS_MAX + 1;
	assert_int_equal(dm_journal_put_sriov(jr, s, why, sizeof(why)), -E2BIG);
	assert_int_equal(stat(path, &st), -1);
	free(s);
}

/* sriov lines parsed and checked; a journal without one (an earlier
 * daemon's) reads as before. */
static void test_sriov_lines(void **state)
{
	(void)state;
	struct dm_journal_txn *txns;
	struct dm_journal_group *groups;
	struct dm_journal_sriov *sriovs;
	size_t nt, ng, ns;
	static const char *const bad[] = {
		"driverfsd-binding-journal 1 B\nsriov /p 0000:04:00.0 2 1 4 vfio-pci 9 0\n",
		"driverfsd-binding-journal 1 B\nsriov /p 0000:04:00.0 2 2 4 vfio-pci 3 0\n",
		"driverfsd-binding-journal 1 B\nsriov /p 0000:04:00.0 2 1 70000 vfio-pci 3 0\n",
		"driverfsd-binding-journal 1 B\nsriov p 0000:04:00.0 2 1 4 vfio-pci 3 0\n",
		"driverfsd-binding-journal 1 B\nsriov /p 0000:04:00.0 2 1 4 vfio-pci 3 0 vf %\n",
		"driverfsd-binding-journal 1 B\nsriov /p 0000:04:00.0 2 1 4 vfio-pci 3 0 % % %\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *text = strdup(bad[i]);
		assert_int_equal(dm_journal_parse(text, "B", &txns, &nt, &groups, &ng, &sriovs, &ns),
				 -EINVAL);
		free(text);
		text = strdup(bad[i]);
		assert_int_equal(dm_journal_parse(text, "B", &txns, &nt, &groups, &ng, NULL, NULL),
				 -EINVAL);
		free(text);
	}
	char old[] = "driverfsd-binding-journal 1 B\ntxn /a pci x e1000e 1 % 0 vfio-pci 1 2 0\n";
	assert_int_equal(dm_journal_parse(old, "B", &txns, &nt, &groups, &ng, &sriovs, &ns), 0);
	assert_int_equal(nt, 1);
	assert_int_equal(ns, 0);
	free(txns);
	free(groups);
	free(sriovs);
	char ok[] = "driverfsd-binding-journal 1 B\ntxn /a pci x e1000e 1 % 0 vfio-pci 1 2 0\n"
		    "sriov /p 0000:04:00.0 2 -1 0 % 5 1 0000:04:00.2 % % 0000:04:00.3 mlx5_core "
		    "vfio-pci\n";
	assert_int_equal(dm_journal_parse(ok, "B", &txns, &nt, &groups, &ng, &sriovs, &ns), 0);
	assert_int_equal(nt, 1);
	assert_int_equal(ns, 1);
	assert_int_equal(sriovs[0].old_count, 2);
	assert_int_equal(sriovs[0].autoprobe, -1);
	assert_int_equal(sriovs[0].numvfs, 0);
	assert_string_equal(sriovs[0].driver, "");
	assert_int_equal(sriovs[0].step, DM_SRIOV_STEP_VERIFY);
	assert_true(sriovs[0].pending);
	assert_int_equal(sriovs[0].n, 2);
	assert_string_equal(sriovs[0].vfs[1].driver, "mlx5_core");
	assert_string_equal(sriovs[0].vfs[1].override, "vfio-pci");
	free(txns);
	free(groups);
	free(sriovs);
}

static void test_untrusted_is_refused(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char why[256];
	struct dm_journal_txn a = sample("/devices/pci0000:00/0000:00:1f.6");
	assert_int_equal(dm_journal_put_txn(jr, &a, why, sizeof(why)), 0);
	struct dm_journal_txn *txns;
	struct dm_journal_group *groups;
	size_t nt, ng;
	assert_int_equal(chmod(path, 0666), 0);
	assert_int_equal(dm_journal_load(jr, &txns, &nt, &groups, &ng, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "writable by"));
	assert_int_equal(nt + ng, 0);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(chown(path, 65534, 0), 0);
	assert_int_equal(dm_journal_load(jr, &txns, &nt, &groups, &ng, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "owned by uid 65534"));
	assert_int_equal(chown(path, 0, 0), 0);
	assert_int_equal(chmod(dir, 0777), 0); /* a directory above anyone writes to */
	assert_int_equal(dm_journal_load(jr, &txns, &nt, &groups, &ng, why, sizeof(why)), -EPERM);
	assert_int_equal(chmod(dir, 0755), 0);
	assert_int_equal(dm_journal_load(jr, &txns, &nt, &groups, &ng, why, sizeof(why)), 0);
	assert_int_equal(nt, 1);
	free(txns);
	free(groups);
	dm_journal_drop_txn(jr, a.devpath);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test(test_not_a_journal),
		cmocka_unit_test_setup_teardown(test_sriov_round_trip, setup, teardown),
		cmocka_unit_test(test_sriov_lines),
		cmocka_unit_test_setup_teardown(test_untrusted_is_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
