/*
 * cpucount.c - sfs_fs_cpu_counts: the engine's work since open, in the
 * units of the CPU model (cpumodel.h, doc/cpu-model.md).
 *
 * Every count is read from a counter some layer keeps anyway; only the
 * ones that none kept live in fs->cpu_ctr (fs_priv.h), incremented at
 * their sites:
 *
 *   calls         fs->ops[], every type but lookup        (sfs_op_begin)
 *   path_steps    fs->ops[SFS_OP_LOOKUP]                  (sfs_op_begin)
 *   bytes_copied  fs->bytes_read + fs->bytes_written      (inode.c)
 *   blocks_mapped cpu_ctr: every map() call               (blockmap, extent)
 *   blocks_alloc  cpu_ctr: blocks a placement model hands out
 *                 (bitmap, reservation, mballoc)
 *   bitmap_words  fs->alloc->words_scanned (bitmap bytes) (models/alloc)
 *   extent_steps  cpu_ctr: extent nodes searched, mballoc extents measured
 *   jnl_blocks    journal-category bytes written / block size, on the
 *                 device and the external journal device  (blockdev door)
 *   csum_bytes    cpu_ctr: metadata bytes crc32c'd (csum.c; the
 *                 superblock's 1 KiB is not counted)
 *   dir_entries   cpu_ctr: directory records examined     (dir.c)
 *   io_reqs       requests of every op at the door of fs->bd and fs->jdev
 *
 * All counts only grow while the filesystem is open.
 */
#include <string.h>

#include "cpumodel.h"
#include "fs_priv.h"

/* Requests and journal blocks written at the door of bd. */
static void cpucount_dev(struct sfs_bdev *bd, bool all_journal, uint32_t bs,
			 struct sfs_cpu_counts *out)
{
	struct sfs_bdev_counters c;
	uint64_t jbytes;

	if (!bd)
		return;
	sfs_bdev_counters(bd, &c);
	out->io_reqs +=
	    c.reqs[SFS_IO_READ] + c.reqs[SFS_IO_WRITE] + c.reqs[SFS_IO_FLUSH];
	jbytes = all_journal ? c.bytes[SFS_IO_WRITE]
			     : c.cat_bytes[SFS_IO_WRITE][SFS_IO_JOURNAL];
	out->jnl_blocks += bs ? jbytes / bs : 0;
}

void sfs_fs_cpu_counts(struct sfs_fs *fs, struct sfs_cpu_counts *out)
{
	memset(out, 0, sizeof(*out));
	if (!fs)
		return;
	sfs_lock(fs);
	for (int i = 0; i < SFS_OP_COUNT; i++)
		if (i != SFS_OP_LOOKUP)
			out->calls += fs->ops[i];
	out->path_steps = fs->ops[SFS_OP_LOOKUP];
	out->bytes_copied = fs->bytes_read + fs->bytes_written;
	out->blocks_mapped = fs->cpu_ctr.blocks_mapped;
	out->blocks_alloc = fs->cpu_ctr.blocks_alloc;
	out->bitmap_words = fs->alloc ? fs->alloc->words_scanned : 0;
	out->extent_steps = fs->cpu_ctr.extent_steps;
	out->csum_bytes = fs->cpu_ctr.csum_bytes;
	out->dir_entries = fs->cpu_ctr.dir_entries;
	cpucount_dev(fs->bd, false, fs->bs, out);
	cpucount_dev(fs->jdev, true, fs->bs, out);
	sfs_unlock(fs);
}
