/*
 * fuse_ctl.h - the control directory MOUNTPOINT/.simfs (fuse.c rule 7),
 * internal to the FUSE front end.
 *
 * Each FUSE handler of fuse.c asks once, at its top: the entry point
 * named for its request kind answers the request when it is for a
 * control file (or, for the namespace verbs, when a name is in the
 * control directory) and returns true, or 1; false or 0 means the
 * request is the engine's.  The handlers that write a trace (fuse.c
 * rule 8) record nothing for a request answered here.
 *
 * Call pattern (fuse.c):
 *
 *   sfs_ctl_new(note, arg)      with the session, before the mount
 *   sfs_ctl_attach(ctl, fs)     at mount, before the loop starts
 *   sfs_ctl_<request>(...)      from any loop thread
 *   sfs_ctl_free(ctl)           after the loop has ended
 */
#ifndef SFS_FUSE_CTL_H
#define SFS_FUSE_CTL_H

#include <stdbool.h>
#include <sys/stat.h>

#include <fuse_lowlevel.h>

#include "fs.h"

#define SFS_FUSE_TIMEOUT 1.0	/* entry and attr validity, s */
#define SFS_CTL_INO 0xFFFFFF00u /* the directory; files follow */

struct sfs_fuse_ctl;

/* The control files of one session.  note(arg), if set, is a line
 * stats.txt ends with (it must be callable from any thread). */
struct sfs_fuse_ctl *sfs_ctl_new(const char *(*note)(void *arg), void *arg);

/* The engine the files show and configure (not owned). */
void sfs_ctl_attach(struct sfs_fuse_ctl *ctl, struct sfs_fs *fs);

void sfs_ctl_free(struct sfs_fuse_ctl *ctl);

/* True if the request was for a control file and has been answered. */
bool sfs_ctl_lookup(struct sfs_fuse_ctl *ctl, fuse_req_t req, fuse_ino_t parent,
		    const char *name);
bool sfs_ctl_getattr(struct sfs_fuse_ctl *ctl, fuse_req_t req, fuse_ino_t ino);
bool sfs_ctl_setattr(struct sfs_fuse_ctl *ctl, fuse_req_t req, fuse_ino_t ino,
		     const struct stat *st, int to_set);
bool sfs_ctl_readlink(fuse_req_t req, fuse_ino_t ino);
bool sfs_ctl_open(struct sfs_fuse_ctl *ctl, fuse_req_t req, fuse_ino_t ino,
		  struct fuse_file_info *fi);
bool sfs_ctl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		  struct fuse_file_info *fi);
bool sfs_ctl_write(struct sfs_fuse_ctl *ctl, fuse_req_t req, fuse_ino_t ino,
		   const char *buf, size_t size, struct fuse_file_info *fi);
bool sfs_ctl_release(struct sfs_fuse_ctl *ctl, fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi);
bool sfs_ctl_fsync(fuse_req_t req, fuse_ino_t ino);
bool sfs_ctl_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
bool sfs_ctl_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off);
bool sfs_ctl_setxattr(fuse_req_t req, fuse_ino_t ino);
bool sfs_ctl_getxattr(fuse_req_t req, fuse_ino_t ino);
bool sfs_ctl_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
bool sfs_ctl_removexattr(fuse_req_t req, fuse_ino_t ino);

/* unlink and rmdir of (parent, name): true if answered (EPERM). */
bool sfs_ctl_remove(fuse_req_t req, fuse_ino_t parent, const char *name);

/*
 * Namespace verbs that may meet the control directory's own name in the
 * root.  1: the request was answered (EPERM, a name inside the control
 * directory or a control file as the source); a negative errno: the
 * result the caller gives as the engine's (and records), because the
 * name is ".simfs" in the root; 0: not a control name.
 *
 * sfs_ctl_new_name: mknod, mkdir, symlink, create (-EEXIST).
 * sfs_ctl_link: link of ino as (newparent, newname) (-EEXIST).
 * sfs_ctl_rename: err (> 0) is the errno to answer with, the caller's
 * own verdict on the flags (EINVAL) or EPERM; -err for the root's name.
 */
int sfs_ctl_new_name(fuse_req_t req, fuse_ino_t parent, const char *name);
int sfs_ctl_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		 const char *newname);
int sfs_ctl_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		   fuse_ino_t newparent, const char *newname, int err);

/* Requests fuse.c answers itself (rule 12): FUSE_STATX fills *st and
 * returns true for a control file; FUSE_TMPFILE in the control directory
 * gets -EPERM, else 0. */
bool sfs_ctl_statx(struct sfs_fuse_ctl *ctl, fuse_ino_t ino, struct stat *st);
int sfs_ctl_tmpfile(fuse_ino_t parent);

#endif
