/*
 * test_mballoc.c - alloc=mballoc through the engine: seeded random
 * write/truncate/close sequences on small multi-group images (1 KiB and
 * 4 KiB blocks) with the buddy checked against bitmap + PAs, no block owned
 * twice and the bitmaps equal to the files' mappings once the PAs are
 * returned; interleaved writers get few long extents (many under
 * alloc=extent); small files are packed by the locality group; -ENOSPC only
 * when no block is left, PAs included.  Every case ends with e2fsck -fn
 * clean.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fs_priv.h"
#include "blockdev.h"
#include "models/alloc/mballoc.h"
#include "testsupport.h"

static struct sfs_tfs *tfs_open(uint64_t size, uint32_t bs, const char *opts)
{
	struct sfs_tfs *t = sfs_tfs_alloc();

	assert_int_equal(sfs_test_mkimage(t->img, size, bs), 0);
	if (strstr(opts, "data=")) /* a journaled image */
		sfs_test_add_journal(t->img, 1024);
	t->fs = sfs_test_open(t->img, opts);
	assert_non_null(t->fs);
	return t;
}

static int put_block(struct sfs_fs *fs, sfs_ino_t ino, uint32_t lblk)
{
	static uint8_t buf[4096];
	size_t done = 0;

	memset(buf, (int)(lblk & 0xff) | 1, sizeof(buf));
	return sfs_write(fs, ino, (uint64_t)lblk * fs->bs, buf, fs->bs, &done);
}

static void check_mb(struct sfs_fs *fs, struct sfs_mballoc_counters *c)
{
	sfs_lock(fs);
	assert_int_equal(sfs_mballoc_check(fs->alloc, c), 0);
	sfs_unlock(fs);
}

struct walk {
	GArray *blocks; /* every block, data and tree */
	uint32_t data_extents;
};

static int collect(void *ctx, uint32_t lblk, sfs_blk_t pblk, uint32_t len,
		   bool meta)
{
	struct walk *w = ctx;

	(void)lblk;
	if (!meta)
		w->data_extents++;
	for (uint32_t i = 0; i < len; i++) {
		sfs_blk_t b = pblk + i;
		g_array_append_val(w->blocks, b);
	}
	return 0;
}

/* Walk ino's map (fs locked by the caller) into w. */
static void walk_locked(struct sfs_fs *fs, sfs_ino_t ino, struct walk *w)
{
	struct sfs_inode *ip;

	assert_int_equal(sfs_iget(fs, ino, &ip), 0);
	assert_int_equal(sfs_imap(fs, ip)->walk(fs, ip, collect, w), 0);
	sfs_iput(fs, ip);
}

static uint32_t data_extents(struct sfs_fs *fs, sfs_ino_t ino)
{
	struct walk w = {g_array_new(FALSE, FALSE, sizeof(sfs_blk_t)), 0};

	sfs_lock(fs);
	walk_locked(fs, ino, &w);
	sfs_unlock(fs);
	g_array_free(w.blocks, TRUE);
	return w.data_extents;
}

static bool blk_used(struct sfs_fs *fs, sfs_blk_t b)
{
	uint32_t g = sfs_blk_group(fs, b);
	uint32_t bit = b - sfs_group_first(fs, g);
	struct sfs_buf *buf;
	bool used;

	assert_int_equal(sfs_block_bitmap(fs, g, &buf), 0);
	used = buf->data[bit >> 3] & (1u << (bit & 7));
	sfs_cache_put(fs->cache, buf);
	return used;
}

static uint8_t *snapshot(struct sfs_fs *fs)
{
	uint8_t *m = g_malloc0(fs->blocks_count / 8 + 1);

	sfs_lock(fs);
	for (sfs_blk_t b = fs->first_data_block; b < fs->blocks_count; b++)
		if (blk_used(fs, b))
			m[b >> 3] |= (uint8_t)(1u << (b & 7));
	sfs_unlock(fs);
	return m;
}

#define NFILES 6

/*
 * No block in two files or in the base layout; with release_all, no PA is
 * left and the bitmaps are exactly base + the files' blocks.
 */
static void check_ownership(struct sfs_fs *fs, const uint8_t *base,
			    const sfs_ino_t *ino, bool exact)
{
	uint8_t *own = g_malloc0(fs->blocks_count / 8 + 1);

	sfs_lock(fs);
	for (int f = 0; f < NFILES; f++) {
		struct walk w = {g_array_new(FALSE, FALSE, sizeof(sfs_blk_t)),
				 0};
		walk_locked(fs, ino[f], &w);
		for (guint i = 0; i < w.blocks->len; i++) {
			sfs_blk_t b = g_array_index(w.blocks, sfs_blk_t, i);
			assert_true(b < fs->blocks_count);
			assert_false(base[b >> 3] & (1u << (b & 7)));
			assert_false(own[b >> 3] & (1u << (b & 7)));
			assert_true(blk_used(fs, b));
			own[b >> 3] |= (uint8_t)(1u << (b & 7));
		}
		g_array_free(w.blocks, TRUE);
	}
	if (exact)
		for (sfs_blk_t b = fs->first_data_block; b < fs->blocks_count;
		     b++)
			assert_int_equal(
			    blk_used(fs, b),
			    ((base[b >> 3] | own[b >> 3]) >> (b & 7)) & 1);
	sfs_unlock(fs);
	g_free(own);
}

static void random_run(uint32_t bs, uint64_t size, uint32_t seed,
		       const char *opts)
{
	struct sfs_tfs *t;
	GRand *r = g_rand_new_with_seed(seed);
	sfs_ino_t ino[NFILES];
	bool open[NFILES];
	uint32_t len[NFILES] = {0};
	struct sfs_mballoc_counters c;
	uint8_t *base;

	t = tfs_open(size, bs, opts);
	for (int f = 0; f < NFILES; f++) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", f);
		ino[f] = sfs_test_mkfile(t->fs, SFS_ROOT_INO, name);
		open[f] = true;
	}
	assert_int_equal(sfs_fs_sync(t->fs), 0);
	base = snapshot(t->fs);
	for (int step = 0; step < 600; step++) {
		int f = g_rand_int_range(r, 0, NFILES);
		int op = g_rand_int_range(r, 0, 10);

		if (!open[f]) {
			assert_int_equal(sfs_open(t->fs, ino[f], O_RDWR), 0);
			open[f] = true;
		}
		if (op < 6) { /* append a few blocks */
			uint32_t n = (uint32_t)g_rand_int_range(r, 1, 40);
			for (uint32_t k = 0; k < n; k++)
				assert_int_equal(
				    put_block(t->fs, ino[f], len[f]++), 0);
		} else if (op < 7 && len[f]) { /* overwrite / fill a hole */
			uint32_t l =
			    (uint32_t)g_rand_int_range(r, 0, (gint32)len[f]);
			assert_int_equal(put_block(t->fs, ino[f], l), 0);
		} else if (op < 9) { /* truncate */
			struct sfs_attr in = {0}, out;
			in.size = (uint64_t)g_rand_int_range(
				      r, 0, (gint32)len[f] + 1) *
				  bs;
			if (g_rand_boolean(r) && in.size)
				in.size -= bs / 3;
			assert_int_equal(
			    sfs_setattr(t->fs, ino[f], &in, SFS_SET_SIZE, &out),
			    0);
			len[f] = (uint32_t)((in.size + bs - 1) / bs);
		} else { /* close: its PA goes back */
			assert_int_equal(sfs_release(t->fs, ino[f]), 0);
			open[f] = false;
		}
		if (step % 50 == 49) {
			check_mb(t->fs, &c);
			check_ownership(t->fs, base, ino, false);
		}
	}
	check_mb(t->fs, &c);
	print_message(
	    "# %s bs %u: builds %" PRIu64 " pa_inode %" PRIu64 " pa_lg %" PRIu64
	    " regular %" PRIu64 " goal %" PRIu64 " cr0-3 %" PRIu64 "/%" PRIu64
	    "/%" PRIu64 "/%" PRIu64 " pas %" PRIu64 " discarded %" PRIu64 "\n",
	    opts, bs, c.buddy_builds, c.allocs_pa_inode, c.allocs_pa_lg,
	    c.allocs_regular, c.allocs_goal, c.allocs_cr[0], c.allocs_cr[1],
	    c.allocs_cr[2], c.allocs_cr[3], c.pas_made, c.pas_discarded);
	assert_true(c.pas_made > 0);
	assert_true(c.allocs_pa_inode > 0 && c.allocs_pa_lg > 0);
	for (int f = 0; f < NFILES; f++)
		if (open[f])
			assert_int_equal(sfs_release(t->fs, ino[f]), 0);
	/* journaled: frees reach the bitmaps at commit */
	assert_int_equal(sfs_fs_sync(t->fs), 0);
	check_mb(t->fs, &c);
	/* all inode PAs are gone; at most the shared LG PA remains, and no
	 * PA block is ever set on disk: bitmaps = base + files exactly */
	assert_true(c.pas_live <= 1);
	check_ownership(t->fs, base, ino, true);
	g_free(base);
	g_rand_free(r);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_mballoc_random_1k(void **state)
{
	(void)state;
	random_run(1024, 24 << 20, 77, "alloc=mballoc");
	random_run(1024, 24 << 20, 78, "alloc=mballoc");
}

static void test_mballoc_random_4k(void **state)
{
	(void)state;
	random_run(4096, 300 << 20, 91, "alloc=mballoc");
}

/* Journaled: frees stay in the bitmaps until commit (lazy rebuilds). */
static void test_mballoc_random_journaled(void **state)
{
	(void)state;
	random_run(1024, 24 << 20, 5, "alloc=mballoc,data=ordered");
	random_run(4096, 64 << 20, 6, "alloc=mballoc,data=ordered");
}

/* Two files written alternately block by block. */
static void interleave(const char *opts, uint32_t nblk, uint32_t *ea,
		       uint32_t *eb)
{
	struct sfs_tfs *t;
	sfs_ino_t a, b;

	t = tfs_open(64 << 20, 1024, opts);
	a = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "a");
	b = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "b");
	for (uint32_t l = 0; l < nblk; l++) {
		assert_int_equal(put_block(t->fs, a, l), 0);
		assert_int_equal(put_block(t->fs, b, l), 0);
	}
	*ea = data_extents(t->fs, a);
	*eb = data_extents(t->fs, b);
	assert_int_equal(sfs_release(t->fs, a), 0);
	assert_int_equal(sfs_release(t->fs, b), 0);
	if (strstr(opts, "mballoc")) {
		struct sfs_mballoc_counters c;
		check_mb(t->fs, &c);
		assert_true(c.pas_live <= 1); /* only the LG PA */
	}
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_mballoc_interleaved_few_extents(void **state)
{
	uint32_t ma, mb, xa, xb;

	(void)state;
	interleave("alloc=mballoc", 1024, &ma, &mb);
	interleave("alloc=extent", 1024, &xa, &xb);
	print_message("# extents per file: mballoc %u/%u, extent %u/%u\n", ma,
		      mb, xa, xb);
	/* the first stream_req blocks come interleaved from the shared
	 * locality group; past them, per-inode PAs of growing size */
	assert_true(ma <= 16 + 8 && mb <= 16 + 8);
	assert_true(xa > 200 && xb > 200);
}

/* Small files written one after another are packed by the LG PA. */
static void test_mballoc_small_files_packed(void **state)
{
	struct sfs_tfs *t;
	GArray *all = g_array_new(FALSE, FALSE, sizeof(sfs_blk_t));
	uint32_t runs = 1;

	(void)state;
	t = tfs_open(32 << 20, 1024, "alloc=mballoc");
	for (int f = 0; f < 60; f++) {
		char name[16];
		snprintf(name, sizeof(name), "s%d", f);
		sfs_ino_t ino = sfs_test_mkfile(t->fs, SFS_ROOT_INO, name);
		for (uint32_t l = 0; l < 3; l++)
			assert_int_equal(put_block(t->fs, ino, l), 0);
		assert_int_equal(sfs_release(t->fs, ino), 0);
		struct walk w = {all, 0};
		sfs_lock(t->fs);
		walk_locked(t->fs, ino, &w);
		sfs_unlock(t->fs);
		assert_int_equal(w.data_extents, 1);
	}
	for (guint i = 1; i < all->len; i++)
		if (g_array_index(all, sfs_blk_t, i) !=
		    g_array_index(all, sfs_blk_t, i - 1) + 1)
			runs++;
	/* 180 blocks, one 512-block LG PA: one run in creation order */
	assert_int_equal(runs, 1);
	g_array_free(all, TRUE);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* Fill through files: -ENOSPC only when no block is left, PAs included. */
static void test_mballoc_enospc_edge(void **state)
{
	struct sfs_tfs *t;
	struct sfs_mballoc_counters c;
	sfs_ino_t a, b;
	uint32_t l;
	int rc = 0;

	(void)state;
	t = tfs_open(16 << 20, 1024, "alloc=mballoc");
	a = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "a");
	b = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "b");
	/* b keeps an inode PA (its normalised tail) and stays open */
	for (l = 0; l < 40; l++)
		assert_int_equal(put_block(t->fs, b, l), 0);
	check_mb(t->fs, &c);
	assert_true(c.pa_blocks_live > 0);
	for (l = 0;; l++) {
		rc = put_block(t->fs, a, l);
		if (rc)
			break;
	}
	assert_int_equal(rc, -ENOSPC);
	sfs_lock(t->fs);
	assert_int_equal(sfs_free_blocks(t->fs), 0);
	sfs_unlock(t->fs);
	check_mb(t->fs, &c);
	assert_true(c.discard_all >= 1);
	assert_int_equal(c.pa_blocks_live, 0);
	assert_int_equal(sfs_release(t->fs, a), 0);
	assert_int_equal(sfs_release(t->fs, b), 0);
	assert_int_equal(sfs_unlink(t->fs, SFS_ROOT_INO, "a"), 0);
	/* space again: a new file gets blocks */
	sfs_ino_t n = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "n");
	assert_int_equal(put_block(t->fs, n, 0), 0);
	assert_int_equal(sfs_release(t->fs, n), 0);
	check_mb(t->fs, &c);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* Defaults and the setter. */
static void test_mballoc_params(void **state)
{
	struct sfs_tfs *t;
	struct sfs_mballoc_params p;

	(void)state;
	sfs_mballoc_default_params(&p);
	assert_int_equal(p.max_to_scan, 200);
	assert_int_equal(p.min_to_scan, 10);
	assert_int_equal(p.order2_req, 2);
	assert_int_equal(p.stream_req, 16);
	assert_int_equal(p.group_prealloc, 512);
	t = tfs_open(16 << 20, 1024, "alloc=mballoc");
	sfs_lock(t->fs);
	assert_int_equal(sfs_mballoc_set_params(t->fs->alloc, &p), 0);
	p.min_to_scan = 500;
	assert_int_equal(sfs_mballoc_set_params(t->fs->alloc, &p), -EINVAL);
	sfs_unlock(t->fs);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
	t = tfs_open(16 << 20, 1024, "alloc=extent");
	sfs_lock(t->fs);
	assert_int_equal(sfs_mballoc_check(t->fs->alloc, NULL), -EINVAL);
	sfs_unlock(t->fs);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mballoc_params),
	    cmocka_unit_test(test_mballoc_random_1k),
	    cmocka_unit_test(test_mballoc_random_4k),
	    cmocka_unit_test(test_mballoc_random_journaled),
	    cmocka_unit_test(test_mballoc_interleaved_few_extents),
	    cmocka_unit_test(test_mballoc_small_files_packed),
	    cmocka_unit_test(test_mballoc_enospc_edge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
