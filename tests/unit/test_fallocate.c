/*
 * test_fallocate.c - fallocate on extent-mapped files (sfs_fallocate,
 * models/alloc/extent.c sfs_extent_prealloc): the holes of the range get
 * blocks as unwritten extents that read as zeros; i_size grows unless
 * KEEP_SIZE; data already there stays; writes convert in place; block-
 * mapped files and other modes are refused; ENOSPC keeps what was
 * allocated; under delayed allocation a write into preallocated space
 * needs no reservation, so it succeeds on a full filesystem.  Every case
 * ends with e2fsck -fn clean.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fs_priv.h"
#include "testsupport.h"

#define MiB (1024ull * 1024)

static void fill(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off, size_t len,
		 uint8_t v)
{
	uint8_t *buf = g_malloc(len);
	size_t done;

	memset(buf, v, len);
	assert_int_equal(sfs_write(fs, ino, off, buf, len, &done), 0);
	assert_int_equal(done, len);
	g_free(buf);
}

/* Bytes [off, off+len) of ino all equal v. */
static void expect(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off,
		   size_t len, uint8_t v)
{
	uint8_t *buf = g_malloc(len);
	size_t got;

	assert_int_equal(sfs_read(fs, ino, off, len, buf, &got), 0);
	assert_int_equal(got, len);
	for (size_t i = 0; i < len; i++)
		if (buf[i] != v)
			fail_msg("byte %" PRIu64 ": %u, want %u", off + i,
				 buf[i], v);
	g_free(buf);
}

/* Unwritten blocks among the first nblk of ino (the map without create). */
static uint32_t unwritten_blocks(struct sfs_fs *fs, sfs_ino_t ino,
				 uint32_t nblk)
{
	struct sfs_inode *ip;
	uint32_t n = 0;

	sfs_lock(fs);
	assert_int_equal(sfs_iget(fs, ino, &ip), 0);
	for (uint32_t l = 0; l < nblk; l++) {
		sfs_blk_t p;
		bool u = false;
		assert_int_equal(sfs_imap(fs, ip)->map(fs, ip, l, false, &p, &u),
				 0);
		n += u;
	}
	sfs_iput(fs, ip);
	sfs_unlock(fs);
	return n;
}

static void test_fallocate_basic(void **state)
{
	(void)state;
	struct sfs_tfs *t = sfs_tfs_new(4096, 64 * MiB, "alloc=extent");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "f");
	uint64_t free0;
	struct sfs_attr a;

	fill(fs, f, 0, 8192, 0x11); /* two blocks of data first */
	free0 = sfs_test_free_blocks(fs);
	assert_int_equal(sfs_fallocate(fs, f, 0, 0, MiB), 0);
	/* 256 blocks covered, 254 new, all of them unwritten */
	assert_int_equal(sfs_test_free_blocks(fs), free0 - 254);
	assert_int_equal(unwritten_blocks(fs, f, 256), 254);
	assert_int_equal(sfs_getattr(fs, f, &a), 0);
	assert_int_equal(a.size, MiB);
	assert_int_equal(a.blocks, 256 * 8);
	expect(fs, f, 0, 8192, 0x11);
	expect(fs, f, 8192, MiB - 8192, 0);
	/* writes convert in place: no new block */
	fill(fs, f, 100 * 4096 + 10, 3 * 4096, 0x22);
	assert_int_equal(sfs_test_free_blocks(fs), free0 - 254);
	assert_int_equal(unwritten_blocks(fs, f, 256), 250);
	expect(fs, f, 100 * 4096 + 10, 3 * 4096, 0x22);
	expect(fs, f, 100 * 4096, 10, 0);
	expect(fs, f, 103 * 4096 + 10, 4096 - 10, 0);
	/* again over the same range: nothing more to allocate */
	assert_int_equal(sfs_fallocate(fs, f, 0, 0, MiB), 0);
	assert_int_equal(sfs_test_free_blocks(fs), free0 - 254);
	assert_int_equal(sfs_release(fs, f), 0);
	sfs_tfs_cycle(t);
	expect(t->fs, f, 0, 8192, 0x11);
	expect(t->fs, f, 100 * 4096 + 10, 3 * 4096, 0x22);
	expect(t->fs, f, 200 * 4096, 4096, 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_fallocate_keep_size(void **state)
{
	(void)state;
	struct sfs_tfs *t = sfs_tfs_new(1024, 32 * MiB, "alloc=mballoc");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "k");
	uint64_t free0 = sfs_test_free_blocks(fs);
	struct sfs_attr a;

	assert_int_equal(sfs_fallocate(fs, f, SFS_FALLOC_KEEP_SIZE, 5000,
				       100000),
			 0);
	assert_int_equal(sfs_getattr(fs, f, &a), 0);
	assert_int_equal(a.size, 0);
	/* bytes 5000..104999: blocks 4..102 */
	assert_true(free0 - sfs_test_free_blocks(fs) >= 99);
	/* appending writes land in the preallocated blocks */
	fill(fs, f, 0, 20000, 0x33);
	assert_int_equal(sfs_getattr(fs, f, &a), 0);
	assert_int_equal(a.size, 20000);
	expect(fs, f, 0, 20000, 0x33);
	assert_int_equal(sfs_release(fs, f), 0);
	sfs_tfs_cycle(t);
	expect(t->fs, f, 0, 20000, 0x33);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_fallocate_refused(void **state)
{
	(void)state;
	struct sfs_tfs *t = sfs_tfs_new(4096, 32 * MiB, "alloc=blockmap");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "b");
	struct sfs_attr d;

	assert_int_equal(sfs_fallocate(fs, f, 0, 0, 4096), -EOPNOTSUPP);
	assert_int_equal(sfs_release(fs, f), 0);
	sfs_tfs_close(t);
	t->fs = sfs_test_open(t->img, "alloc=extent");
	fs = t->fs;
	sfs_ino_t e = sfs_test_mkfile(fs, SFS_ROOT_INO, "e");
	assert_int_equal(sfs_fallocate(fs, e, 0x02 /* punch hole */, 0, 4096),
			 -EOPNOTSUPP);
	assert_int_equal(sfs_fallocate(fs, e, 0, 0, 0), -EINVAL);
	assert_int_equal(sfs_fallocate(fs, e, 0, UINT64_MAX - 10, 100),
			 -EFBIG);
	assert_int_equal(sfs_mkdir(fs, SFS_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	assert_int_equal(sfs_fallocate(fs, d.ino, 0, 0, 4096), -EISDIR);
	/* the old block-mapped file stays block-mapped under alloc=extent */
	assert_int_equal(sfs_open(fs, f, O_RDWR), 0);
	assert_int_equal(sfs_fallocate(fs, f, 0, 0, 4096), -EOPNOTSUPP);
	assert_int_equal(sfs_release(fs, f), 0);
	assert_int_equal(sfs_release(fs, e), 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* More than is free: -ENOSPC, what was allocated stays, all consistent. */
static void test_fallocate_enospc(void **state)
{
	(void)state;
	struct sfs_tfs *t = sfs_tfs_new(1024, 8 * MiB, "alloc=extent");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "big");
	struct sfs_attr a;

	assert_int_equal(sfs_fallocate(fs, f, 0, 0, 16 * MiB), -ENOSPC);
	assert_true(sfs_test_free_blocks(fs) < 8);
	assert_int_equal(sfs_getattr(fs, f, &a), 0);
	assert_int_equal(a.size, 0); /* i_size only moves on success */
	assert_true(a.blocks > 0);
	expect(fs, f, 0, 0, 0);
	assert_int_equal(sfs_release(fs, f), 0);
	sfs_tfs_cycle(t);
	/* and the space comes back with the file */
	assert_int_equal(sfs_unlink(t->fs, SFS_ROOT_INO, "big"), 0);
	assert_true(sfs_test_free_blocks(t->fs) > 7000);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/*
 * Delayed allocation reserves a block for a write into a hole, but not
 * for one into preallocated space: with the filesystem full, writes into
 * a fallocated file still succeed.
 */
static void test_fallocate_then_delalloc_full(void **state)
{
	(void)state;
	struct sfs_tfs *t = sfs_tfs_new(1024, 8 * MiB, "alloc=delalloc");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "pre"), g = sfs_test_mkfile(fs, SFS_ROOT_INO, "hog");
	uint8_t blk[1024];
	size_t done;
	int rc;

	assert_int_equal(sfs_fallocate(fs, f, 0, 0, MiB), 0);
	memset(blk, 0x44, sizeof(blk));
	/* fill the rest with delayed data until ENOSPC */
	for (uint64_t off = 0;; off += sizeof(blk)) {
		rc = sfs_write(fs, g, off, blk, sizeof(blk), &done);
		if (rc)
			break;
	}
	assert_int_equal(rc, -ENOSPC);
	/* the preallocated megabyte takes writes all the same (in order:
	 * the written part grows at the front of the unwritten extent, so
	 * the tree needs no new block; see doc/allocators.md 1.3) */
	for (uint64_t off = 0; off < MiB - 4096; off += 4096)
		fill(fs, f, off, 4096, 0x55);
	fill(fs, f, MiB - 4096, 1000, 0x66);
	assert_true(fs->da_ctr.enospc >= 1);
	assert_int_equal(sfs_fs_sync(fs), 0);
	expect(fs, f, 0, MiB - 4096, 0x55);
	expect(fs, f, MiB - 4096, 1000, 0x66);
	expect(fs, f, MiB - 3096, 3096, 0);
	assert_int_equal(sfs_release(fs, f), 0);
	assert_int_equal(sfs_release(fs, g), 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fallocate_basic),
	    cmocka_unit_test(test_fallocate_keep_size),
	    cmocka_unit_test(test_fallocate_refused),
	    cmocka_unit_test(test_fallocate_enospc),
	    cmocka_unit_test(test_fallocate_then_delalloc_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
