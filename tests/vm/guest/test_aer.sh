# SPDX-License-Identifier: LGPL-2.1-or-later
# AER counters (issue 32; docs/design.md §6.7, the device's sysfs attributes
# passed through live): the kernel's aer_inject raises correctable errors
# on the e1000e NIC (a struct aer_error_inj written to /dev/aer_inject,
# made with printf), the root port's AER service handles them, and the
# NIC's aer_dev_correctable (and its root port's aer_rootport_total_err_cor)
# move in sysfs; the mount's files read as sysfs's, byte for byte, before
# and after.
. /test/lib.sh

check "driverfsd --kernel-uevents mounted at /devices" mount_driverfs
M=/devices/bus/pci/devices
S=/sys/bus/pci/devices

NIC=$(find_nic)
[ -n "$NIC" ] && [ -e "$S/$NIC/aer_dev_correctable" ]
ok $? "the NIC ($NIC) has AER counters in sysfs"
RP=$(basename "$(dirname "$(readlink -f "$S/$NIC")")")
dmesg | grep "$RP.*AER" | diag
[ -c /dev/aer_inject ]
ok $? "/dev/aer_inject is there (aer_inject loaded)"

same() { # same FILE...: the mount's files read as sysfs's
	for f in "$@"; do
		cat "$S/$f" > /tmp/sys 2>&1
		cat "$M/$f" > /tmp/mnt 2>&1
		cmp -s /tmp/sys /tmp/mnt || {
			echo "$f: sysfs / mount:" | diag
			diag < /tmp/sys
			diag < /tmp/mnt
			return 1
		}
	done
}
counter() { # counter FILE NAME: NAME's count in an AER counters file
	awk -v n="$2" '$1 == n { print $2 }' "$1"
}
FILES="$NIC/aer_dev_correctable $NIC/aer_dev_nonfatal $NIC/aer_dev_fatal $RP/aer_rootport_total_err_cor $RP/aer_rootport_total_err_nonfatal $RP/aer_rootport_total_err_fatal"
ls "$M/$NIC" | grep -q '^aer_dev_correctable$'
ok $? "the mount lists the NIC's aer_dev_correctable"
check "the mount's AER files read as sysfs's before" same $FILES
cor0=$(counter "$S/$NIC/aer_dev_correctable" TOTAL_ERR_COR)
rx0=$(counter "$S/$NIC/aer_dev_correctable" RxErr)
tlp0=$(counter "$S/$NIC/aer_dev_correctable" BadTLP)
rp0=$(cat "$S/$RP/aer_rootport_total_err_cor")
# an open file of the mount, read after the errors: a copy per open (§6.6),
# taken at its first read
exec 4< "$M/$NIC/aer_dev_correctable"

# struct aer_error_inj (include/linux/aer.h's layout, 32 bytes): u8 bus,
# dev, fn, a pad byte, then u32 uncor_status, cor_status, header_log0..3,
# domain, little-endian
oct() { printf '\\%03o' "$1"; }
inject_cor() { # inject_cor BDF COR_STATUS_BYTE0
	bdf=$1
	bus=$((0x$(echo "$bdf" | cut -d: -f2)))
	slot=$((0x$(echo "$bdf" | cut -d: -f3 | cut -d. -f1)))
	fn=$(echo "$bdf" | cut -d. -f2)
	dom=$((0x$(echo "$bdf" | cut -d: -f1)))
	fmt="$(oct $bus)$(oct $slot)$(oct $fn)\\000\\000\\000\\000\\000$(oct "$2")\\000\\000\\000"
	fmt="$fmt\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000"
	fmt="$fmt$(oct $((dom & 255)))$(oct $((dom >> 8 & 255)))\\000\\000"
	printf "$fmt" > /tmp/inj
	[ "$(wc -c < /tmp/inj)" -eq 32 ] || return 1
	dd if=/tmp/inj of=/dev/aer_inject bs=32 count=1 2> /tmp/dd.err || { diag < /tmp/dd.err; return 1; }
}
check "aer_inject takes a correctable Receiver Error (RxErr) for $NIC" inject_cor "$NIC" 1
check "and a Bad TLP" inject_cor "$NIC" 64

moved() { [ "$(counter "$S/$NIC/aer_dev_correctable" TOTAL_ERR_COR)" -eq $((cor0 + 2)) ]; }
check "the kernel counted them: TOTAL_ERR_COR $cor0 -> $((cor0 + 2))" until_ok moved
[ "$(counter "$S/$NIC/aer_dev_correctable" RxErr)" -eq $((rx0 + 1)) ] &&
	[ "$(counter "$S/$NIC/aer_dev_correctable" BadTLP)" -eq $((tlp0 + 1)) ]
ok $? "RxErr and BadTLP one more each in sysfs"
[ "$(cat "$S/$RP/aer_rootport_total_err_cor")" -gt "$rp0" ]
ok $? "the root port ($RP) counted them too ($rp0 -> $(cat "$S/$RP/aer_rootport_total_err_cor"))"
check "the mount's AER files read as sysfs's after" same $FILES
[ "$(counter "$M/$NIC/aer_dev_correctable" TOTAL_ERR_COR)" -eq $((cor0 + 2)) ]
ok $? "the mount's TOTAL_ERR_COR moved: $(counter "$M/$NIC/aer_dev_correctable" TOTAL_ERR_COR)"
cat <&4 > /tmp/held
[ "$(counter /tmp/held TOTAL_ERR_COR)" -eq $((cor0 + 2)) ]
ok $? "a file opened before the errors and read after reads the new counts"
exec 4<&-
diag < "$M/$NIC/aer_dev_correctable"

finish
