/*
 * frag.c - fragmentation views and the "alloc_layout" stats section.
 *
 *   sfs_frag_inode_runs     one file's map as maximal runs (+ metadata)
 *   sfs_frag_free_scan      free-space runs from the block bitmaps
 *   sfs_frag_print_extents  `simfs inspect IMAGE extents PATH`
 *   sfs_frag_print_summary  `simfs inspect IMAGE frag`
 *   sfs_frag_stats_source   stats section "alloc_layout"
 *
 * The mapping model's walk reports runs as its structure cuts them (one
 * per extent, one per indirect block's worth of pointers); here data runs
 * that continue each other logically and physically are merged, so a
 * block-mapped and an extent-mapped file laid out alike count alike.
 * Metadata ranges are kept in walk order and do not split data runs.
 *
 * Everything reads engine internals under fs->lock; the print verbs take
 * it themselves.  The stats section is bounded for a live mount: per-file
 * numbers come only from the inodes in the inode cache (never the whole
 * inode table), free space from the group bitmaps (one cached block per
 * group).  Walking a cached inode's map may read indirect or tree blocks
 * through the block cache when they are not cached.
 */
#include <errno.h>
#include <string.h>

#include "frag.h"
#include "fs_priv.h"

struct frag_walk {
	GArray *runs;  /* struct sfs_frag_run */
	int last_data; /* index of the last data run, -1: none */
};

static int frag_walk_fn(void *ctx, uint32_t lblk, sfs_blk_t pblk, uint32_t len,
			bool meta)
{
	struct frag_walk *fw = ctx;
	struct sfs_frag_run r = {lblk, pblk, len, meta};

	if (len == 0)
		return 0;
	if (!meta && fw->last_data >= 0) {
		struct sfs_frag_run *p = &g_array_index(
		    fw->runs, struct sfs_frag_run, fw->last_data);

		if (p->lblk + p->len == lblk && p->pblk + p->len == pblk &&
		    (uint64_t)p->len + len <= UINT32_MAX) {
			p->len += len;
			return 0;
		}
	}
	g_array_append_val(fw->runs, r);
	if (!meta)
		fw->last_data = (int)fw->runs->len - 1;
	return 0;
}

int sfs_frag_inode_runs(struct sfs_fs *fs, struct sfs_inode *ip, GArray **out)
{
	struct frag_walk fw = {
	    g_array_new(FALSE, FALSE, sizeof(struct sfs_frag_run)), -1};
	int rc;

	rc = sfs_map_walk(fs, ip, frag_walk_fn, &fw);
	if (rc < 0) {
		g_array_unref(fw.runs);
		*out = NULL;
		return rc;
	}
	*out = fw.runs;
	return 0;
}

uint32_t sfs_frag_count_extents(const GArray *runs)
{
	uint32_t n = 0;

	for (guint i = 0; i < runs->len; i++)
		if (!g_array_index(runs, struct sfs_frag_run, i).meta)
			n++;
	return n;
}

static uint64_t frag_data_blocks(const GArray *runs)
{
	uint64_t n = 0;

	for (guint i = 0; i < runs->len; i++) {
		const struct sfs_frag_run *r =
		    &g_array_index(runs, struct sfs_frag_run, i);

		if (!r->meta)
			n += r->len;
	}
	return n;
}

static bool frag_bit(const uint8_t *map, uint32_t i)
{
	return map[i >> 3] & (1u << (i & 7));
}

/* A free run that began at start ends: into out's histogram. */
static void frag_run_end(struct sfs_frag_free *out, uint64_t *run,
			 sfs_blk_t start)
{
	if (*run) {
		if (*run > out->runs.max)
			out->largest_at = start;
		sfs_hist_add(&out->runs, *run);
	}
	*run = 0;
}

/* A group whose bitmap is bad (sfs_group_bad) counts as having no free
 * block, as in the free counts. */
int sfs_frag_free_scan(struct sfs_fs *fs, struct sfs_frag_free *out)
{
	sfs_blk_t start = 0;
	uint64_t run = 0;

	memset(out, 0, sizeof(*out));
	for (uint32_t g = 0; g < fs->groups; g++) {
		uint32_t n = sfs_group_nblocks(fs, g);
		sfs_blk_t first = sfs_group_first(fs, g);
		struct sfs_buf *b;
		int rc = sfs_block_bitmap(fs, g, &b);

		if (rc < 0 && sfs_group_bad(fs, g, false)) {
			frag_run_end(out, &run, start); /* none free here */
			continue;
		}
		if (rc < 0)
			return rc;
		for (uint32_t i = 0; i < n; i++) {
			if (!frag_bit(b->data, i)) {
				if (run++ == 0)
					start = first + i;
				continue;
			}
			frag_run_end(out, &run, start);
		}
		sfs_cache_put(fs->cache, b);
	}
	frag_run_end(out, &run, start);
	return 0;
}

/* Does ip have a block map to walk (not a device, FIFO, fast symlink)? */
static bool frag_has_map(const struct sfs_inode *ip)
{
	if (sfs_i_islnk(ip))
		return !sfs_i_fast_symlink(ip);
	return sfs_i_isreg(ip) || sfs_i_isdir(ip);
}

int sfs_frag_print_extents(struct sfs_fs *fs, sfs_ino_t ino, FILE *out)
{
	struct sfs_inode *ip;
	const char *map;
	uint64_t data = 0, meta = 0;
	uint32_t n = 0;
	GArray *runs;
	int rc;

	sfs_lock(fs);
	rc = sfs_iget(fs, ino, &ip);
	if (rc < 0) {
		sfs_unlock(fs);
		return rc;
	}
	if (!frag_has_map(ip)) {
		sfs_iput(fs, ip);
		sfs_unlock(fs);
		return -EINVAL;
	}
	map = sfs_map_name(fs, ip);
	rc = sfs_frag_inode_runs(fs, ip, &runs);
	/* unwritten (fallocated) blocks of each data run, as filefrag flags
	 * them */
	GArray *unw = g_array_new(FALSE, TRUE, sizeof(uint32_t));
	for (guint i = 0; rc == 0 && i < runs->len; i++) {
		const struct sfs_frag_run *r =
		    &g_array_index(runs, struct sfs_frag_run, i);
		uint32_t k = 0;

		for (uint32_t b = 0; !r->meta && b < r->len && rc == 0; b++) {
			sfs_blk_t p;
			bool u = false;
			rc = sfs_map_block(fs, ip, r->lblk + b, false, &p, &u);
			k += u;
		}
		g_array_append_val(unw, k);
	}
	sfs_iput(fs, ip);
	sfs_unlock(fs);
	if (rc < 0) {
		g_array_unref(unw);
		if (runs)
			g_array_unref(runs);
		return rc;
	}

	fprintf(out, "inode %u, %s map, block size %u\n", ino, map, fs->bs);
	fprintf(out, "%5s %23s %23s %8s  %s\n", "ext", "logical_offset",
		"physical_offset", "length", "");
	for (guint i = 0; i < runs->len; i++) {
		const struct sfs_frag_run *r =
		    &g_array_index(runs, struct sfs_frag_run, i);
		char lo[32], ph[32], tag[8];

		g_snprintf(ph, sizeof(ph), "%u..%u", r->pblk,
			   r->pblk + r->len - 1);
		if (r->meta) {
			g_snprintf(lo, sizeof(lo), "(maps %u..)", r->lblk);
			g_strlcpy(tag, "meta", sizeof(tag));
			meta += r->len;
		} else {
			g_snprintf(lo, sizeof(lo), "%u..%u", r->lblk,
				   r->lblk + r->len - 1);
			g_snprintf(tag, sizeof(tag), "%u", n++);
			data += r->len;
		}
		uint32_t k = g_array_index(unw, uint32_t, i);
		char flag[40] = "";
		if (r->meta)
			g_strlcpy(flag, "metadata", sizeof(flag));
		else if (k == r->len)
			g_strlcpy(flag, "unwritten", sizeof(flag));
		else if (k)
			g_snprintf(flag, sizeof(flag), "%u unwritten", k);
		fprintf(out, "%5s %23s %23s %8u  %s\n", tag, lo, ph, r->len,
			flag);
	}
	g_array_unref(unw);
	fprintf(out,
		"data blocks: %" G_GUINT64_FORMAT
		", metadata blocks: %" G_GUINT64_FORMAT "\n",
		data, meta);
	fprintf(out, "average extent length: %.1f blocks\n",
		n ? (double)data / n : 0.0);
	fprintf(out, "%u extent%s found\n", n, n == 1 ? "" : "s");
	g_array_unref(runs);
	return 0;
}

/* Print a log2 histogram's non-empty buckets. */
static void frag_print_hist(FILE *out, const struct sfs_hist *h,
			    const char *what)
{
	fprintf(out, "%23s %10s\n", what, "files");
	for (unsigned k = 0; k < SFS_HIST_NBUCKETS; k++) {
		uint64_t lo = sfs_hist_bucket_lo(k), hi = sfs_hist_bucket_hi(k);
		char range[48];

		if (!h->buckets[k])
			continue;
		if (lo == hi)
			g_snprintf(range, sizeof(range), "%" G_GUINT64_FORMAT,
				   lo);
		else
			g_snprintf(range, sizeof(range),
				   "%" G_GUINT64_FORMAT " - %" G_GUINT64_FORMAT,
				   lo, hi);
		fprintf(out, "%23s %10" G_GUINT64_FORMAT, range, h->buckets[k]);
		fputc('\n', out);
	}
}

/* Free runs by length, with the blocks each bucket holds. */
static void frag_print_free(FILE *out, const struct sfs_frag_free *ff,
			    const uint64_t *blocks)
{
	const struct sfs_hist *h = &ff->runs;

	fprintf(out,
		"free space: %" G_GUINT64_FORMAT " blocks in %" G_GUINT64_FORMAT
		" run%s",
		h->sum, h->count, h->count == 1 ? "" : "s");
	if (h->count)
		fprintf(out,
			", largest %" G_GUINT64_FORMAT
			" at %u, average %.1f blocks",
			h->max, ff->largest_at, sfs_hist_mean(h));
	fputc('\n', out);
	if (!h->count)
		return;
	fprintf(out, "%23s %10s %14s %9s\n", "free run (blocks)", "runs",
		"free blocks", "of free");
	for (unsigned k = 1; k < SFS_HIST_NBUCKETS; k++) {
		char range[48];

		if (!h->buckets[k])
			continue;
		g_snprintf(range, sizeof(range),
			   "%" G_GUINT64_FORMAT " - %" G_GUINT64_FORMAT,
			   sfs_hist_bucket_lo(k), sfs_hist_bucket_hi(k));
		fprintf(out,
			"%23s %10" G_GUINT64_FORMAT " %14" G_GUINT64_FORMAT
			" %8.2f%%\n",
			range, h->buckets[k], blocks[k],
			100.0 * (double)blocks[k] / (double)h->sum);
	}
}

/* Blocks per free-run bucket (the histogram keeps only counts): rescan. */
static int frag_free_blocks_by_bucket(struct sfs_fs *fs, uint64_t *blocks)
{
	uint64_t run = 0;

	for (uint32_t g = 0; g < fs->groups; g++) {
		uint32_t n = sfs_group_nblocks(fs, g);
		struct sfs_buf *b;
		int rc = sfs_block_bitmap(fs, g, &b);

		if (rc < 0 && sfs_group_bad(fs, g, false)) {
			if (run)
				blocks[sfs_hist_bucket(run)] += run;
			run = 0;
			continue;
		}
		if (rc < 0)
			return rc;
		for (uint32_t i = 0; i < n; i++) {
			if (!frag_bit(b->data, i)) {
				run++;
				continue;
			}
			if (run)
				blocks[sfs_hist_bucket(run)] += run;
			run = 0;
		}
		sfs_cache_put(fs->cache, b);
	}
	if (run)
		blocks[sfs_hist_bucket(run)] += run;
	return 0;
}

int sfs_frag_print_summary(struct sfs_fs *fs, FILE *out)
{
	uint64_t blocks[SFS_HIST_NBUCKETS] = {0}, data = 0;
	struct sfs_hist per_file = {0};
	struct sfs_frag_free ff;
	int rc = 0;

	for (uint32_t g = 0; g < fs->groups && rc == 0; g++) {
		sfs_lock(fs);
		bool empty =
		    sfs_le16(fs->gd[g].bg_free_inodes_count) >= fs->ipg;
		sfs_unlock(fs);
		if (empty)
			continue;
		for (uint32_t i = 0; i < fs->ipg; i++) {
			sfs_ino_t ino = g * fs->ipg + i + 1;
			struct sfs_inode *ip = NULL;
			GArray *runs = NULL;

			sfs_lock(fs);
			rc = sfs_iget(fs, ino, &ip);
			if (rc < 0) {
				sfs_unlock(fs);
				if (rc != -ESTALE)
					break;
				rc = 0;
				continue;
			}
			if (sfs_i_isreg(ip)) {
				rc = sfs_frag_inode_runs(fs, ip, &runs);
				if (rc == 0) {
					sfs_hist_add(
					    &per_file,
					    sfs_frag_count_extents(runs));
					data += frag_data_blocks(runs);
					g_array_unref(runs);
				}
			}
			sfs_iput(fs, ip);
			sfs_unlock(fs);
			if (rc < 0)
				break;
		}
	}
	if (rc < 0)
		return rc;
	sfs_lock(fs);
	rc = sfs_frag_free_scan(fs, &ff);
	if (rc == 0)
		rc = frag_free_blocks_by_bucket(fs, blocks);
	sfs_unlock(fs);
	if (rc < 0)
		return rc;

	fprintf(out, "regular files:         %" G_GUINT64_FORMAT "\n",
		per_file.count);
	fprintf(out, "extents:               %" G_GUINT64_FORMAT "\n",
		per_file.sum);
	fprintf(out,
		"extents per file:      mean %.2f, max %" G_GUINT64_FORMAT "\n",
		sfs_hist_mean(&per_file), per_file.count ? per_file.max : 0);
	fprintf(out, "average extent length: %.1f blocks\n",
		per_file.sum ? (double)data / (double)per_file.sum : 0.0);
	if (per_file.count) {
		fputc('\n', out);
		frag_print_hist(out, &per_file, "files by extent count");
	}
	fputc('\n', out);
	frag_print_free(out, &ff, blocks);
	return 0;
}

void sfs_frag_stats_source(void *ctx, struct sfs_stats_writer *w)
{
	struct sfs_fs *fs = ctx;
	struct sfs_hist per_file = {0};
	struct sfs_frag_free ff;
	GHashTableIter it;
	gpointer key, val;
	uint64_t data = 0;
	int rc;

	sfs_lock(fs);
	g_hash_table_iter_init(&it, fs->icache);
	while (g_hash_table_iter_next(&it, &key, &val)) {
		struct sfs_inode *ip = val;
		GArray *runs;

		if (ip->deleted || !sfs_i_isreg(ip))
			continue;
		if (sfs_frag_inode_runs(fs, ip, &runs) < 0)
			continue;
		sfs_hist_add(&per_file, sfs_frag_count_extents(runs));
		data += frag_data_blocks(runs);
		g_array_unref(runs);
	}
	rc = sfs_frag_free_scan(fs, &ff);
	sfs_unlock(fs);

	sfs_stats_put_u64(w, "files_sampled", per_file.count);
	sfs_stats_put_u64(w, "extents", per_file.sum);
	sfs_stats_put_hist(w, "extents_per_file", &per_file);
	sfs_stats_put_double(w, "mean_extent_blocks",
			     per_file.sum ? (double)data / (double)per_file.sum
					  : 0.0);
	if (rc < 0)
		return;
	sfs_stats_put_u64(w, "free_runs", ff.runs.count);
	sfs_stats_put_u64(w, "free_blocks", ff.runs.sum);
	sfs_stats_put_hist(w, "free_run_blocks", &ff.runs);
}
