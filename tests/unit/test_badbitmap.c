/*
 * test_badbitmap.c - a bad block or inode bitmap is contained to its group,
 * as ext4 contains it (ext4_mark_group_bitmap_corrupted): on a
 * metadata_csum image made by mke2fs, with a bit flipped in a bitmap, a
 * new file gets its blocks (or its inode) from another group, the files
 * already there read back, freeing into the group leaves its bitmap and
 * count alone, statfs no longer counts the group's free blocks or inodes,
 * and the error is recorded (s_state ERROR, on disk after unmount) while
 * the filesystem stays writable.  Every group bad is ENOSPC, not EIO.  A
 * block bitmap that leaves its group's own inode table free (an ext2
 * image: no checksum, no flex_bg) or cannot be read is bad in the same
 * way.  Each case under every allocator of the registry.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "alloc.h"
#include "blockdev.h"
#include "cache.h"
#include "config.h"
#include "fs.h"
#include "fs_priv.h"
#include "testsupport.h"

#define BS 1024u
#define GROUPS 4u /* 32 MiB at 1 KiB blocks: 8192 blocks a group */
#define OLD_LEN (20u * BS)

/* bg_flags (ext4's EXT4_BG_INODE_UNINIT, EXT4_BG_BLOCK_UNINIT) */
#define BG_INODE_UNINIT 0x1
#define BG_BLOCK_UNINIT 0x2

/* The fixture: a base image and where each group's bitmaps are. */
struct base {
	char *dir, *img, *work;
	uint64_t bbitmap[GROUPS], ibitmap[GROUPS], itable[GROUPS];
	sfs_ino_t old_ino;
};

static uint8_t old_byte(uint64_t i)
{
	return (uint8_t)(i * 7 + 3);
}

static bool any_flag(struct sfs_fs *fs, uint16_t flag)
{
	for (uint32_t g = 0; g < fs->groups; g++)
		if (sfs_le16(fs->gd[g].bg_flags) & flag)
			return true;
	return false;
}

/*
 * "old" (OLD_LEN bytes of old_byte) in the root, in group 0; every group
 * used, so that no bitmap is one the mount builds afresh (BLOCK_UNINIT,
 * INODE_UNINIT) rather than reads: directories until each group holds an
 * inode, a file over the whole free space, removed again.
 */
static void make_base(struct base *b, bool ext2)
{
	struct sfs_attr a;
	struct sfs_fs *fs;
	uint8_t buf[OLD_LEN];
	char name[32];
	sfs_ino_t f;

	b->dir = sfs_test_tmpdir();
	b->img = g_build_filename(b->dir, "base", NULL);
	b->work = g_build_filename(b->dir, "img", NULL);
	if (ext2) {
		assert_int_equal(
		    sfs_test_mke2fs(b->img, 32u << 20, BS, "ext2", NULL), 0);
	} else {
		gchar *argv[] = {"mke2fs",
				 "-F",
				 "-q",
				 "-t",
				 "ext4",
				 "-b",
				 "1024",
				 "-O",
				 "metadata_csum,^64bit,^flex_bg,^orphan_file,"
				 "^metadata_csum_seed",
				 "-E",
				 "lazy_itable_init=0",
				 b->img,
				 "32M",
				 NULL};
		g_free(sfs_test_run(argv));
	}
	fs = sfs_test_open(b->img, "alloc=blockmap,nodelalloc");
	assert_int_equal(fs->groups, GROUPS);
	for (unsigned i = 0; i < 200 && any_flag(fs, BG_INODE_UNINIT); i++) {
		g_snprintf(name, sizeof(name), "d%u", i);
		assert_int_equal(
		    sfs_mkdir(fs, SFS_ROOT_INO, name, 0755, 0, 0, &a), 0);
	}
	assert_false(any_flag(fs, BG_INODE_UNINIT));
	f = sfs_test_mkfile(fs, SFS_ROOT_INO, "fill");
	for (uint64_t off = 0; any_flag(fs, BG_BLOCK_UNINIT); off += 256 * BS)
		sfs_test_fill(fs, f, off, 256 * BS, 0xee);
	assert_int_equal(sfs_release(fs, f), 0);
	assert_int_equal(sfs_unlink(fs, SFS_ROOT_INO, "fill"), 0);
	f = sfs_test_mkfile(fs, SFS_ROOT_INO, "old");
	for (uint64_t i = 0; i < OLD_LEN; i++)
		buf[i] = old_byte(i);
	size_t w;
	assert_int_equal(sfs_write(fs, f, 0, buf, OLD_LEN, &w), 0);
	assert_int_equal(w, OLD_LEN);
	assert_int_equal(sfs_release(fs, f), 0);
	b->old_ino = f;
	assert_int_equal((f - 1) / fs->ipg, 0);
	for (uint32_t g = 0; g < GROUPS; g++) {
		b->bbitmap[g] = sfs_le32(fs->gd[g].bg_block_bitmap);
		b->ibitmap[g] = sfs_le32(fs->gd[g].bg_inode_bitmap);
		b->itable[g] = sfs_le32(fs->gd[g].bg_inode_table);
	}
	assert_int_equal(sfs_fs_close(fs), 0);
}

static void free_base(struct base *b)
{
	sfs_test_rmtree(b->dir);
	g_free(b->img);
	g_free(b->work);
	g_free(b->dir);
}

/* The work image: a copy of the base. */
static void fresh_copy(struct base *b)
{
	gchar *cp[] = {"cp", b->img, b->work, NULL};

	g_free(sfs_test_run(cp));
}

/* XOR mask into the byte at byte offset off of the work image. */
static void poke_byte(struct base *b, uint64_t off, uint8_t mask)
{
	int fd = open(b->work, O_RDWR);
	uint8_t c;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, (off_t)off), 1);
	c ^= mask;
	assert_int_equal(pwrite(fd, &c, 1, (off_t)off), 1);
	close(fd);
}

/* Flip one bit of a bitmap block, inside the bytes its checksum covers
 * (an inode bitmap's: 2048 inodes a group, 256 bytes). */
static void flip_bitmap(struct base *b, uint64_t blk)
{
	poke_byte(b, blk * BS + 200, 0x10);
}

static char *opts_for(const struct sfs_alloc_preset *p)
{
	return g_strdup_printf("alloc=%s,nodelalloc", p->name);
}

/* "old" reads back whole. */
static void old_reads(struct sfs_fs *fs, struct base *b)
{
	uint8_t buf[OLD_LEN];
	size_t got = 0;

	assert_int_equal(sfs_open(fs, b->old_ino, O_RDONLY), 0);
	assert_int_equal(sfs_read(fs, b->old_ino, 0, OLD_LEN, buf, &got), 0);
	assert_int_equal(got, OLD_LEN);
	for (uint64_t i = 0; i < OLD_LEN; i++)
		if (buf[i] != old_byte(i))
			fail_msg("old: byte %u is %u", (unsigned)i, buf[i]);
	assert_int_equal(sfs_release(fs, b->old_ino), 0);
}

static int not_in_group0(void *ctx, uint32_t lblk, sfs_blk_t pblk, uint32_t len,
			 bool meta)
{
	struct sfs_fs *fs = ctx;

	(void)lblk;
	(void)meta;
	for (uint32_t i = 0; i < len; i++)
		if (sfs_blk_group(fs, pblk + i) == 0)
			fail_msg("block %u is in the bad group 0", pblk + i);
	return 0;
}

/* The recorded, contained error: s_state ERROR, still writable. */
static void error_recorded(struct sfs_fs *fs)
{
	assert_true(fs->error_recorded);
	assert_true(fs->sb.s_state & sfs_cpu_to_le16(SFS_STATE_ERROR));
	assert_false(fs->error);
	assert_int_equal(sfs_check_writable(fs), 0);
}

/* After unmount the superblock says "with errors", not clean. */
static void error_on_disk(struct base *b)
{
	struct sfs_dsuper sb;
	int fd = open(b->work, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &sb, sizeof(sb), 1024), sizeof(sb));
	close(fd);
	assert_true(sfs_le16(sb.s_state) & SFS_STATE_ERROR);
	assert_false(sfs_le16(sb.s_state) & SFS_STATE_VALID);
}

/* Group g's descriptor: its free blocks (inode false) or inodes. */
static uint16_t gd_free(struct sfs_fs *fs, uint32_t g, bool inode)
{
	return sfs_le16(inode ? fs->gd[g].bg_free_inodes_count
			      : fs->gd[g].bg_free_blocks_count);
}

/* statfs's free blocks or inodes: the other groups' descriptors. */
static void statfs_without_group0(struct sfs_fs *fs, bool inode)
{
	struct sfs_statfs st;
	uint64_t n = 0;

	for (uint32_t g = 1; g < fs->groups; g++)
		n += gd_free(fs, g, inode);
	assert_int_equal(sfs_statfs(fs, &st), 0);
	assert_int_equal(inode ? st.inodes_free : st.blocks_free, n);
}

/* Group 0's block (inode false) or inode bitmap is bad: "old" reads,
 * statfs leaves the group out, and removing "old" (in group 0) frees
 * nothing into it. */
static void group0_left_alone(struct sfs_fs *fs, struct base *b, bool inode)
{
	uint16_t free0 = gd_free(fs, 0, inode);

	old_reads(fs, b);
	statfs_without_group0(fs, inode);
	assert_int_equal(sfs_unlink(fs, SFS_ROOT_INO, "old"), 0);
	assert_int_equal(sfs_fs_sync(fs), 0);
	assert_int_equal(gd_free(fs, 0, inode), free0);
	statfs_without_group0(fs, inode);
}

/*
 * Group 0's block bitmap went bad while f (in the root, whose goal is
 * group 0) was written: its blocks are all elsewhere and it syncs; "old"
 * reads; statfs leaves group 0 out; removing "old" frees nothing into
 * group 0; the error is recorded.
 */
static void new_outside_group0(struct sfs_fs *fs, sfs_ino_t f, struct base *b,
			       const struct sfs_alloc_preset *p)
{
	struct sfs_inode *ip;

	assert_int_equal(sfs_fs_sync(fs), 0);
	assert_true(sfs_group_bad(fs, 0, false));
	assert_false(sfs_group_bad(fs, 0, true));
	error_recorded(fs);
	assert_int_equal(sfs_iget(fs, f, &ip), 0);
	assert_int_equal(sfs_i_size(ip), 64 * BS);
	assert_int_equal(sfs_imap(fs, ip)->walk(fs, ip, not_in_group0, fs), 0);
	sfs_iput(fs, ip);
	assert_int_equal(sfs_release(fs, f), 0);
	group0_left_alone(fs, b, false);
	if (p->place->check) {
		char *err = NULL;
		if (p->place->check(fs->alloc, &err))
			fail_msg("%s: %s", p->name, err);
	}
}

/* One case, on a fresh copy of the base, under the allocator p (opts
 * selects it); it leaves the image unmounted. */
typedef void case_fn(struct base *b, const struct sfs_alloc_preset *p,
		     const char *opts);

/* A base image (ext2's or the metadata_csum one), and the case on it
 * under every allocator of the registry: each leaves the error on disk. */
static void every_allocator(bool ext2, case_fn *one)
{
	const struct sfs_alloc_preset *p;
	struct base b;

	make_base(&b, ext2);
	for (unsigned i = 0; (p = sfs_alloc_nth(i)); i++) {
		char *opts = opts_for(p);

		fresh_copy(&b);
		one(&b, p, opts);
		error_on_disk(&b);
		g_free(opts);
	}
	free_base(&b);
}

/* With group 0's block bitmap bad on the image: a new file. */
static void new_file(struct base *b, const struct sfs_alloc_preset *p,
		     const char *opts)
{
	struct sfs_fs *fs = sfs_test_open(b->work, opts);
	sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "new");

	sfs_test_fill(fs, f, 0, 64 * BS, 0x5a);
	new_outside_group0(fs, f, b, p);
	assert_int_equal(sfs_fs_close(fs), 0);
}

static void bbitmap0_flipped(struct base *b, const struct sfs_alloc_preset *p,
			     const char *opts)
{
	flip_bitmap(b, b->bbitmap[0]);
	new_file(b, p, opts);
}

static void test_block_bitmap_bad(void **state)
{
	(void)state;
	every_allocator(false, bbitmap0_flipped);
}

/* ext4_valid_block_bitmap: the first inode table block called free. */
static void itable0_free(struct base *b, const struct sfs_alloc_preset *p,
			 const char *opts)
{
	uint64_t bit = b->itable[0] - 1; /* first_data_block 1 at 1 KiB */

	poke_byte(b, b->bbitmap[0] * BS + bit / 8, (uint8_t)(1u << (bit % 8)));
	new_file(b, p, opts);
}

static void test_block_bitmap_invalid(void **state)
{
	(void)state;
	every_allocator(true, itable0_free);
}

/* Group 0's block bitmap cannot be read (a device error, as
 * ext4_wait_block_bitmap meets it): the same as a bad one. */
static void bbitmap0_unreadable(struct base *b,
				const struct sfs_alloc_preset *p,
				const char *opts)
{
	struct sfs_config cfg;
	struct sfs_bdev *bd, *fd;
	struct sfs_fs *fs;
	char *err = NULL;
	sfs_ino_t f;

	sfs_config_defaults(&cfg);
	assert_int_equal(sfs_config_parse(&cfg, opts, NULL, &err), 0);
	assert_int_equal(sfs_bdev_open_file(b->work, 0, 0, &bd), 0);
	fd = sfs_faultdev_new(bd);
	assert_int_equal(sfs_fs_open(fd, &cfg, &fs, &err), 0);
	f = sfs_test_mkfile(fs, SFS_ROOT_INO, "new");
	/* the bitmap must come from the device: the next read */
	assert_int_equal(sfs_fs_sync(fs), 0);
	sfs_cache_discard(fs->cache, b->bbitmap[0], 1);
	sfs_faultdev_arm(fd, SFS_FAULT_READ, 1, false);
	sfs_test_fill(fs, f, 0, 64 * BS, 0x5a);
	assert_int_equal(sfs_faultdev_fired(fd), 1);
	new_outside_group0(fs, f, b, p);
	assert_int_equal(sfs_fs_close(fs), 0);
}

static void test_block_bitmap_unreadable(void **state)
{
	(void)state;
	every_allocator(false, bbitmap0_unreadable);
}

/*
 * Group 0's inode bitmap is bad: a new file in the root gets an inode of
 * another group and is written; "old" reads; statfs leaves group 0's free
 * inodes out; removing "old" (an inode of group 0) succeeds and leaves the
 * group's inode bitmap and count alone.
 */
static void ibitmap0_flipped(struct base *b, const struct sfs_alloc_preset *p,
			     const char *opts)
{
	struct sfs_fs *fs;
	sfs_ino_t f;

	(void)p;
	flip_bitmap(b, b->ibitmap[0]);
	fs = sfs_test_open(b->work, opts);
	f = sfs_test_mkfile(fs, SFS_ROOT_INO, "new");
	assert_int_not_equal((f - 1) / fs->ipg, 0);
	assert_true(sfs_group_bad(fs, 0, true));
	assert_false(sfs_group_bad(fs, 0, false));
	error_recorded(fs);
	sfs_test_fill(fs, f, 0, 16 * BS, 0x5a);
	assert_int_equal(sfs_release(fs, f), 0);
	group0_left_alone(fs, b, true);
	assert_int_equal(sfs_fs_close(fs), 0);
}

static void test_inode_bitmap_bad(void **state)
{
	(void)state;
	every_allocator(false, ibitmap0_flipped);
}

/* Every group's block (inode false) or inode bitmap bad: ENOSPC for a
 * write or a new inode, nothing free in statfs, "old" still read. */
static void all_bad(struct base *b, const char *opts, bool inode)
{
	struct sfs_statfs st;
	struct sfs_attr a;
	struct sfs_fs *fs;
	uint8_t buf[BS] = {0};
	size_t w = 0;
	int rc;

	fresh_copy(b);
	for (uint32_t g = 0; g < GROUPS; g++)
		flip_bitmap(b, inode ? b->ibitmap[g] : b->bbitmap[g]);
	fs = sfs_test_open(b->work, opts);
	if (inode) {
		rc = sfs_mknod(fs, SFS_ROOT_INO, "new", 0100644, 0, 0, 0, &a);
	} else {
		sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "new");

		rc = sfs_write(fs, f, 0, buf, sizeof(buf), &w);
		assert_int_equal(w, 0);
		assert_int_equal(sfs_release(fs, f), 0);
	}
	assert_int_equal(rc, -ENOSPC);
	for (uint32_t g = 0; g < GROUPS; g++)
		assert_true(sfs_group_bad(fs, g, inode));
	error_recorded(fs);
	assert_int_equal(sfs_statfs(fs, &st), 0);
	assert_int_equal(inode ? st.inodes_free : st.blocks_free, 0);
	old_reads(fs, b);
	assert_int_equal(sfs_fs_close(fs), 0);
}

static void all_flipped(struct base *b, const struct sfs_alloc_preset *p,
			const char *opts)
{
	(void)p;
	all_bad(b, opts, false);
	error_on_disk(b);
	all_bad(b, opts, true);
}

static void test_every_group_bad(void **state)
{
	(void)state;
	every_allocator(false, all_flipped);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_block_bitmap_bad),
	    cmocka_unit_test(test_block_bitmap_invalid),
	    cmocka_unit_test(test_block_bitmap_unreadable),
	    cmocka_unit_test(test_inode_bitmap_bad),
	    cmocka_unit_test(test_every_group_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
