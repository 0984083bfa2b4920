/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nfd-format.c - node labels as an NFD feature file (nfd-format.h). */
#include "nfd-format.h"

#include "util/replace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kind {
	char key[16];
	unsigned long vfio, viable, numvfs, totalvfs, degraded;
	bool has_vfs;
};

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[n] == '\0';
}

bool dm_nfd_key(const char *class_id, const char *vendor, struct dm_nfd_fn *f)
{
	if (strncmp(class_id, "0x", 2) != 0 || !is_hex(class_id + 2, 6) ||
	    strncmp(vendor, "0x", 2) != 0 || !is_hex(vendor + 2, 4))
		return false;
	snprintf(f->key, sizeof(f->key), "%.4s_%.4s", class_id + 2, vendor + 2);
	f->bridge = strncmp(class_id + 2, "0604", 4) == 0;
	return true;
}

/* vfio's rule: every member of the group bound to vfio-pci, to no
 * driver, or a bridge. */
static bool viable(const struct dm_nfd_fn *v, size_t n, long group)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].group == group && !v[i].bridge && v[i].driver[0] &&
		    strcmp(v[i].driver, "vfio-pci") != 0)
			return false;
	return true;
}

static struct kind *kind_of(struct kind **v, size_t *n, const char *key)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i].key, key) == 0)
			return &(*v)[i];
	struct kind *p = realloc(*v, (*n + 1) * sizeof(**v));
	if (!p)
		return NULL;
	*v = p;
	p[*n] = (struct kind){ 0 };
	snprintf(p[*n].key, sizeof(p[*n].key), "%s", key);
	return &p[(*n)++];
}

static int cmp_kind(const void *a, const void *b)
{
	return strcmp(((const struct kind *)a)->key, ((const struct kind *)b)->key);
}

/* NFD's label names (the part after its prefix: at most 63 characters,
 * alphanumeric at both ends, '-', '_' and '.' inside) and values (the
 * same). */
static bool nfd_valid(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
		if (!alnum && (i == 0 || i == n - 1 || (c != '-' && c != '_' && c != '.')))
			return false;
	}
	return true;
}

/* "driverfsd.pci-KEY.SUFFIX=V", when both are valid as NFD requires */
static void put(FILE *out, const char *key, const char *suffix, unsigned long v)
{
	char name[96], value[32];
	snprintf(name, sizeof(name), "driverfsd.pci-%s.%s", key, suffix);
	snprintf(value, sizeof(value), "%lu", v);
	if (nfd_valid(name) && nfd_valid(value))
		fprintf(out, "%s=%s\n", name, value);
}

int dm_nfd_text(const struct dm_nfd_fn *v, size_t n, char **ret, size_t *ret_len)
{
	struct kind *kinds = NULL;
	size_t nk = 0;
	bool any_degraded = false;
	for (size_t i = 0; i < n; i++) {
		struct kind *k = kind_of(&kinds, &nk, v[i].key);
		if (!k) {
			free(kinds);
			return -ENOMEM;
		}
		if (strcmp(v[i].driver, "vfio-pci") == 0) {
			k->vfio++;
			k->viable += v[i].group >= 0 && viable(v, n, v[i].group);
		}
		if (v[i].has_vfs) {
			k->has_vfs = true;
			k->numvfs += v[i].numvfs;
			k->totalvfs += v[i].totalvfs;
		}
		k->degraded += v[i].degraded;
		any_degraded |= v[i].degraded;
	}
	qsort(kinds, nk, sizeof(*kinds), cmp_kind);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	if (!out) {
		free(kinds);
		return -ENOMEM;
	}
	fputs("# driverfsd: what NFD's pci source does not say (driverfsctl nfd)\n", out);
	for (size_t i = 0; i < nk; i++) {
		const struct kind *k = &kinds[i];
		if (k->vfio) {
			put(out, k->key, "vfio-pci", k->vfio);
			put(out, k->key, "vfio-pci-viable", k->viable);
		}
		if (k->has_vfs) {
			put(out, k->key, "sriov-numvfs", k->numvfs);
			put(out, k->key, "sriov-totalvfs", k->totalvfs);
		}
		if (k->degraded)
			put(out, k->key, "link-degraded", k->degraded);
	}
	if (any_degraded)
		fputs("driverfsd.pci-link-degraded=true\n", out);
	free(kinds);
	if (fclose(out) != 0)
		return -ENOMEM;
	if (len > DM_NFD_MAX) {
		free(text);
		return -EFBIG;
	}
	*ret = text;
	*ret_len = len;
	return 0;
}

/* Whether @path holds exactly @len bytes of @text. */
static bool same_as(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	char *buf = malloc(DM_NFD_MAX + 1);
	size_t n = buf ? fread(buf, 1, DM_NFD_MAX + 1, f) : 0;
	fclose(f);
	bool same = buf && n == len && memcmp(buf, text, len) == 0;
	free(buf);
	return same;
}

int dm_nfd_write(const char *path, const char *text, size_t len, char *msg, size_t size)
{
	if (msg && size)
		*msg = '\0';
	if (same_as(path, text, len))
		return 0;
	int r = dm_replace_file(path, text, len, msg, size);
	return r < 0 ? r : 1;
}
