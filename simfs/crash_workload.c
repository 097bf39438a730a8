/*
 * crash_workload.c - the scripted workloads (wl_*) and their registry
 * (crash_priv.h), written against helpers (w_*) that issue an op to the
 * engine, note the crash device's request count around it and apply it
 * to the model.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include <glib.h>

#include "crash_priv.h"

static int w_engine(struct wctx *w, struct wop *op)
{
	struct sfs_fs *fs = w->fs;
	struct mobj *o = crash_obj(w->m, op->a), *c;
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
			crash_cb_fill(w->buf + (size_t)i * w->bs, w->bs, op->a,
				      op->blk + i,
				      crash_u32_get(o->maxver, op->blk + i) +
					  1);
		return sfs_write(fs, o->ino, (uint64_t)op->blk * w->bs, w->buf,
				 (size_t)op->n * w->bs, &done);
	case W_TRUNC:
		memset(&at, 0, sizeof(at));
		at.size = (uint64_t)op->n * w->bs;
		return sfs_setattr(fs, o->ino, &at, SFS_SET_SIZE, &at);
	case W_RENAME:
		c = crash_obj(w->m, op->c);
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
int crash_w_issue(struct wctx *w, struct wop *op)
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

		crash_wop_desc(op, d, sizeof(d));
		g_snprintf(w->err, sizeof(w->err), "%s op %u (%s) failed: %s",
			   w->setup ? "setup" : "workload", w->ops->len + 1, d,
			   g_strerror(-op->rc));
	}
	crash_model_apply(w->m, op, false);
	g_array_append_val(w->ops, *op);
	if (cut && !w->run_to_end)
		w->stop = true;
	return op->rc;
}

static uint32_t w_new(struct wctx *w, enum wop_kind k, uint32_t dir,
		      const char *name)
{
	struct wop op = {.kind = (uint8_t)k, .a = dir};

	g_strlcpy(op.name, name, sizeof(op.name));
	crash_w_issue(w, &op);
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

	crash_w_issue(w, &op);
}

static void w_trunc(struct wctx *w, uint32_t id, uint32_t nblk)
{
	struct wop op = {.kind = W_TRUNC, .a = id, .n = nblk};

	crash_w_issue(w, &op);
}

static void w_rename(struct wctx *w, uint32_t dir, const char *name,
		     uint32_t dir2, const char *name2)
{
	struct wop op = {.kind = W_RENAME, .a = dir, .c = dir2};

	g_strlcpy(op.name, name, sizeof(op.name));
	g_strlcpy(op.name2, name2, sizeof(op.name2));
	crash_w_issue(w, &op);
}

static void w_remove(struct wctx *w, enum wop_kind k, uint32_t dir,
		     const char *name)
{
	struct wop op = {.kind = (uint8_t)k, .a = dir};

	g_strlcpy(op.name, name, sizeof(op.name));
	crash_w_issue(w, &op);
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

	crash_w_issue(w, &op);
}

static void w_open(struct wctx *w, uint32_t id, bool open)
{
	struct wop op = {.kind = open ? W_OPEN : W_CLOSE, .a = id};

	crash_w_issue(w, &op);
}

static void w_sync(struct wctx *w)
{
	struct wop op = {.kind = W_SYNC};

	crash_w_issue(w, &op);
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
	uint32_t f = crash_model_lookup(w->m, 0, "log");

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
	uint32_t o0 = crash_model_lookup(w->m, 0, "o0");
	uint32_t o1 = crash_model_lookup(w->m, 0, "o1");
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
	uint32_t t0 = crash_model_lookup(w->m, 0, "t0");
	uint32_t t1 = crash_model_lookup(w->m, 0, "t1");
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
	uint32_t m0 = crash_model_lookup(w->m, 0, "m0");
	uint32_t k = crash_model_lookup(w->m, 0, "keep");
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
		const struct mobj *o = crash_obj(m, i);

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
		y = crash_obj(m, y)->parent;
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
		struct mobj *fo = files->len ? crash_obj(w->m, f) : NULL;

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
			struct mobj *to = crash_obj(w->m, t);

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
			struct mobj *dd = crash_obj(w->m, d);

			if (d != 0 && g_hash_table_size(dd->ents) == 0)
				w_rmdir(w, dd->parent, dd->name);
		} else if (r < 75) {
			uint32_t d = pick(w, dirs), to = pick(w, dirs);
			struct mobj *dd = crash_obj(w->m, d);

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

const struct workload *crash_workload_find(const char *name)
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
	const struct workload *wl = crash_workload_find(name);

	return wl ? wl->help : NULL;
}
