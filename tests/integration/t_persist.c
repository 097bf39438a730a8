/*
 * t_persist.c - a seeded random tree survives unmount, e2fsck and remount,
 * and the kernel's own ext2 driver sees the same tree.
 *
 * The tree (under tree/ of a fresh image): nested directories with random
 * byte-string names, files of random sizes written in random pieces
 * (including the sizes where ext2 switches to the indirect, double- and
 * triple-... mapping levels for the block size in use, and sparse files),
 * hard links, fast and slow symlinks, random modes, owners and mtimes, and
 * user.* xattrs; a quarter of the files are preallocated first with
 * fallocate(2) (unwritten extents on the extent-mapped presets, which
 * must succeed; EOPNOTSUPP on block maps).  What was written is recorded as the
 * expectation (names, types, modes, owners, link counts, sizes, content hashes,
 * link targets).  Then:
 *   1. while mounted: the tree read back equals the expectation;
 *   2. umount, e2fsck -fn clean, remount: equal again (+ xattrs, mtimes);
 *   3. umount, e2fsck clean, `mount -o loop,ro -t ext2` (the kernel):
 *      equal again, bytes included; umount; e2fsck still clean.
 * Step 3 is skipped, saying so, only when loop mounting is impossible here
 * (checked with an image made by mke2fs): then the rest still counts.
 *
 * usage: t_persist SIMFS_BINARY [SEED [BLOCKSIZE [PRESET]]]
 *
 * PRESET is a `simfs mkfs --preset` name, the image then mounted with
 * preset=PRESET; or "mke2fs-ext4" / "mke2fs-ext3": the image as plain
 * `mke2fs -t ext4` / `-t ext3 -b BLOCKSIZE` makes it (this e2fsprogs's
 * defaults: metadata_csum, 64bit, flex_bg for ext4), mounted with
 * preset=ext4 / preset=ext3.
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

struct xa {
	char *path;  /* relative to tree/ */
	char *name;
	GBytes *value;
};

struct mt {
	char *path;
	time_t mtime;
};

static struct h_rng rng;
static uint32_t bs = 4096;
static GPtrArray *expect;     /* struct h_entry *, the expectation */
static GPtrArray *dirs;       /* struct h_entry * of directories */
static GPtrArray *files;      /* struct h_entry * of regular files */
static GHashTable *used;      /* relative paths taken */
static GHashTable *origin;    /* hard-link name -> the original's entry */
static GArray *xattrs;        /* struct xa */
static GArray *mtimes;        /* struct mt */
static uint64_t total_bytes;
static bool extents;          /* the preset maps files with extents */
static int fallocated;        /* files preallocated (or refused) */
static const char *base;      /* <mnt>/tree */

static char *full(const char *rel)
{
	return g_build_filename(base, rel, NULL);
}

/* A fresh random name under dir: 1..60 bytes of printable ASCII, space,
 * and UTF-8 bytes; never "." or ".."; unique. */
static char *new_path(const char *dir)
{
	static const char cs[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"
				 "RSTUVWXYZ0123456789._-+=,~ @#";

	for (;;) {
		GString *s = g_string_new(NULL);
		size_t len = 1 + h_below(&rng, h_below(&rng, 8) ? 20 : 60);
		char *rel;

		while (s->len < len) {
			if (h_below(&rng, 15) == 0)
				g_string_append(s, "\xc3\xa9"); /* é */
			else
				g_string_append_c(
					s, cs[h_below(&rng, sizeof(cs) - 1)]);
		}
		if (!strcmp(s->str, ".") || !strcmp(s->str, "..")) {
			g_string_free(s, TRUE);
			continue;
		}
		rel = *dir ? g_build_filename(dir, s->str, NULL)
			   : g_strdup(s->str);
		g_string_free(s, TRUE);
		if (g_hash_table_contains(used, rel)) {
			g_free(rel);
			continue;
		}
		g_hash_table_add(used, g_strdup(rel));
		return rel;
	}
}

static struct h_entry *add_entry(const char *rel, mode_t mode)
{
	struct h_entry *e = g_new0(struct h_entry, 1);

	e->path = g_strdup(rel);
	e->mode = mode;
	e->nlink = S_ISDIR(mode) ? 2 : 1;
	g_ptr_array_add(expect, e);
	return e;
}

static struct h_entry *parent_of(const char *rel)
{
	char *dir = g_path_get_dirname(rel);
	struct h_entry *p = NULL;

	for (guint i = 0; i < dirs->len; i++) {
		struct h_entry *d = dirs->pdata[i];

		if (!strcmp(d->path, dir))
			p = d;
	}
	g_free(dir);
	return p; /* NULL for the top */
}

static const char *random_dir(void)
{
	if (dirs->len == 0 || h_below(&rng, 6) == 0)
		return "";
	return ((struct h_entry *)dirs->pdata[h_below(&rng, dirs->len)])
		->path;
}

static void make_dir(void)
{
	char *rel = new_path(random_dir());
	char *p = full(rel);
	struct h_entry *par = parent_of(rel);

	if (mkdir(p, 0755) < 0)
		h_bail("mkdir %s: %s", p, strerror(errno));
	g_ptr_array_add(dirs, add_entry(rel, S_IFDIR | 0755));
	if (par)
		par->nlink++;
	g_free(rel);
	g_free(p);
}

static uint64_t pick_size(bool *sparse)
{
	uint64_t ptrs = bs / 4;
	uint64_t edges[] = {
		12 * bs, 12 * bs + 1, 12 * bs - 1,
		(12 + ptrs) * bs, (12 + ptrs) * bs + 1,
	};
	unsigned r = (unsigned)h_below(&rng, 100);

	*sparse = false;
	if (r < 8)
		return 0;
	if (r < 50)
		return 1 + h_below(&rng, 8192);
	if (r < 80)
		return 1 + h_below(&rng, 128 * 1024);
	if (r < 91)
		return 1 + h_below(&rng, MiB);
	if (r < 96)
		return edges[h_below(&rng, G_N_ELEMENTS(edges))];
	*sparse = true;
	return 1 + h_below(&rng, 16 * MiB);
}

static void make_file(void)
{
	char *rel = new_path(random_dir());
	char *p = full(rel);
	bool sparse;
	uint64_t size = pick_size(&sparse);
	uint8_t *buf = g_malloc0(size ? size : 1);
	struct h_entry *e;
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);

	if (fd < 0)
		h_bail("create %s: %s", p, strerror(errno));
	if (size && h_below(&rng, 4) == 0) {
		/* preallocate (part of it past the end, kept or not): unwritten
		 * extents on extent-mapped presets, refused on block maps */
		int mode = h_below(&rng, 2) ? FALLOC_FL_KEEP_SIZE : 0;
		off_t len = (off_t)(size + h_below(&rng, 3 * bs));
		int rc = fallocate(fd, mode, 0, len);

		if (extents && rc != 0)
			h_bail("fallocate %s: %s", p, strerror(errno));
		if (!extents && (rc == 0 || errno != EOPNOTSUPP))
			h_bail("fallocate %s on a block map: %s", p,
			       rc == 0 ? "succeeded" : strerror(errno));
		fallocated++;
		if (rc == 0 && mode == 0 && ftruncate(fd, (off_t)size) < 0)
			h_bail("ftruncate %s: %s", p, strerror(errno));
	}
	if (sparse) {
		/* a few random chunks; the rest stays a hole */
		int chunks = 1 + (int)h_below(&rng, 8);

		for (int c = 0; c < chunks; c++) {
			uint64_t len = 1 + h_below(&rng, 65536);
			uint64_t off = h_below(&rng, size);

			if (off + len > size)
				len = size - off;
			h_fill(&rng, buf + off, len);
			if (h_pwrite_all(fd, buf + off, len, (off_t)off) < 0)
				h_bail("write %s: %s", p, strerror(errno));
		}
		/* the size is set by the last byte even if it is a hole */
		if (ftruncate(fd, (off_t)size) < 0)
			h_bail("ftruncate %s: %s", p, strerror(errno));
	} else {
		/* random pieces, in order */
		uint64_t off = 0;

		h_fill(&rng, buf, size);
		while (off < size) {
			uint64_t len = 1 + h_below(&rng, h_below(&rng, 2)
								 ? 5000
								 : 300000);

			if (len > size - off)
				len = size - off;
			if (h_pwrite_all(fd, buf + off, len, (off_t)off) < 0)
				h_bail("write %s: %s", p, strerror(errno));
			off += len;
		}
	}
	if (close(fd) < 0)
		h_bail("close %s: %s", p, strerror(errno));
	e = add_entry(rel, S_IFREG | 0644);
	e->size = size;
	e->hash = h_hash_buf(buf, size);
	total_bytes += size;
	g_ptr_array_add(files, e);
	g_free(buf);
	g_free(rel);
	g_free(p);
}

static void make_link(void)
{
	struct h_entry *f = files->pdata[h_below(&rng, files->len)];
	char *rel = new_path(random_dir());
	char *src = full(f->path), *dst = full(rel);
	struct h_entry *e;

	if (link(src, dst) < 0)
		h_bail("link %s %s: %s", src, dst, strerror(errno));
	f->nlink++;
	e = add_entry(rel, f->mode);
	e->size = f->size;
	e->hash = f->hash;
	/* the new name shares f's inode: finish() copies its attributes */
	g_hash_table_insert(origin, e, f);
	g_free(rel);
	g_free(src);
	g_free(dst);
}

static void make_symlink(void)
{
	char *rel = new_path(random_dir());
	char *p = full(rel);
	size_t len = h_below(&rng, 3) ? 1 + h_below(&rng, 59)
				     : 60 + h_below(&rng, 400);
	char *t = g_malloc(len + 1);
	struct h_entry *e;

	for (size_t i = 0; i < len; i++)
		t[i] = (char)('!' + h_below(&rng, 94));
	t[len] = '\0';
	if (symlink(t, p) < 0)
		h_bail("symlink %s: %s", p, strerror(errno));
	e = add_entry(rel, S_IFLNK | 0777);
	e->size = len;
	e->hash = h_hash_buf(t, len);
	e->target = t;
	g_free(rel);
	g_free(p);
}

/* owners, modes, times, xattrs; link counts of hard-linked names */
static void finish(void)
{
	static const mode_t fmodes[] = {0644, 0600, 0755, 0400, 0640,
					04755, 02711, 0777, 0};
	static const mode_t dmodes[] = {0755, 0700, 0750, 01777, 02775, 0555};
	static const uid_t ids[] = {0, 1000, 1001, 65534, 100000};

	for (guint i = 0; i < expect->len; i++) {
		struct h_entry *e = expect->pdata[i];
		char *p = full(e->path);

		if (g_hash_table_contains(origin, e)) {
			/* a hard link: owner/mode/nlink follow the original */
			g_free(p);
			continue;
		}
		e->uid = ids[h_below(&rng, G_N_ELEMENTS(ids))];
		e->gid = ids[h_below(&rng, G_N_ELEMENTS(ids))];
		if (lchown(p, e->uid, e->gid) < 0)
			h_bail("lchown %s: %s", p, strerror(errno));
		if (S_ISREG(e->mode)) {
			struct mt m = {g_strdup(e->path),
				       (time_t)(800000000 +
						h_below(&rng, 1200000000))};
			struct timespec ts[2] = {{m.mtime, 0}, {m.mtime, 0}};

			e->mode = S_IFREG |
				  fmodes[h_below(&rng, G_N_ELEMENTS(fmodes))];
			if (utimensat(AT_FDCWD, p, ts, 0) < 0)
				h_bail("utimensat %s: %s", p, strerror(errno));
			g_array_append_val(mtimes, m);
			if (h_below(&rng, 5) == 0) {
				int n = 1 + (int)h_below(&rng, 3);

				for (int k = 0; k < n; k++) {
					size_t vlen = h_below(&rng, 300);
					char *v = g_malloc(vlen + 1);
					struct xa x;

					h_fill(&rng, v, vlen);
					x.path = g_strdup(e->path);
					x.name = g_strdup_printf("user.k%d.%u",
								 k, i);
					x.value = g_bytes_new_take(v, vlen);
					if (setxattr(p, x.name, v, vlen, 0) < 0)
						h_bail("setxattr %s: %s", p,
						       strerror(errno));
					g_array_append_val(xattrs, x);
				}
			}
		} else if (S_ISDIR(e->mode)) {
			e->mode = S_IFDIR |
				  dmodes[h_below(&rng, G_N_ELEMENTS(dmodes))];
		}
		if (!S_ISLNK(e->mode) && chmod(p, e->mode & 07777) < 0)
			h_bail("chmod %s: %s", p, strerror(errno));
		g_free(p);
	}
	/* hard-linked names mirror their original (every name of an inode
	 * shows its final link count) */
	for (guint i = 0; i < expect->len; i++) {
		struct h_entry *e = expect->pdata[i];
		struct h_entry *o = g_hash_table_lookup(origin, e);

		if (!o)
			continue;
		e->mode = o->mode;
		e->uid = o->uid;
		e->gid = o->gid;
		e->nlink = o->nlink;
	}
	h_tree_sort(expect);
}

/* xattrs and mtimes, as seen under root (a mount's tree/) */
static void check_extras(const char *root, const char *when,
			 bool xattr_supported)
{
	int bad = 0, badt = 0;

	for (guint i = 0; xattr_supported && i < xattrs->len; i++) {
		struct xa *x = &g_array_index(xattrs, struct xa, i);
		char *p = g_build_filename(root, x->path, NULL);
		char buf[512];
		ssize_t n = getxattr(p, x->name, buf, sizeof(buf));
		size_t vlen;
		const void *v = g_bytes_get_data(x->value, &vlen);

		if ((n != (ssize_t)vlen || memcmp(buf, v, vlen)) &&
		    bad++ < 5)
			h_diag("%s: %s %s: got %zd bytes (%s), want %zu",
			       when, x->path, x->name, n,
			       n < 0 ? strerror(errno) : "", vlen);
		g_free(p);
	}
	if (xattr_supported)
		H_EQ(bad, 0, "%s: all %u xattrs read back", when, xattrs->len);
	for (guint i = 0; i < mtimes->len; i++) {
		struct mt *m = &g_array_index(mtimes, struct mt, i);
		char *p = g_build_filename(root, m->path, NULL);
		struct stat st;

		if ((stat(p, &st) < 0 || st.st_mtime != m->mtime) &&
		    badt++ < 5)
			h_diag("%s: %s mtime %lld, want %lld", when, m->path,
			       (long long)st.st_mtime, (long long)m->mtime);
		g_free(p);
	}
	H_EQ(badt, 0, "%s: all %u mtimes read back", when, mtimes->len);
}

static void compare(const char *root, const char *when)
{
	GPtrArray *got = h_tree_scan(root);

	H_OK(got != NULL, "%s: scan", when);
	H_EQ(h_tree_compare(expect, got, "expected", when,
			    H_CMP_NLINK | H_CMP_OWNER),
	     0, "%s: tree equals what was written (%u entries)", when,
	     expect->len);
	h_tree_free(got);
}

/* Can this machine loop-mount an ext2 image at all? */
static bool loop_possible(char **why)
{
	char *img = h_path("probe.img"), *m = h_path("probe-mnt");
	char *err = NULL;
	int rc = h_runl(NULL, &err, "mke2fs", "-F", "-q", "-t", "ext2", img,
			"8M", NULL);
	bool ok = false;

	if (rc == 0) {
		ok = h_kmount(img, m, why) == 0;
		if (ok)
			h_kumount(m);
	} else {
		*why = g_strdup_printf("mke2fs failed: %s", err);
	}
	g_free(err);
	unlink(img);
	g_free(img);
	g_free(m);
	return ok;
}

int main(int argc, char **argv)
{
	uint64_t seed = 1;
	char *img, *mnt, *kmnt, *kbase, *err = NULL;
	char bsarg[16];
	const char *mkfs_args[] = {"-b", bsarg, NULL, NULL, NULL};
	const char *preset = NULL; /* a historical system (argv[4]) */
	const char *mke2fs_type = NULL; /* or mke2fs's image of this type */
	char *mopts = NULL;
	int ndirs, nfiles, nlinks, nsyms;
	double t0 = h_now();
	bool kxattr = true;

	h_init(argc, argv);
	if (argc > 2)
		seed = strtoull(argv[2], NULL, 0);
	if (argc > 3)
		bs = (uint32_t)strtoul(argv[3], NULL, 0);
	if (argc > 4)
		preset = argv[4];
	h_diag("seed %llu, block size %u, preset %s (rerun: %s %s %llu %u%s%s)",
	       (unsigned long long)seed, bs, preset ? preset : "(none)",
	       argv[0], argv[1], (unsigned long long)seed, bs,
	       preset ? " " : "", preset ? preset : "");
	if (preset && g_str_has_prefix(preset, "mke2fs-")) {
		/* mke2fs's own image of that type, mounted as that preset */
		mke2fs_type = preset + strlen("mke2fs-");
		if (strcmp(mke2fs_type, "ext4") != 0 &&
		    strcmp(mke2fs_type, "ext3") != 0)
			h_bail("PRESET must be mke2fs-ext4 or mke2fs-ext3, not "
			       "%s",
			       preset);
		mopts = g_strdup_printf("preset=%s", mke2fs_type);
		extents = strcmp(mke2fs_type, "ext4") == 0;
	} else if (preset) {
		/* the image the preset needs (journal), mounted with it */
		mkfs_args[2] = "--preset";
		mkfs_args[3] = preset;
		mopts = g_strdup_printf("preset=%s", preset);
		extents = strcmp(preset, "ext3i") == 0 ||
			  g_str_has_prefix(preset, "ext4");
	}
	h_rng_seed(&rng, seed);
	snprintf(bsarg, sizeof(bsarg), "%u", bs);
	umask(0);
	img = h_path("fs.img");
	mnt = h_path("mnt");
	kmnt = h_path("kmnt");
	base = g_build_filename(mnt, "tree", NULL);
	kbase = g_build_filename(kmnt, "tree", NULL);
	expect = h_tree_new();
	dirs = g_ptr_array_new();
	files = g_ptr_array_new();
	used = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	origin = g_hash_table_new(g_direct_hash, g_direct_equal);
	xattrs = g_array_new(FALSE, FALSE, sizeof(struct xa));
	mtimes = g_array_new(FALSE, FALSE, sizeof(struct mt));

	if (mke2fs_type) {
		if (h_runl(NULL, &err, "mke2fs", "-F", "-q", "-t", mke2fs_type,
			   "-b", bsarg, img, "256M", NULL) != 0)
			h_bail("mke2fs failed: %s", err ? err : "?");
		g_free(err);
		err = NULL;
	} else if (h_mkfs(img, "256M", mkfs_args) != 0) {
		h_bail("simfs mkfs failed");
	}
	if (h_mount(img, mnt, mopts) != 0)
		h_bail("simfs mount failed");
	if (mkdir(base, 0755) < 0)
		h_bail("mkdir %s: %s", base, strerror(errno));

	ndirs = 40 + (int)h_below(&rng, 30);
	nfiles = 200 + (int)h_below(&rng, 100);
	nlinks = 15 + (int)h_below(&rng, 15);
	nsyms = 30 + (int)h_below(&rng, 30);
	for (int i = 0; i < ndirs; i++)
		make_dir();
	for (int i = 0; i < nfiles; i++)
		make_file();
	for (int i = 0; i < nlinks; i++)
		make_link();
	for (int i = 0; i < nsyms; i++)
		make_symlink();
	finish();
	h_diag("wrote %d dirs, %d files (%.1f MiB, %d fallocated%s), %d hard "
	       "links, %d symlinks, %u xattrs in %.1f s",
	       ndirs, nfiles, total_bytes / (double)MiB, fallocated,
	       extents ? "" : ": refused, block maps", nlinks, nsyms,
	       xattrs->len, h_now() - t0);
	H_OK(fallocated > 0, "some files were preallocated");

	compare(base, "mounted");
	check_extras(base, "mounted", true);
	H_OK(h_umount(mnt) == 0, "umount");
	H_OK(h_fsck_clean(img, NULL), "e2fsck -fn clean");

	if (h_mount(img, mnt, mopts) != 0)
		h_bail("remount failed");
	compare(base, "remounted");
	check_extras(base, "remounted", true);
	H_OK(h_umount(mnt) == 0, "umount after remount");
	H_OK(h_fsck_clean(img, NULL), "e2fsck -fn clean again");

	/* ext2 images through the kernel's ext2 driver, the presets' images
	 * (journal, extents) through ext4's */
	const char *ktype = preset ? "ext4" : "ext2";
	if (h_kmount_type(img, kmnt, ktype, &err) == 0) {
		char probe[8];

		h_diag("kernel %s driver, read-only loop mount", ktype);
		if (getxattr(kbase, "user.none", probe, sizeof(probe)) < 0 &&
		    errno == EOPNOTSUPP) {
			h_diag("SKIP xattr part of the kernel check: this "
			       "kernel's ext2 has no xattr support");
			kxattr = false;
		}
		compare(kbase, preset ? "kernel ext4" : "kernel ext2");
		check_extras(kbase, preset ? "kernel ext4" : "kernel ext2",
			     kxattr);
		H_OK(h_kumount(kmnt) == 0, "kernel umount");
		H_OK(h_fsck_clean(img, NULL), "e2fsck -fn clean after the "
					      "kernel mount");
	} else {
		char *why = NULL;

		if (loop_possible(&why)) {
			H_OK(false, "kernel loop mount of the simfs image "
				    "(an mke2fs image mounts fine): %s",
			     err);
		} else {
			h_diag("SKIP kernel part: loop mounting is impossible "
			       "here: %s",
			       why ? why : "?");
		}
		g_free(why);
	}
	g_free(err);
	h_diag("t_persist took %.1f s", h_now() - t0);
	return h_done();
}
