/*
 * registry.c - the allocator names `alloc=` accepts, each a pair of a
 * mapping model (how a file records its blocks) and a placement model
 * (which free blocks it gets).  A new allocator is one file in
 * models/alloc/ and one row here.
 */
#include <stddef.h>
#include <string.h>

#include "alloc.h"
#include "mballoc.h"

static const struct sfs_alloc_preset presets[] = {
	{
		.name = "blockmap",
		.help = "ext2: indirect block maps, goal-directed bitmap "
			"search (ext2_new_block)",
		.map = &sfs_blockmap_map_ops,
		.place = &sfs_bitmap_alloc_ops,
	},
	{
		.name = "reservation",
		.help = "ext3: indirect block maps, bitmap search inside "
			"per-file reservation windows (reservation_window=, "
			"reservation_max=)",
		.map = &sfs_blockmap_map_ops,
		.place = &sfs_reservation_alloc_ops,
	},
	{
		.name = "extent",
		.help = "ext4: extent trees for new files (ext4_ext_map_blocks, "
			"ext4_ext_find_goal), goal-directed bitmap search",
		.map = &sfs_extent_map_ops,
		.place = &sfs_bitmap_alloc_ops,
	},
	{
		.name = "mballoc",
		.help = "ext4: extent trees, multi-block allocator (buddy "
			"criteria passes, inode and locality-group "
			"preallocation; ext4_mb_new_blocks)",
		.map = &sfs_extent_map_ops,
		.place = &sfs_mballoc_alloc_ops,
	},
};

const struct sfs_alloc_preset *sfs_alloc_nth(unsigned i)
{
	return i < sizeof(presets) / sizeof(presets[0]) ? &presets[i] : NULL;
}

const struct sfs_alloc_preset *sfs_alloc_find(const char *name)
{
	const struct sfs_alloc_preset *p;

	if (!name)
		return NULL;
	for (unsigned i = 0; (p = sfs_alloc_nth(i)); i++)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

const char *sfs_alloc_names(void)
{
	return "blockmap, reservation, extent, mballoc";
}
