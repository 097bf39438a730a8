/*
 * test_render.c - the tables, plots and report of `simfs bench` on their
 * own: a hand-built experiment and a hand-written results.csv in a temp
 * dir give exactly the expected markdown (rows and columns in file order,
 * means over repetitions, the kernel column and its simfs/kernel ratio,
 * 3 significant digits), the expected gnuplot data, an SVG and a PNG per
 * plotted table, and a report.html with the tables, the SVGs inline and
 * each cell's stats; the same input twice gives the same bytes.  A short
 * CSV line, a bad number and a missing gnuplot give clear errors.
 *
 * bench_render.c is part of the simfs program, not of libsimfs, so it is
 * compiled into this test directly.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "bench_render.c"

/* The experiment: two systems, dbench swept over clients, two tables. */
struct fixture {
	char *dir;
	struct sfs_xp_system sys[2];
	struct sfs_xp_workload wl[2];
	struct sfs_xp_table tab[2];
	struct sfs_xp_cell cells[2];
	char *sweep[4];
	char *argv[5];
	struct sfs_experiment x;
};

static const char csv_good[] =
    "experiment,table,workload,phase,system,variant,metric,value,unit\n"
    "xp,tput,dbench,setup,ext2,\"clients=1,r=1\",mb_s,999,MB/s\n"
    "xp,tput,dbench,run,ext2,\"clients=1,r=1\",mb_s,10,MB/s\n"
    "xp,tput,dbench,run,ext2,\"clients=1,r=2\",mb_s,12,MB/s\n"
    "xp,tput,dbench,run,ext2,\"clients=2,r=1\",mb_s,20,MB/s\n"
    "xp,tput,dbench,run,ext2,\"clients=2,r=2\",mb_s,21,MB/s\n"
    "xp,tput,dbench,run,ext2,\"clients=4,r=1\",mb_s,30,MB/s\n"
    "xp,tput,dbench,run,ext2,\"clients=4,r=2\",mb_s,30,MB/s\n"
    "xp,tput,dbench,run,ext3,\"clients=1,r=1\",mb_s,5,MB/s\n"
    "xp,tput,dbench,run,ext3,\"clients=1,r=2\",mb_s,5,MB/s\n"
    "xp,tput,dbench,run,ext3,\"clients=2,r=1\",mb_s,8,MB/s\n"
    "xp,tput,dbench,run,ext3,\"clients=2,r=2\",mb_s,9,MB/s\n"
    "xp,tput,dbench,run,ext3,\"clients=4,r=1\",mb_s,1000,MB/s\n"
    "xp,tput,dbench,run,ext3,\"clients=4,r=2\",mb_s,1002,MB/s\n"
    "xp,tput,dbench,run,kernel:ext3,clients=1,mb_s,4,MB/s\n"
    "xp,tput,dbench,run,kernel:ext3,clients=2,mb_s,10,MB/s\n"
    "xp,tput,dbench,run,ext2,\"clients=1,r=1\",ops_s,100,ops/s\n"
    "xp,tput,dbench,run,ext3,\"clients=1,r=1\",ops_s,0.03267,ops/s\n"
    "xp,tput,dbench,run,ext3,\"clients=2,r=1\",ops_s,0.9996,ops/s\n"
    "xp,,other,run,ext2,,mb_s,77,MB/s\n";

static const char md_tput[] =
    "## Throughput\n"
    "\n"
    "mb_s (MB/s) of workload dbench (`dbench,time=10`), phase run; rows: "
    "clients, columns: system; each value is the mean of 2 repetitions.\n"
    "Modelled hardware: device hdd-2009, CPU core2-2009.\n"
    "\n"
    "| clients | ext2 (MB/s) | ext3 (MB/s) | kernel:ext3 (MB/s) | "
    "simfs/kernel |\n"
    "|:---|---:|---:|---:|---:|\n"
    "| 1 | 11.0 | 5.00 | 4.00 | 1.25 |\n"
    "| 2 | 20.5 | 8.50 | 10.0 | 0.850 |\n"
    "| 4 | 30.0 | 1000 | - | - |\n";

static const char md_ops[] =
    "## ops\n"
    "\n"
    "ops_s (ops/s) of workload dbench (`dbench,time=10`), phase run; rows: "
    "system, columns: clients; each value is the mean of 2 repetitions.\n"
    "Modelled hardware: device hdd-2009, CPU core2-2009.\n"
    "\n"
    "| system | clients=1 (ops/s) | clients=2 (ops/s) | clients=4 (ops/s) "
    "|\n"
    "|:---|---:|---:|---:|\n"
    "| ext2 | 100 | - | - |\n"
    "| ext3 | 0.0327 | 1.00 | - |\n";

static const char dat_tput[] = "# clients\text2\text3\tkernel:ext3\n"
			       "1\t11\t5\t4\n"
			       "2\t20.5\t8.5\t10\n"
			       "4\t30\t1001\t-\n";

static const char stats_json[] =
    "{\"simfs_stats_version\": 1,\n"
    " \"ops\": {\"total\": 1402, \"bytes_written\": 5120000},\n"
    " \"device\": {\"model\": \"hdd-2009\", \"submitted\": {\"write\": "
    "{\"requests\": 419, \"bytes\": 9494528}, \"by_category\": {\"data\": "
    "{\"write_bytes\": 5324800}, \"journal\": {\"write_bytes\": "
    "4087808}}}},\n"
    " \"cache\": {\"hits\": 7413, \"misses\": 31, \"died_dirty_bytes\": "
    "409600},\n"
    " \"journal\": {\"mode\": \"ordered\", \"commits\": {\"interval\": 0, "
    "\"fsync\": 100, \"unmount\": 1}}}\n";

static void write_file(const char *dir, const char *name, const char *text)
{
	char *path = g_build_filename(dir, name, NULL);

	assert_true(g_file_set_contents(path, text, -1, NULL));
	g_free(path);
}

static char *read_file(const char *dir, const char *name)
{
	char *path = g_build_filename(dir, name, NULL), *text = NULL;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		print_error("cannot read %s\n", path);
	assert_non_null(text);
	g_free(path);
	return text;
}

static unsigned count(const char *text, const char *what)
{
	unsigned n = 0;

	for (const char *p = text; (p = strstr(p, what)); p++)
		n++;
	return n;
}

static void rm_rf(const char *path)
{
	GDir *d = g_file_test(path, G_FILE_TEST_IS_DIR)
		      ? g_dir_open(path, 0, NULL)
		      : NULL;
	const char *name;

	while (d && (name = g_dir_read_name(d))) {
		char *sub = g_build_filename(path, name, NULL);

		rm_rf(sub);
		g_free(sub);
	}
	if (d)
		g_dir_close(d);
	g_remove(path);
}

static void rm_sub(const char *dir, const char *name)
{
	char *path = g_build_filename(dir, name, NULL);

	rm_rf(path);
	g_free(path);
}

static int setup(void **state)
{
	struct fixture *f = g_new0(struct fixture, 1);
	char *cell;

	f->dir = g_dir_make_tmp("simfs-render.XXXXXX", NULL);
	assert_non_null(f->dir);
	f->sys[0] = (struct sfs_xp_system){
	    .name = "ext2",
	    .options = "device=hdd-2009,cpu=core2-2009,preset=ext2"};
	f->sys[1] = (struct sfs_xp_system){
	    .name = "ext3",
	    .options = "device=hdd-2009,cpu=core2-2009,preset=ext3",
	    .journal_size = "32M"};
	f->sweep[0] = "1", f->sweep[1] = "2", f->sweep[2] = "4";
	f->wl[0] = (struct sfs_xp_workload){.name = "dbench",
					    .spec = "dbench,time=10",
					    .sweep_key = "clients",
					    .sweep_vals = f->sweep};
	f->wl[1] = (struct sfs_xp_workload){.name = "other", .spec = "dd"};
	f->tab[0] = (struct sfs_xp_table){.name = "tput",
					  .workload = "dbench",
					  .phase = "run",
					  .metric = "mb_s",
					  .rows = "clients",
					  .columns = "system",
					  .plot = "lines",
					  .title = "Throughput"};
	f->tab[1] = (struct sfs_xp_table){.name = "ops",
					  .workload = "dbench",
					  .metric = "ops_s",
					  .rows = "system",
					  .columns = "clients",
					  .plot = "bars"};
	f->argv[0] = "-q", f->argv[1] = "-w", f->argv[2] = "dbench,clients=1";
	f->cells[0] = (struct sfs_xp_cell){.index = 0,
					   .id = "ext2.dbench.clients=1.r0",
					   .sys = &f->sys[0],
					   .wl = &f->wl[0],
					   .sweep_val = "1",
					   .seed = 1,
					   .variant = "clients=1,r=1",
					   .argv = f->argv};
	f->cells[1] = (struct sfs_xp_cell){.index = 1,
					   .id = "ext3.dbench.clients=1.r0",
					   .sys = &f->sys[1],
					   .wl = &f->wl[0],
					   .sweep_val = "1",
					   .seed = 1,
					   .variant = "clients=1,r=1",
					   .argv = f->argv};
	f->x = (struct sfs_experiment){.name = "xp",
				       .title = "Render <test> & co",
				       .repeat = 2,
				       .seed = 1,
				       .nsystems = 2,
				       .nworkloads = 2,
				       .ntables = 2,
				       .ncells = 2,
				       .systems = f->sys,
				       .workloads = f->wl,
				       .tables = f->tab,
				       .cells = f->cells};
	write_file(f->dir, "results.csv", csv_good);
	cell = g_build_filename(f->dir, "cells", f->cells[1].id, NULL);
	assert_int_equal(g_mkdir_with_parents(cell, 0755), 0);
	write_file(cell, "stats.json", stats_json);
	g_free(cell);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	rm_rf(f->dir);
	g_free(f->dir);
	g_free(f);
	return 0;
}

static int render(struct fixture *f, bool html, FILE *out, char **err)
{
	int rc = sfs_bench_render(&f->x, f->dir, html, out, err);

	if (rc)
		print_error("render: %s\n", *err ? *err : "?");
	return rc;
}

static void test_render_fmt3(void **state)
{
	const double v[] = {1787,     0.03267, 0.9996, 999.7, -2.345,
			    12345678, 0,       1,      20.5};
	const char *want[] = {"1790",	  "0.0327", "1.00", "1000", "-2.35",
			      "12300000", "0",	    "1.00", "20.5"};
	char buf[G_ASCII_DTOSTR_BUF_SIZE];

	(void)state;
	for (unsigned i = 0; i < G_N_ELEMENTS(v); i++)
		assert_string_equal(rd_fmt3(buf, v[i]), want[i]);
}

static void test_render_markdown_exact(void **state)
{
	struct fixture *f = *state;
	char *err = NULL, *md, *printed = NULL, *both;
	size_t len = 0;
	FILE *out = open_memstream(&printed, &len);

	assert_int_equal(render(f, false, out, &err), 0);
	fclose(out);
	md = read_file(f->dir, "tables/tput.md");
	assert_string_equal(md, md_tput);
	g_free(md);
	md = read_file(f->dir, "tables/ops.md");
	assert_string_equal(md, md_ops);
	g_free(md);
	both = g_strconcat(md_tput, "\n", md_ops, NULL);
	assert_string_equal(printed, both);
	g_free(both);
	free(printed);
	md = g_build_filename(f->dir, "report.html", NULL);
	assert_false(g_file_test(md, G_FILE_TEST_EXISTS));
	g_free(md);
}

static void test_render_plots(void **state)
{
	struct fixture *f = *state;
	char *err = NULL, *text;
	const char *files[] = {"plots/tput.svg", "plots/tput.png",
			       "plots/ops.svg", "plots/ops.png"};

	assert_int_equal(render(f, false, NULL, &err), 0);
	text = read_file(f->dir, "plots/tput.dat");
	assert_string_equal(text, dat_tput);
	g_free(text);
	text = read_file(f->dir, "plots/tput.gp");
	assert_non_null(strstr(text, "set logscale x 2\n"));
	assert_non_null(strstr(text, "set xtics (1, 2, 4)\n"));
	assert_non_null(strstr(text, "title \"kernel:ext3\""));
	assert_null(strstr(text, "simfs/kernel")); /* ratios are not drawn */
	g_free(text);
	text = read_file(f->dir, "plots/ops.gp");
	assert_non_null(strstr(text, "set style histogram clustered"));
	assert_non_null(strstr(text, "using 2:xtic(1)"));
	g_free(text);
	for (unsigned i = 0; i < G_N_ELEMENTS(files); i++) {
		char *p = g_build_filename(f->dir, files[i], NULL);
		GStatBuf st;

		assert_int_equal(g_stat(p, &st), 0);
		assert_true(st.st_size > 1000);
		g_free(p);
	}
	text = read_file(f->dir, "plots/tput.svg");
	assert_non_null(strstr(text, "<svg"));
	assert_null(strstr(text, "2026")); /* no dates */
	g_free(text);
}

static void test_render_report(void **state)
{
	struct fixture *f = *state;
	char *err = NULL, *html;

	assert_int_equal(render(f, true, NULL, &err), 0);
	html = read_file(f->dir, "report.html");
	assert_true(g_str_has_prefix(html, "<!DOCTYPE html>"));
	assert_non_null(strstr(html, "<h1>Render &lt;test&gt; &amp; co</h1>"));
	assert_non_null(strstr(html, "<table class=\"results\">"));
	assert_non_null(strstr(html, "<th>simfs/kernel</th>"));
	assert_non_null(
	    strstr(html, "<tr><th>2</th><td>20.5</td><td>8.50</td><td>10.0"
			 "</td><td>0.850</td></tr>"));
	assert_non_null(strstr(html, "<svg"));
	assert_null(strstr(html, "<?xml"));
	/* gnuplot's ids made unique per plot, and their references too */
	assert_int_equal(count(html, "id=\"plot0-gnuplot_canvas\""), 1);
	assert_int_equal(count(html, "id=\"plot1-gnuplot_canvas\""), 1);
	assert_int_equal(count(html, "id=\"gnuplot_canvas\""), 0);
	assert_non_null(strstr(html, "xlink:href='#plot0-gpPt"));
	assert_non_null(strstr(html, "of workload dbench (<code>dbench,time=10"
				     "</code>), phase run;"));
	/* each cell: its configuration, its stats (or why there are none) */
	assert_non_null(strstr(html, "<summary>ext3.dbench.clients=1.r0"));
	assert_non_null(strstr(html, "<tr><th>journal size</th><td>32M"));
	assert_non_null(strstr(html, "<tr><th>command</th><td>simfs run -q -w "
				     "dbench,clients=1</td></tr>"));
	assert_non_null(
	    strstr(html, "<tr><th>journal commits: fsync</th><td>100</td>"));
	assert_non_null(strstr(html, "<tr><th>device bytes written: "
				     "journal</th><td>4087808</td>"));
	assert_non_null(
	    strstr(html, "<tr><th>died-dirty bytes</th><td>409600</td>"));
	assert_non_null(strstr(html, "<tr><th>cache misses</th><td>31</td>"));
	assert_non_null(strstr(html, "No stats.json"));
	/* the cells at a glance: commits by reason, MB to the journal */
	assert_non_null(strstr(html, "<td class=\"text\">fsync 100, unmount "
				     "1</td><td>9.49</td><td>4.09</td><td>"
				     "0.410</td><td>31</td>"));
	/* self-contained */
	assert_null(strstr(html, "<script"));
	assert_null(strstr(html, "<link"));
	assert_null(strstr(html, "href=\"http"));
	assert_null(strstr(html, "src=\"http"));
	g_free(html);
}

static void test_render_deterministic(void **state)
{
	struct fixture *f = *state;
	const char *files[] = {"report.html", "tables/tput.md",
			       "plots/tput.svg", "plots/tput.png",
			       "plots/ops.dat"};
	char *first[G_N_ELEMENTS(files)];
	char *err = NULL;

	assert_int_equal(render(f, true, NULL, &err), 0);
	for (unsigned i = 0; i < G_N_ELEMENTS(files); i++)
		first[i] = read_file(f->dir, files[i]);
	rm_sub(f->dir, "plots");
	assert_int_equal(render(f, true, NULL, &err), 0);
	for (unsigned i = 0; i < G_N_ELEMENTS(files); i++) {
		char *again = read_file(f->dir, files[i]);

		assert_string_equal(again, first[i]);
		g_free(again);
		g_free(first[i]);
	}
}

static void expect_error(struct fixture *f, const char *csv, int want_rc,
			 const char *want)
{
	char *err = NULL;
	int rc;

	write_file(f->dir, "results.csv", csv);
	rc = sfs_bench_render(&f->x, f->dir, true, NULL, &err);
	assert_int_equal(rc, want_rc);
	assert_non_null(err);
	if (!strstr(err, want))
		print_error("error '%s' lacks '%s'\n", err, want);
	assert_non_null(strstr(err, want));
	g_free(err);
}

static void test_render_bad_csv(void **state)
{
	struct fixture *f = *state;

	expect_error(f,
		     "experiment,table,workload,phase,system,variant,metric,"
		     "value,unit\n"
		     "xp,tput,dbench,run,ext2,clients=1,mb_s,1,MB/s\n"
		     "xp,tput,dbench,run,ext2\n",
		     -EINVAL, "results.csv:3: 5 fields, expected 9");
	expect_error(f, "xp,tput,dbench,run,ext2,clients=1,mb_s,fast,MB/s\n",
		     -EINVAL, "results.csv:1: bad value 'fast' for mb_s");
	expect_error(f, "xp,tput,dbench,run,ext2,\"clients=1,mb_s,1,MB/s\n",
		     -EINVAL, "results.csv:1: unterminated quote");
}

static void test_render_missing_csv(void **state)
{
	struct fixture *f = *state;
	char *path = g_build_filename(f->dir, "results.csv", NULL);
	char *err = NULL;

	g_remove(path);
	assert_int_equal(sfs_bench_render(&f->x, f->dir, false, NULL, &err),
			 -ENOENT);
	assert_non_null(strstr(err, path));
	g_free(err);
	g_free(path);
}

static void test_render_bad_axis(void **state)
{
	struct fixture *f = *state;
	char *err = NULL;

	f->tab[1].rows = "threads";
	assert_int_equal(sfs_bench_render(&f->x, f->dir, false, NULL, &err),
			 -EINVAL);
	assert_non_null(strstr(err, "table ops: rows 'threads'"));
	g_free(err);
}

static void test_render_phase_axis(void **state)
{
	struct fixture *f = *state;
	char *err = NULL, *md;

	/* columns = phase without phase=: every phase that has the metric */
	f->tab[1] = (struct sfs_xp_table){.name = "ph",
					  .workload = "dbench",
					  .metric = "mb_s",
					  .rows = "system",
					  .columns = "phase",
					  .plot = "none"};
	assert_int_equal(render(f, false, NULL, &err), 0);
	md = read_file(f->dir, "tables/ph.md");
	assert_non_null(strstr(md, "`dbench,time=10`); rows: system, "
				   "columns: phase;"));
	assert_non_null(strstr(md, "| system | setup (MB/s) | run (MB/s) |\n"
				   "|:---|---:|---:|\n"
				   "| ext2 | 999 | 20.5 |\n"
				   "| ext3 | - | 338 |\n"
				   "| kernel:ext3 | - | 7.00 |\n"
				   "| simfs/kernel | - | 48.3 |\n"));
	g_free(md);
	md = g_build_filename(f->dir, "plots", "ph.gp", NULL);
	assert_false(g_file_test(md, G_FILE_TEST_EXISTS)); /* plot = none */
	g_free(md);
	/* with phase=, that phase only */
	f->tab[1].phase = "run";
	assert_int_equal(render(f, false, NULL, &err), 0);
	md = read_file(f->dir, "tables/ph.md");
	assert_non_null(strstr(md, "| system | run (MB/s) |\n"));
	assert_non_null(strstr(md, "| ext2 | 20.5 |\n"));
	g_free(md);
}

static void test_render_sparse(void **state)
{
	struct fixture *f = *state;
	char *err = NULL, *text;

	/* a metric no cell reported: the table says so, nothing is drawn */
	f->tab[1].metric = "nosuch";
	/* one sweep point: a lines plot of one x */
	f->sweep[1] = NULL;
	assert_int_equal(render(f, true, NULL, &err), 0);
	text = read_file(f->dir, "tables/ops.md");
	assert_non_null(
	    strstr(text, "No results for metric nosuch of workload dbench.\n"));
	assert_non_null(strstr(text, "| ext2 | - |\n"));
	g_free(text);
	text = g_build_filename(f->dir, "plots", "ops.gp", NULL);
	assert_false(g_file_test(text, G_FILE_TEST_EXISTS));
	g_free(text);
	text = read_file(f->dir, "plots/tput.dat");
	assert_string_equal(text, "# clients\text2\text3\tkernel:ext3\n"
				  "1\t11\t5\t4\n");
	g_free(text);
	text = read_file(f->dir, "report.html");
	assert_int_equal(count(text, "<svg"), 1);
	g_free(text);
}

static void test_render_bad_stats_json(void **state)
{
	struct fixture *f = *state;
	char *cell = g_build_filename(f->dir, "cells", f->cells[1].id, NULL);
	char *err = NULL;

	write_file(cell, "stats.json", "{\"ops\": {\"total\": 1");
	assert_int_equal(sfs_bench_render(&f->x, f->dir, true, NULL, &err),
			 -EINVAL);
	assert_non_null(strstr(err, "stats.json"));
	g_free(err);
	/* without --report the stats are not read */
	assert_int_equal(render(f, false, NULL, &err), 0);
	g_free(cell);
}

static void test_render_bad_table_name(void **state)
{
	struct fixture *f = *state;
	char *err = NULL;

	f->tab[0].name = "../escape";
	assert_int_equal(sfs_bench_render(&f->x, f->dir, false, NULL, &err),
			 -EINVAL);
	assert_non_null(strstr(err, "table name '../escape'"));
	g_free(err);
}

static void test_render_no_gnuplot(void **state)
{
	struct fixture *f = *state;
	char *err = NULL;

	g_setenv("SFS_GNUPLOT", "/nonexistent/gnuplot", TRUE);
	assert_int_equal(sfs_bench_render(&f->x, f->dir, false, NULL, &err),
			 -ENOENT);
	g_unsetenv("SFS_GNUPLOT");
	assert_non_null(strstr(err, "apt-get install gnuplot-nox"));
	g_free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_render_fmt3),
	    cmocka_unit_test_setup_teardown(test_render_markdown_exact, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_render_plots, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_render_report, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_render_deterministic, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_render_bad_csv, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_render_missing_csv, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_render_bad_axis, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_render_phase_axis, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_render_sparse, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_render_bad_stats_json, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_render_bad_table_name, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_render_no_gnuplot, setup,
					    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
