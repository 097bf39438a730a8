/*
 * run.h - the engine in virtual time: a workload's clients (workload.h)
 * driven through the engine's API by a discrete-event simulation, with no
 * FUSE and no kernel.  Same input, same output, bit for bit, on any host.
 *
 *   sfs_fs_open(bd, cfg with clock=virtual and a device model, &fs, ...)
 *   sfs_run_engine(fs, workload, &opts, &result, &counters, &err)
 *   sfs_workload_report(workload, &result, stdout)
 *   sfs_fs_close(fs)
 *
 * How it works (doc/internals.md, "Concurrency in virtual time"): each
 * client and each of the engine's own threads (flusher, journal) is an
 * actor.  An operation is carried out by the engine at once, when its
 * client is ready, and while it runs the timing device records the
 * requests it issues and the points where it would wait (timedev.h,
 * event-driven mode).  That record, a CPU burst from the CPU model and
 * then stages of device requests, is then played out on one virtual clock:
 * the requests of every actor meet in the I/O scheduler's queue at their
 * arrival, the modelled device serves them one at a time in the
 * scheduler's order, CPU bursts share cpus= processors, and the client is
 * ready for its next operation when its last stage completes.
 */
#ifndef SFS_RUN_H
#define SFS_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "format.h"
#include "fs.h"
#include "workload.h"

struct sfs_run_opts {
	const char *cpu; /* CPU model spec (cpumodel.h); NULL: none */
	unsigned cpus;	 /* processors shared by the actors (0: 1) */
	uint64_t seed;	 /* of the bytes written */
	sfs_ns_t max_ns; /* stop the clients at this virtual time
			    (0: no limit) */
};

/* What the run itself saw (not part of the engine's stats). */
struct sfs_run_counters {
	uint64_t events;	  /* simulation events handled */
	uint64_t engine_ops;	  /* workload operations carried out */
	uint64_t dev_requests;	  /* requests the actors submitted */
	uint64_t max_queue;	  /* most requests at the device at once */
	double mean_queue;	  /* time-averaged, over the run */
	uint64_t fsync_waits;	  /* fsyncs that waited for a commit */
	uint64_t commits_seen;	  /* commits started during the run */
	uint64_t flusher_runs;	  /* write-back ticks */
	uint64_t journal_runs;	  /* journal ticks */
	sfs_ns_t cpu_ns;	  /* modelled CPU time of all actors */
	sfs_ns_t end_ns;	  /* virtual time when the last client ended */
	uint64_t clients_stopped; /* ended by -ENOSPC, -EIO, -EROFS */
	char stop_what[256];	  /* the first of those, as a message */
};

/*
 * Run w's clients through fs in virtual time, from fs's clock's now.  fs
 * must run on a virtual clock over a timing device.  Results by phase in
 * *res (sfs_wl_result_free it).  0 when every client ran to its end (even
 * with results that differed from what the workload expected: counted in
 * res); -EINVAL with *err for a setup the run cannot use or a workload
 * that failed (a malformed loadfile line); an operation that failed with
 * -ENOSPC, -EIO or -EROFS where success was expected ends that client and
 * is reported in res->first_error.
 */
int sfs_run_engine(struct sfs_fs *fs, struct sfs_workload *w,
		   const struct sfs_run_opts *o, struct sfs_wl_result *res,
		   struct sfs_run_counters *cnt, char **err);

/* Print the run's own counters (queue depth, group commit) as a table. */
void sfs_run_counters_print(const struct sfs_run_counters *c, FILE *out);

/* The `simfs run` subcommand (cmd_run.c): argv[0] is "run"; the exit
 * status (0, 1 run failed, 2 usage). */
int sfs_cmd_run(int argc, char **argv);

#endif /* SFS_RUN_H */
