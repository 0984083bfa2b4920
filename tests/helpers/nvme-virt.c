/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nvme-virt: the NVMe virtualization management the vm tier's SR-IOV test
 * needs (issue 32), over the nvme driver's admin passthrough
 * (NVME_IOCTL_ADMIN_CMD on the controller's character device):
 *
 *   nvme-virt DEV caps     Identify, Primary Controller Capabilities (CNS 14h):
 *                          "key value" lines (cntlid, vqfrt, vqrfa, vqrfap,
 *                          vqprt, vqfrsm, vqgran, vifrt, virfa, virfap, viprt,
 *                          vifrsm, vigran)
 *   nvme-virt DEV list     Identify, Secondary Controller List (CNS 15h): a line
 *                          per secondary controller, "scid S pcid P scs 0|1
 *                          vfn N nvq Q nvi I"
 *   nvme-virt DEV mgmt CNTLID ACT RT NR
 *                          Virtualization Management (opcode 1Ch): ACT 1 primary
 *                          flexible allocation, 7 offline, 8 assign, 9 online;
 *                          RT 0 queue (VQ), 1 interrupt (VI) resources; NR how
 *                          many. Prints "ok" and the completion's dword 0.
 *
 * A command the controller fails prints "status 0xSSS" (the NVMe status
 * field) and exits 1; a failed system call its step and errno (exit 1).
 * Written from the NVMe 1.4 base specification's layouts (Identify data
 * structures 5.15.2.x, Virtualization Management 5.22). Built static: the
 * guest has no loader for it beyond what vm.py copies.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define OPC_IDENTIFY 0x06
#define OPC_VIRT_MGMT 0x1c
#define CNS_PRIMARY_CAPS 0x14
#define CNS_SECONDARY_LIST 0x15

static unsigned le16(const uint8_t *p)
{
	return p[0] | (unsigned)p[1] << 8;
}

static unsigned long le32(const uint8_t *p)
{
	return le16(p) | (unsigned long)le16(p + 2) << 16;
}

static int number(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || v > max)
		return -1;
	*out = v;
	return 0;
}

/* the admin command @c; 0, or 1 with the reason printed */
static int admin(int fd, struct nvme_admin_cmd *c)
{
	int r = ioctl(fd, NVME_IOCTL_ADMIN_CMD, c);
	if (r < 0) {
		printf("failed: NVME_IOCTL_ADMIN_CMD: %s\n", strerror(errno));
		return 1;
	}
	if (r > 0) {
		printf("status 0x%03x\n", (unsigned)r & 0x7ff);
		return 1;
	}
	return 0;
}

static int identify(int fd, unsigned cns, uint8_t *buf)
{
	struct nvme_admin_cmd c;
	memset(&c, 0, sizeof(c));
	memset(buf, 0, 4096);
	c.opcode = OPC_IDENTIFY;
	c.addr = (uintptr_t)buf;
	c.data_len = 4096;
	c.cdw10 = cns; /* CNTID (bits 31:16) 0: the list from the first */
	return admin(fd, &c);
}

static int caps(int fd)
{
	static uint8_t b[4096];
	if (identify(fd, CNS_PRIMARY_CAPS, b))
		return 1;
	printf("cntlid %u\n", le16(b));
	printf("vqfrt %lu\nvqrfa %lu\nvqrfap %u\nvqprt %u\nvqfrsm %u\nvqgran %u\n",
	       le32(b + 32), le32(b + 36), le16(b + 40), le16(b + 42), le16(b + 44), le16(b + 46));
	printf("vifrt %lu\nvirfa %lu\nvirfap %u\nviprt %u\nvifrsm %u\nvigran %u\n",
	       le32(b + 64), le32(b + 68), le16(b + 72), le16(b + 74), le16(b + 76), le16(b + 78));
	return 0;
}

static int list(int fd)
{
	static uint8_t b[4096];
	if (identify(fd, CNS_SECONDARY_LIST, b))
		return 1;
	unsigned n = b[0];
	if (n > 127) /* 127 entries of 32 bytes after the 32-byte header */
		n = 127;
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *e = b + 32 + 32 * i;
		printf("scid %u pcid %u scs %u vfn %u nvq %u nvi %u\n", le16(e), le16(e + 2), e[4] & 1,
		       le16(e + 8), le16(e + 10), le16(e + 12));
	}
	return 0;
}

static int mgmt(int fd, char **argv)
{
	unsigned long cntlid, act, rt, nr;
	if (number(argv[0], 0xffff, &cntlid) || number(argv[1], 0xf, &act) ||
	    number(argv[2], 7, &rt) || number(argv[3], 0xffff, &nr)) {
		fprintf(stderr, "nvme-virt: CNTLID ACT RT NR: numbers in range\n");
		return 2;
	}
	struct nvme_admin_cmd c;
	memset(&c, 0, sizeof(c));
	c.opcode = OPC_VIRT_MGMT;
	c.cdw10 = (uint32_t)(act | rt << 8 | cntlid << 16);
	c.cdw11 = (uint32_t)nr;
	if (admin(fd, &c))
		return 1;
	printf("ok %u\n", c.result);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[2], "mgmt") == 0 ? argc != 7 : argc != 3)) {
		fprintf(stderr, "usage: nvme-virt DEV caps|list|mgmt CNTLID ACT RT NR\n");
		return 2;
	}
	int fd = open(argv[1], O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("failed: open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	int r;
	if (strcmp(argv[2], "caps") == 0)
		r = caps(fd);
	else if (strcmp(argv[2], "list") == 0)
		r = list(fd);
	else if (strcmp(argv[2], "mgmt") == 0)
		r = mgmt(fd, argv + 3);
	else {
		fprintf(stderr, "nvme-virt: no command %s\n", argv[2]);
		r = 2;
	}
	close(fd);
	return r;
}
