/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * driverfsctl.c - the command-line client. It only reads and writes files of
 * a driverfs mount (-m MNT, else $DRIVERFS_MOUNT, else /devices); it links
 * nothing of the daemon but the snapshot's JSON layout. This file parses the
 * options and runs the command named from the table below; each family of
 * commands lives in its own file of src/ctl/.
 */
#include "ctl/commands.h"
#include "ctl/ctl.h"
#include "version.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The commands, in the order --help lists them. */
static const struct command {
	const char *name;
	int (*run)(const char *mnt, int argc, char **argv);
	const char *help; /* its lines of --help */
} commands[] = {
	{ "list", ctl_cmd_list,
	  "  list [FILTER] [-o NAMES] [--json]\n"
	  "                             every device's path under root/, in the global\n"
	  "                             order (depth first, parents first; resume's order)\n" },
	{ "tree", ctl_cmd_tree,
	  "  tree [DEV] [FILTER] [-o NAMES] [--json]\n"
	  "                             the hierarchy (below DEV), with names, drivers\n"
	  "                             and power states other than on\n" },
	{ "info", ctl_cmd_info,
	  "  info DEV [--json]          every file of DEV, its subsystem, driver and\n"
	  "                             interface\n" },
	{ "dot", ctl_cmd_dot,
	  "  dot [FILTER] [--pm-order]  the hierarchy as a Graphviz graph, coloured by\n"
	  "                             bus or class (driverfsctl dot | dot -Tsvg);\n"
	  "                             --pm-order numbers the devices and links them in\n"
	  "                             the order a suspend takes: a dry run's journal\n"
	  "                             (it replaces MOUNT/power_log), or where the mount\n"
	  "                             cannot run one, the global order backwards\n" },
	{ "suspend", ctl_cmd_suspend,
	  "  suspend [DEV] [--dry-run] [--json]\n"
	  "                             suspend DEV's subtree, children first (default: the\n"
	  "                             whole system); print the transition's journal\n" },
	{ "resume", ctl_cmd_resume,
	  "  resume [DEV] [--dry-run] [--json]\n"
	  "                             resume DEV (its suspended ancestors first) and its\n"
	  "                             subtree, parents first\n" },
	{ "bind", ctl_cmd_bind,
	  "  bind DEV DRIVER|--default [--force] [--dry-run] [--persist] [--group]\n"
	  "                             move DEV to the kernel driver DRIVER (vfio-pci ...)\n"
	  "                             or back to the kernel's default, as one\n"
	  "                             transaction rolled back on failure; print its\n"
	  "                             report (--dry-run: the plan, nothing written;\n"
	  "                             --persist: kept across boots and replugs, and\n"
	  "                             with --default forgotten; --group: for vfio-pci,\n"
	  "                             the IOMMU group's other members in the way too)\n" },
	{ "unbind", ctl_cmd_unbind,
	  "  unbind DEV [--force] [--dry-run] [--persist]\n"
	  "                             unbind DEV from its kernel driver\n" },
	{ "sriov", ctl_cmd_sriov,
	  "  sriov DEV N [--driver DRIVER] [--force] [--dry-run] [--persist|--forget]\n"
	  "                             set the PF DEV's SR-IOV VF count to N (through 0)\n"
	  "                             and bind the new VFs to DRIVER (vfio-pci ...), as\n"
	  "                             one transaction: a failure puts back the count and\n"
	  "                             every VF; refused while a VF that goes is in use\n"
	  "                             (--force proceeds); --persist: kept across boots\n"
	  "                             and applied when the PF appears (--forget: no\n"
	  "                             longer)\n" },
	{ "bindings", ctl_cmd_bindings,
	  "  bindings                   the persisted bindings, and whether each is in\n"
	  "                             force\n" },
	{ "save", ctl_cmd_save,
	  "  save [--sanitize] FILE     the whole model as JSON in driverfsd's snapshot\n"
	  "                             format (driverfsd --snapshot FILE serves it);\n"
	  "                             FILE - writes to standard output; --sanitize\n"
	  "                             masks serial numbers, MAC and WWN addresses,\n"
	  "                             UUIDs and the host name and drops binary values\n" },
	{ "diff", ctl_cmd_diff,
	  "  diff A B [--json]          two models compared, each a snapshot file or a\n"
	  "                             mount: devices added, removed and moved, members\n"
	  "                             (driver, kernel_driver, power ...) and files that\n"
	  "                             changed, bus drivers and device links; volatile\n"
	  "                             files (counters, sensors, runtime PM, link speeds)\n"
	  "                             left out\n" },
	{ "health", ctl_cmd_health,
	  "  health [DEV] [--json]      the devices (DEV and below it) that are not\n"
	  "                             healthy, one line per problem: a PCIe link\n"
	  "                             trained below what both its ends can do, or one\n"
	  "                             above it; AER errors counted; a failed PM hook;\n"
	  "                             a failed binding request; a probe the kernel\n"
	  "                             deferred (as root) (exit status 3 when any)\n" },
	{ "nfd", ctl_cmd_nfd,
	  "  nfd [FILE]                 Kubernetes node labels for Node Feature\n"
	  "                             Discovery's local source: per PCI class and\n"
	  "                             vendor, functions bound to vfio-pci and those in\n"
	  "                             an IOMMU group a VM can take, SR-IOV VF counts,\n"
	  "                             degraded links; FILE (default NFD's features.d/\n"
	  "                             driverfsd; - prints) written only when changed\n" },
	{ "metrics", ctl_cmd_metrics,
	  "  metrics [FILE]             the daemon's counters and the tree's gauges in\n"
	  "                             Prometheus's text format (MOUNT/metrics, after\n"
	  "                             driverfsd_up); FILE is replaced whole, for\n"
	  "                             node_exporter's textfile collector, and says\n"
	  "                             driverfsd_up 0 when the mount cannot be read\n" },
};

static void usage(FILE *f)
{
	fputs("Usage: driverfsctl [-m MOUNT] COMMAND [ARGS]\n"
	      "A client of a driverfs mount (-m, else $DRIVERFS_MOUNT, else /devices).\n"
	      "\n"
	      "Commands:\n",
	      f);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fputs(commands[i].help, f);
	fputs("\n"
	      "DEV is a path under root/ (pci0000:00/0000:00:02.0) or a bus id (0000:00:02.0,\n"
	      "1-1.2). --dry-run records the order in MOUNT/power_log and calls no hook.\n"
	      "FILTER is --bus BUS and/or --class CLASS: the devices on BUS or of CLASS.\n"
	      "tree and dot keep the ancestors of those devices so that the hierarchy\n"
	      "shows; list prints only the devices themselves.\n"
	      "-o NAME[,NAME...] also shows those files of each device (its first line, as\n"
	      "NAME=VALUE; a device without the file shows nothing for it): list -o size,ro\n"
	      "--class block is a disk inventory.\n"
	      "\n"
	      "--json (one document on standard output; members never removed or renamed):\n"
	      "  list, tree  for each device {\"path\", \"name\", \"driver\" (null when unbound),\n"
	      "              \"power\"}, plus \"match\" (false for an ancestor kept for the\n"
	      "              shape) when filtered: list an array in the global order, tree\n"
	      "              the device with its \"children\" arrays nested; with -o,\n"
	      "              \"attributes\": {NAME: value or null}\n"
	      "  info        {\"path\", \"subsystem\", \"driver\", \"interface\" (each null when\n"
	      "              none), \"files\": {NAME: value, or null when unreadable or\n"
	      "              binary}}; files of groups are named \"pm/control\",\n"
	      "              \"queue/iosched/quantum\"; one trailing newline dropped;\n"
	      "              \"suppliers\", \"consumers\": the paths of the devices at\n"
	      "              the other ends of its device links\n"
	      "  suspend, resume  the journal: an array of {\"seq\", \"phase\", \"path\",\n"
	      "              \"result\" (\"ok\" or an errno name), \"usec\"}\n"
	      "  health      an array of {\"path\", \"id\", \"problems\": [{\"kind\", \"detail\"}]}\n"
	      "  diff        {\"devices\": {\"added\", \"removed\", \"moved\"}, \"changes\",\n"
	      "              \"values\", \"drivers\", \"links\", \"volatile_skipped\"}\n"
	      "\n"
	      "Options:\n"
	      "  -m, --mount MOUNT  the driverfs mount point\n"
	      "  -h, --help         show this help\n"
	      "  -V, --version      show the version\n"
	      "\n"
	      "Errors name the device or file and the errno, as in\n"
	      "\"driverfsctl: 0000:00:1f.3: no such device (ENOENT)\".\n"
	      "Exit status: 0 done; 1 failed (an unknown device, bus or class, no mount, a\n"
	      "transition that failed and was rolled back); 2 bad usage. diff: 0 the same,\n"
	      "1 different, 2 trouble, as diff(1).\n",
	      f);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "mount", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	const char *mnt = getenv("DRIVERFS_MOUNT");
	int c;
	if (!mnt || !*mnt)
		mnt = "/devices";
	/* options before the command; the command's own come after it */
	while ((c = getopt_long(argc, argv, "+m:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			mnt = optarg;
			break;
		case 'h':
			usage(stdout);
			return CTL_OK;
		case 'V':
			printf("driverfsctl %s\n", DRIVERFSD_VERSION);
			return CTL_OK;
		default:
			usage(stderr);
			return CTL_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return CTL_USAGE;
	}
	const char *cmd = argv[optind++];
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(cmd, commands[i].name) == 0)
			return commands[i].run(mnt, argc - optind, argv + optind);
	return ctl_usage_error(cmd, "unknown command", NULL);
}
