/*
 * inspect.c - `simfs inspect IMAGE [WHAT]`: a look inside an image.
 *
 *   summary     geometry, features, free blocks/inodes, state, mounts
 *   groups      per group: layout, free counts (descriptor vs bitmap),
 *               directories, largest free run
 *   inode INO   the inode's fields and its block map as runs, with the
 *               indirect (mapping metadata) blocks
 *   file PATH   resolve PATH from the root, then as `inode`
 *   free        histogram of free-space runs by length
 *   extents PATH the file's maximal runs, like filefrag -v (frag.c)
 *   frag        extents per regular file and free-space runs (frag.c)
 *
 * dumpe2fs and debugfs remain the general viewers; this shows what they do
 * not show at a glance: contiguity, run lengths, where a file's blocks sit.
 *
 * The image is opened read-only through the engine (SFS_BDEV_RDONLY,
 * config ro) and without the exclusive lock, so it works on a mounted image
 * too; the view is then what has been written back so far, and a warning
 * says so.  Engine internals (fs_priv.h) are only read, under fs->lock;
 * public verbs (which take the lock themselves) are called outside it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include <glib.h>

#include "cli.h"
#include "config.h"
#include "frag.h"
#include "fs_priv.h"
#include "inspect.h"
#include "models/journal/jbd2.h"

#define SFS_EXIT_FAIL 1
#define SFS_EXIT_USAGE 2
#define SFS_HIST_BUCKETS 33 /* run lengths 1, 2-3, 4-7, ... 2^32-1 */

static void ins_usage(FILE *out)
{
	fputs("usage: simfs inspect IMAGE [WHAT]\n"
	      "\n"
	      "Show what dumpe2fs and debugfs do not show at a glance.  "
	      "WHAT is one of:\n"
	      "  summary     geometry, features, free space, state "
	      "(default)\n"
	      "  groups      per block group: layout, free counts, largest "
	      "free run\n"
	      "  inode INO   an inode and its block map as runs (logical -> "
	      "physical)\n"
	      "  file PATH   the same for the file at PATH (from the root)\n"
	      "  free        histogram of free-space runs by length\n"
	      "  extents PATH  the file's extents as maximal runs, "
	      "metadata blocks,\n"
	      "              unwritten (fallocated) blocks, and \"N "
	      "extents found\"\n"
	      "              (like filefrag -v)\n"
	      "  frag        all regular files: extents per file, average "
	      "extent\n"
	      "              length, files by extent count; free-space "
	      "runs\n"
	      "  journal     the journal superblock and the log, transaction "
	      "by\n"
	      "              transaction (also a log that needs recovery)\n"
	      "  journal-all the same, including old transactions of a clean "
	      "log\n"
	      "\n"
	      "The image is opened read-only and may be mounted; the view is "
	      "then only\n"
	      "what the daemon has written back so far.\n"
	      "\n"
	      "options:\n"
	      "  -h, --help  this help\n",
	      out);
}

/*
 * The journal, read straight from the device so that a log waiting for
 * recovery can be shown (the engine would refuse such an image read-only).
 * Closes bd.
 */
static int ins_journal(struct sfs_bdev *bd, bool all)
{
	struct sfs_jlog *log;
	char *err = NULL;
	int rc;

	rc = sfs_jlog_open_dev(bd, NULL, &log, &err);
	if (rc < 0) {
		sfs_err("inspect", "%s", err ? err : g_strerror(-rc));
		g_free(err);
		sfs_bdev_close(bd);
		return SFS_EXIT_FAIL;
	}
	rc = sfs_jlog_print(log, all ? SFS_JLOG_WALK_STALE : 0, stdout);
	sfs_jlog_close(log);
	sfs_bdev_close(bd);
	if (rc < 0) {
		sfs_err("inspect", "reading the journal: %s", g_strerror(-rc));
		return SFS_EXIT_FAIL;
	}
	return 0;
}

/* ---- small formatting helpers ---- */

static void ins_time(uint32_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t == 0) {
		g_strlcpy(buf, "never", len);
		return;
	}
	gmtime_r(&tt, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

static void ins_timespec(const struct timespec *ts, char *buf, size_t len)
{
	char sec[48];
	time_t tt = ts->tv_sec;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(sec, sizeof(sec), "%Y-%m-%d %H:%M:%S", &tm);
	if (ts->tv_nsec)
		g_snprintf(buf, len, "%s.%09ld UTC", sec, ts->tv_nsec);
	else
		g_snprintf(buf, len, "%s UTC", sec);
}

struct ins_flag {
	uint32_t bit;
	const char *name;
};

/* Append the names of the bits set in v; unknown bits in hex. */
static void ins_flags(GString *out, uint32_t v, const struct ins_flag *tab,
		      size_t n, const char *unknown_prefix)
{
	for (size_t i = 0; i < n; i++) {
		if (v & tab[i].bit) {
			g_string_append_printf(out, "%s%s", out->len ? " " : "",
					       tab[i].name);
			v &= ~tab[i].bit;
		}
	}
	if (v)
		g_string_append_printf(out, "%s%s0x%x", out->len ? " " : "",
				       unknown_prefix, v);
}

static const struct ins_flag ins_compat[] = {
    {SFS_FEATURE_COMPAT_DIR_PREALLOC, "dir_prealloc"},
    {SFS_FEATURE_COMPAT_IMAGIC_INODES, "imagic_inodes"},
    {SFS_FEATURE_COMPAT_HAS_JOURNAL, "has_journal"},
    {SFS_FEATURE_COMPAT_EXT_ATTR, "ext_attr"},
    {SFS_FEATURE_COMPAT_RESIZE_INODE, "resize_inode"},
    {SFS_FEATURE_COMPAT_DIR_INDEX, "dir_index"},
};
static const struct ins_flag ins_incompat[] = {
    {SFS_FEATURE_INCOMPAT_COMPRESSION, "compression"},
    {SFS_FEATURE_INCOMPAT_FILETYPE, "filetype"},
    {SFS_FEATURE_INCOMPAT_RECOVER, "needs_recovery"},
    {SFS_FEATURE_INCOMPAT_JOURNAL_DEV, "journal_dev"},
    {SFS_FEATURE_INCOMPAT_META_BG, "meta_bg"},
    {SFS_FEATURE_INCOMPAT_EXTENTS, "extent"},
    {SFS_FEATURE_INCOMPAT_64BIT, "64bit"},
    {SFS_FEATURE_INCOMPAT_MMP, "mmp"},
    {SFS_FEATURE_INCOMPAT_FLEX_BG, "flex_bg"},
};
static const struct ins_flag ins_ro_compat[] = {
    {SFS_FEATURE_RO_COMPAT_SPARSE_SUPER, "sparse_super"},
    {SFS_FEATURE_RO_COMPAT_LARGE_FILE, "large_file"},
    {SFS_FEATURE_RO_COMPAT_HUGE_FILE, "huge_file"},
    {SFS_FEATURE_RO_COMPAT_GDT_CSUM, "uninit_bg"},
    {SFS_FEATURE_RO_COMPAT_DIR_NLINK, "dir_nlink"},
    {SFS_FEATURE_RO_COMPAT_EXTRA_ISIZE, "extra_isize"},
    {SFS_FEATURE_RO_COMPAT_METADATA_CSUM, "metadata_csum"},
};
static const struct ins_flag ins_iflags[] = {
    {SFS_SYNC_FL, "sync"},
    {SFS_IMMUTABLE_FL, "immutable"},
    {SFS_APPEND_FL, "append"},
    {SFS_NOATIME_FL, "noatime"},
    {SFS_INDEX_FL, "index"},
    {SFS_EXTENTS_FL, "extents"},
    {SFS_INLINE_DATA_FL, "inline_data"},
};

static bool ins_test_bit(const uint8_t *map, uint32_t i)
{
	return map[i >> 3] & (1u << (i & 7));
}

/* Is the image mounted by simfs right now?  *where (g_free) = mount point.
 * Matches /proc/mounts' source (our fsname) against the image's path. */
static bool ins_mounted(const char *image, char **where)
{
	char *path = realpath(image, NULL), *text = NULL, **lines;
	bool found = false;

	*where = NULL;
	if (!path)
		return false;
	if (!g_file_get_contents("/proc/mounts", &text, NULL, NULL)) {
		free(path);
		return false;
	}
	lines = g_strsplit(text, "\n", -1);
	for (int i = 0; lines[i] && !found; i++) {
		char **f = g_strsplit(lines[i], " ", 4);

		if (g_strv_length(f) >= 3 && strcmp(f[2], "fuse.simfs") == 0) {
			char *src = g_strcompress(f[0]);

			if (strcmp(src, path) == 0) {
				found = true;
				*where = g_strcompress(f[1]);
			}
			g_free(src);
		}
		g_strfreev(f);
	}
	g_strfreev(lines);
	g_free(text);
	free(path);
	return found;
}

/* ---- summary ---- */

/* True if bd holds a journaled image whose log still needs replaying. */
static bool ins_needs_recovery(struct sfs_bdev *bd)
{
	struct sfs_dsuper sb;

	if (sfs_bdev_size_bytes(bd) < SFS_SUPER_OFFSET + sizeof(sb) ||
	    sfs_bdev_read(bd, SFS_IO_OTHER, SFS_SUPER_OFFSET, &sb,
			  sizeof(sb)) < 0 ||
	    sfs_le16(sb.s_magic) != SFS_SUPER_MAGIC)
		return false;
	return (sfs_le32(sb.s_feature_incompat) &
		SFS_FEATURE_INCOMPAT_RECOVER) &&
	       (sfs_le32(sb.s_feature_compat) &
		SFS_FEATURE_COMPAT_HAS_JOURNAL);
}

/*
 * The models a live mount runs with, from its control file (WHERE/.simfs/
 * config), as "alloc=... data=..."; NULL if it cannot be read.
 */
static char *ins_live_models(const char *where)
{
	static const char *const keys[] = {"preset", "alloc", "data",
					   "delalloc", "dirs", "sched"};
	char *path = g_build_filename(where, ".simfs", "config", NULL);
	char *text = NULL, **lines;
	GString *out;

	if (!g_file_get_contents(path, &text, NULL, NULL)) {
		g_free(path);
		return NULL;
	}
	out = g_string_new(NULL);
	lines = g_strsplit(text, "\n", -1);
	for (size_t k = 0; k < G_N_ELEMENTS(keys); k++)
		for (int i = 0; lines[i]; i++) {
			size_t n = strlen(keys[k]);

			if (strncmp(lines[i], keys[k], n) == 0 &&
			    lines[i][n] == '=' && lines[i][n + 1])
				g_string_append_printf(out, "%s%s",
						       out->len ? " " : "",
						       lines[i]);
		}
	g_strfreev(lines);
	g_free(text);
	g_free(path);
	return g_string_free(out, FALSE);
}

static int ins_summary(struct sfs_fs *fs, const char *image,
		       const char *where)
{
	const struct sfs_dsuper *sb = &fs->sb;
	uint64_t free_blocks = 0, free_inodes = 0, dirs = 0;
	uint16_t state = sfs_le16(sb->s_state);
	GString *feat = g_string_new(NULL);
	char size[32], t1[40], t2[40], t3[40];
	int16_t max_mnt;

	sfs_lock(fs);
	for (uint32_t g = 0; g < fs->groups; g++) {
		free_blocks += sfs_le16(fs->gd[g].bg_free_blocks_count);
		free_inodes += sfs_le16(fs->gd[g].bg_free_inodes_count);
		dirs += sfs_le16(fs->gd[g].bg_used_dirs_count);
	}
	sfs_unlock(fs);

	ins_flags(feat, sfs_le32(sb->s_feature_compat), ins_compat,
		  G_N_ELEMENTS(ins_compat), "compat:");
	ins_flags(feat, sfs_le32(sb->s_feature_incompat), ins_incompat,
		  G_N_ELEMENTS(ins_incompat), "incompat:");
	ins_flags(feat, sfs_le32(sb->s_feature_ro_compat), ins_ro_compat,
		  G_N_ELEMENTS(ins_ro_compat), "ro_compat:");
	sfs_human_size((uint64_t)fs->blocks_count * fs->bs, size, sizeof(size));

	printf("image:           %s\n", image);
	printf("volume name:     %.16s\n",
	       sb->s_volume_name[0] ? sb->s_volume_name : "<none>");
	printf("UUID:            ");
	for (int i = 0; i < 16; i++)
		printf("%s%02x",
		       (i == 4 || i == 6 || i == 8 || i == 10) ? "-" : "",
		       sb->s_uuid[i]);
	printf("\n");
	printf("revision:        %u.%u\n", sfs_le32(sb->s_rev_level),
	       sfs_le16(sb->s_minor_rev_level));
	printf("features:        %s\n", feat->len ? feat->str : "(none)");
	printf("state:           %s%s\n",
	       (state & SFS_STATE_VALID) ? "clean" : "not clean",
	       (state & SFS_STATE_ERROR) ? ", with errors" : "");
	max_mnt = (int16_t)sfs_le16(sb->s_max_mnt_count);
	printf("mount count:     %u (max %d)\n", sfs_le16(sb->s_mnt_count),
	       max_mnt);
	ins_time(sfs_le32(sb->s_mkfs_time), t1, sizeof(t1));
	ins_time(sfs_le32(sb->s_mtime), t2, sizeof(t2));
	ins_time(sfs_le32(sb->s_wtime), t3, sizeof(t3));
	printf("created:         %s\n", t1);
	printf("last mounted:    %s\n", t2);
	printf("last written:    %s\n", t3);
	printf("size:            %s: %u blocks of %u bytes, first data "
	       "block %u\n",
	       size, fs->blocks_count, fs->bs, fs->first_data_block);
	printf("groups:          %u of %u blocks, %u inodes each (%u "
	       "inode-table blocks)\n",
	       fs->groups, fs->bpg, fs->ipg, fs->itb);
	printf("inodes:          %u of %u bytes, first non-reserved %u\n",
	       sfs_le32(sb->s_inodes_count), fs->inode_size,
	       sfs_le32(sb->s_first_ino));
	printf("descriptors:     %u GDT block%s + %u reserved for growth\n",
	       fs->desc_blocks, fs->desc_blocks == 1 ? "" : "s",
	       fs->reserved_gdt);
	printf("free blocks:     %" G_GUINT64_FORMAT " (%.1f%%), %u reserved "
	       "for root",
	       free_blocks,
	       fs->blocks_count ? 100.0 * free_blocks / fs->blocks_count : 0,
	       sfs_le32(sb->s_r_blocks_count));
	if (free_blocks != sfs_le32(sb->s_free_blocks_count))
		printf(" (superblock says %u)",
		       sfs_le32(sb->s_free_blocks_count));
	printf("\n");
	printf("free inodes:     %" G_GUINT64_FORMAT " of %u", free_inodes,
	       sfs_le32(sb->s_inodes_count));
	if (free_inodes != sfs_le32(sb->s_free_inodes_count))
		printf(" (superblock says %u)",
		       sfs_le32(sb->s_free_inodes_count));
	printf("\n");
	printf("directories:     %" G_GUINT64_FORMAT "\n", dirs);
	/* The image records its format, not the models that wrote it: the
	 * allocator and journal policy are mount options.  A live mount
	 * says what it runs with. */
	printf("file mapping:    %s\n",
	       sfs_le32(sb->s_feature_incompat) & SFS_FEATURE_INCOMPAT_EXTENTS
		   ? "extent trees allowed (the extents feature is set)"
		   : "block maps only (no extents feature)");
	if (where) {
		char *live = ins_live_models(where);

		printf("models:          %s (the mount at %s)\n",
		       live ? live : "unknown", where);
		g_free(live);
	} else {
		printf("models:          not recorded in the image (chosen at "
		       "mount: -o preset=, alloc=, data=)\n");
	}
	g_string_free(feat, TRUE);
	return 0;
}

/* ---- groups ---- */

struct ins_run_stats {
	uint32_t free;	      /* free blocks counted in the bitmap */
	uint32_t largest;     /* longest free run, blocks */
	sfs_blk_t largest_at; /* its first block */
};

/* Scan group g's block bitmap.  Called with fs->lock held. */
static int ins_scan_group(struct sfs_fs *fs, uint32_t g,
			  struct ins_run_stats *st)
{
	uint32_t n = sfs_group_nblocks(fs, g), run = 0;
	sfs_blk_t first = sfs_group_first(fs, g);
	struct sfs_buf *b;
	int rc;

	memset(st, 0, sizeof(*st));
	rc = sfs_block_bitmap(fs, g, &b);
	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i <= n; i++) {
		if (i < n && !ins_test_bit(b->data, i)) {
			run++;
			st->free++;
			continue;
		}
		if (run > st->largest) {
			st->largest = run;
			st->largest_at = first + i - run;
		}
		run = 0;
	}
	sfs_cache_put(fs->cache, b);
	return 0;
}

static int ins_groups(struct sfs_fs *fs)
{
	bool sparse = sfs_le32(fs->sb.s_feature_ro_compat) &
		      SFS_FEATURE_RO_COMPAT_SPARSE_SUPER;
	bool mismatch = false;
	int rc = 0;

	printf("%5s %-21s %-3s %8s %8s %-21s %9s %8s %6s  %s\n", "group",
	       "blocks", "sb", "b-bitmap", "i-bitmap", "inode table",
	       "free-blk", "free-ino", "dirs", "largest free run");
	sfs_lock(fs);
	for (uint32_t g = 0; g < fs->groups; g++) {
		const struct sfs_dgroup *gd = &fs->gd[g];
		sfs_blk_t first = sfs_group_first(fs, g);
		uint32_t n = sfs_group_nblocks(fs, g);
		uint32_t it = sfs_le32(gd->bg_inode_table);
		uint32_t dfree = sfs_le16(gd->bg_free_blocks_count);
		struct ins_run_stats st;
		char range[32], itab[32], fb[24], run[48];

		rc = ins_scan_group(fs, g, &st);
		if (rc < 0) {
			sfs_unlock(fs);
			sfs_err("inspect",
				"reading the block bitmap of group %u: %s", g,
				g_strerror(-rc));
			return SFS_EXIT_FAIL;
		}
		g_snprintf(range, sizeof(range), "%u-%u", first, first + n - 1);
		g_snprintf(itab, sizeof(itab), "%u-%u", it, it + fs->itb - 1);
		if (st.free == dfree) {
			g_snprintf(fb, sizeof(fb), "%u", dfree);
		} else {
			g_snprintf(fb, sizeof(fb), "%u*", dfree);
			mismatch = true;
		}
		if (st.largest)
			g_snprintf(run, sizeof(run), "%u at %u-%u", st.largest,
				   st.largest_at,
				   st.largest_at + st.largest - 1);
		else
			g_strlcpy(run, "-", sizeof(run));
		printf("%5u %-21s %-3s %8u %8u %-21s %9s %8u %6u  %s\n", g,
		       range, sfs_group_has_super(g, sparse) ? "yes" : "-",
		       sfs_le32(gd->bg_block_bitmap),
		       sfs_le32(gd->bg_inode_bitmap), itab, fb,
		       sfs_le16(gd->bg_free_inodes_count),
		       sfs_le16(gd->bg_used_dirs_count), run);
		if (st.free != dfree)
			printf("      * the bitmap has %u free blocks\n",
			       st.free);
	}
	sfs_unlock(fs);
	if (mismatch)
		printf("* descriptor count differs from the bitmap (not yet "
		       "written back, or damage: e2fsck -fn)\n");
	return 0;
}

/* ---- free-space histogram ---- */

static unsigned ins_bucket(uint32_t len)
{
	unsigned b = 0;

	while (len >>= 1)
		b++;
	return b; /* run of len in [2^b, 2^(b+1)) */
}

static int ins_free(struct sfs_fs *fs)
{
	uint64_t runs[SFS_HIST_BUCKETS] = {0}, blocks[SFS_HIST_BUCKETS] = {0};
	uint64_t total = 0, nruns = 0;
	uint32_t run = 0, largest = 0;
	sfs_blk_t run_start = 0, largest_at = 0;
	char human[32];
	int rc = 0;

	sfs_lock(fs);
	/* runs are physical: one continuing into the next group is one */
	for (uint32_t g = 0; g < fs->groups; g++) {
		uint32_t n = sfs_group_nblocks(fs, g);
		sfs_blk_t first = sfs_group_first(fs, g);
		struct sfs_buf *b;

		rc = sfs_block_bitmap(fs, g, &b);
		if (rc < 0) {
			sfs_unlock(fs);
			sfs_err("inspect",
				"reading the block bitmap of group %u: %s", g,
				g_strerror(-rc));
			return SFS_EXIT_FAIL;
		}
		for (uint32_t i = 0; i < n; i++) {
			if (!ins_test_bit(b->data, i)) {
				if (run++ == 0)
					run_start = first + i;
				continue;
			}
			if (run) {
				unsigned k = ins_bucket(run);

				runs[k]++;
				blocks[k] += run;
				total += run;
				nruns++;
				if (run > largest) {
					largest = run;
					largest_at = run_start;
				}
			}
			run = 0;
		}
		sfs_cache_put(fs->cache, b);
	}
	sfs_unlock(fs);
	if (run) {
		unsigned k = ins_bucket(run);

		runs[k]++;
		blocks[k] += run;
		total += run;
		nruns++;
		if (run > largest) {
			largest = run;
			largest_at = run_start;
		}
	}

	sfs_human_size(total * fs->bs, human, sizeof(human));
	printf("free space: %" G_GUINT64_FORMAT
	       " blocks (%s) in %" G_GUINT64_FORMAT " run%s\n",
	       total, human, nruns, nruns == 1 ? "" : "s");
	if (nruns == 0)
		return 0;
	printf("largest run: %u blocks at %u-%u; average %.1f blocks\n",
	       largest, largest_at, largest_at + largest - 1,
	       (double)total / (double)nruns);
	printf("\n%23s %10s %14s %9s\n", "run length (blocks)", "runs",
	       "free blocks", "of free");
	for (unsigned k = 0; k < SFS_HIST_BUCKETS; k++) {
		uint64_t lo = 1ull << k, hi = (2ull << k) - 1;
		char range[32];

		if (!runs[k])
			continue;
		g_snprintf(range, sizeof(range),
			   "%" G_GUINT64_FORMAT " - %" G_GUINT64_FORMAT, lo,
			   hi);
		printf("%23s %10" G_GUINT64_FORMAT " %14" G_GUINT64_FORMAT
		       " %8.2f%%\n",
		       range, runs[k], blocks[k], 100.0 * blocks[k] / total);
	}
	return 0;
}

/* ---- one inode ---- */

struct ins_map {
	uint64_t data_blocks;
	uint64_t data_runs;
	uint64_t meta_blocks;
	uint32_t next_lblk;  /* for hole detection */
	uint64_t holes;	     /* logical blocks skipped between runs */
	sfs_blk_t next_pblk; /* physical block after the last one reported */
	uint64_t fragments;  /* physical pieces, indirect blocks included */
};

/* Count a physical piece each time the walk does not continue in place
 * (data and indirect blocks in the order a sequential read meets them). */
static void ins_map_phys(struct ins_map *m, sfs_blk_t pblk, uint32_t len)
{
	if (m->fragments == 0 || pblk != m->next_pblk)
		m->fragments++;
	m->next_pblk = pblk + len;
}

static int ins_map_fn(void *ctx, uint32_t lblk, sfs_blk_t pblk, uint32_t len,
		      bool meta)
{
	struct ins_map *m = ctx;

	if (len == 0)
		return 0;
	if (meta) {
		if (len == 1)
			printf("  indirect %u (maps from logical %u)\n", pblk,
			       lblk);
		else
			printf("  indirect %u-%u (%u blocks, from logical "
			       "%u)\n",
			       pblk, pblk + len - 1, len, lblk);
		m->meta_blocks += len;
		ins_map_phys(m, pblk, len);
		return 0;
	}
	if (lblk > m->next_lblk)
		m->holes += lblk - m->next_lblk;
	if (len == 1)
		printf("  logical %u -> physical %u\n", lblk, pblk);
	else
		printf("  logical %u-%u -> physical %u-%u (%u blocks)\n", lblk,
		       lblk + len - 1, pblk, pblk + len - 1, len);
	m->data_blocks += len;
	m->data_runs++;
	ins_map_phys(m, pblk, len);
	m->next_lblk = lblk + len;
	return 0;
}

static const char *ins_type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "regular file";
	case S_IFDIR:
		return "directory";
	case S_IFLNK:
		return "symbolic link";
	case S_IFCHR:
		return "character device";
	case S_IFBLK:
		return "block device";
	case S_IFIFO:
		return "FIFO";
	case S_IFSOCK:
		return "socket";
	default:
		return "unknown type";
	}
}

static void ins_mode_string(uint32_t mode, char out[11])
{
	static const char types[] = "?pc?d?b?-?l?s???";
	const char *rwx = "rwxrwxrwx";

	out[0] = types[(mode >> 12) & 0xf];
	for (int i = 0; i < 9; i++)
		out[1 + i] = (mode & (0400 >> i)) ? rwx[i] : '-';
	if (mode & S_ISUID)
		out[3] = (mode & S_IXUSR) ? 's' : 'S';
	if (mode & S_ISGID)
		out[6] = (mode & S_IXGRP) ? 's' : 'S';
	if (mode & S_ISVTX)
		out[9] = (mode & S_IXOTH) ? 't' : 'T';
	out[10] = '\0';
}

static void ins_xattrs(struct sfs_fs *fs, sfs_ino_t ino)
{
	size_t len = 0, vlen;
	char *names;

	if (sfs_listxattr(fs, ino, NULL, 0, &len) < 0 || len == 0)
		return;
	names = g_try_malloc(len);
	if (!names)
		return;
	if (sfs_listxattr(fs, ino, names, len, &len) == 0) {
		printf("xattrs:\n");
		for (size_t off = 0; off < len;) {
			const char *name = names + off;
			size_t nlen = strnlen(name, len - off);

			if (nlen == len - off)
				break; /* not NUL-terminated: stop */
			if (sfs_getxattr(fs, ino, name, NULL, 0, &vlen) == 0)
				printf("  %s (%zu bytes)\n", name, vlen);
			else
				printf("  %s\n", name);
			off += nlen + 1;
		}
	}
	g_free(names);
}

static int ins_inode(struct sfs_fs *fs, sfs_ino_t ino, const char *path)
{
	struct ins_map m = {0};
	struct sfs_inode *ip;
	struct sfs_dinode d;
	struct sfs_attr a;
	char mstr[11], t[64];
	bool fast_symlink, has_map;
	GString *fl;
	int rc;

	rc = sfs_getattr(fs, ino, &a);
	if (rc == -ESTALE) {
		sfs_err("inspect", "inode %u is not in use", ino);
		return SFS_EXIT_FAIL;
	}
	if (rc < 0) {
		sfs_err("inspect", "inode %u: %s", ino, g_strerror(-rc));
		return SFS_EXIT_FAIL;
	}

	if (path)
		printf("path:        %s\n", path);
	ins_mode_string(a.mode, mstr);
	printf("inode:       %u, %s\n", ino, ins_type_name(a.mode));
	printf("mode:        %04o (%s)\n", a.mode & 07777, mstr);
	printf("links:       %u\n", a.nlink);
	printf("owner:       uid %u, gid %u\n", a.uid, a.gid);
	printf("size:        %" G_GUINT64_FORMAT " bytes\n", a.size);
	printf("blocks:      %" G_GUINT64_FORMAT " sectors = %" G_GUINT64_FORMAT
	       " x %u bytes (data, indirect and xattr blocks)\n",
	       a.blocks, a.blocks * 512 / fs->bs, fs->bs);
	if (S_ISCHR(a.mode) || S_ISBLK(a.mode))
		printf("device:      %u, %u\n", major(a.rdev), minor(a.rdev));
	ins_timespec(&a.atime, t, sizeof(t));
	printf("atime:       %s\n", t);
	ins_timespec(&a.mtime, t, sizeof(t));
	printf("mtime:       %s\n", t);
	ins_timespec(&a.ctime, t, sizeof(t));
	printf("ctime:       %s\n", t);
	printf("generation:  %u\n", a.generation);

	sfs_lock(fs);
	rc = sfs_iget(fs, ino, &ip);
	if (rc < 0) {
		sfs_unlock(fs);
		sfs_err("inspect", "inode %u: %s", ino, g_strerror(-rc));
		return SFS_EXIT_FAIL;
	}
	d = ip->d;
	fast_symlink = sfs_i_islnk(ip) && sfs_i_fast_symlink(ip);
	/* i_block holds a device number or a fast symlink target, not a
	 * map, for these */
	has_map = !fast_symlink &&
		  (sfs_i_isreg(ip) || sfs_i_isdir(ip) || sfs_i_islnk(ip));
	if (sfs_le32(d.i_dtime)) {
		ins_time(sfs_le32(d.i_dtime), t, sizeof(t));
		printf("dtime:       %s\n", t);
	}
	if (fs->inode_size > SFS_GOOD_OLD_INODE_SIZE && d.i_crtime) {
		ins_time(sfs_le32(d.i_crtime), t, sizeof(t));
		printf("crtime:      %s\n", t);
	}
	fl = g_string_new(NULL);
	ins_flags(fl, sfs_le32(d.i_flags), ins_iflags, G_N_ELEMENTS(ins_iflags),
		  "");
	printf("flags:       0x%x%s%s\n", sfs_le32(d.i_flags),
	       fl->len ? " " : "", fl->str);
	g_string_free(fl, TRUE);
	if (d.i_file_acl)
		printf("xattr block: %u\n", sfs_le32(d.i_file_acl));
	else
		printf("xattr block: none\n");
	if (fs->inode_size > SFS_GOOD_OLD_INODE_SIZE)
		printf("extra isize: %u\n", sfs_le16(d.i_extra_isize));
	if (fast_symlink)
		printf("target:      \"%.*s\" (fast symlink, in the inode)\n",
		       (int)MIN(a.size, sizeof(d.i_block)),
		       (const char *)d.i_block);

	if (has_map) {
		printf("block map (%s):\n", sfs_map_name(fs, ip));
		rc = sfs_map_walk(fs, ip, ins_map_fn, &m);
	}
	sfs_iput(fs, ip);
	sfs_unlock(fs);

	if (has_map) {
		uint64_t size_blocks = (a.size + fs->bs - 1) / fs->bs;

		if (rc < 0) {
			sfs_err("inspect",
				"walking the block map of inode %u: %s", ino,
				g_strerror(-rc));
			return SFS_EXIT_FAIL;
		}
		if (m.data_runs == 0)
			printf("  (no blocks)\n");
		if (size_blocks > m.next_lblk)
			m.holes += size_blocks - m.next_lblk;
		printf("map summary: %" G_GUINT64_FORMAT
		       " data block%s in %" G_GUINT64_FORMAT
		       " run%s, %" G_GUINT64_FORMAT
		       " indirect block%s, %" G_GUINT64_FORMAT
		       " hole block%s\n",
		       m.data_blocks, m.data_blocks == 1 ? "" : "s",
		       m.data_runs, m.data_runs == 1 ? "" : "s", m.meta_blocks,
		       m.meta_blocks == 1 ? "" : "s", m.holes,
		       m.holes == 1 ? "" : "s");
		if (m.data_runs)
			printf("on disk:     %" G_GUINT64_FORMAT
			       " physical piece%s, indirect blocks "
			       "included (1 = read in one sweep)\n",
			       m.fragments, m.fragments == 1 ? "" : "s");
	}
	if (S_ISLNK(a.mode) && !fast_symlink) {
		char *buf = g_malloc(fs->bs + 1);
		size_t len = 0;

		if (sfs_readlink(fs, ino, buf, fs->bs, &len) == 0 &&
		    len <= fs->bs)
			printf("target:      \"%.*s\"\n", (int)len, buf);
		g_free(buf);
	}
	ins_xattrs(fs, ino);
	return 0;
}

/* Resolve PATH from the root, one sfs_lookup per component.  Returns 0
 * or SFS_EXIT_FAIL (message printed). */
static int ins_resolve(struct sfs_fs *fs, const char *path, sfs_ino_t *out)
{
	char **parts = g_strsplit(path, "/", -1);
	sfs_ino_t ino = SFS_ROOT_INO;
	struct sfs_attr a;
	int rc = 0;

	for (int i = 0; parts[i]; i++) {
		if (parts[i][0] == '\0' || strcmp(parts[i], ".") == 0)
			continue;
		rc = sfs_lookup(fs, ino, parts[i], &a);
		if (rc < 0) {
			sfs_err("inspect", "%s: component '%s': %s", path,
				parts[i], g_strerror(-rc));
			g_strfreev(parts);
			return SFS_EXIT_FAIL;
		}
		ino = a.ino;
	}
	g_strfreev(parts);
	*out = ino;
	return 0;
}

static int ins_file(struct sfs_fs *fs, const char *path)
{
	sfs_ino_t ino;

	if (ins_resolve(fs, path, &ino))
		return SFS_EXIT_FAIL;
	return ins_inode(fs, ino, path);
}

/* filefrag -v for PATH (the work is in frag.c). */
static int ins_extents(struct sfs_fs *fs, const char *path)
{
	sfs_ino_t ino;
	int rc;

	if (ins_resolve(fs, path, &ino))
		return SFS_EXIT_FAIL;
	printf("path: %s\n", path);
	rc = sfs_frag_print_extents(fs, ino, stdout);
	if (rc == -EINVAL) {
		sfs_err("inspect",
			"%s: no block map (device, FIFO or fast symlink)",
			path);
		return SFS_EXIT_FAIL;
	}
	if (rc < 0) {
		sfs_err("inspect", "%s: %s", path, g_strerror(-rc));
		return SFS_EXIT_FAIL;
	}
	return 0;
}

static int ins_frag(struct sfs_fs *fs)
{
	int rc = sfs_frag_print_summary(fs, stdout);

	if (rc < 0) {
		sfs_err("inspect", "surveying the files: %s", g_strerror(-rc));
		return SFS_EXIT_FAIL;
	}
	return 0;
}

int sfs_inspect_main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *image, *what = "summary", *arg = NULL;
	struct sfs_config cfg;
	struct sfs_bdev *bd;
	struct sfs_fs *fs;
	char *err = NULL, *where = NULL, *end;
	unsigned long long ino = 0;
	bool recover, mounted;
	int c, nargs, rc;

	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (c == 'h') {
			ins_usage(stdout);
			return 0;
		}
		if (optopt)
			sfs_err("inspect",
				"unknown option '-%c' (see simfs inspect "
				"--help)",
				optopt);
		else
			sfs_err("inspect",
				"unknown option '%s' (see simfs inspect "
				"--help)",
				argv[optind - 1]);
		return SFS_EXIT_USAGE;
	}
	nargs = argc - optind;
	if (nargs < 1) {
		sfs_err("inspect",
			"IMAGE missing (usage: simfs inspect IMAGE [WHAT])");
		return SFS_EXIT_USAGE;
	}
	image = argv[optind];
	if (nargs >= 2)
		what = argv[optind + 1];
	if (strcmp(what, "inode") == 0 || strcmp(what, "file") == 0 ||
	    strcmp(what, "extents") == 0) {
		if (nargs != 3) {
			sfs_err("inspect", "usage: simfs inspect IMAGE %s %s",
				what, what[0] == 'i' ? "INO" : "PATH");
			return SFS_EXIT_USAGE;
		}
		arg = argv[optind + 2];
		if (what[0] == 'i') {
			errno = 0;
			ino = strtoull(arg, &end, 10);
			if (!g_ascii_isdigit(arg[0]) || *end || errno ||
			    ino == 0 || ino > UINT32_MAX) {
				sfs_err("inspect", "bad inode number '%s'",
					arg);
				return SFS_EXIT_USAGE;
			}
		}
	} else if (strcmp(what, "summary") == 0 ||
		   strcmp(what, "groups") == 0 || strcmp(what, "free") == 0 ||
		   strcmp(what, "frag") == 0 ||
		   strcmp(what, "journal") == 0 ||
		   strcmp(what, "journal-all") == 0) {
		if (nargs > 2) {
			sfs_err("inspect", "too many arguments for '%s'", what);
			return SFS_EXIT_USAGE;
		}
	} else {
		sfs_err("inspect",
			"unknown view '%s' (summary, groups, inode INO, file "
			"PATH, free, extents PATH, frag, journal, "
			"journal-all)",
			what);
		return SFS_EXIT_USAGE;
	}
	if (sfs_parse_only())
		return 0;

	rc = sfs_bdev_open_file(image, SFS_BDEV_RDONLY, 0, &bd);
	if (rc < 0) {
		sfs_err("inspect", "cannot open %s: %s", image,
			g_strerror(-rc));
		return SFS_EXIT_FAIL;
	}
	if (strncmp(what, "journal", 7) == 0)
		return ins_journal(bd, strcmp(what, "journal-all") == 0);
	sfs_config_defaults(&cfg);
	cfg.ro = true;
	recover = ins_needs_recovery(bd);
	if (recover) {
		/* replay the log into memory, never into the image */
		bd = sfs_bdev_overlay_new(bd);
		cfg.ro = false;
		rc = sfs_config_parse(&cfg, "data=ordered", NULL, &err);
		g_assert(rc == 0);
	}
	rc = sfs_fs_open(bd, &cfg, &fs, &err);
	if (rc < 0) {
		sfs_err("inspect", "%s", err ? err : g_strerror(-rc));
		g_free(err);
		return SFS_EXIT_FAIL;
	}
	mounted = ins_mounted(image, &where);
	if (mounted)
		sfs_err("inspect",
			"warning: %s is mounted at %s: this view shows only "
			"what has been written back so far%s",
			image, where,
			recover ? ", with the journal's committed "
				  "transactions applied"
				: "");
	if (recover)
		sfs_err("inspect",
			"note: the journal needed recovery; it was replayed "
			"in memory, so this view shows the image as a mount "
			"or e2fsck would after recovery (the image itself is "
			"unchanged)");

	if (strcmp(what, "summary") == 0)
		rc = ins_summary(fs, image, mounted ? where : NULL);
	else if (strcmp(what, "groups") == 0)
		rc = ins_groups(fs);
	else if (strcmp(what, "free") == 0)
		rc = ins_free(fs);
	else if (strcmp(what, "frag") == 0)
		rc = ins_frag(fs);
	else if (strcmp(what, "extents") == 0)
		rc = ins_extents(fs, arg);
	else if (strcmp(what, "inode") == 0)
		rc = ins_inode(fs, (sfs_ino_t)ino, NULL);
	else
		rc = ins_file(fs, arg);

	sfs_fs_close(fs);
	g_free(where);
	return rc;
}
