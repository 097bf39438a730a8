/*
 * blockdev.h - the backing device: an image file or a block device.
 *
 * Every byte simfs stores goes through these verbs.  A device is a
 * `const struct sfs_bdev_ops` table plus a private pointer; devices stack
 * (a fault injector or a crash recorder wraps another device and forwards to
 * it), as the timing model of models/device/ will.
 *
 *   sfs_bdev_open_file(path, flags, &bd)   image file or /dev node
 *   sfs_bdev_read/write(bd, cat, off, buf, len)
 *   sfs_bdev_writev(bd, cat, off, iov, iovcnt)  one write from many buffers
 *   sfs_bdev_flush(bd)                      barrier: all earlier writes durable
 *   sfs_bdev_close(bd)
 *
 * One door: only sfs_bdev_read/write/flush call bd->ops.  They check the
 * range, then pass the request to the hook point (sfs_bdev_set_hook) before
 * issuing it; the hook sees the request's category and may fail it (fault
 * injection) or account it (stats, timing).  After the request completes the
 * hook is called again with `done` set and the result.
 *
 * Errors: -EIO (device failed), -EINVAL (out of range or misaligned for
 * O_DIRECT), -ENOSPC when the host cannot give a sparse image file the
 * space a write or sfs_bdev_reserve needs (the device's size is fixed, but
 * the host disk under it may be full).
 */
#ifndef SFS_BLOCKDEV_H
#define SFS_BLOCKDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* What a request carries; counted separately by stats and shown in logs. */
enum sfs_io_cat {
	SFS_IO_DATA = 0,   /* file contents */
	SFS_IO_INODE,      /* inode table blocks */
	SFS_IO_BITMAP,     /* block and inode bitmaps */
	SFS_IO_DIR,        /* directory blocks */
	SFS_IO_INDIRECT,   /* indirect blocks / extent tree nodes */
	SFS_IO_SUPER,      /* superblock */
	SFS_IO_GDT,        /* group descriptor table */
	SFS_IO_XATTR,      /* extended attribute blocks */
	SFS_IO_JOURNAL,    /* journal blocks (later layers refine this) */
	SFS_IO_OTHER,      /* anything else (mkfs zeroing, inspect) */
	SFS_IO_DIRIDX,     /* htree index blocks (dx_root, dx_node) */
	SFS_IO_NCAT
};

enum sfs_io_op { SFS_IO_READ = 0, SFS_IO_WRITE, SFS_IO_FLUSH };

const char *sfs_io_cat_name(enum sfs_io_cat cat);
const char *sfs_io_op_name(enum sfs_io_op op);

struct sfs_io_req {
	enum sfs_io_op op;
	enum sfs_io_cat cat;
	uint64_t off_bytes; /* 0 for a flush */
	uint64_t len_bytes; /* 0 for a flush */
	uint32_t stream;    /* who asked: sfs_io_stream() at the door */
};

/*
 * The submitter of the requests a thread issues: a process id while the
 * engine works for that process (a write(2) through FUSE), 0 for work the
 * filesystem does on its own account (write-back, journal, metadata).
 * Like the kernel's `current`, it belongs to the calling thread, not to a
 * device: the engine sets it around an operation, the door copies it into
 * every request, and a per-process scheduler (sched=cfq, timedev.h) keys
 * its queues on it.  Nothing else reads it.
 */
void sfs_io_set_stream(uint32_t id);
uint32_t sfs_io_stream(void);

struct sfs_bdev;

/*
 * Hook called twice per request: before (done == false; a non-zero return
 * -errno fails the request without issuing it) and after (done == true,
 * result = the request's 0 / -errno; the return value is ignored).
 */
typedef int (*sfs_bdev_hook_fn)(void *arg, const struct sfs_io_req *req,
				bool done, int result);

/*
 * A device model.  All members but name, read, write and size_bytes may be
 * NULL.  read/write transfer exactly len bytes at off or fail with -errno.
 */
struct sfs_bdev_ops {
	const char *name;
	int (*read)(struct sfs_bdev *bd, uint64_t off, void *buf, size_t len);
	int (*write)(struct sfs_bdev *bd, uint64_t off, const void *buf,
		     size_t len);
	int (*flush)(struct sfs_bdev *bd);       /* optional: no-op */
	void (*close)(struct sfs_bdev *bd);      /* optional: frees priv */
	/*
	 * Optional: make [off, off+len) read as zeros, cheaply if the device
	 * can (punch a hole, BLKZEROOUT).  -EOPNOTSUPP (or NULL) makes the
	 * door write zero buffers through ->write instead.
	 */
	int (*zero)(struct sfs_bdev *bd, uint64_t off, uint64_t len);
	/*
	 * Optional: make sure later writes of [off, off+len) will not fail
	 * for want of space below (fallocate(2) on a sparse image file); the
	 * contents do not change.  0, -ENOSPC (no room on the host) or -EIO.
	 * NULL: nothing to reserve (RAM, block device, an overlay).  Stacked
	 * devices forward it.  Not a request: not counted, not hooked.
	 */
	int (*reserve)(struct sfs_bdev *bd, uint64_t off, uint64_t len);
	/*
	 * Optional: how many more bytes the host can give the device's
	 * holes (statvfs of a sparse image file's file system; UINT64_MAX
	 * for a file without holes).  0 or -errno.  NULL: no limit below.
	 * Stacked devices forward it.
	 */
	int (*host_room)(struct sfs_bdev *bd, uint64_t *bytes_out);
	/*
	 * Optional: one write of len bytes at off gathered from iov[0..iovcnt)
	 * (len is their sum, iovcnt >= 1).  Stacked devices forward it as one
	 * request (sfs_bdev_writev), so every layer sees what one write of the
	 * same bytes would show.  NULL: the door gathers the buffers into one
	 * and calls ->write.
	 */
	int (*writev)(struct sfs_bdev *bd, uint64_t off, const struct iovec *iov,
		      int iovcnt, size_t len);
};

/* Flags for sfs_bdev_open_file. */
#define SFS_BDEV_RDONLY 0x1 /* open read-only */
#define SFS_BDEV_DIRECT 0x2 /* O_DIRECT: bypass the host page cache */
#define SFS_BDEV_EXCL 0x4   /* take an exclusive lock: refuse if in use */
#define SFS_BDEV_CREATE 0x8 /* create the image file if missing */
/* Flushes are not passed to the host (a simulation, whose durability on
 * the host does not matter until the end): one fdatasync at close. */
#define SFS_BDEV_NOSYNC 0x10

/*
 * Open an image file or block device.  For a regular file the size is the
 * file's size (sfs_bdev_open_file does not grow it; use size_bytes != 0 with
 * SFS_BDEV_CREATE to create/extend a sparse file).  With SFS_BDEV_EXCL a
 * second opener gets -EBUSY.  Returns 0 or -errno; *out is freed by
 * sfs_bdev_close.
 */
int sfs_bdev_open_file(const char *path, unsigned flags, uint64_t size_bytes,
		       struct sfs_bdev **out);

/* Build a device from an ops table (for stacked and test devices). */
struct sfs_bdev *sfs_bdev_new(const struct sfs_bdev_ops *ops, void *priv,
			      uint64_t size_bytes);
void *sfs_bdev_priv(struct sfs_bdev *bd);

uint64_t sfs_bdev_size_bytes(const struct sfs_bdev *bd);
const char *sfs_bdev_name(const struct sfs_bdev *bd);

int sfs_bdev_read(struct sfs_bdev *bd, enum sfs_io_cat cat, uint64_t off,
		  void *buf, size_t len);
int sfs_bdev_write(struct sfs_bdev *bd, enum sfs_io_cat cat, uint64_t off,
		   const void *buf, size_t len);
/*
 * One write request of the bytes of iov[0..iovcnt) in order, at off: the
 * hook, the counters and every stacked device see what sfs_bdev_write of
 * the same bytes in one buffer would show.  Devices with ops->writev take
 * the buffers as they are (the file backend: pwritev); the others get a
 * gathered copy.  0, -EINVAL (range, iovcnt < 1, a NULL base), -ENOMEM,
 * -ENOSPC or -EIO.
 */
int sfs_bdev_writev(struct sfs_bdev *bd, enum sfs_io_cat cat, uint64_t off,
		    const struct iovec *iov, int iovcnt);
int sfs_bdev_flush(struct sfs_bdev *bd);
/*
 * Make [off, off+len) read as zeros (mkfs: inode tables on a used device).
 * One write request for the hook and the counters; 0, -EINVAL or -EIO.
 */
int sfs_bdev_zero(struct sfs_bdev *bd, enum sfs_io_cat cat, uint64_t off,
		  uint64_t len);

/*
 * Reserve room below for [off, off+len) (ops->reserve): 0, -EINVAL
 * (range), -ENOSPC (the host disk under an image file is full) or -EIO.
 * The engine calls it when it hands out blocks, so that running out of
 * host space is an error of that call, not of a later write-back.
 */
int sfs_bdev_reserve(struct sfs_bdev *bd, uint64_t off, uint64_t len);

/*
 * A lower bound of the host space left for the device's unwritten holes
 * (ops->host_room), UINT64_MAX when nothing below limits it.  Delayed
 * allocation, which reserves no block at write time, asks it.  0 or -EIO.
 */
int sfs_bdev_host_room(struct sfs_bdev *bd, uint64_t *bytes_out);

/*
 * True while every byte of the device is known to read as zero: a sparse
 * file that sfs_bdev_open_file created (or found empty) and extended, or a
 * fresh RAM device, not written since.  mkfs then skips zeroing.  Device
 * implementations set it with sfs_bdev_set_known_zero; any write clears it.
 */
bool sfs_bdev_known_zero(const struct sfs_bdev *bd);
void sfs_bdev_set_known_zero(struct sfs_bdev *bd, bool zero);

/*
 * For device implementations, inside an ops call: the category of the
 * request being served, so a stacked device can forward it (and a logging
 * one record it).  Requests on one device are issued one at a time (the
 * engine's lock serialises them).
 */
enum sfs_io_cat sfs_bdev_req_cat(const struct sfs_bdev *bd);

/* Install the hook point (one per device; NULL removes it). */
void sfs_bdev_set_hook(struct sfs_bdev *bd, sfs_bdev_hook_fn fn, void *arg);

/*
 * Per-device counters, kept by the door whatever the hook does: reqs and
 * bytes count every in-range request, failed ones included (a zero request
 * is a write); errors counts every failed request, out-of-range ones too.
 */
struct sfs_bdev_counters {
	uint64_t reqs[3];                   /* by op */
	uint64_t bytes[3];                  /* by op */
	uint64_t cat_reqs[3][SFS_IO_NCAT];  /* [op][cat] */
	uint64_t cat_bytes[3][SFS_IO_NCAT]; /* [op][cat] */
	uint64_t errors;                    /* requests that failed */
};
void sfs_bdev_counters(const struct sfs_bdev *bd, struct sfs_bdev_counters *out);

/* Close the device (and, for stacked devices, what its close frees). */
void sfs_bdev_close(struct sfs_bdev *bd);

/*
 * A copy-on-write device in memory over base (overlay.c): writes stay in
 * memory, reads see them over base's bytes, base is never written.  Takes
 * base: closing the overlay closes it.
 */
struct sfs_bdev *sfs_bdev_overlay_new(struct sfs_bdev *base);

/*
 * A device that forwards every request to lower and closes nothing
 * (borrow.c), so the engine, which closes what it is opened over, can run
 * over a device its caller keeps using.  Close it before lower.
 */
struct sfs_bdev *sfs_bdev_borrow_new(struct sfs_bdev *lower);

#endif /* SFS_BLOCKDEV_H */
