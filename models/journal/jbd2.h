/*
 * jbd2.h - the jbd2 log on disk, the layer beneath the journal policies
 * (ordered / writeback / journal): where journal block n lives, the journal
 * superblock, laying one transaction out in the log, replaying a log at
 * mount, listing it for `simfs inspect journal`, and creating journals.
 * Format and worked example: doc/journal-format.md; ext-format section 8.
 *
 *   sfs_jlog_open_dev(fs_bd, jdev, &log, &err)  raw device (before mount)
 *   sfs_jlog_open_fs(fs, jdev, &log, &err)      filesystem the engine holds
 *   sfs_jlog_write_txn(log, tid, start, ...)    descriptors, data, revokes,
 *                                               commit; returns next block
 *   sfs_jlog_write_super(log, &sb)              s_sequence, s_start, ...
 *   sfs_jlog_recover(log, &info)                jbd2's three passes
 *   sfs_jlog_mount_recover(fs_bd, jdev, ...)    the whole mount-time step
 *   sfs_jlog_walk / sfs_jlog_print              read-only listing
 *   sfs_jlog_close(log)
 *
 * A log is device-independent: journal block n is the n-th block of the
 * journal inode (internal; the map is read once at open) or block n of the
 * external journal device.  Journal I/O goes straight to the device, never
 * through the buffer cache: log blocks are written once and read only by
 * recovery, caching them would only evict useful blocks, and their order
 * against flushes is the transaction engine's to decide, not the cache's.
 *
 * A log borrows its devices (and the engine): sfs_jlog_close closes
 * nothing.  Not thread-safe: the caller serialises (the engine's lock).
 * All functions return 0 or -errno; bad on-disk input gives -EINVAL with a
 * one-line message (in *err where the function has one, else kept for
 * sfs_jlog_error) and never aborts.
 */
#ifndef SFS_JBD2_H
#define SFS_JBD2_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <glib.h>

#include "blockdev.h"
#include "format.h"
#include "journal.h"

struct sfs_fs;
struct sfs_jlog;

/* jbd2 feature bits simfs knows by name (journal superblock, big-endian). */
#define SFS_JBD2_COMPAT_CHECKSUM 0x1
#define SFS_JBD2_INCOMPAT_64BIT 0x2
#define SFS_JBD2_INCOMPAT_ASYNC_COMMIT 0x4
#define SFS_JBD2_INCOMPAT_CSUM_V2 0x8
#define SFS_JBD2_INCOMPAT_CSUM_V3 0x10
#define SFS_JBD2_INCOMPAT_FAST_COMMIT 0x20
/* the incompat features simfs reads and writes */
#define SFS_JBD2_INCOMPAT_KNOWN                                                \
	(SFS_JBD2_INCOMPAT_REVOKE | SFS_JBD2_INCOMPAT_64BIT |                  \
	 SFS_JBD2_INCOMPAT_ASYNC_COMMIT | SFS_JBD2_INCOMPAT_CSUM_V2 |          \
	 SFS_JBD2_INCOMPAT_CSUM_V3)
#define SFS_JBD2_COMPAT_KNOWN SFS_JBD2_COMPAT_CHECKSUM
#define SFS_JBD2_USERS_MAX 48

/* The journal superblock in host byte order (fields of ext-format 8.2). */
struct sfs_jlog_super {
	uint32_t blocksize;	 /* s_blocksize, bytes (fixed) */
	uint32_t maxlen;	 /* s_maxlen, journal blocks (fixed) */
	uint32_t first;		 /* s_first, first log block (fixed) */
	uint32_t sequence;	 /* s_sequence: oldest tid, or next tid */
	uint32_t start;		 /* s_start: log tail block, 0 = clean */
	int32_t errno_val;	 /* s_errno: non-zero = journal aborted */
	uint32_t feature_compat; /* s_feature_compat */
	uint32_t feature_incompat;
	uint32_t feature_ro_compat;
	uint8_t uuid[16];  /* s_uuid (fixed) */
	uint32_t nr_users; /* s_nr_users (fixed) */
};

/* ---- opening ---- */

/*
 * Open the journal of the filesystem on fs_bd, reading its superblock,
 * group descriptors and journal inode straight from the device (the engine
 * need not be able to open the image: this is the mount-time and inspect
 * path).  jdev is the external journal device, NULL for an internal one.
 * Validates the journal (inode: regular, links >= 1, >= 1024 blocks, no
 * holes; device: journal_dev superblock, UUIDs, one user) and the journal
 * superblock (magic, v2, block size, s_first/s_maxlen/s_start in range, no
 * feature simfs cannot honour).  -EINVAL with a message, -EIO, -ENOMEM.
 * Replayed blocks go straight to fs_bd.
 */
int sfs_jlog_open_dev(struct sfs_bdev *fs_bd, struct sfs_bdev *jdev,
		      struct sfs_jlog **out, char **err);
/*
 * The same for a filesystem the engine holds open (caller holds fs->lock):
 * the inode is read through fs->cache and, if block-mapped, mapped with
 * fs->map->walk; replayed blocks go through fs->cache so it never keeps a
 * stale copy (the caller must reload what it keeps in memory: fs->sb,
 * fs->gd, cached inodes -- hence mount recovers before sfs_fs_open).
 */
int sfs_jlog_open_fs(struct sfs_fs *fs, struct sfs_bdev *jdev,
		     struct sfs_jlog **out, char **err);
/* Free the log (devices and engine are borrowed: nothing is closed). */
void sfs_jlog_close(struct sfs_jlog *log);

uint32_t sfs_jlog_block_size(const struct sfs_jlog *log);
uint32_t sfs_jlog_first(const struct sfs_jlog *log);  /* s_first */
uint32_t sfs_jlog_maxlen(const struct sfs_jlog *log); /* s_maxlen */
/* Log blocks a transaction may use: s_maxlen - s_first. */
uint32_t sfs_jlog_capacity(const struct sfs_jlog *log);
bool sfs_jlog_is_external(const struct sfs_jlog *log);
/* The last problem a verb without an err argument met (a one-line
 * message), or NULL; valid until the next call on the log. */
const char *sfs_jlog_error(const struct sfs_jlog *log);
/* Block after n in the circular log (s_maxlen - 1 is followed by s_first). */
uint32_t sfs_jlog_next(const struct sfs_jlog *log, uint32_t n);
/* Device block holding journal block n (for inspect). -EINVAL if n is out
 * of range. */
int sfs_jlog_bmap(const struct sfs_jlog *log, uint32_t n, uint64_t *dev_blk);
/* Reserve host space under every journal block (sfs_bdev_reserve), so
 * that a commit never meets a full host disk.  0, -ENOSPC or -EIO. */
int sfs_jlog_reserve(struct sfs_jlog *log);

/* ---- the journal superblock ---- */

/*
 * Ask for jbd2 features in the copy of a clean log's superblock kept in
 * memory (no I/O): the next superblock write records them, and no
 * transaction counts before that write.  COMPAT_CHECKSUM is dropped on a
 * log with checksum v2/v3 (its own sums cover the commit), as ext4's
 * set_journal_csum_feature_set does.  A log that is not clean is left
 * alone.  The engine's open (sfs_jlog_open_fs) clears CHECKSUM (v1) and
 * ASYNC_COMMIT first, as ext4 mounted without journal_checksum and
 * journal_async_commit does.
 */
void sfs_jlog_want_features(struct sfs_jlog *log, uint32_t compat,
			    uint32_t incompat);
/* The superblock as last read or written (no I/O). */
void sfs_jlog_get_super(const struct sfs_jlog *log, struct sfs_jlog_super *out);
/*
 * Store the mutable fields of `in` (sequence, start, errno_val and the three
 * feature words) and write the superblock's block to the device (not
 * flushed).  The fixed fields of `in` are ignored.  -EINVAL for a start
 * outside [s_first, s_maxlen) other than 0, or a feature simfs cannot
 * write; -EIO.
 */
int sfs_jlog_write_super(struct sfs_jlog *log, const struct sfs_jlog_super *in);

/* ---- journal blocks ---- */

/* Read / write journal block n (n < s_maxlen), bs bytes, category
 * SFS_IO_JOURNAL, straight to the device.  -EINVAL, -EIO. */
int sfs_jlog_read_block(struct sfs_jlog *log, uint32_t n, void *buf);
int sfs_jlog_write_block(struct sfs_jlog *log, uint32_t n, const void *buf);
/*
 * Write count consecutive log blocks from n on (wrapping from s_maxlen - 1
 * to s_first; n must lie in the log area), merging device-contiguous runs
 * into single requests.  -EINVAL, -EIO.
 */
int sfs_jlog_write_blocks(struct sfs_jlog *log, uint32_t n, uint32_t count,
			  const void *buf);
/* Flush the journal device (and the filesystem device if different). */
int sfs_jlog_flush(struct sfs_jlog *log);

/* ---- writing transactions ---- */

/* Tags in one descriptor block: the kernel's rule, which keeps room for a
 * tag and a UUID (122 / 250 / 506 at 1 / 2 / 4 KiB). */
uint32_t sfs_jbd2_tags_per_desc(uint32_t bs);
/* Block numbers in one revoke block: (bs - 16) / 4. */
uint32_t sfs_jbd2_revokes_per_block(uint32_t bs);
/* Log blocks a transaction of n_blocks logged blocks and n_revoked revoke
 * records takes: descriptors + data + revoke blocks + 1 commit. */
uint32_t sfs_jbd2_txn_blocks(uint32_t bs, uint32_t n_blocks,
			     uint32_t n_revoked);
/* The same for this log's format: 64bit and checksummed tags are longer,
 * descriptor and revoke blocks end in a 4-byte checksum tail. */
uint32_t sfs_jlog_tags_per_desc(const struct sfs_jlog *log);
uint32_t sfs_jlog_revokes_per_block(const struct sfs_jlog *log);
uint32_t sfs_jlog_txn_blocks(const struct sfs_jlog *log, uint32_t n_blocks,
			     uint32_t n_revoked);

/* One block of a transaction: where it belongs and what recovery puts there. */
struct sfs_jtxn_block {
	sfs_blk_t home;	  /* filesystem block number */
	const void *data; /* bs bytes */
};
struct sfs_jtxn_blocks {
	const struct sfs_jtxn_block *v;
	uint32_t n;
};

/* sfs_jlog_write_txn flags */
#define SFS_JLOG_TXN_FLUSH 0x1 /* flush before and after the commit block */
/* with FLUSH: jbd2's asynchronous commit (journal_async_commit): the
 * commit block goes out with the other log blocks, no flush before it, one
 * after it.  Safe only with a commit checksum (v1, v2 or v3). */
#define SFS_JLOG_TXN_ASYNC 0x2

/*
 * Lay transaction `tid` out in the log from journal block start_block on:
 * revoke block(s) first (as jbd2 does), then descriptor blocks each
 * followed by its data blocks (escaped where they begin with the jbd2
 * magic), then one commit block stamped commit_time (NULL = 0) and, under
 * checksum v1 (COMPAT_CHECKSUM without v2/v3), carrying the crc32_be of
 * the descriptor and logged blocks (not the revoke blocks), as
 * jbd2_journal_commit_transaction does.  The first
 * revoke ever written sets the REVOKE feature in the journal superblock.
 * Does not touch s_start / s_sequence or the RECOVER bit: the caller's
 * protocol (ext-format 8.9).  On success *next_out = the block after the
 * commit block and *used_out = the log blocks used.  -EINVAL (bad
 * arguments, home block outside the filesystem), -ENOSPC (larger than the
 * log), -ENOMEM, -EIO.
 */
int sfs_jlog_write_txn(struct sfs_jlog *log, uint32_t tid, uint32_t start_block,
		       const struct sfs_jtxn_blocks *blocks,
		       const uint32_t *revoked, uint32_t n_revoked,
		       const struct timespec *commit_time, unsigned flags,
		       uint32_t *next_out, uint32_t *used_out);

/* ---- recovery ---- */

/* struct sfs_jrecover_info: journal.h */

/*
 * jbd2_journal_recover: if s_start != 0, scan from s_start expecting
 * s_sequence up to the first transaction without a commit block, collect
 * revoke records, replay every logged block not revoked by a transaction
 * with tid >= its own (un-escaping), flush the filesystem device, then
 * write s_start = 0 and s_sequence = end_tid + 1 and flush.  Does not touch
 * the filesystem superblock (see sfs_jlog_mount_recover).  -EIO when a
 * block could not be read or written (the log is then left as it was, so a
 * retry sees the same transactions), -EINVAL for a corrupt revoke block.
 * With checksum v1 a commit block whose crc32_be does not match the
 * descriptor and logged blocks before it ends the log there (the
 * transaction did not commit: what makes async commit safe).
 * With checksum v2/v3 (doc/journal-format.md 2.1) as jbd2's recovery: a
 * bad descriptor or commit block sum ends the log there (n_csum_bad,
 * csum_end_block, csum_note; not an error), a bad logged copy is not
 * written home and a bad revoke block sum fails it (-EIO, the message in
 * sfs_jlog_error).
 */
int sfs_jlog_recover(struct sfs_jlog *log, struct sfs_jrecover_info *out);

/* sfs_jlog_mount_recover, the whole mount-time step: journal.h */

/* Set or clear RECOVER (needs_recovery) in the primary superblock on fs_bd
 * (not flushed).  -EINVAL if fs_bd holds no ext2 superblock, -EIO. */
int sfs_jbd2_set_recover(struct sfs_bdev *fs_bd, bool on);

/* ---- listing ---- */

/* One transaction found in the log, for a walk callback (arrays valid only
 * during the call). */
struct sfs_jtxn_info {
	uint32_t tid;
	uint32_t start_block;  /* journal block of its first block */
	uint32_t n_log_blocks; /* journal blocks it occupies */
	uint32_t n_desc;       /* descriptor blocks */
	uint32_t n_revoke_blocks;
	uint32_t n_logged;	/* tags: home blocks logged */
	const uint32_t *home;	/* [n_logged] home block numbers */
	const uint32_t *jblock; /* [n_logged] journal block of each copy */
	const uint16_t *tflags; /* [n_logged] tag flags (ESCAPE, ...) */
	uint32_t n_revoked;
	const uint32_t *revoked; /* [n_revoked] */
	bool committed;
	uint32_t commit_block; /* journal block of the commit (if committed) */
	uint64_t commit_sec;
	uint32_t commit_nsec;
};
typedef int (*sfs_jlog_walk_fn)(void *ctx, const struct sfs_jtxn_info *t);

/* sfs_jlog_walk flags */
#define SFS_JLOG_WALK_STALE                                                    \
	0x1 /* clean log: walk from s_first, taking the                        \
	     * tid found there (what debugfs logdump -O                        \
	     * shows); default: nothing when clean */

/*
 * Walk the log as recovery's scan pass sees it: each committed transaction
 * in order, then the trailing one without a commit block if any block of it
 * was found (committed = false; recovery ignores it).  fn returns non-zero
 * to stop (returned as is).  Read-only.  -EIO, -ENOMEM.
 */
int sfs_jlog_walk(struct sfs_jlog *log, unsigned flags, sfs_jlog_walk_fn fn,
		  void *ctx);
/* Print the journal superblock and the walk, one transaction a paragraph
 * (`simfs inspect journal`). */
int sfs_jlog_print(struct sfs_jlog *log, unsigned flags, FILE *f);

/* ---- creating journals (jbd2_mkfs.c) ---- */

/* mke2fs's default journal size in blocks for a filesystem of fs_blocks
 * blocks (ext2fs_default_journal_size); 0 = too small for a journal. */
uint32_t sfs_jbd2_default_blocks(uint64_t fs_blocks);

/* Where sfs_jbd2_add_internal puts the journal. */
enum sfs_jbd2_place {
	/* first free blocks after the middle group with the most free blocks
	 * of the three around the middle (mke2fs get_midpoint_journal_block;
	 * what e2fsprogs 1.41-1.42 did for ext3) */
	SFS_JBD2_PLACE_MIDDLE = 0,
	/* first free blocks of the filesystem: where mke2fs 1.47 really puts a
	 * block-mapped journal (its block-mapped fallocate ignores the goal),
	 * so the layout equals mke2fs's block for block; on an image with
	 * extents the journal is extent-mapped and aimed at the middle, as
	 * mke2fs does, whichever placement is asked */
	SFS_JBD2_PLACE_FIRST_FREE,
};

/*
 * Turn a freshly made ext2 image (sfs_mkfs) on bd into ext3: journal_blocks
 * (0 = sfs_jbd2_default_blocks) allocated as contiguously as the free space
 * allows from the placement's goal, block-mapped with IND/DIND/TIND blocks
 * right before the data they map, zeroed, journal superblock in block 0
 * (v2, s_first 1, s_sequence 1), inode 8 (0100600, 1 link, exact size and
 * i_blocks), has_journal, s_journal_inum 8 and the s_jnl_blocks backup in
 * the primary and backup superblocks.  Works through the engine (the image
 * is opened with sfs_fs_open before the feature bit is set); bd stays the
 * caller's.  -EINVAL (with *err: not ext2, already journaled, size out of
 * range), -ENOSPC, -EIO.
 */
int sfs_jbd2_add_internal(struct sfs_bdev *bd, uint32_t journal_blocks,
			  enum sfs_jbd2_place place, char **err);

/* A run of blocks of a new internal journal, in allocation order. */
struct sfs_jbd2_run {
	uint64_t start;
	uint32_t len;
};

/* Free blocks of group g, as the caller's descriptors count them. */
typedef uint32_t (*sfs_jbd2_free_fn)(void *ctx, uint32_t g);
/* Write one indirect block (bs bytes) of a block-mapped journal. */
typedef int (*sfs_jbd2_put_fn)(void *ctx, uint64_t blk, const void *data);

/*
 * The group whose first block mke2fs aims an extent-mapped journal at
 * (get_midpoint_journal_block; SFS_JBD2_PLACE_MIDDLE): log_flex is
 * s_log_groups_per_flex, 0 without flex_bg.
 */
uint32_t sfs_jbd2_midpoint_group(uint64_t blocks, uint32_t first, uint32_t bpg,
				 uint32_t groups, uint32_t log_flex,
				 sfs_jbd2_free_fn free_of, void *ctx);

/* Blocks a journal of n blocks takes: n extent-mapped, n + its indirect
 * blocks block-mapped. */
uint32_t sfs_jbd2_total_blocks(uint32_t n, uint32_t bs, bool extent);

/*
 * The second half of sfs_jbd2_add_internal for a caller that allocated
 * (and zeroed) the journal's blocks itself, as sfs_mkfs does on images
 * with group descriptor checksums: map a journal of n blocks onto runs
 * (struct sfs_jbd2_run, sfs_jbd2_total_blocks in all, in allocation
 * order): extent-mapped in the inode, or block-mapped with its indirect
 * blocks written through put; write the journal superblock; fill *d
 * (inode 8, no checksum).  0, -EINVAL (more extents than the inode
 * holds) or -EIO, with a message in *err.
 */
int sfs_jbd2_lay_out(struct sfs_bdev *bd, uint32_t bs, uint32_t inode_size,
		     uint32_t n, bool extent, GArray *runs,
		     const uint8_t uuid[16], uint32_t time, sfs_jbd2_put_fn put,
		     void *put_ctx, struct sfs_dinode *d, char **err);

/* has_journal, s_journal_inum 8 and the s_jnl_blocks backup of d in sb
 * (no checksum). */
void sfs_jbd2_set_internal(struct sfs_dsuper *sb, const struct sfs_dinode *d);

/*
 * Format jdev as an external journal (ext2 superblock with journal_dev at
 * byte 1024, journal superblock at block 1, or 2 with 1 KiB blocks, whole
 * device as log, one user: the filesystem) and point the filesystem on
 * fs_bd at it: has_journal, s_journal_inum 0, s_journal_uuid = the
 * device's UUID, s_journal_dev = devnum (the device number the kernel will
 * know it by, e.g. 0x0701 for loop1).  uuid = the device's UUID, NULL or
 * all zero = derived from the filesystem's UUID (deterministic).  Both
 * devices stay the caller's.  -EINVAL with *err, -EIO.
 */
int sfs_jbd2_make_external(struct sfs_bdev *jdev, struct sfs_bdev *fs_bd,
			   uint32_t devnum, const uint8_t *uuid, char **err);

#endif /* SFS_JBD2_H */
