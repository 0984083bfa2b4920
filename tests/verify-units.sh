#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The systemd units as systemd reads them: each copied into OUTDIR with its
# ExecStart= program replaced by this build's, then systemd-analyze verify
# on all of them at once (the timer finds its service beside it). verify
# warns of unknown keys and still exits 0: any output fails.
# usage: verify-units.sh SYSTEMD_ANALYZE OUTDIR DRIVERFSD DRIVERFSCTL UNIT...
set -eu
analyze=$1 out=$2 daemon=$3 ctl=$4
shift 4
units=
for unit in "$@"; do
	name=$(basename "$unit")
	sed -e "s#^ExecStart=[^ ]*/driverfsd #ExecStart=$daemon #" \
	    -e "s#^ExecStart=[^ ]*/driverfsd\$#ExecStart=$daemon#" \
	    -e "s#^ExecStart=[^ ]*/driverfsctl #ExecStart=$ctl #" "$unit" > "$out/$name"
	units="$units $out/$name"
done
# shellcheck disable=SC2086
out=$("$analyze" verify --man=no $units 2>&1) || { echo "$out"; exit 1; }
[ -z "$out" ] || { echo "$out"; exit 1; }
