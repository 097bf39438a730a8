/*
 * jnl.c - the transaction engine: one running transaction, committed
 * transactions waiting for checkpoint, and the circular log of jbd2.c.
 *
 * Invariants:
 *  1. A buffer in the running transaction is pinned in the cache: its new
 *     contents reach the home location only after the transaction that
 *     holds them has committed.
 *  2. Blocks freed in the running transaction stay set in the bitmap until
 *     that transaction commits, so nothing reuses them before the free is
 *     durable; the bitmap change is part of the same transaction.
 *  3. owner[blk] is the newest committed transaction whose log copy of blk
 *     is not yet known to be home; that transaction's `pending` holds blk.
 *     A later commit of blk moves ownership (the old copy is superseded);
 *     the write-back of blk (sfs_cache written callback) clears it.
 *  4. The log tail is the start of the oldest committed transaction with
 *     pending blocks; the journal superblock's s_start never points past a
 *     transaction that still needs replay (it is written only after the
 *     home writes it forgets were flushed).
 *  5. A block that is freed while a copy of it may still be replayed from
 *     the log (logged[blk] newer than the tail) is revoked in the running
 *     transaction.
 *
 * The engine never asks which policy it runs: it calls the verbs of the
 * policy's table (struct sfs_jnl_ops, journal.h; one file per policy in
 * this directory) and offers them the helpers of jnl_priv.h.  A policy
 * without a log (open_log NULL) leaves j->log NULL, and every door then
 * does what write-back alone does.
 *
 * Commit (sfs_jnl_commit), in order: what the policy has home before the
 * commit block (its before_commit verb: data=ordered's data; a full host
 * disk under the image, -ENOSPC, stops the commit here with nothing
 * changed, the transaction still running, so it commits once there is
 * room); deferred frees into the bitmaps; the group descriptors and
 * superblock into their buffers; room made in the log; the journal
 * superblock rewritten if the tail moved; revokes + descriptors + logged
 * blocks + commit block written, with a flush before and after the commit
 * block, or only after it when the policy's commit_flags ask for jbd2's
 * asynchronous commit.  The log itself is reserved on the host at open
 * (sfs_jlog_reserve), so its writes do not meet a full host disk.
 */
#include <errno.h>
#include <string.h>

#include "model.h"
#include "journal.h"
#include "models/journal/jbd2.h"
#include "models/journal/jnl_priv.h"
#include "stats.h"
#include "clock.h"

#define JNL_RESERVED 32 /* jbd2 keeps 32 log blocks in reserve */

struct jfree {
	sfs_blk_t start;
	uint32_t n;
};

struct sfs_txn {
	uint32_t tid;
	sfs_ns_t start_ns;   /* first change */
	bool started;        /* anything joined */
	GHashTable *meta;    /* blk -> struct sfs_buf * (referenced, pinned) */
	GHashTable *data;    /* ordered: data blocks dirtied (a set) */
	GArray *frees;       /* struct jfree, applied at commit */
	GArray *revokes;     /* uint32_t block numbers */
	uint64_t nfree;      /* blocks in frees */
};

struct ctxn {               /* committed, not yet checkpointed */
	uint32_t tid;
	uint32_t log_start;  /* first log block */
	uint32_t log_len;    /* log blocks it occupies */
	GHashTable *pending; /* blocks not yet home (a set) */
};

struct sfs_jnl {
	const struct sfs_jnl_ops *ops;
	struct sfs_fs *fs;
	struct sfs_jlog *log;   /* NULL when not journaled */
	struct sfs_jnl_params p;
	struct sfs_txn *run;
	GQueue live;            /* struct ctxn *, oldest first */
	GHashTable *owner;      /* blk -> struct ctxn * (invariant 3) */
	GHashTable *logged;     /* blk -> tid of its newest log copy */
	uint32_t head;          /* next free log block */
	uint32_t used;          /* log blocks held by live transactions */
	uint32_t capacity;      /* usable log blocks */
	uint32_t sb_start;      /* s_start as last written (0 = clean) */
	uint32_t sb_seq;        /* s_sequence as last written */
	uint32_t tail_tid;      /* oldest tid that may still be replayed */
	bool recover_set;       /* RECOVER is on in the fs superblock */

	/* stats */
	uint64_t commits[SFS_COMMIT_NREASONS];
	struct sfs_hist txn_blocks;     /* logged blocks per transaction */
	uint64_t checkpoints;           /* forced checkpoint passes */
	uint64_t logfull_stalls;        /* operations that waited for them */
	uint64_t desc_blocks, meta_blocks, data_blocks, revoke_records;
	uint64_t commit_blocks, jsb_writes, log_bytes;
	uint64_t ordered_blocks;        /* data written before commits */
	uint64_t revoked;               /* blocks revoked */
};

static const char *const reason_names[SFS_COMMIT_NREASONS] = {
	"interval", "full", "logspace", "fsync", "sync", "unmount", "enospc",
};

/* ---- transactions ---- */

static struct sfs_txn *txn_new(uint32_t tid)
{
	struct sfs_txn *t = g_new0(struct sfs_txn, 1);

	t->tid = tid;
	t->meta = g_hash_table_new(g_direct_hash, g_direct_equal);
	t->data = g_hash_table_new(g_direct_hash, g_direct_equal);
	t->frees = g_array_new(FALSE, FALSE, sizeof(struct jfree));
	t->revokes = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	return t;
}

static void txn_release_bufs(struct sfs_jnl *j, struct sfs_txn *t)
{
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, t->meta);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct sfs_buf *b = v;
		sfs_cache_unpin(sfs_fs_cache(j->fs), b);
		sfs_cache_put(sfs_fs_cache(j->fs), b);
	}
	g_hash_table_remove_all(t->meta);
}

static void txn_free(struct sfs_jnl *j, struct sfs_txn *t)
{
	if (!t)
		return;
	txn_release_bufs(j, t);
	g_hash_table_destroy(t->meta);
	g_hash_table_destroy(t->data);
	g_array_free(t->frees, TRUE);
	g_array_free(t->revokes, TRUE);
	g_free(t);
}

static void txn_touch(struct sfs_jnl *j)
{
	if (!j->run->started) {
		j->run->started = true;
		j->run->start_ns = sfs_clock_now_ns(sfs_fs_clock(j->fs));
	}
}

static bool txn_empty(const struct sfs_txn *t)
{
	return g_hash_table_size(t->meta) == 0 && t->frees->len == 0 &&
	       t->revokes->len == 0 && g_hash_table_size(t->data) == 0;
}

static void ctxn_free(struct ctxn *c)
{
	g_hash_table_destroy(c->pending);
	g_free(c);
}

/* ---- what the engine tells of itself ---- */

bool sfs_jnl_journaled(const struct sfs_jnl *j)
{
	return j && j->log;
}

enum sfs_jnl_data_path sfs_jnl_data_path(const struct sfs_jnl *j)
{
	return j ? j->ops->data_path : SFS_JNL_DATA_CACHED;
}

const char *sfs_jnl_name(const struct sfs_jnl *j)
{
	return j->ops->name;
}

struct sfs_jlog *sfs_jnl_log(struct sfs_jnl *j)
{
	return j->log;
}

/* ---- the doors ---- */

void sfs_jnl_meta_dirty(struct sfs_jnl *j, struct sfs_buf *b)
{
	struct sfs_cache *c = sfs_fs_cache(j->fs);

	sfs_cache_dirty(c, b);
	if (!j->log)
		return;
	txn_touch(j);
	if (g_hash_table_contains(j->run->meta, GUINT_TO_POINTER(b->blk)))
		return;
	/* hold a reference and a pin until the commit */
	struct sfs_buf *ref;
	if (sfs_cache_get(c, b->blk, SFS_IO_OTHER, &ref) != 0)
		return; /* cached: cannot fail */
	assert(ref == b);
	sfs_cache_pin(c, b);
	g_hash_table_insert(j->run->meta, GUINT_TO_POINTER(b->blk), b);
}

void sfs_jnl_data_dirty(struct sfs_jnl *j, struct sfs_buf *b)
{
	if (j->ops->data_dirty)
		j->ops->data_dirty(j, b);
	else
		sfs_cache_dirty(sfs_fs_cache(j->fs), b);
}

void sfs_jnl_data_run(struct sfs_jnl *j, sfs_blk_t blk, uint32_t n)
{
	if (j->ops->data_run && n)
		j->ops->data_run(j, blk, n);
}

/* ---- the engine's part of the policies' verbs (jnl_priv.h) ---- */

void sfs_jnl_data_log(struct sfs_jnl *j, struct sfs_buf *b)
{
	sfs_jnl_meta_dirty(j, b);
	g_hash_table_add(j->run->data, GUINT_TO_POINTER(b->blk));
}

void sfs_jnl_data_order(struct sfs_jnl *j, struct sfs_buf *b)
{
	sfs_cache_dirty(sfs_fs_cache(j->fs), b);
	txn_touch(j);
	g_hash_table_add(j->run->data, GUINT_TO_POINTER(b->blk));
}

void sfs_jnl_data_order_run(struct sfs_jnl *j, sfs_blk_t blk, uint32_t n)
{
	txn_touch(j);
	for (uint32_t i = 0; i < n; i++)
		g_hash_table_add(j->run->data, GUINT_TO_POINTER(blk + i));
}

int sfs_jnl_write_runs(struct sfs_jnl *j, struct sfs_inode *ip,
		       const GArray *runs, bool inode_block)
{
	struct sfs_fs *fs = j->fs;
	uint64_t n = 0;
	int rc;

	for (guint i = 0; i < runs->len; i++)
		n += g_array_index(runs, struct sfs_run, i).n;
	sfs_blk_t *list = g_try_new(sfs_blk_t, n + 1);
	if (!list)
		return -ENOMEM;
	n = 0;
	for (guint i = 0; i < runs->len; i++) {
		const struct sfs_run *r =
		    &g_array_index(runs, struct sfs_run, i);
		for (uint32_t k = 0; k < r->n; k++)
			list[n++] = r->start + k;
	}
	if (inode_block)
		list[n++] = sfs_inode_block(fs, ip->ino);
	rc = sfs_cache_write_blocks(sfs_fs_cache(fs), list, n);
	g_free(list);
	return rc;
}

int sfs_jnl_fsync_data(struct sfs_jnl *j, struct sfs_inode *ip,
		       const GArray *runs)
{
	return j->ops->fsync_data ? j->ops->fsync_data(j, ip, runs) : 0;
}

int sfs_jnl_free_blocks(struct sfs_jnl *j, sfs_blk_t start, uint32_t n)
{
	struct sfs_txn *t = j->run;

	if (!j->log)
		return 1;
	txn_touch(j);
	for (uint32_t i = 0; i < n; i++) {
		gpointer key = GUINT_TO_POINTER(start + i);
		gpointer v;

		/* ordered data of a freed block need not be written */
		g_hash_table_remove(t->data, key);
		/*
		 * A block this transaction changed (pinned) or whose committed
		 * copy is not yet home keeps its buffer until the free is
		 * durable (invariant 3): until then a crash recovers the block
		 * as in use, with the committed contents.  Anything else dies
		 * now.
		 */
		if (!g_hash_table_contains(t->meta, key) &&
		    !g_hash_table_contains(j->owner, key))
			sfs_cache_discard(sfs_fs_cache(j->fs), start + i, 1);
		/* a copy that may still be replayed must be revoked */
		if (g_hash_table_lookup_extended(j->logged, key, NULL, &v)) {
			uint32_t blk = start + i;
			g_array_append_val(t->revokes, blk);
			g_hash_table_remove(j->logged, key);
			j->revoked++;
		}
	}
	struct jfree f = {start, n};
	g_array_append_val(t->frees, f);
	t->nfree += n;
	return 0;
}

/* After the commit that made the frees of t durable: their buffers and
 * their committed copies' pending write-backs are dropped. */
static void frees_done(struct sfs_jnl *j, GArray *frees)
{
	for (guint i = 0; i < frees->len; i++) {
		struct jfree *f = &g_array_index(frees, struct jfree, i);
		for (uint32_t k = 0; k < f->n; k++) {
			gpointer key = GUINT_TO_POINTER(f->start + k);
			struct ctxn *owner = g_hash_table_lookup(j->owner, key);
			if (owner) {
				g_hash_table_remove(owner->pending, key);
				g_hash_table_remove(j->owner, key);
			}
		}
		sfs_cache_discard(sfs_fs_cache(j->fs), f->start, f->n);
	}
}

uint64_t sfs_jnl_pending_free(const struct sfs_jnl *j)
{
	return j->log ? j->run->nfree : 0;
}

static int cmp_blk(const void *a, const void *b)
{
	sfs_blk_t x = *(const sfs_blk_t *)a, y = *(const sfs_blk_t *)b;

	return x < y ? -1 : x > y;
}

/* ---- log space ---- */

static uint32_t log_free(const struct sfs_jnl *j)
{
	return j->capacity - j->used;
}

/* jbd2's room rule (start_this_handle, Linux fs/jbd2/transaction.c): a transaction may start only if
 * (free - 32) * 7/8 >= the largest transaction. */
static bool log_has_room(const struct sfs_jnl *j, uint32_t need)
{
	uint32_t f = log_free(j);

	if (f <= JNL_RESERVED)
		return false;
	return (uint64_t)(f - JNL_RESERVED) * 7 / 8 >= need;
}

/* Drop checkpointed transactions from the front; recompute the tail. */
static void advance_tail(struct sfs_jnl *j)
{
	struct ctxn *c;

	while ((c = g_queue_peek_head(&j->live)) &&
	       g_hash_table_size(c->pending) == 0) {
		g_queue_pop_head(&j->live);
		j->used -= c->log_len;
		ctxn_free(c);
	}
	c = g_queue_peek_head(&j->live);
	j->tail_tid = c ? c->tid : j->run->tid;
}

/* The written-back callback of the cache: blk is home. */
static void jnl_written(void *ctx, sfs_blk_t blk)
{
	struct sfs_jnl *j = ctx;
	gpointer key = GUINT_TO_POINTER(blk);
	struct ctxn *c = g_hash_table_lookup(j->owner, key);

	if (!c)
		return;
	g_hash_table_remove(c->pending, key);
	g_hash_table_remove(j->owner, key);
}

/* Write the journal superblock with the current tail (0 when empty). */
static int write_jsb(struct sfs_jnl *j)
{
	struct sfs_jlog_super s;
	struct ctxn *c = g_queue_peek_head(&j->live);
	int rc;

	sfs_jlog_get_super(j->log, &s);
	if (c) {
		s.start = c->log_start;
		s.sequence = c->tid;
	} else {
		s.start = 0;
		s.sequence = j->run->tid;
	}
	if (s.start == j->sb_start && s.sequence == j->sb_seq)
		return 0;
	if (j->run->revokes->len || j->revoked)
		s.feature_incompat |= SFS_JBD2_INCOMPAT_REVOKE;
	rc = sfs_jlog_write_super(j->log, &s);
	if (rc)
		return rc;
	j->sb_start = s.start;
	j->sb_seq = s.sequence;
	j->jsb_writes++;
	j->log_bytes += sfs_jlog_block_size(j->log);
	return 0;
}

/*
 * Write home the blocks of the oldest committed transactions until the
 * log has room for `need` blocks (or everything, need = UINT32_MAX), then
 * make the tail durable.
 */
static int checkpoint(struct sfs_jnl *j, uint32_t need)
{
	struct sfs_fs *fs = j->fs;
	int rc;

	advance_tail(j);
	while (!g_queue_is_empty(&j->live) &&
	       (need == UINT32_MAX || !log_has_room(j, need))) {
		struct ctxn *c = g_queue_peek_head(&j->live);
		guint n = g_hash_table_size(c->pending), i = 0;
		sfs_blk_t *list = g_new(sfs_blk_t, n ? n : 1);
		GHashTableIter pit;
		gpointer pk;

		g_hash_table_iter_init(&pit, c->pending);
		while (g_hash_table_iter_next(&pit, &pk, NULL))
			list[i++] = GPOINTER_TO_UINT(pk);
		qsort(list, n, sizeof(*list), cmp_blk);
		rc = sfs_cache_write_blocks(sfs_fs_cache(fs), list, n);
		g_free(list);
		if (rc)
			return rc;
		/* anything still pending was not dirty: already home */
		GHashTableIter it;
		gpointer k;
		g_hash_table_iter_init(&it, c->pending);
		while (g_hash_table_iter_next(&it, &k, NULL)) {
			g_hash_table_remove(j->owner, k);
			g_hash_table_iter_remove(&it);
		}
		j->checkpoints++;
		advance_tail(j);
	}
	rc = sfs_bdev_flush(sfs_fs_bdev(fs));
	if (rc)
		return rc;
	return write_jsb(j);
}

/* ---- commit ---- */

int sfs_jnl_write_ordered(struct sfs_jnl *j)
{
	struct sfs_txn *t = j->run;
	guint n = g_hash_table_size(t->data);
	sfs_blk_t *list;
	GHashTableIter it;
	gpointer k;
	guint i = 0;
	int rc;

	if (n == 0)
		return 0;
	list = g_new(sfs_blk_t, n);
	g_hash_table_iter_init(&it, t->data);
	while (g_hash_table_iter_next(&it, &k, NULL))
		/* a block the log carries (a chattr +j file's data,
		 * sfs_jnl_data_log) is not ordered data */
		if (!g_hash_table_contains(t->meta, k))
			list[i++] = GPOINTER_TO_UINT(k);
	n = i;
	qsort(list, n, sizeof(*list), cmp_blk);
	uint64_t before = 0;
	for (i = 0; i < n; i++)
		before += sfs_cache_is_dirty(sfs_fs_cache(j->fs), list[i]);
	rc = sfs_cache_write_blocks(sfs_fs_cache(j->fs), list, n);
	if (rc == 0)
		j->ordered_blocks += before;
	g_free(list);
	return rc;
}

uint32_t sfs_jnl_running_tid(const struct sfs_jnl *j)
{
	return j && j->run ? j->run->tid : 0;
}

int sfs_jnl_commit(struct sfs_jnl *j, enum sfs_commit_reason why)
{
	struct sfs_fs *fs = j->fs;
	struct sfs_txn *t = j->run;
	struct sfs_jtxn_blocks jb = {0};
	uint32_t bs = sfs_geom(fs)->bs, next, used;
	GHashTable *freed = NULL; /* blk -> pinned buffer, freed here */
	GArray *frees = NULL;
	int rc;

	if (!j->log || txn_empty(t))
		return 0;
	sfs_fs_commit_started(fs);

	/* 0. what the policy has home before the commit block (ordered
	 * data), before anything of the commit happens: a full host disk
	 * under the image (-ENOSPC) then leaves the transaction as it was,
	 * running, to commit once there is room */
	if (j->ops->before_commit) {
		rc = j->ops->before_commit(j);
		if (rc == -ENOSPC)
			return rc;
		if (rc) {
			sfs_fs_error(fs, rc, "journal commit of transaction "
				     "%u failed", t->tid);
			return rc;
		}
	}

	/* 1. deferred frees, 2. counts: both join this transaction.  A freed
	 * block this transaction had changed is not logged (it is revoked);
	 * it stays pinned until the commit is durable. */
	freed = g_hash_table_new(g_direct_hash, g_direct_equal);
	frees = t->frees;
	t->frees = g_array_new(FALSE, FALSE, sizeof(struct jfree));
	t->nfree = 0;
	for (guint i = 0; i < frees->len; i++) {
		struct jfree *f = &g_array_index(frees, struct jfree, i);
		rc = sfs_blocks_release(fs, f->start, f->n);
		if (rc)
			goto out_error;
		for (uint32_t k = 0; k < f->n; k++) {
			gpointer key = GUINT_TO_POINTER(f->start + k);
			struct sfs_buf *b = g_hash_table_lookup(t->meta, key);
			if (b) {
				g_hash_table_steal(t->meta, key);
				g_hash_table_insert(freed, key, b);
			}
		}
	}
	rc = sfs_fs_flush_super_gdt(fs);
	if (rc)
		goto out_error;

	/* 3. the same for what the frees' own work dirtied (none as a
	 * rule: step 0 wrote the transaction's) */
	if (j->ops->before_commit) {
		rc = j->ops->before_commit(j);
		if (rc)
			goto out_error;
	}

	/* 4. room in the log */
	guint nmeta = g_hash_table_size(t->meta);
	uint32_t need = sfs_jlog_txn_blocks(j->log, nmeta, t->revokes->len);
	if (need + JNL_RESERVED > j->capacity) {
		sfs_fs_error(fs, -EIO, "transaction of %u log blocks does not "
			     "fit a log of %u", need, j->capacity);
		rc = -EIO;
		goto out_error;
	}
	if (log_free(j) < need + JNL_RESERVED) {
		rc = checkpoint(j, need);
		if (rc)
			goto out_error;
		while (log_free(j) < need + JNL_RESERVED &&
		       !g_queue_is_empty(&j->live)) {
			rc = checkpoint(j, UINT32_MAX);
			if (rc)
				goto out_error;
		}
	}
	/* 5. a moved tail is made durable first (its home writes flushed) */
	advance_tail(j);
	if (!g_queue_is_empty(&j->live) || j->sb_start) {
		struct ctxn *c = g_queue_peek_head(&j->live);
		uint32_t want = c ? c->log_start : 0;
		if (want != j->sb_start) {
			rc = sfs_bdev_flush(sfs_fs_bdev(fs));
			if (!rc)
				rc = write_jsb(j);
			if (rc)
				goto out_error;
		}
	}
	if (j->sb_start == 0) {
		/* the log was empty: it starts at this transaction */
		struct sfs_jlog_super s;
		sfs_jlog_get_super(j->log, &s);
		s.start = j->head;
		s.sequence = t->tid;
		if (t->revokes->len)
			s.feature_incompat |= SFS_JBD2_INCOMPAT_REVOKE;
		rc = sfs_jlog_write_super(j->log, &s);
		if (rc)
			goto out_error;
		j->sb_start = s.start;
		j->sb_seq = s.sequence;
		j->jsb_writes++;
		j->log_bytes += bs;
	} else if (t->revokes->len) {
		struct sfs_jlog_super s;
		sfs_jlog_get_super(j->log, &s);
		if (!(s.feature_incompat & SFS_JBD2_INCOMPAT_REVOKE)) {
			s.feature_incompat |= SFS_JBD2_INCOMPAT_REVOKE;
			rc = sfs_jlog_write_super(j->log, &s);
			if (rc)
				goto out_error;
		}
	}

	/* 6. the log blocks, in home-block order */
	sfs_blk_t *list = g_new(sfs_blk_t, nmeta ? nmeta : 1);
	GHashTableIter it;
	gpointer k, v;
	guint i = 0;
	g_hash_table_iter_init(&it, t->meta);
	while (g_hash_table_iter_next(&it, &k, NULL))
		list[i++] = GPOINTER_TO_UINT(k);
	qsort(list, nmeta, sizeof(*list), cmp_blk);
	struct sfs_jtxn_block *vec =
		g_new0(struct sfs_jtxn_block, nmeta ? nmeta : 1);
	for (i = 0; i < nmeta; i++) {
		struct sfs_buf *b = g_hash_table_lookup(
			t->meta, GUINT_TO_POINTER(list[i]));
		vec[i].home = list[i];
		vec[i].data = b->data;
	}
	jb.v = vec;
	jb.n = nmeta;
	struct timespec now;
	sfs_now(fs, &now);
	rc = sfs_jlog_write_txn(
	    j->log, t->tid, j->head, &jb, (const uint32_t *)t->revokes->data,
	    t->revokes->len, &now, SFS_JLOG_TXN_FLUSH | j->ops->commit_flags,
	    &next, &used);
	g_free(vec);
	if (rc) {
		g_free(list);
		goto out_error;
	}

	/* 7. the transaction is durable: hand its blocks to checkpointing */
	struct ctxn *c = g_new0(struct ctxn, 1);
	c->tid = t->tid;
	c->log_start = j->head;
	c->log_len = used;
	c->pending = g_hash_table_new(g_direct_hash, g_direct_equal);
	for (i = 0; i < nmeta; i++) {
		gpointer key = GUINT_TO_POINTER(list[i]);
		struct ctxn *old = g_hash_table_lookup(j->owner, key);
		if (old)
			g_hash_table_remove(old->pending, key);
		g_hash_table_insert(j->owner, key, c);
		g_hash_table_add(c->pending, key);
		g_hash_table_insert(j->logged, key, GUINT_TO_POINTER(t->tid));
	}
	g_free(list);
	g_queue_push_tail(&j->live, c);
	j->used += used;
	j->head = next;

	uint32_t per = sfs_jlog_tags_per_desc(j->log);
	uint32_t ndesc = nmeta ? (nmeta + per - 1) / per : 0;
	j->desc_blocks += ndesc;
	/* logged data blocks are those of t->data that are also in t->meta
	 * (sfs_jnl_data_log); ordered data is never logged */
	uint64_t nd = 0;
	if (g_hash_table_size(t->data)) {
		g_hash_table_iter_init(&it, t->meta);
		while (g_hash_table_iter_next(&it, &k, &v))
			nd += g_hash_table_contains(t->data, k);
	}
	j->data_blocks += nd;
	j->meta_blocks += nmeta - nd;
	j->revoke_records += t->revokes->len;
	j->commit_blocks++;
	j->log_bytes += (uint64_t)used * bs;
	j->commits[why]++;
	sfs_hist_add(&j->txn_blocks, nmeta);

	/* the frees are durable: their pinned buffers and pending copies go */
	GHashTableIter fit;
	gpointer fv;
	g_hash_table_iter_init(&fit, freed);
	while (g_hash_table_iter_next(&fit, NULL, &fv)) {
		sfs_cache_unpin(sfs_fs_cache(fs), fv);
		sfs_cache_put(sfs_fs_cache(fs), fv);
	}
	g_hash_table_destroy(freed);
	frees_done(j, frees);
	g_array_free(frees, TRUE);

	/* 8. a new running transaction */
	txn_free(j, t);
	j->run = txn_new(c->tid + 1);
	advance_tail(j);
	return 0;

out_error:
	if (freed) {
		/* back into the transaction, which still owns them */
		GHashTableIter it2;
		gpointer k2, v2;
		g_hash_table_iter_init(&it2, freed);
		while (g_hash_table_iter_next(&it2, &k2, &v2))
			g_hash_table_insert(t->meta, k2, v2);
		g_hash_table_destroy(freed);
	}
	if (frees)
		g_array_free(frees, TRUE);
	sfs_fs_error(fs, rc, "journal commit of transaction %u failed", t->tid);
	return rc;
}

int sfs_jnl_flush(struct sfs_jnl *j)
{
	int rc;

	if (!j || !j->log)
		return 0;
	rc = sfs_jnl_commit(j, SFS_COMMIT_SYNC);
	if (rc == 0)
		rc = checkpoint(j, UINT32_MAX);
	return rc;
}

/* ---- timing ---- */

int sfs_jnl_tick(struct sfs_jnl *j)
{
	int rc = 0;

	if (!j->log || sfs_fs_failed(j->fs))
		return 0;
	if (j->run->started && sfs_clock_now_ns(sfs_fs_clock(j->fs)) >=
				   j->run->start_ns + j->p.commit_interval_ns) {
		rc = sfs_jnl_commit(j, SFS_COMMIT_INTERVAL);
		if (rc)
			return rc;
	}
	/* room for one more maximal transaction, or a forced checkpoint */
	if (!log_has_room(j, j->p.max_txn_blocks)) {
		j->logfull_stalls++;
		rc = checkpoint(j, j->p.max_txn_blocks);
	}
	return rc;
}

int sfs_jnl_op_end(struct sfs_jnl *j)
{
	if (!j->log || sfs_fs_failed(j->fs))
		return 0;
	if (g_hash_table_size(j->run->meta) >= j->p.max_txn_blocks)
		return sfs_jnl_commit(j, SFS_COMMIT_FULL);
	return 0;
}

sfs_ns_t sfs_jnl_next_deadline(const struct sfs_jnl *j)
{
	if (!j->log || !j->run->started)
		return UINT64_MAX;
	return j->run->start_ns + j->p.commit_interval_ns;
}

/* ---- open and close ---- */

int sfs_jnl_open_log(struct sfs_jnl *j, struct sfs_bdev *jdev, char **err)
{
	struct sfs_fs *fs = j->fs;
	struct sfs_jlog_super s;
	int rc;

	if (!(sfs_le32(sfs_fs_super(fs)->s_feature_compat) &
	      SFS_FEATURE_COMPAT_HAS_JOURNAL)) {
		*err = g_strdup_printf("data=%s needs a journal, and this image"
				       " has none (make one with simfs mkfs "
				       "-j)",
				       j->ops->name);
		return -EINVAL;
	}
	rc = sfs_jlog_open_fs(fs, jdev, &j->log, err);
	if (rc)
		return rc;
	rc = sfs_jlog_reserve(j->log);
	if (rc) {
		*err = g_strdup_printf(
		    "cannot reserve room on the host disk for the journal "
		    "(%u blocks): %s",
		    sfs_jlog_maxlen(j->log), g_strerror(-rc));
		return rc;
	}
	sfs_jlog_get_super(j->log, &s);
	if (s.start != 0) {
		*err = g_strdup("the journal is not empty after recovery");
		return -EINVAL;
	}
	j->capacity = sfs_jlog_capacity(j->log);
	j->head = sfs_jlog_first(j->log);
	j->run = txn_new(s.sequence ? s.sequence : 1);
	j->tail_tid = j->run->tid;
	j->sb_seq = s.sequence;
	if (j->p.max_txn_blocks == 0)
		j->p.max_txn_blocks = j->capacity / 4;
	if (j->p.commit_interval_ns == 0)
		j->p.commit_interval_ns = 5 * SFS_NS_PER_S;
	sfs_cache_set_written_cb(sfs_fs_cache(fs), jnl_written, j);
	return 0;
}

int sfs_jnl_open(struct sfs_fs *fs, const struct sfs_jnl_ops *ops,
		 const struct sfs_jnl_params *p, struct sfs_bdev *jdev,
		 struct sfs_jnl **out, char **err)
{
	struct sfs_jnl *j = g_new0(struct sfs_jnl, 1);
	int rc;

	j->ops = ops;
	j->fs = fs;
	j->p = *p;
	g_queue_init(&j->live);
	j->owner = g_hash_table_new(g_direct_hash, g_direct_equal);
	j->logged = g_hash_table_new(g_direct_hash, g_direct_equal);
	if (!ops->open_log) {
		j->run = txn_new(1);
		*out = j;
		return 0;
	}
	rc = ops->open_log(j, jdev, err);
	if (rc) {
		if (j->log) {
			sfs_cache_set_written_cb(sfs_fs_cache(fs), NULL, NULL);
			sfs_jlog_close(j->log);
		}
		txn_free(j, j->run);
		g_hash_table_destroy(j->owner);
		g_hash_table_destroy(j->logged);
		g_free(j);
		return rc;
	}
	*out = j;
	return 0;
}

void sfs_jnl_set_params(struct sfs_jnl *j, const struct sfs_jnl_params *p)
{
	j->p.commit_interval_ns =
		p->commit_interval_ns ? p->commit_interval_ns : 5 * SFS_NS_PER_S;
	j->p.max_txn_blocks = p->max_txn_blocks ? p->max_txn_blocks
						: j->capacity / 4;
	if (!j->log)
		j->p.max_txn_blocks = p->max_txn_blocks;
}

void sfs_jnl_free(struct sfs_jnl *j)
{
	struct ctxn *c;

	if (!j)
		return;
	if (j->log)
		sfs_cache_set_written_cb(sfs_fs_cache(j->fs), NULL, NULL);
	txn_free(j, j->run);
	while ((c = g_queue_pop_head(&j->live)))
		ctxn_free(c);
	g_hash_table_destroy(j->owner);
	g_hash_table_destroy(j->logged);
	if (j->log)
		sfs_jlog_close(j->log);
	g_free(j);
}

int sfs_jnl_close(struct sfs_jnl *j)
{
	int rc = 0;

	if (j->log && sfs_check_writable(j->fs) == 0) {
		rc = sfs_jnl_commit(j, SFS_COMMIT_UNMOUNT);
		if (!rc)
			rc = sfs_cache_sync(sfs_fs_cache(j->fs));
		if (!rc)
			rc = checkpoint(j, UINT32_MAX);
		/* the empty log must be durable before needs_recovery goes */
		if (!rc)
			rc = sfs_bdev_flush(sfs_fs_bdev(j->fs));
	}
	return rc;
}

/* ---- stats ---- */

void sfs_jnl_stats(void *ctx, struct sfs_stats_writer *w)
{
	struct sfs_jnl *j = ctx;
	uint64_t total = 0;

	sfs_stats_put_str(w, "mode", j->ops->name);
	if (!j->log)
		return;
	sfs_stats_begin(w, "commits");
	for (int i = 0; i < SFS_COMMIT_NREASONS; i++) {
		sfs_stats_put_u64(w, reason_names[i], j->commits[i]);
		total += j->commits[i];
	}
	sfs_stats_end(w);
	sfs_stats_put_u64(w, "commits_total", total);
	sfs_stats_put_hist(w, "transaction_blocks", &j->txn_blocks);
	sfs_stats_put_u64(w, "checkpoint_passes", j->checkpoints);
	sfs_stats_put_u64(w, "logfull_stalls", j->logfull_stalls);
	sfs_stats_begin(w, "log_blocks");
	sfs_stats_put_u64(w, "descriptor", j->desc_blocks);
	sfs_stats_put_u64(w, "metadata", j->meta_blocks);
	sfs_stats_put_u64(w, "data", j->data_blocks);
	sfs_stats_put_u64(w, "commit", j->commit_blocks);
	sfs_stats_put_u64(w, "superblock", j->jsb_writes);
	sfs_stats_end(w);
	sfs_stats_put_u64(w, "revoke_records", j->revoke_records);
	sfs_stats_put_u64(w, "log_bytes", j->log_bytes);
	sfs_stats_put_u64(w, "ordered_data_blocks", j->ordered_blocks);
	sfs_stats_put_u64(w, "log_capacity_blocks", j->capacity);
	sfs_stats_put_u64(w, "log_used_blocks", j->used);
	sfs_stats_put_u64(w, "max_transaction_blocks", j->p.max_txn_blocks);
}
