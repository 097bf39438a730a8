/*
 * test_cache.c - the buffer cache over a RAM device whose request log shows
 * exactly what reached the "disk".
 *
 * Hits and misses, dirty write-back on sync (sorted, merged, bounded
 * requests, then a flush), the RAM budget with LRU eviction that writes
 * dirty buffers back first in large batches, referenced buffers never
 * evicted, discard of dirty blocks (never written, counted as died dirty),
 * bulk read/write runs, and write-back errors through the fault device.
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
#include "testsupport.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cache_new_rejects_bad_block_size),
	    cmocka_unit_test(test_cache_hit_miss_counts),
	    cmocka_unit_test(test_cache_get_new_does_not_read),
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
	};

	return cmocka_run_group_tests_name("cache", tests, NULL, NULL);
}
