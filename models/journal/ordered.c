/*
 * ordered.c - data=ordered: metadata journaled, and the data blocks
 * dirtied in a transaction are written home before its commit block
 * (jbd2_journal_commit_transaction's journal_submit_data_buffers, Linux
 * fs/jbd2/commit.c), so a crash never exposes a block a file was given
 * before its data reached it.  fsync is a commit: it takes every ordered
 * block of the transaction along, other files' too.
 */
#include "models/journal/jnl_priv.h"

const struct sfs_jnl_ops sfs_jnl_ordered_ops = {
    .name = "ordered",
    .help = "metadata journaled; a transaction's data is written before "
	    "its commit block (ext3 data=ordered)",
    .promise = {.journaled = true,
		.fsync_durable = true,
		.no_foreign = true,
		.data_not_behind = true},
    .open_log = sfs_jnl_open_log,
    .data_dirty = sfs_jnl_data_order,
    .data_run = sfs_jnl_data_order_run,
    .before_commit = sfs_jnl_write_ordered,
};
