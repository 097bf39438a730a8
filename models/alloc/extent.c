/*
 * extent.c - ext4's file mapping: an extent tree rooted in i_block.
 *
 *   i_block (60 bytes)  header + 4 entries          (eh_max 4)
 *   tree block          header + (bs - 12) / 12     (84 / 169 / 340)
 *   depth 0 node        extents  {ee_block, ee_len, ee_start}
 *   depth > 0 node      indexes  {ei_block = first key of the child, ei_leaf}
 *
 * Invariants (checked by the kernel and e2fsck, doc/internals.md):
 *   1. keys strictly increase within a node; extents never overlap;
 *   2. an index's ei_block equals its child's first key (ex_fix_keys);
 *   3. a node at level l of a depth-d tree has eh_depth d - l;
 *   4. no node but the root is empty; a tree emptied is a depth-0 root;
 *   5. a tree is no deeper than it needs to be: a root over one child
 *      that would fit in the root takes its entries (ex_shrink), and a
 *      tree of depth <= 1 is never shorter or narrower than e2fsck would
 *      like: after a split or a removal its shape is checked
 *      (ex_shape_ok) and repacked if needed (ex_tidy, at most five
 *      nodes); deeper trees keep ext4's part-full leaves.
 *
 * Every change is path-local: ex_find keeps the root-to-leaf path, and a
 * change reads and dirties only that path, the new sibling of each node
 * that splits and, when the tree grows, the block the root moves into:
 *   - insertion, merge, conversion (ex_map, ex_convert): O(depth);
 *   - punch (ex_punch) and zero range (ex_unwrite): one path per extent
 *     in the range, entries trimmed, split (ex_split3), flagged or
 *     removed, emptied nodes freed (ex_node_remove);
 *   - preallocation (sfs_extent_prealloc): one path per hole or extent
 *     in the range, each new run inserted or lengthening its left
 *     neighbour;
 *   - truncation (ex_truncate, ext4_ext_remove_space): from the last
 *     leaf back, one path per leaf emptied; cutting the last extent is
 *     O(depth);
 *   - collapse and insert range (ex_shift, ext4_ext_shift_extents): keys
 *     moved in place leaf by leaf, one path per leaf right of the point,
 *     nothing allocated.
 * Only ex_tidy's repack of a depth <= 1 tree rebuilds (ex_collect +
 * ex_build), and that is five blocks at most.
 *
 * Growth is ext4_ext_insert_extent's: a new block merges into the extent on
 * its left or right when logically and physically contiguous (up to 32768
 * initialised blocks); otherwise a new extent is inserted, splitting full
 * nodes on the way up (entries after the insertion point move to the new
 * node) and, when the root is full too, growing the tree in depth (the root
 * moves into a new block and becomes one index).  The goal is
 * ext4_ext_find_goal's, falling back to ext4_inode_to_goal_block's group:
 * on flex_bg with at least 4 groups per flex group, the first group of the
 * inode's flex group is kept for directories and special files and a
 * regular file starts in the next one (so its data does not begin in the
 * group that holds the flex group's bitmaps and inode tables).
 * Unwritten extents (ee_len > 32768) read as holes; writing into one
 * converts that block (ex_convert, ext4_ext_convert_to_initialized): a
 * flag flip, a merge into a neighbour, or a split into two or three pieces
 * inserted path by path.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "csum.h"
#include "model.h"

#define EX_MAGIC 0xF30A
#define EX_ROOT_MAX 4
#define EX_INIT_MAX 32768u   /* longest initialised extent */
#define EX_UNINIT_MAX 32767u /* longest unwritten extent */
#define EX_MAX_DEPTH 5

/* One node on a lookup path. */
struct ex_node {
	struct sfs_dextent_header *h; /* in i_block (root) or in buf */
	struct sfs_buf *buf;	      /* NULL for the root */
	sfs_blk_t blk;		      /* 0 for the root */
	int idx;		      /* entry followed or found; -1: none */
};

struct ex_path {
	int depth;
	struct ex_node n[EX_MAX_DEPTH + 2];
};

/* Tree blocks allocated before an insertion changes anything. */
struct ex_pool {
	sfs_blk_t b[EX_MAX_DEPTH + 2];
	int n;
	int used;
};

static uint32_t ex_cap(const struct sfs_fs *fs)
{
	return (sfs_geom(fs)->bs - sizeof(struct sfs_dextent_header)) /
	       sizeof(struct sfs_dextent);
}

static struct sfs_dextent_header *ex_root(struct sfs_inode *ip)
{
	return (struct sfs_dextent_header *)ip->d.i_block;
}

static struct sfs_dextent *ex_ext(struct sfs_dextent_header *h, uint32_t i)
{
	return (struct sfs_dextent *)(h + 1) + i;
}

static struct sfs_dextent_idx *ex_idx(struct sfs_dextent_header *h, uint32_t i)
{
	return (struct sfs_dextent_idx *)(h + 1) + i;
}

static uint16_t ex_entries(const struct sfs_dextent_header *h)
{
	return sfs_le16(h->eh_entries);
}

/* First logical block of entry i (extent or index: same offset). */
static uint32_t ex_key(struct sfs_dextent_header *h, uint32_t i)
{
	return sfs_le32(ex_ext(h, i)->ee_block);
}

static uint32_t ex_len(const struct sfs_dextent *e)
{
	uint32_t l = sfs_le16(e->ee_len);

	return l > EX_INIT_MAX ? l - EX_INIT_MAX : l;
}

static bool ex_unwritten(const struct sfs_dextent *e)
{
	return sfs_le16(e->ee_len) > EX_INIT_MAX;
}

static sfs_blk_t ex_pblk(const struct sfs_dextent *e)
{
	return sfs_le32(e->ee_start_lo);
}

static void ex_set(struct sfs_dextent *e, uint32_t lblk, uint32_t len,
		   sfs_blk_t pblk, bool unwritten)
{
	e->ee_block = sfs_cpu_to_le32(lblk);
	e->ee_len =
	    sfs_cpu_to_le16((uint16_t)(unwritten ? len + EX_INIT_MAX : len));
	e->ee_start_hi = 0;
	e->ee_start_lo = sfs_cpu_to_le32(pblk);
}

static void ex_hdr_init(struct sfs_dextent_header *h, uint16_t max,
			uint16_t depth)
{
	h->eh_magic = sfs_cpu_to_le16(EX_MAGIC);
	h->eh_entries = 0;
	h->eh_max = sfs_cpu_to_le16(max);
	h->eh_depth = sfs_cpu_to_le16(depth);
	h->eh_generation = 0;
}

static int ex_corrupt(struct sfs_fs *fs, struct sfs_inode *ip, sfs_blk_t blk,
		      const char *what)
{
	sfs_fs_error(fs, -EIO, "inode %u: extent tree node %u: %s", ip->ino,
		     blk, what);
	return -EIO;
}

/* Check a node header: magic, depth, counts (kernel __ext4_ext_check). */
static int ex_check(struct sfs_fs *fs, struct sfs_inode *ip, sfs_blk_t blk,
		    const struct sfs_dextent_header *h, int depth, uint32_t cap)
{
	uint16_t max = sfs_le16(h->eh_max);

	if (sfs_le16(h->eh_magic) != EX_MAGIC)
		return ex_corrupt(fs, ip, blk, "bad magic");
	if (depth >= 0 && sfs_le16(h->eh_depth) != depth)
		return ex_corrupt(fs, ip, blk, "unexpected depth");
	if (sfs_le16(h->eh_depth) > EX_MAX_DEPTH)
		return ex_corrupt(fs, ip, blk, "tree too deep");
	if (max == 0 || max > cap || ex_entries(h) > max)
		return ex_corrupt(fs, ip, blk, "bad entry counts");
	return 0;
}

static bool ex_valid_blk(const struct sfs_fs *fs, sfs_blk_t b)
{
	return b >= sfs_geom(fs)->first_data_block &&
	       b < sfs_geom(fs)->blocks_count;
}

/* metadata_csum: the seed of ip's tree blocks (its number, generation). */
static uint32_t ex_seed(const struct sfs_fs *fs, const struct sfs_inode *ip)
{
	return sfs_csum_on(fs)
		   ? sfs_csum_owner_seed(fs, ip->ino, ip->d.i_generation)
		   : 0;
}

/* Every changed tree block leaves through here: its tail sum, dirty. */
static void ex_blk_dirty(struct sfs_fs *fs, struct sfs_inode *ip,
			 struct sfs_buf *b, sfs_blk_t blk)
{
	sfs_csum_extent_set(fs, ex_seed(fs, ip), b->data);
	sfs_meta_dirty(fs, b);
	sfs_cpu_ctr(fs)->extent_dirty++;
	sfs_inode_note_dirty(ip, blk, 1);
}

/* Read tree block blk, expected at the given depth. */
static int ex_read_node(struct sfs_fs *fs, struct sfs_inode *ip, sfs_blk_t blk,
			int depth, struct sfs_buf **out)
{
	int rc;

	if (!ex_valid_blk(fs, blk))
		return ex_corrupt(fs, ip, blk, "outside the filesystem");
	sfs_cpu_ctr(fs)->extent_reads++;
	rc = sfs_cache_get(sfs_fs_cache(fs), blk, SFS_IO_INDIRECT, out);
	if (rc)
		return rc;
	rc = ex_check(fs, ip, blk, (void *)(*out)->data, depth, ex_cap(fs));
	if (!rc && !sfs_csum_extent_ok(fs, ex_seed(fs, ip), (*out)->data))
		rc = ex_corrupt(fs, ip, blk, "checksum mismatch");
	if (rc) {
		sfs_cache_put(sfs_fs_cache(fs), *out);
		*out = NULL;
	}
	return rc;
}

static void ex_path_put(struct sfs_fs *fs, struct ex_path *p)
{
	for (int l = 1; l <= p->depth; l++)
		if (p->n[l].buf)
			sfs_cache_put(sfs_fs_cache(fs), p->n[l].buf);
	p->depth = 0;
}

/* Last entry of h with key <= lblk, or -1. */
static int ex_search(struct sfs_dextent_header *h, uint32_t lblk)
{
	int lo = 0, hi = (int)ex_entries(h) - 1, found = -1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		if (ex_key(h, (uint32_t)mid) <= lblk) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

/* Walk from the root to the leaf that covers lblk (ext4_find_extent). */
static int ex_find(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t lblk,
		   struct ex_path *p)
{
	struct sfs_dextent_header *h = ex_root(ip);
	int rc;

	memset(p, 0, sizeof(*p));
	rc = ex_check(fs, ip, 0, h, -1, EX_ROOT_MAX);
	if (rc)
		return rc;
	p->n[0].h = h;
	for (int l = 0;; l++) {
		int depth = sfs_le16(h->eh_depth);
		int i = ex_search(h, lblk);

		sfs_cpu_ctr(fs)->extent_steps++;

		if (depth == 0) {
			p->n[l].idx = i;
			p->depth = l;
			return 0;
		}
		if (ex_entries(h) == 0) {
			p->depth = l;
			ex_path_put(fs, p);
			return ex_corrupt(fs, ip, p->n[l].blk, "empty index");
		}
		if (i < 0)
			i = 0;
		p->n[l].idx = i;
		struct sfs_buf *b;
		sfs_blk_t child = sfs_le32(ex_idx(h, (uint32_t)i)->ei_leaf_lo);
		p->depth = l;
		rc = ex_read_node(fs, ip, child, depth - 1, &b);
		if (rc) {
			ex_path_put(fs, p);
			return rc;
		}
		h = (struct sfs_dextent_header *)b->data;
		p->n[l + 1] = (struct ex_node){.h = h, .buf = b, .blk = child};
		p->depth = l + 1;
	}
}

static void ex_dirty(struct sfs_fs *fs, struct sfs_inode *ip, struct ex_node *n)
{
	if (n->buf)
		ex_blk_dirty(fs, ip, n->buf, n->blk);
	/* the root is written with the inode (sfs_inode_dirty) */
}

/* Node l's first key changed: update the index keys above it. */
static void ex_fix_keys(struct sfs_fs *fs, struct sfs_inode *ip,
			struct ex_path *p, int l)
{
	for (; l > 0; l--) {
		struct ex_node *c = &p->n[l], *par = &p->n[l - 1];
		struct sfs_dextent_idx *ix;
		uint32_t key;

		if (ex_entries(c->h) == 0)
			return;
		key = ex_key(c->h, 0);
		ix = ex_idx(par->h, (uint32_t)par->idx);
		if (sfs_le32(ix->ei_block) == key)
			return;
		ix->ei_block = sfs_cpu_to_le32(key);
		ex_dirty(fs, ip, par);
		if (par->idx != 0)
			return;
	}
}

static void ex_pool_release(struct sfs_fs *fs, struct ex_pool *pool)
{
	for (int i = pool->used; i < pool->n; i++)
		sfs_blocks_free(fs, pool->b[i], 1);
	pool->n = pool->used = 0;
}

/* Allocate n tree blocks near goal; all or nothing.  -ENOSPC, -EIO. */
static int ex_pool_fill(struct sfs_fs *fs, struct sfs_inode *ip,
			struct ex_pool *pool, int n, sfs_blk_t goal)
{
	while (pool->n < n) {
		sfs_blk_t start;
		uint32_t got;
		int rc = sfs_alloc_blocks(fs, ip, goal, (uint32_t)(n - pool->n),
					  &start, &got);
		if (rc) {
			ex_pool_release(fs, pool);
			return rc;
		}
		for (uint32_t i = 0; i < got; i++)
			pool->b[pool->n++] = start + i;
		goal = start + got;
	}
	return 0;
}

/* A zeroed, headed tree block from the pool (counted in i_blocks). */
static int ex_pool_take(struct sfs_fs *fs, struct sfs_inode *ip,
			struct ex_pool *pool, uint16_t depth,
			struct sfs_buf **out, sfs_blk_t *blk_out)
{
	int rc;

	assert(pool->used < pool->n);
	*blk_out = pool->b[pool->used++];
	rc =
	    sfs_cache_get_new(sfs_fs_cache(fs), *blk_out, SFS_IO_INDIRECT, out);
	if (rc) {
		sfs_blocks_free(fs, *blk_out, 1);
		return rc;
	}
	memset((*out)->data, 0, sfs_geom(fs)->bs);
	ex_hdr_init((void *)(*out)->data, (uint16_t)ex_cap(fs), depth);
	sfs_i_add_blocks(fs, ip, 1);
	return 0;
}

/*
 * Insert the 12-byte entry ent at position pos of node l, splitting full
 * nodes upwards and growing the root (ext4_ext_split, _grow_indepth).  The
 * pool holds one block per full node on the path.  The path stays usable
 * only for ex_path_put afterwards.
 */
static int ex_insert(struct sfs_fs *fs, struct sfs_inode *ip, struct ex_path *p,
		     int l, uint32_t pos, const void *ent, struct ex_pool *pool,
		     bool *reshaped)
{
	struct ex_node *n = &p->n[l];
	uint32_t cnt = ex_entries(n->h), max = sfs_le16(n->h->eh_max);
	uint8_t *base = (uint8_t *)(n->h + 1);
	struct sfs_buf *nb;
	sfs_blk_t nblk;
	int rc;

	if (cnt < max) {
		memmove(base + 12 * (pos + 1), base + 12 * pos,
			12 * (cnt - pos));
		memcpy(base + 12 * pos, ent, 12);
		n->h->eh_entries = sfs_cpu_to_le16((uint16_t)(cnt + 1));
		ex_dirty(fs, ip, n);
		if (pos == 0)
			ex_fix_keys(fs, ip, p, l);
		return 0;
	}
	*reshaped = true;
	if (l == 0) {
		/* Grow in depth: the root's entries move to a new block. */
		uint16_t depth = sfs_le16(n->h->eh_depth);
		struct sfs_dextent_header *bh;

		rc = ex_pool_take(fs, ip, pool, depth, &nb, &nblk);
		if (rc)
			return rc;
		bh = (struct sfs_dextent_header *)nb->data;
		memcpy(bh + 1, n->h + 1, 12 * cnt);
		bh->eh_entries = sfs_cpu_to_le16((uint16_t)cnt);
		memset(n->h + 1, 0, 12 * EX_ROOT_MAX);
		n->h->eh_depth = sfs_cpu_to_le16((uint16_t)(depth + 1));
		n->h->eh_entries = sfs_cpu_to_le16(1);
		ex_idx(n->h, 0)->ei_block = sfs_cpu_to_le32(ex_key(bh, 0));
		ex_idx(n->h, 0)->ei_leaf_lo = sfs_cpu_to_le32(nblk);
		memmove(&p->n[1], &p->n[0], sizeof(p->n[0]) * (p->depth + 1));
		p->n[1] = (struct ex_node){
		    .h = bh, .buf = nb, .blk = nblk, .idx = p->n[0].idx};
		p->n[0] = (struct ex_node){.h = n->h, .idx = 0};
		p->depth++;
		ex_dirty(fs, ip, &p->n[1]);
		return ex_insert(fs, ip, p, 1, pos, ent, pool, reshaped);
	}
	/* Split: entries from pos on move to a new node after this one. */
	struct sfs_dextent_header *nh;
	struct sfs_dextent_idx ix = {0};
	uint32_t move = cnt - pos;

	rc = ex_pool_take(fs, ip, pool, sfs_le16(n->h->eh_depth), &nb, &nblk);
	if (rc)
		return rc;
	nh = (struct sfs_dextent_header *)nb->data;
	memcpy(nh + 1, base + 12 * pos, 12 * move);
	memset(base + 12 * pos, 0, 12 * move);
	if (move == 0) {
		memcpy(nh + 1, ent, 12);
		nh->eh_entries = sfs_cpu_to_le16(1);
		n->h->eh_entries = sfs_cpu_to_le16((uint16_t)cnt);
	} else {
		nh->eh_entries = sfs_cpu_to_le16((uint16_t)move);
		memcpy(base + 12 * pos, ent, 12);
		n->h->eh_entries = sfs_cpu_to_le16((uint16_t)(pos + 1));
		if (pos == 0)
			ex_fix_keys(fs, ip, p, l);
	}
	ex_dirty(fs, ip, n);
	ex_blk_dirty(fs, ip, nb, nblk);
	ix.ei_block = sfs_cpu_to_le32(ex_key(nh, 0));
	ix.ei_leaf_lo = sfs_cpu_to_le32(nblk);
	sfs_cache_put(sfs_fs_cache(fs), nb);
	return ex_insert(fs, ip, p, l - 1, (uint32_t)p->n[l - 1].idx + 1, &ix,
			 pool, reshaped);
}

/* ---- whole-tree helpers: collect, shape check, rebuild ---- */

/* Append every extent (on-disk form) to exts and every tree block to
 * blks, in key order. */
static int ex_collect_node(struct sfs_fs *fs, struct sfs_inode *ip,
			   struct sfs_dextent_header *h, GArray *exts,
			   GArray *blks)
{
	uint32_t cnt = ex_entries(h);
	int depth = sfs_le16(h->eh_depth);

	if (depth == 0) {
		g_array_append_vals(exts, ex_ext(h, 0), cnt);
		return 0;
	}
	for (uint32_t i = 0; i < cnt; i++) {
		sfs_blk_t child = sfs_le32(ex_idx(h, i)->ei_leaf_lo);
		struct sfs_buf *b;
		int rc = ex_read_node(fs, ip, child, depth - 1, &b);
		if (rc)
			return rc;
		g_array_append_val(blks, child);
		rc = ex_collect_node(fs, ip, (void *)b->data, exts, blks);
		sfs_cache_put(sfs_fs_cache(fs), b);
		if (rc)
			return rc;
	}
	return 0;
}

static int ex_collect(struct sfs_fs *fs, struct sfs_inode *ip, GArray *exts,
		      GArray *blks)
{
	int rc = ex_check(fs, ip, 0, ex_root(ip), -1, EX_ROOT_MAX);

	return rc ? rc : ex_collect_node(fs, ip, ex_root(ip), exts, blks);
}

/* Per-level sums of entries and capacities (e2fsck's extent_tree_info). */
static int ex_levels(struct sfs_fs *fs, struct sfs_inode *ip,
		     struct sfs_dextent_header *h, int level, uint64_t *num,
		     uint64_t *max)
{
	int depth = sfs_le16(h->eh_depth);

	num[level] += ex_entries(h);
	max[level] += sfs_le16(h->eh_max);
	if (depth == 0)
		return 0;
	for (uint32_t i = 0; i < ex_entries(h); i++) {
		struct sfs_buf *b;
		int rc = ex_read_node(
		    fs, ip, sfs_le32(ex_idx(h, i)->ei_leaf_lo), depth - 1, &b);
		if (rc)
			return rc;
		rc = ex_levels(fs, ip, (void *)b->data, level + 1, num, max);
		sfs_cache_put(sfs_fs_cache(fs), b);
		if (rc)
			return rc;
	}
	return 0;
}

/* Would e2fsck call this tree narrower or shorter than it could be
 * (e2fsck_should_rebuild_extents)?  *ok_out false if so. */
static int ex_shape_ok(struct sfs_fs *fs, struct sfs_inode *ip, bool *ok_out)
{
	uint64_t num[EX_MAX_DEPTH + 1] = {0}, max[EX_MAX_DEPTH + 1] = {0};
	int depth = sfs_le16(ex_root(ip)->eh_depth);
	int rc = ex_levels(fs, ip, ex_root(ip), 0, num, max);

	*ok_out = true;
	if (rc)
		return rc;
	for (int i = 0; i <= depth; i++) {
		if (max[i] - num[i] > ex_cap(fs))
			*ok_out = false;
		for (int j = 0; j < i; j++)
			if (num[i] < max[j])
				*ok_out = false;
	}
	return 0;
}

/* ext4_inode_to_goal_block without the writer's colour: the first block
 * of the inode's group, or (flex_bg of 4 groups or more) of its flex
 * group, one group further on for a regular file. */
static sfs_blk_t ex_inode_goal(struct sfs_fs *fs, struct sfs_inode *ip)
{
	uint32_t g = (ip->ino - 1) / sfs_geom(fs)->ipg,
		 flex = sfs_flex_size(fs);

	if (flex >= SFS_FLEX_SIZE_DIR_ALLOC) {
		g &= ~(flex - 1);
		if (sfs_i_isreg(ip) && g + 1 < sfs_geom(fs)->groups)
			g++;
	}
	return sfs_group_first(fs, g);
}

/*
 * Replace the tree with the tightest one holding exts[] (sorted, not
 * overlapping): leaves filled in order, depth as small as it can be.  The
 * tree blocks in blks are reused, missing ones allocated first (nothing
 * changes on -ENOSPC), surplus ones freed.
 */
static int ex_build(struct sfs_fs *fs, struct sfs_inode *ip, GArray *exts,
		    GArray *blks)
{
	uint32_t cap = ex_cap(fs), need = 0, n = exts->len;
	struct sfs_dextent_header *root = ex_root(ip);
	GArray *cur, *next;
	uint32_t used = 0, got_new = 0;
	sfs_blk_t *extra = NULL;
	int depth = 0, rc = 0;

	for (uint32_t c = n; c > EX_ROOT_MAX; depth++) {
		c = (c + cap - 1) / cap;
		need += c;
	}
	if (depth > EX_MAX_DEPTH)
		return -EFBIG;
	if (need > blks->len) {
		sfs_blk_t goal =
		    blks->len ? g_array_index(blks, sfs_blk_t, 0)
			      : ex_inode_goal(fs, ip);
		got_new = need - blks->len;
		extra = g_new(sfs_blk_t, got_new);
		for (uint32_t i = 0; i < got_new;) {
			sfs_blk_t start;
			uint32_t got;
			rc = sfs_alloc_blocks(fs, ip, goal, got_new - i, &start,
					      &got);
			if (rc) {
				for (uint32_t k = 0; k < i; k++)
					sfs_blocks_free(fs, extra[k], 1);
				g_free(extra);
				return rc;
			}
			for (uint32_t j = 0; j < got; j++)
				extra[i++] = start + j;
			goal = start + got;
		}
		sfs_i_add_blocks(fs, ip, got_new);
	}

	cur = g_array_new(FALSE, FALSE, 12);
	g_array_append_vals(cur, exts->data, n);
	for (int d = 0; d < depth; d++) {
		next = g_array_new(FALSE, FALSE, 12);
		for (uint32_t i = 0; i < cur->len; i += cap) {
			uint32_t k = MIN(cap, cur->len - i);
			sfs_blk_t blk =
			    used < blks->len
				? g_array_index(blks, sfs_blk_t, used)
				: extra[used - blks->len];
			struct sfs_dextent_idx ix = {0};
			struct sfs_buf *b;
			used++;
			rc = sfs_cache_get_new(sfs_fs_cache(fs), blk,
					       SFS_IO_INDIRECT, &b);
			if (rc) {
				sfs_fs_error(fs, rc,
					     "inode %u: cannot "
					     "rewrite extent block %u",
					     ip->ino, blk);
				g_array_free(next, TRUE);
				goto out;
			}
			memset(b->data, 0, sfs_geom(fs)->bs);
			ex_hdr_init((void *)b->data, (uint16_t)cap,
				    (uint16_t)d);
			memcpy(b->data + 12, cur->data + 12 * i, 12 * k);
			((struct sfs_dextent_header *)b->data)->eh_entries =
			    sfs_cpu_to_le16((uint16_t)k);
			ex_blk_dirty(fs, ip, b, blk);
			sfs_cache_put(sfs_fs_cache(fs), b);
			memcpy(&ix.ei_block, cur->data + 12 * i, 4);
			ix.ei_leaf_lo = sfs_cpu_to_le32(blk);
			g_array_append_val(next, ix);
		}
		g_array_free(cur, TRUE);
		cur = next;
	}
	memset(ip->d.i_block, 0, sizeof(ip->d.i_block));
	ex_hdr_init(root, EX_ROOT_MAX, (uint16_t)depth);
	if (cur->len)
		memcpy(root + 1, cur->data, 12 * cur->len);
	root->eh_entries = sfs_cpu_to_le16((uint16_t)cur->len);
	for (uint32_t i = used; i < blks->len; i++) {
		sfs_blocks_free(fs, g_array_index(blks, sfs_blk_t, i), 1);
		sfs_i_add_blocks(fs, ip, -1);
	}
out:
	g_array_free(cur, TRUE);
	g_free(extra);
	return rc;
}

/* Check the shape and repack the tree if e2fsck would complain. */
static int ex_reshape(struct sfs_fs *fs, struct sfs_inode *ip)
{
	GArray *exts, *blks;
	bool ok;
	int rc = ex_shape_ok(fs, ip, &ok);

	if (rc || ok)
		return rc;
	exts = g_array_new(FALSE, FALSE, sizeof(struct sfs_dextent));
	blks = g_array_new(FALSE, FALSE, sizeof(sfs_blk_t));
	rc = ex_collect(fs, ip, exts, blks);
	if (!rc)
		rc = ex_build(fs, ip, exts, blks);
	g_array_free(exts, TRUE);
	g_array_free(blks, TRUE);
	return rc;
}

/*
 * A root with one index whose child would fit in the root takes the
 * child's entries and loses a level; the child block is freed.  Repeated
 * while it applies: one block read a level.  ext4 resets the depth only of
 * a tree emptied (ext4_ext_remove_space); this keeps a tree that shrank
 * from being "shorter than it could be" to e2fsck, at O(depth).
 */
static int ex_shrink(struct sfs_fs *fs, struct sfs_inode *ip)
{
	struct sfs_dextent_header *root = ex_root(ip);

	while (sfs_le16(root->eh_depth) > 0 && ex_entries(root) == 1) {
		int depth = sfs_le16(root->eh_depth);
		sfs_blk_t child = sfs_le32(ex_idx(root, 0)->ei_leaf_lo);
		struct sfs_dextent_header *ch;
		struct sfs_buf *b;
		int rc = ex_read_node(fs, ip, child, depth - 1, &b);

		if (rc)
			return rc;
		ch = (struct sfs_dextent_header *)b->data;
		if (ex_entries(ch) > EX_ROOT_MAX) {
			sfs_cache_put(sfs_fs_cache(fs), b);
			return 0;
		}
		memset(root + 1, 0, 12 * EX_ROOT_MAX);
		memcpy(root + 1, ch + 1, 12 * ex_entries(ch));
		root->eh_entries = ch->eh_entries;
		root->eh_depth = sfs_cpu_to_le16((uint16_t)(depth - 1));
		sfs_cache_put(sfs_fs_cache(fs), b);
		rc = sfs_blocks_free(fs, child, 1);
		sfs_i_add_blocks(fs, ip, -1);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Keep a small tree as tight as e2fsck wants it: a depth-0 or depth-1 tree
 * (at most four leaves) is checked and repacked when a split or merge left
 * it "narrower or shorter" than it could be.  That costs at most five
 * nodes.  Deeper trees are left as the kernel leaves them.
 */
static int ex_tidy(struct sfs_fs *fs, struct sfs_inode *ip)
{
	int rc = ex_shrink(fs, ip);

	if (rc || sfs_le16(ex_root(ip)->eh_depth) > 1)
		return rc;
	return ex_reshape(fs, ip);
}

/* Full nodes on the path, counted from the leaf up: the tree blocks an
 * insertion into the leaf needs (ext4_ext_create_new_leaf). */
static int ex_full_nodes(const struct ex_path *p)
{
	int full = 0;

	for (int l = p->depth; l >= 0; l--) {
		if (ex_entries(p->n[l].h) < sfs_le16(p->n[l].h->eh_max))
			break;
		full++;
	}
	return full;
}

/*
 * Insert extent e just after the extent at or left of its key, splitting
 * the nodes on that one path (ext4_ext_insert_extent).  Nothing changes on
 * -ENOSPC or -EFBIG (tree blocks are allocated first).
 */
static int ex_insert_ext(struct sfs_fs *fs, struct sfs_inode *ip,
			 const struct sfs_dextent *e)
{
	struct ex_path p;
	struct ex_pool pool = {0};
	bool split = false;
	int full, rc;

	rc = ex_find(fs, ip, sfs_le32(e->ee_block), &p);
	if (rc)
		return rc;
	full = ex_full_nodes(&p);
	if (full == p.depth + 1 && p.depth >= EX_MAX_DEPTH) {
		rc = -EFBIG;
		goto out_put;
	}
	rc = ex_pool_fill(fs, ip, &pool, full, ex_pblk(e));
	if (rc)
		goto out_put;
	rc = ex_insert(fs, ip, &p, p.depth, (uint32_t)(p.n[p.depth].idx + 1), e,
		       &pool, &split);
	ex_pool_release(fs, &pool);
out_put:
	ex_path_put(fs, &p);
	if (!rc && split)
		rc = ex_tidy(fs, ip);
	return rc;
}

/* Set the extent whose key is lblk (it must exist) to (lblk, len, pblk,
 * unwritten); only its leaf is dirtied. */
static int ex_reset(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t lblk,
		    uint32_t len, sfs_blk_t pblk, bool unwritten)
{
	struct ex_path p;
	struct ex_node *leaf;
	int rc = ex_find(fs, ip, lblk, &p);

	if (rc)
		return rc;
	leaf = &p.n[p.depth];
	if (leaf->idx < 0 || ex_key(leaf->h, (uint32_t)leaf->idx) != lblk) {
		ex_path_put(fs, &p);
		return ex_corrupt(fs, ip, leaf->blk, "extent lost in a split");
	}
	ex_set(ex_ext(leaf->h, (uint32_t)leaf->idx), lblk, len, pblk,
	       unwritten);
	ex_dirty(fs, ip, leaf);
	ex_path_put(fs, &p);
	return 0;
}

/* Remove entry i (not the first) of a leaf. */
static void ex_leaf_remove(struct sfs_fs *fs, struct sfs_inode *ip,
			   struct ex_node *leaf, uint32_t i)
{
	uint32_t cnt = ex_entries(leaf->h);

	assert(i > 0 && i < cnt);
	memmove(ex_ext(leaf->h, i), ex_ext(leaf->h, i + 1), 12 * (cnt - i - 1));
	memset(ex_ext(leaf->h, cnt - 1), 0, 12);
	leaf->h->eh_entries = sfs_cpu_to_le16((uint16_t)(cnt - 1));
	ex_dirty(fs, ip, leaf);
}

/*
 * Write into an unwritten extent (ext4_ext_convert_to_initialized): block
 * lblk becomes initialised.  A one-block extent flips its flag; an end
 * block joins an initialised, contiguous neighbour in the same leaf when
 * there is one; otherwise the extent is split in two or three
 * (ext4_split_extent), each new piece inserted on its own path.  Only the
 * leaf, and the nodes a split touches, are written.
 */
static int ex_convert(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t lblk,
		      sfs_blk_t *pblk_out)
{
	struct sfs_dextent *e, *left = NULL, *right = NULL, piece;
	struct ex_node *leaf;
	struct ex_path p;
	uint32_t i, cnt, k, len;
	sfs_blk_t pb, at;
	bool lm, rm;
	int rc = ex_find(fs, ip, lblk, &p);

	if (rc)
		return rc;
	leaf = &p.n[p.depth];
	i = (uint32_t)leaf->idx; /* the caller found lblk in this extent */
	cnt = ex_entries(leaf->h);
	e = ex_ext(leaf->h, i);
	k = sfs_le32(e->ee_block);
	len = ex_len(e);
	pb = ex_pblk(e);
	at = pb + (lblk - k);
	*pblk_out = at;
	if (i > 0)
		left = ex_ext(leaf->h, i - 1);
	if (i + 1 < cnt)
		right = ex_ext(leaf->h, i + 1);
	lm = left && !ex_unwritten(left) &&
	     sfs_le32(left->ee_block) + ex_len(left) == lblk &&
	     ex_pblk(left) + ex_len(left) == at && ex_len(left) < EX_INIT_MAX;
	rm = right && !ex_unwritten(right) &&
	     lblk + 1 == sfs_le32(right->ee_block) &&
	     at + 1 == ex_pblk(right) && ex_len(right) < EX_INIT_MAX;

	if (len == 1) {
		ex_set(e, k, 1, pb, false);
		if (lm && rm &&
		    ex_len(left) + 1 + ex_len(right) <= EX_INIT_MAX) {
			ex_set(left, sfs_le32(left->ee_block),
			       ex_len(left) + 1 + ex_len(right), ex_pblk(left),
			       false);
			ex_leaf_remove(fs, ip, leaf, i + 1);
			ex_leaf_remove(fs, ip, leaf, i);
		} else if (lm) {
			ex_set(left, sfs_le32(left->ee_block), ex_len(left) + 1,
			       ex_pblk(left), false);
			ex_leaf_remove(fs, ip, leaf, i);
		} else if (rm) {
			ex_set(e, lblk, ex_len(right) + 1, at, false);
			ex_leaf_remove(fs, ip, leaf, i + 1);
		}
		ex_dirty(fs, ip, leaf);
		ex_path_put(fs, &p);
		return (lm || rm) ? ex_tidy(fs, ip) : 0;
	}
	if (lblk == k && lm) {
		ex_set(left, sfs_le32(left->ee_block), ex_len(left) + 1,
		       ex_pblk(left), false);
		ex_set(e, k + 1, len - 1, pb + 1, true);
		ex_dirty(fs, ip, leaf);
		ex_path_put(fs, &p);
		return 0;
	}
	if (lblk == k + len - 1 && rm) {
		ex_set(e, k, len - 1, pb, true);
		ex_set(right, lblk, ex_len(right) + 1, at, false);
		ex_dirty(fs, ip, leaf);
		ex_path_put(fs, &p);
		return 0;
	}
	ex_path_put(fs, &p);
	if (lblk == k) {
		/* [lblk] written, [lblk + 1, k + len) still unwritten */
		ex_set(&piece, lblk + 1, len - 1, at + 1, true);
		rc = ex_insert_ext(fs, ip, &piece);
		return rc ? rc : ex_reset(fs, ip, k, 1, pb, false);
	}
	if (lblk + 1 < k + len) {
		/* the tail first: [k, lblk] stays one unwritten extent */
		ex_set(&piece, lblk + 1, k + len - lblk - 1, at + 1, true);
		rc = ex_insert_ext(fs, ip, &piece);
		if (rc)
			return rc;
		len = lblk + 1 - k;
	}
	ex_set(&piece, lblk, 1, at, false);
	rc = ex_insert_ext(fs, ip, &piece);
	if (rc) {
		/* keep the tree consistent: [k, lblk] unwritten */
		int rrc = ex_reset(fs, ip, k, len, pb, true);
		return rrc ? rrc : rc;
	}
	return ex_reset(fs, ip, k, lblk - k, pb, true);
}

/* ext4_ext_find_goal: continue the extent found at or left of lblk (or
 * the first one, backwards), else next to the leaf, else the group. */
static sfs_blk_t ex_goal(struct sfs_fs *fs, struct sfs_inode *ip,
			 struct ex_path *p, uint32_t lblk)
{
	struct ex_node *leaf = &p->n[p->depth];
	sfs_blk_t goal = 0;

	if (ex_entries(leaf->h)) {
		struct sfs_dextent *e =
		    ex_ext(leaf->h, leaf->idx < 0 ? 0 : (uint32_t)leaf->idx);
		uint32_t k = sfs_le32(e->ee_block);
		int64_t g = (int64_t)ex_pblk(e) + ((int64_t)lblk - k);
		if (g > 0 && g < sfs_geom(fs)->blocks_count)
			goal = (sfs_blk_t)g;
	}
	if (!goal && leaf->blk)
		goal = leaf->blk;
	if (!ex_valid_blk(fs, goal))
		goal = ex_inode_goal(fs, ip);
	return goal;
}

static int ex_map(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t lblk,
		  bool create, sfs_blk_t *pblk_out, bool *new_out)
{
	struct ex_path p;
	struct ex_node *leaf;
	struct sfs_dextent *le = NULL, *re = NULL;
	struct ex_pool pool = {0};
	bool reshaped = false;
	sfs_blk_t pblk;
	uint32_t got, cnt;
	int rc;

	*pblk_out = 0;
	*new_out = false;
	sfs_cpu_ctr(fs)->blocks_mapped++;
	if (lblk == UINT32_MAX)
		return -EFBIG;
	rc = ex_find(fs, ip, lblk, &p);
	if (rc)
		return rc;
	leaf = &p.n[p.depth];
	cnt = ex_entries(leaf->h);
	if (leaf->idx >= 0)
		le = ex_ext(leaf->h, (uint32_t)leaf->idx);
	if (le && lblk < sfs_le32(le->ee_block) + ex_len(le)) {
		bool unwritten = ex_unwritten(le);
		sfs_blk_t at = ex_pblk(le) + (lblk - sfs_le32(le->ee_block));
		ex_path_put(fs, &p);
		if (!ex_valid_blk(fs, at))
			return ex_corrupt(fs, ip, at,
					  "extent outside the "
					  "filesystem");
		if (!unwritten) {
			*pblk_out = at;
			return 0;
		}
		if (!create) {
			*new_out = true; /* unwritten: reads as zeros */
			return 0;
		}
		rc = ex_convert(fs, ip, lblk, pblk_out);
		if (rc)
			return rc;
		*new_out = true;
		return sfs_inode_dirty(fs, ip);
	}
	if (!create) {
		ex_path_put(fs, &p);
		return 0;
	}

	rc =
	    sfs_alloc_blocks(fs, ip, ex_goal(fs, ip, &p, lblk), 1, &pblk, &got);
	if (rc)
		goto out_put;
	if ((uint32_t)(leaf->idx + 1) < cnt)
		re = ex_ext(leaf->h, (uint32_t)(leaf->idx + 1));
	bool lm = le && !ex_unwritten(le) &&
		  sfs_le32(le->ee_block) + ex_len(le) == lblk &&
		  ex_pblk(le) + ex_len(le) == pblk && ex_len(le) < EX_INIT_MAX;
	bool rm = re && !ex_unwritten(re) &&
		  lblk + 1 == sfs_le32(re->ee_block) &&
		  pblk + 1 == ex_pblk(re) && ex_len(re) < EX_INIT_MAX;

	if (lm && rm && ex_len(le) + 1 + ex_len(re) <= EX_INIT_MAX) {
		uint32_t i = (uint32_t)leaf->idx + 1;
		le->ee_len =
		    sfs_cpu_to_le16((uint16_t)(ex_len(le) + 1 + ex_len(re)));
		memmove(ex_ext(leaf->h, i), ex_ext(leaf->h, i + 1),
			12 * (cnt - i - 1));
		memset(ex_ext(leaf->h, cnt - 1), 0, 12);
		leaf->h->eh_entries = sfs_cpu_to_le16((uint16_t)(cnt - 1));
		ex_dirty(fs, ip, leaf);
		reshaped = true;
	} else if (lm) {
		le->ee_len = sfs_cpu_to_le16((uint16_t)(ex_len(le) + 1));
		ex_dirty(fs, ip, leaf);
	} else if (rm) {
		ex_set(re, lblk, ex_len(re) + 1, pblk, false);
		ex_dirty(fs, ip, leaf);
		if (leaf->idx < 0)
			ex_fix_keys(fs, ip, &p, p.depth);
	} else {
		struct sfs_dextent e;
		int full = 0;

		for (int l = p.depth; l >= 0; l--) {
			if (ex_entries(p.n[l].h) < sfs_le16(p.n[l].h->eh_max))
				break;
			full++;
		}
		if (full == p.depth + 1 && p.depth >= EX_MAX_DEPTH) {
			sfs_blocks_free(fs, pblk, 1);
			rc = -EFBIG;
			goto out_put;
		}
		rc = ex_pool_fill(fs, ip, &pool, full, pblk);
		if (rc) {
			sfs_blocks_free(fs, pblk, 1);
			goto out_put;
		}
		ex_set(&e, lblk, 1, pblk, false);
		rc = ex_insert(fs, ip, &p, p.depth, (uint32_t)(leaf->idx + 1),
			       &e, &pool, &reshaped);
		ex_pool_release(fs, &pool);
		if (rc) {
			sfs_fs_error(fs, rc,
				     "inode %u: extent insert at "
				     "logical block %u failed",
				     ip->ino, lblk);
			goto out_put;
		}
	}
	ex_path_put(fs, &p);
	sfs_i_add_blocks(fs, ip, 1);
	ip->next_lblk = lblk + 1;
	ip->next_pblk = pblk + 1;
	*pblk_out = pblk;
	*new_out = true;
	if (reshaped) {
		rc = ex_tidy(fs, ip);
		if (rc)
			return rc;
	}
	return sfs_inode_dirty(fs, ip);
out_put:
	ex_path_put(fs, &p);
	return rc;
}

typedef int (*ex_walk_fn)(void *ctx, uint32_t lblk, sfs_blk_t pblk,
			  uint32_t len, bool meta);

static int ex_walk_node(struct sfs_fs *fs, struct sfs_inode *ip,
			struct sfs_dextent_header *h, ex_walk_fn fn, void *ctx)
{
	int depth = sfs_le16(h->eh_depth), rc = 0;

	for (uint32_t i = 0; i < ex_entries(h) && !rc; i++) {
		if (depth == 0) {
			struct sfs_dextent *e = ex_ext(h, i);
			rc = fn(ctx, sfs_le32(e->ee_block), ex_pblk(e),
				ex_len(e), false);
			continue;
		}
		sfs_blk_t child = sfs_le32(ex_idx(h, i)->ei_leaf_lo);
		struct sfs_buf *b;
		rc = fn(ctx, ex_key(h, i), child, 1, true);
		if (rc)
			break;
		rc = ex_read_node(fs, ip, child, depth - 1, &b);
		if (rc)
			break;
		rc = ex_walk_node(fs, ip, (void *)b->data, fn, ctx);
		sfs_cache_put(sfs_fs_cache(fs), b);
	}
	return rc;
}

static int ex_walk(struct sfs_fs *fs, struct sfs_inode *ip, ex_walk_fn fn,
		   void *ctx)
{
	int rc = ex_check(fs, ip, 0, ex_root(ip), -1, EX_ROOT_MAX);

	return rc ? rc : ex_walk_node(fs, ip, ex_root(ip), fn, ctx);
}

/* ext4_max_size: 32-bit logical block numbers (the last one unusable),
 * capped at 16 TiB. */
static uint64_t ex_max_bytes(uint32_t bs)
{
	uint64_t limit = ((1ULL << 32) - 1) * bs;

	return MIN(limit, 1ULL << 44);
}

/* ---- range edits (fallocate punch, zero, collapse, insert) ---- */

/*
 * Remove entry i of node l on path p (ext4_ext_rm_idx): a node left empty
 * is freed and its index removed from the parent in turn; a new first
 * entry corrects the keys above.  The tree emptied to the root becomes a
 * depth-0 root.  The path is good only for ex_path_put afterwards.
 */
static int ex_node_remove(struct sfs_fs *fs, struct sfs_inode *ip,
			  struct ex_path *p, int l, uint32_t i)
{
	struct ex_node *n = &p->n[l];
	uint32_t cnt = ex_entries(n->h);
	int rc;

	assert(i < cnt);
	if (cnt == 1 && l > 0) {
		sfs_blk_t blk = n->blk;
		sfs_cache_put(sfs_fs_cache(fs), n->buf);
		n->buf = NULL;
		rc = sfs_blocks_free(fs, blk, 1);
		sfs_i_add_blocks(fs, ip, -1);
		if (rc)
			return rc;
		return ex_node_remove(fs, ip, p, l - 1,
				      (uint32_t)p->n[l - 1].idx);
	}
	memmove(ex_ext(n->h, i), ex_ext(n->h, i + 1), 12 * (cnt - i - 1));
	memset(ex_ext(n->h, cnt - 1), 0, 12);
	n->h->eh_entries = sfs_cpu_to_le16((uint16_t)(cnt - 1));
	if (cnt == 1) /* the root, emptied: back to depth 0 */
		n->h->eh_depth = 0;
	ex_dirty(fs, ip, n);
	if (i == 0 && cnt > 1)
		ex_fix_keys(fs, ip, p, l);
	return 0;
}

/* Find the first extent that ends after a: its leaf is the last node of
 * path p, its index *i_out (ex_entries of the leaf when the leaf has none
 * left; the next leaf then starts at ex_next_leaf_key). */
static int ex_find_from(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t a,
			struct ex_path *p, uint32_t *i_out)
{
	struct ex_node *leaf;
	uint32_t i;
	int rc = ex_find(fs, ip, a, p);

	if (rc)
		return rc;
	leaf = &p->n[p->depth];
	i = leaf->idx < 0 ? 0 : (uint32_t)leaf->idx;
	if (i < ex_entries(leaf->h) &&
	    ex_key(leaf->h, i) + (uint64_t)ex_len(ex_ext(leaf->h, i)) <= a)
		i++;
	*i_out = i;
	return 0;
}

/* The first key after the leaf on path p (the next index entry above),
 * or UINT32_MAX when the leaf is the last. */
static uint32_t ex_next_leaf_key(struct ex_path *p)
{
	for (int l = p->depth - 1; l >= 0; l--) {
		struct ex_node *n = &p->n[l];
		if ((uint32_t)n->idx + 1 < ex_entries(n->h))
			return ex_key(n->h, (uint32_t)n->idx + 1);
	}
	return UINT32_MAX;
}

/* An extent found in a range: entry i of the leaf (the last node of the
 * path), its key, length, first block and state, and the part [lo, hi)
 * of it that lies in the range. */
struct ex_hit {
	struct sfs_dextent *e;
	uint32_t i, k, len, lo, hi;
	uint64_t end;
	sfs_blk_t pb;
	bool uw;
};

/*
 * The first extent in [*a, to), in *h.  A leaf with nothing left at or
 * after *a sends the search on to the next leaf's first key (*a moves
 * there).  1 if found (path p held), 0 if none (p released), or an error
 * (an extent outside the filesystem is -EIO).
 */
static int ex_range_next(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t *a,
			 uint32_t to, struct ex_path *p, struct ex_hit *h)
{
	for (;;) {
		struct ex_node *leaf;
		uint32_t next;
		int rc = ex_find_from(fs, ip, *a, p, &h->i);

		if (rc)
			return rc;
		leaf = &p->n[p->depth];
		if (h->i < ex_entries(leaf->h)) {
			h->e = ex_ext(leaf->h, h->i);
			h->k = sfs_le32(h->e->ee_block);
			h->len = ex_len(h->e);
			h->end = (uint64_t)h->k + h->len;
			h->pb = ex_pblk(h->e);
			h->uw = ex_unwritten(h->e);
			h->lo = MAX(h->k, *a);
			h->hi = (uint32_t)MIN(h->end, to);
			if (h->k >= to) {
				ex_path_put(fs, p);
				return 0;
			}
			if (!ex_valid_blk(fs, h->pb) ||
			    h->pb + h->len > sfs_geom(fs)->blocks_count) {
				ex_path_put(fs, p);
				return ex_corrupt(fs, ip, h->pb,
						  "extent outside the "
						  "filesystem");
			}
			return 1;
		}
		next = ex_next_leaf_key(p);
		ex_path_put(fs, p);
		if (next <= *a || next >= to)
			return 0;
		*a = next;
	}
}

/* After a range edit: small trees tidied if an entry went, the inode
 * written, mballoc's view of the file's growth reset. */
static int ex_edit_done(struct sfs_fs *fs, struct sfs_inode *ip, int rc,
			bool removed)
{
	int drc;

	if (rc == 0 && removed)
		rc = ex_tidy(fs, ip);
	ip->next_lblk = 0;
	ip->next_pblk = 0;
	drc = sfs_inode_dirty(fs, ip);
	return rc ? rc : drc;
}

/*
 * PUNCH_HOLE, path-local (ext4_ext_remove_space on a range): extent by
 * extent, one lookup each, an extent inside the range is removed, one
 * across an end is trimmed in place, one across both is split (the tail
 * inserted first, so -ENOSPC changes nothing); only the nodes on each
 * path are dirtied, emptied nodes are freed.  Small trees are tidied
 * afterwards as after a merge (ex_tidy).
 */
static int ex_punch(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t from,
		    uint32_t to)
{
	uint64_t freed = 0;
	bool removed = false;
	uint32_t a = from;
	int rc = 0;

	while (a < to) {
		struct ex_path p;
		struct ex_node *leaf;
		struct ex_hit h;

		rc = ex_range_next(fs, ip, &a, to, &p, &h);
		if (rc <= 0)
			break;
		rc = 0;
		leaf = &p.n[p.depth];
		if (h.lo == h.k && h.hi == h.end) {
			rc = ex_node_remove(fs, ip, &p, p.depth, h.i);
			removed = true;
		} else if (h.lo > h.k && h.hi == h.end) {
			ex_set(h.e, h.k, h.lo - h.k, h.pb, h.uw);
			ex_dirty(fs, ip, leaf);
		} else if (h.lo == h.k) {
			ex_set(h.e, h.hi, (uint32_t)(h.end - h.hi),
			       h.pb + (h.hi - h.k), h.uw);
			ex_dirty(fs, ip, leaf);
			if (h.i == 0)
				ex_fix_keys(fs, ip, &p, p.depth);
		} else {
			struct sfs_dextent tail;
			ex_path_put(fs, &p);
			ex_set(&tail, h.hi, (uint32_t)(h.end - h.hi),
			       h.pb + (h.hi - h.k), h.uw);
			rc = ex_insert_ext(fs, ip, &tail);
			if (rc == 0)
				rc = ex_reset(fs, ip, h.k, h.lo - h.k, h.pb,
					      h.uw);
			removed = true; /* the insert may have split */
		}
		ex_path_put(fs, &p);
		if (rc)
			break;
		rc = sfs_blocks_free(fs, h.pb + (h.lo - h.k), h.hi - h.lo);
		freed += h.hi - h.lo;
		if (rc)
			break;
		a = h.hi;
	}
	if (freed)
		sfs_i_add_blocks(fs, ip, -(int64_t)freed);
	return ex_edit_done(fs, ip, rc, removed);
}

/* Can b follow a as one extent (ext4_can_extents_be_merged)? */
static bool ex_mergeable(const struct sfs_dextent *a,
			 const struct sfs_dextent *b)
{
	bool uw = ex_unwritten(a);

	return uw == ex_unwritten(b) &&
	       sfs_le32(a->ee_block) + ex_len(a) == sfs_le32(b->ee_block) &&
	       ex_pblk(a) + ex_len(a) == ex_pblk(b) &&
	       ex_len(a) + ex_len(b) <= (uw ? EX_UNINIT_MAX : EX_INIT_MAX);
}

/* Join entry i of a leaf with the neighbours in that leaf it can be one
 * extent with (ext4_ext_try_to_merge); true if an entry went.  The first
 * entry never goes, so no key above changes. */
static bool ex_leaf_merge(struct sfs_fs *fs, struct sfs_inode *ip,
			  struct ex_node *leaf, uint32_t i)
{
	struct sfs_dextent *e = ex_ext(leaf->h, i), *o;
	bool merged = false;

	if (i + 1 < ex_entries(leaf->h) &&
	    ex_mergeable(e, o = ex_ext(leaf->h, i + 1))) {
		ex_set(e, sfs_le32(e->ee_block), ex_len(e) + ex_len(o),
		       ex_pblk(e), ex_unwritten(e));
		ex_leaf_remove(fs, ip, leaf, i + 1);
		merged = true;
	}
	if (i > 0 && ex_mergeable(o = ex_ext(leaf->h, i - 1), e)) {
		ex_set(o, sfs_le32(o->ee_block), ex_len(o) + ex_len(e),
		       ex_pblk(o), ex_unwritten(o));
		ex_leaf_remove(fs, ip, leaf, i);
		merged = true;
	}
	return merged;
}

/*
 * Give [lo, hi) of the extent keyed k (len blocks from pb, unwritten if uw)
 * the state mid_uw (ext4_split_extent): the piece after hi is inserted
 * first, then [lo, hi) when lo > k, and last the extent itself is cut to
 * what lies before lo (or, when lo == k, to [k, hi) in the new state).
 * Each piece goes in on its own path; on -ENOSPC the tree still maps
 * every block once, in its old state.
 */
static int ex_split3(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t k,
		     uint32_t len, sfs_blk_t pb, bool uw, uint32_t lo,
		     uint32_t hi, bool mid_uw)
{
	struct sfs_dextent piece;
	int rc;

	if (hi < k + len) {
		ex_set(&piece, hi, k + len - hi, pb + (hi - k), uw);
		rc = ex_insert_ext(fs, ip, &piece);
		if (rc)
			return rc;
		len = hi - k;
	}
	if (lo == k)
		return ex_reset(fs, ip, k, hi - k, pb, mid_uw);
	ex_set(&piece, lo, hi - lo, pb + (lo - k), mid_uw);
	rc = ex_insert_ext(fs, ip, &piece);
	if (rc) {
		int rrc = ex_reset(fs, ip, k, len, pb, uw);
		return rrc ? rrc : rc;
	}
	return ex_reset(fs, ip, k, lo - k, pb, uw);
}

/*
 * Free every block at logical >= from (ext4_ext_remove_space,
 * ext4_ext_rm_leaf): from the last leaf back, a leaf loses the extents
 * past the end and the one across it is shortened; a leaf left empty is
 * freed and its index removed, and so on up (ex_node_remove).  Each step
 * reads and dirties only the last path, so cutting the last extent costs
 * O(depth).  A tree emptied is a depth-0 root again; one that shrank is
 * tidied (ex_tidy: a root over one child that fits in it takes its
 * entries, a tree of depth <= 1 is kept as e2fsck wants it).
 */
static int ex_truncate(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t from)
{
	uint64_t freed = 0;
	bool changed = false;
	int rc = 0;

	while (rc == 0) {
		struct ex_path p;
		struct ex_node *leaf;
		uint32_t cnt, j;
		bool cut = false;

		rc = ex_find(fs, ip, UINT32_MAX, &p);
		if (rc)
			break;
		leaf = &p.n[p.depth];
		cnt = ex_entries(leaf->h);
		for (j = cnt; j > 0 && !cut;) {
			struct sfs_dextent *e = ex_ext(leaf->h, j - 1);
			uint32_t k = sfs_le32(e->ee_block), len = ex_len(e);
			uint32_t stay = k >= from ? 0 : from - k;
			sfs_blk_t pb = ex_pblk(e);

			if ((uint64_t)k + len <= from)
				break;
			if (!ex_valid_blk(fs, pb) ||
			    pb + len > sfs_geom(fs)->blocks_count) {
				rc =
				    ex_corrupt(fs, ip, pb,
					       "extent outside the filesystem");
				break;
			}
			rc = sfs_blocks_free(fs, pb + stay, len - stay);
			freed += len - stay;
			if (stay) {
				ex_set(e, k, stay, pb, ex_unwritten(e));
				cut = true;
			} else {
				j--;
			}
			if (rc)
				break;
		}
		if (j == cnt && !cut) {
			ex_path_put(fs, &p);
			break;
		}
		changed = true;
		if (j == 0 && p.depth > 0) {
			/* the leaf empties: it goes, the one before is next */
			int rrc;

			leaf->h->eh_entries = sfs_cpu_to_le16(1);
			rrc = ex_node_remove(fs, ip, &p, p.depth, 0);
			ex_path_put(fs, &p);
			if (rc == 0)
				rc = rrc;
			continue;
		}
		memset(ex_ext(leaf->h, j), 0, 12 * (cnt - j));
		leaf->h->eh_entries = sfs_cpu_to_le16((uint16_t)j);
		ex_dirty(fs, ip, leaf);
		ex_path_put(fs, &p);
		break;
	}
	if (freed)
		sfs_i_add_blocks(fs, ip, -(int64_t)freed);
	if (!changed) {
		ip->next_lblk = 0;
		ip->next_pblk = 0;
		return rc;
	}
	return ex_edit_done(fs, ip, rc, true);
}

/*
 * fallocate's preallocation (ext4_alloc_file_blocks): every hole of
 * [lblk, lblk + n) gets blocks from the placement model, up to 32767 an
 * unwritten extent, each run aimed to continue the extent before it
 * (ex_goal).  A run contiguous, logically and physically, with an
 * unwritten extent beside it in the same leaf joins that extent in place
 * (both, when it closes the gap between two: ext4_ext_try_to_merge); any
 * other is inserted on its own path (ex_insert_ext).  Extents already there are
 * stepped over, untouched: one lookup per extent or hole in the range.
 * -ENOSPC keeps what was allocated, as ext4 does.
 */
int sfs_extent_prealloc(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t lblk,
			uint32_t n)
{
	uint32_t end = lblk + n, a = lblk;
	bool changed = false, removed = false;
	int rc = 0;

	if (n == 0 || end < lblk || end == UINT32_MAX)
		return -EFBIG;
	while (a < end) {
		struct sfs_dextent *le = NULL, *re, ne;
		struct ex_node *leaf;
		struct ex_path p;
		uint32_t i, hole_end, got;
		sfs_blk_t start;

		rc = ex_find(fs, ip, a, &p);
		if (rc)
			break;
		leaf = &p.n[p.depth];
		if (leaf->idx >= 0) {
			uint64_t lend;

			le = ex_ext(leaf->h, (uint32_t)leaf->idx);
			lend = sfs_le32(le->ee_block) + (uint64_t)ex_len(le);
			if (a < lend) { /* mapped already: step over it */
				ex_path_put(fs, &p);
				a = (uint32_t)MIN(lend, end);
				continue;
			}
		}
		i = (uint32_t)(leaf->idx + 1);
		hole_end = i < ex_entries(leaf->h) ? ex_key(leaf->h, i)
						   : ex_next_leaf_key(&p);
		hole_end = MIN(hole_end, end);
		ip->next_lblk = a; /* mballoc's view of where the file grows */
		rc = sfs_alloc_blocks(fs, ip, ex_goal(fs, ip, &p, a),
				      MIN(hole_end - a, EX_UNINIT_MAX), &start,
				      &got);
		if (rc) {
			ex_path_put(fs, &p);
			break;
		}
		ex_set(&ne, a, got, start, true);
		re = i < ex_entries(leaf->h) ? ex_ext(leaf->h, i) : NULL;
		if (le && ex_mergeable(le, &ne)) {
			ex_set(le, sfs_le32(le->ee_block), ex_len(le) + got,
			       ex_pblk(le), true);
			ex_dirty(fs, ip, leaf);
			if (re && ex_mergeable(le, re)) { /* the hole closed */
				ex_set(le, sfs_le32(le->ee_block),
				       ex_len(le) + ex_len(re), ex_pblk(le),
				       true);
				ex_leaf_remove(fs, ip, leaf, i);
				removed = true;
			}
			ex_path_put(fs, &p);
		} else if (re && ex_mergeable(&ne, re)) {
			ex_set(re, a, got + ex_len(re), start, true);
			ex_dirty(fs, ip, leaf);
			if (i == 0)
				ex_fix_keys(fs, ip, &p, p.depth);
			ex_path_put(fs, &p);
		} else {
			ex_path_put(fs, &p);
			rc = ex_insert_ext(fs, ip, &ne);
			if (rc) {
				/* no room for a tree block: give them back */
				sfs_blocks_free(fs, start, got);
				break;
			}
		}
		sfs_i_add_blocks(fs, ip, got);
		changed = true;
		a += got;
	}
	if (!changed) {
		ip->next_lblk = 0;
		ip->next_pblk = 0;
		return rc;
	}
	return ex_edit_done(fs, ip, rc, removed);
}

/*
 * ZERO_RANGE's conversion (ext4_zero_range, ext4_split_convert_extents):
 * each written extent in [from, to) becomes unwritten there, in place.  An
 * extent wholly inside flips its flag and joins unwritten, contiguous
 * neighbours in its leaf; one across an end is split (ex_split3).  Holes
 * stay holes.  One lookup per extent; only its path, and what a split
 * adds, is written.  The converted blocks read as zeros: their cached
 * copies are dropped.
 */
static int ex_unwrite(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t from,
		      uint32_t to)
{
	bool merged = false;
	uint32_t a = from;
	int rc = 0;

	while (a < to) {
		struct ex_path p;
		struct ex_hit h;

		rc = ex_range_next(fs, ip, &a, to, &p, &h);
		if (rc <= 0)
			break;
		rc = 0;
		if (h.uw) {
			ex_path_put(fs, &p);
			a = h.hi;
			continue;
		}
		h.hi = MIN(h.hi, h.lo + EX_UNINIT_MAX);
		if (h.lo == h.k && h.hi == h.end) {
			struct ex_node *leaf = &p.n[p.depth];
			ex_set(h.e, h.k, h.len, h.pb, true);
			ex_dirty(fs, ip, leaf);
			merged |= ex_leaf_merge(fs, ip, leaf, h.i);
			ex_path_put(fs, &p);
		} else {
			ex_path_put(fs, &p);
			rc = ex_split3(fs, ip, h.k, h.len, h.pb, false, h.lo,
				       h.hi, true);
			if (rc)
				break;
		}
		sfs_cache_discard(sfs_fs_cache(fs), h.pb + (h.lo - h.k),
				  h.hi - h.lo);
		a = h.hi;
	}
	return ex_edit_done(fs, ip, rc, merged);
}

/* Is there a leaf left of the one on path p? */
static bool ex_has_prev_leaf(const struct ex_path *p)
{
	for (int l = p->depth - 1; l >= 0; l--)
		if (p->n[l].idx > 0)
			return true;
	return false;
}

/*
 * Move every extent whose key is at or past start by delta blocks
 * (ext4_ext_shift_extents): leaf by leaf, left to right when moving down
 * and from the last leaf back when moving up, so that the keys are in
 * order between any two steps.  In each leaf the keys change in place and
 * the index keys above follow (ex_fix_keys); moving down, the first extent
 * moved joins the one before it in its leaf when they are contiguous
 * (ext4_ext_try_to_merge_right; *merged).  One path a leaf: O(depth) for
 * each leaf right of start, no block allocated or freed.
 */
static int ex_shift(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t start,
		    int64_t delta, bool *merged)
{
	uint32_t at = delta < 0 ? start : UINT32_MAX;

	for (;;) {
		struct ex_node *leaf;
		struct ex_path p;
		uint32_t cnt, first, s;
		bool prev;
		int rc = ex_find(fs, ip, at, &p);

		if (rc)
			return rc;
		leaf = &p.n[p.depth];
		cnt = ex_entries(leaf->h);
		if (cnt == 0) {
			ex_path_put(fs, &p);
			return 0;
		}
		first = ex_key(leaf->h, 0);
		for (s = cnt; s > 0 && ex_key(leaf->h, s - 1) >= start; s--) {
			struct sfs_dextent *e = ex_ext(leaf->h, s - 1);
			e->ee_block = sfs_cpu_to_le32(
			    (uint32_t)((int64_t)sfs_le32(e->ee_block) + delta));
		}
		if (s < cnt) {
			ex_dirty(fs, ip, leaf);
			if (s == 0)
				ex_fix_keys(fs, ip, &p, p.depth);
			else if (delta < 0)
				*merged |= ex_leaf_merge(fs, ip, leaf, s);
		}
		if (delta < 0) {
			uint32_t next = ex_next_leaf_key(&p);
			ex_path_put(fs, &p);
			if (next == UINT32_MAX)
				return 0;
			at = next;
			continue;
		}
		prev = ex_has_prev_leaf(&p);
		ex_path_put(fs, &p);
		if (s > 0 || !prev || first == 0)
			return 0;
		at = first - 1;
	}
}

/* COLLAPSE_RANGE (ext4_collapse_range): [from, to) punched out, then every
 * extent past it moved down by to - from (ex_shift).  -ENOSPC (the punch
 * splitting an extent across both ends) changes nothing. */
static int ex_collapse(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t from,
		       uint32_t to)
{
	bool merged = false;
	int rc = ex_punch(fs, ip, from, to);

	if (rc)
		return rc;
	rc = ex_shift(fs, ip, to, -(int64_t)(to - from), &merged);
	return ex_edit_done(fs, ip, rc, merged);
}

/*
 * INSERT_RANGE (ext4_insert_range): the extent across from is split there
 * (ext4_split_extent_at), then every extent at or past from moves up by
 * to - from, from the last leaf back (ex_shift).  -EFBIG when the last
 * extent would pass the largest logical block, -ENOSPC from the split:
 * both change nothing.
 */
static int ex_insert_range(struct sfs_fs *fs, struct sfs_inode *ip,
			   uint32_t from, uint32_t to)
{
	struct ex_node *leaf;
	struct ex_path p;
	bool merged = false;
	int rc = ex_find(fs, ip, UINT32_MAX, &p);

	if (rc)
		return rc;
	leaf = &p.n[p.depth];
	if (leaf->idx >= 0) {
		struct sfs_dextent *e = ex_ext(leaf->h, (uint32_t)leaf->idx);
		uint64_t end = sfs_le32(e->ee_block) + (uint64_t)ex_len(e);

		if (end > from && end + (to - from) >= UINT32_MAX)
			rc = -EFBIG;
	}
	ex_path_put(fs, &p);
	if (rc)
		return rc;
	rc = ex_find(fs, ip, from, &p);
	if (rc)
		return rc;
	leaf = &p.n[p.depth];
	if (leaf->idx >= 0) {
		struct sfs_dextent *e = ex_ext(leaf->h, (uint32_t)leaf->idx);
		uint32_t k = sfs_le32(e->ee_block), len = ex_len(e);
		sfs_blk_t pb = ex_pblk(e);
		bool uw = ex_unwritten(e);

		if (k < from && from < (uint64_t)k + len) {
			ex_path_put(fs, &p);
			rc = ex_split3(fs, ip, k, len, pb, uw, k, from, uw);
			if (rc)
				return rc;
		}
	}
	ex_path_put(fs, &p);
	rc = ex_shift(fs, ip, from, (int64_t)(to - from), &merged);
	return ex_edit_done(fs, ip, rc, merged);
}

void sfs_extent_init_root(struct sfs_fs *fs, struct sfs_inode *ip)
{
	memset(ip->d.i_block, 0, sizeof(ip->d.i_block));
	ex_hdr_init(ex_root(ip), EX_ROOT_MAX, 0);
	ip->d.i_flags |= sfs_cpu_to_le32(SFS_EXTENTS_FL);
	sfs_fs_add_incompat(fs, SFS_FEATURE_INCOMPAT_EXTENTS);
}

const struct sfs_map_ops sfs_extent_map_ops = {
    .name = "extent",
    .map = ex_map,
    .truncate = ex_truncate,
    .walk = ex_walk,
    .max_bytes = ex_max_bytes,
    .punch = ex_punch,
    .unwrite = ex_unwrite,
    .collapse = ex_collapse,
    .insert = ex_insert_range,
    .init_inode = sfs_extent_init_root,
};

const struct sfs_alloc_preset sfs_alloc_extent = {
    .name = "extent",
    .help = "ext4: extent trees for new files (ext4_ext_map_blocks, "
	    "ext4_ext_find_goal), goal-directed bitmap search",
    .map = &sfs_extent_map_ops,
    .place = &sfs_bitmap_alloc_ops,
};
