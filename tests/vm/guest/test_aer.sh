# SPDX-License-Identifier: LGPL-2.1-or-later
# AER counters (issue 32; docs/design.md §6.7, the device's sysfs attributes
# passed through live): the kernel's aer_inject raises correctable errors
# on the e1000e NIC (a struct aer_error_inj written to /dev/aer_inject,
# made with printf), the root port's AER service handles them, and the
# NIC's aer_dev_correctable (and its root port's aer_rootport_total_err_cor)
# move in sysfs; the mount's files read as sysfs's, byte for byte, before
# and after. Then an uncorrectable non-fatal one (a Completion Timeout):
# the kernel recovers the NIC through e1000e's error handlers (its change
# uevents, ERROR_EVENT=BEGIN_RECOVERY and SUCCESSFUL_RECOVERY, reach
# driverfsd), aer_dev_nonfatal moves, and the tree still has the NIC on
# e1000e, its uevent file as sysfs's. driverfsctl health and the metrics
# file's AER family say the same (issue 34).
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
check "the mount's AER files and uevent read as sysfs's before" same $FILES "$NIC/uevent"
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
inject() { # inject BDF UNCOR_STATUS_BYTE1 COR_STATUS_BYTE0
	bdf=$1
	bus=$((0x$(echo "$bdf" | cut -d: -f2)))
	slot=$((0x$(echo "$bdf" | cut -d: -f3 | cut -d. -f1)))
	fn=$(echo "$bdf" | cut -d. -f2)
	dom=$((0x$(echo "$bdf" | cut -d: -f1)))
	fmt="$(oct $bus)$(oct $slot)$(oct $fn)\\000\\000$(oct "$2")\\000\\000$(oct "$3")\\000\\000\\000"
	fmt="$fmt\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000"
	fmt="$fmt$(oct $((dom & 255)))$(oct $((dom >> 8 & 255)))\\000\\000"
	printf "$fmt" > /tmp/inj
	[ "$(wc -c < /tmp/inj)" -eq 32 ] || return 1
	dd if=/tmp/inj of=/dev/aer_inject bs=32 count=1 2> /tmp/dd.err || { diag < /tmp/dd.err; return 1; }
}
check "aer_inject takes a correctable Receiver Error (RxErr) for $NIC" inject "$NIC" 0 1
check "and a Bad TLP" inject "$NIC" 0 64

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
# what fleets read of it (issue 34): driverfsctl health's line, the
# metrics family, on the real kernel's counters
/usr/bin/driverfsctl -m /devices health > /tmp/health; hst=$?
diag < /tmp/health
[ $hst -eq 3 ] && grep -q "^$NIC	aer	$((cor0 + 2)) correctable error" /tmp/health
ok $? "driverfsctl health names the NIC's correctable errors (exit status 3)"
loc=$(echo "$NIC" | awk -F'[:.]' '{ printf "segment=\"%s\",bus=\"%s\",device=\"%s\",function=\"%s\"", $1, $2, $3, $4 }')
grep "^driverfsd_pcidevice_aer_correctable_errors_total{$loc}" /devices/metrics > /tmp/fam
diag < /tmp/fam
[ "$(awk '{ print $2 }' /tmp/fam)" = $((cor0 + 2)) ]
ok $? "driverfsd_pcidevice_aer_correctable_errors_total{$loc} is $((cor0 + 2))"

# uncorrectable, non-fatal (the default severity of bit 14, CmpltTO)
nf0=$(counter "$S/$NIC/aer_dev_nonfatal" TOTAL_ERR_NONFATAL)
check "aer_inject takes an uncorrectable non-fatal Completion Timeout" inject "$NIC" 64 0
nf_moved() { [ "$(counter "$S/$NIC/aer_dev_nonfatal" TOTAL_ERR_NONFATAL)" -eq $((nf0 + 1)) ]; }
check "the kernel counted it: TOTAL_ERR_NONFATAL $nf0 -> $((nf0 + 1))" until_ok nf_moved
recovered() { dmesg | grep -q "$RP: AER: device recovery"; }
until_ok recovered
dmesg | grep -e "$RP: AER" -e "$NIC" | tail -n 6 | diag
dmesg | grep -q "$RP: AER: device recovery successful" &&
	[ "$(basename "$(readlink "$S/$NIC/driver")")" = e1000e ] && [ -d "$S/$NIC/net" ]
ok $? "the kernel recovered the NIC: still e1000e's, with its interface"
check "the mount's AER files and uevent read as sysfs's after the recovery" same $FILES "$NIC/uevent"
[ "$(cat "$M/$NIC/kernel_driver")" = e1000e ]
ok $? "the tree has it on e1000e still"
kill -0 "$daemon"
ok $? "driverfsd still runs"

finish
