/*
 * none.c - data=none: no journal, as ext2.  Metadata and data reach the
 * disk by write-back alone; after a crash e2fsck's repair is all there is.
 * fsync writes the file's data and mapping blocks and its inode block, then
 * flushes (ext2_fsync -> generic_file_fsync, Linux fs/ext2/file.c).
 */
#include "models/journal/jnl_priv.h"

static int none_fsync_data(struct sfs_jnl *j, struct sfs_inode *ip,
			   const GArray *runs)
{
	return sfs_jnl_write_runs(j, ip, runs, true);
}

const struct sfs_jnl_ops sfs_jnl_none_ops = {
    .name = "none",
    .help = "no journal: metadata reaches the disk by write-back alone "
	    "(ext2)",
    .promise = {0},
    .fsync_data = none_fsync_data,
};
