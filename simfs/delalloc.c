/*
 * delalloc.c - delayed allocation (ext4's delalloc, Linux fs/ext4/inode.c;
 * doc/allocators.md "Delayed allocation").
 *
 * A buffered write into a hole of a regular file does not choose a block.
 * The bytes go into a per-inode store of delayed blocks (a hash table,
 * logical block -> one block of data; the data is a slot of the cache's
 * block pool, sfs_cache_block_alloc, so it costs no heap allocation, counts
 * within mem= and becomes the block's buffer when placed, uncopied) and
 * the filesystem sets aside, from its free count,
 * one block for the data plus a worst-case estimate of the mapping blocks
 * (indirect or extent-tree blocks) that placing them may need.  Nothing
 * on disk changes: no bitmap, no descriptor, no mapping, no journal entry
 * for the data.
 *
 * The blocks are placed when the data is written back:
 *   - by the cache's write-back (flusher: expiry and background; a
 *     throttled writer), which counts delayed bytes as dirty bytes and asks
 *     for them oldest inode first (cache.h, struct sfs_cache_delayed);
 *   - by fsync, sync and unmount;
 *   - by auto_da_alloc: a file renamed over another one, or closed after
 *     it was truncated to zero (the "replace a file" idioms);
 *   - by an O_DIRECT write to the file, which must not pass cached data;
 *   - when a reservation fails: everything is placed (turning estimates
 *     into real, usually smaller, use) and the reservation is retried;
 *   - when the host disk under a sparse image may not hold the delayed
 *     blocks (da_host_room): placing reserves host space, and a write the
 *     host cannot hold fails with ENOSPC at write time.
 * Placing one inode sorts its delayed blocks once and walks them in
 * logical order, in runs of consecutive blocks (at most 8 MiB, as ext4's
 * writepages), maps each with create through the inode's mapping model;
 * the blocks become ordinary dirty buffers, written by whoever asked (the flusher's chunk as one sorted
 * batch, fsync's file, sync's everything).
 * Because a whole run of one file is placed in one go, the placement model
 * sees it uninterrupted by other writers: files written side by side still
 * get contiguous blocks, and mballoc sizes its request from the file's
 * final size.
 *
 * Accounting: fs->da_blocks + fs->da_meta blocks are reserved.  Allocations
 * for anything else (metadata, directories, immediate writes) may use only
 * free - reserved (fs.c sfs_alloc_blocks); placing delayed blocks
 * (fs->da_converting) may use the reserve.  A write that cannot reserve
 * fails with ENOSPC at write time, so the data it did accept can always
 * be placed later.
 *
 * The on-disk i_size does not run ahead of placed data (ext4's i_disksize):
 * the inode table shows min(i_size, disksize), and placing a run moves
 * disksize to the run's end.
 */
#include <errno.h>
#include <string.h>

#include "clock.h"
#include "fs_priv.h"
#include "journal.h"

static void da_drop_from(struct sfs_fs *fs, struct sfs_inode *ip,
			 uint32_t from);

/* Largest run placed (and written) in one go: ext4's 8 MiB. */
#define DA_MAX_RUN_BYTES (8u << 20)

struct sfs_da_inode {
	GHashTable *blocks;  /* GUINT_TO_POINTER(lblk) -> uint8_t[bs] */
	uint32_t n;	     /* blocks held */
	uint32_t meta;	     /* metadata blocks reserved for them */
	uint32_t max_lblk;   /* highest logical block held */
	sfs_ns_t dirtied_ns; /* when the first of them was written */
	GList link;	     /* in fs->da_inodes; data = the inode */
	uint64_t disksize;   /* size the inode table may show */
};

static int cmp_lblk(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Worst-case mapping blocks needed to place n delayed blocks (the highest
 * at max_lblk) of ip.  Extent trees: every block may become its own
 * extent; leaves and index blocks are counted half full, plus a level of
 * growth; nothing while the inode's own four slots suffice.  Block maps:
 * an indirect block per addr_per_block blocks (+1 for a straddle) at each
 * of the three levels; nothing for the twelve direct blocks.
 */
static uint32_t meta_need(const struct sfs_fs *fs, const struct sfs_inode *ip,
			  uint32_t n, uint32_t max_lblk)
{
	if (n == 0)
		return 0;
	if (sfs_le32(ip->d.i_flags) & SFS_EXTENTS_FL) {
		const struct sfs_dextent_header *h =
		    (const struct sfs_dextent_header *)ip->d.i_block;
		uint32_t half = (fs->bs - 12) / 12 / 2;
		uint32_t leaves, index;

		if (sfs_le16(h->eh_depth) == 0 &&
		    sfs_le16(h->eh_entries) + n <= 4)
			return 0;
		leaves = n / half + 1;
		index = leaves / half + 1;
		return leaves + index + 1;
	}
	if (max_lblk < SFS_NDIR_BLOCKS)
		return 0;
	uint32_t apb = fs->addr_per_block;
	return (n / apb + 2) + (n / apb / apb + 2) + 1;
}

/* ---- the cache's view ---- */

static uint64_t da_bytes_cb(void *ctx)
{
	struct sfs_fs *fs = ctx;

	return fs->da_blocks * fs->bs;
}

static sfs_ns_t da_oldest_cb(void *ctx)
{
	struct sfs_fs *fs = ctx;
	GList *l = fs->da_inodes.head;

	if (!l)
		return SFS_CACHE_NO_DEADLINE;
	return ((struct sfs_inode *)l->data)->da->dirtied_ns;
}

static int flush_inode(struct sfs_fs *fs, struct sfs_inode *ip,
		       enum sfs_da_why why, GArray *placed);
static int write_placed(struct sfs_fs *fs, GArray *placed,
			enum sfs_wb_reason wb);

/* Set while blocks are being placed: the cache must not ask again. */
static bool da_busy(const struct sfs_fs *fs)
{
	return fs->da_converting;
}

static int64_t da_writeback_cb(void *ctx, bool expired, sfs_ns_t cutoff_ns,
			       uint64_t bytes, enum sfs_wb_reason why)
{
	struct sfs_fs *fs = ctx;
	GArray *placed;
	uint64_t done = 0;
	GList *l;
	int rc = 0;

	if (da_busy(fs) || fs->ro || fs->error)
		return 0;
	/* Place whole inodes, oldest first, then write what they got as
	 * one batch (sorted and merged by the cache), as the flusher would
	 * write a chunk of dirty pages. */
	placed = g_array_new(FALSE, FALSE, sizeof(sfs_blk_t));
	while ((l = fs->da_inodes.head)) {
		struct sfs_inode *ip = l->data;
		uint64_t b = (uint64_t)ip->da->n * fs->bs;

		if (expired && ip->da->dirtied_ns > cutoff_ns)
			break;
		rc = flush_inode(fs, ip, SFS_DA_WRITEBACK, placed);
		if (rc)
			break;
		if (fs->da_inodes.head == l)
			break; /* no progress: do not spin */
		done += b;
		if (!expired && done >= bytes)
			break;
	}
	{
		int wrc = write_placed(fs, placed, why);
		if (!rc)
			rc = wrc;
	}
	g_array_free(placed, TRUE);
	return rc ? rc : (int64_t)done;
}

static const struct sfs_cache_delayed da_cache_ops = {
	.bytes = da_bytes_cb,
	.oldest_ns = da_oldest_cb,
	.writeback = da_writeback_cb,
};

void sfs_da_setup(struct sfs_fs *fs)
{
	g_queue_init(&fs->da_inodes);
	/* ext4 turns delalloc off for data=journal: data goes through the
	 * log at write time (ext4_set_aops: ext4_journalled_aops). */
	fs->da_on = fs->cfg.delalloc && !fs->ro &&
		    sfs_jnl_data_path(fs->jnl) == SFS_JNL_DATA_CACHED;
	if (fs->da_on)
		sfs_cache_set_delayed(fs->cache, &da_cache_ops, fs);
}

bool sfs_da_wanted(const struct sfs_fs *fs, const struct sfs_inode *ip)
{
	return fs->da_on && sfs_i_isreg(ip);
}

/* ---- per-inode store ---- */

static struct sfs_da_inode *da_get(struct sfs_fs *fs, struct sfs_inode *ip)
{
	struct sfs_da_inode *da = ip->da;

	if (da)
		return da;
	da = g_new0(struct sfs_da_inode, 1);
	da->blocks = g_hash_table_new(g_direct_hash, g_direct_equal);
	da->dirtied_ns = sfs_clock_now_ns(fs->clock);
	da->disksize = sfs_i_size(ip);
	da->link.data = ip;
	g_queue_push_tail_link(&fs->da_inodes, &da->link);
	ip->da = da;
	return da;
}

/* Free ip's store once it holds nothing; give back its reserve. */
static void da_put(struct sfs_fs *fs, struct sfs_inode *ip)
{
	struct sfs_da_inode *da = ip->da;

	if (!da || da->n)
		return;
	fs->da_meta -= da->meta;
	g_queue_unlink(&fs->da_inodes, &da->link);
	g_hash_table_destroy(da->blocks);
	g_free(da);
	ip->da = NULL;
}

/* Re-estimate ip's metadata reserve after blocks left it (never grows). */
static void da_trim_meta(struct sfs_fs *fs, struct sfs_inode *ip)
{
	struct sfs_da_inode *da = ip->da;
	uint32_t need = meta_need(fs, ip, da->n, da->max_lblk);

	if (need < da->meta) {
		fs->da_meta -= da->meta - need;
		da->meta = need;
	}
}

/* Set aside k more blocks, if free - reserved allows. */
static bool da_room(const struct sfs_fs *fs, uint64_t k)
{
	uint64_t free = sfs_free_blocks(fs), resv = sfs_da_reserved(fs);

	return free >= resv && free - resv >= k;
}

#define DA_HOST_LOOK_BLOCKS 256 /* new delayed blocks between looks */

/*
 * Can the host disk under a sparse image still hold every delayed block
 * and k more, should all land in holes of the image file?  Delayed blocks
 * have no place yet, so nothing can be reserved for them (the allocation
 * door does that when they are placed); instead the host's free space is
 * looked at (sfs_bdev_host_room), every DA_HOST_LOOK_BLOCKS new blocks
 * while it is plentiful and at every one near the edge.  When it may not
 * suffice, everything is placed now, which reserves host space block by
 * block, as ext4 stops delaying when free space runs low
 * (ext4_nonda_switch).  0; 1 when the new block must be placed as soon as
 * it is written (the host still looks short); -ENOSPC when what was
 * delayed cannot be placed for want of host space (it stays delayed, for
 * a later write-back); -EIO.
 */
static int da_host_room(struct sfs_fs *fs, uint64_t k)
{
	uint64_t need = (fs->da_blocks + fs->da_meta + k) << fs->bs_log;
	uint64_t margin = (uint64_t)DA_HOST_LOOK_BLOCKS << fs->bs_log;
	int rc;

	if (fs->host_room_age == 0 || fs->host_room_bytes < need + margin) {
		rc = sfs_bdev_host_room(fs->bd, &fs->host_room_bytes);
		if (rc)
			return rc;
		fs->host_room_age = DA_HOST_LOOK_BLOCKS;
	}
	fs->host_room_age--;
	if (fs->host_room_bytes >= need)
		return 0;
	fs->host_room_age = 0; /* look again next time */
	rc = sfs_da_flush_all(fs, SFS_DA_ENOSPC);
	if (rc)
		return rc;
	/* What was delayed is placed, its host space reserved.  If the host
	 * still looks short, the new block is placed at once: it may land
	 * on image blocks the host already backs (a deleted file's), which
	 * only the reservation at placement can tell. */
	rc = sfs_bdev_host_room(fs->bd, &fs->host_room_bytes);
	if (rc)
		return rc;
	need = (fs->da_blocks + fs->da_meta + k) << fs->bs_log;
	return fs->host_room_bytes >= need ? 0 : 1;
}

int sfs_da_write(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t lblk,
		 uint32_t boff, const void *src, size_t n)
{
	struct sfs_da_inode *da = da_get(fs, ip);
	uint8_t *buf = g_hash_table_lookup(da->blocks, GUINT_TO_POINTER(lblk));
	bool place_now = false;

	if (!buf) {
		uint32_t need =
		    meta_need(fs, ip, da->n + 1, MAX(da->max_lblk, lblk));
		uint32_t more = need > da->meta ? need - da->meta : 0;

		if (!da_room(fs, 1 + (uint64_t)more)) {
			/* Place everything (estimates become real use, and
			 * blocks freed in the running transaction become
			 * free at its commit), then try once more. */
			int rc = sfs_da_flush_all(fs, SFS_DA_ENOSPC);
			if (rc == 0 && fs->jnl && sfs_jnl_pending_free(fs->jnl))
				rc = sfs_jnl_commit(fs->jnl, SFS_COMMIT_ENOSPC);
			da = da_get(fs, ip);
			need = meta_need(fs, ip, da->n + 1,
					 MAX(da->max_lblk, lblk));
			more = need > da->meta ? need - da->meta : 0;
			if (rc || !da_room(fs, 1 + (uint64_t)more)) {
				fs->da_ctr.enospc++;
				da_put(fs, ip);
				return rc ? rc : -ENOSPC;
			}
		}
		int hrc = da_host_room(fs, 1 + (uint64_t)more);
		if (hrc < 0) {
			fs->da_ctr.enospc++;
			da_put(fs, ip);
			return hrc;
		}
		place_now = hrc > 0;
		da = da_get(fs, ip); /* a placement may have freed it */
		need = meta_need(fs, ip, da->n + 1, MAX(da->max_lblk, lblk));
		more = need > da->meta ? need - da->meta : 0;
		buf = sfs_cache_block_alloc(fs->cache);
		g_hash_table_insert(da->blocks, GUINT_TO_POINTER(lblk), buf);
		da->n++;
		da->max_lblk = MAX(da->max_lblk, lblk);
		da->meta += more;
		fs->da_blocks++;
		fs->da_meta += more;
		fs->da_ctr.reserved_blocks++;
		fs->da_ctr.meta_reserved_peak =
		    MAX(fs->da_ctr.meta_reserved_peak, fs->da_meta);
	}
	memcpy(buf + boff, src, n);
	if (place_now) {
		/* the only delayed block now (da_host_room placed the rest):
		 * if the host cannot hold it, it is not written at all */
		int rc = sfs_da_flush_inode(fs, ip, SFS_DA_ENOSPC);
		if (!rc && ip->da &&
		    g_hash_table_lookup(ip->da->blocks, GUINT_TO_POINTER(lblk)))
			rc = -ENOSPC;
		if (rc) {
			uint64_t died = fs->da_ctr.died_blocks;

			if (ip->da)
				da_drop_from(fs, ip, lblk);
			fs->da_ctr.died_blocks = died; /* refused, not died */
			fs->da_ctr.enospc++;
			return rc;
		}
	}
	return 0;
}

const uint8_t *sfs_da_lookup(const struct sfs_inode *ip, uint32_t lblk)
{
	if (!ip->da)
		return NULL;
	return g_hash_table_lookup(ip->da->blocks, GUINT_TO_POINTER(lblk));
}

uint64_t sfs_da_disksize(const struct sfs_inode *ip, uint64_t size)
{
	return ip->da ? MIN(size, ip->da->disksize) : size;
}

uint32_t sfs_da_inode_blocks(const struct sfs_inode *ip)
{
	return ip->da ? ip->da->n : 0;
}

/* Drop the delayed blocks at logical >= from, unwritten ("died"). */
static void da_drop_from(struct sfs_fs *fs, struct sfs_inode *ip,
			 uint32_t from)
{
	struct sfs_da_inode *da = ip->da;
	uint32_t dropped = 0, max = 0;
	GHashTableIter it;
	gpointer k, v;

	g_hash_table_iter_init(&it, da->blocks);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		if (GPOINTER_TO_UINT(k) < from) {
			max = MAX(max, GPOINTER_TO_UINT(k));
			continue;
		}
		g_hash_table_iter_remove(&it);
		sfs_cache_block_free(fs->cache, v);
		dropped++;
	}
	da->n -= dropped;
	fs->da_blocks -= dropped;
	fs->da_ctr.died_blocks += dropped;
	da->max_lblk = max;
	da_trim_meta(fs, ip);
	da_put(fs, ip);
}

void sfs_da_truncate(struct sfs_fs *fs, struct sfs_inode *ip,
		     uint64_t new_size)
{
	struct sfs_da_inode *da = ip->da;
	uint32_t off = (uint32_t)(new_size & (fs->bs - 1));
	uint64_t first = (new_size + fs->bs - 1) >> fs->bs_log;

	if (!da)
		return;
	if (off) {
		uint8_t *buf = g_hash_table_lookup(
		    da->blocks, GUINT_TO_POINTER(new_size >> fs->bs_log));
		if (buf)
			memset(buf + off, 0, fs->bs - off);
	}
	da->disksize = MIN(da->disksize, new_size);
	da_drop_from(fs, ip, first > UINT32_MAX ? UINT32_MAX : (uint32_t)first);
}

void sfs_da_drop(struct sfs_fs *fs, struct sfs_inode *ip)
{
	if (ip->da)
		da_drop_from(fs, ip, 0);
}

/* ---- placing ---- */

/* Write the placed blocks now, one batch; the list is emptied. */
static int write_placed(struct sfs_fs *fs, GArray *placed,
			enum sfs_wb_reason wb)
{
	int rc = 0;

	if (placed && placed->len)
		rc = sfs_cache_write_blocks_why(fs->cache,
						(sfs_blk_t *)placed->data,
						placed->len, wb);
	if (placed)
		g_array_set_size(placed, 0);
	return rc;
}

/*
 * Place the run of n delayed blocks starting at logical block lblk: each
 * gets its block and becomes an ordinary dirty buffer (joining the
 * running transaction's ordered data under data=ordered); its number is
 * appended to placed (NULL: nobody writes them now).  The blocks leave
 * the store as they are placed.
 */
static int place_run(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t lblk,
		     uint32_t n, GArray *placed)
{
	struct sfs_da_inode *da = ip->da;
	int rc = 0;

	for (uint32_t i = 0; i < n; i++) {
		gpointer key = GUINT_TO_POINTER(lblk + i);
		uint8_t *data = g_hash_table_lookup(da->blocks, key);
		struct sfs_buf *b;
		sfs_blk_t pblk;
		bool isnew = false;

		rc = sfs_map_block(fs, ip, lblk + i, true, &pblk, &isnew);
		if (rc)
			break;
		/* a new block's buffer takes the delayed memory itself */
		rc = isnew ? sfs_cache_get_new_from(fs->cache, pblk,
						    SFS_IO_DATA, data, &b)
			   : sfs_cache_get(fs->cache, pblk, SFS_IO_DATA, &b);
		if (rc)
			break;
		if (!isnew) {
			memcpy(b->data, data, fs->bs);
			sfs_cache_block_free(fs->cache, data);
		}
		sfs_data_dirty(fs, b);
		sfs_cache_put(fs->cache, b);
		sfs_inode_note_dirty(ip, pblk, 1);
		if (placed)
			g_array_append_val(placed, pblk);
		g_hash_table_remove(da->blocks, key);
		da->n--;
		fs->da_blocks--;
		fs->da_ctr.placed_blocks++;
		/* i_disksize follows the placed data (never past i_size) */
		uint64_t end = (uint64_t)(lblk + i + 1) << fs->bs_log;
		da->disksize = MAX(da->disksize, MIN(end, sfs_i_size(ip)));
	}
	return rc;
}

/* ip's delayed logical blocks, ascending (g_free it); *n_out of them. */
static uint32_t *sorted_lblks(const struct sfs_da_inode *da, uint32_t *n_out)
{
	uint32_t *l = g_new(uint32_t, MAX(da->n, 1));
	uint32_t n = 0;
	GHashTableIter it;
	gpointer k;

	g_hash_table_iter_init(&it, da->blocks);
	while (g_hash_table_iter_next(&it, &k, NULL))
		l[n++] = GPOINTER_TO_UINT(k);
	qsort(l, n, sizeof(*l), cmp_lblk);
	*n_out = n;
	return l;
}

static int flush_inode(struct sfs_fs *fs, struct sfs_inode *ip,
		       enum sfs_da_why why, GArray *placed)
{
	uint32_t pid = fs->cur_pid;
	uint64_t before = fs->da_ctr.placed_blocks;
	struct sfs_inode *ref;
	int rc = 0;

	if (!ip->da || da_busy(fs))
		return 0;
	if (fs->ro || fs->error)
		return -EROFS;
	/* the inode stays while its blocks are placed */
	rc = sfs_iget(fs, ip->ino, &ref);
	if (rc)
		return rc;
	/* placement at write-back time: no writer's colour (ext4 with
	 * delalloc starts from the group, ext4_ext_find_goal) */
	fs->cur_pid = 0;
	fs->da_converting = true;
	if (ip->da && ip->da->n) {
		/* runs of consecutive blocks, in logical order: one sort */
		uint32_t max = MAX(DA_MAX_RUN_BYTES >> fs->bs_log, 1), n;
		uint32_t *l = sorted_lblks(ip->da, &n);

		for (uint32_t i = 0, j; i < n && !rc; i = j) {
			for (j = i + 1; j < n && j - i < max &&
					l[j] == l[j - 1] + 1;
			     j++)
				;
			rc = place_run(fs, ip, l[i], j - i, placed);
			fs->da_ctr.placed_runs++;
		}
		g_free(l);
	}
	if (rc == -ENOSPC && ip->da && fs->host_full) {
		/* The image had the blocks, the host disk under it did not:
		 * the data stays delayed, and a later write-back (once there
		 * is room) places it. */
		da_trim_meta(fs, ip);
		da_put(fs, ip);
	} else if (rc == -ENOSPC && ip->da) {
		/* The reserve should have made this impossible; as ext4,
		 * report it and drop what cannot be placed.  (Other errors,
		 * such as a bitmap that could not be read, leave the rest
		 * delayed: a later write-back tries again.) */
		uint32_t lost = ip->da->n;
		uint64_t died = fs->da_ctr.died_blocks;
		fs->da_ctr.failed_blocks += lost;
		da_drop_from(fs, ip, 0);
		fs->da_ctr.died_blocks = died; /* lost, not died */
		sfs_fs_error(fs, rc,
			     "inode %u: delayed allocation failed (%s); %u "
			     "blocks of data lost",
			     ip->ino, g_strerror(-rc), lost);
	} else if (ip->da) {
		da_trim_meta(fs, ip);
		da_put(fs, ip);
	}
	fs->da_converting = false;
	fs->cur_pid = pid;
	fs->da_ctr.flush_blocks[why] += fs->da_ctr.placed_blocks - before;
	if (rc == 0) {
		/* the new i_size reaches the inode table */
		rc = sfs_inode_dirty(fs, ip);
		/* nothing left to place and nobody has it open: the
		 * placement model's preallocation goes (ext4_release_file) */
		if (ip->opens == 0)
			sfs_alloc_release_inode(fs, ip);
	}
	sfs_iput(fs, ip);
	return rc;
}

/*
 * fsync, sync and unmount write the placed buffers themselves (the file's
 * dirty runs, every dirty buffer), sorted with everything else; an
 * O_DIRECT writer and a failed reservation only need the blocks placed.
 * auto_da_alloc writes the file's data now (ext4 starts that write-back
 * at once), so it is on disk by the next commit in any data= mode.
 */
int sfs_da_flush_inode(struct sfs_fs *fs, struct sfs_inode *ip,
		       enum sfs_da_why why)
{
	GArray *placed = NULL;
	int rc;

	if (why == SFS_DA_RENAME || why == SFS_DA_CLOSE)
		placed = g_array_new(FALSE, FALSE, sizeof(sfs_blk_t));
	rc = flush_inode(fs, ip, why, placed);
	if (placed) {
		int wrc = write_placed(fs, placed, SFS_WB_EXPLICIT);
		if (!rc)
			rc = wrc;
		g_array_free(placed, TRUE);
	}
	return rc;
}

int sfs_da_flush_all(struct sfs_fs *fs, enum sfs_da_why why)
{
	GList *l;

	while ((l = fs->da_inodes.head)) {
		int rc = sfs_da_flush_inode(fs, l->data, why);
		if (rc)
			return rc;
		if (fs->da_inodes.head == l)
			return -EIO; /* no progress: do not spin */
	}
	return 0;
}
