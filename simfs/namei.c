/*
 * namei.c - the namespace verbs of fs.h: sfs_lookup, sfs_mknod, sfs_mkdir,
 * sfs_symlink, sfs_link, sfs_unlink, sfs_rmdir, sfs_rename (plain,
 * NOREPLACE, EXCHANGE), sfs_readlink and sfs_readdir.
 *
 * Each verb checks its names (sfs_check_name), takes fs->lock, refuses
 * changes on a read-only or failed filesystem (sfs_check_writable), takes
 * inode references, edits directories through dir.c and link counts here,
 * stamps times (the directories changed: mtime and ctime; inodes whose link
 * count or name changes: ctime), writes the inodes back and drops the
 * references.  An inode whose last link goes is freed by sfs_iput once no
 * reference and no open remain.
 *
 * Link counts (ext-format 5.6): a non-directory has one per entry naming
 * it; a directory has 2 + one per subdirectory (their "..").  Multi-step
 * changes are ordered so that the failures an input can cause (-EEXIST,
 * -ENOSPC, -EMLINK, -ENOTEMPTY, ...) happen before anything changed; a
 * device error half way enters the sticky error state (sfs_fs_error).
 *
 * Policy: the root's lost+found can be neither replaced nor renamed away
 * (-EPERM), so that e2fsck in repair mode finds it pre-sized; rmdir of it
 * (empty) is allowed, as ext4 allows it (e2fsck -f makes a new one, and
 * mkdir lost+found works).
 */
#include <errno.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "fs_priv.h"
#include "journal.h"

#define NM_LOST_FOUND "lost+found"

/* What a new inode is: its mode and the type-specific contents. */
struct nm_new {
	uint32_t mode;	    /* type | permissions */
	uint32_t rdev;	    /* character and block devices */
	const char *target; /* symlinks: target, tlen bytes */
	size_t tlen;
	bool has_umask; /* SFS_MODE_UMASK given: */
	uint32_t umask; /* applied without a default ACL */
};

/* The umask that mode may carry (fs.h SFS_MODE_UMASK) into nn. */
/*
 * Add delta (+1 or -1) to directory dp's link count as a subdirectory
 * comes or goes.  A count of 1 is dir_nlink's "too many to count" (ext4
 * sets it past 65,000 subdirectories; simfs itself stops at
 * SFS_LINK_MAX): it stays 1 either way, as ext4's inc/drop_nlink do.
 * Otherwise the count never drops below 2 ("." and the parent's entry).
 */
static void dir_links_add(struct sfs_inode *dp, int delta)
{
	uint32_t n = sfs_i_nlink(dp);

	if (n == 1)
		return;
	if (delta < 0 && n <= 2)
		return;
	sfs_i_set_nlink(dp, (uint32_t)((int)n + delta));
}

static void nm_take_umask(struct nm_new *nn, uint32_t mode)
{
	nn->has_umask = (mode & SFS_MODE_HAS_UMASK) != 0;
	nn->umask = (mode >> 16) & 0777;
}

static bool nm_is_dot(const char *name, size_t len)
{
	return name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.'));
}

static bool nm_is_lost_found(sfs_ino_t parent, const char *name, size_t len)
{
	return parent == SFS_ROOT_INO && len == strlen(NM_LOST_FOUND) &&
	       memcmp(name, NM_LOST_FOUND, len) == 0;
}

static uint8_t nm_ftype(const struct sfs_inode *ip)
{
	return sfs_mode_to_ftype(sfs_i_mode(ip));
}

/* Referenced directory inode ino.  -ESTALE, -ENOTDIR. */
static int nm_get_dir(struct sfs_fs *fs, sfs_ino_t ino, struct sfs_inode **out)
{
	struct sfs_inode *dp;
	int rc;

	rc = sfs_iget(fs, ino, &dp);
	if (rc)
		return rc;
	if (!sfs_i_isdir(dp)) {
		sfs_iput(fs, dp);
		return -ENOTDIR;
	}
	*out = dp;
	return 0;
}

/* Referenced inode that name in dp names.  -ENOENT, -EIO (the entry names
 * an inode not in use: corruption). */
static int nm_get_child(struct sfs_fs *fs, struct sfs_inode *dp,
			const char *name, size_t len, struct sfs_inode **out)
{
	sfs_ino_t ino;
	int rc;

	rc = sfs_dir_lookup(fs, dp, name, len, &ino, NULL);
	if (rc)
		return rc;
	rc = sfs_iget(fs, ino, out);
	if (rc == -ESTALE) {
		sfs_fs_error(fs, -EIO,
			     "directory inode %u: entry '%.*s' names unused "
			     "inode %u",
			     dp->ino, (int)len, name, ino);
		rc = -EIO;
	}
	return rc;
}

/* A directory's contents changed: mtime and ctime, write it. */
static int nm_touch_dir(struct sfs_fs *fs, struct sfs_inode *dp)
{
	sfs_i_touch(fs, dp, SFS_SET_MTIME | SFS_SET_CTIME);
	return sfs_inode_dirty(fs, dp);
}

/* Set ip's link count, stamp ctime, write it. */
static int nm_set_links(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t n)
{
	sfs_i_set_nlink(ip, n);
	sfs_i_touch(fs, ip, SFS_SET_CTIME);
	return sfs_inode_dirty(fs, ip);
}

static uint32_t nm_gid(const struct sfs_inode *ip)
{
	return sfs_le16(ip->d.i_gid) | (uint32_t)sfs_le16(ip->d.i_gid_high)
					   << 16;
}

/* Character/block device number into i_block (ext-format 4.6). */
static void nm_encode_dev(struct sfs_inode *ip, uint32_t rdev)
{
	uint32_t maj = major(rdev), min = minor(rdev);

	memset(ip->d.i_block, 0, sizeof(ip->d.i_block));
	if (maj < 256 && min < 256)
		ip->d.i_block[0] = sfs_cpu_to_le32((maj << 8) | min);
	else
		ip->d.i_block[1] = sfs_cpu_to_le32((min & 0xff) | (maj << 8) |
						   ((min & ~0xffu) << 12));
}

/* A new file, directory or slow symlink gets the mount's mapping model's
 * empty map (an extent root for the extent tree; never fast symlinks or
 * devices). */
static void nm_map_init(struct sfs_fs *fs, struct sfs_inode *ip)
{
	sfs_map_init_inode(fs, ip);
}

/* Symlink target: in i_block if it fits (fast), else in data block 0. */
static int nm_symlink_write(struct sfs_fs *fs, struct sfs_inode *ip,
			    const char *target, size_t tlen)
{
	struct sfs_buf *b;
	sfs_blk_t pblk;
	int rc;

	if (tlen <= SFS_FAST_SYMLINK_MAX) {
		ip->d.i_flags &= ~sfs_cpu_to_le32(SFS_EXTENTS_FL);
		memset(ip->d.i_block, 0, sizeof(ip->d.i_block));
		memcpy(ip->d.i_block, target, tlen);
		sfs_i_set_size(ip, tlen);
		return 0;
	}
	nm_map_init(fs, ip);
	rc = sfs_bmap(fs, ip, 0, true, &pblk);
	if (rc)
		return rc;
	rc = sfs_cache_get_new(fs->cache, pblk, SFS_IO_DATA, &b);
	if (rc)
		return rc;
	memset(b->data, 0, fs->bs);
	memcpy(b->data, target, tlen);
	sfs_meta_dirty(fs, b);
	sfs_cache_put(fs->cache, b);
	sfs_i_set_size(ip, tlen);
	return 0;
}

/* Type-specific contents of a new inode ip in directory dp. */
static int nm_setup(struct sfs_fs *fs, struct sfs_inode *dp,
		    struct sfs_inode *ip, const struct nm_new *nn)
{
	switch (nn->mode & SFS_S_IFMT) {
	case SFS_S_IFDIR:
		nm_map_init(fs, ip);
		return sfs_dir_init(fs, ip, dp->ino);
	case SFS_S_IFLNK:
		return nm_symlink_write(fs, ip, nn->target, nn->tlen);
	case SFS_S_IFCHR:
	case SFS_S_IFBLK:
		ip->d.i_flags &= ~sfs_cpu_to_le32(SFS_EXTENTS_FL);
		nm_encode_dev(ip, nn->rdev);
		return 0;
	case SFS_S_IFIFO:
	case SFS_S_IFSOCK:
		ip->d.i_flags &= ~sfs_cpu_to_le32(SFS_EXTENTS_FL);
		memset(ip->d.i_block, 0, sizeof(ip->d.i_block));
		return 0;
	default:
		nm_map_init(fs, ip);
		return 0;
	}
}

/* A live directory to make an inode in: -EROFS, -ESTALE, -ENOTDIR,
 * -ENOENT (removed). */
static int nm_parent(struct sfs_fs *fs, sfs_ino_t parent,
		     struct sfs_inode **dpp)
{
	int rc = sfs_check_writable(fs);

	if (rc)
		return rc;
	rc = nm_get_dir(fs, parent, dpp);
	if (rc)
		return rc;
	if (sfs_i_nlink(*dpp) == 0) {
		sfs_iput(fs, *dpp);
		return -ENOENT;
	}
	return 0;
}

/* A new inode in dp as nn describes it, with no link yet: owner (a
 * setgid directory hands its group down, inode_init_owner), dp's
 * default ACL, its type's first contents.  On failure it is freed. */
static int nm_new_inode(struct sfs_fs *fs, struct sfs_inode *dp,
			const struct nm_new *nn, uint32_t uid, uint32_t gid,
			struct sfs_inode **ipp)
{
	uint32_t mode = nn->mode;
	int rc;

	if (sfs_i_mode(dp) & 02000) {
		gid = nm_gid(dp);
		if ((mode & SFS_S_IFMT) == SFS_S_IFDIR)
			mode |= 02000;
	}
	rc = sfs_inode_alloc(fs, dp, mode, uid, gid, ipp);
	if (rc)
		return rc;
	/* no links: the sfs_iput below frees it */
	rc = sfs_acl_inherit(fs, dp, *ipp, nn->has_umask, nn->umask);
	if (!rc)
		rc = nm_setup(fs, dp, *ipp, nn);
	if (rc)
		sfs_iput(fs, *ipp);
	return rc;
}

/*
 * Create name in parent as a new inode described by nn, linked once (twice
 * with its "." for a directory, which also adds one to the parent).
 * -EEXIST, -ENOENT (parent removed), -EMLINK, -ENOSPC, -EROFS, -EIO.
 */
static int nm_dirsync(struct sfs_fs *fs, const struct sfs_inode *dp, int rc,
		      sfs_ino_t *wait);
static int nm_dirsync_wait(struct sfs_fs *fs, sfs_ino_t wait, int rc);

static int nm_create(struct sfs_fs *fs, sfs_ino_t parent, const char *name,
		     const struct nm_new *nn, uint32_t uid, uint32_t gid,
		     struct sfs_attr *out)
{
	uint32_t mode = nn->mode;
	bool isdir = (mode & SFS_S_IFMT) == SFS_S_IFDIR;
	struct sfs_inode *dp, *ip;
	size_t len;
	int rc, rc2;
	sfs_ino_t wait = 0; /* chattr +D: a commit to wait for */

	if (!fs || !name)
		return -EINVAL;
	rc = sfs_check_name(name, &len);
	if (rc)
		return rc;
	if (nm_is_dot(name, len))
		return -EEXIST;
	sfs_op_begin(fs, (mode & SFS_S_IFMT) == SFS_S_IFDIR	 ? SFS_OP_MKDIR
			 : (mode & SFS_S_IFMT) == SFS_S_IFLNK ? SFS_OP_SYMLINK
							      : SFS_OP_MKNOD);
	rc = nm_parent(fs, parent, &dp);
	if (rc)
		goto out_unlock;
	if (isdir && sfs_i_nlink(dp) >= SFS_LINK_MAX) {
		rc = -EMLINK;
		goto out_put_dir;
	}
	rc = sfs_dir_lookup(fs, dp, name, len, NULL, NULL);
	if (rc == 0)
		rc = -EEXIST;
	if (rc != -ENOENT)
		goto out_put_dir;
	if (sfs_i_immutable(dp)) { /* chattr +i: no new names */
		rc = -EPERM;
		goto out_put_dir;
	}
	rc = nm_new_inode(fs, dp, nn, uid, gid, &ip);
	if (rc)
		goto out_put_dir;
	/* until linked, ip has no links: sfs_iput frees it on failure */
	mode = sfs_i_mode(ip);
	rc = sfs_dir_add(fs, dp, name, len, ip->ino, sfs_mode_to_ftype(mode));
	if (rc)
		goto out_put;
	sfs_i_set_nlink(ip, isdir ? 2 : 1);
	rc = sfs_inode_dirty(fs, ip);
	if (isdir)
		dir_links_add(dp, 1);
	rc2 = nm_touch_dir(fs, dp);
	if (!rc)
		rc = rc2;
	rc = nm_dirsync(fs, dp, rc, &wait);
	if (!rc && out) {
		sfs_i_to_attr(fs, ip, out);
		sfs_kernel_ref(fs, ip);
	}
out_put:
	sfs_iput(fs, ip);
out_put_dir:
	sfs_iput(fs, dp);
out_unlock:
	sfs_op_end(fs);
	return nm_dirsync_wait(fs, wait, rc);
}

/*
 * chattr +D (or +S) on a directory: a change to it is synchronous, as
 * ext4_handle_sync makes it: with a journal the running transaction is
 * committed, without one everything is written back.  Under group commit
 * with a commit in flight the change waits for it, as fsync does: on a
 * mount *wait is set to the directory and the verb, its lock let go,
 * calls nm_dirsync_wait; under a driver (simfs run) the next commit takes
 * the change.  rc passes through when it is an error or the directory has
 * neither flag.
 */
static int nm_dirsync(struct sfs_fs *fs, const struct sfs_inode *dp, int rc,
		      sfs_ino_t *wait)
{
	if (rc || !(sfs_le32(dp->d.i_flags) & (SFS_DIRSYNC_FL | SFS_SYNC_FL)))
		return rc;
	if (sfs_jnl_journaled(fs->jnl) && !fs->jnl_off) {
		if (!sfs_fs_commit_busy(fs))
			return sfs_jnl_commit(fs->jnl, SFS_COMMIT_FSYNC);
		if (!fs->driver && !*wait)
			*wait = dp->ino;
		return 0;
	}
	return sfs_fs_fsync_locked(fs);
}

/* After the verb's sfs_op_end: the wait nm_dirsync asked for, if any (a
 * directory removed meanwhile went with a commit of its own). */
static int nm_dirsync_wait(struct sfs_fs *fs, sfs_ino_t wait, int rc)
{
	if (rc || !wait)
		return rc;
	rc = sfs_dirsync_wait(fs, wait);
	return rc == -ENOENT || rc == -ESTALE ? 0 : rc;
}

/* ---- the verbs ---- */

/* Attributes of parent/name ("." and ".." included).  -ENOENT, -ENOTDIR,
 * -ESTALE (parent unknown), -ENAMETOOLONG, -EINVAL, -EIO. */
int sfs_lookup(struct sfs_fs *fs, sfs_ino_t parent, const char *name,
	       struct sfs_attr *out)
{
	struct sfs_inode *dp, *ip;
	size_t len;
	int rc;

	if (!fs || !name || !out)
		return -EINVAL;
	rc = sfs_check_name(name, &len);
	if (rc)
		return rc;
	sfs_op_begin(fs, SFS_OP_LOOKUP);
	rc = nm_get_dir(fs, parent, &dp);
	if (rc)
		goto out_unlock;
	rc = nm_get_child(fs, dp, name, len, &ip);
	if (!rc) {
		sfs_i_to_attr(fs, ip, out);
		sfs_kernel_ref(fs, ip);
		sfs_iput(fs, ip);
	}
	sfs_iput(fs, dp);
out_unlock:
	sfs_op_end(fs);
	return rc;
}

/* Regular file (type 0 means regular, as mknod(2) says), device, FIFO or
 * socket.  -EPERM for a directory, -EINVAL for another type. */
int sfs_mknod(struct sfs_fs *fs, sfs_ino_t parent, const char *name,
	      uint32_t mode, uint32_t rdev, uint32_t uid, uint32_t gid,
	      struct sfs_attr *out)
{
	struct nm_new nn = {0};
	uint32_t type = mode & SFS_S_IFMT;

	switch (type) {
	case 0:
		type = SFS_S_IFREG;
		break;
	case SFS_S_IFREG:
	case SFS_S_IFIFO:
	case SFS_S_IFSOCK:
	case SFS_S_IFCHR:
	case SFS_S_IFBLK:
		break;
	case SFS_S_IFDIR:
		return -EPERM;
	default:
		return -EINVAL;
	}
	nn.mode = type | (mode & 07777);
	nm_take_umask(&nn, mode);
	if (type == SFS_S_IFCHR || type == SFS_S_IFBLK)
		nn.rdev = rdev;
	return nm_create(fs, parent, name, &nn, uid, gid, out);
}

/* New empty directory ("." and ".." in one block); the parent gains a
 * link.  -EEXIST, -EMLINK, -ENOSPC, -ENOENT (parent removed). */
int sfs_mkdir(struct sfs_fs *fs, sfs_ino_t parent, const char *name,
	      uint32_t mode, uint32_t uid, uint32_t gid, struct sfs_attr *out)
{
	struct nm_new nn = {.mode = SFS_S_IFDIR | (mode & 07777)};

	nm_take_umask(&nn, mode);
	return nm_create(fs, parent, name, &nn, uid, gid, out);
}

/* Target of 1..bs-1 bytes: -ENOENT if empty, -ENAMETOOLONG if longer. */
int sfs_symlink(struct sfs_fs *fs, sfs_ino_t parent, const char *name,
		const char *target, uint32_t uid, uint32_t gid,
		struct sfs_attr *out)
{
	struct nm_new nn = {.mode = SFS_S_IFLNK | 0777, .target = target};

	if (!fs || !target)
		return -EINVAL;
	nn.tlen = strlen(target);
	if (nn.tlen == 0)
		return -ENOENT;
	if (nn.tlen >= sfs_fs_block_size(fs))
		return -ENAMETOOLONG;
	return nm_create(fs, parent, name, &nn, uid, gid, out);
}

/*
 * O_TMPFILE: a regular file in parent's group with no name (nlink 0), on
 * the orphan list from this operation on (ext4_tmpfile), until sfs_link
 * gives it one; freed when the last holder lets go, by the next mount's
 * orphan processing after a crash.  Returned open, as O_TMPFILE opens
 * it, so that it lives until sfs_release.
 * -ENOENT (parent removed), -ENOTDIR, -ENOSPC, -EROFS, -EINVAL (not a
 * regular type), -EIO.
 */
int sfs_tmpfile(struct sfs_fs *fs, sfs_ino_t parent, uint32_t mode,
		uint32_t uid, uint32_t gid, struct sfs_attr *out)
{
	struct nm_new nn = {.mode = SFS_S_IFREG | (mode & 07777)};
	struct sfs_inode *dp, *ip;
	int rc;

	if (!fs || !out ||
	    ((mode & SFS_S_IFMT) && (mode & SFS_S_IFMT) != SFS_S_IFREG))
		return -EINVAL;
	nm_take_umask(&nn, mode);
	sfs_op_begin(fs, SFS_OP_MKNOD);
	rc = nm_parent(fs, parent, &dp);
	if (rc)
		goto out_unlock;
	rc = nm_new_inode(fs, dp, &nn, uid, gid, &ip);
	if (rc)
		goto out_put_dir;
	rc = sfs_inode_dirty(fs, ip);
	if (!rc) {
		ip->linkable = true;
		ip->opens++; /* returned open: freed at its last release */
		sfs_i_to_attr(fs, ip, out);
		sfs_kernel_ref(fs, ip);
	}
	sfs_iput(fs, ip); /* nlink 0: onto the orphan list, or freed */
out_put_dir:
	sfs_iput(fs, dp);
out_unlock:
	sfs_op_end(fs);
	return rc;
}

/* New name for a non-directory.  -EPERM (directory), -EMLINK, -EEXIST,
 * -ENOENT (inode or new parent already unlinked). */
int sfs_link(struct sfs_fs *fs, sfs_ino_t ino, sfs_ino_t newparent,
	     const char *newname, struct sfs_attr *out)
{
	struct sfs_inode *ip, *dp;
	size_t len;
	int rc, rc2;
	sfs_ino_t wait = 0; /* chattr +D: a commit to wait for */

	if (!fs || !newname)
		return -EINVAL;
	rc = sfs_check_name(newname, &len);
	if (rc)
		return rc;
	if (nm_is_dot(newname, len))
		return -EEXIST;
	sfs_op_begin(fs, SFS_OP_LINK);
	rc = sfs_check_writable(fs);
	if (rc)
		goto out_unlock;
	rc = sfs_iget(fs, ino, &ip);
	if (rc)
		goto out_unlock;
	if (sfs_i_isdir(ip) || sfs_i_pinned(ip)) { /* may_linkat */
		rc = -EPERM;
		goto out_put;
	}
	rc = nm_get_dir(fs, newparent, &dp);
	if (rc)
		goto out_put;
	if (sfs_i_immutable(dp)) {
		rc = -EPERM;
		goto out_put_dir;
	}
	if ((sfs_i_nlink(ip) == 0 && !ip->linkable) || sfs_i_nlink(dp) == 0) {
		rc = -ENOENT;
		goto out_put_dir;
	}
	if (sfs_i_nlink(ip) >= SFS_LINK_MAX) {
		rc = -EMLINK;
		goto out_put_dir;
	}
	rc = sfs_dir_lookup(fs, dp, newname, len, NULL, NULL);
	if (rc == 0)
		rc = -EEXIST;
	if (rc != -ENOENT)
		goto out_put_dir;
	rc = sfs_dir_add(fs, dp, newname, len, ip->ino, nm_ftype(ip));
	if (rc)
		goto out_put_dir;
	if (sfs_i_nlink(ip) == 0) /* an O_TMPFILE's first name */
		sfs_orphan_linked(fs, ip);
	rc = nm_set_links(fs, ip, sfs_i_nlink(ip) + 1);
	rc2 = nm_touch_dir(fs, dp);
	if (!rc)
		rc = rc2;
	rc = nm_dirsync(fs, dp, rc, &wait);
	if (!rc && out) {
		sfs_i_to_attr(fs, ip, out);
		sfs_kernel_ref(fs, ip);
	}
out_put_dir:
	sfs_iput(fs, dp);
out_put:
	sfs_iput(fs, ip);
out_unlock:
	sfs_op_end(fs);
	return nm_dirsync_wait(fs, wait, rc);
}

/* Remove a non-directory's name; the inode goes with its last link and
 * last open.  -ENOENT, -EISDIR, -ENOTDIR. */
int sfs_unlink(struct sfs_fs *fs, sfs_ino_t parent, const char *name)
{
	struct sfs_inode *dp, *ip;
	size_t len;
	int rc, rc2;
	sfs_ino_t wait = 0; /* chattr +D: a commit to wait for */

	if (!fs || !name)
		return -EINVAL;
	rc = sfs_check_name(name, &len);
	if (rc)
		return rc;
	if (nm_is_dot(name, len))
		return -EISDIR;
	sfs_op_begin(fs, SFS_OP_UNLINK);
	rc = sfs_check_writable(fs);
	if (rc)
		goto out_unlock;
	rc = nm_get_dir(fs, parent, &dp);
	if (rc)
		goto out_unlock;
	rc = nm_get_child(fs, dp, name, len, &ip);
	if (rc)
		goto out_put_dir;
	if (sfs_i_isdir(ip)) {
		rc = -EISDIR;
		goto out_put;
	}
	if (sfs_i_pinned(dp) || sfs_i_pinned(ip)) { /* may_delete */
		rc = -EPERM;
		goto out_put;
	}
	rc = sfs_dir_remove(fs, dp, name, len);
	if (rc)
		goto out_put;
	rc = nm_set_links(fs, ip, sfs_i_nlink(ip) ? sfs_i_nlink(ip) - 1 : 0);
	rc2 = nm_touch_dir(fs, dp);
	if (!rc)
		rc = rc2;
	rc = nm_dirsync(fs, dp, rc, &wait);
out_put:
	sfs_iput(fs, ip); /* frees it if that was the last link and use */
out_put_dir:
	sfs_iput(fs, dp);
out_unlock:
	sfs_op_end(fs);
	return nm_dirsync_wait(fs, wait, rc);
}

/* -ENOTDIR, -ENOTEMPTY, -EINVAL ("."). */
int sfs_rmdir(struct sfs_fs *fs, sfs_ino_t parent, const char *name)
{
	struct sfs_inode *dp, *ip;
	bool empty;
	size_t len;
	int rc, rc2;
	sfs_ino_t wait = 0; /* chattr +D: a commit to wait for */

	if (!fs || !name)
		return -EINVAL;
	rc = sfs_check_name(name, &len);
	if (rc)
		return rc;
	if (nm_is_dot(name, len))
		return len == 1 ? -EINVAL : -ENOTEMPTY;
	sfs_op_begin(fs, SFS_OP_RMDIR);
	rc = sfs_check_writable(fs);
	if (rc)
		goto out_unlock;
	rc = nm_get_dir(fs, parent, &dp);
	if (rc)
		goto out_unlock;
	rc = nm_get_child(fs, dp, name, len, &ip);
	if (rc)
		goto out_put_dir;
	if (!sfs_i_isdir(ip)) {
		rc = -ENOTDIR;
		goto out_put;
	}
	if (sfs_i_pinned(dp) || sfs_i_pinned(ip)) { /* may_delete */
		rc = -EPERM;
		goto out_put;
	}
	rc = sfs_dir_is_empty(fs, ip, &empty);
	if (!rc && !empty)
		rc = -ENOTEMPTY;
	if (rc)
		goto out_put;
	rc = sfs_dir_remove(fs, dp, name, len);
	if (rc)
		goto out_put;
	rc = nm_set_links(fs, ip, 0);
	dir_links_add(dp, -1);
	rc2 = nm_touch_dir(fs, dp);
	if (!rc)
		rc = rc2;
	rc = nm_dirsync(fs, dp, rc, &wait);
out_put:
	sfs_iput(fs, ip);
out_put_dir:
	sfs_iput(fs, dp);
out_unlock:
	sfs_op_end(fs);
	return nm_dirsync_wait(fs, wait, rc);
}

/*
 * -EINVAL if directory `from` is inode ino or lies below it: walk ".." up
 * to the root.  -EIO on a loop or a broken chain.
 */
static int nm_check_not_under(struct sfs_fs *fs, struct sfs_inode *from,
			      sfs_ino_t ino)
{
	uint32_t max = sfs_le32(fs->sb.s_inodes_count);
	sfs_ino_t cur = from->ino;

	for (uint32_t steps = 0;; steps++) {
		struct sfs_inode *dp;
		sfs_ino_t up;
		int rc;

		if (cur == ino)
			return -EINVAL;
		if (cur == SFS_ROOT_INO)
			return 0;
		if (steps > max) {
			sfs_fs_error(fs, -EIO,
				     "directory inode %u: '..' chain loops",
				     from->ino);
			return -EIO;
		}
		rc = nm_get_dir(fs, cur, &dp);
		if (rc)
			return rc == -ESTALE || rc == -ENOTDIR ? -EIO : rc;
		rc = sfs_dir_lookup(fs, dp, "..", 2, &up, NULL);
		sfs_iput(fs, dp);
		if (rc)
			return rc;
		cur = up;
	}
}

/* Add link-count deltas to the parents of a rename, stamp and write them. */
static int nm_finish_parents(struct sfs_fs *fs, struct sfs_inode *sdp,
			     struct sfs_inode *tdp, int sd, int td)
{
	int rc = 0, rc2;

	if (sdp == tdp) {
		sd += td;
		td = 0;
	}
	if (sd)
		dir_links_add(sdp, sd);
	rc = nm_touch_dir(fs, sdp);
	if (tdp != sdp) {
		if (td)
			dir_links_add(tdp, td);
		rc2 = nm_touch_dir(fs, tdp);
		if (!rc)
			rc = rc2;
	}
	return rc;
}

/* The inodes and names of one rename. */
struct nm_rename {
	struct sfs_inode *sdp, *tdp; /* old and new parent */
	struct sfs_inode *src, *tgt; /* renamed inode, replaced one or NULL */
	struct sfs_inode *wh;	     /* RENAME_WHITEOUT: the whiteout, or NULL */
	const char *name, *newname;
	size_t len, nlen;
	int sd, td; /* link-count changes of sdp and tdp */
};

/* Plain rename (replacing tgt if any): checks done, deltas computed. */
static int nm_do_rename(struct sfs_fs *fs, struct nm_rename *r)
{
	bool src_dir = sfs_i_isdir(r->src);
	int rc, rc2;

	if (r->tgt)
		rc = sfs_dir_retarget(fs, r->tdp, r->newname, r->nlen,
				      r->src->ino, nm_ftype(r->src));
	else
		rc = sfs_dir_add(fs, r->tdp, r->newname, r->nlen, r->src->ino,
				 nm_ftype(r->src));
	if (rc)
		return rc; /* nothing changed yet */
	if (r->wh) /* the old entry now names the whiteout */
		rc = sfs_dir_retarget(fs, r->sdp, r->name, r->len, r->wh->ino,
				      nm_ftype(r->wh));
	else
		rc = sfs_dir_remove(fs, r->sdp, r->name, r->len);
	if (!rc && r->wh) {
		sfs_i_set_nlink(r->wh, 1);
		rc = sfs_inode_dirty(fs, r->wh);
	}
	if (!rc && src_dir && r->sdp != r->tdp)
		rc = sfs_dir_set_dotdot(fs, r->src, r->tdp->ino);
	if (rc)
		goto out_broken;
	if (r->tgt) {
		uint32_t n = sfs_i_nlink(r->tgt);

		rc = nm_set_links(fs, r->tgt,
				  sfs_i_isdir(r->tgt) || n == 0 ? 0 : n - 1);
	}
	sfs_i_touch(fs, r->src, SFS_SET_CTIME);
	rc2 = sfs_inode_dirty(fs, r->src);
	if (!rc)
		rc = rc2;
	rc2 = nm_finish_parents(fs, r->sdp, r->tdp, r->sd, r->td);
	return rc ? rc : rc2;

out_broken:
	sfs_fs_error(fs, rc, "rename of inode %u: failed half way (error %d)",
		     r->src->ino, rc);
	return rc;
}

/* RENAME_EXCHANGE: swap the two entries, fix ".." of moved directories. */
static int nm_do_exchange(struct sfs_fs *fs, struct nm_rename *r)
{
	int rc, rc2;

	rc = sfs_dir_retarget(fs, r->sdp, r->name, r->len, r->tgt->ino,
			      nm_ftype(r->tgt));
	if (rc)
		return rc;
	rc = sfs_dir_retarget(fs, r->tdp, r->newname, r->nlen, r->src->ino,
			      nm_ftype(r->src));
	if (!rc && r->sdp != r->tdp && sfs_i_isdir(r->src))
		rc = sfs_dir_set_dotdot(fs, r->src, r->tdp->ino);
	if (!rc && r->sdp != r->tdp && sfs_i_isdir(r->tgt))
		rc = sfs_dir_set_dotdot(fs, r->tgt, r->sdp->ino);
	if (rc) {
		sfs_fs_error(fs, rc,
			     "rename exchange of inodes %u and %u: failed "
			     "half way (error %d)",
			     r->src->ino, r->tgt->ino, rc);
		return rc;
	}
	sfs_i_touch(fs, r->src, SFS_SET_CTIME);
	sfs_i_touch(fs, r->tgt, SFS_SET_CTIME);
	rc = sfs_inode_dirty(fs, r->src);
	rc2 = sfs_inode_dirty(fs, r->tgt);
	if (!rc)
		rc = rc2;
	rc2 = nm_finish_parents(fs, r->sdp, r->tdp, r->sd, r->td);
	return rc ? rc : rc2;
}

/* Everything that may refuse a rename, before anything changes; fills the
 * parents' link-count deltas. */
static int nm_rename_check(struct sfs_fs *fs, struct nm_rename *r,
			   sfs_ino_t parent, sfs_ino_t newparent,
			   unsigned flags)
{
	bool exchange = flags & SFS_RENAME_EXCHANGE;
	bool src_dir = sfs_i_isdir(r->src);
	bool tgt_dir = r->tgt && sfs_i_isdir(r->tgt);
	bool cross = r->sdp != r->tdp;
	bool empty;
	int rc;

	if (src_dir && nm_is_lost_found(parent, r->name, r->len))
		return -EPERM;
	/* may_delete on the source (and a replaced target), may_create in
	 * the target directory: append-only and immutable hold */
	if (sfs_i_pinned(r->sdp) || sfs_i_pinned(r->src) ||
	    sfs_i_immutable(r->tdp) ||
	    (r->tgt && (sfs_i_pinned(r->tdp) || sfs_i_pinned(r->tgt))))
		return -EPERM;
	if (r->tgt && tgt_dir &&
	    nm_is_lost_found(newparent, r->newname, r->nlen))
		return -EPERM;
	if (!exchange && r->tgt) {
		if (src_dir && !tgt_dir)
			return -ENOTDIR;
		if (!src_dir && tgt_dir)
			return -EISDIR;
		if (tgt_dir) {
			rc = sfs_dir_is_empty(fs, r->tgt, &empty);
			if (rc)
				return rc;
			if (!empty)
				return -ENOTEMPTY;
		}
	}
	if (cross && src_dir) {
		rc = nm_check_not_under(fs, r->tdp, r->src->ino);
		if (rc)
			return rc;
	}
	if (cross && exchange && tgt_dir) {
		rc = nm_check_not_under(fs, r->sdp, r->tgt->ino);
		if (rc)
			return rc;
	}
	r->sd = r->td = 0;
	if (exchange) {
		if (cross) {
			r->sd = (int)tgt_dir - (int)src_dir;
			r->td = (int)src_dir - (int)tgt_dir;
		}
	} else {
		if (tgt_dir)
			r->td--; /* the replaced directory's ".." goes */
		if (cross && src_dir) {
			r->sd--;
			r->td++;
		}
	}
	if (!cross) {
		r->sd += r->td;
		r->td = 0;
	}
	if ((r->sd > 0 && sfs_i_nlink(r->sdp) + r->sd > SFS_LINK_MAX) ||
	    (r->td > 0 && sfs_i_nlink(r->tdp) + r->td > SFS_LINK_MAX))
		return -EMLINK;
	return 0;
}

/*
 * Rename parent/name to newparent/newname.  flags 0 replaces an existing
 * target (a file, or an empty directory); SFS_RENAME_NOREPLACE refuses
 * one (-EEXIST); SFS_RENAME_EXCHANGE swaps two existing entries.  Both
 * names for one inode: nothing to do.  -ENOENT, -ENOTDIR, -EISDIR,
 * -ENOTEMPTY, -EINVAL (a directory under itself), -EBUSY ("." or ".."),
 * -EPERM (the root's lost+found), -EMLINK, -ENOSPC, -EROFS, -EIO.
 */
static int nm_rename(struct sfs_fs *fs, sfs_ino_t parent, const char *name,
		     sfs_ino_t newparent, const char *newname, unsigned flags,
		     uint32_t uid, uint32_t gid)
{
	struct nm_rename r = {.name = name, .newname = newname};
	int rc;
	sfs_ino_t wait = 0; /* chattr +D: a commit to wait for */

	if (!fs || !name || !newname ||
	    (flags & ~(SFS_RENAME_NOREPLACE | SFS_RENAME_EXCHANGE |
		       SFS_RENAME_WHITEOUT)) ||
	    flags == (SFS_RENAME_NOREPLACE | SFS_RENAME_EXCHANGE) ||
	    ((flags & SFS_RENAME_WHITEOUT) && (flags & SFS_RENAME_EXCHANGE)))
		return -EINVAL;
	rc = sfs_check_name(name, &r.len);
	if (!rc)
		rc = sfs_check_name(newname, &r.nlen);
	if (rc)
		return rc;
	if (nm_is_dot(name, r.len))
		return -EBUSY;
	if (nm_is_dot(newname, r.nlen))
		return (flags & SFS_RENAME_NOREPLACE) ? -EEXIST : -EBUSY;
	sfs_op_begin(fs, SFS_OP_RENAME);
	rc = sfs_check_writable(fs);
	if (rc)
		goto out_unlock;
	rc = nm_get_dir(fs, parent, &r.sdp);
	if (rc)
		goto out_unlock;
	rc = nm_get_dir(fs, newparent, &r.tdp);
	if (rc)
		goto out_put;
	rc = nm_get_child(fs, r.sdp, name, r.len, &r.src);
	if (rc)
		goto out_put;
	rc = nm_get_child(fs, r.tdp, newname, r.nlen, &r.tgt);
	if (rc == -ENOENT) {
		r.tgt = NULL;
		rc = (flags & SFS_RENAME_EXCHANGE) ? -ENOENT : 0;
	}
	if (rc)
		goto out_put;
	if (r.tgt && (flags & SFS_RENAME_NOREPLACE)) {
		rc = -EEXIST;
		goto out_put;
	}
	if (r.tgt == r.src)
		goto out_put; /* same entry, or two links of one inode */
	if (sfs_i_nlink(r.tdp) == 0) {
		rc = -ENOENT; /* new parent was removed */
		goto out_put;
	}
	rc = nm_rename_check(fs, &r, parent, newparent, flags);
	if (rc)
		goto out_put;
	if (flags & SFS_RENAME_WHITEOUT) {
		/* allocated first, so that running out of inodes changes
		 * nothing; unlinked until nm_do_rename points the old name
		 * at it (sfs_iput frees it otherwise) */
		struct nm_new nn = {.mode = SFS_S_IFCHR, .rdev = 0};

		rc = sfs_inode_alloc(fs, r.sdp, SFS_S_IFCHR, uid, gid, &r.wh);
		if (!rc)
			rc = nm_setup(fs, r.sdp, r.wh, &nn);
		if (rc)
			goto out_put;
	}
	if (flags & SFS_RENAME_EXCHANGE)
		rc = nm_do_exchange(fs, &r);
	else
		rc = nm_do_rename(fs, &r);
	/* auto_da_alloc: a file renamed over another one is replacing it;
	 * its data is placed now so that it reaches the disk by the next
	 * commit, as the old contents had (ext4's replace-via-rename) */
	if (rc == 0 && r.tgt && !(flags & SFS_RENAME_EXCHANGE) &&
	    r.src->da && !fs->cfg.no_auto_da_alloc)
		rc = sfs_da_flush_inode(fs, r.src, SFS_DA_RENAME);
	rc = nm_dirsync(fs, r.sdp, rc, &wait);
	if (r.tdp != r.sdp)
		rc = nm_dirsync(fs, r.tdp, rc, &wait);
out_put:
	if (r.wh)
		sfs_iput(fs, r.wh);
	if (r.tgt)
		sfs_iput(fs, r.tgt); /* frees a replaced inode no one uses */
	if (r.src)
		sfs_iput(fs, r.src);
	if (r.tdp)
		sfs_iput(fs, r.tdp);
	sfs_iput(fs, r.sdp);
out_unlock:
	sfs_op_end(fs);
	return nm_dirsync_wait(fs, wait, rc);
}

int sfs_rename(struct sfs_fs *fs, sfs_ino_t parent, const char *name,
	       sfs_ino_t newparent, const char *newname, unsigned flags)
{
	if (flags & SFS_RENAME_WHITEOUT)
		return -EINVAL; /* needs an owner: sfs_rename_whiteout */
	return nm_rename(fs, parent, name, newparent, newname, flags, 0, 0);
}

int sfs_rename_whiteout(struct sfs_fs *fs, sfs_ino_t parent, const char *name,
			sfs_ino_t newparent, const char *newname,
			unsigned flags, uint32_t uid, uint32_t gid)
{
	if (flags & SFS_RENAME_EXCHANGE)
		return -EINVAL;
	return nm_rename(fs, parent, name, newparent, newname,
			 flags | SFS_RENAME_WHITEOUT, uid, gid);
}

/*
 * Copy the target of symlink ino into buf, at most size bytes (truncated
 * like readlink(2)); *len_out = the bytes copied.  -EINVAL if not a
 * symlink, -EIO if its size or block is bad.
 */
int sfs_readlink(struct sfs_fs *fs, sfs_ino_t ino, char *buf, size_t size,
		 size_t *len_out)
{
	struct sfs_inode *ip;
	struct sfs_buf *b;
	sfs_blk_t pblk;
	uint64_t len;
	int rc;

	if (!fs || !len_out || (size && !buf))
		return -EINVAL;
	sfs_op_begin(fs, SFS_OP_READLINK);
	rc = sfs_iget(fs, ino, &ip);
	if (rc)
		goto out_unlock;
	if (!sfs_i_islnk(ip)) {
		rc = -EINVAL;
		goto out_put;
	}
	len = sfs_i_size(ip);
	if (sfs_i_fast_symlink(ip)) {
		if (len > SFS_FAST_SYMLINK_MAX)
			goto out_corrupt;
		*len_out = MIN(size, (size_t)len);
		memcpy(buf, ip->d.i_block, *len_out);
		goto out_put;
	}
	if (len == 0 || len >= fs->bs)
		goto out_corrupt;
	rc = sfs_bmap(fs, ip, 0, false, &pblk);
	if (rc)
		goto out_put;
	if (pblk == 0)
		goto out_corrupt;
	rc = sfs_cache_get(fs->cache, pblk, SFS_IO_DATA, &b);
	if (rc)
		goto out_put;
	*len_out = MIN(size, (size_t)len);
	memcpy(buf, b->data, *len_out);
	sfs_cache_put(fs->cache, b);
	goto out_put;

out_corrupt:
	sfs_fs_error(fs, -EIO, "symlink inode %u: bad size %llu or no block",
		     ip->ino, (unsigned long long)len);
	rc = -EIO;
out_put:
	sfs_iput(fs, ip);
out_unlock:
	sfs_op_end(fs);
	return rc;
}

/* List directory ino from cookie off (see fs.h).  -ENOTDIR, -EIO. */
int sfs_readdir(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off,
		sfs_filldir_fn fn, void *ctx)
{
	struct sfs_inode *dp;
	int rc;

	if (!fs || !fn)
		return -EINVAL;
	sfs_op_begin(fs, SFS_OP_READDIR);
	rc = nm_get_dir(fs, ino, &dp);
	if (rc)
		goto out_unlock;
	rc = sfs_dir_iterate(fs, dp, off, fn, ctx);
	if (rc == 0)
		sfs_i_accessed(fs, dp);
	sfs_iput(fs, dp);
out_unlock:
	sfs_op_end(fs);
	return rc;
}
