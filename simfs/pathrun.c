/*
 * pathrun.c - workloads as system calls against a real directory (see
 * pathrun.h; the user's view is doc/user-guide.md §12.1).
 *
 * One POSIX thread per client runs client_main:
 *
 *   lock gen_lock; op = next(c, now); client_take copies its strings and
 *   data; unlock
 *   sleep until now + op.think_ns; BARRIER: barrier_wait
 *   client_prepare (untimed: handle, buffer, pattern); t0; client_serve
 *   (the system calls); t1
 *   lock res_lock; client_record (phase, latency, expect); unlock
 *   lock gen_lock; done(c, op, rc); unlock
 *
 * until next says 0, a fatal error (a generator error, O_DIRECT refused,
 * no memory) or another client's fatal error (run->abort).
 *
 * Locks: gen_lock (the generator: next and done), res_lock (the result,
 * first/last times, the fatal error), bar_lock (the barrier).  None is
 * taken while another is held.
 *
 * Invariants:
 *  1. a client's ops are served in the order its generator gave them; a
 *     handle is only used by its own client, so handle tables need no lock;
 *  2. bar_active counts clients not yet done; a barrier opens when
 *     bar_waiting reaches bar_active, so a client that ends early
 *     (barrier_leave) never leaves the others waiting;
 *  3. every descriptor the run opened is closed before sfs_pathrun returns.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <glib.h>
/* inlined: sfs_wl_fill makes every byte a runner writes */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "clock.h"
#include "pathrun.h"

#define PR_ALIGN 4096	     /* O_DIRECT buffers */
#define PR_CHUNK (64u << 20) /* the largest single read/write call */
#define PR_MAX_DEPTH 256     /* clean: how deep it descends */
#define PR_FILE_MODE 0644    /* open(O_CREAT) with mode 0 */
#define PR_DIR_MODE 0755     /* mkdir with mode 0 */

/* Where the ops come from: a registered workload, or a bare ops table. */
struct pr_src {
	struct sfs_workload *w; /* NULL: use ops and st */
	const struct sfs_workload_ops *ops;
	void *st;
};

struct pr_run {
	struct pr_src src;
	struct sfs_pathrun_opts o;
	const char *dir;
	int dirfd;
	struct sfs_clock *clk;	    /* real, time 0 = start of the run */
	pthread_mutex_t gen_lock;   /* the generator's next/done */
	pthread_mutex_t res_lock;   /* the fields below up to bar_lock */
	struct sfs_wl_result *res;  /* res_lock */
	bool any_op;		    /* res_lock: first_ns is set */
	sfs_ns_t first_ns, last_ns; /* res_lock: first op start, last end */
	int fail_rc;		    /* res_lock: the first fatal error */
	char *fail_msg;		    /* res_lock */
	atomic_bool abort;	    /* a fatal error: every client stops */
	pthread_mutex_t bar_lock;   /* the barrier */
	pthread_cond_t bar_cond;
	unsigned bar_active;  /* bar_lock: clients not yet done */
	unsigned bar_waiting; /* bar_lock: clients at the barrier */
	uint64_t bar_gen;     /* bar_lock: barriers opened so far */
};

/* One open handle of a client: the workload's number -> this. */
struct pr_handle {
	int fd;
	uint32_t flags; /* the open(2) flags */
	uint64_t pos;	/* bytes: the end of the last read or write */
};

struct pr_client {
	struct pr_run *run;
	unsigned c;
	pthread_t tid;
	bool started;
	GHashTable *handles; /* GINT_TO_POINTER(op fd) -> pr_handle (owned) */
	void *buf;	     /* PR_ALIGN-aligned I/O buffer */
	size_t buf_size;
	void *big; /* a copy of op->data when len > PR_CHUNK */
	char *s_path, *s_path2, *s_label, *s_phase; /* copies of the op's */
	bool in_phase;				    /* phase_idx is set */
	uint64_t phase_idx;  /* the client's phase in res->phases */
	struct pr_handle *h; /* the op's handle (prepare -> serve) */
	uint64_t ioff;	     /* READ/WRITE: the file offset of its first byte */
	const char *hint;    /* a mismatch's explanation, or NULL */
};

/* ---- the write pattern ---- */

/* Word idx of the pattern, as it lies in memory (little-endian). */
static inline uint64_t fill_word(uint64_t idx, uint64_t seed)
{
	uint64_t le = GUINT64_TO_LE(idx);

	return GUINT64_TO_LE(XXH3_64bits_withSeed(&le, sizeof(le), seed));
}

void sfs_wl_fill(void *buf, uint64_t off, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	size_t i = 0;
	uint64_t w;

	if (off % 8 && len) { /* the head, up to a word boundary */
		size_t sh = off % 8;
		i = MIN(8 - sh, len);
		w = fill_word(off / 8, seed);
		memcpy(p, (uint8_t *)&w + sh, i);
	}
	for (; i + 8 <= len; i += 8) {
		w = fill_word((off + i) / 8, seed);
		memcpy(p + i, &w, 8);
	}
	if (i < len) {
		w = fill_word((off + i) / 8, seed);
		memcpy(p + i, &w, len - i);
	}
}

/* ---- the source ---- */

static unsigned src_clients(const struct pr_src *s)
{
	return s->w ? sfs_workload_clients(s->w) : s->ops->clients(s->st);
}

static int src_next(const struct pr_src *s, unsigned c, sfs_ns_t now,
		    struct sfs_wop *out, char **err)
{
	if (s->w)
		return sfs_workload_next(s->w, c, now, out, err);
	memset(out, 0, sizeof(*out));
	if (c >= s->ops->clients(s->st))
		return -EINVAL;
	return s->ops->next(s->st, c, now, out, err);
}

static void src_done(const struct pr_src *s, unsigned c,
		     const struct sfs_wop *op, int rc)
{
	if (s->w)
		sfs_workload_done(s->w, c, op, rc);
	else if (s->ops->done)
		s->ops->done(s->st, c, op, rc);
}

/* ---- fatal errors and the barrier ---- */

static void run_abort(struct pr_run *run)
{
	atomic_store(&run->abort, true);
	pthread_mutex_lock(&run->bar_lock);
	pthread_cond_broadcast(&run->bar_cond);
	pthread_mutex_unlock(&run->bar_lock);
}

/* Record a fatal error (msg is taken; the first one wins) and stop. */
static void run_fail(struct pr_run *run, int rc, char *msg)
{
	pthread_mutex_lock(&run->res_lock);
	if (!run->fail_rc) {
		run->fail_rc = rc;
		run->fail_msg = msg;
		msg = NULL;
	}
	pthread_mutex_unlock(&run->res_lock);
	g_free(msg);
	run_abort(run);
}

/* Caller holds bar_lock. */
static void barrier_open(struct pr_run *run)
{
	run->bar_waiting = 0;
	run->bar_gen++;
	pthread_cond_broadcast(&run->bar_cond);
}

/* Wait until every client not yet done is at a barrier.  false: the run
 * was aborted meanwhile. */
static bool barrier_wait(struct pr_run *run)
{
	bool ok;

	pthread_mutex_lock(&run->bar_lock);
	uint64_t gen = run->bar_gen;
	if (++run->bar_waiting >= run->bar_active)
		barrier_open(run);
	else
		while (gen == run->bar_gen && !atomic_load(&run->abort))
			pthread_cond_wait(&run->bar_cond, &run->bar_lock);
	ok = !atomic_load(&run->abort);
	pthread_mutex_unlock(&run->bar_lock);
	return ok;
}

/* A client is done: a barrier the others wait at may now open. */
static void barrier_leave(struct pr_run *run)
{
	pthread_mutex_lock(&run->bar_lock);
	run->bar_active--;
	if (run->bar_waiting && run->bar_waiting >= run->bar_active)
		barrier_open(run);
	pthread_mutex_unlock(&run->bar_lock);
}

/* ---- a client's buffers and handles ---- */

static void handle_free(gpointer p)
{
	struct pr_handle *h = p;

	if (h->fd >= 0)
		close(h->fd);
	g_free(h);
}

/* An aligned buffer of at least n bytes.  0 or -ENOMEM. */
static int client_buf(struct pr_client *cl, size_t n)
{
	size_t want =
	    MAX(((n + PR_ALIGN - 1) / PR_ALIGN) * PR_ALIGN, (size_t)PR_ALIGN);
	void *p;

	if (cl->buf_size >= want)
		return 0;
	if (posix_memalign(&p, PR_ALIGN, want))
		return -ENOMEM;
	free(cl->buf);
	cl->buf = p;
	cl->buf_size = want;
	return 0;
}

static void swap_str(char **slot, const char **field)
{
	g_free(*slot);
	*slot = g_strdup(*field);
	*field = *slot;
}

/*
 * Make op independent of the generator (its strings and data are valid
 * only until the generator's next call, which another client may make).
 * Caller holds gen_lock.  0 or -ENOMEM.
 */
static int client_take(struct pr_client *cl, struct sfs_wop *op)
{
	swap_str(&cl->s_path, &op->path);
	swap_str(&cl->s_path2, &op->path2);
	swap_str(&cl->s_label, &op->label);
	swap_str(&cl->s_phase, &op->phase);
	g_free(cl->big);
	cl->big = NULL;
	if (op->type != SFS_WOP_WRITE || !op->data)
		return 0;
	if (op->len > PR_CHUNK) {
		cl->big = g_try_malloc(op->len);
		if (!cl->big)
			return -ENOMEM;
		memcpy(cl->big, op->data, op->len);
		op->data = cl->big;
		return 0;
	}
	if (client_buf(cl, op->len))
		return -ENOMEM;
	memcpy(cl->buf, op->data, op->len);
	op->data = cl->buf;
	return 0;
}

/* The bytes of a write from byte `done` on, n of them, into the buffer. */
static void write_chunk(struct pr_client *cl, const struct sfs_wop *op,
			uint64_t done, size_t n)
{
	if (!op->data)
		sfs_wl_fill(cl->buf, cl->ioff + done, n, cl->run->o.seed);
	else if (cl->big)
		memcpy(cl->buf, (const uint8_t *)cl->big + done, n);
	/* else: client_take put the whole of it in buf already */
}

/*
 * The untimed part of an op: find its handle and the file offset, size
 * the buffer, make the first chunk of a write.  0, -EBADF (no such
 * handle) or -ENOMEM (fatal).
 */
static int client_prepare(struct pr_client *cl, const struct sfs_wop *op)
{
	struct stat st;

	cl->h = NULL;
	cl->hint = NULL;
	switch (op->type) {
	case SFS_WOP_CLOSE:
	case SFS_WOP_READ:
	case SFS_WOP_WRITE:
	case SFS_WOP_FSYNC:
	case SFS_WOP_FTRUNCATE:
		cl->h =
		    g_hash_table_lookup(cl->handles, GINT_TO_POINTER(op->fd));
		if (!cl->h)
			return -EBADF;
		break;
	default:
		return 0;
	}
	if (op->type != SFS_WOP_READ && op->type != SFS_WOP_WRITE)
		return 0;
	cl->ioff = op->off == SFS_WOP_OFF_CUR ? cl->h->pos : op->off;
	/* appends land at the end, whatever the offset (as pwrite does) */
	if (op->type == SFS_WOP_WRITE && (cl->h->flags & O_APPEND) &&
	    fstat(cl->h->fd, &st) == 0)
		cl->ioff = (uint64_t)st.st_size;
	if (client_buf(cl, MIN(op->len, PR_CHUNK)))
		return -ENOMEM;
	if (op->type == SFS_WOP_WRITE)
		write_chunk(cl, op, 0, MIN(op->len, PR_CHUNK));
	return 0;
}

/* An op's path relative to the root: no leading '/', "" is the root. */
static const char *rel(const char *p)
{
	while (p && *p == '/')
		p++;
	return p && *p ? p : ".";
}

/* pread from cl->ioff until len bytes or the end of the file. */
static int serve_read(struct pr_client *cl, const struct sfs_wop *op,
		      uint64_t *bytes)
{
	uint64_t done = 0;
	int rc = 0;

	while (done < op->len) {
		size_t n = MIN(op->len - done, PR_CHUNK);
		ssize_t r =
		    pread(cl->h->fd, cl->buf, n, (off_t)(cl->ioff + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			break;
		}
		done += (uint64_t)r;
		if ((size_t)r < n)
			break; /* the end of the file */
	}
	*bytes = done;
	cl->h->pos = cl->ioff + done;
	return rc;
}

/* pwrite len bytes at cl->ioff, PR_CHUNK at a time. */
static int serve_write(struct pr_client *cl, const struct sfs_wop *op,
		       uint64_t *bytes)
{
	uint64_t done = 0;
	int rc = 0;

	while (done < op->len && !rc) {
		size_t n = MIN(op->len - done, PR_CHUNK), k = 0;

		if (done)
			write_chunk(cl, op, done, n);
		while (k < n) {
			ssize_t r = pwrite(cl->h->fd, (uint8_t *)cl->buf + k,
					   n - k, (off_t)(cl->ioff + done + k));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				rc = r < 0 ? -errno : -EIO;
				break;
			}
			k += (size_t)r;
		}
		done += k;
	}
	*bytes = done;
	cl->h->pos = cl->ioff + done;
	return rc;
}

static int serve_open(struct pr_client *cl, const struct sfs_wop *op)
{
	struct pr_run *run = cl->run;
	int flags = (int)op->flags | O_CLOEXEC;
	int fd;

	if (op->fd < 0)
		return -EBADF;
	fd = openat(run->dirfd, rel(op->path), flags,
		    op->mode ? (mode_t)op->mode : PR_FILE_MODE);
	if (fd < 0)
		return -errno;
	struct pr_handle *h = g_new0(struct pr_handle, 1);
	h->fd = fd;
	h->flags = (uint32_t)flags;
	/* a handle number still open is replaced (and closed) */
	g_hash_table_insert(cl->handles, GINT_TO_POINTER(op->fd), h);
	return 0;
}

static int serve_readdir(struct pr_client *cl, const char *path)
{
	int fd = openat(cl->run->dirfd, rel(path),
			O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	int rc = 0;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		rc = -errno;
		close(fd);
		return rc;
	}
	errno = 0;
	while (readdir(d))
		;
	if (errno)
		rc = -errno;
	closedir(d);
	return rc;
}

/* The op's system calls.  0 or -errno; *bytes: bytes read or written. */
static int client_serve(struct pr_client *cl, const struct sfs_wop *op,
			uint64_t *bytes)
{
	int dfd = cl->run->dirfd;
	struct stat st;
	struct statvfs sv;
	int rc;

	switch (op->type) {
	case SFS_WOP_OPEN:
		return serve_open(cl, op);
	case SFS_WOP_CLOSE:
		rc = close(cl->h->fd) ? -errno : 0;
		cl->h->fd = -1;
		g_hash_table_remove(cl->handles, GINT_TO_POINTER(op->fd));
		cl->h = NULL;
		return rc;
	case SFS_WOP_READ:
		return serve_read(cl, op, bytes);
	case SFS_WOP_WRITE:
		return serve_write(cl, op, bytes);
	case SFS_WOP_FSYNC:
		rc = (op->flags & SFS_WOP_DATASYNC) ? fdatasync(cl->h->fd)
						    : fsync(cl->h->fd);
		return rc ? -errno : 0;
	case SFS_WOP_FTRUNCATE:
		return ftruncate(cl->h->fd, (off_t)op->len) ? -errno : 0;
	case SFS_WOP_UNLINK:
		return unlinkat(dfd, rel(op->path), 0) ? -errno : 0;
	case SFS_WOP_MKDIR:
		return mkdirat(dfd, rel(op->path),
			       op->mode ? (mode_t)op->mode : PR_DIR_MODE)
			   ? -errno
			   : 0;
	case SFS_WOP_RMDIR:
		return unlinkat(dfd, rel(op->path), AT_REMOVEDIR) ? -errno : 0;
	case SFS_WOP_RENAME:
		return renameat(dfd, rel(op->path), dfd, rel(op->path2))
			   ? -errno
			   : 0;
	case SFS_WOP_STAT:
		return fstatat(dfd, rel(op->path), &st, AT_SYMLINK_NOFOLLOW)
			   ? -errno
			   : 0;
	case SFS_WOP_READDIR:
		return serve_readdir(cl, op->path);
	case SFS_WOP_SYMLINK:
		if (!op->path || !*op->path)
			return -EINVAL;
		return symlinkat(op->path, dfd, rel(op->path2)) ? -errno : 0;
	case SFS_WOP_LINK:
		return linkat(dfd, rel(op->path), dfd, rel(op->path2), 0)
			   ? -errno
			   : 0;
	case SFS_WOP_SYNC:
		sync();
		return 0;
	case SFS_WOP_THINK:
	case SFS_WOP_BARRIER:
		return 0;
	case SFS_WOP_STATFS:
		return fstatvfs(dfd, &sv) ? -errno : 0;
	case SFS_WOP_CHMOD:
		return fchmodat(dfd, rel(op->path), op->mode & 07777, 0) ? -errno
									   : 0;
	default:
		return -EINVAL;
	}
}

static const char *rc_text(int rc)
{
	return rc == 0 ? "success" : g_strerror(-rc);
}

/* What an op works on: "d/x", "a -> b", "d/f (fd 3)", "fd 3 at 0+4096". */
static void op_what(const struct sfs_wop *op, char *out, size_t size)
{
	const char *p = op->path ? op->path : "";

	switch (op->type) {
	case SFS_WOP_RENAME:
	case SFS_WOP_LINK:
	case SFS_WOP_SYMLINK:
		g_snprintf(out, size, "%s -> %s", p,
			   op->path2 ? op->path2 : "");
		break;
	case SFS_WOP_OPEN:
		g_snprintf(out, size, "%s (fd %d)", p, op->fd);
		break;
	case SFS_WOP_READ:
	case SFS_WOP_WRITE:
		if (op->off == SFS_WOP_OFF_CUR)
			g_snprintf(out, size, "fd %d at its position+%" PRIu64,
				   op->fd, op->len);
		else
			g_snprintf(out, size, "fd %d at %" PRIu64 "+%" PRIu64,
				   op->fd, op->off, op->len);
		break;
	case SFS_WOP_CLOSE:
	case SFS_WOP_FSYNC:
	case SFS_WOP_FTRUNCATE:
		g_snprintf(out, size, "fd %d", op->fd);
		break;
	default:
		g_strlcpy(out, p, size);
	}
}

static const char *op_name(const struct sfs_wop *op)
{
	return op->label ? op->label : sfs_wop_name(op->type);
}

/* Count a finished op in the client's phase. */
static void client_record(struct pr_client *cl, const struct sfs_wop *op,
			  int rc, uint64_t bytes, sfs_ns_t t0, sfs_ns_t t1)
{
	struct pr_run *run = cl->run;
	struct sfs_wl_result *res = run->res;
	char what[160];

	pthread_mutex_lock(&run->res_lock);
	if (op->phase || !cl->in_phase) {
		struct sfs_wl_phase *ph = sfs_wl_result_enter(
		    res, op->phase ? op->phase : SFS_PATHRUN_PHASE, t0);
		cl->phase_idx = (uint64_t)(ph - res->phases);
		cl->in_phase = true;
	}
	uint64_t before = res->mismatches;
	sfs_wl_result_op(res, &res->phases[cl->phase_idx], cl->c, op, rc, bytes,
			 t0, t1);
	if (res->mismatches > before) {
		if (rc < 0 && !res->first_error)
			res->first_error = rc;
		if (!res->first_error_what[0]) {
			op_what(op, what, sizeof(what));
			g_snprintf(res->first_error_what,
				   sizeof(res->first_error_what),
				   "client %u: %s %s: %s (expected %s)%s",
				   cl->c, op_name(op), what, rc_text(rc),
				   rc_text(op->expect),
				   cl->hint ? cl->hint : "");
		}
	}
	if (op->type != SFS_WOP_THINK && op->type != SFS_WOP_BARRIER) {
		if (!run->any_op || t0 < run->first_ns)
			run->first_ns = t0;
		run->last_ns = MAX(run->last_ns, t1);
		run->any_op = true;
	}
	pthread_mutex_unlock(&run->res_lock);
	if (run->o.verbose) {
		op_what(op, what, sizeof(what));
		fprintf(stderr,
			"pathrun: %.6f s client %u: %s %s: %s (%.3f ms)\n",
			(double)t0 / 1e9, cl->c, op_name(op), what, rc_text(rc),
			(double)(t1 - t0) / 1e6);
	}
}

static void *client_main(void *arg)
{
	struct pr_client *cl = arg;
	struct pr_run *run = cl->run;
	struct sfs_wop op;

	while (!atomic_load(&run->abort)) {
		char *gerr = NULL;
		uint64_t bytes = 0;
		sfs_ns_t now, t0, t1;
		int rc, trc = 0;

		pthread_mutex_lock(&run->gen_lock);
		now = sfs_clock_now_ns(run->clk);
		rc = src_next(&run->src, cl->c, now, &op, &gerr);
		if (rc == 1)
			trc = client_take(cl, &op);
		pthread_mutex_unlock(&run->gen_lock);
		if (rc < 0) {
			run_fail(
			    run, rc,
			    g_strdup_printf("client %u: %s", cl->c,
					    gerr ? gerr : g_strerror(-rc)));
			g_free(gerr);
			break;
		}
		g_free(gerr);
		if (rc == 0)
			break;
		if (trc) {
			run_fail(run, -ENOMEM,
				 g_strdup_printf("client %u: no memory for a "
						 "%" PRIu64 "-byte %s",
						 cl->c, op.len,
						 sfs_wop_name(op.type)));
			break;
		}
		if (op.think_ns)
			sfs_clock_sleep_until(run->clk, now + op.think_ns);
		if (op.type == SFS_WOP_BARRIER && !barrier_wait(run))
			break;
		rc = client_prepare(cl, &op);
		if (rc == -ENOMEM) {
			run_fail(run, rc,
				 g_strdup_printf("client %u: no memory for a "
						 "%" PRIu64 "-byte buffer",
						 cl->c, op.len));
			break;
		}
		t0 = sfs_clock_now_ns(run->clk);
		if (rc == 0)
			rc = client_serve(cl, &op, &bytes);
		t1 = sfs_clock_now_ns(run->clk);
		if (op.type == SFS_WOP_OPEN && rc == -EINVAL &&
		    (op.flags & O_DIRECT)) {
			run_fail(run, rc,
				 g_strdup_printf(
				     "open %s/%s: the file system refuses "
				     "O_DIRECT (%s); run the workload "
				     "without `direct`",
				     run->dir, rel(op.path),
				     g_strerror(EINVAL)));
			break;
		}
		if (rc == -EINVAL && cl->h && (cl->h->flags & O_DIRECT))
			cl->hint = " (O_DIRECT needs offsets and lengths "
				   "aligned to the device's block size)";
		client_record(cl, &op, rc, bytes, t0, t1);
		pthread_mutex_lock(&run->gen_lock);
		src_done(&run->src, cl->c, &op, rc);
		pthread_mutex_unlock(&run->gen_lock);
	}
	barrier_leave(run);
	g_hash_table_remove_all(cl->handles);
	return NULL;
}

/* ---- clean: what the run created ---- */

static gboolean ino_seen(GHashTable *seen, uint64_t ino)
{
	gint64 key = (gint64)ino;

	return g_hash_table_contains(seen, &key);
}

/*
 * Walk the tree under dfd on device dev, children first.  remove false:
 * add every inode number to seen; true: remove every entry whose inode is
 * not in seen (a directory only if it ends up empty).  Errors are skipped:
 * this is best effort.
 */
static void tree_walk(int dfd, dev_t dev, GHashTable *seen, bool remove,
		      unsigned depth)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	GPtrArray *names;
	struct dirent *e;
	DIR *d;

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	names = g_ptr_array_new_with_free_func(g_free);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			g_ptr_array_add(names, g_strdup(e->d_name));
	closedir(d);
	for (guint i = 0; i < names->len; i++) {
		const char *name = names->pdata[i];
		struct stat st;
		bool isdir;

		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) ||
		    st.st_dev != dev)
			continue; /* gone, or another mount: not ours */
		isdir = S_ISDIR(st.st_mode);
		if (isdir && depth < PR_MAX_DEPTH) {
			int sub = openat(dfd, name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					     O_CLOEXEC);
			if (sub >= 0) {
				tree_walk(sub, dev, seen, remove, depth + 1);
				close(sub);
			}
		}
		if (!remove) {
			gint64 *key = g_new(gint64, 1);
			*key = (gint64)st.st_ino;
			g_hash_table_add(seen, key);
		} else if (!ino_seen(seen, st.st_ino))
			unlinkat(dfd, name, isdir ? AT_REMOVEDIR : 0);
	}
	g_ptr_array_free(names, TRUE);
}

/* ---- the run ---- */

static void set_err(char **err, char *msg)
{
	if (err)
		*err = msg;
	else
		g_free(msg);
}

/* Open the run's root.  A descriptor, or -errno with *err. */
static int open_root(const char *dir, char **err)
{
	struct stat st;
	int fd;

	if (!dir || !*dir) {
		set_err(err, g_strdup("--path: no directory given"));
		return -EINVAL;
	}
	if (stat(dir, &st)) {
		int rc = -errno;
		set_err(err,
			g_strdup_printf("--path %s: %s", dir, g_strerror(-rc)));
		return rc;
	}
	if (!S_ISDIR(st.st_mode)) {
		set_err(err,
			g_strdup_printf("--path %s: not a directory", dir));
		return -ENOTDIR;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int rc = -errno;
		set_err(err,
			g_strdup_printf("--path %s: %s", dir, g_strerror(-rc)));
		return rc;
	}
	return fd;
}

/* Start the clients and wait for them all to end. */
static void run_clients(struct pr_run *run, struct pr_client *cls, unsigned n)
{
	for (unsigned c = 0; c < n; c++) {
		int e = pthread_create(&cls[c].tid, NULL, client_main, &cls[c]);
		if (e) {
			run_fail(run, -EAGAIN,
				 g_strdup_printf("cannot start the thread of "
						 "client %u of %u: %s",
						 c, n, g_strerror(e)));
			for (unsigned k = c; k < n; k++)
				barrier_leave(run);
			break;
		}
		cls[c].started = true;
	}
	for (unsigned c = 0; c < n; c++)
		if (cls[c].started)
			pthread_join(cls[c].tid, NULL);
}

static int pr_run(const struct pr_src *src, const char *dir,
		  const struct sfs_pathrun_opts *o, struct sfs_wl_result *res,
		  char **err)
{
	struct pr_run run = {.src = *src, .dir = dir, .dirfd = -1};
	unsigned n = src_clients(src);
	GHashTable *seen = NULL;
	struct pr_client *cls;
	struct stat st;
	int rc;

	sfs_wl_result_init(res, n);
	if (n == 0) {
		set_err(err, g_strdup_printf("workload %s: no clients",
					     src->ops->name));
		return -EINVAL;
	}
	rc = open_root(dir, err);
	if (rc < 0)
		return rc;
	run.dirfd = rc;
	if (o)
		run.o = *o;
	if (run.o.clean && fstat(run.dirfd, &st) == 0) {
		seen = g_hash_table_new_full(g_int64_hash, g_int64_equal,
					     g_free, NULL);
		tree_walk(run.dirfd, st.st_dev, seen, false, 0);
	}
	cls = g_try_new0(struct pr_client, n);
	if (!cls) {
		set_err(err, g_strdup_printf("no memory for %u clients", n));
		rc = -ENOMEM;
		goto out_close;
	}
	run.res = res;
	run.bar_active = n;
	atomic_init(&run.abort, false);
	pthread_mutex_init(&run.gen_lock, NULL);
	pthread_mutex_init(&run.res_lock, NULL);
	pthread_mutex_init(&run.bar_lock, NULL);
	pthread_cond_init(&run.bar_cond, NULL);
	for (unsigned c = 0; c < n; c++) {
		cls[c].run = &run;
		cls[c].c = c;
		cls[c].handles = g_hash_table_new_full(
		    g_direct_hash, g_direct_equal, NULL, handle_free);
	}
	run.clk = sfs_clock_new_real();
	run_clients(&run, cls, n);
	res->elapsed_ns = run.any_op ? run.last_ns - run.first_ns : 0;
	for (unsigned c = 0; c < n; c++) {
		g_hash_table_destroy(cls[c].handles);
		free(cls[c].buf);
		g_free(cls[c].big);
		g_free(cls[c].s_path);
		g_free(cls[c].s_path2);
		g_free(cls[c].s_label);
		g_free(cls[c].s_phase);
	}
	g_free(cls);
	sfs_clock_free(run.clk);
	pthread_cond_destroy(&run.bar_cond);
	pthread_mutex_destroy(&run.bar_lock);
	pthread_mutex_destroy(&run.res_lock);
	pthread_mutex_destroy(&run.gen_lock);
	rc = run.fail_rc;
	if (rc)
		set_err(err, run.fail_msg);
out_close:
	if (seen && fstat(run.dirfd, &st) == 0)
		tree_walk(run.dirfd, st.st_dev, seen, true, 0);
	if (seen)
		g_hash_table_destroy(seen);
	close(run.dirfd);
	return rc;
}

int sfs_pathrun(struct sfs_workload *w, const char *dir,
		const struct sfs_pathrun_opts *o, struct sfs_wl_result *res,
		char **err)
{
	struct pr_src src = {.w = w};

	if (!w || !res) {
		if (res)
			sfs_wl_result_init(res, 0);
		set_err(err, g_strdup("pathrun: no workload"));
		return -EINVAL;
	}
	src.ops = sfs_workload_ops_of(w);
	return pr_run(&src, dir, o, res, err);
}

int sfs_pathrun_ops(const struct sfs_workload_ops *ops, void *st,
		    const char *dir, const struct sfs_pathrun_opts *o,
		    struct sfs_wl_result *res, char **err)
{
	struct pr_src src = {.ops = ops, .st = st};

	if (!ops || !ops->next || !ops->clients || !res) {
		if (res)
			sfs_wl_result_init(res, 0);
		set_err(err, g_strdup("pathrun: no workload ops"));
		return -EINVAL;
	}
	return pr_run(&src, dir, o, res, err);
}
