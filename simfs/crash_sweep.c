/*
 * crash_sweep.c - plans, point lists and sweeps of crash points in
 * forked processes (crash.h), the summary and the reproducer line.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "crash_priv.h"

int sfs_crash_plan(const struct sfs_crash_params *p, struct sfs_crash_plan *out,
		   char **err)
{
	char *dir, *img, msg[320];
	struct run run = {0};
	int rc;

	memset(out, 0, sizeof(*out));
	if (!crash_workload_find(p->workload)) {
		GString *s = g_string_new(NULL);

		for (const char *const *w = sfs_crash_workloads(); *w; w++)
			g_string_append_printf(s, "%s%s", s->len ? ", " : "",
					       *w);
		*err = g_strdup_printf("unknown workload '%s' (valid: %s)",
				       p->workload ? p->workload : "", s->str);
		g_string_free(s, TRUE);
		return -EINVAL;
	}
	rc =
	    crash_workdir_make(p, "simfs-crash-XXXXXX", &dir, msg, sizeof(msg));
	if (rc) {
		*err = g_strdup(msg);
		return rc;
	}
	img = g_build_filename(dir, "plan.img", NULL);
	rc = crash_copy_image(p->image, img);
	if (rc) {
		*err = g_strdup_printf("cannot copy %s: %s", p->image,
				       g_strerror(-rc));
		goto out;
	}
	rc = crash_run_workload(p, img, true, 0, 0, &run);
	if (!rc && run.err[0])
		rc = -EIO;
	if (rc) {
		*err = g_strdup(run.err);
		goto out;
	}
	out->total_reqs = run.ctr.reqs_seen;
	out->n_ops = run.ops->len - run.n_setup;
	for (guint i = run.n_setup; i < run.ops->len; i++) {
		uint8_t k = g_array_index(run.ops, struct wop, i).kind;

		out->n_durable += k == W_FSYNC || k == W_SYNC || k == W_UNMOUNT;
	}
	out->req_op = g_malloc(MAX(run.req_op->len, 1));
	memcpy(out->req_op, run.req_op->data, run.req_op->len);
out:
	crash_run_free(&run);
	unlink(img);
	rmdir(dir);
	g_free(img);
	g_free(dir);
	return rc;
}

void sfs_crash_plan_free(struct sfs_crash_plan *plan)
{
	g_free(plan->req_op);
	memset(plan, 0, sizeof(*plan));
}

size_t sfs_crash_points(const struct sfs_crash_plan *plan,
			const struct sfs_crash_params *p, const char *spec,
			uint64_t **out)
{
	uint64_t total = plan->total_reqs;
	GArray *a = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	uint64_t k = 0;

	if (spec && g_str_has_prefix(spec, "sample:"))
		k = g_ascii_strtoull(spec + 7, NULL, 10);
	if (k == 0 || k > total + 1) {
		for (uint64_t n = 0; n <= total; n++) {
			bool read = n > 0 && n <= total &&
				    plan->req_op[n - 1] == SFS_IO_READ;

			if (read && p->mode != SFS_CRASH_VOLATILE)
				continue;
			g_array_append_val(a, n);
		}
	} else {
		uint32_t sa[3] = {(uint32_t)p->seed, (uint32_t)(p->seed >> 32),
				  (uint32_t)p->mode};
		GRand *r = g_rand_new_with_seed_array(sa, 3);

		for (uint64_t i = 0; i < k; i++) {
			uint64_t lo = i * (total + 1) / k;
			uint64_t hi = (i + 1) * (total + 1) / k; /* excl */
			uint64_t n = lo + (uint64_t)(g_rand_double(r) *
						     (double)(hi - lo));

			g_array_append_val(a, n);
		}
		g_rand_free(r);
	}
	size_t len = a->len;

	*out = (uint64_t *)(void *)g_array_free(a, FALSE);
	return len;
}

struct child {
	pid_t pid;
	int fd;
	size_t idx;
};

/* A sweep's count of finished checks, for p->progress. */
struct sweep_count {
	size_t done, bad, total;
};

/* One more check finished, with result r. */
static void sweep_done(const struct sfs_crash_params *p, struct sweep_count *n,
		       const struct sfs_crash_result *r)
{
	n->done++;
	n->bad += r->violated;
	if (p->progress)
		p->progress(p->progress_arg, n->done, n->total, n->bad);
}

/* The check of pt could not start: `what` failed with errno e. */
static void sweep_failed(const struct sfs_crash_params *p,
			 struct sweep_count *n, uint64_t pt, const char *what,
			 int e, struct sfs_crash_result *r)
{
	memset(r, 0, sizeof(*r));
	r->point = pt;
	r->violated = true;
	g_snprintf(r->why, sizeof(r->why), "%s: %s", what, g_strerror(e));
	sweep_done(p, n, r);
}

/* Collect one finished child (blocking); fills its result. */
static void reap_one(GArray *kids, const struct sfs_crash_params *p,
		     const uint64_t *points, uint32_t subsets,
		     struct sfs_crash_result *res, struct sweep_count *cnt)
{
	int status = 0;
	pid_t pid;

	do
		pid = waitpid(-1, &status, 0);
	while (pid < 0 && errno == EINTR);
	if (pid < 0) {
		/* no child left to wait for: count the rest as lost */
		while (kids->len) {
			struct child *k = &g_array_index(kids, struct child, 0);

			close(k->fd);
			memset(&res[k->idx], 0, sizeof(res[k->idx]));
			res[k->idx].point = points[k->idx / subsets];
			res[k->idx].violated = true;
			g_snprintf(res[k->idx].why, sizeof(res[k->idx].why),
				   "checker lost: %s", g_strerror(errno));
			sweep_done(p, cnt, &res[k->idx]);
			g_array_remove_index_fast(kids, 0);
		}
		return;
	}
	for (guint i = 0; i < kids->len; i++) {
		struct child *k = &g_array_index(kids, struct child, i);
		struct sfs_crash_result *r = &res[k->idx];
		ssize_t got;

		if (k->pid != pid)
			continue;
		got = read(k->fd, r, sizeof(*r));
		close(k->fd);
		if (got != (ssize_t)sizeof(*r) || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			memset(r, 0, sizeof(*r));
			r->point = points[k->idx / subsets];
			r->subset = (uint32_t)(k->idx % subsets);
			r->dev_seed =
			    sfs_crash_dev_seed(p->seed, r->point, r->subset);
			r->state = r->lo_state = r->same_tree = -1;
			r->violated = true;
			if (WIFSIGNALED(status))
				g_snprintf(r->why, sizeof(r->why),
					   "checker died: signal %d (%s)",
					   WTERMSIG(status),
					   g_strsignal(WTERMSIG(status)));
			else
				g_snprintf(r->why, sizeof(r->why),
					   "checker exited %d without a result",
					   WIFEXITED(status)
					       ? WEXITSTATUS(status)
					       : -1);
		}
		sweep_done(p, cnt, r);
		g_array_remove_index_fast(kids, i);
		return;
	}
}

/* Remove what sfs_crash_check_point may leave under dir (a killed
 * checker cannot clean up after itself), then dir. */
static void sweep_cleanup(const char *dir)
{
	static const char *const files[] = {"crashed.img", "e2fsck.img", NULL};
	GDir *d = g_dir_open(dir, 0, NULL);
	const char *name;

	while (d && (name = g_dir_read_name(d))) {
		char *sub = g_build_filename(dir, name, NULL);

		if (g_str_has_prefix(name, "simfs-crash-"))
			crash_rm_dir(sub, files);
		g_free(sub);
	}
	if (d)
		g_dir_close(d);
	rmdir(dir);
}

size_t sfs_crash_sweep(const struct sfs_crash_params *p0,
		       const uint64_t *points, size_t n, uint32_t subsets,
		       unsigned jobs, struct sfs_crash_result *res)
{
	struct sfs_crash_params pp = *p0, *p = &pp;
	struct sweep_count cnt = {0};
	size_t total, bad = 0;
	GArray *kids = g_array_new(FALSE, FALSE, sizeof(struct child));
	char *sweep_dir = NULL;

	subsets = MAX(subsets, 1);
	total = n * subsets;
	cnt.total = total;
	if (!p->keep_failed && !p->keep_all) {
		/* one directory for the whole sweep, removed at the end */
		char msg[320];

		if (crash_workdir_make(p, "simfs-sweep-XXXXXX", &sweep_dir, msg,
				       sizeof(msg)) == 0)
			pp.workdir = sweep_dir;
	}
	fflush(NULL);
	if (p->progress)
		p->progress(p->progress_arg, 0, total, 0);
	for (size_t i = 0; i < total; i++) {
		uint64_t pt = points[i / subsets];
		uint32_t sub = (uint32_t)(i % subsets);
		int fds[2];
		pid_t pid;

		if (jobs == 0) {
			if (sfs_crash_check_point(p, pt, sub, &res[i]) &&
			    !res[i].violated) {
				res[i].violated = true;
			}
			sweep_done(p, &cnt, &res[i]);
			continue;
		}
		while (kids->len >= jobs)
			reap_one(kids, p, points, subsets, res, &cnt);
		if (pipe(fds)) {
			sweep_failed(p, &cnt, pt, "pipe", errno, &res[i]);
			continue;
		}
		pid = fork();
		if (pid == 0) {
			static const int sigs[] = {SIGSEGV, SIGBUS,  SIGILL,
						   SIGFPE,  SIGABRT, SIGSYS};
			struct sfs_crash_result r;
			int rc;

			/* die of a fault (the parent reports it), do not
			 * jump into a test framework's handler */
			for (size_t j = 0; j < G_N_ELEMENTS(sigs); j++)
				signal(sigs[j], SIG_DFL);
			close(fds[0]);
			rc = sfs_crash_check_point(p, pt, sub, &r);
			if (rc && !r.violated)
				r.violated = true;
			ssize_t w = write(fds[1], &r, sizeof(r));
			_exit(w == (ssize_t)sizeof(r) ? 0 : 3);
		}
		if (pid < 0) {
			int e = errno;

			close(fds[0]);
			close(fds[1]);
			sweep_failed(p, &cnt, pt, "fork", e, &res[i]);
			continue;
		}
		close(fds[1]);
		struct child k = {pid, fds[0], i};
		g_array_append_val(kids, k);
	}
	while (kids->len)
		reap_one(kids, p, points, subsets, res, &cnt);
	g_array_free(kids, TRUE);
	for (size_t i = 0; i < total; i++)
		bad += res[i].violated;
	if (pp.workdir == sweep_dir && sweep_dir)
		sweep_cleanup(sweep_dir);
	g_free(sweep_dir);
	return bad;
}

void sfs_crash_summarize(const struct sfs_crash_result *r, size_t n,
			 struct sfs_crash_summary *s)
{
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < n; i++) {
		s->points++;
		s->violations += r[i].violated;
		s->needs_recovery += r[i].needs_recovery;
		s->damaged += !r[i].crashed_clean && !r[i].needs_recovery;
		s->repaired += !r[i].crashed_clean && !r[i].needs_recovery &&
			       r[i].repaired_clean;
		s->recovered_clean += r[i].recovered_clean;
		s->same_tree += r[i].same_tree == 1;
		s->foreign_points += r[i].foreign + r[i].garbage > 0;
		s->fsync_ok += r[i].fsync_ok;
		s->fsync_lost += r[i].fsync_lost;
	}
}

char *sfs_crash_repro(const struct sfs_crash_params *p,
		      const struct sfs_crash_result *r)
{
	GString *s = g_string_new(NULL);
	const char *opts = p->opts ? p->opts : "";

	/* simfs crash puts these first itself */
	if (g_str_has_prefix(opts, SFS_CRASH_CLI_OPTS ","))
		opts += strlen(SFS_CRASH_CLI_OPTS ",");
	else if (strcmp(opts, SFS_CRASH_CLI_OPTS) == 0)
		opts = "";
	g_string_append_printf(s,
			       "simfs crash -o '%s' --workload %s --mode %s "
			       "--seed %llu --point %llu",
			       opts, p->workload, sfs_crash_mode_name(p->mode),
			       (unsigned long long)p->seed,
			       (unsigned long long)r->point);
	if (r->subset)
		g_string_append_printf(s, " --subset %u", r->subset);
	if (p->long_ops && strcmp(p->workload, "long") == 0)
		g_string_append_printf(s, " --long-ops %u", p->long_ops);
	if (p->run_to_end)
		g_string_append(s, " --run-to-end");
	if (p->promise)
		g_string_append_printf(s, " --promise %s", p->promise);
	g_string_append_printf(s, " %s", p->image);
	return g_string_free(s, FALSE);
}
