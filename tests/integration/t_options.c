/*
 * t_options.c - the mount options do what they say.
 *
 *  - explicit defaults (alloc=blockmap,data=none): a seeded tree written,
 *    read back after remount;
 *  - mem=1M: a cache far smaller than the data (every write must be
 *    written back under pressure): 24 MiB + a tree, bytes right after
 *    remount;
 *  - direct (O_DIRECT on the image): the same;
 *  - ro: everything reads back; create, mkdir, write, truncate, chmod,
 *    setxattr, unlink, rename all fail with EROFS; the image bytes are
 *    unchanged after umount (XXH3);
 *  - FUSE's own options pass through: -o allow_other,nodev mounts and
 *    works.
 * Each ends with umount + e2fsck -fn clean.
 *
 * usage: t_options SIMFS_BINARY
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define MiB (1024 * 1024)

static char *img, *mnt;

static void write_tree(const char *root, uint64_t seed, size_t big)
{
	struct h_rng r;
	char *p;
	uint8_t *buf = g_malloc(big > 65536 ? big : 65536);

	h_rng_seed(&r, seed);
	p = g_build_filename(root, "d", NULL);
	mkdir(p, 0755);
	g_free(p);
	for (int i = 0; i < 200; i++) {
		size_t n = h_below(&r, 65536);

		p = g_strdup_printf("%s/d/f%03d", root, i);
		h_fill(&r, buf, n);
		if (h_write_file(p, buf, n, 0644) != 0)
			h_diag("write %s: %s", p, strerror(errno));
		g_free(p);
	}
	p = g_build_filename(root, "big", NULL);
	h_fill(&r, buf, big);
	if (h_write_file(p, buf, big, 0600) != 0)
		h_diag("write %s: %s", p, strerror(errno));
	g_free(p);
	g_free(buf);
}

/* write with opts, umount, fsck, remount with opts, compare */
static void roundtrip(const char *opts, const char *sub, size_t big)
{
	char *root = g_build_filename(mnt, sub, NULL);
	GPtrArray *before, *after;

	h_diag("--- -o %s", opts);
	if (!H_OK(h_mount(img, mnt, opts) == 0, "mount -o %s", opts))
		goto out;
	H_SYS(mkdir(root, 0755), "-o %s: mkdir", opts);
	write_tree(root, g_str_hash(opts), big);
	before = h_tree_scan(root);
	H_OK(before && before->len == 202, "-o %s: tree written", opts);
	H_OK(h_umount(mnt) == 0, "-o %s: umount", opts);
	H_OK(h_fsck_clean(img, NULL), "-o %s: e2fsck -fn clean", opts);
	if (H_OK(h_mount(img, mnt, opts) == 0, "-o %s: remount", opts)) {
		after = h_tree_scan(root);
		H_EQ(h_tree_compare(before, after, "written", "remounted",
				    H_CMP_NLINK),
		     0, "-o %s: the same tree and bytes after remount", opts);
		h_tree_free(after);
		H_OK(h_umount(mnt) == 0, "-o %s: umount", opts);
	}
	h_tree_free(before);
out:
	g_free(root);
}

static void readonly(void)
{
	char *f, *d;
	uint64_t h0, h1;
	int e0, e1, fd;
	GPtrArray *t;
	struct stat st;

	h_diag("--- -o ro");
	h0 = h_hash_file(img, &e0);
	if (!H_OK(h_mount(img, mnt, "ro") == 0, "mount -o ro"))
		return;
	t = h_tree_scan(mnt);
	H_OK(t && t->len > 400, "everything reads (%u entries)",
	     t ? t->len : 0);
	h_tree_free(t);
	f = g_build_filename(mnt, "defaults/big", NULL);
	d = g_build_filename(mnt, "defaults/d", NULL);
	H_ERR(open(g_build_filename(mnt, "new", NULL), O_CREAT | O_WRONLY,
		   0644),
	      EROFS, "ro: create");
	H_ERR(mkdir(g_build_filename(mnt, "newdir", NULL), 0755), EROFS,
	      "ro: mkdir");
	H_ERR(open(f, O_WRONLY), EROFS, "ro: open for writing");
	H_ERR(truncate(f, 0), EROFS, "ro: truncate");
	H_ERR(chmod(f, 0777), EROFS, "ro: chmod");
	H_ERR(setxattr(f, "user.x", "v", 1, 0), EROFS, "ro: setxattr");
	H_ERR(unlink(f), EROFS, "ro: unlink");
	H_ERR(rename(f, g_build_filename(mnt, "moved", NULL)), EROFS,
	      "ro: rename");
	H_ERR(symlink("x", g_build_filename(d, "l", NULL)), EROFS,
	      "ro: symlink");
	fd = open(f, O_RDONLY);
	H_OK(fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0,
	     "ro: reading works");
	if (fd >= 0)
		close(fd);
	H_OK(h_umount(mnt) == 0, "ro: umount");
	h1 = h_hash_file(img, &e1);
	H_OK(!e0 && !e1 && h0 == h1, "ro: image bytes unchanged");
	H_OK(h_fsck_clean(img, NULL), "ro: e2fsck -fn clean");
	g_free(f);
	g_free(d);
}

int main(int argc, char **argv)
{
	h_init(argc, argv);
	img = h_path("fs.img");
	mnt = h_path("mnt");
	if (h_mkfs(img, "512M", NULL) != 0)
		h_bail("simfs mkfs failed");

	roundtrip("alloc=blockmap,data=none", "defaults", 4 * MiB);
	roundtrip("mem=1M", "mem1m", 24 * MiB);
	roundtrip("direct", "direct", 8 * MiB);
	roundtrip("direct,mem=2M", "directsmall", 8 * MiB);
	roundtrip("allow_other,nodev", "fuseopts", MiB);
	readonly();
	return h_done();
}
