/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * driverfsd.c - the daemon: enumerate, mount, serve. main() runs the steps
 * of src/daemon/ in order (daemon.h says which file holds which).
 */
#include "daemon/daemon.h"
#include "util/log.h"

#include <malloc.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct daemon d = { .o = &o, .ready_fd = -1, .handed_fuse = -1, .handed_state = -1 };
	int r;

	/* glibc gives each thread that allocates an arena of its own, up to
	 * eight per core (the FUSE workers, the PM pool, the snapshot
	 * parser), and each keeps its own free memory: four leave less
	 * memory per device after a walk at no cost in load time, where one
	 * or two slowed the load by the parser's and loader's contention
	 * (bench/RESULTS.md). MALLOC_ARENA_MAX still wins. */
	if (!getenv("MALLOC_ARENA_MAX"))
		mallopt(M_ARENA_MAX, 4);

	o.fuse_args = (struct fuse_args)FUSE_ARGS_INIT(0, NULL);
	if (fuse_opt_add_arg(&o.fuse_args, argv[0]) < 0)
		return EXIT_FAILURE;
	r = daemon_parse_options(argc, argv, &o);
	if (r < 0)
		goto out_args;
	if (o.check_config) {
		r = daemon_check_config(&o);
		fuse_opt_free_args(&o.fuse_args);
		return r;
	}
	dm_log_setup(o.debug ? LOG_DEBUG : LOG_INFO, 0);
	r = daemon_load_config(&d);
	if (r == 0)
		r = daemon_go_background(&d);
	if (r == 0)
		r = daemon_set_up_model(&d);
	if (r == 0)
		r = o.save ? daemon_save(&d) : daemon_mount(&d);
	if (r == 0 && !o.save)
		r = daemon_serve(&d);
	daemon_tear_down(&d);
	dm_config_done(&d.cfg);
out_args:
	fuse_opt_free_args(&o.fuse_args);
	return r < 0 ? EXIT_FAILURE : r == 1 ? DAEMON_EXIT_HANDOVER : EXIT_SUCCESS;
}
