/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * usb.c - the USB source: libusb-1.0 completes the records of USB devices
 * and their interfaces with descriptor values, and names them from the udev
 * hwdb (the usb.ids data), as lsusb does. Strings come from the device when
 * it can be opened, else from the values sysfs showed (the udev source read
 * them).
 */
#include "scan.h"
#include "uevent.h"

#include "log.h"

#include <errno.h>
#include <libudev.h>
#include <libusb.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int set_fmt(struct dm_record *rec, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int set_fmt(struct dm_record *rec, const char *name, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return dm_record_set(rec, name, buf);
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

/* "Vendor Product" as lsusb prints it; ids where the database has no name. */
static int set_device_name(struct dm_record *rec, struct udev_hwdb *hwdb,
			   const struct libusb_device_descriptor *dd)
{
	char key[64], vbuf[256], mbuf[256], name[600];
	snprintf(key, sizeof(key), "usb:v%04Xp%04X", dd->idVendor, dd->idProduct);
	const char *vendor = hwdb_get(hwdb, key, "ID_VENDOR_FROM_DATABASE", vbuf, sizeof(vbuf));
	const char *model = hwdb_get(hwdb, key, "ID_MODEL_FROM_DATABASE", mbuf, sizeof(mbuf));
	if (vendor && model)
		snprintf(name, sizeof(name), "%s %s", vendor, model);
	else if (vendor)
		snprintf(name, sizeof(name), "%s Device %04x", vendor, dd->idProduct);
	else
		snprintf(name, sizeof(name), "Device %04x:%04x", dd->idVendor, dd->idProduct);
	return dm_record_set(rec, "name", name);
}

static const char *speed_string(int speed)
{
	switch (speed) {
	case LIBUSB_SPEED_LOW:
		return "1.5";
	case LIBUSB_SPEED_FULL:
		return "12";
	case LIBUSB_SPEED_HIGH:
		return "480";
	case LIBUSB_SPEED_SUPER:
		return "5000";
	case LIBUSB_SPEED_SUPER_PLUS:
		return "10000";
	default:
		return NULL;
	}
}

/* A string the device reports, whichever way it came (sysfs or libusb):
 * one line, cut to fit (uevent.h). */
static int set_string(struct dm_record *rec, const char *name, const char *value)
{
	char buf[DM_ATTR_MAX];
	dm_uevent_device_string(buf, sizeof(buf), value);
	return dm_record_set(rec, name, buf);
}

/* Values only sysfs has without opening the device (the hub's port count,
 * the configuration's string), and, with @strings, the string descriptors
 * the kernel read. */
static int set_from_sysfs(struct dm_record *rec, struct udev *udev, bool strings)
{
	static const char *const always[] = { "maxchild", "configuration", NULL };
	static const char *const fallback[] = { "manufacturer", "product", "serial", NULL };
	char syspath[4096];
	snprintf(syspath, sizeof(syspath), "/sys%s", rec->devpath);
	struct udev_device *d = udev ? udev_device_new_from_syspath(udev, syspath) : NULL;
	if (!d)
		return 0;
	int r = 0;
	for (int pass = 0; pass < (strings ? 2 : 1); pass++)
		for (const char *const *k = pass ? fallback : always; *k; k++) {
			const char *v = udev_device_get_sysattr_value(d, *k);
			if (!v)
				continue;
			r |= set_string(rec, *k, v);
		}
	udev_device_unref(d);
	return r ? -ENOMEM : 0;
}

/*
 * The strings: sysfs has what the kernel read at enumeration, and reading it
 * wakes nothing. The device is opened only for a string it has and sysfs
 * does not show, since opening a device resumes it from runtime suspend.
 */
static int set_strings(struct dm_record *rec, struct udev *udev, libusb_device *dev,
		       const struct libusb_device_descriptor *dd)
{
	int r = set_from_sysfs(rec, udev, true);
	if (r < 0)
		return r;
	const struct {
		const char *name;
		uint8_t index;
	} strings[] = {
		{ "manufacturer", dd->iManufacturer },
		{ "product", dd->iProduct },
		{ "serial", dd->iSerialNumber },
	};
	bool missing = false;
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
		missing |= strings[i].index && !dm_record_get(rec, strings[i].name);
	libusb_device_handle *h;
	if (!missing || libusb_open(dev, &h) != 0)
		return 0;
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		unsigned char buf[256];
		if (!strings[i].index || dm_record_get(rec, strings[i].name))
			continue;
		int n = libusb_get_string_descriptor_ascii(h, strings[i].index, buf, sizeof(buf));
		if (n > 0)
			r |= set_string(rec, strings[i].name, (const char *)buf);
	}
	libusb_close(h);
	return r ? -ENOMEM : 0;
}

static int fill_interfaces(struct dm_scan *s, const char *devname, struct udev_hwdb *hwdb,
			   const struct libusb_config_descriptor *cfg)
{
	int r = 0;
	for (int i = 0; i < cfg->bNumInterfaces; i++) {
		const struct libusb_interface *intf = &cfg->interface[i];
		if (intf->num_altsetting < 1)
			continue;
		/* the current altsetting; sysfs shows the first until a driver
		 * changes it, and so does libusb without opening the device */
		const struct libusb_interface_descriptor *id = &intf->altsetting[0];
		/* a root hub "usbN" names its interfaces "N-0:C.I" */
		char name[128];
		if (strncmp(devname, "usb", 3) == 0)
			snprintf(name, sizeof(name), "%s-0:%d.%d", devname + 3,
				 cfg->bConfigurationValue, id->bInterfaceNumber);
		else
			snprintf(name, sizeof(name), "%s:%d.%d", devname, cfg->bConfigurationValue,
				 id->bInterfaceNumber);
		struct dm_record *rec = dm_scan_find_by_name(s, "usb", name);
		if (!rec)
			continue; /* not in sysfs: not configured */
		r |= set_fmt(rec, "bInterfaceNumber", "%02x", id->bInterfaceNumber);
		r |= set_fmt(rec, "bAlternateSetting", "%2d", id->bAlternateSetting);
		r |= set_fmt(rec, "altsetting", "%d", id->bAlternateSetting);
		r |= set_fmt(rec, "bInterfaceClass", "%02x", id->bInterfaceClass);
		r |= set_fmt(rec, "bInterfaceSubClass", "%02x", id->bInterfaceSubClass);
		r |= set_fmt(rec, "bInterfaceProtocol", "%02x", id->bInterfaceProtocol);
		r |= set_fmt(rec, "bNumEndpoints", "%02x", id->bNumEndpoints);
		char key[128];
		/* the class names lsusb -v prints, from the same database */
		char cbuf[128], pbuf[128], label[300];
		snprintf(key, sizeof(key), "usb:v*p*d*dc%02X*", id->bInterfaceClass);
		const char *cls = hwdb_get(hwdb, key, "ID_USB_CLASS_FROM_DATABASE", cbuf, sizeof(cbuf));
		snprintf(key, sizeof(key), "usb:v*p*d*dc%02Xdsc%02Xdp%02X*", id->bInterfaceClass,
			 id->bInterfaceSubClass, id->bInterfaceProtocol);
		const char *proto =
			hwdb_get(hwdb, key, "ID_USB_PROTOCOL_FROM_DATABASE", pbuf, sizeof(pbuf));
		if (cls && proto)
			snprintf(label, sizeof(label), "%s (%s)", cls, proto);
		else if (cls)
			snprintf(label, sizeof(label), "%s", cls);
		else
			snprintf(label, sizeof(label), "Interface %d class %02x",
				 id->bInterfaceNumber, id->bInterfaceClass);
		r |= dm_record_set(rec, "name", label);
		if (!rec->bus)
			r |= dm_record_set_string(&rec->bus, "usb");
	}
	return r ? -ENOMEM : 0;
}

static int fill_device(struct dm_scan *s, struct udev *udev, struct udev_hwdb *hwdb,
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
		if (!s->partial)
			log_warn("usb %s: no sysfs record for it; skipped", name);
		return 0;
	}

	r = set_fmt(rec, "idVendor", "%04x", dd.idVendor);
	r |= set_fmt(rec, "idProduct", "%04x", dd.idProduct);
	r |= set_fmt(rec, "bcdDevice", "%04x", dd.bcdDevice);
	r |= set_fmt(rec, "version", "%2x.%02x", dd.bcdUSB >> 8, dd.bcdUSB & 0xff);
	r |= set_fmt(rec, "bDeviceClass", "%02x", dd.bDeviceClass);
	r |= set_fmt(rec, "bDeviceSubClass", "%02x", dd.bDeviceSubClass);
	r |= set_fmt(rec, "bDeviceProtocol", "%02x", dd.bDeviceProtocol);
	r |= set_fmt(rec, "bMaxPacketSize0", "%d", dd.bMaxPacketSize0);
	r |= set_fmt(rec, "bNumConfigurations", "%d", dd.bNumConfigurations);
	r |= set_fmt(rec, "busnum", "%d", libusb_get_bus_number(dev));
	r |= set_fmt(rec, "devnum", "%d", libusb_get_device_address(dev));
	const char *speed = speed_string(libusb_get_device_speed(dev));
	if (speed)
		r |= dm_record_set(rec, "speed", speed);
	if (!rec->bus)
		r |= dm_record_set_string(&rec->bus, "usb");
	r |= set_device_name(rec, hwdb, &dd);
	if (r)
		return -ENOMEM;
	r = set_strings(rec, udev, dev, &dd);
	if (r < 0)
		return r;

	struct libusb_config_descriptor *cfg;
	if (libusb_get_active_config_descriptor(dev, &cfg) == 0) {
		r = set_fmt(rec, "bConfigurationValue", "%d", cfg->bConfigurationValue);
		r |= set_fmt(rec, "bNumInterfaces", "%2d", cfg->bNumInterfaces);
		r |= set_fmt(rec, "bmAttributes", "%2x", cfg->bmAttributes);
		/* bMaxPower counts 2 mA units, 8 mA from SuperSpeed on */
		r |= set_fmt(rec, "bMaxPower", "%dmA",
			     cfg->MaxPower * (libusb_get_device_speed(dev) >= LIBUSB_SPEED_SUPER ? 8 : 2));
		if (r == 0)
			r = fill_interfaces(s, name, hwdb, cfg);
		else
			r = -ENOMEM;
		libusb_free_config_descriptor(cfg);
	}
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

static int usb_scan(struct dm_scan *s)
{
	libusb_context *ctx;
	int e = libusb_init(&ctx);
	if (e < 0)
		return usb_fail("libusb_init", e);
	int r = 0;
	libusb_set_option(ctx, LIBUSB_OPTION_LOG_LEVEL, LIBUSB_LOG_LEVEL_NONE);
	struct udev *udev = udev_new();
	struct udev_hwdb *hwdb = udev ? udev_hwdb_new(udev) : NULL;
	if (!hwdb)
		log_warn("usb: no udev hwdb: devices are named by their ids");

	libusb_device **list;
	ssize_t n = libusb_get_device_list(ctx, &list);
	if (n < 0) {
		r = usb_fail("libusb_get_device_list", (int)n);
		goto out;
	}
	for (ssize_t i = 0; i < n; i++) {
		r = fill_device(s, udev, hwdb, list[i]);
		if (r == -ENOMEM)
			break;
		if (r < 0)
			log_warn("usb %d.%d: %s", libusb_get_bus_number(list[i]),
				 libusb_get_device_address(list[i]), strerror(-r));
		r = 0;
	}
	libusb_free_device_list(list, 1);
out:
	udev_hwdb_unref(hwdb);
	udev_unref(udev);
	libusb_exit(ctx);
	return r;
}

const struct dm_source_ops dm_source_usb = {
	.name = "usb",
	.fills = "usb",
	.scan = usb_scan,
};
