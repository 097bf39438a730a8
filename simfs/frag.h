/*
 * frag.h - file and free-space fragmentation: a file's block map as
 * maximal runs (what `filefrag -v` shows), a whole-filesystem survey of
 * regular files, the free-space run histogram, and the "alloc_layout"
 * stats section.  Used by `simfs inspect ... extents|frag` and the stats.
 *
 * A run is a maximal stretch of logically and physically consecutive data
 * blocks, counted the same way for block-mapped and extent-mapped files;
 * indirect and extent-tree blocks are listed as metadata and never count
 * as runs.  Free runs are physical: one crossing a group boundary is one.
 */
#ifndef SFS_FRAG_H
#define SFS_FRAG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <glib.h>

#include "fs.h"
#include "stats.h"

struct sfs_inode;

/* One run of a file: data (merged) or a metadata block range. */
struct sfs_frag_run {
	uint32_t lblk;	/* first logical block (meta: first it maps) */
	sfs_blk_t pblk; /* first physical block */
	uint32_t len;	/* blocks */
	bool meta;	/* indirect / extent-tree block(s) */
};

/* Free space of the whole filesystem, from the block bitmaps. */
struct sfs_frag_free {
	struct sfs_hist runs; /* free runs by length (log2 buckets) */
	sfs_blk_t largest_at; /* first block of the longest run */
};

/*
 * The runs of ip in walk order: data runs merged to maximal ones, metadata
 * ranges as reported by the mapping model.  *out is a GArray of struct
 * sfs_frag_run (g_array_unref).  Caller holds fs->lock.  0 or -EIO.
 */
int sfs_frag_inode_runs(struct sfs_fs *fs, struct sfs_inode *ip, GArray **out);
/* Count the data runs (not metadata) in runs. */
uint32_t sfs_frag_count_extents(const GArray *runs);
/*
 * Scan every group's block bitmap.  Caller holds fs->lock.  The histogram
 * sum is the number of free blocks in the bitmaps.  0 or -EIO.
 */
int sfs_frag_free_scan(struct sfs_fs *fs, struct sfs_frag_free *out);

/*
 * `filefrag -v` for inode ino: its runs, metadata blocks, the extent
 * count, the average extent length and "N extents found".  Takes the lock.
 * 0, -ESTALE (inode not in use), -EINVAL (no block map: device, fast
 * symlink), -EIO.
 */
int sfs_frag_print_extents(struct sfs_fs *fs, sfs_ino_t ino, FILE *out);
/*
 * Every regular file (inode table order): files, extents, extents per file
 * (mean, max), average extent length, files by extent count; then the
 * free-space run histogram.  Takes the lock per inode.  0 or -EIO.
 */
int sfs_frag_print_summary(struct sfs_fs *fs, FILE *out);

/*
 * Stats source "alloc_layout" (ctx = fs): takes fs->lock.  Per-file values
 * cover only the regular files in the inode cache (fs->icache), free space
 * all the group bitmaps: cheap enough for a live mount.
 */
void sfs_frag_stats_source(void *ctx, struct sfs_stats_writer *w);

#endif /* SFS_FRAG_H */
