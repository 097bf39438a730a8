/*
 * t_fallocate.c - fallocate(2) and FIEMAP through a FUSE mount, beside
 * the kernel's own ext4 driver.
 *
 * Part 1, the kernel side by side: the same seeded sequence of writes,
 * truncates and fallocate calls (every mode and combination the FUSE
 * kernel module passes on: preallocation with and without KEEP_SIZE,
 * PUNCH_HOLE, ZERO_RANGE with and without KEEP_SIZE, aligned and not,
 * inside and past EOF, plus the combinations vfs_fallocate refuses) runs
 * on a file of a simfs mount and on a file of a kernel ext4 loop mount of
 * an mke2fs image.  After every step: the same result (0 or the same
 * errno), the same size, the same bytes.  Three configurations: ext4 at 4
 * KiB and 1 KiB blocks (extent-mapped files) and ext3 (block-mapped: only
 * PUNCH_HOLE works, the rest is EOPNOTSUPP on both sides).  Then umount,
 * e2fsck -fn clean on both images.  Skipped, saying so, only when loop
 * mounting is impossible.
 *
 * Part 2, what the FUSE kernel module does not pass on: COLLAPSE_RANGE and
 * INSERT_RANGE (fuse_file_fallocate refuses them with EOPNOTSUPP before
 * the daemon sees them; the engine has them, tests/unit/test_fallocate.c),
 * and FS_IOC_FIEMAP (FUSE has no fiemap inode operation: the ioctl fails
 * with EOPNOTSUPP, and filefrag falls back to FIBMAP, which FUSE answers
 * with 0 for every block on a mount without a block device, so filefrag
 * reports "0 extents found").  The errnos are checked as this kernel gives
 * them, and `simfs inspect IMAGE extents PATH` shows the extents offline
 * instead.
 *
 * usage: t_fallocate SIMFS_BINARY [SEED [STEPS]]
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static struct h_rng rng;

/* The modes of part 1 (KEEP_SIZE = 0x01). */
static const int modes[] = {
    0,
    FALLOC_FL_KEEP_SIZE,
    FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
    FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
    FALLOC_FL_ZERO_RANGE,
    FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
    FALLOC_FL_PUNCH_HOLE,			    /* EOPNOTSUPP: no KEEP */
    FALLOC_FL_ZERO_RANGE | FALLOC_FL_PUNCH_HOLE,    /* two modes */
    FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_KEEP_SIZE, /* refused by vfs */
};

/* Whole file: size and XXH3 of its bytes; -errno on a read error. */
static int file_state(int fd, uint64_t *size, uint64_t *hash)
{
	struct stat st;
	uint8_t *buf;
	ssize_t got;

	if (fstat(fd, &st) < 0)
		return -errno;
	*size = (uint64_t)st.st_size;
	buf = g_malloc(*size + 1);
	got = pread(fd, buf, *size + 1, 0);
	if (got < 0) {
		int e = errno;
		g_free(buf);
		return -e;
	}
	*hash = h_hash_buf(buf, (size_t)got);
	g_free(buf);
	return got == (ssize_t)*size ? 0 : -EIO;
}

/* One step on both sides; false (and a diagnostic) on a difference. */
static bool one_step(int fa, int fb, unsigned step, uint32_t bs,
		     unsigned *nfalloc_ok)
{
	uint64_t size_b, hash_b, size_a, hash_a;
	unsigned kind = (unsigned)h_below(&rng, 10);
	char what[160];
	long ra, rb;
	int ea = 0, eb = 0;

	if (file_state(fb, &size_b, &hash_b) != 0)
		return false;
	if (kind < 3) {
		uint64_t off = h_below(&rng, size_b + 64 * bs);
		size_t len = 1 + (size_t)h_below(&rng, 24 * bs);
		uint8_t *buf = g_malloc(len);

		h_fill(&rng, buf, len);
		snprintf(what, sizeof(what), "step %u: pwrite %llu+%zu", step,
			 (unsigned long long)off, len);
		ra = pwrite(fa, buf, len, (off_t)off);
		ea = errno;
		rb = pwrite(fb, buf, len, (off_t)off);
		eb = errno;
		g_free(buf);
	} else if (kind == 3) {
		uint64_t ns = h_below(&rng, size_b + 8 * bs);

		snprintf(what, sizeof(what), "step %u: ftruncate %llu", step,
			 (unsigned long long)ns);
		ra = ftruncate(fa, (off_t)ns);
		ea = errno;
		rb = ftruncate(fb, (off_t)ns);
		eb = errno;
	} else {
		int mode = modes[h_below(&rng, G_N_ELEMENTS(modes))];
		uint64_t off = h_below(&rng, size_b + 16 * bs);
		uint64_t len = 1 + h_below(&rng, 48 * bs);

		if (h_below(&rng, 2)) {
			off &= ~(uint64_t)(bs - 1);
			len = (len + bs - 1) & ~(uint64_t)(bs - 1);
		}
		snprintf(what, sizeof(what),
			 "step %u: fallocate 0x%x %llu+%llu (size %llu)", step,
			 mode, (unsigned long long)off, (unsigned long long)len,
			 (unsigned long long)size_b);
		ra = fallocate(fa, mode, (off_t)off, (off_t)len);
		ea = errno;
		rb = fallocate(fb, mode, (off_t)off, (off_t)len);
		eb = errno;
		if (ra == 0 && rb == 0)
			(*nfalloc_ok)++;
	}
	if ((ra < 0) != (rb < 0) || (ra < 0 && ea != eb) ||
	    (ra >= 0 && ra != rb)) {
		h_diag("%s: simfs %ld (%s), kernel %ld (%s)", what, ra,
		       ra < 0 ? strerror(ea) : "ok", rb,
		       rb < 0 ? strerror(eb) : "ok");
		return false;
	}
	if (file_state(fa, &size_a, &hash_a) != 0 ||
	    file_state(fb, &size_b, &hash_b) != 0) {
		h_diag("%s: cannot read the files back", what);
		return false;
	}
	if (size_a != size_b || hash_a != hash_b) {
		h_diag("%s: simfs size %llu hash %016llx, kernel size %llu "
		       "hash %016llx",
		       what, (unsigned long long)size_a,
		       (unsigned long long)hash_a, (unsigned long long)size_b,
		       (unsigned long long)hash_b);
		return false;
	}
	return true;
}

/* Part 1 for one configuration. */
static void side_by_side(const char *preset, const char *type, const char *bs,
			 uint64_t seed, unsigned steps)
{
	struct h_kpair kp;
	char *fa_path = NULL, *fb_path = NULL;
	unsigned done = 0, nok = 0;
	int fa = -1, fb = -1;

	h_rng_seed(&rng, seed);
	if (!h_kpair_up(&kp, preset, type, bs))
		goto out;
	fa_path = g_build_filename(kp.mnt, "f", NULL);
	fb_path = g_build_filename(kp.kmnt, "f", NULL);
	fa = open(fa_path, O_RDWR | O_CREAT, 0644);
	fb = open(fb_path, O_RDWR | O_CREAT, 0644);
	if (fa < 0 || fb < 0) {
		H_OK(false, "%s %s: files created", preset, bs);
		goto out;
	}
	while (done < steps && one_step(fa, fb, done, (uint32_t)atoi(bs), &nok))
		done++;
	H_EQ(done, steps,
	     "%s %s-byte blocks, seed %llu: %u steps, same result, size and "
	     "bytes as the kernel's ext4 after each (%u fallocate calls "
	     "succeeded on both)",
	     preset, bs, (unsigned long long)seed, steps, nok);
	H_OK(nok > steps / 20, "%s %s: fallocate did work (%u calls)", preset,
	     bs, nok);
out:
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	h_kpair_down(&kp);
	g_free(fa_path);
	g_free(fb_path);
}

/* Part 2: the interfaces that stop in the kernel's FUSE module. */
static void not_passed_on(void)
{
	char *img = h_path("fiemap.img"), *mnt = h_path("fiemap-mnt");
	char *path = h_path("fiemap-mnt/f");
	const char *mkfs_args[] = {"-b", "4096", "--preset", "ext4", NULL};
	char *out = NULL, *err = NULL;
	/* struct fiemap ends in a flexible array: room for 8 extents */
	uint64_t
	    qbuf[(sizeof(struct fiemap) + 8 * sizeof(struct fiemap_extent)) /
		 sizeof(uint64_t)];
	struct fiemap *q = (struct fiemap *)qbuf;
	uint8_t buf[65536];
	int fd, rc;

	if (h_mkfs(img, "64M", mkfs_args) != 0 ||
	    h_mount(img, mnt, "preset=ext4") != 0) {
		H_OK(false, "part 2: simfs mounted");
		goto out;
	}
	memset(buf, 0x5a, sizeof(buf));
	fd = open(path, O_RDWR | O_CREAT, 0644);
	H_SYS(fd, "part 2: create");
	if (fd < 0)
		goto out_umount;
	H_SYS(h_pwrite_all(fd, buf, sizeof(buf), 0) == 0 ? 0 : -1,
	      "write 64 KiB");
	H_SYS(fallocate(fd, FALLOC_FL_KEEP_SIZE, 65536, 65536),
	      "preallocate 64 KiB past EOF");
	H_SYS(fsync(fd), "fsync");
	H_ERR(fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 4096, 4096), EOPNOTSUPP,
	      "COLLAPSE_RANGE stops in the FUSE module: EOPNOTSUPP");
	H_ERR(fallocate(fd, FALLOC_FL_INSERT_RANGE, 4096, 4096), EOPNOTSUPP,
	      "INSERT_RANGE stops in the FUSE module: EOPNOTSUPP");
	memset(qbuf, 0, sizeof(qbuf));
	q->fm_length = FIEMAP_MAX_OFFSET;
	q->fm_extent_count = 8;
	rc = ioctl(fd, FS_IOC_FIEMAP, q);
	H_ERR(rc, EOPNOTSUPP,
	      "FS_IOC_FIEMAP on a FUSE file: EOPNOTSUPP (no fiemap inode "
	      "operation in FUSE)");
	close(fd);
	/* filefrag: FIEMAP fails, it falls back to FIBMAP, which a FUSE
	 * mount without a block device answers with 0 for every block, so
	 * the 64 KiB of data show as no extent at all */
	rc = h_runl(&out, &err, "filefrag", "-v", path, NULL);
	h_diag("filefrag -v: exit %d: %s%s", rc, out ? out : "",
	       err ? err : "");
	H_OK(rc != 0 || (out && strstr(out, ": 0 extents found")),
	     "filefrag cannot map the file through the mount (0 extents "
	     "found, or an error)");
	g_clear_pointer(&out, g_free);
	g_clear_pointer(&err, g_free);
out_umount:
	H_OK(h_umount(mnt) == 0, "part 2: umount");
	H_OK(h_fsck_clean(img, NULL), "part 2: e2fsck -fn clean");
	/* the offline alternative */
	rc = h_runl(&out, &err, h_simfs(), "inspect", img, "extents", "/f",
		    NULL);
	H_EQ(rc, 0, "simfs inspect IMAGE extents /f");
	H_OK(out && strstr(out, "extents found") && strstr(out, "unwritten"),
	     "it lists the extents, the preallocated ones as unwritten");
	if (out)
		h_diag("%s", out);
out:
	unlink(img);
	g_free(out);
	g_free(err);
	g_free(path);
	g_free(mnt);
	g_free(img);
}

int main(int argc, char **argv)
{
	double t0;

	h_init(argc, argv);
	t0 = h_now();
	if (!h_kpair_configs(argc, argv, 400, side_by_side))
		h_diag("so part 1 is left out");
	not_passed_on();
	h_diag("%.1f s", h_now() - t0);
	return h_done();
}
