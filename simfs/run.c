/*
 * run.c - the engine in virtual time (run.h): a discrete-event simulation
 * of a workload's clients, the engine's flusher and journal, the CPU and
 * the modelled device.
 *
 * Actors and their scripts.  An actor (a client, the flusher, the journal)
 * is idle, or busy with one script: the record of one engine call, made
 * while the engine carried the call out (at once, in full, under its own
 * lock), of what it would have waited for:
 *     [CPU burst] [stage 0: requests] [stage 1: requests] ...
 * A stage's requests were submitted together (a batch, or one request);
 * the next stage starts when all of them are done (timedev.h's sink: a
 * `wait` closes a stage).  Playing a script: the burst on the first free
 * of cpus= processors, then each stage's requests queued at the device at
 * the time the stage starts.
 *
 * Events, in (time, sequence) order, so that the same run is the same run:
 *     READY(actor)     a client's think time is over / its last script
 *                      ended: take its next operation and carry it out
 *     CPU_DONE(actor)  its burst is over: start stage 0
 *     DEV_DONE         the device finished a request (merged: several)
 *     TIMER(actor)     the flusher's or the journal's deadline
 * After each event the device, when free, takes the scheduler's next
 * request (sfs_timedev_dispatch), and the flusher and the journal run if
 * their deadline has come and they are idle.
 *
 * Invariants:
 *  1. the clock only moves forward, to the time of the event handled;
 *  2. engine calls happen only at event times, one at a time, so an
 *     operation is atomic; what overlaps is its time, not its effects;
 *  3. every request an actor submitted completes exactly once, and its
 *     stage completes after all of its requests;
 *  4. a flush is served only when every request submitted before it is
 *     done (a cache flush covers what was written before it).
 * Group commit: a commit is in flight from the engine call that started
 * it until the end of that call's script; an fsync that needs a commit
 * meanwhile gets -EINPROGRESS (fs.h) and its client waits for that
 * commit, then calls again.
 * The approximations this makes are in doc/internals.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include <glib.h>

#include "clock.h"
#include "cpumodel.h"
#include "pathrun.h"
#include "run.h"
#include "timedev.h"

enum ev_type { EV_READY = 0, EV_CPU_DONE, EV_DEV_DONE, EV_TIMER };
enum act_kind { ACT_CLIENT = 0, ACT_FLUSHER, ACT_JOURNAL };

struct actor;

/* One submitted request until the device has served it. */
struct dreq {
	struct sfs_io_req io;
	struct actor *a;
	struct stage *st;
	uint64_t seq; /* submission order (invariant 4) */
};

struct stage {
	GPtrArray *reqs; /* struct dreq, until submitted to the device */
	size_t pending;	 /* submitted and not done */
};

struct handle {
	sfs_ino_t ino;
	uint64_t pos;
	int flags;
	char *path; /* as opened, for messages */
};

static void handle_free(gpointer p)
{
	struct handle *h = p;

	g_free(h->path);
	g_free(h);
}

/* What an op names, for a message: its path, or its handle's. */
static const char *op_what(const struct actor *a);

struct actor {
	enum act_kind kind;
	unsigned id;	 /* client number */
	uint32_t stream; /* sfs_io_req.stream of its requests */
	bool busy;	 /* a script is playing */
	/* the script */
	GPtrArray *stages; /* struct stage */
	guint cur;	   /* the stage playing */
	bool open;	   /* the last stage takes more requests */
	sfs_ns_t cpu_ns;   /* the burst before stage 0 */
	bool commits;	   /* its call started a commit */
	/* a client's operation */
	struct sfs_wop op;
	char *path, *path2; /* owned copies of op.path, op.path2 */
	void *data;	    /* owned copy of op.data */
	bool have_op;	    /* op taken, waiting for its think time */
	bool retry;	    /* fsync waiting for the commit in flight */
	bool done, at_barrier;
	bool phase_pending; /* phase_name starts with the next op */
	sfs_ns_t op_start;
	int rc;
	uint64_t bytes;
	long phase; /* index in the result's phases, or -1 (the
		       array moves as phases are added) */
	char phase_name[64];
	GHashTable *fds;     /* int -> struct handle */
	sfs_ns_t timer_at;   /* kernel actors: the TIMER event pending, or 0 */
	sfs_ns_t rest_until; /* kernel actors: not before (kernel_check) */
};

struct event {
	sfs_ns_t t;
	uint64_t seq;
	enum ev_type type;
	struct actor *a;
	void *p; /* DEV_DONE: struct served */
};

struct served {
	struct dreq *flush; /* a flush, or NULL */
	GPtrArray *reqs;    /* struct dreq */
	sfs_ns_t busy_ns;   /* its service time */
};

struct run {
	struct sfs_fs *fs;
	struct sfs_bdev *bd;
	struct sfs_clock *clock;
	struct sfs_workload *w;
	const struct sfs_run_opts *o;
	struct sfs_wl_result *res;
	struct sfs_run_counters *cnt;
	struct sfs_cpumodel *cpu;
	sfs_ns_t t0, now;
	/* events: a binary heap on (t, seq) */
	GArray *heap;
	uint64_t ev_seq;
	/* actors */
	unsigned nclients;
	struct actor *clients;
	struct actor flusher, journal;
	struct actor *cur; /* the actor whose engine call is running */
	/* the device */
	bool dev_busy;
	GQueue flushes; /* struct dreq, waiting for invariant 4 */
	uint64_t req_seq;
	GTree *inflight; /* seq -> dreq submitted and not done (invariant 4) */
	uint64_t depth;	 /* requests at the device (queued + served) */
	sfs_ns_t depth_t;
	double depth_area;
	/* cpus */
	sfs_ns_t *cpu_free;
	unsigned ncpus;
	/* group commit */
	struct actor *committer; /* whose script carries the commit, or NULL */
	GQueue commit_waiters;	 /* struct actor */
	/* buffers */
	uint8_t *buf;
	size_t buf_len;
	int fatal;
	char *fatal_msg;
	bool stop;	   /* end the run now (a fatal error) */
	sfs_ns_t still_at; /* the instant the last ops ran at */
	uint64_t still_ops; /* ops run at that instant */
};

/* Operations at one instant before the run calls time stuck. */
#define RUN_STILL_OPS 2000000u

/* ---- the event heap ---- */

static bool ev_before(const struct event *a, const struct event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void ev_push(struct run *r, sfs_ns_t t, enum ev_type type,
		    struct actor *a, void *p)
{
	struct event e = {t, r->ev_seq++, type, a, p};
	guint i;

	g_array_append_val(r->heap, e);
	i = r->heap->len - 1;
	while (i > 0) {
		guint up = (i - 1) / 2;
		struct event *ei = &g_array_index(r->heap, struct event, i);
		struct event *eu = &g_array_index(r->heap, struct event, up);
		if (!ev_before(ei, eu))
			break;
		struct event tmp = *ei;
		*ei = *eu;
		*eu = tmp;
		i = up;
	}
}

static bool ev_pop(struct run *r, struct event *out)
{
	guint n = r->heap->len, i = 0;

	if (!n)
		return false;
	*out = g_array_index(r->heap, struct event, 0);
	g_array_index(r->heap, struct event, 0) =
	    g_array_index(r->heap, struct event, n - 1);
	g_array_set_size(r->heap, n - 1);
	n--;
	for (;;) {
		guint l = 2 * i + 1, m = i;
		if (l < n &&
		    ev_before(&g_array_index(r->heap, struct event, l),
			      &g_array_index(r->heap, struct event, m)))
			m = l;
		if (l + 1 < n &&
		    ev_before(&g_array_index(r->heap, struct event, l + 1),
			      &g_array_index(r->heap, struct event, m)))
			m = l + 1;
		if (m == i)
			break;
		struct event tmp = g_array_index(r->heap, struct event, i);
		g_array_index(r->heap, struct event, i) =
		    g_array_index(r->heap, struct event, m);
		g_array_index(r->heap, struct event, m) = tmp;
		i = m;
	}
	return true;
}

/* ---- recording a script: the timing device's sink ---- */

static struct stage *stage_new(void)
{
	struct stage *st = g_new0(struct stage, 1);

	st->reqs = g_ptr_array_new();
	return st;
}

static void stage_free(gpointer p)
{
	struct stage *st = p;

	g_ptr_array_free(st->reqs, TRUE);
	g_free(st);
}

static void sink_submit(void *arg, const struct sfs_io_req *req)
{
	struct run *r = arg;
	struct actor *a = r->cur;
	struct dreq *d;

	if (!a)
		return; /* outside an actor's call: not timed (cannot happen
			   while the sink is installed, see run_actor_call) */
	if (!a->open) {
		g_ptr_array_add(a->stages, stage_new());
		a->open = true;
	}
	d = g_new0(struct dreq, 1);
	d->io = *req;
	d->a = a;
	d->st = g_ptr_array_index(a->stages, a->stages->len - 1);
	g_ptr_array_add(d->st->reqs, d);
	r->cnt->dev_requests++;
}

static void sink_wait(void *arg)
{
	struct run *r = arg;

	if (r->cur)
		r->cur->open = false;
}

static const struct sfs_timedev_sink run_sink = {
    .submit = sink_submit,
    .wait = sink_wait,
};

/* ---- group commit (fs.h, struct sfs_fs_driver) ---- */

static bool drv_commit_busy(void *arg)
{
	struct run *r = arg;

	return r->committer != NULL;
}

static void drv_commit_started(void *arg)
{
	struct run *r = arg;

	r->cnt->commits_seen++;
	if (r->cur)
		r->cur->commits = true;
}

static const struct sfs_fs_driver run_driver = {
    .commit_busy = drv_commit_busy,
    .commit_started = drv_commit_started,
};

/* ---- the device ---- */

static void depth_add(struct run *r, int64_t d)
{
	r->depth_area += (double)r->depth * (double)(r->now - r->depth_t);
	r->depth_t = r->now;
	r->depth = (uint64_t)((int64_t)r->depth + d);
	r->cnt->max_queue = MAX(r->cnt->max_queue, r->depth);
}

static gint seq_cmp(gconstpointer a, gconstpointer b, gpointer unused)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	(void)unused;
	return x < y ? -1 : x > y;
}

/* Is every request submitted before the flush d done?  (invariant 4) */
static bool flush_ready(struct run *r, struct dreq *d)
{
	GTreeNode *first = g_tree_node_first(r->inflight);

	return !first || *(const uint64_t *)g_tree_node_key(first) >= d->seq;
}

/* The device is free: serve what comes next. */
static void dev_kick(struct run *r)
{
	struct sfs_timedev_served sv;
	struct served *s;

	if (r->dev_busy)
		return;
	struct dreq *f = g_queue_peek_head(&r->flushes);
	if (f && flush_ready(r, f)) {
		g_queue_pop_head(&r->flushes);
		s = g_new0(struct served, 1);
		s->flush = f;
		r->dev_busy = true;
		sfs_ns_t done = sfs_timedev_serve_flush(r->bd, r->now);
		s->busy_ns = done - MIN(done, r->now);
		ev_push(r, done, EV_DEV_DONE, NULL, s);
		return;
	}
	if (sfs_timedev_dispatch(r->bd, r->now, &sv) != 0)
		return;
	s = g_new0(struct served, 1);
	s->reqs = g_ptr_array_sized_new((guint)sv.n_total);
	for (size_t i = 0; i < sv.n_total; i++)
		g_ptr_array_add(s->reqs, sv.more ? sv.more[i] : sv.cookies[i]);
	g_free(sv.more);
	r->dev_busy = true;
	s->busy_ns = sv.done_ns - MIN(sv.done_ns, r->now);
	ev_push(r, sv.done_ns, EV_DEV_DONE, NULL, s);
}

static void actor_stage_start(struct run *r, struct actor *a);
static void actor_script_end(struct run *r, struct actor *a);

/* A request is done: its stage may be, and then the actor moves on. */
static void dreq_done(struct run *r, struct dreq *d)
{
	struct stage *st = d->st;
	struct actor *a = d->a;

	g_tree_remove(r->inflight, &d->seq);
	depth_add(r, -1);
	g_free(d);
	if (--st->pending == 0) {
		a->cur++;
		actor_stage_start(r, a);
	}
}

static void dev_done(struct run *r, struct served *s)
{
	struct dreq *first = s->flush ? s->flush
			     : s->reqs && s->reqs->len
				 ? g_ptr_array_index(s->reqs, 0)
				 : NULL;
	/* the device's time goes to the phase of whoever asked first; the
	 * engine's own requests to the phase entered last */
	struct sfs_wl_phase *ph =
	    first && first->a->kind == ACT_CLIENT && first->a->phase >= 0
		? &r->res->phases[first->a->phase]
		: NULL;
	if (!ph && r->res->nphases)
		ph = &r->res->phases[r->res->nphases - 1];
	if (ph)
		ph->dev_busy_ns += s->busy_ns;
	r->dev_busy = false;
	if (s->flush)
		dreq_done(r, s->flush);
	for (guint i = 0; s->reqs && i < s->reqs->len; i++)
		dreq_done(r, g_ptr_array_index(s->reqs, i));
	if (s->reqs)
		g_ptr_array_free(s->reqs, TRUE);
	g_free(s);
}

/* Submit the requests of a's current stage, or end its script. */
static void actor_stage_start(struct run *r, struct actor *a)
{
	while (a->cur < a->stages->len) {
		struct stage *st = g_ptr_array_index(a->stages, a->cur);

		if (!st->reqs->len) {
			a->cur++;
			continue;
		}
		st->pending = st->reqs->len;
		for (guint i = 0; i < st->reqs->len; i++) {
			struct dreq *d = g_ptr_array_index(st->reqs, i);

			d->seq = r->req_seq++;
			g_tree_insert(r->inflight, &d->seq, d);
			depth_add(r, 1);
			if (d->io.op == SFS_IO_FLUSH)
				g_queue_push_tail(&r->flushes, d);
			else
				sfs_timedev_queue(r->bd, &d->io, r->now, d);
		}
		g_ptr_array_set_size(st->reqs, 0);
		dev_kick(r);
		return;
	}
	actor_script_end(r, a);
}

/* ---- CPU ---- */

static void actor_play(struct run *r, struct actor *a)
{
	a->busy = true;
	a->cur = 0;
	if (a->cpu_ns) {
		unsigned best = 0;
		for (unsigned i = 1; i < r->ncpus; i++)
			if (r->cpu_free[i] < r->cpu_free[best])
				best = i;
		sfs_ns_t start = MAX(r->now, r->cpu_free[best]);
		r->cpu_free[best] = start + a->cpu_ns;
		r->cnt->cpu_ns += a->cpu_ns;
		if (a->kind == ACT_CLIENT && a->phase >= 0)
			r->res->phases[a->phase].cpu_ns += a->cpu_ns;
		ev_push(r, start + a->cpu_ns, EV_CPU_DONE, a, NULL);
		return;
	}
	actor_stage_start(r, a);
}

/* ---- carrying out a client's operation ---- */

static int resolve(struct run *r, const char *path, sfs_ino_t *ino,
		   uint64_t *steps)
{
	struct sfs_attr at;
	sfs_ino_t cur = SFS_ROOT_INO;
	char **parts;
	int rc = 0;

	if (!path)
		return -EINVAL;
	parts = g_strsplit(path, "/", -1);
	for (char **p = parts; *p; p++) {
		if (!**p || strcmp(*p, ".") == 0)
			continue;
		rc = sfs_lookup(r->fs, cur, *p, &at);
		(*steps)++;
		if (rc)
			break;
		cur = at.ino;
	}
	g_strfreev(parts);
	*ino = cur;
	return rc;
}

/* The directory holding path, and path's last name (in *name, g_free). */
static int resolve_parent(struct run *r, const char *path, sfs_ino_t *dir,
			  char **name, uint64_t *steps)
{
	const char *slash;
	int rc;

	*name = NULL;
	if (!path || !*path)
		return -ENOENT;
	slash = strrchr(path, '/');
	if (!slash) {
		*dir = SFS_ROOT_INO;
		*name = g_strdup(path);
		return 0;
	}
	char *d = g_strndup(path, (gsize)(slash - path));
	rc = resolve(r, d, dir, steps);
	g_free(d);
	if (rc == 0)
		*name = g_strdup(slash + 1);
	return rc;
}

static uint8_t *run_buf(struct run *r, size_t len)
{
	if (len > r->buf_len) {
		g_free(r->buf);
		r->buf = g_try_malloc(len);
		r->buf_len = r->buf ? len : 0;
	}
	return r->buf;
}

static int rd_count(void *ctx, const char *name, size_t name_len, sfs_ino_t ino,
		    uint8_t ftype, uint64_t next_off)
{
	(void)name, (void)name_len, (void)ino, (void)ftype, (void)next_off;
	(*(uint64_t *)ctx)++;
	return 0;
}

static int do_open(struct run *r, struct actor *a, uint64_t *steps)
{
	const struct sfs_wop *op = &a->op;
	struct sfs_attr at;
	sfs_ino_t dir;
	char *name = NULL;
	int rc;

	rc = resolve_parent(r, a->path, &dir, &name, steps);
	if (rc)
		goto out;
	rc = sfs_lookup(r->fs, dir, name, &at);
	(*steps)++;
	if (rc == 0 && (op->flags & O_CREAT) && (op->flags & O_EXCL))
		rc = -EEXIST;
	else if (rc == -ENOENT && (op->flags & O_CREAT))
		rc = sfs_mknod(r->fs, dir, name,
			       SFS_S_IFREG |
				   (op->mode ? op->mode & 07777 : 0644),
			       0, 0, 0, &at);
	if (rc == 0 && (op->flags & O_DIRECTORY) &&
	    (at.mode & 0xF000) != SFS_S_IFDIR)
		rc = -ENOTDIR;
	if (rc == 0)
		rc = sfs_open(r->fs, at.ino, (int)op->flags);
	if (rc == 0) {
		struct handle *h = g_new0(struct handle, 1);
		h->ino = at.ino;
		h->flags = (int)op->flags;
		h->path = g_strdup(a->path);
		struct handle *old =
		    g_hash_table_lookup(a->fds, GINT_TO_POINTER(op->fd));
		if (old) /* a handle number reused without a close */
			sfs_release(r->fs, old->ino);
		g_hash_table_insert(a->fds, GINT_TO_POINTER(op->fd), h);
	}
out:
	g_free(name);
	return rc;
}

/* Carry out a's operation through the engine; the result, bytes moved. */
static int do_op(struct run *r, struct actor *a, uint64_t *bytes,
		 uint64_t *steps)
{
	const struct sfs_wop *op = &a->op;
	struct handle *h = NULL;
	struct sfs_attr at;
	sfs_ino_t ino, dir, dir2;
	char *name = NULL, *name2 = NULL;
	int rc = 0;

	*bytes = 0;
	switch (op->type) {
	case SFS_WOP_CLOSE:
	case SFS_WOP_READ:
	case SFS_WOP_WRITE:
	case SFS_WOP_FSYNC:
	case SFS_WOP_FTRUNCATE:
		h = g_hash_table_lookup(a->fds, GINT_TO_POINTER(op->fd));
		if (!h)
			return -EBADF;
		break;
	default:
		break;
	}
	switch (op->type) {
	case SFS_WOP_OPEN:
		return do_open(r, a, steps);
	case SFS_WOP_CLOSE:
		rc = sfs_release(r->fs, h->ino);
		g_hash_table_remove(a->fds, GINT_TO_POINTER(op->fd));
		return rc;
	case SFS_WOP_READ:
	case SFS_WOP_WRITE: {
		struct sfs_ioctx ctx = {
		    .flags = (h->flags & O_DIRECT) ? SFS_IOCTX_DIRECT : 0,
		    .pid = a->stream};
		uint64_t off = op->off == SFS_WOP_OFF_CUR ? h->pos : op->off;
		size_t done = 0;
		uint8_t *buf = run_buf(r, (size_t)op->len);

		if (!buf && op->len)
			return -ENOMEM;
		if (op->type == SFS_WOP_READ) {
			rc = sfs_read_ctx(r->fs, h->ino, off, (size_t)op->len,
					  buf, &ctx, &done);
		} else {
			if ((h->flags & O_APPEND) &&
			    sfs_getattr(r->fs, h->ino, &at) == 0)
				off = at.size;
			if (a->data)
				memcpy(buf, a->data, (size_t)op->len);
			else
				sfs_wl_fill(buf, off, (size_t)op->len,
					    r->o->seed);
			rc = sfs_write_ctx(r->fs, h->ino, off, buf,
					   (size_t)op->len, &ctx, &done);
		}
		*bytes = done;
		h->pos = off + done;
		return rc;
	}
	case SFS_WOP_FSYNC:
		return sfs_fsync(r->fs, h->ino, op->flags & SFS_WOP_DATASYNC);
	case SFS_WOP_FTRUNCATE:
		at.size = op->len;
		return sfs_setattr(r->fs, h->ino, &at, SFS_SET_SIZE, &at);
	case SFS_WOP_STAT:
		return resolve(r, a->path, &ino, steps);
	case SFS_WOP_READDIR: {
		uint64_t n = 0;
		rc = resolve(r, a->path, &ino, steps);
		if (rc == 0)
			rc = sfs_readdir(r->fs, ino, 0, rd_count, &n);
		return rc;
	}
	case SFS_WOP_STATFS: {
		struct sfs_statfs sf;
		return sfs_statfs(r->fs, &sf);
	}
	case SFS_WOP_SYNC:
		return sfs_fs_sync(r->fs);
	case SFS_WOP_CHMOD:
		rc = resolve(r, a->path, &ino, steps);
		if (rc == 0)
			rc = sfs_getattr(r->fs, ino, &at);
		if (rc == 0) {
			at.mode = (at.mode & ~07777u) | (op->mode & 07777);
			rc = sfs_setattr(r->fs, ino, &at, SFS_SET_MODE, &at);
		}
		return rc;
	case SFS_WOP_UNLINK:
	case SFS_WOP_RMDIR:
	case SFS_WOP_MKDIR:
		rc = resolve_parent(r, a->path, &dir, &name, steps);
		if (rc == 0 && op->type == SFS_WOP_UNLINK)
			rc = sfs_unlink(r->fs, dir, name);
		else if (rc == 0 && op->type == SFS_WOP_RMDIR)
			rc = sfs_rmdir(r->fs, dir, name);
		else if (rc == 0)
			rc = sfs_mkdir(r->fs, dir, name,
				       op->mode ? op->mode & 07777 : 0755, 0, 0,
				       &at);
		break;
	case SFS_WOP_RENAME:
		rc = resolve_parent(r, a->path, &dir, &name, steps);
		if (rc == 0)
			rc = resolve_parent(r, a->path2, &dir2, &name2, steps);
		if (rc == 0)
			rc = sfs_rename(r->fs, dir, name, dir2, name2, 0);
		break;
	case SFS_WOP_SYMLINK:
		rc = resolve_parent(r, a->path2, &dir, &name, steps);
		if (rc == 0)
			rc = sfs_symlink(r->fs, dir, name, a->path, 0, 0, &at);
		break;
	case SFS_WOP_LINK:
		rc = resolve(r, a->path, &ino, steps);
		if (rc == 0)
			rc = resolve_parent(r, a->path2, &dir, &name, steps);
		if (rc == 0)
			rc = sfs_link(r->fs, ino, dir, name, &at);
		break;
	default:
		rc = -EINVAL;
		break;
	}
	g_free(name);
	g_free(name2);
	return rc;
}

/* Reset a's script, make a the current actor. */
static void call_begin(struct run *r, struct actor *a,
		       struct sfs_cpu_counts *before)
{
	g_ptr_array_set_size(a->stages, 0);
	a->open = false;
	a->commits = false;
	a->cpu_ns = 0;
	r->cur = a;
	sfs_io_set_stream(a->stream);
	sfs_fs_cpu_counts(r->fs, before);
}

/* End of an engine call: its CPU burst from what the engine counted. */
static void call_end(struct run *r, struct actor *a,
		     const struct sfs_cpu_counts *before, uint64_t calls,
		     uint64_t steps)
{
	struct sfs_cpu_counts after, d;

	sfs_fs_cpu_counts(r->fs, &after);
	sfs_io_set_stream(0);
	r->cur = NULL;
	sfs_cpu_counts_sub(&after, before, &d);
	/* the path walk's lookups are engine calls, but for the CPU they
	 * are a step each of one system call */
	d.calls = calls;
	d.path_steps = steps;
	a->cpu_ns = r->cpu ? sfs_cpumodel_cost(r->cpu, &d) : 0;
	if (a->commits && !r->committer)
		r->committer = a;
}

static void set_fatal(struct run *r, int rc, char *msg)
{
	if (!r->fatal) {
		r->fatal = rc;
		r->fatal_msg = msg;
	} else {
		g_free(msg);
	}
}

/* Enter the phase a's current op starts, if it starts one. */
static void phase_start(struct run *r, struct actor *a)
{
	if (!a->phase_pending)
		return;
	a->phase_pending = false;
	a->phase = sfs_wl_result_enter(r->res, a->phase_name, r->now) -
		   r->res->phases;
}

static void client_execute(struct run *r, struct actor *a)
{
	struct sfs_cpu_counts before;

	if (r->now != r->still_at) {
		r->still_at = r->now;
		r->still_ops = 0;
	} else if (++r->still_ops == RUN_STILL_OPS && !r->fatal) {
		set_fatal(r, -EINVAL,
			  g_strdup_printf(
			      "virtual time stands still: %u operations "
			      "at %.6f s cost nothing (cpu=none on an ideal "
			      "device?); a workload that runs until a time "
			      "never ends that way: give cpu= a model",
			      RUN_STILL_OPS, (double)(r->now - r->t0) / 1e9));
		r->stop = true;
	}
	uint64_t steps = 0, bytes = 0;
	int rc;

	if (!a->retry)
		a->op_start = r->now;
	phase_start(r, a);
	call_begin(r, a, &before);
	rc = do_op(r, a, &bytes, &steps);
	a->retry = rc == -EINPROGRESS;
	if (a->retry)
		r->cnt->fsync_waits++;
	call_end(r, a, &before, 1, steps);
	a->rc = rc;
	a->bytes += bytes;
	r->cnt->engine_ops++;
	actor_play(r, a);
}

static void barrier_check(struct run *r)
{
	unsigned waiting = 0;

	for (unsigned i = 0; i < r->nclients; i++) {
		struct actor *c = &r->clients[i];
		if (!c->done && !c->at_barrier)
			return;
		waiting += c->at_barrier;
	}
	for (unsigned i = 0; waiting && i < r->nclients; i++) {
		struct actor *c = &r->clients[i];
		if (c->at_barrier) {
			c->at_barrier = false;
			phase_start(r, c);
			ev_push(r, r->now, EV_READY, c, NULL);
		}
	}
}

static void client_take(struct actor *a, const struct sfs_wop *op)
{
	g_free(a->path);
	g_free(a->path2);
	g_free(a->data);
	a->op = *op;
	a->path = g_strdup(op->path);
	a->path2 = g_strdup(op->path2);
	a->data = op->data && op->type == SFS_WOP_WRITE
		      ? g_memdup2(op->data, (gsize)op->len)
		      : NULL;
	a->op.path = a->path;
	a->op.path2 = a->path2;
	a->op.data = a->data;
	a->bytes = 0;
}

/* READY: a client takes its next operation (or carries out the one it
 * has, its think time over). */
static void client_ready(struct run *r, struct actor *a)
{
	struct sfs_wop op;
	char *err = NULL;
	int rc;

	if (a->done)
		return;
	if (a->retry || a->have_op) {
		a->have_op = false;
		client_execute(r, a);
		return;
	}
	if (r->o->max_ns && r->now - r->t0 >= r->o->max_ns) {
		a->done = true;
		barrier_check(r);
		return;
	}
	rc = sfs_workload_next(r->w, a->id, r->now - r->t0, &op, &err);
	if (rc < 0) {
		set_fatal(r, rc,
			  g_strdup_printf("client %u: %s", a->id,
					  err ? err : g_strerror(-rc)));
		g_free(err);
		a->done = true;
		barrier_check(r);
		return;
	}
	if (rc == 0) {
		a->done = true;
		barrier_check(r);
		return;
	}
	client_take(a, &op);
	if (op.phase) {
		/* the phase starts when the op does: after its think time,
		 * or when its barrier opens (as --path runs count it) */
		g_strlcpy(a->phase_name, op.phase, sizeof(a->phase_name));
		a->phase_pending = true;
	}
	if (op.type == SFS_WOP_BARRIER) {
		a->at_barrier = true;
		barrier_check(r);
		return;
	}
	if (op.think_ns || op.type == SFS_WOP_THINK) {
		a->have_op = op.type != SFS_WOP_THINK;
		ev_push(r, r->now + op.think_ns, EV_READY, a, NULL);
		return;
	}
	client_execute(r, a);
}

static const char *op_what(const struct actor *a)
{
	const struct handle *h;

	if (a->path)
		return a->path;
	h = g_hash_table_lookup(a->fds, GINT_TO_POINTER(a->op.fd));
	return h && h->path ? h->path : "(handle)";
}

static bool fatal_rc(int rc)
{
	return rc == -ENOSPC || rc == -EIO || rc == -EBADMSG || rc == -EROFS ||
	       rc == -ENOMEM;
}

/* A client's script ended: its operation is complete (or waits on). */
static void client_op_end(struct run *r, struct actor *a)
{
	if (a->retry) {
		if (r->committer)
			g_queue_push_tail(&r->commit_waiters, a);
		else
			ev_push(r, r->now, EV_READY, a, NULL);
		return;
	}
	if (a->phase < 0)
		a->phase = sfs_wl_result_enter(r->res, "run", a->op_start) -
			   r->res->phases;
	sfs_wl_result_op(r->res, &r->res->phases[a->phase], a->id, &a->op,
			 a->rc, a->bytes, a->op_start, r->now);
	if (a->op.expect != SFS_WOP_ANY && a->rc != a->op.expect &&
	    !r->res->first_error_what[0]) {
		r->res->first_error = a->rc;
		g_snprintf(
		    r->res->first_error_what, sizeof(r->res->first_error_what),
		    "client %u: %s %s: %s (expected %s)", a->id,
		    sfs_wop_name(a->op.type), op_what(a), g_strerror(-a->rc),
		    a->op.expect ? g_strerror(-a->op.expect) : "success");
	}
	sfs_workload_done(r->w, a->id, &a->op, a->rc);
	r->cnt->end_ns = MAX(r->cnt->end_ns, r->now - r->t0);
	if (a->op.expect == 0 && fatal_rc(a->rc)) {
		/* the benchmark's process would stop here */
		if (!r->cnt->clients_stopped++)
			g_snprintf(r->cnt->stop_what, sizeof(r->cnt->stop_what),
				   "client %u: %s %s: %s", a->id,
				   sfs_wop_name(a->op.type), op_what(a),
				   g_strerror(-a->rc));
		a->done = true;
		barrier_check(r);
		return;
	}
	ev_push(r, r->now, EV_READY, a, NULL);
}

static void actor_script_end(struct run *r, struct actor *a)
{
	a->busy = false;
	if (r->committer == a) {
		r->committer = NULL;
		while (!g_queue_is_empty(&r->commit_waiters))
			ev_push(r, r->now, EV_READY,
				g_queue_pop_head(&r->commit_waiters), NULL);
	}
	if (a->kind == ACT_CLIENT)
		client_op_end(r, a);
}

/* ---- the engine's own actors ---- */

static sfs_ns_t kernel_deadline(struct run *r, struct actor *k)
{
	return k->kind == ACT_FLUSHER ? sfs_fs_writeback_deadline(r->fs)
				      : sfs_fs_journal_deadline(r->fs);
}

static void kernel_run(struct run *r, struct actor *k)
{
	struct sfs_cpu_counts before;

	call_begin(r, k, &before);
	if (k->kind == ACT_FLUSHER) {
		sfs_fs_writeback_tick(r->fs);
		r->cnt->flusher_runs++;
	} else {
		sfs_fs_journal_tick(r->fs);
		r->cnt->journal_runs++;
	}
	call_end(r, k, &before, 0, 0);
	actor_play(r, k);
}

/*
 * Run the flusher and the journal if due and idle, or arm their timers.  A
 * tick that issued nothing but leaves the deadline at now (write-back held
 * back by pinned buffers) rests a millisecond: no loop at one instant.
 */
static void kernel_check(struct run *r)
{
	struct actor *ks[2] = {&r->flusher, &r->journal};

	for (unsigned i = 0; i < 2; i++) {
		struct actor *k = ks[i];

		if (k->busy || (k->kind == ACT_JOURNAL && r->committer))
			continue;
		sfs_ns_t t = kernel_deadline(r, k);
		if (t == UINT64_MAX)
			continue;
		t = MAX(t, k->rest_until);
		if (t <= r->now) {
			uint64_t before = r->cnt->dev_requests;
			kernel_run(r, k);
			if (r->cnt->dev_requests == before && !k->busy)
				k->rest_until = r->now + SFS_NS_PER_MS;
			continue;
		}
		if (k->timer_at != t) {
			k->timer_at = t;
			ev_push(r, t, EV_TIMER, k, NULL);
		}
	}
}

/* ---- the loop ---- */

static bool clients_done(struct run *r)
{
	for (unsigned i = 0; i < r->nclients; i++)
		if (!r->clients[i].done || r->clients[i].busy)
			return false;
	return true;
}

static void actor_init(struct actor *a, enum act_kind kind, unsigned id,
		       uint32_t stream)
{
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->id = id;
	a->stream = stream;
	a->stages = g_ptr_array_new_with_free_func(stage_free);
	a->phase = -1;
	a->fds = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
				       handle_free);
}

static void actor_fini(struct run *r, struct actor *a)
{
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, a->fds);
	while (g_hash_table_iter_next(&it, NULL, &v))
		sfs_release(r->fs, ((struct handle *)v)->ino);
	g_hash_table_destroy(a->fds);
	g_ptr_array_free(a->stages, TRUE);
	g_free(a->path);
	g_free(a->path2);
	g_free(a->data);
}

int sfs_run_engine(struct sfs_fs *fs, struct sfs_workload *w,
		   const struct sfs_run_opts *o, struct sfs_wl_result *res,
		   struct sfs_run_counters *cnt, char **err)
{
	struct run r = {0};
	struct event e;
	int rc = 0;

	memset(cnt, 0, sizeof(*cnt));
	sfs_wl_result_init(res, sfs_workload_clients(w));
	r.fs = fs;
	r.bd = sfs_fs_bdev(fs);
	r.clock = sfs_fs_clock(fs);
	r.w = w;
	r.o = o;
	r.res = res;
	r.cnt = cnt;
	if (!sfs_clock_is_virtual(r.clock)) {
		*err = g_strdup("simfs run needs the virtual clock "
				"(clock=virtual)");
		return -EINVAL;
	}
	if (sfs_timedev_set_sink(r.bd, &run_sink, &r) != 0) {
		*err = g_strdup("simfs run needs a device model (device=none "
				"has none)");
		return -EINVAL;
	}
	if (o->cpu && *o->cpu) {
		rc = sfs_cpumodel_new(o->cpu, &r.cpu, err);
		if (rc) {
			sfs_timedev_set_sink(r.bd, NULL, NULL);
			return rc;
		}
	}
	r.ncpus = o->cpus ? o->cpus : 1;
	r.cpu_free = g_new0(sfs_ns_t, r.ncpus);
	r.t0 = r.now = sfs_clock_now_ns(r.clock);
	r.depth_t = r.now;
	r.heap = g_array_new(FALSE, FALSE, sizeof(struct event));
	r.inflight = g_tree_new_full(seq_cmp, NULL, NULL, NULL);
	g_queue_init(&r.flushes);
	g_queue_init(&r.commit_waiters);
	r.nclients = sfs_workload_clients(w);
	r.clients = g_new0(struct actor, r.nclients);
	for (unsigned i = 0; i < r.nclients; i++) {
		actor_init(&r.clients[i], ACT_CLIENT, i, 1000 + i);
		ev_push(&r, r.now, EV_READY, &r.clients[i], NULL);
	}
	actor_init(&r.flusher, ACT_FLUSHER, 0, 0);
	actor_init(&r.journal, ACT_JOURNAL, 0, 0);
	sfs_fs_set_driver(fs, &run_driver, &r);

	while (!r.stop && !clients_done(&r) && ev_pop(&r, &e)) {
		cnt->events++;
		r.now = MAX(r.now, e.t);
		sfs_clock_sleep_until(r.clock, r.now);
		switch (e.type) {
		case EV_READY:
			client_ready(&r, e.a);
			break;
		case EV_CPU_DONE:
			actor_stage_start(&r, e.a);
			break;
		case EV_DEV_DONE:
			dev_done(&r, e.p);
			break;
		case EV_TIMER:
			if (e.a->timer_at == e.t)
				e.a->timer_at = 0;
			break;
		}
		kernel_check(&r);
		dev_kick(&r);
	}
	/* the engine's own work still under way finishes in time too */
	while ((r.flusher.busy || r.journal.busy || r.dev_busy) &&
	       ev_pop(&r, &e)) {
		r.now = MAX(r.now, e.t);
		sfs_clock_sleep_until(r.clock, r.now);
		if (e.type == EV_DEV_DONE)
			dev_done(&r, e.p);
		else if (e.type == EV_CPU_DONE)
			actor_stage_start(&r, e.a);
		dev_kick(&r);
	}
	depth_add(&r, 0);
	res->elapsed_ns = cnt->end_ns;
	cnt->mean_queue =
	    r.now > r.t0 ? r.depth_area / (double)(r.now - r.t0) : 0.0;
	sfs_fs_set_driver(fs, NULL, NULL);
	sfs_timedev_set_sink(r.bd, NULL, NULL);
	for (unsigned i = 0; i < r.nclients; i++)
		actor_fini(&r, &r.clients[i]);
	actor_fini(&r, &r.flusher);
	actor_fini(&r, &r.journal);
	/* events left: timers, and the payload of nothing else */
	while (ev_pop(&r, &e))
		if (e.type == EV_DEV_DONE)
			dev_done(&r, e.p);
	g_free(r.clients);
	g_array_free(r.heap, TRUE);
	g_tree_destroy(r.inflight);
	g_queue_clear(&r.flushes);
	g_queue_clear(&r.commit_waiters);
	g_free(r.cpu_free);
	g_free(r.buf);
	if (r.cpu)
		sfs_cpumodel_free(r.cpu);
	if (r.fatal) {
		*err = r.fatal_msg;
		return r.fatal;
	}
	return 0;
}

void sfs_run_counters_print(const struct sfs_run_counters *c, FILE *out)
{
	fprintf(out,
		"run: %" G_GUINT64_FORMAT " operations, %" G_GUINT64_FORMAT
		" device requests, queue depth max %" G_GUINT64_FORMAT
		" mean %.2f, %" G_GUINT64_FORMAT " commits, %" G_GUINT64_FORMAT
		" fsyncs waited for a commit, cpu %.3f s, %.3f s of virtual "
		"time\n",
		c->engine_ops, c->dev_requests, c->max_queue, c->mean_queue,
		c->commits_seen, c->fsync_waits, (double)c->cpu_ns / 1e9,
		(double)c->end_ns / 1e9);
}
