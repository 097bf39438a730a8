/*
 * test_iolog.c - the device request log: records written and read back
 * unchanged, comments and blank lines skipped, malformed lines rejected
 * with their line number, the hook recording exactly the requests a device
 * served (times from a test clock, or sequence numbers without one),
 * failed requests left out, a chained hook still called, and write errors
 * reported at close.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "clock.h"
#include "iolog.h"
#include "testsupport.h"
#include "timedev.h"

/* ---- helpers ---- */

struct tmp {
	char *dir;
	char *path;
};

static struct tmp tmp_new(void)
{
	struct tmp t;

	t.dir = g_dir_make_tmp("sfs-iolog-XXXXXX", NULL);
	assert_non_null(t.dir);
	t.path = g_build_filename(t.dir, "io.log", NULL);
	return t;
}

static void tmp_free(struct tmp *t)
{
	g_unlink(t->path);
	g_rmdir(t->dir);
	g_free(t->path);
	g_free(t->dir);
}

static void write_text(const char *path, const char *text)
{
	assert_true(g_file_set_contents(path, text, -1, NULL));
}

/* Collects what the reader reports. */
struct got {
	GArray *recs;	/* struct sfs_iolog_rec */
	GArray *lines;	/* unsigned long */
	int stop_after; /* return 7 after this many records; 0 = never */
};

static int collect(void *ctx, const struct sfs_iolog_rec *r, unsigned long line)
{
	struct got *g = ctx;

	g_array_append_val(g->recs, *r);
	g_array_append_val(g->lines, line);
	if (g->stop_after && g->recs->len == (guint)g->stop_after)
		return 7;
	return 0;
}

static struct got got_new(void)
{
	struct got g = {
	    .recs = g_array_new(FALSE, FALSE, sizeof(struct sfs_iolog_rec)),
	    .lines = g_array_new(FALSE, FALSE, sizeof(unsigned long)),
	};
	return g;
}

static void got_free(struct got *g)
{
	g_array_free(g->recs, TRUE);
	g_array_free(g->lines, TRUE);
}

#define REC(g, i) g_array_index((g)->recs, struct sfs_iolog_rec, (i))

static void assert_rec_equal(const struct sfs_iolog_rec *a,
			     const struct sfs_iolog_rec *b)
{
	assert_int_equal(a->time_ns, b->time_ns);
	assert_int_equal(a->op, b->op);
	assert_int_equal(a->off_bytes, b->off_bytes);
	assert_int_equal(a->len_bytes, b->len_bytes);
	assert_int_equal(a->cat, b->cat);
	assert_int_equal(a->service_ns, b->service_ns);
}

/* ---- format ---- */

static void test_iolog_write_read_round_trip(void **state)
{
	struct tmp t = tmp_new();
	struct sfs_iolog *log = NULL;
	struct got g = got_new();
	GArray *in = g_array_new(FALSE, FALSE, sizeof(struct sfs_iolog_rec));
	char *text = NULL;
	char *err = NULL;

	/* every op and category, and numbers up to 2^64-1 */
	for (unsigned i = 0; i < 3 * SFS_IO_NCAT; i++) {
		struct sfs_iolog_rec r = {
		    .time_ns = 1000ULL * i + 123456,
		    .op = (enum sfs_io_op)(i % 3),
		    .off_bytes = i % 3 == 2 ? 0 : 4096ULL * i,
		    .len_bytes = i % 3 == 2 ? 0 : 512ULL * (i + 1),
		    .cat = (enum sfs_io_cat)(i % SFS_IO_NCAT),
		    .service_ns = 1500 + i,
		};
		g_array_append_val(in, r);
	}
	struct sfs_iolog_rec edge = {
	    .time_ns = UINT64_MAX,
	    .op = SFS_IO_WRITE,
	    .off_bytes = UINT64_MAX - 4096,
	    .len_bytes = 4096,
	    .cat = SFS_IO_JOURNAL,
	    .service_ns = UINT64_MAX,
	};
	g_array_append_val(in, edge);

	assert_int_equal(sfs_iolog_open(t.path, &log), 0);
	for (guint i = 0; i < in->len; i++)
		assert_int_equal(
		    sfs_iolog_record(
			log, &g_array_index(in, struct sfs_iolog_rec, i)),
		    0);
	assert_int_equal(sfs_iolog_count(log), in->len);
	assert_int_equal(sfs_iolog_close(log), 0);

	/* the header names the columns; a record line looks as documented */
	assert_true(g_file_get_contents(t.path, &text, NULL, NULL));
	assert_true(g_str_has_prefix(text, "# simfs iolog v1\n# time_ns op "
					   "offset length category "
					   "service_ns\n"));
	assert_non_null(strstr(text, "\n124456 W 4096 1024 inode 1501\n"));
	g_free(text);

	assert_int_equal(sfs_iolog_read(t.path, collect, &g, &err), 0);
	assert_null(err);
	assert_int_equal(g.recs->len, in->len);
	for (guint i = 0; i < in->len; i++) {
		assert_rec_equal(&REC(&g, i),
				 &g_array_index(in, struct sfs_iolog_rec, i));
		/* two header lines, then one record per line */
		assert_int_equal(g_array_index(g.lines, unsigned long, i),
				 i + 3);
	}
	g_array_free(in, TRUE);
	got_free(&g);
	tmp_free(&t);
}

static void test_iolog_comments_and_blanks_skipped(void **state)
{
	struct tmp t = tmp_new();
	struct got g = got_new();
	char *err = NULL;

	write_text(t.path, "# a comment\n"
			   "\n"
			   "   \t \n"
			   "10 R 0 4096 data 5\n"
			   "   # indented comment\n"
			   "20\tW\t4096  8192   dir\t7\r\n"
			   "30 F 0 0 other 0"); /* no final newline */
	assert_int_equal(sfs_iolog_read(t.path, collect, &g, &err), 0);
	assert_int_equal(g.recs->len, 3);
	assert_int_equal(REC(&g, 0).time_ns, 10);
	assert_int_equal(REC(&g, 0).op, SFS_IO_READ);
	assert_int_equal(REC(&g, 1).op, SFS_IO_WRITE);
	assert_int_equal(REC(&g, 1).off_bytes, 4096);
	assert_int_equal(REC(&g, 1).len_bytes, 8192);
	assert_int_equal(REC(&g, 1).cat, SFS_IO_DIR);
	assert_int_equal(REC(&g, 1).service_ns, 7);
	assert_int_equal(REC(&g, 2).op, SFS_IO_FLUSH);
	assert_int_equal(g_array_index(g.lines, unsigned long, 0), 4);
	assert_int_equal(g_array_index(g.lines, unsigned long, 1), 6);
	assert_int_equal(g_array_index(g.lines, unsigned long, 2), 7);
	got_free(&g);
	tmp_free(&t);
}

static void test_iolog_malformed_lines_rejected_with_line_number(void **s)
{
	static const struct {
		const char *line;
		const char *why; /* a word the message must contain */
	} bad[] = {
	    {"10 R 0 4096 data", "expected 6 fields"},
	    {"10 R 0 4096 data 5 extra", "found 7"},
	    {"10 X 0 4096 data 5", "bad op 'X'"},
	    {"10 r 0 4096 data 5", "bad op 'r'"},
	    {"10 R -1 4096 data 5", "bad offset '-1'"},
	    {"10 R 0 4k data 5", "bad length '4k'"},
	    {"1e3 R 0 4096 data 5", "bad time_ns '1e3'"},
	    {"10 R 0 4096 data +5", "bad service_ns '+5'"},
	    {"18446744073709551616 R 0 1 data 5", "bad time_ns"},
	    {"10 R 0 4096 metadata 5", "unknown category 'metadata'"},
	    {"10 W 18446744073709551615 2 data 5", "overflows"},
	    {"garbage", "expected 6 fields"},
	};
	struct tmp t = tmp_new();

	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		struct got g = got_new();
		char *text = g_strdup_printf("# header\n"
					     "1 W 0 4096 data 5\n"
					     "\n"
					     "%s\n"
					     "2 W 4096 4096 data 5\n",
					     bad[i].line);
		char *err = NULL, *where;

		write_text(t.path, text);
		assert_int_equal(sfs_iolog_read(t.path, collect, &g, &err),
				 -EINVAL);
		assert_non_null(err);
		where = g_strdup_printf("%s:4: ", t.path);
		if (!g_str_has_prefix(err, where) || !strstr(err, bad[i].why))
			fail_msg("line '%s': message '%s' lacks '%s%s'",
				 bad[i].line, err, where, bad[i].why);
		/* records before the bad line were delivered, none after */
		assert_int_equal(g.recs->len, 1);
		g_free(where);
		g_free(err);
		g_free(text);
		got_free(&g);
	}
	tmp_free(&t);
}

static void test_iolog_read_missing_file_and_early_stop(void **state)
{
	struct tmp t = tmp_new();
	struct got g = got_new();
	char *err = NULL;

	assert_int_equal(sfs_iolog_read(t.path, collect, &g, &err), -ENOENT);
	assert_non_null(strstr(err, "io.log"));
	g_free(err);

	write_text(t.path, "1 R 0 1 data 0\n2 R 1 1 data 0\n3 R 2 1 data 0\n");
	g.stop_after = 2;
	assert_int_equal(sfs_iolog_read(t.path, collect, &g, NULL), 7);
	assert_int_equal(g.recs->len, 2);
	got_free(&g);
	tmp_free(&t);
}

static void test_iolog_write_error_reported(void **state)
{
	struct sfs_iolog *log = NULL;
	struct sfs_iolog_rec r = {.op = SFS_IO_WRITE, .len_bytes = 4096};
	int rc = 0;

	/* /dev/full accepts the open, fails every write */
	assert_int_equal(sfs_iolog_open("/dev/full", &log), 0);
	for (int i = 0; i < 100000 && !rc; i++)
		rc = sfs_iolog_record(log, &r);
	assert_int_equal(rc, -EIO); /* the stdio buffer filled and failed */
	assert_int_equal(sfs_iolog_record(log, &r), -EIO); /* sticky */
	assert_true(sfs_iolog_close(log) < 0);
	assert_int_equal(sfs_iolog_open("/nonexistent/dir/log", &log), -ENOENT);
}

/* ---- the hook ---- */

/* A test clock: every reading moves it 100 ns on. */
static sfs_ns_t tick_now(void *ctx)
{
	sfs_ns_t *t = ctx;

	*t += 100;
	return *t;
}

static void issue_mix(struct sfs_bdev *bd)
{
	uint8_t buf[8192] = {0};

	assert_int_equal(sfs_bdev_write(bd, SFS_IO_DATA, 0, buf, 4096), 0);
	assert_int_equal(sfs_bdev_write(bd, SFS_IO_DATA, 4096, buf, 8192), 0);
	assert_int_equal(sfs_bdev_read(bd, SFS_IO_INODE, 65536, buf, 1024), 0);
	assert_int_equal(sfs_bdev_flush(bd), 0);
	assert_int_equal(sfs_bdev_write(bd, SFS_IO_BITMAP, 8192, buf, 1024), 0);
	assert_int_equal(sfs_bdev_zero(bd, SFS_IO_OTHER, 1 << 19, 1 << 16), 0);
	assert_int_equal(sfs_bdev_read(bd, SFS_IO_DIR, 512, buf, 512), 0);
}

static void test_iolog_hook_records_exactly_the_requests_issued(void **s)
{
	struct tmp t = tmp_new();
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_iolog *log = NULL;
	struct got g = got_new();
	const struct sfs_io_req *dev;
	sfs_ns_t clock = 0;
	size_t n;

	assert_int_equal(sfs_iolog_open(t.path, &log), 0);
	sfs_iolog_set_time_source(log, tick_now, &clock);
	sfs_bdev_set_hook(ram, sfs_iolog_hook, log);
	issue_mix(ram);
	sfs_bdev_set_hook(ram, NULL, NULL);
	/* not recorded: the hook is gone */
	assert_int_equal(sfs_bdev_flush(ram), 0);
	assert_int_equal(sfs_iolog_count(log), 7);
	assert_int_equal(sfs_iolog_failed(log), 0);
	assert_int_equal(sfs_iolog_close(log), 0);

	assert_int_equal(sfs_iolog_read(t.path, collect, &g, NULL), 0);
	dev = sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 8);
	assert_int_equal(g.recs->len, 7);
	for (guint i = 0; i < g.recs->len; i++) {
		const struct sfs_iolog_rec *r = &REC(&g, i);
		assert_int_equal(r->op, dev[i].op);
		assert_int_equal(r->off_bytes, dev[i].off_bytes);
		assert_int_equal(r->len_bytes, dev[i].len_bytes);
		/* the device log knows the category except for flushes */
		if (r->op != SFS_IO_FLUSH)
			assert_int_equal(r->cat, dev[i].cat);
		/* issue time = the reading before, service = one tick */
		assert_int_equal(r->time_ns, 100 + 200 * i);
		assert_int_equal(r->service_ns, 100);
	}
	assert_int_equal(REC(&g, 3).op, SFS_IO_FLUSH);
	assert_int_equal(REC(&g, 5).len_bytes, 1 << 16); /* zero = a write */
	got_free(&g);
	sfs_bdev_close(ram);
	tmp_free(&t);
}

static void test_iolog_hook_without_time_source_numbers_requests(void **s)
{
	struct tmp t = tmp_new();
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_iolog *log = NULL;
	struct got g = got_new();

	assert_int_equal(sfs_iolog_open(t.path, &log), 0);
	sfs_bdev_set_hook(ram, sfs_iolog_hook, log);
	issue_mix(ram);
	sfs_bdev_set_hook(ram, NULL, NULL);
	assert_int_equal(sfs_iolog_close(log), 0);
	assert_int_equal(sfs_iolog_read(t.path, collect, &g, NULL), 0);
	assert_int_equal(g.recs->len, 7);
	for (guint i = 0; i < g.recs->len; i++) {
		assert_int_equal(REC(&g, i).time_ns, i);
		assert_int_equal(REC(&g, i).service_ns, 0);
	}
	got_free(&g);
	sfs_bdev_close(ram);
	tmp_free(&t);
}

/* A hook installed before the log: fails the 2nd request it sees. */
struct prior {
	int before, after;
};

static int prior_hook(void *arg, const struct sfs_io_req *req, bool done,
		      int result)
{
	struct prior *p = arg;

	if (done) {
		p->after++;
		return 0;
	}
	return ++p->before == 2 ? -EIO : 0;
}

static void test_iolog_hook_skips_failed_and_chains(void **state)
{
	struct tmp t = tmp_new();
	struct sfs_bdev *fd = sfs_faultdev_new(sfs_ramdev_new(1 << 20));
	struct sfs_iolog *log = NULL;
	struct prior p = {0};
	struct got g = got_new();
	uint8_t buf[4096] = {0};

	assert_int_equal(sfs_iolog_open(t.path, &log), 0);
	sfs_iolog_chain_hook(log, prior_hook, &p);
	sfs_bdev_set_hook(fd, sfs_iolog_hook, log);
	assert_int_equal(sfs_bdev_write(fd, SFS_IO_DATA, 0, buf, 4096), 0);
	/* failed by the chained hook before issue */
	assert_int_equal(sfs_bdev_write(fd, SFS_IO_DATA, 4096, buf, 4096),
			 -EIO);
	/* failed by the device */
	sfs_faultdev_arm(fd, SFS_FAULT_READ, 1, false);
	assert_int_equal(sfs_bdev_read(fd, SFS_IO_DATA, 0, buf, 4096), -EIO);
	assert_int_equal(sfs_bdev_read(fd, SFS_IO_INODE, 0, buf, 1024), 0);
	sfs_bdev_set_hook(fd, NULL, NULL);
	assert_int_equal(p.before, 4);
	assert_int_equal(p.after, 4);
	assert_int_equal(sfs_iolog_failed(log), 2);
	assert_int_equal(sfs_iolog_close(log), 0);

	assert_int_equal(sfs_iolog_read(t.path, collect, &g, NULL), 0);
	assert_int_equal(g.recs->len, 2);
	assert_int_equal(REC(&g, 0).op, SFS_IO_WRITE);
	assert_int_equal(REC(&g, 0).off_bytes, 0);
	assert_int_equal(REC(&g, 1).op, SFS_IO_READ);
	assert_int_equal(REC(&g, 1).cat, SFS_IO_INODE);
	got_free(&g);
	sfs_bdev_close(fd);
	tmp_free(&t);
}

/* Keep every timing record too, to compare with the log. */
struct both {
	struct sfs_iolog *log;
	GArray *recs; /* struct sfs_timedev_rec */
};

static void both_log(void *arg, const struct sfs_timedev_rec *rec)
{
	struct both *b = arg;

	g_array_append_val(b->recs, *rec);
	sfs_iolog_timedev_log(b->log, rec);
}

static void test_iolog_timedev_records_modelled_times(void **state)
{
	struct tmp t = tmp_new();
	struct sfs_clock *clk = sfs_clock_new_virtual();
	struct sfs_bdev *td = NULL;
	struct sfs_timedev_opts o = {.model = "hdd-2009",
				     .mode = SFS_TIMEDEV_EMULATE};
	struct both b = {
	    .recs = g_array_new(FALSE, FALSE, sizeof(struct sfs_timedev_rec)),
	};
	struct got g = got_new();
	char *err = NULL;

	if (sfs_timedev_new(sfs_ramdev_new(64 << 20), clk, &o, &td, &err))
		fail_msg("timedev: %s", err);
	assert_int_equal(sfs_iolog_open(t.path, &b.log), 0);
	assert_int_equal(sfs_timedev_set_log(td, both_log, &b), 0);
	issue_mix(td);
	assert_int_equal(sfs_timedev_set_log(td, NULL, NULL), 0);
	assert_int_equal(sfs_iolog_close(b.log), 0);

	assert_int_equal(sfs_iolog_read(t.path, collect, &g, NULL), 0);
	assert_true(b.recs->len > 0);
	assert_int_equal(g.recs->len, b.recs->len);
	for (guint i = 0; i < g.recs->len; i++) {
		const struct sfs_timedev_rec *m =
		    &g_array_index(b.recs, struct sfs_timedev_rec, i);
		const struct sfs_iolog_rec *r = &REC(&g, i);
		assert_int_equal(r->time_ns, m->start_ns);
		assert_int_equal(r->service_ns, m->done_ns - m->start_ns);
		assert_int_equal(r->op, m->op);
		assert_int_equal(r->off_bytes, m->off_bytes);
		assert_int_equal(r->len_bytes, m->len_bytes);
		assert_int_equal(r->cat, m->cat);
		/* modelled time moves forward, request after request */
		if (i)
			assert_true(r->time_ns >=
				    REC(&g, i - 1).time_ns +
					REC(&g, i - 1).service_ns);
	}
	g_array_free(b.recs, TRUE);
	got_free(&g);
	sfs_bdev_close(td);
	sfs_clock_free(clk);
	tmp_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_iolog_write_read_round_trip),
	    cmocka_unit_test(test_iolog_comments_and_blanks_skipped),
	    cmocka_unit_test(
		test_iolog_malformed_lines_rejected_with_line_number),
	    cmocka_unit_test(test_iolog_read_missing_file_and_early_stop),
	    cmocka_unit_test(test_iolog_write_error_reported),
	    cmocka_unit_test(
		test_iolog_hook_records_exactly_the_requests_issued),
	    cmocka_unit_test(
		test_iolog_hook_without_time_source_numbers_requests),
	    cmocka_unit_test(test_iolog_hook_skips_failed_and_chains),
	    cmocka_unit_test(test_iolog_timedev_records_modelled_times),
	};

	return cmocka_run_group_tests_name("iolog", tests, NULL, NULL);
}
