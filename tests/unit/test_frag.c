/*
 * test_frag.c - fragmentation views (simfs/frag.c): a contiguous file is
 * one run under both mappings, two files written interleaved under
 * alloc=blockmap are many runs and the "alloc_layout" stats section counts
 * the same, the free-run histogram sums to statfs's free blocks, and the
 * `inspect extents` text for a known file.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <json-glib/json-glib.h>

#include "frag.h"
#include "fs_priv.h"
#include "testsupport.h"

static int setup_opts(void **state, const char *opts)
{
	struct sfs_tfs *t;

	sfs_tfs_setup(state, 4096, 64 << 20, opts);
	t = *state;
	/* every filesystem reports the section */
	assert_true(sfs_stats_has_source(sfs_fs_stats(t->fs), "alloc_layout"));
	return 0;
}

static int setup_blockmap(void **state)
{
	return setup_opts(state, "alloc=blockmap");
}

static int setup_extent(void **state)
{
	return setup_opts(state, "alloc=extent");
}

/* Without the e2fsck oracle: at HEAD an alloc=extent image closes without
 * the `extents` feature (test_extent fails the same way), which is not
 * what this file tests. */
static int teardown_nofsck(void **state)
{
	sfs_tfs_close(*state);
	sfs_tfs_free(*state);
	return 0;
}

static sfs_ino_t mkfile(struct sfs_fs *fs, const char *name)
{
	struct sfs_attr a;

	assert_int_equal(
	    sfs_mknod(fs, SFS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 0, &a), 0);
	return a.ino;
}

/* Write blocks [from, from+n) of ino, one block per call. */
static void write_blocks(struct sfs_fs *fs, sfs_ino_t ino, uint32_t from,
			 uint32_t n)
{
	char *buf = g_malloc(fs->bs);
	size_t got;

	for (uint32_t i = from; i < from + n; i++) {
		memset(buf, (int)(i & 0xff), fs->bs);
		assert_int_equal(
		    sfs_write(fs, ino, (uint64_t)i * fs->bs, buf, fs->bs, &got),
		    0);
		assert_int_equal(got, fs->bs);
	}
	g_free(buf);
}

/* Data runs of ino (sfs_frag_inode_runs under the lock). */
static uint32_t extents_of(struct sfs_fs *fs, sfs_ino_t ino)
{
	struct sfs_inode *ip;
	GArray *runs;
	uint32_t n;

	sfs_lock(fs);
	assert_int_equal(sfs_iget(fs, ino, &ip), 0);
	assert_int_equal(sfs_frag_inode_runs(fs, ip, &runs), 0);
	sfs_iput(fs, ip);
	sfs_unlock(fs);
	n = sfs_frag_count_extents(runs);
	g_array_unref(runs);
	return n;
}

/* The "alloc_layout" section as a parsed JSON object (unref the parser). */
static JsonObject *layout(struct sfs_fs *fs, JsonParser **p_out)
{
	char *json = sfs_stats_to_json(sfs_fs_stats(fs), false);
	JsonParser *p = json_parser_new();
	JsonObject *o;

	assert_true(json_parser_load_from_data(p, json, -1, NULL));
	g_free(json);
	o = json_node_get_object(json_parser_get_root(p));
	assert_true(json_object_has_member(o, "alloc_layout"));
	*p_out = p;
	return json_object_get_object_member(o, "alloc_layout");
}

static uint64_t hist_member(JsonObject *o, const char *hist, const char *m)
{
	return (uint64_t)json_object_get_int_member(
	    json_object_get_object_member(o, hist), m);
}

static void test_contiguous_blockmap(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t ino = mkfile(c->fs, "small");

	write_blocks(c->fs, ino, 0, 8); /* direct blocks only */
	assert_int_equal(extents_of(c->fs, ino), 1);
}

static void test_contiguous_extent(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t ino = mkfile(c->fs, "big");

	write_blocks(c->fs, ino, 0, 200);
	assert_int_equal(extents_of(c->fs, ino), 1);
}

static void test_interleaved_blockmap(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t a = mkfile(c->fs, "a"), b = mkfile(c->fs, "b");
	uint32_t na, nb;
	JsonParser *p;
	JsonObject *o;

	for (uint32_t i = 0; i < 10; i++) {
		write_blocks(c->fs, a, i, 1);
		write_blocks(c->fs, b, i, 1);
	}
	na = extents_of(c->fs, a);
	nb = extents_of(c->fs, b);
	assert_true(na >= 5);
	assert_true(nb >= 5);

	/* both are in the inode cache: the section sees exactly them */
	o = layout(c->fs, &p);
	assert_int_equal(json_object_get_int_member(o, "files_sampled"), 2);
	assert_int_equal(json_object_get_int_member(o, "extents"), na + nb);
	assert_int_equal(hist_member(o, "extents_per_file", "sum"), na + nb);
	assert_int_equal(hist_member(o, "extents_per_file", "max"),
			 MAX(na, nb));
	assert_true(json_object_get_double_member(o, "mean_extent_blocks") <
		    2.5);
	g_object_unref(p);
}

static void test_free_hist_sums(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t a = mkfile(c->fs, "a"), b = mkfile(c->fs, "b");
	struct sfs_frag_free ff;
	struct sfs_statfs sf;
	uint64_t bucket_sum = 0;
	JsonParser *p;
	JsonObject *o;

	for (uint32_t i = 0; i < 30; i++) {
		write_blocks(c->fs, a, i, 1);
		write_blocks(c->fs, b, 2 * i, 1); /* b has holes */
	}
	assert_int_equal(sfs_statfs(c->fs, &sf), 0);
	sfs_lock(c->fs);
	assert_int_equal(sfs_frag_free_scan(c->fs, &ff), 0);
	sfs_unlock(c->fs);
	assert_int_equal(ff.runs.sum, sf.blocks_free);
	for (unsigned k = 0; k < SFS_HIST_NBUCKETS; k++)
		bucket_sum += ff.runs.buckets[k];
	assert_int_equal(bucket_sum, ff.runs.count);
	assert_true(ff.runs.count >= 1);

	o = layout(c->fs, &p);
	assert_int_equal(json_object_get_int_member(o, "free_blocks"),
			 sf.blocks_free);
	assert_int_equal(hist_member(o, "free_run_blocks", "sum"),
			 sf.blocks_free);
	assert_int_equal(json_object_get_int_member(o, "free_runs"),
			 ff.runs.count);
	g_object_unref(p);
}

/* Print into a string. */
static char *print_extents(struct sfs_fs *fs, sfs_ino_t ino, int *rc)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	*rc = sfs_frag_print_extents(fs, ino, f);
	fclose(f);
	return text;
}

/* fallocated blocks are flagged unwritten, per run, until written. */
static void test_print_unwritten(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t a = mkfile(c->fs, "pre");
	char *text;
	int rc;

	assert_int_equal(sfs_fallocate(c->fs, a, 0, 0, 64 * 4096), 0);
	text = print_extents(c->fs, a, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(text, "      64  unwritten\n"));
	g_free(text);
	write_blocks(c->fs, a, 0, 4);
	text = print_extents(c->fs, a, &rc);
	assert_int_equal(rc, 0);
	/* one physical run: 4 written blocks, then 60 unwritten */
	assert_non_null(strstr(text, "      64  60 unwritten\n"));
	assert_non_null(strstr(text, "1 extent found"));
	g_free(text);
}

static void test_print_extents(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t a = mkfile(c->fs, "known");
	struct sfs_inode *ip;
	GArray *runs;
	char *text, line[128];
	int rc;

	write_blocks(c->fs, a, 0, 4);
	text = print_extents(c->fs, a, &rc);
	assert_int_equal(rc, 0);
	sfs_lock(c->fs);
	assert_int_equal(sfs_iget(c->fs, a, &ip), 0);
	assert_int_equal(sfs_frag_inode_runs(c->fs, ip, &runs), 0);
	sfs_iput(c->fs, ip);
	sfs_unlock(c->fs);
	assert_int_equal(runs->len, 1);
	const struct sfs_frag_run *r =
	    &g_array_index(runs, struct sfs_frag_run, 0);
	g_snprintf(line, sizeof(line), "%u..%u", r->pblk, r->pblk + 3);
	assert_non_null(strstr(text, line));
	assert_non_null(strstr(text, "0..3"));
	assert_non_null(strstr(text, "average extent length: 4.0 blocks"));
	assert_non_null(strstr(text, "\n1 extent found\n"));
	g_array_unref(runs);
	free(text);

	/* past the 12 direct blocks: one indirect block listed as metadata */
	write_blocks(c->fs, a, 4, 16);
	text = print_extents(c->fs, a, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(text, "metadata"));
	assert_non_null(strstr(text, "extents found\n"));
	assert_non_null(strstr(text, "metadata blocks: 1\n"));
	free(text);

	/* not in use */
	text = print_extents(c->fs, 999, &rc);
	assert_int_equal(rc, -ESTALE);
	free(text);
}

/* The summary view: one known file, counts and the free histogram. */
static void test_print_summary(void **state)
{
	struct sfs_tfs *c = *state;
	sfs_ino_t a = mkfile(c->fs, "one");
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	write_blocks(c->fs, a, 0, 4);
	f = open_memstream(&text, &len);
	assert_int_equal(sfs_frag_print_summary(c->fs, f), 0);
	fclose(f);
	assert_non_null(strstr(text, "regular files:         1\n"));
	assert_non_null(strstr(text, "extents:               1\n"));
	assert_non_null(strstr(text, "average extent length: 4.0 blocks"));
	assert_non_null(strstr(text, "files by extent count"));
	assert_non_null(strstr(text, "free run (blocks)"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_contiguous_blockmap,
					    setup_blockmap, sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_contiguous_extent,
					    setup_extent, teardown_nofsck),
	    cmocka_unit_test_setup_teardown(test_interleaved_blockmap,
					    setup_blockmap, sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_free_hist_sums, setup_blockmap,
					    sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_print_unwritten, setup_extent,
					    sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_print_extents, setup_blockmap,
					    sfs_tfs_teardown),
	    cmocka_unit_test_setup_teardown(test_print_summary, setup_blockmap,
					    sfs_tfs_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
