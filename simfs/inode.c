/*
 * inode.c - one file's attributes and data: getattr/setattr, open/release,
 * read/write/truncate, fsync and statfs.
 *
 * File data goes through the inode's mapping model (sfs_imap: which
 * physical block holds logical block n) and the buffer cache.  How a write
 * puts data in is the inode's write strategy (struct sfs_write_ops, chosen
 * once per inode as ext4_set_aops chooses a file's address-space
 * operations; O_DIRECT per call): cached, delalloc, journal or direct.
 * sfs_write_ctx is the frame around it.  The cached strategy fills holes
 * first (sfs_bmap with create), then copies whole blocks as runs of
 * physically contiguous blocks (sfs_cache_write_run) and partial blocks
 * through a buffer.  A block allocated for a partial write is zeroed around
 * the bytes written, so holes and the space past EOF always read as zeros.
 *
 * Sizes: regular files keep i_size_high; a file reaching 2 GiB sets the
 * large_file feature.  i_blocks counts 512-byte sectors of every block the
 * inode owns (data, indirect, xattr); with huge_file i_blocks_hi holds bits
 * 32-47 of that count, and an inode flagged EXT4_HUGE_FILE_FL counts in
 * filesystem blocks instead (ext4's inode_set_bytes / ext4_inode_blocks).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "clock.h"
#include "fs_priv.h"
#include "journal.h"

/* ---- accessors ---- */

uint64_t sfs_i_size(const struct sfs_inode *ip)
{
	uint64_t size = sfs_le32(ip->d.i_size);

	if (sfs_i_isreg(ip))
		size |= (uint64_t)sfs_le32(ip->d.i_size_high) << 32;
	return size;
}

void sfs_i_set_size(struct sfs_inode *ip, uint64_t size)
{
	ip->d.i_size = sfs_cpu_to_le32((uint32_t)size);
	ip->d.i_size_high = sfs_cpu_to_le32((uint32_t)(size >> 32));
}

/* Set size, raising the large_file feature for files of 2 GiB and more. */
static void set_size(struct sfs_fs *fs, struct sfs_inode *ip, uint64_t size)
{
	sfs_i_set_size(ip, size);
	if (size >= (1ULL << 31) && !(sfs_le32(fs->sb.s_feature_ro_compat) &
				      SFS_FEATURE_RO_COMPAT_LARGE_FILE)) {
		fs->sb.s_feature_ro_compat =
		    sfs_cpu_to_le32(sfs_le32(fs->sb.s_feature_ro_compat) |
				    SFS_FEATURE_RO_COMPAT_LARGE_FILE);
		fs->sb_dirty = true;
	}
}

static bool has_huge_file(const struct sfs_fs *fs)
{
	return sfs_le32(fs->sb.s_feature_ro_compat) &
	       SFS_FEATURE_RO_COMPAT_HUGE_FILE;
}

/* The 512-byte sectors the inode owns, as i_blocks records them. */
static uint64_t i_sectors(const struct sfs_fs *fs, const struct sfs_inode *ip)
{
	uint64_t n = sfs_le32(ip->d.i_blocks);

	if (!has_huge_file(fs))
		return n;
	n |= (uint64_t)sfs_le16(ip->d.i_blocks_hi) << 32;
	if (sfs_le32(ip->d.i_flags) & SFS_HUGE_FILE_FL)
		n *= fs->bs / 512;
	return n;
}

/* Record sectors: 32 bits, 48 with huge_file, then in blocks under
 * EXT4_HUGE_FILE_FL; past that an error (the caller's count is kept). */
static void i_set_sectors(struct sfs_fs *fs, struct sfs_inode *ip, uint64_t n)
{
	uint32_t flags = sfs_le32(ip->d.i_flags) & ~SFS_HUGE_FILE_FL;

	if (n > UINT32_MAX && !has_huge_file(fs)) {
		sfs_fs_error(fs, -EIO,
			     "inode %u: %llu sectors need the huge_file "
			     "feature",
			     ip->ino, (unsigned long long)n);
		n = UINT32_MAX;
	}
	if (n >> 48) {
		n /= fs->bs / 512;
		flags |= SFS_HUGE_FILE_FL;
	}
	ip->d.i_blocks = sfs_cpu_to_le32((uint32_t)n);
	if (has_huge_file(fs)) {
		ip->d.i_blocks_hi = sfs_cpu_to_le16((uint16_t)(n >> 32));
		ip->d.i_flags = sfs_cpu_to_le32(flags);
	}
}

void sfs_i_add_blocks(struct sfs_fs *fs, struct sfs_inode *ip, int64_t delta)
{
	uint64_t sectors = i_sectors(fs, ip);
	int64_t d = delta * (int64_t)(fs->bs / 512);

	if (d < 0 && (uint64_t)-d > sectors) {
		/* i_blocks comes from the image: a corrupt count is an
		 * error, not a wrap-around */
		sfs_fs_error(fs, -EIO,
			     "inode %u: i_blocks %llu is less than "
			     "the %lld sectors freed",
			     ip->ino, (unsigned long long)sectors,
			     (long long)-d);
		d = -(int64_t)sectors;
	}
	i_set_sectors(fs, ip, sectors + d);
}

/* Pack a time's nanoseconds and epoch bits (seconds past the signed
 * 32-bit range, inodes.rst) into an *_extra word. */
static uint32_t time_extra(const struct timespec *ts)
{
	uint32_t epoch =
	    (uint32_t)((ts->tv_sec - (int32_t)ts->tv_sec) >> 32) & 3;

	return sfs_cpu_to_le32(((uint32_t)ts->tv_nsec << 2) | epoch);
}

static bool has_extra(const struct sfs_inode *ip, size_t field_end)
{
	return 128 + (size_t)sfs_le16(ip->d.i_extra_isize) >= field_end;
}

void sfs_i_touch(struct sfs_fs *fs, struct sfs_inode *ip, unsigned which)
{
	struct timespec now;
	bool extra = fs->inode_size > SFS_GOOD_OLD_INODE_SIZE;

	sfs_now(fs, &now);
	if (which & SFS_SET_ATIME) {
		ip->d.i_atime = sfs_cpu_to_le32((uint32_t)now.tv_sec);
		if (extra && has_extra(ip, 0x90))
			ip->d.i_atime_extra = time_extra(&now);
	}
	if (which & SFS_SET_MTIME) {
		ip->d.i_mtime = sfs_cpu_to_le32((uint32_t)now.tv_sec);
		if (extra && has_extra(ip, 0x8C))
			ip->d.i_mtime_extra = time_extra(&now);
	}
	if (which & SFS_SET_CTIME) {
		ip->d.i_ctime = sfs_cpu_to_le32((uint32_t)now.tv_sec);
		if (extra && has_extra(ip, 0x88))
			ip->d.i_ctime_extra = time_extra(&now);
	}
}

static struct timespec get_time(const struct sfs_fs *fs,
				const struct sfs_inode *ip, uint32_t sec,
				uint32_t extra, size_t extra_end)
{
	struct timespec ts = {.tv_sec = (int32_t)sfs_le32(sec), .tv_nsec = 0};

	if (fs->inode_size > SFS_GOOD_OLD_INODE_SIZE &&
	    has_extra(ip, extra_end)) {
		uint32_t e = sfs_le32(extra);
		/* epoch bits extend the signed 32-bit seconds (inodes.rst) */
		ts.tv_sec += (int64_t)(e & 3) << 32;
		ts.tv_nsec = (long)(e >> 2);
		if (ts.tv_nsec >= 1000000000L)
			ts.tv_nsec = 0;
	}
	return ts;
}

static void set_time(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t *sec,
		     uint32_t *extra, size_t extra_end,
		     const struct timespec *ts)
{
	*sec = sfs_cpu_to_le32((uint32_t)ts->tv_sec);
	if (fs->inode_size > SFS_GOOD_OLD_INODE_SIZE &&
	    has_extra(ip, extra_end)) {
		*extra = time_extra(ts);
	}
}

bool sfs_i_fast_symlink(const struct sfs_inode *ip)
{
	if (!sfs_i_islnk(ip) || sfs_i_size(ip) > SFS_FAST_SYMLINK_MAX)
		return false;
	/* Without an xattr block a fast symlink owns no block at all; with
	 * one, simfs and the kernel only make targets < 60 bytes fast. */
	return ip->d.i_file_acl != 0 || sfs_le32(ip->d.i_blocks) == 0;
}

static uint32_t decode_rdev(const struct sfs_inode *ip)
{
	uint32_t b0 = sfs_le32(ip->d.i_block[0]);
	uint32_t b1 = sfs_le32(ip->d.i_block[1]);

	if (b0)
		return makedev((b0 >> 8) & 0xff, b0 & 0xff);
	return makedev((b1 & 0xfff00) >> 8,
		       (b1 & 0xff) | ((b1 >> 12) & 0xfff00));
}

void sfs_i_to_attr(struct sfs_fs *fs, const struct sfs_inode *ip,
		   struct sfs_attr *out)
{
	uint32_t type = sfs_i_mode(ip) & SFS_S_IFMT;

	memset(out, 0, sizeof(*out));
	out->ino = ip->ino;
	out->mode = sfs_i_mode(ip);
	out->nlink = sfs_i_nlink(ip);
	out->uid = sfs_le16(ip->d.i_uid) |
		   ((uint32_t)sfs_le16(ip->d.i_uid_high) << 16);
	out->gid = sfs_le16(ip->d.i_gid) |
		   ((uint32_t)sfs_le16(ip->d.i_gid_high) << 16);
	out->size = sfs_i_size(ip);
	out->blocks = i_sectors(fs, ip);
	/* blocks reserved for delayed data count, as on ext4 */
	out->blocks += (uint64_t)sfs_da_inode_blocks(ip) * (fs->bs / 512);
	if (type == SFS_S_IFCHR || type == SFS_S_IFBLK)
		out->rdev = decode_rdev(ip);
	out->blksize = fs->bs;
	out->generation = sfs_le32(ip->d.i_generation);
	out->atime = get_time(fs, ip, ip->d.i_atime, ip->d.i_atime_extra, 0x90);
	out->mtime = get_time(fs, ip, ip->d.i_mtime, ip->d.i_mtime_extra, 0x8C);
	out->ctime = get_time(fs, ip, ip->d.i_ctime, ip->d.i_ctime_extra, 0x88);
	/* birth time as ext4_getattr reports it: whenever i_crtime fits in
	 * the inode's extra space, whatever its value */
	if (fs->inode_size > SFS_GOOD_OLD_INODE_SIZE && has_extra(ip, 0x94)) {
		out->has_btime = true;
		out->btime = get_time(fs, ip, ip->d.i_crtime,
				      ip->d.i_crtime_extra, 0x98);
	}
}

/* ---- mapping ---- */

int sfs_bmap(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t lblk,
	     bool create, sfs_blk_t *pblk_out)
{
	bool isnew = false;

	if (create && sfs_check_writable(fs))
		return -EROFS;
	return sfs_map_block(fs, ip, lblk, create, pblk_out, &isnew);
}

/* Zero bytes [from, bs) of the block holding byte `size` if mapped. */
static int zero_tail(struct sfs_fs *fs, struct sfs_inode *ip, uint64_t size)
{
	uint32_t off = (uint32_t)(size & (fs->bs - 1));
	struct sfs_buf *b;
	sfs_blk_t pblk;
	bool isnew;
	int rc;

	if (off == 0)
		return 0;
	rc = sfs_map_block(fs, ip, (uint32_t)(size >> fs->bs_log), false, &pblk,
			   &isnew);
	if (rc || pblk == 0)
		return rc;
	rc = sfs_cache_get(fs->cache, pblk, SFS_IO_DATA, &b);
	if (rc)
		return rc;
	memset(b->data + off, 0, fs->bs - off);
	sfs_data_dirty(fs, b);
	sfs_inode_note_dirty(ip, pblk, 1);
	sfs_cache_put(fs->cache, b);
	return 0;
}

int sfs_truncate(struct sfs_fs *fs, struct sfs_inode *ip, uint64_t new_size)
{
	uint64_t old = sfs_i_size(ip);
	int rc;

	if (new_size > sfs_map_max_bytes(fs, ip))
		return -EFBIG;
	if (new_size < old) {
		uint64_t first = (new_size + fs->bs - 1) >> fs->bs_log;
		sfs_da_truncate(fs, ip, new_size);
		rc = zero_tail(fs, ip, new_size);
		if (rc)
			return rc;
		rc = sfs_map_free_from(fs, ip, (uint32_t)first);
		if (rc)
			return rc;
		if (!ip->da)
			sfs_alloc_release_inode(fs, ip);
	}
	/* auto_da_alloc: a file truncated to zero is likely being rewritten
	 * in place of its old contents; place its data when it is closed */
	if (new_size == 0 && old > 0 && fs->da_on && !fs->cfg.no_auto_da_alloc)
		ip->da_flush_on_close = true;
	set_size(fs, ip, new_size);
	sfs_i_touch(fs, ip, SFS_SET_MTIME | SFS_SET_CTIME);
	return sfs_inode_dirty(fs, ip);
}

/* ---- public verbs ---- */

static void set_id_pair(uint16_t *lo, uint16_t *hi, uint32_t id)
{
	*lo = sfs_cpu_to_le16((uint16_t)id);
	*hi = sfs_cpu_to_le16((uint16_t)(id >> 16));
}

int sfs_getattr(struct sfs_fs *fs, sfs_ino_t ino, struct sfs_attr *out)
{
	struct sfs_inode *ip;
	int rc;

	if (!fs || !out)
		return -EINVAL;
	sfs_op_begin(fs, SFS_OP_GETATTR);
	rc = sfs_iget(fs, ino, &ip);
	if (rc == 0) {
		sfs_i_to_attr(fs, ip, out);
		sfs_iput(fs, ip);
	}
	sfs_op_end(fs);
	return rc;
}

int sfs_setattr(struct sfs_fs *fs, sfs_ino_t ino, const struct sfs_attr *in,
		unsigned valid, struct sfs_attr *out)
{
	struct sfs_inode *ip;
	struct timespec now;
	int rc;

	if (!fs || (valid && !in))
		return -EINVAL;
	sfs_op_begin(fs, SFS_OP_SETATTR);
	rc = sfs_iget(fs, ino, &ip);
	if (rc)
		goto out_unlock;
	if (valid) {
		rc = sfs_check_writable(fs);
		if (rc)
			goto out_put;
	}
	/* notify_change and do_truncate: an immutable inode takes no
	 * change; an append-only one keeps its size, mode, owner and
	 * explicit times (touching to now is allowed) */
	if ((valid && sfs_i_immutable(ip)) ||
	    (sfs_i_pinned(ip) &&
	     (valid & (SFS_SET_SIZE | SFS_SET_MODE | SFS_SET_UID | SFS_SET_GID |
		       SFS_SET_ATIME | SFS_SET_MTIME)))) {
		rc = -EPERM;
		goto out_put;
	}
	if (valid & SFS_SET_SIZE) {
		if (sfs_i_isdir(ip)) {
			rc = -EISDIR;
			goto out_put;
		}
		if (!sfs_i_isreg(ip)) {
			rc = -EINVAL;
			goto out_put;
		}
		rc = sfs_truncate(fs, ip, in->size);
		if (rc)
			goto out_put;
	}
	if (valid & SFS_SET_MODE) {
		uint16_t old = ip->d.i_mode;

		ip->d.i_mode =
		    sfs_cpu_to_le16((uint16_t)((sfs_i_mode(ip) & SFS_S_IFMT) |
					       (in->mode & 07777)));
		/* the access ACL follows (acl.c rule 2); if it cannot, the
		 * mode stays as it was */
		rc = sfs_acl_chmod_inode(fs, ip);
		if (rc) {
			ip->d.i_mode = old;
			goto out_put;
		}
	}
	if (valid & SFS_SET_UID)
		set_id_pair(&ip->d.i_uid, &ip->d.i_uid_high, in->uid);
	if (valid & SFS_SET_GID)
		set_id_pair(&ip->d.i_gid, &ip->d.i_gid_high, in->gid);
	sfs_now(fs, &now);
	if (valid & (SFS_SET_ATIME | SFS_SET_ATIME_NOW))
		set_time(fs, ip, &ip->d.i_atime, &ip->d.i_atime_extra, 0x90,
			 (valid & SFS_SET_ATIME_NOW) ? &now : &in->atime);
	if (valid & (SFS_SET_MTIME | SFS_SET_MTIME_NOW))
		set_time(fs, ip, &ip->d.i_mtime, &ip->d.i_mtime_extra, 0x8C,
			 (valid & SFS_SET_MTIME_NOW) ? &now : &in->mtime);
	if (valid & SFS_SET_CTIME)
		set_time(fs, ip, &ip->d.i_ctime, &ip->d.i_ctime_extra, 0x88,
			 &in->ctime);
	else if (valid)
		set_time(fs, ip, &ip->d.i_ctime, &ip->d.i_ctime_extra, 0x88,
			 &now);
	if (valid)
		rc = sfs_inode_dirty(fs, ip);
	if (rc == 0 && out)
		sfs_i_to_attr(fs, ip, out);
out_put:
	sfs_iput(fs, ip);
out_unlock:
	sfs_op_end(fs);
	return rc;
}

int sfs_open(struct sfs_fs *fs, sfs_ino_t ino, int flags)
{
	struct sfs_inode *ip;
	int rc;

	if (!fs)
		return -EINVAL;
	sfs_op_begin(fs, SFS_OP_OPEN);
	rc = sfs_iget(fs, ino, &ip);
	if (rc)
		goto out_unlock;
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) {
		if (sfs_i_isdir(ip)) {
			rc = -EISDIR;
			goto out_put;
		}
		rc = sfs_check_writable(fs);
		if (rc)
			goto out_put;
		/* may_open: immutable files are not opened for writing,
		 * append-only ones only with O_APPEND and never O_TRUNC */
		if (sfs_i_immutable(ip) ||
		    (sfs_i_pinned(ip) &&
		     (!(flags & O_APPEND) || (flags & O_TRUNC)))) {
			rc = -EPERM;
			goto out_put;
		}
	}
	if ((flags & O_TRUNC) && sfs_i_isreg(ip) && sfs_i_size(ip) > 0) {
		rc = sfs_truncate(fs, ip, 0);
		if (rc)
			goto out_put;
	}
	ip->opens++;
out_put:
	sfs_iput(fs, ip);
out_unlock:
	sfs_op_end(fs);
	return rc;
}

int sfs_release(struct sfs_fs *fs, sfs_ino_t ino)
{
	struct sfs_inode *ip;

	if (!fs)
		return -EINVAL;
	sfs_op_begin(fs, SFS_OP_RELEASE);
	ip = g_hash_table_lookup(fs->icache, GUINT_TO_POINTER(ino));
	if (!ip || ip->opens == 0) {
		sfs_op_end(fs);
		return -EBADF;
	}
	ip->refs++;
	ip->opens--;
	int rc = 0;
	if (ip->opens == 0 && ip->da_flush_on_close) {
		ip->da_flush_on_close = false;
		if (sfs_i_nlink(ip) > 0)
			rc = sfs_da_flush_inode(fs, ip, SFS_DA_CLOSE);
	}
	/* a file still holding delayed blocks keeps its preallocation for
	 * them (ext4_release_file) */
	if (ip->opens == 0 && !ip->da)
		sfs_alloc_release_inode(fs, ip);
	sfs_iput(fs, ip);
	sfs_op_end(fs);
	return rc;
}

/* Read ahead logical blocks [from, from+n) of ip: physically contiguous
 * runs through sfs_cache_readahead, holes skipped.  Best effort. */
static void ra_window(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t from,
		      uint32_t n)
{
	sfs_blk_t run = 0; /* first physical block of the pending run */
	uint32_t len = 0;  /* its length */
	bool isnew;

	for (uint32_t i = 0; i < n; i++) {
		sfs_blk_t pblk;

		if (sfs_map_block(fs, ip, from + i, false, &pblk, &isnew))
			break;
		if (len && pblk == run + len) {
			len++;
			continue;
		}
		if (len &&
		    sfs_cache_readahead(fs->cache, run, len, SFS_IO_DATA))
			return;
		run = pblk;
		len = pblk ? 1 : 0;
	}
	if (len)
		sfs_cache_readahead(fs->cache, run, len, SFS_IO_DATA);
}

/*
 * Read-ahead after a read of bytes [start, end) of ip (file size `size`),
 * in the manner of Linux's on-demand read-ahead.  A read that starts where
 * the previous one ended, or at offset 0, is sequential; any other resets
 * the stream.  A new stream reads readahead_min_bytes past the read; when
 * the reader enters the newest window, the next window (twice as large,
 * up to readahead_max_bytes) is read after it.  Nothing past EOF.
 */
static void ra_after_read(struct sfs_fs *fs, struct sfs_inode *ip,
			  uint64_t start, uint64_t end, uint64_t size)
{
	struct sfs_cache_policy p;
	uint32_t min_blk, max_blk, end_blk, eof_blk, from, win;

	sfs_cache_get_policy(fs->cache, &p);
	if (start != ip->ra_next_off) {
		ip->ra_win = ip->ra_mark = ip->ra_end = 0; /* random */
		if (start != 0) {
			ip->ra_next_off = end;
			return;
		}
	}
	ip->ra_next_off = end;
	if (!p.readahead_max_bytes)
		return;
	min_blk = MAX(p.readahead_min_bytes >> fs->bs_log, 1);
	max_blk = MAX(p.readahead_max_bytes >> fs->bs_log, min_blk);
	end_blk = (uint32_t)((end + fs->bs - 1) >> fs->bs_log);
	eof_blk = (uint32_t)((size + fs->bs - 1) >> fs->bs_log);
	if (ip->ra_win == 0) {
		win = min_blk; /* a new stream */
		from = end_blk;
	} else if (end_blk > ip->ra_mark) {
		win = MIN(ip->ra_win * 2, max_blk);
		from = MAX(ip->ra_end, end_blk);
	} else {
		return; /* still ahead of the reader */
	}
	ip->ra_win = win;
	ip->ra_mark = from;
	ip->ra_end = from + win;
	if (from < eof_blk)
		ra_window(fs, ip, from, MIN(win, eof_blk - from));
}

/*
 * Does a read of ip update its atime (atime_policy=)?  atime: always;
 * noatime (or the inode's NOATIME flag): never; relatime (default): when
 * atime is not newer than mtime or ctime, or is a day old (Linux 2.6.30).
 */
static bool atime_due(struct sfs_fs *fs, const struct sfs_inode *ip)
{
	const char *pol = fs->cfg.atime;
	struct timespec at, mt, ct, now;

	if ((sfs_le32(ip->d.i_flags) & SFS_NOATIME_FL) ||
	    strcmp(pol, "noatime") == 0)
		return false;
	if (strcmp(pol, "atime") == 0)
		return true;
	/* with nanoseconds where the inode has them, as Linux compares */
	at = get_time(fs, ip, ip->d.i_atime, ip->d.i_atime_extra, 0x90);
	mt = get_time(fs, ip, ip->d.i_mtime, ip->d.i_mtime_extra, 0x8C);
	ct = get_time(fs, ip, ip->d.i_ctime, ip->d.i_ctime_extra, 0x88);
	if (at.tv_sec < mt.tv_sec ||
	    (at.tv_sec == mt.tv_sec && at.tv_nsec <= mt.tv_nsec) ||
	    at.tv_sec < ct.tv_sec ||
	    (at.tv_sec == ct.tv_sec && at.tv_nsec <= ct.tv_nsec))
		return true;
	sfs_now(fs, &now);
	return (int64_t)now.tv_sec - (int64_t)at.tv_sec >= 24 * 3600;
}

/*
 * atime after a read of ip (Linux touch_atime): file data and, unless
 * nodiratime, a directory's entries (readdir).
 */
void sfs_i_accessed(struct sfs_fs *fs, struct sfs_inode *ip)
{
	if (fs->ro || fs->error)
		return;
	if (fs->cfg.no_diratime && sfs_i_isdir(ip))
		return;
	if (!atime_due(fs, ip))
		return;
	sfs_i_touch(fs, ip, SFS_SET_ATIME);
	sfs_inode_dirty(fs, ip);
	fs->atime_updates++;
}

/*
 * O_DIRECT read of n whole blocks at pblk, as Linux does it: dirty cached
 * copies are written first, then the blocks are read from the device
 * whatever the cache holds, and do not stay in it.  Blocks pinned by the
 * journal are read from memory (the device may not have them yet).
 */
static int read_direct(struct sfs_fs *fs, sfs_blk_t pblk, uint32_t n, void *dst)
{
	sfs_blk_t list[256];
	int rc;

	g_assert(n <= G_N_ELEMENTS(list));
	for (uint32_t k = 0; k < n; k++)
		list[k] = pblk + k;
	rc = sfs_cache_write_blocks(fs->cache, list, n);
	if (rc)
		return rc;
	sfs_cache_drop_clean(fs->cache, list, n);
	rc = sfs_cache_read_run(fs->cache, pblk, n, SFS_IO_DATA, dst);
	sfs_cache_drop_clean(fs->cache, list, n);
	return rc;
}

int sfs_read(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off, size_t len,
	     void *buf, size_t *got_out)
{
	return sfs_read_ctx(fs, ino, off, len, buf, NULL, got_out);
}

int sfs_read_ctx(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off, size_t len,
		 void *buf, const struct sfs_ioctx *ctx, size_t *got_out)
{
	bool direct = ctx && (ctx->flags & SFS_IOCTX_DIRECT);
	struct sfs_inode *ip;
	uint8_t *dst = buf;
	uint64_t size, end, start = off;
	size_t done = 0;
	int rc;

	if (!fs || (!buf && len) || !got_out)
		return -EINVAL;
	*got_out = 0;
	sfs_op_begin(fs, SFS_OP_READ);
	rc = sfs_iget(fs, ino, &ip);
	if (rc)
		goto out_unlock;
	if (sfs_i_isdir(ip)) {
		rc = -EISDIR;
		goto out_put;
	}
	size = sfs_i_size(ip);
	if (off >= size || len == 0)
		goto out_put;
	end = MIN(size, off + len);
	/* O_DIRECT reads what is on disk: delayed data is placed first */
	if (direct && ip->da && !fs->ro) {
		rc = sfs_da_flush_inode(fs, ip, SFS_DA_DIRECT);
		if (rc)
			goto out_put;
	}
	while (off < end) {
		uint32_t lblk = (uint32_t)(off >> fs->bs_log);
		uint32_t boff = (uint32_t)(off & (fs->bs - 1));
		sfs_blk_t pblk;
		bool isnew;

		rc = sfs_map_block(fs, ip, lblk, false, &pblk, &isnew);
		if (rc)
			goto out_put;
		if (pblk == 0 && ip->da) {
			/* written but not placed yet: the data is in memory */
			const uint8_t *d = sfs_da_lookup(ip, lblk);
			if (d) {
				size_t c = (size_t)MIN(
				    (uint64_t)(fs->bs - boff), end - off);
				memcpy(dst + done, d + boff, c);
				off += c;
				done += c;
				continue;
			}
		}
		if (boff == 0 && end - off >= fs->bs && pblk) {
			/* A run of whole, physically contiguous blocks. */
			uint32_t n = 1;
			uint64_t max = (end - off) >> fs->bs_log;
			while (n < max && n < 256) {
				sfs_blk_t next;
				rc = sfs_map_block(fs, ip, lblk + n, false,
						   &next, &isnew);
				if (rc)
					goto out_put;
				if (next != pblk + n)
					break;
				n++;
			}
			rc = direct
				 ? read_direct(fs, pblk, n, dst + done)
				 : sfs_cache_read_run(fs->cache, pblk, n,
						      SFS_IO_DATA, dst + done);
			if (rc)
				goto out_put;
			off += (uint64_t)n << fs->bs_log;
			done += (size_t)n << fs->bs_log;
			continue;
		}
		size_t chunk =
		    (size_t)MIN((uint64_t)(fs->bs - boff), end - off);
		if (pblk == 0) {
			memset(dst + done, 0, chunk);
		} else {
			struct sfs_buf *b;
			rc = sfs_cache_get(fs->cache, pblk, SFS_IO_DATA, &b);
			if (rc)
				goto out_put;
			memcpy(dst + done, b->data + boff, chunk);
			sfs_cache_put(fs->cache, b);
		}
		off += chunk;
		done += chunk;
	}
	if (!direct) /* O_DIRECT reads no more than asked */
		ra_after_read(fs, ip, start, end, size);
	sfs_i_accessed(fs, ip);
out_put:
	*got_out = done;
	fs->bytes_read += done;
	if (done > 0)
		rc = 0; /* a short read reports what it got */
	sfs_iput(fs, ip);
out_unlock:
	sfs_op_end(fs);
	return rc;
}

/* ---- write strategies ---- */

/* One sfs_write_ctx call, as the strategies see it. */
struct sfs_wctx {
	struct sfs_fs *fs;
	struct sfs_inode *ip;
	const uint8_t *src; /* the next byte to write */
	uint64_t off, end;  /* file offsets: next byte, end of the write */
	size_t done;	    /* bytes written */
	/* direct: the strategy whose blocks it writes through, and the
	 * physical runs written (struct sfs_run) */
	const struct sfs_write_ops *base;
	GArray *runs;
};

/* A strategy's return: stop the write here, short, without an error. */
#define WR_STOP 1

static void wctx_advance(struct sfs_wctx *w, size_t n)
{
	w->off += n;
	w->src += n;
	w->done += n;
}

/* Write [boff, boff+n) of logical block lblk from w's next byte, filling
 * a hole; dirty marks the buffer dirty. */
static int write_partial(struct sfs_wctx *w, uint32_t lblk, uint32_t boff,
			 size_t n,
			 void (*dirty)(struct sfs_fs *, struct sfs_buf *))
{
	struct sfs_fs *fs = w->fs;
	struct sfs_buf *b;
	sfs_blk_t pblk;
	bool isnew = false;
	int rc;

	rc = sfs_map_block(fs, w->ip, lblk, true, &pblk, &isnew);
	if (rc)
		return rc;
	if (isnew)
		rc = sfs_cache_get_new(fs->cache, pblk, SFS_IO_DATA, &b);
	else
		rc = sfs_cache_get(fs->cache, pblk, SFS_IO_DATA, &b);
	if (rc)
		return rc;
	if (isnew)
		memset(b->data, 0, fs->bs);
	memcpy(b->data + boff, w->src, n);
	dirty(fs, b);
	sfs_inode_note_dirty(w->ip, pblk, 1);
	sfs_cache_put(fs->cache, b);
	wctx_advance(w, n);
	return 0;
}

/*
 * Map up to max whole blocks from lblk (holes filled, or with
 * first_only only the first: a later hole ends the run) and copy them
 * as one physically contiguous run through the cache.  *run_out is the
 * run copied.  A map error after the first block still copies the run
 * and returns the error after it.
 */
static int write_run(struct sfs_wctx *w, uint32_t lblk, uint32_t max,
		     bool first_only, struct sfs_run *run_out)
{
	struct sfs_fs *fs = w->fs;
	sfs_blk_t first = 0;
	uint32_t n = 0;
	int rc = 0;

	max = MIN(max, 256);
	while (n < max) {
		sfs_blk_t pblk;
		bool isnew;
		rc = sfs_map_block(fs, w->ip, lblk + n, !first_only || n == 0,
				   &pblk, &isnew);
		if (rc)
			break;
		if (pblk == 0)
			break;
		if (n == 0)
			first = pblk;
		else if (pblk != first + n)
			break; /* not contiguous: write what we have */
		n++;
	}
	if (n == 0)
		return rc ? rc : WR_STOP;
	int wrc = sfs_cache_write_run(fs->cache, first, n, SFS_IO_DATA, w->src);
	if (wrc)
		return wrc;
	if (fs->jnl)
		sfs_jnl_data_run(fs->jnl, first, n);
	sfs_inode_note_dirty(w->ip, first, n);
	run_out->start = first;
	run_out->n = n;
	wctx_advance(w, (size_t)n << fs->bs_log);
	/* A block mapped past the run (not contiguous) is rewritten by the
	 * next call: map is idempotent. */
	return rc;
}

/* buffered, cached: blocks are chosen at write time, whole blocks copied
 * as runs (ext4_aops under nodelalloc, ext2 and ext3 ordered/writeback) */
static int cached_blocks(struct sfs_wctx *w, uint32_t lblk, uint32_t max)
{
	struct sfs_run r;

	return write_run(w, lblk, max, false, &r);
}

static int cached_partial(struct sfs_wctx *w, uint32_t lblk, uint32_t boff,
			  size_t n)
{
	return write_partial(w, lblk, boff, n, sfs_data_dirty);
}

static const struct sfs_write_ops write_cached = {
    .name = "cached",
    .write_blocks = cached_blocks,
    .write_partial = cached_partial,
};

/*
 * delalloc (ext4_da_aops; delalloc.c): a hole takes the data into the
 * inode's delayed store, block by block, and reserves a block for it; a
 * mapped block, or a fallocated (unwritten) one, is rewritten in place
 * as the cached strategy does, a run ending at the next hole.
 */
static int da_hole(struct sfs_wctx *w, uint32_t lblk, uint32_t boff, bool *hole)
{
	sfs_blk_t pblk;
	bool nw;
	int rc = sfs_map_block(w->fs, w->ip, lblk, false, &pblk, &nw);
	size_t n;

	/* nw: fallocated (unwritten), its block exists and is converted
	 * when written, nothing to reserve */
	*hole = rc == 0 && pblk == 0 && !nw;
	if (!*hole)
		return rc;
	n = (size_t)MIN((uint64_t)(w->fs->bs - boff), w->end - w->off);
	rc = sfs_da_write(w->fs, w->ip, lblk, boff, w->src, n);
	if (rc == 0)
		wctx_advance(w, n);
	return rc;
}

static int da_blocks(struct sfs_wctx *w, uint32_t lblk, uint32_t max)
{
	struct sfs_run r;
	bool hole;
	int rc = da_hole(w, lblk, 0, &hole);

	if (rc || hole)
		return rc;
	return write_run(w, lblk, max, true, &r);
}

static int da_partial(struct sfs_wctx *w, uint32_t lblk, uint32_t boff,
		      size_t n)
{
	bool hole;
	int rc = da_hole(w, lblk, boff, &hole);

	if (rc || hole)
		return rc;
	return cached_partial(w, lblk, boff, n);
}

/* delayed data is dirty data: over the limit, the writer writes */
static int da_end(struct sfs_wctx *w, int rc)
{
	if (w->ip->da)
		sfs_cache_balance(w->fs->cache);
	return rc;
}

static const struct sfs_write_ops write_delalloc = {
    .name = "delalloc",
    .write_blocks = da_blocks,
    .write_partial = da_partial,
    .end = da_end,
};

/*
 * data=journal, or chattr +j without delalloc (ext4_journalled_aops):
 * every block, whole or not, is written alone and joins the running
 * transaction as a metadata block does, whatever the policy does with
 * data (sfs_jnl_data_log, data=journal's data_dirty verb); no runs, no
 * delayed allocation.  fsync is a commit.
 */
static void journal_dirty(struct sfs_fs *fs, struct sfs_buf *b)
{
	if (fs->jnl && !fs->jnl_off)
		sfs_jnl_data_log(fs->jnl, b);
	else
		sfs_cache_dirty(fs->cache, b);
}

static int journal_partial(struct sfs_wctx *w, uint32_t lblk, uint32_t boff,
			   size_t n)
{
	return write_partial(w, lblk, boff, n, journal_dirty);
}

static const struct sfs_write_ops write_journal = {
    .name = "journal",
    .write_partial = journal_partial,
};

/*
 * O_DIRECT: the blocks are written as the inode's buffered strategy
 * without delay writes them (cached or journal), then written through to
 * the disk when the call ends and dropped from the cache, as the kernel
 * invalidates the page cache after a direct write.  Delayed data of the
 * file is placed first: a direct write must not pass cached data.
 */
static int direct_begin(struct sfs_wctx *w)
{
	w->base =
	    w->ip->wops == &write_journal ? &write_journal : &write_cached;
	w->runs = g_array_new(FALSE, FALSE, sizeof(struct sfs_run));
	if (w->ip->da)
		return sfs_da_flush_inode(w->fs, w->ip, SFS_DA_DIRECT);
	return 0;
}

static int direct_partial(struct sfs_wctx *w, uint32_t lblk, uint32_t boff,
			  size_t n)
{
	sfs_blk_t pb;
	bool nw;
	int rc = w->base->write_partial(w, lblk, boff, n);

	if (rc == 0 &&
	    sfs_map_block(w->fs, w->ip, lblk, false, &pb, &nw) == 0 && pb) {
		struct sfs_run r = {pb, 1};
		g_array_append_val(w->runs, r);
	}
	return rc;
}

static int direct_blocks(struct sfs_wctx *w, uint32_t lblk, uint32_t max)
{
	struct sfs_run r = {0, 0};
	int rc;

	if (!w->base->write_blocks)
		return direct_partial(w, lblk, 0, w->fs->bs);
	rc = write_run(w, lblk, max, false, &r);
	if (r.n)
		g_array_append_val(w->runs, r);
	return rc;
}

/* Write the data blocks of this call's runs through now. */
static int direct_finish(struct sfs_wctx *w, int rc)
{
	GArray *runs = w->runs;
	uint64_t n = 0;
	sfs_blk_t *list;
	int wrc;

	for (guint i = 0; i < runs->len; i++)
		n += g_array_index(runs, struct sfs_run, i).n;
	if (n == 0)
		goto out;
	list = g_try_new(sfs_blk_t, n);
	if (!list) {
		wrc = -ENOMEM;
		goto out_rc;
	}
	n = 0;
	for (guint i = 0; i < runs->len; i++) {
		struct sfs_run *r = &g_array_index(runs, struct sfs_run, i);
		for (uint32_t k = 0; k < r->n; k++)
			list[n++] = r->start + k;
	}
	wrc = sfs_cache_write_blocks(w->fs->cache, list, n);
	/* the data leaves memory (metadata and other files' data stay) */
	if (wrc == 0)
		sfs_cache_drop_clean(w->fs->cache, list, n);
	g_free(list);
out_rc:
	if (rc == 0)
		rc = wrc;
out:
	g_array_free(runs, TRUE);
	return rc;
}

static const struct sfs_write_ops write_direct = {
    .name = "direct",
    .begin = direct_begin,
    .write_blocks = direct_blocks,
    .write_partial = direct_partial,
    .finish = direct_finish,
};

const struct sfs_write_ops *sfs_write_choose(const struct sfs_fs *fs,
					     const struct sfs_inode *ip)
{
	if (!sfs_i_isreg(ip))
		return NULL;
	if (sfs_jnl_data_path(fs->jnl) == SFS_JNL_DATA_JOURNALLED)
		return &write_journal;
	/* chattr +j journals a file's data on a journaled filesystem
	 * without delalloc (ext4_inode_journal_mode, fs/ext4/ext4_jbd2.c) */
	if ((sfs_le32(ip->d.i_flags) & SFS_JOURNAL_DATA_FL) &&
	    sfs_jnl_journaled(fs->jnl) && !fs->da_on)
		return &write_journal;
	/* sfs_da_setup turns delalloc off under data=journal, as ext4 */
	if (sfs_da_wanted(fs, ip))
		return &write_delalloc;
	return &write_cached;
}

const struct sfs_write_ops *
sfs_write_ops_of(struct sfs_fs *fs, struct sfs_inode *ip, unsigned ioflags)
{
	if (!ip->wops)
		ip->wops = sfs_write_choose(fs, ip);
	if (ip->wops && (ioflags & SFS_IOCTX_DIRECT))
		return &write_direct;
	return ip->wops;
}

int sfs_write(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off, const void *buf,
	      size_t len, size_t *written_out)
{
	return sfs_write_ctx(fs, ino, off, buf, len, NULL, written_out);
}

static int fsync_file(struct sfs_fs *fs, struct sfs_inode *ip);

/*
 * The frame of every write: the checks, then the inode's strategy (or
 * O_DIRECT's) writes the bytes block by block, then the size, the
 * timestamps and, under chattr +S, the fsync.
 */
int sfs_write_ctx(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off,
		  const void *buf, size_t len, const struct sfs_ioctx *ctx,
		  size_t *written_out)
{
	const struct sfs_write_ops *ops = NULL;
	struct sfs_wctx w = {0};
	struct sfs_inode *ip;
	int rc;

	if (!fs || (!buf && len) || !written_out)
		return -EINVAL;
	*written_out = 0;
	sfs_op_begin(fs, SFS_OP_WRITE);
	rc = sfs_iget(fs, ino, &ip);
	if (rc)
		goto out_unlock;
	fs->cur_pid = ctx ? ctx->pid : 0;
	sfs_io_set_stream(fs->cur_pid);
	rc = sfs_check_writable(fs);
	if (rc)
		goto out_put;
	if (!sfs_i_isreg(ip)) {
		rc = sfs_i_isdir(ip) ? -EISDIR : -EINVAL;
		goto out_put;
	}
	if (sfs_i_immutable(ip)) { /* made immutable while open */
		rc = -EPERM;
		goto out_put;
	}
	if (len == 0)
		goto out_put;
	w = (struct sfs_wctx){
	    .fs = fs, .ip = ip, .src = buf, .off = off, .end = off + len};
	if (w.end < off || w.end > sfs_map_max_bytes(fs, ip)) {
		rc = -EFBIG;
		goto out_put;
	}
	ops = sfs_write_ops_of(fs, ip, ctx ? ctx->flags : 0);
	if (ops->begin) {
		rc = ops->begin(&w);
		if (rc)
			goto out_put;
	}
	while (w.off < w.end) {
		uint32_t lblk = (uint32_t)(w.off >> fs->bs_log);
		uint32_t boff = (uint32_t)(w.off & (fs->bs - 1));

		if (boff == 0 && w.end - w.off >= fs->bs && ops->write_blocks)
			rc = ops->write_blocks(
			    &w, lblk,
			    (uint32_t)MIN((w.end - w.off) >> fs->bs_log,
					  UINT32_MAX));
		else
			rc = ops->write_partial(
			    &w, lblk, boff,
			    (size_t)MIN((uint64_t)(fs->bs - boff),
					w.end - w.off));
		if (rc) {
			if (rc == WR_STOP)
				rc = 0;
			break;
		}
	}
	if (w.done > 0) {
		if (w.off > sfs_i_size(ip))
			set_size(fs, ip, w.off);
		sfs_i_touch(fs, ip, SFS_SET_MTIME | SFS_SET_CTIME);
	}
	{
		int drc = sfs_inode_dirty(fs, ip);
		if (rc == 0)
			rc = drc;
	}
	if (ops->end)
		rc = ops->end(&w, rc);
	/* chattr +S: the write is synchronous (generic_write_sync) */
	if (rc == 0 && w.done > 0 && (sfs_le32(ip->d.i_flags) & SFS_SYNC_FL)) {
		rc = fsync_file(fs, ip);
		/* group commit with a commit in flight: the next one takes
		 * the write along; the writer does not wait for it here */
		if (rc == -EINPROGRESS)
			rc = 0;
	}
out_put:
	if (ops && ops->finish)
		rc = ops->finish(&w, rc);
	fs->cur_pid = 0;
	sfs_io_set_stream(0);
	*written_out = w.done;
	fs->bytes_written += w.done;
	sfs_iput(fs, ip);
out_unlock:
	sfs_op_end(fs);
	return rc;
}

/*
 * fsync of one file (Linux fs/ext2/fsync.c, fs/ext3/fsync.c,
 * fs/ext4/fsync.c): what the journal policy has fsync write of the file
 * itself (its fsync_data verb: ext2 the file's dirty data and indirect
 * blocks and its inode block, data=writeback the file's data, data=ordered
 * and journal nothing), then, journaled, a commit of the running
 * transaction (it takes every ordered or logged block of the transaction
 * along, other files' too: the classic ext3 fsync cost), then a flush.
 */
static int fsync_file(struct sfs_fs *fs, struct sfs_inode *ip)
{
	bool journaled = sfs_jnl_journaled(fs->jnl);
	GArray *runs;
	int rc;

	/* delayed data is placed (and written) first */
	rc = sfs_da_flush_inode(fs, ip, SFS_DA_FSYNC);
	if (rc)
		return rc;
	runs = ip->dirty_runs;
	ip->dirty_runs = NULL;
	/* journalled data: the commit carries it (ext4_sync_file) */
	if (runs && fs->jnl && sfs_write_ops_of(fs, ip, 0) != &write_journal)
		rc = sfs_jnl_fsync_data(fs->jnl, ip, runs);
	if (rc == 0 && journaled && (fs->driver || fs->defer_waits)) {
		/* group commit under a driver (fs.h, struct sfs_fs_driver),
		 * as ext4_sync_file with jbd2: the inode's last change is in
		 * the running transaction (commit it, once the commit in
		 * flight is done) or in the one in flight (wait for it), or
		 * already durable (nothing to commit) */
		uint32_t run = sfs_jnl_running_tid(fs->jnl);
		bool busy = sfs_fs_commit_busy(fs);

		if (busy && (ip->jtid == run || ip->jtid == run - 1))
			rc = -EINPROGRESS;
		else if (ip->jtid == run)
			rc = sfs_jnl_commit(fs->jnl, SFS_COMMIT_FSYNC);
	} else if (rc == 0 && journaled) {
		rc = sfs_jnl_commit(fs->jnl, SFS_COMMIT_FSYNC);
	}
	if (rc == 0)
		rc = sfs_bdev_flush(fs->bd);
	if (runs)
		g_array_free(runs, TRUE);
	return rc;
}

/* fsync of ino (counted as an fsync operation when count), waiting
 * unlocked for the commit in flight under group commit on a mount */
static int fsync_ino(struct sfs_fs *fs, sfs_ino_t ino, bool count)
{
	struct sfs_inode *ip;
	int rc;

	for (bool again = false;; again = true) {
		if (again || !count)
			sfs_op_resume(fs);
		else
			sfs_op_begin(fs, SFS_OP_FSYNC);
		rc = sfs_iget(fs, ino, &ip);
		if (rc == 0) {
			rc = sfs_check_writable(fs);
			if (rc == -EROFS && fs->ro)
				rc = 0; /* nothing to write on a read-only
					   mount */
			else if (rc == 0)
				rc = fsync_file(fs, ip);
			sfs_iput(fs, ip);
		}
		sfs_op_end(fs);
		/* group commit on a mount: wait for the commit in flight
		 * (unlocked), then again; a driver does this itself */
		if (rc != -EINPROGRESS || fs->driver)
			return rc;
		sfs_fs_commit_wait(fs);
	}
}

int sfs_fsync(struct sfs_fs *fs, sfs_ino_t ino, bool datasync)
{
	(void)datasync;
	if (!fs)
		return -EINVAL;
	return fsync_ino(fs, ino, true);
}

int sfs_dirsync_wait(struct sfs_fs *fs, sfs_ino_t dir)
{
	return fsync_ino(fs, dir, false);
}

/* Zero bytes [off, off + n) of one block of ip, in place if the block is
 * written (a hole or an unwritten block reads as zeros already). */
static int zero_in_block(struct sfs_fs *fs, struct sfs_inode *ip, uint64_t off,
			 uint32_t n)
{
	uint32_t boff = (uint32_t)(off & (fs->bs - 1));
	struct sfs_buf *b;
	sfs_blk_t pblk;
	bool isnew;
	int rc;

	if (n == 0)
		return 0;
	rc = sfs_map_block(fs, ip, (uint32_t)(off >> fs->bs_log), false, &pblk,
			   &isnew);
	if (rc || pblk == 0)
		return rc;
	rc = sfs_cache_get(fs->cache, pblk, SFS_IO_DATA, &b);
	if (rc)
		return rc;
	memset(b->data + boff, 0, n);
	sfs_data_dirty(fs, b);
	sfs_inode_note_dirty(ip, pblk, 1);
	sfs_cache_put(fs->cache, b);
	return 0;
}

/* Zero the partial blocks at either edge of [off, end)
 * (ext4_zero_partial_blocks); the whole blocks between are the caller's. */
static int zero_edges(struct sfs_fs *fs, struct sfs_inode *ip, uint64_t off,
		      uint64_t end)
{
	uint64_t mask = fs->bs - 1;
	uint64_t head_end = MIN(end, (off + mask) & ~mask);
	int rc = 0;

	if (off & mask)
		rc = zero_in_block(fs, ip, off, (uint32_t)(head_end - off));
	if (rc == 0 && (end & mask) && (end & ~mask) >= head_end)
		rc = zero_in_block(fs, ip, end & ~mask, (uint32_t)(end & mask));
	return rc;
}

/* PUNCH_HOLE (ext4_punch_hole): nothing at or past EOF; a range reaching
 * past EOF stops at the end of the page holding it; partial blocks are
 * zeroed, whole ones freed. */
static int falloc_punch(struct sfs_fs *fs, struct sfs_inode *ip, uint64_t off,
			uint64_t end)
{
	uint64_t size = sfs_i_size(ip), mask = fs->bs - 1;
	uint64_t page_end =
	    (size + SFS_FALLOC_PAGE - 1) & ~(SFS_FALLOC_PAGE - 1);
	uint64_t first, last;
	int rc;

	if (off >= size)
		return 0;
	end = MIN(end, page_end);
	rc = zero_edges(fs, ip, off, end);
	if (rc)
		return rc;
	first = (off + mask) >> fs->bs_log;
	last = end >> fs->bs_log;
	if (first < last)
		rc = sfs_map_edit(fs, ip, SFS_FALLOC_PUNCH_HOLE,
				  (uint32_t)first, (uint32_t)last);
	return rc;
}

/* ZERO_RANGE (ext4_zero_range): every block of the range allocated
 * (holes as unwritten), the whole blocks made unwritten, the partial edge
 * blocks zeroed. */
static int falloc_zero(struct sfs_fs *fs, struct sfs_inode *ip, uint64_t off,
		       uint64_t end)
{
	uint64_t first = off >> fs->bs_log, last = (end - 1) >> fs->bs_log;
	uint64_t a = (off + fs->bs - 1) >> fs->bs_log, b = end >> fs->bs_log;
	int rc = sfs_extent_prealloc(fs, ip, (uint32_t)first,
				     (uint32_t)(last - first + 1));

	if (rc == 0 && a < b)
		rc = sfs_map_edit(fs, ip, SFS_FALLOC_ZERO_RANGE, (uint32_t)a,
				  (uint32_t)b);
	if (rc == 0)
		rc = zero_edges(fs, ip, off, end);
	return rc;
}

/* Does the mapping of ip support fallocate mode op (mode without
 * KEEP_SIZE)? */
static bool falloc_supported(struct sfs_fs *fs, const struct sfs_inode *ip,
			     int op)
{
	if (op == 0)
		return sfs_le32(ip->d.i_flags) & SFS_EXTENTS_FL;
	return sfs_map_can_edit(fs, ip, op);
}

int sfs_fallocate(struct sfs_fs *fs, sfs_ino_t ino, int mode, uint64_t off,
		  uint64_t len)
{
	int op = mode & ~SFS_FALLOC_KEEP_SIZE;
	bool keep = mode & SFS_FALLOC_KEEP_SIZE;
	struct sfs_inode *ip;
	uint64_t end = off + len, size, max;
	int rc;

	if (!fs || len == 0)
		return -EINVAL;
	/* the mode, as vfs_fallocate checks it */
	switch (op) {
	case 0:
	case SFS_FALLOC_ZERO_RANGE:
		break;
	case SFS_FALLOC_PUNCH_HOLE:
		if (!keep)
			return -EOPNOTSUPP;
		break;
	case SFS_FALLOC_COLLAPSE_RANGE:
	case SFS_FALLOC_INSERT_RANGE:
		if (keep)
			return -EOPNOTSUPP;
		break;
	default:
		return -EOPNOTSUPP;
	}
	sfs_op_begin(fs, SFS_OP_FALLOCATE);
	rc = sfs_iget(fs, ino, &ip);
	if (rc)
		goto out_unlock;
	rc = sfs_check_writable(fs);
	if (rc)
		goto out_put;
	/* vfs_fallocate: immutable, or append-only with anything but
	 * preallocation, is EPERM */
	if (sfs_i_immutable(ip) || (sfs_i_pinned(ip) && op)) {
		rc = -EPERM;
		goto out_put;
	}
	if (!sfs_i_isreg(ip)) {
		rc = sfs_i_isdir(ip) ? -EISDIR : -ENODEV;
		goto out_put;
	}
	max = sfs_map_max_bytes(fs, ip);
	if (end < off || end > max) {
		rc = -EFBIG;
		goto out_put;
	}
	/* then ext4's own checks: the mapping, alignment, EOF */
	if (!falloc_supported(fs, ip, op)) {
		rc = -EOPNOTSUPP;
		goto out_put;
	}
	size = sfs_i_size(ip);
	if (op == SFS_FALLOC_COLLAPSE_RANGE || op == SFS_FALLOC_INSERT_RANGE) {
		if ((off | len) & (fs->bs - 1)) {
			rc = -EINVAL;
			goto out_put;
		}
		if (op == SFS_FALLOC_INSERT_RANGE && len > max - size) {
			rc = -EFBIG;
			goto out_put;
		}
		if (op == SFS_FALLOC_COLLAPSE_RANGE ? end >= size
						    : off >= size) {
			rc = -EINVAL;
			goto out_put;
		}
	}
	/* delayed blocks in the range would be counted twice or lost, and
	 * ext4 writes the range (or, shifting, the file) back first: place
	 * them */
	rc = sfs_da_flush_inode(fs, ip, SFS_DA_FALLOC);
	if (rc)
		goto out_put;
	switch (op) {
	case 0: {
		uint64_t first = off >> fs->bs_log;
		uint64_t last = (end - 1) >> fs->bs_log;
		rc = sfs_extent_prealloc(fs, ip, (uint32_t)first,
					 (uint32_t)(last - first + 1));
		break;
	}
	case SFS_FALLOC_PUNCH_HOLE:
		rc = falloc_punch(fs, ip, off, end);
		break;
	case SFS_FALLOC_ZERO_RANGE:
		rc = falloc_zero(fs, ip, off, end);
		break;
	case SFS_FALLOC_COLLAPSE_RANGE:
		rc = sfs_map_edit(fs, ip, SFS_FALLOC_COLLAPSE_RANGE,
				  (uint32_t)(off >> fs->bs_log),
				  (uint32_t)(end >> fs->bs_log));
		if (rc == 0)
			set_size(fs, ip, size - len);
		break;
	case SFS_FALLOC_INSERT_RANGE:
		rc = sfs_map_edit(fs, ip, SFS_FALLOC_INSERT_RANGE,
				  (uint32_t)(off >> fs->bs_log),
				  (uint32_t)(end >> fs->bs_log));
		if (rc == 0)
			set_size(fs, ip, size + len);
		break;
	}
	if (rc == 0 && (op == 0 || op == SFS_FALLOC_ZERO_RANGE) && !keep &&
	    end > size)
		set_size(fs, ip, end);
	/* placement state (windows, preallocations) no longer matches */
	if (op && !ip->da)
		sfs_alloc_release_inode(fs, ip);
	if (op || sfs_i_size(ip) != size)
		sfs_i_touch(fs, ip, SFS_SET_MTIME | SFS_SET_CTIME);
	else
		sfs_i_touch(fs, ip, SFS_SET_CTIME);
	{
		int drc = sfs_inode_dirty(fs, ip);
		if (rc == 0)
			rc = drc;
	}
out_put:
	sfs_iput(fs, ip);
out_unlock:
	sfs_op_end(fs);
	return rc;
}

int sfs_get_flags(struct sfs_fs *fs, sfs_ino_t ino, uint32_t *flags_out)
{
	struct sfs_inode *ip;
	int rc;

	if (!fs || !flags_out)
		return -EINVAL;
	sfs_op_begin(fs, SFS_OP_GETATTR);
	rc = sfs_iget(fs, ino, &ip);
	if (rc == 0) {
		*flags_out = sfs_le32(ip->d.i_flags) & SFS_FL_USER_VISIBLE;
		sfs_iput(fs, ip);
	}
	sfs_op_end(fs);
	return rc;
}

/*
 * New i_flags for ip (chattr): chattr +j/-j may change its write strategy
 * (ext4_change_inode_journal_flag, fs/ext4/inode.c).  Leaving the journal
 * strategy, the journal is flushed first (jbd2_journal_flush): a logged
 * copy of the file's data must not be replayed over a later write in
 * place.  Delayed data never meets +j (it takes effect only without
 * delalloc).
 */
static int set_i_flags(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t flags)
{
	const struct sfs_write_ops *was = NULL, *next = NULL;
	uint32_t old = ip->d.i_flags;
	int rc;

	if (sfs_i_isreg(ip))
		was = sfs_write_ops_of(fs, ip, 0);
	ip->d.i_flags = sfs_cpu_to_le32(flags);
	if (was)
		next = sfs_write_choose(fs, ip);
	if (next != was && was == &write_journal) {
		rc = sfs_jnl_flush(fs->jnl);
		if (rc) {
			ip->d.i_flags = old;
			return rc;
		}
	}
	ip->wops = next;
	sfs_i_touch(fs, ip, SFS_SET_CTIME);
	return sfs_inode_dirty(fs, ip);
}

int sfs_set_flags(struct sfs_fs *fs, sfs_ino_t ino, uint32_t flags,
		  bool cap_immutable)
{
	/* changes simfs cannot carry out: ext4 migrates between block map
	 * and extents, casefolds */
	const uint32_t refused = SFS_EXTENTS_FL | SFS_CASEFOLD_FL;
	struct sfs_inode *ip;
	uint32_t old, now;
	int rc;

	if (!fs)
		return -EINVAL;
	if (flags & ~SFS_FL_USER_VISIBLE)
		return -EOPNOTSUPP;
	sfs_op_begin(fs, SFS_OP_SETATTR);
	rc = sfs_iget(fs, ino, &ip);
	if (rc)
		goto out_unlock;
	rc = sfs_check_writable(fs);
	if (rc)
		goto out_put;
	old = sfs_le32(ip->d.i_flags);
	if (((flags ^ old) & (SFS_APPEND_FL | SFS_IMMUTABLE_FL)) &&
	    !cap_immutable) {
		rc = -EPERM;
		goto out_put;
	}
	/* an immutable or append-only inode takes no other change until the
	 * flag goes (fileattr_set_prepare) */
	if (sfs_i_pinned(ip) && !cap_immutable) {
		rc = -EPERM;
		goto out_put;
	}
	if ((flags ^ old) & refused & SFS_FL_USER_MODIFIABLE) {
		rc = -EOPNOTSUPP;
		goto out_put;
	}
	now =
	    (old & ~SFS_FL_USER_MODIFIABLE) | (flags & SFS_FL_USER_MODIFIABLE);
	if (now != old)
		rc = set_i_flags(fs, ip, now);
out_put:
	sfs_iput(fs, ip);
out_unlock:
	sfs_op_end(fs);
	return rc;
}

int sfs_statfs(struct sfs_fs *fs, struct sfs_statfs *out)
{
	uint64_t overhead, free_b, free_i = 0, reserved;

	if (!fs || !out)
		return -EINVAL;
	sfs_op_begin(fs, SFS_OP_STATFS);
	/* what only a late forget still holds is as good as free */
	sfs_reclaim_unlinked_locked(fs);
	/* Overhead as ext2's statfs counts it: block 0 (1 KiB blocks),
	 * superblock and GDT copies, bitmaps and inode tables. */
	overhead = fs->first_data_block;
	int sparse = !!(sfs_le32(fs->sb.s_feature_ro_compat) &
			SFS_FEATURE_RO_COMPAT_SPARSE_SUPER);
	for (uint32_t g = 0; g < fs->groups; g++) {
		if (sfs_group_has_super(g, sparse))
			overhead += 1 + fs->desc_blocks + fs->reserved_gdt;
		overhead += 2 + fs->itb;
		/* a group with a bad inode bitmap has none to give */
		if (!sfs_group_bad(fs, g, true))
			free_i += sfs_le16(fs->gd[g].bg_free_inodes_count);
	}
	free_b = sfs_free_blocks(fs);
	/* blocks set aside for delayed data are as good as used */
	free_b =
	    free_b > sfs_da_reserved(fs) ? free_b - sfs_da_reserved(fs) : 0;
	reserved = sfs_le32(fs->sb.s_r_blocks_count);
	memset(out, 0, sizeof(*out));
	out->block_size = fs->bs;
	out->blocks = fs->blocks_count - overhead;
	out->blocks_free = free_b;
	out->blocks_avail = free_b > reserved ? free_b - reserved : 0;
	out->inodes = sfs_le32(fs->sb.s_inodes_count);
	out->inodes_free = free_i;
	out->name_max = SFS_NAME_MAX;
	sfs_op_end(fs);
	return 0;
}
