/*
 * faultdev.c - a stacked device that fails chosen requests.
 *
 * It forwards every request to the device below, with the same category,
 * through that device's door (so the lower device's counters and hook see
 * it).  Armed with (mask, nth, sticky) it counts the requests matching mask
 * (SFS_FAULT_READ / WRITE / FLUSH; a zero request is a write) from the
 * moment it was armed; the nth fails with -EIO without reaching the lower
 * device, and with sticky every later matching request fails too.  It
 * counts what it fired.  Tests loop nth = 1, 2, ... until the operation
 * under test completes untouched.
 */
#include <errno.h>

#include <glib.h>

#include "testsupport.h"

struct faultdev {
	struct sfs_bdev *lower; /* owned */
	bool armed;
	unsigned mask; /* SFS_FAULT_* */
	uint64_t nth;  /* 1-based */
	bool sticky;
	uint64_t seen;	/* matching requests since arming */
	uint64_t fired; /* requests failed, ever */
	int err;	/* what a fired fault returns: -EIO, or set */
};

/* Should this request fail?  Counts it if it matches. */
static bool fault_hit(struct faultdev *f, unsigned what)
{
	if (!f->armed || !(f->mask & what))
		return false;
	f->seen++;
	if (f->seen == f->nth || (f->sticky && f->seen > f->nth)) {
		f->fired++;
		return true;
	}
	return false;
}

static int fault_read(struct sfs_bdev *bd, uint64_t off, void *buf, size_t len)
{
	struct faultdev *f = sfs_bdev_priv(bd);

	if (fault_hit(f, SFS_FAULT_READ))
		return f->err;
	return sfs_bdev_read(f->lower, sfs_bdev_req_cat(bd), off, buf, len);
}

static int fault_write(struct sfs_bdev *bd, uint64_t off, const void *buf,
		       size_t len)
{
	struct faultdev *f = sfs_bdev_priv(bd);

	if (fault_hit(f, SFS_FAULT_WRITE))
		return f->err;
	return sfs_bdev_write(f->lower, sfs_bdev_req_cat(bd), off, buf, len);
}

static int fault_writev(struct sfs_bdev *bd, uint64_t off,
			const struct iovec *iov, int iovcnt, size_t len)
{
	struct faultdev *f = sfs_bdev_priv(bd);

	(void)len;
	if (fault_hit(f, SFS_FAULT_WRITE))
		return f->err;
	return sfs_bdev_writev(f->lower, sfs_bdev_req_cat(bd), off, iov, iovcnt);
}

static int fault_zero(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	struct faultdev *f = sfs_bdev_priv(bd);

	if (fault_hit(f, SFS_FAULT_WRITE))
		return f->err;
	return sfs_bdev_zero(f->lower, sfs_bdev_req_cat(bd), off, len);
}

static int fault_flush(struct sfs_bdev *bd)
{
	struct faultdev *f = sfs_bdev_priv(bd);

	if (fault_hit(f, SFS_FAULT_FLUSH))
		return f->err;
	return sfs_bdev_flush(f->lower);
}

/* Host space below: a fault of its own (SFS_FAULT_RESERVE), as a full
 * host disk under an image file would refuse it. */
static int fault_reserve(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	struct faultdev *f = sfs_bdev_priv(bd);

	if (fault_hit(f, SFS_FAULT_RESERVE))
		return f->err;
	return sfs_bdev_reserve(f->lower, off, len);
}

static void fault_close(struct sfs_bdev *bd)
{
	struct faultdev *f = sfs_bdev_priv(bd);

	sfs_bdev_close(f->lower);
	g_free(f);
}

static const struct sfs_bdev_ops fault_ops = {
    .name = "fault",
    .read = fault_read,
    .write = fault_write,
    .writev = fault_writev,
    .flush = fault_flush,
    .close = fault_close,
    .zero = fault_zero,
    .reserve = fault_reserve,
};

/* Wrap lower (owned from here on); unarmed it forwards everything. */
struct sfs_bdev *sfs_faultdev_new(struct sfs_bdev *lower)
{
	struct faultdev *f;
	struct sfs_bdev *bd;

	if (!lower)
		return NULL;
	f = g_new0(struct faultdev, 1);
	f->lower = lower;
	f->err = -EIO;
	bd = sfs_bdev_new(&fault_ops, f, sfs_bdev_size_bytes(lower));
	sfs_bdev_set_known_zero(bd, sfs_bdev_known_zero(lower));
	return bd;
}

static struct faultdev *fault_of(struct sfs_bdev *bd)
{
	if (!bd || sfs_bdev_name(bd) != fault_ops.name)
		return NULL;
	return sfs_bdev_priv(bd);
}

/* Fail the nth request matching mask from now on (and later ones if
 * sticky).  nth = 0 or mask = 0 disarms. */
void sfs_faultdev_arm(struct sfs_bdev *fd, unsigned mask, uint64_t nth,
		      bool sticky)
{
	struct faultdev *f = fault_of(fd);

	if (!f)
		return;
	f->armed = mask && nth;
	f->mask = mask;
	f->nth = nth;
	f->sticky = sticky;
	f->seen = 0;
}

void sfs_faultdev_set_errno(struct sfs_bdev *fd, int err)
{
	struct faultdev *f = fault_of(fd);

	if (f)
		f->err = err < 0 ? err : -EIO;
}

void sfs_faultdev_disarm(struct sfs_bdev *fd)
{
	struct faultdev *f = fault_of(fd);

	if (f)
		f->armed = false;
}

uint64_t sfs_faultdev_fired(struct sfs_bdev *fd)
{
	struct faultdev *f = fault_of(fd);

	return f ? f->fired : 0;
}
