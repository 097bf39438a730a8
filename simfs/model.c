/*
 * model.c - the seam between the engine and its models, both ways.
 *
 * Inward, what model.h lets a placement, mapping or journal model read of
 * the engine without seeing struct sfs_fs: the group
 * descriptors, the cache, the superblock, the CPU counters.
 *
 * Outward, the doors the engine calls the mapping and placement models
 * through (declared in fs_priv.h): one function per op, so that no engine
 * file reaches into an ops table itself and a model's ops are found in
 * one place.  sfs_bmap and sfs_truncate (inode.c) and sfs_alloc_blocks
 * (fs.c) are built on the same ops.
 */
#include <errno.h>

#include "fs_priv.h"

/* ---- what models see (model.h) ---- */

struct sfs_cpu_ctr *sfs_cpu_ctr(struct sfs_fs *fs)
{
	return &fs->cpu_ctr;
}

uint32_t sfs_flex_size(const struct sfs_fs *fs)
{
	uint8_t log = ((const uint8_t *)&fs->sb)[0x174];

	if (!(sfs_le32(fs->sb.s_feature_incompat) &
	      SFS_FEATURE_INCOMPAT_FLEX_BG) ||
	    log > 31)
		return 1;
	return 1u << log;
}

const struct sfs_dgroup *sfs_group_desc(const struct sfs_fs *fs, uint32_t g)
{
	return &fs->gd[g];
}

bool sfs_group_bad(const struct sfs_fs *fs, uint32_t g, bool inode)
{
	return fs->gbad &&
	       (fs->gbad[g] & (inode ? SFS_GBAD_INODE : SFS_GBAD_BLOCK));
}

uint32_t sfs_fs_cur_pid(const struct sfs_fs *fs)
{
	return fs->cur_pid;
}

struct sfs_cache *sfs_fs_cache(struct sfs_fs *fs)
{
	return fs->cache;
}

const struct sfs_dsuper *sfs_fs_super(const struct sfs_fs *fs)
{
	return &fs->sb;
}

void sfs_fs_add_incompat(struct sfs_fs *fs, uint32_t flags)
{
	uint32_t incompat = sfs_le32(fs->sb.s_feature_incompat);

	if ((incompat & flags) == flags)
		return;
	fs->sb.s_feature_incompat = sfs_cpu_to_le32(incompat | flags);
	fs->sb_dirty = true;
}

bool sfs_fs_failed(const struct sfs_fs *fs)
{
	return fs->error;
}

/* ---- the doors to the models (fs_priv.h) ---- */

int sfs_map_block(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t lblk,
		  bool create, sfs_blk_t *pblk_out, bool *new_out)
{
	return sfs_imap(fs, ip)->map(fs, ip, lblk, create, pblk_out, new_out);
}

int sfs_map_free_from(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t from)
{
	return sfs_imap(fs, ip)->truncate(fs, ip, from);
}

int sfs_map_walk(struct sfs_fs *fs, struct sfs_inode *ip,
		 int (*fn)(void *ctx, uint32_t lblk, sfs_blk_t pblk,
			   uint32_t len, bool meta),
		 void *ctx)
{
	return sfs_imap(fs, ip)->walk(fs, ip, fn, ctx);
}

const char *sfs_map_name(struct sfs_fs *fs, const struct sfs_inode *ip)
{
	return sfs_imap(fs, ip)->name;
}

uint64_t sfs_map_max_bytes(struct sfs_fs *fs, const struct sfs_inode *ip)
{
	return sfs_imap(fs, ip)->max_bytes(fs->bs);
}

typedef int (*map_edit_fn)(struct sfs_fs *fs, struct sfs_inode *ip,
			   uint32_t from, uint32_t to);

/* The op of ip's mapping for fallocate mode, or NULL. */
static map_edit_fn map_edit_op(struct sfs_fs *fs, const struct sfs_inode *ip,
			       int mode)
{
	const struct sfs_map_ops *m = sfs_imap(fs, ip);

	switch (mode) {
	case SFS_FALLOC_PUNCH_HOLE:
		return m->punch;
	case SFS_FALLOC_ZERO_RANGE:
		return m->unwrite;
	case SFS_FALLOC_COLLAPSE_RANGE:
		return m->collapse;
	case SFS_FALLOC_INSERT_RANGE:
		return m->insert;
	}
	return NULL;
}

bool sfs_map_can_edit(struct sfs_fs *fs, const struct sfs_inode *ip, int mode)
{
	return map_edit_op(fs, ip, mode) != NULL;
}

int sfs_map_edit(struct sfs_fs *fs, struct sfs_inode *ip, int mode,
		 uint32_t from, uint32_t to)
{
	map_edit_fn op = map_edit_op(fs, ip, mode);

	return op ? op(fs, ip, from, to) : -EOPNOTSUPP;
}

void sfs_map_init_inode(struct sfs_fs *fs, struct sfs_inode *ip)
{
	if (fs->map->init_inode)
		fs->map->init_inode(fs, ip);
}

void sfs_alloc_release_inode(struct sfs_fs *fs, struct sfs_inode *ip)
{
	if (fs->alloc->ops->release_inode)
		fs->alloc->ops->release_inode(fs->alloc, ip);
}
