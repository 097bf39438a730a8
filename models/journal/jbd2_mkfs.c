/*
 * jbd2_mkfs.c - creating journals: an internal journal in inode 8 of a
 * fresh ext2 image (making it ext3), or an external journal device.
 *
 *   sfs_jbd2_add_internal(bd, blocks, place, &err)
 *     1. read the primary superblock (raw): ext2, no journal yet;
 *     2. open the image with the engine (sfs_fs_open over a device that
 *        borrows bd) -- the feature bit is not set yet, so the engine
 *        accepts it -- choose the goal (enum sfs_jbd2_place), take the
 *        first free blocks from there (first fit, wrapping), mark them
 *        used, zero them, write the journal superblock, the indirect
 *        blocks and inode 8, close (bitmaps, counts, GDT written back);
 *     3. set has_journal, s_journal_inum and the s_jnl_blocks backup in
 *        the primary and every backup superblock (raw), restoring the
 *        mount count and mount time the engine's open had bumped.
 *
 * On an image with extents the journal is extent-mapped instead, aimed at
 * the middle whatever the placement (mke2fs aims there; only its
 * block-mapped fallocate ignores the goal): one extent per free run (split
 * at 32768 blocks), at most the 4 the inode holds.
 *
 * Block-mapped layout (what mke2fs makes, ext-format 8.10): blocks are
 * taken in logical order and each indirect block right before the first
 * block it maps, the higher level first:
 *   data 0-11, IND, data 12..11+a, DIND, IND, data ..., IND, data ...
 * (a = bs / 4).  On a fresh image the result is one contiguous run.
 *
 * The one file under models/ that includes fs_priv.h instead of model.h:
 * it is no model but a mkfs-time tool that drives the engine over an
 * image (sfs_fs_open, sfs_iget, the group descriptors and superblock) to
 * build inode 8, which no model may do.
 */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "csum.h"
#include "fs_priv.h"
#include "jbd2.h"

/* ---- sizes ---- */

uint32_t sfs_jbd2_default_blocks(uint64_t fs_blocks)
{
	if (fs_blocks < 2048)
		return 0;
	if (fs_blocks < 32768)
		return 1024;
	if (fs_blocks < 256 * 1024)
		return 4096;
	if (fs_blocks < 512 * 1024)
		return 8192;
	if (fs_blocks < 4096 * 1024)
		return 16384;
	if (fs_blocks < 8192 * 1024)
		return 32768;
	if (fs_blocks < 16384 * 1024)
		return 65536;
	if (fs_blocks < 32768 * 1024)
		return 131072;
	return 262144;
}

/* Indirect blocks a block-mapped file of n data blocks needs. */
static uint64_t jm_meta_blocks(uint64_t n, uint64_t a)
{
	uint64_t m = 0, k;

	if (n <= SFS_NDIR_BLOCKS)
		return 0;
	n -= SFS_NDIR_BLOCKS;
	k = MIN(n, a); /* IND */
	m += 1;
	n -= k;
	if (!n)
		return m;
	k = MIN(n, a * a); /* DIND + its INDs */
	m += 1 + (k + a - 1) / a;
	n -= k;
	if (!n)
		return m;
	/* TIND + its DINDs + their INDs */
	m += 1 + (n + a * a - 1) / (a * a) + (n + a - 1) / a;
	return m;
}

/* ---- allocation ---- */

#define SFS_JM_INODE_EXTENTS 4 /* extents an inode's i_block holds */
#define JM_SB_LOG_GROUPS_PER_FLEX 0x174 /* s_log_groups_per_flex, a byte */

/* State of one sfs_jbd2_add_internal. */
struct jm {
	struct sfs_fs *fs;
	uint32_t n;	/* journal (data) blocks */
	uint32_t total; /* data + indirect blocks */
	GArray *runs;	/* struct sfs_jbd2_run, in allocation order */
	guint run_i;	/* cursor for jm_next_block */
	uint32_t run_off;
	uint32_t a;	   /* addresses per block */
	uint32_t bs;
	bool extent;	   /* extent-mapped (the image has extents) */
	sfs_blk_t jsb_blk; /* physical block of journal block 0 */
	sfs_jbd2_put_fn put; /* writes an indirect block */
	void *put_ctx;
	char *msg;
};

/*
 * mke2fs get_midpoint_journal_block: the group in the middle and its two
 * neighbours, the one with the most free blocks; with flex_bg past the
 * first flex group, from the start of the middle's flex group (its first
 * group with free blocks) instead.
 */
uint32_t sfs_jbd2_midpoint_group(uint64_t blocks, uint32_t first, uint32_t bpg,
				 uint32_t groups, uint32_t log_flex,
				 sfs_jbd2_free_fn free_of, void *ctx)
{
	uint64_t mid = (blocks - first) / 2;
	uint32_t g = mid > first ? (uint32_t)((mid - first) / bpg) : 0;
	uint32_t flex = 1u << (log_flex < 32 ? log_flex : 0);
	uint32_t start, end, best;

	if (g >= groups)
		g = groups - 1;
	if (log_flex && log_flex < 32 && g > flex) {
		g &= ~(flex - 1);
		while (g < groups && free_of(ctx, g) == 0)
			g++;
		if (g == groups)
			g = 0;
		start = g;
	} else
		start = g > 0 ? g - 1 : g;
	end = g + 1 < groups ? g + 1 : g;
	best = start;
	for (uint32_t i = start + 1; i <= end; i++)
		if (free_of(ctx, i) > free_of(ctx, best))
			best = i;
	return best;
}

/* A group's free blocks as its descriptor counts them (the low half). */
static uint32_t jm_group_free(void *ctx, uint32_t g)
{
	const struct sfs_fs *fs = ctx;

	return sfs_le16(fs->gd[g].bg_free_blocks_count);
}

static sfs_blk_t jm_midpoint_goal(struct sfs_fs *fs)
{
	uint32_t log_flex =
	    (sfs_le32(fs->sb.s_feature_incompat) & SFS_FEATURE_INCOMPAT_FLEX_BG)
		? ((const uint8_t *)&fs->sb)[JM_SB_LOG_GROUPS_PER_FLEX]
		: 0;

	return sfs_group_first(
	    fs, sfs_jbd2_midpoint_group(fs->blocks_count, fs->first_data_block,
					fs->bpg, fs->groups, log_flex,
					jm_group_free, fs));
}

/* First fit: collect m->total free blocks from goal on, wrapping. */
static int jm_find_blocks(struct jm *m, sfs_blk_t goal)
{
	struct sfs_fs *fs = m->fs;
	uint32_t need = m->total;
	uint32_t g0 = sfs_blk_group(fs, goal);

	for (uint32_t k = 0; k <= fs->groups && need; k++) {
		uint32_t g = (g0 + k) % fs->groups;
		uint32_t nb = sfs_group_nblocks(fs, g);
		uint32_t bit = k == 0 ? goal - sfs_group_first(fs, g) : 0;
		uint32_t stop =
		    k == fs->groups ? goal - sfs_group_first(fs, g) : nb;
		struct sfs_buf *b;
		int rc;

		if (!sfs_le16(fs->gd[g].bg_free_blocks_count))
			continue;
		rc = sfs_block_bitmap(fs, g, &b);
		if (rc)
			return rc;
		for (; bit < stop && need; bit++) {
			struct sfs_jbd2_run *last;
			sfs_blk_t blk;
			if (b->data[bit >> 3] & (1u << (bit & 7)))
				continue;
			blk = sfs_group_first(fs, g) + bit;
			last =
			    m->runs->len
				? &g_array_index(m->runs, struct sfs_jbd2_run,
						 m->runs->len - 1)
				: NULL;
			if (last && last->start + last->len == blk) {
				last->len++;
			} else {
				struct sfs_jbd2_run r = {.start = blk,
							 .len = 1};
				g_array_append_val(m->runs, r);
			}
			need--;
		}
		sfs_cache_put(fs->cache, b);
	}
	if (need) {
		m->msg = g_strdup_printf("not enough free blocks for a journal "
					 "of %u blocks (%u with indirect "
					 "blocks)",
					 m->n, m->total);
		return -ENOSPC;
	}
	return 0;
}

/* The next block in allocation order. */
static sfs_blk_t jm_next_block(struct jm *m)
{
	struct sfs_jbd2_run *r =
	    &g_array_index(m->runs, struct sfs_jbd2_run, m->run_i);
	sfs_blk_t b = r->start + m->run_off;

	if (++m->run_off == r->len) {
		m->run_i++;
		m->run_off = 0;
	}
	return b;
}

/*
 * Lay out the subtree of an indirect block at `level` (1 = IND) mapping
 * logical blocks from `base` (span blocks): take its block, then its
 * children in order, and write it (m->put).
 */
static int jm_tree(struct jm *m, int level, uint64_t base, uint64_t span,
		   uint32_t *slot)
{
	uint64_t sub = span / m->a;
	sfs_blk_t self = jm_next_block(m);
	uint32_t *arr;
	int rc = 0;

	*slot = sfs_cpu_to_le32(self);
	arr = g_try_new0(uint32_t, m->a);
	if (!arr)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->a && !rc; i++) {
		uint64_t l = base + i * sub;
		if (l >= m->n)
			break;
		if (level == 1)
			arr[i] = sfs_cpu_to_le32(jm_next_block(m));
		else
			rc = jm_tree(m, level - 1, l, sub, &arr[i]);
	}
	if (!rc)
		rc = m->put(m->put_ctx, self, arr);
	g_free(arr);
	return rc;
}

/* Extents the runs make (each at most SFS_EXT_INIT_MAX_LEN blocks). */
static uint32_t jm_extent_count(const struct jm *m)
{
	uint32_t n = 0;

	for (guint i = 0; i < m->runs->len; i++)
		n += (g_array_index(m->runs, struct sfs_jbd2_run, i).len +
		      SFS_EXT_INIT_MAX_LEN - 1) /
		     SFS_EXT_INIT_MAX_LEN;
	return n;
}

/* The extent map in the inode itself (depth 0, at most 4 extents; the
 * caller checked jm_extent_count): one extent per run, split at the
 * longest initialised extent, as ext2fs_fallocate leaves a fresh file. */
static void jm_map_extents(struct jm *m, struct sfs_dinode *d)
{
	struct sfs_dextent_header *eh = (struct sfs_dextent_header *)d->i_block;
	struct sfs_dextent *ex = (struct sfs_dextent *)(eh + 1);
	uint32_t lblk = 0, n = 0;

	d->i_flags = sfs_cpu_to_le32(SFS_EXTENTS_FL);
	eh->eh_magic = sfs_cpu_to_le16(SFS_EXT_MAGIC);
	eh->eh_max =
	    sfs_cpu_to_le16((sizeof(d->i_block) - sizeof(*eh)) / sizeof(*ex));
	for (guint i = 0; i < m->runs->len; i++) {
		struct sfs_jbd2_run *r =
		    &g_array_index(m->runs, struct sfs_jbd2_run, i);

		for (uint32_t off = 0; off < r->len;
		     off += SFS_EXT_INIT_MAX_LEN) {
			uint32_t len = MIN(r->len - off, SFS_EXT_INIT_MAX_LEN);
			sfs_blk_t start = r->start + off;

			ex[n].ee_block = sfs_cpu_to_le32(lblk);
			ex[n].ee_len = sfs_cpu_to_le16((uint16_t)len);
			ex[n].ee_start_hi =
			    sfs_cpu_to_le16((uint16_t)((uint64_t)start >> 32));
			ex[n].ee_start_lo = sfs_cpu_to_le32((uint32_t)start);
			lblk += len;
			n++;
		}
	}
	eh->eh_entries = sfs_cpu_to_le16((uint16_t)n);
	m->jsb_blk = g_array_index(m->runs, struct sfs_jbd2_run, 0).start;
}

/* Fill i_block[] (and the indirect blocks) in allocation order. */
static int jm_map(struct jm *m, struct sfs_dinode *d)
{
	uint64_t a = m->a;
	uint64_t base[3] = {SFS_NDIR_BLOCKS, SFS_NDIR_BLOCKS + a,
			    SFS_NDIR_BLOCKS + a + a * a};
	uint64_t span[3] = {a, a * a, a * a * a};
	int rc = 0;

	for (uint32_t i = 0; i < SFS_NDIR_BLOCKS && i < m->n; i++) {
		sfs_blk_t b = jm_next_block(m);
		if (i == 0)
			m->jsb_blk = b;
		d->i_block[i] = sfs_cpu_to_le32(b);
	}
	for (int l = 0; l < 3 && !rc && base[l] < m->n; l++)
		rc = jm_tree(m, l + 1, base[l], span[l],
			     &d->i_block[SFS_IND_BLOCK + l]);
	return rc;
}

/* Build and write the journal superblock for an internal journal. */
static int jm_write_jsb(struct sfs_bdev *bd, uint32_t bs, sfs_blk_t blk,
			uint32_t maxlen, uint32_t first, const uint8_t uuid[16],
			const uint8_t *user)
{
	struct sfs_jbd2_super *j;
	uint8_t *buf = g_try_malloc0(bs);
	int rc;

	if (!buf)
		return -ENOMEM;
	j = (struct sfs_jbd2_super *)buf;
	j->s_header.h_magic = sfs_cpu_to_be32(SFS_JBD2_MAGIC);
	j->s_header.h_blocktype = sfs_cpu_to_be32(SFS_JBD2_SUPER_V2);
	j->s_blocksize = sfs_cpu_to_be32(bs);
	j->s_maxlen = sfs_cpu_to_be32(maxlen);
	j->s_first = sfs_cpu_to_be32(first);
	j->s_sequence = sfs_cpu_to_be32(1);
	j->s_nr_users = sfs_cpu_to_be32(1);
	memcpy(j->s_uuid, uuid, 16);
	if (user)
		memcpy(j->s_users, user, 16);
	rc = sfs_bdev_write(bd, SFS_IO_JOURNAL, (uint64_t)blk * bs, buf, bs);
	g_free(buf);
	return rc;
}

/* Inode 8 must be unused (sfs_iget refuses reserved inodes, so the slot
 * is read from the inode table directly). */
static int jm_check_inode_free(struct jm *m)
{
	struct sfs_fs *fs = m->fs;
	uint32_t idx = SFS_JOURNAL_INO - 1; /* group 0: ipg >= 8 always */
	uint64_t byte = (uint64_t)idx * fs->inode_size;
	struct sfs_dinode d;
	struct sfs_buf *b;
	int rc;

	rc = sfs_cache_get(fs->cache,
			   sfs_le32(fs->gd[0].bg_inode_table) +
			       (sfs_blk_t)(byte / fs->bs),
			   SFS_IO_INODE, &b);
	if (rc)
		return rc;
	memcpy(&d, b->data + byte % fs->bs, SFS_GOOD_OLD_INODE_SIZE);
	sfs_cache_put(fs->cache, b);
	if (d.i_blocks || d.i_links_count || d.i_block[0]) {
		m->msg = g_strdup("inode 8 is already in use");
		return -EEXIST;
	}
	return 0;
}

/* More extents than the inode holds?  (m->msg set) */
static bool jm_too_many_extents(struct jm *m)
{
	if (!m->extent || jm_extent_count(m) <= SFS_JM_INODE_EXTENTS)
		return false;
	m->msg = g_strdup_printf(
	    "a journal of %u blocks takes %u extents here, more than "
	    "the inode holds (%u): choose another size (-J size=)",
	    m->n, jm_extent_count(m), SFS_JM_INODE_EXTENTS);
	return true;
}

/*
 * Map the journal onto its (allocated, zeroed) runs, write its superblock
 * and fill *d, inode 8: the part shared by the engine's path and sfs_mkfs
 * (sfs_jbd2_lay_out).
 */
static int jm_lay_out(struct jm *m, struct sfs_bdev *bd, const uint8_t uuid[16],
		      uint32_t inode_size, uint32_t t, struct sfs_dinode *d)
{
	uint64_t size = (uint64_t)m->n * m->bs;
	int rc = 0;

	memset(d, 0, sizeof(*d));
	if (m->extent)
		jm_map_extents(m, d);
	else
		rc = jm_map(m, d);
	if (rc)
		return rc;
	rc = jm_write_jsb(bd, m->bs, m->jsb_blk, m->n, 1, uuid, NULL);
	if (rc) {
		m->msg = g_strdup_printf("cannot write the journal superblock: "
					 "%s",
					 g_strerror(-rc));
		return rc;
	}
	d->i_mode = sfs_cpu_to_le16(SFS_S_IFREG | 0600);
	d->i_links_count = sfs_cpu_to_le16(1);
	d->i_size = sfs_cpu_to_le32((uint32_t)size);
	d->i_size_high = sfs_cpu_to_le32((uint32_t)(size >> 32));
	d->i_blocks = sfs_cpu_to_le32(m->total * (m->bs / 512));
	d->i_atime = d->i_ctime = d->i_mtime = sfs_cpu_to_le32(t);
	if (inode_size > SFS_GOOD_OLD_INODE_SIZE) {
		d->i_extra_isize = sfs_cpu_to_le16(SFS_EXTRA_ISIZE);
		d->i_crtime = sfs_cpu_to_le32(t);
	}
	return 0;
}

/* Indirect blocks of the engine's path go through its cache. */
static int jm_put_cache(void *ctx, uint64_t blk, const void *data)
{
	struct sfs_fs *fs = ctx;
	struct sfs_buf *b;
	int rc =
	    sfs_cache_get_new(fs->cache, (sfs_blk_t)blk, SFS_IO_INDIRECT, &b);

	if (rc)
		return rc;
	memcpy(b->data, data, fs->bs);
	sfs_cache_dirty(fs->cache, b);
	sfs_cache_put(fs->cache, b);
	return 0;
}

/* The engine part of sfs_jbd2_add_internal; fills *d (inode 8). */
static int jm_build(struct jm *m, enum sfs_jbd2_place place,
		    struct sfs_dinode *d)
{
	struct sfs_fs *fs = m->fs;
	struct sfs_inode ip = {.ino = SFS_JOURNAL_INO};
	sfs_blk_t goal;
	int rc;

	if (m->n > sfs_free_blocks(fs) / 2) {
		m->msg = g_strdup_printf("journal of %u blocks too big for a "
					 "filesystem with %" G_GUINT64_FORMAT
					 " free blocks (at most half)",
					 m->n, sfs_free_blocks(fs));
		return -EINVAL;
	}
	rc = jm_check_inode_free(m);
	if (rc)
		return rc;
	/* mke2fs aims every journal at the middle; only its block-mapped
	 * fallocate ignores the goal */
	goal = place == SFS_JBD2_PLACE_MIDDLE || m->extent
		   ? jm_midpoint_goal(fs)
		   : fs->first_data_block;
	rc = jm_find_blocks(m, goal);
	if (rc)
		return rc;
	if (jm_too_many_extents(m))
		return -EINVAL;
	for (guint i = 0; i < m->runs->len; i++) {
		struct sfs_jbd2_run *r =
		    &g_array_index(m->runs, struct sfs_jbd2_run, i);
		rc = sfs_blocks_mark_used(fs, (sfs_blk_t)r->start, r->len);
		if (!rc)
			rc = sfs_bdev_zero(fs->bd, SFS_IO_JOURNAL,
					   r->start * fs->bs,
					   (uint64_t)r->len * fs->bs);
		if (rc) {
			m->msg = g_strdup_printf(
			    "cannot allocate or zero blocks %" G_GUINT64_FORMAT
			    "+%u: %s",
			    r->start, r->len, g_strerror(-rc));
			return rc;
		}
	}
	m->put = jm_put_cache;
	m->put_ctx = fs;
	rc = jm_lay_out(m, fs->bd, fs->sb.s_uuid, fs->inode_size,
			sfs_le32(fs->sb.s_mkfs_time), d);
	if (rc)
		return rc;
	ip.d = *d;
	return sfs_inode_dirty(fs, &ip);
}

uint32_t sfs_jbd2_total_blocks(uint32_t n, uint32_t bs, bool extent)
{
	return n + (extent ? 0 : (uint32_t)jm_meta_blocks(n, bs / 4));
}

int sfs_jbd2_lay_out(struct sfs_bdev *bd, uint32_t bs, uint32_t inode_size,
		     uint32_t n, bool extent, GArray *runs,
		     const uint8_t uuid[16], uint32_t time, sfs_jbd2_put_fn put,
		     void *put_ctx, struct sfs_dinode *d, char **err)
{
	struct jm m = {.n = n,
		       .total = sfs_jbd2_total_blocks(n, bs, extent),
		       .runs = runs,
		       .a = bs / 4,
		       .bs = bs,
		       .extent = extent,
		       .put = put,
		       .put_ctx = put_ctx};
	int rc = jm_too_many_extents(&m) ? -EINVAL : 0;

	if (!rc)
		rc = jm_lay_out(&m, bd, uuid, inode_size, time, d);
	if (rc && err)
		*err = m.msg ? g_strdup(m.msg)
			     : g_strdup_printf("cannot make the journal: %s",
					       g_strerror(-rc));
	g_free(m.msg);
	return rc;
}

/* Put the journal fields into one superblock copy. */
static void jm_set_sb_fields(struct sfs_dsuper *sb, const struct sfs_dinode *d,
			     uint32_t inum, const uint8_t *juuid,
			     uint32_t devnum)
{
	sb->s_feature_compat = sfs_cpu_to_le32(sfs_le32(sb->s_feature_compat) |
					       SFS_FEATURE_COMPAT_HAS_JOURNAL);
	sb->s_journal_inum = sfs_cpu_to_le32(inum);
	sb->s_journal_dev = sfs_cpu_to_le32(devnum);
	memset(sb->s_journal_uuid, 0, 16);
	if (juuid)
		memcpy(sb->s_journal_uuid, juuid, 16);
	memset(sb->s_jnl_blocks, 0, sizeof(sb->s_jnl_blocks));
	sb->s_jnl_backup_type = 0;
	if (d) {
		memcpy(sb->s_jnl_blocks, d->i_block, sizeof(d->i_block));
		sb->s_jnl_blocks[15] = d->i_size_high;
		sb->s_jnl_blocks[16] = d->i_size;
		sb->s_jnl_backup_type = 1; /* EXT3_JNL_BACKUP_BLOCKS */
	}
}

void sfs_jbd2_set_internal(struct sfs_dsuper *sb, const struct sfs_dinode *d)
{
	jm_set_sb_fields(sb, d, SFS_JOURNAL_INO, NULL, 0);
}

/*
 * Write the journal fields into the primary superblock (already in *sb)
 * and into every backup copy (read, patched, written: they keep their own
 * s_block_group_nr and state), then flush.
 */
static int jm_write_supers(struct sfs_bdev *bd, struct sfs_dsuper *sb,
			   const struct sfs_dinode *d, uint32_t inum,
			   const uint8_t *juuid, uint32_t devnum)
{
	uint32_t bs = 1024u << sfs_le32(sb->s_log_block_size);
	uint32_t fdb = sfs_le32(sb->s_first_data_block);
	uint32_t bpg = sfs_le32(sb->s_blocks_per_group);
	uint32_t blocks = sfs_le32(sb->s_blocks_count);
	uint32_t groups = (blocks - fdb + bpg - 1) / bpg;
	int sparse = !!(sfs_le32(sb->s_feature_ro_compat) &
			SFS_FEATURE_RO_COMPAT_SPARSE_SUPER);
	struct sfs_dsuper copy;
	int rc;

	jm_set_sb_fields(sb, d, inum, juuid, devnum);
	sfs_csum_super_set(sb);
	rc = sfs_bdev_write(bd, SFS_IO_SUPER, SFS_SUPER_OFFSET, sb,
			    SFS_SUPER_SIZE);
	for (uint32_t g = 1; g < groups && !rc; g++) {
		uint64_t off = ((uint64_t)fdb + (uint64_t)g * bpg) * bs;
		if (!sfs_group_has_super(g, sparse))
			continue;
		rc = sfs_bdev_read(bd, SFS_IO_SUPER, off, &copy, sizeof(copy));
		if (rc)
			break;
		if (sfs_le16(copy.s_magic) != SFS_SUPER_MAGIC)
			continue; /* not a backup: leave the block alone */
		jm_set_sb_fields(&copy, d, inum, juuid, devnum);
		sfs_csum_super_set(&copy);
		rc = sfs_bdev_write(bd, SFS_IO_SUPER, off, &copy, sizeof(copy));
	}
	if (!rc)
		rc = sfs_bdev_flush(bd);
	return rc;
}

/* Common checks: an ext2 superblock without a journal.  Reads *sb. */
static int jm_check_fs(struct sfs_bdev *bd, struct sfs_dsuper *sb, char **err)
{
	int rc;

	if (!bd)
		return -EINVAL;
	if (sfs_bdev_size_bytes(bd) < SFS_SUPER_OFFSET + SFS_SUPER_SIZE) {
		*err = g_strdup("device too small to hold a filesystem");
		return -EINVAL;
	}
	rc = sfs_bdev_read(bd, SFS_IO_SUPER, SFS_SUPER_OFFSET, sb, sizeof(*sb));
	if (rc) {
		*err = g_strdup_printf("cannot read the superblock: %s",
				       g_strerror(-rc));
		return rc;
	}
	if (sfs_le16(sb->s_magic) != SFS_SUPER_MAGIC ||
	    sfs_le32(sb->s_log_block_size) > SFS_MAX_BLOCK_LOG) {
		*err = g_strdup("not an ext2 filesystem simfs can read");
		return -EINVAL;
	}
	if (sfs_le32(sb->s_feature_compat) & SFS_FEATURE_COMPAT_HAS_JOURNAL ||
	    sfs_le32(sb->s_journal_inum) ||
	    sfs_le32(sb->s_feature_incompat) &
		(SFS_FEATURE_INCOMPAT_RECOVER |
		 SFS_FEATURE_INCOMPAT_JOURNAL_DEV)) {
		*err = g_strdup("filesystem already has a journal (or is a "
				"journal device)");
		return -EINVAL;
	}
	return 0;
}

int sfs_jbd2_add_internal(struct sfs_bdev *bd, uint32_t journal_blocks,
			  enum sfs_jbd2_place place, char **err)
{
	struct sfs_dsuper before, after;
	struct sfs_config cfg;
	struct sfs_bdev *borrow;
	struct sfs_dinode d;
	struct jm m = {0};
	char *msg = NULL;
	uint32_t bs;
	int rc, crc;

	rc = jm_check_fs(bd, &before, &msg);
	if (rc)
		goto out;
	if (sfs_le32(before.s_feature_ro_compat) &
	    (SFS_FEATURE_RO_COMPAT_GDT_CSUM |
	     SFS_FEATURE_RO_COMPAT_METADATA_CSUM)) {
		/* the engine's open would initialise the groups mkfs leaves
		 * uninitialised: sfs_mkfs lays such a journal out itself */
		msg = g_strdup("an image with group descriptor checksums gets "
			       "its journal from sfs_mkfs (has_journal)");
		rc = -EINVAL;
		goto out;
	}
	bs = 1024u << sfs_le32(before.s_log_block_size);
	if (!journal_blocks) {
		journal_blocks =
		    sfs_jbd2_default_blocks(sfs_le32(before.s_blocks_count));
		if (!journal_blocks) {
			msg = g_strdup_printf("filesystem of %u blocks is too "
					      "small for a journal (needs "
					      ">= 2048)",
					      sfs_le32(before.s_blocks_count));
			rc = -EINVAL;
			goto out;
		}
	}
	if (journal_blocks < SFS_JBD2_MIN_BLOCKS) {
		msg = g_strdup_printf("journal of %u blocks: the minimum is %u",
				      journal_blocks, SFS_JBD2_MIN_BLOCKS);
		rc = -EINVAL;
		goto out;
	}
	if ((unsigned)place > SFS_JBD2_PLACE_FIRST_FREE) {
		msg =
		    g_strdup_printf("unknown journal placement %d", (int)place);
		rc = -EINVAL;
		goto out;
	}
	m.n = journal_blocks;
	m.a = bs / 4;
	m.extent =
	    sfs_le32(before.s_feature_incompat) & SFS_FEATURE_INCOMPAT_EXTENTS;
	if ((uint64_t)m.n + jm_meta_blocks(m.n, m.a) >
	    UINT32_MAX / (bs / 512)) {
		msg = g_strdup_printf("journal of %u blocks is too large", m.n);
		rc = -EINVAL;
		goto out;
	}
	m.bs = bs;
	m.total = sfs_jbd2_total_blocks(m.n, bs, m.extent);
	m.runs = g_array_new(FALSE, FALSE, sizeof(struct sfs_jbd2_run));

	sfs_config_defaults(&cfg);
	cfg.ro = false;
	borrow = sfs_bdev_borrow_new(bd);
	rc = sfs_fs_open(borrow, &cfg, &m.fs, &msg);
	if (rc)
		goto out;
	sfs_lock(m.fs);
	rc = jm_build(&m, place, &d);
	sfs_unlock(m.fs);
	if (rc)
		msg = m.msg ? g_strdup(m.msg)
			    : g_strdup_printf("cannot add the journal: %s",
					      g_strerror(-rc));
	/* close even on failure: what was marked used is then consistent */
	crc = sfs_fs_close(m.fs);
	if (!rc && crc) {
		rc = crc;
		msg = g_strdup_printf("cannot write the filesystem back: %s",
				      g_strerror(-rc));
	}
	crc = sfs_bdev_read(bd, SFS_IO_SUPER, SFS_SUPER_OFFSET, &after,
			    sizeof(after));
	if (crc) {
		if (!rc) {
			rc = crc;
			msg = g_strdup_printf("cannot read the superblock: %s",
					      g_strerror(-rc));
		}
		goto out;
	}
	/* the engine's open counted a mount: leave the image as mke2fs
	 * would, mount count and mount time untouched */
	after.s_mnt_count = before.s_mnt_count;
	after.s_mtime = before.s_mtime;
	if (rc) {
		sfs_bdev_write(bd, SFS_IO_SUPER, SFS_SUPER_OFFSET, &after,
			       sizeof(after));
		sfs_bdev_flush(bd);
		goto out;
	}
	if (after.s_overhead_clusters) /* mke2fs counts the journal's data */
		after.s_overhead_clusters =
		    sfs_cpu_to_le32(sfs_le32(after.s_overhead_clusters) + m.n);
	rc = jm_write_supers(bd, &after, &d, SFS_JOURNAL_INO, NULL, 0);
	if (rc)
		msg = g_strdup_printf("cannot write the superblocks: %s",
				      g_strerror(-rc));
out:
	if (m.runs)
		g_array_free(m.runs, TRUE);
	g_free(m.msg);
	if (err)
		*err = msg;
	else
		g_free(msg);
	return rc;
}

/* ---- external journal ---- */

/* A UUID for the journal device derived from the filesystem's. */
static void jm_derive_uuid(const uint8_t fs_uuid[16], uint8_t out[16])
{
	GChecksum *c = g_checksum_new(G_CHECKSUM_SHA1);
	uint8_t dig[20];
	gsize len = sizeof(dig);

	g_checksum_update(c, (const guchar *)"simfs-journal", 13);
	g_checksum_update(c, fs_uuid, 16);
	g_checksum_get_digest(c, dig, &len);
	g_checksum_free(c);
	memcpy(out, dig, 16);
	out[6] = (out[6] & 0x0F) | 0x50; /* name-based (v5) */
	out[8] = (out[8] & 0x3F) | 0x80; /* RFC 4122 variant */
}

int sfs_jbd2_make_external(struct sfs_bdev *jdev, struct sfs_bdev *fs_bd,
			   uint32_t devnum, const uint8_t *uuid, char **err)
{
	static const uint8_t zero[16];
	struct sfs_dsuper fsb, jsb;
	uint8_t juuid[16];
	uint32_t bs, sb_blk;
	uint64_t nblocks;
	char *msg = NULL;
	int rc;

	if (!jdev || jdev == fs_bd) {
		msg = g_strdup("an external journal needs its own device");
		rc = -EINVAL;
		goto out;
	}
	rc = jm_check_fs(fs_bd, &fsb, &msg);
	if (rc)
		goto out;
	bs = 1024u << sfs_le32(fsb.s_log_block_size);
	sb_blk = bs == 1024 ? 2 : 1;
	nblocks = sfs_bdev_size_bytes(jdev) / bs;
	if (nblocks < SFS_JBD2_MIN_BLOCKS || nblocks > UINT32_MAX) {
		msg = g_strdup_printf("journal device of %" G_GUINT64_FORMAT
				      " blocks: needs %u to 2^32 - 1",
				      nblocks, SFS_JBD2_MIN_BLOCKS);
		rc = -EINVAL;
		goto out;
	}
	if (uuid && memcmp(uuid, zero, 16))
		memcpy(juuid, uuid, 16);
	else
		jm_derive_uuid(fsb.s_uuid, juuid);

	if (!sfs_bdev_known_zero(jdev)) {
		rc = sfs_bdev_zero(jdev, SFS_IO_JOURNAL, 0, nblocks * bs);
		if (rc) {
			msg = g_strdup_printf("cannot zero the journal device: "
					      "%s",
					      g_strerror(-rc));
			goto out;
		}
	}
	/* the device's ext2 superblock, as mke2fs -O journal_dev writes it */
	memset(&jsb, 0, sizeof(jsb));
	jsb.s_blocks_count = sfs_cpu_to_le32((uint32_t)nblocks);
	/* 1 at 1 KiB (dumpe2fs finds the journal at s_first_data_block + 1) */
	jsb.s_first_data_block = sfs_cpu_to_le32(bs == 1024 ? 1 : 0);
	jsb.s_log_block_size = fsb.s_log_block_size;
	jsb.s_log_cluster_size = fsb.s_log_block_size;
	jsb.s_blocks_per_group = sfs_cpu_to_le32(8 * bs);
	jsb.s_clusters_per_group = sfs_cpu_to_le32(8 * bs);
	jsb.s_wtime = fsb.s_mkfs_time;
	jsb.s_max_mnt_count = sfs_cpu_to_le16(0xFFFF);
	jsb.s_magic = sfs_cpu_to_le16(SFS_SUPER_MAGIC);
	jsb.s_state = sfs_cpu_to_le16(SFS_STATE_VALID);
	jsb.s_errors = sfs_cpu_to_le16(1);
	jsb.s_lastcheck = fsb.s_mkfs_time;
	jsb.s_rev_level = sfs_cpu_to_le32(1);
	jsb.s_first_ino = sfs_cpu_to_le32(SFS_FIRST_INO);
	jsb.s_inode_size = fsb.s_inode_size;
	jsb.s_feature_incompat =
	    sfs_cpu_to_le32(SFS_FEATURE_INCOMPAT_JOURNAL_DEV);
	memcpy(jsb.s_uuid, juuid, 16);
	jsb.s_def_hash_version = 1;
	jsb.s_default_mount_opts = fsb.s_default_mount_opts;
	jsb.s_mkfs_time = fsb.s_mkfs_time;
	jsb.s_min_extra_isize = fsb.s_min_extra_isize;
	jsb.s_want_extra_isize = fsb.s_want_extra_isize;
	rc = sfs_bdev_write(jdev, SFS_IO_SUPER, SFS_SUPER_OFFSET, &jsb,
			    sizeof(jsb));
	if (!rc)
		rc = jm_write_jsb(jdev, bs, sb_blk, (uint32_t)nblocks,
				  sb_blk + 1, juuid, fsb.s_uuid);
	if (!rc)
		rc = sfs_bdev_flush(jdev);
	if (rc) {
		msg = g_strdup_printf("cannot format the journal device: %s",
				      g_strerror(-rc));
		goto out;
	}
	rc = jm_write_supers(fs_bd, &fsb, NULL, 0, juuid, devnum);
	if (rc)
		msg = g_strdup_printf("cannot write the superblocks: %s",
				      g_strerror(-rc));
out:
	if (err)
		*err = msg;
	else
		g_free(msg);
	return rc;
}
