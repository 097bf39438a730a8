/*
 * test_plot.c - pictures from I/O logs and images.
 *
 * A synthetic log with a known pattern (a sequential write, then random
 * reads) must give data files with exactly the expected series: point
 * counts per op, bytes and MB/s per bucket, seeks per bucket.  Rendering
 * through gnuplot must give an SVG carrying the panel titles (skipped only
 * when gnuplot is not installed).  A layout map of an image made by
 * sfs_mkfs, at one block per cell, must show exactly the bitmap, inode
 * table and superblock cells the geometry implies, and the highlighted
 * file's cells.  Errors: malformed log (line named), missing gnuplot,
 * unknown format, unused inode.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "fs_priv.h"
#include "iolog.h"
#include "mkfs.h"
#include "plot.h"

#define MS 1000000ULL

/* ---- helpers ---- */

struct tmp {
	char *dir;
};

static struct tmp tmp_new(void)
{
	struct tmp t = {.dir = g_dir_make_tmp("sfs-plot-XXXXXX", NULL)};

	assert_non_null(t.dir);
	return t;
}

static char *tpath(const struct tmp *t, const char *name)
{
	return g_build_filename(t->dir, name, NULL);
}

static void rmtree(const char *dir)
{
	GDir *d = g_dir_open(dir, 0, NULL);
	const char *n;

	if (!d)
		return;
	while ((n = g_dir_read_name(d))) {
		char *p = g_build_filename(dir, n, NULL);
		g_unlink(p);
		g_free(p);
	}
	g_dir_close(d);
	g_rmdir(dir);
}

static void tmp_free(struct tmp *t)
{
	rmtree(t->dir);
	g_free(t->dir);
}

static bool have_gnuplot(void)
{
	char *p = g_find_program_in_path("gnuplot");
	bool ok = p != NULL;

	g_free(p);
	return ok;
}

/* Data lines (not comments) of a file, split into fields. */
static GPtrArray *data_rows(const char *path)
{
	GPtrArray *rows =
	    g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
	char *text = NULL;
	char **lines;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		fail_msg("cannot read %s", path);
	lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++) {
		if (!**l || **l == '#')
			continue;
		g_ptr_array_add(rows, g_strsplit(*l, " ", -1));
	}
	g_strfreev(lines);
	g_free(text);
	return rows;
}

#define FIELD(rows, r, c) (((char **)(rows)->pdata[(r)])[(c)])

static uint64_t u64_field(GPtrArray *rows, guint r, guint c)
{
	return g_ascii_strtoull(FIELD(rows, r, c), NULL, 10);
}

static double dbl_field(GPtrArray *rows, guint r, guint c)
{
	return g_ascii_strtod(FIELD(rows, r, c), NULL);
}

static bool file_contains(const char *path, const char *needle)
{
	char *text = NULL;
	bool found;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		return false;
	found = strstr(text, needle) != NULL;
	g_free(text);
	return found;
}

/*
 * The known pattern: 100 sequential 4 KiB writes from offset 0, one every
 * ms (t = 0..99 ms), a flush at 50.5 ms, then 50 random 4 KiB reads at
 * t = 100..149 ms, each starting away from where the previous ended.
 */
static void write_pattern_log(const char *path)
{
	struct sfs_iolog *log = NULL;
	GRand *rnd = g_rand_new_with_seed(7);
	uint64_t prev_end = 100 * 4096;

	assert_int_equal(sfs_iolog_open(path, &log), 0);
	for (unsigned i = 0; i < 100; i++) {
		struct sfs_iolog_rec r = {
		    .time_ns = i * MS,
		    .op = SFS_IO_WRITE,
		    .off_bytes = i * 4096ULL,
		    .len_bytes = 4096,
		    .cat = SFS_IO_DATA,
		    .service_ns = 100000,
		};
		assert_int_equal(sfs_iolog_record(log, &r), 0);
		if (i == 50) {
			struct sfs_iolog_rec f = {.time_ns = 50 * MS + MS / 2,
						  .op = SFS_IO_FLUSH,
						  .cat = SFS_IO_OTHER};
			assert_int_equal(sfs_iolog_record(log, &f), 0);
		}
	}
	for (unsigned j = 0; j < 50; j++) {
		uint64_t off;
		do {
			off = (uint64_t)g_rand_int_range(rnd, 0, 262144) * 4096;
		} while (off == prev_end);
		struct sfs_iolog_rec r = {
		    .time_ns = (100 + j) * MS,
		    .op = SFS_IO_READ,
		    .off_bytes = off,
		    .len_bytes = 4096,
		    .cat = SFS_IO_DATA,
		    .service_ns = 8 * MS,
		};
		assert_int_equal(sfs_iolog_record(log, &r), 0);
		prev_end = off + 4096;
	}
	assert_int_equal(sfs_iolog_close(log), 0);
	g_rand_free(rnd);
}

/* ---- I/O log pictures ---- */

static void test_plot_iolog_data_files_hold_expected_series(void **state)
{
	struct tmp t = tmp_new();
	char *log = tpath(&t, "pattern.log");
	char *out = tpath(&t, "run.svg");
	char *p, *err = NULL;
	struct sfs_plot_opts o;
	GPtrArray *rows;

	write_pattern_log(log);
	sfs_plot_opts_defaults(&o);
	o.no_render = true;
	o.bucket_ns = 10 * MS;
	assert_int_equal(sfs_plot_iolog(log, out, &o, &err), 0);
	assert_null(err);
	assert_false(g_file_test(out, G_FILE_TEST_EXISTS)); /* not rendered */

	/* offset scatter: one point per request, by op; flush not drawn */
	p = tpath(&t, "run.offset-write.dat");
	rows = data_rows(p);
	assert_int_equal(rows->len, 100);
	for (guint i = 0; i < rows->len; i++) {
		assert_true(fabs(dbl_field(rows, i, 0) - i / 1000.0) < 1e-9);
		assert_true(fabs(dbl_field(rows, i, 1) - i * 4096 / 1048576.0) <
			    1e-6); /* MiB */
		assert_int_equal(u64_field(rows, i, 2), 4096);
	}
	g_ptr_array_free(rows, TRUE);
	g_free(p);
	p = tpath(&t, "run.offset-read.dat");
	rows = data_rows(p);
	assert_int_equal(rows->len, 50);
	g_ptr_array_free(rows, TRUE);
	g_free(p);

	/* throughput: 15 buckets of 10 ms; writes then reads */
	p = tpath(&t, "run.throughput.dat");
	rows = data_rows(p);
	assert_int_equal(rows->len, 15);
	for (guint b = 0; b < 15; b++) {
		assert_true(fabs(dbl_field(rows, b, 0) - b * 0.01) < 1e-9);
		uint64_t rd = b < 10 ? 0 : 10 * 4096,
			 wr = b < 10 ? 10 * 4096 : 0;
		assert_int_equal(u64_field(rows, b, 3), rd);
		assert_int_equal(u64_field(rows, b, 4), wr);
		/* 40960 bytes in 10 ms = 4.096 MB/s */
		assert_true(fabs(dbl_field(rows, b, 1) - rd / 1e4) < 1e-6);
		assert_true(fabs(dbl_field(rows, b, 2) - wr / 1e4) < 1e-6);
	}
	g_ptr_array_free(rows, TRUE);
	g_free(p);

	/* seeks: none while writing sequentially (the flush does not break
	 * the stream), every read after that is one */
	p = tpath(&t, "run.seeks.dat");
	rows = data_rows(p);
	assert_int_equal(rows->len, 15);
	for (guint b = 0; b < 15; b++) {
		uint64_t want = b < 10 ? 0 : 10;
		assert_int_equal(u64_field(rows, b, 2), want);
		assert_true(fabs(dbl_field(rows, b, 1) - want * 100.0) < 1e-6);
	}
	g_ptr_array_free(rows, TRUE);
	g_free(p);

	/* the script draws all three panels from those files */
	p = tpath(&t, "run.gp");
	assert_true(file_contains(p, "set output 'run.svg'"));
	assert_true(file_contains(p, "'Disk offset'"));
	assert_true(file_contains(p, "'Throughput (MB/s)'"));
	assert_true(file_contains(p, "'Seeks per second'"));
	assert_true(file_contains(p, "'run.seeks.dat'"));
	assert_true(file_contains(p, "151 requests"));
	assert_true(file_contains(p, "50 seeks, 1 flushes"));
	g_free(p);

	g_free(out);
	g_free(log);
	tmp_free(&t);
}

/*
 * A log on clock=account: its gaps are the host's time, so the default
 * axis is the disk's busy time (each request starts where the one before
 * it ended) and the label names the clock; --time issue keeps the log's
 * own times.
 */
static void test_plot_iolog_time_axis_names_the_clock(void **state)
{
	struct tmp t = tmp_new();
	char *log = tpath(&t, "acct.log");
	char *out = tpath(&t, "acct.svg");
	char *p, *err = NULL;
	struct sfs_iolog *lg;
	struct sfs_plot_opts o;
	GPtrArray *rows;

	(void)state;
	assert_int_equal(sfs_iolog_open(log, &lg), 0);
	assert_int_equal(sfs_iolog_note(lg, "clock", "account"), 0);
	for (unsigned i = 0; i < 4; i++) {
		/* 2 ms of service, then 1 s of host time before the next */
		struct sfs_iolog_rec r = {.time_ns = i * 1000 * MS,
					  .op = SFS_IO_WRITE,
					  .off_bytes = i * 4096ULL,
					  .len_bytes = 4096,
					  .cat = SFS_IO_DATA,
					  .service_ns = 2 * MS};
		assert_int_equal(sfs_iolog_record(lg, &r), 0);
	}
	assert_int_equal(sfs_iolog_close(lg), 0);
	p = sfs_iolog_read_note(log, "clock");
	assert_string_equal(p, "account");
	g_free(p);
	assert_null(sfs_iolog_read_note(log, "nothing"));

	sfs_plot_opts_defaults(&o);
	o.no_render = true;
	o.bucket_ns = MS;
	assert_int_equal(sfs_plot_iolog(log, out, &o, &err), 0);
	p = tpath(&t, "acct.offset-write.dat");
	rows = data_rows(p);
	assert_int_equal(rows->len, 4);
	for (guint i = 0; i < rows->len; i++) /* 0, 2, 4, 6 ms */
		assert_true(fabs(dbl_field(rows, i, 0) - i * 0.002) < 1e-9);
	g_ptr_array_free(rows, TRUE);
	g_free(p);
	p = tpath(&t, "acct.gp");
	assert_true(file_contains(p, "modelled disk busy time"));
	assert_true(file_contains(p, "clock=account"));
	g_free(p);

	o.time = SFS_PLOT_TIME_ISSUE;
	o.bucket_ns = 100 * MS;
	assert_int_equal(sfs_plot_iolog(log, out, &o, &err), 0);
	p = tpath(&t, "acct.offset-write.dat");
	rows = data_rows(p);
	for (guint i = 0; i < rows->len; i++) /* 0, 1, 2, 3 s */
		assert_true(fabs(dbl_field(rows, i, 0) - i * 1.0) < 1e-9);
	g_ptr_array_free(rows, TRUE);
	g_free(p);
	p = tpath(&t, "acct.gp");
	assert_true(file_contains(p, "the host''s clock"));
	g_free(p);

	g_free(out);
	g_free(log);
	tmp_free(&t);
}

static void test_plot_iolog_auto_bucket_and_point_cap(void **state)
{
	struct tmp t = tmp_new();
	char *log = tpath(&t, "long.log");
	char *out = tpath(&t, "long.png");
	char *p, *err = NULL;
	struct sfs_iolog *l = NULL;
	struct sfs_plot_opts o;
	GPtrArray *rows;

	/* 1000 writes over 999 ms: about 100 buckets -> 10 ms each */
	assert_int_equal(sfs_iolog_open(log, &l), 0);
	for (unsigned i = 0; i < 1000; i++) {
		struct sfs_iolog_rec r = {
		    .time_ns = i * MS,
		    .op = i % 2 ? SFS_IO_READ : SFS_IO_WRITE,
		    .off_bytes = i * 8192ULL,
		    .len_bytes = 8192,
		    .cat = SFS_IO_DATA,
		};
		assert_int_equal(sfs_iolog_record(l, &r), 0);
	}
	assert_int_equal(sfs_iolog_close(l), 0);
	sfs_plot_opts_defaults(&o);
	o.no_render = true;
	o.max_points = 100;
	assert_int_equal(sfs_plot_iolog(log, out, &o, &err), 0);

	p = tpath(&t, "long.throughput.dat");
	rows = data_rows(p);
	assert_int_equal(rows->len, 100);
	assert_true(fabs(dbl_field(rows, 1, 0) - 0.01) < 1e-9);
	g_ptr_array_free(rows, TRUE);
	g_free(p);
	/* a sequential stream alternating reads and writes: no seeks */
	p = tpath(&t, "long.seeks.dat");
	rows = data_rows(p);
	for (guint b = 0; b < rows->len; b++)
		assert_int_equal(u64_field(rows, b, 2), 0);
	g_ptr_array_free(rows, TRUE);
	g_free(p);
	/* 1 request in 10 drawn: 100 points in all */
	char *pr = tpath(&t, "long.offset-read.dat");
	char *pw = tpath(&t, "long.offset-write.dat");
	GPtrArray *rr = data_rows(pr), *rw = data_rows(pw);
	assert_int_equal(rr->len + rw->len, 100);
	g_ptr_array_free(rr, TRUE);
	g_ptr_array_free(rw, TRUE);
	g_free(pr);
	g_free(pw);
	p = tpath(&t, "long.gp");
	assert_true(file_contains(p, "1 in 10 shown"));
	assert_true(file_contains(p, "pngcairo"));
	g_free(p);

	g_free(out);
	g_free(log);
	tmp_free(&t);
}

static void test_plot_iolog_svg_has_titles(void **state)
{
	struct tmp t = tmp_new();
	char *log = tpath(&t, "pattern.log");
	char *out = tpath(&t, "all.svg");
	char *one = tpath(&t, "seeks.svg");
	char *png = tpath(&t, "all.png");
	char *err = NULL, *text = NULL;
	struct sfs_plot_opts o;
	gsize len;

	if (!have_gnuplot()) {
		tmp_free(&t);
		skip();
	}
	write_pattern_log(log);
	sfs_plot_opts_defaults(&o);
	o.title = "pattern \"quoted\" 'single' a_b^c";
	if (sfs_plot_iolog(log, out, &o, &err))
		fail_msg("plot failed: %s", err);
	assert_true(g_file_get_contents(out, &text, &len, NULL));
	assert_non_null(strstr(text, "<svg"));
	assert_non_null(strstr(text, "Disk offset"));
	assert_non_null(strstr(text, "Throughput (MB/s)"));
	assert_non_null(strstr(text, "Seeks per second"));
	assert_non_null(strstr(text, "a_b^c")); /* not enhanced-text mangled */
	g_free(text);
	/* without --keep nothing is left next to the picture */
	char *gp = tpath(&t, "all.gp");
	assert_false(g_file_test(gp, G_FILE_TEST_EXISTS));
	g_free(gp);

	o.kinds = SFS_PLOT_SEEKS;
	o.keep = true;
	assert_int_equal(sfs_plot_iolog(log, one, &o, &err), 0);
	assert_true(g_file_get_contents(one, &text, NULL, NULL));
	assert_non_null(strstr(text, "Seeks per second"));
	assert_null(strstr(text, "Disk offset"));
	g_free(text);
	gp = tpath(&t, "seeks.gp");
	assert_true(g_file_test(gp, G_FILE_TEST_EXISTS)); /* kept */
	g_free(gp);

	o.kinds = SFS_PLOT_ALL;
	o.keep = false;
	assert_int_equal(sfs_plot_iolog(log, png, &o, &err), 0);
	assert_true(g_file_get_contents(png, &text, &len, NULL));
	assert_true(len > 8 && memcmp(text, "\x89PNG", 4) == 0);
	g_free(text);

	g_free(png);
	g_free(one);
	g_free(out);
	g_free(log);
	tmp_free(&t);
}

static void test_plot_iolog_errors_are_clear(void **state)
{
	struct tmp t = tmp_new();
	char *log = tpath(&t, "bad.log");
	char *out = tpath(&t, "x.svg");
	char *jpg = tpath(&t, "x.jpg");
	char *missing = tpath(&t, "missing.log");
	char *err = NULL;
	struct sfs_plot_opts o;

	sfs_plot_opts_defaults(&o);
	/* malformed: the line is named */
	assert_true(g_file_set_contents(log,
					"# hdr\n1 W 0 4096 data 5\n"
					"2 Q 0 4096 data 5\n",
					-1, NULL));
	assert_int_equal(sfs_plot_iolog(log, out, &o, &err), -EINVAL);
	char *where = g_strdup_printf("%s:3: bad op 'Q'", log);
	assert_non_null(strstr(err, where));
	g_free(where);
	g_free(err);

	/* nothing to draw */
	assert_true(
	    g_file_set_contents(log, "# hdr\n5 F 0 0 other 0\n", -1, NULL));
	assert_int_equal(sfs_plot_iolog(log, out, &o, &err), -EINVAL);
	assert_non_null(strstr(err, "no read or write requests"));
	g_free(err);

	/* unknown format, missing log, missing gnuplot */
	assert_true(g_file_set_contents(log, "1 W 0 4096 data 5\n", -1, NULL));
	assert_int_equal(sfs_plot_iolog(log, jpg, &o, &err), -EINVAL);
	assert_non_null(strstr(err, "'.jpg'"));
	g_free(err);
	assert_int_equal(sfs_plot_iolog(missing, out, &o, &err), -ENOENT);
	assert_non_null(strstr(err, "missing.log"));
	g_free(err);
	assert_int_equal(
	    sfs_plot_iolog(log, "/nonexistent/dir/x.svg", &o, &err), -ENOENT);
	assert_non_null(strstr(err, "directory /nonexistent/dir does not"));
	g_free(err);
	o.gnuplot = "/nonexistent/gnuplot";
	o.keep = true;
	assert_int_equal(sfs_plot_iolog(log, out, &o, &err), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/gnuplot not found"));
	assert_non_null(strstr(err, "gnuplot-nox"));
	g_free(err);
	/* a bucket far too small for the span */
	assert_true(g_file_set_contents(log,
					"0 W 0 1 data 0\n"
					"100000000000 W 0 1 data 0\n",
					-1, NULL));
	o.gnuplot = NULL;
	o.bucket_ns = 1;
	o.no_render = true;
	assert_int_equal(sfs_plot_iolog(log, out, &o, &err), -EINVAL);
	assert_non_null(strstr(err, "buckets"));
	g_free(err);
	/* a gnuplot that fails: its complaint is quoted */
	if (have_gnuplot()) {
		char *script = tpath(&t, "fake-gnuplot");
		assert_true(g_file_set_contents(script,
						"#!/bin/sh\necho 'line 3: "
						"boom' >&2\nexit 1\n",
						-1, NULL));
		g_chmod(script, 0755);
		o.gnuplot = script;
		o.bucket_ns = 0;
		o.no_render = false;
		assert_int_equal(sfs_plot_iolog(log, out, &o, &err), -EIO);
		assert_non_null(strstr(err, "line 3: boom"));
		g_free(err);
		g_free(script);
	}

	g_free(missing);
	g_free(jpg);
	g_free(out);
	g_free(log);
	tmp_free(&t);
}

static void test_plot_parse_kinds(void **state)
{
	unsigned k = 0;
	char *err = NULL;

	assert_int_equal(sfs_plot_parse_kinds("offset", &k, NULL), 0);
	assert_int_equal(k, SFS_PLOT_OFFSET);
	assert_int_equal(sfs_plot_parse_kinds("seeks,throughput", &k, NULL), 0);
	assert_int_equal(k, SFS_PLOT_SEEKS | SFS_PLOT_THROUGHPUT);
	assert_int_equal(sfs_plot_parse_kinds("all", &k, NULL), 0);
	assert_int_equal(k, SFS_PLOT_ALL);
	assert_int_equal(sfs_plot_parse_kinds("offset,bogus", &k, &err),
			 -EINVAL);
	assert_non_null(strstr(err, "'bogus'"));
	g_free(err);
}

/* ---- layout maps ---- */

#define IMG_BYTES (32ULL << 20) /* 32 MiB at 1 KiB: 4 groups */
#define FILE_BLOCKS 300		/* 12 direct, 256 indirect, 32 double */
#define FILE_META 3		/* indirect, double indirect, its child */

struct image {
	struct tmp t;
	char *path;
	sfs_ino_t file_ino;
	/* geometry, read back through the engine */
	uint32_t groups, itb, bpg, desc_blocks, reserved_gdt, super_groups;
	uint64_t free_blocks;
};

static int image_setup(void **state)
{
	struct image *im = g_new0(struct image, 1);
	struct sfs_mkfs_params p;
	struct sfs_config cfg;
	struct sfs_bdev *bd;
	struct sfs_fs *fs;
	struct sfs_attr a;
	char *err = NULL;
	size_t done;
	uint8_t *buf;

	im->t = tmp_new();
	im->path = tpath(&im->t, "small.img");
	assert_int_equal(
	    sfs_bdev_open_file(im->path, SFS_BDEV_CREATE, IMG_BYTES, &bd), 0);
	sfs_mkfs_defaults(&p);
	p.block_size = 1024;
	p.seed = 42;
	p.time = 1000000;
	if (sfs_mkfs(bd, &p, &err))
		fail_msg("mkfs: %s", err);
	sfs_bdev_close(bd);

	assert_int_equal(sfs_bdev_open_file(im->path, 0, 0, &bd), 0);
	sfs_config_defaults(&cfg);
	if (sfs_fs_open(bd, &cfg, &fs, &err))
		fail_msg("open: %s", err);
	assert_int_equal(
	    sfs_mknod(fs, SFS_ROOT_INO, "file", 0100644, 0, 0, 0, &a), 0);
	im->file_ino = a.ino;
	buf = g_malloc0(FILE_BLOCKS * 1024);
	memset(buf, 0xab, FILE_BLOCKS * 1024);
	assert_int_equal(sfs_open(fs, a.ino, O_RDWR), 0);
	assert_int_equal(
	    sfs_write(fs, a.ino, 0, buf, FILE_BLOCKS * 1024, &done), 0);
	assert_int_equal(sfs_release(fs, a.ino), 0);
	assert_int_equal(sfs_setxattr(fs, a.ino, "user.note", "hi", 2, 0), 0);
	assert_int_equal(sfs_mkdir(fs, SFS_ROOT_INO, "dir", 040755, 0, 0, &a),
			 0);
	g_free(buf);

	im->groups = fs->groups;
	im->itb = fs->itb;
	im->bpg = fs->bpg;
	im->desc_blocks = fs->desc_blocks;
	im->reserved_gdt = fs->reserved_gdt;
	for (uint32_t g = 0; g < fs->groups; g++)
		im->super_groups += sfs_group_has_super(g, 1);
	assert_int_equal(sfs_fs_close(fs), 0);

	/* free blocks as the image says, after the writes */
	assert_int_equal(sfs_bdev_open_file(im->path, SFS_BDEV_RDONLY, 0, &bd),
			 0);
	cfg.ro = true;
	assert_int_equal(sfs_fs_open(bd, &cfg, &fs, &err), 0);
	struct sfs_statfs sf;
	assert_int_equal(sfs_statfs(fs, &sf), 0);
	im->free_blocks = sf.blocks_free;
	sfs_fs_close(fs);
	*state = im;
	return 0;
}

static int image_teardown(void **state)
{
	struct image *im = *state;

	tmp_free(&im->t);
	g_free(im->path);
	g_free(im);
	return 0;
}

/* kinds.dat: value name colour blocks cells; fetch one row by name. */
static void kind_row(const char *path, const char *name, uint64_t *blocks,
		     uint64_t *cells)
{
	GPtrArray *rows = data_rows(path);

	for (guint r = 0; r < rows->len; r++) {
		if (strcmp(FIELD(rows, r, 1), name) == 0) {
			*blocks = u64_field(rows, r, 3);
			*cells = u64_field(rows, r, 4);
			g_ptr_array_free(rows, TRUE);
			return;
		}
	}
	fail_msg("no kind %s in %s", name, path);
}

static void test_plot_layout_counts_match_geometry(void **state)
{
	struct image *im = *state;
	char *out = tpath(&im->t, "map.svg");
	char *kinds = tpath(&im->t, "map.kinds.dat");
	char *mat = tpath(&im->t, "map.layout.dat");
	char *err = NULL;
	struct sfs_plot_opts o;
	uint64_t b, c;
	GPtrArray *rows;

	sfs_plot_opts_defaults(&o);
	o.no_render = true;
	o.width_cells = im->bpg; /* one block per cell */
	o.inode = im->file_ino;
	if (sfs_plot_layout(im->path, out, &o, &err))
		fail_msg("layout: %s", err);

	rows = data_rows(mat);
	assert_int_equal(rows->len, im->groups);
	assert_int_equal(g_strv_length(rows->pdata[0]), im->bpg);
	g_ptr_array_free(rows, TRUE);

	kind_row(kinds, "block_bitmap", &b, &c);
	assert_int_equal(b, im->groups);
	assert_int_equal(c, im->groups);
	kind_row(kinds, "inode_bitmap", &b, &c);
	assert_int_equal(b, im->groups);
	assert_int_equal(c, im->groups);
	kind_row(kinds, "inode_table", &b, &c);
	assert_int_equal(b, (uint64_t)im->groups * im->itb);
	assert_int_equal(c, (uint64_t)im->groups * im->itb);
	kind_row(kinds, "super", &b, &c);
	assert_int_equal(b, (uint64_t)im->super_groups *
				(1 + im->desc_blocks + im->reserved_gdt));
	assert_int_equal(c, b);
	/* the file: data, mapping blocks and its xattr block, highlighted */
	kind_row(kinds, "highlight", &b, &c);
	assert_int_equal(b, FILE_BLOCKS + FILE_META + 1);
	assert_int_equal(c, b);
	kind_row(kinds, "data", &b, &c);
	assert_int_equal(b, FILE_BLOCKS);
	assert_int_equal(c, 0); /* every data cell is the highlighted file's */
	kind_row(kinds, "indirect", &b, &c);
	assert_int_equal(b, FILE_META);
	kind_row(kinds, "xattr", &b, &c);
	assert_int_equal(b, 1);
	/* root, lost+found (12 blocks at 1 KiB) and "dir" */
	kind_row(kinds, "dir", &b, &c);
	assert_int_equal(b, 1 + 12 + 1);
	assert_int_equal(c, b);
	kind_row(kinds, "free", &b, &c);
	assert_int_equal(b, im->free_blocks);
	kind_row(kinds, "unowned", &b, &c);
	assert_int_equal(b, 0);

	/* default width: 1024 cells per row, several blocks per cell */
	o.width_cells = 0;
	o.inode = 0;
	assert_int_equal(sfs_plot_layout(im->path, out, &o, &err), 0);
	rows = data_rows(mat);
	assert_int_equal(rows->len, im->groups);
	assert_int_equal(g_strv_length(rows->pdata[0]), 1024);
	g_ptr_array_free(rows, TRUE);
	kind_row(kinds, "highlight", &b, &c);
	assert_int_equal(b, 0);
	assert_int_equal(c, 0);
	kind_row(kinds, "inode_table", &b, &c);
	uint32_t k = (im->bpg + 1023) / 1024;
	assert_true(c >= (uint64_t)im->groups * (im->itb / k - 1));
	assert_true(c <= (uint64_t)im->groups * (im->itb / k + 2));

	g_free(mat);
	g_free(kinds);
	g_free(out);
}

static void test_plot_layout_svg_renders(void **state)
{
	struct image *im = *state;
	char *out = tpath(&im->t, "render.svg");
	char *err = NULL, *text = NULL;
	struct sfs_plot_opts o;

	if (!have_gnuplot())
		skip();
	sfs_plot_opts_defaults(&o);
	o.inode = im->file_ino;
	if (sfs_plot_layout(im->path, out, &o, &err))
		fail_msg("layout: %s", err);
	assert_true(g_file_get_contents(out, &text, NULL, NULL));
	assert_non_null(strstr(text, "<svg"));
	assert_non_null(strstr(text, "inode_table ("));
	assert_non_null(strstr(text, "block_bitmap ("));
	char *want = g_strdup_printf("inode %u highlighted", im->file_ino);
	assert_non_null(strstr(text, want));
	g_free(want);
	g_free(text);
	g_free(out);
}

static void test_plot_layout_errors(void **state)
{
	struct image *im = *state;
	char *out = tpath(&im->t, "e.svg");
	char *zeros = tpath(&im->t, "zeros.img");
	char *nope = tpath(&im->t, "nope.img");
	char *err = NULL;
	struct sfs_plot_opts o;

	sfs_plot_opts_defaults(&o);
	o.no_render = true;
	o.inode = 5000; /* in range, not in use */
	assert_int_equal(sfs_plot_layout(im->path, out, &o, &err), -ESTALE);
	assert_non_null(strstr(err, "inode 5000 is not in use"));
	g_free(err);
	o.inode = 1; /* reserved, owns no blocks */
	assert_int_equal(sfs_plot_layout(im->path, out, &o, &err), -ESTALE);
	g_free(err);
	o.inode = 0;
	assert_int_equal(sfs_plot_layout(nope, out, &o, NULL), -ENOENT);
	assert_int_equal(sfs_plot_layout(nope, out, &o, &err), -ENOENT);
	assert_non_null(strstr(err, "nope.img"));
	g_free(err);
	FILE *f = fopen(zeros, "w");
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), 1 << 20), 0);
	fclose(f);
	assert_int_equal(sfs_plot_layout(zeros, out, &o, &err), -EINVAL);
	assert_non_null(strstr(err, "zeros.img"));
	g_free(err);
	g_free(nope);
	g_free(zeros);
	g_free(out);
}

/* ---- the command ---- */

/* Run `simfs plot ARGS`; what it prints on stdout must not reach TAP. */
static int run_main(char **argv)
{
	int argc = 0, saved, nul, rc;

	while (argv[argc])
		argc++;
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	nul = open("/dev/null", O_WRONLY);
	assert_true(saved >= 0 && nul >= 0);
	dup2(nul, STDOUT_FILENO);
	close(nul);
	rc = sfs_plot_main(argc, argv);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	return rc;
}

static void test_plot_main_command_line(void **state)
{
	struct image *im = *state;
	char *log = tpath(&im->t, "cli.log");
	char *out = tpath(&im->t, "cli.svg");
	char *kinds = tpath(&im->t, "cli.kinds.dat");
	uint64_t b, c;

	write_pattern_log(log);
	assert_int_equal(run_main((char *[]){"plot", "--help", NULL}), 0);
	assert_int_equal(run_main((char *[]){"plot", "iolog", log, NULL}), 2);
	assert_int_equal(
	    run_main((char *[]){"plot", "bogus", log, "-o", out, NULL}), 2);
	assert_int_equal(run_main((char *[]){"plot", "iolog", log, "-o", out,
					     "--kind", "nope", NULL}),
			 2);
	assert_int_equal(run_main((char *[]){"plot", "iolog", log, "-o", out,
					     "--bucket", "10parsecs", NULL}),
			 2);
	assert_int_equal(run_main((char *[]){"plot", "iolog", log, "-o", out,
					     "--inode", "12", NULL}),
			 2);
	assert_int_equal(
	    run_main((char *[]){"plot", "iolog", log, "-o", out, "-k", "seeks",
				"-b", "10ms", "--no-render", NULL}),
	    0);
	char *seeks = tpath(&im->t, "cli.seeks.dat");
	GPtrArray *rows = data_rows(seeks);
	assert_int_equal(rows->len, 15); /* 10 ms buckets */
	g_ptr_array_free(rows, TRUE);
	g_free(seeks);
	/* --file resolves the path and highlights that file */
	assert_int_equal(
	    run_main((char *[]){"plot", "layout", im->path, "-o", out, "--file",
				"/file", "--no-render", NULL}),
	    0);
	kind_row(kinds, "highlight", &b, &c);
	assert_int_equal(b, FILE_BLOCKS + FILE_META + 1);
	assert_int_equal(
	    run_main((char *[]){"plot", "layout", im->path, "-o", out, "--file",
				"/missing", "--no-render", NULL}),
	    1);
	assert_int_equal(run_main((char *[]){"plot", "layout", "/nonexistent",
					     "-o", out, NULL}),
			 1);
	g_free(kinds);
	g_free(out);
	g_free(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plot_iolog_data_files_hold_expected_series),
	    cmocka_unit_test(test_plot_iolog_auto_bucket_and_point_cap),
	    cmocka_unit_test(test_plot_iolog_time_axis_names_the_clock),
	    cmocka_unit_test(test_plot_iolog_svg_has_titles),
	    cmocka_unit_test(test_plot_iolog_errors_are_clear),
	    cmocka_unit_test(test_plot_parse_kinds),
	    cmocka_unit_test(test_plot_layout_counts_match_geometry),
	    cmocka_unit_test(test_plot_layout_svg_renders),
	    cmocka_unit_test(test_plot_layout_errors),
	    cmocka_unit_test(test_plot_main_command_line),
	};

	/* the group setup makes the small image the layout tests map */
	return cmocka_run_group_tests_name("plot", tests, image_setup,
					   image_teardown);
}
