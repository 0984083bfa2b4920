# SPDX-License-Identifier: LGPL-2.1-or-later
# The tree against the guest's own sysfs (issue 32): every PCI function of
# /sys/bus/pci/devices is under the mount's bus/pci/devices with the same
# vendor, device and class and the kernel's driver, none more; and lspci,
# run in the guest, agrees with the mount; the same for USB and lsusb.
. /test/lib.sh

# the USB keyboard (1-1) and stick (2-2) enumerated by the kernel first:
# the comparison is of a settled machine
usb_settled() { [ -e /sys/bus/usb/devices/1-1/idVendor ] && [ -e /sys/bus/usb/devices/2-2/idVendor ]; }
check "the kernel has the USB keyboard and stick" until_ok usb_settled

check "driverfsd --kernel-uevents mounted at /devices" mount_driverfs
M=/devices/bus/pci/devices

sys_n=0
for d in /sys/bus/pci/devices/*; do
	dev=${d##*/}
	sys_n=$((sys_n + 1))
	want="$(cat "$d/vendor") $(cat "$d/device") $(cat "$d/class")"
	got="$(cat "$M/$dev/vendor" "$M/$dev/device" "$M/$dev/class" 2>&1 | tr '\n' ' ')"
	[ "$got" = "$want " ]
	ok $? "$dev: vendor device class as sysfs's ($want)"
	[ "$got" = "$want " ] || echo "mount has: $got" | diag
	drv=
	[ -e "$d/driver" ] && drv=$(basename "$(readlink "$d/driver")")
	mdrv=$(cat "$M/$dev/kernel_driver" 2>/dev/null)
	[ "$mdrv" = "$drv" ]
	ok $? "$dev: kernel driver '${drv}' as sysfs's (mount: '$mdrv')"
done
mnt_n=$(ls "$M" | wc -l)
[ "$mnt_n" -eq "$sys_n" ]
ok $? "the mount has as many PCI functions as sysfs ($mnt_n, $sys_n)"
bad=0
for d in "$M"/*; do
	[ -d "/sys/bus/pci/devices/${d##*/}" ] || { echo "${d##*/} in the mount, not in sysfs" | diag; bad=1; }
done
ok $bad "every PCI function of the mount is sysfs's"

# lspci -D -n -k: "DOMAIN:BUS:SLOT.FN CLASS: VENDOR:DEVICE ..." and, indented,
# "Kernel driver in use: DRIVER"
lspci -D -n -k > /tmp/lspci
lspci_n=$(grep -c '^[0-9a-f]' /tmp/lspci)
[ "$lspci_n" -eq "$mnt_n" ]
ok $? "lspci lists as many functions as the mount ($lspci_n, $mnt_n)"
awk '/^[0-9a-f]/ { if (dev) print dev, cls, ids, drv; dev = $1; cls = $2; ids = $3; drv = "-" }
	/Kernel driver in use:/ { drv = $NF }
	END { if (dev) print dev, cls, ids, drv }' /tmp/lspci > /tmp/lspci.rows
bad=0
while read -r dev cls ids drv; do
	v=$(cat "$M/$dev/vendor" 2>/dev/null)
	dv=$(cat "$M/$dev/device" 2>/dev/null)
	c=$(cat "$M/$dev/class" 2>/dev/null)
	k=$(cat "$M/$dev/kernel_driver" 2>/dev/null)
	[ -n "$k" ] || k=-
	mine="${c#0x}"
	mine="${mine%??}: ${v#0x}:${dv#0x} $k"
	if [ "$mine" != "$cls $ids $drv" ]; then
		echo "$dev: lspci '$cls $ids $drv', mount '$mine'" | diag
		bad=1
	fi
done < /tmp/lspci.rows
ok $bad "lspci's class, ids and driver in use are the mount's for each function"
lspci | diag

U=/devices/bus/usb/devices
bad=0
for d in /sys/bus/usb/devices/*; do
	dev=${d##*/}
	[ -e "$U/$dev" ] || { echo "$dev: not in the mount" | diag; bad=1; continue; }
	[ -e "$d/idVendor" ] || continue
	want="$(cat "$d/idVendor" "$d/idProduct" "$d/busnum" "$d/devnum" | tr '\n' ' ')"
	got="$(cat "$U/$dev/idVendor" "$U/$dev/idProduct" "$U/$dev/busnum" "$U/$dev/devnum" 2>&1 | tr '\n' ' ')"
	[ "$got" = "$want" ] || { echo "$dev: sysfs '$want', mount '$got'" | diag; bad=1; }
done
[ "$(ls "$U" | wc -l)" -eq "$(ls /sys/bus/usb/devices | wc -l)" ] || bad=1
ok $bad "every USB device and interface of sysfs is in the mount ($(ls "$U" | wc -l)), with its ids and numbers"

# lsusb: "Bus BBB Device DDD: ID VVVV:PPPP NAME", NAME the mount's name
lsusb > /tmp/lsusb
bad=0
while read -r _ bus _ devn _ ids name; do
	bus=$(echo "$bus" | sed 's/^0*//')
	devn=$(echo "${devn%:}" | sed 's/^0*//')
	found=
	for u in "$U"/*; do
		if [ -e "$u/busnum" ] && [ "$(cat "$u/busnum")" = "$bus" ] &&
			[ "$(cat "$u/devnum")" = "$devn" ]; then
			found=$u
		fi
	done
	mine=
	[ -n "$found" ] && mine="$(cat "$found/idVendor"):$(cat "$found/idProduct") $(cat "$found/name")"
	[ "$mine" = "$ids $name" ] || { echo "Bus $bus Device $devn: lsusb '$ids $name', mount '$mine'" | diag; bad=1; }
done < /tmp/lsusb
[ "$(grep -c . /tmp/lsusb)" -eq "$(ls -d "$U"/*/busnum | wc -l)" ] || bad=1
ok $bad "lsusb's ids and names are the mount's for each USB device ($(grep -c . /tmp/lsusb))"
diag < /tmp/lsusb

finish
