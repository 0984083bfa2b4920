/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * journal.h - the binding journal (docs/design.md §7.5, [Binding]
 * BindingJournal=, --binding-journal): what each binding transaction found
 * before its first write, and the step it reached, kept durably so that a
 * daemon killed in the middle leaves enough for the next one to put the
 * device back (or finish it, past its verify step).
 *
 * The file holds every open entry, one line each, and is written whole at
 * each change (dm_replace_file(): a file of a random name beside it,
 * synced, renamed over it, the directory synced), removed when no entry is
 * left. Its first line names the boot it was written in: a journal of
 * another boot (the kernel's bindings started afresh) is not acted on.
 * It is read only when trusted as drivers.d files are (dm_trust_open()):
 * what it says is written to sysfs.
 *
 * Lines (fields separated by one space; a field's bytes outside
 * [A-Za-z0-9._:/+@-] written %XX, an empty field a lone %):
 *   driverfsd-binding-journal 1 BOOT_ID
 *   txn DEVPATH BUS NAME OLD_DRIVER HAS_OVERRIDE OLD_OVERRIDE ACTION DRIVER
 *       SET_OVERRIDE STEP PENDING
 *   group DEVPATH DRIVER MEMBER_DEVPATH OLD_DRIVER HAD_OVERRIDE [...]
 *   sriov DEVPATH NAME OLD_COUNT AUTOPROBE NUMVFS DRIVER STEP PENDING
 *       [VF_NAME VF_DRIVER VF_OVERRIDE ...]
 * (an sriov line, an SR-IOV transaction's, is of a later daemon: a journal
 * without one reads as before; an earlier daemon refuses a journal with
 * one as not one, and leaves it.)
 * A journal is an object (struct dm_journal, its file and entries); the
 * daemon's is its binder's (binding.h). Thread-safe.
 */
#ifndef DM_JOURNAL_H
#define DM_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>

#define DM_BIND_JOURNAL_FILE "/run/driverfsd/binding-journal"

struct dm_journal;

/* A transaction: what it found and how far it went. */
struct dm_journal_txn {
	char devpath[4096];
	char bus[64], name[256];
	char old_driver[256];
	bool has_override; /* the bus has driver_override */
	char old_override[256];
	int action; /* enum dm_bind_action */
	char driver[64]; /* DM_BIND_TO's */
	bool set_override; /* its plan writes driver_override */
	int step; /* enum dm_bind_step: the last one begun */
	bool pending; /* a step's write did not return in time */
};

#define DM_JOURNAL_MEMBERS_MAX 32

/* A group move (vfio-pci, --group): the device, the driver, and each
 * companion moved before it with its binding as it was. */
struct dm_journal_group {
	char devpath[4096];
	char driver[64];
	size_t n;
	struct {
		char devpath[4096];
		char old_driver[64];
		bool had_override;
	} members[DM_JOURNAL_MEMBERS_MAX];
};

#define DM_JOURNAL_VFS_MAX 256

/* An SR-IOV transaction's steps, as its entry records the last begun. */
enum dm_sriov_step {
	DM_SRIOV_STEP_CHECK, /* recorded, nothing written yet */
	DM_SRIOV_STEP_AUTOPROBE, /* sriov_drivers_autoprobe <- 0 */
	DM_SRIOV_STEP_DISABLE, /* sriov_numvfs <- 0 */
	DM_SRIOV_STEP_ENABLE, /* sriov_numvfs <- N */
	DM_SRIOV_STEP_BIND, /* the VFs bound to the driver */
	DM_SRIOV_STEP_VERIFY, /* all done but sriov_drivers_autoprobe restored */
};
#define DM_JOURNAL_SRIOV_STEP_MAX DM_SRIOV_STEP_VERIFY

/* An SR-IOV transaction (sriov.c): the PF as it was, what was asked, and
 * the step it reached. */
struct dm_journal_sriov {
	char devpath[4096];
	char name[64];
	long old_count; /* sriov_numvfs before */
	int autoprobe; /* sriov_drivers_autoprobe before; -1: no such file */
	long numvfs; /* asked for */
	char driver[64]; /* the VFs' driver asked for; "": the kernel's own */
	int step; /* enum dm_sriov_step: the last one begun */
	bool pending; /* a step's write did not return in time */
	size_t n; /* the VFs before, each with its binding */
	struct {
		char name[64], driver[64], override[64];
	} vfs[DM_JOURNAL_VFS_MAX];
};

/* A journal kept in the file @path (NULL: DM_BIND_JOURNAL_FILE; copied),
 * no entry in it yet (dm_journal_load() takes a killed daemon's). The
 * binder owns the daemon's (binding.h). 0 or -ENOMEM. */
int dm_journal_new(const char *path, struct dm_journal **ret);
/* Frees @j (its file stays as it is); NULL is nothing. */
void dm_journal_free(struct dm_journal *j);
const char *dm_journal_path(const struct dm_journal *j);

/* Records @t (replacing the entry of its device), durably. 0 or -errno,
 * with why in @why. */
int dm_journal_put_txn(struct dm_journal *j, const struct dm_journal_txn *t, char *why,
		       size_t size);
int dm_journal_put_group(struct dm_journal *j, const struct dm_journal_group *g, char *why,
			 size_t size);
int dm_journal_put_sriov(struct dm_journal *j, const struct dm_journal_sriov *s, char *why,
			 size_t size);
/* Drops the transaction of @devpath, or the group move of @devpath, or
 * the SR-IOV transaction of the PF @devpath. */
void dm_journal_drop_txn(struct dm_journal *j, const char *devpath);
void dm_journal_drop_group(struct dm_journal *j, const char *devpath);
void dm_journal_drop_sriov(struct dm_journal *j, const char *devpath);

/* The SR-IOV transactions the journal holds now (those dm_journal_load()
 * kept of a killed daemon's, at start) into *ret (malloc()ed, to free()):
 * their number, or -errno. */
int dm_journal_sriov_entries(struct dm_journal *j, struct dm_journal_sriov **ret);

/*
 * Reads the file a killed daemon left, once trusted: its transactions and
 * group moves into *ret_txns, *ret_groups (malloc()ed arrays, to free()),
 * which stay in the journal (on disk too) until dropped one by one; its
 * SR-IOV transactions stay too, for dm_journal_sriov_entries().
 * 0 (none, also when there is no file), or -errno with why in @why:
 * -EPERM untrusted, -ESTALE written in another boot, -EINVAL not a
 * journal. Nothing is kept of a file refused.
 */
int dm_journal_load(struct dm_journal *j, struct dm_journal_txn **ret_txns, size_t *ret_n_txns,
		    struct dm_journal_group **ret_groups, size_t *ret_n_groups, char *why,
		    size_t size);

/* The parsing alone, of @text (modified), for load and the unit tests;
 * @boot_id: the boot it must name (NULL: any). Its SR-IOV transactions
 * into *ret_sriovs (malloc()ed) when @ret_sriovs is not NULL (checked
 * either way). */
int dm_journal_parse(char *text, const char *boot_id, struct dm_journal_txn **ret_txns,
		     size_t *ret_n_txns, struct dm_journal_group **ret_groups,
		     size_t *ret_n_groups, struct dm_journal_sriov **ret_sriovs,
		     size_t *ret_n_sriovs);

#endif
