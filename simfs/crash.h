/*
 * crash.h - crash-consistency runs: a scripted workload drives the engine
 * over a crash device (simfs/crashdev.h), the power is cut after
 * request N, and the image is recovered twice -- by e2fsck -fy on a copy
 * and by simfs itself -- then checked against what the data mode promises.
 * Used by tests/crash/ and by `simfs crash` (simfs/cmd_crash.c, which
 * prints the table and the summary).  Design: doc/crash.md.
 *
 *   sfs_crash_plan(&p, &plan, &err)     dry run: requests, ops, points
 *   sfs_crash_check_point(&p, N, k, &r)  one crash, recovered and checked
 *   sfs_crash_sweep(&p, pts, n, k, jobs, res)  many, one process each
 *   sfs_crash_summarize(res, n, &sum)    totals for the summary
 *
 * A run: copy the base image; open it with p->opts over a crash device;
 * the workload's setup part, sync; arm the device at point N; the scripted
 * part, then unmount; the power cut comes after request N (or at the end).
 * Every data block written carries a self-identifying header (file id,
 * block index, version, xxhash of the payload) and a tag in each 512-byte
 * sector, so the checker tells, for any block of any file: zeros, which of
 * the file's own versions (or a mix of them: a torn write), another file's
 * block, or garbage.
 *
 * The check (sfs_crash_check_point): e2fsck -fn of the crashed image
 * (verdict recorded); a copy repaired by e2fsck -fy (its own journal
 * replay), which must then pass e2fsck -fn; simfs recovery on the original
 * (sfs_fs_open + sfs_fs_close, same options), which must pass e2fsck -fn
 * for a journaled mode; the two recovered images must hold the same tree
 * and contents; the namespace must equal the model's state after some op
 * j with (last durable fsync/sync) <= j <= (last op begun before the cut);
 * data as the policy promises (sfs_jnl_promise, journal.h).  Every failure
 * names the mode, workload, crash point and seeds.
 */
#ifndef SFS_CRASH_H
#define SFS_CRASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "crashdev.h"
#include "journal.h"

/* The promise of data=mode (sfs_jnl_promise of the policy by that name),
 * or NULL for an unknown name. */
const struct sfs_jnl_promise *sfs_crash_promise_of(const char *mode);

/* Workload names, NULL-terminated: the short scripted ones, then "long". */
const char *const *sfs_crash_workloads(void);
/* One line describing a workload, or NULL if there is none by that name. */
const char *sfs_crash_workload_help(const char *name);

struct sfs_crash_params {
	const char *image;    /* base image: copied, never modified */
	const char *opts;     /* engine options; data= selects the promise */
	const char *workload; /* a name from sfs_crash_workloads() */
	uint64_t seed; /* long workload and device seeds derive from it */
	enum sfs_crash_mode mode;
	uint32_t long_ops;   /* ops of "long" (0 = 3000) */
	const char *workdir; /* scratch (NULL: $TMPDIR, else /dev/shm, /tmp) */
	bool run_to_end;     /* keep running the workload after the cut */
	bool keep_failed;    /* keep the images of a failed point */
	bool keep_all;	     /* keep the images of every point */
	const char *promise; /* check this mode's promise instead of the
				data= mode's (tests of the checker) */
	FILE *trace;	     /* print each run's ops and requests (with
				their fate) here; NULL: quiet */
	/* Optional (NULL: none): sfs_crash_sweep calls it in the sweeping
	 * process once at the start (done 0) and after each point is
	 * checked, with the checks done of total and the violations so
	 * far.  simfs crash's progress line. */
	void (*progress)(void *arg, size_t done, size_t total, size_t bad);
	void *progress_arg;
};

/* The dry run: the workload unarmed, every request counted. */
struct sfs_crash_plan {
	uint64_t total_reqs; /* requests after setup: points are 0..total */
	uint32_t n_ops;	     /* scripted ops (the unmount included) */
	uint32_t n_durable;  /* fsync / sync / unmount ops */
	uint8_t *req_op;     /* [total_reqs] enum sfs_io_op of request i+1 */
};
/*
 * Run the workload once without a crash.  0, or -errno with a one-line
 * reason in *err (g_free it): the image cannot be copied or opened with
 * opts, an op failed, an unknown workload.  Free with sfs_crash_plan_free.
 */
int sfs_crash_plan(const struct sfs_crash_params *p, struct sfs_crash_plan *out,
		   char **err);
void sfs_crash_plan_free(struct sfs_crash_plan *plan);
/*
 * The points to check: all 0..total ("all"; with cut and tear a point
 * whose request is a read is skipped: its image is the one before it, and
 * its expectations weaker), or K spread evenly with a seeded offset in
 * each stratum ("sample:K").  Returns the count; *out is g_free'd.
 */
size_t sfs_crash_points(const struct sfs_crash_plan *plan,
			const struct sfs_crash_params *p, const char *spec,
			uint64_t **out);

/* The outcome of one crash point (plain data: it crosses a pipe). */
struct sfs_crash_result {
	uint64_t point;	     /* requested crash point */
	uint32_t subset;     /* volatile: which seeded subset (0...) */
	uint64_t dev_seed;   /* the crash device's seed */
	uint64_t crash_req;  /* requests before the power cut */
	uint64_t dropped;    /* writes that never landed */
	uint64_t torn_bytes; /* bytes kept of a torn write (if any) */
	bool torn;
	uint32_t held, applied; /* volatile: cache at the cut, applied */
	uint32_t op_at_cut;	/* the op in progress (1-based), 0: none */
	char op_desc[48];
	uint32_t ops_begun;   /* scripted ops begun before the cut */
	int32_t lo_state;     /* last durable op (0 = after setup) */
	int32_t state;	      /* matched model state, -1: none */
	bool needs_recovery;  /* RECOVER set on the crashed image */
	bool marked_clean;    /* its superblock says cleanly unmounted */
	bool crashed_clean;   /* e2fsck -fn of the crashed image clean */
	int fsck_y;	      /* e2fsck -fy exit on the copy */
	bool repaired_clean;  /* e2fsck -fn after -fy clean */
	int recover_rc;	      /* simfs open + close of the crashed image */
	bool recovered_clean; /* e2fsck -fn after simfs recovery clean */
	int same_tree;	      /* 1 yes, 0 no, -1 not compared */
	uint32_t files;	      /* regular files checked */
	uint32_t blocks;      /* their blocks */
	uint32_t foreign;     /* blocks (partly) of another file */
	uint32_t garbage;     /* blocks (partly) not file data at all */
	uint32_t zero_bad;    /* zero blocks where the state has data */
	uint32_t torn_blocks; /* blocks mixing versions or zeros */
	uint32_t off_state;   /* blocks whose version no matched state allows */
	uint32_t fsync_ok;    /* files with a durable fsync, intact */
	uint32_t fsync_lost;  /* ... not intact */
	bool violated;	      /* a promise of the mode is broken */
	char why[320];	      /* the first violation (or error) */
};

/* The device seed of (seed, point, subset): what --seed/--point reproduce. */
uint64_t sfs_crash_dev_seed(uint64_t seed, uint64_t point, uint32_t subset);

/*
 * Crash at `point` (the subset-th seeded variant of it), recover, check.
 * Returns 0 when the check ran (out->violated tells the verdict) or
 * -errno when it could not run (out->why says why: no e2fsck, no space).
 */
int sfs_crash_check_point(const struct sfs_crash_params *p, uint64_t point,
			  uint32_t subset, struct sfs_crash_result *out);

/*
 * Check points[0..n) x subsets 0..subsets-1, each in a forked process, up
 * to `jobs` at a time (0: in this process, one after another).  results
 * has n * subsets entries (point-major).  A process that dies counts as a
 * violation ("checker died: signal N").  Returns the number of violations.
 * p->progress, if set, hears of each point as its check ends.
 */
size_t sfs_crash_sweep(const struct sfs_crash_params *p, const uint64_t *points,
		       size_t n, uint32_t subsets, unsigned jobs,
		       struct sfs_crash_result *results);

/* Totals over results (for the summary and doc/crash.md's table). */
struct sfs_crash_summary {
	size_t points;
	size_t violations;
	size_t needs_recovery; /* crashed image had RECOVER set */
	size_t damaged;	       /* crashed image failed e2fsck -fn */
	size_t repaired;       /* ... and e2fsck -fy made it clean */
	size_t recovered_clean;
	size_t same_tree;
	size_t foreign_points; /* points where a file showed foreign data */
	size_t fsync_ok, fsync_lost;
};
void sfs_crash_summarize(const struct sfs_crash_result *r, size_t n,
			 struct sfs_crash_summary *out);

/* One-line reproducer: the `simfs crash` command for result r. */
char *sfs_crash_repro(const struct sfs_crash_params *p,
		      const struct sfs_crash_result *r);

/* The engine options simfs crash puts before its -o's (the cache writes
 * back early); sfs_crash_repro leaves them out of its -o. */
#define SFS_CRASH_CLI_OPTS "mem=1M"

/*
 * The journal policy a mount of image with engine options opts gets:
 * data=, or for data=auto the one the image's journal feature picks.
 * NULL for options the engine refuses, with a one-line reason in err.
 */
const struct sfs_jnl_ops *sfs_crash_policy(const char *opts, const char *image,
					   char *err, size_t errlen);

/* `simfs crash ...` (argv[0] = "crash", simfs/cmd_crash.c): 0 all
 * promises held, 1 some broke, 2 usage or setup error. */
int sfs_cmd_crash(int argc, char **argv);

#endif /* SFS_CRASH_H */
