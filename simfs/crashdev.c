/*
 * crashdev.c - the crash device: a power cut at request n (crashdev.h).
 *
 * State machine (one device):
 *   unarmed --sfs_crashdev_arm--> armed --request n / crash_now / close-->
 *   crashed (dead: writes dropped, flushes ignored, reads from below)
 *
 * Invariants:
 *  1. Only requests numbered <= point can change the device below (plus,
 *     in volatile mode, the seeded part of the cache applied at the crash
 *     or a flush before it).
 *  2. Volatile: `held` lists the writes since the last flush in issue
 *     order; a read overlays them in that order over the device below, so
 *     it sees exactly what a drive cache would return.
 *  3. At a volatile crash a sector takes a held write's data only if no
 *     newer held write to it was applied already (seq order): a drive
 *     never destages a superseded copy over the newer one.
 *  4. The random choices come from one GRand seeded with (seed, point,
 *     mode), consumed in a fixed order: deterministic.
 */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "crashdev.h"

struct held {
	uint64_t off;
	uint64_t len;
	uint8_t *data; /* NULL: a zero request */
	enum sfs_io_cat cat;
	uint64_t seq;	 /* request number */
	int64_t log_idx; /* in cd->log, or -1 */
};

struct crashdev {
	struct sfs_bdev *lower; /* owned */
	enum sfs_crash_mode mode;
	uint64_t point;
	uint64_t seed;
	bool logging;
	GArray *log;  /* struct sfs_crashdev_rec, since arming */
	GArray *held; /* struct held (volatile) */
	struct sfs_crashdev_counters ctr;
};

static const char *const mode_names[SFS_CRASH_NMODES] = {
    [SFS_CRASH_CUT] = "cut",
    [SFS_CRASH_TEAR] = "tear",
    [SFS_CRASH_VOLATILE] = "volatile",
};

const char *sfs_crash_mode_name(enum sfs_crash_mode m)
{
	return (unsigned)m < SFS_CRASH_NMODES ? mode_names[m] : "?";
}

int sfs_crash_mode_parse(const char *name, enum sfs_crash_mode *out)
{
	for (unsigned i = 0; name && i < SFS_CRASH_NMODES; i++) {
		if (strcmp(name, mode_names[i]) == 0) {
			*out = (enum sfs_crash_mode)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *sfs_crash_fate_name(enum sfs_crash_fate f)
{
	static const char *const names[] = {
	    "landed", "dropped", "torn", "held", "flushed", "applied", "lost",
	};
	return (unsigned)f < G_N_ELEMENTS(names) ? names[f] : "?";
}

static void held_clear(struct crashdev *c)
{
	for (guint i = 0; i < c->held->len; i++)
		g_free(g_array_index(c->held, struct held, i).data);
	g_array_set_size(c->held, 0);
}

static void set_fate(struct crashdev *c, int64_t idx, enum sfs_crash_fate f,
		     uint64_t kept)
{
	struct sfs_crashdev_rec *r;

	if (idx < 0 || (guint)idx >= c->log->len)
		return;
	r = &g_array_index(c->log, struct sfs_crashdev_rec, idx);
	r->fate = f;
	r->kept_bytes = kept;
}

/* Count request number ++seen and log it; returns its log index or -1. */
static int64_t note(struct crashdev *c, enum sfs_io_op op, enum sfs_io_cat cat,
		    uint64_t off, uint64_t len)
{
	struct sfs_crashdev_rec r = {
	    .req = {.op = op, .cat = cat, .off_bytes = off, .len_bytes = len},
	    .fate = SFS_CRASH_LANDED,
	};

	c->ctr.reqs_seen++;
	if (op == SFS_IO_WRITE)
		c->ctr.writes_seen++;
	else if (op == SFS_IO_FLUSH)
		c->ctr.flushes_seen++;
	if (!c->ctr.armed || !c->logging)
		return -1;
	if (c->ctr.crashed && op != SFS_IO_READ)
		r.fate = SFS_CRASH_DROPPED;
	g_array_append_val(c->log, r);
	return (int64_t)c->log->len - 1;
}

/*
 * The bytes of a write request: one buffer (data), gathered buffers
 * (iov[0..iovcnt), data NULL), or zeros (both NULL).
 */
struct cd_src {
	const uint8_t *data;
	const struct iovec *iov;
	int iovcnt;
};

/* Copy the first len bytes of src's gathered buffers to dst. */
static void src_gather(const struct cd_src *src, uint8_t *dst, uint64_t len)
{
	for (int i = 0; i < src->iovcnt && len; i++) {
		size_t n = MIN(len, src->iov[i].iov_len);

		memcpy(dst, src->iov[i].iov_base, n);
		dst += n;
		len -= n;
	}
}

/* Write [off, off+len) of a request below: data, or zeros if data NULL. */
static int put_buf(struct crashdev *c, enum sfs_io_cat cat, uint64_t off,
		   const uint8_t *data, uint64_t len)
{
	if (len == 0)
		return 0;
	if (!data)
		return sfs_bdev_zero(c->lower, cat, off, len);
	return sfs_bdev_write(c->lower, cat, off, data, len);
}

/* Write the first len bytes of a request below as one request. */
static int put_below(struct crashdev *c, enum sfs_io_cat cat, uint64_t off,
		     const struct cd_src *src, uint64_t len)
{
	struct iovec *part;
	uint64_t left = len;
	int n = 0, rc;

	if (len == 0 || !src->iov)
		return put_buf(c, cat, off, src->data, len);
	/* the buffers that hold the len bytes, the last one cut (a tear) */
	part = g_new(struct iovec, src->iovcnt);
	while (n < src->iovcnt && left) {
		part[n] = src->iov[n];
		part[n].iov_len = MIN(part[n].iov_len, left);
		left -= part[n].iov_len;
		n++;
	}
	rc = sfs_bdev_writev(c->lower, cat, off, part, n);
	g_free(part);
	return rc;
}

/* Volatile: write the cache down in order and flush; counts as landed. */
static int drain_held(struct crashdev *c)
{
	int rc = 0;

	for (guint i = 0; i < c->held->len; i++) {
		struct held *h = &g_array_index(c->held, struct held, i);
		int r = put_buf(c, h->cat, h->off, h->data, h->len);

		if (r && !rc)
			rc = r;
		c->ctr.writes_landed++;
		set_fate(c, h->log_idx, SFS_CRASH_FLUSHED, h->len);
	}
	held_clear(c);
	return rc;
}

/* Sectors [s0, s1) of held write h: the byte range they cover in h. */
static void sector_span(const struct held *h, uint64_t s0, uint64_t s1,
			uint64_t *off, uint64_t *len)
{
	uint64_t a = MAX(s0 * SFS_CRASH_SECTOR, h->off);
	uint64_t b = MIN(s1 * SFS_CRASH_SECTOR, h->off + h->len);

	*off = a;
	*len = b > a ? b - a : 0;
}

/*
 * Apply the first `nsect_keep` sectors of h (all: UINT64_MAX), skipping
 * sectors a newer applied write already owns (invariant 3).  Returns the
 * bytes written.
 */
static uint64_t apply_held(struct crashdev *c, const struct held *h,
			   GHashTable *owner, uint64_t nsect_keep)
{
	uint64_t first = h->off / SFS_CRASH_SECTOR;
	uint64_t end =
	    (h->off + h->len + SFS_CRASH_SECTOR - 1) / SFS_CRASH_SECTOR;
	uint64_t run = UINT64_MAX, written = 0;

	if (nsect_keep != UINT64_MAX && first + nsect_keep < end)
		end = first + nsect_keep;
	for (uint64_t s = first; s <= end; s++) {
		bool take = false;

		if (s < end) {
			gpointer v = g_hash_table_lookup(
			    owner, GSIZE_TO_POINTER((gsize)s + 1));
			take = !v || GPOINTER_TO_SIZE(v) < h->seq;
			if (take)
				g_hash_table_insert(
				    owner, GSIZE_TO_POINTER((gsize)s + 1),
				    GSIZE_TO_POINTER((gsize)h->seq));
		}
		if (take && run == UINT64_MAX)
			run = s;
		if (!take && run != UINT64_MAX) {
			uint64_t off, len;

			sector_span(h, run, s, &off, &len);
			put_buf(c, h->cat, off,
				  h->data ? h->data + (off - h->off) : NULL,
				  len);
			written += len;
			run = UINT64_MAX;
		}
	}
	return written;
}

/* The power cut.  Volatile: resolve the cache (seeded subset and order). */
static void do_crash(struct crashdev *c)
{
	guint n = c->held->len;

	if (c->ctr.crashed)
		return;
	c->ctr.crashed = true;
	c->ctr.crash_point = c->ctr.reqs_seen;
	if (c->mode != SFS_CRASH_VOLATILE || n == 0) {
		held_clear(c);
		return;
	}
	uint32_t sa[5] = {(uint32_t)c->seed, (uint32_t)(c->seed >> 32),
			  (uint32_t)c->point, (uint32_t)(c->point >> 32), 0x7u};
	GRand *r = g_rand_new_with_seed_array(sa, G_N_ELEMENTS(sa));
	guint *perm = g_new(guint, n);
	GHashTable *owner = g_hash_table_new(g_direct_hash, g_direct_equal);

	for (guint i = 0; i < n; i++)
		perm[i] = i;
	for (guint i = n - 1; i > 0; i--) { /* Fisher-Yates */
		guint j = (guint)g_rand_int_range(r, 0, (gint32)i + 1);
		guint t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	guint keep = (guint)g_rand_int_range(r, 0, (gint32)n + 1);
	bool tear_last = keep > 0 && g_rand_int_range(r, 0, 4) == 0;
	uint64_t tear_sect = 0;

	if (tear_last) {
		const struct held *h =
		    &g_array_index(c->held, struct held, perm[keep - 1]);
		uint64_t ns = (h->off + h->len + SFS_CRASH_SECTOR - 1) /
				  SFS_CRASH_SECTOR -
			      h->off / SFS_CRASH_SECTOR;
		tear_sect = (uint64_t)g_rand_int_range(r, 0, (gint32)ns);
	}
	c->ctr.held_at_crash = n;
	c->ctr.applied_at_crash = keep;
	for (guint i = 0; i < n; i++) {
		const struct held *h =
		    &g_array_index(c->held, struct held, perm[i]);

		if (i >= keep) {
			c->ctr.writes_dropped++;
			set_fate(c, h->log_idx, SFS_CRASH_LOST, 0);
			continue;
		}
		if (tear_last && i == keep - 1) {
			uint64_t w = apply_held(c, h, owner, tear_sect);
			c->ctr.writes_torn++;
			c->ctr.torn_kept_bytes = w;
			set_fate(c, h->log_idx, SFS_CRASH_TORN, w);
		} else {
			uint64_t w = apply_held(c, h, owner, UINT64_MAX);
			c->ctr.writes_landed++;
			set_fate(c, h->log_idx, SFS_CRASH_APPLIED, w);
		}
	}
	g_hash_table_destroy(owner);
	g_free(perm);
	g_rand_free(r);
	held_clear(c);
}

/* Called after request number reqs_seen was handled: crash if it was n. */
static void maybe_crash(struct crashdev *c)
{
	if (c->ctr.armed && !c->ctr.crashed && c->ctr.reqs_seen >= c->point)
		do_crash(c);
}

static bool dead(const struct crashdev *c)
{
	return c->ctr.armed && c->ctr.crashed;
}

static int cd_read(struct sfs_bdev *bd, uint64_t off, void *buf, size_t len)
{
	struct crashdev *c = sfs_bdev_priv(bd);
	enum sfs_io_cat cat = sfs_bdev_req_cat(bd);
	int rc;

	bool was_dead = dead(c);

	note(c, SFS_IO_READ, cat, off, len);
	rc = sfs_bdev_read(c->lower, cat, off, buf, len);
	/* invariant 2: the cache's writes, oldest first */
	for (guint i = 0; rc == 0 && i < c->held->len; i++) {
		const struct held *h = &g_array_index(c->held, struct held, i);
		uint64_t a = MAX(off, h->off);
		uint64_t b = MIN(off + len, h->off + h->len);

		if (a >= b)
			continue;
		if (h->data)
			memcpy((uint8_t *)buf + (a - off),
			       h->data + (a - h->off), b - a);
		else
			memset((uint8_t *)buf + (a - off), 0, b - a);
	}
	if (!was_dead)
		maybe_crash(c);
	return rc;
}

/* A write or zero request (src holds no buffer). */
static int cd_put(struct sfs_bdev *bd, uint64_t off, const struct cd_src *src,
		  uint64_t len)
{
	bool zero = !src->data && !src->iov;
	struct crashdev *c = sfs_bdev_priv(bd);
	enum sfs_io_cat cat = sfs_bdev_req_cat(bd);
	int64_t li;
	int rc = 0;

	li = note(c, SFS_IO_WRITE, cat, off, len);
	if (dead(c)) {
		c->ctr.writes_dropped++;
		set_fate(c, li, SFS_CRASH_DROPPED, 0);
		return 0;
	}
	if (!c->ctr.armed)
		return put_below(c, cat, off, src, len);
	if (c->mode == SFS_CRASH_VOLATILE) {
		struct held h = {
		    .off = off,
		    .len = len,
		    .data = zero ? NULL : g_malloc(len),
		    .cat = cat,
		    .seq = c->ctr.reqs_seen,
		    .log_idx = li,
		};
		if (src->data)
			memcpy(h.data, src->data, len);
		else if (src->iov)
			src_gather(src, h.data, len);
		g_array_append_val(c->held, h);
		set_fate(c, li, SFS_CRASH_HELD, 0);
	} else if (c->mode == SFS_CRASH_TEAR && c->ctr.reqs_seen == c->point) {
		uint64_t ns = (len + SFS_CRASH_SECTOR - 1) / SFS_CRASH_SECTOR;
		uint32_t sa[4] = {(uint32_t)c->seed, (uint32_t)(c->seed >> 32),
				  (uint32_t)c->point, 0x7ea7u};
		GRand *r = g_rand_new_with_seed_array(sa, G_N_ELEMENTS(sa));
		uint64_t k = (uint64_t)g_rand_int_range(r, 0, (gint32)ns);
		uint64_t kept = MIN(len, k * SFS_CRASH_SECTOR);

		g_rand_free(r);
		rc = put_below(c, cat, off, src, kept);
		c->ctr.writes_torn++;
		c->ctr.torn_kept_bytes = kept;
		set_fate(c, li, SFS_CRASH_TORN, kept);
	} else {
		rc = put_below(c, cat, off, src, len);
		c->ctr.writes_landed++;
		set_fate(c, li, SFS_CRASH_LANDED, len);
	}
	maybe_crash(c);
	return rc;
}

static int cd_write(struct sfs_bdev *bd, uint64_t off, const void *buf,
		    size_t len)
{
	struct cd_src src = {.data = buf};

	return cd_put(bd, off, &src, len);
}

/* A gathered write: one request, logged and torn as one. */
static int cd_writev(struct sfs_bdev *bd, uint64_t off, const struct iovec *iov,
		     int iovcnt, size_t len)
{
	struct cd_src src = {.iov = iov, .iovcnt = iovcnt};

	return cd_put(bd, off, &src, len);
}

static int cd_zero(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	struct cd_src src = {0};

	return cd_put(bd, off, &src, len);
}

/* Host space below: contents do not change, so nothing to record. */
static int cd_reserve(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	struct crashdev *c = sfs_bdev_priv(bd);

	return sfs_bdev_reserve(c->lower, off, len);
}

static int cd_host_room(struct sfs_bdev *bd, uint64_t *bytes_out)
{
	struct crashdev *c = sfs_bdev_priv(bd);

	return sfs_bdev_host_room(c->lower, bytes_out);
}

static int cd_flush(struct sfs_bdev *bd)
{
	struct crashdev *c = sfs_bdev_priv(bd);
	int rc;

	int64_t li = note(c, SFS_IO_FLUSH, SFS_IO_OTHER, 0, 0);

	if (dead(c)) {
		set_fate(c, li, SFS_CRASH_DROPPED, 0);
		return 0;
	}
	rc = drain_held(c);
	if (!rc)
		rc = sfs_bdev_flush(c->lower);
	maybe_crash(c);
	return rc;
}

static void cd_close(struct sfs_bdev *bd)
{
	struct crashdev *c = sfs_bdev_priv(bd);

	if (c->ctr.armed)
		do_crash(c);
	held_clear(c);
	g_array_free(c->held, TRUE);
	g_array_free(c->log, TRUE);
	sfs_bdev_close(c->lower);
	g_free(c);
}

static const struct sfs_bdev_ops crash_ops = {
    .name = "crash",
    .read = cd_read,
    .write = cd_write,
    .flush = cd_flush,
    .close = cd_close,
    .zero = cd_zero,
    .reserve = cd_reserve,
    .host_room = cd_host_room,
    .writev = cd_writev,
};

struct sfs_bdev *sfs_crashdev_new(struct sfs_bdev *lower)
{
	struct crashdev *c;
	struct sfs_bdev *bd;

	if (!lower)
		return NULL;
	c = g_new0(struct crashdev, 1);
	c->lower = lower;
	c->log = g_array_new(FALSE, FALSE, sizeof(struct sfs_crashdev_rec));
	c->held = g_array_new(FALSE, FALSE, sizeof(struct held));
	bd = sfs_bdev_new(&crash_ops, c, sfs_bdev_size_bytes(lower));
	sfs_bdev_set_known_zero(bd, sfs_bdev_known_zero(lower));
	return bd;
}

static struct crashdev *crash_of(struct sfs_bdev *bd)
{
	if (!bd || sfs_bdev_name(bd) != crash_ops.name)
		return NULL;
	return sfs_bdev_priv(bd);
}

void sfs_crashdev_arm(struct sfs_bdev *bd, enum sfs_crash_mode mode,
		      uint64_t point, uint64_t seed)
{
	struct crashdev *c = crash_of(bd);

	if (!c || dead(c) || (unsigned)mode >= SFS_CRASH_NMODES)
		return;
	memset(&c->ctr, 0, sizeof(c->ctr));
	g_array_set_size(c->log, 0);
	held_clear(c);
	c->mode = mode;
	c->point = point;
	c->seed = seed;
	c->ctr.armed = true;
	if (point == 0)
		do_crash(c);
}

void sfs_crashdev_crash_now(struct sfs_bdev *bd)
{
	struct crashdev *c = crash_of(bd);

	if (c && c->ctr.armed)
		do_crash(c);
}

bool sfs_crashdev_crashed(struct sfs_bdev *bd)
{
	struct crashdev *c = crash_of(bd);

	return c && c->ctr.crashed;
}

uint64_t sfs_crashdev_seen(struct sfs_bdev *bd)
{
	struct crashdev *c = crash_of(bd);

	return c ? c->ctr.reqs_seen : 0;
}

void sfs_crashdev_counters(struct sfs_bdev *bd,
			   struct sfs_crashdev_counters *out)
{
	struct crashdev *c = crash_of(bd);

	if (c)
		*out = c->ctr;
	else
		memset(out, 0, sizeof(*out));
}

void sfs_crashdev_set_logging(struct sfs_bdev *bd, bool on)
{
	struct crashdev *c = crash_of(bd);

	if (c)
		c->logging = on;
}

const struct sfs_crashdev_rec *sfs_crashdev_log(struct sfs_bdev *bd,
						size_t *n_out)
{
	struct crashdev *c = crash_of(bd);

	*n_out = c ? c->log->len : 0;
	return c ? (const struct sfs_crashdev_rec *)(void *)c->log->data : NULL;
}
