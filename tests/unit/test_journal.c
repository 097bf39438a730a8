/*
 * test_journal.c - the transaction engine and the journal policies
 * (simfs/journal.h, models/journal/jnl.c and one file per policy): what
 * reaches the device, in which order, and what a crash leaves for
 * recovery; each policy's crash promise and data=auto's choice; the
 * contract every policy of the registry is held to; the asynchronous
 * commit of data=journal_async; a chattr +D directory waiting for the
 * commit in flight on a mount.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs_priv.h"
#include "clock.h"
#include "journal.h"
#include "stats.h"
#include <json-glib/json-glib.h>
#include "models/journal/jbd2.h"
#include "testsupport.h"

#define IMG_BYTES (32u << 20)

struct ctx {
	char *dir;
	char *img;
	uint8_t *base;   /* a journaled image, ready to copy into a ramdev */
};

static int setup(void **state)
{
	struct ctx *c = g_new0(struct ctx, 1);
	struct sfs_bdev *bd;
	char *err = NULL;

	c->dir = sfs_test_tmpdir();
	c->img = g_build_filename(c->dir, "j.img", NULL);
	assert_int_equal(sfs_test_mkimage(c->img, IMG_BYTES, 1024), 0);
	assert_int_equal(sfs_bdev_open_file(c->img, 0, 0, &bd), 0);
	assert_int_equal(sfs_jbd2_add_internal(bd, 1024,
					       SFS_JBD2_PLACE_FIRST_FREE, &err),
			 0);
	sfs_bdev_close(bd);
	assert_true(sfs_test_fsck_clean(c->img, NULL));
	c->base = g_malloc(IMG_BYTES);
	int fd = open(c->img, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, c->base, IMG_BYTES, 0), IMG_BYTES);
	close(fd);
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;

	sfs_test_rmtree(c->dir);
	g_free(c->base);
	g_free(c->img);
	g_free(c->dir);
	g_free(c);
	return 0;
}

/* A RAM device over a copy of the journaled image (bytes outlive the
 * device), opened with data=mode and optional extra options. */
static struct sfs_fs *open_ram(struct ctx *c, const char *mode,
			       const char *opts, uint8_t *bytes,
			       struct sfs_bdev **ram_out, bool copy)
{
	struct sfs_bdev *ram;
	struct sfs_config cfg;
	struct sfs_fs *fs;
	char *err = NULL;

	if (copy)
		memcpy(bytes, c->base, IMG_BYTES);
	ram = sfs_ramdev_wrap(bytes, IMG_BYTES);
	sfs_config_defaults(&cfg);
	if (opts && sfs_config_parse(&cfg, opts, NULL, &err))
		fail_msg("options %s: %s", opts, err);
	g_strlcpy(cfg.journal, mode, sizeof(cfg.journal));
	int rc = sfs_fs_open(ram, &cfg, &fs, &err);
	if (rc)
		fail_msg("open data=%s: %s", mode, err ? err : "?");
	sfs_ramdev_clear_log(ram);
	if (ram_out)
		*ram_out = ram;
	return fs;
}

/* Write bytes to the image file and run the e2fsck oracle on it. */
static void check_clean(struct ctx *c, const uint8_t *bytes, const char *what)
{
	int fd = open(c->img, O_WRONLY);
	char *out = NULL;

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, bytes, IMG_BYTES, 0), IMG_BYTES);
	close(fd);
	if (!sfs_test_fsck_clean(c->img, &out))
		fail_msg("%s: e2fsck -fn:\n%s", what, out);
	g_free(out);
}

static const struct sfs_dsuper *super_of(const uint8_t *bytes)
{
	return (const struct sfs_dsuper *)(bytes + SFS_SUPER_OFFSET);
}

static void wr(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off, size_t len,
	       int byte)
{
	uint8_t *buf = g_malloc(len);
	size_t n;

	memset(buf, byte, len);
	assert_int_equal(sfs_write(fs, ino, off, buf, len, &n), 0);
	assert_int_equal(n, len);
	g_free(buf);
}

static void check_bytes(struct sfs_fs *fs, sfs_ino_t ino, size_t len,
			int byte)
{
	uint8_t *buf = g_malloc(len + 1);
	size_t n;

	assert_int_equal(sfs_read(fs, ino, 0, len + 1, buf, &n), 0);
	assert_int_equal(n, len);
	for (size_t i = 0; i < len; i++)
		if (buf[i] != byte)
			fail_msg("byte %zu is %d, expected %d", i, buf[i], byte);
	g_free(buf);
}

/* A JSON-free look at the journal's counters through the stats text. */
static uint64_t stat_u64(struct sfs_fs *fs, const char *section,
			 const char *path)
{
	char *json = sfs_stats_to_json(sfs_fs_stats(fs), false);
	JsonParser *p = json_parser_new();
	uint64_t v = 0;

	assert_true(json_parser_load_from_data(p, json, -1, NULL));
	JsonObject *o = json_node_get_object(json_parser_get_root(p));
	o = json_object_get_object_member(o, section);
	gchar **parts = g_strsplit(path, ".", -1);
	for (int i = 0; parts[i]; i++) {
		if (parts[i + 1])
			o = json_object_get_object_member(o, parts[i]);
		else
			v = (uint64_t)json_object_get_int_member(o, parts[i]);
	}
	g_strfreev(parts);
	g_object_unref(p);
	g_free(json);
	return v;
}

/* Index of the last journal write in a request log (a commit), or -1. */
static long last_journal_write(const struct sfs_io_req *log, size_t n)
{
	long last = -1;

	for (size_t i = 0; i < n; i++)
		if (log[i].op == SFS_IO_WRITE && log[i].cat == SFS_IO_JOURNAL)
			last = (long)i;
	return last;
}

/* Each policy: work, unmount; the image is clean, RECOVER off. */
static void test_journal_modes_clean_unmount(void **state)
{
	struct ctx *c = *state;
	const char *modes[] = {"none", "writeback", "ordered", "journal"};
	uint8_t *bytes = g_malloc(IMG_BYTES);

	for (size_t m = 0; m < 4; m++) {
		struct sfs_fs *fs = open_ram(c, modes[m], NULL, bytes, NULL,
					     true);
		struct sfs_attr a;

		assert_string_equal(sfs_jnl_name(fs->jnl), modes[m]);
		/* a journaled mount keeps VALID and sets RECOVER */
		if (m > 0) {
			assert_true(sfs_le32(super_of(bytes)->s_feature_incompat) &
				    SFS_FEATURE_INCOMPAT_RECOVER);
			assert_true(sfs_le16(super_of(bytes)->s_state) &
				    SFS_STATE_VALID);
		}
		assert_int_equal(sfs_mkdir(fs, SFS_ROOT_INO, "d", 0755, 0, 0,
					   &a),
				 0);
		for (int i = 0; i < 60; i++) {
			char name[16];
			snprintf(name, sizeof(name), "f%d", i);
			sfs_ino_t ino = sfs_test_mknod(fs, a.ino, name);
			wr(fs, ino, 0, 3000 + i * 100, 'a' + i % 26);
			if (i % 3 == 0)
				assert_int_equal(sfs_unlink(fs, a.ino, name),
						 0);
		}
		assert_int_equal(sfs_fs_close(fs), 0);
		check_clean(c, bytes, modes[m]);
		assert_false(sfs_le32(super_of(bytes)->s_feature_incompat) &
			     SFS_FEATURE_INCOMPAT_RECOVER);
	}
	g_free(bytes);
}

/* ordered: a transaction's data precedes its commit block; writeback:
 * a commit does not wait for data (it stays in the cache). */
static void test_journal_ordered_data_before_commit(void **state)
{
	struct ctx *c = *state;
	uint8_t *bytes = g_malloc(IMG_BYTES);
	const char *modes[] = {"ordered", "writeback"};

	for (int m = 0; m < 2; m++) {
		struct sfs_bdev *ram;
		struct sfs_fs *fs = open_ram(c, modes[m], NULL, bytes, &ram,
					     true);
		sfs_ino_t ino = sfs_test_mknod(fs, SFS_ROOT_INO, "f");
		struct sfs_attr a;
		size_t n;

		wr(fs, ino, 0, 64 * 1024, 'x');
		/* the commit interval passes: the next operation commits */
		assert_int_equal(sfs_clock_advance(sfs_fs_clock(fs),
						   6 * SFS_NS_PER_S),
				 0);
		assert_int_equal(sfs_getattr(fs, ino, &a), 0);
		assert_int_equal(stat_u64(fs, "journal", "commits.interval"),
				 1);
		const struct sfs_io_req *log = sfs_ramdev_log(ram, &n);
		long commit = last_journal_write(log, n);
		assert_true(commit > 0);
		size_t data_before = 0, data_after = 0;
		for (size_t i = 0; i < n; i++) {
			if (log[i].op != SFS_IO_WRITE ||
			    log[i].cat != SFS_IO_DATA)
				continue;
			if ((long)i < commit)
				data_before += log[i].len_bytes;
			else
				data_after += log[i].len_bytes;
		}
		if (m == 0) {
			assert_int_equal(data_before, 64 * 1024);
			assert_true(stat_u64(fs, "journal",
					     "ordered_data_blocks") >= 64);
		} else {
			assert_int_equal(data_before, 0);
		}
		assert_int_equal(data_after, 0);
		/* fsync: in both modes the file's data is on disk after it */
		wr(fs, ino, 64 * 1024, 4096, 'y');
		sfs_ramdev_clear_log(ram);
		assert_int_equal(sfs_fsync(fs, ino, false), 0);
		log = sfs_ramdev_log(ram, &n);
		commit = last_journal_write(log, n);
		data_before = 0;
		for (long i = 0; i < commit; i++)
			if (log[i].op == SFS_IO_WRITE &&
			    log[i].cat == SFS_IO_DATA)
				data_before += log[i].len_bytes;
		assert_true(data_before >= 4096);
		assert_int_equal(stat_u64(fs, "journal", "commits.fsync"), 1);
		assert_int_equal(sfs_fs_close(fs), 0);
		check_clean(c, bytes, modes[m]);
	}
	g_free(bytes);
}

/* A crash after a commit: recovery brings back exactly the committed
 * state; the uncommitted operations are gone; the image is clean. */
static void test_journal_crash_recovery(void **state)
{
	struct ctx *c = *state;
	uint8_t *bytes = g_malloc(IMG_BYTES);
	const char *modes[] = {"writeback", "ordered", "journal"};

	for (int m = 0; m < 3; m++) {
		struct sfs_fs *fs = open_ram(c, modes[m], NULL, bytes, NULL,
					     true);
		struct sfs_attr a;
		sfs_ino_t keep = sfs_test_mknod(fs, SFS_ROOT_INO, "keep");
		wr(fs, keep, 0, 10000, 'k');
		assert_int_equal(sfs_mkdir(fs, SFS_ROOT_INO, "dir", 0755, 0, 0,
					   &a),
				 0);
		assert_int_equal(sfs_fsync(fs, keep, false), 0);
		/* not committed: */
		sfs_ino_t lost = sfs_test_mknod(fs, SFS_ROOT_INO, "lost");
		wr(fs, lost, 0, 5000, 'l');
		assert_int_equal(sfs_unlink(fs, SFS_ROOT_INO, "keep") , 0);
		sfs_fs_abort(fs); /* power cut: nothing more is written */

		/* the image needs recovery */
		assert_true(sfs_le32(super_of(bytes)->s_feature_incompat) &
			    SFS_FEATURE_INCOMPAT_RECOVER);
		fs = open_ram(c, modes[m], NULL, bytes, NULL, false);
		assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, "keep", &a), 0);
		check_bytes(fs, a.ino, 10000, 'k');
		assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, "dir", &a), 0);
		assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, "lost", &a),
				 -ENOENT);
		assert_int_equal(sfs_fs_close(fs), 0);
		check_clean(c, bytes, modes[m]);
	}
	g_free(bytes);
}

/* data=journal writes file data twice: in the log, then home. */
static void test_journal_data_written_twice(void **state)
{
	struct ctx *c = *state;
	uint8_t *bytes = g_malloc(IMG_BYTES);
	uint64_t dev[2];
	const char *modes[] = {"ordered", "journal"};

	for (int m = 0; m < 2; m++) {
		struct sfs_bdev *ram;
		struct sfs_fs *fs = open_ram(c, modes[m], NULL, bytes, &ram,
					     true);
		sfs_ino_t ino = sfs_test_mknod(fs, SFS_ROOT_INO, "big");
		for (int i = 0; i < 16; i++)
			wr(fs, ino, (uint64_t)i * 65536, 65536, 'a' + i);
		assert_int_equal(sfs_fsync(fs, ino, false), 0);
		assert_int_equal(sfs_fs_sync(fs), 0);
		struct sfs_bdev_counters cnt;
		sfs_bdev_counters(sfs_fs_bdev(fs), &cnt);
		dev[m] = cnt.bytes[SFS_IO_WRITE];
		if (m == 1)
			assert_true(stat_u64(fs, "journal", "log_blocks.data") >=
				    1024);
		assert_int_equal(sfs_fs_close(fs), 0);
		check_clean(c, bytes, modes[m]);
	}
	/* 1 MiB of data: journal mode writes it to the log as well */
	assert_true(dev[1] >= dev[0] + (1u << 20));
	g_free(bytes);
}

/*
 * chattr +j under data=ordered without delalloc (ext4_inode_journal_mode):
 * the file's data goes through the log, none of it ordered; chattr -j
 * first commits and checkpoints the journal (ext4_change_inode_journal_flag)
 * and the data is ordered again.  The image stays clean, the data whole.
 */
static void test_journal_chattr_j(void **state)
{
	struct ctx *c = *state;
	uint8_t *bytes = g_malloc(IMG_BYTES);
	struct sfs_fs *fs = open_ram(c, "ordered", NULL, bytes, NULL, true);
	sfs_ino_t ino = sfs_test_mknod(fs, SFS_ROOT_INO, "j");
	uint64_t ordered, logged, passes;
	uint32_t fl;

	wr(fs, ino, 0, 65536, 'a');
	assert_int_equal(sfs_fsync(fs, ino, false), 0);
	assert_int_equal(stat_u64(fs, "journal", "log_blocks.data"), 0);
	ordered = stat_u64(fs, "journal", "ordered_data_blocks");
	assert_true(ordered >= 64);

	assert_int_equal(sfs_get_flags(fs, ino, &fl), 0);
	assert_int_equal(
	    sfs_set_flags(fs, ino, fl | SFS_JOURNAL_DATA_FL, false), 0);
	wr(fs, ino, 0, 65536, 'b');
	assert_int_equal(sfs_fsync(fs, ino, false), 0);
	logged = stat_u64(fs, "journal", "log_blocks.data");
	assert_int_equal(logged, 64);
	assert_int_equal(stat_u64(fs, "journal", "ordered_data_blocks"),
			 ordered);

	passes = stat_u64(fs, "journal", "checkpoint_passes");
	assert_int_equal(sfs_set_flags(fs, ino, fl, false), 0);
	assert_true(stat_u64(fs, "journal", "checkpoint_passes") > passes);
	wr(fs, ino, 0, 65536, 'c');
	assert_int_equal(sfs_fsync(fs, ino, false), 0);
	assert_int_equal(stat_u64(fs, "journal", "log_blocks.data"), logged);
	assert_true(stat_u64(fs, "journal", "ordered_data_blocks") >=
		    ordered + 64);
	check_bytes(fs, ino, 65536, 'c');
	assert_int_equal(sfs_fs_close(fs), 0);
	check_clean(c, bytes, "chattr +j");
	g_free(bytes);
}

/* Commit reasons: the interval on the clock, a full transaction. */
static void test_journal_commit_reasons(void **state)
{
	struct ctx *c = *state;
	uint8_t *bytes = g_malloc(IMG_BYTES);
	struct sfs_fs *fs = open_ram(c, "ordered", NULL, bytes, NULL, true);
	char name[32];

	sfs_test_mknod(fs, SFS_ROOT_INO, "a");
	assert_int_equal(sfs_clock_advance(sfs_fs_clock(fs), 6 * SFS_NS_PER_S),
			 0);
	sfs_test_mknod(fs, SFS_ROOT_INO, "b"); /* the next operation commits */
	assert_int_equal(stat_u64(fs, "journal", "commits.interval"), 1);
	/* a 1024-block log allows 256-block transactions: fill one */
	struct sfs_attr d;
	assert_int_equal(sfs_mkdir(fs, SFS_ROOT_INO, "many", 0755, 0, 0, &d),
			 0);
	for (int i = 0; i < 1500; i++) {
		snprintf(name, sizeof(name), "some-longer-file-name-%05d", i);
		sfs_ino_t ino = sfs_test_mknod(fs, d.ino, name);
		wr(fs, ino, 0, 100, 'z');
	}
	assert_true(stat_u64(fs, "journal", "commits.full") >= 1);
	/* keep committing on the interval, with write-back held off: the log
	 * fills up and forced checkpoints make room */
	struct sfs_cache_policy pol;
	sfs_cache_get_policy(fs->cache, &pol);
	pol.dirty_expire_cs = 360000;
	pol.dirty_writeback_cs = 0;
	assert_int_equal(sfs_cache_set_policy(fs->cache, &pol), 0);
	for (int r = 0; r < 8; r++) {
		assert_int_equal(sfs_mkdir(fs, SFS_ROOT_INO, "tmp", 0755, 0, 0,
					   &d),
				 0);
		for (int i = 0; i < 300; i++) {
			snprintf(name, sizeof(name), "t%d", i);
			sfs_test_mknod(fs, d.ino, name);
		}
		assert_int_equal(sfs_clock_advance(sfs_fs_clock(fs),
						   6 * SFS_NS_PER_S),
				 0);
		for (int i = 0; i < 300; i++) {
			snprintf(name, sizeof(name), "t%d", i);
			assert_int_equal(sfs_unlink(fs, d.ino, name), 0);
		}
		assert_int_equal(sfs_rmdir(fs, SFS_ROOT_INO, "tmp"), 0);
		assert_int_equal(sfs_clock_advance(sfs_fs_clock(fs),
						   6 * SFS_NS_PER_S),
				 0);
	}
	assert_true(stat_u64(fs, "journal", "commits.interval") >= 16);
	if (stat_u64(fs, "journal", "checkpoint_passes") < 1) {
		char *js = sfs_stats_to_json(sfs_fs_stats(fs), true);
		fail_msg("no checkpoint:\n%s", js);
	}
	assert_int_equal(sfs_fs_close(fs), 0);
	check_clean(c, bytes, "ordered, full transactions");
	g_free(bytes);
}

/* A metadata block freed and reused for data is revoked: replay after a
 * crash must not overwrite the new data with the old metadata. */
static void test_journal_revoke_protects_reuse(void **state)
{
	struct ctx *c = *state;
	uint8_t *bytes = g_malloc(IMG_BYTES);
	struct sfs_fs *fs = open_ram(c, "ordered", NULL, bytes, NULL, true);
	struct sfs_attr d;
	char name[300];

	/* a directory of many blocks, committed */
	assert_int_equal(sfs_mkdir(fs, SFS_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	for (int i = 0; i < 40; i++) {
		memset(name, 'n', 200);
		snprintf(name + 200, 16, "%d", i);
		sfs_test_mknod(fs, d.ino, name);
	}
	assert_int_equal(sfs_fs_sync(fs), 0);
	/* remove it all: its blocks are freed and revoked */
	for (int i = 0; i < 40; i++) {
		memset(name, 'n', 200);
		snprintf(name + 200, 16, "%d", i);
		assert_int_equal(sfs_unlink(fs, d.ino, name), 0);
	}
	assert_int_equal(sfs_rmdir(fs, SFS_ROOT_INO, "d"), 0);
	assert_int_equal(sfs_fs_sync(fs), 0);
	assert_true(stat_u64(fs, "journal", "revoke_records") > 0);
	/* new data lands in the freed blocks */
	sfs_ino_t f = sfs_test_mknod(fs, SFS_ROOT_INO, "data");
	wr(fs, f, 0, 200 * 1024, 'D');
	assert_int_equal(sfs_fsync(fs, f, false), 0);
	sfs_fs_abort(fs);
	fs = open_ram(c, "ordered", NULL, bytes, NULL, false);
	assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, "data", &d), 0);
	check_bytes(fs, d.ino, 200 * 1024, 'D');
	assert_int_equal(sfs_fs_close(fs), 0);
	check_clean(c, bytes, "revoke");
	g_free(bytes);
}

/* An external journal: made by sfs_jbd2_make_external, used through
 * journal_dev=, replayed after a crash, and accepted by e2fsck -j. */
static void test_journal_external_device(void **state)
{
	struct ctx *c = *state;
	char *img = g_build_filename(c->dir, "x.img", NULL);
	char *jnl = g_build_filename(c->dir, "x.jnl", NULL);
	struct sfs_bdev *bd, *jd;
	struct sfs_config cfg;
	struct sfs_fs *fs;
	struct sfs_attr a;
	char *err = NULL;

	assert_int_equal(sfs_test_mkimage(img, 32 << 20, 4096), 0);
	assert_int_equal(sfs_bdev_open_file(img, 0, 0, &bd), 0);
	assert_int_equal(sfs_bdev_open_file(jnl, SFS_BDEV_CREATE, 8 << 20, &jd),
			 0);
	assert_int_equal(sfs_jbd2_make_external(jd, bd, 0, NULL, &err), 0);
	sfs_bdev_close(jd);
	sfs_bdev_close(bd);

	sfs_config_defaults(&cfg);
	g_strlcpy(cfg.journal, "ordered", sizeof(cfg.journal));
	g_strlcpy(cfg.journal_dev, jnl, sizeof(cfg.journal_dev));
	assert_int_equal(sfs_bdev_open_file(img, 0, 0, &bd), 0);
	assert_int_equal(sfs_fs_open(bd, &cfg, &fs, &err), 0);
	sfs_ino_t ino = sfs_test_mknod(fs, SFS_ROOT_INO, "kept");
	wr(fs, ino, 0, 9000, 'e');
	assert_int_equal(sfs_fsync(fs, ino, false), 0);
	sfs_fs_abort(fs); /* crash with the transaction in the log */

	assert_int_equal(sfs_bdev_open_file(img, 0, 0, &bd), 0);
	assert_int_equal(sfs_fs_open(bd, &cfg, &fs, &err), 0);
	assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, "kept", &a), 0);
	check_bytes(fs, a.ino, 9000, 'e');
	assert_int_equal(sfs_fs_close(fs), 0);

	/* without the device the journaled mount is refused */
	sfs_config_defaults(&cfg);
	g_strlcpy(cfg.journal, "ordered", sizeof(cfg.journal));
	assert_int_equal(sfs_bdev_open_file(img, 0, 0, &bd), 0);
	assert_int_not_equal(sfs_fs_open(bd, &cfg, &fs, &err), 0);
	g_free(err);

	gchar *argv[] = {"e2fsck", "-fn", "-j", jnl, img, NULL};
	gchar *out = NULL;
	gint status = -1;
	assert_true(g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH |
				 G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out,
				 NULL, &status, NULL));
	if (!g_spawn_check_wait_status(status, NULL))
		fail_msg("e2fsck -fn -j: %s", out);
	assert_null(strstr(out, "Fix?"));
	g_free(out);
	g_free(img);
	g_free(jnl);
}

/* What-if knobs change while mounted: all or nothing. */
static void test_journal_runtime_knobs(void **state)
{
	struct ctx *c = *state;
	uint8_t *bytes = g_malloc(IMG_BYTES);
	struct sfs_fs *fs = open_ram(c, "ordered", NULL, bytes, NULL, true);
	struct sfs_config cfg;
	char *err = NULL;

	assert_int_equal(sfs_fs_set_knobs(fs, "commit=1,dirty_ratio=30,"
					  "vm=2.6,atime_policy=noatime",
					  &err),
			 0);
	sfs_fs_get_config(fs, &cfg);
	assert_int_equal(cfg.commit_s, 1);
	assert_int_equal(cfg.dirty_ratio, 30);
	assert_string_equal(cfg.vm, "2.6");
	struct sfs_cache_policy pol;
	sfs_cache_get_policy(fs->cache, &pol);
	assert_int_equal(pol.dirty_ratio, 30);
	assert_int_equal(pol.dirty_background_ratio, 10); /* vm=2.6 */
	/* the new interval is in force: 1.5 s later the next op commits */
	sfs_test_mknod(fs, SFS_ROOT_INO, "a");
	assert_int_equal(sfs_clock_advance(sfs_fs_clock(fs),
					   1500 * SFS_NS_PER_MS),
			 0);
	sfs_test_mknod(fs, SFS_ROOT_INO, "b");
	assert_int_equal(stat_u64(fs, "journal", "commits.interval"), 1);
	/* a value out of range or a mount-time knob: refused (ERANGE,
	 * EPERM), nothing changes */
	assert_int_equal(sfs_fs_set_knobs(fs, "commit=7,dirty_ratio=101", &err),
			 -ERANGE);
	assert_non_null(err);
	g_free(err);
	err = NULL;
	assert_int_equal(sfs_fs_set_knobs(fs, "commit=7,mem=1G", &err),
			 -EPERM);
	g_free(err);
	err = NULL;
	sfs_fs_get_config(fs, &cfg);
	assert_int_equal(cfg.commit_s, 1);
	assert_int_equal(cfg.dirty_ratio, 30);
	assert_int_equal(sfs_fs_close(fs), 0);
	check_clean(c, bytes, "runtime knobs");
	g_free(bytes);
}

/* Policies are found by name; data=ordered on an ext2 image is refused. */
static void test_journal_refuses_without_log(void **state)
{
	struct ctx *c = *state;
	struct sfs_config cfg;
	struct sfs_bdev *bd;
	struct sfs_fs *fs;
	char *err = NULL;
	char *img2 = g_build_filename(c->dir, "plain.img", NULL);

	assert_non_null(sfs_jnl_find("ordered"));
	assert_null(sfs_jnl_find("bogus"));
	assert_int_equal(sfs_test_mkimage(img2, 16 << 20, 4096), 0);
	assert_int_equal(sfs_bdev_open_file(img2, 0, 0, &bd), 0);
	sfs_config_defaults(&cfg);
	g_strlcpy(cfg.journal, "ordered", sizeof(cfg.journal));
	assert_int_equal(sfs_fs_open(bd, &cfg, &fs, &err), -EINVAL);
	assert_non_null(strstr(err, "journal"));
	g_free(err);
	assert_true(sfs_test_fsck_clean(img2, NULL));
	g_free(img2);
}

/*
 * Every policy in the registry has a crash promise that the checker can
 * hold it to: journaled as the policy is (a data promise without it would
 * go unchecked: the checker reads the model only for journaled metadata),
 * exact data also not behind and not foreign.  data=auto picks a policy
 * of the registry, journaled exactly when the image has a journal.
 */
static void test_journal_promises(void **state)
{
	const struct sfs_jnl_ops *o;
	unsigned n = 0;

	for (unsigned i = 0; (o = sfs_jnl_nth(i)); i++, n++) {
		const struct sfs_jnl_promise *pr = sfs_jnl_promise(o);

		assert_non_null(pr);
		assert_int_equal(pr->journaled, sfs_jnl_keeps_log(o));
		if (pr->fsync_durable || pr->no_foreign ||
		    pr->data_not_behind || pr->data_exact)
			assert_true(pr->journaled);
		if (pr->data_exact)
			assert_true(pr->data_not_behind && pr->no_foreign);
	}
	assert_true(n >= 4);
	assert_null(sfs_jnl_promise(NULL));
	for (int has = 0; has <= 1; has++) {
		o = sfs_jnl_auto(has);
		assert_non_null(o);
		assert_ptr_equal(sfs_jnl_find(o->name), o);
		assert_int_equal(sfs_jnl_keeps_log(o), has);
	}
}

/*
 * The contract of a journal policy, for every policy of the registry: the
 * data path its table names is the one the engine takes (no delayed
 * allocation for journalled data, even with delalloc asked for); work with
 * deletes, then unmount, leaves the image e2fsck-clean without RECOVER;
 * a power cut after an fsync keeps the fsync'd file whole when the policy
 * promises fsync_durable, and the recovered image is e2fsck-clean when it
 * promises journaled metadata.
 */
static void test_journal_contract(void **state)
{
	struct ctx *c = *state;
	uint8_t *bytes = g_malloc(IMG_BYTES);
	const struct sfs_jnl_ops *o;
	unsigned n = 0;

	for (unsigned i = 0; (o = sfs_jnl_nth(i)); i++, n++) {
		const struct sfs_jnl_promise *pr = sfs_jnl_promise(o);
		struct sfs_fs *fs;
		struct sfs_attr a;
		sfs_ino_t ino;

		print_message("# data=%s\n", o->name);
		fs = open_ram(c, o->name, "alloc=mballoc,delalloc", bytes, NULL,
			      true);
		assert_string_equal(sfs_jnl_name(fs->jnl), o->name);
		assert_int_equal(sfs_jnl_journaled(fs->jnl),
				 sfs_jnl_keeps_log(o));
		assert_int_equal(fs->da_on,
				 o->data_path == SFS_JNL_DATA_CACHED);
		assert_int_equal(
		    sfs_mkdir(fs, SFS_ROOT_INO, "d", 0755, 0, 0, &a), 0);
		for (int k = 0; k < 40; k++) {
			char name[16];
			snprintf(name, sizeof(name), "f%d", k);
			ino = sfs_test_mknod(fs, a.ino, name);
			wr(fs, ino, 0, 2000 + k * 300, 'a' + k % 26);
			if (k % 4 == 0)
				assert_int_equal(sfs_unlink(fs, a.ino, name),
						 0);
		}
		assert_int_equal(sfs_fs_close(fs), 0);
		check_clean(c, bytes, o->name);
		assert_false(sfs_le32(super_of(bytes)->s_feature_incompat) &
			     SFS_FEATURE_INCOMPAT_RECOVER);

		/* a power cut after an fsync */
		fs = open_ram(c, o->name, NULL, bytes, NULL, true);
		ino = sfs_test_mknod(fs, SFS_ROOT_INO, "synced");
		wr(fs, ino, 0, 20000, 's');
		assert_int_equal(sfs_fsync(fs, ino, false), 0);
		wr(fs, sfs_test_mknod(fs, SFS_ROOT_INO, "later"), 0, 3000, 'l');
		sfs_fs_abort(fs);
		if (!pr->journaled)
			continue; /* e2fsck's repair is all there is */
		fs = open_ram(c, o->name, NULL, bytes, NULL, false);
		if (pr->fsync_durable) {
			assert_int_equal(
			    sfs_lookup(fs, SFS_ROOT_INO, "synced", &a), 0);
			check_bytes(fs, a.ino, 20000, 's');
		}
		assert_int_equal(sfs_fs_close(fs), 0);
		check_clean(c, bytes, o->name);
	}
	assert_true(n >= 5);
	g_free(bytes);
}

/* The journal superblock of the image in bytes. */
static void jsb_of(uint8_t *bytes, struct sfs_jlog_super *js)
{
	struct sfs_bdev *ram = sfs_ramdev_wrap(bytes, IMG_BYTES);
	struct sfs_jlog *log = NULL;

	assert_int_equal(sfs_jlog_open_dev(ram, NULL, &log, NULL), 0);
	sfs_jlog_get_super(log, js);
	sfs_jlog_close(log);
	sfs_bdev_close(ram);
}

/*
 * data=journal_async against data=journal: the same log blocks, but the
 * commit block goes out with them, no flush before it, one after it (an
 * fsync: journal flush, commit, flush, fsync's flush; journal_async
 * commit, flush, fsync's flush).  The log says so in its superblock
 * (checksum v1 and async commit, which e2fsck reads), and a later mount
 * with another policy takes both features off again.
 */
static void test_journal_async_commit(void **state)
{
	struct ctx *c = *state;
	uint8_t *bytes = g_malloc(IMG_BYTES);
	const char *modes[] = {"journal", "journal_async"};
	size_t flushes[2], before[2];
	uint64_t log_bytes[2];
	struct sfs_jlog_super js;

	for (int m = 0; m < 2; m++) {
		struct sfs_bdev *ram;
		struct sfs_fs *fs =
		    open_ram(c, modes[m], NULL, bytes, &ram, true);
		sfs_ino_t ino = sfs_test_mknod(fs, SFS_ROOT_INO, "f");
		const struct sfs_io_req *log;
		long commit, first = -1;
		size_t n;

		wr(fs, ino, 0, 40000, 'x');
		sfs_ramdev_clear_log(ram);
		assert_int_equal(sfs_fsync(fs, ino, false), 0);
		log = sfs_ramdev_log(ram, &n);
		commit = last_journal_write(log, n);
		assert_true(commit > 0);
		flushes[m] = before[m] = 0;
		for (size_t i = 0; i < n; i++) {
			if (first < 0 && log[i].op == SFS_IO_WRITE &&
			    log[i].cat == SFS_IO_JOURNAL)
				first = (long)i;
			if (log[i].op != SFS_IO_FLUSH)
				continue;
			flushes[m]++;
			before[m] += first >= 0 && (long)i < commit;
		}
		/* one flush after the commit block, then fsync's own */
		assert_int_equal(log[commit + 1].op, SFS_IO_FLUSH);
		log_bytes[m] = stat_u64(fs, "journal", "log_bytes");
		assert_int_equal(stat_u64(fs, "journal", "commits.fsync"), 1);
		jsb_of(bytes, &js);
		if (m == 1) {
			assert_true(js.feature_compat &
				    SFS_JBD2_COMPAT_CHECKSUM);
			assert_true(js.feature_incompat &
				    SFS_JBD2_INCOMPAT_ASYNC_COMMIT);
		} else {
			assert_false(js.feature_compat &
				     SFS_JBD2_COMPAT_CHECKSUM);
			assert_false(js.feature_incompat &
				     SFS_JBD2_INCOMPAT_ASYNC_COMMIT);
		}
		assert_int_equal(sfs_fs_close(fs), 0);
		check_clean(c, bytes, modes[m]);
	}
	assert_int_equal(before[0], 1); /* journal: the flush before commit */
	assert_int_equal(before[1], 0);
	assert_int_equal(flushes[0], flushes[1] + 1);
	assert_int_equal(log_bytes[0], log_bytes[1]);

	/* data=ordered on the log journal_async left: features off */
	jsb_of(bytes, &js);
	assert_true(js.feature_incompat & SFS_JBD2_INCOMPAT_ASYNC_COMMIT);
	struct sfs_fs *fs = open_ram(c, "ordered", NULL, bytes, NULL, false);
	wr(fs, sfs_test_mknod(fs, SFS_ROOT_INO, "g"), 0, 5000, 'g');
	assert_int_equal(sfs_fs_close(fs), 0);
	jsb_of(bytes, &js);
	assert_false(js.feature_compat & SFS_JBD2_COMPAT_CHECKSUM);
	assert_false(js.feature_incompat & SFS_JBD2_INCOMPAT_ASYNC_COMMIT);
	check_clean(c, bytes, "ordered after journal_async");
	g_free(bytes);
}

/* data=journal_async refuses a log with checksum v3 (metadata_csum), where
 * a torn asynchronous commit would fail recovery; data=journal opens it. */
static void test_journal_async_refuses_csum_v3(void **state)
{
	struct ctx *c = *state;
	char *img = g_build_filename(c->dir, "csum.img", NULL);
	char *argv[] = {
	    "mke2fs",	     "-q", "-F",     "-t", "ext4", "-b", "1024", "-O",
	    "metadata_csum", "-J", "size=1", img,  "16M",  NULL};
	struct sfs_config cfg;
	struct sfs_bdev *bd;
	struct sfs_fs *fs;
	char *err = NULL;

	g_free(sfs_test_run(argv));
	assert_true(sfs_test_fsck_clean(img, NULL));
	assert_int_equal(sfs_bdev_open_file(img, 0, 0, &bd), 0);
	sfs_config_defaults(&cfg);
	g_strlcpy(cfg.journal, "journal_async", sizeof(cfg.journal));
	assert_int_equal(sfs_fs_open(bd, &cfg, &fs, &err), -EINVAL);
	assert_non_null(err);
	assert_non_null(strstr(err, "checksum v1"));
	g_free(err);
	err = NULL;
	/* a failed open closed the device */
	assert_int_equal(sfs_bdev_open_file(img, 0, 0, &bd), 0);
	g_strlcpy(cfg.journal, "journal", sizeof(cfg.journal));
	if (sfs_fs_open(bd, &cfg, &fs, &err))
		fail_msg("data=journal on the metadata_csum image: %s", err);
	assert_int_equal(sfs_fs_close(fs), 0);
	assert_true(sfs_test_fsck_clean(img, NULL));
	g_free(img);
}

/* The i_dtime of inode ino as the engine holds it (the orphan link). */
static sfs_ino_t orphan_next(struct sfs_fs *fs, sfs_ino_t ino)
{
	struct sfs_inode *ip;
	sfs_ino_t next;

	assert_int_equal(sfs_iget(fs, ino, &ip), 0);
	next = sfs_le32(ip->d.i_dtime);
	sfs_iput(fs, ip);
	return next;
}

/*
 * Files that lose their last name while open go on the orphan list
 * (s_last_orphan, then each i_dtime), newest first, in the transaction
 * that unlinked them, and come off it when freed.  After a power cut with
 * two of them still open, the next mount frees them, and e2fsck finds
 * the image clean; the blocks and inodes are back.  Without a journal
 * there is no list (e2fsck's job, as with ext2).
 */
static void test_journal_orphan_list(void **state)
{
	struct ctx *c = *state;
	uint8_t *bytes = g_malloc(IMG_BYTES);
	struct sfs_statfs st0, st1;
	struct sfs_attr a;
	struct sfs_fs *fs = open_ram(c, "ordered", NULL, bytes, NULL, true);
	sfs_ino_t f, g, h;

	assert_int_equal(sfs_statfs(fs, &st0), 0);
	f = sfs_test_mknod(fs, SFS_ROOT_INO, "f");
	g = sfs_test_mknod(fs, SFS_ROOT_INO, "g");
	h = sfs_test_mknod(fs, SFS_ROOT_INO, "h");
	wr(fs, f, 0, 20000, 'f');
	wr(fs, g, 0, 5000, 'g');
	wr(fs, h, 0, 3000, 'h');
	for (sfs_ino_t i = f; i <= h; i++)
		assert_int_equal(sfs_open(fs, i, O_RDWR), 0);
	assert_int_equal(sfs_unlink(fs, SFS_ROOT_INO, "f"), 0);
	assert_int_equal(sfs_le32(fs->sb.s_last_orphan), f);
	assert_int_equal(orphan_next(fs, f), 0);
	assert_int_equal(sfs_unlink(fs, SFS_ROOT_INO, "g"), 0);
	assert_int_equal(sfs_unlink(fs, SFS_ROOT_INO, "h"), 0);
	assert_int_equal(sfs_le32(fs->sb.s_last_orphan), h);
	assert_int_equal(orphan_next(fs, h), g);
	assert_int_equal(orphan_next(fs, g), f);
	/* from the middle: h now names f */
	assert_int_equal(sfs_release(fs, g), 0);
	assert_int_equal(orphan_next(fs, h), f);
	check_bytes(fs, f, 20000, 'f');
	assert_int_equal(sfs_fs_sync(fs), 0);
	sfs_fs_abort(fs); /* power cut with f and h open */

	assert_int_equal(sfs_le32(super_of(bytes)->s_last_orphan), h);
	fs = open_ram(c, "ordered", NULL, bytes, NULL, false);
	assert_int_equal(sfs_le32(fs->sb.s_last_orphan), 0);
	assert_int_equal(sfs_getattr(fs, f, &a), -ESTALE);
	assert_int_equal(sfs_getattr(fs, h, &a), -ESTALE);
	/* freed blocks are free once the freeing transaction commits */
	assert_int_equal(sfs_fs_sync(fs), 0);
	assert_int_equal(sfs_statfs(fs, &st1), 0);
	assert_int_equal(st1.inodes_free, st0.inodes_free);
	assert_int_equal(st1.blocks_free, st0.blocks_free);
	assert_int_equal(sfs_fs_close(fs), 0);
	check_clean(c, bytes, "after the orphans were freed");

	fs = open_ram(c, "none", NULL, bytes, NULL, true);
	f = sfs_test_mknod(fs, SFS_ROOT_INO, "f");
	assert_int_equal(sfs_open(fs, f, O_RDWR), 0);
	assert_int_equal(sfs_unlink(fs, SFS_ROOT_INO, "f"), 0);
	assert_int_equal(fs->sb.s_last_orphan, 0);
	assert_int_equal(sfs_release(fs, f), 0);
	assert_int_equal(sfs_fs_close(fs), 0);
	g_free(bytes);
}

/* A broken orphan list (a link to a free inode) is an error at mount,
 * and the list is left for e2fsck. */
static void test_journal_orphan_list_broken(void **state)
{
	struct ctx *c = *state;
	uint8_t *bytes = g_malloc(IMG_BYTES);
	struct sfs_dsuper *sb = (struct sfs_dsuper *)(bytes + SFS_SUPER_OFFSET);
	struct sfs_attr a;
	struct sfs_fs *fs;

	memcpy(bytes, c->base, IMG_BYTES);
	sb->s_last_orphan = sfs_cpu_to_le32(40); /* never used */
	fs = open_ram(c, "ordered", NULL, bytes, NULL, false);
	assert_int_equal(sfs_mkdir(fs, SFS_ROOT_INO, "d", 0755, 0, 0, &a),
			 -EROFS);
	assert_int_equal(sfs_le32(fs->sb.s_last_orphan), 40);
	sfs_fs_close(fs);
	g_free(bytes);
}

/*
 * chattr +D on a mount (a real clock: deferred waits, group commit): a
 * change to the directory that meets a commit in flight waits for that
 * commit, then commits itself, as an fsync does.  The commit in flight is
 * stood in for by the count its thread holds until it has slept out its
 * I/O (fs.c, commits_in_flight); a helper thread ends it after 50 ms.
 */
struct dirsync_inflight {
	struct sfs_fs *fs;
	bool ended;
};

static gpointer dirsync_end_commit(gpointer p)
{
	struct dirsync_inflight *f = p;

	g_usleep(50 * 1000);
	sfs_lock(f->fs);
	f->ended = true;
	f->fs->commits_in_flight--;
	sfs_cond_broadcast(&f->fs->commit_cond);
	sfs_unlock(f->fs);
	return NULL;
}

static void test_journal_dirsync_waits(void **state)
{
	struct ctx *c = *state;
	uint8_t *bytes = g_malloc(IMG_BYTES);
	struct sfs_fs *fs = open_ram(c, "ordered", "clock=emulate,device=ideal",
				     bytes, NULL, true);
	struct dirsync_inflight f = {.fs = fs};
	struct sfs_attr a;
	uint32_t flags;
	uint64_t c0;
	bool ended;

	assert_true(fs->defer_waits);
	assert_int_equal(sfs_mkdir(fs, SFS_ROOT_INO, "d", 0755, 0, 0, &a), 0);
	assert_int_equal(sfs_get_flags(fs, a.ino, &flags), 0);
	assert_int_equal(
	    sfs_set_flags(fs, a.ino, flags | SFS_DIRSYNC_FL, false), 0);
	/* no commit in flight: the create commits at once */
	c0 = stat_u64(fs, "journal", "commits.fsync");
	sfs_test_mknod(fs, a.ino, "x");
	assert_int_equal(stat_u64(fs, "journal", "commits.fsync"), c0 + 1);
	/* one in flight: the create returns after it, with its own commit */
	sfs_lock(fs);
	fs->commits_in_flight++;
	sfs_unlock(fs);
	GThread *t = g_thread_new("commit", dirsync_end_commit, &f);
	sfs_test_mknod(fs, a.ino, "y");
	sfs_lock(fs);
	ended = f.ended;
	sfs_unlock(fs);
	g_thread_join(t);
	assert_true(ended);
	assert_int_equal(stat_u64(fs, "journal", "commits.fsync"), c0 + 2);
	/* a plain directory's create commits nothing */
	sfs_test_mknod(fs, SFS_ROOT_INO, "z");
	assert_int_equal(stat_u64(fs, "journal", "commits.fsync"), c0 + 2);
	assert_int_equal(sfs_fs_close(fs), 0);
	check_clean(c, bytes, "dirsync");
	g_free(bytes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_journal_modes_clean_unmount,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_contract, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_journal_async_commit,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_journal_async_refuses_csum_v3, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_journal_ordered_data_before_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_crash_recovery,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_data_written_twice,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_commit_reasons,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_journal_revoke_protects_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_journal_refuses_without_log, setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_external_device,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_runtime_knobs,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_orphan_list,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_orphan_list_broken,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_chattr_j, setup,
						teardown),
		cmocka_unit_test(test_journal_promises),
		cmocka_unit_test_setup_teardown(test_journal_dirsync_waits,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
