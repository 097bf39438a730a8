/*
 * test_pathrun.c - workloads as system calls against a real directory.
 *
 * A scripted workload defined here (per client, a list of ops whose paths
 * name the client with '@', formatted into one buffer shared by every
 * client, as a generator's strings are) runs through sfs_pathrun_ops
 * against a private directory under /dev/shm.  The cases check the bytes
 * on disk against sfs_wl_fill, the result's counts and bytes per phase,
 * results against `expect` (missing files, unknown handles), that a
 * barrier holds a client until the others reach it (the order of the
 * done hook's calls), that a client ending early or a generator error
 * never leaves a client waiting, O_DIRECT (on tmpfs, and refused on a
 * ramfs in a private mount namespace when one can be made), bad
 * directories, and `clean`.  No wall-clock timing is asserted, only the
 * order of phases.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "pathrun.h"
#include "testsupport.h"

#define KiB 1024ULL
#define MAXC 4
#define SEED 42

/* ---- the scripted workload ---- */

struct tw_log {
	unsigned c, i; /* client, index of the op in its script */
	enum sfs_wop_type type;
	int rc;
};

struct tw {
	unsigned n;
	const struct sfs_wop *ops[MAXC];
	unsigned len[MAXC];
	unsigned pos[MAXC];
	int fail_client; /* -1, or: next fails for it at fail_pos */
	unsigned fail_pos;
	unsigned barriers[MAXC];    /* BARRIER ops handed to each client */
	char pbuf[128], p2buf[128]; /* shared by all clients */
	struct tw_log log[512];
	unsigned nlog;
};

/* tmpl with every '@' replaced by the client number. */
static const char *subst(char *out, size_t size, const char *tmpl, unsigned c)
{
	size_t k = 0;

	if (!tmpl)
		return NULL;
	for (const char *p = tmpl; *p && k + 4 < size; p++) {
		if (*p == '@')
			k += (size_t)g_snprintf(out + k, size - k, "%u", c);
		else
			out[k++] = *p;
	}
	out[k] = '\0';
	return out;
}

static unsigned tw_clients(void *st)
{
	return ((struct tw *)st)->n;
}

static int tw_next(void *st, unsigned c, sfs_ns_t now, struct sfs_wop *out,
		   char **err)
{
	struct tw *t = st;

	if ((int)c == t->fail_client && t->pos[c] == t->fail_pos) {
		*err = g_strdup("bad line 3");
		return -EINVAL;
	}
	if (t->pos[c] >= t->len[c])
		return 0;
	*out = t->ops[c][t->pos[c]];
	/* label "wait0": a stat, repeated until client 0 has been handed
	 * `mode` barriers */
	if (out->label && !strcmp(out->label, "wait0") &&
	    t->barriers[0] < out->mode)
		out->type = SFS_WOP_STAT;
	else
		t->pos[c]++;
	if (out->type == SFS_WOP_BARRIER)
		t->barriers[c]++;
	out->path = subst(t->pbuf, sizeof(t->pbuf), out->path, c);
	out->path2 = subst(t->p2buf, sizeof(t->p2buf), out->path2, c);
	return 1;
}

static void tw_done(void *st, unsigned c, const struct sfs_wop *op, int rc)
{
	struct tw *t = st;

	assert_true(t->nlog < G_N_ELEMENTS(t->log));
	if (op->label && !strcmp(op->label, "wait0"))
		return;
	t->log[t->nlog++] = (struct tw_log){c, t->pos[c] - 1, op->type, rc};
}

static const struct sfs_workload_ops tw_ops = {
    .name = "pathrun-test",
    .help = "a scripted workload",
    .clients = tw_clients,
    .next = tw_next,
    .done = tw_done,
};

#define SCRIPT(t, c, arr)                                                      \
	do {                                                                   \
		(t)->ops[c] = (arr);                                           \
		(t)->len[c] = G_N_ELEMENTS(arr);                               \
	} while (0)

static struct tw *tw_new(unsigned n)
{
	struct tw *t = g_new0(struct tw, 1);

	t->n = n;
	t->fail_client = -1;
	return t;
}

/* Index of the first log entry of client c at script index i, or -1. */
static int log_at(const struct tw *t, unsigned c, unsigned i)
{
	for (unsigned k = 0; k < t->nlog; k++)
		if (t->log[k].c == c && t->log[k].i == i)
			return (int)k;
	return -1;
}

/* ---- the fixture: a private directory under /dev/shm ---- */

struct fx {
	char *dir;
};

static int fx_setup(void **state)
{
	struct fx *f = g_new0(struct fx, 1);
	char tmpl[] = "/dev/shm/simfs-pathrun-XXXXXX";

	if (!g_mkdtemp(tmpl)) {
		g_free(f);
		return -1;
	}
	f->dir = g_strdup(tmpl);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	sfs_test_rmtree(f->dir);
	g_free(f->dir);
	g_free(f);
	return 0;
}

static char *at(const struct fx *f, const char *rel)
{
	return g_build_filename(f->dir, rel, NULL);
}

/* The file's bytes equal sfs_wl_fill's from 0 (and its size is len). */
static void assert_pattern(const struct fx *f, const char *rel, size_t len)
{
	char *p = at(f, rel), *got = NULL;
	gsize n = 0;

	assert_true(g_file_get_contents(p, &got, &n, NULL));
	assert_int_equal(n, len);
	char *want = g_malloc(len);
	sfs_wl_fill(want, 0, len, SEED);
	assert_memory_equal(got, want, len);
	g_free(want);
	g_free(got);
	g_free(p);
}

static bool exists(const struct fx *f, const char *rel)
{
	char *p = at(f, rel);
	struct stat st;
	bool e = lstat(p, &st) == 0;

	g_free(p);
	return e;
}

static int run(struct tw *t, const char *dir, bool verbose,
	       struct sfs_wl_result *res, char **err)
{
	struct sfs_pathrun_opts o = {.verbose = verbose, .seed = SEED};

	*err = NULL;
	return sfs_pathrun_ops(&tw_ops, t, dir, &o, res, err);
}

static void run_ok(struct tw *t, const char *dir, struct sfs_wl_result *res)
{
	char *err = NULL;
	int rc = run(t, dir, false, res, &err);

	if (rc)
		print_error("pathrun: %s\n", err ? err : "?");
	assert_int_equal(rc, 0);
	assert_null(err);
}

/* ---- the write pattern ---- */

static void test_pathrun_fill(void **state)
{
	uint8_t a[64], b[64], c[64];

	sfs_wl_fill(a, 0, sizeof(a), 7);
	/* any range on its own gives the same bytes */
	sfs_wl_fill(b, 3, 50, 7);
	assert_memory_equal(a + 3, b, 50);
	sfs_wl_fill(b, 0, 5, 7);
	assert_memory_equal(a, b, 5);
	/* another seed, other bytes */
	sfs_wl_fill(c, 0, sizeof(c), 8);
	assert_memory_not_equal(a, c, sizeof(a));
	/* not a constant: the words differ */
	assert_memory_not_equal(a, a + 8, 8);
}

/* ---- two clients, every op type ---- */

static const char hello[] = "hello world";

static const struct sfs_wop basic_ops[] = {
    {.type = SFS_WOP_MKDIR, .path = "d@", .mode = 0755},
    {.type = SFS_WOP_OPEN,
     .path = "d@/f",
     .fd = 3,
     .flags = O_CREAT | O_RDWR | O_TRUNC,
     .mode = 0644},
    /* at the handle's position: 0, then 5000 */
    {.type = SFS_WOP_WRITE, .fd = 3, .off = SFS_WOP_OFF_CUR, .len = 5000},
    {.type = SFS_WOP_WRITE, .fd = 3, .off = SFS_WOP_OFF_CUR, .len = 3000},
    {.type = SFS_WOP_WRITE, .fd = 3, .off = 8000, .len = 92000},
    {.type = SFS_WOP_FSYNC, .fd = 3},
    {.type = SFS_WOP_FSYNC, .fd = 3, .flags = SFS_WOP_DATASYNC},
    {.type = SFS_WOP_READ, .fd = 3, .off = 0, .len = 100000},
    {.type = SFS_WOP_READ, .fd = 3, .off = 99000, .len = 4096}, /* 1000 */
    {.type = SFS_WOP_CLOSE, .fd = 3},
    {.type = SFS_WOP_OPEN,
     .path = "d@/t",
     .fd = 4,
     .flags = O_CREAT | O_WRONLY,
     .mode = 0600},
    {.type = SFS_WOP_WRITE,
     .fd = 4,
     .off = 0,
     .len = sizeof(hello) - 1,
     .data = hello},
    {.type = SFS_WOP_FTRUNCATE, .fd = 4, .len = 5},
    {.type = SFS_WOP_CLOSE, .fd = 4},
    /* 14: phase "meta" */
    {.type = SFS_WOP_RENAME, .path = "d@/f", .path2 = "d@/g", .phase = "meta"},
    {.type = SFS_WOP_STAT, .path = "d@/g"},
    {.type = SFS_WOP_READDIR, .path = "d@"},
    {.type = SFS_WOP_LINK, .path = "d@/g", .path2 = "d@/h"},
    {.type = SFS_WOP_SYMLINK, .path = "g", .path2 = "d@/s"},
    {.type = SFS_WOP_UNLINK, .path = "d@/h"},
    {.type = SFS_WOP_SYNC},
    {.type = SFS_WOP_STATFS},
    {.type = SFS_WOP_STAT, .path = "d@/f", .expect = -ENOENT},
    {.type = SFS_WOP_MKDIR, .path = "d@/sub"},
    {.type = SFS_WOP_RMDIR, .path = "d@/sub"},
    {.type = SFS_WOP_READDIR, .path = ""}, /* the root */
    {.type = SFS_WOP_OPEN, .path = "d@/g", .fd = 5, .flags = O_RDONLY},
    {.type = SFS_WOP_READ, .fd = 5, .off = SFS_WOP_OFF_CUR, .len = 4096},
    {.type = SFS_WOP_READ,
     .fd = 5,
     .off = SFS_WOP_OFF_CUR,
     .len = 4096,
     .label = "ReadX"},
    {.type = SFS_WOP_CLOSE, .fd = 5},
};
#define BASIC_META 14

static void test_pathrun_basic(void **state)
{
	struct fx *f = *state;
	struct tw *t = tw_new(2);
	struct sfs_wl_result res;
	const unsigned n = G_N_ELEMENTS(basic_ops);

	SCRIPT(t, 0, basic_ops);
	SCRIPT(t, 1, basic_ops);
	run_ok(t, f->dir, &res);

	assert_int_equal(res.clients, 2);
	assert_int_equal(res.mismatches, 0);
	assert_int_equal(res.first_error, 0);
	assert_int_equal(res.nphases, 2);
	const struct sfs_wl_phase *main_ph =
	    sfs_wl_result_phase(&res, SFS_PATHRUN_PHASE);
	const struct sfs_wl_phase *meta = sfs_wl_result_phase(&res, "meta");
	assert_non_null(main_ph);
	assert_non_null(meta);
	assert_ptr_equal(main_ph, &res.phases[0]);
	assert_int_equal(main_ph->ops, 2 * BASIC_META);
	assert_int_equal(meta->ops, 2 * (n - BASIC_META));
	assert_int_equal(main_ph->bytes_written, 2 * (100000 + 11));
	assert_int_equal(main_ph->bytes_read, 2 * (100000 + 1000));
	assert_int_equal(meta->bytes_written, 0);
	assert_int_equal(meta->bytes_read, 2 * 8192);
	const struct sfs_wl_lat *w = sfs_wl_phase_lat(main_ph, "write");
	assert_non_null(w);
	assert_int_equal(w->count, 2 * 4);
	assert_int_equal(w->errors, 0);
	assert_int_equal(sfs_wl_phase_lat(meta, "ReadX")->count, 2);
	assert_int_equal(sfs_wl_phase_lat(meta, "read")->count, 2);
	assert_int_equal(sfs_wl_phase_lat(meta, "stat")->count, 4);
	/* phases in order; the run spans them (no wall-clock figures) */
	assert_true(main_ph->end_ns >= main_ph->start_ns);
	assert_true(meta->start_ns >= main_ph->start_ns);
	assert_true(meta->end_ns >= meta->start_ns);
	assert_true(res.elapsed_ns >= meta->end_ns - main_ph->start_ns);

	/* done was called once per op, with the result */
	assert_int_equal(t->nlog, 2 * n);
	for (unsigned c = 0; c < 2; c++) {
		int k = log_at(t, c, 22);
		assert_true(k >= 0);
		assert_int_equal(t->log[k].rc, -ENOENT);
		k = log_at(t, c, 0);
		assert_int_equal(t->log[k].type, SFS_WOP_MKDIR);
		assert_int_equal(t->log[k].rc, 0);
	}

	/* what is on disk */
	for (unsigned c = 0; c < 2; c++) {
		char rel[64], *p, *txt = NULL;
		gsize len = 0;

		g_snprintf(rel, sizeof(rel), "d%u/g", c);
		assert_pattern(f, rel, 100000);
		g_snprintf(rel, sizeof(rel), "d%u/t", c);
		p = at(f, rel);
		assert_true(g_file_get_contents(p, &txt, &len, NULL));
		assert_int_equal(len, 5);
		assert_memory_equal(txt, "hello", 5);
		g_free(txt);
		g_free(p);
		g_snprintf(rel, sizeof(rel), "d%u/s", c);
		p = at(f, rel);
		txt = g_file_read_link(p, NULL);
		assert_string_equal(txt, "g");
		g_free(txt);
		g_free(p);
		g_snprintf(rel, sizeof(rel), "d%u/h", c);
		assert_false(exists(f, rel));
		g_snprintf(rel, sizeof(rel), "d%u/f", c);
		assert_false(exists(f, rel));
		g_snprintf(rel, sizeof(rel), "d%u/sub", c);
		assert_false(exists(f, rel));
	}
	sfs_wl_result_free(&res);
	g_free(t);
}

/* ---- results against expect ---- */

static const struct sfs_wop mismatch_ops[] = {
    {.type = SFS_WOP_UNLINK, .path = "missing"}, /* mismatch */
    {.type = SFS_WOP_UNLINK, .path = "missing", .expect = -ENOENT}, /* ok */
    {.type = SFS_WOP_UNLINK, .path = "missing", .expect = SFS_WOP_ANY},
    {.type = SFS_WOP_CLOSE, .fd = 9}, /* -EBADF */
    {.type = SFS_WOP_WRITE, .fd = 9, .len = 10, .label = "WriteX"},
    {.type = SFS_WOP_MKDIR, .path = "x", .expect = -EEXIST}, /* success */
    {.type = SFS_WOP_NTYPES},				     /* no such op */
};

static void test_pathrun_mismatch(void **state)
{
	struct fx *f = *state;
	struct tw *t = tw_new(1);
	struct sfs_wl_result res;
	char *err = NULL;

	SCRIPT(t, 0, mismatch_ops);
	/* verbose: one line per op on stderr */
	assert_int_equal(run(t, f->dir, true, &res, &err), 0);
	assert_null(err);
	assert_int_equal(res.mismatches, 5);
	assert_int_equal(res.first_error, -ENOENT);
	assert_non_null(
	    strstr(res.first_error_what, "client 0: unlink missing"));
	assert_non_null(strstr(res.first_error_what, g_strerror(ENOENT)));
	const struct sfs_wl_phase *ph = &res.phases[0];
	const struct sfs_wl_lat *u = sfs_wl_phase_lat(ph, "unlink");
	assert_int_equal(u->count, 3);
	assert_int_equal(u->errors, 1);
	assert_int_equal(sfs_wl_phase_lat(ph, "close")->errors, 1);
	assert_int_equal(sfs_wl_phase_lat(ph, "WriteX")->errors, 1);
	assert_int_equal(sfs_wl_phase_lat(ph, "mkdir")->errors, 1);
	assert_int_equal(ph->bytes_written, 0);
	const int want[] = {-ENOENT, -ENOENT, -ENOENT, -EBADF,
			    -EBADF,  0,	      -EINVAL};
	assert_int_equal(t->nlog, G_N_ELEMENTS(want));
	for (unsigned i = 0; i < G_N_ELEMENTS(want); i++)
		assert_int_equal(t->log[i].rc, want[i]);
	assert_true(exists(f, "x"));
	sfs_wl_result_free(&res);
	g_free(t);
}

/* ---- barriers ---- */

static const struct sfs_wop bar0_ops[] = {
    {.type = SFS_WOP_OPEN, .path = "b", .fd = 1, .flags = O_CREAT | O_WRONLY},
    {.type = SFS_WOP_WRITE, .fd = 1, .off = 0, .len = 1024 * KiB},
    {.type = SFS_WOP_WRITE, .fd = 1, .off = 1024 * KiB, .len = 1024 * KiB},
    {.type = SFS_WOP_FSYNC, .fd = 1},
    {.type = SFS_WOP_CLOSE, .fd = 1}, /* 4 */
    {.type = SFS_WOP_BARRIER, .phase = "after"},
    {.type = SFS_WOP_STAT, .path = "b"},
};
/* without the barrier, the stat could come before client 0's open */
static const struct sfs_wop bar1_ops[] = {
    {.type = SFS_WOP_BARRIER, .phase = "after"},
    {.type = SFS_WOP_STAT, .path = "b"},
};

static void test_pathrun_barrier(void **state)
{
	struct fx *f = *state;
	struct tw *t = tw_new(2);
	struct sfs_wl_result res;

	SCRIPT(t, 0, bar0_ops);
	SCRIPT(t, 1, bar1_ops);
	run_ok(t, f->dir, &res);
	assert_int_equal(res.mismatches, 0);
	/* client 1 passed its barrier only after client 0's last op before
	 * the barrier was done */
	int close0 = log_at(t, 0, 4), bar1 = log_at(t, 1, 0);
	assert_true(close0 >= 0 && bar1 >= 0);
	assert_true(bar1 > close0);
	assert_true(log_at(t, 1, 1) > close0);
	const struct sfs_wl_phase *first =
	    sfs_wl_result_phase(&res, SFS_PATHRUN_PHASE);
	const struct sfs_wl_phase *after = sfs_wl_result_phase(&res, "after");
	assert_non_null(first);
	assert_non_null(after);
	assert_int_equal(first->ops, 5);
	assert_int_equal(after->ops, 2); /* the barriers are not counted */
	assert_int_equal(first->bytes_written, 2048 * KiB);
	/* the phase after the barrier starts once the one before ended */
	assert_true(after->start_ns >= first->end_ns);
	assert_pattern(f, "b", 2048 * KiB);
	sfs_wl_result_free(&res);
	g_free(t);
}

/*
 * Clients that end while others wait at a barrier: client 2 ends once
 * client 0 has been handed its first barrier, client 1 after the first
 * barrier, once client 0 is at its second one.  Either would leave
 * client 0 waiting for good if an ending client did not open a barrier.
 */
static const struct sfs_wop early0_ops[] = {
    {.type = SFS_WOP_BARRIER},
    {.type = SFS_WOP_BARRIER},
    {.type = SFS_WOP_STAT, .path = ""},
};
static const struct sfs_wop early1_ops[] = {
    {.type = SFS_WOP_BARRIER},
    {.type = SFS_WOP_THINK, .label = "wait0", .mode = 2},
    {.type = SFS_WOP_THINK, .think_ns = 5000000},
};
static const struct sfs_wop early2_ops[] = {
    {.type = SFS_WOP_THINK, .label = "wait0", .mode = 1},
    {.type = SFS_WOP_THINK, .think_ns = 5000000},
};

static void test_pathrun_barrier_early_end(void **state)
{
	struct fx *f = *state;
	struct tw *t = tw_new(3);
	struct sfs_wl_result res;

	SCRIPT(t, 0, early0_ops);
	SCRIPT(t, 1, early1_ops);
	SCRIPT(t, 2, early2_ops);
	run_ok(t, f->dir, &res);
	/* every op of the scripts was done (the waits are not logged) */
	assert_int_equal(t->nlog, 3 + 2 + 1);
	assert_true(log_at(t, 0, 2) >= 0);
	assert_int_equal(res.mismatches, 0);
	const struct sfs_wl_phase *ph = &res.phases[0];
	assert_int_equal(sfs_wl_phase_lat(ph, "stat")->count, 1);
	sfs_wl_result_free(&res);
	g_free(t);
}

/* A generator error stops the run, and frees a client at a barrier. */
static const struct sfs_wop gen0_ops[] = {
    {.type = SFS_WOP_STAT, .path = ""},
    {.type = SFS_WOP_STAT, .path = ""},
};
static const struct sfs_wop gen1_ops[] = {
    {.type = SFS_WOP_BARRIER},
    {.type = SFS_WOP_STAT, .path = ""},
};

static void test_pathrun_generator_error(void **state)
{
	struct fx *f = *state;
	struct tw *t = tw_new(2);
	struct sfs_wl_result res;
	char *err = NULL;

	SCRIPT(t, 0, gen0_ops);
	SCRIPT(t, 1, gen1_ops);
	t->fail_client = 0;
	t->fail_pos = 1;
	assert_int_equal(run(t, f->dir, false, &res, &err), -EINVAL);
	assert_non_null(err);
	assert_string_equal(err, "client 0: bad line 3");
	g_free(err);
	sfs_wl_result_free(&res);
	g_free(t);
}

/* ---- O_DIRECT ---- */

static const struct sfs_wop direct_ops[] = {
    {.type = SFS_WOP_OPEN,
     .path = "o",
     .fd = 1,
     .flags = O_CREAT | O_RDWR | O_DIRECT},
    {.type = SFS_WOP_WRITE, .fd = 1, .off = 0, .len = 64 * KiB},
    {.type = SFS_WOP_WRITE, .fd = 1, .off = 64 * KiB, .len = 64 * KiB},
    {.type = SFS_WOP_READ, .fd = 1, .off = 0, .len = 128 * KiB},
    {.type = SFS_WOP_CLOSE, .fd = 1},
};

/* Does the file system under dir take O_DIRECT? */
static bool takes_direct(const char *dir)
{
	char *p = g_build_filename(dir, "probe", NULL);
	int fd = open(p, O_CREAT | O_RDWR | O_DIRECT, 0600);

	if (fd >= 0)
		close(fd);
	unlink(p);
	g_free(p);
	return fd >= 0;
}

/* The refusal's message: names the file, suggests leaving out direct. */
static bool refusal_ok(int rc, const char *err, const char *dir)
{
	char *file = g_build_filename(dir, "o", NULL);
	bool ok = rc == -EINVAL && err && strstr(err, file) &&
		  strstr(err, "O_DIRECT") && strstr(err, "without `direct`");

	g_free(file);
	return ok;
}

/*
 * In a child with its own mount namespace (and user namespace when not
 * root), mount a ramfs, which has no O_DIRECT, on dir and run there.
 * Exit 0: the clear error; 1: something else; 77: no ramfs to be had.
 */
static void direct_on_ramfs(const char *dir)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	int flags = CLONE_NEWNS | (geteuid() ? CLONE_NEWUSER : 0);

	if (unshare(flags))
		_exit(77);
	if (flags & CLONE_NEWUSER) {
		char m[64];
		g_snprintf(m, sizeof(m), "0 %u 1", (unsigned)uid);
		if (!g_file_set_contents("/proc/self/uid_map", m, -1, NULL))
			_exit(77);
		g_file_set_contents("/proc/self/setgroups", "deny", -1, NULL);
		g_snprintf(m, sizeof(m), "0 %u 1", (unsigned)gid);
		if (!g_file_set_contents("/proc/self/gid_map", m, -1, NULL))
			_exit(77);
	}
	if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) ||
	    mount("none", dir, "ramfs", 0, NULL))
		_exit(77);
	if (takes_direct(dir))
		_exit(77);

	struct tw *t = tw_new(1);
	struct sfs_wl_result res;
	char *err = NULL;
	SCRIPT(t, 0, direct_ops);
	int rc = run(t, dir, false, &res, &err);
	bool ok = refusal_ok(rc, err, dir);
	g_free(err);
	sfs_wl_result_free(&res);
	g_free(t);
	_exit(ok ? 0 : 1);
}

static void test_pathrun_direct(void **state)
{
	struct fx *f = *state;
	struct tw *t = tw_new(1);
	struct sfs_wl_result res;
	char *err = NULL;
	int rc, status;

	SCRIPT(t, 0, direct_ops);
	bool direct = takes_direct(f->dir);
	rc = run(t, f->dir, false, &res, &err);
	if (direct) {
		/* tmpfs has O_DIRECT since Linux 6.6: the run just works */
		assert_int_equal(rc, 0);
		assert_int_equal(res.mismatches, 0);
		assert_int_equal(res.phases[0].bytes_read, 128 * KiB);
		assert_pattern(f, "o", 128 * KiB);
	} else {
		if (!refusal_ok(rc, err, f->dir))
			print_error("rc %d: %s\n", rc, err ? err : "(none)");
		assert_true(refusal_ok(rc, err, f->dir));
	}
	g_free(err);
	sfs_wl_result_free(&res);
	g_free(t);

	/* the refusal, on a file system that surely has no O_DIRECT */
	char sub[512]; /* not on the heap: the child exits without freeing */
	g_snprintf(sub, sizeof(sub), "%s/ram", f->dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		direct_on_ramfs(sub);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		printf("# no ramfs in a private namespace here: the O_DIRECT "
		       "refusal was checked only if tmpfs refused\n");
	else
		assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- the root ---- */

static void test_pathrun_bad_dir(void **state)
{
	struct fx *f = *state;
	struct tw *t = tw_new(1);
	struct sfs_wl_result res;
	char *err = NULL;
	char *missing = at(f, "no-such-dir"), *file = at(f, "plain");

	SCRIPT(t, 0, gen0_ops);
	assert_int_equal(run(t, missing, false, &res, &err), -ENOENT);
	assert_non_null(err);
	assert_non_null(strstr(err, missing));
	assert_non_null(strstr(err, g_strerror(ENOENT)));
	g_free(err);
	sfs_wl_result_free(&res);

	assert_true(g_file_set_contents(file, "x", 1, NULL));
	assert_int_equal(run(t, file, false, &res, &err), -ENOTDIR);
	assert_non_null(strstr(err, file));
	assert_non_null(strstr(err, "not a directory"));
	g_free(err);
	sfs_wl_result_free(&res);

	assert_int_equal(run(t, "", false, &res, &err), -EINVAL);
	assert_non_null(err);
	g_free(err);
	sfs_wl_result_free(&res);

	/* nothing was run */
	assert_int_equal(t->nlog, 0);
	assert_int_equal(t->pos[0], 0);

	/* no workload at all */
	err = NULL;
	assert_int_equal(sfs_pathrun(NULL, f->dir, NULL, &res, &err), -EINVAL);
	g_free(err);
	sfs_wl_result_free(&res);
	g_free(missing);
	g_free(file);
	g_free(t);
}

/* ---- clean ---- */

static const struct sfs_wop clean_ops[] = {
    {.type = SFS_WOP_MKDIR, .path = "new"},
    {.type = SFS_WOP_OPEN,
     .path = "new/f",
     .fd = 1,
     .flags = O_CREAT | O_WRONLY},
    {.type = SFS_WOP_WRITE, .fd = 1, .off = 0, .len = 10000},
    {.type = SFS_WOP_CLOSE, .fd = 1},
    {.type = SFS_WOP_OPEN,
     .path = "keepdir/g",
     .fd = 2,
     .flags = O_CREAT | O_WRONLY},
    {.type = SFS_WOP_CLOSE, .fd = 2},
    {.type = SFS_WOP_SYMLINK, .path = "keep", .path2 = "ln"},
    {.type = SFS_WOP_LINK, .path = "keep", .path2 = "keep2"},
    /* left open: the run closes it */
    {.type = SFS_WOP_OPEN, .path = "leak", .fd = 7, .flags = O_CREAT | O_RDWR},
};

static void test_pathrun_clean(void **state)
{
	struct fx *f = *state;
	struct tw *t = tw_new(1);
	struct sfs_wl_result res;
	struct sfs_pathrun_opts o = {.seed = SEED, .clean = true};
	char *keep = at(f, "keep"), *kd = at(f, "keepdir"),
	     *inner = at(f, "keepdir/inner");
	char *err = NULL;

	assert_true(g_file_set_contents(keep, "data", 4, NULL));
	assert_int_equal(mkdir(kd, 0755), 0);
	assert_true(g_file_set_contents(inner, "more", 4, NULL));
	SCRIPT(t, 0, clean_ops);
	assert_int_equal(sfs_pathrun_ops(&tw_ops, t, f->dir, &o, &res, &err),
			 0);
	assert_int_equal(res.mismatches, 0);
	assert_int_equal(res.phases[0].bytes_written, 10000);
	/* what was there stays, what the run made is gone */
	assert_true(exists(f, "keep"));
	assert_true(exists(f, "keepdir/inner"));
	assert_true(exists(f, "keep2")); /* a new name of an old file */
	assert_false(exists(f, "new"));
	assert_false(exists(f, "keepdir/g"));
	assert_false(exists(f, "ln"));
	assert_false(exists(f, "leak"));
	sfs_wl_result_free(&res);
	g_free(keep);
	g_free(kd);
	g_free(inner);
	g_free(t);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pathrun_fill),
	    T(test_pathrun_basic),
	    T(test_pathrun_mismatch),
	    T(test_pathrun_barrier),
	    T(test_pathrun_barrier_early_end),
	    T(test_pathrun_generator_error),
	    T(test_pathrun_direct),
	    T(test_pathrun_bad_dir),
	    T(test_pathrun_clean),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
