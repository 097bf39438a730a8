/*
 * stats.c - sources, the snapshot tree, JSON and the table (see stats.h).
 *
 * A snapshot runs every source's callback with a writer whose stack of
 * open sections starts at that source's own section node.  The callbacks
 * build a tree of struct st_node (sections hold their children in order);
 * JSON and the table are both rendered from that one tree, so they always
 * agree.  JSON goes through json-glib's JsonBuilder and JsonGenerator:
 * nothing here escapes a string by hand.
 *
 * Locking: st->lock protects st->sources and is held across the callbacks
 * of a snapshot (and of a freeze).  A source's destroy function runs after
 * st->lock is dropped.  The writer and the tree belong to the one thread
 * taking the snapshot.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "stats.h"
#include "timedev.h"

#define ST_VERSION_KEY "simfs_stats_version"
#define ST_VERSION 1

enum st_type {
	ST_SECTION,
	ST_U64,
	ST_I64,
	ST_DOUBLE,
	ST_BOOL,
	ST_STR,
	ST_HIST,
};

/* One value or section of a snapshot. */
struct st_node {
	char *name; /* valid UTF-8; NULL only for the root */
	enum st_type type;
	union {
		uint64_t u;
		int64_t i;
		double d;
		bool b;
		char *s;	    /* ST_STR: valid UTF-8 */
		struct sfs_hist *h; /* ST_HIST: a copy */
		GPtrArray *kids;    /* ST_SECTION: struct st_node *, owned */
	} v;
};

struct st_source {
	char *section;
	sfs_stats_source_fn fn; /* NULL once frozen */
	void *ctx;
	GDestroyNotify destroy; /* may be NULL */
	struct st_node *frozen; /* the kept values once frozen, else NULL */
};

struct sfs_stats {
	sfs_mutex lock;
	GPtrArray *sources; /* struct st_source *, in order; by lock */
};

struct sfs_stats_writer {
	GPtrArray *stack; /* open sections, [0] = the source's own */
};

/* ------------------------------------------------------------------ */
/* histograms                                                          */
/* ------------------------------------------------------------------ */

double sfs_hist_mean(const struct sfs_hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0.0;
}

void sfs_hist_merge(struct sfs_hist *dst, const struct sfs_hist *src)
{
	if (!src->count)
		return;
	if (!dst->count || src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	if (__builtin_add_overflow(dst->sum, src->sum, &dst->sum))
		dst->sum = UINT64_MAX;
	for (unsigned i = 0; i < SFS_HIST_NBUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
}

void sfs_hist_reset(struct sfs_hist *h)
{
	memset(h, 0, sizeof(*h));
}

/* ------------------------------------------------------------------ */
/* the tree                                                            */
/* ------------------------------------------------------------------ */

static void node_free(gpointer p)
{
	struct st_node *n = p;

	if (!n)
		return;
	switch (n->type) {
	case ST_SECTION:
		g_ptr_array_free(n->v.kids, TRUE);
		break;
	case ST_STR:
		g_free(n->v.s);
		break;
	case ST_HIST:
		g_free(n->v.h);
		break;
	default:
		break;
	}
	g_free(n->name);
	g_free(n);
}

/* A node named name (made valid UTF-8; NULL becomes "?"). */
static struct st_node *node_new(const char *name, enum st_type type)
{
	struct st_node *n = g_new0(struct st_node, 1);

	n->name = g_utf8_make_valid(name ? name : "?", -1);
	n->type = type;
	if (type == ST_SECTION)
		n->v.kids = g_ptr_array_new_with_free_func(node_free);
	return n;
}

static struct st_node *node_copy(const struct st_node *n)
{
	struct st_node *c = g_new0(struct st_node, 1);

	c->name = g_strdup(n->name);
	c->type = n->type;
	switch (n->type) {
	case ST_SECTION:
		c->v.kids = g_ptr_array_new_with_free_func(node_free);
		for (guint i = 0; i < n->v.kids->len; i++)
			g_ptr_array_add(c->v.kids,
					node_copy(n->v.kids->pdata[i]));
		break;
	case ST_STR:
		c->v.s = g_strdup(n->v.s);
		break;
	case ST_HIST:
		c->v.h = g_new(struct sfs_hist, 1);
		*c->v.h = *n->v.h;
		break;
	default:
		c->v = n->v;
		break;
	}
	return c;
}

static struct st_node *section_find(struct st_node *sec, const char *name)
{
	for (guint i = 0; i < sec->v.kids->len; i++) {
		struct st_node *k = sec->v.kids->pdata[i];
		if (strcmp(k->name, name) == 0)
			return k;
	}
	return NULL;
}

/* Add n to sec, replacing (in place) an entry of the same name. */
static void section_put(struct st_node *sec, struct st_node *n)
{
	for (guint i = 0; i < sec->v.kids->len; i++) {
		struct st_node *k = sec->v.kids->pdata[i];
		if (strcmp(k->name, n->name) == 0) {
			node_free(k);
			sec->v.kids->pdata[i] = n;
			return;
		}
	}
	g_ptr_array_add(sec->v.kids, n);
}

/* ------------------------------------------------------------------ */
/* writer                                                              */
/* ------------------------------------------------------------------ */

static struct st_node *w_cur(struct sfs_stats_writer *w)
{
	return w->stack->pdata[w->stack->len - 1];
}

static void w_put(struct sfs_stats_writer *w, struct st_node *n)
{
	if (!w) {
		node_free(n);
		return;
	}
	section_put(w_cur(w), n);
}

void sfs_stats_put_u64(struct sfs_stats_writer *w, const char *name, uint64_t v)
{
	struct st_node *n = node_new(name, ST_U64);

	n->v.u = v;
	w_put(w, n);
}

void sfs_stats_put_i64(struct sfs_stats_writer *w, const char *name, int64_t v)
{
	struct st_node *n = node_new(name, ST_I64);

	n->v.i = v;
	w_put(w, n);
}

void sfs_stats_put_double(struct sfs_stats_writer *w, const char *name,
			  double v)
{
	struct st_node *n = node_new(name, ST_DOUBLE);

	n->v.d = v;
	w_put(w, n);
}

void sfs_stats_put_bool(struct sfs_stats_writer *w, const char *name, bool v)
{
	struct st_node *n = node_new(name, ST_BOOL);

	n->v.b = v;
	w_put(w, n);
}

void sfs_stats_put_str(struct sfs_stats_writer *w, const char *name,
		       const char *v)
{
	struct st_node *n = node_new(name, ST_STR);

	n->v.s = g_utf8_make_valid(v ? v : "", -1);
	w_put(w, n);
}

void sfs_stats_put_hist(struct sfs_stats_writer *w, const char *name,
			const struct sfs_hist *h)
{
	struct st_node *n = node_new(name, ST_HIST);

	n->v.h = g_new0(struct sfs_hist, 1);
	if (h)
		*n->v.h = *h;
	w_put(w, n);
}

void sfs_stats_begin(struct sfs_stats_writer *w, const char *name)
{
	struct st_node *n, *old;

	if (!w)
		return;
	n = node_new(name, ST_SECTION);
	old = section_find(w_cur(w), n->name);
	if (old && old->type == ST_SECTION) {
		/* a second begin of the same name adds to the first */
		node_free(n);
		n = old;
	} else {
		section_put(w_cur(w), n);
	}
	g_ptr_array_add(w->stack, n);
}

void sfs_stats_end(struct sfs_stats_writer *w)
{
	if (w && w->stack->len > 1)
		g_ptr_array_set_size(w->stack, w->stack->len - 1);
}

/* Run one source into a fresh section node. */
static struct st_node *source_run(struct st_source *src)
{
	struct st_node *sec;
	struct sfs_stats_writer w;

	if (src->frozen)
		return node_copy(src->frozen);
	sec = node_new(src->section, ST_SECTION);
	w.stack = g_ptr_array_new();
	g_ptr_array_add(w.stack, sec);
	src->fn(src->ctx, &w);
	g_ptr_array_free(w.stack, TRUE);
	return sec;
}

/* ------------------------------------------------------------------ */
/* sources                                                             */
/* ------------------------------------------------------------------ */

static void source_free(struct st_source *src)
{
	if (src->destroy)
		src->destroy(src->ctx);
	node_free(src->frozen);
	g_free(src->section);
	g_free(src);
}

struct sfs_stats *sfs_stats_new(void)
{
	struct sfs_stats *st = g_new0(struct sfs_stats, 1);

	sfs_mutex_init(&st->lock);
	st->sources = g_ptr_array_new();
	return st;
}

void sfs_stats_free(struct sfs_stats *st)
{
	if (!st)
		return;
	for (guint i = 0; i < st->sources->len; i++)
		source_free(st->sources->pdata[i]);
	g_ptr_array_free(st->sources, TRUE);
	sfs_mutex_clear(&st->lock);
	g_free(st);
}

/* Index of section in st->sources or -1.  Caller holds st->lock. */
static int source_index(struct sfs_stats *st, const char *section)
{
	for (guint i = 0; i < st->sources->len; i++) {
		struct st_source *src = st->sources->pdata[i];
		if (strcmp(src->section, section) == 0)
			return (int)i;
	}
	return -1;
}

int sfs_stats_add_source_full(struct sfs_stats *st, const char *section,
			      sfs_stats_source_fn fn, void *ctx,
			      GDestroyNotify destroy)
{
	struct st_source *src;
	int rc = 0;

	if (!st || !section || !*section || !fn ||
	    strcmp(section, ST_VERSION_KEY) == 0 ||
	    !g_utf8_validate(section, -1, NULL))
		return -EINVAL;
	sfs_mutex_lock(&st->lock);
	if (source_index(st, section) >= 0) {
		rc = -EEXIST;
		goto out_unlock;
	}
	src = g_new0(struct st_source, 1);
	src->section = g_strdup(section);
	src->fn = fn;
	src->ctx = ctx;
	src->destroy = destroy;
	g_ptr_array_add(st->sources, src);
out_unlock:
	sfs_mutex_unlock(&st->lock);
	return rc;
}

int sfs_stats_add_source(struct sfs_stats *st, const char *section,
			 sfs_stats_source_fn fn, void *ctx)
{
	return sfs_stats_add_source_full(st, section, fn, ctx, NULL);
}

int sfs_stats_remove_source(struct sfs_stats *st, const char *section)
{
	struct st_source *src = NULL;
	int i;

	if (!st || !section)
		return -EINVAL;
	sfs_mutex_lock(&st->lock);
	i = source_index(st, section);
	if (i >= 0)
		src = g_ptr_array_steal_index(st->sources, (guint)i);
	sfs_mutex_unlock(&st->lock);
	if (!src)
		return -ENOENT;
	source_free(src);
	return 0;
}

int sfs_stats_freeze_source(struct sfs_stats *st, const char *section)
{
	struct st_source *src;
	GDestroyNotify destroy = NULL;
	void *ctx = NULL;
	int i;

	if (!st || !section)
		return -EINVAL;
	sfs_mutex_lock(&st->lock);
	i = source_index(st, section);
	if (i < 0) {
		sfs_mutex_unlock(&st->lock);
		return -ENOENT;
	}
	src = st->sources->pdata[i];
	if (!src->frozen) {
		src->frozen = source_run(src);
		destroy = src->destroy;
		ctx = src->ctx;
		src->fn = NULL;
		src->ctx = NULL;
		src->destroy = NULL;
	}
	sfs_mutex_unlock(&st->lock);
	if (destroy)
		destroy(ctx);
	return 0;
}

bool sfs_stats_has_source(struct sfs_stats *st, const char *section)
{
	bool found;

	if (!st || !section)
		return false;
	sfs_mutex_lock(&st->lock);
	found = source_index(st, section) >= 0;
	sfs_mutex_unlock(&st->lock);
	return found;
}

/* ------------------------------------------------------------------ */
/* ready-made sources: block device and cache                          */
/* ------------------------------------------------------------------ */

void sfs_stats_put_bdev(struct sfs_stats_writer *w, const struct sfs_bdev *bd)
{
	struct sfs_bdev_counters c;
	static const enum sfs_io_op ops[] = {SFS_IO_READ, SFS_IO_WRITE,
					     SFS_IO_FLUSH};

	sfs_bdev_counters(bd, &c);
	sfs_stats_put_str(w, "name", sfs_bdev_name(bd));
	sfs_stats_put_u64(w, "size_bytes", sfs_bdev_size_bytes(bd));
	for (unsigned i = 0; i < G_N_ELEMENTS(ops); i++) {
		sfs_stats_begin(w, sfs_io_op_name(ops[i]));
		sfs_stats_put_u64(w, "requests", c.reqs[ops[i]]);
		if (ops[i] != SFS_IO_FLUSH)
			sfs_stats_put_u64(w, "bytes", c.bytes[ops[i]]);
		sfs_stats_end(w);
	}
	sfs_stats_put_u64(w, "errors", c.errors);
	sfs_stats_begin(w, "by_category");
	for (unsigned k = 0; k < SFS_IO_NCAT; k++) {
		sfs_stats_begin(w, sfs_io_cat_name(k));
		sfs_stats_put_u64(w, "read_requests",
				  c.cat_reqs[SFS_IO_READ][k]);
		sfs_stats_put_u64(w, "read_bytes", c.cat_bytes[SFS_IO_READ][k]);
		sfs_stats_put_u64(w, "write_requests",
				  c.cat_reqs[SFS_IO_WRITE][k]);
		sfs_stats_put_u64(w, "write_bytes",
				  c.cat_bytes[SFS_IO_WRITE][k]);
		sfs_stats_end(w);
	}
	sfs_stats_end(w);
}

void sfs_stats_put_cache(struct sfs_stats_writer *w, const struct sfs_cache *c)
{
	struct sfs_cache_counters k;
	uint64_t gets;

	sfs_cache_counters(c, &k);
	gets = k.hits + k.misses;
	sfs_stats_put_u64(w, "hits", k.hits);
	sfs_stats_put_u64(w, "misses", k.misses);
	sfs_stats_put_double(w, "hit_ratio",
			     gets ? (double)k.hits / (double)gets : 0.0);
	sfs_stats_put_u64(w, "writebacks", k.writebacks);
	sfs_stats_put_u64(w, "evictions", k.evictions);
	sfs_stats_put_u64(w, "died_dirty_bytes", k.died_dirty_bytes);
	sfs_stats_put_u64(w, "peak_dirty_bytes", k.peak_dirty_bytes);
	sfs_stats_put_u64(w, "cached_bytes", k.cached_bytes);
	sfs_stats_put_u64(w, "dirty_bytes", k.dirty_bytes);
	sfs_stats_begin(w, "writeback_bytes");
	for (unsigned r = 0; r < SFS_WB_NREASONS; r++)
		sfs_stats_put_u64(w, sfs_wb_reason_name(r), k.wb_bytes[r]);
	sfs_stats_end(w);
	sfs_stats_put_u64(w, "throttle_events", k.throttle_events);
	sfs_stats_put_u64(w, "writeback_errors", k.writeback_errors);
	sfs_stats_put_u64(w, "readahead_blocks", k.readahead_blocks);
	sfs_stats_put_u64(w, "readahead_hits", k.readahead_hits);
	sfs_stats_put_u64(w, "readahead_wasted", k.readahead_wasted);
	sfs_stats_put_u64(w, "pinned_blocks", k.pinned_blocks);
	sfs_stats_put_u64(w, "over_budget_events", k.over_budget_events);
	sfs_stats_put_u64(w, "budget_bytes", k.budget_bytes);
	sfs_stats_put_u64(w, "dirty_limit_bytes", k.dirty_limit_bytes);
	sfs_stats_put_u64(w, "background_limit_bytes",
			  k.background_limit_bytes);
}

void sfs_stats_put_timedev(struct sfs_stats_writer *w, struct sfs_bdev *bd)
{
	static const enum sfs_io_op ops[] = {SFS_IO_READ, SFS_IO_WRITE,
					     SFS_IO_FLUSH};
	const struct sfs_devmodel *m = sfs_timedev_model(bd);
	struct sfs_timedev_counters c;

	if (sfs_timedev_counters(bd, &c))
		return;
	sfs_stats_put_str(w, "model", m ? sfs_devmodel_name(m) : "?");
	sfs_stats_begin(w, "submitted");
	for (unsigned i = 0; i < G_N_ELEMENTS(ops); i++) {
		sfs_stats_begin(w, sfs_io_op_name(ops[i]));
		sfs_stats_put_u64(w, "requests", c.reqs[ops[i]]);
		if (ops[i] != SFS_IO_FLUSH)
			sfs_stats_put_u64(w, "bytes", c.bytes[ops[i]]);
		sfs_stats_end(w);
	}
	sfs_stats_begin(w, "by_category");
	for (unsigned k = 0; k < SFS_IO_NCAT; k++) {
		sfs_stats_begin(w, sfs_io_cat_name(k));
		sfs_stats_put_u64(w, "read_requests",
				  c.cat_reqs[SFS_IO_READ][k]);
		sfs_stats_put_u64(w, "read_bytes", c.cat_bytes[SFS_IO_READ][k]);
		sfs_stats_put_u64(w, "write_requests",
				  c.cat_reqs[SFS_IO_WRITE][k]);
		sfs_stats_put_u64(w, "write_bytes",
				  c.cat_bytes[SFS_IO_WRITE][k]);
		sfs_stats_end(w);
	}
	sfs_stats_end(w);
	sfs_stats_end(w);
	sfs_stats_begin(w, "served");
	for (unsigned i = 0; i < G_N_ELEMENTS(ops); i++)
		sfs_stats_put_u64(w, sfs_io_op_name(ops[i]),
				  c.dev_reqs[ops[i]]);
	sfs_stats_put_u64(w, "merges", c.merges);
	sfs_stats_put_u64(w, "expired", c.expired);
	sfs_stats_put_u64(w, "slice_switches", c.slice_switches);
	sfs_stats_put_u64(w, "shared_writeouts", c.shared_writeouts);
	sfs_stats_put_u64(w, "queue_max", c.queue_max);
	sfs_stats_put_double(w, "queue_mean",
			     c.queue_samples
				 ? (double)c.queue_sum / (double)c.queue_samples
				 : 0.0);
	sfs_stats_put_u64(w, "cache_hits", c.cache_hits);
	sfs_stats_end(w);
	sfs_stats_put_u64(w, "busy_ns", c.busy_ns);
	sfs_stats_begin(w, "busy_parts_ns");
	sfs_stats_put_u64(w, "overhead", c.overhead_ns);
	sfs_stats_put_u64(w, "seek", c.seek_ns);
	sfs_stats_put_u64(w, "rotation", c.rotation_ns);
	sfs_stats_put_u64(w, "transfer", c.transfer_ns);
	sfs_stats_end(w);
	sfs_stats_put_u64(w, "queue_ns", c.queue_ns);
	sfs_stats_put_u64(w, "seeks", c.seeks);
	sfs_stats_put_u64(w, "seek_bytes", c.seek_bytes);
	sfs_stats_put_double(w, "mean_seek_bytes",
			     c.seeks ? (double)c.seek_bytes / (double)c.seeks
				     : 0.0);
	sfs_stats_put_u64(w, "seek_cylinders", c.seek_cyl);
	sfs_stats_put_u64(w, "busy_until_ns", c.busy_until_ns);
}

static void timedev_source(void *ctx, struct sfs_stats_writer *w)
{
	sfs_stats_put_timedev(w, ctx);
}

int sfs_stats_add_timedev(struct sfs_stats *st, const char *section,
			  struct sfs_bdev *bd)
{
	struct sfs_timedev_counters c;

	if (!bd || sfs_timedev_counters(bd, &c))
		return -EINVAL;
	return sfs_stats_add_source(st, section, timedev_source, bd);
}

static void bdev_source(void *ctx, struct sfs_stats_writer *w)
{
	sfs_stats_put_bdev(w, ctx);
}

int sfs_stats_add_bdev(struct sfs_stats *st, const char *section,
		       struct sfs_bdev *bd)
{
	if (!bd)
		return -EINVAL;
	return sfs_stats_add_source(st, section, bdev_source, bd);
}

struct cache_src {
	struct sfs_cache *cache;
	sfs_mutex *lock; /* serialises the cache, or NULL */
};

static void cache_source(void *ctx, struct sfs_stats_writer *w)
{
	struct cache_src *cs = ctx;

	if (cs->lock)
		sfs_mutex_lock(cs->lock);
	sfs_stats_put_cache(w, cs->cache);
	if (cs->lock)
		sfs_mutex_unlock(cs->lock);
}

int sfs_stats_add_cache(struct sfs_stats *st, const char *section,
			struct sfs_cache *c, sfs_mutex *lock)
{
	struct cache_src *cs;
	int rc;

	if (!c)
		return -EINVAL;
	cs = g_new0(struct cache_src, 1);
	cs->cache = c;
	cs->lock = lock;
	rc = sfs_stats_add_source_full(st, section, cache_source, cs, g_free);
	if (rc)
		g_free(cs);
	return rc;
}

/* ------------------------------------------------------------------ */
/* snapshot and JSON                                                   */
/* ------------------------------------------------------------------ */

/* Every source run, under st->lock: a root section of sections. */
static struct st_node *snapshot_tree(struct sfs_stats *st)
{
	struct st_node *root = node_new("", ST_SECTION);

	sfs_mutex_lock(&st->lock);
	for (guint i = 0; i < st->sources->len; i++)
		g_ptr_array_add(root->v.kids,
				source_run(st->sources->pdata[i]));
	sfs_mutex_unlock(&st->lock);
	return root;
}

/* JSON integers are gint64: larger counters become doubles. */
static void json_u64(JsonBuilder *b, uint64_t v)
{
	if (v <= (uint64_t)INT64_MAX)
		json_builder_add_int_value(b, (gint64)v);
	else
		json_builder_add_double_value(b, (double)v);
}

static void json_member_u64(JsonBuilder *b, const char *name, uint64_t v)
{
	json_builder_set_member_name(b, name);
	json_u64(b, v);
}

static void json_hist(JsonBuilder *b, const struct sfs_hist *h)
{
	json_builder_begin_object(b);
	json_member_u64(b, "count", h->count);
	json_member_u64(b, "sum", h->sum);
	json_member_u64(b, "min", h->count ? h->min : 0);
	json_member_u64(b, "max", h->max);
	json_builder_set_member_name(b, "mean");
	json_builder_add_double_value(b, sfs_hist_mean(h));
	json_builder_set_member_name(b, "buckets");
	json_builder_begin_array(b);
	for (unsigned i = 0; i < SFS_HIST_NBUCKETS; i++) {
		if (!h->buckets[i])
			continue;
		json_builder_begin_object(b);
		json_member_u64(b, "lo", sfs_hist_bucket_lo(i));
		json_member_u64(b, "hi", sfs_hist_bucket_hi(i));
		json_member_u64(b, "count", h->buckets[i]);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	json_builder_end_object(b);
}

static void json_node_value(JsonBuilder *b, const struct st_node *n)
{
	switch (n->type) {
	case ST_SECTION:
		json_builder_begin_object(b);
		for (guint i = 0; i < n->v.kids->len; i++) {
			const struct st_node *k = n->v.kids->pdata[i];
			json_builder_set_member_name(b, k->name);
			json_node_value(b, k);
		}
		json_builder_end_object(b);
		break;
	case ST_U64:
		json_u64(b, n->v.u);
		break;
	case ST_I64:
		json_builder_add_int_value(b, n->v.i);
		break;
	case ST_DOUBLE:
		/* JSON has no NaN or infinity */
		if (isfinite(n->v.d))
			json_builder_add_double_value(b, n->v.d);
		else
			json_builder_add_null_value(b);
		break;
	case ST_BOOL:
		json_builder_add_boolean_value(b, n->v.b);
		break;
	case ST_STR:
		json_builder_add_string_value(b, n->v.s);
		break;
	case ST_HIST:
		json_hist(b, n->v.h);
		break;
	}
}

static JsonNode *tree_to_json(const struct st_node *root)
{
	JsonBuilder *b = json_builder_new();
	JsonNode *out;

	json_builder_begin_object(b);
	json_builder_set_member_name(b, ST_VERSION_KEY);
	json_builder_add_int_value(b, ST_VERSION);
	for (guint i = 0; i < root->v.kids->len; i++) {
		const struct st_node *k = root->v.kids->pdata[i];
		json_builder_set_member_name(b, k->name);
		json_node_value(b, k);
	}
	json_builder_end_object(b);
	out = json_builder_get_root(b);
	g_object_unref(b);
	return out;
}

JsonNode *sfs_stats_snapshot(struct sfs_stats *st)
{
	struct st_node *root = snapshot_tree(st);
	JsonNode *j = tree_to_json(root);

	node_free(root);
	return j;
}

char *sfs_stats_to_json(struct sfs_stats *st, bool pretty)
{
	JsonNode *j = sfs_stats_snapshot(st);
	JsonGenerator *gen = json_generator_new();
	char *text;

	json_generator_set_pretty(gen, pretty);
	json_generator_set_indent(gen, 2);
	json_generator_set_root(gen, j);
	text = json_generator_to_data(gen, NULL);
	g_object_unref(gen);
	json_node_unref(j);
	return text;
}

int sfs_stats_write_json(struct sfs_stats *st, const char *path)
{
	char *text, *tmp;
	size_t len, done = 0;
	int fd, rc = 0;

	if (!st || !path)
		return -EINVAL;
	text = sfs_stats_to_json(st, true);
	len = strlen(text);
	tmp = g_strconcat(path, ".XXXXXX", NULL);
	fd = g_mkstemp_full(tmp, O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		goto out_free;
	}
	while (done < len && !rc) {
		ssize_t n = write(fd, text + done, len - done);
		if (n < 0 && errno != EINTR)
			rc = -errno;
		else if (n > 0)
			done += (size_t)n;
	}
	if (!rc && write(fd, "\n", 1) != 1)
		rc = -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
out_free:
	g_free(tmp);
	g_free(text);
	return rc;
}

/* ------------------------------------------------------------------ */
/* table                                                               */
/* ------------------------------------------------------------------ */

/* One line of the table: a name and (unless a header) its value. */
struct st_row {
	unsigned depth; /* indentation level within the section */
	char *name;
	char *value; /* NULL for a sub-section header */
	bool wide;   /* value printed left-aligned, not in the number column */
};

static char *fmt_double(double v)
{
	if (!isfinite(v))
		return g_strdup(isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
	if (fabs(v) < 1e12)
		return g_strdup_printf("%.3f", v);
	return g_strdup_printf("%.4e", v);
}

/* Strings in the table: control characters shown as spaces. */
static char *fmt_str(const char *s)
{
	char *c = g_strdup(s);

	for (char *p = c; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	return c;
}

static char *fmt_buckets(const struct sfs_hist *h)
{
	GString *s = g_string_new(NULL);

	for (unsigned i = 0; i < SFS_HIST_NBUCKETS; i++) {
		uint64_t lo = sfs_hist_bucket_lo(i), hi = sfs_hist_bucket_hi(i);
		if (!h->buckets[i])
			continue;
		if (s->len)
			g_string_append_c(s, ' ');
		if (lo == hi)
			g_string_append_printf(s, "[%" PRIu64 "]", lo);
		else if (hi == UINT64_MAX)
			g_string_append_printf(s, "[%" PRIu64 "-]", lo);
		else
			g_string_append_printf(s, "[%" PRIu64 "-%" PRIu64 "]",
					       lo, hi);
		g_string_append_printf(s, "=%" PRIu64, h->buckets[i]);
	}
	if (!s->len)
		g_string_append(s, "(empty)");
	return g_string_free(s, FALSE);
}

static void row_add(GArray *rows, unsigned depth, const char *name, char *value,
		    bool wide)
{
	struct st_row r = {
	    .depth = depth,
	    .name = fmt_str(name),
	    .value = value,
	    .wide = wide,
	};

	g_array_append_val(rows, r);
}

static char *fmt_scalar(const struct st_node *n)
{
	switch (n->type) {
	case ST_U64:
		return g_strdup_printf("%" PRIu64, n->v.u);
	case ST_I64:
		return g_strdup_printf("%" PRId64, n->v.i);
	case ST_DOUBLE:
		return fmt_double(n->v.d);
	case ST_BOOL:
		return g_strdup(n->v.b ? "true" : "false");
	case ST_STR:
		return fmt_str(n->v.s);
	default:
		return NULL;
	}
}

/*
 * Is sec a grid: two or more sub-sections, each holding only scalars with
 * the same names in the same order (e.g. the device's by_category)?
 */
static bool is_grid(const struct st_node *sec)
{
	const struct st_node *first;

	if (sec->v.kids->len < 2)
		return false;
	first = sec->v.kids->pdata[0];
	for (guint i = 0; i < sec->v.kids->len; i++) {
		const struct st_node *k = sec->v.kids->pdata[i];
		if (k->type != ST_SECTION || !k->v.kids->len ||
		    k->v.kids->len != first->v.kids->len)
			return false;
		for (guint c = 0; c < k->v.kids->len; c++) {
			const struct st_node *v = k->v.kids->pdata[c];
			const struct st_node *f = first->v.kids->pdata[c];
			if (v->type == ST_SECTION || v->type == ST_HIST ||
			    strcmp(v->name, f->name) != 0)
				return false;
		}
	}
	return true;
}

/* A grid as one header row (column names) and one row per sub-section. */
static void rows_grid(GArray *rows, const struct st_node *sec, unsigned depth)
{
	const struct st_node *first = sec->v.kids->pdata[0];
	guint ncol = first->v.kids->len, nrow = sec->v.kids->len;
	char **cell = g_new0(char *, (gsize)ncol *nrow);
	size_t *w = g_new0(size_t, ncol);

	for (guint c = 0; c < ncol; c++) {
		const struct st_node *f = first->v.kids->pdata[c];
		w[c] = g_utf8_strlen(f->name, -1);
	}
	for (guint r = 0; r < nrow; r++) {
		const struct st_node *k = sec->v.kids->pdata[r];
		for (guint c = 0; c < ncol; c++) {
			cell[r * ncol + c] = fmt_scalar(k->v.kids->pdata[c]);
			w[c] =
			    MAX(w[c],
				(size_t)g_utf8_strlen(cell[r * ncol + c], -1));
		}
	}
	for (guint r = 0; r <= nrow; r++) {
		GString *line = g_string_new(NULL);
		for (guint c = 0; c < ncol; c++) {
			const struct st_node *f = first->v.kids->pdata[c];
			const char *t = r ? cell[(r - 1) * ncol + c] : f->name;
			size_t pad = w[c] - g_utf8_strlen(t, -1) + (c ? 2 : 0);
			g_string_append_printf(line, "%*s%s", (int)pad, "", t);
		}
		if (r) {
			const struct st_node *k = sec->v.kids->pdata[r - 1];
			row_add(rows, depth + 1, k->name,
				g_string_free(line, FALSE), true);
		} else {
			row_add(rows, depth, sec->name,
				g_string_free(line, FALSE), true);
		}
	}
	for (guint i = 0; i < ncol * nrow; i++)
		g_free(cell[i]);
	g_free(cell);
	g_free(w);
}

static void rows_collect(GArray *rows, const struct st_node *sec,
			 unsigned depth)
{
	for (guint i = 0; i < sec->v.kids->len; i++) {
		const struct st_node *n = sec->v.kids->pdata[i];
		const struct sfs_hist *h;

		switch (n->type) {
		case ST_SECTION:
			if (is_grid(n)) {
				rows_grid(rows, n, depth);
				break;
			}
			row_add(rows, depth, n->name, NULL, false);
			rows_collect(rows, n, depth + 1);
			break;
		case ST_U64:
		case ST_I64:
		case ST_DOUBLE:
		case ST_BOOL:
		case ST_STR:
			row_add(rows, depth, n->name, fmt_scalar(n), false);
			break;
		case ST_HIST:
			h = n->v.h;
			row_add(rows, depth, n->name,
				g_strdup_printf("count %" PRIu64
						"  mean %.3f  min %" PRIu64
						"  max %" PRIu64,
						h->count, sfs_hist_mean(h),
						h->count ? h->min : 0, h->max),
				true);
			row_add(rows, depth + 1, "buckets", fmt_buckets(h),
				true);
			break;
		}
	}
}

static void row_clear(gpointer p)
{
	struct st_row *r = p;

	g_free(r->name);
	g_free(r->value);
}

static void print_section(const struct st_node *sec, FILE *out)
{
	GArray *rows = g_array_new(FALSE, FALSE, sizeof(struct st_row));
	size_t name_w = 0, val_w = 0;

	g_array_set_clear_func(rows, row_clear);
	rows_collect(rows, sec, 1);
	for (guint i = 0; i < rows->len; i++) {
		struct st_row *r = &g_array_index(rows, struct st_row, i);
		size_t w = 2 * r->depth + g_utf8_strlen(r->name, -1);
		if (!r->value)
			continue;
		name_w = MAX(name_w, w);
		if (!r->wide)
			val_w = MAX(val_w, (size_t)g_utf8_strlen(r->value, -1));
	}
	fprintf(out, "%s\n", sec->name);
	for (guint i = 0; i < rows->len; i++) {
		struct st_row *r = &g_array_index(rows, struct st_row, i);
		size_t w = 2 * r->depth + g_utf8_strlen(r->name, -1);
		fprintf(out, "%*s%s", (int)(2 * r->depth), "", r->name);
		if (r->value) {
			size_t pad = name_w - w + 2;
			if (!r->wide)
				pad += val_w - g_utf8_strlen(r->value, -1);
			fprintf(out, "%*s%s", (int)pad, "", r->value);
		}
		fputc('\n', out);
	}
	g_array_free(rows, TRUE);
}

void sfs_stats_print_table(struct sfs_stats *st, FILE *out)
{
	struct st_node *root = snapshot_tree(st);

	for (guint i = 0; i < root->v.kids->len; i++) {
		if (i)
			fputc('\n', out);
		print_section(root->v.kids->pdata[i], out);
	}
	node_free(root);
}

/* ------------------------------------------------------------------ */
/* a JSON document back into a table                                   */
/* ------------------------------------------------------------------ */

/* Does obj look like what json_hist wrote? */
static bool json_is_hist(JsonObject *obj)
{
	static const char *const keys[] = {"count", "sum", "min", "max",
					   "mean"};
	JsonNode *b = json_object_get_member(obj, "buckets");

	if (!b || !JSON_NODE_HOLDS_ARRAY(b) || json_object_get_size(obj) != 6)
		return false;
	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
		JsonNode *n = json_object_get_member(obj, keys[i]);

		if (!n || !JSON_NODE_HOLDS_VALUE(n))
			return false;
	}
	return true;
}

static uint64_t json_get_u64(JsonObject *obj, const char *name)
{
	JsonNode *n = json_object_get_member(obj, name);

	if (!n || !JSON_NODE_HOLDS_VALUE(n))
		return 0;
	if (json_node_get_value_type(n) == G_TYPE_DOUBLE) {
		double d = json_node_get_double(n);

		return d <= 0			     ? 0
		       : d >= 18446744073709551615.0 ? UINT64_MAX
						     : (uint64_t)d;
	}
	return (uint64_t)json_node_get_int(n);
}

static struct st_node *node_from_json(const char *name, JsonNode *j)
{
	struct st_node *n;

	if (JSON_NODE_HOLDS_OBJECT(j)) {
		JsonObject *obj = json_node_get_object(j);
		GList *members, *l;

		if (json_is_hist(obj)) {
			JsonArray *b = json_node_get_array(
			    json_object_get_member(obj, "buckets"));

			n = node_new(name, ST_HIST);
			n->v.h = g_new0(struct sfs_hist, 1);
			n->v.h->count = json_get_u64(obj, "count");
			n->v.h->sum = json_get_u64(obj, "sum");
			n->v.h->min = json_get_u64(obj, "min");
			n->v.h->max = json_get_u64(obj, "max");
			for (guint i = 0; i < json_array_get_length(b); i++) {
				JsonNode *e = json_array_get_element(b, i);
				JsonObject *eo;

				if (!JSON_NODE_HOLDS_OBJECT(e))
					continue;
				eo = json_node_get_object(e);
				n->v.h->buckets[sfs_hist_bucket(json_get_u64(
				    eo, "lo"))] += json_get_u64(eo, "count");
			}
			return n;
		}
		n = node_new(name, ST_SECTION);
		members = json_object_get_members(obj); /* in order */
		for (l = members; l; l = l->next)
			g_ptr_array_add(
			    n->v.kids,
			    node_from_json(
				l->data, json_object_get_member(obj, l->data)));
		g_list_free(members);
		return n;
	}
	if (JSON_NODE_HOLDS_NULL(j)) {
		n = node_new(name, ST_DOUBLE);
		n->v.d = NAN;
		return n;
	}
	if (JSON_NODE_HOLDS_ARRAY(j)) {
		n = node_new(name, ST_STR);
		n->v.s = json_to_string(j, FALSE);
		return n;
	}
	switch (json_node_get_value_type(j)) {
	case G_TYPE_INT64:
		if (json_node_get_int(j) >= 0) {
			n = node_new(name, ST_U64);
			n->v.u = (uint64_t)json_node_get_int(j);
		} else {
			n = node_new(name, ST_I64);
			n->v.i = json_node_get_int(j);
		}
		return n;
	case G_TYPE_DOUBLE:
		n = node_new(name, ST_DOUBLE);
		n->v.d = json_node_get_double(j);
		return n;
	case G_TYPE_BOOLEAN:
		n = node_new(name, ST_BOOL);
		n->v.b = json_node_get_boolean(j);
		return n;
	default:
		n = node_new(name, ST_STR);
		n->v.s = g_utf8_make_valid(
		    json_node_get_string(j) ? json_node_get_string(j) : "", -1);
		return n;
	}
}

int sfs_stats_print_json_table(JsonNode *doc, FILE *out)
{
	JsonObject *obj;
	GList *members, *l;
	bool first = true;

	if (!doc || !JSON_NODE_HOLDS_OBJECT(doc))
		return -EINVAL;
	obj = json_node_get_object(doc);
	if (!json_object_has_member(obj, ST_VERSION_KEY))
		return -EINVAL;
	members = json_object_get_members(obj);
	for (l = members; l; l = l->next) {
		JsonNode *m = json_object_get_member(obj, l->data);
		struct st_node *sec;

		if (strcmp(l->data, ST_VERSION_KEY) == 0)
			continue;
		if (JSON_NODE_HOLDS_OBJECT(m) &&
		    !json_is_hist(json_node_get_object(m))) {
			sec = node_from_json(l->data, m);
		} else {
			/* a bare value at the top: a section of one */
			sec = node_new(l->data, ST_SECTION);
			g_ptr_array_add(sec->v.kids,
					node_from_json("value", m));
		}
		if (!first)
			fputc('\n', out);
		first = false;
		print_section(sec, out);
		node_free(sec);
	}
	g_list_free(members);
	return 0;
}
