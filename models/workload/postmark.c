/*
 * postmark.c - PostMark 1.51 as a `simfs run` workload (workload.h): a
 * pool of small files, transactions on it, then the pool deleted; one
 * client, as PostMark is one process.
 *
 *   postmark,files=500,transactions=500,min=500,max=10000,seed=42
 *
 * The whole run is planned in init from the seed (PostMark's choices do
 * not depend on the file system's answers): create `files` files of
 * min..max-1 bytes (sizes as PostMark's file_size()), then per
 * transaction a read (the whole file) or an append (a random size, cut
 * so the file stays within max) of a random existing file, by bias_read
 * out of 10, and a create or a delete of a random existing file, by
 * bias_create out of 10 (-1 leaves that half out); then every file left
 * is deleted.  next() expands each planned action into open / read or
 * write in blocks / close or unlink.  Files are named by a running
 * number, in "s<k>/" with subdirs=.
 *
 * Invariants of a plan: created (alone + mixed) = deleted (mixed +
 * alone), so the pool is empty at the end; written bytes = the created
 * files' sizes + the appended bytes; a read or append picks only a live
 * file, so every op expects 0.  With buffering (PostMark's stdio) the
 * system calls move max(block, 4096) bytes, as stdio's buffer does.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "workload.h"

#define PM_STDIO_BUF 4096 /* glibc's stdio buffer on a 4K-block fs */
#define PM_MAX_FILES 1000000u
#define PM_MAX_TRANS 10000000u
#define PM_MAX_SUBDIRS 10000u
#define PM_MAX_FILE (1ULL << 30)
#define PM_MAX_BLOCK (1u << 20)

enum {
	PP_FILES,
	PP_TRANS,
	PP_MIN,
	PP_MAX,
	PP_SUBDIRS,
	PP_READ,
	PP_WRITE,
	PP_SEED,
	PP_BIAS_READ,
	PP_BIAS_CREATE,
	PP_BUFFERING,
	PP_HIRES,
};

enum pm_kind {
	PM_MKDIR,
	PM_CREATE,
	PM_READ,
	PM_APPEND,
	PM_DELETE,
	PM_RMDIR,
};

struct pm_act {
	uint8_t kind;	 /* enum pm_kind */
	uint32_t name;	 /* file number (subdirectory for mkdir/rmdir) */
	uint32_t subdir; /* "s<subdir>/" when subdirs > 0 */
	uint64_t bytes;	 /* created, read or appended */
};

struct pm_slot {
	uint32_t name;
	uint32_t subdir;
	uint64_t size;
};

struct pm_state {
	/* parameters */
	uint64_t files, trans, lo, hi;
	uint32_t subdirs;
	uint64_t rblock, wblock; /* as given */
	uint64_t rio, wio;	 /* per system call */
	uint64_t seed;
	int bias_read, bias_create; /* 0..10, -1: none */
	bool buffering, hires;
	/* the plan */
	struct pm_act *act;
	uint64_t nact;
	uint64_t trans_first, delete_first; /* first action of each phase */
	/* totals of the plan, for the report */
	uint64_t created_alone, created_mixed, nread, nappend;
	uint64_t deleted_mixed, deleted_alone;
	uint64_t bytes_read, bytes_written;
	/* the cursor */
	uint64_t ai;  /* action */
	uint64_t sub; /* op within the action */
	char path[64];
};

static uint64_t pm_chunks(uint64_t bytes, uint64_t io)
{
	return (bytes + io - 1) / io;
}

static int pm_bias(const char *text, const char *name, int *out, char **err)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || end == text || *end || v < -1 || v > 10) {
		*err = g_strdup_printf("%s=%s: from 0 to 10 (out of 10), or "
				       "-1 to leave it out",
				       name, text);
		return -EINVAL;
	}
	*out = (int)v;
	return 0;
}

static void pm_fini(void *st)
{
	struct pm_state *s = st;

	if (!s)
		return;
	g_free(s->act);
	g_free(s);
}

static void pm_add(struct pm_state *s, enum pm_kind k, uint32_t name,
		   uint32_t subdir, uint64_t bytes)
{
	struct pm_act *a = &s->act[s->nact++];

	a->kind = (uint8_t)k;
	a->name = name;
	a->subdir = subdir;
	a->bytes = bytes;
}

static uint64_t pm_size(struct pm_state *s, struct sfs_wl_rng *r)
{
	/* PostMark's file_size(): low + RND(high - low) */
	return s->lo + sfs_wl_rng_below(r, s->hi - s->lo);
}

/*
 * Plan the run.  The pool is a dense array of live files; a pick is
 * uniform over it, a delete swaps the last one into the hole.
 */
static int pm_plan(struct pm_state *s, char **err)
{
	uint64_t cap = s->files + s->trans; /* most files alive at once */
	uint64_t maxact = s->subdirs * 2 + s->files * 2 + s->trans * 3;
	struct pm_slot *pool = g_try_new(struct pm_slot, cap);
	uint64_t live = 0;
	uint32_t next_name = 0;
	struct sfs_wl_rng r;

	s->act = g_try_new(struct pm_act, maxact);
	if (!pool || !s->act) {
		g_free(pool);
		*err = g_strdup_printf("no memory to plan %" PRIu64 " files "
				       "and %" PRIu64 " transactions",
				       s->files, s->trans);
		return -ENOMEM;
	}
	sfs_wl_rng_seed(&r, s->seed);
	for (uint32_t d = 0; d < s->subdirs; d++)
		pm_add(s, PM_MKDIR, d, 0, 0);
	for (uint64_t i = 0; i < s->files; i++) {
		struct pm_slot *f = &pool[live++];
		f->name = ++next_name;
		f->subdir =
		    s->subdirs ? (uint32_t)sfs_wl_rng_below(&r, s->subdirs) : 0;
		f->size = pm_size(s, &r);
		pm_add(s, PM_CREATE, f->name, f->subdir, f->size);
		s->created_alone++;
		s->bytes_written += f->size;
	}
	s->trans_first = s->nact;
	for (uint64_t t = 0; t < s->trans; t++) {
		if (s->bias_read >= 0 && live) {
			bool rd = (int)sfs_wl_rng_below(&r, 10) < s->bias_read;
			struct pm_slot *f = &pool[sfs_wl_rng_below(&r, live)];
			if (rd) {
				pm_add(s, PM_READ, f->name, f->subdir, f->size);
				s->nread++;
				s->bytes_read += f->size;
			} else {
				uint64_t n = pm_size(s, &r);
				if (n + f->size > s->hi)
					n = s->hi > f->size ? s->hi - f->size
							    : 0;
				f->size += n;
				pm_add(s, PM_APPEND, f->name, f->subdir, n);
				s->nappend++;
				s->bytes_written += n;
			}
		}
		if (s->bias_create >= 0) {
			bool cr =
			    (int)sfs_wl_rng_below(&r, 10) < s->bias_create;
			if (cr) {
				struct pm_slot *f = &pool[live++];
				f->name = ++next_name;
				f->subdir = s->subdirs
						? (uint32_t)sfs_wl_rng_below(
						      &r, s->subdirs)
						: 0;
				f->size = pm_size(s, &r);
				pm_add(s, PM_CREATE, f->name, f->subdir,
				       f->size);
				s->created_mixed++;
				s->bytes_written += f->size;
			} else if (live) {
				uint64_t k = sfs_wl_rng_below(&r, live);
				pm_add(s, PM_DELETE, pool[k].name,
				       pool[k].subdir, 0);
				pool[k] = pool[--live];
				s->deleted_mixed++;
			}
		}
	}
	s->delete_first = s->nact;
	for (uint64_t k = 0; k < live; k++) {
		pm_add(s, PM_DELETE, pool[k].name, pool[k].subdir, 0);
		s->deleted_alone++;
	}
	for (uint32_t d = 0; d < s->subdirs; d++)
		pm_add(s, PM_RMDIR, d, 0, 0);
	g_free(pool);
	return 0;
}

static int pm_init(const struct sfs_wl_value *v, void **st_out, char **err)
{
	struct pm_state *s;
	int br, bc, rc;

	*st_out = NULL;
	if (v[PP_FILES].u < 1 || v[PP_FILES].u > PM_MAX_FILES) {
		*err = g_strdup_printf("files=%" PRIu64 ": from 1 to %u",
				       v[PP_FILES].u, PM_MAX_FILES);
		return -EINVAL;
	}
	if (v[PP_TRANS].u > PM_MAX_TRANS) {
		*err = g_strdup_printf("transactions=%" PRIu64 ": at most %u",
				       v[PP_TRANS].u, PM_MAX_TRANS);
		return -EINVAL;
	}
	if (v[PP_MIN].u < 1 || v[PP_MIN].u > v[PP_MAX].u ||
	    v[PP_MAX].u > PM_MAX_FILE) {
		*err = g_strdup_printf("min=%s max=%s: want 1 <= min <= max "
				       "<= 1G",
				       v[PP_MIN].s, v[PP_MAX].s);
		return -EINVAL;
	}
	if (v[PP_READ].u < 1 || v[PP_READ].u > PM_MAX_BLOCK ||
	    v[PP_WRITE].u < 1 || v[PP_WRITE].u > PM_MAX_BLOCK) {
		*err = g_strdup_printf("read=%s write=%s: block sizes from 1 "
				       "byte to 1M",
				       v[PP_READ].s, v[PP_WRITE].s);
		return -EINVAL;
	}
	if (v[PP_SUBDIRS].u > PM_MAX_SUBDIRS) {
		*err = g_strdup_printf("subdirs=%" PRIu64 ": at most %u",
				       v[PP_SUBDIRS].u, PM_MAX_SUBDIRS);
		return -EINVAL;
	}
	if ((rc = pm_bias(v[PP_BIAS_READ].s, "bias_read", &br, err)) ||
	    (rc = pm_bias(v[PP_BIAS_CREATE].s, "bias_create", &bc, err)))
		return rc;

	s = g_new0(struct pm_state, 1);
	s->files = v[PP_FILES].u;
	s->trans = v[PP_TRANS].u;
	s->lo = v[PP_MIN].u;
	s->hi = v[PP_MAX].u;
	s->subdirs = (uint32_t)v[PP_SUBDIRS].u;
	s->rblock = v[PP_READ].u;
	s->wblock = v[PP_WRITE].u;
	s->buffering = v[PP_BUFFERING].u;
	s->hires = v[PP_HIRES].u;
	s->rio = s->buffering ? MAX(s->rblock, PM_STDIO_BUF) : s->rblock;
	s->wio = s->buffering ? MAX(s->wblock, PM_STDIO_BUF) : s->wblock;
	s->seed = v[PP_SEED].u;
	s->bias_read = br;
	s->bias_create = bc;
	rc = pm_plan(s, err);
	if (rc) {
		pm_fini(s);
		return rc;
	}
	*st_out = s;
	return 0;
}

static void pm_file_path(const struct pm_act *a, const struct pm_state *s,
			 char *buf, size_t sz)
{
	if (s->subdirs)
		g_snprintf(buf, sz, "s%u/%u", a->subdir, a->name);
	else
		g_snprintf(buf, sz, "%u", a->name);
}

/* Ops in action a. */
static uint64_t pm_act_ops(const struct pm_state *s, const struct pm_act *a)
{
	switch (a->kind) {
	case PM_CREATE:
	case PM_APPEND:
		return 2 + pm_chunks(a->bytes, s->wio);
	case PM_READ:
		return 2 + pm_chunks(a->bytes, s->rio);
	default:
		return 1;
	}
}

static int pm_next(void *st, unsigned c, sfs_ns_t now, struct sfs_wop *o,
		   char **err)
{
	struct pm_state *s = st;
	const struct pm_act *a;
	uint64_t n;

	(void)c, (void)now, (void)err;
	if (s->ai >= s->nact)
		return 0;
	a = &s->act[s->ai];
	n = pm_act_ops(s, a);
	o->fd = 0;
	o->expect = 0;
	if (s->sub == 0) {
		if (s->ai == 0)
			o->phase = "create";
		else if (s->ai == s->trans_first)
			o->phase = "transactions";
		else if (s->ai == s->delete_first)
			o->phase = "delete";
	}
	switch (a->kind) {
	case PM_MKDIR:
	case PM_RMDIR:
		g_snprintf(s->path, sizeof(s->path), "s%u", a->name);
		o->type = a->kind == PM_MKDIR ? SFS_WOP_MKDIR : SFS_WOP_RMDIR;
		o->path = s->path;
		o->mode = 0755;
		break;
	case PM_DELETE:
		pm_file_path(a, s, s->path, sizeof(s->path));
		o->type = SFS_WOP_UNLINK;
		o->path = s->path;
		break;
	default: {
		uint64_t io = a->kind == PM_READ ? s->rio : s->wio;
		if (s->sub == 0) {
			pm_file_path(a, s, s->path, sizeof(s->path));
			o->type = SFS_WOP_OPEN;
			o->path = s->path;
			o->mode = 0644;
			o->flags = a->kind == PM_CREATE
				       ? O_CREAT | O_WRONLY | O_TRUNC
				   : a->kind == PM_APPEND ? O_WRONLY | O_APPEND
							  : O_RDONLY;
		} else if (s->sub + 1 == n) {
			o->type = SFS_WOP_CLOSE;
		} else {
			uint64_t off = (s->sub - 1) * io;
			o->type =
			    a->kind == PM_READ ? SFS_WOP_READ : SFS_WOP_WRITE;
			o->off = a->kind == PM_APPEND ? SFS_WOP_OFF_CUR : off;
			o->len = MIN(io, a->bytes - off);
		}
		break;
	}
	}
	if (++s->sub >= n) {
		s->sub = 0;
		s->ai++;
	}
	return 1;
}

static double pm_secs(const struct sfs_wl_phase *ph, bool hires)
{
	double t = ph ? (double)(ph->end_ns - ph->start_ns) / 1e9 : 0;

	if (!hires) /* PostMark times with time(): whole seconds, >= 1 */
		t = MAX((double)(uint64_t)t, 1.0);
	return t > 0 ? t : 1e-9;
}

/* "%d ... (%d per second)" or, with hires, two decimals. */
static void pm_line(FILE *out, const char *indent, uint64_t n, const char *what,
		    double secs, bool hires)
{
	if (hires)
		fprintf(out, "%s%" PRIu64 " %s (%.2f per second)\n", indent, n,
			what, (double)n / secs);
	else
		fprintf(out, "%s%" PRIu64 " %s (%d per second)\n", indent, n,
			what, (int)((double)n / secs));
}

static void pm_report(void *st, const struct sfs_wl_result *r, FILE *out)
{
	struct pm_state *s = st;
	const struct sfs_wl_phase *pc = sfs_wl_result_phase(r, "create");
	const struct sfs_wl_phase *pt = sfs_wl_result_phase(r, "transactions");
	const struct sfs_wl_phase *pd = sfs_wl_result_phase(r, "delete");
	double tc = pm_secs(pc, s->hires), tt = pm_secs(pt, s->hires);
	double td = pm_secs(pd, s->hires);
	sfs_ns_t t0 = pc ? pc->start_ns : 0;
	sfs_ns_t t1 = pd ? pd->end_ns : pt ? pt->end_ns : pc ? pc->end_ns : 0;
	struct sfs_wl_phase all = {.start_ns = t0, .end_ns = MAX(t0, t1)};
	double ta = pm_secs(&all, s->hires);
	double mb = 1024.0 * 1024.0;

	fprintf(out, "PostMark v1.51 (simfs run)\n");
	fprintf(out, "The base number of files is %" PRIu64 "\n", s->files);
	fprintf(out, "Transactions: %" PRIu64 "\n", s->trans);
	fprintf(out,
		"Files range between %" PRIu64 " and %" PRIu64
		" bytes in size\n",
		s->lo, s->hi);
	fprintf(out,
		"Block sizes are: read=%" PRIu64 " bytes, write=%" PRIu64
		" bytes\n",
		s->rblock, s->wblock);
	fprintf(out, "Biases are: read/append=%d, create/delete=%d\n",
		s->bias_read, s->bias_create);
	fprintf(out, "Using %s file I/O\n",
		s->buffering ? "Unix buffered" : "Unix unbuffered");
	fprintf(out, "Random number generator seed is %" PRIu64 "\n\n",
		s->seed);
	fprintf(out, "Time:\n");
	if (s->hires) {
		fprintf(out, "\t%.2f seconds total\n", ta);
		fprintf(out,
			"\t%.2f seconds of transactions (%.2f per "
			"second)\n",
			tt, (double)s->trans / tt);
	} else {
		fprintf(out, "\t%d seconds total\n", (int)ta);
		fprintf(out, "\t%d seconds of transactions (%d per second)\n",
			(int)tt, (int)((double)s->trans / tt));
	}
	fprintf(out, "\nFiles:\n");
	pm_line(out, "\t", s->created_alone + s->created_mixed, "created", ta,
		s->hires);
	pm_line(out, "\t\tCreation alone: ", s->created_alone, "files", tc,
		s->hires);
	pm_line(out, "\t\tMixed with transactions: ", s->created_mixed, "files",
		tt, s->hires);
	pm_line(out, "\t", s->nread, "read", tt, s->hires);
	pm_line(out, "\t", s->nappend, "appended", tt, s->hires);
	pm_line(out, "\t", s->deleted_mixed + s->deleted_alone, "deleted", ta,
		s->hires);
	pm_line(out, "\t\tDeletion alone: ", s->deleted_alone, "files", td,
		s->hires);
	pm_line(out, "\t\tMixed with transactions: ", s->deleted_mixed, "files",
		tt, s->hires);
	fprintf(out, "\nData:\n");
	fprintf(out, "\t%.2f megabytes read (%.2f megabytes per second)\n",
		(double)s->bytes_read / mb, (double)s->bytes_read / mb / ta);
	fprintf(out, "\t%.2f megabytes written (%.2f megabytes per second)\n",
		(double)s->bytes_written / mb,
		(double)s->bytes_written / mb / ta);
}

/*
 * pm_report's "seconds of transactions (N per second)" as a metric: phase
 * "transactions", transactions_s, with PostMark's whole seconds and whole
 * rate unless hires, as printed.  No transactions phase: no row.
 */
static void pm_metrics(void *st, const struct sfs_wl_result *r,
		       sfs_wl_emit_fn *emit, void *ctx)
{
	struct pm_state *s = st;
	const struct sfs_wl_phase *pt = sfs_wl_result_phase(r, "transactions");
	double tt = pm_secs(pt, s->hires);
	double rate = (double)s->trans / tt;

	if (!pt)
		return;
	if (!s->hires)
		rate = (double)(int)rate;
	emit(ctx, "transactions", "transactions_s", rate, "transactions/s");
}

static const struct sfs_wl_param pm_params[] = {
    [PP_FILES] = {"files", SFS_WLP_UINT, "500",
		  "files in the pool (set number)"},
    [PP_TRANS] = {"transactions", SFS_WLP_UINT, "500",
		  "transactions (set transactions)"},
    [PP_MIN] = {"min", SFS_WLP_SIZE, "500", "smallest file (set size min max)"},
    [PP_MAX] = {"max", SFS_WLP_SIZE, "10000",
		"file size limit: sizes are min..max-1, appends stop at max"},
    [PP_SUBDIRS] = {"subdirs", SFS_WLP_UINT, "0",
		    "subdirectories s0.. the files are spread over "
		    "(set subdirectories)"},
    [PP_READ] = {"read", SFS_WLP_SIZE, "512", "read block size (set read)"},
    [PP_WRITE] = {"write", SFS_WLP_SIZE, "512", "write block size (set write)"},
    [PP_SEED] = {"seed", SFS_WLP_UINT, "42", "random number seed (set seed)"},
    [PP_BIAS_READ] = {"bias_read", SFS_WLP_STRING, "5",
		      "reads out of 10 read/append choices; -1: neither "
		      "(set bias read)"},
    [PP_BIAS_CREATE] = {"bias_create", SFS_WLP_STRING, "5",
			"creates out of 10 create/delete choices; -1: neither "
			"(set bias create)"},
    [PP_BUFFERING] = {"buffering", SFS_WLP_BOOL, "yes",
		      "stdio buffering: system calls of at least 4096 bytes "
		      "(set buffering)"},
    [PP_HIRES] = {"hires", SFS_WLP_BOOL, "no",
		  "report times with two decimals, not whole seconds"},
    {.name = NULL},
};

const struct sfs_workload_ops sfs_wl_postmark_ops = {
    .name = "postmark",
    .help = "PostMark: a pool of small files, read/append/create/delete",
    .doc = "After PostMark 1.51: creates files= files of min..max-1 bytes, "
	   "runs transactions= transactions, each a read of a whole file or "
	   "an append to one (bias_read in 10) and a create or a delete "
	   "(bias_create in 10), then deletes every file left.  The plan "
	   "comes from seed= alone.  The report is PostMark's: times, "
	   "files created / read / appended / deleted with their rates, "
	   "megabytes read and written (MB = 2^20).  Differs: its own "
	   "random generator, so a seed does not give PostMark's exact "
	   "sequence; a pick is uniform over the live files; stdio "
	   "buffering is modelled as system calls of max(block, 4096) bytes; "
	   "a transaction with no file left skips its read or delete; times "
	   "are virtual seconds (whole, at least 1, as PostMark's time(); "
	   "hires for decimals); one location only.",
    .params = pm_params,
    .init = pm_init,
    .clients = sfs_wl_one_client,
    .next = pm_next,
    .report = pm_report,
    .metrics = pm_metrics,
    .fini = pm_fini,
};
