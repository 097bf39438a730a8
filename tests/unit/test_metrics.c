/*
 * test_metrics.c - every workload's `metrics` hook against its `report`.
 *
 * A workload's own headline figures (workload.h, ops->metrics) feed the
 * tables of `simfs bench`; they must be the numbers the benchmark's report
 * prints, not a second computation that drifts from it.  Each case builds
 * a workload, pulls its ops with a fake clock (pull(): round robin, a
 * per-op service time that differs by client and op type so rates are
 * uneven, barriers held until every live client reached one), which also
 * fabricates the struct sfs_wl_result; then it reads the CSV rows of
 * sfs_workload_write_metrics and the report's text and checks each
 * emitted figure against the printed one, to the printed precision.
 * Also: no workload emits a metric the runner already writes for the
 * same phase (the key phase+metric stays unique in results.csv).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "testsupport.h"
#include "workload.h"

#define US 1000ULL
#define MS 1000000ULL

/* The service time of one op: step, more for data and later clients. */
static sfs_ns_t svc(const struct sfs_wop *op, unsigned c, sfs_ns_t step)
{
	sfs_ns_t t = step + (sfs_ns_t)c * step / 3;

	if (op->type == SFS_WOP_READ || op->type == SFS_WOP_WRITE)
		t += op->len * (op->type == SFS_WOP_WRITE ? 20 : 7);
	if (op->type == SFS_WOP_FSYNC)
		t += 5 * step;
	return t;
}

/*
 * Pull every client of w to its end into *res (sfs_wl_result_free it):
 * each client has its own clock; the next op goes to the client whose
 * clock is earliest; a barrier releases when every live client is at one.
 */
static void pull(struct sfs_workload *w, sfs_ns_t step,
		 struct sfs_wl_result *res)
{
	unsigned n = sfs_workload_clients(w);
	bool *done = g_new0(bool, n), *waiting = g_new0(bool, n);
	sfs_ns_t *clk = g_new0(sfs_ns_t, n);
	long *ph = g_new(long, n); /* phase index: the array moves */
	unsigned live = n;

	sfs_wl_result_init(res, n);
	for (unsigned i = 0; i < n; i++)
		ph[i] = -1;
	while (live) {
		unsigned c = n, nwait = 0;

		for (unsigned i = 0; i < n; i++)
			if (!done[i] && !waiting[i] &&
			    (c == n || clk[i] < clk[c]))
				c = i;
		if (c < n) {
			struct sfs_wop op;

			if (sfs_test_next(w, c, clk[c], &op) == 0) {
				done[c] = true;
				live--;
				continue;
			}
			sfs_ns_t start = clk[c] + op.think_ns;
			sfs_ns_t end = start + svc(&op, c, step);
			if (op.phase)
				ph[c] =
				    sfs_wl_result_enter(res, op.phase, start) -
				    res->phases;
			if (ph[c] < 0)
				ph[c] = sfs_wl_result_enter(res, "run", start) -
					res->phases;
			uint64_t bytes =
			    op.type == SFS_WOP_READ || op.type == SFS_WOP_WRITE
				? op.len
				: 0;
			sfs_wl_result_op(res, &res->phases[ph[c]], c, &op, 0,
					 bytes, start, end);
			sfs_workload_done(w, c, &op, 0);
			clk[c] = end;
			res->elapsed_ns = MAX(res->elapsed_ns, end);
			if (op.type == SFS_WOP_BARRIER)
				waiting[c] = true;
		}
		for (unsigned i = 0; i < n; i++)
			nwait += waiting[i] && !done[i];
		if (live && nwait == live) {
			sfs_ns_t t = 0;
			for (unsigned i = 0; i < n; i++)
				if (!done[i])
					t = MAX(t, clk[i]);
			for (unsigned i = 0; i < n; i++) {
				waiting[i] = false;
				clk[i] = t;
			}
		}
	}
	g_free(done);
	g_free(waiting);
	g_free(clk);
	g_free(ph);
}

/* The workload's report and its metric rows, as text. */
struct out {
	struct sfs_workload *w;
	struct sfs_wl_result res;
	char *report;
	char *csv;
};

static void run(struct out *o, const char *spec, sfs_ns_t step)
{
	size_t len = 0;
	FILE *f;

	o->w = sfs_test_workload(spec);
	pull(o->w, step, &o->res);
	f = open_memstream(&o->report, &len);
	assert_non_null(f);
	sfs_workload_report(o->w, &o->res, f);
	fclose(f);
	f = open_memstream(&o->csv, &len);
	assert_non_null(f);
	sfs_workload_write_metrics(o->w, &o->res, f);
	fclose(f);
}

static void out_free(struct out *o)
{
	sfs_wl_result_free(&o->res);
	sfs_workload_free(o->w);
	free(o->report);
	free(o->csv);
}

/* How many rows have this phase and metric. */
static unsigned rows(const struct out *o, const char *phase, const char *metric)
{
	char *key = g_strdup_printf(",%s,%s,", phase, metric);
	unsigned n = 0;

	for (const char *p = strstr(o->csv, key); p; p = strstr(p + 1, key))
		n++;
	g_free(key);
	return n;
}

/* The value of the one row phase,metric (fails the test if none). */
static double metric(const struct out *o, const char *phase,
		     const char *metric_name)
{
	char *key = g_strdup_printf(",%s,%s,", phase, metric_name);
	const char *p = strstr(o->csv, key);

	if (!p)
		print_error("no row %s in:\n%s\n", key, o->csv);
	assert_non_null(p);
	assert_int_equal(rows(o, phase, metric_name), 1);
	double v = strtod(p + strlen(key), NULL);
	g_free(key);
	return v;
}

/* The number that follows the first `after` in text, past blanks and
 * '='. */
static double printed(const char *text, const char *after)
{
	const char *p = strstr(text, after);

	if (!p)
		print_error("report lacks '%s':\n%s\n", after, text);
	assert_non_null(p);
	p += strlen(after);
	while (*p == ' ' || *p == '\t' || *p == '=')
		p++;
	char *end;
	double v = strtod(p, &end);
	assert_true(end > p);
	return v;
}

/* |emitted - shown| within tol: the precision the report prints. */
static void assert_near(double emitted, double shown, double tol)
{
	if (fabs(emitted - shown) > tol)
		print_error("emitted %.9g, report shows %.9g (tol %g)\n",
			    emitted, shown, tol);
	assert_true(fabs(emitted - shown) <= tol);
}

static void assert_rel(double emitted, double shown, double rel)
{
	assert_near(emitted, shown, fabs(shown) * rel + 1e-12);
}

/* No own metric of the workload repeats a (phase, metric) key. */
static void assert_keys_unique(const struct out *o)
{
	GHashTable *seen =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	gchar **lines = g_strsplit(o->csv, "\n", -1);

	for (unsigned i = 1; lines[i]; i++) {
		gchar **f = g_strsplit(lines[i], ",", -1);
		if (g_strv_length(f) == 5) {
			char *key = g_strdup_printf("%s,%s", f[1], f[2]);
			if (g_hash_table_contains(seen, key))
				print_error("duplicate row %s\n", key);
			assert_false(g_hash_table_contains(seen, key));
			g_hash_table_add(seen, key);
		}
		g_strfreev(f);
	}
	g_strfreev(lines);
	g_hash_table_destroy(seen);
}

/* ---- one case per workload ---- */

static void test_metrics_dbench_throughput(void **state)
{
	static const char load[] =
	    "NTCreateX \"\\clients\\client1\\f.txt\" 0x40 0x2 101 "
	    "NT_STATUS_OK\n"
	    "WriteX 101 0 65536 65536 NT_STATUS_OK\n"
	    "ReadX 101 0 32768 32768 NT_STATUS_OK\n"
	    "Close 101 NT_STATUS_OK\n"
	    "Unlink \"\\clients\\client1\\f.txt\" 0x0 NT_STATUS_OK\n";
	char *lf = sfs_test_tmp_file("load.txt", load);
	char *spec = g_strconcat(
	    "dbench,clients=3,time=2,warmup=0.5,loadfile=", lf, NULL);
	struct out o;

	(void)state;
	run(&o, spec, 1 * MS);
	double v = metric(&o, "run", "throughput_mb_s");
	assert_true(v > 0);
	assert_rel(v, printed(o.report, "Throughput"), 1e-5); /* %g */
	assert_keys_unique(&o);
	out_free(&o);
	g_free(spec);
	sfs_test_rm_tmp_file(lf);
}

static void test_metrics_dd_rates(void **state)
{
	struct out o;

	(void)state;
	run(&o, "dd,size=3M,bs=64K,fsync,read", 10 * US);
	/* "..., S s, R MB/s": the rate is bytes / S / 10^6 */
	const char *w = strstr(o.report, "copied,");
	assert_non_null(w);
	double ws = printed(w, "copied,");
	assert_rel(metric(&o, "write", "rate_mb_s"), 3.0 * 1048576 / ws / 1e6,
		   1e-5);
	assert_near(metric(&o, "write", "rate_mb_s"), printed(w, " s,"),
		    0.51); /* "%.0f MB/s" */
	assert_non_null(strstr(w, " MB/s"));
	const char *r = strstr(w + 1, "copied,");
	assert_non_null(r);
	assert_near(metric(&o, "read", "rate_mb_s"), printed(r, " s,"), 0.51);
	assert_keys_unique(&o);
	out_free(&o);
}

static void test_metrics_iozone_children_and_parent(void **state)
{
	static const char *const tests[][2] = {
	    {"write", "initial writers"},
	    {"rewrite", "rewriters"},
	    {"read", "readers"},
	    {"reread", "re-readers"},
	    {"randread", "random readers"},
	    {"randwrite", "random writers"},
	};
	struct out o;

	(void)state;
	run(&o, "iozone,threads=3,size=2M,record=64K,direct", 20 * US);
	for (unsigned i = 0; i < G_N_ELEMENTS(tests); i++) {
		char *ch = g_strdup_printf("Children see throughput for  3 %s",
					   tests[i][1]);
		char *pa = g_strdup_printf("Parent sees throughput for  3 %s",
					   tests[i][1]);
		double kb = metric(&o, tests[i][0], "children_kb_s");

		assert_true(kb > 0);
		assert_near(kb, printed(o.report, ch), 0.0051);
		assert_near(metric(&o, tests[i][0], "children_mb_s") * 1024.0,
			    printed(o.report, ch), 0.0051);
		assert_near(metric(&o, tests[i][0], "parent_kb_s"),
			    printed(o.report, pa), 0.0051);
		g_free(ch);
		g_free(pa);
	}
	assert_int_equal(rows(&o, "cleanup", "children_kb_s"), 0);
	assert_keys_unique(&o);
	out_free(&o);
}

static void test_metrics_compilebench_summary(void **state)
{
	static const char *const rate_kinds[] = {
	    "intial create",
	    "create",
	    "patch",
	    "compile",
	    "clean",
	    "read tree",
	    "read compiled tree",
	};
	static const char *const time_kinds[] = {"delete tree", "stat tree"};
	struct out o;

	(void)state;
	run(&o,
	    "compilebench,initial=2,create=2,tree_files=60,tree_dirs=8,"
	    "native=yes",
	    50 * US);
	const char *sum = strstr(o.report, "run complete:");
	assert_non_null(sum);
	for (unsigned i = 0; i < G_N_ELEMENTS(rate_kinds); i++) {
		char *line = g_strdup_printf("\n%s total runs", rate_kinds[i]);
		const char *l = strstr(sum, line);
		assert_non_null(l);
		double v = metric(&o, rate_kinds[i], "avg_mb_s");
		assert_true(v > 0);
		assert_near(v, printed(l, "avg"), 0.0051);
		g_free(line);
	}
	for (unsigned i = 0; i < G_N_ELEMENTS(time_kinds); i++) {
		char *line = g_strdup_printf("\n%s total runs", time_kinds[i]);
		const char *l = strstr(sum, line);
		assert_non_null(l);
		assert_near(metric(&o, time_kinds[i], "avg_seconds"),
			    printed(l, "avg"), 0.0051);
		assert_int_equal(rows(&o, time_kinds[i], "avg_mb_s"), 0);
		g_free(line);
	}
	/* two create runs: one row, the summary's average */
	assert_int_equal(rows(&o, "create", "avg_mb_s"), 1);
	assert_keys_unique(&o);
	out_free(&o);
}

static void test_metrics_fsmark_files_per_second(void **state)
{
	struct out o;

	(void)state;
	run(&o, "fsmark,threads=2,files=40,size=8K,loops=2", 30 * US);
	const char *t = strstr(o.report, "App Overhead\n");
	assert_non_null(t);
	t += strlen("App Overhead\n");
	for (unsigned l = 1; l <= 2; l++) {
		unsigned use;
		unsigned long long count, size, app;
		double fps;
		char name[32];

		assert_int_equal(sscanf(t, "%u %llu %llu %lf %llu", &use,
					&count, &size, &fps, &app),
				 5);
		g_snprintf(name, sizeof(name), "iteration %u", l);
		double v = metric(&o, name, "files_s");
		assert_true(v > 0);
		assert_near(v, fps, 0.051);
		t = strchr(t, '\n');
		assert_non_null(t);
		t++;
	}
	assert_keys_unique(&o);
	out_free(&o);
}

static void test_metrics_postmark_transactions(void **state)
{
	struct out o;

	(void)state;
	run(&o, "postmark,files=50,transactions=300,hires", 200 * US);
	double v = metric(&o, "transactions", "transactions_s");
	assert_true(v > 0);
	assert_near(v, printed(o.report, "seconds of transactions ("), 0.0051);
	out_free(&o);
	/* without hires PostMark prints whole numbers, and so do we */
	run(&o, "postmark,files=50,transactions=3000", 1 * MS);
	v = metric(&o, "transactions", "transactions_s");
	assert_true(v > 0);
	assert_true(v == floor(v));
	assert_near(v, printed(o.report, "seconds of transactions ("), 0);
	assert_keys_unique(&o);
	out_free(&o);
}

static void test_metrics_bonnie_csv_line(void **state)
{
	/* the CSV line: machine,size,,,K/s,%,K/s,%,,,K/s,%,seeks,%,
	 * files,create,%,stat,%,delete,%,create,%,stat,%,delete,% */
	static const char *const io[] = {NULL, "block write", "rewrite",
					 NULL, "block read",  "seeks"};
	static const char *const cr[] = {"seq create", "seq stat",
					 "seq delete", "rand create",
					 "rand stat",  "rand delete"};
	struct out o;

	(void)state;
	run(&o, "bonnie,size=4M,chunk=8K,seeks=400,files=1,machine=m", 2 * MS);
	const char *line = strstr(o.report, "\nm,4M,");
	assert_non_null(line);
	gchar *one = g_strndup(line + 1, strcspn(line + 1, "\n"));
	gchar **f = g_strsplit(one, ",", -1);
	assert_int_equal(g_strv_length(f), 2 + 12 + 1 + 12);
	for (unsigned i = 0; i < 6; i++) {
		if (!io[i])
			continue;
		const char *m = i == 5 ? "per_s" : "k_s";
		double shown = strtod(f[2 + 2 * i], NULL);
		assert_true(shown > 0); /* not "+++++": long enough */
		double v = metric(&o, io[i], m);
		assert_near(v, shown, i == 5 ? 0.051 : 1.0);
		assert_true(i == 5 || v >= shown); /* K/sec truncated */
	}
	for (unsigned i = 0; i < 6; i++) {
		double shown = strtod(f[15 + 2 * i], NULL);
		assert_true(shown > 0);
		double v = metric(&o, cr[i], "per_s");
		assert_near(v, shown, 1.0);
		assert_true(v >= shown);
	}
	g_strfreev(f);
	g_free(one);
	assert_keys_unique(&o);
	out_free(&o);
	/* tests under 0.5 s print "+++++": no row */
	run(&o, "bonnie,size=1M,files=1", 1 * US);
	assert_non_null(strstr(o.report, "+++++"));
	assert_int_equal(rows(&o, "seq stat", "per_s"), 0);
	out_free(&o);
}

/* The Rate and Avg Latency of the report's "simfs ..." rows, in order. */
static unsigned tb_rows(const char *report, double *rate, double *avg,
			unsigned max)
{
	gchar **lines = g_strsplit(report, "\n", -1);
	unsigned n = 0;

	for (unsigned i = 0; lines[i] && n < max; i++) {
		unsigned long long size, blk;
		unsigned thr;
		double cpu;

		if (sscanf(lines[i], "simfs %llu %llu %u %lf %lf%% %lf", &size,
			   &blk, &thr, &rate[n], &cpu, &avg[n]) == 6)
			n++;
	}
	g_strfreev(lines);
	return n;
}

static void test_metrics_tiobench_rate_and_latency(void **state)
{
	double rate[8], avg[8];
	struct out o;
	unsigned k = 0;

	(void)state;
	run(&o, "tiobench,threads=2,size=2M,block=16K,random=40", 50 * US);
	assert_int_equal(tb_rows(o.report, rate, avg, 8), 4);
	/* the rate_mb_s rows come in the report's table order */
	gchar **lines = g_strsplit(o.csv, "\n", -1);
	for (unsigned i = 0; lines[i]; i++) {
		if (!strstr(lines[i], ",rate_mb_s,"))
			continue;
		gchar **f = g_strsplit(lines[i], ",", -1);
		assert_true(k < 4);
		double v = strtod(f[3], NULL);
		assert_true(v > 0);
		assert_near(v, rate[k], 0.0051);
		assert_near(metric(&o, f[1], "avg_latency_ms"), avg[k],
			    0.00051);
		k++;
		g_strfreev(f);
	}
	g_strfreev(lines);
	assert_int_equal(k, 4);
	assert_keys_unique(&o);
	out_free(&o);
}

/* "real\tMmS.mmms" as seconds. */
static double bash_time(const char *text, const char *after)
{
	const char *p = strstr(text, after);
	unsigned m;
	double s;

	assert_non_null(p);
	p = strstr(p, "real\t");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "real\t%um%lfs", &m, &s), 2);
	return m * 60.0 + s;
}

static void test_metrics_untar_times(void **state)
{
	struct out o;

	(void)state;
	run(&o, "untar,files=300,dirs=20,mean_size=6000,sync", 100 * US);
	double t = metric(&o, "untar", "real_s");
	assert_true(t > 0);
	assert_near(t, bash_time(o.report, "$ time tar xf"), 0.0005);
	assert_near(metric(&o, "sync", "real_s"),
		    bash_time(o.report, "$ time sync"), 0.0005);
	assert_near(metric(&o, "untar+sync", "real_s"),
		    bash_time(o.report, "tar xf; sync:"), 0.0005);
	const char *sys = strstr(o.report, "\nsys\t");
	assert_non_null(sys);
	unsigned m;
	double s;
	assert_int_equal(sscanf(sys, "\nsys\t%um%lfs", &m, &s), 2);
	assert_near(metric(&o, "untar", "sys_s"), m * 60.0 + s, 0.0005);
	assert_keys_unique(&o);
	out_free(&o);
}

static void test_metrics_trace_counts(void **state)
{
	static const char trace[] =
	    "# simfs-trace 1\n"
	    "1000 10 mkdir path=\"d\" mode=0755 rc=0 dur=500\n"
	    "5000 10 open path=\"d/f\" flags=O_WRONLY|O_CREAT mode=0644 fd=3 "
	    "rc=0 dur=800\n"
	    "9000 10 write fd=3 off=0 len=100 done=100 rc=0 dur=900\n"
	    "20000 11 stat path=\"d/f\" rc=0 dur=100\n"
	    "3001000 10 close fd=3 rc=0 dur=100\n";
	char *tf = sfs_test_tmp_file("t.trace", trace);
	char *spec = g_strconcat("trace,file=", tf, NULL);
	struct out o;
	unsigned n, clients, recorded;
	double rec_s, rep_s;

	(void)state;
	run(&o, spec, 10 * US);
	const char *p = strstr(o.report, ": ");
	assert_non_null(p);
	assert_int_equal(sscanf(p,
				": %u operations replayed by %u clients (%u "
				"recorded; first op to last: recorded %lf s, "
				"replayed %lf s)",
				&n, &clients, &recorded, &rec_s, &rep_s),
			 5);
	assert_int_equal(n, 5);
	assert_near(metric(&o, "run", "replayed_ops"), n, 0);
	assert_near(metric(&o, "run", "recorded_s"), rec_s, 0.0005);
	assert_near(metric(&o, "run", "replayed_s"), rep_s, 0.0005);
	assert_near(metric(&o, "run", "differed"), 0, 0);
	assert_non_null(strstr(o.report, "every result as recorded"));
	out_free(&o);
	g_free(spec);
	sfs_test_rm_tmp_file(tf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_metrics_dbench_throughput),
	    cmocka_unit_test(test_metrics_dd_rates),
	    cmocka_unit_test(test_metrics_iozone_children_and_parent),
	    cmocka_unit_test(test_metrics_compilebench_summary),
	    cmocka_unit_test(test_metrics_fsmark_files_per_second),
	    cmocka_unit_test(test_metrics_postmark_transactions),
	    cmocka_unit_test(test_metrics_bonnie_csv_line),
	    cmocka_unit_test(test_metrics_tiobench_rate_and_latency),
	    cmocka_unit_test(test_metrics_untar_times),
	    cmocka_unit_test(test_metrics_trace_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
