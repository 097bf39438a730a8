/*
 * test_allocmodels.c - the allocator contract: every allocator the registry
 * lists (models/alloc/registry.c) goes through the same checks, so a new
 * one is tested by adding its registry line.
 *
 *   registry   names unique and listed by sfs_alloc_names, help given, a
 *              mapping and a placement model; a model with knobs has a
 *              configure verb and a parameter size; knob names unique
 *              across models and no simfs knob's;
 *   knobs      every default is accepted and is the value in effect; bad
 *              values (empty, not a number or choice, out of range) are
 *              refused with a one-line message, the config unchanged; only
 *              live knobs change while mounted; each is in --help and in
 *              simfs-options(7) (argv[1], the built page);
 *   placement  mounted with alloc=NAME: raw requests until -ENOSPC hand
 *              out every free block exactly once (no block twice, none
 *              already used, each marked in the bitmap); freed blocks are
 *              handed out again; the free count returns to its start;
 *   files      several files written in turns, half deleted, rewritten:
 *              the model's own check verb holds, and e2fsck finds the
 *              image clean after unmount;
 *   live knob  a live knob changed on the mounted filesystem is kept.
 *
 * Then alloc=nextfit's own rules: the goal ignored, a rover, first fit
 * filling the hole at the start, nextfit_run capping a request.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "alloc.h"
#include "config.h"
#include "devmodel.h"
#include "fs_priv.h"
#include "testsupport.h"

static const char *page_path; /* simfs-options(7) as built */

/* Does text name key as a whole word (followed by '=', '\' or space)? */
static bool names_key(const char *text, const char *key)
{
	size_t len = strlen(key);

	for (const char *p = text; (p = strstr(p, key)); p++) {
		char after = p[len];
		/* a word start, or right after roff's bold "\\fB" */
		bool start = p == text ||
			     (!g_ascii_isalnum(p[-1]) && p[-1] != '_') ||
			     (p - text >= 3 && strncmp(p - 3, "\\fB", 3) == 0);

		if (start && (after == '=' || after == '\\' || after == ' '))
			return true;
	}
	return false;
}

static char *help_text(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	char *out;

	assert_non_null(f);
	sfs_config_print_help(f);
	fclose(f);
	out = g_strdup(buf);
	free(buf);
	return out;
}

static void test_registry(void **state)
{
	const struct sfs_alloc_preset *p;
	const struct sfs_alloc_ops *o;
	struct sfs_config cfg;
	gchar **names = g_strsplit(sfs_alloc_names(), ", ", -1);
	unsigned n = 0;

	(void)state;
	sfs_config_defaults(&cfg);
	for (unsigned i = 0; (p = sfs_alloc_nth(i)); i++, n++) {
		assert_non_null(p->name);
		assert_true(*p->help);
		assert_non_null(p->map);
		assert_non_null(p->place);
		assert_non_null(p->place->new_blocks);
		assert_non_null(p->map->map);
		assert_ptr_equal(sfs_alloc_find(p->name), p);
		assert_true(
		    g_strv_contains((const gchar *const *)names, p->name));
	}
	assert_int_equal(g_strv_length(names), n);
	assert_true(n >= 5);
	for (unsigned i = 0; (o = sfs_alloc_place_nth(i)); i++) {
		if (!o->knobs)
			continue;
		assert_non_null(o->configure);
		assert_true(o->params_size > 0);
		for (const struct sfs_knob *k = o->knobs; k->key; k++) {
			const struct sfs_alloc_ops *owner = NULL;

			/* the first owner found is this model: unique */
			assert_ptr_equal(sfs_alloc_knob_find(k->key, &owner),
					 k);
			assert_ptr_equal(owner, o);
			assert_non_null(k->help);
		}
	}
	g_strfreev(names);
}

/* Refused, one line, cfg unchanged. */
static void refused(struct sfs_config *cfg, const char *opt, int want_rc)
{
	struct sfs_config before = *cfg;
	char *err = NULL;
	int rc = sfs_config_parse(cfg, opt, NULL, &err);

	if (rc != want_rc)
		print_error("%s: rc %d, want %d (%s)\n", opt, rc, want_rc,
			    err ? err : "");
	assert_int_equal(rc, want_rc);
	assert_non_null(err);
	assert_null(strchr(err, '\n'));
	assert_memory_equal(&before, cfg, sizeof(before));
	g_free(err);
}

static void test_knobs(void **state)
{
	const struct sfs_alloc_ops *o;
	char *help = help_text(), *page = NULL;
	gsize page_len;
	unsigned nknobs = 0;

	(void)state;
	assert_non_null(page_path);
	assert_true(g_file_get_contents(page_path, &page, &page_len, NULL));
	for (unsigned i = 0; (o = sfs_alloc_place_nth(i)); i++)
		for (const struct sfs_knob *k = o->knobs; k && k->key; k++) {
			struct sfs_config cfg;
			char *opt, *err = NULL, *v;

			nknobs++;
			sfs_config_defaults(&cfg);
			v = sfs_config_get(&cfg, k->key);
			assert_non_null(v);
			assert_string_equal(v, k->def); /* default in effect */
			g_free(v);
			opt = g_strdup_printf("%s=%s", k->key, k->def);
			assert_int_equal(
			    sfs_config_parse(&cfg, opt, NULL, &err), 0);
			/* while mounted: only a live knob */
			assert_int_equal(
			    sfs_config_parse_runtime(&cfg, opt, &err),
			    k->live ? 0 : -EPERM);
			g_free(err);
			err = NULL;
			g_free(opt);

			opt = g_strdup_printf("%s=", k->key);
			refused(&cfg, opt, -EINVAL);
			g_free(opt);
			opt = g_strdup_printf("%s=bogus", k->key);
			refused(&cfg, opt, -EINVAL);
			g_free(opt);
			if (k->type == SFS_KNOB_U32 ||
			    k->type == SFS_KNOB_U64) {
				opt = g_strdup_printf("%s=%.0f", k->key,
						      k->max + 1);
				refused(&cfg, opt, -ERANGE);
				g_free(opt);
				if (k->min > 0) {
					opt = g_strdup_printf("%s=%.0f", k->key,
							      k->min - 1);
					refused(&cfg, opt, -ERANGE);
					g_free(opt);
				}
				/* the maximum itself is accepted and kept */
				opt =
				    g_strdup_printf("%s=%.0f", k->key, k->max);
				assert_int_equal(
				    sfs_config_parse(&cfg, opt, NULL, &err), 0);
				v = sfs_config_get(&cfg, k->key);
				assert_string_equal(v,
						    opt + strlen(k->key) + 1);
				g_free(v);
				g_free(opt);
			}
			if (!names_key(help, k->key))
				print_error("%s not in --help\n", k->key);
			assert_true(names_key(help, k->key));
			if (!names_key(page, k->key))
				print_error("%s not in the man page\n", k->key);
			assert_true(names_key(page, k->key));
		}
	assert_true(nknobs >= 9); /* reservation 2, mballoc 5, nextfit 2 */
	g_free(help);
	g_free(page);
}

static bool blk_used(struct sfs_fs *fs, sfs_blk_t b)
{
	uint32_t g = sfs_blk_group(fs, b), bit;
	struct sfs_buf *buf;
	bool used;

	assert_int_equal(sfs_block_bitmap(fs, g, &buf), 0);
	bit = (uint32_t)(b - sfs_group_first(fs, g));
	used = buf->data[bit >> 3] & (1u << (bit & 7));
	sfs_cache_put(fs->cache, buf);
	return used;
}

struct run {
	sfs_blk_t s;
	uint32_t n;
};

/* Allocate until -ENOSPC; every block new, unused before, now marked. */
static uint64_t fill(struct sfs_fs *fs, uint8_t *mine, GArray *runs)
{
	uint64_t total = 0;
	sfs_blk_t start;
	uint32_t got;
	int rc;

	while ((rc = sfs_alloc_blocks(fs, NULL, fs->first_data_block + 77, 19,
				      &start, &got)) == 0) {
		struct run r = {start, got};

		assert_true(got >= 1 && got <= 19);
		assert_true(start >= fs->first_data_block &&
			    start + got <= fs->blocks_count);
		for (uint32_t k = 0; k < got; k++) {
			sfs_blk_t b = start + k;

			assert_false(mine[b >> 3] & (1u << (b & 7)));
			assert_true(blk_used(fs, b));
			mine[b >> 3] |= (uint8_t)(1u << (b & 7));
		}
		g_array_append_val(runs, r);
		total += got;
	}
	assert_int_equal(rc, -ENOSPC);
	assert_int_equal(sfs_free_blocks(fs), 0);
	return total;
}

static void model_check(struct sfs_fs *fs, const char *name)
{
	char *err = NULL;

	if (!fs->alloc->ops->check)
		return;
	if (fs->alloc->ops->check(fs->alloc, &err) != 0)
		print_error("%s: %s\n", name, err ? err : "check failed");
	g_free(err);
	assert_null(err);
}

static void placement_one(const struct sfs_alloc_preset *p)
{
	char *opts = g_strdup_printf("alloc=%s", p->name);
	struct sfs_tfs *t = sfs_tfs_new(1024, 12 << 20, opts);
	struct sfs_fs *fs = t->fs;
	GArray *runs = g_array_new(FALSE, FALSE, sizeof(struct run));
	uint8_t *mine;
	uint64_t free0, total, again = 0;

	sfs_lock(fs);
	mine = g_malloc0(fs->blocks_count / 8 + 1);
	free0 = sfs_free_blocks(fs);
	total = fill(fs, mine, runs);
	assert_int_equal(total, free0);
	model_check(fs, p->name);
	/* free every other run, then take them again: reuse */
	for (guint k = 0; k < runs->len; k += 2) {
		struct run *r = &g_array_index(runs, struct run, k);

		assert_int_equal(sfs_blocks_free(fs, r->s, r->n), 0);
		for (uint32_t b = 0; b < r->n; b++) {
			assert_false(blk_used(fs, r->s + b));
			mine[(r->s + b) >> 3] &=
			    (uint8_t) ~(1u << ((r->s + b) & 7));
		}
		again += r->n;
	}
	assert_int_equal(sfs_free_blocks(fs), again);
	g_array_set_size(runs, 0);
	assert_int_equal(fill(fs, mine, runs), again);
	model_check(fs, p->name);
	/* free all, run by run of blocks this test holds: back to the start */
	for (sfs_blk_t b = fs->first_data_block; b < fs->blocks_count;) {
		uint32_t n = 0;

		while (b + n < fs->blocks_count &&
		       (mine[(b + n) >> 3] & (1u << ((b + n) & 7))))
			n++;
		if (n)
			assert_int_equal(sfs_blocks_free(fs, b, n), 0);
		b += n ? n : 1;
	}
	assert_int_equal(sfs_free_blocks(fs), free0);
	model_check(fs, p->name);
	sfs_unlock(fs);
	g_array_free(runs, TRUE);
	g_free(mine);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
	g_free(opts);
}

static void test_placement(void **state)
{
	const struct sfs_alloc_preset *p;

	(void)state;
	for (unsigned i = 0; (p = sfs_alloc_nth(i)); i++)
		placement_one(p);
}

static void put(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off, size_t len,
		int seed)
{
	char *buf = g_malloc(len);
	size_t done = 0;

	memset(buf, 'a' + seed % 26, len);
	assert_int_equal(sfs_write(fs, ino, off, buf, len, &done), 0);
	assert_int_equal(done, len);
	g_free(buf);
}

static void files_one(const struct sfs_alloc_preset *p, const char *extra)
{
	char *opts = g_strdup_printf("alloc=%s%s", p->name, extra);
	struct sfs_tfs *t = sfs_tfs_new(1024, 16 << 20, opts);
	enum { NF = 6 };
	sfs_ino_t ino[NF];
	char name[16];
	uint64_t free0 = sfs_test_free_blocks(t->fs);

	for (int f = 0; f < NF; f++) {
		g_snprintf(name, sizeof(name), "f%d", f);
		ino[f] = sfs_test_mkfile(t->fs, SFS_ROOT_INO, name);
	}
	/* in turns: the writers compete for space (300 KiB each) */
	for (int round = 0; round < 10; round++)
		for (int f = 0; f < NF; f++)
			put(t->fs, ino[f], (uint64_t)round * 30720, 30720,
			    f + round);
	for (int f = 0; f < NF; f++)
		assert_int_equal(sfs_release(t->fs, ino[f]), 0);
	/* delayed blocks are placed at write-back */
	assert_int_equal(sfs_fs_sync(t->fs), 0);
	assert_true(sfs_test_free_blocks(t->fs) < free0);
	sfs_lock(t->fs);
	model_check(t->fs, p->name);
	sfs_unlock(t->fs);
	/* delete every other file, write a new one into the holes */
	for (int f = 0; f < NF; f += 2) {
		g_snprintf(name, sizeof(name), "f%d", f);
		assert_int_equal(sfs_unlink(t->fs, SFS_ROOT_INO, name), 0);
	}
	ino[0] = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "new");
	put(t->fs, ino[0], 0, 700 * 1024, 3);
	assert_int_equal(sfs_release(t->fs, ino[0]), 0);
	assert_int_equal(sfs_fs_sync(t->fs), 0);
	sfs_lock(t->fs);
	model_check(t->fs, p->name);
	sfs_unlock(t->fs);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
	g_free(opts);
}

static void test_files(void **state)
{
	const struct sfs_alloc_preset *p;

	(void)state;
	for (unsigned i = 0; (p = sfs_alloc_nth(i)); i++) {
		files_one(p, "");
		files_one(p, ",delalloc");
	}
	/* the other modes of the teaching model */
	files_one(sfs_alloc_find("nextfit"), ",nextfit_mode=first");
	files_one(sfs_alloc_find("nextfit"), ",nextfit_run=1");
}

/* A live knob changed on the mounted filesystem is what is in effect. */
static void test_live_knobs(void **state)
{
	const struct sfs_alloc_preset *p;

	(void)state;
	for (unsigned i = 0; (p = sfs_alloc_nth(i)); i++) {
		const struct sfs_knob *k = p->place->knobs;
		char *opts = g_strdup_printf("alloc=%s", p->name);
		struct sfs_tfs *t = sfs_tfs_new(1024, 8 << 20, opts);

		for (; k && k->key; k++) {
			struct sfs_config cfg;
			char *set, *err = NULL, *v;

			if (!k->live || k->type != SFS_KNOB_U32)
				continue;
			set = g_strdup_printf("%s=%.0f", k->key, k->max);
			/* a maximum may contradict another knob (mballoc's
			 * min_to_scan <= max_to_scan): either refused whole
			 * with a message, or in effect */
			if (sfs_fs_set_knobs(t->fs, set, &err) == 0) {
				sfs_fs_get_config(t->fs, &cfg);
				v = sfs_config_get(&cfg, k->key);
				assert_string_equal(v,
						    set + strlen(k->key) + 1);
				g_free(v);
			} else {
				assert_non_null(err);
			}
			g_free(err);
			g_free(set);
		}
		sfs_tfs_assert_clean(t);
		sfs_tfs_free(t);
		g_free(opts);
	}
}

/* First block at or after b free in the bitmaps. */
static sfs_blk_t first_free(struct sfs_fs *fs, sfs_blk_t b)
{
	while (b < fs->blocks_count && blk_used(fs, b))
		b++;
	return b;
}

/* alloc=nextfit's own rules: no goal, a rover; first fit fills holes. */
static void test_nextfit_rules(void **state)
{
	struct sfs_tfs *t = sfs_tfs_new(1024, 8 << 20, "alloc=nextfit");
	struct sfs_fs *fs = t->fs;
	sfs_blk_t far, s1, s2, s3, s4, want;
	uint32_t got;
	char *err = NULL;

	(void)state;
	sfs_lock(fs);
	far = sfs_group_first(fs, fs->groups - 1) + 100;
	/* the goal is ignored: the first free block of the disk */
	want = first_free(fs, fs->first_data_block);
	assert_int_equal(sfs_alloc_blocks(fs, NULL, far, 4, &s1, &got), 0);
	assert_int_equal(s1, want);
	assert_int_equal(got, 4);
	/* next fit: on from the rover */
	want = first_free(fs, s1 + 4);
	assert_int_equal(sfs_alloc_blocks(fs, NULL, far, 4, &s2, &got), 0);
	assert_int_equal(s2, want);
	assert_int_equal(got, 4);
	/* a hole behind the rover is not taken */
	assert_int_equal(sfs_blocks_free(fs, s1, 4), 0);
	want = first_free(fs, s2 + got);
	assert_int_equal(sfs_alloc_blocks(fs, NULL, s1, 4, &s3, &got), 0);
	assert_int_equal(s3, want);
	assert_int_equal(got, 4);
	sfs_unlock(fs);
	/* first fit (a live knob): the hole at the start is taken */
	assert_int_equal(
	    sfs_fs_set_knobs(fs, "nextfit_mode=first,nextfit_run=2", &err), 0);
	sfs_lock(fs);
	assert_int_equal(sfs_alloc_blocks(fs, NULL, far, 4, &s4, &got), 0);
	assert_int_equal(s4, s1);
	assert_int_equal(got, 2); /* nextfit_run */
	/* give everything back (s2 and s3 got 4 each) */
	assert_int_equal(sfs_blocks_free(fs, s2, 4), 0);
	assert_int_equal(sfs_blocks_free(fs, s3, 4), 0);
	assert_int_equal(sfs_blocks_free(fs, s4, 2), 0);
	sfs_unlock(fs);
	g_free(err);
	sfs_tfs_assert_clean(t); /* bitmaps and counts agree */
	sfs_tfs_free(t);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_registry),
	    cmocka_unit_test(test_knobs),
	    cmocka_unit_test(test_placement),
	    cmocka_unit_test(test_files),
	    cmocka_unit_test(test_live_knobs),
	    cmocka_unit_test(test_nextfit_rules),
	};

	page_path = argc > 1 ? argv[1] : NULL;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
