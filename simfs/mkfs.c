/*
 * mkfs.c - write a fresh ext2 filesystem: the image mke2fs 1.47 makes with
 *   mke2fs -t ext2 -b BS -I ISIZE -i RATIO -m PCT \
 *          -O none,sparse_super,filetype,large_file,ext_attr[,...]
 * where the optional features are dir_index, resize_inode, extent (the
 * root directory and lost+found mapped by one in-inode extent each),
 * flex_bg (-G), 64bit (64-byte descriptors), huge_file, dir_nlink,
 * extra_isize, has_journal, uninit_bg (gdt_csum) and metadata_csum
 * (same geometry, same block placement, same superblock fields), so the
 * two can be compared field by field (doc: ext-format sections 1-5, 10).
 * sfs_mkfs_set_type gives -t TYPE the defaults of e2fsprogs' stock
 * mke2fs.conf (features per type, block size and inode ratio per size
 * type); the mke2fs features not laid out (meta_bg, bigalloc, ...:
 * mk_not_made) are refused by name.
 * The one field that differs from mke2fs's: s_kbytes_written, 1 here,
 * 1 + the KiB mke2fs itself wrote there (with an ext4 ro_compat feature;
 * with metadata_csum the superblock checksums then differ too).
 *
 * Geometry (mk_geometry) follows ext2fs_initialize: groups of 8 x bs
 * blocks; inodes = size / ratio spread over the groups, rounded up to fill
 * the inode-table blocks and down to a multiple of 8; a last group too
 * small for its metadata + 50 blocks is cut off; too many inodes per group
 * shrinks blocks_per_group by 8 and starts again.
 *
 * Layout of group g (sparse_super backups in groups 0, 1, 3^k, 5^k, 7^k):
 *   [superblock][GDT][reserved GDT]  (backup groups)
 *   [block bitmap][inode bitmap][inode table][data ...]
 * With flex_bg the tables of each flex group (2^-G groups) are packed at
 * its start instead: all its block bitmaps, all its inode bitmaps, all its
 * inode tables.  Placement runs on an in-memory bitmap of every block
 * (mk_layout), with e2fsprogs' own search rules (ext2fs_get_free_blocks2,
 * flexbg_offset, ext2fs_allocate_group_table; root directory, lost+found
 * and the resize inode's block from ext2fs_find_inode_goal's goal).
 * Group 0's data starts with the root directory block (inode 2), the
 * lost+found blocks (inode 11: 12/8/4 blocks at 1/2/4 KiB) and, with
 * resize_inode, the double-indirect block of the resize inode (inode 7),
 * which maps group 0's reserved GDT blocks; each of those lists its copies
 * in the backup groups (mk_rsv_gdt, mk_resize_inode).  Reserved inodes
 * 1..10 are marked used; inode 1 carries only its a/c/mtime.
 *
 * Group descriptor checksums (uninit_bg: crc16; metadata_csum: crc32c,
 * which supersedes it as in mke2fs) bring what ext2fs_initialize and the
 * allocations of mke2fs leave (mk_uninit): INODE_UNINIT in groups without
 * a used inode, bg_itable_unused; BLOCK_UNINIT but in the last group and
 * in groups holding more than their own superblock/GDT copies (and,
 * without flex_bg, their own tables).  Such bitmaps are not written, as
 * libext2fs's write_bitmaps skips them, and their descriptor checksums
 * stay 0.  With metadata_csum every checksum is computed by the engine's
 * helpers (csum.h) on a view of the new image (mk_csum_view): the
 * superblock and each backup, descriptors, bitmaps written, inodes 1..11
 * (mke2fs writes every reserved inode with its checksum), the root and
 * lost+found blocks with their 12-byte tails.
 *
 * The journal: without group descriptor checksums the caller adds it
 * after sfs_mkfs through the engine (sfs_jbd2_add_internal).  With them
 * the engine's open would initialise the uninitialised groups, so
 * sfs_mkfs places it itself (mk_place_journal, with mke2fs's goal:
 * sfs_jbd2_midpoint_group) and lays it out with sfs_jbd2_lay_out, the
 * code the engine path shares (sfs_mkfs_makes_journal).
 *
 * ITABLE_ZEROED: mke2fs discards an image file first (its unix I/O
 * manager punches the whole file, which then reads as zeros: "discard
 * zeroes data"), so it marks every inode table zeroed and writes none,
 * whatever lazy_itable_init says; simfs does the same, zeroing the
 * tables itself on a device not known to read as zero (where mke2fs,
 * without a zeroing discard and with lazy_itable_init, would leave them
 * to the kernel and not set the flag).
 *
 * Write order: the old primary superblock is wiped first, the new one is
 * written last, then the device is flushed, so a half-made image is never
 * taken for a filesystem.  Inode tables are zeroed (cheaply, through
 * sfs_bdev_zero) unless the device is known to read as zero.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

#include <glib.h>

#include "clock.h"
#include "csum.h"
#include "format.h"
#include "fs_priv.h"
#include "mkfs.h"
#include "models/journal/jbd2.h"

#define MK_MAX_BLOCKS 0xFFFFFFFFull  /* 32-bit block numbers (no 64bit) */
#define MK_LPF_MIN_BYTES (16 * 1024) /* lost+found: >= 16 KiB, >= 2 blocks */
#define MK_DEF_HASH_HALF_MD4 1
#define MK_FLAGS_SIGNED_HASH 0x1
/* group descriptor checksums: uninit_bg (crc16) or metadata_csum */
#define MK_CSUM_RO                                                             \
	(SFS_FEATURE_RO_COMPAT_GDT_CSUM | SFS_FEATURE_RO_COMPAT_METADATA_CSUM)
/* ro_compat features for which mke2fs sets s_kbytes_written (mk_super) */
#define MK_EXT4_RO_COMPAT                                                      \
	(SFS_FEATURE_RO_COMPAT_HUGE_FILE | SFS_FEATURE_RO_COMPAT_DIR_NLINK |   \
	 SFS_FEATURE_RO_COMPAT_EXTRA_ISIZE | MK_CSUM_RO)
#define MK_DEF_MOUNT_OPTS 0x000C /* user_xattr | acl */
#define MK_ERRORS_CONTINUE 1
#define MK_MAX_LOG_FLEX 20 /* -G at most 2^20 groups */
/* bg_flags */
#define MK_BG_INODE_UNINIT 0x1	/* inode bitmap and table never used */
#define MK_BG_BLOCK_UNINIT 0x2	/* block bitmap: the group's metadata only */
#define MK_BG_ITABLE_ZEROED 0x4 /* inode table known zero */
#define MK_SB_LOG_GROUPS_PER_FLEX 0x174 /* s_log_groups_per_flex, a byte */
#define MK_ROOT_MODE (SFS_S_IFDIR | 0755)
#define MK_LPF_MODE (SFS_S_IFDIR | 0700)

/* The geometry of the filesystem being made. */
struct mk_geo {
	uint32_t bs;	   /* block size, bytes */
	uint32_t log_bs;   /* s_log_block_size */
	uint32_t isize;	   /* inode size, bytes */
	uint32_t first;	   /* s_first_data_block */
	uint64_t blocks;   /* s_blocks_count */
	uint64_t r_blocks; /* s_r_blocks_count */
	uint32_t bpg;	   /* blocks per group */
	uint32_t groups;
	uint32_t desc_size;   /* bytes a group descriptor (64 with 64bit) */
	uint32_t desc_blocks; /* GDT blocks */
	uint32_t rsv_gdt;     /* reserved GDT blocks (resize_inode) */
	uint32_t ipg;	      /* inodes per group */
	uint32_t itb;	      /* inode table blocks per group */
	uint32_t lpf_blocks;  /* lost+found size, blocks */
	uint32_t lpf_group;   /* group of inode 11, which holds its blocks */
	uint64_t root_blk;    /* the root directory's block */
	uint64_t lpf_blk;     /* lost+found's first block */
	uint64_t dind_blk;    /* the resize inode's double-indirect block */
};

/* State of one sfs_mkfs run. */
struct mk {
	struct sfs_bdev *bd;
	const struct sfs_mkfs_params *p;
	struct mk_geo g;
	bool zeroed;	      /* device known to read as zero */
	uint32_t now;	      /* time stamp for everything */
	struct sfs_dsuper sb; /* primary superblock, on-disk form */
	uint8_t *gdt;	      /* desc_blocks * bs bytes */
	uint8_t *bmap;	      /* every block's bit (bit b = block b) */
	uint64_t *bb, *ib, *it; /* per group: block bitmap, inode bitmap,
				   inode table (mk_alloc_tables) */
	uint8_t *blk;	      /* scratch, several blocks */
	uint32_t ro_compat;   /* the ro_compat features made (mk_ro_compat) */
	bool gcsum;	      /* group descriptor checksums */
	struct sfs_fs *cfs;   /* the view csum.c computes checksums on:
				 superblock, geometry, descriptors */
	GArray *jruns;	      /* the journal's blocks (sfs_mkfs_makes_journal),
				 struct sfs_jbd2_run in allocation order */
	uint32_t jblocks;     /* its size, blocks */
	struct sfs_dinode jnl; /* inode 8 (mk_write_journal) */
	char **err;
};

static int mk_fail(struct mk *m, int rc, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

/* mke2fs feature names simfs mkfs does not lay out (they stay off; "^NAME"
 * is accepted).  Images mke2fs makes with them are mounted, not made. */
static const char *const mk_not_made[] = {
    "meta_bg",
    "sparse_super2",
    "inline_data",
    "bigalloc",
    "mmp",
    "encrypt",
    "casefold",
    "quota",
    "project",
    "orphan_file",
    "large_dir",
    "ea_inode",
    "metadata_csum_seed",
    "stable_inodes",
    "verity",
    "journal_dev",
    "fname_encoding",
    "orphan_present",
    "compression",
    "snapshot_bitmap",
};

/* Features -O switches on and off, each a bool of the parameters. */
static const struct {
	const char *name;
	size_t field; /* offsetof(struct sfs_mkfs_params, ...) */
} mk_switch[] = {
    {"dir_index", offsetof(struct sfs_mkfs_params, dir_index)},
    {"has_journal", offsetof(struct sfs_mkfs_params, has_journal)},
    {"resize_inode", offsetof(struct sfs_mkfs_params, resize_inode)},
    {"extent", offsetof(struct sfs_mkfs_params, extent)},
    {"extents", offsetof(struct sfs_mkfs_params, extent)},
    {"flex_bg", offsetof(struct sfs_mkfs_params, flex_bg)},
    {"64bit", offsetof(struct sfs_mkfs_params, bit64)},
};

/* Always on in what simfs mkfs makes ("^NAME" is refused). */
static const char *const mk_fixed_on[] = {"sparse_super", "filetype",
					  "large_file", "ext_attr"};

static bool mk_in(const char *const *list, size_t n, const char *f)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i], f) == 0)
			return true;
	return false;
}

/* The features -O may switch (the others are fixed, see the file head).
 * Every name that cannot be honoured is collected, so the message names
 * all of them. */
int sfs_mkfs_parse_features(struct sfs_mkfs_params *p, const char *list,
			    char **err)
{
	static const struct {
		const char *name;
		uint32_t bit;
	} ro[] = {
	    {"huge_file", SFS_FEATURE_RO_COMPAT_HUGE_FILE},
	    {"dir_nlink", SFS_FEATURE_RO_COMPAT_DIR_NLINK},
	    {"extra_isize", SFS_FEATURE_RO_COMPAT_EXTRA_ISIZE},
	    {"metadata_csum", SFS_FEATURE_RO_COMPAT_METADATA_CSUM},
	    {"uninit_bg", SFS_FEATURE_RO_COMPAT_GDT_CSUM},
	    {"gdt_csum", SFS_FEATURE_RO_COMPAT_GDT_CSUM},
	};
	gchar **v = g_strsplit(list, ",", -1);
	GString *unmade = g_string_new(NULL), *unknown = g_string_new(NULL);
	GString *fixed = g_string_new(NULL);
	int rc = 0;

	for (int i = 0; v[i]; i++) {
		bool off = v[i][0] == '^';
		const char *f = off ? v[i] + 1 : v[i];
		bool known = false;

		if (!v[i][0])
			continue; /* "a,,b" as mke2fs */
		for (size_t k = 0; k < G_N_ELEMENTS(mk_switch); k++) {
			if (strcmp(f, mk_switch[k].name) != 0)
				continue;
			*(bool *)((char *)p + mk_switch[k].field) = !off;
			known = true;
		}
		for (size_t k = 0; k < G_N_ELEMENTS(ro); k++) {
			if (strcmp(f, ro[k].name) != 0)
				continue;
			if (off)
				p->ro_compat &= ~ro[k].bit;
			else
				p->ro_compat |= ro[k].bit;
			known = true;
		}
		if (known)
			continue;
		if (mk_in(mk_fixed_on, G_N_ELEMENTS(mk_fixed_on), f)) {
			if (off)
				g_string_append_printf(fixed, "%s'%s'",
						       fixed->len ? ", " : "",
						       v[i]);
		} else if (mk_in(mk_not_made, G_N_ELEMENTS(mk_not_made), f)) {
			if (!off)
				g_string_append_printf(unmade, "%s'%s'",
						       unmade->len ? ", " : "",
						       v[i]);
		} else {
			g_string_append_printf(unknown, "%s'%s'",
					       unknown->len ? ", " : "", v[i]);
		}
	}
	if (unmade->len || unknown->len || fixed->len) {
		GString *m = g_string_new("mkfs:");

		if (unmade->len)
			g_string_append_printf(
			    m,
			    " not made by simfs mkfs: %s (simfs mounts "
			    "images mke2fs makes with them);",
			    unmade->str);
		if (fixed->len)
			g_string_append_printf(
			    m, " always on in simfs mkfs: %s;", fixed->str);
		if (unknown->len)
			g_string_append_printf(
			    m,
			    " unknown feature%s: %s (-O takes [^]dir_index, "
			    "[^]has_journal, [^]resize_inode, [^]extent, "
			    "[^]flex_bg, [^]64bit, [^]huge_file, "
			    "[^]dir_nlink, [^]extra_isize, [^]metadata_csum, "
			    "[^]uninit_bg);",
			    strchr(unknown->str, ',') ? "s" : "", unknown->str);
		g_string_truncate(m, m->len - 1); /* the last ';' */
		if (err)
			*err = g_string_free(m, FALSE);
		else
			g_string_free(m, TRUE);
		rc = -EINVAL;
	}
	g_string_free(unmade, TRUE);
	g_string_free(unknown, TRUE);
	g_string_free(fixed, TRUE);
	g_strfreev(v);
	return rc;
}

int sfs_mkfs_check_features(const struct sfs_mkfs_params *p, char **err)
{
	if (p->bit64 && !p->extent) {
		if (err)
			*err = g_strdup("mkfs: 64bit needs extent (-O extent), "
					"as in mke2fs");
		return -EINVAL;
	}
	return 0;
}

/* The ro_compat features made: metadata_csum supersedes uninit_bg, as
 * mke2fs drops the latter when both are asked for. */
static uint32_t mk_ro_compat(const struct sfs_mkfs_params *p)
{
	uint32_t ro = p->ro_compat;

	if (ro & SFS_FEATURE_RO_COMPAT_METADATA_CSUM)
		ro &= ~SFS_FEATURE_RO_COMPAT_GDT_CSUM;
	return ro;
}

bool sfs_mkfs_makes_journal(const struct sfs_mkfs_params *p)
{
	return p->has_journal && !p->journal_external &&
	       (p->ro_compat & MK_CSUM_RO);
}

/*
 * mke2fs's size types (misc/mke2fs.c parse_fs_type) and what the stock
 * mke2fs.conf of e2fsprogs 1.47 sets for them: floppy below 3 MiB, small
 * below 512 MiB, default, big from 4 TiB, huge from 16 TiB.
 */
static void mk_size_type(struct sfs_mkfs_params *p, uint64_t size_bytes)
{
	const uint64_t mib = 1ull << 20;

	p->block_size = 4096;
	p->inode_ratio = 16384;
	if (size_bytes == 0)
		return;
	if (size_bytes < 3 * mib) {
		p->block_size = 1024;
		p->inode_ratio = 8192;
	} else if (size_bytes < 512 * mib) {
		p->block_size = 1024;
		p->inode_ratio = 4096;
	} else if (size_bytes >= 16 * (1ull << 40)) {
		p->inode_ratio = 65536;
	} else if (size_bytes >= 4 * (1ull << 40)) {
		p->inode_ratio = 32768;
	}
}

int sfs_mkfs_set_type(struct sfs_mkfs_params *p, const char *type,
		      uint64_t size_bytes, char **err)
{
	/* [defaults] base_features, then [fs_types] TYPE's features */
	static const char *const base =
	    "sparse_super,large_file,filetype,resize_inode,dir_index,ext_attr";
	static const struct {
		const char *type, *features;
	} types[] = {
	    {"ext2", ""},
	    {"ext3", "has_journal"},
	    {"ext4", "has_journal,extent,huge_file,flex_bg,metadata_csum,"
		     "64bit,dir_nlink,extra_isize"},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(types); i++) {
		if (strcmp(type, types[i].type) != 0)
			continue;
		p->dir_index = p->resize_inode = p->has_journal = false;
		p->extent = false;
		p->ro_compat = 0;
		p->inode_size = 256;
		mk_size_type(p, size_bytes);
		if (sfs_mkfs_parse_features(p, base, err))
			return -EINVAL;
		return sfs_mkfs_parse_features(p, types[i].features, err);
	}
	if (err)
		*err = g_strdup_printf(
		    "mkfs: unknown type '%s' (-t ext2, ext3 or ext4)", type);
	return -EINVAL;
}

/* Store a one-line message in *err and return rc. */
static int mk_fail(struct mk *m, int rc, const char *fmt, ...)
{
	va_list ap;

	if (m->err && !*m->err) {
		va_start(ap, fmt);
		*m->err = g_strdup_vprintf(fmt, ap);
		va_end(ap);
	}
	return rc;
}

void sfs_mkfs_defaults(struct sfs_mkfs_params *p)
{
	memset(p, 0, sizeof(*p));
	p->block_size = 4096;
	p->inode_ratio = 16384;
	p->inode_size = 256;
	p->reserved_pct = 5;
	p->log_groups_per_flex = 4; /* mke2fs.conf's flex_bg_size 16 */
}

static uint64_t div_ceil(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/* Blocks in group g (the last one may be short). */
static uint32_t mk_group_blocks(const struct mk_geo *g, uint32_t grp)
{
	if (grp + 1 < g->groups)
		return g->bpg;
	return (uint32_t)(g->blocks - g->first - (uint64_t)grp * g->bpg);
}

static uint64_t mk_group_first(const struct mk_geo *g, uint32_t grp)
{
	return g->first + (uint64_t)grp * g->bpg;
}

/* Metadata blocks at the start of group g. */
static uint32_t mk_group_meta(const struct mk_geo *g, uint32_t grp)
{
	uint32_t n = 2 + g->itb;

	if (sfs_group_has_super(grp, 1))
		n += 1 + g->desc_blocks + g->rsv_gdt;
	return n;
}

/* Inodes 1..SFS_FIRST_INO (reserved + lost+found) that live in group g. */
static uint32_t mk_group_rsv_inodes(const struct mk_geo *g, uint32_t grp)
{
	uint64_t before = (uint64_t)grp * g->ipg;

	if (before >= SFS_FIRST_INO)
		return 0;
	return (uint32_t)MIN((uint64_t)g->ipg, SFS_FIRST_INO - before);
}

/* Directories in group g: root (inode 2) and lost+found (inode 11). */
static uint32_t mk_group_dirs(const struct mk_geo *g, uint32_t grp)
{
	return (grp == (SFS_ROOT_INO - 1) / g->ipg) +
	       (grp == (SFS_FIRST_INO - 1) / g->ipg);
}

/*
 * Reserved GDT blocks as calc_reserved_gdt_blocks (e2fsprogs
 * lib/ext2fs/initialize.c) sizes them: enough descriptors for 1024 times
 * the blocks (at most 2^32 blocks), less the GDT blocks already there, at
 * most one indirect block's worth (bs / 4).
 */
static uint32_t mk_rsv_gdt(const struct mk_geo *g)
{
	uint64_t max_blocks = 0xFFFFFFFFull, rsv_groups, rsv;

	if (g->blocks < max_blocks / 1024)
		max_blocks = g->blocks * 1024;
	rsv_groups = div_ceil(max_blocks - g->first, g->bpg);
	rsv = div_ceil(rsv_groups, g->bs / g->desc_size) - g->desc_blocks;
	return (uint32_t)MIN(rsv, (uint64_t)g->bs / 4);
}

/*
 * Compute the geometry as ext2fs_initialize does for the mke2fs command
 * line above.  0, or -EINVAL with a message.
 */
static int mk_geometry(struct mk *m, uint64_t size_bytes, bool whole_device)
{
	const struct sfs_mkfs_params *p = m->p;
	struct mk_geo *g = &m->g;
	uint64_t blocks_param, r_param, inodes_req, inodes, ipg, rem;
	uint32_t overhead, ipg_max;

	g->bs = p->block_size;
	g->log_bs = p->block_size == 1024 ? 0 : p->block_size == 2048 ? 1 : 2;
	g->isize = p->inode_size;
	g->first = g->bs == 1024 ? 1 : 0;
	g->desc_size = p->bit64 ? SFS_DESC_SIZE_64BIT : SFS_DESC_SIZE;
	if ((p->ro_compat & SFS_FEATURE_RO_COMPAT_EXTRA_ISIZE) &&
	    g->isize <= SFS_GOOD_OLD_INODE_SIZE)
		return mk_fail(m, -EINVAL,
			       "extra_isize needs inodes larger than %u bytes "
			       "(-I 256)",
			       SFS_GOOD_OLD_INODE_SIZE);

	blocks_param = size_bytes / g->bs;
	if (whole_device && g->bs < 4096) /* as mke2fs: whole pages */
		blocks_param &= ~(uint64_t)(4096 / g->bs - 1);
	if (blocks_param > MK_MAX_BLOCKS)
		return mk_fail(
		    m, -EINVAL,
		    "mkfs: %" G_GUINT64_FORMAT " blocks of %u bytes "
		    "do not fit 32-bit block numbers (at most "
		    "%" G_GUINT64_FORMAT " bytes at this block size)",
		    blocks_param, g->bs, (uint64_t)(MK_MAX_BLOCKS * g->bs));
	if (blocks_param < 16)
		return mk_fail(m, -EINVAL,
			       "mkfs: device too small (%" G_GUINT64_FORMAT
			       " bytes)",
			       size_bytes);
	inodes_req = blocks_param * g->bs / p->inode_ratio;
	if (inodes_req > 0xFFFFFFFFull)
		return mk_fail(m, -EINVAL,
			       "mkfs: too many inodes (%" G_GUINT64_FORMAT
			       "): raise the bytes-per-inode ratio",
			       inodes_req);
	if (inodes_req * g->isize >= blocks_param * g->bs)
		return mk_fail(m, -EINVAL,
			       "mkfs: inode size %u x %" G_GUINT64_FORMAT
			       " inodes is too big for a %" G_GUINT64_FORMAT
			       "-block filesystem",
			       g->isize, inodes_req, blocks_param);
	r_param =
	    (uint64_t)((double)p->reserved_pct * (double)blocks_param / 100.0);
	if (r_param >= blocks_param)
		return mk_fail(m, -EINVAL, "mkfs: reserved blocks exceed size");

	g->blocks = blocks_param;
	g->r_blocks = r_param;
	g->bpg = g->bs * 8;
	ipg_max = 65536 - g->bs / g->isize;
retry:
	g->groups = (uint32_t)div_ceil(g->blocks - g->first, g->bpg);
	if (g->groups == 0)
		return mk_fail(m, -EINVAL, "mkfs: device too small");
	g->desc_blocks = (uint32_t)div_ceil(g->groups, g->bs / g->desc_size);
	inodes =
	    inodes_req < SFS_FIRST_INO + 1 ? SFS_FIRST_INO + 1 : inodes_req;
	ipg = div_ceil(inodes, g->groups);
	if (ipg > g->bs * 8) {
		if (g->bpg < 256)
			return mk_fail(m, -EINVAL,
				       "mkfs: too many inodes per group: "
				       "raise the bytes-per-inode ratio");
		/* Retry with slightly smaller groups, as mke2fs does. */
		g->bpg -= 8;
		g->blocks = blocks_param;
		goto retry;
	}
	if (ipg > ipg_max)
		ipg = ipg_max;
ipg_retry:
	g->itb = (uint32_t)div_ceil(ipg * g->isize, g->bs);
	g->ipg = g->itb * g->bs / g->isize;
	if (g->ipg < 8)
		g->ipg = 8;
	g->ipg &= ~7u;
	g->itb = (uint32_t)div_ceil((uint64_t)g->ipg * g->isize, g->bs);
	if ((uint64_t)g->ipg * g->groups > 0xFFFFFFFFull) {
		ipg--;
		goto ipg_retry;
	}

	g->rsv_gdt = p->resize_inode ? mk_rsv_gdt(g) : 0;
	if (g->desc_blocks + g->rsv_gdt > g->bpg * 3 / 4) /* meta_bg */
		return mk_fail(m, -EINVAL,
			       "mkfs: %u groups need meta_bg, which simfs does "
			       "not support: use a larger block size",
			       g->groups);
	overhead = 3 + g->itb + g->desc_blocks + g->rsv_gdt;
	if (overhead > g->bpg)
		return mk_fail(m, -EINVAL,
			       "mkfs: inode tables do not fit in a group: "
			       "raise the bytes-per-inode ratio");

	/* Drop a last group too small for its metadata + 50 blocks. */
	overhead = 2 + g->itb;
	if (sfs_group_has_super(g->groups - 1, 1))
		overhead += 1 + g->desc_blocks + g->rsv_gdt;
	rem = (g->blocks - g->first) % g->bpg;
	if (g->groups == 1 && rem && rem < overhead)
		return mk_fail(m, -EINVAL,
			       "mkfs: device too small (%" G_GUINT64_FORMAT
			       " blocks) for the group metadata",
			       g->blocks);
	if (rem && rem < overhead + 50) {
		double ratio = 100.0 * (double)r_param / (double)blocks_param;

		g->blocks -= rem;
		g->r_blocks = (uint64_t)(ratio * (double)g->blocks / 100.0);
		goto retry;
	}

	if ((uint64_t)g->ipg * g->groups <= SFS_FIRST_INO)
		return mk_fail(m, -EINVAL,
			       "mkfs: only %u inodes: raise the size or lower "
			       "the bytes-per-inode ratio",
			       g->ipg * g->groups);
	g->lpf_blocks = 1;
	while (g->lpf_blocks < SFS_NDIR_BLOCKS &&
	       ((uint64_t)g->lpf_blocks * g->bs < MK_LPF_MIN_BYTES ||
		g->lpf_blocks < 2))
		g->lpf_blocks++;
	g->lpf_group = (SFS_FIRST_INO - 1) / g->ipg;
	return 0;
}

/* ---- block allocation on the in-memory bitmap (mk_layout) ---- */

static bool mk_used(const struct mk *m, uint64_t b)
{
	return m->bmap[b >> 3] & (1u << (b & 7));
}

static void mk_mark(struct mk *m, uint64_t b, uint64_t n)
{
	for (; n; n--, b++)
		m->bmap[b >> 3] |= (uint8_t)(1u << (b & 7));
}

/*
 * num free blocks in a row from start on, tried at each block up to finish
 * (exclusive; finish <= start wraps at the end of the filesystem), as
 * ext2fs_get_free_blocks2 searches.  0 with *out, or -ENOSPC.
 */
static int mk_get_free(const struct mk *m, uint64_t start, uint64_t finish,
		       uint32_t num, uint64_t *out)
{
	uint64_t b = start ? start : m->g.first;

	if (!finish)
		finish = start;
	if (!num)
		num = 1;
	do {
		uint32_t k = 0;

		if (b + num - 1 >= m->g.blocks) {
			if (finish > start)
				return -ENOSPC;
			b = m->g.first;
		}
		while (k < num && !mk_used(m, b + k))
			k++;
		if (k == num) {
			*out = b;
			return 0;
		}
		b++;
	} while (b != finish);
	return -ENOSPC;
}

/* The first free block from goal on, wrapping (ext2fs_new_block2). */
static int mk_new_block(struct mk *m, uint64_t goal, uint64_t *out)
{
	if (goal < m->g.first || goal >= m->g.blocks)
		goal = m->g.first;
	for (uint64_t i = 0; i < m->g.blocks - m->g.first; i++) {
		uint64_t b = goal + i;

		if (b >= m->g.blocks)
			b -= m->g.blocks - m->g.first;
		if (!mk_used(m, b)) {
			mk_mark(m, b, 1);
			*out = b;
			return 0;
		}
	}
	return -ENOSPC;
}

static uint32_t mk_flex_size(const struct mk *m)
{
	return m->p->flex_bg && m->p->log_groups_per_flex
		   ? 1u << m->p->log_groups_per_flex
		   : 0;
}

/*
 * Where a flex group's bitmaps or inode tables go (flexbg_offset in
 * e2fsprogs lib/ext2fs/alloc_tables.c): right after the previous group's
 * if rem_grp elements still fit there (jumping small obstacles such as
 * backup descriptors), else the first room for all of them, else for one,
 * in the flex group; else anywhere.
 */
static uint64_t mk_flexbg_offset(const struct mk *m, uint32_t grp,
				 uint64_t start, uint32_t rem_grp,
				 uint32_t elem)
{
	const struct mk_geo *g = &m->g;
	uint32_t fsize = mk_flex_size(m);
	uint32_t size = MIN(rem_grp * elem, g->bpg / 4);
	uint32_t last_grp = MIN(grp | (fsize - 1), g->groups - 1);
	uint64_t last, out = 0;

	if (start && start < g->blocks &&
	    mk_get_free(m, start, start + size, elem, &out) == 0)
		return out;
	start = mk_group_first(g, fsize * (grp / fsize));
	last = mk_group_first(g, last_grp) + mk_group_blocks(g, last_grp) - 1;
	if (mk_get_free(m, start, last, size, &out) == 0 ||
	    mk_get_free(m, start, last, elem, &out) == 0 ||
	    mk_get_free(m, 0, last, elem, &out) == 0)
		return out;
	return out;
}

/*
 * Block bitmap, inode bitmap and inode table of group grp, placed as
 * ext2fs_allocate_group_table does: without flex_bg the first free blocks
 * of the group (after its superblock and descriptor copies); with flex_bg
 * packed per flex group, all block bitmaps, then all inode bitmaps, then
 * all inode tables.  0, or -ENOSPC.
 */
static int mk_alloc_group_tables(struct mk *m, uint32_t grp)
{
	const struct mk_geo *g = &m->g;
	uint32_t fsize = mk_flex_size(m), last_grp = grp, rem = 0, off = 0;
	uint64_t gfirst = mk_group_first(g, grp);
	uint64_t last = gfirst + mk_group_blocks(g, grp) - 1, start = gfirst;
	uint64_t tstart = gfirst, blk;

	if (fsize) {
		last_grp = MIN(grp | (fsize - 1), g->groups - 1);
		rem = last_grp - grp + 1;
		off = fsize;
		if (grp % fsize == 0 && last_grp == g->groups - 1) {
			/* the last flex group keeps its tables contiguous */
			off = last_grp & (fsize - 1);
			off = off ? off + 1 : fsize;
		}
		start = mk_flexbg_offset(
		    m, grp, grp % fsize ? m->bb[grp - 1] + 1 : 0, rem, 1);
		last = mk_group_first(g, last_grp) +
		       mk_group_blocks(g, last_grp) - 1;
	}
	if (mk_get_free(m, start, last, 1, &blk) &&
	    mk_get_free(m, gfirst, last, 1, &blk))
		return -ENOSPC;
	mk_mark(m, blk, 1);
	m->bb[grp] = blk;
	if (fsize)
		start = mk_flexbg_offset(
		    m, grp, grp % fsize ? m->ib[grp - 1] + 1 : m->bb[grp] + off,
		    rem, 1);
	if (mk_get_free(m, start, last, 1, &blk) &&
	    mk_get_free(m, gfirst, last, 1, &blk))
		return -ENOSPC;
	mk_mark(m, blk, 1);
	m->ib[grp] = blk;
	if (fsize)
		tstart = mk_flexbg_offset(m, grp,
					  grp % fsize ? m->it[grp - 1] + g->itb
						      : m->ib[grp] + off,
					  rem, g->itb);
	if (mk_get_free(m, tstart, last, g->itb, &blk))
		return -ENOSPC;
	mk_mark(m, blk, g->itb);
	m->it[grp] = blk;
	return 0;
}

/* The first block of the group of inode ino, or of its flex group
 * (ext2fs_find_inode_goal for an inode without blocks). */
static uint64_t mk_inode_goal(const struct mk *m, uint32_t ino)
{
	uint32_t grp = (ino - 1) / m->g.ipg, fsize = mk_flex_size(m);

	if (fsize)
		grp &= ~(fsize - 1);
	return mk_group_first(&m->g, grp);
}

/* Blocks of group grp in use (set in the block map). */
static uint32_t mk_group_used(const struct mk *m, uint32_t grp)
{
	uint64_t first = mk_group_first(&m->g, grp);
	uint32_t n = 0, nb = mk_group_blocks(&m->g, grp);

	for (uint32_t i = 0; i < nb; i++)
		n += mk_used(m, first + i);
	return n;
}

static uint32_t mk_group_free(void *ctx, uint32_t grp)
{
	const struct mk *m = ctx;

	return mk_group_blocks(&m->g, grp) - mk_group_used(m, grp);
}

/*
 * The internal journal's blocks (sfs_mkfs_makes_journal), taken as
 * ext2fs_add_journal_inode3 takes them: first free blocks from the goal on,
 * wrapping, in runs; the goal is mke2fs's midpoint group
 * (sfs_jbd2_midpoint_group) for an extent-mapped journal, the first data
 * block for a block-mapped one (its fallocate ignores the goal).
 */
static int mk_place_journal(struct mk *m)
{
	const struct mk_geo *g = &m->g;
	uint64_t span = g->blocks - g->first, goal = g->first;
	uint32_t need;

	m->jblocks = m->p->journal_blocks ? m->p->journal_blocks
					  : sfs_jbd2_default_blocks(g->blocks);
	if (m->jblocks < SFS_JBD2_MIN_BLOCKS)
		return mk_fail(m, -EINVAL,
			       "mkfs: a journal of %u blocks (at least %u; the "
			       "filesystem needs >= 2048 blocks for one)",
			       m->jblocks, SFS_JBD2_MIN_BLOCKS);
	need = sfs_jbd2_total_blocks(m->jblocks, g->bs, m->p->extent);
	if (m->p->extent)
		goal = mk_group_first(
		    g, sfs_jbd2_midpoint_group(
			   g->blocks, g->first, g->bpg, g->groups,
			   m->p->flex_bg ? m->p->log_groups_per_flex : 0,
			   mk_group_free, m));
	m->jruns = g_array_new(FALSE, FALSE, sizeof(struct sfs_jbd2_run));
	for (uint64_t i = 0; i < span && need; i++) {
		uint64_t b = goal + i < g->blocks ? goal + i : goal + i - span;
		struct sfs_jbd2_run *last =
		    m->jruns->len
			? &g_array_index(m->jruns, struct sfs_jbd2_run,
					 m->jruns->len - 1)
			: NULL;

		if (mk_used(m, b))
			continue;
		mk_mark(m, b, 1);
		need--;
		if (last && last->start + last->len == b) {
			last->len++;
		} else {
			struct sfs_jbd2_run r = {.start = b, .len = 1};

			g_array_append_val(m->jruns, r);
		}
	}
	if (need)
		return mk_fail(m, -EINVAL,
			       "mkfs: no room for a journal of %u blocks",
			       m->jblocks);
	return 0;
}

/*
 * Place everything: each group's superblock, descriptor and reserved GDT
 * copies, its tables (mk_alloc_group_tables), then the root directory,
 * lost+found and the resize inode's block, each from mke2fs's goal, and
 * the journal where sfs_mkfs makes it.
 * 0, -ENOMEM or -EINVAL (does not fit) with a message.
 */
static int mk_layout(struct mk *m)
{
	struct mk_geo *g = &m->g;
	uint64_t b;
	int rc = 0;

	m->bmap = g_try_malloc0((size_t)div_ceil(g->blocks, 8));
	m->bb = g_try_new0(uint64_t, g->groups);
	m->ib = g_try_new0(uint64_t, g->groups);
	m->it = g_try_new0(uint64_t, g->groups);
	if (!m->bmap || !m->bb || !m->ib || !m->it)
		return mk_fail(
		    m, -ENOMEM,
		    "mkfs: no memory for the block map of %" G_GUINT64_FORMAT
		    " blocks",
		    g->blocks);
	mk_mark(m, 0, g->first);
	for (uint32_t grp = 0; grp < g->groups; grp++)
		if (sfs_group_has_super(grp, 1))
			mk_mark(m, mk_group_first(g, grp),
				1 + g->desc_blocks + g->rsv_gdt);
	for (uint32_t grp = 0; grp < g->groups && !rc; grp++)
		rc = mk_alloc_group_tables(m, grp);
	if (!rc)
		rc = mk_new_block(m, mk_inode_goal(m, SFS_ROOT_INO),
				  &g->root_blk);
	if (!rc)
		rc = mk_new_block(m, mk_inode_goal(m, SFS_FIRST_INO),
				  &g->lpf_blk);
	for (uint32_t i = 1; i < g->lpf_blocks && !rc; i++) {
		rc = mk_new_block(m, g->lpf_blk + i, &b);
		if (!rc && b != g->lpf_blk + i)
			rc = -ENOSPC; /* lost+found in one run */
	}
	if (!rc && g->rsv_gdt)
		rc = mk_new_block(
		    m, g->first + g->desc_blocks + g->rsv_gdt + 2 + g->itb,
		    &g->dind_blk);
	if (rc)
		return mk_fail(m, -EINVAL,
			       "mkfs: device too small for the group tables, "
			       "the root directory and lost+found "
			       "(%" G_GUINT64_FORMAT " blocks)",
			       g->blocks);
	return sfs_mkfs_makes_journal(m->p) ? mk_place_journal(m) : 0;
}

/* Check the parameters that do not depend on the size. */
static int mk_check_params(struct mk *m)
{
	const struct sfs_mkfs_params *p = m->p;

	if (p->block_size != 1024 && p->block_size != 2048 &&
	    p->block_size != 4096)
		return mk_fail(m, -EINVAL,
			       "mkfs: bad block size %u (1024, 2048 or 4096)",
			       p->block_size);
	if (p->inode_size != 128 && p->inode_size != 256)
		return mk_fail(m, -EINVAL,
			       "mkfs: bad inode size %u (128 or 256)",
			       p->inode_size);
	if (p->inode_ratio < 1024 || p->inode_ratio > (64u << 20))
		return mk_fail(m, -EINVAL,
			       "mkfs: bad bytes-per-inode ratio %u (1024 to "
			       "67108864)",
			       p->inode_ratio);
	if (p->reserved_pct > 50)
		return mk_fail(m, -EINVAL,
			       "mkfs: bad reserved percentage %u (0 to 50)",
			       p->reserved_pct);
	if (p->log_groups_per_flex > MK_MAX_LOG_FLEX)
		return mk_fail(m, -EINVAL,
			       "mkfs: bad flex_bg size 2^%u (1 to %u groups, "
			       "a power of 2)",
			       p->log_groups_per_flex, 1u << MK_MAX_LOG_FLEX);
	if (memchr(p->label, 0, sizeof(p->label)) == NULL)
		return mk_fail(m, -EINVAL, "mkfs: label not NUL-terminated");
	return 0;
}

/* 16 random bytes shaped as an RFC 4122 version-4 UUID. */
static void mk_uuid(GRand *r, uint8_t out[16])
{
	for (int i = 0; i < 16; i += 4) {
		guint32 v = g_rand_int(r);

		memcpy(out + i, &v, 4);
	}
	out[6] = (uint8_t)((out[6] & 0x0F) | 0x40);
	out[8] = (uint8_t)((out[8] & 0x3F) | 0x80);
}

static bool mk_all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Fill in the primary superblock. */
static void mk_super(struct mk *m, uint32_t free_blocks, uint32_t free_inodes)
{
	const struct sfs_mkfs_params *p = m->p;
	const struct mk_geo *g = &m->g;
	struct sfs_dsuper *sb = &m->sb;
	uint64_t overhead = g->first;
	GRand *r;

	for (uint32_t grp = 0; grp < g->groups; grp++)
		overhead += mk_group_meta(g, grp);

	memset(sb, 0, sizeof(*sb));
	sb->s_inodes_count = sfs_cpu_to_le32(g->ipg * g->groups);
	sb->s_blocks_count = sfs_cpu_to_le32((uint32_t)g->blocks);
	sb->s_r_blocks_count = sfs_cpu_to_le32((uint32_t)g->r_blocks);
	sb->s_free_blocks_count = sfs_cpu_to_le32(free_blocks);
	sb->s_free_inodes_count = sfs_cpu_to_le32(free_inodes);
	sb->s_first_data_block = sfs_cpu_to_le32(g->first);
	sb->s_log_block_size = sfs_cpu_to_le32(g->log_bs);
	sb->s_log_cluster_size = sfs_cpu_to_le32(g->log_bs);
	sb->s_blocks_per_group = sfs_cpu_to_le32(g->bpg);
	sb->s_clusters_per_group = sfs_cpu_to_le32(g->bpg);
	sb->s_inodes_per_group = sfs_cpu_to_le32(g->ipg);
	sb->s_wtime = sfs_cpu_to_le32(m->now);
	sb->s_max_mnt_count = sfs_cpu_to_le16(0xFFFF);
	sb->s_magic = sfs_cpu_to_le16(SFS_SUPER_MAGIC);
	sb->s_state = sfs_cpu_to_le16(SFS_STATE_VALID);
	sb->s_errors = sfs_cpu_to_le16(MK_ERRORS_CONTINUE);
	sb->s_lastcheck = sfs_cpu_to_le32(m->now);
	sb->s_rev_level = sfs_cpu_to_le32(1);
	sb->s_first_ino = sfs_cpu_to_le32(SFS_FIRST_INO);
	sb->s_inode_size = sfs_cpu_to_le16((uint16_t)g->isize);
	sb->s_feature_compat =
	    sfs_cpu_to_le32(SFS_FEATURE_COMPAT_EXT_ATTR |
			    (p->dir_index ? SFS_FEATURE_COMPAT_DIR_INDEX : 0) |
			    (g->rsv_gdt ? SFS_FEATURE_COMPAT_RESIZE_INODE : 0));
	sb->s_reserved_gdt_blocks = sfs_cpu_to_le16((uint16_t)g->rsv_gdt);
	sb->s_feature_incompat =
	    sfs_cpu_to_le32(SFS_FEATURE_INCOMPAT_FILETYPE |
			    (p->extent ? SFS_FEATURE_INCOMPAT_EXTENTS : 0) |
			    (p->flex_bg ? SFS_FEATURE_INCOMPAT_FLEX_BG : 0) |
			    (p->bit64 ? SFS_FEATURE_INCOMPAT_64BIT : 0));
	if (p->bit64)
		sb->s_desc_size = sfs_cpu_to_le16((uint16_t)g->desc_size);
	if (p->flex_bg)
		((uint8_t *)sb)[MK_SB_LOG_GROUPS_PER_FLEX] =
		    (uint8_t)p->log_groups_per_flex;
	sb->s_feature_ro_compat =
	    sfs_cpu_to_le32(SFS_FEATURE_RO_COMPAT_SPARSE_SUPER |
			    SFS_FEATURE_RO_COMPAT_LARGE_FILE | m->ro_compat);
	if (m->ro_compat & SFS_FEATURE_RO_COMPAT_METADATA_CSUM)
		((uint8_t *)sb)[SFS_SB_CSUM_TYPE_OFF] = SFS_CSUM_TYPE_CRC32C;

	r = p->seed ? g_rand_new_with_seed_array(
			  (const guint32[]){(guint32)p->seed,
					    (guint32)(p->seed >> 32)},
			  2)
		    : g_rand_new();
	if (mk_all_zero(p->uuid, sizeof(p->uuid)))
		mk_uuid(r, sb->s_uuid);
	else
		memcpy(sb->s_uuid, p->uuid, sizeof(sb->s_uuid));
	mk_uuid(r, (uint8_t *)sb->s_hash_seed); /* raw bytes, as mke2fs */
	g_rand_free(r);

	memcpy(sb->s_volume_name, p->label,
	       MIN(strlen(p->label), sizeof(sb->s_volume_name)));
	sb->s_def_hash_version = MK_DEF_HASH_HALF_MD4;
	sb->s_default_mount_opts = sfs_cpu_to_le32(MK_DEF_MOUNT_OPTS);
	sb->s_mkfs_time = sfs_cpu_to_le32(m->now);
	if (g->isize > SFS_GOOD_OLD_INODE_SIZE) {
		sb->s_min_extra_isize = sfs_cpu_to_le16(SFS_EXTRA_ISIZE);
		sb->s_want_extra_isize = sfs_cpu_to_le16(SFS_EXTRA_ISIZE);
	}
	sb->s_flags = sfs_cpu_to_le32(MK_FLAGS_SIGNED_HASH);
	/* mke2fs marks a filesystem with any ext4 feature by a non-zero
	 * s_kbytes_written, to which its closefs then adds the KiB it wrote
	 * itself; simfs writes the mark alone (doc/user-guide.md 2). */
	if ((m->ro_compat & MK_EXT4_RO_COMPAT) || p->flex_bg)
		sb->s_kbytes_written = sfs_cpu_to_le64(1);
	sb->s_overhead_clusters = sfs_cpu_to_le32((uint32_t)overhead);
}

/* Group grp's descriptor in m->gdt (32 or 64 bytes apart; the high half
 * of a 64-byte one stays zero below 2^32 blocks). */
static struct sfs_dgroup *mk_desc(struct mk *m, uint32_t grp)
{
	return (struct sfs_dgroup *)(m->gdt + (size_t)grp * m->g.desc_size);
}

/*
 * The uninit flags of group grp with group descriptor checksums, as
 * ext2fs_initialize sets and the allocations of mke2fs clear them:
 * INODE_UNINIT where no inode is used; BLOCK_UNINIT but in the last group
 * (its bitmap needs padding) and in groups holding any block besides their
 * own superblock and descriptor copies and, without flex_bg, their own
 * bitmaps and inode table (with flex_bg every table placed clears it).
 */
static uint16_t mk_uninit(const struct mk *m, uint32_t grp)
{
	const struct mk_geo *g = &m->g;
	uint32_t own =
	    sfs_group_has_super(grp, 1) ? 1 + g->desc_blocks + g->rsv_gdt : 0;
	uint16_t f = 0;

	if (!m->gcsum)
		return 0;
	if (!mk_flex_size(m))
		own = mk_group_meta(g, grp);
	if (!mk_group_rsv_inodes(g, grp))
		f |= MK_BG_INODE_UNINIT;
	if (grp + 1 < g->groups && mk_group_used(m, grp) == own)
		f |= MK_BG_BLOCK_UNINIT;
	return f;
}

static bool mk_flag(struct mk *m, uint32_t grp, uint16_t flag)
{
	return sfs_le16(mk_desc(m, grp)->bg_flags) & flag;
}

/* Fill in every group descriptor; returns the free block/inode totals. */
static void mk_gdt(struct mk *m, uint32_t *free_blocks, uint32_t *free_inodes)
{
	const struct mk_geo *g = &m->g;
	uint64_t fb = 0, fi = 0;

	for (uint32_t grp = 0; grp < g->groups; grp++) {
		struct sfs_dgroup *gd = mk_desc(m, grp);
		uint32_t nfree, ifree;

		nfree = mk_group_blocks(g, grp) - mk_group_used(m, grp);
		ifree = g->ipg - mk_group_rsv_inodes(g, grp);
		gd->bg_block_bitmap = sfs_cpu_to_le32((uint32_t)m->bb[grp]);
		gd->bg_inode_bitmap = sfs_cpu_to_le32((uint32_t)m->ib[grp]);
		gd->bg_inode_table = sfs_cpu_to_le32((uint32_t)m->it[grp]);
		gd->bg_free_blocks_count = sfs_cpu_to_le16((uint16_t)nfree);
		gd->bg_free_inodes_count = sfs_cpu_to_le16((uint16_t)ifree);
		gd->bg_used_dirs_count =
		    sfs_cpu_to_le16((uint16_t)mk_group_dirs(g, grp));
		/* every inode table is zeroed (or known zero), and mke2fs
		 * says so in every group, with or without checksums */
		gd->bg_flags =
		    sfs_cpu_to_le16(MK_BG_ITABLE_ZEROED | mk_uninit(m, grp));
		if (m->gcsum)
			gd->bg_itable_unused = sfs_cpu_to_le16((uint16_t)ifree);
		fb += nfree;
		fi += ifree;
	}
	*free_blocks = (uint32_t)fb;
	*free_inodes = (uint32_t)fi;
}

static int mk_write(struct mk *m, enum sfs_io_cat cat, uint64_t blk,
		    const void *buf, size_t nblocks, const char *what)
{
	int rc =
	    sfs_bdev_write(m->bd, cat, blk * m->g.bs, buf, nblocks * m->g.bs);

	if (rc)
		return mk_fail(
		    m, -EIO,
		    "mkfs: cannot write %s at block %" G_GUINT64_FORMAT " (%s)",
		    what, blk, g_strerror(-rc));
	return 0;
}

static int mk_zero(struct mk *m, uint64_t off, uint64_t len, const char *what)
{
	int rc;

	if (m->zeroed || len == 0)
		return 0;
	rc = sfs_bdev_zero(m->bd, SFS_IO_OTHER, off, len);
	if (rc)
		return mk_fail(m, -EIO,
			       "mkfs: cannot zero %s at byte %" G_GUINT64_FORMAT
			       " (%s)",
			       what, off, g_strerror(-rc));
	return 0;
}

/* Set bits [from, to) of a bitmap to val (LSB first). */
static void mk_bits(uint8_t *map, uint32_t from, uint32_t to, bool val)
{
	while (from < to && (from & 7)) {
		if (val)
			map[from >> 3] |= (uint8_t)(1u << (from & 7));
		else
			map[from >> 3] &= (uint8_t) ~(1u << (from & 7));
		from++;
	}
	if (to - from >= 8) {
		memset(map + (from >> 3), val ? 0xFF : 0, (to - from) >> 3);
		from += (to - from) & ~7u;
	}
	for (; from < to; from++) {
		if (val)
			map[from >> 3] |= (uint8_t)(1u << (from & 7));
		else
			map[from >> 3] &= (uint8_t) ~(1u << (from & 7));
	}
}

/* Block and inode bitmaps of group grp into m->blk (two blocks). */
static void mk_build_bitmaps(struct mk *m, uint32_t grp)
{
	const struct mk_geo *g = &m->g;
	uint8_t *bb = m->blk, *ib = m->blk + g->bs;
	uint64_t first = mk_group_first(g, grp);
	uint32_t nb = mk_group_blocks(g, grp);

	/* Padding (bits past the group's blocks / inodes) stays 1. */
	memset(bb, 0xFF, 2 * (size_t)g->bs);
	mk_bits(bb, 0, nb, false);
	for (uint32_t i = 0; i < nb; i++)
		if (mk_used(m, first + i))
			bb[i >> 3] |= (uint8_t)(1u << (i & 7));
	mk_bits(ib, mk_group_rsv_inodes(g, grp), g->ipg, false);
}

/* Block and inode bitmaps of group grp: one 2-block write where they
 * are adjacent (without flex_bg), else two; as libext2fs's
 * write_bitmaps, not those of a BLOCK_UNINIT / INODE_UNINIT group. */
static int mk_write_bitmaps(struct mk *m, uint32_t grp)
{
	bool wb = !mk_flag(m, grp, MK_BG_BLOCK_UNINIT);
	bool wi = !mk_flag(m, grp, MK_BG_INODE_UNINIT);
	int rc = 0;

	mk_build_bitmaps(m, grp);
	if (wb && wi && m->ib[grp] == m->bb[grp] + 1)
		return mk_write(m, SFS_IO_BITMAP, m->bb[grp], m->blk, 2,
				"bitmaps");
	if (wb)
		rc = mk_write(m, SFS_IO_BITMAP, m->bb[grp], m->blk, 1,
			      "block bitmap");
	if (!rc && wi)
		rc = mk_write(m, SFS_IO_BITMAP, m->ib[grp], m->blk + m->g.bs, 1,
			      "inode bitmap");
	return rc;
}

/*
 * The checksum view (m->cfs) of the image being made: the superblock as
 * mk_super filled it, the geometry, and the descriptors split as the
 * engine keeps them (first 32 bytes; the rest of 64-byte ones).
 */
static void mk_csum_view(struct mk *m)
{
	const struct mk_geo *g = &m->g;
	struct sfs_fs *fs = g_new0(struct sfs_fs, 1);
	size_t tail = g->desc_size - sizeof(struct sfs_dgroup);

	fs->sb = m->sb;
	fs->bs = g->bs;
	fs->ipg = g->ipg;
	fs->groups = g->groups;
	fs->inode_size = g->isize;
	fs->desc_size = g->desc_size;
	fs->gd = g_new0(struct sfs_dgroup, g->groups);
	if (tail)
		fs->gd_tail = g_malloc0(tail * g->groups);
	/* the type is crc32c (mk_super): no error */
	sfs_csum_setup(fs, NULL);
	m->cfs = fs;
}

static void mk_csum_view_free(struct mk *m)
{
	if (!m->cfs)
		return;
	g_free(m->cfs->gd);
	g_free(m->cfs->gd_tail);
	g_free(m->cfs);
}

/*
 * Descriptor checksums (mk_csum_view first): with metadata_csum those of
 * the bitmaps written (mk_write_bitmaps; an uninitialised one keeps 0, as
 * libext2fs leaves it), then every bg_checksum (crc32c, or crc16 with
 * uninit_bg alone), as ext2fs_group_desc_csum_set computes them.
 */
static void mk_csum_gdt(struct mk *m)
{
	const struct mk_geo *g = &m->g;
	struct sfs_fs *fs = m->cfs;
	size_t tail = g->desc_size - sizeof(struct sfs_dgroup);

	for (uint32_t grp = 0; grp < g->groups; grp++) {
		uint8_t *raw = (uint8_t *)mk_desc(m, grp);

		memcpy(&fs->gd[grp], raw, sizeof(fs->gd[grp]));
		if (tail)
			memcpy(fs->gd_tail + tail * grp,
			       raw + sizeof(fs->gd[0]), tail);
		mk_build_bitmaps(m, grp);
		if (!mk_flag(m, grp, MK_BG_BLOCK_UNINIT))
			sfs_csum_bitmap_set(fs, grp, false, m->blk);
		if (!mk_flag(m, grp, MK_BG_INODE_UNINIT))
			sfs_csum_bitmap_set(fs, grp, true, m->blk + g->bs);
		fs->gd[grp].bg_checksum =
		    sfs_cpu_to_le16(sfs_csum_group(fs, grp, &fs->gd[grp]));
		memcpy(raw, &fs->gd[grp], sizeof(fs->gd[grp]));
		if (tail)
			memcpy(raw + sizeof(fs->gd[0]),
			       fs->gd_tail + tail * grp, tail);
	}
}

/* Superblock copy + GDT copy of backup group grp (> 0). */
static int mk_write_backup(struct mk *m, uint32_t grp)
{
	const struct mk_geo *g = &m->g;
	uint64_t start = mk_group_first(g, grp);
	struct sfs_dsuper *copy = (struct sfs_dsuper *)m->blk;
	int rc;

	memset(m->blk, 0, g->bs);
	*copy = m->sb;
	copy->s_block_group_nr = sfs_cpu_to_le16((uint16_t)grp);
	copy->s_state = 0; /* as closefs.c writes backups */
	sfs_csum_super_set(copy);
	rc = mk_write(m, SFS_IO_SUPER, start, m->blk, 1, "backup superblock");
	if (rc)
		return rc;
	rc = mk_write(m, SFS_IO_GDT, start + 1, m->gdt, g->desc_blocks,
		      "backup group descriptors");
	if (rc)
		return rc;
	return mk_zero(m, (start + 1 + g->desc_blocks) * g->bs,
		       (uint64_t)g->rsv_gdt * g->bs, "reserved GDT blocks");
}

/* Backup groups (> 0) of the filesystem, the resize inode's count. */
static uint32_t mk_backup_groups(const struct mk_geo *g)
{
	uint32_t n = 0;

	for (uint32_t grp = 1; grp < g->groups; grp++)
		n += sfs_group_has_super(grp, 1) ? 1 : 0;
	return n;
}

/*
 * The resize inode (inode 7) as ext2fs_create_resize_inode (e2fsprogs
 * lib/ext2fs/res_gdt.c) makes it: a regular file, mode 0600, whose
 * double-indirect block lists group 0's reserved GDT blocks at the slots
 * after the GDT's own blocks (modulo bs / 4), each of which lists its
 * copies in the backup groups; i_size as if every double-indirect slot
 * were mapped.
 */
static void mk_resize_inode(struct mk *m, struct sfs_dinode *d)
{
	const struct mk_geo *g = &m->g;
	uint64_t apb = g->bs / 4;
	uint64_t size = (apb * apb + apb + SFS_NDIR_BLOCKS) * g->bs;
	uint64_t nblk = 1 + (uint64_t)g->rsv_gdt * (1 + mk_backup_groups(g));

	d->i_mode = sfs_cpu_to_le16(SFS_S_IFREG | 0600);
	d->i_links_count = sfs_cpu_to_le16(1);
	d->i_size = sfs_cpu_to_le32((uint32_t)size);
	d->i_size_high = sfs_cpu_to_le32((uint32_t)(size >> 32));
	d->i_blocks = sfs_cpu_to_le32((uint32_t)(nblk * (g->bs / 512)));
	d->i_block[SFS_DIND_BLOCK] = sfs_cpu_to_le32((uint32_t)g->dind_blk);
	d->i_atime = d->i_ctime = d->i_mtime = sfs_cpu_to_le32(m->now);
	if (g->isize > SFS_GOOD_OLD_INODE_SIZE) {
		d->i_extra_isize = sfs_cpu_to_le16(SFS_EXTRA_ISIZE);
		d->i_crtime = sfs_cpu_to_le32(m->now);
	}
}

/* The resize inode's double-indirect block and group 0's reserved GDT
 * blocks (see mk_resize_inode). */
static int mk_write_resize(struct mk *m)
{
	const struct mk_geo *g = &m->g;
	uint32_t apb = g->bs / 4, *map = (uint32_t *)m->blk;
	uint64_t rsv0 = g->first + 1 + g->desc_blocks;
	int rc;

	if (!g->rsv_gdt)
		return 0;
	memset(m->blk, 0, g->bs);
	for (uint32_t i = 0; i < g->rsv_gdt; i++)
		map[(g->desc_blocks + i) % apb] =
		    sfs_cpu_to_le32((uint32_t)(rsv0 + i));
	rc = mk_write(m, SFS_IO_INDIRECT, g->dind_blk, m->blk, 1,
		      "resize inode");
	if (rc)
		return rc;
	for (uint32_t i = 0; i < g->rsv_gdt; i++) {
		uint32_t n = 0;

		memset(m->blk, 0, g->bs);
		for (uint32_t grp = 1; grp < g->groups; grp++)
			if (sfs_group_has_super(grp, 1))
				map[n++] = sfs_cpu_to_le32(
				    (uint32_t)(rsv0 + i +
					       (uint64_t)grp * g->bpg));
		rc = mk_write(m, SFS_IO_GDT, rsv0 + i, m->blk, 1,
			      "reserved GDT block");
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Map nblocks blocks from first_blk (at most one extent's worth) by the
 * extent tree in the inode itself: a depth-0 header with room for 4
 * entries and one extent, as ext2fs_extent_open2 starts every new map.
 */
static void mk_extent_map(struct sfs_dinode *d, uint64_t first_blk,
			  uint32_t nblocks)
{
	struct sfs_dextent_header *eh = (struct sfs_dextent_header *)d->i_block;
	struct sfs_dextent *ex = (struct sfs_dextent *)(eh + 1);

	d->i_flags |= sfs_cpu_to_le32(SFS_EXTENTS_FL);
	eh->eh_magic = sfs_cpu_to_le16(SFS_EXT_MAGIC);
	eh->eh_entries = sfs_cpu_to_le16(1);
	eh->eh_max =
	    sfs_cpu_to_le16((sizeof(d->i_block) - sizeof(*eh)) / sizeof(*ex));
	ex->ee_block = 0;
	ex->ee_len = sfs_cpu_to_le16((uint16_t)nblocks);
	ex->ee_start_hi = sfs_cpu_to_le16((uint16_t)(first_blk >> 32));
	ex->ee_start_lo = sfs_cpu_to_le32((uint32_t)first_blk);
}

/* Put a directory inode's fields into d. */
static void mk_dir_inode(struct mk *m, struct sfs_dinode *d, uint16_t mode,
			 uint16_t links, uint32_t uid, uint32_t gid,
			 uint64_t first_blk, uint32_t nblocks)
{
	const struct mk_geo *g = &m->g;

	d->i_mode = sfs_cpu_to_le16(mode);
	d->i_uid = sfs_cpu_to_le16((uint16_t)uid);
	d->i_uid_high = sfs_cpu_to_le16((uint16_t)(uid >> 16));
	d->i_gid = sfs_cpu_to_le16((uint16_t)gid);
	d->i_gid_high = sfs_cpu_to_le16((uint16_t)(gid >> 16));
	d->i_size = sfs_cpu_to_le32(nblocks * g->bs);
	d->i_atime = d->i_ctime = d->i_mtime = sfs_cpu_to_le32(m->now);
	d->i_links_count = sfs_cpu_to_le16(links);
	d->i_blocks = sfs_cpu_to_le32(nblocks * (g->bs / 512));
	if (m->p->extent)
		mk_extent_map(d, first_blk, nblocks);
	else
		for (uint32_t i = 0; i < nblocks; i++)
			d->i_block[i] =
			    sfs_cpu_to_le32((uint32_t)(first_blk + i));
	if (g->isize > SFS_GOOD_OLD_INODE_SIZE) {
		d->i_extra_isize = sfs_cpu_to_le16(SFS_EXTRA_ISIZE);
		d->i_crtime = sfs_cpu_to_le32(m->now);
	}
}

/*
 * Inode table of group grp: the blocks holding any of inodes 1..11 written
 * (usually all in group 0; a tiny ipg spreads them), the rest zeroed.
 */
static int mk_write_itable(struct mk *m, uint32_t grp)
{
	const struct mk_geo *g = &m->g;
	uint64_t itable = m->it[grp];
	uint32_t nrsv = mk_group_rsv_inodes(g, grp);
	uint32_t n = (uint32_t)div_ceil((uint64_t)nrsv * g->isize, g->bs);
	uint32_t base = grp * g->ipg + 1; /* first inode of the group */
	struct sfs_dinode *d;
	int rc;

	if (n) {
		memset(m->blk, 0, (size_t)n * g->bs);
		for (uint32_t ino = base; ino < base + nrsv; ino++) {
			d = (struct sfs_dinode *)(m->blk +
						  (size_t)(ino - base) *
						      g->isize);
			if (ino == 1) {
				/* Bad-blocks inode: only times, as mke2fs. */
				d->i_atime = d->i_ctime = d->i_mtime =
				    sfs_cpu_to_le32(m->now);
			} else if (ino == SFS_RESIZE_INO && g->rsv_gdt) {
				mk_resize_inode(m, d);
			} else if (ino == SFS_ROOT_INO) {
				mk_dir_inode(m, d, MK_ROOT_MODE, 3,
					     m->p->root_uid, m->p->root_gid,
					     g->root_blk, 1);
			} else if (ino == SFS_FIRST_INO) {
				mk_dir_inode(m, d, MK_LPF_MODE, 2, 0, 0,
					     g->lpf_blk, g->lpf_blocks);
			} else if (ino == SFS_JOURNAL_INO && m->jruns) {
				*d = m->jnl;
			}
			/* mke2fs writes every reserved inode (zero but for
			 * the above) with its checksum */
			if (m->cfs)
				sfs_csum_inode_set(m->cfs, ino, d);
		}
		rc =
		    mk_write(m, SFS_IO_INODE, itable, m->blk, n, "inode table");
		if (rc)
			return rc;
	}
	return mk_zero(m, (itable + n) * g->bs, (uint64_t)(g->itb - n) * g->bs,
		       "inode table");
}

/* Append a directory entry at *off; the last one of a block gets rec. */
static void mk_dirent(uint8_t *blk, uint32_t *off, uint32_t ino, uint16_t rec,
		      const char *name)
{
	struct sfs_ddirent *de = (struct sfs_ddirent *)(blk + *off);
	size_t len = strlen(name);

	de->inode = sfs_cpu_to_le32(ino);
	de->rec_len = sfs_cpu_to_le16(rec);
	de->name_len = (uint8_t)len;
	de->file_type = ino ? SFS_FT_DIR : SFS_FT_UNKNOWN;
	memcpy(de->name, name, len);
	*off += rec;
}

/* The root directory block and lost+found's blocks (usually adjacent). */
static int mk_write_dirs(struct mk *m)
{
	const struct mk_geo *g = &m->g;
	/* with metadata_csum each block ends in a 12-byte checksum tail */
	uint16_t bs = (uint16_t)(m->cfs ? sfs_csum_dir_end(m->cfs) : g->bs);
	uint8_t *b = m->blk;
	uint32_t off = 0;
	int rc;

	memset(b, 0, (size_t)(1 + g->lpf_blocks) * g->bs);
	mk_dirent(b, &off, SFS_ROOT_INO, 12, ".");
	mk_dirent(b, &off, SFS_ROOT_INO, 12, "..");
	mk_dirent(b, &off, SFS_FIRST_INO, bs - 24, "lost+found");
	b += g->bs;
	off = 0;
	mk_dirent(b, &off, SFS_FIRST_INO, 12, ".");
	mk_dirent(b, &off, SFS_ROOT_INO, bs - 12, "..");
	for (uint32_t i = 1; i < g->lpf_blocks; i++) {
		off = 0;
		mk_dirent(b + (size_t)i * g->bs, &off, 0, bs, "");
	}
	for (uint32_t i = 0; m->cfs && i <= g->lpf_blocks; i++)
		sfs_csum_dir_set(
		    m->cfs,
		    sfs_csum_owner_seed(m->cfs,
					i ? SFS_FIRST_INO : SFS_ROOT_INO, 0),
		    m->blk + (size_t)i * g->bs);
	if (g->lpf_blk == g->root_blk + 1)
		return mk_write(m, SFS_IO_DIR, g->root_blk, m->blk,
				1 + g->lpf_blocks,
				"root directory and lost+found");
	rc = mk_write(m, SFS_IO_DIR, g->root_blk, m->blk, 1, "root directory");
	if (rc)
		return rc;
	return mk_write(m, SFS_IO_DIR, g->lpf_blk, m->blk + g->bs,
			g->lpf_blocks, "lost+found");
}

/* The primary superblock (and the zeroed boot area around it). */
static int mk_write_primary_super(struct mk *m)
{
	const struct mk_geo *g = &m->g;
	int rc;

	sfs_csum_super_set(&m->sb);
	memset(m->blk, 0, g->bs);
	if (g->bs == 1024) {
		memcpy(m->blk, &m->sb, sizeof(m->sb));
		rc = mk_write(m, SFS_IO_SUPER, 1, m->blk, 1, "superblock");
	} else {
		memcpy(m->blk + SFS_SUPER_OFFSET, &m->sb, sizeof(m->sb));
		rc = mk_write(m, SFS_IO_SUPER, 0, m->blk, 1, "superblock");
	}
	return rc;
}

static int mk_put_indirect(void *ctx, uint64_t blk, const void *data)
{
	return mk_write(ctx, SFS_IO_INDIRECT, blk, data, 1,
			"journal indirect block");
}

/*
 * The journal placed by mk_place_journal: its blocks zeroed (unless known
 * zero), mapped, its superblock written (sfs_jbd2_lay_out), inode 8 kept
 * for mk_write_itable and the journal fields set in the superblock;
 * s_overhead_clusters counts the journal, as mke2fs's does.
 */
static int mk_write_journal(struct mk *m)
{
	const struct mk_geo *g = &m->g;
	char *msg = NULL;
	int rc;

	for (guint i = 0; i < m->jruns->len; i++) {
		struct sfs_jbd2_run *r =
		    &g_array_index(m->jruns, struct sfs_jbd2_run, i);

		rc = mk_zero(m, r->start * g->bs, (uint64_t)r->len * g->bs,
			     "journal");
		if (rc)
			return rc;
	}
	rc = sfs_jbd2_lay_out(m->bd, g->bs, g->isize, m->jblocks, m->p->extent,
			      m->jruns, m->sb.s_uuid, m->now, mk_put_indirect,
			      m, &m->jnl, &msg);
	if (rc) {
		mk_fail(m, rc, "mkfs: %s", msg);
		g_free(msg);
		return rc;
	}
	sfs_jbd2_set_internal(&m->sb, &m->jnl);
	m->sb.s_overhead_clusters =
	    sfs_cpu_to_le32(sfs_le32(m->sb.s_overhead_clusters) + m->jblocks);
	return 0;
}

/* Write every structure of the new filesystem. */
static int mk_write_all(struct mk *m)
{
	const struct mk_geo *g = &m->g;
	int rc;

	/* Wipe the boot area and any old primary superblock first. */
	rc = mk_zero(m, 0, SFS_SUPER_OFFSET + SFS_SUPER_SIZE, "superblock");
	if (rc)
		return rc;
	if (m->jruns) {
		rc = mk_write_journal(m);
		if (rc)
			return rc;
	}
	if (m->gcsum) {
		mk_csum_view(m);
		mk_csum_gdt(m);
	}
	for (uint32_t grp = 0; grp < g->groups; grp++) {
		if (grp > 0 && sfs_group_has_super(grp, 1)) {
			rc = mk_write_backup(m, grp);
			if (rc)
				return rc;
		}
		rc = mk_write_bitmaps(m, grp);
		if (rc)
			return rc;
		rc = mk_write_itable(m, grp);
		if (rc)
			return rc;
	}
	rc = mk_write_dirs(m);
	if (rc)
		return rc;
	rc = mk_write_resize(m);
	if (rc)
		return rc;
	rc = mk_write(m, SFS_IO_GDT, g->first + 1, m->gdt, g->desc_blocks,
		      "group descriptors");
	if (rc)
		return rc;
	rc = mk_write_primary_super(m);
	if (rc)
		return rc;
	if (sfs_bdev_flush(m->bd))
		return mk_fail(m, -EIO, "mkfs: device flush failed");
	return 0;
}

/*
 * Format bd (see mkfs.h).  0; -EINVAL with a message for parameters or a
 * size out of range; -EIO with a message if the device fails.
 */
/*
 * The one time stamp of the new image: p->time, else $SOURCE_DATE_EPOCH
 * (the reproducible-builds convention, which mke2fs 1.47 honours too), else
 * now.  With --seed and SOURCE_DATE_EPOCH the same command makes the same
 * bytes.
 */
static int mk_time(const struct sfs_mkfs_params *p, uint32_t *now, char **err)
{
	const char *env = getenv("SOURCE_DATE_EPOCH");
	char *end;
	unsigned long long v;

	if (p->time) {
		*now = p->time;
		return 0;
	}
	if (!env || !*env) {
		*now = (uint32_t)(sfs_clock_wall_ns() / SFS_NS_PER_S);
		return 0;
	}
	errno = 0;
	v = strtoull(env, &end, 10);
	if (errno || *end || env[0] == '-' || v == 0 || v > UINT32_MAX) {
		if (err)
			*err = g_strdup_printf(
			    "bad SOURCE_DATE_EPOCH '%s' (seconds since 1970, "
			    "1 to %u)",
			    env, UINT32_MAX);
		return -EINVAL;
	}
	*now = (uint32_t)v;
	return 0;
}

int sfs_mkfs(struct sfs_bdev *bd, const struct sfs_mkfs_params *p, char **err)
{
	struct mk m = {.bd = bd, .p = p, .err = err};
	uint64_t dev_bytes, size;
	uint32_t free_blocks, free_inodes;
	size_t scratch;
	int rc;

	if (err)
		*err = NULL;
	if (!bd || !p)
		return mk_fail(&m, -EINVAL, "mkfs: no device or parameters");
	rc = mk_check_params(&m);
	if (rc)
		return rc;
	rc = sfs_mkfs_check_features(p, err);
	if (rc)
		return rc;
	dev_bytes = sfs_bdev_size_bytes(bd);
	size = p->size_bytes ? p->size_bytes : dev_bytes;
	if (size > dev_bytes)
		return mk_fail(&m, -EINVAL,
			       "mkfs: size %" G_GUINT64_FORMAT
			       " bytes exceeds the device (%" G_GUINT64_FORMAT
			       " bytes)",
			       size, dev_bytes);
	rc = mk_geometry(&m, size, p->size_bytes == 0);
	if (rc)
		return rc;
	m.ro_compat = mk_ro_compat(p);
	m.gcsum = m.ro_compat & MK_CSUM_RO;

	m.zeroed = sfs_bdev_known_zero(bd);
	rc = mk_time(p, &m.now, err);
	if (rc)
		return rc;
	m.gdt = g_malloc0((size_t)m.g.desc_blocks * m.g.bs);
	scratch = MAX(2, 1 + m.g.lpf_blocks);
	scratch =
	    MAX(scratch, div_ceil((uint64_t)SFS_FIRST_INO * m.g.isize, m.g.bs));
	m.blk = g_malloc0(scratch * m.g.bs);

	rc = mk_layout(&m);
	if (rc)
		goto out_free;
	mk_gdt(&m, &free_blocks, &free_inodes);
	mk_super(&m, free_blocks, free_inodes);
	rc = mk_write_all(&m);

out_free:
	mk_csum_view_free(&m);
	if (m.jruns)
		g_array_free(m.jruns, TRUE);
	g_free(m.bmap);
	g_free(m.bb);
	g_free(m.ib);
	g_free(m.it);
	g_free(m.blk);
	g_free(m.gdt);
	return rc;
}

int sfs_mkfs_sync_backups(struct sfs_bdev *bd, char **err)
{
	struct sfs_dsuper sb;
	uint32_t bs, first, bpg, groups, desc_blocks;
	uint64_t blocks;
	uint8_t *blk, *gdt;
	bool sparse;
	int rc;

	rc = sfs_bdev_read(bd, SFS_IO_SUPER, SFS_SUPER_OFFSET, &sb,
			   sizeof(sb));
	if (rc < 0 || sfs_le16(sb.s_magic) != SFS_SUPER_MAGIC ||
	    sfs_le32(sb.s_log_block_size) > 2 ||
	    sfs_le32(sb.s_blocks_per_group) == 0) {
		if (err)
			*err = g_strdup("mkfs: no superblock to copy into the "
					"backups");
		return rc < 0 ? rc : -EINVAL;
	}
	bs = 1024u << sfs_le32(sb.s_log_block_size);
	first = sfs_le32(sb.s_first_data_block);
	bpg = sfs_le32(sb.s_blocks_per_group);
	blocks = sfs_le32(sb.s_blocks_count);
	groups = (uint32_t)div_ceil(blocks - first, bpg);
	desc_blocks =
	    (uint32_t)div_ceil((uint64_t)groups * sfs_sb_desc_size(&sb), bs);
	sparse = sfs_le32(sb.s_feature_ro_compat) &
		 SFS_FEATURE_RO_COMPAT_SPARSE_SUPER;
	blk = g_malloc0(bs);
	gdt = g_malloc((size_t)desc_blocks * bs);
	rc = sfs_bdev_read(bd, SFS_IO_GDT, (uint64_t)(first + 1) * bs, gdt,
			   (size_t)desc_blocks * bs);
	for (uint32_t g = 1; g < groups && rc == 0; g++) {
		uint64_t start = first + (uint64_t)g * bpg;
		struct sfs_dsuper *copy = (struct sfs_dsuper *)blk;

		if (!sfs_group_has_super(g, sparse))
			continue;
		*copy = sb;
		copy->s_block_group_nr = sfs_cpu_to_le16((uint16_t)g);
		copy->s_state = 0; /* as closefs.c writes backups */
		sfs_csum_super_set(copy);
		rc = sfs_bdev_write(bd, SFS_IO_SUPER, start * bs, blk, bs);
		if (rc == 0)
			rc = sfs_bdev_write(bd, SFS_IO_GDT, (start + 1) * bs,
					    gdt, (size_t)desc_blocks * bs);
	}
	g_free(blk);
	g_free(gdt);
	if (rc < 0 && err)
		*err = g_strdup_printf("mkfs: cannot write the backup "
				       "superblocks (%s)",
				       g_strerror(-rc));
	return rc < 0 ? rc : 0;
}
