/*
 * cache.c - the buffer cache: one buffer per cached block, reference
 * counted, LRU-evicted within a RAM budget, dirty until written back by
 * the writeback policy (doc/cache.md).
 *
 * Each buffer is in at most these places:
 *   c->map    blk -> buffer, for every live (not discarded) buffer;
 *   c->lru    idle live buffers (refs == 0, pins == 0), least recently
 *             used at the head: the only ones eviction may drop;
 *   c->dirty  dirty buffers (any refs or pins), in the order they were
 *             first dirtied: oldest at the head (dirtied_ns ascending);
 *   c->forgot discarded buffers still referenced or pinned (freed by the
 *             last put / unpin).
 *
 * Accounting: cached_bytes = all buffer memory (forgotten ones included);
 * dirty_bytes = dirty buffers; pinned_dirty = those of them pinned.  The
 * policy's thresholds compare wb_dirty = dirty_bytes - pinned_dirty: what
 * write-back could write.
 *
 * Budget: cached_bytes stays <= budget_bytes unless nothing is idle (every
 * buffer referenced or pinned): then the cache grows past it and counts an
 * over-budget event.  make_room evicts the clean buffer at the LRU head;
 * when the head is dirty it first writes back a batch of the least
 * recently used dirty buffers (up to 1/8 of the budget).
 *
 * Write-back paths, each a plugged batch sorted by block and merged into
 * requests of up to SFS_CACHE_MAX_REQ bytes (write_back):
 *   eviction   make_room                       LRU dirty buffers
 *   throttle   sfs_cache_dirty/write_run       oldest first, chunks
 *   periodic   sfs_cache_tick (kupdate timer)  oldest first, expired only
 *   background sfs_cache_tick                  oldest first, chunks
 *   sync       sfs_cache_sync                  all unpinned
 *   explicit   sfs_cache_write_blocks          the blocks asked for
 * Throttle, periodic and background skip referenced buffers (being
 * changed by the operation in progress) and all paths skip pinned ones.
 *
 * Write-back failure: the buffers stay dirty; the caller gets -EIO (tick,
 * sync, write_blocks, eviction), or -ENOSPC when the host disk under the
 * image is full (room may come back: a later pass writes them), or an
 * error is counted (throttle).
 * Discard: dirty contents are dropped ("died dirty"), never written.
 * Not thread-safe: the engine serialises calls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "cache.h"
#include "clock.h"
#include "timedev.h"

/* Free pool slots are poisoned under AddressSanitizer, so a use after
 * sfs_cache_put/discard still trips it as it would with malloc. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define SLOT_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define SLOT_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define SLOT_POISON(p, n) ((void)(p), (void)(n))
#define SLOT_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define SFS_CACHE_MAX_REQ (1u << 20)	/* bytes per write-back request */
#define SFS_CACHE_MIN_BLOCKS 64		/* smallest budget, in blocks */
#define SFS_CACHE_SLAB_BYTES (1u << 20) /* buffer memory comes in these */
#define SFS_NS_PER_CS (10ULL * SFS_NS_PER_MS)

struct cbuf {
	struct sfs_buf pub;  /* first: users see only this */
	GList lru_link;	     /* in c->lru (idle) or c->forgot */
	GList dirty_link;    /* in c->dirty while dirty */
	sfs_ns_t dirtied_ns; /* when it went from clean to dirty */
	uint32_t refs;
	uint32_t pins;	     /* sfs_cache_pin nesting */
	enum sfs_io_cat cat; /* category of its device requests */
	bool dirty;
	bool forgotten; /* discarded while referenced or pinned */
	bool ra;	/* read ahead and not used yet */
};

/* Fixed-size slots carved from slabs, recycled through a free list. */
struct slab_pool {
	size_t slot;	  /* bytes per slot (>= sizeof(void *)) */
	GPtrArray *slabs; /* SFS_CACHE_SLAB_BYTES each, 4 KiB aligned */
	void *free;	  /* unused slots, linked through their first word */
};

struct sfs_cache {
	struct sfs_bdev *bd;
	struct sfs_clock *clock; /* NULL: time 0 */
	uint32_t bs;		 /* block size, bytes */
	uint64_t budget_bytes;
	uint32_t max_req_blocks; /* blocks per write-back request */
	uint32_t batch_blocks;	 /* blocks per eviction write-back batch */
	uint64_t nblocks;	 /* blocks on the device */
	GHashTable *map;	 /* GUINT_TO_POINTER(blk) -> struct cbuf */
	GQueue lru;
	GQueue dirty;
	GQueue forgot;
	struct slab_pool data; /* block memory, bs per slot */
	struct slab_pool hdrs; /* struct cbuf slots */
	struct iovec *wiov;    /* max_req_blocks, for merged writes */
	uint8_t *rabuf;	       /* max_req_blocks * bs, for read-ahead */
	uint64_t pinned_dirty; /* bytes of dirty pinned buffers */

	/* writeback policy (wb_active once sfs_cache_set_policy ran) */
	bool wb_active;
	struct sfs_cache_policy pol;
	uint64_t dirty_thresh; /* bytes: throttle above */
	uint64_t bg_thresh;    /* bytes: background write-back above */
	uint32_t chunk_blocks; /* per throttle/background pass */
	sfs_ns_t expire_ns;
	sfs_ns_t interval_ns;	  /* 0: no periodic write-back */
	sfs_ns_t next_kupdate_ns; /* the periodic wakeup */
	bool bg_blocked;   /* over background with nothing writable: wait for
			      a change before trying again */
	unsigned wb_depth; /* inside write_back: no throttling */

	void (*written_fn)(void *ctx, sfs_blk_t blk);
	void *written_ctx;

	/* delayed allocation: dirty data the engine holds without blocks */
	const struct sfs_cache_delayed *da;
	void *da_ctx;

	struct sfs_cache_counters ctr;
};

static inline struct cbuf *to_cbuf(struct sfs_buf *b)
{
	return (struct cbuf *)b;
}

/* ---- memory ---- */

/*
 * Memory for blocks and their headers: slots carved from 1 MiB slabs and
 * recycled through a free list, never returned before sfs_cache_free.
 * One posix_memalign per block would cost up to twice the budget in
 * alignment waste, and a malloc per header its own overhead; this way the
 * memory held is the peak of cached_bytes (rounded up to a slab) plus
 * sizeof(struct cbuf) per buffer.  bench/cache_memory.sh measures it.
 */
static void pool_init(struct slab_pool *p, size_t slot)
{
	p->slot = MAX(slot, sizeof(void *));
	p->slabs = g_ptr_array_new();
	p->free = NULL;
}

static void *pool_get(struct slab_pool *p)
{
	void *s;

	if (!p->free) {
		size_t per = MAX(SFS_CACHE_SLAB_BYTES / p->slot, 1);
		uint8_t *slab = NULL;

		if (posix_memalign((void **)&slab, 4096, per * p->slot))
			g_error("simfs cache: out of memory for %zu buffers "
				"of %zu bytes",
				per, p->slot);
		g_ptr_array_add(p->slabs, slab);
		for (size_t i = per; i-- > 0;) {
			void *slot = slab + i * p->slot;

			*(void **)slot = p->free;
			p->free = slot;
			SLOT_POISON(slot, p->slot);
		}
	}
	s = p->free;
	SLOT_UNPOISON(s, p->slot);
	p->free = *(void **)s;
	return s;
}

static void pool_put(struct slab_pool *p, void *s)
{
	*(void **)s = p->free;
	p->free = s;
	SLOT_POISON(s, p->slot);
}

static void pool_fini(struct slab_pool *p)
{
	for (guint i = 0; i < p->slabs->len; i++) {
		uint8_t *slab = g_ptr_array_index(p->slabs, i);

		SLOT_UNPOISON(slab,
			      MAX(SFS_CACHE_SLAB_BYTES / p->slot, 1) * p->slot);
		free(slab);
	}
	g_ptr_array_free(p->slabs, TRUE);
}

/* ---- policy presets (data; Linux mm/page-writeback.c of each era) ---- */

#define KIB 1024u
#define MIB (1024u * 1024u)

static const struct preset {
	const char *name;
	const char *help;
	struct sfs_cache_policy p;
} presets[] = {
    {"2.6",
     "Linux 2.6.0-2.6.21 (the 2002 seed): dirty 40 %, background 10 %",
     {.dirty_background_ratio = 10,
      .dirty_ratio = 40,
      .dirty_expire_cs = 3000,
      .dirty_writeback_cs = 500,
      .writeback_chunk_bytes = 4 * MIB,
      .readahead_max_bytes = 128 * KIB,
      .readahead_min_bytes = 16 * KIB}},
    {"2.6.22",
     "Linux 2.6.22-2.6.28: dirty 10 %, background 5 %",
     {.dirty_background_ratio = 5,
      .dirty_ratio = 10,
      .dirty_expire_cs = 3000,
      .dirty_writeback_cs = 500,
      .writeback_chunk_bytes = 4 * MIB,
      .readahead_max_bytes = 128 * KIB,
      .readahead_min_bytes = 16 * KIB}},
    {"modern",
     "Linux 2.6.29/30 to today: dirty 20 %, background 10 %",
     {.dirty_background_ratio = 10,
      .dirty_ratio = 20,
      .dirty_expire_cs = 3000,
      .dirty_writeback_cs = 500,
      .writeback_chunk_bytes = 4 * MIB,
      .readahead_max_bytes = 128 * KIB,
      .readahead_min_bytes = 16 * KIB}},
};

int sfs_cache_policy_preset(const char *name, struct sfs_cache_policy *out)
{
	if (!out)
		return -EINVAL;
	if (!name || !name[0])
		name = SFS_CACHE_POLICY_DEFAULT;
	for (size_t i = 0; i < G_N_ELEMENTS(presets); i++) {
		if (strcmp(presets[i].name, name) == 0) {
			*out = presets[i].p;
			return 0;
		}
	}
	return -EINVAL;
}

const char *sfs_cache_policy_names(void)
{
	return "2.6, 2.6.22, modern";
}

bool sfs_cache_policy_nth(unsigned i, const char **name, const char **help)
{
	if (i >= G_N_ELEMENTS(presets))
		return false;
	if (name)
		*name = presets[i].name;
	if (help)
		*help = presets[i].help;
	return true;
}

const char *sfs_wb_reason_name(enum sfs_wb_reason r)
{
	static const char *const names[SFS_WB_NREASONS] = {
	    [SFS_WB_BACKGROUND] = "background", [SFS_WB_PERIODIC] = "periodic",
	    [SFS_WB_THROTTLE] = "throttle",	[SFS_WB_SYNC] = "sync",
	    [SFS_WB_EVICTION] = "eviction",	[SFS_WB_EXPLICIT] = "explicit",
	};

	return (unsigned)r < SFS_WB_NREASONS ? names[r] : "?";
}

/* ---- setup ---- */

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
	if (budget_bytes < (uint64_t)SFS_CACHE_MIN_BLOCKS * block_size)
		budget_bytes = (uint64_t)SFS_CACHE_MIN_BLOCKS * block_size;
	c->budget_bytes = budget_bytes;
	req =
	    budget_bytes < SFS_CACHE_MAX_REQ ? budget_bytes : SFS_CACHE_MAX_REQ;
	c->max_req_blocks = (uint32_t)(req / block_size);
	c->batch_blocks = (uint32_t)MAX(budget_bytes / 8 / block_size, 1);
	c->nblocks = sfs_bdev_size_bytes(bd) / block_size;
	c->map = g_hash_table_new(g_direct_hash, g_direct_equal);
	pool_init(&c->data, block_size);
	pool_init(&c->hdrs, sizeof(struct cbuf));
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

static sfs_ns_t now_ns(struct sfs_cache *c)
{
	return c->clock ? sfs_clock_now_ns(c->clock) : 0;
}

/* Dirty bytes write-back may write: pinned buffers excluded. */
/* Delayed (not yet placed) dirty bytes the engine holds. */
static uint64_t da_bytes(const struct sfs_cache *c)
{
	return c->da ? c->da->bytes(c->da_ctx) : 0;
}

static uint64_t wb_dirty(const struct sfs_cache *c)
{
	return c->ctr.dirty_bytes - c->pinned_dirty + da_bytes(c);
}

/*
 * Let the engine place and write delayed data: all of it dirtied at or
 * before cutoff_ns (expired) or about `bytes`.  No throttling inside (the
 * engine dirties buffers while it does this).  Bytes written, or -errno.
 */
static int64_t da_writeback(struct sfs_cache *c, bool expired,
			    sfs_ns_t cutoff_ns, uint64_t bytes,
			    enum sfs_wb_reason why)
{
	int64_t n;

	c->wb_depth++;
	n = c->da->writeback(c->da_ctx, expired, cutoff_ns, bytes, why);
	c->wb_depth--;
	return n;
}

void sfs_cache_counters(const struct sfs_cache *c,
			struct sfs_cache_counters *out)
{
	*out = c->ctr;
	out->budget_bytes = c->budget_bytes;
	out->dirty_limit_bytes = c->wb_active ? c->dirty_thresh : 0;
	out->background_limit_bytes = c->wb_active ? c->bg_thresh : 0;
}

uint64_t sfs_cache_dirty_bytes(const struct sfs_cache *c)
{
	return c->ctr.dirty_bytes;
}

int sfs_cache_set_policy(struct sfs_cache *c, const struct sfs_cache_policy *p)
{
	uint64_t dirty, bg;

	if (!c || !p || p->dirty_ratio > 100 ||
	    p->dirty_background_ratio > 100 || p->writeback_chunk_bytes == 0)
		return -EINVAL;
	if (p->readahead_max_bytes &&
	    (p->readahead_min_bytes == 0 ||
	     p->readahead_min_bytes > p->readahead_max_bytes))
		return -EINVAL;
	dirty = p->dirty_bytes ? p->dirty_bytes
			       : c->budget_bytes * p->dirty_ratio / 100;
	bg = p->dirty_background_bytes
		 ? p->dirty_background_bytes
		 : c->budget_bytes * p->dirty_background_ratio / 100;
	if (bg >= dirty) /* as Linux: background stays below the limit */
		bg = dirty / 2;
	c->pol = *p;
	c->dirty_thresh = dirty;
	c->bg_thresh = bg;
	c->chunk_blocks = (uint32_t)MAX(
	    MIN(p->writeback_chunk_bytes / c->bs, (uint64_t)UINT32_MAX), 1);
	c->expire_ns = (sfs_ns_t)p->dirty_expire_cs * SFS_NS_PER_CS;
	c->interval_ns = (sfs_ns_t)p->dirty_writeback_cs * SFS_NS_PER_CS;
	c->next_kupdate_ns = now_ns(c) + c->interval_ns;
	c->bg_blocked = false;
	c->wb_active = true;
	return 0;
}

void sfs_cache_get_policy(const struct sfs_cache *c,
			  struct sfs_cache_policy *out)
{
	if (c->wb_active)
		*out = c->pol;
	else
		memset(out, 0, sizeof(*out));
}

void sfs_cache_set_clock(struct sfs_cache *c, struct sfs_clock *clock)
{
	c->clock = clock;
	c->next_kupdate_ns = now_ns(c) + c->interval_ns;
}

void sfs_cache_set_written_cb(struct sfs_cache *c,
			      void (*fn)(void *ctx, sfs_blk_t blk), void *ctx)
{
	c->written_fn = fn;
	c->written_ctx = fn ? ctx : NULL;
}

/* ---- buffer life ---- */

/* A buffer for blk over data (a slot of c->data). */
static struct cbuf *cbuf_alloc_over(struct sfs_cache *c, sfs_blk_t blk,
				    enum sfs_io_cat cat, uint8_t *data)
{
	struct cbuf *b = pool_get(&c->hdrs);

	memset(b, 0, sizeof(*b));
	b->pub.blk = blk;
	b->pub.data = data;
	b->cat = cat;
	b->lru_link.data = b;
	b->dirty_link.data = b;
	c->ctr.cached_bytes += c->bs;
	return b;
}

static struct cbuf *cbuf_alloc(struct sfs_cache *c, sfs_blk_t blk,
			       enum sfs_io_cat cat)
{
	return cbuf_alloc_over(c, blk, cat, pool_get(&c->data));
}

static void cbuf_free(struct sfs_cache *c, struct cbuf *b)
{
	c->ctr.cached_bytes -= c->bs;
	pool_put(&c->data, b->pub.data);
	pool_put(&c->hdrs, b);
}

static struct cbuf *cache_lookup(struct sfs_cache *c, sfs_blk_t blk)
{
	return g_hash_table_lookup(c->map, GUINT_TO_POINTER(blk));
}

static void cache_insert(struct sfs_cache *c, struct cbuf *b)
{
	g_hash_table_insert(c->map, GUINT_TO_POINTER(b->pub.blk), b);
}

/* Is b on the LRU (idle and live)? */
static bool is_idle(const struct cbuf *b)
{
	return b->refs == 0 && b->pins == 0 && !b->forgotten;
}

static void mark_dirty(struct sfs_cache *c, struct cbuf *b)
{
	b->pub.checked = 0; /* changed: checked again at the next use */
	if (b->dirty)
		return;
	b->dirty = true;
	b->dirtied_ns = now_ns(c);
	g_queue_push_tail_link(&c->dirty, &b->dirty_link);
	c->ctr.dirty_bytes += c->bs;
	if (b->pins)
		c->pinned_dirty += c->bs;
	if (c->ctr.dirty_bytes > c->ctr.peak_dirty_bytes)
		c->ctr.peak_dirty_bytes = c->ctr.dirty_bytes;
	c->bg_blocked = false;
}

static void mark_clean(struct sfs_cache *c, struct cbuf *b)
{
	if (!b->dirty)
		return;
	b->dirty = false;
	g_queue_unlink(&c->dirty, &b->dirty_link);
	c->ctr.dirty_bytes -= c->bs;
	if (b->pins)
		c->pinned_dirty -= c->bs;
}

/* A use of a cached block: a read-ahead block used for the first time
 * counts as a read-ahead hit when the use is a read. */
static void note_use(struct sfs_cache *c, struct cbuf *b, bool read)
{
	if (b->ra) {
		b->ra = false;
		if (read)
			c->ctr.readahead_hits++;
	}
}

/* Take a reference on a live buffer (off the LRU if it was idle). */
static void grab(struct sfs_cache *c, struct cbuf *b)
{
	if (is_idle(b))
		g_queue_unlink(&c->lru, &b->lru_link);
	b->refs++;
}

/* A use of an idle buffer: move it to the LRU tail. */
static void touch(struct sfs_cache *c, struct cbuf *b)
{
	if (is_idle(b)) {
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
	if (b->ra)
		c->ctr.readahead_wasted++;
	cbuf_free(c, b);
}

/* ---- write-back ---- */

static int cmp_blk(const void *a, const void *b)
{
	const struct cbuf *x = *(const struct cbuf *const *)a;
	const struct cbuf *y = *(const struct cbuf *const *)b;

	return x->pub.blk < y->pub.blk ? -1 : x->pub.blk > y->pub.blk;
}

static int get_bounce(struct sfs_cache *c, uint8_t **buf)
{
	void *p = NULL;

	if (*buf)
		return 0;
	if (posix_memalign(&p, 4096, (size_t)c->max_req_blocks * c->bs))
		return -ENOMEM;
	*buf = p;
	return 0;
}

/*
 * Write bufs[0..n) (dirty, unpinned, distinct blocks) back as one plugged
 * batch: sorted by block, runs of adjacent blocks of one category merged
 * into one request of at most max_req_blocks, written from the buffers
 * themselves (sfs_bdev_writev).  Written buffers become
 * clean and are counted under `why`; the written callback then runs for
 * each.  0, -ENOSPC (host disk full) or -EIO (the buffers of the failed
 * request and after stay dirty).
 */
static int write_back(struct sfs_cache *c, struct cbuf **bufs, size_t n,
		      enum sfs_wb_reason why)
{
	sfs_blk_t *done = NULL;
	size_t i = 0, ndone = 0;
	int rc = 0;

	if (n == 0)
		return 0;
	c->wb_depth++;
	if (c->written_fn)
		done = g_new(sfs_blk_t, n);
	qsort(bufs, n, sizeof(*bufs), cmp_blk);
	sfs_timedev_plug(c->bd); /* -EINVAL on other devices: harmless */
	if (!c->wiov)
		c->wiov = g_new(struct iovec, c->max_req_blocks);
	while (i < n) {
		size_t j = i + 1;

		while (j < n && j - i < c->max_req_blocks &&
		       bufs[j]->pub.blk == bufs[j - 1]->pub.blk + 1 &&
		       bufs[j]->cat == bufs[i]->cat)
			j++;
		/* one request straight from the buffers: no staging copy */
		for (size_t k = i; k < j; k++) {
			c->wiov[k - i].iov_base = bufs[k]->pub.data;
			c->wiov[k - i].iov_len = c->bs;
		}
		rc = sfs_bdev_writev(c->bd, bufs[i]->cat,
				     (uint64_t)bufs[i]->pub.blk * c->bs,
				     c->wiov, (int)(j - i));
		if (rc) {
			/* a full host disk stays -ENOSPC: retryable */
			if (rc != -ENOSPC)
				rc = -EIO;
			break;
		}
		for (size_t k = i; k < j; k++) {
			mark_clean(c, bufs[k]);
			if (done)
				done[ndone++] = bufs[k]->pub.blk;
		}
		c->ctr.writebacks += j - i;
		c->ctr.wb_bytes[why] += (uint64_t)(j - i) * c->bs;
		i = j;
	}
	sfs_timedev_unplug(c->bd); /* emulate: waits for the batch */
	for (size_t k = 0; k < ndone; k++)
		c->written_fn(c->written_ctx, done[k]);
	g_free(done);
	c->wb_depth--;
	return rc;
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
	rc = write_back(c, bufs, n, SFS_WB_EVICTION);
	g_free(bufs);
	return rc;
}

/*
 * Up to max dirty buffers that asynchronous write-back may write (not
 * pinned, not referenced), oldest first; with `expired`, only those
 * dirtied at or before cutoff_ns.
 */
static size_t collect_oldest(struct sfs_cache *c, bool expired,
			     sfs_ns_t cutoff_ns, size_t max, struct cbuf **bufs)
{
	size_t n = 0;

	for (GList *l = c->dirty.head; l && n < max; l = l->next) {
		struct cbuf *b = l->data;

		if (expired && b->dirtied_ns > cutoff_ns)
			break;
		if (b->pins || b->refs)
			continue;
		bufs[n++] = b;
	}
	return n;
}

/*
 * Write the oldest writable dirty buffers a chunk (one batch) at a time:
 * with `expired` all those dirtied at or before cutoff_ns, otherwise until
 * wb_dirty <= limit.  Returns the blocks written (>= 0) or -EIO.
 */
static int64_t write_oldest(struct sfs_cache *c, bool expired,
			    sfs_ns_t cutoff_ns, uint64_t limit,
			    enum sfs_wb_reason why)
{
	struct cbuf **bufs = g_new(struct cbuf *, c->chunk_blocks);
	int64_t total = 0;

	while (expired || wb_dirty(c) > limit) {
		size_t n = collect_oldest(c, expired, cutoff_ns,
					  c->chunk_blocks, bufs);
		uint64_t before = c->ctr.writebacks;
		int rc;

		/* Delayed data older than the oldest buffer goes first: it
		 * is placed now and written with its own batch. */
		if (da_bytes(c)) {
			sfs_ns_t da_old = c->da->oldest_ns(c->da_ctx);
			bool due = expired ? da_old <= cutoff_ns : true;
			if (due && (n == 0 || da_old <= bufs[0]->dirtied_ns)) {
				int64_t w = da_writeback(
				    c, expired, cutoff_ns,
				    (uint64_t)c->chunk_blocks * c->bs, why);
				if (w < 0) {
					c->ctr.writeback_errors++;
					total = w;
					break;
				}
				if (w > 0) {
					total += w / c->bs;
					continue;
				}
			}
		}
		if (n == 0)
			break;
		rc = write_back(c, bufs, n, why);
		total += (int64_t)(c->ctr.writebacks - before);
		if (rc) {
			c->ctr.writeback_errors++;
			total = rc;
			break;
		}
	}
	g_free(bufs);
	return total;
}

/*
 * 2.6-era balance_dirty_pages: over the dirty limit, the dirtying caller
 * writes back, oldest first, a chunk at a time, until below it.  Errors
 * are counted; the data stays dirty for a later pass.
 */
static void balance_dirty(struct sfs_cache *c)
{
	int64_t n;

	if (!c->wb_active || c->wb_depth || wb_dirty(c) <= c->dirty_thresh)
		return;
	n = write_oldest(c, false, 0, c->dirty_thresh, SFS_WB_THROTTLE);
	if (n != 0)
		c->ctr.throttle_events++;
}

/*
 * Make room for one more buffer: evict idle clean buffers from the LRU
 * head, writing back a batch first when the head is dirty.  With nothing
 * idle the budget is exceeded (returns 0, counted).  -EIO if a write-back
 * failed.
 */
static int make_room(struct sfs_cache *c)
{
	int rc;

	while (c->ctr.cached_bytes + da_bytes(c) + c->bs > c->budget_bytes) {
		GList *head = c->lru.head;
		struct cbuf *b;

		if (!head) {
			c->ctr.over_budget_events++;
			break;
		}
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

/* A buffer whose last reference or pin went: onto the LRU, or freed. */
static void release(struct sfs_cache *c, struct cbuf *b)
{
	if (b->forgotten) {
		g_queue_unlink(&c->forgot, &b->lru_link);
		cbuf_free(c, b);
		return;
	}
	g_queue_push_tail_link(&c->lru, &b->lru_link);
	if (b->dirty)
		c->bg_blocked = false;
	trim_clean(c);
}

static bool blk_in_range(const struct sfs_cache *c, sfs_blk_t blk, uint64_t n)
{
	return n <= c->nblocks && blk <= c->nblocks - n;
}

/* ---- the flusher ---- */

/* Periodic (kupdate) pass for the wakeup at grid time g. */
static int kupdate(struct sfs_cache *c, sfs_ns_t g)
{
	int64_t n;

	if (g < c->expire_ns)
		return 0; /* nothing can be that old yet */
	n = write_oldest(c, true, g - c->expire_ns, 0, SFS_WB_PERIODIC);
	return n < 0 ? (int)n : 0;
}

/* Background pass: write while over the background threshold. */
static int background(struct sfs_cache *c)
{
	int64_t n;

	if (c->bg_blocked || wb_dirty(c) <= c->bg_thresh)
		return 0;
	n = write_oldest(c, false, 0, c->bg_thresh, SFS_WB_BACKGROUND);
	if (n <= 0 || wb_dirty(c) > c->bg_thresh)
		c->bg_blocked = true; /* stuck: retry after a change */
	return n < 0 ? (int)n : 0;
}

/*
 * The flusher's due work.  The periodic wakeup runs on a grid (the last
 * wakeup + interval); a tick that comes late runs the latest grid point
 * due, so skipped empty wakeups change nothing.  As 2.6's wb_kupdate, the
 * next wakeup is at least 1 s after a pass ends.
 */
int sfs_cache_tick(struct sfs_cache *c)
{
	sfs_ns_t now;
	int rc = 0, rc2;

	if (!c || !c->wb_active)
		return 0;
	now = now_ns(c);
	if (c->interval_ns && now >= c->next_kupdate_ns) {
		sfs_ns_t g = c->next_kupdate_ns + (now - c->next_kupdate_ns) /
						      c->interval_ns *
						      c->interval_ns;
		sfs_ns_t next, end;

		rc = kupdate(c, g);
		end = now_ns(c);
		next = g + c->interval_ns;
		if (next < end + SFS_NS_PER_S)
			next = end + SFS_NS_PER_S;
		c->next_kupdate_ns = next;
	}
	rc2 = background(c);
	return rc ? rc : rc2;
}

sfs_ns_t sfs_cache_next_deadline(struct sfs_cache *c)
{
	struct cbuf *oldest = NULL;
	sfs_ns_t due, next;

	if (!c || !c->wb_active)
		return SFS_CACHE_NO_DEADLINE;
	if (!c->bg_blocked && wb_dirty(c) > c->bg_thresh)
		return now_ns(c);
	if (!c->interval_ns)
		return SFS_CACHE_NO_DEADLINE;
	for (GList *l = c->dirty.head; l && !oldest; l = l->next) {
		struct cbuf *b = l->data;

		if (!b->pins)
			oldest = b;
	}
	due = oldest ? oldest->dirtied_ns : SFS_CACHE_NO_DEADLINE;
	if (da_bytes(c))
		due = MIN(due, c->da->oldest_ns(c->da_ctx));
	if (due == SFS_CACHE_NO_DEADLINE)
		return SFS_CACHE_NO_DEADLINE;
	due += c->expire_ns;
	next = c->next_kupdate_ns;
	if (due <= next)
		return next;
	return next + (due - next + c->interval_ns - 1) / c->interval_ns *
			  c->interval_ns;
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
		note_use(c, b, true);
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

/*
 * Block blk without reading it: data's bytes (a pool slot, taken) or zeros
 * (data NULL), unless cached.  -EINVAL, -EIO (data stays the caller's).
 */
static int get_new(struct sfs_cache *c, sfs_blk_t blk, enum sfs_io_cat cat,
		   uint8_t *data, struct sfs_buf **out)
{
	struct cbuf *b;
	int rc;

	if (!blk_in_range(c, blk, 1))
		return -EINVAL;
	b = cache_lookup(c, blk);
	if (b) {
		c->ctr.hits++;
		note_use(c, b, false);
		b->cat = cat;
		b->pub.checked = 0; /* the caller rewrites it */
		grab(c, b);
		if (data) {
			memcpy(b->pub.data, data, c->bs);
			pool_put(&c->data, data);
		}
		*out = &b->pub;
		return 0;
	}
	rc = make_room(c);
	if (rc)
		return rc;
	if (data) {
		b = cbuf_alloc_over(c, blk, cat, data);
	} else {
		b = cbuf_alloc(c, blk, cat);
		memset(b->pub.data, 0, c->bs);
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
	return get_new(c, blk, cat, NULL, out);
}

/* The same over data from sfs_cache_block_alloc (cache.h). */
int sfs_cache_get_new_from(struct sfs_cache *c, sfs_blk_t blk,
			   enum sfs_io_cat cat, uint8_t *data,
			   struct sfs_buf **out)
{
	if (!data)
		return -EINVAL;
	return get_new(c, blk, cat, data, out);
}

uint8_t *sfs_cache_block_alloc(struct sfs_cache *c)
{
	uint8_t *data;

	/* The budget holds delayed data too: make room for one more block
	 * by evicting idle clean buffers (no I/O here; the writer's
	 * throttle writes dirty ones), whose memory the pool then reuses. */
	while (c->ctr.cached_bytes + da_bytes(c) + c->bs > c->budget_bytes &&
	       c->lru.head && !((struct cbuf *)c->lru.head->data)->dirty)
		evict(c, c->lru.head->data);
	data = pool_get(&c->data);

	memset(data, 0, c->bs);
	return data;
}

void sfs_cache_block_free(struct sfs_cache *c, uint8_t *data)
{
	if (data)
		pool_put(&c->data, data);
}

/* Mark b dirty (a discarded buffer's changes are dropped); throttle. */
void sfs_cache_dirty(struct sfs_cache *c, struct sfs_buf *pub)
{
	struct cbuf *b = to_cbuf(pub);

	if (b->forgotten)
		return;
	mark_dirty(c, b);
	balance_dirty(c);
}

/* Drop a reference; the buffer stays cached while the budget allows. */
void sfs_cache_put(struct sfs_cache *c, struct sfs_buf *pub)
{
	struct cbuf *b;

	if (!pub)
		return;
	b = to_cbuf(pub);
	g_assert(b->refs > 0);
	if (--b->refs || b->pins)
		return;
	release(c, b);
}

/*
 * Read uncached blocks [blk+i, blk+j) (one run) with one device request
 * into dst (or c->rabuf when dst is NULL) and cache them clean and idle;
 * failing to make room only leaves the rest uncached.  ra marks them as
 * read ahead.  Returns 0 or -EIO; *cached_out = blocks cached.
 */
static int read_in(struct sfs_cache *c, sfs_blk_t blk, uint32_t n,
		   enum sfs_io_cat cat, uint8_t *dst, bool ra,
		   uint32_t *cached_out)
{
	uint32_t k;

	*cached_out = 0;
	if (sfs_bdev_read(c->bd, cat, (uint64_t)blk * c->bs, dst,
			  (size_t)n * c->bs))
		return -EIO;
	for (k = 0; k < n; k++) {
		struct cbuf *b;

		if (ra && !c->lru.head &&
		    c->ctr.cached_bytes + c->bs > c->budget_bytes)
			break; /* read-ahead never grows the cache past it */
		if (make_room(c))
			break;
		b = cbuf_alloc(c, blk + k, cat);
		memcpy(b->pub.data, dst + (size_t)k * c->bs, c->bs);
		b->ra = ra;
		cache_insert(c, b);
		g_queue_push_tail_link(&c->lru, &b->lru_link);
	}
	*cached_out = k;
	return 0;
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
	uint32_t i = 0, got;
	int rc;

	if (!buf || !blk_in_range(c, blk, n))
		return -EINVAL;
	while (i < n) {
		struct cbuf *b = cache_lookup(c, blk + i);
		uint32_t j;

		if (b) {
			memcpy(dst + (size_t)i * c->bs, b->pub.data, c->bs);
			c->ctr.hits++;
			note_use(c, b, true);
			touch(c, b);
			i++;
			continue;
		}
		for (j = i + 1; j < n && !cache_lookup(c, blk + j); j++)
			;
		c->ctr.misses += j - i;
		rc = read_in(c, blk + i, j - i, cat, dst + (size_t)i * c->bs,
			     false, &got);
		if (rc)
			return rc;
		i = j;
	}
	return 0;
}

/* Read ahead the uncached blocks of [blk, blk+n).  -EINVAL, -EIO. */
int sfs_cache_readahead(struct sfs_cache *c, sfs_blk_t blk, uint32_t n,
			enum sfs_io_cat cat)
{
	uint32_t i = 0, got;
	int rc;

	if (!c || !blk_in_range(c, blk, n))
		return -EINVAL;
	while (i < n) {
		uint32_t j;

		if (cache_lookup(c, blk + i)) {
			i++;
			continue;
		}
		if (!c->lru.head &&
		    c->ctr.cached_bytes + c->bs > c->budget_bytes)
			return 0; /* nothing evictable: no room to read ahead */
		for (j = i + 1; j < n && j - i < c->max_req_blocks &&
				!cache_lookup(c, blk + j);
		     j++)
			;
		if (get_bounce(c, &c->rabuf))
			return -EIO;
		rc = read_in(c, blk + i, j - i, cat, c->rabuf, true, &got);
		if (rc)
			return rc;
		c->ctr.readahead_blocks += got;
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
			note_use(c, b, false);
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
	balance_dirty(c);
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
	if (is_idle(b)) {
		g_queue_unlink(&c->lru, &b->lru_link);
		cbuf_free(c, b);
	} else {
		/* Referenced or pinned: valid memory until released. */
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

/* Write every unpinned dirty buffer (sorted, merged), then flush. */
int sfs_cache_sync(struct sfs_cache *c)
{
	size_t n = 0;
	struct cbuf **bufs;
	int rc = 0;

	if (da_bytes(c)) {
		int64_t w = da_writeback(c, true, SFS_CACHE_NO_DEADLINE,
					 UINT64_MAX, SFS_WB_SYNC);
		if (w < 0)
			return (int)w;
	}
	if (c->dirty.length) {
		bufs = g_new(struct cbuf *, c->dirty.length);
		for (GList *l = c->dirty.head; l; l = l->next) {
			struct cbuf *b = l->data;

			if (!b->pins)
				bufs[n++] = b;
		}
		rc = write_back(c, bufs, n, SFS_WB_SYNC);
		g_free(bufs);
		if (rc)
			return rc;
	}
	if (sfs_bdev_flush(c->bd))
		return -EIO;
	trim_clean(c);
	return 0;
}

/* ---- journal hooks ---- */

void sfs_cache_pin(struct sfs_cache *c, struct sfs_buf *pub)
{
	struct cbuf *b = to_cbuf(pub);

	if (is_idle(b))
		g_queue_unlink(&c->lru, &b->lru_link);
	if (b->pins++ == 0) {
		c->ctr.pinned_blocks++;
		if (b->dirty)
			c->pinned_dirty += c->bs;
	}
}

void sfs_cache_unpin(struct sfs_cache *c, struct sfs_buf *pub)
{
	struct cbuf *b = to_cbuf(pub);

	g_assert(b->pins > 0);
	if (--b->pins)
		return;
	c->ctr.pinned_blocks--;
	if (b->dirty) {
		c->pinned_dirty -= c->bs;
		c->bg_blocked = false;
	}
	if (b->refs == 0)
		release(c, b);
}

static int cmp_blkno(const void *a, const void *b)
{
	sfs_blk_t x = *(const sfs_blk_t *)a, y = *(const sfs_blk_t *)b;

	return x < y ? -1 : x > y;
}

int sfs_cache_write_blocks(struct sfs_cache *c, const sfs_blk_t *blks, size_t n)
{
	return sfs_cache_write_blocks_why(c, blks, n, SFS_WB_EXPLICIT);
}

/* Write the listed dirty unpinned blocks now, one batch.  0 or -EIO. */
int sfs_cache_write_blocks_why(struct sfs_cache *c, const sfs_blk_t *blks,
			       size_t n, enum sfs_wb_reason why)
{
	struct cbuf **bufs;
	sfs_blk_t *sorted;
	size_t m = 0;
	int rc;

	if (!c || (n && !blks))
		return -EINVAL;
	if (n == 0)
		return 0;
	sorted = g_new(sfs_blk_t, n);
	memcpy(sorted, blks, n * sizeof(*blks));
	qsort(sorted, n, sizeof(*sorted), cmp_blkno);
	bufs = g_new(struct cbuf *, n);
	for (size_t i = 0; i < n; i++) {
		struct cbuf *b;

		if (i && sorted[i] == sorted[i - 1])
			continue;
		b = cache_lookup(c, sorted[i]);
		if (b && b->dirty && !b->pins)
			bufs[m++] = b;
	}
	rc = write_back(c, bufs, m, why);
	g_free(bufs);
	g_free(sorted);
	return rc;
}

void sfs_cache_drop_clean(struct sfs_cache *c, const sfs_blk_t *blks,
			  size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct cbuf *b = cache_lookup(c, blks[i]);

		if (b && !b->dirty && is_idle(b))
			evict(c, b);
	}
}

void sfs_cache_set_delayed(struct sfs_cache *c,
			   const struct sfs_cache_delayed *ops, void *ctx)
{
	c->da = ops;
	c->da_ctx = ctx;
	c->bg_blocked = false;
}

void sfs_cache_balance(struct sfs_cache *c)
{
	c->bg_blocked = false;
	balance_dirty(c);
}

bool sfs_cache_is_dirty(struct sfs_cache *c, sfs_blk_t blk)
{
	struct cbuf *b = cache_lookup(c, blk);

	return b && b->dirty;
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
	pool_fini(&c->data);
	pool_fini(&c->hdrs);
	g_free(c->wiov);
	free(c->rabuf);
	g_free(c);
}
