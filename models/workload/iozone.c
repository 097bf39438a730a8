/*
 * iozone.c - the `iozone` workload in throughput mode, for `simfs run`
 * (workload.h):
 *
 *   iozone,threads=8,size=2G,record=256K,direct,fsync,
 *          tests=write:rewrite:read:reread:randread:randwrite
 *
 * mirrors `iozone -t 8 -s 2g -r 256k -I -e -i 0 -i 1 -i 2`.  Each client
 * (iozone's child) has its own file iozone.DUMMY.<c>.  Every test is a
 * phase of the same name, and each client's phase is, in order:
 *
 *   BARRIER(phase) -> OPEN -> size/record READs or WRITEs -> [FSYNC] -> CLOSE
 *
 * so all children run a test together, as iozone's barrier does.  The
 * record order: sequential for write/rewrite/read/reread, last to first
 * for bkwdread, stride lanes for strideread (records j, j+17, j+34, ...
 * for j = 0..16), and for randread/randwrite a seeded permutation of the
 * records (a Feistel network with cycle walking: every record exactly
 * once, no table in memory).  After the tests a "cleanup" phase unlinks
 * the files unless keep.
 *
 * Per-child accounting (iz_span, in the state): a child's time in a test
 * runs from the `now` at which it is handed its first record (after the
 * barrier and the open) to the `now` at which it asks for the op after
 * its last record or fsync (or after close with `close`, iozone -c).  The
 * runner calls next() for a client when its previous op has finished, so
 * these are the child's own start and end.  The report sums per-child
 * rates ("Children see"), divides all bytes by the span from the first
 * start to the last end ("Parent sees"), and gives min/max/avg per child.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>

#include <glib.h>

#include "workload.h"

#define IZ_STRIDE 17u /* iozone -j default: 17 records */

enum iz_test {
	IZ_WRITE = 0,
	IZ_REWRITE,
	IZ_READ,
	IZ_REREAD,
	IZ_BKWDREAD,
	IZ_STRIDEREAD,
	IZ_RANDREAD,
	IZ_RANDWRITE,
	IZ_NTESTS
};

static const struct {
	const char *name; /* the phase and the tests= word */
	const char *what; /* iozone's "Children see throughput for N ..." */
	int iozone_i;	  /* iozone -i number */
	bool writes;
} iz_tests[IZ_NTESTS] = {
    [IZ_WRITE] = {"write", "initial writers", 0, true},
    [IZ_REWRITE] = {"rewrite", "rewriters", 0, true},
    [IZ_READ] = {"read", "readers", 1, false},
    [IZ_REREAD] = {"reread", "re-readers", 1, false},
    [IZ_BKWDREAD] = {"bkwdread", "reverse readers", 3, false},
    [IZ_STRIDEREAD] = {"strideread", "stride readers", 5, false},
    [IZ_RANDREAD] = {"randread", "random readers", 2, false},
    [IZ_RANDWRITE] = {"randwrite", "random writers", 2, true},
};

enum iz_step { IZ_S_BARRIER = 0, IZ_S_OPEN, IZ_S_REC, IZ_S_FSYNC, IZ_S_CLOSE };

/* One child's part of one test. */
struct iz_span {
	sfs_ns_t start_ns; /* handed its first record */
	sfs_ns_t end_ns;   /* finished its last timed op */
	uint64_t bytes;	   /* bytes of its records */
	bool started, ended;
};

struct iz_client {
	char *path;	    /* its file, relative to the run root */
	unsigned ti;	    /* index into st->tests; ntests: cleanup */
	enum iz_step step;  /* within test ti */
	uint64_t k;	    /* records done in test ti */
	bool close_pending; /* with `close`: end the span next call */
	bool done;
};

struct iz_state {
	unsigned threads;
	uint64_t size_bytes;   /* per file */
	uint64_t record_bytes; /* per read/write */
	uint64_t nrec;	       /* size / record */
	bool direct, fsync, close_timed, osync, keep;
	uint64_t seed;
	unsigned ntests;
	enum iz_test tests[IZ_NTESTS];
	struct iz_client *cl;  /* threads of them */
	struct iz_span *span;  /* [client * ntests + ti] */
	unsigned feistel_half; /* bits per Feistel half */
};

enum {
	P_THREADS = 0,
	P_SIZE,
	P_RECORD,
	P_TESTS,
	P_DIRECT,
	P_FSYNC,
	P_CLOSE,
	P_OSYNC,
	P_KEEP,
	P_SEED,
};

static const struct sfs_wl_param iz_params[] = {
    [P_THREADS] = {"threads", SFS_WLP_UINT, "1",
		   "children, each on its own file (iozone -t), 1..1024"},
    [P_SIZE] = {"size", SFS_WLP_SIZE, "64M",
		"size of each child's file (iozone -s)"},
    [P_RECORD] = {"record", SFS_WLP_SIZE, "4K",
		  "bytes per read/write (iozone -r), <= size, <= 16M"},
    [P_TESTS] = {"tests", SFS_WLP_STRING,
		 "write:rewrite:read:reread:randread:randwrite",
		 "tests in order, ':'-separated, first write (iozone -i 0 "
		 "-i 1 -i 2); also bkwdread (-i 3), strideread (-i 5)"},
    [P_DIRECT] = {"direct", SFS_WLP_BOOL, "no", "O_DIRECT (iozone -I)"},
    [P_FSYNC] = {"fsync", SFS_WLP_BOOL, "no",
		 "fsync at the end of write tests, timed (iozone -e)"},
    [P_CLOSE] = {"close", SFS_WLP_BOOL, "no",
		 "include close in the timing (iozone -c)"},
    [P_OSYNC] = {"osync", SFS_WLP_BOOL, "no", "O_SYNC writes (iozone -o)"},
    [P_KEEP] = {"keep", SFS_WLP_BOOL, "no",
		"keep the files at the end (iozone -w)"},
    [P_SEED] = {"seed", SFS_WLP_UINT, "1",
		"seed of the random tests' record permutation"},
    {.name = NULL},
};

/* ---- the random permutation of records ---- */

/* One pass of a 4-round Feistel network over 2 * half bits. */
static uint64_t iz_feistel(uint64_t x, unsigned half, uint64_t key)
{
	uint64_t mask = (1ULL << half) - 1;
	uint64_t l = x >> half, r = x & mask;

	for (unsigned i = 0; i < 4; i++) {
		uint64_t f = sfs_wl_mix(r ^ key ^ ((uint64_t)i << 56)) & mask;
		uint64_t t = l ^ f;
		l = r;
		r = t;
	}
	return (l << half) | r;
}

/* The k-th record (k < n) of a key's permutation of [0, n). */
static uint64_t iz_perm(uint64_t k, uint64_t n, unsigned half, uint64_t key)
{
	uint64_t x = k;

	do
		x = iz_feistel(x, half, key);
	while (x >= n);
	return x;
}

/* The record test t touches k-th (k < st->nrec) for client c. */
static uint64_t iz_record(const struct iz_state *st, enum iz_test t, unsigned c,
			  uint64_t k)
{
	uint64_t n = st->nrec;

	switch (t) {
	case IZ_BKWDREAD:
		return n - 1 - k;
	case IZ_STRIDEREAD: {
		/* lane j holds records j, j+S, ...: ceil((n-j)/S) of them */
		uint64_t s = MIN((uint64_t)IZ_STRIDE, n);
		for (uint64_t j = 0; j < s; j++) {
			uint64_t in_lane = (n - j + s - 1) / s;
			if (k < in_lane)
				return j + k * s;
			k -= in_lane;
		}
		return 0; /* not reached: k < n */
	}
	case IZ_RANDREAD:
	case IZ_RANDWRITE:
		return iz_perm(k, n, st->feistel_half,
			       sfs_wl_mix(st->seed * 0x100000001b3ULL + t) ^
				   sfs_wl_mix(c + 1));
	default:
		return k;
	}
}

/* ---- init ---- */

static int iz_parse_tests(struct iz_state *st, const char *text, char **err)
{
	char **w = g_strsplit(text, ":", -1);
	int rc = 0;

	st->ntests = 0;
	for (unsigned i = 0; w[i]; i++) {
		unsigned t;

		for (t = 0; t < IZ_NTESTS && strcmp(w[i], iz_tests[t].name);
		     t++)
			;
		if (t == IZ_NTESTS) {
			*err = g_strdup_printf(
			    "unknown test '%s' in tests= (valid: write, "
			    "rewrite, read, reread, bkwdread, strideread, "
			    "randread, randwrite)",
			    w[i]);
			rc = -EINVAL;
			goto out;
		}
		for (unsigned j = 0; j < st->ntests; j++)
			if (st->tests[j] == (enum iz_test)t) {
				*err = g_strdup_printf("test '%s' twice in "
						       "tests=",
						       w[i]);
				rc = -EINVAL;
				goto out;
			}
		st->tests[st->ntests++] = t;
	}
	if (st->ntests == 0 || st->tests[0] != IZ_WRITE) {
		*err = g_strdup_printf("tests='%s' must begin with write (the "
				       "initial write creates the files, "
				       "iozone -i 0)",
				       text);
		rc = -EINVAL;
	}
out:
	g_strfreev(w);
	return rc;
}

static void iz_fini(void *vst)
{
	struct iz_state *st = vst;

	for (unsigned c = 0; st->cl && c < st->threads; c++)
		g_free(st->cl[c].path);
	g_free(st->cl);
	g_free(st->span);
	g_free(st);
}

static int iz_init(const struct sfs_wl_value *v, void **st_out, char **err)
{
	struct iz_state *st;
	uint64_t threads = v[P_THREADS].u, size = v[P_SIZE].u,
		 rec = v[P_RECORD].u;
	int rc;

	*st_out = NULL;
	rc = sfs_wl_check_thread_files(&v[P_THREADS], &v[P_SIZE], &v[P_RECORD],
				       "record", v[P_DIRECT].u, err);
	if (rc)
		return rc;
	st = g_new0(struct iz_state, 1);
	rc = iz_parse_tests(st, v[P_TESTS].s, err);
	if (rc) {
		g_free(st);
		return rc;
	}
	st->threads = (unsigned)threads;
	st->size_bytes = size;
	st->record_bytes = rec;
	st->nrec = size / rec;
	st->direct = v[P_DIRECT].u;
	st->fsync = v[P_FSYNC].u;
	st->close_timed = v[P_CLOSE].u;
	st->osync = v[P_OSYNC].u;
	st->keep = v[P_KEEP].u;
	st->seed = v[P_SEED].u;
	unsigned bits = 2;
	while (bits < 64 && (1ULL << bits) < st->nrec)
		bits++;
	st->feistel_half = (bits + 1) / 2;
	st->cl = g_new0(struct iz_client, st->threads);
	st->span = g_new0(struct iz_span, (size_t)st->threads * st->ntests);
	for (unsigned c = 0; c < st->threads; c++)
		st->cl[c].path = g_strdup_printf("iozone.DUMMY.%u", c);
	*st_out = st;
	return 0;
}

static unsigned iz_clients(void *vst)
{
	return ((struct iz_state *)vst)->threads;
}

/* ---- the generator ---- */

static int iz_next(void *vst, unsigned c, sfs_ns_t now, struct sfs_wop *out,
		   char **err)
{
	struct iz_state *st = vst;
	struct iz_client *cl = &st->cl[c];

	(void)err;
	if (cl->close_pending) {
		struct iz_span *sp = &st->span[c * st->ntests + cl->ti - 1];
		sp->end_ns = now;
		sp->ended = true;
		cl->close_pending = false;
	}
	if (cl->done)
		return 0;
	out->fd = 0;
	out->expect = 0;
	out->path = cl->path;
	if (cl->ti == st->ntests) { /* cleanup */
		if (st->keep) {
			cl->done = true;
			return 0;
		}
		if (cl->step == IZ_S_BARRIER) {
			out->type = SFS_WOP_BARRIER;
			out->phase = "cleanup";
			cl->step = IZ_S_OPEN;
			return 1;
		}
		out->type = SFS_WOP_UNLINK;
		cl->done = true;
		return 1;
	}
	enum iz_test t = st->tests[cl->ti];
	struct iz_span *sp = &st->span[c * st->ntests + cl->ti];
	uint32_t dflag = st->direct ? O_DIRECT : 0;

	switch (cl->step) {
	case IZ_S_BARRIER:
		out->type = SFS_WOP_BARRIER;
		out->phase = iz_tests[t].name;
		cl->step = IZ_S_OPEN;
		return 1;
	case IZ_S_OPEN:
		out->type = SFS_WOP_OPEN;
		out->mode = 0640;
		if (t == IZ_WRITE)
			out->flags = O_WRONLY | O_CREAT | O_TRUNC;
		else
			out->flags = iz_tests[t].writes ? O_RDWR : O_RDONLY;
		out->flags |= dflag;
		if (iz_tests[t].writes && st->osync)
			out->flags |= O_SYNC;
		cl->step = IZ_S_REC;
		cl->k = 0;
		return 1;
	case IZ_S_REC:
		if (!sp->started) {
			sp->start_ns = now;
			sp->started = true;
		}
		out->type = iz_tests[t].writes ? SFS_WOP_WRITE : SFS_WOP_READ;
		out->off = iz_record(st, t, c, cl->k) * st->record_bytes;
		out->len = st->record_bytes;
		sp->bytes += out->len;
		if (++cl->k == st->nrec)
			cl->step = iz_tests[t].writes && st->fsync ? IZ_S_FSYNC
								   : IZ_S_CLOSE;
		return 1;
	case IZ_S_FSYNC:
		out->type = SFS_WOP_FSYNC;
		cl->step = IZ_S_CLOSE;
		return 1;
	case IZ_S_CLOSE:
	default:
		if (st->close_timed) {
			cl->close_pending = true;
		} else {
			sp->end_ns = now;
			sp->ended = true;
		}
		out->type = SFS_WOP_CLOSE;
		cl->ti++;
		cl->step = IZ_S_BARRIER;
		return 1;
	}
}

/* ---- the report ---- */

static void iz_size_arg(char *buf, size_t len, uint64_t bytes)
{
	if (bytes % (1ULL << 30) == 0)
		snprintf(buf, len, "%" PRIu64 "g", bytes >> 30);
	else if (bytes % (1ULL << 20) == 0)
		snprintf(buf, len, "%" PRIu64 "m", bytes >> 20);
	else if (bytes % 1024 == 0)
		snprintf(buf, len, "%" PRIu64 "k", bytes >> 10);
	else
		snprintf(buf, len, "%.3fk", (double)bytes / 1024.0);
}

/* The throughput figures of one test over the children that finished it. */
struct iz_sum {
	unsigned seen;	   /* children that started and ended it */
	double children;   /* sum of their kB/s: "Children see" */
	double parent;	   /* all kB over first start to last end */
	double minr, maxr; /* slowest and fastest child, kB/s */
	double minx;	   /* fewest kB a child moved */
};

/* iozone's figures of test ti (index into st->tests); a child's time is
 * at least iozone's time_res, 1 us. */
static struct iz_sum iz_sum_test(const struct iz_state *st, unsigned ti)
{
	struct iz_sum m = {0};
	sfs_ns_t first = UINT64_MAX, last = 0;
	double total_kb = 0;

	for (unsigned c = 0; c < st->threads; c++) {
		const struct iz_span *sp = &st->span[c * st->ntests + ti];
		if (!sp->started || !sp->ended)
			continue;
		double kb = (double)sp->bytes / 1024.0;
		double secs = (double)(sp->end_ns - sp->start_ns) / 1e9;
		double rate = kb / MAX(secs, 1e-6); /* time_res */
		m.children += rate;
		total_kb += kb;
		m.minr = m.seen ? MIN(m.minr, rate) : rate;
		m.maxr = m.seen ? MAX(m.maxr, rate) : rate;
		m.minx = m.seen ? MIN(m.minx, kb) : kb;
		first = MIN(first, sp->start_ns);
		last = MAX(last, sp->end_ns);
		m.seen++;
	}
	if (m.seen)
		m.parent = total_kb / MAX((double)(last - first) / 1e9, 1e-6);
	return m;
}

static void iz_report(void *vst, const struct sfs_wl_result *r, FILE *out)
{
	struct iz_state *st = vst;
	char s[32], rec[32];
	GString *cmd = g_string_new("iozone");
	int last_i = -1;

	iz_size_arg(s, sizeof(s), st->size_bytes);
	iz_size_arg(rec, sizeof(rec), st->record_bytes);
	g_string_append_printf(cmd, " -t %u -s %s -r %s", st->threads, s, rec);
	if (st->direct)
		g_string_append(cmd, " -I");
	if (st->fsync)
		g_string_append(cmd, " -e");
	if (st->close_timed)
		g_string_append(cmd, " -c");
	if (st->osync)
		g_string_append(cmd, " -o");
	if (st->keep)
		g_string_append(cmd, " -w");
	g_string_append(cmd, " -x"); /* no stonewalling: see doc */
	for (unsigned i = 0; i < st->ntests; i++) {
		int n = iz_tests[st->tests[i]].iozone_i;
		if (n != last_i)
			g_string_append_printf(cmd, " -i %d", n);
		last_i = n;
	}
	fprintf(out,
		"\tIozone: Performance Test of File I/O (simfs model)\n\n");
	fprintf(out, "\tCommand line used: %s\n", cmd->str);
	fprintf(out, "\tOutput is in kBytes/sec\n");
	fprintf(out, "\tThroughput test with %u processes\n", st->threads);
	fprintf(out,
		"\tEach process writes a %" PRIu64 " kByte file in %" PRIu64
		" kByte records\n",
		st->size_bytes >> 10, st->record_bytes >> 10);
	g_string_free(cmd, TRUE);

	for (unsigned i = 0; i < st->ntests; i++) {
		enum iz_test t = st->tests[i];
		struct iz_sum m = iz_sum_test(st, i);

		fprintf(out, "\n");
		if (!m.seen) {
			fprintf(out, "\t%s: not run\n", iz_tests[t].name);
			continue;
		}
		fprintf(out,
			"\tChildren see throughput for %2u %s \t= %10.2f "
			"kB/sec\n",
			st->threads, iz_tests[t].what, m.children);
		fprintf(out,
			"\tParent sees throughput for %2u %s \t= %10.2f "
			"kB/sec\n",
			st->threads, iz_tests[t].what, m.parent);
		fprintf(out,
			"\tMin throughput per process \t\t\t= %10.2f "
			"kB/sec \n",
			m.minr);
		fprintf(out,
			"\tMax throughput per process \t\t\t= %10.2f "
			"kB/sec\n",
			m.maxr);
		fprintf(out,
			"\tAvg throughput per process \t\t\t= %10.2f "
			"kB/sec\n",
			m.children / m.seen);
		fprintf(out, "\tMin xfer \t\t\t\t\t= %10.2f kB\n", m.minx);
		const struct sfs_wl_phase *ph =
		    sfs_wl_result_phase(r, iz_tests[t].name);
		if (ph && ph->end_ns > ph->start_ns)
			fprintf(out,
				"\tCPU utilization: Wall time %8.3f    CPU "
				"time %8.3f    CPU utilization %6.2f %%\n",
				(double)(ph->end_ns - ph->start_ns) / 1e9,
				(double)ph->cpu_ns / 1e9,
				100.0 * (double)ph->cpu_ns /
				    (double)(ph->end_ns - ph->start_ns));
	}
	fprintf(out, "\n\niozone test complete.\n");
	sfs_wl_report_failures(out, "iozone", r);
}

/*
 * iz_report's "Children see throughput" and "Parent sees throughput" per
 * test phase ("write", "rewrite", ...): children_kb_s and parent_kb_s in
 * iozone's kB/sec (1024 bytes), and children_mb_s = children_kb_s / 1024,
 * the MB/s of published tables.  A test no child finished gives no rows.
 */
static void iz_metrics(void *vst, const struct sfs_wl_result *r,
		       sfs_wl_emit_fn *emit, void *ctx)
{
	struct iz_state *st = vst;

	(void)r;
	for (unsigned i = 0; i < st->ntests; i++) {
		enum iz_test t = st->tests[i];
		struct iz_sum m = iz_sum_test(st, i);

		if (!m.seen)
			continue;
		emit(ctx, iz_tests[t].name, "children_kb_s", m.children,
		     "kB/s");
		emit(ctx, iz_tests[t].name, "children_mb_s",
		     m.children / 1024.0, "MB/s");
		emit(ctx, iz_tests[t].name, "parent_kb_s", m.parent, "kB/s");
	}
}

const struct sfs_workload_ops sfs_wl_iozone_ops = {
    .name = "iozone",
    .help = "iozone -t N throughput mode: N children, one file each, "
	    "tests run together",
    .doc = "iozone's throughput mode (iozone -t N -s SIZE -r RECORD "
	   "-i 0 -i 1 -i 2 [-I] [-e] [-c]): each of N children has its own "
	   "file iozone.DUMMY.<n>; every test in tests= is a phase that "
	   "begins with a barrier, so all children run it together. "
	   "write creates the files (creat, O_TRUNC), rewrite writes them "
	   "again in place, read/reread read them sequentially, bkwdread "
	   "from the last record to the first, strideread in stride lanes "
	   "of 17 records, randread/randwrite visit every record once in a "
	   "seeded random order. fsync (-e) ends each write test with an "
	   "fsync inside the timing, close (-c) also times the close, "
	   "direct (-I) opens with O_DIRECT, osync (-o) writes with O_SYNC. "
	   "The files are unlinked in a 'cleanup' phase unless keep (-w). "
	   "The report gives iozone's Children see / Parent sees / min / "
	   "max / avg per process / min xfer lines in kB/sec, from each "
	   "child's own start and end. Differences from iozone: no "
	   "stonewalling (every child does its whole file, as iozone -x), "
	   "so min xfer is the file size; tests run in the order given "
	   "rather than iozone's fixed order; the random permutation is "
	   "this model's, not iozone's; no CPU-cache flushing, no purge, "
	   "the runner supplies the data bytes.",
    .params = iz_params,
    .init = iz_init,
    .clients = iz_clients,
    .next = iz_next,
    .report = iz_report,
    .metrics = iz_metrics,
    .fini = iz_fini,
};
