/*
 * tiobench.c - the `tiobench` workload (tiobench.pl driving tiotest), for
 * `simfs run` (workload.h):
 *
 *   tiobench,threads=4,size=256M,block=4K,random=4000,direct
 *
 * Each client (a tiotest thread) has its own file _tiotest.thr<c>.  The
 * phases run in tiotest's order, each started on all threads together
 * behind a barrier:
 *
 *   write     BARRIER, OPEN(O_CREAT|O_TRUNC), FTRUNCATE(size), size/block
 *             sequential WRITEs, FSYNC, CLOSE
 *   randwrite BARRIER, OPEN, `random` WRITEs at uniform block-aligned
 *             offsets, FSYNC, CLOSE
 *   read      BARRIER, OPEN, size/block sequential READs, CLOSE
 *   randread  BARRIER, OPEN, `random` READs at uniform offsets, CLOSE
 *   cleanup   BARRIER, UNLINK (unless keep)
 *
 * Offsets come from a generator seeded by (seed, thread, phase), so a run
 * is the same every time.  Per-thread accounting (tb_span) follows each
 * read/write from the `now` it was handed out to the `now` of the thread's
 * next call (the runner calls next() when the previous op is finished):
 * that gives tiotest's average and maximum latency and the share of
 * requests over 2 s and 10 s, and each thread's start and end in a phase.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>

#include <glib.h>

#include "workload.h"

#define TB_MAX_RANDOM (1ull << 32)
#define TB_MB (1024.0 * 1024.0) /* tiotest's megabyte */

enum tb_phase { TB_WRITE = 0, TB_RWRITE, TB_READ, TB_RREAD, TB_NPHASES };

static const struct {
	const char *name;  /* phase name */
	const char *title; /* tiobench.pl's table title */
	bool writes, random;
} tb_phases[TB_NPHASES] = {
    [TB_WRITE] = {"write", "Sequential Writes", true, false},
    [TB_RWRITE] = {"randwrite", "Random Writes", true, true},
    [TB_READ] = {"read", "Sequential Reads", false, false},
    [TB_RREAD] = {"randread", "Random Reads", false, true},
};
/* tiobench.pl prints reads first */
static const enum tb_phase tb_table_order[TB_NPHASES] = {TB_READ, TB_RREAD,
							 TB_WRITE, TB_RWRITE};

enum tb_step {
	TB_S_BARRIER = 0,
	TB_S_OPEN,
	TB_S_TRUNC,
	TB_S_IO,
	TB_S_FSYNC,
	TB_S_CLOSE
};

/* One thread's part of one phase. */
struct tb_span {
	sfs_ns_t start_ns, end_ns; /* first I/O handed out; last I/O done */
	bool started;
	uint64_t ios; /* reads/writes timed */
	sfs_ns_t lat_sum_ns, lat_max_ns;
	uint64_t over2s, over10s; /* requests slower than 2 s / 10 s */
};

struct tb_client {
	char *path;
	unsigned ph; /* enum tb_phase; TB_NPHASES: cleanup */
	enum tb_step step;
	uint64_t k;	       /* I/Os done in this phase */
	struct sfs_wl_rng rng; /* offsets of the random phases */
	bool io_pending;       /* an I/O was handed out at io_ns */
	sfs_ns_t io_ns;
	bool done;
};

struct tb_state {
	unsigned threads;
	uint64_t size_bytes; /* per thread */
	uint64_t block_bytes;
	uint64_t nblocks; /* size / block */
	uint64_t random;  /* random I/Os per thread and phase */
	bool direct, osync, keep;
	uint64_t seed;
	struct tb_client *cl;
	struct tb_span *span; /* [client * TB_NPHASES + phase] */
};

enum {
	P_THREADS = 0,
	P_SIZE,
	P_BLOCK,
	P_RANDOM,
	P_DIRECT,
	P_OSYNC,
	P_KEEP,
	P_SEED,
};

static const struct sfs_wl_param tb_params[] = {
    [P_THREADS] = {"threads", SFS_WLP_UINT, "4",
		   "threads, each on its own file (tiotest -t), 1..1024"},
    [P_SIZE] = {"size", SFS_WLP_SIZE, "64M",
		"size of each thread's file (tiotest -f; tiobench.pl's "
		"--size is this times threads)"},
    [P_BLOCK] = {"block", SFS_WLP_SIZE, "4K",
		 "bytes per read/write (--block), <= size, <= 16M"},
    [P_RANDOM] = {"random", SFS_WLP_UINT, "1000",
		  "random I/Os per thread in each random phase (tiotest -r; "
		  "tiobench.pl's --random is this times threads); 0: none"},
    [P_DIRECT] = {"direct", SFS_WLP_BOOL, "no", "O_DIRECT (--directio)"},
    [P_OSYNC] = {"osync", SFS_WLP_BOOL, "no", "O_SYNC (tiotest -S)"},
    [P_KEEP] = {"keep", SFS_WLP_BOOL, "no", "keep the files at the end"},
    [P_SEED] = {"seed", SFS_WLP_UINT, "1", "seed of the random offsets"},
    {.name = NULL},
};

static void tb_fini(void *vst)
{
	struct tb_state *st = vst;

	for (unsigned c = 0; st->cl && c < st->threads; c++)
		g_free(st->cl[c].path);
	g_free(st->cl);
	g_free(st->span);
	g_free(st);
}

static int tb_init(const struct sfs_wl_value *v, void **st_out, char **err)
{
	struct tb_state *st;
	uint64_t threads = v[P_THREADS].u, size = v[P_SIZE].u,
		 block = v[P_BLOCK].u;
	int rc;

	*st_out = NULL;
	rc = sfs_wl_check_thread_files(&v[P_THREADS], &v[P_SIZE], &v[P_BLOCK],
				       "block", v[P_DIRECT].u, err);
	if (rc)
		return rc;
	if (v[P_RANDOM].u > TB_MAX_RANDOM) {
		*err = g_strdup_printf("random must be 0..%llu (got %s)",
				       (unsigned long long)TB_MAX_RANDOM,
				       v[P_RANDOM].s);
		return -EINVAL;
	}
	st = g_new0(struct tb_state, 1);
	st->threads = (unsigned)threads;
	st->size_bytes = size;
	st->block_bytes = block;
	st->nblocks = size / block;
	st->random = v[P_RANDOM].u;
	st->direct = v[P_DIRECT].u;
	st->osync = v[P_OSYNC].u;
	st->keep = v[P_KEEP].u;
	st->seed = v[P_SEED].u;
	st->cl = g_new0(struct tb_client, st->threads);
	st->span = g_new0(struct tb_span, (size_t)st->threads * TB_NPHASES);
	for (unsigned c = 0; c < st->threads; c++)
		st->cl[c].path = g_strdup_printf("_tiotest.thr%u", c);
	*st_out = st;
	return 0;
}

static unsigned tb_clients(void *vst)
{
	return ((struct tb_state *)vst)->threads;
}

/* Whether phase p has anything to do. */
static bool tb_phase_on(const struct tb_state *st, unsigned p)
{
	return !tb_phases[p].random || st->random > 0;
}

/* Charge the I/O handed out before, now that the thread is back. */
static void tb_account(struct tb_state *st, unsigned c, sfs_ns_t now)
{
	struct tb_client *cl = &st->cl[c];

	if (!cl->io_pending)
		return;
	struct tb_span *sp = &st->span[c * TB_NPHASES + cl->ph];
	sfs_ns_t d = now - MIN(now, cl->io_ns);

	sp->ios++;
	sp->lat_sum_ns += d;
	sp->lat_max_ns = MAX(sp->lat_max_ns, d);
	sp->over2s += d > 2000000000ULL;
	sp->over10s += d > 10000000000ULL;
	sp->end_ns = now;
	cl->io_pending = false;
}

static int tb_next(void *vst, unsigned c, sfs_ns_t now, struct sfs_wop *out,
		   char **err)
{
	struct tb_state *st = vst;
	struct tb_client *cl = &st->cl[c];

	(void)err;
	tb_account(st, c, now);
	if (cl->done)
		return 0;
	while (cl->ph < TB_NPHASES && !tb_phase_on(st, cl->ph))
		cl->ph++;
	out->fd = 0;
	out->expect = 0;
	out->path = cl->path;
	if (cl->ph == TB_NPHASES) {
		if (st->keep) {
			cl->done = true;
			return 0;
		}
		if (cl->step == TB_S_BARRIER) {
			out->type = SFS_WOP_BARRIER;
			out->phase = "cleanup";
			cl->step = TB_S_OPEN;
			return 1;
		}
		out->type = SFS_WOP_UNLINK;
		cl->done = true;
		return 1;
	}
	unsigned p = cl->ph;
	struct tb_span *sp = &st->span[c * TB_NPHASES + p];
	uint64_t nio = tb_phases[p].random ? st->random : st->nblocks;

	switch (cl->step) {
	case TB_S_BARRIER:
		out->type = SFS_WOP_BARRIER;
		out->phase = tb_phases[p].name;
		cl->step = TB_S_OPEN;
		return 1;
	case TB_S_OPEN:
		out->type = SFS_WOP_OPEN;
		out->mode = 0644;
		out->flags = tb_phases[p].writes ? O_RDWR : O_RDONLY;
		if (p == TB_WRITE)
			out->flags |= O_CREAT | O_TRUNC;
		if (st->direct)
			out->flags |= O_DIRECT;
		if (st->osync)
			out->flags |= O_SYNC;
		cl->step = p == TB_WRITE ? TB_S_TRUNC : TB_S_IO;
		cl->k = 0;
		sfs_wl_rng_seed(&cl->rng, st->seed * 0x9e3779b97f4a7c15ULL +
					      (uint64_t)c * TB_NPHASES + p);
		return 1;
	case TB_S_TRUNC:
		out->type = SFS_WOP_FTRUNCATE;
		out->len = st->size_bytes;
		cl->step = TB_S_IO;
		return 1;
	case TB_S_IO: {
		uint64_t blk = tb_phases[p].random
				   ? sfs_wl_rng_below(&cl->rng, st->nblocks)
				   : cl->k;
		if (!sp->started) {
			sp->start_ns = now;
			sp->started = true;
		}
		out->type = tb_phases[p].writes ? SFS_WOP_WRITE : SFS_WOP_READ;
		out->off = blk * st->block_bytes;
		out->len = st->block_bytes;
		cl->io_pending = true;
		cl->io_ns = now;
		if (++cl->k == nio)
			cl->step =
			    tb_phases[p].writes ? TB_S_FSYNC : TB_S_CLOSE;
		return 1;
	}
	case TB_S_FSYNC:
		out->type = SFS_WOP_FSYNC;
		cl->step = TB_S_CLOSE;
		return 1;
	case TB_S_CLOSE:
	default:
		if (sp->started)
			sp->end_ns = MAX(sp->end_ns, now); /* fsync is timed */
		out->type = SFS_WOP_CLOSE;
		cl->ph++;
		cl->step = TB_S_BARRIER;
		return 1;
	}
}

/* What the threads' spans of one phase add up to. */
struct tb_sum {
	uint64_t ios;		  /* requests timed */
	uint64_t over2s, over10s; /* of them, slower than 2 s and 10 s */
	double lat_sum;		  /* ns, all requests */
	sfs_ns_t lat_max;
	sfs_ns_t ns; /* the threads' span, the phase's own if that is empty */
};

/* Phase p's sums over the threads; ios 0 when it did not run (ph, its
 * result phase, NULL). */
static struct tb_sum tb_sum_phase(const struct tb_state *st, unsigned p,
				  const struct sfs_wl_phase *ph)
{
	struct tb_sum m = {0};
	sfs_ns_t first = UINT64_MAX, last = 0;

	for (unsigned c = 0; c < st->threads; c++) {
		const struct tb_span *sp = &st->span[c * TB_NPHASES + p];
		if (!sp->started)
			continue;
		first = MIN(first, sp->start_ns);
		last = MAX(last, sp->end_ns);
		m.ios += sp->ios;
		m.over2s += sp->over2s;
		m.over10s += sp->over10s;
		m.lat_sum += (double)sp->lat_sum_ns;
		m.lat_max = MAX(m.lat_max, sp->lat_max_ns);
	}
	if (!ph) {
		m.ios = 0;
		return m;
	}
	m.ns = last > first ? last - first : ph->end_ns - ph->start_ns;
	return m;
}

/* tiotest's Rate of phase p over ns: its bytes in MB/s (0 for no time). */
static double tb_rate(unsigned p, const struct sfs_wl_phase *ph, sfs_ns_t ns)
{
	double secs = (double)ns / 1e9;
	double bytes =
	    (double)(tb_phases[p].writes ? ph->bytes_written : ph->bytes_read);

	return secs > 0 ? bytes / TB_MB / secs : 0;
}

static void tb_report(void *vst, const struct sfs_wl_result *r, FILE *out)
{
	struct tb_state *st = vst;
	uint64_t total_mb = st->size_bytes * st->threads / (1 << 20);

	fprintf(out, "Unit information\n================\n");
	fprintf(out, "File size = megabytes\nBlk Size  = bytes\n");
	fprintf(out, "Rate      = megabytes per second\n");
	fprintf(out, "CPU%%      = percentage of CPU used during the test\n");
	fprintf(out, "Latency   = milliseconds\n");
	fprintf(out, "Lat%%      = percent of requests that took longer "
		     "than X seconds\n");
	fprintf(out, "CPU Eff   = Rate divided by CPU%% - throughput per cpu "
		     "load\n");
	for (unsigned i = 0; i < TB_NPHASES; i++) {
		enum tb_phase p = tb_table_order[i];
		const struct sfs_wl_phase *ph =
		    sfs_wl_result_phase(r, tb_phases[p].name);
		struct tb_sum m = tb_sum_phase(st, p, ph);

		fprintf(out, "\n%s\n", tb_phases[p].title);
		fprintf(out,
			"                              File  Blk   Num      "
			"             Avg      Maximum      Lat%%     Lat%%    "
			"CPU\n");
		fprintf(out,
			"Identifier                    Size  Size  Thr   Rate"
			"  (CPU%%)  Latency    Latency      >2s      >10s    "
			"Eff\n");
		fprintf(
		    out,
		    "---------------------------- ------ ----- ---  "
		    "------ ------ --------- -----------  -------- -------- "
		    "-----\n");
		if (!m.ios) {
			fprintf(out, "%-28s (not run)\n", "simfs");
			continue;
		}
		double secs = (double)m.ns / 1e9;
		double rate = tb_rate(p, ph, m.ns);
		double cpu =
		    secs > 0 ? 100.0 * (double)ph->cpu_ns / 1e9 / secs : 0;
		fprintf(out,
			"%-28s %6" PRIu64 " %5" PRIu64 " %3u %7.2f %5.2f%% "
			"%9.3f %11.2f  %8.5f %8.5f %5.0f\n",
			"simfs", total_mb, st->block_bytes, st->threads, rate,
			cpu, m.lat_sum / (double)m.ios / 1e6,
			(double)m.lat_max / 1e6,
			100.0 * (double)m.over2s / (double)m.ios,
			100.0 * (double)m.over10s / (double)m.ios,
			cpu > 0 ? rate / (cpu / 100.0) : 0.0);
	}
	sfs_wl_report_failures(out, "tiobench", r);
}

/*
 * tb_report's Rate and Avg Latency per test as metrics, phase = the
 * test's phase name: rate_mb_s (MiB/s, tiotest's megabyte, over the
 * threads' span) and avg_latency_ms (per request).  Not "mb_s" and
 * "lat_avg_ms": the runner writes those for every phase, from the
 * phase's own time and every op.  A test not run gives no rows.
 */
static void tb_metrics(void *vst, const struct sfs_wl_result *r,
		       sfs_wl_emit_fn *emit, void *ctx)
{
	struct tb_state *st = vst;

	for (unsigned i = 0; i < TB_NPHASES; i++) {
		enum tb_phase p = tb_table_order[i];
		const struct sfs_wl_phase *ph =
		    sfs_wl_result_phase(r, tb_phases[p].name);
		struct tb_sum m = tb_sum_phase(st, p, ph);

		if (!m.ios)
			continue;
		emit(ctx, tb_phases[p].name, "rate_mb_s", tb_rate(p, ph, m.ns),
		     "MB/s");
		emit(ctx, tb_phases[p].name, "avg_latency_ms",
		     m.lat_sum / (double)m.ios / 1e6, "ms");
	}
}

const struct sfs_workload_ops sfs_wl_tiobench_ops = {
    .name = "tiobench",
    .help = "tiobench/tiotest: threads on own files, sequential and "
	    "random write and read",
    .doc = "tiobench.pl running tiotest for one thread count: each thread "
	   "has its own file _tiotest.thr<n> of size bytes, created and "
	   "ftruncate()d to its size; then, in tiotest's order and with "
	   "all threads started together behind a barrier, a sequential "
	   "write in block-sized writes ending with fsync, `random` writes "
	   "at uniform block-aligned offsets ending with fsync, a "
	   "sequential read and `random` reads; the fsync and close are in "
	   "the timing. direct opens with O_DIRECT (--directio), osync with "
	   "O_SYNC (-S). The report is tiobench.pl's summary table (rate in "
	   "MB/s, CPU% from the modelled CPU time of the phase, average and "
	   "maximum latency in ms, % of requests over 2 s and 10 s, CPU "
	   "efficiency), latencies measured per request by this workload. "
	   "Differences: size and random are per thread (tiotest's -f and "
	   "-r; tiobench.pl divides its --size and --random by the thread "
	   "count), one thread count and one run per invocation, no "
	   "sequential-writing mode (-W), the runner supplies the data "
	   "bytes, and the files are unlinked in a 'cleanup' phase unless "
	   "keep.",
    .params = tb_params,
    .init = tb_init,
    .clients = tb_clients,
    .next = tb_next,
    .report = tb_report,
    .metrics = tb_metrics,
    .fini = tb_fini,
};
