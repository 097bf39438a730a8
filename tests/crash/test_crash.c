/*
 * test_crash.c - the crash-consistency matrix (doc/crash.md), suite
 * 'crash'.
 *
 *  - the crash device alone, on a RAM device: cut, tear, volatile cache,
 *    point 0, determinism;
 *  - the checker is not vacuous: data=none held to ordered's promise
 *    breaks it, held to its own it does not;
 *  - every journal policy in the registry (sfs_jnl_nth) the engine
 *    accepts, held to its own promise (sfs_jnl_promise): data=none on an
 *    ext2 image, the journaled ones on an ext3 image with a 1024-block
 *    internal journal (16 MiB, 1 KiB blocks), x every short workload x
 *    every crash point (cut); tear at every point for two workloads,
 *    volatile (four seeded cache outcomes a point) for three; the long
 *    workload at >= 1000 sampled points spread over the policies and
 *    crash modes; one workload run on after the cut;
 *  - delayed allocation (alloc=delalloc) under data=ordered: the short
 *    workloads cut at every point, mix volatile, long at 100 points;
 *  - metadata_csum (part "mke2fs-ext4"): the image plain `mke2fs -t ext4`
 *    makes (metadata_csum, 64bit, flex_bg, its own 1024-block journal,
 *    16 MiB, 1 KiB blocks; inode tables left for lazy zeroing, which the
 *    first read-write mount does and a crash may cut short: the checker
 *    opens the recovered images read-only, as it may, doc/internals.md
 *    2.5) under data=ordered with ext4's delayed
 *    allocation and under data=journal with extent trees: the short
 *    workloads cut at every point, mix volatile; every recovered image
 *    must pass e2fsck, which verifies every checksum, and simfs's replay;
 *  - `simfs crash` (sfs_cmd_crash) end to end;
 *  - four clients (threads) in flight at the cut, on a real clock with
 *    an emulated SSD, every policy (part "concurrent", test_crash_
 *    concurrent): recovered image clean, fsync'd files whole, no foreign
 *    blocks where the promise says so.
 *
 * It runs in parts (basics, then POLICY-cut, POLICY-volatile,
 * POLICY-long for every policy of the registry and delalloc, then
 * mke2fs-ext4-cut and mke2fs-ext4-volatile, then concurrent; see main),
 * one meson test each, side by side: `test_crash PART...`, or no
 * argument for all of them in one process.
 *
 * Each cell runs its points in forked processes (one per point, as many
 * at a time as there are CPUs).  A failure prints the mode, workload,
 * crash point, seeds and the `simfs crash` command that reproduces it.
 * SIMFS_CRASH_SEED (default 1) and SIMFS_CRASH_LONG_POINTS (default 1000)
 * override the seed and the long workload's sample.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "config.h"
#include "crash.h"
#include "crashdev.h"
#include "models/journal/jbd2.h"
#include "testsupport.h"

/*
 * While the journaled policies are being written, the matrix runs the
 * ones the engine accepts and requires only "none".  Flip to 1 once
 * writeback, ordered and journal have landed: then a missing one fails.
 */
#define CRASH_REQUIRE_ALL_POLICIES 1

#define IMG_BYTES (16u << 20)
#define IMG_BS 1024u
#define JOURNAL_BLOCKS 1024u
#define CELL_OPTS "mem=1M,device=none"

#define MAX_POLICIES 16 /* room in the registry walk below */

struct suite {
	char *dir;
	char *ext2; /* base images, never modified */
	char *ext3;
	char *ext4csum; /* plain mke2fs -t ext4 (metadata_csum) */
	const char *all_pol[MAX_POLICIES]; /* the journal policy registry */
	unsigned nall;
	const char *pol[MAX_POLICIES]; /* policies the engine accepts */
	unsigned npol;
	unsigned jobs;
	uint64_t seed;
	unsigned long_points;
	bool failed; /* keep the images: the reproduce lines name them */
};

static struct suite S;

/* ------------------------------------------------------------ setup */

static void make_images(void)
{
	struct sfs_bdev *bd;
	char *err = NULL;
	int rc;

	S.dir = sfs_test_tmpdir();
	S.ext2 = g_build_filename(S.dir, "ext2.img", NULL);
	S.ext3 = g_build_filename(S.dir, "ext3.img", NULL);
	assert_int_equal(sfs_test_mkimage(S.ext2, IMG_BYTES, IMG_BS), 0);
	assert_int_equal(sfs_test_mkimage(S.ext3, IMG_BYTES, IMG_BS), 0);
	assert_int_equal(sfs_bdev_open_file(S.ext3, 0, 0, &bd), 0);
	rc = sfs_jbd2_add_internal(bd, JOURNAL_BLOCKS,
				   SFS_JBD2_PLACE_FIRST_FREE, &err);
	if (rc)
		print_error("sfs_jbd2_add_internal: %s\n", err ? err : "?");
	g_free(err);
	sfs_bdev_close(bd);
	assert_int_equal(rc, 0);
	assert_true(sfs_test_fsck_clean(S.ext2, NULL));
	assert_true(sfs_test_fsck_clean(S.ext3, NULL));
	S.ext4csum = g_build_filename(S.dir, "ext4csum.img", NULL);
	assert_int_equal(
	    sfs_test_mke2fs(S.ext4csum, IMG_BYTES, IMG_BS, "ext4", NULL), 0);
	assert_true(sfs_test_fsck_clean(S.ext4csum, NULL));
}

/* The journal policies (walking the registry) and those whose data=
 * name the engine accepts (config.c's list). */
static void probe_policies(void)
{
	const struct sfs_jnl_ops *o;
	struct sfs_config cfg;

	S.nall = S.npol = 0;
	for (unsigned i = 0; (o = sfs_jnl_nth(i)); i++) {
		char *opts = g_strdup_printf("data=%s", o->name);
		char *err = NULL;

		if (S.nall == MAX_POLICIES) {
			fprintf(stderr,
				"test_crash: more than %d journal "
				"policies: raise MAX_POLICIES\n",
				MAX_POLICIES);
			exit(2);
		}
		S.all_pol[S.nall++] = o->name;
		sfs_config_defaults(&cfg);
		if (sfs_config_parse(&cfg, opts, NULL, &err) == 0)
			S.pol[S.npol++] = o->name;
		g_free(err);
		g_free(opts);
	}
}

static int group_setup(void **state)
{
	const char *s = g_getenv("SIMFS_CRASH_SEED");
	const char *lp = g_getenv("SIMFS_CRASH_LONG_POINTS");
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	S.seed = s ? g_ascii_strtoull(s, NULL, 0) : 1;
	S.long_points = lp ? (unsigned)g_ascii_strtoull(lp, NULL, 0) : 1000;
	S.jobs = ncpu > 0 ? (unsigned)MIN(ncpu, 16) : 1;
	make_images();
	probe_policies();
	printf("# crash suite: seed %llu, %u jobs, policies:",
	       (unsigned long long)S.seed, S.jobs);
	for (unsigned i = 0; i < S.npol; i++)
		printf(" %s", S.pol[i]);
	printf("\n");
	return 0;
}

static int group_teardown(void **state)
{
	if (S.dir && S.failed)
		printf("# base images kept in %s for the reproduce lines\n",
		       S.dir);
	else if (S.dir)
		sfs_test_rmtree(S.dir);
	g_free(S.dir);
	g_free(S.ext2);
	g_free(S.ext3);
	g_free(S.ext4csum);
	return 0;
}

/* -------------------------------------------------- the crash device */

/* A RAM device with the crash device on top. */
static struct sfs_bdev *crash_over_ram(struct sfs_bdev **ram)
{
	*ram = sfs_ramdev_new(1 << 20);
	return sfs_crashdev_new(*ram);
}

static void fill(uint8_t *b, size_t n, uint8_t v)
{
	memset(b, v, n);
}

static bool all_of(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* cut: requests 1..n land, later writes vanish, reads still read. */
static void test_crashdev_cut(void **state)
{
	struct sfs_bdev *ram, *cd = crash_over_ram(&ram);
	struct sfs_crashdev_counters c;
	uint8_t buf[4096], got[4096];

	sfs_crashdev_arm(cd, SFS_CRASH_CUT, 3, 42);
	for (int i = 0; i < 5; i++) {
		fill(buf, sizeof(buf), (uint8_t)(i + 1));
		assert_int_equal(sfs_bdev_write(cd, SFS_IO_DATA,
						(uint64_t)i * 4096, buf, 4096),
				 0);
	}
	assert_true(sfs_crashdev_crashed(cd));
	for (int i = 0; i < 5; i++) {
		assert_int_equal(sfs_bdev_read(cd, SFS_IO_DATA,
					       (uint64_t)i * 4096, got, 4096),
				 0);
		assert_int_equal(got[17], i < 3 ? i + 1 : 0);
	}
	assert_int_equal(sfs_bdev_flush(cd), 0);
	sfs_crashdev_counters(cd, &c);
	assert_int_equal(c.crash_point, 3);
	assert_int_equal(c.writes_seen, 5);
	assert_int_equal(c.writes_landed, 3);
	assert_int_equal(c.writes_dropped, 2);
	assert_int_equal(c.flushes_seen, 1);
	assert_int_equal(c.reqs_seen, 11);
	assert_int_equal(sfs_ramdev_data(ram)[3 * 4096], 0);
	sfs_bdev_close(cd);
}

/* tear: the write at the point keeps a seeded prefix of whole sectors,
 * never all of it; the same seed tears the same way. */
static void test_crashdev_tear(void **state)
{
	GHashTable *kept = g_hash_table_new(g_direct_hash, g_direct_equal);

	for (uint64_t seed = 0; seed < 64; seed++) {
		uint64_t k[2];

		for (int rep = 0; rep < 2; rep++) {
			struct sfs_bdev *ram, *cd = crash_over_ram(&ram);
			struct sfs_crashdev_counters c;
			uint8_t buf[4096];
			const uint8_t *d;
			uint64_t n = 0;

			fill(buf, sizeof(buf), 0xAB);
			sfs_crashdev_arm(cd, SFS_CRASH_TEAR, 2, seed);
			assert_int_equal(
			    sfs_bdev_write(cd, SFS_IO_DATA, 0, buf, 1024), 0);
			assert_int_equal(
			    sfs_bdev_write(cd, SFS_IO_DATA, 8192, buf, 4096),
			    0);
			sfs_crashdev_counters(cd, &c);
			assert_int_equal(c.writes_torn, 1);
			d = sfs_ramdev_data(ram);
			while (n < 4096 && d[8192 + n] == 0xAB)
				n++;
			assert_int_equal(n, c.torn_kept_bytes);
			assert_int_equal(n % SFS_CRASH_SECTOR, 0);
			assert_true(n < 4096);
			assert_true(all_of(d, 1024, 0xAB));
			k[rep] = n;
			sfs_bdev_close(cd);
		}
		assert_int_equal(k[0], k[1]);
		g_hash_table_add(kept, GSIZE_TO_POINTER(k[0] + 1));
	}
	assert_true(g_hash_table_size(kept) >= 4); /* the seed matters */
	g_hash_table_destroy(kept);
}

/* volatile: writes wait in a cache the reads see; a flush makes them
 * durable; the crash applies a seeded subset, never an older write over
 * a newer one of the same sector. */
static void test_crashdev_volatile(void **state)
{
	unsigned outcome[4] = {0};

	for (uint64_t seed = 0; seed < 200; seed++) {
		struct sfs_bdev *ram, *cd = crash_over_ram(&ram);
		uint8_t a[2048], b[2048], got[2048];
		const uint8_t *d;
		const struct sfs_crashdev_rec *log;
		size_t n;

		fill(a, sizeof(a), 'a');
		fill(b, sizeof(b), 'b');
		sfs_crashdev_set_logging(cd, true);
		sfs_crashdev_arm(cd, SFS_CRASH_VOLATILE, 100, seed);
		/* durable part: one write, then a flush */
		assert_int_equal(
		    sfs_bdev_write(cd, SFS_IO_DATA, 65536, a, 1024), 0);
		assert_int_equal(sfs_bdev_flush(cd), 0);
		d = sfs_ramdev_data(ram);
		assert_int_equal(d[65536], 'a');
		/* the cache: a then b over the same 2 KiB */
		assert_int_equal(sfs_bdev_write(cd, SFS_IO_DATA, 0, a, 2048),
				 0);
		assert_int_equal(sfs_bdev_write(cd, SFS_IO_DATA, 0, b, 2048),
				 0);
		assert_int_equal(d[0], 0); /* not below yet */
		assert_int_equal(sfs_bdev_read(cd, SFS_IO_DATA, 0, got, 2048),
				 0);
		assert_int_equal(got[0], 'b'); /* reads see the cache */
		sfs_crashdev_crash_now(cd);
		log = sfs_crashdev_log(cd, &n);
		assert_int_equal(n, 5);
		assert_int_equal(log[1].fate, SFS_CRASH_LANDED);
		assert_int_equal(log[0].fate, SFS_CRASH_FLUSHED);
		if (log[3].fate == SFS_CRASH_APPLIED) {
			assert_true(all_of(d, 2048, 'b')); /* a never over b */
			outcome[2]++;
		} else if (log[3].fate == SFS_CRASH_TORN) {
			assert_true(all_of(d, log[3].kept_bytes, 'b'));
			outcome[3]++;
		} else if (log[2].fate == SFS_CRASH_APPLIED) {
			assert_true(all_of(d, 2048, 'a'));
			outcome[1]++;
		} else if (log[2].fate == SFS_CRASH_LOST) {
			assert_true(all_of(d, 2048, 0));
			outcome[0]++;
		} else {
			assert_int_equal(log[2].fate, SFS_CRASH_TORN);
			assert_true(all_of(d, log[2].kept_bytes, 'a'));
			assert_true(all_of(d + log[2].kept_bytes,
					   2048 - log[2].kept_bytes, 0));
			outcome[3]++;
		}
		assert_int_equal(d[65536], 'a');
		sfs_bdev_close(cd);
	}
	for (int i = 0; i < 4; i++)
		assert_true(outcome[i] > 0);
}

/* Point 0 kills the device at arming; closing an armed live device cuts
 * the power then (volatile: the cache is resolved). */
static void test_crashdev_point0_and_close(void **state)
{
	struct sfs_bdev *ram, *cd = crash_over_ram(&ram);
	uint8_t buf[512];
	struct sfs_crashdev_counters c;

	fill(buf, sizeof(buf), 7);
	sfs_crashdev_arm(cd, SFS_CRASH_CUT, 0, 1);
	assert_true(sfs_crashdev_crashed(cd));
	assert_int_equal(sfs_bdev_write(cd, SFS_IO_DATA, 0, buf, 512), 0);
	assert_int_equal(sfs_ramdev_data(ram)[0], 0);
	sfs_crashdev_counters(cd, &c);
	assert_int_equal(c.crash_point, 0);
	assert_int_equal(c.writes_dropped, 1);
	sfs_bdev_close(cd);

	/* unarmed: a plain pass-through */
	cd = crash_over_ram(&ram);
	assert_int_equal(sfs_bdev_write(cd, SFS_IO_DATA, 0, buf, 512), 0);
	assert_int_equal(sfs_ramdev_data(ram)[0], 7);
	assert_false(sfs_crashdev_crashed(cd));
	sfs_bdev_close(cd);
}

/* ------------------------------------------------------ the checker */

static const char *image_for(const char *policy)
{
	return strcmp(policy, "none") == 0 ? S.ext2 : S.ext3;
}

/* One cell on image (NULL: the policy's own, image_for): plan, points,
 * sweep; print what failed; returns the sweep's violations (and the
 * summary). */
static size_t run_cell(const char *image, const char *policy,
		       const char *workload, enum sfs_crash_mode mode,
		       const char *spec, uint32_t subsets, bool run_to_end,
		       const char *promise, struct sfs_crash_summary *sum)
{
	char *opts = g_strdup_printf(CELL_OPTS ",data=%s", policy);
	struct sfs_crash_params p = {
	    .image = image ? image : image_for(policy),
	    .opts = opts,
	    .workload = workload,
	    .seed = S.seed,
	    .mode = mode,
	    .run_to_end = run_to_end,
	    .promise = promise,
	};
	struct sfs_crash_plan plan;
	struct sfs_crash_result *res;
	uint64_t *points;
	char *err = NULL;
	size_t n, bad, shown = 0;
	gint64 t0 = g_get_monotonic_time();
	int rc;

	rc = sfs_crash_plan(&p, &plan, &err);
	if (rc) {
		print_error("data=%s workload=%s: dry run failed: %s\n", policy,
			    workload, err ? err : "?");
		g_free(err);
		g_free(opts);
		fail();
	}
	n = sfs_crash_points(&plan, &p, spec, &points);
	res = g_new0(struct sfs_crash_result, n * subsets);
	bad = sfs_crash_sweep(&p, points, n, subsets, S.jobs, res);
	sfs_crash_summarize(res, n * subsets, sum);
	if (bad && !promise)
		S.failed = true;
	for (size_t i = 0; i < n * subsets && shown < (promise ? 3 : 10); i++) {
		char *r;

		if (!res[i].violated)
			continue;
		r = sfs_crash_repro(&p, &res[i]);
		printf("# %s data=%s workload=%s mode=%s point=%llu seed=%llu"
		       " devseed=%llu op=%s: %s\n#   reproduce: %s\n",
		       promise ? "caught (as expected)" : "FAIL", policy,
		       workload, sfs_crash_mode_name(mode),
		       (unsigned long long)res[i].point,
		       (unsigned long long)S.seed,
		       (unsigned long long)res[i].dev_seed, res[i].op_desc,
		       res[i].why, r);
		g_free(r);
		shown++;
	}
	printf("# %-9s %-8s %-8s%s %4zu pts (%3llu reqs) %zu bad | crashed: "
	       "%zu recover %zu damaged, %zu repaired | simfs clean %zu, "
	       "same %zu | foreign %zu | fsync %zu/%zu | %.1fs\n",
	       policy, workload, sfs_crash_mode_name(mode),
	       run_to_end ? "+end"
	       : promise  ? "!"
			  : "",
	       sum->points, (unsigned long long)plan.total_reqs,
	       sum->violations, sum->needs_recovery, sum->damaged,
	       sum->repaired, sum->recovered_clean, sum->same_tree,
	       sum->foreign_points, sum->fsync_ok,
	       sum->fsync_ok + sum->fsync_lost,
	       (double)(g_get_monotonic_time() - t0) / 1e6);
	fflush(stdout);
	g_free(res);
	g_free(points);
	sfs_crash_plan_free(&plan);
	g_free(opts);
	return bad;
}

/* Which policies ran: "none" always; all four once they have landed. */
static void test_crash_policies(void **state)
{
	bool none = false;

	for (unsigned i = 0; i < S.npol; i++)
		none |= strcmp(S.pol[i], "none") == 0;
	assert_true(none);
	if (CRASH_REQUIRE_ALL_POLICIES)
		assert_int_equal(S.npol, S.nall);
	for (unsigned i = 0; i < S.npol; i++)
		assert_non_null(sfs_crash_promise_of(S.pol[i]));
}

/* The checker is not vacuous: ext2 held to ordered's promise breaks it
 * (fsck damage, lost fsyncs, stale blocks), held to its own it holds;
 * writeback held to ordered's shows stale data. */
static void test_crash_checker_catches(void **state)
{
	struct sfs_crash_summary s;

	for (unsigned i = 0; i < S.npol; i++) {
		if (strcmp(S.pol[i], "writeback") != 0)
			continue;
		assert_true(run_cell(NULL, "writeback", "long", SFS_CRASH_CUT,
				     "sample:40", 1, false, "ordered", &s) > 0);
		assert_true(s.foreign_points > 0);
	}

	assert_true(run_cell(NULL, "none", "unlink", SFS_CRASH_CUT, "all", 1,
			     false, "ordered", &s) > 0);
	assert_true(s.damaged > 0);
	assert_int_equal(run_cell(NULL, "none", "unlink", SFS_CRASH_CUT, "all",
				  1, false, NULL, &s),
			 0);
	assert_int_equal(s.repaired, s.damaged);
}

/* The same point twice: the same request count, losses, verdicts. */
static void test_crash_deterministic(void **state)
{
	const char *pol = S.pol[S.npol - 1];
	char *opts = g_strdup_printf(CELL_OPTS ",data=%s", pol);
	struct sfs_crash_params p = {.image = image_for(pol),
				     .opts = opts,
				     .workload = "mix",
				     .seed = S.seed,
				     .mode = SFS_CRASH_VOLATILE};
	struct sfs_crash_plan a, b;
	struct sfs_crash_result r1, r2;
	char *err = NULL;

	assert_int_equal(sfs_crash_plan(&p, &a, &err), 0);
	assert_int_equal(sfs_crash_plan(&p, &b, &err), 0);
	assert_int_equal(a.total_reqs, b.total_reqs);
	assert_memory_equal(a.req_op, b.req_op, a.total_reqs);
	for (uint64_t pt = 1; pt < a.total_reqs; pt += a.total_reqs / 5 + 1) {
		assert_int_equal(sfs_crash_check_point(&p, pt, 0, &r1), 0);
		assert_int_equal(sfs_crash_check_point(&p, pt, 0, &r2), 0);
		assert_int_equal(r1.crash_req, r2.crash_req);
		assert_int_equal(r1.dropped, r2.dropped);
		assert_int_equal(r1.applied, r2.applied);
		assert_int_equal(r1.crashed_clean, r2.crashed_clean);
		assert_int_equal(r1.state, r2.state);
		assert_int_equal(r1.violated, r2.violated);
	}
	sfs_crash_plan_free(&a);
	sfs_crash_plan_free(&b);
	g_free(opts);
}

/* A matrix cell, as a cmocka test's state. */
struct cell {
	bool ext4csum; /* on S.ext4csum, not the policy's own image */
	const char *policy;
	const char *workload;
	enum sfs_crash_mode mode;
	const char *spec;
	uint32_t subsets;
	bool run_to_end;
};

static void test_crash_cell(void **state)
{
	const struct cell *c = *state;
	struct sfs_crash_summary s;
	size_t bad =
	    run_cell(c->ext4csum ? S.ext4csum : NULL, c->policy, c->workload,
		     c->mode, c->spec, c->subsets, c->run_to_end, NULL, &s);

	assert_true(s.points > 0);
	assert_int_equal(bad, 0);
	if (strcmp(c->policy, "none") != 0 && c->mode == SFS_CRASH_CUT &&
	    strcmp(c->spec, "all") == 0)
		assert_true(s.needs_recovery > 0); /* the journal was used */
}

/* `simfs crash` end to end: one point (exit 0), a bad option (exit 2). */
static int run_main(char **argv, int argc)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 1);
		dup2(fd, 2);
		_exit(sfs_cmd_crash(argc, argv));
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_crash_main(void **state)
{
	char *ok[] = {"crash",	"-o",	    "data=none", "--workload",
		      "rename", "--points", "sample:4",	 "--jobs",
		      "2",	S.ext2,	    NULL};
	char *one[] = {"crash", "--workload", "append", "--point",
		       "3",	"--mode",     "tear",	"--seed",
		       "9",	S.ext2,	      NULL};
	char *badopt[] = {"crash", "--mode", "sideways", S.ext2, NULL};
	char *noimg[] = {"crash", "--workload", "mix", NULL};
	char *broke[] = {"crash",   "--workload", "unlink", "--promise",
			 "ordered", S.ext2,	  NULL};

	assert_int_equal(run_main(ok, 10), 0);
	assert_int_equal(run_main(one, 10), 0);
	assert_int_equal(run_main(badopt, 4), 2);
	assert_int_equal(run_main(noimg, 3), 2);
	assert_int_equal(run_main(broke, 6), 1);
}

/* ------------------------------------- concurrent clients at the cut */

/*
 * Several clients (threads) drive one engine at once, on a real clock
 * with an emulated SSD (clock=emulate), so their device waits overlap
 * outside the engine's lock and commits carry several clients' fsyncs;
 * the power is cut after request N while their operations are in flight.
 * Each client's operations are fixed by the seed alone (its own directory
 * /cK; create, write, fsync every other file, unlink some of the others);
 * the interleaving is the host's, so the check holds for any interleaving:
 *  - the recovered image (simfs recovery, or e2fsck -fy for data=none)
 *    passes e2fsck -fn;
 *  - fsync_durable: a file whose fsync returned before the cut (the crash
 *    device had not dropped a request yet) is there with its size and
 *    every block;
 *  - no_foreign: no block of any file holds another file's data.
 * Some point must have two clients with an operation begun before the
 * cut and ended after it, or the test proves nothing about concurrency.
 */
#define CC_CLIENTS 4
#define CC_FILES 24
#define CC_MAXBLK 6
#define CC_POINTS 8
#define CC_OPTS "mem=1M,device=ssd,clock=emulate"

/* dst = a copy of src (a base image), 0 or -1. */
static int copy_file(const char *src, const char *dst)
{
	gchar *data = NULL;
	gsize len = 0;
	bool ok = g_file_get_contents(src, &data, &len, NULL) &&
		  g_file_set_contents(dst, data, (gssize)len, NULL);

	g_free(data);
	return ok ? 0 : -1;
}

static bool crash_all_zero_block(const uint8_t *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

struct cc_file {
	uint32_t nblk;
	bool fsynced;  /* fsync issued (even files) */
	bool unlinked; /* unlink issued (some odd files) */
	bool durable;  /* fsync returned 0 before the cut */
};

struct cc_client {
	struct sfs_fs *fs;
	struct sfs_bdev *cd;
	sfs_ino_t dir;
	unsigned id;
	uint32_t bs;
	uint64_t seed;
	struct cc_file f[CC_FILES];
	bool straddled; /* an op began before the cut and ended after */
	int err;	/* first failure before the cut */
};

/* Block idx of file (client, file): a header naming it, then a pattern. */
static void cc_fill(uint8_t *b, uint32_t bs, unsigned client, unsigned file,
		    uint32_t idx)
{
	uint32_t h[4] = {0x53434331u, client, file, idx};

	for (uint32_t i = 0; i < bs; i++)
		b[i] = (uint8_t)(client * 37 + file * 11 + idx * 5 + i);
	memcpy(b, h, sizeof(h));
}

/* The client's ops, from its seed only. */
static void cc_plan(struct cc_client *c)
{
	GRand *r = g_rand_new_with_seed((guint32)(c->seed * 131 + c->id));

	for (unsigned j = 0; j < CC_FILES; j++) {
		c->f[j].nblk = (uint32_t)g_rand_int_range(r, 1, CC_MAXBLK + 1);
		c->f[j].fsynced = j % 2 == 0;
		c->f[j].unlinked = j % 4 == 1;
	}
	g_rand_free(r);
}

#define CC_OP(c, call)                                                         \
	do {                                                                   \
		bool before_ = !sfs_crashdev_crashed((c)->cd);                 \
		int rc_ = (call);                                              \
		if (before_ && sfs_crashdev_crashed((c)->cd))                  \
			(c)->straddled = true;                                 \
		if (rc_ && before_ && !(c)->err)                               \
			(c)->err = rc_;                                        \
		last_rc = rc_;                                                 \
		last_before = before_;                                         \
	} while (0)

static gpointer cc_client_run(gpointer arg)
{
	struct cc_client *c = arg;
	uint8_t *buf = g_malloc((size_t)CC_MAXBLK * c->bs);
	sfs_ino_t ino[CC_FILES] = {0};
	bool last_before;
	int last_rc;

	for (unsigned j = 0; j < CC_FILES; j++) {
		struct cc_file *f = &c->f[j];
		char name[16];
		struct sfs_attr at;
		size_t done;

		g_snprintf(name, sizeof(name), "f%02u", j);
		CC_OP(c, sfs_mknod(c->fs, c->dir, name, SFS_S_IFREG | 0644, 0,
				   0, 0, &at));
		if (last_rc)
			continue;
		ino[j] = at.ino;
		for (uint32_t i = 0; i < f->nblk; i++)
			cc_fill(buf + (size_t)i * c->bs, c->bs, c->id, j, i);
		CC_OP(c, sfs_write(c->fs, ino[j], 0, buf,
				   (size_t)f->nblk * c->bs, &done));
		if (f->fsynced) {
			CC_OP(c, sfs_fsync(c->fs, ino[j], false));
			/* every request of the fsync landed */
			f->durable = last_rc == 0 && last_before &&
				     !sfs_crashdev_crashed(c->cd);
		}
		if (j >= 2 && c->f[j - 2].unlinked) {
			g_snprintf(name, sizeof(name), "f%02u", j - 2);
			CC_OP(c, sfs_unlink(c->fs, c->dir, name));
		}
	}
	g_free(buf);
	return NULL;
}

struct cc_run {
	struct cc_client c[CC_CLIENTS];
	uint64_t reqs;	     /* requests after setup */
	unsigned straddling; /* clients with an op across the cut */
};

/* One run on a fresh copy `img` of the base image, cut after request
 * `point` (UINT64_MAX: never). */
static void cc_run(const char *img, const char *policy, uint64_t point,
		   struct cc_run *out)
{
	char *opts = g_strdup_printf(CC_OPTS ",data=%s", policy);
	struct sfs_config cfg;
	struct sfs_bdev *file, *cd;
	struct sfs_fs *fs;
	GThread *t[CC_CLIENTS];
	char *err = NULL;
	uint64_t base;

	memset(out, 0, sizeof(*out));
	sfs_config_defaults(&cfg);
	assert_int_equal(sfs_config_parse(&cfg, opts, NULL, &err), 0);
	assert_int_equal(sfs_bdev_open_file(img, 0, 0, &file), 0);
	cd = sfs_crashdev_new(file);
	assert_int_equal(sfs_fs_open(sfs_bdev_borrow_new(cd), &cfg, &fs, &err),
			 0);
	for (unsigned k = 0; k < CC_CLIENTS; k++) {
		struct cc_client *c = &out->c[k];
		struct sfs_attr at;
		char name[8];

		g_snprintf(name, sizeof(name), "c%u", k);
		assert_int_equal(
		    sfs_mkdir(fs, SFS_ROOT_INO, name, 0755, 0, 0, &at), 0);
		c->fs = fs;
		c->cd = cd;
		c->dir = at.ino;
		c->id = k;
		c->bs = sfs_fs_block_size(fs);
		c->seed = S.seed;
		cc_plan(c);
	}
	assert_int_equal(sfs_fs_sync(fs), 0);
	sfs_crashdev_arm(cd, SFS_CRASH_CUT, point, 0);
	base = sfs_crashdev_seen(cd);
	for (unsigned k = 0; k < CC_CLIENTS; k++)
		t[k] = g_thread_new("cc-client", cc_client_run, &out->c[k]);
	for (unsigned k = 0; k < CC_CLIENTS; k++)
		g_thread_join(t[k]);
	out->reqs = sfs_crashdev_seen(cd) - base;
	for (unsigned k = 0; k < CC_CLIENTS; k++) {
		if (out->c[k].err)
			print_error("client %u: %s before the cut\n", k,
				    g_strerror(-out->c[k].err));
		assert_int_equal(out->c[k].err, 0);
		out->straddling += out->c[k].straddled;
	}
	if (point == UINT64_MAX) {
		assert_int_equal(sfs_fs_close(fs), 0);
	} else {
		sfs_fs_abort(fs);
		sfs_crashdev_crash_now(cd);
	}
	sfs_bdev_close(cd);
	g_free(opts);
}

/* The recovered image against the promise; returns the durable files
 * checked. */
static unsigned cc_check(const char *img, const char *policy,
			 const struct sfs_jnl_promise *pr,
			 const struct cc_run *run, uint64_t point)
{
	char *opts = g_strdup_printf("mem=1M,device=none,data=%s", policy);
	char *out = NULL;
	struct sfs_fs *fs;
	unsigned checked = 0;
	uint8_t *want, *got;
	uint32_t bs;

	if (!pr->journaled) {
		char *cmd =
		    g_strdup_printf("e2fsck -fy %s >/dev/null 2>&1", img);
		int st = system(cmd);

		g_free(cmd);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) < 4);
	}
	fs = sfs_test_open(img, opts); /* simfs recovery */
	assert_int_equal(sfs_fs_close(fs), 0);
	if (!sfs_test_fsck_clean(img, &out))
		print_error("data=%s point %llu: e2fsck -fn after recovery:\n"
			    "%s\n",
			    policy, (unsigned long long)point, out);
	assert_true(sfs_test_fsck_clean(img, NULL));
	g_free(out);
	fs = sfs_test_open(img, opts);
	bs = sfs_fs_block_size(fs);
	want = g_malloc(bs);
	got = g_malloc((size_t)CC_MAXBLK * bs);
	for (unsigned k = 0; k < CC_CLIENTS; k++) {
		struct sfs_attr d;
		char name[16];

		g_snprintf(name, sizeof(name), "c%u", k);
		assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, name, &d), 0);
		for (unsigned j = 0; j < CC_FILES; j++) {
			const struct cc_file *f = &run->c[k].f[j];
			struct sfs_attr at;
			size_t n = 0;
			int rc;

			g_snprintf(name, sizeof(name), "f%02u", j);
			rc = sfs_lookup(fs, d.ino, name, &at);
			if (f->durable && pr->fsync_durable && !f->unlinked) {
				if (rc)
					print_error("data=%s point %llu: "
						    "c%u/%s fsync'd, lost\n",
						    policy,
						    (unsigned long long)point,
						    k, name);
				assert_int_equal(rc, 0);
				assert_int_equal(at.size,
						 (uint64_t)f->nblk * bs);
				checked++;
			}
			if (rc)
				continue;
			assert_int_equal(sfs_read(fs, at.ino, 0,
						  (size_t)CC_MAXBLK * bs, got,
						  &n),
					 0);
			for (uint32_t i = 0; i * bs < n; i++) {
				const uint8_t *b = got + (size_t)i * bs;
				bool ok;

				cc_fill(want, bs, k, j, i);
				ok = memcmp(b, want, bs) == 0;
				if (!ok && f->durable && pr->fsync_durable &&
				    !f->unlinked)
					print_error("data=%s point %llu: c%u/%s"
						    " block %u not as "
						    "fsync'd\n",
						    policy,
						    (unsigned long long)point,
						    k, name, i);
				if (f->durable && pr->fsync_durable &&
				    !f->unlinked)
					assert_true(ok);
				if (!ok && pr->no_foreign)
					assert_true(
					    crash_all_zero_block(b, bs));
			}
		}
	}
	g_free(want);
	g_free(got);
	assert_int_equal(sfs_fs_close(fs), 0);
	g_free(opts);
	return checked;
}

static void test_crash_concurrent(void **state)
{
	const char *pol = *state;
	const struct sfs_jnl_promise *pr = sfs_crash_promise_of(pol);
	char *img = g_build_filename(S.dir, "conc.img", NULL);
	struct cc_run *run = g_new0(struct cc_run, 1);
	unsigned straddled = 0, durable = 0;
	uint64_t total;

	assert_non_null(pr);
	/* the whole run, uncut: how many requests the clients make */
	assert_int_equal(copy_file(image_for(pol), img), 0);
	cc_run(img, pol, UINT64_MAX, run);
	assert_true(sfs_test_fsck_clean(img, NULL));
	total = run->reqs;
	assert_true(total > CC_POINTS);
	for (unsigned i = 1; i <= CC_POINTS; i++) {
		uint64_t point = total * i / (CC_POINTS + 1);

		assert_int_equal(copy_file(image_for(pol), img), 0);
		cc_run(img, pol, point, run);
		durable += cc_check(img, pol, pr, run, point);
		straddled += run->straddling >= 2;
		printf("# data=%s point %llu of ~%llu: %u clients in flight "
		       "at the cut\n",
		       pol, (unsigned long long)point,
		       (unsigned long long)total, run->straddling);
	}
	printf("# data=%s: %u of %d points with >= 2 clients in flight, %u "
	       "fsync'd files checked\n",
	       pol, straddled, CC_POINTS, durable);
	assert_true(straddled > 0);
	if (pr->fsync_durable)
		assert_true(durable > 0);
	unlink(img);
	g_free(img);
	g_free(run);
}

/* ------------------------------------------------------------ main */

/*
 * The suite runs in parts, one meson test each (tests/crash/meson.build),
 * so meson runs them side by side and none comes near its timeout on a
 * loaded machine: "basics" (the device, the checker, `simfs crash`), then
 * for each policy P (none, writeback, ordered, journal, delalloc):
 * "P-cut" (every short workload cut at every point, the tears, the run
 * to the end), "P-volatile" (the short volatile cells), "P-long" (the
 * long workload's sample).  No argument runs every part; --list prints
 * them.  The basics part checks that SIMFS_CRASH_PARTS, the list meson
 * runs, names every part, so a part added here cannot go unrun.
 */
static GPtrArray *cells;     /* struct cell * */
static GPtrArray *names;     /* char * */
static GPtrArray *parts;     /* char *: every part, in order */
static char **selected;	     /* the parts asked for; NULL: all */
static GHashTable *part_len; /* part -> number of tests added */

static bool part_selected(const char *part)
{
	return !selected ||
	       g_strv_contains((const char *const *)selected, part);
}

static void note_part(const char *part)
{
	if (!g_hash_table_contains(part_len, part)) {
		g_ptr_array_add(parts, g_strdup(part));
		g_hash_table_insert(part_len, g_strdup(part),
				    GUINT_TO_POINTER(0));
	}
}

static void count_test(const char *part)
{
	guint n = GPOINTER_TO_UINT(g_hash_table_lookup(part_len, part));

	g_hash_table_insert(part_len, g_strdup(part), GUINT_TO_POINTER(n + 1));
}

/* Every part this program has is in SIMFS_CRASH_PARTS (meson's list). */
static void test_crash_parts_all_run(void **state)
{
	const char *env = g_getenv("SIMFS_CRASH_PARTS");
	char **run;

	if (!env) {
		print_message("# SIMFS_CRASH_PARTS not set: all parts in this "
			      "process\n");
		assert_null(selected);
		return;
	}
	run = g_strsplit_set(env, " ,", -1);
	for (guint i = 0; i < parts->len; i++) {
		if (!g_strv_contains((const char *const *)run, parts->pdata[i]))
			print_error("part %s is not in SIMFS_CRASH_PARTS (add "
				    "it to tests/crash/meson.build)\n",
				    (char *)parts->pdata[i]);
		assert_true(
		    g_strv_contains((const char *const *)run, parts->pdata[i]));
	}
	g_strfreev(run);
}

/* A cell on the policy's own image, or with ext4csum on S.ext4csum. */
static void add_cell_on(GArray *tests, bool ext4csum, const char *pname,
			const char *kind, const char *policy, const char *wl,
			enum sfs_crash_mode mode, const char *spec,
			uint32_t subsets, bool run_to_end)
{
	char *part = g_strdup_printf("%s-%s", pname, kind);
	struct cell *c;
	char *name;

	note_part(part);
	if (!part_selected(part)) {
		g_free(part);
		return;
	}
	count_test(part);
	g_free(part);
	c = g_new0(struct cell, 1);
	c->ext4csum = ext4csum;
	c->policy = policy;
	c->workload = wl;
	c->mode = mode;
	c->spec = g_strdup(spec);
	c->subsets = subsets;
	c->run_to_end = run_to_end;
	name = g_strdup_printf(
	    "test_crash_%s%s_%s_%s%s", ext4csum ? "mke2fs_ext4_" : "", policy,
	    wl, sfs_crash_mode_name(mode), run_to_end ? "_to_end" : "");
	g_ptr_array_add(cells, c);
	g_ptr_array_add(names, name);
	struct CMUnitTest t = {
	    .name = name,
	    .test_func = test_crash_cell,
	    .initial_state = c,
	};
	g_array_append_val(tests, t);
}

static void add_cell(GArray *tests, const char *pname, const char *kind,
		     const char *policy, const char *wl,
		     enum sfs_crash_mode mode, const char *spec,
		     uint32_t subsets, bool run_to_end)
{
	add_cell_on(tests, false, pname, kind, policy, wl, mode, spec, subsets,
		    run_to_end);
}

/* The cells of one journal policy (pname names its parts). */
static void add_policy(GArray *tests, const char *pol, const char *pname)
{
	const char *const *wls = sfs_crash_workloads();
	char spec[32];
	unsigned k;

	for (size_t w = 0; wls[w]; w++)
		if (strcmp(wls[w], "long") != 0)
			add_cell(tests, pname, "cut", pol, wls[w],
				 SFS_CRASH_CUT, "all", 1, false);
	add_cell(tests, pname, "cut", pol, "mix", SFS_CRASH_TEAR, "all", 1,
		 false);
	add_cell(tests, pname, "cut", pol, "unlink", SFS_CRASH_TEAR, "all", 1,
		 false);
	add_cell(tests, pname, "cut", pol, "rename", SFS_CRASH_CUT, "all", 1,
		 true);
	add_cell(tests, pname, "volatile", pol, "mix", SFS_CRASH_VOLATILE,
		 "all", 4, false);
	add_cell(tests, pname, "volatile", pol, "truncate", SFS_CRASH_VOLATILE,
		 "all", 4, false);
	add_cell(tests, pname, "volatile", pol, "rename", SFS_CRASH_VOLATILE,
		 "all", 4, false);
	/* the long workload: its share of the points, half cut, a quarter
	 * tear, a quarter volatile */
	k = (S.long_points + S.npol - 1) / S.npol;
	g_snprintf(spec, sizeof(spec), "sample:%u", (k + 1) / 2);
	add_cell(tests, pname, "long", pol, "long", SFS_CRASH_CUT, spec, 1,
		 false);
	g_snprintf(spec, sizeof(spec), "sample:%u", (k + 3) / 4);
	add_cell(tests, pname, "long", pol, "long", SFS_CRASH_TEAR, spec, 1,
		 false);
	add_cell(tests, pname, "long", pol, "long", SFS_CRASH_VOLATILE, spec, 1,
		 false);
}

/* delayed allocation under data=ordered: a file's recovered size may
 * trail its state's (i_disksize), the rest of the promise holds */
static void add_delalloc(GArray *tests)
{
	static const char pol[] = "ordered,alloc=delalloc";
	const char *const *wls = sfs_crash_workloads();

	for (size_t w = 0; wls[w]; w++)
		if (strcmp(wls[w], "long") != 0)
			add_cell(tests, "delalloc", "cut", pol, wls[w],
				 SFS_CRASH_CUT, "all", 1, false);
	add_cell(tests, "delalloc", "volatile", pol, "mix", SFS_CRASH_VOLATILE,
		 "all", 4, false);
	add_cell(tests, "delalloc", "long", pol, "long", SFS_CRASH_CUT,
		 "sample:100", 1, false);
}

/* Part "mke2fs-ext4-cut" and "-volatile": mke2fs's default ext4
 * (metadata_csum) under ext4's data=ordered with delayed allocation and
 * under data=journal with extent trees. */
static void add_ext4csum(GArray *tests)
{
	static const char *const pols[] = {"ordered,alloc=delalloc",
					   "journal,alloc=extent"};
	const char *const *wls = sfs_crash_workloads();

	for (size_t i = 0; i < G_N_ELEMENTS(pols); i++) {
		for (size_t w = 0; wls[w]; w++)
			if (strcmp(wls[w], "long") != 0)
				add_cell_on(tests, true, "mke2fs-ext4", "cut",
					    pols[i], wls[w], SFS_CRASH_CUT,
					    "all", 1, false);
		add_cell_on(tests, true, "mke2fs-ext4", "volatile", pols[i],
			    "mix", SFS_CRASH_VOLATILE, "all", 2, false);
	}
}

/* Part "concurrent": several clients in flight at the cut, one test per
 * policy the engine accepts. */
static void add_concurrent(GArray *tests)
{
	note_part("concurrent");
	if (!part_selected("concurrent"))
		return;
	for (unsigned i = 0; i < S.npol; i++) {
		char *name =
		    g_strdup_printf("test_crash_concurrent_%s", S.pol[i]);
		struct CMUnitTest t = {
		    .name = name,
		    .test_func = test_crash_concurrent,
		    .initial_state = (void *)S.pol[i],
		};

		count_test("concurrent");
		g_ptr_array_add(names, name);
		g_array_append_val(tests, t);
	}
}

static void usage_parts(FILE *out)
{
	fprintf(out, "usage: test_crash [--list | PART...]; parts:");
	for (guint i = 0; i < parts->len; i++)
		fprintf(out, " %s", (char *)parts->pdata[i]);
	fprintf(out, "\n");
}

int main(int argc, char **argv)
{
	GArray *tests = g_array_new(FALSE, TRUE, sizeof(struct CMUnitTest));
	const struct CMUnitTest fixed[] = {
	    cmocka_unit_test(test_crashdev_cut),
	    cmocka_unit_test(test_crashdev_tear),
	    cmocka_unit_test(test_crashdev_volatile),
	    cmocka_unit_test(test_crashdev_point0_and_close),
	    cmocka_unit_test(test_crash_policies),
	    cmocka_unit_test(test_crash_checker_catches),
	    cmocka_unit_test(test_crash_deterministic),
	    cmocka_unit_test(test_crash_main),
	    cmocka_unit_test(test_crash_parts_all_run),
	};
	bool list = argc == 2 && strcmp(argv[1], "--list") == 0;
	int rc = 0;

	if (argc > 1 && !list)
		selected = g_strdupv(argv + 1);
	cells = g_ptr_array_new();
	names = g_ptr_array_new_with_free_func(g_free);
	parts = g_ptr_array_new_with_free_func(g_free);
	part_len = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	note_part("basics");
	if (part_selected("basics")) {
		g_array_append_vals(tests, fixed, G_N_ELEMENTS(fixed));
		g_hash_table_insert(part_len, g_strdup("basics"),
				    GUINT_TO_POINTER(G_N_ELEMENTS(fixed)));
	}
	/* the policies are known only after probing: probe here too, and
	 * read the sample size group_setup prints */
	probe_policies();
	{
		const char *lp = g_getenv("SIMFS_CRASH_LONG_POINTS");

		S.long_points =
		    lp ? (unsigned)g_ascii_strtoull(lp, NULL, 0) : 1000;
	}
	for (unsigned i = 0; i < S.nall; i++) {
		bool accepted = false;

		for (unsigned j = 0; j < S.npol; j++)
			accepted |= strcmp(S.pol[j], S.all_pol[i]) == 0;
		if (accepted) {
			add_policy(tests, S.all_pol[i], S.all_pol[i]);
		} else {
			/* its parts exist, empty: asked for, they fail */
			static const char *const kinds[] = {"cut", "volatile",
							    "long"};

			for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
				char *pt = g_strdup_printf(
				    "%s-%s", S.all_pol[i], kinds[k]);

				note_part(pt);
				g_free(pt);
			}
		}
	}
	add_delalloc(tests);
	add_ext4csum(tests);
	add_concurrent(tests);
	if (list) {
		for (guint i = 0; i < parts->len; i++)
			printf("%s\n", (char *)parts->pdata[i]);
		goto out;
	}
	for (char **sel = selected; sel && *sel; sel++) {
		if (!g_hash_table_contains(part_len, *sel)) {
			fprintf(stderr, "test_crash: unknown part '%s'\n",
				*sel);
			usage_parts(stderr);
			rc = 2;
			goto out;
		}
		if (!g_hash_table_lookup(part_len, *sel)) {
			printf("Bail out! part %s has no tests: is its "
			       "policy one the engine accepts?\n",
			       *sel);
			rc = 1;
			goto out;
		}
	}
	rc = _cmocka_run_group_tests(
	    "crash", (const struct CMUnitTest *)(void *)tests->data, tests->len,
	    group_setup, group_teardown);
out:
	g_array_free(tests, TRUE);
	g_ptr_array_free(names, TRUE);
	for (guint i = 0; i < cells->len; i++) {
		struct cell *c = cells->pdata[i];

		g_free((char *)c->spec);
		g_free(c);
	}
	g_ptr_array_free(cells, TRUE);
	g_ptr_array_free(parts, TRUE);
	g_hash_table_destroy(part_len);
	g_strfreev(selected);
	return rc;
}
