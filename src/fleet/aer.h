/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * aer.h - the kernel's PCIe AER counter files (aer_dev_correctable,
 * aer_dev_nonfatal, aer_dev_fatal: "NAME COUNT" lines, TOTAL_ERR_* last),
 * read one way by the metrics file (src/buses/pci-metrics.c) and by
 * driverfsctl health (src/ctl/health.c).
 */
#ifndef DM_FLEET_AER_H
#define DM_FLEET_AER_H

#include <stdbool.h>

/* The count on @key's line ("TOTAL_ERR_COR 2") of the file's text @text
 * (cut into lines in place): true with it in *ret, false when there is no
 * such line or its count is not a decimal number. */
bool dm_aer_count(char *text, const char *key, unsigned long long *ret);

#endif
