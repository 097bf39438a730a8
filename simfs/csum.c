/*
 * csum.c - ext4 metadata_csum checksums (the layouts: the kernel's
 * Documentation/filesystems/ext4/, "Checksums", and fs/ext4).  Every
 * sum is crc32c; Intel ISA-L's crc32_iscsi is the raw CRC, no inversion on
 * either side, which is what ext4_chksum computes.
 */
#include <errno.h>
#include <string.h>

#include <glib.h>
#include <isa-l/crc.h>

#include "csum.h"
#include "fs_priv.h"

uint32_t sfs_crc32c(uint32_t crc, const void *buf, size_t len)
{
	/* crc32_iscsi takes an int length; metadata blocks are <= 64 KiB */
	return crc32_iscsi((unsigned char *)buf, (int)len, crc);
}

/* Reflected 0x8005 table, built once (the kernel's crc16_table). */
static uint16_t crc16_table[256];

static void crc16_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint16_t c = (uint16_t)i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (uint16_t)((c >> 1) ^ 0xA001)
				    : (uint16_t)(c >> 1);
		crc16_table[i] = c;
	}
}

uint16_t sfs_crc16(uint16_t crc, const void *buf, size_t len)
{
	static gsize ready;
	const uint8_t *p = buf;

	if (g_once_init_enter(&ready)) {
		crc16_init();
		g_once_init_leave(&ready, 1);
	}
	while (len--)
		crc = (uint16_t)((crc >> 8) ^ crc16_table[(crc ^ *p++) & 0xFF]);
	return crc;
}

static uint32_t crc_le32(uint32_t crc, uint32_t v)
{
	uint32_t le = sfs_cpu_to_le32(v);

	return sfs_crc32c(crc, &le, 4);
}

static uint32_t crc_zeros(uint32_t crc, size_t n)
{
	static const uint8_t zero[4];

	return sfs_crc32c(crc, zero, n);
}

int sfs_csum_setup(struct sfs_fs *fs, char **err)
{
	const uint8_t *raw = (const uint8_t *)&fs->sb;

	fs->csum = sfs_le32(fs->sb.s_feature_ro_compat) &
		   SFS_FEATURE_RO_COMPAT_METADATA_CSUM;
	fs->csum_seed = 0;
	fs->gdt_csum = !fs->csum && (sfs_le32(fs->sb.s_feature_ro_compat) &
				     SFS_FEATURE_RO_COMPAT_GDT_CSUM);
	if (!fs->csum)
		return 0;
	if (raw[SFS_SB_CSUM_TYPE_OFF] != SFS_CSUM_TYPE_CRC32C) {
		*err = g_strdup_printf("metadata_csum: unknown checksum type "
				       "%u (only 1, crc32c, exists)",
				       raw[SFS_SB_CSUM_TYPE_OFF]);
		return -EINVAL;
	}
	if (sfs_le32(fs->sb.s_feature_incompat) &
	    SFS_FEATURE_INCOMPAT_CSUM_SEED)
		fs->csum_seed = sfs_get_le32(raw + SFS_SB_CSUM_SEED_OFF);
	else
		fs->csum_seed = sfs_crc32c(~0u, fs->sb.s_uuid, 16);
	return 0;
}

static bool sb_csum_on(const struct sfs_dsuper *sb)
{
	return sfs_le32(sb->s_feature_ro_compat) &
	       SFS_FEATURE_RO_COMPAT_METADATA_CSUM;
}

bool sfs_csum_super_ok(const struct sfs_dsuper *sb)
{
	const uint8_t *raw = (const uint8_t *)sb;

	return !sb_csum_on(sb) || sfs_get_le32(raw + SFS_SB_CSUM_OFF) ==
				      sfs_crc32c(~0u, raw, SFS_SB_CSUM_OFF);
}

void sfs_csum_super_set(struct sfs_dsuper *sb)
{
	uint8_t *raw = (uint8_t *)sb;

	if (sb_csum_on(sb))
		sfs_put_le32(raw + SFS_SB_CSUM_OFF,
			 sfs_crc32c(~0u, raw, SFS_SB_CSUM_OFF));
}

/* Bytes 32..desc_size of descriptor g (64bit images only). */
static uint8_t *gd_tail_of(const struct sfs_fs *fs, uint32_t g)
{
	return fs->gd_tail + (size_t)g * (fs->desc_size - sizeof(struct sfs_dgroup));
}

/* The high 16 bits of a bitmap checksum live in the descriptor's second
 * half (bg_block_bitmap_csum_hi at 0x38, bg_inode_bitmap_csum_hi at
 * 0x3A) when the descriptors reach that far, as ext4 keeps them. */
static uint8_t *bitmap_csum_hi(const struct sfs_fs *fs, uint32_t g,
			       bool inode)
{
	size_t off = inode ? offsetof(struct sfs_dgroup_hi,
				      bg_inode_bitmap_csum_hi)
			   : offsetof(struct sfs_dgroup_hi,
				      bg_block_bitmap_csum_hi);

	if (!fs->gd_tail || fs->desc_size < sizeof(struct sfs_dgroup) +
						 sizeof(struct sfs_dgroup_hi))
		return NULL;
	return gd_tail_of(fs, g) + off;
}

uint16_t sfs_csum_group(struct sfs_fs *fs, uint32_t g,
			const struct sfs_dgroup *gd)
{
	size_t off = offsetof(struct sfs_dgroup, bg_checksum);
	uint32_t c;

	fs->cpu_ctr.csum_bytes += fs->desc_size;
	if (!fs->csum) {
		/* ext4_group_desc_csum's crc16 branch: UUID, le32 group,
		 * the descriptor around bg_checksum (its last field: the
		 * 64bit half follows it) */
		uint32_t le = sfs_cpu_to_le32(g);
		uint16_t c16;
		if (!fs->gdt_csum)
			return 0;
		c16 = sfs_crc16(0xFFFF, fs->sb.s_uuid, 16);
		c16 = sfs_crc16(c16, &le, 4);
		c16 = sfs_crc16(c16, gd, off);
		if (fs->gd_tail && fs->desc_size > sizeof(*gd))
			c16 = sfs_crc16(c16, gd_tail_of(fs, g),
					fs->desc_size - sizeof(*gd));
		return c16;
	}
	c = crc_le32(fs->csum_seed, g);
	c = sfs_crc32c(c, gd, off);
	c = crc_zeros(c, 2);
	/* with 64bit the second half of the descriptor (fs->gd_tail, as
	 * read or as last set) follows the checksum field */
	if (fs->gd_tail && fs->desc_size > sizeof(*gd))
		c = sfs_crc32c(c, gd_tail_of(fs, g),
			       fs->desc_size - sizeof(*gd));
	return (uint16_t)(c & 0xFFFF);
}

static uint32_t bitmap_sum(struct sfs_fs *fs, bool inode,
			   const uint8_t *map)
{
	uint32_t n = inode ? fs->ipg / 8
			   : sfs_le32(fs->sb.s_clusters_per_group) / 8;

	fs->cpu_ctr.csum_bytes += n;

	return sfs_crc32c(fs->csum_seed, map, n);
}

bool sfs_csum_bitmap_ok(struct sfs_fs *fs, uint32_t g, bool inode,
			const uint8_t *map)
{
	uint16_t want;

	if (!fs->csum)
		return true;
	uint32_t sum = bitmap_sum(fs, inode, map);
	const uint8_t *hi = bitmap_csum_hi(fs, g, inode);

	want = sfs_le16(inode ? fs->gd[g].bg_inode_bitmap_csum
			      : fs->gd[g].bg_block_bitmap_csum);
	if (want != (uint16_t)(sum & 0xFFFF))
		return false;
	/* 32-byte descriptors keep the low 16 bits only */
	return !hi || (uint16_t)(hi[0] | hi[1] << 8) == (uint16_t)(sum >> 16);
}

void sfs_csum_bitmap_set(struct sfs_fs *fs, uint32_t g, bool inode,
			 const uint8_t *map)
{
	uint16_t v;

	if (!fs->csum)
		return;
	uint32_t sum = bitmap_sum(fs, inode, map);
	uint8_t *hi = bitmap_csum_hi(fs, g, inode);

	v = sfs_cpu_to_le16((uint16_t)(sum & 0xFFFF));
	if (hi) {
		hi[0] = (uint8_t)(sum >> 16);
		hi[1] = (uint8_t)(sum >> 24);
	}
	if (inode)
		fs->gd[g].bg_inode_bitmap_csum = v;
	else
		fs->gd[g].bg_block_bitmap_csum = v;
	fs->gd_dirty = true;
}

bool sfs_csum_on(const struct sfs_fs *fs)
{
	return fs->csum;
}

uint32_t sfs_csum_owner_seed(const struct sfs_fs *fs, sfs_ino_t ino,
			     uint32_t generation_le)
{
	uint32_t c = crc_le32(fs->csum_seed, ino);

	return sfs_crc32c(c, &generation_le, 4);
}

/* Does the slot's extra part reach i_checksum_hi? */
static bool inode_has_hi(const struct sfs_fs *fs, const uint8_t *slot)
{
	return fs->inode_size > SFS_GOOD_OLD_INODE_SIZE &&
	       sfs_get_le16(slot + offsetof(struct sfs_dinode, i_extra_isize)) >=
		   4;
}

static uint32_t inode_sum(struct sfs_fs *fs, sfs_ino_t ino,
			  const uint8_t *slot)
{
	const struct sfs_dinode *d = (const struct sfs_dinode *)slot;
	size_t lo = offsetof(struct sfs_dinode, i_checksum_lo);
	size_t hi = offsetof(struct sfs_dinode, i_checksum_hi);
	uint32_t c = sfs_csum_owner_seed(fs, ino, d->i_generation);

	fs->cpu_ctr.csum_bytes += fs->inode_size;

	c = sfs_crc32c(c, slot, lo);
	c = crc_zeros(c, 2);
	c = sfs_crc32c(c, slot + lo + 2, SFS_GOOD_OLD_INODE_SIZE - lo - 2);
	if (fs->inode_size > SFS_GOOD_OLD_INODE_SIZE) {
		size_t off = hi;

		c = sfs_crc32c(c, slot + SFS_GOOD_OLD_INODE_SIZE,
			       hi - SFS_GOOD_OLD_INODE_SIZE);
		if (inode_has_hi(fs, slot)) {
			c = crc_zeros(c, 2);
			off += 2;
		}
		c = sfs_crc32c(c, slot + off, fs->inode_size - off);
	}
	return c;
}

bool sfs_csum_inode_ok(struct sfs_fs *fs, sfs_ino_t ino,
		       const void *slot)
{
	const struct sfs_dinode *d = slot;
	uint32_t c, want;

	if (!fs->csum)
		return true;
	c = inode_sum(fs, ino, slot);
	want = sfs_le16(d->i_checksum_lo);
	if (inode_has_hi(fs, slot))
		want |= (uint32_t)sfs_le16(d->i_checksum_hi) << 16;
	else
		c &= 0xFFFF;
	return c == want;
}

void sfs_csum_inode_set(struct sfs_fs *fs, sfs_ino_t ino, void *slot)
{
	struct sfs_dinode *d = slot;
	uint32_t c;

	if (!fs->csum)
		return;
	c = inode_sum(fs, ino, slot);
	d->i_checksum_lo = sfs_cpu_to_le16((uint16_t)(c & 0xFFFF));
	if (inode_has_hi(fs, slot))
		d->i_checksum_hi = sfs_cpu_to_le16((uint16_t)(c >> 16));
}

/* Offset of an extent block's tail, or 0 if eh_max leaves no room. */
static uint32_t extent_tail(const struct sfs_fs *fs, const uint8_t *blk)
{
	uint32_t off = 12 + 12u * sfs_get_le16(blk + 4);

	return off + 4 <= fs->bs ? off : 0;
}

bool sfs_csum_extent_ok(struct sfs_fs *fs, uint32_t seed,
			const uint8_t *blk)
{
	uint32_t off;

	if (!fs->csum)
		return true;
	off = extent_tail(fs, blk);
	fs->cpu_ctr.csum_bytes += off;
	return off && sfs_get_le32(blk + off) == sfs_crc32c(seed, blk, off);
}

void sfs_csum_extent_set(struct sfs_fs *fs, uint32_t seed, uint8_t *blk)
{
	uint32_t off;

	if (!fs->csum)
		return;
	off = extent_tail(fs, blk);
	fs->cpu_ctr.csum_bytes += off;
	if (off)
		sfs_put_le32(blk + off, sfs_crc32c(seed, blk, off));
}

uint32_t sfs_csum_dir_end(const struct sfs_fs *fs)
{
	return fs->csum ? fs->bs - SFS_DIRENT_TAIL_LEN : fs->bs;
}

bool sfs_csum_dir_has_tail(const struct sfs_fs *fs, const uint8_t *blk)
{
	const uint8_t *t = blk + fs->bs - SFS_DIRENT_TAIL_LEN;

	return sfs_get_le32(t) == 0 && sfs_get_le16(t + 4) == SFS_DIRENT_TAIL_LEN &&
	       t[6] == 0 && t[7] == SFS_DIRENT_TAIL_FT;
}

bool sfs_csum_dir_ok(struct sfs_fs *fs, uint32_t seed,
		     const uint8_t *blk)
{
	uint32_t end = fs->bs - SFS_DIRENT_TAIL_LEN;

	if (!fs->csum)
		return true;
	fs->cpu_ctr.csum_bytes += end;
	return sfs_csum_dir_has_tail(fs, blk) &&
	       sfs_get_le32(blk + end + 8) == sfs_crc32c(seed, blk, end);
}

void sfs_csum_dir_charge(struct sfs_fs *fs)
{
	if (fs->csum)
		fs->cpu_ctr.csum_bytes += fs->bs - SFS_DIRENT_TAIL_LEN;
}

void sfs_csum_dir_set(struct sfs_fs *fs, uint32_t seed, uint8_t *blk)
{
	uint32_t end = fs->bs - SFS_DIRENT_TAIL_LEN;
	uint8_t *t = blk + end;

	if (!fs->csum)
		return;
	fs->cpu_ctr.csum_bytes += end;
	sfs_put_le32(t, 0);
	t[4] = SFS_DIRENT_TAIL_LEN;
	t[5] = 0;
	t[6] = 0;
	t[7] = SFS_DIRENT_TAIL_FT;
	sfs_put_le32(t + 8, sfs_crc32c(seed, blk, end));
}

uint32_t sfs_csum_dx_limit_cut(const struct sfs_fs *fs)
{
	return fs->csum ? 1 : 0;
}

/* Offset of an htree block's dx_tail, or 0 if it does not fit. */
static uint32_t dx_tail(const struct sfs_fs *fs, const uint8_t *blk,
			uint32_t count_off)
{
	uint32_t limit = sfs_get_le16(blk + count_off);
	uint32_t off = count_off + 8u * limit;

	return off + 8 <= fs->bs ? off : 0;
}

static uint32_t dx_sum(uint32_t seed, const uint8_t *blk, uint32_t count_off,
		       uint32_t tail)
{
	uint32_t count = sfs_get_le16(blk + count_off + 2);
	uint32_t c = sfs_crc32c(seed, blk, count_off + 8u * count);

	c = sfs_crc32c(c, blk + tail, 4); /* dt_reserved */
	return crc_zeros(c, 4);		  /* dt_checksum, as zero */
}

bool sfs_csum_dx_ok(struct sfs_fs *fs, uint32_t seed, const uint8_t *blk,
		    uint32_t count_off)
{
	uint32_t tail;

	if (!fs->csum)
		return true;
	tail = dx_tail(fs, blk, count_off);
	if (!tail || sfs_get_le16(blk + count_off + 2) > sfs_get_le16(blk + count_off))
		return false;
	fs->cpu_ctr.csum_bytes += tail + 8;
	return sfs_get_le32(blk + tail + 4) == dx_sum(seed, blk, count_off, tail);
}

void sfs_csum_dx_set(struct sfs_fs *fs, uint32_t seed, uint8_t *blk,
		     uint32_t count_off)
{
	uint32_t tail;

	if (!fs->csum)
		return;
	tail = dx_tail(fs, blk, count_off);
	if (!tail)
		return;
	fs->cpu_ctr.csum_bytes += tail + 8;
	sfs_put_le32(blk + tail, 0);
	sfs_put_le32(blk + tail + 4, dx_sum(seed, blk, count_off, tail));
}

static uint32_t xattr_sum(struct sfs_fs *fs, sfs_blk_t blk,
			  const uint8_t *data)
{
	size_t off = offsetof(struct sfs_dxattr_header, h_checksum);
	uint64_t nr = sfs_cpu_to_le64(blk);
	uint32_t c = sfs_crc32c(fs->csum_seed, &nr, 8);

	fs->cpu_ctr.csum_bytes += fs->bs;

	c = sfs_crc32c(c, data, off);
	c = crc_zeros(c, 4);
	return sfs_crc32c(c, data + off + 4, fs->bs - off - 4);
}

bool sfs_csum_xattr_ok(struct sfs_fs *fs, sfs_blk_t blk,
		       const uint8_t *data)
{
	const struct sfs_dxattr_header *h = (const void *)data;

	return !fs->csum || sfs_le32(h->h_checksum) == xattr_sum(fs, blk, data);
}

void sfs_csum_xattr_set(struct sfs_fs *fs, sfs_blk_t blk, uint8_t *data)
{
	struct sfs_dxattr_header *h = (void *)data;

	if (fs->csum)
		h->h_checksum = sfs_cpu_to_le32(xattr_sum(fs, blk, data));
}
