/*
 * blockdev.c - the backing device: the one door every request passes, and
 * the file backend (image file or block device).
 *
 * The door (sfs_bdev_read/write/flush/zero) checks the range, calls the
 * hook before the request (it may fail it), issues it through bd->ops,
 * counts it and calls the hook again with the result.  Counting identity:
 * reqs[op] counts every in-range request whatever its fate, errors counts
 * every failed one (hook-failed, device-failed or out of range), so
 * successes = sum(reqs) - errors + out-of-range rejects.  A zero request is
 * a write for the hook and the counters.
 *
 * A vectored write (sfs_bdev_writev) is one request like any write; a
 * device without ops->writev is given the buffers gathered into one.
 *
 * File backend: pread/pwrite/pwritev loops that survive EINTR and short
 * transfers.
 * A full host disk is -ENOSPC (not -EIO), so the engine can keep the data
 * and try again; reserve is fallocate(KEEP_SIZE) on the image file.
 * With SFS_BDEV_DIRECT the fd is O_DIRECT; a request whose buffer, offset or
 * length is not aligned to what the host wants goes through an aligned
 * bounce buffer (read-modify-write of the edge units when the host unit is
 * larger than 512); offsets and lengths must still be multiples of 512.
 * SFS_BDEV_EXCL: flock(LOCK_EX|LOCK_NB) on an image file, O_EXCL on a block
 * device; a second opener gets -EBUSY ("already mounted").
 *
 * Locking: counters are protected by bd->ctr_lock (stats may read them from
 * another thread); everything else is the caller's to serialise.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <glib.h>

#include "blockdev.h"
#include "lock.h"

#define BDF_BOUNCE_BYTES (1u << 20) /* bounce buffer for O_DIRECT */
#define BDF_SECTOR 512u		    /* O_DIRECT granularity we accept */
#define BD_ZERO_CHUNK (1u << 20)    /* zero-fill writes, bytes per call */
#define BDF_IOV_MAX 1024	    /* segments per pwritev (Linux IOV_MAX) */

struct sfs_bdev {
	const struct sfs_bdev_ops *ops;
	void *priv;
	uint64_t size_bytes;
	bool known_zero;	 /* every byte reads as zero (no write yet) */
	enum sfs_io_cat cur_cat; /* category of the request in ops, if any */
	sfs_bdev_hook_fn hook;	 /* may be NULL */
	void *hook_arg;
	sfs_mutex ctr_lock; /* protects ctr */
	struct sfs_bdev_counters ctr;
};

static const char *const sfs_cat_names[SFS_IO_NCAT] = {
    [SFS_IO_DATA] = "data",	    [SFS_IO_INODE] = "inode",
    [SFS_IO_BITMAP] = "bitmap",	    [SFS_IO_DIR] = "dir",
    [SFS_IO_INDIRECT] = "indirect", [SFS_IO_SUPER] = "super",
    [SFS_IO_GDT] = "gdt",	    [SFS_IO_XATTR] = "xattr",
    [SFS_IO_JOURNAL] = "journal",   [SFS_IO_OTHER] = "other",
    [SFS_IO_DIRIDX] = "dir_index",
};

const char *sfs_io_cat_name(enum sfs_io_cat cat)
{
	if ((unsigned)cat >= SFS_IO_NCAT)
		return "?";
	return sfs_cat_names[cat];
}

const char *sfs_io_op_name(enum sfs_io_op op)
{
	switch (op) {
	case SFS_IO_READ:
		return "read";
	case SFS_IO_WRITE:
		return "write";
	case SFS_IO_FLUSH:
		return "flush";
	}
	return "?";
}

/* ------------------------------------------------------------------ */
/* generic device and the door                                         */
/* ------------------------------------------------------------------ */

/*
 * The calling thread's submitter (blockdev.h).  Per thread on purpose: it
 * says who the thread is working for, which is no device's state, and two
 * threads working for two processes must not see each other's.
 */
static __thread uint32_t io_stream;

void sfs_io_set_stream(uint32_t id)
{
	io_stream = id;
}

uint32_t sfs_io_stream(void)
{
	return io_stream;
}

/* A device over ops/priv of size_bytes; freed by sfs_bdev_close. */
struct sfs_bdev *sfs_bdev_new(const struct sfs_bdev_ops *ops, void *priv,
			      uint64_t size_bytes)
{
	struct sfs_bdev *bd = g_new0(struct sfs_bdev, 1);

	bd->ops = ops;
	bd->priv = priv;
	bd->size_bytes = size_bytes;
	bd->cur_cat = SFS_IO_OTHER;
	sfs_mutex_init(&bd->ctr_lock);
	return bd;
}

void *sfs_bdev_priv(struct sfs_bdev *bd)
{
	return bd->priv;
}

uint64_t sfs_bdev_size_bytes(const struct sfs_bdev *bd)
{
	return bd->size_bytes;
}

const char *sfs_bdev_name(const struct sfs_bdev *bd)
{
	return bd->ops->name;
}

bool sfs_bdev_known_zero(const struct sfs_bdev *bd)
{
	return bd->known_zero;
}

void sfs_bdev_set_known_zero(struct sfs_bdev *bd, bool zero)
{
	bd->known_zero = zero;
}

enum sfs_io_cat sfs_bdev_req_cat(const struct sfs_bdev *bd)
{
	return bd->cur_cat;
}

void sfs_bdev_set_hook(struct sfs_bdev *bd, sfs_bdev_hook_fn fn, void *arg)
{
	bd->hook = fn;
	bd->hook_arg = fn ? arg : NULL;
}

void sfs_bdev_counters(const struct sfs_bdev *bd, struct sfs_bdev_counters *out)
{
	struct sfs_bdev *mbd = (struct sfs_bdev *)bd;

	sfs_mutex_lock(&mbd->ctr_lock);
	*out = bd->ctr;
	sfs_mutex_unlock(&mbd->ctr_lock);
}

/* Count one request that reached the door in range; rc is its result. */
static void bd_account(struct sfs_bdev *bd, const struct sfs_io_req *req,
		       int rc)
{
	sfs_mutex_lock(&bd->ctr_lock);
	bd->ctr.reqs[req->op]++;
	bd->ctr.bytes[req->op] += req->len_bytes;
	bd->ctr.cat_reqs[req->op][req->cat]++;
	bd->ctr.cat_bytes[req->op][req->cat] += req->len_bytes;
	if (rc)
		bd->ctr.errors++;
	sfs_mutex_unlock(&bd->ctr_lock);
}

/* Reject a request outside the device (or malformed): -EINVAL, counted. */
static int bd_check(struct sfs_bdev *bd, enum sfs_io_cat cat, uint64_t off,
		    uint64_t len, const void *buf, bool need_buf)
{
	if ((unsigned)cat >= SFS_IO_NCAT || len == 0 || (need_buf && !buf) ||
	    off > bd->size_bytes || len > bd->size_bytes - off) {
		sfs_mutex_lock(&bd->ctr_lock);
		bd->ctr.errors++;
		sfs_mutex_unlock(&bd->ctr_lock);
		return -EINVAL;
	}
	return 0;
}

/* Hook before the request: 0 to go on, or the -errno that fails it. */
static int bd_hook_before(struct sfs_bdev *bd, const struct sfs_io_req *req)
{
	int rc;

	if (!bd->hook)
		return 0;
	rc = bd->hook(bd->hook_arg, req, false, 0);
	if (rc > 0)
		rc = -EIO;
	return rc;
}

/*
 * Every request goes through bd_begin and bd_end around the backend's
 * call.  bd_begin asks the hook first (its -errno refuses the request)
 * and, when it may go on, makes req->cat the category sfs_bdev_req_cat
 * reports to the backend; *prev keeps the one before, for nesting.
 */
static int bd_begin(struct sfs_bdev *bd, const struct sfs_io_req *req,
		    enum sfs_io_cat *prev)
{
	int rc = bd_hook_before(bd, req);

	*prev = bd->cur_cat;
	if (!rc)
		bd->cur_cat = req->cat;
	return rc;
}

/* Restore the category, count the request and tell the hook how it
 * ended; returns rc. */
static int bd_end(struct sfs_bdev *bd, const struct sfs_io_req *req,
		  enum sfs_io_cat prev, int rc)
{
	bd->cur_cat = prev;
	bd_account(bd, req, rc);
	if (bd->hook)
		bd->hook(bd->hook_arg, req, true, rc);
	return rc;
}

/* Read len bytes at off into buf: 0, -EINVAL (range) or -EIO. */
int sfs_bdev_read(struct sfs_bdev *bd, enum sfs_io_cat cat, uint64_t off,
		  void *buf, size_t len)
{
	struct sfs_io_req req = {SFS_IO_READ, cat, off, len, io_stream};
	enum sfs_io_cat prev;
	int rc;

	rc = bd_check(bd, cat, off, len, buf, true);
	if (rc)
		return rc;
	rc = bd_begin(bd, &req, &prev);
	if (!rc)
		rc = bd->ops->read(bd, off, buf, len);
	return bd_end(bd, &req, prev, rc);
}

/* Gather iov[0..iovcnt) (len bytes) into one buffer for ops->write. */
static int bd_gather_write(struct sfs_bdev *bd, uint64_t off,
			   const struct iovec *iov, int iovcnt, size_t len)
{
	uint8_t *g = NULL;
	size_t at = 0;
	int rc;

	/* Aligned, so an O_DIRECT backend needs no bounce copy. */
	if (posix_memalign((void **)&g, 4096, len))
		return -ENOMEM;
	for (int i = 0; i < iovcnt; i++) {
		memcpy(g + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	rc = bd->ops->write(bd, off, g, len);
	free(g);
	return rc;
}

/*
 * One write request at off of len bytes: from buf, or gathered from
 * iov[0..iovcnt) when iov is not NULL.
 */
static int bd_write_req(struct sfs_bdev *bd, enum sfs_io_cat cat, uint64_t off,
			const void *buf, const struct iovec *iov, int iovcnt,
			size_t len)
{
	struct sfs_io_req req = {SFS_IO_WRITE, cat, off, len, io_stream};
	enum sfs_io_cat prev;
	int rc;

	rc = bd_check(bd, cat, off, len, iov ? (const void *)iov : buf, true);
	if (rc)
		return rc;
	rc = bd_begin(bd, &req, &prev);
	if (!rc) {
		bd->known_zero = false;
		if (!iov)
			rc = bd->ops->write(bd, off, buf, len);
		else if (iovcnt == 1)
			rc = bd->ops->write(bd, off, iov[0].iov_base, len);
		else if (bd->ops->writev)
			rc = bd->ops->writev(bd, off, iov, iovcnt, len);
		else
			rc = bd_gather_write(bd, off, iov, iovcnt, len);
	}
	return bd_end(bd, &req, prev, rc);
}

/* Write len bytes from buf at off: 0, -EINVAL (range) or -EIO. */
int sfs_bdev_write(struct sfs_bdev *bd, enum sfs_io_cat cat, uint64_t off,
		   const void *buf, size_t len)
{
	return bd_write_req(bd, cat, off, buf, NULL, 0, len);
}

/* One write of the bytes of iov[0..iovcnt) at off (blockdev.h). */
int sfs_bdev_writev(struct sfs_bdev *bd, enum sfs_io_cat cat, uint64_t off,
		    const struct iovec *iov, int iovcnt)
{
	size_t len = 0;

	for (int i = 0; iov && i < iovcnt; i++) {
		if (!iov[i].iov_base || iov[i].iov_len > bd->size_bytes - len) {
			len = 0; /* malformed or past the end: rejected */
			break;
		}
		len += iov[i].iov_len;
	}
	if (iovcnt < 1)
		len = 0;
	return bd_write_req(bd, cat, off, NULL, iov, iovcnt, len);
}

/* Barrier: every write completed before is durable.  0 or -EIO. */
int sfs_bdev_flush(struct sfs_bdev *bd)
{
	struct sfs_io_req req = {SFS_IO_FLUSH, SFS_IO_OTHER, 0, 0, io_stream};
	enum sfs_io_cat prev;
	int rc;

	rc = bd_begin(bd, &req, &prev);
	if (!rc && bd->ops->flush)
		rc = bd->ops->flush(bd);
	return bd_end(bd, &req, prev, rc);
}

/* Zero [off, off+len) with plain writes through ops->write. */
static int bd_zero_by_writes(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	size_t chunk = len < BD_ZERO_CHUNK ? (size_t)len : BD_ZERO_CHUNK;
	void *zeros = NULL;
	int rc = 0;

	/* Aligned, so an O_DIRECT backend needs no bounce copy. */
	if (posix_memalign(&zeros, 4096, chunk))
		return -ENOMEM;
	memset(zeros, 0, chunk);
	while (len) {
		size_t n = len < chunk ? (size_t)len : chunk;

		rc = bd->ops->write(bd, off, zeros, n);
		if (rc)
			break;
		off += n;
		len -= n;
	}
	free(zeros);
	return rc;
}

/* Make [off, off+len) read as zeros: 0, -EINVAL (range) or -EIO. */
int sfs_bdev_zero(struct sfs_bdev *bd, enum sfs_io_cat cat, uint64_t off,
		  uint64_t len)
{
	struct sfs_io_req req = {SFS_IO_WRITE, cat, off, len, io_stream};
	enum sfs_io_cat prev;
	int rc;

	rc = bd_check(bd, cat, off, len, NULL, false);
	if (rc)
		return rc;
	rc = bd_begin(bd, &req, &prev);
	if (!rc) {
		rc = -EOPNOTSUPP;
		if (bd->ops->zero)
			rc = bd->ops->zero(bd, off, len);
		if (rc == -EOPNOTSUPP) {
			bd->known_zero = false;
			rc = bd_zero_by_writes(bd, off, len);
		}
	}
	return bd_end(bd, &req, prev, rc);
}

int sfs_bdev_reserve(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	if (!bd || len == 0 || off > bd->size_bytes ||
	    len > bd->size_bytes - off)
		return -EINVAL;
	if (!bd->ops->reserve)
		return 0;
	return bd->ops->reserve(bd, off, len);
}

int sfs_bdev_host_room(struct sfs_bdev *bd, uint64_t *bytes_out)
{
	if (!bd || !bytes_out)
		return -EINVAL;
	*bytes_out = UINT64_MAX;
	if (!bd->ops->host_room)
		return 0;
	return bd->ops->host_room(bd, bytes_out);
}

/* Close bd and what its ops own. */
void sfs_bdev_close(struct sfs_bdev *bd)
{
	if (!bd)
		return;
	if (bd->ops->close)
		bd->ops->close(bd);
	sfs_mutex_clear(&bd->ctr_lock);
	g_free(bd);
}

/* ------------------------------------------------------------------ */
/* file backend                                                        */
/* ------------------------------------------------------------------ */

struct bdf {
	int fd;
	bool direct; /* fd is O_DIRECT */
	bool blkdev; /* a block device, not a regular file */
	bool rdonly;
	bool nosync; /* flushes stay in the host's cache until close */
	uint32_t dio_align; /* O_DIRECT offset/length unit, bytes */
	uint32_t mem_align; /* O_DIRECT buffer alignment, bytes */
	uint8_t *bounce;    /* BDF_BOUNCE_BYTES, mem_align-aligned, lazy */
};

/* Host errno -> device error: -EINVAL stays (misuse), a full host disk
 * (or quota) is -ENOSPC, the rest is -EIO. */
static int bdf_err(int err)
{
	if (err == ENOSPC || err == EDQUOT)
		return -ENOSPC;
	return err == EINVAL ? -EINVAL : -EIO;
}

/* pread exactly len bytes; a read past EOF zero-fills if eof_ok. */
static int bdf_pread_full(int fd, void *buf, size_t len, uint64_t off,
			  bool eof_ok)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t r = pread(fd, p, len, (off_t)off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return bdf_err(errno);
		}
		if (r == 0) {
			if (!eof_ok)
				return -EIO;
			memset(p, 0, len);
			return 0;
		}
		p += r;
		off += (uint64_t)r;
		len -= (size_t)r;
	}
	return 0;
}

/* pwritev exactly len bytes from iov[0..iovcnt), IOV_MAX at a time. */
static int bdf_pwritev_full(int fd, const struct iovec *iov, int iovcnt,
			    uint64_t off)
{
	struct iovec part[BDF_IOV_MAX];
	size_t skip = 0; /* bytes of iov[0] already written */

	while (iovcnt > 0) {
		int n = iovcnt < BDF_IOV_MAX ? iovcnt : BDF_IOV_MAX;
		ssize_t r;

		memcpy(part, iov, (size_t)n * sizeof(*iov));
		part[0].iov_base = (uint8_t *)part[0].iov_base + skip;
		part[0].iov_len -= skip;
		r = pwritev(fd, part, n, (off_t)off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return bdf_err(errno);
		}
		if (r == 0)
			return -EIO;
		off += (uint64_t)r;
		r += (ssize_t)skip;
		while (iovcnt > 0 && (size_t)r >= iov[0].iov_len) {
			r -= (ssize_t)iov[0].iov_len;
			iov++;
			iovcnt--;
		}
		skip = (size_t)r;
	}
	return 0;
}

/* pwrite exactly len bytes. */
static int bdf_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	struct iovec v = {(void *)buf, len};

	return len ? bdf_pwritev_full(fd, &v, 1, off) : 0;
}

/* Does an O_DIRECT request need the bounce buffer? */
static bool bdf_needs_bounce(const struct bdf *f, uint64_t off, const void *buf,
			     size_t len)
{
	return (off % f->dio_align) || (len % f->dio_align) ||
	       ((uintptr_t)buf % f->mem_align);
}

static int bdf_get_bounce(struct bdf *f)
{
	void *p = NULL;

	if (f->bounce)
		return 0;
	if (posix_memalign(&p, f->mem_align < 4096 ? 4096 : f->mem_align,
			   BDF_BOUNCE_BYTES))
		return -ENOMEM;
	f->bounce = p;
	return 0;
}

/*
 * O_DIRECT transfer through the bounce buffer, in windows aligned to
 * dio_align.  Writes read the partial edge units first (read-modify-write).
 */
static int bdf_bounce_xfer(struct bdf *f, bool write, uint64_t off,
			   uint8_t *buf, size_t len)
{
	const uint64_t a = f->dio_align;
	size_t done = 0;
	int rc;

	rc = bdf_get_bounce(f);
	if (rc)
		return rc;
	while (done < len) {
		uint64_t pos = off + done;
		uint64_t start = pos - pos % a;
		size_t head = (size_t)(pos - start);
		size_t n = len - done;
		size_t win;

		if (n > BDF_BOUNCE_BYTES - a)
			n = BDF_BOUNCE_BYTES - a;
		win = (size_t)(((head + n) + a - 1) / a * a);
		if (!write) {
			rc = bdf_pread_full(f->fd, f->bounce, win, start, true);
			if (rc)
				return rc;
			memcpy(buf + done, f->bounce + head, n);
		} else {
			if (head) {
				rc = bdf_pread_full(f->fd, f->bounce, a, start,
						    true);
				if (rc)
					return rc;
			}
			if ((head + n) % a && (win > a || !head)) {
				rc = bdf_pread_full(f->fd, f->bounce + win - a,
						    a, start + win - a, true);
				if (rc)
					return rc;
			}
			memcpy(f->bounce + head, buf + done, n);
			rc = bdf_pwrite_full(f->fd, f->bounce, win, start);
			if (rc)
				return rc;
		}
		done += n;
	}
	return 0;
}

static int bdf_read(struct sfs_bdev *bd, uint64_t off, void *buf, size_t len)
{
	struct bdf *f = sfs_bdev_priv(bd);

	if (!f->direct)
		return bdf_pread_full(f->fd, buf, len, off, false);
	if (off % BDF_SECTOR || len % BDF_SECTOR)
		return -EINVAL;
	if (!bdf_needs_bounce(f, off, buf, len))
		return bdf_pread_full(f->fd, buf, len, off, false);
	return bdf_bounce_xfer(f, false, off, buf, len);
}

static int bdf_write(struct sfs_bdev *bd, uint64_t off, const void *buf,
		     size_t len)
{
	struct bdf *f = sfs_bdev_priv(bd);

	if (f->rdonly)
		return -EIO;
	if (!f->direct)
		return bdf_pwrite_full(f->fd, buf, len, off);
	if (off % BDF_SECTOR || len % BDF_SECTOR)
		return -EINVAL;
	if (!bdf_needs_bounce(f, off, buf, len))
		return bdf_pwrite_full(f->fd, buf, len, off);
	return bdf_bounce_xfer(f, true, off, (uint8_t *)buf, len);
}

/*
 * One write gathered from iov: pwritev straight from the caller's buffers.
 * An O_DIRECT request with a segment the host cannot take as it is goes
 * segment by segment through bdf_write (and its bounce buffer).
 */
static int bdf_writev(struct sfs_bdev *bd, uint64_t off,
		      const struct iovec *iov, int iovcnt, size_t len)
{
	struct bdf *f = sfs_bdev_priv(bd);
	bool aligned = true;
	int rc = 0;

	if (f->rdonly)
		return -EIO;
	if (!f->direct)
		return bdf_pwritev_full(f->fd, iov, iovcnt, off);
	if (off % BDF_SECTOR || len % BDF_SECTOR)
		return -EINVAL;
	for (int i = 0; i < iovcnt && aligned; i++)
		aligned = !(iov[i].iov_len % f->dio_align) &&
			  !((uintptr_t)iov[i].iov_base % f->mem_align);
	if (aligned && !(off % f->dio_align))
		return bdf_pwritev_full(f->fd, iov, iovcnt, off);
	for (int i = 0; i < iovcnt && !rc; i++) {
		rc = bdf_write(bd, off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	return rc;
}

static int bdf_flush(struct sfs_bdev *bd)
{
	struct bdf *f = sfs_bdev_priv(bd);

	if (f->rdonly || f->nosync)
		return 0;
	if (fdatasync(f->fd) < 0)
		return -EIO;
	return 0;
}

/* Punch a hole (files) or BLKZEROOUT (devices); -EOPNOTSUPP to fall back. */
static int bdf_zero(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	struct bdf *f = sfs_bdev_priv(bd);

	if (f->rdonly)
		return -EIO;
	if (f->blkdev) {
		uint64_t range[2] = {off, len};

		if (off % BDF_SECTOR || len % BDF_SECTOR)
			return -EOPNOTSUPP;
		if (ioctl(f->fd, BLKZEROOUT, range) == 0)
			return 0;
		return errno == EIO ? -EIO : -EOPNOTSUPP;
	}
	if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)off, (off_t)len) == 0)
		return 0;
	if (errno == EIO)
		return -EIO;
	if (fallocate(f->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
		      (off_t)off, (off_t)len) == 0)
		return 0;
	return errno == EIO ? -EIO : -EOPNOTSUPP;
}

/*
 * Allocate the host blocks under [off, off+len) of an image file without
 * changing what it reads (fallocate mode KEEP_SIZE).  A host file system
 * without fallocate, and a block device, have nothing to reserve: 0.
 */
static int bdf_reserve(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	struct bdf *f = sfs_bdev_priv(bd);

	if (f->rdonly || f->blkdev)
		return 0;
	while (fallocate(f->fd, FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) <
	       0) {
		if (errno == EINTR)
			continue;
		if (errno == EOPNOTSUPP)
			return 0;
		return bdf_err(errno);
	}
	return 0;
}

/*
 * What the host file system can still give the image file: f_bavail (the
 * unprivileged share, a lower bound even for root), or UINT64_MAX when
 * the file has no holes to fill (st_blocks covers st_size) or is a device.
 */
static int bdf_host_room(struct sfs_bdev *bd, uint64_t *bytes_out)
{
	struct bdf *f = sfs_bdev_priv(bd);
	struct statvfs sv;
	struct stat st;

	*bytes_out = UINT64_MAX;
	if (f->rdonly || f->blkdev)
		return 0;
	if (fstat(f->fd, &st) < 0)
		return -EIO;
	if ((uint64_t)st.st_blocks * 512 >= (uint64_t)st.st_size)
		return 0;
	if (fstatvfs(f->fd, &sv) < 0)
		return errno == ENOSYS ? 0 : -EIO;
	*bytes_out = (uint64_t)sv.f_bavail * sv.f_frsize;
	return 0;
}

static void bdf_close(struct sfs_bdev *bd)
{
	struct bdf *f = sfs_bdev_priv(bd);

	if (f->nosync && !f->rdonly && fdatasync(f->fd) < 0)
		g_printerr("simfs: syncing the image at close failed: %s\n",
			   g_strerror(errno));
	close(f->fd); /* also drops the flock */
	free(f->bounce);
	g_free(f);
}

static const struct sfs_bdev_ops bdf_ops = {
    .name = "file",
    .read = bdf_read,
    .write = bdf_write,
    .flush = bdf_flush,
    .close = bdf_close,
    .zero = bdf_zero,
    .reserve = bdf_reserve,
    .host_room = bdf_host_room,
    .writev = bdf_writev,
};

/* Find the O_DIRECT alignment the host wants for fd. */
static void bdf_dio_align(struct bdf *f)
{
	f->dio_align = BDF_SECTOR;
	f->mem_align = BDF_SECTOR;
	if (f->blkdev) {
		int ssz = 0;

		if (ioctl(f->fd, BLKSSZGET, &ssz) == 0 && ssz >= 512 &&
		    (ssz & (ssz - 1)) == 0)
			f->dio_align = f->mem_align = (uint32_t)ssz;
		return;
	}
#ifdef STATX_DIOALIGN
	{
		struct statx stx;

		if (statx(f->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) ==
			0 &&
		    (stx.stx_mask & STATX_DIOALIGN)) {
			if (stx.stx_dio_offset_align > BDF_SECTOR &&
			    stx.stx_dio_offset_align <= 65536)
				f->dio_align = stx.stx_dio_offset_align;
			if (stx.stx_dio_mem_align > 0 &&
			    stx.stx_dio_mem_align <= 65536)
				f->mem_align = stx.stx_dio_mem_align;
		}
	}
#endif
	if (f->mem_align < sizeof(void *))
		f->mem_align = sizeof(void *);
}

/*
 * Open an image file or block device (see blockdev.h).  -ENOENT, -EACCES,
 * -EBUSY (SFS_BDEV_EXCL and in use), -EINVAL (bad flags, not a file or
 * device, O_DIRECT refused by the host), -EIO.
 */
int sfs_bdev_open_file(const char *path, unsigned flags, uint64_t size_bytes,
		       struct sfs_bdev **out)
{
	const unsigned known =
	    SFS_BDEV_RDONLY | SFS_BDEV_DIRECT | SFS_BDEV_EXCL | SFS_BDEV_CREATE |
	    SFS_BDEV_NOSYNC;
	struct stat st;
	struct bdf *f;
	struct sfs_bdev *bd;
	bool zero = false;
	uint64_t size;
	int oflags, fd, rc;

	if (!path || !out || (flags & ~known) ||
	    ((flags & SFS_BDEV_RDONLY) && (flags & SFS_BDEV_CREATE)))
		return -EINVAL;
	*out = NULL;

	oflags = O_CLOEXEC | ((flags & SFS_BDEV_RDONLY) ? O_RDONLY : O_RDWR);
	if (flags & SFS_BDEV_DIRECT)
		oflags |= O_DIRECT;
	if (stat(path, &st) == 0) {
		if (S_ISBLK(st.st_mode) && (flags & SFS_BDEV_EXCL))
			oflags |= O_EXCL; /* Linux: exclusive block device */
	} else if (errno == ENOENT && (flags & SFS_BDEV_CREATE)) {
		oflags |= O_CREAT;
	} else {
		return -errno;
	}

	fd = open(path, oflags, 0644);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -EIO;
		goto out_close;
	}
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size) < 0) {
			rc = -EIO;
			goto out_close;
		}
		if ((flags & SFS_BDEV_CREATE) && size_bytes > size) {
			rc = -EINVAL;
			goto out_close;
		}
	} else if (S_ISREG(st.st_mode)) {
		if ((flags & SFS_BDEV_EXCL) &&
		    flock(fd, LOCK_EX | LOCK_NB) < 0) {
			rc = (errno == EWOULDBLOCK) ? -EBUSY : -EIO;
			goto out_close;
		}
		size = (uint64_t)st.st_size;
		if ((flags & SFS_BDEV_CREATE) && size_bytes > size) {
			if (ftruncate(fd, (off_t)size_bytes) < 0) {
				rc = (errno == EFBIG || errno == EINVAL)
					 ? -EINVAL
					 : -EIO;
				goto out_close;
			}
			zero = (size == 0);
			size = size_bytes;
		}
	} else {
		rc = -EINVAL;
		goto out_close;
	}

	f = g_new0(struct bdf, 1);
	f->fd = fd;
	f->direct = (flags & SFS_BDEV_DIRECT) != 0;
	f->blkdev = S_ISBLK(st.st_mode);
	f->rdonly = (flags & SFS_BDEV_RDONLY) != 0;
	f->nosync = (flags & SFS_BDEV_NOSYNC) != 0;
	bdf_dio_align(f);
	bd = sfs_bdev_new(&bdf_ops, f, size);
	bd->known_zero = zero;
	*out = bd;
	return 0;

out_close:
	close(fd);
	return rc;
}
