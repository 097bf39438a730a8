/*
 * sched_priv.h - the elevator's internals, for the schedulers that build on
 * it (cfq.c).  Not for the engine: it reaches a scheduler only through
 * sched.h's door.
 *
 * The elevator keeps each queued node in two places: a sequence sorted by
 * (offset, seq) for C-LOOK and merging (node->pos), and a FIFO per op
 * (arrival order) whose head is the oldest and so the first to expire.
 */
#ifndef SFS_SCHED_PRIV_H
#define SFS_SCHED_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "sched.h"

struct elv_params {
	uint64_t max_req;      /* bytes */
	double read_expire_ms; /* deadline after arrival */
	double write_expire_ms;
};

struct elv {
	struct elv_params p;
	GSequence *sorted;  /* of sfs_sched_node, by (offset, seq) */
	GQueue fifo[2];	    /* [SFS_IO_READ], [SFS_IO_WRITE]: arrival order */
	bool by_stream;	    /* cfq: merge only within one stream */
	bool writes_shared; /* cfq,sync_writes=off: writes merge across
			       streams (one async queue) */
};

/* The elevator's verbs (elevator.c), priv being a struct elv. */
int sfs_elv_init(const void *params, void **priv, char **err);
void sfs_elv_fini(void *priv);
void sfs_elv_add(void *priv, struct sfs_sched_node *n);
void sfs_elv_dispatch(void *priv, uint64_t head_off, sfs_ns_t now,
		      GPtrArray *run, bool *expired);
size_t sfs_elv_queued(const void *priv);

#endif /* SFS_SCHED_PRIV_H */
