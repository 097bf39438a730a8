/*
 * t_badinput.c - bad input to `simfs mount` and `simfs mkfs`, and images
 * made by mke2fs.
 *
 * Each refusal must: exit non-zero, give a one-line reason on stderr
 * (naming the feature where a feature is the reason), leave nothing
 * mounted, leave no daemon behind, and leave the image bytes unchanged
 * (XXH3 before/after).  Cases: wrong magic, an unknown incompat feature
 * bit, a known but unsupported feature (quota), metadata_csum set
 * without its checksum type, 64bit with a bad descriptor size, a
 * truncated image, an empty file, a missing file, an image that is already
 * mounted, a small text file ("not an ext2/3/4 image"), `-o bogus=1`,
 * `-o mem=12Q`, `-o alloc=bogus`, `-o mem=0`, `-o commit=-1` (the range
 * in the message), `-o rmp=7200` and `-o comit=5` ("did you mean"), a
 * mount point that is already a mount; `simfs umount` of a directory that
 * does not exist; mkfs with bad sizes, block sizes,
 * inode sizes, inode ratios and reserve percentages (the target file
 * untouched, or not created), and over an existing filesystem without -F.  Then
 * an image made by `mke2fs -t ext2 -b 4096 -I 256 -O
 * none,sparse_super,filetype,large_file, ext_attr` (and a 1 KiB-block /
 * 128-byte-inode variant) mounts, works and stays e2fsck clean, and one made by
 * plain `mke2fs -t ext4` mounts read-only before its first read-write
 * mount (its inode tables are not zeroed yet), the image untouched.
 *
 * usage: t_badinput SIMFS_BINARY
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

#define SB_OFF 1024
#define SB_MAGIC (SB_OFF + 0x38)
#define SB_COMPAT (SB_OFF + 0x5C)
#define SB_INCOMPAT (SB_OFF + 0x60)
#define SB_RO_COMPAT (SB_OFF + 0x64)

static char *good; /* a fresh simfs image, never mounted */
static int ncase;
static bool image_busy; /* the case's image is mounted elsewhere on purpose */

static bool copy_file(const char *from, const char *to)
{
	return h_runl(NULL, NULL, "cp", "--sparse=always", from, to, NULL) == 0;
}

static bool patch_u32(const char *path, off_t off, uint32_t clear, uint32_t set)
{
	int fd = open(path, O_RDWR);
	uint8_t b[4];
	uint32_t v;
	bool ok;

	if (fd < 0)
		return false;
	ok = pread(fd, b, 4, off) == 4;
	v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	    (uint32_t)b[3] << 24;
	v = (v & ~clear) | set;
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
	ok = ok && pwrite(fd, b, 4, off) == 4;
	close(fd);
	return ok;
}

/* stderr must be exactly one non-empty line */
static bool one_line(const char *err)
{
	char *t = g_strstrip(g_strdup(err ? err : ""));
	bool ok = *t && !strchr(t, '\n');

	g_free(t);
	return ok;
}

static bool contains_any(const char *s, const char *const *any)
{
	if (!any)
		return true;
	for (; *any; any++)
		if (s && strstr(s, *any))
			return true;
	return false;
}

static bool no_daemon(const char *img)
{
	double end = h_now() + 3 * h_time_scale();

	while (h_find_process(img) && h_now() < end)
		usleep(50000);
	return h_find_process(img) == 0;
}

/*
 * simfs mount [-o opts] img must be refused as described at the top.
 * want: NULL, or strings of which stderr must contain one.
 */
static void expect_refused(const char *what, const char *img, const char *opts,
			   const char *const *want)
{
	char *mnt = h_path("m%d", ++ncase);
	char *err = NULL, *line;
	int e0 = 0, e1 = 0;
	uint64_t h0 = 0, h1 = 0;
	bool exists = access(img, F_OK) == 0;
	int rc;

	h_diag("--- mount: %s", what);
	if (exists)
		h0 = h_hash_file(img, &e0);
	mkdir(mnt, 0755);
	if (opts)
		rc = h_runl(NULL, &err, h_simfs(), "mount", "-o", opts, img,
			    mnt, NULL);
	else
		rc = h_runl(NULL, &err, h_simfs(), "mount", img, mnt, NULL);
	h_track(mnt); /* if it did mount after all, clean up later */
	line = g_strstrip(g_strdup(err ? err : ""));
	h_diag("stderr: %s", line);
	H_OK(rc != 0 && rc < 128, "%s: refused with exit %d", what, rc);
	H_OK(one_line(err), "%s: one-line reason on stderr", what);
	if (want)
		H_OK(contains_any(err, want), "%s: the reason names %s%s", what,
		     want[0], want[1] ? " (or an equivalent)" : "");
	H_OK(!h_is_mounted(mnt), "%s: nothing mounted", what);
	if (h_is_mounted(mnt))
		h_umount(mnt);
	if (!image_busy)
		H_OK(no_daemon(img), "%s: no daemon left", what);
	if (exists && !image_busy) {
		h1 = h_hash_file(img, &e1);
		H_OK(!e0 && !e1 && h0 == h1, "%s: image bytes unchanged", what);
	}
	g_free(line);
	g_free(err);
	g_free(mnt);
}

static char *variant(const char *name)
{
	char *p = h_path("%s.img", name);

	if (!copy_file(good, p))
		h_bail("cp %s %s failed", good, p);
	return p;
}

static void mount_cases(void)
{
	static const char *const i31[] = {"FEATURE_I31", "0x80000000",
					  "80000000", "bit 31", NULL};
	static const char *const quota[] = {"quota", NULL};
	static const char *const b64[] = {"64bit", NULL};
	static const char *const csum[] = {"metadata_csum", NULL};
	static const char *const bogus[] = {"bogus", NULL};
	static const char *const mem[] = {"mem", "12Q", NULL};
	static const char *const alloc[] = {"alloc", "bogus", NULL};
	static const char *const memsmall[] = {"mem", NULL};
	static const char *const notext[] = {"not an ext2/3/4 image", NULL};
	static const char *const commit[] = {"commit (a decimal integer, 1 to",
					     NULL};
	static const char *const rpm[] = {"did you mean rpm?", NULL};
	static const char *const comit[] = {"did you mean commit?", NULL};
	char *p;
	int fd;

	p = variant("magic");
	patch_u32(p, SB_MAGIC, 0xffff, 0x1234);
	expect_refused("wrong magic", p, NULL, NULL);
	g_free(p);

	p = variant("incompat31");
	patch_u32(p, SB_INCOMPAT, 0, 0x80000000u);
	expect_refused("unknown incompat feature bit 31", p, NULL, i31);
	g_free(p);

	p = variant("quota");
	patch_u32(p, SB_RO_COMPAT, 0, 0x100);
	expect_refused("ro_compat quota", p, NULL, quota);
	g_free(p);

	p = variant("64bit");
	patch_u32(p, SB_INCOMPAT, 0, 0x80);
	/* s_desc_size stays 0: refused for it, naming 64bit */
	expect_refused("incompat 64bit, descriptor size 0", p, NULL, b64);
	g_free(p);

	p = variant("csum");
	patch_u32(p, SB_RO_COMPAT, 0, 0x400);
	expect_refused("ro_compat metadata_csum", p, NULL, csum);
	g_free(p);

	p = variant("truncated");
	H_SYS(truncate(p, 512 * 1024), "truncate a copy to 512 KiB");
	expect_refused("image shorter than its filesystem", p, NULL, NULL);
	g_free(p);

	p = h_path("empty.img");
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	close(fd);
	expect_refused("empty file", p, NULL, NULL);
	g_free(p);

	p = h_path("text.img");
	H_EQ(h_write_file(p, "root:x:0:0:root:/root:/bin/bash\n", 32, 0644), 0,
	     "a small text file");
	expect_refused("a small file that is no image", p, NULL, notext);
	g_free(p);

	p = h_path("missing.img");
	expect_refused("missing image file", p, NULL, NULL);
	H_OK(access(p, F_OK) != 0, "missing image: still not there");
	g_free(p);

	p = variant("opts");
	expect_refused("-o bogus=1", p, "bogus=1", bogus);
	expect_refused("-o mem=12Q", p, "mem=12Q", mem);
	expect_refused("-o alloc=bogus", p, "alloc=bogus", alloc);
	expect_refused("-o mem=0", p, "mem=0", memsmall);
	expect_refused("-o commit=-1", p, "commit=-1", commit);
	expect_refused("-o rmp=7200", p, "device=hdd,rmp=7200", rpm);
	expect_refused("-o comit=5", p, "comit=5", comit);
	g_free(p);

	/* already mounted */
	{
		char *m1 = h_path("busy1"), *f;
		int n;

		p = variant("busy");
		h_diag("--- mount: image already mounted");
		if (h_mount(p, m1, NULL) != 0)
			h_bail("mounting a good image failed");
		n = h_count_processes(p);
		image_busy = true;
		expect_refused("image already mounted", p, NULL, NULL);
		image_busy = false;
		H_EQ(h_count_processes(p), n, "still just the first daemon");
		f = g_build_filename(m1, "alive", NULL);
		H_OK(h_write_file(f, "yes", 3, 0644) == 0,
		     "the first mount still works");
		H_OK(h_umount(m1) == 0, "umount the first mount");
		H_OK(h_fsck_clean(p, NULL), "e2fsck -fn clean");
		g_free(f);
		g_free(m1);
		g_free(p);
	}

	/* a mount point that is already a mount: refused, not stacked */
	{
		char *m1 = h_path("stack1"), *p2, *err = NULL;
		int rc, n;

		p = variant("stack-a");
		p2 = variant("stack-b");
		h_diag("--- mount: onto a live mount point");
		if (h_mount(p, m1, NULL) != 0)
			h_bail("mounting a good image failed");
		n = h_count_processes(p2);
		rc = h_runl(NULL, &err, h_simfs(), "mount", p2, m1, NULL);
		H_OK(rc != 0 && rc < 128, "second mount onto %s refused (%d)",
		     m1, rc);
		H_OK(one_line(err) && strstr(err, "already a mount point"),
		     "says it is already a mount point: %s", err);
		H_EQ(h_count_processes(p2), n,
		     "no daemon for the second image");
		H_OK(h_umount(m1) == 0, "one umount unmounts it");
		H_OK(h_runl(NULL, NULL, "mountpoint", "-q", m1, NULL) != 0,
		     "nothing is left mounted at %s", m1);
		H_OK(h_fsck_clean(p, NULL), "e2fsck -fn clean");
		g_free(err);
		g_free(m1);
		g_free(p2);
		g_free(p);
	}
}

/* simfs mkfs ARGS... (NULL-terminated) must be refused */
static void expect_mkfs_refused(const char *what, const char *const *args,
				bool fresh_only)
{
	char *existing = h_path("mk-existing-%d.img", ++ncase);
	char *fresh = h_path("mk-fresh-%d.img", ncase);
	struct h_rng r;
	uint8_t *junk = g_malloc(1 << 20);
	uint64_t h0, h1;
	int e = 0;

	h_diag("--- mkfs: %s", what);
	h_rng_seed(&r, (uint64_t)ncase);
	h_fill(&r, junk, 1 << 20);
	h_write_file(existing, junk, 1 << 20, 0644);
	h0 = h_hash_buf(junk, 1 << 20);
	for (int pass = fresh_only ? 1 : 0; pass < 2; pass++) {
		const char *target = pass ? fresh : existing;
		GPtrArray *a = g_ptr_array_new();
		char *err = NULL, *line;
		int rc;
		const char *const *s = args;

		g_ptr_array_add(a, (gpointer)h_simfs());
		g_ptr_array_add(a, "mkfs");
		if (!pass)
			g_ptr_array_add(a, "-F");
		/* args: options, then "@" where the image goes, then size */
		for (; *s; s++)
			g_ptr_array_add(
			    a, (gpointer)(strcmp(*s, "@") ? *s : target));
		g_ptr_array_add(a, NULL);
		rc = h_run(NULL, &err, (const char *const *)a->pdata);
		line = g_strstrip(g_strdup(err ? err : ""));
		h_diag("stderr: %s", line);
		H_OK(rc != 0 && rc < 128, "mkfs %s (%s file): refused, exit %d",
		     what, pass ? "new" : "existing", rc);
		H_OK(one_line(err), "mkfs %s (%s file): one-line reason", what,
		     pass ? "new" : "existing");
		if (!pass) {
			struct stat st = {0};

			/* compare the size first: hashing a file that a bad
			 * mkfs grew to terabytes would take hours */
			if (stat(existing, &st) == 0 && st.st_size == 1 << 20)
				h1 = h_hash_file(existing, &e);
			else
				h1 = ~h0;
			H_OK(!e && h0 == h1,
			     "mkfs %s: existing file "
			     "unchanged (size %lld)",
			     what, (long long)st.st_size);
		} else {
			H_OK(access(fresh, F_OK) != 0,
			     "mkfs %s: no file "
			     "created",
			     what);
		}
		g_free(line);
		g_free(err);
		g_ptr_array_free(a, TRUE);
	}
	unlink(existing);
	unlink(fresh);
	g_free(existing);
	g_free(fresh);
	g_free(junk);
}

static void mkfs_cases(void)
{
#define MK(what, ...)                                                          \
	do {                                                                   \
		const char *const args_[] = {__VA_ARGS__, NULL};               \
		expect_mkfs_refused(what, args_, false);                       \
	} while (0)
	MK("block size 3000", "-b", "3000", "@", "64M");
	MK("block size 8192", "-b", "8192", "@", "64M");
	MK("block size 512", "-b", "512", "@", "64M");
	MK("block size abc", "-b", "abc", "@", "64M");
	MK("inode size 100", "-I", "100", "@", "64M");
	MK("inode size 384", "-I", "384", "@", "64M");
	MK("inode size larger than a block", "-b", "1024", "-I", "2048", "@",
	   "64M");
	MK("bytes per inode 100", "-i", "100", "@", "64M");
	MK("bytes per inode 0", "-i", "0", "@", "64M");
	MK("reserve 60%", "-m", "60", "@", "64M");
	MK("reserve -1%", "-m", "-1", "@", "64M");
	MK("size 0", "@", "0");
	MK("size 1K", "@", "1K");
	MK("size 12Q", "@", "12Q");
	MK("size abc", "@", "abc");
	MK("size -5M", "@", "-5M");
	MK("more than 2^32 blocks (1 KiB blocks, 5T)", "-b", "1024", "@", "5T");
	/* also more than the host's ext4 takes in one file (16 TiB) */
	MK("more than 2^32 blocks (1 KiB blocks, 20T)", "-b", "1024", "@",
	   "20T");
	{
		/* (an existing file gives the size, so only a new one) */
		const char *const args_[] = {"@", NULL};

		expect_mkfs_refused("no size for a new file", args_, true);
	}
#undef MK
	{
		/* an existing filesystem is overwritten only with -F */
		char *p = variant("nof"), *err = NULL;
		int e0 = 0, e1 = 0;
		uint64_t h0 = h_hash_file(p, &e0), h1;
		int rc;

		h_diag("--- mkfs: over an existing filesystem without -F");
		rc = h_runl(NULL, &err, h_simfs(), "mkfs", p, "64M", NULL);
		h_diag("stderr: %s", g_strstrip(err));
		H_OK(rc != 0 && rc < 128,
		     "mkfs over an existing filesystem "
		     "without -F: refused (%d)",
		     rc);
		H_OK(one_line(err), "mkfs without -F: one-line reason");
		h1 = h_hash_file(p, &e1);
		H_OK(!e0 && !e1 && h0 == h1, "mkfs without -F: image "
					     "unchanged");
		g_free(err);
		rc = h_runl(NULL, &err, h_simfs(), "mkfs", "-F", "--seed", "7",
			    p, "64M", NULL);
		H_EQ(rc, 0, "with -F it is overwritten");
		H_OK(h_fsck_clean(p, NULL), "and e2fsck -fn clean");
		g_free(err);
		g_free(p);
	}
	{
		char *o = NULL, *e = NULL;
		int rc;

		rc = h_runl(&o, &e, h_simfs(), "frobnicate", NULL);
		H_OK(rc != 0 && rc < 128, "unknown subcommand refused (%d)",
		     rc);
		g_free(o);
		g_free(e);
		rc = h_runl(&o, &e, h_simfs(), "umount", "/nonexistent/simfs-x",
			    NULL);
		H_OK(rc == 1 && e && strstr(e, "does not exist"),
		     "umount of a missing directory: it does not exist (%d, "
		     "%s)",
		     rc, e ? e : "");
		g_free(o);
		g_free(e);
		rc = h_runl(&o, &e, h_simfs(), "mount", NULL);
		H_OK(rc != 0 && rc < 128,
		     "mount without arguments refused "
		     "(%d)",
		     rc);
		g_free(o);
		g_free(e);
	}
}

/* An image mke2fs made: mount, use, umount, fsck, remount, check. */
static void mke2fs_image(const char *what, const char *const *mke2fs_args)
{
	char *img = h_path("%s.img", what), *mnt = h_path("%s-mnt", what);
	GPtrArray *a = g_ptr_array_new();
	char *err = NULL;
	uint8_t *data = g_malloc(5 << 20);
	struct h_rng r;
	GPtrArray *before, *after;
	struct stat st;
	int rc;

	h_diag("--- %s image", what);
	for (const char *const *s = mke2fs_args; *s; s++)
		g_ptr_array_add(a, (gpointer)*s);
	g_ptr_array_add(a, img);
	g_ptr_array_add(a, "64M");
	g_ptr_array_add(a, NULL);
	rc = h_run(NULL, &err, (const char *const *)a->pdata);
	g_ptr_array_free(a, TRUE);
	if (rc != 0)
		h_bail("mke2fs failed: %s", err);
	g_free(err);
	if (!H_OK(h_mount(img, mnt, NULL) == 0, "%s: simfs mounts it", what))
		goto out;
#define M(rel) g_build_filename(mnt, rel, NULL)
	H_OK(stat(M("lost+found"), &st) == 0 && S_ISDIR(st.st_mode),
	     "%s: lost+found is there", what);
	h_rng_seed(&r, 99);
	h_fill(&r, data, 5 << 20);
	H_SYS(mkdir(M("dir"), 0755), "%s: mkdir", what);
	H_SYS(mkdir(M("dir/sub"), 0700), "%s: mkdir sub", what);
	H_EQ(h_write_file(M("dir/big"), data, 5 << 20, 0644), 0,
	     "%s: write 5 MiB", what);
	for (int i = 0; i < 100; i++) {
		char rel[32];

		snprintf(rel, sizeof(rel), "dir/sub/f%03d", i);
		if (h_write_file(M(rel), data + i * 1000, (size_t)i * 37, 0600))
			H_OK(false, "%s: write %s", what, rel);
	}
	H_SYS(symlink("dir/big", M("fast")), "%s: fast symlink", what);
	{
		char t[300];

		memset(t, 't', sizeof(t) - 1);
		t[sizeof(t) - 1] = '\0';
		H_SYS(symlink(t, M("slow")), "%s: slow symlink", what);
	}
	H_SYS(link(M("dir/big"), M("biglink")), "%s: hard link", what);
	H_SYS(setxattr(M("dir/big"), "user.t", "val", 3, 0), "%s: xattr", what);
	H_SYS(rename(M("dir/sub/f000"), M("moved")), "%s: rename", what);
	for (int i = 50; i < 100; i++) {
		char rel[32];

		snprintf(rel, sizeof(rel), "dir/sub/f%03d", i);
		if (unlink(M(rel)) < 0)
			H_SYS(-1, "%s: unlink %s", what, rel);
	}
	H_SYS(truncate(M("dir/big"), 3 << 20), "%s: truncate", what);
	before = h_tree_scan(mnt);
	H_OK(h_umount(mnt) == 0, "%s: umount", what);
	H_OK(h_fsck_clean(img, NULL), "%s: e2fsck -fn clean after use", what);
	if (!H_OK(h_mount(img, mnt, NULL) == 0, "%s: remount", what))
		goto out_tree;
	after = h_tree_scan(mnt);
	H_EQ(h_tree_compare(before, after, "before", "after", H_CMP_NLINK), 0,
	     "%s: same tree after remount", what);
	H_OK(h_hash_file(M("biglink"), &rc) == h_hash_buf(data, 3 << 20) &&
		 rc == 0,
	     "%s: bytes right", what);
	h_tree_free(after);
	H_OK(h_umount(mnt) == 0, "%s: umount", what);
	H_OK(h_fsck_clean(img, NULL), "%s: e2fsck -fn clean", what);
#undef M
out_tree:
	h_tree_free(before);
out:
	g_free(data);
	g_free(img);
	g_free(mnt);
}

int main(int argc, char **argv)
{
	static const char *const mk_ext2[] = {
	    "mke2fs",
	    "-F",
	    "-q",
	    "-t",
	    "ext2",
	    "-b",
	    "4096",
	    "-I",
	    "256",
	    "-O",
	    "none,sparse_super,filetype,large_file,ext_attr",
	    NULL};
	static const char *const mk_ext2_1k[] = {
	    "mke2fs",
	    "-F",
	    "-q",
	    "-t",
	    "ext2",
	    "-b",
	    "1024",
	    "-I",
	    "128",
	    "-O",
	    "none,sparse_super,filetype,large_file,ext_attr",
	    NULL};
	double t0 = h_now();
	char *ext4;

	h_init(argc, argv);
	good = h_path("good.img");
	if (h_mkfs(good, "64M", NULL) != 0)
		h_bail("simfs mkfs of a good image failed");
	H_OK(h_fsck_clean(good, NULL), "a fresh simfs image is e2fsck clean");

	mount_cases();
	mkfs_cases();

	mke2fs_image("mke2fs-ext2-4k", mk_ext2);
	mke2fs_image("mke2fs-ext2-1k", mk_ext2_1k);

	ext4 = h_path("ext4.img");
	if (h_runl(NULL, NULL, "mke2fs", "-F", "-q", "-t", "ext4", ext4, "64M",
		   NULL) != 0)
		h_bail("mke2fs -t ext4 failed");
	{
		/* mke2fs leaves the inode tables for lazy zeroing; simfs
		 * zeroes them at its first read-write mount, and a read-only
		 * mount before that works, as the kernel's, writing nothing */
		char *mnt = h_path("m-ext4-ro");
		struct stat st;
		int e0 = 0, e1 = 0;
		uint64_t h0 = h_hash_file(ext4, &e0), h1;

		h_diag("--- mount: plain mke2fs -t ext4 image, read-only");
		if (H_OK(h_mount(ext4, mnt, "ro") == 0,
			 "plain mke2fs -t ext4 image: mounts read-only "
			 "before its first read-write mount")) {
			char *lf = g_build_filename(mnt, "lost+found", NULL);
			char *nd = g_build_filename(mnt, "new", NULL);

			H_OK(stat(lf, &st) == 0 && S_ISDIR(st.st_mode),
			     "read-only: lost+found is a directory");
			H_OK(mkdir(nd, 0755) < 0 && errno == EROFS,
			     "read-only: mkdir fails with EROFS");
			h_umount(mnt);
			g_free(nd);
			g_free(lf);
		}
		h1 = h_hash_file(ext4, &e1);
		H_OK(!e0 && !e1 && h0 == h1,
		     "read-only: image bytes unchanged");
		H_OK(h_fsck_clean(ext4, NULL),
		     "the mke2fs -t ext4 image is e2fsck clean");
		g_free(mnt);
	}
	H_OK(h_fsck_clean(good, NULL), "the good image is still clean");
	h_diag("t_badinput took %.1f s", h_now() - t0);
	g_free(ext4);
	return h_done();
}
