/*
 * reservation.c - ext3's block reservation windows (the `reservation` mount
 * option, L2.6.32 fs/ext3/balloc.c), a placement model over ext2's bitmap
 * search (bitmap.c).
 *
 * Each regular file being written owns an in-memory window [start, end] of
 * blocks; windows of different files never overlap and are kept in one
 * per-filesystem array sorted by start.  Nothing is marked on disk.
 *
 *   rsv_new_blocks  goal's group first: a window is placed at or after the
 *                   goal in a gap between other windows, holding a free block
 *                   (rsv_find_window); blocks are taken only inside it
 *                   (rsv_take).  Used up, or the goal outside it: a new one.
 *                   Groups with free blocks <= goal size / 2 are skipped;
 *                   the goal group with fewer free blocks than the goal size
 *                   and no window is searched without one.  Every group
 *                   failing: the whole request is retried with ext2's search
 *                   and no window, so windows never cause a false ENOSPC.
 *   growth          a new window after one whose hits exceeded half its size
 *                   doubles the goal size, up to reservation_max; a request
 *                   of more blocks than the goal size raises it.
 *   rsv_release     last close, truncate, eviction: the window is dropped.
 *
 * Directories, symlinks and metadata (ip NULL) allocate with ext2's search
 * and ignore windows, as in ext3.  Knobs: reservation_window (goal size of a
 * first window, 8), reservation_max (1027).  Approximations: doc/
 * allocators.md.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "devmodel.h"
#include "model.h"
#include "models/alloc/bitmap_search.h"
#include "stats.h"

struct rsv_window {
	sfs_blk_t start; /* first block */
	sfs_blk_t end;	 /* last block, inclusive */
};

/* Per-inode state (ip->alloc_state). */
struct rsv_inode {
	struct rsv_window win;
	bool has_win;	    /* win is in the fs array */
	uint32_t goal_size; /* size of the next window, blocks */
	uint32_t hits;	    /* blocks allocated from win */
};

/* The knobs (rsv_knobs). */
struct rsv_params {
	uint32_t window; /* reservation_window: first window, blocks; 0 off */
	uint32_t max;	 /* reservation_max: largest window, blocks */
};

struct rsv_fs {
	GPtrArray *wins; /* struct rsv_inode *, sorted by win.start */
	struct sfs_rsv_counters ctr;
	struct rsv_params p;
};


/* Index of the first window whose end is >= b. */
static guint rsv_first_ending_after(struct rsv_fs *r, sfs_blk_t b)
{
	guint lo = 0, hi = r->wins->len;

	while (lo < hi) {
		guint mid = (lo + hi) / 2;
		struct rsv_inode *w = g_ptr_array_index(r->wins, mid);

		if (w->win.end < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void rsv_remove(struct rsv_fs *r, struct rsv_inode *st)
{
	if (!st->has_win)
		return;
	g_ptr_array_remove(r->wins, st);
	st->has_win = false;
}

static void rsv_insert(struct rsv_fs *r, struct rsv_inode *st)
{
	guint i = rsv_first_ending_after(r, st->win.start);

	g_ptr_array_insert(r->wins, (gint)i, st);
	st->has_win = true;
}

/*
 * Place a window of `size` blocks in group g at or after bit `from`, in a
 * gap between other windows, holding a free block.  The own window must be
 * out of the array.  true with *win set; false if the group has no room.
 */
static bool rsv_find_window(struct sfs_alloc *a, struct rsv_fs *r, uint32_t g,
			    const uint8_t *map, uint32_t from, uint32_t size,
			    struct rsv_window *win)
{
	struct sfs_fs *fs = a->fs;
	sfs_blk_t first = sfs_group_first(fs, g);
	uint32_t nb = sfs_group_nblocks(fs, g);
	uint32_t cur = from;

	for (;;) {
		guint i = rsv_first_ending_after(r, first + cur);
		uint32_t fr;

		/* skip windows overlapping [cur, cur + size) */
		for (; i < r->wins->len && cur < nb; i++) {
			struct rsv_inode *w = g_ptr_array_index(r->wins, i);

			if (w->win.start >= first + cur + size)
				break; /* the gap before w is large enough */
			cur = (uint32_t)(w->win.end + 1 - first);
		}
		if (cur >= nb)
			return false;
		fr = sfs_bm_next_free(a, map, cur, nb);
		if (fr >= nb)
			return false;
		if (fr < cur + size) {
			win->start = first + cur;
			win->end = first + MIN(cur + size, nb) - 1;
			return true;
		}
		cur = fr; /* restart the search at the free block */
	}
}

/* Take up to want free blocks in [from, end] (absolute, one group) from
 * the bitmap map of group g; 0 if none is free there. */
static uint32_t rsv_take(struct sfs_alloc *a, uint32_t g, const uint8_t *map,
			 sfs_blk_t from, sfs_blk_t end, uint32_t want,
			 sfs_blk_t *start_out)
{
	sfs_blk_t first = sfs_group_first(a->fs, g);
	uint32_t lim = (uint32_t)(end - first + 1);
	uint32_t bit = sfs_bm_next_free(a, map, (uint32_t)(from - first), lim);
	uint32_t n;

	if (bit >= lim)
		return 0;
	n = sfs_bm_run(map, bit, want, lim);
	*start_out = first + bit;
	return n;
}

static struct rsv_inode *rsv_state(struct rsv_fs *r, struct sfs_inode *ip)
{
	struct rsv_inode *st = ip->alloc_state;

	if (!st) {
		st = g_new0(struct rsv_inode, 1);
		st->goal_size = r->p.window;
		ip->alloc_state = st;
	}
	return st;
}

/*
 * Allocate in group g with the inode's window (ext3_try_to_allocate_with_
 * rsv).  goal_bit is UINT32_MAX for "no goal in this group".  0 with the
 * blocks marked, -ENOSPC if the group cannot hold a window with a free
 * block, -EIO.
 */
static int rsv_alloc_in_group(struct sfs_alloc *a, struct rsv_fs *r,
			      struct rsv_inode *st, uint32_t g,
			      uint32_t goal_bit, uint32_t want,
			      sfs_blk_t *start_out, uint32_t *got_out)
{
	struct sfs_fs *fs = a->fs;
	sfs_blk_t first = sfs_group_first(fs, g);
	uint32_t max = MAX(r->p.max, 1u);
	struct sfs_buf *b;
	sfs_blk_t goal = goal_bit == UINT32_MAX ? 0 : first + goal_bit;
	int rc;

	rc = sfs_block_bitmap(fs, g, &b);
	if (rc)
		return rc;
	for (int tries = 0; tries < 2; tries++) {
		bool inside = st->has_win && goal_bit != UINT32_MAX &&
			      goal >= st->win.start && goal <= st->win.end;
		uint32_t n;
		sfs_blk_t s;

		if (!st->has_win || (goal_bit != UINT32_MAX && !inside) ||
		    sfs_blk_group(fs, st->win.start) != g || tries > 0) {
			uint32_t from = goal_bit == UINT32_MAX ? 0 : goal_bit;

			if (st->has_win) {
				uint32_t old =
				    (uint32_t)(st->win.end - st->win.start + 1);

				if (st->hits > old / 2 && st->goal_size < max) {
					st->goal_size =
					    MIN(st->goal_size * 2, max);
					r->ctr.windows_grown++;
				}
				rsv_remove(r, st); /* replaced, not dropped */
			}
			if (st->goal_size < want)
				st->goal_size = MIN(want, max);
			if (!rsv_find_window(a, r, g, b->data, from,
					     st->goal_size, &st->win))
				break;
			rsv_insert(r, st);
			st->hits = 0;
			r->ctr.windows_made++;
			inside = goal_bit != UINT32_MAX &&
				 goal >= st->win.start && goal <= st->win.end;
		}
		n = rsv_take(a, g, b->data, inside ? goal : st->win.start,
			     st->win.end, want, &s);
		if (n == 0)
			continue; /* window used up: a new one */
		sfs_cache_put(sfs_fs_cache(fs), b);
		rc = sfs_bm_grant(a, s, n, start_out, got_out);
		if (rc)
			return rc;
		st->hits += n;
		r->ctr.allocs_in_window++;
		return 0;
	}
	sfs_cache_put(sfs_fs_cache(fs), b);
	return -ENOSPC;
}

/* ext2's search restricted to group g, no window (goal group with too
 * little room for one). */
static int rsv_plain_in_group(struct sfs_alloc *a, uint32_t g,
			      uint32_t goal_bit, uint32_t want,
			      sfs_blk_t *start_out, uint32_t *got_out)
{
	struct sfs_fs *fs = a->fs;
	sfs_blk_t first = sfs_group_first(fs, g);
	uint32_t nb = sfs_group_nblocks(fs, g);
	struct sfs_buf *b;
	uint32_t n;
	sfs_blk_t s;
	int rc;

	rc = sfs_block_bitmap(fs, g, &b);
	if (rc)
		return rc;
	n = rsv_take(a, g, b->data, first + goal_bit, first + nb - 1, want, &s);
	if (n == 0 && goal_bit > 0)
		n = rsv_take(a, g, b->data, first, first + goal_bit - 1, want,
			     &s);
	sfs_cache_put(sfs_fs_cache(fs), b);
	if (n == 0)
		return -ENOSPC;
	return sfs_bm_grant(a, s, n, start_out, got_out);
}

static int rsv_new_blocks(struct sfs_alloc *a, struct sfs_inode *ip,
			  sfs_blk_t goal, uint32_t want, sfs_blk_t *start_out,
			  uint32_t *got_out)
{
	struct sfs_fs *fs = a->fs;
	struct rsv_fs *r = a->priv;
	uint32_t g0 = sfs_blk_group(fs, goal);
	struct rsv_inode *st;
	int rc;

	if (!ip || !sfs_i_isreg(ip) || r->p.window == 0) {
		r->ctr.allocs_unreserved++;
		return sfs_bitmap_alloc_ops.new_blocks(a, ip, goal, want,
						       start_out, got_out);
	}
	st = rsv_state(r, ip);
	if (want > st->goal_size)
		st->goal_size = MIN(want, MAX(r->p.max, 1u));
	for (uint32_t i = 0; i < sfs_geom(fs)->groups; i++) {
		uint32_t g = (g0 + i) % sfs_geom(fs)->groups;
		uint32_t nfree =
		    sfs_le16(sfs_group_desc(fs, g)->bg_free_blocks_count);
		uint32_t goal_bit =
		    i == 0 ? (uint32_t)(goal - sfs_group_first(fs, g))
			   : UINT32_MAX;

		if (nfree == 0 || sfs_group_bad(fs, g, false))
			continue;
		if (i == 0 && !st->has_win && nfree < st->goal_size) {
			rc = rsv_plain_in_group(a, g, goal_bit, want, start_out,
						got_out);
			if (rc != -ENOSPC) {
				if (rc == 0)
					r->ctr.allocs_unreserved++;
				return rc;
			}
			continue;
		}
		if (i > 0 && nfree <= st->goal_size / 2)
			continue;
		rc = rsv_alloc_in_group(a, r, st, g, goal_bit, want, start_out,
					got_out);
		if (rc != -ENOSPC)
			return rc;
	}
	/* every group failed: retry without reservation (no false ENOSPC) */
	r->ctr.allocs_fallback++;
	return sfs_bitmap_alloc_ops.new_blocks(a, ip, goal, want, start_out,
					       got_out);
}

static void rsv_release(struct sfs_alloc *a, struct sfs_inode *ip)
{
	struct rsv_fs *r = a->priv;
	struct rsv_inode *st = ip->alloc_state;

	if (!st)
		return;
	if (st->has_win) {
		rsv_remove(r, st);
		r->ctr.windows_dropped++;
	}
	g_free(st);
	ip->alloc_state = NULL;
}

static int rsv_init(struct sfs_alloc *a)
{
	struct rsv_fs *r = g_new0(struct rsv_fs, 1);

	r->wins = g_ptr_array_new();
	r->p.window = 8;
	r->p.max = 1027;
	a->priv = r;
	return 0;
}

static int rsv_configure(struct sfs_alloc *a, const void *params, char **err)
{
	struct rsv_fs *r = a->priv;

	(void)err;
	r->p = *(const struct rsv_params *)params;
	return 0;
}

static int rsv_check_verb(struct sfs_alloc *a, char **err)
{
	int rc = sfs_reservation_check(a, NULL);

	if (rc)
		*err = g_strdup("reservation: window set broken (overlapping, "
				"unordered or across a group)");
	return rc;
}

static const struct sfs_knob rsv_knobs[] = {
    {
	.key = "reservation_window",
	.type = SFS_KNOB_U32,
	.offset = offsetof(struct rsv_params, window),
	.def = "8",
	.min = 0,
	.max = 32768,
	.metavar = "BLOCKS",
	.help = "alloc=reservation: first window of a file (ext3 "
		"EXT3_DEFAULT_RESERVE_BLOCKS; 0: no windows)",
    },
    {
	.key = "reservation_max",
	.type = SFS_KNOB_U32,
	.offset = offsetof(struct rsv_params, max),
	.def = "1027",
	.min = 1,
	.max = 32768,
	.metavar = "BLOCKS",
	.help = "alloc=reservation: largest window (ext3 2.6.32: 1027)",
    },
    {0},
};

/* Inodes still cached own their state; fs.c evicts them (release_inode)
 * before fini, but free whatever is left in the array anyway. */
static void rsv_fini(struct sfs_alloc *a)
{
	struct rsv_fs *r = a->priv;

	if (!r)
		return;
	g_ptr_array_free(r->wins, TRUE);
	g_free(r);
	a->priv = NULL;
}

static void rsv_stats(struct sfs_alloc *a, struct sfs_stats_writer *w)
{
	struct rsv_fs *r = a->priv;

	sfs_stats_put_u64(w, "windows_made", r->ctr.windows_made);
	sfs_stats_put_u64(w, "windows_grown", r->ctr.windows_grown);
	sfs_stats_put_u64(w, "windows_dropped", r->ctr.windows_dropped);
	sfs_stats_put_u64(w, "windows_live", r->wins->len);
	sfs_stats_put_u64(w, "allocs_in_window", r->ctr.allocs_in_window);
	sfs_stats_put_u64(w, "allocs_unreserved", r->ctr.allocs_unreserved);
	sfs_stats_put_u64(w, "allocs_fallback", r->ctr.allocs_fallback);
}

int sfs_reservation_check(struct sfs_alloc *a, struct sfs_rsv_counters *out)
{
	struct rsv_fs *r;

	if (!a || a->ops != &sfs_reservation_alloc_ops || !a->priv)
		return -EINVAL;
	r = a->priv;
	for (guint i = 0; i < r->wins->len; i++) {
		struct rsv_inode *w = g_ptr_array_index(r->wins, i);

		if (w->win.end < w->win.start ||
		    sfs_blk_group(a->fs, w->win.start) !=
			sfs_blk_group(a->fs, w->win.end))
			return -EIO;
		if (i > 0) {
			struct rsv_inode *p = g_ptr_array_index(r->wins, i - 1);
			if (p->win.end >= w->win.start)
				return -EIO; /* overlap or out of order */
		}
	}
	if (out) {
		*out = r->ctr;
		out->windows_live = r->wins->len;
	}
	return 0;
}

const struct sfs_alloc_ops sfs_reservation_alloc_ops = {
    .name = "reservation",
    .init = rsv_init,
    .fini = rsv_fini,
    .new_blocks = rsv_new_blocks,
    .release_inode = rsv_release,
    .stats = rsv_stats,
    .knobs = rsv_knobs,
    .params_size = sizeof(struct rsv_params),
    .configure = rsv_configure,
    .check = rsv_check_verb,
};

const struct sfs_alloc_preset sfs_alloc_reservation = {
    .name = "reservation",
    .help = "ext3: indirect block maps, bitmap search inside per-file "
	    "reservation windows (reservation_window=, reservation_max=)",
    .map = &sfs_blockmap_map_ops,
    .place = &sfs_reservation_alloc_ops,
};
