/*
 * timedev.c - the timing device (see timedev.h): data to the device below,
 * time from a device model, batches through an I/O scheduler.
 *
 * Each request entering through the blockdev door runs:
 *   td_read/td_write(v)/td_zero/td_flush
 *                                       read the clock (arrival), do the
 *                                       request on `lower` (the real data)
 *   td_charge                           plugged write: queue it; else drain
 *                                       the queue, then td_serve it
 *   td_serve                            start = max(ready, busy_until),
 *                                       model cost, busy_until = done
 *   td_wait                             emulate: sleep until done
 * A failed request on `lower` is not charged.
 *
 * Invariants (under td->lock):
 *  1. busy_until never decreases, so the model sees non-decreasing times.
 *  2. Every request submitted is charged exactly once: at once, or from
 *     the scheduler queue at unplug, at the next read or flush, or at close.
 *  3. head_off is the end of the last read or write served (flushes leave
 *     it): the position C-LOOK dispatches from.
 *
 * Locking: td->lock protects everything but the fixed fields (lower,
 * clock) and `mode` (an atomic int, read once per request).  It is never
 * held while sleeping or while calling into `lower`; the log callback runs
 * under it.
 *
 * Runtime changes: sfs_timedev_set_model swaps the model under the lock
 * (the old one is kept until close, so a pointer from sfs_timedev_model
 * stays valid); sfs_timedev_set_mode switches account/emulate.  Switching
 * to emulate forgives the backlog account mode may have built up on a
 * real clock (busy_until far ahead of the host): the device's timeline is
 * shifted by skew_ns so that it is idle now, instead of the next request
 * sleeping through modelled time the workload never waited for.  All
 * times the device reports (counters, log) are on the shifted timeline,
 * which stays monotonic (invariant 1).
 *
 * Per-process slices (a scheduler with sfs_sched_slices, i.e. cfq): a
 * request with a stream id (sfs_io_req.stream != 0; reads and writes) is
 * not charged on the shared model but on a copy of it that only that
 * stream ever uses, at the copy's own time vt (the stream's past service
 * plus the idle time before its requests): the disk as the process sees it
 * while it holds a CFQ slice, with nothing else run in between.  Slices
 * (td_stream_cost):
 *   - a stream's slice ends once it has used slice_sync of service, or
 *     when the device idled slice_idle or more (a new epoch);
 *   - a slice that ends after another stream was served during it
 *     ("shared") flushes the copy: what its drive cache still holds is
 *     written before anyone else's data, and that time is charged then;
 *   - a new slice after another stream was served starts with a switch:
 *     a seek from the shared head position (head_off) to the request.
 * Stream 0 (write-back, journal, metadata), flushes and, with cfq's
 * sync_writes off, every write (asynchronous, as before Linux 2.6.29; see
 * td_sliced) use the shared model as before; a flush also flushes every
 * copy written since its last flush.  A drive has one cache and one arm, so
 * stream 0's writes still held by the shared model's cache are written out
 * before the next stream's request (td_shared_writeout), ending that
 * stream's slice: the
 * shared model would otherwise count the time the streams used their
 * copies as idle and destage them for free.  Each request is still
 * charged once, from max(arrival, busy_until), so invariants 1 and 2
 * hold; only the cost differs.
 */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "lock.h"
#include "sched.h"
#include "timedev.h"

#define TD_MAX_STREAMS 64 /* copies kept; the least recently used goes */

/* cfq: one stream's view of the disk (see the head of this file). */
struct td_stream {
	uint32_t id;		    /* sfs_io_req.stream, never 0 */
	struct sfs_devmodel *model; /* owned: the copy only it uses */
	sfs_ns_t vt_ns;		    /* the copy's clock */
	sfs_ns_t slice_ns;	    /* service used in the open slice */
	sfs_ns_t carry_ns;	    /* its last slice's cache write-out */
	uint64_t epoch;		    /* td->epoch when the slice opened */
	bool in_slice;		    /* a slice is open */
	bool shared;		    /* another stream was served in it */
	bool dirty;		    /* written since the copy's last flush */
	uint64_t last_use;	    /* td->served at its last request */
};

struct timedev {
	struct sfs_bdev *lower;	 /* owned */
	struct sfs_clock *clock; /* the caller's */
	gint mode;		 /* enum sfs_timedev_mode; atomic */
	sfs_mutex lock;
	sfs_ns_t skew_ns;		 /* device time - clock time; lock */
	struct sfs_devmodel *model;	 /* owned; lock */
	GPtrArray *old_models;		 /* replaced ones, freed at close */
	struct sfs_sched *sched;	 /* owned; lock */
	char *model_spec;		 /* for stream copies; lock */
	bool slicing;			 /* sched has slices; fixed */
	struct sfs_sched_slices slices;	 /* fixed */
	GPtrArray *streams;		 /* struct td_stream; lock */
	uint32_t last_stream;		 /* of the last request served; lock */
	bool shared_dirty;		 /* stream 0 wrote since the shared
					    model's cache was emptied; lock */
	uint64_t served;		 /* device requests served; lock */
	uint64_t epoch;			 /* idle gaps >= slice_idle; lock */
	unsigned plugged;		 /* plug depth; lock */
	uint64_t head_off;		 /* invariant 3; lock */
	struct sfs_timedev_counters cnt; /* lock */
	sfs_timedev_log_fn log_fn;	 /* lock */
	void *log_arg;			 /* lock */
	const struct sfs_timedev_sink *sink; /* event-driven mode, or NULL;
						set before use, fixed */
	void *sink_arg;
};

static const struct sfs_bdev_ops td_ops;

static struct timedev *td_of(struct sfs_bdev *bd)
{
	if (!bd || sfs_bdev_name(bd) != td_ops.name)
		return NULL;
	return sfs_bdev_priv(bd);
}

/* Add the parts of c to acc (total_ns is summed by the caller). */
static void cost_add(struct sfs_dev_cost *acc, const struct sfs_dev_cost *c)
{
	acc->overhead_ns += c->overhead_ns;
	acc->seek_ns += c->seek_ns;
	acc->rotation_ns += c->rotation_ns;
	acc->transfer_ns += c->transfer_ns;
	acc->seeks += c->seeks;
	acc->seek_bytes += c->seek_bytes;
	acc->seek_cyl += c->seek_cyl;
}

/* Write out what the stream's drive cache holds; its cost goes to acc. */
static void td_stream_flush(struct td_stream *st, struct sfs_dev_cost *acc)
{
	struct sfs_io_req f = {SFS_IO_FLUSH, SFS_IO_OTHER, 0, 0, st->id};
	struct sfs_dev_cost c;

	if (!st->dirty)
		return;
	st->dirty = false;
	if (sfs_devmodel_cost(st->model, &f, st->vt_ns, &c) != 0)
		return;
	st->vt_ns += c.total_ns;
	cost_add(acc, &c);
}

static void td_stream_free(struct td_stream *st)
{
	sfs_devmodel_free(st->model);
	g_free(st);
}

/*
 * The copy of stream id, made at time now if it is new (*made set; the
 * least recently used copy is evicted, its cache flushed at the cost of
 * acc), or NULL if no copy can be made.  Caller holds td->lock.
 */
static struct td_stream *td_stream_get(struct timedev *td, uint32_t id,
				       sfs_ns_t now, struct sfs_dev_cost *acc,
				       bool *made)
{
	struct td_stream *st, *old = NULL;
	guint old_i = 0;

	*made = false;
	for (guint i = 0; i < td->streams->len; i++) {
		st = g_ptr_array_index(td->streams, i);
		if (st->id == id)
			return st;
		if (!old || st->last_use < old->last_use) {
			old = st;
			old_i = i;
		}
	}
	st = g_new0(struct td_stream, 1);
	/* the spec was accepted when the device was made: this succeeds
	 * unless memory runs out, and then the shared model serves */
	if (sfs_devmodel_new(td->model_spec, &st->model, NULL) != 0) {
		g_free(st);
		return NULL;
	}
	if (td->streams->len >= TD_MAX_STREAMS) {
		td_stream_flush(old, acc);
		td_stream_free(old);
		g_ptr_array_remove_index(td->streams, old_i);
	}
	st->id = id;
	st->vt_ns = now;
	g_ptr_array_add(td->streams, st);
	*made = true;
	return st;
}

/*
 * A slice switch: the arm moves from the shared head position to req's
 * first byte (the seek curve only; the copy adds the rotational wait).
 * Nothing for models without an arm.  Caller holds td->lock.
 */
static void td_switch_seek(struct timedev *td, const struct sfs_io_req *req,
			   struct sfs_dev_cost *acc)
{
	uint64_t from, to, d;
	sfs_ns_t ns;

	if (sfs_devmodel_cylinder(td->model, td->head_off, &from) != 0 ||
	    sfs_devmodel_cylinder(td->model, req->off_bytes, &to) != 0)
		return;
	d = from > to ? from - to : to - from;
	if (sfs_devmodel_seek_ns(td->model, d, req->op == SFS_IO_WRITE, &ns) !=
	    0)
		return;
	td->cnt.slice_switches++;
	acc->seek_ns += ns;
	if (d) {
		acc->seeks++;
		acc->seek_cyl += d;
		acc->seek_bytes += td->head_off > req->off_bytes
				       ? td->head_off - req->off_bytes
				       : req->off_bytes - td->head_off;
	}
}

/*
 * Stream 0's writes (write-back, journal commits) went into the shared
 * model's drive cache.  No copy knows of them, and the shared model alone
 * would take the time the streams spend on their copies for idle time and
 * destage them for free.  A drive has one cache and one arm, so they are
 * written out now, before the stream's request, at `start` (idle time
 * really before it still destages them in the background) and charged to
 * it.  The arm has left the stream's data: its slice ends here, its copy
 * writing out what it holds as at any shared slice end, and the next
 * slice starts with a switch seek.  Caller holds td->lock.
 */
static void td_shared_writeout(struct timedev *td, struct td_stream *st,
			       sfs_ns_t start, struct sfs_dev_cost *acc)
{
	struct sfs_dev_cost c;

	td->shared_dirty = false;
	if (sfs_devmodel_writeout(td->model, start, &c) == 0 && c.total_ns) {
		cost_add(acc, &c);
		td->cnt.shared_writeouts++;
	}
	if (st->in_slice) {
		sfs_ns_t before = st->vt_ns;

		td_stream_flush(st, acc);
		st->carry_ns = st->vt_ns - before;
		st->in_slice = false;
	}
}

/*
 * Cost of a read or write of a stream under per-process slices, started
 * at `start` on the shared timeline (see the head of this file).  Returns
 * false if it must go to the shared model instead.  Caller holds td->lock.
 */
static bool td_stream_cost(struct timedev *td, const struct sfs_io_req *req,
			   sfs_ns_t start, struct sfs_dev_cost *cost)
{
	sfs_ns_t idle = start - td->cnt.busy_until_ns; /* start >= busy */
	struct sfs_dev_cost extra = {0};
	struct td_stream *st;
	bool is_new;

	if (td->served && idle >= td->slices.slice_idle_ns)
		td->epoch++; /* nobody came back in time: every slice ends */
	st = td_stream_get(td, req->stream, start, &extra, &is_new);
	if (!st)
		return false;
	if (!is_new)
		st->vt_ns += idle; /* its drive idled too (background work) */
	if (td->shared_dirty)
		td_shared_writeout(td, st, start, &extra);
	if (!st->in_slice || st->epoch != td->epoch ||
	    st->slice_ns >= td->slices.slice_sync_ns) {
		/*
		 * A new slice.  If someone else had the disk since this
		 * stream's last request, the arm comes over from there.  A
		 * new copy's head starts at offset 0 and its own seek stands
		 * in for this one.
		 */
		if (!is_new && td->last_stream != st->id)
			td_switch_seek(td, req, &extra);
		st->in_slice = true;
		st->slice_ns = st->carry_ns;
		st->carry_ns = 0;
		st->shared = false;
		st->epoch = td->epoch;
	} else if (td->last_stream != st->id) {
		st->shared = true;
	}
	if (sfs_devmodel_cost(st->model, req, st->vt_ns, cost) != 0)
		memset(cost, 0, sizeof(*cost));
	st->vt_ns += cost->total_ns;
	st->slice_ns += cost->total_ns;
	st->dirty |= req->op == SFS_IO_WRITE;
	st->last_use = td->served + 1;
	if (st->slice_ns >= td->slices.slice_sync_ns && st->shared) {
		/*
		 * The slice ends with others waiting: the drive empties its
		 * cache of this stream's writes before serving them.  That
		 * write-out is disk time of this stream: it counts towards
		 * its next slice, so a slice is slice_sync of its disk time.
		 */
		sfs_ns_t before = st->vt_ns;

		td_stream_flush(st, &extra);
		st->carry_ns = st->vt_ns - before;
		st->in_slice = false;
	}
	cost_add(cost, &extra);
	cost->total_ns = cost->overhead_ns + cost->seek_ns + cost->rotation_ns +
			 cost->transfer_ns;
	return true;
}

/*
 * Is req charged in its stream's slice?  Reads and writes of a stream under
 * a slicing scheduler; with sync_writes off, a write is asynchronous (CFQ
 * before Linux 2.6.29 put O_DIRECT writes, submitted as plain WRITE, in the
 * async queue every process shares) and goes to the shared model.
 */
static bool td_sliced(const struct timedev *td, const struct sfs_io_req *req)
{
	if (!td->slicing || !req->stream || req->op == SFS_IO_FLUSH)
		return false;
	return req->op == SFS_IO_READ || td->slices.sync_writes;
}

/*
 * Serve one device request on the model: it may start at `ready`, it was
 * submitted at `submit` and covers n requests.  Returns its completion.
 * Caller holds td->lock.
 */
static sfs_ns_t td_serve(struct timedev *td, const struct sfs_io_req *req,
			 sfs_ns_t ready, sfs_ns_t submit, unsigned n)
{
	struct sfs_timedev_counters *c = &td->cnt;
	struct sfs_timedev_rec rec = {.submit_ns = submit};

	rec.start_ns = MAX(ready, c->busy_until_ns);
	/* requests reaching here passed the blockdev door: they are valid */
	if (!td_sliced(td, req) ||
	    !td_stream_cost(td, req, rec.start_ns, &rec.cost)) {
		if (sfs_devmodel_cost(td->model, req, rec.start_ns,
				      &rec.cost) != 0)
			memset(&rec.cost, 0, sizeof(rec.cost));
		/* stream 0's writes wait in the shared cache (rule 6) */
		if (td->slicing && req->op != SFS_IO_READ)
			td->shared_dirty = req->op == SFS_IO_WRITE;
		if (td->slicing && req->op == SFS_IO_FLUSH) {
			/* a flush empties every stream's drive cache too */
			for (guint i = 0; i < td->streams->len; i++)
				td_stream_flush(
				    g_ptr_array_index(td->streams, i),
				    &rec.cost);
			rec.cost.total_ns =
			    rec.cost.overhead_ns + rec.cost.seek_ns +
			    rec.cost.rotation_ns + rec.cost.transfer_ns;
		}
	}
	rec.done_ns = rec.start_ns + rec.cost.total_ns;
	rec.op = req->op;
	rec.cat = req->cat;
	rec.off_bytes = req->off_bytes;
	rec.len_bytes = req->len_bytes;
	rec.n_merged = n;

	c->busy_until_ns = rec.done_ns;
	c->dev_reqs[req->op]++;
	c->busy_ns += rec.cost.total_ns;
	c->overhead_ns += rec.cost.overhead_ns;
	c->seek_ns += rec.cost.seek_ns;
	c->rotation_ns += rec.cost.rotation_ns;
	c->transfer_ns += rec.cost.transfer_ns;
	c->queue_ns += rec.start_ns - MIN(submit, rec.start_ns);
	c->seeks += rec.cost.seeks;
	c->seek_bytes += rec.cost.seek_bytes;
	c->seek_cyl += rec.cost.seek_cyl;
	c->cache_hits += rec.cost.cache_hit;
	if (req->op != SFS_IO_FLUSH)
		td->head_off = req->off_bytes + req->len_bytes;
	/* a flush's destage leaves the arm anywhere, and an asynchronous
	 * write is in nobody's slice: neither is a stream's */
	td->last_stream = td_sliced(td, req) ? req->stream : 0;
	td->served++;
	if (td->log_fn)
		td->log_fn(td->log_arg, &rec);
	return rec.done_ns;
}

/*
 * Charge every queued write, in scheduler order; each may start at its
 * arrival (once the device is free), deadlines are judged at `now`.
 */
/* A deferred request waiting in the queue (the real queue, see
 * sfs_io_defer_sleep): its owner thread waits until someone served it. */
struct td_pending {
	struct timedev *td;
	sfs_ns_t done_ns; /* its completion; td->lock */
	bool served;	  /* td->lock */
	unsigned stage;	  /* of its thread's operation (td_stage) */
	bool queued;	  /* in td->sched; else held until its stage */
	struct sfs_io_req req; /* held: what to queue */
	sfs_ns_t arrival_ns;   /* held: its arrival, device time */
};

/*
 * Serve the scheduler's next queued request at now (or when the device is
 * free); the deferred requests it covers learn their completion.  0, or
 * -ENOENT when nothing is queued.  Caller holds td->lock.
 */
static int td_dispatch_one(struct timedev *td, sfs_ns_t now)
{
	struct sfs_sched_dispatch d;
	sfs_ns_t submit, done;

	if (sfs_sched_dispatch_next(td->sched, td->head_off,
				    MAX(now, td->cnt.busy_until_ns), &d) != 0)
		return -ENOENT;
	submit = d.orig[0].arrival_ns;
	for (size_t i = 1; i < d.n_orig; i++)
		submit = MIN(submit, d.orig[i].arrival_ns);
	td->cnt.merges += d.n_orig - 1;
	td->cnt.expired += d.expired;
	/* ready at its arrival, not at `now`: on a real clock the host's
	 * time to move the batch overlaps the modelled time, as for
	 * requests charged one by one; on a virtual clock a batch arrives
	 * at one instant and nothing changes */
	done =
	    td_serve(td, &d.req, MIN(submit, now), submit, (unsigned)d.n_orig);
	for (size_t i = 0; i < d.n_orig; i++) {
		struct td_pending *p = d.orig[i].cookie;
		if (p) {
			p->done_ns = done;
			p->served = true;
		}
	}
	return 0;
}

static void td_drain(struct timedev *td, sfs_ns_t now)
{
	while (td_dispatch_one(td, now) == 0)
		;
}

/*
 * Deferred waits (timedev.h, sfs_io_defer_begin): the calling thread's
 * emulate-mode waits are summed up instead of slept, and its next request
 * arrives no earlier than the wait it did not sleep (the request depends
 * on the one before it).  Thread-local, as the kernel's `current`.
 */
static __thread bool td_defer;
static __thread sfs_ns_t td_defer_until; /* clock time */
static __thread GPtrArray *td_pend;	 /* struct td_pending: queued */
/*
 * Stages, as in the event-driven mode (timedev.h): a read, a write outside
 * a batch, or the end of a batch is a point where the operation would
 * have waited, so whatever it submits after it depends on it (the data
 * block an indirect block maps, the write a read decided).  td_stage
 * counts those points in this thread's deferred section; a request of a
 * later stage than the first is held in td_pend and only queued once the
 * stage before it is done (sfs_io_defer_sleep).
 */
static __thread unsigned td_stage;

void sfs_io_defer_begin(void)
{
	td_defer = true;
	td_defer_until = 0;
	td_stage = 0;
}

sfs_ns_t sfs_io_defer_end(void)
{
	sfs_ns_t t = td_defer_until;

	td_defer = false;
	td_defer_until = 0;
	return t;
}

/*
 * Wait for this thread's queued requests: whenever the modelled device is
 * free, whoever waits serves the scheduler's next request, from whichever
 * thread it came (so requests of concurrent operations are sorted and
 * merged together, and CFQ sees their streams), and sleeps until the
 * device is free again; once its own are served, it sleeps until the last
 * of them and until `until`.  Called without any lock of the caller held.
 */
static sfs_ns_t td_now(struct timedev *td);

/* Queue the held requests of p's stage, from td_pend[i] on, arriving no
 * earlier than dep_ns (device time: the stage before it done). */
static void td_queue_stage(guint i, sfs_ns_t dep_ns)
{
	unsigned stage =
	    ((struct td_pending *)g_ptr_array_index(td_pend, i))->stage;

	for (; i < td_pend->len; i++) {
		struct td_pending *p = g_ptr_array_index(td_pend, i);
		struct timedev *td = p->td;

		if (p->stage != stage)
			break;
		if (p->queued)
			continue;
		sfs_mutex_lock(&td->lock);
		p->queued = true;
		if (p->req.op == SFS_IO_FLUSH) {
			/* it follows everything written before it: the
			 * queue is served first (as td_charge does) */
			sfs_ns_t now = MAX(dep_ns, td_now(td));

			td_drain(td, now);
			p->done_ns = td_serve(td, &p->req, now, now, 1);
			p->served = true;
		} else if (sfs_sched_add(
			       td->sched, &p->req,
			       MAX(MAX(p->arrival_ns, dep_ns), td_now(td)),
			       p) == 0) {
			size_t q = sfs_sched_queued(td->sched);
			td->cnt.queue_max = MAX(td->cnt.queue_max, q);
			td->cnt.queue_sum += q;
			td->cnt.queue_samples++;
		} else {
			p->served = true; /* cannot happen: it was valid */
			p->done_ns = dep_ns;
		}
		sfs_mutex_unlock(&td->lock);
	}
}

void sfs_io_defer_sleep(struct sfs_clock *clock, sfs_ns_t until)
{
	unsigned stage = 0;
	sfs_ns_t dep_ns = 0; /* device time: the stages so far are done */

	for (guint i = 0; td_pend && i < td_pend->len; i++) {
		struct td_pending *p = g_ptr_array_index(td_pend, i);
		struct timedev *td = p->td;

		if (p->stage != stage) {
			/* the operation went on only when the stage before
			 * was done: wait for that, then queue this one */
			sfs_mutex_lock(&td->lock);
			sfs_ns_t skew = td->skew_ns;
			sfs_mutex_unlock(&td->lock);
			sfs_clock_sleep_until(clock,
					      dep_ns - MIN(skew, dep_ns));
			stage = p->stage;
			td_queue_stage(i, dep_ns);
		}
		sfs_mutex_lock(&td->lock);
		while (!p->served) {
			sfs_ns_t now =
			    sfs_clock_now_ns(td->clock) + td->skew_ns;
			sfs_ns_t free_at = td->cnt.busy_until_ns;

			if (free_at <= now) {
				if (td_dispatch_one(td, now) != 0)
					break; /* cannot happen: p is queued */
				continue;
			}
			sfs_ns_t skew = td->skew_ns;
			sfs_mutex_unlock(&td->lock);
			sfs_clock_sleep_until(td->clock,
					      free_at - MIN(skew, free_at));
			sfs_mutex_lock(&td->lock);
		}
		until = MAX(until, p->done_ns - MIN(td->skew_ns, p->done_ns));
		dep_ns = MAX(dep_ns, p->done_ns);
		sfs_mutex_unlock(&td->lock);
	}
	if (td_pend) {
		for (guint i = 0; i < td_pend->len; i++)
			g_free(g_ptr_array_index(td_pend, i));
		g_ptr_array_set_size(td_pend, 0);
	}
	if (until)
		sfs_clock_sleep_until(clock, until);
}

/* A request's arrival on the clock: now, or later if it waits for a
 * deferred one. */
static sfs_ns_t td_arrival(struct timedev *td)
{
	sfs_ns_t now = sfs_clock_now_ns(td->clock);

	return td_defer ? MAX(now, td_defer_until) : now;
}

/* Now on the device's timeline.  Caller holds td->lock. */
static sfs_ns_t td_now(struct timedev *td)
{
	return sfs_clock_now_ns(td->clock) + td->skew_ns;
}

/* Emulate: sleep until done (device time; skew as read under the lock). */
static void td_wait(struct timedev *td, sfs_ns_t done, sfs_ns_t skew)
{
	if (g_atomic_int_get(&td->mode) != SFS_TIMEDEV_EMULATE)
		return;
	if (td_defer)
		td_defer_until = MAX(td_defer_until, done - MIN(skew, done));
	else
		sfs_clock_sleep_until(td->clock, done - MIN(skew, done));
}

/*
 * Account a request that arrived at clock time `now` and has been done
 * below.
 */
static void td_charge(struct timedev *td, const struct sfs_io_req *req,
		      sfs_ns_t now)
{
	struct sfs_timedev_counters *c = &td->cnt;
	sfs_ns_t done, skew;

	sfs_mutex_lock(&td->lock);
	skew = td->skew_ns;
	now += skew;
	c->reqs[req->op]++;
	c->bytes[req->op] += req->len_bytes;
	c->cat_reqs[req->op][req->cat]++;
	c->cat_bytes[req->op][req->cat] += req->len_bytes;
	if (td->sink) {
		/* event-driven: the driver times it; a plugged write waits
		 * with its batch, anything else at once */
		bool batch = td->plugged && req->op == SFS_IO_WRITE;
		sfs_mutex_unlock(&td->lock);
		td->sink->submit(td->sink_arg, req);
		if (!batch)
			td->sink->wait(td->sink_arg);
		return;
	}
	if (td_defer && (req->op != SFS_IO_FLUSH || td_stage > 0) &&
	    g_atomic_int_get(&td->mode) == SFS_TIMEDEV_EMULATE) {
		/* the real queue: served when the device is free, in the
		 * scheduler's order among everyone's (sfs_io_defer_sleep) */
		struct td_pending *p = g_new0(struct td_pending, 1);
		bool ends_stage = !(td->plugged && req->op == SFS_IO_WRITE);

		p->td = td;
		p->stage = td_stage;
		if (td_stage > 0) {
			/* it depends on what came before: held (td_stage) */
			p->req = *req;
			p->arrival_ns = now;
		} else if (sfs_sched_add(td->sched, req, now, p) == 0) {
			size_t q = sfs_sched_queued(td->sched);
			c->queue_max = MAX(c->queue_max, q);
			c->queue_sum += q;
			c->queue_samples++;
			p->queued = true;
		} else {
			g_free(p);
			p = NULL;
		}
		if (p) {
			sfs_mutex_unlock(&td->lock);
			td_stage += ends_stage;
			if (!td_pend)
				td_pend = g_ptr_array_new();
			g_ptr_array_add(td_pend, p);
			return;
		}
	}
	if (td->plugged && req->op == SFS_IO_WRITE &&
	    sfs_sched_add(td->sched, req, now, NULL) == 0) {
		sfs_mutex_unlock(&td->lock);
		return;
	}
	td_drain(td, now);
	done = td_serve(td, req, now, now, 1);
	sfs_mutex_unlock(&td->lock);
	td_wait(td, done, skew);
}

/* ---- the device ops ---- */

static int td_read(struct sfs_bdev *bd, uint64_t off, void *buf, size_t len)
{
	struct timedev *td = sfs_bdev_priv(bd);
	struct sfs_io_req req = {SFS_IO_READ, sfs_bdev_req_cat(bd), off, len,
				 sfs_io_stream()};
	sfs_ns_t now = td_arrival(td);
	int rc = sfs_bdev_read(td->lower, req.cat, off, buf, len);

	if (!rc)
		td_charge(td, &req, now);
	return rc;
}

/* A gathered write is one write of len bytes to the modelled device. */
static int td_writev(struct sfs_bdev *bd, uint64_t off, const struct iovec *iov,
		     int iovcnt, size_t len)
{
	struct timedev *td = sfs_bdev_priv(bd);
	struct sfs_io_req req = {SFS_IO_WRITE, sfs_bdev_req_cat(bd), off, len,
				 sfs_io_stream()};
	sfs_ns_t now = td_arrival(td);
	int rc = sfs_bdev_writev(td->lower, req.cat, off, iov, iovcnt);

	if (!rc)
		td_charge(td, &req, now);
	return rc;
}

static int td_write(struct sfs_bdev *bd, uint64_t off, const void *buf,
		    size_t len)
{
	struct iovec v = {(void *)buf, len};

	return td_writev(bd, off, &v, 1, len); /* one buffer: ->write below */
}

/* Zeroing is one write of len bytes to the modelled device. */
static int td_zero(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	struct timedev *td = sfs_bdev_priv(bd);
	struct sfs_io_req req = {SFS_IO_WRITE, sfs_bdev_req_cat(bd), off, len,
				 sfs_io_stream()};
	sfs_ns_t now = td_arrival(td);
	int rc = sfs_bdev_zero(td->lower, req.cat, off, len);

	if (!rc)
		td_charge(td, &req, now);
	return rc;
}

/* Host space for the device below: no request, no modelled time. */
static int td_reserve(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	struct timedev *td = sfs_bdev_priv(bd);

	return sfs_bdev_reserve(td->lower, off, len);
}

static int td_host_room(struct sfs_bdev *bd, uint64_t *bytes_out)
{
	struct timedev *td = sfs_bdev_priv(bd);

	return sfs_bdev_host_room(td->lower, bytes_out);
}

static int td_flush(struct sfs_bdev *bd)
{
	struct timedev *td = sfs_bdev_priv(bd);
	struct sfs_io_req req = {SFS_IO_FLUSH, SFS_IO_OTHER, 0, 0,
				 sfs_io_stream()};
	sfs_ns_t now = td_arrival(td);
	int rc = sfs_bdev_flush(td->lower);

	if (!rc)
		td_charge(td, &req, now);
	return rc;
}

static void td_close(struct sfs_bdev *bd)
{
	struct timedev *td = sfs_bdev_priv(bd);

	/* invariant 2: a batch left plugged is still charged */
	td_drain(td, td_now(td));
	sfs_bdev_close(td->lower);
	g_ptr_array_free(td->streams, TRUE);
	g_free(td->model_spec);
	sfs_sched_free(td->sched);
	sfs_devmodel_free(td->model);
	g_ptr_array_free(td->old_models, TRUE);
	sfs_mutex_clear(&td->lock);
	g_free(td);
}

/* ---- the verbs ---- */

int sfs_timedev_new(struct sfs_bdev *lower, struct sfs_clock *clock,
		    const struct sfs_timedev_opts *opts, struct sfs_bdev **out,
		    char **err)
{
	struct sfs_dev_geometry g;
	struct timedev *td;
	int rc;

	*out = NULL;
	if (!lower || !clock || !opts ||
	    (opts->mode != SFS_TIMEDEV_ACCOUNT &&
	     opts->mode != SFS_TIMEDEV_EMULATE)) {
		if (err)
			*err = g_strdup("timing device: need a device, a clock "
					"and mode account or emulate");
		return -EINVAL;
	}
	td = g_new0(struct timedev, 1);
	td->lower = lower;
	td->clock = clock;
	td->mode = opts->mode;
	td->old_models =
	    g_ptr_array_new_with_free_func((GDestroyNotify)sfs_devmodel_free);
	rc = sfs_devmodel_new(opts->model ? opts->model : "hdd-2009",
			      &td->model, err);
	if (rc)
		goto out_free;
	sfs_devmodel_geometry(td->model, &g);
	if (g.capacity_bytes && sfs_bdev_size_bytes(lower) > g.capacity_bytes) {
		if (err)
			*err = g_strdup_printf(
			    "timing device: device model %s holds %llu "
			    "bytes, the device has %llu (raise capacity=)",
			    sfs_devmodel_name(td->model),
			    (unsigned long long)g.capacity_bytes,
			    (unsigned long long)sfs_bdev_size_bytes(lower));
		rc = -EINVAL;
		goto out_free;
	}
	rc = sfs_sched_new(opts->sched ? opts->sched : "elevator", &td->sched,
			   err);
	if (rc)
		goto out_free;
	td->slicing = sfs_sched_slices(td->sched, &td->slices) == 0;
	td->model_spec = g_strdup(opts->model ? opts->model : "hdd-2009");
	td->streams =
	    g_ptr_array_new_with_free_func((GDestroyNotify)td_stream_free);
	sfs_mutex_init(&td->lock);
	*out = sfs_bdev_new(&td_ops, td, sfs_bdev_size_bytes(lower));
	sfs_bdev_set_known_zero(*out, sfs_bdev_known_zero(lower));
	return 0;
out_free:
	sfs_sched_free(td->sched);
	sfs_devmodel_free(td->model);
	g_ptr_array_free(td->old_models, TRUE);
	g_free(td);
	return rc;
}

int sfs_timedev_mode_parse(const char *text, enum sfs_timedev_mode *out)
{
	if (text && strcmp(text, "account") == 0)
		*out = SFS_TIMEDEV_ACCOUNT;
	else if (text && strcmp(text, "emulate") == 0)
		*out = SFS_TIMEDEV_EMULATE;
	else
		return -EINVAL;
	return 0;
}

int sfs_timedev_plug(struct sfs_bdev *bd)
{
	struct timedev *td = td_of(bd);

	if (!td)
		return -EINVAL;
	sfs_mutex_lock(&td->lock);
	td->plugged++;
	sfs_mutex_unlock(&td->lock);
	return 0;
}

int sfs_timedev_unplug(struct sfs_bdev *bd)
{
	struct timedev *td = td_of(bd);
	sfs_ns_t done, skew;

	if (!td)
		return -EINVAL;
	sfs_mutex_lock(&td->lock);
	if (!td->plugged) {
		sfs_mutex_unlock(&td->lock);
		return -EINVAL;
	}
	if (--td->plugged) {
		sfs_mutex_unlock(&td->lock);
		return 0;
	}
	if (td->sink) {
		sfs_mutex_unlock(&td->lock);
		td->sink->wait(td->sink_arg);
		return 0;
	}
	if (td_defer && g_atomic_int_get(&td->mode) == SFS_TIMEDEV_EMULATE) {
		/* the batch waits in the real queue with everyone's; what
		 * the operation submits next comes after it (td_stage) */
		sfs_mutex_unlock(&td->lock);
		td_stage++;
		return 0;
	}
	td_drain(td, td_now(td));
	done = td->cnt.busy_until_ns;
	skew = td->skew_ns;
	sfs_mutex_unlock(&td->lock);
	td_wait(td, done, skew);
	return 0;
}

int sfs_timedev_counters(struct sfs_bdev *bd, struct sfs_timedev_counters *out)
{
	struct timedev *td = td_of(bd);

	if (!td)
		return -EINVAL;
	sfs_mutex_lock(&td->lock);
	*out = td->cnt;
	sfs_mutex_unlock(&td->lock);
	return 0;
}

int sfs_timedev_set_log(struct sfs_bdev *bd, sfs_timedev_log_fn fn, void *arg)
{
	struct timedev *td = td_of(bd);

	if (!td)
		return -EINVAL;
	sfs_mutex_lock(&td->lock);
	td->log_fn = fn;
	td->log_arg = fn ? arg : NULL;
	sfs_mutex_unlock(&td->lock);
	return 0;
}

const struct sfs_devmodel *sfs_timedev_model(struct sfs_bdev *bd)
{
	struct timedev *td = td_of(bd);
	const struct sfs_devmodel *m;

	if (!td)
		return NULL;
	sfs_mutex_lock(&td->lock);
	m = td->model;
	sfs_mutex_unlock(&td->lock);
	return m;
}

int sfs_timedev_mode(struct sfs_bdev *bd, enum sfs_timedev_mode *out)
{
	struct timedev *td = td_of(bd);

	if (!td)
		return -EINVAL;
	*out = (enum sfs_timedev_mode)g_atomic_int_get(&td->mode);
	return 0;
}

int sfs_timedev_set_mode(struct sfs_bdev *bd, enum sfs_timedev_mode mode)
{
	struct timedev *td = td_of(bd);
	sfs_ns_t now;

	if (!td || (mode != SFS_TIMEDEV_ACCOUNT && mode != SFS_TIMEDEV_EMULATE))
		return -EINVAL;
	sfs_mutex_lock(&td->lock);
	if (g_atomic_int_get(&td->mode) != SFS_TIMEDEV_EMULATE &&
	    mode == SFS_TIMEDEV_EMULATE && !sfs_clock_is_virtual(td->clock)) {
		/* forgive account mode's backlog: idle from now on */
		now = td_now(td);
		if (td->cnt.busy_until_ns > now)
			td->skew_ns += td->cnt.busy_until_ns - now;
	}
	g_atomic_int_set(&td->mode, mode);
	sfs_mutex_unlock(&td->lock);
	return 0;
}

int sfs_timedev_set_model(struct sfs_bdev *bd, const char *spec, char **err)
{
	struct timedev *td = td_of(bd);
	struct sfs_devmodel *m = NULL;
	struct sfs_dev_geometry g;
	int rc;

	if (!td || !spec) {
		if (err)
			*err = g_strdup("not a timing device, or no model");
		return -EINVAL;
	}
	rc = sfs_devmodel_new(spec, &m, err);
	if (rc)
		return rc;
	sfs_devmodel_geometry(m, &g);
	if (g.capacity_bytes &&
	    sfs_bdev_size_bytes(td->lower) > g.capacity_bytes) {
		if (err)
			*err = g_strdup_printf(
			    "timing device: device model %s holds %llu "
			    "bytes, the device has %llu (raise capacity=)",
			    sfs_devmodel_name(m),
			    (unsigned long long)g.capacity_bytes,
			    (unsigned long long)sfs_bdev_size_bytes(td->lower));
		sfs_devmodel_free(m);
		return -EINVAL;
	}
	sfs_mutex_lock(&td->lock);
	g_ptr_array_add(td->old_models, td->model);
	td->model = m;
	/* stream copies start over on the new model, and so does the shared
	 * cache; what the old caches held is not charged */
	g_ptr_array_set_size(td->streams, 0);
	td->shared_dirty = false;
	g_free(td->model_spec);
	td->model_spec = g_strdup(spec);
	sfs_mutex_unlock(&td->lock);
	return 0;
}

/* ---- the event-driven mode (a driver of virtual time) ---- */

int sfs_timedev_set_sink(struct sfs_bdev *bd, const struct sfs_timedev_sink *s,
			 void *arg)
{
	struct timedev *td = td_of(bd);

	if (!td)
		return -EINVAL;
	sfs_mutex_lock(&td->lock);
	td->sink = s;
	td->sink_arg = arg;
	sfs_mutex_unlock(&td->lock);
	return 0;
}

int sfs_timedev_queue(struct sfs_bdev *bd, const struct sfs_io_req *req,
		      sfs_ns_t arrival_ns, void *cookie)
{
	struct timedev *td = td_of(bd);
	int rc;

	if (!td)
		return -EINVAL;
	sfs_mutex_lock(&td->lock);
	rc = sfs_sched_add(td->sched, req, arrival_ns, cookie);
	sfs_mutex_unlock(&td->lock);
	return rc;
}

int sfs_timedev_dispatch(struct sfs_bdev *bd, sfs_ns_t now,
			 struct sfs_timedev_served *out)
{
	struct timedev *td = td_of(bd);
	struct sfs_sched_dispatch d;

	if (!td)
		return -EINVAL;
	sfs_mutex_lock(&td->lock);
	if (sfs_sched_dispatch_next(td->sched, td->head_off,
				    MAX(now, td->cnt.busy_until_ns), &d) != 0) {
		sfs_mutex_unlock(&td->lock);
		return -ENOENT;
	}
	sfs_ns_t submit = d.orig[0].arrival_ns;
	for (size_t i = 1; i < d.n_orig; i++)
		submit = MIN(submit, d.orig[i].arrival_ns);
	td->cnt.merges += d.n_orig - 1;
	td->cnt.expired += d.expired;
	out->done_ns = td_serve(td, &d.req, now, submit, (unsigned)d.n_orig);
	out->n = MIN(d.n_orig, G_N_ELEMENTS(out->cookies));
	out->n_total = d.n_orig;
	for (size_t i = 0; i < out->n; i++)
		out->cookies[i] = d.orig[i].cookie;
	out->more = NULL;
	if (d.n_orig > G_N_ELEMENTS(out->cookies)) {
		out->more = g_new(void *, d.n_orig);
		for (size_t i = 0; i < d.n_orig; i++)
			out->more[i] = d.orig[i].cookie;
	}
	sfs_mutex_unlock(&td->lock);
	return 0;
}

sfs_ns_t sfs_timedev_serve_flush(struct sfs_bdev *bd, sfs_ns_t now)
{
	struct timedev *td = td_of(bd);
	struct sfs_io_req req = {SFS_IO_FLUSH, SFS_IO_OTHER, 0, 0, 0};
	sfs_ns_t done;

	if (!td)
		return now;
	sfs_mutex_lock(&td->lock);
	done = td_serve(td, &req, now, now, 1);
	sfs_mutex_unlock(&td->lock);
	return done;
}

static const struct sfs_bdev_ops td_ops = {
    .name = "timedev",
    .read = td_read,
    .write = td_write,
    .flush = td_flush,
    .close = td_close,
    .zero = td_zero,
    .reserve = td_reserve,
    .host_room = td_host_room,
    .writev = td_writev,
};
