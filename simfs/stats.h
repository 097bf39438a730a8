/*
 * stats.h - the one statistics structure every layer reports into.
 *
 * Layers keep their own counters in their own structs, updated on their hot
 * paths with plain increments (and sfs_hist_add, inline below); nothing here
 * is called per request.  Each layer registers a SOURCE: a section name, a
 * callback and its context.  At snapshot time the callbacks run in
 * registration order and write their current values into a writer, which
 * builds a tree; the tree becomes JSON (json-glib) or an aligned table.
 *
 *   st = sfs_stats_new();
 *   sfs_stats_add_bdev(st, "device", bd);          ready-made sources
 *   sfs_stats_add_source(st, "ops", engine_ops_cb, fs);
 *   ...
 *   json = sfs_stats_to_json(st, true);             any time, any thread
 *   sfs_stats_print_table(st, stdout);
 *   sfs_stats_freeze_source(st, "device");          before closing bd
 *   sfs_stats_free(st);
 *
 * A source callback:
 *
 *   static void ops_source(void *ctx, struct sfs_stats_writer *w)
 *   {
 *           sfs_stats_put_u64(w, "bytes_written", fs->ctr.wbytes);
 *           sfs_stats_begin(w, "by_type");
 *           sfs_stats_put_u64(w, "create", fs->ctr.create);
 *           sfs_stats_end(w);
 *           sfs_stats_put_hist(w, "write_size_bytes", &fs->ctr.wsize);
 *   }
 *
 * Locking: st->lock (one sfs_mutex) is held while sources are added, removed
 * and while a snapshot runs their callbacks, so a source removed is never
 * called again once sfs_stats_remove_source returns.  Lock order: st->lock
 * first, then whatever a callback takes (a layer's own lock).  So never add
 * or remove a source while holding a lock your callbacks take, and never
 * call sfs_stats_* (other than the writer verbs) from inside a callback.
 *
 * Schema, counter meanings and the table format: doc/measurement.md.
 */
#ifndef SFS_STATS_H
#define SFS_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "blockdev.h"
#include "cache.h"
#include "lock.h"

/* ---- histograms: log2 buckets, embedded in a layer's own struct ---- */

#define SFS_HIST_NBUCKETS 65

/*
 * A zero-filled struct sfs_hist is an empty histogram.  Bucket 0 counts
 * the value 0; bucket i (1..64) counts values in [2^(i-1), 2^i - 1].
 * Not locked: its owner serialises sfs_hist_add with its stats callback.
 */
struct sfs_hist {
	uint64_t count;			     /* values added */
	uint64_t sum;			     /* their sum (saturates) */
	uint64_t min;			     /* smallest; valid if count */
	uint64_t max;			     /* largest; valid if count */
	uint64_t buckets[SFS_HIST_NBUCKETS]; /* see above */
};

/* The bucket value v falls in. */
static inline unsigned sfs_hist_bucket(uint64_t v)
{
	return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}

/* Smallest and largest value bucket i holds. */
static inline uint64_t sfs_hist_bucket_lo(unsigned i)
{
	return i ? 1ULL << (i - 1) : 0;
}
static inline uint64_t sfs_hist_bucket_hi(unsigned i)
{
	return i ? (i == 64 ? UINT64_MAX : (1ULL << i) - 1) : 0;
}

/* Count one value: a few instructions, no call, no lock. */
static inline void sfs_hist_add(struct sfs_hist *h, uint64_t v)
{
	if (!h->count || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->count++;
	if (__builtin_add_overflow(h->sum, v, &h->sum))
		h->sum = UINT64_MAX;
	h->buckets[sfs_hist_bucket(v)]++;
}

/* sum / count, 0 when empty. */
double sfs_hist_mean(const struct sfs_hist *h);
/* Add every value of src to dst (src unchanged). */
void sfs_hist_merge(struct sfs_hist *dst, const struct sfs_hist *src);
void sfs_hist_reset(struct sfs_hist *h);

/* ---- the statistics structure and its sources ---- */

struct sfs_stats;
struct sfs_stats_writer;

/*
 * A source: write the layer's current values into w with the writer verbs
 * below.  Runs with st->lock held (see the head comment); takes its own
 * layer's lock if its counters need one.
 */
typedef void (*sfs_stats_source_fn)(void *ctx, struct sfs_stats_writer *w);

struct sfs_stats *sfs_stats_new(void);
/* Free st and every source's ctx that has a destroy function. */
void sfs_stats_free(struct sfs_stats *st);

/*
 * Register a section.  Sections appear in registration order.  Returns 0,
 * -EEXIST if the section name is taken, -EINVAL for a NULL or empty name,
 * a NULL fn or the reserved name "simfs_stats_version".  With the _full
 * form, destroy(ctx) runs when the source is removed or st is freed (not
 * on failure).
 */
int sfs_stats_add_source(struct sfs_stats *st, const char *section,
			 sfs_stats_source_fn fn, void *ctx);
int sfs_stats_add_source_full(struct sfs_stats *st, const char *section,
			      sfs_stats_source_fn fn, void *ctx,
			      GDestroyNotify destroy);
/* Unregister a section (its callback is never called again). -ENOENT. */
int sfs_stats_remove_source(struct sfs_stats *st, const char *section);
/*
 * Run the section's callback one last time and keep what it wrote: from
 * now on the section reports those values and the callback's ctx may go
 * away (e.g. freeze "device" before sfs_bdev_close, then print the final
 * report).  destroy(ctx) runs now.  0 or -ENOENT.
 */
int sfs_stats_freeze_source(struct sfs_stats *st, const char *section);
/* Is a section of that name registered? */
bool sfs_stats_has_source(struct sfs_stats *st, const char *section);

/* ---- writer verbs: only inside a source callback ---- */

/*
 * Each puts one named value into the current section.  Names are any
 * UTF-8 text (invalid bytes are replaced); a name already used in the same
 * section replaces the earlier value.  begin opens a nested section (a
 * JSON object), end closes it; sections a callback leaves open are closed
 * for it, and an end with nothing open is ignored.
 */
void sfs_stats_put_u64(struct sfs_stats_writer *w, const char *name,
		       uint64_t v);
void sfs_stats_put_i64(struct sfs_stats_writer *w, const char *name, int64_t v);
void sfs_stats_put_double(struct sfs_stats_writer *w, const char *name,
			  double v);
void sfs_stats_put_bool(struct sfs_stats_writer *w, const char *name, bool v);
void sfs_stats_put_str(struct sfs_stats_writer *w, const char *name,
		       const char *v);
/* A copy of *h is taken. */
void sfs_stats_put_hist(struct sfs_stats_writer *w, const char *name,
			const struct sfs_hist *h);
void sfs_stats_begin(struct sfs_stats_writer *w, const char *name);
void sfs_stats_end(struct sfs_stats_writer *w);

/*
 * Write a device's or a cache's counters into the current section (for
 * layers that report them inside their own source, under their own lock).
 * Field names: doc/measurement.md.
 */
void sfs_stats_put_bdev(struct sfs_stats_writer *w, const struct sfs_bdev *bd);
void sfs_stats_put_cache(struct sfs_stats_writer *w, const struct sfs_cache *c);
/* A timing device's counters (timedev.h); nothing if bd is not one. */
void sfs_stats_put_timedev(struct sfs_stats_writer *w, struct sfs_bdev *bd);

/* ---- ready-made sources ---- */

/*
 * Section `section` with bd's counters (sfs_bdev_counters takes the
 * device's own lock).  Remove or freeze it before closing bd.
 */
int sfs_stats_add_bdev(struct sfs_stats *st, const char *section,
		       struct sfs_bdev *bd);
/*
 * Section `section` with the cache's counters.  The cache is not
 * thread-safe: pass the lock that serialises it (the engine's fs->lock) to
 * have the callback hold it while reading, or NULL if snapshots only run
 * from the thread that uses the cache.  Remove or freeze before freeing c.
 */
int sfs_stats_add_cache(struct sfs_stats *st, const char *section,
			struct sfs_cache *c, sfs_mutex *lock);

/*
 * Section `section` with a timing device's counters: the model, requests
 * as submitted and as served, busy time and its parts, seeks and their
 * distance.  -EINVAL if bd is not a timing device.  Remove or freeze it
 * before closing bd.
 */
int sfs_stats_add_timedev(struct sfs_stats *st, const char *section,
			  struct sfs_bdev *bd);

/* ---- snapshots ---- */

/*
 * Run every source now and return the result as a JSON object: first
 * member "simfs_stats_version" (1), then one member per section.  The
 * caller json_node_unref()s it.
 */
JsonNode *sfs_stats_snapshot(struct sfs_stats *st);
/* The snapshot as JSON text (g_free it); pretty = indented. */
char *sfs_stats_to_json(struct sfs_stats *st, bool pretty);
/* Write the JSON text to path, replacing it atomically.  0 or -errno. */
int sfs_stats_write_json(struct sfs_stats *st, const char *path);
/* Print the snapshot as an aligned table (format: doc/measurement.md). */
void sfs_stats_print_table(struct sfs_stats *st, FILE *out);
/*
 * Print a stats document read back from JSON (a stats= file, a mount's
 * /.simfs/stats) as the same table.  0, or -EINVAL if doc is not an object
 * with "simfs_stats_version".
 */
int sfs_stats_print_json_table(JsonNode *doc, FILE *out);

#endif /* SFS_STATS_H */
