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
 * Thread-safe.
 */
#ifndef DM_JOURNAL_H
#define DM_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>

#define DM_BIND_JOURNAL_FILE "/run/driverfsd/binding-journal"

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

/* The file used from now on (NULL: DM_BIND_JOURNAL_FILE). Copied. */
int dm_journal_set_path(const char *path);
const char *dm_journal_path(void);

/* Records @t (replacing the entry of its device), durably. 0 or -errno,
 * with why in @why. */
int dm_journal_put_txn(const struct dm_journal_txn *t, char *why, size_t size);
int dm_journal_put_group(const struct dm_journal_group *g, char *why, size_t size);
/* Drops the transaction of @devpath, or the group move of @devpath. */
void dm_journal_drop_txn(const char *devpath);
void dm_journal_drop_group(const char *devpath);

/*
 * Reads the file a killed daemon left, once trusted: its transactions and
 * group moves into *ret_txns, *ret_groups (malloc()ed arrays, to free()),
 * which stay in the journal (on disk too) until dropped one by one.
 * 0 (none, also when there is no file), or -errno with why in @why:
 * -EPERM untrusted, -ESTALE written in another boot, -EINVAL not a
 * journal. Nothing is kept of a file refused.
 */
int dm_journal_load(struct dm_journal_txn **ret_txns, size_t *ret_n_txns,
		    struct dm_journal_group **ret_groups, size_t *ret_n_groups, char *why,
		    size_t size);

/* The parsing alone, of @text (modified), for load and the unit tests;
 * @boot_id: the boot it must name (NULL: any). */
int dm_journal_parse(char *text, const char *boot_id, struct dm_journal_txn **ret_txns,
		     size_t *ret_n_txns, struct dm_journal_group **ret_groups,
		     size_t *ret_n_groups);

#endif
