/*
 * crashdev.h - a stacked device that simulates a power cut at a chosen
 * request: the crash device of STYLE section 5 and doc/crash.md.
 *
 *   bd = sfs_crashdev_new(lower);              owns lower, forwards all
 *   ... setup through bd (passes through) ...
 *   sfs_crashdev_arm(bd, SFS_CRASH_CUT, n, seed);
 *   ... workload: request n is the last one that may land ...
 *   sfs_crashdev_crash_now(bd);                power off now if not yet
 *   sfs_crashdev_counters(bd, &c);
 *   sfs_bdev_close(bd);                        (or via sfs_fs_abort)
 *
 * Once armed, requests are numbered 1, 2, ... (reads, writes, zeroes and
 * flushes alike).  Modes:
 *   cut       requests 1..n reach the device below; from n+1 on writes
 *             "succeed" without landing, flushes are no-ops, reads are
 *             still served by the device below.
 *   tear      as cut, but request n, if a write, lands only in part: a
 *             seeded number k of its leading 512-byte sectors, 0 <= k <
 *             its sector count.
 *   volatile  a drive write cache without FUA: writes are held in memory
 *             (reads see them) until a flush writes them down in order
 *             and makes them durable.  After request n the device dies:
 *             a seeded subset of the writes still held is applied in a
 *             seeded order (a sector never goes back to an older write's
 *             data), the last one applied is torn with probability 1/4,
 *             and the rest are dropped.
 * Point 0 crashes at arming: nothing from then on lands.  Closing an armed
 * device that has not crashed crashes it first (the power cut happens at
 * the end).  The same (mode, point, seed) and request stream give the same
 * bytes on the device below, every time.
 *
 * Not thread-safe (the engine serialises its requests).  Depends only on
 * blockdev.h and GLib, so the crash checker (simfs/crash_*.c) and the
 * crash lab can use it outside the tests.
 */
#ifndef SFS_CRASHDEV_H
#define SFS_CRASHDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blockdev.h"

#define SFS_CRASH_SECTOR 512u /* unit of a torn write, bytes */

enum sfs_crash_mode {
	SFS_CRASH_CUT = 0,
	SFS_CRASH_TEAR,
	SFS_CRASH_VOLATILE,
	SFS_CRASH_NMODES
};

/* "cut", "tear", "volatile". */
const char *sfs_crash_mode_name(enum sfs_crash_mode m);
/* Parse a mode name: 0 or -EINVAL. */
int sfs_crash_mode_parse(const char *name, enum sfs_crash_mode *out);

/* What became of one request after arming. */
enum sfs_crash_fate {
	SFS_CRASH_LANDED = 0, /* reached the device below (reads, flushes) */
	SFS_CRASH_DROPPED,    /* after the crash: never landed */
	SFS_CRASH_TORN,	      /* landed in part (kept_bytes of it) */
	SFS_CRASH_HELD,	      /* volatile: still in the write cache */
	SFS_CRASH_FLUSHED,    /* volatile: written down by a flush */
	SFS_CRASH_APPLIED,    /* volatile: written down at the crash */
	SFS_CRASH_LOST,	      /* volatile: in the cache at the crash, lost */
};
const char *sfs_crash_fate_name(enum sfs_crash_fate f);

/* One request seen since arming, in order (index i is request i + 1). */
struct sfs_crashdev_rec {
	struct sfs_io_req req;
	enum sfs_crash_fate fate;
	uint64_t kept_bytes; /* bytes of a write that landed */
};

struct sfs_crashdev_counters {
	uint64_t reqs_seen;	   /* requests since arming (or creation) */
	uint64_t writes_seen;	   /* of which writes and zeroes */
	uint64_t flushes_seen;	   /* of which flushes */
	uint64_t writes_landed;	   /* writes that reached the device whole */
	uint64_t writes_dropped;   /* writes that never landed */
	uint64_t writes_torn;	   /* writes that landed in part (0 or 1) */
	uint64_t torn_kept_bytes;  /* bytes of the torn write that landed */
	uint64_t held_at_crash;	   /* volatile: writes in the cache */
	uint64_t applied_at_crash; /* volatile: of those, applied */
	uint64_t crash_point;	   /* requests before the power cut */
	bool armed;
	bool crashed;
};

/*
 * Wrap lower (owned from here on; closed with the crash device).  Unarmed,
 * the device forwards every request and only counts.  NULL if lower is.
 */
struct sfs_bdev *sfs_crashdev_new(struct sfs_bdev *lower);
/*
 * Arm: reset counters and log; the power cut comes after request `point`
 * (1-based, counted from now; 0 = at once).  seed drives the tear size and
 * the volatile subset, order and tear.  Re-arming a device that crashed
 * is refused (it stays dead).
 */
void sfs_crashdev_arm(struct sfs_bdev *bd, enum sfs_crash_mode mode,
		      uint64_t point, uint64_t seed);
/* Cut the power now if armed and still alive (the workload ended first). */
void sfs_crashdev_crash_now(struct sfs_bdev *bd);
bool sfs_crashdev_crashed(struct sfs_bdev *bd);
/* Requests seen since arming (the door's current request number). */
uint64_t sfs_crashdev_seen(struct sfs_bdev *bd);
void sfs_crashdev_counters(struct sfs_bdev *bd,
			   struct sfs_crashdev_counters *out);
/* Keep (true) or stop keeping a log of every request after arming
 * (default off: a long workload makes many). */
void sfs_crashdev_set_logging(struct sfs_bdev *bd, bool on);
/* The log since arming; valid until the next request or close. */
const struct sfs_crashdev_rec *sfs_crashdev_log(struct sfs_bdev *bd,
						size_t *n_out);

#endif /* SFS_CRASHDEV_H */
