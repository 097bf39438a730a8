/*
 * blockmap.c - ext2's file mapping: 12 direct pointers in the inode, then
 * a single, double and triple indirect block (i_block[12..14]), each an
 * array of bs/4 little-endian block numbers; 0 is a hole.
 *
 *   logical block  < 12                      i_block[n]
 *                  < 12 + a                  IND[n - 12]           (a = bs/4)
 *                  < 12 + a + a^2            DIND[..][..]
 *                  < 12 + a + a^2 + a^3      TIND[..][..][..]
 *
 * Filling a hole allocates the missing indirect blocks and the data block
 * in one placement request, indirect blocks first, so on a clean disk an
 * indirect block sits right before the data it maps (ext3_alloc_branch).
 * The goal is ext2_find_goal's: right after the previous allocation when
 * the file grows sequentially, else the nearest earlier pointer in the same
 * array, else the indirect block holding the array, else the start of the
 * inode's group plus the writing process's "colour" ((pid % 16) slots of
 * bpg/16 blocks: concurrent writers start apart), when the front end
 * tells the engine the pid (sfs_write_ctx); 0 otherwise.
 */
#include <errno.h>
#include <string.h>

#include "model.h"

/* Split lblk into the path of array indices; returns depth 0..3 or -1. */
static int bm_path(const struct sfs_fs *fs, uint32_t lblk, uint32_t off[4])
{
	uint64_t a = sfs_geom(fs)->addr_per_block, l = lblk;

	if (l < SFS_NDIR_BLOCKS) {
		off[0] = (uint32_t)l;
		return 0;
	}
	l -= SFS_NDIR_BLOCKS;
	if (l < a) {
		off[0] = SFS_IND_BLOCK;
		off[1] = (uint32_t)l;
		return 1;
	}
	l -= a;
	if (l < a * a) {
		off[0] = SFS_DIND_BLOCK;
		off[1] = (uint32_t)(l / a);
		off[2] = (uint32_t)(l % a);
		return 2;
	}
	l -= a * a;
	if (l < a * a * a) {
		off[0] = SFS_TIND_BLOCK;
		off[1] = (uint32_t)(l / (a * a));
		off[2] = (uint32_t)((l / a) % a);
		off[3] = (uint32_t)(l % a);
		return 3;
	}
	return -1;
}

static bool bm_valid(const struct sfs_fs *fs, sfs_blk_t b)
{
	return b >= sfs_geom(fs)->first_data_block &&
	       b < sfs_geom(fs)->blocks_count;
}

static int bm_bad_ptr(struct sfs_fs *fs, struct sfs_inode *ip, sfs_blk_t b)
{
	sfs_fs_error(fs, -EIO, "inode %u: block pointer %u outside the "
		     "filesystem", ip->ino, b);
	return -EIO;
}

/* ext2_find_goal for a pointer missing at arr[idx]. */
static sfs_blk_t bm_goal(struct sfs_fs *fs, struct sfs_inode *ip,
			 uint32_t lblk, const uint32_t *arr, uint32_t idx,
			 sfs_blk_t arr_blk)
{
	if (lblk == ip->next_lblk && ip->next_pblk &&
	    bm_valid(fs, ip->next_pblk))
		return ip->next_pblk;
	for (uint32_t i = idx; i-- > 0;)
		if (arr[i])
			return sfs_le32(arr[i]);
	if (arr_blk)
		return arr_blk;
	/* the group's start plus the writer's colour: 16 slots per group */
	uint32_t g = (ip->ino - 1) / sfs_geom(fs)->ipg;
	uint32_t colour = (sfs_fs_cur_pid(fs) % 16) * (sfs_geom(fs)->bpg / 16);
	if (colour >= sfs_group_nblocks(fs, g))
		colour = 0;
	return sfs_group_first(fs, g) + colour;
}

/* Allocate exactly n blocks (as few runs as the placement gives) into
 * out[]; all or nothing. */
static int bm_alloc_chain(struct sfs_fs *fs, struct sfs_inode *ip,
			  sfs_blk_t goal, uint32_t n, sfs_blk_t *out)
{
	uint32_t have = 0;

	while (have < n) {
		sfs_blk_t start;
		uint32_t got;
		int rc = sfs_alloc_blocks(fs, ip, goal, n - have, &start, &got);
		if (rc) {
			for (uint32_t i = 0; i < have; i++)
				sfs_blocks_free(fs, out[i], 1);
			return rc;
		}
		for (uint32_t i = 0; i < got; i++)
			out[have++] = start + i;
		goal = start + got;
	}
	return 0;
}

static int bm_map(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t lblk,
		  bool create, sfs_blk_t *pblk_out, bool *new_out)
{
	uint32_t off[4], *arr = ip->d.i_block;
	struct sfs_buf *arrbuf = NULL;
	sfs_blk_t arr_blk = 0, chain[4] = {0};
	int depth = bm_path(fs, lblk, off), k, rc = 0;

	*pblk_out = 0;
	*new_out = false;
	sfs_cpu_ctr(fs)->blocks_mapped++;
	if (depth < 0)
		return -EFBIG;
	for (k = 0;; k++) {
		sfs_blk_t p = sfs_le32(arr[off[k]]);
		struct sfs_buf *nb;

		if (!p)
			break;
		if (!bm_valid(fs, p)) {
			rc = bm_bad_ptr(fs, ip, p);
			goto out_put;
		}
		if (k == depth) {
			*pblk_out = p;
			goto out_put;
		}
		rc = sfs_cache_get(sfs_fs_cache(fs), p, SFS_IO_INDIRECT, &nb);
		if (rc)
			goto out_put;
		if (arrbuf)
			sfs_cache_put(sfs_fs_cache(fs), arrbuf);
		arrbuf = nb;
		arr = (uint32_t *)nb->data;
		arr_blk = p;
	}
	if (!create)
		goto out_put;

	/* Missing from level k down: depth - k indirect blocks + the data. */
	uint32_t need = (uint32_t)(depth - k + 1);
	rc = bm_alloc_chain(fs, ip,
			    bm_goal(fs, ip, lblk, arr, off[k], arr_blk), need,
			    chain);
	if (rc)
		goto out_put;
	for (uint32_t j = 0; j + 1 < need; j++) {
		struct sfs_buf *ib;
		rc = sfs_cache_get_new(sfs_fs_cache(fs), chain[j],
				       SFS_IO_INDIRECT, &ib);
		if (rc) {
			for (uint32_t i = 0; i < need; i++)
				sfs_blocks_free(fs, chain[i], 1);
			goto out_put;
		}
		memset(ib->data, 0, sfs_geom(fs)->bs);
		((uint32_t *)ib->data)[off[k + 1 + j]] =
			sfs_cpu_to_le32(chain[j + 1]);
		sfs_meta_dirty(fs, ib);
		sfs_cache_put(sfs_fs_cache(fs), ib);
	}
	arr[off[k]] = sfs_cpu_to_le32(chain[0]);
	if (arrbuf) {
		sfs_meta_dirty(fs, arrbuf);
		sfs_inode_note_dirty(ip, arr_blk, 1);
	}
	if (need > 1)
		sfs_inode_note_dirty(ip, chain[0], need - 1);
	sfs_i_add_blocks(fs, ip, need);
	ip->next_lblk = lblk + 1;
	ip->next_pblk = chain[need - 1] + 1;
	*pblk_out = chain[need - 1];
	*new_out = true;
	rc = sfs_inode_dirty(fs, ip);
out_put:
	if (arrbuf)
		sfs_cache_put(sfs_fs_cache(fs), arrbuf);
	return rc;
}

/* Batches freed blocks into runs for sfs_blocks_free. */
struct bm_freer {
	sfs_blk_t start;
	uint32_t len;
	uint64_t count;
	int rc;
};

static void bm_free_flush(struct sfs_fs *fs, struct bm_freer *f)
{
	if (f->len) {
		int rc = sfs_blocks_free(fs, f->start, f->len);
		if (rc && !f->rc)
			f->rc = rc;
	}
	f->len = 0;
}

static void bm_free_one(struct sfs_fs *fs, struct bm_freer *f, sfs_blk_t b)
{
	if (f->len && b == f->start + f->len) {
		f->len++;
	} else {
		bm_free_flush(fs, f);
		f->start = b;
		f->len = 1;
	}
	f->count++;
}

/* Free block p and, for level > 0, every block below it. */
static int bm_free_tree(struct sfs_fs *fs, struct sfs_inode *ip, sfs_blk_t p,
			int level, struct bm_freer *f)
{
	if (!bm_valid(fs, p))
		return bm_bad_ptr(fs, ip, p);
	if (level > 0) {
		struct sfs_buf *b;
		int rc =
		    sfs_cache_get(sfs_fs_cache(fs), p, SFS_IO_INDIRECT, &b);
		if (rc)
			return rc;
		const uint32_t *e = (const uint32_t *)b->data;
		for (uint32_t i = 0; i < sfs_geom(fs)->addr_per_block; i++) {
			if (!e[i])
				continue;
			rc = bm_free_tree(fs, ip, sfs_le32(e[i]), level - 1, f);
			if (rc) {
				sfs_cache_put(sfs_fs_cache(fs), b);
				return rc;
			}
		}
		sfs_cache_put(sfs_fs_cache(fs), b);
	}
	bm_free_one(fs, f, p);
	return 0;
}

/*
 * Free what arr[0..n) maps at logical blocks [from, to).  Entry i covers
 * [base + i*span, base + (i+1)*span) and points to a tree of height level.
 * A subtree wholly inside goes with its indirect blocks; one that straddles
 * an end is descended and keeps its indirect block (ext4_ind_remove_space
 * frees the same for a punch; truncate is the range [from, infinity)).
 */
static int bm_trunc_array(struct sfs_fs *fs, struct sfs_inode *ip,
			  uint32_t *arr, uint32_t n, uint64_t base,
			  uint64_t span, int level, uint64_t from, uint64_t to,
			  bool *changed, struct bm_freer *f)
{
	for (uint32_t i = 0; i < n; i++) {
		uint64_t start = base + i * span;
		sfs_blk_t p = sfs_le32(arr[i]);
		int rc;

		if (!p || start + span <= from || start >= to)
			continue;
		if (start >= from && start + span <= to) {
			rc = bm_free_tree(fs, ip, p, level, f);
			if (rc)
				return rc;
			arr[i] = 0;
			*changed = true;
			continue;
		}
		/* Partly kept: descend (level > 0 here). */
		struct sfs_buf *b;
		bool sub = false;
		if (!bm_valid(fs, p))
			return bm_bad_ptr(fs, ip, p);
		rc = sfs_cache_get(sfs_fs_cache(fs), p, SFS_IO_INDIRECT, &b);
		if (rc)
			return rc;
		rc = bm_trunc_array(fs, ip, (uint32_t *)b->data,
				    sfs_geom(fs)->addr_per_block, start,
				    span / sfs_geom(fs)->addr_per_block,
				    level - 1, from, to, &sub, f);
		if (sub)
			sfs_meta_dirty(fs, b);
		sfs_cache_put(sfs_fs_cache(fs), b);
		if (rc)
			return rc;
	}
	return 0;
}

/* Free the blocks mapped at logical [from, to) and the indirect blocks
 * wholly inside; i_blocks follows. */
static int bm_free_range(struct sfs_fs *fs, struct sfs_inode *ip, uint64_t from,
			 uint64_t to)
{
	uint64_t a = sfs_geom(fs)->addr_per_block;
	struct bm_freer f = {0};
	bool changed = false;
	int rc;

	rc = bm_trunc_array(fs, ip, ip->d.i_block, SFS_NDIR_BLOCKS, 0, 1, 0,
			    from, to, &changed, &f);
	if (!rc)
		rc = bm_trunc_array(fs, ip, &ip->d.i_block[SFS_IND_BLOCK], 1,
				    SFS_NDIR_BLOCKS, a, 1, from, to, &changed,
				    &f);
	if (!rc)
		rc = bm_trunc_array(fs, ip, &ip->d.i_block[SFS_DIND_BLOCK], 1,
				    SFS_NDIR_BLOCKS + a, a * a, 2, from, to,
				    &changed, &f);
	if (!rc)
		rc = bm_trunc_array(fs, ip, &ip->d.i_block[SFS_TIND_BLOCK], 1,
				    SFS_NDIR_BLOCKS + a + a * a, a * a * a, 3,
				    from, to, &changed, &f);
	bm_free_flush(fs, &f);
	if (!rc)
		rc = f.rc;
	if (f.count)
		sfs_i_add_blocks(fs, ip, -(int64_t)f.count);
	ip->next_lblk = 0;
	ip->next_pblk = 0;
	if (changed || f.count) {
		int drc = sfs_inode_dirty(fs, ip);
		if (!rc)
			rc = drc;
	}
	return rc;
}

static int bm_truncate(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t from)
{
	return bm_free_range(fs, ip, from, UINT64_MAX);
}

/* PUNCH_HOLE on a block-mapped file (ext4_punch_hole ->
 * ext4_ind_remove_space): the blocks go, the tree shape stays. */
static int bm_punch(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t from,
		    uint32_t to)
{
	return bm_free_range(fs, ip, from, to);
}

struct bm_walker {
	int (*fn)(void *ctx, uint32_t lblk, sfs_blk_t pblk, uint32_t len,
		  bool meta);
	void *ctx;
	uint32_t run_l;  /* pending data run */
	sfs_blk_t run_p;
	uint32_t run_n;
};

static int bm_walk_flush(struct bm_walker *w)
{
	int rc = 0;

	if (w->run_n)
		rc = w->fn(w->ctx, w->run_l, w->run_p, w->run_n, false);
	w->run_n = 0;
	return rc;
}

static int bm_walk_data(struct bm_walker *w, uint32_t l, sfs_blk_t p)
{
	if (w->run_n && l == w->run_l + w->run_n && p == w->run_p + w->run_n) {
		w->run_n++;
		return 0;
	}
	int rc = bm_walk_flush(w);
	w->run_l = l;
	w->run_p = p;
	w->run_n = 1;
	return rc;
}

static int bm_walk_tree(struct sfs_fs *fs, struct sfs_inode *ip,
			struct bm_walker *w, sfs_blk_t p, int level,
			uint64_t base, uint64_t span)
{
	struct sfs_buf *b;
	int rc;

	if (!bm_valid(fs, p))
		return bm_bad_ptr(fs, ip, p);
	if (level == 0)
		return bm_walk_data(w, (uint32_t)base, p);
	rc = bm_walk_flush(w);
	if (!rc)
		rc = w->fn(w->ctx, (uint32_t)base, p, 1, true);
	if (rc)
		return rc;
	rc = sfs_cache_get(sfs_fs_cache(fs), p, SFS_IO_INDIRECT, &b);
	if (rc)
		return rc;
	uint64_t sub = span / sfs_geom(fs)->addr_per_block;
	for (uint32_t i = 0; i < sfs_geom(fs)->addr_per_block && !rc; i++) {
		sfs_blk_t q = sfs_le32(((uint32_t *)b->data)[i]);
		if (q)
			rc = bm_walk_tree(fs, ip, w, q, level - 1,
					  base + i * sub, sub);
	}
	sfs_cache_put(sfs_fs_cache(fs), b);
	return rc;
}

static int bm_walk(struct sfs_fs *fs, struct sfs_inode *ip,
		   int (*fn)(void *ctx, uint32_t lblk, sfs_blk_t pblk,
			     uint32_t len, bool meta),
		   void *ctx)
{
	struct bm_walker w = {.fn = fn, .ctx = ctx};
	uint64_t a = sfs_geom(fs)->addr_per_block;
	uint64_t base[3] = {SFS_NDIR_BLOCKS, SFS_NDIR_BLOCKS + a,
			    SFS_NDIR_BLOCKS + a + a * a};
	uint64_t span[3] = {a, a * a, a * a * a};
	int rc = 0;

	if (sfs_i_fast_symlink(ip))
		return 0;
	for (uint32_t i = 0; i < SFS_NDIR_BLOCKS && !rc; i++)
		if (ip->d.i_block[i])
			rc = bm_walk_tree(fs, ip, &w, sfs_le32(ip->d.i_block[i]),
					  0, i, 1);
	for (int l = 0; l < 3 && !rc; l++) {
		sfs_blk_t p = sfs_le32(ip->d.i_block[SFS_IND_BLOCK + l]);
		if (p)
			rc = bm_walk_tree(fs, ip, &w, p, l + 1, base[l],
					  span[l]);
	}
	if (!rc)
		rc = bm_walk_flush(&w);
	return rc;
}

/* ext2_max_size: the tree's reach, capped so i_blocks (32-bit sectors,
 * metadata included) cannot overflow. */
static uint64_t bm_max_bytes(uint32_t bs)
{
	uint64_t a = bs / 4, bits = 0;
	uint64_t reach = SFS_NDIR_BLOCKS + a + a * a + a * a * a;
	uint64_t meta = 1 + (1 + a) + (1 + a + a * a);
	uint64_t limit;

	while ((1u << bits) < bs)
		bits++;
	limit = (((1ULL << 32) - 1) >> (bits - 9)) - meta;
	if (reach < limit)
		limit = reach;
	return limit << bits;
}

const struct sfs_map_ops sfs_blockmap_map_ops = {
    .name = "blockmap",
    .map = bm_map,
    .truncate = bm_truncate,
    .walk = bm_walk,
    .max_bytes = bm_max_bytes,
    .punch = bm_punch,
    /* no unwritten state, no shifting: ZERO_RANGE, COLLAPSE_RANGE and
     * INSERT_RANGE are -EOPNOTSUPP, as ext4 says for such files */
};

const struct sfs_alloc_preset sfs_alloc_blockmap = {
    .name = "blockmap",
    .help = "ext2: indirect block maps, goal-directed bitmap search "
	    "(ext2_new_block)",
    .map = &sfs_blockmap_map_ops,
    .place = &sfs_bitmap_alloc_ops,
};
