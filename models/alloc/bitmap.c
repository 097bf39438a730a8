/*
 * bitmap.c - ext2's block placement: a goal-directed search of the block
 * bitmaps (ext2 grab_block, ext3 ext3_try_to_allocate without windows).
 *
 * For a request of `want` blocks near `goal`, starting in goal's group and
 * moving on through the following groups (wrapping), in each group:
 *   1. the goal itself if free;
 *   2. the first free block up to the next 64-block boundary;
 *   3. the first entirely free byte (8 aligned blocks) to the group's end,
 *      stepping back over up to 7 free blocks just before it so the
 *      allocation starts where the free run starts;
 *   4. any free block after the goal;
 * then the allocation extends block by block while the next bit is free,
 * up to `want`, without leaving the group.  Later groups are searched from
 * their first block.  Metadata and padding bits are set in the bitmaps, so
 * they are never handed out; a group whose bitmap is bad is skipped.
 * `words_scanned` counts bitmap bytes examined.
 */
#include <errno.h>
#include <string.h>

#include "model.h"
#include "models/alloc/bitmap_search.h"

int sfs_bm_grant(struct sfs_alloc *a, sfs_blk_t start, uint32_t n,
		 sfs_blk_t *start_out, uint32_t *got_out)
{
	int rc = sfs_blocks_mark_used(a->fs, start, n);

	if (rc)
		return rc;
	*start_out = start;
	*got_out = n;
	sfs_cpu_ctr(a->fs)->blocks_alloc += n;
	return 0;
}

uint32_t sfs_bm_next_free(struct sfs_alloc *a, const uint8_t *map,
			  uint32_t from, uint32_t end)
{
	uint32_t i = from;

	while (i < end && (i & 7)) {
		if (!sfs_bm_test(map, i))
			return i;
		i++;
	}
	while (i + 8 <= end) {
		a->words_scanned++;
		if (map[i >> 3] != 0xff)
			break;
		i += 8;
	}
	for (; i < end; i++)
		if (!sfs_bm_test(map, i))
			return i;
	return end;
}

/* First entirely free byte at or after `from`, stepped back over free
 * blocks before it (at most 7, not before `from`); or end. */
static uint32_t bm_free_byte(struct sfs_alloc *a, const uint8_t *map,
			     uint32_t from, uint32_t end)
{
	for (uint32_t i = (from + 7) & ~7u; i + 8 <= end; i += 8) {
		a->words_scanned++;
		if (map[i >> 3] != 0)
			continue;
		uint32_t s = i;
		while (s > from && s > i - 7 && !sfs_bm_test(map, s - 1))
			s--;
		return s;
	}
	return end;
}

/* Search one group's bitmap for a starting bit; UINT32_MAX if none. */
static uint32_t bm_search(struct sfs_alloc *a, const uint8_t *map,
			  uint32_t goal, uint32_t end)
{
	uint32_t b, lim;

	if (goal < end && !sfs_bm_test(map, goal))
		return goal;
	lim = MIN((goal + 63) & ~63u, end);
	b = sfs_bm_next_free(a, map, goal, lim);
	if (b < lim)
		return b;
	b = bm_free_byte(a, map, goal, end);
	if (b < end)
		return b;
	b = sfs_bm_next_free(a, map, goal, end);
	return b < end ? b : UINT32_MAX;
}

static int bitmap_new_blocks(struct sfs_alloc *a, struct sfs_inode *ip,
			     sfs_blk_t goal, uint32_t want,
			     sfs_blk_t *start_out, uint32_t *got_out)
{
	struct sfs_fs *fs = a->fs;
	uint32_t g0 = sfs_blk_group(fs, goal);
	uint32_t goal_bit = goal - sfs_group_first(fs, g0);

	(void)ip;
	for (uint32_t i = 0; i <= sfs_geom(fs)->groups; i++) {
		uint32_t g = (g0 + i) % sfs_geom(fs)->groups;
		uint32_t end = sfs_group_nblocks(fs, g);
		uint32_t from = i == 0 ? goal_bit : 0;
		struct sfs_buf *b;
		uint32_t bit, n;
		int rc;

		if (i == sfs_geom(fs)->groups && goal_bit == 0)
			break; /* the first group was searched whole */
		if (i == sfs_geom(fs)->groups)
			from = 0, end = goal_bit; /* wrap: its head */
		if (sfs_group_desc(fs, g)->bg_free_blocks_count == 0 ||
		    sfs_group_bad(fs, g, false))
			continue;
		rc = sfs_block_bitmap(fs, g, &b);
		if (rc)
			return rc;
		bit = bm_search(a, b->data, from, end);
		if (bit == UINT32_MAX) {
			sfs_cache_put(sfs_fs_cache(fs), b);
			continue;
		}
		n = sfs_bm_run(b->data, bit, want, sfs_group_nblocks(fs, g));
		sfs_cache_put(sfs_fs_cache(fs), b);
		return sfs_bm_grant(a, sfs_group_first(fs, g) + bit, n,
				    start_out, got_out);
	}
	return -ENOSPC;
}

const struct sfs_alloc_ops sfs_bitmap_alloc_ops = {
	.name = "bitmap",
	.new_blocks = bitmap_new_blocks,
};
