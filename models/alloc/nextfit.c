/*
 * nextfit.c - next-fit and first-fit block placement (alloc=nextfit), the
 * placement that FFS's cylinder groups were invented to replace.  A teaching
 * model: put it beside alloc=blockmap and look at where files land.
 *
 * ext2's search (bitmap.c) starts at a goal in the file's own group, next
 * to its last block or its inode, as FFS does (McKusick et al., "A Fast
 * File System for UNIX", 1984; the FFS chapter of Arpaci-Dusseau,
 * "Operating Systems: Three Easy Pieces", whose simulator ffs.py compares
 * group placement with placement that ignores groups).  This model ignores
 * the goal and the groups:
 *
 *   nextfit_mode=next   the search starts at a rover, the block after the
 *                       last one handed out, and wraps at the end of the
 *                       disk (next fit, Knuth TAOCP vol. 1, 2.5);
 *   nextfit_mode=first  every search starts at the first block (first
 *                       fit): holes near the start fill first.
 *
 * A request takes the first free block found and the free blocks after it,
 * up to `want` and at most nextfit_run blocks, never past the end of a
 * group (a run is one bitmap's bits).  With several files written at once
 * next fit interleaves them block run by block run; files and their
 * directories drift apart because nothing ties a file to its inode's group.
 * Files are block-mapped (indirect blocks, blockmap.c), so images stay
 * what e2fsck expects of ext2.  Metadata and padding bits are set in the
 * bitmaps, so they are never handed out.
 */
#include <errno.h>
#include <stddef.h>

#include "devmodel.h"
#include "model.h"
#include "models/alloc/bitmap_search.h"
#include "stats.h"

enum { NF_NEXT = 0, NF_FIRST = 1 };

struct nf_params {
	int mode;     /* NF_NEXT or NF_FIRST */
	uint32_t run; /* most blocks one request takes */
};

struct nf_priv {
	struct nf_params p;
	sfs_blk_t rover;   /* next fit: where the next search starts */
	uint64_t requests; /* requests served */
	uint64_t wraps;	   /* searches that went past the last block */
};

static const struct sfs_knob nf_knobs[] = {
    {
	.key = "nextfit_mode",
	.type = SFS_KNOB_ENUM,
	.offset = offsetof(struct nf_params, mode),
	.def = "next",
	.choices = "next|first",
	.help = "alloc=nextfit: search from the last block handed out "
		"(next) or from the first block (first)",
	.live = true,
	.metavar = "MODE",
    },
    {
	.key = "nextfit_run",
	.type = SFS_KNOB_U32,
	.offset = offsetof(struct nf_params, run),
	.def = "64",
	.min = 1,
	.max = 65536,
	.help = "alloc=nextfit: most blocks one request takes (1: block "
		"by block)",
	.live = true,
	.metavar = "BLOCKS",
    },
    {0},
};

static int nf_init(struct sfs_alloc *a)
{
	struct nf_priv *n = g_new0(struct nf_priv, 1);

	if (sfs_knobs_defaults("nextfit", nf_knobs, &n->p, NULL) != 0) {
		g_free(n);
		return -EINVAL;
	}
	n->rover = sfs_geom(a->fs)->first_data_block;
	a->priv = n;
	return 0;
}

static void nf_fini(struct sfs_alloc *a)
{
	g_free(a->priv);
	a->priv = NULL;
}

static int nf_configure(struct sfs_alloc *a, const void *params, char **err)
{
	struct nf_priv *n = a->priv;

	(void)err; /* the ranges say it all */
	n->p = *(const struct nf_params *)params;
	return 0;
}

/* Take up to want free blocks from bit `bit` of group g's bitmap. */
static int nf_take(struct sfs_alloc *a, uint32_t g, const uint8_t *map,
		   uint32_t bit, uint32_t want, sfs_blk_t *start_out,
		   uint32_t *got_out)
{
	uint32_t len = sfs_bm_run(map, bit, want, sfs_group_nblocks(a->fs, g));

	return sfs_bm_grant(a, sfs_group_first(a->fs, g) + bit, len, start_out,
			    got_out);
}

static int nf_new_blocks(struct sfs_alloc *a, struct sfs_inode *ip,
			 sfs_blk_t goal, uint32_t want, sfs_blk_t *start_out,
			 uint32_t *got_out)
{
	struct sfs_fs *fs = a->fs;
	struct nf_priv *n = a->priv;
	sfs_blk_t from_blk =
	    n->p.mode == NF_FIRST ? sfs_geom(fs)->first_data_block : n->rover;
	uint32_t g0 = sfs_blk_group(fs, from_blk), bit0;

	(void)ip;
	(void)goal; /* the point of the model: no goal, no groups */
	if (from_blk < sfs_geom(fs)->first_data_block ||
	    g0 >= sfs_geom(fs)->groups) {
		from_blk = sfs_geom(fs)->first_data_block;
		g0 = 0;
	}
	bit0 = (uint32_t)(from_blk - sfs_group_first(fs, g0));
	want = MIN(want, n->p.run);
	n->requests++;
	for (uint32_t i = 0; i <= sfs_geom(fs)->groups; i++) {
		uint32_t g = (g0 + i) % sfs_geom(fs)->groups;
		uint32_t end = sfs_group_nblocks(fs, g);
		uint32_t from = i == 0 ? MIN(bit0, end) : 0;
		struct sfs_buf *b;
		uint32_t bit;
		int rc;

		if (i == sfs_geom(fs)->groups && bit0 == 0)
			break; /* the first group was searched whole */
		if (i == sfs_geom(fs)->groups)
			end = MIN(bit0, end); /* wrapped: its head */
		if (i > 0 && g == 0)
			n->wraps++; /* past the last block, on from the first */
		if (sfs_group_desc(fs, g)->bg_free_blocks_count == 0 ||
		    sfs_group_bad(fs, g, false))
			continue;
		rc = sfs_block_bitmap(fs, g, &b);
		if (rc)
			return rc;
		bit = sfs_bm_next_free(a, b->data, from, end);
		if (bit < end)
			rc = nf_take(a, g, b->data, bit, want, start_out,
				     got_out);
		sfs_cache_put(sfs_fs_cache(fs), b);
		if (rc)
			return rc;
		if (bit < end) {
			n->rover = *start_out + *got_out;
			return 0;
		}
	}
	return -ENOSPC;
}

static void nf_stats(struct sfs_alloc *a, struct sfs_stats_writer *w)
{
	struct nf_priv *n = a->priv;

	sfs_stats_put_u64(w, "requests", n->requests);
	sfs_stats_put_u64(w, "wraps", n->wraps);
	sfs_stats_put_u64(w, "rover", n->rover);
}

static const struct sfs_alloc_ops nf_ops = {
    .name = "nextfit",
    .init = nf_init,
    .fini = nf_fini,
    .new_blocks = nf_new_blocks,
    .stats = nf_stats,
    .knobs = nf_knobs,
    .params_size = sizeof(struct nf_params),
    .configure = nf_configure,
};

const struct sfs_alloc_preset sfs_alloc_nextfit = {
    .name = "nextfit",
    .help = "teaching: indirect block maps, next-fit or first-fit "
	    "placement that ignores goals and groups (nextfit_mode=, "
	    "nextfit_run=)",
    .map = &sfs_blockmap_map_ops,
    .place = &nf_ops,
};
