/*
 * test_extent.c - ext4 extent-mapped files (models/alloc/extent.c) under
 * alloc=extent: sequential files in few maximal extents, depth 1 and 2
 * trees, seeded random writes and truncates against an in-memory model,
 * truncation pulling the tree back into the inode, exact i_blocks, holes,
 * directories and slow symlinks, per-inode dispatch, and the kernel's ext4
 * driver reading the image (loop mount) and writing unwritten extents that
 * simfs then reads and converts.  Every case ends with e2fsck -fn clean.
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
#include <glib/gstdio.h>

#include "fs_priv.h"
#include "testsupport.h"

static int setup4k(void **state)
{
	return sfs_tfs_setup(state, 4096, 256 << 20, "alloc=extent");
}

static int setup1k(void **state)
{
	return sfs_tfs_setup(state, 1024, 64 << 20, "alloc=extent");
}

/* Close, assert e2fsck finds the image clean, open again with opts. */
static void reopen(struct sfs_tfs *c, const char *opts)
{
	sfs_tfs_assert_clean(c);
	c->fs = sfs_test_open(c->img, opts);
}

static sfs_ino_t mkfile(struct sfs_fs *fs, const char *name)
{
	struct sfs_attr a;

	assert_int_equal(sfs_mknod(fs, SFS_ROOT_INO, name, SFS_S_IFREG | 0644,
				   0, 1000, 1000, &a),
			 0);
	return a.ino;
}

static void wr(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off, const void *buf,
	       size_t len)
{
	size_t n;

	assert_int_equal(sfs_write(fs, ino, off, buf, len, &n), 0);
	assert_int_equal(n, len);
}

static void set_size(struct sfs_fs *fs, sfs_ino_t ino, uint64_t size)
{
	struct sfs_attr in = {.size = size}, a;

	assert_int_equal(sfs_setattr(fs, ino, &in, SFS_SET_SIZE, &a), 0);
	assert_int_equal(a.size, size);
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9) + 1);
}

/* What the tree of one inode looks like. */
struct exinfo {
	uint32_t flags;	   /* i_flags */
	int depth;	   /* root eh_depth */
	uint32_t root_n;   /* root eh_entries */
	uint32_t extents;  /* leaf entries */
	uint32_t meta;	   /* index + leaf blocks */
	uint64_t data;	   /* blocks mapped by extents */
	uint64_t i_blocks; /* sectors */
	bool maximal;	   /* no two neighbours could be one extent */
	uint32_t pl, plen; /* previous extent */
	sfs_blk_t pp;
};

static int info_cb(void *ctx, uint32_t lblk, sfs_blk_t pblk, uint32_t len,
		   bool meta)
{
	struct exinfo *x = ctx;

	if (meta) {
		x->meta++;
		return 0;
	}
	if (x->extents && x->pl + x->plen == lblk && x->pp + x->plen == pblk &&
	    x->plen + len <= 32768)
		x->maximal = false;
	x->extents++;
	x->data += len;
	x->pl = lblk;
	x->pp = pblk;
	x->plen = len;
	return 0;
}

static void exinfo(struct sfs_fs *fs, sfs_ino_t ino, struct exinfo *x)
{
	struct sfs_inode *ip;
	const struct sfs_dextent_header *h;

	memset(x, 0, sizeof(*x));
	x->maximal = true;
	sfs_lock(fs);
	assert_int_equal(sfs_iget(fs, ino, &ip), 0);
	h = (const void *)ip->d.i_block;
	x->flags = sfs_le32(ip->d.i_flags);
	x->i_blocks = sfs_le32(ip->d.i_blocks);
	if (x->flags & SFS_EXTENTS_FL) {
		assert_int_equal(sfs_le16(h->eh_magic), 0xF30A);
		assert_int_equal(sfs_le16(h->eh_max), 4);
		x->depth = sfs_le16(h->eh_depth);
		x->root_n = sfs_le16(h->eh_entries);
	}
	assert_int_equal(sfs_imap(fs, ip)->walk(fs, ip, info_cb, x), 0);
	sfs_iput(fs, ip);
	sfs_unlock(fs);
}

/* i_blocks counts exactly the data and tree blocks. */
static void assert_iblocks(struct sfs_tfs *c, const struct exinfo *x)
{
	assert_int_equal(x->i_blocks, (x->data + x->meta) * (c->fs->bs / 512));
}

static void check_read(struct sfs_fs *fs, sfs_ino_t ino, const uint8_t *ref,
		       size_t size)
{
	uint8_t *buf = g_malloc(size + 1);
	size_t n;

	assert_int_equal(sfs_read(fs, ino, 0, size + 1, buf, &n), 0);
	assert_int_equal(n, size);
	assert_memory_equal(buf, ref, size);
	g_free(buf);
}

/* A sequential file is a few maximal extents in the inode. */
static void test_extent_sequential(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t ino = mkfile(c->fs, "seq");
	const size_t chunk = 1 << 20, total = 100 << 20;
	uint8_t *buf = g_malloc(chunk);
	struct exinfo x;

	assert_true(sfs_le32(c->fs->sb.s_feature_incompat) &
		    SFS_FEATURE_INCOMPAT_EXTENTS);
	for (size_t off = 0; off < total; off += chunk) {
		fill(buf, chunk, (unsigned)(off / chunk));
		wr(c->fs, ino, off, buf, chunk);
	}
	exinfo(c->fs, ino, &x);
	assert_true(x.flags & SFS_EXTENTS_FL);
	assert_int_equal(x.depth, 0);
	assert_int_equal(x.meta, 0);
	assert_true(x.extents >= 1 && x.extents <= 4);
	assert_true(x.maximal);
	assert_int_equal(x.data, total / c->fs->bs);
	assert_iblocks(c, &x);
	reopen(c, "alloc=extent");
	for (size_t off = 0; off < total; off += 16 * chunk) {
		uint8_t *ref = g_malloc(chunk), *got = g_malloc(chunk);
		size_t n;
		fill(ref, chunk, (unsigned)(off / chunk));
		assert_int_equal(sfs_read(c->fs, ino, off, chunk, got, &n), 0);
		assert_int_equal(n, chunk);
		assert_memory_equal(got, ref, chunk);
		g_free(ref);
		g_free(got);
	}
	g_free(buf);
}

/* Every other block: n extents; returns the file's contents model. */
static uint8_t *write_sparse(struct sfs_tfs *c, sfs_ino_t ino, uint32_t n)
{
	uint8_t *ref = g_malloc0((size_t)2 * n * c->fs->bs);

	for (uint32_t i = 0; i < n; i++) {
		uint8_t *p = ref + (size_t)2 * i * c->fs->bs;
		fill(p, c->fs->bs, i);
		wr(c->fs, ino, (uint64_t)2 * i * c->fs->bs, p, c->fs->bs);
	}
	return ref;
}

/* Five extents: the root becomes one index over one leaf (depth 1). */
static void test_extent_depth1(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t ino = mkfile(c->fs, "d1");
	uint8_t *ref = write_sparse(c, ino, 4);
	struct exinfo x;

	exinfo(c->fs, ino, &x);
	assert_int_equal(x.depth, 0);
	assert_int_equal(x.extents, 4);
	g_free(ref);
	ref = write_sparse(c, ino, 40);
	exinfo(c->fs, ino, &x);
	assert_int_equal(x.depth, 1);
	assert_int_equal(x.root_n, 1);
	assert_int_equal(x.meta, 1);
	assert_int_equal(x.extents, 40);
	assert_iblocks(c, &x);
	check_read(c->fs, ino, ref, (size_t)79 * c->fs->bs);
	/* filling the holes: blocks land elsewhere, the data stays */
	for (uint32_t i = 0; i < 39; i++) {
		uint8_t *p = ref + (size_t)(2 * i + 1) * c->fs->bs;
		fill(p, c->fs->bs, 1000 + i);
		wr(c->fs, ino, (uint64_t)(2 * i + 1) * c->fs->bs, p, c->fs->bs);
	}
	exinfo(c->fs, ino, &x);
	assert_iblocks(c, &x);
	check_read(c->fs, ino, ref, (size_t)79 * c->fs->bs);
	g_free(ref);
}

/* Two files written in turn interleave their blocks: depth 1 each. */
static void test_extent_interleaved(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t a = mkfile(c->fs, "a"), b = mkfile(c->fs, "b");
	uint8_t *ra = g_malloc((size_t)64 * c->fs->bs),
		*rb = g_malloc((size_t)64 * c->fs->bs);
	struct exinfo x;

	for (uint32_t i = 0; i < 64; i++) {
		fill(ra + (size_t)i * c->fs->bs, c->fs->bs, i);
		fill(rb + (size_t)i * c->fs->bs, c->fs->bs, 500 + i);
		wr(c->fs, a, (uint64_t)i * c->fs->bs,
		   ra + (size_t)i * c->fs->bs, c->fs->bs);
		wr(c->fs, b, (uint64_t)i * c->fs->bs,
		   rb + (size_t)i * c->fs->bs, c->fs->bs);
	}
	exinfo(c->fs, a, &x);
	assert_true(x.extents > 4);
	assert_int_equal(x.depth, 1);
	assert_iblocks(c, &x);
	reopen(c, "alloc=extent");
	check_read(c->fs, a, ra, (size_t)64 * c->fs->bs);
	check_read(c->fs, b, rb, (size_t)64 * c->fs->bs);
	g_free(ra);
	g_free(rb);
}

/* More extents than 4 leaves hold: depth 2 (1 KiB: 84 per leaf). */
static void test_extent_depth2(void **state)
{
	struct sfs_tfs *c = *state;
	uint32_t cap = (c->fs->bs - 12) / 12, n = 4 * cap + 60;
	sfs_ino_t ino = mkfile(c->fs, "d2");
	uint8_t *ref = write_sparse(c, ino, n);
	struct exinfo x;

	exinfo(c->fs, ino, &x);
	assert_int_equal(x.depth, 2);
	assert_int_equal(x.extents, n);
	assert_iblocks(c, &x);
	reopen(c, "alloc=extent");
	check_read(c->fs, ino, ref, (size_t)(2 * n - 1) * c->fs->bs);
	/* back to 3 extents: the tree returns into the inode */
	set_size(c->fs, ino, (uint64_t)5 * c->fs->bs);
	exinfo(c->fs, ino, &x);
	assert_int_equal(x.depth, 0);
	assert_int_equal(x.extents, 3);
	assert_int_equal(x.meta, 0);
	assert_iblocks(c, &x);
	check_read(c->fs, ino, ref, (size_t)5 * c->fs->bs);
	g_free(ref);
}

/* Truncating a depth-1 file to <= 4 extents frees the leaf. */
static void test_extent_truncate_pulls_back(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t ino = mkfile(c->fs, "t");
	uint8_t *ref = write_sparse(c, ino, 12);
	struct exinfo x;

	exinfo(c->fs, ino, &x);
	assert_int_equal(x.depth, 1);
	set_size(c->fs, ino, (uint64_t)8 * c->fs->bs - 100);
	exinfo(c->fs, ino, &x);
	assert_int_equal(x.depth, 0);
	assert_int_equal(x.extents, 4);
	assert_int_equal(x.meta, 0);
	assert_iblocks(c, &x);
	memset(ref + (size_t)8 * c->fs->bs - 100, 0, 100);
	check_read(c->fs, ino, ref, (size_t)8 * c->fs->bs - 100);
	/* a partial truncate inside an extent shortens it */
	set_size(c->fs, ino, 1);
	exinfo(c->fs, ino, &x);
	assert_int_equal(x.extents, 1);
	assert_int_equal(x.data, 1);
	assert_iblocks(c, &x);
	set_size(c->fs, ino, 0);
	exinfo(c->fs, ino, &x);
	assert_int_equal(x.extents, 0);
	assert_int_equal(x.i_blocks, 0);
	g_free(ref);
}

/* Seeded random writes and truncates on two files against a model. */
static void test_extent_random(void **state)
{
	struct sfs_tfs *c = *state;
	const size_t span = (size_t)3000 * c->fs->bs;
	sfs_ino_t ino[2] = {mkfile(c->fs, "r0"), mkfile(c->fs, "r1")};
	uint8_t *ref[2] = {g_malloc0(span), g_malloc0(span)};
	size_t size[2] = {0, 0};
	uint8_t *buf = g_malloc(span);
	GRand *r = g_rand_new_with_seed(11);
	struct exinfo x;
	int deepest = 0;

	for (int op = 0; op < 3000; op++) {
		int f = g_rand_int_range(r, 0, 2);
		int kind = g_rand_int_range(r, 0, 100);
		if (kind < 4) {
			size_t ns =
			    (size_t)g_rand_int_range(r, 0, (gint32)span);
			set_size(c->fs, ino[f], ns);
			if (ns < size[f])
				memset(ref[f] + ns, 0, size[f] - ns);
			size[f] = ns;
		} else {
			size_t off =
			    (size_t)g_rand_int_range(r, 0, (gint32)span - 1);
			size_t len = (size_t)g_rand_int_range(
			    r, 1, (gint32)MIN(3 * c->fs->bs, span - off) + 1);
			fill(buf, len, (unsigned)op);
			memcpy(ref[f] + off, buf, len);
			wr(c->fs, ino[f], off, buf, len);
			size[f] = MAX(size[f], off + len);
		}
		if (op % 500 == 499) {
			for (int k = 0; k < 2; k++) {
				exinfo(c->fs, ino[k], &x);
				assert_iblocks(c, &x);
				deepest = MAX(deepest, x.depth);
				check_read(c->fs, ino[k], ref[k], size[k]);
			}
		}
	}
	assert_true(deepest >= 1); /* the files did need a tree */
	reopen(c, "alloc=extent");
	for (int k = 0; k < 2; k++) {
		check_read(c->fs, ino[k], ref[k], size[k]);
		g_free(ref[k]);
	}
	g_rand_free(r);
	g_free(buf);
}

/* A sparse file far out (past the block map's reach): holes are zeros. */
static void test_extent_sparse_holes(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t ino = mkfile(c->fs, "sparse");
	uint64_t far = 3ULL << 40; /* 3 TiB */
	uint8_t buf[8192], z[8192] = {0};
	uint64_t max = sfs_extent_map_ops.max_bytes(c->fs->bs);
	struct sfs_attr a;
	struct exinfo x;
	size_t n;

	memset(buf, 0xab, sizeof(buf));
	wr(c->fs, ino, far - sizeof(buf), buf, sizeof(buf));
	wr(c->fs, ino, 1ULL << 30, buf, 100);
	assert_int_equal(sfs_getattr(c->fs, ino, &a), 0);
	assert_int_equal(a.size, far);
	exinfo(c->fs, ino, &x);
	assert_int_equal(x.depth, 0);
	assert_int_equal(x.extents, 2);
	assert_iblocks(c, &x);
	assert_int_equal(sfs_read(c->fs, ino, 5ULL << 30, sizeof(buf), buf, &n),
			 0);
	assert_int_equal(n, sizeof(buf));
	assert_memory_equal(buf, z, sizeof(buf));
	assert_int_equal(sfs_read(c->fs, ino, far - 100, 200, buf, &n), 0);
	assert_int_equal(n, 100);
	assert_int_equal(buf[99], 0xab);
	/* the extent map's reach: 2^32 - 1 blocks */
	assert_int_equal(max, ((1ULL << 32) - 1) * c->fs->bs);
	assert_int_equal(sfs_write(c->fs, ino, max, buf, 1, &n), -EFBIG);
}

/* Directories and slow symlinks are extent-mapped; fast symlinks and
 * special files are not. */
static void test_extent_dirs_symlinks(void **state)
{
	struct sfs_tfs *c = *state;
	char target[200], got[256], name[64];
	struct sfs_attr d, s, f, p;
	struct exinfo x;
	size_t n;

	memset(target, 'x', sizeof(target) - 1);
	target[sizeof(target) - 1] = '\0';
	assert_int_equal(sfs_mkdir(c->fs, SFS_ROOT_INO, "dir", 0755, 0, 0, &d),
			 0);
	for (int i = 0; i < 300; i++) {
		struct sfs_attr e;
		snprintf(name, sizeof(name), "entry-with-a-long-name-%04d", i);
		assert_int_equal(sfs_mknod(c->fs, d.ino, name,
					   SFS_S_IFREG | 0644, 0, 0, 0, &e),
				 0);
	}
	exinfo(c->fs, d.ino, &x);
	assert_true(x.flags & SFS_EXTENTS_FL);
	assert_true(x.data > 1);
	assert_iblocks(c, &x);
	assert_int_equal(
	    sfs_symlink(c->fs, SFS_ROOT_INO, "slow", target, 0, 0, &s), 0);
	exinfo(c->fs, s.ino, &x);
	assert_true(x.flags & SFS_EXTENTS_FL);
	assert_int_equal(x.extents, 1);
	assert_int_equal(x.data, 1);
	assert_int_equal(
	    sfs_symlink(c->fs, SFS_ROOT_INO, "fast", "short", 0, 0, &f), 0);
	exinfo(c->fs, f.ino, &x);
	assert_false(x.flags & SFS_EXTENTS_FL);
	assert_int_equal(sfs_mknod(c->fs, SFS_ROOT_INO, "fifo",
				   SFS_S_IFIFO | 0644, 0, 0, 0, &p),
			 0);
	exinfo(c->fs, p.ino, &x);
	assert_false(x.flags & SFS_EXTENTS_FL);
	reopen(c, "alloc=extent");
	assert_int_equal(sfs_readlink(c->fs, s.ino, got, sizeof(got), &n), 0);
	assert_int_equal(n, strlen(target));
	assert_memory_equal(got, target, n);
	for (int i = 0; i < 300; i += 7) {
		struct sfs_attr e;
		snprintf(name, sizeof(name), "entry-with-a-long-name-%04d", i);
		assert_int_equal(sfs_lookup(c->fs, d.ino, name, &e), 0);
		assert_int_equal(sfs_unlink(c->fs, d.ino, name), 0);
	}
}

/* Block-mapped and extent-mapped files live side by side: each inode
 * keeps its own mapping whatever alloc= says. */
static void test_extent_mixed_dispatch(void **state)
{
	struct sfs_tfs *c = *state;
	uint8_t *ref_e, *ref_b;
	sfs_ino_t e = mkfile(c->fs, "ext"), b;
	struct exinfo x;

	ref_e = write_sparse(c, e, 20);
	reopen(c, "alloc=blockmap");
	b = mkfile(c->fs, "blk");
	ref_b = write_sparse(c, b, 20);
	exinfo(c->fs, b, &x);
	assert_false(x.flags & SFS_EXTENTS_FL);
	assert_iblocks(c, &x);
	/* the extent file grows as an extent file under alloc=blockmap */
	g_free(ref_e);
	ref_e = write_sparse(c, e, 30);
	exinfo(c->fs, e, &x);
	assert_true(x.flags & SFS_EXTENTS_FL);
	assert_int_equal(x.extents, 30);
	assert_iblocks(c, &x);
	reopen(c, "alloc=extent");
	check_read(c->fs, e, ref_e, (size_t)59 * c->fs->bs);
	check_read(c->fs, b, ref_b, (size_t)39 * c->fs->bs);
	assert_int_equal(sfs_unlink(c->fs, SFS_ROOT_INO, "blk"), 0);
	assert_int_equal(sfs_unlink(c->fs, SFS_ROOT_INO, "ext"), 0);
	g_free(ref_e);
	g_free(ref_b);
}

/* ---- the kernel's ext4 driver as a second oracle ---- */

static int run(const char *const *argv, char **err_out)
{
	int status = -1;
	GError *gerr = NULL;
	char *out = NULL, *err = NULL;

	if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL,
			  NULL, &out, &err, &status, &gerr)) {
		if (err_out)
			*err_out = g_strdup(gerr->message);
		g_error_free(gerr);
		return -1;
	}
	if (err_out)
		*err_out = g_strconcat(out ? out : "", err ? err : "", NULL);
	g_free(out);
	g_free(err);
	return g_spawn_check_wait_status(status, NULL) ? 0 : 1;
}

static void kmount(struct sfs_tfs *c, const char *mnt, bool rw)
{
	const char *argv[] = {
	    "mount", "-t", "ext4", "-o", rw ? "loop" : "loop,ro",
	    c->img,  mnt,  NULL};
	char *err = NULL;

	if (run(argv, &err) != 0)
		fail_msg("kernel ext4 mount of %s failed: %s", c->img, err);
	g_free(err);
}

static void kumount(const char *mnt)
{
	const char *argv[] = {"umount", mnt, NULL};
	char *err = NULL;

	if (run(argv, &err) != 0)
		fail_msg("umount %s failed: %s", mnt, err);
	g_free(err);
}

/*
 * Files written by simfs (sequential, depth 1, depth 2, sparse, a
 * directory, a slow symlink) read back byte for byte through a read-only
 * loop mount.  Then the kernel preallocates (unwritten extents) and simfs
 * must read them as zeros and convert the blocks it writes.
 */
static void test_extent_kernel_mount(void **state)
{
	struct sfs_tfs *c = *state;
	uint32_t bs = c->fs->bs; /* still needed after the close */
	char *mnt = g_build_filename(c->dir, "mnt", NULL);
	uint32_t cap = (bs - 12) / 12, n2 = 4 * cap + 10;
	sfs_ino_t seq = mkfile(c->fs, "seq"), d1 = mkfile(c->fs, "d1"),
		  d2 = mkfile(c->fs, "d2");
	size_t seq_len = (size_t)3 << 20;
	uint8_t *rseq = g_malloc(seq_len), *r1, *r2;
	char target[120];
	struct sfs_attr a;
	char *path, *data;
	gsize len;

	fill(rseq, seq_len, 3);
	wr(c->fs, seq, 0, rseq, seq_len);
	r1 = write_sparse(c, d1, 30);
	r2 = write_sparse(c, d2, n2);
	memset(target, 't', sizeof(target) - 1);
	target[sizeof(target) - 1] = '\0';
	assert_int_equal(
	    sfs_symlink(c->fs, SFS_ROOT_INO, "link", target, 0, 0, &a), 0);
	assert_int_equal(sfs_mkdir(c->fs, SFS_ROOT_INO, "sub", 0755, 0, 0, &a),
			 0);
	assert_int_equal(
	    sfs_mknod(c->fs, a.ino, "inner", SFS_S_IFREG | 0644, 0, 0, 0, &a),
	    0);
	reopen(c, "alloc=extent");
	assert_int_equal(sfs_fs_close(c->fs), 0);
	c->fs = NULL;

	assert_int_equal(g_mkdir(mnt, 0755), 0);
	kmount(c, mnt, false);
	path = g_build_filename(mnt, "seq", NULL);
	assert_true(g_file_get_contents(path, &data, &len, NULL));
	assert_int_equal(len, seq_len);
	assert_memory_equal(data, rseq, seq_len);
	g_free(data);
	g_free(path);
	path = g_build_filename(mnt, "d1", NULL);
	assert_true(g_file_get_contents(path, &data, &len, NULL));
	assert_int_equal(len, (size_t)59 * bs);
	assert_memory_equal(data, r1, len);
	g_free(data);
	g_free(path);
	path = g_build_filename(mnt, "d2", NULL);
	assert_true(g_file_get_contents(path, &data, &len, NULL));
	assert_int_equal(len, (size_t)(2 * n2 - 1) * bs);
	assert_memory_equal(data, r2, len);
	g_free(data);
	g_free(path);
	path = g_build_filename(mnt, "link", NULL);
	data = g_file_read_link(path, NULL);
	assert_non_null(data);
	assert_string_equal(data, target);
	g_free(data);
	g_free(path);
	path = g_build_filename(mnt, "sub", "inner", NULL);
	assert_true(g_file_test(path, G_FILE_TEST_IS_REGULAR));
	g_free(path);
	kumount(mnt);

	/* The kernel makes unwritten extents; simfs reads and converts. */
	kmount(c, mnt, true);
	path = g_build_filename(mnt, "prealloc", NULL);
	{
		const char *argv[] = {"fallocate", "-l", "1M", path, NULL};
		char *err = NULL;
		if (run(argv, &err) != 0)
			fail_msg("fallocate failed: %s", err);
		g_free(err);
	}
	g_free(path);
	kumount(mnt);
	{
		char *out = NULL;
		if (!sfs_test_fsck_clean(c->img, &out))
			fail_msg("e2fsck after the kernel:\n%s", out);
		g_free(out);
	}
	c->fs = sfs_test_open(c->img, "alloc=extent");
	{
		size_t plen = 1 << 20, n;
		uint8_t *got = g_malloc(plen), *ref = g_malloc0(plen);
		uint8_t blk[4096];
		sfs_ino_t pino;
		assert_int_equal(
		    sfs_lookup(c->fs, SFS_ROOT_INO, "prealloc", &a), 0);
		pino = a.ino;
		assert_int_equal(a.size, plen);
		assert_int_equal(sfs_read(c->fs, pino, 0, plen, got, &n), 0);
		assert_int_equal(n, plen);
		assert_memory_equal(got, ref, plen);
		/* write into the middle and at the start */
		fill(blk, sizeof(blk), 9);
		memcpy(ref + 300000, blk, sizeof(blk));
		wr(c->fs, pino, 300000, blk, sizeof(blk));
		memcpy(ref, blk, 100);
		wr(c->fs, pino, 0, blk, 100);
		assert_int_equal(sfs_read(c->fs, pino, 0, plen, got, &n), 0);
		assert_memory_equal(got, ref, plen);
		reopen(c, "alloc=extent");
		assert_int_equal(sfs_read(c->fs, pino, 0, plen, got, &n), 0);
		assert_memory_equal(got, ref, plen);
		assert_int_equal(sfs_fs_close(c->fs), 0);
		c->fs = NULL;
		kmount(c, mnt, false);
		path = g_build_filename(mnt, "prealloc", NULL);
		assert_true(g_file_get_contents(path, &data, &len, NULL));
		assert_int_equal(len, plen);
		assert_memory_equal(data, ref, plen);
		g_free(data);
		g_free(path);
		kumount(mnt);
		g_free(got);
		g_free(ref);
	}
	g_free(rseq);
	g_free(r1);
	g_free(r2);
	g_free(mnt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_extent_sequential, setup4k,
					    sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_extent_depth1, setup1k,
					    sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_extent_interleaved, setup1k,
					    sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_extent_depth2, setup1k,
					    sfs_tfs_teardown),
	    {"test_extent_depth2_4k", test_extent_depth2, setup4k,
	     sfs_tfs_teardown, NULL},
	    cmocka_unit_test_setup_teardown(test_extent_truncate_pulls_back,
					    setup1k, sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_extent_random, setup1k,
					    sfs_tfs_teardown),
	    {"test_extent_random_4k", test_extent_random, setup4k,
	     sfs_tfs_teardown, NULL},
	    cmocka_unit_test_setup_teardown(test_extent_sparse_holes, setup4k,
					    sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_extent_dirs_symlinks, setup1k,
					    sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_extent_mixed_dispatch, setup1k,
					    sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_extent_kernel_mount, setup4k,
					    sfs_tfs_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
