/*
 * test_delalloc.c - delayed allocation through the engine: space reserved
 * at write (statfs shows it, the bitmaps do not), blocks placed at
 * write-back in whole runs (contiguous files even for interleaved writers,
 * with every placement model), data deleted before write-back never gets
 * blocks, ENOSPC at write time at the edge of a full filesystem with every
 * accepted byte readable after sync, auto_da_alloc on rename-over and
 * truncate-to-zero, the on-disk size never ahead of placed data, write-back
 * by the cache's limits and expiry, data=journal turning it off.  Every
 * case ends with e2fsck -fn clean.
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

#include "blockdev.h"
#include "clock.h"
#include "fs_priv.h"
#include "testsupport.h"

#define MiB (1024ull * 1024)

/* A fresh image (journaled when opts name a data= mode) opened with opts. */
static struct sfs_tfs *open_fs(uint32_t bs, uint64_t size, const char *opts)
{
	struct sfs_tfs *t = sfs_tfs_alloc();

	assert_int_equal(sfs_test_mkimage(t->img, size, bs), 0);
	if (strstr(opts, "data=") && !strstr(opts, "data=none"))
		sfs_test_add_journal(t->img, 1024);
	t->fs = sfs_test_open(t->img, opts);
	assert_non_null(t->fs);
	return t;
}

/* The byte pattern of file `tag` at offset off. */
static uint8_t pat(unsigned tag, uint64_t off)
{
	return (uint8_t)((off * 7 + tag * 31 + (off >> 12)) | 1);
}

static int put(struct sfs_fs *fs, sfs_ino_t ino, unsigned tag, uint64_t off,
	       size_t len)
{
	uint8_t *buf = g_malloc(len);
	size_t done = 0;
	int rc;

	for (size_t i = 0; i < len; i++)
		buf[i] = pat(tag, off + i);
	rc = sfs_write(fs, ino, off, buf, len, &done);
	g_free(buf);
	if (rc == 0)
		assert_int_equal(done, len);
	return rc;
}

/* Assert bytes [off, off+len) of ino follow pattern tag (or are zero). */
static void expect(struct sfs_fs *fs, sfs_ino_t ino, unsigned tag,
		   uint64_t off, size_t len, bool zero)
{
	uint8_t *buf = g_malloc(len);
	size_t got = 0;

	assert_int_equal(sfs_read(fs, ino, off, len, buf, &got), 0);
	assert_int_equal(got, len);
	for (size_t i = 0; i < len; i++) {
		uint8_t want = zero ? 0 : pat(tag, off + i);
		if (buf[i] != want)
			fail_msg("ino %u byte %" PRIu64 ": %u != %u", ino,
				 off + i, buf[i], want);
	}
	g_free(buf);
}

static int count_ext(void *ctx, uint32_t lblk, sfs_blk_t pblk, uint32_t len,
		     bool meta)
{
	(void)lblk, (void)pblk, (void)len;
	if (!meta)
		(*(uint32_t *)ctx)++;
	return 0;
}

static uint32_t data_extents(struct sfs_fs *fs, sfs_ino_t ino)
{
	struct sfs_inode *ip;
	uint32_t n = 0;

	sfs_lock(fs);
	assert_int_equal(sfs_iget(fs, ino, &ip), 0);
	assert_int_equal(sfs_imap(fs, ip)->walk(fs, ip, count_ext, &n), 0);
	sfs_iput(fs, ip);
	sfs_unlock(fs);
	return n;
}

static uint64_t avail_blocks(struct sfs_fs *fs)
{
	struct sfs_statfs st;

	assert_int_equal(sfs_statfs(fs, &st), 0);
	return st.blocks_free;
}

/* The size the inode table holds for ino (what a crash would leave). */
static uint64_t disk_size(struct sfs_fs *fs, sfs_ino_t ino)
{
	uint32_t per = fs->bs / fs->inode_size;
	uint32_t idx = (ino - 1) % fs->ipg;
	struct sfs_dinode d;
	struct sfs_buf *b;

	sfs_lock(fs);
	assert_int_equal(sfs_cache_get(fs->cache, sfs_inode_block(fs, ino),
				       SFS_IO_INODE, &b),
			 0);
	memcpy(&d, b->data + (idx % per) * fs->inode_size, sizeof(d));
	sfs_cache_put(fs->cache, b);
	sfs_unlock(fs);
	return sfs_le32(d.i_size) | (uint64_t)sfs_le32(d.i_size_high) << 32;
}

/* Reservation at write, placement at fsync, read-back before and after. */
static void test_da_reserve_then_place(void **state)
{
	(void)state;
	struct sfs_tfs *t = open_fs(4096, 64 * MiB, "alloc=delalloc");
	struct sfs_fs *fs = t->fs;
	uint64_t free0 = sfs_test_free_blocks(fs), avail0 = avail_blocks(fs);
	struct sfs_attr a;
	sfs_ino_t f;

	assert_true(fs->da_on);
	f = sfs_test_mkfile(fs, SFS_ROOT_INO, "f");
	free0 = sfs_test_free_blocks(fs);
	avail0 = avail_blocks(fs);
	assert_int_equal(put(fs, f, 1, 0, 100 * 4096 + 123), 0);
	/* nothing placed: bitmaps and free count untouched, the reserve
	 * shows in statfs and in st_blocks */
	assert_int_equal(sfs_test_free_blocks(fs), free0);
	assert_true(avail_blocks(fs) <= avail0 - 101);
	assert_int_equal(fs->da_blocks, 101);
	assert_int_equal(data_extents(fs, f), 0);
	assert_int_equal(sfs_getattr(fs, f, &a), 0);
	assert_int_equal(a.size, 100 * 4096 + 123);
	assert_int_equal(a.blocks, 101 * 8);
	assert_int_equal(disk_size(fs, f), 0);
	expect(fs, f, 1, 0, 100 * 4096 + 123, false);
	/* a rewrite of delayed data stays delayed, no new reservation */
	assert_int_equal(put(fs, f, 1, 4096 * 3 + 5, 5000), 0);
	assert_int_equal(fs->da_ctr.reserved_blocks, 101);

	assert_int_equal(sfs_fsync(fs, f, false), 0);
	assert_int_equal(fs->da_blocks, 0);
	assert_int_equal(fs->da_meta, 0);
	assert_int_equal(sfs_test_free_blocks(fs), free0 - 101);
	assert_int_equal(avail_blocks(fs), avail0 - 101);
	assert_int_equal(data_extents(fs, f), 1);
	assert_int_equal(disk_size(fs, f), 100 * 4096 + 123);
	assert_int_equal(fs->da_ctr.placed_blocks, 101);
	assert_int_equal(fs->da_ctr.flush_blocks[SFS_DA_FSYNC], 101);
	expect(fs, f, 1, 0, 100 * 4096 + 123, false);
	assert_int_equal(sfs_release(fs, f), 0);
	sfs_tfs_cycle(t);
	expect(t->fs, f, 1, 0, 100 * 4096 + 123, false);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* A file deleted before write-back never gets blocks. */
static void test_da_deleted_before_writeback(void **state)
{
	(void)state;
	struct sfs_tfs *t = open_fs(4096, 64 * MiB, "alloc=delalloc");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "tmp");
	uint64_t free0 = sfs_test_free_blocks(fs), avail0 = avail_blocks(fs);

	assert_int_equal(put(fs, f, 2, 0, 50 * 4096), 0);
	assert_int_equal(sfs_unlink(fs, SFS_ROOT_INO, "tmp"), 0);
	assert_int_equal(fs->da_blocks, 50); /* still open */
	assert_int_equal(sfs_release(fs, f), 0);
	assert_int_equal(fs->da_blocks, 0);
	assert_int_equal(fs->da_meta, 0);
	assert_int_equal(fs->da_ctr.died_blocks, 50);
	assert_int_equal(fs->da_ctr.placed_blocks, 0);
	assert_int_equal(sfs_test_free_blocks(fs), free0);
	assert_int_equal(avail_blocks(fs), avail0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/*
 * Four files written side by side, block by block: placed at write-back a
 * file at a time, each is one extent, whatever the placement model; with
 * allocation at write time the ext2 bitmap search interleaves them.
 */
static void interleave(const char *opts, uint32_t *max_ext)
{
	struct sfs_tfs *t = open_fs(4096, 64 * MiB, opts);
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f[4];
	char name[8];

	for (int i = 0; i < 4; i++) {
		g_snprintf(name, sizeof(name), "f%d", i);
		f[i] = sfs_test_mkfile(fs, SFS_ROOT_INO, name);
	}
	for (uint32_t b = 0; b < 200; b++)
		for (int i = 0; i < 4; i++)
			assert_int_equal(put(fs, f[i], (unsigned)i,
					     (uint64_t)b * 4096, 4096),
					 0);
	assert_int_equal(sfs_fs_sync(fs), 0);
	*max_ext = 0;
	for (int i = 0; i < 4; i++) {
		*max_ext = MAX(*max_ext, data_extents(fs, f[i]));
		expect(fs, f[i], (unsigned)i, 0, 200 * 4096, false);
		assert_int_equal(sfs_release(fs, f[i]), 0);
	}
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_da_interleaved_writers_every_model(void **state)
{
	(void)state;
	static const char *const rows[] = {
	    "alloc=blockmap,delalloc", "alloc=reservation,delalloc",
	    "alloc=extent,delalloc", "alloc=mballoc,delalloc"};
	uint32_t n;

	for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
		interleave(rows[i], &n);
		/* block maps count an extent per indirect-block gap */
		if (n > 2)
			fail_msg("%s: %u extents per file", rows[i], n);
	}
	interleave("alloc=blockmap,nodelalloc", &n);
	assert_true(n > 50);
}

/*
 * The edge of a full filesystem: writes succeed until the reserve cannot
 * grow, and then fail with ENOSPC at write time; sync then places every
 * accepted block without error, and everything accepted reads back.
 */
static void fill_to_enospc(uint32_t bs, uint64_t size, const char *opts)
{
	struct sfs_tfs *t = open_fs(bs, size, opts);
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f[3];
	uint64_t len[3] = {0, 0, 0};
	size_t chunk = 3 * bs + 17;
	int rc = 0, i = 0;

	for (int k = 0; k < 3; k++) {
		char name[8];
		g_snprintf(name, sizeof(name), "f%d", k);
		f[k] = sfs_test_mkfile(fs, SFS_ROOT_INO, name);
	}
	/* three growing files in turn, then single blocks to the end */
	while ((rc = put(fs, f[i], (unsigned)i, len[i], chunk)) == 0) {
		len[i] += chunk;
		i = (i + 1) % 3;
	}
	assert_int_equal(rc, -ENOSPC);
	while (put(fs, f[i], (unsigned)i, len[i], 1) == 0)
		len[i] += 1;
	assert_true(fs->da_ctr.enospc > 0);
	assert_int_equal(sfs_fs_sync(fs), 0);
	assert_false(fs->error);
	assert_int_equal(fs->da_ctr.failed_blocks, 0);
	assert_int_equal(fs->da_blocks, 0);
	/* ENOSPC came only when the filesystem was really full: what is
	 * left is less than the metadata estimate of one more block */
	if (sfs_test_free_blocks(fs) > 8)
		fail_msg("%s bs %u: %" PRIu64 " blocks free after ENOSPC",
			 opts, bs, sfs_test_free_blocks(fs));
	for (int k = 0; k < 3; k++) {
		expect(fs, f[k], (unsigned)k, 0, len[k], false);
		assert_int_equal(sfs_release(fs, f[k]), 0);
	}
	sfs_tfs_cycle(t);
	for (int k = 0; k < 3; k++)
		expect(t->fs, f[k], (unsigned)k, 0, len[k], false);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_da_enospc_at_write_time(void **state)
{
	(void)state;
	fill_to_enospc(4096, 8 * MiB, "alloc=delalloc");
	fill_to_enospc(1024, 8 * MiB, "alloc=delalloc");
	fill_to_enospc(1024, 8 * MiB, "alloc=blockmap,delalloc");
	fill_to_enospc(4096, 16 * MiB, "alloc=extent,delalloc,data=ordered");
}

/* auto_da_alloc: rename over an existing file places the new data. */
static void test_da_auto_da_alloc_rename(void **state)
{
	(void)state;
	for (int on = 0; on < 2; on++) {
		struct sfs_tfs *t =
		    open_fs(4096, 64 * MiB,
			    on ? "alloc=delalloc,data=ordered"
			       : "alloc=delalloc,data=ordered,noauto_da_alloc");
		struct sfs_fs *fs = t->fs;
		sfs_ino_t old = sfs_test_mkfile(fs, SFS_ROOT_INO, "conf");
		sfs_ino_t nw;

		assert_int_equal(put(fs, old, 1, 0, 8192), 0);
		assert_int_equal(sfs_fsync(fs, old, false), 0);
		assert_int_equal(sfs_release(fs, old), 0);
		nw = sfs_test_mkfile(fs, SFS_ROOT_INO, "conf.new");
		assert_int_equal(put(fs, nw, 2, 0, 3 * 4096), 0);
		assert_int_equal(sfs_release(fs, nw), 0);
		assert_int_equal(
		    sfs_rename(fs, SFS_ROOT_INO, "conf.new", SFS_ROOT_INO,
			       "conf", 0),
		    0);
		if (on) {
			assert_int_equal(fs->da_blocks, 0);
			assert_int_equal(
			    fs->da_ctr.flush_blocks[SFS_DA_RENAME], 3);
			assert_int_equal(disk_size(fs, nw), 3 * 4096);
		} else {
			assert_int_equal(fs->da_blocks, 3);
			assert_int_equal(disk_size(fs, nw), 0);
		}
		sfs_tfs_cycle(t);
		expect(t->fs, nw, 2, 0, 3 * 4096, false);
		sfs_tfs_assert_clean(t);
		sfs_tfs_free(t);
	}
}

/* auto_da_alloc: truncate to zero, rewrite, close: placed at close. */
static void test_da_auto_da_alloc_truncate_close(void **state)
{
	(void)state;
	struct sfs_tfs *t = open_fs(4096, 64 * MiB, "alloc=delalloc");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "state");

	assert_int_equal(put(fs, f, 1, 0, 5 * 4096), 0);
	assert_int_equal(sfs_release(fs, f), 0);
	assert_int_equal(fs->da_blocks, 5); /* a plain close waits */
	assert_int_equal(sfs_open(fs, f, O_RDWR | O_TRUNC), 0);
	assert_int_equal(fs->da_blocks, 0);
	assert_int_equal(fs->da_ctr.died_blocks, 5);
	assert_int_equal(put(fs, f, 3, 0, 2 * 4096 + 1), 0);
	assert_int_equal(fs->da_blocks, 3);
	assert_int_equal(sfs_release(fs, f), 0);
	assert_int_equal(fs->da_blocks, 0);
	assert_int_equal(fs->da_ctr.flush_blocks[SFS_DA_CLOSE], 3);
	assert_int_equal(disk_size(fs, f), 2 * 4096 + 1);
	sfs_tfs_cycle(t);
	expect(t->fs, f, 3, 0, 2 * 4096 + 1, false);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* Truncating delayed data: the tail of the last block reads as zeros. */
static void test_da_truncate_partial(void **state)
{
	(void)state;
	struct sfs_tfs *t = open_fs(4096, 64 * MiB, "alloc=delalloc");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "t");
	struct sfs_attr in = {.size = 6144}, out;

	assert_int_equal(put(fs, f, 4, 0, 14336), 0); /* 3.5 blocks */
	assert_int_equal(sfs_setattr(fs, f, &in, SFS_SET_SIZE, &out), 0);
	assert_int_equal(fs->da_blocks, 2);
	in.size = 16384;
	assert_int_equal(sfs_setattr(fs, f, &in, SFS_SET_SIZE, &out), 0);
	expect(fs, f, 4, 0, 6144, false);
	expect(fs, f, 4, 6144, 16384 - 6144, true);
	assert_int_equal(sfs_fsync(fs, f, false), 0);
	expect(fs, f, 4, 0, 6144, false);
	expect(fs, f, 4, 6144, 16384 - 6144, true);
	assert_int_equal(disk_size(fs, f), 16384);
	assert_int_equal(sfs_release(fs, f), 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* An O_DIRECT write places the file's delayed data first. */
static void test_da_direct_write_places_first(void **state)
{
	(void)state;
	struct sfs_tfs *t = open_fs(4096, 64 * MiB, "alloc=delalloc");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "d");
	struct sfs_ioctx ctx = {.flags = SFS_IOCTX_DIRECT};
	uint8_t buf[4096];
	size_t done;

	assert_int_equal(put(fs, f, 5, 0, 4 * 4096), 0);
	memset(buf, 0xAB, sizeof(buf));
	assert_int_equal(
	    sfs_write_ctx(fs, f, 8 * 4096, buf, sizeof(buf), &ctx, &done), 0);
	assert_int_equal(fs->da_blocks, 0);
	assert_int_equal(fs->da_ctr.flush_blocks[SFS_DA_DIRECT], 4);
	expect(fs, f, 5, 0, 4 * 4096, false);
	expect(fs, f, 5, 4 * 4096, 4 * 4096, true);

	/* an O_DIRECT read reads the disk: delayed blocks are placed first */
	uint8_t back[4 * 4096];
	assert_int_equal(put(fs, f, 6, 16 * 4096, 4 * 4096), 0);
	assert_int_equal(fs->da_blocks, 4);
	assert_int_equal(sfs_read_ctx(fs, f, 16 * 4096, sizeof(back), back,
				      &ctx, &done),
			 0);
	assert_int_equal(done, sizeof(back));
	for (size_t i = 0; i < sizeof(back); i++)
		assert_int_equal(back[i], pat(6, 16 * 4096 + i));
	assert_int_equal(fs->da_blocks, 0);
	assert_int_equal(fs->da_ctr.flush_blocks[SFS_DA_DIRECT], 8);
	expect(fs, f, 6, 16 * 4096, 4 * 4096, false);
	assert_int_equal(sfs_release(fs, f), 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/*
 * The cache's rules apply to delayed data: over the dirty limit the
 * writer places and writes some; on the virtual clock, data older than
 * dirty_expire is placed by the periodic write-back.
 */
static void test_da_cache_writeback(void **state)
{
	(void)state;
	struct sfs_tfs *t = open_fs(
	    4096, 64 * MiB,
	    "alloc=delalloc,mem=4M,dirty_ratio=20,dirty_background_ratio=10");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "big"), g;

	for (uint32_t b = 0; b < 2048; b += 16)
		assert_int_equal(put(fs, f, 6, (uint64_t)b * 4096, 16 * 4096),
				 0);
	/* 8 MiB written through a 4 MiB cache: bounded by the limits */
	assert_true(fs->da_blocks * 4096 <= 4 * MiB / 5 + 16 * 4096);
	assert_true(fs->da_ctr.flush_blocks[SFS_DA_WRITEBACK] > 0);
	expect(fs, f, 6, 0, 2048 * 4096, false);
	assert_int_equal(sfs_fsync(fs, f, false), 0);
	assert_true(data_extents(fs, f) <= 4);

	g = sfs_test_mkfile(fs, SFS_ROOT_INO, "small");
	assert_int_equal(put(fs, g, 7, 0, 4096), 0);
	assert_int_equal(fs->da_blocks, 1);
	assert_int_equal(sfs_clock_advance(sfs_fs_clock(fs),
					   40 * SFS_NS_PER_S),
			 0);
	assert_int_equal(sfs_getattr(fs, g, &(struct sfs_attr){0}), 0);
	assert_int_equal(fs->da_blocks, 0);
	assert_int_equal(sfs_release(fs, f), 0);
	assert_int_equal(sfs_release(fs, g), 0);
	sfs_tfs_cycle(t);
	expect(t->fs, f, 6, 0, 2048 * 4096, false);
	expect(t->fs, g, 7, 0, 4096, false);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* data=journal logs data at write time: ext4 turns delalloc off. */
static void test_da_off_with_data_journal(void **state)
{
	(void)state;
	struct sfs_tfs *t =
	    open_fs(4096, 64 * MiB, "alloc=delalloc,data=journal");
	struct sfs_fs *fs = t->fs;
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "j");

	assert_false(fs->da_on);
	assert_int_equal(put(fs, f, 8, 0, 3 * 4096), 0);
	assert_int_equal(fs->da_blocks, 0);
	assert_int_equal(data_extents(fs, f), 1);
	assert_int_equal(sfs_release(fs, f), 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* The name of the write strategy of ino for a write with ioflags. */
static const char *strategy(struct sfs_fs *fs, sfs_ino_t ino, unsigned ioflags)
{
	const struct sfs_write_ops *ops;
	struct sfs_inode *ip;

	assert_int_equal(sfs_iget(fs, ino, &ip), 0);
	ops = sfs_write_ops_of(fs, ip, ioflags);
	sfs_iput(fs, ip);
	return ops ? ops->name : "none";
}

/* chattr: set (or clear) flag on ino. */
static int chattr(struct sfs_fs *fs, sfs_ino_t ino, uint32_t flag, bool on)
{
	uint32_t fl;

	assert_int_equal(sfs_get_flags(fs, ino, &fl), 0);
	return sfs_set_flags(fs, ino, on ? fl | flag : fl & ~flag, false);
}

/*
 * The write strategy is chosen per inode from the journal's data mode,
 * delalloc and chattr +j (ext4_set_aops, ext4_inode_journal_mode), O_DIRECT
 * per call; chattr +j/-j chooses again, and the data written under each
 * strategy reads back, before and after a remount.
 */
static void test_write_strategy_choice(void **state)
{
	(void)state;
	static const struct {
		const char *opts;
		const char *plain, *with_j; /* a file's, before and after +j */
	} cases[] = {
	    {"alloc=delalloc,data=ordered", "delalloc", "delalloc"},
	    {"alloc=delalloc,data=none", "delalloc", "delalloc"},
	    {"nodelalloc,data=ordered", "cached", "journal"},
	    {"nodelalloc,data=writeback", "cached", "journal"},
	    {"nodelalloc,data=none", "cached", "cached"},
	    {"alloc=delalloc,data=journal", "journal", "journal"},
	};
	struct sfs_ioctx direct = {.flags = SFS_IOCTX_DIRECT};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct sfs_tfs *t = open_fs(4096, 64 * MiB, cases[i].opts);
		struct sfs_fs *fs = t->fs;
		sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "f");
		uint8_t buf[4096];
		size_t done;
		struct sfs_attr d;

		assert_int_equal(
		    sfs_mkdir(fs, SFS_ROOT_INO, "d", 0755, 0, 0, &d), 0);
		assert_string_equal(strategy(fs, d.ino, 0), "none");
		assert_string_equal(strategy(fs, f, 0), cases[i].plain);
		assert_string_equal(strategy(fs, f, SFS_IOCTX_DIRECT),
				    "direct");
		/* O_DIRECT is per call: the inode keeps its strategy */
		assert_string_equal(strategy(fs, f, 0), cases[i].plain);
		assert_int_equal(put(fs, f, 1, 0, 5 * 4096 + 100), 0);

		assert_int_equal(chattr(fs, f, SFS_JOURNAL_DATA_FL, true), 0);
		assert_string_equal(strategy(fs, f, 0), cases[i].with_j);
		assert_int_equal(put(fs, f, 2, 2 * 4096 + 7, 6 * 4096), 0);
		memset(buf, 0x5A, sizeof(buf));
		assert_int_equal(sfs_write_ctx(fs, f, 12 * 4096, buf,
					       sizeof(buf), &direct, &done),
				 0);
		assert_int_equal(put(fs, f, 3, 13 * 4096, 3 * 4096), 0);
		assert_string_equal(strategy(fs, f, 0), cases[i].with_j);

		assert_int_equal(chattr(fs, f, SFS_JOURNAL_DATA_FL, false), 0);
		assert_string_equal(strategy(fs, f, 0), cases[i].plain);
		assert_int_equal(put(fs, f, 4, 3 * 4096, 4096), 0);
		assert_int_equal(sfs_release(fs, f), 0);

		/* a remount reads +j back from the inode */
		assert_int_equal(chattr(fs, f, SFS_JOURNAL_DATA_FL, true), 0);
		sfs_tfs_assert_clean(t);
		t->fs = sfs_test_open(t->img, cases[i].opts);
		assert_non_null(t->fs);
		fs = t->fs;
		assert_string_equal(strategy(fs, f, 0), cases[i].with_j);
		expect(fs, f, 1, 0, 2 * 4096 + 7, false);
		expect(fs, f, 2, 2 * 4096 + 7, 4096 - 7, false);
		expect(fs, f, 4, 3 * 4096, 4096, false);
		expect(fs, f, 2, 4 * 4096, 4 * 4096 + 7, false);
		expect(fs, f, 0, 8 * 4096 + 7, 4 * 4096 - 7, true);
		assert_int_equal(
		    sfs_read(fs, f, 12 * 4096, sizeof(buf), buf, &done), 0);
		assert_int_equal(done, sizeof(buf));
		for (size_t k = 0; k < sizeof(buf); k++)
			assert_int_equal(buf[k], 0x5A);
		expect(fs, f, 3, 13 * 4096, 3 * 4096, false);
		sfs_tfs_assert_clean(t);
		sfs_tfs_free(t);
	}
}

/* Many small files: placed files end up packed, the image stays clean. */
static void test_da_small_files_and_remount(void **state)
{
	(void)state;
	struct sfs_tfs *t =
	    open_fs(1024, 32 * MiB, "alloc=delalloc,data=ordered");
	struct sfs_fs *fs = t->fs;
	struct sfs_attr d;
	sfs_ino_t ino[200];

	assert_int_equal(
	    sfs_mkdir(fs, SFS_ROOT_INO, "dir", 0755, 0, 0, &d), 0);
	for (unsigned i = 0; i < 200; i++) {
		char name[16];
		g_snprintf(name, sizeof(name), "s%u", i);
		ino[i] = sfs_test_mkfile(fs, d.ino, name);
		assert_int_equal(put(fs, ino[i], i, 0, 700 + i * 13), 0);
		assert_int_equal(sfs_release(fs, ino[i]), 0);
		if (i % 3 == 0) {
			g_snprintf(name, sizeof(name), "s%u", i);
			assert_int_equal(sfs_unlink(fs, d.ino, name), 0);
		}
	}
	sfs_tfs_cycle(t);
	for (unsigned i = 0; i < 200; i++)
		if (i % 3)
			expect(t->fs, ino[i], i, 0, 700 + i * 13, false);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/*
 * Device errors while delayed data is placed and written: fsync reports
 * -EIO, nothing is lost from memory, and once the device recovers the
 * same fsync succeeds and the data is on disk.
 */
static void test_da_device_errors(void **state)
{
	(void)state;
	struct sfs_tfs *t = sfs_tfs_alloc();
	struct sfs_config cfg;
	struct sfs_bdev *bd, *fd;
	struct sfs_fs *fs;
	char *err = NULL;
	sfs_ino_t f;
	int eio = 0;

	assert_int_equal(sfs_test_mkimage(t->img, 64 * MiB, 1024), 0);
	assert_int_equal(sfs_bdev_open_file(t->img, 0, 0, &bd), 0);
	fd = sfs_faultdev_new(bd);
	sfs_config_defaults(&cfg);
	assert_int_equal(sfs_config_parse(&cfg, "alloc=delalloc,mem=1M", NULL,
					  &err),
			 0);
	assert_int_equal(sfs_fs_open(fd, &cfg, &fs, &err), 0);
	f = sfs_test_mkfile(fs, SFS_ROOT_INO, "f");
	for (uint64_t nth = 1; nth <= 4; nth++) {
		uint64_t off = (nth - 1) * 300 * 1024;

		assert_int_equal(put(fs, f, 9, off, 300 * 1024), 0);
		sfs_faultdev_arm(fd, SFS_FAULT_READ | SFS_FAULT_WRITE, nth,
				 true);
		int rc = sfs_fsync(fs, f, false);
		sfs_faultdev_disarm(fd);
		if (rc) {
			assert_int_equal(rc, -EIO);
			eio++;
		}
		expect(fs, f, 9, 0, off + 300 * 1024, false);
		assert_int_equal(sfs_fsync(fs, f, false), 0);
		assert_int_equal(fs->da_blocks, 0);
	}
	assert_true(eio > 0);
	assert_int_equal(fs->da_ctr.failed_blocks, 0);
	assert_int_equal(sfs_release(fs, f), 0);
	assert_int_equal(sfs_fs_close(fs), 0);
	t->fs = sfs_test_open(t->img, "");
	expect(t->fs, f, 9, 0, 4 * 300 * 1024, false);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_da_config(void **state)
{
	(void)state;
	struct sfs_config c;
	char *err = NULL;

	sfs_config_defaults(&c);
	assert_false(c.delalloc);
	assert_int_equal(sfs_config_parse(&c, "alloc=delalloc", NULL, &err), 0);
	assert_string_equal(c.alloc, "mballoc");
	assert_true(c.delalloc);
	assert_int_equal(sfs_config_parse(&c, "nodelalloc", NULL, &err), 0);
	assert_false(c.delalloc);
	sfs_config_defaults(&c);
	assert_int_equal(sfs_config_parse(&c, "preset=ext4", NULL, &err), 0);
	assert_true(c.delalloc);
	assert_string_equal(c.alloc, "mballoc");
	assert_int_equal(
	    sfs_config_parse(&c, "preset=ext4,nodelalloc", NULL, &err), 0);
	assert_false(c.delalloc);
	sfs_config_defaults(&c);
	assert_int_equal(sfs_config_parse(&c, "preset=ext3", NULL, &err), 0);
	assert_false(c.delalloc);
	assert_int_equal(sfs_config_parse(&c, "delalloc=maybe", NULL, &err),
			 -EINVAL);
	assert_non_null(err);
	g_free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_da_config),
	    cmocka_unit_test(test_da_reserve_then_place),
	    cmocka_unit_test(test_da_deleted_before_writeback),
	    cmocka_unit_test(test_da_interleaved_writers_every_model),
	    cmocka_unit_test(test_da_enospc_at_write_time),
	    cmocka_unit_test(test_da_auto_da_alloc_rename),
	    cmocka_unit_test(test_da_auto_da_alloc_truncate_close),
	    cmocka_unit_test(test_da_truncate_partial),
	    cmocka_unit_test(test_da_direct_write_places_first),
	    cmocka_unit_test(test_da_cache_writeback),
	    cmocka_unit_test(test_da_off_with_data_journal),
	    cmocka_unit_test(test_write_strategy_choice),
	    cmocka_unit_test(test_da_small_files_and_remount),
	    cmocka_unit_test(test_da_device_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
