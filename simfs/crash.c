/*
 * crash.c - crash-consistency runs (crash.h; design in doc/crash.md).
 *
 * Parts, in file order:
 *  1. data blocks that name themselves (cb_*);
 *  2. the model: the workload's namespace and per-block versions,
 *     advanced one op at a time (model_*);
 *  3. the workloads (wl_*), written against helpers (w_*) that issue an
 *     op to the engine, note the crash device's request count around it
 *     and apply it to the model;
 *  4. one run of a workload over a crash device (run_*);
 *  5. reading an image back through the engine (tree_*);
 *  6. the check of one crash point (check_*);
 *  7. sweeps in forked processes, the table, `simfs crash`.
 *
 * Invariants:
 *  1. A workload's choices depend only on its seed and the model, never on
 *     what the engine returns, so the dry run and every crashed run issue
 *     the same ops and, up to the cut, the same requests.
 *  2. The model applies an op even when the engine call failed after the
 *     cut: the checker treats every op begun before the cut as maybe done.
 *  3. Versions of (file, block) only grow, across truncates too, so a
 *     version number alone says how old a block is.
 *  4. The workload lives in /crash, made by the run itself: the model and
 *     the namespace check cover that subtree; the tree comparison of the
 *     two recovered images covers the whole image.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>
#include <xxhash.h>

#include "config.h"
#include "crash.h"
#include "format.h"
#include "fs.h"

#define CRASH_DIR "crash"	/* the workload's directory in the image */
#define CRASH_LONG_OPS 3000u	/* default length of "long" */
#define CRASH_MAX_FILE_BLK 64	/* longest file of the long workload */
#define CRASH_CLI_OPTS "mem=1M" /* simfs crash's options before -o's */

/* ===================================================== 1. data blocks */

/*
 * A data block of file `id`, block index `idx`, version `ver`: every
 * 512-byte sector starts with a 16-byte tag (magic, id, idx, ver); sector
 * 0's magic differs and its bytes 16..31 hold the xxh64 of bytes 32..bs-1
 * and bs.  Everything else is a pseudo-random stream of (id, idx, ver),
 * so a sector can be checked on its own (a torn write mixes sectors).
 */
#define CB_MAGIC0 0x30424653u /* "SFB0" */
#define CB_MAGICS 0x53424653u /* "SFBS" */
#define CB_HDR 32u
#define CB_MAXSECT 8u /* 4 KiB blocks */

static void put32(uint8_t *p, uint32_t v)
{
	v = sfs_cpu_to_le32(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return sfs_le32(v);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = sfs_cpu_to_le64(v);
	memcpy(p, &v, 8);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return sfs_le64(v);
}

static uint64_t cb_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static void cb_fill(uint8_t *b, uint32_t bs, uint32_t id, uint32_t idx,
		    uint32_t ver)
{
	uint64_t s = cb_mix(((uint64_t)id << 32 | idx) ^
			    cb_mix((uint64_t)ver + 0x5eedULL));

	for (uint32_t w = 0; w < bs / 8; w++)
		put64(b + 8 * w, cb_mix(s + w));
	for (uint32_t sec = 0; sec < bs / SFS_CRASH_SECTOR; sec++) {
		uint8_t *t = b + sec * SFS_CRASH_SECTOR;

		put32(t, sec ? CB_MAGICS : CB_MAGIC0);
		put32(t + 4, id);
		put32(t + 8, idx);
		put32(t + 12, ver);
	}
	put32(b + 24, bs);
	put32(b + 28, 0);
	put64(b + 16, XXH64(b + CB_HDR, bs - CB_HDR, 0));
}

enum { SK_ZERO = 0, SK_DATA, SK_GARBAGE };

/* What one sector holds. */
struct stag {
	uint8_t kind; /* SK_* */
	uint32_t id, idx, ver;
};

/* What one block holds, sector by sector. */
struct bsum {
	uint8_t nsect;
	struct stag s[CB_MAXSECT];
};

/* A one-block cache of generated contents. */
struct cb_gen {
	uint32_t bs, id, idx, ver;
	bool valid;
	uint8_t buf[CB_MAXSECT * SFS_CRASH_SECTOR];
};

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static void cb_classify(struct cb_gen *g, const uint8_t *b, uint32_t bs,
			struct bsum *out)
{
	uint32_t ns = bs / SFS_CRASH_SECTOR;

	out->nsect = (uint8_t)ns;
	if (get32(b) == CB_MAGIC0 && get32(b + 24) == bs &&
	    get64(b + 16) == XXH64(b + CB_HDR, bs - CB_HDR, 0)) {
		for (uint32_t s = 0; s < ns; s++)
			out->s[s] = (struct stag){SK_DATA, get32(b + 4),
						  get32(b + 8), get32(b + 12)};
		return;
	}
	for (uint32_t s = 0; s < ns; s++) {
		const uint8_t *t = b + s * SFS_CRASH_SECTOR;
		struct stag *st = &out->s[s];

		st->kind = SK_GARBAGE;
		st->id = st->idx = st->ver = 0;
		if (all_zero(t, SFS_CRASH_SECTOR)) {
			st->kind = SK_ZERO;
			continue;
		}
		if (get32(t) != (s ? CB_MAGICS : CB_MAGIC0))
			continue;
		st->id = get32(t + 4);
		st->idx = get32(t + 8);
		st->ver = get32(t + 12);
		if (!g->valid || g->bs != bs || g->id != st->id ||
		    g->idx != st->idx || g->ver != st->ver) {
			cb_fill(g->buf, bs, st->id, st->idx, st->ver);
			g->bs = bs;
			g->id = st->id;
			g->idx = st->idx;
			g->ver = st->ver;
			g->valid = true;
		}
		if (memcmp(t, g->buf + s * SFS_CRASH_SECTOR,
			   SFS_CRASH_SECTOR) == 0)
			st->kind = SK_DATA;
	}
}

/* ============================================================ 2. model */

#define WNAME 24

enum wop_kind {
	W_CREATE = 0,
	W_MKDIR,
	W_WRITE,
	W_TRUNC,
	W_RENAME,
	W_UNLINK,
	W_RMDIR,
	W_FSYNC,
	W_SYNC,
	W_UNMOUNT,
	W_OPEN,	 /* an open reference: the file outlives its last name */
	W_CLOSE, /* its release */
};

/* One op of a workload, as issued (plain data). */
struct wop {
	uint8_t kind;	  /* enum wop_kind */
	bool setup;	  /* part of the setup (before arming) */
	uint32_t a;	  /* dir id (namespace ops) or file id */
	uint32_t c;	  /* rename: destination dir id */
	uint32_t id;	  /* create / mkdir: the new object's id */
	uint32_t blk, n;  /* write: first block, count; trunc: size, blocks */
	char name[WNAME]; /* entry name in a */
	char name2[WNAME];
	sfs_ino_t ino; /* create / mkdir: result */
	uint32_t gen;
	uint64_t start, end; /* crash device requests seen before / after */
	int rc;
};

/* A file or directory of the model, by id (id 0 = /crash). */
struct mobj {
	bool dir;
	bool live;
	sfs_ino_t ino; /* from the run (0: unknown) */
	uint32_t gen;
	uint32_t parent;
	char name[WNAME];
	uint32_t nblk;	  /* file size in blocks */
	GArray *ver;	  /* uint32 per block: current version, 0 = hole */
	GArray *maxver;	  /* uint32 per block: newest version written */
	GArray *floor;	  /* uint32 per block: fsync'd version, or NULL */
	uint32_t nsub;	  /* dir: subdirectories */
	GHashTable *ents; /* dir: name -> GUINT_TO_POINTER(id + 1) */
};

struct model {
	GPtrArray *o; /* struct mobj *, index = id */
};

static uint32_t u32_get(const GArray *a, uint32_t i)
{
	return a && i < a->len ? g_array_index(a, uint32_t, i) : 0;
}

static void u32_set(GArray *a, uint32_t i, uint32_t v)
{
	if (i >= a->len)
		g_array_set_size(a, i + 1);
	g_array_index(a, uint32_t, i) = v;
}

static void mobj_free(gpointer p)
{
	struct mobj *o = p;

	if (o->ver)
		g_array_free(o->ver, TRUE);
	if (o->maxver)
		g_array_free(o->maxver, TRUE);
	if (o->floor)
		g_array_free(o->floor, TRUE);
	if (o->ents)
		g_hash_table_destroy(o->ents);
	g_free(o);
}

static struct mobj *mobj_new(bool dir, uint32_t parent, const char *name)
{
	struct mobj *o = g_new0(struct mobj, 1);

	o->dir = dir;
	o->live = true;
	o->parent = parent;
	g_strlcpy(o->name, name, sizeof(o->name));
	if (dir) {
		o->ents = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
						NULL);
	} else {
		o->ver = g_array_new(FALSE, TRUE, sizeof(uint32_t));
		o->maxver = g_array_new(FALSE, TRUE, sizeof(uint32_t));
	}
	return o;
}

static struct model *model_new(void)
{
	struct model *m = g_new0(struct model, 1);

	m->o = g_ptr_array_new_with_free_func(mobj_free);
	g_ptr_array_add(m->o, mobj_new(true, 0, CRASH_DIR));
	return m;
}

static void model_free(struct model *m)
{
	if (!m)
		return;
	g_ptr_array_free(m->o, TRUE);
	g_free(m);
}

static struct mobj *mo(const struct model *m, uint32_t id)
{
	return id < m->o->len ? g_ptr_array_index(m->o, id) : NULL;
}

/* Id of entry name in dir, or UINT32_MAX. */
static uint32_t model_lookup(const struct model *m, uint32_t dir,
			     const char *name)
{
	struct mobj *d = mo(m, dir);
	gpointer v;

	if (!d || !d->dir || !d->live)
		return UINT32_MAX;
	v = g_hash_table_lookup(d->ents, name);
	return v ? GPOINTER_TO_UINT(v) - 1 : UINT32_MAX;
}

static void ent_add(struct model *m, uint32_t dir, const char *name,
		    uint32_t id)
{
	g_hash_table_insert(mo(m, dir)->ents, g_strdup(name),
			    GUINT_TO_POINTER(id + 1));
}

static void floor_take(struct mobj *o)
{
	if (o->dir || !o->live)
		return;
	if (!o->floor)
		o->floor = g_array_new(FALSE, TRUE, sizeof(uint32_t));
	g_array_set_size(o->floor, 0);
	g_array_append_vals(o->floor, o->ver->data, o->ver->len);
	g_array_set_size(o->floor, o->nblk);
}

/*
 * Apply op to the model.  durable: the op is a fsync/sync/unmount known to
 * have completed before the cut (the checker's replay): take the floors.
 */
static void model_apply(struct model *m, const struct wop *op, bool durable)
{
	struct mobj *o, *t;
	uint32_t id, tid;

	switch (op->kind) {
	case W_CREATE:
	case W_MKDIR:
		if (op->id != m->o->len || !mo(m, op->a))
			return;
		o = mobj_new(op->kind == W_MKDIR, op->a, op->name);
		o->ino = op->ino;
		o->gen = op->gen;
		g_ptr_array_add(m->o, o);
		ent_add(m, op->a, op->name, op->id);
		if (o->dir)
			mo(m, op->a)->nsub++;
		break;
	case W_WRITE:
		o = mo(m, op->a);
		if (!o || o->dir)
			return;
		for (uint32_t i = 0; i < op->n; i++) {
			uint32_t v = u32_get(o->maxver, op->blk + i) + 1;

			u32_set(o->maxver, op->blk + i, v);
			u32_set(o->ver, op->blk + i, v);
		}
		o->nblk = MAX(o->nblk, op->blk + op->n);
		break;
	case W_TRUNC:
		o = mo(m, op->a);
		if (!o || o->dir)
			return;
		for (uint32_t i = op->n; i < o->ver->len; i++)
			u32_set(o->ver, i, 0);
		if (o->floor)
			for (uint32_t i = op->n; i < o->floor->len; i++)
				u32_set(o->floor, i, 0);
		o->nblk = op->n;
		break;
	case W_RENAME:
		id = model_lookup(m, op->a, op->name);
		o = mo(m, id);
		if (!o || !mo(m, op->c))
			return;
		tid = model_lookup(m, op->c, op->name2);
		if (tid == id)
			return;
		t = mo(m, tid);
		if (t) {
			t->live = false;
			if (t->dir)
				mo(m, op->c)->nsub--;
		}
		g_hash_table_remove(mo(m, op->a)->ents, op->name);
		ent_add(m, op->c, op->name2, id);
		o->parent = op->c;
		g_strlcpy(o->name, op->name2, sizeof(o->name));
		if (o->dir && op->a != op->c) {
			mo(m, op->a)->nsub--;
			mo(m, op->c)->nsub++;
		}
		break;
	case W_UNLINK:
	case W_RMDIR:
		o = mo(m, model_lookup(m, op->a, op->name));
		if (!o)
			return;
		o->live = false;
		if (o->dir)
			mo(m, op->a)->nsub--;
		g_hash_table_remove(mo(m, op->a)->ents, op->name);
		break;
	case W_FSYNC:
		if (durable && (o = mo(m, op->a)))
			floor_take(o);
		break;
	case W_SYNC:
	case W_UNMOUNT:
		for (guint i = 0; durable && i < m->o->len; i++)
			floor_take(mo(m, i));
		break;
	}
}

static const char *const wop_names[] = {
    "create", "mkdir", "write", "trunc", "rename", "unlink",
    "rmdir",  "fsync", "sync",	"unmount", "open",   "close",
};

static void wop_desc(const struct wop *op, char *buf, size_t len)
{
	const char *n =
	    op->kind < G_N_ELEMENTS(wop_names) ? wop_names[op->kind] : "?";

	switch (op->kind) {
	case W_CREATE:
	case W_MKDIR:
		g_snprintf(buf, len, "%s #%u %s", n, op->id, op->name);
		break;
	case W_WRITE:
		g_snprintf(buf, len, "write #%u @%u+%u", op->a, op->blk, op->n);
		break;
	case W_TRUNC:
		g_snprintf(buf, len, "trunc #%u to %u", op->a, op->n);
		break;
	case W_RENAME:
		g_snprintf(buf, len, "rename %s>%s", op->name, op->name2);
		break;
	case W_UNLINK:
	case W_RMDIR:
		g_snprintf(buf, len, "%s %s", n, op->name);
		break;
	case W_FSYNC:
	case W_OPEN:
	case W_CLOSE:
		g_snprintf(buf, len, "%s #%u", n, op->a);
		break;
	default:
		g_snprintf(buf, len, "%s", n);
	}
}

/* The namespace under /crash as sorted lines (see tree_ns_canon). */
static int strcmp_p(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sort the lines, join them with newlines; frees l. */
static char *join_sorted(GPtrArray *l)
{
	GString *s = g_string_new(NULL);

	g_ptr_array_sort(l, strcmp_p);
	for (guint i = 0; i < l->len; i++)
		g_string_append_printf(s, "%s\n", (char *)l->pdata[i]);
	g_ptr_array_free(l, TRUE);
	return g_string_free(s, FALSE);
}

/*
 * With sizes false, regular files show "-" for their size: under delayed
 * allocation the recovered size may lag the state's (ext4's i_disksize)
 * and is checked on its own (check_model).
 */
static char *model_canon(const struct model *m, uint32_t bs, bool sizes)
{
	GPtrArray *l = g_ptr_array_new_with_free_func(g_free);

	for (guint i = 0; i < m->o->len; i++) {
		const struct mobj *o = mo(m, i);

		if (!o->live)
			continue;
		if (i == 0)
			g_ptr_array_add(l,
					g_strdup_printf("0 " CRASH_DIR " d %u",
							2 + o->nsub));
		else
			g_ptr_array_add(
			    l,
			    o->dir || sizes
				? g_strdup_printf(
				      "%u/%s %c %u %llu %u", o->parent,
				      o->name, o->dir ? 'd' : 'f', i,
				      o->dir ? 0ULL
					     : (unsigned long long)o->nblk * bs,
				      o->dir ? 2 + o->nsub : 1)
				: g_strdup_printf("%u/%s f %u - 1", o->parent,
						  o->name, i));
	}
	return join_sorted(l);
}

/* ======================================================== 3. workloads */

#define WMAXBLK 8 /* blocks per write op */

struct wctx {
	struct sfs_fs *fs; /* NULL after unmount */
	struct sfs_bdev *cd;
	struct model *m;
	GArray *ops; /* struct wop */
	bool setup;  /* issuing setup ops */
	bool stop;   /* the cut happened: issue nothing more */
	bool run_to_end;
	uint32_t bs;
	uint8_t *buf; /* WMAXBLK blocks */
	GRand *rand;
	uint32_t seq; /* unique names */
	uint32_t long_ops;
	char err[256]; /* first op that failed before the cut */
};

static int w_engine(struct wctx *w, struct wop *op)
{
	struct sfs_fs *fs = w->fs;
	struct mobj *o = mo(w->m, op->a), *c;
	struct sfs_attr at;
	size_t done;
	int rc;

	if (!fs)
		return -ESHUTDOWN;
	if (op->kind != W_SYNC && op->kind != W_UNMOUNT && (!o || !o->ino))
		return -ESTALE;
	switch (op->kind) {
	case W_CREATE:
	case W_MKDIR:
		if (op->kind == W_CREATE)
			rc = sfs_mknod(fs, o->ino, op->name, SFS_S_IFREG | 0644,
				       0, 0, 0, &at);
		else
			rc = sfs_mkdir(fs, o->ino, op->name, 0755, 0, 0, &at);
		if (rc == 0) {
			op->ino = at.ino;
			op->gen = at.generation;
		}
		return rc;
	case W_WRITE:
		for (uint32_t i = 0; i < op->n; i++)
			cb_fill(w->buf + (size_t)i * w->bs, w->bs, op->a,
				op->blk + i,
				u32_get(o->maxver, op->blk + i) + 1);
		return sfs_write(fs, o->ino, (uint64_t)op->blk * w->bs, w->buf,
				 (size_t)op->n * w->bs, &done);
	case W_TRUNC:
		memset(&at, 0, sizeof(at));
		at.size = (uint64_t)op->n * w->bs;
		return sfs_setattr(fs, o->ino, &at, SFS_SET_SIZE, &at);
	case W_RENAME:
		c = mo(w->m, op->c);
		if (!c || !c->ino)
			return -ESTALE;
		return sfs_rename(fs, o->ino, op->name, c->ino, op->name2, 0);
	case W_UNLINK:
		return sfs_unlink(fs, o->ino, op->name);
	case W_RMDIR:
		return sfs_rmdir(fs, o->ino, op->name);
	case W_FSYNC:
		return sfs_fsync(fs, o->ino, false);
	case W_OPEN:
		return sfs_open(fs, o->ino, O_RDWR);
	case W_CLOSE:
		return sfs_release(fs, o->ino);
	case W_SYNC:
		return sfs_fs_sync(fs);
	case W_UNMOUNT:
		w->fs = NULL;
		return sfs_fs_close(fs);
	}
	return -EINVAL;
}

/* Issue op: engine, request counts, model (invariant 2), history. */
static int w_issue(struct wctx *w, struct wop *op)
{
	bool cut;

	if (w->stop || w->err[0])
		return -ECANCELED;
	op->setup = w->setup;
	if (op->kind == W_CREATE || op->kind == W_MKDIR)
		op->id = w->m->o->len;
	op->start = sfs_crashdev_seen(w->cd);
	op->rc = w_engine(w, op);
	op->end = sfs_crashdev_seen(w->cd);
	cut = sfs_crashdev_crashed(w->cd);
	if (op->rc && !cut) {
		char d[64];

		wop_desc(op, d, sizeof(d));
		g_snprintf(w->err, sizeof(w->err), "%s op %u (%s) failed: %s",
			   w->setup ? "setup" : "workload", w->ops->len + 1, d,
			   g_strerror(-op->rc));
	}
	model_apply(w->m, op, false);
	g_array_append_val(w->ops, *op);
	if (cut && !w->run_to_end)
		w->stop = true;
	return op->rc;
}

#define ALIVE(w) (!(w)->stop && !(w)->err[0])

static uint32_t w_new(struct wctx *w, enum wop_kind k, uint32_t dir,
		      const char *name)
{
	struct wop op = {.kind = (uint8_t)k, .a = dir};

	g_strlcpy(op.name, name, sizeof(op.name));
	w_issue(w, &op);
	return op.id;
}

static uint32_t w_create(struct wctx *w, uint32_t dir, const char *name)
{
	return w_new(w, W_CREATE, dir, name);
}

static uint32_t w_mkdir(struct wctx *w, uint32_t dir, const char *name)
{
	return w_new(w, W_MKDIR, dir, name);
}

static void w_write(struct wctx *w, uint32_t id, uint32_t blk, uint32_t n)
{
	struct wop op = {.kind = W_WRITE, .a = id, .blk = blk, .n = n};

	w_issue(w, &op);
}

static void w_trunc(struct wctx *w, uint32_t id, uint32_t nblk)
{
	struct wop op = {.kind = W_TRUNC, .a = id, .n = nblk};

	w_issue(w, &op);
}

static void w_rename(struct wctx *w, uint32_t dir, const char *name,
		     uint32_t dir2, const char *name2)
{
	struct wop op = {.kind = W_RENAME, .a = dir, .c = dir2};

	g_strlcpy(op.name, name, sizeof(op.name));
	g_strlcpy(op.name2, name2, sizeof(op.name2));
	w_issue(w, &op);
}

static void w_remove(struct wctx *w, enum wop_kind k, uint32_t dir,
		     const char *name)
{
	struct wop op = {.kind = (uint8_t)k, .a = dir};

	g_strlcpy(op.name, name, sizeof(op.name));
	w_issue(w, &op);
}

static void w_unlink(struct wctx *w, uint32_t dir, const char *name)
{
	w_remove(w, W_UNLINK, dir, name);
}

static void w_rmdir(struct wctx *w, uint32_t dir, const char *name)
{
	w_remove(w, W_RMDIR, dir, name);
}

static void w_fsync(struct wctx *w, uint32_t id)
{
	struct wop op = {.kind = W_FSYNC, .a = id};

	w_issue(w, &op);
}

static void w_open(struct wctx *w, uint32_t id, bool open)
{
	struct wop op = {.kind = open ? W_OPEN : W_CLOSE, .a = id};

	w_issue(w, &op);
}

static void w_sync(struct wctx *w)
{
	struct wop op = {.kind = W_SYNC};

	w_issue(w, &op);
}

/* A new file with n blocks of data. */
static uint32_t w_file(struct wctx *w, uint32_t dir, const char *name,
		       uint32_t n)
{
	uint32_t id = w_create(w, dir, name);

	if (n)
		w_write(w, id, 0, n);
	return id;
}

/* create + write + fsync, three files, then one in a new directory. */
static void wl_create(struct wctx *w)
{
	char name[16];
	uint32_t f, d;

	for (uint32_t i = 0; i < 3 && ALIVE(w); i++) {
		g_snprintf(name, sizeof(name), "c%u", i);
		f = w_file(w, 0, name, 1 + i);
		w_fsync(w, f);
	}
	d = w_mkdir(w, 0, "sub");
	f = w_file(w, d, "c3", 2);
	w_fsync(w, f);
}

static void wl_append_setup(struct wctx *w)
{
	w_file(w, 0, "log", 2);
}

/* A log file growing by one block a step, fsync every other step. */
static void wl_append(struct wctx *w)
{
	uint32_t f = model_lookup(w->m, 0, "log");

	for (uint32_t i = 0; i < 8 && ALIVE(w); i++) {
		w_write(w, f, 2 + i, 1);
		if (i & 1)
			w_fsync(w, f);
	}
}

static void wl_rename_setup(struct wctx *w)
{
	w_file(w, 0, "a", 3);
	w_file(w, 0, "b", 2);
}

/* Replace a file by renaming a new one over it, with and without fsync
 * before the rename (the zero-length-file case). */
static void wl_rename(struct wctx *w)
{
	uint32_t t;

	t = w_file(w, 0, "a.tmp", 3);
	w_fsync(w, t);
	w_rename(w, 0, "a.tmp", 0, "a");
	t = w_file(w, 0, "b.tmp", 4);
	w_rename(w, 0, "b.tmp", 0, "b");
	w_fsync(w, t);
	w_rename(w, 0, "a", 0, "c");
}

static void wl_unlink_setup(struct wctx *w)
{
	char name[8];

	for (uint32_t i = 0; i < 4; i++) {
		g_snprintf(name, sizeof(name), "u%u", i);
		w_file(w, 0, name, 4);
	}
}

/* Free blocks, then let new files take them: the stale-data case. */
static void wl_unlink(struct wctx *w)
{
	uint32_t n;

	w_unlink(w, 0, "u0");
	w_unlink(w, 0, "u1");
	n = w_file(w, 0, "n0", 6);
	w_fsync(w, n);
	w_unlink(w, 0, "u2");
	w_file(w, 0, "n1", 4);
}

static void wl_orphan_setup(struct wctx *w)
{
	w_file(w, 0, "o0", 4);
	w_file(w, 0, "o1", 5);
	w_file(w, 0, "o2", 3);
}

/*
 * Files that lose their last name while open (the orphan list): their
 * blocks stay theirs until the last close, then new files take them; one
 * is still open when the power goes, and recovery must free it.
 */
static void wl_orphan(struct wctx *w)
{
	uint32_t o0 = model_lookup(w->m, 0, "o0");
	uint32_t o1 = model_lookup(w->m, 0, "o1");
	uint32_t n;

	w_open(w, o0, true);
	w_open(w, o1, true);
	w_unlink(w, 0, "o0");
	n = w_file(w, 0, "n0", 4);
	w_fsync(w, n);
	w_unlink(w, 0, "o1");
	w_unlink(w, 0, "o2");
	w_open(w, o0, false);
	w_file(w, 0, "n1", 6);
	w_sync(w);
	w_write(w, n, 4, 2);
	w_fsync(w, n);
}

static void wl_truncate_setup(struct wctx *w)
{
	w_file(w, 0, "t0", 8);
	w_file(w, 0, "t1", 6);
}

/* Shrink, reuse the freed blocks, grow over a hole, rewrite in place. */
static void wl_truncate(struct wctx *w)
{
	uint32_t t0 = model_lookup(w->m, 0, "t0");
	uint32_t t1 = model_lookup(w->m, 0, "t1");
	uint32_t x;

	w_trunc(w, t0, 2);
	x = w_file(w, 0, "x", 5);
	w_trunc(w, t0, 10);
	w_write(w, t0, 9, 1);
	w_fsync(w, t0);
	w_trunc(w, t1, 0);
	w_write(w, t1, 0, 3);
	w_write(w, x, 1, 2);
	w_fsync(w, x);
}

/* Build a tree, tear part of it down, move directories around. */
static void wl_dirs(struct wctx *w)
{
	uint32_t a, b, c, d, e, g;

	a = w_mkdir(w, 0, "a");
	b = w_mkdir(w, a, "b");
	c = w_mkdir(w, b, "c");
	w_file(w, c, "f", 1);
	g = w_file(w, a, "g", 2);
	w_fsync(w, g);
	w_unlink(w, c, "f");
	w_rmdir(w, b, "c");
	w_rmdir(w, a, "b");
	d = w_mkdir(w, 0, "d");
	w_rename(w, 0, "a", d, "a");
	e = w_mkdir(w, d, "e");
	(void)e;
	w_rename(w, d, "e", 0, "e");
	w_fsync(w, g);
}

static void wl_mix_setup(struct wctx *w)
{
	uint32_t k;

	w_file(w, 0, "m0", 4);
	w_file(w, 0, "m1", 3);
	k = w_mkdir(w, 0, "keep");
	w_file(w, k, "k0", 2);
}

/* A little of everything: overwrite, rename over, truncate, holes. */
static void wl_mix(struct wctx *w)
{
	uint32_t m0 = model_lookup(w->m, 0, "m0");
	uint32_t k = model_lookup(w->m, 0, "keep");
	uint32_t n, z;

	w_write(w, m0, 1, 2);
	n = w_file(w, 0, "new", 3);
	w_rename(w, 0, "new", 0, "m1");
	w_trunc(w, m0, 1);
	w_fsync(w, m0);
	w_file(w, k, "k1", 2);
	w_unlink(w, k, "k0");
	z = w_mkdir(w, 0, "z");
	w_write(w, n, 3, 2);
	w_fsync(w, n);
	w_rename(w, k, "k1", z, "k1");
	w_write(w, m0, 5, 1);
	w_sync(w);
	w_write(w, n, 0, 1);
}

/* Live objects of the model, files and directories. */
static void live_lists(const struct model *m, GArray *files, GArray *dirs)
{
	g_array_set_size(files, 0);
	g_array_set_size(dirs, 0);
	for (guint i = 0; i < m->o->len; i++) {
		const struct mobj *o = mo(m, i);

		if (o->live)
			g_array_append_val(o->dir ? dirs : files, i);
	}
}

static uint32_t pick(struct wctx *w, const GArray *a)
{
	return g_array_index(a, uint32_t,
			     g_rand_int_range(w->rand, 0, (gint32)a->len));
}

static uint32_t rnd(struct wctx *w, uint32_t lo, uint32_t hi_incl)
{
	return (uint32_t)g_rand_int_range(w->rand, (gint32)lo,
					  (gint32)hi_incl + 1);
}

/* Is dir x an ancestor of (or equal to) dir y? */
static bool is_ancestor(const struct model *m, uint32_t x, uint32_t y)
{
	for (uint32_t i = 0; i < 64; i++) {
		if (y == x)
			return true;
		if (y == 0)
			return false;
		y = mo(m, y)->parent;
	}
	return true;
}

/* Thousands of seeded random ops over a few dozen files. */
static void wl_long(struct wctx *w)
{
	GArray *files = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	GArray *dirs = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	char name[WNAME];

	for (uint32_t i = 0; i < w->long_ops && ALIVE(w); i++) {
		live_lists(w->m, files, dirs);
		uint32_t r = rnd(w, 0, 99);
		uint32_t f = files->len ? pick(w, files) : 0;
		struct mobj *fo = files->len ? mo(w->m, f) : NULL;

		if (!fo || (r < 10 && files->len < 40)) {
			g_snprintf(name, sizeof(name), "f%u", ++w->seq);
			w_create(w, pick(w, dirs), name);
		} else if (r < 40) {
			uint32_t idx = rnd(
			    w, 0, MIN(fo->nblk + 4, CRASH_MAX_FILE_BLK - 1));
			uint32_t n = rnd(w, 1, 4);

			n = MIN(n, CRASH_MAX_FILE_BLK - idx);
			w_write(w, f, idx, n);
		} else if (r < 48) {
			if (fo->nblk < CRASH_MAX_FILE_BLK)
				w_write(w, f, fo->nblk,
					MIN(rnd(w, 1, 3),
					    CRASH_MAX_FILE_BLK - fo->nblk));
		} else if (r < 54) {
			w_trunc(w, f,
				MIN(rnd(w, 0, fo->nblk + 4),
				    (uint32_t)CRASH_MAX_FILE_BLK));
		} else if (r < 62) {
			uint32_t d = pick(w, dirs);
			uint32_t t = files->len > 1 ? pick(w, files) : f;
			struct mobj *to = mo(w->m, t);

			if (t != f && rnd(w, 0, 1)) /* over another file */
				w_rename(w, fo->parent, fo->name, to->parent,
					 to->name);
			else {
				g_snprintf(name, sizeof(name), "r%u", ++w->seq);
				w_rename(w, fo->parent, fo->name, d, name);
			}
		} else if (r < 68) {
			if (files->len > 4)
				w_unlink(w, fo->parent, fo->name);
		} else if (r < 72) {
			if (dirs->len < 10) {
				g_snprintf(name, sizeof(name), "d%u", ++w->seq);
				w_mkdir(w, pick(w, dirs), name);
			}
		} else if (r < 74) {
			uint32_t d = pick(w, dirs);
			struct mobj *dd = mo(w->m, d);

			if (d != 0 && g_hash_table_size(dd->ents) == 0)
				w_rmdir(w, dd->parent, dd->name);
		} else if (r < 75) {
			uint32_t d = pick(w, dirs), to = pick(w, dirs);
			struct mobj *dd = mo(w->m, d);

			if (d != 0 && !is_ancestor(w->m, d, to)) {
				g_snprintf(name, sizeof(name), "d%u", ++w->seq);
				w_rename(w, dd->parent, dd->name, to, name);
			}
		} else if (r < 98) {
			w_fsync(w, f);
		} else {
			w_sync(w);
		}
	}
	g_array_free(files, TRUE);
	g_array_free(dirs, TRUE);
}

struct workload {
	const char *name;
	const char *help;
	void (*setup)(struct wctx *w); /* may be NULL */
	void (*script)(struct wctx *w);
};

static const struct workload workloads[] = {
    {"create", "create + write + fsync three files, then one in a new dir",
     NULL, wl_create},
    {"append", "append to a log one block at a time, fsync every other",
     wl_append_setup, wl_append},
    {"rename", "replace files by renaming new ones over them", wl_rename_setup,
     wl_rename},
    {"unlink", "unlink files, then new files take their blocks",
     wl_unlink_setup, wl_unlink},
    {"orphan", "unlink open files, close one, new files take its blocks",
     wl_orphan_setup, wl_orphan},
    {"truncate", "shrink, reuse, grow over a hole, rewrite in place",
     wl_truncate_setup, wl_truncate},
    {"dirs", "mkdir/rmdir a tree, move directories", NULL, wl_dirs},
    {"mix", "overwrite, rename over, truncate, holes, sync", wl_mix_setup,
     wl_mix},
    {"long", "seeded random mix of thousands of ops", NULL, wl_long},
};

static const struct workload *workload_find(const char *name)
{
	for (size_t i = 0; name && i < G_N_ELEMENTS(workloads); i++)
		if (strcmp(workloads[i].name, name) == 0)
			return &workloads[i];
	return NULL;
}

const char *const *sfs_crash_workloads(void)
{
	static const char *names[G_N_ELEMENTS(workloads) + 1];

	for (size_t i = 0; i < G_N_ELEMENTS(workloads); i++)
		names[i] = workloads[i].name;
	names[G_N_ELEMENTS(workloads)] = NULL;
	return names;
}

const char *sfs_crash_workload_help(const char *name)
{
	const struct workload *wl = workload_find(name);

	return wl ? wl->help : NULL;
}

/* ========================================================= promises */

static const struct sfs_crash_promise promises[] = {
    {.mode = "none"},
    {.mode = "writeback", .journaled = true, .fsync_durable = true},
    {.mode = "ordered",
     .journaled = true,
     .fsync_durable = true,
     .no_foreign = true,
     .data_not_behind = true},
    {.mode = "journal",
     .journaled = true,
     .fsync_durable = true,
     .no_foreign = true,
     .data_not_behind = true,
     .data_exact = true},
};

const struct sfs_crash_promise *sfs_crash_promise_of(const char *mode)
{
	for (size_t i = 0; mode && i < G_N_ELEMENTS(promises); i++)
		if (strcmp(promises[i].mode, mode) == 0)
			return &promises[i];
	return NULL;
}

/* ================================================== 4. one run */

/*
 * The engine closes the device it was given; the crash device must
 * outlive the engine (its counters are read after unmount), so the engine
 * gets this borrowing device, which forwards everything and closes nothing.
 */
static int sh_read(struct sfs_bdev *bd, uint64_t off, void *buf, size_t len)
{
	return sfs_bdev_read(sfs_bdev_priv(bd), sfs_bdev_req_cat(bd), off, buf,
			     len);
}

static int sh_write(struct sfs_bdev *bd, uint64_t off, const void *buf,
		    size_t len)
{
	return sfs_bdev_write(sfs_bdev_priv(bd), sfs_bdev_req_cat(bd), off, buf,
			      len);
}

static int sh_zero(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	return sfs_bdev_zero(sfs_bdev_priv(bd), sfs_bdev_req_cat(bd), off, len);
}

static int sh_flush(struct sfs_bdev *bd)
{
	return sfs_bdev_flush(sfs_bdev_priv(bd));
}

static const struct sfs_bdev_ops borrow_ops = {
    .name = "crash-borrow",
    .read = sh_read,
    .write = sh_write,
    .flush = sh_flush,
    .zero = sh_zero,
};

struct run {
	struct model *m;
	GArray *ops;	  /* struct wop: setup ops, then scripted ones */
	uint32_t n_setup; /* ops before arming */
	uint32_t bs;
	struct sfs_crashdev_counters ctr;
	GByteArray *req_op; /* dry run: op of each request */
	char err[320];
};

static void run_free(struct run *r)
{
	model_free(r->m);
	if (r->ops)
		g_array_free(r->ops, TRUE);
	if (r->req_op)
		g_byte_array_free(r->req_op, TRUE);
	memset(r, 0, sizeof(*r));
}

static int parse_opts(const char *opts, struct sfs_config *cfg, char *err,
		      size_t errlen)
{
	char *msg = NULL;
	int rc;

	sfs_config_defaults(cfg);
	rc = sfs_config_parse(cfg, opts ? opts : "", NULL, &msg);
	if (rc)
		g_snprintf(err, errlen, "bad options '%s': %s",
			   opts ? opts : "", msg ? msg : "?");
	g_free(msg);
	return rc;
}

/* The scripted ops and the requests each issued, with their fates. */
static void trace_run(FILE *f, struct sfs_bdev *cd, const GArray *ops,
		      uint32_t n_setup, const struct sfs_crashdev_counters *ctr)
{
	size_t n;
	const struct sfs_crashdev_rec *log = sfs_crashdev_log(cd, &n);
	guint k = n_setup;

	fprintf(f, "# cut after request %llu; %llu writes dropped%s\n",
		(unsigned long long)ctr->crash_point,
		(unsigned long long)ctr->writes_dropped,
		ctr->writes_torn ? ", one torn" : "");
	for (size_t i = 0; i <= n; i++) {
		while (k < ops->len &&
		       g_array_index(ops, struct wop, k).start <= i) {
			const struct wop *op =
			    &g_array_index(ops, struct wop, k);
			char d[64];

			wop_desc(op, d, sizeof(d));
			fprintf(f, "# op %u: %s -> %d (requests %llu..%llu)\n",
				k - n_setup + 1, d, op->rc,
				(unsigned long long)op->start + 1,
				(unsigned long long)op->end);
			k++;
		}
		if (i == n)
			break;
		fprintf(f, "#   %6zu %-5s %-8s %10llu +%-7llu %s", i + 1,
			sfs_io_op_name(log[i].req.op),
			sfs_io_cat_name(log[i].req.cat),
			(unsigned long long)log[i].req.off_bytes,
			(unsigned long long)log[i].req.len_bytes,
			sfs_crash_fate_name(log[i].fate));
		if (log[i].fate == SFS_CRASH_TORN)
			fprintf(f, " (%llu bytes kept)",
				(unsigned long long)log[i].kept_bytes);
		fprintf(f, "%s\n",
			i + 1 == ctr->crash_point ? "   <- cut" : "");
	}
}

/*
 * Run p's workload on the image at img (modified in place).  dry: arm
 * nothing that crashes and log every request; else arm (p->mode, point,
 * dev_seed).  0 or -errno with out->err; an op failing before the cut is
 * not an error here (out->err is set, the caller decides).
 */
static int run_workload(const struct sfs_crash_params *p, const char *img,
			bool dry, uint64_t point, uint64_t dev_seed,
			struct run *out)
{
	const struct workload *wl = workload_find(p->workload);
	struct sfs_config cfg;
	struct sfs_bdev *file, *cd, *shim;
	struct sfs_fs *fs = NULL;
	struct wctx w = {0};
	struct sfs_attr at;
	char *msg = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!wl) {
		g_snprintf(out->err, sizeof(out->err), "unknown workload '%s'",
			   p->workload ? p->workload : "");
		return -EINVAL;
	}
	rc = parse_opts(p->opts, &cfg, out->err, sizeof(out->err));
	if (rc)
		return rc;
	rc =
	    sfs_bdev_open_file(img, cfg.direct ? SFS_BDEV_DIRECT : 0, 0, &file);
	if (rc) {
		g_snprintf(out->err, sizeof(out->err), "cannot open %s: %s",
			   img, g_strerror(-rc));
		return rc;
	}
	cd = sfs_crashdev_new(file);
	shim = sfs_bdev_new(&borrow_ops, cd, sfs_bdev_size_bytes(cd));
	rc = sfs_fs_open(shim, &cfg, &fs, &msg);
	if (rc) {
		g_snprintf(out->err, sizeof(out->err),
			   "cannot open the image with '%s': %s",
			   p->opts ? p->opts : "", msg ? msg : g_strerror(-rc));
		g_free(msg);
		sfs_bdev_close(cd);
		return rc;
	}
	w.fs = fs;
	w.cd = cd;
	w.m = model_new();
	w.ops = g_array_new(FALSE, TRUE, sizeof(struct wop));
	w.bs = sfs_fs_block_size(fs);
	w.buf = g_malloc((size_t)WMAXBLK * w.bs);
	w.rand = g_rand_new_with_seed((guint32)(p->seed ^ (p->seed >> 32)));
	w.long_ops = p->long_ops ? p->long_ops : CRASH_LONG_OPS;
	w.run_to_end = p->run_to_end;
	if (w.bs > CB_MAXSECT * SFS_CRASH_SECTOR) {
		g_snprintf(w.err, sizeof(w.err),
			   "block size %u: the checker handles up to 4096",
			   w.bs);
		goto out_close;
	}
	rc = sfs_mkdir(fs, SFS_ROOT_INO, CRASH_DIR, 0755, 0, 0, &at);
	if (rc) {
		g_snprintf(w.err, sizeof(w.err),
			   "cannot make /" CRASH_DIR " in the image: %s%s",
			   g_strerror(-rc),
			   rc == -EEXIST ? " (use a fresh image)" : "");
		goto out_close;
	}
	mo(w.m, 0)->ino = at.ino;
	mo(w.m, 0)->gen = at.generation;
	w.setup = true;
	if (wl->setup)
		wl->setup(&w);
	if (!w.err[0]) {
		rc = sfs_fs_sync(fs);
		if (rc)
			g_snprintf(w.err, sizeof(w.err),
				   "sync after setup failed: %s",
				   g_strerror(-rc));
	}
	w.setup = false;
	out->n_setup = w.ops->len;
	if (!w.err[0]) {
		if (dry) {
			sfs_crashdev_set_logging(cd, true);
			sfs_crashdev_arm(cd, SFS_CRASH_CUT, UINT64_MAX, 0);
		} else {
			sfs_crashdev_set_logging(cd, p->trace != NULL);
			sfs_crashdev_arm(cd, p->mode, point, dev_seed);
			if (sfs_crashdev_crashed(cd) && !w.run_to_end)
				w.stop = true;
		}
		wl->script(&w);
		if (ALIVE(&w)) {
			struct wop op = {.kind = W_UNMOUNT};

			w_issue(&w, &op);
		}
	}
out_close:
	if (w.fs)
		sfs_fs_abort(w.fs);
	if (!dry)
		sfs_crashdev_crash_now(cd);
	sfs_crashdev_counters(cd, &out->ctr);
	if (p->trace && !dry)
		trace_run(p->trace, cd, w.ops, out->n_setup, &out->ctr);
	if (dry) {
		size_t n;
		const struct sfs_crashdev_rec *log = sfs_crashdev_log(cd, &n);

		out->req_op = g_byte_array_sized_new((guint)n);
		for (size_t i = 0; i < n; i++) {
			uint8_t op = (uint8_t)log[i].req.op;

			g_byte_array_append(out->req_op, &op, 1);
		}
	}
	sfs_bdev_close(cd);
	out->m = w.m;
	out->ops = w.ops;
	out->bs = w.bs;
	if (w.err[0])
		g_strlcpy(out->err, w.err, sizeof(out->err));
	g_free(w.buf);
	g_rand_free(w.rand);
	return 0;
}

/* ==================================================== 5. image reading */

struct tent {
	char *path; /* "/crash/a/f" */
	char *name;
	sfs_ino_t ino, pino;
	uint32_t gen, pgen;
	uint32_t mode, nlink;
	uint64_t size;
	uint64_t hash; /* contents (files, symlinks) */
	bool in_crash; /* under /crash (or it) */
	uint32_t nblk;
	struct bsum *blk; /* [nblk]: files under /crash */
};

struct tree {
	GPtrArray *e; /* struct tent * */
	uint32_t bs;
};

static void tent_free(gpointer p)
{
	struct tent *t = p;

	g_free(t->path);
	g_free(t->name);
	g_free(t->blk);
	g_free(t);
}

static void tree_free(struct tree *t)
{
	if (t->e)
		g_ptr_array_free(t->e, TRUE);
	t->e = NULL;
}

struct dirent_rec {
	char *name;
	sfs_ino_t ino;
};

static int collect_cb(void *ctx, const char *name, size_t len, sfs_ino_t ino,
		      uint8_t ftype, uint64_t next_off)
{
	GArray *a = ctx;
	struct dirent_rec r = {g_strndup(name, len), ino};

	g_array_append_val(a, r);
	return 0;
}

static int read_file(struct sfs_fs *fs, struct tent *t, uint32_t bs,
		     uint64_t dev_bytes, struct cb_gen *g)
{
	uint8_t *buf = g_malloc(bs);
	uint64_t size = MIN(t->size, dev_bytes);
	uint64_t h = 0;
	int rc = 0;

	t->nblk = (uint32_t)((size + bs - 1) / bs);
	if (t->in_crash)
		t->blk = g_new0(struct bsum, t->nblk ? t->nblk : 1);
	for (uint32_t i = 0; i < t->nblk; i++) {
		size_t got = 0;

		rc = sfs_read(fs, t->ino, (uint64_t)i * bs, bs, buf, &got);
		if (rc)
			break;
		if (got < bs)
			memset(buf + got, 0, bs - got);
		h = XXH64(buf, got, h);
		if (t->in_crash)
			cb_classify(g, buf, bs, &t->blk[i]);
	}
	t->hash = h;
	g_free(buf);
	return rc;
}

static int tree_walk(struct sfs_fs *fs, struct tree *tr, sfs_ino_t dino,
		     uint32_t dgen, const char *path, bool in_crash,
		     uint64_t dev_bytes, struct cb_gen *g, int depth)
{
	GArray *ents = g_array_new(FALSE, FALSE, sizeof(struct dirent_rec));
	int rc;

	if (depth > 64) {
		g_array_free(ents, TRUE);
		return -ELOOP;
	}
	rc = sfs_readdir(fs, dino, 0, collect_cb, ents);
	for (guint i = 0; rc == 0 && i < ents->len; i++) {
		struct dirent_rec *d =
		    &g_array_index(ents, struct dirent_rec, i);
		struct sfs_attr a;
		struct tent *t;

		if (strcmp(d->name, ".") == 0 || strcmp(d->name, "..") == 0)
			continue;
		rc = sfs_getattr(fs, d->ino, &a);
		if (rc)
			break;
		t = g_new0(struct tent, 1);
		t->path = g_strdup_printf("%s/%s", path, d->name);
		t->name = g_strdup(d->name);
		t->ino = d->ino;
		t->pino = dino;
		t->gen = a.generation;
		t->pgen = dgen;
		t->mode = a.mode;
		t->nlink = a.nlink;
		t->size = a.size;
		t->in_crash =
		    in_crash || (depth == 0 && strcmp(d->name, CRASH_DIR) == 0);
		g_ptr_array_add(tr->e, t);
		if ((a.mode & SFS_S_IFMT) == SFS_S_IFDIR)
			rc = tree_walk(fs, tr, d->ino, a.generation, t->path,
				       t->in_crash, dev_bytes, g, depth + 1);
		else if ((a.mode & SFS_S_IFMT) == SFS_S_IFREG)
			rc = read_file(fs, t, tr->bs, dev_bytes, g);
		else if ((a.mode & SFS_S_IFMT) == SFS_S_IFLNK) {
			char target[4096];
			size_t len = 0;

			rc = sfs_readlink(fs, d->ino, target, sizeof(target),
					  &len);
			t->hash = XXH64(target, len, 0);
		}
	}
	for (guint i = 0; i < ents->len; i++)
		g_free(g_array_index(ents, struct dirent_rec, i).name);
	g_array_free(ents, TRUE);
	return rc;
}

/* Read the whole tree of the image at img (read-only).  0 or -errno with
 * a message in err. */
static int tree_load(const char *img, const struct sfs_config *base,
		     struct tree *tr, char *err, size_t errlen)
{
	struct sfs_config cfg = *base;
	struct sfs_bdev *bd;
	struct sfs_fs *fs;
	struct sfs_attr root;
	struct cb_gen *g;
	char *msg = NULL;
	int rc;

	cfg.ro = true;
	cfg.direct = false;
	cfg.mem_bytes = 4u << 20;
	g_strlcpy(cfg.device, "none", sizeof(cfg.device));
	cfg.stats_path[0] = 0;
	cfg.iolog_path[0] = 0;
	tr->e = g_ptr_array_new_with_free_func(tent_free);
	rc = sfs_bdev_open_file(img, SFS_BDEV_RDONLY, 0, &bd);
	if (rc) {
		g_snprintf(err, errlen, "cannot open %s: %s", img,
			   g_strerror(-rc));
		return rc;
	}
	uint64_t dev_bytes = sfs_bdev_size_bytes(bd);
	rc = sfs_fs_open(bd, &cfg, &fs, &msg);
	if (rc) {
		g_snprintf(err, errlen, "cannot open %s to read it: %s", img,
			   msg ? msg : g_strerror(-rc));
		g_free(msg);
		return rc;
	}
	tr->bs = sfs_fs_block_size(fs);
	g = g_new0(struct cb_gen, 1);
	rc = sfs_getattr(fs, SFS_ROOT_INO, &root);
	if (!rc)
		rc = tree_walk(fs, tr, SFS_ROOT_INO, root.generation, "", false,
			       dev_bytes, g, 0);
	if (rc)
		g_snprintf(err, errlen, "reading the tree of %s: %s", img,
			   g_strerror(-rc));
	g_free(g);
	sfs_fs_close(fs);
	return rc;
}

/* The whole tree as sorted lines: what two recoveries must agree on. */
static char *tree_canon(const struct tree *tr)
{
	GPtrArray *l = g_ptr_array_new_with_free_func(g_free);

	for (guint i = 0; i < tr->e->len; i++) {
		const struct tent *t = tr->e->pdata[i];
		bool dir = (t->mode & SFS_S_IFMT) == SFS_S_IFDIR;

		g_ptr_array_add(
		    l, g_strdup_printf("%s mode=%o ino=%u links=%u size=%llu "
				       "data=%016llx",
				       t->path, t->mode, t->ino, t->nlink,
				       dir ? 0ULL : (unsigned long long)t->size,
				       (unsigned long long)t->hash));
	}
	return join_sorted(l);
}

static uint64_t ig_key(sfs_ino_t ino, uint32_t gen)
{
	return (uint64_t)ino << 32 | gen;
}

/* Model id of (ino, gen) as text, "?ino" if the model has none. */
static void id_text(GHashTable *idmap, sfs_ino_t ino, uint32_t gen, char *buf,
		    size_t len)
{
	uint64_t k = ig_key(ino, gen);
	gpointer v = g_hash_table_lookup(idmap, &k);

	if (v)
		g_snprintf(buf, len, "%u", GPOINTER_TO_UINT(v) - 1);
	else
		g_snprintf(buf, len, "?%u", ino);
}

/* The /crash subtree as model_canon writes it, objects named by id. */
static char *tree_ns_canon(const struct tree *tr, GHashTable *idmap,
			   bool sizes)
{
	GPtrArray *l = g_ptr_array_new_with_free_func(g_free);

	for (guint i = 0; i < tr->e->len; i++) {
		const struct tent *t = tr->e->pdata[i];
		uint32_t type = t->mode & SFS_S_IFMT;
		char id[16], pid[16];

		if (!t->in_crash)
			continue;
		id_text(idmap, t->ino, t->gen, id, sizeof(id));
		if (strcmp(t->path, "/" CRASH_DIR) == 0) {
			g_ptr_array_add(l,
					g_strdup_printf("%s " CRASH_DIR " d %u",
							id, t->nlink));
			continue;
		}
		id_text(idmap, t->pino, t->pgen, pid, sizeof(pid));
		if (type == SFS_S_IFREG && !sizes) {
			g_ptr_array_add(l, g_strdup_printf("%s/%s f %s - %u",
							   pid, t->name, id,
							   t->nlink));
			continue;
		}
		g_ptr_array_add(
		    l, g_strdup_printf("%s/%s %c %s %llu %u", pid, t->name,
				       type == SFS_S_IFDIR   ? 'd'
				       : type == SFS_S_IFREG ? 'f'
							     : '?',
				       id,
				       type == SFS_S_IFDIR
					   ? 0ULL
					   : (unsigned long long)t->size,
				       t->nlink));
	}
	return join_sorted(l);
}

/* First line of a missing from b (into buf), "" if none. */
static void first_missing(const char *a, const char *b, char *buf, size_t len)
{
	char **la = g_strsplit(a, "\n", -1);
	GHashTable *sb = g_hash_table_new(g_str_hash, g_str_equal);
	char **lb = g_strsplit(b, "\n", -1);

	buf[0] = 0;
	for (char **l = lb; *l; l++)
		g_hash_table_add(sb, *l);
	for (char **l = la; *l; l++) {
		if (**l && !g_hash_table_contains(sb, *l)) {
			g_strlcpy(buf, *l, len);
			break;
		}
	}
	g_hash_table_destroy(sb);
	g_strfreev(la);
	g_strfreev(lb);
}

/* ================================================ 6. one crash point */

static void viol(struct sfs_crash_result *r, const char *fmt, ...)
	G_GNUC_PRINTF(2, 3);
static void viol(struct sfs_crash_result *r, const char *fmt, ...)
{
	va_list ap;

	if (r->violated)
		return;
	r->violated = true;
	va_start(ap, fmt);
	g_vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
}

/* The e2fsck binary: PATH, then the usual sbin directories. */
static char *find_e2fsck(void)
{
	static const char *const dirs[] = {"/usr/sbin/e2fsck", "/sbin/e2fsck",
					   "/usr/local/sbin/e2fsck"};
	char *p = g_find_program_in_path("e2fsck");

	for (size_t i = 0; !p && i < G_N_ELEMENTS(dirs); i++)
		if (g_file_test(dirs[i], G_FILE_TEST_IS_EXECUTABLE))
			p = g_strdup(dirs[i]);
	return p;
}

/* Does every line look like what a clean e2fsck run prints? */
static bool fsck_text_clean(const char *text)
{
	static GRegex *ok;
	char **lines;
	bool clean = true;

	if (!ok)
		ok = g_regex_new(
		    "^(e2fsck [0-9][^ ]* \\(.*\\)"
		    "|Pass [1-5]: [A-Za-z ,]+"
		    "|.+: [0-9]+/[0-9]+ files \\([0-9.]+% non-contiguous\\), "
		    "[0-9]+/[0-9]+ blocks"
		    "|)$",
		    G_REGEX_OPTIMIZE, 0, NULL);
	lines = g_strsplit(text ? text : "", "\n", -1);
	for (char **l = lines; *l; l++) {
		if (!g_regex_match(ok, *l, 0, NULL)) {
			clean = false;
			break;
		}
	}
	g_strfreev(lines);
	return clean;
}

/*
 * Run e2fsck with flags ("-fn", "-fy") on img.  *exit_out = its exit code;
 * *clean_out (may be NULL) = exit 0 and nothing but the lines of a clean
 * run (-n prints fixable problems and still exits 0: the text is read).
 * -ENOENT without e2fsck, -EIO if it could not run or died.
 */
static int run_e2fsck(const char *flags, const char *img, int *exit_out,
		      bool *clean_out, char **text_out)
{
	char *prog = find_e2fsck();
	char *argv[] = {prog, (char *)flags, (char *)img, NULL};
	char **envp;
	char *out = NULL, *errt = NULL;
	int status = -1, rc = 0;

	*exit_out = -1;
	if (clean_out)
		*clean_out = false;
	if (text_out)
		*text_out = NULL;
	if (!prog)
		return -ENOENT;
	envp = g_get_environ();
	envp = g_environ_setenv(envp, "LC_ALL", "C", TRUE);
	envp = g_environ_setenv(envp, "E2FSCK_CONFIG", "/dev/null", TRUE);
	if (!g_spawn_sync(NULL, argv, envp, G_SPAWN_DEFAULT, NULL, NULL, &out,
			  &errt, &status, NULL) ||
	    !WIFEXITED(status)) {
		rc = -EIO;
	} else {
		*exit_out = WEXITSTATUS(status);
		if (clean_out)
			*clean_out = *exit_out == 0 && fsck_text_clean(out) &&
				     fsck_text_clean(errt);
		if (text_out)
			*text_out =
			    g_strconcat(errt ? errt : "", out ? out : "", NULL);
	}
	g_free(out);
	g_free(errt);
	g_strfreev(envp);
	g_free(prog);
	return rc;
}

/* A short extract of e2fsck's complaint for a one-line message. */
static void fsck_gist(const char *text, char *buf, size_t len)
{
	char **lines = g_strsplit(text ? text : "", "\n", -1);

	buf[0] = 0;
	for (char **l = lines; *l; l++) {
		if (!**l || g_str_has_prefix(*l, "Pass ") ||
		    g_str_has_prefix(*l, "e2fsck "))
			continue;
		if (buf[0])
			g_strlcat(buf, " | ", len);
		g_strlcat(buf, *l, len);
		if (strlen(buf) > 120)
			break;
	}
	g_strfreev(lines);
}

/* Copy a regular file, keeping holes (and skipping zero runs). */
static int copy_image(const char *src, const char *dst)
{
	const size_t chunk = 256 << 10;
	int in, out, rc = 0;
	struct stat st;
	uint8_t *buf;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	if (fstat(in, &st) || !S_ISREG(st.st_mode)) {
		close(in);
		return -EINVAL;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	if (ftruncate(out, st.st_size)) {
		rc = -errno;
		goto out;
	}
	buf = g_malloc(chunk);
	for (off_t pos = 0; pos < st.st_size && !rc;) {
		off_t d = lseek(in, pos, SEEK_DATA), h;

		if (d < 0) {
			if (errno == ENXIO)
				break;
			d = pos; /* no SEEK_DATA: copy all */
			h = st.st_size;
		} else {
			h = lseek(in, d, SEEK_HOLE);
			if (h < 0)
				h = st.st_size;
		}
		for (off_t o = d; o < h && !rc;) {
			size_t n = (size_t)MIN((off_t)chunk, h - o);
			ssize_t got = pread(in, buf, n, o);

			if (got <= 0) {
				rc = got < 0 ? -errno : -EIO;
				break;
			}
			if (!all_zero(buf, (size_t)got) &&
			    pwrite(out, buf, (size_t)got, o) != got)
				rc = -EIO;
			o += got;
		}
		pos = h;
	}
	g_free(buf);
out:
	if (close(out) && !rc)
		rc = -EIO;
	close(in);
	return rc;
}

/* The primary superblock of img into *sb; false (and *sb zeroed) if it
 * cannot be read. */
static bool image_super(const char *img, struct sfs_dsuper *sb)
{
	int fd = open(img, O_RDONLY | O_CLOEXEC);
	bool ok = fd >= 0 && pread(fd, sb, sizeof(*sb), SFS_SUPER_OFFSET) ==
				 (ssize_t)sizeof(*sb);

	if (fd >= 0)
		close(fd);
	if (!ok)
		memset(sb, 0, sizeof(*sb));
	return ok;
}

static bool image_needs_recovery(const char *img)
{
	struct sfs_dsuper sb;

	image_super(img, &sb);
	return sfs_le32(sb.s_feature_incompat) & SFS_FEATURE_INCOMPAT_RECOVER;
}

/* Does img say it was cleanly unmounted?  Then it must be consistent. */
static bool image_marked_clean(const char *img)
{
	struct sfs_dsuper sb;

	return image_super(img, &sb) && sfs_sb_marked_clean(&sb);
}

/* The data= mode a mount of img with cfg gets: "auto" (or "") is ordered
 * on an image with a journal, none without (as fs.c decides). */
static const char *effective_mode(const struct sfs_config *cfg, const char *img)
{
	struct sfs_dsuper sb;

	if (cfg->journal[0] && strcmp(cfg->journal, "auto") != 0)
		return cfg->journal;
	image_super(img, &sb);
	return sfs_le32(sb.s_feature_compat) & SFS_FEATURE_COMPAT_HAS_JOURNAL
		   ? "ordered"
		   : "none";
}

/* simfs recovery: open (replays the journal) and close.  0 or -errno. */
static int simfs_recover(const char *img, const struct sfs_config *cfg,
			 char *err, size_t errlen)
{
	struct sfs_config c = *cfg;
	struct sfs_bdev *bd;
	struct sfs_fs *fs;
	char *msg = NULL;
	int rc;

	c.stats_path[0] = 0;
	c.iolog_path[0] = 0;
	rc = sfs_bdev_open_file(img, c.direct ? SFS_BDEV_DIRECT : 0, 0, &bd);
	if (rc) {
		g_snprintf(err, errlen, "cannot open %s: %s", img,
			   g_strerror(-rc));
		return rc;
	}
	rc = sfs_fs_open(bd, &c, &fs, &msg);
	if (rc) {
		g_snprintf(err, errlen, "%s", msg ? msg : g_strerror(-rc));
		g_free(msg);
		return rc;
	}
	rc = sfs_fs_close(fs);
	if (rc)
		g_snprintf(err, errlen, "close after recovery: %s",
			   g_strerror(-rc));
	return rc;
}

uint64_t sfs_crash_dev_seed(uint64_t seed, uint64_t point, uint32_t subset)
{
	return cb_mix(seed ^ cb_mix(point * 0x9E3779B97F4A7C15ULL + subset));
}

/* Allowed versions of a block over the matched states (a small set). */
struct eset {
	GHashTable *h; /* (id << 32 | idx) -> GArray of uint32 */
};

static void eset_add(struct eset *e, uint32_t id, uint32_t idx, uint32_t v)
{
	uint64_t k = (uint64_t)id << 32 | idx;
	GArray *a = g_hash_table_lookup(e->h, &k);

	if (!a) {
		uint64_t *kp = g_new(uint64_t, 1);

		*kp = k;
		a = g_array_new(FALSE, FALSE, sizeof(uint32_t));
		g_hash_table_insert(e->h, kp, a);
	}
	for (guint i = 0; i < a->len; i++)
		if (g_array_index(a, uint32_t, i) == v)
			return;
	g_array_append_val(a, v);
}

static const GArray *eset_get(const struct eset *e, uint32_t id, uint32_t idx)
{
	uint64_t k = (uint64_t)id << 32 | idx;

	return g_hash_table_lookup(e->h, &k);
}

static void garray_free_cb(gpointer p)
{
	g_array_free(p, TRUE);
}

/* The context of one model check. */
struct mcheck {
	const struct sfs_crash_promise *pr;
	const struct run *run;
	const struct tree *tr;
	uint64_t n_eff; /* fsync/sync ops ending at or before are durable */
	struct sfs_crash_result *r;
	bool size_lags; /* delalloc: a file's size may trail its state's */
};

/*
 * One block of file id (model object o) against the promise: counts into
 * r, returns a violation message (static buffer) or NULL.
 */
static const char *check_block(struct mcheck *c, uint32_t id,
			       const struct mobj *o, uint32_t idx,
			       const struct bsum *b, const struct eset *es,
			       bool have_states, bool *fsync_bad)
{
	static char msg[200];
	const struct sfs_crash_promise *pr = c->pr;
	const GArray *E = eset_get(es, id, idx);
	uint32_t fl = u32_get(o->floor, idx);
	uint32_t maxv = u32_get(o->maxver, idx);
	uint32_t emin = UINT32_MAX;
	bool zero_in_e = false, mixed = false, foreign = false, garbage = false;
	bool zero_bad = false, off = false, future = false;
	const char *bad = NULL;

	for (guint i = 0; E && i < E->len; i++) {
		uint32_t v = g_array_index(E, uint32_t, i);

		if (v == 0)
			zero_in_e = true;
		else
			emin = MIN(emin, v);
	}
	for (uint32_t s = 0; s < b->nsect; s++) {
		const struct stag *t = &b->s[s];

		if (s > 0 && (t->kind != b->s[0].kind || t->ver != b->s[0].ver))
			mixed = true;
		if (t->kind == SK_ZERO) {
			/* delalloc: data never placed before the cut reads
			 * as a hole, unless an fsync placed it */
			if (fl)
				*fsync_bad = true;
			else if (have_states && !zero_in_e && !c->size_lags)
				zero_bad = true;
		} else if (t->kind == SK_GARBAGE) {
			garbage = true;
			if (fl)
				*fsync_bad = true;
		} else if (t->id != id || t->idx != idx) {
			foreign = true;
			if (fl)
				*fsync_bad = true;
		} else {
			if (t->ver > maxv)
				future = true;
			if (t->ver < fl)
				*fsync_bad = true;
			if (have_states && pr->data_not_behind &&
			    (emin == UINT32_MAX || t->ver < emin))
				off = true;
			if (have_states && pr->data_exact) {
				bool in = false;

				for (guint i = 0; E && i < E->len; i++)
					in |= g_array_index(E, uint32_t, i) ==
					      t->ver;
				off |= !in;
			}
		}
	}
	c->r->blocks++;
	c->r->foreign += foreign;
	c->r->garbage += garbage && !foreign;
	c->r->zero_bad += zero_bad;
	c->r->torn_blocks += mixed;
	c->r->off_state += off;
	if (pr->journaled && future)
		bad = "shows a version never written before the cut";
	else if (pr->no_foreign && foreign)
		bad = "shows another file's data";
	else if (pr->no_foreign && garbage)
		bad = "shows data that is no file's (stale metadata or "
		      "garbage)";
	else if (pr->no_foreign && zero_bad)
		bad = "reads zeros where the recovered state has data";
	else if (pr->data_exact && mixed)
		bad = "is torn (mixes versions)";
	else if (off)
		bad = "holds a version no matched state allows";
	if (!bad)
		return NULL;
	{
		const struct stag *t = &b->s[0];
		uint32_t allowed =
		    E && E->len ? g_array_index(E, uint32_t, 0) : 0;

		g_snprintf(msg, sizeof(msg),
			   "%s block %u %s (sector 0: %s #%u blk %u v%u; "
			   "state v%u, newest v%u, fsync'd v%u)",
			   o->name, idx, bad,
			   t->kind == SK_ZERO	   ? "zero"
			   : t->kind == SK_GARBAGE ? "garbage"
						   : "data",
			   t->id, t->idx, t->ver, allowed, maxv, fl);
	}
	return msg;
}

/* A fsync / sync / unmount that returned 0 by request n_eff. */
static bool op_durable(const struct wop *op, uint64_t n_eff)
{
	return (op->kind == W_FSYNC || op->kind == W_SYNC ||
		op->kind == W_UNMOUNT) &&
	       op->rc == 0 && op->end <= n_eff;
}

/*
 * Replay the model through the ops begun before the cut, find the states
 * whose namespace equals the recovered one, and check every file's blocks.
 */
static void check_model(struct mcheck *c)
{
	const struct run *run = c->run;
	struct sfs_crash_result *r = c->r;
	const struct sfs_crash_promise *pr = c->pr;
	struct model *m = model_new();
	GHashTable *idmap =
	    g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	struct eset es = {g_hash_table_new_full(g_int64_hash, g_int64_equal,
						g_free, garray_free_cb)};
	uint32_t nscript = run->ops->len - run->n_setup;
	uint32_t hi = 0, lo = 0, nmatch = 0;
	char *want = NULL, *got;

	/* every object the run made, by (ino, gen) */
	{
		uint64_t *k = g_new(uint64_t, 1);

		*k = ig_key(mo(run->m, 0)->ino, mo(run->m, 0)->gen);
		g_hash_table_insert(idmap, k, GUINT_TO_POINTER(1));
		mo(m, 0)->ino = mo(run->m, 0)->ino;
		mo(m, 0)->gen = mo(run->m, 0)->gen;
	}
	for (guint i = 0; i < run->ops->len; i++) {
		const struct wop *op = &g_array_index(run->ops, struct wop, i);

		if ((op->kind == W_CREATE || op->kind == W_MKDIR) && op->ino) {
			uint64_t *k = g_new(uint64_t, 1);

			*k = ig_key(op->ino, op->gen);
			g_hash_table_insert(idmap, k,
					    GUINT_TO_POINTER(op->id + 1));
		}
	}
	for (uint32_t i = 0; i < nscript; i++) {
		const struct wop *op =
		    &g_array_index(run->ops, struct wop, run->n_setup + i);

		if (op->start < r->crash_req)
			hi = i + 1;
	}
	for (uint32_t i = 0; i < hi; i++) {
		const struct wop *op =
		    &g_array_index(run->ops, struct wop, run->n_setup + i);

		if (op_durable(op, c->n_eff))
			lo = i + 1;
	}
	r->ops_begun = hi;
	r->lo_state = (int32_t)lo;
	/* state 0: after setup, which a sync made durable */
	for (uint32_t i = 0; i < run->n_setup; i++)
		model_apply(m, &g_array_index(run->ops, struct wop, i), false);
	for (guint i = 0; i < m->o->len; i++)
		floor_take(mo(m, i));
	got = tree_ns_canon(c->tr, idmap, !c->size_lags);
	/* delalloc: the largest size each file has in a matching state */
	GArray *maxsz = g_array_sized_new(FALSE, TRUE, sizeof(uint64_t), 16);
	for (uint32_t j = 0; j <= hi; j++) {
		if (j > 0) {
			const struct wop *op = &g_array_index(
			    run->ops, struct wop, run->n_setup + j - 1);

			model_apply(m, op, op_durable(op, c->n_eff));
		}
		if (j < lo) /* before the last durable op: not a candidate */
			continue;
		g_free(want);
		want = model_canon(m, run->bs, !c->size_lags);
		if (strcmp(want, got) != 0)
			continue;
		nmatch++;
		r->state = (int32_t)j;
		if (maxsz->len < m->o->len)
			g_array_set_size(maxsz, m->o->len);
		for (guint i = 0; i < m->o->len; i++) {
			uint64_t *mx = &g_array_index(maxsz, uint64_t, i);
			uint64_t sz = (uint64_t)mo(m, i)->nblk * run->bs;

			if (mo(m, i)->live && sz > *mx)
				*mx = sz;
		}
		for (guint i = 0; i < m->o->len; i++) {
			const struct mobj *o = mo(m, i);

			if (!o->live || o->dir)
				continue;
			for (uint32_t b = 0; b < o->nblk; b++)
				eset_add(&es, i, b, u32_get(o->ver, b));
		}
	}
	if (!nmatch) {
		r->state = -1;
		if (pr->journaled) {
			char a[160], b[160];

			first_missing(got, want, a, sizeof(a));
			first_missing(want, got, b, sizeof(b));
			viol(r,
			     "namespace matches no state after ops %u..%u: "
			     "recovered has [%s], state %u has [%s]",
			     lo, hi, a, hi, b);
		}
	}
	/* blocks of every recovered file the model knows */
	GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
	for (guint i = 0; i < c->tr->e->len; i++) {
		const struct tent *t = c->tr->e->pdata[i];
		uint64_t k = ig_key(t->ino, t->gen);
		gpointer v;
		const struct mobj *o;
		bool fsync_bad = false;
		uint32_t id;

		if (!t->in_crash || (t->mode & SFS_S_IFMT) != SFS_S_IFREG)
			continue;
		v = g_hash_table_lookup(idmap, &k);
		if (!v)
			continue;
		id = GPOINTER_TO_UINT(v) - 1;
		o = mo(m, id);
		if (!o || o->dir)
			continue;
		g_hash_table_add(seen, GUINT_TO_POINTER(id + 1));
		r->files++;
		if (c->size_lags && nmatch && pr->journaled &&
		    (id >= maxsz->len ||
		     t->size > g_array_index(maxsz, uint64_t, id)))
			viol(r,
			     "%s: size %llu is past every matching state's "
			     "(%llu)",
			     o->name, (unsigned long long)t->size,
			     id < maxsz->len
				 ? (unsigned long long)g_array_index(maxsz,
								     uint64_t,
								     id)
				 : 0ULL);
		for (uint32_t b = 0; b < t->nblk; b++) {
			const char *bad =
			    check_block(c, id, o, b, &t->blk[b], &es,
					nmatch > 0, &fsync_bad);
			if (bad && (pr->no_foreign || pr->data_exact ||
				    pr->data_not_behind || pr->journaled))
				viol(r, "%s", bad);
		}
		/* fsync'd blocks beyond the recovered size */
		for (uint32_t b = t->nblk; o->floor && b < o->floor->len; b++)
			if (u32_get(o->floor, b))
				fsync_bad = true;
		if (o->floor) {
			if (fsync_bad) {
				r->fsync_lost++;
				if (pr->fsync_durable)
					viol(r,
					     "fsync'd file %s (#%u) lost data "
					     "it held at its fsync",
					     o->name, id);
			} else {
				r->fsync_ok++;
			}
		}
	}
	/* fsync'd files still live at the last op begun, yet missing */
	for (guint i = 1; i < m->o->len; i++) {
		const struct mobj *o = mo(m, i);
		bool owed = false;

		if (!o->live || o->dir || !o->floor ||
		    g_hash_table_contains(seen, GUINT_TO_POINTER(i + 1)))
			continue;
		for (guint b = 0; b < o->floor->len; b++)
			owed |= g_array_index(o->floor, uint32_t, b) != 0;
		if (!owed)
			continue;
		r->fsync_lost++;
		if (pr->fsync_durable && nmatch == 0)
			viol(r, "fsync'd file %s (#%u) is missing", o->name, i);
	}
	g_hash_table_destroy(seen);
	g_free(want);
	g_free(got);
	g_hash_table_destroy(es.h);
	g_array_free(maxsz, TRUE);
	g_hash_table_destroy(idmap);
	model_free(m);
}

static char *default_workdir(void)
{
	const char *t = g_getenv("TMPDIR");

	if (t && *t)
		return g_strdup(t);
	if (g_file_test("/dev/shm", G_FILE_TEST_IS_DIR) &&
	    access("/dev/shm", W_OK) == 0)
		return g_strdup("/dev/shm");
	return g_strdup("/tmp");
}

static void rm_dir(const char *dir, const char *const *files)
{
	for (size_t i = 0; files[i]; i++) {
		char *f = g_build_filename(dir, files[i], NULL);

		unlink(f);
		g_free(f);
	}
	rmdir(dir);
}

int sfs_crash_check_point(const struct sfs_crash_params *p, uint64_t point,
			  uint32_t subset, struct sfs_crash_result *r)
{
	static const char *const files[] = {"crashed.img", "e2fsck.img", NULL};
	const struct sfs_crash_promise *pr;
	struct sfs_config cfg;
	struct run run = {0};
	struct tree t_sim = {0}, t_fsck = {0};
	char *wd, *dir, *crashed = NULL, *fixed = NULL, *text = NULL;
	char msg[256];
	int rc, ex;

	memset(r, 0, sizeof(*r));
	r->point = point;
	r->subset = subset;
	r->dev_seed = sfs_crash_dev_seed(p->seed, point, subset);
	r->state = r->lo_state = -1;
	r->same_tree = -1;
	r->fsck_y = -1;
	rc = parse_opts(p->opts, &cfg, r->why, sizeof(r->why));
	if (rc)
		return rc;
	const char *mode = effective_mode(&cfg, p->image);

	pr = sfs_crash_promise_of(p->promise ? p->promise : mode);
	if (!pr) {
		g_snprintf(r->why, sizeof(r->why),
			   "no promise known for data=%s",
			   p->promise ? p->promise : mode);
		return -EINVAL;
	}
	wd = p->workdir ? g_strdup(p->workdir) : default_workdir();
	dir = g_build_filename(wd, "simfs-crash-XXXXXX", NULL);
	g_free(wd);
	if (!g_mkdtemp(dir)) {
		rc = -errno;
		g_snprintf(r->why, sizeof(r->why), "cannot make %s: %s", dir,
			   g_strerror(errno));
		g_free(dir);
		return rc;
	}
	crashed = g_build_filename(dir, files[0], NULL);
	fixed = g_build_filename(dir, files[1], NULL);
	rc = copy_image(p->image, crashed);
	if (rc) {
		g_snprintf(r->why, sizeof(r->why), "cannot copy %s: %s",
			   p->image, g_strerror(-rc));
		goto out;
	}

	/* the run, cut at point */
	rc = run_workload(p, crashed, false, point, r->dev_seed, &run);
	if (rc) {
		g_strlcpy(r->why, run.err, sizeof(r->why));
		goto out;
	}
	r->crash_req = run.ctr.crash_point;
	r->dropped = run.ctr.writes_dropped;
	r->torn = run.ctr.writes_torn > 0;
	r->torn_bytes = run.ctr.torn_kept_bytes;
	r->held = (uint32_t)run.ctr.held_at_crash;
	r->applied = (uint32_t)run.ctr.applied_at_crash;
	for (guint i = run.n_setup; i < run.ops->len; i++) {
		const struct wop *op = &g_array_index(run.ops, struct wop, i);

		if (op->start < r->crash_req && r->crash_req <= op->end) {
			r->op_at_cut = i - run.n_setup + 1;
			wop_desc(op, r->op_desc, sizeof(r->op_desc));
		}
	}
	if (run.err[0]) {
		viol(r, "%s", run.err);
		goto out;
	}

	/* e2fsck's view of the crashed image, then its own repair */
	r->needs_recovery = image_needs_recovery(crashed);
	r->marked_clean = image_marked_clean(crashed);
	rc = run_e2fsck("-fn", crashed, &ex, &r->crashed_clean, &text);
	if (rc == -ENOENT) {
		g_strlcpy(r->why, "e2fsck not found", sizeof(r->why));
		goto out;
	}
	/* every policy: an image that says it is clean is */
	if (r->marked_clean && !r->crashed_clean) {
		fsck_gist(text, msg, sizeof(msg));
		viol(r, "marked clean but e2fsck -fn is not: %s", msg);
	}
	g_free(text);
	text = NULL;
	rc = copy_image(crashed, fixed);
	if (rc) {
		g_snprintf(r->why, sizeof(r->why), "cannot copy %s: %s",
			   crashed, g_strerror(-rc));
		goto out;
	}
	run_e2fsck("-fy", fixed, &r->fsck_y, NULL, &text);
	if (r->fsck_y != 0 && r->fsck_y != 1) {
		fsck_gist(text, msg, sizeof(msg));
		viol(r, "e2fsck -fy exited %d: %s", r->fsck_y, msg);
	}
	g_free(text);
	run_e2fsck("-fn", fixed, &ex, &r->repaired_clean, &text);
	if (!r->repaired_clean) {
		fsck_gist(text, msg, sizeof(msg));
		viol(r, "e2fsck -fn after e2fsck -fy not clean: %s", msg);
	}
	g_free(text);
	text = NULL;

	/* simfs's recovery on the original */
	if (pr->journaled || r->crashed_clean) {
		r->recover_rc = simfs_recover(crashed, &cfg, msg, sizeof(msg));
		if (r->recover_rc)
			viol(r, "simfs recovery failed: %s", msg);
		run_e2fsck("-fn", crashed, &ex, &r->recovered_clean, &text);
		if (!r->recovered_clean) {
			fsck_gist(text, msg, sizeof(msg));
			viol(r, "e2fsck -fn after simfs recovery: %s", msg);
		}
		g_free(text);
		text = NULL;
	} else {
		/* ext2 damaged: simfs must refuse or cope, never crash */
		r->recover_rc = simfs_recover(crashed, &cfg, msg, sizeof(msg));
	}

	/* the trees */
	rc = tree_load(fixed, &cfg, &t_fsck, msg, sizeof(msg));
	if (rc)
		viol(r, "after e2fsck -fy: %s", msg);
	if (pr->journaled || r->crashed_clean) {
		rc = tree_load(crashed, &cfg, &t_sim, msg, sizeof(msg));
		if (rc)
			viol(r, "after simfs recovery: %s", msg);
	}
	if (t_sim.e && t_fsck.e && t_sim.e->len + t_fsck.e->len > 0) {
		char *a = tree_canon(&t_sim), *b = tree_canon(&t_fsck);

		r->same_tree = strcmp(a, b) == 0;
		if (!r->same_tree) {
			char x[150], y[150];

			first_missing(a, b, x, sizeof(x));
			first_missing(b, a, y, sizeof(y));
			viol(r,
			     "simfs and e2fsck recoveries differ: simfs has "
			     "[%s], e2fsck has [%s]",
			     x, y);
		}
		g_free(a);
		g_free(b);
	}

	/* what the mode promises about the namespace and the data */
	const struct tree *tr = t_sim.e ? &t_sim : t_fsck.e ? &t_fsck : NULL;
	if (tr && tr->e) {
		struct mcheck mc = {
		    .pr = pr,
		    .run = &run,
		    .tr = tr,
		    .n_eff = r->crash_req -
			     (p->mode == SFS_CRASH_TEAR && r->torn ? 1 : 0),
		    .r = r,
		    .size_lags = cfg.delalloc && strcmp(mode, "journal") != 0,
		};
		/* ext2 (data=none): the model check is information only */
		struct sfs_crash_promise none = {.mode = pr->mode};

		if (!pr->journaled)
			mc.pr = &none;
		check_model(&mc);
	}
	rc = 0;
out:
	tree_free(&t_sim);
	tree_free(&t_fsck);
	run_free(&run);
	if (!((r->violated && p->keep_failed) || p->keep_all)) {
		rm_dir(dir, files);
	} else {
		if (!r->why[0])
			g_strlcpy(r->why, "ok", sizeof(r->why));
		g_strlcat(r->why, " [kept in ", sizeof(r->why));
		g_strlcat(r->why, dir, sizeof(r->why));
		g_strlcat(r->why, "]", sizeof(r->why));
	}
	g_free(crashed);
	g_free(fixed);
	g_free(dir);
	return rc;
}

/* ============================================ 7. plans, sweeps, table */

int sfs_crash_plan(const struct sfs_crash_params *p, struct sfs_crash_plan *out,
		   char **err)
{
	char *wd, *dir, *img;
	struct run run = {0};
	int rc;

	memset(out, 0, sizeof(*out));
	if (!workload_find(p->workload)) {
		GString *s = g_string_new(NULL);

		for (size_t i = 0; i < G_N_ELEMENTS(workloads); i++)
			g_string_append_printf(s, "%s%s", i ? ", " : "",
					       workloads[i].name);
		*err = g_strdup_printf("unknown workload '%s' (valid: %s)",
				       p->workload ? p->workload : "", s->str);
		g_string_free(s, TRUE);
		return -EINVAL;
	}
	wd = p->workdir ? g_strdup(p->workdir) : default_workdir();
	dir = g_build_filename(wd, "simfs-crash-XXXXXX", NULL);
	g_free(wd);
	if (!g_mkdtemp(dir)) {
		rc = -errno;
		*err = g_strdup_printf("cannot make %s: %s", dir,
				       g_strerror(errno));
		g_free(dir);
		return rc;
	}
	img = g_build_filename(dir, "plan.img", NULL);
	rc = copy_image(p->image, img);
	if (rc) {
		*err = g_strdup_printf("cannot copy %s: %s", p->image,
				       g_strerror(-rc));
		goto out;
	}
	rc = run_workload(p, img, true, 0, 0, &run);
	if (!rc && run.err[0])
		rc = -EIO;
	if (rc) {
		*err = g_strdup(run.err);
		goto out;
	}
	out->total_reqs = run.ctr.reqs_seen;
	out->n_ops = run.ops->len - run.n_setup;
	for (guint i = run.n_setup; i < run.ops->len; i++) {
		uint8_t k = g_array_index(run.ops, struct wop, i).kind;

		out->n_durable += k == W_FSYNC || k == W_SYNC || k == W_UNMOUNT;
	}
	out->req_op = g_malloc(MAX(run.req_op->len, 1));
	memcpy(out->req_op, run.req_op->data, run.req_op->len);
out:
	run_free(&run);
	unlink(img);
	rmdir(dir);
	g_free(img);
	g_free(dir);
	return rc;
}

void sfs_crash_plan_free(struct sfs_crash_plan *plan)
{
	g_free(plan->req_op);
	memset(plan, 0, sizeof(*plan));
}

size_t sfs_crash_points(const struct sfs_crash_plan *plan,
			const struct sfs_crash_params *p, const char *spec,
			uint64_t **out)
{
	uint64_t total = plan->total_reqs;
	GArray *a = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	uint64_t k = 0;

	if (spec && g_str_has_prefix(spec, "sample:"))
		k = g_ascii_strtoull(spec + 7, NULL, 10);
	if (k == 0 || k > total + 1) {
		for (uint64_t n = 0; n <= total; n++) {
			bool read = n > 0 && n <= total &&
				    plan->req_op[n - 1] == SFS_IO_READ;

			if (read && p->mode != SFS_CRASH_VOLATILE)
				continue;
			g_array_append_val(a, n);
		}
	} else {
		uint32_t sa[3] = {(uint32_t)p->seed, (uint32_t)(p->seed >> 32),
				  (uint32_t)p->mode};
		GRand *r = g_rand_new_with_seed_array(sa, 3);

		for (uint64_t i = 0; i < k; i++) {
			uint64_t lo = i * (total + 1) / k;
			uint64_t hi = (i + 1) * (total + 1) / k; /* excl */
			uint64_t n = lo + (uint64_t)(g_rand_double(r) *
						     (double)(hi - lo));

			g_array_append_val(a, n);
		}
		g_rand_free(r);
	}
	size_t len = a->len;

	*out = (uint64_t *)(void *)g_array_free(a, FALSE);
	return len;
}

struct child {
	pid_t pid;
	int fd;
	size_t idx;
};

/* A sweep's count of finished checks, for p->progress. */
struct sweep_count {
	size_t done, bad, total;
};

/* One more check finished, with result r. */
static void sweep_done(const struct sfs_crash_params *p, struct sweep_count *n,
		       const struct sfs_crash_result *r)
{
	n->done++;
	n->bad += r->violated;
	if (p->progress)
		p->progress(p->progress_arg, n->done, n->total, n->bad);
}

/* Collect one finished child (blocking); fills its result. */
static void reap_one(GArray *kids, const struct sfs_crash_params *p,
		     const uint64_t *points, uint32_t subsets,
		     struct sfs_crash_result *res, struct sweep_count *cnt)
{
	int status = 0;
	pid_t pid;

	do
		pid = waitpid(-1, &status, 0);
	while (pid < 0 && errno == EINTR);
	if (pid < 0) {
		/* no child left to wait for: count the rest as lost */
		while (kids->len) {
			struct child *k = &g_array_index(kids, struct child, 0);

			close(k->fd);
			memset(&res[k->idx], 0, sizeof(res[k->idx]));
			res[k->idx].point = points[k->idx / subsets];
			res[k->idx].violated = true;
			g_snprintf(res[k->idx].why, sizeof(res[k->idx].why),
				   "checker lost: %s", g_strerror(errno));
			sweep_done(p, cnt, &res[k->idx]);
			g_array_remove_index_fast(kids, 0);
		}
		return;
	}
	for (guint i = 0; i < kids->len; i++) {
		struct child *k = &g_array_index(kids, struct child, i);
		struct sfs_crash_result *r = &res[k->idx];
		ssize_t got;

		if (k->pid != pid)
			continue;
		got = read(k->fd, r, sizeof(*r));
		close(k->fd);
		if (got != (ssize_t)sizeof(*r) || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			memset(r, 0, sizeof(*r));
			r->point = points[k->idx / subsets];
			r->subset = (uint32_t)(k->idx % subsets);
			r->dev_seed =
			    sfs_crash_dev_seed(p->seed, r->point, r->subset);
			r->state = r->lo_state = r->same_tree = -1;
			r->violated = true;
			if (WIFSIGNALED(status))
				g_snprintf(r->why, sizeof(r->why),
					   "checker died: signal %d (%s)",
					   WTERMSIG(status),
					   g_strsignal(WTERMSIG(status)));
			else
				g_snprintf(r->why, sizeof(r->why),
					   "checker exited %d without a result",
					   WIFEXITED(status)
					       ? WEXITSTATUS(status)
					       : -1);
		}
		sweep_done(p, cnt, r);
		g_array_remove_index_fast(kids, i);
		return;
	}
}

/* Remove what sfs_crash_check_point may leave under dir (a killed
 * checker cannot clean up after itself), then dir. */
static void sweep_cleanup(const char *dir)
{
	static const char *const files[] = {"crashed.img", "e2fsck.img", NULL};
	GDir *d = g_dir_open(dir, 0, NULL);
	const char *name;

	while (d && (name = g_dir_read_name(d))) {
		char *sub = g_build_filename(dir, name, NULL);

		if (g_str_has_prefix(name, "simfs-crash-"))
			rm_dir(sub, files);
		g_free(sub);
	}
	if (d)
		g_dir_close(d);
	rmdir(dir);
}

size_t sfs_crash_sweep(const struct sfs_crash_params *p0,
		       const uint64_t *points, size_t n, uint32_t subsets,
		       unsigned jobs, struct sfs_crash_result *res)
{
	struct sfs_crash_params pp = *p0, *p = &pp;
	struct sweep_count cnt = {0};
	size_t total, bad = 0;
	GArray *kids = g_array_new(FALSE, FALSE, sizeof(struct child));
	char *wd = NULL, *sweep_dir = NULL;

	subsets = MAX(subsets, 1);
	total = n * subsets;
	cnt.total = total;
	if (!p->keep_failed && !p->keep_all) {
		/* one directory for the whole sweep, removed at the end */
		wd = p->workdir ? g_strdup(p->workdir) : default_workdir();
		sweep_dir = g_build_filename(wd, "simfs-sweep-XXXXXX", NULL);
		if (g_mkdtemp(sweep_dir))
			pp.workdir = sweep_dir;
	}
	fflush(NULL);
	if (p->progress)
		p->progress(p->progress_arg, 0, total, 0);
	for (size_t i = 0; i < total; i++) {
		uint64_t pt = points[i / subsets];
		uint32_t sub = (uint32_t)(i % subsets);
		int fds[2];
		pid_t pid;

		if (jobs == 0) {
			if (sfs_crash_check_point(p, pt, sub, &res[i]) &&
			    !res[i].violated) {
				res[i].violated = true;
			}
			sweep_done(p, &cnt, &res[i]);
			continue;
		}
		while (kids->len >= jobs)
			reap_one(kids, p, points, subsets, res, &cnt);
		if (pipe(fds)) {
			memset(&res[i], 0, sizeof(res[i]));
			res[i].point = pt;
			res[i].violated = true;
			g_snprintf(res[i].why, sizeof(res[i].why), "pipe: %s",
				   g_strerror(errno));
			sweep_done(p, &cnt, &res[i]);
			continue;
		}
		pid = fork();
		if (pid == 0) {
			static const int sigs[] = {SIGSEGV, SIGBUS,  SIGILL,
						   SIGFPE,  SIGABRT, SIGSYS};
			struct sfs_crash_result r;
			int rc;

			/* die of a fault (the parent reports it), do not
			 * jump into a test framework's handler */
			for (size_t j = 0; j < G_N_ELEMENTS(sigs); j++)
				signal(sigs[j], SIG_DFL);
			close(fds[0]);
			rc = sfs_crash_check_point(p, pt, sub, &r);
			if (rc && !r.violated)
				r.violated = true;
			ssize_t w = write(fds[1], &r, sizeof(r));
			_exit(w == (ssize_t)sizeof(r) ? 0 : 3);
		}
		close(fds[1]);
		if (pid < 0) {
			close(fds[0]);
			memset(&res[i], 0, sizeof(res[i]));
			res[i].point = pt;
			res[i].violated = true;
			g_snprintf(res[i].why, sizeof(res[i].why), "fork: %s",
				   g_strerror(errno));
			sweep_done(p, &cnt, &res[i]);
			continue;
		}
		struct child k = {pid, fds[0], i};
		g_array_append_val(kids, k);
	}
	while (kids->len)
		reap_one(kids, p, points, subsets, res, &cnt);
	g_array_free(kids, TRUE);
	for (size_t i = 0; i < total; i++)
		bad += res[i].violated;
	if (pp.workdir == sweep_dir && sweep_dir)
		sweep_cleanup(sweep_dir);
	g_free(sweep_dir);
	g_free(wd);
	return bad;
}

void sfs_crash_summarize(const struct sfs_crash_result *r, size_t n,
			 struct sfs_crash_summary *s)
{
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < n; i++) {
		s->points++;
		s->violations += r[i].violated;
		s->needs_recovery += r[i].needs_recovery;
		s->damaged += !r[i].crashed_clean && !r[i].needs_recovery;
		s->repaired += !r[i].crashed_clean && !r[i].needs_recovery &&
			       r[i].repaired_clean;
		s->recovered_clean += r[i].recovered_clean;
		s->same_tree += r[i].same_tree == 1;
		s->foreign_points += r[i].foreign + r[i].garbage > 0;
		s->fsync_ok += r[i].fsync_ok;
		s->fsync_lost += r[i].fsync_lost;
	}
}

char *sfs_crash_repro(const struct sfs_crash_params *p,
		      const struct sfs_crash_result *r)
{
	GString *s = g_string_new(NULL);
	const char *opts = p->opts ? p->opts : "";

	/* simfs crash puts these first itself */
	if (g_str_has_prefix(opts, CRASH_CLI_OPTS ","))
		opts += strlen(CRASH_CLI_OPTS ",");
	else if (strcmp(opts, CRASH_CLI_OPTS) == 0)
		opts = "";
	g_string_append_printf(s,
			       "simfs crash -o '%s' --workload %s --mode %s "
			       "--seed %llu --point %llu",
			       opts, p->workload, sfs_crash_mode_name(p->mode),
			       (unsigned long long)p->seed,
			       (unsigned long long)r->point);
	if (r->subset)
		g_string_append_printf(s, " --subset %u", r->subset);
	if (p->long_ops && strcmp(p->workload, "long") == 0)
		g_string_append_printf(s, " --long-ops %u", p->long_ops);
	if (p->run_to_end)
		g_string_append(s, " --run-to-end");
	if (p->promise)
		g_string_append_printf(s, " --promise %s", p->promise);
	g_string_append_printf(s, " %s", p->image);
	return g_string_free(s, FALSE);
}

void sfs_crash_print_header(FILE *out)
{
	fprintf(out, "%7s %-22s %5s %-8s %-7s %-9s %-4s %-13s %-6s %s\n",
		"point", "op at the cut", "lost", "crashed", "fsck-y",
		"recovered", "same", "blk f/g/z/t/s", "fsync", "verdict");
}

void sfs_crash_print_row(FILE *out, const struct sfs_crash_result *r)
{
	char op[40], blk[32], fs[16], fy[16];

	g_snprintf(op, sizeof(op), "%s%s", r->op_at_cut ? "" : "-",
		   r->op_at_cut ? r->op_desc : "");
	g_snprintf(blk, sizeof(blk), "%u/%u/%u/%u/%u", r->foreign, r->garbage,
		   r->zero_bad, r->torn_blocks, r->off_state);
	g_snprintf(fs, sizeof(fs), "%u/%u", r->fsync_ok,
		   r->fsync_ok + r->fsync_lost);
	g_snprintf(fy, sizeof(fy), "%d%s", r->fsck_y,
		   r->repaired_clean ? "" : "!");
	fprintf(out, "%7llu %-22.22s %5llu %-8s %-7s %-9s %-4s %-13s %-6s %s\n",
		(unsigned long long)r->crash_req, op,
		(unsigned long long)r->dropped,
		r->needs_recovery  ? "recover"
		: r->crashed_clean ? "clean"
				   : "DAMAGED",
		fy,
		r->recover_rc	     ? "refused"
		: r->recovered_clean ? "clean"
				     : "-",
		r->same_tree < 0 ? "-"
		: r->same_tree	 ? "yes"
				 : "NO",
		blk, fs, r->violated || r->why[0] ? r->why : "ok");
}

void sfs_crash_print_summary(FILE *out, const struct sfs_crash_params *p,
			     const struct sfs_crash_summary *s)
{
	struct sfs_config cfg;
	char err[128];

	parse_opts(p->opts, &cfg, err, sizeof(err));
	fprintf(out,
		"data=%s workload=%s mode=%s seed=%llu: %zu points, %zu "
		"violations; crashed images: %zu needed journal recovery, "
		"%zu damaged (%zu repaired by e2fsck -y); %zu clean after "
		"simfs recovery, %zu equal to e2fsck's; %zu points with "
		"foreign data; fsync'd files intact %zu, lost %zu\n",
		effective_mode(&cfg, p->image), p->workload,
		sfs_crash_mode_name(p->mode), (unsigned long long)p->seed,
		s->points, s->violations, s->needs_recovery, s->damaged,
		s->repaired, s->recovered_clean, s->same_tree,
		s->foreign_points, s->fsync_ok, s->fsync_lost);
}

/* ======================================================= simfs crash */

/*
 * The progress line of a sweep, on stderr: by default only when stderr is
 * a terminal (and neither --quiet nor --trace), so a redirected or piped
 * run prints exactly what it always did.  On a terminal the line is
 * rewritten in place and erased when the sweep ends, before the table;
 * forced (--progress) onto a file or pipe it is one line per percent.
 */
struct crash_progress {
	FILE *out;
	bool tty;
	size_t last_pct; /* not a tty: the percent last printed, +1 */
};

static void crash_progress_cb(void *arg, size_t done, size_t total, size_t bad)
{
	struct crash_progress *pr = arg;
	size_t pct = total ? done * 100 / total : 100;

	if (pr->tty) {
		if (done < total)
			fprintf(pr->out,
				"\rsimfs crash: %zu/%zu checks done (%zu%%), "
				"%zu violation%s so far\033[K",
				done, total, pct, bad, bad == 1 ? "" : "s");
		else
			fputs("\r\033[K", pr->out);
	} else if (pct + 1 != pr->last_pct) {
		fprintf(pr->out,
			"simfs crash: %zu/%zu checks done (%zu%%), %zu "
			"violation%s so far\n",
			done, total, pct, bad, bad == 1 ? "" : "s");
		pr->last_pct = pct + 1;
	}
	fflush(pr->out);
}

static void crash_usage(FILE *out)
{
	fputs("usage: simfs crash [-o OPTS] [--workload NAME] [--seed S]\n"
	      "                   [--point N | --points all|sample:K]\n"
	      "                   [--mode cut|tear|volatile]\n"
	      "                   [--subsets K | --subset K]\n"
	      "                   [--jobs J] [--long-ops N] [--run-to-end]\n"
	      "                   [--promise MODE] [--keep] [--trace]\n"
	      "                   [--quiet] [--progress | --no-progress]\n"
	      "                   IMAGE\n"
	      "\n"
	      "Run a workload on copies of IMAGE (a fresh simfs or mke2fs\n"
	      "image; never modified), cut the power after request N,\n"
	      "recover with e2fsck -fy (a copy) and with simfs (same\n"
	      "options), run e2fsck -fn and check what the data= mode\n"
	      "promises.  One row per point, then a summary; exit 1 if a\n"
	      "promise broke.  OPTS are engine options (data=ordered, ...);\n"
	      "mem=1M comes first so the cache writes back early.\n"
	      "--promise MODE checks another mode's promise (what would\n"
	      "data=none break if it were held to ordered's?).  --keep\n"
	      "keeps the images of failed points (of the point, with\n"
	      "--point) for e2fsck, debugfs and simfs inspect.  --trace\n"
	      "lists each run's ops and device requests with their fate.\n"
	      "--quiet prints only failed points and the summary.  While\n"
	      "a sweep runs, a progress line (checks done of total,\n"
	      "violations so far) goes to stderr if it is a terminal,\n"
	      "erased before the table; --progress forces it (one line\n"
	      "per percent when stderr is not a terminal), --no-progress\n"
	      "turns it off.  stdout is the same either way.\n"
	      "Defaults: --workload mix --seed 1 --points all --mode cut,\n"
	      "--jobs = the number of CPUs.\n"
	      "\n"
	      "modes:\n"
	      "  cut       requests 1..N land, nothing after\n"
	      "  tear      as cut, request N (a write) lands in part: a\n"
	      "            seeded number of its leading 512-byte sectors\n"
	      "  volatile  a write cache without FUA: at N a seeded subset\n"
	      "            of the writes since the last flush lands\n"
	      "\n"
	      "workloads:\n",
	      out);
	for (size_t i = 0; i < G_N_ELEMENTS(workloads); i++)
		fprintf(out, "  %-9s %s\n", workloads[i].name,
			workloads[i].help);
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	*out = g_ascii_strtoull(s, &end, 0);
	return errno || *end ? -EINVAL : 0;
}

int sfs_crash_main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"workload", required_argument, NULL, 'w'},
	    {"seed", required_argument, NULL, 's'},
	    {"point", required_argument, NULL, 'p'},
	    {"points", required_argument, NULL, 'P'},
	    {"mode", required_argument, NULL, 'm'},
	    {"subsets", required_argument, NULL, 'k'},
	    {"subset", required_argument, NULL, 'K'},
	    {"jobs", required_argument, NULL, 'j'},
	    {"long-ops", required_argument, NULL, 'L'},
	    {"run-to-end", no_argument, NULL, 'E'},
	    {"keep", no_argument, NULL, 'e'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"promise", required_argument, NULL, 'R'},
	    {"trace", no_argument, NULL, 'T'},
	    {"progress", no_argument, NULL, 'G'},
	    {"no-progress", no_argument, NULL, 'N'},
	    {NULL, 0, NULL, 0},
	};
	struct sfs_crash_params p = {.workload = "mix", .seed = 1};
	struct sfs_crash_plan plan;
	struct sfs_crash_summary sum;
	struct sfs_crash_result *res;
	const char *spec = "all";
	char *user_opts = NULL, *err = NULL;
	uint64_t v, point = UINT64_MAX, *points = NULL;
	uint32_t subsets = 1, subset = UINT32_MAX;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned jobs = ncpu > 0 ? (unsigned)ncpu : 1;
	bool quiet = false;
	int progress = -1; /* -1 auto, 0 off, 1 on */
	struct crash_progress pr = {.out = stderr};
	size_t n, bad;
	int c, rc;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			g_free(user_opts);
			user_opts = g_strdup(optarg);
			break;
		case 'w':
			p.workload = optarg;
			break;
		case 's':
			if (parse_u64(optarg, &p.seed))
				goto bad_value;
			break;
		case 'p':
			if (parse_u64(optarg, &point))
				goto bad_value;
			break;
		case 'P':
			spec = optarg;
			if (strcmp(spec, "all") != 0 &&
			    (!g_str_has_prefix(spec, "sample:") ||
			     parse_u64(spec + 7, &v) || v == 0))
				goto bad_value;
			break;
		case 'm':
			if (sfs_crash_mode_parse(optarg, &p.mode))
				goto bad_value;
			break;
		case 'k':
			if (parse_u64(optarg, &v) || v == 0 || v > 1000)
				goto bad_value;
			subsets = (uint32_t)v;
			break;
		case 'K':
			if (parse_u64(optarg, &v) || v > 1000)
				goto bad_value;
			subset = (uint32_t)v;
			break;
		case 'j':
			if (parse_u64(optarg, &v) || v > 256)
				goto bad_value;
			jobs = (unsigned)v;
			break;
		case 'L':
			if (parse_u64(optarg, &v) || v == 0 || v > 1000000)
				goto bad_value;
			p.long_ops = (uint32_t)v;
			break;
		case 'E':
			p.run_to_end = true;
			break;
		case 'T':
			p.trace = stdout;
			break;
		case 'R':
			if (!sfs_crash_promise_of(optarg))
				goto bad_value;
			p.promise = optarg;
			break;
		case 'e':
			p.keep_failed = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'G':
			progress = 1;
			break;
		case 'N':
			progress = 0;
			break;
		case 'h':
			crash_usage(stdout);
			g_free(user_opts);
			return 0;
		default:
			fprintf(stderr,
				"simfs crash: %s '%s' (see simfs crash "
				"--help)\n",
				c == ':' ? "option needs a value"
					 : "unknown option",
				argv[optind - 1]);
			g_free(user_opts);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "simfs crash: need exactly one IMAGE (see "
				"simfs crash --help)\n");
		g_free(user_opts);
		return 2;
	}
	p.image = argv[optind];
	char *opts =
	    g_strdup_printf(CRASH_CLI_OPTS "%s%s", user_opts ? "," : "",
			    user_opts ? user_opts : "");
	g_free(user_opts);
	p.opts = opts;
	{
		struct sfs_config cfg;
		char msg[256];

		if (parse_opts(opts, &cfg, msg, sizeof(msg))) {
			fprintf(stderr, "simfs crash: %s\n", msg);
			g_free(opts);
			return 2;
		}
		if (sfs_parse_only()) {
			g_free(opts);
			return 0;
		}
		const char *mode = effective_mode(&cfg, p.image);

		if (!p.promise && !sfs_crash_promise_of(mode)) {
			fprintf(stderr,
				"simfs crash: no promise known for "
				"data=%s\n",
				mode);
			g_free(opts);
			return 2;
		}
	}
	if (!g_file_test(p.image, G_FILE_TEST_IS_REGULAR)) {
		fprintf(stderr, "simfs crash: %s: not an image file\n",
			p.image);
		g_free(opts);
		return 2;
	}
	rc = sfs_crash_plan(&p, &plan, &err);
	if (rc) {
		fprintf(stderr, "simfs crash: %s\n",
			err ? err : "dry run failed");
		g_free(err);
		g_free(opts);
		return 2;
	}
	if (point != UINT64_MAX) {
		points = g_new(uint64_t, 1);
		points[0] = point;
		n = 1;
	} else {
		n = sfs_crash_points(&plan, &p, spec, &points);
	}
	if (subset != UINT32_MAX && point == UINT64_MAX) {
		fprintf(stderr, "simfs crash: --subset needs --point\n");
		g_free(points);
		sfs_crash_plan_free(&plan);
		g_free(opts);
		return 2;
	}
	if (!quiet)
		printf("simfs crash: %s, workload %s (%u ops, %u durable), "
		       "%llu requests after setup; %zu point(s) x %u, mode "
		       "%s, seed %llu\n",
		       opts, p.workload, plan.n_ops, plan.n_durable,
		       (unsigned long long)plan.total_reqs, n, subsets,
		       sfs_crash_mode_name(p.mode), (unsigned long long)p.seed);
	p.keep_all = p.keep_failed && n == 1;
	if (p.trace)
		jobs = 0; /* in order, in this process */
	pr.tty = isatty(STDERR_FILENO) == 1;
	if (progress < 0)
		progress = pr.tty && !quiet && !p.trace;
	if (progress) {
		fflush(stdout); /* the first line before the progress */
		p.progress = crash_progress_cb;
		p.progress_arg = &pr;
	}
	if (subset != UINT32_MAX) {
		res = g_new0(struct sfs_crash_result, 1);
		rc = sfs_crash_check_point(&p, points[0], subset, res);
		if (rc && !res->violated)
			res->violated = true;
		bad = res->violated;
		subsets = 1;
	} else {
		res = g_new0(struct sfs_crash_result, n * subsets);
		bad = sfs_crash_sweep(&p, points, n, subsets, jobs, res);
	}
	if (!quiet)
		sfs_crash_print_header(stdout);
	for (size_t i = 0; i < n * subsets; i++) {
		if (!quiet || res[i].violated)
			sfs_crash_print_row(stdout, &res[i]);
		if (res[i].violated) {
			char *r = sfs_crash_repro(&p, &res[i]);

			printf("        reproduce: %s (device seed %llu)\n", r,
			       (unsigned long long)res[i].dev_seed);
			g_free(r);
		}
	}
	sfs_crash_summarize(res, n * subsets, &sum);
	sfs_crash_print_summary(stdout, &p, &sum);
	g_free(res);
	g_free(points);
	sfs_crash_plan_free(&plan);
	g_free(opts);
	return bad ? 1 : 0;

bad_value:
	fprintf(stderr, "simfs crash: bad value '%s' for %s\n", optarg,
		argv[optind - 1]);
	g_free(user_opts);
	return 2;
}
