/*
 * t_direct.c - O_DIRECT through a FUSE mount, beside the kernel's own
 * ext4 driver.
 *
 * The same seeded sequence of steps runs on a file of a simfs mount and on
 * a file of a kernel ext4 loop mount of an mke2fs image: open (with or
 * without O_DIRECT), fcntl(F_SETFL) turning O_DIRECT on or off, pread and
 * pwrite (on the 512-byte grid or off it, inside the file, across EOF,
 * past it, over holes), ftruncate and close, on two descriptors of the
 * one file.  After every step: the same result (count, or the same errno),
 * the same bytes read, and the same size and bytes of the whole file as a
 * buffered reader sees them.  Buffers are page-aligned on both sides (the
 * daemon never sees the caller's buffer address, doc/user-guide.md 4.1).
 * Three configurations: ext4 at 4 KiB and 1 KiB blocks (extent-mapped
 * files) and ext3 (block-mapped: an unaligned direct write that starts in
 * a hole below EOF is taken, as the kernel falls back to a buffered write
 * there).  Then umount, e2fsck -fn clean on both images.  Skipped, saying
 * so, only when loop mounting is impossible.
 *
 * usage: t_direct SIMFS_BINARY [SEED [STEPS]]
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NFD 2
#define MAXLEN (64 * 1024)

static struct h_rng rng;

/* One side: the file's path and its descriptors (-1 when closed). */
struct side {
	char *path;
	int fd[NFD];
};

/* Size and XXH3 of the whole file read through a fresh buffered
 * descriptor; -errno on failure. */
static int file_state(const char *path, uint64_t *size, uint64_t *hash)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	uint8_t *buf;
	ssize_t got;
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	*size = (uint64_t)st.st_size;
	buf = g_malloc(*size + 1);
	got = pread(fd, buf, *size + 1, 0);
	if (got < 0)
		rc = -errno;
	else if (got != (ssize_t)*size)
		rc = -EIO;
	else
		*hash = h_hash_buf(buf, (size_t)got);
	g_free(buf);
	close(fd);
	return rc;
}

/* An offset or length: mostly on the 512-byte grid (often on the block
 * or page grid), one in five anywhere. */
static uint64_t pick(uint64_t limit, uint32_t bs)
{
	uint64_t v = h_below(&rng, limit);

	switch (h_below(&rng, 10)) {
	case 0:
	case 1:
		return v; /* anywhere */
	case 2:
	case 3:
		return v & ~(uint64_t)4095;
	case 4:
	case 5:
		return v & ~(uint64_t)(bs - 1);
	default:
		return v & ~(uint64_t)511;
	}
}

/* What one step did on one side. */
struct res {
	long rc;
	int err;
	uint64_t hash; /* of the bytes a read returned */
};

enum kind { K_WRITE, K_READ, K_SETFL, K_TRUNC, K_REOPEN };

/* One step, described by its drawn parameters. */
struct step {
	enum kind kind;
	int k;	     /* which descriptor */
	bool direct; /* open/F_SETFL: O_DIRECT on */
	uint64_t off, len;
	uint64_t seed; /* write content */
};

static void draw(struct step *s, uint64_t size, uint32_t bs)
{
	unsigned r = (unsigned)h_below(&rng, 20);

	memset(s, 0, sizeof(*s));
	s->k = (int)h_below(&rng, NFD);
	s->kind = r < 7	   ? K_WRITE
		  : r < 13 ? K_READ
		  : r < 16 ? K_SETFL
		  : r < 18 ? K_TRUNC
			   : K_REOPEN;
	s->direct = h_below(&rng, 4) != 0;
	s->off = pick(size + 16 * (uint64_t)bs, bs);
	if (h_below(&rng, 8) == 0)
		s->off = pick(4 * 1024 * 1024, bs); /* far out: a hole */
	s->len = pick(MAXLEN, bs);
	if (s->len == 0)
		s->len = 512;
	s->seed = h_rand(&rng);
}

static void run(const struct step *s, struct side *sd, struct res *r)
{
	int *fd = &sd->fd[s->k];
	uint8_t *buf;
	int fl;

	memset(r, 0, sizeof(*r));
	errno = 0;
	switch (s->kind) {
	case K_WRITE:
	case K_READ:
		if (*fd < 0) {
			r->rc = -1;
			r->err = EBADF;
			return;
		}
		buf = aligned_alloc(4096, MAXLEN);
		if (!buf)
			h_bail("out of memory");
		if (s->kind == K_WRITE) {
			struct h_rng dr;

			h_rng_seed(&dr, s->seed);
			h_fill(&dr, buf, s->len);
			r->rc = pwrite(*fd, buf, s->len, (off_t)s->off);
		} else {
			r->rc = pread(*fd, buf, s->len, (off_t)s->off);
			if (r->rc > 0)
				r->hash = h_hash_buf(buf, (size_t)r->rc);
		}
		free(buf);
		break;
	case K_SETFL:
		if (*fd < 0) {
			r->rc = -1;
			r->err = EBADF;
			return;
		}
		fl = fcntl(*fd, F_GETFL);
		fl = s->direct ? fl | O_DIRECT : fl & ~O_DIRECT;
		r->rc = fcntl(*fd, F_SETFL, fl);
		break;
	case K_TRUNC:
		r->rc = truncate(sd->path, (off_t)(s->off + s->len / 2));
		break;
	case K_REOPEN:
		if (*fd >= 0)
			close(*fd);
		*fd = open(sd->path,
			   O_RDWR | O_CREAT | (s->direct ? O_DIRECT : 0), 0644);
		r->rc = *fd < 0 ? -1 : 0;
		break;
	}
	if (r->rc < 0)
		r->err = errno;
}

/* After a direct write ext4 refused with EINVAL having written a part:
 * each block (of bs bytes) of [off, off + len) whose bytes differ between
 * the kernel's file and simfs's gets the kernel's bytes, written to
 * simfs's file with a buffered write.  Only those blocks: ext4 also left
 * blocks it wrote into fresh unwritten extents unconverted (reading as
 * zeros, no alignment check), and zeros copied there would be written
 * data on simfs, which O_DIRECT reads treat differently. */
static void copy_written(const char *from, const char *to, uint64_t off,
			 uint64_t len, uint32_t bs)
{
	int f = open(from, O_RDONLY), t = open(to, O_RDWR);
	uint8_t *x = g_malloc(len), *y = g_malloc(len);
	ssize_t n = f < 0 ? -1 : pread(f, x, len, (off_t)off);
	ssize_t m = t < 0 ? -1 : pread(t, y, len, (off_t)off);

	if (n < 0 || m < 0)
		h_bail("reading back the refused write's range: %s",
		       strerror(errno));
	for (uint64_t b = off - off % bs; b < off + (uint64_t)n; b += bs) {
		uint64_t lo = MAX(b, off) - off;
		uint64_t hi = MIN(b + bs, off + (uint64_t)n) - off;

		if (hi <= (uint64_t)m && !memcmp(x + lo, y + lo, hi - lo))
			continue;
		if (h_pwrite_all(t, x + lo, hi - lo, (off_t)(off + lo)) != 0)
			h_bail("copying the kernel's bytes to simfs: %s",
			       strerror(errno));
	}
	g_free(x);
	g_free(y);
	close(f);
	close(t);
}

static const char *const kind_names[] = {"pwrite", "pread", "F_SETFL",
					 "truncate", "reopen"};

/* One step on both sides; false (and a diagnostic) on a difference. */
static bool one_step(struct side *a, struct side *b, unsigned n, uint32_t bs,
		     unsigned *ndirect, unsigned *npartial)
{
	uint64_t size_a = 0, size_b = 0, hash_a = 0, hash_b = 0;
	struct step s;
	struct res ra, rb;
	char what[200];
	uint64_t before;
	int fl;

	if (file_state(b->path, &size_b, &hash_b) != 0)
		h_bail("reading the kernel's file back failed");
	before = hash_b;
	draw(&s, size_b, bs);
	fl = b->fd[s.k] >= 0 ? fcntl(b->fd[s.k], F_GETFL) : 0;
	snprintf(what, sizeof what,
		 "step %u: %s fd%d%s off=%llu len=%llu (size %llu)", n,
		 kind_names[s.kind], s.k,
		 s.kind == K_SETFL || s.kind == K_REOPEN
		     ? (s.direct ? " O_DIRECT" : " buffered")
		     : (fl & O_DIRECT ? " (O_DIRECT)" : " (buffered)"),
		 (unsigned long long)s.off, (unsigned long long)s.len,
		 (unsigned long long)size_b);
	run(&s, b, &rb);
	run(&s, a, &ra);
	if ((s.kind == K_WRITE || s.kind == K_READ) && (fl & O_DIRECT) &&
	    rb.rc >= 0)
		(*ndirect)++;
	if (ra.rc != rb.rc || ra.err != rb.err || ra.hash != rb.hash) {
		h_diag("%s: simfs %ld %s [%016llx], kernel %ld %s [%016llx]",
		       what, ra.rc, ra.err ? strerror(ra.err) : "",
		       (unsigned long long)ra.hash, rb.rc,
		       rb.err ? strerror(rb.err) : "",
		       (unsigned long long)rb.hash);
		return false;
	}
	if (s.kind == K_WRITE && rb.rc < 0 && rb.err == EINVAL &&
	    file_state(a->path, &size_a, &hash_a) == 0 &&
	    file_state(b->path, &size_b, &hash_b) == 0 && hash_b != before) {
		/* ext4 wrote the whole mappings before the one that failed
		 * the check (iomap_dio_rw walks them one by one); where they
		 * end depends on its block placement, not simfs's.  simfs
		 * must have written nothing; then the kernel's bytes of the
		 * range go to simfs's file so the sides compare again. */
		if (hash_a != before) {
			h_diag("%s: EINVAL, yet simfs's file changed", what);
			return false;
		}
		(*npartial)++;
		copy_written(b->path, a->path, s.off, s.len, bs);
	}
	if (file_state(a->path, &size_a, &hash_a) != 0 ||
	    file_state(b->path, &size_b, &hash_b) != 0 || size_a != size_b ||
	    hash_a != hash_b) {
		h_diag("%s: both gave %ld %s; then simfs size %llu hash "
		       "%016llx, kernel size %llu hash %016llx (before: "
		       "%016llx)",
		       what, rb.rc, rb.err ? strerror(rb.err) : "",
		       (unsigned long long)size_a, (unsigned long long)hash_a,
		       (unsigned long long)size_b, (unsigned long long)hash_b,
		       (unsigned long long)before);
		return false;
	}
	return true;
}

static void side_close(struct side *s)
{
	for (int k = 0; k < NFD; k++)
		if (s->fd[k] >= 0)
			close(s->fd[k]);
	g_free(s->path);
}

/* One configuration: simfs's preset and mke2fs's type at bs. */
static void side_by_side(const char *preset, const char *type, const char *bs,
			 uint64_t seed, unsigned steps)
{
	struct h_kpair kp;
	struct side a = {NULL, {-1, -1}}, b = {NULL, {-1, -1}};
	unsigned done = 0, ndirect = 0, npartial = 0;

	h_rng_seed(&rng, seed);
	if (!h_kpair_up(&kp, preset, type, bs))
		goto out;
	a.path = g_build_filename(kp.mnt, "f", NULL);
	b.path = g_build_filename(kp.kmnt, "f", NULL);
	for (int k = 0; k < NFD; k++) {
		int fl = O_RDWR | O_CREAT | (k ? O_DIRECT : 0);

		a.fd[k] = open(a.path, fl, 0644);
		b.fd[k] = open(b.path, fl, 0644);
		if (a.fd[k] < 0 || b.fd[k] < 0) {
			H_OK(false, "%s %s: files opened", preset, bs);
			goto out;
		}
	}
	while (done < steps &&
	       one_step(&a, &b, done, (uint32_t)atoi(bs), &ndirect, &npartial))
		done++;
	h_diag("%s %s: %u direct writes refused with EINVAL after the kernel "
	       "had written part of them",
	       preset, bs, npartial);
	H_EQ(done, steps,
	     "%s %s-byte blocks, seed %llu: %u steps, same result, bytes and "
	     "file as the kernel's ext4 after each",
	     preset, bs, (unsigned long long)seed, steps);
	H_OK(ndirect > steps / 10, "%s %s: %u direct reads and writes worked",
	     preset, bs, ndirect);
out:
	side_close(&a);
	side_close(&b);
	h_kpair_down(&kp);
}

int main(int argc, char **argv)
{
	double t0;

	h_init(argc, argv);
	t0 = h_now();
	if (!h_kpair_configs(argc, argv, 600, side_by_side))
		return 77;
	h_diag("%.1f s", h_now() - t0);
	return h_done();
}
