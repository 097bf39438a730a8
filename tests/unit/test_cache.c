/*
 * test_cache.c - the buffer cache over a RAM device whose request log shows
 * exactly what reached the "disk".
 *
 * Hits and misses, dirty write-back on sync (sorted, merged, bounded
 * requests, then a flush), the RAM budget with LRU eviction that writes
 * dirty buffers back first in large batches, referenced buffers never
 * evicted, discard of dirty blocks (never written, counted as died dirty),
 * bulk read/write runs, and write-back errors through the fault device.
 *
 * The writeback policy on a virtual clock: presets, the background
 * threshold, expiry by the periodic flusher, data freed before expiry never
 * written (the dbench mechanism), writer throttling over the dirty limit;
 * the journal hooks (pins, the written callback, write_blocks); and
 * read-ahead through the engine on a real image.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include <glib.h>

#include "cache.h"
#include "clock.h"
#include "fs_priv.h"
#include "testsupport.h"
#include "timedev.h"

#define BS 1024u

static struct sfs_cache *mkcache(struct sfs_bdev *bd, uint32_t bs,
				 uint64_t budget)
{
	struct sfs_cache *c = NULL;

	assert_int_equal(sfs_cache_new(bd, bs, budget, &c), 0);
	return c;
}

static void pattern(uint8_t *p, size_t n, uint32_t blk)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(blk * 31 + i);
}

/* Count the log entries of op (and their total bytes). */
static size_t count_ops(struct sfs_bdev *ram, enum sfs_io_op op,
			uint64_t *bytes)
{
	size_t n, k = 0;
	const struct sfs_io_req *log = sfs_ramdev_log(ram, &n);

	if (bytes)
		*bytes = 0;
	for (size_t i = 0; i < n; i++) {
		if (log[i].op != op)
			continue;
		k++;
		if (bytes)
			*bytes += log[i].len_bytes;
	}
	return k;
}

/* Dirty block blk with its pattern through get_new. */
static void dirty_block(struct sfs_cache *c, uint32_t blk, enum sfs_io_cat cat)
{
	struct sfs_buf *b;

	assert_int_equal(sfs_cache_get_new(c, blk, cat, &b), 0);
	pattern(b->data, sfs_cache_block_size(c), blk);
	sfs_cache_dirty(c, b);
	sfs_cache_put(c, b);
}

static void test_cache_new_rejects_bad_block_size(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_cache *c = NULL;

	assert_int_equal(sfs_cache_new(ram, 1000, 1 << 20, &c), -EINVAL);
	assert_int_equal(sfs_cache_new(ram, 256, 1 << 20, &c), -EINVAL);
	assert_int_equal(sfs_cache_new(NULL, 1024, 1 << 20, &c), -EINVAL);
	assert_null(c);
	/* A tiny budget is raised to 64 blocks: 64 blocks fit, no eviction. */
	c = mkcache(ram, BS, 1);
	for (uint32_t i = 0; i < 64; i++) {
		struct sfs_buf *b;

		assert_int_equal(sfs_cache_get(c, i, SFS_IO_DATA, &b), 0);
		sfs_cache_put(c, b);
	}
	struct sfs_cache_counters ctr;
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.evictions, 0);
	assert_int_equal(ctr.cached_bytes, 64 * BS);
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

static void test_cache_hit_miss_counts(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 1 << 20);
	struct sfs_cache_counters ctr;
	struct sfs_buf *b, *b2;

	pattern(sfs_ramdev_data(ram) + 5 * BS, BS, 5);
	assert_int_equal(sfs_cache_get(c, 5, SFS_IO_INODE, &b), 0);
	assert_int_equal(b->blk, 5);
	uint8_t want[BS];
	pattern(want, BS, 5);
	assert_memory_equal(b->data, want, BS);
	sfs_cache_put(c, b);
	assert_int_equal(sfs_cache_get(c, 5, SFS_IO_INODE, &b2), 0);
	assert_ptr_equal(b2, b);
	/* A second reference to a held buffer is a hit too. */
	assert_int_equal(sfs_cache_get(c, 5, SFS_IO_INODE, &b), 0);
	sfs_cache_put(c, b);
	sfs_cache_put(c, b2);
	assert_int_equal(sfs_cache_get(c, 6, SFS_IO_INODE, &b), 0);
	sfs_cache_put(c, b);

	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.misses, 2);
	assert_int_equal(ctr.hits, 2);
	assert_int_equal(ctr.cached_bytes, 2 * BS);
	assert_int_equal(ctr.dirty_bytes, 0);

	size_t n;
	const struct sfs_io_req *log = sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 2);
	assert_int_equal(log[0].op, SFS_IO_READ);
	assert_int_equal(log[0].cat, SFS_IO_INODE);
	assert_int_equal(log[0].off_bytes, 5 * BS);
	assert_int_equal(log[0].len_bytes, BS);

	/* Beyond the device: refused. */
	assert_int_equal(sfs_cache_get(c, 1024, SFS_IO_DATA, &b), -EINVAL);
	assert_int_equal(sfs_cache_get_new(c, 5000, SFS_IO_DATA, &b), -EINVAL);
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

static void test_cache_get_new_does_not_read(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 1 << 20);
	struct sfs_buf *b;
	size_t n;

	memset(sfs_ramdev_data(ram) + 9 * BS, 0xEE, BS);
	assert_int_equal(sfs_cache_get_new(c, 9, SFS_IO_DIR, &b), 0);
	for (uint32_t i = 0; i < BS; i++)
		assert_int_equal(b->data[i], 0);
	sfs_cache_put(c, b);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 0);
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

/* The user's checked note: kept while the contents stay as they are
 * (a put and a get from the cache), zeroed when the buffer is dirtied or
 * handed out by get_new, and 0 on a buffer read from the device. */
static void test_cache_checked_note_cleared_by_changes(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 1 << 20);
	struct sfs_buf *b;

	(void)state;
	assert_int_equal(sfs_cache_get(c, 5, SFS_IO_DIR, &b), 0);
	assert_true(b->checked == 0);
	b->checked = 42;
	sfs_cache_put(c, b);
	assert_int_equal(sfs_cache_get(c, 5, SFS_IO_DIR, &b), 0);
	assert_true(b->checked == 42);
	b->data[0] ^= 1;
	sfs_cache_dirty(c, b);
	assert_true(b->checked == 0);
	b->checked = 43;
	sfs_cache_dirty(c, b); /* already dirty: still a change */
	assert_true(b->checked == 0);
	b->checked = 44;
	sfs_cache_put(c, b);
	assert_int_equal(sfs_cache_get_new(c, 5, SFS_IO_DIR, &b), 0);
	assert_true(b->checked == 0);
	sfs_cache_put(c, b);
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

/*
 * Block memory without a block (delayed data): zeroed, outside
 * cached_bytes; a new buffer takes it over without a copy, a cached one
 * gets a copy; it reaches the device like any dirty buffer.
 */
static void test_cache_block_memory_taken_by_new_buffer(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 1 << 20);
	struct sfs_cache_counters ctr;
	uint8_t *d1 = sfs_cache_block_alloc(c), *d2;
	struct sfs_buf *b, *old;
	uint8_t want[BS];

	(void)state;
	for (uint32_t i = 0; i < BS; i++)
		assert_int_equal(d1[i], 0);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.cached_bytes, 0);
	pattern(d1, BS, 7);
	assert_int_equal(sfs_cache_get_new_from(c, 7, SFS_IO_DATA, d1, &b), 0);
	assert_ptr_equal(b->data, d1); /* taken, not copied */
	sfs_cache_dirty(c, b);
	sfs_cache_put(c, b);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.cached_bytes, BS);

	/* block 8 is cached already: its buffer gets a copy */
	dirty_block(c, 8, SFS_IO_DATA);
	assert_int_equal(sfs_cache_get(c, 8, SFS_IO_DATA, &old), 0);
	d2 = sfs_cache_block_alloc(c);
	pattern(d2, BS, 99);
	assert_int_equal(sfs_cache_get_new_from(c, 8, SFS_IO_DATA, d2, &b), 0);
	assert_ptr_equal(b, old);
	assert_ptr_not_equal(b->data, d2);
	sfs_cache_dirty(c, b);
	sfs_cache_put(c, b);
	sfs_cache_put(c, old);
	/* out of range: refused, the memory stays the caller's */
	d2 = sfs_cache_block_alloc(c);
	assert_int_equal(
	    sfs_cache_get_new_from(c, 1u << 30, SFS_IO_DATA, d2, &b), -EINVAL);
	sfs_cache_block_free(c, d2);

	assert_int_equal(sfs_cache_sync(c), 0);
	pattern(want, BS, 7);
	assert_memory_equal(sfs_ramdev_data(ram) + 7 * BS, want, BS);
	pattern(want, BS, 99);
	assert_memory_equal(sfs_ramdev_data(ram) + 8 * BS, want, BS);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.cached_bytes, 2 * BS);
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

/* Block memory counts against the budget: clean idle buffers make room. */
static void test_cache_block_memory_evicts_clean(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 64 * BS);
	struct sfs_cache_counters ctr;
	struct sfs_buf *b;
	uint8_t *d[3];

	(void)state;
	for (uint32_t blk = 0; blk < 64; blk++) {
		assert_int_equal(sfs_cache_get(c, blk, SFS_IO_DATA, &b), 0);
		sfs_cache_put(c, b);
	}
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.cached_bytes, 64 * BS);
	for (int i = 0; i < 3; i++)
		d[i] = sfs_cache_block_alloc(c);
	/* nobody counts them as delayed data here, so one eviction made
	 * room for all three: the least recently used went */
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.cached_bytes, 63 * BS);
	assert_int_equal(ctr.evictions, 1);
	assert_int_equal(sfs_cache_get(c, 1, SFS_IO_DATA, &b), 0);
	sfs_cache_put(c, b);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.misses, 64); /* block 1 was still cached */
	for (int i = 0; i < 3; i++)
		sfs_cache_block_free(c, d[i]);
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

static void test_cache_sync_writes_dirty_then_flushes(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 1 << 20);
	struct sfs_cache_counters ctr;
	uint8_t want[BS];
	size_t n;

	dirty_block(c, 40, SFS_IO_BITMAP);
	dirty_block(c, 7, SFS_IO_INODE);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.dirty_bytes, 2 * BS);
	assert_int_equal(ctr.peak_dirty_bytes, 2 * BS);
	/* Nothing reached the device yet. */
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 0);
	assert_int_equal(sfs_ramdev_data(ram)[40 * BS + 1], 0);

	assert_int_equal(sfs_cache_sync(c), 0);
	const struct sfs_io_req *log = sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 3);
	assert_int_equal(log[0].op, SFS_IO_WRITE);
	assert_int_equal(log[0].off_bytes, 7 * BS);
	assert_int_equal(log[0].cat, SFS_IO_INODE);
	assert_int_equal(log[1].off_bytes, 40 * BS);
	assert_int_equal(log[1].cat, SFS_IO_BITMAP);
	assert_int_equal(log[2].op, SFS_IO_FLUSH);
	pattern(want, BS, 40);
	assert_memory_equal(sfs_ramdev_data(ram) + 40 * BS, want, BS);
	pattern(want, BS, 7);
	assert_memory_equal(sfs_ramdev_data(ram) + 7 * BS, want, BS);

	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.dirty_bytes, 0);
	assert_int_equal(ctr.writebacks, 2);
	assert_int_equal(ctr.peak_dirty_bytes, 2 * BS);

	/* A second sync has nothing to write: only the flush. */
	sfs_ramdev_clear_log(ram);
	assert_int_equal(sfs_cache_sync(c), 0);
	assert_int_equal(count_ops(ram, SFS_IO_WRITE, NULL), 0);
	assert_int_equal(count_ops(ram, SFS_IO_FLUSH, NULL), 1);
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

static void test_cache_sync_merges_adjacent_blocks(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(8 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 8 << 20);
	const uint32_t order[] = {15, 11, 19, 10, 12, 30,
				  13, 18, 14, 16, 17, 32};
	const struct sfs_io_req *log;
	size_t n;

	/* Blocks 10..19 dirtied out of order, plus 30 and 32. */
	for (size_t i = 0; i < G_N_ELEMENTS(order); i++)
		dirty_block(c, order[i], SFS_IO_DATA);
	assert_int_equal(sfs_cache_sync(c), 0);
	log = sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 4);
	assert_int_equal(log[0].off_bytes, 10 * BS);
	assert_int_equal(log[0].len_bytes, 10 * BS);
	assert_int_equal(log[1].off_bytes, 30 * BS);
	assert_int_equal(log[1].len_bytes, BS);
	assert_int_equal(log[2].off_bytes, 32 * BS);
	assert_int_equal(log[2].len_bytes, BS);
	assert_int_equal(log[3].op, SFS_IO_FLUSH);
	for (uint32_t blk = 10; blk < 20; blk++) {
		uint8_t want[BS];

		pattern(want, BS, blk);
		assert_memory_equal(sfs_ramdev_data(ram) + blk * BS, want, BS);
	}

	/* 3000 adjacent blocks: 1 MiB requests at most (1024 blocks). */
	sfs_ramdev_clear_log(ram);
	for (uint32_t blk = 2000; blk < 5000; blk++)
		dirty_block(c, blk, SFS_IO_DATA);
	assert_int_equal(sfs_cache_sync(c), 0);
	log = sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 4);
	assert_int_equal(log[0].len_bytes, 1 << 20);
	assert_int_equal(log[1].len_bytes, 1 << 20);
	assert_int_equal(log[2].len_bytes, (3000 - 2048) * BS);
	assert_int_equal(log[1].off_bytes, (2000 + 1024) * BS);

	/* A change of category splits a run. */
	sfs_ramdev_clear_log(ram);
	dirty_block(c, 100, SFS_IO_BITMAP);
	dirty_block(c, 101, SFS_IO_BITMAP);
	dirty_block(c, 102, SFS_IO_INODE);
	dirty_block(c, 103, SFS_IO_INODE);
	assert_int_equal(sfs_cache_sync(c), 0);
	log = sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 3);
	assert_int_equal(log[0].cat, SFS_IO_BITMAP);
	assert_int_equal(log[0].len_bytes, 2 * BS);
	assert_int_equal(log[1].cat, SFS_IO_INODE);
	assert_int_equal(log[1].off_bytes, 102 * BS);
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

static void test_cache_budget_respected_with_eviction(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 100 * BS);
	struct sfs_cache_counters ctr;
	struct sfs_buf *b;

	for (uint32_t blk = 0; blk < 300; blk++) {
		assert_int_equal(sfs_cache_get(c, blk, SFS_IO_DATA, &b), 0);
		sfs_cache_put(c, b);
		sfs_cache_counters(c, &ctr);
		assert_true(ctr.cached_bytes <= 100 * BS);
	}
	assert_int_equal(ctr.evictions, 200);
	assert_int_equal(ctr.misses, 300);
	/* LRU: the newest 100 are cached, the oldest are gone. */
	assert_int_equal(sfs_cache_get(c, 299, SFS_IO_DATA, &b), 0);
	sfs_cache_put(c, b);
	assert_int_equal(sfs_cache_get(c, 200, SFS_IO_DATA, &b), 0);
	sfs_cache_put(c, b);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.hits, 2);
	assert_int_equal(sfs_cache_get(c, 0, SFS_IO_DATA, &b), 0);
	sfs_cache_put(c, b);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.misses, 301);
	/* 200 was used recently, so it survived that eviction; 201 did not. */
	assert_int_equal(sfs_cache_get(c, 200, SFS_IO_DATA, &b), 0);
	sfs_cache_put(c, b);
	assert_int_equal(sfs_cache_get(c, 201, SFS_IO_DATA, &b), 0);
	sfs_cache_put(c, b);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.hits, 3);
	assert_int_equal(ctr.misses, 302);
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

static void test_cache_dirty_evicted_after_batch_writeback(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 64 * BS);
	struct sfs_cache_counters ctr;
	const struct sfs_io_req *log;
	struct sfs_buf *b;
	size_t n;

	for (uint32_t blk = 100; blk < 164; blk++)
		dirty_block(c, blk, SFS_IO_DATA);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 0);
	/* One more block: the 8 oldest dirty ones go out in one request. */
	assert_int_equal(sfs_cache_get(c, 500, SFS_IO_DATA, &b), 0);
	sfs_cache_put(c, b);
	log = sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 2);
	assert_int_equal(log[0].op, SFS_IO_WRITE);
	assert_int_equal(log[0].off_bytes, 100 * BS);
	assert_int_equal(log[0].len_bytes, 8 * BS);
	assert_int_equal(log[1].op, SFS_IO_READ);
	for (uint32_t blk = 100; blk < 108; blk++) {
		uint8_t want[BS];

		pattern(want, BS, blk);
		assert_memory_equal(sfs_ramdev_data(ram) + blk * BS, want, BS);
	}
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.writebacks, 8);
	assert_int_equal(ctr.evictions, 1);
	assert_int_equal(ctr.dirty_bytes, 56 * BS);
	assert_true(ctr.cached_bytes <= 64 * BS);
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

static void test_cache_streaming_writer_issues_large_requests(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(16 << 20);
	struct sfs_cache *c = mkcache(ram, 4096, 1 << 20); /* 256 blocks */
	struct sfs_cache_counters ctr;
	uint8_t blk[4096];
	uint64_t bytes;
	size_t writes;

	for (uint32_t i = 0; i < 2048; i++) {
		pattern(blk, sizeof(blk), i);
		assert_int_equal(
		    sfs_cache_write_run(c, 1000 + i, 1, SFS_IO_DATA, blk), 0);
		sfs_cache_counters(c, &ctr);
		assert_true(ctr.cached_bytes <= 1 << 20);
	}
	assert_int_equal(sfs_cache_sync(c), 0);
	writes = count_ops(ram, SFS_IO_WRITE, &bytes);
	assert_int_equal(bytes, 2048ull * 4096);
	/* Batches of 1/8 of the budget (32 blocks = 128 KiB), not blocks. */
	assert_true(writes <= 2048 / 32 + 2);
	size_t n;
	const struct sfs_io_req *log = sfs_ramdev_log(ram, &n);
	for (size_t i = 0; i + 2 < n; i++) {
		assert_int_equal(log[i].len_bytes, 32 * 4096);
		if (i)
			assert_int_equal(log[i].off_bytes,
					 log[i - 1].off_bytes + 32 * 4096);
	}
	for (uint32_t i = 0; i < 2048; i += 97) {
		pattern(blk, sizeof(blk), i);
		assert_memory_equal(sfs_ramdev_data(ram) + (1000ull + i) * 4096,
				    blk, 4096);
	}
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

static void test_cache_referenced_buffers_never_evicted(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 64 * BS);
	struct sfs_buf *held[10], *b;
	struct sfs_cache_counters ctr;

	for (uint32_t i = 0; i < 10; i++) {
		assert_int_equal(
		    sfs_cache_get(c, 900 + i, SFS_IO_INODE, &held[i]), 0);
		memset(held[i]->data, 0x40 + i, BS);
		if (i % 2)
			sfs_cache_dirty(c, held[i]);
	}
	/* Stream 500 other blocks (some dirty) through the cache. */
	for (uint32_t blk = 0; blk < 500; blk++) {
		if (blk % 3) {
			assert_int_equal(sfs_cache_get(c, blk, SFS_IO_DATA, &b),
					 0);
			sfs_cache_put(c, b);
		} else {
			dirty_block(c, blk, SFS_IO_DATA);
		}
	}
	sfs_cache_counters(c, &ctr);
	assert_true(ctr.cached_bytes <= 64 * BS);
	assert_true(ctr.evictions >= 400);
	sfs_ramdev_clear_log(ram);
	for (uint32_t i = 0; i < 10; i++) {
		assert_int_equal(held[i]->blk, 900 + i);
		for (uint32_t k = 0; k < BS; k++)
			assert_int_equal(held[i]->data[k], 0x40 + i);
		assert_int_equal(sfs_cache_get(c, 900 + i, SFS_IO_INODE, &b),
				 0);
		assert_ptr_equal(b, held[i]);
		sfs_cache_put(c, b);
		sfs_cache_put(c, held[i]);
	}
	/* All ten served from memory: no read reached the device. */
	assert_int_equal(count_ops(ram, SFS_IO_READ, NULL), 0);
	assert_int_equal(sfs_cache_sync(c), 0);
	for (uint32_t i = 1; i < 10; i += 2)
		assert_int_equal(sfs_ramdev_data(ram)[(900 + i) * BS],
				 0x40 + i);
	assert_int_equal(sfs_ramdev_data(ram)[900 * BS], 0);
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

static void test_cache_discard_dirty_never_reaches_device(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 1 << 20);
	struct sfs_cache_counters ctr;
	struct sfs_buf *held, *b;
	const struct sfs_io_req *log;
	size_t n;

	for (uint32_t blk = 50; blk < 60; blk++)
		dirty_block(c, blk, SFS_IO_DATA);
	/* One of them still referenced when discarded. */
	assert_int_equal(sfs_cache_get(c, 55, SFS_IO_DATA, &held), 0);
	sfs_cache_discard(c, 52, 5); /* 52..56 */
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.died_dirty_bytes, 5 * BS);
	assert_int_equal(ctr.dirty_bytes, 5 * BS);

	/* The held buffer is still valid memory with its contents. */
	uint8_t want[BS];
	pattern(want, BS, 55);
	assert_memory_equal(held->data, want, BS);
	sfs_cache_dirty(c, held); /* dead: ignored */
	sfs_cache_put(c, held);

	assert_int_equal(sfs_cache_sync(c), 0);
	log = sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 3);
	assert_int_equal(log[0].off_bytes, 50 * BS);
	assert_int_equal(log[0].len_bytes, 2 * BS);
	assert_int_equal(log[1].off_bytes, 57 * BS);
	assert_int_equal(log[1].len_bytes, 3 * BS);
	for (uint32_t blk = 52; blk < 57; blk++)
		assert_int_equal(sfs_ramdev_data(ram)[blk * BS + 1], 0);

	/* A discarded block is read afresh from the device. */
	sfs_ramdev_clear_log(ram);
	assert_int_equal(sfs_cache_get(c, 55, SFS_IO_DATA, &b), 0);
	assert_int_equal(b->data[1], 0);
	sfs_cache_put(c, b);
	assert_int_equal(count_ops(ram, SFS_IO_READ, NULL), 1);

	/* A huge range (walks the cache instead of the range). */
	dirty_block(c, 700, SFS_IO_DATA);
	sfs_cache_discard(c, 600, 4000000);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.died_dirty_bytes, 6 * BS);
	assert_int_equal(ctr.cached_bytes, 6 * BS); /* 50,51,57,58,59,55 */
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

static void test_cache_read_run_reads_uncached_runs_once(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 1 << 20);
	struct sfs_cache_counters ctr;
	const struct sfs_io_req *log;
	uint8_t *buf = g_malloc(20 * BS), want[BS];
	struct sfs_buf *b;
	size_t n;

	for (uint32_t blk = 200; blk < 220; blk++)
		pattern(sfs_ramdev_data(ram) + blk * BS, BS, blk);
	/* 207 cached (and changed in memory), 208 cached clean. */
	assert_int_equal(sfs_cache_get(c, 207, SFS_IO_DATA, &b), 0);
	memset(b->data, 0x77, BS);
	sfs_cache_dirty(c, b);
	sfs_cache_put(c, b);
	assert_int_equal(sfs_cache_get(c, 208, SFS_IO_DATA, &b), 0);
	sfs_cache_put(c, b);
	sfs_ramdev_clear_log(ram);

	assert_int_equal(sfs_cache_read_run(c, 200, 20, SFS_IO_DATA, buf), 0);
	log = sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 2);
	assert_int_equal(log[0].off_bytes, 200 * BS);
	assert_int_equal(log[0].len_bytes, 7 * BS);
	assert_int_equal(log[1].off_bytes, 209 * BS);
	assert_int_equal(log[1].len_bytes, 11 * BS);
	for (uint32_t blk = 200; blk < 220; blk++) {
		if (blk == 207) {
			assert_int_equal(buf[7 * BS], 0x77);
			continue;
		}
		pattern(want, BS, blk);
		assert_memory_equal(buf + (blk - 200) * BS, want, BS);
	}
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.hits, 2);
	assert_int_equal(ctr.misses, 2 + 18);

	/* Now all cached: a second read issues nothing. */
	sfs_ramdev_clear_log(ram);
	assert_int_equal(sfs_cache_read_run(c, 200, 20, SFS_IO_DATA, buf), 0);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 0);
	assert_int_equal(sfs_cache_read_run(c, 1020, 5, SFS_IO_DATA, buf),
			 -EINVAL);
	g_free(buf);
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

static void test_cache_write_run_then_read_back(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 1 << 20);
	uint8_t *in = g_malloc(16 * BS), *out = g_malloc(16 * BS);
	struct sfs_buf *b;
	size_t n;

	for (uint32_t i = 0; i < 16; i++)
		pattern(in + i * BS, BS, 300 + i);
	/* Block 305 is held by someone: it sees the new bytes. */
	assert_int_equal(sfs_cache_get(c, 305, SFS_IO_DATA, &b), 0);
	sfs_ramdev_clear_log(ram);
	assert_int_equal(sfs_cache_write_run(c, 300, 16, SFS_IO_DATA, in), 0);
	assert_memory_equal(b->data, in + 5 * BS, BS);
	sfs_cache_put(c, b);
	assert_int_equal(sfs_cache_read_run(c, 300, 16, SFS_IO_DATA, out), 0);
	assert_memory_equal(in, out, 16 * BS);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 0);
	assert_int_equal(sfs_cache_sync(c), 0);
	assert_memory_equal(sfs_ramdev_data(ram) + 300 * BS, in, 16 * BS);
	const struct sfs_io_req *log = sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 2);
	assert_int_equal(log[0].len_bytes, 16 * BS);
	g_free(in);
	g_free(out);
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

static void test_cache_writeback_error_keeps_dirty(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_bdev *fd = sfs_faultdev_new(ram);
	struct sfs_cache *c = mkcache(fd, BS, 1 << 20);
	struct sfs_cache_counters ctr;
	uint8_t want[BS];

	dirty_block(c, 10, SFS_IO_DATA);
	dirty_block(c, 11, SFS_IO_DATA);
	dirty_block(c, 20, SFS_IO_INODE);
	sfs_faultdev_arm(fd, SFS_FAULT_WRITE, 1, true);
	assert_int_equal(sfs_cache_sync(c), -EIO);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.dirty_bytes, 3 * BS);
	assert_int_equal(ctr.writebacks, 0);
	assert_int_equal(sfs_ramdev_data(ram)[10 * BS + 1], 0);
	assert_true(sfs_faultdev_fired(fd) >= 1);

	/* A failing flush is an error too, after the writes went out. */
	sfs_faultdev_arm(fd, SFS_FAULT_FLUSH, 1, false);
	assert_int_equal(sfs_cache_sync(c), -EIO);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.dirty_bytes, 0);

	/* Dirty again, fail, disarm, retry: the data gets there. */
	dirty_block(c, 30, SFS_IO_DATA);
	sfs_faultdev_arm(fd, SFS_FAULT_WRITE, 1, false);
	assert_int_equal(sfs_cache_sync(c), -EIO);
	sfs_faultdev_disarm(fd);
	assert_int_equal(sfs_cache_sync(c), 0);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.dirty_bytes, 0);
	const uint32_t written[] = {10, 11, 20, 30};
	for (size_t i = 0; i < G_N_ELEMENTS(written); i++) {
		pattern(want, BS, written[i]);
		assert_memory_equal(sfs_ramdev_data(ram) + written[i] * BS,
				    want, BS);
	}

	/* Eviction write-back failing: the get fails, nothing is lost. */
	sfs_cache_free(c);
	c = mkcache(fd, BS, 64 * BS);
	for (uint32_t blk = 100; blk < 164; blk++)
		dirty_block(c, blk, SFS_IO_DATA);
	sfs_faultdev_arm(fd, SFS_FAULT_WRITE, 1, true);
	struct sfs_buf *b = NULL;
	assert_int_equal(sfs_cache_get(c, 600, SFS_IO_DATA, &b), -EIO);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.dirty_bytes, 64 * BS);
	sfs_faultdev_disarm(fd);
	assert_int_equal(sfs_cache_get(c, 600, SFS_IO_DATA, &b), 0);
	sfs_cache_put(c, b);
	assert_int_equal(sfs_cache_sync(c), 0);
	for (uint32_t blk = 100; blk < 164; blk++) {
		pattern(want, BS, blk);
		assert_memory_equal(sfs_ramdev_data(ram) + blk * BS, want, BS);
	}
	sfs_cache_free(c);
	sfs_bdev_close(fd);
}

static void test_cache_read_error_not_cached(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_bdev *fd = sfs_faultdev_new(ram);
	struct sfs_cache *c = mkcache(fd, BS, 1 << 20);
	struct sfs_cache_counters ctr;
	struct sfs_buf *b;

	sfs_ramdev_data(ram)[3 * BS] = 0x5A;
	sfs_faultdev_arm(fd, SFS_FAULT_READ, 1, false);
	assert_int_equal(sfs_cache_get(c, 3, SFS_IO_DATA, &b), -EIO);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.cached_bytes, 0);
	assert_int_equal(sfs_cache_get(c, 3, SFS_IO_DATA, &b), 0);
	assert_int_equal(b->data[0], 0x5A);
	sfs_cache_put(c, b);
	sfs_cache_free(c);
	sfs_bdev_close(fd);
}

/* ---- writeback policy, journal hooks, read-ahead ---- */

#define SEC SFS_NS_PER_S

/* A preset's policy with a chunk of chunk_blocks (0: the preset's). */
static void use_policy(struct sfs_cache *c, const char *name,
		       uint32_t chunk_blocks)
{
	struct sfs_cache_policy p;

	assert_int_equal(sfs_cache_policy_preset(name, &p), 0);
	if (chunk_blocks)
		p.writeback_chunk_bytes =
		    (uint64_t)chunk_blocks * sfs_cache_block_size(c);
	assert_int_equal(sfs_cache_set_policy(c, &p), 0);
}

/* The i-th log entry is a write of n blocks at blk. */
static void assert_write(struct sfs_bdev *ram, size_t i, uint32_t blk,
			 uint32_t n)
{
	size_t len;
	const struct sfs_io_req *log = sfs_ramdev_log(ram, &len);

	assert_true(i < len);
	assert_int_equal(log[i].op, SFS_IO_WRITE);
	assert_int_equal(log[i].off_bytes, (uint64_t)blk * BS);
	assert_int_equal(log[i].len_bytes, (uint64_t)n * BS);
}

/* Did any write of the log touch blocks [blk, blk+n)? */
static bool log_writes_range(struct sfs_bdev *ram, uint32_t blk, uint32_t n)
{
	size_t len;
	const struct sfs_io_req *log = sfs_ramdev_log(ram, &len);

	for (size_t i = 0; i < len; i++) {
		uint64_t a = log[i].off_bytes, b = a + log[i].len_bytes;

		if (log[i].op == SFS_IO_WRITE && a < (uint64_t)(blk + n) * BS &&
		    b > (uint64_t)blk * BS)
			return true;
	}
	return false;
}

static void test_cache_policy_presets(void **state)
{
	static const struct {
		const char *name;
		uint32_t dirty, bg;
	} want[] = {{"2.6", 40, 10}, {"2.6.22", 10, 5}, {"modern", 20, 10}};
	struct sfs_bdev *ram = sfs_ramdev_new(8 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 1000 * BS);
	struct sfs_cache_counters ctr;
	struct sfs_cache_policy p, q;
	const char *name, *help;

	for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
		assert_int_equal(sfs_cache_policy_preset(want[i].name, &p), 0);
		assert_int_equal(p.dirty_ratio, want[i].dirty);
		assert_int_equal(p.dirty_background_ratio, want[i].bg);
		assert_int_equal(p.dirty_bytes, 0);
		assert_int_equal(p.dirty_background_bytes, 0);
		assert_int_equal(p.dirty_expire_cs, 3000);
		assert_int_equal(p.dirty_writeback_cs, 500);
		assert_int_equal(p.writeback_chunk_bytes, 4 << 20);
		assert_int_equal(p.readahead_max_bytes, 128 << 10);
		assert_int_equal(p.readahead_min_bytes, 16 << 10);
		assert_true(sfs_cache_policy_nth((unsigned)i, &name, &help));
		assert_string_equal(name, want[i].name);
		assert_non_null(strstr(sfs_cache_policy_names(), name));
		/* Limits are percent of the budget. */
		assert_int_equal(sfs_cache_set_policy(c, &p), 0);
		sfs_cache_counters(c, &ctr);
		assert_int_equal(ctr.dirty_limit_bytes,
				 1000ull * BS * want[i].dirty / 100);
		assert_int_equal(ctr.background_limit_bytes,
				 1000ull * BS * want[i].bg / 100);
	}
	assert_false(sfs_cache_policy_nth(3, &name, &help));
	/* The default is "modern". */
	assert_int_equal(sfs_cache_policy_preset(NULL, &q), 0);
	assert_memory_equal(&p, &q, sizeof(p));
	assert_string_equal(SFS_CACHE_POLICY_DEFAULT, "modern");
	assert_int_equal(sfs_cache_policy_preset("2.4", &q), -EINVAL);

	/* _bytes override the ratios; background >= dirty is halved. */
	p.dirty_bytes = 300 * BS;
	p.dirty_background_bytes = 50 * BS;
	assert_int_equal(sfs_cache_set_policy(c, &p), 0);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.dirty_limit_bytes, 300 * BS);
	assert_int_equal(ctr.background_limit_bytes, 50 * BS);
	p.dirty_background_bytes = 400 * BS;
	assert_int_equal(sfs_cache_set_policy(c, &p), 0);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.background_limit_bytes, 150 * BS);
	sfs_cache_get_policy(c, &q);
	assert_memory_equal(&p, &q, sizeof(p));

	/* Bad policies change nothing. */
	q = p;
	q.dirty_ratio = 101;
	assert_int_equal(sfs_cache_set_policy(c, &q), -EINVAL);
	q = p;
	q.writeback_chunk_bytes = 0;
	assert_int_equal(sfs_cache_set_policy(c, &q), -EINVAL);
	q = p;
	q.readahead_min_bytes = q.readahead_max_bytes + 1;
	assert_int_equal(sfs_cache_set_policy(c, &q), -EINVAL);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.dirty_limit_bytes, 300 * BS);
	sfs_cache_free(c);

	/* A new cache has no policy: all zero, no limits, no deadline. */
	c = mkcache(ram, BS, 1000 * BS);
	sfs_cache_get_policy(c, &q);
	assert_int_equal(q.dirty_ratio, 0);
	assert_int_equal(q.readahead_max_bytes, 0);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.dirty_limit_bytes, 0);
	assert_int_equal(ctr.budget_bytes, 1000 * BS);
	dirty_block(c, 3, SFS_IO_DATA);
	assert_int_equal(sfs_cache_next_deadline(c), SFS_CACHE_NO_DEADLINE);
	assert_int_equal(sfs_cache_tick(c), 0);
	assert_int_equal(count_ops(ram, SFS_IO_WRITE, NULL), 0);
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

static void test_cache_background_threshold(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(8 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 1024 * BS);
	struct sfs_clock *clk = sfs_clock_new_virtual();
	struct sfs_cache_counters ctr;
	size_t n;

	sfs_cache_set_clock(c, clk);
	/* modern on 1024 blocks: background above 102.4, dirty 204.8. */
	use_policy(c, "modern", 16);
	sfs_clock_advance(clk, SEC);
	for (uint32_t blk = 500; blk < 600; blk++)
		dirty_block(c, blk, SFS_IO_DATA);
	/* 100 blocks: under the threshold, nothing due before expiry (31 s;
	 * the flusher wakes at 5, 10, ... s). */
	assert_int_equal(sfs_cache_next_deadline(c), 35 * SEC);
	assert_int_equal(sfs_cache_tick(c), 0);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 0);

	/* 110 blocks: over it; the next tick writes the 16 oldest, sorted
	 * and merged, and stops once at or below the threshold (94). */
	for (uint32_t blk = 109; blk >= 100; blk--)
		dirty_block(c, blk, SFS_IO_DATA);
	assert_int_equal(sfs_cache_next_deadline(c), SEC); /* now */
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 0); /* the writer did not write */
	assert_int_equal(sfs_cache_tick(c), 0);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 1);
	assert_write(ram, 0, 500, 16);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.dirty_bytes, 94 * BS);
	assert_int_equal(ctr.wb_bytes[SFS_WB_BACKGROUND], 16 * BS);
	assert_int_equal(ctr.throttle_events, 0);
	assert_true(sfs_cache_next_deadline(c) > SEC);
	assert_int_equal(sfs_cache_tick(c), 0);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 1);

	/* 144 blocks: three chunks, oldest first, down to 96. */
	sfs_ramdev_clear_log(ram);
	for (uint32_t blk = 200; blk < 250; blk++)
		dirty_block(c, blk, SFS_IO_DATA);
	assert_int_equal(sfs_cache_tick(c), 0);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 3);
	assert_write(ram, 0, 516, 16);
	assert_write(ram, 1, 532, 16);
	assert_write(ram, 2, 548, 16);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.dirty_bytes, 96 * BS);
	assert_int_equal(ctr.wb_bytes[SFS_WB_BACKGROUND], 64 * BS);
	assert_int_equal(ctr.writebacks, 64);
	sfs_cache_free(c);
	sfs_clock_free(clk);
	sfs_bdev_close(ram);
}

static void test_cache_expiry_after_30s(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(8 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 1024 * BS);
	struct sfs_clock *clk = sfs_clock_new_virtual();
	struct sfs_cache_counters ctr;
	size_t n;

	sfs_cache_set_clock(c, clk);
	use_policy(c, "modern", 0);
	dirty_block(c, 7, SFS_IO_INODE); /* at t = 0 */
	assert_int_equal(sfs_cache_next_deadline(c), 30 * SEC);
	/* The flusher wakes every 5 s; nothing is 30 s old before t = 30. */
	for (sfs_ns_t t = 5 * SEC; t <= 25 * SEC; t += 5 * SEC) {
		sfs_clock_sleep_until(clk, t);
		assert_int_equal(sfs_cache_tick(c), 0);
		if (t == 10 * SEC) {
			sfs_clock_sleep_until(clk, 12 * SEC);
			dirty_block(c, 9, SFS_IO_INODE); /* at t = 12 */
		}
	}
	sfs_clock_sleep_until(clk, 30 * SEC - 10 * SFS_NS_PER_MS);
	assert_int_equal(sfs_cache_tick(c), 0);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 0);
	assert_int_equal(sfs_cache_next_deadline(c), 30 * SEC);

	/* The first wakeup at 30 s writes block 7 only (9 is 18 s old). */
	sfs_clock_sleep_until(clk, 30 * SEC);
	assert_int_equal(sfs_cache_tick(c), 0);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 1);
	assert_write(ram, 0, 7, 1);
	assert_true(sfs_cache_is_dirty(c, 9));
	assert_false(sfs_cache_is_dirty(c, 7));
	/* 9 is due at 42 s: the first wakeup after that is 45 s. */
	assert_int_equal(sfs_cache_next_deadline(c), 45 * SEC);
	sfs_clock_sleep_until(clk, 44 * SEC);
	assert_int_equal(sfs_cache_tick(c), 0);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 1);
	/* A late tick (47 s) runs the 45 s wakeup. */
	sfs_clock_sleep_until(clk, 47 * SEC);
	assert_int_equal(sfs_cache_tick(c), 0);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 2);
	assert_write(ram, 1, 9, 1);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.wb_bytes[SFS_WB_PERIODIC], 2 * BS);
	assert_int_equal(ctr.dirty_bytes, 0);
	assert_int_equal(sfs_cache_next_deadline(c), SFS_CACHE_NO_DEADLINE);
	sfs_cache_free(c);
	sfs_clock_free(clk);
	sfs_bdev_close(ram);
}

/*
 * dbench's mechanism (table B of doc/results.md): under the 2.6 limits, data that is
 * deleted within 30 s of being written, while under the background
 * threshold, never reaches the disk.  The same data kept is written at
 * the first flusher wakeup after 30 s.
 */
static void test_cache_freed_before_expiry_never_written(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(8 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 1024 * BS);
	struct sfs_clock *clk = sfs_clock_new_virtual();
	struct sfs_cache_counters ctr;
	uint8_t *data = g_malloc0(60 * BS);
	size_t n;

	sfs_cache_set_clock(c, clk);
	use_policy(c, "2.6", 0);
	/* "file A" (60 blocks) and "file B" (20 blocks) at t = 0..1 s. */
	assert_int_equal(sfs_cache_write_run(c, 100, 60, SFS_IO_DATA, data), 0);
	sfs_clock_advance(clk, SEC);
	assert_int_equal(sfs_cache_write_run(c, 300, 20, SFS_IO_DATA, data), 0);
	for (sfs_ns_t t = 2 * SEC; t <= 20 * SEC; t += SEC) {
		sfs_clock_sleep_until(clk, t);
		assert_int_equal(sfs_cache_tick(c), 0);
	}
	/* A is deleted at 20 s; B is kept. */
	sfs_cache_discard(c, 100, 60);
	for (sfs_ns_t t = 21 * SEC; t <= 60 * SEC; t += SEC) {
		sfs_clock_sleep_until(clk, t);
		assert_int_equal(sfs_cache_tick(c), 0);
	}
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 1);
	assert_write(ram, 0, 300, 20);
	assert_false(log_writes_range(ram, 100, 60));
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.died_dirty_bytes, 60 * BS);
	assert_int_equal(ctr.wb_bytes[SFS_WB_PERIODIC], 20 * BS);
	assert_int_equal(ctr.wb_bytes[SFS_WB_BACKGROUND], 0);
	assert_int_equal(ctr.throttle_events, 0);
	assert_int_equal(ctr.peak_dirty_bytes, 80 * BS);
	g_free(data);
	sfs_cache_free(c);
	sfs_clock_free(clk);
	sfs_bdev_close(ram);
}

static void test_cache_throttle_writer_writes_back(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(8 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 1024 * BS);
	struct sfs_cache_counters ctr;
	uint8_t *data = g_malloc0(64 * BS);
	struct sfs_buf *held;
	size_t n;

	/* No clock, no ticks: only the writer can write. */
	use_policy(c, "modern", 32); /* dirty limit 204.8 blocks */
	for (uint32_t blk = 1000; blk < 1204; blk++)
		dirty_block(c, blk, SFS_IO_DATA);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 0);
	/* The 205th dirty block is over the limit: its writer writes the
	 * oldest chunk itself and gets back under the limit. */
	dirty_block(c, 1204, SFS_IO_DATA);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 1);
	assert_write(ram, 0, 1000, 32);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.throttle_events, 1);
	assert_int_equal(ctr.wb_bytes[SFS_WB_THROTTLE], 32 * BS);
	assert_int_equal(ctr.dirty_bytes, 173 * BS);

	/* write_run past the limit: chunks until under it (237 -> 173);
	 * a referenced dirty buffer (the oldest) is skipped. */
	sfs_ramdev_clear_log(ram);
	assert_int_equal(sfs_cache_get(c, 1032, SFS_IO_DATA, &held), 0);
	assert_int_equal(sfs_cache_write_run(c, 2000, 64, SFS_IO_DATA, data),
			 0);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 2);
	assert_write(ram, 0, 1033, 32);
	assert_write(ram, 1, 1065, 32);
	assert_true(sfs_cache_is_dirty(c, 1032));
	sfs_cache_put(c, held);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.throttle_events, 2);
	assert_int_equal(ctr.wb_bytes[SFS_WB_THROTTLE], 96 * BS);
	assert_int_equal(ctr.dirty_bytes, 173 * BS);
	assert_int_equal(sfs_cache_dirty_bytes(c), 173 * BS);
	assert_true(ctr.peak_dirty_bytes <= 237 * BS);
	g_free(data);
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

static void test_cache_pinned_never_written_until_unpinned(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 64 * BS);
	struct sfs_clock *clk = sfs_clock_new_virtual();
	struct sfs_cache_counters ctr;
	struct sfs_buf *pinned[10], *extra[70], *b;

	sfs_cache_set_clock(c, clk);
	use_policy(c, "modern", 8);
	/* Ten dirty buffers pinned, not referenced (the journal's running
	 * transaction); the first pinned twice (pins nest). */
	for (uint32_t i = 0; i < 10; i++) {
		assert_int_equal(
		    sfs_cache_get_new(c, 900 + i, SFS_IO_INODE, &pinned[i]), 0);
		memset(pinned[i]->data, 0x40 + i, BS);
		sfs_cache_dirty(c, pinned[i]);
		sfs_cache_pin(c, pinned[i]);
		sfs_cache_put(c, pinned[i]);
	}
	sfs_cache_pin(c, pinned[0]);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.pinned_blocks, 10);
	assert_int_equal(ctr.dirty_bytes, 10 * BS);
	/* Pinned dirty data is not the flusher's: no deadline, no throttle. */
	assert_int_equal(sfs_cache_next_deadline(c), SFS_CACHE_NO_DEADLINE);

	/* Eviction and throttling: 500 blocks through the 64-block cache. */
	for (uint32_t blk = 0; blk < 500; blk++) {
		if (blk % 3) {
			assert_int_equal(sfs_cache_get(c, blk, SFS_IO_DATA, &b),
					 0);
			sfs_cache_put(c, b);
		} else {
			dirty_block(c, blk, SFS_IO_DATA);
		}
	}
	/* Expiry and background: a minute of ticks. */
	for (sfs_ns_t t = SEC; t <= 60 * SEC; t += SEC) {
		sfs_clock_sleep_until(clk, t);
		assert_int_equal(sfs_cache_tick(c), 0);
	}
	/* Sync writes everything else and returns. */
	assert_int_equal(sfs_cache_sync(c), 0);
	sfs_cache_counters(c, &ctr);
	assert_true(ctr.evictions >= 400);
	assert_true(ctr.throttle_events > 0);
	assert_true(ctr.wb_bytes[SFS_WB_SYNC] + ctr.wb_bytes[SFS_WB_THROTTLE] +
			ctr.wb_bytes[SFS_WB_EVICTION] >
		    0);
	assert_int_equal(ctr.dirty_bytes, 10 * BS);
	assert_true(ctr.cached_bytes <= 64 * BS);
	assert_false(log_writes_range(ram, 900, 10));
	for (uint32_t i = 0; i < 10; i++)
		assert_true(sfs_cache_is_dirty(c, 900 + i));

	/* Never evicted: served from memory. */
	sfs_ramdev_clear_log(ram);
	for (uint32_t i = 0; i < 10; i++) {
		assert_int_equal(sfs_cache_get(c, 900 + i, SFS_IO_INODE, &b),
				 0);
		assert_ptr_equal(b, pinned[i]);
		assert_int_equal(b->data[0], 0x40 + i);
		sfs_cache_put(c, b);
	}
	assert_int_equal(count_ops(ram, SFS_IO_READ, NULL), 0);

	/* Pinned buffers beyond the budget: the cache grows, counted. */
	for (uint32_t i = 0; i < 70; i++) {
		assert_int_equal(
		    sfs_cache_get_new(c, 700 + i, SFS_IO_DIR, &extra[i]), 0);
		sfs_cache_dirty(c, extra[i]);
		sfs_cache_pin(c, extra[i]);
		sfs_cache_put(c, extra[i]);
	}
	sfs_cache_counters(c, &ctr);
	assert_true(ctr.cached_bytes > 64 * BS);
	assert_true(ctr.over_budget_events > 0);
	assert_int_equal(ctr.pinned_blocks, 80);
	assert_int_equal(sfs_cache_sync(c), 0);
	assert_int_equal(count_ops(ram, SFS_IO_WRITE, NULL), 0);

	/* Unpinned (the first needs two), they go out with the next sync. */
	for (uint32_t i = 0; i < 10; i++)
		sfs_cache_unpin(c, pinned[i]);
	for (uint32_t i = 0; i < 70; i++)
		sfs_cache_unpin(c, extra[i]);
	assert_int_equal(sfs_cache_sync(c), 0);
	assert_false(log_writes_range(ram, 900, 1));
	assert_true(log_writes_range(ram, 901, 9));
	assert_true(log_writes_range(ram, 700, 70));
	sfs_ramdev_clear_log(ram);
	sfs_cache_unpin(c, pinned[0]);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.pinned_blocks, 0);
	/* Unpinned dirty data is the flusher's again: due at expiry. */
	assert_true(sfs_cache_next_deadline(c) != SFS_CACHE_NO_DEADLINE);
	sfs_clock_sleep_until(clk, 120 * SEC);
	assert_int_equal(sfs_cache_tick(c), 0);
	assert_write(ram, 0, 900, 1);
	assert_int_equal(sfs_ramdev_data(ram)[900 * BS], 0x40);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.dirty_bytes, 0);
	assert_true(ctr.cached_bytes <= 64 * BS);

	/* Discarded while pinned: dies dirty, freed at the last unpin. */
	assert_int_equal(sfs_cache_get_new(c, 950, SFS_IO_DIR, &b), 0);
	sfs_cache_dirty(c, b);
	sfs_cache_pin(c, b);
	sfs_cache_put(c, b);
	sfs_cache_discard(c, 950, 1);
	assert_false(sfs_cache_is_dirty(c, 950));
	sfs_cache_unpin(c, b);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.died_dirty_bytes, BS);
	assert_int_equal(ctr.pinned_blocks, 0);
	sfs_cache_free(c);
	sfs_clock_free(clk);
	sfs_bdev_close(ram);
}

struct written_log {
	GArray *blks; /* sfs_blk_t, in callback order */
	struct sfs_cache *c;
	bool clean_when_called; /* every block was clean in its callback */
};

static void on_written(void *ctx, sfs_blk_t blk)
{
	struct written_log *w = ctx;

	g_array_append_val(w->blks, blk);
	if (sfs_cache_is_dirty(w->c, blk))
		w->clean_when_called = false;
}

/* Each of blks[0..n) appears exactly once in w (order free). */
static void assert_written_once(struct written_log *w, const uint32_t *blks,
				size_t n)
{
	assert_int_equal(w->blks->len, n);
	for (size_t i = 0; i < n; i++) {
		unsigned seen = 0;

		for (guint k = 0; k < w->blks->len; k++)
			seen += g_array_index(w->blks, sfs_blk_t, k) == blks[i];
		assert_int_equal(seen, 1);
	}
	g_array_set_size(w->blks, 0);
}

static void test_cache_written_callback_once_per_block(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_bdev *fd = sfs_faultdev_new(ram);
	struct sfs_cache *c = mkcache(fd, BS, 64 * BS);
	struct written_log w = {g_array_new(FALSE, FALSE, sizeof(sfs_blk_t)), c,
				true};
	static const uint32_t synced[] = {20, 21, 22, 23, 40};
	static const uint32_t listed[] = {41, 43};
	uint32_t evicted[8];
	struct sfs_buf *b;

	sfs_cache_set_written_cb(c, on_written, &w);
	/* sync: once per block, even when merged into one request */
	for (size_t i = 0; i < G_N_ELEMENTS(synced); i++)
		dirty_block(c, synced[i], SFS_IO_DATA);
	assert_int_equal(sfs_cache_sync(c), 0);
	assert_written_once(&w, synced, G_N_ELEMENTS(synced));
	/* nothing dirty: no callback */
	assert_int_equal(sfs_cache_sync(c), 0);
	assert_int_equal(w.blks->len, 0);

	/* write_blocks */
	for (uint32_t blk = 41; blk < 45; blk++)
		dirty_block(c, blk, SFS_IO_DATA);
	assert_int_equal(sfs_cache_write_blocks(c, listed, 2), 0);
	assert_written_once(&w, listed, 2);
	assert_int_equal(sfs_cache_sync(c), 0);
	g_array_set_size(w.blks, 0);

	/* eviction: the 8 oldest of a full dirty cache */
	for (uint32_t blk = 100; blk < 164; blk++)
		dirty_block(c, blk, SFS_IO_DATA);
	assert_int_equal(sfs_cache_get(c, 500, SFS_IO_DATA, &b), 0);
	sfs_cache_put(c, b);
	for (uint32_t i = 0; i < 8; i++)
		evicted[i] = 100 + i;
	assert_written_once(&w, evicted, 8);

	/* a failed write-back: no callback, blocks stay dirty */
	sfs_faultdev_arm(fd, SFS_FAULT_WRITE, 1, true);
	assert_int_equal(sfs_cache_sync(c), -EIO);
	assert_int_equal(w.blks->len, 0);
	assert_true(sfs_cache_is_dirty(c, 108));
	sfs_faultdev_disarm(fd);
	assert_int_equal(sfs_cache_sync(c), 0);
	assert_int_equal(w.blks->len, 56);
	assert_true(w.clean_when_called);

	/* removed: no more calls */
	sfs_cache_set_written_cb(c, NULL, NULL);
	dirty_block(c, 30, SFS_IO_DATA);
	assert_int_equal(sfs_cache_sync(c), 0);
	assert_int_equal(w.blks->len, 56);
	g_array_free(w.blks, TRUE);
	sfs_cache_free(c);
	sfs_bdev_close(fd);
}

static void test_cache_write_blocks_writes_exactly_those(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_bdev *fd = sfs_faultdev_new(ram);
	struct sfs_cache *c = mkcache(fd, BS, 1 << 20);
	struct sfs_cache_counters ctr;
	const sfs_blk_t list[] = {14, 30, 12, 15, 40, 13, 12, 50};
	struct sfs_buf *b, *p15;
	size_t n;

	for (uint32_t blk = 10; blk < 20; blk++)
		dirty_block(c, blk, SFS_IO_DATA);
	dirty_block(c, 30, SFS_IO_DATA);
	/* 15 pinned, 40 not cached, 50 cached clean, 12 listed twice */
	assert_int_equal(sfs_cache_get(c, 15, SFS_IO_DATA, &p15), 0);
	sfs_cache_pin(c, p15);
	assert_int_equal(sfs_cache_get(c, 50, SFS_IO_DATA, &b), 0);
	sfs_cache_put(c, b);
	sfs_ramdev_clear_log(ram);

	assert_int_equal(sfs_cache_write_blocks(c, list, G_N_ELEMENTS(list)),
			 0);
	const struct sfs_io_req *log = sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 2); /* no flush */
	assert_write(ram, 0, 12, 3);
	assert_write(ram, 1, 30, 1);
	assert_int_equal(log[1].cat, SFS_IO_DATA);
	for (uint32_t blk = 10; blk < 20; blk++)
		assert_int_equal(sfs_cache_is_dirty(c, blk),
				 blk < 12 || blk > 14);
	assert_false(sfs_cache_is_dirty(c, 30));
	assert_false(sfs_cache_is_dirty(c, 40));
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.wb_bytes[SFS_WB_EXPLICIT], 4 * BS);
	assert_int_equal(ctr.writebacks, 4);
	assert_int_equal(sfs_cache_write_blocks(c, list, 0), 0);
	assert_int_equal(sfs_cache_write_blocks(c, NULL, 3), -EINVAL);

	/* Failure: -EIO, the blocks stay dirty, and a retry writes them. */
	const sfs_blk_t two[] = {16, 17};
	sfs_faultdev_arm(fd, SFS_FAULT_WRITE, 1, false);
	assert_int_equal(sfs_cache_write_blocks(c, two, 2), -EIO);
	assert_true(sfs_cache_is_dirty(c, 16));
	assert_true(sfs_cache_is_dirty(c, 17));
	assert_int_equal(sfs_cache_write_blocks(c, two, 2), 0);
	assert_false(sfs_cache_is_dirty(c, 16));
	assert_true(sfs_cache_is_dirty(c, 15));
	sfs_cache_unpin(c, p15);
	sfs_cache_put(c, p15);
	sfs_cache_free(c);
	sfs_bdev_close(fd);
}

static void test_cache_readahead_counts_and_hits(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(1 << 20);
	struct sfs_cache *c = mkcache(ram, BS, 64 * BS);
	struct sfs_cache_counters ctr;
	uint8_t *buf = g_malloc(8 * BS), want[BS];
	struct sfs_buf *b;
	size_t n;

	for (uint32_t blk = 100; blk < 140; blk++)
		pattern(sfs_ramdev_data(ram) + blk * BS, BS, blk);
	assert_int_equal(sfs_cache_get(c, 103, SFS_IO_DATA, &b), 0);
	sfs_cache_put(c, b);
	sfs_ramdev_clear_log(ram);
	/* 100..107 with 103 cached: two requests, 7 blocks read ahead. */
	assert_int_equal(sfs_cache_readahead(c, 100, 8, SFS_IO_DATA), 0);
	const struct sfs_io_req *log = sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 2);
	assert_int_equal(log[0].op, SFS_IO_READ);
	assert_int_equal(log[0].off_bytes, 100 * BS);
	assert_int_equal(log[0].len_bytes, 3 * BS);
	assert_int_equal(log[1].off_bytes, 104 * BS);
	assert_int_equal(log[1].len_bytes, 4 * BS);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.readahead_blocks, 7);
	assert_int_equal(ctr.misses, 1); /* only the get of 103 */

	/* Used later: hits, read-ahead hits, from memory. */
	sfs_ramdev_clear_log(ram);
	assert_int_equal(sfs_cache_read_run(c, 100, 4, SFS_IO_DATA, buf), 0);
	assert_int_equal(sfs_cache_get(c, 105, SFS_IO_DATA, &b), 0);
	pattern(want, BS, 105);
	assert_memory_equal(b->data, want, BS);
	sfs_cache_put(c, b);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 0);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.readahead_hits, 4); /* 100, 101, 102, 105 */
	assert_int_equal(ctr.hits, 5);		 /* ... and 103 */

	/* Evicted unused: wasted (104, 106, 107). */
	for (uint32_t blk = 200; blk < 300; blk++) {
		assert_int_equal(sfs_cache_get(c, blk, SFS_IO_DATA, &b), 0);
		sfs_cache_put(c, b);
	}
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.readahead_wasted, 3);
	assert_int_equal(sfs_cache_readahead(c, 1020, 8, SFS_IO_DATA), -EINVAL);

	/* Nothing evictable (all referenced): read-ahead reads nothing. */
	struct sfs_buf *held[64];
	for (uint32_t i = 0; i < 64; i++)
		assert_int_equal(
		    sfs_cache_get(c, 400 + i, SFS_IO_DATA, &held[i]), 0);
	sfs_ramdev_clear_log(ram);
	assert_int_equal(sfs_cache_readahead(c, 500, 8, SFS_IO_DATA), 0);
	sfs_ramdev_log(ram, &n);
	assert_int_equal(n, 0);
	for (uint32_t i = 0; i < 64; i++)
		sfs_cache_put(c, held[i]);
	g_free(buf);
	sfs_cache_free(c);
	sfs_bdev_close(ram);
}

/* On a timing device, each write-back batch is plugged: queued, charged
 * at unplug in the scheduler's order, and (emulate) waited for. */
static void test_cache_writeback_plugged_on_timing_device(void **state)
{
	struct sfs_bdev *ram = sfs_ramdev_new(64 << 20);
	struct sfs_clock *clk = sfs_clock_new_virtual();
	struct sfs_timedev_opts o = {.model = "hdd-2009",
				     .mode = SFS_TIMEDEV_EMULATE};
	struct sfs_timedev_counters tc;
	struct sfs_cache_counters ctr;
	struct sfs_bdev *td = NULL;
	struct sfs_cache *c;
	char *err = NULL;

	assert_int_equal(sfs_timedev_new(ram, clk, &o, &td, &err), 0);
	c = mkcache(td, BS, 1024 * BS);
	sfs_cache_set_clock(c, clk);
	use_policy(c, "modern", 0);
	/* Scattered blocks, dirtied at t = 0, expire at 30 s. */
	for (uint32_t i = 0; i < 40; i++)
		dirty_block(c, (i * 7919u) % 60000u, SFS_IO_DATA);
	sfs_clock_sleep_until(clk, 30 * SEC);
	assert_int_equal(sfs_cache_tick(c), 0);
	sfs_cache_counters(c, &ctr);
	assert_int_equal(ctr.wb_bytes[SFS_WB_PERIODIC], 40 * BS);
	assert_int_equal(sfs_timedev_counters(td, &tc), 0);
	assert_int_equal(tc.reqs[SFS_IO_WRITE], 40);
	assert_int_equal(tc.dev_reqs[SFS_IO_WRITE], 40);
	/* The batch was charged and waited for before tick returned. */
	assert_true(tc.busy_ns > 0);
	assert_true(sfs_clock_now_ns(clk) >= tc.busy_until_ns);
	assert_true(sfs_clock_now_ns(clk) > 30 * SEC);
	/* Nothing dirty: no deadline.  A block dirtied now is due 30 s
	 * later, at the first 5 s wakeup from then. */
	assert_true(sfs_cache_next_deadline(c) == SFS_CACHE_NO_DEADLINE);
	sfs_ns_t due = sfs_clock_now_ns(clk) + 30 * SEC;
	dirty_block(c, 5, SFS_IO_DATA);
	assert_true(sfs_cache_next_deadline(c) >= due);
	assert_true(sfs_cache_next_deadline(c) < due + 5 * SEC);
	sfs_cache_free(c);
	sfs_bdev_close(td);
	sfs_clock_free(clk);
}

/* ---- read-ahead through the engine ---- */

struct ra_env {
	char *dir, *img;
	sfs_ino_t ino;
	GArray *reads; /* uint64_t: length of each data read request */
};

static int ra_hook(void *arg, const struct sfs_io_req *req, bool done,
		   int result)
{
	struct ra_env *e = arg;

	if (!done && req->op == SFS_IO_READ && req->cat == SFS_IO_DATA)
		g_array_append_val(e->reads, req->len_bytes);
	return 0;
}

#define RA_FILE_BLOCKS 256u /* 1 MiB of 4 KiB blocks */

/* An image holding one 1 MiB file (pattern by block), closed. */
static void ra_setup(struct ra_env *e)
{
	uint8_t *data = g_malloc(RA_FILE_BLOCKS * 4096);
	struct sfs_attr a;
	struct sfs_fs *fs;
	size_t n;

	e->dir = sfs_test_tmpdir();
	e->img = g_build_filename(e->dir, "ra.img", NULL);
	e->reads = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	assert_int_equal(sfs_test_mkimage(e->img, 64 << 20, 4096), 0);
	fs = sfs_test_open(e->img, "mem=8M");
	assert_int_equal(
	    sfs_mknod(fs, SFS_ROOT_INO, "f", SFS_S_IFREG | 0644, 0, 0, 0, &a),
	    0);
	e->ino = a.ino;
	for (uint32_t i = 0; i < RA_FILE_BLOCKS; i++)
		pattern(data + (size_t)i * 4096, 4096, i);
	for (uint32_t off = 0; off < RA_FILE_BLOCKS * 4096; off += 65536) {
		assert_int_equal(
		    sfs_write(fs, e->ino, off, data + off, 65536, &n), 0);
		assert_int_equal(n, 65536);
	}
	assert_int_equal(sfs_fs_close(fs), 0);
	g_free(data);
}

/* The engine on the image with a cold cache, the modern policy and the
 * request hook. */
static struct sfs_fs *ra_open(struct ra_env *e)
{
	struct sfs_fs *fs = sfs_test_open(e->img, "mem=8M");

	use_policy(fs->cache, "modern", 0);
	sfs_bdev_set_hook(sfs_fs_bdev(fs), ra_hook, e);
	return fs;
}

static void ra_teardown(struct ra_env *e)
{
	sfs_test_rmtree(e->dir);
	g_array_free(e->reads, TRUE);
	g_free(e->img);
	g_free(e->dir);
}

/* Read block blk of the file (4 KiB), check it, return the bytes of data
 * read requests it caused and the read-ahead blocks it added. */
static uint64_t ra_read(struct sfs_fs *fs, struct ra_env *e, uint32_t blk,
			uint64_t *ra_blocks)
{
	struct sfs_cache_counters before, after;
	uint8_t got[4096], want[4096];
	guint first = e->reads->len;
	uint64_t bytes = 0;
	size_t n;

	sfs_cache_counters(fs->cache, &before);
	assert_int_equal(
	    sfs_read(fs, e->ino, (uint64_t)blk * 4096, 4096, got, &n), 0);
	assert_int_equal(n, 4096);
	pattern(want, 4096, blk);
	assert_memory_equal(got, want, 4096);
	sfs_cache_counters(fs->cache, &after);
	*ra_blocks = after.readahead_blocks - before.readahead_blocks;
	for (guint i = first; i < e->reads->len; i++)
		bytes += g_array_index(e->reads, uint64_t, i);
	return bytes;
}

static void test_cache_readahead_sequential_grows_then_hits(void **state)
{
	/* Windows: 16 KiB after the first read, then doubling to 128 KiB
	 * each time the reader enters the newest window; clipped at EOF. */
	static const struct {
		uint32_t at, blocks;
	} win[] = {{0, 4},    {1, 8},	 {5, 16},  {13, 32},
		   {29, 32},  {61, 32},	 {93, 32}, {125, 32},
		   {157, 32}, {189, 32}, {221, 3}};
	struct ra_env e = {0};
	struct sfs_cache_counters ctr;
	struct sfs_fs *fs;
	size_t w = 0;

	ra_setup(&e);
	fs = ra_open(&e);
	for (uint32_t blk = 0; blk < RA_FILE_BLOCKS; blk++) {
		uint64_t ra, bytes = ra_read(fs, &e, blk, &ra);
		uint64_t want = 0;

		if (w < G_N_ELEMENTS(win) && win[w].at == blk)
			want = win[w++].blocks;
		assert_int_equal(ra, want);
		/* Only the very first read misses; the rest are read ahead. */
		assert_int_equal(bytes, (want + (blk == 0)) * 4096);
	}
	assert_int_equal(w, G_N_ELEMENTS(win));
	sfs_cache_counters(fs->cache, &ctr);
	assert_int_equal(ctr.readahead_blocks, RA_FILE_BLOCKS - 1);
	assert_int_equal(ctr.readahead_hits, RA_FILE_BLOCKS - 1);
	assert_int_equal(ctr.readahead_wasted, 0);
	/* The requests grew: the largest is the 128 KiB window. */
	uint64_t largest = 0;
	for (guint i = 0; i < e.reads->len; i++)
		largest = MAX(largest, g_array_index(e.reads, uint64_t, i));
	assert_int_equal(largest, 128 << 10);
	assert_int_equal(g_array_index(e.reads, uint64_t, 0), 4096);
	assert_int_equal(g_array_index(e.reads, uint64_t, 1), 16384);
	assert_int_equal(sfs_fs_close(fs), 0);

	/* Without a read-ahead window in the policy: no read-ahead. */
	fs = ra_open(&e);
	struct sfs_cache_policy p;
	sfs_cache_get_policy(fs->cache, &p);
	p.readahead_max_bytes = 0;
	assert_int_equal(sfs_cache_set_policy(fs->cache, &p), 0);
	for (uint32_t blk = 0; blk < 40; blk++) {
		uint64_t ra;

		assert_int_equal(ra_read(fs, &e, blk, &ra), 4096);
		assert_int_equal(ra, 0);
	}
	assert_int_equal(sfs_fs_close(fs), 0);
	ra_teardown(&e);
}

static void test_cache_readahead_random_reads_do_not(void **state)
{
	struct ra_env e = {0};
	struct sfs_cache_counters ctr;
	GRand *rnd = g_rand_new_with_seed(0xCAC4E);
	uint32_t order[RA_FILE_BLOCKS - 1], done[64], nread = 0;
	struct sfs_fs *fs;

	ra_setup(&e);
	fs = ra_open(&e);
	/* Blocks 1..255 in a seeded random order; a block right after the
	 * previous one read would be sequential and is skipped. */
	for (uint32_t i = 0; i < G_N_ELEMENTS(order); i++)
		order[i] = i + 1;
	for (uint32_t i = G_N_ELEMENTS(order) - 1; i > 0; i--) {
		uint32_t j = (uint32_t)g_rand_int_range(rnd, 0, (gint32)i + 1);
		uint32_t t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (uint32_t i = 0; i < 64; i++) {
		uint64_t ra;

		if (nread && order[i] == done[nread - 1] + 1)
			continue; /* would be sequential: skip it */
		assert_int_equal(ra_read(fs, &e, order[i], &ra), 4096);
		assert_int_equal(ra, 0);
		done[nread++] = order[i];
	}
	sfs_cache_counters(fs->cache, &ctr);
	assert_int_equal(ctr.readahead_blocks, 0);

	/* A read at offset 0 starts a stream: 16 KiB (blocks 1..4), of
	 * which those not read yet come from the device. */
	uint64_t ra, want = 4;
	for (uint32_t i = 0; i < nread; i++)
		want -= done[i] <= 4;
	ra_read(fs, &e, 0, &ra);
	assert_int_equal(ra, want);
	assert_int_equal(sfs_fs_close(fs), 0);
	g_rand_free(rnd);
	ra_teardown(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cache_new_rejects_bad_block_size),
	    cmocka_unit_test(test_cache_hit_miss_counts),
	    cmocka_unit_test(test_cache_get_new_does_not_read),
	    cmocka_unit_test(test_cache_checked_note_cleared_by_changes),
	    cmocka_unit_test(test_cache_block_memory_taken_by_new_buffer),
	    cmocka_unit_test(test_cache_block_memory_evicts_clean),
	    cmocka_unit_test(test_cache_sync_writes_dirty_then_flushes),
	    cmocka_unit_test(test_cache_sync_merges_adjacent_blocks),
	    cmocka_unit_test(test_cache_budget_respected_with_eviction),
	    cmocka_unit_test(test_cache_dirty_evicted_after_batch_writeback),
	    cmocka_unit_test(test_cache_streaming_writer_issues_large_requests),
	    cmocka_unit_test(test_cache_referenced_buffers_never_evicted),
	    cmocka_unit_test(test_cache_discard_dirty_never_reaches_device),
	    cmocka_unit_test(test_cache_read_run_reads_uncached_runs_once),
	    cmocka_unit_test(test_cache_write_run_then_read_back),
	    cmocka_unit_test(test_cache_writeback_error_keeps_dirty),
	    cmocka_unit_test(test_cache_read_error_not_cached),
	    cmocka_unit_test(test_cache_policy_presets),
	    cmocka_unit_test(test_cache_background_threshold),
	    cmocka_unit_test(test_cache_expiry_after_30s),
	    cmocka_unit_test(test_cache_freed_before_expiry_never_written),
	    cmocka_unit_test(test_cache_throttle_writer_writes_back),
	    cmocka_unit_test(test_cache_pinned_never_written_until_unpinned),
	    cmocka_unit_test(test_cache_written_callback_once_per_block),
	    cmocka_unit_test(test_cache_write_blocks_writes_exactly_those),
	    cmocka_unit_test(test_cache_readahead_counts_and_hits),
	    cmocka_unit_test(test_cache_writeback_plugged_on_timing_device),
	    cmocka_unit_test(test_cache_readahead_sequential_grows_then_hits),
	    cmocka_unit_test(test_cache_readahead_random_reads_do_not),
	};

	return cmocka_run_group_tests_name("cache", tests, NULL, NULL);
}
