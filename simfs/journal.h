/*
 * journal.h - the transaction engine between the engine's metadata updates
 * and the buffer cache, and the journal policies (data=none, writeback,
 * ordered, journal, journal_async): tables of verbs (struct sfs_jnl_ops)
 * that decide what joins a transaction, what a commit waits for and what
 * fsync writes.
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
 *
 * Also the engine's door to the jbd2 log below (models/journal/jbd2.h):
 * sfs_jlog_mount_recover, the mount-time replay.
 */
#ifndef SFS_JOURNAL_H
#define SFS_JOURNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "cache.h"
#include "format.h"

struct sfs_bdev;
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
 * What a policy promises after a crash, once the image is recovered
 * (doc/crash.md).  The crash checker (simfs/crash_check.c) holds a run to
 * the promise of its policy (or of another, to test the checker), so it
 * tests promises, never a policy's name.
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

/*
 * The path file data takes from write() to the disk, as ext4_set_aops
 * (Linux fs/ext4/inode.c) chooses a file's address-space operations.
 */
enum sfs_jnl_data_path {
	/* the page cache (ext4_aops, ext4_da_aops): delayed allocation
	 * allowed, whole blocks copied as one run */
	SFS_JNL_DATA_CACHED = 0,
	/* block by block through the log (ext4_journalled_aops): every data
	 * buffer joins the running transaction, no delayed allocation */
	SFS_JNL_DATA_JOURNALLED,
};

struct sfs_inode;

/*
 * A journal policy: a table of verbs over the transaction engine (jnl.c),
 * one file per policy in models/journal/ ending in its table, listed in
 * models/journal/registry.c.  The engine calls the verbs and never asks
 * which policy it runs.  Every verb may be NULL (the default in brackets);
 * the engine's helpers a verb may use are in models/journal/jnl_priv.h.
 * doc/journal.md section 3.1 maps the verbs to jbd2 and ext4.
 */
struct sfs_jnl_ops {
	const char *name; /* data=NAME */
	const char *help; /* one line for --help and simfs-options(7) */
	/* what a crash leaves, the record the crash checker holds the policy
	 * to; promise.journaled exactly when open_log is set */
	struct sfs_jnl_promise promise;
	/* the path of file data (SFS_JNL_DATA_CACHED) */
	enum sfs_jnl_data_path data_path;
	/*
	 * Open the log (sfs_jnl_open_log, or a wrapper that asks the log for
	 * the features the policy writes).  [NULL: the policy keeps no log
	 * (ext2): metadata and data reach the disk by write-back alone, there
	 * are no transactions and no commits.]
	 */
	int (*open_log)(struct sfs_jnl *j, struct sfs_bdev *jdev, char **err);
	/* A file data buffer changed (sfs_jnl_data_dirty).  [dirty in the
	 * cache only: write-back writes it when it chooses] */
	void (*data_dirty)(struct sfs_jnl *j, struct sfs_buf *b);
	/* n file data blocks from blk were copied as one run
	 * (sfs_jnl_data_run; only on SFS_JNL_DATA_CACHED).  [nothing] */
	void (*data_run)(struct sfs_jnl *j, sfs_blk_t blk, uint32_t n);
	/* What must be home before the commit block: called first in a
	 * commit (-ENOSPC leaves the transaction running) and again once the
	 * deferred frees are applied.  [nothing] */
	int (*before_commit)(struct sfs_jnl *j);
	/* sfs_jlog_write_txn flags added to SFS_JLOG_TXN_FLUSH for the log
	 * write of a commit (models/journal/jbd2.h).  [0: jbd2's synchronous
	 * commit, a flush before and after the commit block] */
	unsigned commit_flags;
	/*
	 * fsync of a file whose data blocks written since its last fsync are
	 * runs (struct sfs_run): what fsync writes itself, before the commit
	 * (of a journaled policy) and the flush that every fsync ends with.
	 * [nothing: the commit carries the file's data]
	 */
	int (*fsync_data)(struct sfs_jnl *j, struct sfs_inode *ip,
			  const GArray *runs);
};

/* The policy called name (models/journal/registry.c), NULL if none is. */
const struct sfs_jnl_ops *sfs_jnl_find(const char *name);
/* The i-th policy of the registry, NULL past the last. */
const struct sfs_jnl_ops *sfs_jnl_nth(unsigned i);
/* The policy data=auto picks: ordered on an image with a journal, else
 * none. */
const struct sfs_jnl_ops *sfs_jnl_auto(bool has_journal);
/* Does policy ops keep a log (has an open_log verb)? */
bool sfs_jnl_keeps_log(const struct sfs_jnl_ops *ops);
/* The crash promise of policy ops (&ops->promise); NULL for NULL. */
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

/* Does j keep a log (false for NULL)? */
bool sfs_jnl_journaled(const struct sfs_jnl *j);
/* The path file data takes under j's policy (NULL: the page cache). */
enum sfs_jnl_data_path sfs_jnl_data_path(const struct sfs_jnl *j);
const char *sfs_jnl_name(const struct sfs_jnl *j);

/* ---- the doors (fs_priv.h wraps them) ---- */
/* A metadata buffer changed: it joins the running transaction. */
void sfs_jnl_meta_dirty(struct sfs_jnl *j, struct sfs_buf *b);
/* A file data buffer changed. */
void sfs_jnl_data_dirty(struct sfs_jnl *j, struct sfs_buf *b);
/* n file data blocks from blk were written with sfs_cache_write_run. */
void sfs_jnl_data_run(struct sfs_jnl *j, sfs_blk_t blk, uint32_t n);
/* A file data buffer changed that the log carries, whatever the policy
 * does with data: it joins the running transaction as a metadata block
 * does, counted as logged data.  The data_dirty verb of a policy that
 * journals data, and the door of a file whose data alone is journalled
 * (chattr +j, ext4_inode_journal_mode). */
void sfs_jnl_data_log(struct sfs_jnl *j, struct sfs_buf *b);
/*
 * Blocks [start, start+n) are freed.  Journaled: the bitmap is cleared when
 * the running transaction commits (so they cannot be reused before it is
 * durable), and blocks still live in the log are revoked.  Returns 0, or
 * 1 to tell the caller to clear the bitmap now (not journaled).
 */
int sfs_jnl_free_blocks(struct sfs_jnl *j, sfs_blk_t start, uint32_t n);
/* fsync of ip: what the policy has fsync write of the file itself (its
 * fsync_data verb) before the commit; runs as for that verb. */
int sfs_jnl_fsync_data(struct sfs_jnl *j, struct sfs_inode *ip,
		       const GArray *runs);
/* Blocks waiting for the running transaction's commit to become free. */
uint64_t sfs_jnl_pending_free(const struct sfs_jnl *j);

/* ---- when things happen ---- */
/* Between operations: commit on the interval, checkpoint on low space. */
int sfs_jnl_tick(struct sfs_jnl *j);
/* After an operation: commit a transaction that reached its maximum. */
int sfs_jnl_op_end(struct sfs_jnl *j);
/* Commit the running transaction now (nothing to commit: 0). */
int sfs_jnl_commit(struct sfs_jnl *j, enum sfs_commit_reason why);
/* Commit, then checkpoint every committed transaction: nothing in the
 * log is left to replay (jbd2_journal_flush; a file's chattr -j). */
int sfs_jnl_flush(struct sfs_jnl *j);
/* The running transaction's id (the next commit's tid). */
uint32_t sfs_jnl_running_tid(const struct sfs_jnl *j);
/* When the next timed commit is due (UINT64_MAX: none). */
sfs_ns_t sfs_jnl_next_deadline(const struct sfs_jnl *j);

/* Stats section "journal". */
void sfs_jnl_stats(void *ctx, struct sfs_stats_writer *w);

/* ---- mount-time recovery of the jbd2 log (models/journal/jbd2.c) ---- */
/* What recovery found and did. */
struct sfs_jrecover_info {
	bool was_clean;		/* s_start was 0: nothing to do */
	bool skipped;		/* RECOVER clear: log discarded, not replayed */
	uint32_t start_tid;	/* s_sequence found */
	uint32_t end_tid;	/* first tid without a commit block */
	uint32_t next_tid;	/* s_sequence written: end_tid + 1 */
	uint32_t n_txns;	/* committed transactions found */
	uint32_t n_replayed;	/* blocks written home */
	uint32_t n_revokes;	/* revoke records read */
	uint32_t n_revoke_hits; /* logged copies skipped as revoked */
	uint32_t n_csum_bad;	/* blocks whose jbd2 checksum was wrong */
	uint32_t csum_end_block; /* journal block where a bad descriptor or
				  * commit checksum ended the log; 0 none */
	char csum_note[192];	 /* then: what was wrong there, one line */
	int32_t journal_errno;	 /* s_errno found (0 = none) */
};

/*
 * The whole mount-time sequence on raw devices, before sfs_fs_open: if the
 * filesystem has a journal, open it; with RECOVER set replay it
 * (sfs_jlog_recover), with RECOVER clear but a non-empty log discard it as
 * the kernel does (jbd2_journal_wipe); an s_errno found is moved into the
 * filesystem's s_state (ERROR) as ext4 and e2fsck do; then clear RECOVER in
 * the primary superblock (re-read after replay: the superblock may itself
 * have been logged) and flush.  A filesystem without a journal is left
 * alone (RECOVER set there is -EINVAL).  out may be NULL.  A bad checksum
 * that ended the log early is no failure (the kernel goes on too): see
 * out->csum_end_block and out->csum_note.
 */
int sfs_jlog_mount_recover(struct sfs_bdev *fs_bd, struct sfs_bdev *jdev,
			   struct sfs_jrecover_info *out, char **err);

#endif /* SFS_JOURNAL_H */
