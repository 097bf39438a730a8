/*
 * test_fuzzimage.c - seeded corruption of the metadata inside valid images:
 * the engine answers errors (-EIO, -EUCLEAN, a refused mount), never a
 * crash, a hang, an assertion or a bad result.
 *
 * Once per run, four pristine images are built and populated through the
 * engine (a directory tree, a directory of several blocks, small, large,
 * sparse and double-indirect files, fast and slow symlinks, xattrs):
 *   blockmap  ext2, indirect blocks;
 *   ext3      a journal, mounted data=ordered;
 *   ext3-log  the same after a crash with committed transactions still in
 *             the log, so that every mount replays it;
 *   extent    extent trees of depth 2, a journal, mounted as ext4;
 *   mke2fs-ext4  the image plain `mke2fs -t ext4` makes (metadata_csum,
 *             64bit, flex_bg, its journal), populated as ext4 mounts it:
 *             the directory of several blocks is an htree, one more of
 *             4000 names has two levels (dx_root, dx_nodes), and every
 *             bitmap, inode, directory block, htree node, extent block
 *             and xattr block carries a crc32c (half the iterations of
 *             the others: most corruptions end at a checksum).
 * Their metadata blocks are recorded by category (superblock and group
 * descriptors, bitmaps, inode slots in use, directory blocks, indirect and
 * extent tree blocks, xattr blocks, slow symlink blocks, journal blocks).
 *
 * Each iteration copies one image, overwrites a few bytes or fields of one
 * to three targets (a category chosen at random, or any block) with
 * random or boundary values, and opens the copy on a RAM device.  If it
 * mounts, it walks the whole tree (lookup, getattr, readdir in small
 * chunks, readlink, listxattr, getxattr, reads of every file), changes it
 * (write, append, create, mkdir, symlink, rename, unlink, rmdir, truncate,
 * setxattr, fallocate), syncs and closes, then mounts the result again and
 * walks it once more.  Every call may fail; results are checked only for
 * sanity (errno range, lengths within the buffer).  A watchdog turns an
 * iteration that does not end into a failure naming it.
 *
 * Environment: SFS_FUZZ_ITERS (iterations per image; tests/run-all.sh
 * runs 100 under ASan), SFS_FUZZ_SEED, SFS_FUZZ_ONLY (run just that
 * iteration), SFS_FUZZ_IMAGE (just that image), SFS_FUZZ_VERBOSE=1 (print each
 * iteration before it runs, and the engine's error messages),
 * SIMFS_TEST_TIMEOUT_MULTIPLIER (multiplies the watchdog's 120 s).  Under
 * LeakSanitizer each iteration ends with a leak check.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "config.h"
#include "format.h"
#include "fs_priv.h"
#include "testsupport.h"

#define FZ_IMG_BYTES (16u << 20) /* two groups of 1 KiB blocks */
#define FZ_BS 1024u
#define FZ_ITERS 400u	       /* per image, unless SFS_FUZZ_ITERS */
#define FZ_SEED 0x5EED0F0Du    /* unless SFS_FUZZ_SEED */
#define FZ_WATCHDOG_S 120u     /* one iteration, open to last close */
#define FZ_READ_CAP (1u << 20) /* bytes read from the front of a file */
#define FZ_MAX_INODES 3000u    /* inodes visited per walk */
#define FZ_MAX_ENTRIES 20000u  /* entries listed per directory */
#define FZ_MAX_DEPTH 12
#define FZ_NOTED 48u /* entries remembered for the changes */

/* Where a corruption lands. */
enum fz_cat {
	FZ_SUPER,   /* superblock and group descriptor bytes */
	FZ_BITMAP,  /* block and inode bitmaps */
	FZ_INODE,   /* the slot of an inode in use */
	FZ_DIR,	    /* directory blocks */
	FZ_MAP,	    /* indirect blocks, extent index and leaf blocks */
	FZ_XATTR,   /* xattr blocks */
	FZ_SYMLINK, /* slow symlink target blocks */
	FZ_JOURNAL, /* the journal's blocks */
	FZ_ANY,	    /* any block of the image */
	FZ_NCAT
};

static const char *const fz_cat_name[FZ_NCAT] = {"super",   "bitmap",  "inode",
						 "dir",	    "map",     "xattr",
						 "symlink", "journal", "any"};
/* Relative weight of each category, when it has targets. */
static const unsigned fz_cat_weight[FZ_NCAT] = {4, 7, 24, 20, 15, 7, 3, 10, 10};

/* A region of the image: a corruption stays inside one. */
struct fz_region {
	uint64_t off; /* bytes */
	uint32_t len; /* bytes */
};

struct fz_image {
	const char *name;
	const char *opts[2];	  /* mount options, one picked per iteration */
	bool half;		  /* half the iterations */
	uint8_t *bytes;		  /* the pristine image */
	GArray *regions[FZ_NCAT]; /* struct fz_region */
	uint32_t blocks;
	uint32_t inodes;
	uint32_t ipg; /* inodes per group */
	uint32_t inode_size;
	uint64_t itable_off;  /* group 0's inode table, bytes */
	uint64_t ibitmap_off; /* group 0's inode bitmap, bytes */
};

/* What all iterations add up to. */
struct fz_tally {
	unsigned iters;
	unsigned mounted;
	unsigned refused;
	unsigned remounted;
	unsigned errors[4]; /* calls failing with EIO, EUCLEAN, EROFS, other */
	unsigned long printed; /* engine error lines */
};

struct fz_state {
	struct fz_image img[5];
	unsigned n_img;
	uint8_t *work; /* the corrupted copy */
	guint32 seed;
	unsigned iters;
	int only; /* -1: all */
	bool verbose;
	unsigned watchdog_s; /* FZ_WATCHDOG_S x SIMFS_TEST_TIMEOUT_MULTIPLIER */
	struct fz_tally tally;
};

/* ---- the watchdog ---- */

static char fz_now_running[256]; /* what the watchdog names; async-safe */

/* Name the iteration that hangs (SIGALRM) or dies (SIGABRT, SIGSEGV,
 * SIGBUS), then let the signal take its course. */
static void fz_on_signal(int sig)
{
	static const char hang[] = "test_fuzzimage: iteration did not end: ";
	static const char died[] = "test_fuzzimage: iteration died: ";
	ssize_t r;

	if (sig == SIGALRM)
		r = write(2, hang, sizeof(hang) - 1);
	else
		r = write(2, died, sizeof(died) - 1);
	r = write(2, fz_now_running,
		  strnlen(fz_now_running, sizeof(fz_now_running)));
	r = write(2, "\n", 1);
	(void)r;
	signal(SIGABRT, SIG_DFL);
	if (sig != SIGALRM)
		signal(sig, SIG_DFL);
	raise(sig == SIGALRM ? SIGABRT : sig);
}

/* LeakSanitizer's check, when the test runs under it (ASan build with
 * detect_leaks=1): a leak is found in the iteration that made it. */
extern int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

static void fz_leak_check(const char *what)
{
	if (__lsan_do_recoverable_leak_check &&
	    __lsan_do_recoverable_leak_check())
		fail_msg("memory leaked in %s", what);
}

static unsigned long fz_printed;
static bool fz_print_engine;

/* The engine reports each filesystem error on stderr: counted here, shown
 * only when verbose. */
static void fz_printerr(const char *msg)
{
	fz_printed++;
	if (fz_print_engine)
		fputs(msg, stderr);
}

/* ---- building the pristine images ---- */

static void wr(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off, const void *buf,
	       size_t len)
{
	size_t n;

	assert_int_equal(sfs_write(fs, ino, off, buf, len, &n), 0);
	assert_int_equal(n, len);
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9) + 1);
}

/* A file of len bytes of pattern `seed` (closed again). */
static sfs_ino_t mkfile_len(struct sfs_fs *fs, sfs_ino_t dir, const char *name,
			    size_t len, unsigned seed)
{
	sfs_ino_t ino = sfs_test_mkfile(fs, dir, name);
	uint8_t *buf = g_malloc(len ? len : 1);

	fill(buf, len, seed);
	if (len)
		wr(fs, ino, 0, buf, len);
	g_free(buf);
	assert_int_equal(sfs_release(fs, ino), 0);
	return ino;
}

/* n blocks written every other block: n extents (depth 2 past 4 leaves). */
static void write_every_other(struct sfs_fs *fs, sfs_ino_t ino, uint32_t n)
{
	uint8_t buf[FZ_BS];

	for (uint32_t i = 0; i < n; i++) {
		fill(buf, sizeof(buf), i);
		wr(fs, ino, (uint64_t)2 * i * FZ_BS, buf, sizeof(buf));
	}
}

/* What every image holds. */
static void populate(struct sfs_fs *fs, bool extents)
{
	char name[64], target[300];
	struct sfs_attr a;
	sfs_ino_t d, big, f;
	uint8_t val[700];

	/* a tree four levels deep, a file at each level */
	d = SFS_ROOT_INO;
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "level%d", i);
		d = sfs_test_mkdir(fs, d, name);
		snprintf(name, sizeof(name), "file%d", i);
		mkfile_len(fs, d, name, 100u + 900u * (unsigned)i, (unsigned)i);
	}
	/* a directory of about 20 blocks (an indirect block when mapped) */
	big = sfs_test_mkdir(fs, SFS_ROOT_INO, "big");
	for (int i = 0; i < 500; i++) {
		snprintf(name, sizeof(name), "entry-with-a-long-name-%04d", i);
		assert_int_equal(
		    sfs_mknod(fs, big, name, SFS_S_IFREG | 0644, 0, 0, 0, &a),
		    0);
	}
	/* small files, one empty */
	mkfile_len(fs, SFS_ROOT_INO, "empty", 0, 0);
	mkfile_len(fs, SFS_ROOT_INO, "small", 37, 1);
	mkfile_len(fs, SFS_ROOT_INO, "medium", 11 * 1024 + 5, 2);
	/* past the double indirect threshold at 1 KiB (12 + 256 blocks) */
	mkfile_len(fs, SFS_ROOT_INO, "large", 400 * 1024 + 77, 3);
	/* sparse: a block at 0 and one 5 MiB in */
	f = sfs_test_mkfile(fs, SFS_ROOT_INO, "sparse");
	memset(val, 0x5A, sizeof(val));
	wr(fs, f, 0, val, 100);
	wr(fs, f, 5u << 20, val, 100);
	assert_int_equal(sfs_release(fs, f), 0);
	if (extents) {
		/* more extents than four leaves hold: a depth 2 tree */
		f = sfs_test_mkfile(fs, SFS_ROOT_INO, "deep");
		write_every_other(fs, f, 4 * ((FZ_BS - 12) / 12) + 60);
		assert_int_equal(sfs_release(fs, f), 0);
	}
	/* symlinks: fast, slow, dangling, into the tree */
	memset(target, 'x', sizeof(target));
	target[200] = '\0';
	assert_int_equal(
	    sfs_symlink(fs, SFS_ROOT_INO, "fast", "level0/file0", 0, 0, &a), 0);
	assert_int_equal(
	    sfs_symlink(fs, SFS_ROOT_INO, "slow", target, 0, 0, &a), 0);
	assert_int_equal(sfs_symlink(fs, d, "dangling", "../nowhere", 0, 0, &a),
			 0);
	/* xattrs: small ones, and one file whose block is nearly full */
	f = mkfile_len(fs, SFS_ROOT_INO, "xattrs", 50, 4);
	assert_int_equal(sfs_setxattr(fs, f, "user.a", "1", 1, 0), 0);
	assert_int_equal(sfs_setxattr(fs, f, "user.bb", "two", 3, 0), 0);
	fill(val, sizeof(val), 5);
	assert_int_equal(sfs_setxattr(fs, f, "user.big", val, 700, 0), 0);
	assert_int_equal(sfs_setxattr(fs, d, "user.dir", "d", 1, 0), 0);
	/* a hard link and a FIFO */
	assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, "small", &a), 0);
	assert_int_equal(sfs_link(fs, a.ino, d, "hardlink", &a), 0);
	assert_int_equal(sfs_mknod(fs, SFS_ROOT_INO, "fifo", SFS_S_IFIFO | 0644,
				   0, 0, 0, &a),
			 0);
}

/* Leave committed but not checkpointed transactions in the log: a few
 * changes, an fsync, then a simulated power cut. */
static void crash_with_log(struct sfs_tfs *t)
{
	uint8_t buf[3000];
	sfs_ino_t f;

	fill(buf, sizeof(buf), 9);
	f = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "after-crash");
	wr(t->fs, f, 0, buf, sizeof(buf));
	assert_int_equal(sfs_mkdir(t->fs, SFS_ROOT_INO, "dir-after-crash", 0755,
				   0, 0, &(struct sfs_attr){0}),
			 0);
	assert_int_equal(sfs_unlink(t->fs, SFS_ROOT_INO, "medium"), 0);
	assert_int_equal(sfs_fsync(t->fs, f, false), 0);
	assert_int_equal(sfs_release(t->fs, f), 0);
	sfs_fs_abort(t->fs);
	t->fs = NULL;
}

static void add_region(struct fz_image *im, enum fz_cat cat, uint64_t off,
		       uint32_t len)
{
	struct fz_region r = {off, len};

	g_array_append_val(im->regions[cat], r);
}

struct fz_walk {
	struct fz_image *im;
	enum fz_cat data_cat; /* where data blocks go, or FZ_NCAT: nowhere */
	bool live_log_only;   /* journal: only blocks that are not zero */
};

static bool memchr_nonzero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return true;
	return false;
}

static int record_cb(void *ctx, uint32_t lblk, sfs_blk_t pblk, uint32_t len,
		     bool meta)
{
	struct fz_walk *w = ctx;
	enum fz_cat cat = meta ? FZ_MAP : w->data_cat;

	(void)lblk;
	if (cat == FZ_NCAT)
		return 0;
	for (uint32_t i = 0; i < len; i++) {
		uint64_t off = (uint64_t)(pblk + i) * FZ_BS;

		/* a log to replay: the blocks written so far, not the
		 * zeros after them */
		if (cat == FZ_JOURNAL && w->live_log_only &&
		    !memchr_nonzero(w->im->bytes + off, FZ_BS))
			continue;
		add_region(w->im, cat, off, FZ_BS);
	}
	return 0;
}

/* Record the metadata of the (closed, pristine) image by category, read
 * with the engine's own geometry and mapping walks. */
static void record_metadata(struct fz_image *im, const char *path,
			    bool live_log_only)
{
	struct sfs_fs *fs = sfs_test_open(path, "ro");
	uint32_t journal_ino;

	for (int c = 0; c < FZ_NCAT; c++)
		im->regions[c] =
		    g_array_new(FALSE, FALSE, sizeof(struct fz_region));
	sfs_lock(fs);
	journal_ino = sfs_le32(fs->sb.s_journal_inum);
	im->blocks = fs->blocks_count;
	im->inodes = sfs_le32(fs->sb.s_inodes_count);
	im->ipg = fs->ipg;
	im->inode_size = fs->inode_size;
	im->itable_off = (uint64_t)sfs_le32(fs->gd[0].bg_inode_table) * FZ_BS;
	im->ibitmap_off = (uint64_t)sfs_le32(fs->gd[0].bg_inode_bitmap) * FZ_BS;
	add_region(im, FZ_SUPER, SFS_SUPER_OFFSET, 1024);
	add_region(im, FZ_SUPER, (uint64_t)(fs->first_data_block + 1) * FZ_BS,
		   fs->groups * fs->desc_size);
	for (uint32_t g = 0; g < fs->groups; g++) {
		add_region(im, FZ_BITMAP,
			   (uint64_t)sfs_le32(fs->gd[g].bg_block_bitmap) *
			       FZ_BS,
			   FZ_BS);
		add_region(im, FZ_BITMAP,
			   (uint64_t)sfs_le32(fs->gd[g].bg_inode_bitmap) *
			       FZ_BS,
			   FZ_BS);
	}
	for (sfs_ino_t ino = 1; ino <= im->inodes; ino++) {
		sfs_blk_t blk = sfs_inode_block(fs, ino);
		uint32_t off = ((ino - 1) % fs->ipg) * fs->inode_size % FZ_BS;
		struct sfs_inode tmp = {.ino = ino};
		struct fz_walk w = {im, FZ_NCAT, live_log_only};
		uint32_t type;

		memcpy(&tmp.d, im->bytes + (uint64_t)blk * FZ_BS + off,
		       fs->inode_size);
		if (tmp.d.i_mode == 0 || tmp.d.i_links_count == 0 ||
		    tmp.d.i_dtime != 0)
			continue;
		add_region(im, FZ_INODE, (uint64_t)blk * FZ_BS + off,
			   fs->inode_size);
		if (tmp.d.i_file_acl)
			add_region(im, FZ_XATTR,
				   (uint64_t)sfs_le32(tmp.d.i_file_acl) * FZ_BS,
				   FZ_BS);
		type = sfs_i_mode(&tmp) & SFS_S_IFMT;
		if (ino == journal_ino)
			w.data_cat = FZ_JOURNAL;
		else if (ino < SFS_FIRST_INO && ino != SFS_ROOT_INO)
			continue; /* the resize inode's map is not a file's */
		else if (type == SFS_S_IFDIR)
			w.data_cat = FZ_DIR;
		else if (type == SFS_S_IFLNK && !sfs_i_fast_symlink(&tmp))
			w.data_cat = FZ_SYMLINK;
		else if (type != SFS_S_IFREG)
			continue;
		assert_int_equal(
		    sfs_imap(fs, &tmp)->walk(fs, &tmp, record_cb, &w), 0);
	}
	sfs_unlock(fs);
	assert_int_equal(sfs_fs_close(fs), 0);
}

/* Build image i in st->dir: format, journal, populate through the engine,
 * close (or crash), read back. */
static void build_image(struct fz_state *st, struct fz_image *im,
			const char *build_opts, bool journal, bool extents,
			bool crash)
{
	struct sfs_tfs *t = sfs_tfs_alloc();
	gsize len = 0;

	if (strcmp(im->name, "mke2fs-ext4") == 0)
		assert_int_equal(
		    sfs_test_mke2fs(t->img, FZ_IMG_BYTES, FZ_BS, "ext4", NULL),
		    0);
	else
		assert_int_equal(sfs_test_mkimage(t->img, FZ_IMG_BYTES, FZ_BS),
				 0);
	if (journal)
		sfs_test_add_journal(t->img, 1024);
	t->fs = sfs_test_open(t->img, build_opts);
	populate(t->fs, extents);
	if (strcmp(im->name, "mke2fs-ext4") == 0) {
		/* what this image is for: checksums, and htrees, "big" of one
		 * level and "links" of two (4000 names of one file: the
		 * root over dx_nodes) */
		struct sfs_attr a;
		struct sfs_inode *ip;
		struct sfs_buf *b;
		sfs_blk_t pblk;
		sfs_ino_t dl, f;
		char name[64];

		assert_true(t->fs->csum);
		dl = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "links");
		f = mkfile_len(t->fs, dl, "target", 10, 6);
		for (unsigned i = 0; i < 4000; i++) {
			snprintf(name, sizeof(name),
				 "link-with-a-long-name-to-fill-leaves-%04u",
				 i);
			assert_int_equal(sfs_link(t->fs, f, dl, name, &a), 0);
		}
		assert_int_equal(sfs_lookup(t->fs, SFS_ROOT_INO, "big", &a), 0);
		sfs_lock(t->fs);
		assert_int_equal(sfs_iget(t->fs, a.ino, &ip), 0);
		assert_true(sfs_le32(ip->d.i_flags) & SFS_INDEX_FL);
		sfs_iput(t->fs, ip);
		assert_int_equal(sfs_iget(t->fs, dl, &ip), 0);
		assert_true(sfs_le32(ip->d.i_flags) & SFS_INDEX_FL);
		assert_int_equal(sfs_bmap(t->fs, ip, 0, false, &pblk), 0);
		assert_int_equal(
		    sfs_cache_get(t->fs->cache, pblk, SFS_IO_DIRIDX, &b), 0);
		assert_int_equal(b->data[0x1E], 1); /* indirect levels */
		sfs_cache_put(t->fs->cache, b);
		sfs_iput(t->fs, ip);
		sfs_unlock(t->fs);
	}
	if (crash)
		crash_with_log(t);
	else
		sfs_tfs_close(t);
	assert_true(
	    g_file_get_contents(t->img, (char **)&im->bytes, &len, NULL));
	assert_int_equal(len, FZ_IMG_BYTES);
	if (crash) {
		const struct sfs_dsuper *sb =
		    (const void *)(im->bytes + SFS_SUPER_OFFSET);
		/* the point of this image: a log to replay */
		assert_true(sfs_le32(sb->s_feature_incompat) &
			    SFS_FEATURE_INCOMPAT_RECOVER);
		/* record the layout from a recovered copy; the image kept
		 * is the one that needs recovery */
		t->fs = sfs_test_open(t->img, "");
		sfs_tfs_close(t);
	}
	record_metadata(im, t->img, crash);
	sfs_tfs_free(t);
	st->n_img++;
}

static guint32 env_u32(const char *name, guint32 def)
{
	const char *v = g_getenv(name);

	return v && *v ? (guint32)g_ascii_strtoull(v, NULL, 0) : def;
}

static int group_setup(void **state)
{
	struct fz_state *st = g_new0(struct fz_state, 1);

	st->seed = env_u32("SFS_FUZZ_SEED", FZ_SEED);
	st->iters = env_u32("SFS_FUZZ_ITERS", FZ_ITERS);
	st->only =
	    g_getenv("SFS_FUZZ_ONLY") ? (int)env_u32("SFS_FUZZ_ONLY", 0) : -1;
	st->verbose = env_u32("SFS_FUZZ_VERBOSE", 0) != 0;
	/* a loaded machine stretches the watchdog as meson's timeout */
	st->watchdog_s =
	    FZ_WATCHDOG_S *
	    CLAMP(env_u32("SIMFS_TEST_TIMEOUT_MULTIPLIER", 1), 1, 1000);
	st->work = g_malloc(FZ_IMG_BYTES);

	st->img[0] = (struct fz_image){
	    .name = "blockmap",
	    .opts = {"alloc=blockmap", "alloc=reservation,mem=1M"}};
	build_image(st, &st->img[0], "alloc=blockmap", false, false, false);
	st->img[1] = (struct fz_image){
	    .name = "ext3",
	    .opts = {"data=ordered", "data=journal,alloc=reservation"}};
	build_image(st, &st->img[1], "data=ordered", true, false, false);
	st->img[2] = (struct fz_image){
	    .name = "ext3-log", .opts = {"data=ordered", "data=writeback"}};
	build_image(st, &st->img[2], "data=ordered", true, false, true);
	st->img[3] = (struct fz_image){
	    .name = "extent",
	    .opts = {"preset=ext4", "alloc=extent,data=ordered"}};
	build_image(st, &st->img[3], "alloc=extent,data=ordered", true, true,
		    false);
	st->img[4] = (struct fz_image){
	    .name = "mke2fs-ext4",
	    .opts = {"preset=ext4", "data=journal,alloc=extent"},
	    .half = true};
	build_image(st, &st->img[4], "preset=ext4", false, true, false);
	*state = st;
	return 0;
}

static int group_teardown(void **state)
{
	struct fz_state *st = *state;

	for (unsigned i = 0; i < st->n_img; i++) {
		g_free(st->img[i].bytes);
		for (int c = 0; c < FZ_NCAT; c++)
			if (st->img[i].regions[c])
				g_array_free(st->img[i].regions[c], TRUE);
	}
	g_free(st->work);
	g_free(st);
	return 0;
}

/* ---- corrupting ---- */

static uint32_t pick_u32(GRand *r, const struct fz_image *im)
{
	const uint32_t v[] = {0,
			      1,
			      2,
			      3,
			      11,
			      12,
			      0x7F,
			      0x80,
			      0xFF,
			      0x100,
			      0x3FF,
			      0x400,
			      0x401,
			      0x7FFF,
			      0x8000,
			      0xFFFF,
			      0x10000,
			      0x7FFFFFFF,
			      0x80000000,
			      0xFFFFFFFE,
			      0xFFFFFFFF,
			      im->blocks,
			      im->blocks - 1,
			      im->blocks + 1,
			      im->inodes,
			      im->inodes + 1,
			      8192,
			      8193};

	if (g_rand_int_range(r, 0, 4) == 0)
		return g_rand_int(r);
	return v[g_rand_int_range(r, 0, G_N_ELEMENTS(v))];
}

/* One change inside region rg of buf. */
static void mutate(GRand *r, const struct fz_image *im, uint8_t *buf,
		   const struct fz_region *rg, enum fz_cat cat)
{
	uint32_t len = rg->len, at;
	uint8_t *p = buf + rg->off;

	/* inode slots: the fields that matter are in the first 0x90 bytes */
	if (cat == FZ_INODE && g_rand_int_range(r, 0, 4))
		len = MIN(len, 0x90u);
	at = (uint32_t)g_rand_int_range(r, 0, (gint32)len);
	switch (g_rand_int_range(r, 0, 7)) {
	case 0: /* a random byte */
		p[at] = (uint8_t)g_rand_int(r);
		break;
	case 1: /* one bit */
		p[at] ^= (uint8_t)(1u << g_rand_int_range(r, 0, 8));
		break;
	case 2: { /* a 16-bit field */
		const uint16_t v[] = {0,      1,     0x7F,  0xFF,   0x100,
				      0x3FF,  0x400, 0x401, 0x7FFF, 0x8000,
				      0xFFFF, 12,    8};
		uint16_t x =
		    sfs_cpu_to_le16(v[g_rand_int_range(r, 0, G_N_ELEMENTS(v))]);

		at &= ~1u;
		if (at + 2 <= len)
			memcpy(p + at, &x, 2);
		break;
	}
	case 3:
	case 4: { /* a 32-bit field */
		uint32_t x = sfs_cpu_to_le32(pick_u32(r, im));

		at &= ~3u;
		if (at + 4 <= len)
			memcpy(p + at, &x, 4);
		break;
	}
	case 5: { /* a run of zeros or 0xFF */
		uint32_t n =
		    MIN(len - at, (uint32_t)g_rand_int_range(r, 1, 64));

		memset(p + at, g_rand_boolean(r) ? 0 : 0xFF, n);
		break;
	}
	default: { /* a run of random bytes */
		uint32_t n =
		    MIN(len - at, (uint32_t)g_rand_int_range(r, 1, 32));

		for (uint32_t i = 0; i < n; i++)
			p[at + i] = (uint8_t)g_rand_int(r);
		break;
	}
	}
}

/* Corrupt st->work (a copy of im): one to three targets, each changed one
 * to four times.  Describes what it did in `what`. */
static void corrupt(GRand *r, const struct fz_image *im, uint8_t *buf,
		    GString *what)
{
	unsigned targets = (unsigned)g_rand_int_range(r, 1, 4);

	for (unsigned t = 0; t < targets; t++) {
		unsigned total = 0, pick;
		enum fz_cat cat;
		struct fz_region rg;

		for (int c = 0; c < FZ_NCAT; c++)
			if (c == FZ_ANY || im->regions[c]->len)
				total += fz_cat_weight[c];
		pick = (unsigned)g_rand_int_range(r, 0, (gint32)total);
		for (cat = 0; cat < FZ_NCAT; cat++) {
			if (cat != FZ_ANY && !im->regions[cat]->len)
				continue;
			if (pick < fz_cat_weight[cat])
				break;
			pick -= fz_cat_weight[cat];
		}
		if (cat == FZ_ANY) {
			rg.off = (uint64_t)g_rand_int_range(
				     r, 0, (gint32)im->blocks) *
				 FZ_BS;
			rg.len = FZ_BS;
		} else {
			GArray *a = im->regions[cat];
			rg = g_array_index(
			    a, struct fz_region,
			    g_rand_int_range(r, 0, (gint32)a->len));
		}
		unsigned n = (unsigned)g_rand_int_range(r, 1, 5);
		for (unsigned i = 0; i < n; i++)
			mutate(r, im, buf, &rg, cat);
		g_string_append_printf(what, " %s@%llu", fz_cat_name[cat],
				       (unsigned long long)rg.off);
	}
}

/* ---- exercising ---- */

/* Is rc 0 or a negative errno? Counts the failures. */
static void check_rc(struct fz_tally *ty, int rc, const char *call)
{
	if (rc == 0)
		return;
	if (rc > 0 || rc < -4095)
		fail_msg("%s returned %d: not 0 or -errno", call, rc);
	if (rc == -EIO || rc == -EBADMSG) /* damage, or a checksum */
		ty->errors[0]++;
	else if (rc == -EUCLEAN)
		ty->errors[1]++;
	else if (rc == -EROFS)
		ty->errors[2]++;
	else
		ty->errors[3]++;
}

/* A remembered entry, for the changes after the walk. */
struct fz_entry {
	sfs_ino_t parent;
	sfs_ino_t ino;
	uint32_t mode;
	char name[256];
};

struct fz_run {
	struct sfs_fs *fs;
	struct fz_tally *ty;
	GHashTable *seen; /* inodes walked */
	GArray *noted;	  /* struct fz_entry */
	uint8_t *buf;	  /* FZ_READ_CAP bytes */
	int max_depth;	  /* directories below the root walked */
};

/* readdir collects into this, a chunk at a time. */
struct fz_list {
	GPtrArray *names;
	uint64_t next; /* cookie to resume from */
	unsigned in_chunk;
	unsigned total;
};

static int list_cb(void *ctx, const char *name, size_t name_len, sfs_ino_t ino,
		   uint8_t ftype, uint64_t next_off)
{
	struct fz_list *l = ctx;

	(void)ino;
	(void)ftype;
	if (l->in_chunk == 16 || l->total >= FZ_MAX_ENTRIES)
		return 1;
	if (name_len == 0 || name_len > SFS_NAME_MAX)
		fail_msg("readdir: name length %zu", name_len);
	g_ptr_array_add(l->names, g_strndup(name, name_len));
	l->next = next_off;
	l->in_chunk++;
	l->total++;
	return 0;
}

static void walk_xattrs(struct fz_run *run, sfs_ino_t ino)
{
	char list[4096], val[2048];
	size_t len = 0, vlen;
	int rc;

	rc = sfs_listxattr(run->fs, ino, list, sizeof(list), &len);
	check_rc(run->ty, rc, "listxattr");
	if (rc)
		return;
	if (len > sizeof(list))
		fail_msg("listxattr: %zu bytes in a %zu-byte buffer", len,
			 sizeof(list));
	for (size_t at = 0; at < len;) {
		size_t n = strnlen(list + at, len - at);
		char *name = g_strndup(list + at, n);

		rc = sfs_getxattr(run->fs, ino, name, val, sizeof(val), &vlen);
		check_rc(run->ty, rc, "getxattr");
		if (rc == 0 && vlen > sizeof(val))
			fail_msg("getxattr: %zu bytes in a %zu-byte buffer",
				 vlen, sizeof(val));
		rc = sfs_getxattr(run->fs, ino, name, NULL, 0, &vlen);
		check_rc(run->ty, rc, "getxattr size");
		g_free(name);
		at += n + 1;
	}
}

static void read_file(struct fz_run *run, const struct sfs_attr *a)
{
	size_t got;
	int rc;

	rc = sfs_open(run->fs, a->ino, O_RDONLY);
	check_rc(run->ty, rc, "open");
	if (rc)
		return;
	for (uint64_t off = 0; off < MIN(a->size, FZ_READ_CAP);) {
		size_t want = MIN(FZ_READ_CAP, 64u * 1024);

		rc = sfs_read(run->fs, a->ino, off, want, run->buf, &got);
		check_rc(run->ty, rc, "read");
		if (rc || got == 0)
			break;
		if (got > want)
			fail_msg("read: %zu bytes for %zu asked", got, want);
		off += got;
	}
	/* the end of a file, however far its size says it is */
	if (a->size > 4096) {
		rc = sfs_read(run->fs, a->ino, a->size - 4096, 8192, run->buf,
			      &got);
		check_rc(run->ty, rc, "read at end");
		if (rc == 0 && got > 4096)
			fail_msg("read at end: %zu bytes past size - 4096",
				 got);
	}
	check_rc(run->ty, sfs_release(run->fs, a->ino), "release");
}

static void walk_dir(struct fz_run *run, sfs_ino_t dir, int depth);

/* Visit entry `name` of dir: lookup, getattr, then by type. */
static void visit(struct fz_run *run, sfs_ino_t dir, const char *name,
		  int depth)
{
	struct sfs_attr a, b;
	char link[4096];
	size_t len;
	int rc;

	rc = sfs_lookup(run->fs, dir, name, &a);
	check_rc(run->ty, rc, "lookup");
	if (rc)
		return;
	rc = sfs_getattr(run->fs, a.ino, &b);
	check_rc(run->ty, rc, "getattr");
	if (rc == 0 && b.ino != a.ino)
		fail_msg("getattr of %u says inode %u", a.ino, b.ino);
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return;
	if (run->noted->len < FZ_NOTED) {
		struct fz_entry e = {
		    .parent = dir, .ino = a.ino, .mode = a.mode};
		g_strlcpy(e.name, name, sizeof(e.name));
		g_array_append_val(run->noted, e);
	}
	/* a first look at the root only: nothing read below it */
	if (run->max_depth == 0 ||
	    g_hash_table_contains(run->seen, GUINT_TO_POINTER(a.ino)) ||
	    g_hash_table_size(run->seen) >= FZ_MAX_INODES)
		return;
	g_hash_table_add(run->seen, GUINT_TO_POINTER(a.ino));
	walk_xattrs(run, a.ino);
	switch (a.mode & SFS_S_IFMT) {
	case SFS_S_IFDIR:
		if (depth < run->max_depth)
			walk_dir(run, a.ino, depth + 1);
		break;
	case SFS_S_IFREG:
		read_file(run, &a);
		break;
	case SFS_S_IFLNK:
		rc = sfs_readlink(run->fs, a.ino, link, sizeof(link), &len);
		check_rc(run->ty, rc, "readlink");
		if (rc == 0 && len > sizeof(link))
			fail_msg("readlink: %zu bytes in a %zu-byte buffer",
				 len, sizeof(link));
		break;
	default:
		break;
	}
}

/* List dir in chunks of 16 entries (resuming from the cookies), then visit
 * what it named. */
static void walk_dir(struct fz_run *run, sfs_ino_t dir, int depth)
{
	struct fz_list l = {.names = g_ptr_array_new_with_free_func(g_free)};
	unsigned calls = 0;
	int rc;

	for (;;) {
		unsigned before = l.total;

		l.in_chunk = 0;
		rc = sfs_readdir(run->fs, dir, l.next, list_cb, &l);
		check_rc(run->ty, rc, "readdir");
		/* a chunk with nothing new is the end */
		if (rc || l.total == before || l.total >= FZ_MAX_ENTRIES)
			break;
		if (++calls > FZ_MAX_ENTRIES)
			fail_msg("readdir of inode %u does not end", dir);
	}
	for (guint i = 0; i < l.names->len; i++)
		visit(run, dir, g_ptr_array_index(l.names, i), depth);
	g_ptr_array_free(l.names, TRUE);
}

/* The whole tree from the root. */
static void walk_all(struct fz_run *run)
{
	struct sfs_attr a;
	struct sfs_statfs sf;

	check_rc(run->ty, sfs_statfs(run->fs, &sf), "statfs");
	check_rc(run->ty, sfs_getattr(run->fs, SFS_ROOT_INO, &a), "getattr");
	g_hash_table_add(run->seen, GUINT_TO_POINTER(SFS_ROOT_INO));
	walk_xattrs(run, SFS_ROOT_INO);
	walk_dir(run, SFS_ROOT_INO, 0);
}

static void write_some(struct fz_run *run, sfs_ino_t ino, GRand *r)
{
	struct sfs_attr a, in = {0};
	size_t n;
	int rc;

	rc = sfs_open(run->fs, ino, O_RDWR);
	check_rc(run->ty, rc, "open rw");
	if (rc)
		return;
	fill(run->buf, 5000, 7);
	rc = sfs_getattr(run->fs, ino, &a);
	check_rc(run->ty, rc, "getattr");
	if (rc == 0) {
		/* append, then overwrite inside */
		rc = sfs_write(run->fs, ino, a.size, run->buf, 5000, &n);
		check_rc(run->ty, rc, "append");
		rc = sfs_write(run->fs, ino, a.size / 3, run->buf, 3000, &n);
		check_rc(run->ty, rc, "write");
		if (n > 3000)
			fail_msg("write: %zu bytes for 3000", n);
		in.size = g_rand_boolean(r) ? a.size / 2 : a.size + 70000;
		rc = sfs_setattr(run->fs, ino, &in, SFS_SET_SIZE, &a);
		check_rc(run->ty, rc, "truncate");
		rc = sfs_fallocate(run->fs, ino, 0, 0, 20000);
		if (rc != -EOPNOTSUPP)
			check_rc(run->ty, rc, "fallocate");
	}
	check_rc(run->ty, sfs_release(run->fs, ino), "release");
}

/* Changes to the tree: new entries, writes, renames, removals. */
static void change_all(struct fz_run *run, GRand *r)
{
	struct sfs_attr a;
	char name[64];
	size_t n;
	int rc;

	rc = sfs_mknod(run->fs, SFS_ROOT_INO, "fz-new", SFS_S_IFREG | 0644, 0,
		       0, 0, &a);
	check_rc(run->ty, rc, "mknod");
	if (rc == 0) {
		fill(run->buf, 20000, 3);
		rc = sfs_open(run->fs, a.ino, O_RDWR);
		check_rc(run->ty, rc, "open new");
		if (rc == 0) {
			rc = sfs_write(run->fs, a.ino, 0, run->buf, 20000, &n);
			check_rc(run->ty, rc, "write new");
			check_rc(run->ty, sfs_release(run->fs, a.ino),
				 "release");
		}
		rc = sfs_setxattr(run->fs, a.ino, "user.fz", "v", 1, 0);
		check_rc(run->ty, rc, "setxattr");
	}
	rc = sfs_mkdir(run->fs, SFS_ROOT_INO, "fz-dir", 0755, 0, 0, &a);
	check_rc(run->ty, rc, "mkdir");
	rc = sfs_symlink(run->fs, SFS_ROOT_INO, "fz-link", "fz-new", 0, 0, &a);
	check_rc(run->ty, rc, "symlink");
	for (guint i = 0; i < run->noted->len; i++) {
		struct fz_entry *e =
		    &g_array_index(run->noted, struct fz_entry, i);
		uint32_t type = e->mode & SFS_S_IFMT;

		switch (g_rand_int_range(r, 0, 6)) {
		case 0:
			if (type == SFS_S_IFREG)
				write_some(run, e->ino, r);
			break;
		case 1:
			snprintf(name, sizeof(name), "fz-renamed-%u", i);
			rc = sfs_rename(run->fs, e->parent, e->name,
					g_rand_boolean(r) ? SFS_ROOT_INO
							  : e->parent,
					name, 0);
			check_rc(run->ty, rc, "rename");
			break;
		case 2:
			rc = type == SFS_S_IFDIR
				 ? sfs_rmdir(run->fs, e->parent, e->name)
				 : sfs_unlink(run->fs, e->parent, e->name);
			check_rc(run->ty, rc, "unlink");
			break;
		case 3:
			rc = sfs_setxattr(run->fs, e->ino, "user.a", "changed",
					  7, 0);
			check_rc(run->ty, rc, "setxattr");
			rc = sfs_removexattr(run->fs, e->ino, "user.bb");
			check_rc(run->ty, rc, "removexattr");
			break;
		case 4:
			snprintf(name, sizeof(name), "fz-%u", i);
			if (type == SFS_S_IFDIR)
				rc = sfs_mknod(run->fs, e->ino, name,
					       SFS_S_IFREG | 0600, 0, 0, 0, &a);
			else
				rc = sfs_link(run->fs, e->ino, SFS_ROOT_INO,
					      name, &a);
			check_rc(run->ty, rc, "create in / link");
			break;
		default:
			break;
		}
	}
}

/* Open the bytes in st->work; NULL if the engine refuses them. */
static struct sfs_fs *fz_open(struct fz_state *st, const char *opts)
{
	struct sfs_config cfg;
	struct sfs_fs *fs = NULL;
	char *err = NULL;
	int rc;

	sfs_config_defaults(&cfg);
	if (sfs_config_parse(&cfg, opts, NULL, &err))
		fail_msg("options %s: %s", opts, err);
	rc = sfs_fs_open(sfs_ramdev_wrap(st->work, FZ_IMG_BYTES), &cfg, &fs,
			 &err);
	check_rc(&st->tally, rc, "sfs_fs_open");
	if (rc) {
		if (fs)
			fail_msg("sfs_fs_open failed (%d) but gave a fs", rc);
		if (!err || !err[0])
			fail_msg("sfs_fs_open failed (%d) without a message",
				 rc);
		if (st->verbose)
			print_message("#   refused: %s\n", err);
	}
	g_free(err);
	return rc ? NULL : fs;
}

static void run_one(struct fz_state *st, struct fz_image *im, unsigned it)
{
	GRand *r = g_rand_new_with_seed(st->seed ^ (it * 0x9E3779B1u) ^
					(guint32)(im - st->img) << 28);
	GString *what = g_string_new(NULL);
	const char *opts = im->opts[g_rand_int_range(r, 0, 2)];
	struct fz_run run = {.ty = &st->tally};
	int rc;

	memcpy(st->work, im->bytes, FZ_IMG_BYTES);
	corrupt(r, im, st->work, what);
	g_snprintf(fz_now_running, sizeof(fz_now_running),
		   "image %s iteration %u seed %u (%s):%s", im->name, it,
		   st->seed, opts, what->str);
	if (st->verbose)
		print_message("# %s\n", fz_now_running);
	alarm(st->watchdog_s);
	st->tally.iters++;
	run.buf = g_malloc(FZ_READ_CAP);
	run.fs = fz_open(st, opts);
	if (!run.fs) {
		st->tally.refused++;
		goto out;
	}
	st->tally.mounted++;
	run.seen = g_hash_table_new(NULL, NULL);
	run.noted = g_array_new(FALSE, FALSE, sizeof(struct fz_entry));
	/* the changes after the whole tree was read, or first (before an
	 * error found on the way makes the filesystem read-only) */
	run.max_depth = g_rand_boolean(r) ? FZ_MAX_DEPTH : 0;
	walk_all(&run);
	change_all(&run, r);
	if (run.max_depth == 0) {
		run.max_depth = FZ_MAX_DEPTH;
		g_hash_table_remove_all(run.seen);
		walk_all(&run);
	}
	check_rc(&st->tally, sfs_fs_sync(run.fs), "sync");
	rc = sfs_fs_close(run.fs);
	check_rc(&st->tally, rc, "close");

	/* what the engine left behind mounts, or is refused, just as well */
	run.fs = fz_open(st, opts);
	if (run.fs) {
		st->tally.remounted++;
		g_hash_table_remove_all(run.seen);
		g_array_set_size(run.noted, 0);
		walk_all(&run);
		check_rc(&st->tally, sfs_fs_close(run.fs), "close");
	}
	g_hash_table_unref(run.seen);
	g_array_free(run.noted, TRUE);
out:
	alarm(0);
	g_free(run.buf);
	g_string_free(what, TRUE);
	g_rand_free(r);
	fz_leak_check(fz_now_running);
}

static void fz_run_image(void **state, unsigned i)
{
	struct fz_state *st = *state;
	struct fz_image *im = &st->img[i];
	struct fz_tally before = st->tally;
	GPrintFunc old;

	if (g_getenv("SFS_FUZZ_IMAGE") &&
	    strcmp(g_getenv("SFS_FUZZ_IMAGE"), im->name) != 0)
		skip();
	fz_print_engine = st->verbose;
	old = g_set_printerr_handler(fz_printerr);
	signal(SIGALRM, fz_on_signal);
	signal(SIGABRT, fz_on_signal);
	signal(SIGSEGV, fz_on_signal);
	signal(SIGBUS, fz_on_signal);
	for (unsigned it = 0; it < (im->half ? (st->iters + 1) / 2 : st->iters);
	     it++)
		if (st->only < 0 || (unsigned)st->only == it)
			run_one(st, im, it);
	signal(SIGALRM, SIG_DFL);
	signal(SIGABRT, SIG_DFL);
	signal(SIGSEGV, SIG_DFL);
	signal(SIGBUS, SIG_DFL);
	g_set_printerr_handler(old);
	st->tally.printed = fz_printed;
	print_message("# %s (seed %u): %u iterations, %u mounted (%u again "
		      "after the changes), %u refused; calls failing: %u EIO, "
		      "%u EUCLEAN, %u EROFS, %u other; %lu engine messages\n",
		      im->name, st->seed, st->tally.iters - before.iters,
		      st->tally.mounted - before.mounted,
		      st->tally.remounted - before.remounted,
		      st->tally.refused - before.refused,
		      st->tally.errors[0] - before.errors[0],
		      st->tally.errors[1] - before.errors[1],
		      st->tally.errors[2] - before.errors[2],
		      st->tally.errors[3] - before.errors[3],
		      fz_printed - before.printed);
	/* every iteration ran to its end */
	assert_int_equal(st->tally.mounted + st->tally.refused,
			 st->tally.iters);
}

static void test_fuzzimage_blockmap(void **state)
{
	fz_run_image(state, 0);
}

static void test_fuzzimage_ext3(void **state)
{
	fz_run_image(state, 1);
}

static void test_fuzzimage_ext3_log(void **state)
{
	fz_run_image(state, 2);
}

static void test_fuzzimage_extent(void **state)
{
	fz_run_image(state, 3);
}

static void test_fuzzimage_mke2fs_ext4(void **state)
{
	fz_run_image(state, 4);
}

/* ---- one corruption at a time: the cases the random ones found ---- */

/* Inode number of root entry `name` in image i; st->work is left a
 * pristine copy of it. */
static sfs_ino_t ino_of(struct fz_state *st, unsigned i, const char *name)
{
	struct sfs_attr a;
	struct sfs_fs *fs;

	memcpy(st->work, st->img[i].bytes, FZ_IMG_BYTES);
	fs = fz_open(st, st->img[i].opts[0]);
	assert_non_null(fs);
	assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, name, &a), 0);
	sfs_fs_abort(fs);
	memcpy(st->work, st->img[i].bytes, FZ_IMG_BYTES);
	return a.ino;
}

/* The on-disk inode ino (of group 0) inside st->work. */
static struct sfs_dinode *dinode_of(struct fz_state *st, unsigned i,
				    sfs_ino_t ino)
{
	const struct fz_image *im = &st->img[i];

	assert_true(ino >= 1 && ino <= im->ipg);
	return (struct sfs_dinode *)(st->work + im->itable_off +
				     (uint64_t)(ino - 1) * im->inode_size);
}

/* The filesystem found an error: it refuses changes, and closes without
 * leaking. */
static void close_in_error(struct sfs_fs *fs, const char *what)
{
	struct sfs_attr a;

	assert_int_equal(sfs_mkdir(fs, SFS_ROOT_INO, "d", 0755, 0, 0, &a),
			 -EROFS);
	sfs_fs_close(fs);
	fz_leak_check(what);
}

/* An i_extra_isize past the inode: the message names the inode before
 * the copy is freed. */
static void test_fuzzimage_bad_extra_isize(void **state)
{
	struct fz_state *st = *state;
	sfs_ino_t ino = ino_of(st, 0, "small");
	struct sfs_attr a;
	struct sfs_fs *fs;

	assert_true(st->img[0].inode_size > SFS_GOOD_OLD_INODE_SIZE);
	dinode_of(st, 0, ino)->i_extra_isize = sfs_cpu_to_le16(0xFFFF);
	fs = fz_open(st, "");
	assert_non_null(fs);
	assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, "small", &a), -EIO);
	close_in_error(fs, "bad i_extra_isize");
}

/* i_blocks smaller than the blocks a truncate frees: a filesystem error,
 * not an assertion. */
static void test_fuzzimage_iblocks_too_small(void **state)
{
	struct fz_state *st = *state;
	sfs_ino_t ino = ino_of(st, 0, "large");
	struct sfs_attr a, in = {.size = 0};
	struct sfs_fs *fs;

	dinode_of(st, 0, ino)->i_blocks = sfs_cpu_to_le32(2);
	fs = fz_open(st, "");
	assert_non_null(fs);
	sfs_setattr(fs, ino, &in, SFS_SET_SIZE, &a);
	close_in_error(fs, "i_blocks too small");
}

/*
 * The inode bitmap calls the live inode of "small" free.  A new file must
 * not take its number (two files would share it): -EIO, whether the live
 * inode is in memory (cached: looked up first) or only on disk, where its
 * slot says it is in use.
 */
static void live_inode_free_in_bitmap(struct fz_state *st, bool cached)
{
	sfs_ino_t ino = ino_of(st, 0, "small");
	uint8_t *map = st->work + st->img[0].ibitmap_off;
	struct sfs_attr a;
	struct sfs_fs *fs;

	map[(ino - 1) / 8] &= (uint8_t) ~(1u << ((ino - 1) % 8));
	fs = fz_open(st, "");
	assert_non_null(fs);
	if (cached)
		assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, "small", &a), 0);
	assert_int_equal(
	    sfs_mknod(fs, SFS_ROOT_INO, "new", SFS_S_IFREG | 0644, 0, 0, 0, &a),
	    -EIO);
	assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, "small", &a), 0);
	assert_int_equal(a.ino, ino);
	assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, "new", &a), -ENOENT);
	sfs_fs_close(fs);
	fz_leak_check("live inode free in the bitmap");
}

static void test_fuzzimage_live_inode_free_in_bitmap(void **state)
{
	live_inode_free_in_bitmap(*state, true);
}

static void test_fuzzimage_uncached_inode_free_in_bitmap(void **state)
{
	live_inode_free_in_bitmap(*state, false);
}

/* An inode size that is not a power of two, seen by the journal before
 * the superblock checks: refused, with no read past the inode's block. */
static void test_fuzzimage_journal_odd_inode_size(void **state)
{
	struct fz_state *st = *state;
	struct sfs_dsuper *sb = (void *)(st->work + SFS_SUPER_OFFSET);

	memcpy(st->work, st->img[1].bytes, FZ_IMG_BYTES);
	sb->s_inode_size = sfs_cpu_to_le16(1000);
	assert_null(fz_open(st, "data=ordered"));
	fz_leak_check("odd inode size");
}

/* Unmount with state still held by cached inodes: a reservation made for
 * the xattr block of a file never opened, and delayed blocks that a
 * journaled filesystem in error cannot write. */
static void test_fuzzimage_unmount_drops_inode_state(void **state)
{
	struct fz_state *st = *state;
	uint8_t buf[10000];
	struct sfs_attr a;
	struct sfs_fs *fs;
	sfs_ino_t ino;
	size_t n;

	memcpy(st->work, st->img[0].bytes, FZ_IMG_BYTES);
	fs = fz_open(st, "alloc=reservation");
	assert_non_null(fs);
	assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, "small", &a), 0);
	memset(buf, 'v', 500);
	assert_int_equal(sfs_setxattr(fs, a.ino, "user.v", buf, 500, 0), 0);
	assert_int_equal(sfs_fs_close(fs), 0);
	fz_leak_check("reservation state at unmount");

	ino = ino_of(st, 3, "small");
	dinode_of(st, 3, ino)->i_extra_isize = sfs_cpu_to_le16(0xFFFF);
	fs = fz_open(st, "preset=ext4");
	assert_non_null(fs);
	ino = sfs_test_mkfile(fs, SFS_ROOT_INO, "delayed");
	fill(buf, sizeof(buf), 1);
	assert_int_equal(sfs_write(fs, ino, 0, buf, sizeof(buf), &n), 0);
	assert_int_equal(sfs_release(fs, ino), 0);
	assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, "small", &a), -EIO);
	assert_int_equal(sfs_fs_close(fs), -EIO);
	fz_leak_check("delayed blocks at unmount");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fuzzimage_blockmap),
	    cmocka_unit_test(test_fuzzimage_ext3),
	    cmocka_unit_test(test_fuzzimage_ext3_log),
	    cmocka_unit_test(test_fuzzimage_extent),
	    cmocka_unit_test(test_fuzzimage_mke2fs_ext4),
	    cmocka_unit_test(test_fuzzimage_bad_extra_isize),
	    cmocka_unit_test(test_fuzzimage_iblocks_too_small),
	    cmocka_unit_test(test_fuzzimage_live_inode_free_in_bitmap),
	    cmocka_unit_test(test_fuzzimage_uncached_inode_free_in_bitmap),
	    cmocka_unit_test(test_fuzzimage_journal_odd_inode_size),
	    cmocka_unit_test(test_fuzzimage_unmount_drops_inode_state),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
