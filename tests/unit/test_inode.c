/*
 * test_inode.c - file data and attributes (simfs/inode.c): holes, partial
 * blocks, truncation with zero fill, sparse and large files, i_blocks,
 * ENOSPC with a short write, setattr, O_TRUNC, unlink while open.
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

#include "fs_priv.h"
#include "testsupport.h"

static int setup4k(void **state)
{
	return sfs_tfs_setup(state, 4096, 64 << 20, "");
}

static int setup1k(void **state)
{
	return sfs_tfs_setup(state, 1024, 64 << 20, "");
}

static sfs_ino_t mkfile(struct sfs_fs *fs, const char *name)
{
	struct sfs_attr a;

	assert_int_equal(sfs_mknod(fs, SFS_ROOT_INO, name, SFS_S_IFREG | 0644,
				   0, 1000, 1000, &a),
			 0);
	return a.ino;
}

static void wr(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off,
	       const void *buf, size_t len)
{
	size_t n;

	assert_int_equal(sfs_write(fs, ino, off, buf, len, &n), 0);
	assert_int_equal(n, len);
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

/* Writes of every alignment read back exactly; holes read as zeros. */
static void test_inode_rw_alignments(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t ino = mkfile(c->fs, "f");
	const size_t span = 300000;
	uint8_t *ref = g_malloc0(span), *buf = g_malloc0(span);
	GRand *r = g_rand_new_with_seed(7);
	struct sfs_attr a;
	size_t n;

	for (int i = 0; i < 200; i++) {
		size_t off = g_rand_int_range(r, 0, span - 1);
		size_t len = g_rand_int_range(r, 1, MIN(20000, span - off));
		fill(buf, len, i);
		memcpy(ref + off, buf, len);
		wr(c->fs, ino, off, buf, len);
	}
	assert_int_equal(sfs_getattr(c->fs, ino, &a), 0);
	size_t size = a.size;
	assert_true(size <= span);
	assert_int_equal(sfs_read(c->fs, ino, 0, span, buf, &n), 0);
	assert_int_equal(n, size);
	assert_memory_equal(buf, ref, size);
	g_rand_free(r);
	g_free(ref);
	g_free(buf);
}

/* A sparse file: far writes allocate only what they touch. */
static void test_inode_sparse_64g(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t ino = mkfile(c->fs, "sparse");
	uint8_t buf[8192], z[8192] = {0};
	uint64_t far = 64ULL << 30;
	struct sfs_attr a;
	size_t n;

	memset(buf, 0xab, sizeof(buf));
	wr(c->fs, ino, far - sizeof(buf), buf, sizeof(buf));
	wr(c->fs, ino, 10ULL << 30, buf, 100);
	assert_int_equal(sfs_getattr(c->fs, ino, &a), 0);
	assert_int_equal(a.size, far);
	/* 2 + 1 data blocks plus at most 2 x (IND + DIND + TIND) */
	assert_true(a.blocks <= (3 + 6) * 8);
	assert_true(a.blocks >= 3 * 8);
	assert_int_equal(sfs_read(c->fs, ino, 5ULL << 30, sizeof(buf), buf,
				  &n),
			 0);
	assert_int_equal(n, sizeof(buf));
	assert_memory_equal(buf, z, sizeof(buf));
	assert_int_equal(sfs_read(c->fs, ino, far - 100, sizeof(buf), buf, &n),
			 0);
	assert_int_equal(n, 100);
	assert_int_equal(buf[99], 0xab);
	/* large_file is set once a file reaches 2 GiB */
	assert_true(sfs_le32(c->fs->sb.s_feature_ro_compat) &
		    SFS_FEATURE_RO_COMPAT_LARGE_FILE);
	/* a read at or past EOF returns 0 bytes */
	assert_int_equal(sfs_read(c->fs, ino, far, 10, buf, &n), 0);
	assert_int_equal(n, 0);
}

/* Past the block map's reach: -EFBIG, nothing written. */
static void test_inode_efbig(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t ino = mkfile(c->fs, "big");
	uint64_t max = c->fs->map->max_bytes(c->fs->bs);
	struct sfs_attr in = {.size = max + 1}, a;
	uint8_t b = 1;
	size_t n;

	assert_int_equal(sfs_write(c->fs, ino, max, &b, 1, &n), -EFBIG);
	assert_int_equal(n, 0);
	assert_int_equal(sfs_setattr(c->fs, ino, &in, SFS_SET_SIZE, &a),
			 -EFBIG);
	assert_int_equal(sfs_write(c->fs, ino, max - 1, &b, 1, &n), 0);
	assert_int_equal(sfs_getattr(c->fs, ino, &a), 0);
	assert_int_equal(a.size, max);
}

/* Shrinking zeroes the tail: growing again shows zeros, not old bytes. */
static void test_inode_truncate_zero_fill(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t ino = mkfile(c->fs, "t");
	uint8_t buf[20000], out[20000];
	struct sfs_attr in = {0}, a;
	size_t n;

	memset(buf, 0x5a, sizeof(buf));
	wr(c->fs, ino, 0, buf, sizeof(buf));
	in.size = 5000;
	assert_int_equal(sfs_setattr(c->fs, ino, &in, SFS_SET_SIZE, &a), 0);
	assert_int_equal(a.size, 5000);
	assert_int_equal(a.blocks, 2 * 8); /* 2 blocks of 4 KiB */
	in.size = 20000;
	assert_int_equal(sfs_setattr(c->fs, ino, &in, SFS_SET_SIZE, &a), 0);
	assert_int_equal(sfs_read(c->fs, ino, 0, sizeof(out), out, &n), 0);
	assert_int_equal(n, 20000);
	assert_memory_equal(out, buf, 5000);
	for (size_t i = 5000; i < 20000; i++)
		assert_int_equal(out[i], 0);
	in.size = 0;
	assert_int_equal(sfs_setattr(c->fs, ino, &in, SFS_SET_SIZE, &a), 0);
	assert_int_equal(a.blocks, 0);
}

/* i_blocks counts data and indirect blocks exactly (1 KiB: 256/IND).
 * The free counts are read after a sync: under a journal, freed blocks
 * return at its commit. */
static void test_inode_iblocks_exact(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t ino = mkfile(c->fs, "ib");
	struct sfs_statfs s0, s1;
	uint8_t *buf = g_malloc(1024 * 400);
	struct sfs_attr in = {0}, a;

	assert_int_equal(sfs_fs_sync(c->fs), 0);
	assert_int_equal(sfs_statfs(c->fs, &s0), 0);
	memset(buf, 1, 1024 * 400);
	/* 400 blocks: 12 direct + 256 via IND + 132 via DIND (1 + 1 IND) */
	wr(c->fs, ino, 0, buf, 1024 * 400);
	assert_int_equal(sfs_getattr(c->fs, ino, &a), 0);
	assert_int_equal(a.blocks, (400 + 1 + 2) * 2);
	assert_int_equal(sfs_fs_sync(c->fs), 0);
	assert_int_equal(sfs_statfs(c->fs, &s1), 0);
	assert_int_equal(s0.blocks_free - s1.blocks_free, 403);
	/* cut inside the IND range: DIND and its IND go */
	in.size = 100 * 1024;
	assert_int_equal(sfs_setattr(c->fs, ino, &in, SFS_SET_SIZE, &a), 0);
	assert_int_equal(a.blocks, (100 + 1) * 2);
	assert_int_equal(sfs_fs_sync(c->fs), 0);
	assert_int_equal(sfs_statfs(c->fs, &s1), 0);
	assert_int_equal(s0.blocks_free - s1.blocks_free, 101);
	/* cut to the direct blocks: IND goes */
	in.size = 12 * 1024;
	assert_int_equal(sfs_setattr(c->fs, ino, &in, SFS_SET_SIZE, &a), 0);
	assert_int_equal(a.blocks, 12 * 2);
	g_free(buf);
}

/* Sequential writes on an empty fs land contiguously, IND before data. */
static void test_inode_sequential_layout(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t ino = mkfile(c->fs, "seq");
	uint8_t *buf = g_malloc0(1024 * 300);
	struct sfs_inode *ip;
	sfs_blk_t p11, p12, p;

	wr(c->fs, ino, 0, buf, 1024 * 300);
	sfs_lock(c->fs);
	assert_int_equal(sfs_iget(c->fs, ino, &ip), 0);
	assert_int_equal(sfs_bmap(c->fs, ip, 11, false, &p11), 0);
	assert_int_equal(sfs_bmap(c->fs, ip, 12, false, &p12), 0);
	sfs_blk_t ind = sfs_le32(ip->d.i_block[SFS_IND_BLOCK]);
	assert_int_equal(ind, p11 + 1);
	assert_int_equal(p12, p11 + 2);
	for (uint32_t l = 13; l < 268; l++) {
		assert_int_equal(sfs_bmap(c->fs, ip, l, false, &p), 0);
		assert_int_equal(p, p12 + (l - 12));
	}
	assert_int_equal(sfs_bmap(c->fs, ip, 300, false, &p), 0);
	assert_int_equal(p, 0); /* hole past EOF */
	sfs_iput(c->fs, ip);
	sfs_unlock(c->fs);
	g_free(buf);
}

/* Filling the device: ENOSPC with a short write; space comes back. */
static void test_inode_enospc_short_write(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t ino = mkfile(c->fs, "fill");
	const size_t chunk = 1 << 20;
	uint8_t *buf = g_malloc(chunk);
	struct sfs_statfs st;
	uint64_t off = 0;
	size_t n;
	int rc;

	memset(buf, 0x77, chunk);
	for (;;) {
		rc = sfs_write(c->fs, ino, off, buf, chunk, &n);
		off += n;
		if (rc)
			break;
		assert_int_equal(n, chunk);
	}
	assert_int_equal(rc, -ENOSPC);
	assert_int_equal(sfs_statfs(c->fs, &st), 0);
	assert_int_equal(st.blocks_free, 0);
	struct sfs_attr a;
	assert_int_equal(sfs_getattr(c->fs, ino, &a), 0);
	assert_int_equal(a.size, off);
	/* a second file cannot get a block either */
	sfs_ino_t f2 = mkfile(c->fs, "f2");
	assert_int_equal(sfs_write(c->fs, f2, 0, buf, 10, &n), -ENOSPC);
	assert_int_equal(n, 0);
	/* the data written is intact */
	uint8_t chk[4096];
	assert_int_equal(sfs_read(c->fs, ino, off - 4096, 4096, chk, &n), 0);
	assert_int_equal(n, 4096);
	assert_int_equal(chk[4095], 0x77);
	/* freeing space makes writes work again */
	assert_int_equal(sfs_unlink(c->fs, SFS_ROOT_INO, "fill"), 0);
	assert_int_equal(sfs_write(c->fs, f2, 0, buf, chunk, &n), 0);
	assert_int_equal(n, chunk);
	g_free(buf);
}

/* setattr of mode, owner and times; ctime moves. */
static void test_inode_setattr_fields(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t ino = mkfile(c->fs, "attr");
	struct sfs_attr in = {0}, a;

	in.mode = 0600 | SFS_S_IFDIR; /* the type bits are ignored */
	in.uid = 70000;               /* needs the high 16 bits */
	in.gid = 4242;
	in.atime.tv_sec = 1000000000;
	in.atime.tv_nsec = 123456789;
	in.mtime.tv_sec = 1100000000;
	in.mtime.tv_nsec = 5;
	assert_int_equal(sfs_setattr(c->fs, ino, &in,
				     SFS_SET_MODE | SFS_SET_UID | SFS_SET_GID |
					     SFS_SET_ATIME | SFS_SET_MTIME,
				     &a),
			 0);
	assert_int_equal(a.mode, SFS_S_IFREG | 0600);
	assert_int_equal(a.uid, 70000);
	assert_int_equal(a.gid, 4242);
	assert_int_equal(a.atime.tv_sec, 1000000000);
	assert_int_equal(a.atime.tv_nsec, 123456789);
	assert_int_equal(a.mtime.tv_sec, 1100000000);
	assert_int_equal(a.mtime.tv_nsec, 5);
	assert_true(a.ctime.tv_sec > 1500000000);
	/* survives a remount */
	assert_int_equal(sfs_fs_close(c->fs), 0);
	c->fs = sfs_test_open(c->img, "");
	assert_int_equal(sfs_getattr(c->fs, ino, &a), 0);
	assert_int_equal(a.uid, 70000);
	assert_int_equal(a.mtime.tv_sec, 1100000000);
	assert_int_equal(a.atime.tv_nsec, 123456789);
	/* size on a directory is refused */
	in.size = 0;
	assert_int_equal(sfs_setattr(c->fs, SFS_ROOT_INO, &in, SFS_SET_SIZE,
				     &a),
			 -EISDIR);
}

/* O_TRUNC truncates; an unlinked open file lives until release. */
static void test_inode_open_trunc_and_orphan(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t ino = mkfile(c->fs, "o");
	uint8_t buf[10000];
	struct sfs_statfs s0, s1;
	struct sfs_attr a;
	size_t n;

	memset(buf, 3, sizeof(buf));
	wr(c->fs, ino, 0, buf, sizeof(buf));
	assert_int_equal(sfs_open(c->fs, ino, O_RDWR | O_TRUNC), 0);
	assert_int_equal(sfs_getattr(c->fs, ino, &a), 0);
	assert_int_equal(a.size, 0);
	wr(c->fs, ino, 0, buf, sizeof(buf));
	assert_int_equal(sfs_fs_sync(c->fs), 0);
	assert_int_equal(sfs_statfs(c->fs, &s0), 0);
	assert_int_equal(sfs_unlink(c->fs, SFS_ROOT_INO, "o"), 0);
	assert_int_equal(sfs_lookup(c->fs, SFS_ROOT_INO, "o", &a), -ENOENT);
	assert_int_equal(sfs_read(c->fs, ino, 0, sizeof(buf), buf, &n), 0);
	assert_int_equal(n, sizeof(buf));
	assert_int_equal(buf[9999], 3);
	assert_int_equal(sfs_getattr(c->fs, ino, &a), 0);
	assert_int_equal(a.nlink, 0);
	assert_int_equal(sfs_release(c->fs, ino), 0);
	assert_int_equal(sfs_getattr(c->fs, ino, &a), -ESTALE);
	/* under a journal, freed blocks return at its commit */
	assert_int_equal(sfs_fs_sync(c->fs), 0);
	assert_int_equal(sfs_statfs(c->fs, &s1), 0);
	assert_int_equal(s1.blocks_free - s0.blocks_free, 3);
	assert_int_equal(s1.inodes_free - s0.inodes_free, 1);
	assert_int_equal(sfs_release(c->fs, ino), -EBADF);
}

/* An unlinked file still open at unmount is freed by the unmount. */
static void test_inode_orphan_freed_at_close(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t ino = mkfile(c->fs, "orphan");
	uint8_t buf[5000] = {1};

	wr(c->fs, ino, 0, buf, sizeof(buf));
	assert_int_equal(sfs_open(c->fs, ino, O_RDONLY), 0);
	assert_int_equal(sfs_unlink(c->fs, SFS_ROOT_INO, "orphan"), 0);
	/* sfs_tfs_teardown closes with the file still open and runs e2fsck */
}

/* Write and read through the maximum block-map depth at 1 KiB blocks. */
static void test_inode_tind_1k(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t ino = mkfile(c->fs, "deep");
	uint64_t a = 256;
	uint64_t tind_start = (12 + a + a * a) * 1024ULL;
	uint8_t buf[3000], out[3000];
	struct sfs_attr at;
	size_t n;

	fill(buf, sizeof(buf), 9);
	wr(c->fs, ino, tind_start - 1000, buf, sizeof(buf)); /* DIND|TIND */
	wr(c->fs, ino, (12 + a) * 1024ULL - 7, buf, 20);     /* IND|DIND */
	assert_int_equal(sfs_read(c->fs, ino, tind_start - 1000, sizeof(out),
				  out, &n),
			 0);
	assert_int_equal(n, sizeof(out));
	assert_memory_equal(out, buf, sizeof(buf));
	assert_int_equal(sfs_getattr(c->fs, ino, &at), 0);
	/* data: 3 + 2 blocks; meta: DIND + its last IND, TIND + DIND + IND,
	 * then IND (the last of the single range) + DIND's first IND = 7 */
	assert_int_equal(at.blocks, (5 + 7) * 2);
}

/* O_DIRECT writes reach the device before returning; other writes stay
 * in the cache.  The writer's pid colours where a new file starts. */
static void test_inode_direct_and_colour(void **state)
{
	struct sfs_tfs *c = *state;
	struct sfs_ioctx direct = {.flags = SFS_IOCTX_DIRECT, .pid = 3};
	struct sfs_ioctx buffered = {.pid = 5};
	sfs_ino_t a = mkfile(c->fs, "direct"), b = mkfile(c->fs, "buffered");
	struct sfs_bdev_counters before, after;
	uint8_t buf[65536];
	struct sfs_inode *ip;
	sfs_blk_t pa, pb;
	size_t n;

	memset(buf, 0x3c, sizeof(buf));
	sfs_bdev_counters(sfs_fs_bdev(c->fs), &before);
	assert_int_equal(sfs_write_ctx(c->fs, b, 0, buf, sizeof(buf),
				       &buffered, &n),
			 0);
	sfs_bdev_counters(sfs_fs_bdev(c->fs), &after);
	assert_int_equal(after.cat_bytes[SFS_IO_WRITE][SFS_IO_DATA],
			 before.cat_bytes[SFS_IO_WRITE][SFS_IO_DATA]);
	assert_int_equal(sfs_write_ctx(c->fs, a, 0, buf, sizeof(buf), &direct,
				       &n),
			 0);
	sfs_bdev_counters(sfs_fs_bdev(c->fs), &after);
	assert_int_equal(after.cat_bytes[SFS_IO_WRITE][SFS_IO_DATA] -
				 before.cat_bytes[SFS_IO_WRITE][SFS_IO_DATA],
			 sizeof(buf));
	/* pid 3 and pid 5 start 2 x bpg/16 blocks apart in the group */
	sfs_lock(c->fs);
	assert_int_equal(sfs_iget(c->fs, a, &ip), 0);
	assert_int_equal(sfs_bmap(c->fs, ip, 0, false, &pa), 0);
	sfs_iput(c->fs, ip);
	assert_int_equal(sfs_iget(c->fs, b, &ip), 0);
	assert_int_equal(sfs_bmap(c->fs, ip, 0, false, &pb), 0);
	sfs_iput(c->fs, ip);
	uint32_t slot = c->fs->bpg / 16;
	assert_int_equal((pa - sfs_group_first(c->fs, 0)) / slot, 3);
	assert_int_equal((pb - sfs_group_first(c->fs, 0)) / slot, 5);
	sfs_unlock(c->fs);
}

/*
 * O_DIRECT reads come from the device even when the cache holds the
 * blocks, write dirty copies first, leave nothing cached and read nothing
 * ahead; buffered reads of the same blocks are served from memory.
 */
static void test_inode_direct_read(void **state)
{
	struct sfs_tfs *c = *state;
	struct sfs_ioctx direct = {.flags = SFS_IOCTX_DIRECT, .pid = 3};
	sfs_ino_t ino = mkfile(c->fs, "f");
	struct sfs_bdev_counters b0, b1, b2, b3;
	static uint8_t buf[1 << 20], out[1 << 20];
	size_t n;

	fill(buf, sizeof(buf), 4);
	wr(c->fs, ino, 0, buf, sizeof(buf)); /* buffered: dirty in the cache */
	sfs_bdev_counters(sfs_fs_bdev(c->fs), &b0);
	/* direct read of the first 64 KiB: written first, then read back */
	assert_int_equal(sfs_read_ctx(c->fs, ino, 0, 65536, out, &direct, &n),
			 0);
	assert_int_equal(n, 65536);
	assert_memory_equal(out, buf, 65536);
	sfs_bdev_counters(sfs_fs_bdev(c->fs), &b1);
	assert_true(b1.cat_bytes[SFS_IO_WRITE][SFS_IO_DATA] -
			b0.cat_bytes[SFS_IO_WRITE][SFS_IO_DATA] >=
		    65536);
	assert_int_equal(b1.cat_bytes[SFS_IO_READ][SFS_IO_DATA] -
			     b0.cat_bytes[SFS_IO_READ][SFS_IO_DATA],
			 65536); /* exactly what was asked: no read-ahead */
	/* again: the device again, nothing was kept */
	assert_int_equal(sfs_read_ctx(c->fs, ino, 0, 65536, out, &direct, &n),
			 0);
	sfs_bdev_counters(sfs_fs_bdev(c->fs), &b2);
	assert_int_equal(b2.cat_bytes[SFS_IO_READ][SFS_IO_DATA] -
			     b1.cat_bytes[SFS_IO_READ][SFS_IO_DATA],
			 65536);
	assert_memory_equal(out, buf, 65536);
	/* buffered reads of the rest (still cached, dirty): no device read */
	assert_int_equal(sfs_read(c->fs, ino, 65536, sizeof(out) - 65536, out,
				  &n),
			 0);
	assert_memory_equal(out, buf + 65536, sizeof(out) - 65536);
	sfs_bdev_counters(sfs_fs_bdev(c->fs), &b3);
	assert_int_equal(b3.cat_bytes[SFS_IO_READ][SFS_IO_DATA],
			 b2.cat_bytes[SFS_IO_READ][SFS_IO_DATA]);
	/* an unaligned direct read still returns the right bytes */
	assert_int_equal(sfs_read_ctx(c->fs, ino, 1000, 10000, out, &direct,
				      &n),
			 0);
	assert_int_equal(n, 10000);
	assert_memory_equal(out, buf + 1000, 10000);
}

int main(void)
{
	static const char *const only_simfs[] = {
	    "test_inode_direct_and_colour",
	    "where data starts in group 0 (with flex_bg it holds every "
	    "group's bitmaps and inode tables)",
	    NULL};
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_inode_direct_read, setup4k,
					    sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_inode_rw_alignments, setup4k,
					    sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_inode_sparse_64g, setup4k,
					    sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_inode_efbig, setup4k,
					    sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_inode_truncate_zero_fill,
					    setup4k, sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_inode_iblocks_exact, setup1k,
					    sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_inode_sequential_layout,
					    setup1k, sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_inode_enospc_short_write,
					    setup4k, sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_inode_setattr_fields, setup4k,
					    sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_inode_open_trunc_and_orphan,
					    setup4k, sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_inode_orphan_freed_at_close,
					    setup4k, sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_inode_tind_1k, setup1k,
					    sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_inode_direct_and_colour,
					    setup1k, sfs_tfs_teardown),
	};
	size_t n = G_N_ELEMENTS(tests);
	struct CMUnitTest *run = sfs_test_select(tests, &n, only_simfs);

	return _cmocka_run_group_tests("tests", run, n, NULL, NULL);
}
