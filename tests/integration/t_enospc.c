/*
 * t_enospc.c - a 16 MiB image filled to the brim, inodes and blocks.
 *
 *  1. inodes (mkfs -i 65536: 256 of them): create empty files until the
 *     create fails; it must fail with ENOSPC and statvfs shows 0 free
 *     inodes; delete a few.
 *  2. blocks: write files of random bytes until a write fails with ENOSPC
 *     (then 4 KiB writes until those fail too); every acknowledged byte is
 *     recorded.  Now: statvfs shows nothing available; a directory, a slow
 *     symlink and an xattr block cannot be had (ENOSPC); a fast symlink and
 *     an empty file can; overwriting allocated bytes works; every file
 *     lists, has the acknowledged size and reads back by hash (the failing
 *     file included: a failed write leaves no bytes past what it
 *     acknowledged).
 *  3. delete some files: the space comes back and a new 2 MiB file fits.
 *  4. umount, e2fsck -fn clean, remount, every file again by hash, umount,
 *     e2fsck clean.
 *  5. the host disk under an image fills (a 12 MiB tmpfs holding a sparse
 *     64 MiB image, 20 MiB written), with no journal, data=ordered,
 *     data=journal and delayed allocation (preset=ext4): see host_full.
 *     The write the host cannot hold fails with ENOSPC (not EROFS) and
 *     simfs sync succeeds; then, with or without room made (the rest
 *     written if so), simfs umount succeeds, the image is clean (e2fsck
 *     -fn) and the file reads back.
 *
 * usage: t_enospc SIMFS_BINARY
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#define KiB 1024
#define MiB (1024 * 1024)
#define MAXF 64

struct dfile {
	char *path;
	uint8_t *data; /* acknowledged content */
	size_t len;
	bool gone;
};

static struct dfile df[MAXF];
static int ndf;
static struct h_rng rng;

static int write_until_full(int fd, struct dfile *f, size_t chunk,
			    size_t limit, int *err)
{
	uint8_t *buf = g_malloc(chunk);

	*err = 0;
	while (f->len < limit) {
		ssize_t w;

		h_fill(&rng, buf, chunk);
		w = pwrite(fd, buf, chunk, (off_t)f->len);
		if (w < 0) {
			*err = errno;
			break;
		}
		if (w == 0) {
			*err = EIO;
			break;
		}
		f->data = g_realloc(f->data, f->len + (size_t)w);
		memcpy(f->data + f->len, buf, (size_t)w);
		f->len += (size_t)w;
	}
	g_free(buf);
	return *err ? -1 : 0;
}

static void verify_all(const char *when)
{
	int bad = 0, n = 0;

	for (int i = 0; i < ndf; i++) {
		struct stat st;
		int err;
		uint64_t h;

		if (df[i].gone)
			continue;
		n++;
		if (stat(df[i].path, &st) < 0 || st.st_size != (off_t)df[i].len) {
			if (bad++ < 5)
				h_diag("%s: %s size %lld, acknowledged %zu",
				       when, df[i].path, (long long)st.st_size,
				       df[i].len);
			continue;
		}
		h = h_hash_file(df[i].path, &err);
		if ((err || h != h_hash_buf(df[i].data, df[i].len)) &&
		    bad++ < 5)
			h_diag("%s: %s content differs from what was "
			       "acknowledged",
			       when, df[i].path);
	}
	H_EQ(bad, 0, "%s: all %d files have their acknowledged bytes", when,
	     n);
}

static int count_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* Read the superblock's s_state (offset 0x3A) and s_feature_incompat
 * (0x60) of img; -1 if it cannot be read. */
static int sb_state(const char *img, uint32_t *incompat)
{
	uint8_t sb[256];
	int fd = open(img, O_RDONLY);
	bool ok = fd >= 0 && pread(fd, sb, sizeof(sb), 1024) == sizeof(sb);

	if (fd >= 0)
		close(fd);
	if (!ok)
		return -1;
	*incompat = sb[0x60] | (uint32_t)sb[0x61] << 8;
	return sb[0x3A] | sb[0x3B] << 8;
}

/*
 * 5. The host disk under the image fills (a 12 MiB tmpfs holding a sparse
 * 64 MiB image, 20 MiB written); opts: the mount's options.  The write the
 * host cannot hold fails with ENOSPC, never EROFS (with delayed allocation
 * too: it places its blocks once the host runs short); simfs sync then
 * succeeds, since what was acknowledged has its room.  With make_room the
 * tmpfs grows to 100 MiB and the rest of the file is written; without it
 * the file keeps what was acknowledged.  Either way simfs umount
 * succeeds, the superblock says clean with nothing to recover, e2fsck -fn
 * passes, and the file reads back (remounted read-only too).
 */
static void host_full(const char *opts, bool make_room)
{
	const char *jargs[] = {"-j", NULL};
	char *hdir = h_path("hostfs"), *img = h_path("hostfs/img");
	char *m = h_path("hostmnt"), *f = h_path("hostmnt/big");
	size_t len = 20 * MiB, done = 0, want;
	uint32_t incompat = 0;
	int fd, st, werr = 0, herr = 0;

	h_diag("--- host disk full, -o %s%s", opts ? opts : "(none)",
	       make_room ? ", then room made" : "");
	if (!H_OK(h_tmpfs(hdir, "12M") == 0, "a 12 MiB tmpfs for the image"))
		goto out;
	if (!H_OK(h_mkfs(img, "64M", opts ? jargs : NULL) == 0,
		  "mkfs a 64 MiB sparse image") ||
	    !H_OK(h_mount(img, m, opts) == 0, "mount it"))
		goto out_tmpfs;
	uint8_t *buf = g_malloc(len);
	h_fill(&rng, buf, len);
	fd = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	H_SYS(fd, "create the file");
	while (fd >= 0 && done < len) {
		ssize_t w = write(fd, buf + done, MIN(len - done, 1 * MiB));
		if (w < 0) {
			werr = errno;
			break;
		}
		done += (size_t)w;
	}
	if (fd >= 0)
		close(fd);
	H_OK(done < len && werr == ENOSPC,
	     "the write the host cannot hold fails with ENOSPC, not EROFS "
	     "(%s, after %zu bytes)", strerror(werr), done);
	H_OK(h_runl(NULL, NULL, h_simfs(), "sync", m, NULL) == 0,
	     "simfs sync succeeds: what was acknowledged has room");
	want = done;
	if (make_room) {
		H_OK(h_runl(NULL, NULL, "mount", "-o", "remount,size=100M",
			    hdir, NULL) == 0,
		     "the tmpfs grows to 100 MiB");
		fd = open(f, O_WRONLY);
		H_OK(fd >= 0 &&
			 pwrite(fd, buf + done, len - done, (off_t)done) ==
			     (ssize_t)(len - done),
		     "the rest of the file is written (%zu bytes)", len - done);
		if (fd >= 0)
			close(fd);
		H_OK(h_runl(NULL, NULL, h_simfs(), "sync", m, NULL) == 0,
		     "simfs sync succeeds");
		want = len;
	}
	H_OK(h_hash_file(f, &herr) == h_hash_buf(buf, want) && !herr,
	     "the file reads back, %zu bytes", want);
	H_OK(h_umount(m) == 0, "simfs umount succeeds");
	st = sb_state(img, &incompat);
	H_OK(st == 1 && !(incompat & 0x4),
	     "the superblock says clean, nothing to recover (%d)", st);
	H_OK(h_fsck_clean(img, NULL), "e2fsck -fn passes the image");
	if (h_mount(img, m, "ro") == 0) {
		H_OK(h_hash_file(f, &herr) == h_hash_buf(buf, want) && !herr,
		     "remounted, the file reads back");
		H_OK(h_umount(m) == 0, "umount");
	} else {
		H_OK(false, "remount read-only");
	}
	g_free(buf);
out_tmpfs:
	H_OK(h_kumount(hdir) == 0, "unmount the tmpfs");
out:
	g_free(hdir);
	g_free(img);
	g_free(m);
	g_free(f);
}

int main(int argc, char **argv)
{
	const char *mkfs_args[] = {"-i", "65536", NULL};
	char *img, *mnt, *idir, *ddir, *p;
	struct statvfs sv;
	int ninodes = 0, err = 0, fd;
	fsblkcnt_t bfree_full;
	double t0 = h_now();
	char slow[200];

	h_init(argc, argv);
	h_rng_seed(&rng, 16);
	img = h_path("fs.img");
	mnt = h_path("mnt");
	idir = g_build_filename(mnt, "inodes", NULL);
	ddir = g_build_filename(mnt, "data", NULL);
	if (h_mkfs(img, "16M", mkfs_args) != 0)
		h_bail("simfs mkfs failed");
	if (h_mount(img, mnt, NULL) != 0)
		h_bail("simfs mount failed");
	H_SYS(statvfs(mnt, &sv), "statvfs");
	h_diag("fresh: %llu/%llu blocks free, %llu/%llu inodes free",
	       (unsigned long long)sv.f_bfree, (unsigned long long)sv.f_blocks,
	       (unsigned long long)sv.f_ffree, (unsigned long long)sv.f_files);
	H_OK(sv.f_files <= 512, "a small inode table (%llu inodes)",
	     (unsigned long long)sv.f_files);
	H_SYS(mkdir(idir, 0755), "mkdir inodes");
	H_SYS(mkdir(ddir, 0755), "mkdir data");

	/* 1. inodes */
	for (;;) {
		p = g_strdup_printf("%s/i%04d", idir, ninodes);
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
		err = errno;
		g_free(p);
		if (fd < 0)
			break;
		close(fd);
		if (++ninodes > 100000)
			break;
	}
	H_EQ(err, ENOSPC, "creating files stops with ENOSPC after %d",
	     ninodes);
	H_OK(statvfs(mnt, &sv) == 0 && sv.f_ffree == 0, "statvfs: 0 free "
							"inodes (%llu)",
	     (unsigned long long)sv.f_ffree);
	H_ERR(mkdir(g_build_filename(mnt, "nodir", NULL), 0755), ENOSPC,
	      "mkdir without inodes: ENOSPC");
	H_ERR(symlink("t", g_build_filename(mnt, "nolink", NULL)), ENOSPC,
	      "symlink without inodes: ENOSPC");
	H_EQ(count_dir(idir), ninodes, "all %d empty files listed", ninodes);
	for (int i = 0; i < 40 && i < ninodes; i++) {
		p = g_strdup_printf("%s/i%04d", idir, i);
		if (unlink(p) < 0)
			H_SYS(-1, "unlink %s", p);
		g_free(p);
	}
	H_OK(statvfs(mnt, &sv) == 0 && sv.f_ffree >= 40,
	     "40 inodes free again (%llu)", (unsigned long long)sv.f_ffree);

	/* 2. blocks */
	for (ndf = 0; ndf < MAXF;) {
		struct dfile *f = &df[ndf++];
		int rc;

		f->path = g_strdup_printf("%s/f%02d", ddir, ndf - 1);
		fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (!H_SYS(fd, "create %s", f->path))
			break;
		rc = write_until_full(fd, f, 256 * KiB, MiB, &err);
		if (rc < 0) {
			H_EQ(err, ENOSPC, "the failing write (file %d, after "
					  "%zu bytes) gives ENOSPC",
			     ndf - 1, f->len);
			rc = write_until_full(fd, f, 4 * KiB, 2 * MiB, &err);
			H_EQ(err, ENOSPC, "4 KiB writes then fail with "
					  "ENOSPC too (at %zu bytes)",
			     f->len);
			H_SYS(close(fd), "close the full file");
			break;
		}
		close(fd);
	}
	H_OK(ndf < MAXF, "the disk filled up after %d files", ndf);
	H_OK(statvfs(mnt, &sv) == 0 && sv.f_bavail <= 3,
	     "statvfs: nothing available (bavail %llu, bfree %llu)",
	     (unsigned long long)sv.f_bavail, (unsigned long long)sv.f_bfree);
	bfree_full = sv.f_bfree;
	h_diag("full after %.1f s", h_now() - t0);

	/* the filesystem stays usable */
	H_ERR(mkdir(g_build_filename(mnt, "newdir", NULL), 0755), ENOSPC,
	      "mkdir needs a block: ENOSPC");
	memset(slow, 's', sizeof(slow) - 1);
	slow[sizeof(slow) - 1] = '\0';
	H_ERR(symlink(slow, g_build_filename(mnt, "slowlink", NULL)), ENOSPC,
	      "a slow symlink needs a block: ENOSPC");
	H_SYS(symlink("fast", g_build_filename(mnt, "fastlink", NULL)),
	      "a fast symlink needs none");
	/* 200 bytes: too big for the space inside a 256-byte inode */
	H_ERR(setxattr(df[0].path, "user.x", slow, 200, 0), ENOSPC,
	      "an xattr block cannot be had: ENOSPC");
	fd = open(g_build_filename(ddir, "empty", NULL),
		  O_WRONLY | O_CREAT | O_EXCL, 0644);
	H_SYS(fd, "an empty file can still be created");
	if (fd >= 0) {
		H_ERR(write(fd, "x", 1), ENOSPC, "but not written");
		close(fd);
	}
	H_EQ(count_dir(ddir), ndf + 1, "ls shows all %d data files + empty",
	     ndf);
	verify_all("full");
	fd = open(df[0].path, O_WRONLY);
	if (H_SYS(fd, "open f00 for overwrite")) {
		uint8_t nb[8192];

		h_fill(&rng, nb, sizeof(nb));
		H_EQ(pwrite(fd, nb, sizeof(nb), 4096), (ssize_t)sizeof(nb),
		     "overwriting allocated bytes works when full");
		memcpy(df[0].data + 4096, nb, sizeof(nb));
		close(fd);
	}
	verify_all("after overwrite");

	/* 3. free some, write again */
	for (int i = 1; i <= 3 && i < ndf; i++) {
		H_SYS(unlink(df[i].path), "unlink %s", df[i].path);
		df[i].gone = true;
	}
	{
		double end = h_now() + 5 * h_time_scale();

		while (statvfs(mnt, &sv) == 0 &&
		       sv.f_bfree < bfree_full + 3 * (MiB / 4096) &&
		       h_now() < end)
			usleep(20000);
	}
	H_OK(sv.f_bfree >= bfree_full + 3 * (MiB / 4096),
	     "3 MiB of blocks came back (%llu free)",
	     (unsigned long long)sv.f_bfree);
	if (ndf < MAXF) {
		struct dfile *f = &df[ndf++];

		f->path = g_strdup_printf("%s/again", ddir);
		fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (H_SYS(fd, "create again")) {
			H_EQ(write_until_full(fd, f, 256 * KiB, 2 * MiB, &err),
			     0, "a 2 MiB write succeeds after deleting (%s)",
			     err ? strerror(err) : "ok");
			close(fd);
		}
	}
	H_SYS(mkdir(g_build_filename(mnt, "newdir", NULL), 0755),
	      "mkdir works again");
	verify_all("after delete + write");

	/* 4. persistence */
	H_OK(h_umount(mnt) == 0, "umount");
	H_OK(h_fsck_clean(img, NULL), "e2fsck -fn clean after filling");
	if (h_mount(img, mnt, NULL) != 0)
		h_bail("remount failed");
	verify_all("remounted");
	H_EQ(count_dir(idir), ninodes - 40, "the empty files are all there");
	H_OK(h_umount(mnt) == 0, "umount");
	H_OK(h_fsck_clean(img, NULL), "e2fsck -fn clean");

	/* 5. the host disk fills */
	host_full(NULL, true);
	host_full("data=ordered", true);
	host_full("data=journal", true);
	host_full("preset=ext4", true);
	host_full("data=ordered", false);
	host_full("preset=ext4", false);
	h_diag("t_enospc took %.1f s", h_now() - t0);
	return h_done();
}
