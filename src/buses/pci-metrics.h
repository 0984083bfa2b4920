/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pci-metrics.h - per-device PCI families of the metrics file
 * (docs/design.md §6.8), named and labelled as node_exporter's pcidevice
 * collector names its own, under driverfsd's prefix (so that both can feed
 * one Prometheus without a duplicate series): every PCI function's info
 * (segment, bus, device, function, its parent's, the ids and revision, plus
 * driverfsd's join labels: kernel driver, NUMA node, netdev, nvme and block
 * names), its link's current and maximum speed and width, what both ends
 * of the link can do and whether it is degraded (pcie-link.h), its AER
 * counts by severity, NUMA node and SR-IOV VF counts. One series per
 * function per family: nothing per attribute.
 */
#ifndef DM_PCI_METRICS_H
#define DM_PCI_METRICS_H

struct dm_metrics;

/* A metrics source (dm_model_add_metrics()); @data: the model. Reads the
 * PCI bus's functions under the model's read lock, then their sysfs files
 * without it. */
void dm_pci_metrics(struct dm_metrics *w, void *data);

#endif
