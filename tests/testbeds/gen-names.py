#!/usr/bin/python3
"""Generate names.umockdev: a machine whose devices are named like the files
driverfsd adds, as real machines' are (docs/design.md §6.2: the kernel's
names come first).

- At the top of /sys/devices, perf PMUs (bus event_source) called `power`
  (the RAPL PMU of every x86 machine: /sys/devices/power), `name`,
  `power_log`, `power_error`, `metrics` and `bindings`, beside the usual
  `platform`, `system` and `virtual`: the whole system's files are at the
  top of the mount, so root/ holds these devices and nothing else.
- Below the platform device `soc`, platform devices named like a device's
  own files and directories (`name`, `binding`, `power_error`, `power_log`,
  `pm`, `suppliers`, `consumers`, `devpath`, `kernel_driver`, `devnode`);
  `binding` has a child of its own (a misc class device lifted out of its
  `misc/` glue, also called `binding`) and every one has its bus link.
- Kernel attributes named like driverfsd's files: `soc/name` is a hwmon-like
  device with a `name` attribute and a `power_error` attribute.
- /devices/virtual/vtconsole/vtcon0 with its `bind` (readable, 1) and
  `name`, which driverfsd must not hide.

`/sys/devices/power` and the event_source PMUs are as Linux registers them
(perf_pmu_register(): a `type`, `perf_event_mux_interval_ms`, `cpumask`,
`format/` and `events/`); the RAPL PMU's events are those of an Intel laptop.
No machine was recorded; the names are the point.

Run:  /usr/bin/python3 gen-names.py > names.umockdev
      /usr/bin/python3 gen-names.py --expected > names.expected
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tbgen import Testbed, platform_device, virtual_device  # noqa: E402

# the PMUs at the top, by registration order: name -> perf type
PMUS = [("power", 24), ("name", 25), ("power_log", 26), ("power_error", 27),
        ("metrics", 28), ("bindings", 29)]
# platform devices below soc, named like a device's own files of driverfsd's
BELOW = ["name", "binding", "power_error", "power_log", "pm", "suppliers", "consumers",
         "devpath", "kernel_driver", "devnode"]


def pmu(tb, name, ptype, rapl=False):
    d = tb.dev("/devices/" + name, "event_source")
    d.a("type", "%d\n" % ptype)
    d.a("perf_event_mux_interval_ms", "1\n")
    d.a("cpumask", "0\n")
    d.a("power/control", "auto\n")
    d.a("power/runtime_status", "unsupported\n")
    if rapl:
        d.a("format/event", "config:0-7\n")
        for ev, code in (("energy-cores", 1), ("energy-pkg", 2), ("energy-ram", 3),
                         ("energy-gpu", 4), ("energy-psys", 5)):
            d.a("events/" + ev, "event=0x%02x\n" % code)
            d.a("events/%s.unit" % ev, "Joules\n")
            d.a("events/%s.scale" % ev, "2.3283064365386962890625e-10\n")
    else:
        d.a("format/event", "config:0-15\n")
    return d


def main():
    tb = Testbed(cpus_mask="f", cpus_list="0-3")
    for name, ptype in PMUS:
        pmu(tb, name, ptype, rapl=name == "power")

    soc = platform_device(tb, "soc", driver="simple-pm-bus", modalias="of:NsocT(null)Csimple-bus")
    for name in BELOW:
        extra = {}
        if name == "name":
            # a hwmon-like device: the kernel's own name and power_error files
            extra = {"name": "soc-hwmon\n", "power_error": "0\n"}
        platform_device(tb, name, parent=soc.path, extra=extra)
    # a child of soc/binding, in misc/ glue: the tree shows it as soc/binding/binding
    virt = tb.dev(soc.path + "/binding/misc/binding", "misc", major=10, minor=120,
                  devname="binding")
    virt.a("name", "binding\n")

    vt = virtual_device(tb, "vtconsole", "vtcon0", extra={"bind": "1\n",
                                                         "name": "(S) dummy device\n"})
    vt.a("power/control", "auto\n")
    tb.write()


if __name__ == "__main__":
    main()
