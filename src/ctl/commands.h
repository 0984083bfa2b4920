/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * commands.h - driverfsctl's commands, as its command table runs them: each
 * gets the mount and the arguments after the command's name, and returns
 * the exit status (CTL_OK, CTL_FAILED or CTL_USAGE).
 */
#ifndef DM_CTL_COMMANDS_H
#define DM_CTL_COMMANDS_H

/* tree.c: every device's path, and the hierarchy */
int ctl_cmd_list(const char *mnt, int argc, char **argv);
int ctl_cmd_tree(const char *mnt, int argc, char **argv);
/* info.c: every file of a device */
int ctl_cmd_info(const char *mnt, int argc, char **argv);
/* dot.c: the hierarchy as a Graphviz graph */
int ctl_cmd_dot(const char *mnt, int argc, char **argv);
/* power.c: a transition, and its journal */
int ctl_cmd_suspend(const char *mnt, int argc, char **argv);
int ctl_cmd_resume(const char *mnt, int argc, char **argv);
/* bind.c: a device moved between kernel drivers, as a transaction */
int ctl_cmd_bind(const char *mnt, int argc, char **argv);
int ctl_cmd_unbind(const char *mnt, int argc, char **argv);
int ctl_cmd_bindings(const char *mnt, int argc, char **argv);
/* a PF's VF count and the VFs' driver, as one transaction */
int ctl_cmd_sriov(const char *mnt, int argc, char **argv);
/* save.c: the whole model in the snapshot format */
int ctl_cmd_save(const char *mnt, int argc, char **argv);
/* diff.c: two models (snapshots or mounts) compared */
int ctl_cmd_diff(const char *mnt, int argc, char **argv);
/* metrics.c: the metrics file for Prometheus, printed or as a file */
int ctl_cmd_metrics(const char *mnt, int argc, char **argv);
/* health.c: the devices that are not healthy, and why */
int ctl_cmd_health(const char *mnt, int argc, char **argv);
/* nfd.c: Kubernetes node labels as a Node Feature Discovery feature file */
int ctl_cmd_nfd(const char *mnt, int argc, char **argv);

#endif
