/*
 * jbd2.c - the jbd2 log on disk: mapping journal blocks to device blocks,
 * the journal superblock, writing a transaction, recovery and listing.
 * The format is ext-format section 8; doc/journal-format.md shows it as
 * simfs writes it, with a worked example.
 *
 * A log (struct sfs_jlog) is opened in one of two ways and then behaves the
 * same:
 *   sfs_jlog_open_dev  reads the filesystem superblock, group descriptor
 *                      and journal inode straight from the device (mount
 *                      time, before the engine; inspect);
 *   sfs_jlog_open_fs   uses the engine's superblock, cache and mapping.
 * Either way the journal inode's map is read once and kept as runs of
 * (journal block, device block, length); an external journal maps block n
 * to device block n.  Journal blocks are read and written straight on the
 * device (category SFS_IO_JOURNAL), see jbd2.h for why.
 *
 * Recovery mirrors jbd2's recovery.c (do_one_pass): the same three passes,
 * the same stopping rules, the same revoke rule (a record (B, R) hides
 * every copy of B logged by a transaction with tid <= R), the same
 * s_sequence afterwards (first tid without a commit + 1).  One addition: a
 * scan that has gone all around the log stops, so a log of blocks all
 * carrying the expected tid cannot loop forever.
 *
 * Checksums: v2/v3 (per-block crc32c, doc/journal-format.md 2.1) and v1
 * (one crc32_be of a transaction's descriptors and logged blocks in its
 * commit block, 2.2, what makes jbd2's asynchronous commit safe).
 *
 * Invariants:
 *  1. runs cover journal blocks [0, total) in order, without holes.
 *  2. sb_block holds the journal superblock's whole block as last read or
 *     written; first/maxlen mirror it.
 *  3. Only sfs_jbd2_set_recover and sfs_jlog_mount_recover edit the
 *     filesystem superblock (replay may write a logged copy of it).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <glib.h>

#include "csum.h"
#include "model.h"
#include "jbd2.h"

#define JL_HDR 12	   /* journal header bytes */
#define JL_TAG 8	   /* tag bytes without 64bit/csum */
#define JL_TAG3 16	   /* journal_block_tag3_t (csum v3) */
#define JL_TAIL 4	   /* jbd2_journal_block_tail (csum v2/v3) */
#define JL_UUID 16	   /* UUID after a tag without SAME_UUID */
#define JL_REVOKE_HDR 16   /* revoke header incl. r_count */
#define JL_MAX_EXT_DEPTH 5 /* extent tree depth limit (kernel) */
#define JL_SUPER_V1_BYTES 0x24

/* A run of journal blocks at consecutive device blocks. */
struct jl_run {
	uint32_t lblk; /* first journal block */
	uint64_t pblk; /* its device block */
	uint32_t len;  /* blocks */
};

struct sfs_jlog {
	struct sfs_bdev *jdev;	/* holds the log (= fs_bd if internal) */
	struct sfs_bdev *fs_bd; /* the filesystem's device */
	struct sfs_fs *fs;	/* engine (sfs_jlog_open_fs) or NULL */
	bool external;
	uint32_t ino;	    /* journal inode (internal) */
	uint32_t bs;	    /* block size, bytes */
	uint32_t sb_blk;    /* journal block of the journal superblock */
	uint32_t total;	    /* journal blocks that exist */
	uint32_t first;	    /* s_first */
	uint32_t maxlen;    /* s_maxlen */
	uint32_t fs_blocks; /* s_blocks_count: home blocks lie below */
	uint8_t fs_uuid[16];
	GArray *runs;	   /* struct jl_run; NULL for an external log */
	uint8_t *sb_block; /* the superblock's block, bs bytes */
	char *msg;	   /* last problem (sfs_jlog_error) */
	/* the block format the superblock's features ask for (jl_format) */
	bool csum;	    /* csum v2 or v3: tails, tag and commit sums */
	bool csum1;	    /* v1 (COMPAT_CHECKSUM, no v2/v3): a crc32_be of
			     * the descriptors and logged blocks in the
			     * commit block */
	bool csum3;	    /* v3: 32-bit tag sums in 16-byte tags */
	bool is64;	    /* 64bit: t_blocknr_high, 8-byte revoke records */
	uint32_t tag_bytes; /* journal_tag_bytes() */
	uint32_t rec_bytes; /* one revoke record */
	uint32_t seed;	    /* j_csum_seed: crc32c of the journal's UUID */
};

static inline struct sfs_jbd2_super *jl_jsb(const struct sfs_jlog *log)
{
	return (struct sfs_jbd2_super *)log->sb_block;
}

static inline bool tid_gt(uint32_t x, uint32_t y)
{
	return (int32_t)(x - y) > 0;
}

static inline bool tid_geq(uint32_t x, uint32_t y)
{
	return (int32_t)(x - y) >= 0;
}

static inline uint32_t get_be32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return sfs_be32(v);
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
	v = sfs_cpu_to_be32(v);
	memcpy(p, &v, 4);
}

static inline uint16_t get_be16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return sfs_be16(v);
}

static inline void put_be16(uint8_t *p, uint16_t v)
{
	v = sfs_cpu_to_be16(v);
	memcpy(p, &v, 2);
}

static void jl_set_msg(struct sfs_jlog *log, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);
static void jl_set_msg(struct sfs_jlog *log, const char *fmt, ...)
{
	va_list ap;

	g_free(log->msg);
	va_start(ap, fmt);
	log->msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
}

static void set_err(char **err, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void set_err(char **err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	g_free(*err);
	va_start(ap, fmt);
	*err = g_strdup_vprintf(fmt, ap);
	va_end(ap);
}

static void uuid_str(const uint8_t u[16], char out[37])
{
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* ------------------------------------------------------------------ */
/* the filesystem superblock on a raw device                          */
/* ------------------------------------------------------------------ */

/* Read the primary superblock of fs_bd and check it is ext2 with a sane
 * block size.  -EINVAL with *err, -EIO. */
static int jl_read_fs_super(struct sfs_bdev *bd, struct sfs_dsuper *sb,
			    char **err)
{
	int rc;

	if (sfs_bdev_size_bytes(bd) < SFS_SUPER_OFFSET + SFS_SUPER_SIZE) {
		set_err(err,
			"device too small (%" PRIu64 " bytes) to hold a "
			"superblock",
			sfs_bdev_size_bytes(bd));
		return -EINVAL;
	}
	rc = sfs_bdev_read(bd, SFS_IO_SUPER, SFS_SUPER_OFFSET, sb,
			   SFS_SUPER_SIZE);
	if (rc) {
		set_err(err, "cannot read the superblock: %s", g_strerror(-rc));
		return rc;
	}
	if (sfs_le16(sb->s_magic) != SFS_SUPER_MAGIC) {
		set_err(err,
			"no ext2 superblock (magic 0x%04x, expected "
			"0x%04x)",
			sfs_le16(sb->s_magic), SFS_SUPER_MAGIC);
		return -EINVAL;
	}
	if (sfs_le32(sb->s_log_block_size) > SFS_MAX_BLOCK_LOG) {
		set_err(err, "unsupported block size (s_log_block_size %u)",
			sfs_le32(sb->s_log_block_size));
		return -EINVAL;
	}
	return 0;
}

static int jl_write_fs_super(struct sfs_bdev *bd, const struct sfs_dsuper *sb)
{
	struct sfs_dsuper out = *sb;

	sfs_csum_super_set(&out); /* metadata_csum: the sum follows */
	return sfs_bdev_write(bd, SFS_IO_SUPER, SFS_SUPER_OFFSET, &out,
			      SFS_SUPER_SIZE);
}

int sfs_jbd2_set_recover(struct sfs_bdev *fs_bd, bool on)
{
	struct sfs_dsuper sb;
	uint32_t inc;
	int rc;

	if (!fs_bd)
		return -EINVAL;
	rc = jl_read_fs_super(fs_bd, &sb, NULL);
	if (rc)
		return rc;
	inc = sfs_le32(sb.s_feature_incompat);
	if (on)
		inc |= SFS_FEATURE_INCOMPAT_RECOVER;
	else
		inc &= ~SFS_FEATURE_INCOMPAT_RECOVER;
	sb.s_feature_incompat = sfs_cpu_to_le32(inc);
	return jl_write_fs_super(fs_bd, &sb);
}

/* ------------------------------------------------------------------ */
/* mapping the journal inode                                          */
/* ------------------------------------------------------------------ */

/* Where metadata blocks (inode table, indirect, extent nodes) come from. */
struct jl_reader {
	struct sfs_bdev *bd; /* raw device, or */
	struct sfs_fs *fs;   /* the engine's cache */
	uint32_t bs;
};

static int jl_read_meta(const struct jl_reader *r, uint64_t blk,
			enum sfs_io_cat cat, void *buf)
{
	struct sfs_buf *b;
	int rc;

	if (!r->fs)
		return sfs_bdev_read(r->bd, cat, blk * r->bs, buf, r->bs);
	if (blk > UINT32_MAX)
		return -EINVAL;
	rc = sfs_cache_get(sfs_fs_cache(r->fs), (sfs_blk_t)blk, cat, &b);
	if (rc)
		return rc;
	memcpy(buf, b->data, r->bs);
	sfs_cache_put(sfs_fs_cache(r->fs), b);
	return 0;
}

/* Collects the journal inode's data blocks into runs (walk callback). */
struct jl_mapper {
	GArray *runs;	   /* struct jl_run */
	uint32_t want;	   /* journal blocks to map: i_size / bs */
	uint32_t next;	   /* next logical block expected */
	uint32_t fs_first; /* valid physical blocks: [fs_first, fs_blocks) */
	uint32_t fs_blocks;
	char *msg; /* first problem */
};

#define JL_MAP_DONE 1 /* walk callback: every block wanted is mapped */

static int jl_map_cb(void *ctx, uint32_t lblk, sfs_blk_t pblk, uint32_t len,
		     bool meta)
{
	struct jl_mapper *m = ctx;
	struct jl_run *last;

	if (meta) {
		if (pblk < m->fs_first || pblk >= m->fs_blocks) {
			m->msg = g_strdup_printf("map block %u outside the "
						 "filesystem",
						 pblk);
			return -EINVAL;
		}
		return 0;
	}
	if (lblk >= m->want)
		return JL_MAP_DONE;
	if (lblk != m->next) {
		m->msg = g_strdup_printf("hole at logical block %u (journals "
					 "may have none)",
					 lblk > m->next ? m->next : lblk);
		return -EINVAL;
	}
	if (len > m->want - lblk)
		len = m->want - lblk;
	if (len == 0 || pblk < m->fs_first ||
	    (uint64_t)pblk + len > m->fs_blocks) {
		m->msg = g_strdup_printf("logical block %u maps to block %u, "
					 "outside the filesystem",
					 lblk, pblk);
		return -EINVAL;
	}
	last = m->runs->len
		   ? &g_array_index(m->runs, struct jl_run, m->runs->len - 1)
		   : NULL;
	if (last && last->lblk + last->len == lblk &&
	    last->pblk + last->len == pblk) {
		last->len += len;
	} else {
		struct jl_run r = {.lblk = lblk, .pblk = pblk, .len = len};
		g_array_append_val(m->runs, r);
	}
	m->next += len;
	return m->next == m->want ? JL_MAP_DONE : 0;
}

/* Block-map walk of one (indirect) block at `level` (0 = data). */
static int jl_walk_ind(const struct jl_reader *r, struct jl_mapper *m,
		       uint32_t blk, int level, uint64_t base, uint64_t span)
{
	uint32_t apb = r->bs / 4;
	uint64_t sub = span / apb;
	uint32_t *arr;
	int rc;

	if (level == 0) {
		if (base > UINT32_MAX)
			return JL_MAP_DONE;
		return jl_map_cb(m, (uint32_t)base, blk, 1, false);
	}
	if (base >= m->want)
		return JL_MAP_DONE;
	rc = jl_map_cb(m, (uint32_t)base, blk, 1, true);
	if (rc)
		return rc;
	arr = g_try_malloc(r->bs);
	if (!arr)
		return -ENOMEM;
	rc = jl_read_meta(r, blk, SFS_IO_INDIRECT, arr);
	for (uint32_t i = 0; i < apb && !rc; i++) {
		uint32_t q = sfs_le32(arr[i]);
		if (!q) {
			if (base + i * sub < m->want) {
				m->msg = g_strdup_printf(
				    "hole at logical block %" PRIu64
				    " (journals may have none)",
				    base + i * sub);
				rc = -EINVAL;
			}
			break;
		}
		rc = jl_walk_ind(r, m, q, level - 1, base + i * sub, sub);
	}
	g_free(arr);
	return rc;
}

static int jl_walk_blockmap(const struct jl_reader *r, struct jl_mapper *m,
			    const struct sfs_dinode *d)
{
	uint64_t a = r->bs / 4;
	uint64_t base[3] = {SFS_NDIR_BLOCKS, SFS_NDIR_BLOCKS + a,
			    SFS_NDIR_BLOCKS + a + a * a};
	uint64_t span[3] = {a, a * a, a * a * a};
	int rc = 0;

	for (uint32_t i = 0; i < SFS_NDIR_BLOCKS && !rc; i++) {
		uint32_t p = sfs_le32(d->i_block[i]);
		if (!p)
			return 0; /* the caller reports the hole */
		rc = jl_walk_ind(r, m, p, 0, i, 1);
	}
	for (int l = 0; l < 3 && !rc; l++) {
		uint32_t p = sfs_le32(d->i_block[SFS_IND_BLOCK + l]);
		if (!p)
			return 0;
		rc = jl_walk_ind(r, m, p, l + 1, base[l], span[l]);
	}
	return rc;
}

/* Extent tree node (root in i_block or a tree block) at `depth`. */
static int jl_walk_extents(const struct jl_reader *r, struct jl_mapper *m,
			   const uint8_t *node, size_t bytes, int depth)
{
	const struct sfs_dextent_header *h = (const void *)node;
	uint16_t entries = sfs_le16(h->eh_entries);
	uint16_t max = sfs_le16(h->eh_max);
	int rc = 0;

	if (sfs_le16(h->eh_magic) != SFS_EXT_MAGIC) {
		m->msg = g_strdup("bad extent header magic");
		return -EINVAL;
	}
	if (entries > max || 12 + (size_t)max * 12 > bytes ||
	    (depth >= 0 && sfs_le16(h->eh_depth) != depth) ||
	    sfs_le16(h->eh_depth) > JL_MAX_EXT_DEPTH) {
		m->msg = g_strdup_printf("corrupt extent node (entries %u, "
					 "max %u, depth %u)",
					 entries, max, sfs_le16(h->eh_depth));
		return -EINVAL;
	}
	depth = sfs_le16(h->eh_depth);
	for (uint16_t i = 0; i < entries && !rc; i++) {
		const uint8_t *e = node + 12 + (size_t)i * 12;
		if (depth == 0) {
			const struct sfs_dextent *x = (const void *)e;
			uint32_t len = sfs_le16(x->ee_len);
			if (len > SFS_EXT_INIT_MAX_LEN || x->ee_start_hi) {
				m->msg = g_strdup_printf(
				    "unwritten or 64-bit extent at logical "
				    "block %u",
				    sfs_le32(x->ee_block));
				return -EINVAL;
			}
			rc = jl_map_cb(m, sfs_le32(x->ee_block),
				       sfs_le32(x->ee_start_lo), len, false);
		} else {
			const struct sfs_dextent_idx *x = (const void *)e;
			uint32_t leaf = sfs_le32(x->ei_leaf_lo);
			uint8_t *child;
			rc = jl_map_cb(m, sfs_le32(x->ei_block), leaf, 1, true);
			if (rc)
				break;
			child = g_try_malloc(r->bs);
			if (!child)
				return -ENOMEM;
			rc = jl_read_meta(r, leaf, SFS_IO_INDIRECT, child);
			if (!rc)
				rc = jl_walk_extents(r, m, child, r->bs,
						     depth - 1);
			g_free(child);
		}
	}
	return rc;
}

/* Read inode ino (base 128 bytes, or the whole slot up to 256). */
static int jl_read_inode(const struct jl_reader *r, const struct sfs_dsuper *sb,
			 uint32_t ino, struct sfs_dinode *d, char **err)
{
	uint32_t ipg = sfs_le32(sb->s_inodes_per_group);
	uint32_t isize = sfs_le32(sb->s_rev_level) ? sfs_le16(sb->s_inode_size)
						   : SFS_GOOD_OLD_INODE_SIZE;
	uint32_t fdb = sfs_le32(sb->s_first_data_block);
	uint32_t blocks = sfs_le32(sb->s_blocks_count);
	uint32_t g, idx, tbl;
	uint64_t byte;
	uint8_t *buf;
	int rc;

	/* a power of two no larger than the block: no slot straddles two
	 * blocks (the superblock is not checked yet: recovery comes first) */
	if (ino == 0 || ino > sfs_le32(sb->s_inodes_count) || ipg == 0 ||
	    isize < SFS_GOOD_OLD_INODE_SIZE || isize > r->bs ||
	    (isize & (isize - 1))) {
		set_err(err,
			"journal inode %u out of range (or bad inode "
			"geometry)",
			ino);
		return -EINVAL;
	}
	g = (ino - 1) / ipg;
	idx = (ino - 1) % ipg;
	if (r->fs) {
		if (g >= sfs_geom(r->fs)->groups) {
			set_err(err,
				"journal inode %u lies beyond the last "
				"group",
				ino);
			return -EINVAL;
		}
		tbl = sfs_le32(sfs_group_desc(r->fs, g)->bg_inode_table);
	} else {
		uint64_t gd_byte = (uint64_t)g * sfs_sb_desc_size(sb);
		struct sfs_dgroup gd;
		buf = g_try_malloc(r->bs);
		if (!buf)
			return -ENOMEM;
		rc =
		    jl_read_meta(r, fdb + 1 + gd_byte / r->bs, SFS_IO_GDT, buf);
		if (!rc)
			memcpy(&gd, buf + gd_byte % r->bs, sizeof(gd));
		g_free(buf);
		if (rc) {
			set_err(err, "cannot read group descriptor %u: %s", g,
				g_strerror(-rc));
			return rc;
		}
		tbl = sfs_le32(gd.bg_inode_table);
	}
	byte = (uint64_t)idx * isize;
	if (tbl < fdb || tbl + byte / r->bs >= blocks) {
		set_err(err,
			"group %u: inode table at block %u is outside "
			"the filesystem",
			g, tbl);
		return -EINVAL;
	}
	buf = g_try_malloc(r->bs);
	if (!buf)
		return -ENOMEM;
	rc = jl_read_meta(r, tbl + byte / r->bs, SFS_IO_INODE, buf);
	if (rc) {
		set_err(err, "cannot read journal inode %u: %s", ino,
			g_strerror(-rc));
	} else {
		memset(d, 0, sizeof(*d));
		memcpy(d, buf + byte % r->bs, MIN(isize, sizeof(*d)));
	}
	g_free(buf);
	return rc;
}

/* Check the journal inode and read its map into log->runs. */
static int jl_map_inode(struct sfs_jlog *log, const struct jl_reader *r,
			const struct sfs_dsuper *sb, char **err)
{
	struct jl_mapper m = {0};
	struct sfs_dinode d;
	uint64_t size;
	uint32_t mode;
	int rc;

	rc = jl_read_inode(r, sb, log->ino, &d, err);
	if (rc)
		return rc;
	mode = sfs_le16(d.i_mode);
	size = sfs_le32(d.i_size) | (uint64_t)sfs_le32(d.i_size_high) << 32;
	if ((mode & SFS_S_IFMT) != SFS_S_IFREG || !sfs_le16(d.i_links_count)) {
		set_err(err,
			"journal inode %u is not a regular file in use "
			"(mode 0%o, links %u)",
			log->ino, mode, sfs_le16(d.i_links_count));
		return -EINVAL;
	}
	if (size / log->bs < SFS_JBD2_MIN_BLOCKS ||
	    size / log->bs > UINT32_MAX) {
		set_err(err,
			"journal inode %u: %" PRIu64 " blocks, outside "
			"[%u, 2^32)",
			log->ino, size / log->bs, SFS_JBD2_MIN_BLOCKS);
		return -EINVAL;
	}
	if (size / log->bs > log->fs_blocks) {
		set_err(err,
			"journal inode %u: %" PRIu64 " blocks, more than "
			"the filesystem's %u",
			log->ino, size / log->bs, log->fs_blocks);
		return -EINVAL;
	}
	log->total = (uint32_t)(size / log->bs);
	m.runs = log->runs;
	m.want = log->total;
	m.fs_first = sfs_le32(sb->s_first_data_block);
	m.fs_blocks = log->fs_blocks;
	if (sfs_le32(d.i_flags) & SFS_EXTENTS_FL) {
		rc = jl_walk_extents(r, &m, (const uint8_t *)d.i_block,
				     sizeof(d.i_block), -1);
	} else if (r->fs) {
		struct sfs_inode tmp = {.ino = log->ino, .d = d};
		rc = sfs_map_walk(r->fs, &tmp, jl_map_cb, &m);
	} else {
		rc = jl_walk_blockmap(r, &m, &d);
	}
	if (rc == JL_MAP_DONE)
		rc = 0;
	if (!rc && m.next < m.want) {
		m.msg = m.msg ? m.msg
			      : g_strdup_printf("hole at logical block %u "
						"(journals may have none)",
						m.next);
		rc = -EINVAL;
	}
	if (rc) {
		set_err(err, "journal inode %u: %s", log->ino,
			m.msg ? m.msg : g_strerror(-rc));
		if (rc > 0)
			rc = -EINVAL;
	}
	g_free(m.msg);
	return rc;
}

/* ------------------------------------------------------------------ */
/* journal block I/O                                                  */
/* ------------------------------------------------------------------ */

/* Device block of journal block n and how many blocks follow it on the
 * device contiguously (n < log->total). */
static uint64_t jl_dev_block(const struct sfs_jlog *log, uint32_t n,
			     uint32_t *contig)
{
	const struct jl_run *v;
	guint lo = 0, hi;

	if (!log->runs) {
		*contig = log->total - n;
		return n;
	}
	v = (const struct jl_run *)(void *)log->runs->data;
	hi = log->runs->len;
	while (hi - lo > 1) {
		guint mid = (lo + hi) / 2;
		if (v[mid].lblk <= n)
			lo = mid;
		else
			hi = mid;
	}
	*contig = v[lo].lblk + v[lo].len - n;
	return v[lo].pblk + (n - v[lo].lblk);
}

/* Journal blocks a caller may address: s_maxlen once known, else all. */
static uint32_t jl_limit(const struct sfs_jlog *log)
{
	return log->maxlen ? log->maxlen : log->total;
}

int sfs_jlog_reserve(struct sfs_jlog *log)
{
	uint32_t n = 0, lim, contig;
	int rc;

	if (!log)
		return -EINVAL;
	lim = jl_limit(log);
	while (n < lim) {
		uint64_t d = jl_dev_block(log, n, &contig);

		contig = MIN(contig, lim - n);
		rc = sfs_bdev_reserve(log->jdev, d * log->bs,
				      (uint64_t)contig * log->bs);
		if (rc)
			return rc;
		n += contig;
	}
	return 0;
}

int sfs_jlog_bmap(const struct sfs_jlog *log, uint32_t n, uint64_t *dev_blk)
{
	uint32_t contig;

	if (!log || !dev_blk || n >= jl_limit(log))
		return -EINVAL;
	*dev_blk = jl_dev_block(log, n, &contig);
	return 0;
}

int sfs_jlog_read_block(struct sfs_jlog *log, uint32_t n, void *buf)
{
	uint32_t contig;
	uint64_t d;
	int rc;

	if (!log || !buf || n >= jl_limit(log))
		return -EINVAL;
	d = jl_dev_block(log, n, &contig);
	rc =
	    sfs_bdev_read(log->jdev, SFS_IO_JOURNAL, d * log->bs, buf, log->bs);
	if (rc)
		jl_set_msg(log,
			   "cannot read journal block %u (device block "
			   "%" PRIu64 "): %s",
			   n, d, g_strerror(-rc));
	return rc;
}

/* Write count blocks from n on, without wrapping (n + count <= limit). */
static int jl_write_span(struct sfs_jlog *log, uint32_t n, uint32_t count,
			 const uint8_t *buf)
{
	while (count) {
		uint32_t contig;
		uint64_t d = jl_dev_block(log, n, &contig);
		uint32_t k = MIN(contig, count);
		int rc = sfs_bdev_write(log->jdev, SFS_IO_JOURNAL, d * log->bs,
					buf, (size_t)k * log->bs);
		if (rc) {
			jl_set_msg(log,
				   "cannot write journal block %u "
				   "(device block %" PRIu64 "): %s",
				   n, d, g_strerror(-rc));
			return rc;
		}
		n += k;
		count -= k;
		buf += (size_t)k * log->bs;
	}
	return 0;
}

int sfs_jlog_write_block(struct sfs_jlog *log, uint32_t n, const void *buf)
{
	if (!log || !buf || n >= jl_limit(log))
		return -EINVAL;
	return jl_write_span(log, n, 1, buf);
}

uint32_t sfs_jlog_next(const struct sfs_jlog *log, uint32_t n)
{
	n++;
	return n >= log->maxlen ? log->first : n;
}

/* n advanced by k blocks in the circular log (recovery's wrap()). */
static uint32_t jl_advance(const struct sfs_jlog *log, uint32_t n, uint64_t k)
{
	uint64_t x = (uint64_t)n + k;
	uint64_t cap = log->maxlen - log->first;

	if (x >= log->maxlen)
		x = log->first + (x - log->first) % cap;
	return (uint32_t)x;
}

int sfs_jlog_write_blocks(struct sfs_jlog *log, uint32_t n, uint32_t count,
			  const void *buf)
{
	const uint8_t *p = buf;

	if (!log || (!buf && count) || n < log->first || n >= log->maxlen ||
	    count > log->maxlen - log->first)
		return -EINVAL;
	while (count) {
		uint32_t k = MIN(count, log->maxlen - n);
		int rc = jl_write_span(log, n, k, p);
		if (rc)
			return rc;
		p += (size_t)k * log->bs;
		count -= k;
		n = jl_advance(log, n, k);
	}
	return 0;
}

int sfs_jlog_flush(struct sfs_jlog *log)
{
	int rc;

	if (!log)
		return -EINVAL;
	rc = sfs_bdev_flush(log->jdev);
	if (!rc && log->fs_bd != log->jdev)
		rc = sfs_bdev_flush(log->fs_bd);
	return rc;
}

/* ------------------------------------------------------------------ */
/* the journal superblock                                             */
/* ------------------------------------------------------------------ */

/* Name the features simfs cannot honour; NULL if there are none. */
static char *jl_bad_features(uint32_t compat, uint32_t incompat,
			     uint32_t ro_compat)
{
	static const struct {
		int word;
		uint32_t bit;
		const char *name;
	} names[] = {
	    {1, SFS_JBD2_INCOMPAT_FAST_COMMIT, "fast_commit"},
	};
	static const char *const words[] = {"compat", "incompat", "ro_compat"};
	uint32_t w[3] = {compat & ~SFS_JBD2_COMPAT_KNOWN,
			 incompat & ~SFS_JBD2_INCOMPAT_KNOWN, ro_compat};

	if ((incompat & SFS_JBD2_INCOMPAT_CSUM_V2) &&
	    (incompat & SFS_JBD2_INCOMPAT_CSUM_V3))
		return g_strdup("'journal_checksum_v2' together with "
				"'journal_checksum_v3' (the kernel refuses "
				"both at once)");

	for (int i = 0; i < 3; i++) {
		uint32_t bit;
		if (!w[i])
			continue;
		bit = w[i] & -w[i];
		for (size_t k = 0; k < G_N_ELEMENTS(names); k++)
			if (names[k].word == i && names[k].bit == bit)
				return g_strdup_printf("'%s' (%s 0x%x)",
						       names[k].name, words[i],
						       bit);
		return g_strdup_printf("unknown %s feature 0x%x", words[i],
				       bit);
	}
	return NULL;
}

#define JL_SB_CSUM_TYPE_OFF 0x50 /* s_checksum_type */
#define JL_SB_CSUM_OFF 0xFC	 /* s_checksum, crc32c of the 1024 bytes */
#define JL_CRC32C_CHKSUM 4	 /* JBD2_CRC32C_CHKSUM */

/* jbd2_superblock_csum: crc32c(~0) of the 1024 bytes, s_checksum zero. */
static uint32_t jl_super_csum(const struct sfs_jbd2_super *j)
{
	struct sfs_jbd2_super c = *j;

	memset((uint8_t *)&c + JL_SB_CSUM_OFF, 0, 4);
	return sfs_crc32c(~0u, &c, sizeof(c));
}

/* The block format the journal superblock's features ask for
 * (journal_tag_bytes, the revoke record size, j_csum_seed). */
static void jl_format(struct sfs_jlog *log)
{
	const struct sfs_jbd2_super *j = jl_jsb(log);
	uint32_t inc = sfs_be32(j->s_feature_incompat);

	log->csum3 = inc & SFS_JBD2_INCOMPAT_CSUM_V3;
	log->csum = log->csum3 || (inc & SFS_JBD2_INCOMPAT_CSUM_V2);
	log->csum1 = !log->csum &&
		     (sfs_be32(j->s_feature_compat) & SFS_JBD2_COMPAT_CHECKSUM);
	log->is64 = inc & SFS_JBD2_INCOMPAT_64BIT;
	if (log->csum3)
		log->tag_bytes = JL_TAG3;
	else
		log->tag_bytes =
		    JL_TAG + (log->csum ? 2 : 0) + (log->is64 ? 4 : 0);
	log->rec_bytes = log->is64 ? 8 : 4;
	log->seed = sfs_crc32c(~0u, j->s_uuid, sizeof(j->s_uuid));
}

/* Stamp s_checksum_type and s_checksum when the log is checksummed. */
static void jl_super_csum_set(struct sfs_jlog *log)
{
	struct sfs_jbd2_super *j = jl_jsb(log);
	uint8_t *raw = (uint8_t *)j;

	if (!log->csum)
		return;
	raw[JL_SB_CSUM_TYPE_OFF] = JL_CRC32C_CHKSUM;
	put_be32(raw + JL_SB_CSUM_OFF, jl_super_csum(j));
}

/* journal_get_superblock's checksum checks: a known checksum type and a
 * superblock sum that matches.  0, or -EINVAL with *err. */
static int jl_check_csum_super(const struct sfs_jbd2_super *j, char **err)
{
	const uint8_t *raw = (const uint8_t *)j;
	uint32_t inc = sfs_be32(j->s_feature_incompat), want, got;

	if (!(inc & (SFS_JBD2_INCOMPAT_CSUM_V2 | SFS_JBD2_INCOMPAT_CSUM_V3)))
		return 0;
	if (sfs_be32(j->s_feature_compat) & SFS_JBD2_COMPAT_CHECKSUM) {
		set_err(err, "journal has checksum v1 and v%d at once",
			(inc & SFS_JBD2_INCOMPAT_CSUM_V3) ? 3 : 2);
		return -EINVAL;
	}
	if (raw[JL_SB_CSUM_TYPE_OFF] != JL_CRC32C_CHKSUM) {
		set_err(err,
			"journal superblock: unknown checksum type %u "
			"(crc32c is %u)",
			raw[JL_SB_CSUM_TYPE_OFF], JL_CRC32C_CHKSUM);
		return -EINVAL;
	}
	want = get_be32(raw + JL_SB_CSUM_OFF);
	got = jl_super_csum(j);
	if (want != got) {
		set_err(err,
			"journal superblock checksum 0x%08x, computed "
			"0x%08x",
			want, got);
		return -EINVAL;
	}
	return 0;
}

/* Validate the journal superblock in log->sb_block; set first/maxlen. */
static int jl_check_super(struct sfs_jlog *log, char **err)
{
	const struct sfs_jbd2_super *j = jl_jsb(log);
	uint32_t magic = sfs_be32(j->s_header.h_magic);
	uint32_t type = sfs_be32(j->s_header.h_blocktype);
	uint32_t bsz = sfs_be32(j->s_blocksize);
	uint32_t maxlen = sfs_be32(j->s_maxlen);
	uint32_t first = sfs_be32(j->s_first);
	uint32_t start = sfs_be32(j->s_start);
	uint32_t users = sfs_be32(j->s_nr_users);
	char *bad;

	if (magic != SFS_JBD2_MAGIC) {
		set_err(err,
			"journal superblock (journal block %u): bad magic "
			"0x%08x, expected 0x%08x",
			log->sb_blk, magic, SFS_JBD2_MAGIC);
		return -EINVAL;
	}
	if (type == SFS_JBD2_SUPER_V1) {
		set_err(err, "journal superblock is version 1 (jbd), simfs "
			     "needs version 2");
		return -EINVAL;
	}
	if (type != SFS_JBD2_SUPER_V2) {
		set_err(err,
			"journal block %u is not a journal superblock "
			"(block type %u)",
			log->sb_blk, type);
		return -EINVAL;
	}
	if (bsz != log->bs) {
		set_err(err,
			"journal block size %u differs from the "
			"filesystem's %u",
			bsz, log->bs);
		return -EINVAL;
	}
	if (maxlen > log->total) {
		set_err(err,
			"journal too short: s_maxlen %u but only %u "
			"blocks exist",
			maxlen, log->total);
		return -EINVAL;
	}
	if (maxlen < SFS_JBD2_MIN_BLOCKS) {
		set_err(err, "journal too small: s_maxlen %u < %u", maxlen,
			SFS_JBD2_MIN_BLOCKS);
		return -EINVAL;
	}
	if (first <= log->sb_blk || first >= maxlen) {
		set_err(err, "journal s_first %u outside (%u, s_maxlen %u)",
			first, log->sb_blk, maxlen);
		return -EINVAL;
	}
	bad = jl_bad_features(sfs_be32(j->s_feature_compat),
			      sfs_be32(j->s_feature_incompat),
			      sfs_be32(j->s_feature_ro_compat));
	if (bad) {
		set_err(err,
			"journal has feature %s, which simfs does not "
			"support",
			bad);
		g_free(bad);
		return -EINVAL;
	}
	if (jl_check_csum_super(j, err))
		return -EINVAL;
	if (start && (start < first || start >= maxlen)) {
		set_err(err, "journal s_start %u outside the log [%u, %u)",
			start, first, maxlen);
		return -EINVAL;
	}
	if (log->external) {
		if (users != 1) {
			set_err(err,
				"external journal has %u users, simfs "
				"(like the kernel) needs exactly 1",
				users);
			return -EINVAL;
		}
		if (memcmp(j->s_users, log->fs_uuid, 16)) {
			char u[37];
			uuid_str(j->s_users, u);
			set_err(err,
				"external journal's user is %s, not this "
				"filesystem",
				u);
			return -EINVAL;
		}
	} else if (users > 1) {
		set_err(err, "internal journal has %u users (at most 1)",
			users);
		return -EINVAL;
	}
	log->first = first;
	log->maxlen = maxlen;
	jl_format(log);
	return 0;
}

void sfs_jlog_get_super(const struct sfs_jlog *log, struct sfs_jlog_super *out)
{
	const struct sfs_jbd2_super *j = jl_jsb(log);

	memset(out, 0, sizeof(*out));
	out->blocksize = sfs_be32(j->s_blocksize);
	out->maxlen = sfs_be32(j->s_maxlen);
	out->first = sfs_be32(j->s_first);
	out->sequence = sfs_be32(j->s_sequence);
	out->start = sfs_be32(j->s_start);
	out->errno_val = (int32_t)sfs_be32(j->s_errno);
	out->feature_compat = sfs_be32(j->s_feature_compat);
	out->feature_incompat = sfs_be32(j->s_feature_incompat);
	out->feature_ro_compat = sfs_be32(j->s_feature_ro_compat);
	memcpy(out->uuid, j->s_uuid, 16);
	out->nr_users = sfs_be32(j->s_nr_users);
}

int sfs_jlog_write_super(struct sfs_jlog *log, const struct sfs_jlog_super *in)
{
	struct sfs_jbd2_super *j;
	char *bad;

	if (!log || !in)
		return -EINVAL;
	if (in->start && (in->start < log->first || in->start >= log->maxlen)) {
		jl_set_msg(log, "s_start %u outside the log [%u, %u)",
			   in->start, log->first, log->maxlen);
		return -EINVAL;
	}
	bad = jl_bad_features(in->feature_compat, in->feature_incompat,
			      in->feature_ro_compat);
	if (bad) {
		jl_set_msg(log, "cannot write journal feature %s", bad);
		g_free(bad);
		return -EINVAL;
	}
	j = jl_jsb(log);
	j->s_sequence = sfs_cpu_to_be32(in->sequence);
	j->s_start = sfs_cpu_to_be32(in->start);
	j->s_errno = sfs_cpu_to_be32((uint32_t)in->errno_val);
	j->s_feature_compat = sfs_cpu_to_be32(in->feature_compat);
	j->s_feature_incompat = sfs_cpu_to_be32(in->feature_incompat);
	j->s_feature_ro_compat = sfs_cpu_to_be32(in->feature_ro_compat);
	jl_format(log);
	jl_super_csum_set(log);
	return jl_write_span(log, log->sb_blk, 1, log->sb_block);
}

/* ------------------------------------------------------------------ */
/* open / close                                                       */
/* ------------------------------------------------------------------ */

/* Check an external journal device against the filesystem superblock. */
static int jl_check_ext_dev(struct sfs_jlog *log, const struct sfs_dsuper *fsb,
			    char **err)
{
	struct sfs_dsuper d;
	uint64_t dev_blocks = sfs_bdev_size_bytes(log->jdev) / log->bs;
	char want[37], got[37];
	int rc;

	if (sfs_bdev_size_bytes(log->jdev) <
	    SFS_SUPER_OFFSET + SFS_SUPER_SIZE) {
		set_err(err, "journal device too small");
		return -EINVAL;
	}
	rc = sfs_bdev_read(log->jdev, SFS_IO_JOURNAL, SFS_SUPER_OFFSET, &d,
			   sizeof(d));
	if (rc) {
		set_err(err, "cannot read the journal device's superblock: %s",
			g_strerror(-rc));
		return rc;
	}
	if (sfs_le16(d.s_magic) != SFS_SUPER_MAGIC ||
	    !(sfs_le32(d.s_feature_incompat) &
	      SFS_FEATURE_INCOMPAT_JOURNAL_DEV)) {
		set_err(err,
			"journal device has no ext2 superblock with the "
			"journal_dev feature (magic 0x%04x, incompat 0x%x)",
			sfs_le16(d.s_magic), sfs_le32(d.s_feature_incompat));
		return -EINVAL;
	}
	if (sfs_le32(d.s_log_block_size) != sfs_le32(fsb->s_log_block_size)) {
		set_err(err,
			"journal device block size %u differs from the "
			"filesystem's %u",
			1024u << MIN(sfs_le32(d.s_log_block_size), 16u),
			log->bs);
		return -EINVAL;
	}
	if (memcmp(d.s_uuid, fsb->s_journal_uuid, 16)) {
		uuid_str(fsb->s_journal_uuid, want);
		uuid_str(d.s_uuid, got);
		set_err(err,
			"journal device UUID %s is not the filesystem's "
			"journal %s",
			got, want);
		return -EINVAL;
	}
	if (sfs_le32(d.s_blocks_count) > dev_blocks) {
		set_err(err,
			"journal device claims %u blocks but holds %" PRIu64,
			sfs_le32(d.s_blocks_count), dev_blocks);
		return -EINVAL;
	}
	log->total = sfs_le32(d.s_blocks_count);
	log->sb_blk = log->bs == 1024 ? 2 : 1;
	if (log->total <= log->sb_blk) {
		set_err(err, "journal device too small (%u blocks)",
			log->total);
		return -EINVAL;
	}
	return 0;
}

/*
 * What ext4 asks of the journal when it mounts (ext4_load_journal,
 * set_journal_csum_feature_set): journal_64bit on a 64bit filesystem,
 * checksum v3 (not v2, not v1) on a metadata_csum one.  Only for a clean
 * log, in the copy kept: the next superblock write records it, and no
 * transaction counts before that write.
 */
static void jl_mount_features(struct sfs_jlog *log, const struct sfs_dsuper *sb)
{
	struct sfs_jbd2_super *j = jl_jsb(log);
	uint32_t inc = sfs_be32(j->s_feature_incompat);
	uint32_t compat = sfs_be32(j->s_feature_compat);

	if (j->s_start)
		return;
	/* neither journal_checksum nor journal_async_commit: a policy that
	 * wants them asks again (sfs_jlog_want_features) */
	compat &= ~SFS_JBD2_COMPAT_CHECKSUM;
	inc &= ~SFS_JBD2_INCOMPAT_ASYNC_COMMIT;
	if (sfs_le32(sb->s_feature_incompat) & SFS_FEATURE_INCOMPAT_64BIT)
		inc |= SFS_JBD2_INCOMPAT_64BIT;
	if (sfs_le32(sb->s_feature_ro_compat) &
	    SFS_FEATURE_RO_COMPAT_METADATA_CSUM) {
		inc = (inc & ~SFS_JBD2_INCOMPAT_CSUM_V2) |
		      SFS_JBD2_INCOMPAT_CSUM_V3;
		compat &= ~SFS_JBD2_COMPAT_CHECKSUM;
	}
	j->s_feature_incompat = sfs_cpu_to_be32(inc);
	j->s_feature_compat = sfs_cpu_to_be32(compat);
	jl_format(log);
	jl_super_csum_set(log);
}

void sfs_jlog_want_features(struct sfs_jlog *log, uint32_t compat,
			    uint32_t incompat)
{
	struct sfs_jbd2_super *j = jl_jsb(log);

	if (j->s_start)
		return;
	if (log->csum)
		compat &= ~SFS_JBD2_COMPAT_CHECKSUM; /* v2/v3 sum instead */
	j->s_feature_compat =
	    sfs_cpu_to_be32(sfs_be32(j->s_feature_compat) | compat);
	j->s_feature_incompat =
	    sfs_cpu_to_be32(sfs_be32(j->s_feature_incompat) | incompat);
	jl_format(log);
	jl_super_csum_set(log);
}

static int jl_open(struct sfs_bdev *fs_bd, struct sfs_fs *fs,
		   struct sfs_bdev *jdev, struct sfs_jlog **out, char **err)
{
	struct sfs_jlog *log;
	struct sfs_dsuper sbuf;
	const struct sfs_dsuper *sb;
	struct jl_reader r;
	int rc;

	if (fs) {
		sb = sfs_fs_super(fs);
	} else {
		rc = jl_read_fs_super(fs_bd, &sbuf, err);
		if (rc)
			return rc;
		sb = &sbuf;
	}
	if (!(sfs_le32(sb->s_feature_compat) &
	      SFS_FEATURE_COMPAT_HAS_JOURNAL)) {
		set_err(err,
			"filesystem has no journal (has_journal is clear)");
		return -EINVAL;
	}
	log = g_new0(struct sfs_jlog, 1);
	log->fs_bd = fs_bd;
	log->fs = fs;
	log->bs = 1024u << sfs_le32(sb->s_log_block_size);
	log->fs_blocks = sfs_le32(sb->s_blocks_count);
	memcpy(log->fs_uuid, sb->s_uuid, 16);
	log->ino = sfs_le32(sb->s_journal_inum);
	r = (struct jl_reader){.bd = fs_bd, .fs = fs, .bs = log->bs};

	if (log->ino) {
		if (jdev && jdev != fs_bd) {
			set_err(err,
				"filesystem has an internal journal "
				"(inode %u); no journal device expected",
				log->ino);
			rc = -EINVAL;
			goto out_free;
		}
		log->jdev = fs_bd;
		log->runs = g_array_new(FALSE, FALSE, sizeof(struct jl_run));
		rc = jl_map_inode(log, &r, sb, err);
		if (rc)
			goto out_free;
		log->sb_blk = 0;
	} else {
		if (!jdev) {
			char u[37];
			uuid_str(sb->s_journal_uuid, u);
			set_err(err,
				"filesystem uses an external journal "
				"(UUID %s, device 0x%x): give its device",
				u, sfs_le32(sb->s_journal_dev));
			rc = -EINVAL;
			goto out_free;
		}
		log->external = true;
		log->jdev = jdev;
		rc = jl_check_ext_dev(log, sb, err);
		if (rc)
			goto out_free;
	}
	log->sb_block = g_try_malloc(log->bs);
	if (!log->sb_block) {
		rc = -ENOMEM;
		goto out_free;
	}
	rc = sfs_jlog_read_block(log, log->sb_blk, log->sb_block);
	if (rc) {
		set_err(err, "%s", log->msg);
		goto out_free;
	}
	rc = jl_check_super(log, err);
	if (rc)
		goto out_free;
	if (fs)
		jl_mount_features(log, sb);
	*out = log;
	return 0;

out_free:
	sfs_jlog_close(log);
	return rc;
}

int sfs_jlog_open_dev(struct sfs_bdev *fs_bd, struct sfs_bdev *jdev,
		      struct sfs_jlog **out, char **err)
{
	if (!fs_bd || !out)
		return -EINVAL;
	return jl_open(fs_bd, NULL, jdev, out, err);
}

int sfs_jlog_open_fs(struct sfs_fs *fs, struct sfs_bdev *jdev,
		     struct sfs_jlog **out, char **err)
{
	if (!fs || !out)
		return -EINVAL;
	return jl_open(sfs_fs_bdev(fs), fs, jdev, out, err);
}

void sfs_jlog_close(struct sfs_jlog *log)
{
	if (!log)
		return;
	if (log->runs)
		g_array_free(log->runs, TRUE);
	g_free(log->sb_block);
	g_free(log->msg);
	g_free(log);
}

uint32_t sfs_jlog_block_size(const struct sfs_jlog *log)
{
	return log->bs;
}

uint32_t sfs_jlog_first(const struct sfs_jlog *log)
{
	return log->first;
}

uint32_t sfs_jlog_maxlen(const struct sfs_jlog *log)
{
	return log->maxlen;
}

uint32_t sfs_jlog_capacity(const struct sfs_jlog *log)
{
	return log->maxlen - log->first;
}

bool sfs_jlog_is_external(const struct sfs_jlog *log)
{
	return log->external;
}

const char *sfs_jlog_error(const struct sfs_jlog *log)
{
	return log ? log->msg : NULL;
}

/* ------------------------------------------------------------------ */
/* writing a transaction                                              */
/* ------------------------------------------------------------------ */

/*
 * jbd2 commit: after each tag (the first followed by its UUID) the
 * descriptor is full once fewer than tag + UUID + tail bytes remain, so
 * after k tags bs - 12 - 16 - tb*k < tb + 16 + tail.
 */
static uint32_t jl_tags_per(uint32_t bs, uint32_t tb, uint32_t tail)
{
	return (bs - JL_HDR - JL_UUID - tb - JL_UUID - tail) / tb + 1;
}

/* Blocks of a transaction of n_blocks blocks and n_revoked revokes. */
static uint32_t jl_txn_blocks(uint32_t t, uint32_t r, uint32_t n_blocks,
			      uint32_t n_revoked)
{
	uint64_t n = (uint64_t)n_blocks + (n_blocks + t - 1) / t +
		     (n_revoked + r - 1) / r + 1;

	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

uint32_t sfs_jbd2_tags_per_desc(uint32_t bs)
{
	return jl_tags_per(bs, JL_TAG, 0);
}

uint32_t sfs_jbd2_revokes_per_block(uint32_t bs)
{
	return (bs - JL_REVOKE_HDR) / 4;
}

uint32_t sfs_jbd2_txn_blocks(uint32_t bs, uint32_t n_blocks, uint32_t n_revoked)
{
	return jl_txn_blocks(sfs_jbd2_tags_per_desc(bs),
			     sfs_jbd2_revokes_per_block(bs), n_blocks,
			     n_revoked);
}

/* Bytes of a descriptor or revoke block before its tail. */
static uint32_t jl_desc_end(const struct sfs_jlog *log)
{
	return log->bs - (log->csum ? JL_TAIL : 0);
}

uint32_t sfs_jlog_tags_per_desc(const struct sfs_jlog *log)
{
	return jl_tags_per(log->bs, log->tag_bytes, log->csum ? JL_TAIL : 0);
}

uint32_t sfs_jlog_revokes_per_block(const struct sfs_jlog *log)
{
	return (jl_desc_end(log) - JL_REVOKE_HDR) / log->rec_bytes;
}

uint32_t sfs_jlog_txn_blocks(const struct sfs_jlog *log, uint32_t n_blocks,
			     uint32_t n_revoked)
{
	return jl_txn_blocks(sfs_jlog_tags_per_desc(log),
			     sfs_jlog_revokes_per_block(log), n_blocks,
			     n_revoked);
}

/* jbd2_descriptor_block_csum: crc32c(seed) of the block, tail zero. */
static uint32_t jl_tail_csum(const struct sfs_jlog *log, const uint8_t *b)
{
	static const uint8_t zero[JL_TAIL];
	uint32_t c = sfs_crc32c(log->seed, b, log->bs - JL_TAIL);

	return sfs_crc32c(c, zero, JL_TAIL);
}

static void jl_tail_set(const struct sfs_jlog *log, uint8_t *b)
{
	if (log->csum)
		put_be32(b + log->bs - JL_TAIL, jl_tail_csum(log, b));
}

static bool jl_tail_ok(const struct sfs_jlog *log, const uint8_t *b)
{
	return !log->csum ||
	       get_be32(b + log->bs - JL_TAIL) == jl_tail_csum(log, b);
}

/* crc32_be (Linux lib/crc32.c): the CRC-32 polynomial 0x04c11db7, most
 * significant bit first, no inversion; jbd2's v1 checksum
 * (jbd2_checksum_data) runs it over whole log blocks from ~0. */
static uint32_t jl_crc32_table[256];

static gpointer jl_crc32_init(gpointer unused)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i << 24;
		for (int k = 0; k < 8; k++)
			c = (c & 0x80000000u) ? (c << 1) ^ 0x04c11db7u : c << 1;
		jl_crc32_table[i] = c;
	}
	return NULL;
}

static uint32_t jl_crc32_be(uint32_t crc, const uint8_t *p, size_t len)
{
	static GOnce once = G_ONCE_INIT;

	g_once(&once, jl_crc32_init, NULL);
	while (len--)
		crc = (crc << 8) ^ jl_crc32_table[(crc >> 24) ^ *p++];
	return crc;
}

#define JL_CRC32_CHKSUM 1      /* JBD2_CRC32_CHKSUM */
#define JL_CRC32_CHKSUM_SIZE 4 /* JBD2_CRC32_CHKSUM_SIZE */

/* recovery.c's v1 test of a commit block against the sum of its
 * transaction: the sum with its type and size, or no sum at all. */
static bool jl_commit_v1_ok(const uint8_t *b, uint32_t sum)
{
	const struct sfs_jbd2_commit *h = (const void *)b;
	uint32_t found = sfs_be32(h->h_chksum[0]);

	if (h->h_chksum_type == 0 && h->h_chksum_size == 0 && found == 0)
		return true;
	return h->h_chksum_type == JL_CRC32_CHKSUM &&
	       h->h_chksum_size == JL_CRC32_CHKSUM_SIZE && found == sum;
}

/* jbd2_commit_block_csum: h_chksum[0] = crc32c(seed) of the block with
 * h_chksum_type, h_chksum_size and h_chksum[0] zero. */
static uint32_t jl_commit_csum(const struct sfs_jlog *log, const uint8_t *b)
{
	static const uint8_t zero[4];
	size_t type = offsetof(struct sfs_jbd2_commit, h_chksum_type);
	size_t pad = offsetof(struct sfs_jbd2_commit, h_padding);
	size_t sum = offsetof(struct sfs_jbd2_commit, h_chksum);
	uint32_t c = sfs_crc32c(log->seed, b, type);

	c = sfs_crc32c(c, zero, pad - type); /* h_chksum_type, _size */
	c = sfs_crc32c(c, b + pad, sum - pad);
	c = sfs_crc32c(c, zero, 4); /* h_chksum[0] */
	return sfs_crc32c(c, b + sum + 4, log->bs - sum - 4);
}

static bool jl_commit_ok(const struct sfs_jlog *log, const uint8_t *b)
{
	const struct sfs_jbd2_commit *h = (const void *)b;

	return !log->csum || sfs_be32(h->h_chksum[0]) == jl_commit_csum(log, b);
}

/* jbd2_block_tag_csum: crc32c(seed) of the be32 tid, then the block as
 * logged (escaped); v2 keeps the low 16 bits. */
static uint32_t jl_tag_csum(const struct sfs_jlog *log, uint32_t tid,
			    const uint8_t *data)
{
	uint8_t seq[4];

	put_be32(seq, tid);
	return sfs_crc32c(sfs_crc32c(log->seed, seq, 4), data, log->bs);
}

static void jl_tag_csum_set(const struct sfs_jlog *log, uint8_t *tag,
			    uint32_t tid, const uint8_t *data)
{
	uint32_t c;

	if (!log->csum)
		return;
	c = jl_tag_csum(log, tid, data);
	if (log->csum3)
		put_be32(tag + 12, c);
	else
		put_be16(tag + 4, (uint16_t)c);
}

static bool jl_tag_csum_ok(const struct sfs_jlog *log, const uint8_t *tag,
			   uint32_t tid, const uint8_t *data)
{
	uint32_t c;

	if (!log->csum)
		return true;
	c = jl_tag_csum(log, tid, data);
	if (log->csum3)
		return get_be32(tag + 12) == c;
	return get_be16(tag + 4) == (uint16_t)c;
}

/* A tag's home block: t_blocknr, with t_blocknr_high under 64bit (the
 * flags sit in the low half of v3's be32 t_flags, where v2 has them). */
static uint64_t jl_tag_home(const struct sfs_jlog *log, const uint8_t *tag)
{
	uint64_t h = get_be32(tag);

	if (log->is64)
		h |= (uint64_t)get_be32(tag + 8) << 32;
	return h;
}

static uint64_t jl_revoke_rec(const struct sfs_jlog *log, const uint8_t *p)
{
	if (log->is64)
		return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
	return get_be32(p);
}

static void jl_header(uint8_t *b, uint32_t type, uint32_t tid)
{
	put_be32(b, SFS_JBD2_MAGIC);
	put_be32(b + 4, type);
	put_be32(b + 8, tid);
}

/* Set the REVOKE feature in the journal superblock if it is not yet. */
static int jl_want_revoke_feature(struct sfs_jlog *log)
{
	struct sfs_jlog_super s;

	sfs_jlog_get_super(log, &s);
	if (s.feature_incompat & SFS_JBD2_INCOMPAT_REVOKE)
		return 0;
	s.feature_incompat |= SFS_JBD2_INCOMPAT_REVOKE;
	return sfs_jlog_write_super(log, &s);
}

int sfs_jlog_write_txn(struct sfs_jlog *log, uint32_t tid, uint32_t start_block,
		       const struct sfs_jtxn_blocks *blocks,
		       const uint32_t *revoked, uint32_t n_revoked,
		       const struct timespec *commit_time, unsigned flags,
		       uint32_t *next_out, uint32_t *used_out)
{
	uint32_t n = blocks ? blocks->n : 0;
	uint32_t need, t, r, pos, sum1;
	uint8_t *chunk;
	size_t bs;
	int rc = 0;

	if (!log || !next_out || !used_out || (n && !blocks->v) ||
	    (n_revoked && !revoked) || start_block < log->first ||
	    start_block >= log->maxlen)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		if (!blocks->v[i].data || blocks->v[i].home >= log->fs_blocks) {
			jl_set_msg(log,
				   "transaction %u: block %u of %u has "
				   "home %u, outside the filesystem",
				   tid, i, n, blocks->v[i].home);
			return -EINVAL;
		}
	for (uint32_t i = 0; i < n_revoked; i++)
		if (revoked[i] >= log->fs_blocks) {
			jl_set_msg(log,
				   "transaction %u: revoked block %u "
				   "outside the filesystem",
				   tid, revoked[i]);
			return -EINVAL;
		}
	bs = log->bs;
	need = sfs_jlog_txn_blocks(log, n, n_revoked);
	if (need > sfs_jlog_capacity(log)) {
		jl_set_msg(log,
			   "transaction %u needs %u log blocks, the log "
			   "holds %u",
			   tid, need, sfs_jlog_capacity(log));
		return -ENOSPC;
	}
	if (n_revoked) {
		rc = jl_want_revoke_feature(log);
		if (rc)
			return rc;
	}
	t = sfs_jlog_tags_per_desc(log);
	r = sfs_jlog_revokes_per_block(log);
	chunk = g_try_malloc((size_t)(t + 1) * bs);
	if (!chunk)
		return -ENOMEM;
	pos = start_block;
	sum1 = ~0u;

	/* revoke blocks: header, r_count (bytes used), be32 block numbers
	 * (be64 under 64bit), the tail */
	for (uint32_t i = 0; i < n_revoked; i += r) {
		uint32_t k = MIN(r, n_revoked - i);
		uint8_t *rec = chunk + JL_REVOKE_HDR;
		memset(chunk, 0, bs);
		jl_header(chunk, SFS_JBD2_REVOKE, tid);
		put_be32(chunk + JL_HDR, JL_REVOKE_HDR + log->rec_bytes * k);
		for (uint32_t j = 0; j < k; j++, rec += log->rec_bytes)
			put_be32(rec + log->rec_bytes - 4, revoked[i + j]);
		jl_tail_set(log, chunk);
		rc = sfs_jlog_write_blocks(log, pos, 1, chunk);
		if (rc)
			goto out_free;
		pos = sfs_jlog_next(log, pos);
	}

	/* descriptor blocks, each followed by the blocks its tags describe */
	for (uint32_t i = 0; i < n; i += t) {
		uint32_t k = MIN(t, n - i);
		uint8_t *tag = chunk + JL_HDR;
		memset(chunk, 0, bs);
		jl_header(chunk, SFS_JBD2_DESCRIPTOR, tid);
		for (uint32_t j = 0; j < k; j++) {
			const struct sfs_jtxn_block *b = &blocks->v[i + j];
			uint8_t *copy = chunk + (size_t)(j + 1) * bs;
			uint16_t tf = j ? SFS_JBD2_FLAG_SAME_UUID : 0;
			memcpy(copy, b->data, bs);
			if (get_be32(copy) == SFS_JBD2_MAGIC) {
				memset(copy, 0, 4);
				tf |= SFS_JBD2_FLAG_ESCAPE;
			}
			if (j == k - 1)
				tf |= SFS_JBD2_FLAG_LAST_TAG;
			/* t_blocknr_high (64bit) and the sums stay 0
			 * until set; t_flags is be16 at 6 in both layouts */
			put_be32(tag, b->home);
			put_be16(tag + 6, tf);
			jl_tag_csum_set(log, tag, tid, copy);
			tag += log->tag_bytes;
			if (j == 0)
				tag += JL_UUID; /* zero UUID, as the kernel */
		}
		jl_tail_set(log, chunk);
		if (log->csum1) /* commit.c: every block of wbuf[] */
			sum1 = jl_crc32_be(sum1, chunk, (size_t)(k + 1) * bs);
		rc = sfs_jlog_write_blocks(log, pos, k + 1, chunk);
		if (rc)
			goto out_free;
		pos = jl_advance(log, pos, k + 1);
	}

	if ((flags & SFS_JLOG_TXN_FLUSH) && !(flags & SFS_JLOG_TXN_ASYNC)) {
		rc = sfs_bdev_flush(log->jdev);
		if (rc)
			goto out_free;
	}
	/* the commit block */
	memset(chunk, 0, bs);
	jl_header(chunk, SFS_JBD2_COMMIT, tid);
	if (commit_time) {
		struct sfs_jbd2_commit *c = (void *)chunk;
		c->h_commit_sec =
		    sfs_cpu_to_be64((uint64_t)commit_time->tv_sec);
		c->h_commit_nsec =
		    sfs_cpu_to_be32((uint32_t)commit_time->tv_nsec);
	}
	if (log->csum1) {
		struct sfs_jbd2_commit *c = (void *)chunk;
		c->h_chksum_type = JL_CRC32_CHKSUM;
		c->h_chksum_size = JL_CRC32_CHKSUM_SIZE;
		c->h_chksum[0] = sfs_cpu_to_be32(sum1);
	}
	if (log->csum)
		((struct sfs_jbd2_commit *)(void *)chunk)->h_chksum[0] =
		    sfs_cpu_to_be32(jl_commit_csum(log, chunk));
	rc = sfs_jlog_write_blocks(log, pos, 1, chunk);
	if (rc)
		goto out_free;
	pos = sfs_jlog_next(log, pos);
	if (flags & SFS_JLOG_TXN_FLUSH) {
		rc = sfs_bdev_flush(log->jdev);
		if (rc)
			goto out_free;
	}
	*next_out = pos;
	*used_out = need;
out_free:
	g_free(chunk);
	return rc;
}

/* ------------------------------------------------------------------ */
/* recovery                                                           */
/* ------------------------------------------------------------------ */

enum jl_pass { JL_PASS_SCAN, JL_PASS_REVOKE, JL_PASS_REPLAY };

struct jl_rec {
	enum jl_pass pass;
	uint32_t end_tid;    /* set by the scan pass */
	GHashTable *revoked; /* home block -> highest revoking tid */
	struct sfs_jrecover_info *info;
	int replay_err; /* first error while replaying (kept going) */
	uint8_t *blk;	/* bs scratch: the block being parsed */
	uint8_t *data;	/* bs scratch: a logged copy */
};

/* Number of tags in a descriptor block (recovery's count_tags). */
static uint32_t jl_count_tags(const struct sfs_jlog *log, const uint8_t *b)
{
	uint32_t off = JL_HDR, nr = 0, end = jl_desc_end(log);

	while (off + log->tag_bytes <= end) {
		uint16_t f = get_be16(b + off + 6);
		nr++;
		off += log->tag_bytes;
		if (!(f & SFS_JBD2_FLAG_SAME_UUID))
			off += JL_UUID;
		if (f & SFS_JBD2_FLAG_LAST_TAG)
			break;
	}
	return nr;
}

static void jl_set_revoke(struct jl_rec *r, uint32_t blk, uint32_t tid)
{
	gpointer old;

	if (g_hash_table_lookup_extended(r->revoked, GUINT_TO_POINTER(blk),
					 NULL, &old) &&
	    !tid_gt(tid, GPOINTER_TO_UINT(old)))
		return;
	g_hash_table_insert(r->revoked, GUINT_TO_POINTER(blk),
			    GUINT_TO_POINTER(tid));
}

/* Is the copy of blk logged by transaction tid revoked? */
static bool jl_test_revoke(struct jl_rec *r, uint32_t blk, uint32_t tid)
{
	gpointer rt;

	if (!g_hash_table_lookup_extended(r->revoked, GUINT_TO_POINTER(blk),
					  NULL, &rt))
		return false;
	return !tid_gt(tid, GPOINTER_TO_UINT(rt));
}

static int jl_scan_revoke(struct sfs_jlog *log, struct jl_rec *r, uint32_t tid,
			  uint32_t at)
{
	uint32_t rcount = get_be32(r->blk + JL_HDR);

	if (!jl_tail_ok(log, r->blk)) {
		/* scan_revoke_records: -EFSBADCRC, the recovery fails */
		jl_set_msg(log,
			   "revoke block at journal block %u (transaction "
			   "%u): bad checksum 0x%08x, computed 0x%08x",
			   at, tid, get_be32(r->blk + log->bs - JL_TAIL),
			   jl_tail_csum(log, r->blk));
		r->info->n_csum_bad++;
		return -EIO;
	}
	if (rcount > jl_desc_end(log)) {
		jl_set_msg(log,
			   "revoke block at journal block %u: r_count %u "
			   "exceeds the block size %u",
			   at, rcount, log->bs);
		return -EINVAL;
	}
	for (uint32_t off = JL_REVOKE_HDR; off + log->rec_bytes <= rcount;
	     off += log->rec_bytes) {
		uint64_t b = jl_revoke_rec(log, r->blk + off);
		/* a block beyond 2^32 cannot be logged here: nothing to hide */
		if (b <= UINT32_MAX)
			jl_set_revoke(r, (uint32_t)b, tid);
		r->info->n_revokes++;
	}
	return 0;
}

/* Write a replayed block home: through the engine's cache, or the device. */
static int jl_write_home(struct sfs_jlog *log, uint32_t home,
			 const uint8_t *data)
{
	struct sfs_buf *b;
	int rc;

	if (!log->fs)
		return sfs_bdev_write(log->fs_bd, SFS_IO_JOURNAL,
				      (uint64_t)home * log->bs, data, log->bs);
	rc = sfs_cache_get_new(sfs_fs_cache(log->fs), home, SFS_IO_JOURNAL, &b);
	if (rc)
		return rc;
	memcpy(b->data, data, log->bs);
	sfs_cache_dirty(sfs_fs_cache(log->fs), b);
	sfs_cache_put(sfs_fs_cache(log->fs), b);
	return 0;
}

/* Replay the tags of the descriptor in r->blk; *blk = the log position
 * after the descriptor, advanced past the data blocks. */
static void jl_replay_desc(struct sfs_jlog *log, struct jl_rec *r, uint32_t tid,
			   uint32_t *blk)
{
	uint32_t off = JL_HDR, end = jl_desc_end(log);

	while (off + log->tag_bytes <= end) {
		const uint8_t *tag = r->blk + off;
		uint64_t home = jl_tag_home(log, tag);
		uint16_t f = get_be16(tag + 6);
		uint32_t io = *blk;
		int rc;

		*blk = sfs_jlog_next(log, *blk);
		rc = sfs_jlog_read_block(log, io, r->data);
		if (rc) {
			/* recover what we can, report the failure at the end */
			if (!r->replay_err)
				r->replay_err = rc;
		} else if (home >= log->fs_blocks) {
			jl_set_msg(log,
				   "transaction %u logs block %" PRIu64
				   ", outside the filesystem (%u blocks)",
				   tid, home, log->fs_blocks);
			if (!r->replay_err)
				r->replay_err = -EIO;
		} else if (jl_test_revoke(r, (uint32_t)home, tid)) {
			r->info->n_revoke_hits++;
		} else if (!jl_tag_csum_ok(log, tag, tid, r->data)) {
			/* do_one_pass: the block is not written home, the
			 * others are, and the recovery reports a failure */
			jl_set_msg(log,
				   "transaction %u: bad checksum on the copy "
				   "of block %" PRIu64 " at journal block %u; "
				   "not replayed",
				   tid, home, io);
			r->info->n_csum_bad++;
			if (!r->replay_err)
				r->replay_err = -EIO;
		} else {
			if (f & SFS_JBD2_FLAG_ESCAPE)
				put_be32(r->data, SFS_JBD2_MAGIC);
			rc = jl_write_home(log, (uint32_t)home, r->data);
			if (rc) {
				jl_set_msg(log,
					   "cannot write block %" PRIu64
					   " home: %s",
					   home, g_strerror(-rc));
				if (!r->replay_err)
					r->replay_err = rc;
			} else {
				r->info->n_replayed++;
			}
		}
		off += log->tag_bytes;
		if (!(f & SFS_JBD2_FLAG_SAME_UUID))
			off += JL_UUID;
		if (f & SFS_JBD2_FLAG_LAST_TAG)
			break;
	}
}

/* The scan pass met a block whose checksum is wrong: the log ends there
 * (recovery.c ends it at a bad commit block, and at a bad descriptor once
 * the transaction cannot commit).  Say so. */
static void jl_csum_end(struct sfs_jlog *log, struct jl_rec *r,
			const char *what, uint32_t at, uint32_t tid,
			uint32_t want, uint32_t got)
{
	jl_set_msg(log,
		   "%s at journal block %u (transaction %u): bad checksum "
		   "0x%08x, computed 0x%08x; the log ends there",
		   what, at, tid, want, got);
	r->info->n_csum_bad++;
	r->info->csum_end_block = at;
	g_strlcpy(r->info->csum_note, log->msg, sizeof(r->info->csum_note));
}

/* The scan pass over the descriptor in r->blk under checksum v1
 * (recovery.c calc_chksums): *sum takes the descriptor and each block it
 * tags, *blk moves past them. */
static int jl_sum_desc(struct sfs_jlog *log, struct jl_rec *r, uint32_t ntags,
		       uint32_t *blk, uint32_t *sum)
{
	int rc;

	*sum = jl_crc32_be(*sum, r->blk, log->bs);
	for (uint32_t i = 0; i < ntags; i++) {
		rc = sfs_jlog_read_block(log, *blk, r->data);
		if (rc)
			return rc;
		*sum = jl_crc32_be(*sum, r->data, log->bs);
		*blk = sfs_jlog_next(log, *blk);
	}
	return 0;
}

/* One pass over the log (recovery.c do_one_pass). */
static int jl_do_pass(struct sfs_jlog *log, struct jl_rec *r)
{
	const struct sfs_jbd2_super *j = jl_jsb(log);
	uint32_t next_tid = sfs_be32(j->s_sequence);
	uint32_t blk = sfs_be32(j->s_start);
	uint64_t walked = 0, cap = sfs_jlog_capacity(log);
	uint32_t sum1 = ~0u; /* checksum v1 of the transaction so far */
	int rc;

	for (;;) {
		uint32_t at, type, seq, ntags;

		if (r->pass != JL_PASS_SCAN && tid_geq(next_tid, r->end_tid))
			break;
		if (walked >= cap)
			break; /* all around the log: no end marker */
		at = blk;
		rc = sfs_jlog_read_block(log, at, r->blk);
		if (rc)
			return rc;
		blk = sfs_jlog_next(log, blk);
		walked++;
		if (get_be32(r->blk) != SFS_JBD2_MAGIC)
			break;
		type = get_be32(r->blk + 4);
		seq = get_be32(r->blk + 8);
		if (seq != next_tid)
			break;
		if (r->pass == JL_PASS_SCAN && type == SFS_JBD2_DESCRIPTOR &&
		    !jl_tail_ok(log, r->blk)) {
			jl_csum_end(log, r, "descriptor block", at, seq,
				    get_be32(r->blk + log->bs - JL_TAIL),
				    jl_tail_csum(log, r->blk));
			break;
		}
		if (r->pass == JL_PASS_SCAN && type == SFS_JBD2_COMMIT &&
		    !jl_commit_ok(log, r->blk)) {
			const struct sfs_jbd2_commit *c = (const void *)r->blk;
			jl_csum_end(log, r, "commit block", at, seq,
				    sfs_be32(c->h_chksum[0]),
				    jl_commit_csum(log, r->blk));
			break;
		}
		/* v1: a commit block whose sum does not match its transaction
		 * is no commit (with async commit, the blocks before it may
		 * not have reached the disk) */
		if (r->pass == JL_PASS_SCAN && type == SFS_JBD2_COMMIT &&
		    log->csum1) {
			const struct sfs_jbd2_commit *c = (const void *)r->blk;
			if (!jl_commit_v1_ok(r->blk, sum1)) {
				jl_csum_end(log, r, "commit block", at, seq,
					    sfs_be32(c->h_chksum[0]), sum1);
				break;
			}
			sum1 = ~0u;
		}
		if (type == SFS_JBD2_DESCRIPTOR) {
			ntags = jl_count_tags(log, r->blk);
			walked += ntags;
			if (r->pass == JL_PASS_SCAN && log->csum1) {
				rc = jl_sum_desc(log, r, ntags, &blk, &sum1);
				if (rc)
					return rc;
			} else if (r->pass != JL_PASS_REPLAY)
				blk = jl_advance(log, blk, ntags);
			else
				jl_replay_desc(log, r, next_tid, &blk);
		} else if (type == SFS_JBD2_COMMIT) {
			if (r->pass == JL_PASS_SCAN)
				r->info->n_txns++;
			next_tid++;
		} else if (type == SFS_JBD2_REVOKE) {
			if (r->pass == JL_PASS_REVOKE) {
				rc = jl_scan_revoke(log, r, next_tid, at);
				if (rc)
					return rc;
			}
		} else {
			break; /* unknown block type: end of the log */
		}
	}
	if (r->pass == JL_PASS_SCAN) {
		r->end_tid = next_tid;
	} else if (next_tid != r->end_tid) {
		jl_set_msg(log,
			   "recovery pass %d ended at transaction %u, "
			   "expected %u",
			   (int)r->pass, next_tid, r->end_tid);
		return -EIO;
	}
	return 0;
}

/* Set up the passes' state; r->info = info. */
static int jl_rec_init(struct sfs_jlog *log, struct jl_rec *r,
		       struct sfs_jrecover_info *info)
{
	memset(r, 0, sizeof(*r));
	memset(info, 0, sizeof(*info));
	r->info = info;
	r->blk = g_try_malloc(log->bs);
	r->data = g_try_malloc(log->bs);
	r->revoked = g_hash_table_new(g_direct_hash, g_direct_equal);
	if (!r->blk || !r->data)
		return -ENOMEM;
	info->start_tid = sfs_be32(jl_jsb(log)->s_sequence);
	info->journal_errno = (int32_t)sfs_be32(jl_jsb(log)->s_errno);
	return 0;
}

static void jl_rec_fini(struct jl_rec *r)
{
	g_free(r->blk);
	g_free(r->data);
	g_hash_table_destroy(r->revoked);
}

/* Mark the log empty: s_start = 0, s_sequence = end_tid + 1. */
static int jl_reset_log(struct sfs_jlog *log, uint32_t end_tid,
			struct sfs_jrecover_info *info)
{
	struct sfs_jlog_super s;
	int rc;

	sfs_jlog_get_super(log, &s);
	s.start = 0;
	s.sequence = end_tid + 1;
	info->next_tid = s.sequence;
	rc = sfs_jlog_write_super(log, &s);
	if (!rc)
		rc = sfs_bdev_flush(log->jdev);
	return rc;
}

int sfs_jlog_recover(struct sfs_jlog *log, struct sfs_jrecover_info *out)
{
	struct sfs_jrecover_info info;
	struct jl_rec r;
	int rc;

	if (!log)
		return -EINVAL;
	rc = jl_rec_init(log, &r, &info);
	if (rc)
		goto out;
	if (sfs_be32(jl_jsb(log)->s_start) == 0) {
		info.was_clean = true;
		info.end_tid = info.start_tid;
		info.next_tid = info.start_tid;
		goto out;
	}
	for (r.pass = JL_PASS_SCAN; r.pass <= JL_PASS_REPLAY; r.pass++) {
		rc = jl_do_pass(log, &r);
		if (rc)
			goto out;
	}
	info.end_tid = r.end_tid;
	if (r.replay_err) {
		rc = r.replay_err;
		goto out;
	}
	rc = log->fs ? sfs_cache_sync(sfs_fs_cache(log->fs))
		     : sfs_bdev_flush(log->fs_bd);
	if (rc) {
		jl_set_msg(log, "cannot flush replayed blocks: %s",
			   g_strerror(-rc));
		goto out;
	}
	rc = jl_reset_log(log, r.end_tid, &info);
out:
	jl_rec_fini(&r);
	if (out)
		*out = info;
	return rc;
}

/* jbd2_journal_skip_recovery: find the end of the log, then empty it. */
static int jl_skip(struct sfs_jlog *log, struct sfs_jrecover_info *info)
{
	struct jl_rec r;
	int rc;

	rc = jl_rec_init(log, &r, info);
	if (!rc) {
		r.pass = JL_PASS_SCAN;
		rc = jl_do_pass(log, &r);
	}
	if (!rc) {
		info->skipped = true;
		info->end_tid = r.end_tid;
		rc = jl_reset_log(log, r.end_tid, info);
	}
	jl_rec_fini(&r);
	return rc;
}

int sfs_jlog_mount_recover(struct sfs_bdev *fs_bd, struct sfs_bdev *jdev,
			   struct sfs_jrecover_info *out, char **err)
{
	struct sfs_jrecover_info info = {.was_clean = true};
	struct sfs_jlog *log = NULL;
	struct sfs_dsuper sb;
	uint32_t incompat;
	bool dirty = false;
	int rc;

	if (!fs_bd)
		return -EINVAL;
	rc = jl_read_fs_super(fs_bd, &sb, err);
	if (rc)
		return rc;
	incompat = sfs_le32(sb.s_feature_incompat);
	if (!(sfs_le32(sb.s_feature_compat) & SFS_FEATURE_COMPAT_HAS_JOURNAL)) {
		if (incompat & SFS_FEATURE_INCOMPAT_RECOVER) {
			set_err(err, "needs_recovery is set but the filesystem "
				     "has no journal");
			return -EINVAL;
		}
		goto out;
	}
	rc = sfs_jlog_open_dev(fs_bd, jdev, &log, err);
	if (rc)
		return rc;
	if (!(incompat & SFS_FEATURE_INCOMPAT_RECOVER) &&
	    sfs_be32(jl_jsb(log)->s_start))
		rc = jl_skip(log, &info); /* the kernel wipes such a log */
	else
		rc = sfs_jlog_recover(log, &info); /* no-op when clean */
	if (rc) {
		set_err(err, "journal recovery failed: %s",
			log->msg ? log->msg : g_strerror(-rc));
		goto out_close;
	}

	/* The superblock may have been replayed: read it again. */
	rc = jl_read_fs_super(fs_bd, &sb, err);
	if (rc)
		goto out_close;
	incompat = sfs_le32(sb.s_feature_incompat);
	if (incompat & SFS_FEATURE_INCOMPAT_RECOVER) {
		sb.s_feature_incompat =
		    sfs_cpu_to_le32(incompat & ~SFS_FEATURE_INCOMPAT_RECOVER);
		dirty = true;
	}
	if (info.journal_errno) {
		sb.s_state |= sfs_cpu_to_le16(SFS_STATE_ERROR);
		dirty = true;
	}
	if (dirty) {
		rc = jl_write_fs_super(fs_bd, &sb);
		if (!rc)
			rc = sfs_bdev_flush(fs_bd);
		if (rc) {
			set_err(err, "cannot write the superblock: %s",
				g_strerror(-rc));
			goto out_close;
		}
	}
	if (info.journal_errno) {
		struct sfs_jlog_super s;
		sfs_jlog_get_super(log, &s);
		s.errno_val = 0;
		rc = sfs_jlog_write_super(log, &s);
		if (!rc)
			rc = sfs_bdev_flush(log->jdev);
		if (rc)
			set_err(err, "cannot clear the journal's s_errno: %s",
				g_strerror(-rc));
	}
out_close:
	sfs_jlog_close(log);
out:
	if (out)
		*out = info;
	return rc;
}

/* ------------------------------------------------------------------ */
/* walking and printing                                               */
/* ------------------------------------------------------------------ */

struct jl_walk_txn {
	struct sfs_jtxn_info t;
	GArray *home, *jblock, *tflags, *revoked;
	uint64_t walked_at_start; /* log blocks walked before it began */
};

static void jl_walk_reset(struct jl_walk_txn *w, uint32_t tid, uint32_t start,
			  uint64_t walked)
{
	g_array_set_size(w->home, 0);
	g_array_set_size(w->jblock, 0);
	g_array_set_size(w->tflags, 0);
	g_array_set_size(w->revoked, 0);
	memset(&w->t, 0, sizeof(w->t));
	w->t.tid = tid;
	w->t.start_block = start;
	w->walked_at_start = walked;
}

static int jl_walk_emit(struct jl_walk_txn *w, uint64_t walked,
			sfs_jlog_walk_fn fn, void *ctx)
{
	w->t.n_log_blocks = (uint32_t)(walked - w->walked_at_start);
	w->t.n_logged = w->home->len;
	w->t.home = (const uint32_t *)(void *)w->home->data;
	w->t.jblock = (const uint32_t *)(void *)w->jblock->data;
	w->t.tflags = (const uint16_t *)(void *)w->tflags->data;
	w->t.n_revoked = w->revoked->len;
	w->t.revoked = (const uint32_t *)(void *)w->revoked->data;
	return fn(ctx, &w->t);
}

int sfs_jlog_walk(struct sfs_jlog *log, unsigned flags, sfs_jlog_walk_fn fn,
		  void *ctx)
{
	const struct sfs_jbd2_super *j;
	struct jl_walk_txn w;
	uint32_t tid, blk;
	uint64_t walked = 0, cap;
	uint8_t *b;
	int rc = 0;

	if (!log || !fn)
		return -EINVAL;
	j = jl_jsb(log);
	cap = sfs_jlog_capacity(log);
	tid = sfs_be32(j->s_sequence);
	blk = sfs_be32(j->s_start);
	b = g_try_malloc(log->bs);
	if (!b)
		return -ENOMEM;
	if (!blk) {
		if (!(flags & SFS_JLOG_WALK_STALE))
			goto out_free;
		blk = log->first;
		rc = sfs_jlog_read_block(log, blk, b);
		if (rc || get_be32(b) != SFS_JBD2_MAGIC)
			goto out_free;
		tid = get_be32(b + 8);
	}
	w.home = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	w.jblock = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	w.tflags = g_array_new(FALSE, FALSE, sizeof(uint16_t));
	w.revoked = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	jl_walk_reset(&w, tid, blk, 0);

	while (walked < cap) {
		uint32_t at = blk, type;
		rc = sfs_jlog_read_block(log, at, b);
		if (rc)
			goto out_arrays;
		if (get_be32(b) != SFS_JBD2_MAGIC || get_be32(b + 8) != tid)
			break;
		type = get_be32(b + 4);
		if (type != SFS_JBD2_DESCRIPTOR && type != SFS_JBD2_COMMIT &&
		    type != SFS_JBD2_REVOKE)
			break;
		blk = sfs_jlog_next(log, blk);
		walked++;
		if (type == SFS_JBD2_DESCRIPTOR) {
			uint32_t off = JL_HDR, end = jl_desc_end(log);
			w.t.n_desc++;
			while (off + log->tag_bytes <= end) {
				uint32_t home =
				    (uint32_t)jl_tag_home(log, b + off);
				uint16_t f = get_be16(b + off + 6);
				g_array_append_val(w.home, home);
				g_array_append_val(w.jblock, blk);
				g_array_append_val(w.tflags, f);
				blk = sfs_jlog_next(log, blk);
				walked++;
				off += log->tag_bytes;
				if (!(f & SFS_JBD2_FLAG_SAME_UUID))
					off += JL_UUID;
				if (f & SFS_JBD2_FLAG_LAST_TAG)
					break;
			}
		} else if (type == SFS_JBD2_REVOKE) {
			uint32_t rcount =
			    MIN(get_be32(b + JL_HDR), jl_desc_end(log));
			w.t.n_revoke_blocks++;
			for (uint32_t off = JL_REVOKE_HDR;
			     off + log->rec_bytes <= rcount;
			     off += log->rec_bytes) {
				uint32_t v =
				    (uint32_t)jl_revoke_rec(log, b + off);
				g_array_append_val(w.revoked, v);
			}
		} else {
			const struct sfs_jbd2_commit *c = (const void *)b;
			w.t.committed = true;
			w.t.commit_block = at;
			w.t.commit_sec = sfs_be64(c->h_commit_sec);
			w.t.commit_nsec = sfs_be32(c->h_commit_nsec);
			rc = jl_walk_emit(&w, walked, fn, ctx);
			if (rc)
				goto out_arrays;
			tid++;
			jl_walk_reset(&w, tid, blk, walked);
		}
	}
	if (walked > w.walked_at_start)
		rc = jl_walk_emit(&w, walked, fn, ctx);
out_arrays:
	g_array_free(w.home, TRUE);
	g_array_free(w.jblock, TRUE);
	g_array_free(w.tflags, TRUE);
	g_array_free(w.revoked, TRUE);
out_free:
	g_free(b);
	return rc;
}

struct jl_print {
	FILE *f;
	uint32_t n_txns;
	uint32_t end_block; /* block after the last transaction seen */
	uint32_t end_tid;   /* tid expected there */
	const struct sfs_jlog *log;
};

/* Print home@journal-block pairs, collapsing runs where both advance. */
static void jl_print_tags(FILE *f, const struct sfs_jtxn_info *t)
{
	uint32_t col = 0;

	for (uint32_t i = 0; i < t->n_logged;) {
		uint32_t k = 1;
		bool esc = t->tflags[i] & SFS_JBD2_FLAG_ESCAPE;
		while (i + k < t->n_logged && !esc &&
		       !(t->tflags[i + k] & SFS_JBD2_FLAG_ESCAPE) &&
		       t->home[i + k] == t->home[i] + k &&
		       t->jblock[i + k] == t->jblock[i] + k)
			k++;
		if (col == 0)
			fprintf(f, "   ");
		if (k == 1)
			fprintf(f, " %u@%u%s", t->home[i], t->jblock[i],
				esc ? "(escaped)" : "");
		else
			fprintf(f, " %u-%u@%u-%u", t->home[i],
				t->home[i] + k - 1, t->jblock[i],
				t->jblock[i] + k - 1);
		if (++col == 6) {
			fprintf(f, "\n");
			col = 0;
		}
		i += k;
	}
	if (col)
		fprintf(f, "\n");
}

static int jl_print_cb(void *ctx, const struct sfs_jtxn_info *t)
{
	struct jl_print *p = ctx;
	FILE *f = p->f;

	fprintf(f,
		"transaction %u: journal blocks %u.., %u blocks, %u "
		"descriptor%s, %u revoke block%s, ",
		t->tid, t->start_block, t->n_log_blocks, t->n_desc,
		t->n_desc == 1 ? "" : "s", t->n_revoke_blocks,
		t->n_revoke_blocks == 1 ? "" : "s");
	if (t->committed)
		fprintf(f, "commit at block %u, time %" PRIu64 ".%09u\n",
			t->commit_block, t->commit_sec, t->commit_nsec);
	else
		fprintf(f, "NOT committed (recovery ignores it)\n");
	fprintf(f, "  logged %u block%s (home@journal)%s\n", t->n_logged,
		t->n_logged == 1 ? "" : "s", t->n_logged ? ":" : "");
	jl_print_tags(f, t);
	fprintf(f, "  revoked %u block%s%s", t->n_revoked,
		t->n_revoked == 1 ? "" : "s", t->n_revoked ? ":" : "");
	for (uint32_t i = 0; i < t->n_revoked; i++)
		fprintf(f, "%s %u", i && i % 10 == 0 ? "\n   " : "",
			t->revoked[i]);
	fprintf(f, "\n");
	p->n_txns++;
	p->end_block = jl_advance(p->log, t->start_block, t->n_log_blocks);
	p->end_tid = t->committed ? t->tid + 1 : t->tid;
	return 0;
}

int sfs_jlog_print(struct sfs_jlog *log, unsigned flags, FILE *f)
{
	struct jl_print p = {.f = f, .log = log};
	struct sfs_jlog_super s;
	char u[37];
	int rc;

	if (!log || !f)
		return -EINVAL;
	sfs_jlog_get_super(log, &s);
	uuid_str(s.uuid, u);
	if (log->external)
		fprintf(f, "journal: external device, superblock at block %u\n",
			log->sb_blk);
	else
		fprintf(f,
			"journal: internal, inode %u, %u runs on the "
			"device\n",
			log->ino, log->runs->len);
	fprintf(f,
		"block size %u, s_maxlen %u, s_first %u, sequence %u, "
		"start %u%s, errno %d\n",
		s.blocksize, s.maxlen, s.first, s.sequence, s.start,
		s.start ? " (needs replay)" : " (clean)", s.errno_val);
	fprintf(
	    f, "features:%s%s%s%s%s, uuid %s, users %u\n",
	    (s.feature_incompat & SFS_JBD2_INCOMPAT_REVOKE) ? " revoke" : "",
	    (s.feature_incompat & SFS_JBD2_INCOMPAT_64BIT) ? " 64bit" : "",
	    (s.feature_incompat & SFS_JBD2_INCOMPAT_CSUM_V2) ? " csum_v2" : "",
	    (s.feature_incompat & SFS_JBD2_INCOMPAT_CSUM_V3) ? " csum_v3" : "",
	    (s.feature_incompat & SFS_JBD2_INCOMPAT_KNOWN) ? "" : " (none)", u,
	    s.nr_users);
	p.end_block = s.start;
	p.end_tid = s.sequence;
	rc = sfs_jlog_walk(log, flags, jl_print_cb, &p);
	if (rc)
		return rc;
	if (!s.start && !p.n_txns)
		fprintf(f, "log empty\n");
	else
		fprintf(f,
			"end of log at journal block %u (tid %u expected "
			"there)\n",
			p.end_block, p.end_tid);
	return 0;
}
