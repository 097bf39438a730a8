/*
 * fs.c - the filesystem-wide bookkeeping of a mounted engine: superblock
 * and group descriptor write-back, block and inode bitmaps, the inode
 * table and the in-memory inode cache, sync, and what runs at operation
 * boundaries (the flusher's work, timed commits).  Assembling a mount and
 * taking it apart is mount.c's (sfs_fs_open, sfs_fs_close); changing its
 * knobs while mounted is remount.c's.
 *
 *   sfs_fs_sync   write the superblock, descriptors and every dirty buffer
 *   sfs_iget / sfs_iput   the inode cache; the last reference of an
 *                 unlinked inode frees it on disk
 *   sfs_alloc_blocks / sfs_inode_alloc   allocation, with the bitmaps and
 *                 counts kept in step
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
#include "fs_priv.h"
#include "journal.h"
#include "timedev.h"

#define SFS_ICACHE_MAX 65536 /* unreferenced inodes kept in memory, */
#define SFS_ICACHE_MIN 4096  /* whatever mem= is */

/* ---- errors and small checks ---- */

/* Say what is wrong and mark the superblock with errors (s_state ERROR,
 * kept at unmount for e2fsck), as ext4_error does; nothing more. */
static void fs_error_vrecord(struct sfs_fs *fs, int err, const char *fmt,
			     va_list ap) G_GNUC_PRINTF(3, 0);
static void fs_error_vrecord(struct sfs_fs *fs, int err, const char *fmt,
			     va_list ap)
{
	char *msg = g_strdup_vprintf(fmt, ap);

	g_printerr("simfs: error %d (%s): %s\n", -err, g_strerror(-err), msg);
	g_free(msg);
	if (!fs->error_recorded) {
		fs->error_recorded = true;
		fs->sb.s_state |= sfs_cpu_to_le16(SFS_STATE_ERROR);
		fs->sb_dirty = true;
	}
}

void sfs_fs_error(struct sfs_fs *fs, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fs_error_vrecord(fs, err, fmt, ap);
	va_end(ap);
	fs->error = true;
}

/*
 * Group g's block (inode false) or inode bitmap is bad: recorded as an
 * error, but contained, as ext4 contains it (ext4_mark_group_bitmap_
 * corrupted in fs/ext4/super.c, called where balloc.c, ialloc.c and
 * mballoc.c find a bitmap bad): the group is marked for the rest of the
 * mount (sfs_group_bad) and its free blocks or inodes leave the free
 * counts (ext4 subtracts them from s_freeclusters_counter and
 * s_freeinodes_counter), and the filesystem keeps serving from the other
 * groups, without the sticky error state.  The descriptors keep their
 * counts: e2fsck rebuilds the bitmap.
 */
static void group_bitmap_bad(struct sfs_fs *fs, uint32_t g, bool inode, int err,
			     const char *fmt, ...) G_GNUC_PRINTF(5, 6);
static void group_bitmap_bad(struct sfs_fs *fs, uint32_t g, bool inode, int err,
			     const char *fmt, ...)
{
	uint8_t flag = inode ? SFS_GBAD_INODE : SFS_GBAD_BLOCK;
	va_list ap;

	va_start(ap, fmt);
	fs_error_vrecord(fs, err, fmt, ap);
	va_end(ap);
	if (fs->gbad[g] & flag)
		return;
	fs->gbad[g] |= flag;
	fs->gbad_marks++;
	if (!inode)
		fs->free_blocks -= sfs_le16(fs->gd[g].bg_free_blocks_count);
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

void sfs_flusher_start(struct sfs_fs *fs)
{
	if (fs->ro || sfs_clock_is_virtual(fs->clock))
		return;
	fs->flusher = g_thread_new("simfs-flush", flusher_main, fs);
}

void sfs_flusher_stop(struct sfs_fs *fs)
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

/* ---- superblock and descriptors ---- */

/*
 * Time for the superblock's mount and write stamps.  With a virtual clock
 * these stay at the anchor: e2fsck compares them with the host's clock
 * and would call a virtual future "in the future".
 */
void sfs_sb_now(struct sfs_fs *fs, struct timespec *out)
{
	if (sfs_clock_is_virtual(fs->clock)) {
		out->tv_sec = (time_t)(fs->time_base_ns / SFS_NS_PER_S);
		out->tv_nsec = 0;
		return;
	}
	sfs_now(fs, out);
}

uint32_t sfs_group_nblocks(const struct sfs_fs *fs, uint32_t g)
{
	if (g + 1 < fs->groups)
		return fs->bpg;
	return fs->blocks_count - fs->first_data_block - g * fs->bpg;
}

/* Copy the primary superblock into its buffer (dirtied only if its bytes
 * change).  The mount reads it from the device directly (mount.c). */
static int super_write(struct sfs_fs *fs)
{
	sfs_blk_t blk = SFS_SUPER_OFFSET / fs->bs;
	uint32_t off = SFS_SUPER_OFFSET % fs->bs;
	struct sfs_buf *b;
	int rc;

	rc = sfs_cache_get(fs->cache, blk, SFS_IO_SUPER, &b);
	if (rc)
		return rc;
	sfs_csum_super_set(&fs->sb);
	if (memcmp(b->data + off, &fs->sb, SFS_SUPER_SIZE)) {
		memcpy(b->data + off, &fs->sb, SFS_SUPER_SIZE);
		sfs_meta_dirty(fs, b);
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

int sfs_gdt_io(struct sfs_fs *fs, bool write)
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
	rc = sfs_gdt_io(fs, true);
	if (rc)
		return rc;
	rc = super_write(fs);
	if (rc)
		return rc;
	fs->gd_dirty = false;
	fs->sb_dirty = false;
	return 0;
}

int sfs_write_super_and_gdt(struct sfs_fs *fs)
{
	return super_and_gdt(fs, true);
}

int sfs_fs_flush_super_gdt(struct sfs_fs *fs)
{
	return super_and_gdt(fs, false);
}

/* Write the superblock's block by itself and flush the device. */
int sfs_write_super_alone(struct sfs_fs *fs)
{
	sfs_blk_t blk = SFS_SUPER_OFFSET / fs->bs;
	int rc = super_write(fs);

	if (!rc)
		rc = sfs_cache_write_blocks(fs->cache, &blk, 1);
	if (!rc)
		rc = sfs_bdev_flush(fs->bd);
	return rc;
}

uint64_t sfs_free_blocks(const struct sfs_fs *fs)
{
	return fs->free_blocks;
}

/* ---- bitmaps ---- */

/* Is bit i of map clear, or are the n bits from i not all set? */
static bool bits_not_set(const uint8_t *map, uint32_t i, uint32_t n)
{
	for (; n; i++, n--)
		if (!sfs_bit_test(map, i))
			return true;
	return false;
}

/*
 * The first of group g's own bitmap and inode table blocks that its block
 * bitmap calls free, or 0 (ext4_valid_block_bitmap, fs/ext4/balloc.c).
 * With flex_bg they may lie in other groups, and, as ext4, nothing is
 * checked.
 */
static sfs_blk_t block_bitmap_invalid(struct sfs_fs *fs, uint32_t g,
				      const uint8_t *map)
{
	const struct sfs_dgroup *gd = &fs->gd[g];
	sfs_blk_t own[3] = {sfs_le32(gd->bg_block_bitmap),
			    sfs_le32(gd->bg_inode_bitmap),
			    sfs_le32(gd->bg_inode_table)};
	sfs_blk_t first = sfs_group_first(fs, g);
	uint32_t nb = sfs_group_nblocks(fs, g);

	if (sfs_le32(fs->sb.s_feature_incompat) & SFS_FEATURE_INCOMPAT_FLEX_BG)
		return 0;
	for (int k = 0; k < 3; k++) {
		uint32_t n = k == 2 ? fs->itb : 1;

		if (own[k] < first || own[k] - first + n > nb ||
		    bits_not_set(map, own[k] - first, n))
			return own[k];
	}
	return 0;
}

/*
 * A group's bitmap, checked at every fetch: it must be readable, match its
 * checksum (metadata_csum) and, for a block bitmap, mark the group's own
 * metadata used (block_bitmap_invalid).  A bitmap that fails marks its
 * group bad (group_bitmap_bad), as ext4_validate_block_bitmap,
 * ext4_wait_block_bitmap and ext4_read_inode_bitmap do; a marked group's
 * bitmap is -EIO without a read.
 */
static int bitmap_get(struct sfs_fs *fs, uint32_t g, bool inode,
		      struct sfs_buf **out)
{
	const struct sfs_dgroup *gd = &fs->gd[g];
	const char *kind = inode ? "inode" : "block";
	sfs_blk_t bad;
	int rc;

	*out = NULL;
	if (sfs_group_bad(fs, g, inode))
		return -EIO;
	rc = sfs_cache_get(
	    fs->cache,
	    sfs_le32(inode ? gd->bg_inode_bitmap : gd->bg_block_bitmap),
	    SFS_IO_BITMAP, out);
	if (rc == -EIO) {
		group_bitmap_bad(fs, g, inode, rc,
				 "group %u: cannot read the %s bitmap", g,
				 kind);
		return rc;
	}
	if (rc)
		return rc;
	if (!sfs_csum_bitmap_ok(fs, g, inode, (*out)->data)) {
		sfs_cache_put(fs->cache, *out);
		*out = NULL;
		group_bitmap_bad(fs, g, inode, -EIO,
				 "group %u: %s bitmap checksum mismatch", g,
				 kind);
		return -EIO;
	}
	bad = inode ? 0 : block_bitmap_invalid(fs, g, (*out)->data);
	if (bad) {
		sfs_cache_put(fs->cache, *out);
		*out = NULL;
		group_bitmap_bad(fs, g, false, -EIO,
				 "group %u: block %u: invalid block bitmap", g,
				 bad);
		return -EIO;
	}
	return 0;
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
 * already (init_uninit_groups, mount.c).
 */
static void group_first_use(struct sfs_fs *fs, uint32_t g, bool inode,
			    uint32_t idx)
{
	struct sfs_dgroup *gd = &fs->gd[g];
	uint16_t fl = sfs_le16(gd->bg_flags);
	uint16_t nfl = fl & ~SFS_BG_BLOCK_UNINIT;

	if (inode) {
		uint32_t unused = (fl & SFS_BG_INODE_UNINIT)
				      ? fs->ipg
				      : sfs_le16(gd->bg_itable_unused);
		nfl &= ~SFS_BG_INODE_UNINIT;
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
 * view and the bitmap disagree: a corrupt image or an engine bug.  Blocks
 * freed into a group whose bitmap is bad (sfs_group_bad) are left as they
 * are, as ext4_free_blocks leaves them: e2fsck finds them.
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

		if (rc && !used && sfs_group_bad(fs, g, false)) {
			start += cnt;
			n -= cnt;
			continue;
		}
		if (rc)
			return rc;
		for (uint32_t i = bit; i < bit + cnt; i++) {
			if (sfs_bit_test(b->data, i) == used)
				continue;
			if (used)
				sfs_bit_set(b->data, i);
			else
				sfs_bit_clear(b->data, i);
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
	/* A bitmap the model fetched was bad: its group is marked now and
	 * skipped (sfs_group_bad), so ask again, at most once per group. */
	for (uint32_t i = 0;; i++) {
		uint32_t marks = fs->gbad_marks;
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
		if (rc != -EIO || fs->gbad_marks == marks || i == fs->groups)
			break;
	}
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
int sfs_orphan_cleanup(struct sfs_fs *fs)
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
	if (rc && sfs_group_bad(fs, g, true)) {
		/* as ext4_free_inode: the bad bitmap is left for e2fsck */
		ip->deleted = true;
		return 0;
	}
	if (rc)
		return rc;
	if (!sfs_bit_test(b->data, idx)) {
		sfs_cache_put(fs->cache, b);
		sfs_fs_error(fs, -EIO, "freeing inode %u: already free",
			     ip->ino);
		return -EIO;
	}
	sfs_bit_clear(b->data, idx);
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
	/* a group whose inode bitmap is bad is passed over for the next one
	 * with free inodes, as __ext4_new_inode does */
	for (uint32_t i = 0;; i++) {
		uint32_t gi = (g + i) % fs->groups;

		if (i == fs->groups)
			return -ENOSPC;
		if (!fs->gd[gi].bg_free_inodes_count)
			continue;
		rc = inode_bitmap(fs, gi, &b);
		if (!rc) {
			g = gi;
			break;
		}
		if (!sfs_group_bad(fs, gi, true))
			return rc;
	}
	for (idx = 0; idx < fs->ipg; idx++)
		if (!sfs_bit_test(b->data, idx))
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
	sfs_bit_set(b->data, idx);
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

/* ---- sync ---- */

/*
 * Write superblock, descriptors and all dirty buffers; flush the device.
 * Journaled: they commit first (reason why), then everything not pinned
 * goes home; the log keeps the transactions until checkpoint.
 */
int sfs_fs_sync_locked(struct sfs_fs *fs, enum sfs_commit_reason why)
{
	int rc;

	if (fs->ro)
		return 0;
	/* delayed data is placed first: that changes the metadata below.
	 * If some cannot be placed (error state, device error), what is
	 * already in the cache is still written. */
	int darc = sfs_da_flush_all(fs, SFS_DA_SYNC);
	rc = sfs_write_super_and_gdt(fs);
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
	return sfs_fs_sync_locked(fs, SFS_COMMIT_FSYNC);
}

int sfs_fs_sync(struct sfs_fs *fs)
{
	int rc;

	if (!fs)
		return -EINVAL;
	sfs_op_begin(fs, SFS_OP_SYNC);
	rc = sfs_fs_sync_locked(fs, SFS_COMMIT_SYNC);
	sfs_op_end(fs);
	return rc;
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
