/*
 * registry.c - the I/O schedulers (see sched.h): noop, elevator and cfq, each
 * an ops table at the end of this file, and the door that counts.
 *
 * Every queued request is a sched_node owned by the scheduler from
 * sfs_sched_add until it is dispatched.  The elevator keeps each node in two
 * places: a sequence sorted by (offset, seq) for C-LOOK and merging, and a
 * FIFO per op (arrival order) whose head is the oldest and so the first to
 * expire.  noop keeps one FIFO.
 *
 * Merging happens at dispatch, not at add: the chosen request takes along
 * the queued requests of the same op that end exactly where it (or the run
 * so far) starts, and that start exactly where it ends, while the run stays
 * within max_req bytes.  Overlapping requests are never merged.
 *
 * cfq orders a batch as the elevator does but merges only requests of the
 * same stream (one process's queue); its time slices are not applied here
 * but by the timing device, which asks for them with sfs_sched_slices.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <glib.h>

#include "devmodel.h" /* knob tables */
#include "sched.h"

struct sched_node {
	struct sfs_sched_req r;
	GSequenceIter *pos; /* elevator: place in the sorted sequence */
	GList link;	    /* place in a FIFO (GQueue with embedded links) */
};

struct sched_ops {
	const char *name;
	const char *help;
	const struct sfs_knob *knobs;
	size_t params_size;
	/* set s->priv up from the parsed knobs; 0 or -EINVAL + *err */
	int (*init)(struct sfs_sched *s, const void *params, char **err);
	/* free s->priv and any node still queued */
	void (*fini)(struct sfs_sched *s);
	/* take n (the door filled n->r except deadline_ns) */
	void (*add)(struct sfs_sched *s, struct sched_node *n);
	/*
	 * Unqueue the next run to dispatch and append its nodes to `run` in
	 * offset order: one op, contiguous, within max_req unless a single
	 * request is larger.  Set *expired if a deadline chose it.  Called
	 * only when the queue is not empty.
	 */
	void (*dispatch)(struct sfs_sched *s, uint64_t head_off, sfs_ns_t now,
			 GPtrArray *run, bool *expired);
	size_t (*queued)(const struct sfs_sched *s);
	/* optional: the slice knobs of a per-stream scheduler */
	void (*slices)(const struct sfs_sched *s, struct sfs_sched_slices *out);
};

struct sfs_sched {
	const struct sched_ops *ops;
	void *priv;
	void *params;
	struct sfs_sched_counters cnt;
	uint64_t next_seq;
	GArray *last; /* struct sfs_sched_req: the last dispatch's originals */
};

static const struct sched_ops sched_noop_ops;
static const struct sched_ops sched_elevator_ops;
static const struct sched_ops sched_cfq_ops;
static const struct sched_ops *const sched_registry[] = {
    &sched_noop_ops,
    &sched_elevator_ops,
    &sched_cfq_ops,
    NULL,
};

/* ---- noop: one FIFO ---- */

struct noop_params {
	uint64_t max_req; /* bytes */
};

struct noop {
	struct noop_params p;
	GQueue fifo; /* of sched_node, by link */
};

static struct sched_node *node_of(GList *l)
{
	return l ? (struct sched_node *)((char *)l -
					 offsetof(struct sched_node, link))
		 : NULL;
}

static bool continues(const struct sched_node *a, const struct sched_node *b)
{
	return a->r.io.op == b->r.io.op &&
	       a->r.io.off_bytes + a->r.io.len_bytes == b->r.io.off_bytes;
}

static int noop_init(struct sfs_sched *s, const void *params, char **err)
{
	struct noop *q = g_new0(struct noop, 1);

	q->p = *(const struct noop_params *)params;
	g_queue_init(&q->fifo);
	s->priv = q;
	return 0;
}

static void noop_fini(struct sfs_sched *s)
{
	struct noop *q = s->priv;
	GList *l;

	while ((l = g_queue_pop_head_link(&q->fifo)))
		g_free(node_of(l));
	g_free(q);
}

static void noop_add(struct sfs_sched *s, struct sched_node *n)
{
	struct noop *q = s->priv;

	n->r.deadline_ns = G_MAXUINT64;
	g_queue_push_tail_link(&q->fifo, &n->link);
}

static void noop_dispatch(struct sfs_sched *s, uint64_t head_off, sfs_ns_t now,
			  GPtrArray *run, bool *expired)
{
	struct noop *q = s->priv;
	struct sched_node *n = node_of(g_queue_pop_head_link(&q->fifo));
	uint64_t total = n->r.io.len_bytes;

	g_ptr_array_add(run, n);
	for (;;) {
		struct sched_node *next = node_of(q->fifo.head);

		if (!next || !continues(n, next) ||
		    total + next->r.io.len_bytes > q->p.max_req)
			break;
		g_queue_pop_head_link(&q->fifo);
		total += next->r.io.len_bytes;
		g_ptr_array_add(run, next);
		n = next;
	}
}

static size_t noop_queued(const struct sfs_sched *s)
{
	const struct noop *q = s->priv;

	return q->fifo.length;
}

/* ---- elevator: C-LOOK + merging + deadlines ---- */

struct elv_params {
	uint64_t max_req;      /* bytes */
	double read_expire_ms; /* deadline after arrival */
	double write_expire_ms;
};

struct elv {
	struct elv_params p;
	GSequence *sorted; /* of sched_node, by (offset, seq) */
	GQueue fifo[2];	   /* [SFS_IO_READ], [SFS_IO_WRITE]: arrival order */
	bool by_stream;	   /* cfq: merge only within one stream */
	bool writes_shared; /* cfq,sync_writes=off: writes merge across
			       streams (one async queue) */
};

static gint elv_cmp(gconstpointer a, gconstpointer b, gpointer unused)
{
	const struct sched_node *x = a, *y = b;

	if (x->r.io.off_bytes != y->r.io.off_bytes)
		return x->r.io.off_bytes < y->r.io.off_bytes ? -1 : 1;
	if (x->r.seq != y->r.seq)
		return x->r.seq < y->r.seq ? -1 : 1;
	return 0;
}

static int elv_init(struct sfs_sched *s, const void *params, char **err)
{
	struct elv *e = g_new0(struct elv, 1);

	e->p = *(const struct elv_params *)params;
	e->sorted = g_sequence_new(NULL);
	g_queue_init(&e->fifo[0]);
	g_queue_init(&e->fifo[1]);
	s->priv = e;
	return 0;
}

static void elv_fini(struct sfs_sched *s)
{
	struct elv *e = s->priv;

	GSequenceIter *it = g_sequence_get_begin_iter(e->sorted);

	for (; !g_sequence_iter_is_end(it); it = g_sequence_iter_next(it))
		g_free(g_sequence_get(it));
	g_sequence_free(e->sorted);
	g_free(e);
}

static void elv_add(struct sfs_sched *s, struct sched_node *n)
{
	struct elv *e = s->priv;
	double ms = n->r.io.op == SFS_IO_READ ? e->p.read_expire_ms
					      : e->p.write_expire_ms;

	n->r.deadline_ns = n->r.arrival_ns + (sfs_ns_t)(ms * 1e6);
	n->pos = g_sequence_insert_sorted(e->sorted, n, elv_cmp, NULL);
	g_queue_push_tail_link(&e->fifo[n->r.io.op], &n->link);
}

/* The expired request with the earliest deadline, or NULL. */
static struct sched_node *elv_expired(struct elv *e, sfs_ns_t now)
{
	struct sched_node *best = NULL;

	for (int op = 0; op < 2; op++) {
		struct sched_node *n = node_of(e->fifo[op].head);

		if (n && n->r.deadline_ns <= now &&
		    (!best || n->r.deadline_ns < best->r.deadline_ns))
			best = n;
	}
	return best;
}

/* C-LOOK: lowest offset at or after head_off, else the lowest. */
static struct sched_node *elv_next(struct elv *e, uint64_t head_off)
{
	struct sched_node probe = {.r = {.io = {.off_bytes = head_off}}};
	GSequenceIter *it = g_sequence_search(e->sorted, &probe, elv_cmp, NULL);

	if (g_sequence_iter_is_end(it))
		it = g_sequence_get_begin_iter(e->sorted);
	return g_sequence_get(it);
}

static void elv_unqueue(struct elv *e, struct sched_node *n)
{
	g_queue_unlink(&e->fifo[n->r.io.op], &n->link);
	g_sequence_remove(n->pos); /* no destroy func: the door frees n */
}

/* May q join a run of n's op (and, for cfq, of n's stream)? */
static bool elv_mergeable(const struct elv *e, const struct sched_node *n,
			  const struct sched_node *q)
{
	return q->r.io.op == n->r.io.op &&
	       (!e->by_stream || q->r.io.stream == n->r.io.stream ||
		(e->writes_shared && n->r.io.op == SFS_IO_WRITE));
}

/* Find a queued node like n ending at start; NULL if none fits in room. */
static struct sched_node *elv_before(struct elv *e, GSequenceIter *it,
				     const struct sched_node *n, uint64_t start,
				     uint64_t room)
{
	while (!g_sequence_iter_is_begin(it)) {
		struct sched_node *p;

		it = g_sequence_iter_prev(it);
		p = g_sequence_get(it);
		if (p->r.io.off_bytes + room < start)
			break;
		if (elv_mergeable(e, n, p) &&
		    p->r.io.off_bytes + p->r.io.len_bytes == start &&
		    p->r.io.len_bytes <= room)
			return p;
	}
	return NULL;
}

/* Find a queued node like n starting at end; NULL if none fits in room. */
static struct sched_node *elv_after(struct elv *e, GSequenceIter *it,
				    const struct sched_node *n, uint64_t end,
				    uint64_t room)
{
	for (it = g_sequence_iter_next(it); !g_sequence_iter_is_end(it);
	     it = g_sequence_iter_next(it)) {
		struct sched_node *q = g_sequence_get(it);

		if (q->r.io.off_bytes > end)
			break;
		if (elv_mergeable(e, n, q) && q->r.io.off_bytes == end &&
		    q->r.io.len_bytes <= room)
			return q;
	}
	return NULL;
}

static void elv_dispatch(struct sfs_sched *s, uint64_t head_off, sfs_ns_t now,
			 GPtrArray *run, bool *expired)
{
	struct elv *e = s->priv;
	struct sched_node *n = elv_expired(e, now), *first, *last, *x;
	uint64_t total;

	*expired = n != NULL;
	if (!n)
		n = elv_next(e, head_off);
	total = n->r.io.len_bytes;
	first = last = n;
	g_ptr_array_add(run, n);
	while (total < e->p.max_req &&
	       (x = elv_before(e, first->pos, n, first->r.io.off_bytes,
			       e->p.max_req - total))) {
		g_ptr_array_insert(run, 0, x);
		total += x->r.io.len_bytes;
		first = x;
	}
	while (total < e->p.max_req &&
	       (x = elv_after(e, last->pos, n,
			      last->r.io.off_bytes + last->r.io.len_bytes,
			      e->p.max_req - total))) {
		g_ptr_array_add(run, x);
		total += x->r.io.len_bytes;
		last = x;
	}
	for (guint i = 0; i < run->len; i++)
		elv_unqueue(e, g_ptr_array_index(run, i));
}

static size_t elv_queued(const struct sfs_sched *s)
{
	const struct elv *e = s->priv;

	return e->fifo[0].length + e->fifo[1].length;
}

/* ---- cfq: the elevator per batch, time slices per stream ---- */

struct cfq_params {
	struct elv_params elv; /* ordering within a batch */
	double slice_sync_ms;  /* service time a stream holds the disk */
	double slice_idle_ms;  /* wait for the slice owner's next request */
	bool sync_writes;      /* process writes are sync (sliced) */
};

static int cfq_init(struct sfs_sched *s, const void *params, char **err)
{
	const struct cfq_params *p = params;
	struct elv *e;

	if (p->slice_idle_ms >= p->slice_sync_ms) {
		if (err)
			*err = g_strdup_printf(
			    "cfq: slice_idle_ms=%g must be below "
			    "slice_sync_ms=%g (the idle wait is part of a "
			    "slice)",
			    p->slice_idle_ms, p->slice_sync_ms);
		return -EINVAL;
	}
	elv_init(s, &p->elv, err);
	e = s->priv;
	e->by_stream = true;
	e->writes_shared = !p->sync_writes;
	return 0;
}

static void cfq_slices(const struct sfs_sched *s, struct sfs_sched_slices *out)
{
	const struct cfq_params *p = s->params;

	out->slice_sync_ns = (sfs_ns_t)(p->slice_sync_ms * 1e6);
	out->slice_idle_ns = (sfs_ns_t)(p->slice_idle_ms * 1e6);
	out->sync_writes = p->sync_writes;
}

/* ---- the door ---- */

static const struct sched_ops *sched_find(const char *name)
{
	for (unsigned i = 0; sched_registry[i]; i++)
		if (strcmp(sched_registry[i]->name, name) == 0)
			return sched_registry[i];
	return NULL;
}

int sfs_sched_new(const char *spec, struct sfs_sched **out, char **err)
{
	const struct sched_ops *ops;
	struct sfs_sched *s;
	gchar **items;
	int rc;

	*out = NULL;
	items = g_strsplit(spec ? spec : "", ",", -1);
	ops = items[0] ? sched_find(g_strstrip(items[0])) : NULL;
	if (!ops) {
		if (err) {
			GString *names = g_string_new(NULL);

			for (unsigned i = 0; sched_registry[i]; i++)
				g_string_append_printf(names, "%s%s",
						       i ? ", " : "",
						       sched_registry[i]->name);
			*err = g_strdup_printf("unknown I/O scheduler '%s' "
					       "(valid: %s)",
					       items[0] ? items[0] : "",
					       names->str);
			g_string_free(names, TRUE);
		}
		g_strfreev(items);
		return -EINVAL;
	}
	s = g_new0(struct sfs_sched, 1);
	s->ops = ops;
	s->params = g_malloc0(ops->params_size);
	rc = sfs_knobs_defaults(ops->name, ops->knobs, s->params, err);
	if (!rc)
		rc = sfs_knobs_set_all(ops->name, ops->knobs, s->params,
				       items + 1, err);
	if (!rc)
		rc = ops->init(s, s->params, err);
	g_strfreev(items);
	if (rc) {
		g_free(s->params);
		g_free(s);
		return rc;
	}
	s->last = g_array_new(FALSE, FALSE, sizeof(struct sfs_sched_req));
	*out = s;
	return 0;
}

void sfs_sched_free(struct sfs_sched *s)
{
	if (!s)
		return;
	s->ops->fini(s);
	g_array_free(s->last, TRUE);
	g_free(s->params);
	g_free(s);
}

int sfs_sched_add(struct sfs_sched *s, const struct sfs_io_req *req,
		  sfs_ns_t arrival_ns, void *cookie)
{
	struct sched_node *n;

	if ((req->op != SFS_IO_READ && req->op != SFS_IO_WRITE) ||
	    req->len_bytes == 0 ||
	    req->off_bytes + req->len_bytes < req->off_bytes)
		return -EINVAL;
	n = g_new0(struct sched_node, 1);
	n->r.io = *req;
	n->r.arrival_ns = arrival_ns;
	n->r.seq = ++s->next_seq;
	n->r.cookie = cookie;
	s->ops->add(s, n);
	s->cnt.added++;
	return 0;
}

size_t sfs_sched_queued(const struct sfs_sched *s)
{
	return s->ops->queued(s);
}

bool sfs_sched_empty(const struct sfs_sched *s)
{
	return sfs_sched_queued(s) == 0;
}

int sfs_sched_dispatch_next(struct sfs_sched *s, uint64_t head_off,
			    sfs_ns_t now, struct sfs_sched_dispatch *out)
{
	GPtrArray *run;
	bool expired = false;

	if (sfs_sched_empty(s))
		return -ENOENT;
	run = g_ptr_array_new_with_free_func(g_free);
	s->ops->dispatch(s, head_off, now, run, &expired);
	g_array_set_size(s->last, 0);
	for (guint i = 0; i < run->len; i++) {
		struct sched_node *n = g_ptr_array_index(run, i);

		g_array_append_val(s->last, n->r);
	}
	g_ptr_array_free(run, TRUE);

	out->orig = (const struct sfs_sched_req *)(void *)s->last->data;
	out->n_orig = s->last->len;
	out->expired = expired;
	out->req = out->orig[0].io;
	out->req.len_bytes = 0;
	for (size_t i = 0; i < out->n_orig; i++)
		out->req.len_bytes += out->orig[i].io.len_bytes;
	s->cnt.dispatched++;
	s->cnt.merges += out->n_orig - 1;
	s->cnt.expired += expired;
	return 0;
}

int sfs_sched_slices(const struct sfs_sched *s, struct sfs_sched_slices *out)
{
	if (!s->ops->slices)
		return -ENOENT;
	s->ops->slices(s, out);
	return 0;
}

void sfs_sched_counters(const struct sfs_sched *s,
			struct sfs_sched_counters *out)
{
	*out = s->cnt;
}

const char *sfs_sched_name(const struct sfs_sched *s)
{
	return s->ops->name;
}

const struct sfs_knob *sfs_sched_knobs(const char *name)
{
	const struct sched_ops *ops = name ? sched_find(name) : NULL;

	return ops ? ops->knobs : NULL;
}

const char *sfs_sched_nth(unsigned i, const char **help_out)
{
	for (unsigned n = 0; sched_registry[n]; n++)
		if (n == i) {
			if (help_out)
				*help_out = sched_registry[n]->help;
			return sched_registry[n]->name;
		}
	return NULL;
}

void sfs_sched_list(FILE *out)
{
	fputs("I/O schedulers (sched=NAME[,key=value...]):\n", out);
	for (unsigned i = 0; sched_registry[i]; i++) {
		fprintf(out, "  %s - %s\n", sched_registry[i]->name,
			sched_registry[i]->help);
		sfs_knobs_print_help(sched_registry[i]->knobs, out);
	}
}

/* ---- tables ---- */

static const struct sfs_knob noop_knobs[] = {
    {.key = "max_req",
     .type = SFS_KNOB_SIZE,
     .offset = offsetof(struct noop_params, max_req),
     .def = "512K",
     .min = 512,
     .max = 1ULL << 30,
     .help = "bytes, largest merged request (Linux 2.6.32 max_sectors_kb: 512K)"},
    {.key = NULL},
};

static const struct sfs_knob elv_knobs[] = {
    {.key = "max_req",
     .type = SFS_KNOB_SIZE,
     .offset = offsetof(struct elv_params, max_req),
     .def = "512K",
     .min = 512,
     .max = 1ULL << 30,
     .help = "bytes, largest merged request (Linux 2.6.32 max_sectors_kb: 512K)"},
    {.key = "read_expire_ms",
     .type = SFS_KNOB_DOUBLE,
     .offset = offsetof(struct elv_params, read_expire_ms),
     .def = "500",
     .min = 0,
     .max = 1e7,
     .help = "ms, a read's deadline after arrival"},
    {.key = "write_expire_ms",
     .type = SFS_KNOB_DOUBLE,
     .offset = offsetof(struct elv_params, write_expire_ms),
     .def = "5000",
     .min = 0,
     .max = 1e7,
     .help = "ms, a write's deadline after arrival"},
    {.key = NULL},
};

/*
 * CFQ's defaults as in 2.6.18-2.6.32 (block/cfq-iosched.c): fifo_expire_sync
 * 125 ms and fifo_expire_async 250 ms stand in for the read and write
 * deadlines; slice_sync 100 ms; slice_idle 8 ms.
 */
static const struct sfs_knob cfq_knobs[] = {
    {.key = "max_req",
     .type = SFS_KNOB_SIZE,
     .offset = offsetof(struct cfq_params, elv.max_req),
     .def = "512K",
     .min = 512,
     .max = 1ULL << 30,
     .help = "bytes, largest merged request (Linux 2.6.32 max_sectors_kb: 512K)"},
    {.key = "read_expire_ms",
     .type = SFS_KNOB_DOUBLE,
     .offset = offsetof(struct cfq_params, elv.read_expire_ms),
     .def = "125",
     .min = 0,
     .max = 1e7,
     .help = "ms, a queued read's deadline (CFQ fifo_expire_sync)"},
    {.key = "write_expire_ms",
     .type = SFS_KNOB_DOUBLE,
     .offset = offsetof(struct cfq_params, elv.write_expire_ms),
     .def = "250",
     .min = 0,
     .max = 1e7,
     .help = "ms, a queued write's deadline (CFQ fifo_expire_async)"},
    {.key = "slice_sync_ms",
     .type = SFS_KNOB_DOUBLE,
     .offset = offsetof(struct cfq_params, slice_sync_ms),
     .def = "100",
     .min = 1,
     .max = 1e5,
     .help = "ms of service a process holds the disk (CFQ slice_sync)"},
    {.key = "slice_idle_ms",
     .type = SFS_KNOB_DOUBLE,
     .offset = offsetof(struct cfq_params, slice_idle_ms),
     .def = "8",
     .min = 0,
     .max = 1e4,
     .help = "ms the disk may idle waiting for the slice owner (CFQ "
	     "slice_idle); below slice_sync_ms"},
    {.key = "sync_writes",
     .type = SFS_KNOB_BOOL,
     .offset = offsetof(struct cfq_params, sync_writes),
     .def = "on",
     .help = "a process's writes (O_DIRECT) are its own sliced requests, "
	     "as since Linux 2.6.29; off: asynchronous, one shared queue "
	     "(2.6.18-2.6.28)"},
    {.key = NULL},
};

static const struct sched_ops sched_noop_ops = {
    .name = "noop",
    .help = "FIFO; merges a request with the ones queued right after it "
	    "that continue it",
    .knobs = noop_knobs,
    .params_size = sizeof(struct noop_params),
    .init = noop_init,
    .fini = noop_fini,
    .add = noop_add,
    .dispatch = noop_dispatch,
    .queued = noop_queued,
};

static const struct sched_ops sched_elevator_ops = {
    .name = "elevator",
    .help = "C-LOOK by offset, merging contiguous requests, with read and "
	    "write deadlines",
    .knobs = elv_knobs,
    .params_size = sizeof(struct elv_params),
    .init = elv_init,
    .fini = elv_fini,
    .add = elv_add,
    .dispatch = elv_dispatch,
    .queued = elv_queued,
};

static const struct sched_ops sched_cfq_ops = {
    .name = "cfq",
    .help = "per-process time slices (timing device, doc/device-models.md "
	    "8.1); batches ordered as the elevator, merged within a process",
    .knobs = cfq_knobs,
    .params_size = sizeof(struct cfq_params),
    .init = cfq_init,
    .fini = elv_fini,
    .add = elv_add,
    .dispatch = elv_dispatch,
    .queued = elv_queued,
    .slices = cfq_slices,
};
