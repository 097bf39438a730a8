/*
 * t_htree.c - the images mke2fs makes with its defaults (dir_index on) and
 * the htree directories the kernel writes, through a FUSE mount.
 *
 * Part 1, ext2 and ext3 as plain `mke2fs -t TYPE` makes them: simfs
 * mounts them, creates, renames and removes files (and a few
 * subdirectories) in a directory of many blocks, which simfs indexes as
 * it outgrows one block; umount, e2fsck -fn clean;
 * mounted again, the directory holds exactly the expected names.
 *
 * Part 2, ext2 at 4 KiB blocks and ext3 at mke2fs's default for a small
 * image: the kernel's ext4 driver (read-write loop mount) creates 2000
 * names in one directory, which so gets an htree index (the inode's index
 * flag, read with debugfs); simfs finds and stats every name, removes,
 * adds and renames some, keeping the index (the flag stays set); umount,
 * e2fsck -fn clean; the kernel then finds exactly the expected names.
 * Part 2 is skipped, saying so, only when loop mounting is impossible on
 * this machine.
 *
 * Part 3, ext4 as mke2fs makes it without metadata_csum, and here
 * without 64bit and flex_bg too (t_ext4img keeps those): simfs creates
 * 6000 names in one directory, which it indexes; e2fsck -fn clean; the
 * kernel reads them all (that last step only where loop mounting works).
 *
 * usage: t_htree SIMFS_BINARY
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define INDEX_FL 0x1000 /* i_flags: directory has an htree index */

/* readdir dir: exactly the names in want (besides the dots), and stat
 * works on each.  Reports one check. */
static void check_names(const char *dir, GHashTable *want, const char *when)
{
	GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
	DIR *d = opendir(dir);
	struct dirent *de;
	GHashTableIter it;
	gpointer key;
	int extra = 0, missing = 0, dup = 0, badstat = 0;

	if (!d) {
		H_OK(false, "%s: opendir %s: %s", when, dir, strerror(errno));
		g_hash_table_destroy(seen);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!g_hash_table_contains(want, de->d_name)) {
			if (extra++ < 5)
				h_diag("%s: unexpected name %s", when,
				       de->d_name);
			continue;
		}
		if (g_hash_table_contains(seen, de->d_name))
			dup++;
		g_hash_table_add(seen, g_hash_table_lookup(want, de->d_name));
	}
	g_hash_table_iter_init(&it, want);
	while (g_hash_table_iter_next(&it, &key, NULL)) {
		struct stat st;

		if (!g_hash_table_contains(seen, key) && missing++ < 5)
			h_diag("%s: %s missing from readdir", when,
			       (char *)key);
		if (fstatat(dirfd(d), key, &st, AT_SYMLINK_NOFOLLOW) < 0 &&
		    badstat++ < 5)
			h_diag("%s: stat %s: %s", when, (char *)key,
			       strerror(errno));
	}
	closedir(d);
	H_OK(!extra && !missing && !dup && !badstat,
	     "%s: readdir and stat find exactly the %u names (%d extra, %d "
	     "missing, %d twice, %d stat failures)",
	     when, g_hash_table_size(want), extra, missing, dup, badstat);
	g_hash_table_destroy(seen);
}

static void __attribute__((format(printf, 2, 3)))
want_add(GHashTable *want, const char *fmt, ...)
{
	va_list ap;
	char *name;

	va_start(ap, fmt);
	name = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_hash_table_add(want, name);
}

/* i_flags of path in img (debugfs), or -1. */
static long dir_flags(const char *img, const char *path)
{
	char *cmd = g_strdup_printf("stat %s", path);
	char *out = NULL, *p;
	long flags = -1;

	if (h_runl(&out, NULL, "debugfs", "-R", cmd, img, NULL) == 0 &&
	    (p = strstr(out, "Flags: 0x")) != NULL)
		flags = strtol(p + strlen("Flags: 0x"), NULL, 16);
	g_free(out);
	g_free(cmd);
	return flags;
}

static int mke2fs(const char *img, const char *type, const char *bs)
{
	char *err = NULL;
	int rc;

	unlink(img);
	if (bs)
		rc = h_runl(NULL, &err, "mke2fs", "-F", "-q", "-t", type, "-b",
			    bs, img, "64M", NULL);
	else
		rc = h_runl(NULL, &err, "mke2fs", "-F", "-q", "-t", type, img,
			    "64M", NULL);
	if (rc)
		h_diag("mke2fs -t %s: %s", type, err ? err : "?");
	g_free(err);
	return rc;
}

/* Part 1: simfs alone on mke2fs's default image of type. */
static void default_image(const char *type)
{
	char *img = h_path("%s.img", type), *mnt = h_path("%s-mnt", type);
	char *dir = h_path("%s-mnt/d", type);
	GHashTable *want =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	char *when = g_strdup_printf("%s defaults", type);
	int bad = 0;

	if (mke2fs(img, type, NULL) != 0 || h_mount(img, mnt, NULL) != 0) {
		H_OK(false, "%s: mke2fs and simfs mount", when);
		goto out;
	}
	H_SYS(mkdir(dir, 0755), "%s: mkdir", when);
	for (unsigned i = 0; i < 400; i++) {
		char *p =
		    g_strdup_printf("%s/entry-%04u-with-a-longer-name", dir, i);

		bad += h_write_file(p, p, i % 7, 0644) != 0;
		g_free(p);
		want_add(want, "entry-%04u-with-a-longer-name", i);
	}
	for (unsigned i = 0; i < 10; i++) {
		char *p = g_strdup_printf("%s/subdir-%u", dir, i);

		bad += mkdir(p, 0755) != 0;
		g_free(p);
		want_add(want, "subdir-%u", i);
	}
	for (unsigned i = 0; i < 400; i += 4) {
		char *from = g_strdup_printf("%s/entry-%04u-with-a-longer-name",
					     dir, i + 1);
		char *to = g_strdup_printf("%s/renamed-%04u", dir, i + 1);
		char *gone = g_strdup_printf("%s/entry-%04u-with-a-longer-name",
					     dir, i + 2);

		bad += rename(from, to) != 0;
		bad += unlink(gone) != 0;
		g_hash_table_remove(want, strrchr(from, '/') + 1);
		g_hash_table_remove(want, strrchr(gone, '/') + 1);
		want_add(want, "renamed-%04u", i + 1);
		g_free(from);
		g_free(to);
		g_free(gone);
	}
	H_EQ(bad, 0, "%s: 410 creates, 100 renames, 100 removes", when);
	check_names(dir, want, when);
	H_OK(h_umount(mnt) == 0, "%s: umount", when);
	H_OK(h_fsck_clean(img, NULL), "%s: e2fsck -fn clean", when);
	{
		long flags = dir_flags(img, "/d");

		H_OK(flags >= 0 && (flags & INDEX_FL),
		     "%s: simfs indexed the directory as it outgrew a block "
		     "(flags 0x%lx)",
		     when, flags);
	}
	if (h_mount(img, mnt, NULL) == 0) {
		char *again = g_strdup_printf("%s, remounted", when);

		check_names(dir, want, again);
		g_free(again);
		H_OK(h_umount(mnt) == 0, "%s: umount again", when);
	} else {
		H_OK(false, "%s: mount again", when);
	}
out:
	unlink(img);
	g_hash_table_destroy(want);
	g_free(when);
	g_free(dir);
	g_free(mnt);
	g_free(img);
}

/*
 * Part 3: simfs builds a large htree on an ext4 image mke2fs made (with
 * the features simfs supports): 6000 names in one directory, e2fsck -fn
 * clean, and (when loop mounting works) the kernel finds every name.
 */
static void simfs_ext4_htree(bool kernel)
{
	char *img = h_path("s-ext4.img"), *mnt = h_path("s-ext4-mnt");
	char *kmnt = h_path("s-ext4-kmnt");
	char *dir = g_strdup_printf("%s/big", mnt);
	char *kdir = g_strdup_printf("%s/big", kmnt);
	GHashTable *want =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	char *err = NULL;
	long flags;
	int bad = 0;

	unlink(img);
	if (h_runl(NULL, &err, "mke2fs", "-F", "-q", "-t", "ext4", "-O",
		   "^64bit,^metadata_csum,^metadata_csum_seed,^orphan_file,"
		   "^flex_bg",
		   img, "64M", NULL) != 0 ||
	    h_mount(img, mnt, NULL) != 0) {
		H_OK(false, "ext4: mke2fs and simfs mount: %s", err ? err : "");
		goto out;
	}
	H_SYS(mkdir(dir, 0755), "ext4: mkdir");
	for (unsigned i = 0; i < 6000; i++) {
		char *p = g_strdup_printf("%s/simfs-htree-name-%05u", dir, i);

		bad += h_write_file(p, "", 0, 0644) != 0;
		g_free(p);
		want_add(want, "simfs-htree-name-%05u", i);
	}
	for (unsigned i = 0; i < 6000; i += 7) {
		char *p = g_strdup_printf("%s/simfs-htree-name-%05u", dir, i);

		bad += unlink(p) != 0;
		g_hash_table_remove(want, strrchr(p, '/') + 1);
		g_free(p);
	}
	H_EQ(bad, 0,
	     "ext4: simfs creates 6000 names in one directory and "
	     "removes 858");
	check_names(dir, want, "ext4: simfs");
	H_OK(h_umount(mnt) == 0, "ext4: simfs umount");
	flags = dir_flags(img, "/big");
	H_OK(flags >= 0 && (flags & INDEX_FL),
	     "ext4: the directory is indexed (flags 0x%lx)", flags);
	H_OK(h_fsck_clean(img, NULL), "ext4: e2fsck -fn clean");
	if (!kernel)
		goto out;
	g_clear_pointer(&err, g_free);
	if (h_kmount_type(img, kmnt, "ext4", &err) != 0) {
		H_OK(false, "ext4: kernel mount: %s", err ? err : "?");
		goto out;
	}
	check_names(kdir, want, "ext4: the kernel reads simfs's htree");
	H_OK(h_kumount(kmnt) == 0, "ext4: kernel umount");
out:
	unlink(img);
	g_hash_table_destroy(want);
	g_free(err);
	g_free(kdir);
	g_free(dir);
	g_free(kmnt);
	g_free(mnt);
	g_free(img);
}

/* Part 2: a directory the kernel indexed, changed by simfs. */
static void kernel_htree(const char *type, const char *bs)
{
	char *img = h_path("k-%s.img", type), *mnt = h_path("k-%s-mnt", type);
	char *kmnt = h_path("k-%s-kmnt", type);
	char *dir = g_strdup_printf("%s/big", mnt);
	char *kdir = g_strdup_printf("%s/big", kmnt);
	GHashTable *want =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	char *when =
	    g_strdup_printf("%s%s%s", type, bs ? " -b " : "", bs ? bs : "");
	char *err = NULL;
	long flags;
	int bad = 0;

	if (mke2fs(img, type, bs) != 0) {
		H_OK(false, "%s: mke2fs", when);
		goto out;
	}
	if (h_kmount_opts(img, kmnt, "ext4", "loop", &err) != 0) {
		H_OK(false, "%s: kernel read-write loop mount: %s", when,
		     err ? err : "?");
		goto out;
	}
	bad += mkdir(kdir, 0755) != 0;
	for (unsigned i = 0; i < 2000; i++) {
		char *p = g_strdup_printf("%s/kernel-made-name-%05u", kdir, i);

		bad += h_write_file(p, "", 0, 0644) != 0;
		g_free(p);
		want_add(want, "kernel-made-name-%05u", i);
	}
	H_EQ(bad, 0, "%s: the kernel creates 2000 names", when);
	H_OK(h_kumount(kmnt) == 0, "%s: kernel umount", when);
	flags = dir_flags(img, "/big");
	H_OK(flags >= 0 && (flags & INDEX_FL),
	     "%s: the kernel indexed the directory (flags 0x%lx)", when, flags);

	if (h_mount(img, mnt, NULL) != 0) {
		H_OK(false, "%s: simfs mount", when);
		goto out;
	}
	check_names(dir, want, "simfs reads the kernel's htree");
	bad = 0;
	for (unsigned i = 0; i < 2000; i += 5) {
		char *p = g_strdup_printf("%s/kernel-made-name-%05u", dir, i);

		bad += unlink(p) != 0;
		g_hash_table_remove(want, strrchr(p, '/') + 1);
		g_free(p);
	}
	for (unsigned i = 0; i < 300; i++) {
		char *p = g_strdup_printf("%s/simfs-added-%04u", dir, i);

		bad += h_write_file(p, "x", 1, 0644) != 0;
		g_free(p);
		want_add(want, "simfs-added-%04u", i);
	}
	for (unsigned i = 1; i < 2000; i += 10) {
		char *from =
		    g_strdup_printf("%s/kernel-made-name-%05u", dir, i);
		char *to = g_strdup_printf("%s/moved-%05u", dir, i);

		bad += rename(from, to) != 0;
		g_hash_table_remove(want, strrchr(from, '/') + 1);
		want_add(want, "moved-%05u", i);
		g_free(from);
		g_free(to);
	}
	H_EQ(bad, 0, "%s: simfs removes 400, adds 300, renames 200", when);
	check_names(dir, want, "simfs after its changes");
	H_OK(h_umount(mnt) == 0, "%s: simfs umount", when);
	flags = dir_flags(img, "/big");
	H_OK(flags >= 0 && (flags & INDEX_FL),
	     "%s: the directory is still indexed (flags 0x%lx)", when, flags);
	H_OK(h_fsck_clean(img, NULL), "%s: e2fsck -fn clean", when);
	g_clear_pointer(&err, g_free);
	if (h_kmount_type(img, kmnt, "ext4", &err) != 0) {
		H_OK(false, "%s: kernel read-only mount: %s", when,
		     err ? err : "?");
		goto out;
	}
	check_names(kdir, want, "the kernel reads simfs's changes");
	H_OK(h_kumount(kmnt) == 0, "%s: kernel umount", when);
out:
	unlink(img);
	g_hash_table_destroy(want);
	g_free(err);
	g_free(when);
	g_free(kdir);
	g_free(dir);
	g_free(kmnt);
	g_free(mnt);
	g_free(img);
}

int main(int argc, char **argv)
{
	double t0;
	char *why = NULL;

	h_init(argc, argv);
	t0 = h_now();
	default_image("ext2");
	default_image("ext3");
	if (h_loop_possible(&why)) {
		kernel_htree("ext2", "4096");
		kernel_htree("ext3", NULL);
		simfs_ext4_htree(true);
	} else {
		simfs_ext4_htree(false);
		h_diag("SKIP kernel part: loop mounting is impossible here "
		       "(%s)",
		       why ? why : "?");
	}
	g_free(why);
	h_diag("%.1f s", h_now() - t0);
	return h_done();
}
