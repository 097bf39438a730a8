/*
 * test_fallocate.c - fallocate(2) in every mode ext4 has (sfs_fallocate;
 * the range edits of models/alloc/extent.c and blockmap.c).
 *
 * Preallocation (mode 0, KEEP_SIZE): the holes of the range get blocks as
 * unwritten extents that read as zeros; i_size grows unless KEEP_SIZE;
 * data already there stays; writes convert in place; block-mapped files
 * are refused; ENOSPC keeps what was allocated; under delayed allocation a
 * write into preallocated space needs no reservation.
 * PUNCH_HOLE (extents and block maps), ZERO_RANGE, COLLAPSE_RANGE and
 * INSERT_RANGE (extents): bytes, sizes, freed blocks and errnos as the
 * kernel's ext4 gives them, the journal cost in the stats, and a seeded
 * random mix of every mode with writes and truncates checked against a
 * byte model.  Every case ends with e2fsck -fn clean.
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
#include <json-glib/json-glib.h>

#include "fs_priv.h"
#include "stats.h"
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
static void expect(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off, size_t len,
		   uint8_t v)
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

/* The free-block count after a sync: under a journal, freed blocks return
 * at its commit. */
static uint64_t free_synced(struct sfs_fs *fs)
{
	assert_int_equal(sfs_fs_sync(fs), 0);
	return sfs_test_free_blocks(fs);
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
		assert_int_equal(
		    sfs_imap(fs, ip)->map(fs, ip, l, false, &p, &u), 0);
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
	free0 = free_synced(fs);
	assert_int_equal(sfs_fallocate(fs, f, 0, 0, MiB), 0);
	/* 256 blocks covered, 254 new, all of them unwritten */
	assert_int_equal(free_synced(fs), free0 - 254);
	assert_int_equal(unwritten_blocks(fs, f, 256), 254);
	assert_int_equal(sfs_getattr(fs, f, &a), 0);
	assert_int_equal(a.size, MiB);
	assert_int_equal(a.blocks, 256 * 8);
	expect(fs, f, 0, 8192, 0x11);
	expect(fs, f, 8192, MiB - 8192, 0);
	/* writes convert in place: no new block */
	fill(fs, f, 100 * 4096 + 10, 3 * 4096, 0x22);
	assert_int_equal(free_synced(fs), free0 - 254);
	assert_int_equal(unwritten_blocks(fs, f, 256), 250);
	expect(fs, f, 100 * 4096 + 10, 3 * 4096, 0x22);
	expect(fs, f, 100 * 4096, 10, 0);
	expect(fs, f, 103 * 4096 + 10, 4096 - 10, 0);
	/* again over the same range: nothing more to allocate */
	assert_int_equal(sfs_fallocate(fs, f, 0, 0, MiB), 0);
	assert_int_equal(free_synced(fs), free0 - 254);
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
	uint64_t free0 = free_synced(fs);
	struct sfs_attr a;

	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_KEEP_SIZE, 5000, 100000), 0);
	assert_int_equal(sfs_getattr(fs, f, &a), 0);
	assert_int_equal(a.size, 0);
	/* bytes 5000..104999: blocks 4..102 */
	assert_true(free0 - free_synced(fs) >= 99);
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
	/* vfs_fallocate's mode rules: punch needs KEEP_SIZE, shifts refuse
	 * it, no two modes at once, no unknown bits */
	assert_int_equal(sfs_fallocate(fs, e, SFS_FALLOC_PUNCH_HOLE, 0, 4096),
			 -EOPNOTSUPP);
	assert_int_equal(
	    sfs_fallocate(fs, e,
			  SFS_FALLOC_COLLAPSE_RANGE | SFS_FALLOC_KEEP_SIZE, 0,
			  4096),
	    -EOPNOTSUPP);
	assert_int_equal(sfs_fallocate(fs, e,
				       SFS_FALLOC_PUNCH_HOLE |
					   SFS_FALLOC_ZERO_RANGE |
					   SFS_FALLOC_KEEP_SIZE,
				       0, 4096),
			 -EOPNOTSUPP);
	assert_int_equal(sfs_fallocate(fs, e, 0x40, 0, 4096), -EOPNOTSUPP);
	assert_int_equal(sfs_fallocate(fs, e, 0, 0, 0), -EINVAL);
	assert_int_equal(sfs_fallocate(fs, e, 0, UINT64_MAX - 10, 100), -EFBIG);
	assert_int_equal(sfs_mkdir(fs, SFS_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	assert_int_equal(sfs_fallocate(fs, d.ino, 0, 0, 4096), -EISDIR);
	/* the old block-mapped file stays block-mapped under alloc=extent */
	assert_int_equal(sfs_open(fs, f, O_RDWR), 0);
	assert_int_equal(sfs_fallocate(fs, f, 0, 0, 4096), -EOPNOTSUPP);
	fill(fs, f, 0, 3 * 4096, 0x12);
	assert_int_equal(sfs_fallocate(fs, f, SFS_FALLOC_ZERO_RANGE, 0, 4096),
			 -EOPNOTSUPP);
	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_COLLAPSE_RANGE, 0, 4096),
	    -EOPNOTSUPP);
	assert_int_equal(sfs_fallocate(fs, f, SFS_FALLOC_INSERT_RANGE, 0, 4096),
			 -EOPNOTSUPP);
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
	uint64_t free0 = free_synced(fs);
	struct sfs_attr a;

	assert_int_equal(sfs_fallocate(fs, f, 0, 0, 16 * MiB), -ENOSPC);
	assert_true(free_synced(fs) < 8);
	assert_int_equal(sfs_getattr(fs, f, &a), 0);
	assert_int_equal(a.size, 0); /* i_size only moves on success */
	assert_true(a.blocks > 0);
	expect(fs, f, 0, 0, 0);
	assert_int_equal(sfs_release(fs, f), 0);
	sfs_tfs_cycle(t);
	/* and the space comes back with the file */
	assert_int_equal(sfs_unlink(t->fs, SFS_ROOT_INO, "big"), 0);
	assert_int_equal(free_synced(t->fs), free0);
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
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "pre"),
		  g = sfs_test_mkfile(fs, SFS_ROOT_INO, "hog");
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

/* ---- punch, zero, collapse, insert ---- */

/* The byte pattern of offset off (never 0, so zeros are holes). */
static uint8_t pat(uint64_t off, unsigned tag)
{
	return (uint8_t)((off * 13 + (off >> 10) + tag * 29) | 1);
}

static void put(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off, size_t len,
		unsigned tag)
{
	uint8_t *buf = g_malloc(len);
	size_t done;

	for (size_t i = 0; i < len; i++)
		buf[i] = pat(off + i, tag);
	assert_int_equal(sfs_write(fs, ino, off, buf, len, &done), 0);
	assert_int_equal(done, len);
	g_free(buf);
}

/* The whole file equals model[0..size). */
static void expect_model(struct sfs_fs *fs, sfs_ino_t ino,
			 const GByteArray *model, const char *what)
{
	struct sfs_attr a;
	uint8_t *buf;
	size_t got;

	assert_int_equal(sfs_getattr(fs, ino, &a), 0);
	if (a.size != model->len)
		fail_msg("%s: size %" PRIu64 ", model %u", what, a.size,
			 model->len);
	buf = g_malloc(model->len + 1);
	assert_int_equal(sfs_read(fs, ino, 0, model->len + 1, buf, &got), 0);
	assert_int_equal(got, model->len);
	for (size_t i = 0; i < got; i++)
		if (buf[i] != model->data[i])
			fail_msg("%s: byte %zu is %u, model %u", what, i,
				 buf[i], model->data[i]);
	g_free(buf);
}

static uint64_t blocks_of(struct sfs_fs *fs, sfs_ino_t ino)
{
	struct sfs_attr a;

	assert_int_equal(sfs_getattr(fs, ino, &a), 0);
	return a.blocks;
}

/* PUNCH_HOLE on an extent file: partial blocks zeroed, whole ones freed,
 * size kept; at or past EOF nothing; past EOF the range stops at the page
 * holding EOF (preallocated blocks further out stay). */
static void test_fallocate_punch_extent(void **state)
{
	(void)state;
	struct sfs_tfs *t = sfs_tfs_new(1024, 32 * MiB, "alloc=extent");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "p");
	uint64_t free0, b0;
	struct sfs_attr a;

	put(fs, f, 0, 100 * 1024, 1);
	free0 = free_synced(fs);
	b0 = blocks_of(fs, f);
	/* bytes 1500..20499: blocks 2..19 whole (18), 1 and 20 partial */
	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE,
			  1500, 19000),
	    0);
	assert_int_equal(free_synced(fs), free0 + 18);
	assert_int_equal(blocks_of(fs, f), b0 - 18 * 2);
	assert_int_equal(sfs_getattr(fs, f, &a), 0);
	assert_int_equal(a.size, 100 * 1024);
	expect(fs, f, 1500, 19000, 0);
	for (uint64_t o = 0; o < 1500; o += 499)
		assert_int_not_equal(pat(o, 1), 0);
	{
		uint8_t c;
		size_t got;
		assert_int_equal(sfs_read(fs, f, 1499, 1, &c, &got), 0);
		assert_int_equal(c, pat(1499, 1));
		assert_int_equal(sfs_read(fs, f, 20500, 1, &c, &got), 0);
		assert_int_equal(c, pat(20500, 1));
	}
	/* inside one block: zeroed in place, nothing freed */
	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE,
			  50 * 1024 + 10, 100),
	    0);
	assert_int_equal(free_synced(fs), free0 + 18);
	expect(fs, f, 50 * 1024 + 10, 100, 0);
	/* preallocate 40 blocks past EOF, then punch from 90 KiB on: the
	 * file's last 10 blocks go (EOF is page aligned), the preallocated
	 * ones stay, as do any at or past EOF when the punch starts there */
	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_KEEP_SIZE, 100 * 1024, 40 * 1024),
	    0);
	free0 = free_synced(fs);
	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE,
			  100 * 1024, 40 * 1024),
	    0);
	assert_int_equal(free_synced(fs), free0);
	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE,
			  90 * 1024, 1024 * 1024),
	    0);
	assert_int_equal(free_synced(fs), free0 + 10);
	expect(fs, f, 90 * 1024, 10 * 1024, 0);
	assert_int_equal(sfs_release(fs, f), 0);
	sfs_tfs_cycle(t);
	expect(t->fs, f, 1500, 19000, 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* PUNCH_HOLE on a block-mapped file: data blocks and the indirect blocks
 * wholly inside the range are freed; the rest of the tree stays. */
static void test_fallocate_punch_blockmap(void **state)
{
	(void)state;
	struct sfs_tfs *t = sfs_tfs_new(1024, 32 * MiB, "alloc=blockmap");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "b");
	/* 1 KiB blocks: 12 direct, 256 under IND, then DIND (256 each) */
	uint64_t size = (12 + 256 + 3 * 256 + 10) * 1024ull;
	uint64_t free0, b0;

	put(fs, f, 0, size, 2);
	free0 = free_synced(fs);
	b0 = blocks_of(fs, f);
	/* logical 10..(12 + 256 + 256 + 5): 2 direct, all of IND (256 +
	 * the IND block), the first DIND child (256 + its block), 5 more */
	uint64_t from = 10 * 1024, to = (12 + 256 + 256 + 5) * 1024ull;
	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE,
			  from, to - from),
	    0);
	uint64_t freed = 2 + 256 + 1 + 256 + 1 + 5;
	assert_int_equal(free_synced(fs), free0 + freed);
	assert_int_equal(blocks_of(fs, f), b0 - freed * 2);
	expect(fs, f, from, to - from, 0);
	{
		uint8_t c;
		size_t got;
		assert_int_equal(sfs_read(fs, f, to, 1, &c, &got), 0);
		assert_int_equal(c, pat(to, 2));
		assert_int_equal(sfs_read(fs, f, from - 1, 1, &c, &got), 0);
		assert_int_equal(c, pat(from - 1, 2));
	}
	/* the hole fills again through the same tree */
	put(fs, f, from, 4096, 3);
	assert_int_equal(sfs_release(fs, f), 0);
	sfs_tfs_cycle(t);
	expect(t->fs, f, from + 4096, to - from - 4096, 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* ZERO_RANGE: holes get unwritten blocks, whole written blocks turn
 * unwritten (no block freed or added), partial edges zeroed; i_size grows
 * unless KEEP_SIZE. */
static void test_fallocate_zero_range(void **state)
{
	(void)state;
	struct sfs_tfs *t = sfs_tfs_new(4096, 64 * MiB, "alloc=extent");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "z");
	uint64_t free0;
	struct sfs_attr a;

	put(fs, f, 0, 10 * 4096, 4);	/* blocks 0..9 */
	put(fs, f, 20 * 4096, 4096, 4); /* block 20; 10..19 a hole */
	free0 = free_synced(fs);
	/* bytes 2*4096+100 .. 15*4096+7: whole 3..14, partial 2 and 15 */
	assert_int_equal(sfs_fallocate(fs, f, SFS_FALLOC_ZERO_RANGE,
				       2 * 4096 + 100, 13 * 4096 - 93),
			 0);
	/* the hole's blocks 10..15 were allocated, nothing freed */
	assert_int_equal(free_synced(fs), free0 - 6);
	/* 3..14 unwritten; 15 is new, unwritten too */
	assert_int_equal(unwritten_blocks(fs, f, 21), 13);
	expect(fs, f, 2 * 4096 + 100, 13 * 4096 - 93, 0);
	{
		uint8_t c;
		size_t got;
		assert_int_equal(sfs_read(fs, f, 2 * 4096 + 99, 1, &c, &got),
				 0);
		assert_int_equal(c, pat(2 * 4096 + 99, 4));
	}
	assert_int_equal(sfs_getattr(fs, f, &a), 0);
	assert_int_equal(a.size, 21 * 4096);
	/* past EOF: KEEP_SIZE keeps the size, without it the size grows */
	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_ZERO_RANGE | SFS_FALLOC_KEEP_SIZE,
			  20 * 4096 + 5, 8192),
	    0);
	assert_int_equal(sfs_getattr(fs, f, &a), 0);
	assert_int_equal(a.size, 21 * 4096);
	expect(fs, f, 20 * 4096 + 5, 4096 - 5, 0);
	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_ZERO_RANGE, 30 * 4096, 100), 0);
	assert_int_equal(sfs_getattr(fs, f, &a), 0);
	assert_int_equal(a.size, 30 * 4096 + 100);
	/* a write into the zeroed range reads back, its block only */
	put(fs, f, 5 * 4096 + 7, 10, 5);
	expect(fs, f, 5 * 4096, 7, 0);
	expect(fs, f, 5 * 4096 + 17, 4096 - 17, 0);
	assert_int_equal(sfs_release(fs, f), 0);
	sfs_tfs_cycle(t);
	expect(t->fs, f, 3 * 4096, 2 * 4096, 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* COLLAPSE_RANGE and INSERT_RANGE: bytes move by whole blocks, i_size
 * follows; misalignment, a range reaching EOF (collapse), an offset at or
 * past EOF (insert) are -EINVAL; insert past the maximum size -EFBIG. */
static void test_fallocate_collapse_insert(void **state)
{
	(void)state;
	struct sfs_tfs *t = sfs_tfs_new(1024, 32 * MiB, "alloc=extent");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "c");
	GByteArray *m = g_byte_array_new();
	uint64_t size = 200 * 1024 + 333, free0;

	put(fs, f, 0, size, 6);
	g_byte_array_set_size(m, (guint)size);
	for (uint64_t i = 0; i < size; i++)
		m->data[i] = pat(i, 6);
	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_COLLAPSE_RANGE, 1000, 1024),
	    -EINVAL);
	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_COLLAPSE_RANGE, 1024, 1000),
	    -EINVAL);
	assert_int_equal(sfs_fallocate(fs, f, SFS_FALLOC_COLLAPSE_RANGE,
				       190 * 1024, 11 * 1024),
			 -EINVAL); /* reaches EOF */
	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_INSERT_RANGE, 201 * 1024, 1024),
	    -EINVAL); /* at or past EOF */
	assert_int_equal(sfs_fallocate(fs, f, SFS_FALLOC_INSERT_RANGE, 0,
				       ((1ull << 32) - 2) * 1024),
			 -EFBIG);
	free0 = free_synced(fs);
	assert_int_equal(sfs_fallocate(fs, f, SFS_FALLOC_COLLAPSE_RANGE,
				       10 * 1024, 30 * 1024),
			 0);
	g_byte_array_remove_range(m, 10 * 1024, 30 * 1024);
	assert_int_equal(free_synced(fs), free0 + 30);
	expect_model(fs, f, m, "collapse");
	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_INSERT_RANGE, 5 * 1024, 7 * 1024),
	    0);
	{
		uint8_t z[7 * 1024] = {0};
		g_byte_array_remove_range(m, 0, 0);
		GByteArray *n = g_byte_array_new();
		g_byte_array_append(n, m->data, 5 * 1024);
		g_byte_array_append(n, z, sizeof(z));
		g_byte_array_append(n, m->data + 5 * 1024, m->len - 5 * 1024);
		g_byte_array_free(m, TRUE);
		m = n;
	}
	assert_int_equal(free_synced(fs), free0 + 30);
	expect_model(fs, f, m, "insert");
	/* the inserted hole takes writes */
	put(fs, f, 6 * 1024, 100, 7);
	for (int i = 0; i < 100; i++)
		m->data[6 * 1024 + i] = pat(6 * 1024 + (uint64_t)i, 7);
	expect_model(fs, f, m, "write into the inserted hole");
	assert_int_equal(sfs_release(fs, f), 0);
	sfs_tfs_cycle(t);
	expect_model(t->fs, f, m, "after remount");
	sfs_tfs_assert_clean(t);
	g_byte_array_free(m, TRUE);
	sfs_tfs_free(t);
}

/* The journal's metadata blocks logged since the last look. */
static uint64_t logged_meta(struct sfs_fs *fs)
{
	char *json = sfs_stats_to_json(sfs_fs_stats(fs), false);
	JsonParser *p = json_parser_new();
	uint64_t v;

	assert_true(json_parser_load_from_data(p, json, -1, NULL));
	JsonObject *o = json_node_get_object(json_parser_get_root(p));
	o = json_object_get_object_member(o, "journal");
	o = json_object_get_object_member(o, "log_blocks");
	v = (uint64_t)json_object_get_int_member(o, "metadata");
	g_object_unref(p);
	g_free(json);
	return v;
}

/* Each mode's metadata goes through the journal: after a commit the log
 * holds the blocks it changed (bitmap, group descriptor, inode, tree). */
static void test_fallocate_journal_cost(void **state)
{
	(void)state;
	static const int modes[] = {
	    SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE,
	    SFS_FALLOC_ZERO_RANGE,
	    SFS_FALLOC_COLLAPSE_RANGE,
	    SFS_FALLOC_INSERT_RANGE,
	};
	struct sfs_tfs *t = sfs_tfs_alloc();

	assert_int_equal(sfs_test_mkimage(t->img, 32 * MiB, 1024), 0);
	sfs_test_add_journal(t->img, 1024);
	t->fs = sfs_test_open(t->img, "alloc=extent,data=ordered");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "j");
	/* scattered blocks: a tree of depth 1 */
	for (uint64_t b = 0; b < 400; b += 2)
		put(fs, f, b * 1024, 1024, 8);
	assert_int_equal(sfs_fs_sync(fs), 0);
	for (size_t i = 0; i < G_N_ELEMENTS(modes); i++) {
		uint64_t before = logged_meta(fs);
		assert_int_equal(
		    sfs_fallocate(fs, f, modes[i], 100 * 1024, 20 * 1024), 0);
		assert_int_equal(sfs_fs_sync(fs), 0);
		/* at least the inode block and a tree block; a freeing
		 * mode the block bitmap and group descriptor as well */
		uint64_t cost = logged_meta(fs) - before;
		print_message("# mode 0x%x: %" PRIu64 " metadata blocks logged\n",
			      modes[i], cost);
		assert_true(cost >= 2);
		if (modes[i] != SFS_FALLOC_INSERT_RANGE)
			assert_true(cost >= 4);
	}
	assert_int_equal(sfs_release(fs, f), 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/*
 * Random sequences of writes, truncates and every fallocate mode (aligned
 * and not, inside and past EOF) on extent, block-mapped and delayed-
 * allocation files, compared with a byte model after each step and checked
 * by e2fsck at the end.  The expected errno comes from the model: the
 * mode's rules as vfs_fallocate and ext4 apply them.
 */
struct rnd_ctx {
	struct sfs_fs *fs;
	sfs_ino_t ino;
	GByteArray *m;
	bool extents;
	uint32_t bs;
	unsigned done[0x40]; /* successful calls by mode without KEEP_SIZE */
	uint32_t max_depth;  /* deepest extent tree seen */
};

static void model_resize(GByteArray *m, uint64_t size)
{
	guint old = m->len;

	g_byte_array_set_size(m, (guint)size);
	if (size > old)
		memset(m->data + old, 0, (size_t)(size - old));
}

static void model_zero(GByteArray *m, uint64_t off, uint64_t end)
{
	end = MIN(end, m->len);
	if (off < end)
		memset(m->data + off, 0, (size_t)(end - off));
}

/* One random fallocate; returns the errno the model expects (and
 * applies the change to the model when 0). */
static int rnd_falloc(struct rnd_ctx *c, GRand *r, int *mode_out,
		      uint64_t *off_out, uint64_t *len_out)
{
	static const int modes[] = {
	    0,
	    SFS_FALLOC_KEEP_SIZE,
	    SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE,
	    SFS_FALLOC_ZERO_RANGE,
	    SFS_FALLOC_ZERO_RANGE | SFS_FALLOC_KEEP_SIZE,
	    SFS_FALLOC_COLLAPSE_RANGE,
	    SFS_FALLOC_INSERT_RANGE,
	    SFS_FALLOC_PUNCH_HOLE, /* no KEEP_SIZE: refused */
	};
	int mode = modes[g_rand_int_range(r, 0, G_N_ELEMENTS(modes))];
	int op = mode & ~SFS_FALLOC_KEEP_SIZE;
	uint64_t size = c->m->len, span = size + 8 * c->bs;
	uint64_t off = (uint64_t)g_rand_int_range(r, 0, (gint32)span);
	/* lengths up to half the file (64 blocks at most), so that shifts
	 * ending before EOF are common */
	uint64_t maxlen = MIN(64 * (uint64_t)c->bs, size / 2 + c->bs);
	uint64_t len = (uint64_t)g_rand_int_range(r, 1, (gint32)maxlen + 1);
	uint64_t end;

	if (g_rand_boolean(r)) { /* block aligned, mostly */
		off &= ~(uint64_t)(c->bs - 1);
		len = (len + c->bs - 1) & ~(uint64_t)(c->bs - 1);
	}
	if ((op == SFS_FALLOC_COLLAPSE_RANGE ||
	     op == SFS_FALLOC_INSERT_RANGE) &&
	    size > c->bs && g_rand_int_range(r, 0, 3)) {
		/* two in three shifts are valid: aligned, inside the file */
		uint64_t nblk = size / c->bs;
		uint64_t at = (uint64_t)g_rand_int_range(r, 0, (gint32)nblk);
		off = at * c->bs;
		len = (uint64_t)g_rand_int_range(
			  r, 1, (gint32)MAX(2, (nblk - at) / 2 + 1)) *
		      c->bs;
	}
	end = off + len;
	*mode_out = mode;
	*off_out = off;
	*len_out = len;
	if (mode == SFS_FALLOC_PUNCH_HOLE)
		return EOPNOTSUPP;
	if (!c->extents && op != SFS_FALLOC_PUNCH_HOLE)
		return EOPNOTSUPP;
	switch (op) {
	case 0:
		if (!(mode & SFS_FALLOC_KEEP_SIZE) && end > size)
			model_resize(c->m, end);
		return 0;
	case SFS_FALLOC_PUNCH_HOLE:
		model_zero(c->m, off, end);
		return 0;
	case SFS_FALLOC_ZERO_RANGE:
		model_zero(c->m, off, end);
		if (!(mode & SFS_FALLOC_KEEP_SIZE) && end > size)
			model_resize(c->m, end);
		return 0;
	case SFS_FALLOC_COLLAPSE_RANGE:
		if ((off | len) & (c->bs - 1) || end >= size)
			return EINVAL;
		g_byte_array_remove_range(c->m, (guint)off, (guint)len);
		return 0;
	case SFS_FALLOC_INSERT_RANGE: {
		if ((off | len) & (c->bs - 1) || off >= size)
			return EINVAL;
		uint8_t *z = g_malloc0(len);
		GByteArray *n = g_byte_array_sized_new((guint)(size + len));
		g_byte_array_append(n, c->m->data, (guint)off);
		g_byte_array_append(n, z, (guint)len);
		g_byte_array_append(n, c->m->data + off, (guint)(size - off));
		g_byte_array_set_size(c->m, 0);
		g_byte_array_append(c->m, n->data, n->len);
		g_byte_array_free(n, TRUE);
		g_free(z);
		return 0;
	}
	}
	return EOPNOTSUPP;
}

/* One seeded run; adds its successful modes to done[] and its deepest
 * tree to *max_depth. */
static void rnd_run(uint32_t bs, const char *opts, guint32 seed, int steps,
		    unsigned *done, uint32_t *max_depth, bool *extents)
{
	struct sfs_tfs *t = sfs_tfs_new(bs, 64 * MiB, opts);
	struct rnd_ctx c = {.fs = t->fs, .m = g_byte_array_new(), .bs = bs};
	GRand *r = g_rand_new_with_seed(seed);
	char what[160];

	c.ino = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "r");
	{
		struct sfs_inode *ip;
		sfs_lock(t->fs);
		assert_int_equal(sfs_iget(t->fs, c.ino, &ip), 0);
		c.extents = sfs_le32(ip->d.i_flags) & SFS_EXTENTS_FL;
		sfs_iput(t->fs, ip);
		sfs_unlock(t->fs);
	}
	for (int s = 0; s < steps; s++) {
		int kind = g_rand_int_range(r, 0, 10);
		uint64_t size = c.m->len;

		if (kind < 4) { /* a write, often past EOF */
			uint64_t off = (uint64_t)g_rand_int_range(
			    r, 0, (gint32)(size + 16 * bs));
			size_t len =
			    (size_t)g_rand_int_range(r, 1, 20 * (gint32)bs);
			unsigned tag = (unsigned)s;
			put(c.fs, c.ino, off, len, tag);
			if (off + len > c.m->len)
				model_resize(c.m, off + len);
			for (size_t i = 0; i < len; i++)
				c.m->data[off + i] = pat(off + i, tag);
			snprintf(what, sizeof(what),
				 "seed %u step %d: write %" PRIu64 "+%zu", seed,
				 s, off, len);
		} else if (kind == 4) {
			uint64_t ns = (uint64_t)g_rand_int_range(
			    r, 0, (gint32)(size + 4 * bs));
			struct sfs_attr in = {.size = ns};
			struct sfs_attr out;
			assert_int_equal(
			    sfs_setattr(c.fs, c.ino, &in, SFS_SET_SIZE, &out),
			    0);
			model_resize(c.m, ns);
			snprintf(what, sizeof(what),
				 "seed %u step %d: truncate %" PRIu64, seed, s,
				 ns);
		} else {
			int mode;
			uint64_t off, len;
			int want = rnd_falloc(&c, r, &mode, &off, &len);
			int rc = sfs_fallocate(c.fs, c.ino, mode, off, len);
			snprintf(what, sizeof(what),
				 "seed %u step %d: fallocate 0x%x %" PRIu64
				 "+%" PRIu64 " (size %" PRIu64 ")",
				 seed, s, mode, off, len, size);
			if (rc != -want)
				fail_msg("%s: rc %d, expected %d", what, rc,
					 -want);
			if (rc == 0)
				c.done[mode & ~SFS_FALLOC_KEEP_SIZE]++;
		}
		expect_model(c.fs, c.ino, c.m, what);
		if (c.extents) {
			struct sfs_inode *ip;
			sfs_lock(c.fs);
			assert_int_equal(sfs_iget(c.fs, c.ino, &ip), 0);
			c.max_depth =
			    MAX(c.max_depth,
				sfs_le16(
				    ((struct sfs_dextent_header *)ip->d.i_block)
					->eh_depth));
			sfs_iput(c.fs, ip);
			sfs_unlock(c.fs);
		}
		if (s == steps / 2) {
			assert_int_equal(sfs_release(t->fs, c.ino), 0);
			sfs_tfs_cycle(t);
			c.fs = t->fs;
			assert_int_equal(sfs_open(c.fs, c.ino, O_RDWR), 0);
			expect_model(c.fs, c.ino, c.m, "after the remount");
		}
	}
	assert_int_equal(sfs_release(t->fs, c.ino), 0);
	for (int k = 0; k < 0x40; k++)
		done[k] += c.done[k];
	*max_depth = MAX(*max_depth, c.max_depth);
	*extents = c.extents;
	{
		char *out = NULL;
		sfs_tfs_close(t);
		if (!sfs_test_fsck_clean(t->img, &out))
			fail_msg("seed %u (%s): e2fsck: %s", seed, opts, out);
		g_free(out);
	}
	g_rand_free(r);
	g_byte_array_free(c.m, TRUE);
	sfs_tfs_free(t);
}

static void test_fallocate_random_model(void **state)
{
	(void)state;
	static const struct {
		uint32_t bs;
		const char *opts;
	} cfgs[] = {
	    {1024, "alloc=extent"},   {4096, "alloc=extent"},
	    {1024, "alloc=mballoc"},  {1024, "alloc=delalloc"},
	    {1024, "alloc=blockmap"}, {4096, "alloc=reservation"},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cfgs); i++) {
		unsigned done[0x40] = {0};
		uint32_t depth = 0;
		bool extents = false;

		for (guint32 seed = 1; seed <= 3; seed++)
			rnd_run(cfgs[i].bs, cfgs[i].opts,
				seed * 1000 + (guint32)i, 150, done, &depth,
				&extents);
		/* the runs did exercise what they claim to */
		print_message("# %s, %u-byte blocks: mode 0 %u, punch %u, zero "
			      "%u, collapse %u, insert %u calls succeeded; "
			      "tree depth %u\n",
			      cfgs[i].opts, cfgs[i].bs, done[0],
			      done[SFS_FALLOC_PUNCH_HOLE],
			      done[SFS_FALLOC_ZERO_RANGE],
			      done[SFS_FALLOC_COLLAPSE_RANGE],
			      done[SFS_FALLOC_INSERT_RANGE], depth);
		assert_true(done[SFS_FALLOC_PUNCH_HOLE] > 0);
		if (extents) {
			assert_true(done[0] > 0);
			assert_true(done[SFS_FALLOC_ZERO_RANGE] > 0);
			assert_true(done[SFS_FALLOC_COLLAPSE_RANGE] > 0);
			assert_true(done[SFS_FALLOC_INSERT_RANGE] > 0);
			assert_true(depth >= 1);
		}
	}
}

/* chattr +i / +a (sfs_set_flags): fallocate is EPERM on an immutable
 * file, and on an append-only one for anything but preallocation
 * (vfs_fallocate); the flags need the privileged caller. */
static void test_fallocate_flags(void **state)
{
	(void)state;
	struct sfs_tfs *t = sfs_tfs_new(4096, 32 * MiB, "alloc=extent");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "a");
	uint32_t fl;

	put(fs, f, 0, 3 * 4096, 9);
	assert_int_equal(sfs_get_flags(fs, f, &fl), 0);
	assert_true(fl & SFS_EXTENTS_FL);
	assert_int_equal(sfs_set_flags(fs, f, fl | SFS_IMMUTABLE_FL, false),
			 -EPERM);
	assert_int_equal(sfs_set_flags(fs, f, fl & ~SFS_EXTENTS_FL, true),
			 -EOPNOTSUPP);
	assert_int_equal(sfs_set_flags(fs, f, fl | 0x80000000u, true),
			 -EOPNOTSUPP);
	assert_int_equal(sfs_set_flags(fs, f, fl | SFS_IMMUTABLE_FL, true), 0);
	assert_int_equal(sfs_fallocate(fs, f, 0, 0, 4096), -EPERM);
	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE,
			  0, 4096),
	    -EPERM);
	assert_int_equal(sfs_set_flags(fs, f, fl | SFS_APPEND_FL, true), 0);
	assert_int_equal(sfs_fallocate(fs, f, SFS_FALLOC_KEEP_SIZE, 0, MiB), 0);
	assert_int_equal(sfs_fallocate(fs, f, SFS_FALLOC_ZERO_RANGE, 0, 4096),
			 -EPERM);
	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_COLLAPSE_RANGE, 0, 4096), -EPERM);
	expect(fs, f, 0, 1, pat(0, 9));
	assert_int_equal(sfs_set_flags(fs, f, fl, true), 0);
	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_COLLAPSE_RANGE, 0, 4096), 0);
	assert_int_equal(sfs_release(fs, f), 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* Close, then e2fsck -fn clean but for "could be narrower/shorter": punch
 * and collapse leave part-full leaves, as the kernel's do. */
static void assert_shape_clean(struct sfs_tfs *t)
{
	char *out = NULL;
	bool ok;

	sfs_tfs_close(t);
	ok = sfs_test_fsck_clean_shape(t->img, &out);
	if (!ok)
		print_message("e2fsck -fn:\n%s\n", out ? out : "");
	g_free(out);
	assert_true(ok);
}

/*
 * A punch in a deep tree is path-local: on a depth-2 tree of a thousand
 * one-block extents, punching a few hundred blocks frees the data and
 * the leaves it empties, and logs fewer tree blocks than a collapse of a
 * smaller range further on (which also shifts every leaf past it).
 */
static void test_fallocate_punch_deep_tree(void **state)
{
	(void)state;
	struct sfs_tfs *t = sfs_tfs_alloc();

	assert_int_equal(sfs_test_mkimage(t->img, 32 * MiB, 1024), 0);
	sfs_test_add_journal(t->img, 1024);
	t->fs = sfs_test_open(t->img, "alloc=extent,data=ordered");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "deep");
	GByteArray *m = g_byte_array_new();
	uint64_t free0, b0, cost_punch, cost_collapse, before;

	g_byte_array_set_size(m, 2000 * 1024);
	memset(m->data, 0, m->len);
	for (uint64_t b = 0; b < 2000; b += 2) {
		put(fs, f, b * 1024, 1024, 10);
		for (uint64_t i = 0; i < 1024; i++)
			m->data[b * 1024 + i] = pat(b * 1024 + i, 10);
	}
	put(fs, f, 1999 * 1024, 1024, 10);
	for (uint64_t i = 0; i < 1024; i++)
		m->data[1999 * 1024 + i] = pat(1999 * 1024 + i, 10);
	{
		struct sfs_inode *ip;
		sfs_lock(fs);
		assert_int_equal(sfs_iget(fs, f, &ip), 0);
		assert_true(
		    sfs_le16(((struct sfs_dextent_header *)ip->d.i_block)
				 ->eh_depth) >= 2);
		sfs_iput(fs, ip);
		sfs_unlock(fs);
	}
	assert_int_equal(sfs_fs_sync(fs), 0);
	free0 = free_synced(fs);
	b0 = blocks_of(fs, f);
	before = logged_meta(fs);
	assert_int_equal(
	    sfs_fallocate(fs, f, SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE,
			  600 * 1024, 400 * 1024),
	    0);
	model_zero(m, 600 * 1024, 1000 * 1024);
	assert_int_equal(sfs_fs_sync(fs), 0);
	cost_punch = logged_meta(fs) - before;
	/* 200 data blocks, and at least one leaf emptied */
	assert_true(free_synced(fs) >= free0 + 201);
	assert_int_equal(blocks_of(fs, f) * 512 / 1024,
			 b0 * 512 / 1024 - (free_synced(fs) - free0));
	expect_model(fs, f, m, "after the punch");
	before = logged_meta(fs);
	assert_int_equal(sfs_fallocate(fs, f, SFS_FALLOC_COLLAPSE_RANGE,
				       1200 * 1024, 100 * 1024),
			 0);
	g_byte_array_remove_range(m, 1200 * 1024, 100 * 1024);
	assert_int_equal(sfs_fs_sync(fs), 0);
	cost_collapse = logged_meta(fs) - before;
	print_message("# depth-2 tree: punch logged %" PRIu64
		      " metadata blocks, collapse %" PRIu64 "\n",
		      cost_punch, cost_collapse);
	assert_true(cost_punch < cost_collapse);
	expect_model(fs, f, m, "after the collapse");
	assert_int_equal(sfs_release(fs, f), 0);
	assert_shape_clean(t);
	sfs_tfs_reopen(t);
	expect_model(t->fs, f, m, "after remount");
	assert_shape_clean(t);
	g_byte_array_free(m, TRUE);
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
	    cmocka_unit_test(test_fallocate_punch_extent),
	    cmocka_unit_test(test_fallocate_punch_blockmap),
	    cmocka_unit_test(test_fallocate_zero_range),
	    cmocka_unit_test(test_fallocate_collapse_insert),
	    cmocka_unit_test(test_fallocate_journal_cost),
	    cmocka_unit_test(test_fallocate_random_model),
	    cmocka_unit_test(test_fallocate_flags),
	    cmocka_unit_test(test_fallocate_punch_deep_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
