/*
 * writeback.c - data=writeback: metadata journaled, file data written
 * whenever write-back chooses, before or after the commit that maps it
 * (ext3/ext4 data=writeback).  A crash may leave a file pointing at blocks
 * that still hold what was there before (another file's old data).
 * fsync writes the file's data itself, then commits (ext4_sync_file,
 * Linux fs/ext4/fsync.c: file_write_and_wait_range, then the commit).
 */
#include "models/journal/jnl_priv.h"

static int writeback_fsync_data(struct sfs_jnl *j, struct sfs_inode *ip,
				const GArray *runs)
{
	return sfs_jnl_write_runs(j, ip, runs, false);
}

const struct sfs_jnl_ops sfs_jnl_writeback_ops = {
    .name = "writeback",
    .help = "metadata journaled; data written whenever write-back "
	    "chooses (ext3 data=writeback)",
    .promise = {.journaled = true, .fsync_durable = true},
    .open_log = sfs_jnl_open_log,
    .fsync_data = writeback_fsync_data,
};
