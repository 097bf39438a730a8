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
	uint32_t ro_compat;    /* -O huge_file,dir_nlink,extra_isize: these
				  ro_compat bits on top of the fixed ones */
};

/*
 * Apply a -O list ("dir_index", "huge_file", "dir_nlink", "extra_isize",
 * each possibly with "^", comma-separated) to p.
 * 0, or -EINVAL with a message in *err (g_free it) for any other name.
 */
int sfs_mkfs_parse_features(struct sfs_mkfs_params *p, const char *list,
			    char **err);

/* Defaults as listed above. */
void sfs_mkfs_defaults(struct sfs_mkfs_params *p);

/*
 * Format bd.  Writes superblock, backups, group descriptors, bitmaps,
 * zeroed inode tables, the root directory and lost+found.  Returns 0,
 * -EINVAL (geometry out of range: message in *err, g_free it) or -EIO.
 */
int sfs_mkfs(struct sfs_bdev *bd, const struct sfs_mkfs_params *p,
	     char **err);

#endif /* SFS_MKFS_H */
