/*
 * test_lab_runs.c - the engine-driven labs (crash, cache, disk) against
 * what they print: each sheet is rebuilt from its own scenario text by an
 * independent calculation, or checked against a rule the model promises,
 * over many seeds.
 *
 *  - disk, level 1: the textbook disk's printed formulas (seek 1 + 0.2
 *    sqrt(d), the track skew, 0.01 ms a sector), worked through by hand
 *    here in floating point, give every answer (to 0.05 ms) and the
 *    completion time; level 2: C-LOOK from cylinder 0 serves in offset
 *    order; every level: a request starts no earlier than its arrival and
 *    the previous completion, its service is the sum of its parts, and
 *    with every request at time 0 the service times add up to the
 *    completion time.
 *  - cache, level 1 (below the background threshold): a write is written
 *    back at the first periodic wake-up at least dirty_expire after it, so
 *    the passes, the dirty set and the dirty KiB at T follow from the
 *    scenario alone; every level: what is dirty at T is at most what was
 *    written, and the dirty set names only writes made by T.
 *  - crash: the promise of each data= mode (sfs_crash_promise_of): no
 *    foreign block where it promises none; a file fsync'd before the op
 *    that was cut holds at least what it held at that fsync (tracked by a
 *    model of the script built from the sheet); with no cut every mode
 *    shows the final state and nothing to replay.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "crash.h"
#include "lab.h"

#ifndef SEEDS
#define SEEDS 12
#endif

static void build(const char *lab, uint64_t seed, int level,
		  struct sfs_lab_sheet *sh)
{
	const struct sfs_lab *l = sfs_lab_find(lab);
	struct sfs_lab_params p = {.seed = seed, .level = level};
	char *err = NULL;
	int rc;

	assert_non_null(l);
	sfs_lab_sheet_init(sh);
	rc = l->build(&p, sh, &err);
	if (rc)
		print_error("%s seed %llu level %d: %s\n", lab,
			    (unsigned long long)seed, level, err ? err : "?");
	assert_int_equal(rc, 0);
	g_free(err);
}

static const struct sfs_lab_question *q_at(const struct sfs_lab_sheet *sh,
					   guint i)
{
	assert_true(i < sh->questions->len);
	return g_ptr_array_index(sh->questions, i);
}

/* The question whose text contains key (the first), or NULL. */
static const struct sfs_lab_question *q_find(const struct sfs_lab_sheet *sh,
					     const char *key, guint from)
{
	for (guint i = from; i < sh->questions->len; i++)
		if (strstr(q_at(sh, i)->text, key))
			return q_at(sh, i);
	return NULL;
}

static void assert_near(double got, double want, double tol, const char *what)
{
	if (fabs(got - want) > tol)
		print_error("%s: %.3f, expected %.3f (+-%.3f)\n", what, got,
			    want, tol);
	assert_true(fabs(got - want) <= tol);
}

/* ================================================================ disk */

struct dreq {
	unsigned id;
	double arr_ms;
	unsigned cyl, sect, n;
};

/* The request table of a textbook sheet. */
static unsigned disk_reqs(const struct sfs_lab_sheet *sh, struct dreq *r)
{
	char **lines = g_strsplit(sh->scenario->str, "\n", -1);
	unsigned n = 0;

	for (char **l = lines; *l; l++) {
		char op[8];
		struct dreq x;

		if (sscanf(*l, " %u %7s %lf ms %u %u %u", &x.id, op, &x.arr_ms,
			   &x.cyl, &x.sect, &x.n) == 6)
			r[n++] = x;
	}
	g_strfreev(lines);
	return n;
}

/* A row of the timeline figure. */
struct drow {
	char ids[32];
	double arr, start, oh, seek, rot, xfer, done;
};

static unsigned disk_rows(const struct sfs_lab_sheet *sh, struct drow *r)
{
	char **lines = g_strsplit(sh->figure->str, "\n", -1);
	unsigned n = 0, k;

	for (char **l = lines; *l; l++) {
		struct drow x;

		if (sscanf(*l, " %u %31s %lf %lf %lf %lf %lf %lf %lf", &k, x.ids,
			   &x.arr, &x.start, &x.oh, &x.seek, &x.rot, &x.xfer,
			   &x.done) == 9)
			r[n++] = x;
	}
	g_strfreev(lines);
	return n;
}

static void test_disk_textbook_by_hand(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= SEEDS; seed++) {
		struct sfs_lab_sheet sh;
		struct dreq r[16];
		unsigned n;
		double t = 0;
		unsigned head = 0;

		build("disk", seed, 1, &sh);
		n = disk_reqs(&sh, r);
		assert_int_equal(n, 4);
		assert_string_equal(q_at(&sh, 0)->answer, "1 2 3 4");
		for (unsigned i = 0; i < n; i++) {
			unsigned d = r[i].cyl > head ? r[i].cyl - head
						     : head - r[i].cyl;
			double seek = d == 0 ? 0 : d == 1 ? 1 : 1 + 0.2 * sqrt(d);
			double at = t + seek;
			double pass = (r[i].cyl % 10) + r[i].sect / 100.0;
			double wait = fmod(pass - fmod(at, 10) + 20, 10);
			double xfer = r[i].n * 0.01;
			double s, w, x;

			if (wait > 10 - 1e-6)
				wait = 0;
			assert_int_equal(sscanf(q_at(&sh, 1 + i)->answer,
						"%lf %lf %lf", &s, &w, &x),
					 3);
			assert_near(s, seek, 0.051, "seek");
			assert_near(w, wait, 0.051, "rotation");
			assert_near(x, xfer, 0.051, "transfer");
			t = at + wait + xfer;
			head = r[i].cyl;
		}
		assert_near(atof(q_at(&sh, 1 + n)->answer), t, 0.051,
			    "completion");
		sfs_lab_sheet_clear(&sh);
	}
}

/* C-LOOK from cylinder 0 with everything queued: offset order. */
static void test_disk_elevator_order(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= SEEDS; seed++) {
		struct sfs_lab_sheet sh;
		struct dreq r[16];
		unsigned n, seen = 0;
		double last = -1;
		char **tok;

		build("disk", seed, 2, &sh);
		n = disk_reqs(&sh, r);
		tok = g_strsplit_set(q_at(&sh, 0)->answer, " +", -1);
		for (char **t = tok; *t; t++) {
			unsigned id = (unsigned)atoi(*t);
			double off;

			assert_true(id >= 1 && id <= n);
			off = r[id - 1].cyl * 1000.0 + r[id - 1].sect;
			assert_true(off > last);
			last = off;
			seen++;
		}
		assert_int_equal(seen, n); /* each request exactly once */
		g_strfreev(tok);
		sfs_lab_sheet_clear(&sh);
	}
}

/* One device at a time, the parts adding up, on every level. */
static void test_disk_timeline(void **state)
{
	(void)state;
	for (int level = 1; level <= 4; level++)
		for (uint64_t seed = 1; seed <= SEEDS; seed++) {
			struct sfs_lab_sheet sh;
			struct drow r[16];
			unsigned n;
			double prev = 0, sum = 0;

			build("disk", seed, level, &sh);
			n = disk_rows(&sh, r);
			assert_true(n >= 3);
			for (unsigned i = 0; i < n; i++) {
				double svc = r[i].oh + r[i].seek + r[i].rot +
					     r[i].xfer;

				assert_true(r[i].start >= r[i].arr - 0.051);
				assert_true(r[i].start >= prev - 0.051);
				assert_near(r[i].done, r[i].start + svc, 0.26,
					    "service parts");
				sum += r[i].done - r[i].start;
				prev = r[i].done;
			}
			if (level <= 2) /* all at time 0: never idle */
				assert_near(sum, prev, 0.051 * n + 0.051,
					    "sum of service times");
			/* the last question is the completion time */
			assert_near(atof(q_at(&sh, sh.questions->len - 1)
					     ->answer),
				    prev, 0.051, "completion");
			sfs_lab_sheet_clear(&sh);
		}
}

/* =============================================================== cache */

struct cwrite {
	unsigned wid;
	uint64_t t_cs, kib;
};

static uint64_t cs_of(const char *s)
{
	return (uint64_t)llround(atof(s) * 100);
}

/* Periodic write-back alone, worked out from the scenario. */
static void test_cache_periodic_by_hand(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 3 * SEEDS; seed++) {
		struct sfs_lab_sheet sh;
		struct cwrite w[16];
		unsigned n = 0, expire = 0, interval = 0, ratio = 0;
		uint64_t t_cs = 0, total = 0, bg_kib = 0, dirty = 0;
		GString *still = g_string_new(NULL), *passes = g_string_new(NULL);
		char **lines;
		const char *p;

		build("cache", seed, 1, &sh);
		lines = g_strsplit(sh.scenario->str, "\n", -1);
		for (char **l = lines; *l; l++) {
			char at[16], tt[16];
			struct cwrite x;
			unsigned kib;

			if ((p = strstr(*l, "dirty_expire_centisecs=")))
				expire = (unsigned)atoi(p + 23);
			if ((p = strstr(*l, "dirty_writeback_centisecs=")))
				interval = (unsigned)atoi(p + 26);
			if ((p = strstr(*l, "dirty_background_ratio=")))
				ratio = (unsigned)atoi(p + 23);
			if (sscanf(*l, " at %15s s w%u writes %u KiB", at,
				   &x.wid, &kib) == 3) {
				x.t_cs = cs_of(at);
				x.kib = kib;
				total += kib;
				w[n++] = x;
			}
			if (sscanf(*l, "Questions are about time T = %15s", tt) ==
			    1)
				t_cs = cs_of(tt);
		}
		g_strfreev(lines);
		assert_true(n >= 3 && expire && interval && ratio && t_cs);
		/* the precondition of the calculation: never above the
		 * background threshold */
		bg_kib = strtoull(strchr(q_at(&sh, 0)->answer, ' ') + 1, NULL,
				  10);
		assert_true(total <= bg_kib);
		/* each write goes at the first wake-up g >= t + expire */
		for (uint64_t g = interval; g <= t_cs; g += interval) {
			uint64_t kib = 0;

			for (unsigned i = 0; i < n; i++)
				if (w[i].t_cs + expire <= g &&
				    w[i].t_cs + expire > g - interval)
					kib += w[i].kib;
			if (kib)
				g_string_append_printf(
				    passes, "%s%llu.%02llu periodic %llu",
				    passes->len ? " " : "",
				    (unsigned long long)(g / 100),
				    (unsigned long long)(g % 100),
				    (unsigned long long)kib);
		}
		for (unsigned i = 0; i < n; i++) {
			uint64_t due = w[i].t_cs + expire;
			uint64_t g = (due + interval - 1) / interval * interval;

			if (g > t_cs) {
				g_string_append_printf(still, "%sw%u",
						       still->len ? " " : "",
						       w[i].wid);
				dirty += w[i].kib;
			}
		}
		assert_string_equal(q_find(&sh, "flusher's passes", 0)->answer,
				    passes->len ? passes->str : "none");
		assert_string_equal(q_find(&sh, "still have dirty", 0)->answer,
				    still->len ? still->str : "none");
		assert_int_equal(
		    strtoull(q_find(&sh, "KiB are dirty", 0)->answer, NULL, 10),
		    dirty);
		g_string_free(still, TRUE);
		g_string_free(passes, TRUE);
		sfs_lab_sheet_clear(&sh);
	}
}

static void test_cache_bounds(void **state)
{
	(void)state;
	for (int level = 1; level <= 3; level++)
		for (uint64_t seed = 1; seed <= SEEDS; seed++) {
			struct sfs_lab_sheet sh;
			uint64_t total = 0, dirty, limit, bg;
			unsigned maxw = 0;
			char **lines, **tok;

			build("cache", seed, level, &sh);
			lines = g_strsplit(sh.scenario->str, "\n", -1);
			for (char **l = lines; *l; l++) {
				char at[16], verb[16];
				unsigned wid, kib;

				if (sscanf(*l, " at %15s s w%u %15s %u KiB", at,
					   &wid, verb, &kib) == 4) {
					total += kib;
					maxw = MAX(maxw, wid);
				}
			}
			g_strfreev(lines);
			dirty = strtoull(q_find(&sh, "KiB are dirty", 0)->answer,
					 NULL, 10);
			assert_true(dirty <= total);
			assert_int_equal(sscanf(q_at(&sh, 0)->answer,
						"%" SCNu64 " %" SCNu64, &limit,
						&bg),
					 2);
			assert_true(bg < limit);
			tok = g_strsplit(q_find(&sh, "still have dirty", 0)->answer,
					 " ", -1);
			for (char **t = tok; *t; t++)
				if (strcmp(*t, "none") != 0) {
					assert_true((*t)[0] == 'w');
					assert_true(atoi(*t + 1) >= 1 &&
						    (unsigned)atoi(*t + 1) <=
							maxw);
				}
			assert_true(strcmp(tok[0], "none") != 0 || dirty == 0);
			g_strfreev(tok);
			sfs_lab_sheet_clear(&sh);
		}
}

/* =============================================================== crash */

#define CM_FILES 8
#define CM_BLK 64

/* A model of the script's files: name -> object, object -> block wids. */
struct cmodel {
	char name[CM_FILES][16]; /* "" = no such name */
	int obj[CM_FILES];	 /* object under that name */
	unsigned blk[CM_FILES][CM_BLK];
	unsigned nblk[CM_FILES];
	unsigned nobj;
};

static int cm_find(const struct cmodel *m, const char *name)
{
	for (unsigned i = 0; i < CM_FILES; i++)
		if (!strcmp(m->name[i], name))
			return (int)i;
	return -1;
}

/* Apply one op line of the sheet ("write a blocks 1-3 (w5)", ...). */
static void cm_apply(struct cmodel *m, const char *op)
{
	char a[16], b[16];
	unsigned lo, hi, wid;
	int k;

	if (sscanf(op, "create %15s", a) == 1) {
		for (k = 0; k < CM_FILES && m->name[k][0]; k++)
			;
		assert_true(k < CM_FILES);
		g_strlcpy(m->name[k], a, sizeof(m->name[k]));
		m->obj[k] = (int)m->nobj++;
	} else if (sscanf(op, "write %15s blocks %u-%u (w%u)", a, &lo, &hi,
			  &wid) == 4 ||
		   (sscanf(op, "write %15s block %u (w%u)", a, &lo, &wid) == 3 &&
		    (hi = lo, 1))) {
		int o = m->obj[cm_find(m, a)];

		for (unsigned i = lo; i <= hi && i < CM_BLK; i++)
			m->blk[o][i] = wid;
		m->nblk[o] = MAX(m->nblk[o], hi + 1);
	} else if (sscanf(op, "rename %15s over %15s", a, b) == 2) {
		int s = cm_find(m, a), t = cm_find(m, b);

		m->obj[t] = m->obj[s];
		m->name[s][0] = 0;
	} else if (sscanf(op, "rm %15s", a) == 1) {
		m->name[cm_find(m, a)][0] = 0;
	}
}

/* "a: w1 w2 b: 0" -> the tokens of one file, or NULL. */
static char **cm_file_tokens(const char *contents, const char *name)
{
	char **tok = g_strsplit(contents, " ", -1);
	char *key = g_strconcat(name, ":", NULL);
	GPtrArray *out = g_ptr_array_new();
	bool in = false, found = false;

	for (char **t = tok; *t; t++) {
		if (g_str_has_suffix(*t, ":")) {
			in = !strcmp(*t, key);
			found |= in;
			continue;
		}
		if (in)
			g_ptr_array_add(out, g_strdup(*t));
	}
	g_ptr_array_add(out, NULL);
	g_strfreev(tok);
	g_free(key);
	if (!found) {
		g_strfreev((char **)g_ptr_array_free(out, FALSE));
		return NULL;
	}
	return (char **)g_ptr_array_free(out, FALSE);
}

static void crash_check_sheet(const struct sfs_lab_sheet *sh, uint64_t seed,
			      int level)
{
	char **lines = g_strsplit(sh->scenario->str, "\n", -1);
	GPtrArray *setup = g_ptr_array_new(), *script = g_ptr_array_new();
	GPtrArray *modes = g_ptr_array_new_with_free_func(g_free);
	const char *final_contents = NULL;
	int part = 0;

	for (char **l = lines; *l; l++) {
		unsigned k;
		int off = 0;
		const char *p;

		if (g_str_has_prefix(*l, "Set up first"))
			part = 1;
		else if (g_str_has_prefix(*l, "Then this script"))
			part = 2;
		else if (part == 1 && g_str_has_prefix(*l, "      "))
			g_ptr_array_add(setup, *l + 6);
		else if (part == 2 && sscanf(*l, " %u %n", &k, &off) == 1 &&
			 off > 0)
			g_ptr_array_add(script, *l + off);
		if ((p = strstr(*l, "Modes: data="))) {
			char **m = g_strsplit(p + 12, ", ", -1);

			for (char **x = m; *x; x++)
				g_ptr_array_add(modes,
						g_strdup(g_strchomp(
						    g_strdelimit(*x, ".", ' '))));
			g_strfreev(m);
		}
	}
	assert_true(script->len >= 4 && modes->len >= 1);
	for (guint mi = 0; mi < modes->len; mi++) {
		const char *mode = modes->pdata[mi];
		const struct sfs_jnl_promise *pr = sfs_crash_promise_of(mode);
		const struct sfs_lab_question *qop, *qrep, *qc;
		struct cmodel m = {0}, at_fsync;
		unsigned cut_op;
		int fsync_name = -1;
		bool moved = false;
		guint base = mi * 3;

		assert_non_null(pr);
		qop = q_at(sh, base);
		qrep = q_at(sh, base + 1);
		qc = q_at(sh, base + 2);
		assert_non_null(strstr(qop->text, "request N"));
		assert_non_null(strstr(qc->text, "each file hold"));
		cut_op = strcmp(qop->answer, "none") ? (unsigned)atoi(qop->answer)
						     : script->len + 1;
		assert_true(cut_op >= 1 && cut_op <= script->len + 1);
		for (guint i = 0; i < setup->len; i++)
			cm_apply(&m, setup->pdata[i]);
		/* ops before the cut one are done; track the last fsync */
		for (guint i = 0; i + 1 < cut_op && i < script->len; i++) {
			const char *op = script->pdata[i];
			char a[16];

			cm_apply(&m, op);
			if (sscanf(op, "fsync %15s", a) == 1) {
				fsync_name = cm_find(&m, a);
				at_fsync = m;
				moved = false;
			} else if (g_str_has_prefix(op, "rename") ||
				   g_str_has_prefix(op, "rm ")) {
				moved = true;
			}
		}
		if (!pr->journaled)
			continue; /* ext2: e2fsck's repair promises nothing */
		if (pr->no_foreign)
			assert_null(strstr(qc->answer, "?"));
		if (fsync_name >= 0 && !moved) {
			int o = at_fsync.obj[fsync_name];
			char **tok = cm_file_tokens(qc->answer,
						    at_fsync.name[fsync_name]);

			if (!tok)
				print_error("seed %llu level %d data=%s: %s "
					    "was fsync'd and is gone: %s\n",
					    (unsigned long long)seed, level,
					    mode, at_fsync.name[fsync_name],
					    qc->answer);
			assert_non_null(tok);
			assert_true(g_strv_length(tok) >= at_fsync.nblk[o]);
			for (unsigned b = 0; b < at_fsync.nblk[o]; b++) {
				unsigned want = at_fsync.blk[o][b];
				unsigned got = tok[b][0] == 'w'
						   ? (unsigned)atoi(tok[b] + 1)
						   : 0;

				if (want && got < want)
					print_error(
					    "seed %llu level %d data=%s: block "
					    "%u of %s: %s, fsync'd w%u\n",
					    (unsigned long long)seed, level,
					    mode, b, at_fsync.name[fsync_name],
					    tok[b], want);
				assert_true(!want || got >= want);
			}
			g_strfreev(tok);
		}
		if (cut_op > script->len) {
			/* no cut: the final state, nothing left to replay */
			assert_string_equal(qrep->answer, "0 0");
			if (final_contents)
				assert_string_equal(qc->answer, final_contents);
			final_contents = qc->answer;
		}
	}
	g_ptr_array_free(modes, TRUE);
	g_ptr_array_free(setup, TRUE);
	g_ptr_array_free(script, TRUE);
	g_strfreev(lines);
}

static void test_crash_promises(void **state)
{
	(void)state;
	for (int level = 1; level <= 3; level++)
		for (uint64_t seed = 1; seed <= SEEDS; seed++) {
			struct sfs_lab_sheet sh;

			build("crash", seed, level, &sh);
			crash_check_sheet(&sh, seed, level);
			sfs_lab_sheet_clear(&sh);
		}
}

/* The same seed and level give the same sheet (answers included). */
static void test_same_sheet_twice(void **state)
{
	static const char *const labs[] = {"crash", "cache", "disk"};

	(void)state;
	for (size_t i = 0; i < G_N_ELEMENTS(labs); i++) {
		struct sfs_lab_sheet a, b;

		build(labs[i], 7, 2, &a);
		build(labs[i], 7, 2, &b);
		assert_string_equal(a.scenario->str, b.scenario->str);
		assert_string_equal(a.figure->str, b.figure->str);
		assert_int_equal(a.questions->len, b.questions->len);
		for (guint k = 0; k < a.questions->len; k++)
			assert_string_equal(q_at(&a, k)->answer,
					    q_at(&b, k)->answer);
		sfs_lab_sheet_clear(&a);
		sfs_lab_sheet_clear(&b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_disk_textbook_by_hand),
	    cmocka_unit_test(test_disk_elevator_order),
	    cmocka_unit_test(test_disk_timeline),
	    cmocka_unit_test(test_cache_periodic_by_hand),
	    cmocka_unit_test(test_cache_bounds),
	    cmocka_unit_test(test_crash_promises),
	    cmocka_unit_test(test_same_sheet_twice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
