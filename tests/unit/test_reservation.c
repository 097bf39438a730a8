/*
 * test_reservation.c - the ext3-era placement and policy knobs: reservation
 * windows (alloc=reservation) against ext2's search, Orlov against oldalloc
 * directory placement, the atime policies, nouser_xattr, and the presets
 * (parsing, overriding, the --list-presets text).
 *
 * Two regular files written alternately block by block interleave under
 * alloc=blockmap; under alloc=reservation each file's blocks come in runs
 * that double 8 -> 16 -> 32 ...  Every case ends with e2fsck -fn clean.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "fs_priv.h"
#include "stats.h"
#include "testsupport.h"

/* cfg's value of an allocator knob, as text. */
static void assert_knob(const struct sfs_config *cfg, const char *key,
			const char *want)
{
	char *v = sfs_config_get(cfg, key);

	assert_non_null(v);
	assert_string_equal(v, want);
	g_free(v);
}

static struct sfs_tfs *tfs_open(uint64_t size, uint32_t bs, const char *opts)
{
	struct sfs_tfs *t = sfs_tfs_alloc();

	assert_int_equal(sfs_test_mkimage(t->img, size, bs), 0);
	t->fs = sfs_test_open(t->img, opts);
	return t;
}

/* Append one block to ino; the write's return code. */
static int put_block(struct sfs_fs *fs, sfs_ino_t ino, uint32_t lblk)
{
	static uint8_t buf[4096];
	size_t done = 0;

	memset(buf, (int)(lblk & 0xff), sizeof(buf));
	return sfs_write(fs, ino, (uint64_t)lblk * fs->bs, buf, fs->bs, &done);
}

static int collect(void *ctx, uint32_t lblk, sfs_blk_t pblk, uint32_t len,
		   bool meta)
{
	GArray *blocks = ctx;

	(void)lblk;
	(void)meta;
	for (uint32_t i = 0; i < len; i++) {
		sfs_blk_t b = pblk + i;
		g_array_append_val(blocks, b);
	}
	return 0;
}

static gint cmp_blk(gconstpointer a, gconstpointer b)
{
	sfs_blk_t x = *(const sfs_blk_t *)a, y = *(const sfs_blk_t *)b;

	return x < y ? -1 : x > y;
}

/* Lengths of the physically contiguous runs of ino's blocks (data and
 * indirect), in disk order. */
static GArray *file_runs(struct sfs_fs *fs, sfs_ino_t ino)
{
	GArray *blocks = g_array_new(FALSE, FALSE, sizeof(sfs_blk_t));
	GArray *runs = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	struct sfs_inode *ip;
	uint32_t n = 0;

	sfs_lock(fs);
	assert_int_equal(sfs_iget(fs, ino, &ip), 0);
	assert_int_equal(fs->map->walk(fs, ip, collect, blocks), 0);
	sfs_iput(fs, ip);
	sfs_unlock(fs);
	g_array_sort(blocks, cmp_blk);
	for (guint i = 0; i < blocks->len; i++) {
		if (i > 0 && g_array_index(blocks, sfs_blk_t, i) !=
				 g_array_index(blocks, sfs_blk_t, i - 1) + 1) {
			g_array_append_val(runs, n);
			n = 0;
		}
		n++;
	}
	if (n)
		g_array_append_val(runs, n);
	g_array_free(blocks, TRUE);
	return runs;
}

static void check_windows(struct sfs_fs *fs, struct sfs_rsv_counters *c)
{
	sfs_lock(fs);
	assert_int_equal(sfs_reservation_check(fs->alloc, c), 0);
	sfs_unlock(fs);
}

/* 247 data blocks + 1 indirect = 8 + 16 + 32 + 64 + 128 disk blocks. */
#define NBLK 247

static void write_alternately(struct sfs_fs *fs, sfs_ino_t a, sfs_ino_t b,
			      uint32_t n)
{
	for (uint32_t l = 0; l < n; l++) {
		assert_int_equal(put_block(fs, a, l), 0);
		assert_int_equal(put_block(fs, b, l), 0);
	}
}

static void test_reservation_blockmap_interleaves(void **state)
{
	struct sfs_tfs *t;
	sfs_ino_t a, b;
	GArray *ra, *rb;

	(void)state;
	t = tfs_open(64 << 20, 4096, "alloc=blockmap");
	a = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "a");
	b = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "b");
	write_alternately(t->fs, a, b, NBLK);
	ra = file_runs(t->fs, a);
	rb = file_runs(t->fs, b);
	assert_true(ra->len > NBLK / 2);
	assert_true(rb->len > NBLK / 2);
	g_array_free(ra, TRUE);
	g_array_free(rb, TRUE);
	assert_int_equal(sfs_release(t->fs, a), 0);
	assert_int_equal(sfs_release(t->fs, b), 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_reservation_runs_double(void **state)
{
	struct sfs_tfs *t;
	struct sfs_rsv_counters c;
	sfs_ino_t ino[2];

	(void)state;
	t = tfs_open(64 << 20, 4096, "alloc=reservation");
	ino[0] = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "a");
	ino[1] = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "b");
	write_alternately(t->fs, ino[0], ino[1], NBLK);
	for (int f = 0; f < 2; f++) {
		GArray *r = file_runs(t->fs, ino[f]);
		uint32_t want = 8;

		assert_int_equal(r->len, 5);
		for (guint i = 0; i < r->len; i++, want *= 2)
			assert_int_equal(g_array_index(r, uint32_t, i), want);
		g_array_free(r, TRUE);
	}
	check_windows(t->fs, &c);
	assert_int_equal(c.windows_live, 2);
	assert_int_equal(c.windows_made, 10);
	assert_int_equal(c.windows_grown, 8);
	assert_int_equal(c.allocs_fallback, 0);

	/* the last close drops the window */
	assert_int_equal(sfs_release(t->fs, ino[0]), 0);
	check_windows(t->fs, &c);
	assert_int_equal(c.windows_live, 1);
	assert_int_equal(c.windows_dropped, 1);
	assert_int_equal(sfs_release(t->fs, ino[1]), 0);
	check_windows(t->fs, &c);
	assert_int_equal(c.windows_live, 0);
	assert_int_equal(c.windows_dropped, 2);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* Four writers, a small multi-group image filled to the last block:
 * windows never overlap, and every free block is handed out. */
static void test_reservation_fill_no_false_enospc(void **state)
{
	struct sfs_tfs *t;
	struct sfs_rsv_counters c;
	sfs_ino_t ino[4];
	uint32_t l = 0;
	int rc = 0;

	(void)state;
	t = tfs_open(16 << 20, 1024, "alloc=reservation,reservation_max=64");
	assert_true(t->fs->groups > 1);
	for (int f = 0; f < 4; f++) {
		char name[8];

		g_snprintf(name, sizeof(name), "f%d", f);
		ino[f] = sfs_test_mkfile(t->fs, SFS_ROOT_INO, name);
	}
	for (; rc == 0; l++) {
		for (int f = 0; f < 4 && rc == 0; f++)
			rc = put_block(t->fs, ino[f], l);
		if (l % 64 == 0)
			check_windows(t->fs, NULL);
	}
	assert_int_equal(rc, -ENOSPC);
	sfs_lock(t->fs);
	assert_int_equal(sfs_free_blocks(t->fs), 0);
	sfs_unlock(t->fs);
	check_windows(t->fs, &c);
	assert_true(c.windows_made > 4);
	for (int f = 0; f < 4; f++)
		assert_int_equal(sfs_release(t->fs, ino[f]), 0);
	check_windows(t->fs, &c);
	assert_int_equal(c.windows_live, 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* Truncate drops the window; directories never get one. */
static void test_reservation_truncate_and_dirs(void **state)
{
	struct sfs_tfs *t;
	struct sfs_rsv_counters c;
	struct sfs_attr at, in = {0};
	sfs_ino_t a;

	(void)state;
	t = tfs_open(64 << 20, 4096, "alloc=reservation");
	a = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "a");
	for (uint32_t l = 0; l < 4; l++)
		assert_int_equal(put_block(t->fs, a, l), 0);
	check_windows(t->fs, &c);
	assert_int_equal(c.windows_live, 1);
	in.size = 0;
	assert_int_equal(sfs_setattr(t->fs, a, &in, SFS_SET_SIZE, &at), 0);
	check_windows(t->fs, &c);
	assert_int_equal(c.windows_live, 0);
	assert_int_equal(sfs_mkdir(t->fs, SFS_ROOT_INO, "d", 0755, 0, 0, &at),
			 0);
	check_windows(t->fs, &c);
	assert_int_equal(c.windows_live, 0);
	assert_true(c.allocs_unreserved >= 1);
	assert_int_equal(sfs_release(t->fs, a), 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static uint32_t ino_group(struct sfs_fs *fs, sfs_ino_t ino)
{
	return (ino - 1) / fs->ipg;
}

/* Eight top-level directories, then eight subdirectories of the first. */
static void place_dirs(const char *opts, uint32_t *top_groups,
		       uint32_t *parent_group, uint32_t *sub_in_parent,
		       uint32_t *sub_groups)
{
	struct sfs_tfs *t;
	struct sfs_attr top[8], sub;
	bool seen[64] = {false}, sseen[64] = {false};

	t = tfs_open(64 << 20, 1024, opts);
	assert_true(t->fs->groups >= 8 && t->fs->groups <= 64);
	*top_groups = 0;
	for (int i = 0; i < 8; i++) {
		char name[8];
		uint32_t g;

		g_snprintf(name, sizeof(name), "t%d", i);
		assert_int_equal(
		    sfs_mkdir(t->fs, SFS_ROOT_INO, name, 0755, 0, 0, &top[i]),
		    0);
		g = ino_group(t->fs, top[i].ino);
		*top_groups += !seen[g];
		seen[g] = true;
	}
	*parent_group = ino_group(t->fs, top[0].ino);
	*sub_in_parent = 0;
	*sub_groups = 0;
	for (int i = 0; i < 8; i++) {
		char name[8];
		uint32_t g;

		g_snprintf(name, sizeof(name), "s%d", i);
		assert_int_equal(
		    sfs_mkdir(t->fs, top[0].ino, name, 0755, 0, 0, &sub), 0);
		g = ino_group(t->fs, sub.ino);
		*sub_in_parent += g == *parent_group;
		*sub_groups += !sseen[g];
		sseen[g] = true;
	}
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_reservation_orlov_vs_oldalloc(void **state)
{
	uint32_t top, parent, in_parent, groups;

	(void)state;
	/* Orlov: top-level directories spread, subdirectories stay home */
	place_dirs("dirs=orlov", &top, &parent, &in_parent, &groups);
	print_message("# orlov: top-level in %u groups, subdirs in %u "
		      "groups, %u in the parent's\n",
		      top, groups, in_parent);
	assert_true(top >= 6);
	assert_int_equal(in_parent, 8);
	assert_int_equal(groups, 1);
	/* oldalloc: subdirectories spread as well */
	place_dirs("oldalloc", &top, &parent, &in_parent, &groups);
	print_message("# oldalloc: top-level in %u groups, subdirs in %u "
		      "groups, %u in the parent's\n",
		      top, groups, in_parent);
	assert_true(top >= 3);
	assert_true(groups >= 4);
	assert_true(in_parent <= 2);
}

/* Read ino once; how many atime updates the read caused. */
static uint64_t read_once(struct sfs_fs *fs, sfs_ino_t ino)
{
	uint64_t before = fs->atime_updates;
	char buf[16];
	size_t got = 0;

	assert_int_equal(sfs_read(fs, ino, 0, sizeof(buf), buf, &got), 0);
	return fs->atime_updates - before;
}

/* Set atime to now + delta seconds. */
static void set_atime(struct sfs_fs *fs, sfs_ino_t ino, int64_t delta)
{
	struct sfs_attr in = {0}, out;

	assert_int_equal(sfs_getattr(fs, ino, &out), 0);
	in.atime.tv_sec = out.ctime.tv_sec + delta;
	assert_int_equal(sfs_setattr(fs, ino, &in, SFS_SET_ATIME, &out), 0);
}

static void atime_case(const char *opts, uint64_t fresh, uint64_t future,
		       uint64_t old)
{
	struct sfs_tfs *t;
	sfs_ino_t a;

	t = tfs_open(16 << 20, 4096, opts);
	a = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "a");
	assert_int_equal(put_block(t->fs, a, 0), 0);
	assert_int_equal(read_once(t->fs, a), fresh); /* atime <= mtime */
	set_atime(t->fs, a, 3600);		      /* newer than m/ctime */
	assert_int_equal(read_once(t->fs, a), future);
	set_atime(t->fs, a, -2 * 86400); /* two days old */
	assert_int_equal(read_once(t->fs, a), old);
	assert_int_equal(sfs_release(t->fs, a), 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_reservation_atime_policies(void **state)
{
	(void)state;
	atime_case("", 1, 0, 1); /* relatime by default */
	atime_case("relatime", 1, 0, 1);
	atime_case("atime", 1, 1, 1);
	atime_case("strictatime", 1, 1, 1);
	atime_case("noatime", 0, 0, 0);
	atime_case("atime_policy=noatime", 0, 0, 0);
}

static void test_reservation_nouser_xattr(void **state)
{
	struct sfs_tfs *t;
	size_t len = 99;
	sfs_ino_t a;

	(void)state;
	t = tfs_open(16 << 20, 4096, "nouser_xattr");
	a = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "a");
	assert_int_equal(sfs_setxattr(t->fs, a, "user.x", "v", 1, 0),
			 -EOPNOTSUPP);
	assert_int_equal(sfs_getxattr(t->fs, a, "user.x", NULL, 0, &len),
			 -EOPNOTSUPP);
	assert_int_equal(sfs_removexattr(t->fs, a, "user.x"), -EOPNOTSUPP);
	assert_int_equal(sfs_listxattr(t->fs, a, NULL, 0, &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(sfs_release(t->fs, a), 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);

	t = tfs_open(16 << 20, 4096, "user_xattr");
	a = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "a");
	assert_int_equal(sfs_setxattr(t->fs, a, "user.x", "v", 1, 0), 0);
	assert_int_equal(sfs_release(t->fs, a), 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_reservation_presets(void **state)
{
	struct sfs_config cfg;
	char *err = NULL, *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	sfs_config_defaults(&cfg);
	/* classic ext3 places block by block; ext3rs adds the windows */
	assert_int_equal(sfs_config_parse(&cfg, "preset=ext3", NULL, &err), 0);
	assert_string_equal(cfg.preset, "ext3");
	assert_string_equal(cfg.journal, "ordered");
	assert_string_equal(cfg.alloc, "blockmap");
	assert_int_equal(
	    sfs_config_parse(&cfg, "preset=ext3-journal", NULL, &err), 0);
	assert_string_equal(cfg.journal, "journal");
	assert_string_equal(cfg.alloc, "blockmap");
	/* ext3rs as the 2005 comparison ran it: windows, data=writeback */
	assert_int_equal(sfs_config_parse(&cfg, "preset=ext3rs", NULL, &err),
			 0);
	assert_string_equal(cfg.journal, "writeback");
	assert_string_equal(cfg.alloc, "reservation");
	assert_knob(&cfg, "reservation_window", "8");
	assert_int_equal(
	    sfs_config_parse(&cfg, "preset=ext3rs-ordered", NULL, &err), 0);
	assert_string_equal(cfg.journal, "ordered");
	assert_string_equal(cfg.alloc, "reservation");
	assert_knob(&cfg, "reservation_window", "8");
	assert_knob(&cfg, "reservation_max", "1027");

	/* later options override, wherever the preset stands */
	sfs_config_defaults(&cfg);
	assert_int_equal(sfs_config_parse(&cfg,
					  "commit=15,preset=ext3-writeback,"
					  "reservation_window=32",
					  NULL, &err),
			 0);
	assert_string_equal(cfg.journal, "writeback");
	assert_int_equal(cfg.commit_s, 15);
	assert_knob(&cfg, "reservation_window", "32");
	assert_int_equal(
	    sfs_config_parse(&cfg, "preset=ext2,data=ordered", NULL, &err), 0);
	assert_string_equal(cfg.journal, "ordered");
	assert_string_equal(cfg.alloc, "blockmap");
	assert_int_equal(sfs_config_set(&cfg, "preset", "ext3rs", &err), 0);
	assert_string_equal(cfg.alloc, "reservation");
	assert_knob(&cfg, "reservation_max", "1027");
	/* ext2 as 2.6.24+ has it: windows, no journal */
	assert_int_equal(sfs_config_parse(&cfg, "preset=ext2rs", NULL, &err),
			 0);
	assert_string_equal(cfg.alloc, "reservation");
	assert_string_equal(cfg.journal, "none");
	assert_knob(&cfg, "reservation_window", "8");
	assert_int_equal(sfs_config_set(&cfg, "preset", "ext3rs", &err), 0);

	/* unknown: refused, config unchanged */
	assert_int_equal(sfs_config_parse(&cfg, "preset=ext5", NULL, &err),
			 -EINVAL);
	assert_non_null(strstr(err, "ext5"));
	g_free(err);
	err = NULL;
	assert_string_equal(cfg.preset, "ext3rs");

	/* ext4's presets use extents and mballoc */
	sfs_config_defaults(&cfg);
	assert_non_null(sfs_alloc_find("mballoc"));
	assert_int_equal(
	    sfs_config_parse(&cfg, "preset=ext4-nojournal", NULL, &err), 0);
	assert_string_equal(cfg.alloc, "mballoc");
	assert_string_equal(cfg.journal, "none");
	assert_int_equal(sfs_config_parse(&cfg, "preset=ext4", NULL, &err), 0);
	assert_string_equal(cfg.journal, "ordered");

	/* every preset is listed with its knobs */
	f = open_memstream(&text, &len);
	sfs_config_list_presets(f);
	fclose(f);
	for (unsigned i = 0; sfs_config_preset_nth(i); i++) {
		const struct sfs_config_preset *p = sfs_config_preset_nth(i);

		assert_non_null(strstr(text, p->name));
		assert_non_null(strstr(text, p->opts));
	}
	free(text);
}

/* A preset mounts: ext2 on a plain image, with the alloc stats section. */
static void test_reservation_stats_section(void **state)
{
	struct sfs_tfs *t;
	sfs_ino_t a;
	char *json;

	(void)state;
	t = tfs_open(16 << 20, 4096, "preset=ext2,alloc=reservation");
	a = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "a");
	assert_int_equal(put_block(t->fs, a, 0), 0);
	json = sfs_stats_to_json(t->fs->stats, false);
	assert_non_null(strstr(json, "\"windows_made\""));
	assert_non_null(strstr(json, "\"atime_updates\""));
	g_free(json);
	assert_int_equal(sfs_release(t->fs, a), 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reservation_blockmap_interleaves),
	    cmocka_unit_test(test_reservation_runs_double),
	    cmocka_unit_test(test_reservation_fill_no_false_enospc),
	    cmocka_unit_test(test_reservation_truncate_and_dirs),
	    cmocka_unit_test(test_reservation_orlov_vs_oldalloc),
	    cmocka_unit_test(test_reservation_atime_policies),
	    cmocka_unit_test(test_reservation_nouser_xattr),
	    cmocka_unit_test(test_reservation_presets),
	    cmocka_unit_test(test_reservation_stats_section),
	};

	return cmocka_run_group_tests_name("reservation", tests, NULL, NULL);
}
