#!/usr/bin/python3
"""Generate arm-board.umockdev: an ARM single-board computer shaped like a
Rockchip RK3399 board (ROCKPro64-like), platform devices from its device
tree, and the device links fw_devlink makes from their clocks, resets,
pinctrl, regulator, power-domain, iommu and phy references: consumers in
other subtrees than their suppliers (the MMC controllers depend on the
PMIC behind an I2C controller), one link that serves sync_state() only,
and one that is dormant (its supplier has no driver yet).

Run:  /usr/bin/python3 gen-arm-board.py > arm-board.umockdev
      /usr/bin/python3 gen-arm-board.py --expected > arm-board.expected
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tbgen import Testbed, bind, devlink, platform_device  # noqa: E402

# name: driver (None: no driver bound), by address order
PLATFORM = [
    ("ff760000.clock-controller", "rockchip-clk-rk3399"),
    ("ff750000.clock-controller", "rockchip-clk-rk3399-pmu"),
    ("pinctrl", "rockchip-pinctrl"),
    ("ff310000.power-management", None),
    ("ff3c0000.i2c", "rk3x-i2c"),
    ("ff110000.i2c", "rk3x-i2c"),
    ("ff1d0000.spi", "rockchip-spi"),
    ("ff1a0000.serial", "dw-apb-uart"),
    ("ff420000.pwm", "rockchip-pwm"),
    ("ff420010.pwm", "rockchip-pwm"),
    ("ff100000.saradc", "rockchip-saradc"),
    ("ff260000.tsadc", "rockchip-thermal"),
    ("fe310000.mmc", "dwmmc_rockchip"),
    ("fe320000.mmc", "dwmmc_rockchip"),
    ("fe330000.mmc", "sdhci-arasan"),
    ("fe300000.ethernet", "rk_gmac-dwmac"),
    ("ff770000.syscon", "syscon"),
    ("fe800000.usb", "dwc3-of-simple"),
    ("fe380000.usb", "ehci-platform"),
    ("fe3a0000.usb", "ohci-platform"),
    ("ff8f0000.vop", "rockchip-vop"),
    ("ff8f3f00.iommu", "rk_iommu"),
    ("ff900000.vop", "rockchip-vop"),
    ("ff903f00.iommu", "rk_iommu"),
    ("ff940000.hdmi", "dwhdmi-rockchip"),
    ("ff880000.i2s", "rockchip-i2s"),
    ("ff8a0000.i2s", "rockchip-i2s"),
    ("ff9a0000.gpu", "panfrost"),
    ("hdmi-sound", "asoc-simple-card"),
    ("vcc5v0-sys", "reg-fixed-voltage"),
    ("vcc3v3-sys", "reg-fixed-voltage"),
    ("vcc-sd", "reg-fixed-voltage"),
    ("vdd-log", None),                      # a pwm-regulator not probed yet
    ("leds", "leds-gpio"),
    ("gpio-keys", "gpio-keys"),
]
GPIOS = ["ff720000.gpio0", "ff730000.gpio1", "ff780000.gpio2", "ff788000.gpio3",
         "ff790000.gpio4"]

# consumer: its suppliers (platform names, or "i2c:0-001b" for the PMIC)
LINKS = {
    "ff3c0000.i2c": ["ff750000.clock-controller", "pinctrl"],
    "ff110000.i2c": ["ff760000.clock-controller", "pinctrl"],
    "ff1d0000.spi": ["ff760000.clock-controller", "pinctrl"],
    "ff1a0000.serial": ["ff760000.clock-controller", "pinctrl"],
    "ff420000.pwm": ["ff760000.clock-controller", "pinctrl"],
    "ff420010.pwm": ["ff760000.clock-controller", "pinctrl"],
    "ff100000.saradc": ["ff760000.clock-controller", "vcc3v3-sys"],
    "ff260000.tsadc": ["ff760000.clock-controller", "pinctrl"],
    "fe310000.mmc": ["ff760000.clock-controller", "pinctrl", "ff310000.power-management",
                     "i2c:0-001b"],
    "fe320000.mmc": ["ff760000.clock-controller", "pinctrl", "vcc-sd", "i2c:0-001b"],
    "fe330000.mmc": ["ff760000.clock-controller", "ff770000.syscon",
                     "ff310000.power-management", "vcc3v3-sys"],
    "fe300000.ethernet": ["ff760000.clock-controller", "pinctrl", "ff770000.syscon",
                          "vcc3v3-sys", "ff310000.power-management"],
    "fe800000.usb": ["ff760000.clock-controller", "ff770000.syscon",
                     "ff310000.power-management", "vcc5v0-sys"],
    "fe380000.usb": ["ff760000.clock-controller", "ff770000.syscon"],
    "fe3a0000.usb": ["ff760000.clock-controller", "ff770000.syscon"],
    "ff8f3f00.iommu": ["ff760000.clock-controller", "ff310000.power-management"],
    "ff903f00.iommu": ["ff760000.clock-controller", "ff310000.power-management"],
    "ff8f0000.vop": ["ff760000.clock-controller", "ff8f3f00.iommu",
                     "ff310000.power-management"],
    "ff900000.vop": ["ff760000.clock-controller", "ff903f00.iommu",
                     "ff310000.power-management"],
    "ff940000.hdmi": ["ff760000.clock-controller", "ff770000.syscon", "pinctrl",
                      "ff8f0000.vop", "ff900000.vop", "ff110000.i2c"],
    "ff880000.i2s": ["ff760000.clock-controller", "pinctrl", "ff310000.power-management"],
    "ff8a0000.i2s": ["ff760000.clock-controller", "pinctrl"],
    "ff9a0000.gpu": ["ff760000.clock-controller", "ff310000.power-management",
                     "i2c:0-001b"],
    "hdmi-sound": ["ff8a0000.i2s", "ff940000.hdmi"],
    "vcc3v3-sys": ["vcc5v0-sys"],
    "vcc-sd": ["vcc3v3-sys", "ff790000.gpio4"],
    "leds": ["ff720000.gpio0", "pinctrl"],
    "gpio-keys": ["ff720000.gpio0", "pinctrl"],
}


def main():
    tb = Testbed(cpus_mask="3f", cpus_list="0-5")
    devs = {}
    for name, driver in PLATFORM:
        devs[name] = platform_device(tb, name, driver=driver,
                                     modalias="of:N%sT(null)Crockchip,%s" % (
                                         name.split(".")[-1].split("@")[0], name.split(".")[-1]))
    for g in GPIOS:
        devs[g] = platform_device(tb, g, driver="rockchip-gpio", parent="/devices/platform/pinctrl",
                                  modalias="of:NgpioT(null)Crockchip,gpio-bank")
    # the PMIC on the first I2C controller, its regulators a platform child
    adapter = tb.dev("/devices/platform/ff3c0000.i2c/i2c-0", "i2c", devtype="i2c_adapter")
    adapter.a("name", "rk3x-i2c\n")
    pmic = tb.dev("/devices/platform/ff3c0000.i2c/i2c-0/0-001b", "i2c", devtype=None)
    bind(pmic, "i2c", "rk808")
    pmic.prop("MODALIAS", "of:NpmicT(null)Crockchip,rk808")
    pmic.a("modalias", "of:NpmicT(null)Crockchip,rk808\n")
    pmic.a("name", "rk808\n")
    devs["i2c:0-001b"] = pmic
    devs["rk808-regulator"] = platform_device(tb, "rk808-regulator", driver="rk808-regulator",
                                              parent=pmic.path)

    for consumer, suppliers in LINKS.items():
        for s in suppliers:
            sbus = "i2c" if s.startswith("i2c:") else "platform"
            devlink(tb, devs[s], devs[consumer], sbus, "platform")
    # the PMIC's own supplies: its I2C controller is its parent already; the
    # pinctrl link serves sync_state() only (fw_devlink's for a parent's
    # pins), and the pwm-regulator vdd-log has no driver yet: dormant
    devlink(tb, devs["pinctrl"], pmic, "platform", "i2c", sync_state_only=True,
            status="active")
    devlink(tb, devs["vdd-log"], devs["ff9a0000.gpu"], "platform", "platform",
            status="dormant")
    devlink(tb, devs["ff420000.pwm"], devs["vdd-log"], "platform", "platform",
            status="dormant")
    tb.write()


if __name__ == "__main__":
    main()
