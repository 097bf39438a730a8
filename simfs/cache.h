/*
 * cache.h - the buffer cache between the engine and the backing device.
 *
 * Every block the engine reads or writes (metadata and file data) is a
 * `struct sfs_buf` held here.  Buffers are reference counted; a buffer with
 * no references stays cached until the RAM budget pushes it out in LRU order.
 * Dirty buffers are written back when the budget needs their memory, on
 * sfs_cache_sync, and never otherwise (the writeback policy of a later layer
 * decides more).  Write-back sorts dirty blocks by number and merges adjacent
 * ones into one device request.
 *
 *   sfs_cache_get(c, blk, cat, &b)      cached or read from the device
 *   sfs_cache_get_new(c, blk, cat, &b)  zero-filled, not read: caller fills it
 *   ... modify b->data ...; sfs_cache_dirty(c, b)
 *   sfs_cache_put(c, b)
 *
 * Invariants:
 *  1. At most one buffer per block number.
 *  2. A buffer with refs > 0 is never evicted; a dirty buffer is written
 *     before it is evicted.
 *  3. sfs_cache_discard drops blocks that were freed: their dirty contents
 *     never reach the device ("died dirty") and are counted.
 *
 * Not thread-safe: the engine serialises calls (its own lock).
 */
#ifndef SFS_CACHE_H
#define SFS_CACHE_H

#include "blockdev.h"
#include "format.h"

struct sfs_cache;

struct sfs_buf {
	sfs_blk_t blk;  /* block number, read-only for users */
	uint8_t *data;  /* block_size bytes */
};

struct sfs_cache_counters {
	uint64_t hits;            /* gets served from memory */
	uint64_t misses;          /* gets that read the device */
	uint64_t writebacks;      /* blocks written back */
	uint64_t evictions;       /* buffers dropped for space */
	uint64_t died_dirty_bytes; /* dirty bytes discarded before writeback */
	uint64_t peak_dirty_bytes;
	uint64_t cached_bytes;    /* now */
	uint64_t dirty_bytes;     /* now */
};

/* A cache over bd holding at most budget_bytes of blocks (>= 64 blocks). */
int sfs_cache_new(struct sfs_bdev *bd, uint32_t block_size,
		  uint64_t budget_bytes, struct sfs_cache **out);
/* Drop every buffer (dirty ones are lost: call sfs_cache_sync first). */
void sfs_cache_free(struct sfs_cache *c);

uint32_t sfs_cache_block_size(const struct sfs_cache *c);
struct sfs_bdev *sfs_cache_bdev(struct sfs_cache *c);

/* Get block blk, reading it if not cached. -EIO on a read error. */
int sfs_cache_get(struct sfs_cache *c, sfs_blk_t blk, enum sfs_io_cat cat,
		  struct sfs_buf **out);
/* Get block blk without reading it: contents zeroed (unless cached). */
int sfs_cache_get_new(struct sfs_cache *c, sfs_blk_t blk, enum sfs_io_cat cat,
		      struct sfs_buf **out);
void sfs_cache_dirty(struct sfs_cache *c, struct sfs_buf *b);
void sfs_cache_put(struct sfs_cache *c, struct sfs_buf *b);

/*
 * Bulk data paths for n contiguous blocks starting at blk.  read_run serves
 * cached blocks from memory and reads the others in as few device requests
 * as possible; write_run stores the bytes as dirty buffers.  Both copy
 * n * block_size bytes.
 */
int sfs_cache_read_run(struct sfs_cache *c, sfs_blk_t blk, uint32_t n,
		       enum sfs_io_cat cat, void *buf);
int sfs_cache_write_run(struct sfs_cache *c, sfs_blk_t blk, uint32_t n,
			enum sfs_io_cat cat, const void *buf);

/* Forget blocks [blk, blk+n) (freed): dirty contents die unwritten. */
void sfs_cache_discard(struct sfs_cache *c, sfs_blk_t blk, uint32_t n);

/* Write every dirty buffer (sorted, merged), then flush the device. */
int sfs_cache_sync(struct sfs_cache *c);

void sfs_cache_counters(const struct sfs_cache *c,
			struct sfs_cache_counters *out);

#endif /* SFS_CACHE_H */
