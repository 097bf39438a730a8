/*
 * alloc.h - the two allocator seams: placement and mapping.
 *
 * Placement decides which free blocks a request gets (ext2's goal search,
 * later ext3 reservation windows and ext4's mballoc).  Mapping decides how a
 * file records its blocks (ext2 indirect blocks, later ext4 extent trees).
 * Each is an ops table chosen by name from a registry (models/alloc/
 * registry.c); `alloc=NAME` picks a (mapping, placement) pair, declared as a
 * struct sfs_alloc_preset in the placement model's own file.
 *
 * A placement model's parameters are knobs (devmodel.h's struct sfs_knob,
 * the same table devices use) in its ops table.  The option parser, --help,
 * the man page, /.simfs/config and the presets find them by walking the
 * registry (sfs_alloc_place_nth); the engine hands the parsed parameters to
 * the model's configure verb at mount, and again when a live knob changes.
 * A new allocator is one file plus one line of registry.c; doc/extending.md
 * has the checklist.
 *
 * The engine calls the models only through doors: placement through
 * sfs_alloc_blocks (fs.c) and sfs_alloc_release_inode, mapping through the
 * sfs_map_* functions (model.c, declared in fs_priv.h) and sfs_bmap /
 * sfs_truncate (inode.c) built on them.  The models see the engine only
 * through model.h.  Code outside a model tells models apart by name
 * (sfs_alloc_is), never by an ops table's address.
 */
#ifndef SFS_ALLOC_H
#define SFS_ALLOC_H

#include <stdbool.h>
#include <stdint.h>

#include "format.h"

struct sfs_fs;
struct sfs_inode;
struct sfs_knob;
struct sfs_alloc;
struct sfs_stats_writer;

/* Placement model.  Members marked optional may be NULL. */
struct sfs_alloc_ops {
	const char *name;
	/* optional: set a->priv up; 0 or -errno */
	int (*init)(struct sfs_alloc *a);
	/* optional: free a->priv and any per-inode state still held */
	void (*fini)(struct sfs_alloc *a);
	/*
	 * Choose up to `want` (>= 1) contiguous free blocks near `goal` for
	 * inode ip (NULL for filesystem metadata) and mark them used with
	 * sfs_blocks_mark_used.  At least one block on success.
	 * Returns 0, -ENOSPC when no block is free, -EIO.
	 */
	int (*new_blocks)(struct sfs_alloc *a, struct sfs_inode *ip,
			  sfs_blk_t goal, uint32_t want, sfs_blk_t *start_out,
			  uint32_t *got_out);
	/* optional: ip was closed, truncated or freed: drop its state */
	void (*release_inode)(struct sfs_alloc *a, struct sfs_inode *ip);
	/* optional: the model's counters, written into the "alloc" stats
	 * section (called with the fs lock held) */
	void (*stats)(struct sfs_alloc *a, struct sfs_stats_writer *w);
	/* optional: the model's knobs (key == NULL ends; NULL: none), parsed
	 * into a params_size struct by the knob helpers of devmodel.h */
	const struct sfs_knob *knobs;
	size_t params_size;
	/*
	 * optional (required with knobs): take params (every knob set,
	 * range-checked; the model copies what it keeps).  Called after init
	 * at mount and with the fs lock held whenever a live knob changes.
	 * Checks what ranges cannot (knobs that contradict each other): 0, or
	 * -EINVAL with a one-line message in *err, the old values kept.
	 */
	int (*configure)(struct sfs_alloc *a, const void *params, char **err);
	/*
	 * optional: check the model's own state against the bitmaps (for the
	 * tests' invariant checks).  0, -EIO with a message in *err.
	 */
	int (*check)(struct sfs_alloc *a, char **err);
};

struct sfs_alloc {
	const struct sfs_alloc_ops *ops;
	struct sfs_fs *fs;
	void *priv;
	uint64_t words_scanned; /* bitmap words examined: allocator work */
};

/*
 * Mapping model: the file's logical -> physical map.  All members required.
 */
struct sfs_map_ops {
	const char *name;
	/*
	 * Map logical block lblk.  Sets *pblk_out (0 = hole).  Without
	 * create, *new_out tells a block that exists but is not initialised
	 * (an unwritten extent: *pblk_out 0, reads as zeros).  With create a
	 * hole is allocated (the new block is not zeroed here: the caller
	 * writes it), metadata blocks (indirect) are allocated and zeroed as
	 * needed, i_blocks and the allocation goal are updated.
	 * Returns 0, -EFBIG (lblk beyond the map's reach), -ENOSPC, -EIO.
	 */
	int (*map)(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t lblk,
		   bool create, sfs_blk_t *pblk_out, bool *new_out);
	/* Free every block mapped at lblk >= from, and metadata no longer
	 * needed; update i_blocks.  0 or -EIO. */
	int (*truncate)(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t from);
	/*
	 * Walk the map for inspect: fn is called per run of consecutive
	 * logical blocks at consecutive physical blocks (meta = indirect or
	 * tree block, with lblk = the first logical block it maps).
	 */
	int (*walk)(struct sfs_fs *fs, struct sfs_inode *ip,
		    int (*fn)(void *ctx, uint32_t lblk, sfs_blk_t pblk,
			      uint32_t len, bool meta),
		    void *ctx);
	/* Largest file size (bytes) this map can address at block size bs. */
	uint64_t (*max_bytes)(uint32_t bs);
	/*
	 * Range edits for fallocate(2), logical blocks [from, to), from < to.
	 * Each is optional: NULL means the mode is not supported for this
	 * mapping (-EOPNOTSUPP, as ext4 says for block-mapped files).  Each
	 * updates i_blocks and dirties the inode; 0, -ENOSPC (a new mapping
	 * block was needed: nothing changed), -EFBIG, -EIO.
	 *   punch     free the blocks mapped there (PUNCH_HOLE);
	 *   unwrite   make the mapped blocks unwritten: they stay allocated
	 *             and read as zeros (ZERO_RANGE; holes are the caller's);
	 *   collapse  free them and move every later block down by to - from
	 *             (COLLAPSE_RANGE);
	 *   insert    move every block at or after from up by to - from,
	 *             leaving a hole (INSERT_RANGE).
	 */
	int (*punch)(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t from,
		     uint32_t to);
	int (*unwrite)(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t from,
		       uint32_t to);
	int (*collapse)(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t from,
			uint32_t to);
	int (*insert)(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t from,
		      uint32_t to);
	/* optional: set a new file's, directory's or slow symlink's map up
	 * (the extent tree's empty root); NULL: an all-zero i_block is an
	 * empty map */
	void (*init_inode)(struct sfs_fs *fs, struct sfs_inode *ip);
};

/* A named allocator configuration: mapping + placement. */
struct sfs_alloc_preset {
	const char *name;
	const char *help;
	const struct sfs_map_ops *map;
	const struct sfs_alloc_ops *place;
};

/* Look a name up; NULL if unknown. */
const struct sfs_alloc_preset *sfs_alloc_find(const char *name);
/* "blockmap, ..." for error messages (static string, from the registry). */
const char *sfs_alloc_names(void);
/* Iterate: i = 0, 1, ... until NULL. */
const struct sfs_alloc_preset *sfs_alloc_nth(unsigned i);
/* Iterate the distinct placement models of the registry, in order. */
const struct sfs_alloc_ops *sfs_alloc_place_nth(unsigned i);
/* Is a's placement model the one named name (struct sfs_alloc_ops' name)?
 * How code outside a model tells models apart: never by the ops' address. */
bool sfs_alloc_is(const struct sfs_alloc *a, const char *name);
/* The allocator knob called key and the placement model that owns it
 * (*owner, may be NULL); NULL if no registered model has it. */
const struct sfs_knob *sfs_alloc_knob_find(const char *key,
					   const struct sfs_alloc_ops **owner);

extern const struct sfs_map_ops sfs_blockmap_map_ops;   /* models/alloc/blockmap.c */
extern const struct sfs_map_ops sfs_extent_map_ops;     /* models/alloc/extent.c */
extern const struct sfs_alloc_ops sfs_bitmap_alloc_ops; /* models/alloc/bitmap.c */
extern const struct sfs_alloc_ops sfs_reservation_alloc_ops; /* models/alloc/reservation.c */

/* Make ip (a new file, directory or slow symlink) extent-mapped with an
 * empty root; the first one sets the `extents` feature (models/alloc/
 * extent.c; the extent map's init_inode). */
void sfs_extent_init_root(struct sfs_fs *fs, struct sfs_inode *ip);
/*
 * fallocate on an extent-mapped file: every hole of logical blocks
 * [lblk, lblk+n) gets new blocks as unwritten extents (read as zeros until
 * written); i_blocks grows, i_size does not change.  -ENOSPC keeps what
 * was allocated before space ran out; -EFBIG past the map's reach.
 */
int sfs_extent_prealloc(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t lblk,
			uint32_t n);

/* Counters of alloc=reservation (models/alloc/reservation.c). */
struct sfs_rsv_counters {
	uint64_t windows_made;      /* windows placed */
	uint64_t windows_grown;     /* goal size doubled on a new window */
	uint64_t windows_dropped;   /* dropped on close, truncate, eviction */
	uint64_t windows_live;      /* windows held now */
	uint64_t allocs_in_window;  /* allocations taken inside a window */
	uint64_t allocs_unreserved; /* directories, metadata, small groups */
	uint64_t allocs_fallback;   /* every group failed: retried windowless */
};
/* Check the window set (ordered, non-overlapping, each in one group) and
 * copy the counters to out (may be NULL).  0, -EINVAL if a is not the
 * reservation model, -EIO on a broken invariant. */
int sfs_reservation_check(struct sfs_alloc *a, struct sfs_rsv_counters *out);

#endif /* SFS_ALLOC_H */
