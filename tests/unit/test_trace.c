/*
 * test_trace.c - operation traces: the format, the trace workload, the
 * recorder's path map and the strace importer.
 *
 * Cases: every op type written by the writer reads back the same (paths
 * with spaces, newlines, '%', '"' and UTF-8 round-trip, and the line
 * reformats to itself); a write's bytes land in the data file at the
 * offset its line names; the trace workload makes one client per
 * recorded process in first-seen order, hands a handle's ops to its
 * opener, keeps each client's order and gives think times from the
 * synthetic recorded times, passes the recorded bytes, expands a path
 * truncate, and counts and reports results that differ; with chain,
 * processes that ran one after another become one client; a newer major
 * version is refused with a clear message while a newer minor one is
 * read; malformed lines are refused naming FILE:LINE; the recorder
 * rebuilds paths across renames, exchanges, links and unlinks; the strace
 * importer turns a canned -f -ttt -T text (with unfinished/resumed pairs)
 * into the expected ops, and follows a shell's redirections, chdir,
 * copy_file_range and a child's exit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "clock.h"
#include "trace.h"
#include "workload.h"

/* ---- helpers ---- */

/* A private temp directory per case (state). */
static int fx_setup(void **state)
{
	GError *e = NULL;
	char *dir = g_dir_make_tmp("test_trace.XXXXXX", &e);

	if (!dir) {
		print_error("tmp dir: %s\n", e->message);
		g_error_free(e);
		return -1;
	}
	*state = dir;
	return 0;
}

static int fx_teardown(void **state)
{
	char *dir = *state;
	GDir *d = g_dir_open(dir, 0, NULL);
	const char *n;

	while (d && (n = g_dir_read_name(d))) {
		char *p = g_build_filename(dir, n, NULL);

		g_unlink(p);
		g_free(p);
	}
	if (d)
		g_dir_close(d);
	g_rmdir(dir);
	g_free(dir);
	return 0;
}

static char *put_file(const char *dir, const char *name, const char *text)
{
	char *p = g_build_filename(dir, name, NULL);

	assert_true(g_file_set_contents(p, text, -1, NULL));
	return p;
}

/* Read a trace from text: all records (strings copied), or the error. */
struct recs {
	struct sfs_trace_rec r[64];
	char *paths[64][2];
	unsigned lines[64];
	unsigned n;
};

static int read_text(const char *text, struct recs *out, char **err)
{
	FILE *in = fmemopen((void *)text, strlen(text), "r");
	struct sfs_trace_reader *r;
	int rc;

	assert_non_null(in);
	memset(out, 0, sizeof(*out));
	rc = sfs_trace_reader_new(in, "t.trace", &r, err);
	if (rc < 0) {
		fclose(in);
		return rc;
	}
	while ((rc = sfs_trace_read(r, &out->r[out->n], err)) == 1) {
		struct sfs_trace_rec *x = &out->r[out->n];

		x->path = out->paths[out->n][0] = g_strdup(x->path);
		x->path2 = out->paths[out->n][1] = g_strdup(x->path2);
		out->lines[out->n] = sfs_trace_reader_line(r);
		assert_true(++out->n < 64);
	}
	sfs_trace_reader_free(r);
	fclose(in);
	return rc;
}

static void recs_free(struct recs *x)
{
	for (unsigned i = 0; i < 64; i++) {
		g_free(x->paths[i][0]);
		g_free(x->paths[i][1]);
	}
}

static void assert_str_eq_null(const char *a, const char *b)
{
	if (!a || !b)
		assert_true(a == b);
	else
		assert_string_equal(a, b);
}

static void assert_rec_equal(const struct sfs_trace_rec *a,
			     const struct sfs_trace_rec *b)
{
	assert_int_equal(a->t_ns, b->t_ns);
	assert_int_equal(a->client, b->client);
	assert_int_equal(a->op, b->op);
	assert_str_eq_null(a->path, b->path);
	assert_str_eq_null(a->path2, b->path2);
	assert_int_equal(a->fd, b->fd);
	assert_int_equal(a->off, b->off);
	assert_int_equal(a->len, b->len);
	assert_int_equal(a->done, b->done);
	assert_int_equal(a->data_off, b->data_off);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->mode, b->mode);
	assert_int_equal(a->result, b->result);
	assert_int_equal(a->dur_ns, b->dur_ns);
}

/* One record of every op type, with awkward paths. */
static unsigned every_op(struct sfs_trace_rec *r)
{
	static const char *const odd[] = {
	    "dir with spaces/file name.txt",
	    "new\nline/tab\there",
	    "caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
	    "100%/\"quoted\"",
	    "a/b",
	};
	unsigned n = 0;

	for (int op = 0; op < SFS_TOP_N; op++, n++) {
		struct sfs_trace_rec *x = &r[n];

		sfs_trace_rec_init(x);
		x->op = (enum sfs_trace_op)op;
		x->t_ns = 1000u * (unsigned)op + 7;
		x->client = 4000 + (uint64_t)(op % 3);
		x->dur_ns = 50 + (sfs_ns_t)op;
		x->path = odd[op % 5];
		x->path2 = odd[(op + 1) % 5];
		switch (x->op) {
		case SFS_TOP_OPEN:
			x->flags = O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT;
			x->mode = 0644;
			x->fd = 3;
			break;
		case SFS_TOP_READ:
			x->fd = 3;
			x->off = SFS_TRACE_OFF_CUR;
			x->len = 4096;
			x->done = 100;
			x->result = 0;
			break;
		case SFS_TOP_WRITE:
			x->fd = 3;
			x->off = 1ull << 40;
			x->len = 65536;
			x->done = 65536;
			x->data_off = 12345;
			break;
		case SFS_TOP_FSYNC:
			x->fd = 3;
			x->flags = SFS_WOP_DATASYNC;
			x->result = -EIO;
			break;
		case SFS_TOP_FTRUNCATE:
		case SFS_TOP_CLOSE:
			x->fd = 3;
			x->len = x->op == SFS_TOP_FTRUNCATE ? 777 : 0;
			break;
		case SFS_TOP_TRUNCATE:
			x->len = 1;
			break;
		case SFS_TOP_MKDIR:
			x->mode = 0755;
			x->result = -EEXIST;
			break;
		case SFS_TOP_UNLINK:
			x->result = -ENOENT;
			break;
		case SFS_TOP_RMDIR:
			x->result = -ENOTEMPTY;
			break;
		case SFS_TOP_STAT:
			x->result = -ENAMETOOLONG;
			break;
		default:
			break;
		}
		/* fields an op does not carry stay absent */
		if (x->op != SFS_TOP_RENAME && x->op != SFS_TOP_LINK &&
		    x->op != SFS_TOP_SYMLINK)
			x->path2 = NULL;
		if (x->op == SFS_TOP_SYNC || x->op == SFS_TOP_STATFS ||
		    x->op == SFS_TOP_CLOSE || x->op == SFS_TOP_READ ||
		    x->op == SFS_TOP_WRITE || x->op == SFS_TOP_FSYNC ||
		    x->op == SFS_TOP_FTRUNCATE)
			x->path = NULL;
	}
	return n;
}

/* ---- the format ---- */

static void test_trace_round_trip(void **state)
{
	struct sfs_trace_rec r[SFS_TOP_N];
	unsigned n = every_op(r);
	char *buf = NULL, *err = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	struct sfs_trace_writer *w = sfs_trace_writer_new(out, NULL);
	struct recs got;

	(void)state;
	for (unsigned i = 0; i < n; i++)
		sfs_trace_write(w, &r[i], NULL);
	assert_int_equal(sfs_trace_writer_close(w), 0);
	fclose(out);
	assert_true(g_str_has_prefix(buf, "# simfs-trace 1"));
	/* one line per record, and the paths are escaped */
	assert_null(strstr(buf, "with spaces"));
	assert_non_null(strstr(buf, "\"dir%20with%20spaces/file%20name.txt\""));
	assert_non_null(strstr(buf, "new%0Aline/tab%09here"));
	assert_non_null(strstr(buf, "caf%C3%A9/"));
	assert_non_null(strstr(buf, "100%25/%22quoted%22"));
	assert_non_null(strstr(buf, "flags=O_WRONLY|O_CREAT|O_TRUNC|O_DIRECT"));
	assert_non_null(strstr(buf, "rc=-ENOTEMPTY"));

	assert_int_equal(read_text(buf, &got, &err), 0);
	assert_int_equal(got.n, n);
	for (unsigned i = 0; i < n; i++) {
		char *a = sfs_trace_format(&r[i]);
		char *b = sfs_trace_format(&got.r[i]);

		assert_rec_equal(&got.r[i], &r[i]);
		assert_string_equal(a, b);
		assert_non_null(strstr(buf, a)); /* the writer's line */
		g_free(a);
		g_free(b);
	}
	recs_free(&got);
	free(buf);
}

/* Flags by name both ways: every access mode, O_SYNC (which holds
 * O_DSYNC's bit), bits without a name in hex. */
static void test_trace_flags(void **state)
{
	static const uint32_t flags[] = {
	    O_RDONLY,
	    O_WRONLY | O_APPEND,
	    O_RDWR | O_SYNC,
	    O_RDWR | O_DSYNC | O_EXCL | O_CREAT,
	    O_ACCMODE | O_NOFOLLOW,
	    O_WRONLY | 0x40000000u,
	};

	(void)state;
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		struct sfs_trace_rec r;
		struct recs got;
		char *line, *text, *err = NULL;

		sfs_trace_rec_init(&r);
		r.op = SFS_TOP_OPEN;
		r.path = "f";
		r.flags = flags[i];
		r.fd = 3;
		line = sfs_trace_format(&r);
		text = g_strconcat("# simfs-trace 1\n", line, NULL);
		assert_int_equal(read_text(text, &got, &err), 0);
		assert_int_equal(got.n, 1);
		assert_int_equal(got.r[0].flags, flags[i]);
		if (flags[i] & 0x40000000u)
			assert_non_null(strstr(line, "|0x40000000"));
		recs_free(&got);
		g_free(text);
		g_free(line);
	}
}

static void test_trace_data_file(void **state)
{
	const char *dir = *state;
	char *path = g_build_filename(dir, "w.trace", NULL);
	char *dpath = g_strconcat(path, ".data", NULL);
	struct sfs_trace_writer *w;
	struct sfs_trace_rec r;
	char *err = NULL, *data = NULL, *text = NULL;
	gsize dlen = 0;
	struct recs got;

	assert_int_equal(sfs_trace_writer_open(path, true, &w, &err), 0);
	sfs_trace_rec_init(&r);
	r.op = SFS_TOP_WRITE;
	r.fd = 3;
	r.off = 0;
	r.len = r.done = 5;
	sfs_trace_write(w, &r, "hello");
	r.off = 5;
	r.len = r.done = 6;
	sfs_trace_write(w, &r, " world");
	r.op = SFS_TOP_CLOSE;
	sfs_trace_write(w, &r, NULL);
	assert_int_equal(sfs_trace_writer_close(w), 0);

	assert_true(g_file_get_contents(dpath, &data, &dlen, NULL));
	assert_int_equal(dlen, 11);
	assert_memory_equal(data, "hello world", 11);
	assert_true(g_file_get_contents(path, &text, NULL, NULL));
	assert_int_equal(read_text(text, &got, &err), 0);
	assert_int_equal(got.n, 3);
	assert_int_equal(got.r[0].data_off, 0);
	assert_int_equal(got.r[1].data_off, 5);
	assert_int_equal(got.r[2].op, SFS_TOP_CLOSE);
	recs_free(&got);
	g_free(text);
	g_free(data);
	g_free(dpath);
	g_free(path);
}

static void test_trace_newer_version_refused(void **state)
{
	struct recs got;
	char *err = NULL;

	(void)state;
	assert_int_equal(
	    read_text("# simfs-trace 2\n0 1 sync rc=0 dur=0\n", &got, &err),
	    -EINVAL);
	assert_non_null(err);
	assert_true(g_str_has_prefix(err, "t.trace:1: "));
	assert_non_null(strstr(err, "newer"));
	g_free(err);
	err = NULL;
	assert_int_equal(read_text("# simfs-trace 2.3\n", &got, &err), -EINVAL);
	assert_non_null(strstr(err, "2.3"));
	g_free(err);
	err = NULL;
	/* not a trace at all */
	assert_int_equal(read_text("0 1 sync rc=0 dur=0\n", &got, &err),
			 -EINVAL);
	assert_non_null(strstr(err, "not a simfs trace"));
	g_free(err);
	err = NULL;
	/* a newer minor version: unknown fields are skipped */
	assert_int_equal(read_text("# simfs-trace 1.7\n"
				   "5 9 sync rc=0 dur=3 future=yes\n",
				   &got, &err),
			 0);
	assert_int_equal(got.n, 1);
	assert_int_equal(got.r[0].dur_ns, 3);
	recs_free(&got);
	/* the same field in this version is a mistake */
	assert_int_equal(read_text("# simfs-trace 1\n"
				   "5 9 sync rc=0 dur=3 future=yes\n",
				   &got, &err),
			 -EINVAL);
	assert_non_null(strstr(err, "t.trace:2: unknown field 'future'"));
	g_free(err);
}

static void test_trace_malformed_line(void **state)
{
	static const struct {
		const char *line;
		const char *what;
	} bad[] = {
	    {"x 1 sync rc=0 dur=0", "time"},
	    {"1 1 fly rc=0 dur=0", "unknown op 'fly'"},
	    {"1 1 unlink rc=0 dur=0", "without path="},
	    {"1 1 unlink path=a/b rc=0 dur=0", "double quotes"},
	    {"1 1 unlink path=\"a b\" rc=0 dur=0", "%20"},
	    {"1 1 unlink path=\"a%2\" rc=0 dur=0", "two hex digits"},
	    {"1 1 unlink path=\"a%00b\" rc=0 dur=0", "NUL"},
	    {"1 1 unlink path=\"a\" rc=-EWHAT dur=0", "rc=-EWHAT"},
	    {"1 1 unlink path=\"a\" rc=0", "without dur="},
	    {"1 1 read fd=3 off=0 rc=0 dur=1", "without len="},
	    {"1 1 read fd=3 off=0 len=1 done=2 rc=0 dur=1", "more than len"},
	    {"1 1 open path=\"a\" flags=O_BOGUS rc=0 dur=1 fd=3", "flags="},
	    {"1 1 open path=\"a\" flags=O_RDONLY rc=0 dur=1", "without fd="},
	    {"1 1 mkdir path=\"a\" mode=999 rc=0 dur=1", "octal"},
	    {"1 1 sync rc=0 dur=1 dur=2", "given twice"},
	    {"1 1 sync fd=3 rc=0 dur=1", "does not take"},
	    {"1 1", "expected TIME CLIENT OP"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *text = g_strdup_printf("# simfs-trace 1\n"
					     "# a comment\n"
					     "\n"
					     "0 1 sync rc=0 dur=0\n"
					     "%s\n",
					     bad[i].line);
		struct recs got;
		char *err = NULL;

		assert_int_equal(read_text(text, &got, &err), -EINVAL);
		if (!g_str_has_prefix(err, "t.trace:5: ") ||
		    !strstr(err, bad[i].what))
			print_error("line '%s': got '%s', wanted '%s'\n",
				    bad[i].line, err, bad[i].what);
		assert_true(g_str_has_prefix(err, "t.trace:5: "));
		assert_non_null(strstr(err, bad[i].what));
		recs_free(&got);
		g_free(err);
		g_free(text);
	}
}

/* ---- the workload ---- */

/*
 * Two processes: 100 makes a file, writes it in two pieces and closes
 * it; 200 stats and makes a directory; 300 (a child) writes on 100's
 * handle; the kernel's release (client 0 recorded as 100) closes.  The
 * lines are in completion order, not start order.
 */
static const char wl_trace[] =
    "# simfs-trace 1\n"
    "1000 100 open path=\"d/f%20x\" flags=O_WRONLY|O_CREAT mode=0644 fd=3 "
    "rc=0 dur=500\n"
    "1200 200 stat path=\"d\" rc=0 dur=100\n"
    "2000 100 write fd=3 off=0 len=5 done=5 data=0 rc=0 dur=1000\n"
    "1500 200 mkdir path=\"d/sub\" mode=0755 rc=-EEXIST dur=300\n"
    "4000 300 write fd=3 off=5 len=6 done=6 data=5 rc=0 dur=200\n"
    "3500 100 truncate path=\"d/g\" len=9 rc=0 dur=100\n"
    "5000 100 close fd=3 rc=0 dur=10\n"
    "1700 200 open path=\"missing\" flags=O_RDONLY mode=0 rc=-ENOENT "
    "dur=5\n";

static struct sfs_workload *wl_new(const char *dir, bool data, char **errp)
{
	char *p = put_file(dir, "wl.trace", wl_trace);
	char *spec = g_strdup_printf("trace,file=%s", p);
	struct sfs_workload *w = NULL;
	char *err = NULL;

	if (data)
		g_free(put_file(dir, "wl.trace.data", "hello world"));
	if (sfs_workload_new(spec, &w, &err) < 0) {
		print_error("%s\n", err);
		*errp = err;
	}
	g_free(spec);
	g_free(p);
	return w;
}

static void next_ok(struct sfs_workload *w, unsigned c, struct sfs_wop *op)
{
	char *err = NULL;
	int rc = sfs_workload_next(w, c, 0, op, &err);

	if (rc != 1)
		print_error("client %u: %d %s\n", c, rc, err ? err : "");
	assert_int_equal(rc, 1);
}

static void test_trace_workload_clients(void **state)
{
	char *err = NULL;
	struct sfs_workload *w = wl_new(*state, true, &err);
	struct sfs_wop op;

	assert_non_null(w);
	/* 100, 200 (300's only op is on 100's handle) */
	assert_int_equal(sfs_workload_clients(w), 2);

	/* client 0 = 100: open at 1000 (think 1000), write at 2000 (gap
	 * 2000 - 1500), truncate at 3500 (3500 - 3000) as three ops, the
	 * child's write at 4000 (4000 - 3600), close (5000 - 4200) */
	next_ok(w, 0, &op);
	assert_int_equal(op.type, SFS_WOP_OPEN);
	assert_string_equal(op.path, "d/f x");
	assert_int_equal(op.flags, O_WRONLY | O_CREAT);
	assert_int_equal(op.mode, 0644);
	assert_int_equal(op.fd, 3);
	assert_int_equal(op.think_ns, 1000);
	assert_int_equal(op.expect, 0);
	sfs_workload_done(w, 0, &op, 0);

	next_ok(w, 0, &op);
	assert_int_equal(op.type, SFS_WOP_WRITE);
	assert_int_equal(op.fd, 3);
	assert_int_equal(op.off, 0);
	assert_int_equal(op.len, 5);
	assert_int_equal(op.think_ns, 500);
	assert_non_null(op.data);
	assert_memory_equal(op.data, "hello", 5);
	sfs_workload_done(w, 0, &op, 0);

	next_ok(w, 0, &op);
	assert_int_equal(op.type, SFS_WOP_OPEN);
	assert_string_equal(op.path, "d/g");
	assert_int_equal(op.think_ns, 500);
	assert_int_equal(op.expect, SFS_WOP_ANY);
	int tfd = op.fd;
	assert_true(tfd > 3);
	sfs_workload_done(w, 0, &op, 0);
	next_ok(w, 0, &op);
	assert_int_equal(op.type, SFS_WOP_FTRUNCATE);
	assert_int_equal(op.fd, tfd);
	assert_int_equal(op.len, 9);
	assert_int_equal(op.think_ns, 0);
	sfs_workload_done(w, 0, &op, 0);
	next_ok(w, 0, &op);
	assert_int_equal(op.type, SFS_WOP_CLOSE);
	assert_int_equal(op.fd, tfd);
	sfs_workload_done(w, 0, &op, 0);

	next_ok(w, 0, &op);
	assert_int_equal(op.type, SFS_WOP_WRITE);
	assert_int_equal(op.off, 5);
	assert_int_equal(op.think_ns, 400);
	assert_memory_equal(op.data, " world", 6);
	sfs_workload_done(w, 0, &op, -ENOSPC); /* differs */

	next_ok(w, 0, &op);
	assert_int_equal(op.type, SFS_WOP_CLOSE);
	assert_int_equal(op.think_ns, 800);
	sfs_workload_done(w, 0, &op, 0);
	assert_int_equal(sfs_workload_next(w, 0, 0, &op, &err), 0);

	/* client 1 = 200: stat at 1200, mkdir at 1500 (1500 - 1300), the
	 * failed open at 1700 (1700 - 1800 < 0: 0) with a fresh handle */
	next_ok(w, 1, &op);
	assert_int_equal(op.type, SFS_WOP_STAT);
	assert_string_equal(op.path, "d");
	assert_int_equal(op.think_ns, 1200);
	sfs_workload_done(w, 1, &op, 0);
	next_ok(w, 1, &op);
	assert_int_equal(op.type, SFS_WOP_MKDIR);
	assert_int_equal(op.think_ns, 200);
	assert_int_equal(op.expect, -EEXIST);
	assert_int_equal(op.mode, 0755);
	sfs_workload_done(w, 1, &op, -EEXIST);
	next_ok(w, 1, &op);
	assert_int_equal(op.type, SFS_WOP_OPEN);
	assert_int_equal(op.think_ns, 0);
	assert_int_equal(op.expect, -ENOENT);
	assert_true(op.fd > 3 && op.fd != tfd);
	sfs_workload_done(w, 1, &op, 0); /* differs */
	assert_int_equal(sfs_workload_next(w, 1, 0, &op, &err), 0);

	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	struct sfs_wl_result res;

	sfs_wl_result_init(&res, 2);
	sfs_workload_report(w, &res, out);
	fclose(out);
	assert_non_null(strstr(text, "8 operations replayed by 2 clients"));
	assert_non_null(strstr(text, "write 2"));
	assert_non_null(strstr(text, "truncate 1"));
	assert_non_null(strstr(text, "2 results differed from the recording; "
				     "first: line 6: write /d/f x: recorded 0, "
				     "replayed -ENOSPC"));
	free(text);
	sfs_wl_result_free(&res);
	sfs_workload_free(w);
}

static void test_trace_workload_without_data(void **state)
{
	char *err = NULL;
	struct sfs_workload *w = wl_new(*state, false, &err);
	struct sfs_wop op;

	assert_non_null(w);
	next_ok(w, 0, &op);
	next_ok(w, 0, &op);
	assert_int_equal(op.type, SFS_WOP_WRITE);
	assert_null(op.data); /* the runner makes the bytes */
	sfs_workload_free(w);
}

static void test_trace_workload_bad_input(void **state)
{
	const char *dir = *state;
	struct sfs_workload *w = NULL;
	char *err = NULL;
	char *p = put_file(dir, "bad.trace",
			   "# simfs-trace 1\n0 1 write fd=3 off=0 len=100 "
			   "data=0 rc=0 dur=1\n");
	char *spec = g_strdup_printf("trace,file=%s", p);

	/* no file= */
	assert_int_equal(sfs_workload_new("trace", &w, &err), -EINVAL);
	assert_non_null(strstr(err, "file="));
	g_free(err);
	err = NULL;
	/* data beyond the data file's end */
	g_free(put_file(dir, "bad.trace.data", "short"));
	assert_int_equal(sfs_workload_new(spec, &w, &err), -EINVAL);
	assert_non_null(strstr(err, "bad.trace:2: data=0 len=100"));
	g_free(err);
	err = NULL;
	g_free(spec);
	/* a data file named but missing */
	spec = g_strdup_printf("trace,file=%s,data=%s/nope", p, dir);
	assert_true(sfs_workload_new(spec, &w, &err) < 0);
	assert_non_null(strstr(err, "nope"));
	g_free(err);
	g_free(spec);
	g_free(p);
}

/* chain: 10 then 20 one after the other (one client, 20's think time the
 * gap after 10's end); 30 overlaps 20 and stays a client of its own. */
static void test_trace_workload_chain(void **state)
{
	static const char text[] =
	    "# simfs-trace 1\n"
	    "0 10 mkdir path=\"a\" mode=0755 rc=0 dur=100\n"
	    "250 30 stat path=\"a\" rc=0 dur=150\n"
	    "200 20 mkdir path=\"a/b\" mode=0755 rc=0 dur=50\n"
	    "260 20 rmdir path=\"a/b\" rc=0 dur=40\n";
	char *p = put_file(*state, "chain.trace", text);
	char *spec = g_strdup_printf("trace,file=%s,chain", p);
	struct sfs_workload *w = NULL;
	struct sfs_wop op;
	char *err = NULL;

	assert_int_equal(sfs_workload_new(spec, &w, &err), 0);
	assert_int_equal(sfs_workload_clients(w), 2);
	next_ok(w, 0, &op);
	assert_int_equal(op.type, SFS_WOP_MKDIR);
	assert_string_equal(op.path, "a");
	assert_int_equal(op.think_ns, 0);
	next_ok(w, 0, &op);
	assert_string_equal(op.path, "a/b");
	assert_int_equal(op.think_ns, 100); /* 200 - (0 + 100) */
	next_ok(w, 0, &op);
	assert_int_equal(op.type, SFS_WOP_RMDIR);
	assert_int_equal(op.think_ns, 10);
	assert_int_equal(sfs_workload_next(w, 0, 0, &op, &err), 0);
	next_ok(w, 1, &op);
	assert_int_equal(op.type, SFS_WOP_STAT);
	assert_int_equal(op.think_ns, 250);
	assert_int_equal(sfs_workload_next(w, 1, 0, &op, &err), 0);
	sfs_workload_free(w);
	g_free(spec);

	/* without chain: one client per process, in first-seen order */
	spec = g_strdup_printf("trace,file=%s", p);
	assert_int_equal(sfs_workload_new(spec, &w, &err), 0);
	assert_int_equal(sfs_workload_clients(w), 3);
	next_ok(w, 1, &op);
	assert_int_equal(op.type, SFS_WOP_STAT);
	next_ok(w, 2, &op);
	assert_string_equal(op.path, "a/b");
	assert_int_equal(op.think_ns, 200);
	sfs_workload_free(w);
	g_free(spec);
	g_free(p);
}

/* ---- the recorder ---- */

static void test_trace_recorder_paths(void **state)
{
	const char *dir = *state;
	char *path = g_build_filename(dir, "rec.trace", NULL);
	struct sfs_clock *clk = sfs_clock_new_virtual();
	struct sfs_trace_recorder *rec;
	struct sfs_trace_rec r;
	char *err = NULL, *p, *text = NULL;
	struct recs got;

	sfs_clock_advance(clk, 5000);
	assert_int_equal(sfs_trace_recorder_new(path, clk, &rec, &err), 0);
	sfs_clock_advance(clk, 250);
	assert_int_equal(sfs_trace_now(rec), 250);

	sfs_trace_learn(rec, 10, 1, "a");
	sfs_trace_learn(rec, 11, 10, "b c");
	sfs_trace_learn(rec, 12, 11, "f");
#define PATH_IS(ino, name, want)                                               \
	do {                                                                   \
		p = sfs_trace_path(rec, ino, name);                            \
		assert_string_equal(p, want);                                  \
		g_free(p);                                                     \
	} while (0)
	PATH_IS(1, NULL, ".");
	PATH_IS(1, "new", "new");
	PATH_IS(12, NULL, "a/b c/f");
	PATH_IS(11, "g", "a/b c/g");
	PATH_IS(99, NULL, "?ino/99");
	/* a directory moves: its descendants follow */
	sfs_trace_moved(rec, 10, "b c", 1, "top", false);
	PATH_IS(12, NULL, "top/f");
	/* an exchange swaps two names */
	sfs_trace_learn(rec, 13, 1, "other");
	sfs_trace_moved(rec, 1, "top", 1, "other", true);
	PATH_IS(12, NULL, "other/f");
	PATH_IS(13, NULL, "top");
	/* a rename over an existing name: the replaced inode is forgotten */
	sfs_trace_moved(rec, 1, "top", 10, "x", false);
	PATH_IS(13, NULL, "a/x");
	/* unlink drops the name; a hard link's latest name is the path */
	sfs_trace_learn(rec, 12, 1, "hard");
	PATH_IS(12, NULL, "hard");
	sfs_trace_unlearn(rec, 1, "hard");
	PATH_IS(12, NULL, "?ino/12");

	/* handles */
	int64_t fd = sfs_trace_open_handle(rec, 777);
	assert_true(fd >= 3);
	assert_int_equal(sfs_trace_open_handle(rec, 778), fd + 1);
	assert_int_equal(sfs_trace_handle_client(rec, fd, false), 777);
	assert_int_equal(sfs_trace_handle_client(rec, fd, true), 777);
	assert_int_equal(sfs_trace_handle_client(rec, fd, false), 0);

	sfs_trace_rec_init(&r);
	r.op = SFS_TOP_WRITE;
	r.fd = fd;
	r.off = 0;
	r.len = r.done = 3;
	r.t_ns = sfs_trace_now(rec);
	r.client = 777;
	sfs_trace_record(rec, &r, "abc");
	assert_int_equal(sfs_trace_recorder_free(rec), 0);
	assert_true(g_file_get_contents(path, &text, NULL, NULL));
	assert_int_equal(read_text(text, &got, &err), 0);
	assert_int_equal(got.n, 1);
	assert_int_equal(got.r[0].t_ns, 250);
	assert_int_equal(got.r[0].data_off, 0);
	recs_free(&got);
	g_free(text);
	sfs_clock_free(clk);
	g_free(path);
#undef PATH_IS
}

/* ---- the strace importer ---- */

static const char strace_text[] =
    "1001 1700000000.000100 openat(AT_FDCWD, \"/mnt/d/a b\", "
    "O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0644) = 3 <0.000040>\n"
    "1001 1700000000.000200 write(3, \"hello\\n\"..., 4096) = 4096 "
    "<0.000010>\n"
    "1002 1700000000.000250 openat(AT_FDCWD, \"/etc/ld.so.cache\", "
    "O_RDONLY|O_CLOEXEC) = 3 <0.000005>\n"
    "1002 1700000000.000260 read(3, \"x\", 10) = 10 <0.000001>\n"
    "1002 1700000000.000270 close(3) = 0 <0.000001>\n"
    "1001 1700000000.000300 fsync(3 <unfinished ...>\n"
    "1002 1700000000.000310 mkdir(\"/mnt/d/sub\", 0755) = 0 <0.000020>\n"
    "1001 1700000000.000900 <... fsync resumed>) = 0 <0.000600>\n"
    "1001 1700000000.001000 write(3, \"abc\", 3) = 3 <0.000002>\n"
    "1001 1700000000.001100 close(3) = 0 <0.000003>\n"
    "1002 1700000000.001200 openat(AT_FDCWD, \"/mnt/d/a b\", O_RDONLY) = 4 "
    "<0.000004>\n"
    "1002 1700000000.001300 read(4,  <unfinished ...>\n"
    "1001 1700000000.001350 unlink(\"/mnt/d/nope\") = -1 ENOENT (No such "
    "file or directory) <0.000005>\n"
    "1002 1700000000.001400 <... read resumed>\"hello\"..., 8192) = 4099 "
    "<0.000100>\n"
    "1002 1700000000.001500 pread64(4, \"\", 100, 5000) = 0 <0.000001>\n"
    "1002 1700000000.001600 close(4) = 0 <0.000001>\n"
    "1001 1700000000.001700 rename(\"/mnt/d/a b\", \"/mnt/d/c\") = 0 "
    "<0.000030>\n"
    "1001 1700000000.001800 newfstatat(AT_FDCWD, \"/mnt/d/c\", "
    "{st_mode=S_IFREG|0644, st_size=4099, ...}, 0) = 0 <0.000002>\n"
    "1002 1700000000.001900 unlinkat(AT_FDCWD, \"/mnt/d/sub\", "
    "AT_REMOVEDIR) = 0 <0.000010>\n"
    "1001 1700000000.002000 +++ exited with 0 +++\n"
    "--- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED} ---\n";

static void test_trace_import_strace(void **state)
{
	static const struct {
		enum sfs_trace_op op;
		uint64_t client;
		sfs_ns_t t_ns, dur_ns;
		const char *path, *path2;
		int64_t fd;
		uint64_t off, len, done;
		int result;
	} want[] = {
	    {SFS_TOP_OPEN, 1001, 0, 40000, "d/a b", NULL, 3, 0, 0, 0, 0},
	    {SFS_TOP_WRITE, 1001, 100000, 10000, NULL, NULL, 3, 0, 4096, 4096,
	     0},
	    /* the fsync is written when it finishes, after the mkdir */
	    {SFS_TOP_MKDIR, 1002, 210000, 20000, "d/sub", NULL, -1, 0, 0, 0, 0},
	    {SFS_TOP_FSYNC, 1001, 200000, 600000, NULL, NULL, 3, 0, 0, 0, 0},
	    {SFS_TOP_WRITE, 1001, 900000, 2000, NULL, NULL, 3, 4096, 3, 3, 0},
	    {SFS_TOP_CLOSE, 1001, 1000000, 3000, NULL, NULL, 3, 0, 0, 0, 0},
	    {SFS_TOP_OPEN, 1002, 1100000, 4000, "d/a b", NULL, 4, 0, 0, 0, 0},
	    {SFS_TOP_UNLINK, 1001, 1250000, 5000, "d/nope", NULL, -1, 0, 0, 0,
	     -ENOENT},
	    {SFS_TOP_READ, 1002, 1200000, 100000, NULL, NULL, 4, 0, 8192, 4099,
	     0},
	    {SFS_TOP_READ, 1002, 1400000, 1000, NULL, NULL, 4, 5000, 100, 0, 0},
	    {SFS_TOP_CLOSE, 1002, 1500000, 1000, NULL, NULL, 4, 0, 0, 0, 0},
	    {SFS_TOP_RENAME, 1001, 1600000, 30000, "d/a b", "d/c", -1, 0, 0, 0,
	     0},
	    {SFS_TOP_STAT, 1001, 1700000, 2000, "d/c", NULL, -1, 0, 0, 0, 0},
	    {SFS_TOP_RMDIR, 1002, 1800000, 10000, "d/sub", NULL, -1, 0, 0, 0,
	     0},
	};
	FILE *in = fmemopen((void *)strace_text, strlen(strace_text), "r");
	char *buf = NULL, *err = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	struct recs got;

	(void)state;
	assert_int_equal(sfs_trace_import_strace_root(in, out, "/mnt", &err),
			 0);
	fclose(in);
	fclose(out);
	assert_int_equal(read_text(buf, &got, &err), 0);
	if (got.n != sizeof(want) / sizeof(want[0]))
		print_error("%s", buf);
	assert_int_equal(got.n, sizeof(want) / sizeof(want[0]));
	for (unsigned i = 0; i < got.n; i++) {
		const struct sfs_trace_rec *r = &got.r[i];

		if (r->op != want[i].op || r->t_ns != want[i].t_ns)
			print_error("record %u: %s", i, buf);
		assert_int_equal(r->op, want[i].op);
		assert_int_equal(r->client, want[i].client);
		assert_int_equal(r->t_ns, want[i].t_ns);
		assert_int_equal(r->dur_ns, want[i].dur_ns);
		assert_str_eq_null(r->path, want[i].path);
		assert_str_eq_null(r->path2, want[i].path2);
		assert_int_equal(r->fd, want[i].fd);
		if (r->op == SFS_TOP_READ || r->op == SFS_TOP_WRITE) {
			assert_int_equal(r->off, want[i].off);
			assert_int_equal(r->len, want[i].len);
			assert_int_equal(r->done, want[i].done);
		}
		assert_int_equal(r->result, want[i].result);
	}
	assert_int_equal(got.r[0].flags, O_WRONLY | O_CREAT | O_TRUNC);
	assert_int_equal(got.r[0].mode, 0644);
	recs_free(&got);
	free(buf);

	/* without a root, every path is kept, without its leading '/' */
	in = fmemopen((void *)strace_text, strlen(strace_text), "r");
	buf = NULL;
	out = open_memstream(&buf, &len);
	assert_int_equal(sfs_trace_import_strace(in, out, &err), 0);
	fclose(in);
	fclose(out);
	assert_non_null(strstr(buf, "path=\"etc/ld.so.cache\""));
	assert_non_null(strstr(buf, "path=\"mnt/d/a%20b\""));
	free(buf);

	/* text without -ttt time stamps */
	static const char no_ttt[] = "openat(AT_FDCWD, \"/x\", O_RDONLY) = 3\n";
	in = fmemopen((void *)no_ttt, strlen(no_ttt), "r");
	buf = NULL;
	out = open_memstream(&buf, &len);
	assert_int_equal(sfs_trace_import_strace(in, out, &err), -EINVAL);
	assert_true(g_str_has_prefix(err, "1: "));
	assert_non_null(strstr(err, "-ttt"));
	g_free(err);
	fclose(in);
	fclose(out);
	free(buf);
}

/* A shell's redirection: the file opened as fd 3 becomes fd 1, a child
 * inherits it and copies into it with copy_file_range, relative names
 * follow chdir, and the descriptors of a process that exits are closed. */
static const char strace_shell[] =
    "2001 1700000001.000000 chdir(\"/mnt/w\") = 0 <0.000010>\n"
    "2001 1700000001.000100 openat(AT_FDCWD, \"out\", "
    "O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3 <0.000010>\n"
    "2001 1700000001.000200 dup2(3, 1) = 1 <0.000001>\n"
    "2001 1700000001.000300 close(3) = 0 <0.000001>\n"
    "2002 1700000001.000400 openat(AT_FDCWD, \"in\", O_RDONLY) = 3 "
    "<0.000010>\n"
    "2002 1700000001.000500 copy_file_range(3, NULL, 1, NULL, "
    "9223372035781033984, 0) = 10 <0.000020>\n"
    "2002 1700000001.000600 +++ exited with 0 +++\n"
    "2001 1700000001.000700 dup2(10, 1) = 1 <0.000001>\n";

static void test_trace_import_strace_shell(void **state)
{
	static const struct {
		enum sfs_trace_op op;
		uint64_t client;
		sfs_ns_t t_ns;
		const char *path;
		int64_t fd;
		uint64_t len, done;
	} want[] = {
	    {SFS_TOP_OPEN, 2001, 100000, "w/out", 3, 0, 0},
	    {SFS_TOP_OPEN, 2002, 400000, "w/in", 4, 0, 0},
	    {SFS_TOP_READ, 2002, 500000, NULL, 4, 1 << 20, 10},
	    {SFS_TOP_WRITE, 2002, 500000, NULL, 3, 10, 10},
	    {SFS_TOP_CLOSE, 2002, 600000, NULL, 4, 0, 0},
	    {SFS_TOP_CLOSE, 2001, 700000, NULL, 3, 0, 0},
	};
	FILE *in = fmemopen((void *)strace_shell, strlen(strace_shell), "r");
	char *buf = NULL, *err = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	struct recs got;

	(void)state;
	assert_int_equal(sfs_trace_import_strace_root(in, out, "/mnt/", &err),
			 0);
	fclose(in);
	fclose(out);
	assert_int_equal(read_text(buf, &got, &err), 0);
	if (got.n != sizeof(want) / sizeof(want[0]))
		print_error("%s", buf);
	assert_int_equal(got.n, sizeof(want) / sizeof(want[0]));
	for (unsigned i = 0; i < got.n; i++) {
		assert_int_equal(got.r[i].op, want[i].op);
		assert_int_equal(got.r[i].client, want[i].client);
		assert_int_equal(got.r[i].t_ns, want[i].t_ns);
		assert_str_eq_null(got.r[i].path, want[i].path);
		assert_int_equal(got.r[i].fd, want[i].fd);
		if (want[i].op == SFS_TOP_READ || want[i].op == SFS_TOP_WRITE) {
			assert_int_equal(got.r[i].off, 0);
			assert_int_equal(got.r[i].len, want[i].len);
			assert_int_equal(got.r[i].done, want[i].done);
		}
	}
	recs_free(&got);
	free(buf);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_trace_round_trip),
	    cmocka_unit_test(test_trace_flags),
	    T(test_trace_data_file),
	    cmocka_unit_test(test_trace_newer_version_refused),
	    cmocka_unit_test(test_trace_malformed_line),
	    T(test_trace_workload_clients),
	    T(test_trace_workload_without_data),
	    T(test_trace_workload_bad_input),
	    T(test_trace_workload_chain),
	    T(test_trace_recorder_paths),
	    cmocka_unit_test(test_trace_import_strace),
	    cmocka_unit_test(test_trace_import_strace_shell),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
