/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * exec-private.h - the *.conf files of drivers.d as parsed (exec-parse.c),
 * for the drivers made from them (exec.c); only these two include it.
 */
#ifndef DM_EXEC_PRIVATE_H
#define DM_EXEC_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define EXEC_NAME_MAX 255

enum exec_hook {
	HOOK_PROBE,
	HOOK_REMOVE,
	HOOK_SUSPEND,
	HOOK_RESUME,
	N_HOOKS,
};

struct match_rule {
	char *key;
	char *glob;
	unsigned line;
};

/* One parsed file. */
struct exec_conf {
	char *path;
	unsigned driver_line; /* the first [Driver] header, 0 when none */
	bool bad_section; /* a "[...]" line was bad */
	char *name;
	unsigned name_line;
	char *bus; /* Bus=, or NULL for a class driver */
	unsigned bus_line;
	char *class; /* Class=, or NULL for a bus driver */
	unsigned class_line;
	char *kernel_driver; /* KernelDriver=, or NULL */
	unsigned kernel_driver_line;
	int priority;
	unsigned priority_line;
	int timeout_s;
	unsigned timeout_line;
	char *hooks[N_HOOKS]; /* command lines, checked; or NULL */
	unsigned hook_line[N_HOOKS];
	struct match_rule *match;
	size_t n_match;
};

/* The parsed files of one drivers.d, in name order. */
struct conf_list {
	struct exec_conf **v;
	size_t n;
};

/*
 * Parses every *.conf of @dir in name order into @ret (which the caller
 * frees with dm_exec_conf_list_done() in every case). Returns the number
 * of errors or -errno.
 */
int dm_exec_conf_load_dir(const char *dir, int default_timeout_s, FILE *errors,
			  struct conf_list *ret);
void dm_exec_conf_list_done(struct conf_list *l);

#endif
