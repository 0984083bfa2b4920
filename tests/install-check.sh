#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# install-check.sh MESON BUILDDIR INCLUDEDIR PCDIR PATH...
# Stages `meson install` under a temporary DESTDIR and checks that each PATH
# (absolute, as installed) is there, and that no header and no pkg-config
# file are: include/driverfs/driverfs.h is the drivers' interface inside the
# daemon, not a public API (no library exports it; docs/design.md §2).
set -u
meson=$1 build=$2 includedir=$3 pcdir=$4
shift 4
dest=$(mktemp -d /tmp/driverfs-install-XXXXXX) || exit 1
trap 'rm -rf "$dest"' EXIT
out=$(DESTDIR="$dest" "$meson" install -C "$build" --no-rebuild --quiet 2>&1) || {
	echo "meson install failed: $out"; exit 1; }
fail=0
for p in "$@"; do
	[ -f "$dest$p" ] || { echo "not installed: $p"; fail=1; }
done
for d in "$includedir" "$pcdir"; do
	[ -z "$(ls -A "$dest$d" 2>/dev/null)" ] || { echo "installed under $d: $(ls -A "$dest$d")"; fail=1; }
done
exit $fail
