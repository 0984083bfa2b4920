/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * background.h - background mode: the daemon forks before it starts a thread, and the
 * command returns only once the child serves its mount (or with its error).
 */
#ifndef DM_BACKGROUND_H
#define DM_BACKGROUND_H

/* Forks. In the parent, never returns: it waits until the child reports
 * (dm_background_ready()) and exits 0, or exits with the child's failure
 * when the child ends first. In the child, which runs in a session of its
 * own, returns the descriptor to report on (close-on-exec), or -errno when
 * the fork could not be made (no child then: the caller ends). Must be
 * called before any thread is started: only the calling thread goes on in
 * the child. */
int dm_background_start(void);

/* In the child: tells the waiting parent that the tree is mounted and
 * served, then leaves the terminal: the working directory becomes "/",
 * standard input, output and error /dev/null. Closes @fd. */
void dm_background_ready(int fd);

#endif
