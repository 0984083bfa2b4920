# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared by the vm tier's guest tests (sourced by busybox sh): TAP output,
# driverfsd mounted at /devices, and waiting for a condition.

n=0
failed=0

ok() { # ok STATUS DESCRIPTION (a DESCRIPTION with "# TODO why" is a known failure)
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		case $2 in
		*"# TODO"*) ;;
		*) failed=$((failed + 1)) ;;
		esac
	fi
}

check() { # check DESCRIPTION COMMAND...: ok when COMMAND succeeds
	d=$1
	shift
	"$@"
	ok $? "$d"
}

diag() { sed 's/^/# /'; }

# until COMMAND...: retries COMMAND while it fails, for what follows the
# kernel's uevents into the tree (bounded: 600 tries, 0.1 s apart, so that
# a slow TCG guest is never the failure; a miss fails the check after it)
until_ok() {
	i=0
	while ! "$@"; do
		i=$((i + 1))
		[ $i -ge 600 ] && return 1
		sleep 0.1
	done
}

# the e1000e NIC's PCI function (8086:10d3, nic0 on rp1), as sysfs names it
find_nic() {
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor"):$(cat "$d/device")" = 0x8086:0x10d3 ] && echo "${d##*/}"
	done
}

mounted_or_gone() {
	grep -q ' /devices fuse' /proc/mounts || ! kill -0 "$daemon" 2>/dev/null
}

# driverfsd at /devices, following the kernel's uevents (no udevd here);
# arguments are more options (-c FILE)
mount_driverfs() {
	/usr/sbin/driverfsd -f --kernel-uevents "$@" /devices > /run/driverfsd.log 2>&1 &
	daemon=$!
	until_ok mounted_or_gone && grep -q ' /devices fuse' /proc/mounts
}

finish() {
	if [ $failed -ne 0 ] && [ -s /run/driverfsd.log ]; then
		echo "driverfsd's log:" | diag
		tail -n 50 /run/driverfsd.log | diag
	fi
	[ -n "${daemon:-}" ] && kill "$daemon" 2>/dev/null
	umount /devices 2>/dev/null
	echo "1..$n"
	[ $failed -eq 0 ]
}

# qmp COMMAND [ARGS]: asks the host (vm.py's Requests, on ttyS2) to run a
# QMP command: "device_del nic0", "device_add e1000e,id=nic0,bus=rp1,...",
# or ARGS as a JSON object. Prints the answer ("ok [JSON]" or "error
# WHY"); succeeds on ok. device_del answers once QEMU has deleted the
# device (the guest took the slot down). No answer within 120 s: an error.
qmp() {
	if [ -z "${qmp_open:-}" ]; then
		exec 9<> /dev/ttyS2 || return 1
		stty -F /dev/ttyS2 raw -echo
		qmp_open=1
	fi
	echo "$*" >&9
	qmp_answer=
	read -r -t 120 qmp_answer <&9 || qmp_answer="error no answer from the host"
	echo "$qmp_answer"
	case $qmp_answer in
	ok | "ok "*) return 0 ;;
	*) return 1 ;;
	esac
}

# The kernel's runtime-PM calls on the device named $1 from now on, by task
# (tracefs' rpm events): rpm_trace_start DEV, then rpm_trace_stop prints the
# last 40 calls when $1 is not 0 (a wait that ran out: who held it awake).
RPM_T=/sys/kernel/tracing
rpm_trace_start() {
	[ -d $RPM_T/events ] || mount -t tracefs nodev $RPM_T 2>/dev/null
	[ -e $RPM_T/events/rpm/enable ] || return 0
	echo "name == \"$1\"" > $RPM_T/events/rpm/filter
	echo > $RPM_T/trace
	echo 1 > $RPM_T/events/rpm/enable
}
rpm_trace_stop() {
	[ -e $RPM_T/events/rpm/enable ] || return 0
	echo 0 > $RPM_T/events/rpm/enable
	[ "$1" -eq 0 ] || grep -v '^#' $RPM_T/trace | tail -n 40 | diag
}
