/*
 * test_uninitbg.c - uninit_bg (gdt_csum) images made by mke2fs: crc16
 * against its known value, every descriptor sum mke2fs wrote accepted,
 * uninitialised groups (BLOCK_UNINIT, INODE_UNINIT, bg_itable_unused)
 * written through the engine and found clean by e2fsck (which checks the
 * sums and the flags), at 1 and 4 KiB, with and without 64bit, ext3 and
 * ext4; a flipped bit in a descriptor refuses the mount.  An image plain
 * mke2fs made (inode tables left for lazy zeroing), garbage in every
 * never-used slot, opens read-only: every file found, stat'd and read,
 * no checksum error, not a byte written; a read-write open then zeroes
 * the tables and e2fsck finds it clean.
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

#define LZ_INODE_UNINIT 0x1
#define LZ_GARBAGE 0xA5

/* The tree mke2fs -d copies in: directories, files of 0 to 61 KiB, a
 * symlink.  How many names it holds below the root. */
static unsigned lazy_tree(const char *src)
{
	unsigned n = 0;
	char *p;

	for (unsigned d = 0; d < 4; d++) {
		p = g_strdup_printf("%s/d%u/sub", src, d);
		assert_int_equal(g_mkdir_with_parents(p, 0755), 0);
		g_free(p);
		n += 2;
		for (unsigned i = 0; i < 12; i++) {
			size_t len = (size_t)i * i * 512;
			char *data = g_malloc(len + 1);

			for (size_t k = 0; k < len; k++)
				data[k] = (char)('a' + (d * 7 + i + k) % 26);
			p = g_strdup_printf("%s/d%u/%sf%u", src, d,
					    i % 2 ? "sub/" : "", i);
			assert_true(
			    g_file_set_contents(p, data, (gssize)len, NULL));
			g_free(p);
			g_free(data);
			n++;
		}
	}
	p = g_strdup_printf("%s/d0/link", src);
	assert_int_equal(symlink("sub/f1", p), 0);
	g_free(p);
	return n + 1;
}

struct lz_names {
	GPtrArray *names;
};

static int lz_collect(void *ctx, const char *name, size_t len, sfs_ino_t ino,
		      uint8_t ftype, uint64_t next_off)
{
	struct lz_names *c = ctx;

	(void)ino;
	(void)ftype;
	(void)next_off;
	if (!(len == 1 && name[0] == '.') &&
	    !(len == 2 && name[0] == '.' && name[1] == '.') &&
	    !(len == 10 && !memcmp(name, "lost+found", 10)))
		g_ptr_array_add(c->names, g_strndup(name, len));
	return 0;
}

/* Every name below dino but lost+found: looked up, stat'd, read and
 * compared with the host copy under src; the count added to *n. */
static void lz_walk(struct sfs_fs *fs, sfs_ino_t dino, const char *src,
		    unsigned *n)
{
	struct lz_names c = {g_ptr_array_new_with_free_func(g_free)};

	assert_int_equal(sfs_readdir(fs, dino, 0, lz_collect, &c), 0);
	for (guint i = 0; i < c.names->len; i++) {
		const char *name = c.names->pdata[i];
		char *host = g_build_filename(src, name, NULL);
		struct sfs_attr a, s;
		struct stat st;

		assert_int_equal(lstat(host, &st), 0);
		assert_int_equal(sfs_lookup(fs, dino, name, &a), 0);
		assert_int_equal(sfs_getattr(fs, a.ino, &s), 0);
		assert_int_equal(s.mode, st.st_mode);
		if (!S_ISDIR(st.st_mode))
			assert_int_equal(s.size, (uint64_t)st.st_size);
		if (S_ISDIR(st.st_mode)) {
			lz_walk(fs, a.ino, host, n);
		} else if (S_ISLNK(st.st_mode)) {
			char t[64];
			size_t len = 0;
			assert_int_equal(
			    sfs_readlink(fs, a.ino, t, sizeof(t), &len), 0);
			assert_int_equal(len, 6);
			assert_memory_equal(t, "sub/f1", 6);
		} else {
			gchar *want;
			gsize wlen;
			char *got = g_malloc(st.st_size + 1);
			size_t glen = 0;

			assert_true(
			    g_file_get_contents(host, &want, &wlen, NULL));
			assert_int_equal(sfs_open(fs, a.ino, O_RDONLY), 0);
			assert_int_equal(sfs_read(fs, a.ino, 0,
						  (size_t)st.st_size + 1, got,
						  &glen),
					 0);
			assert_int_equal(sfs_release(fs, a.ino), 0);
			assert_int_equal(glen, wlen);
			assert_memory_equal(got, want, wlen);
			g_free(want);
			g_free(got);
		}
		(*n)++;
		g_free(host);
	}
	g_ptr_array_unref(c.names);
}

static char *lz_hash(const char *img)
{
	gchar *data;
	gsize len;
	char *h;

	assert_true(g_file_get_contents(img, &data, &len, NULL));
	h = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (guchar *)data, len);
	g_free(data);
	return h;
}

/* Fill the never-used tail slots of every group (all of an INODE_UNINIT
 * group's table) with garbage; how many slots. */
static uint64_t lz_garbage(const char *img, uint64_t *probe_ino)
{
	struct sfs_fs *fs = sfs_test_open(img, "ro");
	uint64_t slots = 0;
	int fd = open(img, O_RDWR);

	assert_true(fd >= 0);
	*probe_ino = 0;
	for (uint32_t g = 0; g < fs->groups; g++) {
		const struct sfs_dgroup *gd = &fs->gd[g];
		uint32_t unused = (sfs_le16(gd->bg_flags) & LZ_INODE_UNINIT)
				      ? fs->ipg
				      : sfs_le16(gd->bg_itable_unused);
		uint32_t first = fs->ipg - unused;
		size_t len = (size_t)unused * fs->inode_size;
		uint8_t *junk = g_malloc(len + 1);
		off_t at = (off_t)sfs_le32(gd->bg_inode_table) * fs->bs +
			   (off_t)first * fs->inode_size;

		memset(junk, LZ_GARBAGE, len);
		assert_int_equal(pwrite(fd, junk, len, at), (ssize_t)len);
		g_free(junk);
		if (unused && !*probe_ino)
			*probe_ino = (uint64_t)g * fs->ipg + first + 1;
		slots += unused;
	}
	close(fd);
	assert_false(fs->error);
	assert_int_equal(sfs_fs_close(fs), 0);
	return slots;
}

/* Plain mke2fs -t ext4 (lazy_itable_init): read-only open with garbage in
 * the slots mke2fs calls unused, then the first read-write open. */
static void test_lazy_itable_read_only(void **state)
{
	char *dir = sfs_test_tmpdir();
	char *img = g_build_filename(dir, "img", NULL);
	char *src = g_build_filename(dir, "src", NULL);
	gchar *argv[] = {"mke2fs", "-F", "-q", "-t", "ext4", "-b",
			 "1024",   "-d", src,  img,  "64M",  NULL};
	char *before, *after, *out = NULL;
	unsigned want, seen = 0;
	uint64_t probe, slots;
	struct sfs_fs *fs;
	struct sfs_attr a;

	(void)state;
	want = lazy_tree(src);
	g_free(sfs_test_run(argv));
	if (groups_with(img, "ITABLE_ZEROED"))
		skip(); /* this mke2fs zeroed the tables itself */
	slots = lz_garbage(img, &probe);
	assert_true(slots > 0 && probe > 0);
	before = lz_hash(img);

	fs = sfs_test_open(img, "ro");
	lz_walk(fs, SFS_ROOT_INO, src, &seen);
	assert_int_equal(seen, want);
	/* a garbage slot is a never-used inode, not a checksum error */
	assert_int_equal(sfs_getattr(fs, (sfs_ino_t)probe, &a), -ESTALE);
	assert_int_equal(sfs_getattr(fs, (sfs_ino_t)probe + 1, &a), -ESTALE);
	assert_false(fs->error);
	assert_int_equal(sfs_fs_close(fs), 0);
	after = lz_hash(img);
	assert_string_equal(before, after);
	g_free(after);

	/* the first read-write open zeroes the tables and works */
	fs = sfs_test_open(img, "");
	assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, "lost+found", &a), 0);
	for (unsigned i = 0; i < 40; i++) {
		char name[16];
		size_t w = 0;
		sfs_ino_t f;

		g_snprintf(name, sizeof(name), "new%u", i);
		f = sfs_test_mkfile(fs, a.ino, name);
		assert_int_equal(sfs_write(fs, f, 0, name, 4, &w), 0);
		assert_int_equal(sfs_release(fs, f), 0);
	}
	assert_int_equal(sfs_fs_close(fs), 0);
	after = lz_hash(img);
	assert_string_not_equal(before, after);
	g_free(after);
	if (!sfs_test_fsck_clean(img, &out))
		fail_msg("after the first read-write open: e2fsck: %s", out);
	g_free(out);
	assert_int_equal(groups_with(img, "ITABLE_ZEROED"),
			 groups_with(img, "Inode table at"));
	fs = sfs_test_open(img, "ro");
	seen = 0;
	lz_walk(fs, SFS_ROOT_INO, src, &seen);
	assert_int_equal(seen, want);
	assert_int_equal(sfs_fs_close(fs), 0);
	g_free(before);
	sfs_test_rmtree(dir);
	g_free(src);
	g_free(img);
	g_free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crc16_known),
	    cmocka_unit_test(test_uninit_bg_images),
	    cmocka_unit_test(test_flipped_descriptor_refused),
	    cmocka_unit_test(test_lazy_itable_read_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
