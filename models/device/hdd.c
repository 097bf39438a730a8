/*
 * hdd.c - a rotating disk after Ruemmler & Wilkes (1994): command overhead,
 * a seek curve, rotational position, zoned media rate with head and cylinder
 * switches, and an on-drive cache with read-ahead segments and an optional
 * write-back cache.  Deterministic: the spindle's angle is a function of
 * time, so nothing is drawn at random.
 *
 * Geometry (derived in hdd_init from the knobs):
 *   zones of equal cylinder count; zone z's media rate falls linearly from
 *   outer_mbps (z = 0, byte 0) to inner_mbps (last zone); a track of zone z
 *   holds rate_z * revolution bytes (whole sectors); a cylinder holds heads
 *   tracks; cylinders per zone = capacity / bytes of one cylinder of each
 *   zone, rounded up.  Byte offsets map to (zone, track, cylinder, head,
 *   byte in track) in that order: LBA order, outer to inner.
 *   Track t starts at angle (head switches before t * head_switch + cylinder
 *   switches before t * seek_t2t) / revolution: the skew that lets a
 *   sequential transfer continue after a switch without losing a turn.
 *
 * A media access at time t from head position h to [off, off + len):
 *   seek(d) over d = |cyl(off) - cyl(h)| (+ write_settle for writes;
 *   head_switch if d = 0 on another surface) + rotation (until off's angle
 *   comes under the head) + transfer (bytes / zone rate + one switch per
 *   track boundary crossed).
 *   seek(1) = t2t; seek(d) = a + b*sqrt(d) for d < knee, c + e*d beyond.
 *   a, b, c, e are fitted to t2t/avg/max: the curve is continuous with a
 *   continuous slope at the knee, reaches max at full stroke, and its mean
 *   over the datasheet's weighting of seek distances (uniform start and end
 *   cylinders) is avg.  Or give all four explicitly.
 *
 * Drive cache:
 *   read: a miss is read from the media into the least recently used
 *     segment; the drive then goes on reading ahead (up to read_ahead bytes
 *     past the request) at media speed until the next media access.  A read
 *     that lies in a segment, or in the stream being read ahead, is a hit:
 *     it waits only for the stream to reach its end.
 *   write (write_cache on): a write is absorbed at bus speed while the
 *     cache has room; when it has none, enough queued writes are destaged
 *     first (seek + rotation + transfer each, order per `destage`).  In idle
 *     time (after any read-ahead) queued writes are destaged in the
 *     background; only destages that finish before the next request arrives
 *     are done.  A flush destages everything.
 *   See doc/device-models.md for what is approximate.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <glib.h>

#include "devmodel.h"

enum { HDD_DESTAGE_FIFO = 0, HDD_DESTAGE_CLOOK = 1 };

struct hdd_params {
	uint64_t capacity;  /* bytes */
	double rpm;	    /* spindle speed */
	uint64_t heads;	    /* recording surfaces */
	uint64_t zones;	    /* recording zones */
	double outer_mbps;  /* media rate in zone 0, 10^6 B/s */
	double inner_mbps;  /* media rate in the last zone */
	double seek_t2t_ms; /* one-cylinder seek = cylinder switch */
	double seek_avg_ms; /* datasheet average (read) */
	double seek_max_ms; /* full stroke (read) */
	double seek_knee;   /* sqrt -> linear, fraction of full stroke */
	double seek_a_ms;   /* explicit coefficients, or NaN (fit) */
	double seek_b_ms;   /* ms per sqrt(cylinder) */
	double seek_c_ms;
	double seek_e_ms;	/* ms per cylinder */
	double write_settle_ms; /* extra settle on a write seek */
	double head_switch_ms;	/* switch to another surface */
	double overhead_ms;	/* command overhead, media access */
	double hit_overhead_ms; /* command overhead, cache hit / cached write */
	double bus_mbps;	/* host interface rate, 10^6 B/s */
	uint64_t segments;	/* read cache segments; 0 = no read cache */
	uint64_t segment_size;	/* bytes per segment */
	uint64_t read_ahead;	/* bytes read ahead past a read; 0 = off */
	bool write_cache;	/* write-back cache on */
	uint64_t write_cache_size; /* bytes of writes it holds */
	int destage;		   /* HDD_DESTAGE_* */
	double flush_ms;	   /* flush command overhead */
};

struct hdd_zone {
	uint64_t start;	      /* first byte */
	uint64_t track_bytes; /* bytes per track */
	uint64_t first_track; /* global index of its first track */
};

struct hdd_seg {
	bool valid;
	uint64_t start;	 /* first cached byte */
	uint64_t end;	 /* cached up to here; the stream's base if streaming */
	uint64_t target; /* streaming: read-ahead stops here */
	sfs_ns_t t0;	 /* streaming: time the head is at `end` */
	uint64_t stamp;	 /* last use, for LRU */
};

struct hdd_wentry {
	uint64_t off, len;
	sfs_ns_t queued; /* time the data was in the cache */
};

/* Timing of one planned media access. */
struct hdd_access {
	sfs_ns_t seek, rot, xfer;
	uint64_t dcyl, dbytes;
	bool moved; /* did not start under the head */
};

struct hdd {
	struct hdd_params p;
	/* geometry, fixed at init */
	double rev_ns;
	uint32_t nzones;
	struct hdd_zone *zone; /* nzones entries */
	uint64_t cyl_per_zone, cylinders, capacity;
	double sa, sb, sc, se, knee_cyl; /* seek curve, ns and cylinders */
	double t2t_ns, settle_ns, hs_ns, oh_ns, hit_oh_ns, flush_ns;
	double bus_bpns; /* bytes per ns */
	/* state */
	uint64_t head_off;   /* byte under the head after its last access */
	sfs_ns_t head_free;  /* when the head finished its last work */
	struct hdd_seg *seg; /* p.segments entries */
	int streaming;	     /* index of the segment being read ahead, or -1 */
	uint64_t stamp;
	GArray *wq; /* struct hdd_wentry, arrival order */
	uint64_t wq_bytes;
};

static sfs_ns_t ns_round(double ns)
{
	return ns <= 0 ? 0 : (sfs_ns_t)llround(ns);
}

/* ---- geometry ---- */

struct hdd_pos {
	uint64_t track; /* global track index */
	uint64_t cyl;
	uint64_t head;
	uint64_t byte;	      /* offset within the track */
	uint64_t track_bytes; /* bytes of that track */
};

static uint32_t hdd_zone_of(const struct hdd *h, uint64_t off)
{
	uint32_t lo = 0, hi = h->nzones - 1;

	while (lo < hi) {
		uint32_t mid = (lo + hi + 1) / 2;

		if (h->zone[mid].start <= off)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

static void hdd_locate(const struct hdd *h, uint64_t off, struct hdd_pos *pos)
{
	const struct hdd_zone *z;
	uint64_t local, t;

	if (off >= h->capacity)
		off = h->capacity - 1;
	z = &h->zone[hdd_zone_of(h, off)];
	local = off - z->start;
	t = local / z->track_bytes;
	pos->track = z->first_track + t;
	pos->cyl = pos->track / h->p.heads;
	pos->head = pos->track % h->p.heads;
	pos->byte = local % z->track_bytes;
	pos->track_bytes = z->track_bytes;
}

/* Angle (fraction of a turn) at which track t's first byte passes. */
static double hdd_track_angle(const struct hdd *h, uint64_t track)
{
	uint64_t cyl = track / h->p.heads;
	double skew_ns =
	    h->hs_ns * (double)(track - cyl) + h->t2t_ns * (double)cyl;

	return fmod(skew_ns, h->rev_ns) / h->rev_ns;
}

/* Wait at time t until the byte at pos comes under the head: [0, rev). */
static sfs_ns_t hdd_rot_latency(const struct hdd *h, const struct hdd_pos *pos,
				sfs_ns_t t)
{
	double target = hdd_track_angle(h, pos->track) +
			(double)pos->byte / (double)pos->track_bytes;
	double now = fmod((double)t, h->rev_ns) / h->rev_ns;
	double frac = target - now;
	double lat;

	frac -= floor(frac);
	lat = frac * h->rev_ns;
	/* a full turn within rounding is no wait: the sector is here */
	if (lat > h->rev_ns - 2.0)
		lat = 0;
	return ns_round(lat);
}

/* Media time for [off, off + len): bytes at zone rate + track switches. */
static double hdd_xfer_ns(const struct hdd *h, uint64_t off, uint64_t len)
{
	uint64_t end = off + len, pos = off;
	struct hdd_pos a, b;
	double ns = 0;
	uint64_t tracks, cyls;

	if (len == 0)
		return 0;
	while (pos < end) {
		uint32_t z =
		    hdd_zone_of(h, pos < h->capacity ? pos : h->capacity - 1);
		uint64_t zend =
		    z + 1 < h->nzones ? h->zone[z + 1].start : UINT64_MAX;
		uint64_t n = MIN(end, zend) - pos;

		ns += (double)n * h->rev_ns / (double)h->zone[z].track_bytes;
		pos += n;
	}
	hdd_locate(h, off, &a);
	hdd_locate(h, end - 1, &b);
	tracks = b.track - a.track;
	cyls = b.cyl - a.cyl;
	return ns + (double)(tracks - cyls) * h->hs_ns +
	       (double)cyls * h->t2t_ns;
}

/* ---- seek curve ---- */

static double hdd_seek_raw_ns(const struct hdd *h, uint64_t d)
{
	if (d == 0)
		return 0;
	if (d == 1)
		return h->t2t_ns;
	if ((double)d < h->knee_cyl)
		return MAX(h->t2t_ns, h->sa + h->sb * sqrt((double)d));
	return MAX(h->t2t_ns, h->sc + h->se * (double)d);
}

/* Seek time over d cylinders, with the write settle for writes. */
static sfs_ns_t hdd_seek_ns(const struct hdd *h, uint64_t d, bool write)
{
	if (d == 0)
		return 0;
	return ns_round(hdd_seek_raw_ns(h, d) + (write ? h->settle_ns : 0));
}

static sfs_ns_t hdd_seek_time(const struct sfs_devmodel *m, uint64_t d_cyl,
			      bool write)
{
	return hdd_seek_ns(m->priv, d_cyl, write);
}

/* Solve the 4x4 system a x = r in place (partial pivoting). */
static bool solve4(double a[4][4], double r[4], double x[4])
{
	for (int i = 0; i < 4; i++) {
		int p = i;

		for (int j = i + 1; j < 4; j++)
			if (fabs(a[j][i]) > fabs(a[p][i]))
				p = j;
		if (fabs(a[p][i]) < 1e-300)
			return false;
		for (int k = 0; k < 4; k++) {
			double t = a[i][k];

			a[i][k] = a[p][k];
			a[p][k] = t;
		}
		double t = r[i];
		r[i] = r[p];
		r[p] = t;
		for (int j = 0; j < 4; j++) {
			double f;

			if (j == i)
				continue;
			f = a[j][i] / a[i][i];
			for (int k = i; k < 4; k++)
				a[j][k] -= f * a[i][k];
			r[j] -= f * r[i];
		}
	}
	for (int i = 0; i < 4; i++)
		x[i] = r[i] / a[i][i];
	return true;
}

/*
 * Fit seek(d) = a + b*sqrt(d) (d < k), c + e*d (d >= k) so that it is
 * continuous with a continuous slope at k, seek(n) = max, and its mean over
 * distances with density 2(n - d)/n^2 (uniform start and end) is avg.
 */
static bool hdd_fit_seek(double n, double k, double avg, double max,
			 double x[4])
{
	double sk = sqrt(k);
	double p1 = (2 * n * k - k * k) / (n * n);
	double s1 = 2 / (n * n) * (n * 2.0 / 3.0 * k * sk - 0.4 * k * k * sk);
	double d2 =
	    2 / (n * n) * (n * n * n / 6.0 - n * k * k / 2.0 + k * k * k / 3.0);
	double a[4][4] = {
	    {1, sk, -1, -k},
	    {0, 1 / (2 * sk), 0, -1},
	    {0, 0, 1, n},
	    {p1, s1, 1 - p1, d2},
	};
	double r[4] = {0, 0, max, avg};

	return solve4(a, r, x);
}

/* ---- write queue ---- */

static struct hdd_wentry *wq_at(struct hdd *h, guint i)
{
	return &g_array_index(h->wq, struct hdd_wentry, i);
}

/* Index of the queued write to destage next. */
static guint hdd_wq_pick(struct hdd *h)
{
	guint best = 0, lowest = 0;
	bool ahead = false;

	if (h->p.destage == HDD_DESTAGE_FIFO)
		return 0;
	/* C-LOOK: nearest at or after the head, else the lowest */
	for (guint i = 0; i < h->wq->len; i++) {
		uint64_t off = wq_at(h, i)->off;

		if (off < wq_at(h, lowest)->off)
			lowest = i;
		if (off >= h->head_off &&
		    (!ahead || off < wq_at(h, best)->off)) {
			best = i;
			ahead = true;
		}
	}
	return ahead ? best : lowest;
}

/* ---- media access ---- */

static void hdd_plan(const struct hdd *h, uint64_t off, uint64_t len,
		     bool write, sfs_ns_t t, struct hdd_access *a)
{
	struct hdd_pos from, to;

	hdd_locate(h, h->head_off, &from);
	hdd_locate(h, off, &to);
	memset(a, 0, sizeof(*a));
	a->moved = off != h->head_off;
	a->dbytes = off > h->head_off ? off - h->head_off : h->head_off - off;
	a->dcyl = to.cyl > from.cyl ? to.cyl - from.cyl : from.cyl - to.cyl;
	a->xfer = ns_round(hdd_xfer_ns(h, off, len));
	if (!a->moved && t == h->head_free) {
		/*
		 * Going on where the head stopped, without a pause: no
		 * rotational wait, only the switch at a track boundary (the
		 * skew).  Exact, so long streams do not drift by rounding.
		 */
		if (off && to.byte == 0)
			a->seek = ns_round(to.head ? h->hs_ns : h->t2t_ns);
		return;
	}
	if (a->dcyl)
		a->seek = hdd_seek_ns(h, a->dcyl, write);
	else if (to.head != from.head)
		a->seek = ns_round(h->hs_ns);
	a->rot = hdd_rot_latency(h, &to, t + a->seek);
}

/* Do the planned access started at t; returns when it ends. */
static sfs_ns_t hdd_commit(struct hdd *h, uint64_t off, uint64_t len,
			   sfs_ns_t t, const struct hdd_access *a,
			   struct sfs_dev_cost *cost)
{
	cost->seek_ns += a->seek;
	cost->rotation_ns += a->rot;
	cost->transfer_ns += a->xfer;
	if (a->moved) {
		cost->seeks++;
		cost->seek_bytes += a->dbytes;
		cost->seek_cyl += a->dcyl;
	}
	h->head_off = off + len;
	h->head_free = t + a->seek + a->rot + a->xfer;
	return h->head_free;
}

/*
 * Destage queued writes (in `destage` order) until at most `keep` bytes
 * remain, or until the next one would end after `until`.  Each starts when
 * the head is free and its data has arrived.  A request's own destage (bg
 * false) adds its time to *cost; the drive's background destage (bg true)
 * only counts its arm movements there.  Returns when the head is free.
 */
static sfs_ns_t hdd_destage(struct hdd *h, uint64_t keep, sfs_ns_t until,
			    bool bg, struct sfs_dev_cost *cost)
{
	while (h->wq->len && h->wq_bytes > keep) {
		guint i = hdd_wq_pick(h);
		struct hdd_wentry e = *wq_at(h, i);
		sfs_ns_t t = MAX(h->head_free, e.queued);
		struct sfs_dev_cost part = {0};
		struct hdd_access a;

		/*
		 * A destage that does not go on from where the last transfer
		 * stopped, without a pause, is a new media access: the drive
		 * sets it up (overhead_ms) before the arm can move, so a short
		 * skip forward finds its sector already gone by and waits
		 * most of a turn.
		 */
		sfs_ns_t setup = e.off != h->head_off || t != h->head_free
				     ? ns_round(h->oh_ns)
				     : 0;

		hdd_plan(h, e.off, e.len, true, t + setup, &a);
		if (t + setup + a.seek + a.rot + a.xfer > until)
			break;
		if (!bg)
			cost->overhead_ns += setup;
		t += setup;
		hdd_commit(h, e.off, e.len, t, &a, bg ? &part : cost);
		g_array_remove_index(h->wq, i);
		h->wq_bytes -= e.len;
		cost->seeks += part.seeks;
		cost->seek_bytes += part.seek_bytes;
		cost->seek_cyl += part.seek_cyl;
	}
	return h->head_free;
}

/* ---- read-ahead stream ---- */

/* When the stream of segment s has read up to byte y (y >= s->end). */
static sfs_ns_t hdd_reach(const struct hdd *h, const struct hdd_seg *s,
			  uint64_t y)
{
	return s->t0 + ns_round(hdd_xfer_ns(h, s->end, y - s->end));
}

/* How far the stream of s has read by time t (<= s->target). */
static uint64_t hdd_reached_by(const struct hdd *h, const struct hdd_seg *s,
			       sfs_ns_t t)
{
	uint64_t lo = s->end, hi = s->target;

	if (t <= s->t0)
		return s->end;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;

		if (hdd_reach(h, s, mid) <= t)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

static void hdd_seg_trim(const struct hdd *h, struct hdd_seg *s)
{
	if (s->end - s->start > h->p.segment_size)
		s->start = s->end - h->p.segment_size;
}

/* Stop read-ahead at time t: the head stays where the stream got to. */
static void hdd_stop_stream(struct hdd *h, sfs_ns_t t)
{
	struct hdd_seg *s;

	if (h->streaming < 0)
		return;
	s = &h->seg[h->streaming];
	s->end = hdd_reached_by(h, s, t);
	hdd_seg_trim(h, s);
	h->head_off = s->end;
	h->head_free = MAX(h->head_free, t);
	h->streaming = -1;
}

/*
 * Bring the drive's background work up to time now: finish a read-ahead
 * that is done, then destage queued writes that complete by now.  Their arm
 * movements are counted in *cost; their time is not (it is idle time).
 */
static void hdd_catch_up(struct hdd *h, sfs_ns_t now, struct sfs_dev_cost *cost)
{
	if (h->streaming >= 0) {
		struct hdd_seg *s = &h->seg[h->streaming];
		sfs_ns_t done = hdd_reach(h, s, s->target);

		if (done > now)
			return;
		s->t0 = done;
		s->end = s->target;
		hdd_seg_trim(h, s);
		h->head_off = s->end;
		h->head_free = done;
		h->streaming = -1;
	}
	hdd_destage(h, 0, now, true, cost);
}

/* Drop cached read data overlapping [off, off + len). */
static void hdd_invalidate(struct hdd *h, uint64_t off, uint64_t len,
			   sfs_ns_t now)
{
	for (uint64_t i = 0; i < h->p.segments; i++) {
		struct hdd_seg *s = &h->seg[i];
		uint64_t end = (int)i == h->streaming ? s->target : s->end;

		if (!s->valid || off >= end || off + len <= s->start)
			continue;
		if ((int)i == h->streaming)
			hdd_stop_stream(h, now);
		s->valid = false;
	}
}

/* ---- service ---- */

static int hdd_read(struct hdd *h, uint64_t off, uint64_t len, sfs_ns_t now,
		    struct sfs_dev_cost *cost)
{
	sfs_ns_t bus = ns_round((double)len / h->bus_bpns);
	sfs_ns_t hit_oh = ns_round(h->hit_oh_ns);
	uint64_t end = off + len;
	struct hdd_access a;
	struct hdd_seg *s = NULL;
	sfs_ns_t t;

	for (uint64_t i = 0; i < h->p.segments && !s; i++) {
		struct hdd_seg *c = &h->seg[i];

		if (!c->valid || off < c->start)
			continue;
		if ((int)i == h->streaming ? off <= c->target : end <= c->end)
			s = c;
	}
	if (s) {
		sfs_ns_t ready = now;

		if (s - h->seg == h->streaming && end > s->end) {
			s->t0 = hdd_reach(h, s, end);
			ready = MAX(now, s->t0);
			s->end = end;
			s->target = MAX(
			    s->target, MIN(end + h->p.read_ahead, h->capacity));
			hdd_seg_trim(h, s);
		}
		s->stamp = ++h->stamp;
		cost->cache_hit = true;
		cost->overhead_ns = hit_oh;
		cost->transfer_ns = MAX(hit_oh + bus, ready - now) - hit_oh;
		return 0;
	}

	/* miss: read from the media */
	hdd_stop_stream(h, now);
	cost->overhead_ns = ns_round(h->oh_ns);
	t = now + cost->overhead_ns;
	hdd_plan(h, off, len, false, t, &a);
	t = hdd_commit(h, off, len, t, &a, cost);
	if (!h->p.segments)
		return 0;
	hdd_invalidate(h, off, len, now);
	for (uint64_t i = 0; i < h->p.segments; i++) {
		struct hdd_seg *c = &h->seg[i];

		if (!c->valid) {
			s = c;
			break;
		}
		if (!s || c->stamp < s->stamp)
			s = c;
	}
	*s = (struct hdd_seg){
	    .valid = true,
	    .start = off,
	    .end = end,
	    .target = MIN(end + h->p.read_ahead, h->capacity),
	    .t0 = t,
	    .stamp = ++h->stamp,
	};
	hdd_seg_trim(h, s);
	if (s->target > s->end)
		h->streaming = (int)(s - h->seg);
	return 0;
}

static int hdd_write(struct hdd *h, uint64_t off, uint64_t len, sfs_ns_t now,
		     struct sfs_dev_cost *cost)
{
	struct hdd_access a;
	sfs_ns_t t;

	hdd_invalidate(h, off, len, now);
	if (h->p.write_cache && len <= h->p.write_cache_size) {
		struct hdd_wentry e = {.off = off, .len = len};
		sfs_ns_t bus = ns_round((double)len / h->bus_bpns);

		/*
		 * No room: wait while the background destage (already under
		 * way since the head was last free) makes room.  The wait is
		 * reported as transfer time.
		 */
		cost->overhead_ns = ns_round(h->hit_oh_ns);
		t = now + cost->overhead_ns;
		if (h->wq_bytes + len > h->p.write_cache_size) {
			hdd_stop_stream(h, now);
			t = MAX(t, hdd_destage(h, h->p.write_cache_size - len,
					       G_MAXUINT64, true, cost));
		} else {
			cost->cache_hit = true;
		}
		t += bus;
		cost->transfer_ns = t - now - cost->overhead_ns;
		e.queued = t;
		g_array_append_val(h->wq, e);
		h->wq_bytes += len;
		return 0;
	}
	hdd_stop_stream(h, now);
	cost->overhead_ns = ns_round(h->oh_ns);
	t = now + cost->overhead_ns;
	hdd_plan(h, off, len, true, t, &a);
	hdd_commit(h, off, len, t, &a, cost);
	return 0;
}

/* Destage everything queued, the head free from `from` on (>= now). */
static void hdd_write_all(struct hdd *h, sfs_ns_t now, sfs_ns_t from,
			  struct sfs_dev_cost *cost)
{
	hdd_stop_stream(h, now);
	h->head_free = MAX(h->head_free, from);
	hdd_destage(h, 0, G_MAXUINT64, false, cost);
}

static int hdd_flush(struct hdd *h, sfs_ns_t now, struct sfs_dev_cost *cost)
{
	/* the command first, then everything queued */
	cost->overhead_ns = ns_round(h->flush_ns);
	hdd_write_all(h, now, now + cost->overhead_ns, cost);
	return 0;
}

/*
 * The drive writes its cache out on its own, from now: what idle time
 * before now allowed went in the background, the rest is destaged now in
 * `destage` order.  Like a flush without the command.
 */
static int hdd_writeout(struct sfs_devmodel *m, sfs_ns_t now,
			struct sfs_dev_cost *cost)
{
	struct hdd *h = m->priv;

	hdd_catch_up(h, now, cost);
	hdd_write_all(h, now, now, cost);
	return 0;
}

static int hdd_service(struct sfs_devmodel *m, const struct sfs_io_req *req,
		       sfs_ns_t now, struct sfs_dev_cost *cost)
{
	struct hdd *h = m->priv;

	hdd_catch_up(h, now, cost);
	switch (req->op) {
	case SFS_IO_READ:
		return hdd_read(h, req->off_bytes, req->len_bytes, now, cost);
	case SFS_IO_WRITE:
		return hdd_write(h, req->off_bytes, req->len_bytes, now, cost);
	case SFS_IO_FLUSH:
		return hdd_flush(h, now, cost);
	}
	return -EINVAL;
}

/* ---- setup ---- */

static int hdd_fail(char **err, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static int hdd_fail(char **err, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		*err = g_strdup_vprintf(fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static void hdd_fini(struct sfs_devmodel *m)
{
	struct hdd *h = m->priv;

	if (!h)
		return;
	g_free(h->zone);
	g_free(h->seg);
	if (h->wq)
		g_array_free(h->wq, TRUE);
	g_free(h);
	m->priv = NULL;
}

static int hdd_geometry_init(struct hdd *h, char **err)
{
	const struct hdd_params *p = &h->p;
	uint64_t cyl_bytes_all = 0, start = 0, track = 0;

	h->nzones = (uint32_t)p->zones;
	h->zone = g_new0(struct hdd_zone, h->nzones);
	for (uint32_t z = 0; z < h->nzones; z++) {
		double f = h->nzones > 1 ? (double)z / (h->nzones - 1) : 0;
		double mbps =
		    p->outer_mbps + (p->inner_mbps - p->outer_mbps) * f;
		uint64_t tb =
		    (uint64_t)(mbps * 1e6 * h->rev_ns / 1e9 / 512) * 512;

		if (tb < 512)
			return hdd_fail(err,
					"hdd: zone %u holds less than a "
					"sector per track (%g MB/s at "
					"%g rpm)",
					z, mbps, p->rpm);
		h->zone[z].track_bytes = tb;
		cyl_bytes_all += tb * p->heads;
	}
	h->cyl_per_zone = (p->capacity + cyl_bytes_all - 1) / cyl_bytes_all;
	h->cylinders = h->cyl_per_zone * h->nzones;
	if (h->cylinders < 2)
		return hdd_fail(err,
				"hdd: capacity %llu bytes gives fewer "
				"than 2 cylinders",
				(unsigned long long)p->capacity);
	for (uint32_t z = 0; z < h->nzones; z++) {
		h->zone[z].start = start;
		h->zone[z].first_track = track;
		start += h->cyl_per_zone * p->heads * h->zone[z].track_bytes;
		track += h->cyl_per_zone * p->heads;
	}
	h->capacity = start;
	return 0;
}

static int hdd_seek_init(struct hdd *h, char **err)
{
	const struct hdd_params *p = &h->p;
	double n = (double)(h->cylinders - 1);
	int given = !isnan(p->seek_a_ms) + !isnan(p->seek_b_ms) +
		    !isnan(p->seek_c_ms) + !isnan(p->seek_e_ms);
	double x[4];

	h->knee_cyl = p->seek_knee * n;
	if (given == 4) {
		x[0] = p->seek_a_ms;
		x[1] = p->seek_b_ms;
		x[2] = p->seek_c_ms;
		x[3] = p->seek_e_ms;
	} else if (given) {
		return hdd_fail(err, "hdd: give all of seek_a_ms, seek_b_ms, "
				     "seek_c_ms, seek_e_ms or none (none: "
				     "fitted to seek_t2t/avg/max_ms)");
	} else {
		if (!(p->seek_t2t_ms <= p->seek_avg_ms &&
		      p->seek_avg_ms < p->seek_max_ms))
			return hdd_fail(err,
					"hdd: need seek_t2t_ms <= "
					"seek_avg_ms < seek_max_ms "
					"(%g, %g, %g)",
					p->seek_t2t_ms, p->seek_avg_ms,
					p->seek_max_ms);
		if (!hdd_fit_seek(n, h->knee_cyl, p->seek_avg_ms,
				  p->seek_max_ms, x))
			return hdd_fail(err, "hdd: seek curve fit failed");
	}
	if (x[0] < 0 || x[1] < 0 || x[3] < 0)
		return hdd_fail(err,
				"hdd: seek curve a=%g b=%g c=%g e=%g ms "
				"is not rising; change seek_knee or "
				"seek_avg_ms",
				x[0], x[1], x[2], x[3]);
	h->sa = x[0] * 1e6;
	h->sb = x[1] * 1e6;
	h->sc = x[2] * 1e6;
	h->se = x[3] * 1e6;
	return 0;
}

static int hdd_init(struct sfs_devmodel *m, const void *params, char **err)
{
	struct hdd *h = g_new0(struct hdd, 1);
	const struct hdd_params *p = &h->p;
	int rc;

	h->p = *(const struct hdd_params *)params;
	m->priv = h;
	h->wq = g_array_new(FALSE, FALSE, sizeof(struct hdd_wentry));
	h->rev_ns = 60e9 / p->rpm;
	h->t2t_ns = p->seek_t2t_ms * 1e6;
	h->settle_ns = p->write_settle_ms * 1e6;
	h->hs_ns = p->head_switch_ms * 1e6;
	h->oh_ns = p->overhead_ms * 1e6;
	h->hit_oh_ns = p->hit_overhead_ms * 1e6;
	h->flush_ns = p->flush_ms * 1e6;
	h->bus_bpns = p->bus_mbps * 1e6 / 1e9;
	h->streaming = -1;
	if (p->inner_mbps > p->outer_mbps) {
		rc = hdd_fail(err,
			      "hdd: inner_mbps %g > outer_mbps %g: the "
			      "outer zone is the fast one",
			      p->inner_mbps, p->outer_mbps);
		goto out_fini;
	}
	if (p->read_ahead > p->segment_size) {
		rc = hdd_fail(err,
			      "hdd: read_ahead (%llu) > segment_size "
			      "(%llu)",
			      (unsigned long long)p->read_ahead,
			      (unsigned long long)p->segment_size);
		goto out_fini;
	}
	rc = hdd_geometry_init(h, err);
	if (rc)
		goto out_fini;
	rc = hdd_seek_init(h, err);
	if (rc)
		goto out_fini;
	h->seg = g_new0(struct hdd_seg, p->segments ? p->segments : 1);
	return 0;
out_fini:
	hdd_fini(m);
	return rc;
}

static void hdd_geometry(const struct sfs_devmodel *m,
			 struct sfs_dev_geometry *out)
{
	const struct hdd *h = m->priv;

	out->capacity_bytes = h->capacity;
	out->cylinders = h->cylinders;
	out->heads = (uint32_t)h->p.heads;
	out->zones = h->nzones;
	out->rev_ns = h->rev_ns;
}

static uint64_t hdd_cylinder(const struct sfs_devmodel *m, uint64_t off)
{
	struct hdd_pos pos;

	hdd_locate(m->priv, off, &pos);
	return pos.cyl;
}

#define HDD_KNOB(k, t, d, lo, hi, h)                                           \
	{                                                                      \
		.key = #k, .type = (t),                                        \
		.offset = offsetof(struct hdd_params, k), .def = (d),          \
		.min = (lo), .max = (hi), .help = (h)                          \
	}

/* An explicit seek coefficient: "auto" (fitted) unless given. */
#define HDD_AUTO(k, h) HDD_KNOB(k, SFS_KNOB_DOUBLE, "auto", -1000, 1000, h)

/* Defaults: those of the hdd-2009 preset (doc/device-models.md). */
static const struct sfs_knob hdd_knobs[] = {
    HDD_KNOB(capacity, SFS_KNOB_SIZE, "500000000000", 1 << 20, 1e15,
	     "bytes modelled (offsets beyond clamp)"),
    HDD_KNOB(rpm, SFS_KNOB_DOUBLE, "7200", 1000, 20000, "rev/min"),
    HDD_KNOB(heads, SFS_KNOB_U64, "10", 1, 64, "recording surfaces"),
    HDD_KNOB(zones, SFS_KNOB_U64, "30", 1, 1000, "recording zones"),
    HDD_KNOB(outer_mbps, SFS_KNOB_DOUBLE, "76.3", 1, 10000,
	     "MB/s (10^6 B) media rate, zone 0 (LBA 0)"),
    HDD_KNOB(inner_mbps, SFS_KNOB_DOUBLE, "36.5", 1, 10000,
	     "MB/s media rate, innermost zone"),
    HDD_KNOB(seek_t2t_ms, SFS_KNOB_DOUBLE, "1.0", 0, 100,
	     "ms, one-cylinder seek (= cylinder switch)"),
    HDD_KNOB(seek_avg_ms, SFS_KNOB_DOUBLE, "8.5", 0, 1000,
	     "ms, datasheet average seek (read)"),
    HDD_KNOB(seek_max_ms, SFS_KNOB_DOUBLE, "17", 0, 1000,
	     "ms, full-stroke seek (read)"),
    HDD_KNOB(seek_knee, SFS_KNOB_DOUBLE, "0.12", 0.001, 0.999,
	     "sqrt->linear boundary, fraction of full stroke"),
    HDD_AUTO(seek_a_ms, "ms, explicit a in a+b*sqrt(d) (auto: fitted)"),
    HDD_AUTO(seek_b_ms, "ms, explicit b"),
    HDD_AUTO(seek_c_ms, "ms, explicit c in c+e*d"),
    HDD_AUTO(seek_e_ms, "ms, explicit e"),
    HDD_KNOB(write_settle_ms, SFS_KNOB_DOUBLE, "1.0", 0, 100,
	     "ms added to a write's seek"),
    HDD_KNOB(head_switch_ms, SFS_KNOB_DOUBLE, "1.3", 0, 100,
	     "ms, switch to another surface (head skew)"),
    HDD_KNOB(overhead_ms, SFS_KNOB_DOUBLE, "0.5", 0, 100,
	     "ms, command overhead of a media access"),
    HDD_KNOB(hit_overhead_ms, SFS_KNOB_DOUBLE, "0.05", 0, 100,
	     "ms, command overhead of a cache hit or cached write"),
    HDD_KNOB(bus_mbps, SFS_KNOB_DOUBLE, "300", 1, 100000,
	     "MB/s, host interface"),
    HDD_KNOB(segments, SFS_KNOB_U64, "8", 0, 1024,
	     "read cache segments (0: no read cache)"),
    HDD_KNOB(segment_size, SFS_KNOB_SIZE, "1M", 4096, 1ULL << 32,
	     "bytes per segment"),
    HDD_KNOB(read_ahead, SFS_KNOB_SIZE, "1M", 0, 1ULL << 32,
	     "bytes read ahead after a read (0: off)"),
    HDD_KNOB(write_cache, SFS_KNOB_BOOL, "on", 0, 0,
	     "write-back cache (ATA default on)"),
    HDD_KNOB(write_cache_size, SFS_KNOB_SIZE, "8M", 4096, 1ULL << 34,
	     "bytes of writes the cache holds"),
    {.key = "destage",
     .type = SFS_KNOB_ENUM,
     .offset = offsetof(struct hdd_params, destage),
     .def = "fifo",
     .choices = "fifo|clook",
     .help = "order queued writes are destaged"},
    HDD_KNOB(flush_ms, SFS_KNOB_DOUBLE, "0.1", 0, 1000,
	     "ms, flush command overhead (plus the destage)"),
    {.key = NULL},
};

const struct sfs_devmodel_ops sfs_devmodel_hdd_ops = {
    .name = "hdd",
    .help = "rotating disk: seek curve, rotation, zones, cache "
	    "(Ruemmler & Wilkes 1994)",
    .knobs = hdd_knobs,
    .params_size = sizeof(struct hdd_params),
    .init = hdd_init,
    .fini = hdd_fini,
    .service = hdd_service,
    .writeout = hdd_writeout,
    .seek_time = hdd_seek_time,
    .geometry = hdd_geometry,
    .cylinder = hdd_cylinder,
};
