/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * exec.c - the *.conf files of drivers.d: user drivers whose hooks are
 * programs.
 *
 * Parsing is two-staged. Our line reader hands inih one line at a time, so
 * it knows each line's number (this inih calls handlers without one),
 * reports syntax errors itself and passes inih only well-formed lines:
 * blank, "[Section]" or "Key=Value", leading whitespace and comments
 * removed. inih's handler then checks sections and keys. A whole directory
 * is checked before anything is registered.
 */
#include "drivers/exec.h"

#include "drivers/hookenv.h"
#include "drivers/runner.h"
#include "log.h"

#include <ini.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bounds on what an administrator's directory can make us hold. */
#define EXEC_MAX_FILES 1024
#define EXEC_MAX_FILE_SIZE (64 * 1024)
#define EXEC_MAX_MATCH 64
#define EXEC_NAME_MAX 255

#define EXEC_DEFAULT_PRIORITY 100
#define EXEC_PRIORITY_MIN (-1000)
#define EXEC_PRIORITY_MAX 1000
#define EXEC_DEFAULT_TIMEOUT_S 5
#define EXEC_TIMEOUT_MAX_S 3600


/* A section name our reader hands inih for a bad "[...]" line: it is
 * reported once there, and its keys are then ignored, not reported again. */
#define SECTION_INVALID "!invalid"

enum exec_hook {
	HOOK_PROBE,
	HOOK_REMOVE,
	HOOK_SUSPEND,
	HOOK_RESUME,
	N_HOOKS,
};

static const char *const hook_keys[N_HOOKS] = { "Probe", "Remove", "Suspend", "Resume" };
static const char *const hook_actions[N_HOOKS] = { "probe", "remove", "suspend", "resume" };

struct match_rule {
	char *key;
	char *glob;
	unsigned line;
};

/* One parsed file. */
struct exec_conf {
	char *path;
	unsigned driver_line; /* the first [Driver] header, 0 when none */
	char *name;
	unsigned name_line;
	char *bus;
	unsigned bus_line;
	int priority;
	unsigned priority_line;
	int timeout_s;
	unsigned timeout_line;
	char **hooks[N_HOOKS]; /* NULL-terminated argv, or NULL */
	unsigned hook_line[N_HOOKS];
	struct match_rule *match;
	size_t n_match;
};

struct parser {
	struct exec_conf *conf;
	FILE *file;
	FILE *errors;
	char *line_buf; /* getline()'s */
	size_t line_size;
	size_t bytes; /* read so far, against EXEC_MAX_FILE_SIZE */
	unsigned line;
	unsigned n_errors;
	bool bad_section; /* a "[...]" line was reported */
	int fatal; /* -errno that ends the parse (out of memory, read error) */
};

static void exec_conf_free(struct exec_conf *c)
{
	if (!c)
		return;
	free(c->path);
	free(c->name);
	free(c->bus);
	for (int h = 0; h < N_HOOKS; h++)
		dm_strv_free(c->hooks[h]);
	for (size_t i = 0; i < c->n_match; i++) {
		free(c->match[i].key);
		free(c->match[i].glob);
	}
	free(c->match);
	free(c);
}

static void conf_error(FILE *errors, const char *path, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void conf_error(FILE *errors, const char *path, unsigned line, const char *fmt, ...)
{
	va_list ap;
	if (!errors)
		return;
	if (line)
		fprintf(errors, "%s:%u: ", path, line);
	else
		fprintf(errors, "%s: ", path); /* about the file, not a line */
	va_start(ap, fmt);
	vfprintf(errors, fmt, ap);
	va_end(ap);
	fputc('\n', errors);
}

#define parser_error(p, ...)                                                  \
	do {                                                                  \
		conf_error((p)->errors, (p)->conf->path, (p)->line, __VA_ARGS__); \
		(p)->n_errors++;                                              \
	} while (0)

/* ---- values ---- */

/* A name that can be a directory of the mount: 1..255 bytes, no '/',
 * neither "." nor "..", no control characters. */
static bool name_is_valid(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > EXEC_NAME_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (const char *c = s; *c; c++)
		if (*c == '/' || iscntrl((unsigned char)*c))
			return false;
	return true;
}

/* A whole decimal integer in [min, max]. */
static bool parse_int(const char *s, long min, long max, int *ret)
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
 * (it is the same rule for both, so the DESIGN.md example parses). */
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

static bool section_is_known(const char *name)
{
	return strcmp(name, "Driver") == 0 || strcmp(name, "Match") == 0 ||
	       strcmp(name, "Hooks") == 0;
}

/*
 * Normalises one raw line into @out (@size bytes, inih's buffer), or
 * reports it and leaves @out blank. @s is the line without its newline.
 */
static void reader_line(struct parser *p, char *s, char *out, size_t size)
{
	out[0] = '\0';
	s = skip_blank(s);
	if (!*s || *s == '#' || *s == ';')
		return;

	if (*s == '[') {
		char *close = strchr(s, ']');
		const char *name = SECTION_INVALID;
		if (!close) {
			parser_error(p, "expected ']' to end the section header");
			p->bad_section = true;
		} else {
			*close = '\0';
			char *rest = skip_blank(close + 1);
			if (*rest && *rest != '#' && *rest != ';')
				parser_error(p, "unexpected text after [%s]", s + 1);
			else if (!section_is_known(s + 1))
				parser_error(p, "unknown section [%s]", s + 1);
			else
				name = s + 1;
			p->bad_section |= name != s + 1;
		}
		if (strcmp(name, "Driver") == 0 && !p->conf->driver_line)
			p->conf->driver_line = p->line;
		snprintf(out, size, "[%s]\n", name);
		return;
	}

	char *eq = strchr(s, '=');
	if (!eq) {
		parser_error(p, "expected Key=Value, a [Section] or a comment");
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
		parser_error(p, "expected a key before '='");
		return;
	}
	if (!key_is_valid(s)) {
		parser_error(p, "bad key '%s'", s);
		return;
	}
	if (strlen(s) + 1 + strlen(value) + 2 > size) {
		parser_error(p, "line too long (a key and value of at most %zu characters)",
			     size - 3);
		return;
	}
	/* the length was checked above */
	size_t klen = strlen(s), vlen = strlen(value);
	memcpy(out, s, klen);
	out[klen] = '=';
	memcpy(out + klen + 1, value, vlen);
	memcpy(out + klen + 1 + vlen, "\n", 2);
}

/* The ini_reader: one line per call, so p->line is the line inih handles. */
static char *conf_reader(char *str, int num, void *stream)
{
	struct parser *p = stream;
	if (p->fatal || num < 4)
		return NULL;
	ssize_t n = getline(&p->line_buf, &p->line_size, p->file);
	if (n < 0) {
		if (ferror(p->file))
			p->fatal = -EIO;
		return NULL;
	}
	p->line++;
	p->bytes += (size_t)n;
	if (p->bytes > EXEC_MAX_FILE_SIZE) {
		/* the file grew after we checked its size */
		parser_error(p, "file larger than %d bytes", EXEC_MAX_FILE_SIZE);
		return NULL;
	}
	char *s = p->line_buf;
	if (n > 0 && s[n - 1] == '\n')
		s[--n] = '\0';
	if (memchr(s, '\0', (size_t)n)) {
		parser_error(p, "NUL byte in line");
		str[0] = '\0';
		return str;
	}
	if (p->line == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0)
		s += 3; /* a UTF-8 byte order mark */
	reader_line(p, s, str, (size_t)num);
	return str;
}

/* ---- the ini handler ---- */

static int conf_set_string(struct parser *p, char **field, const char *value)
{
	char *v = strdup(value);
	if (!v) {
		p->fatal = -ENOMEM;
		return 0;
	}
	free(*field);
	*field = v;
	return 1;
}

/* Whether @key was given before in this section; reports it if so. */
static bool duplicate_key(struct parser *p, const char *key, unsigned first_line)
{
	if (!first_line)
		return false;
	parser_error(p, "%s= given twice (first on line %u)", key, first_line);
	return true;
}

static int handle_driver(struct parser *p, const char *key, const char *value)
{
	struct exec_conf *c = p->conf;
	if (strcmp(key, "Name") == 0) {
		if (duplicate_key(p, key, c->name_line))
			return 1;
		c->name_line = p->line;
		if (!name_is_valid(value)) {
			parser_error(p, "bad Name '%s' (1-%d characters, no '/')", value,
				     EXEC_NAME_MAX);
			return 1;
		}
		return conf_set_string(p, &c->name, value);
	}
	if (strcmp(key, "Bus") == 0) {
		if (duplicate_key(p, key, c->bus_line))
			return 1;
		c->bus_line = p->line;
		if (!name_is_valid(value)) {
			parser_error(p, "bad Bus '%s' (1-%d characters, no '/')", value,
				     EXEC_NAME_MAX);
			return 1;
		}
		return conf_set_string(p, &c->bus, value);
	}
	if (strcmp(key, "Priority") == 0) {
		if (duplicate_key(p, key, c->priority_line))
			return 1;
		c->priority_line = p->line;
		if (!parse_int(value, EXEC_PRIORITY_MIN, EXEC_PRIORITY_MAX, &c->priority))
			parser_error(p, "bad Priority '%s' (an integer from %d to %d)", value,
				     EXEC_PRIORITY_MIN, EXEC_PRIORITY_MAX);
		return 1;
	}
	parser_error(p, "unknown key %s in [Driver]", key);
	return 1;
}

static int handle_hooks(struct parser *p, const char *key, const char *value)
{
	struct exec_conf *c = p->conf;
	if (strcmp(key, "Timeout") == 0) {
		if (duplicate_key(p, key, c->timeout_line))
			return 1;
		c->timeout_line = p->line;
		if (!parse_int(value, 1, EXEC_TIMEOUT_MAX_S, &c->timeout_s))
			parser_error(p, "bad Timeout '%s' (seconds, from 1 to %d)", value,
				     EXEC_TIMEOUT_MAX_S);
		return 1;
	}
	for (int h = 0; h < N_HOOKS; h++) {
		if (strcmp(key, hook_keys[h]) != 0)
			continue;
		if (duplicate_key(p, key, c->hook_line[h]))
			return 1;
		c->hook_line[h] = p->line;
		char **argv;
		size_t n;
		int r = dm_split_command(value, &argv, &n);
		if (r == -ENOMEM) {
			p->fatal = r;
			return 0;
		}
		if (r == -EBADMSG) {
			parser_error(p, "%s=: unbalanced quotes", key);
			return 1;
		}
		if (n == 0)
			parser_error(p, "%s=: no command", key);
		else if (argv[0][0] != '/')
			parser_error(p, "%s=: the program must be an absolute path, not '%s'", key,
				     argv[0]);
		if (n == 0 || argv[0][0] != '/') {
			dm_strv_free(argv);
			return 1;
		}
		c->hooks[h] = argv;
		return 1;
	}
	parser_error(p, "unknown key %s in [Hooks]", key);
	return 1;
}

static int handle_match(struct parser *p, const char *key, const char *value)
{
	struct exec_conf *c = p->conf;
	if (!name_is_valid(key)) {
		parser_error(p, "bad attribute name '%s' in [Match]", key);
		return 1;
	}
	for (size_t i = 0; i < c->n_match; i++)
		if (strcmp(c->match[i].key, key) == 0) {
			duplicate_key(p, key, c->match[i].line);
			return 1;
		}
	if (c->n_match == EXEC_MAX_MATCH) {
		parser_error(p, "more than %d [Match] rules", EXEC_MAX_MATCH);
		return 1;
	}
	struct match_rule *m = realloc(c->match, (c->n_match + 1) * sizeof(*m));
	if (!m) {
		p->fatal = -ENOMEM;
		return 0;
	}
	c->match = m;
	m = &c->match[c->n_match];
	m->key = strdup(key);
	m->glob = strdup(value);
	m->line = p->line;
	if (!m->key || !m->glob) {
		free(m->key);
		free(m->glob);
		p->fatal = -ENOMEM;
		return 0;
	}
	c->n_match++;
	return 1;
}

static int conf_handler(void *user, const char *section, const char *key, const char *value)
{
	struct parser *p = user;
	if (p->fatal)
		return 0;
	if (!*section) {
		parser_error(p, "%s= outside any section", key);
		return 1;
	}
	if (strcmp(section, "Driver") == 0)
		return handle_driver(p, key, value);
	if (strcmp(section, "Hooks") == 0)
		return handle_hooks(p, key, value);
	if (strcmp(section, "Match") == 0)
		return handle_match(p, key, value);
	return 1; /* a bad section, reported at its header */
}

/* ---- files ---- */

/*
 * Parses @file (named @path in messages). Returns the number of errors
 * (written to @errors) or -errno; *ret is the parsed file either way when
 * not -errno.
 */
static int conf_parse(const char *path, FILE *file, FILE *errors, struct exec_conf **ret)
{
	struct exec_conf *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->path = strdup(path);
	if (!c->path) {
		free(c);
		return -ENOMEM;
	}
	c->priority = EXEC_DEFAULT_PRIORITY;
	c->timeout_s = EXEC_DEFAULT_TIMEOUT_S;

	struct parser p = { .conf = c, .file = file, .errors = errors };
	/* Every error is ours and already reported; inih's return value would
	 * only repeat the first line of them. */
	int r = ini_parse_stream(conf_reader, &p, conf_handler, &p);
	free(p.line_buf);
	if (p.fatal || r == -2) {
		exec_conf_free(c);
		return p.fatal ? p.fatal : -ENOMEM;
	}

	if (!c->driver_line) {
		/* after a bad "[...]" line, that was most likely meant to be
		 * [Driver]: it is reported already */
		if (!p.bad_section) {
			conf_error(errors, path, 1,
				   "no [Driver] section (Name= and Bus= are required)");
			p.n_errors++;
		}
	} else {
		if (!c->name_line) {
			conf_error(errors, path, c->driver_line, "[Driver] has no Name=");
			p.n_errors++;
		}
		if (!c->bus_line) {
			conf_error(errors, path, c->driver_line, "[Driver] has no Bus=");
			p.n_errors++;
		}
	}
	*ret = c;
	return (int)p.n_errors;
}

static int conf_open(const char *path, FILE *errors, FILE **ret)
{
	struct stat st;
	/* O_NONBLOCK: a FIFO named *.conf must not hang the daemon */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOMEM)
			return -ENOMEM;
		conf_error(errors, path, 0, "cannot open: %s", strerror(errno));
		return 1;
	}
	if (fstat(fd, &st) < 0) {
		conf_error(errors, path, 0, "cannot stat: %s", strerror(errno));
		close(fd);
		return 1;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > EXEC_MAX_FILE_SIZE) {
		if (!S_ISREG(st.st_mode))
			conf_error(errors, path, 0, "not a regular file");
		else
			conf_error(errors, path, 0, "larger than %d bytes", EXEC_MAX_FILE_SIZE);
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

static int conf_filter(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	/* hidden files are editors' and package managers' leftovers */
	return d->d_name[0] != '.' && n > 5 && strcmp(d->d_name + n - 5, ".conf") == 0;
}

struct conf_list {
	struct exec_conf **v;
	size_t n;
};

static void conf_list_done(struct conf_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		exec_conf_free(l->v[i]);
	free(l->v);
	*l = (struct conf_list){ 0 };
}

/* A second definition of a driver name is an error on the second one. */
static unsigned check_duplicate_names(const struct conf_list *l, FILE *errors)
{
	unsigned n = 0;
	for (size_t i = 0; i < l->n; i++) {
		const struct exec_conf *c = l->v[i];
		if (!c->name)
			continue;
		for (size_t k = 0; k < i; k++) {
			const struct exec_conf *o = l->v[k];
			if (o->name && strcmp(o->name, c->name) == 0) {
				conf_error(errors, c->path, c->name_line,
					   "driver %s is already defined in %s:%u", c->name,
					   o->path, o->name_line);
				n++;
				break;
			}
		}
	}
	return n;
}

/*
 * Parses every *.conf of @dir in name order into @ret (which the caller
 * frees with conf_list_done() in every case). Returns the number of errors
 * or -errno.
 */
static int conf_load_dir(const char *dir, FILE *errors, struct conf_list *ret)
{
	struct dirent **names = NULL;
	unsigned n_errors = 0;
	int n, r = 0;

	*ret = (struct conf_list){ 0 };
	if (!dir)
		return -EINVAL;
	n = scandir(dir, &names, conf_filter, alphasort);
	if (n < 0)
		return errno == ENOENT ? 0 : -errno;
	if (n > EXEC_MAX_FILES) {
		conf_error(errors, dir, 0, "more than %d *.conf files", EXEC_MAX_FILES);
		n_errors++;
		goto out_free_names;
	}
	ret->v = calloc((size_t)n + 1, sizeof(*ret->v));
	if (!ret->v) {
		r = -ENOMEM;
		goto out_free_names;
	}
	for (int i = 0; i < n; i++) {
		char *path;
		FILE *f = NULL;
		struct exec_conf *c = NULL;

		if (asprintf(&path, "%s/%s", dir, names[i]->d_name) < 0) {
			r = -ENOMEM;
			goto out_free_names;
		}
		r = conf_open(path, errors, &f);
		if (r == 0) {
			r = conf_parse(path, f, errors, &c);
			fclose(f);
		}
		free(path);
		if (r < 0)
			goto out_free_names;
		n_errors += (unsigned)r;
		r = 0;
		if (c)
			ret->v[ret->n++] = c;
	}
	n_errors += check_duplicate_names(ret, errors);

out_free_names:
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (r < 0)
		return r;
	return n_errors > INT_MAX ? INT_MAX : (int)n_errors;
}

int dm_exec_check_dir(const char *dir, FILE *errors)
{
	struct conf_list l;
	int r = conf_load_dir(dir, errors, &l);
	conf_list_done(&l);
	return r;
}

/* ---- the drivers ---- */

/* A registered exec driver's data: what its hooks need. */
struct exec_driver {
	struct dm_driver_ops ops; /* NULL where the file has no hook */
	struct dm_model *model;
	char *name;
	int timeout_ms;
	char **argv[N_HOOKS];
};

static void exec_driver_free(void *data)
{
	struct exec_driver *ed = data;
	if (!ed)
		return;
	for (int h = 0; h < N_HOOKS; h++)
		dm_strv_free(ed->argv[h]);
	free(ed->name);
	free(ed);
}

/* Runs @hook for @dev; 0 and *ret filled when the program ran. Called
 * without the model lock (driver hooks always are). */
static int exec_run(struct exec_driver *ed, enum exec_hook hook, struct dm_device *dev,
		    struct dm_run_result *ret)
{
	char **env;
	char label[PATH_MAX + 2 * EXEC_NAME_MAX];
	int r = dm_hook_env(dev, hook_actions[hook], ed->name, NULL, &env);
	if (r < 0) {
		log_warn("%s %s %s: cannot prepare the hook: %s", hook_actions[hook],
			 dm_device_get_name(dev), ed->name, strerror(-r));
		return r;
	}
	snprintf(label, sizeof(label), "%s %s %s", hook_actions[hook], dm_device_get_name(dev),
		 ed->name);
	/* the runner logs the call, whatever its outcome */
	r = dm_run(label, (const char *const *)ed->argv[hook], (const char *const *)env,
		   ed->timeout_ms, ret);
	dm_strv_free(env);
	return r;
}

/* -errno of a hook: it could not run, or dm_run_errno(). */
static int exec_call(struct exec_driver *ed, enum exec_hook hook, struct dm_device *dev)
{
	struct dm_run_result res;
	int r = exec_run(ed, hook, dev, &res);
	if (r < 0)
		return r;
	r = dm_run_errno(&res);
	/* a probe that exited non-zero declines the device: not a failure */
	if (hook == HOOK_PROBE && r == -EIO)
		r = -ENODEV;
	dm_run_result_done(&res);
	return r;
}

static int exec_probe(struct dm_device *dev, void *data)
{
	return exec_call(data, HOOK_PROBE, dev);
}

static void exec_remove(struct dm_device *dev, void *data)
{
	(void)exec_call(data, HOOK_REMOVE, dev); /* logged by the runner */
}

static int exec_suspend(struct dm_device *dev, void *data)
{
	return exec_call(data, HOOK_SUSPEND, dev);
}

static int exec_resume(struct dm_device *dev, void *data)
{
	return exec_call(data, HOOK_RESUME, dev);
}

/* Moves the hooks out of @c into a new driver data. */
static int exec_driver_new(struct dm_model *m, struct exec_conf *c, struct exec_driver **ret)
{
	struct exec_driver *ed = calloc(1, sizeof(*ed));
	if (!ed)
		return -ENOMEM;
	ed->name = strdup(c->name);
	if (!ed->name) {
		free(ed);
		return -ENOMEM;
	}
	ed->model = m;
	ed->timeout_ms = c->timeout_s * 1000;
	for (int h = 0; h < N_HOOKS; h++) {
		ed->argv[h] = c->hooks[h];
		c->hooks[h] = NULL;
	}
	/* absent hooks stay NULL: no probe accepts every matching device,
	 * and the PM engine skips devices with no suspend/resume */
	ed->ops.probe = ed->argv[HOOK_PROBE] ? exec_probe : NULL;
	ed->ops.remove = ed->argv[HOOK_REMOVE] ? exec_remove : NULL;
	ed->ops.suspend = ed->argv[HOOK_SUSPEND] ? exec_suspend : NULL;
	ed->ops.resume = ed->argv[HOOK_RESUME] ? exec_resume : NULL;
	*ret = ed;
	return 0;
}

struct dm_exec_set {
	struct dm_driver **drivers; /* registered, each with our reference */
	size_t n;
};

void dm_exec_unload(struct dm_exec_set *set)
{
	if (!set)
		return;
	/* the last loaded first, as a stack is torn down */
	for (size_t i = set->n; i > 0; i--) {
		dm_driver_unregister(set->drivers[i - 1]);
		dm_driver_unref(set->drivers[i - 1]);
	}
	free(set->drivers);
	free(set);
}

/* Creates and registers the driver of @c. Returns 0, 1 for a conflict with
 * a driver already on the bus (reported to @errors), or -errno. */
static int exec_register(struct dm_model *m, struct exec_conf *c, FILE *errors,
			 struct dm_driver **ret)
{
	struct exec_driver *ed;
	struct dm_driver *drv;
	struct dm_bus *bus;
	int r;

	r = dm_bus_get(m, c->bus, NULL, &bus);
	if (r < 0)
		return r;
	r = exec_driver_new(m, c, &ed);
	if (r < 0)
		return r;
	r = dm_driver_new(c->name, DM_DRIVER_USER, c->priority, &ed->ops, ed, exec_driver_free,
			  &drv);
	if (r < 0) {
		exec_driver_free(ed);
		return r;
	}
	for (size_t i = 0; i < c->n_match && r >= 0; i++)
		r = dm_driver_add_match(drv, c->match[i].key, c->match[i].glob);
	if (r >= 0) {
		r = dm_driver_register(bus, drv);
		/* -ENOMEM can come after the driver went on the bus */
		if (r < 0 && r != -EEXIST && r != -EBUSY) {
			dm_model_read_lock(m);
			bool registered = dm_driver_is_registered_locked(drv);
			dm_model_unlock(m);
			if (registered)
				dm_driver_unregister(drv);
		}
	}
	if (r == -EEXIST) {
		conf_error(errors, c->path, c->name_line, "bus %s already has a driver named %s",
			   c->bus, c->name);
		r = 1;
	}
	if (r != 0) {
		dm_driver_unref(drv);
		return r;
	}
	*ret = drv;
	return 0;
}

int dm_exec_load_dir(struct dm_model *m, const char *dir, FILE *errors, struct dm_exec_set **ret)
{
	struct dm_exec_set *set;
	struct conf_list l;
	int r;

	if (!m || !ret)
		return -EINVAL;
	r = conf_load_dir(dir, errors, &l);
	if (r != 0)
		goto out_free_list;
	set = calloc(1, sizeof(*set));
	if (!set) {
		r = -ENOMEM;
		goto out_free_list;
	}
	set->drivers = calloc(l.n + 1, sizeof(*set->drivers));
	if (!set->drivers) {
		free(set);
		r = -ENOMEM;
		goto out_free_list;
	}
	for (size_t i = 0; i < l.n; i++) {
		r = exec_register(m, l.v[i], errors, &set->drivers[set->n]);
		if (r != 0)
			break;
		set->n++;
	}
	if (r != 0) {
		dm_exec_unload(set); /* all or nothing */
		goto out_free_list;
	}
	*ret = set;
out_free_list:
	conf_list_done(&l);
	return r;
}
