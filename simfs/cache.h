/*
 * cache.h - the buffer cache between the engine and the backing device,
 * with the Linux writeback policy (dirty limits, flusher, throttling) and
 * the hooks the journal needs.  The model and its knobs: doc/cache.md.
 *
 * Every block the engine reads or writes (metadata and file data) is a
 * `struct sfs_buf` held here.  Buffers are reference counted; a buffer with
 * no references stays cached until the RAM budget (`mem=`, the modelled
 * machine's RAM) pushes it out in LRU order.  Write-back always sorts the
 * blocks of a batch by number, merges neighbours into one device request
 * and wraps the batch in sfs_timedev_plug/unplug.
 *
 *   sfs_cache_get(c, blk, cat, &b)      cached or read from the device
 *   sfs_cache_get_new(c, blk, cat, &b)  zero-filled, not read: caller fills it
 *   ... modify b->data ...; sfs_cache_dirty(c, b)
 *   sfs_cache_put(c, b)
 *
 * Writeback (once sfs_cache_set_policy has been called; before that, dirty
 * buffers leave only under memory pressure and on sync):
 *   - sfs_cache_dirty / write_run over the dirty limit: the caller writes
 *     back, oldest first, a chunk at a time, until below (2.6-era
 *     balance_dirty_pages);
 *   - sfs_cache_tick at the clock's time: periodic (kupdate) write-back of
 *     buffers dirty for dirty_expire_cs, every dirty_writeback_cs; and
 *     background write-back while over the background threshold;
 *   - sfs_cache_next_deadline: when the next tick has work.
 * Thresholds compare the dirty bytes of unpinned buffers.  Asynchronous
 * write-back (tick, throttle) skips referenced buffers: an operation is
 * changing them right now.  Sync, write_blocks write them.
 *
 * Journal hooks: sfs_cache_pin keeps a buffer from its home location (no
 * write-back path writes it, it is never evicted) until unpinned;
 * sfs_cache_write_blocks writes given blocks now; the written callback
 * reports each block that reached home.
 *
 * Invariants:
 *  1. At most one buffer per block number.
 *  2. A buffer with refs > 0 or pins > 0 is never evicted; a dirty buffer
 *     is written before it is evicted; a pinned buffer is never written.
 *  3. sfs_cache_discard drops blocks that were freed: their dirty contents
 *     never reach the device ("died dirty") and are counted.
 *
 * Not thread-safe: the engine serialises calls (its own lock).
 */
#ifndef SFS_CACHE_H
#define SFS_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "blockdev.h"
#include "format.h"

struct sfs_cache;
struct sfs_clock;

struct sfs_buf {
	sfs_blk_t blk; /* block number, read-only for users */
	uint8_t *data; /* block_size bytes */
	/* the user's note of what the contents were last checked as (0:
	 * never); the cache zeroes it whenever it fills the buffer or it
	 * is marked dirty, so a note survives only unchanged contents */
	uint64_t checked;
};

/* Why a block was written back (counted in sfs_cache_counters). */
enum sfs_wb_reason {
	SFS_WB_BACKGROUND = 0, /* over the background threshold (flusher) */
	SFS_WB_PERIODIC,       /* expired: dirty for dirty_expire_cs */
	SFS_WB_THROTTLE,       /* the dirtying caller, over the dirty limit */
	SFS_WB_SYNC,	       /* sfs_cache_sync */
	SFS_WB_EVICTION,       /* the budget needed the memory */
	SFS_WB_EXPLICIT,       /* sfs_cache_write_blocks (journal) */
	SFS_WB_NREASONS
};

/* "background", "periodic", ... (static string). */
const char *sfs_wb_reason_name(enum sfs_wb_reason r);

struct sfs_cache_counters {
	uint64_t hits;		   /* gets served from memory */
	uint64_t misses;	   /* gets that read the device */
	uint64_t writebacks;	   /* blocks written back, any reason */
	uint64_t evictions;	   /* buffers dropped for space */
	uint64_t died_dirty_bytes; /* dirty bytes discarded before writeback */
	uint64_t peak_dirty_bytes; /* most dirty bytes at once */
	uint64_t cached_bytes;	   /* now */
	uint64_t dirty_bytes;	   /* now (pinned ones included) */
	uint64_t wb_bytes[SFS_WB_NREASONS]; /* bytes written back, by reason */
	uint64_t throttle_events;    /* dirtying calls that had to write back */
	uint64_t writeback_errors;   /* failed tick/throttle write-backs */
	uint64_t readahead_blocks;   /* blocks read by sfs_cache_readahead */
	uint64_t readahead_hits;     /* of those, later used */
	uint64_t readahead_wasted;   /* of those, evicted unused */
	uint64_t over_budget_events; /* new buffers with nothing evictable */
	uint64_t pinned_blocks;	     /* now: buffers with pins > 0 */
	/* settings in effect, for reports */
	uint64_t budget_bytes;	    /* the RAM budget (mem=) */
	uint64_t dirty_limit_bytes; /* throttle above this (0: no policy) */
	uint64_t background_limit_bytes; /* flusher above this (0: none) */
};

/*
 * Writeback policy: the Linux vm.* knobs of that name (doc/cache.md;
 * Linux mm/page-writeback.c).  Ratios are percent of the budget; the _bytes
 * forms override them when non-zero.  A background threshold at or above
 * the dirty limit is halved to dirty/2, as Linux does.
 */
struct sfs_cache_policy {
	uint32_t dirty_background_ratio; /* %: flusher starts above */
	uint32_t dirty_ratio;		 /* %: writers throttled above */
	uint64_t dirty_background_bytes; /* overrides the ratio if != 0 */
	uint64_t dirty_bytes;		 /* overrides the ratio if != 0 */
	uint32_t dirty_expire_cs; /* age that makes dirty data due, 1/100 s */
	uint32_t dirty_writeback_cs;	/* periodic flusher wakeup, 1/100 s;
					   0: no periodic write-back */
	uint64_t writeback_chunk_bytes; /* per background/throttle pass */
	uint32_t readahead_max_bytes;	/* largest window; 0: no read-ahead */
	uint32_t readahead_min_bytes;	/* first window of a stream */
};

#define SFS_CACHE_POLICY_DEFAULT "modern"
#define SFS_CACHE_NO_DEADLINE UINT64_MAX

/*
 * The named preset's knobs into *out ("2.6", "2.6.22", "modern"; NULL or
 * "" is SFS_CACHE_POLICY_DEFAULT).  0, or -EINVAL for an unknown name.
 */
int sfs_cache_policy_preset(const char *name, struct sfs_cache_policy *out);
/* "2.6, 2.6.22, modern" for error messages (static string). */
const char *sfs_cache_policy_names(void);
/*
 * For help text: the i-th preset's name and one-line description (static
 * strings); false past the last.
 */
bool sfs_cache_policy_nth(unsigned i, const char **name, const char **help);

/* A cache over bd holding at most budget_bytes of blocks (>= 64 blocks). */
int sfs_cache_new(struct sfs_bdev *bd, uint32_t block_size,
		  uint64_t budget_bytes, struct sfs_cache **out);
/* Drop every buffer (dirty ones are lost: call sfs_cache_sync first). */
void sfs_cache_free(struct sfs_cache *c);

uint32_t sfs_cache_block_size(const struct sfs_cache *c);
struct sfs_bdev *sfs_cache_bdev(struct sfs_cache *c);

/*
 * Install a writeback policy (copied).  0, or -EINVAL (a ratio over 100,
 * a zero chunk, readahead_min_bytes 0 or above readahead_max_bytes while
 * read-ahead is on).  Restarts the periodic timer from the clock's now.
 */
int sfs_cache_set_policy(struct sfs_cache *c, const struct sfs_cache_policy *p);
/* The policy in effect (all zero before sfs_cache_set_policy). */
void sfs_cache_get_policy(const struct sfs_cache *c,
			  struct sfs_cache_policy *out);
/*
 * Where time comes from (dirtying times, expiry, the flusher's timer).
 * NULL, the default, is a clock stuck at 0.  The clock must outlive c.
 */
void sfs_cache_set_clock(struct sfs_cache *c, struct sfs_clock *clock);

/*
 * Run the flusher's work due at the clock's current time: periodic
 * write-back of expired buffers if the wakeup is due, then background
 * write-back while over the background threshold.  0, or -EIO if a write
 * failed (those buffers stay dirty; later ticks retry).
 */
int sfs_cache_tick(struct sfs_cache *c);
/*
 * When sfs_cache_tick next has work: a time on the clock (possibly now or
 * past), or SFS_CACHE_NO_DEADLINE.  Dirtying, unpinning and time passing
 * change it: ask again after each operation.
 */
sfs_ns_t sfs_cache_next_deadline(struct sfs_cache *c);

/* Get block blk, reading it if not cached. -EIO on a read error. */
int sfs_cache_get(struct sfs_cache *c, sfs_blk_t blk, enum sfs_io_cat cat,
		  struct sfs_buf **out);
/* Get block blk without reading it: contents zeroed (unless cached). */
int sfs_cache_get_new(struct sfs_cache *c, sfs_blk_t blk, enum sfs_io_cat cat,
		      struct sfs_buf **out);
/*
 * Block memory without a block (delayed allocation's data): bs zeroed bytes
 * from the cache's own block pool, so they reuse the memory of evicted
 * buffers and cost no heap allocation each.  Not in cached_bytes: the
 * delayed-data provider counts them (struct sfs_cache_delayed).  Give them
 * back with sfs_cache_block_free, or hand them to sfs_cache_get_new_from.
 */
uint8_t *sfs_cache_block_alloc(struct sfs_cache *c);
void sfs_cache_block_free(struct sfs_cache *c, uint8_t *data);
/*
 * sfs_cache_get_new with data (from sfs_cache_block_alloc) as the block's
 * contents: the buffer takes the memory itself when blk is not cached, or
 * gets a copy of it (and data goes back to the pool) when it is.  On
 * success data is the cache's; on error (-EINVAL, -EIO) it stays the
 * caller's.
 */
int sfs_cache_get_new_from(struct sfs_cache *c, sfs_blk_t blk,
			   enum sfs_io_cat cat, uint8_t *data,
			   struct sfs_buf **out);
/*
 * Mark b dirty (remembering when, if it was clean).  With a policy, a
 * caller that pushes the dirty bytes over the dirty limit writes back
 * until below it (errors are counted, the data stays dirty).
 */
void sfs_cache_dirty(struct sfs_cache *c, struct sfs_buf *b);
void sfs_cache_put(struct sfs_cache *c, struct sfs_buf *b);

/*
 * Bulk data paths for n contiguous blocks starting at blk.  read_run serves
 * cached blocks from memory and reads the others in as few device requests
 * as possible; write_run stores the bytes as dirty buffers (then throttles
 * as sfs_cache_dirty does).  Both copy n * block_size bytes.
 */
int sfs_cache_read_run(struct sfs_cache *c, sfs_blk_t blk, uint32_t n,
		       enum sfs_io_cat cat, void *buf);
int sfs_cache_write_run(struct sfs_cache *c, sfs_blk_t blk, uint32_t n,
			enum sfs_io_cat cat, const void *buf);
/*
 * Read-ahead: bring the uncached blocks of [blk, blk+n) into the cache
 * (clean, unreferenced), one device request per run of uncached blocks.
 * Counted as read-ahead, not as misses; a later get or read_run of such a
 * block is a read-ahead hit.  0, -EINVAL, -EIO.
 */
int sfs_cache_readahead(struct sfs_cache *c, sfs_blk_t blk, uint32_t n,
			enum sfs_io_cat cat);

/* Forget blocks [blk, blk+n) (freed): dirty contents die unwritten. */
void sfs_cache_discard(struct sfs_cache *c, sfs_blk_t blk, uint32_t n);

/*
 * Write every dirty buffer that is not pinned (sorted, merged), then flush
 * the device.  Pinned buffers stay dirty.  0 or -EIO.
 */
int sfs_cache_sync(struct sfs_cache *c);

/* ---- journal hooks ---- */

/*
 * Pin b: no write-back path (eviction, tick, throttle, sync) writes it to
 * its home location and it is never evicted until as many unpins.  A
 * pinned buffer counts against the budget; with nothing else evictable the
 * cache exceeds the budget (counted as over-budget events).
 */
void sfs_cache_pin(struct sfs_cache *c, struct sfs_buf *b);
void sfs_cache_unpin(struct sfs_cache *c, struct sfs_buf *b);
/*
 * fn(ctx, blk) runs after each block reached its home location by any
 * write-back (after its batch completed).  It may query the cache and pin
 * or unpin; it must not dirty, discard or write back.  NULL removes it.
 */
void sfs_cache_set_written_cb(struct sfs_cache *c,
			      void (*fn)(void *ctx, sfs_blk_t blk), void *ctx);
/*
 * Write those of blks[0..n) that are cached, dirty and not pinned, now
 * (sorted, merged, one plugged batch) and wait for them.  Others are
 * skipped.  No flush.  0, or -EIO (the blocks not written stay dirty).
 */
int sfs_cache_write_blocks(struct sfs_cache *c, const sfs_blk_t *blks,
			   size_t n);
/*
 * The same, counting the bytes under `why` (a delayed-allocation write-back
 * on behalf of the flusher, a throttled writer or sync).
 */
int sfs_cache_write_blocks_why(struct sfs_cache *c, const sfs_blk_t *blks,
			       size_t n, enum sfs_wb_reason why);

/* ---- delayed allocation (doc/allocators.md, "Delayed allocation") ---- */

/*
 * Dirty file data that has no block yet is held by the engine, not here.
 * The cache still counts it: its bytes join the dirty bytes that the
 * thresholds compare and the memory the budget holds, and the write-back
 * paths ask the engine to place and write it, oldest first, as they would
 * write a buffer of that age.
 */
struct sfs_cache_delayed {
	/* bytes held now */
	uint64_t (*bytes)(void *ctx);
	/* when the oldest of them was dirtied (SFS_CACHE_NO_DEADLINE: none) */
	sfs_ns_t (*oldest_ns)(void *ctx);
	/*
	 * Place and write back: everything dirtied at or before cutoff_ns
	 * (expired) or else at least `bytes` of the oldest, counting the
	 * writes under why.  Called with no throttling in effect; it may get,
	 * dirty and write buffers.  Returns the bytes written, or -errno.
	 */
	int64_t (*writeback)(void *ctx, bool expired, sfs_ns_t cutoff_ns,
			     uint64_t bytes, enum sfs_wb_reason why);
};
/* Install (ops) or remove (NULL) the delayed-data provider. */
void sfs_cache_set_delayed(struct sfs_cache *c,
			   const struct sfs_cache_delayed *ops, void *ctx);
/* A writer added delayed data: throttle it as sfs_cache_dirty would. */
void sfs_cache_balance(struct sfs_cache *c);

/*
 * Drop those of blks[0..n) that are cached, clean and idle (an O_DIRECT
 * write went through: Linux invalidates the page cache over the range, so
 * direct I/O does not push other data out of memory).  Counted as
 * evictions.
 */
void sfs_cache_drop_clean(struct sfs_cache *c, const sfs_blk_t *blks,
			  size_t n);

/* Is block blk cached and dirty? */
bool sfs_cache_is_dirty(struct sfs_cache *c, sfs_blk_t blk);
/* Dirty bytes now, pinned buffers included. */
uint64_t sfs_cache_dirty_bytes(const struct sfs_cache *c);

void sfs_cache_counters(const struct sfs_cache *c,
			struct sfs_cache_counters *out);

#endif /* SFS_CACHE_H */
