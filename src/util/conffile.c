/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conffile.c - the strict INI reader of both configuration formats.
 *
 * Parsing is two-staged. Our line reader hands inih one line at a time, so
 * it knows each line's number (this inih calls handlers without one),
 * reports syntax errors itself and passes inih only well-formed lines:
 * blank, "[Section]" or "Key=Value", leading whitespace and comments
 * removed. inih's handler then hands the caller each key.
 */
#include "util/conffile.h"
#include "util/trust.h"

#include <ini.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A section name our reader hands inih for a bad "[...]" line: it is
 * reported once there, and its keys are then ignored, not reported again. */
#define SECTION_INVALID "!invalid"

struct dm_conffile {
	const char *path;
	const struct dm_conffile_ops *ops;
	void *data;
	FILE *file;
	FILE *errors;
	char *line_buf; /* getline()'s */
	size_t line_size;
	size_t bytes; /* read so far, against DM_CONFFILE_MAX_SIZE */
	unsigned line;
	unsigned n_errors;
	int fatal; /* -errno that ends the parse (out of memory, read error) */
};

static void conf_verror(FILE *errors, const char *path, unsigned line, const char *fmt,
			va_list ap) __attribute__((format(printf, 4, 0)));
static void conf_verror(FILE *errors, const char *path, unsigned line, const char *fmt,
			va_list ap)
{
	if (!errors)
		return;
	if (line)
		fprintf(errors, "%s:%u: ", path, line);
	else
		fprintf(errors, "%s: ", path); /* about the file, not a line */
	vfprintf(errors, fmt, ap);
	fputc('\n', errors);
}

void dm_conf_error(FILE *errors, const char *path, unsigned line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	conf_verror(errors, path, line, fmt, ap);
	va_end(ap);
}

void dm_conffile_error(struct dm_conffile *cf, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	conf_verror(cf->errors, cf->path, cf->line, fmt, ap);
	va_end(ap);
	cf->n_errors++;
}

void dm_conffile_fail(struct dm_conffile *cf, int err)
{
	if (!cf->fatal)
		cf->fatal = err;
}

unsigned dm_conffile_line(const struct dm_conffile *cf)
{
	return cf->line;
}

void dm_conffile_set_string(struct dm_conffile *cf, char **field, const char *value)
{
	char *v = strdup(value);
	if (!v) {
		dm_conffile_fail(cf, -ENOMEM);
		return;
	}
	free(*field);
	*field = v;
}

bool dm_conffile_duplicate(struct dm_conffile *cf, const char *key, unsigned first_line)
{
	if (!first_line)
		return false;
	dm_conffile_error(cf, "%s= given twice (first on line %u)", key, first_line);
	return true;
}

/* ---- values ---- */

bool dm_conf_parse_int(const char *s, long min, long max, int *ret)
{
	char *end;
	if (!*s || isspace((unsigned char)*s))
		return false;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*ret = (int)v;
	return true;
}

bool dm_conf_parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0 || strcasecmp(s, no[i]) == 0) {
			*ret = strcasecmp(s, yes[i]) == 0;
			return true;
		}
	}
	return false;
}

/* ---- the line reader ---- */

static char *skip_blank(char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\f' || *s == '\v')
		s++;
	return s;
}

static void trim_end(char *s)
{
	size_t n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
}

/* Cuts an inline comment: '#' or ';' after a blank, as inih does for ';'
 * (it is the same rule for both, so the example of docs/design.md §7 parses). */
static void cut_comment(char *s)
{
	bool after_blank = false;
	for (char *c = s; *c; c++) {
		if (after_blank && (*c == '#' || *c == ';')) {
			*c = '\0';
			break;
		}
		after_blank = *c == ' ' || *c == '\t';
	}
}

/* Printable, no blanks, and none of the characters inih would take for a
 * separator (':') or a comment (';' after a blank): no key of ours and no
 * attribute name has them. */
static bool key_is_valid(const char *s)
{
	for (const char *c = s; *c; c++)
		if (!isgraph((unsigned char)*c) || strchr(":;#[]", *c))
			return false;
	return true;
}

static bool section_is_known(const struct dm_conffile *cf, const char *name)
{
	for (const char *const *s = cf->ops->sections; *s; s++)
		if (strcmp(*s, name) == 0)
			return true;
	return false;
}

/*
 * Normalises one raw line into @out (@size bytes, inih's buffer), or
 * reports it and leaves @out blank. @s is the line without its newline.
 */
static void reader_line(struct dm_conffile *cf, char *s, char *out, size_t size)
{
	out[0] = '\0';
	s = skip_blank(s);
	if (!*s || *s == '#' || *s == ';')
		return;

	if (*s == '[') {
		char *close = strchr(s, ']');
		const char *name = SECTION_INVALID;
		if (!close) {
			dm_conffile_error(cf, "expected ']' to end the section header");
		} else {
			*close = '\0';
			char *rest = skip_blank(close + 1);
			if (*rest && *rest != '#' && *rest != ';')
				dm_conffile_error(cf, "unexpected text after [%s]", s + 1);
			else if (!section_is_known(cf, s + 1))
				dm_conffile_error(cf, "unknown section [%s]", s + 1);
			else
				name = s + 1;
		}
		if (cf->ops->section)
			cf->ops->section(cf, name == s + 1 ? name : NULL, cf->data);
		snprintf(out, size, "[%s]\n", name);
		return;
	}

	char *eq = strchr(s, '=');
	if (!eq) {
		dm_conffile_error(cf, "expected Key=Value, a [Section] or a comment");
		return;
	}
	*eq = '\0';
	char *value = eq + 1;
	/* the comment rule starts at the value, as if after the '=' */
	cut_comment(value);
	value = skip_blank(value);
	trim_end(value);
	trim_end(s);
	if (!*s) {
		dm_conffile_error(cf, "expected a key before '='");
		return;
	}
	if (!key_is_valid(s)) {
		dm_conffile_error(cf, "bad key '%s'", s);
		return;
	}
	size_t klen = strlen(s), vlen = strlen(value);
	if (klen + 1 + vlen + 2 > size) {
		dm_conffile_error(cf, "line too long (a key and value of at most %zu characters)",
				  size - 3);
		return;
	}
	memcpy(out, s, klen);
	out[klen] = '=';
	memcpy(out + klen + 1, value, vlen);
	memcpy(out + klen + 1 + vlen, "\n", 2);
}

/* The ini_reader: one line per call, so cf->line is the line inih handles. */
static char *conf_reader(char *str, int num, void *stream)
{
	struct dm_conffile *cf = stream;
	if (cf->fatal || num < 4)
		return NULL;
	ssize_t n = getline(&cf->line_buf, &cf->line_size, cf->file);
	if (n < 0) {
		if (ferror(cf->file)) {
			dm_conffile_error(cf, "read error");
			cf->fatal = -EIO;
		}
		return NULL;
	}
	cf->line++;
	cf->bytes += (size_t)n;
	if (cf->bytes > DM_CONFFILE_MAX_SIZE) {
		/* the file grew after we checked its size */
		dm_conffile_error(cf, "file larger than %d bytes", DM_CONFFILE_MAX_SIZE);
		return NULL;
	}
	char *s = cf->line_buf;
	if (n > 0 && s[n - 1] == '\n')
		s[--n] = '\0';
	if (memchr(s, '\0', (size_t)n)) {
		dm_conffile_error(cf, "NUL byte in line");
		str[0] = '\0';
		return str;
	}
	if (cf->line == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0)
		s += 3; /* a UTF-8 byte order mark */
	reader_line(cf, s, str, (size_t)num);
	return str;
}

static int conf_handler(void *user, const char *section, const char *key, const char *value)
{
	struct dm_conffile *cf = user;
	if (cf->fatal)
		return 0;
	if (!*section)
		dm_conffile_error(cf, "%s= outside any section", key);
	else if (strcmp(section, SECTION_INVALID) != 0) /* reported at its header */
		cf->ops->key(cf, section, key, value, cf->data);
	return !cf->fatal;
}

/* ---- files ---- */

/* Opens @path as a stream; 0, 1 for an error reported to @errors, -ENOENT
 * or -ENOMEM. */
static int conf_open(const char *path, FILE *errors, FILE **ret)
{
	struct stat st;
	char msg[PATH_MAX + 128];
	/* O_NONBLOCK: a FIFO named *.conf must not hang the daemon. What
	 * anyone but root can change would let them run programs as root. */
	int fd = dm_trust_open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK, msg, sizeof(msg));
	if (fd < 0) {
		if (fd == -ENOMEM || fd == -ENOENT)
			return fd;
		if (fd == -EPERM)
			dm_conf_error(errors, path, 0, "refused, anyone but root could change it: %s",
				      msg);
		else
			dm_conf_error(errors, path, 0, "%s", msg);
		return 1;
	}
	if (fstat(fd, &st) < 0) {
		dm_conf_error(errors, path, 0, "cannot stat: %s", strerror(errno));
		close(fd);
		return 1;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > DM_CONFFILE_MAX_SIZE) {
		if (!S_ISREG(st.st_mode))
			dm_conf_error(errors, path, 0, "not a regular file");
		else
			dm_conf_error(errors, path, 0, "larger than %d bytes", DM_CONFFILE_MAX_SIZE);
		close(fd);
		return 1;
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	*ret = f;
	return 0;
}

int dm_conffile_parse(const char *path, const struct dm_conffile_ops *ops, void *data,
		      FILE *errors, bool *ret_read)
{
	FILE *f = NULL;
	if (ret_read)
		*ret_read = false;
	int r = conf_open(path, errors, &f);
	if (r != 0)
		return r;
	if (ret_read)
		*ret_read = true;
	struct dm_conffile cf = {
		.path = path, .ops = ops, .data = data, .file = f, .errors = errors,
	};
	/* Every error is ours and already reported; inih's return value would
	 * only repeat the first line of them. */
	r = ini_parse_stream(conf_reader, &cf, conf_handler, &cf);
	free(cf.line_buf);
	fclose(f);
	if (cf.fatal == -ENOMEM || r == -2)
		return -ENOMEM;
	return cf.n_errors > 0x7fffffff ? 0x7fffffff : (int)cf.n_errors;
}
