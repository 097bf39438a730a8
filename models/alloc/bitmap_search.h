/*
 * bitmap_search.h - bitmap scanning shared by the placement models built
 * on ext2's search (bitmap.c, reservation.c).  Bits are LSB-first within
 * each byte, as in ext2's block bitmaps.
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

/* First zero bit in [from, end), or end; counts the bytes it examined in
 * a->words_scanned. */
uint32_t sfs_bm_next_free(struct sfs_alloc *a, const uint8_t *map,
			  uint32_t from, uint32_t end);

#endif /* SFS_BITMAP_SEARCH_H */
