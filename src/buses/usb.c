/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * usb.c - the USB source: libusb-1.0 completes the records of USB devices
 * and their interfaces with descriptor values, and names them as lsusb
 * does (set_device_name()). Each value sysfs has too is the device's sysfs
 * file, byte for byte (sysfs-value.h); libusb's descriptors make it only
 * where sysfs has no such file. Strings come from sysfs (what the kernel
 * read), else from the device when it can be opened. A hotplugged device,
 * and one libusb does not list (no device node), is filled from sysfs's
 * copy of the same descriptors (scan_sysfs()), in the same formats.
 */
#include "scan/scan.h"
#include "sources.h"
#include "sysfs-value.h"
#include "uevent.h"

#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <libudev.h>
#include <libusb.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* libusb's errors as -errno, in one place */
static int usb_errno(int e)
{
	switch (e) {
	case LIBUSB_SUCCESS:
		return 0;
	case LIBUSB_ERROR_IO:
		return -EIO;
	case LIBUSB_ERROR_INVALID_PARAM:
		return -EINVAL;
	case LIBUSB_ERROR_ACCESS:
		return -EACCES;
	case LIBUSB_ERROR_NO_DEVICE:
		return -ENODEV;
	case LIBUSB_ERROR_NOT_FOUND:
		return -ENOENT;
	case LIBUSB_ERROR_BUSY:
		return -EBUSY;
	case LIBUSB_ERROR_TIMEOUT:
		return -ETIMEDOUT;
	case LIBUSB_ERROR_NO_MEM:
		return -ENOMEM;
	case LIBUSB_ERROR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	default:
		return -EIO;
	}
}

/* Copies the hwdb value @key for @modalias into @buf; NULL when there is
 * none. (Each query reuses the hwdb's list, so values are copied at once.) */
static const char *hwdb_get(struct udev_hwdb *hwdb, const char *modalias, const char *key,
			    char *buf, size_t size)
{
	struct udev_list_entry *e;
	if (!hwdb)
		return NULL;
	udev_list_entry_foreach(e, udev_hwdb_get_properties_list_entry(hwdb, modalias, 0))
		if (strcmp(udev_list_entry_get_name(e), key) == 0) {
			snprintf(buf, size, "%s", udev_list_entry_get_value(e));
			return buf;
		}
	return NULL;
}

/* The speeds libusb knows, as sysfs's "speed" file writes them. */
static const struct {
	enum libusb_speed speed;
	const char *text;
} speeds[] = {
	{ LIBUSB_SPEED_LOW, "1.5" },     { LIBUSB_SPEED_FULL, "12" },
	{ LIBUSB_SPEED_HIGH, "480" },    { LIBUSB_SPEED_SUPER, "5000" },
	{ LIBUSB_SPEED_SUPER_PLUS, "10000" },
};

static const char *speed_string(enum libusb_speed speed)
{
	for (size_t i = 0; i < sizeof(speeds) / sizeof(*speeds); i++)
		if (speeds[i].speed == speed)
			return speeds[i].text;
	return NULL;
}

static enum libusb_speed speed_parse(const char *text)
{
	for (size_t i = 0; i < sizeof(speeds) / sizeof(*speeds); i++)
		if (strcmp(speeds[i].text, text) == 0)
			return speeds[i].speed;
	return LIBUSB_SPEED_UNKNOWN;
}

/* The first @size bytes (or fewer) of the sysfs file @name of the device
 * @devpath into @buf; their count in *@ret_len. A longer file is cut, as a
 * value of the tree is. */
static int read_file(const char *devpath, const char *name, void *buf, size_t size,
		     size_t *ret_len)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "/sys%s/%s", devpath, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	/* O_NONBLOCK: a FIFO put where a sysfs file was expected must not
	 * hang the monitor */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	int r = 0;
	while (len < size) {
		ssize_t n = read(fd, (char *)buf + len, size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = -errno;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (r == 0)
		*ret_len = len;
	return r;
}

/* The sysfs attribute @name of the device @devpath, its first line, into
 * @buf (cut to @size - 1 bytes); its length, or -errno when it cannot be
 * read. */
static int read_attr(const char *devpath, const char *name, char *buf, size_t size)
{
	size_t len;
	int r = read_file(devpath, name, buf, size - 1, &len);
	if (r < 0)
		return r;
	buf[len] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return (int)strlen(buf);
}

/* lsusb's buffer for each half of a name: a longer one is cut */
#define LSUSB_PART 128

/*
 * One half of a device's name as lsusb (usbutils) gives it, into @buf: the
 * udev hwdb's @key for @modalias, else the device's own string for it as
 * sysfs has it (the file @attr of @devpath, its newline dropped, a control
 * character shown as '?'), else nothing.
 */
static void name_part(struct udev_hwdb *hwdb, const char *modalias, const char *key,
		      const char *devpath, const char *attr, char buf[LSUSB_PART])
{
	if (hwdb_get(hwdb, modalias, key, buf, LSUSB_PART))
		return;
	size_t len = 0;
	if (read_file(devpath, attr, buf, LSUSB_PART - 1, &len) < 0)
		len = 0;
	if (len && buf[len - 1] == '\n')
		len--;
	buf[len] = '\0';
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
}

/*
 * The name lsusb prints after "ID vvvv:pppp ": the vendor's and the model's
 * names from the hwdb, looked up as lsusb looks them up ("usb:vVVVV*" and
 * "usb:vVVVVpPPPP*"), the device's manufacturer and product strings (sysfs)
 * where the hwdb lacks one: "Nokia Mobile Phones N78". A half that is
 * empty leaves the other alone, where lsusb prints a blank for it ("USB
 * DISK 3.2"); with both empty, where lsusb prints nothing, the ids:
 * "Device vvvv:pppp".
 */
static int set_device_name(struct dm_record *rec, struct udev_hwdb *hwdb,
			   const struct libusb_device_descriptor *dd)
{
	char key[64], vendor[LSUSB_PART], model[LSUSB_PART], name[2 * LSUSB_PART];
	snprintf(key, sizeof(key), "usb:v%04X*", dd->idVendor);
	name_part(hwdb, key, "ID_VENDOR_FROM_DATABASE", rec->devpath, "manufacturer", vendor);
	snprintf(key, sizeof(key), "usb:v%04Xp%04X*", dd->idVendor, dd->idProduct);
	name_part(hwdb, key, "ID_MODEL_FROM_DATABASE", rec->devpath, "product", model);
	if (*vendor || *model)
		snprintf(name, sizeof(name), "%s%s%s", vendor, *vendor && *model ? " " : "", model);
	else
		snprintf(name, sizeof(name), "Device %04x:%04x", dd->idVendor, dd->idProduct);
	return dm_record_set(rec, "name", name);
}

/* A string read from the device through libusb: one line, cut to fit
 * (uevent.h). */
static int set_string(struct dm_record *rec, const char *name, const char *value)
{
	char buf[DM_ATTR_MAX];
	dm_uevent_device_string(buf, sizeof(buf), value);
	return dm_record_set(rec, name, buf);
}

/* The sysfs directory of the device or interface @rec, into @buf. */
static const char *sysfs_dir(const struct dm_record *rec, char *buf, size_t size)
{
	return snprintf(buf, size, "/sys%s", rec->devpath) < (int)size ? buf : NULL;
}

/*
 * The values only sysfs has (the hub's port count, the configuration's
 * string) and the strings, as sysfs has them: what the kernel read at
 * enumeration, and reading it wakes nothing. A string the device has
 * (its index in @dd) and sysfs has no file for is read from the device
 * @dev (NULL: not at all), since opening a device resumes it from runtime
 * suspend; the device's file, where sysfs has one, is never replaced by
 * what libusb reads. A string that runs over lines is its first line
 * (sysfs-value.h).
 */
static int set_strings(struct dm_record *rec, const char *dir, libusb_device *dev,
		       const struct libusb_device_descriptor *dd)
{
	if (dm_sysfs_value_set(rec, dir, "maxchild", 0) < 0 ||
	    dm_sysfs_value_set(rec, dir, "configuration", DM_SYSFS_VALUE_DEVICE_STRING) < 0)
		return -ENOMEM;
	const struct {
		const char *name;
		uint8_t index;
	} strings[] = {
		{ "manufacturer", dd->iManufacturer },
		{ "product", dd->iProduct },
		{ "serial", dd->iSerialNumber },
	};
	bool missing[sizeof(strings) / sizeof(strings[0])], any = false;
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		int has = dm_sysfs_value_set(rec, dir, strings[i].name, DM_SYSFS_VALUE_DEVICE_STRING);
		if (has < 0)
			return has;
		missing[i] = !has && strings[i].index;
		any |= missing[i];
	}
	libusb_device_handle *h;
	if (!any || !dev || libusb_open(dev, &h) != 0)
		return 0;
	int r = 0;
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		unsigned char buf[256];
		if (!missing[i])
			continue;
		int n = libusb_get_string_descriptor_ascii(h, strings[i].index, buf, sizeof(buf));
		if (n > 0)
			r |= set_string(rec, strings[i].name, (const char *)buf);
	}
	libusb_close(h);
	return r ? -ENOMEM : 0;
}

/* The record of one interface of the device @devname in its configuration
 * @config, from the interface's first altsetting @id (sysfs shows that one
 * until a driver changes it, and so does libusb without opening the
 * device). An interface sysfs does not have (not configured) is skipped. */
static int fill_interface(struct dm_scan *s, const char *devname, struct udev_hwdb *hwdb,
			  uint8_t config, const struct libusb_interface_descriptor *id)
{
	/* a root hub "usbN" names its interfaces "N-0:C.I" */
	char name[128];
	if (strncmp(devname, "usb", 3) == 0)
		snprintf(name, sizeof(name), "%s-0:%d.%d", devname + 3, config, id->bInterfaceNumber);
	else
		snprintf(name, sizeof(name), "%s:%d.%d", devname, config, id->bInterfaceNumber);
	struct dm_record *rec = dm_scan_find_by_name(s, "usb", name);
	if (!rec)
		return 0;
	char dbuf[PATH_MAX], alt[8];
	const char *dir = sysfs_dir(rec, dbuf, sizeof(dbuf));
	int r = dm_sysfs_value_setf(rec, dir, "bInterfaceNumber", "%02x", id->bInterfaceNumber);
	r |= dm_sysfs_value_setf(rec, dir, "bAlternateSetting", "%2d", id->bAlternateSetting);
	r |= dm_sysfs_value_setf(rec, dir, "bInterfaceClass", "%02x", id->bInterfaceClass);
	r |= dm_sysfs_value_setf(rec, dir, "bInterfaceSubClass", "%02x", id->bInterfaceSubClass);
	r |= dm_sysfs_value_setf(rec, dir, "bInterfaceProtocol", "%02x", id->bInterfaceProtocol);
	r |= dm_sysfs_value_setf(rec, dir, "bNumEndpoints", "%02x", id->bNumEndpoints);
	/* driverfsd's own: the altsetting it was read from */
	snprintf(alt, sizeof(alt), "%d", id->bAlternateSetting);
	r |= dm_record_set(rec, "altsetting", alt);
	char key[128];
	/* the class names lsusb -v prints, from the same database */
	char cbuf[128], pbuf[128], label[300];
	snprintf(key, sizeof(key), "usb:v*p*d*dc%02X*", id->bInterfaceClass);
	const char *cls = hwdb_get(hwdb, key, "ID_USB_CLASS_FROM_DATABASE", cbuf, sizeof(cbuf));
	snprintf(key, sizeof(key), "usb:v*p*d*dc%02Xdsc%02Xdp%02X*", id->bInterfaceClass,
		 id->bInterfaceSubClass, id->bInterfaceProtocol);
	const char *proto = hwdb_get(hwdb, key, "ID_USB_PROTOCOL_FROM_DATABASE", pbuf, sizeof(pbuf));
	if (cls && proto)
		snprintf(label, sizeof(label), "%s (%s)", cls, proto);
	else if (cls)
		snprintf(label, sizeof(label), "%s", cls);
	else
		snprintf(label, sizeof(label), "Interface %d class %02x", id->bInterfaceNumber,
			 id->bInterfaceClass);
	r |= dm_record_set(rec, "name", label);
	if (!rec->bus)
		r |= dm_record_set_string(&rec->bus, "usb");
	return r ? -ENOMEM : 0;
}

/* The device's values from its descriptor, address and speed, its strings
 * (set_strings(): @dev may be NULL) and its name. */
static int set_device(struct dm_record *rec, struct udev_hwdb *hwdb, libusb_device *dev,
		      const struct libusb_device_descriptor *dd, int busnum, int devnum,
		      enum libusb_speed speed)
{
	char dbuf[PATH_MAX];
	const char *dir = sysfs_dir(rec, dbuf, sizeof(dbuf));
	int r = dm_sysfs_value_setf(rec, dir, "idVendor", "%04x", dd->idVendor);
	r |= dm_sysfs_value_setf(rec, dir, "idProduct", "%04x", dd->idProduct);
	r |= dm_sysfs_value_setf(rec, dir, "bcdDevice", "%04x", dd->bcdDevice);
	r |= dm_sysfs_value_setf(rec, dir, "version", "%2x.%02x", dd->bcdUSB >> 8, dd->bcdUSB & 0xff);
	r |= dm_sysfs_value_setf(rec, dir, "bDeviceClass", "%02x", dd->bDeviceClass);
	r |= dm_sysfs_value_setf(rec, dir, "bDeviceSubClass", "%02x", dd->bDeviceSubClass);
	r |= dm_sysfs_value_setf(rec, dir, "bDeviceProtocol", "%02x", dd->bDeviceProtocol);
	r |= dm_sysfs_value_setf(rec, dir, "bMaxPacketSize0", "%d", dd->bMaxPacketSize0);
	r |= dm_sysfs_value_setf(rec, dir, "bNumConfigurations", "%d", dd->bNumConfigurations);
	r |= dm_sysfs_value_setf(rec, dir, "busnum", "%d", busnum);
	r |= dm_sysfs_value_setf(rec, dir, "devnum", "%d", devnum);
	const char *sp = speed_string(speed);
	r |= sp ? dm_sysfs_value_setf(rec, dir, "speed", "%s", sp)
		: dm_sysfs_value_set(rec, dir, "speed", 0) < 0;
	if (!rec->bus)
		r |= dm_record_set_string(&rec->bus, "usb");
	r |= set_device_name(rec, hwdb, dd);
	if (r == 0)
		r = set_strings(rec, dir, dev, dd);
	return r ? -ENOMEM : 0;
}

/* The device's values from its active configuration's descriptor. */
static int set_config(struct dm_record *rec, const struct libusb_config_descriptor *cfg,
		      enum libusb_speed speed)
{
	char dbuf[PATH_MAX];
	const char *dir = sysfs_dir(rec, dbuf, sizeof(dbuf));
	int r = dm_sysfs_value_setf(rec, dir, "bConfigurationValue", "%d", cfg->bConfigurationValue);
	r |= dm_sysfs_value_setf(rec, dir, "bNumInterfaces", "%2d", cfg->bNumInterfaces);
	r |= dm_sysfs_value_setf(rec, dir, "bmAttributes", "%2x", cfg->bmAttributes);
	/* bMaxPower counts 2 mA units, 8 mA from SuperSpeed on (sysfs's own
	 * text pads it on older kernels: "  2mA") */
	r |= dm_sysfs_value_setf(rec, dir, "bMaxPower", "%dmA",
				 cfg->MaxPower * (speed >= LIBUSB_SPEED_SUPER ? 8 : 2));
	return r ? -ENOMEM : 0;
}

/* The records of the device @dev and its interfaces, from libusb; the
 * device's record goes into @filled (by devpath). */
static int fill_device(struct dm_scan *s, struct udev_hwdb *hwdb, struct dm_hashmap *filled,
		       libusb_device *dev)
{
	struct libusb_device_descriptor dd;
	int r = usb_errno(libusb_get_device_descriptor(dev, &dd));
	if (r < 0)
		return r;

	/* the sysfs name: "usb<bus>" for a root hub, "<bus>-<port>.<port>..." */
	uint8_t ports[8];
	int n = libusb_get_port_numbers(dev, ports, sizeof(ports));
	char name[64];
	int len = n > 0 ? snprintf(name, sizeof(name), "%d-", libusb_get_bus_number(dev))
			: snprintf(name, sizeof(name), "usb%d", libusb_get_bus_number(dev));
	for (int i = 0; i < n && len < (int)sizeof(name); i++)
		len += snprintf(name + len, sizeof(name) - len, "%s%d", i ? "." : "", ports[i]);
	struct dm_record *rec = dm_scan_find_by_name(s, "usb", name);
	if (!rec) {
		log_warn("usb %s: no sysfs record for it; skipped", name);
		return 0;
	}

	r = dm_hashmap_put(filled, rec->devpath, rec);
	if (r == -ENOMEM)
		return r;
	enum libusb_speed speed = (enum libusb_speed)libusb_get_device_speed(dev);
	r = set_device(rec, hwdb, dev, &dd, libusb_get_bus_number(dev),
		       libusb_get_device_address(dev), speed);
	struct libusb_config_descriptor *cfg;
	if (r < 0 || libusb_get_active_config_descriptor(dev, &cfg) != 0)
		return r;
	r = set_config(rec, cfg, speed);
	for (int i = 0; r == 0 && i < cfg->bNumInterfaces; i++)
		if (cfg->interface[i].num_altsetting > 0)
			r = fill_interface(s, name, hwdb, cfg->bConfigurationValue,
					   &cfg->interface[i].altsetting[0]);
	libusb_free_config_descriptor(cfg);
	return r;
}

/* Logs why libusb's @call failed, in libusb's words (its own messages are
 * off unless LIBUSB_DEBUG asks for them), and returns it as -errno. */
static int usb_fail(const char *call, int e)
{
	log_err("usb: %s: %s (%s); USB devices have only what sysfs shows%s", call,
		libusb_strerror(e), libusb_error_name(e),
		getenv("LIBUSB_DEBUG") ? "" : " (LIBUSB_DEBUG=1 prints libusb's own reasons)");
	return usb_errno(e);
}

/* Every device libusb enumerates, in a context of this scan's own: a
 * rescan after lost events must not ask a context that may have lost the
 * same events. The devices' records go into @filled. */
static int scan_libusb(struct dm_scan *s, struct udev_hwdb *hwdb, struct dm_hashmap *filled)
{
	libusb_context *ctx;
	int e = libusb_init(&ctx);
	if (e < 0)
		return usb_fail("libusb_init", e);
	int r = 0;
	libusb_set_option(ctx, LIBUSB_OPTION_LOG_LEVEL, LIBUSB_LOG_LEVEL_NONE);
	libusb_device **list;
	ssize_t n = libusb_get_device_list(ctx, &list);
	if (n < 0) {
		r = usb_fail("libusb_get_device_list", (int)n);
		goto out;
	}
	for (ssize_t i = 0; i < n; i++) {
		r = fill_device(s, hwdb, filled, list[i]);
		if (r == -ENOMEM)
			break;
		if (r < 0)
			log_warn("usb %d.%d: %s", libusb_get_bus_number(list[i]),
				 libusb_get_device_address(list[i]), strerror(-r));
		r = 0;
	}
	libusb_free_device_list(list, 1);
out:
	libusb_exit(ctx);
	return r;
}

/*
 * sysfs's "descriptors" file: the device descriptor, then the descriptors of
 * each configuration (wTotalLength bytes each) as the kernel read them from
 * the device, little-endian. libusb's Linux backend reads the same file.
 */
#define DESCRIPTORS_MAX 65536
/* libusb's limit too */
#define INTERFACES_MAX 32

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static int parse_device_descriptor(const uint8_t *p, size_t len,
				   struct libusb_device_descriptor *dd)
{
	if (len < LIBUSB_DT_DEVICE_SIZE || p[1] != LIBUSB_DT_DEVICE)
		return -EBADMSG;
	*dd = (struct libusb_device_descriptor){
		.bLength = p[0],
		.bDescriptorType = p[1],
		.bcdUSB = le16(p + 2),
		.bDeviceClass = p[4],
		.bDeviceSubClass = p[5],
		.bDeviceProtocol = p[6],
		.bMaxPacketSize0 = p[7],
		.idVendor = le16(p + 8),
		.idProduct = le16(p + 10),
		.bcdDevice = le16(p + 12),
		.iManufacturer = p[14],
		.iProduct = p[15],
		.iSerialNumber = p[16],
		.bNumConfigurations = p[17],
	};
	return 0;
}

/* The descriptors of the configuration whose value is @value (its header
 * into @cfg, with no interfaces), or NULL. */
static const uint8_t *find_config(const uint8_t *p, size_t len, uint8_t value,
				  struct libusb_config_descriptor *cfg, size_t *ret_len)
{
	for (size_t off = LIBUSB_DT_DEVICE_SIZE; off + LIBUSB_DT_CONFIG_SIZE <= len;) {
		const uint8_t *c = p + off;
		size_t total = le16(c + 2);
		if (c[1] != LIBUSB_DT_CONFIG || total < LIBUSB_DT_CONFIG_SIZE || total > len - off)
			return NULL;
		if (c[5] == value) {
			*cfg = (struct libusb_config_descriptor){
				.bLength = c[0],
				.bDescriptorType = c[1],
				.wTotalLength = (uint16_t)total,
				.bNumInterfaces = c[4],
				.bConfigurationValue = c[5],
				.iConfiguration = c[6],
				.bmAttributes = c[7],
				.MaxPower = c[8],
			};
			*ret_len = total;
			return c;
		}
		off += total;
	}
	return NULL;
}

/* The first altsetting of each interface of a configuration, in the order
 * libusb lists them: a run of interface descriptors with one number is one
 * interface's altsettings. Returns how many. */
static size_t parse_interfaces(const uint8_t *c, size_t len, size_t max,
			       struct libusb_interface_descriptor *ids)
{
	size_t n = 0;
	for (size_t off = c[0]; off + 2 <= len && c[off] >= 2 && c[off] <= len - off;
	     off += c[off]) {
		const uint8_t *d = c + off;
		if (d[1] != LIBUSB_DT_INTERFACE || d[0] < LIBUSB_DT_INTERFACE_SIZE ||
		    (n && ids[n - 1].bInterfaceNumber == d[2]))
			continue;
		if (n == max)
			break;
		ids[n++] = (struct libusb_interface_descriptor){
			.bLength = d[0],
			.bDescriptorType = d[1],
			.bInterfaceNumber = d[2],
			.bAlternateSetting = d[3],
			.bNumEndpoints = d[4],
			.bInterfaceClass = d[5],
			.bInterfaceSubClass = d[6],
			.bInterfaceProtocol = d[7],
			.iInterface = d[8],
		};
	}
	return n;
}

/* The USB device @devpath: its record @rec (NULL: the model has it, only
 * its interfaces' records are filled) and its interfaces' records, from
 * sysfs. */
static int fill_device_sysfs(struct dm_scan *s, struct udev_hwdb *hwdb, const char *devpath,
			     struct dm_record *rec, uint8_t *buf)
{
	size_t len = 0;
	struct libusb_device_descriptor dd;
	int r = read_file(devpath, "descriptors", buf, DESCRIPTORS_MAX, &len);
	if (r == 0)
		r = parse_device_descriptor(buf, len, &dd);
	if (r < 0)
		return r;
	char speed[16], value[16];
	enum libusb_speed sp = read_attr(devpath, "speed", speed, sizeof(speed)) >= 0
				       ? speed_parse(speed) : LIBUSB_SPEED_UNKNOWN;
	if (rec) {
		char busnum[16], devnum[16];
		if (read_attr(devpath, "busnum", busnum, sizeof(busnum)) < 0 ||
		    read_attr(devpath, "devnum", devnum, sizeof(devnum)) < 0)
			return -ENODATA;
		r = set_device(rec, hwdb, NULL, &dd, atoi(busnum), atoi(devnum), sp);
	}
	/* the active configuration (none: the device is not configured) */
	struct libusb_config_descriptor cfg;
	const uint8_t *c;
	size_t clen;
	if (r < 0 || read_attr(devpath, "bConfigurationValue", value, sizeof(value)) <= 0 ||
	    !(c = find_config(buf, len, (uint8_t)atoi(value), &cfg, &clen)))
		return r;
	if (rec)
		r = set_config(rec, &cfg, sp);
	struct libusb_interface_descriptor ids[INTERFACES_MAX];
	size_t n = parse_interfaces(c, clen, cfg.bNumInterfaces < INTERFACES_MAX
						     ? cfg.bNumInterfaces : INTERFACES_MAX, ids);
	const char *name = strrchr(devpath, '/') + 1;
	for (size_t i = 0; r == 0 && i < n; i++)
		r = fill_interface(s, name, hwdb, cfg.bConfigurationValue, &ids[i]);
	return r;
}

/*
 * Hotplug: the devices an event brought, from sysfs alone; in a full scan,
 * the devices libusb did not list (@filled: those it did, by devpath), such
 * as one without a device node, which would otherwise have the kernel's
 * names and no values of the source's. The kernel shows there the
 * descriptors libusb's Linux backend reads (and busnum, devnum, speed,
 * bConfigurationValue), so the values are the ones a full scan gets from
 * libusb, without a libusb context per run of events, whose set-up (an
 * enumeration of the whole bus, a udev monitor and a thread) was the main
 * cost of a burst, and whose own monitor socket may hear an event later
 * than the daemon's. What is lost: a string the device has and sysfs does
 * not show is not read from the device (the full scan opens it).
 */
static int scan_sysfs(struct dm_scan *s, struct udev_hwdb *hwdb, const struct dm_hashmap *filled)
{
	uint8_t *buf = malloc(DESCRIPTORS_MAX);
	if (!buf)
		return -ENOMEM;
	int r = 0;
	const char *done = NULL; /* the device last read for its interfaces */
	for (size_t i = 0; i < s->n && r != -ENOMEM; i++) {
		struct dm_record *rec = s->recs[i];
		if (rec->known || !rec->subsystem || strcmp(rec->subsystem, "usb") != 0 ||
		    dm_hashmap_get(filled, rec->devpath))
			continue;
		/* sysfs names interfaces "<device>:<config>.<number>"; a new
		 * device brings its interfaces along, a new interface of a
		 * device the model has is read from that device */
		const char *devpath = rec->devpath;
		if (strchr(rec->name, ':')) {
			struct dm_record *dev = rec->parent ? dm_scan_find(s, rec->parent) : NULL;
			if (!rec->parent || (dev && !dev->known) || (done && strcmp(done, rec->parent) == 0))
				continue;
			devpath = rec->parent;
			rec = NULL;
		}
		r = fill_device_sysfs(s, hwdb, devpath, rec, buf);
		if (r < 0 && r != -ENOMEM) {
			log_warn("usb %s: %s", devpath, strerror(-r));
			r = 0;
		}
		done = devpath;
	}
	free(buf);
	return r;
}

static int usb_scan(struct dm_scan *s)
{
	struct udev_hwdb *kept = s->cache ? s->cache->hwdb : NULL;
	struct udev *udev = kept ? NULL : udev_new();
	struct udev_hwdb *hwdb = kept ? udev_hwdb_ref(kept) : udev ? udev_hwdb_new(udev) : NULL;
	if (!hwdb && !s->partial)
		log_warn("usb: no udev hwdb: devices are named by their own strings or ids");
	struct dm_hashmap filled;
	dm_hashmap_init(&filled, dm_hash_string, dm_cmp_string);
	/* a failing libusb leaves every device to sysfs; its error is still
	 * the source's answer */
	int r = s->partial ? 0 : scan_libusb(s, hwdb, &filled);
	if (r != -ENOMEM) {
		int rs = scan_sysfs(s, hwdb, &filled);
		r = rs < 0 ? rs : r;
	}
	dm_hashmap_done(&filled);
	udev_hwdb_unref(hwdb);
	udev_unref(udev);
	return r;
}

const struct dm_source_ops dm_source_usb = {
	.name = "usb",
	.fills = "usb",
	.scan = usb_scan,
};
