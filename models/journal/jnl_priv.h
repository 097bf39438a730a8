/*
 * jnl_priv.h - what the transaction engine (jnl.c) offers the journal
 * policies' verbs (struct sfs_jnl_ops in simfs/journal.h): the policy
 * files of models/journal/ include it, nothing else does.
 */
#ifndef SFS_JNL_PRIV_H
#define SFS_JNL_PRIV_H

#include "journal.h"

/* The open_log verb of a policy that keeps a jbd2 log: needs the
 * has_journal feature (-EINVAL and a message otherwise), opens the log
 * (jdev: an external journal device, or NULL for inode 8) and starts the
 * first transaction. */
int sfs_jnl_open_log(struct sfs_jnl *j, struct sfs_bdev *jdev, char **err);
/* The log of j (NULL before open_log). */
struct sfs_jlog *sfs_jnl_log(struct sfs_jnl *j);

/* data_dirty / data_run of data=ordered: the block is dirty in the cache
 * and written home before the running transaction's commit block (by
 * sfs_jnl_write_ordered); a block freed first is not written. */
void sfs_jnl_data_order(struct sfs_jnl *j, struct sfs_buf *b);
void sfs_jnl_data_order_run(struct sfs_jnl *j, sfs_blk_t blk, uint32_t n);
/* before_commit of data=ordered: write home, in block order, the data
 * blocks sfs_jnl_data_order took into the running transaction. */
int sfs_jnl_write_ordered(struct sfs_jnl *j);

/* data_dirty of a policy that journals data: sfs_jnl_data_log, declared
 * in journal.h (the write path of a chattr +j file calls it too). */

/* The promise of a policy that logs file data with the metadata
 * (data=journal and its variants): every block as of the last commit,
 * whole, and sizes exact since such data never goes through delayed
 * allocation (doc/crash.md section 1). */
#define SFS_JNL_PROMISE_LOGGED_DATA                                            \
	{                                                                      \
		.journaled = true, .fsync_durable = true, .no_foreign = true,  \
		.data_not_behind = true, .data_exact = true,                   \
		.size_exact = true                                             \
	}

/* For an fsync_data verb: write the blocks of runs (struct sfs_run) and,
 * with inode_block, the block holding ip's inode, in block order. */
int sfs_jnl_write_runs(struct sfs_jnl *j, struct sfs_inode *ip,
		       const GArray *runs, bool inode_block);

#endif /* SFS_JNL_PRIV_H */
