/*
 * test_badimage.c - sfs_fs_open refuses corrupt and foreign images.
 *
 * Each case starts from a freshly made image, breaks one thing (magic,
 * revision, an unknown incompat or ro_compat feature, group geometry,
 * inode count, a truncated file, a block size out of range, an empty
 * file, random bytes; or mke2fs makes it with unsupported features), and
 * expects sfs_fs_open to return -EINVAL (or -EIO)
 * with a non-empty one-line message, to close the device (the image's lock
 * is free again), and to leave every byte of the image unchanged (xxhash
 * of the file before and after).  A control case opens the intact image.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <xxhash.h>

#include "config.h"
#include "format.h"
#include "fs.h"
#include "testsupport.h"

#define IMG_SIZE (16u << 20)
#define IMG_BS 1024u

struct fixture {
	char *dir;
	char *good;	/* pristine image */
	char *bad;	/* the corrupted copy under test */
	uint8_t *bytes; /* contents of good */
	gsize len;
};

static int setup(void **state)
{
	struct fixture *f = g_new0(struct fixture, 1);

	f->dir = sfs_test_tmpdir();
	f->good = g_build_filename(f->dir, "good.img", NULL);
	f->bad = g_build_filename(f->dir, "bad.img", NULL);
	if (sfs_test_mkimage(f->good, IMG_SIZE, IMG_BS))
		return -1;
	if (!g_file_get_contents(f->good, (char **)&f->bytes, &f->len, NULL))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	sfs_test_rmtree(f->dir);
	g_free(f->bytes);
	g_free(f->good);
	g_free(f->bad);
	g_free(f->dir);
	g_free(f);
	return 0;
}

static XXH64_hash_t file_hash(const char *path, gsize *len)
{
	char *data = NULL;
	XXH64_hash_t h;

	assert_true(g_file_get_contents(path, &data, len, NULL));
	h = XXH64(data, *len, 0);
	g_free(data);
	return h;
}

/* The primary superblock inside a copy of the image. */
static struct sfs_dsuper *super_of(uint8_t *img)
{
	return (struct sfs_dsuper *)(img + SFS_SUPER_OFFSET);
}

/*
 * Write img (len bytes) as the bad image, try to open it, and check the
 * refusal.  Every word of want (NULL-terminated, may be NULL) must appear
 * in the message, and absent (if not NULL) must not.
 */
static void expect_refused_words(struct fixture *f, const uint8_t *img,
				 gsize len, const char *what,
				 const char *const *want, const char *absent)
{
	struct sfs_config cfg;
	struct sfs_bdev *bd;
	struct sfs_fs *fs = NULL;
	XXH64_hash_t before, after;
	gsize len0, len1;
	char *err = NULL;
	int rc;

	assert_true(
	    g_file_set_contents(f->bad, (const char *)img, (gssize)len, NULL));
	before = file_hash(f->bad, &len0);
	sfs_config_defaults(&cfg);
	rc = sfs_bdev_open_file(f->bad, SFS_BDEV_EXCL, 0, &bd);
	assert_int_equal(rc, 0);
	rc = sfs_fs_open(bd, &cfg, &fs, &err);
	if (rc != -EINVAL && rc != -EIO)
		fail_msg("%s: sfs_fs_open returned %d (%s), want -EINVAL", what,
			 rc, err ? err : "no message");
	assert_null(fs);
	if (!err || !err[0])
		fail_msg("%s: no message", what);
	if (strchr(err, '\n'))
		fail_msg("%s: message is not one line: '%s'", what, err);
	for (; want && *want; want++)
		if (!strstr(err, *want))
			fail_msg("%s: message '%s' does not name '%s'", what,
				 err, *want);
	if (absent && strstr(err, absent))
		fail_msg("%s: message '%s' is about '%s'", what, err, absent);
	print_message("# %s: %s\n", what, err);
	g_free(err);

	/* The engine closed the device: the image lock is free again. */
	assert_int_equal(sfs_bdev_open_file(f->bad, SFS_BDEV_EXCL, 0, &bd), 0);
	sfs_bdev_close(bd);
	after = file_hash(f->bad, &len1);
	assert_int_equal(len0, len1);
	if (before != after)
		fail_msg("%s: the image was modified by a refused open", what);
}

/* The same with one word (or none) that must be named. */
static void expect_refused(struct fixture *f, const uint8_t *img, gsize len,
			   const char *what, const char *want_word)
{
	const char *want[] = {want_word, NULL};

	expect_refused_words(f, img, len, what, want, NULL);
}

/* mke2fs -F -q ARGS... path 32M; fails the test if mke2fs does. */
static void run_mke2fs(const char *mke2fs, const char *path,
		       const char *const *args)
{
	GPtrArray *argv = g_ptr_array_new();
	char *out = NULL, *errtext = NULL;
	GError *gerr = NULL;
	int status = -1;
	bool ran;

	g_ptr_array_add(argv, (char *)mke2fs);
	g_ptr_array_add(argv, "-F");
	g_ptr_array_add(argv, "-q");
	for (; *args; args++)
		g_ptr_array_add(argv, (char *)*args);
	g_ptr_array_add(argv, (char *)path);
	g_ptr_array_add(argv, "32M");
	g_ptr_array_add(argv, NULL);
	unlink(path);
	ran = g_spawn_sync(NULL, (char **)argv->pdata, NULL, 0, NULL, NULL,
			   &out, &errtext, &status, &gerr);
	g_ptr_array_free(argv, true);
	if (!ran || !g_spawn_check_wait_status(status, NULL))
		fail_msg("mke2fs failed: %s", gerr ? gerr->message : errtext);
	g_free(out);
	g_free(errtext);
	g_clear_error(&gerr);
}

/*
 * Images mke2fs makes with features outside the subset: the refusal names
 * every one of them, before any other check (a bigalloc image with a
 * journal is refused for bigalloc, not for what bigalloc does to the
 * journal inode or the cluster geometry).
 */
static void test_badimage_mke2fs_features_all_named(void **state)
{
	static const struct {
		const char *args[6];
		const char *want[6];
	} cases[] = {
	    {{"-t", "ext4", "-O", "bigalloc,64bit,flex_bg,metadata_csum"},
	     {"bigalloc"}}, /* 64bit, flex_bg, metadata_csum are read */
	    {{"-t", "ext4", "-O", "^metadata_csum,uninit_bg,quota"},
	     {"quota"}}, /* uninit_bg is read */
	    {{"-t", "ext4", "-O", "inline_data,mmp,large_dir"},
	     {"inline_data", "mmp", "large_dir"}},
	    {{"-t", "ext2", "-O", "meta_bg,^resize_inode"}, {"meta_bg"}},
	};
	struct fixture *f = *state;
	char *mke2fs = sfs_test_which("mke2fs");
	char *path = g_build_filename(f->dir, "mke2fs.img", NULL);

	if (!mke2fs)
		skip();
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		char *what = g_strjoinv(" ", (char **)cases[i].args);
		uint8_t *img;
		gsize len;

		run_mke2fs(mke2fs, path, cases[i].args);
		assert_true(
		    g_file_get_contents(path, (char **)&img, &len, NULL));
		expect_refused_words(f, img, len, what, cases[i].want,
				     "journal");
		g_free(img);
		g_free(what);
	}
	unlink(path);
	g_free(path);
	g_free(mke2fs);
}

/* What mke2fs makes for ext2, ext3 and ext4 without metadata_csum with
 * this machine's defaults (dir_index, and for ext4 64bit, flex_bg,
 * huge_file, dir_nlink, extra_isize) opens, and closes e2fsck-clean. */
static void test_badimage_mke2fs_defaults_open(void **state)
{
	static const char *const types[][7] = {
	    {"-t", "ext2"},
	    {"-t", "ext3"},
	    {"-t", "ext4", "-O", "^metadata_csum"},
	    {"-t", "ext4", "-O", "^metadata_csum", "-b", "1024"},
	    {"-t", "ext4", "-O", "^metadata_csum", "-b", "2048"},
	    {"-t", "ext4", "-O", "^metadata_csum,^64bit", "-G", "4"},
	};
	struct fixture *f = *state;
	char *mke2fs = sfs_test_which("mke2fs");
	char *path = g_build_filename(f->dir, "mke2fs.img", NULL);

	if (!mke2fs)
		skip();
	for (size_t i = 0; i < G_N_ELEMENTS(types); i++) {
		struct sfs_fs *fs;

		run_mke2fs(mke2fs, path, types[i]);
		fs = sfs_test_open(path, "");
		assert_int_equal(sfs_fs_close(fs), 0);
		assert_true(sfs_test_fsck_clean(path, NULL));
	}
	unlink(path);
	g_free(path);
	g_free(mke2fs);
}

/* A copy of the pristine image to corrupt. */
static uint8_t *copy_img(struct fixture *f)
{
	return g_memdup2(f->bytes, f->len);
}

static void test_badimage_control_opens(void **state)
{
	struct fixture *f = *state;
	struct sfs_fs *fs = sfs_test_open(f->good, "");

	assert_int_equal(sfs_fs_block_size(fs), IMG_BS);
	assert_int_equal(sfs_fs_close(fs), 0);
	assert_true(sfs_test_fsck_clean(f->good, NULL));
	g_free(f->bytes);
	assert_true(
	    g_file_get_contents(f->good, (char **)&f->bytes, &f->len, NULL));
}

static void test_badimage_wrong_magic(void **state)
{
	struct fixture *f = *state;
	uint8_t *img = copy_img(f);

	super_of(img)->s_magic = sfs_cpu_to_le16(0x1234);
	expect_refused(f, img, f->len, "wrong magic", NULL);
	g_free(img);
}

static void test_badimage_rev0(void **state)
{
	struct fixture *f = *state;
	uint8_t *img = copy_img(f);

	super_of(img)->s_rev_level = 0;
	expect_refused(f, img, f->len, "revision 0", NULL);
	g_free(img);
}

/* 64bit with a descriptor size that is not a power of two from 64 to
 * 1024 is refused before any descriptor is read. */
static void test_badimage_64bit_desc_size(void **state)
{
	static const uint16_t sizes[] = {0, 32, 48, 96, 2048};
	struct fixture *f = *state;

	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		uint8_t *img = copy_img(f);
		struct sfs_dsuper *sb = super_of(img);
		char what[64];

		sb->s_feature_incompat =
		    sfs_cpu_to_le32(sfs_le32(sb->s_feature_incompat) |
				    SFS_FEATURE_INCOMPAT_64BIT);
		sb->s_desc_size = sfs_cpu_to_le16(sizes[i]);
		g_snprintf(what, sizeof(what), "64bit desc_size %u", sizes[i]);
		expect_refused(f, img, f->len, what, "descriptor size");
		g_free(img);
	}
}

/* Without flex_bg a group's bitmaps must lie inside the group. */
static void test_badimage_bitmap_outside_group(void **state)
{
	struct fixture *f = *state;
	uint8_t *img = copy_img(f);
	struct sfs_dgroup *gd = (struct sfs_dgroup *)(img + 2 * IMG_BS);

	/* group 1's block bitmap pointed at group 0's */
	gd[1].bg_block_bitmap = gd[0].bg_block_bitmap;
	expect_refused(f, img, f->len, "bitmap in another group",
		       "outside the group");
	g_free(img);
}

/* metadata_csum is supported, but a superblock without checksum type 1
 * (crc32c) is refused, naming the feature. */
static void test_badimage_metadata_csum(void **state)
{
	struct fixture *f = *state;
	uint8_t *img = copy_img(f);
	struct sfs_dsuper *sb = super_of(img);

	sb->s_feature_ro_compat =
	    sfs_cpu_to_le32(sfs_le32(sb->s_feature_ro_compat) |
			    SFS_FEATURE_RO_COMPAT_METADATA_CSUM);
	expect_refused(f, img, f->len, "ro_compat metadata_csum",
		       "metadata_csum");
	g_free(img);
}

static void test_badimage_blocks_per_group_inconsistent(void **state)
{
	struct fixture *f = *state;
	uint8_t *img = copy_img(f);
	struct sfs_dsuper *sb = super_of(img);

	/* More blocks per group than one bitmap block can describe. */
	sb->s_blocks_per_group = sfs_cpu_to_le32(IMG_BS * 8 * 2);
	sb->s_clusters_per_group = sb->s_blocks_per_group;
	expect_refused(f, img, f->len, "blocks_per_group > 8 x bs", NULL);
	g_free(img);

	/* Clusters per group disagreeing with blocks per group. */
	img = copy_img(f);
	sb = super_of(img);
	sb->s_clusters_per_group = sfs_cpu_to_le32(IMG_BS * 4);
	expect_refused(f, img, f->len, "clusters_per_group != blocks", NULL);
	g_free(img);
}

static void test_badimage_inodes_count_mismatch(void **state)
{
	struct fixture *f = *state;
	uint8_t *img = copy_img(f);
	struct sfs_dsuper *sb = super_of(img);

	sb->s_inodes_count = sfs_cpu_to_le32(sfs_le32(sb->s_inodes_count) + 8);
	expect_refused(f, img, f->len, "inodes_count != ipg x groups", NULL);
	g_free(img);
}

static void test_badimage_truncated(void **state)
{
	struct fixture *f = *state;

	/* The file ends halfway through s_blocks_count. */
	expect_refused(f, f->bytes, f->len / 2, "truncated image", NULL);
}

static void test_badimage_block_size_log7(void **state)
{
	struct fixture *f = *state;
	uint8_t *img = copy_img(f);
	struct sfs_dsuper *sb = super_of(img);

	sb->s_log_block_size = sfs_cpu_to_le32(7);
	sb->s_log_cluster_size = sfs_cpu_to_le32(7);
	expect_refused(f, img, f->len, "block size log 7", NULL);
	g_free(img);
}

static void test_badimage_zero_length(void **state)
{
	struct fixture *f = *state;
	static const uint8_t nothing[1];

	expect_refused(f, nothing, 0, "zero-length file", NULL);
}

static void test_badimage_random_garbage(void **state)
{
	struct fixture *f = *state;
	uint8_t *img = g_malloc(f->len);
	GRand *r = g_rand_new_with_seed(2024);

	for (gsize i = 0; i + 4 <= f->len; i += 4) {
		guint32 v = g_rand_int(r);

		memcpy(img + i, &v, 4);
	}
	expect_refused(f, img, f->len, "random garbage", NULL);

	/* Garbage that even carries the magic number. */
	super_of(img)->s_magic = sfs_cpu_to_le16(SFS_SUPER_MAGIC);
	expect_refused(f, img, f->len, "garbage with magic", NULL);
	g_rand_free(r);
	g_free(img);
}

static void test_badimage_other_geometry(void **state)
{
	struct fixture *f = *state;
	uint8_t *img;

	img = copy_img(f);
	super_of(img)->s_first_data_block = sfs_cpu_to_le32(0);
	expect_refused(f, img, f->len, "first_data_block 0 at 1 KiB", NULL);
	g_free(img);

	img = copy_img(f);
	super_of(img)->s_inode_size = sfs_cpu_to_le16(100);
	expect_refused(f, img, f->len, "inode size 100", NULL);
	g_free(img);

	img = copy_img(f);
	super_of(img)->s_inodes_per_group = 0;
	super_of(img)->s_inodes_count = 0;
	expect_refused(f, img, f->len, "no inodes", NULL);
	g_free(img);

	img = copy_img(f);
	super_of(img)->s_blocks_count = sfs_cpu_to_le32(IMG_SIZE / IMG_BS * 4);
	expect_refused(f, img, f->len, "blocks_count beyond the file", NULL);
	g_free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_badimage_control_opens),
	    cmocka_unit_test(test_badimage_wrong_magic),
	    cmocka_unit_test(test_badimage_rev0),
	    cmocka_unit_test(test_badimage_64bit_desc_size),
	    cmocka_unit_test(test_badimage_bitmap_outside_group),
	    cmocka_unit_test(test_badimage_metadata_csum),
	    cmocka_unit_test(test_badimage_blocks_per_group_inconsistent),
	    cmocka_unit_test(test_badimage_inodes_count_mismatch),
	    cmocka_unit_test(test_badimage_truncated),
	    cmocka_unit_test(test_badimage_block_size_log7),
	    cmocka_unit_test(test_badimage_zero_length),
	    cmocka_unit_test(test_badimage_random_garbage),
	    cmocka_unit_test(test_badimage_other_geometry),
	    cmocka_unit_test(test_badimage_mke2fs_features_all_named),
	    cmocka_unit_test(test_badimage_mke2fs_defaults_open),
	};

	return cmocka_run_group_tests_name("badimage", tests, setup, teardown);
}
