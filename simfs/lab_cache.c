/*
 * lab_cache.c - `simfs lab cache`: predict what the page cache's
 * write-back policy does with a sequence of timed writes: which data is
 * still dirty at time T, when the flusher runs and what it writes (the
 * periodic expiry pass, the background threshold), which writers are
 * throttled at the dirty limit, and what dies dirty when a file is
 * deleted in time.
 *
 * The scenario is drawn from the seed.  The answers come from the
 * engine's own buffer cache (simfs/cache.c, doc/cache.md) run on a
 * virtual clock: the lab builds the policy from the same mount options
 * (vm=, dirty_ratio=, dirty_background_ratio=, dirty_expire_centisecs=,
 * dirty_writeback_centisecs=, mem=) as a mount, writes each file's blocks
 * with sfs_cache_write_run at the write's time, drops a deleted file's
 * blocks with sfs_cache_discard, and runs the flusher (sfs_cache_tick)
 * whenever sfs_cache_next_deadline says it has work, as `simfs run`'s
 * flusher actor does.  The disk takes no time (device=ideal), so every
 * event happens exactly at its time.  Only file data is modelled: a real
 * mount also dirties inodes, bitmaps and directories.
 *
 * Levels: 1 the periodic pass alone (small writes, the modern defaults);
 * 2 the background threshold and a delete (changed expiry and interval);
 * 3 the dirty limit (throttled writers), overwrites, tight knobs.
 */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "cache.h"
#include "clock.h"
#include "config.h"
#include "fs.h"
#include "lab.h"
#include "lab_engine.h"

#define CACHE_BS 4096u
#define CACHE_MAX_EV 12
#define CACHE_FILE_SPAN 65536u /* blocks between two files' first blocks */
#define CACHE_MAX_FILES 4

enum cev_kind { CEV_WRITE, CEV_OVERWRITE, CEV_DELETE };

/* One event of the scenario. */
struct cev {
	enum cev_kind kind;
	unsigned file;	   /* 0.. */
	uint32_t off_blk;  /* first block in the file */
	uint32_t nblk;	   /* blocks written */
	sfs_ns_t t;	   /* when */
	unsigned wid;	   /* write id (1-based) for writes, 0 for delete */
	/* results */
	bool throttled;	    /* the writer had to write back */
	uint64_t thr_bytes; /* how much */
	uint64_t died;	    /* delete: dirty bytes dropped */
};

/* One flusher pass that wrote something. */
struct cflush {
	sfs_ns_t t;
	uint64_t periodic, background; /* bytes */
	unsigned wids[CACHE_MAX_EV];   /* writes whose data it wrote */
	unsigned n_wids;
};

struct cache_level {
	unsigned nev;
	uint32_t min_kib, max_kib; /* size of a write */
	const char *const *knobs;  /* option strings to draw from */
	unsigned n_knobs;
	bool deletes, overwrites;
	unsigned t_max_s; /* events within [0, t_max) s */
};

static const char *const cache_knobs1[] = {
    "mem=64M",
};
static const char *const cache_knobs2[] = {
    "mem=64M,dirty_expire_centisecs=1000,dirty_writeback_centisecs=200",
    "mem=64M,dirty_expire_centisecs=1500,dirty_writeback_centisecs=500",
    ("mem=32M,vm=2.6.22,dirty_expire_centisecs=800,"
     "dirty_writeback_centisecs=300"),
};
static const char *const cache_knobs3[] = {
    ("mem=32M,dirty_ratio=15,dirty_background_ratio=5,"
     "dirty_expire_centisecs=700,dirty_writeback_centisecs=300"),
    ("mem=64M,vm=2.6.22,dirty_expire_centisecs=600,"
     "dirty_writeback_centisecs=250"),
    ("mem=48M,dirty_ratio=12,dirty_background_ratio=8,"
     "dirty_expire_centisecs=900,dirty_writeback_centisecs=400"),
};

static const struct cache_level cache_levels[] = {
    {4, 64, 1024, cache_knobs1, G_N_ELEMENTS(cache_knobs1), false, false, 40},
    {6, 512, 4096, cache_knobs2, G_N_ELEMENTS(cache_knobs2), true, false,
     20},
    {8, 512, 6144, cache_knobs3, G_N_ELEMENTS(cache_knobs3), true, true,
     15},
};

static const char *const cache_level_help[] = {
    "small writes, the modern defaults: the periodic expiry pass alone",
    "the background threshold, a delete in time, other intervals",
    "the dirty limit throttles writers; overwrites; tight knobs",
};

struct cache_sim {
	struct sfs_cache *c;
	struct sfs_clock *clock;
	GHashTable *owner;  /* block -> write id that last dirtied it */
	struct cflush *cur; /* the pass being recorded, or NULL */
	struct cflush flush[64];
	unsigned n_flush;
	uint64_t dirty_at_t; /* sfs_cache_dirty_bytes at T */
	uint64_t dirty_blocks_at_t;
	unsigned still[CACHE_MAX_EV]; /* write ids dirty at T */
	unsigned n_still;
	struct sfs_cache_counters at_t;
};

static void cache_written(void *ctx, sfs_blk_t blk)
{
	struct cache_sim *s = ctx;
	unsigned wid;

	if (!s->cur)
		return;
	wid = GPOINTER_TO_UINT(
	    g_hash_table_lookup(s->owner, GUINT_TO_POINTER((guint)blk)));
	for (unsigned i = 0; i < s->cur->n_wids; i++)
		if (s->cur->wids[i] == wid)
			return;
	if (wid && s->cur->n_wids < CACHE_MAX_EV)
		s->cur->wids[s->cur->n_wids++] = wid;
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

/* The policy a mount with these options would install. */
static int cache_policy(const char *opts, struct sfs_config *cfg,
			struct sfs_cache_policy *p, char **err)
{
	int rc;

	sfs_config_defaults(cfg);
	rc = sfs_config_parse(cfg, opts, NULL, err);
	return rc ? rc : sfs_fs_cache_policy(cfg, p, err);
}

static sfs_blk_t cache_blk(const struct cev *e, uint32_t i)
{
	return (sfs_blk_t)(e->file + 1) * CACHE_FILE_SPAN + e->off_blk + i;
}

/* Run the flusher if it has work due at the clock's now; record it. */
static int cache_flush_due(struct cache_sim *s)
{
	struct sfs_cache_counters a, b;
	struct cflush f = {.t = sfs_clock_now_ns(s->clock)};
	int rc;

	if (sfs_cache_next_deadline(s->c) > f.t)
		return 0;
	sfs_cache_counters(s->c, &a);
	s->cur = &f;
	rc = sfs_cache_tick(s->c);
	s->cur = NULL;
	sfs_cache_counters(s->c, &b);
	f.periodic = b.wb_bytes[SFS_WB_PERIODIC] - a.wb_bytes[SFS_WB_PERIODIC];
	f.background =
	    b.wb_bytes[SFS_WB_BACKGROUND] - a.wb_bytes[SFS_WB_BACKGROUND];
	if ((f.periodic || f.background) && s->n_flush < G_N_ELEMENTS(s->flush)) {
		qsort(f.wids, f.n_wids, sizeof(unsigned), cmp_uint);
		s->flush[s->n_flush++] = f;
	}
	return rc;
}

/* Run the flusher at every deadline up to (and at) time `until`. */
static int cache_advance(struct cache_sim *s, sfs_ns_t until)
{
	for (;;) {
		sfs_ns_t d = sfs_cache_next_deadline(s->c);
		int rc;

		if (d > until)
			break;
		sfs_clock_sleep_until(s->clock, d);
		rc = cache_flush_due(s);
		if (rc)
			return rc;
		if (sfs_cache_next_deadline(s->c) <= d)
			break; /* nothing more it can do now */
	}
	sfs_clock_sleep_until(s->clock, until);
	return cache_flush_due(s);
}

static int cache_event(struct cache_sim *s, struct cev *e, uint8_t *buf)
{
	struct sfs_cache_counters a, b;
	int rc = 0;

	if (e->kind == CEV_DELETE) {
		sfs_cache_counters(s->c, &a);
		/* the whole file's range: whatever it holds */
		sfs_cache_discard(s->c, cache_blk(e, 0), e->nblk);
		sfs_cache_counters(s->c, &b);
		e->died = b.died_dirty_bytes - a.died_dirty_bytes;
		return 0;
	}
	sfs_cache_counters(s->c, &a);
	s->cur = NULL;
	for (uint32_t i = 0; i < e->nblk; i++)
		g_hash_table_insert(s->owner,
				    GUINT_TO_POINTER((guint)cache_blk(e, i)),
				    GUINT_TO_POINTER(e->wid));
	for (uint32_t done = 0; done < e->nblk && !rc;) {
		uint32_t n = MIN(e->nblk - done, 256u);

		rc = sfs_cache_write_run(s->c, cache_blk(e, done), n,
					 SFS_IO_DATA, buf);
		done += n;
	}
	sfs_cache_counters(s->c, &b);
	e->throttled = b.throttle_events > a.throttle_events;
	e->thr_bytes =
	    b.wb_bytes[SFS_WB_THROTTLE] - a.wb_bytes[SFS_WB_THROTTLE];
	return rc;
}

/* Which writes still own a dirty block now. */
static void cache_snapshot(struct cache_sim *s)
{
	GHashTableIter it;
	gpointer k, v;
	bool seen[CACHE_MAX_EV + 1] = {false};

	s->dirty_at_t = sfs_cache_dirty_bytes(s->c);
	sfs_cache_counters(s->c, &s->at_t);
	g_hash_table_iter_init(&it, s->owner);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		unsigned wid = GPOINTER_TO_UINT(v);

		if (!sfs_cache_is_dirty(s->c, GPOINTER_TO_UINT(k)))
			continue;
		s->dirty_blocks_at_t++;
		if (wid <= CACHE_MAX_EV)
			seen[wid] = true;
	}
	for (unsigned w = 1; w <= CACHE_MAX_EV; w++)
		if (seen[w])
			s->still[s->n_still++] = w;
}

static int cache_simulate(const struct sfs_cache_policy *pol,
			  uint64_t mem_bytes, struct cev *ev, unsigned n,
			  sfs_ns_t t_ask, struct cache_sim *s, char **err)
{
	struct sfs_bdev *sink = sfs_lab_memdev_new(1ull << 40, false);
	uint8_t *buf = g_malloc0(256u * CACHE_BS);
	int rc;

	memset(s, 0, sizeof(*s));
	s->clock = sfs_clock_new_virtual();
	s->owner = g_hash_table_new(g_direct_hash, g_direct_equal);
	rc = sfs_cache_new(sink, CACHE_BS, mem_bytes, &s->c);
	if (rc) {
		*err = g_strdup("cache lab: cannot make the cache");
		sfs_bdev_close(sink);
		goto out;
	}
	sfs_cache_set_clock(s->c, s->clock);
	rc = sfs_cache_set_policy(s->c, pol);
	if (rc) {
		*err = g_strdup("cache lab: the write-back knobs disagree");
		goto out;
	}
	sfs_cache_set_written_cb(s->c, cache_written, s);
	for (unsigned i = 0; i < n && !rc; i++) {
		if (ev[i].t > t_ask)
			break;
		rc = cache_advance(s, ev[i].t);
		if (!rc)
			rc = cache_event(s, &ev[i], buf);
	}
	if (!rc)
		rc = cache_advance(s, t_ask);
	if (rc)
		*err = g_strdup_printf("cache lab: write-back failed: %s",
				       g_strerror(-rc));
	else
		cache_snapshot(s);
out:
	g_free(buf);
	return rc;
}

static void cache_sim_free(struct cache_sim *s)
{
	if (s->c) {
		struct sfs_bdev *bd = sfs_cache_bdev(s->c);

		sfs_cache_free(s->c);
		sfs_bdev_close(bd);
	}
	if (s->owner)
		g_hash_table_destroy(s->owner);
	sfs_clock_free(s->clock);
	memset(s, 0, sizeof(*s));
}

/* Seconds with two decimals: "12.35". */
static const char *cache_s(char *buf, sfs_ns_t ns)
{
	uint64_t cs = (ns + 5 * SFS_NS_PER_MS) / (10 * SFS_NS_PER_MS);

	g_snprintf(buf, 24, "%llu.%02llu", (unsigned long long)(cs / 100),
		   (unsigned long long)(cs % 100));
	return buf;
}

static int cache_cmp_time(const void *a, const void *b)
{
	const struct cev *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	/* a delete after the writes of its moment, writes in id order */
	if ((x->kind == CEV_DELETE) != (y->kind == CEV_DELETE))
		return x->kind == CEV_DELETE ? 1 : -1;
	return x->wid < y->wid ? -1 : x->wid > y->wid;
}

/* Draw the events of a level. */
static unsigned cache_draw(const struct cache_level *lv, GRand *rnd,
			   struct cev *ev, unsigned *nfiles)
{
	uint32_t len[CACHE_MAX_FILES] = {0};
	unsigned n = 0, files = lv->nev > 4 ? 3 : 2, wid = 0;

	for (unsigned i = 0; i < lv->nev; i++) {
		struct cev *e = &ev[n];
		unsigned f = (unsigned)g_rand_int_range(rnd, 0, (gint32)files);

		memset(e, 0, sizeof(*e));
		/* times on a 0.25 s grid, none twice */
		e->t = (sfs_ns_t)g_rand_int_range(rnd, 0,
						  (gint32)lv->t_max_s * 4) *
		       (SFS_NS_PER_S / 4);
		e->file = f;
		e->nblk = (uint32_t)g_rand_int_range(
			      rnd, (gint32)(lv->min_kib / 64),
			      (gint32)(lv->max_kib / 64) + 1) *
			  (64 * 1024 / CACHE_BS);
		e->kind = CEV_WRITE;
		n++;
	}
	qsort(ev, n, sizeof(*ev), cache_cmp_time);
	for (unsigned i = 1; i < n; i++)
		if (ev[i].t <= ev[i - 1].t)
			ev[i].t = ev[i - 1].t + SFS_NS_PER_S / 4;
	/* now that the order is known: offsets, overwrites, a delete */
	for (unsigned i = 0; i < n; i++) {
		struct cev *e = &ev[i];

		if (lv->overwrites && len[e->file] &&
		    g_rand_int_range(rnd, 0, 3) == 0) {
			e->kind = CEV_OVERWRITE;
			e->off_blk = 0;
			e->nblk = MIN(e->nblk, len[e->file]);
		} else {
			e->off_blk = len[e->file];
			len[e->file] += e->nblk;
		}
		e->wid = ++wid;
	}
	if (lv->deletes && n >= 3) {
		/* delete the file of a middle write a little after it */
		unsigned k = (unsigned)g_rand_int_range(rnd, 1, (gint32)n - 1);
		unsigned f = ev[k].file;
		struct cev d = {.kind = CEV_DELETE,
				.file = f,
				.off_blk = 0,
				.t = ev[k].t + (sfs_ns_t)g_rand_int_range(
						   rnd, 1, 40) *
						   (SFS_NS_PER_S / 4)};

		/* later writes of that file go to another file */
		for (unsigned i = k + 1; i < n; i++)
			if (ev[i].file == f && ev[i].t >= d.t)
				ev[i].file = (f + 1) % files;
		d.nblk = CACHE_FILE_SPAN;
		ev[n++] = d;
		qsort(ev, n, sizeof(*ev), cache_cmp_time);
		/* a write moved to another file appends there */
		memset(len, 0, sizeof(len));
		for (unsigned i = 0; i < n; i++) {
			struct cev *e = &ev[i];

			if (e->kind == CEV_WRITE) {
				e->off_blk = len[e->file];
				len[e->file] += e->nblk;
			} else if (e->kind == CEV_OVERWRITE) {
				e->nblk = MIN(e->nblk, MAX(len[e->file], 1u));
			}
		}
	}
	*nfiles = files;
	return n;
}

static void cache_wid_list(GString *g, const unsigned *w, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		g_string_append_printf(g, "%sw%u", i ? " " : "", w[i]);
	if (!n)
		g_string_append(g, "none");
}

static int cache_build(const struct sfs_lab_params *p,
		       struct sfs_lab_sheet *sheet, char **err)
{
	const struct cache_level *lv = &cache_levels[p->level - 1];
	guint32 sv[3] = {(guint32)p->seed, (guint32)(p->seed >> 32),
			 0xcace0000u + (guint32)p->level};
	GRand *rnd = g_rand_new_with_seed_array(sv, 3);
	const char *opts =
	    lv->knobs[g_rand_int_range(rnd, 0, (gint32)lv->n_knobs)];
	struct cev ev[CACHE_MAX_EV + 1];
	struct sfs_cache_policy pol;
	struct sfs_config cfg;
	struct cache_sim s;
	unsigned n, nfiles;
	sfs_ns_t t_ask, last = 0;
	GString *g;
	char b[3][24];
	int rc;

	n = cache_draw(lv, rnd, ev, &nfiles);
	for (unsigned i = 0; i < n; i++)
		last = MAX(last, ev[i].t);
	/* ask about a moment after the last event, within an expiry and a
	 * wake-up interval or so of it */
	t_ask = last + (sfs_ns_t)g_rand_int_range(rnd, 1, 4 * lv->t_max_s) *
			   (SFS_NS_PER_S / 4);
	g_rand_free(rnd);
	rc = cache_policy(opts, &cfg, &pol, err);
	if (rc)
		return rc;
	rc = cache_simulate(&pol, cfg.mem_bytes, ev, n, t_ask, &s, err);
	if (rc) {
		cache_sim_free(&s);
		return rc;
	}

	g_string_append_printf(
	    sheet->scenario,
	    "Mount options: %s\n"
	    "The page cache holds %llu MiB (mem=) of 4 KiB blocks; the disk "
	    "takes no time (device=ideal), so a write-back is done the moment "
	    "it starts.  In effect:\n"
	    "  dirty_ratio=%u%%  dirty_background_ratio=%u%%  "
	    "dirty_expire_centisecs=%u\n"
	    "  dirty_writeback_centisecs=%u; a pass writes at most %llu MiB, "
	    "oldest first;\n"
	    "  the flusher's periodic wake-ups are at %s s, then every %s "
	    "s.\n",
	    opts, (unsigned long long)(cfg.mem_bytes >> 20), pol.dirty_ratio,
	    pol.dirty_background_ratio, pol.dirty_expire_cs,
	    pol.dirty_writeback_cs,
	    (unsigned long long)(pol.writeback_chunk_bytes >> 20),
	    cache_s(b[0], (sfs_ns_t)pol.dirty_writeback_cs * 10 *
			      SFS_NS_PER_MS),
	    cache_s(b[1], (sfs_ns_t)pol.dirty_writeback_cs * 10 *
			      SFS_NS_PER_MS));
	g_string_append(sheet->scenario,
			"\nOne process writes (only file data is counted: "
			"no metadata):\n");
	for (unsigned i = 0; i < n; i++) {
		const struct cev *e = &ev[i];

		if (e->kind == CEV_DELETE)
			g_string_append_printf(
			    sheet->scenario, "  at %6s s  rm %c\n",
			    cache_s(b[0], e->t), 'a' + e->file);
		else
			g_string_append_printf(
			    sheet->scenario,
			    "  at %6s s  w%-2u %s %4u KiB of file %c at "
			    "offset %u KiB\n",
			    cache_s(b[0], e->t), e->wid,
			    e->kind == CEV_OVERWRITE ? "rewrites" : "writes  ",
			    e->nblk * (CACHE_BS / 1024), 'a' + e->file,
			    e->off_blk * (CACHE_BS / 1024));
	}
	g_string_append_printf(sheet->scenario,
			       "Questions are about time T = %s s (after "
			       "whatever happens at T).\n",
			       cache_s(b[0], t_ask));

	/* 1. the two thresholds */
	g_snprintf(b[1], sizeof(b[1]), "%llu %llu",
		   (unsigned long long)(s.at_t.dirty_limit_bytes >> 10),
		   (unsigned long long)(s.at_t.background_limit_bytes >> 10));
	g = g_string_new(NULL);
	g_string_printf(g,
			"dirty limit = %u%% of %llu KiB = %llu KiB; background "
			"threshold = %u%% of it = %llu KiB%s.",
			pol.dirty_ratio,
			(unsigned long long)(cfg.mem_bytes >> 10),
			(unsigned long long)(s.at_t.dirty_limit_bytes >> 10),
			pol.dirty_background_ratio,
			(unsigned long long)(s.at_t.background_limit_bytes >>
					     10),
			pol.dirty_background_ratio >= pol.dirty_ratio
			    ? " (at or above the limit: halved, as Linux does)"
			    : "");
	sfs_lab_ask(sheet, true, b[1], g->str,
		    "What are the dirty limit (writers are throttled above it) "
		    "and the background threshold (the flusher starts "
		    "above it), in KiB?");
	g_string_free(g, TRUE);

	/* 2. the flusher's passes */
	{
		GString *ans = g_string_new(NULL), *ex = g_string_new(NULL);

		for (unsigned i = 0; i < s.n_flush; i++) {
			const struct cflush *f = &s.flush[i];
			const char *why = f->periodic && f->background
					      ? "both"
				      : f->periodic ? "periodic"
						    : "background";

			g_string_append_printf(
			    ans, "%s%s %s %llu", i ? " " : "",
			    cache_s(b[0], f->t), why,
			    (unsigned long long)((f->periodic + f->background) >>
						 10));
			g_string_append_printf(ex, "%s %s s: %s, %llu KiB (",
					       i ? "; at" : "At",
					       cache_s(b[0], f->t), why,
					       (unsigned long long)((f->periodic +
								     f->background) >>
								    10));
			cache_wid_list(ex, f->wids, f->n_wids);
			g_string_append(ex, ")");
		}
		if (!s.n_flush) {
			g_string_append(ans, "none");
			g_string_append(ex, "The flusher writes nothing by T");
		}
		g_string_append(
		    ex, ". A periodic pass runs on the wake-up grid (every "
			"dirty_writeback_centisecs) and writes what has been "
			"dirty for dirty_expire_centisecs at that wake-up; a "
			"background pass starts as soon as the dirty data "
			"exceeds the background threshold and writes the "
			"oldest until at or below it.");
		sfs_lab_ask(
		    sheet, true, ans->str, ex->str,
		    "List the flusher's passes that write something, up to T: "
		    "for each, the time (s), why (periodic, background or "
		    "both) and the KiB written (or none).");
		g_string_free(ans, TRUE);
		g_string_free(ex, TRUE);
	}

	/* 3. throttled writers (levels with a limit in reach) */
	if (p->level >= 2) {
		GString *ans = g_string_new(NULL), *ex = g_string_new(NULL);
		unsigned thr[CACHE_MAX_EV], nt = 0;

		for (unsigned i = 0; i < n; i++)
			if (ev[i].kind != CEV_DELETE && ev[i].t <= t_ask &&
			    ev[i].throttled) {
				thr[nt++] = ev[i].wid;
				g_string_append_printf(
				    ex, "w%u wrote back %llu KiB itself. ",
				    ev[i].wid,
				    (unsigned long long)(ev[i].thr_bytes >> 10));
			}
		cache_wid_list(ans, thr, nt);
		g_string_append(ex,
				"A writer that leaves the dirty data above "
				"the dirty limit writes back the oldest data "
				"itself, a chunk at a time, until at or below "
				"it (balance_dirty_pages).");
		sfs_lab_ask(sheet, true, ans->str, ex->str,
			    "Which writes are throttled (w ids, or none)?");
		g_string_free(ans, TRUE);
		g_string_free(ex, TRUE);
	}

	/* 4. died dirty */
	for (unsigned i = 0; i < n; i++) {
		char a[24];

		if (ev[i].kind != CEV_DELETE || ev[i].t > t_ask)
			continue;
		g_snprintf(a, sizeof(a), "%llu",
			   (unsigned long long)(ev[i].died >> 10));
		sfs_lab_ask(sheet, false, a,
			    "Deleting a file drops its cached blocks; those "
			    "still dirty never reach the disk (died dirty, "
			    "counted in the cache's died_dirty_bytes).",
			    "How many KiB of file %c die dirty when it is "
			    "removed at %s s?",
			    'a' + ev[i].file, cache_s(b[0], ev[i].t));
	}

	/* 5. dirty at T */
	g = g_string_new(NULL);
	cache_wid_list(g, s.still, s.n_still);
	{
		GString *ex = g_string_new(NULL);
		sfs_ns_t iv = (sfs_ns_t)pol.dirty_writeback_cs * 10 *
			      SFS_NS_PER_MS;

		for (unsigned i = 0; i < n; i++) {
			sfs_ns_t due = ev[i].t + (sfs_ns_t)pol.dirty_expire_cs *
						     10 * SFS_NS_PER_MS;
			sfs_ns_t wake = iv ? (due + iv - 1) / iv * iv : 0;

			if (ev[i].kind != CEV_WRITE)
				continue;
			g_string_append_printf(
			    ex, "w%u (%s s) is due at %s s, ", ev[i].wid,
			    cache_s(b[0], ev[i].t), cache_s(b[1], due));
			if (wake > t_ask || !iv)
				g_string_append(ex, "after T. ");
			else
				g_string_append_printf(
				    ex, "the %s s wake-up. ",
				    cache_s(b[0], MAX(wake, iv)));
		}
		g_string_append(
		    ex, "A write is still dirty at T if some block it was the "
			"last to write has not been written back: not yet due "
			"at a periodic wake-up, and not taken earlier by a "
			"background or throttled pass (oldest first). A "
			"rewrite of a dirty block keeps the block's first "
			"dirtying time.");
		sfs_lab_ask(sheet, true, g->str, ex->str,
			    "Which writes still have dirty data in memory at T "
			    "(w ids, or none)?");
		g_string_free(ex, TRUE);
	}
	g_string_free(g, TRUE);
	g_snprintf(b[2], sizeof(b[2]), "%llu",
		   (unsigned long long)(s.dirty_at_t >> 10));
	sfs_lab_ask(sheet, false, b[2],
		    "The sum of the dirty blocks at T (the cache's dirty "
		    "bytes).",
		    "How many KiB are dirty at T?");

	/* figure: the passes */
	g_string_append_printf(sheet->figure,
			       "Write-back by T = %s s: periodic %llu KiB, "
			       "background %llu KiB, throttle %llu KiB, died "
			       "dirty %llu KiB; dirty at T %llu KiB.\n",
			       cache_s(b[0], t_ask),
			       (unsigned long long)(s.at_t.wb_bytes[SFS_WB_PERIODIC] >> 10),
			       (unsigned long long)(s.at_t.wb_bytes[SFS_WB_BACKGROUND] >> 10),
			       (unsigned long long)(s.at_t.wb_bytes[SFS_WB_THROTTLE] >> 10),
			       (unsigned long long)(s.at_t.died_dirty_bytes >> 10),
			       (unsigned long long)(s.dirty_at_t >> 10));
	cache_sim_free(&s);
	return 0;
}

const struct sfs_lab sfs_lab_cache = {
    .name = "cache",
    .summary = "which writes are still dirty at T, when the flusher runs, "
	       "who is throttled",
    .teaches =
	"The page cache's write-back rules as Linux has them: data dirtied "
	"more than dirty_expire_centisecs ago goes out at the flusher's "
	"next periodic wake-up (every dirty_writeback_centisecs); above the "
	"background threshold (dirty_background_ratio of mem=) the flusher "
	"writes the oldest data at once; above the dirty limit (dirty_ratio) "
	"the writing process writes back itself; a file deleted in time "
	"never reaches the disk.  The answers come from simfs's own cache "
	"(simfs/cache.c) on a virtual clock.  There is no --mount: the "
	"scenario is a timeline in seconds, which a mount on the wall clock "
	"cannot replay exactly; `simfs run -w dd` and the cache section of "
	"`simfs stats` show the same rules at work.",
    .levels = G_N_ELEMENTS(cache_levels),
    .level_help = cache_level_help,
    .build = cache_build,
};
