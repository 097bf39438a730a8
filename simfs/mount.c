/*
 * mount.c - assembling a mounted filesystem from an image and a config,
 * and taking it apart again: sfs_fs_open, sfs_fs_close, sfs_fs_abort.
 * The kernel's counterparts are ext4_fill_super and ext4_put_super
 * (fs/ext4/super.c; ext2_fill_super / ext2_put_super for ext2).
 *
 * sfs_fs_open builds, in this order (each step only adds to fs, so a
 * refusal anywhere unwinds through fs_free, which frees whatever exists):
 *   1. the measurement stack (setup_measurement): the clock (virtual or
 *      real), the stats, the timing device with its disk model and I/O
 *      scheduler over the backing device, the I/O log; from here fs->bd
 *      is the top of that stack;
 *   2. the superblock: a foreign feature is refused first, naming it
 *      (check_unsupported, as ext4_feature_set_ok); a read-write mount of
 *      a journaled image replays the log before trusting any metadata
 *      (the jbd2 layer); then the geometry against the device
 *      (check_geometry) and the features left after the replay
 *      (check_features), checksums (csum.c);
 *   3. the buffer cache (mem=) and its write-back policy (vm=, dirty_*);
 *   4. the group descriptors, checked as ext4_check_descriptors does
 *      (check_groups); the bitmaps of uninitialised groups are built as
 *      ext4_init_block_bitmap would on first use (init_uninit_groups);
 *   5. the inode cache and the allocator (alloc=: a mapping and a
 *      placement model, their knobs); the root inode must be a directory;
 *   6. the journal policy (data=), delayed allocation;
 *   7. read-write: the superblock says "mounted" (ext2: VALID cleared;
 *      journaled: needs_recovery set) before any other write, the orphan
 *      list is emptied (ext4_orphan_cleanup), and on a real clock the
 *      flusher thread starts.
 *
 * Invariants:
 *  - nothing is written before the image has passed every check, except
 *    the journal replay (the kernel's is at the same point) and, on
 *    read-write mounts, the bitmaps and zeroed inode-table tails of
 *    uninitialised groups (the kernel builds those bitmaps at first use,
 *    and its ext4lazyinit thread zeroes the tables after the mount);
 *  - a read-only mount writes nothing at all: no replay (a log that needs
 *    recovery refuses the mount), built bitmaps are pinned in the cache;
 *  - the stats sections appear in the order the sources are added here
 *    ("ops" first, "config" last), which is the order of the stats table
 *    and JSON;
 *  - at unmount everything goes out and the device is flushed while the
 *    superblock still says "mounted"; the final state follows in a write
 *    of its own (ext2_put_super's order), so a crash or failure between
 *    leaves an image not marked clean.
 *
 * The knobs a live mount may change afterwards are remount.c's; the
 * bookkeeping the mount hands over to (superblock write-back, bitmaps,
 * inodes, the flusher) is fs.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "csum.h"
#include "frag.h"
#include "fs_priv.h"
#include "iolog.h"
#include "journal.h"
#include "stats.h"
#include "timedev.h"

/* ---- refusing features ---- */

struct feat_name {
	int word; /* 0 compat, 1 incompat, 2 ro_compat */
	uint32_t mask;
	const char *name;
};

static const struct feat_name feat_names[] = {
    {0, 0x0001, "dir_prealloc"},
    {0, 0x0002, "imagic_inodes"},
    {0, 0x0004, "has_journal"},
    {0, 0x0008, "ext_attr"},
    {0, 0x0010, "resize_inode"},
    {0, 0x0020, "dir_index"},
    {0, 0x0040, "lazy_bg"},
    {0, 0x0080, "snapshot_exclude"},
    {0, 0x0100, "exclude_bitmap"},
    {0, 0x0200, "sparse_super2"},
    {0, 0x0400, "fast_commit"},
    {0, 0x0800, "stable_inodes"},
    {0, 0x1000, "orphan_file"},
    {1, 0x0001, "compression"},
    {1, 0x0002, "filetype"},
    {1, 0x0004, "needs_recovery"},
    {1, 0x0008, "journal_dev"},
    {1, 0x0010, "meta_bg"},
    {1, 0x0040, "extent"},
    {1, 0x0080, "64bit"},
    {1, 0x0100, "mmp"},
    {1, 0x0200, "flex_bg"},
    {1, 0x0400, "ea_inode"},
    {1, 0x1000, "dirdata"},
    {1, 0x2000, "metadata_csum_seed"},
    {1, 0x4000, "large_dir"},
    {1, 0x8000, "inline_data"},
    {1, 0x10000, "encrypt"},
    {1, 0x20000, "casefold"},
    {2, 0x0001, "sparse_super"},
    {2, 0x0002, "large_file"},
    {2, 0x0004, "btree_dir"},
    {2, 0x0008, "huge_file"},
    {2, 0x0010, "uninit_bg"},
    {2, 0x0020, "dir_nlink"},
    {2, 0x0040, "extra_isize"},
    {2, 0x0080, "snapshot"},
    {2, 0x0100, "quota"},
    {2, 0x0200, "bigalloc"},
    {2, 0x0400, "metadata_csum"},
    {2, 0x0800, "replica"},
    {2, 0x1000, "read-only"},
    {2, 0x2000, "project"},
    {2, 0x4000, "shared_blocks"},
    {2, 0x8000, "verity"},
    {2, 0x10000, "orphan_present"},
};

/* Features the engine handles now.  resize_inode and the ro_compat extras
 * mke2fs may set are tolerated: their blocks stay untouched.  htree
 * (dir_index) directories are used and kept through their index, unless
 * the mount says nodir_index (dir.c; doc/internals.md, "Hashed
 * directories"). */
#define ENGINE_COMPAT                                                          \
	(SFS_FEATURE_COMPAT_EXT_ATTR | SFS_FEATURE_COMPAT_RESIZE_INODE |       \
	 SFS_FEATURE_COMPAT_DIR_PREALLOC | SFS_FEATURE_COMPAT_HAS_JOURNAL |    \
	 SFS_FEATURE_COMPAT_DIR_INDEX)
#define ENGINE_INCOMPAT                                                        \
	(SFS_FEATURE_INCOMPAT_FILETYPE | SFS_FEATURE_INCOMPAT_EXTENTS |        \
	 SFS_FEATURE_INCOMPAT_CSUM_SEED | SFS_FEATURE_INCOMPAT_64BIT |        \
	 SFS_FEATURE_INCOMPAT_FLEX_BG)
#define ENGINE_RO_COMPAT (SFS_RO_COMPAT_SUPP | SFS_FEATURE_RO_COMPAT_GDT_CSUM)

/*
 * Refuse a superblock with any feature outside the engine's subset,
 * naming every one of them ("unsupported filesystem features 'a', 'b'").
 * needs_recovery is not judged here (check_features, after the journal
 * replay).  Runs before any other check, so that the message is about the
 * features and not about a structure they change.  0 or -EINVAL.
 */
static int check_unsupported(const struct sfs_dsuper *sb, char **err)
{
	uint32_t words[3] = {sfs_le32(sb->s_feature_compat),
			     sfs_le32(sb->s_feature_incompat),
			     sfs_le32(sb->s_feature_ro_compat)};
	const uint32_t supp[3] = {
	    ENGINE_COMPAT, ENGINE_INCOMPAT | SFS_FEATURE_INCOMPAT_RECOVER,
	    ENGINE_RO_COMPAT};
	static const char *wname[] = {"compat", "incompat", "ro_compat"};
	GString *names = g_string_new(NULL);
	unsigned n = 0;

	for (int w = 0; w < 3; w++) {
		uint32_t unknown = 0;

		for (uint32_t bad = words[w] & ~supp[w]; bad; bad &= bad - 1) {
			const char *name = NULL;

			for (size_t i = 0; i < G_N_ELEMENTS(feat_names); i++)
				if (feat_names[i].word == w &&
				    feat_names[i].mask == (bad & -bad))
					name = feat_names[i].name;
			if (!name) {
				unknown |= bad & -bad;
				continue;
			}
			g_string_append_printf(names, "%s'%s'", n++ ? ", " : "",
					       name);
		}
		if (unknown)
			g_string_append_printf(names, "%sunknown %s 0x%x",
					       n++ ? ", " : "", wname[w],
					       unknown);
	}
	if (n)
		*err = g_strdup_printf("unsupported filesystem feature%s %s",
				       n > 1 ? "s" : "", names->str);
	g_string_free(names, true);
	return n ? -EINVAL : 0;
}

/* After the journal replay: unsupported features, recovery still pending
 * (a read-only mount does not replay), and the filetype simfs needs.  0 or
 * -EINVAL. */
static int check_features(const struct sfs_dsuper *sb, char **err)
{
	int rc = check_unsupported(sb, err);

	if (rc)
		return rc;
	if (sfs_le32(sb->s_feature_incompat) & SFS_FEATURE_INCOMPAT_RECOVER) {
		*err = g_strdup("the journal needs recovery "
				"(needs_recovery is set); run e2fsck "
				"or mount with a journal policy");
		return -EINVAL;
	}
	if (!(sfs_le32(sb->s_feature_incompat) &
	      SFS_FEATURE_INCOMPAT_FILETYPE)) {
		*err = g_strdup("filesystem lacks the 'filetype' feature, "
				"which simfs requires");
		return -EINVAL;
	}
	return 0;
}

/* ---- checking the superblock and the descriptors ---- */

/* Validate the superblock's geometry against the device size. */
static int check_geometry(struct sfs_fs *fs, uint64_t dev_bytes, char **err)
{
	const struct sfs_dsuper *sb = &fs->sb;
	uint32_t log = sfs_le32(sb->s_log_block_size);
	uint64_t groups;
	bool is64;

	if (sfs_le16(sb->s_magic) != SFS_SUPER_MAGIC) {
		*err =
		    g_strdup_printf("not an ext2/3/4 filesystem (magic 0x%04x,"
				    " expected 0xef53)",
				    sfs_le16(sb->s_magic));
		return -EINVAL;
	}
	if (sfs_le32(sb->s_rev_level) != 1) {
		*err = g_strdup_printf("unsupported revision level %u "
				       "(only revision 1 is supported)",
				       sfs_le32(sb->s_rev_level));
		return -EINVAL;
	}
	if (log > SFS_MAX_BLOCK_LOG) {
		*err = g_strdup_printf("unsupported block size 2^%u KiB", log);
		return -EINVAL;
	}
	fs->bs_log = 10 + log;
	fs->bs = 1024u << log;
	fs->addr_per_block = fs->bs / 4;
	fs->first_data_block = sfs_le32(sb->s_first_data_block);
	fs->blocks_count = sfs_le32(sb->s_blocks_count);
	fs->bpg = sfs_le32(sb->s_blocks_per_group);
	fs->ipg = sfs_le32(sb->s_inodes_per_group);
	fs->inode_size = sfs_le16(sb->s_inode_size);
	fs->reserved_gdt = sfs_le16(sb->s_reserved_gdt_blocks);
	fs->desc_size = sfs_sb_desc_size(sb);
	is64 = sfs_le32(sb->s_feature_incompat) & SFS_FEATURE_INCOMPAT_64BIT;

	if (is64 && (fs->desc_size < SFS_DESC_SIZE_64BIT ||
		     fs->desc_size > SFS_DESC_SIZE_MAX ||
		     (fs->desc_size & (fs->desc_size - 1)))) {
		*err = g_strdup_printf("bad group descriptor size %u (64bit "
				       "wants a power of two from 64 to "
				       "1024)",
				       fs->desc_size);
		return -EINVAL;
	}
	if (is64 && (sb->s_blocks_count_hi || sb->s_r_blocks_count_hi ||
		     sb->s_free_blocks_hi)) {
		*err = g_strdup("more than 2^32 blocks (s_blocks_count_hi or "
				"another high half set) is not supported");
		return -EINVAL;
	}

	if (sfs_le32(sb->s_log_cluster_size) != log ||
	    sfs_le32(sb->s_clusters_per_group) != fs->bpg) {
		*err = g_strdup("cluster size differs from block size "
				"(bigalloc is not supported)");
		return -EINVAL;
	}
	if (fs->first_data_block != (fs->bs == 1024 ? 1u : 0u)) {
		*err = g_strdup_printf("bad first data block %u for %u-byte "
				       "blocks",
				       fs->first_data_block, fs->bs);
		return -EINVAL;
	}
	if (fs->bpg < 8 || fs->bpg > 8 * fs->bs || fs->bpg % 8) {
		*err = g_strdup_printf("bad blocks per group %u", fs->bpg);
		return -EINVAL;
	}
	if (fs->inode_size < SFS_GOOD_OLD_INODE_SIZE ||
	    fs->inode_size > fs->bs ||
	    (fs->inode_size & (fs->inode_size - 1))) {
		*err = g_strdup_printf("bad inode size %u", fs->inode_size);
		return -EINVAL;
	}
	if (fs->inode_size > sizeof(struct sfs_dinode)) {
		*err = g_strdup_printf("unsupported inode size %u (128 or 256)",
				       fs->inode_size);
		return -EINVAL;
	}
	if (fs->ipg == 0 || fs->ipg > 8 * fs->bs || fs->ipg % 8 ||
	    (fs->ipg * fs->inode_size) % fs->bs) {
		*err = g_strdup_printf("bad inodes per group %u", fs->ipg);
		return -EINVAL;
	}
	if (fs->blocks_count <= fs->first_data_block + 1) {
		*err = g_strdup_printf("bad block count %u", fs->blocks_count);
		return -EINVAL;
	}
	groups =
	    (fs->blocks_count - fs->first_data_block + fs->bpg - 1) / fs->bpg;
	fs->groups = (uint32_t)groups;
	if ((uint64_t)fs->ipg * groups != sfs_le32(sb->s_inodes_count)) {
		*err = g_strdup_printf("inode count %u is not %u groups x %u "
				       "inodes",
				       sfs_le32(sb->s_inodes_count), fs->groups,
				       fs->ipg);
		return -EINVAL;
	}
	if (sfs_le32(sb->s_first_ino) != SFS_FIRST_INO) {
		*err = g_strdup_printf("unsupported first inode %u (expected "
				       "11)",
				       sfs_le32(sb->s_first_ino));
		return -EINVAL;
	}
	if ((uint64_t)fs->blocks_count * fs->bs > dev_bytes) {
		*err = g_strdup_printf("device too small: the filesystem has "
				       "%u blocks of %u bytes (%llu bytes), "
				       "the device %llu bytes (truncated "
				       "image?)",
				       fs->blocks_count, fs->bs,
				       (unsigned long long)fs->blocks_count *
					   fs->bs,
				       (unsigned long long)dev_bytes);
		return -EINVAL;
	}
	fs->itb = fs->ipg * fs->inode_size / fs->bs;
	fs->desc_blocks =
	    (uint32_t)(((uint64_t)fs->groups * fs->desc_size + fs->bs - 1) /
		       fs->bs);
	return 0;
}

/* The high half of descriptor g (zeros without 64bit). */
static struct sfs_dgroup_hi gd_hi(const struct sfs_fs *fs, uint32_t g)
{
	struct sfs_dgroup_hi hi = {0};

	if (fs->gd_tail)
		memcpy(&hi, fs->gd_tail + (size_t)g * (fs->desc_size - 32),
		       sizeof(hi));
	return hi;
}

/*
 * Each group's bitmaps and inode table must lie inside the filesystem
 * after its GDT; without flex_bg inside the group itself.  With flex_bg
 * mke2fs packs those of a flex group at its start, so they may sit in
 * another group: the engine finds them through the descriptor and the
 * block bitmaps mark them used where they lie (doc/internals.md, "flex_bg
 * layout").  With 64bit the high halves must be zero: the engine keeps
 * 32-bit block numbers (check_geometry refuses more than 2^32 blocks) and
 * 16-bit counts (a group holds at most 8 x block-size blocks or inodes).
 */
static int check_groups(struct sfs_fs *fs, char **err)
{
	bool flex =
	    sfs_le32(fs->sb.s_feature_incompat) & SFS_FEATURE_INCOMPAT_FLEX_BG;

	for (uint32_t g = 0; g < fs->groups; g++) {
		const struct sfs_dgroup *gd = &fs->gd[g];
		struct sfs_dgroup_hi hi = gd_hi(fs, g);
		sfs_blk_t first = sfs_group_first(fs, g);
		sfs_blk_t end = first + sfs_group_nblocks(fs, g);
		sfs_blk_t bb = sfs_le32(gd->bg_block_bitmap);
		sfs_blk_t ib = sfs_le32(gd->bg_inode_bitmap);
		sfs_blk_t it = sfs_le32(gd->bg_inode_table);

		if (hi.bg_block_bitmap_hi || hi.bg_inode_bitmap_hi ||
		    hi.bg_inode_table_hi || hi.bg_free_blocks_count_hi ||
		    hi.bg_free_inodes_count_hi || hi.bg_used_dirs_count_hi ||
		    hi.bg_itable_unused_hi) {
			*err = g_strdup_printf("group %u: a high half of the "
					       "64-bit descriptor is set "
					       "(beyond 2^32 blocks or a "
					       "65535 count)",
					       g);
			return -EINVAL;
		}
		if (flex) {
			first = fs->first_data_block + 1 + fs->desc_blocks;
			end = fs->blocks_count;
		}
		if (bb < first || bb >= end || ib < first || ib >= end ||
		    it < first || it + fs->itb > end) {
			*err = g_strdup_printf(
			    "group %u: bitmap or inode table outside the %s", g,
			    flex ? "filesystem" : "group (flex_bg is off)");
			return -EINVAL;
		}
		if (sfs_le16(gd->bg_free_blocks_count) >
			sfs_group_nblocks(fs, g) ||
		    sfs_le16(gd->bg_free_inodes_count) > fs->ipg) {
			*err = g_strdup_printf("group %u: free counts exceed "
					       "the group's size",
					       g);
			return -EINVAL;
		}
		if ((fs->csum || fs->gdt_csum) &&
		    sfs_le16(gd->bg_checksum) != sfs_csum_group(fs, g, gd)) {
			*err = g_strdup_printf("group %u: descriptor checksum "
					       "0x%04x, computed 0x%04x",
					       g, sfs_le16(gd->bg_checksum),
					       sfs_csum_group(fs, g, gd));
			return -EINVAL;
		}
		/* INODE_ZEROED (0x4) is harmless and mke2fs sets it; the
		 * uninitialised-group flags need uninit_bg or metadata_csum
		 * (init_uninit_groups builds those groups' bitmaps), as the
		 * kernel ignores them without (ext4_has_group_desc_csum). */
		if (!fs->csum && !fs->gdt_csum &&
		    ((sfs_le16(gd->bg_flags) & 0x3) ||
		     sfs_le16(gd->bg_itable_unused))) {
			*err = g_strdup_printf("group %u: uninitialised-group "
					       "flags set without uninit_bg or "
					       "metadata_csum",
					       g);
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- uninitialised groups ---- */

/* Set block blk's bit in the bitmap of the group [first, first + n) if
 * it lies in that group. */
static void set_if_inside(uint8_t *map, sfs_blk_t first, uint32_t n,
			  sfs_blk_t blk)
{
	if (blk >= first && blk - first < n)
		sfs_bit_set(map, (uint32_t)(blk - first));
}

/* Build the bitmap block of an uninitialised group in b (zeroed first):
 * padding past the group's end set, and for BLOCK_UNINIT the group's own
 * metadata (superblock copy, GDT, reserved GDT, bitmaps, inode table). */
static int uninit_bitmap(struct sfs_fs *fs, uint32_t g, bool inode,
			 uint8_t *map, char **err)
{
	const struct sfs_dgroup *gd = &fs->gd[g];
	uint32_t n = inode ? fs->ipg : sfs_group_nblocks(fs, g);
	sfs_blk_t first = sfs_group_first(fs, g);
	uint32_t used = 0;

	memset(map, 0, fs->bs);
	for (uint32_t i = n; i < fs->bs * 8; i++)
		sfs_bit_set(map, i);
	if (inode)
		return 0;
	if (sfs_group_has_super(g, sfs_le32(fs->sb.s_feature_ro_compat) &
				       SFS_FEATURE_RO_COMPAT_SPARSE_SUPER))
		for (uint32_t i = 0; i < 1 + fs->desc_blocks + fs->reserved_gdt;
		     i++)
			sfs_bit_set(map, i);
	/* with flex_bg a group's bitmaps and inode table may lie in another
	 * group: only the blocks inside this one are marked here, as
	 * ext4_init_block_bitmap does (the free-count check below catches
	 * a group that holds metadata this rule does not see) */
	set_if_inside(map, first, n, sfs_le32(gd->bg_block_bitmap));
	set_if_inside(map, first, n, sfs_le32(gd->bg_inode_bitmap));
	for (uint32_t i = 0; i < fs->itb; i++)
		set_if_inside(map, first, n, sfs_le32(gd->bg_inode_table) + i);
	for (uint32_t i = 0; i < n; i++)
		used += sfs_bit_test(map, i);
	if (n - used != sfs_le16(gd->bg_free_blocks_count)) {
		*err = g_strdup_printf("group %u: uninitialised, %u blocks of "
				       "metadata, but %u of %u free",
				       g, used,
				       sfs_le16(gd->bg_free_blocks_count), n);
		return -EINVAL;
	}
	return 0;
}

/*
 * mke2fs leaves the inode tables of a new image for the kernel to zero
 * after the first mount (lazy_itable_init, the ext4lazyinit thread) and
 * says so by a missing INODE_ZEROED: the slots past the group's used
 * ones (the last bg_itable_unused, or all of an INODE_UNINIT group) may
 * hold anything.  Zero them here, once, at a read-write mount, so every
 * slot the engine may hand out reads as a never-used inode.  The blocks
 * go through the cache and reach the disk before the descriptors that
 * say INODE_ZEROED (init_uninit_groups syncs first).  A read-only mount
 * writes nothing: it leaves the tail as it is and slot_read (fs.c) answers a
 * never-used inode for it (sfs_inode_slot_unzeroed): ext4 trusts no byte
 * of a slot bg_itable_unused or INODE_UNINIT calls unused either.
 */
static uint32_t itable_tail_first(const struct sfs_fs *fs, uint32_t g)
{
	const struct sfs_dgroup *gd = &fs->gd[g];
	uint16_t fl = sfs_le16(gd->bg_flags);
	uint32_t unused;

	/* the flags and bg_itable_unused mean something only under group
	 * descriptor checksums (ext4_has_group_desc_csum) */
	if (!fs->csum && !fs->gdt_csum)
		return fs->ipg;
	unused = (fl & SFS_BG_INODE_UNINIT)
		     ? fs->ipg
		     : MIN(sfs_le16(gd->bg_itable_unused), fs->ipg);
	return fs->ipg - unused;
}

bool sfs_inode_slot_unzeroed(const struct sfs_fs *fs, sfs_ino_t ino)
{
	uint32_t g = (ino - 1) / fs->ipg;

	if (sfs_le16(fs->gd[g].bg_flags) & SFS_BG_INODE_ZEROED)
		return false;
	return (ino - 1) % fs->ipg >= itable_tail_first(fs, g);
}

static int zero_itable_tail(struct sfs_fs *fs, uint32_t g)
{
	const struct sfs_dgroup *gd = &fs->gd[g];
	uint32_t per_blk = fs->bs / fs->inode_size;
	uint32_t first = itable_tail_first(fs, g); /* first slot to zero */
	sfs_blk_t table = sfs_le32(gd->bg_inode_table);

	for (uint32_t i = first / per_blk; i < fs->itb; i++) {
		uint32_t from = i == first / per_blk ? first % per_blk : 0;
		struct sfs_buf *b;
		int rc = from ? sfs_cache_get(fs->cache, table + i,
					      SFS_IO_INODE, &b)
			      : sfs_cache_get_new(fs->cache, table + i,
						  SFS_IO_INODE, &b);

		if (rc)
			return rc;
		memset(b->data + (size_t)from * fs->inode_size, 0,
		       (size_t)(per_blk - from) * fs->inode_size);
		sfs_cache_dirty(fs->cache, b);
		sfs_cache_put(fs->cache, b);
	}
	return 0;
}

/*
 * metadata_csum images (mke2fs) leave groups uninitialised: BLOCK_UNINIT
 * or INODE_UNINIT, whose bitmap blocks hold nothing yet, and
 * bg_itable_unused.  Build those bitmaps as the kernel does on first use
 * (ext4_init_block_bitmap) and write them (a read-only mount pins them in
 * the cache instead), so the rest of the engine sees ordinary bitmaps.
 * The flags stay until the group is first used (group_first_use), as in
 * ext4; a later mount builds the bitmaps of still-flagged groups again.
 * A read-write mount zeroes the inode table's tail first (INODE_ZEROED);
 * a read-only one leaves it to slot_read.
 */
static int init_uninit_groups(struct sfs_fs *fs, char **err)
{
	bool any = false;
	int rc;

	for (uint32_t g = 0; g < fs->groups; g++) {
		struct sfs_dgroup *gd = &fs->gd[g];
		uint16_t fl = sfs_le16(gd->bg_flags);

		if (!(fl & (SFS_BG_INODE_UNINIT | SFS_BG_BLOCK_UNINIT)) &&
		    !gd->bg_itable_unused)
			continue;
		if (!(fl & SFS_BG_INODE_ZEROED) && !fs->ro) {
			rc = zero_itable_tail(fs, g);
			if (rc) {
				*err = g_strdup_printf("group %u: cannot zero "
						       "its inode table: %s",
						       g, g_strerror(-rc));
				return rc;
			}
			fl |= SFS_BG_INODE_ZEROED;
		}
		for (int k = 0; k < 2; k++) {
			bool inode = k == 1;
			struct sfs_buf *b;

			if (!(fl & (inode ? SFS_BG_INODE_UNINIT
					  : SFS_BG_BLOCK_UNINIT)))
				continue;
			rc = sfs_cache_get_new(
			    fs->cache,
			    sfs_le32(inode ? gd->bg_inode_bitmap
					   : gd->bg_block_bitmap),
			    SFS_IO_BITMAP, &b);
			if (rc)
				return rc;
			rc = uninit_bitmap(fs, g, inode, b->data, err);
			if (!rc) {
				sfs_csum_bitmap_set(fs, g, inode, b->data);
				if (fs->ro)
					sfs_cache_pin(fs->cache, b);
				else
					sfs_cache_dirty(fs->cache, b);
			}
			sfs_cache_put(fs->cache, b);
			if (rc)
				return rc;
		}
		gd->bg_flags = sfs_cpu_to_le16(fl);
		any = true;
	}
	if (!any || fs->ro)
		return 0;
	fs->gd_dirty = true;
	/* the bitmaps reach the disk before any descriptor that drops the
	 * flags (group_first_use, later) */
	rc = sfs_cache_sync(fs->cache);
	if (rc)
		*err = g_strdup_printf("cannot write the initialised bitmaps: "
				       "%s",
				       g_strerror(-rc));
	return rc;
}

/* ---- taking a mount apart ---- */

/* fs->icache's destructor of an in-memory inode. */
static void inode_free_cb(gpointer p)
{
	struct sfs_inode *ip = p;

	sfs_dir_index_free(ip->dindex);
	if (ip->dirty_runs)
		g_array_free(ip->dirty_runs, TRUE);
	g_free(ip);
}

/*
 * The inodes still cached when the filesystem goes may hold state outside
 * the table: delayed blocks (an unmount that could not write them: a
 * journaled filesystem in error) and placement state (a file given an xattr
 * block but never opened).  Dropped as on eviction, while the cache and
 * the placement model are still there.
 */
static void icache_drop_state(struct sfs_fs *fs)
{
	GHashTableIter it;
	gpointer ip;

	if (!fs->icache || !fs->alloc)
		return;
	g_hash_table_iter_init(&it, fs->icache);
	while (g_hash_table_iter_next(&it, NULL, &ip)) {
		sfs_da_drop(fs, ip);
		sfs_alloc_release_inode(fs, ip);
	}
}

/* Free whatever of fs exists, writing nothing: a failed open, the end of
 * sfs_fs_close, a simulated power cut (sfs_fs_abort). */
static void fs_free(struct sfs_fs *fs)
{
	sfs_flusher_stop(fs);
	icache_drop_state(fs);
	if (fs->jnl)
		sfs_jnl_free(fs->jnl); /* before the cache it pins buffers in */
	fs->jnl = NULL;
	if (fs->stats)
		sfs_stats_free(fs->stats);
	if (fs->bd && fs->iolog)
		sfs_timedev_set_log(fs->bd, NULL, NULL);
	if (fs->iolog)
		sfs_iolog_close(fs->iolog);
	if (fs->alloc) {
		if (fs->alloc->ops->fini)
			fs->alloc->ops->fini(fs->alloc);
		g_free(fs->alloc);
	}
	/* the LRU links live inside the inodes the table frees */
	g_queue_init(&fs->ilru);
	g_queue_init(&fs->orphans); /* its links live in the inodes */
	if (fs->icache)
		g_hash_table_destroy(fs->icache);
	if (fs->klookups)
		g_hash_table_destroy(fs->klookups);
	if (fs->kghosts)
		g_hash_table_destroy(fs->kghosts);
	if (fs->knameless)
		g_hash_table_destroy(fs->knameless);
	if (fs->cache)
		sfs_cache_free(fs->cache);
	if (fs->bd)
		sfs_bdev_close(fs->bd);
	if (fs->jdev)
		sfs_bdev_close(fs->jdev);
	if (fs->rand)
		g_rand_free(fs->rand);
	if (fs->clock)
		sfs_clock_free(fs->clock);
	g_free(fs->gd);
	g_free(fs->gbad);
	g_free(fs->gd_tail);
	g_free(fs->err_msg);
	sfs_cond_clear(&fs->commit_cond);
	sfs_mutex_clear(&fs->lock);
	g_free(fs);
}

/* ---- the stats sources and the parts the config chooses ---- */

static const char *const op_names[SFS_OP_COUNT] = {
    [SFS_OP_LOOKUP] = "lookup",	      [SFS_OP_GETATTR] = "getattr",
    [SFS_OP_SETATTR] = "setattr",     [SFS_OP_MKNOD] = "mknod",
    [SFS_OP_MKDIR] = "mkdir",	      [SFS_OP_SYMLINK] = "symlink",
    [SFS_OP_LINK] = "link",	      [SFS_OP_UNLINK] = "unlink",
    [SFS_OP_RMDIR] = "rmdir",	      [SFS_OP_RENAME] = "rename",
    [SFS_OP_READLINK] = "readlink",   [SFS_OP_OPEN] = "open",
    [SFS_OP_RELEASE] = "release",     [SFS_OP_READ] = "read",
    [SFS_OP_WRITE] = "write",	      [SFS_OP_FSYNC] = "fsync",
    [SFS_OP_READDIR] = "readdir",     [SFS_OP_STATFS] = "statfs",
    [SFS_OP_GETXATTR] = "getxattr",   [SFS_OP_SETXATTR] = "setxattr",
    [SFS_OP_LISTXATTR] = "listxattr", [SFS_OP_REMOVEXATTR] = "removexattr",
    [SFS_OP_SYNC] = "sync",	      [SFS_OP_FALLOCATE] = "fallocate",
    [SFS_OP_LSEEK] = "lseek",
};

/* Stats section "ops": the workload as the engine saw it. */
static void ops_source(void *ctx, struct sfs_stats_writer *w)
{
	struct sfs_fs *fs = ctx;
	struct sfs_bdev_counters dev;
	uint64_t total = 0;

	sfs_lock(fs);
	sfs_stats_begin(w, "by_type");
	for (int i = 0; i < SFS_OP_COUNT; i++) {
		sfs_stats_put_u64(w, op_names[i], fs->ops[i]);
		total += fs->ops[i];
	}
	sfs_stats_end(w);
	sfs_stats_put_u64(w, "total", total);
	sfs_stats_put_u64(w, "bytes_read", fs->bytes_read);
	sfs_stats_put_u64(w, "bytes_written", fs->bytes_written);
	sfs_stats_put_u64(w, "atime_updates", fs->atime_updates);
	sfs_bdev_counters(fs->bd, &dev);
	/* device bytes written per byte the workload wrote */
	sfs_stats_put_double(w, "write_amplification",
			     fs->bytes_written
				 ? (double)dev.bytes[SFS_IO_WRITE] /
				       (double)fs->bytes_written
				 : 0.0);
	sfs_stats_put_u64(w, "allocator_bitmap_bytes_scanned",
			  fs->alloc ? fs->alloc->words_scanned : 0);
	sfs_stats_put_u64(w, "clock_ns", sfs_clock_now_ns(fs->clock));
	sfs_unlock(fs);
}

static int setup_cache_policy(struct sfs_fs *fs, char **err)
{
	struct sfs_cache_policy p;
	int rc;

	rc = sfs_fs_cache_policy(&fs->cfg, &p, err);
	if (rc)
		return rc;
	sfs_cache_set_clock(fs->cache, fs->clock);
	rc = sfs_cache_set_policy(fs->cache, &p);
	if (rc)
		*err = g_strdup("inconsistent write-back knobs (dirty ratios "
				"or bytes)");
	return rc;
}

/* Stats section "journal". */
static void jnl_source(void *ctx, struct sfs_stats_writer *w)
{
	struct sfs_fs *fs = ctx;

	sfs_lock(fs);
	if (fs->jnl)
		sfs_jnl_stats(fs->jnl, w);
	sfs_unlock(fs);
}

/* Choose and open the journal policy (data=; default: ordered when the
 * image has a journal, else none), without writing anything. */
static int setup_journal(struct sfs_fs *fs, char **err)
{
	const struct sfs_config *cfg = &fs->cfg;
	bool has =
	    sfs_le32(fs->sb.s_feature_compat) & SFS_FEATURE_COMPAT_HAS_JOURNAL;
	const char *mode = cfg->journal;
	const struct sfs_jnl_ops *ops;
	struct sfs_jnl_params p = {0};
	int rc;

	if (!mode[0] || strcmp(mode, "auto") == 0)
		ops = sfs_jnl_auto(has);
	else
		ops = sfs_jnl_find(mode);
	if (!ops) {
		GString *valid = g_string_new(NULL);
		const struct sfs_jnl_ops *o;

		for (unsigned i = 0; (o = sfs_jnl_nth(i)); i++)
			g_string_append_printf(valid, "%s%s", i ? ", " : "",
					       o->name);
		*err = g_strdup_printf("unknown journal mode '%s' (valid: %s)",
				       mode, valid->str);
		g_string_free(valid, TRUE);
		return -EINVAL;
	}
	if (fs->ro)
		ops = sfs_jnl_auto(false); /* nothing is written */
	if (sfs_jnl_keeps_log(ops) && cfg->journal_dev[0]) {
		rc = sfs_bdev_open_file(cfg->journal_dev,
					cfg->direct ? SFS_BDEV_DIRECT : 0, 0,
					&fs->jdev);
		if (rc) {
			*err =
			    g_strdup_printf("cannot open journal device "
					    "'%s': %s",
					    cfg->journal_dev, g_strerror(-rc));
			return rc;
		}
	}
	p.commit_interval_ns = (sfs_ns_t)cfg->commit_s * SFS_NS_PER_S;
	p.max_txn_blocks = cfg->journal_max_txn;
	rc = sfs_jnl_open(fs, ops, &p, fs->jdev, &fs->jnl, err);
	if (rc)
		return rc;
	sfs_stats_add_source(fs->stats, "journal", jnl_source, fs);
	return 0;
}

static void config_put(void *ctx, const char *name, const char *value)
{
	sfs_stats_put_str(ctx, name, value);
}

/* Stats section "config": the knobs of the run (not where it writes), so
 * that simfs stats --diff shows what differed in the setup. */
static void config_source(void *ctx, struct sfs_stats_writer *w)
{
	struct sfs_fs *fs = ctx;
	struct sfs_config cfg;

	sfs_fs_get_config(fs, &cfg);
	sfs_config_each(&cfg, false, config_put, w);
}

/*
 * The clock, the timing device over the backing device, the I/O log and
 * the stats of one run, as cfg says.  On success fs->bd is the timing
 * device (which owns the device below).
 */
static int setup_measurement(struct sfs_fs *fs, char **err)
{
	const struct sfs_config *cfg = &fs->cfg;
	struct sfs_timedev_opts o = {0};
	struct sfs_bdev *top;
	int rc;

	if (!cfg->clock[0] || strcmp(cfg->clock, "virtual") == 0) {
		fs->clock = sfs_clock_new_virtual();
		o.mode = SFS_TIMEDEV_EMULATE; /* service time moves the clock */
	} else {
		rc = sfs_timedev_mode_parse(cfg->clock, &o.mode);
		if (rc) {
			*err = g_strdup_printf("unknown clock '%s' (valid: "
					       "virtual, account, emulate)",
					       cfg->clock);
			return rc;
		}
		fs->clock = sfs_clock_new_real();
		fs->time_base_ns = sfs_clock_wall_ns();
	}
	fs->stats = sfs_stats_new();
	sfs_stats_add_source(fs->stats, "ops", ops_source, fs);
	sfs_stats_add_source(fs->stats, "alloc_layout", sfs_frag_stats_source,
			     fs);
	if (strcmp(cfg->device, "none") == 0) {
		/* no timing device: what reached the backing device only */
		if (cfg->iolog_path[0]) {
			*err = g_strdup("iolog= needs a device model "
					"(device=none has none)");
			return -EINVAL;
		}
		sfs_stats_add_bdev(fs->stats, "device", fs->bd);
		return 0;
	}
	o.model = cfg->device[0] ? cfg->device : "ideal";
	o.sched = cfg->sched[0] ? cfg->sched : NULL;
	rc = sfs_timedev_new(fs->bd, fs->clock, &o, &top, err);
	if (rc)
		return rc;
	fs->bd = top;
	fs->defer_waits = !sfs_clock_is_virtual(fs->clock);
	if (cfg->iolog_path[0]) {
		rc = sfs_iolog_open(cfg->iolog_path, &fs->iolog);
		if (rc) {
			*err =
			    g_strdup_printf("cannot open the I/O log '%s': "
					    "%s",
					    cfg->iolog_path, g_strerror(-rc));
			return rc;
		}
		/* which clock the times are on (simfs plot names it) */
		sfs_iolog_note(fs->iolog, "clock", cfg->clock);
		sfs_timedev_set_log(fs->bd, sfs_iolog_timedev_log, fs->iolog);
	}
	sfs_stats_add_timedev(fs->stats, "device", fs->bd);
	return 0;
}

/* Stats section "alloc": the placement model's own counters. */
static void alloc_source(void *ctx, struct sfs_stats_writer *w)
{
	struct sfs_fs *fs = ctx;

	sfs_lock(fs);
	sfs_stats_put_str(w, "model", fs->cfg.alloc);
	if (fs->alloc && fs->alloc->ops->stats)
		fs->alloc->ops->stats(fs->alloc, w);
	sfs_unlock(fs);
}

static const char *const da_why_names[SFS_DA_NWHY] = {
    [SFS_DA_WRITEBACK] = "writeback", [SFS_DA_FSYNC] = "fsync",
    [SFS_DA_SYNC] = "sync",	      [SFS_DA_RENAME] = "rename",
    [SFS_DA_CLOSE] = "close",	      [SFS_DA_DIRECT] = "direct",
    [SFS_DA_ENOSPC] = "enospc",	      [SFS_DA_FALLOC] = "fallocate",
};

/* Stats section "delalloc": reservations and when blocks were placed. */
static void da_source(void *ctx, struct sfs_stats_writer *w)
{
	struct sfs_fs *fs = ctx;
	const struct sfs_da_counters *c = &fs->da_ctr;

	sfs_lock(fs);
	sfs_stats_put_bool(w, "enabled", fs->da_on);
	sfs_stats_put_bool(w, "auto_da_alloc", !fs->cfg.no_auto_da_alloc);
	sfs_stats_put_u64(w, "reserved_blocks", c->reserved_blocks);
	sfs_stats_put_u64(w, "placed_blocks", c->placed_blocks);
	sfs_stats_put_u64(w, "placed_runs", c->placed_runs);
	sfs_stats_put_double(w, "mean_run_blocks",
			     c->placed_runs ? (double)c->placed_blocks /
						  (double)c->placed_runs
					    : 0.0);
	sfs_stats_put_u64(w, "died_blocks", c->died_blocks);
	sfs_stats_put_u64(w, "failed_blocks", c->failed_blocks);
	sfs_stats_put_u64(w, "enospc_at_write", c->enospc);
	sfs_stats_put_u64(w, "delayed_blocks_now", fs->da_blocks);
	sfs_stats_put_u64(w, "meta_reserved_now", fs->da_meta);
	sfs_stats_put_u64(w, "meta_reserved_peak", c->meta_reserved_peak);
	for (int i = 0; i < SFS_DA_NWHY; i++) {
		char name[48];

		g_snprintf(name, sizeof(name), "placed_by_%s_blocks",
			   da_why_names[i]);
		sfs_stats_put_u64(w, name, c->flush_blocks[i]);
	}
	sfs_unlock(fs);
}

static int setup_alloc(struct sfs_fs *fs, char **err)
{
	const struct sfs_alloc_preset *p = sfs_alloc_find(fs->cfg.alloc);
	int rc;

	if (!p) {
		*err = g_strdup_printf("unknown allocator '%s' (valid: %s)",
				       fs->cfg.alloc, sfs_alloc_names());
		return -EINVAL;
	}
	fs->map = p->map;
	fs->alloc = g_new0(struct sfs_alloc, 1);
	fs->alloc->ops = p->place;
	fs->alloc->fs = fs;
	if (p->place->init) {
		rc = p->place->init(fs->alloc);
		if (rc) {
			*err = g_strdup_printf("allocator '%s' failed to "
					       "start: %s",
					       p->name, g_strerror(-rc));
			return rc;
		}
	}
	rc = sfs_alloc_configure(fs, &fs->cfg, err);
	if (rc)
		return rc;
	if (p->place->stats)
		sfs_stats_add_source(fs->stats, "alloc", alloc_source, fs);
	return 0;
}

/* ---- open and close ---- */

int sfs_fs_open(struct sfs_bdev *bd, const struct sfs_config *cfg,
		struct sfs_fs **out, char **err)
{
	struct sfs_fs *fs;
	char *msg = NULL;
	uint8_t raw[SFS_SUPER_SIZE];
	int rc;

	if (!bd || !cfg || !out) {
		if (bd)
			sfs_bdev_close(bd);
		return -EINVAL;
	}
	fs = g_new0(struct sfs_fs, 1);
	sfs_mutex_init(&fs->lock);
	sfs_cond_init(&fs->commit_cond);
	g_queue_init(&fs->ilru);
	fs->cfg = *cfg;
	fs->bd = bd;
	fs->ro = cfg->ro;

	rc = setup_measurement(fs, &msg);
	if (rc)
		goto out_free;
	bd = fs->bd;
	if (sfs_bdev_size_bytes(bd) < SFS_SUPER_OFFSET + SFS_SUPER_SIZE) {
		msg = g_strdup_printf(
		    "not an ext2/3/4 image: %llu bytes, too small to "
		    "hold a superblock (bytes 1024 to 2047)",
		    (unsigned long long)sfs_bdev_size_bytes(bd));
		rc = -EINVAL;
		goto out_free;
	}
	rc =
	    sfs_bdev_read(bd, SFS_IO_SUPER, SFS_SUPER_OFFSET, raw, sizeof(raw));
	if (rc) {
		msg = g_strdup_printf("cannot read the superblock: %s",
				      g_strerror(-rc));
		goto out_free;
	}
	memcpy(&fs->sb, raw, sizeof(raw));
	if (sfs_le16(fs->sb.s_magic) == SFS_SUPER_MAGIC) {
		/* features first: they decide what the rest means */
		rc = check_unsupported(&fs->sb, &msg);
		if (rc)
			goto out_free;
	}
	if ((sfs_le32(fs->sb.s_feature_compat) &
	     SFS_FEATURE_COMPAT_HAS_JOURNAL) &&
	    sfs_le16(fs->sb.s_magic) == SFS_SUPER_MAGIC && !fs->ro) {
		/* replay the journal before trusting any metadata (a log
		 * left without needs_recovery is wiped, as jbd2 does) */
		struct sfs_bdev *jd = NULL;
		struct sfs_jrecover_info rec;
		if (cfg->journal_dev[0]) {
			rc = sfs_bdev_open_file(cfg->journal_dev, 0, 0, &jd);
			if (rc) {
				msg = g_strdup_printf("cannot open journal "
						      "device '%s': %s",
						      cfg->journal_dev,
						      g_strerror(-rc));
				goto out_free;
			}
		}
		rc = sfs_jlog_mount_recover(bd, jd, &rec, &msg);
		if (jd)
			sfs_bdev_close(jd);
		if (!rc && rec.csum_end_block)
			g_printerr("simfs: journal: %s\n", rec.csum_note);
		if (!rc)
			rc = sfs_bdev_read(bd, SFS_IO_SUPER, SFS_SUPER_OFFSET,
					   raw, sizeof(raw));
		if (rc)
			goto out_free;
		memcpy(&fs->sb, raw, sizeof(raw));
	}
	rc = check_geometry(fs, sfs_bdev_size_bytes(bd), &msg);
	if (rc)
		goto out_free;
	rc = check_features(&fs->sb, &msg);
	if (rc)
		goto out_free;
	rc = sfs_csum_setup(fs, &msg);
	if (rc)
		goto out_free;
	if (!sfs_csum_super_ok(&fs->sb)) {
		msg = g_strdup("superblock checksum mismatch (metadata_csum)");
		rc = -EINVAL;
		goto out_free;
	}
	if (sfs_clock_is_virtual(fs->clock))
		fs->time_base_ns = (sfs_ns_t)MAX(sfs_le32(fs->sb.s_wtime),
						 sfs_le32(fs->sb.s_mkfs_time)) *
				   SFS_NS_PER_S;

	rc = sfs_cache_new(bd, fs->bs, cfg->mem_bytes, &fs->cache);
	if (rc) {
		msg = g_strdup_printf("cannot set up the buffer cache: %s",
				      g_strerror(-rc));
		goto out_free;
	}
	sfs_stats_add_cache(fs->stats, "cache", fs->cache, &fs->lock);
	rc = setup_cache_policy(fs, &msg);
	if (rc)
		goto out_free;
	fs->gd = g_try_new0(struct sfs_dgroup, fs->groups);
	fs->gbad = g_try_new0(uint8_t, fs->groups);
	if (fs->desc_size > sizeof(struct sfs_dgroup))
		fs->gd_tail =
		    g_try_malloc0((size_t)fs->groups *
				  (fs->desc_size - sizeof(struct sfs_dgroup)));
	if (!fs->gd || !fs->gbad ||
	    (fs->desc_size > sizeof(struct sfs_dgroup) && !fs->gd_tail)) {
		rc = -ENOMEM;
		msg = g_strdup("out of memory for group descriptors");
		goto out_free;
	}
	rc = sfs_gdt_io(fs, false);
	if (rc) {
		msg = g_strdup_printf("cannot read the group descriptors: %s",
				      g_strerror(-rc));
		goto out_free;
	}
	rc = check_groups(fs, &msg);
	if (!rc)
		rc = init_uninit_groups(fs, &msg);
	if (rc)
		goto out_free;
	for (uint32_t g = 0; g < fs->groups; g++)
		fs->free_blocks += sfs_le16(fs->gd[g].bg_free_blocks_count);

	fs->icache = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
					   inode_free_cb);
	fs->rand = g_rand_new_with_seed(sfs_le32(fs->sb.s_mkfs_time) ^
					sfs_le32(fs->sb.s_wtime));
	rc = setup_alloc(fs, &msg);
	if (rc)
		goto out_free;

	/* The root must be a directory. */
	struct sfs_inode *root;
	rc = sfs_iget(fs, SFS_ROOT_INO, &root);
	if (rc) {
		msg = g_strdup("root inode (2) is not in use");
		rc = -EINVAL;
		goto out_free;
	}
	bool rootdir = sfs_i_isdir(root);
	sfs_iput(fs, root);
	if (!rootdir) {
		msg = g_strdup("root inode (2) is not a directory");
		rc = -EINVAL;
		goto out_free;
	}

	rc = setup_journal(fs, &msg);
	if (rc)
		goto out_free;
	sfs_da_setup(fs);
	sfs_stats_add_source(fs->stats, "delalloc", da_source, fs);
	/* last: the table and JSON start with what happened (ops) */
	sfs_stats_add_source(fs->stats, "config", config_source, fs);
	if (!fs->ro) {
		struct timespec now;
		sfs_sb_now(fs, &now);
		fs->mount_state = sfs_le16(fs->sb.s_state);
		/* ext2 clears VALID while mounted; a journaled mount keeps it
		 * and sets needs_recovery instead, before any transaction */
		fs->jnl_off = true;
		if (sfs_jnl_journaled(fs->jnl))
			fs->sb.s_feature_incompat |=
			    sfs_cpu_to_le32(SFS_FEATURE_INCOMPAT_RECOVER);
		else
			fs->sb.s_state &= sfs_cpu_to_le16(~SFS_STATE_VALID);
		fs->sb.s_mnt_count =
		    sfs_cpu_to_le16(sfs_le16(fs->sb.s_mnt_count) + 1);
		fs->sb.s_mtime = sfs_cpu_to_le32((uint32_t)now.tv_sec);
		rc = sfs_fs_sync_locked(fs, SFS_COMMIT_SYNC);
		fs->jnl_off = false;
		if (rc) {
			msg = g_strdup_printf("cannot write the superblock: "
					      "%s",
					      g_strerror(-rc));
			goto out_free;
		}
		rc = sfs_orphan_cleanup(fs);
		if (rc > 0)
			g_printerr("simfs: freed %d inode%s left on the orphan "
				   "list\n",
				   rc, rc == 1 ? "" : "s");
	}
	sfs_flusher_start(fs);
	*out = fs;
	return 0;

out_free:
	if (err)
		*err = msg;
	else
		g_free(msg);
	fs_free(fs);
	return rc;
}

/* Free inodes that were unlinked while open and are still cached. */
static void free_orphans(struct sfs_fs *fs)
{
	GHashTableIter it;
	gpointer v;
	GPtrArray *orphans = g_ptr_array_new();

	/* at unmount the kernel holds nothing any more */
	if (fs->klookups) {
		g_hash_table_remove_all(fs->klookups);
		g_hash_table_remove_all(fs->kghosts);
		g_hash_table_remove_all(fs->knameless);
	}

	g_hash_table_iter_init(&it, fs->icache);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct sfs_inode *ip = v;
		if (!ip->deleted && sfs_i_nlink(ip) == 0)
			g_ptr_array_add(orphans, ip);
	}
	for (guint i = 0; i < orphans->len; i++) {
		struct sfs_inode *ip = orphans->pdata[i];
		ip->opens = 0;
		ip->refs = 1;
		sfs_iput(fs, ip);
	}
	g_ptr_array_free(orphans, TRUE);
}

/*
 * The final write-back failed part way (a full host disk under the image,
 * an I/O error), or an earlier step of the unmount did.  The superblock on
 * the device does not say "clean" (the final state is written last, and a
 * journaled image still asks for recovery), but it does not say "in
 * error" either.  Write it again, not clean and in error, so that nothing
 * trusts the image before e2fsck has looked at it (simfs umount reads the
 * state and fails).  Best effort: the device may refuse this too.
 */
static void mark_unclean_after_failed_sync(struct sfs_fs *fs, uint16_t st)
{
	st = (uint16_t)((st & ~SFS_STATE_VALID) | SFS_STATE_ERROR);
	fs->sb.s_state = sfs_cpu_to_le16(st);
	sfs_write_super_alone(fs);
}

int sfs_fs_close(struct sfs_fs *fs)
{
	int rc = 0;

	if (!fs)
		return -EINVAL;
	sfs_flusher_stop(fs);
	sfs_lock(fs);
	sfs_count_op(fs, SFS_OP_SYNC);
	if (!fs->ro && !(fs->error && sfs_jnl_journaled(fs->jnl))) {
		free_orphans(fs);
		rc = sfs_da_flush_all(fs, SFS_DA_SYNC);
		if (sfs_jnl_journaled(fs->jnl) && !rc) {
			/* commit, write everything home, empty the log */
			rc = sfs_write_super_and_gdt(fs);
			if (!rc)
				rc = sfs_jnl_close(fs->jnl);
			fs->jnl_off = true;
		}
		/* Restore the state found at mount (as ext2 does): an image
		 * that was not clean stays so until e2fsck has checked it. */
		uint16_t st = fs->mount_state;
		if (fs->error_recorded)
			st = (uint16_t)((st & ~SFS_STATE_VALID) |
					SFS_STATE_ERROR);
		/*
		 * Everything goes out and the device is flushed while the
		 * superblock still says what it said while mounted; only then
		 * the final state, in a write of its own (ext2_put_super's
		 * order).  A crash or a failure in between leaves an image
		 * that is not marked clean.
		 */
		int src = sfs_fs_sync_locked(fs, SFS_COMMIT_UNMOUNT);
		if (src == 0 && rc == 0) {
			fs->sb.s_state = sfs_cpu_to_le16(st);
			fs->sb.s_feature_incompat &=
			    sfs_cpu_to_le32(~SFS_FEATURE_INCOMPAT_RECOVER);
			src = sfs_write_super_alone(fs);
		}
		if (src < 0 || rc < 0)
			mark_unclean_after_failed_sync(fs, st);
		if (!rc)
			rc = src;
	} else if (fs->error) {
		/* journaled and inconsistent: leave the log for recovery */
		rc = -EIO;
	}
	sfs_unlock(fs);
	/* the report covers the final write-back */
	if (fs->cfg.stats_path[0]) {
		int src = sfs_stats_write_json(fs->stats, fs->cfg.stats_path);
		if (src) {
			g_printerr("simfs: cannot write stats to '%s': %s\n",
				   fs->cfg.stats_path, g_strerror(-src));
			if (!rc)
				rc = src;
		}
	}
	if (fs->report)
		sfs_stats_print_table(fs->stats, fs->report);
	if (fs->close_fn)
		fs->close_fn(fs->close_arg, fs->stats);
	fs_free(fs);
	return rc;
}

void sfs_fs_abort(struct sfs_fs *fs)
{
	if (fs)
		fs_free(fs);
}
