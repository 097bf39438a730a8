/*
 * cache.c - the buffer cache: one buffer per cached block, reference
 * counted, LRU-evicted within a RAM budget, dirty until written back.
 *
 * Each buffer is in at most these places:
 *   c->map    blk -> buffer, for every live (not discarded) buffer;
 *   c->lru    unreferenced live buffers, least recently used at the head;
 *   c->dirty  dirty buffers (referenced or not), first dirtied at the head;
 *   c->forgot discarded buffers still referenced (freed by the last put).
 *
 * Budget: cached_bytes (all buffer memory, discarded-but-referenced ones
 * included) stays <= budget_bytes unless every buffer is referenced.  To
 * make room, make_room evicts the clean buffer at the LRU head; when the
 * head is dirty it first writes back a batch of the least recently used
 * dirty buffers (up to 1/8 of the budget), sorted by block number and
 * merged into requests of up to SFS_CACHE_MAX_REQ bytes, so a streaming
 * writer produces large sequential writes.  sfs_cache_sync writes every
 * dirty buffer the same way, then flushes the device.
 *
 * Write-back failure: the buffers stay dirty and the caller gets -EIO.
 * Discard: dirty contents are dropped ("died dirty"), never written.
 * Not thread-safe: the engine serialises calls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "cache.h"

#define SFS_CACHE_MAX_REQ (1u << 20) /* bytes per write-back request */
#define SFS_CACHE_MIN_BLOCKS 64	     /* smallest budget, in blocks */

struct cbuf {
	struct sfs_buf pub; /* first: users see only this */
	GList lru_link;	    /* in c->lru (refs == 0) or c->forgot */
	GList dirty_link;   /* in c->dirty while dirty */
	uint32_t refs;
	enum sfs_io_cat cat; /* category of its device requests */
	bool dirty;
	bool forgotten; /* discarded while referenced */
};

struct sfs_cache {
	struct sfs_bdev *bd;
	uint32_t bs;	/* block size, bytes */
	uint32_t align; /* buffer memory alignment, bytes */
	uint64_t budget_bytes;
	uint32_t max_req_blocks; /* blocks per write-back request */
	uint32_t batch_blocks;	 /* blocks per eviction write-back batch */
	uint64_t nblocks;	 /* blocks on the device */
	GHashTable *map;	 /* GUINT_TO_POINTER(blk) -> struct cbuf */
	GQueue lru;
	GQueue dirty;
	GQueue forgot;
	uint8_t *stage; /* max_req_blocks * bs, for merged writes */
	struct sfs_cache_counters ctr;
};

static inline struct cbuf *to_cbuf(struct sfs_buf *b)
{
	return (struct cbuf *)b;
}

/*
 * A cache over bd for blocks of block_size bytes (a power of two, 512 ..
 * 65536) using at most budget_bytes (raised to 64 blocks).  0 or -EINVAL.
 */
int sfs_cache_new(struct sfs_bdev *bd, uint32_t block_size,
		  uint64_t budget_bytes, struct sfs_cache **out)
{
	struct sfs_cache *c;
	uint64_t req;

	if (!bd || !out || block_size < 512 || block_size > 65536 ||
	    (block_size & (block_size - 1)))
		return -EINVAL;
	c = g_new0(struct sfs_cache, 1);
	c->bd = bd;
	c->bs = block_size;
	c->align = block_size < 4096 ? block_size : 4096;
	if (budget_bytes < (uint64_t)SFS_CACHE_MIN_BLOCKS * block_size)
		budget_bytes = (uint64_t)SFS_CACHE_MIN_BLOCKS * block_size;
	c->budget_bytes = budget_bytes;
	req =
	    budget_bytes < SFS_CACHE_MAX_REQ ? budget_bytes : SFS_CACHE_MAX_REQ;
	c->max_req_blocks = (uint32_t)(req / block_size);
	c->batch_blocks = (uint32_t)MAX(budget_bytes / 8 / block_size, 1);
	c->nblocks = sfs_bdev_size_bytes(bd) / block_size;
	c->map = g_hash_table_new(g_direct_hash, g_direct_equal);
	g_queue_init(&c->lru);
	g_queue_init(&c->dirty);
	g_queue_init(&c->forgot);
	*out = c;
	return 0;
}

uint32_t sfs_cache_block_size(const struct sfs_cache *c)
{
	return c->bs;
}

struct sfs_bdev *sfs_cache_bdev(struct sfs_cache *c)
{
	return c->bd;
}

void sfs_cache_counters(const struct sfs_cache *c,
			struct sfs_cache_counters *out)
{
	*out = c->ctr;
}

/* ---- buffer life ---- */

static struct cbuf *cbuf_alloc(struct sfs_cache *c, sfs_blk_t blk,
			       enum sfs_io_cat cat)
{
	struct cbuf *b = g_new0(struct cbuf, 1);
	void *data = NULL;

	if (posix_memalign(&data, c->align, c->bs))
		g_error("simfs cache: out of memory for a %u-byte buffer",
			c->bs);
	b->pub.blk = blk;
	b->pub.data = data;
	b->cat = cat;
	b->lru_link.data = b;
	b->dirty_link.data = b;
	c->ctr.cached_bytes += c->bs;
	return b;
}

static void cbuf_free(struct sfs_cache *c, struct cbuf *b)
{
	c->ctr.cached_bytes -= c->bs;
	free(b->pub.data);
	g_free(b);
}

static struct cbuf *cache_lookup(struct sfs_cache *c, sfs_blk_t blk)
{
	return g_hash_table_lookup(c->map, GUINT_TO_POINTER(blk));
}

static void cache_insert(struct sfs_cache *c, struct cbuf *b)
{
	g_hash_table_insert(c->map, GUINT_TO_POINTER(b->pub.blk), b);
}

static void mark_dirty(struct sfs_cache *c, struct cbuf *b)
{
	if (b->dirty)
		return;
	b->dirty = true;
	g_queue_push_tail_link(&c->dirty, &b->dirty_link);
	c->ctr.dirty_bytes += c->bs;
	if (c->ctr.dirty_bytes > c->ctr.peak_dirty_bytes)
		c->ctr.peak_dirty_bytes = c->ctr.dirty_bytes;
}

static void mark_clean(struct sfs_cache *c, struct cbuf *b)
{
	if (!b->dirty)
		return;
	b->dirty = false;
	g_queue_unlink(&c->dirty, &b->dirty_link);
	c->ctr.dirty_bytes -= c->bs;
}

/* Take a reference on a live buffer (off the LRU if it was idle). */
static void grab(struct sfs_cache *c, struct cbuf *b)
{
	if (b->refs++ == 0)
		g_queue_unlink(&c->lru, &b->lru_link);
}

/* A use of an idle buffer: move it to the LRU tail. */
static void touch(struct sfs_cache *c, struct cbuf *b)
{
	if (b->refs == 0) {
		g_queue_unlink(&c->lru, &b->lru_link);
		g_queue_push_tail_link(&c->lru, &b->lru_link);
	}
}

/* Drop an idle, clean, live buffer from the cache. */
static void evict(struct sfs_cache *c, struct cbuf *b)
{
	g_queue_unlink(&c->lru, &b->lru_link);
	g_hash_table_remove(c->map, GUINT_TO_POINTER(b->pub.blk));
	c->ctr.evictions++;
	cbuf_free(c, b);
}

/* ---- write-back ---- */

static int cmp_blk(const void *a, const void *b)
{
	const struct cbuf *x = *(const struct cbuf *const *)a;
	const struct cbuf *y = *(const struct cbuf *const *)b;

	return x->pub.blk < y->pub.blk ? -1 : x->pub.blk > y->pub.blk;
}

static int get_stage(struct sfs_cache *c)
{
	void *p = NULL;

	if (c->stage)
		return 0;
	if (posix_memalign(&p, 4096, (size_t)c->max_req_blocks * c->bs))
		return -ENOMEM;
	c->stage = p;
	return 0;
}

/*
 * Write bufs[0..n) (dirty, distinct blocks) back: sorted by block, runs of
 * adjacent blocks of one category merged into one request of at most
 * max_req_blocks.  Written buffers become clean.  0 or -EIO (the buffers
 * of the failed request and after stay dirty).
 */
static int write_back(struct sfs_cache *c, struct cbuf **bufs, size_t n)
{
	size_t i = 0;
	int rc;

	qsort(bufs, n, sizeof(*bufs), cmp_blk);
	while (i < n) {
		size_t j = i + 1;
		const void *src = bufs[i]->pub.data;

		while (j < n && j - i < c->max_req_blocks &&
		       bufs[j]->pub.blk == bufs[j - 1]->pub.blk + 1 &&
		       bufs[j]->cat == bufs[i]->cat)
			j++;
		if (j - i > 1) {
			rc = get_stage(c);
			if (rc)
				return -EIO;
			for (size_t k = i; k < j; k++)
				memcpy(c->stage + (k - i) * c->bs,
				       bufs[k]->pub.data, c->bs);
			src = c->stage;
		}
		rc = sfs_bdev_write(c->bd, bufs[i]->cat,
				    (uint64_t)bufs[i]->pub.blk * c->bs, src,
				    (j - i) * c->bs);
		if (rc)
			return -EIO;
		for (size_t k = i; k < j; k++)
			mark_clean(c, bufs[k]);
		c->ctr.writebacks += j - i;
		i = j;
	}
	return 0;
}

/* Write back up to batch_blocks of the least recently used dirty buffers. */
static int write_back_lru_batch(struct sfs_cache *c)
{
	struct cbuf **bufs = g_new(struct cbuf *, c->batch_blocks);
	size_t n = 0;
	int rc;

	for (GList *l = c->lru.head; l && n < c->batch_blocks; l = l->next) {
		struct cbuf *b = l->data;

		if (b->dirty)
			bufs[n++] = b;
	}
	rc = write_back(c, bufs, n);
	g_free(bufs);
	return rc;
}

/*
 * Make room for one more buffer: evict idle clean buffers from the LRU
 * head, writing back a batch first when the head is dirty.  If every
 * buffer is referenced the budget is exceeded (returns 0).  -EIO if a
 * write-back failed.
 */
static int make_room(struct sfs_cache *c)
{
	int rc;

	while (c->ctr.cached_bytes + c->bs > c->budget_bytes) {
		GList *head = c->lru.head;
		struct cbuf *b;

		if (!head)
			break;
		b = head->data;
		if (!b->dirty) {
			evict(c, b);
			continue;
		}
		rc = write_back_lru_batch(c);
		if (rc)
			return rc;
	}
	return 0;
}

/* Without writing anything, evict idle clean buffers while over budget. */
static void trim_clean(struct sfs_cache *c)
{
	while (c->ctr.cached_bytes > c->budget_bytes && c->lru.head) {
		struct cbuf *b = c->lru.head->data;

		if (b->dirty)
			break;
		evict(c, b);
	}
}

static bool blk_in_range(const struct sfs_cache *c, sfs_blk_t blk, uint64_t n)
{
	return n <= c->nblocks && blk <= c->nblocks - n;
}

/* ---- the verbs ---- */

/* Block blk, read if not cached.  -EINVAL (beyond the device) or -EIO. */
int sfs_cache_get(struct sfs_cache *c, sfs_blk_t blk, enum sfs_io_cat cat,
		  struct sfs_buf **out)
{
	struct cbuf *b;
	int rc;

	if (!blk_in_range(c, blk, 1))
		return -EINVAL;
	b = cache_lookup(c, blk);
	if (b) {
		c->ctr.hits++;
		grab(c, b);
		*out = &b->pub;
		return 0;
	}
	rc = make_room(c);
	if (rc)
		return rc;
	c->ctr.misses++;
	b = cbuf_alloc(c, blk, cat);
	rc = sfs_bdev_read(c->bd, cat, (uint64_t)blk * c->bs, b->pub.data,
			   c->bs);
	if (rc) {
		cbuf_free(c, b);
		return -EIO;
	}
	b->refs = 1;
	cache_insert(c, b);
	*out = &b->pub;
	return 0;
}

/* Block blk without reading it: zeroed unless cached.  -EINVAL, -EIO. */
int sfs_cache_get_new(struct sfs_cache *c, sfs_blk_t blk, enum sfs_io_cat cat,
		      struct sfs_buf **out)
{
	struct cbuf *b;
	int rc;

	if (!blk_in_range(c, blk, 1))
		return -EINVAL;
	b = cache_lookup(c, blk);
	if (b) {
		c->ctr.hits++;
		b->cat = cat;
		grab(c, b);
		*out = &b->pub;
		return 0;
	}
	rc = make_room(c);
	if (rc)
		return rc;
	b = cbuf_alloc(c, blk, cat);
	memset(b->pub.data, 0, c->bs);
	b->refs = 1;
	cache_insert(c, b);
	*out = &b->pub;
	return 0;
}

/* Mark b dirty (a discarded buffer's changes are dropped). */
void sfs_cache_dirty(struct sfs_cache *c, struct sfs_buf *pub)
{
	struct cbuf *b = to_cbuf(pub);

	if (!b->forgotten)
		mark_dirty(c, b);
}

/* Drop a reference; the buffer stays cached while the budget allows. */
void sfs_cache_put(struct sfs_cache *c, struct sfs_buf *pub)
{
	struct cbuf *b;

	if (!pub)
		return;
	b = to_cbuf(pub);
	g_assert(b->refs > 0);
	if (--b->refs)
		return;
	if (b->forgotten) {
		g_queue_unlink(&c->forgot, &b->lru_link);
		cbuf_free(c, b);
		return;
	}
	g_queue_push_tail_link(&c->lru, &b->lru_link);
	trim_clean(c);
}

/*
 * Copy n blocks from blk into buf: cached blocks from memory, each run of
 * uncached blocks in one device request (then cached, clean).  -EINVAL,
 * -EIO.
 */
int sfs_cache_read_run(struct sfs_cache *c, sfs_blk_t blk, uint32_t n,
		       enum sfs_io_cat cat, void *buf)
{
	uint8_t *dst = buf;
	uint32_t i = 0;
	int rc;

	if (!buf || !blk_in_range(c, blk, n))
		return -EINVAL;
	while (i < n) {
		struct cbuf *b = cache_lookup(c, blk + i);
		uint32_t j;

		if (b) {
			memcpy(dst + (size_t)i * c->bs, b->pub.data, c->bs);
			c->ctr.hits++;
			touch(c, b);
			i++;
			continue;
		}
		for (j = i + 1; j < n && !cache_lookup(c, blk + j); j++)
			;
		c->ctr.misses += j - i;
		rc = sfs_bdev_read(c->bd, cat, (uint64_t)(blk + i) * c->bs,
				   dst + (size_t)i * c->bs,
				   (size_t)(j - i) * c->bs);
		if (rc)
			return -EIO;
		/* Keep what was read; failing to make room only skips it. */
		for (uint32_t k = i; k < j; k++) {
			if (make_room(c))
				break;
			b = cbuf_alloc(c, blk + k, cat);
			memcpy(b->pub.data, dst + (size_t)k * c->bs, c->bs);
			cache_insert(c, b);
			g_queue_push_tail_link(&c->lru, &b->lru_link);
		}
		i = j;
	}
	return 0;
}

/* Store n blocks from buf at blk as dirty buffers.  -EINVAL, -EIO. */
int sfs_cache_write_run(struct sfs_cache *c, sfs_blk_t blk, uint32_t n,
			enum sfs_io_cat cat, const void *buf)
{
	const uint8_t *src = buf;
	int rc;

	if (!buf || !blk_in_range(c, blk, n))
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		struct cbuf *b = cache_lookup(c, blk + i);

		if (b) {
			touch(c, b);
		} else {
			rc = make_room(c);
			if (rc)
				return rc;
			b = cbuf_alloc(c, blk + i, cat);
			cache_insert(c, b);
			g_queue_push_tail_link(&c->lru, &b->lru_link);
		}
		b->cat = cat;
		memcpy(b->pub.data, src + (size_t)i * c->bs, c->bs);
		mark_dirty(c, b);
	}
	return 0;
}

/* Forget one live buffer: its dirty contents die unwritten. */
static void discard_one(struct sfs_cache *c, struct cbuf *b)
{
	if (b->dirty) {
		c->ctr.died_dirty_bytes += c->bs;
		mark_clean(c, b);
	}
	g_hash_table_remove(c->map, GUINT_TO_POINTER(b->pub.blk));
	if (b->refs == 0) {
		g_queue_unlink(&c->lru, &b->lru_link);
		cbuf_free(c, b);
	} else {
		/* Still referenced: valid memory until the last put. */
		b->forgotten = true;
		g_queue_push_tail_link(&c->forgot, &b->lru_link);
	}
}

/* Discard the cached blocks of [blk, end) found by walking the cache. */
static void discard_walk(struct sfs_cache *c, sfs_blk_t blk, uint64_t end)
{
	GPtrArray *hits = g_ptr_array_new();
	GHashTableIter it;
	gpointer key, val;

	g_hash_table_iter_init(&it, c->map);
	while (g_hash_table_iter_next(&it, &key, &val)) {
		struct cbuf *b = val;

		if (b->pub.blk >= blk && b->pub.blk < end)
			g_ptr_array_add(hits, b);
	}
	for (guint k = 0; k < hits->len; k++)
		discard_one(c, g_ptr_array_index(hits, k));
	g_ptr_array_free(hits, TRUE);
}

/* Forget blocks [blk, blk+n): they were freed. */
void sfs_cache_discard(struct sfs_cache *c, sfs_blk_t blk, uint32_t n)
{
	uint64_t end = (uint64_t)blk + n;

	if (n == 0)
		return;
	if (n > g_hash_table_size(c->map)) {
		/* A range larger than the cache: walk the cache instead. */
		discard_walk(c, blk, end);
		return;
	}
	for (uint64_t k = blk; k < end; k++) {
		struct cbuf *b = cache_lookup(c, (sfs_blk_t)k);

		if (b)
			discard_one(c, b);
	}
}

/* Write every dirty buffer (sorted, merged), then flush.  0 or -EIO. */
int sfs_cache_sync(struct sfs_cache *c)
{
	size_t n = c->dirty.length, i = 0;
	struct cbuf **bufs;
	int rc = 0;

	if (n) {
		bufs = g_new(struct cbuf *, n);
		for (GList *l = c->dirty.head; l; l = l->next)
			bufs[i++] = l->data;
		rc = write_back(c, bufs, n);
		g_free(bufs);
		if (rc)
			return rc;
	}
	if (sfs_bdev_flush(c->bd))
		return -EIO;
	trim_clean(c);
	return 0;
}

/* Free every buffer; dirty contents are lost (sync first). */
void sfs_cache_free(struct sfs_cache *c)
{
	GHashTableIter it;
	gpointer key, val;

	if (!c)
		return;
	g_hash_table_iter_init(&it, c->map);
	while (g_hash_table_iter_next(&it, &key, &val))
		cbuf_free(c, val);
	while (c->forgot.head) {
		struct cbuf *b = c->forgot.head->data;

		g_queue_unlink(&c->forgot, &b->lru_link);
		cbuf_free(c, b);
	}
	g_hash_table_destroy(c->map);
	free(c->stage);
	g_free(c);
}
