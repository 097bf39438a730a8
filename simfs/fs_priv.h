/*
 * fs_priv.h - the engine's inside: the filesystem and inode structures and
 * the verbs its modules use on each other.  Not for front ends (they use
 * fs.h).
 *
 * Modules and what they own:
 *   fs.c     superblock and descriptor write-back, bitmaps, inode table,
 *            inode cache, block and inode allocation bookkeeping, sync,
 *            operation boundaries and the flusher
 *   mount.c  sfs_fs_open / sfs_fs_close: the checks of an image and the
 *            stack a mount is built of, its stats sources
 *   remount.c  knob changes on a live mount (sfs_fs_set_knobs)
 *   inode.c  getattr/setattr, open/release, read/write/truncate, fsync,
 *            statfs (file data through the mapping model)
 *   dir.c    linear ext2 directories + in-memory hashed name index
 *   namei.c  the namespace verbs of fs.h (lookup, create, rename, ...)
 *   xattr.c  user.* attributes in xattr blocks (reads in-inode ones too)
 *   delalloc.c  delayed allocation: data held per inode until write-back
 *   model.c  the doors to the models below, and what they may read
 *   models/alloc/  placement (where new blocks go) and mapping (how a file
 *            finds its blocks) models, chosen by name.  They, and the
 *            journal's jnl.c and jbd2.c, include model.h, not this file.
 *
 * Locking: one mutex per filesystem, fs->lock, taken by every public verb
 * of fs.h on entry and released on return.  Every function declared here
 * expects it held.  Nothing here is file-static: several filesystems may be
 * open in one process.
 *
 * Inode references: sfs_iget returns a referenced in-memory inode; each
 * reference is dropped with sfs_iput.  An inode whose link count reached 0
 * is freed on disk when its last reference and last open are gone.
 */
#ifndef SFS_FS_PRIV_H
#define SFS_FS_PRIV_H

#include <glib.h>

#include "alloc.h"
#include "lock.h"
#include "cache.h"
#include "fs.h"
#include "journal.h"
#include "model.h"

struct sfs_clock;
struct sfs_stats;
struct sfs_iolog;
struct sfs_jnl;

/* Engine operations, counted by type in the "ops" stats section. */
enum sfs_op {
	SFS_OP_LOOKUP,
	SFS_OP_GETATTR,
	SFS_OP_SETATTR,
	SFS_OP_MKNOD,
	SFS_OP_MKDIR,
	SFS_OP_SYMLINK,
	SFS_OP_LINK,
	SFS_OP_UNLINK,
	SFS_OP_RMDIR,
	SFS_OP_RENAME,
	SFS_OP_READLINK,
	SFS_OP_OPEN,
	SFS_OP_RELEASE,
	SFS_OP_READ,
	SFS_OP_WRITE,
	SFS_OP_FSYNC,
	SFS_OP_READDIR,
	SFS_OP_STATFS,
	SFS_OP_GETXATTR,
	SFS_OP_SETXATTR,
	SFS_OP_LISTXATTR,
	SFS_OP_REMOVEXATTR,
	SFS_OP_SYNC,
	SFS_OP_FALLOCATE,
	SFS_OP_LSEEK,
	SFS_OP_COUNT
};

/* Why delayed blocks were placed (counted per reason). */
enum sfs_da_why {
	SFS_DA_WRITEBACK = 0, /* the cache's write-back (flusher, throttle) */
	SFS_DA_FSYNC,
	SFS_DA_SYNC,	      /* sync, unmount */
	SFS_DA_RENAME,	      /* auto_da_alloc: renamed over another file */
	SFS_DA_CLOSE,	      /* auto_da_alloc: closed after truncate to 0 */
	SFS_DA_DIRECT,	      /* an O_DIRECT write to the file */
	SFS_DA_ENOSPC,	      /* a reservation failed: place all, retry */
	SFS_DA_FALLOC,	      /* fallocate over the file */
	SFS_DA_NWHY
};

/* Counters of delayed allocation ("delalloc" stats section). */
struct sfs_da_counters {
	uint64_t reserved_blocks;  /* data blocks reserved by writes */
	uint64_t placed_blocks;	   /* of those, given blocks at write-back */
	uint64_t placed_runs;	   /* runs of logical blocks placed */
	uint64_t died_blocks;	   /* dropped unplaced: truncate, unlink */
	uint64_t meta_reserved_peak; /* most metadata blocks held in reserve */
	uint64_t enospc;	   /* writes refused: no room to reserve */
	uint64_t flush_blocks[SFS_DA_NWHY]; /* blocks placed, by reason */
	uint64_t failed_blocks;	   /* could not be placed (error state) */
};

struct sfs_fs {
	/* The geometry, first (model.h's sfs_geom casts fs to it), set once
	 * by check_geometry (mount.c).  One storage, two names: the engine
	 * reads the fields directly (fs->bs), a model through sfs_geom(fs);
	 * the anonymous struct repeats struct sfs_geom member for member. */
	union {
		struct sfs_geom geom;
		struct {
			uint32_t bs;		   /* block size, bytes */
			uint32_t bs_log;	   /* log2(bs) */
			uint32_t bpg;		   /* blocks per group */
			uint32_t ipg;		   /* inodes per group */
			uint32_t groups;
			uint32_t first_data_block;
			uint32_t blocks_count;
			uint32_t addr_per_block; /* bs / 4 */
			uint32_t inode_size;	 /* 128 or 256 */
		};
	};
	sfs_mutex lock;
	struct sfs_config cfg;
	struct sfs_bdev *bd;
	struct sfs_cache *cache;
	char *err_msg;          /* last mount error (sfs_fs_open) */

	/* the rest of the geometry, and the superblock */
	struct sfs_dsuper sb;   /* in-memory copy of the primary superblock */
	uint16_t mount_state;   /* s_state found at mount, restored at close */
	bool sb_dirty;
	uint32_t itb;           /* inode table blocks per group */
	uint32_t desc_blocks;   /* GDT blocks */
	uint32_t reserved_gdt;  /* s_reserved_gdt_blocks (resize_inode images) */

	uint32_t desc_size;     /* bytes per group descriptor (32, or
				   s_desc_size with 64bit) */
	struct sfs_dgroup *gd;  /* groups descriptors, on-disk form (the
				   first 32 bytes of each) */
	uint8_t *gd_tail;       /* bytes 32..desc_size of each descriptor,
				   kept as read (NULL without 64bit) */
	uint64_t free_blocks;   /* sum of the groups' bg_free_blocks_count,
				   kept with them (allocation asks per block) */
	bool gd_dirty;
	bool csum;              /* metadata_csum: checksums kept (csum.c) */
	bool gdt_csum;          /* uninit_bg without metadata_csum: crc16
				   descriptor sums only (csum.c) */
	uint32_t csum_seed;     /* crc32c of the UUID, or s_checksum_seed */

	GHashTable *icache;     /* sfs_ino_t -> struct sfs_inode * */
	/* references the kernel holds (FUSE lookup counts): sfs_ino_t ->
	 * count, entries only while non-zero; NULL when not counted */
	GHashTable *klookups;
	/* references the kernel still holds to inodes freed early
	 * (sfs_reclaim_unlinked) whose numbers may have gone to new files:
	 * its forgets pay these off first.  sfs_ino_t -> count */
	GHashTable *kghosts;
	/* nameless inodes kept only for the kernel (sfs_iput), the ones
	 * sfs_reclaim_unlinked looks at: a set of sfs_ino_t */
	GHashTable *knameless;
	GQueue ilru;            /* cached inodes with no refs/opens, LRU first */
	/* the orphan list, in its on-disk order from s_last_orphan: nameless
	 * inodes still in use, each i_dtime naming the next (doc/internals.md
	 * section 3) */
	GQueue orphans;
	GRand *rand;            /* seeded: generation numbers */

	/* measurement (shared by all layers) */
	struct sfs_clock *clock;  /* virtual or real; owned */
	sfs_ns_t time_base_ns;    /* wall time of clock 0, for time stamps */
	struct sfs_stats *stats;  /* the run's report; owned */
	struct sfs_iolog *iolog;  /* device request log, or NULL */
	uint64_t ops[SFS_OP_COUNT];    /* calls by type */
	uint64_t bytes_read;      /* by the workload (sfs_read) */
	uint64_t bytes_written;   /* by the workload (sfs_write) */
	uint32_t cur_pid;         /* the process of the write in progress, or
				     0 (ext2's goal colour) */
	uint64_t atime_updates;   /* inode writes caused by atime (sfs_read) */
	FILE *report;             /* table printed at close, or NULL */
	sfs_fs_close_fn close_fn; /* called at close with the stats, or NULL */
	void *close_arg;

	struct sfs_jnl *jnl;      /* journal policy + transactions, or NULL
				     before the filesystem is loaded */
	struct sfs_bdev *jdev;    /* external journal device, or NULL */
	GThread *flusher;         /* real clock: idle-time ticks, or NULL */
	bool flusher_stop;        /* protected by lock */
	const struct sfs_fs_driver *driver; /* simfs run's, or NULL; fixed */
	void *driver_arg;
	bool defer_waits;         /* real clock over a timing device: modelled
				     waits are slept after the lock (fs.c,
				     sfs_op_begin); fixed */
	sfs_ns_t commit_done_ns;  /* defer_waits: the last commit's modelled
				     completion; protected by lock */
	unsigned commits_in_flight; /* defer_waits: commits whose thread
				     still sleeps out their I/O (the I/O of
				     later stages is only timed then);
				     protected by lock */
	sfs_cond commit_cond;     /* broadcast when one of those ends; waited
				     on with lock */
	bool jnl_off;             /* buffers bypass the journal (mount and
				     unmount superblock writes) */

	/* delayed allocation (delalloc.c; doc/allocators.md) */
	bool da_on;              /* delalloc in effect */
	bool da_converting;      /* placing reserved blocks: may use them */
	GQueue da_inodes;        /* inodes with delayed blocks, oldest first */
	uint64_t da_blocks;      /* delayed data blocks, all inodes */
	uint64_t da_meta;        /* metadata blocks reserved for them */
	struct sfs_da_counters da_ctr;

	/* CPU model work counts no other layer keeps (cpucount.c) */
	struct sfs_cpu_ctr cpu_ctr;

	struct sfs_alloc *alloc;          /* placement model */
	const struct sfs_map_ops *map;    /* mapping model */
	bool ro;
	bool error;             /* sticky error: cache and disk may disagree */
	bool error_recorded;	/* an error was said and s_state has ERROR
				   (sticky or not: kept at unmount) */
	uint8_t *gbad;		/* per group: SFS_GBAD_* bitmaps found bad
				   this mount (sfs_group_bad) */
	uint32_t gbad_marks;	/* bitmaps marked bad so far */
	bool host_full;         /* the last host reservation got -ENOSPC */
	uint64_t host_enospc;   /* allocations refused: host disk full */
	bool wb_host_full;      /* write-back is waiting for host space */
	uint64_t hr_lo, hr_hi;  /* host space reserved ahead: [lo, hi) bytes */
	uint64_t hr_win;        /* its window, bytes (fs_host_reserve) */
	uint64_t host_room_bytes; /* delalloc: host space at the last look */
	uint32_t host_room_age;   /* delalloc: new blocks before a new look */
};
G_STATIC_ASSERT(G_STRUCT_OFFSET(struct sfs_fs, geom) == 0);
/* the two names of the geometry are the same bytes */
G_STATIC_ASSERT(G_STRUCT_OFFSET(struct sfs_fs, inode_size) ==
		G_STRUCT_OFFSET(struct sfs_fs, geom.inode_size));
G_STATIC_ASSERT(G_STRUCT_OFFSET(struct sfs_fs, blocks_count) ==
		G_STRUCT_OFFSET(struct sfs_fs, geom.blocks_count));

/* ---- locking ---- */
static inline void sfs_lock(struct sfs_fs *fs) { sfs_mutex_lock(&fs->lock); }
static inline void sfs_unlock(struct sfs_fs *fs) { sfs_mutex_unlock(&fs->lock); }

/* ---- counting ---- */
static inline void sfs_count_op(struct sfs_fs *fs, enum sfs_op op)
{
	fs->ops[op]++;
}

/*
 * Every public verb runs between sfs_op_begin (take the lock, count the
 * operation, run what is due: timed commits, the flusher) and sfs_op_end
 * (finish a full transaction, drop the lock).
 */
void sfs_op_begin(struct sfs_fs *fs, enum sfs_op op);
void sfs_op_end(struct sfs_fs *fs);
/* sfs_op_begin for the same operation again (a retry): not counted. */
void sfs_op_resume(struct sfs_fs *fs);
/* The driver's view of commits (fs.h, struct sfs_fs_driver): false
 * without a driver; sfs_fs_commit_started is in model.h. */
bool sfs_fs_commit_busy(struct sfs_fs *fs);
/* defer_waits: wait, without the lock, until no commit is in flight and
 * the last one is done (group commit, inode.c sfs_fsync). */
void sfs_fs_commit_wait(struct sfs_fs *fs);
/* chattr +D (namei.c): the directory dir's change met a commit in flight
 * on a mount; wait for that commit (unlocked), then commit the change if
 * no commit has taken it meanwhile, as fsync does.  0 or -errno. */
int sfs_dirsync_wait(struct sfs_fs *fs, sfs_ino_t dir);

/* ---- the two doors for changed buffers ---- */
/* sfs_meta_dirty (model.h), and: */
/* A file data buffer changed (logged too under data=journal). */
void sfs_data_dirty(struct sfs_fs *fs, struct sfs_buf *b);

/* ---- inode accessors (host-endian views of struct sfs_dinode) ---- */
/* (sfs_i_mode, sfs_i_isdir/isreg/islnk, sfs_i_size, sfs_i_add_blocks and
 * sfs_i_fast_symlink are in model.h) */
static inline void sfs_i_set_mode(struct sfs_inode *ip, uint32_t mode)
{
	ip->d.i_mode = sfs_cpu_to_le16((uint16_t)mode);
}
static inline uint32_t sfs_i_nlink(const struct sfs_inode *ip)
{
	return sfs_le16(ip->d.i_links_count);
}
static inline void sfs_i_set_nlink(struct sfs_inode *ip, uint32_t n)
{
	ip->d.i_links_count = sfs_cpu_to_le16((uint16_t)n);
}
void sfs_i_set_size(struct sfs_inode *ip, uint64_t size);
/* Stamp times: any of SFS_SET_ATIME/MTIME/CTIME ORed in `which`. */
void sfs_i_touch(struct sfs_fs *fs, struct sfs_inode *ip, unsigned which);
/* A read of ip (file data or directory entries): atime as the policy says. */
void sfs_i_accessed(struct sfs_fs *fs, struct sfs_inode *ip);
/* Fill a struct sfs_attr from an inode. */
void sfs_i_to_attr(struct sfs_fs *fs, const struct sfs_inode *ip,
		   struct sfs_attr *out);

/* Does inode ino's slot lie in the tail of its group's inode table that
 * mke2fs left unzeroed (lazy_itable_init; mount.c)?  Only on a read-only
 * mount: a read-write one zeroes it.  Such a slot is never used, whatever
 * it holds. */
bool sfs_inode_slot_unzeroed(const struct sfs_fs *fs, sfs_ino_t ino);

/* ---- inode cache and table (fs.c) ---- */
/* Referenced inode ino; -ESTALE if ino is out of range or not in use. */
int sfs_iget(struct sfs_fs *fs, sfs_ino_t ino, struct sfs_inode **out);
/* Drop a reference; frees the inode on disk if it has no links and no
 * other references or opens. */
void sfs_iput(struct sfs_fs *fs, struct sfs_inode *ip);
/* A verb hands the kernel an entry for ip: one more lookup reference, if
 * they are counted (sfs_fs_count_lookups).  Under fs->lock. */
void sfs_kernel_ref(struct sfs_fs *fs, struct sfs_inode *ip);
/* sfs_reclaim_unlinked under fs->lock. */
unsigned sfs_reclaim_unlinked_locked(struct sfs_fs *fs);
/*
 * Allocate a new inode near dir (ext2 policy: directories spread over
 * groups, files in their parent's group), zero it, set mode/uid/gid, times,
 * links 0 (the caller links it), and mark it in the bitmap and counts.
 * -ENOSPC when no inode is free.
 */
int sfs_inode_alloc(struct sfs_fs *fs, struct sfs_inode *dir, uint32_t mode,
		    uint32_t uid, uint32_t gid, struct sfs_inode **out);

/* ip, nameless until now, has its first link: off the orphan list in
 * the same transaction (ext4_link's ext4_orphan_del). */
void sfs_orphan_linked(struct sfs_fs *fs, struct sfs_inode *ip);

/* Append-only or immutable (chattr +a / +i): the inode's name, links
 * and attributes may not change (the kernel's IS_APPEND, IS_IMMUTABLE). */
static inline bool sfs_i_pinned(const struct sfs_inode *ip)
{
	return sfs_le32(ip->d.i_flags) & (SFS_IMMUTABLE_FL | SFS_APPEND_FL);
}
static inline bool sfs_i_immutable(const struct sfs_inode *ip)
{
	return sfs_le32(ip->d.i_flags) & SFS_IMMUTABLE_FL;
}

/* ---- what mount.c and remount.c use of fs.c, and each other's ---- */
/* Time for the superblock's mount and write stamps (sfs_now, but held at
 * the anchor on a virtual clock). */
void sfs_sb_now(struct sfs_fs *fs, struct timespec *out);
/* Read the group descriptors into fs->gd (write false), or write them
 * into their buffers, checksummed (write true). */
int sfs_gdt_io(struct sfs_fs *fs, bool write);
/* sfs_fs_flush_super_gdt that also stamps the last-write time. */
int sfs_write_super_and_gdt(struct sfs_fs *fs);
/* Write the superblock's block by itself and flush the device. */
int sfs_write_super_alone(struct sfs_fs *fs);
/* sync's work with the lock held; a journal commits first (reason why). */
int sfs_fs_sync_locked(struct sfs_fs *fs, enum sfs_commit_reason why);
/* The flusher thread of a read-write mount on a real clock. */
void sfs_flusher_start(struct sfs_fs *fs);
void sfs_flusher_stop(struct sfs_fs *fs);
/* Mount: free or truncate what the orphan list holds.  How many, or
 * -errno. */
int sfs_orphan_cleanup(struct sfs_fs *fs);
/* Hand cfg's knobs of the running placement model to it (its configure
 * verb; remount.c).  0, or -EINVAL with *err. */
int sfs_alloc_configure(struct sfs_fs *fs, const struct sfs_config *cfg,
			char **err);

/* ---- blocks (fs.c; the models' part of them is in model.h) ---- */
/* fsync's work with the lock held: commit (reason fsync) and write back. */
int sfs_fs_fsync_locked(struct sfs_fs *fs);
/*
 * Is group g's block (inode false) or inode bitmap marked bad this mount?
 * A bitmap whose checksum does not match, that cannot be read or that
 * leaves its group's own metadata free is marked when it is fetched
 * (fs.c, group_bitmap_bad; ext4's EXT4_GROUP_INFO_BBITMAP_CORRUPT and
 * IBITMAP_CORRUPT): placement skips such a group (sfs_block_bitmap says
 * -EIO for it), frees into it leave the bitmap alone, and its free blocks
 * or inodes are not counted free.
 */
#define SFS_GBAD_BLOCK 0x01
#define SFS_GBAD_INODE 0x02
/* Bit i of an on-disk bitmap (block or inode). */
static inline bool sfs_bit_test(const uint8_t *map, uint32_t i)
{
	return map[i >> 3] & (1u << (i & 7));
}
static inline void sfs_bit_set(uint8_t *map, uint32_t i)
{
	map[i >> 3] |= (uint8_t)(1u << (i & 7));
}
static inline void sfs_bit_clear(uint8_t *map, uint32_t i)
{
	map[i >> 3] &= (uint8_t) ~(1u << (i & 7));
}
/* Free blocks in the whole filesystem / available to this caller. */
uint64_t sfs_free_blocks(const struct sfs_fs *fs);

/* ---- file mapping: the doors to the mapping model (model.c) ---- */
/* The mapping of one inode: extent-mapped inodes (EXTENTS_FL) use the
 * extent tree, the others the block map, whatever alloc= chose (ext4 reads
 * both); fs->map only decides what new inodes get.  The engine reaches
 * the ops only through the doors below (and sfs_bmap / sfs_truncate built
 * on them); only the tests look at a map with it. */
static inline const struct sfs_map_ops *sfs_imap(struct sfs_fs *fs,
						 const struct sfs_inode *ip)
{
	(void)fs;
	return (sfs_le32(ip->d.i_flags) & SFS_EXTENTS_FL)
		       ? &sfs_extent_map_ops
		       : &sfs_blockmap_map_ops;
}
/* The map op of ip's mapping, as struct sfs_map_ops describes it. */
int sfs_map_block(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t lblk,
		  bool create, sfs_blk_t *pblk_out, bool *new_out);
/* Its truncate op: free every block mapped at lblk >= from. */
int sfs_map_free_from(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t from);
/* Its walk op: sfs_map_walk (model.h). */
/* Its name ("blockmap", "extent"). */
const char *sfs_map_name(struct sfs_fs *fs, const struct sfs_inode *ip);
/* Largest file size (bytes) it can address. */
uint64_t sfs_map_max_bytes(struct sfs_fs *fs, const struct sfs_inode *ip);
/* Range edits for fallocate: mode is one of SFS_FALLOC_PUNCH_HOLE,
 * _ZERO_RANGE (the unwrite op), _COLLAPSE_RANGE, _INSERT_RANGE.  Does
 * ip's mapping have the op?  Run it: -EOPNOTSUPP without. */
bool sfs_map_can_edit(struct sfs_fs *fs, const struct sfs_inode *ip, int mode);
int sfs_map_edit(struct sfs_fs *fs, struct sfs_inode *ip, int mode,
		 uint32_t from, uint32_t to);
/* Set a new file's, directory's or slow symlink's map up as the mount's
 * mapping model (fs->map) wants it. */
void sfs_map_init_inode(struct sfs_fs *fs, struct sfs_inode *ip);
/* The placement model's door besides sfs_alloc_blocks: ip was closed,
 * truncated or freed, drop the model's state for it. */
void sfs_alloc_release_inode(struct sfs_fs *fs, struct sfs_inode *ip);
/*
 * Physical block for logical block lblk of ip.  With create, a hole is
 * filled (allocated and zeroed on disk view, i_blocks updated); without,
 * *pblk_out = 0 for a hole.  -ENOSPC, -EFBIG (beyond the mapping's reach),
 * -EIO.
 */
int sfs_bmap(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t lblk,
	     bool create, sfs_blk_t *pblk_out);
/* Free every block of ip at or after the one holding byte new_size, then
 * set i_size = new_size; zero the tail of the last partial block. */
int sfs_truncate(struct sfs_fs *fs, struct sfs_inode *ip, uint64_t new_size);

/* ---- write strategies (inode.c) ---- */
/*
 * How sfs_write_ctx puts a regular file's data in, as ext4_set_aops
 * chooses a file's address_space_operations once (Linux fs/ext4/inode.c).
 * The frame (sfs_write_ctx) checks the call, then walks the range: whole
 * blocks from a block boundary go to write_blocks (when the strategy has
 * it), anything else one block or part of one at a time to write_partial;
 * then it sets the size and timestamps, calls end, runs a chattr +S
 * fsync, and calls finish.  The verbs write from their context's next
 * byte and advance it; they return 0 (go on), a negative errno, or 1 to
 * end the write short without an error.
 */
struct sfs_wctx;
struct sfs_write_ops {
	const char *name;
	/* before the first byte (may fail: nothing is written) [nothing] */
	int (*begin)(struct sfs_wctx *w);
	/* whole blocks from lblk, at most max of them, at least one unless
	 * it fails or ends the write [NULL: block by block, write_partial] */
	int (*write_blocks)(struct sfs_wctx *w, uint32_t lblk, uint32_t max);
	/* [boff, boff+n) of block lblk */
	int (*write_partial)(struct sfs_wctx *w, uint32_t lblk, uint32_t boff,
			     size_t n);
	/* the size and inode are updated; returns the write's result
	 * [rc] */
	int (*end)(struct sfs_wctx *w, int rc);
	/* last, after begin succeeded or failed, even after an error;
	 * returns the write's result [rc] */
	int (*finish)(struct sfs_wctx *w, int rc);
};
/* The strategy ip's buffered writes take (NULL: not a regular file):
 * data=journal's, delalloc's or the cached one. */
const struct sfs_write_ops *sfs_write_choose(const struct sfs_fs *fs,
					     const struct sfs_inode *ip);
/* The strategy of a write to ip with sfs_ioctx flags ioflags: the inode's
 * (chosen now if it has none), or O_DIRECT's for this call. */
const struct sfs_write_ops *
sfs_write_ops_of(struct sfs_fs *fs, struct sfs_inode *ip, unsigned ioflags);

/* ---- delayed allocation (delalloc.c) ---- */
/* Decide whether delalloc is in effect and hook it into the cache. */
void sfs_da_setup(struct sfs_fs *fs);
/* Does a buffered write to ip delay its allocation? */
bool sfs_da_wanted(const struct sfs_fs *fs, const struct sfs_inode *ip);
/* Blocks held in reserve (data + metadata estimate), all inodes. */
static inline uint64_t sfs_da_reserved(const struct sfs_fs *fs)
{
	return fs->da_blocks + fs->da_meta;
}
/*
 * Store [boff, boff+n) of logical block lblk (a hole) as delayed data,
 * reserving a block (and metadata) for it the first time.  -ENOSPC when
 * nothing can be reserved even after placing every delayed block.
 */
int sfs_da_write(struct sfs_fs *fs, struct sfs_inode *ip, uint32_t lblk,
		 uint32_t boff, const void *src, size_t n);
/* The delayed data of logical block lblk, or NULL. */
const uint8_t *sfs_da_lookup(const struct sfs_inode *ip, uint32_t lblk);
/* Truncate to new_size: zero the delayed tail block past it, drop (as
 * died) the delayed blocks wholly beyond it. */
void sfs_da_truncate(struct sfs_fs *fs, struct sfs_inode *ip,
		     uint64_t new_size);
/* Drop every delayed block of ip unwritten (the file is being freed). */
void sfs_da_drop(struct sfs_fs *fs, struct sfs_inode *ip);
/* Place and write all delayed blocks of ip / of every inode. */
int sfs_da_flush_inode(struct sfs_fs *fs, struct sfs_inode *ip,
		       enum sfs_da_why why);
int sfs_da_flush_all(struct sfs_fs *fs, enum sfs_da_why why);
/* i_size as the inode table may show it: not past unplaced data. */
uint64_t sfs_da_disksize(const struct sfs_inode *ip, uint64_t size);
/* Blocks ip holds in reserve (for stat's st_blocks). */
uint32_t sfs_da_inode_blocks(const struct sfs_inode *ip);

/* ---- directories (dir.c) ---- */
/* Look name up in directory dp: -ENOENT if absent. */
int sfs_dir_lookup(struct sfs_fs *fs, struct sfs_inode *dp, const char *name,
		   size_t len, sfs_ino_t *ino_out, uint8_t *ftype_out);
/* Add an entry (the caller checked it is absent); grows the directory. */
int sfs_dir_add(struct sfs_fs *fs, struct sfs_inode *dp, const char *name,
		size_t len, sfs_ino_t ino, uint8_t ftype);
/* Remove an entry: -ENOENT if absent. */
int sfs_dir_remove(struct sfs_fs *fs, struct sfs_inode *dp, const char *name,
		   size_t len);
/* Point an existing entry at another inode (rename over). */
int sfs_dir_retarget(struct sfs_fs *fs, struct sfs_inode *dp,
		     const char *name, size_t len, sfs_ino_t ino,
		     uint8_t ftype);
/* Write the first block of a new directory: "." -> dp, ".." -> parent. */
int sfs_dir_init(struct sfs_fs *fs, struct sfs_inode *dp, sfs_ino_t parent);
/* Repoint ".." (a directory moved to another parent). */
int sfs_dir_set_dotdot(struct sfs_fs *fs, struct sfs_inode *dp,
		       sfs_ino_t parent);
/* Does dp hold anything but "." and ".."? */
int sfs_dir_is_empty(struct sfs_fs *fs, struct sfs_inode *dp, bool *empty);
/* readdir walk, cookies as in fs.h sfs_readdir. */
int sfs_dir_iterate(struct sfs_fs *fs, struct sfs_inode *dp, uint64_t off,
		    sfs_filldir_fn fn, void *ctx);
/* Free the in-memory name index (inode leaving the cache). */
void sfs_dir_index_free(struct sfs_dir_index *idx);

/* ---- xattrs (xattr.c) ---- */
int sfs_xattr_get(struct sfs_fs *fs, struct sfs_inode *ip, const char *name,
		  void *buf, size_t size, size_t *len_out);
int sfs_xattr_set(struct sfs_fs *fs, struct sfs_inode *ip, const char *name,
		  const void *value, size_t size, int flags);
int sfs_xattr_list(struct sfs_fs *fs, struct sfs_inode *ip, char *buf,
		   size_t size, size_t *len_out);
int sfs_xattr_remove(struct sfs_fs *fs, struct sfs_inode *ip,
		     const char *name);
/* The inode is being freed: drop its reference to its xattr block. */
int sfs_xattr_drop(struct sfs_fs *fs, struct sfs_inode *ip);
/* The raw value under name index idx with an empty name (the ACLs):
 * get (g_free *value_out; -ENODATA), set (replacing). */
int sfs_xattr_get_index(struct sfs_fs *fs, struct sfs_inode *ip, uint8_t idx,
			void **value_out, size_t *len_out);
int sfs_xattr_set_index(struct sfs_fs *fs, struct sfs_inode *ip, uint8_t idx,
			const void *value, size_t size);

/* ---- POSIX ACLs (acl.c) ---- */
struct sfs_acl;
int sfs_acl_from_xattr(const void *value, size_t size, struct sfs_acl **out);
int sfs_acl_from_disk(const void *value, size_t size, struct sfs_acl **out);
void *sfs_acl_to_disk(const struct sfs_acl *a, size_t *len_out);
size_t sfs_acl_to_xattr(const struct sfs_acl *a, void *buf);
unsigned sfs_acl_count(const struct sfs_acl *a);
bool sfs_acl_mode(const struct sfs_acl *a, uint32_t *mode);
int sfs_acl_inherit(struct sfs_fs *fs, struct sfs_inode *dp,
		    struct sfs_inode *ip, bool has_umask, uint32_t umask);
int sfs_acl_chmod_inode(struct sfs_fs *fs, struct sfs_inode *ip);

/* ---- checks shared by the verbs ---- */
/* 0, -ENAMETOOLONG (> 255 bytes) or -EINVAL (empty, contains '/'). */
int sfs_check_name(const char *name, size_t *len_out);
/* What a metadata checksum mismatch returns: ext4's EFSBADCRC, which is
 * EBADMSG ("Bad message"), for an inode, a directory leaf, an htree block
 * or an xattr block.  (A bad extent block is -EIO, as ext4's callers see
 * it; a bad bitmap marks its group, sfs_group_bad.) */
#define SFS_EFSBADCRC EBADMSG

#endif /* SFS_FS_PRIV_H */
