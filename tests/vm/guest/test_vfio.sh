# SPDX-License-Identifier: LGPL-2.1-or-later
# driverfsd's vfio-pci driver against the real VFIO (issue 32; docs/design.md
# on the vfio driver and PM, where tests/unit/test-vfio.c stands in for the
# kernel): the e1000e NIC bound to vfio-pci, suspended and resumed through
# its power file (VFIO_DEVICE_FEATURE_LOW_POWER_ENTRY/EXIT on a device
# vfio-pci had already runtime-suspended, idle and unopened); the kernel
# without its IOMMU backend (vfio_iommu_type1 unloaded: VFIO_SET_IOMMU says
# ENODEV, which power_error once showed as "No such device"); and a
# process that holds the group (tests/helpers/vfio-hold, for QEMU or DPDK):
# driverfsd leaves the device to it, and is refused while it holds it
# itself, at once, never a hang.
. /test/lib.sh

check "driverfsd --kernel-uevents mounted at /devices" mount_driverfs
M=/devices/bus/pci/devices
S=/sys/bus/pci/devices

NIC=
for d in "$S"/*; do
	[ "$(cat "$d/vendor"):$(cat "$d/device")" = 0x8086:0x10d3 ] && NIC=${d##*/}
done
group=$(basename "$(readlink "$S/$NIC/iommu_group")")
rs() { cat "$S/$NIC/power/runtime_status"; }
mnt_power() { cat "$M/$NIC/power"; }
perr() { cat "$M/$NIC/power_error"; }
# the daemon's open files of the group
daemon_holds() { ls -l "/proc/$daemon/fd" 2>/dev/null | grep -q "/dev/vfio/$group\$"; }
state() { echo "runtime_status $(rs), power_state $(cat "$S/$NIC/power_state"), mount: power $(mnt_power), power_error '$(perr)'" | diag; }
# a write to the power file, bounded (a hang fails the test, not the tier)
power() { timeout 30 sh -c "echo $1 > $M/$NIC/power"; }

driverfsctl -m /devices bind "$NIC" vfio-pci > /tmp/out 2>&1
ok $? "driverfsctl bind $NIC vfio-pci succeeds"
until_ok [ -e "/devices/bus/pci/drivers/vfio-pci/$NIC" ]
ok $? "driverfsd's vfio-pci driver has it"
[ "$(cat /devices/bus/pci/drivers/vfio-pci/kind)" = user ]
ok $? "that driver is driverfsd's own (kind user)"

# vfio-pci puts a device nobody has open into D3hot by runtime PM
until_ok [ "$(rs)" = suspended ]
ok $? "the kernel already runtime-suspended the idle device: $(rs)"
state

power suspend
ok $? "suspend through its power file succeeds"
state
[ -z "$(perr)" ]
ok $? "power_error is empty"
[ "$(mnt_power)" = suspended ] && [ "$(rs)" = suspended ]
ok $? "suspended: the mount's power and the kernel's runtime_status ($(rs))"
daemon_holds
ok $? "driverfsd holds /dev/vfio/$group while the device is in low power"
grep "$NIC\$" /devices/power_log | diag

# while driverfsd holds it, another user is refused at once
timeout 30 vfio-hold "$NIC" > /tmp/hold 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "failed: /dev/vfio/$group: .*busy" /tmp/hold
ok $? "another process is refused the group while driverfsd holds it (exit $rc: $(cat /tmp/hold))"

power resume
ok $? "resume through its power file succeeds"
state
[ -z "$(perr)" ] && [ "$(mnt_power)" = on ]
ok $? "resumed: power on, power_error empty"
! daemon_holds
ok $? "driverfsd let the group go"
# and the device is its next user's: opening it wakes it
# (its own file: the background job's redirection happens in the job)
rm -f /tmp/holder
vfio-hold "$NIC" > /tmp/holder 2>&1 &
holder=$!
until_ok grep -q -e held -e failed /tmp/holder
grep -q held /tmp/holder
ok $? "the group is free for another process ($(cat /tmp/holder))"
[ "$(rs)" = active ]
ok $? "opened by it, the device is active: runtime_status $(rs)"

# a process (QEMU, DPDK) holds the group: the device is its holder's
power suspend
ok $? "suspend while another process holds the group returns (no hang)"
state
[ -z "$(perr)" ] && ! daemon_holds && [ "$(rs)" = active ]
ok $? "left to its holder: nothing opened, the device untouched (runtime_status $(rs))"
grep -q "$NIC: its VFIO group is held by another process" /run/driverfsd.log
ok $? "driverfsd's log says the group is held by another process"
kill -0 "$holder"
ok $? "the holder still has it"
power resume
ok $? "resume while held returns"
# the kernel's runtime-PM calls on the NIC from here on: who holds it
# awake, if anything does
rpm_trace_start "$NIC"
kill "$holder"
wait "$holder" 2>/dev/null
# the holder's exit closes its device fd: vfio_pci_core_disable() drops the
# usage count vfio_pci_core_enable() took (pm_runtime_put(), in the exit
# itself, before the shell reaps it) and queues an idle request; a pm_wq
# worker then runtime-suspends the device, asynchronously
[ "$(cat "$S/$NIC/power/runtime_usage")" = 0 ]
ok $? "the holder reaped, the kernel's usage count of the device is 0: nobody holds it"
t0=$(cut -d' ' -f1 /proc/uptime)
until_ok [ "$(rs)" = suspended ]
r=$?
echo "the device idled $(awk -v a="$t0" '{ print $1 - a }' /proc/uptime) s after the holder's exit" | diag
if [ -e $RPM_T/events/rpm/enable ]; then
	rpm_trace_stop $r
	grep -q "vfio-hold-$holder .* rpm_idle: $NIC" $RPM_T/trace
	ok $? "the holder's own exit queued the idle request (rpm_idle from vfio-hold)"
	! grep -q "driverfsd" $RPM_T/trace
	ok $? "no thread of driverfsd called into the device's runtime PM meanwhile"
fi
# In 17 holder exits (this test, a probe with and without driverfsd, and
# with QEMU stopped 250 ms out of every 300 to starve the guest) the idle
# ran within 0.7 s, from a pm_wq worker right after the exit, driverfsd
# absent from the trace. The runs that took about 60 s (past the bound)
# were on a busy host, of the machine before no_timer_check and native
# pciehp; vm-pm's idle after control auto took as long once in CI (Dec 7,
# 16:30 UTC): the trace above is printed when it comes again
ok $r "the holder gone, vfio-pci idles the device again: $(rs) # TODO about 60 s in some runs on a busy host (Dec 7), here and in vm-pm: the rpm trace above says who held it"

# the kernel without VFIO's IOMMU backend: VFIO_SET_IOMMU answers ENODEV
rmmod vfio_iommu_type1
ok $? "vfio_iommu_type1 unloaded"
power suspend
rc=$?
[ $rc -ne 0 ]
ok $? "suspend without an IOMMU backend fails (exit $rc)"
state
case $(perr) in *ENOPKG*) true ;; *) false ;; esac
ok $? "power_error says the module is missing (ENOPKG), not 'No such device': $(perr)"
grep -q "$NIC: vfio-pci: VFIO has no IOMMU backend.*vfio_iommu_type1" /run/driverfsd.log
ok $? "driverfsd's log names vfio_iommu_type1"
! daemon_holds && [ "$(mnt_power)" = on ]
ok $? "nothing held, the device on"
modprobe vfio_iommu_type1
power suspend && [ -z "$(perr)" ] && daemon_holds
ok $? "with the module back, suspend succeeds"
power resume && [ -z "$(perr)" ] && ! daemon_holds
ok $? "and resume"

finish
