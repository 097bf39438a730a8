/*
 * crash_model.c - the model of a crash workload (crash_priv.h): the
 * namespace under /crash and each file's block versions, advanced one op
 * at a time (crash_model_apply), and its canonical text (crash_model_canon).
 */
#include <string.h>

#include <glib.h>

#include "crash_priv.h"

uint32_t crash_u32_get(const GArray *a, uint32_t i)
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

struct model *crash_model_new(void)
{
	struct model *m = g_new0(struct model, 1);

	m->o = g_ptr_array_new_with_free_func(mobj_free);
	g_ptr_array_add(m->o, mobj_new(true, 0, CRASH_DIR));
	return m;
}

void crash_model_free(struct model *m)
{
	if (!m)
		return;
	g_ptr_array_free(m->o, TRUE);
	g_free(m);
}

struct mobj *crash_obj(const struct model *m, uint32_t id)
{
	return id < m->o->len ? g_ptr_array_index(m->o, id) : NULL;
}

/* Id of entry name in dir, or UINT32_MAX. */
uint32_t crash_model_lookup(const struct model *m, uint32_t dir,
			    const char *name)
{
	struct mobj *d = crash_obj(m, dir);
	gpointer v;

	if (!d || !d->dir || !d->live)
		return UINT32_MAX;
	v = g_hash_table_lookup(d->ents, name);
	return v ? GPOINTER_TO_UINT(v) - 1 : UINT32_MAX;
}

static void ent_add(struct model *m, uint32_t dir, const char *name,
		    uint32_t id)
{
	g_hash_table_insert(crash_obj(m, dir)->ents, g_strdup(name),
			    GUINT_TO_POINTER(id + 1));
}

void crash_floor_take(struct mobj *o)
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
void crash_model_apply(struct model *m, const struct wop *op, bool durable)
{
	struct mobj *o, *t;
	uint32_t id, tid;

	switch (op->kind) {
	case W_CREATE:
	case W_MKDIR:
		if (op->id != m->o->len || !crash_obj(m, op->a))
			return;
		o = mobj_new(op->kind == W_MKDIR, op->a, op->name);
		o->ino = op->ino;
		o->gen = op->gen;
		g_ptr_array_add(m->o, o);
		ent_add(m, op->a, op->name, op->id);
		if (o->dir)
			crash_obj(m, op->a)->nsub++;
		break;
	case W_WRITE:
		o = crash_obj(m, op->a);
		if (!o || o->dir)
			return;
		for (uint32_t i = 0; i < op->n; i++) {
			uint32_t v = crash_u32_get(o->maxver, op->blk + i) + 1;

			u32_set(o->maxver, op->blk + i, v);
			u32_set(o->ver, op->blk + i, v);
		}
		o->nblk = MAX(o->nblk, op->blk + op->n);
		break;
	case W_TRUNC:
		o = crash_obj(m, op->a);
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
		id = crash_model_lookup(m, op->a, op->name);
		o = crash_obj(m, id);
		if (!o || !crash_obj(m, op->c))
			return;
		tid = crash_model_lookup(m, op->c, op->name2);
		if (tid == id)
			return;
		t = crash_obj(m, tid);
		if (t) {
			t->live = false;
			if (t->dir)
				crash_obj(m, op->c)->nsub--;
		}
		g_hash_table_remove(crash_obj(m, op->a)->ents, op->name);
		ent_add(m, op->c, op->name2, id);
		o->parent = op->c;
		g_strlcpy(o->name, op->name2, sizeof(o->name));
		if (o->dir && op->a != op->c) {
			crash_obj(m, op->a)->nsub--;
			crash_obj(m, op->c)->nsub++;
		}
		break;
	case W_UNLINK:
	case W_RMDIR:
		o = crash_obj(m, crash_model_lookup(m, op->a, op->name));
		if (!o)
			return;
		o->live = false;
		if (o->dir)
			crash_obj(m, op->a)->nsub--;
		g_hash_table_remove(crash_obj(m, op->a)->ents, op->name);
		break;
	case W_FSYNC:
		if (durable && (o = crash_obj(m, op->a)))
			crash_floor_take(o);
		break;
	case W_SYNC:
	case W_UNMOUNT:
		for (guint i = 0; durable && i < m->o->len; i++)
			crash_floor_take(crash_obj(m, i));
		break;
	}
}

static const char *const wop_names[] = {
    "create", "mkdir", "write", "trunc",   "rename", "unlink",
    "rmdir",  "fsync", "sync",	"unmount", "open",   "close",
};

void crash_wop_desc(const struct wop *op, char *buf, size_t len)
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

/* The namespace under /crash as sorted lines (see crash_tree_ns_canon). */
static int strcmp_p(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sort the lines, join them with newlines; frees l. */
char *crash_join_sorted(GPtrArray *l)
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
char *crash_model_canon(const struct model *m, uint32_t bs, bool sizes)
{
	GPtrArray *l = g_ptr_array_new_with_free_func(g_free);

	for (guint i = 0; i < m->o->len; i++) {
		const struct mobj *o = crash_obj(m, i);

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
				      "%u/%s %c %u %llu %u", o->parent, o->name,
				      o->dir ? 'd' : 'f', i,
				      o->dir ? 0ULL
					     : (unsigned long long)o->nblk * bs,
				      o->dir ? 2 + o->nsub : 1)
				: g_strdup_printf("%u/%s f %u - 1", o->parent,
						  o->name, i));
	}
	return crash_join_sorted(l);
}
