#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# dev.sh - the two quick-start commands of the README, for a fresh Debian or
# Ubuntu machine:
#
#   scripts/dev.sh mount [MOUNTPOINT]   install what is missing, build, mount the
#                                       live machine's tree (default /devices)
#                                       and show its top
#   scripts/dev.sh test                 install what is missing, build (gcc,
#                                       warnings as errors) and run every test,
#                                       then again built with clang under
#                                       AddressSanitizer and UBSan, and the
#                                       concurrency tests under TSan; then
#                                       each libFuzzer target of tests/fuzz
#                                       for FUZZ_SECONDS (default 20)
#
# Packages are installed with apt-get; when not run as root it uses sudo.
# Both let the kernel offer FUSE over io_uring (the fuse module's
# enable_uring parameter, Linux >= 6.14), which driverfsd then uses.
set -eu

cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi

# build and run dependencies, by Debian package name
BUILD_PKGS="meson ninja-build gcc pkg-config libfuse3-dev fuse3 libpci-dev pciutils pci.ids
	libudev-dev libusb-1.0-0-dev libsystemd-dev libinih-dev libjson-c-dev liburing-dev libkmod-dev udev"
TEST_PKGS="clang libclang-rt-dev libcmocka-dev umockdev usbutils gir1.2-umockdev-1.0 python3 python3-gi python3-pytest
	python3-dbusmock python3-prometheus-client dbus-daemon graphviz groff-base systemd strace kmod
	qemu-system-x86 busybox-static prometheus prometheus-node-exporter"

# what the ThreadSanitizer build runs: the tests with threads of their own
TSAN_TESTS="core pm runner exec mount-pm mount-hotplug mount-hotplug-stress mount-files
	mount-transport mount-slow-reads mount-handover"
# the libFuzzer targets (tests/fuzz/README.md)
FUZZ_TARGETS="config drivers-d snapshot store uevent"

install_missing() {
	missing=
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	echo "dev.sh: installing:$missing"
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
	# shellcheck disable=SC2086
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
}

# meson setup DIR [ARGS...], once; later runs reuse the directory
setup() {
	dir=$1
	shift
	if [ -f "$dir/build.ninja" ]; then
		meson setup --reconfigure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@"
	fi
}

# FUSE servers may then ask for io_uring; a kernel without it has no such
# parameter, and driverfsd serves through /dev/fuse there
enable_fuse_uring() {
	param=/sys/module/fuse/parameters/enable_uring
	[ -e "$param" ] || $SUDO modprobe fuse 2>/dev/null || true
	[ -e "$param" ] && echo Y | $SUDO tee "$param" >/dev/null || true
}

cmd=${1:-}
case "$cmd" in
mount)
	mnt=${2:-/devices}
	install_missing $BUILD_PKGS
	setup build
	ninja -C build
	if grep -q " $mnt fuse.driverfs " /proc/mounts; then
		echo "dev.sh: unmounting the driverfs already at $mnt"
		$SUDO fusermount3 -u "$mnt"
	fi
	enable_fuse_uring
	$SUDO build/driverfsd "$mnt"
	echo
	echo "$ ls $mnt $mnt/root $mnt/bus"
	ls "$mnt" "$mnt/root" "$mnt/bus"
	echo
	echo "$ ls -l $mnt/bus/pci/devices"
	ls -l "$mnt/bus/pci/devices"
	echo
	echo "The client: build/driverfsctl -m $mnt tree   (sudo meson install -C build puts it on the PATH)"
	echo "Unmount with: sudo fusermount3 -u $mnt"
	;;
test)
	install_missing $BUILD_PKGS $TEST_PKGS
	setup build -Dwerror=true
	ninja -C build
	enable_fuse_uring
	meson test -C build --print-errorlogs
	# The same suite built with clang under ASan (leak checks on) and UBSan.
	# The mount tests preload umockdev, hence verify_asan_link_order=0.
	# The vm tier (a QEMU guest) ran in the first pass: not again here.
	CC=clang setup build-asan -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false
	ninja -C build-asan
	ASAN_OPTIONS=verify_asan_link_order=0:halt_on_error=1:detect_leaks=1:abort_on_error=0 \
	LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp" \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C build-asan --print-errorlogs --no-suite vm
	# The concurrency tests (the PM engine's pool; readers, hotplug and PM
	# through the mount) under ThreadSanitizer.
	CC=clang setup build-tsan -Dwerror=true -Db_sanitize=thread -Db_lundef=false
	ninja -C build-tsan
	TSAN_OPTIONS=halt_on_error=1 \
		meson test -C build-tsan --print-errorlogs $TSAN_TESTS
	# Each fuzz target for a while, from a copy of its seed corpus (the
	# tree is not changed); a crash stops here, its input left in
	# build-fuzz/ (tests/fuzz/README.md: add it to the corpus once fixed).
	CC=clang setup build-fuzz -Dwerror=true -Dfuzz=true -Db_sanitize=address,undefined \
		-Db_lundef=false
	# shellcheck disable=SC2046
	ninja -C build-fuzz $(for t in $FUZZ_TARGETS; do echo "tests/fuzz/fuzz-$t"; done)
	fuzzed=0
	for t in $FUZZ_TARGETS; do
		corpus=$(mktemp -d)
		cp tests/fuzz/"$t"/* "$corpus"/
		if ! build-fuzz/tests/fuzz/fuzz-"$t" -max_total_time="${FUZZ_SECONDS:-20}" \
			-max_len=8192 -dict=tests/fuzz/"$t".dict -print_final_stats=1 \
			-artifact_prefix=build-fuzz/fuzz-"$t"- "$corpus" >build-fuzz/fuzz-"$t".log 2>&1; then
			tail -n 60 build-fuzz/fuzz-"$t".log
			rm -rf "$corpus"
			echo "dev.sh: fuzz-$t failed; its input is in build-fuzz/fuzz-$t-*"
			exit 1
		fi
		rm -rf "$corpus"
		echo "fuzz-$t: $(grep -E '^#[0-9]+[[:space:]]+DONE' build-fuzz/fuzz-"$t".log)"
		fuzzed=$((fuzzed + 1))
	done
	# one closing line for the runs (a failure above has already stopped us)
	total() { grep -c '"result": "OK"' "$1/meson-logs/testlog.json" || true; }
	skipped() { grep -c '"result": "SKIP"' "$1/meson-logs/testlog.json" || true; }
	echo "$(( $(total build) + $(total build-asan) + $(total build-tsan) + fuzzed )) passed, 0 failed," \
		"$(( $(skipped build) + $(skipped build-asan) + $(skipped build-tsan) )) skipped"
	;;
*)
	sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
