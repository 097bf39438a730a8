/*
 * trace.c - the `trace` workload: a recorded trace (traces/README.md)
 * replayed with its think times and the new configuration's service
 * times, for `simfs run` (workload.h).
 *
 *   trace,file=PATH[,data=PATH][,chain]
 *
 * init reads the whole trace (sfs_trace_read) and builds one op list per
 * client:
 *  1. an op on a handle belongs to the process that opened the handle (a
 *     forked child writing to an inherited descriptor, a release the
 *     kernel sent for the last closer): the runner's handles are per
 *     client;
 *  2. clients are the distinct recorded client ids after rule 1, in the
 *     order the file first names them, numbered 0..N-1;
 *  3. a client's ops are in recorded start order (time, then line);
 *  4. think_ns = this op's start - the end (start + dur) of the client's
 *     previous op, or its start for the first; never negative.
 * With chain, rule 2 is replaced: processes are taken by first start, and
 * one that starts after others have ended continues the client of the one
 * that ended last (tw_chain); clients are numbered by first start.
 * A truncate by path (no workload op of its own) is replayed as open
 * O_WRONLY + ftruncate + close on a handle of its own, the open and the
 * close expecting any result.  Failed opens get unused handle numbers.
 * With a data file (data=, else FILE.data if it exists) a write carries
 * its recorded bytes; without, the runner makes them.
 *
 * done compares the replayed result with the recorded one; report prints
 * the ops replayed by type and the first difference with its line.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "trace.h"
#include "workload.h"

#define TW_MAX_WRITE (1ull << 30) /* bytes of one replayed write */

/* One recorded op, its strings in the state's chunk. */
struct tw_op {
	struct sfs_trace_rec rec;
	unsigned line;
	unsigned client;     /* index, after rule 1 */
	sfs_ns_t think_ns;   /* rule 4 */
	const char *fd_path; /* ops on a handle: the path it was opened by */
	int aux_fd;	     /* truncate: its own handle */
};

struct tw_client {
	GArray *ops;  /* guint indices into st->ops, rule 3 order */
	guint pos;    /* next op */
	unsigned sub; /* truncate: step 0 open, 1 ftruncate, 2 close */
	guint last;   /* the op returned last (index into st->ops) */
	unsigned last_sub;
	uint8_t *buf; /* data of the latest write */
	size_t buf_len;
};

struct tw_state {
	char *file;
	int data_fd; /* -1: no data file */
	GArray *ops; /* struct tw_op, in file order */
	GStringChunk *strings;
	unsigned nclients;
	struct tw_client *clients;
	uint64_t *client_ids; /* recorded id of each client */
	uint64_t replayed;
	uint64_t by_op[SFS_TOP_N];
	uint64_t differed;
	char *first_diff;
	bool chain;	   /* chain: sequential processes, one client */
	sfs_ns_t first_ns; /* the first start in the trace */
	sfs_ns_t last_ns;  /* the last end in the trace */
};

static const struct sfs_wl_param tw_params[] = {
    {"file", SFS_WLP_STRING, NULL, "the trace to replay (traces/README.md)"},
    {"data", SFS_WLP_STRING, NULL,
     "the written bytes (FILE.data if it exists)"},
    {"chain", SFS_WLP_BOOL, "no",
     "a process starting after another ended continues its client "
     "(keeps a script's commands in order)"},
    {.name = NULL},
};

static void tw_fini(void *vst)
{
	struct tw_state *st = vst;

	if (!st)
		return;
	for (unsigned c = 0; c < st->nclients; c++) {
		g_array_unref(st->clients[c].ops);
		g_free(st->clients[c].buf);
	}
	g_free(st->clients);
	g_free(st->client_ids);
	if (st->ops)
		g_array_unref(st->ops);
	if (st->strings)
		g_string_chunk_free(st->strings);
	if (st->data_fd >= 0)
		close(st->data_fd);
	g_free(st->first_diff);
	g_free(st->file);
	g_free(st);
}

static bool tw_fd_op(enum sfs_trace_op op)
{
	return op == SFS_TOP_CLOSE || op == SFS_TOP_READ ||
	       op == SFS_TOP_WRITE || op == SFS_TOP_FSYNC ||
	       op == SFS_TOP_FTRUNCATE;
}

/* Who opened a handle, by which path. */
struct tw_opener {
	uint64_t client;
	const char *path; /* in st->strings */
};

/* Read every record into st->ops; the handles' openers in *openers. */
static int tw_load(struct tw_state *st, GHashTable *openers, uint64_t data_size,
		   bool have_data, char **err)
{
	struct sfs_trace_reader *r;
	struct sfs_trace_rec rec;
	int64_t max_fd = 2;
	int rc;

	rc = sfs_trace_reader_open(st->file, &r, err);
	if (rc < 0)
		return rc;
	while ((rc = sfs_trace_read(r, &rec, err)) == 1) {
		struct tw_op o = {
		    .rec = rec, .line = sfs_trace_reader_line(r), .aux_fd = -1};

		if (rec.path)
			o.rec.path =
			    g_string_chunk_insert(st->strings, rec.path);
		if (rec.path2)
			o.rec.path2 =
			    g_string_chunk_insert(st->strings, rec.path2);
		if (rec.op == SFS_TOP_WRITE && rec.len > TW_MAX_WRITE) {
			*err = g_strdup_printf(
			    "%s:%u: write of %" PRIu64 " bytes: more than %llu",
			    st->file, o.line, rec.len, TW_MAX_WRITE);
			rc = -EINVAL;
			break;
		}
		if (have_data && rec.op == SFS_TOP_WRITE &&
		    rec.data_off != SFS_TRACE_NO_DATA &&
		    (rec.data_off > data_size ||
		     rec.len > data_size - rec.data_off)) {
			*err = g_strdup_printf(
			    "%s:%u: data=%" PRIu64 " len=%" PRIu64
			    " lies beyond the end of the data file (%" PRIu64
			    " bytes)",
			    st->file, o.line, rec.data_off, rec.len, data_size);
			rc = -EINVAL;
			break;
		}
		if (rec.fd > max_fd)
			max_fd = rec.fd;
		if (rec.op == SFS_TOP_OPEN && rec.fd != SFS_TRACE_NO_FD) {
			struct tw_opener *op = g_new(struct tw_opener, 1);

			op->client = rec.client;
			op->path = o.rec.path;
			g_hash_table_replace(openers, GINT_TO_POINTER(rec.fd),
					     op);
		}
		if (rec.t_ns + rec.dur_ns > st->last_ns)
			st->last_ns = rec.t_ns + rec.dur_ns;
		if (!st->ops->len || rec.t_ns < st->first_ns)
			st->first_ns = rec.t_ns;
		g_array_append_val(st->ops, o);
	}
	sfs_trace_reader_free(r);
	if (rc < 0)
		return rc;
	/* fresh handles: failed opens, truncates */
	for (guint i = 0; i < st->ops->len; i++) {
		struct tw_op *o = &g_array_index(st->ops, struct tw_op, i);

		if (max_fd >= INT32_MAX - 1) {
			*err = g_strdup_printf("%s: handle numbers run out",
					       st->file);
			return -EINVAL;
		}
		if (o->rec.op == SFS_TOP_OPEN && o->rec.fd == SFS_TRACE_NO_FD)
			o->rec.fd = ++max_fd;
		if (o->rec.op == SFS_TOP_TRUNCATE)
			o->aux_fd = (int)++max_fd;
	}
	return 0;
}

static int tw_cmp(gconstpointer a, gconstpointer b, gpointer ud)
{
	const struct tw_op *ops = ud;
	const struct tw_op *x = &ops[*(const guint *)a];
	const struct tw_op *y = &ops[*(const guint *)b];

	if (x->rec.t_ns != y->rec.t_ns)
		return x->rec.t_ns < y->rec.t_ns ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

struct tw_span {
	sfs_ns_t first_ns, end_ns; /* first start, last end */
	unsigned proc;		   /* process index */
};

static int tw_span_cmp(const void *a, const void *b)
{
	const struct tw_span *x = a, *y = b;

	if (x->first_ns != y->first_ns)
		return x->first_ns < y->first_ns ? -1 : 1;
	return x->proc < y->proc ? -1 : x->proc > y->proc;
}

/*
 * chain: a process that starts after another one has ended continues
 * that one's client (the one that ended last before it), so the commands
 * of a script stay in order whatever the new service times; processes
 * that overlapped stay apart.  Renumbers o->client and st->nclients.
 */
static void tw_chain(struct tw_state *st)
{
	unsigned np = st->nclients, nslots = 0;
	struct tw_span *sp = g_new0(struct tw_span, np ? np : 1);
	unsigned *slot_of = g_new0(unsigned, np ? np : 1);
	sfs_ns_t *slot_end = g_new0(sfs_ns_t, np ? np : 1);

	for (unsigned p = 0; p < np; p++) {
		sp[p].proc = p;
		sp[p].first_ns = UINT64_MAX;
	}
	for (guint i = 0; i < st->ops->len; i++) {
		const struct tw_op *o =
		    &g_array_index(st->ops, struct tw_op, i);
		struct tw_span *x = &sp[o->client];

		x->first_ns = MIN(x->first_ns, o->rec.t_ns);
		x->end_ns = MAX(x->end_ns, o->rec.t_ns + o->rec.dur_ns);
	}
	qsort(sp, np, sizeof(*sp), tw_span_cmp);
	for (unsigned k = 0; k < np; k++) {
		unsigned best = nslots;

		for (unsigned s = 0; s < nslots; s++)
			if (slot_end[s] <= sp[k].first_ns &&
			    (best == nslots || slot_end[s] > slot_end[best]))
				best = s;
		if (best == nslots)
			nslots++;
		slot_end[best] = sp[k].end_ns;
		slot_of[sp[k].proc] = best;
	}
	for (guint i = 0; i < st->ops->len; i++) {
		struct tw_op *o = &g_array_index(st->ops, struct tw_op, i);

		o->client = slot_of[o->client];
	}
	st->nclients = nslots;
	g_free(sp);
	g_free(slot_of);
	g_free(slot_end);
}

/* Rules 1-4: clients, their op lists and think times. */
static void tw_clients(struct tw_state *st, GHashTable *openers)
{
	GHashTable *index =
	    g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	GArray *ids = g_array_new(FALSE, FALSE, sizeof(uint64_t));

	for (guint i = 0; i < st->ops->len; i++) {
		struct tw_op *o = &g_array_index(st->ops, struct tw_op, i);
		uint64_t id = o->rec.client;
		gpointer v;

		if (tw_fd_op(o->rec.op)) {
			struct tw_opener *op = g_hash_table_lookup(
			    openers, GINT_TO_POINTER(o->rec.fd));

			if (op) {
				id = op->client;
				o->fd_path = op->path;
			}
		}
		if (!g_hash_table_lookup_extended(index, &id, NULL, &v)) {
			uint64_t *k = g_new(uint64_t, 1);

			*k = id;
			v = GUINT_TO_POINTER(ids->len);
			g_hash_table_insert(index, k, v);
			g_array_append_val(ids, id);
		}
		o->client = GPOINTER_TO_UINT(v);
	}
	st->nclients = ids->len;
	st->client_ids = (uint64_t *)(void *)g_array_free(ids, FALSE);
	if (st->chain)
		tw_chain(st);
	st->clients = g_new0(struct tw_client, st->nclients ? st->nclients : 1);
	for (unsigned c = 0; c < st->nclients; c++)
		st->clients[c].ops = g_array_new(FALSE, FALSE, sizeof(guint));
	for (guint i = 0; i < st->ops->len; i++) {
		struct tw_op *o = &g_array_index(st->ops, struct tw_op, i);

		g_array_append_val(st->clients[o->client].ops, i);
	}
	for (unsigned c = 0; c < st->nclients; c++) {
		GArray *l = st->clients[c].ops;
		sfs_ns_t end = 0;

		g_array_sort_with_data(l, tw_cmp, st->ops->data);
		for (guint k = 0; k < l->len; k++) {
			struct tw_op *o = &g_array_index(
			    st->ops, struct tw_op, g_array_index(l, guint, k));

			o->think_ns = o->rec.t_ns > end ? o->rec.t_ns - end : 0;
			if (o->rec.t_ns + o->rec.dur_ns > end)
				end = o->rec.t_ns + o->rec.dur_ns;
		}
	}
	g_hash_table_destroy(index);
}

static int tw_init(const struct sfs_wl_value *v, void **st_out, char **err)
{
	struct tw_state *st;
	GHashTable *openers;
	uint64_t data_size = 0;
	char *data_path;
	struct stat sb;
	int rc;

	*st_out = NULL;
	if (!v[0].s || !*v[0].s) {
		*err = g_strdup("trace: file=PATH is needed (a trace recorded "
				"with the mount option trace=, or made by "
				"simfs trace import-strace)");
		return -EINVAL;
	}
	st = g_new0(struct tw_state, 1);
	st->file = g_strdup(v[0].s);
	st->chain = v[2].u != 0;
	st->data_fd = -1;
	data_path = v[1].given && *v[1].s
			? g_strdup(v[1].s)
			: g_strconcat(st->file, ".data", NULL);
	st->data_fd = open(data_path, O_RDONLY | O_CLOEXEC);
	if (st->data_fd < 0 && (v[1].given && *v[1].s)) {
		rc = -errno;
		*err = g_strdup_printf("trace: data %s: %s", data_path,
				       g_strerror(-rc));
		g_free(data_path);
		tw_fini(st);
		return rc;
	}
	g_free(data_path);
	if (st->data_fd >= 0 && fstat(st->data_fd, &sb) == 0)
		data_size = (uint64_t)sb.st_size;
	st->ops = g_array_new(FALSE, FALSE, sizeof(struct tw_op));
	st->strings = g_string_chunk_new(4096);
	openers =
	    g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
	rc = tw_load(st, openers, data_size, st->data_fd >= 0, err);
	if (rc == 0)
		tw_clients(st, openers);
	g_hash_table_destroy(openers);
	if (rc < 0) {
		tw_fini(st);
		return rc;
	}
	*st_out = st;
	return 0;
}

static unsigned tw_nclients(void *vst)
{
	struct tw_state *st = vst;

	return st->nclients;
}

/* The bytes of recorded write o, in cl's buffer; NULL: none recorded. */
static const void *tw_data(struct tw_state *st, struct tw_client *cl,
			   const struct tw_op *o, char **err, int *rc)
{
	size_t len = (size_t)o->rec.len;
	size_t got = 0;

	*rc = 0;
	if (st->data_fd < 0 || o->rec.data_off == SFS_TRACE_NO_DATA || !len)
		return NULL;
	if (len > cl->buf_len) {
		uint8_t *b = g_try_malloc(len);

		if (!b) {
			*err = g_strdup_printf("%s:%u: no memory for a write "
					       "of %zu bytes",
					       st->file, o->line, len);
			*rc = -ENOMEM;
			return NULL;
		}
		g_free(cl->buf);
		cl->buf = b;
		cl->buf_len = len;
	}
	while (got < len) {
		ssize_t n = pread(st->data_fd, cl->buf + got, len - got,
				  (off_t)(o->rec.data_off + got));

		if (n <= 0) {
			*err = g_strdup_printf(
			    "%s:%u: reading its data: %s", st->file, o->line,
			    n < 0 ? g_strerror(errno) : "unexpected end");
			*rc = -EIO;
			return NULL;
		}
		got += (size_t)n;
	}
	return cl->buf;
}

static int tw_next(void *vst, unsigned c, sfs_ns_t now, struct sfs_wop *out,
		   char **err)
{
	struct tw_state *st = vst;
	struct tw_client *cl;
	const struct tw_op *o;
	guint idx;
	int rc;

	(void)now;
	if (c >= st->nclients)
		return 0;
	cl = &st->clients[c];
	if (cl->pos >= cl->ops->len)
		return 0;
	idx = g_array_index(cl->ops, guint, cl->pos);
	o = &g_array_index(st->ops, struct tw_op, idx);
	cl->last = idx;
	cl->last_sub = cl->sub;
	memset(out, 0, sizeof(*out));
	if (o->rec.op == SFS_TOP_TRUNCATE) {
		out->fd = o->aux_fd;
		out->label = "truncate";
		out->expect = SFS_WOP_ANY;
		if (cl->sub == 0) {
			out->type = SFS_WOP_OPEN;
			out->path = o->rec.path;
			out->flags = O_WRONLY;
			out->think_ns = o->think_ns;
		} else if (cl->sub == 1) {
			out->type = SFS_WOP_FTRUNCATE;
			out->len = o->rec.len;
			out->expect = o->rec.result;
		} else {
			out->type = SFS_WOP_CLOSE;
		}
		if (++cl->sub == 3) {
			cl->sub = 0;
			cl->pos++;
		}
		return 1;
	}
	rc = sfs_trace_to_wop(&o->rec, out);
	if (rc < 0) {
		*err = g_strdup_printf("%s:%u: %s cannot be replayed", st->file,
				       o->line, sfs_trace_op_name(o->rec.op));
		return rc;
	}
	out->think_ns = o->think_ns;
	if (o->rec.op == SFS_TOP_WRITE) {
		out->data = tw_data(st, cl, o, err, &rc);
		if (rc < 0)
			return rc;
	}
	cl->pos++;
	return 1;
}

/* "write /a/b" or "write fd 3" */
static char *tw_what(const struct tw_op *o)
{
	const char *path = o->rec.path ? o->rec.path : o->fd_path;

	if (path)
		return g_strdup_printf("%s /%s", sfs_trace_op_name(o->rec.op),
				       path);
	if (o->rec.fd != SFS_TRACE_NO_FD && o->rec.op != SFS_TOP_OPEN)
		return g_strdup_printf("%s fd %" PRId64,
				       sfs_trace_op_name(o->rec.op), o->rec.fd);
	return g_strdup(sfs_trace_op_name(o->rec.op));
}

static void tw_done(void *vst, unsigned c, const struct sfs_wop *op, int rc)
{
	struct tw_state *st = vst;
	const struct tw_op *o;
	struct tw_client *cl;

	(void)op;
	if (c >= st->nclients)
		return;
	cl = &st->clients[c];
	o = &g_array_index(st->ops, struct tw_op, cl->last);
	if (o->rec.op == SFS_TOP_TRUNCATE && cl->last_sub != 1)
		return; /* its open and close: not recorded ops */
	st->replayed++;
	st->by_op[o->rec.op]++;
	if (rc == o->rec.result)
		return;
	if (!st->differed++) {
		char *what = tw_what(o);
		char *was = sfs_trace_result_text(o->rec.result);
		char *now = sfs_trace_result_text(rc);

		st->first_diff = g_strdup_printf("line %u: %s: recorded %s, "
						 "replayed %s",
						 o->line, what, was, now);
		g_free(what);
		g_free(was);
		g_free(now);
	}
}

static void tw_report(void *vst, const struct sfs_wl_result *r, FILE *out)
{
	struct tw_state *st = vst;
	sfs_ns_t span = r ? r->elapsed_ns : 0;
	bool any = false;

	/* the phases' span, where the runner leaves elapsed_ns at 0 */
	for (uint64_t i = 0; r && !span && i < r->nphases; i++)
		if (r->phases[i].end_ns - r->phases[i].start_ns > span &&
		    r->phases[i].end_ns > r->phases[i].start_ns)
			span = r->phases[i].end_ns - r->phases[i].start_ns;
	fprintf(out,
		"trace %s: %" PRIu64 " operations replayed by %u clients "
		"(%u recorded; first op to last: recorded %.3f s, replayed "
		"%.3f s)\n",
		st->file, st->replayed, st->nclients, st->ops->len,
		(double)(st->last_ns - st->first_ns) / 1e9, (double)span / 1e9);
	fputs("  by op:", out);
	for (int i = 0; i < SFS_TOP_N; i++) {
		if (!st->by_op[i])
			continue;
		fprintf(out, " %s %" PRIu64, sfs_trace_op_name(i),
			st->by_op[i]);
		any = true;
	}
	fputs(any ? "\n" : " none\n", out);
	if (st->differed)
		fprintf(out,
			"%" PRIu64 " results differed from the recording; "
			"first: %s\n",
			st->differed, st->first_diff);
	else
		fputs("every result as recorded\n", out);
}

/*
 * tw_report's counts as metrics, phase "run" (where the runner puts a
 * trace's ops): replayed_ops, recorded_s and replayed_s (first op to
 * last, recorded and replayed), differed (results unlike the recording).
 */
static void tw_metrics(void *vst, const struct sfs_wl_result *r,
		       sfs_wl_emit_fn *emit, void *ctx)
{
	struct tw_state *st = vst;
	sfs_ns_t span = r ? r->elapsed_ns : 0;

	for (uint64_t i = 0; r && !span && i < r->nphases; i++)
		if (r->phases[i].end_ns - r->phases[i].start_ns > span &&
		    r->phases[i].end_ns > r->phases[i].start_ns)
			span = r->phases[i].end_ns - r->phases[i].start_ns;
	emit(ctx, "run", "replayed_ops", (double)st->replayed, "ops");
	emit(ctx, "run", "recorded_s",
	     (double)(st->last_ns - st->first_ns) / 1e9, "s");
	emit(ctx, "run", "replayed_s", (double)span / 1e9, "s");
	emit(ctx, "run", "differed", (double)st->differed, "ops");
}

const struct sfs_workload_ops sfs_wl_trace_ops = {
    .name = "trace",
    .help = "replay a recorded trace (mount option trace=, or "
	    "simfs trace import-strace) with its think times",
    .doc = "Replays a trace (traces/README.md) in virtual time: each "
	   "recorded process is a client that keeps its own order and its "
	   "think time (the gap between the end of its previous operation "
	   "and the start of the next, as recorded), while the service "
	   "times come from the configuration being run. Operations on a "
	   "handle are replayed by the process that opened it. Writes carry "
	   "the recorded bytes when the data file (data=, default "
	   "FILE.data) exists. With chain, a process that started after "
	   "another had ended continues that one's client, so a script's "
	   "commands keep their order on a slower configuration. A "
	   "truncate by path is replayed as open, "
	   "ftruncate and close. The report counts the operations replayed "
	   "by type and the results that differ from the recorded ones. "
	   "What a trace cannot hold: the kernel's own caching decisions "
	   "(operations the kernel answered without asking the filesystem "
	   "are not in it), and the dependence of a process's next request "
	   "on the answer it got.",
    .params = tw_params,
    .init = tw_init,
    .clients = tw_nclients,
    .next = tw_next,
    .done = tw_done,
    .report = tw_report,
    .metrics = tw_metrics,
    .fini = tw_fini,
};
