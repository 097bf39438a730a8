/*
 * test_cpumodel.c - the CPU model of `simfs run` and the engine's work
 * counts it is fed with.
 *
 * The model: zero counts cost nothing; the `none` preset costs nothing for
 * any counts; each knob charges its own count and only that, linearly;
 * the era presets are ordered (a Pentium III pays more than a Core 2,
 * which pays more than a modern core, for every count); bad specs are
 * refused with the valid names; knobs override a preset; cpu= and cpus=
 * are config knobs checked at parse time and no filesystem preset sets
 * them.  The counts (sfs_fs_cpu_counts): one call per engine operation,
 * lookups as path steps, the bytes a read or write copies, and a re-read
 * of cached data that copies again but issues no device request.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <glib.h>

#include "config.h"
#include "cpumodel.h"
#include "fs.h"
#include "testsupport.h"

#define MiB (1024ull * 1024)

/* Each knob and the count it charges. */
static const struct {
	const char *knob;
	size_t count; /* offsetof(struct sfs_cpu_counts, ...) */
} knob_count[] = {
    {"per_call_ns", offsetof(struct sfs_cpu_counts, calls)},
    {"per_path_step_ns", offsetof(struct sfs_cpu_counts, path_steps)},
    {"per_byte_ns", offsetof(struct sfs_cpu_counts, bytes_copied)},
    {"per_block_mapped_ns", offsetof(struct sfs_cpu_counts, blocks_mapped)},
    {"per_block_alloc_ns", offsetof(struct sfs_cpu_counts, blocks_alloc)},
    {"per_bitmap_word_ns", offsetof(struct sfs_cpu_counts, bitmap_words)},
    {"per_extent_step_ns", offsetof(struct sfs_cpu_counts, extent_steps)},
    {"per_jnl_block_ns", offsetof(struct sfs_cpu_counts, jnl_blocks)},
    {"per_csum_byte_ns", offsetof(struct sfs_cpu_counts, csum_bytes)},
    {"per_dir_entry_ns", offsetof(struct sfs_cpu_counts, dir_entries)},
    {"per_io_req_ns", offsetof(struct sfs_cpu_counts, io_reqs)},
};

#define NCOUNTS (sizeof(struct sfs_cpu_counts) / sizeof(uint64_t))

static uint64_t *count_at(struct sfs_cpu_counts *c, size_t off)
{
	return (uint64_t *)((char *)c + off);
}

/* Counts with every field set to v. */
static struct sfs_cpu_counts all(uint64_t v)
{
	struct sfs_cpu_counts c;

	for (size_t i = 0; i < NCOUNTS; i++)
		((uint64_t *)&c)[i] = v;
	return c;
}

static struct sfs_cpumodel *mk(const char *spec)
{
	struct sfs_cpumodel *m = NULL;
	char *err = NULL;
	int rc = sfs_cpumodel_new(spec, &m, &err);

	sfs_test_spec_ok(spec, rc, err);
	assert_non_null(m);
	return m;
}

static sfs_ns_t cost_of(const char *spec, const struct sfs_cpu_counts *c)
{
	struct sfs_cpumodel *m = mk(spec);
	sfs_ns_t ns = sfs_cpumodel_cost(m, c);

	sfs_cpumodel_free(m);
	return ns;
}

static void test_cpumodel_zero_counts_cost_nothing(void **state)
{
	const struct sfs_cpu_preset *p;
	struct sfs_cpu_counts zero = all(0);
	unsigned n = 0;

	for (unsigned i = 0; (p = sfs_cpumodel_nth_preset(i)); i++, n++)
		assert_int_equal(cost_of(p->name, &zero), 0);
	assert_true(n >= 4);
}

/* Every preset but none sets every knob (a forgotten knob would make that
 * work free on that machine). */
static void test_cpumodel_presets_complete(void **state)
{
	const struct sfs_cpu_preset *p;

	for (unsigned i = 0; (p = sfs_cpumodel_nth_preset(i)); i++) {
		if (strcmp(p->name, "none") == 0)
			continue;
		for (size_t j = 0; j < G_N_ELEMENTS(knob_count); j++) {
			struct sfs_cpu_counts c = all(0);

			*count_at(&c, knob_count[j].count) = 1000000;
			if (cost_of(p->name, &c) == 0)
				fail_msg("preset %s leaves %s at 0", p->name,
					 knob_count[j].knob);
		}
	}
}

static void test_cpumodel_none_is_free(void **state)
{
	struct sfs_cpu_counts big = all(1000000007ull);

	assert_int_equal(cost_of("none", &big), 0);
	big = all(UINT64_MAX / 2);
	assert_int_equal(cost_of("none", &big), 0);
}

/* Every knob of the table is in knob_count, and charges its own count
 * only, linearly in the count and in the knob. */
static void test_cpumodel_each_knob_linear(void **state)
{
	const struct sfs_knob *k = sfs_cpumodel_knobs();
	size_t nknobs = 0;

	for (; k[nknobs].key; nknobs++) {
		bool found = false;

		for (size_t j = 0; j < G_N_ELEMENTS(knob_count); j++)
			found |= strcmp(knob_count[j].knob, k[nknobs].key) == 0;
		if (!found)
			fail_msg("knob %s has no count in this test",
				 k[nknobs].key);
	}
	assert_int_equal(nknobs, G_N_ELEMENTS(knob_count));
	assert_int_equal(nknobs, NCOUNTS); /* one knob per count */

	for (size_t j = 0; j < G_N_ELEMENTS(knob_count); j++) {
		char *s3 = g_strdup_printf("none,%s=3", knob_count[j].knob);
		char *s6 = g_strdup_printf("none,%s=6", knob_count[j].knob);
		char *sf = g_strdup_printf("none,%s=0.25", knob_count[j].knob);
		struct sfs_cpu_counts c = all(0), others = all(777);

		*count_at(&c, knob_count[j].count) = 1000;
		*count_at(&others, knob_count[j].count) = 0;
		assert_int_equal(cost_of(s3, &c), 3000);
		assert_int_equal(cost_of(s6, &c), 6000); /* knob doubled */
		assert_int_equal(cost_of(sf, &c), 250);	 /* fractional ns */
		*count_at(&c, knob_count[j].count) = 2000;
		assert_int_equal(cost_of(s3, &c), 6000); /* count doubled */
		/* the knob ignores every other count */
		assert_int_equal(cost_of(s3, &others), 0);
		g_free(s3);
		g_free(s6);
		g_free(sf);
	}
}

/* The cost is the sum of the counts' costs. */
static void test_cpumodel_cost_adds_up(void **state)
{
	struct sfs_cpumodel *m = mk("core2-2009");
	struct sfs_cpu_counts c = all(0), sum = all(0);
	sfs_ns_t parts = 0;

	for (size_t j = 0; j < G_N_ELEMENTS(knob_count); j++) {
		struct sfs_cpu_counts one = all(0);

		*count_at(&one, knob_count[j].count) = 1000 * (j + 1);
		*count_at(&sum, knob_count[j].count) = 1000 * (j + 1);
		parts += sfs_cpumodel_cost(m, &one);
	}
	assert_int_equal(sfs_cpumodel_cost(m, &sum), parts);
	assert_int_equal(sfs_cpumodel_cost(m, &c), 0);
	assert_int_equal(sfs_cpumodel_cost(NULL, &sum), 0);
	sfs_cpumodel_free(m);
}

/* Older machines cost more for the same work, count by count. */
static void test_cpumodel_presets_ordered(void **state)
{
	static const char *const era[] = {"piii-1ghz", "core2-2009", "modern"};
	struct sfs_cpu_counts op = {.calls = 1,
				    .path_steps = 3,
				    .bytes_copied = 4096,
				    .blocks_mapped = 1,
				    .blocks_alloc = 1,
				    .bitmap_words = 16,
				    .dir_entries = 20,
				    .io_reqs = 1};

	for (size_t i = 0; i + 1 < G_N_ELEMENTS(era); i++) {
		assert_true(cost_of(era[i], &op) > cost_of(era[i + 1], &op));
		for (size_t j = 0; j < G_N_ELEMENTS(knob_count); j++) {
			struct sfs_cpu_counts c = all(0);

			*count_at(&c, knob_count[j].count) = 1000000;
			if (!(cost_of(era[i], &c) > cost_of(era[i + 1], &c)))
				fail_msg("%s: %s not dearer than %s",
					 knob_count[j].knob, era[i],
					 era[i + 1]);
		}
	}
	assert_true(cost_of("modern", &op) > 0);
	/* a cached 4 KiB read: ~10 us on a PIII (lmbench reread, 2.3 ns/B),
	 * a few us on a Core 2, about 1 us now */
	{
		struct sfs_cpu_counts rd = {
		    .calls = 1, .bytes_copied = 4096, .blocks_mapped = 1};

		assert_true(cost_of("piii-1ghz", &rd) > 10000);
		assert_true(cost_of("core2-2009", &rd) < 4000);
		assert_true(cost_of("modern", &rd) < 1500);
	}
}

static void test_cpumodel_bad_spec_refused(void **state)
{
	const char *bad[][2] = {
	    {"pentium", "piii-1ghz"},
	    {"pentium", "core2-2009"},
	    {"pentium", "modern"},
	    {"pentium", "none"},
	    {"pentium", "per_call_ns"}, /* the knobs are listed too */
	    {"", "piii-1ghz"},
	    {"core2-2009,bogus=1", "per_call_ns"},
	    {"core2-2009,per_call_ns=-1", "per_call_ns"},
	    {"core2-2009,per_call_ns=fast", "per_call_ns"},
	    {"core2-2009,per_call_ns", "key=value"},
	    {"modern,per_io_req_ns=1e12", "per_io_req_ns"},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		struct sfs_cpumodel *m = NULL;
		char *err = NULL;

		assert_int_equal(sfs_cpumodel_new(bad[i][0], &m, &err),
				 -EINVAL);
		assert_null(m);
		assert_non_null(err);
		if (!strstr(err, bad[i][1]))
			fail_msg("'%s': message '%s' lacks '%s'", bad[i][0],
				 err, bad[i][1]);
		assert_null(strchr(err, '\n')); /* one line */
		g_free(err);
	}
	/* err may be NULL */
	{
		struct sfs_cpumodel *m = NULL;

		assert_int_equal(sfs_cpumodel_new("nope", &m, NULL), -EINVAL);
		assert_int_equal(sfs_cpumodel_new(NULL, &m, NULL), -EINVAL);
		assert_null(m);
	}
}

static void test_cpumodel_override(void **state)
{
	struct sfs_cpumodel *m = mk("piii-1ghz,per_call_ns=3000");
	struct sfs_cpumodel *base = mk("piii-1ghz");
	struct sfs_cpu_counts calls = {.calls = 1},
			      bytes = {.bytes_copied = 1000};
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	assert_string_equal(sfs_cpumodel_name(m), "piii-1ghz");
	assert_int_equal(sfs_cpumodel_cost(m, &calls), 3000);
	assert_int_not_equal(sfs_cpumodel_cost(base, &calls), 3000);
	/* the other knobs keep the preset's values */
	assert_int_equal(sfs_cpumodel_cost(m, &bytes),
			 sfs_cpumodel_cost(base, &bytes));
	assert_true(sfs_cpumodel_params(m)->per_call_ns == 3000.0);
	/* the later setting wins */
	sfs_cpumodel_free(m);
	m = mk("modern,per_call_ns=10,per_call_ns=20");
	assert_int_equal(sfs_cpumodel_cost(m, &calls), 20);

	f = open_memstream(&text, &len);
	assert_non_null(f);
	sfs_cpumodel_print(m, f);
	fclose(f);
	assert_non_null(strstr(text, "modern: "));
	assert_non_null(strstr(text, "per_call_ns=20,"));
	free(text);
	sfs_cpumodel_free(m);
	sfs_cpumodel_free(base);
}

static void test_cpumodel_list(void **state)
{
	const struct sfs_cpu_preset *p;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	sfs_cpumodel_list(f);
	fclose(f);
	for (unsigned i = 0; (p = sfs_cpumodel_nth_preset(i)); i++)
		assert_non_null(strstr(text, p->name));
	for (size_t j = 0; j < G_N_ELEMENTS(knob_count); j++)
		assert_non_null(strstr(text, knob_count[j].knob));
	free(text);
	assert_non_null(sfs_cpumodel_find_preset("modern"));
	assert_null(sfs_cpumodel_find_preset("modem"));
	assert_null(sfs_cpumodel_find_preset(NULL));
}

static void test_cpumodel_counts_sub(void **state)
{
	struct sfs_cpu_counts a = all(10), b = all(3), d;

	sfs_cpu_counts_sub(&a, &b, &d);
	for (size_t i = 0; i < NCOUNTS; i++)
		assert_int_equal(((uint64_t *)&d)[i], 7);
	/* a count that went backwards is 0, not 2^64 - 7 */
	sfs_cpu_counts_sub(&b, &a, &d);
	for (size_t i = 0; i < NCOUNTS; i++)
		assert_int_equal(((uint64_t *)&d)[i], 0);
}

/* cpu= and cpus= in the config: checked at parse time, attached knobs,
 * untouched by the filesystem presets. */
static void test_cpumodel_config_knobs(void **state)
{
	struct sfs_config cfg;
	char *err = NULL;

	sfs_config_defaults(&cfg);
	assert_string_equal(cfg.cpu, "core2-2009");
	assert_int_equal(cfg.cpus, 1);
	assert_int_equal(sfs_config_parse(&cfg,
					  "cpu=piii-1ghz,per_call_ns=3000,"
					  "mem=64M,cpus=4",
					  NULL, &err),
			 0);
	assert_string_equal(cfg.cpu, "piii-1ghz,per_call_ns=3000");
	assert_int_equal(cfg.cpus, 4);
	assert_int_equal(cfg.mem_bytes, 64 * MiB);

	assert_int_equal(sfs_config_parse(&cfg, "cpu=pentium", NULL, &err),
			 -EINVAL);
	assert_non_null(strstr(err, "piii-1ghz"));
	g_free(err);
	err = NULL;
	assert_int_equal(
	    sfs_config_parse(&cfg, "cpu=modern,per_call_ns=x", NULL, &err),
	    -EINVAL);
	g_free(err);
	err = NULL;
	assert_int_equal(sfs_config_parse(&cfg, "cpus=0", NULL, &err), -ERANGE);
	g_free(err);
	err = NULL;
	assert_int_equal(sfs_config_parse(&cfg, "cpus=1025", NULL, &err),
			 -ERANGE);
	g_free(err);
	err = NULL;
	/* refused strings changed nothing */
	assert_string_equal(cfg.cpu, "piii-1ghz,per_call_ns=3000");
	assert_int_equal(cfg.cpus, 4);

	/* the historical systems are filesystems, not machines */
	for (unsigned i = 0; sfs_config_preset_nth(i); i++) {
		const struct sfs_config_preset *p = sfs_config_preset_nth(i);

		assert_null(strstr(p->opts, "cpu"));
	}
	assert_int_equal(sfs_config_parse(&cfg, "preset=ext3", NULL, &err), 0);
	assert_string_equal(cfg.cpu, "piii-1ghz,per_call_ns=3000");
	assert_int_equal(cfg.cpus, 4);
}

static void counts(struct sfs_fs *fs, struct sfs_cpu_counts *out)
{
	sfs_fs_cpu_counts(fs, out);
}

/* One call per operation; a lookup is a path step; a read copies its
 * bytes; a re-read of cached data copies again without device I/O. */
static void test_cpumodel_fs_counts(void **state)
{
	struct sfs_tfs *t = sfs_tfs_new(4096, 64 * MiB, "atime_policy=noatime");
	struct sfs_cpu_counts c0, c1, d;
	uint8_t buf[8192], back[8192];
	struct sfs_attr a;
	sfs_ino_t ino;
	size_t done = 0;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 13 + 1);
	ino = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "f");
	counts(t->fs, &c0);
	assert_true(c0.calls >= 2);	  /* mknod + open at least */
	assert_true(c0.dir_entries >= 1); /* the new name went somewhere */
	assert_int_equal(c0.csum_bytes, 0);

	assert_int_equal(sfs_write(t->fs, ino, 0, buf, sizeof(buf), &done), 0);
	assert_int_equal(done, sizeof(buf));
	counts(t->fs, &c1);
	sfs_cpu_counts_sub(&c1, &c0, &d);
	assert_int_equal(d.calls, 1);
	assert_int_equal(d.path_steps, 0);
	assert_int_equal(d.bytes_copied, sizeof(buf));
	assert_true(d.blocks_mapped >= 2);
	assert_int_equal(d.blocks_alloc, 2);
	assert_true(d.bitmap_words >= 1);
	assert_int_equal(sfs_release(t->fs, ino), 0);

	/* cold: reopen, look up, open, read from the device */
	sfs_tfs_reopen(t);
	counts(t->fs, &c0);
	assert_int_equal(sfs_lookup(t->fs, SFS_ROOT_INO, "f", &a), 0);
	counts(t->fs, &c1);
	sfs_cpu_counts_sub(&c1, &c0, &d);
	assert_int_equal(d.path_steps, 1);
	assert_int_equal(d.calls, 0);
	assert_true(d.dir_entries >= 1);
	assert_int_equal(a.ino, ino);
	assert_int_equal(sfs_open(t->fs, ino, O_RDONLY), 0);

	counts(t->fs, &c0);
	assert_int_equal(sfs_read(t->fs, ino, 0, sizeof(back), back, &done), 0);
	assert_int_equal(done, sizeof(back));
	assert_memory_equal(back, buf, sizeof(buf));
	counts(t->fs, &c1);
	sfs_cpu_counts_sub(&c1, &c0, &d);
	assert_int_equal(d.calls, 1);
	assert_int_equal(d.bytes_copied, sizeof(back));
	assert_true(d.io_reqs >= 1); /* it was not cached */
	assert_int_equal(d.blocks_alloc, 0);

	/* warm: the same bytes again, from the cache */
	c0 = c1;
	memset(back, 0, sizeof(back));
	assert_int_equal(sfs_read(t->fs, ino, 0, sizeof(back), back, &done), 0);
	assert_memory_equal(back, buf, sizeof(buf));
	counts(t->fs, &c1);
	sfs_cpu_counts_sub(&c1, &c0, &d);
	assert_int_equal(d.calls, 1);
	assert_int_equal(d.bytes_copied, sizeof(back));
	assert_int_equal(d.io_reqs, 0);
	assert_int_equal(d.jnl_blocks, 0);
	/* so a CPU model is what gives the cached read its time */
	assert_int_equal(cost_of("none", &d), 0);
	assert_true(cost_of("core2-2009", &d) > 0);

	assert_int_equal(sfs_release(t->fs, ino), 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* On ext4's allocator with a journal: extent steps, journal blocks. */
static void test_cpumodel_fs_counts_journal_extents(void **state)
{
	struct sfs_tfs *t = sfs_tfs_alloc();
	struct sfs_cpu_counts c0, c1, d;
	uint8_t *buf = g_malloc0(64 * 1024);
	sfs_ino_t ino;
	size_t done = 0;

	assert_int_equal(sfs_test_mkimage(t->img, 64 * MiB, 4096), 0);
	sfs_test_add_journal(t->img, 1024);
	t->fs = sfs_test_open(t->img, "data=ordered,alloc=mballoc");
	ino = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "g");
	counts(t->fs, &c0);
	assert_int_equal(sfs_write(t->fs, ino, 0, buf, 64 * 1024, &done), 0);
	assert_int_equal(sfs_fsync(t->fs, ino, false), 0);
	counts(t->fs, &c1);
	sfs_cpu_counts_sub(&c1, &c0, &d);
	assert_int_equal(d.calls, 2); /* write + fsync */
	assert_int_equal(d.bytes_copied, 64 * 1024);
	assert_int_equal(d.blocks_alloc, 16);
	assert_true(d.blocks_mapped >= 16);
	assert_true(d.extent_steps >= 16);
	assert_true(d.jnl_blocks >= 2); /* metadata + commit block at least */
	assert_true(d.io_reqs >= 2);
	assert_int_equal(sfs_release(t->fs, ino), 0);
	g_free(buf);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cpumodel_zero_counts_cost_nothing),
	    cmocka_unit_test(test_cpumodel_none_is_free),
	    cmocka_unit_test(test_cpumodel_presets_complete),
	    cmocka_unit_test(test_cpumodel_each_knob_linear),
	    cmocka_unit_test(test_cpumodel_cost_adds_up),
	    cmocka_unit_test(test_cpumodel_presets_ordered),
	    cmocka_unit_test(test_cpumodel_bad_spec_refused),
	    cmocka_unit_test(test_cpumodel_override),
	    cmocka_unit_test(test_cpumodel_list),
	    cmocka_unit_test(test_cpumodel_counts_sub),
	    cmocka_unit_test(test_cpumodel_config_knobs),
	    cmocka_unit_test(test_cpumodel_fs_counts),
	    cmocka_unit_test(test_cpumodel_fs_counts_journal_extents),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
