/*
 * ramdev.c - a block device held in memory that records every request.
 *
 * The bytes live in an anonymous private mapping, so a large device costs
 * only the pages written.  Each request that reaches the device (read,
 * write, zero as a write, flush) is appended to a log with its category,
 * offset and length, in issue order, so a test can assert what a layer
 * sent down and in which order.  Requests the door refuses (range, hook)
 * never reach the device and are not logged.
 *
 * A fresh device reads as zeros and says so (sfs_bdev_known_zero).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include <glib.h>

#include "testsupport.h"

struct ramdev {
	bool borrowed; /* data is the caller's: not unmapped at close */
	uint8_t *data; /* size bytes, mmap'ed */
	uint64_t size;
	GArray *log; /* of struct sfs_io_req */
};

static void ram_log(struct sfs_bdev *bd, enum sfs_io_op op, uint64_t off,
		    uint64_t len)
{
	struct ramdev *r = sfs_bdev_priv(bd);
	struct sfs_io_req req = {
	    .op = op,
	    .cat = op == SFS_IO_FLUSH ? SFS_IO_OTHER : sfs_bdev_req_cat(bd),
	    .off_bytes = off,
	    .len_bytes = len,
	};

	g_array_append_val(r->log, req);
}

static int ram_read(struct sfs_bdev *bd, uint64_t off, void *buf, size_t len)
{
	struct ramdev *r = sfs_bdev_priv(bd);

	ram_log(bd, SFS_IO_READ, off, len);
	memcpy(buf, r->data + off, len);
	return 0;
}

static int ram_write(struct sfs_bdev *bd, uint64_t off, const void *buf,
		     size_t len)
{
	struct ramdev *r = sfs_bdev_priv(bd);

	ram_log(bd, SFS_IO_WRITE, off, len);
	memcpy(r->data + off, buf, len);
	return 0;
}

static int ram_writev(struct sfs_bdev *bd, uint64_t off,
		      const struct iovec *iov, int iovcnt, size_t len)
{
	struct ramdev *r = sfs_bdev_priv(bd);

	ram_log(bd, SFS_IO_WRITE, off, len);
	for (int i = 0; i < iovcnt; i++) {
		memcpy(r->data + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	return 0;
}

static int ram_zero(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	struct ramdev *r = sfs_bdev_priv(bd);

	ram_log(bd, SFS_IO_WRITE, off, len);
	memset(r->data + off, 0, len);
	return 0;
}

static int ram_flush(struct sfs_bdev *bd)
{
	ram_log(bd, SFS_IO_FLUSH, 0, 0);
	return 0;
}

static void ram_close(struct sfs_bdev *bd)
{
	struct ramdev *r = sfs_bdev_priv(bd);

	if (!r->borrowed)
		munmap(r->data, r->size);
	g_array_free(r->log, TRUE);
	g_free(r);
}

static const struct sfs_bdev_ops ram_ops = {
    .name = "ram",
    .read = ram_read,
    .write = ram_write,
    .writev = ram_writev,
    .flush = ram_flush,
    .close = ram_close,
    .zero = ram_zero,
};

/* A zero-filled RAM device of size_bytes; NULL if it cannot be mapped. */
struct sfs_bdev *sfs_ramdev_new(uint64_t size_bytes)
{
	struct ramdev *r;
	struct sfs_bdev *bd;
	void *p;

	if (size_bytes == 0 || size_bytes > SIZE_MAX)
		return NULL;
	p = mmap(NULL, size_bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	r = g_new0(struct ramdev, 1);
	r->data = p;
	r->size = size_bytes;
	r->log = g_array_new(FALSE, FALSE, sizeof(struct sfs_io_req));
	bd = sfs_bdev_new(&ram_ops, r, size_bytes);
	sfs_bdev_set_known_zero(bd, true);
	return bd;
}

/* A RAM device over the caller's bytes, which outlive its close. */
struct sfs_bdev *sfs_ramdev_wrap(uint8_t *bytes, uint64_t size_bytes)
{
	struct ramdev *r;

	if (!bytes || size_bytes == 0)
		return NULL;
	r = g_new0(struct ramdev, 1);
	r->borrowed = true;
	r->data = bytes;
	r->size = size_bytes;
	r->log = g_array_new(FALSE, FALSE, sizeof(struct sfs_io_req));
	return sfs_bdev_new(&ram_ops, r, size_bytes);
}

static struct ramdev *ram_of(struct sfs_bdev *bd)
{
	if (!bd || sfs_bdev_name(bd) != ram_ops.name)
		return NULL;
	return sfs_bdev_priv(bd);
}

/* The log; valid until the next request or sfs_ramdev_clear_log. */
const struct sfs_io_req *sfs_ramdev_log(struct sfs_bdev *bd, size_t *n_out)
{
	struct ramdev *r = ram_of(bd);

	if (!r) {
		*n_out = 0;
		return NULL;
	}
	*n_out = r->log->len;
	return (const struct sfs_io_req *)(void *)r->log->data;
}

void sfs_ramdev_clear_log(struct sfs_bdev *bd)
{
	struct ramdev *r = ram_of(bd);

	if (r)
		g_array_set_size(r->log, 0);
}

uint8_t *sfs_ramdev_data(struct sfs_bdev *bd)
{
	struct ramdev *r = ram_of(bd);

	return r ? r->data : NULL;
}
