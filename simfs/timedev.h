/*
 * timedev.h - the timing device: a stacked blockdev that forwards every
 * request to the device below for the real data and charges it to a device
 * model (models/device/) on a clock (clock.h).
 *
 *   struct sfs_timedev_opts o = {.model = "hdd-2009",
 *                                .mode = SFS_TIMEDEV_EMULATE};
 *   sfs_timedev_new(lower, clock, &o, &bd, &err);   bd owns lower
 *   sfs_bdev_read/write/flush(bd, ...)               as any device
 *   sfs_timedev_plug(bd); writes...; sfs_timedev_unplug(bd);   a batch
 *   sfs_timedev_counters(bd, &c);
 *   sfs_bdev_close(bd);                              closes lower too
 *
 * The modelled device serves one request at a time: it is busy until
 * `busy_until`.  A request arriving at time `now` (the clock, read when the
 * request enters) starts at max(now, busy_until), costs the model's
 * service time, and completes at start + service; busy_until moves there.
 * Modes:
 *   account  the request returns as soon as the device below has done it;
 *            modelled time is only accumulated and reported (busy time,
 *            completion times in the log).
 *   emulate  the request returns no earlier than its modelled completion:
 *            the caller sleeps until then on the clock.  On a virtual clock
 *            that sleep moves the clock to the completion time: this is how
 *            virtual time advances in replay and tests.
 * Batches: between sfs_timedev_plug and sfs_timedev_unplug, writes are not
 * charged one by one but queued in the I/O scheduler (sched.h) and charged
 * at unplug in the scheduler's order, merged where contiguous, each
 * starting no earlier than its arrival and the device being free; a write
 * returns at once (its data is already below).  A read or flush arriving
 * while writes are queued first charges them all (the queue drains), then
 * itself.  Unplug returns when the batch is complete (emulate).  Data
 * always reaches the device below at once, in submission order: only time
 * is reordered.
 *
 * Per-process slices (sched=cfq): reads and writes carrying a stream id
 * (sfs_io_req.stream, from sfs_io_set_stream) are charged on a copy of the
 * model private to that stream, as if the disk served that stream alone
 * for a slice, plus a seek at each slice switch; stream 0 (the
 * filesystem's own write-back, journal and metadata) is charged on the
 * shared model as with the other schedulers.  doc/device-models.md, 8.1.
 *
 * Same requests in the same order on a virtual clock give the same times,
 * bit for bit.  Thread-safe: one lock per timing device; a caller sleeps
 * without holding it.  Details and caveats: doc/device-models.md.
 */
#ifndef SFS_TIMEDEV_H
#define SFS_TIMEDEV_H

#include <stdbool.h>
#include <stdint.h>

#include "blockdev.h"
#include "clock.h"
#include "devmodel.h"

enum sfs_timedev_mode {
	SFS_TIMEDEV_ACCOUNT = 0, /* report modelled time only */
	SFS_TIMEDEV_EMULATE,	 /* complete no earlier than the model says */
};

struct sfs_timedev_opts {
	const char *model; /* device model spec; NULL: "hdd-2009" */
	const char *sched; /* scheduler spec; NULL: "elevator" */
	enum sfs_timedev_mode mode;
};

/* One device request as the model served it (for an I/O log). */
struct sfs_timedev_rec {
	sfs_ns_t submit_ns; /* arrival (earliest of the requests merged) */
	sfs_ns_t start_ns;  /* the device began on it */
	sfs_ns_t done_ns;   /* it completed: start_ns + cost.total_ns */
	enum sfs_io_op op;
	enum sfs_io_cat cat;	  /* of the first request merged */
	uint64_t off_bytes;	  /* 0 for a flush */
	uint64_t len_bytes;	  /* 0 for a flush */
	unsigned n_merged;	  /* submitted requests it covers (>= 1) */
	struct sfs_dev_cost cost; /* the model's breakdown */
};

/*
 * Called once per device request, in service order, with the timing
 * device's lock held: it must not call into this device.
 */
typedef void (*sfs_timedev_log_fn)(void *arg,
				   const struct sfs_timedev_rec *rec);

struct sfs_timedev_counters {
	/* as submitted to the timing device */
	uint64_t reqs[3];		    /* by op */
	uint64_t bytes[3];		    /* by op */
	uint64_t cat_reqs[3][SFS_IO_NCAT];  /* [op][cat] */
	uint64_t cat_bytes[3][SFS_IO_NCAT]; /* [op][cat] */
	/* as served by the modelled device (after merging) */
	uint64_t dev_reqs[3]; /* by op */
	sfs_ns_t busy_ns;     /* sum of service times */
	sfs_ns_t overhead_ns; /* its parts, see sfs_dev_cost */
	sfs_ns_t seek_ns;
	sfs_ns_t rotation_ns;
	sfs_ns_t transfer_ns;
	sfs_ns_t queue_ns;   /* sum of start - arrival */
	uint64_t seeks;	     /* arm movements */
	uint64_t seek_bytes; /* their total distance */
	uint64_t seek_cyl;
	uint64_t cache_hits;	 /* drive-cache hits */
	uint64_t merges;	 /* requests merged into others */
	uint64_t expired;	 /* scheduler deadline dispatches */
	uint64_t slice_switches; /* cfq: slices opened with an arm move */
	uint64_t shared_writeouts; /* cfq: stream 0's cached writes
				      written out before a stream's */
	sfs_ns_t busy_until_ns;	 /* the device is free from here */
	/* the real queue of a mount in emulate mode (sfs_io_defer_sleep) */
	uint64_t queue_max;	/* most requests queued at once */
	uint64_t queue_sum;	/* requests queued, summed at each arrival */
	uint64_t queue_samples; /* arrivals into it */
};

/*
 * Stack a timing device over lower.  On success it owns lower (closing it
 * at sfs_bdev_close) and *out is the new device; the clock stays the
 * caller's and must outlive it.  -EINVAL with a one-line message in *err
 * (g_free it; err may be NULL) for a bad model or scheduler spec; lower is
 * then untouched.
 */
int sfs_timedev_new(struct sfs_bdev *lower, struct sfs_clock *clock,
		    const struct sfs_timedev_opts *opts, struct sfs_bdev **out,
		    char **err);

/* "account" or "emulate": 0, or -EINVAL. */
int sfs_timedev_mode_parse(const char *text, enum sfs_timedev_mode *out);

/*
 * Start a batch (nests).  The verbs below return -EINVAL (or do nothing)
 * for a device that is not a timing device.
 */
int sfs_timedev_plug(struct sfs_bdev *bd);
/* End a batch: charge the queued writes; emulate: wait for them. */
int sfs_timedev_unplug(struct sfs_bdev *bd);

int sfs_timedev_counters(struct sfs_bdev *bd, struct sfs_timedev_counters *out);
/* Install (fn) or remove (NULL) the per-request callback. */
int sfs_timedev_set_log(struct sfs_bdev *bd, sfs_timedev_log_fn fn, void *arg);
/*
 * The model (read-only use: print, geometry), or NULL.  A model replaced by
 * sfs_timedev_set_model stays valid until the device is closed.
 */
const struct sfs_devmodel *sfs_timedev_model(struct sfs_bdev *bd);

/* ---- runtime changes (a live mount's /.simfs/config) ---- */

/* The current mode: 0, or -EINVAL if bd is not a timing device. */
int sfs_timedev_mode(struct sfs_bdev *bd, enum sfs_timedev_mode *out);
/*
 * Switch between account and emulate.  Switching a real-clock device to
 * emulate starts it idle: a backlog of modelled time built up in account
 * mode (busy_until ahead of the clock) is forgiven by shifting the device's
 * timeline, not slept through.  0 or -EINVAL.
 */
int sfs_timedev_set_mode(struct sfs_bdev *bd, enum sfs_timedev_mode mode);
/*
 * Build a model from spec (as sfs_timedev_opts.model) and put it in place
 * of the current one, under the device's lock: requests from then on are
 * charged to it; counters, busy_until and queued writes carry on.  On
 * -EINVAL (bad spec, or a capacity smaller than the device) nothing
 * changed and *err (may be NULL; g_free it) says why.
 */
int sfs_timedev_set_model(struct sfs_bdev *bd, const char *spec, char **err);

/*
 * Deferred waits, for a caller that must not sleep while it holds a lock
 * (the engine's, simfs/fs.c): between sfs_io_defer_begin and
 * sfs_io_defer_end the calling thread's emulate-mode waits are not slept
 * but remembered, and each of its requests arrives no earlier than the
 * completion it did not wait for.  sfs_io_defer_end returns the clock time
 * to sleep until (0: none), for the caller to sleep once it has let go of
 * its lock.  Per thread.
 */
void sfs_io_defer_begin(void);
sfs_ns_t sfs_io_defer_end(void);
/*
 * In emulate mode the deferred reads and writes do not complete at once:
 * they wait in the device's queue with those of every other thread.  They
 * come in stages, as in the event-driven mode below: a read, a write
 * outside a batch, a flush or the end of a batch ends one, and the
 * requests of a later stage (which depend on it) are held, to be queued
 * once the stage before is done.  After sfs_io_defer_end, with no lock
 * held, sfs_io_defer_sleep queues and waits for them stage by stage
 * (serving the queue whenever the modelled device is free) and until
 * `until`.  doc/internals.md, 11.1.
 */
void sfs_io_defer_sleep(struct sfs_clock *clock, sfs_ns_t until);

/* ---- event-driven mode: a driver of virtual time (simfs run, run.h) ----
 *
 * With a sink installed the device times nothing itself: each request is
 * still done below at once (the data) and counted as submitted, then handed
 * to sink->submit; where the emulate mode would make the caller wait (any
 * request outside a batch, the end of a batch) sink->wait is called.  The
 * driver queues the requests at their arrival (sfs_timedev_queue), and each
 * time the modelled device is free asks for the next one in the
 * scheduler's order (sfs_timedev_dispatch), which is served on the model
 * exactly as in the other modes (merging, cfq slices, counters, log).
 */
struct sfs_timedev_sink {
	/* a request was done below and waits for its modelled service */
	void (*submit)(void *arg, const struct sfs_io_req *req);
	/* the submitter waits for everything it submitted so far */
	void (*wait)(void *arg);
};
/* Install (s) or remove (NULL) the sink. 0, or -EINVAL. */
int sfs_timedev_set_sink(struct sfs_bdev *bd, const struct sfs_timedev_sink *s,
			 void *arg);
/* Queue a read or write that arrived at arrival_ns (0 or -EINVAL). */
int sfs_timedev_queue(struct sfs_bdev *bd, const struct sfs_io_req *req,
		      sfs_ns_t arrival_ns, void *cookie);
/* What one dispatch served: the queued requests it covered (the first
 * 16 in cookies, all of them in `more` when there were more: g_free). */
struct sfs_timedev_served {
	sfs_ns_t done_ns;
	size_t n, n_total;
	void *cookies[16];
	void **more;
};
/* The device is free at now: serve the scheduler's next request.  0, or
 * -ENOENT when nothing is queued. */
int sfs_timedev_dispatch(struct sfs_bdev *bd, sfs_ns_t now,
			 struct sfs_timedev_served *out);
/* Serve a cache flush starting at now; its completion. */
sfs_ns_t sfs_timedev_serve_flush(struct sfs_bdev *bd, sfs_ns_t now);

#endif /* SFS_TIMEDEV_H */
