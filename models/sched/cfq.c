/*
 * cfq.c - the cfq I/O scheduler (sched.h): per-process time slices after
 * Linux's CFQ, over the elevator (sched_priv.h).
 *
 * cfq orders a batch as the elevator does but merges only requests of the
 * same stream (one process's queue); with sync_writes=off writes merge
 * across streams, as in the one async queue CFQ kept for them.  Its time
 * slices are not applied here but by the timing device, which asks for
 * them with sfs_sched_slices.
 */
#include <errno.h>
#include <stddef.h>

#include <glib.h>

#include "devmodel.h" /* knob tables */
#include "sched.h"
#include "sched_priv.h"

struct cfq_params {
	struct elv_params elv; /* ordering within a batch */
	double slice_sync_ms;  /* service time a stream holds the disk */
	double slice_idle_ms;  /* wait for the slice owner's next request */
	bool sync_writes;      /* process writes are sync (sliced) */
};

static int cfq_init(const void *params, void **priv, char **err)
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
	sfs_elv_init(&p->elv, priv, err);
	e = *priv;
	e->by_stream = true;
	e->writes_shared = !p->sync_writes;
	return 0;
}

static void cfq_slices(const void *params, struct sfs_sched_slices *out)
{
	const struct cfq_params *p = params;

	out->slice_sync_ns = (sfs_ns_t)(p->slice_sync_ms * 1e6);
	out->slice_idle_ns = (sfs_ns_t)(p->slice_idle_ms * 1e6);
	out->sync_writes = p->sync_writes;
}

/*
 * CFQ's defaults as in 2.6.18-2.6.32 (block/cfq-iosched.c): fifo_expire_sync
 * 125 ms and fifo_expire_async 250 ms stand in for the read and write
 * deadlines; slice_sync 100 ms; slice_idle 8 ms.
 */
static const struct sfs_knob cfq_knobs[] = {
    SFS_SCHED_MAX_REQ_KNOB(struct cfq_params, elv.max_req),
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

const struct sfs_sched_ops sfs_sched_cfq_ops = {
    .name = "cfq",
    .help = "per-process time slices (timing device, doc/device-models.md "
	    "8.1); batches ordered as the elevator, merged within a process",
    .knobs = cfq_knobs,
    .params_size = sizeof(struct cfq_params),
    .init = cfq_init,
    .fini = sfs_elv_fini,
    .add = sfs_elv_add,
    .dispatch = sfs_elv_dispatch,
    .queued = sfs_elv_queued,
    .slices = cfq_slices,
};
