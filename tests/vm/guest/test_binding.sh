# SPDX-License-Identifier: LGPL-2.1-or-later
# Binding against the real driver core (issue 32; docs/design.md §7.5,
# where tests/mount/test_binding.py has kbind.c play the kernel):
# driverfsctl bind moves the e1000e NIC to vfio-pci (the kernel's driver
# link, its VFIO group's /dev/vfio/N, the tree following the kernel's
# uevents) and back; a probe the kernel refuses (vfio-pci refuses a bridge:
# its probe answers EINVAL) is rolled back, the root port still on pcieport.
. /test/lib.sh

check "driverfsd --kernel-uevents mounted at /devices" mount_driverfs
M=/devices/bus/pci/devices
S=/sys/bus/pci/devices

sys_driver() { basename "$(readlink "$S/$1/driver")" 2>/dev/null; }
mnt_driver_is() { [ "$(cat "$M/$1/kernel_driver" 2>/dev/null)" = "$2" ]; }

NIC=$(find_nic)
[ -n "$NIC" ] && [ "$(sys_driver "$NIC")" = e1000e ]
ok $? "the NIC ($NIC) is e1000e's"
group=$(basename "$(readlink "$S/$NIC/iommu_group")")

driverfsctl -m /devices bind "$NIC" vfio-pci > /tmp/out 2>&1
ok $? "driverfsctl bind $NIC vfio-pci succeeds"
diag < /tmp/out
[ "$(sys_driver "$NIC")" = vfio-pci ]
ok $? "the kernel has the NIC on vfio-pci (sysfs: $(sys_driver "$NIC"))"
[ "$(cat "$S/$NIC/driver_override")" = vfio-pci ]
ok $? "its driver_override is vfio-pci"
[ -c "/dev/vfio/$group" ]
ok $? "its IOMMU group's /dev/vfio/$group is there"
until_ok mnt_driver_is "$NIC" vfio-pci
ok $? "the tree follows: kernel_driver vfio-pci"
[ "$(basename "$(readlink "$M/$NIC/driver")")" = vfio-pci ]
ok $? "the tree's driver link names vfio-pci"

driverfsctl -m /devices bind "$NIC" e1000e > /tmp/out 2>&1
ok $? "driverfsctl bind $NIC e1000e succeeds"
diag < /tmp/out
[ "$(sys_driver "$NIC")" = e1000e ] && [ -d "$S/$NIC/net" ]
ok $? "the kernel has the NIC on e1000e again, with its interface ($(ls "$S/$NIC/net" 2>/dev/null))"
until_ok [ ! -e "/dev/vfio/$group" ]
ok $? "/dev/vfio/$group went with vfio-pci"
until_ok mnt_driver_is "$NIC" e1000e
ok $? "the tree follows: kernel_driver e1000e"

# the kernel's answer to each binding write, which tests/helpers/kbind.c
# plays for the mount tests (tests/mount/test_binding.py's
# test_direct_binding_writes_get_the_kernels_answers): "ok" or the error
# (busybox's printf says nothing of a failed write; its dd does)
answer() {
	if out=$(printf '%s\n' "$2" | dd of="$1" conv=notrunc 2>&1); then
		echo ok
	else
		echo "$out" | sed -n 's/^dd: .*: //p'
	fi
}
D=/sys/bus/pci/drivers
a=$(answer $D/e1000e/bind "$NIC")
[ "$a" = "Device or resource busy" ]
ok $? "bind of a device bound already, to its own driver: EBUSY ($a)"
a=$(answer $D/vfio-pci/bind "$NIC")
[ "$a" = "No such device" ]
ok $? "bind to a driver that does not match it (driver_override e1000e): ENODEV ($a)"
a=$(answer $D/vfio-pci/unbind "$NIC")
[ "$a" = "No such device" ]
ok $? "unbind by a driver it is not bound to: ENODEV ($a)"
a=$(answer $D/e1000e/bind 0000:ff:1f.7)
[ "$a" = "No such device" ]
ok $? "bind of no such device: ENODEV ($a)"
a=$(answer /sys/bus/pci/drivers_probe "$NIC")
[ "$a" = ok ] && [ "$(sys_driver "$NIC")" = e1000e ]
ok $? "drivers_probe of a bound device succeeds and changes nothing ($a, $(sys_driver "$NIC"))"

# a refusal: vfio-pci's probe answers EINVAL for a bridge; the empty
# root port (the last one, the hot-pluggable slot left free)
RP=
for d in "$S"/*; do
	[ "$(cat "$d/class")" = 0x060400 ] && [ -z "$(ls -d "$d"/????:??:??.? 2>/dev/null)" ] && RP=${d##*/}
done
[ -n "$RP" ] && [ "$(sys_driver "$RP")" = pcieport ]
ok $? "an empty root port ($RP) is pcieport's"
before=$(cat "$S/$RP/driver_override")
driverfsctl -m /devices bind "$RP" vfio-pci > /tmp/out 2>&1
rc=$?
[ $rc -ne 0 ]
ok $? "driverfsctl bind $RP vfio-pci fails (exit $rc)"
echo "driverfsctl printed:" | diag
diag < /tmp/out
dmesg | grep -i "vfio.*$RP" | tail -n 3 | diag
echo "its binding file:" | diag
diag < "$M/$RP/binding"
[ "$(sys_driver "$RP")" = pcieport ]
ok $? "rolled back: the kernel has the root port on pcieport (sysfs: $(sys_driver "$RP"))"
[ "$(cat "$S/$RP/driver_override")" = "$before" ]
ok $? "rolled back: its driver_override is as before ($before)"
until_ok mnt_driver_is "$RP" pcieport
ok $? "the tree shows pcieport"
grep -q -e EINVAL -e 'Invalid argument' /tmp/out
ok $? "the errno is the probe's own, EINVAL"
! grep -q 'no kernel driver of that name' /tmp/out
ok $? "the refusal is the probe's, not a bad driver name"
grep -q '^failed: probe: Invalid argument (EINVAL)$' /tmp/out &&
	grep -q '^rollback: bind to pcieport again: ok$' /tmp/out
ok $? "the report names the step, the kernel's errno and the rollback"
grep -q '^failed: probe: Invalid argument (EINVAL)$' "$M/$RP/binding"
ok $? "and so does its binding file"

# a probe refused under drivers_probe: the write succeeds, the device is
# left unbound (a bind write returns the probe's errno)
answer "$S/$RP/driver_override" vfio-pci > /dev/null && answer $D/pcieport/unbind "$RP" > /dev/null
a=$(answer /sys/bus/pci/drivers_probe "$RP")
[ "$a" = ok ] && [ -z "$(sys_driver "$RP")" ]
ok $? "drivers_probe of the root port, vfio-pci's probe refusing it: succeeds, unbound ($a, '$(sys_driver "$RP")')"
a=$(answer $D/vfio-pci/bind "$RP")
[ "$a" = "Invalid argument" ]
ok $? "bind to vfio-pci: the probe's EINVAL ($a)"
a=$(answer "$S/$RP/driver_override" "")
[ "$a" = ok ] && [ "$(cat "$S/$RP/driver_override")" = "(null)" ]
ok $? "a lone newline clears driver_override ($a, $(cat "$S/$RP/driver_override"))"
answer /sys/bus/pci/drivers_probe "$RP" > /dev/null
[ "$(sys_driver "$RP")" = pcieport ]
ok $? "drivers_probe binds pcieport again ($(sys_driver "$RP"))"
until_ok mnt_driver_is "$RP" pcieport
ok $? "the tree follows"

# a transaction a killed daemon left (issue 33 item 1): the NIC half-moved
# as a daemon killed at its probe step leaves it (driver_override
# vfio-pci, unbound from e1000e, bound to nothing), and the journal entry
# it had written; the next daemon rolls it back on the real driver core
kill "$daemon" && until_ok [ ! -d "/proc/$daemon" ]
until_ok sh -c "! grep -q ' /devices fuse' /proc/mounts"
ok $? "the daemon is gone, and its mount"
echo vfio-pci > "$S/$NIC/driver_override" && echo "$NIC" > /sys/bus/pci/drivers/e1000e/unbind
[ -z "$(sys_driver "$NIC")" ] && [ "$(cat "$S/$NIC/driver_override")" = vfio-pci ]
ok $? "half-moved: no driver, driver_override vfio-pci"
devpath=$(readlink -f "$S/$NIC")
mkdir -p /run/driverfsd
printf 'driverfsd-binding-journal 1 %s\ntxn %s pci %s e1000e 1 %% 0 vfio-pci 1 3 0\n' \
	"$(cat /proc/sys/kernel/random/boot_id)" "${devpath#/sys}" "$NIC" > /run/driverfsd/binding-journal
chmod 0644 /run/driverfsd/binding-journal
check "driverfsd --kernel-uevents mounted again, the journal left there" mount_driverfs
[ "$(sys_driver "$NIC")" = e1000e ] && [ -d "$S/$NIC/net" ]
ok $? "rolled back at start: the kernel has the NIC on e1000e (sysfs: $(sys_driver "$NIC"))"
[ "$(cat "$S/$NIC/driver_override")" = "(null)" ]
ok $? "rolled back at start: its driver_override is cleared ($(cat "$S/$NIC/driver_override"))"
[ ! -e /run/driverfsd/binding-journal ]
ok $? "the journal is dropped"
diag < "$M/$NIC/binding"
grep -q '^recovered at start: rolled back after the daemon died at step probe$' "$M/$NIC/binding"
ok $? "its binding file says so"

finish
