/*
 * test_extent_tree.c - large extent trees (models/alloc/extent.c): seeded
 * random one-block writes at random logical offsets (inserts that split
 * leaves and grow the tree), random writes into a preallocated file
 * (unwritten -> written conversions) and truncates, thousands of extents
 * on 1 KiB blocks (84 entries a node, depth 2 and more).  After every
 * phase:
 *   - the mapping read through the map's walk equals a model (an array
 *     lblk -> state: hole, unwritten or written, and the physical block
 *     once seen, which must never move);
 *   - the tree read from disk is well formed: header magic, eh_depth one
 *     less than the parent's, eh_max the node's capacity, no node empty or
 *     overfull, keys strictly increasing and extents not overlapping
 *     across the whole tree, every index key equal to its child's first
 *     key;
 *   - the file reads back what was written (zeros elsewhere).
 * A random phase may leave the tree as the kernel leaves it: e2fsck may
 * then only say it "could be narrower"; after the final truncates the
 * image is e2fsck -fn clean.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fs_priv.h"
#include "testsupport.h"

#define BS 1024u
#define SPAN 12000u /* logical blocks the random writes cover */

enum st { ST_HOLE = 0, ST_UNWRITTEN, ST_WRITTEN };

struct model {
	uint8_t st[SPAN];     /* enum st per logical block */
	sfs_blk_t pblk[SPAN]; /* physical block once mapped, else 0 */
	uint8_t stamp[SPAN];  /* first byte of a written block */
	uint32_t size_blk;    /* i_size in blocks */
};

struct tree {
	struct sfs_fs *fs;
	uint32_t cap;	  /* entries in a tree block */
	int64_t last_end; /* end of the previous extent, -1 at start */
	uint32_t extents;
	uint32_t nodes;
	int depth;
};

/* Check the node in h at depth `depth`; recurse into children. */
static void check_node(struct tree *t, const struct sfs_dextent_header *h,
		       int depth, bool root)
{
	uint32_t n = sfs_le16(h->eh_entries);
	const uint8_t *ent = (const uint8_t *)(h + 1);

	assert_int_equal(sfs_le16(h->eh_magic), 0xF30A);
	assert_int_equal(sfs_le16(h->eh_depth), depth);
	assert_int_equal(sfs_le16(h->eh_max), root ? 4 : t->cap);
	assert_true(n <= sfs_le16(h->eh_max));
	if (!root || depth > 0)
		assert_true(n > 0);
	t->nodes++;
	for (uint32_t i = 0; i < n; i++) {
		if (depth == 0) {
			const struct sfs_dextent *e =
			    (const void *)(ent + 12 * i);
			uint32_t k = sfs_le32(e->ee_block);
			uint32_t len = sfs_le16(e->ee_len);

			if (len > 32768)
				len -= 32768;
			assert_true(len > 0);
			assert_true((int64_t)k >= t->last_end);
			t->last_end = (int64_t)k + len;
			t->extents++;
			continue;
		}
		const struct sfs_dextent_idx *ix = (const void *)(ent + 12 * i);
		sfs_blk_t child = sfs_le32(ix->ei_leaf_lo);
		struct sfs_buf *b;

		if (i > 0)
			assert_true(
			    sfs_le32(ix->ei_block) >
			    sfs_le32(
				((const struct sfs_dextent_idx *)(ent +
								  12 * (i - 1)))
				    ->ei_block));
		assert_int_equal(
		    sfs_cache_get(t->fs->cache, child, SFS_IO_INDIRECT, &b), 0);
		const struct sfs_dextent_header *ch = (const void *)b->data;
		assert_true(sfs_le16(ch->eh_entries) > 0);
		/* ext4_ext_correct_indexes: the key is the child's first */
		assert_int_equal(
		    sfs_le32(ix->ei_block),
		    sfs_le32(((const struct sfs_dextent *)(ch + 1))->ee_block));
		check_node(t, ch, depth - 1, false);
		sfs_cache_put(t->fs->cache, b);
	}
}

struct walkmap {
	struct model *m;
	uint32_t seen;
};

static int map_cb(void *ctx, uint32_t lblk, sfs_blk_t pblk, uint32_t len,
		  bool meta)
{
	struct walkmap *w = ctx;

	if (meta)
		return 0;
	for (uint32_t i = 0; i < len; i++) {
		uint32_t l = lblk + i;

		assert_true(l < SPAN);
		assert_int_not_equal(w->m->st[l], ST_HOLE);
		if (w->m->pblk[l])
			assert_int_equal(w->m->pblk[l], pblk + i);
		w->m->pblk[l] = pblk + i;
		w->seen++;
	}
	return 0;
}

/* The tree of ino against the model; returns its depth. */
static int check_tree(struct sfs_fs *fs, sfs_ino_t ino, struct model *m,
		      uint32_t *extents_out)
{
	struct tree t = {.fs = fs, .cap = (BS - 12) / 12, .last_end = -1};
	struct walkmap w = {.m = m};
	struct sfs_inode *ip;
	const struct sfs_dextent_header *root;
	uint32_t mapped = 0, unwritten = 0;

	sfs_lock(fs);
	assert_int_equal(sfs_iget(fs, ino, &ip), 0);
	root = (const void *)ip->d.i_block;
	t.depth = sfs_le16(root->eh_depth);
	check_node(&t, root, t.depth, true);
	assert_int_equal(sfs_imap(fs, ip)->walk(fs, ip, map_cb, &w), 0);
	/* unwritten flags: count the blocks the model calls unwritten that
	 * the map reads as holes (create=false gives new_out for them) */
	for (uint32_t l = 0; l < SPAN; l++) {
		sfs_blk_t pb;
		bool isnew;

		if (m->st[l] == ST_HOLE)
			continue;
		mapped++;
		assert_int_equal(
		    sfs_imap(fs, ip)->map(fs, ip, l, false, &pb, &isnew), 0);
		if (m->st[l] == ST_UNWRITTEN) {
			unwritten++;
			assert_true(isnew);
			assert_int_equal(pb, 0);
		} else {
			assert_false(isnew);
			assert_int_equal(pb, m->pblk[l]);
		}
	}
	assert_int_equal(w.seen, mapped);
	(void)unwritten;
	sfs_iput(fs, ip);
	sfs_unlock(fs);
	if (extents_out)
		*extents_out = t.extents;
	return t.depth;
}

static void check_data(struct sfs_fs *fs, sfs_ino_t ino, struct model *m)
{
	uint8_t *buf = g_malloc((size_t)SPAN * BS);
	size_t n;

	assert_int_equal(sfs_read(fs, ino, 0, (size_t)SPAN * BS, buf, &n), 0);
	assert_int_equal(n, (size_t)m->size_blk * BS);
	for (uint32_t l = 0; l < m->size_blk; l++) {
		uint8_t want = m->st[l] == ST_WRITTEN ? m->stamp[l] : 0;

		assert_int_equal(buf[(size_t)l * BS], want);
		assert_int_equal(buf[(size_t)l * BS + BS - 1], want);
	}
	g_free(buf);
}

static void write_block(struct sfs_fs *fs, sfs_ino_t ino, struct model *m,
			uint32_t l, uint8_t stamp)
{
	uint8_t blk[BS];
	size_t n;

	memset(blk, stamp, sizeof(blk));
	assert_int_equal(sfs_write(fs, ino, (uint64_t)l * BS, blk, BS, &n), 0);
	assert_int_equal(n, BS);
	m->st[l] = ST_WRITTEN;
	m->stamp[l] = stamp;
	m->size_blk = MAX(m->size_blk, l + 1);
}

static void truncate_to(struct sfs_fs *fs, sfs_ino_t ino, struct model *m,
			uint32_t blocks)
{
	struct sfs_attr in = {.size = (uint64_t)blocks * BS}, a;

	assert_int_equal(sfs_setattr(fs, ino, &in, SFS_SET_SIZE, &a), 0);
	for (uint32_t l = blocks; l < SPAN; l++) {
		m->st[l] = ST_HOLE;
		m->pblk[l] = 0;
	}
	m->size_blk = blocks;
}

/* e2fsck -fn: clean, or (strict false) complaining only that a tree could
 * be narrower or shorter, as it does of the kernel's trees. */
static void assert_fsck(const char *img, bool strict)
{
	char *out = NULL;

	if (!sfs_test_fsck_clean(img, &out)) {
		char **lines = g_strsplit(out ? out : "", "\n", -1);
		bool ok = !strict;

		for (char **l = lines; ok && *l; l++) {
			if (!strstr(*l, "extent tree"))
				continue;
			if (!strstr(*l, "could be narrower") &&
			    !strstr(*l, "could be shorter"))
				ok = false;
		}
		if (!ok || strstr(out, "Fix? no") || strstr(out, "Clear? no"))
			fail_msg("e2fsck:\n%s", out ? out : "");
		g_strfreev(lines);
	}
	g_free(out);
}

static void test_extent_tree_random(void **state)
{
	struct sfs_tfs *t = sfs_tfs_new(BS, 96u << 20, "alloc=extent");
	struct model *m = g_new0(struct model, 2);
	GRand *r = g_rand_new_with_seed(0xE47);
	sfs_ino_t ino[2];
	uint32_t extents;
	int depth;

	(void)state;
	ino[0] = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "holes");
	ino[1] = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "prealloc");

	/* 1. random inserts of single blocks */
	for (int op = 0; op < 4000; op++) {
		uint32_t l = (uint32_t)g_rand_int_range(r, 0, SPAN);
		write_block(t->fs, ino[0], &m[0], l, (uint8_t)(op | 1));
		if (op % 1000 == 999)
			check_tree(t->fs, ino[0], &m[0], NULL);
	}
	depth = check_tree(t->fs, ino[0], &m[0], &extents);
	assert_true(depth >= 2);
	assert_true(extents >= 2000);
	check_data(t->fs, ino[0], &m[0]);

	/* 2. unwritten -> written conversions */
	assert_int_equal(
	    sfs_fallocate(t->fs, ino[1], 0, 0, (uint64_t)SPAN * BS), 0);
	for (uint32_t l = 0; l < SPAN; l++)
		m[1].st[l] = ST_UNWRITTEN;
	m[1].size_blk = SPAN;
	check_tree(t->fs, ino[1], &m[1], NULL);
	for (int op = 0; op < 4000; op++) {
		uint32_t l = (uint32_t)g_rand_int_range(r, 0, SPAN);
		write_block(t->fs, ino[1], &m[1], l, (uint8_t)(op | 1));
		if (op % 1000 == 999)
			check_tree(t->fs, ino[1], &m[1], NULL);
	}
	depth = check_tree(t->fs, ino[1], &m[1], &extents);
	assert_true(depth >= 2);
	assert_true(extents >= 2000);
	check_data(t->fs, ino[1], &m[1]);

	/* the image as the random phases left it */
	sfs_tfs_close(t);
	assert_fsck(t->img, false);
	t->fs = sfs_test_open(t->img, "alloc=extent");
	for (int f = 0; f < 2; f++) {
		check_tree(t->fs, ino[f], &m[f], NULL);
		check_data(t->fs, ino[f], &m[f]);
	}

	/* 3. truncates, more writes past the new ends, truncates again */
	for (int f = 0; f < 2; f++) {
		truncate_to(t->fs, ino[f], &m[f], SPAN * 3 / 4);
		check_tree(t->fs, ino[f], &m[f], NULL);
		for (int op = 0; op < 500; op++) {
			uint32_t l = (uint32_t)g_rand_int_range(r, 0, SPAN);
			write_block(t->fs, ino[f], &m[f], l, (uint8_t)(op | 1));
		}
		check_tree(t->fs, ino[f], &m[f], NULL);
		truncate_to(t->fs, ino[f], &m[f],
			    (uint32_t)g_rand_int_range(r, SPAN / 4, SPAN / 2));
		check_tree(t->fs, ino[f], &m[f], NULL);
		check_data(t->fs, ino[f], &m[f]);
	}
	sfs_tfs_close(t);
	assert_fsck(t->img, true);
	g_rand_free(r);
	g_free(m);
	sfs_tfs_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_extent_tree_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
