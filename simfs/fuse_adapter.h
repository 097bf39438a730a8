/*
 * fuse_adapter.h - the FUSE front end: a libfuse3 lowlevel session whose
 * operations map 1:1 onto the engine's verbs (fs.h).
 *
 * Call pattern (simfs mount, main.c):
 *
 *   sfs_fuse_new(opts, debug, &f)       parse FUSE options, before the image
 *                                       is touched
 *   sfs_fuse_mount(f, fs, mountpoint)   attach the engine, mount(2)
 *   sfs_fuse_serve(f, ready, arg)       multi-threaded loop until unmounted
 *                                       or SIGINT/SIGTERM/SIGHUP; ready(arg)
 *                                       runs once the kernel's INIT arrived;
 *                                       unmounts before returning
 *   sfs_fs_close(fs)                    (the caller) write everything back
 *   sfs_fuse_free(f)                    remove the signal handlers, destroy
 *                                       the session
 *
 * libfuse's SIGINT/SIGTERM/SIGHUP handlers stay installed from serve until
 * sfs_fuse_free, so a second signal during the write-back cannot kill the
 * daemon half way.
 *
 * Files are opened with direct_io and without keep_cache, so every read and
 * write reaches the engine and the kernel page cache holds no file data
 * but that of shared mappings (the engine models its own page cache; the
 * INIT reply asks for MAP_SHARED on direct_io files: fuse.c rule 9).  The
 * kernel checks permissions (the caller passes default_permissions).  libfuse's
 * messages go through a log hook that prefixes them "simfs mount: ".
 *
 * The adapter also answers MOUNTPOINT/.simfs, the control directory that
 * the image does not hold: stats (JSON), stats.txt, config (writable:
 * sfs_fs_set_knobs) and last_error, with inode numbers above any ext2
 * inode.  It is found by name and not listed by readdir of the root
 * (fuse.c rule 7, fuse_ctl.c; doc/measurement.md, section 0.1).
 */
#ifndef SFS_FUSE_ADAPTER_H
#define SFS_FUSE_ADAPTER_H

#include <stdbool.h>

#include "fs.h"

struct sfs_fuse;

/*
 * Create a session.  opts: comma-separated FUSE/mount options handed to
 * libfuse as "-o opts" (NULL or "" for none); debug: libfuse's -d.
 * Returns 0, or -EINVAL for options libfuse refuses (it has printed why,
 * one line, through the log hook), -ENOMEM.
 */
int sfs_fuse_new(const char *opts, bool debug, struct sfs_fuse **out);

/* Attach fs (not owned) and mount at mountpoint.  0 or -EIO (libfuse has
 * printed why). */
int sfs_fuse_mount(struct sfs_fuse *f, struct sfs_fs *fs,
		   const char *mountpoint);

/*
 * Serve requests until the filesystem is unmounted or a signal ends the
 * loop, then unmount.  ready (may be NULL) is called once, from a worker
 * thread, when the kernel's INIT request arrives: the mount is live.
 * Returns 0 (unmounted or signalled) or -errno (the loop failed).
 */
int sfs_fuse_serve(struct sfs_fuse *f, void (*ready)(void *arg), void *arg);

/* Remove the signal handlers and destroy the session (unmounting first if
 * still mounted).  NULL is a no-op. */
void sfs_fuse_free(struct sfs_fuse *f);

/* Send libfuse's messages to syslog instead of stderr (after detaching). */
void sfs_fuse_log_to_syslog(void);

#endif /* SFS_FUSE_ADAPTER_H */
