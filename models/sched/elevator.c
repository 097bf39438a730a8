/*
 * elevator.c - the elevator I/O scheduler (sched.h): C-LOOK by offset with
 * merging and per-op deadlines, as Linux's deadline scheduler.
 *
 * Each queued node sits in the sorted sequence and in its op's FIFO
 * (sched_priv.h).  A dispatch takes the oldest request if its deadline has
 * passed, else the lowest offset at or after the head (wrapping to the
 * lowest).  Merging happens at dispatch, not at add: the chosen request
 * takes along the queued requests of the same op that end exactly where it
 * (or the run so far) starts, and that start exactly where it ends, while
 * the run stays within max_req bytes.  Overlapping requests are never
 * merged.  cfq.c reuses all of this with by_stream set.
 */
#include <stddef.h>

#include <glib.h>

#include "devmodel.h" /* knob tables */
#include "sched.h"
#include "sched_priv.h"

static gint elv_cmp(gconstpointer a, gconstpointer b, gpointer unused)
{
	const struct sfs_sched_node *x = a, *y = b;

	if (x->r.io.off_bytes != y->r.io.off_bytes)
		return x->r.io.off_bytes < y->r.io.off_bytes ? -1 : 1;
	if (x->r.seq != y->r.seq)
		return x->r.seq < y->r.seq ? -1 : 1;
	return 0;
}

int sfs_elv_init(const void *params, void **priv, char **err)
{
	struct elv *e = g_new0(struct elv, 1);

	e->p = *(const struct elv_params *)params;
	e->sorted = g_sequence_new(NULL);
	g_queue_init(&e->fifo[0]);
	g_queue_init(&e->fifo[1]);
	*priv = e;
	return 0;
}

void sfs_elv_fini(void *priv)
{
	struct elv *e = priv;
	GSequenceIter *it = g_sequence_get_begin_iter(e->sorted);

	for (; !g_sequence_iter_is_end(it); it = g_sequence_iter_next(it))
		g_free(g_sequence_get(it));
	g_sequence_free(e->sorted);
	g_free(e);
}

void sfs_elv_add(void *priv, struct sfs_sched_node *n)
{
	struct elv *e = priv;
	double ms = n->r.io.op == SFS_IO_READ ? e->p.read_expire_ms
					      : e->p.write_expire_ms;

	n->r.deadline_ns = n->r.arrival_ns + (sfs_ns_t)(ms * 1e6);
	n->pos = g_sequence_insert_sorted(e->sorted, n, elv_cmp, NULL);
	g_queue_push_tail_link(&e->fifo[n->r.io.op], &n->link);
}

/* The expired request with the earliest deadline, or NULL. */
static struct sfs_sched_node *elv_expired(struct elv *e, sfs_ns_t now)
{
	struct sfs_sched_node *best = NULL;

	for (int op = 0; op < 2; op++) {
		struct sfs_sched_node *n = sfs_sched_node_of(e->fifo[op].head);

		if (n && n->r.deadline_ns <= now &&
		    (!best || n->r.deadline_ns < best->r.deadline_ns))
			best = n;
	}
	return best;
}

/* C-LOOK: lowest offset at or after head_off, else the lowest. */
static struct sfs_sched_node *elv_next(struct elv *e, uint64_t head_off)
{
	struct sfs_sched_node probe = {.r = {.io = {.off_bytes = head_off}}};
	GSequenceIter *it = g_sequence_search(e->sorted, &probe, elv_cmp, NULL);

	if (g_sequence_iter_is_end(it))
		it = g_sequence_get_begin_iter(e->sorted);
	return g_sequence_get(it);
}

static void elv_unqueue(struct elv *e, struct sfs_sched_node *n)
{
	g_queue_unlink(&e->fifo[n->r.io.op], &n->link);
	g_sequence_remove(n->pos); /* no destroy func: the door frees n */
}

/* May q join a run of n's op (and, for cfq, of n's stream)? */
static bool elv_mergeable(const struct elv *e, const struct sfs_sched_node *n,
			  const struct sfs_sched_node *q)
{
	return q->r.io.op == n->r.io.op &&
	       (!e->by_stream || q->r.io.stream == n->r.io.stream ||
		(e->writes_shared && n->r.io.op == SFS_IO_WRITE));
}

/* Find a queued node like n ending at start; NULL if none fits in room. */
static struct sfs_sched_node *elv_before(struct elv *e, GSequenceIter *it,
					 const struct sfs_sched_node *n,
					 uint64_t start, uint64_t room)
{
	while (!g_sequence_iter_is_begin(it)) {
		struct sfs_sched_node *p;

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
static struct sfs_sched_node *elv_after(struct elv *e, GSequenceIter *it,
					const struct sfs_sched_node *n,
					uint64_t end, uint64_t room)
{
	for (it = g_sequence_iter_next(it); !g_sequence_iter_is_end(it);
	     it = g_sequence_iter_next(it)) {
		struct sfs_sched_node *q = g_sequence_get(it);

		if (q->r.io.off_bytes > end)
			break;
		if (elv_mergeable(e, n, q) && q->r.io.off_bytes == end &&
		    q->r.io.len_bytes <= room)
			return q;
	}
	return NULL;
}

void sfs_elv_dispatch(void *priv, uint64_t head_off, sfs_ns_t now,
		      GPtrArray *run, bool *expired)
{
	struct elv *e = priv;
	struct sfs_sched_node *n = elv_expired(e, now), *first, *last, *x;
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

size_t sfs_elv_queued(const void *priv)
{
	const struct elv *e = priv;

	return e->fifo[0].length + e->fifo[1].length;
}

static const struct sfs_knob elv_knobs[] = {
    SFS_SCHED_MAX_REQ_KNOB(struct elv_params, max_req),
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

const struct sfs_sched_ops sfs_sched_elevator_ops = {
    .name = "elevator",
    .help = "C-LOOK by offset, merging contiguous requests, with read and "
	    "write deadlines",
    .knobs = elv_knobs,
    .params_size = sizeof(struct elv_params),
    .init = sfs_elv_init,
    .fini = sfs_elv_fini,
    .add = sfs_elv_add,
    .dispatch = sfs_elv_dispatch,
    .queued = sfs_elv_queued,
};
