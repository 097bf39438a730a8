/*
 * test_uninitbg.c - uninit_bg (gdt_csum) images made by mke2fs: crc16
 * against its known value, every descriptor sum mke2fs wrote accepted,
 * uninitialised groups (BLOCK_UNINIT, INODE_UNINIT, bg_itable_unused)
 * written through the engine and found clean by e2fsck (which checks the
 * sums and the flags), at 1 and 4 KiB, with and without 64bit, ext3 and
 * ext4; a flipped bit in a descriptor refuses the mount.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "blockdev.h"
#include "config.h"
#include "csum.h"
#include "fs.h"
#include "fs_priv.h"
#include "testsupport.h"

static void mkimage(const char *img, const char *type, const char *bs,
		    const char *feat)
{
	gchar *argv[] = {"mke2fs", "-F", "-q", "-t", (char *)type, "-b",
			 (char *)bs, "-O", (char *)feat, (char *)img,
			 /* 8 groups at 1 KiB, 3 at 4 KiB */
			 strcmp(bs, "1024") ? "384M" : "64M", NULL};

	g_free(sfs_test_run(argv));
}

/* Groups dumpe2fs shows with flag word `flag` (e.g. "BLOCK_UNINIT"). */
static unsigned groups_with(const char *img, const char *flag)
{
	gchar *argv[] = {"dumpe2fs", (char *)img, NULL};
	char *out = sfs_test_run(argv), *p = out;
	unsigned n = 0;

	while ((p = strstr(p, flag))) {
		n++;
		p += strlen(flag);
	}
	g_free(out);
	return n;
}

/* Sum of the "N unused inodes" dumpe2fs shows per group
 * (bg_itable_unused). */
static unsigned long unused_inodes(const char *img)
{
	gchar *argv[] = {"dumpe2fs", (char *)img, NULL};
	char *out = sfs_test_run(argv), *p = out;
	unsigned long sum = 0;

	while ((p = strstr(p, " unused inodes"))) {
		char *q = p;
		while (q > out && q[-1] >= '0' && q[-1] <= '9')
			q--;
		sum += strtoul(q, NULL, 10);
		p++;
	}
	g_free(out);
	return sum;
}

static void test_crc16_known(void **state)
{
	(void)state;
	/* CRC-16/ARC check value, and the kernel's crc16(~0, ...) of it */
	assert_int_equal(sfs_crc16(0, "123456789", 9), 0xBB3D);
	assert_int_equal(sfs_crc16(0xFFFF, "123456789", 9), 0x4B37);
	assert_int_equal(sfs_crc16(0x1234, "", 0), 0x1234);
}

/* Write enough to reach groups mke2fs left uninitialised. */
static void workload(const char *img, const char *opts, unsigned mib,
		     unsigned round)
{
	struct sfs_fs *fs = sfs_test_open(img, opts);
	struct sfs_attr a;
	uint8_t *buf = g_malloc(1 << 20);
	char name[32];

	memset(buf, 0x5A, 1 << 20);
	for (unsigned d = 0; d < 6; d++) {
		sfs_ino_t dir;
		g_snprintf(name, sizeof(name), "r%u-d%u", round, d);
		assert_int_equal(
		    sfs_mkdir(fs, SFS_ROOT_INO, name, 0755, 0, 0, &a), 0);
		dir = a.ino;
		for (unsigned i = 0; i < 40; i++) {
			size_t w = 0;
			sfs_ino_t f;
			g_snprintf(name, sizeof(name), "f%u", i);
			f = sfs_test_mkfile(fs, dir, name);
			assert_int_equal(
			    sfs_write(fs, f, 0, buf, 4096 * (i % 5 + 1), &w),
			    0);
			assert_int_equal(sfs_release(fs, f), 0);
		}
	}
	/* mib MiB in one file: past the groups mke2fs used */
	{
		sfs_ino_t f = sfs_test_mkfile(fs, SFS_ROOT_INO, "big");
		for (unsigned i = 0; i < mib; i++) {
			size_t w = 0;
			assert_int_equal(sfs_write(fs, f, (uint64_t)i << 20,
						   buf, 1 << 20, &w),
					 0);
			assert_int_equal(w, 1 << 20);
		}
		assert_int_equal(sfs_release(fs, f), 0);
	}
	assert_int_equal(sfs_unlink(fs, SFS_ROOT_INO, "big"), 0);
	assert_true(fs->gdt_csum || fs->csum);
	assert_int_equal(sfs_fs_close(fs), 0);
	g_free(buf);
}

struct conf {
	const char *type, *bs, *feat, *opts;
};

static void check_conf(const struct conf *c)
{
	char *dir = sfs_test_tmpdir();
	char *img = g_build_filename(dir, "img", NULL);
	char *out = NULL;
	unsigned mib = strcmp(c->bs, "1024") ? 140 : 24;
	unsigned buninit, iuninit;
	unsigned long unused;

	mkimage(img, c->type, c->bs, c->feat);
	/* mke2fs left groups uninitialised: what simfs must honour */
	buninit = groups_with(img, "BLOCK_UNINIT");
	iuninit = groups_with(img, "INODE_UNINIT");
	unused = unused_inodes(img);
	if (buninit == 0 && iuninit == 0)
		fail_msg("%s %s: mke2fs left no group uninitialised", c->feat,
			 c->bs);
	workload(img, c->opts, mib, 0);
	if (!sfs_test_fsck_clean(img, &out))
		fail_msg("%s -b %s -O %s, opts '%s': e2fsck: %s", c->type,
			 c->bs, c->feat, c->opts, out);
	g_free(out);
	/* as ext4: flags cleared on first use only, bg_itable_unused
	 * lowered as inodes are taken; groups never used keep their flags */
	fprintf(stderr,
		"# %s -b %s -O %s: BLOCK_UNINIT %u -> %u, INODE_UNINIT %u -> "
		"%u, unused inodes %lu -> %lu\n",
		c->type, c->bs, c->feat, buninit,
		groups_with(img, "BLOCK_UNINIT"), iuninit,
		groups_with(img, "INODE_UNINIT"), unused, unused_inodes(img));
	assert_true(unused_inodes(img) < unused);
	assert_true(unused_inodes(img) > 0);
	assert_true(groups_with(img, "BLOCK_UNINIT") +
			groups_with(img, "INODE_UNINIT") <
		    buninit + iuninit);
	/* 8 groups at 1 KiB: the workload leaves some untouched */
	if (!strcmp(c->bs, "1024"))
		assert_true(groups_with(img, "BLOCK_UNINIT") +
				groups_with(img, "INODE_UNINIT") >
			    0);
	/* remount (sums checked at open) and write again */
	workload(img, c->opts, mib, 1);
	if (!sfs_test_fsck_clean(img, &out))
		fail_msg("%s, second mount: e2fsck: %s", c->feat, out);
	g_free(out);
	sfs_test_rmtree(dir);
	g_free(img);
	g_free(dir);
}

static void test_uninit_bg_images(void **state)
{
	static const struct conf confs[] = {
	    {"ext4", "4096", "^metadata_csum,^64bit,uninit_bg", "alloc=extent"},
	    {"ext4", "1024", "^metadata_csum,uninit_bg", "alloc=mballoc"},
	    {"ext4", "4096", "^metadata_csum,uninit_bg", "preset=ext4"},
	    {"ext3", "1024", "uninit_bg", "journal=ordered"},
	    {"ext3", "4096", "uninit_bg", "journal=journal"},
	    /* metadata_csum replaces gdt_csum: crc32c, the same flags */
	    {"ext4", "1024", "metadata_csum", "alloc=mballoc,journal=journal"},
	};

	(void)state;
	for (size_t i = 0; i < G_N_ELEMENTS(confs); i++)
		check_conf(&confs[i]);
}

/* Group descriptor 1's checksum field, and a bit flipped next to it. */
static void test_flipped_descriptor_refused(void **state)
{
	char *dir = sfs_test_tmpdir();
	char *img = g_build_filename(dir, "img", NULL);
	struct sfs_config cfg;
	struct sfs_bdev *bd = NULL;
	struct sfs_fs *fs = NULL;
	char *err = NULL;
	uint8_t c;
	int fd, rc;

	(void)state;
	mkimage(img, "ext4", "4096", "^metadata_csum,^64bit,uninit_bg");
	/* 4 KiB: descriptors in block 1, 32 bytes each; group 1's
	 * bg_used_dirs_count (0x10) */
	fd = open(img, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, 4096 + 32 + 0x10), 1);
	c ^= 0x01;
	assert_int_equal(pwrite(fd, &c, 1, 4096 + 32 + 0x10), 1);
	close(fd);
	sfs_config_defaults(&cfg);
	assert_int_equal(sfs_bdev_open_file(img, 0, 0, &bd), 0);
	rc = sfs_fs_open(bd, &cfg, &fs, &err);
	assert_int_equal(rc, -EINVAL);
	assert_non_null(err);
	if (!strstr(err, "group 1: descriptor checksum"))
		fail_msg("unexpected refusal: %s", err);
	g_free(err);
	sfs_test_rmtree(dir);
	g_free(img);
	g_free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crc16_known),
	    cmocka_unit_test(test_uninit_bg_images),
	    cmocka_unit_test(test_flipped_descriptor_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
