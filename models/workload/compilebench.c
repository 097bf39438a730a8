/*
 * compilebench.c - Chris Mason's compilebench as a `simfs run` workload
 * (workload.h): kernel-like source trees created, patched, "compiled",
 * cleaned, read, stat()ed and deleted, one client.
 *
 *   compilebench,initial=3,create=1,patch=1,compile=1,clean=1,read=1,
 *                read_compiled=1,delete=1,stat=1,tree_files=2600
 *
 * compilebench replays listings of a real kernel tree; here init makes
 * one seeded synthetic listing of tree_files files in tree_dirs
 * directories (sizes drawn from a kernel-like table, mean about 11 KiB),
 * a patch of it (a tenth of the files rewritten, 1% added, 0.5% removed)
 * and its objects (an .o of about the source's size per .c file).  Every
 * tree follows those three listings, so a tree's files are fixed by its
 * state: unpatched -> (patch) patched -> (compile) compiled -> (clean)
 * patched.  init plans every run in order: with native, native-0 is
 * created, patched and compiled first (compilebench's reference tree);
 * then initial= trees kernel-0.. are created; then create=, patch=,
 * compile=, clean=, read=, read_compiled=, delete=, stat= runs, each on
 * a seeded pick among the trees in the state it needs (a plan that runs
 * out of such trees is refused in init).  Each run is a phase of its
 * own ("patch 1"); next() expands a run one directory at a time into a
 * small queue of ops.
 *
 * Invariants: a run only touches files its tree's state says exist, so
 * every op expects 0; a run's megabytes (what the report divides by its
 * time) are fixed by the plan: bytes written by create, patch and
 * compile, bytes read by patch and the reads, object bytes removed by
 * clean.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "workload.h"

#define CB_MAX_FILES 1000000u
#define CB_MAX_RUNS 1000u
#define CB_MAX_DEPTH 10	 /* directories below a tree's root */
#define CB_IO (1u << 20) /* bytes per read/write call */
#define CB_PATH 320

enum {
	CP_INITIAL,
	CP_CREATE,
	CP_PATCH,
	CP_COMPILE,
	CP_CLEAN,
	CP_READ,
	CP_READ_COMPILED,
	CP_DELETE,
	CP_STAT,
	CP_NATIVE,
	CP_TREE_FILES,
	CP_TREE_DIRS,
	CP_SEED,
};

/* Entry flags of the listing. */
#define CB_IN_BASE 0x1	  /* in the unpatched tree */
#define CB_IN_PATCHED 0x2 /* in the patched tree */
#define CB_MODIFIED 0x4	  /* in both, rewritten by the patch */

enum cb_ext { CB_C, CB_H, CB_S, CB_TXT };
static const char *const cb_ext_name[] = {".c", ".h", ".S", ".txt"};

struct cb_entry {
	uint32_t dir;
	uint32_t num; /* name: "f<num><ext>" */
	uint8_t ext;
	uint8_t flags;
	uint32_t base_size, patched_size, o_size; /* bytes */
};

enum cb_tstate { T_NONE, T_UNPATCHED, T_PATCHED, T_COMPILED, T_DELETED };

enum cb_kind {
	RK_NATIVE_CREATE,
	RK_NATIVE_PATCH,
	RK_NATIVE_COMPILE,
	RK_INITIAL,
	RK_CREATE,
	RK_PATCH,
	RK_COMPILE,
	RK_CLEAN,
	RK_READ,
	RK_READ_COMPILED,
	RK_DELETE,
	RK_STAT,
	RK_NKINDS
};

/* compilebench's summary names, for the kinds that have one. */
static const char *const cb_kind_name[RK_NKINDS] = {
    [RK_NATIVE_CREATE] = "native unpatched",
    [RK_NATIVE_PATCH] = "native patched",
    [RK_NATIVE_COMPILE] = "native patched compiled",
    [RK_INITIAL] = "intial create",
    [RK_CREATE] = "create",
    [RK_PATCH] = "patch",
    [RK_COMPILE] = "compile",
    [RK_CLEAN] = "clean",
    [RK_READ] = "read tree",
    [RK_READ_COMPILED] = "read compiled tree",
    [RK_DELETE] = "delete tree",
    [RK_STAT] = "stat tree",
};

struct cb_run {
	enum cb_kind kind;
	unsigned tree;	   /* index into the trees (0 = native-0 with native) */
	enum cb_tstate st; /* the tree's state when the run starts */
	uint64_t bytes;	   /* the run's megabytes, in bytes */
	char phase[48];	   /* "patch 1" */
};

struct cb_qop {
	struct sfs_wop op;
	char path[CB_PATH];
	char path2[CB_PATH];
};

struct cb_state {
	/* the listing */
	uint32_t ndirs;
	uint32_t *parent; /* ndirs; parent[0] = 0 (the root) */
	uint32_t *dstart; /* ndirs + 1: entries of dir d are dstart[d].. */
	struct cb_entry *ent;
	uint32_t nent;
	/* the plan */
	bool native;
	unsigned initial;
	unsigned ntrees;
	struct cb_run *runs;
	unsigned nruns;
	/* the cursor */
	unsigned ri;	/* run */
	uint32_t ui;	/* directory unit within the run */
	bool run_begun; /* the run's first op went out */
	struct cb_qop *q;
	size_t qn, qcap, qhead;
};

/* Size classes (upper bound 2^k bytes) and weights per mille: a kernel
 * tree's mix of small headers and larger sources, mean about 11 KiB. */
static const struct {
	unsigned shift;
	unsigned permille;
} cb_sizes[] = {
    {9, 40},   {10, 80},  {11, 130}, {12, 180}, {13, 210},
    {14, 180}, {15, 110}, {16, 50},  {17, 17},	{18, 3},
};

static uint32_t cb_draw_size(struct sfs_wl_rng *r)
{
	unsigned x = (unsigned)sfs_wl_rng_below(r, 1000), acc = 0;

	for (unsigned i = 0; i < G_N_ELEMENTS(cb_sizes); i++) {
		acc += cb_sizes[i].permille;
		if (x < acc) {
			uint32_t lo = 1u << (cb_sizes[i].shift - 1);
			return lo + (uint32_t)sfs_wl_rng_below(r, lo);
		}
	}
	return 4096;
}

static int cb_entry_cmp(const void *a, const void *b)
{
	const struct cb_entry *x = a, *y = b;

	if (x->dir != y->dir)
		return x->dir < y->dir ? -1 : 1;
	return x->num < y->num ? -1 : x->num > y->num;
}

/* The synthetic listing: dirs, files, the patch and the objects. */
static int cb_make_listing(struct cb_state *s, uint32_t nfiles, uint32_t ndirs,
			   uint64_t seed)
{
	struct sfs_wl_rng r;
	uint8_t *depth;
	uint32_t nnew = nfiles / 100;

	s->ndirs = ndirs;
	s->nent = nfiles + nnew;
	s->parent = g_try_new(uint32_t, ndirs);
	s->dstart = g_try_new0(uint32_t, (gsize)ndirs + 1);
	s->ent = g_try_new0(struct cb_entry, s->nent);
	depth = g_try_new0(uint8_t, ndirs);
	if (!s->parent || !s->dstart || !s->ent || !depth) {
		g_free(depth);
		return -ENOMEM;
	}
	sfs_wl_rng_seed(&r, seed ^ 0xc0111eb3ULL);
	s->parent[0] = 0;
	for (uint32_t d = 1; d < ndirs; d++) {
		uint32_t p = (uint32_t)sfs_wl_rng_below(&r, d);
		while (depth[p] >= CB_MAX_DEPTH - 1)
			p = s->parent[p];
		s->parent[d] = p;
		depth[d] = (uint8_t)(depth[p] + 1);
	}
	g_free(depth);
	for (uint32_t i = 0; i < s->nent; i++) {
		struct cb_entry *e = &s->ent[i];
		unsigned x = (unsigned)sfs_wl_rng_below(&r, 100);

		e->dir = (uint32_t)sfs_wl_rng_below(&r, ndirs);
		e->num = i;
		e->ext = x < 55 ? CB_C : x < 85 ? CB_H : x < 90 ? CB_S : CB_TXT;
		e->base_size = e->patched_size = cb_draw_size(&r);
		e->o_size = (uint32_t)((uint64_t)e->base_size *
				       (50 + sfs_wl_rng_below(&r, 101)) / 100);
		if (i >= nfiles) { /* added by the patch */
			e->flags = CB_IN_PATCHED;
			e->base_size = 0;
			continue;
		}
		e->flags = CB_IN_BASE | CB_IN_PATCHED;
		x = (unsigned)sfs_wl_rng_below(&r, 1000);
		if (x < 5) { /* removed by the patch */
			e->flags = CB_IN_BASE;
		} else if (x < 105) { /* rewritten: -10% .. +15% */
			e->flags |= CB_MODIFIED;
			e->patched_size =
			    (uint32_t)((uint64_t)e->base_size *
				       (90 + sfs_wl_rng_below(&r, 26)) / 100);
		}
	}
	qsort(s->ent, s->nent, sizeof(*s->ent), cb_entry_cmp);
	for (uint32_t i = 0, d = 0; d <= ndirs; d++) {
		while (i < s->nent && s->ent[i].dir < d)
			i++;
		s->dstart[d] = i;
	}
	return 0;
}

static bool cb_exists(const struct cb_entry *e, enum cb_tstate st)
{
	return st == T_UNPATCHED ? (e->flags & CB_IN_BASE)
				 : (e->flags & CB_IN_PATCHED);
}

static uint32_t cb_size(const struct cb_entry *e, enum cb_tstate st)
{
	return st == T_UNPATCHED ? e->base_size : e->patched_size;
}

static bool cb_has_o(const struct cb_entry *e, enum cb_tstate st)
{
	return st == T_COMPILED && (e->flags & CB_IN_PATCHED) && e->ext == CB_C;
}

/* The megabytes compilebench counts for a run of kind k on state st. */
static uint64_t cb_run_bytes(const struct cb_state *s, enum cb_kind k,
			     enum cb_tstate st)
{
	uint64_t b = 0;

	for (uint32_t i = 0; i < s->nent; i++) {
		const struct cb_entry *e = &s->ent[i];
		switch (k) {
		case RK_NATIVE_CREATE:
		case RK_INITIAL:
		case RK_CREATE:
			if (e->flags & CB_IN_BASE)
				b += e->base_size;
			break;
		case RK_NATIVE_PATCH:
		case RK_PATCH:
			if (e->flags & CB_MODIFIED)
				b += (uint64_t)e->base_size + e->patched_size;
			else if (!(e->flags & CB_IN_BASE))
				b += e->patched_size;
			break;
		case RK_NATIVE_COMPILE:
		case RK_COMPILE:
		case RK_CLEAN:
			if (cb_has_o(e, T_COMPILED))
				b += e->o_size;
			break;
		case RK_READ:
		case RK_READ_COMPILED:
			if (cb_exists(e, st))
				b += cb_size(e, st);
			if (cb_has_o(e, st))
				b += e->o_size;
			break;
		default:
			break;
		}
	}
	return b;
}

static bool cb_eligible(const struct cb_state *s, enum cb_kind k, unsigned t,
			enum cb_tstate st)
{
	bool kernel = !(s->native && t == 0);

	switch (k) {
	case RK_PATCH:
		return kernel && st == T_UNPATCHED;
	case RK_COMPILE:
		return kernel && st == T_PATCHED;
	case RK_CLEAN:
		return kernel && st == T_COMPILED;
	case RK_READ_COMPILED:
		return st == T_COMPILED;
	case RK_READ:
	case RK_DELETE:
	case RK_STAT:
		return kernel && (st == T_UNPATCHED || st == T_PATCHED);
	default:
		return false;
	}
}

static const char *const cb_need[RK_NKINDS] = {
    [RK_PATCH] = "an unpatched tree",
    [RK_COMPILE] = "a patched tree (patch= before it)",
    [RK_CLEAN] = "a compiled tree (compile= before it)",
    [RK_READ] = "a tree that is not compiled",
    [RK_READ_COMPILED] = "a compiled tree (native=yes or more compile= "
			 "than clean=)",
    [RK_DELETE] = "a tree that is not compiled",
    [RK_STAT] = "a tree that is not compiled",
};

static int cb_plan(struct cb_state *s, const struct sfs_wl_value *v,
		   uint64_t seed, char **err)
{
	static const struct {
		enum cb_kind kind;
		unsigned param;
	} order[] = {
	    {RK_PATCH, CP_PATCH},
	    {RK_COMPILE, CP_COMPILE},
	    {RK_CLEAN, CP_CLEAN},
	    {RK_READ, CP_READ},
	    {RK_READ_COMPILED, CP_READ_COMPILED},
	    {RK_DELETE, CP_DELETE},
	    {RK_STAT, CP_STAT},
	};
	unsigned nk = s->initial + (unsigned)v[CP_CREATE].u;
	unsigned total = (s->native ? 3 : 0) + nk;
	enum cb_tstate *tst;
	unsigned *cand;
	struct sfs_wl_rng r;

	for (unsigned i = 0; i < G_N_ELEMENTS(order); i++)
		total += (unsigned)v[order[i].param].u;
	s->ntrees = (s->native ? 1 : 0) + nk;
	s->runs = g_new0(struct cb_run, total);
	tst = g_new0(enum cb_tstate, s->ntrees);
	cand = g_new0(unsigned, s->ntrees);
	sfs_wl_rng_seed(&r, seed * 0x2545f4914f6cdd1dULL + 7);

#define CB_ADD(k, t)                                                           \
	do {                                                                   \
		struct cb_run *ru = &s->runs[s->nruns++];                      \
		ru->kind = (k);                                                \
		ru->tree = (t);                                                \
		ru->st = tst[t];                                               \
		ru->bytes = cb_run_bytes(s, (k), tst[t]);                      \
	} while (0)

	unsigned k0 = s->native ? 1 : 0;
	if (s->native) {
		CB_ADD(RK_NATIVE_CREATE, 0);
		tst[0] = T_UNPATCHED;
		CB_ADD(RK_NATIVE_PATCH, 0);
		tst[0] = T_PATCHED;
		CB_ADD(RK_NATIVE_COMPILE, 0);
		tst[0] = T_COMPILED;
	}
	for (unsigned i = 0; i < nk; i++) {
		CB_ADD(i < s->initial ? RK_INITIAL : RK_CREATE, k0 + i);
		tst[k0 + i] = T_UNPATCHED;
	}
	for (unsigned i = 0; i < G_N_ELEMENTS(order); i++) {
		enum cb_kind k = order[i].kind;
		for (unsigned n = 0; n < v[order[i].param].u; n++) {
			unsigned nc = 0;
			for (unsigned t = 0; t < s->ntrees; t++)
				if (cb_eligible(s, k, t, tst[t]))
					cand[nc++] = t;
			if (!nc) {
				*err = g_strdup_printf(
				    "%s run %u finds no tree to work on: it "
				    "needs %s",
				    cb_kind_name[k], n + 1, cb_need[k]);
				g_free(tst);
				g_free(cand);
				return -EINVAL;
			}
			unsigned t = cand[sfs_wl_rng_below(&r, nc)];
			CB_ADD(k, t);
			if (k == RK_PATCH || k == RK_CLEAN)
				tst[t] = T_PATCHED;
			else if (k == RK_COMPILE)
				tst[t] = T_COMPILED;
			else if (k == RK_DELETE)
				tst[t] = T_DELETED;
		}
	}
#undef CB_ADD
	/* phase names: "patch 1", ... numbered per kind */
	unsigned seen[RK_NKINDS] = {0};
	for (unsigned i = 0; i < s->nruns; i++) {
		struct cb_run *ru = &s->runs[i];
		g_snprintf(ru->phase, sizeof(ru->phase), "%s %u",
			   cb_kind_name[ru->kind], ++seen[ru->kind]);
	}
	g_free(tst);
	g_free(cand);
	return 0;
}

static void cb_fini(void *st)
{
	struct cb_state *s = st;

	if (!s)
		return;
	g_free(s->parent);
	g_free(s->dstart);
	g_free(s->ent);
	g_free(s->runs);
	g_free(s->q);
	g_free(s);
}

static int cb_init(const struct sfs_wl_value *v, void **st_out, char **err)
{
	struct cb_state *s;
	int rc;

	*st_out = NULL;
	for (unsigned i = CP_INITIAL; i <= CP_STAT; i++)
		if (v[i].u > CB_MAX_RUNS) {
			*err = g_strdup_printf("%" PRIu64 " runs: at most %u "
					       "of each",
					       v[i].u, CB_MAX_RUNS);
			return -EINVAL;
		}
	if (v[CP_TREE_FILES].u < 1 || v[CP_TREE_FILES].u > CB_MAX_FILES) {
		*err = g_strdup_printf("tree_files=%" PRIu64 ": from 1 to %u",
				       v[CP_TREE_FILES].u, CB_MAX_FILES);
		return -EINVAL;
	}
	if (v[CP_TREE_DIRS].u < 1 || v[CP_TREE_DIRS].u > v[CP_TREE_FILES].u) {
		*err = g_strdup_printf("tree_dirs=%" PRIu64 ": from 1 to "
				       "tree_files (%" PRIu64 ")",
				       v[CP_TREE_DIRS].u, v[CP_TREE_FILES].u);
		return -EINVAL;
	}
	if (!v[CP_NATIVE].u && v[CP_INITIAL].u + v[CP_CREATE].u == 0) {
		*err = g_strdup("initial=0, create=0 and native=no: no tree "
				"to work on");
		return -EINVAL;
	}

	s = g_new0(struct cb_state, 1);
	s->native = v[CP_NATIVE].u;
	s->initial = (unsigned)v[CP_INITIAL].u;
	rc = cb_make_listing(s, (uint32_t)v[CP_TREE_FILES].u,
			     (uint32_t)v[CP_TREE_DIRS].u, v[CP_SEED].u);
	if (rc) {
		*err = g_strdup("no memory for the tree listing");
		cb_fini(s);
		return rc;
	}
	rc = cb_plan(s, v, v[CP_SEED].u, err);
	if (rc) {
		cb_fini(s);
		return rc;
	}
	*st_out = s;
	return 0;
}

static void cb_tree_name(const struct cb_state *s, unsigned t, char *buf,
			 size_t sz)
{
	if (s->native && t == 0)
		g_strlcpy(buf, "native-0", sz);
	else
		g_snprintf(buf, sz, "kernel-%u", t - (s->native ? 1 : 0));
}

/* "kernel-2/d5/d17" */
static void cb_dir_path(const struct cb_state *s, unsigned t, uint32_t d,
			char *buf, size_t sz)
{
	uint32_t chain[CB_MAX_DEPTH + 1];
	unsigned n = 0;

	cb_tree_name(s, t, buf, sz);
	for (uint32_t x = d; x != 0 && n < G_N_ELEMENTS(chain);
	     x = s->parent[x])
		chain[n++] = x;
	while (n--) {
		char part[16];
		g_snprintf(part, sizeof(part), "/d%u", chain[n]);
		g_strlcat(buf, part, sz);
	}
}

static void cb_file_path(const struct cb_state *s, unsigned t,
			 const struct cb_entry *e, const char *ext, char *buf,
			 size_t sz)
{
	char leaf[32];

	cb_dir_path(s, t, e->dir, buf, sz);
	g_snprintf(leaf, sizeof(leaf), "/f%u%s", e->num, ext);
	g_strlcat(buf, leaf, sz);
}

static struct cb_qop *cb_push(struct cb_state *s, enum sfs_wop_type type)
{
	if (s->qn == s->qcap) {
		s->qcap = s->qcap ? s->qcap * 2 : 64;
		s->q = g_renew(struct cb_qop, s->q, s->qcap);
	}
	struct cb_qop *q = &s->q[s->qn++];
	memset(&q->op, 0, sizeof(q->op));
	q->path[0] = q->path2[0] = '\0';
	q->op.type = type;
	return q;
}

/* open, size bytes in CB_IO calls, close: a write or a read of a file. */
static void cb_push_file_io(struct cb_state *s, const char *path, uint64_t size,
			    bool write)
{
	struct cb_qop *q = cb_push(s, SFS_WOP_OPEN);

	g_strlcpy(q->path, path, sizeof(q->path));
	q->op.flags = write ? O_CREAT | O_WRONLY | O_TRUNC : O_RDONLY;
	q->op.mode = 0644;
	for (uint64_t off = 0; off < size; off += CB_IO) {
		q = cb_push(s, write ? SFS_WOP_WRITE : SFS_WOP_READ);
		q->op.off = off;
		q->op.len = MIN(CB_IO, size - off);
	}
	cb_push(s, SFS_WOP_CLOSE);
}

static void cb_push_path(struct cb_state *s, enum sfs_wop_type type,
			 const char *path)
{
	struct cb_qop *q = cb_push(s, type);

	g_strlcpy(q->path, path, sizeof(q->path));
	q->op.mode = 0755;
}

/* Queue the ops of run ru in directory d. */
static void cb_gen_unit(struct cb_state *s, const struct cb_run *ru, uint32_t d)
{
	char path[CB_PATH], dpath[CB_PATH];
	enum cb_tstate st = ru->st;
	unsigned t = ru->tree;

	cb_dir_path(s, t, d, dpath, sizeof(dpath));
	switch (ru->kind) {
	case RK_NATIVE_CREATE:
	case RK_INITIAL:
	case RK_CREATE:
		cb_push_path(s, SFS_WOP_MKDIR, dpath);
		break;
	case RK_READ:
	case RK_READ_COMPILED:
	case RK_STAT:
	case RK_DELETE:
		cb_push_path(s, SFS_WOP_READDIR, dpath);
		break;
	default:
		break;
	}
	for (uint32_t i = s->dstart[d]; i < s->dstart[d + 1]; i++) {
		const struct cb_entry *e = &s->ent[i];
		const char *ext = cb_ext_name[e->ext];

		cb_file_path(s, t, e, ext, path, sizeof(path));
		switch (ru->kind) {
		case RK_NATIVE_CREATE:
		case RK_INITIAL:
		case RK_CREATE:
			if (e->flags & CB_IN_BASE)
				cb_push_file_io(s, path, e->base_size, true);
			break;
		case RK_NATIVE_PATCH:
		case RK_PATCH:
			if (e->flags & CB_MODIFIED) {
				/* as patch(1): read, write a new copy, rename
				 */
				char tmp[CB_PATH];
				g_snprintf(tmp, sizeof(tmp), "%s.tmp", path);
				cb_push_file_io(s, path, e->base_size, false);
				cb_push_file_io(s, tmp, e->patched_size, true);
				struct cb_qop *q = cb_push(s, SFS_WOP_RENAME);
				g_strlcpy(q->path, tmp, sizeof(q->path));
				g_strlcpy(q->path2, path, sizeof(q->path2));
			} else if (!(e->flags & CB_IN_BASE)) {
				cb_push_file_io(s, path, e->patched_size, true);
			} else if (!(e->flags & CB_IN_PATCHED)) {
				cb_push_path(s, SFS_WOP_UNLINK, path);
			}
			break;
		case RK_NATIVE_COMPILE:
		case RK_COMPILE:
		case RK_CLEAN:
			if (!cb_has_o(e, T_COMPILED))
				break;
			cb_file_path(s, t, e, ".o", path, sizeof(path));
			if (ru->kind == RK_CLEAN)
				cb_push_path(s, SFS_WOP_UNLINK, path);
			else
				cb_push_file_io(s, path, e->o_size, true);
			break;
		case RK_READ:
		case RK_READ_COMPILED:
		case RK_STAT:
		case RK_DELETE:
			for (unsigned pass = 0; pass < 2; pass++) {
				uint64_t size = cb_size(e, st);
				if (pass == 0 && !cb_exists(e, st))
					continue;
				if (pass == 1) {
					if (!cb_has_o(e, st))
						continue;
					cb_file_path(s, t, e, ".o", path,
						     sizeof(path));
					size = e->o_size;
				}
				if (ru->kind == RK_DELETE) {
					cb_push_path(s, SFS_WOP_UNLINK, path);
					continue;
				}
				cb_push_path(s, SFS_WOP_STAT, path);
				if (ru->kind != RK_STAT)
					cb_push_file_io(s, path, size, false);
			}
			break;
		default:
			break;
		}
	}
	if (ru->kind == RK_DELETE)
		cb_push_path(s, SFS_WOP_RMDIR, dpath);
}

static int cb_next(void *st, unsigned c, sfs_ns_t now, struct sfs_wop *out,
		   char **err)
{
	struct cb_state *s = st;

	(void)c, (void)now, (void)err;
	while (s->qhead == s->qn) {
		s->qn = s->qhead = 0;
		if (s->ri >= s->nruns)
			return 0;
		if (s->ui >= s->ndirs) {
			s->ri++;
			s->ui = 0;
			s->run_begun = false;
			continue;
		}
		/* delete goes bottom up: a child's index is above its
		 * parent's, so the reverse order empties children first */
		const struct cb_run *ru = &s->runs[s->ri];
		uint32_t d =
		    ru->kind == RK_DELETE ? s->ndirs - 1 - s->ui : s->ui;
		s->ui++;
		cb_gen_unit(s, ru, d);
	}
	struct cb_qop *q = &s->q[s->qhead++];
	*out = q->op;
	out->path = q->path[0] ? q->path : NULL;
	out->path2 = q->path2[0] ? q->path2 : NULL;
	out->fd = 0;
	out->expect = 0;
	if (!s->run_begun) {
		out->phase = s->runs[s->ri].phase;
		s->run_begun = true;
	}
	return 1;
}

/* ---- the report ---- */

struct cb_sum {
	unsigned runs;
	double secs, mb, sys;
};

static void cb_report(void *st, const struct sfs_wl_result *r, FILE *out)
{
	struct cb_state *s = st;
	struct cb_sum sum[RK_NKINDS] = {{0}};
	const double mib = 1024.0 * 1024.0;

	fprintf(out,
		"using working directory (the run's root), %u intial "
		"dirs %u runs\n",
		s->initial, s->nruns - (s->native ? 3 : 0) - s->initial);
	for (unsigned i = 0; i < s->nruns; i++) {
		const struct cb_run *ru = &s->runs[i];
		const struct sfs_wl_phase *ph =
		    sfs_wl_result_phase(r, ru->phase);
		char tree[32];
		double secs, mb = (double)ru->bytes / mib;

		if (!ph)
			continue;
		secs = (double)(ph->end_ns - ph->start_ns) / 1e9;
		cb_tree_name(s, ru->tree, tree, sizeof(tree));
		struct cb_sum *x = &sum[ru->kind];
		x->runs++;
		x->secs += secs;
		x->mb += mb;
		x->sys += (double)ph->cpu_ns / 1e9;
		double rate = secs > 0 ? mb / secs : 0;
		switch (ru->kind) {
		case RK_NATIVE_CREATE:
		case RK_NATIVE_PATCH:
		case RK_NATIVE_COMPILE:
			fprintf(out,
				"%s %s %.0fMB in %.2f seconds (%.2f MB/s)\n",
				cb_kind_name[ru->kind], tree, mb, secs, rate);
			break;
		case RK_INITIAL:
		case RK_CREATE:
		case RK_PATCH:
		case RK_COMPILE:
			fprintf(out,
				"%s dir %s %.0fMB in %.2f seconds (%.2f "
				"MB/s)\n",
				ru->kind == RK_INITIAL ? "create"
						       : cb_kind_name[ru->kind],
				tree, mb, secs, rate);
			break;
		case RK_CLEAN:
			fprintf(out,
				"clean %s %.0fMB in %.2f seconds (%.2f "
				"MB/s)\n",
				tree, mb, secs, rate);
			break;
		case RK_READ:
		case RK_READ_COMPILED:
			fprintf(out, "read dir %s%s in %.2f %.2f MB/s\n", tree,
				ru->kind == RK_READ_COMPILED ? " compiled" : "",
				secs, rate);
			break;
		case RK_DELETE:
			fprintf(out, "delete %s in %.2f seconds\n", tree, secs);
			break;
		case RK_STAT:
			fprintf(out, "stat dir %s in %.2f seconds\n", tree,
				secs);
			break;
		default:
			break;
		}
	}
	fprintf(out, "\nrun complete:\n");
	fprintf(out, "================================================"
		     "==========================\n");
	for (unsigned k = RK_INITIAL; k < RK_NKINDS; k++) {
		const struct cb_sum *x = &sum[k];
		if (!x->runs)
			continue;
		if (k == RK_DELETE || k == RK_STAT)
			fprintf(out,
				"%s total runs %u avg %.2f seconds "
				"(user 0.00s sys %.2fs)\n",
				cb_kind_name[k], x->runs, x->secs / x->runs,
				x->sys / x->runs);
		else
			fprintf(out,
				"%s total runs %u avg %.2f MB/s (user "
				"0.00s sys %.2fs)\n",
				cb_kind_name[k], x->runs,
				x->secs > 0 ? x->mb / x->secs : 0.0,
				x->sys / x->runs);
	}
}

/*
 * cb_report's summary lines as metrics, one phase per kind under
 * compilebench's own summary name ("intial create" [sic], "create",
 * "patch", ..., "stat tree"): avg_mb_s (all runs' MiB over all runs'
 * seconds, as "avg X MB/s") or, for "delete tree" and "stat tree",
 * avg_seconds (the mean run time, as "avg X seconds").  Kinds with no run
 * give no row.  Not "mb_s" and "seconds": the runner writes those for
 * every run's own phase ("patch 1"), and a table of all phases would
 * mix the two.
 */
static void cb_metrics(void *st, const struct sfs_wl_result *r,
		       sfs_wl_emit_fn *emit, void *ctx)
{
	struct cb_state *s = st;
	struct cb_sum sum[RK_NKINDS] = {{0}};
	const double mib = 1024.0 * 1024.0;

	for (unsigned i = 0; i < s->nruns; i++) {
		const struct cb_run *ru = &s->runs[i];
		const struct sfs_wl_phase *ph =
		    sfs_wl_result_phase(r, ru->phase);

		if (!ph)
			continue;
		sum[ru->kind].runs++;
		sum[ru->kind].secs += (double)(ph->end_ns - ph->start_ns) / 1e9;
		sum[ru->kind].mb += (double)ru->bytes / mib;
	}
	for (unsigned k = RK_INITIAL; k < RK_NKINDS; k++) {
		const struct cb_sum *x = &sum[k];
		if (!x->runs)
			continue;
		if (k == RK_DELETE || k == RK_STAT)
			emit(ctx, cb_kind_name[k], "avg_seconds",
			     x->secs / x->runs, "s");
		else
			emit(ctx, cb_kind_name[k], "avg_mb_s",
			     x->secs > 0 ? x->mb / x->secs : 0.0, "MB/s");
	}
}

static const struct sfs_wl_param cb_params[] = {
    [CP_INITIAL] = {"initial", SFS_WLP_UINT, "3",
		    "trees created first (-i, compilebench's default 30)"},
    [CP_CREATE] = {"create", SFS_WLP_UINT, "1", "create runs: a new tree"},
    [CP_PATCH] = {"patch", SFS_WLP_UINT, "1",
		  "patch runs: an unpatched tree gets the patch"},
    [CP_COMPILE] = {"compile", SFS_WLP_UINT, "1",
		    "compile runs: a patched tree gets its .o files"},
    [CP_CLEAN] = {"clean", SFS_WLP_UINT, "1",
		  "clean runs: a compiled tree loses its .o files"},
    [CP_READ] = {"read", SFS_WLP_UINT, "1",
		 "read runs: every file of a tree read"},
    [CP_READ_COMPILED] = {"read_compiled", SFS_WLP_UINT, "1",
			  "read runs on a compiled tree"},
    [CP_DELETE] = {"delete", SFS_WLP_UINT, "1", "delete runs: a tree removed"},
    [CP_STAT] = {"stat", SFS_WLP_UINT, "1",
		 "stat runs: every file of a tree stat()ed"},
    [CP_NATIVE] = {"native", SFS_WLP_BOOL, "yes",
		   "first create, patch and compile native-0, as "
		   "compilebench does"},
    [CP_TREE_FILES] = {"tree_files", SFS_WLP_UINT, "2600",
		       "files per synthetic tree (a kernel has about 20000)"},
    [CP_TREE_DIRS] = {"tree_dirs", SFS_WLP_UINT, "180",
		      "directories per synthetic tree"},
    [CP_SEED] = {"seed", SFS_WLP_UINT, "1",
		 "seed of the tree listing and of the picks"},
    {.name = NULL},
};

const struct sfs_workload_ops sfs_wl_compilebench_ops = {
    .name = "compilebench",
    .help = "compilebench: kernel-like trees created, patched, compiled, "
	    "read, deleted",
    .doc = "After Chris Mason's compilebench: trees of a seeded synthetic "
	   "listing (tree_files= files in tree_dirs= directories, about "
	   "11 KiB a file, about 30 MB a tree with the defaults) go through "
	   "compilebench's operations: initial= trees created, then the "
	   "create, patch (a tenth of the files read and rewritten through a "
	   "temporary and a rename, 1% added, 0.5% removed), compile (an .o "
	   "of about the source's size per .c), clean, read tree, read "
	   "compiled tree, delete tree and stat tree runs, each run a phase.  "
	   "The report is compilebench's: a line per run and the summary "
	   "\"<op> total runs N avg X MB/s (user 0.00s sys Ys)\" with sys the "
	   "modelled CPU time per run (user time is not modelled).  "
	   "Differs: the listing is synthetic, not kernel 2.6.20's; the "
	   "runs come in a fixed order with the counts given, where "
	   "compilebench draws -r runs at random; reads and writes move up "
	   "to 1 MiB per call; no delete/stat of compiled trees.",
    .params = cb_params,
    .init = cb_init,
    .clients = sfs_wl_one_client,
    .next = cb_next,
    .report = cb_report,
    .metrics = cb_metrics,
    .fini = cb_fini,
};
