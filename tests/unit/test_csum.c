/*
 * test_csum.c - metadata_csum images (csum.c): crc32c against known
 * values, an e2fsprogs-made image written through the engine and found
 * clean by e2fsck (which verifies every checksum), and one flipped bit in
 * each kind of checksummed block reported as ext4 reports it, without a
 * crash, on an image without 64bit and flex_bg and on plain
 * `mke2fs -t ext4`'s.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "blockdev.h"
#include "config.h"
#include "cpumodel.h"
#include "csum.h"
#include "fs.h"
#include "fs_priv.h"
#include "testsupport.h"

/* mke2fs an ext4 image with metadata_csum in the subset simfs handles. */
static void mkimage(const char *img, const char *bs, const char *extra)
{
	char *feat = g_strdup_printf("metadata_csum,^64bit,^flex_bg,"
				     "^orphan_file,^metadata_csum_seed%s",
				     extra);
	gchar *argv[] = {"mke2fs", "-F", "-q", "-t", "ext4", "-b", (char *)bs,
			 "-O", feat, "-E", "lazy_itable_init=0", (char *)img,
			 "32M", NULL};

	g_free(sfs_test_run(argv));
	g_free(feat);
}

/* debugfs -R cmd img, its output. */
static char *dbg(const char *img, const char *cmd)
{
	gchar *argv[] = {"debugfs", "-R", (char *)cmd, (char *)img, NULL};

	return sfs_test_run(argv);
}

static uint64_t num_after(const char *text, const char *key)
{
	const char *p = strstr(text, key);

	if (!p)
		fail_msg("'%s' not in: %s", key, text);
	return g_ascii_strtoull(p + strlen(key), NULL, 10);
}

static void flip_bit(const char *img, uint64_t byte)
{
	int fd = open(img, O_RDWR);
	uint8_t c;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, (off_t)byte), 1);
	c ^= 0x10;
	assert_int_equal(pwrite(fd, &c, 1, (off_t)byte), 1);
	close(fd);
}

static sfs_ino_t look(struct sfs_fs *fs, sfs_ino_t dir, const char *name)
{
	struct sfs_attr a;

	assert_int_equal(sfs_lookup(fs, dir, name, &a), 0);
	return a.ino;
}

static void test_crc32c_known(void **state)
{
	const char *s = "123456789";

	(void)state;
	/* the CRC-32C check value (RFC 3720's polynomial, inverted in and
	 * out); ext4 keeps the raw CRC, so the inversions are ours */
	assert_int_equal(sfs_crc32c(~0u, s, 9) ^ ~0u, 0xE3069283u);
	assert_int_equal(sfs_crc32c(5, s, 0), 5);
	/* a chain equals one pass */
	assert_int_equal(sfs_crc32c(sfs_crc32c(~0u, s, 4), s + 4, 5),
			 sfs_crc32c(~0u, s, 9));
}

/* The superblock mke2fs wrote verifies; a changed byte does not. */
static void test_super_from_mke2fs(void **state)
{
	char *dir = sfs_test_tmpdir();
	char *img = g_build_filename(dir, "img", NULL);
	struct sfs_dsuper sb;
	int fd;

	(void)state;
	mkimage(img, "4096", "");
	fd = open(img, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &sb, sizeof(sb), 1024), sizeof(sb));
	close(fd);
	assert_true(sfs_csum_super_ok(&sb));
	sb.s_mnt_count ^= 1;
	assert_false(sfs_csum_super_ok(&sb));
	sb.s_mnt_count ^= 1;
	sfs_csum_super_set(&sb);
	assert_true(sfs_csum_super_ok(&sb));
	sfs_test_rmtree(dir);
	g_free(img);
	g_free(dir);
}

/* A workload over every checksummed structure; e2fsck finds it clean. */
static void workload(const char *img, const char *opts)
{
	struct sfs_fs *fs = sfs_test_open(img, opts);
	struct sfs_attr a;
	sfs_ino_t big, sub, f1, f2;
	char name[64], val[600];

	assert_int_equal(sfs_mkdir(fs, SFS_ROOT_INO, "big", 0755, 0, 0, &a), 0);
	big = a.ino;
	for (unsigned i = 0; i < 400; i++) {
		g_snprintf(name, sizeof(name), "file-with-a-long-name-%u", i);
		sfs_ino_t f = sfs_test_mkfile(fs, big, name);
		sfs_test_fill(fs, f, 0, 100 + i, (uint8_t)i);
		assert_int_equal(sfs_release(fs, f), 0);
	}
	for (unsigned i = 0; i < 400; i += 3) {
		char to[64];

		g_snprintf(name, sizeof(name), "file-with-a-long-name-%u", i);
		g_snprintf(to, sizeof(to), "renamed-%u", i);
		assert_int_equal(
		    sfs_rename(fs, big, name, SFS_ROOT_INO, to, 0), 0);
	}
	for (unsigned i = 1; i < 400; i += 3) {
		g_snprintf(name, sizeof(name), "file-with-a-long-name-%u", i);
		assert_int_equal(sfs_unlink(fs, big, name), 0);
	}
	for (unsigned i = 0; i < 30; i++) {
		g_snprintf(name, sizeof(name), "d%u", i);
		assert_int_equal(
		    sfs_mkdir(fs, SFS_ROOT_INO, name, 0755, 0, 0, &a), 0);
	}
	for (unsigned i = 0; i < 30; i += 2) {
		g_snprintf(name, sizeof(name), "d%u", i);
		assert_int_equal(sfs_rmdir(fs, SFS_ROOT_INO, name), 0);
	}
	sub = look(fs, SFS_ROOT_INO, "d1");
	assert_int_equal(sfs_rename(fs, SFS_ROOT_INO, "d3", sub, "moved", 0),
			 0);
	/* two files written a block at a time in turn: many extents, a
	 * tree of depth >= 1 */
	f1 = sfs_test_mkfile(fs, SFS_ROOT_INO, "frag1");
	f2 = sfs_test_mkfile(fs, SFS_ROOT_INO, "frag2");
	for (unsigned i = 0; i < 1200; i++) {
		sfs_test_fill(fs, f1, (uint64_t)i * 2 * 4096, 4096, (uint8_t)i);
		sfs_test_fill(fs, f2, (uint64_t)i * 2 * 4096, 4096,
			      (uint8_t)~i);
		if (i % 64 == 0)
			assert_int_equal(sfs_fs_sync(fs), 0);
	}
	memset(val, 'v', sizeof(val));
	assert_int_equal(sfs_setxattr(fs, f1, "user.big", val, sizeof(val), 0),
			 0);
	assert_int_equal(sfs_setxattr(fs, f2, "user.big", val, sizeof(val), 0),
			 0);
	assert_int_equal(sfs_release(fs, f1), 0);
	assert_int_equal(sfs_release(fs, f2), 0);
	/* the CPU model is charged for what was checksummed: at least one
	 * inode per file created */
	struct sfs_cpu_counts cc;
	sfs_fs_cpu_counts(fs, &cc);
	assert_true(cc.csum_bytes >= 400u * 256);
	assert_int_equal(sfs_fs_close(fs), 0);
}

/* Read back what workload() left. */
static void check_back(const char *img)
{
	struct sfs_fs *fs = sfs_test_open(img, "");
	sfs_ino_t big = look(fs, SFS_ROOT_INO, "big");
	uint8_t buf[4096];
	size_t got;
	struct sfs_attr a;
	char name[64];

	for (unsigned i = 0; i < 400; i++) {
		int want = i % 3 == 1 ? -ENOENT : 0;
		sfs_ino_t dir = i % 3 == 0 ? SFS_ROOT_INO : big;

		g_snprintf(name, sizeof(name),
			   i % 3 == 0 ? "renamed-%u" : "file-with-a-long-name-%u",
			   i);
		assert_int_equal(sfs_lookup(fs, dir, name, &a), want);
		if (want)
			continue;
		assert_int_equal(a.size, 100 + i);
		assert_int_equal(sfs_read(fs, a.ino, 0, 100, buf, &got), 0);
		assert_int_equal(buf[99], (uint8_t)i);
	}
	sfs_ino_t f1 = look(fs, SFS_ROOT_INO, "frag1");
	for (unsigned i = 0; i < 1200; i += 97) {
		assert_int_equal(sfs_read(fs, f1, (uint64_t)i * 2 * 4096, 4096,
					  buf, &got),
				 0);
		assert_int_equal(buf[4095], (uint8_t)i);
	}
	assert_int_equal(sfs_getxattr(fs, f1, "user.big", NULL, 0, &got), 0);
	assert_int_equal(got, 600);
	assert_int_equal(sfs_lookup(fs, look(fs, SFS_ROOT_INO, "d1"), "moved",
				    &a),
			 0);
	assert_int_equal(sfs_fs_close(fs), 0);
}

static void test_workload_fsck_clean(void **state)
{
	static const char *const opts[] = {"alloc=extent", "",
					   "alloc=mballoc,journal=ordered"};
	char *out = NULL;

	(void)state;
	for (unsigned k = 0; k < G_N_ELEMENTS(opts); k++) {
		char *dir = sfs_test_tmpdir();
		char *img = g_build_filename(dir, "img", NULL);

		mkimage(img, "4096", "");
		workload(img, opts[k]);
		if (!sfs_test_fsck_clean(img, &out))
			fail_msg("opts '%s': e2fsck: %s", opts[k], out);
		g_free(out);
		check_back(img);
		if (!sfs_test_fsck_clean(img, &out))
			fail_msg("opts '%s', after a remount: e2fsck: %s",
				 opts[k], out);
		g_free(out);
		sfs_test_rmtree(dir);
		g_free(img);
		g_free(dir);
	}
}

/* The image the corruption cases start from: an htree directory, a small
 * linear one, a file with an extent tree block and an xattr block; on
 * plain `mke2fs -t ext4`'s image (64bit, flex_bg) or one without those. */
static void corrupt_base(const char *img, bool plain)
{
	struct sfs_fs *fs;
	struct sfs_attr a;
	sfs_ino_t big, small, f1, f2;
	char name[64], val[600];

	if (plain)
		assert_int_equal(sfs_test_mke2fs(img, 32 << 20, 4096, "ext4",
						 "lazy_itable_init=0"),
				 0);
	else
		mkimage(img, "4096", "");
	fs = sfs_test_open(img, "alloc=extent");
	assert_int_equal(sfs_mkdir(fs, SFS_ROOT_INO, "big", 0755, 0, 0, &a), 0);
	big = a.ino;
	for (unsigned i = 0; i < 300; i++) {
		g_snprintf(name, sizeof(name), "file-with-a-long-name-%u", i);
		assert_int_equal(sfs_release(fs, sfs_test_mkfile(fs, big, name)),
				 0);
	}
	assert_int_equal(sfs_mkdir(fs, SFS_ROOT_INO, "small", 0755, 0, 0, &a),
			 0);
	small = a.ino;
	assert_int_equal(sfs_release(fs, sfs_test_mkfile(fs, small, "x")), 0);
	f1 = sfs_test_mkfile(fs, SFS_ROOT_INO, "frag1");
	f2 = sfs_test_mkfile(fs, SFS_ROOT_INO, "frag2");
	for (unsigned i = 0; i < 40; i++) {
		sfs_test_fill(fs, f1, (uint64_t)i * 2 * 4096, 4096, (uint8_t)i);
		sfs_test_fill(fs, f2, (uint64_t)i * 2 * 4096, 4096, (uint8_t)i);
		assert_int_equal(sfs_fs_sync(fs), 0);
	}
	memset(val, 'v', sizeof(val));
	assert_int_equal(sfs_setxattr(fs, f1, "user.big", val, sizeof(val), 0),
			 0);
	assert_int_equal(sfs_release(fs, f1), 0);
	assert_int_equal(sfs_release(fs, f2), 0);
	assert_int_equal(sfs_fs_close(fs), 0);
}

enum target {
	T_SUPER,
	T_GROUP,
	T_BBITMAP,
	T_IBITMAP,
	T_INODE,
	T_LEAF,
	T_DXROOT,
	T_EXTENT,
	T_XATTR,
	T_N
};

/* Byte to flip for target t (found with debugfs and dumpe2fs). */
static uint64_t target_byte(const char *img, enum target t)
{
	gchar *dump[] = {"dumpe2fs", (char *)img, NULL};
	char *out;
	uint64_t v;

	switch (t) {
	case T_SUPER:
		return 1024 + 0x30; /* s_wtime */
	case T_GROUP:
		return 4096 + 0x0E; /* group 0's free inode count */
	case T_BBITMAP:
	case T_IBITMAP:
		out = sfs_test_run(dump);
		v = num_after(out, t == T_BBITMAP ? "Block bitmap at "
						  : "Inode bitmap at ");
		g_free(out);
		return v * 4096 + 700; /* bits of free blocks / inodes */
	case T_INODE:
		out = dbg(img, "imap /frag1");
		v = num_after(out, "located at block ") * 4096;
		v += g_ascii_strtoull(strstr(out, "offset 0x") + 9, NULL, 16);
		g_free(out);
		return v + 0x10; /* i_mtime */
	case T_LEAF:
		out = dbg(img, "blocks /small");
		v = g_ascii_strtoull(out, NULL, 10);
		g_free(out);
		return v * 4096 + 30; /* inside the entry "x" */
	case T_DXROOT:
		out = dbg(img, "blocks /big");
		v = g_ascii_strtoull(out, NULL, 10);
		g_free(out);
		return v * 4096 + 0x2C; /* the first entry's block number */
	case T_EXTENT:
		out = dbg(img, "stat /frag1");
		v = num_after(out, "(ETB0):");
		g_free(out);
		return v * 4096 + 12 + 8; /* first extent's start */
	case T_XATTR:
		out = dbg(img, "stat /frag1");
		v = num_after(out, "File ACL: ");
		g_free(out);
		return v * 4096 + 40; /* the first entry's value offset */
	default:
		fail();
	}
	return 0;
}

/* Use the structure t; the first call that fails returns (or 0). */
static int poke(struct sfs_fs *fs, enum target t)
{
	static unsigned n_new;
	char name[16];
	struct sfs_attr a;
	uint8_t buf[4096];
	size_t got;
	int rc;

	switch (t) {
	case T_BBITMAP:
	case T_IBITMAP:
		/* a new file and a block for it: both bitmaps are read */
		g_snprintf(name, sizeof(name), "new%u", n_new++);
		rc = sfs_mknod(fs, SFS_ROOT_INO, name, 0100644, 0, 0, 0, &a);
		if (rc)
			return rc;
		rc = sfs_open(fs, a.ino, O_RDWR);
		if (!rc)
			rc = sfs_write(fs, a.ino, 0, buf, sizeof(buf), &got);
		if (!rc)
			rc = sfs_fs_sync(fs);
		sfs_release(fs, a.ino);
		return rc;
	case T_INODE:
		return sfs_lookup(fs, SFS_ROOT_INO, "frag1", &a);
	case T_LEAF:
		rc = sfs_lookup(fs, SFS_ROOT_INO, "small", &a);
		return rc ? rc : sfs_lookup(fs, a.ino, "x", &a);
	case T_DXROOT:
		rc = sfs_lookup(fs, SFS_ROOT_INO, "big", &a);
		return rc ? rc
			  : sfs_lookup(fs, a.ino, "file-with-a-long-name-7",
				       &a);
	case T_EXTENT:
	case T_XATTR:
		rc = sfs_lookup(fs, SFS_ROOT_INO, "frag1", &a);
		if (rc)
			return rc;
		if (t == T_XATTR)
			return sfs_getxattr(fs, a.ino, "user.big", NULL, 0,
					    &got);
		rc = sfs_open(fs, a.ino, O_RDONLY);
		if (rc)
			return rc;
		rc = sfs_read(fs, a.ino, 30 * 2 * 4096, sizeof(buf), buf, &got);
		sfs_release(fs, a.ino);
		return rc;
	default:
		fail();
	}
	return 0;
}

/* What the call using a target block with a flipped bit gets: EFSBADCRC
 * (EBADMSG) where ext4's callers get it, for an inode, a directory leaf,
 * an htree block and an xattr block; -EIO for an extent block (ext4's map
 * path turns the sum's error into EIO); -ENOSPC for the bitmaps: ext4
 * marks the group corrupt and allocates elsewhere, and these images have
 * one group only (test_badbitmap.c has several). */
static bool is_bitmap(int t)
{
	return t == T_BBITMAP || t == T_IBITMAP;
}

static int flipped_rc(int t)
{
	if (is_bitmap(t))
		return -ENOSPC;
	return t == T_INODE || t == T_LEAF || t == T_DXROOT || t == T_XATTR
		   ? -EBADMSG
		   : -EIO;
}

/* Each target's bit flipped in turn: the mount refused (superblock,
 * descriptors) or the call using the block fails as in ext4
 * (flipped_rc), the error recorded (the sticky error state but for a
 * bitmap, whose group is only marked bad), and the same again on a second
 * try: the block is never taken as good. */
static void flipped_bits(bool plain)
{
	char *dir = sfs_test_tmpdir();
	char *base = g_build_filename(dir, "base", NULL);
	char *img = g_build_filename(dir, "img", NULL);

	corrupt_base(base, plain);
	for (int t = 0; t < T_N; t++) {
		gchar *cp[] = {"cp", base, img, NULL};
		struct sfs_config cfg;
		struct sfs_bdev *bd;
		struct sfs_fs *fs = NULL;
		char *err = NULL;
		int rc;

		g_free(sfs_test_run(cp));
		if (t != T_SUPER && t != T_GROUP) {
			/* the control: unflipped, the same calls succeed */
			fs = sfs_test_open(img, "alloc=extent");
			rc = poke(fs, t);
			if (rc)
				fail_msg("target %d, intact: %d", t, rc);
			sfs_fs_abort(fs);
			g_free(sfs_test_run(cp));
		}
		flip_bit(img, target_byte(img, t));
		sfs_config_defaults(&cfg);
		assert_int_equal(sfs_config_parse(&cfg, "alloc=extent", NULL,
						  &err),
				 0);
		assert_int_equal(sfs_bdev_open_file(img, 0, 0, &bd), 0);
		rc = sfs_fs_open(bd, &cfg, &fs, &err);
		if (t == T_SUPER || t == T_GROUP) {
			/* the kernel refuses such a mount too */
			assert_int_equal(rc, -EINVAL);
			assert_non_null(strstr(err, "checksum"));
			g_free(err);
			continue;
		}
		if (rc)
			fail_msg("target %d: mount failed: %s", t, err);
		rc = poke(fs, t);
		if (rc != flipped_rc(t))
			fail_msg("target %d: %d, not %d", t, rc, flipped_rc(t));
		assert_true(fs->error_recorded);
		assert_true(fs->sb.s_state & sfs_cpu_to_le16(SFS_STATE_ERROR));
		assert_true(fs->error == !is_bitmap(t));
		if (is_bitmap(t))
			assert_true(sfs_group_bad(fs, 0, t == T_IBITMAP));
		rc = poke(fs, t);
		if (rc != flipped_rc(t))
			fail_msg("target %d, second try: %d, not %d", t, rc,
				 flipped_rc(t));
		sfs_fs_abort(fs);
	}
	sfs_test_rmtree(dir);
	g_free(img);
	g_free(base);
	g_free(dir);
}

static void test_flipped_bit_is_eio(void **state)
{
	(void)state;
	flipped_bits(false);
}

static void test_flipped_bit_is_eio_mke2fs_default(void **state)
{
	(void)state;
	flipped_bits(true);
}

/* A power cut after journal commits: e2fsck replays simfs's log, and so
 * does simfs's next mount; both leave a clean, checksummed image. */
static void test_crash_replay(void **state)
{
	char *dir = sfs_test_tmpdir();
	char *img = g_build_filename(dir, "img", NULL);
	char *img2 = g_build_filename(dir, "img2", NULL);
	gchar *cp[] = {"cp", img, img2, NULL};
	gchar *fix[] = {"e2fsck", "-fy", img2, NULL};
	char *out = NULL, name[32];
	struct sfs_fs *fs;
	struct sfs_attr a;
	gint status = -1;

	(void)state;
	mkimage(img, "1024", "");
	fs = sfs_test_open(img, "alloc=extent,journal=ordered");
	for (unsigned i = 0; i < 120; i++) {
		g_snprintf(name, sizeof(name), "n%u", i);
		assert_int_equal(
		    sfs_mkdir(fs, SFS_ROOT_INO, name, 0755, 0, 0, &a), 0);
		if (i == 60)
			assert_int_equal(sfs_fs_sync(fs), 0);
	}
	assert_int_equal(sfs_fs_sync(fs), 0);
	sfs_fs_abort(fs);
	/* the log holds the transactions: there is something to replay */
	int fd = open(img, O_RDONLY);
	struct sfs_dsuper sb;
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &sb, sizeof(sb), 1024), sizeof(sb));
	close(fd);
	assert_true(sfs_le32(sb.s_feature_incompat) &
		    SFS_FEATURE_INCOMPAT_RECOVER);
	g_free(sfs_test_run(cp));
	/* e2fsck -fy exits 1 when it replayed or fixed something */
	assert_true(g_spawn_sync(NULL, fix, NULL, G_SPAWN_SEARCH_PATH, NULL,
				 NULL, &out, NULL, &status, NULL));
	g_free(out);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) <= 1);
	if (!sfs_test_fsck_clean(img2, &out))
		fail_msg("after e2fsck's replay: %s", out);
	g_free(out);
	fs = sfs_test_open(img, "alloc=extent,journal=ordered");
	assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, "n119", &a), 0);
	assert_int_equal(sfs_fs_close(fs), 0);
	if (!sfs_test_fsck_clean(img, &out))
		fail_msg("after simfs's replay: %s", out);
	g_free(out);
	sfs_test_rmtree(dir);
	g_free(img2);
	g_free(img);
	g_free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crc32c_known),
	    cmocka_unit_test(test_super_from_mke2fs),
	    cmocka_unit_test(test_workload_fsck_clean),
	    cmocka_unit_test(test_flipped_bit_is_eio),
	    cmocka_unit_test(test_flipped_bit_is_eio_mke2fs_default),
	    cmocka_unit_test(test_crash_replay),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
