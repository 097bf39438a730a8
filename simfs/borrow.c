/*
 * borrow.c - a device that lends another one out (blockdev.h:
 * sfs_bdev_borrow_new).
 *
 * The engine closes the device it is opened over.  A caller that keeps
 * using a device after the engine is gone (the crash recorder, whose
 * counters are read after unmount; a lab's in-memory disk; mkfs adding a
 * journal through the engine) opens the engine over a borrowing device
 * instead: every request is forwarded to the lower device with its
 * category, and closing the borrower leaves the lower device open.
 */
#include <glib.h>

#include "blockdev.h"

static int bor_read(struct sfs_bdev *bd, uint64_t off, void *buf, size_t len)
{
	return sfs_bdev_read(sfs_bdev_priv(bd), sfs_bdev_req_cat(bd), off, buf,
			     len);
}

static int bor_write(struct sfs_bdev *bd, uint64_t off, const void *buf,
		     size_t len)
{
	return sfs_bdev_write(sfs_bdev_priv(bd), sfs_bdev_req_cat(bd), off, buf,
			      len);
}

static int bor_zero(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	return sfs_bdev_zero(sfs_bdev_priv(bd), sfs_bdev_req_cat(bd), off, len);
}

static int bor_flush(struct sfs_bdev *bd)
{
	return sfs_bdev_flush(sfs_bdev_priv(bd));
}

static const struct sfs_bdev_ops borrow_ops = {
    .name = "borrow",
    .read = bor_read,
    .write = bor_write,
    .flush = bor_flush,
    .zero = bor_zero,
    /* no close: the lower device stays the caller's */
};

struct sfs_bdev *sfs_bdev_borrow_new(struct sfs_bdev *lower)
{
	return sfs_bdev_new(&borrow_ops, lower, sfs_bdev_size_bytes(lower));
}
