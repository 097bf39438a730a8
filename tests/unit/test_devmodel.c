/*
 * test_devmodel.c - device timing models, their registry and presets.
 *
 * Specs: unknown names, keys and values are refused with messages that name
 * what is valid; presets take overrides.  Contract (every model and preset,
 * by walking the registry): the door checks requests, a cost is the sum of
 * its parts, same requests give the same costs, reset replays.  Formulas:
 * the hdd seek curve hits t2t / average / full stroke, rotation stays
 * within a turn, outer zones are faster, sequential access streams, read-
 * ahead hits, the write cache absorbs until full and a flush drains it; the
 * ssd's channels work in parallel.  Calibration: hdd-2009 lands on seed A,
 * scsi-2002 on its datasheet.  Randomness is a seeded GRand.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "devmodel.h"
#include "testsupport.h"

#define KiB 1024ULL
#define MiB (1024ULL * 1024)
#define GiB (1024ULL * 1024 * 1024)

static struct sfs_devmodel *mk(const char *spec)
{
	struct sfs_devmodel *m = NULL;
	char *err = NULL;
	int rc = sfs_devmodel_new(spec, &m, &err);

	sfs_test_spec_ok(spec, rc, err);
	assert_non_null(m);
	return m;
}

/* Spec must be refused; the message must contain each of the words. */
static void refused(const char *spec, const char *w1, const char *w2)
{
	struct sfs_devmodel *m = NULL;
	char *err = NULL;

	assert_int_equal(sfs_devmodel_new(spec, &m, &err), -EINVAL);
	assert_null(m);
	assert_non_null(err);
	assert_null(strchr(err, '\n')); /* one line */
	if (w1 && !strstr(err, w1))
		fail_msg("'%s': message '%s' lacks '%s'", spec, err, w1);
	if (w2 && !strstr(err, w2))
		fail_msg("'%s': message '%s' lacks '%s'", spec, err, w2);
	g_free(err);
}

static struct sfs_dev_cost cost_of(struct sfs_devmodel *m, enum sfs_io_op op,
				   uint64_t off, uint64_t len, sfs_ns_t now)
{
	struct sfs_io_req r = {op, SFS_IO_DATA, off, len, 0};
	struct sfs_dev_cost c;

	assert_int_equal(sfs_devmodel_cost(m, &r, now, &c), 0);
	return c;
}

static double ms(sfs_ns_t ns)
{
	return (double)ns / 1e6;
}

/* ---- specs and registry ---- */

static void test_devmodel_registry_has_models_and_presets(void **state)
{
	const char *models[] = {"ideal", "hdd", "ssd"};
	const char *presets[] = {"hdd-2009", "scsi-2002", "ssd", "ideal"};
	const struct sfs_devmodel_preset *p;

	for (unsigned i = 0; i < G_N_ELEMENTS(models); i++)
		assert_non_null(sfs_devmodel_find(models[i]));
	for (unsigned i = 0; i < G_N_ELEMENTS(presets); i++)
		assert_non_null(sfs_devmodel_find_preset(presets[i]));
	assert_null(sfs_devmodel_find("floppy"));
	/* every preset names a model and builds */
	for (unsigned i = 0; (p = sfs_devmodel_nth_preset(i)); i++) {
		assert_non_null(sfs_devmodel_find(p->model));
		sfs_devmodel_free(mk(p->name));
	}
}

static void test_devmodel_unknown_name_lists_valid(void **state)
{
	refused("floppy", "floppy", "hdd-2009");
	refused("floppy,rpm=300", "scsi-2002", "ssd");
	refused("", "hdd", NULL);
}

static void test_devmodel_unknown_knob_lists_keys(void **state)
{
	refused("hdd,rpmm=7200", "rpmm", "outer_mbps");
	refused("hdd-2009,colour=red", "colour", "rpm");
	refused("ssd,rpm=7200", "rpm", "channels");
	refused("ideal,rpm=1", "rpm", "none");
	refused("hdd,rpm", "rpm", "key=value");
}

static void test_devmodel_bad_values_refused(void **state)
{
	refused("hdd,rpm=fast", "rpm", "number");
	refused("hdd,rpm=100", "rpm", "1000"); /* out of range */
	refused("hdd,rpm=", "rpm", NULL);
	refused("hdd,heads=-2", "heads", "integer");
	refused("hdd,heads=2.5", "heads", NULL);
	refused("hdd,segment_size=12Q", "segment_size", "size");
	refused("hdd,write_cache=maybe", "write_cache", "on or off");
	refused("hdd,destage=random", "destage", "fifo|clook");
	refused("ssd,channels=0", "channels", NULL);
	refused("hdd,seek_a_ms=nan", "seek_a_ms", NULL);
}

static void test_devmodel_contradicting_knobs_refused(void **state)
{
	refused("hdd,outer_mbps=50,inner_mbps=100", "inner_mbps", NULL);
	refused("hdd,seek_avg_ms=20,seek_max_ms=10", "seek_avg_ms", NULL);
	refused("hdd,seek_a_ms=3", "seek_b_ms", NULL);
	refused("hdd,read_ahead=2M,segment_size=1M", "read_ahead", NULL);
	refused("hdd,seek_knee=0.9", "seek", NULL); /* no rising curve */
}

static void test_devmodel_preset_overrides(void **state)
{
	struct sfs_devmodel *m = mk("hdd-2009,rpm=5400,heads=4");
	struct sfs_dev_geometry g;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	sfs_devmodel_geometry(m, &g);
	assert_true(fabs(g.rev_ns - 60e9 / 5400) < 1);
	assert_int_equal(g.heads, 4);
	assert_string_equal(sfs_devmodel_name(m), "hdd-2009");
	sfs_devmodel_print(m, f);
	fclose(f);
	assert_non_null(strstr(buf, "rpm=5400"));
	assert_non_null(strstr(buf, "outer_mbps=76.3")); /* from the preset */
	assert_non_null(strstr(buf, "seek_a_ms=auto"));
	free(buf);
	sfs_devmodel_free(m);
}

static void test_devmodel_list_shows_knobs_and_presets(void **state)
{
	const char *words[] = {
	    "ideal",	  "hdd",	 "ssd",	     "hdd-2009", "scsi-2002",
	    "outer_mbps", "write_cache", "channels", "flush_us", "default"};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	sfs_devmodel_list(f);
	fclose(f);
	for (unsigned i = 0; i < G_N_ELEMENTS(words); i++)
		if (!strstr(buf, words[i]))
			fail_msg("list lacks '%s'", words[i]);
	free(buf);
}

/* ---- contract: every model and preset ---- */

/* A read, write or flush of whole 4 KiB blocks within 4 GiB, from rnd. */
static struct sfs_io_req random_req(GRand *rnd)
{
	struct sfs_io_req r = {
	    .op = (enum sfs_io_op)g_rand_int_range(rnd, 0, 3),
	    .cat = SFS_IO_DATA,
	};

	if (r.op != SFS_IO_FLUSH) {
		r.off_bytes =
		    (uint64_t)g_rand_int_range(rnd, 0, 1 << 20) * 4096;
		r.len_bytes = (uint64_t)g_rand_int_range(rnd, 1, 65) * 4096;
	}
	return r;
}

static void contract_one(const char *spec)
{
	struct sfs_devmodel *a = mk(spec), *b = mk(spec);
	struct sfs_io_req bad[] = {
	    {SFS_IO_READ, SFS_IO_DATA, 0, 0, 0},		/* empty */
	    {SFS_IO_FLUSH, SFS_IO_OTHER, 4096, 4096, 0},	/* flush range */
	    {SFS_IO_WRITE, SFS_IO_DATA, UINT64_MAX, 2, 0}, /* overflow */
	    {(enum sfs_io_op)7, SFS_IO_DATA, 0, 512, 0},	/* no such op */
	};
	struct sfs_dev_cost c, d;
	GRand *rnd = g_rand_new_with_seed(7);
	GArray *first = g_array_new(FALSE, FALSE, sizeof(struct sfs_dev_cost));
	sfs_ns_t now = 0;

	for (unsigned i = 0; i < G_N_ELEMENTS(bad); i++)
		assert_int_equal(sfs_devmodel_cost(a, &bad[i], 0, &c), -EINVAL);
	/* a seeded mix of requests, the same on both instances */
	for (int i = 0; i < 400; i++) {
		struct sfs_io_req r = random_req(rnd);

		assert_int_equal(sfs_devmodel_cost(a, &r, now, &c), 0);
		assert_int_equal(sfs_devmodel_cost(b, &r, now, &d), 0);
		assert_memory_equal(&c, &d, sizeof(c));
		assert_int_equal(c.total_ns, c.overhead_ns + c.seek_ns +
						 c.rotation_ns + c.transfer_ns);
		g_array_append_val(first, c);
		now += c.total_ns + (sfs_ns_t)g_rand_int_range(rnd, 0, 2000000);
	}
	/* time may not go backwards (the last request came after 0) */
	{
		struct sfs_io_req r = {SFS_IO_READ, SFS_IO_DATA, 0, 4096, 0};

		assert_int_equal(sfs_devmodel_cost(a, &r, 0, &d), -EINVAL);
	}
	/* reset replays the same costs */
	sfs_devmodel_reset(a);
	g_rand_set_seed(rnd, 7);
	now = 0;
	for (int i = 0; i < 400; i++) {
		struct sfs_io_req r = random_req(rnd);

		assert_int_equal(sfs_devmodel_cost(a, &r, now, &c), 0);
		assert_memory_equal(
		    &c, &g_array_index(first, struct sfs_dev_cost, i),
		    sizeof(c));
		now += c.total_ns + (sfs_ns_t)g_rand_int_range(rnd, 0, 2000000);
	}
	g_array_free(first, TRUE);
	g_rand_free(rnd);
	sfs_devmodel_free(a);
	sfs_devmodel_free(b);
}

static void test_devmodel_contract_every_model_and_preset(void **state)
{
	const struct sfs_devmodel_ops *ops;
	const struct sfs_devmodel_preset *p;

	for (unsigned i = 0; (ops = sfs_devmodel_nth(i)); i++)
		contract_one(ops->name);
	for (unsigned i = 0; (p = sfs_devmodel_nth_preset(i)); i++)
		contract_one(p->name);
}

static void test_devmodel_ideal_costs_nothing(void **state)
{
	struct sfs_devmodel *m = mk("ideal");
	struct sfs_dev_cost c = cost_of(m, SFS_IO_WRITE, 123 * GiB, MiB, 5);
	sfs_ns_t s;

	assert_int_equal(c.total_ns, 0);
	c = cost_of(m, SFS_IO_FLUSH, 0, 0, 5);
	assert_int_equal(c.total_ns, 0);
	assert_int_equal(sfs_devmodel_seek_ns(m, 10, false, &s), -ENOTSUP);
	sfs_devmodel_free(m);
}

/* ---- hdd formulas ---- */

static void test_devmodel_hdd_seek_curve_hits_min_avg_max(void **state)
{
	struct sfs_devmodel *m = mk("hdd,seek_t2t_ms=1,seek_avg_ms=8.5,"
				    "seek_max_ms=17,write_settle_ms=1");
	struct sfs_dev_geometry g;
	uint64_t n;
	double num = 0, den = 0;
	sfs_ns_t s, prev = 0, w;

	sfs_devmodel_geometry(m, &g);
	n = g.cylinders - 1; /* full stroke */
	assert_int_equal(sfs_devmodel_seek_ns(m, 0, false, &s), 0);
	assert_int_equal(s, 0);
	sfs_devmodel_seek_ns(m, 1, false, &s);
	assert_int_equal(s, 1000000);
	sfs_devmodel_seek_ns(m, n, false, &s);
	assert_true(fabs(ms(s) - 17) < 0.02);
	/* the datasheet average: weights (max + 1 - d) over d = 1..max */
	for (uint64_t d = 1; d <= n; d++) {
		sfs_devmodel_seek_ns(m, d, false, &s);
		assert_true(s >= prev); /* grows with distance */
		prev = s;
		num += (double)(n + 1 - d) * (double)s;
		den += (double)(n + 1 - d);
	}
	assert_true(fabs(num / den / 1e6 - 8.5) < 8.5 * 0.01);
	/* writes settle longer */
	sfs_devmodel_seek_ns(m, 1000, false, &s);
	sfs_devmodel_seek_ns(m, 1000, true, &w);
	assert_int_equal(w - s, 1000000);
	sfs_devmodel_free(m);
}

static void test_devmodel_hdd_explicit_seek_coefficients(void **state)
{
	/* Ruemmler & Wilkes' HP 97560: 1962 cyl, 19 heads, 72 x 512 B per
	 * track, 4002 rpm; seek 3.24 + 0.4 sqrt(d) below 383 cyl,
	 * 8.00 + 0.008 d above */
	struct sfs_devmodel *m =
	    mk("hdd,capacity=1374216192,rpm=4002,heads=19,zones=1,"
	       "outer_mbps=2.4594,inner_mbps=2.4594,seek_t2t_ms=1.6,"
	       "seek_knee=0.1953,seek_a_ms=3.24,seek_b_ms=0.4,seek_c_ms=8,"
	       "seek_e_ms=0.008");
	struct sfs_dev_geometry g;
	sfs_ns_t s;

	sfs_devmodel_geometry(m, &g);
	assert_int_equal(g.cylinders, 1962);
	sfs_devmodel_seek_ns(m, 100, false, &s);
	assert_true(fabs(ms(s) - (3.24 + 0.4 * 10)) < 1e-6);
	sfs_devmodel_seek_ns(m, 1000, false, &s);
	assert_true(fabs(ms(s) - (8 + 0.008 * 1000)) < 1e-6);
	sfs_devmodel_free(m);
}

static void test_devmodel_hdd_random_reads_follow_formula(void **state)
{
	/* no drive cache: every read is a media access */
	struct sfs_devmodel *m = mk("hdd-2009,segments=0");
	struct sfs_dev_geometry g;
	GRand *rnd = g_rand_new_with_seed(11);
	double rot_sum = 0;
	sfs_ns_t now = 0, s;
	const int n = 3000;
	/* zone 0: 76.3 MB/s, whole sectors per track */
	double rev = 60e9 / 7200;
	double tb = floor(76.3e6 * rev / 1e9 / 512) * 512;

	sfs_devmodel_geometry(m, &g);
	for (int i = 0; i < n; i++) {
		uint64_t off =
		    (uint64_t)g_rand_int_range(rnd, 0, 8192) * 256 * KiB;
		struct sfs_dev_cost c =
		    cost_of(m, SFS_IO_READ, off, 256 * KiB, now);
		double media = 256.0 * KiB * rev / tb;

		assert_false(c.cache_hit);
		assert_int_equal(c.overhead_ns, 500000);
		if (c.seek_cyl) {
			sfs_devmodel_seek_ns(m, c.seek_cyl, false, &s);
			assert_int_equal(c.seek_ns, s);
		}
		assert_true(c.rotation_ns < (sfs_ns_t)g.rev_ns);
		/* media time plus at most one switch per track crossed */
		assert_true(c.transfer_ns >= (sfs_ns_t)media);
		assert_true(c.transfer_ns <= (sfs_ns_t)(media + 2 * 1.3e6));
		rot_sum += (double)c.rotation_ns;
		now += c.total_ns;
	}
	/* rotational position is deterministic but spreads over a turn */
	assert_true(fabs(rot_sum / n / (g.rev_ns / 2) - 1) < 0.1);
	g_rand_free(rnd);
	sfs_devmodel_free(m);
}

static void test_devmodel_hdd_sequential_streams_without_seek(void **state)
{
	struct sfs_devmodel *m = mk("hdd-2009");
	sfs_ns_t now = 0;
	struct sfs_dev_cost c = cost_of(m, SFS_IO_READ, 0, 256 * KiB, now);

	assert_false(c.cache_hit);
	now += c.total_ns;
	for (int i = 1; i < 64; i++) {
		c = cost_of(m, SFS_IO_READ, (uint64_t)i * 256 * KiB, 256 * KiB,
			    now);
		assert_true(c.cache_hit); /* read-ahead stream */
		assert_int_equal(c.seek_ns, 0);
		assert_int_equal(c.rotation_ns, 0);
		assert_int_equal(c.seeks, 0);
		now += c.total_ns;
	}
	sfs_devmodel_free(m);
}

static void test_devmodel_hdd_outer_zone_faster_than_inner(void **state)
{
	struct sfs_devmodel *m = mk("hdd-2009,segments=0");
	struct sfs_dev_geometry g;
	struct sfs_dev_cost outer, inner;

	sfs_devmodel_geometry(m, &g);
	outer = cost_of(m, SFS_IO_READ, 0, 4 * MiB, 0);
	inner = cost_of(m, SFS_IO_READ, g.capacity_bytes - 8 * MiB, 4 * MiB,
			outer.total_ns);
	assert_true(outer.transfer_ns < inner.transfer_ns);
	/* media rates 76.3 vs 36.5 MB/s: times in about that ratio */
	assert_true(fabs((double)inner.transfer_ns / outer.transfer_ns -
			 76.3 / 36.5) < 0.05 * 76.3 / 36.5);
	sfs_devmodel_free(m);
}

static void test_devmodel_hdd_read_ahead_makes_next_read_a_hit(void **state)
{
	struct sfs_devmodel *m = mk("hdd-2009");
	struct sfs_devmodel *noc = mk("hdd-2009,read_ahead=0");
	uint64_t x = 10 * GiB;
	sfs_ns_t now;
	struct sfs_dev_cost c;

	c = cost_of(m, SFS_IO_READ, x, 4 * KiB, 0);
	assert_false(c.cache_hit);
	now = c.total_ns + 5 * 1000000; /* the drive reads ahead meanwhile */
	c = cost_of(m, SFS_IO_READ, x + 4 * KiB, 4 * KiB, now);
	assert_true(c.cache_hit);
	assert_int_equal(c.seek_ns + c.rotation_ns, 0);
	assert_true(c.total_ns < 100000); /* overhead + bus, < 0.1 ms */
	/* a re-read of cached data hits too */
	c = cost_of(m, SFS_IO_READ, x, 8 * KiB, now + c.total_ns);
	assert_true(c.cache_hit);

	/* without read-ahead the next block is a media access */
	c = cost_of(noc, SFS_IO_READ, x, 4 * KiB, 0);
	now = c.total_ns + 5 * 1000000;
	c = cost_of(noc, SFS_IO_READ, x + 4 * KiB, 4 * KiB, now);
	assert_false(c.cache_hit);
	assert_true(c.total_ns > 1000000);
	sfs_devmodel_free(m);
	sfs_devmodel_free(noc);
}

static void test_devmodel_hdd_write_cache_absorbs_until_full(void **state)
{
	struct sfs_devmodel *m = mk("hdd-2009,write_cache_size=1M");
	struct sfs_devmodel *wt = mk("hdd-2009,write_cache=off");
	sfs_ns_t now = 0, bus = (sfs_ns_t)llround(256.0 * KiB / 300e6 * 1e9);
	struct sfs_dev_cost c;

	/* four random 256 KiB writes fit in 1 MiB: bus speed each */
	for (int i = 0; i < 4; i++) {
		c = cost_of(m, SFS_IO_WRITE, (uint64_t)(i * 37 + 5) * GiB,
			    256 * KiB, now);
		assert_true(c.cache_hit);
		assert_int_equal(c.total_ns, 50000 + bus);
		now += c.total_ns;
	}
	/* the fifth must wait for a destage */
	c = cost_of(m, SFS_IO_WRITE, 3 * GiB, 256 * KiB, now);
	assert_false(c.cache_hit);
	assert_true(c.total_ns > 2000000);
	assert_true(c.seeks >= 1);

	/* write-through: a media access every time */
	c = cost_of(wt, SFS_IO_WRITE, 5 * GiB, 256 * KiB, 0);
	assert_false(c.cache_hit);
	assert_true(c.total_ns > 3000000);
	sfs_devmodel_free(m);
	sfs_devmodel_free(wt);
}

static void test_devmodel_hdd_flush_drains_write_cache(void **state)
{
	struct sfs_devmodel *m = mk("hdd-2009");
	sfs_ns_t now = 0;
	struct sfs_dev_cost c;

	for (int i = 0; i < 8; i++) {
		c = cost_of(m, SFS_IO_WRITE, (uint64_t)(i * 53 + 1) * GiB,
			    64 * KiB, now);
		assert_true(c.cache_hit);
		now += c.total_ns;
	}
	c = cost_of(m, SFS_IO_FLUSH, 0, 0, now);
	/* eight scattered destages: at least a few ms each */
	assert_int_equal(c.seeks, 8);
	assert_true(c.total_ns > 8 * 3000000);
	/* the flush command, then each destage is set up anew */
	assert_int_equal(c.overhead_ns, 100000 + 8 * 500000);
	now += c.total_ns;
	/* nothing left: a second flush costs only the command */
	c = cost_of(m, SFS_IO_FLUSH, 0, 0, now);
	assert_int_equal(c.total_ns, 100000);
	assert_int_equal(c.seeks, 0);
	sfs_devmodel_free(m);
}

/*
 * Destaging a stream costs the media rate; a destage that skips even one
 * block forward is a new access, set up while the sector goes by, so it
 * waits most of a turn (why a block-mapped file, with an indirect block
 * every 4 MiB, writes slower than it reads).
 */
static void test_devmodel_hdd_destage_skip_loses_a_turn(void **state)
{
	struct sfs_devmodel *m = mk("hdd-2009");
	double rev = 60e9 / 7200;
	sfs_ns_t t[2];

	for (int skip = 0; skip < 2; skip++) {
		uint64_t off = 10 * GiB;
		sfs_ns_t now = 0;
		struct sfs_dev_cost c;

		sfs_devmodel_reset(m);
		for (int i = 0; i < 16; i++) {
			c = cost_of(m, SFS_IO_WRITE, off, 256 * KiB, now);
			now += c.total_ns;
			off += 256 * KiB + (skip ? 4 * KiB : 0);
		}
		c = cost_of(m, SFS_IO_FLUSH, 0, 0, now);
		t[skip] = now + c.total_ns;
	}
	/* 15 skips: each at least half a turn, at most a turn and a bit */
	assert_true(t[1] - t[0] > 15 * rev / 2);
	assert_true(t[1] - t[0] < 15 * (rev + 1e6));
	sfs_devmodel_free(m);
}

static void test_devmodel_hdd_idle_time_destages(void **state)
{
	struct sfs_devmodel *m = mk("hdd-2009");
	struct sfs_dev_cost c = cost_of(m, SFS_IO_WRITE, GiB, 64 * KiB, 0);

	/* a second later the drive has written it back by itself */
	c = cost_of(m, SFS_IO_FLUSH, 0, 0, 1000000000);
	assert_int_equal(c.total_ns, 100000);
	assert_int_equal(c.seeks, 1); /* the background destage's move */
	sfs_devmodel_free(m);
}

/*
 * A write-out is a flush without the command: the same destage of the same
 * writes, minus flush_ms; idle time before it still destages for free; a
 * model without a write cache has nothing to write.
 */
static void test_devmodel_writeout_is_a_flush_without_command(void **state)
{
	struct sfs_devmodel *a = mk("hdd-2009"), *b = mk("hdd-2009");
	struct sfs_devmodel *ssd = mk("ssd");
	struct sfs_dev_cost fa, wb;
	sfs_ns_t now = 0;

	/* the same eight scattered writes, at the same times, to a and b */
	for (int i = 0; i < 8; i++) {
		uint64_t off = (uint64_t)(i + 1) * 3 * GiB;
		struct sfs_dev_cost ca = cost_of(a, SFS_IO_WRITE, off, 4 * KiB,
						 now);

		assert_true(cost_of(b, SFS_IO_WRITE, off, 4 * KiB, now)
				.cache_hit);
		now += ca.total_ns;
	}
	fa = cost_of(a, SFS_IO_FLUSH, 0, 0, now);
	assert_int_equal(sfs_devmodel_writeout(b, now, &wb), 0);
	/* eight scattered blocks: eight media accesses */
	assert_int_equal(wb.seeks, fa.seeks);
	assert_true(wb.total_ns > 8 * 4000000);
	/* the command's 0.1 ms is the only overhead missing; starting
	 * 0.1 ms earlier shifts the rotational waits by less than a turn */
	assert_int_equal(wb.overhead_ns + 100000, fa.overhead_ns);
	assert_true(wb.total_ns < fa.total_ns + 60e9 / 7200 &&
		    fa.total_ns < wb.total_ns + 60e9 / 7200);
	/* nothing left: a second write-out costs nothing */
	assert_int_equal(sfs_devmodel_writeout(b, now + wb.total_ns, &wb), 0);
	assert_int_equal(wb.total_ns, 0);
	/* idle time destages in the background */
	cost_of(b, SFS_IO_WRITE, GiB, 64 * KiB, now + fa.total_ns);
	assert_int_equal(
	    sfs_devmodel_writeout(b, now + fa.total_ns + 1000000000, &wb), 0);
	assert_int_equal(wb.total_ns, 0);
	/* time going backwards is refused; no cache, nothing to write */
	assert_int_equal(sfs_devmodel_writeout(b, 0, &wb), -EINVAL);
	cost_of(ssd, SFS_IO_WRITE, 0, 64 * KiB, 0);
	assert_int_equal(sfs_devmodel_writeout(ssd, 1000, &wb), 0);
	assert_int_equal(wb.total_ns, 0);
	sfs_devmodel_free(a);
	sfs_devmodel_free(b);
	sfs_devmodel_free(ssd);
}

/* ---- ssd ---- */

static void test_devmodel_ssd_channels_work_in_parallel(void **state)
{
	struct sfs_devmodel *one = mk("ssd,channels=1");
	struct sfs_devmodel *eight = mk("ssd,channels=8");
	struct sfs_dev_cost c1, c8, small;
	/* 64 pages of 4 KiB; program 200 us per page per channel */
	double bus = 256.0 * KiB / 70e6 * 1e9;

	c1 = cost_of(one, SFS_IO_WRITE, 0, 256 * KiB, 0);
	c8 = cost_of(eight, SFS_IO_WRITE, 0, 256 * KiB, 0);
	assert_int_equal(c1.overhead_ns, 60000);
	assert_int_equal(c1.transfer_ns, 64 * 200000);
	assert_int_equal(c8.transfer_ns,
			 (sfs_ns_t)llround(fmax(bus, 8 * 200000)));
	assert_true(c8.total_ns * 3 < c1.total_ns);
	/* a single page cannot be spread: one channel's page time */
	small = cost_of(eight, SFS_IO_READ, 4 * KiB, 4 * KiB, 0);
	assert_int_equal(small.total_ns, 60000 + 25000);
	/* unaligned: 4 KiB across two pages reads both */
	small = cost_of(one, SFS_IO_READ, 2 * KiB, 4 * KiB, 0);
	assert_int_equal(small.transfer_ns, 2 * 25000);
	assert_int_equal(cost_of(one, SFS_IO_FLUSH, 0, 0, 0).total_ns, 100000);
	sfs_devmodel_free(one);
	sfs_devmodel_free(eight);
}

/* ---- calibration ---- */

static void test_devmodel_hdd2009_sequential_66mbps(void **state)
{
	struct sfs_devmodel *m = mk("hdd-2009");
	sfs_ns_t now = 0;
	double mbps;

	for (uint64_t off = 0; off < GiB; off += 256 * KiB)
		now += cost_of(m, SFS_IO_READ, off, 256 * KiB, now).total_ns;
	mbps = (double)GiB / ((double)now / 1e9) / 1e6;
	print_message("# hdd-2009: 1 GiB sequential read, 256 KiB requests: "
		      "%.2f MB/s\n",
		      mbps);
	assert_true(fabs(mbps / 66 - 1) <= 0.10);

	sfs_devmodel_reset(m);
	now = 0;
	for (uint64_t off = 0; off < GiB; off += 256 * KiB)
		now += cost_of(m, SFS_IO_WRITE, off, 256 * KiB, now).total_ns;
	mbps = (double)GiB / ((double)now / 1e9) / 1e6;
	print_message("# hdd-2009: 1 GiB sequential write: %.2f MB/s\n", mbps);
	assert_true(fabs(mbps / 66 - 1) <= 0.10);
	sfs_devmodel_free(m);
}

static void test_devmodel_hdd2009_random_256k_reads(void **state)
{
	struct sfs_devmodel *m = mk("hdd-2009");
	GRand *rnd = g_rand_new_with_seed(2009);
	const int n = 4000;
	sfs_ns_t now = 0;
	double mean_ms, mbps;

	/* record-aligned offsets, uniform within a 2 GiB file */
	for (int i = 0; i < n; i++) {
		uint64_t off =
		    (uint64_t)g_rand_int_range(rnd, 0, 8192) * 256 * KiB;

		now += cost_of(m, SFS_IO_READ, off, 256 * KiB, now).total_ns;
	}
	mean_ms = ms(now) / n;
	mbps = 256.0 * KiB / (mean_ms / 1e3) / 1e6;
	print_message(
	    "# hdd-2009: random 256 KiB reads in 2 GiB: %.2f ms each, "
	    "%.2f MB/s\n",
	    mean_ms, mbps);
	assert_true(mean_ms >= 11 && mean_ms <= 12);
	assert_true(fabs(mbps / 22 - 1) <= 0.15);
	g_rand_free(rnd);
	sfs_devmodel_free(m);
}

static void test_devmodel_scsi2002_matches_datasheet(void **state)
{
	/*
	 * Ultrastar 146Z10 spec 4.5.7: 16 MiB in 128 sequential commands
	 * from zone 0 within 260 ms typical; 4096 random commands in 34 s
	 * typical, i.e. overhead + average seek + latency = 8.3 ms.
	 */
	struct sfs_devmodel *m = mk("scsi-2002");
	struct sfs_dev_geometry g;
	GRand *rnd = g_rand_new_with_seed(2002);
	sfs_ns_t now = 0;
	double mean_ms;

	for (uint64_t off = 0; off < 16 * MiB; off += 128 * KiB)
		now += cost_of(m, SFS_IO_READ, off, 128 * KiB, now).total_ns;
	print_message("# scsi-2002: 16 MiB sequential in 128 commands: %.1f "
		      "ms\n",
		      ms(now));
	assert_true(ms(now) <= 260 * 1.1);
	assert_true(ms(now) >= 260 * 0.8);

	sfs_devmodel_geometry(m, &g);
	sfs_devmodel_reset(m);
	now = 0;
	for (int i = 0; i < 4096; i++) {
		uint64_t off = (uint64_t)(g_rand_double(rnd) *
					  (double)(g.capacity_bytes / 512)) *
			       512;

		now += cost_of(m, SFS_IO_READ, off, 512, now).total_ns;
	}
	mean_ms = ms(now) / 4096;
	print_message("# scsi-2002: random 512 B reads: %.2f ms each\n",
		      mean_ms);
	assert_true(fabs(mean_ms / 8.3 - 1) <= 0.10);
	g_rand_free(rnd);
	sfs_devmodel_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_devmodel_registry_has_models_and_presets),
	    cmocka_unit_test(test_devmodel_unknown_name_lists_valid),
	    cmocka_unit_test(test_devmodel_unknown_knob_lists_keys),
	    cmocka_unit_test(test_devmodel_bad_values_refused),
	    cmocka_unit_test(test_devmodel_contradicting_knobs_refused),
	    cmocka_unit_test(test_devmodel_preset_overrides),
	    cmocka_unit_test(test_devmodel_list_shows_knobs_and_presets),
	    cmocka_unit_test(test_devmodel_contract_every_model_and_preset),
	    cmocka_unit_test(test_devmodel_ideal_costs_nothing),
	    cmocka_unit_test(test_devmodel_hdd_seek_curve_hits_min_avg_max),
	    cmocka_unit_test(test_devmodel_hdd_explicit_seek_coefficients),
	    cmocka_unit_test(test_devmodel_hdd_random_reads_follow_formula),
	    cmocka_unit_test(test_devmodel_hdd_sequential_streams_without_seek),
	    cmocka_unit_test(test_devmodel_hdd_outer_zone_faster_than_inner),
	    cmocka_unit_test(
		test_devmodel_hdd_read_ahead_makes_next_read_a_hit),
	    cmocka_unit_test(test_devmodel_hdd_write_cache_absorbs_until_full),
	    cmocka_unit_test(test_devmodel_hdd_flush_drains_write_cache),
	    cmocka_unit_test(test_devmodel_hdd_destage_skip_loses_a_turn),
	    cmocka_unit_test(test_devmodel_writeout_is_a_flush_without_command),
	    cmocka_unit_test(test_devmodel_hdd_idle_time_destages),
	    cmocka_unit_test(test_devmodel_ssd_channels_work_in_parallel),
	    cmocka_unit_test(test_devmodel_hdd2009_sequential_66mbps),
	    cmocka_unit_test(test_devmodel_hdd2009_random_256k_reads),
	    cmocka_unit_test(test_devmodel_scsi2002_matches_datasheet),
	};

	return cmocka_run_group_tests_name("devmodel", tests, NULL, NULL);
}
