/*
 * test_blockdev.c - the backing device door and its backends.
 *
 * File backend: round trip through a sparse image, exclusive open, range
 * checks, O_DIRECT with unaligned buffers, zeroing.  Door: the hook sees
 * every request with its category (before and after) and can fail one;
 * the counters equal what was issued.  Test devices: the RAM device's log
 * and the fault device's nth / sticky failures.
 *
 * Files live in a private directory under $TMPDIR, removed by the fixture.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "blockdev.h"
#include "clock.h"
#include "crashdev.h"
#include "testsupport.h"
#include "timedev.h"

struct fixture {
	char *dir;  /* private temp dir */
	char *path; /* image file inside it */
};

static int setup(void **state)
{
	struct fixture *f = g_new0(struct fixture, 1);
	GError *gerr = NULL;

	f->dir = g_dir_make_tmp("simfs-bdev-XXXXXX", &gerr);
	if (!f->dir) {
		print_error("tmpdir: %s\n", gerr->message);
		g_error_free(gerr);
		g_free(f);
		return -1;
	}
	f->path = g_build_filename(f->dir, "img", NULL);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	GDir *d = g_dir_open(f->dir, 0, NULL);
	const char *name;

	while (d && (name = g_dir_read_name(d))) {
		char *p = g_build_filename(f->dir, name, NULL);

		g_unlink(p);
		g_free(p);
	}
	if (d)
		g_dir_close(d);
	g_rmdir(f->dir);
	g_free(f->path);
	g_free(f->dir);
	g_free(f);
	return 0;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

/* ---- file backend ---- */

static void test_blockdev_file_roundtrip(void **state)
{
	struct fixture *f = *state;
	struct sfs_bdev *bd;
	uint8_t wbuf[8192], rbuf[8192];
	struct stat st;

	assert_int_equal(
	    sfs_bdev_open_file(f->path, SFS_BDEV_CREATE, 4 << 20, &bd), 0);
	assert_string_equal(sfs_bdev_name(bd), "file");
	assert_int_equal(sfs_bdev_size_bytes(bd), 4 << 20);
	assert_true(sfs_bdev_known_zero(bd));

	fill(wbuf, sizeof(wbuf), 1);
	assert_int_equal(sfs_bdev_write(bd, SFS_IO_DATA, 4096, wbuf, 8192), 0);
	assert_false(sfs_bdev_known_zero(bd));
	fill(wbuf, 100, 2);
	assert_int_equal(
	    sfs_bdev_write(bd, SFS_IO_INODE, (4 << 20) - 100, wbuf, 100), 0);
	assert_int_equal(sfs_bdev_flush(bd), 0);
	sfs_bdev_close(bd);

	/* Reopen without CREATE: same size, same bytes, holes read zero. */
	assert_int_equal(sfs_bdev_open_file(f->path, 0, 0, &bd), 0);
	assert_int_equal(sfs_bdev_size_bytes(bd), 4 << 20);
	assert_false(sfs_bdev_known_zero(bd));
	assert_int_equal(sfs_bdev_read(bd, SFS_IO_DATA, 4096, rbuf, 8192), 0);
	fill(wbuf, sizeof(wbuf), 1);
	assert_memory_equal(rbuf, wbuf, 8192);
	assert_int_equal(
	    sfs_bdev_read(bd, SFS_IO_DATA, (4 << 20) - 100, rbuf, 100), 0);
	fill(wbuf, 100, 2);
	assert_memory_equal(rbuf, wbuf, 100);
	assert_int_equal(sfs_bdev_read(bd, SFS_IO_DATA, 1 << 20, rbuf, 4096),
			 0);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(rbuf[i], 0);
	sfs_bdev_close(bd);

	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_size, 4 << 20);
}

static void test_blockdev_create_is_sparse(void **state)
{
	struct fixture *f = *state;
	struct sfs_bdev *bd;
	struct stat st;

	assert_int_equal(
	    sfs_bdev_open_file(f->path, SFS_BDEV_CREATE, 1ull << 30, &bd), 0);
	assert_int_equal(sfs_bdev_size_bytes(bd), 1ull << 30);
	sfs_bdev_close(bd);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_size, 1ull << 30);
	assert_true(st.st_blocks * 512 < (1 << 20));

	/* Extending an existing non-empty file: not known to be zero. */
	assert_int_equal(sfs_bdev_open_file(f->path, 0, 0, &bd), 0);
	assert_int_equal(sfs_bdev_write(bd, SFS_IO_DATA, 0, "x", 1), 0);
	sfs_bdev_close(bd);
	assert_int_equal(
	    sfs_bdev_open_file(f->path, SFS_BDEV_CREATE, 2ull << 30, &bd), 0);
	assert_int_equal(sfs_bdev_size_bytes(bd), 2ull << 30);
	assert_false(sfs_bdev_known_zero(bd));
	sfs_bdev_close(bd);
}

static void test_blockdev_open_errors(void **state)
{
	struct fixture *f = *state;
	struct sfs_bdev *bd = NULL;

	assert_int_equal(sfs_bdev_open_file(f->path, 0, 0, &bd), -ENOENT);
	assert_int_equal(sfs_bdev_open_file(f->path,
					    SFS_BDEV_RDONLY | SFS_BDEV_CREATE,
					    1 << 20, &bd),
			 -EINVAL);
	assert_int_equal(sfs_bdev_open_file(f->path, 0x100, 0, &bd), -EINVAL);
	assert_true(sfs_bdev_open_file(f->dir, 0, 0, &bd) < 0);
	assert_null(bd);

	/* A read-only device refuses writes with -EIO, reads fine. */
	assert_int_equal(
	    sfs_bdev_open_file(f->path, SFS_BDEV_CREATE, 1 << 20, &bd), 0);
	sfs_bdev_close(bd);
	assert_int_equal(sfs_bdev_open_file(f->path, SFS_BDEV_RDONLY, 0, &bd),
			 0);
	uint8_t b[512];
	assert_int_equal(sfs_bdev_read(bd, SFS_IO_DATA, 0, b, 512), 0);
	assert_int_equal(sfs_bdev_write(bd, SFS_IO_DATA, 0, b, 512), -EIO);
	sfs_bdev_close(bd);
}

static void test_blockdev_excl_refuses_second_opener(void **state)
{
	struct fixture *f = *state;
	struct sfs_bdev *a, *b = NULL;

	assert_int_equal(sfs_bdev_open_file(f->path,
					    SFS_BDEV_CREATE | SFS_BDEV_EXCL,
					    1 << 20, &a),
			 0);
	assert_int_equal(sfs_bdev_open_file(f->path, SFS_BDEV_EXCL, 0, &b),
			 -EBUSY);
	assert_null(b);
	assert_int_equal(
	    sfs_bdev_open_file(f->path, SFS_BDEV_EXCL | SFS_BDEV_RDONLY, 0, &b),
	    -EBUSY);
	sfs_bdev_close(a);
	/* Released on close. */
	assert_int_equal(sfs_bdev_open_file(f->path, SFS_BDEV_EXCL, 0, &b), 0);
	sfs_bdev_close(b);
}

static void test_blockdev_out_of_range_einval(void **state)
{
	struct fixture *f = *state;
	struct sfs_bdev_counters ctr;
	struct sfs_bdev *bd;
	uint8_t buf[2048] = {0};

	assert_int_equal(
	    sfs_bdev_open_file(f->path, SFS_BDEV_CREATE, 1 << 20, &bd), 0);
	assert_int_equal(
	    sfs_bdev_read(bd, SFS_IO_DATA, (1 << 20) - 1024, buf, 2048),
	    -EINVAL);
	assert_int_equal(sfs_bdev_write(bd, SFS_IO_DATA, 1 << 20, buf, 1),
			 -EINVAL);
	assert_int_equal(
	    sfs_bdev_write(bd, SFS_IO_DATA, UINT64_MAX - 10, buf, 100),
	    -EINVAL);
	assert_int_equal(sfs_bdev_read(bd, SFS_IO_DATA, 0, buf, 0), -EINVAL);
	assert_int_equal(sfs_bdev_zero(bd, SFS_IO_OTHER, 1 << 19, 1 << 20),
			 -EINVAL);
	/* Exactly up to the end is fine. */
	assert_int_equal(
	    sfs_bdev_read(bd, SFS_IO_DATA, (1 << 20) - 2048, buf, 2048), 0);
	sfs_bdev_counters(bd, &ctr);
	assert_int_equal(ctr.errors, 5);
	assert_int_equal(ctr.reqs[SFS_IO_READ], 1);
	assert_int_equal(ctr.reqs[SFS_IO_WRITE], 0);
	sfs_bdev_close(bd);
}

static void test_blockdev_direct_unaligned_buffer(void **state)
{
	struct fixture *f = *state;
	struct sfs_bdev *bd, *plain;
	uint8_t *raw = g_malloc(3 * 4096 + 64);
	uint8_t *wbuf = raw + 3; /* deliberately misaligned */
	uint8_t *rbuf = (uint8_t *)g_malloc(3 * 4096 + 64) + 5;
	uint8_t check[1536];
	int rc;

	rc = sfs_bdev_open_file(f->path, SFS_BDEV_CREATE | SFS_BDEV_DIRECT,
				4 << 20, &bd);
	if (rc == -EINVAL) {
		print_message("# O_DIRECT refused by the filesystem of %s: "
			      "skipping\n",
			      f->dir);
		g_free(raw);
		g_free(rbuf - 5);
		skip();
	}
	assert_int_equal(rc, 0);

	fill(wbuf, 3 * 4096, 9);
	/* Unaligned buffer, 512-aligned offset and length. */
	assert_int_equal(sfs_bdev_write(bd, SFS_IO_DATA, 512, wbuf, 1536), 0);
	assert_int_equal(sfs_bdev_read(bd, SFS_IO_DATA, 512, rbuf, 1536), 0);
	assert_memory_equal(rbuf, wbuf, 1536);
	/* Large unaligned transfer crossing the bounce buffer size. */
	uint8_t *big = g_malloc((3 << 19) + 1);
	uint8_t *big2 = g_malloc((3 << 19) + 1);
	fill(big + 1, 3 << 19, 4);
	assert_int_equal(
	    sfs_bdev_write(bd, SFS_IO_DATA, 8192, big + 1, 3 << 19), 0);
	assert_int_equal(
	    sfs_bdev_read(bd, SFS_IO_DATA, 8192, big2 + 1, 3 << 19), 0);
	assert_memory_equal(big + 1, big2 + 1, 3 << 19);
	/* Offsets or lengths not multiples of 512 are refused. */
	assert_int_equal(sfs_bdev_write(bd, SFS_IO_DATA, 100, wbuf, 512),
			 -EINVAL);
	assert_int_equal(sfs_bdev_read(bd, SFS_IO_DATA, 0, rbuf, 700), -EINVAL);
	assert_int_equal(sfs_bdev_flush(bd), 0);
	sfs_bdev_close(bd);

	/* What O_DIRECT wrote is what a buffered reader sees. */
	assert_int_equal(sfs_bdev_open_file(f->path, 0, 0, &plain), 0);
	assert_int_equal(sfs_bdev_read(plain, SFS_IO_DATA, 512, check, 1536),
			 0);
	assert_memory_equal(check, wbuf, 1536);
	sfs_bdev_close(plain);
	g_free(big);
	g_free(big2);
	g_free(raw);
	g_free(rbuf - 5);
}

static void test_blockdev_zero_range(void **state)
{
	struct fixture *f = *state;
	struct sfs_bdev *bd;
	uint8_t buf[16384], z[16384] = {0};
	struct sfs_bdev_counters ctr;

	assert_int_equal(
	    sfs_bdev_open_file(f->path, SFS_BDEV_CREATE, 1 << 20, &bd), 0);
	fill(buf, sizeof(buf), 3);
	assert_int_equal(sfs_bdev_write(bd, SFS_IO_DATA, 0, buf, 16384), 0);
	assert_int_equal(sfs_bdev_zero(bd, SFS_IO_OTHER, 4096, 8192), 0);
	assert_int_equal(sfs_bdev_read(bd, SFS_IO_DATA, 0, buf, 16384), 0);
	assert_memory_equal(buf + 4096, z, 8192);
	uint8_t ref[16384];
	fill(ref, sizeof(ref), 3);
	assert_memory_equal(buf, ref, 4096);
	assert_memory_equal(buf + 12288, ref + 12288, 4096);
	sfs_bdev_counters(bd, &ctr);
	assert_int_equal(ctr.reqs[SFS_IO_WRITE], 2);
	assert_int_equal(ctr.cat_bytes[SFS_IO_WRITE][SFS_IO_OTHER], 8192);
	sfs_bdev_close(bd);
}

/* ---- the door: hook and counters ---- */

struct hook_rec {
	struct sfs_io_req req;
	bool done;
	int result;
};

struct hook_state {
	GArray *recs;		  /* struct hook_rec */
	enum sfs_io_cat fail_cat; /* fail writes of this category */
	bool fail;
};

static int record_hook(void *arg, const struct sfs_io_req *req, bool done,
		       int result)
{
	struct hook_state *h = arg;
	struct hook_rec r = {*req, done, result};

	g_array_append_val(h->recs, r);
	if (!done && h->fail && req->op == SFS_IO_WRITE &&
	    req->cat == h->fail_cat)
		return -EIO;
	return 0;
}

static void test_blockdev_hook_sees_categories_and_can_fail(void **state)
{
	struct sfs_bdev *bd = sfs_ramdev_new(1 << 20);
	struct hook_state h = {
	    g_array_new(FALSE, FALSE, sizeof(struct hook_rec)), SFS_IO_BITMAP,
	    true};
	uint8_t buf[1024];
	struct hook_rec *r;
	size_t n;

	sfs_bdev_set_hook(bd, record_hook, &h);
	memset(buf, 0xAB, sizeof(buf));
	assert_int_equal(sfs_bdev_write(bd, SFS_IO_INODE, 1024, buf, 1024), 0);
	assert_int_equal(sfs_bdev_read(bd, SFS_IO_DIR, 0, buf, 512), 0);
	memset(buf, 0xCD, sizeof(buf));
	assert_int_equal(sfs_bdev_write(bd, SFS_IO_BITMAP, 4096, buf, 1024),
			 -EIO);
	assert_int_equal(sfs_bdev_flush(bd), 0);

	assert_int_equal(h.recs->len, 8);
	r = &g_array_index(h.recs, struct hook_rec, 0);
	assert_int_equal(r[0].req.op, SFS_IO_WRITE);
	assert_int_equal(r[0].req.cat, SFS_IO_INODE);
	assert_int_equal(r[0].req.off_bytes, 1024);
	assert_int_equal(r[0].req.len_bytes, 1024);
	assert_false(r[0].done);
	assert_true(r[1].done);
	assert_int_equal(r[1].result, 0);
	assert_int_equal(r[2].req.op, SFS_IO_READ);
	assert_int_equal(r[2].req.cat, SFS_IO_DIR);
	assert_int_equal(r[4].req.cat, SFS_IO_BITMAP);
	assert_false(r[4].done);
	assert_true(r[5].done);
	assert_int_equal(r[5].result, -EIO);
	assert_int_equal(r[6].req.op, SFS_IO_FLUSH);

	/* The failed write never reached the device. */
	assert_int_equal(sfs_ramdev_data(bd)[4096], 0);
	sfs_ramdev_log(bd, &n);
	assert_int_equal(n, 3); /* write, read, flush */

	struct sfs_bdev_counters ctr;
	sfs_bdev_counters(bd, &ctr);
	assert_int_equal(ctr.errors, 1);
	assert_int_equal(ctr.cat_reqs[SFS_IO_WRITE][SFS_IO_BITMAP], 1);

	/* Removing the hook: nothing more recorded. */
	sfs_bdev_set_hook(bd, NULL, NULL);
	assert_int_equal(sfs_bdev_write(bd, SFS_IO_BITMAP, 4096, buf, 1024), 0);
	assert_int_equal(h.recs->len, 8);
	assert_int_equal(sfs_ramdev_data(bd)[4096], 0xCD);
	g_array_free(h.recs, TRUE);
	sfs_bdev_close(bd);
}

static void test_blockdev_counters_match_requests(void **state)
{
	struct sfs_bdev *bd = sfs_ramdev_new(1 << 20);
	struct sfs_bdev_counters ctr;
	uint8_t buf[4096] = {0};

	for (int i = 0; i < 5; i++)
		assert_int_equal(
		    sfs_bdev_write(bd, SFS_IO_DATA, i * 4096ull, buf, 4096), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(
		    sfs_bdev_write(bd, SFS_IO_SUPER, 1024, buf, 1024), 0);
	for (int i = 0; i < 7; i++)
		assert_int_equal(sfs_bdev_read(bd, SFS_IO_GDT, 2048, buf, 2048),
				 0);
	assert_int_equal(sfs_bdev_zero(bd, SFS_IO_OTHER, 0, 65536), 0);
	assert_int_equal(sfs_bdev_flush(bd), 0);
	assert_int_equal(sfs_bdev_flush(bd), 0);

	sfs_bdev_counters(bd, &ctr);
	assert_int_equal(ctr.reqs[SFS_IO_WRITE], 9);
	assert_int_equal(ctr.bytes[SFS_IO_WRITE], 5 * 4096 + 3 * 1024 + 65536);
	assert_int_equal(ctr.reqs[SFS_IO_READ], 7);
	assert_int_equal(ctr.bytes[SFS_IO_READ], 7 * 2048);
	assert_int_equal(ctr.reqs[SFS_IO_FLUSH], 2);
	assert_int_equal(ctr.bytes[SFS_IO_FLUSH], 0);
	assert_int_equal(ctr.cat_reqs[SFS_IO_WRITE][SFS_IO_DATA], 5);
	assert_int_equal(ctr.cat_bytes[SFS_IO_WRITE][SFS_IO_DATA], 5 * 4096);
	assert_int_equal(ctr.cat_reqs[SFS_IO_WRITE][SFS_IO_SUPER], 3);
	assert_int_equal(ctr.cat_reqs[SFS_IO_WRITE][SFS_IO_OTHER], 1);
	assert_int_equal(ctr.cat_reqs[SFS_IO_READ][SFS_IO_GDT], 7);
	assert_int_equal(ctr.cat_bytes[SFS_IO_READ][SFS_IO_GDT], 7 * 2048);
	assert_int_equal(ctr.cat_reqs[SFS_IO_READ][SFS_IO_DATA], 0);
	assert_int_equal(ctr.errors, 0);
	sfs_bdev_close(bd);
}

static void test_blockdev_names(void **state)
{
	assert_string_equal(sfs_io_cat_name(SFS_IO_DATA), "data");
	assert_string_equal(sfs_io_cat_name(SFS_IO_BITMAP), "bitmap");
	assert_string_equal(sfs_io_cat_name(SFS_IO_JOURNAL), "journal");
	assert_string_equal(sfs_io_cat_name(SFS_IO_OTHER), "other");
	assert_string_equal(sfs_io_cat_name(SFS_IO_NCAT), "?");
	assert_string_equal(sfs_io_op_name(SFS_IO_READ), "read");
	assert_string_equal(sfs_io_op_name(SFS_IO_WRITE), "write");
	assert_string_equal(sfs_io_op_name(SFS_IO_FLUSH), "flush");
	for (int c = 0; c < SFS_IO_NCAT; c++)
		assert_string_not_equal(sfs_io_cat_name(c), "?");
}

/* ---- test devices ---- */

static void test_blockdev_ramdev_logs_every_request(void **state)
{
	struct sfs_bdev *bd = sfs_ramdev_new(1 << 20);
	const struct sfs_io_req *log;
	uint8_t buf[1024];
	size_t n;

	assert_true(sfs_bdev_known_zero(bd));
	memset(buf, 7, sizeof(buf));
	assert_int_equal(sfs_bdev_write(bd, SFS_IO_DIR, 3072, buf, 1024), 0);
	assert_false(sfs_bdev_known_zero(bd));
	assert_int_equal(sfs_bdev_read(bd, SFS_IO_XATTR, 3072, buf, 512), 0);
	assert_int_equal(sfs_bdev_flush(bd), 0);
	assert_int_equal(sfs_bdev_zero(bd, SFS_IO_OTHER, 3072, 512), 0);
	log = sfs_ramdev_log(bd, &n);
	assert_int_equal(n, 4);
	assert_int_equal(log[0].op, SFS_IO_WRITE);
	assert_int_equal(log[0].cat, SFS_IO_DIR);
	assert_int_equal(log[0].off_bytes, 3072);
	assert_int_equal(log[0].len_bytes, 1024);
	assert_int_equal(log[1].op, SFS_IO_READ);
	assert_int_equal(log[1].cat, SFS_IO_XATTR);
	assert_int_equal(log[1].len_bytes, 512);
	assert_int_equal(log[2].op, SFS_IO_FLUSH);
	assert_int_equal(log[3].op, SFS_IO_WRITE);
	assert_int_equal(log[3].cat, SFS_IO_OTHER);
	assert_int_equal(sfs_ramdev_data(bd)[3072], 0);
	assert_int_equal(sfs_ramdev_data(bd)[3584], 7);
	sfs_ramdev_clear_log(bd);
	sfs_ramdev_log(bd, &n);
	assert_int_equal(n, 0);
	sfs_bdev_close(bd);
}

static void test_blockdev_faultdev_fails_nth_once(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_bdev *fd = sfs_faultdev_new(ram);
	const struct sfs_io_req *log;
	uint8_t buf[512];
	size_t n;

	assert_true(sfs_bdev_known_zero(fd));
	memset(buf, 1, sizeof(buf));
	/* Unarmed: everything passes, categories reach the lower device. */
	assert_int_equal(sfs_bdev_write(fd, SFS_IO_INODE, 0, buf, 512), 0);
	log = sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 1);
	assert_int_equal(log[0].cat, SFS_IO_INODE);

	sfs_faultdev_arm(fd, SFS_FAULT_WRITE, 2, false);
	memset(buf, 2, sizeof(buf));
	assert_int_equal(sfs_bdev_write(fd, SFS_IO_DATA, 512, buf, 512), 0);
	assert_int_equal(sfs_bdev_read(fd, SFS_IO_DATA, 0, buf, 512), 0);
	memset(buf, 3, sizeof(buf));
	assert_int_equal(sfs_bdev_write(fd, SFS_IO_DATA, 1024, buf, 512), -EIO);
	assert_int_equal(sfs_bdev_write(fd, SFS_IO_DATA, 1536, buf, 512), 0);
	assert_int_equal(sfs_bdev_flush(fd), 0);
	assert_int_equal(sfs_faultdev_fired(fd), 1);
	/* The failed write never reached the RAM device. */
	assert_int_equal(sfs_ramdev_data(ram)[1024], 0);
	assert_int_equal(sfs_ramdev_data(ram)[1536], 3);
	assert_int_equal(sfs_ramdev_data(ram)[512], 2);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 5); /* w, w, r, w, flush */

	struct sfs_bdev_counters ctr;
	sfs_bdev_counters(fd, &ctr);
	assert_int_equal(ctr.errors, 1);
	sfs_bdev_close(fd); /* closes ram too */
}

static void test_blockdev_faultdev_sticky(void **state)
{
	struct sfs_bdev *fd = sfs_faultdev_new(sfs_ramdev_new(1 << 20));
	uint8_t buf[512] = {0};

	sfs_faultdev_arm(fd, SFS_FAULT_READ | SFS_FAULT_FLUSH, 2, true);
	assert_int_equal(sfs_bdev_read(fd, SFS_IO_DATA, 0, buf, 512), 0);
	assert_int_equal(sfs_bdev_write(fd, SFS_IO_DATA, 0, buf, 512), 0);
	assert_int_equal(sfs_bdev_flush(fd), -EIO);
	assert_int_equal(sfs_bdev_read(fd, SFS_IO_DATA, 0, buf, 512), -EIO);
	assert_int_equal(sfs_bdev_read(fd, SFS_IO_DATA, 0, buf, 512), -EIO);
	assert_int_equal(sfs_bdev_write(fd, SFS_IO_DATA, 0, buf, 512), 0);
	assert_int_equal(sfs_faultdev_fired(fd), 3);
	sfs_faultdev_disarm(fd);
	assert_int_equal(sfs_bdev_read(fd, SFS_IO_DATA, 0, buf, 512), 0);
	assert_int_equal(sfs_bdev_flush(fd), 0);
	/* Re-arming restarts the count. */
	sfs_faultdev_arm(fd, SFS_FAULT_WRITE, 1, false);
	assert_int_equal(sfs_bdev_zero(fd, SFS_IO_OTHER, 0, 512), -EIO);
	assert_int_equal(sfs_bdev_write(fd, SFS_IO_DATA, 0, buf, 512), 0);
	assert_int_equal(sfs_faultdev_fired(fd), 4);
	sfs_bdev_close(fd);
}

/* ---- vectored writes ---- */

/*
 * The stacks a vectored write must cross unchanged, each over a RAM
 * device: a fault device, a timing device, crash devices in every mode,
 * all of them at once, and a device without ops->writev (the overlay).
 */
enum wv_stack {
	WV_RAM,
	WV_FAULT,
	WV_TIME,
	WV_CRASH_CUT,
	WV_CRASH_TEAR,
	WV_CRASH_VOLATILE,
	WV_ALL,
	WV_OVERLAY,
	WV_NSTACKS
};

#define WV_DEV_BYTES (4u << 20)
#define WV_WRITES 12

struct wv_dev {
	struct sfs_bdev *top;
	struct sfs_bdev *ram;
	struct sfs_bdev *crash; /* or NULL */
	struct sfs_bdev *td;	/* or NULL */
	struct sfs_clock *clock;
	struct hook_state hook;
};

static void wv_open(struct wv_dev *d, enum wv_stack k)
{
	struct sfs_timedev_opts o = {.model = "hdd-2009",
				     .sched = "elevator",
				     .mode = SFS_TIMEDEV_ACCOUNT};
	struct sfs_bdev *bd;

	memset(d, 0, sizeof(*d));
	d->ram = sfs_ramdev_new(WV_DEV_BYTES);
	assert_non_null(d->ram);
	bd = d->ram;
	if (k == WV_FAULT || k == WV_ALL)
		bd = sfs_faultdev_new(bd);
	if (k >= WV_CRASH_CUT && k <= WV_ALL) {
		static const enum sfs_crash_mode m[] = {
		    SFS_CRASH_CUT, SFS_CRASH_TEAR, SFS_CRASH_VOLATILE,
		    SFS_CRASH_VOLATILE};

		bd = d->crash = sfs_crashdev_new(bd);
		sfs_crashdev_set_logging(bd, true);
		/* the tear falls on write 5 (two buffers), the cut late */
		sfs_crashdev_arm(bd, m[k - WV_CRASH_CUT],
				 k == WV_CRASH_TEAR ? 7 : WV_WRITES - 2, 42);
	}
	if (k == WV_TIME || k == WV_ALL) {
		d->clock = sfs_clock_new_virtual();
		assert_int_equal(sfs_timedev_new(bd, d->clock, &o, &d->td,
						 NULL),
				 0);
		bd = d->td;
	}
	if (k == WV_OVERLAY)
		bd = sfs_bdev_overlay_new(bd);
	d->top = bd;
	d->hook.recs = g_array_new(FALSE, FALSE, sizeof(struct hook_rec));
	sfs_bdev_set_hook(d->top, record_hook, &d->hook);
}

static void wv_close(struct wv_dev *d)
{
	sfs_bdev_close(d->top);
	if (d->clock)
		sfs_clock_free(d->clock);
	g_array_free(d->hook.recs, TRUE);
}

/*
 * Write i of the sequence: n_seg buffers of seg_len[] bytes at off_i.
 * Lengths are multiples of 512 (the tear unit) but of no block size.
 */
static void wv_shape(int i, uint64_t *off, int *nseg, size_t seg[4])
{
	static const size_t lens[] = {4096, 512, 8192, 1536, 65536, 3584};

	*nseg = 1 + i % 4;
	*off = (uint64_t)((i * 7) % 40) * 65536 + (uint64_t)(i % 3) * 512;
	for (int j = 0; j < *nseg; j++)
		seg[j] = lens[(i + j) % G_N_ELEMENTS(lens)];
}

/* Run the sequence on d, as single writes (gather) or vectored. */
static void wv_run(struct wv_dev *d, bool vectored)
{
	for (int i = 0; i < WV_WRITES; i++) {
		struct iovec iov[4];
		uint8_t *whole, *seg[4];
		size_t segl[4], total = 0;
		uint64_t off;
		int n, rc;

		wv_shape(i, &off, &n, segl);
		for (int j = 0; j < n; j++) {
			seg[j] = g_malloc(segl[j]);
			fill(seg[j], segl[j], (unsigned)(i * 4 + j + 1));
			iov[j].iov_base = seg[j];
			iov[j].iov_len = segl[j];
			total += segl[j];
		}
		if (vectored) {
			rc = sfs_bdev_writev(d->top, SFS_IO_DATA, off, iov, n);
		} else {
			whole = g_malloc(total);
			total = 0;
			for (int j = 0; j < n; j++) {
				memcpy(whole + total, seg[j], segl[j]);
				total += segl[j];
			}
			rc = sfs_bdev_write(d->top, SFS_IO_DATA, off, whole,
					    total);
			g_free(whole);
		}
		assert_int_equal(rc, 0);
		for (int j = 0; j < n; j++)
			g_free(seg[j]);
		if (i % 5 == 4)
			assert_int_equal(sfs_bdev_flush(d->top), 0);
	}
	if (d->crash)
		sfs_crashdev_crash_now(d->crash);
}

static void assert_req_equal(const struct sfs_io_req *a,
			     const struct sfs_io_req *b)
{
	assert_int_equal(a->op, b->op);
	assert_int_equal(a->cat, b->cat);
	assert_int_equal(a->off_bytes, b->off_bytes);
	assert_int_equal(a->len_bytes, b->len_bytes);
}

/* Everything a layer can see is the same on both stacks. */
static void wv_compare(struct wv_dev *a, struct wv_dev *b)
{
	const struct sfs_io_req *la, *lb;
	struct sfs_bdev_counters ca, cb;
	size_t na, nb;
	uint8_t *ra = g_malloc(WV_DEV_BYTES), *rb = g_malloc(WV_DEV_BYTES);

	/* the bytes, as the top device reads them and as they landed */
	assert_int_equal(sfs_bdev_read(a->top, SFS_IO_OTHER, 0, ra,
				       WV_DEV_BYTES),
			 0);
	assert_int_equal(sfs_bdev_read(b->top, SFS_IO_OTHER, 0, rb,
				       WV_DEV_BYTES),
			 0);
	assert_memory_equal(ra, rb, WV_DEV_BYTES);
	assert_memory_equal(sfs_ramdev_data(a->ram), sfs_ramdev_data(b->ram),
			    WV_DEV_BYTES);
	g_free(ra);
	g_free(rb);
	/* the requests at the bottom, in order */
	la = sfs_ramdev_log(a->ram, &na);
	lb = sfs_ramdev_log(b->ram, &nb);
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++)
		assert_req_equal(&la[i], &lb[i]);
	/* the requests at the top: hook and counters */
	assert_int_equal(a->hook.recs->len, b->hook.recs->len);
	for (guint i = 0; i < a->hook.recs->len; i++) {
		struct hook_rec *x = &g_array_index(a->hook.recs,
						    struct hook_rec, i);
		struct hook_rec *y = &g_array_index(b->hook.recs,
						    struct hook_rec, i);

		assert_req_equal(&x->req, &y->req);
		assert_int_equal(x->done, y->done);
		assert_int_equal(x->result, y->result);
	}
	sfs_bdev_counters(a->top, &ca);
	sfs_bdev_counters(b->top, &cb);
	assert_memory_equal(&ca, &cb, sizeof(ca));
	if (a->td) {
		struct sfs_timedev_counters ta, tb;

		assert_int_equal(sfs_timedev_counters(a->td, &ta), 0);
		assert_int_equal(sfs_timedev_counters(b->td, &tb), 0);
		assert_int_equal(ta.reqs[SFS_IO_WRITE], tb.reqs[SFS_IO_WRITE]);
		assert_int_equal(ta.bytes[SFS_IO_WRITE],
				 tb.bytes[SFS_IO_WRITE]);
		assert_int_equal(ta.dev_reqs[SFS_IO_WRITE],
				 tb.dev_reqs[SFS_IO_WRITE]);
		assert_int_equal(ta.busy_ns, tb.busy_ns);
		assert_true(ta.busy_ns > 0);
	}
	if (a->crash) {
		const struct sfs_crashdev_rec *xa, *xb;
		struct sfs_crashdev_counters ka, kb;

		xa = sfs_crashdev_log(a->crash, &na);
		xb = sfs_crashdev_log(b->crash, &nb);
		assert_int_equal(na, nb);
		assert_true(na > 0);
		for (size_t i = 0; i < na; i++) {
			assert_req_equal(&xa[i].req, &xb[i].req);
			assert_int_equal(xa[i].fate, xb[i].fate);
			assert_int_equal(xa[i].kept_bytes, xb[i].kept_bytes);
		}
		sfs_crashdev_counters(a->crash, &ka);
		sfs_crashdev_counters(b->crash, &kb);
		assert_memory_equal(&ka, &kb, sizeof(ka));
		assert_true(ka.crashed);
	}
}

/* Every stacked device: writev shows what one gathered write shows. */
static void test_blockdev_writev_same_as_write_on_every_stack(void **state)
{
	(void)state;
	for (int k = 0; k < WV_NSTACKS; k++) {
		struct wv_dev a, b;
		size_t n;

		wv_open(&a, k);
		wv_open(&b, k);
		wv_run(&a, false);
		wv_run(&b, true);
		/* most requests reached the bottom device; the overlay
		 * keeps its writes in memory */
		sfs_ramdev_log(b.ram, &n);
		if (k == WV_OVERLAY ? n != 0 : n < 5)
			fail_msg("stack %d: %zu requests below", k, n);
		wv_compare(&a, &b);
		wv_close(&a);
		wv_close(&b);
	}
}

/*
 * File backend: pwritev in IOV_MAX pieces, and with O_DIRECT from
 * segments the host cannot take as they are (bounced one by one).
 */
static void test_blockdev_file_writev(void **state)
{
	struct fixture *f = *state;
	const size_t nseg = 3000, segl = 512; /* more than IOV_MAX */
	struct iovec *iov = g_new(struct iovec, nseg);
	uint8_t *src = g_malloc(nseg * segl + 1);
	uint8_t *back = g_malloc(nseg * segl);

	fill(src, nseg * segl + 1, 9);
	for (unsigned direct = 0; direct < 2; direct++) {
		struct sfs_bdev *bd = NULL;
		struct sfs_bdev_counters c;
		int rc;

		rc = sfs_bdev_open_file(f->path,
					SFS_BDEV_CREATE |
					    (direct ? SFS_BDEV_DIRECT : 0),
					8u << 20, &bd);
		if (rc == -EINVAL && direct)
			break; /* the host fs refuses O_DIRECT: tested above */
		assert_int_equal(rc, 0);
		/* odd buffer addresses: O_DIRECT must bounce them */
		for (size_t i = 0; i < nseg; i++) {
			iov[i].iov_base = src + 1 + (i * 7919 % nseg) * segl;
			iov[i].iov_len = segl;
		}
		assert_int_equal(sfs_bdev_writev(bd, SFS_IO_DATA, 4096, iov,
						 (int)nseg),
				 0);
		assert_int_equal(sfs_bdev_read(bd, SFS_IO_DATA, 4096, back,
					       nseg * segl),
				 0);
		for (size_t i = 0; i < nseg; i++)
			assert_memory_equal(back + i * segl, iov[i].iov_base,
					    segl);
		sfs_bdev_counters(bd, &c);
		assert_int_equal(c.reqs[SFS_IO_WRITE], 1);
		assert_int_equal(c.bytes[SFS_IO_WRITE], nseg * segl);
		sfs_bdev_close(bd);
	}
	g_free(iov);
	g_free(src);
	g_free(back);
}

/* Malformed vectors: -EINVAL, counted as errors, nothing written. */
static void test_blockdev_writev_rejects_bad_vectors(void **state)
{
	struct sfs_bdev *bd = sfs_ramdev_new(1 << 20);
	uint8_t buf[1024];
	struct iovec ok = {buf, sizeof(buf)};
	struct iovec nullbase[2] = {{buf, 512}, {NULL, 512}};
	struct iovec past[2] = {{buf, 1024}, {buf, 1024}};
	struct sfs_bdev_counters c;
	size_t n;

	(void)state;
	memset(buf, 0xa5, sizeof(buf));
	assert_int_equal(sfs_bdev_writev(bd, SFS_IO_DATA, 0, &ok, 0), -EINVAL);
	assert_int_equal(sfs_bdev_writev(bd, SFS_IO_DATA, 0, NULL, 1),
			 -EINVAL);
	assert_int_equal(sfs_bdev_writev(bd, SFS_IO_DATA, 0, nullbase, 2),
			 -EINVAL);
	assert_int_equal(sfs_bdev_writev(bd, SFS_IO_DATA, (1 << 20) - 1024,
					 past, 2),
			 -EINVAL);
	sfs_bdev_counters(bd, &c);
	assert_int_equal(c.errors, 4);
	assert_int_equal(c.reqs[SFS_IO_WRITE], 0);
	sfs_ramdev_log(bd, &n);
	assert_int_equal(n, 0);
	assert_int_equal(sfs_bdev_writev(bd, SFS_IO_DATA, 0, &ok, 1), 0);
	assert_memory_equal(sfs_ramdev_data(bd), buf, sizeof(buf));
	sfs_bdev_close(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_blockdev_file_roundtrip, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_blockdev_create_is_sparse,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_blockdev_open_errors, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(
		test_blockdev_excl_refuses_second_opener, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_blockdev_out_of_range_einval,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_blockdev_direct_unaligned_buffer, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_blockdev_zero_range, setup,
					    teardown),
	    cmocka_unit_test(test_blockdev_hook_sees_categories_and_can_fail),
	    cmocka_unit_test(test_blockdev_counters_match_requests),
	    cmocka_unit_test(test_blockdev_names),
	    cmocka_unit_test(test_blockdev_ramdev_logs_every_request),
	    cmocka_unit_test(test_blockdev_faultdev_fails_nth_once),
	    cmocka_unit_test(test_blockdev_faultdev_sticky),
	    cmocka_unit_test(test_blockdev_writev_same_as_write_on_every_stack),
	    cmocka_unit_test_setup_teardown(test_blockdev_file_writev, setup,
					    teardown),
	    cmocka_unit_test(test_blockdev_writev_rejects_bad_vectors),
	};

	return cmocka_run_group_tests_name("blockdev", tests, NULL, NULL);
}
