/*
 * fs.c - mounting and the filesystem-wide bookkeeping of the engine:
 * superblock, group descriptors, block and inode bitmaps, the inode table
 * and the in-memory inode cache.
 *
 *   sfs_fs_open   read + validate the superblock and descriptors, refuse
 *                 foreign images and unsupported features (naming them),
 *                 mark the image "not clean" while mounted read-write
 *   sfs_fs_sync   write the superblock, descriptors and every dirty buffer
 *   sfs_fs_close  free orphans, sync, mark the image clean, close
 *
 * Invariants kept for e2fsck (doc/internals.md, "What e2fsck checks"):
 *  1. a group's bg_free_blocks_count / bg_free_inodes_count equal the zero
 *     bits of its bitmaps; bg_used_dirs_count counts allocated directories;
 *  2. the superblock's free counts are the sums of the groups' (recomputed
 *     when the superblock is written);
 *  3. an inode is "in use" iff its bitmap bit is set; a freed inode keeps
 *     links 0 and a real dtime.
 * Only the primary superblock and GDT are written while mounted, as the
 * kernel does; mkfs writes the backups.
 *
 * In-memory inodes live in fs->icache.  Unreferenced, unopened inodes stay
 * cached in LRU order (fs->ilru) so that directories keep their name index
 * between requests: as many as an eighth of mem= holds (icache_max), at
 * least SFS_ICACHE_MIN and at most SFS_ICACHE_MAX (doc/cache.md).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "csum.h"
#include "frag.h"
#include "fs_priv.h"
#include "iolog.h"
#include "journal.h"
#include "stats.h"
#include "timedev.h"

#define SFS_ICACHE_MAX 65536 /* unreferenced inodes kept in memory, */
#define SFS_ICACHE_MIN 4096  /* whatever mem= is */

/* ---- errors and small checks ---- */

void sfs_fs_error(struct sfs_fs *fs, int err, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_printerr("simfs: error %d (%s): %s\n", -err, g_strerror(-err), msg);
	g_free(msg);
	if (!fs->error) {
		fs->error = true;
		fs->sb.s_state |= sfs_cpu_to_le16(SFS_STATE_ERROR);
		fs->sb_dirty = true;
	}
}

/*
 * A write-back pass failed with rc.  A full host disk under the image
 * (-ENOSPC) leaves the image as consistent as it was: the buffers stay
 * dirty and a later pass (or simfs sync, once there is room) writes them,
 * so it is said once and is no error state.  Anything else is.
 */
static void fs_wb_failed(struct sfs_fs *fs, int rc)
{
	if (rc == -ENOSPC) {
		if (!fs->wb_host_full)
			g_printerr("simfs: write-back waits for room on the "
				   "host disk under the image\n");
		fs->wb_host_full = true;
		return;
	}
	sfs_fs_error(fs, rc, "write-back failed");
}

int sfs_check_writable(struct sfs_fs *fs)
{
	if (fs->ro || fs->error)
		return -EROFS;
	return 0;
}

int sfs_check_name(const char *name, size_t *len_out)
{
	size_t len;

	if (!name)
		return -EINVAL;
	len = strnlen(name, SFS_NAME_MAX + 1);
	if (len > SFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (len == 0 || memchr(name, '/', len))
		return -EINVAL;
	if (len_out)
		*len_out = len;
	return 0;
}

void sfs_now(struct sfs_fs *fs, struct timespec *out)
{
	sfs_ns_t t = fs->time_base_ns + sfs_clock_now_ns(fs->clock);

	out->tv_sec = (time_t)(t / SFS_NS_PER_S);
	out->tv_nsec = (long)(t % SFS_NS_PER_S);
}

/* ---- operation boundaries and the buffer doors ---- */

/*
 * What is due at an operation boundary: the flusher's work, a timed
 * commit, a checkpoint for log space, and a commit that makes blocks freed
 * in the running transaction allocatable when space runs short.
 */
static bool fs_enospc_commit_due(struct sfs_fs *fs);

static void fs_tick(struct sfs_fs *fs)
{
	int rc;

	if (fs->ro || fs->error)
		return;
	rc = sfs_cache_tick(fs->cache);
	if (rc)
		fs_wb_failed(fs, rc);
	if (!fs->jnl)
		return;
	if (fs_enospc_commit_due(fs)) {
		rc = sfs_jnl_commit(fs->jnl, SFS_COMMIT_ENOSPC);
		if (rc)
			return;
	}
	sfs_jnl_tick(fs->jnl);
}

/*
 * On a real clock the modelled waits of an operation are not slept under
 * the engine's lock (timedev.h, deferred waits): the operation is carried
 * out at once, and its thread sleeps out its modelled completion in
 * sfs_op_end, after letting go of the lock, so other programs' operations
 * (a read of cached data, another writer) go on meanwhile and their
 * requests queue behind its own at the modelled device.  A commit is in
 * flight from the end of its operation's work under the lock until its
 * thread has slept out all of its I/O (fs->commits_in_flight; a commit's
 * later stages, the commit block after the log blocks, are only timed in
 * that sleep), and its completion is then remembered
 * (fs->commit_done_ns): an fsync that meets a commit in flight waits for
 * it and then commits what is left (group commit, inode.c fsync_file).
 */
static __thread bool fs_tl_committed; /* this thread's op committed */
static __thread bool fs_tl_in_flight; /* ... and it is counted in flight */

/* The deferred waits of this thread's work under the lock: their end,
 * with a commit counted in flight.  Caller holds the lock. */
static sfs_ns_t fs_defer_end(struct sfs_fs *fs)
{
	sfs_ns_t t;

	if (!fs->defer_waits)
		return 0;
	t = sfs_io_defer_end();
	if (fs_tl_committed) {
		fs_tl_committed = false;
		fs_tl_in_flight = true;
		fs->commits_in_flight++;
	}
	return t;
}

/* Sleep out this thread's deferred waits (no lock held); a commit among
 * them is done after it: note when, and wake the fsyncs waiting. */
static void fs_defer_sleep(struct sfs_fs *fs, sfs_ns_t t)
{
	if (!fs->defer_waits)
		return;
	sfs_io_defer_sleep(fs->clock, t);
	if (!fs_tl_in_flight)
		return;
	fs_tl_in_flight = false;
	sfs_lock(fs);
	fs->commits_in_flight--;
	fs->commit_done_ns =
	    MAX(fs->commit_done_ns, MAX(t, sfs_clock_now_ns(fs->clock)));
	sfs_cond_broadcast(&fs->commit_cond);
	sfs_unlock(fs);
}

void sfs_fs_commit_wait(struct sfs_fs *fs)
{
	sfs_ns_t until;

	sfs_lock(fs);
	while (fs->commits_in_flight)
		sfs_cond_wait(&fs->commit_cond, &fs->lock);
	until = fs->commit_done_ns;
	sfs_unlock(fs);
	sfs_clock_sleep_until(fs->clock, until);
}

/* ---- a driver of virtual time (fs.h, simfs run) ---- */

void sfs_fs_set_driver(struct sfs_fs *fs, const struct sfs_fs_driver *d,
		       void *arg)
{
	sfs_lock(fs);
	fs->driver = d;
	fs->driver_arg = arg;
	sfs_unlock(fs);
}

bool sfs_fs_commit_busy(struct sfs_fs *fs)
{
	if (!fs->driver)
		return fs->defer_waits &&
		       (fs->commits_in_flight ||
			sfs_clock_now_ns(fs->clock) < fs->commit_done_ns);
	return fs->driver->commit_busy &&
	       fs->driver->commit_busy(fs->driver_arg);
}

void sfs_fs_commit_started(struct sfs_fs *fs)
{
	if (!fs->driver)
		fs_tl_committed = fs->defer_waits;
	else if (fs->driver->commit_started)
		fs->driver->commit_started(fs->driver_arg);
}

/* Blocks freed in the running transaction are wanted (fs_tick's rule). */
static bool fs_enospc_commit_due(struct sfs_fs *fs)
{
	uint64_t pend = fs->jnl ? sfs_jnl_pending_free(fs->jnl) : 0;

	return pend && sfs_free_blocks(fs) < MAX(pend, fs->blocks_count / 64);
}

sfs_ns_t sfs_fs_writeback_deadline(struct sfs_fs *fs)
{
	sfs_ns_t t;

	sfs_lock(fs);
	t = fs->ro || fs->error ? UINT64_MAX
				: sfs_cache_next_deadline(fs->cache);
	sfs_unlock(fs);
	return t;
}

sfs_ns_t sfs_fs_journal_deadline(struct sfs_fs *fs)
{
	sfs_ns_t t = UINT64_MAX;

	sfs_lock(fs);
	if (fs->jnl && !fs->ro && !fs->error)
		t = fs_enospc_commit_due(fs) ? sfs_clock_now_ns(fs->clock)
					     : sfs_jnl_next_deadline(fs->jnl);
	sfs_unlock(fs);
	return t;
}

int sfs_fs_writeback_tick(struct sfs_fs *fs)
{
	int rc = 0;

	sfs_lock(fs);
	if (!fs->ro && !fs->error) {
		rc = sfs_cache_tick(fs->cache);
		if (rc)
			fs_wb_failed(fs, rc);
	}
	sfs_unlock(fs);
	return rc;
}

int sfs_fs_journal_tick(struct sfs_fs *fs)
{
	int rc = 0;

	sfs_lock(fs);
	if (fs->jnl && !fs->ro && !fs->error) {
		if (fs_enospc_commit_due(fs))
			rc = sfs_jnl_commit(fs->jnl, SFS_COMMIT_ENOSPC);
		if (!rc)
			rc = sfs_jnl_tick(fs->jnl);
	}
	sfs_unlock(fs);
	return rc;
}

/*
 * The flusher of a mount on the real clock: what fs_tick does at operation
 * boundaries, also while no operation arrives (idle writers' data still
 * expires, idle transactions still commit).  Wakes at the next deadline,
 * and at least every 200 ms to notice the stop request.
 */
static gpointer flusher_main(gpointer arg)
{
	struct sfs_fs *fs = arg;

	for (;;) {
		sfs_ns_t now, next;

		sfs_lock(fs);
		if (fs->flusher_stop) {
			sfs_unlock(fs);
			break;
		}
		now = sfs_clock_now_ns(fs->clock);
		next =
		    MIN(sfs_cache_next_deadline(fs->cache),
			fs->jnl ? sfs_jnl_next_deadline(fs->jnl) : UINT64_MAX);
		sfs_ns_t wait = 0;
		if (next <= now) {
			if (fs->defer_waits) {
				sfs_io_defer_begin();
				fs_tl_committed = false;
			}
			fs_tick(fs);
			wait = fs_defer_end(fs);
		}
		sfs_unlock(fs);
		fs_defer_sleep(fs, wait); /* its write-back's time, unlocked */
		sfs_clock_sleep_until(fs->clock,
				      MIN(next, now + 200 * SFS_NS_PER_MS));
	}
	return NULL;
}

static void flusher_start(struct sfs_fs *fs)
{
	if (fs->ro || sfs_clock_is_virtual(fs->clock))
		return;
	fs->flusher = g_thread_new("simfs-flush", flusher_main, fs);
}

static void flusher_stop(struct sfs_fs *fs)
{
	if (!fs->flusher)
		return;
	sfs_lock(fs);
	fs->flusher_stop = true;
	sfs_unlock(fs);
	g_thread_join(fs->flusher);
	fs->flusher = NULL;
}

void sfs_op_resume(struct sfs_fs *fs)
{
	sfs_lock(fs);
	if (fs->defer_waits) {
		sfs_io_defer_begin();
		fs_tl_committed = false;
	}
	if (!fs->driver)
		fs_tick(fs); /* a driver calls the ticks as their own actors */
}

void sfs_op_begin(struct sfs_fs *fs, enum sfs_op op)
{
	sfs_op_resume(fs);
	sfs_count_op(fs, op);
}

void sfs_op_end(struct sfs_fs *fs)
{
	sfs_ns_t t;

	if (fs->jnl && !fs->ro)
		sfs_jnl_op_end(fs->jnl);
	t = fs_defer_end(fs);
	sfs_unlock(fs);
	fs_defer_sleep(fs, t);
}

void sfs_meta_dirty(struct sfs_fs *fs, struct sfs_buf *b)
{
	if (fs->jnl && !fs->jnl_off)
		sfs_jnl_meta_dirty(fs->jnl, b);
	else
		sfs_cache_dirty(fs->cache, b);
}

void sfs_data_dirty(struct sfs_fs *fs, struct sfs_buf *b)
{
	if (fs->jnl && !fs->jnl_off)
		sfs_jnl_data_dirty(fs->jnl, b);
	else
		sfs_cache_dirty(fs->cache, b);
}

/*
 * Time for the superblock's mount and write stamps.  With a virtual clock
 * these stay at the anchor: e2fsck compares them with the host's clock
 * and would call a virtual future "in the future".
 */
static void sfs_sb_now(struct sfs_fs *fs, struct timespec *out)
{
	if (sfs_clock_is_virtual(fs->clock)) {
		out->tv_sec = (time_t)(fs->time_base_ns / SFS_NS_PER_S);
		out->tv_nsec = 0;
		return;
	}
	sfs_now(fs, out);
}

/* ---- feature names ---- */

struct feat_name {
	int word; /* 0 compat, 1 incompat, 2 ro_compat */
	uint32_t mask;
	const char *name;
};

static const struct feat_name feat_names[] = {
    {0, 0x0001, "dir_prealloc"},
    {0, 0x0002, "imagic_inodes"},
    {0, 0x0004, "has_journal"},
    {0, 0x0008, "ext_attr"},
    {0, 0x0010, "resize_inode"},
    {0, 0x0020, "dir_index"},
    {0, 0x0040, "lazy_bg"},
    {0, 0x0080, "snapshot_exclude"},
    {0, 0x0100, "exclude_bitmap"},
    {0, 0x0200, "sparse_super2"},
    {0, 0x0400, "fast_commit"},
    {0, 0x0800, "stable_inodes"},
    {0, 0x1000, "orphan_file"},
    {1, 0x0001, "compression"},
    {1, 0x0002, "filetype"},
    {1, 0x0004, "needs_recovery"},
    {1, 0x0008, "journal_dev"},
    {1, 0x0010, "meta_bg"},
    {1, 0x0040, "extent"},
    {1, 0x0080, "64bit"},
    {1, 0x0100, "mmp"},
    {1, 0x0200, "flex_bg"},
    {1, 0x0400, "ea_inode"},
    {1, 0x1000, "dirdata"},
    {1, 0x2000, "metadata_csum_seed"},
    {1, 0x4000, "large_dir"},
    {1, 0x8000, "inline_data"},
    {1, 0x10000, "encrypt"},
    {1, 0x20000, "casefold"},
    {2, 0x0001, "sparse_super"},
    {2, 0x0002, "large_file"},
    {2, 0x0004, "btree_dir"},
    {2, 0x0008, "huge_file"},
    {2, 0x0010, "uninit_bg"},
    {2, 0x0020, "dir_nlink"},
    {2, 0x0040, "extra_isize"},
    {2, 0x0080, "snapshot"},
    {2, 0x0100, "quota"},
    {2, 0x0200, "bigalloc"},
    {2, 0x0400, "metadata_csum"},
    {2, 0x0800, "replica"},
    {2, 0x1000, "read-only"},
    {2, 0x2000, "project"},
    {2, 0x4000, "shared_blocks"},
    {2, 0x8000, "verity"},
    {2, 0x10000, "orphan_present"},
};

/* Features the engine handles now.  resize_inode and the ro_compat extras
 * mke2fs may set are tolerated: their blocks stay untouched.  htree
 * (dir_index) directories are used and kept through their index, unless
 * the mount says nodir_index (dir.c; doc/internals.md, "Hashed
 * directories"). */
#define ENGINE_COMPAT                                                          \
	(SFS_FEATURE_COMPAT_EXT_ATTR | SFS_FEATURE_COMPAT_RESIZE_INODE |       \
	 SFS_FEATURE_COMPAT_DIR_PREALLOC | SFS_FEATURE_COMPAT_HAS_JOURNAL |    \
	 SFS_FEATURE_COMPAT_DIR_INDEX)
#define ENGINE_INCOMPAT                                                        \
	(SFS_FEATURE_INCOMPAT_FILETYPE | SFS_FEATURE_INCOMPAT_EXTENTS |        \
	 SFS_FEATURE_INCOMPAT_CSUM_SEED | SFS_FEATURE_INCOMPAT_64BIT |        \
	 SFS_FEATURE_INCOMPAT_FLEX_BG)
#define ENGINE_RO_COMPAT (SFS_RO_COMPAT_SUPP | SFS_FEATURE_RO_COMPAT_GDT_CSUM)

/*
 * Refuse a superblock with any feature outside the engine's subset,
 * naming every one of them ("unsupported filesystem features 'a', 'b'").
 * needs_recovery is not judged here (check_features, after the journal
 * replay).  Runs before any other check, so that the message is about the
 * features and not about a structure they change.  0 or -EINVAL.
 */
static int check_unsupported(const struct sfs_dsuper *sb, char **err)
{
	uint32_t words[3] = {sfs_le32(sb->s_feature_compat),
			     sfs_le32(sb->s_feature_incompat),
			     sfs_le32(sb->s_feature_ro_compat)};
	const uint32_t supp[3] = {
	    ENGINE_COMPAT, ENGINE_INCOMPAT | SFS_FEATURE_INCOMPAT_RECOVER,
	    ENGINE_RO_COMPAT};
	static const char *wname[] = {"compat", "incompat", "ro_compat"};
	GString *names = g_string_new(NULL);
	unsigned n = 0;

	for (int w = 0; w < 3; w++) {
		uint32_t unknown = 0;

		for (uint32_t bad = words[w] & ~supp[w]; bad; bad &= bad - 1) {
			const char *name = NULL;

			for (size_t i = 0; i < G_N_ELEMENTS(feat_names); i++)
				if (feat_names[i].word == w &&
				    feat_names[i].mask == (bad & -bad))
					name = feat_names[i].name;
			if (!name) {
				unknown |= bad & -bad;
				continue;
			}
			g_string_append_printf(names, "%s'%s'", n++ ? ", " : "",
					       name);
		}
		if (unknown)
			g_string_append_printf(names, "%sunknown %s 0x%x",
					       n++ ? ", " : "", wname[w],
					       unknown);
	}
	if (n)
		*err = g_strdup_printf("unsupported filesystem feature%s %s",
				       n > 1 ? "s" : "", names->str);
	g_string_free(names, true);
	return n ? -EINVAL : 0;
}

/* After the journal replay: unsupported features, recovery still pending
 * (a read-only mount does not replay), and the filetype simfs needs.  0 or
 * -EINVAL. */
static int check_features(const struct sfs_dsuper *sb, char **err)
{
	int rc = check_unsupported(sb, err);

	if (rc)
		return rc;
	if (sfs_le32(sb->s_feature_incompat) & SFS_FEATURE_INCOMPAT_RECOVER) {
		*err = g_strdup("the journal needs recovery "
				"(needs_recovery is set); run e2fsck "
				"or mount with a journal policy");
		return -EINVAL;
	}
	if (!(sfs_le32(sb->s_feature_incompat) &
	      SFS_FEATURE_INCOMPAT_FILETYPE)) {
		*err = g_strdup("filesystem lacks the 'filetype' feature, "
				"which simfs requires");
		return -EINVAL;
	}
	return 0;
}

/* ---- superblock and descriptors ---- */

/* Validate the superblock's geometry against the device size. */
static int check_geometry(struct sfs_fs *fs, uint64_t dev_bytes, char **err)
{
	const struct sfs_dsuper *sb = &fs->sb;
	uint32_t log = sfs_le32(sb->s_log_block_size);
	uint64_t groups;
	bool is64;

	if (sfs_le16(sb->s_magic) != SFS_SUPER_MAGIC) {
		*err =
		    g_strdup_printf("not an ext2/3/4 filesystem (magic 0x%04x,"
				    " expected 0xef53)",
				    sfs_le16(sb->s_magic));
		return -EINVAL;
	}
	if (sfs_le32(sb->s_rev_level) != 1) {
		*err = g_strdup_printf("unsupported revision level %u "
				       "(only revision 1 is supported)",
				       sfs_le32(sb->s_rev_level));
		return -EINVAL;
	}
	if (log > SFS_MAX_BLOCK_LOG) {
		*err = g_strdup_printf("unsupported block size 2^%u KiB", log);
		return -EINVAL;
	}
	fs->bs_log = 10 + log;
	fs->bs = 1024u << log;
	fs->addr_per_block = fs->bs / 4;
	fs->first_data_block = sfs_le32(sb->s_first_data_block);
	fs->blocks_count = sfs_le32(sb->s_blocks_count);
	fs->bpg = sfs_le32(sb->s_blocks_per_group);
	fs->ipg = sfs_le32(sb->s_inodes_per_group);
	fs->inode_size = sfs_le16(sb->s_inode_size);
	fs->reserved_gdt = sfs_le16(sb->s_reserved_gdt_blocks);
	fs->desc_size = sfs_sb_desc_size(sb);
	is64 = sfs_le32(sb->s_feature_incompat) & SFS_FEATURE_INCOMPAT_64BIT;

	if (is64 && (fs->desc_size < SFS_DESC_SIZE_64BIT ||
		     fs->desc_size > SFS_DESC_SIZE_MAX ||
		     (fs->desc_size & (fs->desc_size - 1)))) {
		*err = g_strdup_printf("bad group descriptor size %u (64bit "
				       "wants a power of two from 64 to "
				       "1024)",
				       fs->desc_size);
		return -EINVAL;
	}
	if (is64 && (sb->s_blocks_count_hi || sb->s_r_blocks_count_hi ||
		     sb->s_free_blocks_hi)) {
		*err = g_strdup("more than 2^32 blocks (s_blocks_count_hi or "
				"another high half set) is not supported");
		return -EINVAL;
	}

	if (sfs_le32(sb->s_log_cluster_size) != log ||
	    sfs_le32(sb->s_clusters_per_group) != fs->bpg) {
		*err = g_strdup("cluster size differs from block size "
				"(bigalloc is not supported)");
		return -EINVAL;
	}
	if (fs->first_data_block != (fs->bs == 1024 ? 1u : 0u)) {
		*err = g_strdup_printf("bad first data block %u for %u-byte "
				       "blocks",
				       fs->first_data_block, fs->bs);
		return -EINVAL;
	}
	if (fs->bpg < 8 || fs->bpg > 8 * fs->bs || fs->bpg % 8) {
		*err = g_strdup_printf("bad blocks per group %u", fs->bpg);
		return -EINVAL;
	}
	if (fs->inode_size < SFS_GOOD_OLD_INODE_SIZE ||
	    fs->inode_size > fs->bs ||
	    (fs->inode_size & (fs->inode_size - 1))) {
		*err = g_strdup_printf("bad inode size %u", fs->inode_size);
		return -EINVAL;
	}
	if (fs->inode_size > sizeof(struct sfs_dinode)) {
		*err = g_strdup_printf("unsupported inode size %u (128 or 256)",
				       fs->inode_size);
		return -EINVAL;
	}
	if (fs->ipg == 0 || fs->ipg > 8 * fs->bs || fs->ipg % 8 ||
	    (fs->ipg * fs->inode_size) % fs->bs) {
		*err = g_strdup_printf("bad inodes per group %u", fs->ipg);
		return -EINVAL;
	}
	if (fs->blocks_count <= fs->first_data_block + 1) {
		*err = g_strdup_printf("bad block count %u", fs->blocks_count);
		return -EINVAL;
	}
	groups =
	    (fs->blocks_count - fs->first_data_block + fs->bpg - 1) / fs->bpg;
	fs->groups = (uint32_t)groups;
	if ((uint64_t)fs->ipg * groups != sfs_le32(sb->s_inodes_count)) {
		*err = g_strdup_printf("inode count %u is not %u groups x %u "
				       "inodes",
				       sfs_le32(sb->s_inodes_count), fs->groups,
				       fs->ipg);
		return -EINVAL;
	}
	if (sfs_le32(sb->s_first_ino) != SFS_FIRST_INO) {
		*err = g_strdup_printf("unsupported first inode %u (expected "
				       "11)",
				       sfs_le32(sb->s_first_ino));
		return -EINVAL;
	}
	if ((uint64_t)fs->blocks_count * fs->bs > dev_bytes) {
		*err = g_strdup_printf("device too small: the filesystem has "
				       "%u blocks of %u bytes (%llu bytes), "
				       "the device %llu bytes (truncated "
				       "image?)",
				       fs->blocks_count, fs->bs,
				       (unsigned long long)fs->blocks_count *
					   fs->bs,
				       (unsigned long long)dev_bytes);
		return -EINVAL;
	}
	fs->itb = fs->ipg * fs->inode_size / fs->bs;
	fs->desc_blocks =
	    (uint32_t)(((uint64_t)fs->groups * fs->desc_size + fs->bs - 1) /
		       fs->bs);
	sfs_geom_fill(fs);
	return 0;
}

uint32_t sfs_group_nblocks(const struct sfs_fs *fs, uint32_t g)
{
	if (g + 1 < fs->groups)
		return fs->bpg;
	return fs->blocks_count - fs->first_data_block - g * fs->bpg;
}

/* The high half of descriptor g (zeros without 64bit). */
static struct sfs_dgroup_hi gd_hi(const struct sfs_fs *fs, uint32_t g)
{
	struct sfs_dgroup_hi hi = {0};

	if (fs->gd_tail)
		memcpy(&hi, fs->gd_tail + (size_t)g * (fs->desc_size - 32),
		       sizeof(hi));
	return hi;
}

/*
 * Each group's bitmaps and inode table must lie inside the filesystem
 * after its GDT; without flex_bg inside the group itself.  With flex_bg
 * mke2fs packs those of a flex group at its start, so they may sit in
 * another group: the engine finds them through the descriptor and the
 * block bitmaps mark them used where they lie (doc/internals.md, "flex_bg
 * layout").  With 64bit the high halves must be zero: the engine keeps
 * 32-bit block numbers (check_geometry refuses more than 2^32 blocks) and
 * 16-bit counts (a group holds at most 8 x block-size blocks or inodes).
 */
static int check_groups(struct sfs_fs *fs, char **err)
{
	bool flex =
	    sfs_le32(fs->sb.s_feature_incompat) & SFS_FEATURE_INCOMPAT_FLEX_BG;

	for (uint32_t g = 0; g < fs->groups; g++) {
		const struct sfs_dgroup *gd = &fs->gd[g];
		struct sfs_dgroup_hi hi = gd_hi(fs, g);
		sfs_blk_t first = sfs_group_first(fs, g);
		sfs_blk_t end = first + sfs_group_nblocks(fs, g);
		sfs_blk_t bb = sfs_le32(gd->bg_block_bitmap);
		sfs_blk_t ib = sfs_le32(gd->bg_inode_bitmap);
		sfs_blk_t it = sfs_le32(gd->bg_inode_table);

		if (hi.bg_block_bitmap_hi || hi.bg_inode_bitmap_hi ||
		    hi.bg_inode_table_hi || hi.bg_free_blocks_count_hi ||
		    hi.bg_free_inodes_count_hi || hi.bg_used_dirs_count_hi ||
		    hi.bg_itable_unused_hi) {
			*err = g_strdup_printf("group %u: a high half of the "
					       "64-bit descriptor is set "
					       "(beyond 2^32 blocks or a "
					       "65535 count)",
					       g);
			return -EINVAL;
		}
		if (flex) {
			first = fs->first_data_block + 1 + fs->desc_blocks;
			end = fs->blocks_count;
		}
		if (bb < first || bb >= end || ib < first || ib >= end ||
		    it < first || it + fs->itb > end) {
			*err = g_strdup_printf(
			    "group %u: bitmap or inode table outside the %s", g,
			    flex ? "filesystem" : "group (flex_bg is off)");
			return -EINVAL;
		}
		if (sfs_le16(gd->bg_free_blocks_count) >
			sfs_group_nblocks(fs, g) ||
		    sfs_le16(gd->bg_free_inodes_count) > fs->ipg) {
			*err = g_strdup_printf("group %u: free counts exceed "
					       "the group's size",
					       g);
			return -EINVAL;
		}
		if ((fs->csum || fs->gdt_csum) &&
		    sfs_le16(gd->bg_checksum) != sfs_csum_group(fs, g, gd)) {
			*err = g_strdup_printf("group %u: descriptor checksum "
					       "0x%04x, computed 0x%04x",
					       g, sfs_le16(gd->bg_checksum),
					       sfs_csum_group(fs, g, gd));
			return -EINVAL;
		}
		/* INODE_ZEROED (0x4) is harmless and mke2fs sets it; the
		 * uninitialised-group flags need uninit_bg or metadata_csum
		 * (init_uninit_groups builds those groups' bitmaps), as the
		 * kernel ignores them without (ext4_has_group_desc_csum). */
		if (!fs->csum && !fs->gdt_csum &&
		    ((sfs_le16(gd->bg_flags) & 0x3) ||
		     sfs_le16(gd->bg_itable_unused))) {
			*err = g_strdup_printf("group %u: uninitialised-group "
					       "flags set without uninit_bg or "
					       "metadata_csum",
					       g);
			return -EINVAL;
		}
	}
	return 0;
}

static inline bool bit_test(const uint8_t *map, uint32_t i)
{
	return map[i >> 3] & (1u << (i & 7));
}

static inline void bit_set(uint8_t *map, uint32_t i)
{
	map[i >> 3] |= (uint8_t)(1u << (i & 7));
}

static inline void bit_clear(uint8_t *map, uint32_t i)
{
	map[i >> 3] &= (uint8_t) ~(1u << (i & 7));
}

#define BG_INODE_UNINIT 0x1
#define BG_BLOCK_UNINIT 0x2
#define BG_INODE_ZEROED 0x4

/* Set block blk's bit in the bitmap of the group [first, first + n) if
 * it lies in that group. */
static void set_if_inside(uint8_t *map, sfs_blk_t first, uint32_t n,
			  sfs_blk_t blk)
{
	if (blk >= first && blk - first < n)
		bit_set(map, (uint32_t)(blk - first));
}

/* Build the bitmap block of an uninitialised group in b (zeroed first):
 * padding past the group's end set, and for BLOCK_UNINIT the group's own
 * metadata (superblock copy, GDT, reserved GDT, bitmaps, inode table). */
static int uninit_bitmap(struct sfs_fs *fs, uint32_t g, bool inode,
			 uint8_t *map, char **err)
{
	const struct sfs_dgroup *gd = &fs->gd[g];
	uint32_t n = inode ? fs->ipg : sfs_group_nblocks(fs, g);
	sfs_blk_t first = sfs_group_first(fs, g);
	uint32_t used = 0;

	memset(map, 0, fs->bs);
	for (uint32_t i = n; i < fs->bs * 8; i++)
		bit_set(map, i);
	if (inode)
		return 0;
	if (sfs_group_has_super(g, sfs_le32(fs->sb.s_feature_ro_compat) &
				       SFS_FEATURE_RO_COMPAT_SPARSE_SUPER))
		for (uint32_t i = 0; i < 1 + fs->desc_blocks + fs->reserved_gdt;
		     i++)
			bit_set(map, i);
	/* with flex_bg a group's bitmaps and inode table may lie in another
	 * group: only the blocks inside this one are marked here, as
	 * ext4_init_block_bitmap does (the free-count check below catches
	 * a group that holds metadata this rule does not see) */
	set_if_inside(map, first, n, sfs_le32(gd->bg_block_bitmap));
	set_if_inside(map, first, n, sfs_le32(gd->bg_inode_bitmap));
	for (uint32_t i = 0; i < fs->itb; i++)
		set_if_inside(map, first, n, sfs_le32(gd->bg_inode_table) + i);
	for (uint32_t i = 0; i < n; i++)
		used += bit_test(map, i);
	if (n - used != sfs_le16(gd->bg_free_blocks_count)) {
		*err = g_strdup_printf("group %u: uninitialised, %u blocks of "
				       "metadata, but %u of %u free",
				       g, used,
				       sfs_le16(gd->bg_free_blocks_count), n);
		return -EINVAL;
	}
	return 0;
}

/*
 * mke2fs leaves the inode tables of a new image for the kernel to zero
 * after the first mount (lazy_itable_init, the ext4lazyinit thread) and
 * says so by a missing INODE_ZEROED: the slots past the group's used
 * ones (the last bg_itable_unused, or all of an INODE_UNINIT group) may
 * hold anything.  Zero them here, once, at a read-write mount, so every
 * slot the engine may hand out reads as a never-used inode.  The blocks
 * go through the cache and reach the disk before the descriptors that
 * say INODE_ZEROED (init_uninit_groups syncs first).  A read-only mount
 * writes nothing: it leaves the tail as it is and slot_read answers a
 * never-used inode for it (sfs_inode_slot_unzeroed): ext4 trusts no byte
 * of a slot bg_itable_unused or INODE_UNINIT calls unused either.
 */
static uint32_t itable_tail_first(const struct sfs_fs *fs, uint32_t g)
{
	const struct sfs_dgroup *gd = &fs->gd[g];
	uint16_t fl = sfs_le16(gd->bg_flags);
	uint32_t unused;

	/* the flags and bg_itable_unused mean something only under group
	 * descriptor checksums (ext4_has_group_desc_csum) */
	if (!fs->csum && !fs->gdt_csum)
		return fs->ipg;
	unused = (fl & BG_INODE_UNINIT)
		     ? fs->ipg
		     : MIN(sfs_le16(gd->bg_itable_unused), fs->ipg);
	return fs->ipg - unused;
}

bool sfs_inode_slot_unzeroed(const struct sfs_fs *fs, sfs_ino_t ino)
{
	uint32_t g = (ino - 1) / fs->ipg;

	if (sfs_le16(fs->gd[g].bg_flags) & BG_INODE_ZEROED)
		return false;
	return (ino - 1) % fs->ipg >= itable_tail_first(fs, g);
}

static int zero_itable_tail(struct sfs_fs *fs, uint32_t g)
{
	const struct sfs_dgroup *gd = &fs->gd[g];
	uint32_t per_blk = fs->bs / fs->inode_size;
	uint32_t first = itable_tail_first(fs, g); /* first slot to zero */
	sfs_blk_t table = sfs_le32(gd->bg_inode_table);

	for (uint32_t i = first / per_blk; i < fs->itb; i++) {
		uint32_t from = i == first / per_blk ? first % per_blk : 0;
		struct sfs_buf *b;
		int rc = from ? sfs_cache_get(fs->cache, table + i,
					      SFS_IO_INODE, &b)
			      : sfs_cache_get_new(fs->cache, table + i,
						  SFS_IO_INODE, &b);

		if (rc)
			return rc;
		memset(b->data + (size_t)from * fs->inode_size, 0,
		       (size_t)(per_blk - from) * fs->inode_size);
		sfs_cache_dirty(fs->cache, b);
		sfs_cache_put(fs->cache, b);
	}
	return 0;
}

/*
 * metadata_csum images (mke2fs) leave groups uninitialised: BLOCK_UNINIT
 * or INODE_UNINIT, whose bitmap blocks hold nothing yet, and
 * bg_itable_unused.  Build those bitmaps as the kernel does on first use
 * (ext4_init_block_bitmap) and write them (a read-only mount pins them in
 * the cache instead), so the rest of the engine sees ordinary bitmaps.
 * The flags stay until the group is first used (group_first_use), as in
 * ext4; a later mount builds the bitmaps of still-flagged groups again.
 * A read-write mount zeroes the inode table's tail first (INODE_ZEROED);
 * a read-only one leaves it to slot_read.
 */
static int init_uninit_groups(struct sfs_fs *fs, char **err)
{
	bool any = false;
	int rc;

	for (uint32_t g = 0; g < fs->groups; g++) {
		struct sfs_dgroup *gd = &fs->gd[g];
		uint16_t fl = sfs_le16(gd->bg_flags);

		if (!(fl & (BG_INODE_UNINIT | BG_BLOCK_UNINIT)) &&
		    !gd->bg_itable_unused)
			continue;
		if (!(fl & BG_INODE_ZEROED) && !fs->ro) {
			rc = zero_itable_tail(fs, g);
			if (rc) {
				*err = g_strdup_printf("group %u: cannot zero "
						       "its inode table: %s",
						       g, g_strerror(-rc));
				return rc;
			}
			fl |= BG_INODE_ZEROED;
		}
		for (int k = 0; k < 2; k++) {
			bool inode = k == 1;
			struct sfs_buf *b;

			if (!(fl & (inode ? BG_INODE_UNINIT : BG_BLOCK_UNINIT)))
				continue;
			rc = sfs_cache_get_new(
			    fs->cache,
			    sfs_le32(inode ? gd->bg_inode_bitmap
					   : gd->bg_block_bitmap),
			    SFS_IO_BITMAP, &b);
			if (rc)
				return rc;
			rc = uninit_bitmap(fs, g, inode, b->data, err);
			if (!rc) {
				sfs_csum_bitmap_set(fs, g, inode, b->data);
				if (fs->ro)
					sfs_cache_pin(fs->cache, b);
				else
					sfs_cache_dirty(fs->cache, b);
			}
			sfs_cache_put(fs->cache, b);
			if (rc)
				return rc;
		}
		gd->bg_flags = sfs_cpu_to_le16(fl);
		any = true;
	}
	if (!any || fs->ro)
		return 0;
	fs->gd_dirty = true;
	/* the bitmaps reach the disk before any descriptor that drops the
	 * flags (group_first_use, later) */
	rc = sfs_cache_sync(fs->cache);
	if (rc)
		*err = g_strdup_printf("cannot write the initialised bitmaps: "
				       "%s",
				       g_strerror(-rc));
	return rc;
}

/* Read or write the primary superblock through the cache. */
static int super_io(struct sfs_fs *fs, bool write)
{
	sfs_blk_t blk = SFS_SUPER_OFFSET / fs->bs;
	uint32_t off = SFS_SUPER_OFFSET % fs->bs;
	struct sfs_buf *b;
	int rc;

	rc = sfs_cache_get(fs->cache, blk, SFS_IO_SUPER, &b);
	if (rc)
		return rc;
	if (write) {
		sfs_csum_super_set(&fs->sb);
		if (memcmp(b->data + off, &fs->sb, SFS_SUPER_SIZE)) {
			memcpy(b->data + off, &fs->sb, SFS_SUPER_SIZE);
			sfs_meta_dirty(fs, b);
		}
	} else {
		memcpy(&fs->sb, b->data + off, SFS_SUPER_SIZE);
	}
	sfs_cache_put(fs->cache, b);
	return 0;
}

/* Copy descriptor g between its on-disk slot and fs->gd / fs->gd_tail;
 * true when writing changed the slot. */
static bool gd_copy(struct sfs_fs *fs, uint32_t g, uint8_t *slot, bool write)
{
	size_t tail = fs->desc_size - sizeof(struct sfs_dgroup);
	uint8_t *t = fs->gd_tail ? fs->gd_tail + (size_t)g * tail : NULL;
	bool changed = false;

	if (!write) {
		memcpy(&fs->gd[g], slot, sizeof(struct sfs_dgroup));
		if (t)
			memcpy(t, slot + sizeof(struct sfs_dgroup), tail);
		return false;
	}
	if (memcmp(slot, &fs->gd[g], sizeof(struct sfs_dgroup))) {
		memcpy(slot, &fs->gd[g], sizeof(struct sfs_dgroup));
		changed = true;
	}
	if (t && memcmp(slot + sizeof(struct sfs_dgroup), t, tail)) {
		memcpy(slot + sizeof(struct sfs_dgroup), t, tail);
		changed = true;
	}
	return changed;
}

static int gdt_io(struct sfs_fs *fs, bool write)
{
	uint32_t per_blk = fs->bs / fs->desc_size;
	sfs_blk_t start = fs->first_data_block + 1;

	if (write && (fs->csum || fs->gdt_csum))
		for (uint32_t g = 0; g < fs->groups; g++)
			fs->gd[g].bg_checksum = sfs_cpu_to_le16(
			    sfs_csum_group(fs, g, &fs->gd[g]));
	for (uint32_t i = 0; i < fs->desc_blocks; i++) {
		struct sfs_buf *b;
		uint32_t g0 = i * per_blk;
		uint32_t g1 = MIN(fs->groups, g0 + per_blk);
		bool changed = false;
		int rc = sfs_cache_get(fs->cache, start + i, SFS_IO_GDT, &b);

		if (rc)
			return rc;
		for (uint32_t g = g0; g < g1; g++)
			changed |= gd_copy(
			    fs, g, b->data + (size_t)(g - g0) * fs->desc_size,
			    write);
		if (changed)
			sfs_meta_dirty(fs, b);
		sfs_cache_put(fs->cache, b);
	}
	return 0;
}

/* Copy free counts into the superblock, then write it and the GDT into
 * their buffers (stamp: also set the last-write time). */
static int super_and_gdt(struct sfs_fs *fs, bool stamp)
{
	uint64_t fb = 0, fi = 0;
	struct timespec now;
	int rc;

	for (uint32_t g = 0; g < fs->groups; g++) {
		fb += sfs_le16(fs->gd[g].bg_free_blocks_count);
		fi += sfs_le16(fs->gd[g].bg_free_inodes_count);
	}
	fs->sb.s_free_blocks_count = sfs_cpu_to_le32((uint32_t)fb);
	fs->sb.s_free_inodes_count = sfs_cpu_to_le32((uint32_t)fi);
	if (stamp) {
		sfs_sb_now(fs, &now);
		fs->sb.s_wtime = sfs_cpu_to_le32((uint32_t)now.tv_sec);
	}
	rc = gdt_io(fs, true);
	if (rc)
		return rc;
	rc = super_io(fs, true);
	if (rc)
		return rc;
	fs->gd_dirty = false;
	fs->sb_dirty = false;
	return 0;
}

static int write_super_and_gdt(struct sfs_fs *fs)
{
	return super_and_gdt(fs, true);
}

int sfs_fs_flush_super_gdt(struct sfs_fs *fs)
{
	return super_and_gdt(fs, false);
}

uint64_t sfs_free_blocks(const struct sfs_fs *fs)
{
	return fs->free_blocks;
}

/* ---- bitmaps ---- */

/* A group's bitmap, its checksum verified (metadata_csum): a mismatch is
 * -EIO and the filesystem's error state, as ext4 reports EFSBADCRC. */
static int bitmap_get(struct sfs_fs *fs, uint32_t g, bool inode,
		      struct sfs_buf **out)
{
	const struct sfs_dgroup *gd = &fs->gd[g];
	int rc = sfs_cache_get(
	    fs->cache,
	    sfs_le32(inode ? gd->bg_inode_bitmap : gd->bg_block_bitmap),
	    SFS_IO_BITMAP, out);

	if (rc || sfs_csum_bitmap_ok(fs, g, inode, (*out)->data))
		return rc;
	sfs_cache_put(fs->cache, *out);
	*out = NULL;
	sfs_fs_error(fs, -EIO, "group %u: %s bitmap checksum mismatch", g,
		     inode ? "inode" : "block");
	return -EIO;
}

int sfs_block_bitmap(struct sfs_fs *fs, uint32_t g, struct sfs_buf **out)
{
	return bitmap_get(fs, g, false, out);
}

static int inode_bitmap(struct sfs_fs *fs, uint32_t g, struct sfs_buf **out)
{
	return bitmap_get(fs, g, true, out);
}

/*
 * Group g, which mke2fs may have left uninitialised, is used: as ext4 does
 * (ext4_mb_mark_diskspace_used, __ext4_new_inode) clear BLOCK_UNINIT, and
 * when inode slot idx is taken (inode true) INODE_UNINIT too, lowering
 * bg_itable_unused to the slots past idx.  The bitmaps are valid on disk
 * already (init_uninit_groups).
 */
static void group_first_use(struct sfs_fs *fs, uint32_t g, bool inode,
			    uint32_t idx)
{
	struct sfs_dgroup *gd = &fs->gd[g];
	uint16_t fl = sfs_le16(gd->bg_flags);
	uint16_t nfl = fl & ~BG_BLOCK_UNINIT;

	if (inode) {
		uint32_t unused = (fl & BG_INODE_UNINIT)
				      ? fs->ipg
				      : sfs_le16(gd->bg_itable_unused);
		nfl &= ~BG_INODE_UNINIT;
		if (unused && idx + 1 > fs->ipg - unused) {
			gd->bg_itable_unused =
			    sfs_cpu_to_le16((uint16_t)(fs->ipg - idx - 1));
			fs->gd_dirty = true;
		}
	}
	if (nfl != fl) {
		gd->bg_flags = sfs_cpu_to_le16(nfl);
		fs->gd_dirty = true;
	}
}

/*
 * Set (used = true) or clear [start, start+n) in the block bitmaps, keeping
 * group counts.  A bit found already in the wanted state means the caller's
 * view and the bitmap disagree: a corrupt image or an engine bug.
 */
static int blocks_change(struct sfs_fs *fs, sfs_blk_t start, uint32_t n,
			 bool used)
{
	if (start < fs->first_data_block || n == 0 ||
	    (uint64_t)start + n > fs->blocks_count) {
		sfs_fs_error(fs, -EIO,
			     "block range %u+%u outside the "
			     "filesystem",
			     start, n);
		return -EIO;
	}
	while (n) {
		uint32_t g = sfs_blk_group(fs, start);
		uint32_t bit = start - sfs_group_first(fs, g);
		uint32_t cnt = MIN(n, sfs_group_nblocks(fs, g) - bit);
		struct sfs_buf *b;
		int rc = sfs_block_bitmap(fs, g, &b);
		uint32_t changed = 0;

		if (rc)
			return rc;
		for (uint32_t i = bit; i < bit + cnt; i++) {
			if (bit_test(b->data, i) == used)
				continue;
			if (used)
				bit_set(b->data, i);
			else
				bit_clear(b->data, i);
			changed++;
		}
		sfs_csum_bitmap_set(fs, g, false, b->data);
		sfs_meta_dirty(fs, b);
		sfs_cache_put(fs->cache, b);
		uint16_t fb = sfs_le16(fs->gd[g].bg_free_blocks_count);
		fb = used ? fb - changed : fb + changed;
		fs->gd[g].bg_free_blocks_count = sfs_cpu_to_le16(fb);
		fs->free_blocks = used ? fs->free_blocks - changed
				       : fs->free_blocks + changed;
		fs->gd_dirty = true;
		if (used)
			group_first_use(fs, g, false, 0);
		if (changed != cnt) {
			sfs_fs_error(fs, -EIO,
				     "group %u: %u of blocks %u+%u "
				     "were already %s",
				     g, cnt - changed, start, cnt,
				     used ? "in use" : "free");
			return -EIO;
		}
		start += cnt;
		n -= cnt;
	}
	return 0;
}

int sfs_blocks_mark_used(struct sfs_fs *fs, sfs_blk_t start, uint32_t n)
{
	return blocks_change(fs, start, n, true);
}

int sfs_blocks_free(struct sfs_fs *fs, sfs_blk_t start, uint32_t n)
{
	/* journaled: the bitmap is cleared when the transaction commits, and
	 * the journal decides when the freed buffers may go */
	if (fs->jnl && !fs->jnl_off &&
	    sfs_jnl_free_blocks(fs->jnl, start, n) == 0)
		return 0;
	sfs_cache_discard(fs->cache, start, n);
	return blocks_change(fs, start, n, false);
}

int sfs_blocks_release(struct sfs_fs *fs, sfs_blk_t start, uint32_t n)
{
	return blocks_change(fs, start, n, false);
}

#define FS_HOST_WIN_MIN (64u << 10) /* reserve-ahead window, bytes */
#define FS_HOST_WIN_MAX (1u << 20)

/*
 * Reserve host space under [off, off+len) of the device (sfs_bdev_reserve).
 * One call per allocation would be one fallocate(2) per block of a
 * streaming writer, so, as readahead does, a range that continues the
 * last reserved one reserves ahead: a window from 64 KiB doubling to
 * 1 MiB.  Scattered allocations reserve exactly what they take, so a
 * sparse image stays sparse.  If the window does not fit on the host,
 * the exact range is tried.  0, -ENOSPC or -EIO.
 */
static int fs_host_reserve(struct sfs_fs *fs, uint64_t off, uint64_t len)
{
	uint64_t dev = sfs_bdev_size_bytes(fs->bd), start = off, end;
	bool cont = off >= fs->hr_lo && off <= fs->hr_hi && fs->hr_hi;
	int rc;

	if (cont && off + len <= fs->hr_hi)
		return 0; /* reserved ahead already */
	if (cont) {
		start = fs->hr_hi;
		fs->hr_win =
		    MIN(MAX(fs->hr_win * 2, FS_HOST_WIN_MIN), FS_HOST_WIN_MAX);
	} else {
		fs->hr_win = 0;
	}
	end = MIN(MAX(off + len, start + fs->hr_win), dev);
	rc = sfs_bdev_reserve(fs->bd, start, end - start);
	if (rc == -ENOSPC && end > off + len) {
		fs->hr_win = 0;
		end = off + len;
		rc = sfs_bdev_reserve(fs->bd, start, end - start);
	}
	if (rc)
		return rc;
	if (!cont)
		fs->hr_lo = start;
	fs->hr_hi = end;
	return 0;
}

int sfs_alloc_blocks(struct sfs_fs *fs, struct sfs_inode *ip, sfs_blk_t goal,
		     uint32_t want, sfs_blk_t *start_out, uint32_t *got_out)
{
	struct sfs_alloc *a = fs->alloc;
	int rc;

	if (want == 0)
		return -EINVAL;
	fs->host_full = false;
	if (goal < fs->first_data_block || goal >= fs->blocks_count)
		goal = fs->first_data_block;
	/* Blocks set aside for delayed data are not free to others. */
	uint64_t avail = sfs_free_blocks(fs);
	if (!fs->da_converting)
		avail = avail > sfs_da_reserved(fs)
			    ? avail - sfs_da_reserved(fs)
			    : 0;
	if (avail == 0)
		return -ENOSPC;
	if (want > avail)
		want = (uint32_t)avail;
	rc = a->ops->new_blocks(a, ip, goal, want, start_out, got_out);
	if (rc)
		return rc;
	assert(*got_out >= 1 && *got_out <= want);
	/* The host disk under a sparse image must hold them too: find out
	 * now, while this call can still fail, rather than at write-back. */
	rc = fs_host_reserve(fs, (uint64_t)*start_out * fs->bs,
			     (uint64_t)*got_out * fs->bs);
	fs->host_full = rc == -ENOSPC;
	if (rc) {
		fs->host_enospc++;
		sfs_blocks_free(fs, *start_out, *got_out);
		return rc == -ENOSPC ? -ENOSPC : -EIO;
	}
	return 0;
}

/* ---- inode table ---- */

/* Block and byte offset of inode ino's slot in the inode table. */
static void inode_loc(struct sfs_fs *fs, sfs_ino_t ino, sfs_blk_t *blk,
		      uint32_t *off)
{
	uint32_t g = (ino - 1) / fs->ipg;
	uint32_t idx = (ino - 1) % fs->ipg;
	uint64_t byte = (uint64_t)idx * fs->inode_size;

	*blk = sfs_le32(fs->gd[g].bg_inode_table) + (sfs_blk_t)(byte / fs->bs);
	*off = (uint32_t)(byte % fs->bs);
}

sfs_blk_t sfs_inode_block(struct sfs_fs *fs, sfs_ino_t ino)
{
	sfs_blk_t blk;
	uint32_t off;

	inode_loc(fs, ino, &blk, &off);
	return blk;
}

void sfs_inode_note_dirty(struct sfs_inode *ip, sfs_blk_t blk, uint32_t n)
{
	struct sfs_run *last;

	if (!ip->dirty_runs)
		ip->dirty_runs =
		    g_array_new(FALSE, FALSE, sizeof(struct sfs_run));
	if (ip->dirty_runs->len) {
		last = &g_array_index(ip->dirty_runs, struct sfs_run,
				      ip->dirty_runs->len - 1);
		if (blk >= last->start && blk + n <= last->start + last->n)
			return; /* the same blocks again */
		if (blk == last->start + last->n) {
			last->n += n;
			return;
		}
	}
	struct sfs_run r = {blk, n};
	g_array_append_val(ip->dirty_runs, r);
}

int sfs_inode_dirty(struct sfs_fs *fs, struct sfs_inode *ip)
{
	struct sfs_buf *b;
	sfs_blk_t blk;
	uint32_t off;
	int rc;

	inode_loc(fs, ip->ino, &blk, &off);
	rc = sfs_cache_get(fs->cache, blk, SFS_IO_INODE, &b);
	if (rc)
		return rc;
	if (fs->jnl)
		ip->jtid = sfs_jnl_running_tid(fs->jnl);
	memcpy(b->data + off, &ip->d, fs->inode_size);
	if (ip->da) {
		/* delayed data: the disk's size stops at placed blocks */
		struct sfs_dinode *d = (struct sfs_dinode *)(b->data + off);
		uint64_t ds = sfs_da_disksize(ip, sfs_i_size(ip));
		d->i_size = sfs_cpu_to_le32((uint32_t)ds);
		d->i_size_high = sfs_cpu_to_le32((uint32_t)(ds >> 32));
	}
	sfs_csum_inode_set(fs, ip->ino, b->data + off);
	sfs_meta_dirty(fs, b);
	sfs_cache_put(fs->cache, b);
	return 0;
}

static void inode_evict(struct sfs_fs *fs, struct sfs_inode *ip)
{
	sfs_da_drop(fs, ip); /* only after an error: sync placed them */
	sfs_alloc_release_inode(fs, ip);
	if (g_hash_table_lookup(fs->icache, GUINT_TO_POINTER(ip->ino)) == ip)
		g_hash_table_steal(fs->icache, GUINT_TO_POINTER(ip->ino));
	if (ip->lru_link.data)
		g_queue_unlink(&fs->ilru, &ip->lru_link);
	sfs_dir_index_free(ip->dindex);
	if (ip->dirty_runs)
		g_array_free(ip->dirty_runs, TRUE);
	g_free(ip);
}

/* How many unreferenced inodes to keep: their structs take at most an
 * eighth of mem= (the kernel's lookup counts and directory indexes are
 * not limited by it), within [SFS_ICACHE_MIN, SFS_ICACHE_MAX]. */
static guint icache_max(const struct sfs_fs *fs)
{
	uint64_t n = fs->cfg.mem_bytes / 8 / sizeof(struct sfs_inode);

	return (guint)CLAMP(n, SFS_ICACHE_MIN, SFS_ICACHE_MAX);
}

static void icache_trim(struct sfs_fs *fs)
{
	guint max = icache_max(fs);

	while (fs->ilru.length > max) {
		GList *l = g_queue_peek_head_link(&fs->ilru);
		inode_evict(fs, l->data);
	}
}

/* Copy inode ino's slot as it is on disk (through the cache). */
static int slot_read(struct sfs_fs *fs, sfs_ino_t ino, struct sfs_dinode *out)
{
	struct sfs_buf *b;
	sfs_blk_t blk;
	uint32_t off;
	int rc;

	memset(out, 0, sizeof(*out));
	/* never used, whatever lazy_itable_init left there (read-only) */
	if (sfs_inode_slot_unzeroed(fs, ino))
		return 0;
	inode_loc(fs, ino, &blk, &off);
	rc = sfs_cache_get(fs->cache, blk, SFS_IO_INODE, &b);
	if (rc)
		return rc;
	memcpy(out, b->data + off, MIN(sizeof(*out), (size_t)fs->inode_size));
	/* metadata_csum: a never-used (all-zero) slot has no sum, as e2fsck
	 * allows */
	if (fs->csum && !sfs_csum_inode_ok(fs, ino, b->data + off)) {
		bool zero = true;

		for (uint32_t i = 0; i < fs->inode_size && zero; i++)
			zero = !b->data[off + i];
		if (!zero) {
			sfs_cache_put(fs->cache, b);
			sfs_fs_error(fs, -EIO, "inode %u: checksum mismatch",
				     ino);
			return -SFS_EFSBADCRC;
		}
	}
	sfs_cache_put(fs->cache, b);
	return 0;
}

/* A live inode: a mode, links, no deletion time. */
static bool slot_live(const struct sfs_dinode *d)
{
	return d->i_mode != 0 && sfs_le16(d->i_links_count) != 0 &&
	       d->i_dtime == 0;
}

/*
 * sfs_iget, or with `orphan` an inode named by the on-disk orphan list: in
 * use (a mode) but possibly without links, its i_dtime the next link.
 */
static int iget_slot(struct sfs_fs *fs, sfs_ino_t ino, bool orphan,
		     struct sfs_inode **out)
{
	struct sfs_inode *ip;
	int rc;

	if (ino == 0 || ino > sfs_le32(fs->sb.s_inodes_count) ||
	    (ino < SFS_FIRST_INO && ino != SFS_ROOT_INO))
		return -ESTALE;
	ip = g_hash_table_lookup(fs->icache, GUINT_TO_POINTER(ino));
	if (ip) {
		if (ip->deleted)
			return -ESTALE;
		if (ip->lru_link.data) {
			g_queue_unlink(&fs->ilru, &ip->lru_link);
			ip->lru_link.data = NULL;
		}
		ip->refs++;
		*out = ip;
		return 0;
	}
	ip = g_new0(struct sfs_inode, 1);
	ip->ino = ino;
	rc = slot_read(fs, ino, &ip->d);
	if (rc) {
		g_free(ip);
		return rc;
	}
	if (orphan ? ip->d.i_mode == 0 : !slot_live(&ip->d)) {
		g_free(ip);
		return -ESTALE;
	}
	if (fs->inode_size > SFS_GOOD_OLD_INODE_SIZE &&
	    sfs_le16(ip->d.i_extra_isize) > fs->inode_size - 128) {
		sfs_fs_error(fs, -EIO, "inode %u: bad i_extra_isize %u", ino,
			     sfs_le16(ip->d.i_extra_isize));
		g_free(ip);
		return -EIO;
	}
	ip->refs = 1;
	g_hash_table_insert(fs->icache, GUINT_TO_POINTER(ino), ip);
	*out = ip;
	return 0;
}

int sfs_iget(struct sfs_fs *fs, sfs_ino_t ino, struct sfs_inode **out)
{
	return iget_slot(fs, ino, false, out);
}

/* ---- the orphan list (ext3_orphan_add / ext3_orphan_del) ---- */

/* Kept only where a crash is recovered from a log: ext2 (and ext4 with no
 * journal) leave a nameless inode to e2fsck. */
static bool orphans_kept(const struct sfs_fs *fs)
{
	return sfs_jnl_journaled(fs->jnl) && !fs->ro && !fs->error;
}

/* ip has no name: put it at the head of the list, in the same
 * transaction as the change that took its last link. */
static void orphan_add(struct sfs_fs *fs, struct sfs_inode *ip)
{
	if (ip->orphan || !orphans_kept(fs))
		return;
	ip->d.i_dtime = fs->sb.s_last_orphan;
	fs->sb.s_last_orphan = sfs_cpu_to_le32(ip->ino);
	fs->sb_dirty = true;
	ip->orphan_link.data = ip;
	g_queue_push_head_link(&fs->orphans, &ip->orphan_link);
	ip->orphan = true;
	if (sfs_inode_dirty(fs, ip))
		sfs_fs_error(fs, -EIO,
			     "inode %u: cannot write its orphan "
			     "link",
			     ip->ino);
}

/* Take ip off the list: its predecessor (or the superblock) now names
 * the inode after it. */
static void orphan_del(struct sfs_fs *fs, struct sfs_inode *ip)
{
	GList *l = &ip->orphan_link;

	if (!ip->orphan)
		return;
	if (!l->prev) {
		fs->sb.s_last_orphan = ip->d.i_dtime;
		fs->sb_dirty = true;
	} else {
		struct sfs_inode *prev = l->prev->data;

		prev->d.i_dtime = ip->d.i_dtime;
		if (sfs_inode_dirty(fs, prev))
			sfs_fs_error(fs, -EIO,
				     "inode %u: cannot write its "
				     "orphan link",
				     prev->ino);
	}
	g_queue_unlink(&fs->orphans, l);
	ip->orphan = false;
	ip->d.i_dtime = 0;
}

void sfs_orphan_linked(struct sfs_fs *fs, struct sfs_inode *ip)
{
	orphan_del(fs, ip);
	if (fs->knameless)
		g_hash_table_remove(fs->knameless, GUINT_TO_POINTER(ip->ino));
	ip->linkable = false;
}

/* Does the orphan list hold together: inodes in the table, in use, no
 * loop?  0, or -EIO with the inode that breaks it in *bad. */
static int orphan_list_check(struct sfs_fs *fs, sfs_ino_t *bad)
{
	uint32_t max = sfs_le32(fs->sb.s_inodes_count);
	GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
	sfs_ino_t ino = sfs_le32(fs->sb.s_last_orphan);
	struct sfs_dinode d;
	int rc = 0;

	while (ino && rc == 0) {
		*bad = ino;
		if (ino < SFS_FIRST_INO || ino > max ||
		    !g_hash_table_add(seen, GUINT_TO_POINTER(ino)))
			rc = -EIO;
		else if ((rc = slot_read(fs, ino, &d)) == 0 && d.i_mode == 0)
			rc = -EIO;
		else
			ino = sfs_le32(d.i_dtime);
	}
	g_hash_table_destroy(seen);
	return rc;
}

/*
 * Mount: finish what a crash left on the orphan list (ext3_orphan_cleanup).
 * An inode there without links lost its last name while in use: it is
 * freed now.  One with links was being truncated (the kernel lists those
 * too): its blocks past i_size go.  A list that leaves the inode table,
 * names a free inode or loops is an error, and the list is left alone.
 * The number of inodes dealt with, or -errno.
 */
static int orphan_cleanup(struct sfs_fs *fs)
{
	sfs_ino_t ino = sfs_le32(fs->sb.s_last_orphan), bad = 0;
	GPtrArray *held;
	int rc, n;

	if (!ino || fs->ro)
		return 0;
	rc = orphan_list_check(fs, &bad);
	if (rc) {
		sfs_fs_error(fs, -EIO, "the orphan list is broken at inode %u",
			     bad);
		return rc;
	}
	held = g_ptr_array_new();
	while (ino) {
		struct sfs_inode *ip;

		rc = iget_slot(fs, ino, true, &ip);
		if (rc)
			break;
		g_ptr_array_add(held, ip);
		ip->orphan_link.data = ip;
		g_queue_push_tail_link(&fs->orphans, &ip->orphan_link);
		ip->orphan = true;
		ino = sfs_le32(ip->d.i_dtime);
	}
	for (guint i = 0; i < held->len && rc == 0; i++) {
		struct sfs_inode *ip = held->pdata[i];

		if (sfs_i_nlink(ip) == 0)
			continue; /* freed by its sfs_iput below */
		orphan_del(fs, ip);
		rc = sfs_map_free_from(
		    fs, ip,
		    (uint32_t)((sfs_i_size(ip) + fs->bs - 1) >> fs->bs_log));
		if (rc == 0)
			rc = sfs_inode_dirty(fs, ip);
	}
	n = (int)held->len;
	/* in list order: each nameless inode is the head when it is freed */
	for (guint i = 0; i < held->len; i++)
		sfs_iput(fs, held->pdata[i]);
	g_ptr_array_free(held, TRUE);
	return rc ? rc : n;
}

/* Free inode ip on disk: blocks, xattrs, bitmap bit, counts. */
static int inode_free(struct sfs_fs *fs, struct sfs_inode *ip)
{
	uint32_t g = (ip->ino - 1) / fs->ipg;
	uint32_t idx = (ip->ino - 1) % fs->ipg;
	bool dir = sfs_i_isdir(ip);
	struct timespec now;
	struct sfs_buf *b;
	int rc;

	sfs_da_drop(fs, ip); /* unplaced data dies with the file */
	orphan_del(fs, ip);
	if (fs->knameless)
		g_hash_table_remove(fs->knameless, GUINT_TO_POINTER(ip->ino));
	/* Only files, directories and slow symlinks own blocks: a device's
	 * i_block holds its number, a fast symlink's its target. */
	uint32_t type = sfs_i_mode(ip) & SFS_S_IFMT;
	if (type == SFS_S_IFREG || type == SFS_S_IFDIR ||
	    (type == SFS_S_IFLNK && !sfs_i_fast_symlink(ip))) {
		rc = sfs_map_free_from(fs, ip, 0);
		if (rc)
			return rc;
	}
	rc = sfs_xattr_drop(fs, ip);
	if (rc)
		return rc;
	sfs_now(fs, &now);
	ip->d.i_dtime = sfs_cpu_to_le32((uint32_t)now.tv_sec);
	ip->d.i_size = 0;
	ip->d.i_size_high = 0;
	sfs_i_set_nlink(ip, 0);
	rc = sfs_inode_dirty(fs, ip);
	if (rc)
		return rc;
	rc = inode_bitmap(fs, g, &b);
	if (rc)
		return rc;
	if (!bit_test(b->data, idx)) {
		sfs_cache_put(fs->cache, b);
		sfs_fs_error(fs, -EIO, "freeing inode %u: already free",
			     ip->ino);
		return -EIO;
	}
	bit_clear(b->data, idx);
	sfs_csum_bitmap_set(fs, g, true, b->data);
	sfs_meta_dirty(fs, b);
	sfs_cache_put(fs->cache, b);
	fs->gd[g].bg_free_inodes_count =
	    sfs_cpu_to_le16(sfs_le16(fs->gd[g].bg_free_inodes_count) + 1);
	if (dir)
		fs->gd[g].bg_used_dirs_count =
		    sfs_cpu_to_le16(sfs_le16(fs->gd[g].bg_used_dirs_count) - 1);
	fs->gd_dirty = true;
	ip->deleted = true;
	return 0;
}

void sfs_iput(struct sfs_fs *fs, struct sfs_inode *ip)
{
	assert(ip->refs > 0);
	/* A nameless inode is on the orphan list from the operation that
	 * took its last name until the one that frees it, as ext3_unlink
	 * lists it at once: whoever else still uses it, a crash in between
	 * leaves it where recovery finds it.  Freed here and now, it comes
	 * off again in the same operation. */
	if (!ip->deleted && sfs_i_nlink(ip) == 0)
		orphan_add(fs, ip);
	if (--ip->refs > 0)
		return;
	if (ip->opens > 0)
		return;
	/* nameless but still held by the kernel: freed at its forget */
	if (!ip->deleted && sfs_i_nlink(ip) == 0 && fs->klookups &&
	    g_hash_table_contains(fs->klookups, GUINT_TO_POINTER(ip->ino))) {
		g_hash_table_add(fs->knameless, GUINT_TO_POINTER(ip->ino));
		return;
	}
	if (ip->deleted || sfs_i_nlink(ip) == 0) {
		if (!ip->deleted && !fs->ro) {
			int rc = inode_free(fs, ip);
			if (rc)
				sfs_fs_error(fs, rc, "could not free inode %u",
					     ip->ino);
		}
		inode_evict(fs, ip);
		return;
	}
	/* an inode holding delayed blocks stays off the LRU (never evicted)
	 * until they are placed: placing takes and drops a reference */
	if (ip->da)
		return;
	ip->lru_link.data = ip;
	g_queue_push_tail_link(&fs->ilru, &ip->lru_link);
	icache_trim(fs);
}

/* Is ip nameless, unused by the engine and held only by the kernel? */
static bool held_only_by_kernel(struct sfs_inode *ip)
{
	return !ip->deleted && ip->refs == 0 && ip->opens == 0 &&
	       sfs_i_nlink(ip) == 0;
}

void sfs_kernel_ref(struct sfs_fs *fs, struct sfs_inode *ip)
{
	gpointer key = GUINT_TO_POINTER(ip->ino);
	gsize held;

	if (!fs->klookups)
		return;
	held = GPOINTER_TO_SIZE(g_hash_table_lookup(fs->klookups, key));
	g_hash_table_insert(fs->klookups, key, GSIZE_TO_POINTER(held + 1));
}

void sfs_fs_count_lookups(struct sfs_fs *fs)
{
	sfs_lock(fs);
	if (!fs->klookups) {
		fs->klookups = g_hash_table_new(g_direct_hash, g_direct_equal);
		fs->kghosts = g_hash_table_new(g_direct_hash, g_direct_equal);
		fs->knameless = g_hash_table_new(g_direct_hash, g_direct_equal);
	}
	sfs_unlock(fs);
}

void sfs_forget(struct sfs_fs *fs, sfs_ino_t ino, uint64_t n)
{
	gpointer key = GUINT_TO_POINTER(ino);
	struct sfs_inode *ip;
	gsize held;

	if (!fs)
		return;
	/* a verb's begin, but not a workload operation: not counted */
	sfs_lock(fs);
	fs_tick(fs);
	if (!fs->klookups)
		goto out;
	/* first the references to an earlier inode of this number */
	held = GPOINTER_TO_SIZE(g_hash_table_lookup(fs->kghosts, key));
	if (held) {
		gsize paid = MIN(held, n);

		if (held > paid)
			g_hash_table_insert(fs->kghosts, key,
					    GSIZE_TO_POINTER(held - paid));
		else
			g_hash_table_remove(fs->kghosts, key);
		n -= paid;
		if (n == 0)
			goto out;
	}
	held = GPOINTER_TO_SIZE(g_hash_table_lookup(fs->klookups, key));
	if (held > n) {
		g_hash_table_insert(fs->klookups, key,
				    GSIZE_TO_POINTER(held - n));
		goto out;
	}
	/* the last reference (or more than were counted: forget them all) */
	g_hash_table_remove(fs->klookups, key);
	ip = g_hash_table_lookup(fs->icache, key);
	if (ip && held_only_by_kernel(ip)) {
		ip->refs = 1;
		sfs_iput(fs, ip); /* frees it */
	}
out:
	sfs_op_end(fs); /* a freed inode ends a journal operation */
}

unsigned sfs_reclaim_unlinked_locked(struct sfs_fs *fs)
{
	GHashTableIter it;
	gpointer key;
	GPtrArray *gone;
	unsigned n;

	if (!fs->knameless || g_hash_table_size(fs->knameless) == 0)
		return 0;
	gone = g_ptr_array_new();
	g_hash_table_iter_init(&it, fs->knameless);
	while (g_hash_table_iter_next(&it, &key, NULL)) {
		struct sfs_inode *ip = g_hash_table_lookup(fs->icache, key);
		gsize count, ghost;

		g_hash_table_iter_remove(&it); /* an open puts it back later */
		if (!ip || !held_only_by_kernel(ip))
			continue;
		count =
		    GPOINTER_TO_SIZE(g_hash_table_lookup(fs->klookups, key));
		ghost = GPOINTER_TO_SIZE(g_hash_table_lookup(fs->kghosts, key));
		g_hash_table_insert(fs->kghosts, key,
				    GSIZE_TO_POINTER(ghost + count));
		g_hash_table_remove(fs->klookups, key);
		g_ptr_array_add(gone, ip);
	}
	for (guint i = 0; i < gone->len; i++) {
		struct sfs_inode *ip = gone->pdata[i];

		ip->refs = 1;
		sfs_iput(fs, ip); /* frees it */
	}
	n = gone->len;
	g_ptr_array_free(gone, TRUE);
	return n;
}

unsigned sfs_reclaim_unlinked(struct sfs_fs *fs)
{
	unsigned n;

	if (!fs)
		return 0;
	sfs_lock(fs);
	fs_tick(fs);
	n = sfs_reclaim_unlinked_locked(fs);
	sfs_op_end(fs);
	return n;
}

#define SFS_TOPDIR_FL_ 0x00020000 /* EXT3_TOPDIR_FL: Orlov top of a tree */

/*
 * Orlov directory placement (ext3 find_group_orlov, L2.6.32; doc/
 * allocators.md).  Top-level directories (parent root or TOPDIR): from a
 * seeded random group, the one with the fewest directories among groups
 * with at least the average free inodes and blocks.  Others: the first
 * group from the parent's that is not crowded with directories nor short of
 * inodes or blocks.  Fallback: a group with >= average free inodes, then any
 * with a free inode.  -ENOSPC when no inode is free.
 */
static int find_group_orlov(struct sfs_fs *fs, struct sfs_inode *dir,
			    uint32_t *g_out)
{
	uint32_t ng = fs->groups;
	uint32_t parent = dir ? (dir->ino - 1) / fs->ipg : 0;
	uint64_t freei = 0, freeb = 0, ndirs = 0;
	int64_t avefreei, avefreeb;

	for (uint32_t g = 0; g < ng; g++) {
		freei += sfs_le16(fs->gd[g].bg_free_inodes_count);
		freeb += sfs_le16(fs->gd[g].bg_free_blocks_count);
		ndirs += sfs_le16(fs->gd[g].bg_used_dirs_count);
	}
	avefreei = (int64_t)(freei / ng);
	avefreeb = (int64_t)(freeb / ng);

	if (!dir || dir->ino == SFS_ROOT_INO ||
	    (sfs_le32(dir->d.i_flags) & SFS_TOPDIR_FL_)) {
		uint32_t start =
		    (uint32_t)g_rand_int_range(fs->rand, 0, (gint32)ng);
		uint32_t best_ndir = fs->ipg;
		int best = -1;

		for (uint32_t i = 0; i < ng; i++) {
			uint32_t g = (start + i) % ng;
			const struct sfs_dgroup *gd = &fs->gd[g];

			if (sfs_le16(gd->bg_used_dirs_count) >= best_ndir ||
			    sfs_le16(gd->bg_free_inodes_count) < avefreei ||
			    sfs_le16(gd->bg_free_blocks_count) < avefreeb)
				continue;
			best = (int)g;
			best_ndir = sfs_le16(gd->bg_used_dirs_count);
		}
		if (best >= 0 && fs->gd[best].bg_free_inodes_count) {
			*g_out = (uint32_t)best;
			return 0;
		}
	} else {
		int64_t max_dirs = (int64_t)(ndirs / ng) + fs->ipg / 16;
		int64_t min_inodes = avefreei - fs->ipg / 4;
		int64_t min_blocks = avefreeb - fs->bpg / 4;

		for (uint32_t i = 0; i < ng; i++) {
			uint32_t g = (parent + i) % ng;
			const struct sfs_dgroup *gd = &fs->gd[g];

			if (sfs_le16(gd->bg_used_dirs_count) >= max_dirs ||
			    sfs_le16(gd->bg_free_inodes_count) < min_inodes ||
			    sfs_le16(gd->bg_free_blocks_count) < min_blocks ||
			    !gd->bg_free_inodes_count)
				continue;
			*g_out = g;
			return 0;
		}
	}
	for (uint32_t i = 0; i < ng; i++) {
		uint32_t g = (parent + i) % ng;
		uint32_t fi = sfs_le16(fs->gd[g].bg_free_inodes_count);

		if (fi && fi >= avefreei) {
			*g_out = g;
			return 0;
		}
	}
	for (uint32_t i = 0; i < ng; i++) {
		uint32_t g = (parent + i) % ng;

		if (fs->gd[g].bg_free_inodes_count) {
			*g_out = g;
			return 0;
		}
	}
	return -ENOSPC;
}

/*
 * The group for a new inode.  Directories: Orlov (dirs=orlov), or ext2's
 * oldalloc: among groups with at least the average number of free inodes,
 * the one with the most free blocks (find_group_dir).  Other inodes: the
 * parent's group if it has a free inode and a free block, else a quadratic
 * probe, else any group with a free inode (find_group_other).
 */
static int find_inode_group(struct sfs_fs *fs, struct sfs_inode *dir,
			    bool is_dir, uint32_t *g_out)
{
	uint32_t ng = fs->groups;
	uint32_t parent = dir ? (dir->ino - 1) / fs->ipg : 0;

	if (is_dir && strcmp(fs->cfg.dirs, "oldalloc") != 0)
		return find_group_orlov(fs, dir, g_out);
	if (is_dir) {
		uint64_t free_i = 0;
		int best = -1;
		for (uint32_t g = 0; g < ng; g++)
			free_i += sfs_le16(fs->gd[g].bg_free_inodes_count);
		uint64_t avg = free_i / ng;
		for (uint32_t g = 0; g < ng; g++) {
			const struct sfs_dgroup *gd = &fs->gd[g];
			if (!gd->bg_free_inodes_count ||
			    sfs_le16(gd->bg_free_inodes_count) < avg)
				continue;
			if (best < 0 ||
			    sfs_le16(gd->bg_free_blocks_count) >
				sfs_le16(fs->gd[best].bg_free_blocks_count))
				best = (int)g;
		}
		if (best >= 0) {
			*g_out = (uint32_t)best;
			return 0;
		}
	} else {
		const struct sfs_dgroup *gd = &fs->gd[parent];
		if (gd->bg_free_inodes_count && gd->bg_free_blocks_count) {
			*g_out = parent;
			return 0;
		}
		uint32_t g = (parent + (dir ? dir->ino : 0)) % ng;
		for (uint32_t step = 1; step < ng; step <<= 1) {
			g = (g + step) % ng;
			gd = &fs->gd[g];
			if (gd->bg_free_inodes_count &&
			    gd->bg_free_blocks_count) {
				*g_out = g;
				return 0;
			}
		}
	}
	for (uint32_t i = 0; i < ng; i++) {
		uint32_t g = (parent + i) % ng;
		if (fs->gd[g].bg_free_inodes_count) {
			*g_out = g;
			return 0;
		}
	}
	return -ENOSPC;
}

static void set_id(uint16_t *lo, uint16_t *hi, uint32_t id)
{
	*lo = sfs_cpu_to_le16((uint16_t)id);
	*hi = sfs_cpu_to_le16((uint16_t)(id >> 16));
}

/* Does inode ino's slot on disk hold a live inode?  1, 0, or -errno. */
static int slot_in_use(struct sfs_fs *fs, sfs_ino_t ino)
{
	struct sfs_dinode d;
	int rc = slot_read(fs, ino, &d);

	return rc ? rc : slot_live(&d);
}

int sfs_inode_alloc(struct sfs_fs *fs, struct sfs_inode *dir, uint32_t mode,
		    uint32_t uid, uint32_t gid, struct sfs_inode **out)
{
	bool is_dir = (mode & SFS_S_IFMT) == SFS_S_IFDIR;
	struct sfs_inode *ip;
	struct sfs_buf *b;
	uint32_t g, idx;
	sfs_ino_t ino;
	int rc;

	rc = find_inode_group(fs, dir, is_dir, &g);
	if (rc)
		return rc;
	rc = inode_bitmap(fs, g, &b);
	if (rc)
		return rc;
	for (idx = 0; idx < fs->ipg; idx++)
		if (!bit_test(b->data, idx))
			break;
	if (idx == fs->ipg) {
		sfs_cache_put(fs->cache, b);
		sfs_fs_error(fs, -EIO,
			     "group %u: free inode count %u but "
			     "the bitmap is full",
			     g, sfs_le16(fs->gd[g].bg_free_inodes_count));
		return -EIO;
	}
	ino = g * fs->ipg + idx + 1;
	if (ino < SFS_FIRST_INO) {
		sfs_cache_put(fs->cache, b);
		sfs_fs_error(fs, -EIO,
			     "reserved inode %u is free in the "
			     "bitmap",
			     ino);
		return -EIO;
	}
	/* A corrupt bitmap can call an inode free that is in use (cached and
	 * not deleted, or on disk with links and no deletion time): taking
	 * it would leave two files with one number. */
	ip = g_hash_table_lookup(fs->icache, GUINT_TO_POINTER(ino));
	rc = ip && !ip->deleted ? 1 : ip ? 0 : slot_in_use(fs, ino);
	if (rc) {
		sfs_cache_put(fs->cache, b);
		if (rc < 0)
			return rc;
		sfs_fs_error(fs, -EIO,
			     "inode %u is in use but free in the "
			     "bitmap",
			     ino);
		return -EIO;
	}
	/* its slot in the inode table may lie in a hole of the image file */
	rc = sfs_bdev_reserve(
	    fs->bd, (uint64_t)sfs_inode_block(fs, ino) * fs->bs, fs->bs);
	fs->host_full = rc == -ENOSPC;
	if (rc) {
		fs->host_enospc++;
		sfs_cache_put(fs->cache, b);
		return rc == -ENOSPC ? -ENOSPC : -EIO;
	}
	bit_set(b->data, idx);
	sfs_csum_bitmap_set(fs, g, true, b->data);
	sfs_meta_dirty(fs, b);
	sfs_cache_put(fs->cache, b);
	fs->gd[g].bg_free_inodes_count =
	    sfs_cpu_to_le16(sfs_le16(fs->gd[g].bg_free_inodes_count) - 1);
	group_first_use(fs, g, true, idx);
	if (is_dir)
		fs->gd[g].bg_used_dirs_count =
		    sfs_cpu_to_le16(sfs_le16(fs->gd[g].bg_used_dirs_count) + 1);
	fs->gd_dirty = true;

	/* A stale in-memory copy (freed, still referenced) must not be
	 * found again under the same number: its last sfs_iput frees it. */
	if (g_hash_table_lookup(fs->icache, GUINT_TO_POINTER(ino)))
		g_hash_table_steal(fs->icache, GUINT_TO_POINTER(ino));

	ip = g_new0(struct sfs_inode, 1);
	ip->ino = ino;
	ip->refs = 1;
	ip->d.i_mode = sfs_cpu_to_le16((uint16_t)mode);
	set_id(&ip->d.i_uid, &ip->d.i_uid_high, uid);
	set_id(&ip->d.i_gid, &ip->d.i_gid_high, gid);
	ip->d.i_generation = sfs_cpu_to_le32(g_rand_int(fs->rand));
	if (fs->inode_size > SFS_GOOD_OLD_INODE_SIZE)
		ip->d.i_extra_isize = sfs_cpu_to_le16(SFS_EXTRA_ISIZE);
	sfs_i_touch(fs, ip, SFS_SET_ATIME | SFS_SET_MTIME | SFS_SET_CTIME);
	ip->d.i_crtime = ip->d.i_ctime;
	ip->d.i_crtime_extra = ip->d.i_ctime_extra;
	g_hash_table_insert(fs->icache, GUINT_TO_POINTER(ino), ip);
	rc = sfs_inode_dirty(fs, ip);
	if (rc) {
		sfs_iput(fs, ip);
		return rc;
	}
	*out = ip;
	return 0;
}

/* ---- open, sync, close ---- */

static void inode_free_cb(gpointer p)
{
	struct sfs_inode *ip = p;

	sfs_dir_index_free(ip->dindex);
	if (ip->dirty_runs)
		g_array_free(ip->dirty_runs, TRUE);
	g_free(ip);
}

/*
 * The inodes still cached when the filesystem goes may hold state outside
 * the table: delayed blocks (an unmount that could not write them: a
 * journaled filesystem in error) and placement state (a file given an xattr
 * block but never opened).  Dropped as on eviction, while the cache and
 * the placement model are still there.
 */
static void icache_drop_state(struct sfs_fs *fs)
{
	GHashTableIter it;
	gpointer ip;

	if (!fs->icache || !fs->alloc)
		return;
	g_hash_table_iter_init(&it, fs->icache);
	while (g_hash_table_iter_next(&it, NULL, &ip)) {
		sfs_da_drop(fs, ip);
		sfs_alloc_release_inode(fs, ip);
	}
}

static void fs_free(struct sfs_fs *fs)
{
	flusher_stop(fs);
	icache_drop_state(fs);
	if (fs->jnl)
		sfs_jnl_free(fs->jnl); /* before the cache it pins buffers in */
	fs->jnl = NULL;
	if (fs->stats)
		sfs_stats_free(fs->stats);
	if (fs->bd && fs->iolog)
		sfs_timedev_set_log(fs->bd, NULL, NULL);
	if (fs->iolog)
		sfs_iolog_close(fs->iolog);
	if (fs->alloc) {
		if (fs->alloc->ops->fini)
			fs->alloc->ops->fini(fs->alloc);
		g_free(fs->alloc);
	}
	/* the LRU links live inside the inodes the table frees */
	g_queue_init(&fs->ilru);
	g_queue_init(&fs->orphans); /* its links live in the inodes */
	if (fs->icache)
		g_hash_table_destroy(fs->icache);
	if (fs->klookups)
		g_hash_table_destroy(fs->klookups);
	if (fs->kghosts)
		g_hash_table_destroy(fs->kghosts);
	if (fs->knameless)
		g_hash_table_destroy(fs->knameless);
	if (fs->cache)
		sfs_cache_free(fs->cache);
	if (fs->bd)
		sfs_bdev_close(fs->bd);
	if (fs->jdev)
		sfs_bdev_close(fs->jdev);
	if (fs->rand)
		g_rand_free(fs->rand);
	if (fs->clock)
		sfs_clock_free(fs->clock);
	g_free(fs->gd);
	g_free(fs->gd_tail);
	g_free(fs->err_msg);
	sfs_cond_clear(&fs->commit_cond);
	sfs_mutex_clear(&fs->lock);
	g_free(fs);
}

/*
 * Write superblock, descriptors and all dirty buffers; flush the device.
 * Journaled: they commit first (reason why), then everything not pinned
 * goes home; the log keeps the transactions until checkpoint.
 */
static int fs_sync_locked(struct sfs_fs *fs, enum sfs_commit_reason why)
{
	int rc;

	if (fs->ro)
		return 0;
	/* delayed data is placed first: that changes the metadata below.
	 * If some cannot be placed (error state, device error), what is
	 * already in the cache is still written. */
	int darc = sfs_da_flush_all(fs, SFS_DA_SYNC);
	rc = write_super_and_gdt(fs);
	if (rc)
		return rc;
	if (sfs_jnl_journaled(fs->jnl) && !fs->jnl_off) {
		rc = sfs_jnl_commit(fs->jnl, why);
		if (rc)
			return rc;
	}
	rc = sfs_cache_sync(fs->cache);
	if (!rc && !darc)
		fs->wb_host_full = false;
	return rc ? rc : darc;
}

int sfs_fs_fsync_locked(struct sfs_fs *fs)
{
	return fs_sync_locked(fs, SFS_COMMIT_FSYNC);
}

int sfs_fs_sync(struct sfs_fs *fs)
{
	int rc;

	if (!fs)
		return -EINVAL;
	sfs_op_begin(fs, SFS_OP_SYNC);
	rc = fs_sync_locked(fs, SFS_COMMIT_SYNC);
	sfs_op_end(fs);
	return rc;
}

static const char *const op_names[SFS_OP_COUNT] = {
    [SFS_OP_LOOKUP] = "lookup",	      [SFS_OP_GETATTR] = "getattr",
    [SFS_OP_SETATTR] = "setattr",     [SFS_OP_MKNOD] = "mknod",
    [SFS_OP_MKDIR] = "mkdir",	      [SFS_OP_SYMLINK] = "symlink",
    [SFS_OP_LINK] = "link",	      [SFS_OP_UNLINK] = "unlink",
    [SFS_OP_RMDIR] = "rmdir",	      [SFS_OP_RENAME] = "rename",
    [SFS_OP_READLINK] = "readlink",   [SFS_OP_OPEN] = "open",
    [SFS_OP_RELEASE] = "release",     [SFS_OP_READ] = "read",
    [SFS_OP_WRITE] = "write",	      [SFS_OP_FSYNC] = "fsync",
    [SFS_OP_READDIR] = "readdir",     [SFS_OP_STATFS] = "statfs",
    [SFS_OP_GETXATTR] = "getxattr",   [SFS_OP_SETXATTR] = "setxattr",
    [SFS_OP_LISTXATTR] = "listxattr", [SFS_OP_REMOVEXATTR] = "removexattr",
    [SFS_OP_SYNC] = "sync",	      [SFS_OP_FALLOCATE] = "fallocate",
    [SFS_OP_LSEEK] = "lseek",
};

/* Stats section "ops": the workload as the engine saw it. */
static void ops_source(void *ctx, struct sfs_stats_writer *w)
{
	struct sfs_fs *fs = ctx;
	struct sfs_bdev_counters dev;
	uint64_t total = 0;

	sfs_lock(fs);
	sfs_stats_begin(w, "by_type");
	for (int i = 0; i < SFS_OP_COUNT; i++) {
		sfs_stats_put_u64(w, op_names[i], fs->ops[i]);
		total += fs->ops[i];
	}
	sfs_stats_end(w);
	sfs_stats_put_u64(w, "total", total);
	sfs_stats_put_u64(w, "bytes_read", fs->bytes_read);
	sfs_stats_put_u64(w, "bytes_written", fs->bytes_written);
	sfs_stats_put_u64(w, "atime_updates", fs->atime_updates);
	sfs_bdev_counters(fs->bd, &dev);
	/* device bytes written per byte the workload wrote */
	sfs_stats_put_double(w, "write_amplification",
			     fs->bytes_written
				 ? (double)dev.bytes[SFS_IO_WRITE] /
				       (double)fs->bytes_written
				 : 0.0);
	sfs_stats_put_u64(w, "allocator_bitmap_bytes_scanned",
			  fs->alloc ? fs->alloc->words_scanned : 0);
	sfs_stats_put_u64(w, "clock_ns", sfs_clock_now_ns(fs->clock));
	sfs_unlock(fs);
}

/* The write-back policy cfg asks for: a preset (vm=) with single knobs
 * overriding it.  0, or -EINVAL with *err. */
int sfs_fs_cache_policy(const struct sfs_config *cfg,
			struct sfs_cache_policy *p, char **err)
{
	int rc = sfs_cache_policy_preset(cfg->vm, p);

	if (rc) {
		*err = g_strdup_printf("unknown vm preset '%s' (valid: %s)",
				       cfg->vm, sfs_cache_policy_names());
		return rc;
	}
	if (cfg->dirty_ratio)
		p->dirty_ratio = cfg->dirty_ratio;
	if (cfg->dirty_background_ratio)
		p->dirty_background_ratio = cfg->dirty_background_ratio;
	if (cfg->dirty_bytes)
		p->dirty_bytes = cfg->dirty_bytes;
	if (cfg->dirty_background_bytes)
		p->dirty_background_bytes = cfg->dirty_background_bytes;
	if (cfg->dirty_expire_cs)
		p->dirty_expire_cs = cfg->dirty_expire_cs;
	if (cfg->dirty_writeback_cs)
		p->dirty_writeback_cs = cfg->dirty_writeback_cs;
	return 0;
}

static int setup_cache_policy(struct sfs_fs *fs, char **err)
{
	struct sfs_cache_policy p;
	int rc;

	rc = sfs_fs_cache_policy(&fs->cfg, &p, err);
	if (rc)
		return rc;
	sfs_cache_set_clock(fs->cache, fs->clock);
	rc = sfs_cache_set_policy(fs->cache, &p);
	if (rc)
		*err = g_strdup("inconsistent write-back knobs (dirty ratios "
				"or bytes)");
	return rc;
}

/* Stats section "journal". */
static void jnl_source(void *ctx, struct sfs_stats_writer *w)
{
	struct sfs_fs *fs = ctx;

	sfs_lock(fs);
	if (fs->jnl)
		sfs_jnl_stats(fs->jnl, w);
	sfs_unlock(fs);
}

/* Choose and open the journal policy (data=; default: ordered when the
 * image has a journal, else none), without writing anything. */
static int setup_journal(struct sfs_fs *fs, char **err)
{
	const struct sfs_config *cfg = &fs->cfg;
	bool has =
	    sfs_le32(fs->sb.s_feature_compat) & SFS_FEATURE_COMPAT_HAS_JOURNAL;
	const char *mode = cfg->journal;
	const struct sfs_jnl_ops *ops;
	struct sfs_jnl_params p = {0};
	int rc;

	if (!mode[0] || strcmp(mode, "auto") == 0)
		ops = sfs_jnl_auto(has);
	else
		ops = sfs_jnl_find(mode);
	if (!ops) {
		GString *valid = g_string_new(NULL);
		const struct sfs_jnl_ops *o;

		for (unsigned i = 0; (o = sfs_jnl_nth(i)); i++)
			g_string_append_printf(valid, "%s%s", i ? ", " : "",
					       o->name);
		*err = g_strdup_printf("unknown journal mode '%s' (valid: %s)",
				       mode, valid->str);
		g_string_free(valid, TRUE);
		return -EINVAL;
	}
	if (fs->ro)
		ops = sfs_jnl_auto(false); /* nothing is written */
	if (sfs_jnl_keeps_log(ops) && cfg->journal_dev[0]) {
		rc = sfs_bdev_open_file(cfg->journal_dev,
					cfg->direct ? SFS_BDEV_DIRECT : 0, 0,
					&fs->jdev);
		if (rc) {
			*err =
			    g_strdup_printf("cannot open journal device "
					    "'%s': %s",
					    cfg->journal_dev, g_strerror(-rc));
			return rc;
		}
	}
	p.commit_interval_ns = (sfs_ns_t)cfg->commit_s * SFS_NS_PER_S;
	p.max_txn_blocks = cfg->journal_max_txn;
	rc = sfs_jnl_open(fs, ops, &p, fs->jdev, &fs->jnl, err);
	if (rc)
		return rc;
	sfs_stats_add_source(fs->stats, "journal", jnl_source, fs);
	return 0;
}

static void config_put(void *ctx, const char *name, const char *value)
{
	sfs_stats_put_str(ctx, name, value);
}

/* Stats section "config": the knobs of the run (not where it writes), so
 * that simfs stats --diff shows what differed in the setup. */
static void config_source(void *ctx, struct sfs_stats_writer *w)
{
	struct sfs_fs *fs = ctx;
	struct sfs_config cfg;

	sfs_fs_get_config(fs, &cfg);
	sfs_config_each(&cfg, false, config_put, w);
}

/*
 * The clock, the timing device over the backing device, the I/O log and
 * the stats of one run, as cfg says.  On success fs->bd is the timing
 * device (which owns the device below).
 */
static int setup_measurement(struct sfs_fs *fs, char **err)
{
	const struct sfs_config *cfg = &fs->cfg;
	struct sfs_timedev_opts o = {0};
	struct sfs_bdev *top;
	int rc;

	if (!cfg->clock[0] || strcmp(cfg->clock, "virtual") == 0) {
		fs->clock = sfs_clock_new_virtual();
		o.mode = SFS_TIMEDEV_EMULATE; /* service time moves the clock */
	} else {
		rc = sfs_timedev_mode_parse(cfg->clock, &o.mode);
		if (rc) {
			*err = g_strdup_printf("unknown clock '%s' (valid: "
					       "virtual, account, emulate)",
					       cfg->clock);
			return rc;
		}
		fs->clock = sfs_clock_new_real();
		fs->time_base_ns = sfs_clock_wall_ns();
	}
	fs->stats = sfs_stats_new();
	sfs_stats_add_source(fs->stats, "ops", ops_source, fs);
	sfs_stats_add_source(fs->stats, "alloc_layout", sfs_frag_stats_source,
			     fs);
	if (strcmp(cfg->device, "none") == 0) {
		/* no timing device: what reached the backing device only */
		if (cfg->iolog_path[0]) {
			*err = g_strdup("iolog= needs a device model "
					"(device=none has none)");
			return -EINVAL;
		}
		sfs_stats_add_bdev(fs->stats, "device", fs->bd);
		return 0;
	}
	o.model = cfg->device[0] ? cfg->device : "ideal";
	o.sched = cfg->sched[0] ? cfg->sched : NULL;
	rc = sfs_timedev_new(fs->bd, fs->clock, &o, &top, err);
	if (rc)
		return rc;
	fs->bd = top;
	fs->defer_waits = !sfs_clock_is_virtual(fs->clock);
	if (cfg->iolog_path[0]) {
		rc = sfs_iolog_open(cfg->iolog_path, &fs->iolog);
		if (rc) {
			*err =
			    g_strdup_printf("cannot open the I/O log '%s': "
					    "%s",
					    cfg->iolog_path, g_strerror(-rc));
			return rc;
		}
		/* which clock the times are on (simfs plot names it) */
		sfs_iolog_note(fs->iolog, "clock", cfg->clock);
		sfs_timedev_set_log(fs->bd, sfs_iolog_timedev_log, fs->iolog);
	}
	sfs_stats_add_timedev(fs->stats, "device", fs->bd);
	return 0;
}

/* Stats section "alloc": the placement model's own counters. */
static void alloc_source(void *ctx, struct sfs_stats_writer *w)
{
	struct sfs_fs *fs = ctx;

	sfs_lock(fs);
	sfs_stats_put_str(w, "model", fs->cfg.alloc);
	if (fs->alloc && fs->alloc->ops->stats)
		fs->alloc->ops->stats(fs->alloc, w);
	sfs_unlock(fs);
}

static const char *const da_why_names[SFS_DA_NWHY] = {
    [SFS_DA_WRITEBACK] = "writeback", [SFS_DA_FSYNC] = "fsync",
    [SFS_DA_SYNC] = "sync",	      [SFS_DA_RENAME] = "rename",
    [SFS_DA_CLOSE] = "close",	      [SFS_DA_DIRECT] = "direct",
    [SFS_DA_ENOSPC] = "enospc",	      [SFS_DA_FALLOC] = "fallocate",
};

/* Stats section "delalloc": reservations and when blocks were placed. */
static void da_source(void *ctx, struct sfs_stats_writer *w)
{
	struct sfs_fs *fs = ctx;
	const struct sfs_da_counters *c = &fs->da_ctr;

	sfs_lock(fs);
	sfs_stats_put_bool(w, "enabled", fs->da_on);
	sfs_stats_put_bool(w, "auto_da_alloc", !fs->cfg.no_auto_da_alloc);
	sfs_stats_put_u64(w, "reserved_blocks", c->reserved_blocks);
	sfs_stats_put_u64(w, "placed_blocks", c->placed_blocks);
	sfs_stats_put_u64(w, "placed_runs", c->placed_runs);
	sfs_stats_put_double(w, "mean_run_blocks",
			     c->placed_runs ? (double)c->placed_blocks /
						  (double)c->placed_runs
					    : 0.0);
	sfs_stats_put_u64(w, "died_blocks", c->died_blocks);
	sfs_stats_put_u64(w, "failed_blocks", c->failed_blocks);
	sfs_stats_put_u64(w, "enospc_at_write", c->enospc);
	sfs_stats_put_u64(w, "delayed_blocks_now", fs->da_blocks);
	sfs_stats_put_u64(w, "meta_reserved_now", fs->da_meta);
	sfs_stats_put_u64(w, "meta_reserved_peak", c->meta_reserved_peak);
	for (int i = 0; i < SFS_DA_NWHY; i++) {
		char name[48];

		g_snprintf(name, sizeof(name), "placed_by_%s_blocks",
			   da_why_names[i]);
		sfs_stats_put_u64(w, name, c->flush_blocks[i]);
	}
	sfs_unlock(fs);
}

/* Hand cfg's knobs of the running placement model to it (its configure
 * verb).  0, or -EINVAL with *err. */
static int alloc_configure(struct sfs_fs *fs, const struct sfs_config *cfg,
			   char **err)
{
	const struct sfs_alloc_ops *o = fs->alloc->ops;
	void *params;
	int rc;

	if (!o->configure)
		return 0;
	params = g_malloc0(o->params_size ? o->params_size : 1);
	rc = sfs_config_alloc_params(cfg, o, params, err);
	if (!rc)
		rc = o->configure(fs->alloc, params, err);
	g_free(params);
	return rc;
}

static int setup_alloc(struct sfs_fs *fs, char **err)
{
	const struct sfs_alloc_preset *p = sfs_alloc_find(fs->cfg.alloc);
	int rc;

	if (!p) {
		*err = g_strdup_printf("unknown allocator '%s' (valid: %s)",
				       fs->cfg.alloc, sfs_alloc_names());
		return -EINVAL;
	}
	fs->map = p->map;
	fs->alloc = g_new0(struct sfs_alloc, 1);
	fs->alloc->ops = p->place;
	fs->alloc->fs = fs;
	if (p->place->init) {
		rc = p->place->init(fs->alloc);
		if (rc) {
			*err = g_strdup_printf("allocator '%s' failed to "
					       "start: %s",
					       p->name, g_strerror(-rc));
			return rc;
		}
	}
	rc = alloc_configure(fs, &fs->cfg, err);
	if (rc)
		return rc;
	if (p->place->stats)
		sfs_stats_add_source(fs->stats, "alloc", alloc_source, fs);
	return 0;
}

int sfs_fs_open(struct sfs_bdev *bd, const struct sfs_config *cfg,
		struct sfs_fs **out, char **err)
{
	struct sfs_fs *fs;
	char *msg = NULL;
	uint8_t raw[SFS_SUPER_SIZE];
	int rc;

	if (!bd || !cfg || !out) {
		if (bd)
			sfs_bdev_close(bd);
		return -EINVAL;
	}
	fs = g_new0(struct sfs_fs, 1);
	sfs_mutex_init(&fs->lock);
	sfs_cond_init(&fs->commit_cond);
	g_queue_init(&fs->ilru);
	fs->cfg = *cfg;
	fs->bd = bd;
	fs->ro = cfg->ro;

	rc = setup_measurement(fs, &msg);
	if (rc)
		goto out_free;
	bd = fs->bd;
	if (sfs_bdev_size_bytes(bd) < SFS_SUPER_OFFSET + SFS_SUPER_SIZE) {
		msg = g_strdup_printf(
		    "not an ext2/3/4 image: %llu bytes, too small to "
		    "hold a superblock (bytes 1024 to 2047)",
		    (unsigned long long)sfs_bdev_size_bytes(bd));
		rc = -EINVAL;
		goto out_free;
	}
	rc =
	    sfs_bdev_read(bd, SFS_IO_SUPER, SFS_SUPER_OFFSET, raw, sizeof(raw));
	if (rc) {
		msg = g_strdup_printf("cannot read the superblock: %s",
				      g_strerror(-rc));
		goto out_free;
	}
	memcpy(&fs->sb, raw, sizeof(raw));
	if (sfs_le16(fs->sb.s_magic) == SFS_SUPER_MAGIC) {
		/* features first: they decide what the rest means */
		rc = check_unsupported(&fs->sb, &msg);
		if (rc)
			goto out_free;
	}
	if ((sfs_le32(fs->sb.s_feature_compat) &
	     SFS_FEATURE_COMPAT_HAS_JOURNAL) &&
	    sfs_le16(fs->sb.s_magic) == SFS_SUPER_MAGIC && !fs->ro) {
		/* replay the journal before trusting any metadata (a log
		 * left without needs_recovery is wiped, as jbd2 does) */
		struct sfs_bdev *jd = NULL;
		struct sfs_jrecover_info rec;
		if (cfg->journal_dev[0]) {
			rc = sfs_bdev_open_file(cfg->journal_dev, 0, 0, &jd);
			if (rc) {
				msg = g_strdup_printf("cannot open journal "
						      "device '%s': %s",
						      cfg->journal_dev,
						      g_strerror(-rc));
				goto out_free;
			}
		}
		rc = sfs_jlog_mount_recover(bd, jd, &rec, &msg);
		if (jd)
			sfs_bdev_close(jd);
		if (!rc && rec.csum_end_block)
			g_printerr("simfs: journal: %s\n", rec.csum_note);
		if (!rc)
			rc = sfs_bdev_read(bd, SFS_IO_SUPER, SFS_SUPER_OFFSET,
					   raw, sizeof(raw));
		if (rc)
			goto out_free;
		memcpy(&fs->sb, raw, sizeof(raw));
	}
	rc = check_geometry(fs, sfs_bdev_size_bytes(bd), &msg);
	if (rc)
		goto out_free;
	rc = check_features(&fs->sb, &msg);
	if (rc)
		goto out_free;
	rc = sfs_csum_setup(fs, &msg);
	if (rc)
		goto out_free;
	if (!sfs_csum_super_ok(&fs->sb)) {
		msg = g_strdup("superblock checksum mismatch (metadata_csum)");
		rc = -EINVAL;
		goto out_free;
	}
	if (sfs_clock_is_virtual(fs->clock))
		fs->time_base_ns = (sfs_ns_t)MAX(sfs_le32(fs->sb.s_wtime),
						 sfs_le32(fs->sb.s_mkfs_time)) *
				   SFS_NS_PER_S;

	rc = sfs_cache_new(bd, fs->bs, cfg->mem_bytes, &fs->cache);
	if (rc) {
		msg = g_strdup_printf("cannot set up the buffer cache: %s",
				      g_strerror(-rc));
		goto out_free;
	}
	sfs_stats_add_cache(fs->stats, "cache", fs->cache, &fs->lock);
	rc = setup_cache_policy(fs, &msg);
	if (rc)
		goto out_free;
	fs->gd = g_try_new0(struct sfs_dgroup, fs->groups);
	if (fs->desc_size > sizeof(struct sfs_dgroup))
		fs->gd_tail =
		    g_try_malloc0((size_t)fs->groups *
				  (fs->desc_size - sizeof(struct sfs_dgroup)));
	if (!fs->gd ||
	    (fs->desc_size > sizeof(struct sfs_dgroup) && !fs->gd_tail)) {
		rc = -ENOMEM;
		msg = g_strdup("out of memory for group descriptors");
		goto out_free;
	}
	rc = gdt_io(fs, false);
	if (rc) {
		msg = g_strdup_printf("cannot read the group descriptors: %s",
				      g_strerror(-rc));
		goto out_free;
	}
	rc = check_groups(fs, &msg);
	if (!rc)
		rc = init_uninit_groups(fs, &msg);
	if (rc)
		goto out_free;
	for (uint32_t g = 0; g < fs->groups; g++)
		fs->free_blocks += sfs_le16(fs->gd[g].bg_free_blocks_count);

	fs->icache = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
					   inode_free_cb);
	fs->rand = g_rand_new_with_seed(sfs_le32(fs->sb.s_mkfs_time) ^
					sfs_le32(fs->sb.s_wtime));
	rc = setup_alloc(fs, &msg);
	if (rc)
		goto out_free;

	/* The root must be a directory. */
	struct sfs_inode *root;
	rc = sfs_iget(fs, SFS_ROOT_INO, &root);
	if (rc) {
		msg = g_strdup("root inode (2) is not in use");
		rc = -EINVAL;
		goto out_free;
	}
	bool rootdir = sfs_i_isdir(root);
	sfs_iput(fs, root);
	if (!rootdir) {
		msg = g_strdup("root inode (2) is not a directory");
		rc = -EINVAL;
		goto out_free;
	}

	rc = setup_journal(fs, &msg);
	if (rc)
		goto out_free;
	sfs_da_setup(fs);
	sfs_stats_add_source(fs->stats, "delalloc", da_source, fs);
	/* last: the table and JSON start with what happened (ops) */
	sfs_stats_add_source(fs->stats, "config", config_source, fs);
	if (!fs->ro) {
		struct timespec now;
		sfs_sb_now(fs, &now);
		fs->mount_state = sfs_le16(fs->sb.s_state);
		/* ext2 clears VALID while mounted; a journaled mount keeps it
		 * and sets needs_recovery instead, before any transaction */
		fs->jnl_off = true;
		if (sfs_jnl_journaled(fs->jnl))
			fs->sb.s_feature_incompat |=
			    sfs_cpu_to_le32(SFS_FEATURE_INCOMPAT_RECOVER);
		else
			fs->sb.s_state &= sfs_cpu_to_le16(~SFS_STATE_VALID);
		fs->sb.s_mnt_count =
		    sfs_cpu_to_le16(sfs_le16(fs->sb.s_mnt_count) + 1);
		fs->sb.s_mtime = sfs_cpu_to_le32((uint32_t)now.tv_sec);
		rc = fs_sync_locked(fs, SFS_COMMIT_SYNC);
		fs->jnl_off = false;
		if (rc) {
			msg = g_strdup_printf("cannot write the superblock: "
					      "%s",
					      g_strerror(-rc));
			goto out_free;
		}
		rc = orphan_cleanup(fs);
		if (rc > 0)
			g_printerr("simfs: freed %d inode%s left on the orphan "
				   "list\n",
				   rc, rc == 1 ? "" : "s");
	}
	flusher_start(fs);
	*out = fs;
	return 0;

out_free:
	if (err)
		*err = msg;
	else
		g_free(msg);
	fs_free(fs);
	return rc;
}

/* Free inodes that were unlinked while open and are still cached. */
static void free_orphans(struct sfs_fs *fs)
{
	GHashTableIter it;
	gpointer v;
	GPtrArray *orphans = g_ptr_array_new();

	/* at unmount the kernel holds nothing any more */
	if (fs->klookups) {
		g_hash_table_remove_all(fs->klookups);
		g_hash_table_remove_all(fs->kghosts);
		g_hash_table_remove_all(fs->knameless);
	}

	g_hash_table_iter_init(&it, fs->icache);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct sfs_inode *ip = v;
		if (!ip->deleted && sfs_i_nlink(ip) == 0)
			g_ptr_array_add(orphans, ip);
	}
	for (guint i = 0; i < orphans->len; i++) {
		struct sfs_inode *ip = orphans->pdata[i];
		ip->opens = 0;
		ip->refs = 1;
		sfs_iput(fs, ip);
	}
	g_ptr_array_free(orphans, TRUE);
}

/* Write the superblock's block by itself and flush the device. */
static int write_super_alone(struct sfs_fs *fs)
{
	sfs_blk_t blk = SFS_SUPER_OFFSET / fs->bs;
	int rc = super_io(fs, true);

	if (!rc)
		rc = sfs_cache_write_blocks(fs->cache, &blk, 1);
	if (!rc)
		rc = sfs_bdev_flush(fs->bd);
	return rc;
}

/*
 * The final write-back failed part way (a full host disk under the image,
 * an I/O error), or an earlier step of the unmount did.  The superblock on
 * the device does not say "clean" (the final state is written last, and a
 * journaled image still asks for recovery), but it does not say "in
 * error" either.  Write it again, not clean and in error, so that nothing
 * trusts the image before e2fsck has looked at it (simfs umount reads the
 * state and fails).  Best effort: the device may refuse this too.
 */
static void mark_unclean_after_failed_sync(struct sfs_fs *fs, uint16_t st)
{
	st = (uint16_t)((st & ~SFS_STATE_VALID) | SFS_STATE_ERROR);
	fs->sb.s_state = sfs_cpu_to_le16(st);
	write_super_alone(fs);
}

int sfs_fs_close(struct sfs_fs *fs)
{
	int rc = 0;

	if (!fs)
		return -EINVAL;
	flusher_stop(fs);
	sfs_lock(fs);
	sfs_count_op(fs, SFS_OP_SYNC);
	if (!fs->ro && !(fs->error && sfs_jnl_journaled(fs->jnl))) {
		free_orphans(fs);
		rc = sfs_da_flush_all(fs, SFS_DA_SYNC);
		if (sfs_jnl_journaled(fs->jnl) && !rc) {
			/* commit, write everything home, empty the log */
			rc = write_super_and_gdt(fs);
			if (!rc)
				rc = sfs_jnl_close(fs->jnl);
			fs->jnl_off = true;
		}
		/* Restore the state found at mount (as ext2 does): an image
		 * that was not clean stays so until e2fsck has checked it. */
		uint16_t st = fs->mount_state;
		if (fs->error)
			st = (uint16_t)((st & ~SFS_STATE_VALID) |
					SFS_STATE_ERROR);
		/*
		 * Everything goes out and the device is flushed while the
		 * superblock still says what it said while mounted; only then
		 * the final state, in a write of its own (ext2_put_super's
		 * order).  A crash or a failure in between leaves an image
		 * that is not marked clean.
		 */
		int src = fs_sync_locked(fs, SFS_COMMIT_UNMOUNT);
		if (src == 0 && rc == 0) {
			fs->sb.s_state = sfs_cpu_to_le16(st);
			fs->sb.s_feature_incompat &=
			    sfs_cpu_to_le32(~SFS_FEATURE_INCOMPAT_RECOVER);
			src = write_super_alone(fs);
		}
		if (src < 0 || rc < 0)
			mark_unclean_after_failed_sync(fs, st);
		if (!rc)
			rc = src;
	} else if (fs->error) {
		/* journaled and inconsistent: leave the log for recovery */
		rc = -EIO;
	}
	sfs_unlock(fs);
	/* the report covers the final write-back */
	if (fs->cfg.stats_path[0]) {
		int src = sfs_stats_write_json(fs->stats, fs->cfg.stats_path);
		if (src) {
			g_printerr("simfs: cannot write stats to '%s': %s\n",
				   fs->cfg.stats_path, g_strerror(-src));
			if (!rc)
				rc = src;
		}
	}
	if (fs->report)
		sfs_stats_print_table(fs->stats, fs->report);
	if (fs->close_fn)
		fs->close_fn(fs->close_arg, fs->stats);
	fs_free(fs);
	return rc;
}

/*
 * Change knobs of the live mount (/.simfs/config): all of opts or none.
 * The config layer refuses knobs that cannot change while mounted; here
 * the clock must be real to switch account/emulate, and the device must be
 * a timing device to take a new model.  The model is built before anything
 * changes, so a bad spec leaves everything as it was.
 */
int sfs_fs_set_knobs(struct sfs_fs *fs, const char *opts, char **err)
{
	struct sfs_config next;
	enum sfs_timedev_mode mode;
	bool timed, new_mode, new_dev;
	int rc;

	if (!fs || !opts || !err)
		return -EINVAL;
	*err = NULL;
	sfs_lock(fs);
	next = fs->cfg;
	rc = sfs_config_parse_runtime(&next, opts, err);
	if (rc)
		goto out_unlock;
	timed = sfs_timedev_mode(fs->bd, &mode) == 0;
	new_mode = strcmp(next.clock, fs->cfg.clock) != 0;
	new_dev = strcmp(next.device, fs->cfg.device) != 0;
	/* a change this mount cannot make: -EPERM (config.h's errors) */
	rc = -EPERM;
	if (new_mode && (sfs_clock_is_virtual(fs->clock) ||
			 strcmp(next.clock, "virtual") == 0)) {
		*err = g_strdup_printf("clock=%s cannot change to clock=%s "
				       "while mounted (account and emulate "
				       "can swap)",
				       fs->cfg.clock, next.clock);
		goto out_unlock;
	}
	if ((new_mode || new_dev) && !timed) {
		*err = g_strdup("mounted with device=none: there is no "
				"timing device to change");
		goto out_unlock;
	}
	if (new_dev && strcmp(next.device, "none") == 0) {
		*err = g_strdup("device=none only at mount time");
		goto out_unlock;
	}
	if (new_mode && sfs_timedev_mode_parse(next.clock, &mode)) {
		rc = -EINVAL;
		*err = g_strdup_printf("unknown clock '%s'", next.clock);
		goto out_unlock;
	}
	/* the steps that can fail come first, each undone if a later one
	 * fails: the write-back policy, the allocator's knobs, the device */
	struct sfs_cache_policy oldpol, newpol;
	sfs_cache_get_policy(fs->cache, &oldpol);
	rc = sfs_fs_cache_policy(&next, &newpol, err);
	if (rc)
		goto out_unlock;
	rc = sfs_cache_set_policy(fs->cache, &newpol);
	if (rc) {
		*err = g_strdup("inconsistent write-back knobs (dirty ratios "
				"or bytes)");
		goto out_unlock;
	}
	rc = alloc_configure(fs, &next, err);
	if (rc) {
		sfs_cache_set_policy(fs->cache, &oldpol);
		goto out_unlock;
	}
	if (new_dev) {
		rc = sfs_timedev_set_model(fs->bd, next.device, err);
		if (rc) {
			char *e2 = NULL;

			sfs_cache_set_policy(fs->cache, &oldpol);
			/* the old values, accepted before */
			alloc_configure(fs, &fs->cfg, &e2);
			g_free(e2);
			goto out_unlock;
		}
	}
	if (new_mode)
		sfs_timedev_set_mode(fs->bd, mode);
	if (fs->jnl) {
		struct sfs_jnl_params jp = {
		    .commit_interval_ns =
			(sfs_ns_t)next.commit_s * SFS_NS_PER_S,
		    .max_txn_blocks = next.journal_max_txn,
		};
		sfs_jnl_set_params(fs->jnl, &jp);
	}
	fs->cfg = next;
	rc = 0;
out_unlock:
	sfs_unlock(fs);
	return rc;
}

void sfs_fs_get_config(struct sfs_fs *fs, struct sfs_config *out)
{
	sfs_lock(fs);
	*out = fs->cfg;
	sfs_unlock(fs);
}

void sfs_fs_abort(struct sfs_fs *fs)
{
	if (fs)
		fs_free(fs);
}

struct sfs_stats *sfs_fs_stats(struct sfs_fs *fs)
{
	return fs->stats;
}

struct sfs_clock *sfs_fs_clock(struct sfs_fs *fs)
{
	return fs->clock;
}

void sfs_fs_set_report(struct sfs_fs *fs, FILE *out)
{
	fs->report = out;
}

void sfs_fs_set_close_fn(struct sfs_fs *fs, sfs_fs_close_fn fn, void *arg)
{
	fs->close_fn = fn;
	fs->close_arg = arg;
}

uint32_t sfs_fs_block_size(const struct sfs_fs *fs)
{
	return fs->bs;
}

struct sfs_bdev *sfs_fs_bdev(struct sfs_fs *fs)
{
	return fs->bd;
}
