/*
 * fsmark.c - fs_mark 3.3 as a `simfs run` workload (workload.h): threads
 * that each create, write, sync and close files in a directory of their
 * own, then unlink them, for one or more iterations.
 *
 *   fsmark,threads=4,files=1000,size=4K,sync=1
 *
 * Thread t works in "fsmark.<t>" (and its subdirectories "00".."ff" with
 * dirs=).  Per file, as fs_mark's do_run(): mkdir of the target directory
 * (fs_mark makes it for every file and ignores EEXIST), open O_CREAT|
 * O_TRUNC, size bytes in io_size writes, fsync with -S 1, close.  After
 * the loop, by sync= (fs_mark's -S): 2 sync() and one reopen+fsync of the
 * first file; 3/4 reopen+fsync every file in reverse order (4 after a
 * sync()); 5/6 the same in creation order.  Then the files are unlinked
 * unless keep (or loops > 1, as -L implies -k).  Iterations are separated
 * by a barrier: fs_mark forks its threads anew for each.
 *
 * Invariants: per iteration and thread exactly files creates, files *
 * ceil(size/io_size) writes (none for size 0), files fsyncs with sync=1;
 * every op expects 0 but the per-file mkdir, which expects -EEXIST once
 * its directory exists.  Names are fs_mark's: the hex time stamp (virtual
 * seconds from a fixed epoch) padded with '~', then rand_len random
 * capitals and digits from a generator seeded with seed, thread, file.
 * Files/sec per iteration is the sum over threads of files / loop time,
 * from the `now` each thread saw; App Overhead is the time in those
 * mkdirs (the only calls fs_mark leaves out of its syscall sums).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>

#include <glib.h>

#include "workload.h"

#define FSM_MAX_THREADS 64	 /* fs_mark's MAX_THREADS */
#define FSM_MAX_FILES 1000000	 /* MAX_FILES */
#define FSM_MAX_IO (1024 * 1024) /* MAX_IO_BUFFER_SIZE */
#define FSM_NAME_SIZE 128	 /* FILENAME_SIZE */
#define FSM_MAX_LOOPS 10000
#define FSM_SECS_PER_DIR 180	  /* DEFAULT_SECS_PER_DIR */
#define FSM_EPOCH_S 1136073600ULL /* names' time stamps start here */

enum {
	FP_THREADS,
	FP_FILES,
	FP_SIZE,
	FP_IO,
	FP_SYNC,
	FP_DIRS,
	FP_PER_SUBDIR,
	FP_LOOPS,
	FP_KEEP,
	FP_NAME_LEN,
	FP_RAND_LEN,
	FP_SEED,
};

/* fs_mark.h's sync bits, and -S 0..6 in terms of them */
#define FSYNC_BEFORE_CLOSE 0x1
#define FSYNC_SYNC_SYSCALL 0x2
#define FSYNC_FIRST_FILE 0x4
#define FSYNC_POST_REVERSE 0x8
#define FSYNC_POST_IN_ORDER 0x10

static const unsigned fsm_sync_bits[7] = {
    0,
    FSYNC_BEFORE_CLOSE,
    FSYNC_SYNC_SYSCALL | FSYNC_FIRST_FILE,
    FSYNC_POST_REVERSE,
    FSYNC_POST_REVERSE | FSYNC_SYNC_SYSCALL,
    FSYNC_POST_IN_ORDER,
    FSYNC_POST_IN_ORDER | FSYNC_SYNC_SYSCALL,
};

static const char *const fsm_sync_text[7] = {
    "NO SYNC: Test does not issue sync() or fsync() calls.",
    "INBAND FSYNC: fsync() per file in write loop.",
    "SYSTEM SYNC/SINGLE FSYNC: Issue sync() after main write loop and 1 "
    "file fsync() per subdirectory.",
    "POST REVERSE: Reopen and fsync() each file in reverse order after main "
    "write loop.",
    "SYNC POST REVERSE: Issue sync() and then reopen and fsync() each file "
    "in reverse order after main write loop.",
    "POST: Reopen and fsync() each file in order after main write loop.",
    "SYNC POST: Issue sync() and then reopen and fsync() each file in order "
    "after main write loop.",
};

enum fsm_step {
	F_SETUP,    /* mkdir fsmark.<t> (first iteration only) */
	F_FILE,	    /* per file: mkdir, open, writes, fsync, close */
	F_SYNC,	    /* sync() */
	F_POST,	    /* per file: open, fsync, close (in order or reverse) */
	F_FIRST,    /* the first file: open, fsync, close */
	F_LOOP_END, /* (no op) the loop's time ends here */
	F_UNLINK,   /* per file */
	F_BARRIER,  /* between iterations */
	F_DONE,
};

struct fsm_file {
	uint32_t sec;	 /* time stamp of the name, virtual seconds */
	uint32_t subdir; /* 0 without subdirectories */
};

/* Per thread and iteration: what fs_mark's child writes to its log. */
struct fsm_acct {
	sfs_ns_t loop_start_ns;
	sfs_ns_t loop_end_ns;
	sfs_ns_t mkdir_ns; /* the app overhead */
	bool seen;
};

struct fsm_client {
	enum fsm_step step;
	unsigned loop; /* iteration, 0-based */
	uint64_t i;    /* file index within the step */
	uint64_t sub;  /* op within the file */
	uint32_t cur_subdir;
	uint64_t subdir_start_s; /* time-hash: when cur_subdir began */
	uint64_t in_subdir;	 /* round robin: files in cur_subdir */
	uint8_t *dir_made;	 /* subdirectories already made */
	struct fsm_file *files;
	struct fsm_acct *acct; /* one per iteration */
	sfs_ns_t issued_ns;    /* when the op in flight was handed out */
	bool mkdir_in_flight;
	char path[FSM_NAME_SIZE + 64];
	char phase[32];
};

struct fsm_state {
	unsigned threads;
	uint64_t files;
	uint64_t size_bytes;
	uint64_t io_bytes;
	unsigned sync_type; /* -S */
	unsigned sync_bits;
	uint32_t subdirs; /* 0: none */
	uint64_t per_subdir;
	unsigned loops;
	bool keep;
	unsigned name_len, rand_len;
	uint64_t seed;
	struct fsm_client *c;
};

static void fsm_fini(void *st)
{
	struct fsm_state *s = st;

	if (!s)
		return;
	for (unsigned t = 0; s->c && t < s->threads; t++) {
		g_free(s->c[t].files);
		g_free(s->c[t].acct);
		g_free(s->c[t].dir_made);
	}
	g_free(s->c);
	g_free(s);
}

static int fsm_init(const struct sfs_wl_value *v, void **st_out, char **err)
{
	struct fsm_state *s;

	*st_out = NULL;
	if (v[FP_THREADS].u < 1 || v[FP_THREADS].u > FSM_MAX_THREADS) {
		*err = g_strdup_printf("threads=%" PRIu64 ": from 1 to %d",
				       v[FP_THREADS].u, FSM_MAX_THREADS);
		return -EINVAL;
	}
	if (v[FP_FILES].u < 1 || v[FP_FILES].u > FSM_MAX_FILES) {
		*err = g_strdup_printf("files=%" PRIu64 ": from 1 to %d per "
				       "thread",
				       v[FP_FILES].u, FSM_MAX_FILES);
		return -EINVAL;
	}
	if (v[FP_IO].u < 1 || v[FP_IO].u > FSM_MAX_IO) {
		*err = g_strdup_printf("io_size=%s: from 1 byte to 1M",
				       v[FP_IO].s);
		return -EINVAL;
	}
	if (v[FP_SIZE].u > UINT32_MAX) {
		*err = g_strdup_printf("size=%s: fs_mark files are under 4G",
				       v[FP_SIZE].s);
		return -EINVAL;
	}
	if (v[FP_SYNC].u > 6) {
		*err = g_strdup_printf("sync=%" PRIu64 ": fs_mark's -S is 0 "
				       "to 6",
				       v[FP_SYNC].u);
		return -EINVAL;
	}
	if (v[FP_DIRS].u > 256) {
		*err = g_strdup_printf("dirs=%" PRIu64 ": at most 256 "
				       "subdirectories",
				       v[FP_DIRS].u);
		return -EINVAL;
	}
	if (v[FP_PER_SUBDIR].u && v[FP_DIRS].u < 2) {
		*err = g_strdup("per_subdir= needs dirs= of 2 or more (fs_mark "
				"-N needs -D)");
		return -EINVAL;
	}
	if (v[FP_LOOPS].u < 1 || v[FP_LOOPS].u > FSM_MAX_LOOPS) {
		*err = g_strdup_printf("loops=%" PRIu64 ": from 1 to %d",
				       v[FP_LOOPS].u, FSM_MAX_LOOPS);
		return -EINVAL;
	}
	if (v[FP_NAME_LEN].u < 1 || v[FP_NAME_LEN].u > FSM_NAME_SIZE - 1 ||
	    v[FP_RAND_LEN].u > v[FP_NAME_LEN].u) {
		*err = g_strdup_printf("name_len=%" PRIu64 " rand_len=%" PRIu64
				       ": want rand_len <= name_len <= %d",
				       v[FP_NAME_LEN].u, v[FP_RAND_LEN].u,
				       FSM_NAME_SIZE - 1);
		return -EINVAL;
	}
	if (v[FP_NAME_LEN].u == v[FP_RAND_LEN].u && v[FP_RAND_LEN].u < 8) {
		*err = g_strdup("rand_len= under 8 with no time stamp gives "
				"names that repeat");
		return -EINVAL;
	}

	s = g_new0(struct fsm_state, 1);
	s->threads = (unsigned)v[FP_THREADS].u;
	s->files = v[FP_FILES].u;
	s->size_bytes = v[FP_SIZE].u;
	s->io_bytes = v[FP_IO].u;
	s->sync_type = (unsigned)v[FP_SYNC].u;
	s->sync_bits = fsm_sync_bits[s->sync_type];
	s->subdirs = v[FP_DIRS].u >= 2 ? (uint32_t)v[FP_DIRS].u : 0;
	s->per_subdir = v[FP_PER_SUBDIR].u;
	s->loops = (unsigned)v[FP_LOOPS].u;
	s->keep = v[FP_KEEP].u || s->loops > 1;
	s->name_len = (unsigned)v[FP_NAME_LEN].u;
	s->rand_len = (unsigned)v[FP_RAND_LEN].u;
	s->seed = v[FP_SEED].u;
	s->c = g_new0(struct fsm_client, s->threads);
	for (unsigned t = 0; t < s->threads; t++) {
		struct fsm_client *cl = &s->c[t];
		cl->files = g_try_new0(struct fsm_file, s->files);
		cl->acct = g_try_new0(struct fsm_acct, s->loops);
		cl->dir_made = g_new0(uint8_t, 257);
		if (!cl->files || !cl->acct) {
			fsm_fini(s);
			*err = g_strdup("no memory for the file names");
			return -ENOMEM;
		}
	}
	*st_out = s;
	return 0;
}

static unsigned fsm_clients(void *st)
{
	return ((struct fsm_state *)st)->threads;
}

/* "fsmark.<t>[/<xx>]" */
static void fsm_dir(unsigned t, const struct fsm_state *s, uint32_t subdir,
		    char *buf, size_t sz)
{
	if (s->subdirs)
		g_snprintf(buf, sz, "fsmark.%u/%02x", t, subdir);
	else
		g_snprintf(buf, sz, "fsmark.%u", t);
}

/* fs_mark's setup_file_name(): time stamp, '~' padding, random tail. */
static void fsm_path(const struct fsm_state *s, unsigned t, uint64_t i,
		     char *buf, size_t sz)
{
	const struct fsm_client *cl = &s->c[t];
	const struct fsm_file *f = &cl->files[i];
	unsigned seq_len = s->name_len - s->rand_len;
	char seq[24], name[FSM_NAME_SIZE];
	size_t n = 0, sl;
	struct sfs_wl_rng r;

	g_snprintf(seq, sizeof(seq), "%" PRIx64,
		   (uint64_t)(FSM_EPOCH_S + f->sec));
	sl = strlen(seq);
	/* the least significant digits when there are too many */
	for (size_t k = sl > seq_len ? sl - seq_len : 0; k < sl && n < seq_len;
	     k++)
		name[n++] = seq[k];
	while (n < seq_len)
		name[n++] = '~';
	sfs_wl_rng_seed(&r, (s->seed * 1000003ULL + t) * 0x9e3779b97f4a7c15ULL +
				cl->loop * 4000037ULL + i);
	for (unsigned k = 0; k < s->rand_len; k++) {
		unsigned x = (unsigned)sfs_wl_rng_below(&r, 36);
		name[n++] = (char)(x < 10 ? '0' + x : 'A' + x - 10);
	}
	name[n] = '\0';
	fsm_dir(t, s, f->subdir, buf, sz);
	g_strlcat(buf, "/", sz);
	g_strlcat(buf, name, sz);
}

/* Pick file i's directory and time stamp, as the loop reaches it. */
static void fsm_place(struct fsm_state *s, unsigned t, uint64_t i, sfs_ns_t now)
{
	struct fsm_client *cl = &s->c[t];
	uint64_t sec = now / 1000000000ULL;

	cl->files[i].sec = (uint32_t)sec;
	if (!s->subdirs) {
		cl->files[i].subdir = 0;
		return;
	}
	if (s->per_subdir) { /* DIR_ROUND_ROBIN */
		if (cl->in_subdir >= s->per_subdir) {
			cl->cur_subdir = (cl->cur_subdir + 1) % s->subdirs;
			cl->in_subdir = 0;
		}
		cl->in_subdir++;
	} else if (sec - cl->subdir_start_s > FSM_SECS_PER_DIR) {
		/* DIR_TIME_HASH */
		cl->cur_subdir = (cl->cur_subdir + 1) % s->subdirs;
		cl->subdir_start_s = sec;
	}
	cl->files[i].subdir = cl->cur_subdir;
}

/* Ops per file in the F_FILE step. */
static uint64_t fsm_file_ops(const struct fsm_state *s)
{
	uint64_t writes = (s->size_bytes + s->io_bytes - 1) / s->io_bytes;

	return 3 + writes + ((s->sync_bits & FSYNC_BEFORE_CLOSE) ? 1 : 0);
}

/* Fill *o for the current step; false: the step is over. */
static bool fsm_emit(struct fsm_state *s, unsigned t, sfs_ns_t now,
		     struct sfs_wop *o)
{
	struct fsm_client *cl = &s->c[t];
	uint64_t writes = (s->size_bytes + s->io_bytes - 1) / s->io_bytes;

	switch (cl->step) {
	case F_SETUP:
		if (cl->loop > 0 || cl->i > 0)
			return false;
		g_snprintf(cl->path, sizeof(cl->path), "fsmark.%u", t);
		cl->dir_made[0] = 1;
		o->type = SFS_WOP_MKDIR;
		o->path = cl->path;
		o->mode = 0777;
		return true;
	case F_FILE: {
		if (cl->i >= s->files)
			return false;
		uint64_t k = cl->sub;
		if (k == 0) {
			struct fsm_file *f;
			fsm_place(s, t, cl->i, now);
			f = &cl->files[cl->i];
			fsm_dir(t, s, f->subdir, cl->path, sizeof(cl->path));
			o->type = SFS_WOP_MKDIR;
			o->path = cl->path;
			o->mode = 0777;
			o->label = "mkdir";
			uint32_t d = s->subdirs ? f->subdir + 1 : 0;
			o->expect = cl->dir_made[d] ? -EEXIST : 0;
			cl->dir_made[d] = 1;
			return true;
		}
		if (k == 1) {
			fsm_path(s, t, cl->i, cl->path, sizeof(cl->path));
			o->type = SFS_WOP_OPEN;
			o->path = cl->path;
			o->flags = O_CREAT | O_RDWR | O_TRUNC;
			o->mode = 0666;
			o->label = "creat";
			return true;
		}
		k -= 2;
		if (k < writes) {
			o->type = SFS_WOP_WRITE;
			o->off = k * s->io_bytes;
			o->len = MIN(s->io_bytes, s->size_bytes - o->off);
			return true;
		}
		k -= writes;
		if ((s->sync_bits & FSYNC_BEFORE_CLOSE) && k == 0) {
			o->type = SFS_WOP_FSYNC;
			return true;
		}
		o->type = SFS_WOP_CLOSE;
		return true;
	}
	case F_SYNC:
		if (!(s->sync_bits & FSYNC_SYNC_SYSCALL) || cl->i > 0)
			return false;
		o->type = SFS_WOP_SYNC;
		return true;
	case F_POST:
	case F_FIRST: {
		uint64_t n = 0, f;
		if (cl->step == F_FIRST)
			n = (s->sync_bits & FSYNC_FIRST_FILE) ? 1 : 0;
		else if (s->sync_bits &
			 (FSYNC_POST_REVERSE | FSYNC_POST_IN_ORDER))
			n = s->files;
		if (cl->i >= n)
			return false;
		f = (s->sync_bits & FSYNC_POST_REVERSE) && cl->step == F_POST
			? s->files - 1 - cl->i
			: cl->i;
		if (cl->sub == 0) {
			fsm_path(s, t, f, cl->path, sizeof(cl->path));
			o->type = SFS_WOP_OPEN;
			o->path = cl->path;
			o->flags = O_RDONLY;
		} else {
			o->type = cl->sub == 1 ? SFS_WOP_FSYNC : SFS_WOP_CLOSE;
		}
		return true;
	}
	case F_LOOP_END:
		return false;
	case F_UNLINK:
		if (s->keep || cl->i >= s->files)
			return false;
		fsm_path(s, t, cl->i, cl->path, sizeof(cl->path));
		o->type = SFS_WOP_UNLINK;
		o->path = cl->path;
		return true;
	case F_BARRIER:
		if (cl->i > 0 || cl->loop + 1 >= s->loops || s->threads < 2)
			return false;
		o->type = SFS_WOP_BARRIER;
		return true;
	case F_DONE:
		return false;
	}
	return false;
}

static uint64_t fsm_step_subs(const struct fsm_state *s, enum fsm_step st)
{
	if (st == F_FILE)
		return fsm_file_ops(s);
	if (st == F_POST || st == F_FIRST)
		return 3;
	return 1;
}

static int fsm_next(void *st, unsigned t, sfs_ns_t now, struct sfs_wop *out,
		    char **err)
{
	struct fsm_state *s = st;
	struct fsm_client *cl = &s->c[t];
	struct fsm_acct *a;

	(void)err;
	if (cl->mkdir_in_flight && cl->loop < s->loops) {
		cl->acct[cl->loop].mkdir_ns += now - MIN(now, cl->issued_ns);
		cl->mkdir_in_flight = false;
	}
	while (cl->step != F_DONE) {
		a = &cl->acct[cl->loop];
		if (cl->step == F_FILE && cl->i == 0 && cl->sub == 0) {
			a->loop_start_ns = now;
			a->seen = true;
		}
		if (cl->step == F_LOOP_END)
			a->loop_end_ns = now;
		bool first = cl->i == 0 && cl->sub == 0;
		out->expect = 0;
		if (fsm_emit(s, t, now, out)) {
			if (first &&
			    (cl->step == F_SETUP || cl->step == F_FILE ||
			     cl->step == F_UNLINK)) {
				g_snprintf(cl->phase, sizeof(cl->phase),
					   "%s %u",
					   cl->step == F_UNLINK ? "unlink"
								: "iteration",
					   cl->loop + 1);
				out->phase = cl->phase;
			}
			out->fd = 0;
			cl->issued_ns = now;
			cl->mkdir_in_flight =
			    out->type == SFS_WOP_MKDIR && cl->step == F_FILE;
			if (++cl->sub >= fsm_step_subs(s, cl->step)) {
				cl->sub = 0;
				cl->i++;
			}
			return 1;
		}
		cl->i = 0;
		cl->sub = 0;
		if (cl->step == F_BARRIER) {
			if (++cl->loop >= s->loops) {
				cl->step = F_DONE;
				break;
			}
			cl->step = F_FILE;
			continue;
		}
		cl->step++;
	}
	return 0;
}

/*
 * Iteration l's row of the report (its phase is called name): *fps the
 * files/sec summed over threads from each thread's loop time, *app_us the
 * time spent making directories; when a thread kept no accounting of its
 * own, the phase's files over its time and no overhead.  false: the
 * iteration neither ran nor was accounted, and has no row.
 */
static bool fsm_iteration(const struct fsm_state *s,
			  const struct sfs_wl_result *r, unsigned l,
			  const char *name, double *fps, uint64_t *app_us)
{
	bool all = true;

	*fps = 0;
	*app_us = 0;
	for (unsigned t = 0; t < s->threads; t++) {
		const struct fsm_acct *a = &s->c[t].acct[l];
		if (!a->seen || a->loop_end_ns <= a->loop_start_ns) {
			all = false;
			continue;
		}
		*fps += (double)s->files /
			((double)(a->loop_end_ns - a->loop_start_ns) / 1e9);
		*app_us += a->mkdir_ns / 1000;
	}
	if (all)
		return true;
	const struct sfs_wl_phase *ph = sfs_wl_result_phase(r, name);
	*fps = 0;
	*app_us = 0;
	if (ph && ph->end_ns > ph->start_ns)
		*fps = (double)(s->files * s->threads) /
		       ((double)(ph->end_ns - ph->start_ns) / 1e9);
	return ph != NULL;
}

static void fsm_report(void *st, const struct sfs_wl_result *r, FILE *out)
{
	struct fsm_state *s = st;
	uint64_t written = 0;

	fprintf(out, "\n# ");
	fprintf(out, " fs_mark ");
	for (unsigned t = 0; t < s->threads; t++)
		fprintf(out, " -d  fsmark.%u ", t);
	fprintf(out,
		" -n  %" PRIu64 "  -s  %" PRIu64 "  -w  %" PRIu64 "  -S  %u ",
		s->files, s->size_bytes, s->io_bytes, s->sync_type);
	if (s->subdirs)
		fprintf(out, " -D  %u ", s->subdirs);
	if (s->per_subdir)
		fprintf(out, " -N  %" PRIu64 " ", s->per_subdir);
	if (s->loops > 1)
		fprintf(out, " -L  %u ", s->loops);
	fprintf(out,
		"\n#\tVersion 3.3, %u thread(s) starting at virtual time "
		"0 (simfs run)\n",
		s->threads);
	fprintf(out, "#\tSync method: %s\n", fsm_sync_text[s->sync_type]);
	if (s->subdirs)
		fprintf(out,
			"#\tDirectories:  %s across %u subdirectories with "
			"%" PRIu64 " %s.\n",
			s->per_subdir ? "Round Robin between directories"
				      : "Time based hash between directories",
			s->subdirs,
			s->per_subdir ? s->per_subdir
				      : (uint64_t)FSM_SECS_PER_DIR,
			s->per_subdir ? "files per subdirectory"
				      : "seconds per subdirectory");
	else
		fprintf(out, "#\tDirectories:  no subdirectories used\n");
	fprintf(out,
		"#\tFile names: %u bytes long, (%u initial bytes of time stamp "
		"with %u random bytes at end of name)\n",
		s->name_len, s->name_len - s->rand_len, s->rand_len);
	fprintf(out,
		"#\tFiles info: size %" PRIu64 " bytes, written with an IO "
		"size of %" PRIu64 " bytes per write\n",
		s->size_bytes, s->io_bytes);
	fprintf(out, "#\tApp overhead is time in microseconds spent in the "
		     "test not doing file writing related system calls.\n\n");
	fprintf(out, "%6s %12s %12s %12s %16s\n", "FSUse%", "Count", "Size",
		"Files/sec", "App Overhead");
	for (unsigned l = 0; l < s->loops; l++) {
		double fps;
		uint64_t app_us;
		char name[32];

		g_snprintf(name, sizeof(name), "iteration %u", l + 1);
		if (!fsm_iteration(s, r, l, name, &fps, &app_us))
			continue;
		written += s->files * s->threads;
		fprintf(out,
			"%6u %12" PRIu64 " %12" PRIu64 " %12.1f %16" PRIu64
			"\n",
			0u, written, s->size_bytes, fps, app_us);
	}
}

/*
 * fsm_report's Files/sec per iteration as a metric: phase "iteration N",
 * files_s (fsm_iteration's figure).  An iteration the report leaves out
 * gives no row.
 */
static void fsm_metrics(void *st, const struct sfs_wl_result *r,
			sfs_wl_emit_fn *emit, void *ctx)
{
	struct fsm_state *s = st;

	for (unsigned l = 0; l < s->loops; l++) {
		double fps;
		uint64_t app_us;
		char name[32];

		g_snprintf(name, sizeof(name), "iteration %u", l + 1);
		if (fsm_iteration(s, r, l, name, &fps, &app_us))
			emit(ctx, name, "files_s", fps, "files/s");
	}
}

static const struct sfs_wl_param fsm_params[] = {
    [FP_THREADS] = {"threads", SFS_WLP_UINT, "1",
		    "threads, each in a directory of its own (-t, -d)"},
    [FP_FILES] = {"files", SFS_WLP_UINT, "1000",
		  "files per thread and iteration (-n)"},
    [FP_SIZE] = {"size", SFS_WLP_SIZE, "51200", "bytes per file (-s)"},
    [FP_IO] = {"io_size", SFS_WLP_SIZE, "16K", "bytes per write() (-w)"},
    [FP_SYNC] = {"sync", SFS_WLP_UINT, "1",
		 "-S: 0 none, 1 fsync before close, 2 sync+fsync first, "
		 "3 reopen+fsync reverse, 4 sync+3, 5 reopen+fsync in order, "
		 "6 sync+5"},
    [FP_DIRS] = {"dirs", SFS_WLP_UINT, "0",
		 "subdirectories per thread directory (-D; 0 or 1: none)"},
    [FP_PER_SUBDIR] = {"per_subdir", SFS_WLP_UINT, "0",
		       "files per subdirectory, round robin (-N; 0: a new "
		       "subdirectory every 180 s)"},
    [FP_LOOPS] = {"loops", SFS_WLP_UINT, "1",
		  "iterations (-L; more than one keeps the files)"},
    [FP_KEEP] = {"keep", SFS_WLP_BOOL, "no", "keep the files (-k)"},
    [FP_NAME_LEN] = {"name_len", SFS_WLP_UINT, "40",
		     "bytes per file name (-p)"},
    [FP_RAND_LEN] = {"rand_len", SFS_WLP_UINT, "24",
		     "random bytes at the end of a name (-r)"},
    [FP_SEED] = {"seed", SFS_WLP_UINT, "1", "seed of the names"},
    {.name = NULL},
};

const struct sfs_workload_ops sfs_wl_fsmark_ops = {
    .name = "fsmark",
    .help = "fs_mark: threads create, write, fsync and close small files",
    .doc = "After fs_mark 3.3: each of threads= threads works in a "
	   "directory of its own; per file it makes the directory (as "
	   "fs_mark does, expecting EEXIST), opens O_CREAT|O_TRUNC, writes "
	   "size= bytes in io_size= writes, fsyncs with sync=1 and closes; "
	   "sync= 2..6 add fs_mark's sync() and reopen+fsync passes after "
	   "the loop; then the files are unlinked unless keep or loops > 1.  "
	   "The report is fs_mark's table: Files/sec summed over threads "
	   "from each thread's loop time, App Overhead the time in the "
	   "per-file mkdir.  Differs: FSUse% is always 0 (the workload does "
	   "not see statfs results); no per-call min/avg/max (-v: see the "
	   "run's own table); names carry virtual seconds; size=0 makes no "
	   "zero-length write; -S 2 fsyncs only the first file, as fs_mark's "
	   "code does, not one per subdirectory as its help says.",
    .params = fsm_params,
    .init = fsm_init,
    .clients = fsm_clients,
    .next = fsm_next,
    .report = fsm_report,
    .metrics = fsm_metrics,
    .fini = fsm_fini,
};
