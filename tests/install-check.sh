#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# install-check.sh MESON BUILDDIR INCLUDEDIR PCDIR VERSION PATH...
# Stages `meson install` under a temporary DESTDIR and checks that each PATH
# (absolute, as installed) is there, that the installed header compiles on
# its own from the include directory, and that pkg-config finds driverfs.pc.
set -u
meson=$1 build=$2 includedir=$3 pcdir=$4 version=$5
shift 5
dest=$(mktemp -d /tmp/driverfs-install-XXXXXX) || exit 1
trap 'rm -rf "$dest"' EXIT
out=$(DESTDIR="$dest" "$meson" install -C "$build" --no-rebuild --quiet 2>&1) || {
	echo "meson install failed: $out"; exit 1; }
fail=0
for p in "$@"; do
	[ -f "$dest$p" ] || { echo "not installed: $p"; fail=1; }
done
printf '#include <driverfs/driverfs.h>\nint main(void) { return DM_ATTR_MAX > 0 ? 0 : 1; }\n' |
	cc -fsyntax-only -Wall -Werror -I"$dest$includedir" -x c - ||
	{ echo "the installed header does not compile on its own"; fail=1; }
got=$(PKG_CONFIG_PATH="$dest$pcdir" pkg-config --modversion driverfs 2>&1)
[ "$got" = "$version" ] || { echo "pkg-config --modversion driverfs: '$got', expected '$version'"; fail=1; }
exit $fail
