/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * trust.h - whether a file the daemon reads or runs as root (driverfsd.conf,
 * drivers.d/ files, the transition record, hook and helper programs and
 * their #! interpreters) can be changed by anyone but root.
 */
#ifndef DM_TRUST_H
#define DM_TRUST_H

#include <stddef.h>

/*
 * Opens @path (flags: O_RDONLY or O_PATH, with any of O_NONBLOCK, O_NOCTTY;
 * O_CLOEXEC and O_NOFOLLOW are always added) once it and every directory
 * above it are owned by root and not writable by group or other. A
 * directory that is root-owned and sticky (/tmp) may be writable by all,
 * as sudo allows: nobody else can rename or remove what root put there.
 * The file itself has no such exemption.
 *
 * Symlinks: @path is resolved first (realpath()) and the real file and
 * its real directories are what is checked and opened, each directory
 * with openat(O_PATH|O_DIRECTORY|O_NOFOLLOW) from the one checked before
 * it and the file with O_NOFOLLOW from the last, and each is checked with
 * fstat() on that descriptor, so what is checked is what is opened. A
 * symlink is thus trusted exactly as far as its target.
 *
 * Returns the descriptor; or -EPERM with "the file|directory D is owned by
 * uid N, not root (mode 0NNN)" or "... is writable by group|other (owner
 * uid N, mode 0NNN)" in @msg; or another -errno (-ENOENT, ...) with "what:
 * strerror" in @msg. @msg does not name @path: the caller prefixes it.
 * Thread-safe.
 */
int dm_trust_open(const char *path, int flags, char *msg, size_t size);

/* dm_trust_open() for a check only: 0, or its error (and @msg). */
int dm_trust_check(const char *path, char *msg, size_t size);

/* How deep dm_trust_check_program() follows interpreters that are scripts
 * themselves; the kernel gives up sooner (ELOOP after 5 rewrites). */
#define DM_TRUST_INTERPRETER_DEPTH 8

/*
 * dm_trust_check() for a program root is to run (a hook, the hotplug
 * helper), and for what the kernel runs in its place: when the file starts
 * with "#!", its interpreter too. The first line is read through the
 * trusted descriptor, at most 256 bytes as the kernel reads it
 * (BINPRM_BUF_SIZE), and parsed by the kernel's rules (fs/binfmt_script.c):
 * the interpreter is the first word after "#!" and any spaces or tabs,
 * ended by a space, tab, NUL or newline. An interpreter that is a script
 * itself is followed in turn, up to DM_TRUST_INTERPRETER_DEPTH levels.
 *
 * Returns 0; or -EPERM with why in @msg: what dm_trust_open() says of the
 * file; "the #! interpreter I of F: ..." with what it says of I; "the #!
 * interpreter I of F is not an absolute path" (it would be looked up from
 * the working directory); "cannot read F for its #! line: ..." (a program
 * root cannot read is refused, not left unchecked); or interpreters nested
 * deeper than the bound. Or another -errno as dm_trust_check() (-ENOENT:
 * the program or an interpreter is missing, which exec will report;
 * -ENOEXEC: a #! line cut by the 256 bytes, which the kernel refuses too).
 * Thread-safe.
 */
int dm_trust_check_program(const char *path, char *msg, size_t size);

#endif
