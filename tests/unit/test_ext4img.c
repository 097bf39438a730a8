/*
 * test_ext4img.c - the engine on images real mke2fs makes for ext4.
 *
 * `mke2fs -t ext4 -O ^metadata_csum` (e2fsprogs 1.47, Debian's
 * mke2fs.conf) sets 64bit (64-byte group descriptors) and flex_bg (the
 * bitmaps and inode tables of 16 groups packed at the start of the first),
 * with huge_file, dir_nlink and extra_isize.  For 1, 2 and 4 KiB blocks the
 * test creates a tree of directories and files with known bytes, renames
 * and deletes part of it, closes, reopens, reads every file back, checks
 * that names deleted stay gone, closes and runs e2fsck -fn, which must find
 * nothing (free counts per group, bitmaps, directory counts included).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "format.h"
#include "fs.h"
#include "testsupport.h"

#define NDIRS 24
#define NFILES 30

/* The image really has the layout under test: 64-byte descriptors, and
 * group 1's block bitmap packed into group 0 by flex_bg. */
static void check_layout(const char *path, uint32_t bs)
{
	uint8_t *img;
	gsize len;
	const struct sfs_dsuper *sb;
	struct sfs_dgroup gd1;
	uint32_t fdb;

	assert_true(g_file_get_contents(path, (char **)&img, &len, NULL));
	sb = (const struct sfs_dsuper *)(img + SFS_SUPER_OFFSET);
	assert_true(sfs_le32(sb->s_feature_incompat) &
		    SFS_FEATURE_INCOMPAT_64BIT);
	assert_true(sfs_le32(sb->s_feature_incompat) &
		    SFS_FEATURE_INCOMPAT_FLEX_BG);
	assert_int_equal(sfs_le16(sb->s_desc_size), 64);
	assert_int_equal(img[SFS_SUPER_OFFSET + 0x174], 4); /* log flex */
	assert_true(sfs_le32(sb->s_blocks_count) /
			sfs_le32(sb->s_blocks_per_group) >=
		    4);
	fdb = sfs_le32(sb->s_first_data_block);
	memcpy(&gd1, img + (size_t)(fdb + 1) * bs + 64, sizeof(gd1));
	assert_true(sfs_le32(gd1.bg_block_bitmap) <
		    fdb + sfs_le32(sb->s_blocks_per_group));
	g_free(img);
}

/* mke2fs -F -q -t ext4 -O ^metadata_csum -b BS path SIZE: eight groups. */
static void make_ext4(const char *path, uint32_t bs)
{
	char *mke2fs = sfs_test_which("mke2fs");
	char bsarg[16], size[32];
	char *out = NULL, *errtext = NULL;
	int status = -1;

	assert_non_null(mke2fs);
	g_snprintf(bsarg, sizeof(bsarg), "%u", bs);
	g_snprintf(size, sizeof(size), "%uk", 8u * 8u * bs / 1024u * bs);
	const char *argv[] = {
	    mke2fs,	      "-F", "-q",  "-t", "ext4", "-O",
	    "^metadata_csum", "-b", bsarg, path, size,	 NULL};
	char *envp[] = {"LC_ALL=C", "MKE2FS_CONFIG=/etc/mke2fs.conf", NULL};

	assert_true(g_spawn_sync(NULL, (char **)argv, envp, G_SPAWN_DEFAULT,
				 NULL, NULL, &out, &errtext, &status, NULL));
	if (!g_spawn_check_wait_status(status, NULL))
		fail_msg("mke2fs failed: %s", errtext);
	g_free(out);
	g_free(errtext);
	g_free(mke2fs);
	check_layout(path, bs);
}

/* The bytes of file (d, i): its length and contents follow from both. */
static size_t file_len(unsigned d, unsigned i)
{
	return (size_t)((d * 7919u + i * 104729u) % 40000u);
}

static uint8_t *file_bytes(unsigned d, unsigned i, size_t *len)
{
	GRand *r = g_rand_new_with_seed(d * 1000u + i);
	uint8_t *b;

	*len = file_len(d, i);
	b = g_malloc(*len + 1);
	for (size_t k = 0; k < *len; k++)
		b[k] = (uint8_t)g_rand_int(r);
	g_rand_free(r);
	return b;
}

static sfs_ino_t lookup(struct sfs_fs *fs, sfs_ino_t dir, const char *name)
{
	struct sfs_attr a;
	int rc = sfs_lookup(fs, dir, name, &a);

	if (rc)
		fail_msg("lookup %s: %s", name, g_strerror(-rc));
	return a.ino;
}

/* File (d, i) lives, after the changes, in dir d unless i % 3 == 1 (moved
 * to dir (d + 1) % NDIRS as "m<d>-<i>") or i % 3 == 2 and i % 2 == 0
 * (deleted); directories d % 6 == 5 end up empty and are removed after
 * their files moved out. */
static bool file_deleted(unsigned i)
{
	return i % 3 == 2 && i % 2 == 0;
}

static void populate(struct sfs_fs *fs)
{
	sfs_ino_t dirs[NDIRS];

	for (unsigned d = 0; d < NDIRS; d++) {
		char name[32];
		struct sfs_attr a;

		g_snprintf(name, sizeof(name), "d%u", d);
		assert_int_equal(
		    sfs_mkdir(fs, SFS_ROOT_INO, name, 040755, 0, 0, &a), 0);
		dirs[d] = a.ino;
		for (unsigned i = 0; i < NFILES; i++) {
			size_t len, put = 0;
			uint8_t *b = file_bytes(d, i, &len);
			sfs_ino_t ino;

			g_snprintf(name, sizeof(name), "f%u", i);
			ino = sfs_test_mkfile(fs, dirs[d], name);
			if (len)
				assert_int_equal(
				    sfs_write(fs, ino, 0, b, len, &put), 0);
			assert_int_equal(put, len);
			assert_int_equal(sfs_release(fs, ino), 0);
			g_free(b);
		}
	}
	for (unsigned d = 0; d < NDIRS; d++) {
		for (unsigned i = 0; i < NFILES; i++) {
			char name[32], to[32];

			g_snprintf(name, sizeof(name), "f%u", i);
			if (i % 3 == 1) {
				g_snprintf(to, sizeof(to), "m%u-%u", d, i);
				assert_int_equal(
				    sfs_rename(fs, dirs[d], name,
					       dirs[(d + 1) % NDIRS], to, 0),
				    0);
			} else if (file_deleted(i) || d % 6 == 5) {
				assert_int_equal(sfs_unlink(fs, dirs[d], name),
						 0);
			}
		}
	}
	/* empty the removable directories of what moved in, then remove */
	for (unsigned d = 0; d < NDIRS; d++) {
		char name[32];

		if (d % 6 != 5)
			continue;
		for (unsigned i = 1; i < NFILES; i += 3) {
			g_snprintf(name, sizeof(name), "m%u-%u",
				   (d + NDIRS - 1) % NDIRS, i);
			assert_int_equal(sfs_unlink(fs, dirs[d], name), 0);
		}
		g_snprintf(name, sizeof(name), "d%u", d);
		assert_int_equal(sfs_rmdir(fs, SFS_ROOT_INO, name), 0);
	}
}

static void check_file(struct sfs_fs *fs, sfs_ino_t dir, const char *name,
		       unsigned d, unsigned i)
{
	size_t len, got = 0;
	uint8_t *want = file_bytes(d, i, &len);
	uint8_t *buf = g_malloc(len + 1);
	sfs_ino_t ino = lookup(fs, dir, name);
	struct sfs_attr a;

	assert_int_equal(sfs_getattr(fs, ino, &a), 0);
	assert_int_equal(a.size, len);
	assert_int_equal(sfs_open(fs, ino, O_RDONLY), 0);
	assert_int_equal(sfs_read(fs, ino, 0, len + 1, buf, &got), 0);
	assert_int_equal(got, len);
	assert_memory_equal(buf, want, len);
	assert_int_equal(sfs_release(fs, ino), 0);
	g_free(buf);
	g_free(want);
}

static void verify(struct sfs_fs *fs)
{
	for (unsigned d = 0; d < NDIRS; d++) {
		char name[32];
		struct sfs_attr a;
		sfs_ino_t dir, next;

		g_snprintf(name, sizeof(name), "d%u", d);
		if (d % 6 == 5) {
			assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, name, &a),
					 -ENOENT);
			continue;
		}
		dir = lookup(fs, SFS_ROOT_INO, name);
		for (unsigned i = 0; i < NFILES; i++) {
			g_snprintf(name, sizeof(name), "f%u", i);
			if (i % 3 == 1 || file_deleted(i))
				assert_int_equal(sfs_lookup(fs, dir, name, &a),
						 -ENOENT);
			else
				check_file(fs, dir, name, d, i);
		}
		if ((d + 1) % 6 == 5)
			continue;
		g_snprintf(name, sizeof(name), "d%u", (d + 1) % NDIRS);
		next = lookup(fs, SFS_ROOT_INO, name);
		for (unsigned i = 1; i < NFILES; i += 3) {
			g_snprintf(name, sizeof(name), "m%u-%u", d, i);
			check_file(fs, next, name, d, i);
		}
	}
}

static void run_case(uint32_t bs, const char *opts)
{
	char *dir = sfs_test_tmpdir();
	char *path = g_build_filename(dir, "ext4.img", NULL);
	char *out = NULL;
	struct sfs_fs *fs;

	make_ext4(path, bs);
	fs = sfs_test_open(path, opts);
	assert_int_equal(sfs_fs_block_size(fs), bs);
	populate(fs);
	assert_int_equal(sfs_fs_close(fs), 0);
	if (!sfs_test_fsck_clean(path, &out))
		fail_msg("e2fsck after the changes (%u, %s):\n%s", bs, opts,
			 out);
	g_free(out);
	out = NULL;
	fs = sfs_test_open(path, opts);
	verify(fs);
	assert_int_equal(sfs_fs_close(fs), 0);
	if (!sfs_test_fsck_clean(path, &out))
		fail_msg("e2fsck after the reread (%u, %s):\n%s", bs, opts,
			 out);
	g_free(out);
	sfs_test_rmtree(dir);
	g_free(path);
	g_free(dir);
}

static void test_ext4img_1k(void **state)
{
	(void)state;
	run_case(1024, "");
}

static void test_ext4img_2k(void **state)
{
	(void)state;
	run_case(2048, "");
}

static void test_ext4img_4k(void **state)
{
	(void)state;
	run_case(4096, "");
}

static void test_ext4img_4k_preset_ext4(void **state)
{
	(void)state;
	run_case(4096, "preset=ext4");
}

static void test_ext4img_1k_mballoc_delalloc(void **state)
{
	(void)state;
	run_case(1024, "alloc=mballoc,delalloc");
}

/* The raw inode ino of the image at path, read or written. */
static void raw_inode(const char *path, sfs_ino_t ino, struct sfs_dinode *d,
		      bool write)
{
	uint8_t *img;
	gsize len;
	const struct sfs_dsuper *sb;
	struct sfs_dgroup gd;
	uint32_t bs, ipg, isz, g;
	uint64_t off;

	assert_true(g_file_get_contents(path, (char **)&img, &len, NULL));
	sb = (const struct sfs_dsuper *)(img + SFS_SUPER_OFFSET);
	bs = 1024u << sfs_le32(sb->s_log_block_size);
	ipg = sfs_le32(sb->s_inodes_per_group);
	isz = sfs_le16(sb->s_inode_size);
	g = (uint32_t)((ino - 1) / ipg);
	memcpy(&gd,
	       img + (size_t)(sfs_le32(sb->s_first_data_block) + 1) * bs +
		   (size_t)g * sfs_le16(sb->s_desc_size),
	       sizeof(gd));
	off = (uint64_t)sfs_le32(gd.bg_inode_table) * bs +
	      (uint64_t)((ino - 1) % ipg) * isz;
	assert_true(off + isz <= len);
	if (write) {
		memcpy(img + off, d, isz);
		assert_true(
		    g_file_set_contents(path, (char *)img, (gssize)len, NULL));
	} else {
		memcpy(d, img + off, isz);
	}
	g_free(img);
}

/*
 * huge_file: an inode flagged EXT4_HUGE_FILE_FL counts i_blocks in
 * filesystem blocks.  A file's count rewritten that way reads back as the
 * same sectors; growing it by a block keeps the sum right and rewrites the
 * count in sectors (the flag goes), which e2fsck accepts.  New inodes get
 * i_extra_isize 32 and a creation time.
 */
static void test_ext4img_huge_file_flag(void **state)
{
	char *dir = sfs_test_tmpdir();
	char *path = g_build_filename(dir, "ext4.img", NULL);
	static uint8_t data[8192];
	struct sfs_dinode d;
	struct sfs_attr a;
	struct sfs_fs *fs;
	sfs_ino_t ino;
	size_t put = 0;
	uint64_t sectors;

	(void)state;
	memset(data, 'h', sizeof(data));
	make_ext4(path, 1024);
	fs = sfs_test_open(path, "");
	ino = sfs_test_mkfile(fs, SFS_ROOT_INO, "huge");
	assert_int_equal(sfs_write(fs, ino, 0, data, sizeof(data), &put), 0);
	assert_int_equal(sfs_release(fs, ino), 0);
	assert_int_equal(sfs_getattr(fs, ino, &a), 0);
	sectors = a.blocks;
	assert_true(sectors >= sizeof(data) / 512);
	assert_int_equal(sfs_fs_close(fs), 0);

	raw_inode(path, ino, &d, false);
	assert_int_equal(sfs_le16(d.i_extra_isize), 32);
	assert_int_not_equal(sfs_le32(d.i_crtime), 0);
	assert_int_equal(sfs_le32(d.i_blocks), sectors);
	d.i_blocks = sfs_cpu_to_le32((uint32_t)(sectors / 2));
	d.i_flags = sfs_cpu_to_le32(sfs_le32(d.i_flags) | SFS_HUGE_FILE_FL);
	raw_inode(path, ino, &d, true);

	fs = sfs_test_open(path, "");
	assert_int_equal(sfs_getattr(fs, ino, &a), 0);
	assert_int_equal(a.blocks, sectors);
	assert_int_equal(sfs_open(fs, ino, O_RDWR), 0);
	assert_int_equal(sfs_write(fs, ino, sizeof(data), data, 1024, &put), 0);
	assert_int_equal(sfs_release(fs, ino), 0);
	assert_int_equal(sfs_fs_close(fs), 0);
	raw_inode(path, ino, &d, false);
	assert_int_equal(sfs_le32(d.i_flags) & SFS_HUGE_FILE_FL, 0);
	assert_int_equal(sfs_le32(d.i_blocks), sectors + 2);
	assert_true(sfs_test_fsck_clean(path, NULL));
	sfs_test_rmtree(dir);
	g_free(path);
	g_free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ext4img_1k),
	    cmocka_unit_test(test_ext4img_2k),
	    cmocka_unit_test(test_ext4img_4k),
	    cmocka_unit_test(test_ext4img_4k_preset_ext4),
	    cmocka_unit_test(test_ext4img_1k_mballoc_delalloc),
	    cmocka_unit_test(test_ext4img_huge_file_flag),
	};

	return cmocka_run_group_tests_name("ext4img", tests, NULL, NULL);
}
