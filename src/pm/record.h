/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * record.h - the transition record: the devices suspend hooks were called
 * for and that have not been resumed since, kept in a file (by default
 * /run/driverfsd/transition) so that a daemon killed in the middle of a
 * transition, or stopped with devices suspended, resumes them at its next
 * start.
 *
 * The file is a log of lines "+DEVPATH" (a suspend hook is about to run),
 * "=STATE DEVPATH" (what the hook's driver needs to resume the device: a
 * kernel proxy's saved power/control) and "-DEVPATH" (the device was
 * resumed); a devpath counts when its last "+"/"-" line is a "+", with the
 * state of the last "=" line after that "+". A "+" line is written before the hook runs, with one
 * write(2), which is what survives a SIGKILL; the file is fdatasync()ed
 * once a suspend walk is over (dm_pm_record_sync()), which is what
 * survives the machine's sleep. When the last device is resumed the file
 * is removed; a file that grows with many transitions is compacted.
 *
 * Thread-safe: hooks run on many threads. Only devices with a devpath (the
 * record names them by it, so that the next run finds them) and whose
 * driver has the hook are recorded; when nothing is recorded, a resume
 * costs one atomic load.
 */
#ifndef DM_PM_RECORD_H
#define DM_PM_RECORD_H

#include <stddef.h>

struct dm_pm_record;

/* A record at @path (an absolute path); its directory is created now (mode
 * 0755) when missing, so that an unusable place is told at start: -errno.
 * Nothing is written until a device is suspended. */
int dm_pm_record_new(const char *path, struct dm_pm_record **ret);
/* Closes the file, which stays when it lists devices. */
void dm_pm_record_free(struct dm_pm_record *rec);

/* Before @devpath's suspend hook runs: 0, or -errno when the line could
 * not be written (the hook must then not run). */
int dm_pm_record_suspending(struct dm_pm_record *rec, const char *devpath);
/* After @devpath's resume hook ran (whatever its result: a device whose
 * resume failed counts as on). Removes the file with the last device. */
void dm_pm_record_resumed(struct dm_pm_record *rec, const char *devpath);
/* From @devpath's suspend hook (dm_device_keep_pm_state()): a line
 * "=STATE DEVPATH" with what its resume needs, written before its driver
 * changes anything. 0 when written or when @devpath is not listed; -EINVAL
 * for a state that is not one word (dm_pm_state_is_valid()). */
int dm_pm_record_keep_state(struct dm_pm_record *rec, const char *devpath, const char *state);
/* The state a file left by an earlier run keeps for @devpath (read by
 * dm_pm_record_load(), forgotten by dm_pm_record_clear()) into @buf:
 * 0, or -ENOENT. */
int dm_pm_record_kept_state(struct dm_pm_record *rec, const char *devpath, char *buf,
			    size_t size);
/* After a suspend walk: the lines on stable storage; a file much longer
 * than what it lists is rewritten. 0 or -errno. */
int dm_pm_record_sync(struct dm_pm_record *rec);

/* The devpaths a file left by an earlier run lists (before this record
 * wrote anything), in the order of their "+" lines; NULL-terminated array
 * of strings, all freed with free() one by one and then the array; the
 * states kept for them stay in the record (dm_pm_record_kept_state()).
 * -ENOENT when there is no file. Lines that are neither "+/...", "-/..."
 * nor "=STATE /...", and a last line without its newline (cut short), are
 * skipped.
 *
 * The file is trusted as drivers.d files are (trust.h): one owned by
 * another user or writable by group or other, or below a directory
 * writable by group or other (but a root-owned sticky one), is -EPERM and
 * not read: the states it keeps are written into devices (pci-pm's saved
 * config headers). Not a regular file: -EINVAL. On an error but -ENOENT,
 * @why (@size bytes; may be NULL) says what, without the path. */
int dm_pm_record_load(struct dm_pm_record *rec, char ***ret, size_t *ret_n, char *why,
		      size_t size);
/* Forgets every device and kept state, and removes the file. */
int dm_pm_record_clear(struct dm_pm_record *rec);
/* Forgets every device but the @n devpaths of @keep (those whose recovery
 * failed), which stay listed with the state an earlier run kept for them,
 * so that a later start tries them again; removes the file when none is
 * kept. 0 or -errno (the file may then list fewer). Takes the record's
 * lock. */
int dm_pm_record_clear_except(struct dm_pm_record *rec, const char *const *keep, size_t n);

#endif
