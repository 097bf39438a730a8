/*
 * sched.h - the I/O scheduler: a queue between whoever submits requests and
 * the device model (models/device/).
 *
 * A scheduler is an ops table (struct sfs_sched_ops below, one file per
 * scheduler in models/sched/, listed in models/sched/registry.c) chosen by
 * name, like a device model:
 *   noop      first come, first served; a request is merged with the ones
 *             queued right after it when they continue it (same op,
 *             contiguous), up to max_req.
 *   elevator  C-LOOK: the queued request at or after the head's position
 *             with the lowest offset goes next (wrapping to the lowest
 *             offset); contiguous requests of the same op around it are
 *             merged up to max_req (default 512 KiB: Linux 2.6.32's
 *             max_sectors_kb).  Every request has a deadline
 *             (read_expire_ms, write_expire_ms after arrival); once the
 *             oldest one is past it, it goes next, so nothing starves.
 *   cfq       per-process time slices after Linux's CFQ: a batch is ordered
 *             as by the elevator, merged only within one stream
 *             (sfs_io_req.stream); the slices themselves (slice_sync_ms,
 *             slice_idle_ms) are applied by the timing device, which reads
 *             them with sfs_sched_slices (timedev.h, doc/device-models.md).
 *             sync_writes=off: writes are asynchronous, as Linux submitted
 *             O_DIRECT writes before 2.6.29: they are not sliced and merge
 *             across processes, in the one queue CFQ keeps for them.
 *
 *   sfs_sched_new("elevator,max_req=256K", &s, &err)
 *   sfs_sched_add(s, &req, arrival_ns, cookie)       reads and writes only
 *   while (sfs_sched_dispatch_next(s, head_off, now, &d) == 0)
 *           ... d.req is the merged request, d.orig[0..d.n_orig) it covers
 *   sfs_sched_free(s)
 *
 * The scheduler only orders and merges: it moves no data and reads no clock.
 * Not thread-safe: the caller serialises (timedev holds its lock).
 */
#ifndef SFS_SCHED_H
#define SFS_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <glib.h>

#include "blockdev.h"
#include "format.h"

/* A queued request as submitted. */
struct sfs_sched_req {
	struct sfs_io_req io;
	sfs_ns_t arrival_ns;
	sfs_ns_t deadline_ns; /* arrival + the op's expiry */
	uint64_t seq;	      /* submission order */
	void *cookie;	      /* the submitter's, untouched */
};

/* What dispatch_next hands out: one device request covering n_orig. */
struct sfs_sched_dispatch {
	struct sfs_io_req req;		  /* merged: cat of the first */
	const struct sfs_sched_req *orig; /* in offset order; valid until
					     the next dispatch or free */
	size_t n_orig;
	bool expired; /* chosen for its deadline */
};

struct sfs_sched_counters {
	uint64_t added;	     /* requests queued */
	uint64_t dispatched; /* device requests handed out */
	uint64_t merges;     /* requests merged into another's dispatch */
	uint64_t expired;    /* dispatches chosen because of a deadline */
};

struct sfs_sched;

/*
 * Make a scheduler from "NAME[,key=value...]".  -EINVAL with a one-line
 * message (valid names or keys) on a bad spec.  Free with sfs_sched_free,
 * which drops any request still queued.
 */
int sfs_sched_new(const char *spec, struct sfs_sched **out, char **err);
void sfs_sched_free(struct sfs_sched *s);

/* Queue a read or write (-EINVAL for a flush or an empty request). */
int sfs_sched_add(struct sfs_sched *s, const struct sfs_io_req *req,
		  sfs_ns_t arrival_ns, void *cookie);
bool sfs_sched_empty(const struct sfs_sched *s);
size_t sfs_sched_queued(const struct sfs_sched *s);

/*
 * Hand out the next device request for a head at head_off at time now.
 * 0, or -ENOENT when the queue is empty.
 */
int sfs_sched_dispatch_next(struct sfs_sched *s, uint64_t head_off,
			    sfs_ns_t now, struct sfs_sched_dispatch *out);

/* Time slices of a per-stream scheduler. */
struct sfs_sched_slices {
	sfs_ns_t slice_sync_ns; /* service a stream gets per slice */
	sfs_ns_t slice_idle_ns; /* idle gap that ends every slice */
	bool sync_writes;	/* a process's writes are its own sync
				   requests; false: asynchronous, in one
				   queue shared by all (Linux before 2.6.29) */
};

/* 0 and *out for a scheduler with per-stream slices (cfq); else -ENOENT. */
int sfs_sched_slices(const struct sfs_sched *s, struct sfs_sched_slices *out);

void sfs_sched_counters(const struct sfs_sched *s,
			struct sfs_sched_counters *out);
const char *sfs_sched_name(const struct sfs_sched *s);
struct sfs_knob; /* devmodel.h */
/* The knob table of the scheduler called name (key == NULL ends it), or
 * NULL if there is none: lets option parsers recognise its knobs. */
const struct sfs_knob *sfs_sched_knobs(const char *name);
/* The i-th scheduler's name (i = 0, 1, ... until NULL) and its one-line
 * help in *help_out (may be NULL): for the manual pages. */
const char *sfs_sched_nth(unsigned i, const char **help_out);
/* Print the schedulers and their knobs. */
void sfs_sched_list(FILE *out);

/* ---- for the schedulers themselves (models/sched/<name>.c) ---- */

/*
 * A queued request as a scheduler holds it.  The door allocates it in
 * sfs_sched_add (r filled in except deadline_ns) and frees it once it has
 * been dispatched; in between it belongs to the scheduler.
 */
struct sfs_sched_node {
	struct sfs_sched_req r;
	GSequenceIter *pos; /* the scheduler's: e.g. its place in a sorted
			       sequence */
	GList link;	    /* place in a FIFO (GQueue with embedded links) */
};

/* The node whose link is l (NULL for NULL). */
static inline struct sfs_sched_node *sfs_sched_node_of(GList *l)
{
	return l ? (struct sfs_sched_node *)(void *)((char *)l -
						     offsetof(
							 struct sfs_sched_node,
							 link))
		 : NULL;
}

/*
 * A scheduler.  The door (models/sched/registry.c) parses the spec into a
 * params struct of params_size bytes with the knob table (devmodel.h),
 * then calls init; every other verb gets the private state init made.
 * Only the door calls these.
 */
struct sfs_sched_ops {
	const char *name;
	const char *help; /* one line, for --list-devices and the man page */
	const struct sfs_knob *knobs; /* key == NULL ends it */
	size_t params_size;
	/* Make the private state from the parsed knobs (params outlives
	 * it); 0, or -EINVAL and *err (may be NULL). */
	int (*init)(const void *params, void **priv, char **err);
	/* Free priv and any node still queued. */
	void (*fini)(void *priv);
	/* Take n; set n->r.deadline_ns. */
	void (*add)(void *priv, struct sfs_sched_node *n);
	/*
	 * Unqueue the next run to dispatch and append its nodes to run in
	 * offset order: one op, contiguous, within max_req unless a single
	 * request is larger.  Set *expired if a deadline chose it.  Called
	 * only when the queue is not empty.
	 */
	void (*dispatch)(void *priv, uint64_t head_off, sfs_ns_t now,
			 GPtrArray *run, bool *expired);
	size_t (*queued)(const void *priv);
	/* Optional: the slice knobs of a per-stream scheduler. */
	void (*slices)(const void *params, struct sfs_sched_slices *out);
};

/*
 * The max_req knob every scheduler has (devmodel.h's struct sfs_knob), for
 * a uint64_t member of its params struct ptype.
 */
#define SFS_SCHED_MAX_REQ_KNOB(ptype, member)                                  \
	{                                                                      \
		.key = "max_req", .type = SFS_KNOB_SIZE,                       \
		.offset = offsetof(ptype, member), .def = "512K", .min = 512,  \
		.max = 1ULL << 30,                                             \
		.help = "bytes, largest merged request (Linux 2.6.32 "         \
			"max_sectors_kb: 512K)"                                \
	}

/* The schedulers (models/sched/<name>.c). */
extern const struct sfs_sched_ops sfs_sched_noop_ops;
extern const struct sfs_sched_ops sfs_sched_elevator_ops;
extern const struct sfs_sched_ops sfs_sched_cfq_ops;

#endif /* SFS_SCHED_H */
