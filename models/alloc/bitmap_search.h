/*
 * bitmap_search.h - bitmap scanning shared by the placement models built
 * on ext2's search (bitmap.c, reservation.c, nextfit.c).  Bits are LSB-first
 * within each byte, as in ext2's block bitmaps.
 */
#ifndef SFS_BITMAP_SEARCH_H
#define SFS_BITMAP_SEARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "alloc.h"

static inline bool sfs_bm_test(const uint8_t *map, uint32_t i)
{
	return map[i >> 3] & (1u << (i & 7));
}

/* The length of the run of free bits starting at free bit `bit`: at most
 * want, not reaching end. */
static inline uint32_t sfs_bm_run(const uint8_t *map, uint32_t bit,
				  uint32_t want, uint32_t end)
{
	uint32_t n = 1;

	while (n < want && bit + n < end && !sfs_bm_test(map, bit + n))
		n++;
	return n;
}

/* Mark [start, start + n) used and report it as the allocation (the
 * outputs of new_blocks, and the CPU model's count).  0 or -errno. */
int sfs_bm_grant(struct sfs_alloc *a, sfs_blk_t start, uint32_t n,
		 sfs_blk_t *start_out, uint32_t *got_out);

/* First zero bit in [from, end), or end; counts the bytes it examined in
 * a->words_scanned. */
uint32_t sfs_bm_next_free(struct sfs_alloc *a, const uint8_t *map,
			  uint32_t from, uint32_t end);

#endif /* SFS_BITMAP_SEARCH_H */
