/*
 * lab_disk.c - `simfs lab disk`: predict how the modelled disk serves a
 * request sequence (the order the I/O scheduler picks, each request's
 * seek, rotation and transfer), as OSTEP's disk.py asks.
 *
 * The scenario is drawn from the seed; the answers come from the engine's
 * own timing device (timedev.h, event-driven mode, as `simfs run` drives
 * it): every request is queued at its arrival, and whenever the modelled
 * device is free the scheduler (sched.h) hands out the next one, which the
 * device model (models/device/hdd.c) costs.  The lab only reads back what
 * the timing device logged.
 *
 * Levels:
 *   1  a textbook disk (one surface, one zone, round numbers, no cache),
 *      four reads at time 0, noop: first come, first served;
 *   2  the same disk, six reads and writes at time 0, the elevator
 *      (C-LOOK, merging contiguous requests);
 *   3  the same disk, eight requests arriving over 40 ms, the elevator
 *      with short deadlines: some go out of C-LOOK order;
 *   4  the hdd-2009 preset (30 zones, 10 surfaces, command overhead, read
 *      cache and write cache), six requests arriving over time.
 *
 * Invariant: the device serves one request at a time, so each request's
 * completion is max(its arrival, the previous completion) + its service
 * time (tests/unit/test_labb.c checks this against the answers).
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include <glib.h>

#include "clock.h"
#include "devmodel.h"
#include "lab.h"
#include "lab_engine.h"
#include "timedev.h"

#define DISK_MAX_REQ 8

/*
 * The textbook disk: 6000 rpm (a turn is 10 ms), one surface, one zone of
 * 1000 sectors a track (0.01 ms a sector), 1000 cylinders, seek(d) =
 * 1 + 0.2 sqrt(d) ms (1 ms for d = 1), nothing else.
 */
#define TEXTBOOK_SPEC                                                          \
	"hdd,capacity=512000000,rpm=6000,heads=1,zones=1,"                     \
	"outer_mbps=51.25,inner_mbps=51.25,seek_t2t_ms=1,seek_knee=0.999,"     \
	"seek_a_ms=1,seek_b_ms=0.2,seek_c_ms=7.4,seek_e_ms=0,"                 \
	"write_settle_ms=0,head_switch_ms=0,overhead_ms=0,hit_overhead_ms=0,"  \
	"segments=0,read_ahead=0,write_cache=off,flush_ms=0"
#define TEXTBOOK_SECT 1000u /* sectors per track */
#define TEXTBOOK_CYL 1000u

struct disk_level {
	const char *device; /* device model spec */
	const char *sched;  /* scheduler spec */
	bool textbook;	    /* the disk above (else hdd-2009) */
	unsigned nreq;
	bool writes;	    /* some requests are writes */
	bool contiguous;    /* one request continues another */
	sfs_ns_t spread_ns; /* arrivals drawn from [0, spread) */
	const char *what;   /* the scheduler, for the sheet */
};

static const struct disk_level disk_levels[] = {
    {TEXTBOOK_SPEC, "noop", true, 4, false, false, 0,
     "noop: first come, first served"},
    {TEXTBOOK_SPEC, "elevator", true, 6, true, true, 0,
     "elevator: C-LOOK from the head's position upwards, then from the "
     "lowest offset again; a request that continues the chosen one (same "
     "op, contiguous) goes with it as one device request"},
    {TEXTBOOK_SPEC, "elevator,read_expire_ms=20,write_expire_ms=50", true,
     8, true, false, 40 * SFS_NS_PER_MS,
     "elevator (C-LOOK as above), but a read waiting 20 ms or a write "
     "waiting 50 ms since its arrival goes next, oldest first"},
    {"hdd-2009", "elevator", false, 6, true, true, 30 * SFS_NS_PER_MS,
     "elevator (C-LOOK, merging contiguous requests; deadlines 500 ms "
     "read, 5 s write)"},
};

static const char *const disk_level_help[] = {
    "textbook disk, 4 reads at time 0, noop (FIFO)",
    "textbook disk, 6 reads and writes at time 0, C-LOOK elevator",
    ("textbook disk, 8 requests arriving over 40 ms, elevator with "
     "deadlines"),
    "hdd-2009 preset (zones, overhead, drive caches), 6 requests over time",
};

struct disk_req {
	unsigned id; /* 1-based, as printed */
	enum sfs_io_op op;
	uint64_t off, len; /* bytes */
	sfs_ns_t arrival;
};

/* One device request as served: the timing device's record. */
struct disk_served {
	struct sfs_timedev_rec rec;
	unsigned ids[DISK_MAX_REQ]; /* the requests it covered, offset order */
	unsigned n_ids;
	bool expired; /* (level 3) chosen for a deadline */
	uint64_t from_cyl, to_cyl; /* the arm's move */
	uint64_t sched_head;	   /* the scheduler's head: where the last
				      request dispatched ended (bytes) */
	uint64_t sched_cyl;	   /* its cylinder */
};

struct disk_run {
	GArray *served; /* struct disk_served */
	struct sfs_dev_geometry geo;
	sfs_ns_t end_ns;
	uint64_t expired; /* the scheduler's count */
	sfs_ns_t busy_ns; /* timedev counters: sum of service times */
	uint64_t cyl[DISK_MAX_REQ]; /* of each request's start, by id - 1 */
};

static void disk_log(void *arg, const struct sfs_timedev_rec *rec)
{
	GArray *served = arg;
	struct disk_served s = {.rec = *rec};

	g_array_append_val(served, s);
}

static int disk_cmp_arrival(const void *a, const void *b)
{
	const struct disk_req *x = a, *y = b;

	if (x->arrival != y->arrival)
		return x->arrival < y->arrival ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Serve reqs[0..n) on a fresh timing device: queue each at its arrival,
 * dispatch whenever the device is free.  0, or -errno with *err.
 */
static int disk_simulate(const struct disk_level *lv,
			 const struct disk_req *reqs, unsigned n,
			 struct disk_run *out, char **err)
{
	struct sfs_timedev_opts o = {.model = lv->device,
				     .sched = lv->sched,
				     .mode = SFS_TIMEDEV_EMULATE};
	struct disk_req byarr[DISK_MAX_REQ];
	struct sfs_clock *clock = sfs_clock_new_virtual();
	struct sfs_bdev *sink, *td;
	struct sfs_timedev_counters c;
	sfs_ns_t now = 0;
	unsigned next = 0, queued = 0, last_expired = 0;
	uint64_t head = 0, sched_head = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	out->served = g_array_new(FALSE, TRUE, sizeof(struct disk_served));
	/* small: it stores nothing, and the model may hold less */
	sink = sfs_lab_memdev_new(1ull << 20, false);
	rc = sfs_timedev_new(sink, clock, &o, &td, err);
	if (rc) {
		sfs_bdev_close(sink);
		sfs_clock_free(clock);
		return rc;
	}
	sfs_timedev_set_log(td, disk_log, out->served);
	sfs_devmodel_geometry(sfs_timedev_model(td), &out->geo);
	for (unsigned i = 0; i < n; i++)
		sfs_devmodel_cylinder(sfs_timedev_model(td), reqs[i].off,
				      &out->cyl[reqs[i].id - 1]);
	memcpy(byarr, reqs, n * sizeof(*reqs));
	qsort(byarr, n, sizeof(*byarr), disk_cmp_arrival);
	while (next < n || queued) {
		struct sfs_timedev_served sv;
		struct disk_served *s;

		while (next < n && byarr[next].arrival <= now) {
			struct sfs_io_req r = {.op = byarr[next].op,
					       .cat = SFS_IO_DATA,
					       .off_bytes = byarr[next].off,
					       .len_bytes = byarr[next].len};

			rc = sfs_timedev_queue(td, &r, byarr[next].arrival,
					       GUINT_TO_POINTER(byarr[next].id));
			if (rc) {
				*err = g_strdup("disk lab: a request was "
						"refused by the scheduler");
				goto out;
			}
			next++;
			queued++;
		}
		if (!queued) {
			now = byarr[next].arrival;
			continue;
		}
		rc = sfs_timedev_dispatch(td, now, &sv);
		if (rc) {
			*err = g_strdup("disk lab: the scheduler lost a "
					"request");
			goto out;
		}
		s = &g_array_index(out->served, struct disk_served,
				   out->served->len - 1);
		for (size_t i = 0; i < sv.n && i < DISK_MAX_REQ; i++)
			s->ids[s->n_ids++] = GPOINTER_TO_UINT(sv.cookies[i]);
		g_free(sv.more);
		sfs_timedev_counters(td, &c);
		s->expired = c.expired > last_expired;
		last_expired = (unsigned)c.expired;
		sfs_devmodel_cylinder(sfs_timedev_model(td), head,
				      &s->from_cyl);
		sfs_devmodel_cylinder(sfs_timedev_model(td), s->rec.off_bytes,
				      &s->to_cyl);
		s->sched_head = sched_head;
		sfs_devmodel_cylinder(sfs_timedev_model(td), sched_head,
				      &s->sched_cyl);
		sched_head = s->rec.off_bytes + s->rec.len_bytes;
		if (!s->rec.cost.cache_hit)
			head = s->rec.off_bytes + s->rec.len_bytes;
		queued -= (unsigned)sv.n_total;
		now = sv.done_ns;
	}
	sfs_timedev_counters(td, &c);
	out->end_ns = now;
	out->expired = c.expired;
	out->busy_ns = c.busy_ns;
out:
	sfs_bdev_close(td);
	sfs_clock_free(clock);
	return rc;
}

static void disk_run_free(struct disk_run *r)
{
	if (r->served)
		g_array_free(r->served, TRUE);
	r->served = NULL;
}

/* Draw the requests of a level from the seed. */
static void disk_draw(const struct disk_level *lv, GRand *rnd,
		      struct disk_req *reqs)
{
	static const uint32_t tb_lens[] = {8, 16, 64, 128, 256};
	static const uint32_t real_lens[] = {4096, 16384, 65536, 262144};
	unsigned cont = lv->contiguous ? (unsigned)g_rand_int_range(
					     rnd, 1, (gint32)lv->nreq)
				       : 0;

	for (unsigned i = 0; i < lv->nreq; i++) {
		struct disk_req *r = &reqs[i];

		r->id = i + 1;
		r->op = lv->writes && g_rand_int_range(rnd, 0, 3) == 0
			    ? SFS_IO_WRITE
			    : SFS_IO_READ;
		if (lv->textbook) {
			uint32_t len = tb_lens[g_rand_int_range(
			    rnd, 0, G_N_ELEMENTS(tb_lens))];
			uint32_t cyl = (uint32_t)g_rand_int_range(rnd, 1, 991);
			uint32_t sect = (uint32_t)g_rand_int_range(
			    rnd, 0, (gint32)(TEXTBOOK_SECT - len + 1));

			r->off = ((uint64_t)cyl * TEXTBOOK_SECT + sect) * 512;
			r->len = (uint64_t)len * 512;
		} else {
			r->len = real_lens[g_rand_int_range(
			    rnd, 0, G_N_ELEMENTS(real_lens))];
			r->off = (uint64_t)g_rand_int_range(rnd, 1, 1 << 30) *
				 (4096ull * 64) % 499000000000ull;
			r->off -= r->off % 4096;
		}
		r->arrival = lv->spread_ns
				 ? (sfs_ns_t)g_rand_int_range(
				       rnd, 0, (gint32)(lv->spread_ns / 100000)) *
				       100000
				 : 0;
		if (cont && i == cont) {
			/* continue the request before it, same op; for the
			 * textbook disk within the same track */
			const struct disk_req *p = &reqs[i - 1];

			r->op = p->op;
			r->off = p->off + p->len;
			r->arrival = p->arrival;
			if (lv->textbook &&
			    (r->off / 512) % TEXTBOOK_SECT + r->len / 512 >
				TEXTBOOK_SECT)
				r->len = (TEXTBOOK_SECT -
					  (r->off / 512) % TEXTBOOK_SECT) *
					 512;
			if (r->len == 0) {
				r->off = p->off - 8 * 512;
				r->len = 8 * 512;
			}
		}
	}
	if (lv->spread_ns)
		reqs[0].arrival = 0; /* the device starts on the first */
}

/* "3" or "3+4" for a device request covering several. */
static char *disk_ids(const struct disk_served *s)
{
	GString *g = g_string_new(NULL);

	for (unsigned i = 0; i < s->n_ids; i++)
		g_string_append_printf(g, "%s%u", i ? "+" : "", s->ids[i]);
	return g_string_free(g, FALSE);
}

static void disk_print_textbook(GString *sc)
{
	g_string_append(
	    sc,
	    "The disk: a textbook disk (simfs's hdd model with round "
	    "numbers; its device=\nspec is at the end):\n"
	    "  6000 rpm: one turn takes 10 ms.  One surface, 1000 cylinders of "
	    "one track,\n"
	    "  1000 sectors of 512 bytes a track: 0.01 ms to pass one sector.\n"
	    "  Seek over d cylinders: 0 for d = 0, 1 ms for d = 1, "
	    "1 + 0.2 x sqrt(d) ms\n"
	    "  otherwise.  Rotation: the first sector of cylinder c passes "
	    "under the head\n"
	    "  at (c mod 10) ms past every multiple of 10 ms (the track "
	    "skew), sector s\n"
	    "  s/100 ms after it; the head waits from the end of its seek "
	    "until its first\n"
	    "  sector comes round.  Transfer: 0.01 ms a sector.  No command "
	    "overhead, no\n"
	    "  drive cache; a write costs what a read does.  The head is at "
	    "cylinder 0\n"
	    "  at time 0.\n");
}

/* The textbook disk's spec, cut at commas into lines of at most 76. */
static void disk_print_spec(GString *sc)
{
	char **items = g_strsplit(TEXTBOOK_SPEC, ",", -1);
	size_t col = 0;

	g_string_append(sc, "\nThe disk's spec: device=");
	col = strlen("The disk's spec: device=");
	for (char **it = items; *it; it++) {
		size_t len = strlen(*it) + (it[1] ? 1 : 0);

		if (col + len > 76) {
			g_string_append(sc, "\n  ");
			col = 2;
		}
		g_string_append_printf(sc, "%s%s", *it, it[1] ? "," : "");
		col += len;
	}
	g_string_append_c(sc, '\n');
	g_strfreev(items);
}

static void disk_print_real(GString *sc, const struct sfs_dev_geometry *g)
{
	g_string_append_printf(
	    sc,
	    "The disk: the hdd-2009 preset (device=hdd-2009; a 500 GB 7200 "
	    "rpm SATA disk, "
	    "doc/device-models.md): %llu cylinders, %u surfaces, %u zones "
	    "from 76.3 MB/s "
	    "(outside) to 36.5 MB/s (inside), one turn %.3f ms, seek 1 ms "
	    "(one cylinder) "
	    "to 8.5 ms (average) to 17 ms (full stroke), +1 ms settle for a "
	    "write, 0.5 ms "
	    "command overhead, an 8 MiB write cache and a read cache with "
	    "1 MiB read-ahead.  "
	    "The head is at cylinder 0 at time 0.\n",
	    (unsigned long long)g->cylinders, g->heads, g->zones,
	    g->rev_ns / 1e6);
}

static void disk_print_reqs(GString *sc, const struct disk_level *lv,
			    const struct disk_req *reqs, const struct disk_run *run)
{
	char a[24];

	g_string_append_printf(sc, "\nScheduler: %s.\n\nRequests%s:\n",
			       lv->what,
			       lv->spread_ns ? "" : " (all arrive at time 0)");
	g_string_append(sc, lv->textbook
				? "  id  op     arrival  cylinder  sector  "
				  "sectors\n"
				: "  id  op     arrival  offset          cylinder"
				  "  bytes\n");
	for (unsigned i = 0; i < lv->nreq; i++) {
		const struct disk_req *r = &reqs[i];

		if (lv->textbook)
			g_string_append_printf(
			    sc, "  %2u  %-5s  %5s ms  %8llu  %6llu  %7llu\n",
			    r->id, sfs_io_op_name(r->op),
			    sfs_lab_ms(a, r->arrival),
			    (unsigned long long)(r->off / 512 / TEXTBOOK_SECT),
			    (unsigned long long)(r->off / 512 % TEXTBOOK_SECT),
			    (unsigned long long)(r->len / 512));
		else
			g_string_append_printf(
			    sc, "  %2u  %-5s  %5s ms  %-14llu  %8llu  %6llu\n",
			    r->id, sfs_io_op_name(r->op),
			    sfs_lab_ms(a, r->arrival),
			    (unsigned long long)r->off,
			    (unsigned long long)run->cyl[r->id - 1],
			    (unsigned long long)r->len);
	}
}

/* The explanation of one served request: the arithmetic. */
static char *disk_explain(const struct disk_level *lv,
			  const struct disk_served *s, sfs_ns_t prev_done)
{
	const struct sfs_dev_cost *c = &s->rec.cost;
	char b[10][24];
	GString *g = g_string_new(NULL);
	uint64_t d = s->to_cyl > s->from_cyl ? s->to_cyl - s->from_cyl
					      : s->from_cyl - s->to_cyl;

	g_string_append_printf(
	    g, "Starts at %s ms (arrived %s, device free at %s). ",
	    sfs_lab_ms2(b[0], s->rec.start_ns),
	    sfs_lab_ms2(b[1], s->rec.submit_ns), sfs_lab_ms2(b[2], prev_done));
	if (c->cache_hit) {
		g_string_append_printf(
		    g, "A drive-cache hit (%s): overhead %s + transfer %s = "
		       "%s ms, done at %s ms.",
		    s->rec.op == SFS_IO_READ ? "read from a cached segment"
					     : "write absorbed by the cache",
		    sfs_lab_ms2(b[3], c->overhead_ns),
		    sfs_lab_ms2(b[4], c->transfer_ns),
		    sfs_lab_ms2(b[5], c->total_ns),
		    sfs_lab_ms2(b[6], s->rec.done_ns));
		return g_string_free(g, FALSE);
	}
	if (lv->textbook) {
		uint64_t sect = s->rec.off_bytes / 512 % TEXTBOOK_SECT;
		sfs_ns_t at = s->rec.start_ns + c->seek_ns;

		g_string_append_printf(
		    g, "Seek cylinder %llu -> %llu, d = %llu: ",
		    (unsigned long long)s->from_cyl,
		    (unsigned long long)s->to_cyl, (unsigned long long)d);
		if (d > 1)
			g_string_append_printf(g, "1 + 0.2 x sqrt(%llu) = ",
					       (unsigned long long)d);
		g_string_append_printf(
		    g,
		    "%s ms, so the head is there at %s ms, %s ms into a turn; "
		    "sector %llu of cylinder %llu passes at (%llu mod 10) + "
		    "%llu/100 = %s ms into a turn: wait %s ms. Transfer "
		    "%llu sectors x 0.01 = %s ms. Service %s ms, done at %s "
		    "ms.",
		    sfs_lab_ms2(b[3], c->seek_ns), sfs_lab_ms2(b[4], at),
		    sfs_lab_ms2(b[5], at % (10 * SFS_NS_PER_MS)),
		    (unsigned long long)sect, (unsigned long long)s->to_cyl,
		    (unsigned long long)s->to_cyl, (unsigned long long)sect,
		    sfs_lab_ms2(b[6], (s->to_cyl % 10) * SFS_NS_PER_MS +
					  sect * 10000),
		    sfs_lab_ms2(b[7], c->rotation_ns),
		    (unsigned long long)(s->rec.len_bytes / 512),
		    sfs_lab_ms2(b[8], c->transfer_ns),
		    sfs_lab_ms2(b[9], c->total_ns),
		    sfs_lab_ms2(b[0], s->rec.done_ns));
		return g_string_free(g, FALSE);
	}
	g_string_append_printf(
	    g,
	    "Media access: overhead %s + seek %s (cylinder %llu -> %llu, "
	    "d = %llu%s) + rotation %s + transfer %s (%llu bytes at this "
	    "zone's rate) = %s ms, done at %s ms.",
	    sfs_lab_ms2(b[3], c->overhead_ns), sfs_lab_ms2(b[4], c->seek_ns),
	    (unsigned long long)s->from_cyl, (unsigned long long)s->to_cyl,
	    (unsigned long long)d,
	    s->rec.op == SFS_IO_WRITE ? ", with the write settle" : "",
	    sfs_lab_ms2(b[5], c->rotation_ns),
	    sfs_lab_ms2(b[6], c->transfer_ns),
	    (unsigned long long)s->rec.len_bytes,
	    sfs_lab_ms2(b[7], c->total_ns), sfs_lab_ms2(b[8], s->rec.done_ns));
	return g_string_free(g, FALSE);
}

/* The timeline table printed with the answers. */
static void disk_figure(GString *f, const struct disk_run *run)
{
	char b[7][24];

	g_string_append(f, "Timeline (ms):\n"
			   "  served  ids     arrival    start  overhead  "
			   "seek  rotation  transfer     done\n");
	for (guint k = 0; k < run->served->len; k++) {
		const struct disk_served *s =
		    &g_array_index(run->served, struct disk_served, k);
		char *ids = disk_ids(s);

		g_string_append_printf(
		    f, "  %6u  %-6s %8s %8s %9s %5s %9s %9s %8s%s%s\n", k + 1,
		    ids, sfs_lab_ms(b[0], s->rec.submit_ns),
		    sfs_lab_ms(b[1], s->rec.start_ns),
		    sfs_lab_ms(b[2], s->rec.cost.overhead_ns),
		    sfs_lab_ms(b[3], s->rec.cost.seek_ns),
		    sfs_lab_ms(b[4], s->rec.cost.rotation_ns),
		    sfs_lab_ms(b[5], s->rec.cost.transfer_ns),
		    sfs_lab_ms(b[6], s->rec.done_ns),
		    s->rec.cost.cache_hit ? "  cache hit" : "",
		    s->expired ? "  deadline" : "");
		g_free(ids);
	}
}

/* Why the k-th dispatch took what it took: the queue and the rule. */
static void disk_why(GString *ex, const struct disk_level *lv,
		     const struct disk_req *reqs, const struct disk_run *run,
		     guint k, bool *served)
{
	const struct disk_served *s =
	    &g_array_index(run->served, struct disk_served, k);
	char b[24], *ids = disk_ids(s);
	bool fifo = strcmp(lv->sched, "noop") == 0;
	bool first = true;

	unsigned nq = 0;

	g_string_append_printf(ex, "%sAt %s ms (head at cylinder %llu) the "
			       "queue holds",
			       k ? " " : "", sfs_lab_ms2(b, s->rec.start_ns),
			       (unsigned long long)s->sched_cyl);
	for (unsigned i = 0; i < lv->nreq; i++)
		if (!served[i] && reqs[i].arrival <= s->rec.start_ns) {
			g_string_append_printf(ex, "%s%u", first ? " " : ", ",
					       reqs[i].id);
			first = false;
			nq++;
		}
	g_string_append_printf(
	    ex, ": %s goes, %s.", ids,
	    nq == s->n_ids ? (s->expired ? "the only one there (and past its "
					   "deadline: counted as a deadline "
					   "dispatch)"
					 : "the only one there")
	    : fifo	   ? "the first to arrive"
	    : s->expired   ? "its deadline has passed (the oldest of its op)"
	    : s->rec.off_bytes >= s->sched_head
		? "the lowest offset at or after the head (C-LOOK)"
		: "nothing is at or after the head: C-LOOK starts again "
		  "from the lowest offset");
	for (unsigned i = 0; i < s->n_ids; i++)
		served[s->ids[i] - 1] = true;
	g_free(ids);
}

static void disk_ask_order(struct sfs_lab_sheet *sheet,
			   const struct disk_level *lv,
			   const struct disk_req *reqs,
			   const struct disk_run *run)
{
	GString *ans = g_string_new(NULL), *ex = g_string_new(NULL);
	bool served[DISK_MAX_REQ] = {false};

	for (guint k = 0; k < run->served->len; k++) {
		char *ids = disk_ids(
		    &g_array_index(run->served, struct disk_served, k));

		g_string_append_printf(ans, "%s%s", k ? " " : "", ids);
		g_free(ids);
		disk_why(ex, lv, reqs, run, k, served);
	}
	g_string_append(ex, " A request that continues the one chosen (same "
			    "op, contiguous) goes with it.");
	sfs_lab_ask(sheet, true, ans->str, ex->str,
		    "In which order are the requests served?  List the ids; "
		    "write a device request that serves several as 3+4%s.",
		    lv->spread_ns ? " (the device picks only among the "
				    "requests that have arrived when it "
				    "becomes free)"
				  : "");
	g_string_free(ans, TRUE);
	g_string_free(ex, TRUE);
}

static int disk_build(const struct sfs_lab_params *p,
		      struct sfs_lab_sheet *sheet, char **err)
{
	const struct disk_level *lv = &disk_levels[p->level - 1];
	struct disk_req reqs[DISK_MAX_REQ];
	struct disk_run run;
	guint32 sv[3] = {(guint32)p->seed, (guint32)(p->seed >> 32),
			 0xd15c0000u + (guint32)p->level};
	GRand *rnd = g_rand_new_with_seed_array(sv, 3);
	sfs_ns_t prev_done = 0;
	char b[24];
	int rc;

	disk_draw(lv, rnd, reqs);
	g_rand_free(rnd);
	rc = disk_simulate(lv, reqs, lv->nreq, &run, err);
	if (rc)
		return rc;
	if (lv->textbook)
		disk_print_textbook(sheet->scenario);
	else
		disk_print_real(sheet->scenario, &run.geo);
	disk_print_reqs(sheet->scenario, lv, reqs, &run);
	if (lv->textbook)
		disk_print_spec(sheet->scenario);

	disk_ask_order(sheet, lv, reqs, &run);
	for (guint k = 0; k < run.served->len; k++) {
		const struct disk_served *s =
		    &g_array_index(run.served, struct disk_served, k);
		char *ids = disk_ids(s);
		char *ex = disk_explain(lv, s, prev_done);
		char ans[96], x[3][24];

		if (lv->textbook) {
			g_snprintf(ans, sizeof(ans), "%s %s %s",
				   sfs_lab_ms(x[0], s->rec.cost.seek_ns),
				   sfs_lab_ms(x[1], s->rec.cost.rotation_ns),
				   sfs_lab_ms(x[2], s->rec.cost.transfer_ns));
			sfs_lab_ask(sheet, true, ans, ex,
				    "Request %s (served %u%s): its seek, "
				    "rotation and transfer time, in ms to "
				    "0.1 ms?",
				    ids, k + 1,
				    k == 0 ? "st" : k == 1 ? "nd"
					 : k == 2      ? "rd"
						       : "th");
		} else {
			g_snprintf(ans, sizeof(ans), "%s %s",
				   sfs_lab_ms(x[0], s->rec.cost.total_ns),
				   s->rec.cost.cache_hit ? "hit" : "media");
			sfs_lab_ask(sheet, true, ans, ex,
				    "Request %s: its service time in ms (to "
				    "0.1 ms), and was it a drive-cache hit or "
				    "a media access (hit / media)?",
				    ids);
		}
		prev_done = s->rec.done_ns;
		g_free(ids);
		g_free(ex);
	}
	if (lv->spread_ns && lv->textbook) {
		GString *ans = g_string_new(NULL);

		for (guint k = 0; k < run.served->len; k++) {
			const struct disk_served *s =
			    &g_array_index(run.served, struct disk_served, k);
			char *ids = disk_ids(s);

			if (s->expired)
				g_string_append_printf(ans, "%s%s",
						       ans->len ? " " : "", ids);
			g_free(ids);
		}
		sfs_lab_ask(sheet, true, ans->len ? ans->str : "none",
			    "A request is dispatched for its deadline when, "
			    "at the moment the device becomes free, the "
			    "oldest queued read (or write) arrived more than "
			    "its expiry ago; C-LOOK would have chosen "
			    "another.",
			    "Which requests are dispatched because their "
			    "deadline had passed (ids, or none)?");
		g_string_free(ans, TRUE);
	}
	sfs_lab_ask(sheet, false, sfs_lab_ms(b, run.end_ns),
		    "The completion of the last request served (the "
		    "timeline's last line).",
		    "At what time (ms, to 0.1 ms) does the last request "
		    "complete?");
	disk_figure(sheet->figure, &run);
	disk_run_free(&run);
	return 0;
}

const struct sfs_lab sfs_lab_disk = {
    .name = "disk",
    .summary = "service times and the scheduler's order on the modelled "
	       "disk (seek, rotation, transfer)",
    .teaches =
	"How a rotating disk spends its time: the seek (a square-root curve "
	"over the cylinders crossed), the rotational wait for the first "
	"sector, the transfer, and at the top level the command overhead and "
	"the drive's caches; and how the I/O scheduler's order (noop's FIFO, "
	"the elevator's C-LOOK sweep and merging, deadlines) changes the "
	"total.  The answers come from simfs's own timing device and disk "
	"model.  There is no --mount: the requests are raw device requests, "
	"which a mount issues only through the filesystem; `simfs run` and "
	"`simfs plot iolog` show the same model under a real workload.",
    .levels = G_N_ELEMENTS(disk_levels),
    .level_help = disk_level_help,
    .build = disk_build,
};
