/*
 * t_ext4img.c - ext4 as mke2fs 1.47 makes it (Debian's mke2fs.conf),
 * through a FUSE mount, then read back by the kernel.
 *
 * For 1 KiB and 4 KiB blocks, twice: `mke2fs -t ext4 -O ^metadata_csum`
 * (64bit, flex_bg, huge_file, dir_nlink, extra_isize, resize_inode, a
 * journal), and mke2fs's full default with metadata_csum (64-byte
 * descriptors carrying checksums, uninitialised groups, inode tables left
 * for lazy zeroing) on an image of 32 or 8 groups, and the ext4 `simfs mkfs
 * -t ext4` makes (the same as mke2fs's default, byte for byte: checksums,
 * uninitialised groups, extent-mapped root, lost+found and journal,
 * flex_bg, 64bit, huge_file, dir_nlink, extra_isize, resize_inode); simfs
 * mounts it, writes a tree of
 * directories and files of random bytes, renames and removes part of it,
 * removes whole directories; the tree seen through simfs is scanned
 * (paths, types, modes, link counts, content hashes); umount, e2fsck -fn
 * clean; mounted by simfs again, the same tree; then the kernel's ext4
 * driver (read-only loop mount) sees exactly that tree too.  The kernel
 * step is skipped, saying so, only when loop mounting is impossible here.
 *
 * usage: t_ext4img SIMFS_BINARY
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NDIRS 16
#define NFILES 40

static int fill_tree(const char *mnt, uint64_t seed)
{
	struct h_rng r;
	int bad = 0;
	static uint8_t buf[300000];

	h_rng_seed(&r, seed);
	for (unsigned d = 0; d < NDIRS; d++) {
		char *dir = g_strdup_printf("%s/dir%02u", mnt, d);

		bad += mkdir(dir, 0755) != 0;
		for (unsigned i = 0; i < NFILES; i++) {
			char *p = g_strdup_printf("%s/file%03u", dir, i);
			size_t n = (size_t)h_below(&r, i % 10 == 0 ? sizeof(buf)
								   : 20000);

			h_fill(&r, buf, n);
			bad += h_write_file(p, buf, n, 0644) != 0;
			g_free(p);
		}
		g_free(dir);
	}
	/* renames across directories, removals, whole directories gone */
	for (unsigned d = 0; d < NDIRS; d++) {
		for (unsigned i = 0; i < NFILES; i++) {
			char *p =
			    g_strdup_printf("%s/dir%02u/file%03u", mnt, d, i);
			char *q = g_strdup_printf("%s/dir%02u/moved%02u-%03u",
						  mnt, (d + 3) % NDIRS, d, i);

			if (i % 4 == 1)
				bad += rename(p, q) != 0;
			else if (i % 5 == 2)
				bad += unlink(p) != 0;
			g_free(q);
			g_free(p);
		}
	}
	for (unsigned d = 0; d + 1 < NDIRS; d += 5) {
		char *cmd = g_strdup_printf("%s/dir%02u", mnt, d);
		char *to = g_strdup_printf("%s/dir%02u/sub-of-%02u", mnt,
					   (d + 1) % NDIRS, d);

		/* a directory moved under another, one level down */
		bad += rename(cmd, to) != 0;
		g_free(to);
		g_free(cmd);
	}
	return bad;
}

/* Who makes the image of one_size. */
enum maker {
	MAKER_MKE2FS,	   /* mke2fs -t ext4 -O ^metadata_csum */
	MAKER_MKE2FS_CSUM, /* mke2fs -t ext4 (metadata_csum) */
	MAKER_SIMFS,	   /* simfs mkfs -t ext4 (metadata_csum) */
};

static void one_size(const char *bs, const char *size, enum maker maker,
		     bool kernel)
{
	static const char *const sfx[] = {"", "-csum", "-simfs"};
	bool csum = maker == MAKER_MKE2FS_CSUM;
	char *img = h_path("ext4-%s%s.img", bs, sfx[maker]);
	char *mnt = h_path("ext4-%s%s-mnt", bs, sfx[maker]);
	char *kmnt = h_path("ext4-%s%s-kmnt", bs, sfx[maker]);
	char *err = NULL, *out = NULL;
	GPtrArray *tree = NULL, *again = NULL, *ktree = NULL;
	int rc;

	unlink(img);
	/* the metadata_csum images are mke2fs's plain default, inode tables
	 * left for lazy zeroing: simfs zeroes them at its first mount */
	if (maker == MAKER_SIMFS)
		rc = h_runl(NULL, &err, h_simfs(), "mkfs", "-t", "ext4", "-b",
			    bs, img, size, NULL);
	else
		rc = h_runl(NULL, &err, "mke2fs", "-F", "-q", "-t", "ext4",
			    "-O", csum ? "metadata_csum" : "^metadata_csum",
			    "-b", bs, img, size, NULL);
	if (rc != 0) {
		H_OK(false, "%s%s: mkfs: %s", bs, sfx[maker], err ? err : "?");
		goto out;
	}
	g_clear_pointer(&err, g_free);
	if (!H_OK(h_mount(img, mnt, NULL) == 0,
		  "%s%s: simfs mounts the ext4 image read-write", bs,
		  sfx[maker]))
		goto out;
	H_EQ(fill_tree(mnt, strtoull(bs, NULL, 10)), 0,
	     "%s: %u directories of %u files written, renamed, removed", bs,
	     NDIRS, NFILES);
	tree = h_tree_scan(mnt);
	H_OK(tree != NULL && tree->len > NDIRS * NFILES / 2,
	     "%s: simfs's tree scanned (%u entries)", bs, tree ? tree->len : 0);
	H_OK(h_umount(mnt) == 0, "%s: simfs umount", bs);
	H_OK(h_fsck_clean(img, &out), "%s: e2fsck -fn clean%s%s", bs,
	     out ? "\n" : "", out ? out : "");
	if (!tree)
		goto out;
	if (!H_OK(h_mount(img, mnt, NULL) == 0, "%s: simfs mounts again", bs))
		goto out;
	again = h_tree_scan(mnt);
	H_EQ(again ? h_tree_compare(tree, again, "before", "after remount",
				    H_CMP_NLINK)
		   : -1,
	     0, "%s: the same tree after a remount", bs);
	H_OK(h_umount(mnt) == 0, "%s: simfs umount again", bs);
	if (!kernel)
		goto out;
	if (h_kmount_type(img, kmnt, "ext4", &err) != 0) {
		H_OK(false, "%s: kernel loop mount: %s", bs, err ? err : "?");
		goto out;
	}
	ktree = h_tree_scan(kmnt);
	H_EQ(ktree ? h_tree_compare(tree, ktree, "simfs", "kernel", H_CMP_NLINK)
		   : -1,
	     0, "%s: the kernel reads every file back", bs);
	H_OK(h_kumount(kmnt) == 0, "%s: kernel umount", bs);
out:
	if (tree)
		h_tree_free(tree);
	if (again)
		h_tree_free(again);
	if (ktree)
		h_tree_free(ktree);
	unlink(img);
	g_free(out);
	g_free(err);
	g_free(kmnt);
	g_free(mnt);
	g_free(img);
}

/* Can this machine loop-mount an ext4 image at all? */
static bool loop_possible(char **why)
{
	char *img = h_path("probe.img"), *m = h_path("probe-mnt");
	bool ok = false;

	if (h_runl(NULL, why, "mke2fs", "-F", "-q", "-t", "ext4", img, "8M",
		   NULL) == 0) {
		g_clear_pointer(why, g_free);
		ok = h_kmount_type(img, m, "ext4", why) == 0;
		if (ok)
			h_kumount(m);
	}
	unlink(img);
	g_free(img);
	g_free(m);
	return ok;
}

int main(int argc, char **argv)
{
	char *why = NULL;
	bool kernel;

	h_init(argc, argv);
	kernel = loop_possible(&why);
	if (!kernel)
		h_diag("SKIP kernel part: loop mounting is impossible here "
		       "(%s)",
		       why ? why : "?");
	one_size("1024", "256M", MAKER_MKE2FS, kernel);
	one_size("4096", "1G", MAKER_MKE2FS, kernel);
	one_size("1024", "256M", MAKER_MKE2FS_CSUM, kernel);
	one_size("4096", "1G", MAKER_MKE2FS_CSUM, kernel);
	one_size("1024", "256M", MAKER_SIMFS, kernel);
	one_size("4096", "1G", MAKER_SIMFS, kernel);
	g_free(why);
	return h_done();
}
