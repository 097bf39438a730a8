/*
 * model.h - the narrow door a model comes in by: all that a placement,
 * mapping or journal model (models/alloc/, models/journal/) may see of the
 * engine.  Models include this header and never fs_priv.h; struct sfs_fs
 * stays opaque to them.
 *
 * What a model may use:
 *   geometry     sfs_geom(fs): block size and its log, blocks and inodes
 *                per group, group count, first data block, blocks count,
 *                addresses per block, inode size; sfs_flex_size
 *   groups       sfs_group_desc (a descriptor, read-only), sfs_blk_group,
 *                sfs_group_first, sfs_group_nblocks, sfs_block_bitmap,
 *                sfs_group_bad (a group whose bitmap is bad: skip it)
 *   blocks       sfs_blocks_mark_used / _free / _release, and placement
 *                through sfs_alloc_blocks (a mapping model asking for room)
 *   buffers      the cache (sfs_fs_cache and cache.h's sfs_cache_*),
 *                sfs_meta_dirty for a changed metadata block
 *   inodes       struct sfs_inode: d (the on-disk image, whose i_block
 *                holds the map), ino, the goal state next_lblk/next_pblk
 *                and alloc_state (the placement model's own); the other
 *                members are the engine's.  sfs_inode_dirty writes d back.
 *   superblock   sfs_fs_super (read-only), sfs_fs_add_incompat
 *   measurement  stats (stats.h), the CPU model's counters (sfs_cpu_ctr),
 *                the clock (fs.h's sfs_fs_clock, sfs_now)
 *   checksums    csum.h
 *   errors       sfs_fs_error (enter the sticky error state), sfs_fs_failed
 *
 * The engine fills struct sfs_geom once at mount, after checking the
 * superblock (mount.c, check_geometry); it does not change afterwards.  The
 * accessors live in model.c.  Every function here expects fs->lock held,
 * as all of fs_priv.h does.
 */
#ifndef SFS_MODEL_H
#define SFS_MODEL_H

#include <glib.h>

#include "alloc.h"
#include "cache.h"
#include "fs.h"

struct sfs_dir_index; /* dir.c */
struct sfs_da_inode;  /* delalloc.c */

/* The filesystem's shape, fixed at mount (the superblock's fields). */
struct sfs_geom {
	uint32_t bs;		   /* block size, bytes */
	uint32_t bs_log;	   /* log2(bs) */
	uint32_t bpg;		   /* blocks per group */
	uint32_t ipg;		   /* inodes per group */
	uint32_t groups;	   /* block groups */
	uint32_t first_data_block; /* 1 with 1 KiB blocks, else 0 */
	uint32_t blocks_count;
	uint32_t addr_per_block; /* bs / 4: block numbers per block */
	uint32_t inode_size;	 /* 128 or 256 */
};

/* The geometry of fs.  struct sfs_fs begins with it (fs_priv.h checks),
 * so the pointer is fs's own and the call costs nothing. */
static inline const struct sfs_geom *sfs_geom(const struct sfs_fs *fs)
{
	return (const struct sfs_geom *)(const void *)fs;
}

/* A run of blocks. */
struct sfs_run {
	sfs_blk_t start;
	uint32_t n;
};

/*
 * Work the CPU model charges that no layer counted already (cpucount.c,
 * doc/cpu-model.md).  Plain increments at the site; protected by fs->lock.
 */
struct sfs_cpu_ctr {
	uint64_t blocks_mapped; /* map() calls: logical blocks looked up */
	uint64_t blocks_alloc;	/* blocks handed out by the placement model */
	uint64_t extent_steps;	/* extent nodes searched, mballoc extents
				   measured */
	uint64_t dir_entries;	/* directory records examined */
	uint64_t dir_blocks;	/* directory blocks fetched by dir.c (leaves
				   and index blocks) */
	uint64_t csum_bytes;	/* bytes crc32c'd for metadata_csum (csum.c) */
	/* not charged: what a change costs the extent tree, for its tests */
	uint64_t extent_reads; /* extent tree blocks fetched (extent.c) */
	uint64_t extent_dirty; /* extent tree blocks dirtied (extent.c) */
};
/* The counters of fs. */
struct sfs_cpu_ctr *sfs_cpu_ctr(struct sfs_fs *fs);

/* One in-memory inode.  Protected by fs->lock. */
struct sfs_inode {
	sfs_ino_t ino;
	struct sfs_dinode d; /* on-disk image (little-endian fields) */
	int refs;	     /* sfs_iget references */
	int opens;	     /* sfs_open without sfs_release */
	bool deleted;	     /* freed on disk; only stale references remain */
	bool orphan;	     /* on the on-disk orphan list (fs->orphans) */
	GList orphan_link;   /* its place there (data = self) */
	bool linkable;	     /* made by sfs_tmpfile and not linked yet:
				sfs_link may give it its first name */
	struct sfs_dir_index *dindex; /* directories: name index, or NULL */
	/* ext2 allocation goal state (ext2_find_goal's i_next_alloc_*): */
	uint32_t next_lblk;  /* logical block after the last one allocated */
	sfs_blk_t next_pblk; /* physical block after the last one allocated */
	void *alloc_state;   /* placement model's per-inode state, or NULL */
	GList lru_link;	     /* in fs->ilru while unreferenced (data = self) */
	GArray *dirty_runs;  /* struct sfs_run: data and indirect blocks
				dirtied since the last fsync, or NULL */
	/* read-ahead stream (sfs_read in inode.c; doc/cache.md): */
	uint64_t ra_next_off; /* byte after the last read: a read there is
				 sequential */
	uint32_t ra_win;      /* newest window, blocks; 0: no stream */
	uint32_t ra_mark;     /* its first logical block: a read reaching it
				 issues the next window */
	uint32_t ra_end;      /* logical block after the newest window */
	/* delayed allocation (delalloc.c): */
	struct sfs_da_inode *da; /* blocks written but not placed, or NULL */
	bool da_flush_on_close;	 /* auto_da_alloc: truncated to zero, place
				    its data when it is closed */
	uint32_t jtid;		 /* journal: the transaction of its last
				    change (ext4's i_sync_tid) */
	/* regular files: how a write puts data in (inode.c), chosen at the
	 * first write after the inode is read in or made; NULL: not yet */
	const struct sfs_write_ops *wops;
};

/* ---- inodes ---- */
static inline uint32_t sfs_i_mode(const struct sfs_inode *ip)
{
	return sfs_le16(ip->d.i_mode);
}
static inline bool sfs_i_isdir(const struct sfs_inode *ip)
{
	return (sfs_i_mode(ip) & SFS_S_IFMT) == SFS_S_IFDIR;
}
static inline bool sfs_i_isreg(const struct sfs_inode *ip)
{
	return (sfs_i_mode(ip) & SFS_S_IFMT) == SFS_S_IFREG;
}
static inline bool sfs_i_islnk(const struct sfs_inode *ip)
{
	return (sfs_i_mode(ip) & SFS_S_IFMT) == SFS_S_IFLNK;
}
uint64_t sfs_i_size(const struct sfs_inode *ip);
/* Add delta fs blocks to i_blocks (kept in 512-byte sectors). */
void sfs_i_add_blocks(struct sfs_fs *fs, struct sfs_inode *ip, int64_t delta);
/* Is this a fast symlink (target in i_block)? */
bool sfs_i_fast_symlink(const struct sfs_inode *ip);
/* Remember that blocks [blk, blk+n) of ip were dirtied (for its fsync). */
void sfs_inode_note_dirty(struct sfs_inode *ip, sfs_blk_t blk, uint32_t n);
/* Copy ip->d into its inode-table block and mark that block dirty. */
int sfs_inode_dirty(struct sfs_fs *fs, struct sfs_inode *ip);
/* The inode-table block holding inode ino. */
sfs_blk_t sfs_inode_block(struct sfs_fs *fs, sfs_ino_t ino);

/* Walk ip's map (its mapping model's walk op, struct sfs_map_ops). */
int sfs_map_walk(struct sfs_fs *fs, struct sfs_inode *ip,
		 int (*fn)(void *ctx, uint32_t lblk, sfs_blk_t pblk,
			   uint32_t len, bool meta),
		 void *ctx);

/* ---- groups and blocks (fs.c) ---- */
/* Groups per flex group (s_log_groups_per_flex, superblock byte 0x174);
 * 1 without flex_bg.  From SFS_FLEX_SIZE_DIR_ALLOC groups on, ext4 keeps
 * the first group of each flex group for directories and metadata
 * (EXT4_FLEX_SIZE_DIR_ALLOC_SCHEME). */
#define SFS_FLEX_SIZE_DIR_ALLOC 4
uint32_t sfs_flex_size(const struct sfs_fs *fs);
/* Group of a block, and the first block of a group. */
static inline uint32_t sfs_blk_group(const struct sfs_fs *fs, sfs_blk_t b)
{
	return (b - sfs_geom(fs)->first_data_block) / sfs_geom(fs)->bpg;
}
static inline sfs_blk_t sfs_group_first(const struct sfs_fs *fs, uint32_t g)
{
	return sfs_geom(fs)->first_data_block + g * sfs_geom(fs)->bpg;
}
/* Number of blocks in group g (the last may be short). */
uint32_t sfs_group_nblocks(const struct sfs_fs *fs, uint32_t g);
/* Group g's descriptor as kept in memory (the first 32 bytes). */
const struct sfs_dgroup *sfs_group_desc(const struct sfs_fs *fs, uint32_t g);
/* Block bitmap buffer of group g (caller puts it). */
int sfs_block_bitmap(struct sfs_fs *fs, uint32_t g, struct sfs_buf **out);
/* Is group g's block (inode false) or inode bitmap marked bad this mount
 * (a checksum mismatch, a read error, or its own metadata left free, as
 * ext4 marks BBITMAP_CORRUPT)?  Placement skips such a group. */
bool sfs_group_bad(const struct sfs_fs *fs, uint32_t g, bool inode);
/* Mark [start, start+n) used/free in bitmaps and group/super counts.
 * Freeing also discards the blocks from the cache. -EIO on bitmap read. */
int sfs_blocks_mark_used(struct sfs_fs *fs, sfs_blk_t start, uint32_t n);
int sfs_blocks_free(struct sfs_fs *fs, sfs_blk_t start, uint32_t n);
/* Clear the bits now, bypassing the journal's deferral (journal commit). */
int sfs_blocks_release(struct sfs_fs *fs, sfs_blk_t start, uint32_t n);
/*
 * Allocate up to want contiguous blocks near goal for inode ip (ip may be
 * NULL for filesystem metadata) through the placement model, and mark them
 * used.  -ENOSPC when nothing is free.
 */
int sfs_alloc_blocks(struct sfs_fs *fs, struct sfs_inode *ip, sfs_blk_t goal,
		     uint32_t want, sfs_blk_t *start_out, uint32_t *got_out);
/* The process of the write in progress, or 0 (ext2's goal colour). */
uint32_t sfs_fs_cur_pid(const struct sfs_fs *fs);

/* ---- buffers ---- */
/* The block cache every buffer comes from. */
struct sfs_cache *sfs_fs_cache(struct sfs_fs *fs);
/* A metadata buffer (bitmap, inode table, directory, indirect, xattr,
 * descriptor, superblock) changed: it joins the running transaction. */
void sfs_meta_dirty(struct sfs_fs *fs, struct sfs_buf *b);

/* ---- superblock ---- */
/* The in-memory copy of the primary superblock. */
const struct sfs_dsuper *sfs_fs_super(const struct sfs_fs *fs);
/* Set incompat feature flag(s) in it, dirtying it if they were clear. */
void sfs_fs_add_incompat(struct sfs_fs *fs, uint32_t flags);
/* Copy the in-memory group descriptors and superblock into their buffers
 * (only blocks whose bytes change are dirtied). */
int sfs_fs_flush_super_gdt(struct sfs_fs *fs);

/* ---- time, commits, errors ---- */
/* Current time for inode stamps: the clock's time since mount, anchored at
 * mount to wall time (real clock) or the image's last write (virtual). */
void sfs_now(struct sfs_fs *fs, struct timespec *out);
/* The driver's view of commits (fs.h, struct sfs_fs_driver): a no-op
 * without a driver. */
void sfs_fs_commit_started(struct sfs_fs *fs);
/* -EROFS if the filesystem is read-only or in the sticky error state. */
int sfs_check_writable(struct sfs_fs *fs);
/* Is the filesystem in the sticky error state? */
bool sfs_fs_failed(const struct sfs_fs *fs);
/* Enter the sticky error state (read-only from here), with a message. */
void sfs_fs_error(struct sfs_fs *fs, int err, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

#endif /* SFS_MODEL_H */
