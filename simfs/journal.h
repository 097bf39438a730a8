/*
 * journal.h - the transaction engine between the engine's metadata updates
 * and the buffer cache, and the journal policies (data=none, writeback,
 * ordered, journal) that decide what a commit waits for.
 *
 * Every metadata buffer the engine changes joins the running transaction
 * through one door, sfs_meta_dirty (fs_priv.h); file data through
 * sfs_data_dirty.  A transaction's buffers are pinned in the cache (never
 * written home) until it commits; then they are ordinary dirty buffers
 * whose write-back checkpoints the transaction.
 *
 *   running --sfs_jnl_commit--> committed --write-back of all its blocks-->
 *   checkpointed (the log tail moves past it)
 *
 * Commits happen only between engine operations (the engine lock is held
 * by whoever commits), so a transaction always holds whole operations.
 * Triggers, each counted: the commit interval (from the transaction's
 * first change), the transaction reaching its maximum size, low log space,
 * fsync, sync and unmount.  doc/journal.md explains the model.
 */
#ifndef SFS_JOURNAL_H
#define SFS_JOURNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "format.h"

struct sfs_fs;
struct sfs_jnl;
struct sfs_txn;
struct sfs_stats_writer;

enum sfs_commit_reason {
	SFS_COMMIT_INTERVAL = 0, /* commit= seconds since the first change */
	SFS_COMMIT_FULL,	 /* transaction reached its maximum size */
	SFS_COMMIT_LOGSPACE,	 /* not enough log space for the next one */
	SFS_COMMIT_FSYNC,
	SFS_COMMIT_SYNC,
	SFS_COMMIT_UNMOUNT,
	SFS_COMMIT_ENOSPC, /* blocks freed in the transaction needed */
	SFS_COMMIT_NREASONS
};

/*
 * A journal policy.  `journaled` says whether metadata goes through the
 * log at all (false: ext2, data=none).  The members may be NULL.
 */
struct sfs_jnl_ops {
	const char *name;
	const char *help;
	bool journaled;
	bool log_data;	 /* file data is logged too (data=journal) */
	bool order_data; /* data dirtied in a transaction precedes its commit */
};

extern const struct sfs_jnl_ops sfs_jnl_none_ops;
extern const struct sfs_jnl_ops sfs_jnl_writeback_ops;
extern const struct sfs_jnl_ops sfs_jnl_ordered_ops;
extern const struct sfs_jnl_ops sfs_jnl_journal_ops;

/* The policy called name ("none", "writeback", "ordered", "journal"). */
const struct sfs_jnl_ops *sfs_jnl_find(const char *name);
const struct sfs_jnl_ops *sfs_jnl_nth(unsigned i);
/* The policy data=auto picks: ordered on an image with a journal, else
 * none. */
const struct sfs_jnl_ops *sfs_jnl_auto(bool has_journal);

/*
 * What a policy promises after a crash, once the image is recovered
 * (models/journal/promise.c; doc/crash.md).  The crash checker holds a
 * run to the promise of its policy (or of another, to test the checker).
 */
struct sfs_jnl_promise {
	bool journaled;	      /* metadata recovered: e2fsck -fn clean, same
				 tree as e2fsck's replay, a prefix state */
	bool fsync_durable;   /* blocks fsync'd before the cut still hold at
				 least the fsync'd version */
	bool no_foreign;      /* no block of another file or garbage inside
				 a file, no zeros where the state has data */
	bool data_not_behind; /* no block older than the recovered state's */
	bool data_exact;      /* every block = the recovered state's, whole
				 (no torn blocks) */
	bool size_exact;      /* a file's size is its state's even under
				 delalloc= (else it may trail: i_disksize) */
};
/* The crash promise of policy ops; NULL for NULL or a policy without one. */
const struct sfs_jnl_promise *sfs_jnl_promise(const struct sfs_jnl_ops *ops);

/* Knobs (config.h carries them; defaults as jbd2). */
struct sfs_jnl_params {
	uint64_t commit_interval_ns; /* commit=, default 5 s */
	uint32_t max_txn_blocks;     /* 0: a quarter of the log */
	uint32_t reserve_blocks;     /* 0: jbd2's J/4 (+32, x8/7) rule */
};

/*
 * Start the journal of fs with policy ops.  Journaled policies need the
 * has_journal feature (-EINVAL and a message otherwise) and open the log
 * (jdev: an external journal device, or NULL for inode 8).  Called by
 * sfs_fs_open after the filesystem is loaded.
 */
int sfs_jnl_open(struct sfs_fs *fs, const struct sfs_jnl_ops *ops,
		 const struct sfs_jnl_params *p, struct sfs_bdev *jdev,
		 struct sfs_jnl **out, char **err);
/* Commit, checkpoint everything, mark the log clean; then free. */
int sfs_jnl_close(struct sfs_jnl *j);
/* Change the commit interval and maximum transaction of a running
 * journal (0 keeps jbd2's defaults: 5 s, a quarter of the log). */
void sfs_jnl_set_params(struct sfs_jnl *j, const struct sfs_jnl_params *p);
/* Free without writing (error paths). */
void sfs_jnl_free(struct sfs_jnl *j);

bool sfs_jnl_journaled(const struct sfs_jnl *j);
/* Does the policy log file data (data=journal)? */
bool sfs_jnl_logs_data(const struct sfs_jnl *j);
const char *sfs_jnl_name(const struct sfs_jnl *j);

/* ---- the doors (fs_priv.h wraps them) ---- */
/* A metadata buffer changed: it joins the running transaction. */
void sfs_jnl_meta_dirty(struct sfs_jnl *j, struct sfs_buf *b);
/* A file data buffer changed. */
void sfs_jnl_data_dirty(struct sfs_jnl *j, struct sfs_buf *b);
/* n file data blocks from blk were written with sfs_cache_write_run. */
void sfs_jnl_data_run(struct sfs_jnl *j, sfs_blk_t blk, uint32_t n);
/*
 * Blocks [start, start+n) are freed.  Journaled: the bitmap is cleared when
 * the running transaction commits (so they cannot be reused before it is
 * durable), and blocks still live in the log are revoked.  Returns 0, or
 * 1 to tell the caller to clear the bitmap now (not journaled).
 */
int sfs_jnl_free_blocks(struct sfs_jnl *j, sfs_blk_t start, uint32_t n);
/* Blocks waiting for the running transaction's commit to become free. */
uint64_t sfs_jnl_pending_free(const struct sfs_jnl *j);

/* ---- when things happen ---- */
/* Between operations: commit on the interval, checkpoint on low space. */
int sfs_jnl_tick(struct sfs_jnl *j);
/* After an operation: commit a transaction that reached its maximum. */
int sfs_jnl_op_end(struct sfs_jnl *j);
/* Commit the running transaction now (nothing to commit: 0). */
int sfs_jnl_commit(struct sfs_jnl *j, enum sfs_commit_reason why);
/* Write home every committed block and move the log tail to the head. */
int sfs_jnl_checkpoint_all(struct sfs_jnl *j);
/* The running transaction's id (the next commit's tid). */
uint32_t sfs_jnl_running_tid(const struct sfs_jnl *j);
/* When the next timed commit is due (UINT64_MAX: none). */
sfs_ns_t sfs_jnl_next_deadline(const struct sfs_jnl *j);

/* Stats section "journal". */
void sfs_jnl_stats(void *ctx, struct sfs_stats_writer *w);

#endif /* SFS_JOURNAL_H */
