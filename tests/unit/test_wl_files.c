/*
 * test_wl_files.c - the file-system benchmarks of `simfs run` on their
 * own: bonnie, fsmark, postmark, compilebench (models/workload/).
 *
 * Each workload is built by its spec and every client is pulled to its
 * end by a fake runner: clients take turns by their own virtual clock
 * (each op costs 1 us; a barrier holds a client until every client not
 * yet done is at one), each op is checked against a tiny in-memory
 * namespace (a path set: create on an existing name, open or unlink of a
 * missing one, rmdir of a full directory ... give the errno the engine
 * would) and the answer goes back through sfs_workload_done.  So an op
 * whose `expect` disagrees with what a file system would answer is a
 * failure here.  The cases count ops and bytes against the parameters,
 * check determinism for a seed, the phases' order, the reports (from
 * fabricated results, so the numbers are known) and the refusals.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "testsupport.h"
#include "workload.h"

#define OP_NS 1000ULL

struct tally {
	uint64_t by_type[SFS_WOP_NTYPES];
	uint64_t creates;      /* opens with O_CREAT */
	uint64_t opens_rdonly; /* opens without write access */
	uint64_t opens_append; /* opens with O_APPEND */
	uint64_t bytes_read, bytes_written;
	uint64_t mismatches;
	char first_mismatch[256];
	uint64_t files_left; /* non-directories in the namespace at the end */
	uint64_t hash;	     /* of the whole op stream */
	struct sfs_wl_result res;
};

/* ---- a namespace: path -> is a directory ---- */

static char *parent_of(const char *p)
{
	const char *slash = strrchr(p, '/');

	return slash ? g_strndup(p, (gsize)(slash - p)) : g_strdup("");
}

static bool ns_has(GHashTable *ns, const char *p)
{
	return !*p || g_hash_table_contains(ns, p);
}

static bool ns_is_dir(GHashTable *ns, const char *p)
{
	return !*p || GPOINTER_TO_INT(g_hash_table_lookup(ns, p)) == 2;
}

static bool ns_dir_empty(GHashTable *ns, const char *p)
{
	GHashTableIter it;
	gpointer k;
	char *prefix = g_strconcat(p, "/", NULL);
	bool empty = true;

	g_hash_table_iter_init(&it, ns);
	while (empty && g_hash_table_iter_next(&it, &k, NULL))
		if (g_str_has_prefix(k, prefix))
			empty = false;
	g_free(prefix);
	return empty;
}

/* What a file system would answer to op. */
static int ns_apply(GHashTable *ns, const struct sfs_wop *op)
{
	const char *p = op->path ? op->path : "";
	char *par = parent_of(p);
	int rc = 0;

	switch (op->type) {
	case SFS_WOP_OPEN:
		if (!ns_has(ns, par) || !ns_is_dir(ns, par))
			rc = -ENOENT;
		else if (ns_has(ns, p) && (op->flags & O_CREAT) &&
			 (op->flags & O_EXCL))
			rc = -EEXIST;
		else if (!ns_has(ns, p) && !(op->flags & O_CREAT))
			rc = -ENOENT;
		else if (!ns_has(ns, p))
			g_hash_table_insert(ns, g_strdup(p),
					    GINT_TO_POINTER(1));
		break;
	case SFS_WOP_MKDIR:
		if (ns_has(ns, p))
			rc = -EEXIST;
		else if (!ns_has(ns, par))
			rc = -ENOENT;
		else
			g_hash_table_insert(ns, g_strdup(p),
					    GINT_TO_POINTER(2));
		break;
	case SFS_WOP_RMDIR:
		if (!ns_has(ns, p) || !ns_is_dir(ns, p))
			rc = -ENOENT;
		else if (!ns_dir_empty(ns, p))
			rc = -ENOTEMPTY;
		else
			g_hash_table_remove(ns, p);
		break;
	case SFS_WOP_UNLINK:
		if (!ns_has(ns, p) || ns_is_dir(ns, p))
			rc = -ENOENT;
		else
			g_hash_table_remove(ns, p);
		break;
	case SFS_WOP_RENAME:
		if (!ns_has(ns, p) || ns_is_dir(ns, p))
			rc = -ENOENT;
		else {
			g_hash_table_remove(ns, p);
			g_hash_table_insert(ns, g_strdup(op->path2),
					    GINT_TO_POINTER(1));
		}
		break;
	case SFS_WOP_STAT:
	case SFS_WOP_READDIR:
		if (!ns_has(ns, p))
			rc = -ENOENT;
		break;
	default:
		break;
	}
	g_free(par);
	return rc;
}

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

static uint64_t mix_str(uint64_t h, const char *s)
{
	return s ? mix(h, s, strlen(s) + 1) : mix(h, "\1", 1);
}

/*
 * Pull every client of spec to its end.  Returns the workload (free it)
 * with the tally in *t (sfs_wl_result_free t->res).
 */
static struct sfs_workload *drive(const char *spec, struct tally *t)
{
	struct sfs_workload *w = sfs_test_workload(spec);
	char *err = NULL;
	int rc;

	memset(t, 0, sizeof(*t));
	t->hash = 0xcbf29ce484222325ULL;

	unsigned n = sfs_workload_clients(w);
	sfs_ns_t *clk = g_new0(sfs_ns_t, n);
	int *state = g_new0(int, n); /* 0 ready, 1 at a barrier, 2 done */
	int64_t *phase = g_new0(int64_t, n);
	GHashTable *ns =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

	sfs_wl_result_init(&t->res, n);
	for (unsigned c = 0; c < n; c++)
		phase[c] = -1;
	for (;;) {
		int pick = -1;
		unsigned live = 0, waiting = 0;

		for (unsigned c = 0; c < n; c++) {
			if (state[c] != 2)
				live++;
			if (state[c] == 1)
				waiting++;
			if (state[c] == 0 && (pick < 0 || clk[c] < clk[pick]))
				pick = (int)c;
		}
		if (!live)
			break;
		if (pick < 0) { /* all live clients wait: release them */
			assert_int_equal(waiting, live);
			sfs_ns_t at = 0;
			for (unsigned c = 0; c < n; c++)
				if (state[c] == 1)
					at = MAX(at, clk[c]);
			for (unsigned c = 0; c < n; c++)
				if (state[c] == 1) {
					state[c] = 0;
					clk[c] = at;
				}
			continue;
		}
		unsigned c = (unsigned)pick;
		struct sfs_wop op;
		rc = sfs_workload_next(w, c, clk[c], &op, &err);
		if (rc < 0)
			print_error("%s: client %u: %s\n", spec, c,
				    err ? err : "?");
		assert_true(rc >= 0);
		if (rc == 0) {
			state[c] = 2;
			continue;
		}
		t->hash = mix(t->hash, &op.type, sizeof(op.type));
		t->hash = mix(t->hash, &c, sizeof(c));
		t->hash = mix_str(t->hash, op.path);
		t->hash = mix_str(t->hash, op.path2);
		t->hash = mix_str(t->hash, op.phase);
		t->hash = mix(t->hash, &op.off, sizeof(op.off));
		t->hash = mix(t->hash, &op.len, sizeof(op.len));
		t->hash = mix(t->hash, &op.flags, sizeof(op.flags));
		t->hash = mix(t->hash, &op.expect, sizeof(op.expect));
		if (op.phase)
			phase[c] =
			    sfs_wl_result_enter(&t->res, op.phase, clk[c]) -
			    t->res.phases;
		/* every client names its phase before its first op */
		if (phase[c] < 0)
			print_error("%s: client %u: an op before any phase\n",
				    spec, c);
		assert_true(phase[c] >= 0);
		assert_true((unsigned)op.type < SFS_WOP_NTYPES);
		t->by_type[op.type]++;
		if (op.type == SFS_WOP_BARRIER) {
			state[c] = 1;
			sfs_workload_done(w, c, &op, 0);
			continue;
		}
		if (op.type == SFS_WOP_OPEN) {
			if (op.flags & O_CREAT)
				t->creates++;
			if ((op.flags & O_ACCMODE) == O_RDONLY)
				t->opens_rdonly++;
			if (op.flags & O_APPEND)
				t->opens_append++;
		}
		if (op.type == SFS_WOP_READ)
			t->bytes_read += op.len;
		if (op.type == SFS_WOP_WRITE)
			t->bytes_written += op.len;
		rc = ns_apply(ns, &op);
		if (op.expect != SFS_WOP_ANY && rc != op.expect &&
		    !t->mismatches++)
			g_snprintf(t->first_mismatch, sizeof(t->first_mismatch),
				   "client %u: %s %s: got %d, expected %d", c,
				   sfs_wop_name(op.type),
				   op.path ? op.path : "", rc, op.expect);
		struct sfs_wl_phase *ph = &t->res.phases[phase[c]];
		uint64_t bytes =
		    op.type == SFS_WOP_READ || op.type == SFS_WOP_WRITE ? op.len
									: 0;
		sfs_wl_result_op(&t->res, ph, c, &op, rc, bytes, clk[c],
				 clk[c] + OP_NS);
		ph->cpu_ns += OP_NS / 4;
		clk[c] += OP_NS;
		sfs_workload_done(w, c, &op,
				  op.expect == SFS_WOP_ANY ? rc : op.expect);
	}
	GHashTableIter it;
	gpointer v;
	g_hash_table_iter_init(&it, ns);
	while (g_hash_table_iter_next(&it, NULL, &v))
		if (GPOINTER_TO_INT(v) == 1)
			t->files_left++;
	if (t->mismatches)
		print_error("%s: %" PRIu64 " ops against expect; first: %s\n",
			    spec, t->mismatches, t->first_mismatch);
	g_hash_table_destroy(ns);
	g_free(clk);
	g_free(state);
	g_free(phase);
	g_free(err);
	return w;
}

static uint64_t phase_label(const struct sfs_wl_result *r, const char *phase,
			    const char *label)
{
	const struct sfs_wl_lat *l =
	    sfs_wl_phase_lat(sfs_wl_result_phase(r, phase), label);

	return l ? l->count : 0;
}

static char *report_text(struct sfs_workload *w, const struct sfs_wl_result *r)
{
	FILE *f = tmpfile();
	GString *s = g_string_new(NULL);
	char chunk[4096];
	size_t n;

	assert_non_null(f);
	sfs_workload_report(w, r, f);
	rewind(f);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		g_string_append_len(s, chunk, (gssize)n);
	fclose(f);
	return g_string_free(s, FALSE);
}

static void assert_contains(const char *text, const char *want)
{
	if (!strstr(text, want))
		print_error("wanted \"%s\" in:\n%s\n", want, text);
	assert_non_null(strstr(text, want));
}

/* A fabricated phase: elapsed secs, cpu secs. */
static void fake_phase(struct sfs_wl_result *r, const char *name, double start,
		       double secs, double cpu)
{
	struct sfs_wl_phase *ph =
	    sfs_wl_result_enter(r, name, (sfs_ns_t)(start * 1e9));

	ph->end_ns = (sfs_ns_t)((start + secs) * 1e9);
	ph->cpu_ns = (sfs_ns_t)(cpu * 1e9);
}

/* ---- fsmark ---- */

static void test_wl_files_fsmark_counts(void **state)
{
	struct {
		const char *spec;
		uint64_t creates, writes, fsyncs, syncs, unlinks, opens;
	} cases[] = {
	    /* 4 threads x 100 files: 400 creates, writes, fsyncs */
	    {"fsmark,threads=4,files=100,size=4K,sync=1", 400, 400, 400, 0, 400,
	     400},
	    {"fsmark,threads=4,files=100,size=4K,sync=0", 400, 400, 0, 0, 400,
	     400},
	    /* sync() and one reopen + fsync of the first file, per thread */
	    {"fsmark,threads=4,files=100,size=4K,sync=2", 400, 400, 4, 4, 400,
	     404},
	    /* reopen + fsync of every file after the loop */
	    {"fsmark,threads=2,files=50,size=40K,sync=3", 100, 300, 100, 0, 100,
	     200},
	    {"fsmark,threads=2,files=50,size=40K,sync=6", 100, 300, 100, 2, 100,
	     200},
	    /* -L implies -k: nothing unlinked, new names each loop */
	    {"fsmark,threads=3,files=10,size=0,sync=1,loops=2", 60, 0, 60, 0, 0,
	     60},
	    {"fsmark,threads=2,files=40,size=1K,dirs=4,per_subdir=5", 80, 80,
	     80, 0, 80, 80},
	};

	(void)state;
	for (unsigned i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct tally t;
		struct sfs_workload *w = drive(cases[i].spec, &t);

		assert_int_equal(t.mismatches, 0);
		assert_int_equal(t.creates, cases[i].creates);
		assert_int_equal(t.by_type[SFS_WOP_WRITE], cases[i].writes);
		assert_int_equal(t.by_type[SFS_WOP_FSYNC], cases[i].fsyncs);
		assert_int_equal(t.by_type[SFS_WOP_SYNC], cases[i].syncs);
		assert_int_equal(t.by_type[SFS_WOP_UNLINK], cases[i].unlinks);
		assert_int_equal(t.by_type[SFS_WOP_OPEN], cases[i].opens);
		assert_int_equal(t.by_type[SFS_WOP_CLOSE], cases[i].opens);
		assert_int_equal(t.files_left,
				 cases[i].creates - cases[i].unlinks);
		sfs_wl_result_free(&t.res);
		sfs_workload_free(w);
	}

	/* the 4K case: every write is 4K, the bytes add up */
	struct tally t;
	struct sfs_workload *w =
	    drive("fsmark,threads=4,files=100,size=4K,sync=1", &t);
	assert_int_equal(t.bytes_written, 400 * 4096);
	assert_int_equal(phase_label(&t.res, "iteration 1", "creat"), 400);
	assert_int_equal(phase_label(&t.res, "unlink 1", "unlink"), 400);
	/* 400 per-file mkdirs and the 4 thread directories */
	assert_int_equal(t.by_type[SFS_WOP_MKDIR], 404);
	sfs_wl_result_free(&t.res);
	sfs_workload_free(w);
}

static void test_wl_files_fsmark_report(void **state)
{
	struct sfs_workload *w = NULL;
	struct sfs_wl_result r;
	char *err = NULL;

	(void)state;
	assert_int_equal(
	    sfs_workload_new("fsmark,threads=4,files=100,size=4K", &w, &err),
	    0);
	/* no ops pulled: the report falls back on the phase's time */
	sfs_wl_result_init(&r, 4);
	fake_phase(&r, "iteration 1", 0, 2.0, 0.5);
	fake_phase(&r, "unlink 1", 2.0, 1.0, 0.1);
	char *txt = report_text(w, &r);
	assert_contains(txt, "FSUse%        Count         Size    Files/sec"
			     "     App Overhead\n");
	/* 400 files in 2 s */
	assert_contains(txt, "     0          400         4096        200.0"
			     "                0\n");
	assert_contains(txt, "INBAND FSYNC");
	g_free(txt);
	sfs_wl_result_free(&r);
	sfs_workload_free(w);

	/* driven: each thread's own loop time; 3 ops per file of 1 us plus
	 * the per-file mkdir, 4 threads side by side: 4 * 100 / 400 us */
	struct tally t;
	w = drive("fsmark,threads=4,files=100,size=4K,sync=0", &t);
	txt = report_text(w, &t.res);
	/* per file: mkdir, open, write, close = 4 us, so 250000 files/s a
	 * thread; App Overhead = 100 mkdirs of 1 us a thread */
	assert_contains(txt, "          400         4096    1000000.0"
			     "              400\n");
	g_free(txt);
	sfs_wl_result_free(&t.res);
	sfs_workload_free(w);
}

/* ---- bonnie ---- */

static void test_wl_files_bonnie_counts(void **state)
{
	struct tally t;
	struct sfs_workload *w =
	    drive("bonnie,size=1M,chunk=8K,files=1,seeks=100,seekers=3", &t);
	const struct sfs_wl_result *r = &t.res;
	static const char *const order[] = {
	    "block write", "rewrite",	  "block read", "seeks",
	    "remove file", "setup",	  "seq create", "seq stat",
	    "seq delete",  "rand create", "rand stat",	"rand delete",
	    "remove dirs",
	};

	(void)state;
	assert_int_equal(t.mismatches, 0);
	assert_int_equal(sfs_workload_clients(w), 3);
	assert_int_equal(r->nphases, G_N_ELEMENTS(order));
	for (unsigned i = 0; i < G_N_ELEMENTS(order); i++)
		assert_string_equal(r->phases[i].name, order[i]);
	/* block write: size in chunk writes */
	assert_int_equal(sfs_wl_result_phase(r, "block write")->bytes_written,
			 1 << 20);
	assert_int_equal(phase_label(r, "block write", "write"), 128);
	/* rewrite: read and write back each chunk */
	assert_int_equal(phase_label(r, "rewrite", "read"), 128);
	assert_int_equal(phase_label(r, "rewrite", "write"), 128);
	assert_int_equal(sfs_wl_result_phase(r, "block read")->bytes_read,
			 1 << 20);
	/* seeks: 34 + 33 + 33 reads, every 10th of each written back */
	assert_int_equal(phase_label(r, "seeks", "seek read"), 100);
	assert_int_equal(phase_label(r, "seeks", "seek write"), 3 + 3 + 3);
	/* creation tests: 1024 files each way, all gone at the end */
	assert_int_equal(phase_label(r, "seq create", "create"), 1024);
	assert_int_equal(phase_label(r, "seq stat", "stat"), 1024);
	assert_int_equal(phase_label(r, "seq delete", "unlink"), 1024);
	assert_int_equal(phase_label(r, "rand create", "create"), 1024);
	assert_int_equal(phase_label(r, "rand stat", "stat"), 1024);
	assert_int_equal(phase_label(r, "rand delete", "unlink"), 1024);
	assert_int_equal(t.files_left, 0);
	assert_int_equal(t.by_type[SFS_WOP_BARRIER], 2 + 2 + 0);
	sfs_wl_result_free(&t.res);
	sfs_workload_free(w);

	/* the default size: bytes written by the block write = size */
	w = drive("bonnie,size=64M,files=0,seeks=1000,fsync", &t);
	assert_int_equal(t.mismatches, 0);
	assert_int_equal(
	    sfs_wl_result_phase(&t.res, "block write")->bytes_written,
	    64ULL << 20);
	/* fsync after every write: block write, rewrite, seek write-backs */
	assert_int_equal(t.by_type[SFS_WOP_FSYNC], 8192 + 8192 + 99);
	sfs_wl_result_free(&t.res);
	sfs_workload_free(w);

	/* subdirectories: the files spread, every directory removed */
	w = drive("bonnie,size=0,files=2,dirs=7", &t);
	assert_int_equal(t.mismatches, 0);
	assert_int_equal(t.by_type[SFS_WOP_MKDIR], 8);
	assert_int_equal(t.by_type[SFS_WOP_RMDIR], 8);
	assert_int_equal(t.creates, 4096);
	sfs_wl_result_free(&t.res);
	sfs_workload_free(w);
}

static void test_wl_files_bonnie_report(void **state)
{
	struct sfs_workload *w = NULL;
	struct sfs_wl_result r;
	char *err = NULL;

	(void)state;
	assert_int_equal(
	    sfs_workload_new("bonnie,size=1M,files=16,seeks=8000", &w, &err),
	    0);
	sfs_wl_result_init(&r, 3);
	fake_phase(&r, "block write", 0, 2.0, 0.5);  /* 512 K/s, 25% */
	fake_phase(&r, "rewrite", 2, 4.0, 1.0);	     /* 256 K/s, 25% */
	fake_phase(&r, "block read", 6, 1.0, 0.1);   /* 1024 K/s, 10% */
	fake_phase(&r, "seeks", 7, 10.0, 0.3);	     /* 800.0 /s, 3% */
	fake_phase(&r, "seq create", 20, 0.25, 0.1); /* too fast: +++ */
	fake_phase(&r, "seq stat", 21, 2.0, 1.0);    /* 8192 /s, 50% */
	fake_phase(&r, "seq delete", 23, 4.0, 0.4);
	fake_phase(&r, "rand create", 27, 1.0, 0.5);
	fake_phase(&r, "rand stat", 28, 8.0, 0.8);
	fake_phase(&r, "rand delete", 36, 16.0, 1.6);
	char *txt = report_text(w, &r);
	assert_contains(txt, "Machine        Size K/sec %CP K/sec %CP K/sec "
			     "%CP K/sec %CP K/sec %CP  /sec %CP\n");
	assert_contains(txt, "simfs            1M             512  25   256"
			     "  25            1024  10 800.0   3\n");
	assert_contains(txt, "                 16 +++++ +++  8192  50  4096"
			     "  10 16384  50  2048  10  1024  10\n");
	assert_contains(txt, "simfs,1M,,,512,25,256,25,,,1024,10,800.0,3,16,"
			     "+++++,+++,8192,50,4096,10,16384,50,2048,10,1024,"
			     "10\n");
	g_free(txt);
	sfs_wl_result_free(&r);
	sfs_workload_free(w);
}

/* ---- postmark ---- */

static uint64_t report_number(const char *txt, const char *after)
{
	const char *p = strstr(txt, after);

	assert_non_null(p);
	while (p > txt && p[-1] != '\t')
		p--;
	return g_ascii_strtoull(p, NULL, 10);
}

/* The number right after `after` in txt. */
static uint64_t report_number_after(const char *txt, const char *after)
{
	const char *p = strstr(txt, after);

	assert_non_null(p);
	return g_ascii_strtoull(p + strlen(after), NULL, 10);
}

static void test_wl_files_postmark_totals(void **state)
{
	const char *spec = "postmark,files=500,transactions=500,min=500,"
			   "max=10K,subdirs=0,read=512,write=512,seed=42,"
			   "bias_read=5,bias_create=5";
	struct tally a, b, c;
	struct sfs_workload *wa, *wb, *wc;

	(void)state;
	wa = drive(spec, &a);
	wb = drive(spec, &b);
	wc = drive("postmark,files=500,transactions=500,seed=43", &c);
	/* deterministic for a seed, another seed another run */
	assert_true(a.hash == b.hash);
	assert_true(a.hash != c.hash);
	assert_int_equal(a.mismatches, 0);
	assert_int_equal(c.mismatches, 0);
	/* created - deleted = 0: the pool is gone */
	assert_int_equal(a.creates, a.by_type[SFS_WOP_UNLINK]);
	assert_int_equal(a.files_left, 0);
	assert_true(a.creates > 500);
	assert_int_equal(phase_label(&a.res, "create", "open"), 500);
	assert_int_equal(a.res.nphases, 3);
	assert_string_equal(a.res.phases[0].name, "create");
	assert_string_equal(a.res.phases[1].name, "transactions");
	assert_string_equal(a.res.phases[2].name, "delete");

	/* the report's counts are the ops that went out */
	char *txt = report_text(wa, &a.res);
	assert_int_equal(report_number(txt, " created ("), a.creates);
	assert_int_equal(report_number(txt, " deleted ("), a.creates);
	assert_int_equal(report_number(txt, " read ("), a.opens_rdonly);
	assert_int_equal(report_number(txt, " appended ("), a.opens_append);
	/* a transaction is a read or an append, and a create or a delete */
	assert_int_equal(a.opens_rdonly + a.opens_append, 500);
	assert_int_equal(a.creates - 500 +
			     (a.by_type[SFS_WOP_UNLINK] -
			      report_number_after(txt, "Deletion alone: ")),
			 500);
	char want[96];
	g_snprintf(want, sizeof(want), "\t%.2f megabytes written",
		   (double)a.bytes_written / 1048576.0);
	assert_contains(txt, want);
	g_snprintf(want, sizeof(want), "\t%.2f megabytes read",
		   (double)a.bytes_read / 1048576.0);
	assert_contains(txt, want);
	g_free(txt);

	/* unbuffered 512-byte blocks: every write is at most 512 bytes */
	struct tally u;
	struct sfs_workload *wu = drive(
	    "postmark,files=50,transactions=100,buffering=no,subdirs=3", &u);
	assert_int_equal(u.mismatches, 0);
	assert_int_equal(u.files_left, 0);
	assert_true(u.by_type[SFS_WOP_WRITE] * 512 >= u.bytes_written);
	assert_int_equal(u.by_type[SFS_WOP_MKDIR], 3);
	assert_int_equal(u.by_type[SFS_WOP_RMDIR], 3);

	/* bias_create=-1: no creates or deletes mixed in */
	struct tally n;
	struct sfs_workload *wn = drive(
	    "postmark,files=20,transactions=100,bias_create=-1,bias_read=10",
	    &n);
	assert_int_equal(n.creates, 20);
	assert_int_equal(n.opens_rdonly, 100);

	sfs_wl_result_free(&a.res);
	sfs_wl_result_free(&b.res);
	sfs_wl_result_free(&c.res);
	sfs_wl_result_free(&u.res);
	sfs_wl_result_free(&n.res);
	sfs_workload_free(wa);
	sfs_workload_free(wb);
	sfs_workload_free(wc);
	sfs_workload_free(wu);
	sfs_workload_free(wn);
}

static void test_wl_files_postmark_report(void **state)
{
	struct sfs_workload *w = NULL;
	struct sfs_wl_result r;
	char *err = NULL;

	(void)state;
	assert_int_equal(
	    sfs_workload_new("postmark,files=500,transactions=500", &w, &err),
	    0);
	sfs_wl_result_init(&r, 1);
	fake_phase(&r, "create", 0, 2.0, 0.1);
	fake_phase(&r, "transactions", 2, 4.0, 0.1);
	fake_phase(&r, "delete", 6, 1.0, 0.1);
	char *txt = report_text(w, &r);
	assert_contains(txt, "Time:\n\t7 seconds total\n\t4 seconds of "
			     "transactions (125 per second)\n");
	assert_contains(txt,
			"\t\tCreation alone: 500 files (250 per second)\n");
	assert_contains(txt, "\nFiles:\n\t");
	assert_contains(txt, "\nData:\n\t");
	g_free(txt);
	sfs_wl_result_free(&r);
	sfs_workload_free(w);
}

/* ---- compilebench ---- */

static void test_wl_files_compilebench_phases(void **state)
{
	static const char *const order[] = {
	    "native unpatched 1",
	    "native patched 1",
	    "native patched compiled 1",
	    "intial create 1",
	    "intial create 2",
	    "intial create 3",
	    "create 1",
	    "patch 1",
	    "compile 1",
	    "clean 1",
	    "read tree 1",
	    "read compiled tree 1",
	    "delete tree 1",
	    "stat tree 1",
	};
	struct tally t, t2;
	struct sfs_workload *w, *w2;

	(void)state;
	w = drive("compilebench,initial=3,create=1,patch=1,compile=1,clean=1,"
		  "read=1,read_compiled=1,delete=1,stat=1,seed=5,"
		  "tree_files=300,tree_dirs=20",
		  &t);
	w2 = drive("compilebench,seed=5,tree_files=300,tree_dirs=20", &t2);
	const struct sfs_wl_result *r = &t.res;

	assert_int_equal(t.mismatches, 0);
	assert_true(t.hash == t2.hash); /* the defaults are those counts */
	assert_int_equal(r->nphases, G_N_ELEMENTS(order));
	for (unsigned i = 0; i < G_N_ELEMENTS(order); i++)
		assert_string_equal(r->phases[i].name, order[i]);
	/* every tree is the same listing */
	uint64_t tree =
	    sfs_wl_result_phase(r, "intial create 1")->bytes_written;
	assert_true(tree > 300 * 256);
	assert_int_equal(sfs_wl_result_phase(r, "create 1")->bytes_written,
			 tree);
	assert_int_equal(
	    sfs_wl_result_phase(r, "native unpatched 1")->bytes_written, tree);
	/* 300 files, 20 directories each */
	assert_int_equal(phase_label(r, "intial create 2", "open"), 300);
	assert_int_equal(phase_label(r, "intial create 2", "mkdir"), 20);
	/* compile makes objects, clean removes as many */
	uint64_t objs = phase_label(r, "compile 1", "open");
	assert_true(objs > 100);
	assert_int_equal(phase_label(r, "clean 1", "unlink"), objs);
	assert_true(sfs_wl_result_phase(r, "compile 1")->bytes_written > 0);
	/* the patch reads, rewrites through a rename, adds, removes */
	assert_true(phase_label(r, "patch 1", "rename") > 0);
	assert_true(sfs_wl_result_phase(r, "patch 1")->bytes_read > 0);
	/* read compiled reads the sources and the objects */
	assert_true(sfs_wl_result_phase(r, "read compiled tree 1")->bytes_read >
		    sfs_wl_result_phase(r, "read tree 1")->bytes_read);
	/* delete empties a tree bottom up */
	assert_int_equal(phase_label(r, "delete tree 1", "rmdir"), 20);
	assert_int_equal(phase_label(r, "stat tree 1", "open"), 0);
	assert_true(phase_label(r, "stat tree 1", "stat") >= 290);

	char *txt = report_text(w, r);
	assert_contains(txt, "\nrun complete:\n");
	assert_contains(txt, "\nintial create total runs 3 avg ");
	assert_contains(txt, "\ndelete tree total runs 1 avg ");
	assert_contains(txt, " seconds (user 0.00s sys ");
	g_free(txt);
	sfs_wl_result_free(&t.res);
	sfs_wl_result_free(&t2.res);
	sfs_workload_free(w);
	sfs_workload_free(w2);

	/* a longer plan stays consistent with itself */
	w = drive("compilebench,initial=4,create=2,patch=5,compile=4,clean=2,"
		  "read=3,read_compiled=2,delete=2,stat=2,native=no,"
		  "tree_files=200,tree_dirs=30,seed=9",
		  &t);
	assert_int_equal(t.mismatches, 0);
	sfs_wl_result_free(&t.res);
	sfs_workload_free(w);
}

static void test_wl_files_compilebench_report(void **state)
{
	struct sfs_workload *w = NULL;
	struct sfs_wl_result r;
	char *err = NULL;

	(void)state;
	assert_int_equal(sfs_workload_new("compilebench,tree_files=100,"
					  "tree_dirs=10",
					  &w, &err),
			 0);
	sfs_wl_result_init(&r, 1);
	fake_phase(&r, "intial create 1", 0, 1.0, 0.5);
	fake_phase(&r, "intial create 2", 1, 1.0, 0.5);
	fake_phase(&r, "intial create 3", 2, 1.0, 0.5);
	fake_phase(&r, "stat tree 1", 3, 2.5, 0.25);
	char *txt = report_text(w, &r);
	assert_contains(txt, "intial create total runs 3 avg ");
	assert_contains(txt, " MB/s (user 0.00s sys 0.50s)\n");
	assert_contains(txt, "stat tree total runs 1 avg 2.50 seconds (user "
			     "0.00s sys 0.25s)\n");
	assert_contains(txt, "stat dir kernel-");
	assert_null(strstr(txt, "patch total runs"));
	g_free(txt);
	sfs_wl_result_free(&r);
	sfs_workload_free(w);
}

/* ---- refusals ---- */

static void test_wl_files_bad_input_refused(void **state)
{
	const char *bad[][2] = {
	    {"bonnie,chunk=3000", "power of two"},
	    {"bonnie,size=100K,chunk=64K", "whole number of chunks"},
	    {"bonnie,size=0,files=0", "no test"},
	    {"bonnie,seeks=2,seekers=3", "fewer than seekers"},
	    {"bonnie,seekers=0", "seekers"},
	    {"bonnie,chunk=256,direct", "512-byte sectors"},
	    {"bonnie,files=2000", "files=2000"},
	    {"bonnie,machine=a,b", "unknown parameter 'b'"},
	    {"fsmark,sync=7", "-S is 0 to 6"},
	    {"fsmark,threads=0", "threads=0"},
	    {"fsmark,threads=65", "threads=65"},
	    {"fsmark,per_subdir=5", "needs dirs"},
	    {"fsmark,rand_len=50", "rand_len"},
	    {"fsmark,files=lots", "expected a whole number"},
	    {"fsmark,io_size=0", "io_size"},
	    {"postmark,min=2000,max=1000", "min <= max"},
	    {"postmark,bias_read=11", "bias_read=11"},
	    {"postmark,bias_create=x", "bias_create=x"},
	    {"postmark,files=0", "files=0"},
	    {"postmark,read=0", "block sizes"},
	    {"compilebench,initial=0,create=0,native=no", "no tree"},
	    {"compilebench,native=no,compile=0,clean=0",
	     "read compiled tree run 1"},
	    {"compilebench,patch=5", "patch run 5"},
	    {"compilebench,tree_dirs=0", "tree_dirs"},
	    {"compilebench,tree_files=100,tree_dirs=101", "tree_dirs=101"},
	    {"compilebench,clean=2", "clean run 2"},
	};

	(void)state;
	for (unsigned i = 0; i < G_N_ELEMENTS(bad); i++) {
		struct sfs_workload *w = NULL;
		char *err = NULL;

		assert_int_equal(sfs_workload_new(bad[i][0], &w, &err),
				 -EINVAL);
		assert_null(w);
		assert_non_null(err);
		if (!strstr(err, bad[i][1]))
			print_error("%s: \"%s\" lacks \"%s\"\n", bad[i][0], err,
				    bad[i][1]);
		assert_non_null(strstr(err, bad[i][1]));
		assert_null(strchr(err, '\n'));
		g_free(err);
	}
}

/* The defaults make a workload, with the tool's own process count. */
static void test_wl_files_defaults_build(void **state)
{
	const struct {
		const char *spec;
		unsigned clients;
	} cases[] = {
	    {"bonnie", 3},	 {"fsmark", 1},		  {"postmark", 1},
	    {"compilebench", 1}, {"fsmark,threads=4", 4}, {"bonnie,size=0", 1},
	};

	(void)state;
	for (unsigned i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct sfs_workload *w = NULL;
		char *err = NULL;

		if (sfs_workload_new(cases[i].spec, &w, &err))
			print_error("%s: %s\n", cases[i].spec, err);
		assert_non_null(w);
		assert_int_equal(sfs_workload_clients(w), cases[i].clients);
		assert_non_null(sfs_workload_ops_of(w)->doc);
		assert_non_null(sfs_workload_ops_of(w)->report);
		sfs_workload_free(w);
	}
}

/* Every workload of this file: the op stream is the same twice. */
static void test_wl_files_deterministic(void **state)
{
	const char *specs[] = {
	    "bonnie,size=2M,files=1,seeks=300,seekers=4,seed=3",
	    "fsmark,threads=3,files=30,dirs=3,seed=4",
	    "postmark,files=100,transactions=300,subdirs=4,seed=7",
	    "compilebench,tree_files=150,tree_dirs=12,seed=2",
	};

	(void)state;
	for (unsigned i = 0; i < G_N_ELEMENTS(specs); i++) {
		struct tally a, b;
		struct sfs_workload *wa = drive(specs[i], &a);
		struct sfs_workload *wb = drive(specs[i], &b);

		assert_true(a.hash == b.hash);
		assert_int_equal(a.mismatches, 0);
		sfs_wl_result_free(&a.res);
		sfs_wl_result_free(&b.res);
		sfs_workload_free(wa);
		sfs_workload_free(wb);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_wl_files_fsmark_counts),
	    cmocka_unit_test(test_wl_files_fsmark_report),
	    cmocka_unit_test(test_wl_files_bonnie_counts),
	    cmocka_unit_test(test_wl_files_bonnie_report),
	    cmocka_unit_test(test_wl_files_postmark_totals),
	    cmocka_unit_test(test_wl_files_postmark_report),
	    cmocka_unit_test(test_wl_files_compilebench_phases),
	    cmocka_unit_test(test_wl_files_compilebench_report),
	    cmocka_unit_test(test_wl_files_bad_input_refused),
	    cmocka_unit_test(test_wl_files_defaults_build),
	    cmocka_unit_test(test_wl_files_deterministic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
