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
 * then only say it "could be narrower" (the truncates too, which cut from
 * the right and leave the leaves to the left as they were).
 *
 * test_extent_tree_ops: 4500 extents (depth 2), then 3 rounds of 600
 * seeded random steps (the file refilled between rounds) mixing writes,
 * preallocation, punch, zero range, collapse, insert range and truncates;
 * after each, besides the above, the tree is no deeper than it needs to
 * be (a root over one child only if the child would not fit in the root;
 * at depth <= 1 e2fsck's per-level rules), and the free-block count and
 * i_blocks equal the model's blocks plus the tree blocks.  The engine's
 * counters of tree blocks read and dirtied bound the cost of cutting the
 * last extent and of zeroing a block inside a leaf by the depth.  Cut to
 * three extents the tree is back in the inode and the image e2fsck -fn
 * clean; cut to nothing every block is free.
 */
#include <errno.h>
#include <inttypes.h>
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
	uint32_t lvl_num[8]; /* entries per level (0: the root) */
	uint32_t lvl_max[8]; /* capacity per level */
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
	t->lvl_num[t->depth - depth] += n;
	t->lvl_max[t->depth - depth] += sfs_le16(h->eh_max);
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

/*
 * No deeper than it needs to be: a root over a single child holds it only
 * if the child would not fit in the root, and a tree of depth <= 1 is one
 * e2fsck would not call narrower or shorter (its per-level sums).
 */
static void check_shape(struct tree *t, const struct sfs_dextent_header *root)
{
	if (t->depth > 0 && sfs_le16(root->eh_entries) == 1)
		assert_true(t->lvl_num[1] > 4);
	if (t->depth > 1)
		return;
	for (int i = 0; i <= t->depth; i++) {
		assert_true(t->lvl_max[i] - t->lvl_num[i] <= t->cap);
		for (int j = 0; j < i; j++)
			assert_true(t->lvl_num[i] >= t->lvl_max[j]);
	}
}

/* The tree of ino against the model; returns its depth, the number of
 * extents and of nodes (the root included). */
static int check_tree_nodes(struct sfs_fs *fs, sfs_ino_t ino, struct model *m,
			    uint32_t *extents_out, uint32_t *nodes_out)
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
	check_shape(&t, root);
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
	if (nodes_out)
		*nodes_out = t.nodes;
	return t.depth;
}

static int check_tree(struct sfs_fs *fs, sfs_ino_t ino, struct model *m,
		      uint32_t *extents_out)
{
	return check_tree_nodes(fs, ino, m, extents_out, NULL);
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
	bool ok = strict ? sfs_test_fsck_clean(img, &out)
			 : sfs_test_fsck_clean_shape(img, &out);

	if (!ok)
		fail_msg("e2fsck:\n%s", out ? out : "");
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
	/* the cuts leave the part-full leaves to their left as they were */
	sfs_tfs_close(t);
	assert_fsck(t->img, false);
	g_rand_free(r);
	g_free(m);
	sfs_tfs_free(t);
}

/* ---- random range edits on a deep tree, against the model ---- */

/* Shift the model's blocks at or past `from` by delta (collapse: < 0, the
 * blocks in [from + delta, from) are gone; insert: > 0, holes appear). */
static void model_shift(struct model *m, uint32_t from, int64_t delta)
{
	if (delta < 0) {
		uint32_t d = (uint32_t)-delta;
		memmove(&m->st[from - d], &m->st[from], SPAN - from);
		memmove(&m->pblk[from - d], &m->pblk[from],
			sizeof(m->pblk[0]) * (SPAN - from));
		memmove(&m->stamp[from - d], &m->stamp[from], SPAN - from);
		for (uint32_t l = SPAN - d; l < SPAN; l++) {
			m->st[l] = ST_HOLE;
			m->pblk[l] = 0;
		}
		m->size_blk -= d;
		return;
	}
	uint32_t d = (uint32_t)delta;
	memmove(&m->st[from + d], &m->st[from], SPAN - from - d);
	memmove(&m->pblk[from + d], &m->pblk[from],
		sizeof(m->pblk[0]) * (SPAN - from - d));
	memmove(&m->stamp[from + d], &m->stamp[from], SPAN - from - d);
	for (uint32_t l = from; l < from + d; l++) {
		m->st[l] = ST_HOLE;
		m->pblk[l] = 0;
	}
	m->size_blk += d;
}

/* Last mapped block of the model + 1. */
static uint32_t model_end(const struct model *m)
{
	uint32_t e = SPAN;

	while (e > 0 && m->st[e - 1] == ST_HOLE)
		e--;
	return e;
}

static uint32_t model_mapped(const struct model *m)
{
	uint32_t n = 0;

	for (uint32_t l = 0; l < SPAN; l++)
		n += m->st[l] != ST_HOLE;
	return n;
}

/*
 * Block accounting: the filesystem's free count and the inode's i_blocks
 * both move by exactly the data blocks the model maps plus the tree's
 * blocks (every node but the root).
 */
static void check_accounting(struct sfs_fs *fs, sfs_ino_t ino,
			     const struct model *m, uint64_t free0,
			     uint32_t nodes)
{
	uint64_t used = (uint64_t)model_mapped(m) + nodes - 1;
	struct sfs_attr a;

	assert_int_equal(sfs_getattr(fs, ino, &a), 0);
	assert_int_equal(a.blocks * 512 / BS, used);
	assert_int_equal(sfs_test_free_blocks(fs), free0 - used);
}

static int falloc(struct sfs_fs *fs, sfs_ino_t ino, int mode, uint32_t l,
		  uint32_t n)
{
	return sfs_fallocate(fs, ino, mode, (uint64_t)l * BS, (uint64_t)n * BS);
}

/* The end of the third extent. */
struct first3 {
	uint32_t n, end;
};

static int first3_cb(void *ctx, uint32_t lblk, sfs_blk_t pblk, uint32_t len,
		     bool meta)
{
	struct first3 *f = ctx;

	(void)pblk;
	if (!meta && f->n < 3) {
		f->n++;
		f->end = lblk + len;
	}
	return 0;
}

/* Tree blocks read and dirtied by the extent code so far. */
static void tree_cost(struct sfs_fs *fs, uint64_t *reads, uint64_t *dirtied)
{
	sfs_lock(fs);
	*reads = fs->cpu_ctr.extent_reads;
	*dirtied = fs->cpu_ctr.extent_dirty;
	sfs_unlock(fs);
}

/*
 * Thousands of extents on 1 KiB blocks (depth 2), then a seeded random mix
 * of one-block writes (inserts, unwritten -> written conversions),
 * preallocation, punches, zero ranges, collapses, inserted ranges and
 * truncates, in rounds with random refills between.  After every step:
 * the mapping equals the model, the tree is well formed and no deeper
 * than it needs to be, and the free-block count and i_blocks are exact.
 * Truncating the last extent, and zeroing a block inside one leaf, read
 * and dirty O(depth) tree blocks.  At the end the file is cut to a few
 * extents (the tree back in the inode, e2fsck -fn clean) and to nothing
 * (every block back).
 */
static void test_extent_tree_ops(void **state)
{
	struct sfs_tfs *t = sfs_tfs_new(BS, 96u << 20, "alloc=extent");
	struct model *m = g_new0(struct model, 1);
	GRand *r = g_rand_new_with_seed(0x5EED);
	uint64_t free0, r0, d0, r1, d1;
	uint32_t nodes, counts[8] = {0};
	sfs_ino_t ino;
	int depth;

	(void)state;
	ino = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "ops");
	free0 = sfs_test_free_blocks(t->fs);
	/* 4500 one-block extents: every other block */
	for (uint32_t l = 0; l < 9000; l += 2)
		write_block(t->fs, ino, m, l, (uint8_t)(l / 2 | 1));
	depth = check_tree_nodes(t->fs, ino, m, NULL, &nodes);
	assert_int_equal(depth, 2);
	check_accounting(t->fs, ino, m, free0, nodes);

	/* the cost of cutting the last extent: one path */
	tree_cost(t->fs, &r0, &d0);
	truncate_to(t->fs, ino, m, 8998);
	tree_cost(t->fs, &r1, &d1);
	print_message("# truncate of the last extent: %" PRIu64
		      " tree blocks read, %" PRIu64 " dirtied (%u nodes)\n",
		      r1 - r0, d1 - d0, nodes);
	assert_true(r1 - r0 <= 2 * (uint64_t)depth + 1);
	assert_true(d1 - d0 <= (uint64_t)depth);
	/* zeroing one block inside an extent of a middle leaf: O(depth) */
	write_block(t->fs, ino, m, 4001, 0x11);
	write_block(t->fs, ino, m, 4003, 0x13);
	tree_cost(t->fs, &r0, &d0);
	assert_int_equal(falloc(t->fs, ino,
				SFS_FALLOC_ZERO_RANGE | SFS_FALLOC_KEEP_SIZE,
				4002, 1),
			 0);
	tree_cost(t->fs, &r1, &d1);
	m->st[4002] = ST_UNWRITTEN;
	print_message("# zero range of one block: %" PRIu64
		      " tree blocks read, %" PRIu64 " dirtied\n",
		      r1 - r0, d1 - d0);
	assert_true(r1 - r0 <= 8 * ((uint64_t)depth + 1));
	assert_true(d1 - d0 <= 3 * ((uint64_t)depth + 1));
	assert_true(8 * ((uint64_t)depth + 1) < nodes);
	check_tree_nodes(t->fs, ino, m, NULL, &nodes);
	check_accounting(t->fs, ino, m, free0, nodes);

	for (int step = 0; step < 1800; step++) {
		uint32_t size = m->size_blk, end = model_end(m);
		uint32_t n = (uint32_t)g_rand_int_range(r, 1, 40);
		uint32_t o =
		    size > n
			? (uint32_t)g_rand_int_range(r, 0, (int32_t)(size - n))
			: 0;
		int op = g_rand_int_range(r, 0, 100);

		if (op < 35) { /* a write: insert, merge or conversion */
			uint32_t l = (uint32_t)g_rand_int_range(
			    r, 0, (int32_t)MIN(SPAN - 64, size + 32));
			write_block(t->fs, ino, m, l, (uint8_t)(step | 1));
			counts[0]++;
		} else if (op < 45) { /* preallocate, past EOF too */
			o = (uint32_t)g_rand_int_range(
			    r, 0, (int32_t)MIN(SPAN - 64, size + 32));
			assert_int_equal(
			    falloc(t->fs, ino, SFS_FALLOC_KEEP_SIZE, o, n), 0);
			for (uint32_t l = o; l < o + n; l++)
				if (m->st[l] == ST_HOLE)
					m->st[l] = ST_UNWRITTEN;
			counts[1]++;
		} else if (op < 58 && size > n) { /* punch inside EOF */
			assert_int_equal(
			    falloc(t->fs, ino,
				   SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE,
				   o, n),
			    0);
			for (uint32_t l = o; l < o + n; l++) {
				m->st[l] = ST_HOLE;
				m->pblk[l] = 0;
			}
			counts[2]++;
		} else if (op < 72 && size > n) { /* zero range */
			assert_int_equal(
			    falloc(t->fs, ino,
				   SFS_FALLOC_ZERO_RANGE | SFS_FALLOC_KEEP_SIZE,
				   o, n),
			    0);
			for (uint32_t l = o; l < o + n; l++)
				m->st[l] = ST_UNWRITTEN;
			counts[3]++;
		} else if (op < 84 && size > n + 1) { /* collapse */
			assert_int_equal(
			    falloc(t->fs, ino, SFS_FALLOC_COLLAPSE_RANGE, o, n),
			    0);
			model_shift(m, o + n, -(int64_t)n);
			counts[4]++;
		} else if (op < 96 && size > n && end + n < SPAN - 64) {
			assert_int_equal(
			    falloc(t->fs, ino, SFS_FALLOC_INSERT_RANGE, o, n),
			    0);
			model_shift(m, o, n);
			counts[5]++;
		} else if (size > 8) { /* truncate to a random smaller size */
			truncate_to(t->fs, ino, m,
				    size - (uint32_t)g_rand_int_range(
					       r, 1, (int32_t)size / 8 + 2));
			counts[6]++;
		}
		check_tree_nodes(t->fs, ino, m, NULL, &nodes);
		check_accounting(t->fs, ino, m, free0, nodes);
		if (step % 200 == 199)
			check_data(t->fs, ino, m);
		if (step % 600 == 599) {
			/* the edits thin the file out: refill it with random
			 * writes, deep again, for the next round */
			for (int w = 0; w < 3000; w++)
				write_block(
				    t->fs, ino, m,
				    (uint32_t)g_rand_int_range(r, 0, 9000),
				    (uint8_t)(w | 1));
			assert_int_equal(
			    check_tree_nodes(t->fs, ino, m, NULL, &nodes), 2);
			check_accounting(t->fs, ino, m, free0, nodes);
		}
	}
	print_message("# %u writes, %u preallocations, %u punches, %u zero "
		      "ranges, %u collapses, %u inserts, %u truncates; "
		      "%u nodes\n",
		      counts[0], counts[1], counts[2], counts[3], counts[4],
		      counts[5], counts[6], nodes);
	for (int k = 0; k < 7; k++)
		assert_true(counts[k] > 10);
	assert_true(check_tree_nodes(t->fs, ino, m, NULL, &nodes) >= 2);
	check_data(t->fs, ino, m);
	/* as the kernel leaves a deep tree: only "could be narrower" */
	sfs_tfs_close(t);
	assert_fsck(t->img, false);
	t->fs = sfs_test_open(t->img, "alloc=extent");
	check_tree_nodes(t->fs, ino, m, NULL, &nodes);

	/* cut to its first few extents: the tree is back in the inode */
	{
		struct first3 f = {0};
		struct sfs_inode *ip;

		sfs_lock(t->fs);
		assert_int_equal(sfs_iget(t->fs, ino, &ip), 0);
		assert_int_equal(
		    sfs_imap(t->fs, ip)->walk(t->fs, ip, first3_cb, &f), 0);
		sfs_iput(t->fs, ip);
		sfs_unlock(t->fs);
		assert_true(f.n == 3 && f.end < m->size_blk);
		truncate_to(t->fs, ino, m, f.end);
	}
	assert_int_equal(check_tree_nodes(t->fs, ino, m, NULL, &nodes), 0);
	assert_int_equal(nodes, 1);
	check_accounting(t->fs, ino, m, free0, nodes);
	check_data(t->fs, ino, m);
	sfs_tfs_close(t);
	assert_fsck(t->img, true);
	t->fs = sfs_test_open(t->img, "alloc=extent");
	truncate_to(t->fs, ino, m, 0);
	assert_int_equal(check_tree_nodes(t->fs, ino, m, NULL, &nodes), 0);
	check_accounting(t->fs, ino, m, free0, nodes);
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
	    cmocka_unit_test(test_extent_tree_ops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
