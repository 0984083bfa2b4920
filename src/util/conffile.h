/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conffile.h - the strict INI reader both configuration formats use
 * (driverfsd.conf and drivers.d/ *.conf), on inih.
 *
 * Syntax: "[Section]" and "Key=Value" lines; lines starting with '#' or ';'
 * are comments, and so is the rest of a line from a '#' or ';' that follows
 * a blank; leading and trailing blanks are dropped; a UTF-8 byte order mark
 * is skipped. Everything else is an error. Every error is reported, each
 * as "FILE:LINE: message" ("FILE: message" for one about the whole file),
 * and the parse goes on, so one run shows them all. Unknown sections are
 * errors (their keys are not reported again); keys are the caller's to
 * check. Bounds: a file of at most 64 KiB, a key and value of at most 197
 * characters (inih's line buffer).
 */
#ifndef DM_CONFFILE_H
#define DM_CONFFILE_H

#include <stdbool.h>
#include <stdio.h>

#define DM_CONFFILE_MAX_SIZE (64 * 1024)

struct dm_conffile; /* one parse under way */

struct dm_conffile_ops {
	const char *const *sections; /* the known section names, NULL-terminated */
	/* Each section header (may be NULL): @section is NULL for a bad one
	 * (reported already), which was most likely meant to be a known one. */
	void (*section)(struct dm_conffile *cf, const char *section, void *data);
	/* A Key=Value line in a known section; outside any section, @section
	 * is "" (the reader reports that itself and does not call this). */
	void (*key)(struct dm_conffile *cf, const char *section, const char *key,
		    const char *value, void *data);
};

/*
 * Parses the file at @path with @ops. Returns the number of errors written
 * to @errors (may be NULL) -- a file that cannot be opened, or is not a
 * regular file, counts as one and leaves *ret_read false (@ret_read may be
 * NULL) -- or -ENOENT (reported nowhere) when @path does not exist, or
 * -ENOMEM.
 */
int dm_conffile_parse(const char *path, const struct dm_conffile_ops *ops, void *data,
		      FILE *errors, bool *ret_read);

/* For the callbacks: reports an error at the line being parsed. */
void dm_conffile_error(struct dm_conffile *cf, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Ends the parse with @err (-ENOMEM): nothing more is reported. */
void dm_conffile_fail(struct dm_conffile *cf, int err);
unsigned dm_conffile_line(const struct dm_conffile *cf);
/* Replaces *@field by a copy of @value (out of memory: ends the parse). */
void dm_conffile_set_string(struct dm_conffile *cf, char **field, const char *value);
/* Reports "@key= given twice" when @first_line is not 0; returns whether it was. */
bool dm_conffile_duplicate(struct dm_conffile *cf, const char *key, unsigned first_line);

/* Writes "@path:@line: message\n" (@line 0: "@path: message\n") to @errors
 * (may be NULL): for errors found once a file was parsed. */
void dm_conf_error(FILE *errors, const char *path, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Value parsers: whether @s is entirely valid; *ret set only then. */
bool dm_conf_parse_int(const char *s, long min, long max, int *ret);
/* yes/no, true/false, on/off, 1/0 */
bool dm_conf_parse_bool(const char *s, bool *ret);

#endif
