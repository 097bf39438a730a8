/*
 * timedev.c - the timing device (see timedev.h): data to the device below,
 * time from a device model, batches through an I/O scheduler.
 *
 * Each request entering through the blockdev door runs:
 *   td_read/td_write/td_zero/td_flush   read the clock (arrival), do the
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
 */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "sched.h"
#include "timedev.h"

struct timedev {
	struct sfs_bdev *lower;	 /* owned */
	struct sfs_clock *clock; /* the caller's */
	gint mode;		 /* enum sfs_timedev_mode; atomic */
	GMutex lock;
	sfs_ns_t skew_ns;		 /* device time - clock time; lock */
	struct sfs_devmodel *model;	 /* owned; lock */
	GPtrArray *old_models;		 /* replaced ones, freed at close */
	struct sfs_sched *sched;	 /* owned; lock */
	unsigned plugged;		 /* plug depth; lock */
	uint64_t head_off;		 /* invariant 3; lock */
	struct sfs_timedev_counters cnt; /* lock */
	sfs_timedev_log_fn log_fn;	 /* lock */
	void *log_arg;			 /* lock */
};

static const struct sfs_bdev_ops td_ops;

static struct timedev *td_of(struct sfs_bdev *bd)
{
	if (!bd || sfs_bdev_name(bd) != td_ops.name)
		return NULL;
	return sfs_bdev_priv(bd);
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
	if (sfs_devmodel_cost(td->model, req, rec.start_ns, &rec.cost) != 0)
		memset(&rec.cost, 0, sizeof(rec.cost));
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
	if (td->log_fn)
		td->log_fn(td->log_arg, &rec);
	return rec.done_ns;
}

/*
 * Charge every queued write, in scheduler order; each may start at its
 * arrival (once the device is free), deadlines are judged at `now`.
 */
static void td_drain(struct timedev *td, sfs_ns_t now)
{
	struct sfs_sched_dispatch d;

	while (sfs_sched_dispatch_next(td->sched, td->head_off,
				       MAX(now, td->cnt.busy_until_ns),
				       &d) == 0) {
		sfs_ns_t submit = d.orig[0].arrival_ns;

		for (size_t i = 1; i < d.n_orig; i++)
			submit = MIN(submit, d.orig[i].arrival_ns);
		td->cnt.merges += d.n_orig - 1;
		td->cnt.expired += d.expired;
		/* ready at its arrival, not at `now`: on a real clock the
		 * host's time to move the batch overlaps the modelled time,
		 * as for requests charged one by one; on a virtual clock a
		 * batch arrives at one instant and nothing changes */
		td_serve(td, &d.req, MIN(submit, now), submit,
			 (unsigned)d.n_orig);
	}
}

/* Now on the device's timeline.  Caller holds td->lock. */
static sfs_ns_t td_now(struct timedev *td)
{
	return sfs_clock_now_ns(td->clock) + td->skew_ns;
}

/* Emulate: sleep until done (device time; skew as read under the lock). */
static void td_wait(struct timedev *td, sfs_ns_t done, sfs_ns_t skew)
{
	if (g_atomic_int_get(&td->mode) == SFS_TIMEDEV_EMULATE)
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

	g_mutex_lock(&td->lock);
	skew = td->skew_ns;
	now += skew;
	c->reqs[req->op]++;
	c->bytes[req->op] += req->len_bytes;
	c->cat_reqs[req->op][req->cat]++;
	c->cat_bytes[req->op][req->cat] += req->len_bytes;
	if (td->plugged && req->op == SFS_IO_WRITE &&
	    sfs_sched_add(td->sched, req, now, NULL) == 0) {
		g_mutex_unlock(&td->lock);
		return;
	}
	td_drain(td, now);
	done = td_serve(td, req, now, now, 1);
	g_mutex_unlock(&td->lock);
	td_wait(td, done, skew);
}

/* ---- the device ops ---- */

static int td_read(struct sfs_bdev *bd, uint64_t off, void *buf, size_t len)
{
	struct timedev *td = sfs_bdev_priv(bd);
	struct sfs_io_req req = {SFS_IO_READ, sfs_bdev_req_cat(bd), off, len};
	sfs_ns_t now = sfs_clock_now_ns(td->clock);
	int rc = sfs_bdev_read(td->lower, req.cat, off, buf, len);

	if (!rc)
		td_charge(td, &req, now);
	return rc;
}

static int td_write(struct sfs_bdev *bd, uint64_t off, const void *buf,
		    size_t len)
{
	struct timedev *td = sfs_bdev_priv(bd);
	struct sfs_io_req req = {SFS_IO_WRITE, sfs_bdev_req_cat(bd), off, len};
	sfs_ns_t now = sfs_clock_now_ns(td->clock);
	int rc = sfs_bdev_write(td->lower, req.cat, off, buf, len);

	if (!rc)
		td_charge(td, &req, now);
	return rc;
}

/* Zeroing is one write of len bytes to the modelled device. */
static int td_zero(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	struct timedev *td = sfs_bdev_priv(bd);
	struct sfs_io_req req = {SFS_IO_WRITE, sfs_bdev_req_cat(bd), off, len};
	sfs_ns_t now = sfs_clock_now_ns(td->clock);
	int rc = sfs_bdev_zero(td->lower, req.cat, off, len);

	if (!rc)
		td_charge(td, &req, now);
	return rc;
}

static int td_flush(struct sfs_bdev *bd)
{
	struct timedev *td = sfs_bdev_priv(bd);
	struct sfs_io_req req = {SFS_IO_FLUSH, SFS_IO_OTHER, 0, 0};
	sfs_ns_t now = sfs_clock_now_ns(td->clock);
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
	sfs_sched_free(td->sched);
	sfs_devmodel_free(td->model);
	g_ptr_array_free(td->old_models, TRUE);
	g_mutex_clear(&td->lock);
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
	g_mutex_init(&td->lock);
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
	g_mutex_lock(&td->lock);
	td->plugged++;
	g_mutex_unlock(&td->lock);
	return 0;
}

int sfs_timedev_unplug(struct sfs_bdev *bd)
{
	struct timedev *td = td_of(bd);
	sfs_ns_t done, skew;

	if (!td)
		return -EINVAL;
	g_mutex_lock(&td->lock);
	if (!td->plugged) {
		g_mutex_unlock(&td->lock);
		return -EINVAL;
	}
	if (--td->plugged) {
		g_mutex_unlock(&td->lock);
		return 0;
	}
	td_drain(td, td_now(td));
	done = td->cnt.busy_until_ns;
	skew = td->skew_ns;
	g_mutex_unlock(&td->lock);
	td_wait(td, done, skew);
	return 0;
}

int sfs_timedev_counters(struct sfs_bdev *bd, struct sfs_timedev_counters *out)
{
	struct timedev *td = td_of(bd);

	if (!td)
		return -EINVAL;
	g_mutex_lock(&td->lock);
	*out = td->cnt;
	g_mutex_unlock(&td->lock);
	return 0;
}

int sfs_timedev_set_log(struct sfs_bdev *bd, sfs_timedev_log_fn fn, void *arg)
{
	struct timedev *td = td_of(bd);

	if (!td)
		return -EINVAL;
	g_mutex_lock(&td->lock);
	td->log_fn = fn;
	td->log_arg = fn ? arg : NULL;
	g_mutex_unlock(&td->lock);
	return 0;
}

const struct sfs_devmodel *sfs_timedev_model(struct sfs_bdev *bd)
{
	struct timedev *td = td_of(bd);
	const struct sfs_devmodel *m;

	if (!td)
		return NULL;
	g_mutex_lock(&td->lock);
	m = td->model;
	g_mutex_unlock(&td->lock);
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
	g_mutex_lock(&td->lock);
	if (g_atomic_int_get(&td->mode) != SFS_TIMEDEV_EMULATE &&
	    mode == SFS_TIMEDEV_EMULATE && !sfs_clock_is_virtual(td->clock)) {
		/* forgive account mode's backlog: idle from now on */
		now = td_now(td);
		if (td->cnt.busy_until_ns > now)
			td->skew_ns += td->cnt.busy_until_ns - now;
	}
	g_atomic_int_set(&td->mode, mode);
	g_mutex_unlock(&td->lock);
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
	g_mutex_lock(&td->lock);
	g_ptr_array_add(td->old_models, td->model);
	td->model = m;
	g_mutex_unlock(&td->lock);
	return 0;
}

static const struct sfs_bdev_ops td_ops = {
    .name = "timedev",
    .read = td_read,
    .write = td_write,
    .flush = td_flush,
    .close = td_close,
    .zero = td_zero,
};
