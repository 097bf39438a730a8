/*
 * noop.c - the noop I/O scheduler (sched.h): first come, first served.
 *
 * One FIFO of sfs_sched_node.  At dispatch the head goes, taking along the
 * requests queued right after it while each continues the run (same op,
 * starting where the run ends) and the run stays within max_req bytes.
 * Requests have no deadline.
 */
#include <stddef.h>

#include <glib.h>

#include "devmodel.h" /* knob tables */
#include "sched.h"

struct noop_params {
	uint64_t max_req; /* bytes */
};

struct noop {
	struct noop_params p;
	GQueue fifo; /* of sfs_sched_node, by link */
};

static bool noop_continues(const struct sfs_sched_node *a,
			   const struct sfs_sched_node *b)
{
	return a->r.io.op == b->r.io.op &&
	       a->r.io.off_bytes + a->r.io.len_bytes == b->r.io.off_bytes;
}

static int noop_init(const void *params, void **priv, char **err)
{
	struct noop *q = g_new0(struct noop, 1);

	q->p = *(const struct noop_params *)params;
	g_queue_init(&q->fifo);
	*priv = q;
	return 0;
}

static void noop_fini(void *priv)
{
	struct noop *q = priv;
	GList *l;

	while ((l = g_queue_pop_head_link(&q->fifo)))
		g_free(sfs_sched_node_of(l));
	g_free(q);
}

static void noop_add(void *priv, struct sfs_sched_node *n)
{
	struct noop *q = priv;

	n->r.deadline_ns = G_MAXUINT64;
	g_queue_push_tail_link(&q->fifo, &n->link);
}

static void noop_dispatch(void *priv, uint64_t head_off, sfs_ns_t now,
			  GPtrArray *run, bool *expired)
{
	struct noop *q = priv;
	struct sfs_sched_node *n =
	    sfs_sched_node_of(g_queue_pop_head_link(&q->fifo));
	uint64_t total = n->r.io.len_bytes;

	g_ptr_array_add(run, n);
	for (;;) {
		struct sfs_sched_node *next = sfs_sched_node_of(q->fifo.head);

		if (!next || !noop_continues(n, next) ||
		    total + next->r.io.len_bytes > q->p.max_req)
			break;
		g_queue_pop_head_link(&q->fifo);
		total += next->r.io.len_bytes;
		g_ptr_array_add(run, next);
		n = next;
	}
}

static size_t noop_queued(const void *priv)
{
	const struct noop *q = priv;

	return q->fifo.length;
}

static const struct sfs_knob noop_knobs[] = {
    SFS_SCHED_MAX_REQ_KNOB(struct noop_params, max_req),
    {.key = NULL},
};

const struct sfs_sched_ops sfs_sched_noop_ops = {
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
