/*
 * mballoc.c - ext4's multi-block allocator (L2.6.32 fs/ext4/mballoc.c) as a
 * placement model: per-group buddy data, request normalisation, criteria
 * passes cr0..cr3 and in-memory preallocation spaces (PAs).
 * doc/mballoc.md has the model and its departures from ext4.
 *
 * Accounting identity, per group g, whenever g's buddy is current:
 *   buddy bits = on-disk bitmap | blocks held by live PAs in g
 *   buddy free = bg_free_blocks_count - PA blocks in g
 * and free/fragments/order counts describe the buddy bits exactly.
 * Effects: handing out a PA block sets the disk bit only (buddy already
 * used); a fresh allocation sets both (plus the PA tail in the buddy);
 * discarding a PA clears buddy bits only; frees done by the engine
 * (sfs_blocks_free, journal commit) are not seen: the group's free count
 * then differs from `seen_free` and the buddy is rebuilt on next use.
 *
 * Request flow (mb_new_blocks): regular-file data tries the inode PA (goal
 * continues it), then the locality-group PA (small predicted size), then
 * normalises and runs the regular allocator (exact goal; for a small
 * request the goal group's buddy, nearest the goal; then cr0..cr3); the
 * excess of a normalised request becomes a PA.  Metadata and directories
 * are never normalised.  Nothing found: discard every PA, retry once.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "devmodel.h"
#include "model.h"
#include "mballoc.h"
#include "stats.h"

#define MB_MAX_ORDER 16 /* bpg <= 8 * 8192 = 2^16 */
#define MB_SMALL_REQ 8	/* requests served by mb_near_goal */

/* Per-group buddy data; bits == NULL until built. */
struct mb_group {
	uint8_t *bits;	  /* 1 = used on disk or held by a PA */
	uint32_t nblocks; /* blocks in the group */
	uint32_t free;	  /* zero bits */
	uint32_t frags;	  /* maximal free extents */
	uint32_t counts[MB_MAX_ORDER + 1]; /* free buddy chunks per order */
	uint16_t seen_free; /* bg_free_blocks_count the buddy matches */
};

/* A preallocation: [pstart + used, pstart + len) is held, free on disk. */
struct mb_pa {
	sfs_blk_t pstart;
	uint32_t len;
	uint32_t used;
	struct sfs_inode *owner; /* inode PA, or NULL for the LG PA */
};

struct mb_priv {
	struct sfs_mballoc_params p;
	struct mb_group *grp; /* one per group of the filesystem */
	uint32_t max_order;   /* log2(bpg) */
	GHashTable *ipas;     /* struct sfs_inode * -> its struct mb_pa
				 (also ip->alloc_state) */
	struct mb_pa lg;      /* the filesystem's one locality group PA
				 (len == used: none) */
	uint32_t last_group;  /* s_mb_last_group: stream position */
	uint32_t last_start;  /* s_mb_last_start */
	struct sfs_mballoc_counters ctr;
};

/* The search state of one regular allocation (ext4_allocation_context). */
struct mb_ac {
	uint32_t goal_len;		 /* wanted length (normalised) */
	uint32_t found;			 /* extents measured (ac_found) */
	uint32_t best_g, best_s, best_n; /* best extent so far */
	bool done;			 /* take best now */
};

/* The tunables as knobs, ext4's sysfs names and defaults; all live, as
 * /sys/fs/ext4/<dev>/mb_* are. */
#define MB_KNOB(k, field, d, lo, hi, mv, h)                                    \
	{                                                                      \
		.key = k, .type = SFS_KNOB_U32,                                \
		.offset = offsetof(struct sfs_mballoc_params, field),          \
		.def = d, .min = lo, .max = hi, .help = h, .live = true,       \
		.metavar = mv,                                                 \
	}

static const struct sfs_knob mb_knobs[] = {
    MB_KNOB("mb_max_to_scan", max_to_scan, "200", 1, 100000, "N",
	    "alloc=mballoc: extents examined before taking the best"),
    MB_KNOB("mb_min_to_scan", min_to_scan, "10", 1, 100000, "N",
	    "alloc=mballoc: extents examined before a good-enough one"),
    MB_KNOB("mb_order2_req", order2_req, "2", 1, 16, "N",
	    "alloc=mballoc: buddy search for 2^N requests from this N"),
    MB_KNOB("mb_stream_req", stream_req, "16", 1, 1u << 20, "BLOCKS",
	    "alloc=mballoc: larger files use per-inode preallocation"),
    MB_KNOB("mb_group_prealloc", group_prealloc, "512", 1, 1u << 20, "BLOCKS",
	    "alloc=mballoc: locality-group preallocation size"),
    {0},
};

void sfs_mballoc_default_params(struct sfs_mballoc_params *p)
{
	/* the table's defaults are constants that parse */
	if (sfs_knobs_defaults("mballoc", mb_knobs, p, NULL) != 0)
		g_error("mballoc: bad knob default");
}

static inline bool mb_test(const uint8_t *m, uint32_t i)
{
	return m[i >> 3] & (1u << (i & 7));
}

static uint32_t mb_fls(uint32_t x)
{
	return x ? 32 - (uint32_t)__builtin_clz(x) : 0;
}

/* Add (sign 1) or remove (-1) the free extent [s, e) from g's counters,
 * split into naturally aligned buddy chunks. */
static void mb_account(struct mb_priv *m, struct mb_group *g, uint32_t s,
		       uint32_t e, int sign)
{
	if (s >= e)
		return;
	g->free += (uint32_t)sign * (e - s);
	g->frags += (uint32_t)sign;
	for (uint32_t i = s; i < e;) {
		uint32_t o = i ? (uint32_t)__builtin_ctz(i) : m->max_order;
		uint32_t fit = mb_fls(e - i) - 1;

		o = MIN(MIN(o, fit), m->max_order);
		g->counts[o] += (uint32_t)sign;
		i += 1u << o;
	}
}

/* Free extent bounds around [s, s+n) in g (bits outside are free runs). */
static void mb_bounds(struct sfs_alloc *a, struct mb_group *g, uint32_t s,
		      uint32_t n, uint32_t *l_out, uint32_t *r_out)
{
	uint32_t l = s, r = s + n;

	while (l > 0 && !mb_test(g->bits, l - 1))
		l--;
	while (r < g->nblocks && !mb_test(g->bits, r))
		r++;
	a->words_scanned += (s - l + r - s - n) / 8 + 1;
	*l_out = l;
	*r_out = r;
}

/* Mark [s, s+n) (free in the buddy) used in the buddy. */
static void mb_buddy_use(struct sfs_alloc *a, struct mb_group *g, uint32_t s,
			 uint32_t n)
{
	struct mb_priv *m = a->priv;
	uint32_t l, r;

	mb_bounds(a, g, s, n, &l, &r);
	mb_account(m, g, l, r, -1);
	for (uint32_t i = s; i < s + n; i++)
		g->bits[i >> 3] |= (uint8_t)(1u << (i & 7));
	mb_account(m, g, l, s, 1);
	mb_account(m, g, s + n, r, 1);
}

/* Mark [s, s+n) (used in the buddy) free in the buddy. */
static void mb_buddy_free(struct sfs_alloc *a, struct mb_group *g, uint32_t s,
			  uint32_t n)
{
	struct mb_priv *m = a->priv;
	uint32_t l, r;

	mb_bounds(a, g, s, n, &l, &r);
	mb_account(m, g, l, s, -1);
	mb_account(m, g, s + n, r, -1);
	for (uint32_t i = s; i < s + n; i++)
		g->bits[i >> 3] &= (uint8_t) ~(1u << (i & 7));
	mb_account(m, g, l, r, 1);
}

/* Call fn for every live PA. */
static void mb_each_pa(struct mb_priv *m, void (*fn)(struct mb_pa *, void *),
		       void *ctx)
{
	GHashTableIter it;
	gpointer pa;

	if (m->lg.used < m->lg.len)
		fn(&m->lg, ctx);
	g_hash_table_iter_init(&it, m->ipas);
	while (g_hash_table_iter_next(&it, NULL, &pa))
		fn(pa, ctx);
}

struct mb_overlay {
	struct sfs_fs *fs;
	uint32_t g;
	uint8_t *bits;
	uint64_t held;
};

static void mb_overlay_pa(struct mb_pa *pa, void *ctx)
{
	struct mb_overlay *o = ctx;
	sfs_blk_t first = sfs_group_first(o->fs, o->g);

	if (pa->used >= pa->len || sfs_blk_group(o->fs, pa->pstart) != o->g)
		return;
	for (uint32_t i = pa->pstart + pa->used - first;
	     i < pa->pstart + pa->len - first; i++) {
		o->bits[i >> 3] |= (uint8_t)(1u << (i & 7));
		o->held++;
	}
}

/* Bitmap of group gi (disk | PAs) into a new array; -EIO. */
static int mb_load_bits(struct sfs_alloc *a, uint32_t gi, uint8_t **out,
			uint64_t *held_out)
{
	struct sfs_fs *fs = a->fs;
	struct mb_priv *m = a->priv;
	uint32_t nb = sfs_group_nblocks(fs, gi);
	uint32_t bytes = (nb + 7) / 8;
	struct sfs_buf *b;
	int rc = sfs_block_bitmap(fs, gi, &b);

	if (rc && sfs_group_bad(fs, gi, false)) {
		/* a bad bitmap (fs.c): nothing here is free, as ext4's
		 * allocator passes BBITMAP_CORRUPT groups over */
		*out = memset(g_malloc(bytes), 0xff, bytes);
		if (held_out)
			*held_out = 0;
		return 0;
	}
	if (rc)
		return rc;
	uint8_t *bits = g_malloc(bytes);
	memcpy(bits, b->data, bytes);
	sfs_cache_put(sfs_fs_cache(fs), b);
	for (uint32_t i = nb; i < bytes * 8; i++) /* past the group's end */
		bits[i >> 3] |= (uint8_t)(1u << (i & 7));
	a->words_scanned += bytes;
	m->ctr.buddy_build_bytes += bytes;
	struct mb_overlay o = {fs, gi, bits, 0};
	mb_each_pa(m, mb_overlay_pa, &o);
	*out = bits;
	if (held_out)
		*held_out = o.held;
	return 0;
}

/* Counters of a bit array, from scratch. */
static void mb_count(struct mb_priv *m, struct mb_group *g)
{
	g->free = g->frags = 0;
	memset(g->counts, 0, sizeof(g->counts));
	for (uint32_t i = 0; i < g->nblocks;) {
		if (mb_test(g->bits, i)) {
			i++;
			continue;
		}
		uint32_t e = i;
		while (e < g->nblocks && !mb_test(g->bits, e))
			e++;
		mb_account(m, g, i, e, 1);
		i = e;
	}
}

/* Make group gi's buddy current: build on first use, rebuild when the
 * engine changed the group behind our back.  0 or -EIO. */
static int mb_group_load(struct sfs_alloc *a, uint32_t gi)
{
	struct mb_priv *m = a->priv;
	struct mb_group *g = &m->grp[gi];
	uint16_t now =
	    sfs_le16(sfs_group_desc(a->fs, gi)->bg_free_blocks_count);
	int rc;

	if (g->bits && g->seen_free == now)
		return 0;
	g_free(g->bits);
	g->bits = NULL;
	g->nblocks = sfs_group_nblocks(a->fs, gi);
	rc = mb_load_bits(a, gi, &g->bits, NULL);
	if (rc)
		return rc;
	mb_count(m, g);
	g->seen_free = now;
	m->ctr.buddy_builds++;
	return 0;
}

/* Are [s, s+n) of group gi free on disk?  (A stale buddy is caught here,
 * before sfs_blocks_mark_used would call it corruption.) */
static bool mb_disk_free(struct sfs_alloc *a, uint32_t gi, uint32_t s,
			 uint32_t n)
{
	struct sfs_buf *b;
	bool ok = true;

	if (sfs_block_bitmap(a->fs, gi, &b))
		return false;
	for (uint32_t i = s; i < s + n && ok; i++)
		ok = !mb_test(b->data, i);
	sfs_cache_put(sfs_fs_cache(a->fs), b);
	return ok;
}

/* Set [blk, blk+n) on disk (all in one group) and follow the count. */
static int mb_mark_disk(struct sfs_alloc *a, sfs_blk_t blk, uint32_t n)
{
	struct mb_priv *m = a->priv;
	uint32_t gi = sfs_blk_group(a->fs, blk);
	int rc = sfs_blocks_mark_used(a->fs, blk, n);

	if (rc)
		return rc;
	m->grp[gi].seen_free = (uint16_t)(m->grp[gi].seen_free - n);
	sfs_cpu_ctr(a->fs)->blocks_alloc += n;
	return 0;
}

/* ---- preallocations ---- */

/* Give back pa's unused blocks to the buddy; 0 or -EIO. */
static int mb_pa_drop(struct sfs_alloc *a, struct mb_pa *pa)
{
	struct mb_priv *m = a->priv;
	uint32_t gi, left = pa->len - pa->used;
	int rc;

	if (left == 0)
		return 0;
	gi = sfs_blk_group(a->fs, pa->pstart);
	/* the rebuild (if due) still counts the PA as held: then clear */
	rc = mb_group_load(a, gi);
	pa->used = pa->len;
	if (rc)
		return rc;
	mb_buddy_free(a, &m->grp[gi],
		      pa->pstart + pa->len - left - sfs_group_first(a->fs, gi),
		      left);
	m->ctr.pas_discarded++;
	return 0;
}

static void mb_inode_pa_drop(struct sfs_alloc *a, struct sfs_inode *ip)
{
	struct mb_priv *m = a->priv;
	struct mb_pa *pa = ip->alloc_state;

	if (!pa)
		return;
	mb_pa_drop(a, pa);
	g_hash_table_remove(m->ipas, ip);
	g_free(pa);
	ip->alloc_state = NULL;
}

/* ENOSPC: every PA back to the buddies.  True if any held blocks. */
static bool mb_discard_all(struct sfs_alloc *a)
{
	struct mb_priv *m = a->priv;
	GList *keys = g_hash_table_get_keys(m->ipas);
	bool any = m->lg.used < m->lg.len || keys;

	for (GList *l = keys; l; l = l->next)
		mb_inode_pa_drop(a, l->data);
	g_list_free(keys);
	mb_pa_drop(a, &m->lg);
	return any;
}

/* Hand out up to want blocks at the front of pa. */
static int mb_pa_take(struct sfs_alloc *a, struct mb_pa *pa, uint32_t want,
		      sfs_blk_t *start_out, uint32_t *got_out)
{
	uint32_t n = MIN(want, pa->len - pa->used);
	sfs_blk_t s = pa->pstart + pa->used;
	int rc = mb_mark_disk(a, s, n);

	if (rc)
		return rc;
	pa->used += n;
	*start_out = s;
	*got_out = n;
	return 0;
}

/* ---- the regular allocator ---- */

/* ext4_mb_measure_extent + check_limits: consider free extent (gi, s, n). */
static void mb_measure(struct mb_priv *m, struct mb_ac *ac, uint32_t gi,
		       uint32_t s, uint32_t n)
{
	ac->found++;
	m->ctr.extents_scanned++;
	if (n == ac->goal_len) {
		ac->best_g = gi, ac->best_s = s, ac->best_n = n;
		ac->done = true;
		return;
	}
	if (ac->best_n == 0 || (ac->best_n < ac->goal_len && n > ac->best_n) ||
	    (ac->best_n > ac->goal_len && n >= ac->goal_len && n < ac->best_n))
		ac->best_g = gi, ac->best_s = s, ac->best_n = n;
	if (ac->found > m->p.max_to_scan ||
	    (ac->best_n >= ac->goal_len && ac->found > m->p.min_to_scan))
		ac->done = true;
}

/* The complex scan of one group: every free extent, measured. */
static void mb_complex_scan(struct sfs_alloc *a, struct mb_ac *ac, uint32_t gi)
{
	struct mb_priv *m = a->priv;
	struct mb_group *g = &m->grp[gi];

	for (uint32_t i = 0; i < g->nblocks && !ac->done;) {
		if ((i & 7) == 0)
			a->words_scanned++;
		if (mb_test(g->bits, i)) {
			i++;
			continue;
		}
		uint32_t e = i;
		while (e < g->nblocks && !mb_test(g->bits, e))
			e++;
		a->words_scanned += (e - i) / 8;
		sfs_cpu_ctr(a->fs)->extent_steps++;
		mb_measure(m, ac, gi, i, e - i);
		i = e;
	}
	/* group finished: a best that meets the goal is taken */
	if (ac->best_n >= ac->goal_len)
		ac->done = true;
}

/* cr0: a naturally aligned free 2^order chunk of group gi, or false. */
static bool mb_buddy_find(struct sfs_alloc *a, uint32_t gi, uint32_t order,
			  uint32_t *s_out)
{
	struct mb_group *g = &((struct mb_priv *)a->priv)->grp[gi];
	uint32_t sz = 1u << order;

	for (uint32_t s = 0; s + sz <= g->nblocks; s += sz) {
		uint32_t k = 0;

		a->words_scanned++;
		while (k < sz && !mb_test(g->bits, s + k))
			k++;
		if (k == sz) {
			*s_out = s;
			return true;
		}
	}
	return false;
}

/*
 * Fast path for a small request (len <= MB_SMALL_REQ) whose exact goal is
 * taken: the first naturally aligned free 2^order chunk (order the least
 * with 2^order >= len) at or after gbit in group gi, wrapping to the group
 * start; tried only when the buddy counts say such a chunk exists, so it
 * always succeeds then and replaces the complex scan of the goal group.
 */
static bool mb_near_goal(struct sfs_alloc *a, uint32_t gi, uint32_t gbit,
			 uint32_t len, uint32_t *s_out)
{
	struct mb_priv *m = a->priv;
	struct mb_group *g = &m->grp[gi];
	uint32_t order = mb_fls(len - 1), sz = 1u << order;
	bool any = false;

	for (uint32_t o = order; o <= m->max_order && !any; o++)
		any = g->counts[o] != 0;
	if (!any || sz > g->nblocks)
		return false;
	for (uint32_t pass = 0; pass < 2; pass++) {
		uint32_t from = pass ? 0 : gbit & ~(sz - 1);
		uint32_t to = pass ? gbit : g->nblocks;

		for (uint32_t s = from; s + sz <= g->nblocks && s < to;) {
			uint32_t k = 0;

			/* whole used bytes are skipped a byte at a time */
			if ((s & 7) == 0 && sz <= 8 &&
			    g->bits[s >> 3] == 0xff) {
				a->words_scanned++;
				s += 8;
				continue;
			}
			while (k < sz && !mb_test(g->bits, s + k))
				k++;
			if (k == sz) {
				*s_out = s;
				return true;
			}
			s += sz;
		}
		a->words_scanned += (to - from) / 64 + 1;
	}
	return false;
}

/* Does group gi qualify for pass cr (ext4_mb_good_group)?  cr0 keeps
 * data out of the first group of a flex group of 4 or more, which holds
 * the flex group's bitmaps and inode tables. */
static bool mb_good_group(struct sfs_alloc *a, uint32_t gi, int cr,
			  uint32_t len, uint32_t order, bool data)
{
	struct mb_priv *m = a->priv;
	struct mb_group *g = &m->grp[gi];
	uint32_t flex = sfs_flex_size(a->fs);

	if (g->free == 0)
		return false;
	switch (cr) {
	case 0:
		if (data && flex >= SFS_FLEX_SIZE_DIR_ALLOC && gi % flex == 0)
			return false;
		for (uint32_t o = order; o <= m->max_order; o++)
			if (g->counts[o])
				return true;
		return false;
	case 1:
		return g->free / g->frags >= len;
	case 2:
		return g->free >= len;
	default:
		return true;
	}
}

/*
 * Find up to len free blocks (buddy view) near goal: exact goal, then the
 * passes from group g0 (data: regular-file blocks).  The extent is marked used in the buddy (not on
 * disk).  0 with *n_out >= 1, -ENOSPC, -EIO.
 */
static int mb_regular(struct sfs_alloc *a, sfs_blk_t goal, uint32_t g0,
		      uint32_t len, bool data, sfs_blk_t *s_out,
		      uint32_t *n_out)
{
	struct sfs_fs *fs = a->fs;
	struct mb_priv *m = a->priv;
	struct mb_ac ac = {.goal_len = len};
	uint32_t gg = sfs_blk_group(fs, goal);
	uint32_t gbit = goal - sfs_group_first(fs, gg);
	uint32_t order = mb_fls(len) - 1;
	int rc, cr0 = 1;

	len = MIN(len, sfs_geom(fs)->bpg);
	ac.goal_len = len;
	m->ctr.allocs_regular++;
	rc = mb_group_load(a, gg);
	if (rc)
		return rc;
	/* exact goal (ext4_mb_find_by_goal): the full length there */
	struct mb_group *g = &m->grp[gg];
	if (gbit + len <= g->nblocks) {
		uint32_t k = 0;
		while (k < len && !mb_test(g->bits, gbit + k))
			k++;
		if (k == len) {
			ac.best_g = gg, ac.best_s = gbit, ac.best_n = len;
			m->ctr.allocs_goal++;
			goto found;
		}
	}
	/* small request: the goal group's buddy, nearest the goal first */
	if (len <= MB_SMALL_REQ && mb_near_goal(a, gg, gbit, len, &ac.best_s)) {
		ac.best_g = gg, ac.best_n = len;
		m->ctr.allocs_cr[0]++;
		goto found;
	}
	if ((len & (len - 1)) == 0 && order + 1 >= m->p.order2_req)
		cr0 = 0;
	for (int cr = cr0; cr < 4 && !ac.done; cr++) {
		for (uint32_t i = 0; i < sfs_geom(fs)->groups && !ac.done;
		     i++) {
			uint32_t gi = (g0 + i) % sfs_geom(fs)->groups;
			uint32_t s;

			rc = mb_group_load(a, gi);
			if (rc)
				return rc;
			if (!mb_good_group(a, gi, cr, len, order, data))
				continue;
			if (cr == 0) {
				if (mb_buddy_find(a, gi, order, &s)) {
					ac.best_g = gi, ac.best_s = s;
					ac.best_n = len;
					ac.done = true;
				}
				continue;
			}
			mb_complex_scan(a, &ac, gi);
		}
		if (ac.done && ac.best_n)
			m->ctr.allocs_cr[cr]++;
	}
	if (ac.best_n == 0)
		return -ENOSPC;
	if (!ac.done)
		m->ctr.allocs_cr[3]++; /* partial best after all passes */
found:
	ac.best_n = MIN(ac.best_n, len);
	mb_buddy_use(a, &m->grp[ac.best_g], ac.best_s, ac.best_n);
	*s_out = sfs_group_first(fs, ac.best_g) + ac.best_s;
	*n_out = ac.best_n;
	return 0;
}

/* ---- request flow ---- */

/* Normalised length (blocks) of an inode request at logical block lblk with
 * predicted size pred blocks (ext4_mb_normalize_request, Linux 2.6.32
 * fs/ext4/mballoc.c). */
static uint32_t mb_normalise(struct sfs_fs *fs, uint32_t lblk, uint32_t pred,
			     uint32_t want)
{
	uint64_t bytes = (uint64_t)pred << sfs_geom(fs)->bs_log, size,
		 start = 0;
	uint64_t s_blk, e_blk;

	if (bytes <= 16 << 10)
		size = 16 << 10;
	else if (bytes <= 1 << 20)
		size = 1ull << (64 - __builtin_clzll(bytes - 1)); /* 2^k */
	else if (bytes <= 4 << 20)
		size = 2 << 20;
	else if (bytes <= 8 << 20)
		size = 4 << 20;
	else
		size = 8 << 20;
	if (size >= 2 << 20)
		start =
		    (((uint64_t)lblk << sfs_geom(fs)->bs_log) / size) * size;
	s_blk = start >> sfs_geom(fs)->bs_log;
	e_blk = (start + size) >> sfs_geom(fs)->bs_log;
	if (lblk < s_blk || lblk + want > e_blk)
		return want;
	return (uint32_t)MIN(e_blk - lblk, sfs_geom(fs)->bpg);
}

static int mb_try(struct sfs_alloc *a, struct sfs_inode *ip, sfs_blk_t goal,
		  uint32_t want, sfs_blk_t *start_out, uint32_t *got_out)
{
	struct sfs_fs *fs = a->fs;
	struct mb_priv *m = a->priv;
	bool data = ip && sfs_i_isreg(ip);
	struct mb_pa *ipa = ip ? ip->alloc_state : NULL;
	uint32_t len = want, g0 = sfs_blk_group(fs, goal);
	bool lg = false, stream = false;
	sfs_blk_t s;
	uint32_t n;
	int rc;

	if (ipa && ipa->used >= ipa->len) { /* used up */
		mb_inode_pa_drop(a, ip);
		ipa = NULL;
	}
	if (data) {
		/* 2. an inode PA the goal continues */
		if (ipa && ipa->used < ipa->len &&
		    goal == ipa->pstart + ipa->used) {
			m->ctr.allocs_pa_inode++;
			return mb_pa_take(a, ipa, want, start_out, got_out);
		}
		/* 1. classify by predicted size (logical block ~ next_lblk) */
		uint32_t lblk = ip->next_lblk;
		uint64_t isz = (sfs_i_size(ip) + sfs_geom(fs)->bs - 1) >>
			       sfs_geom(fs)->bs_log;
		uint32_t pred = (uint32_t)MAX((uint64_t)lblk + want, isz);

		if (pred <= m->p.stream_req) {
			lg = true;
			if (m->lg.used < m->lg.len) {
				m->ctr.allocs_pa_lg++;
				return mb_pa_take(a, &m->lg, want, start_out,
						  got_out);
			}
			len = MAX(want, m->p.group_prealloc);
		} else if (!ipa) {
			/* 3. normalise; a PA the goal does not continue
			 * keeps its blocks and this request is served as is */
			stream = true;
			len = mb_normalise(fs, lblk, pred, want);
		}
	}
	if (stream) /* after a try at the exact goal, stream requests
		       start where the last one ended */
		g0 = m->last_group;
	rc = mb_regular(a, goal, g0, MIN(len, sfs_geom(fs)->bpg), data, &s, &n);
	if (rc)
		return rc;
	uint32_t gi = sfs_blk_group(fs, s);
	uint32_t take = MIN(n, want);
	if (!mb_disk_free(a, gi, s - sfs_group_first(fs, gi), n)) {
		/* stale buddy: undo, force a rebuild, let the caller retry */
		mb_buddy_free(a, &m->grp[gi], s - sfs_group_first(fs, gi), n);
		m->grp[gi].seen_free++;
		return -EAGAIN;
	}
	rc = mb_mark_disk(a, s, take);
	if (rc)
		return rc;
	if (stream) {
		m->last_group = gi;
		m->last_start = s + n - sfs_group_first(fs, gi);
	}
	if (n > take) {
		struct mb_pa *pa = lg ? &m->lg : g_new0(struct mb_pa, 1);

		pa->pstart = s;
		pa->len = n;
		pa->used = take;
		pa->owner = lg ? NULL : ip;
		if (!lg) {
			ip->alloc_state = pa;
			g_hash_table_insert(m->ipas, ip, pa);
		}
		m->ctr.pas_made++;
	}
	*start_out = s;
	*got_out = take;
	return 0;
}

static int mb_new_blocks(struct sfs_alloc *a, struct sfs_inode *ip,
			 sfs_blk_t goal, uint32_t want, sfs_blk_t *start_out,
			 uint32_t *got_out)
{
	struct mb_priv *m = a->priv;
	bool retried = false;
	int rc;

	for (int tries = 0; tries < 8; tries++) {
		rc = mb_try(a, ip, goal, want, start_out, got_out);
		if (rc == -EAGAIN)
			continue;
		if (rc != -ENOSPC || retried)
			return rc;
		/* 6. nothing found: discard every PA, retry once */
		retried = true;
		m->ctr.discard_all++;
		if (!mb_discard_all(a))
			return rc;
	}
	return rc == -EAGAIN ? -EIO : rc;
}

static void mb_release_inode(struct sfs_alloc *a, struct sfs_inode *ip)
{
	mb_inode_pa_drop(a, ip);
}

int sfs_mballoc_set_params(struct sfs_alloc *a,
			   const struct sfs_mballoc_params *p)
{
	if (!a || a->ops != &sfs_mballoc_alloc_ops || !p ||
	    p->min_to_scan > p->max_to_scan || p->max_to_scan == 0 ||
	    p->stream_req == 0 || p->group_prealloc == 0 ||
	    p->order2_req > MB_MAX_ORDER)
		return -EINVAL;
	((struct mb_priv *)a->priv)->p = *p;
	return 0;
}

static int mb_configure(struct sfs_alloc *a, const void *params, char **err)
{
	int rc = sfs_mballoc_set_params(a, params);

	if (rc)
		*err = g_strdup("inconsistent mballoc knobs (mb_min_to_scan "
				"above mb_max_to_scan?)");
	return rc;
}

static int mb_check_verb(struct sfs_alloc *a, char **err)
{
	int rc = sfs_mballoc_check(a, NULL);

	if (rc)
		*err = g_strdup("mballoc: a group buddy disagrees with the "
				"bitmap and the live preallocations");
	return rc;
}

static void mb_sum_pa(struct mb_pa *pa, void *ctx)
{
	struct sfs_mballoc_counters *c = ctx;

	c->pas_live++;
	c->pa_blocks_live += pa->len - pa->used;
}

static void mb_counters(struct mb_priv *m, struct sfs_mballoc_counters *c)
{
	*c = m->ctr;
	c->pas_live = c->pa_blocks_live = 0;
	mb_each_pa(m, mb_sum_pa, c);
}

struct mb_walk {
	int (*fn)(void *ctx, sfs_blk_t start, uint32_t len, sfs_ino_t owner);
	void *ctx;
	int rc;
};

static void mb_walk_pa(struct mb_pa *pa, void *ctx)
{
	struct mb_walk *w = ctx;

	if (w->rc || pa->used >= pa->len)
		return;
	w->rc = w->fn(w->ctx, pa->pstart + pa->used, pa->len - pa->used,
		      pa->owner ? pa->owner->ino : 0);
}

int sfs_mballoc_pa_walk(struct sfs_alloc *a,
			int (*fn)(void *ctx, sfs_blk_t start, uint32_t len,
				  sfs_ino_t owner),
			void *ctx)
{
	struct mb_walk w = {fn, ctx, 0};

	if (!a || a->ops != &sfs_mballoc_alloc_ops || !fn)
		return -EINVAL;
	mb_each_pa(a->priv, mb_walk_pa, &w);
	return w.rc;
}

int sfs_mballoc_check(struct sfs_alloc *a, struct sfs_mballoc_counters *out)
{
	struct mb_priv *m;
	struct sfs_mballoc_counters c;

	uint64_t words = a ? a->words_scanned : 0, bytes;
	int rc = 0;

	if (!a || a->ops != &sfs_mballoc_alloc_ops)
		return -EINVAL;
	m = a->priv;
	mb_counters(m, &c);
	if (out)
		*out = c;
	bytes = m->ctr.buddy_build_bytes; /* checking is not allocator work */
	for (uint32_t gi = 0; gi < sfs_geom(a->fs)->groups; gi++) {
		struct mb_group *g = &m->grp[gi], fresh = {0};
		uint64_t held;
		bool same;

		if (!g->bits ||
		    g->seen_free !=
			sfs_le16(
			    sfs_group_desc(a->fs, gi)->bg_free_blocks_count) ||
		    sfs_group_bad(a->fs, gi, false))
			continue;
		fresh.nblocks = g->nblocks;
		if (mb_load_bits(a, gi, &fresh.bits, &held)) {
			rc = -EIO;
			break;
		}
		mb_count(m, &fresh);
		same =
		    memcmp(fresh.bits, g->bits, (g->nblocks + 7) / 8) == 0 &&
		    fresh.free == g->free && fresh.frags == g->frags &&
		    memcmp(fresh.counts, g->counts, sizeof(g->counts)) == 0 &&
		    g->free + held == g->seen_free;
		g_free(fresh.bits);
		if (!same) {
			rc = -EIO;
			break;
		}
	}
	a->words_scanned = words;
	m->ctr.buddy_build_bytes = bytes;
	return rc;
}

static int mb_init(struct sfs_alloc *a)
{
	struct mb_priv *m = g_new0(struct mb_priv, 1);

	sfs_mballoc_default_params(&m->p);
	m->grp = g_new0(struct mb_group, sfs_geom(a->fs)->groups);
	m->max_order = MIN(mb_fls(sfs_geom(a->fs)->bpg) - 1, MB_MAX_ORDER);
	m->ipas = g_hash_table_new(g_direct_hash, g_direct_equal);
	a->priv = m;
	return 0;
}

/* Inodes still cached are evicted (release_inode) before fini; whatever
 * PA is left goes here without touching the (unchanged) bitmaps. */
static void mb_fini(struct sfs_alloc *a)
{
	struct mb_priv *m = a->priv;
	GHashTableIter it;
	gpointer pa;

	if (!m)
		return;
	g_hash_table_iter_init(&it, m->ipas);
	while (g_hash_table_iter_next(&it, NULL, &pa))
		g_free(pa);
	g_hash_table_destroy(m->ipas);
	for (uint32_t gi = 0; gi < sfs_geom(a->fs)->groups; gi++)
		g_free(m->grp[gi].bits);
	g_free(m->grp);
	g_free(m);
	a->priv = NULL;
}

static void mb_stats(struct sfs_alloc *a, struct sfs_stats_writer *w)
{
	struct sfs_mballoc_counters c;

	mb_counters(a->priv, &c);
	sfs_stats_put_u64(w, "buddy_builds", c.buddy_builds);
	sfs_stats_put_u64(w, "buddy_build_bytes", c.buddy_build_bytes);
	sfs_stats_put_u64(w, "allocs_pa_inode", c.allocs_pa_inode);
	sfs_stats_put_u64(w, "allocs_pa_lg", c.allocs_pa_lg);
	sfs_stats_put_u64(w, "allocs_regular", c.allocs_regular);
	sfs_stats_put_u64(w, "allocs_goal", c.allocs_goal);
	sfs_stats_put_u64(w, "allocs_cr0", c.allocs_cr[0]);
	sfs_stats_put_u64(w, "allocs_cr1", c.allocs_cr[1]);
	sfs_stats_put_u64(w, "allocs_cr2", c.allocs_cr[2]);
	sfs_stats_put_u64(w, "allocs_cr3", c.allocs_cr[3]);
	sfs_stats_put_u64(w, "extents_scanned", c.extents_scanned);
	sfs_stats_put_u64(w, "pas_made", c.pas_made);
	sfs_stats_put_u64(w, "pas_discarded", c.pas_discarded);
	sfs_stats_put_u64(w, "discard_all", c.discard_all);
	sfs_stats_put_u64(w, "pas_live", c.pas_live);
	sfs_stats_put_u64(w, "pa_blocks_live", c.pa_blocks_live);
}

const struct sfs_alloc_ops sfs_mballoc_alloc_ops = {
    .name = "mballoc",
    .init = mb_init,
    .fini = mb_fini,
    .new_blocks = mb_new_blocks,
    .release_inode = mb_release_inode,
    .stats = mb_stats,
    .knobs = mb_knobs,
    .params_size = sizeof(struct sfs_mballoc_params),
    .configure = mb_configure,
    .check = mb_check_verb,
};

const struct sfs_alloc_preset sfs_alloc_mballoc = {
    .name = "mballoc",
    .help = "ext4: extent trees, multi-block allocator (buddy criteria "
	    "passes, inode and locality-group preallocation; "
	    "ext4_mb_new_blocks)",
    .map = &sfs_extent_map_ops,
    .place = &sfs_mballoc_alloc_ops,
};
