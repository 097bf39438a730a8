/*
 * seek.c - lseek(2) SEEK_DATA and SEEK_HOLE from the file's mapping.
 *
 * Verb: sfs_seek_data_hole (fs.h).  The answer is found block by block
 * through the inode's mapping model (sfs_imap: block map or extent tree),
 * so it costs one map lookup per block scanned; no I/O of data blocks.
 *
 * What counts as data, as ext4 reports it (fs/ext4/file.c,
 * ext4_seek_data/ext4_seek_hole over the extent status tree):
 *  1. a mapped, initialised block is data;
 *  2. a block written but not placed yet (delayed allocation) is data;
 *  3. an unwritten extent (fallocate) is a hole: simfs keeps no page cache
 *     in front of it, a write converts the extent at once, so there is no
 *     "dirty page over an unwritten extent" that ext4 would report as data;
 *  4. a hole is a hole, and so is the implicit hole at end of file:
 *     SEEK_HOLE never answers past i_size.
 * An offset at or past i_size gets -ENXIO for both, as lseek(2) says.
 * Granularity is the block: a partly written block is data throughout.
 */
#include <errno.h>
#include <unistd.h>

#include "fs_priv.h"

/* Is logical block lblk of ip data (rules 1-3)?  0 or -EIO. */
static int seek_is_data(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t lblk,
			bool *data_out)
{
	sfs_blk_t pblk = 0;
	bool unwritten = false;
	int rc;

	rc = sfs_map_block(fs, ip, lblk, false, &pblk, &unwritten);
	if (rc == -EFBIG) { /* beyond the map's reach: nothing there */
		*data_out = false;
		return 0;
	}
	if (rc)
		return rc;
	if (pblk == 0 && ip->da && sfs_da_lookup(ip, lblk))
		pblk = 1; /* delayed: the data is in memory */
	*data_out = pblk != 0;
	return 0;
}

int sfs_seek_data_hole(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off,
		       int whence, uint64_t *off_out)
{
	struct sfs_inode *ip;
	uint64_t size;
	int rc;

	if (!fs || !off_out || (whence != SEEK_DATA && whence != SEEK_HOLE))
		return -EINVAL;
	sfs_op_begin(fs, SFS_OP_LSEEK);
	rc = sfs_iget(fs, ino, &ip);
	if (rc)
		goto out_unlock;
	size = sfs_i_size(ip);
	if (off >= size) {
		rc = -ENXIO;
		goto out_put;
	}
	if (!sfs_i_isreg(ip)) {
		/* no mapping to ask: all data up to i_size */
		*off_out = whence == SEEK_DATA ? off : size;
		goto out_put;
	}
	bool want_data = whence == SEEK_DATA;
	uint64_t last = (size - 1) >> fs->bs_log;
	for (uint64_t lblk = off >> fs->bs_log; lblk <= last; lblk++) {
		bool data;

		rc = seek_is_data(fs, ip, (uint32_t)lblk, &data);
		if (rc)
			goto out_put;
		if (data == want_data) {
			uint64_t at = lblk << fs->bs_log;
			*off_out = at > off ? at : off;
			goto out_put;
		}
	}
	if (want_data)
		rc = -ENXIO; /* only holes up to the end */
	else
		*off_out = size;
out_put:
	sfs_iput(fs, ip);
out_unlock:
	sfs_op_end(fs);
	return rc;
}
