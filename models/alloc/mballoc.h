/*
 * mballoc.h - ext4's multi-block allocator as a placement model
 * (alloc=mballoc, models/alloc/mballoc.c; doc/mballoc.md).
 *
 * Its tunables, each with ext4's default (fs/ext4/mballoc.h, sysfs
 * /sys/fs/ext4/<dev>/mb_*), and the counters and consistency check the
 * tests and inspect use.  All calls expect the fs lock held.
 */
#ifndef SFS_MBALLOC_H
#define SFS_MBALLOC_H

#include <stdint.h>

#include "alloc.h"

extern const struct sfs_alloc_ops sfs_mballoc_alloc_ops;

struct sfs_mballoc_params {
	uint32_t max_to_scan;	 /* mb_max_to_scan, extents: stop and take
				    the best found after this many (200) */
	uint32_t min_to_scan;	 /* mb_min_to_scan, extents: look at least at
				    this many before a good-enough one (10) */
	uint32_t order2_req;	 /* mb_order2_req: buddy (cr0) search for 2^N
				    requests with N + 1 >= this (2) */
	uint32_t stream_req;	 /* mb_stream_req, blocks: predicted sizes above
				    it use per-inode (stream) PAs (16) */
	uint32_t group_prealloc; /* mb_group_prealloc, blocks: locality-group
				    request size (512) */
};

/* Counters of alloc=mballoc. */
struct sfs_mballoc_counters {
	uint64_t buddy_builds;	    /* group buddies built or rebuilt */
	uint64_t buddy_build_bytes; /* bitmap bytes read by those builds */
	uint64_t allocs_pa_inode;   /* requests served from an inode PA */
	uint64_t allocs_pa_lg;	    /* requests served from the LG PA */
	uint64_t allocs_regular;    /* requests that ran the criteria passes */
	uint64_t allocs_goal;	    /* ... satisfied at the exact goal */
	uint64_t allocs_cr[4];	    /* ... satisfied in pass cr0..cr3 */
	uint64_t extents_scanned;   /* free extents measured (complex scan) */
	uint64_t pas_made;	    /* preallocations created */
	uint64_t pas_discarded;	    /* dropped with blocks left unused */
	uint64_t discard_all;	    /* ENOSPC: every PA discarded, retried */
	uint64_t pas_live;	    /* PAs held now (inode + LG) */
	uint64_t pa_blocks_live;    /* blocks they hold (free on disk) */
};

/* ext4's defaults into p. */
void sfs_mballoc_default_params(struct sfs_mballoc_params *p);
/* Replace a's tunables (a must run mballoc).  0, -EINVAL when a is another
 * model or a value is out of range (min_to_scan > max_to_scan, zero sizes,
 * order2_req > 16). */
int sfs_mballoc_set_params(struct sfs_alloc *a,
			   const struct sfs_mballoc_params *p);
/* Check every built, current group buddy against the bitmap plus the live
 * PAs (bits, free count, fragments, order counts) and copy the counters to
 * out (may be NULL).  0, -EINVAL if a is not mballoc, -EIO on a mismatch. */
int sfs_mballoc_check(struct sfs_alloc *a, struct sfs_mballoc_counters *out);
/*
 * Call fn for the unused part of every live PA: [start, start+len), owner
 * the inode of an inode PA or 0 for the locality group's.  Read-only (for
 * checkers).  0, -EINVAL if a is not mballoc, or fn's first non-zero.
 */
int sfs_mballoc_pa_walk(struct sfs_alloc *a,
			int (*fn)(void *ctx, sfs_blk_t start, uint32_t len,
				  sfs_ino_t owner),
			void *ctx);

#endif /* SFS_MBALLOC_H */
