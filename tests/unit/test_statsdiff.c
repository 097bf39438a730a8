/*
 * test_statsdiff.c - comparing runs (statsdiff.h): two small stats
 * documents written by the test give exactly the expected text (the setup
 * first, layers in the file's order, largest relative change first with
 * ties by name, text changes before numbers, histogram buckets missing on
 * one side counted as 0, added and removed leaves, unchanged counts);
 * identical files give "no differences"; the top-N form; bad input (no
 * file, not JSON, not a stats document) gives an error and prints nothing;
 * two hand-made `simfs bench` folders give the expected bench diff.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "statsdiff.h"

/* ---- helpers ---- */

struct capture {
	char *text;
	size_t len;
	FILE *f;
};

static void cap_open(struct capture *c)
{
	c->text = NULL;
	c->len = 0;
	c->f = open_memstream(&c->text, &c->len);
	assert_non_null(c->f);
}

/* Close the stream; c->text holds what was written (free it). */
static void cap_close(struct capture *c)
{
	fclose(c->f);
	c->f = NULL;
}

/* Fail with both texts shown when they differ. */
static void expect_text(const char *got, const char *want)
{
	if (strcmp(got, want))
		fail_msg("output differs:\n--- got\n%s--- want\n%s", got, want);
}

static char *write_file(const char *dir, const char *rel, const char *text)
{
	char *path = g_build_filename(dir, rel, NULL);
	char *parent = g_path_get_dirname(path);

	assert_int_equal(g_mkdir_with_parents(parent, 0755), 0);
	assert_true(g_file_set_contents(path, text, -1, NULL));
	g_free(parent);
	return path;
}

static void rm_tree(const char *path)
{
	GDir *d = g_dir_open(path, 0, NULL);
	const char *n;

	while (d && (n = g_dir_read_name(d))) {
		char *p = g_build_filename(path, n, NULL);
		if (g_file_test(p, G_FILE_TEST_IS_DIR))
			rm_tree(p);
		else
			g_unlink(p);
		g_free(p);
	}
	if (d)
		g_dir_close(d);
	g_rmdir(path);
}

static int setup(void **state)
{
	char *dir = g_dir_make_tmp("test_statsdiff.XXXXXX", NULL);

	if (!dir)
		return -1;
	*state = dir;
	return 0;
}

static int teardown(void **state)
{
	rm_tree(*state);
	g_free(*state);
	return 0;
}

/* Run sfs_stats_diff_files; returns its result, output in *text. */
static int diff_files(const char *a, const char *b, char **text, char **err)
{
	struct capture c;
	int rc;

	cap_open(&c);
	rc = sfs_stats_diff_files(a, b, c.f, err);
	cap_close(&c);
	*text = c.text;
	return rc;
}

/* ---- the two documents ---- */

/* config after ops on purpose: the setup is printed first all the same */
static const char doc_a[] =
    "{\"simfs_stats_version\": 1,\n"
    " \"ops\": {\"total\": 100, \"bytes_written\": 4096, \"same\": 7,\n"
    "         \"by_type\": {\"read\": 10, \"write\": 0}},\n"
    " \"config\": {\"preset\": \"ext3\", \"commit_s\": 5, \"mem\": 256},\n"
    " \"journal\": {\"mode\": \"ordered\", \"commits_total\": 12,\n"
    "             \"old_only\": 3,\n"
    "             \"transaction_blocks\": {\"count\": 2, \"buckets\":\n"
    "                 [{\"lo\": 4, \"hi\": 7, \"count\": 2}]}},\n"
    " \"cache\": {\"hits\": 50, \"hit_ratio\": 0.5}}\n";

static const char doc_b[] =
    "{\"simfs_stats_version\": 1,\n"
    " \"config\": {\"preset\": \"ext3\", \"commit_s\": 30, \"mem\": 256},\n"
    " \"ops\": {\"total\": 150, \"bytes_written\": 4096, \"same\": 7,\n"
    "         \"by_type\": {\"read\": 5, \"write\": 3}},\n"
    " \"journal\": {\"mode\": \"writeback\", \"commits_total\": 3,\n"
    "             \"new_only\": true,\n"
    "             \"transaction_blocks\": {\"count\": 2, \"buckets\":\n"
    "                 [{\"lo\": 8, \"hi\": 15, \"count\": 2}]}},\n"
    " \"cache\": {\"hits\": 50, \"hit_ratio\": 0.5},\n"
    " \"extra\": {\"x\": 1.25}}\n";

/* What a -> b prints after the A:/B: header. */
static const char diff_ab[] =
    "what differs in the setup (config):\n"
    "  config.commit_s  5 -> 30  +500.0%\n"
    "  (2 unchanged)\n"
    "ops:\n"
    "  ops.by_type.write    0 -> 3    from 0\n"
    "  ops.by_type.read    10 -> 5    -50.0%\n"
    "  ops.total          100 -> 150  +50.0%\n"
    "  (2 unchanged)\n"
    "journal:\n"
    "  journal.mode                               ordered -> writeback\n"
    "  journal.transaction_blocks.buckets[8-15]         0 -> 2           from "
    "0\n"
    "  journal.transaction_blocks.buckets[4-7]          2 -> 0          "
    "-100.0%\n"
    "  journal.commits_total                           12 -> 3           "
    "-75.0%\n"
    "  journal.new_only                          (absent) -> true         "
    "added\n"
    "  journal.old_only                                 3 -> (absent)   "
    "removed\n"
    "  (1 unchanged)\n"
    "extra:\n"
    "  extra.x  (absent) -> 1.25  added\n"
    "8 changed, 2 added, 1 removed, 7 unchanged\n";

/* ---- cases ---- */

static void test_statsdiff_order(void **state)
{
	const char *dir = *state;
	char *a = write_file(dir, "a.json", doc_a);
	char *b = write_file(dir, "b.json", doc_b);
	char *text, *err = NULL, *want;

	assert_int_equal(diff_files(a, b, &text, &err), 0);
	assert_null(err);
	want = g_strdup_printf("A: %s\nB: %s\n%s", a, b, diff_ab);
	expect_text(text, want);
	g_free(want);
	free(text);
	g_free(a);
	g_free(b);
}

static void test_statsdiff_identical(void **state)
{
	const char *dir = *state;
	static const char doc[] =
	    "{\"simfs_stats_version\": 1, \"ops\": {\"total\": 3, "
	    "\"w\": 0.5}, \"journal\": {\"mode\": \"ordered\", \"h\": "
	    "{\"buckets\": [{\"lo\": 1, \"hi\": 1, \"count\": 4}]}}}";
	char *a = write_file(dir, "same1.json", doc);
	char *b = write_file(dir, "same2.json", doc);
	char *text, *err = NULL, *want;

	assert_int_equal(diff_files(a, b, &text, &err), 0);
	want = g_strdup_printf("A: %s\nB: %s\n"
			       "(neither file has a config section: the setup "
			       "itself is not compared)\n"
			       "no differences (4 values compared)\n",
			       a, b);
	expect_text(text, want);
	g_free(want);
	free(text);
	g_free(a);
	g_free(b);
}

static void test_statsdiff_top(void **state)
{
	JsonParser *pa = json_parser_new(), *pb = json_parser_new();
	struct capture c;
	char *err = NULL;

	assert_true(json_parser_load_from_data(pa, doc_a, -1, NULL));
	assert_true(json_parser_load_from_data(pb, doc_b, -1, NULL));
	cap_open(&c);
	assert_int_equal(sfs_stats_diff_json(json_parser_get_root(pa), "a",
					     json_parser_get_root(pb), "b", 3,
					     "    ", c.f, &err),
			 0);
	cap_close(&c);
	/* text first, then the two changes from 0 (ties by group, name) */
	expect_text(c.text,
		    "    ops:\n"
		    "      ops.by_type.write  0 -> 3  from 0\n"
		    "    journal:\n"
		    "      journal.mode                              ordered "
		    "-> writeback\n"
		    "      journal.transaction_blocks.buckets[8-15]        0 "
		    "-> 2          from 0\n"
		    "    8 changed (the 3 largest shown), 2 added, 1 removed, "
		    "7 unchanged\n");
	free(c.text);
	g_object_unref(pa);
	g_object_unref(pb);
}

static void test_statsdiff_bad_input(void **state)
{
	const char *dir = *state;
	char *good = write_file(dir, "good.json", doc_a);
	char *notjson = write_file(dir, "bad.json", "{\"simfs_stats_version\"");
	char *other =
	    write_file(dir, "other.json", "{\"ops\": {\"total\": 1}}");
	char *array = write_file(dir, "array.json", "[1, 2]");
	char *v2 = write_file(dir, "v2.json", "{\"simfs_stats_version\": 2}");
	char *missing = g_build_filename(dir, "missing.json", NULL);
	char *text, *err = NULL;

	assert_int_equal(diff_files(good, notjson, &text, &err), -EINVAL);
	assert_non_null(strstr(err, "not JSON"));
	assert_null(strchr(err, '\n'));
	assert_string_equal(text, "");
	free(text);
	g_free(err);

	assert_int_equal(diff_files(other, good, &text, &err), -EINVAL);
	assert_non_null(strstr(err, "not a simfs statistics document"));
	assert_string_equal(text, "");
	free(text);
	g_free(err);

	assert_int_equal(diff_files(good, array, &text, &err), -EINVAL);
	assert_non_null(strstr(err, "array.json"));
	free(text);
	g_free(err);

	assert_int_equal(diff_files(good, v2, &text, &err), -EINVAL);
	assert_non_null(strstr(err, "different stats versions"));
	free(text);
	g_free(err);

	assert_int_equal(diff_files(missing, good, &text, &err), -ENOENT);
	assert_non_null(strstr(err, "missing.json: no such file"));
	assert_string_equal(text, "");
	free(text);
	g_free(err);

	assert_int_equal(diff_files(dir, good, &text, &err), -ENOENT);
	free(text);
	g_free(err);

	g_free(good);
	g_free(notjson);
	g_free(other);
	g_free(array);
	g_free(v2);
	g_free(missing);
}

static const char csv_head[] =
    "experiment,table,workload,phase,system,variant,metric,value,unit\n";

static void test_statsdiff_bench(void **state)
{
	const char *dir = *state;
	char *d1 = g_build_filename(dir, "run1", NULL);
	char *d2 = g_build_filename(dir, "run2", NULL);
	char *csv1 = g_strconcat(
	    csv_head, "x,tput,dbench,run,ext2,clients=1,mb_s,10,MB/s\n",
	    "x,tput,dbench,run,ext2,\"clients=4,r=1\",mb_s,20,MB/s\n",
	    "x,tput,dbench,run,ext3,clients=1,mb_s,8,MB/s\n",
	    "x,,dbench,all,ext2,clients=1,commits,0,\n",
	    "x,lat,dbench,run,ext2,clients=1,lat_p99_ms,5.5,ms\n",
	    "x,tput,dbench,run,ext3,clients=4,mb_s,7,MB/s\n", NULL);
	char *csv2 = g_strconcat(
	    csv_head, "y,lat,dbench,run,ext3,clients=1,lat_p99_ms,6,ms\r\n",
	    "y,tput,dbench,run,ext2,clients=1,mb_s,12.5,MB/s\r\n",
	    "y,tput,dbench,run,ext2,\"clients=4,r=1\",mb_s,10,MB/s\r\n",
	    "y,tput,dbench,run,ext3,clients=1,mb_s,8,MB/s\r\n",
	    "y,,dbench,all,ext2,clients=1,commits,4,\r\n",
	    "y,lat,dbench,run,ext2,clients=1,lat_p99_ms,5.5,ms\r\n", NULL);
	static const char same[] =
	    "{\"simfs_stats_version\": 1, \"ops\": {\"total\": 3}}";
	struct capture c;
	char *err = NULL, *want;

	g_free(write_file(d1, "results.csv", csv1));
	g_free(write_file(d2, "results.csv", csv2));
	g_free(write_file(d1, "cells/c1/stats.json", doc_a));
	g_free(write_file(d2, "cells/c1/stats.json", doc_b));
	g_free(write_file(d1, "cells/c0/stats.json", same));
	g_free(write_file(d2, "cells/c0/stats.json", same));
	g_free(write_file(d1, "cells/c2/stats.json", same));
	g_free(write_file(d2, "cells/c3/stats.json", same));
	g_free(write_file(d2, "cells/c4/stats.json", same));

	cap_open(&c);
	assert_int_equal(sfs_bench_diff(d1, d2, c.f, &err), 0);
	cap_close(&c);
	assert_null(err);
	want = g_strdup_printf(
	    "A: %s\nB: %s\n\n"
	    "results.csv:\n"
	    "table tput:\n"
	    "  ext2 clients=4,r=1 dbench/run mb_s      20 -> 10 MB/s     "
	    "-50.0%%\n"
	    "  ext2 clients=1 dbench/run mb_s          10 -> 12.5 MB/s   "
	    "+25.0%%\n"
	    "  ext3 clients=4 dbench/run mb_s      7 MB/s -> (absent)   "
	    "removed\n"
	    "  (1 unchanged)\n"
	    "table lat:\n"
	    "  ext3 clients=1 dbench/run lat_p99_ms  (absent) -> 6 ms  added\n"
	    "  (1 unchanged)\n"
	    "rows in no table:\n"
	    "  ext2 clients=1 dbench/all commits  0 -> 4  from 0\n"
	    "3 changed, 1 added, 1 removed, 2 unchanged\n"
	    "\n"
	    "cells (the 5 largest changes of each cell's stats.json):\n"
	    "cell c0:\n"
	    "  no differences (1 value compared)\n"
	    "cell c1:\n"
	    "  what differs in the setup (config):\n"
	    "    config.commit_s  5 -> 30  +500.0%%\n"
	    "  ops:\n"
	    "    ops.by_type.write  0 -> 3  from 0\n"
	    "  journal:\n"
	    "    journal.mode                              ordered -> "
	    "writeback\n"
	    "    journal.transaction_blocks.buckets[8-15]        0 -> 2        "
	    "   from 0\n"
	    "    journal.transaction_blocks.buckets[4-7]         2 -> 0        "
	    "  -100.0%%\n"
	    "  8 changed (the 5 largest shown), 2 added, 1 removed, 7 "
	    "unchanged\n"
	    "cells only in A: c2\n"
	    "cells only in B: c3, c4\n",
	    d1, d2);
	expect_text(c.text, want);
	g_free(want);
	free(c.text);

	/* a cell whose stats cannot be read is said so, the rest goes on */
	want = g_build_filename(d2, "cells/c0/stats.json", NULL);
	assert_int_equal(g_unlink(want), 0);
	g_free(want);
	cap_open(&c);
	assert_int_equal(sfs_bench_diff(d1, d2, c.f, &err), 0);
	cap_close(&c);
	assert_non_null(strstr(c.text, "cell c0:\n  not compared: "));
	assert_non_null(strstr(c.text, "cell c1:\n"));
	free(c.text);

	g_free(csv1);
	g_free(csv2);
	g_free(d1);
	g_free(d2);
}

static void test_statsdiff_bench_bad(void **state)
{
	const char *dir = *state;
	char *d1 = g_build_filename(dir, "good", NULL);
	char *d2 = g_build_filename(dir, "nocsv", NULL);
	char *d3 = g_build_filename(dir, "badhead", NULL);
	char *d4 = g_build_filename(dir, "badrow", NULL);
	char *d5 = g_build_filename(dir, "nofolder", NULL);
	char *row = g_strconcat(csv_head, "x,t,w,p,s,v,m,1,u\n", NULL);
	char *short_row =
	    g_strconcat(csv_head, "x,t,w,p,s,v,m,1,u\n", "x,t,w,p,s\n", NULL);
	struct capture c;
	char *err = NULL;

	g_free(write_file(d1, "results.csv", row));
	g_free(write_file(d2, "cells/c/stats.json", "{}"));
	g_free(write_file(d3, "results.csv", "workload,phase,metric\n"));
	g_free(write_file(d4, "results.csv", short_row));

	cap_open(&c);
	assert_int_equal(sfs_bench_diff(d1, d2, c.f, &err), -ENOENT);
	assert_non_null(strstr(err, "results.csv"));
	g_free(err);
	assert_int_equal(sfs_bench_diff(d3, d1, c.f, &err), -EINVAL);
	assert_non_null(strstr(err, "results.csv:1: not a simfs bench"));
	g_free(err);
	assert_int_equal(sfs_bench_diff(d1, d4, c.f, &err), -EINVAL);
	assert_non_null(strstr(err, "results.csv:3: 5 fields, expected 9"));
	g_free(err);
	assert_int_equal(sfs_bench_diff(d5, d1, c.f, &err), -ENOENT);
	assert_non_null(strstr(err, "no such folder"));
	g_free(err);
	cap_close(&c);
	assert_int_equal(c.len, 0); /* nothing printed on bad input */
	free(c.text);

	g_free(row);
	g_free(short_row);
	g_free(d1);
	g_free(d2);
	g_free(d3);
	g_free(d4);
	g_free(d5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_statsdiff_order, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_statsdiff_identical, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_statsdiff_top, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_statsdiff_bad_input, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_statsdiff_bench, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_statsdiff_bench_bad, setup,
					    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
