/*
 * test_namei.c - the namespace verbs of fs.h (simfs/namei.c): lookup,
 * mknod of every type, mkdir/rmdir and directory link counts, fast and
 * slow symlinks, hard links, unlink of an open file, the rename matrix
 * (replace, NOREPLACE, EXCHANGE, into its own subtree, across parents),
 * name length limits, times, read-only refusal.
 *
 * Each scenario ends with the filesystem closed and e2fsck -fn clean, most
 * also after a remount that re-reads what was written.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include <cmocka.h>

#include "fs_priv.h"
#include "testsupport.h"

#define MiB (1024 * 1024ull)
#define ROOT SFS_ROOT_INO

/* ---- fixture ---- */

static struct sfs_tfs *tfs_new(uint32_t bs)
{
	return sfs_tfs_new(bs, 32 * MiB, "");
}

/* Close, fsck, open again. */

static struct sfs_attr getattr_(struct sfs_fs *fs, sfs_ino_t ino)
{
	struct sfs_attr a;

	assert_int_equal(sfs_getattr(fs, ino, &a), 0);
	return a;
}

static uint32_t nlink_of(struct sfs_fs *fs, sfs_ino_t ino)
{
	return getattr_(fs, ino).nlink;
}

static sfs_ino_t ino_of(struct sfs_fs *fs, sfs_ino_t dir, const char *name)
{
	struct sfs_attr a;

	assert_int_equal(sfs_lookup(fs, dir, name, &a), 0);
	return a.ino;
}

static void assert_absent(struct sfs_fs *fs, sfs_ino_t dir, const char *name)
{
	struct sfs_attr a;

	assert_int_equal(sfs_lookup(fs, dir, name, &a), -ENOENT);
}

static void write_str(struct sfs_fs *fs, sfs_ino_t ino, const char *s)
{
	size_t done = 0;

	assert_int_equal(sfs_write(fs, ino, 0, s, strlen(s), &done), 0);
	assert_int_equal(done, strlen(s));
}

static void assert_content(struct sfs_fs *fs, sfs_ino_t ino, const char *s)
{
	char buf[256];
	size_t got = 0;

	assert_int_equal(sfs_read(fs, ino, 0, sizeof(buf), buf, &got), 0);
	assert_int_equal(got, strlen(s));
	assert_memory_equal(buf, s, got);
}

/* readdir: the file type reported for one name (0xff if absent). */
struct ft_probe {
	const char *name;
	uint8_t ftype;
	sfs_ino_t ino;
};

static int ft_fill(void *ctx, const char *name, size_t len, sfs_ino_t ino,
		   uint8_t ftype, uint64_t next)
{
	struct ft_probe *p = ctx;

	(void)next;
	if (len == strlen(p->name) && memcmp(name, p->name, len) == 0) {
		p->ftype = ftype;
		p->ino = ino;
	}
	return 0;
}

static uint8_t ftype_of(struct sfs_fs *fs, sfs_ino_t dir, const char *name)
{
	struct ft_probe p = {.name = name, .ftype = 0xff};

	assert_int_equal(sfs_readdir(fs, dir, 0, ft_fill, &p), 0);
	return p.ftype;
}

/* ---- cases ---- */

static void test_namei_lookup(void **state)
{
	struct sfs_tfs *t = tfs_new(4096);
	struct sfs_attr a;
	sfs_ino_t f;

	(void)state;
	assert_int_equal(sfs_lookup(t->fs, ROOT, "lost+found", &a), 0);
	assert_true((a.mode & SFS_S_IFMT) == SFS_S_IFDIR);
	assert_int_equal(sfs_lookup(t->fs, ROOT, ".", &a), 0);
	assert_int_equal(a.ino, ROOT);
	assert_int_equal(sfs_lookup(t->fs, ROOT, "..", &a), 0);
	assert_int_equal(a.ino, ROOT);
	assert_int_equal(sfs_lookup(t->fs, ROOT, "nothing", &a), -ENOENT);
	f = sfs_test_mknod(t->fs, ROOT, "file");
	assert_int_equal(sfs_lookup(t->fs, f, "x", &a), -ENOTDIR);
	assert_int_equal(sfs_lookup(t->fs, 999999, "x", &a), -ESTALE);
	assert_int_equal(sfs_lookup(t->fs, ROOT, "", &a), -EINVAL);
	assert_int_equal(sfs_lookup(t->fs, ROOT, "a/b", &a), -EINVAL);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_namei_name_lengths(void **state)
{
	struct sfs_tfs *t = tfs_new(1024);
	char n255[256], n256[257];
	struct sfs_attr a;
	sfs_ino_t f, d;

	(void)state;
	memset(n255, 'a', 255);
	n255[255] = '\0';
	memset(n256, 'b', 256);
	n256[256] = '\0';
	f = sfs_test_mknod(t->fs, ROOT, n255);
	assert_int_equal(ino_of(t->fs, ROOT, n255), f);
	assert_int_equal(ftype_of(t->fs, ROOT, n255), SFS_FT_REG);
	assert_int_equal(
	    sfs_mknod(t->fs, ROOT, n256, SFS_S_IFREG | 0644, 0, 0, 0, &a),
	    -ENAMETOOLONG);
	assert_int_equal(sfs_mkdir(t->fs, ROOT, n256, 0755, 0, 0, &a),
			 -ENAMETOOLONG);
	assert_int_equal(sfs_lookup(t->fs, ROOT, n256, &a), -ENAMETOOLONG);
	assert_int_equal(sfs_link(t->fs, f, ROOT, n256, &a), -ENAMETOOLONG);
	assert_int_equal(sfs_symlink(t->fs, ROOT, n256, "x", 0, 0, &a),
			 -ENAMETOOLONG);
	assert_int_equal(sfs_rename(t->fs, ROOT, n255, ROOT, n256, 0),
			 -ENAMETOOLONG);
	assert_int_equal(sfs_unlink(t->fs, ROOT, n256), -ENAMETOOLONG);
	assert_int_equal(sfs_mknod(t->fs, ROOT, "", SFS_S_IFREG, 0, 0, 0, &a),
			 -EINVAL);
	assert_int_equal(
	    sfs_mknod(t->fs, ROOT, "a/b", SFS_S_IFREG, 0, 0, 0, &a), -EINVAL);
	assert_int_equal(sfs_mknod(t->fs, ROOT, ".", SFS_S_IFREG, 0, 0, 0, &a),
			 -EEXIST);
	assert_int_equal(sfs_mkdir(t->fs, ROOT, "..", 0755, 0, 0, &a), -EEXIST);
	/* a 255-byte directory name, with a 255-byte name inside */
	memset(n255, 'd', 255);
	d = sfs_test_mkdir(t->fs, ROOT, n255);
	sfs_test_mknod(t->fs, d, n255);
	assert_int_equal(sfs_mknod(t->fs, d, n255, SFS_S_IFREG, 0, 0, 0, &a),
			 -EEXIST);
	sfs_tfs_cycle(t);
	assert_int_equal(ino_of(t->fs, ROOT, n255), d);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_namei_mknod_types(void **state)
{
	struct sfs_tfs *t = tfs_new(4096);
	struct {
		const char *name;
		uint32_t mode;
		uint32_t rdev;
		uint8_t ftype;
	} c[] = {
	    {"reg", SFS_S_IFREG | 0640, 0, SFS_FT_REG},
	    {"untyped", 0600, 0, SFS_FT_REG},
	    {"fifo", SFS_S_IFIFO | 0600, 0, SFS_FT_FIFO},
	    {"sock", SFS_S_IFSOCK | 0755, 0, SFS_FT_SOCK},
	    {"chr", SFS_S_IFCHR | 0666, makedev(1, 3), SFS_FT_CHRDEV},
	    {"blk", SFS_S_IFBLK | 0660, makedev(8, 17), SFS_FT_BLKDEV},
	    {"chr_big", SFS_S_IFCHR | 0600, makedev(300, 70000), SFS_FT_CHRDEV},
	    {"blk_bigminor", SFS_S_IFBLK | 0600, makedev(7, 256),
	     SFS_FT_BLKDEV},
	};
	sfs_ino_t ino[G_N_ELEMENTS(c)];
	struct sfs_attr a;

	(void)state;
	for (unsigned i = 0; i < G_N_ELEMENTS(c); i++) {
		assert_int_equal(sfs_mknod(t->fs, ROOT, c[i].name, c[i].mode,
					   c[i].rdev, 1000, 100, &a),
				 0);
		ino[i] = a.ino;
		assert_int_equal(a.nlink, 1);
		assert_int_equal(a.uid, 1000);
		assert_int_equal(a.gid, 100);
		assert_int_equal(a.size, 0);
	}
	assert_int_equal(
	    sfs_mknod(t->fs, ROOT, "reg", SFS_S_IFREG, 0, 0, 0, &a), -EEXIST);
	assert_int_equal(
	    sfs_mknod(t->fs, ROOT, "d", SFS_S_IFDIR | 0755, 0, 0, 0, &a),
	    -EPERM);
	assert_int_equal(
	    sfs_mknod(t->fs, ROOT, "l", SFS_S_IFLNK | 0777, 0, 0, 0, &a),
	    -EINVAL);
	assert_int_equal(
	    sfs_mknod(t->fs, 999999, "x", SFS_S_IFREG, 0, 0, 0, &a), -ESTALE);
	assert_int_equal(
	    sfs_mknod(t->fs, ino[0], "x", SFS_S_IFREG, 0, 0, 0, &a), -ENOTDIR);
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < G_N_ELEMENTS(c); i++) {
			uint32_t want = c[i].mode & SFS_S_IFMT
					    ? c[i].mode
					    : (c[i].mode | SFS_S_IFREG);

			a = getattr_(t->fs, ino[i]);
			assert_int_equal(a.mode, want);
			assert_int_equal(a.blocks, 0);
			if (c[i].ftype == SFS_FT_CHRDEV ||
			    c[i].ftype == SFS_FT_BLKDEV)
				assert_int_equal(a.rdev, c[i].rdev);
			assert_int_equal(ftype_of(t->fs, ROOT, c[i].name),
					 c[i].ftype);
			assert_int_equal(ino_of(t->fs, ROOT, c[i].name),
					 ino[i]);
		}
		sfs_tfs_cycle(t); /* and again from disk */
	}
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_namei_mkdir_rmdir_links(void **state)
{
	struct sfs_tfs *t = tfs_new(1024);
	struct sfs_statfs st0, st1;
	uint32_t root_links = 0;
	sfs_ino_t a, b, f;
	struct sfs_attr at;

	(void)state;
	root_links = nlink_of(t->fs, ROOT);
	assert_int_equal(sfs_statfs(t->fs, &st0), 0);
	a = sfs_test_mkdir(t->fs, ROOT, "a");
	assert_int_equal(nlink_of(t->fs, ROOT), root_links + 1);
	assert_int_equal(nlink_of(t->fs, a), 2);
	assert_int_equal(getattr_(t->fs, a).size, 1024);
	b = sfs_test_mkdir(t->fs, a, "b");
	assert_int_equal(nlink_of(t->fs, a), 3);
	assert_int_equal(ino_of(t->fs, b, ".."), a);
	assert_int_equal(ino_of(t->fs, b, "."), b);
	f = sfs_test_mknod(t->fs, a, "f");
	assert_int_equal(nlink_of(t->fs, a), 3);
	assert_int_equal(ftype_of(t->fs, a, "b"), SFS_FT_DIR);
	assert_int_equal(sfs_mkdir(t->fs, a, "b", 0755, 0, 0, &at), -EEXIST);
	sfs_tfs_cycle(t);

	assert_int_equal(sfs_rmdir(t->fs, ROOT, "a"), -ENOTEMPTY);
	assert_int_equal(sfs_rmdir(t->fs, a, "f"), -ENOTDIR);
	assert_int_equal(sfs_unlink(t->fs, a, "b"), -EISDIR);
	assert_int_equal(sfs_rmdir(t->fs, a, "."), -EINVAL);
	assert_int_equal(sfs_rmdir(t->fs, a, ".."), -ENOTEMPTY);
	assert_int_equal(sfs_rmdir(t->fs, a, "nope"), -ENOENT);
	assert_int_equal(sfs_rmdir(t->fs, a, "b"), 0);
	assert_int_equal(nlink_of(t->fs, a), 2);
	assert_int_equal(sfs_getattr(t->fs, b, &at), -ESTALE);
	assert_int_equal(sfs_unlink(t->fs, a, "f"), 0);
	assert_int_equal(sfs_getattr(t->fs, f, &at), -ESTALE);
	assert_int_equal(sfs_rmdir(t->fs, ROOT, "a"), 0);
	assert_int_equal(nlink_of(t->fs, ROOT), root_links);
	assert_absent(t->fs, ROOT, "a");
	/* under a journal, freed blocks return at its commit */
	assert_int_equal(sfs_fs_sync(t->fs), 0);
	assert_int_equal(sfs_statfs(t->fs, &st1), 0);
	assert_int_equal(st1.inodes_free, st0.inodes_free);
	assert_int_equal(st1.blocks_free, st0.blocks_free);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* A directory with many subdirectories: counts and bg_used_dirs. */
static void test_namei_many_subdirs(void **state)
{
	struct sfs_tfs *t = tfs_new(1024);
	char name[32];
	sfs_ino_t d;

	(void)state;
	d = sfs_test_mkdir(t->fs, ROOT, "top");
	for (unsigned i = 0; i < 150; i++) {
		snprintf(name, sizeof(name), "sub%03u", i);
		sfs_test_mkdir(t->fs, d, name);
	}
	assert_int_equal(nlink_of(t->fs, d), 152);
	sfs_tfs_cycle(t);
	for (unsigned i = 0; i < 150; i += 2) {
		snprintf(name, sizeof(name), "sub%03u", i);
		assert_int_equal(sfs_rmdir(t->fs, d, name), 0);
	}
	assert_int_equal(nlink_of(t->fs, d), 77);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_namei_symlinks(void **state)
{
	struct sfs_tfs *t = tfs_new(1024);
	char t59[60], t60[61], tmax[1024], tbig[1025], buf[1100];
	struct {
		const char *name;
		const char *target;
		bool fast;
	} c[] = {
	    {"short", "/etc/passwd", true},
	    {"t59", t59, true},
	    {"t60", t60, false},
	    {"tmax", tmax, false},
	};
	sfs_ino_t ino[G_N_ELEMENTS(c)];
	struct sfs_statfs st0, st1;
	struct sfs_attr a;
	size_t len;

	(void)state;
	memset(t59, 'x', 59);
	t59[59] = '\0';
	memset(t60, 'y', 60);
	t60[60] = '\0';
	memset(tmax, 'z', 1023);
	tmax[1023] = '\0';
	memset(tbig, 'w', 1024);
	tbig[1024] = '\0';
	assert_int_equal(sfs_statfs(t->fs, &st0), 0);
	for (unsigned i = 0; i < G_N_ELEMENTS(c); i++) {
		assert_int_equal(
		    sfs_symlink(t->fs, ROOT, c[i].name, c[i].target, 0, 0, &a),
		    0);
		ino[i] = a.ino;
		assert_int_equal(a.mode & SFS_S_IFMT, SFS_S_IFLNK);
		assert_int_equal(a.size, strlen(c[i].target));
	}
	assert_int_equal(sfs_symlink(t->fs, ROOT, "big", tbig, 0, 0, &a),
			 -ENAMETOOLONG);
	assert_int_equal(sfs_symlink(t->fs, ROOT, "empty", "", 0, 0, &a),
			 -ENOENT);
	assert_int_equal(sfs_symlink(t->fs, ROOT, "short", "x", 0, 0, &a),
			 -EEXIST);
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < G_N_ELEMENTS(c); i++) {
			a = getattr_(t->fs, ino[i]);
			assert_int_equal(a.blocks, c[i].fast ? 0 : 1024 / 512);
			assert_int_equal(
			    sfs_readlink(t->fs, ino[i], buf, sizeof(buf), &len),
			    0);
			assert_int_equal(len, strlen(c[i].target));
			assert_memory_equal(buf, c[i].target, len);
			assert_int_equal(ftype_of(t->fs, ROOT, c[i].name),
					 SFS_FT_SYMLINK);
		}
		sfs_tfs_cycle(t);
	}
	/* a short buffer gets a truncated target, as readlink(2) does */
	assert_int_equal(sfs_readlink(t->fs, ino[0], buf, 4, &len), 0);
	assert_int_equal(len, 4);
	assert_memory_equal(buf, "/etc", 4);
	assert_int_equal(sfs_readlink(t->fs, ROOT, buf, sizeof(buf), &len),
			 -EINVAL);
	for (unsigned i = 0; i < G_N_ELEMENTS(c); i++)
		assert_int_equal(sfs_unlink(t->fs, ROOT, c[i].name), 0);
	/* under a journal, freed blocks return at its commit */
	assert_int_equal(sfs_fs_sync(t->fs), 0);
	assert_int_equal(sfs_statfs(t->fs, &st1), 0);
	assert_int_equal(st1.blocks_free, st0.blocks_free);
	assert_int_equal(st1.inodes_free, st0.inodes_free);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_namei_hard_links(void **state)
{
	struct sfs_tfs *t = tfs_new(4096);
	struct sfs_attr a;
	sfs_ino_t f, d, d2;
	struct sfs_inode *ip;

	(void)state;
	f = sfs_test_mknod(t->fs, ROOT, "f");
	write_str(t->fs, f, "payload");
	d = sfs_test_mkdir(t->fs, ROOT, "d");
	assert_int_equal(sfs_link(t->fs, f, d, "g", &a), 0);
	assert_int_equal(a.ino, f);
	assert_int_equal(a.nlink, 2);
	assert_int_equal(ino_of(t->fs, d, "g"), f);
	assert_int_equal(sfs_link(t->fs, f, d, "g", &a), -EEXIST);
	assert_int_equal(sfs_link(t->fs, d, ROOT, "dlink", &a), -EPERM);
	assert_int_equal(sfs_link(t->fs, f, f, "x", &a), -ENOTDIR);
	assert_int_equal(sfs_link(t->fs, 999999, ROOT, "x", &a), -ESTALE);
	assert_int_equal(sfs_link(t->fs, f, ROOT, "..", &a), -EEXIST);
	sfs_tfs_cycle(t);
	assert_int_equal(nlink_of(t->fs, f), 2);
	assert_int_equal(sfs_unlink(t->fs, ROOT, "f"), 0);
	assert_int_equal(nlink_of(t->fs, f), 1);
	assert_content(t->fs, f, "payload");

	/* the link cap: -EMLINK at SFS_LINK_MAX */
	sfs_lock(t->fs);
	assert_int_equal(sfs_iget(t->fs, f, &ip), 0);
	sfs_i_set_nlink(ip, SFS_LINK_MAX);
	sfs_unlock(t->fs);
	assert_int_equal(sfs_link(t->fs, f, ROOT, "one-too-many", &a), -EMLINK);
	sfs_lock(t->fs);
	sfs_i_set_nlink(ip, 1);
	sfs_iput(t->fs, ip);
	sfs_unlock(t->fs);

	/* a directory's link cap: -EMLINK for mkdir in it */
	d2 = sfs_test_mkdir(t->fs, ROOT, "full");
	sfs_lock(t->fs);
	assert_int_equal(sfs_iget(t->fs, d2, &ip), 0);
	sfs_i_set_nlink(ip, SFS_LINK_MAX);
	sfs_unlock(t->fs);
	assert_int_equal(sfs_mkdir(t->fs, d2, "sub", 0755, 0, 0, &a), -EMLINK);
	sfs_lock(t->fs);
	sfs_i_set_nlink(ip, 2);
	sfs_iput(t->fs, ip);
	sfs_unlock(t->fs);

	assert_int_equal(sfs_unlink(t->fs, d, "g"), 0);
	assert_int_equal(sfs_getattr(t->fs, f, &a), -ESTALE);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_namei_unlink_open_file(void **state)
{
	struct sfs_tfs *t = tfs_new(4096);
	struct sfs_statfs st0, st1;
	struct sfs_attr a;
	sfs_ino_t f;

	(void)state;
	assert_int_equal(sfs_statfs(t->fs, &st0), 0);
	f = sfs_test_mknod(t->fs, ROOT, "f");
	write_str(t->fs, f, "still here");
	assert_int_equal(sfs_open(t->fs, f, O_RDWR), 0);
	assert_int_equal(sfs_unlink(t->fs, ROOT, "f"), 0);
	assert_absent(t->fs, ROOT, "f");
	assert_int_equal(sfs_unlink(t->fs, ROOT, "f"), -ENOENT);
	a = getattr_(t->fs, f);
	assert_int_equal(a.nlink, 0);
	assert_content(t->fs, f, "still here");
	/* a name cannot be given back to an unlinked inode */
	assert_int_equal(sfs_link(t->fs, f, ROOT, "again", &a), -ENOENT);
	assert_int_equal(sfs_release(t->fs, f), 0);
	assert_int_equal(sfs_getattr(t->fs, f, &a), -ESTALE);
	/* under a journal, freed blocks return at its commit */
	assert_int_equal(sfs_fs_sync(t->fs), 0);
	assert_int_equal(sfs_statfs(t->fs, &st1), 0);
	assert_int_equal(st1.blocks_free, st0.blocks_free);
	assert_int_equal(st1.inodes_free, st0.inodes_free);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/*
 * With lookup counting (the FUSE adapter's mode), an inode that loses its
 * last name while the kernel holds it stays until the kernel forgets it:
 * an open racing a rename over its name still finds the old file, and its
 * number is not handed out again meanwhile.  statfs and
 * sfs_reclaim_unlinked free such inodes early; unmount frees the rest.
 */
static void test_namei_kernel_lookups_hold_unlinked(void **state)
{
	struct sfs_tfs *t = tfs_new(4096);
	struct sfs_statfs st0, st1;
	struct sfs_attr a;
	sfs_ino_t old, tmp, c, x, y, y2;

	(void)state;
	sfs_fs_count_lookups(t->fs);
	old =
	    sfs_test_mknod(t->fs, ROOT, "name"); /* one reference: the create */
	write_str(t->fs, old, "old");
	assert_int_equal(sfs_lookup(t->fs, ROOT, "name", &a), 0); /* two */
	tmp = sfs_test_mknod(t->fs, ROOT, "tmp");
	write_str(t->fs, tmp, "new");
	assert_int_equal(sfs_rename(t->fs, ROOT, "tmp", ROOT, "name", 0), 0);
	assert_int_equal(ino_of(t->fs, ROOT, "name"), tmp);

	/* the kernel opens what its path walk found before the rename */
	assert_int_equal(nlink_of(t->fs, old), 0);
	assert_int_equal(sfs_open(t->fs, old, O_RDONLY), 0);
	assert_content(t->fs, old, "old");
	assert_int_equal(sfs_release(t->fs, old), 0);
	assert_int_equal(sfs_link(t->fs, old, ROOT, "back", &a), -ENOENT);
	c = sfs_test_mknod(t->fs, ROOT, "c");
	assert_int_not_equal(c, old);

	sfs_forget(t->fs, old, 1);
	assert_int_equal(nlink_of(t->fs, old), 0); /* one reference left */
	sfs_forget(t->fs, old, 1);
	assert_int_equal(sfs_getattr(t->fs, old, &a), -ESTALE);
	sfs_forget(t->fs, old, 1); /* more than were counted: ignored */

	/* statfs frees what only a late forget would have */
	assert_int_equal(sfs_statfs(t->fs, &st0), 0);
	x = sfs_test_mknod(t->fs, ROOT, "x");
	write_str(t->fs, x, "some bytes");
	assert_int_equal(sfs_unlink(t->fs, ROOT, "x"), 0);
	assert_int_equal(nlink_of(t->fs, x), 0);
	/* under a journal, freed blocks return at its commit */
	assert_int_equal(sfs_fs_sync(t->fs), 0);
	assert_int_equal(sfs_statfs(t->fs, &st1), 0);
	assert_int_equal(st1.inodes_free, st0.inodes_free);
	assert_int_equal(st1.blocks_free, st0.blocks_free);
	assert_int_equal(sfs_getattr(t->fs, x, &a), -ESTALE);
	sfs_forget(t->fs, x, 1); /* the forget that comes late */

	/* as does a failed allocation, through sfs_reclaim_unlinked */
	y = sfs_test_mknod(t->fs, ROOT, "y");
	assert_int_equal(sfs_unlink(t->fs, ROOT, "y"), 0);
	assert_int_equal(sfs_reclaim_unlinked(t->fs), 1);
	assert_int_equal(sfs_reclaim_unlinked(t->fs), 0);
	assert_int_equal(sfs_getattr(t->fs, y, &a), -ESTALE);

	/* y's number goes to a new file; the kernel's late forget of the old
	 * y must not count against the new one, which it also holds */
	y2 = sfs_test_mknod(t->fs, ROOT, "y2");
	assert_int_equal(y2, y);
	sfs_forget(t->fs, y, 1); /* the old y's */
	assert_int_equal(sfs_unlink(t->fs, ROOT, "y2"), 0);
	assert_int_equal(nlink_of(t->fs, y2), 0); /* still held */
	sfs_forget(t->fs, y2, 1);
	assert_int_equal(sfs_getattr(t->fs, y2, &a), -ESTALE);

	/* one still held at unmount is freed there: e2fsck sees no orphan */
	sfs_test_mknod(t->fs, ROOT, "z");
	assert_int_equal(sfs_unlink(t->fs, ROOT, "z"), 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* Plain renames: within and across directories, over files and dirs. */
static void test_namei_rename_replace(void **state)
{
	struct sfs_tfs *t = tfs_new(1024);
	sfs_ino_t a, b, f, g, h, x, y, e;
	uint32_t root_links;
	struct sfs_attr at;

	(void)state;
	a = sfs_test_mkdir(t->fs, ROOT, "a");
	b = sfs_test_mkdir(t->fs, ROOT, "b");
	root_links = nlink_of(t->fs, ROOT);
	f = sfs_test_mknod(t->fs, a, "f");
	g = sfs_test_mknod(t->fs, a, "g");
	write_str(t->fs, f, "F");

	/* same directory, new name */
	assert_int_equal(sfs_rename(t->fs, a, "f", a, "f2", 0), 0);
	assert_absent(t->fs, a, "f");
	assert_int_equal(ino_of(t->fs, a, "f2"), f);
	/* over an existing file: it goes */
	assert_int_equal(sfs_rename(t->fs, a, "f2", a, "g", 0), 0);
	assert_int_equal(ino_of(t->fs, a, "g"), f);
	assert_int_equal(sfs_getattr(t->fs, g, &at), -ESTALE);
	assert_content(t->fs, f, "F");
	/* over a file that has another link: it loses one */
	h = sfs_test_mknod(t->fs, b, "h");
	assert_int_equal(sfs_link(t->fs, h, b, "h2", NULL), 0);
	assert_int_equal(sfs_rename(t->fs, a, "g", b, "h", 0), 0);
	assert_int_equal(ino_of(t->fs, b, "h"), f);
	assert_int_equal(nlink_of(t->fs, h), 1);
	assert_int_equal(ino_of(t->fs, b, "h2"), h);
	assert_absent(t->fs, a, "g");
	sfs_tfs_cycle(t);

	/* a directory to another parent: ".." and both link counts */
	x = sfs_test_mkdir(t->fs, a, "x");
	sfs_test_mknod(t->fs, x, "inside");
	assert_int_equal(nlink_of(t->fs, a), 3);
	assert_int_equal(sfs_rename(t->fs, a, "x", b, "x", 0), 0);
	assert_int_equal(nlink_of(t->fs, a), 2);
	assert_int_equal(nlink_of(t->fs, b), 3);
	assert_int_equal(ino_of(t->fs, x, ".."), b);
	assert_int_equal(ftype_of(t->fs, b, "x"), SFS_FT_DIR);
	/* a directory over an empty directory elsewhere */
	e = sfs_test_mkdir(t->fs, a, "empty");
	assert_int_equal(sfs_rename(t->fs, b, "x", a, "empty", 0), 0);
	assert_int_equal(sfs_getattr(t->fs, e, &at), -ESTALE);
	assert_int_equal(ino_of(t->fs, a, "empty"), x);
	assert_int_equal(ino_of(t->fs, x, ".."), a);
	assert_int_equal(nlink_of(t->fs, a), 3);
	assert_int_equal(nlink_of(t->fs, b), 2);
	/* a directory over an empty directory in the same parent */
	y = sfs_test_mkdir(t->fs, a, "y");
	assert_int_equal(nlink_of(t->fs, a), 4);
	assert_int_equal(sfs_rename(t->fs, a, "y", a, "empty", 0), -ENOTEMPTY);
	assert_int_equal(sfs_unlink(t->fs, x, "inside"), 0);
	assert_int_equal(sfs_rename(t->fs, a, "y", a, "empty", 0), 0);
	assert_int_equal(sfs_getattr(t->fs, x, &at), -ESTALE);
	assert_int_equal(nlink_of(t->fs, a), 3);
	assert_int_equal(ino_of(t->fs, a, "empty"), y);
	assert_absent(t->fs, a, "y");
	sfs_tfs_cycle(t);
	assert_int_equal(nlink_of(t->fs, ROOT), root_links);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_namei_rename_errors(void **state)
{
	struct sfs_tfs *t = tfs_new(1024);
	sfs_ino_t a, b, c, f, full, lf, gone;
	struct sfs_inode *held;
	struct sfs_attr at;

	(void)state;
	a = sfs_test_mkdir(t->fs, ROOT, "a");
	b = sfs_test_mkdir(t->fs, a, "b");
	c = sfs_test_mkdir(t->fs, b, "c");
	f = sfs_test_mknod(t->fs, ROOT, "f");
	full = sfs_test_mkdir(t->fs, ROOT, "full");
	sfs_test_mknod(t->fs, full, "x");
	lf = ino_of(t->fs, ROOT, "lost+found");

	assert_int_equal(sfs_rename(t->fs, ROOT, "nope", ROOT, "x", 0),
			 -ENOENT);
	assert_int_equal(sfs_rename(t->fs, f, "x", ROOT, "y", 0), -ENOTDIR);
	assert_int_equal(sfs_rename(t->fs, ROOT, "a", ROOT, "f", 0), -ENOTDIR);
	assert_int_equal(sfs_rename(t->fs, ROOT, "f", ROOT, "a", 0), -EISDIR);
	assert_int_equal(sfs_rename(t->fs, ROOT, "a", ROOT, "full", 0),
			 -ENOTEMPTY);
	/* into its own subtree */
	assert_int_equal(sfs_rename(t->fs, ROOT, "a", c, "a", 0), -EINVAL);
	assert_int_equal(sfs_rename(t->fs, ROOT, "a", a, "a2", 0), -EINVAL);
	assert_int_equal(sfs_rename(t->fs, a, "b", c, "b", 0), -EINVAL);
	/* over an ancestor: it is not empty */
	assert_int_equal(sfs_rename(t->fs, b, "c", ROOT, "a", 0), -ENOTEMPTY);
	assert_int_equal(sfs_rename(t->fs, ROOT, ".", ROOT, "x", 0), -EBUSY);
	assert_int_equal(sfs_rename(t->fs, ROOT, "f", ROOT, "..", 0), -EBUSY);
	assert_int_equal(sfs_rename(t->fs, ROOT, "f", ROOT, "g", 0x80),
			 -EINVAL);
	assert_int_equal(sfs_rename(t->fs, ROOT, "f", ROOT, "g",
				    SFS_RENAME_EXCHANGE | SFS_RENAME_NOREPLACE),
			 -EINVAL);
	/* the root's lost+found stays */
	assert_int_equal(sfs_rename(t->fs, ROOT, "lost+found", a, "lf", 0),
			 -EPERM);
	sfs_test_mkdir(t->fs, ROOT, "emptydir");
	assert_int_equal(
	    sfs_rename(t->fs, ROOT, "emptydir", ROOT, "lost+found", 0), -EPERM);
	assert_int_equal(ino_of(t->fs, ROOT, "lost+found"), lf);
	/* a removed directory still referenced takes no new names */
	gone = ino_of(t->fs, ROOT, "emptydir");
	sfs_lock(t->fs);
	assert_int_equal(sfs_iget(t->fs, gone, &held), 0);
	sfs_unlock(t->fs);
	assert_int_equal(sfs_rmdir(t->fs, ROOT, "emptydir"), 0);
	assert_int_equal(nlink_of(t->fs, gone), 0);
	assert_int_equal(sfs_mknod(t->fs, gone, "x", SFS_S_IFREG, 0, 0, 0, &at),
			 -ENOENT);
	assert_int_equal(sfs_rename(t->fs, ROOT, "f", gone, "f", 0), -ENOENT);
	sfs_lock(t->fs);
	sfs_iput(t->fs, held);
	sfs_unlock(t->fs);
	assert_int_equal(sfs_getattr(t->fs, gone, &at), -ESTALE);
	/* nothing moved */
	assert_int_equal(ino_of(t->fs, ROOT, "a"), a);
	assert_int_equal(ino_of(t->fs, a, "b"), b);
	assert_int_equal(ino_of(t->fs, b, "c"), c);
	assert_int_equal(ino_of(t->fs, c, ".."), b);
	assert_int_equal(ino_of(t->fs, ROOT, "f"), f);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_namei_rename_noop_and_noreplace(void **state)
{
	struct sfs_tfs *t = tfs_new(4096);
	sfs_ino_t f, g;

	(void)state;
	f = sfs_test_mknod(t->fs, ROOT, "f");
	g = sfs_test_mknod(t->fs, ROOT, "g");
	assert_int_equal(sfs_link(t->fs, f, ROOT, "f2", NULL), 0);
	/* same name, same directory: nothing happens */
	assert_int_equal(sfs_rename(t->fs, ROOT, "f", ROOT, "f", 0), 0);
	assert_int_equal(ino_of(t->fs, ROOT, "f"), f);
	/* two links of one inode: POSIX says nothing happens */
	assert_int_equal(sfs_rename(t->fs, ROOT, "f", ROOT, "f2", 0), 0);
	assert_int_equal(ino_of(t->fs, ROOT, "f"), f);
	assert_int_equal(ino_of(t->fs, ROOT, "f2"), f);
	assert_int_equal(nlink_of(t->fs, f), 2);
	/* NOREPLACE */
	assert_int_equal(
	    sfs_rename(t->fs, ROOT, "f", ROOT, "g", SFS_RENAME_NOREPLACE),
	    -EEXIST);
	assert_int_equal(ino_of(t->fs, ROOT, "g"), g);
	assert_int_equal(
	    sfs_rename(t->fs, ROOT, "f", ROOT, "h", SFS_RENAME_NOREPLACE), 0);
	assert_int_equal(ino_of(t->fs, ROOT, "h"), f);
	assert_absent(t->fs, ROOT, "f");
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_namei_rename_exchange(void **state)
{
	struct sfs_tfs *t = tfs_new(1024);
	sfs_ino_t a, b, f, g, d, sub;

	(void)state;
	a = sfs_test_mkdir(t->fs, ROOT, "a");
	b = sfs_test_mkdir(t->fs, ROOT, "b");
	f = sfs_test_mknod(t->fs, a, "f");
	g = sfs_test_mknod(t->fs, b, "g");
	d = sfs_test_mkdir(t->fs, b, "d");
	sub = sfs_test_mkdir(t->fs, d, "sub");

	/* two files in different directories */
	assert_int_equal(sfs_rename(t->fs, a, "f", b, "g", SFS_RENAME_EXCHANGE),
			 0);
	assert_int_equal(ino_of(t->fs, a, "f"), g);
	assert_int_equal(ino_of(t->fs, b, "g"), f);
	/* a file and a directory across parents: types, "..", counts */
	assert_int_equal(nlink_of(t->fs, a), 2);
	assert_int_equal(nlink_of(t->fs, b), 3);
	assert_int_equal(sfs_rename(t->fs, a, "f", b, "d", SFS_RENAME_EXCHANGE),
			 0);
	assert_int_equal(ino_of(t->fs, a, "f"), d);
	assert_int_equal(ino_of(t->fs, b, "d"), g);
	assert_int_equal(ftype_of(t->fs, a, "f"), SFS_FT_DIR);
	assert_int_equal(ftype_of(t->fs, b, "d"), SFS_FT_REG);
	assert_int_equal(ino_of(t->fs, d, ".."), a);
	assert_int_equal(nlink_of(t->fs, a), 3);
	assert_int_equal(nlink_of(t->fs, b), 2);
	/* two directories in one parent */
	sfs_test_mkdir(t->fs, a, "e");
	assert_int_equal(sfs_rename(t->fs, a, "f", a, "e", SFS_RENAME_EXCHANGE),
			 0);
	assert_int_equal(ino_of(t->fs, a, "e"), d);
	assert_int_equal(nlink_of(t->fs, a), 4);
	sfs_tfs_cycle(t);
	/* errors: missing target, a directory under itself */
	assert_int_equal(
	    sfs_rename(t->fs, a, "e", b, "none", SFS_RENAME_EXCHANGE), -ENOENT);
	assert_int_equal(sfs_rename(t->fs, ROOT, "a", sub, "x", 0), -EINVAL);
	sfs_test_mknod(t->fs, sub, "leaf");
	assert_int_equal(
	    sfs_rename(t->fs, ROOT, "a", sub, "leaf", SFS_RENAME_EXCHANGE),
	    -EINVAL);
	assert_int_equal(
	    sfs_rename(t->fs, d, "sub", ROOT, "a", SFS_RENAME_EXCHANGE),
	    -EINVAL);
	/* a directory with a file of the root, both ways round */
	sfs_test_mknod(t->fs, ROOT, "rootfile");
	assert_int_equal(
	    sfs_rename(t->fs, d, "sub", ROOT, "rootfile", SFS_RENAME_EXCHANGE),
	    0);
	assert_int_equal(ino_of(t->fs, ROOT, "rootfile"), sub);
	assert_int_equal(ino_of(t->fs, sub, ".."), ROOT);
	assert_int_equal(nlink_of(t->fs, d), 2);
	sfs_tfs_cycle(t);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_namei_times(void **state)
{
	struct sfs_tfs *t = tfs_new(4096);
	struct sfs_attr in = {0}, a;
	sfs_ino_t d, f;

	(void)state;
	d = sfs_test_mkdir(t->fs, ROOT, "d");
	f = sfs_test_mknod(t->fs, d, "f");
	in.mtime.tv_sec = 1000;
	in.atime.tv_sec = 1000;
	assert_int_equal(
	    sfs_setattr(t->fs, d, &in, SFS_SET_MTIME | SFS_SET_ATIME, &a), 0);
	assert_int_equal(a.mtime.tv_sec, 1000);
	sfs_test_mknod(t->fs, d, "g");
	a = getattr_(t->fs, d);
	assert_true(a.mtime.tv_sec > 1000);
	assert_int_equal(sfs_setattr(t->fs, d, &in, SFS_SET_MTIME, &a), 0);
	assert_int_equal(sfs_unlink(t->fs, d, "g"), 0);
	assert_true(getattr_(t->fs, d).mtime.tv_sec > 1000);
	assert_int_equal(sfs_setattr(t->fs, d, &in, SFS_SET_MTIME, &a), 0);
	assert_int_equal(sfs_rename(t->fs, d, "f", d, "f2", 0), 0);
	assert_true(getattr_(t->fs, d).mtime.tv_sec > 1000);
	assert_true(getattr_(t->fs, f).ctime.tv_sec > 1000);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* Setgid directories hand down their group, and the bit to subdirs. */
static void test_namei_setgid_dir(void **state)
{
	struct sfs_tfs *t = tfs_new(4096);
	struct sfs_attr a;
	sfs_ino_t d;

	(void)state;
	assert_int_equal(sfs_mkdir(t->fs, ROOT, "g", 02775, 0, 500, &a), 0);
	d = a.ino;
	assert_int_equal(a.mode & 07777, 02775);
	assert_int_equal(
	    sfs_mknod(t->fs, d, "f", SFS_S_IFREG | 0644, 0, 1000, 1000, &a), 0);
	assert_int_equal(a.gid, 500);
	assert_int_equal(a.mode & 02000, 0);
	assert_int_equal(sfs_mkdir(t->fs, d, "sub", 0755, 1000, 1000, &a), 0);
	assert_int_equal(a.gid, 500);
	assert_int_equal(a.mode & 07777, 02755);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* Fill the filesystem with one file's data until no block is left. */
static sfs_ino_t fill_fs(struct sfs_fs *fs)
{
	static char chunk[64 * 1024];
	uint64_t off = 0;
	size_t done;
	sfs_ino_t f;
	int rc;

	f = sfs_test_mknod(fs, ROOT, "filler");
	for (size_t len = sizeof(chunk); len >= 1024; len /= 2) {
		do {
			done = 0;
			rc = sfs_write(fs, f, off, chunk, len, &done);
			off += done;
		} while (rc == 0);
		assert_int_equal(rc, -ENOSPC);
	}
	return f;
}

/* No free block: mkdir and slow symlinks fail whole, leaving no inode. */
static void test_namei_enospc(void **state)
{
	struct sfs_tfs *t = tfs_new(1024);
	struct sfs_statfs st0, st1;
	char target[100];
	struct sfs_attr a;

	(void)state;
	fill_fs(t->fs);
	assert_int_equal(sfs_statfs(t->fs, &st0), 0);
	assert_int_equal(sfs_mkdir(t->fs, ROOT, "d", 0755, 0, 0, &a), -ENOSPC);
	memset(target, 't', sizeof(target) - 1);
	target[sizeof(target) - 1] = '\0';
	assert_int_equal(sfs_symlink(t->fs, ROOT, "slow", target, 0, 0, &a),
			 -ENOSPC);
	assert_absent(t->fs, ROOT, "d");
	assert_absent(t->fs, ROOT, "slow");
	/* under a journal, freed blocks return at its commit */
	assert_int_equal(sfs_fs_sync(t->fs), 0);
	assert_int_equal(sfs_statfs(t->fs, &st1), 0);
	assert_int_equal(st1.inodes_free, st0.inodes_free);
	assert_int_equal(st1.blocks_free, st0.blocks_free);
	/* what needs no block still works */
	assert_int_equal(sfs_symlink(t->fs, ROOT, "fast", "x", 0, 0, &a), 0);
	sfs_test_mknod(t->fs, ROOT, "empty");
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_namei_readonly(void **state)
{
	struct sfs_tfs *t = tfs_new(4096);
	struct sfs_attr a;
	sfs_ino_t f;

	(void)state;
	f = sfs_test_mknod(t->fs, ROOT, "f");
	sfs_tfs_close(t);
	t->fs = sfs_test_open(t->img, "ro");
	assert_int_equal(sfs_lookup(t->fs, ROOT, "f", &a), 0);
	assert_int_equal(sfs_mknod(t->fs, ROOT, "g", SFS_S_IFREG, 0, 0, 0, &a),
			 -EROFS);
	assert_int_equal(sfs_mkdir(t->fs, ROOT, "d", 0755, 0, 0, &a), -EROFS);
	assert_int_equal(sfs_unlink(t->fs, ROOT, "f"), -EROFS);
	assert_int_equal(sfs_rename(t->fs, ROOT, "f", ROOT, "g", 0), -EROFS);
	assert_int_equal(sfs_link(t->fs, f, ROOT, "g", &a), -EROFS);
	assert_int_equal(sfs_symlink(t->fs, ROOT, "s", "f", 0, 0, &a), -EROFS);
	assert_int_equal(sfs_rmdir(t->fs, ROOT, "lost+found"), -EROFS);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_namei_lookup),
	    cmocka_unit_test(test_namei_name_lengths),
	    cmocka_unit_test(test_namei_mknod_types),
	    cmocka_unit_test(test_namei_mkdir_rmdir_links),
	    cmocka_unit_test(test_namei_many_subdirs),
	    cmocka_unit_test(test_namei_symlinks),
	    cmocka_unit_test(test_namei_hard_links),
	    cmocka_unit_test(test_namei_unlink_open_file),
	    cmocka_unit_test(test_namei_kernel_lookups_hold_unlinked),
	    cmocka_unit_test(test_namei_rename_replace),
	    cmocka_unit_test(test_namei_rename_errors),
	    cmocka_unit_test(test_namei_rename_noop_and_noreplace),
	    cmocka_unit_test(test_namei_rename_exchange),
	    cmocka_unit_test(test_namei_times),
	    cmocka_unit_test(test_namei_setgid_dir),
	    cmocka_unit_test(test_namei_enospc),
	    cmocka_unit_test(test_namei_readonly),
	};

	return cmocka_run_group_tests_name("namei", tests, NULL, NULL);
}
