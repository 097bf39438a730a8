/*
 * mkfs.h - write a fresh ext2 image (the layout mke2fs makes for the same
 * features: see doc/internals.md and ext-format section 3).
 */
#ifndef SFS_MKFS_H
#define SFS_MKFS_H

#include <stdint.h>

#include "blockdev.h"

struct sfs_mkfs_params {
	uint64_t size_bytes;   /* 0 = the whole device */
	uint32_t block_size;   /* 1024, 2048 or 4096 (default 4096) */
	uint32_t inode_ratio;  /* bytes per inode (default 16384) */
	uint32_t inode_size;   /* 128 or 256 (default 256) */
	uint32_t reserved_pct; /* % of blocks reserved for root (default 5) */
	char label[17];        /* volume name, NUL-terminated */
	uint8_t uuid[16];      /* all zero = derive from seed */
	uint64_t seed;         /* for the UUID and hash seed; 0 = random */
	uint32_t time;         /* creation time stamp; 0 = now */
	uint32_t root_uid;     /* owner of the root directory (mke2fs -E */
	uint32_t root_gid;     /*   root_owner); default 0:0 as mke2fs */
	bool dir_index;        /* -O dir_index: htree directories (default
				  off: the image stays byte-identical to
				  mke2fs -O none,...) */
	bool resize_inode;     /* -O resize_inode: reserved GDT blocks and
				  the resize inode (inode 7), as mke2fs
				  (default off) */
	bool extent;	       /* -O extent: the root directory and
				  lost+found (and a journal added after)
				  mapped by extents */
	bool bit64;	       /* -O 64bit: 64-byte group descriptors
				  (still at most 2^32 blocks) */
	bool flex_bg;	       /* -O flex_bg: each flex group's bitmaps
				  and inode tables packed at its start */
	uint32_t log_groups_per_flex; /* -G 2^N groups a flex group (default
				  4: 16 groups, as mke2fs.conf) */
	uint32_t ro_compat;	      /* -O huge_file, dir_nlink, extra_isize,
					 metadata_csum, uninit_bg (gdt_csum):
					 these ro_compat bits on top of the fixed
					 ones (metadata_csum wins over uninit_bg,
					 as in mke2fs) */
	bool has_journal;	 /* -O has_journal, -t ext3, -j: an internal
				    journal (inode 8).  With group descriptor
				    checksums sfs_mkfs lays it out itself
				    (sfs_mkfs_makes_journal); otherwise the
				    caller adds it after sfs_mkfs
				    (sfs_jbd2_add_internal) */
	bool journal_external;	 /* -J device=: has_journal names a journal
				    the caller puts on another device */
	uint32_t journal_blocks; /* the journal sfs_mkfs lays out: blocks,
				  0 = mke2fs's default size */
};

/*
 * Apply a -O list (mke2fs spellings, comma-separated, "^" to remove) to p:
 * dir_index, has_journal, resize_inode, extent, flex_bg, 64bit,
 * huge_file, dir_nlink, extra_isize
 * switch;
 * metadata_csum, uninit_bg (gdt_csum) switch;
 * sparse_super, filetype, large_file, ext_attr are always on (their "^" is
 * refused); the other features mkfs does not lay out (inline_data,
 * bigalloc, meta_bg, ...) are refused, their "^" accepted.  0, or -EINVAL with
 * one message in *err (g_free it; err may be NULL) naming every name refused.
 */
int sfs_mkfs_parse_features(struct sfs_mkfs_params *p, const char *list,
			    char **err);

/*
 * -t TYPE as mke2fs 1.47 with its stock mke2fs.conf: TYPE's features
 * (base_features sparse_super, large_file, filetype, resize_inode,
 * dir_index, ext_attr; ext3 adds has_journal; ext4 has_journal, extent,
 * huge_file, flex_bg, metadata_csum, 64bit, dir_nlink, extra_isize),
 * 256-byte inodes, and the block size and bytes-per-inode of the size type of a
 * filesystem of size_bytes (0: the default type).  Replaces p's features;
 * the caller applies -b, -i, -I and -O after it.  0, or -EINVAL with a
 * message in *err (g_free it) for an unknown TYPE.
 */
int sfs_mkfs_set_type(struct sfs_mkfs_params *p, const char *type,
		      uint64_t size_bytes, char **err);

/*
 * 0 if sfs_mkfs can lay out the features p asks for together, else
 * -EINVAL with a message in *err (g_free it; err may be NULL): 64bit
 * needs extent, as in mke2fs.
 */
int sfs_mkfs_check_features(const struct sfs_mkfs_params *p, char **err);

/*
 * Does sfs_mkfs lay out the internal journal itself?  Yes with has_journal
 * (not external) on an image with group descriptor checksums (uninit_bg
 * or metadata_csum), where opening the image with the engine would
 * initialise the groups mke2fs leaves uninitialised; the caller then must
 * not call sfs_jbd2_add_internal.
 */
bool sfs_mkfs_makes_journal(const struct sfs_mkfs_params *p);

/* Defaults as listed above. */
void sfs_mkfs_defaults(struct sfs_mkfs_params *p);

/*
 * Format bd.  Writes superblock, backups, group descriptors, bitmaps,
 * zeroed inode tables, the root directory and lost+found, and the
 * journal where sfs_mkfs_makes_journal.  Returns 0,
 * -EINVAL (geometry out of range: message in *err, g_free it) or -EIO.
 */
int sfs_mkfs(struct sfs_bdev *bd, const struct sfs_mkfs_params *p,
	     char **err);

/*
 * Copy the primary superblock and group descriptors of the image on bd
 * into every backup group (s_block_group_nr set, s_state 0, as mke2fs's
 * closefs writes them), after a change made to the primary only, such as
 * adding the journal.  0, or a negative errno with a message in *err.
 */
int sfs_mkfs_sync_backups(struct sfs_bdev *bd, char **err);

#endif /* SFS_MKFS_H */
