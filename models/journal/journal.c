/*
 * journal.c - data=journal: file data goes through the log with the
 * metadata, block by block (ext4_journalled_aops, Linux fs/ext4/inode.c),
 * and is written home again at checkpoint.  No delayed allocation (ext4
 * turns it off for data=journal).  A commit is jbd2's synchronous one: a
 * flush before the commit block and one after.  fsync is a commit.
 */
#include "models/journal/jnl_priv.h"

const struct sfs_jnl_ops sfs_jnl_journal_ops = {
    .name = "journal",
    .help = "metadata and data journaled; data written again at "
	    "checkpoint (ext3 data=journal)",
    .promise = SFS_JNL_PROMISE_LOGGED_DATA,
    .data_path = SFS_JNL_DATA_JOURNALLED,
    .open_log = sfs_jnl_open_log,
    .data_dirty = sfs_jnl_data_log,
};
