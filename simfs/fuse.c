/*
 * fuse.c - the FUSE lowlevel adapter: each libfuse operation is one engine
 * verb (fs.h) plus the translation of arguments and the one reply.
 *
 * Rules every operation follows:
 *  1. Exactly one reply per request; engine errors (-errno) become
 *     fuse_reply_err(req, errno).  Nothing a request carries can crash the
 *     daemon: unknown inodes come back from the engine as -ESTALE.
 *  2. Inode numbers: FUSE's root (FUSE_ROOT_ID, 1) is ext2's root
 *     (SFS_ROOT_INO, 2) in both directions; every other number is the ext2
 *     inode number.  ext2 inode 1 (bad blocks) is never exposed, and the
 *     FUSE number 2 is never handed out, so neither is accepted.
 *  3. The kernel page cache is kept out of the data path: open and create
 *     set direct_io and clear keep_cache, init turns off the writeback
 *     cache and splice, so every read(2)/write(2) becomes a READ/WRITE
 *     request that reaches the engine, whose own (modelled) cache decides
 *     what costs device time.  Only shared mappings (rule 9) put file
 *     pages in the kernel's cache.
 *  4. Permissions are the kernel's job (the mount always carries
 *     default_permissions); access() is not implemented.
 *  5. Lookup counts are the engine's (sfs_fs_count_lookups, fs.h): the
 *     verbs that answer with an entry count one reference under their own
 *     lock, forget gives them back, and an unlinked inode the kernel still
 *     holds is not freed (nor its number reused) until then.  A reply that
 *     does not reach the kernel gives its reference back at once.
 *  6. The engine serialises calls with its own lock, so the multi-threaded
 *     loop needs no locking here.  struct sfs_fuse is written only before
 *     the loop starts; the control files' state has its own lock
 *     (ctl_lock, fuse_ctl.c).
 *  7. Control files (doc/measurement.md, "A live mount"): the directory
 *     /.simfs is answered by fuse_ctl.c, not by the engine.  Each handler
 *     asks once, at its top, through the sfs_ctl_<request> entry point of
 *     its kind (fuse_ctl.h), which answers a request for a control file;
 *     a request it answers is not recorded (rule 8).  It and its files
 *     have inode numbers from SFS_CTL_INO up, above any ext2 inode, so
 *     sfs_fuse_ino_in never hands them to the engine.
 *  8. Recording (mount option trace=FILE, traces/README.md): with a
 *     recorder, each request that maps to a workload op is written as one
 *     trace line (sfs_rec_*): caller's pid, path from the root (the
 *     recorder learns inode -> (parent, name) from every entry reply and
 *     rename), handle number (fi->fh >> 1, given out at open/create),
 *     result and the engine clock's time around the call.  Lookups are
 *     the kernel's path walk: not recorded; getattr is recorded as stat
 *     for non-directories only (a directory's getattr is mostly the
 *     permission check of a walk); mknod, chmod/chown/utimes, flush,
 *     fsyncdir, xattrs, readlink and fallocate are not recorded (but an
 *     access ACL that changes the mode is, as a chmod); readdir
 *     is recorded once per listing (offset 0).  Without trace= the
 *     adapter does nothing of this (one NULL test per request).
 *  9. Shared mappings (doc/internals.md, "mmap"): the kernel refuses
 *     MAP_SHARED of a direct_io file (ENODEV) unless INIT negotiated
 *     FUSE_DIRECT_IO_ALLOW_MMAP (Linux 6.6+), which libfuse 3.14 cannot
 *     ask for.  So the session's device I/O goes through two hooks
 *     (fuse_session_custom_io on the same fd): sfs_fuse_io_read passes
 *     every request through and notes the INIT request's unique and
 *     whether the kernel offers the flag; sfs_fuse_io_writev adds
 *     FUSE_INIT_EXT and the flag to the INIT reply when it was offered.
 *     Every other message passes unchanged.
 * 10. POSIX ACLs (acl.c): unless -o noacl, init asks for FUSE_POSIX_ACL,
 *     so the kernel reads system.posix_acl_* through getxattr and checks
 *     them (with default_permissions), and for FUSE_DONT_MASK, so it
 *     hands the umask over instead of applying it: new inodes get the
 *     creator's umask in their mode (sfs_fuse_new_mode), which the
 *     engine applies only when the parent has no default ACL.
 * 11. O_DIRECT: the kernel's FUSE passes direct requests of direct_io
 *     files on as they are, so the alignment rule ext4 applies is
 *     applied here (sfs_fuse_dio_check): offset and length in units of
 *     the logical block size, 512 bytes.  The O_DIRECT flag is read from
 *     each READ/WRITE request (the file's flags as they are now), never
 *     kept per handle.  The user buffer's address does not reach the
 *     daemon (the kernel copies into the request), so a misaligned
 *     buffer, which ext4 refuses, is not detected.
 * 12. Requests libfuse 3.14 does not know are answered in the read hook
 *     of rule 9 (sfs_fuse_own_request) and never reach libfuse, which
 *     would reply ENOSYS.  The hooks are installed on every mount
 *     (noshared_mmap only stops the INIT change).  FUSE_STATX (Linux
 *     6.6+, sent when a statx(2) asks for STATX_BTIME) gets getattr's
 *     fields plus STATX_BTIME from i_crtime when the inode has room for
 *     it, as ext4_getattr reports it.  FUSE's statx reply has no
 *     direct-I/O alignment fields, so STATX_DIOALIGN cannot be given.
 *     FUSE_TMPFILE (7.37, O_TMPFILE) is answered like CREATE: entry
 *     and open out from sfs_tmpfile, a nameless inode on the orphan
 *     list until FUSE_LINK names it (the VFS checks the open flags and
 *     O_EXCL's "never linkable").
 *     A request whose length is not the bytes read, or too short for
 *     its argument, gets EINVAL.  With trace= they are left to libfuse
 *     (the recorder needs a libfuse request), so the kernel falls back
 *     to GETATTR and reports no birth time, and O_TMPFILE gets
 *     EOPNOTSUPP.
 * 13. Set-group-ID cleared by setfacl (acl.c, rule 10): the kernel says
 *     when an access ACL is set by a caller outside the file's group
 *     without CAP_FSETID (FUSE_SETXATTR_ACL_KILL_SGID, in the extended
 *     fuse_setxattr_in), but only if INIT negotiated FUSE_SETXATTR_EXT,
 *     which libfuse 3.14 does not know.  So the INIT reply of rule 9
 *     asks for it when ACLs are on, and the read hook turns each
 *     SETXATTR back into the 8-byte layout libfuse parses, carrying the
 *     flag in a private setxattr flags bit; sfs_fuse_kill_sgid then
 *     takes S_ISGID off as ext4_set_acl does.
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <syslog.h>
#include <unistd.h>

#include <fuse_lowlevel.h>
#include <glib.h>
#include <linux/fuse.h> /* the INIT request and reply (rule 9) */
#include <sys/uio.h>

#include "fuse_adapter.h"
#include "fuse_ctl.h"
#include "stats.h"
#include "trace.h"
#include "workload.h" /* SFS_WOP_DATASYNC */

#define SFS_FUSE_MAX_WRITE (1u << 20)	/* bytes per WRITE request */
#define SFS_FUSE_MAX_THREADS 16		/* loop workers, at most */
#define SFS_FUSE_IDLE_THREADS 8		/* loop workers kept idle */
#define SFS_FUSE_PREFIX "simfs mount: " /* of libfuse's messages */
#define SFS_FUSE_DIO_ALIGN 512u /* O_DIRECT unit: logical block (rule 11) */

/* INIT flag of Linux 6.6+ (include/uapi/linux/fuse.h, first named
 * FUSE_DIRECT_IO_RELAX): MAP_SHARED allowed on direct_io files.  Bit 36,
 * i.e. bit 4 of flags2, which counts only with FUSE_INIT_EXT. */
#define SFS_FUSE_DIRECT_IO_ALLOW_MMAP (1ull << 36)
/* Rule 13: FUSE_SETXATTR_ACL_KILL_SGID carried to sfs_fuse_setxattr in a
 * setxattr flags bit no caller can set (XATTR_CREATE/REPLACE are 1, 2). */
#define SFS_FUSE_XATTR_KILL_SGID (1 << 30)

static_assert(SFS_RENAME_NOREPLACE == RENAME_NOREPLACE, "rename flag");
static_assert(SFS_RENAME_EXCHANGE == RENAME_EXCHANGE, "rename flag");
static_assert(SFS_RENAME_WHITEOUT == RENAME_WHITEOUT, "rename flag");

struct sfs_fuse {
	struct fuse_session *se;
	struct sfs_fs *fs; /* not owned; set before mounting */
	bool mounted;
	bool signals;		  /* fuse_set_signal_handlers done */
	void (*ready)(void *arg); /* called once, from init */
	void *ready_arg;
	struct sfs_fuse_ctl *ctl;	  /* /.simfs (rule 7); its own lock */
	struct sfs_trace_recorder *trace; /* trace=, or NULL (rule 8); set
					     before the loop */
	bool acl;      /* POSIX ACLs negotiated (rule 10); set in init */
	bool mmap_off; /* -o noshared_mmap: no hooks (rule 9) */
	/* rule 9, all g_atomic: */
	gint io_hooked;	     /* the INIT hooks are installed */
	gint init_seen;	     /* the kernel's INIT request was read */
	guint64 init_unique; /* its unique, once init_seen */
	gint mmap_offered;   /* it offered DIRECT_IO_ALLOW_MMAP */
	gint mmap_granted;   /* our INIT reply asked for it */
	gint sx_offered;     /* it offered FUSE_SETXATTR_EXT (rule 13) */
	gint sx_granted;     /* our INIT reply asked for it */
	gint init_fixed;     /* the INIT reply went out changed */
};

/* ---- translation helpers ---- */

/* FUSE inode -> engine inode, or 0 for a number never handed out (and
 * for the control files, which fuse_ctl.c answers first). */
static sfs_ino_t sfs_fuse_ino_in(fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return SFS_ROOT_INO;
	if (ino == SFS_ROOT_INO || ino >= SFS_CTL_INO)
		return 0;
	return (sfs_ino_t)ino;
}

static fuse_ino_t sfs_fuse_ino_out(sfs_ino_t ino)
{
	return ino == SFS_ROOT_INO ? FUSE_ROOT_ID : ino;
}

static struct sfs_fs *sfs_fuse_fs(fuse_req_t req)
{
	struct sfs_fuse *f = fuse_req_userdata(req);

	return f->fs;
}

/* Reply with an engine result: 0 or -errno (anything else is -EIO). */
static void sfs_fuse_reply_rc(fuse_req_t req, int rc)
{
	if (rc > 0 || rc < -4095)
		rc = -EIO;
	fuse_reply_err(req, -rc);
}

static void sfs_fuse_attr_to_stat(const struct sfs_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = sfs_fuse_ino_out(a->ino);
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)a->blocks;
	st->st_rdev = a->rdev;
	st->st_blksize = a->blksize;
	st->st_atim = a->atime;
	st->st_mtim = a->mtime;
	st->st_ctim = a->ctime;
}

/* An engine inode that may be handed to the kernel (rules 2, 7). */
static bool sfs_fuse_ino_ok(sfs_ino_t ino)
{
	return ino >= SFS_ROOT_INO && ino < SFS_CTL_INO;
}

static void sfs_fuse_fill_entry(const struct sfs_attr *a,
				struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = sfs_fuse_ino_out(a->ino);
	e->generation = a->generation;
	sfs_fuse_attr_to_stat(a, &e->attr);
	e->attr_timeout = SFS_FUSE_TIMEOUT;
	e->entry_timeout = SFS_FUSE_TIMEOUT;
}

/*
 * rc is -ENOSPC: unlinked inodes whose forget has not come yet may hold
 * the space (rule 5).  Free them; true if any were, and the caller tries
 * once more.
 */
static bool sfs_fuse_reclaim(fuse_req_t req, int rc)
{
	return rc == -ENOSPC && sfs_reclaim_unlinked(sfs_fuse_fs(req)) > 0;
}

/* Reply to lookup/mknod/mkdir/symlink/link with rc and the new entry
 * (whose lookup reference the engine counted if rc is 0: rule 5). */
static void sfs_fuse_reply_entry(fuse_req_t req, int rc,
				 const struct sfs_attr *a)
{
	struct fuse_entry_param e;

	if (rc < 0) {
		sfs_fuse_reply_rc(req, rc);
		return;
	}
	if (!sfs_fuse_ino_ok(a->ino)) {
		/* a directory entry naming inode 0 or 1 */
		sfs_forget(sfs_fuse_fs(req), a->ino, 1);
		fuse_reply_err(req, EIO);
		return;
	}
	sfs_fuse_fill_entry(a, &e);
	if (fuse_reply_entry(req, &e) != 0) /* interrupted */
		sfs_forget(sfs_fuse_fs(req), a->ino, 1);
}

static void sfs_fuse_reply_attr(fuse_req_t req, int rc,
				const struct sfs_attr *a)
{
	struct stat st;

	if (rc < 0) {
		sfs_fuse_reply_rc(req, rc);
		return;
	}
	sfs_fuse_attr_to_stat(a, &st);
	fuse_reply_attr(req, &st, SFS_FUSE_TIMEOUT);
}

/* Owner of a new inode: the caller.  (A set-group-ID parent's group is
 * handed down by the engine, as ext2's inode_init_owner does.) */
static void sfs_fuse_owner(fuse_req_t req, uint32_t *uid, uint32_t *gid)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	*uid = ctx->uid;
	*gid = ctx->gid;
}

/* Mode of a new inode: with ACLs (rule 10) the kernel leaves the umask
 * to us, and the engine applies it only without a default ACL. */
static uint32_t sfs_fuse_new_mode(fuse_req_t req, uint32_t mode)
{
	const struct sfs_fuse *f = fuse_req_userdata(req);

	return f->acl ? mode | SFS_MODE_UMASK(fuse_req_ctx(req)->umask) : mode;
}

/* The permission bits a trace records for a new inode: the mode after
 * the umask, as the kernel hands it over without ACLs (rule 10). */
static uint32_t sfs_fuse_rec_mode(fuse_req_t req, uint32_t mode)
{
	const struct sfs_fuse *f = fuse_req_userdata(req);

	if (f->acl)
		mode &= ~(uint32_t)fuse_req_ctx(req)->umask;
	return mode & 07777;
}

static struct sfs_fuse *sfs_fuse_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* The control files (rule 7). */
static struct sfs_fuse_ctl *sfs_fuse_ctl(fuse_req_t req)
{
	return sfs_fuse_of(req)->ctl;
}

/* ---- recording (rule 8) ---- */

/* The kernel's O_LARGEFILE: in the flags of every open a 64-bit process
 * makes (its <fcntl.h> defines O_LARGEFILE as 0), so not the
 * application's choice: not recorded. */
#if defined(__x86_64__) || defined(__i386__)
#define SFS_KERNEL_O_LARGEFILE 0100000u
#elif defined(__aarch64__) || defined(__arm__)
#define SFS_KERNEL_O_LARGEFILE 0400000u
#else
#define SFS_KERNEL_O_LARGEFILE 0u
#endif

/* The recorder of the mount, or NULL when trace= is not given. */
static struct sfs_trace_recorder *sfs_rec(fuse_req_t req)
{
	return sfs_fuse_of(req)->trace;
}

/* The time a request's service starts (0 without a recorder). */
static sfs_ns_t sfs_rec_start(fuse_req_t req)
{
	struct sfs_trace_recorder *t = sfs_rec(req);

	return t ? sfs_trace_now(t) : 0;
}

/* The handle number of an open file (0: none given out). */
static int64_t sfs_rec_fd(const struct fuse_file_info *fi)
{
	return fi ? (int64_t)(fi->fh >> 1) : 0;
}

/* A record of op for req, started at t0_ns, with every other field
 * absent. */
static void sfs_rec_init(fuse_req_t req, struct sfs_trace_rec *r,
			 enum sfs_trace_op op, sfs_ns_t t0_ns)
{
	sfs_trace_rec_init(r);
	r->op = op;
	r->t_ns = t0_ns;
	r->client = (uint64_t)fuse_req_ctx(req)->pid;
}

/* Write r with result rc, its service ending now.  A request the kernel
 * sent on its own (pid 0: a release) counts as the handle's opener's. */
static void sfs_rec_done(fuse_req_t req, struct sfs_trace_rec *r, int rc,
			 const void *data)
{
	struct sfs_trace_recorder *t = sfs_rec(req);
	sfs_ns_t now = sfs_trace_now(t);

	if (r->client == 0 && r->fd > 0)
		r->client = sfs_trace_handle_client(t, r->fd, false);
	r->result = rc > 0 || rc < -4095 ? -EIO : rc;
	r->dur_ns = now > r->t_ns ? now - r->t_ns : 0;
	sfs_trace_record(t, r, data);
}

/* Record an op on one path: (ino, name) or, name NULL, ino itself. */
static void sfs_rec_path(fuse_req_t req, enum sfs_trace_op op, sfs_ns_t t0,
			 fuse_ino_t ino, const char *name, uint32_t mode,
			 int rc)
{
	struct sfs_trace_recorder *t = sfs_rec(req);
	struct sfs_trace_rec r;
	char *path = sfs_trace_path(t, ino, name);

	sfs_rec_init(req, &r, op, t0);
	r.path = path;
	r.mode = mode;
	sfs_rec_done(req, &r, rc, NULL);
	g_free(path);
}

/* Record an op on a handle (close, fsync, ftruncate); none: nothing. */
static void sfs_rec_handle(fuse_req_t req, enum sfs_trace_op op, sfs_ns_t t0,
			   const struct fuse_file_info *fi, uint32_t flags,
			   uint64_t len, int rc)
{
	struct sfs_trace_rec r;

	if (sfs_rec_fd(fi) <= 0)
		return;
	sfs_rec_init(req, &r, op, t0);
	r.fd = sfs_rec_fd(fi);
	r.flags = flags;
	r.len = len;
	sfs_rec_done(req, &r, rc, NULL);
}

/* An open (or create) of (ino, name): give it a handle if it succeeded
 * and record it. */
static void sfs_rec_open(fuse_req_t req, sfs_ns_t t0, fuse_ino_t ino,
			 const char *name, struct fuse_file_info *fi,
			 uint32_t mode, int rc)
{
	struct sfs_trace_recorder *t = sfs_rec(req);
	struct sfs_trace_rec r;
	char *path = sfs_trace_path(t, ino, name);

	sfs_rec_init(req, &r, SFS_TOP_OPEN, t0);
	r.path = path;
	r.flags = (uint32_t)fi->flags & ~SFS_KERNEL_O_LARGEFILE;
	r.mode = mode;
	if (rc == 0) {
		r.fd = sfs_trace_open_handle(t, r.client);
		fi->fh |= (uint64_t)r.fd << 1;
	}
	sfs_rec_done(req, &r, rc, NULL);
	g_free(path);
}

/* ---- requests libfuse 3.14 does not know (rule 12) ---- */

/* FUSE_STATX (protocol 7.39, include/uapi/linux/fuse.h of Linux 6.6+);
 * this system's <linux/fuse.h> is 7.38, so the layout is spelled here. */
#define SFS_FUSE_STATX 52

struct sfs_fuse_sx_time {
	int64_t tv_sec;
	uint32_t tv_nsec;
	int32_t reserved;
};

struct sfs_fuse_statx {
	uint32_t mask;
	uint32_t blksize;
	uint64_t attributes;
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint16_t mode;
	uint16_t spare0;
	uint64_t ino;
	uint64_t size;
	uint64_t blocks;
	uint64_t attributes_mask;
	struct sfs_fuse_sx_time atime, btime, ctime, mtime;
	uint32_t rdev_major, rdev_minor, dev_major, dev_minor;
	uint64_t spare2[14];
};

struct sfs_fuse_statx_in {
	uint32_t getattr_flags;
	uint32_t reserved;
	uint64_t fh;
	uint32_t sx_flags;
	uint32_t sx_mask;
};

struct sfs_fuse_statx_out {
	uint64_t attr_valid;
	uint32_t attr_valid_nsec;
	uint32_t flags;
	uint64_t spare[2];
	struct sfs_fuse_statx stat;
};

static_assert(sizeof(struct sfs_fuse_statx) == 256, "fuse_statx");
static_assert(sizeof(struct sfs_fuse_statx_in) == 24, "fuse_statx_in");
static_assert(sizeof(struct sfs_fuse_statx_out) == 288, "fuse_statx_out");

static struct sfs_fuse_sx_time sfs_fuse_sx_time(const struct timespec *ts)
{
	return (struct sfs_fuse_sx_time){.tv_sec = ts->tv_sec,
					 .tv_nsec = (uint32_t)ts->tv_nsec};
}

/* The basic fields of a statx reply, as getattr gives them. */
static void sfs_fuse_stat_to_statx(const struct stat *st,
				   struct sfs_fuse_statx *sx)
{
	memset(sx, 0, sizeof(*sx));
	sx->mask = STATX_BASIC_STATS;
	sx->blksize = (uint32_t)st->st_blksize;
	sx->nlink = (uint32_t)st->st_nlink;
	sx->uid = st->st_uid;
	sx->gid = st->st_gid;
	sx->mode = (uint16_t)st->st_mode;
	sx->ino = st->st_ino;
	sx->size = (uint64_t)st->st_size;
	sx->blocks = (uint64_t)st->st_blocks;
	sx->atime = sfs_fuse_sx_time(&st->st_atim);
	sx->mtime = sfs_fuse_sx_time(&st->st_mtim);
	sx->ctime = sfs_fuse_sx_time(&st->st_ctim);
	sx->rdev_major = major(st->st_rdev);
	sx->rdev_minor = minor(st->st_rdev);
}

/* One reply written straight to the device: header, then len bytes of
 * arg (none when error is set). */
static void sfs_fuse_raw_reply(int fd, uint64_t unique, int error,
			       const void *arg, size_t len)
{
	struct fuse_out_header out = {.unique = unique, .error = error};
	struct iovec iov[2] = {{.iov_base = &out, .iov_len = sizeof(out)},
			       {.iov_base = (void *)arg, .iov_len = len}};

	if (error)
		len = 0;
	out.len = (uint32_t)(sizeof(out) + len);
	/* the kernel drops a reply to an interrupted request (ENOENT) */
	(void)!writev(fd, iov, len ? 2 : 1);
}

/* FUSE_STATX: getattr's answer plus i_crtime as the birth time. */
static void sfs_fuse_statx(struct sfs_fuse *f, int fd,
			   const struct fuse_in_header *in)
{
	struct sfs_fuse_statx_out out;
	struct sfs_attr a;
	struct stat st;
	sfs_ino_t i = sfs_fuse_ino_in(in->nodeid);
	int rc = -ESTALE;

	memset(&out, 0, sizeof(out));
	if (in->len < sizeof(*in) + sizeof(struct sfs_fuse_statx_in)) {
		sfs_fuse_raw_reply(fd, in->unique, -EINVAL, NULL, 0);
		return;
	}
	if (sfs_ctl_statx(f->ctl, in->nodeid, &st)) {
		/* attr_valid 0, as getattr */
		sfs_fuse_stat_to_statx(&st, &out.stat);
		sfs_fuse_raw_reply(fd, in->unique, 0, &out, sizeof(out));
		return;
	}
	if (i)
		rc = sfs_getattr(f->fs, i, &a);
	if (rc < 0) {
		sfs_fuse_raw_reply(fd, in->unique, rc < -4095 ? -EIO : rc, NULL,
				   0);
		return;
	}
	sfs_fuse_attr_to_stat(&a, &st);
	sfs_fuse_stat_to_statx(&st, &out.stat);
	if (a.has_btime) {
		out.stat.mask |= STATX_BTIME;
		out.stat.btime = sfs_fuse_sx_time(&a.btime);
	}
	out.attr_valid = (uint64_t)SFS_FUSE_TIMEOUT;
	out.attr_valid_nsec =
	    (uint32_t)((SFS_FUSE_TIMEOUT - (double)out.attr_valid) * 1e9);
	sfs_fuse_raw_reply(fd, in->unique, 0, &out, sizeof(out));
}

static void sfs_fuse_stat_to_attr(const struct stat *st, struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = st->st_ino;
	a->mode = st->st_mode;
	a->nlink = (uint32_t)st->st_nlink;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->rdev = (uint32_t)st->st_rdev;
	a->size = (uint64_t)st->st_size;
	a->blocks = (uint64_t)st->st_blocks;
	a->blksize = (uint32_t)st->st_blksize;
	a->atime = (uint64_t)st->st_atim.tv_sec;
	a->atimensec = (uint32_t)st->st_atim.tv_nsec;
	a->mtime = (uint64_t)st->st_mtim.tv_sec;
	a->mtimensec = (uint32_t)st->st_mtim.tv_nsec;
	a->ctime = (uint64_t)st->st_ctim.tv_sec;
	a->ctimensec = (uint32_t)st->st_ctim.tv_nsec;
}

/* FUSE_TMPFILE (7.37): answered like CREATE (entry, then open), with a
 * nameless inode from sfs_tmpfile; the VFS has checked the flags. */
static void sfs_fuse_tmpfile(struct sfs_fuse *f, int fd,
			     const struct fuse_in_header *in)
{
	const struct fuse_create_in *arg = (const void *)(in + 1);
	struct {
		struct fuse_entry_out e;
		struct fuse_open_out o;
	} out;
	sfs_ino_t p = sfs_fuse_ino_in(in->nodeid);
	struct sfs_attr a;
	struct stat st;
	uint32_t mode;
	int rc;

	if (in->len < sizeof(*in) + sizeof(*arg)) {
		sfs_fuse_raw_reply(fd, in->unique, -EINVAL, NULL, 0);
		return;
	}
	mode = S_IFREG | (arg->mode & 07777);
	if (f->acl) /* rule 10 */
		mode |= SFS_MODE_UMASK(arg->umask);
	rc = sfs_ctl_tmpfile(in->nodeid); /* rule 7 */
	if (rc == 0 && !p)
		rc = -ESTALE;
	else if (rc == 0)
		do
			rc = sfs_tmpfile(f->fs, p, mode, in->uid, in->gid, &a);
		while (rc == -ENOSPC && sfs_reclaim_unlinked(f->fs) > 0);
	if (rc == 0 && !sfs_fuse_ino_ok(a.ino)) {
		sfs_release(f->fs, a.ino);
		sfs_forget(f->fs, a.ino, 1);
		rc = -EIO;
	}
	if (rc < 0) {
		sfs_fuse_raw_reply(fd, in->unique, rc < -4095 ? -EIO : rc, NULL,
				   0);
		return;
	}
	memset(&out, 0, sizeof(out));
	out.e.nodeid = sfs_fuse_ino_out(a.ino);
	out.e.generation = a.generation;
	out.e.entry_valid = out.e.attr_valid = (uint64_t)SFS_FUSE_TIMEOUT;
	sfs_fuse_attr_to_stat(&a, &st);
	sfs_fuse_stat_to_attr(&st, &out.e.attr);
	out.o.open_flags = FOPEN_DIRECT_IO; /* rule 3, as create */
	sfs_fuse_raw_reply(fd, in->unique, 0, &out, sizeof(out));
}

/* A request the daemon answers itself, before libfuse sees it: true if
 * it was one (and has been answered). */
static bool sfs_fuse_own_request(struct sfs_fuse *f, int fd, const void *buf,
				 ssize_t n)
{
	const struct fuse_in_header *in = buf;

	if (n < (ssize_t)sizeof(*in) || f->trace)
		return false;
	switch (in->opcode) {
	case SFS_FUSE_STATX:
	case FUSE_TMPFILE:
		break;
	default:
		return false;
	}
	if (in->len != (uint32_t)n) /* short or malformed */
		sfs_fuse_raw_reply(fd, in->unique, -EINVAL, NULL, 0);
	else if (in->opcode == FUSE_TMPFILE)
		sfs_fuse_tmpfile(f, fd, in);
	else
		sfs_fuse_statx(f, fd, in);
	return true;
}

/* Rule 13: a SETXATTR request in the extended layout the INIT reply asked
 * for becomes the 8-byte layout libfuse 3.14 parses: name and value move
 * down over setxattr_flags and padding, and FUSE_SETXATTR_ACL_KILL_SGID
 * rides in the flags as SFS_FUSE_XATTR_KILL_SGID.  Returns the new
 * length of the request (n for every other request). */
static ssize_t sfs_fuse_setxattr_compat(void *buf, ssize_t n)
{
	struct fuse_in_header *in = buf;
	struct fuse_setxattr_in *arg = (void *)(in + 1);
	const size_t hdr = sizeof(*in) + sizeof(*arg);
	const size_t cut = sizeof(*arg) - FUSE_COMPAT_SETXATTR_IN_SIZE;

	if (n < (ssize_t)sizeof(*in) || in->opcode != FUSE_SETXATTR ||
	    in->len != (uint32_t)n || n < (ssize_t)hdr)
		return n; /* libfuse answers a malformed one */
	if (arg->setxattr_flags & FUSE_SETXATTR_ACL_KILL_SGID)
		arg->flags |= SFS_FUSE_XATTR_KILL_SGID;
	memmove((char *)buf + hdr - cut, (char *)buf + hdr, (size_t)n - hdr);
	in->len -= (uint32_t)cut;
	return n - (ssize_t)cut;
}

/* ---- the INIT hooks (rule 9) ---- */

/* read(2) of the next request; notes the INIT request. */
static ssize_t sfs_fuse_io_read(int fd, void *buf, size_t len, void *userdata)
{
	struct sfs_fuse *f = userdata;
	const struct fuse_in_header *in = buf;
	ssize_t n;

	do /* rule 12: some requests never reach libfuse */
		n = read(fd, buf, len);
	while (sfs_fuse_own_request(f, fd, buf, n));
	if (n >= (ssize_t)(sizeof(*in) + sizeof(struct fuse_init_in)) &&
	    in->opcode == FUSE_INIT && !g_atomic_int_get(&f->init_seen)) {
		const struct fuse_init_in *arg = (const void *)(in + 1);

		f->init_unique = in->unique; /* before the flags publish it */
		if (!f->mmap_off && (arg->flags & FUSE_INIT_EXT) &&
		    (arg->flags2 & (SFS_FUSE_DIRECT_IO_ALLOW_MMAP >> 32)))
			g_atomic_int_set(&f->mmap_offered, 1);
		if (arg->flags & FUSE_SETXATTR_EXT)
			g_atomic_int_set(&f->sx_offered, 1);
		g_atomic_int_set(&f->init_seen, 1);
	}
	if (n > 0 && g_atomic_int_get(&f->sx_granted))
		n = sfs_fuse_setxattr_compat(buf, n);
	return n;
}

/* writev(2) of a reply or notification; the INIT reply gains
 * FUSE_INIT_EXT and DIRECT_IO_ALLOW_MMAP if the kernel offered it. */
static ssize_t sfs_fuse_io_writev(int fd, struct iovec *iov, int count,
				  void *userdata)
{
	struct sfs_fuse *f = userdata;
	const struct fuse_out_header *out = iov[0].iov_base;
	struct fuse_init_out arg;
	struct iovec fixed[2];

	bool mmap = g_atomic_int_get(&f->mmap_offered);
	bool sx = g_atomic_int_get(&f->sx_offered) && f->acl;

	if (!(mmap || sx) || g_atomic_int_get(&f->init_fixed) || count != 2 ||
	    iov[0].iov_len != sizeof(*out) || out->unique != f->init_unique ||
	    out->error != 0 || iov[1].iov_len > sizeof(arg) ||
	    iov[1].iov_len <
		offsetof(struct fuse_init_out, flags2) + sizeof(arg.flags2))
		return writev(fd, iov, count);
	memset(&arg, 0, sizeof(arg));
	memcpy(&arg, iov[1].iov_base, iov[1].iov_len);
	if (mmap) {
		arg.flags |= FUSE_INIT_EXT;
		arg.flags2 |= (uint32_t)(SFS_FUSE_DIRECT_IO_ALLOW_MMAP >> 32);
		g_atomic_int_set(&f->mmap_granted, 1);
	}
	/* set before the reply: the kernel sends no SETXATTR until it has
	 * read it */
	if (sx) {
		arg.flags |= FUSE_SETXATTR_EXT;
		g_atomic_int_set(&f->sx_granted, 1);
	}
	fixed[0] = iov[0];
	fixed[1] = (struct iovec){.iov_base = &arg, .iov_len = iov[1].iov_len};
	g_atomic_int_set(&f->init_fixed, 1);
	return writev(fd, fixed, 2);
}

static const struct fuse_custom_io sfs_fuse_io = {
    .read = sfs_fuse_io_read,
    .writev = sfs_fuse_io_writev,
};

/* One line on whether MAP_SHARED works on this mount (stats.txt, and
 * the mount's warning when it does not). */
static const char *sfs_fuse_mmap_state(struct sfs_fuse *f)
{
	if (g_atomic_int_get(&f->mmap_granted))
		return "shared mmap: allowed (FUSE_DIRECT_IO_ALLOW_MMAP)";
	if (f->mmap_off)
		return "shared mmap: off (noshared_mmap); mmap(MAP_SHARED) "
		       "fails with ENODEV";
	if (!g_atomic_int_get(&f->io_hooked))
		return "shared mmap: not available (the INIT hooks could not "
		       "be "
		       "installed); mmap(MAP_SHARED) fails with ENODEV";
	return "shared mmap: not offered by this kernel (needs Linux 6.6+, "
	       "FUSE_DIRECT_IO_ALLOW_MMAP); mmap(MAP_SHARED) fails with "
	       "ENODEV";
}

/* sfs_ctl_new's note: stats.txt ends with the line above. */
static const char *sfs_fuse_ctl_note(void *arg)
{
	return sfs_fuse_mmap_state(arg);
}

/* ---- session life ---- */

static void sfs_fuse_init(void *userdata, struct fuse_conn_info *conn)
{
	struct sfs_fuse *f = userdata;

	struct sfs_config cfg;

	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/* rule 10: POSIX ACLs enforced by the kernel, umask left to us */
	sfs_fs_get_config(f->fs, &cfg);
	if (!cfg.no_acl && (conn->capable & FUSE_CAP_POSIX_ACL) &&
	    (conn->capable & FUSE_CAP_DONT_MASK)) {
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
		f->acl = true;
	} else if (!cfg.no_acl) {
		fuse_log(FUSE_LOG_WARNING,
			 "the kernel offers no POSIX ACL support: ACLs are "
			 "stored but not enforced\n");
	}
	/* rule 3: no kernel-side caching or page moving of file data */
	conn->want &= ~(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_SPLICE_READ |
			FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
	/* libfuse derives max_pages from max_write (and caps it at its
	 * buffer size: 256 pages in 3.14) */
	conn->max_write = SFS_FUSE_MAX_WRITE;
	/* rule 9: the reply is written after this returns; what the
	 * kernel offered is known already */
	if (!f->mmap_off && !g_atomic_int_get(&f->mmap_offered))
		fuse_log(FUSE_LOG_WARNING, "%s\n", sfs_fuse_mmap_state(f));
	if (f->ready) {
		f->ready(f->ready_arg);
		f->ready = NULL;
	}
}

/* The session ends (fuse_session_destroy).  sfs_fs_close is the caller's:
 * it needs the result of the write-back. */
static void sfs_fuse_destroy(void *userdata)
{
}

/* ---- namespace ---- */

static void sfs_fuse_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	sfs_ino_t p = sfs_fuse_ino_in(parent);
	struct sfs_attr a;
	int rc = -ESTALE;

	if (sfs_ctl_lookup(sfs_fuse_ctl(req), req, parent, name))
		return;
	if (p)
		rc = sfs_lookup(sfs_fuse_fs(req), p, name, &a);
	if (rc == 0 && sfs_rec(req))
		sfs_trace_learn(sfs_rec(req), sfs_fuse_ino_out(a.ino), parent,
				name);
	sfs_fuse_reply_entry(req, rc, &a);
}

/* Rule 5.  The root and the control files are not counted. */
static void sfs_fuse_forget_one(struct sfs_fs *fs, fuse_ino_t ino,
				uint64_t nlookup)
{
	if (ino != FUSE_ROOT_ID && sfs_fuse_ino_in(ino))
		sfs_forget(fs, sfs_fuse_ino_in(ino), nlookup);
}

static void sfs_fuse_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	sfs_fuse_forget_one(sfs_fuse_fs(req), ino, nlookup);
	fuse_reply_none(req);
}

static void sfs_fuse_forget_multi(fuse_req_t req, size_t count,
				  struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		sfs_fuse_forget_one(sfs_fuse_fs(req), forgets[i].ino,
				    forgets[i].nlookup);
	fuse_reply_none(req);
}

static void sfs_fuse_getattr(fuse_req_t req, fuse_ino_t ino,
			     struct fuse_file_info *fi)
{
	sfs_ino_t i = sfs_fuse_ino_in(ino);
	struct sfs_attr a;
	int rc = -ESTALE;

	if (sfs_ctl_getattr(sfs_fuse_ctl(req), req, ino))
		return;
	sfs_ns_t t0 = sfs_rec_start(req);

	if (i)
		rc = sfs_getattr(sfs_fuse_fs(req), i, &a);
	if (sfs_rec(req) && fuse_req_ctx(req)->pid &&
	    !(rc == 0 && S_ISDIR(a.mode)))
		sfs_rec_path(req, SFS_TOP_STAT, t0, ino, NULL, 0, rc);
	sfs_fuse_reply_attr(req, rc, &a);
}

/*
 * chmod/chown/truncate/utimes.  ftruncate arrives with fi set and is the
 * same size change: the engine keeps an open (even unlinked) inode alive.
 */
static void sfs_fuse_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *st,
			     int to_set, struct fuse_file_info *fi)
{
	sfs_ino_t i = sfs_fuse_ino_in(ino);
	struct sfs_attr in, out;
	unsigned valid = 0;
	int rc;

	if (sfs_ctl_setattr(sfs_fuse_ctl(req), req, ino, st, to_set))
		return;
	if (!i) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	memset(&in, 0, sizeof(in));
	in.ino = i;
	if (to_set & FUSE_SET_ATTR_MODE) {
		valid |= SFS_SET_MODE;
		in.mode = st->st_mode;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		valid |= SFS_SET_UID;
		in.uid = st->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		valid |= SFS_SET_GID;
		in.gid = st->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (st->st_size < 0) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		valid |= SFS_SET_SIZE;
		in.size = (uint64_t)st->st_size;
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		valid |= SFS_SET_ATIME | SFS_SET_ATIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		valid |= SFS_SET_ATIME;
		in.atime = st->st_atim;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		valid |= SFS_SET_MTIME | SFS_SET_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		valid |= SFS_SET_MTIME;
		in.mtime = st->st_mtim;
	}
	if (to_set & FUSE_SET_ATTR_CTIME) {
		valid |= SFS_SET_CTIME;
		in.ctime = st->st_ctim;
	}
	sfs_ns_t t0 = sfs_rec_start(req);

	if (valid == 0)
		rc = sfs_getattr(sfs_fuse_fs(req), i, &out);
	else
		rc = sfs_setattr(sfs_fuse_fs(req), i, &in, valid, &out);
	if (sfs_rec(req) && (valid & SFS_SET_MODE)) {
		struct sfs_trace_rec r;
		char *path = sfs_trace_path(sfs_rec(req), ino, NULL);

		sfs_rec_init(req, &r, SFS_TOP_CHMOD, t0);
		r.path = path;
		r.mode = in.mode & 07777;
		sfs_rec_done(req, &r, rc, NULL);
		g_free(path);
	}
	if (sfs_rec(req) && (valid & SFS_SET_SIZE)) {
		if (sfs_rec_fd(fi) > 0) {
			sfs_rec_handle(req, SFS_TOP_FTRUNCATE, t0, fi, 0,
				       in.size, rc);
		} else {
			struct sfs_trace_rec r;
			char *path = sfs_trace_path(sfs_rec(req), ino, NULL);

			sfs_rec_init(req, &r, SFS_TOP_TRUNCATE, t0);
			r.path = path;
			r.len = in.size;
			sfs_rec_done(req, &r, rc, NULL);
			g_free(path);
		}
	}
	sfs_fuse_reply_attr(req, rc, &out);
}

static void sfs_fuse_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
			   mode_t mode, dev_t rdev)
{
	sfs_ino_t p = sfs_fuse_ino_in(parent);
	uint32_t uid, gid;
	struct sfs_attr a;
	int rc = -ESTALE;
	int ctl = sfs_ctl_new_name(req, parent, name); /* rule 7 */

	if (ctl > 0)
		return;
	sfs_fuse_owner(req, &uid, &gid);
	if (ctl < 0)
		rc = ctl;
	else if (p)
		do
			rc = sfs_mknod(sfs_fuse_fs(req), p, name,
				       sfs_fuse_new_mode(req, mode),
				       (uint32_t)rdev, uid, gid, &a);
		while (sfs_fuse_reclaim(req, rc));
	if (rc == 0 && sfs_rec(req))
		sfs_trace_learn(sfs_rec(req), sfs_fuse_ino_out(a.ino), parent,
				name);
	sfs_fuse_reply_entry(req, rc, &a);
}

static void sfs_fuse_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
			   mode_t mode)
{
	sfs_ino_t p = sfs_fuse_ino_in(parent);
	uint32_t uid, gid;
	struct sfs_attr a;
	int rc = -ESTALE;
	int ctl = sfs_ctl_new_name(req, parent, name); /* rule 7 */

	if (ctl > 0)
		return;
	sfs_ns_t t0 = sfs_rec_start(req);

	sfs_fuse_owner(req, &uid, &gid);
	if (ctl < 0)
		rc = ctl;
	else if (p)
		do
			rc = sfs_mkdir(
			    sfs_fuse_fs(req), p, name,
			    sfs_fuse_new_mode(req, S_IFDIR | (mode & 07777)),
			    uid, gid, &a);
		while (sfs_fuse_reclaim(req, rc));
	if (sfs_rec(req)) {
		sfs_rec_path(req, SFS_TOP_MKDIR, t0, parent, name,
			     sfs_fuse_rec_mode(req, (uint32_t)mode), rc);
		if (rc == 0)
			sfs_trace_learn(sfs_rec(req), sfs_fuse_ino_out(a.ino),
					parent, name);
	}
	sfs_fuse_reply_entry(req, rc, &a);
}

static void sfs_fuse_symlink(fuse_req_t req, const char *link,
			     fuse_ino_t parent, const char *name)
{
	sfs_ino_t p = sfs_fuse_ino_in(parent);
	uint32_t uid, gid;
	struct sfs_attr a;
	int rc = -ESTALE;
	int ctl = sfs_ctl_new_name(req, parent, name); /* rule 7 */

	if (ctl > 0)
		return;
	sfs_ns_t t0 = sfs_rec_start(req);

	sfs_fuse_owner(req, &uid, &gid);
	if (ctl < 0)
		rc = ctl;
	else if (p)
		do
			rc = sfs_symlink(sfs_fuse_fs(req), p, name, link, uid,
					 gid, &a);
		while (sfs_fuse_reclaim(req, rc));
	if (sfs_rec(req)) {
		struct sfs_trace_rec r;
		char *path2 = sfs_trace_path(sfs_rec(req), parent, name);

		sfs_rec_init(req, &r, SFS_TOP_SYMLINK, t0);
		r.path = link; /* the target: text, not a name in the tree */
		r.path2 = path2;
		sfs_rec_done(req, &r, rc, NULL);
		g_free(path2);
		if (rc == 0)
			sfs_trace_learn(sfs_rec(req), sfs_fuse_ino_out(a.ino),
					parent, name);
	}
	sfs_fuse_reply_entry(req, rc, &a);
}

static void sfs_fuse_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
			  const char *newname)
{
	sfs_ino_t i = sfs_fuse_ino_in(ino), p = sfs_fuse_ino_in(newparent);
	struct sfs_attr a;
	int rc = -ESTALE;
	int ctl = sfs_ctl_link(req, ino, newparent, newname); /* rule 7 */

	if (ctl > 0)
		return;
	sfs_ns_t t0 = sfs_rec_start(req);
	char *old =
	    sfs_rec(req) ? sfs_trace_path(sfs_rec(req), ino, NULL) : NULL;

	if (ctl < 0)
		rc = ctl;
	else if (i && p)
		do
			rc = sfs_link(sfs_fuse_fs(req), i, p, newname, &a);
		while (sfs_fuse_reclaim(req, rc));
	if (old) {
		struct sfs_trace_rec r;
		char *path2 = sfs_trace_path(sfs_rec(req), newparent, newname);

		sfs_rec_init(req, &r, SFS_TOP_LINK, t0);
		r.path = old;
		r.path2 = path2;
		sfs_rec_done(req, &r, rc, NULL);
		g_free(path2);
		/* the latest name of an inode is the one paths use */
		if (rc == 0)
			sfs_trace_learn(sfs_rec(req), ino, newparent, newname);
	}
	g_free(old);
	sfs_fuse_reply_entry(req, rc, &a);
}

static void sfs_fuse_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	sfs_ino_t p = sfs_fuse_ino_in(parent);
	sfs_ns_t t0 = sfs_rec_start(req);
	int rc;

	if (sfs_ctl_remove(req, parent, name)) /* rule 7 */
		return;
	rc = p ? sfs_unlink(sfs_fuse_fs(req), p, name) : -ESTALE;
	if (sfs_rec(req)) {
		sfs_rec_path(req, SFS_TOP_UNLINK, t0, parent, name, 0, rc);
		if (rc == 0)
			sfs_trace_unlearn(sfs_rec(req), parent, name);
	}
	sfs_fuse_reply_rc(req, rc);
}

static void sfs_fuse_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	sfs_ino_t p = sfs_fuse_ino_in(parent);
	sfs_ns_t t0 = sfs_rec_start(req);
	int rc;

	if (sfs_ctl_remove(req, parent, name)) /* rule 7 */
		return;
	rc = p ? sfs_rmdir(sfs_fuse_fs(req), p, name) : -ESTALE;
	if (sfs_rec(req)) {
		sfs_rec_path(req, SFS_TOP_RMDIR, t0, parent, name, 0, rc);
		if (rc == 0)
			sfs_trace_unlearn(sfs_rec(req), parent, name);
	}
	sfs_fuse_reply_rc(req, rc);
}

static void sfs_fuse_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
			    fuse_ino_t newparent, const char *newname,
			    unsigned int flags)
{
	sfs_ino_t p = sfs_fuse_ino_in(parent), np = sfs_fuse_ino_in(newparent);
	/* the unknown, and what the VFS refuses */
	bool bad = flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE |
				       RENAME_WHITEOUT) ||
		   flags == (RENAME_NOREPLACE | RENAME_EXCHANGE) ||
		   ((flags & RENAME_WHITEOUT) && (flags & RENAME_EXCHANGE));
	int rc = sfs_ctl_rename(req, parent, name, newparent, newname,
				bad ? EINVAL : EPERM); /* rule 7 */

	if (rc > 0)
		return;
	sfs_ns_t t0 = sfs_rec_start(req);

	uint32_t uid, gid;

	sfs_fuse_owner(req, &uid, &gid);
	if (rc == 0 && bad)
		rc = -EINVAL;
	else if (rc == 0 && (!p || !np))
		rc = -ESTALE;
	else if (rc == 0)
		do
			/* RENAME_WHITEOUT (overlayfs): the kernel checked
			 * CAP_MKNOD; the whiteout belongs to the caller */
			rc = (flags & RENAME_WHITEOUT)
				 ? sfs_rename_whiteout(
				       sfs_fuse_fs(req), p, name, np, newname,
				       flags & RENAME_NOREPLACE, uid, gid)
				 : sfs_rename(sfs_fuse_fs(req), p, name, np,
					      newname, flags);
		while (sfs_fuse_reclaim(req, rc));
	if (sfs_rec(req)) {
		struct sfs_trace_rec r;
		char *a = sfs_trace_path(sfs_rec(req), parent, name);
		char *b = sfs_trace_path(sfs_rec(req), newparent, newname);

		sfs_rec_init(req, &r, SFS_TOP_RENAME, t0);
		r.path = a;
		r.path2 = b;
		sfs_rec_done(req, &r, rc, NULL);
		g_free(a);
		g_free(b);
		if (rc == 0)
			sfs_trace_moved(sfs_rec(req), parent, name, newparent,
					newname, flags & RENAME_EXCHANGE);
	}
	sfs_fuse_reply_rc(req, rc);
}

static void sfs_fuse_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct sfs_fs *fs = sfs_fuse_fs(req);
	sfs_ino_t i = sfs_fuse_ino_in(ino);
	size_t size = sfs_fs_block_size(fs), len = 0;
	char *buf;
	int rc;

	if (sfs_ctl_readlink(req, ino))
		return;
	if (!i) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	buf = g_try_malloc(size + 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	rc = sfs_readlink(fs, i, buf, size, &len);
	if (rc == 0 && len > size)
		rc = -ENAMETOOLONG;
	if (rc < 0) {
		sfs_fuse_reply_rc(req, rc);
	} else {
		buf[len] = '\0';
		fuse_reply_readlink(req, buf);
	}
	g_free(buf);
}

/* ---- files ---- */

/* Rule 3: every open file bypasses the kernel page cache.  The engine
 * still keeps its modelled cache; O_DIRECT requests write through it. */
static void sfs_fuse_set_direct(struct fuse_file_info *fi)
{
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fi->fh = 0;
}

static void sfs_fuse_open(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct sfs_fs *fs = sfs_fuse_fs(req);
	sfs_ino_t i = sfs_fuse_ino_in(ino);
	int rc;

	if (sfs_ctl_open(sfs_fuse_ctl(req), req, ino, fi))
		return;
	sfs_ns_t t0 = sfs_rec_start(req);

	rc = i ? sfs_open(fs, i, fi->flags) : -ESTALE;
	if (rc < 0) {
		if (sfs_rec(req))
			sfs_rec_open(req, t0, ino, NULL, fi, 0, rc);
		sfs_fuse_reply_rc(req, rc);
		return;
	}
	sfs_fuse_set_direct(fi);
	if (sfs_rec(req))
		sfs_rec_open(req, t0, ino, NULL, fi, 0, 0);
	/* the request was interrupted: no release will come for this open */
	if (fuse_reply_open(req, fi) != 0)
		sfs_release(fs, i);
}

/* open(O_CREAT) of a missing name: mknod(S_IFREG) + open. */
static void sfs_fuse_create(fuse_req_t req, fuse_ino_t parent, const char *name,
			    mode_t mode, struct fuse_file_info *fi)
{
	struct sfs_fs *fs = sfs_fuse_fs(req);
	sfs_ino_t p = sfs_fuse_ino_in(parent);
	uint32_t uid, gid;
	struct fuse_entry_param e;
	struct sfs_attr a;
	int rc = -ESTALE;
	int ctl = sfs_ctl_new_name(req, parent, name); /* rule 7 */

	if (ctl > 0)
		return;
	sfs_ns_t t0 = sfs_rec_start(req);
	bool rec = sfs_rec(req);

	sfs_fuse_owner(req, &uid, &gid);
	if (ctl < 0)
		rc = ctl;
	else if (p)
		do
			rc = sfs_mknod(
			    fs, p, name,
			    sfs_fuse_new_mode(req, S_IFREG | (mode & 07777)), 0,
			    uid, gid, &a);
		while (sfs_fuse_reclaim(req, rc));
	if (rc < 0) {
		if (rec)
			sfs_rec_open(req, t0, parent, name, fi,
				     sfs_fuse_rec_mode(req, (uint32_t)mode),
				     rc);
		sfs_fuse_reply_rc(req, rc);
		return;
	}
	/* from here the engine counts a lookup reference (rule 5) */
	rc = sfs_fuse_ino_ok(a.ino) ? sfs_open(fs, a.ino, fi->flags) : -EIO;
	if (rc < 0) {
		if (rec)
			sfs_rec_open(req, t0, parent, name, fi,
				     sfs_fuse_rec_mode(req, (uint32_t)mode),
				     rc);
		sfs_forget(fs, a.ino, 1);
		sfs_fuse_reply_rc(req, rc);
		return;
	}
	sfs_fuse_set_direct(fi);
	if (rec) {
		sfs_rec_open(req, t0, parent, name, fi,
			     sfs_fuse_rec_mode(req, (uint32_t)mode), 0);
		sfs_trace_learn(sfs_rec(req), sfs_fuse_ino_out(a.ino), parent,
				name);
	}
	sfs_fuse_fill_entry(&a, &e);
	if (fuse_reply_create(req, &e, fi) != 0) {
		sfs_release(fs, a.ino);
		sfs_forget(fs, a.ino, 1);
	}
}

/* Does this request come through an O_DIRECT descriptor?  The kernel
 * sends the file's current flags with every READ and WRITE, so an
 * fcntl(F_SETFL, O_DIRECT) after open counts as well (rule 11). */
static bool sfs_fuse_is_direct(const struct fuse_file_info *fi)
{
	return fi && (fi->flags & O_DIRECT);
}

/* Is byte p of inode i in written data (not a hole, not unwritten)? */
static bool sfs_fuse_in_data(struct sfs_fs *fs, sfs_ino_t i, uint64_t p)
{
	uint64_t at;

	return sfs_seek_data_hole(fs, i, p, SEEK_DATA, &at) == 0 && at == p;
}

/*
 * Does ext4 take this unaligned direct write through the page cache
 * instead?  Only on a block-mapped file: ext4_iomap_alloc will not fill a
 * hole of an indirect tree below i_size by direct I/O (-ENOTBLK), and
 * ext4_dio_write_iter then writes the rest buffered, alignment unchecked.
 * Its walk over the range meets that hole before any failing check when
 * the block at off is such a hole, or when off is aligned, the blocks
 * from off are written data, and a hole below i_size starts before the
 * end (the whole blocks before it pass the check).  Otherwise the check
 * fails (a written block at an unaligned start, the unaligned end inside
 * written data, or blocks past i_size, which are allocated first).
 */
static bool sfs_fuse_dio_buffered(struct sfs_fs *fs, sfs_ino_t i, uint64_t off,
				  size_t len)
{
	const uint64_t bs = sfs_fs_block_size(fs);
	uint64_t start = off - off % bs, hole;
	uint32_t flags;
	struct sfs_attr a;

	if (sfs_get_flags(fs, i, &flags) != 0 || (flags & SFS_EXTENTS_FL) ||
	    sfs_getattr(fs, i, &a) != 0 || start >= a.size)
		return false;
	if (!sfs_fuse_in_data(fs, i, start))
		return true;
	if (off & (SFS_FUSE_DIO_ALIGN - 1) ||
	    sfs_seek_data_hole(fs, i, off, SEEK_HOLE, &hole) != 0)
		return false;
	return hole < off + len && hole < a.size;
}

/*
 * Rule 11: ext4's O_DIRECT alignment rule (iomap_dio_bio_iter), 0 or
 * -EINVAL.  iomap checks each mapping the request meets on its own:
 * offset, length and the caller's buffer address at that point on the
 * logical-block grid.  A write whose offset or length is off the grid
 * fails, unless ext4 would write it buffered (sfs_fuse_dio_buffered: a
 * hole of a block-mapped file).  A read at or past the end of the file
 * returns 0 unchecked, and holes and unwritten extents are zero-filled
 * without a check, so a read fails only where it meets written blocks:
 * with an unaligned start, at any of them (the buffer is unaligned from
 * there on), with an unaligned end, when the end falls inside one.
 * Zero-length requests always pass.
 */
static int sfs_fuse_dio_check(fuse_req_t req, sfs_ino_t i, uint64_t off,
			      size_t len, bool write)
{
	struct sfs_fs *fs = sfs_fuse_fs(req);
	const uint64_t lbs = SFS_FUSE_DIO_ALIGN, bs = sfs_fs_block_size(fs);
	uint64_t end = off + len, last, data;
	struct sfs_attr a;

	if (len == 0 || ((off | len) & (lbs - 1)) == 0)
		return 0;
	if (write)
		return sfs_fuse_dio_buffered(fs, i, off, len) ? 0 : -EINVAL;
	if (sfs_getattr(fs, i, &a) != 0 || off >= a.size)
		return 0;
	/* an unaligned start leaves the caller's buffer unaligned at every
	 * written block the read meets, which each get the check */
	if ((off & (lbs - 1)) &&
	    sfs_seek_data_hole(fs, i, off, SEEK_DATA, &data) == 0 && data < end)
		return -EINVAL;
	if ((end & (lbs - 1)) == 0)
		return 0;
	/* the end's block: past i_size only the last block can be mapped,
	 * and SEEK_DATA does not look there */
	last = end - 1;
	if (last >= a.size) {
		if (last / bs != (a.size - 1) / bs)
			return 0;
		last = a.size - 1;
	}
	return sfs_fuse_in_data(fs, i, last) ? -EINVAL : 0;
}

static void sfs_fuse_read(fuse_req_t req, fuse_ino_t ino, size_t size,
			  off_t off, struct fuse_file_info *fi)
{
	sfs_ino_t i = sfs_fuse_ino_in(ino);
	size_t got = 0;
	void *buf;
	int rc;

	if (sfs_ctl_read(req, ino, size, off, fi))
		return;
	if (!i || off < 0) {
		fuse_reply_err(req, i ? EINVAL : ESTALE);
		return;
	}
	if (sfs_fuse_is_direct(fi) &&
	    (rc = sfs_fuse_dio_check(req, i, (uint64_t)off, size, false))) {
		fuse_reply_err(req, -rc);
		return;
	}
	buf = g_try_malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	struct sfs_ioctx ctx = {
	    .flags = sfs_fuse_is_direct(fi) ? SFS_IOCTX_DIRECT : 0,
	    .pid = (uint32_t)fuse_req_ctx(req)->pid,
	};
	sfs_ns_t t0 = sfs_rec_start(req);

	/* the reader's requests carry its process (sched=cfq's slices) */
	sfs_io_set_stream(ctx.pid);
	rc = sfs_read_ctx(sfs_fuse_fs(req), i, (uint64_t)off, size, buf, &ctx,
			  &got);
	sfs_io_set_stream(0);
	if (sfs_rec(req) && sfs_rec_fd(fi) > 0) {
		struct sfs_trace_rec r;

		sfs_rec_init(req, &r, SFS_TOP_READ, t0);
		r.fd = sfs_rec_fd(fi);
		r.off = (uint64_t)off;
		r.len = size;
		r.done = rc < 0 ? 0 : MIN(got, size);
		sfs_rec_done(req, &r, rc < 0 ? rc : 0, NULL);
	}
	if (rc < 0)
		sfs_fuse_reply_rc(req, rc);
	else
		fuse_reply_buf(req, buf, got < size ? got : size);
	g_free(buf);
}

/*
 * What the kernel's file_remove_privs does before a write by a process
 * without CAP_FSETID (here: any uid but 0): clear setuid, and setgid when
 * the file is group-executable, and drop security.capability.  FUSE leaves
 * it to the daemon for direct_io writes (libfuse 3.14 does not negotiate
 * FUSE_HANDLE_KILLPRIV); truncates are done by the kernel through setattr
 * and removexattr.  Failures are ignored: the write goes on, as it does
 * when the kernel cannot remove an xattr.
 */
static void sfs_fuse_remove_privs(fuse_req_t req, sfs_ino_t i)
{
	struct sfs_fs *fs = sfs_fuse_fs(req);
	struct sfs_attr a;
	uint32_t kill = S_ISUID;

	if (fuse_req_ctx(req)->uid == 0 || sfs_getattr(fs, i, &a) != 0)
		return;
	if (a.mode & S_IXGRP)
		kill |= S_ISGID;
	if (a.mode & kill) {
		struct sfs_fuse *f = fuse_req_userdata(req);

		a.mode &= ~kill;
		/* the kernel caches the mode for SFS_FUSE_TIMEOUT: tell it
		 * now (attributes only: a negative offset touches no page,
		 * so this is safe inside the write) */
		if (sfs_setattr(fs, i, &a, SFS_SET_MODE, NULL) == 0)
			fuse_lowlevel_notify_inval_inode(
			    f->se, sfs_fuse_ino_out(i), -1, 0);
	}
	sfs_removexattr(fs, i, "security.capability");
}

/*
 * A write that failed part way reports what it wrote (a short write, as
 * write(2) does); the error comes back on the next write.
 */
static void sfs_fuse_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
			   size_t size, off_t off, struct fuse_file_info *fi)
{
	sfs_ino_t i = sfs_fuse_ino_in(ino);
	size_t written = 0;
	int rc;

	if (sfs_ctl_write(sfs_fuse_ctl(req), req, ino, buf, size, fi))
		return;
	if (!i || off < 0) {
		fuse_reply_err(req, i ? EINVAL : ESTALE);
		return;
	}
	if (sfs_fuse_is_direct(fi) &&
	    (rc = sfs_fuse_dio_check(req, i, (uint64_t)off, size, true))) {
		fuse_reply_err(req, -rc);
		return;
	}
	sfs_fuse_remove_privs(req, i);
	struct sfs_ioctx ctx = {
	    .flags = sfs_fuse_is_direct(fi) ? SFS_IOCTX_DIRECT : 0,
	    .pid = (uint32_t)fuse_req_ctx(req)->pid,
	};
	sfs_ns_t t0 = sfs_rec_start(req);

	do
		rc = sfs_write_ctx(sfs_fuse_fs(req), i, (uint64_t)off, buf,
				   size, &ctx, &written);
	while (written == 0 && sfs_fuse_reclaim(req, rc));
	if (written > size)
		written = size;
	if (sfs_rec(req) && sfs_rec_fd(fi) > 0) {
		struct sfs_trace_rec r;

		sfs_rec_init(req, &r, SFS_TOP_WRITE, t0);
		r.fd = sfs_rec_fd(fi);
		r.off = (uint64_t)off;
		r.len = size;
		r.done = written;
		sfs_rec_done(req, &r, rc < 0 && written == 0 ? rc : 0, buf);
	}
	if (rc < 0 && written == 0)
		sfs_fuse_reply_rc(req, rc);
	else
		fuse_reply_write(req, written);
}

/* close(2) of one descriptor: nothing to do (fsync and release do it). */
static void sfs_fuse_flush(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void sfs_fuse_release(fuse_req_t req, fuse_ino_t ino,
			     struct fuse_file_info *fi)
{
	sfs_ino_t i = sfs_fuse_ino_in(ino);

	sfs_ns_t t0;
	int rc;

	if (sfs_ctl_release(sfs_fuse_ctl(req), req, ino, fi))
		return;
	t0 = sfs_rec_start(req);
	rc = i ? sfs_release(sfs_fuse_fs(req), i) : -ESTALE;
	if (sfs_rec(req) && sfs_rec_fd(fi) > 0) {
		sfs_rec_handle(req, SFS_TOP_CLOSE, t0, fi, 0, 0, rc);
		sfs_trace_handle_client(sfs_rec(req), sfs_rec_fd(fi), true);
	}
	sfs_fuse_reply_rc(req, rc);
}

static void sfs_fuse_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
			   struct fuse_file_info *fi)
{
	sfs_ino_t i = sfs_fuse_ino_in(ino);

	sfs_ns_t t0 = sfs_rec_start(req);
	int rc;

	if (sfs_ctl_fsync(req, ino))
		return;
	rc = i ? sfs_fsync(sfs_fuse_fs(req), i, datasync != 0) : -ESTALE;
	if (sfs_rec(req)) /* a directory's fsync has no handle: skipped */
		sfs_rec_handle(req, SFS_TOP_FSYNC, t0, fi,
			       datasync ? SFS_WOP_DATASYNC : 0, 0, rc);
	sfs_fuse_reply_rc(req, rc);
}

static void sfs_fuse_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			       off_t offset, off_t length,
			       struct fuse_file_info *fi)
{
	sfs_ino_t i = sfs_fuse_ino_in(ino);
	int m = 0, rc;

	(void)fi;
	if (!i) { /* a control file's number too (rule 7) */
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (offset < 0 || length <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* the kernel's bits, one by one (the engine takes the same values;
	 * a bit it does not know stays and gets -EOPNOTSUPP there) */
	static const struct {
		int linux_bit, sfs_bit;
	} bits[] = {
	    {FALLOC_FL_KEEP_SIZE, SFS_FALLOC_KEEP_SIZE},
	    {FALLOC_FL_PUNCH_HOLE, SFS_FALLOC_PUNCH_HOLE},
	    {FALLOC_FL_COLLAPSE_RANGE, SFS_FALLOC_COLLAPSE_RANGE},
	    {FALLOC_FL_ZERO_RANGE, SFS_FALLOC_ZERO_RANGE},
	    {FALLOC_FL_INSERT_RANGE, SFS_FALLOC_INSERT_RANGE},
	};
	for (size_t k = 0; k < G_N_ELEMENTS(bits); k++)
		if (mode & bits[k].linux_bit) {
			m |= bits[k].sfs_bit;
			mode &= ~bits[k].linux_bit;
		}
	if (mode) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	do
		rc = sfs_fallocate(sfs_fuse_fs(req), i, m, (uint64_t)offset,
				   (uint64_t)length);
	while (sfs_fuse_reclaim(req, rc));
	sfs_fuse_reply_rc(req, rc);
}

/*
 * FS_IOC_GETFLAGS / FS_IOC_SETFLAGS (lsattr, chattr).  The kernel's FUSE
 * module sends them, from its fileattr operations, as restricted ioctls
 * with a fixed-size argument: an int (the kernel's own fileattr path) or
 * a long (the ioctl's nominal size); both are served, and
 * FS_IOC_FSGETXATTR, which the kernel asks before a SETFLAGS.  The VFS has
 * checked ownership and CAP_LINUX_IMMUTABLE already; the engine checks
 * the latter again from the caller's uid (0 counts as privileged, as for
 * CAP_FSETID).  Any other ioctl: ENOTTY.
 */
static void sfs_fuse_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd,
			   void *arg, struct fuse_file_info *fi, unsigned flags,
			   const void *in_buf, size_t in_bufsz,
			   size_t out_bufsz)
{
	sfs_ino_t i = sfs_fuse_ino_in(ino);
	struct sfs_fs *fs = sfs_fuse_fs(req);
	uint32_t v = 0;
	int rc;

	(void)arg;
	(void)fi;
	(void)flags;
	if (cmd != FS_IOC_GETFLAGS && cmd != FS_IOC_SETFLAGS &&
	    cmd != FS_IOC32_GETFLAGS && cmd != FS_IOC32_SETFLAGS &&
	    cmd != FS_IOC_FSGETXATTR) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	if (!i) { /* a control file's number too (rule 7) */
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (cmd == FS_IOC_FSGETXATTR) {
		/* the kernel reads the old attributes this way before a
		 * SETFLAGS: the flags that have an xflag, as
		 * fileattr_fill_flags maps them */
		static const struct {
			uint32_t fl, xfl;
		} map[] = {
		    {FS_SYNC_FL, FS_XFLAG_SYNC},
		    {FS_IMMUTABLE_FL, FS_XFLAG_IMMUTABLE},
		    {FS_APPEND_FL, FS_XFLAG_APPEND},
		    {FS_NODUMP_FL, FS_XFLAG_NODUMP},
		    {FS_NOATIME_FL, FS_XFLAG_NOATIME},
		    {FS_PROJINHERIT_FL, FS_XFLAG_PROJINHERIT},
		};
		struct fsxattr fa = {0};
		if (out_bufsz < sizeof(fa)) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		rc = sfs_get_flags(fs, i, &v);
		if (rc) {
			sfs_fuse_reply_rc(req, rc);
			return;
		}
		for (size_t k = 0; k < G_N_ELEMENTS(map); k++)
			if (v & map[k].fl)
				fa.fsx_xflags |= map[k].xfl;
		fuse_reply_ioctl(req, 0, &fa, sizeof(fa));
		return;
	}
	if (cmd == FS_IOC_GETFLAGS || cmd == FS_IOC32_GETFLAGS) {
		uint64_t wide;
		if (out_bufsz < sizeof(v)) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		rc = sfs_get_flags(fs, i, &v);
		if (rc) {
			sfs_fuse_reply_rc(req, rc);
			return;
		}
		wide = v;
		if (out_bufsz >= sizeof(wide))
			fuse_reply_ioctl(req, 0, &wide, sizeof(wide));
		else
			fuse_reply_ioctl(req, 0, &v, sizeof(v));
		return;
	}
	if (in_bufsz < sizeof(v) || !in_buf) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (in_bufsz >= sizeof(uint64_t)) {
		uint64_t wide;
		memcpy(&wide, in_buf, sizeof(wide));
		v = (uint32_t)wide;
	} else {
		memcpy(&v, in_buf, sizeof(v));
	}
	rc = sfs_set_flags(fs, i, v, fuse_req_ctx(req)->uid == 0);
	if (rc)
		sfs_fuse_reply_rc(req, rc);
	else
		fuse_reply_ioctl(req, 0, NULL, 0);
}

/* SEEK_DATA / SEEK_HOLE (the kernel does SEEK_SET/CUR/END itself).  Never
 * ENOSYS: the kernel would stop asking for the whole connection. */
static void sfs_fuse_lseek(fuse_req_t req, fuse_ino_t ino, off_t off,
			   int whence, struct fuse_file_info *fi)
{
	sfs_ino_t i = sfs_fuse_ino_in(ino);
	uint64_t at = 0;
	int rc;

	(void)fi;
	if (!i) { /* a control file's number too (rule 7) */
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (off < 0) {
		fuse_reply_err(req, ENXIO);
		return;
	}
	rc =
	    sfs_seek_data_hole(sfs_fuse_fs(req), i, (uint64_t)off, whence, &at);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_lseek(req, (off_t)at);
}

/* ---- directories ---- */

static void sfs_fuse_opendir(fuse_req_t req, fuse_ino_t ino,
			     struct fuse_file_info *fi)
{
	sfs_ino_t i = sfs_fuse_ino_in(ino);
	struct sfs_attr a;
	int rc = -ESTALE;

	if (sfs_ctl_opendir(req, ino, fi))
		return;
	if (i)
		rc = sfs_getattr(sfs_fuse_fs(req), i, &a);
	if (rc == 0 && !S_ISDIR(a.mode))
		rc = -ENOTDIR;
	if (rc < 0) {
		sfs_fuse_reply_rc(req, rc);
		return;
	}
	fi->fh = 0;
	fi->cache_readdir = 0;
	fuse_reply_open(req, fi);
}

struct sfs_fuse_dirbuf {
	fuse_req_t req;
	char *buf;
	size_t size; /* bytes the kernel asked for */
	size_t pos;  /* bytes filled */
};

/* sfs_filldir_fn: add one entry, or stop (return 1) when it does not fit;
 * the engine reports that entry again at the next call. */
static int sfs_fuse_filldir(void *ctx, const char *name, size_t name_len,
			    sfs_ino_t ino, uint8_t ftype, uint64_t next_off)
{
	static const uint16_t ftype_mode[] = {
	    [SFS_FT_UNKNOWN] = 0,      [SFS_FT_REG] = S_IFREG,
	    [SFS_FT_DIR] = S_IFDIR,    [SFS_FT_CHRDEV] = S_IFCHR,
	    [SFS_FT_BLKDEV] = S_IFBLK, [SFS_FT_FIFO] = S_IFIFO,
	    [SFS_FT_SOCK] = S_IFSOCK,  [SFS_FT_SYMLINK] = S_IFLNK,
	};
	struct sfs_fuse_dirbuf *d = ctx;
	char cname[SFS_NAME_MAX + 1];
	struct stat st;
	size_t need;

	if (name_len > SFS_NAME_MAX)
		name_len = SFS_NAME_MAX;
	memcpy(cname, name, name_len);
	cname[name_len] = '\0';
	need = fuse_add_direntry(d->req, NULL, 0, cname, NULL, 0);
	if (d->pos + need > d->size)
		return 1;
	memset(&st, 0, sizeof(st));
	st.st_ino = sfs_fuse_ino_out(ino);
	st.st_mode = ftype < G_N_ELEMENTS(ftype_mode) ? ftype_mode[ftype] : 0;
	fuse_add_direntry(d->req, d->buf + d->pos, d->size - d->pos, cname, &st,
			  (off_t)next_off);
	d->pos += need;
	return 0;
}

/* Offsets are the engine's cookies (fs.h sfs_readdir). */
static void sfs_fuse_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			     off_t off, struct fuse_file_info *fi)
{
	struct sfs_fuse_dirbuf d = {.req = req, .size = size};
	sfs_ino_t i = sfs_fuse_ino_in(ino);
	int rc;

	if (sfs_ctl_readdir(req, ino, size, off))
		return;
	if (!i) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	d.buf = g_try_malloc(size ? size : 1);
	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	sfs_ns_t t0 = sfs_rec_start(req);

	rc = sfs_readdir(sfs_fuse_fs(req), i, (uint64_t)off, sfs_fuse_filldir,
			 &d);
	if (sfs_rec(req) && off == 0) /* a listing's first chunk */
		sfs_rec_path(req, SFS_TOP_READDIR, t0, ino, NULL, 0,
			     rc < 0 && d.pos == 0 ? rc : 0);
	/* entries already gathered go out; the error returns next time */
	if (rc < 0 && d.pos == 0)
		sfs_fuse_reply_rc(req, rc);
	else
		fuse_reply_buf(req, d.buf, d.pos);
	g_free(d.buf);
}

static void sfs_fuse_releasedir(fuse_req_t req, fuse_ino_t ino,
				struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void sfs_fuse_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			      struct fuse_file_info *fi)
{
	sfs_fuse_fsync(req, ino, datasync, fi);
}

static void sfs_fuse_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct sfs_statfs s;
	struct statvfs sv;
	sfs_ns_t t0 = sfs_rec_start(req);
	int rc;

	rc = sfs_statfs(sfs_fuse_fs(req), &s);
	if (sfs_rec(req)) {
		struct sfs_trace_rec r;

		sfs_rec_init(req, &r, SFS_TOP_STATFS, t0);
		sfs_rec_done(req, &r, rc, NULL);
	}
	if (rc < 0) {
		sfs_fuse_reply_rc(req, rc);
		return;
	}
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = s.block_size;
	sv.f_frsize = s.block_size;
	sv.f_blocks = s.blocks;
	sv.f_bfree = s.blocks_free;
	sv.f_bavail = s.blocks_avail;
	sv.f_files = s.inodes;
	sv.f_ffree = s.inodes_free;
	sv.f_favail = s.inodes_free;
	sv.f_namemax = s.name_max;
	fuse_reply_statfs(req, &sv);
}

/* ---- extended attributes ---- */

/* Rule 13: the set-group-ID bit goes as posix_acl_update_mode takes it
 * off when ext4_set_acl runs for a caller outside the file's group
 * without CAP_FSETID (the kernel judged that and said so). */
static int sfs_fuse_kill_sgid(struct sfs_fs *fs, sfs_ino_t i)
{
	struct sfs_attr a;
	int rc = sfs_getattr(fs, i, &a);

	if (rc < 0 || !(a.mode & S_ISGID))
		return rc;
	a.mode &= ~(unsigned)S_ISGID;
	return sfs_setattr(fs, i, &a, SFS_SET_MODE, NULL);
}

static void sfs_fuse_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			      const char *value, size_t size, int flags)
{
	sfs_ino_t i = sfs_fuse_ino_in(ino);
	bool kill_sgid = flags & SFS_FUSE_XATTR_KILL_SGID; /* rule 13 */
	int rc;

	flags &= ~SFS_FUSE_XATTR_KILL_SGID;
	if (sfs_ctl_setxattr(req, ino))
		return;
	if (!i) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	/* rule 8: an access ACL that changes the mode is the chmod it
	 * amounts to (cp -a sets modes so on an ACL mount) */
	bool acl_rec =
	    sfs_rec(req) && strcmp(name, "system.posix_acl_access") == 0;
	sfs_ns_t t0 = sfs_rec_start(req);
	struct sfs_attr before, after;

	if (acl_rec && sfs_getattr(sfs_fuse_fs(req), i, &before) != 0)
		acl_rec = false;
	do
		rc = sfs_setxattr(sfs_fuse_fs(req), i, name, value, size, flags);
	while (sfs_fuse_reclaim(req, rc));
	if (rc == 0 && kill_sgid &&
	    strcmp(name, "system.posix_acl_access") == 0)
		rc = sfs_fuse_kill_sgid(sfs_fuse_fs(req), i);
	if (acl_rec && rc == 0 &&
	    sfs_getattr(sfs_fuse_fs(req), i, &after) == 0 &&
	    after.mode != before.mode) {
		struct sfs_trace_rec r;
		char *path = sfs_trace_path(sfs_rec(req), ino, NULL);

		sfs_rec_init(req, &r, SFS_TOP_CHMOD, t0);
		r.path = path;
		r.mode = after.mode & 07777;
		sfs_rec_done(req, &r, 0, NULL);
		g_free(path);
	}
	sfs_fuse_reply_rc(req, rc);
}

/* size 0 is a probe for the value's length (fuse_reply_xattr). */
static void sfs_fuse_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			      size_t size)
{
	sfs_ino_t i = sfs_fuse_ino_in(ino);
	size_t len = 0;
	char *buf = NULL;
	int rc;

	if (sfs_ctl_getxattr(req, ino))
		return;
	if (!i) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (size && !(buf = g_try_malloc(size))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	rc = sfs_getxattr(sfs_fuse_fs(req), i, name, buf, size, &len);
	if (rc < 0)
		sfs_fuse_reply_rc(req, rc);
	else if (size == 0)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, len);
	g_free(buf);
}

/*
 * Drop the trusted.* names from a list of n bytes ("a\0b\0"), as ext4's
 * list handler does for callers without CAP_SYS_ADMIN (here: not root).
 * Returns the new length.
 */
static size_t sfs_fuse_hide_trusted(char *names, size_t n)
{
	size_t in = 0, out = 0;

	while (in < n) {
		size_t len = strnlen(names + in, n - in) + 1;

		if (strncmp(names + in, "trusted.", 8) != 0) {
			memmove(names + out, names + in, len);
			out += len;
		}
		in += len;
	}
	return out;
}

static void sfs_fuse_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	sfs_ino_t i = sfs_fuse_ino_in(ino);
	struct sfs_fs *fs = sfs_fuse_fs(req);
	size_t len = 0;
	char *buf = NULL;
	int rc;

	if (sfs_ctl_listxattr(req, ino, size))
		return;
	if (!i) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	/* the whole list (its length first; again if it grew meanwhile),
	 * then what this caller may see of it */
	for (int tries = 0;; tries++) {
		size_t want = 0;

		rc = sfs_listxattr(fs, i, NULL, 0, &want);
		if (rc < 0)
			break;
		g_free(buf);
		buf = g_try_malloc(want + 1);
		if (!buf) {
			rc = -ENOMEM;
			break;
		}
		rc = sfs_listxattr(fs, i, buf, want + 1, &len);
		if (rc != -ERANGE || tries == 3)
			break;
	}
	if (rc >= 0 && fuse_req_ctx(req)->uid != 0)
		len = sfs_fuse_hide_trusted(buf, len);
	if (rc < 0)
		sfs_fuse_reply_rc(req, rc);
	else if (size == 0)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, len);
	g_free(buf);
}

static void sfs_fuse_removexattr(fuse_req_t req, fuse_ino_t ino,
				 const char *name)
{
	sfs_ino_t i = sfs_fuse_ino_in(ino);

	if (sfs_ctl_removexattr(req, ino))
		return;
	sfs_fuse_reply_rc(req, i ? sfs_removexattr(sfs_fuse_fs(req), i, name)
				 : -ESTALE);
}

static const struct fuse_lowlevel_ops sfs_fuse_ops = {
    .init = sfs_fuse_init,
    .destroy = sfs_fuse_destroy,
    .lookup = sfs_fuse_lookup,
    .forget = sfs_fuse_forget,
    .forget_multi = sfs_fuse_forget_multi,
    .getattr = sfs_fuse_getattr,
    .setattr = sfs_fuse_setattr,
    .readlink = sfs_fuse_readlink,
    .mknod = sfs_fuse_mknod,
    .mkdir = sfs_fuse_mkdir,
    .unlink = sfs_fuse_unlink,
    .rmdir = sfs_fuse_rmdir,
    .symlink = sfs_fuse_symlink,
    .rename = sfs_fuse_rename,
    .link = sfs_fuse_link,
    .open = sfs_fuse_open,
    .read = sfs_fuse_read,
    .write = sfs_fuse_write,
    .flush = sfs_fuse_flush,
    .release = sfs_fuse_release,
    .fsync = sfs_fuse_fsync,
    .fallocate = sfs_fuse_fallocate,
    .ioctl = sfs_fuse_ioctl,
    .lseek = sfs_fuse_lseek,
    .opendir = sfs_fuse_opendir,
    .readdir = sfs_fuse_readdir,
    .releasedir = sfs_fuse_releasedir,
    .fsyncdir = sfs_fuse_fsyncdir,
    .statfs = sfs_fuse_statfs,
    .setxattr = sfs_fuse_setxattr,
    .getxattr = sfs_fuse_getxattr,
    .listxattr = sfs_fuse_listxattr,
    .removexattr = sfs_fuse_removexattr,
    .create = sfs_fuse_create,
};

/* ---- libfuse's messages ---- */

/*
 * libfuse's log hook carries no context pointer and libfuse emits some
 * messages in fragments ("unknown option(s): `", " -o x", "'\n").  So the
 * destination is chosen by which function is installed (fuse_set_log_func)
 * and a partial line waits in a per-thread buffer: the only file-static
 * state here, forced by that interface.  Complete lines lose libfuse's
 * "fuse: " and get simfs's prefix; debug traces (-d) pass unchanged.
 */
static void sfs_fuse_line_free(gpointer p)
{
	g_string_free(p, TRUE);
}

static GPrivate sfs_fuse_partial = G_PRIVATE_INIT(sfs_fuse_line_free);

/* Add a fragment; returns a complete prefixed line (g_free) or NULL. */
static char *sfs_fuse_log_line(enum fuse_log_level level, const char *fmt,
			       va_list ap) G_GNUC_PRINTF(2, 0);
static char *sfs_fuse_log_line(enum fuse_log_level level, const char *fmt,
			       va_list ap)
{
	GString *buf = g_private_get(&sfs_fuse_partial);
	char *line, *msg;

	if (level == FUSE_LOG_DEBUG)
		return g_strdup_vprintf(fmt, ap);
	if (!buf) {
		buf = g_string_new(NULL);
		g_private_set(&sfs_fuse_partial, buf);
	}
	g_string_append_vprintf(buf, fmt, ap);
	if (buf->len == 0 || buf->str[buf->len - 1] != '\n')
		return NULL;
	msg = g_strchomp(buf->str);
	line = g_strconcat(SFS_FUSE_PREFIX,
			   g_str_has_prefix(msg, "fuse: ") ? msg + 6 : msg,
			   "\n", NULL);
	g_string_truncate(buf, 0);
	return line;
}

static void sfs_fuse_log_stderr(enum fuse_log_level level, const char *fmt,
				va_list ap) G_GNUC_PRINTF(2, 0);
static void sfs_fuse_log_stderr(enum fuse_log_level level, const char *fmt,
				va_list ap)
{
	char *line = sfs_fuse_log_line(level, fmt, ap);

	if (line)
		fputs(line, stderr);
	g_free(line);
}

static void sfs_fuse_log_syslog(enum fuse_log_level level, const char *fmt,
				va_list ap) G_GNUC_PRINTF(2, 0);
static void sfs_fuse_log_syslog(enum fuse_log_level level, const char *fmt,
				va_list ap)
{
	static const int prio[] = {
	    [FUSE_LOG_EMERG] = LOG_EMERG,     [FUSE_LOG_ALERT] = LOG_ALERT,
	    [FUSE_LOG_CRIT] = LOG_CRIT,	      [FUSE_LOG_ERR] = LOG_ERR,
	    [FUSE_LOG_WARNING] = LOG_WARNING, [FUSE_LOG_NOTICE] = LOG_NOTICE,
	    [FUSE_LOG_INFO] = LOG_INFO,	      [FUSE_LOG_DEBUG] = LOG_DEBUG,
	};
	char *line = sfs_fuse_log_line(level, fmt, ap);

	if (line)
		syslog((unsigned)level < G_N_ELEMENTS(prio) ? prio[level]
							    : LOG_ERR,
		       "%s", line);
	g_free(line);
}

void sfs_fuse_log_to_syslog(void)
{
	fuse_set_log_func(sfs_fuse_log_syslog);
}

/* ---- session verbs (fuse_adapter.h) ---- */

int sfs_fuse_new(const char *opts, bool debug, struct sfs_fuse **out)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct sfs_fuse *f;
	int rc = -ENOMEM;

	fuse_set_log_func(sfs_fuse_log_stderr);
	f = g_new0(struct sfs_fuse, 1);
	f->ctl = sfs_ctl_new(sfs_fuse_ctl_note, f);
	if (fuse_opt_add_arg(&args, "simfs") < 0)
		goto out_free;
	if (debug && fuse_opt_add_arg(&args, "-d") < 0)
		goto out_free;
	if (opts && *opts &&
	    (fuse_opt_add_arg(&args, "-o") < 0 ||
	     fuse_opt_add_arg(&args, opts) < 0))
		goto out_free;
	f->se = fuse_session_new(&args, &sfs_fuse_ops, sizeof(sfs_fuse_ops), f);
	if (!f->se) {
		rc = -EINVAL;
		goto out_free;
	}
	fuse_opt_free_args(&args);
	*out = f;
	return 0;

out_free:
	fuse_opt_free_args(&args);
	sfs_ctl_free(f->ctl);
	g_free(f);
	return rc;
}

/* Finish the trace (rule 8): every request has been answered. */
static void sfs_fuse_trace_close(struct sfs_fuse *f)
{
	int rc = sfs_trace_recorder_free(f->trace);

	f->trace = NULL;
	if (rc < 0)
		fuse_log(FUSE_LOG_ERR, "writing the trace failed: %s\n",
			 g_strerror(-rc));
}

int sfs_fuse_mount(struct sfs_fuse *f, struct sfs_fs *fs,
		   const char *mountpoint)
{
	struct sfs_config cfg;

	f->fs = fs;
	sfs_ctl_attach(f->ctl, fs);
	sfs_fs_count_lookups(fs); /* rule 5 */
	sfs_fs_get_config(fs, &cfg);
	if (cfg.trace_path[0] && !f->trace) {
		char *err = NULL;
		int rc = sfs_trace_recorder_new(
		    cfg.trace_path, sfs_fs_clock(fs), &f->trace, &err);

		if (rc < 0) {
			fuse_log(FUSE_LOG_ERR, "trace=%s: %s\n", cfg.trace_path,
				 err ? err : g_strerror(-rc));
			g_free(err);
			return -EIO;
		}
	}
	if (fuse_session_mount(f->se, mountpoint) != 0) {
		sfs_fuse_trace_close(f);
		return -EIO;
	}
	f->mounted = true;
	/* rules 9 and 12; without the hooks the mount works, MAP_SHARED
	 * and birth times do not */
	f->mmap_off = cfg.no_shared_mmap;
	if (fuse_session_custom_io(f->se, &sfs_fuse_io,
				   fuse_session_fd(f->se)) == 0)
		g_atomic_int_set(&f->io_hooked, 1);
	return 0;
}

int sfs_fuse_serve(struct sfs_fuse *f, void (*ready)(void *arg), void *arg)
{
	struct fuse_loop_config *cfg;
	int rc;

	if (!f->mounted)
		return -EINVAL;
	f->ready = ready;
	f->ready_arg = arg;
	if (fuse_set_signal_handlers(f->se) != 0) {
		rc = -EIO;
		goto out_unmount;
	}
	f->signals = true;
	cfg = fuse_loop_cfg_create();
	if (!cfg) {
		rc = -ENOMEM;
		goto out_unmount;
	}
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_max_threads(cfg, SFS_FUSE_MAX_THREADS);
	fuse_loop_cfg_set_idle_threads(cfg, SFS_FUSE_IDLE_THREADS);
	rc = fuse_session_loop_mt(f->se, cfg);
	fuse_loop_cfg_destroy(cfg);
	sfs_fuse_trace_close(f);
	/* > 0: the signal that ended the loop; that is a normal end */
	if (rc > 0)
		rc = 0;

out_unmount:
	/* The signal handlers stay until sfs_fuse_free: a second SIGTERM
	 * during the caller's write-back must not kill the daemon. */
	fuse_session_unmount(f->se);
	f->mounted = false;
	return rc;
}

void sfs_fuse_free(struct sfs_fuse *f)
{
	if (!f)
		return;
	if (f->signals)
		fuse_remove_signal_handlers(f->se);
	if (f->mounted)
		fuse_session_unmount(f->se);
	fuse_session_destroy(f->se);
	sfs_fuse_trace_close(f);
	sfs_ctl_free(f->ctl);
	g_free(f);
}
