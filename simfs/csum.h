/*
 * csum.h - ext4 metadata_csum: crc32c checksums of every metadata block
 * (doc/internals.md, "Metadata checksums").  With fs->csum false every
 * _set is a no-op and every _ok is true, so callers call them always.
 *
 * crc32c here is the raw CRC (ext4's ext4_chksum: the seed is the running
 * value, no final inversion); a checksum chain starts at fs->csum_seed.
 * Each _ok returns false on a mismatch; the caller reports it (-EIO and
 * the filesystem's error state, as ext4 does for EFSBADCRC).
 */
#ifndef SFS_CSUM_H
#define SFS_CSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format.h"

struct sfs_fs;

uint32_t sfs_crc32c(uint32_t crc, const void *buf, size_t len);
/* The kernel's crc16 (lib/crc16.c: CRC-16/ARC, reflected 0x8005), which
 * uninit_bg (gdt_csum) uses for group descriptors. */
uint16_t sfs_crc16(uint16_t crc, const void *buf, size_t len);

/* From the superblock in fs->sb: fs->csum and fs->csum_seed.  0, or
 * -EINVAL with *err (an unknown checksum type). */
int sfs_csum_setup(struct sfs_fs *fs, char **err);

/* superblock: s_checksum over its first 0x3FC bytes */
bool sfs_csum_super_ok(const struct sfs_dsuper *sb);
void sfs_csum_super_set(struct sfs_dsuper *sb);

/* group descriptor g (bg_checksum): crc32c with metadata_csum, crc16 with
 * uninit_bg alone (fs->gdt_csum); 0 with neither */
uint16_t sfs_csum_group(struct sfs_fs *fs, uint32_t g,
			const struct sfs_dgroup *gd);
/* bitmaps: the checksum of a group's block (inode = false) or inode
 * bitmap, checked against and stored into descriptor g */
bool sfs_csum_bitmap_ok(struct sfs_fs *fs, uint32_t g, bool inode,
			const uint8_t *map);
void sfs_csum_bitmap_set(struct sfs_fs *fs, uint32_t g, bool inode,
			 const uint8_t *map);

/* inode slot of inode ino (fs->inode_size bytes), seeded by ino and the
 * slot's i_generation */
bool sfs_csum_inode_ok(struct sfs_fs *fs, sfs_ino_t ino,
		       const void *slot);
void sfs_csum_inode_set(struct sfs_fs *fs, sfs_ino_t ino, void *slot);

/* Are metadata checksums kept (metadata_csum)? */
bool sfs_csum_on(const struct sfs_fs *fs);

/* Seed of the blocks an inode owns (extent blocks, directory blocks). */
uint32_t sfs_csum_owner_seed(const struct sfs_fs *fs, sfs_ino_t ino,
			     uint32_t generation_le);

/* extent tree block: tail after eh_max entries */
bool sfs_csum_extent_ok(struct sfs_fs *fs, uint32_t seed,
			const uint8_t *blk);
void sfs_csum_extent_set(struct sfs_fs *fs, uint32_t seed, uint8_t *blk);

/* directory leaf: the bytes a leaf's entries may use (bs, or bs - 12) */
uint32_t sfs_csum_dir_end(const struct sfs_fs *fs);
/* A leaf ends in a well-formed tail? */
bool sfs_csum_dir_has_tail(const struct sfs_fs *fs, const uint8_t *blk);
bool sfs_csum_dir_ok(struct sfs_fs *fs, uint32_t seed,
		     const uint8_t *blk);
/* Count what sfs_csum_dir_ok of a leaf costs the modelled CPU without
 * computing it (a leaf verified before and unchanged since). */
void sfs_csum_dir_charge(struct sfs_fs *fs);
/* Write the tail (entries must end at sfs_csum_dir_end) and its sum. */
void sfs_csum_dir_set(struct sfs_fs *fs, uint32_t seed, uint8_t *blk);

/* htree node or root: count/limit at count_off; the tail after limit */
uint32_t sfs_csum_dx_limit_cut(const struct sfs_fs *fs); /* 1 or 0 */
bool sfs_csum_dx_ok(struct sfs_fs *fs, uint32_t seed, const uint8_t *blk,
		    uint32_t count_off);
void sfs_csum_dx_set(struct sfs_fs *fs, uint32_t seed, uint8_t *blk,
		     uint32_t count_off);

/* xattr block at block number blk */
bool sfs_csum_xattr_ok(struct sfs_fs *fs, sfs_blk_t blk,
		       const uint8_t *data);
void sfs_csum_xattr_set(struct sfs_fs *fs, sfs_blk_t blk, uint8_t *data);

#endif /* SFS_CSUM_H */
