/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* aer.c - the kernel's AER counter files (aer.h). */
#include "aer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool dm_aer_count(char *text, const char *key, unsigned long long *ret)
{
	size_t klen = strlen(key);
	for (char *line = text; line;) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
			const char *num = line + klen + 1;
			char *end;
			if (*num < '0' || *num > '9')
				return false;
			errno = 0;
			*ret = strtoull(num, &end, 10);
			return !*end && !errno;
		}
		line = next;
	}
	return false;
}
