/*
 * fs.h - libsimfs, the engine: an ext2/3/4-format filesystem driven by inode
 * number, in the style of the FUSE lowlevel API but with no FUSE in it.
 *
 * The FUSE daemon (simfs/fuse.c), the tests and later the trace replayer all
 * drive this one API.  Conventions:
 *  - every verb returns 0 or -errno, results through out parameters;
 *  - inode numbers are ext2's: the root is SFS_ROOT_INO (2);
 *  - names are byte strings of 1..255 bytes without '/'; longer names get
 *    -ENAMETOOLONG, empty or "."/".." where a new name is needed -EINVAL or
 *    -EEXIST as POSIX says;
 *  - an inode number that is not in use gets -ESTALE (never a crash);
 *  - calls are serialised by the engine's own lock, so any thread may call.
 *
 * Life cycle: sfs_fs_open (check the image, load the superblock and group
 * descriptors) ... verbs ... sfs_fs_close (write everything back, mark the
 * image clean, close the device).
 */
#ifndef SFS_FS_H
#define SFS_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "blockdev.h"
#include "config.h"
#include "format.h"

struct sfs_fs;
struct sfs_stats;
struct sfs_cache_policy;

/* What getattr reports (struct stat, in ext2 units). */
struct sfs_attr {
	sfs_ino_t ino;
	uint32_t mode;     /* type | permissions */
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint64_t size;     /* bytes */
	uint64_t blocks;   /* 512-byte sectors, as i_blocks */
	uint32_t rdev;     /* device number (makedev form) for CHR/BLK */
	uint32_t blksize;  /* preferred I/O size: the block size */
	uint32_t generation;
	struct timespec atime;
	struct timespec mtime;
	struct timespec ctime;
	struct timespec btime; /* i_crtime, when has_btime */
	bool has_btime; /* a large inode whose extra space holds i_crtime */
};

/* Which fields of sfs_setattr's `in` to apply. */
#define SFS_SET_MODE 0x01
#define SFS_SET_UID 0x02
#define SFS_SET_GID 0x04
#define SFS_SET_SIZE 0x08
#define SFS_SET_ATIME 0x10
#define SFS_SET_MTIME 0x20
#define SFS_SET_ATIME_NOW 0x40
#define SFS_SET_MTIME_NOW 0x80
#define SFS_SET_CTIME 0x100

/* The mode of sfs_mknod/sfs_mkdir may carry the creator's umask, which
 * is then applied only if the parent has no default ACL (acl.c rule 3);
 * without it the mode is used as given (the caller masked it). */
#define SFS_MODE_HAS_UMASK 0x80000000u
#define SFS_MODE_UMASK(u) (SFS_MODE_HAS_UMASK | (((uint32_t)(u) & 0777u) << 16))

/* rename flags (values of the Linux renameat2 flags) */
#define SFS_RENAME_NOREPLACE 0x1
#define SFS_RENAME_EXCHANGE 0x2
#define SFS_RENAME_WHITEOUT 0x4 /* sfs_rename_whiteout only */

/* setxattr flags (values of XATTR_CREATE / XATTR_REPLACE) */
#define SFS_XATTR_CREATE 0x1
#define SFS_XATTR_REPLACE 0x2

struct sfs_statfs {
	uint32_t block_size;
	uint64_t blocks;       /* total */
	uint64_t blocks_free;  /* free, including the reserved ones */
	uint64_t blocks_avail; /* free for non-root users */
	uint64_t inodes;
	uint64_t inodes_free;
	uint32_t name_max;
};

/*
 * Open the filesystem on bd (the engine owns bd from here on, closing it in
 * sfs_fs_close, or on failure).  Refuses, with a one-line reason in *err
 * (g_free it), a device that is not ext2/3/4, a revision or feature outside
 * the subset (naming the feature), or geometry that does not add up.
 * -EINVAL for a bad image, -EIO for a device error.  The device stack the
 * engine builds over bd, the clock and the stats come from cfg (device=,
 * sched=, clock=, stats=, iolog=): see config.h.
 */
int sfs_fs_open(struct sfs_bdev *bd, const struct sfs_config *cfg,
		struct sfs_fs **out, char **err);
/* Write everything back, mark the image clean, close the device. */
int sfs_fs_close(struct sfs_fs *fs);
/*
 * The write-back policy (cache.h) a filesystem opened with cfg installs:
 * the vm= preset, then the dirty_* knobs that are set.  0, or -EINVAL
 * with *err (g_free it) for an unknown preset.
 */
int sfs_fs_cache_policy(const struct sfs_config *cfg,
			struct sfs_cache_policy *p, char **err);
/* Drop everything without writing a byte (a simulated power cut): what
 * the device holds is what a crash would leave.  Closes the device. */
void sfs_fs_abort(struct sfs_fs *fs);

/* Write all dirty state to the device and flush it (sync(2)). */
int sfs_fs_sync(struct sfs_fs *fs);

uint32_t sfs_fs_block_size(const struct sfs_fs *fs);
/* The run's statistics (stats.h) and clock (clock.h): owned by the fs. */
struct sfs_stats *sfs_fs_stats(struct sfs_fs *fs);
struct sfs_clock *sfs_fs_clock(struct sfs_fs *fs);
/* Print the stats table to out (or nothing: NULL) at sfs_fs_close. */
void sfs_fs_set_report(struct sfs_fs *fs, FILE *out);
/*
 * Have sfs_fs_close call fn(arg, stats) once everything is written back,
 * just before the stats are freed (e.g. for a summary line); NULL: none.
 */
typedef void (*sfs_fs_close_fn)(void *arg, struct sfs_stats *stats);
void sfs_fs_set_close_fn(struct sfs_fs *fs, sfs_fs_close_fn fn, void *arg);
struct sfs_bdev *sfs_fs_bdev(struct sfs_fs *fs);
/* A copy of the knobs in effect, taken under the engine's lock. */
void sfs_fs_get_config(struct sfs_fs *fs, struct sfs_config *out);
/*
 * Change knobs while mounted, from an option string ("clock=emulate",
 * "device=hdd-2009,rpm=5400"): all or nothing.  Only clock=account|emulate
 * (on a real clock) and device=SPEC (over a timing device; counters carry
 * on) may change, with the knobs config.h lists; a refusal has a
 * one-line reason in *err (g_free it), changes nothing, and says why in
 * its errno: -EINVAL a value that does not parse (or knobs that disagree),
 * -ERANGE a number out of range, -ENOKEY no such knob, -EPERM a knob or
 * change this live mount cannot take.
 */
int sfs_fs_set_knobs(struct sfs_fs *fs, const char *opts, char **err);

/*
 * A driver of virtual time (simfs run, run.h) runs many clients through one
 * engine by events.  With a driver set, operations no longer do the
 * flusher's and the journal's timed work at their start: the driver calls
 * sfs_fs_writeback_tick and sfs_fs_journal_tick as actors of their own when
 * the deadlines come, so no client waits for write-back it did not cause.
 * Group commit: an fsync that needs a commit while commit_busy says one is
 * still in flight returns -EINPROGRESS, having written its data; the driver
 * calls it again once that commit is done, and the commit then carries
 * every fsync that joined the transaction meanwhile, as jbd2's does.
 */
struct sfs_fs_driver {
	bool (*commit_busy)(void *arg);	   /* a commit's I/O is in flight */
	void (*commit_started)(void *arg); /* the caller's op is committing */
};
void sfs_fs_set_driver(struct sfs_fs *fs, const struct sfs_fs_driver *d,
		       void *arg);
/* When write-back (flusher, background threshold) or a journal commit or
 * checkpoint is next due (UINT64_MAX: nothing is). */
sfs_ns_t sfs_fs_writeback_deadline(struct sfs_fs *fs);
sfs_ns_t sfs_fs_journal_deadline(struct sfs_fs *fs);
/* Do what is due now; 0 or -errno (the filesystem then is in error). */
int sfs_fs_writeback_tick(struct sfs_fs *fs);
int sfs_fs_journal_tick(struct sfs_fs *fs);

/* ---- namespace ---- */
int sfs_lookup(struct sfs_fs *fs, sfs_ino_t parent, const char *name,
	       struct sfs_attr *out);
int sfs_getattr(struct sfs_fs *fs, sfs_ino_t ino, struct sfs_attr *out);
int sfs_setattr(struct sfs_fs *fs, sfs_ino_t ino, const struct sfs_attr *in,
		unsigned valid, struct sfs_attr *out);
/* Create a regular file, device, FIFO or socket (mode carries the type). */
int sfs_mknod(struct sfs_fs *fs, sfs_ino_t parent, const char *name,
	      uint32_t mode, uint32_t rdev, uint32_t uid, uint32_t gid,
	      struct sfs_attr *out);
int sfs_mkdir(struct sfs_fs *fs, sfs_ino_t parent, const char *name,
	      uint32_t mode, uint32_t uid, uint32_t gid, struct sfs_attr *out);
int sfs_symlink(struct sfs_fs *fs, sfs_ino_t parent, const char *name,
		const char *target, uint32_t uid, uint32_t gid,
		struct sfs_attr *out);
int sfs_link(struct sfs_fs *fs, sfs_ino_t ino, sfs_ino_t newparent,
	     const char *newname, struct sfs_attr *out);
/* O_TMPFILE: a nameless regular file (mode as sfs_mknod's), returned
 * open (sfs_release closes it) with a lookup reference counted; on the
 * orphan list until sfs_link names it.  -ENOENT, -ENOTDIR, -ENOSPC,
 * -EROFS, -EINVAL. */
int sfs_tmpfile(struct sfs_fs *fs, sfs_ino_t parent, uint32_t mode,
		uint32_t uid, uint32_t gid, struct sfs_attr *out);
/* -ENOENT, -EISDIR (unlink of a directory), -ENOTDIR, -ENOTEMPTY (rmdir) */
int sfs_unlink(struct sfs_fs *fs, sfs_ino_t parent, const char *name);
int sfs_rmdir(struct sfs_fs *fs, sfs_ino_t parent, const char *name);
/* flags: 0, SFS_RENAME_NOREPLACE or SFS_RENAME_EXCHANGE. -EINVAL when a
 * directory would move under itself. */
int sfs_rename(struct sfs_fs *fs, sfs_ino_t parent, const char *name,
	       sfs_ino_t newparent, const char *newname, unsigned flags);
/* rename(2)'s RENAME_WHITEOUT (flags 0 or SFS_RENAME_NOREPLACE besides):
 * the old name is left to a whiteout, a character device 0:0 owned by
 * uid:gid, made in the same operation as ext4 does (ext4_whiteout_for_
 * rename).  Errors as sfs_rename. */
int sfs_rename_whiteout(struct sfs_fs *fs, sfs_ino_t parent, const char *name,
			sfs_ino_t newparent, const char *newname,
			unsigned flags, uint32_t uid, uint32_t gid);
/* Copy the link target (not NUL-terminated) into buf; *len_out = its length. */
int sfs_readlink(struct sfs_fs *fs, sfs_ino_t ino, char *buf, size_t size,
		 size_t *len_out);

/*
 * Lookup references, the FUSE contract.  Once sfs_fs_count_lookups is
 * called, every successful sfs_lookup, sfs_mknod, sfs_mkdir, sfs_symlink
 * and sfs_link counts one reference to the inode it returns, taken under
 * the same lock as the answer; sfs_forget gives n of them back.  An inode
 * that loses its last link is freed only when neither the kernel nor an
 * open holds it: the kernel may still open it (a path walk that found the
 * name just before a rename replaced it), and its number must not be
 * handed to a new file meanwhile.  Without counting (the engine used
 * directly), an unlinked inode goes with its last open, as before.
 */
void sfs_fs_count_lookups(struct sfs_fs *fs);
void sfs_forget(struct sfs_fs *fs, sfs_ino_t ino, uint64_t n);
/*
 * The kernel sends its forget just after the unlink that made an inode
 * nameless, but on another daemon thread: a statfs or an allocation may
 * come first.  sfs_statfs frees such inodes (unlinked, not open, held only
 * by the kernel) before counting, and an allocation that failed with
 * -ENOSPC can call this and try once more if it returns non-zero (the
 * number freed).  The kernel's later open of one gets -ESTALE, on which it
 * looks the name up again; its later forget of one is not counted against
 * a new file that has the number by then.
 */
unsigned sfs_reclaim_unlinked(struct sfs_fs *fs);

/* ---- open files ---- */
/*
 * An open reference keeps an unlinked inode alive until the last
 * sfs_release.  flags are open(2) flags; O_TRUNC truncates.
 */
int sfs_open(struct sfs_fs *fs, sfs_ino_t ino, int flags);
int sfs_release(struct sfs_fs *fs, sfs_ino_t ino);
/* Short read only at end of file; holes read as zeros. */
int sfs_read(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off, size_t len,
	     void *buf, size_t *got_out);
/* Writes all of len or fails (-ENOSPC, -EFBIG, -EIO) having written none
 * past what *written_out reports. */
int sfs_write(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off, const void *buf,
	      size_t len, size_t *written_out);

/* Who writes, and how (front ends that know it pass it on). */
struct sfs_ioctx {
	unsigned flags; /* SFS_IOCTX_DIRECT */
	uint32_t pid;   /* the writing process, 0 if unknown: ext2's
			   allocation "colour" spreads writers over a group */
};
/* O_DIRECT: the data blocks written reach the device before the call
 * returns (metadata follows the journal and write-back as usual); data
 * blocks read come from the device. */
#define SFS_IOCTX_DIRECT 0x1
/* sfs_read with a context (ctx may be NULL).  SFS_IOCTX_DIRECT: whole
 * blocks come from the device, not the cache (dirty copies written first),
 * and do not stay cached; no read-ahead. */
int sfs_read_ctx(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off, size_t len,
		 void *buf, const struct sfs_ioctx *ctx, size_t *got_out);
/* sfs_write with a context (ctx may be NULL). */
int sfs_write_ctx(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off,
		  const void *buf, size_t len, const struct sfs_ioctx *ctx,
		  size_t *written_out);
int sfs_fsync(struct sfs_fs *fs, sfs_ino_t ino, bool datasync);
/*
 * fallocate(2), modes and errors as ext4 gives them (the values are
 * Linux's FALLOC_FL_*; doc/user-guide.md 4.1):
 *   0, KEEP_SIZE          the holes of [off, off+len) get blocks now, as
 *                         unwritten extents that read as zeros; i_size grows
 *                         to off+len unless KEEP_SIZE (extent-mapped files
 *                         only);
 *   PUNCH_HOLE|KEEP_SIZE  the bytes read as zeros, whole blocks are freed;
 *                         nothing at or past EOF (extents and block maps);
 *   ZERO_RANGE[|KEEP_SIZE]  the bytes read as zeros, every block of the
 *                         range allocated, whole ones unwritten;
 *   COLLAPSE_RANGE        the range goes and the rest moves down; block
 *                         aligned, ending before EOF;
 *   INSERT_RANGE          a hole of len bytes opens at off; block aligned,
 *                         off before EOF.
 * -EOPNOTSUPP for another mode or combination, or a mode the file's
 * mapping lacks; -EINVAL for len 0, misalignment, a range past EOF;
 * -EFBIG past the maximum file size; -ENOSPC (what was allocated stays).
 */
#define SFS_FALLOC_KEEP_SIZE 0x01
#define SFS_FALLOC_PUNCH_HOLE 0x02
#define SFS_FALLOC_COLLAPSE_RANGE 0x08
#define SFS_FALLOC_ZERO_RANGE 0x10
#define SFS_FALLOC_INSERT_RANGE 0x20
/* PUNCH_HOLE past EOF stops at the end of this page (the kernel's). */
#define SFS_FALLOC_PAGE 4096u
int sfs_fallocate(struct sfs_fs *fs, sfs_ino_t ino, int mode, uint64_t off,
		  uint64_t len);
/*
 * FS_IOC_GETFLAGS / FS_IOC_SETFLAGS (lsattr, chattr): the inode's i_flags
 * as ext4 shows them (SFS_FL_USER_VISIBLE) and sets them.  Setting or
 * clearing append-only or immutable needs cap_immutable
 * (CAP_LINUX_IMMUTABLE: -EPERM); bits outside the visible set, and changes
 * simfs cannot carry out (extents migration, casefolding), are
 * -EOPNOTSUPP; the other modifiable bits are stored.  Honoured: i, a
 * (EPERM on changes, as the kernel), A (no atime), S (writes
 * synchronous), D (directory changes synchronous), j (the file's data
 * journalled, without delalloc: its write strategy, inode.c).  ctime is
 * updated.
 */
int sfs_get_flags(struct sfs_fs *fs, sfs_ino_t ino, uint32_t *flags_out);
int sfs_set_flags(struct sfs_fs *fs, sfs_ino_t ino, uint32_t flags,
		  bool cap_immutable);

/*
 * lseek(2) SEEK_DATA / SEEK_HOLE (whence carries the Linux value): the
 * first offset >= off in data (delayed blocks are data) or in a hole
 * (unwritten extents and end of file are holes), in *off_out (seek.c).
 * -ENXIO when off >= i_size, or no data follows; -EINVAL for another whence.
 */
int sfs_seek_data_hole(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off,
		       int whence, uint64_t *off_out);

/*
 * Directory listing.  Entries are reported from cookie `off` on (0 = start,
 * including "." and ".."), each with the cookie of the entry after it.  The
 * callback returns non-zero to stop (buffer full); the entry it stopped on
 * is reported again at the next call.  Cookies stay valid across calls while
 * the directory changes: an entry present throughout is reported exactly
 * once.
 */
typedef int (*sfs_filldir_fn)(void *ctx, const char *name, size_t name_len,
			      sfs_ino_t ino, uint8_t ftype, uint64_t next_off);
int sfs_readdir(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off,
		sfs_filldir_fn fn, void *ctx);

int sfs_statfs(struct sfs_fs *fs, struct sfs_statfs *out);

/* ---- extended attributes (user.* only; others -EOPNOTSUPP) ---- */
/* size 0: *len_out = the value's size, nothing copied; -ERANGE if too small */
int sfs_getxattr(struct sfs_fs *fs, sfs_ino_t ino, const char *name,
		 void *buf, size_t size, size_t *len_out);
int sfs_setxattr(struct sfs_fs *fs, sfs_ino_t ino, const char *name,
		 const void *value, size_t size, int flags);
/* NUL-separated full names ("user.x\0user.y\0"); size 0 = just the length */
int sfs_listxattr(struct sfs_fs *fs, sfs_ino_t ino, char *buf, size_t size,
		  size_t *len_out);
int sfs_removexattr(struct sfs_fs *fs, sfs_ino_t ino, const char *name);

#endif /* SFS_FS_H */
