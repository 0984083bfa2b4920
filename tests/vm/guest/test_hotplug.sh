# SPDX-License-Identifier: LGPL-2.1-or-later
# A real PCIe hot-unplug under readers (issue 32; docs/design.md §9, where
# tests/mount/test_hotplug*.py have umockdev play the kernel's uevents):
# the e1000e NIC's slot emptied over QMP (device_del nic0, asked of the
# host through lib.sh's qmp) while this shell holds the NIC's vendor file
# open and its directory as working directory; the kernel removes the
# function (and its eth0), driverfsd follows its uevents: the open file
# reads ENODEV, the NIC is gone from root/, bus/pci/devices, the driver's
# directory and class/net, and the remove() hook of the user driver that
# held it ran. device_add puts it back on the same slot: the tree has it
# again, with the kernel's driver, and the old open file still reads
# ENODEV, never the new device's data.
. /test/lib.sh

# a user driver holding the NIC in the model, its hooks logged
mkdir -p /run/dfs/drivers.d
printf '[PM]\nHookTimeout=10\n' > /run/dfs/driverfsd.conf
cat > /run/dfs/drivers.d/nic-watch.conf <<'CONF'
[Driver]
Name=nic-watch
Bus=pci
[Match]
vendor=0x8086
device=0x10d3
[Hooks]
Probe=/bin/sh -c 'echo "$ACTION $DRIVERFS_PATH" >> /run/hooks'
Remove=/bin/sh -c 'echo "$ACTION $DRIVERFS_PATH" >> /run/hooks'
CONF
: > /run/hooks

check "driverfsd --kernel-uevents mounted at /devices, with the nic-watch driver" \
	mount_driverfs -c /run/dfs/driverfsd.conf
M=/devices
S=/sys/bus/pci/devices

NIC=$(find_nic)
[ -n "$NIC" ] && [ -d "$S/$NIC/net" ]
ok $? "the kernel has the NIC ($NIC) with its interface"
IF=$(ls "$S/$NIC/net" 2>/dev/null)
# its place under root/: the mount's path of the PCI function
RP=$(basename "$(dirname "$(readlink -f "$S/$NIC")")")
T="$M/root/pci0000:00/$RP/$NIC"

mnt_has_nic() { [ -e "$M/bus/pci/devices/$NIC" ] && [ -d "$T" ] &&
	[ "$(cat "$T/kernel_driver" 2>/dev/null)" = e1000e ]; }
check "the tree has $T, kernel driver e1000e" until_ok mnt_has_nic
check "class/net/$IF is there" until_ok [ -e "$M/class/net/devices/$IF" ]
[ "$(basename "$(readlink "$T/driver")")" = nic-watch ] && [ -e "$M/bus/pci/drivers/nic-watch/$NIC" ]
ok $? "nic-watch holds it in the tree (driver link, bus/pci/drivers/nic-watch/$NIC)"
P="pci0000:00/$RP/$NIC" # DRIVERFS_PATH: the path under root/
last_hook_is() { [ "$(tail -n 1 /run/hooks)" = "$1 $P" ]; }
[ "$(cat /run/hooks)" = "probe $P" ]
ok $? "nic-watch's probe() ran for it, once"

# the readers: an open file not read yet, one read once, and this shell's
# working directory
exec 4< "$T/vendor"
exec 5< "$T/device"
read -r dev5 <&5
[ "$dev5" = 0x10d3 ]
ok $? "an open device file reads 0x10d3 before the unplug"
cd "$T" || exit 1
# the same reader of the kernel's sysfs, for what the kernel answers: a
# subshell with its own working directory, until /tmp/unplugged exists
SYSDIR=$(readlink -f "$S/$NIC")
(
	cd "$SYSDIR" || exit 1
	exec 6< vendor
	until_ok [ -e /tmp/unplugged ]
	cat <&6 > /dev/null 2> /tmp/sys.read
	echo $? >> /tmp/sys.read
	ls . > /tmp/sys.ls 2>&1
	echo $? >> /tmp/sys.ls
	cat vendor > /dev/null 2> /tmp/sys.open
	echo $? >> /tmp/sys.open
) &
sysreader=$!

hooks_before=$(wc -l < /run/hooks)
qmp device_del nic0 > /tmp/answer
ok $? "device_del nic0 over QMP: $(cat /tmp/answer)"
check "the kernel removed $NIC" until_ok [ ! -e "$S/$NIC" ]
[ ! -e "/sys/class/net/$IF" ]
ok $? "and its $IF"

gone() { [ ! -e "$M/bus/pci/devices/$NIC" ] && [ ! -e "$T" ]; }
check "the tree follows: $NIC gone from bus/pci/devices and root/" until_ok gone
# (each retried: what the kernel cached of the tree goes as the daemon's
# invalidations arrive, just after the model changed)
if_gone() { [ ! -e "$M/class/net/devices/$IF" ] && [ ! -e "$M/class/net/$IF" ]; }
check "$IF gone from class/net" until_ok if_gone
drivers_gone() { [ ! -e "$M/bus/pci/drivers/nic-watch/$NIC" ] && [ ! -e "$M/bus/pci/drivers/e1000e/$NIC" ]; }
check "gone from the drivers' directories (nic-watch, e1000e)" until_ok drivers_gone
not_listed() { ! ls "$M/root/pci0000:00/$RP" | grep -q "$NIC"; }
check "its root port's listing no longer names it" until_ok not_listed
check "nic-watch's remove() ran for it, last" until_ok last_hook_is remove
[ "$(tail -n +$((hooks_before + 1)) /run/hooks)" = "remove $P" ]
ok $? "one unplug, one remove() and nothing else"
echo "the hooks since the unplug:" | diag
tail -n +$((hooks_before + 1)) /run/hooks | diag

cat <&4 > /tmp/out 2> /tmp/err
rc=$?
[ $rc -ne 0 ] && grep -q 'No such device' /tmp/err && [ ! -s /tmp/out ]
ok $? "the file opened before the unplug reads ENODEV ($(cat /tmp/err /tmp/out))"
cat <&5 > /tmp/out 2> /tmp/err
[ $? -ne 0 ] && grep -q 'No such device' /tmp/err
ok $? "the file read once before the unplug reads ENODEV now ($(cat /tmp/err /tmp/out))"
ls . > /tmp/out 2> /tmp/err
rc=$?
[ $rc -ne 0 ] && grep -q -e 'No such device' -e 'No such file' /tmp/err
ok $? "a listing of the working directory fails ENODEV or ENOENT ($(cat /tmp/err))"
cat vendor > /tmp/out 2> /tmp/err
[ $? -ne 0 ]
ok $? "opening a file by its name under the old working directory fails ($(cat /tmp/err))"
cd /
touch /tmp/unplugged
wait $sysreader
echo "sysfs's answers to the same reader: read of the open file: $(cat /tmp/sys.read | tr '\n' ' '); ls of the working directory: $(tr '\n' ' ' < /tmp/sys.ls); open by name: $(tr '\n' ' ' < /tmp/sys.open)" | diag
grep -q 'No such device' /tmp/sys.read
ok $? "sysfs answers its open file's read ENODEV too"
kill -0 "$daemon"
ok $? "driverfsd still runs"

# the slot again: the same id on the same root port
qmp device_add e1000e,id=nic0,bus=rp1,netdev=net0 > /tmp/answer
ok $? "device_add e1000e,id=nic0,bus=rp1 over QMP: $(cat /tmp/answer)"
sys_back() { [ -e "$S/$NIC/driver" ] && [ -d "$S/$NIC/net" ]; }
check "the kernel has $NIC again, bound, with an interface" until_ok sys_back
IF=$(ls "$S/$NIC/net" 2>/dev/null)
check "the tree has it again under root/ and bus/pci/devices, kernel driver e1000e" until_ok mnt_has_nic
check "class/net/$IF is there again" until_ok [ -e "$M/class/net/devices/$IF" ]
[ "$(cat "$T/vendor" "$T/device" | tr '\n' ' ')" = "0x8086 0x10d3 " ]
ok $? "its vendor and device read as before"
hold_again() { last_hook_is probe && [ -e "$M/bus/pci/drivers/nic-watch/$NIC" ] &&
	[ "$(basename "$(readlink "$T/driver")")" = nic-watch ]; }
check "nic-watch probed it again and holds it" until_ok hold_again
echo "the hooks since the unplug:" | diag
tail -n +$((hooks_before + 1)) /run/hooks | diag
cat <&4 > /tmp/out 2> /tmp/err
[ $? -ne 0 ] && grep -q 'No such device' /tmp/err && [ ! -s /tmp/out ]
ok $? "the file opened on the old device still reads ENODEV, not the new device's ($(cat /tmp/err /tmp/out))"
exec 4<&- 5<&-

# the tree against sysfs once more: the same PCI functions
same_functions() { [ "$(ls "$M/bus/pci/devices")" = "$(ls "$S")" ]; }
until_ok same_functions
ok $? "the mount has sysfs's PCI functions, none more"
same_functions || { ls "$M/bus/pci/devices" | diag; ls "$S" | diag; }

finish
