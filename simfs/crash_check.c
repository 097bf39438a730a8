/*
 * crash_check.c - the check of one crash point (crash.h,
 * sfs_crash_check_point): crash, recover twice, compare, and hold the
 * model's states against what the data= mode promises.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "crash_priv.h"

const struct sfs_jnl_promise *sfs_crash_promise_of(const char *mode)
{
	return sfs_jnl_promise(sfs_jnl_find(mode));
}

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

/*
 * Two canonical texts (one line per object) that should be equal are not:
 * the violation names the first line of each missing from the other, cut
 * to width bytes.
 */
static void viol_differ(struct sfs_crash_result *r, const char *what,
			const char *x_name, const char *x, const char *y_name,
			const char *y, size_t width)
{
	char a[160], b[160];

	crash_first_missing(x, y, a, MIN(width, sizeof(a)));
	crash_first_missing(y, x, b, MIN(width, sizeof(b)));
	viol(r, "%s: %s has [%s], %s has [%s]", what, x_name, a, y_name, b);
}

uint64_t sfs_crash_dev_seed(uint64_t seed, uint64_t point, uint32_t subset)
{
	return crash_cb_mix(
	    seed ^ crash_cb_mix(point * 0x9E3779B97F4A7C15ULL + subset));
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
	const struct sfs_jnl_promise *pr;
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
	const struct sfs_jnl_promise *pr = c->pr;
	const GArray *E = eset_get(es, id, idx);
	uint32_t fl = crash_u32_get(o->floor, idx);
	uint32_t maxv = crash_u32_get(o->maxver, idx);
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
	const struct sfs_jnl_promise *pr = c->pr;
	struct model *m = crash_model_new();
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

		*k = crash_ig_key(crash_obj(run->m, 0)->ino,
				  crash_obj(run->m, 0)->gen);
		g_hash_table_insert(idmap, k, GUINT_TO_POINTER(1));
		crash_obj(m, 0)->ino = crash_obj(run->m, 0)->ino;
		crash_obj(m, 0)->gen = crash_obj(run->m, 0)->gen;
	}
	for (guint i = 0; i < run->ops->len; i++) {
		const struct wop *op = &g_array_index(run->ops, struct wop, i);

		if ((op->kind == W_CREATE || op->kind == W_MKDIR) && op->ino) {
			uint64_t *k = g_new(uint64_t, 1);

			*k = crash_ig_key(op->ino, op->gen);
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
		crash_model_apply(m, &g_array_index(run->ops, struct wop, i),
				  false);
	for (guint i = 0; i < m->o->len; i++)
		crash_floor_take(crash_obj(m, i));
	got = crash_tree_ns_canon(c->tr, idmap, !c->size_lags);
	/* delalloc: the largest size each file has in a matching state */
	GArray *maxsz = g_array_sized_new(FALSE, TRUE, sizeof(uint64_t), 16);
	for (uint32_t j = 0; j <= hi; j++) {
		if (j > 0) {
			const struct wop *op = &g_array_index(
			    run->ops, struct wop, run->n_setup + j - 1);

			crash_model_apply(m, op, op_durable(op, c->n_eff));
		}
		if (j < lo) /* before the last durable op: not a candidate */
			continue;
		g_free(want);
		want = crash_model_canon(m, run->bs, !c->size_lags);
		if (strcmp(want, got) != 0)
			continue;
		nmatch++;
		r->state = (int32_t)j;
		if (maxsz->len < m->o->len)
			g_array_set_size(maxsz, m->o->len);
		for (guint i = 0; i < m->o->len; i++) {
			uint64_t *mx = &g_array_index(maxsz, uint64_t, i);
			uint64_t sz = (uint64_t)crash_obj(m, i)->nblk * run->bs;

			if (crash_obj(m, i)->live && sz > *mx)
				*mx = sz;
		}
		for (guint i = 0; i < m->o->len; i++) {
			const struct mobj *o = crash_obj(m, i);

			if (!o->live || o->dir)
				continue;
			for (uint32_t b = 0; b < o->nblk; b++)
				eset_add(&es, i, b, crash_u32_get(o->ver, b));
		}
	}
	if (!nmatch) {
		r->state = -1;
		if (pr->journaled) {
			char what[80], st[24];

			g_snprintf(what, sizeof(what),
				   "namespace matches no state after ops "
				   "%u..%u",
				   lo, hi);
			g_snprintf(st, sizeof(st), "state %u", hi);
			viol_differ(r, what, "recovered", got, st, want, 160);
		}
	}
	/* blocks of every recovered file the model knows */
	GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
	for (guint i = 0; i < c->tr->e->len; i++) {
		const struct tent *t = c->tr->e->pdata[i];
		uint64_t k = crash_ig_key(t->ino, t->gen);
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
		o = crash_obj(m, id);
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
				 ? (unsigned long long)g_array_index(
				       maxsz, uint64_t, id)
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
			if (crash_u32_get(o->floor, b))
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
		const struct mobj *o = crash_obj(m, i);
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
	crash_model_free(m);
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

int crash_workdir_make(const struct sfs_crash_params *p, const char *name,
		       char **dir_out, char *err, size_t errlen)
{
	char *wd = p->workdir ? g_strdup(p->workdir) : default_workdir();
	char *dir = g_build_filename(wd, name, NULL);
	int rc;

	g_free(wd);
	if (!g_mkdtemp(dir)) {
		rc = -errno;
		g_snprintf(err, errlen, "cannot make %s: %s", dir,
			   g_strerror(errno));
		g_free(dir);
		return rc;
	}
	*dir_out = dir;
	return 0;
}

void crash_rm_dir(const char *dir, const char *const *files)
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
	const struct sfs_jnl_promise *pr;
	struct sfs_config cfg;
	struct run run = {0};
	struct tree t_sim = {0}, t_fsck = {0};
	char *dir, *crashed = NULL, *fixed = NULL, *text = NULL;
	char msg[256];
	int rc, ex;

	memset(r, 0, sizeof(*r));
	r->point = point;
	r->subset = subset;
	r->dev_seed = sfs_crash_dev_seed(p->seed, point, subset);
	r->state = r->lo_state = -1;
	r->same_tree = -1;
	r->fsck_y = -1;
	rc = crash_parse_opts(p->opts, &cfg, r->why, sizeof(r->why));
	if (rc)
		return rc;
	const struct sfs_jnl_ops *pol = crash_mount_policy(&cfg, p->image);
	const struct sfs_jnl_promise *own = sfs_jnl_promise(pol);

	pr = p->promise ? sfs_crash_promise_of(p->promise) : own;
	if (!pr) {
		g_snprintf(r->why, sizeof(r->why),
			   "no promise known for data=%s",
			   p->promise ? p->promise
			   : pol      ? pol->name
				      : cfg.journal);
		return -EINVAL;
	}
	rc = crash_workdir_make(p, "simfs-crash-XXXXXX", &dir, r->why,
				sizeof(r->why));
	if (rc)
		return rc;
	crashed = g_build_filename(dir, files[0], NULL);
	fixed = g_build_filename(dir, files[1], NULL);
	rc = crash_copy_image(p->image, crashed);
	if (rc) {
		g_snprintf(r->why, sizeof(r->why), "cannot copy %s: %s",
			   p->image, g_strerror(-rc));
		goto out;
	}

	/* the run, cut at point */
	rc = crash_run_workload(p, crashed, false, point, r->dev_seed, &run);
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
			crash_wop_desc(op, r->op_desc, sizeof(r->op_desc));
		}
	}
	if (run.err[0]) {
		viol(r, "%s", run.err);
		goto out;
	}

	/* e2fsck's view of the crashed image, then its own repair */
	r->needs_recovery = crash_image_needs_recovery(crashed);
	r->marked_clean = crash_image_marked_clean(crashed);
	rc = crash_run_e2fsck("-fn", crashed, &ex, &r->crashed_clean, &text);
	if (rc == -ENOENT) {
		g_strlcpy(r->why, "e2fsck not found", sizeof(r->why));
		goto out;
	}
	/* every policy: an image that says it is clean is */
	if (r->marked_clean && !r->crashed_clean) {
		crash_fsck_gist(text, msg, sizeof(msg));
		viol(r, "marked clean but e2fsck -fn is not: %s", msg);
	}
	g_free(text);
	text = NULL;
	rc = crash_copy_image(crashed, fixed);
	if (rc) {
		g_snprintf(r->why, sizeof(r->why), "cannot copy %s: %s",
			   crashed, g_strerror(-rc));
		goto out;
	}
	crash_run_e2fsck("-fy", fixed, &r->fsck_y, NULL, &text);
	if (r->fsck_y != 0 && r->fsck_y != 1) {
		crash_fsck_gist(text, msg, sizeof(msg));
		viol(r, "e2fsck -fy exited %d: %s", r->fsck_y, msg);
	}
	g_free(text);
	crash_run_e2fsck("-fn", fixed, &ex, &r->repaired_clean, &text);
	if (!r->repaired_clean) {
		crash_fsck_gist(text, msg, sizeof(msg));
		viol(r, "e2fsck -fn after e2fsck -fy not clean: %s", msg);
	}
	g_free(text);
	text = NULL;

	/* simfs's recovery on the original */
	if (pr->journaled || r->crashed_clean) {
		r->recover_rc =
		    crash_simfs_recover(crashed, &cfg, msg, sizeof(msg));
		if (r->recover_rc)
			viol(r, "simfs recovery failed: %s", msg);
		crash_run_e2fsck("-fn", crashed, &ex, &r->recovered_clean,
				 &text);
		if (!r->recovered_clean) {
			crash_fsck_gist(text, msg, sizeof(msg));
			viol(r, "e2fsck -fn after simfs recovery: %s", msg);
		}
		g_free(text);
		text = NULL;
	} else {
		/* ext2 damaged: simfs must refuse or cope, never crash */
		r->recover_rc =
		    crash_simfs_recover(crashed, &cfg, msg, sizeof(msg));
	}

	/* the trees */
	rc = crash_tree_load(fixed, &cfg, &t_fsck, msg, sizeof(msg));
	if (rc)
		viol(r, "after e2fsck -fy: %s", msg);
	if (pr->journaled || r->crashed_clean) {
		rc = crash_tree_load(crashed, &cfg, &t_sim, msg, sizeof(msg));
		if (rc)
			viol(r, "after simfs recovery: %s", msg);
	}
	if (t_sim.e && t_fsck.e && t_sim.e->len + t_fsck.e->len > 0) {
		char *a = crash_tree_canon(&t_sim),
		     *b = crash_tree_canon(&t_fsck);

		r->same_tree = strcmp(a, b) == 0;
		if (!r->same_tree)
			viol_differ(r, "simfs and e2fsck recoveries differ",
				    "simfs", a, "e2fsck", b, 150);
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
		    .size_lags = cfg.delalloc && !(own && own->size_exact),
		};
		/* metadata not journaled (ext2): the model check is
		 * information only */
		static const struct sfs_jnl_promise nothing;

		if (!pr->journaled)
			mc.pr = &nothing;
		check_model(&mc);
	}
	rc = 0;
out:
	crash_tree_free(&t_sim);
	crash_tree_free(&t_fsck);
	crash_run_free(&run);
	if (!((r->violated && p->keep_failed) || p->keep_all)) {
		crash_rm_dir(dir, files);
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
