/*
 * dir.c - ext2 directories: linear ones with an in-memory hashed name
 * index that keeps lookups in large directories off the disk, and htree
 * (dir_index) ones read and written through their on-disk index.
 *
 * A directory is i_size / bs blocks, each tiled exactly by records
 * {inode, rec_len, name_len, file_type, name}.  Block 0 starts with "."
 * (rec_len 12) and "..".  Verbs: sfs_dir_lookup, _add, _remove, _retarget,
 * _init, _set_dotdot, _is_empty, _iterate; all expect fs->lock held.
 *
 * Invariants:
 *  1. In a linear directory live entries never move: insert splits a
 *     record's slack or reuses an inode-0 record, remove merges into the
 *     predecessor in the same block (or sets inode 0 when first in the
 *     block).  So a byte position names one entry for its whole life,
 *     which is what block-order readdir cookies and the name index rely
 *     on.  (Leaf splits move entries of an htree: invariant 6.)
 *  2. Every block read is checked (rec_len bounds, alignment, tiling,
 *     name_len, dots) before use; a bad one gives -EIO and the sticky
 *     error state through sfs_fs_error, never a crash.
 *  3. The name index (struct sfs_dir_index, linear directories only,
 *     built on first use, freed with the inode) maps XXH3(name) -> byte
 *     position of every live entry with open addressing, and keeps per
 *     block the largest record an insert could place there, so neither
 *     lookups nor inserts walk the directory.  Any failure while
 *     maintaining it drops it; the next use rebuilds it.
 *  4. dx_enabled (image has dir_index, mount not nodir_index) and
 *     SFS_INDEX_FL: the directory is an htree, and every name sits in the
 *     leaf its hash selects.  dx_find reads root, <= 1 dx_node, the leaf
 *     (and the next leaf for a continued hash); dx_add inserts there,
 *     splitting leaf and index blocks (dx_split_add); a one-block linear
 *     directory that overflows is converted (dx_make_indexed).  Index
 *     blocks are checked on every read (dx_read_root, dx_read_node).
 *  5. With the flag set but dx_enabled false, the directory is read as a
 *     linear one (the dx_root reads as "." and a ".." spanning the block,
 *     a dx_node as one unused record); removes keep the index valid, and
 *     sfs_dir_add clears the flag (dir_drop_htree) before it inserts.
 *  6. readdir of an htree, or of a one-block directory when dx_enabled
 *     (the kernel's is_dx_dir), is in hash order with cookies DIR_HC |
 *     position (dir_iterate_hashed), which no split or conversion
 *     changes; other directories use byte positions (invariant 1).
 *  7. A block that passed dir_check_block is not walked again while its
 *     buffer keeps the contents it was checked with (struct sfs_buf's
 *     checked note, dir_checked_as; the cache clears it on every fill
 *     and every dirty, and leaf_dirty, dir.c's own valid change, keeps
 *     it), as ext4 trusts a buffer_verified block; only a get that
 *     asks for the block's room checks again.
 *  doc/internals.md, "Directories" and "Hashed directories".
 */
#include <errno.h>
#include <string.h>
#include <xxhash.h>

#include "csum.h"
#include "dirhash.h"
#include "fs_priv.h"

#define DIR_NO_POS UINT32_MAX /* empty index slot */
#define DIR_MIN_SLOTS 16u
#define DIR_MIN_REC SFS_DIRENT_LEN(1) /* smallest record: 12 bytes */

struct dir_slot {
	uint64_t hash; /* XXH3 of the name */
	uint32_t pos;  /* byte position of the entry, DIR_NO_POS = empty */
};

struct sfs_dir_index {
	struct dir_slot *slots; /* linear probing, load factor <= 1/2 */
	uint32_t mask;		/* slot count - 1 (a power of two) */
	uint32_t count;		/* live entries, "." and ".." included */
	uint16_t *room;		/* per block: largest record that fits, bytes */
	uint32_t nblocks;	/* blocks described by room[] (= i_size / bs) */
	uint32_t room_cap;	/* allocated length of room[] */
	uint32_t first_room;	/* no block below this fits even DIR_MIN_REC */
};

/* XXH3 of a name, seeded from the image's s_hash_seed: deterministic for
 * an image (replays stay reproducible), unknown to whoever picks names. */
static inline uint64_t dir_hash(const struct sfs_fs *fs, const char *name,
				size_t len)
{
	uint64_t seed = sfs_le32(fs->sb.s_hash_seed[0]) |
			(uint64_t)sfs_le32(fs->sb.s_hash_seed[1]) << 32;

	return XXH3_64bits_withSeed(name, len, seed);
}

static inline struct sfs_ddirent *de_at(uint8_t *data, uint32_t off)
{
	return (struct sfs_ddirent *)(data + off);
}

static inline uint32_t de_rec_len(const struct sfs_ddirent *de)
{
	return sfs_le16(de->rec_len);
}

static inline bool dir_has_ftype(const struct sfs_fs *fs)
{
	return sfs_le32(fs->sb.s_feature_incompat) &
	       SFS_FEATURE_INCOMPAT_FILETYPE;
}

static inline bool is_dot_entry(const struct sfs_ddirent *de, unsigned n)
{
	return de->name_len == n && de->name[0] == '.' &&
	       (n == 1 || de->name[1] == '.');
}

/* ---- the name index ---- */

/* Free a directory's name index (NULL is fine); the core calls this when
 * the inode leaves the cache. */
void sfs_dir_index_free(struct sfs_dir_index *ix)
{
	if (!ix)
		return;
	g_free(ix->slots);
	g_free(ix->room);
	g_free(ix);
}

static void dir_index_drop(struct sfs_inode *dp)
{
	sfs_dir_index_free(dp->dindex);
	dp->dindex = NULL;
}

static void dix_put_slot(struct dir_slot *slots, uint32_t mask, uint64_t h,
			 uint32_t pos)
{
	uint32_t i = (uint32_t)h & mask;

	while (slots[i].pos != DIR_NO_POS)
		i = (i + 1) & mask;
	slots[i].hash = h;
	slots[i].pos = pos;
}

/* Make room for `extra` more entries at load <= 1/2.  0 or -ENOMEM, with
 * the index unchanged on failure. */
static int dix_reserve(struct sfs_dir_index *ix, uint32_t extra)
{
	uint64_t want = ((uint64_t)ix->count + extra) * 2;
	uint64_t n = (uint64_t)ix->mask + 1;
	struct dir_slot *slots;

	if (ix->slots && want <= n)
		return 0;
	if (n < DIR_MIN_SLOTS)
		n = DIR_MIN_SLOTS;
	while (n < want)
		n *= 2;
	if (n > (1u << 30))
		return -ENOMEM;
	slots = g_try_new(struct dir_slot, n);
	if (!slots)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++)
		slots[i].pos = DIR_NO_POS;
	if (ix->slots) {
		for (uint64_t i = 0; i <= ix->mask; i++)
			if (ix->slots[i].pos != DIR_NO_POS)
				dix_put_slot(slots, (uint32_t)n - 1,
					     ix->slots[i].hash,
					     ix->slots[i].pos);
		g_free(ix->slots);
	}
	ix->slots = slots;
	ix->mask = (uint32_t)n - 1;
	return 0;
}

/* Add (h, pos); dix_reserve must have made room. */
static void dix_insert(struct sfs_dir_index *ix, uint64_t h, uint32_t pos)
{
	dix_put_slot(ix->slots, ix->mask, h, pos);
	ix->count++;
}

/* Remove (h, pos) with backward-shift deletion (no tombstones). */
static void dix_delete(struct sfs_dir_index *ix, uint64_t h, uint32_t pos)
{
	uint32_t mask = ix->mask;
	uint32_t i = (uint32_t)h & mask;
	uint32_t j;

	for (;;) {
		if (ix->slots[i].pos == DIR_NO_POS)
			return; /* not present */
		if (ix->slots[i].hash == h && ix->slots[i].pos == pos)
			break;
		i = (i + 1) & mask;
	}
	j = i;
	for (;;) {
		uint32_t k;

		j = (j + 1) & mask;
		if (ix->slots[j].pos == DIR_NO_POS)
			break;
		k = (uint32_t)ix->slots[j].hash & mask;
		/* keep slot j where it is if its home k lies in (i, j] */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		ix->slots[i] = ix->slots[j];
		i = j;
	}
	ix->slots[i].pos = DIR_NO_POS;
	ix->count--;
}

/* Grow room[] to hold n blocks.  0 or -ENOMEM (index unchanged). */
static int dix_room_reserve(struct sfs_dir_index *ix, uint32_t n)
{
	uint32_t cap = ix->room_cap ? ix->room_cap : 4;
	uint16_t *room;

	if (n <= ix->room_cap)
		return 0;
	while (cap < n)
		cap = cap > UINT32_MAX / 2 ? n : cap * 2;
	room = g_try_renew(uint16_t, ix->room, cap);
	if (!room)
		return -ENOMEM;
	ix->room = room;
	ix->room_cap = cap;
	return 0;
}

/* Record block b's largest insertable record and keep first_room exact. */
static void dix_set_room(struct sfs_dir_index *ix, uint32_t b, uint32_t room)
{
	ix->room[b] = (uint16_t)room;
	if (room >= DIR_MIN_REC && b < ix->first_room)
		ix->first_room = b;
	while (ix->first_room < ix->nblocks &&
	       ix->room[ix->first_room] < DIR_MIN_REC)
		ix->first_room++;
}

/* ---- reading and checking blocks ---- */

/* Number of blocks of dp; -EIO if i_size is not a positive multiple of bs. */
static int dir_nblocks(struct sfs_fs *fs, struct sfs_inode *dp, uint32_t *out)
{
	uint64_t size = sfs_i_size(dp);

	if (size == 0 || size % fs->bs || size > UINT32_MAX) {
		sfs_fs_error(fs, -EIO,
			     "directory inode %u: size %llu is not a positive "
			     "multiple of the block size %u",
			     dp->ino, (unsigned long long)size, fs->bs);
		return -EIO;
	}
	*out = (uint32_t)(size / fs->bs);
	return 0;
}

/* ---- metadata_csum (csum.h) ---- */

/* Bytes of a leaf its entries use: the block, less the checksum tail. */
static inline uint32_t leaf_end(const struct sfs_fs *fs)
{
	return sfs_csum_dir_end(fs);
}

/* Seed of dp's block checksums (its number and generation). */
static uint32_t dir_seed(const struct sfs_fs *fs, const struct sfs_inode *dp)
{
	return fs->csum ? sfs_csum_owner_seed(fs, dp->ino, dp->d.i_generation)
			: 0;
}

static inline bool dir_is_dx(const struct sfs_fs *fs,
			     const struct sfs_inode *dp);

/* Is block lblk of dp shaped as an htree block: an indexed directory's
 * root ("." then ".." spanning the block) or node (one empty record
 * spanning it)? */
static bool dir_dx_shaped(const struct sfs_fs *fs, const struct sfs_inode *dp,
			  uint32_t lblk, const uint8_t *data)
{
	const struct sfs_ddirent *de = (const void *)data;

	if (!(sfs_le32(dp->d.i_flags) & SFS_INDEX_FL))
		return false;
	if (lblk != 0)
		return !de->inode && sfs_le16(de->rec_len) == fs->bs;
	de = (const void *)(data + DIR_MIN_REC);
	return sfs_le16(((const struct sfs_ddirent *)data)->rec_len) ==
		   DIR_MIN_REC &&
	       sfs_le16(de->rec_len) == fs->bs - DIR_MIN_REC;
}

/*
 * What a directory block passed dir_check_block as (struct sfs_buf's
 * checked, invariant 7): dp's number and generation, whether it is block
 * 0 and whether dp is indexed, the inputs of the check besides the
 * block's bytes.  Never 0 (inode numbers start at 1).
 */
static uint64_t dir_checked_as(const struct sfs_inode *dp, uint32_t lblk)
{
	uint64_t gen = sfs_le32(dp->d.i_generation) & 0x3fffffffu;

	return (uint64_t)dp->ino << 32 | gen << 2 | (uint64_t)(lblk == 0) << 1 |
	       ((sfs_le32(dp->d.i_flags) & SFS_INDEX_FL) != 0);
}

/* Every changed leaf leaves through here: tail and sum, then dirty.  The
 * change is dir.c's own, which keeps the block valid: a check it had
 * passed still holds (the cache's dirty clears the note). */
static void leaf_dirty(struct sfs_fs *fs, struct sfs_inode *dp,
		       struct sfs_buf *b)
{
	uint64_t checked = b->checked;

	sfs_csum_dir_set(fs, dir_seed(fs, dp), b->data);
	sfs_meta_dirty(fs, b);
	b->checked = checked;
}

/*
 * Check one directory block (ext-format 5.2, and "." / ".." first in block
 * 0) and report in *room_out the largest record an insert could place in
 * it.  0, or -EIO after sfs_fs_error naming inode, block and offset.
 */
static int dir_check_block(struct sfs_fs *fs, struct sfs_inode *dp,
			   uint32_t lblk, sfs_blk_t pblk, uint8_t *data,
			   uint32_t *room_out)
{
	uint32_t max_ino = sfs_le32(fs->sb.s_inodes_count);
	bool ftype = dir_has_ftype(fs);
	uint32_t off = 0, room = 0, n = 0, rl = 0, end = fs->bs;
	/* bad_sum: the reason, when it is the leaf's checksum */
	const char *why = NULL, *bad_sum = NULL;
	struct sfs_ddirent *de = NULL;

	if (fs->csum) {
		/* a leaf ends in its checksum tail; an htree block (the root,
		 * or a node: one empty record spanning it) has its own sum,
		 * checked with the index (dx_check_frame) */
		de = de_at(data, 0);
		if (dir_dx_shaped(fs, dp, lblk, data)) {
			/* the kernel may leave a stale leaf tail inside the
			 * root's ".." record: the shape decides, as in
			 * ext4's is_dx_block */
		} else if (!sfs_csum_dir_has_tail(fs, data)) {
			why = "leaf without a checksum tail";
		} else {
			end = sfs_csum_dir_end(fs);
			if (!sfs_csum_dir_ok(fs, dir_seed(fs, dp), data))
				why = bad_sum = "leaf checksum mismatch";
		}
		de = NULL;
	}
	while (!why && off < end) {
		uint32_t ino, avail;

		de = de_at(data, off);
		rl = 0;
		if (end - off < DIR_MIN_REC) {
			de = NULL;
			why = "record header crosses the block end";
			break;
		}
		rl = de_rec_len(de);
		ino = sfs_le32(de->inode);
		if (rl < DIR_MIN_REC || rl % 4 || rl > end - off) {
			why = "bad rec_len";
			break;
		}
		if (SFS_DIRENT_HDR + (uint32_t)de->name_len > rl) {
			why = "name_len does not fit rec_len";
			break;
		}
		if (ino > max_ino) {
			why = "inode number out of range";
			break;
		}
		if (ino && de->name_len == 0) {
			why = "empty name";
			break;
		}
		if (ino && ftype && de->file_type > SFS_FT_SYMLINK) {
			why = "bad file type";
			break;
		}
		if (lblk == 0 && n == 0) {
			if (ino != dp->ino || !is_dot_entry(de, 1)) {
				why = "first entry is not '.'";
				break;
			}
			avail = 0; /* never split ".": ".." must follow it */
		} else if (lblk == 0 && n == 1) {
			if (!ino || !is_dot_entry(de, 2)) {
				why = "second entry is not '..'";
				break;
			}
			avail = rl - SFS_DIRENT_LEN(2);
		} else {
			avail = ino ? rl - SFS_DIRENT_LEN(de->name_len) : rl;
		}
		if (avail > room)
			room = avail;
		off += rl;
		n++;
	}
	if (!why && lblk == 0 && n < 2) {
		why = "missing '..'";
		off = 0;
	}
	if (why) {
		sfs_fs_error(fs, -EIO,
			     "directory inode %u: block %u (logical %u) "
			     "offset %u: %s (rec_len %u, name_len %u)",
			     dp->ino, pblk, lblk, off, why, rl,
			     de ? de->name_len : 0);
		return why == bad_sum ? -SFS_EFSBADCRC : -EIO;
	}
	if (room_out)
		*room_out = room;
	return 0;
}

/*
 * Get logical block lblk of dp, checked.  The caller puts *out.  -EIO for a
 * hole or a corrupt block (sticky error state), or the mapping's error.
 */
static int dir_get_block_cat(struct sfs_fs *fs, struct sfs_inode *dp,
			     uint32_t lblk, enum sfs_io_cat cat,
			     struct sfs_buf **out, uint32_t *room_out)
{
	struct sfs_buf *b;
	sfs_blk_t pblk;
	int rc;

	rc = sfs_bmap(fs, dp, lblk, false, &pblk);
	if (rc)
		return rc;
	if (pblk == 0 || pblk < fs->first_data_block ||
	    pblk >= fs->blocks_count) {
		sfs_fs_error(fs, -EIO,
			     "directory inode %u: logical block %u maps to "
			     "%s block %u",
			     dp->ino, lblk, pblk ? "out-of-range" : "no", pblk);
		return -EIO;
	}
	fs->cpu_ctr.dir_blocks++;
	rc = sfs_cache_get(fs->cache, pblk, cat, &b);
	if (rc)
		return rc;
	if (!room_out && b->checked == dir_checked_as(dp, lblk)) {
		/* passed as this block of dp and unchanged since (invariant
		 * 7): not walked again; the modelled CPU is charged the leaf
		 * checksum the check would verify, as before */
		if (!dir_dx_shaped(fs, dp, lblk, b->data))
			sfs_csum_dir_charge(fs);
		*out = b;
		return 0;
	}
	rc = dir_check_block(fs, dp, lblk, pblk, b->data, room_out);
	if (rc) {
		sfs_cache_put(fs->cache, b);
		return rc;
	}
	b->checked = dir_checked_as(dp, lblk);
	*out = b;
	return 0;
}

static int dir_get_block(struct sfs_fs *fs, struct sfs_inode *dp, uint32_t lblk,
			 struct sfs_buf **out, uint32_t *room_out)
{
	return dir_get_block_cat(fs, dp, lblk, SFS_IO_DIR, out, room_out);
}

/* Build dp's index by reading every block.  0, -EIO, -ENOMEM. */
static int dir_index_build(struct sfs_fs *fs, struct sfs_inode *dp)
{
	struct sfs_dir_index *ix;
	uint32_t n;
	int rc;

	rc = dir_nblocks(fs, dp, &n);
	if (rc)
		return rc;
	ix = g_new0(struct sfs_dir_index, 1);
	rc = dix_room_reserve(ix, n);
	if (!rc)
		rc = dix_reserve(ix, 2);
	if (rc)
		goto out_free;
	ix->nblocks = n;
	for (uint32_t lblk = 0; lblk < n; lblk++) {
		struct sfs_buf *b;
		uint32_t room, rl;

		rc = dir_get_block(fs, dp, lblk, &b, &room);
		if (rc)
			goto out_free;
		for (uint32_t off = 0; off < leaf_end(fs); off += rl) {
			struct sfs_ddirent *de = de_at(b->data, off);

			rl = de_rec_len(de);
			fs->cpu_ctr.dir_entries++;
			if (!de->inode)
				continue;
			rc = dix_reserve(ix, 1);
			if (rc) {
				sfs_cache_put(fs->cache, b);
				goto out_free;
			}
			dix_insert(ix, dir_hash(fs, de->name, de->name_len),
				   lblk * fs->bs + off);
		}
		sfs_cache_put(fs->cache, b);
		ix->room[lblk] = (uint16_t)room;
	}
	ix->first_room = 0;
	dix_set_room(ix, 0, ix->room[0]);
	dp->dindex = ix;
	return 0;

out_free:
	sfs_dir_index_free(ix);
	return rc;
}

static int dir_index_get(struct sfs_fs *fs, struct sfs_inode *dp,
			 struct sfs_dir_index **out)
{
	int rc;

	if (!sfs_i_isdir(dp))
		return -ENOTDIR;
	if (!dp->dindex) {
		rc = dir_index_build(fs, dp);
		if (rc)
			return rc;
	}
	*out = dp->dindex;
	return 0;
}

/*
 * Find the live entry called name through the index.  On success *b_out
 * holds its block (caller puts it), *off_out its offset there and *pos_out
 * its byte position.  -ENOENT if absent, -EIO.
 */
static int dir_find(struct sfs_fs *fs, struct sfs_inode *dp, const char *name,
		    size_t len, struct sfs_buf **b_out, uint32_t *off_out,
		    uint32_t *pos_out)
{
	struct sfs_dir_index *ix;
	uint64_t h = dir_hash(fs, name, len);
	int rc;

	rc = dir_index_get(fs, dp, &ix);
	if (rc)
		return rc;
	for (uint32_t i = (uint32_t)h & ix->mask;
	     ix->slots[i].pos != DIR_NO_POS; i = (i + 1) & ix->mask) {
		uint32_t pos = ix->slots[i].pos;
		uint32_t want = pos % fs->bs, off, rl;
		struct sfs_ddirent *de = NULL;
		struct sfs_buf *b;

		fs->cpu_ctr.dir_entries++;
		if (ix->slots[i].hash != h)
			continue;
		rc = dir_get_block(fs, dp, pos / fs->bs, &b, NULL);
		if (rc)
			return rc;
		for (off = 0; off < want; off += rl) {
			rl = de_rec_len(de_at(b->data, off));
			fs->cpu_ctr.dir_entries++;
		}
		if (off == want)
			de = de_at(b->data, off);
		if (!de || !de->inode) {
			sfs_cache_put(fs->cache, b);
			dir_index_drop(dp);
			sfs_fs_error(fs, -EIO,
				     "directory inode %u: name index out of "
				     "step at position %u",
				     dp->ino, pos);
			return -EIO;
		}
		if (de->name_len == len && memcmp(de->name, name, len) == 0) {
			*b_out = b;
			*off_out = off;
			*pos_out = pos;
			return 0;
		}
		sfs_cache_put(fs->cache, b); /* hash collision: keep probing */
	}
	return -ENOENT;
}

/* ---- writing entries ---- */

/* Write a fresh record at off: header, name, zeroed padding and slack. */
static void de_fill(struct sfs_fs *fs, uint8_t *data, uint32_t off,
		    uint32_t rec_len, const char *name, size_t len,
		    sfs_ino_t ino, uint8_t ftype)
{
	struct sfs_ddirent *de = de_at(data, off);

	memset(data + off, 0, rec_len);
	de->inode = sfs_cpu_to_le32(ino);
	de->rec_len = sfs_cpu_to_le16((uint16_t)rec_len);
	de->name_len = (uint8_t)len;
	de->file_type = dir_has_ftype(fs) ? ftype : 0;
	memcpy(de->name, name, len);
}

/*
 * Place a new entry in a checked block: split the first live record whose
 * slack holds it, or reuse an inode-0 record big enough (never "." of block
 * 0).  *off_out = the new entry's offset; -ENOSPC if nothing fits.
 */
static int dir_block_insert(struct sfs_fs *fs, uint8_t *data, uint32_t lblk,
			    const char *name, size_t len, sfs_ino_t ino,
			    uint8_t ftype, uint32_t *off_out)
{
	uint32_t need = SFS_DIRENT_LEN(len), rl;

	for (uint32_t off = 0; off < leaf_end(fs); off += rl) {
		struct sfs_ddirent *de = de_at(data, off);
		uint32_t used;

		rl = de_rec_len(de);
		fs->cpu_ctr.dir_entries++;
		if (lblk == 0 && off == 0)
			continue;
		if (!de->inode) {
			if (rl < need)
				continue;
			de_fill(fs, data, off, rl, name, len, ino, ftype);
			*off_out = off;
			return 0;
		}
		used = SFS_DIRENT_LEN(de->name_len);
		if (rl - used < need)
			continue;
		de->rec_len = sfs_cpu_to_le16((uint16_t)used);
		de_fill(fs, data, off + used, rl - used, name, len, ino, ftype);
		*off_out = off + used;
		return 0;
	}
	return -ENOSPC;
}

/* Largest insertable record of a block already checked (its contents only
 * changed through this file). */
static uint32_t dir_block_room(struct sfs_fs *fs, uint8_t *data, uint32_t lblk)
{
	uint32_t room = 0, rl;

	for (uint32_t off = 0; off < leaf_end(fs); off += rl) {
		struct sfs_ddirent *de = de_at(data, off);
		uint32_t avail;

		rl = de_rec_len(de);
		fs->cpu_ctr.dir_entries++;
		if (lblk == 0 && off == 0)
			continue;
		avail = de->inode ? rl - SFS_DIRENT_LEN(de->name_len) : rl;
		if (avail > room)
			room = avail;
	}
	return room;
}

/*
 * A failed grow: give back whatever the mapping allocated at or after
 * logical block lblk (sfs_truncate frees only what a shrink cuts off, so
 * claim one more block first).  i_size ends at lblk * bs.
 */
static void dir_unmap_from(struct sfs_fs *fs, struct sfs_inode *dp,
			   uint32_t lblk)
{
	uint64_t size = (uint64_t)lblk * fs->bs;

	sfs_i_set_size(dp, size + fs->bs);
	if (sfs_truncate(fs, dp, size))
		sfs_i_set_size(dp, size);
	sfs_inode_dirty(fs, dp);
}

/*
 * Append a block to dp holding only the new entry (rec_len = bs), growing
 * i_size.  On failure nothing is left mapped.  0, -ENOSPC, -EFBIG, -EIO.
 */
static int dir_append_block(struct sfs_fs *fs, struct sfs_inode *dp,
			    uint32_t lblk, const char *name, size_t len,
			    sfs_ino_t ino, uint8_t ftype)
{
	uint64_t old_size = (uint64_t)lblk * fs->bs;
	struct sfs_buf *b;
	sfs_blk_t pblk;
	int rc;

	if (old_size + fs->bs > UINT32_MAX)
		return -ENOSPC; /* i_size_high must stay 0 */
	rc = sfs_bmap(fs, dp, lblk, true, &pblk);
	if (rc)
		goto out_undo;
	rc = sfs_cache_get_new(fs->cache, pblk, SFS_IO_DIR, &b);
	if (rc)
		goto out_undo;
	de_fill(fs, b->data, 0, leaf_end(fs), name, len, ino, ftype);
	leaf_dirty(fs, dp, b);
	sfs_cache_put(fs->cache, b);
	sfs_i_set_size(dp, old_size + fs->bs);
	return sfs_inode_dirty(fs, dp);

out_undo:
	dir_unmap_from(fs, dp, lblk);
	return rc;
}

/* ---- htree indexes (invariant 4) ---- */

#define DX_ROOT_INFO 24	   /* dx_root_info, after "." and ".." */
#define DX_ROOT_ENTRIES 32 /* first dx_entry (count/limit + block) */
#define DX_NODE_ENTRIES 8  /* after the node's empty record header */
#define DX_INFO_LEN 8
#define DX_MAX_LEVELS 2	    /* index levels without large_dir */
#define DIR_HC (1ull << 62) /* readdir cookie: hash order (invariant 6) */
#define DIR_HC_FIRST 2ull   /* hash-order position of the first name */

/* One index block on the path from the root to a leaf. */
struct dx_frame {
	struct sfs_buf *b; /* the block, a reference (NULL = unused) */
	uint32_t lblk;	   /* its logical block */
	uint32_t ents;	   /* byte offset of its dx_entry array */
	uint32_t count;	   /* entries in use */
	uint32_t limit;	   /* entries that fit */
	uint32_t at;	   /* entry followed */
};

struct dx_path {
	struct dx_frame f[DX_MAX_LEVELS];
	unsigned nf;	  /* frames in use (index levels) */
	unsigned hver;	  /* hash version, unsigned delta applied */
	uint32_t seed[4]; /* s_hash_seed, host order */
	uint32_t nblocks; /* directory size, blocks */
};

static inline uint8_t *dx_ent(const struct dx_frame *f, uint32_t i)
{
	return f->b->data + f->ents + 8 * i;
}

/* Entry i's hash; entry 0 holds count/limit and stands for hash 0. */
static inline uint32_t dx_hash_at(const struct dx_frame *f, uint32_t i)
{
	return i ? sfs_get_le32(dx_ent(f, i)) : 0;
}

static inline uint32_t dx_block_at(const struct dx_frame *f, uint32_t i)
{
	return sfs_get_le32(dx_ent(f, i) + 4);
}

static inline void dx_set_count(struct dx_frame *f, uint32_t n)
{
	f->count = n;
	sfs_put_le16(f->b->data + f->ents + 2, (uint16_t)n);
}

/* The image has dir_index and the mount uses it. */
static inline bool dx_enabled(const struct sfs_fs *fs)
{
	return (sfs_le32(fs->sb.s_feature_compat) &
		SFS_FEATURE_COMPAT_DIR_INDEX) &&
	       !fs->cfg.no_dir_index;
}

/* dp is read and written through its htree index. */
static inline bool dir_is_dx(const struct sfs_fs *fs,
			     const struct sfs_inode *dp)
{
	return dx_enabled(fs) && (sfs_le32(dp->d.i_flags) & SFS_INDEX_FL);
}

/* Every changed htree block (root or node) leaves through here. */
static void dx_dirty(struct sfs_fs *fs, struct sfs_inode *dp,
		     struct dx_frame *f)
{
	sfs_csum_dx_set(fs, dir_seed(fs, dp), f->b->data, f->ents);
	sfs_meta_dirty(fs, f->b);
}

/* Block lblk of dp changed: the root of an htree, or a leaf. */
static void dir_dirty(struct sfs_fs *fs, struct sfs_inode *dp,
		      struct sfs_buf *b, uint32_t lblk)
{
	if (lblk == 0 && dir_is_dx(fs, dp)) {
		sfs_csum_dx_set(fs, dir_seed(fs, dp), b->data, DX_ROOT_ENTRIES);
		sfs_meta_dirty(fs, b);
	} else {
		leaf_dirty(fs, dp, b);
	}
}

static inline uint32_t dx_root_limit(const struct sfs_fs *fs)
{
	return (fs->bs - DX_ROOT_ENTRIES) / 8 - sfs_csum_dx_limit_cut(fs);
}

static inline uint32_t dx_node_limit(const struct sfs_fs *fs)
{
	return (fs->bs - DX_NODE_ENTRIES) / 8 - sfs_csum_dx_limit_cut(fs);
}

/* Hash version v of a dx_root (or s_def_hash_version) as the kernel
 * applies it: the unsigned variant when the superblock says so. */
static unsigned dx_hver(const struct sfs_fs *fs, unsigned v)
{
	if (v <= SFS_DX_HASH_TEA &&
	    (sfs_le32(fs->sb.s_flags) & SFS_FLAGS_UNSIGNED_HASH))
		v += SFS_DX_HASH_UNSIGNED_DELTA;
	return v;
}

static void dx_seed(const struct sfs_fs *fs, uint32_t seed[4])
{
	for (int i = 0; i < 4; i++)
		seed[i] = sfs_le32(fs->sb.s_hash_seed[i]);
}

static void dx_name_hash(const struct dx_path *p, const char *name, size_t len,
			 uint32_t *major, uint32_t *minor)
{
	uint32_t mi = 0;

	/* hver was checked when the root was read */
	if (sfs_dirhash(p->hver, p->seed, name, len, major, &mi))
		*major = 0;
	if (minor)
		*minor = mi;
}

static void dx_path_put(struct sfs_fs *fs, struct dx_path *p)
{
	for (unsigned i = 0; i < DX_MAX_LEVELS; i++) {
		if (p->f[i].b)
			sfs_cache_put(fs->cache, p->f[i].b);
		p->f[i].b = NULL;
	}
	p->nf = 0;
}

static int dx_bad(struct sfs_fs *fs, struct sfs_inode *dp, uint32_t lblk,
		  const char *what, uint32_t found, uint32_t want)
{
	sfs_fs_error(fs, -EIO,
		     "directory inode %u: htree index block %u: %s (found %u, "
		     "expected %u)",
		     dp->ino, lblk, what, found, want);
	return -EIO;
}

/* Check a frame's count, limit, hash order and block numbers. */
static int dx_check_frame(struct sfs_fs *fs, struct sfs_inode *dp,
			  const struct dx_path *p, struct dx_frame *f,
			  uint32_t want_limit)
{
	uint32_t prev = 0;

	if (!sfs_csum_dx_ok(fs, dir_seed(fs, dp), f->b->data, f->ents)) {
		dx_bad(fs, dp, f->lblk, "index checksum mismatch", 0, 0);
		return -SFS_EFSBADCRC;
	}
	f->limit = sfs_get_le16(f->b->data + f->ents);
	f->count = sfs_get_le16(f->b->data + f->ents + 2);
	if (f->limit != want_limit)
		return dx_bad(fs, dp, f->lblk, "bad limit", f->limit,
			      want_limit);
	if (f->count == 0 || f->count > f->limit)
		return dx_bad(fs, dp, f->lblk, "bad count", f->count, f->limit);
	for (uint32_t i = 0; i < f->count; i++) {
		uint32_t h = dx_hash_at(f, i), blk = dx_block_at(f, i);

		if (h < prev)
			return dx_bad(fs, dp, f->lblk, "hash out of order", h,
				      prev);
		if (blk == 0 || blk >= p->nblocks)
			return dx_bad(fs, dp, f->lblk,
				      "entry block out of range", blk,
				      p->nblocks);
		prev = h;
	}
	return 0;
}

/* Read and check dp's dx_root into p->f[0]; sets nf, hver, seed. */
static int dx_read_root(struct sfs_fs *fs, struct sfs_inode *dp,
			struct dx_path *p)
{
	struct dx_frame *f = &p->f[0];
	const uint8_t *info;
	unsigned v;
	int rc;

	memset(p, 0, sizeof(*p));
	rc = dir_nblocks(fs, dp, &p->nblocks);
	if (rc)
		return rc;
	rc = dir_get_block_cat(fs, dp, 0, SFS_IO_DIRIDX, &f->b, NULL);
	if (rc)
		return rc;
	info = f->b->data + DX_ROOT_INFO;
	f->lblk = 0;
	f->ents = DX_ROOT_ENTRIES;
	v = info[4];
	if (de_rec_len(de_at(f->b->data, 12)) != fs->bs - 12)
		rc = dx_bad(fs, dp, 0, "'..' does not span the root",
			    de_rec_len(de_at(f->b->data, 12)), fs->bs - 12);
	else if (sfs_get_le32(info) != 0)
		rc = dx_bad(fs, dp, 0, "reserved word not zero", sfs_get_le32(info), 0);
	else if (v > SFS_DX_HASH_TEA)
		rc = dx_bad(fs, dp, 0, "unknown hash version", v,
			    SFS_DX_HASH_TEA);
	else if (info[5] != DX_INFO_LEN)
		rc = dx_bad(fs, dp, 0, "bad info length", info[5], DX_INFO_LEN);
	else if (info[6] >= DX_MAX_LEVELS)
		rc = dx_bad(fs, dp, 0, "too many indirect levels", info[6],
			    DX_MAX_LEVELS - 1);
	else if (info[7] & 1)
		rc = dx_bad(fs, dp, 0, "unknown flags", info[7], 0);
	if (!rc)
		rc = dx_check_frame(fs, dp, p, f, dx_root_limit(fs));
	if (rc) {
		dx_path_put(fs, p);
		return rc;
	}
	p->nf = info[6] + 1u;
	p->hver = dx_hver(fs, v);
	dx_seed(fs, p->seed);
	return 0;
}

/* Read and check the dx_node at lblk into frame f. */
static int dx_read_node(struct sfs_fs *fs, struct sfs_inode *dp,
			const struct dx_path *p, uint32_t lblk,
			struct dx_frame *f)
{
	struct sfs_ddirent *de;
	int rc;

	rc = dir_get_block_cat(fs, dp, lblk, SFS_IO_DIRIDX, &f->b, NULL);
	if (rc)
		return rc;
	f->lblk = lblk;
	f->ents = DX_NODE_ENTRIES;
	f->at = 0;
	de = de_at(f->b->data, 0);
	if (de->inode || de_rec_len(de) != fs->bs)
		rc = dx_bad(fs, dp, lblk,
			    "node does not start with an empty "
			    "record spanning the block",
			    de_rec_len(de), fs->bs);
	else
		rc = dx_check_frame(fs, dp, p, f, dx_node_limit(fs));
	if (rc) {
		sfs_cache_put(fs->cache, f->b);
		f->b = NULL;
	}
	return rc;
}

/* Largest i in [0, count) whose hash is <= hash. */
static uint32_t dx_search(struct sfs_fs *fs, const struct dx_frame *f,
			  uint32_t hash)
{
	uint32_t lo = 1, hi = f->count;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		fs->cpu_ctr.dir_entries++;
		if (dx_hash_at(f, mid) <= hash)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

/*
 * Walk from the root to the leaf for hash (dx_probe).  With name, the
 * hash is name's, under the root's hash version, and comes back in
 * *hash_out (may be NULL).  The caller dx_path_puts p.  0 or -EIO.
 */
static int dx_probe(struct sfs_fs *fs, struct sfs_inode *dp, const char *name,
		    size_t len, uint32_t hash, uint32_t *hash_out,
		    struct dx_path *p)
{
	int rc;

	rc = dx_read_root(fs, dp, p);
	if (rc)
		return rc;
	if (name)
		dx_name_hash(p, name, len, &hash, NULL);
	if (hash_out)
		*hash_out = hash;
	p->f[0].at = dx_search(fs, &p->f[0], hash);
	for (unsigned i = 1; i < p->nf; i++) {
		rc = dx_read_node(fs, dp, p,
				  dx_block_at(&p->f[i - 1], p->f[i - 1].at),
				  &p->f[i]);
		if (rc) {
			dx_path_put(fs, p);
			return rc;
		}
		p->f[i].at = dx_search(fs, &p->f[i], hash);
	}
	return 0;
}

static inline uint32_t dx_leaf(const struct dx_path *p)
{
	return dx_block_at(&p->f[p->nf - 1], p->f[p->nf - 1].at);
}

/*
 * Step p to the next leaf in hash order (ext4_htree_next_block).  1 with
 * *hash_out = the hash its index entry starts (low bit: continued from
 * the leaf before), 0 at the end, -EIO.
 */
static int dx_next_leaf(struct sfs_fs *fs, struct sfs_inode *dp,
			struct dx_path *p, uint32_t *hash_out)
{
	int lv = (int)p->nf - 1;
	int rc;

	while (++p->f[lv].at >= p->f[lv].count) {
		if (lv == 0)
			return 0;
		lv--;
	}
	*hash_out = dx_hash_at(&p->f[lv], p->f[lv].at);
	for (unsigned i = (unsigned)lv + 1; i < p->nf; i++) {
		sfs_cache_put(fs->cache, p->f[i].b);
		p->f[i].b = NULL;
		rc = dx_read_node(fs, dp, p,
				  dx_block_at(&p->f[i - 1], p->f[i - 1].at),
				  &p->f[i]);
		if (rc)
			return rc;
	}
	return 1;
}

/* Offset of the live entry called name in a checked block, or -1. */
static int64_t dir_block_find(struct sfs_fs *fs, const uint8_t *data,
			      const char *name, size_t len)
{
	uint32_t rl;

	for (uint32_t off = 0; off < leaf_end(fs); off += rl) {
		const struct sfs_ddirent *de =
		    (const struct sfs_ddirent *)(data + off);

		rl = de_rec_len(de);
		fs->cpu_ctr.dir_entries++;
		if (de->inode && de->name_len == len &&
		    memcmp(de->name, name, len) == 0)
			return off;
	}
	return -1;
}

/*
 * Find name through dp's index: its leaf, then the leaves after it while
 * their index entry continues the hash (a collision that a split left on
 * both sides).  As dir_find.  -ENOENT, -EIO.
 */
static int dx_find(struct sfs_fs *fs, struct sfs_inode *dp, const char *name,
		   size_t len, struct sfs_buf **b_out, uint32_t *off_out,
		   uint32_t *lblk_out)
{
	struct dx_path p;
	uint32_t hash, next;
	int rc;

	rc = dx_probe(fs, dp, name, len, 0, &hash, &p);
	if (rc)
		return rc;
	for (;;) {
		uint32_t lblk = dx_leaf(&p);
		struct sfs_buf *b;
		int64_t off;

		rc = dir_get_block(fs, dp, lblk, &b, NULL);
		if (rc)
			break;
		off = dir_block_find(fs, b->data, name, len);
		if (off >= 0) {
			*b_out = b;
			*off_out = (uint32_t)off;
			*lblk_out = lblk;
			break;
		}
		sfs_cache_put(fs->cache, b);
		rc = dx_next_leaf(fs, dp, &p, &next);
		if (rc == 0 || (rc > 0 && (next & ~1u) != hash))
			rc = -ENOENT;
		if (rc < 0)
			break;
	}
	dx_path_put(fs, &p);
	return rc;
}

/* One live record of a leaf being split or listed. */
struct dx_map {
	uint32_t hash, minor;
	uint32_t off;  /* in its block */
	uint16_t size; /* SFS_DIRENT_LEN(name_len) */
	bool move;     /* goes to the new leaf */
};

static int dx_map_by_hash(const void *a, const void *b)
{
	const struct dx_map *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static int dx_map_by_off(const void *a, const void *b)
{
	const struct dx_map *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* Live records of a checked leaf into map (room for bs / 12), hashed. */
static uint32_t dx_map_leaf(struct sfs_fs *fs, const struct dx_path *p,
			    const uint8_t *data, struct dx_map *map)
{
	uint32_t n = 0, rl;

	for (uint32_t off = 0; off < leaf_end(fs); off += rl) {
		const struct sfs_ddirent *de =
		    (const struct sfs_ddirent *)(data + off);

		rl = de_rec_len(de);
		fs->cpu_ctr.dir_entries++;
		if (!de->inode)
			continue;
		dx_name_hash(p, de->name, de->name_len, &map[n].hash,
			     &map[n].minor);
		map[n].off = off;
		map[n].size = (uint16_t)SFS_DIRENT_LEN(de->name_len);
		map[n].move = false;
		n++;
	}
	return n;
}

/* Write the records of src named by map[i] (in map order, move == want)
 * packed into dst from offset 0; the last spans the block's rest (an
 * empty block gets one unused record). */
static void dx_pack(struct sfs_fs *fs, const uint8_t *src, uint8_t *dst,
		    const struct dx_map *map, uint32_t n, bool want)
{
	uint32_t at = 0, last = UINT32_MAX;

	memset(dst, 0, fs->bs);
	for (uint32_t i = 0; i < n; i++) {
		if (map[i].move != want)
			continue;
		memcpy(dst + at, src + map[i].off, map[i].size);
		de_at(dst, at)->rec_len = sfs_cpu_to_le16(map[i].size);
		last = at;
		at += map[i].size;
	}
	if (last == UINT32_MAX)
		de_at(dst, 0)->rec_len = sfs_cpu_to_le16((uint16_t)leaf_end(fs));
	else
		de_at(dst, last)->rec_len =
		    sfs_cpu_to_le16((uint16_t)(leaf_end(fs) - last));
}

/*
 * Append n blocks at logical lblk.. to dp (i_size grows), each holding one
 * unused record, their buffers in bufs (caller puts them on success).  If
 * an allocation fails nothing stays mapped.  0, -ENOSPC, -EIO.
 */
static int dir_append_empty(struct sfs_fs *fs, struct sfs_inode *dp,
			     uint32_t lblk, unsigned n, enum sfs_io_cat *cats,
			     struct sfs_buf **bufs)
{
	unsigned got = 0;
	int rc = 0;

	if (((uint64_t)lblk + n) * fs->bs > UINT32_MAX)
		return -ENOSPC; /* i_size_high must stay 0 */
	for (; got < n; got++) {
		sfs_blk_t pblk;

		rc = sfs_bmap(fs, dp, lblk + got, true, &pblk);
		if (!rc)
			rc = sfs_cache_get_new(fs->cache, pblk, cats[got],
					       &bufs[got]);
		if (rc)
			break;
		/* a valid (empty) directory block until the caller fills it */
		de_at(bufs[got]->data, 0)->rec_len =
		    sfs_cpu_to_le16((uint16_t)leaf_end(fs));
		leaf_dirty(fs, dp, bufs[got]);
	}
	if (rc) {
		while (got > 0)
			sfs_cache_put(fs->cache, bufs[--got]);
		dir_unmap_from(fs, dp, lblk);
		return rc;
	}
	sfs_i_set_size(dp, ((uint64_t)lblk + n) * fs->bs);
	rc = sfs_inode_dirty(fs, dp);
	if (rc)
		while (got > 0)
			sfs_cache_put(fs->cache, bufs[--got]);
	return rc;
}

/* Insert (hash, blk) after entry f->at (dx_insert_block); room checked. */
static void dx_insert_entry(struct dx_frame *f, uint32_t hash, uint32_t blk)
{
	uint8_t *at = dx_ent(f, f->at + 1);

	memmove(at + 8, at, 8 * (f->count - f->at - 1));
	sfs_put_le32(at, hash);
	sfs_put_le32(at + 4, blk);
	dx_set_count(f, f->count + 1);
}

/*
 * The leaf at the end of p has no room for name: make room in the index
 * (grow the root into a node, or split the node), split the leaf at its
 * middle by size with the upper hashes going to a new block (do_split),
 * and insert name where its hash now leads.  Consumes leaf (a reference
 * to block leaf_lblk).  0, -ENOSPC (index full or no blocks), -EIO.
 */
static int dx_split_add(struct sfs_fs *fs, struct sfs_inode *dp,
			struct dx_path *p, struct sfs_buf *leaf,
			uint32_t leaf_lblk, uint32_t hash, const char *name,
			size_t len, sfs_ino_t ino, uint8_t ftype)
{
	struct dx_frame *f = &p->f[p->nf - 1];
	enum sfs_io_cat cats[2] = {SFS_IO_DIRIDX, SFS_IO_DIR};
	struct sfs_buf *nb[2] = {NULL, NULL}, *nleaf, *target;
	uint32_t first = p->nblocks, n, split, hash2, off, size = 0, move = 0;
	bool grow = false, nsplit = false, continued;
	struct dx_map *map;
	uint8_t *tmp;
	int64_t i;
	int rc;

	map = g_new(struct dx_map, fs->bs / DIR_MIN_REC + 1);
	n = dx_map_leaf(fs, p, leaf->data, map);
	if (n < 2) {
		/* a leaf of holes: pack it in place, no split */
		tmp = g_memdup2(leaf->data, fs->bs);
		dx_pack(fs, tmp, leaf->data, map, n, false);
		g_free(tmp);
		rc = dir_block_insert(fs, leaf->data, leaf_lblk, name, len, ino,
				      ftype, &off);
		leaf_dirty(fs, dp, leaf);
		goto out_leaf;
	}
	if (f->count == f->limit) {
		if (p->nf == 1)
			grow = true;
		else if (p->f[0].count == p->f[0].limit) {
			rc = -ENOSPC; /* "Directory index full": no large_dir */
			goto out_leaf;
		} else
			nsplit = true;
	}
	rc = dir_append_empty(fs, dp, first, grow || nsplit ? 2 : 1,
			       grow || nsplit ? cats : cats + 1, nb);
	if (rc)
		goto out_leaf;
	p->nblocks = first + (grow || nsplit ? 2 : 1);
	nleaf = grow || nsplit ? nb[1] : nb[0];

	if (grow) {
		/* the root's entries move to a new node under it */
		struct dx_frame *r = &p->f[0], *nd = &p->f[1];
		uint8_t *data = nb[0]->data;

		de_at(data, 0)->rec_len = sfs_cpu_to_le16((uint16_t)fs->bs);
		memcpy(data + DX_NODE_ENTRIES, dx_ent(r, 0), 8 * r->count);
		*nd = (struct dx_frame){.b = nb[0],
					.lblk = first,
					.ents = DX_NODE_ENTRIES,
					.count = r->count,
					.limit = dx_node_limit(fs),
					.at = r->at};
		sfs_put_le16(data + DX_NODE_ENTRIES, (uint16_t)nd->limit);
		nb[0] = NULL;
		sfs_put_le32(dx_ent(r, 0) + 4, first);
		dx_set_count(r, 1);
		r->at = 0;
		r->b->data[DX_ROOT_INFO + 6] = 1;
		dx_dirty(fs, dp, r);
		dx_dirty(fs, dp, nd);
		p->nf = 2;
		f = nd;
	} else if (nsplit) {
		/* the node's upper half moves to a new node (ext4_dx_add_entry)
		 */
		struct dx_frame *r = &p->f[0], f2;
		uint32_t n1 = f->count / 2, n2 = f->count - n1;
		uint32_t h2 = dx_hash_at(f, n1);
		uint8_t *data = nb[0]->data;

		de_at(data, 0)->rec_len = sfs_cpu_to_le16((uint16_t)fs->bs);
		memcpy(data + DX_NODE_ENTRIES, dx_ent(f, n1), 8 * n2);
		f2 = (struct dx_frame){.b = nb[0],
				       .lblk = first,
				       .ents = DX_NODE_ENTRIES,
				       .limit = dx_node_limit(fs)};
		sfs_put_le16(data + DX_NODE_ENTRIES, (uint16_t)f2.limit);
		dx_set_count(&f2, n2);
		dx_set_count(f, n1);
		nb[0] = NULL;
		dx_insert_entry(r, h2, first);
		dx_dirty(fs, dp, r);
		dx_dirty(fs, dp, f);
		dx_dirty(fs, dp, &f2);
		if (f->at >= n1) {
			f2.at = f->at - n1;
			r->at++;
			sfs_cache_put(fs->cache, f->b);
			*f = f2;
		} else {
			sfs_cache_put(fs->cache, f2.b);
		}
	}

	/* split the leaf by size: the upper hashes move (do_split) */
	qsort(map, n, sizeof(*map), dx_map_by_hash);
	for (i = (int64_t)n - 1; i >= 0; i--) {
		if (size + map[i].size / 2u > fs->bs / 2)
			break;
		size += map[i].size;
		move++;
	}
	split = i > 0 ? n - move : n / 2;
	if (split == 0 || split >= n)
		split = n / 2;
	hash2 = map[split].hash;
	continued = hash2 == map[split - 1].hash;
	for (uint32_t k = split; k < n; k++)
		map[k].move = true;
	qsort(map, n, sizeof(*map), dx_map_by_off);
	tmp = g_memdup2(leaf->data, fs->bs);
	dx_pack(fs, tmp, nleaf->data, map, n, true);
	dx_pack(fs, tmp, leaf->data, map, n, false);
	g_free(tmp);
	dx_insert_entry(f, hash2 + continued, first + (grow || nsplit ? 1 : 0));
	dx_dirty(fs, dp, f);
	target = hash >= hash2 ? nleaf : leaf;
	rc = dir_block_insert(fs, target->data, 1, name, len, ino, ftype, &off);
	leaf_dirty(fs, dp, leaf);
	leaf_dirty(fs, dp, nleaf);
	sfs_cache_put(fs->cache, nleaf);
out_leaf:
	sfs_cache_put(fs->cache, leaf);
	g_free(map);
	return rc;
}

/* Add name to indexed dp in the leaf its hash leads to (ext4_dx_add_entry),
 * splitting as needed.  0, -ENOSPC, -EIO. */
static int dx_add(struct sfs_fs *fs, struct sfs_inode *dp, const char *name,
		  size_t len, sfs_ino_t ino, uint8_t ftype)
{
	struct dx_path p;
	struct sfs_buf *b;
	uint32_t hash, lblk, off;
	int rc;

	rc = dx_probe(fs, dp, name, len, 0, &hash, &p);
	if (rc)
		return rc;
	lblk = dx_leaf(&p);
	rc = dir_get_block(fs, dp, lblk, &b, NULL);
	if (rc)
		goto out_path;
	rc = dir_block_insert(fs, b->data, lblk, name, len, ino, ftype, &off);
	if (rc == 0) {
		leaf_dirty(fs, dp, b);
		sfs_cache_put(fs->cache, b);
	} else {
		rc = dx_split_add(fs, dp, &p, b, lblk, hash, name, len, ino,
				  ftype);
	}
out_path:
	dx_path_put(fs, &p);
	return rc;
}

/*
 * dp, linear in one block with no room for name, becomes indexed
 * (make_indexed_dir): its names move to a new block 1, block 0 becomes
 * the dx_root over it, and that leaf is split at once, which makes room.
 * 0, -ENOSPC (the directory is then an indexed one of two blocks), -EIO.
 */
static int dx_make_indexed(struct sfs_fs *fs, struct sfs_inode *dp,
			   const char *name, size_t len, sfs_ino_t ino,
			   uint8_t ftype)
{
	enum sfs_io_cat cat = SFS_IO_DIR;
	struct dx_map *map;
	struct sfs_buf *root, *leaf;
	struct dx_path p;
	uint8_t *d, *tmp;
	uint32_t n = 0, rl, hash, dotdot;
	int rc;

	rc = dir_get_block_cat(fs, dp, 0, SFS_IO_DIRIDX, &root, NULL);
	if (rc)
		return rc;
	rc = dir_append_empty(fs, dp, 1, 1, &cat, &leaf);
	if (rc) {
		sfs_cache_put(fs->cache, root);
		return rc;
	}
	dir_index_drop(dp);
	d = root->data;
	map = g_new(struct dx_map, fs->bs / DIR_MIN_REC + 1);
	/* the records after ".." move, packed */
	rl = de_rec_len(de_at(d, 0));
	dotdot = sfs_le32(de_at(d, rl)->inode);
	rl += de_rec_len(de_at(d, rl));
	for (uint32_t off = rl; off < leaf_end(fs);
	     off += de_rec_len(de_at(d, off))) {
		struct sfs_ddirent *de = de_at(d, off);

		if (!de->inode)
			continue;
		map[n].off = off;
		map[n].size = (uint16_t)SFS_DIRENT_LEN(de->name_len);
		map[n].move = true;
		n++;
	}
	tmp = g_memdup2(d, fs->bs);
	dx_pack(fs, tmp, leaf->data, map, n, true);
	g_free(tmp);
	g_free(map);
	/* block 0 becomes the root: ".." spans it, the index after it */
	de_fill(fs, d, 0, DIR_MIN_REC, ".", 1, dp->ino, SFS_FT_DIR);
	de_fill(fs, d, DIR_MIN_REC, fs->bs - DIR_MIN_REC, "..", 2, dotdot,
		SFS_FT_DIR);
	d[DX_ROOT_INFO + 4] = fs->sb.s_def_hash_version;
	d[DX_ROOT_INFO + 5] = DX_INFO_LEN;
	sfs_put_le16(d + DX_ROOT_ENTRIES, (uint16_t)dx_root_limit(fs));
	sfs_put_le16(d + DX_ROOT_ENTRIES + 2, 1);
	sfs_put_le32(d + DX_ROOT_ENTRIES + 4, 1);
	sfs_csum_dx_set(fs, dir_seed(fs, dp), d, DX_ROOT_ENTRIES);
	sfs_meta_dirty(fs, root);
	leaf_dirty(fs, dp, leaf);
	sfs_cache_put(fs->cache, root);
	dp->d.i_flags |= sfs_cpu_to_le32(SFS_INDEX_FL);
	rc = sfs_inode_dirty(fs, dp);
	if (rc) {
		sfs_cache_put(fs->cache, leaf);
		return rc;
	}
	rc = dx_probe(fs, dp, name, len, 0, &hash, &p);
	if (rc) {
		sfs_cache_put(fs->cache, leaf);
		return rc;
	}
	rc = dx_split_add(fs, dp, &p, leaf, 1, hash, name, len, ino, ftype);
	dx_path_put(fs, &p);
	return rc;
}

/* ---- hash-order readdir (invariant 6) ---- */

struct rd_ent {
	uint32_t hash, minor;
	uint32_t ino;
	uint8_t ftype, len;
	uint32_t name; /* offset in the run's name pool */
	uint64_t pos;  /* hash-order position */
};

struct rd_run {
	GArray *ents;  /* struct rd_ent */
	GString *pool; /* names */
	const char *pool_base;
};

static int rd_cmp(const void *a, const void *b, void *arg)
{
	const struct rd_ent *x = a, *y = b;
	const struct rd_run *r = arg;
	int c;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	if (x->minor != y->minor)
		return x->minor < y->minor ? -1 : 1;
	c = memcmp(r->pool_base + x->name, r->pool_base + y->name,
		   MIN(x->len, y->len));
	return c ? c : (int)x->len - (int)y->len;
}

/* Add the live records of a checked block (block 0: after the dots). */
static void rd_collect(struct sfs_fs *fs, const struct dx_path *p,
		       const uint8_t *data, bool block0, struct rd_run *run)
{
	uint32_t rl, k = 0;

	for (uint32_t off = 0; off < fs->bs; off += rl, k++) {
		const struct sfs_ddirent *de =
		    (const struct sfs_ddirent *)(data + off);
		struct rd_ent e;

		rl = de_rec_len(de);
		fs->cpu_ctr.dir_entries++;
		if (!de->inode || (block0 && k < 2))
			continue;
		dx_name_hash(p, de->name, de->name_len, &e.hash, &e.minor);
		e.ino = sfs_le32(de->inode);
		e.ftype = de->file_type;
		e.len = de->name_len;
		e.name = (uint32_t)run->pool->len;
		g_string_append_len(run->pool, de->name, de->name_len);
		g_array_append_val(run->ents, e);
	}
}

/*
 * Sort a run and report its entries at positions >= from.  A position is
 * 2 + (major hash >> 1, top 15 bits of the minor hash, rank among equal
 * such keys in name order), 62 bits; the cookie is DIR_HC | (pos + 1).
 * 1 if fn stopped, else 0; the run is emptied.
 */
static int rd_emit(struct sfs_fs *fs, struct rd_run *run, uint64_t from,
		   sfs_filldir_fn fn, void *ctx)
{
	bool ftype = dir_has_ftype(fs);
	uint64_t prev_key = UINT64_MAX, rank = 0;
	struct rd_ent *v = (struct rd_ent *)(void *)run->ents->data;
	int stop = 0;

	run->pool_base = run->pool->str;
	g_qsort_with_data(v, (gint)run->ents->len, sizeof(*v), rd_cmp, run);
	for (guint i = 0; i < run->ents->len && !stop; i++) {
		uint64_t key =
		    (uint64_t)(v[i].hash >> 1) << 15 | v[i].minor >> 17;

		rank = key == prev_key ? MIN(rank + 1, 0xffffu) : 0;
		prev_key = key;
		v[i].pos = DIR_HC_FIRST + (key << 16 | rank);
		if (v[i].pos < from)
			continue;
		stop = fn(ctx, run->pool->str + v[i].name, v[i].len, v[i].ino,
			  ftype ? v[i].ftype : SFS_FT_UNKNOWN,
			  DIR_HC | (v[i].pos + 1));
	}
	g_array_set_size(run->ents, 0);
	g_string_truncate(run->pool, 0);
	return stop;
}

/* readdir is in hash order: dir_index on and dp indexed or one block
 * (is_dx_dir), with a known default hash for the linear case. */
static bool dir_hash_order(struct sfs_fs *fs, struct sfs_inode *dp)
{
	if (!dx_enabled(fs))
		return false;
	if (sfs_le32(dp->d.i_flags) & SFS_INDEX_FL)
		return true;
	return sfs_i_size(dp) == fs->bs &&
	       fs->sb.s_def_hash_version <= SFS_DX_HASH_TEA;
}

/* sfs_dir_iterate in hash order (invariant 6). */
static int dir_iterate_hashed(struct sfs_fs *fs, struct sfs_inode *dp,
			      uint64_t off, sfs_filldir_fn fn, void *ctx)
{
	bool ftype = dir_has_ftype(fs), dx = dir_is_dx(fs, dp);
	struct rd_run run = {g_array_new(false, false, sizeof(struct rd_ent)),
			     g_string_new(NULL), NULL};
	uint64_t from;
	struct dx_path p;
	struct sfs_buf *b;
	uint32_t next;
	int rc, stop = 0;

	if (off != 0 && off < DIR_HC)
		off = 0; /* a block-order cookie: start over (no misses) */
	from = off <= (DIR_HC | 1) ? DIR_HC_FIRST : off & ~DIR_HC;
	rc = dir_get_block_cat(fs, dp, 0, dx ? SFS_IO_DIRIDX : SFS_IO_DIR, &b,
			       NULL);
	if (rc)
		goto out;
	if (off == 0) {
		struct sfs_ddirent *de = de_at(b->data, 0);

		stop = fn(ctx, de->name, 1, sfs_le32(de->inode),
			  ftype ? de->file_type : SFS_FT_UNKNOWN, DIR_HC | 1);
	}
	if (!stop && off <= (DIR_HC | 1)) {
		struct sfs_ddirent *de = de_at(b->data, DIR_MIN_REC);

		stop = fn(ctx, de->name, 2, sfs_le32(de->inode),
			  ftype ? de->file_type : SFS_FT_UNKNOWN,
			  DIR_HC | DIR_HC_FIRST);
	}
	if (stop || !dx) {
		if (!stop) {
			memset(&p, 0, sizeof(p));
			p.hver = dx_hver(fs, fs->sb.s_def_hash_version);
			dx_seed(fs, p.seed);
			rd_collect(fs, &p, b->data, true, &run);
			rd_emit(fs, &run, from, fn, ctx);
		}
		sfs_cache_put(fs->cache, b);
		goto out;
	}
	sfs_cache_put(fs->cache, b);
	{
		uint32_t major = (uint32_t)(((from - DIR_HC_FIRST) >> 31) << 1);

		rc = dx_probe(fs, dp, NULL, 0, major ? major - 1 : 0, NULL, &p);
	}
	if (rc)
		goto out;
	for (int more = 1; more > 0 && !stop;) {
		/* a run: a leaf and the leaves continuing its last hash */
		do {
			rc = dir_get_block(fs, dp, dx_leaf(&p), &b, NULL);
			if (rc)
				goto out_path;
			rd_collect(fs, &p, b->data, false, &run);
			sfs_cache_put(fs->cache, b);
			more = dx_next_leaf(fs, dp, &p, &next);
			if (more < 0) {
				rc = more;
				goto out_path;
			}
		} while (more > 0 && (next & 1));
		stop = rd_emit(fs, &run, from, fn, ctx);
	}
out_path:
	dx_path_put(fs, &p);
out:
	g_array_free(run.ents, true);
	g_string_free(run.pool, true);
	return rc;
}

/* Category of dp's block 0: the dx_root of an indexed directory. */
static enum sfs_io_cat dir_blk0_cat(const struct sfs_fs *fs,
				    const struct sfs_inode *dp)
{
	return dir_is_dx(fs, dp) ? SFS_IO_DIRIDX : SFS_IO_DIR;
}

/* *empty = indexed dp holds no name but the dots: every block is read, as
 * ext4_empty_dir does (index blocks read as holding no live record). */
static int dx_is_empty(struct sfs_fs *fs, struct sfs_inode *dp, bool *empty)
{
	uint32_t n;
	int rc;

	rc = dir_nblocks(fs, dp, &n);
	if (rc)
		return rc;
	*empty = true;
	for (uint32_t lblk = 0; lblk < n && *empty; lblk++) {
		struct sfs_buf *b;
		uint32_t rl, k = 0;

		rc = dir_get_block(fs, dp, lblk, &b, NULL);
		if (rc)
			return rc;
		for (uint32_t o = 0; o < fs->bs; o += rl, k++) {
			struct sfs_ddirent *de = de_at(b->data, o);

			rl = de_rec_len(de);
			fs->cpu_ctr.dir_entries++;
			if (de->inode && !(lblk == 0 && k < 2))
				*empty = false;
		}
		sfs_cache_put(fs->cache, b);
	}
	return 0;
}

/* ---- the verbs ---- */

/* Look name up in dp: 0 with the entry's inode and file type, -ENOENT,
 * -ENOTDIR, -EIO.  File type is SFS_FT_UNKNOWN without the filetype
 * feature. */
int sfs_dir_lookup(struct sfs_fs *fs, struct sfs_inode *dp, const char *name,
		   size_t len, sfs_ino_t *ino_out, uint8_t *ftype_out)
{
	struct sfs_ddirent *de;
	struct sfs_buf *b;
	uint32_t off, pos;
	int rc;

	if (len == 0 || len > SFS_NAME_MAX)
		return -ENOENT;
	if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.'))) {
		/* the dots are checked to open block 0: no index needed */
		if (!sfs_i_isdir(dp))
			return -ENOTDIR;
		rc = dir_get_block_cat(fs, dp, 0, dir_blk0_cat(fs, dp), &b,
				       NULL);
		if (rc)
			return rc;
		off = len == 1 ? 0 : de_rec_len(de_at(b->data, 0));
	} else if (dir_is_dx(fs, dp)) {
		rc = dx_find(fs, dp, name, len, &b, &off, &pos);
		if (rc)
			return rc;
	} else {
		rc = dir_find(fs, dp, name, len, &b, &off, &pos);
		if (rc)
			return rc;
	}
	de = de_at(b->data, off);
	if (ino_out)
		*ino_out = sfs_le32(de->inode);
	if (ftype_out)
		*ftype_out = dir_has_ftype(fs) ? de->file_type : SFS_FT_UNKNOWN;
	sfs_cache_put(fs->cache, b);
	return 0;
}

/*
 * Make an htree directory linear before a name is added without the
 * index (invariant 5): clear SFS_INDEX_FL, as ext4_add_entry does when it
 * cannot use the index (and as e2fsck accepts: the blocks already read as
 * linear records).  0, or the inode update's error with the flag still
 * set.
 */
static int dir_drop_htree(struct sfs_fs *fs, struct sfs_inode *dp)
{
	int rc;

	if (!(sfs_le32(dp->d.i_flags) & SFS_INDEX_FL))
		return 0;
	if (fs->csum) {
		/* the root becomes a leaf: ".." gives the tail its room */
		struct sfs_buf *b;

		rc = dir_get_block_cat(fs, dp, 0, SFS_IO_DIRIDX, &b, NULL);
		if (rc)
			return rc;
		de_at(b->data, DIR_MIN_REC)->rec_len = sfs_cpu_to_le16(
		    (uint16_t)(leaf_end(fs) - DIR_MIN_REC));
		memset(b->data + DX_ROOT_INFO, 0,
		       leaf_end(fs) - DX_ROOT_INFO);
		leaf_dirty(fs, dp, b);
		sfs_cache_put(fs->cache, b);
	}
	dp->d.i_flags &= ~sfs_cpu_to_le32(SFS_INDEX_FL);
	rc = sfs_inode_dirty(fs, dp);
	if (rc)
		dp->d.i_flags |= sfs_cpu_to_le32(SFS_INDEX_FL);
	return rc;
}

/*
 * Add name -> ino (the caller checked the name is absent).  An htree: the
 * leaf of name's hash (invariant 4).  Linear: the first block with room in
 * index order, else a new block at the end, or the conversion to an htree
 * of a one-block directory when dx_enabled.  0, -ENOSPC,
 * -ENOMEM, -EIO; on error the directory is unchanged.
 */
int sfs_dir_add(struct sfs_fs *fs, struct sfs_inode *dp, const char *name,
		size_t len, sfs_ino_t ino, uint8_t ftype)
{
	uint32_t need = SFS_DIRENT_LEN(len);
	struct sfs_dir_index *ix;
	uint32_t lblk, off;
	int rc;

	if (len == 0 || len > SFS_NAME_MAX || ino == 0)
		return -EINVAL;
	if (!sfs_i_isdir(dp))
		return -ENOTDIR;
	if (dir_is_dx(fs, dp))
		return dx_add(fs, dp, name, len, ino, ftype);
	rc = dir_index_get(fs, dp, &ix);
	if (rc)
		return rc;
	rc = dix_reserve(ix, 1);
	if (!rc)
		rc = dix_room_reserve(ix, ix->nblocks + 1);
	if (!rc)
		rc = dir_drop_htree(fs, dp);
	if (rc)
		return rc;
	for (lblk = ix->first_room; lblk < ix->nblocks; lblk++) {
		struct sfs_buf *b;
		uint32_t room;

		if (ix->room[lblk] < need)
			continue;
		rc = dir_get_block(fs, dp, lblk, &b, &room);
		if (rc)
			return rc;
		rc = dir_block_insert(fs, b->data, lblk, name, len, ino, ftype,
				      &off);
		if (rc) {
			/* stale hint: correct it and keep looking */
			sfs_cache_put(fs->cache, b);
			dix_set_room(ix, lblk, room);
			continue;
		}
		leaf_dirty(fs, dp, b);
		dix_set_room(ix, lblk, dir_block_room(fs, b->data, lblk));
		sfs_cache_put(fs->cache, b);
		dix_insert(ix, dir_hash(fs, name, len), lblk * fs->bs + off);
		return 0;
	}
	lblk = ix->nblocks;
	if (lblk == 1 && dx_enabled(fs) &&
	    fs->sb.s_def_hash_version <= SFS_DX_HASH_TEA)
		return dx_make_indexed(fs, dp, name, len, ino, ftype);
	rc = dir_append_block(fs, dp, lblk, name, len, ino, ftype);
	if (rc) {
		if (sfs_i_size(dp) != (uint64_t)lblk * fs->bs)
			dir_index_drop(dp); /* size changed after all */
		return rc;
	}
	ix->nblocks = lblk + 1;
	dix_set_room(ix, lblk, leaf_end(fs) - need);
	dix_insert(ix, dir_hash(fs, name, len), lblk * fs->bs);
	return 0;
}

/*
 * Remove the entry called name: merge its record into the one before it in
 * the same block, or mark it unused (inode 0) if it is the block's first.
 * "." and ".." are not removable (-EINVAL).  0, -ENOENT, -EIO.
 */
int sfs_dir_remove(struct sfs_fs *fs, struct sfs_inode *dp, const char *name,
		   size_t len)
{
	struct sfs_ddirent *de, *prev = NULL;
	uint32_t off, pos, lblk, rl;
	struct sfs_buf *b;
	bool dx;
	int rc;

	if (len == 0 || len > SFS_NAME_MAX)
		return -ENOENT;
	if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')))
		return -EINVAL;
	dx = dir_is_dx(fs, dp);
	if (dx) {
		rc = dx_find(fs, dp, name, len, &b, &off, &lblk);
		pos = rc ? 0 : lblk * fs->bs + off;
	} else {
		rc = dir_find(fs, dp, name, len, &b, &off, &pos);
	}
	if (rc)
		return rc;
	lblk = pos / fs->bs;
	for (uint32_t o = 0; o < off; o += rl) {
		prev = de_at(b->data, o);
		rl = de_rec_len(prev);
		fs->cpu_ctr.dir_entries++;
	}
	de = de_at(b->data, off);
	rl = de_rec_len(de);
	if (prev) {
		prev->rec_len =
		    sfs_cpu_to_le16((uint16_t)(de_rec_len(prev) + rl));
		memset(de, 0, rl);
	} else {
		de->inode = 0;
		de->name_len = 0;
		de->file_type = 0;
		memset(de->name, 0, rl - SFS_DIRENT_HDR);
	}
	leaf_dirty(fs, dp, b);
	if (!dx) {
		dix_delete(dp->dindex, dir_hash(fs, name, len), pos);
		dix_set_room(dp->dindex, lblk,
			     dir_block_room(fs, b->data, lblk));
	}
	sfs_cache_put(fs->cache, b);
	return 0;
}

/* Point the existing entry name at ino (type ftype) in place.  0, -ENOENT,
 * -EIO. */
int sfs_dir_retarget(struct sfs_fs *fs, struct sfs_inode *dp, const char *name,
		     size_t len, sfs_ino_t ino, uint8_t ftype)
{
	struct sfs_ddirent *de;
	struct sfs_buf *b;
	uint32_t off, pos;
	int rc;

	if (len == 0 || len > SFS_NAME_MAX)
		return -ENOENT;
	if (ino == 0)
		return -EINVAL;
	if (dir_is_dx(fs, dp))
		rc = dx_find(fs, dp, name, len, &b, &off, &pos);
	else
		rc = dir_find(fs, dp, name, len, &b, &off, &pos);
	if (rc)
		return rc;
	de = de_at(b->data, off);
	de->inode = sfs_cpu_to_le32(ino);
	de->file_type = dir_has_ftype(fs) ? ftype : 0;
	leaf_dirty(fs, dp, b);
	sfs_cache_put(fs->cache, b);
	return 0;
}

/*
 * Give a new, empty directory inode its first block: "." -> dp (rec_len
 * 12) and ".." -> parent spanning the rest.  i_size = bs.  0, -ENOSPC,
 * -EIO; -EINVAL if dp already has contents.
 */
int sfs_dir_init(struct sfs_fs *fs, struct sfs_inode *dp, sfs_ino_t parent)
{
	struct sfs_buf *b;
	sfs_blk_t pblk;
	int rc;

	if (!sfs_i_isdir(dp) || sfs_i_size(dp) != 0 || parent == 0)
		return -EINVAL;
	dir_index_drop(dp);
	rc = sfs_bmap(fs, dp, 0, true, &pblk);
	if (rc)
		goto out_undo;
	rc = sfs_cache_get_new(fs->cache, pblk, SFS_IO_DIR, &b);
	if (rc)
		goto out_undo;
	de_fill(fs, b->data, 0, DIR_MIN_REC, ".", 1, dp->ino, SFS_FT_DIR);
	de_fill(fs, b->data, DIR_MIN_REC, leaf_end(fs) - DIR_MIN_REC, "..", 2,
		parent, SFS_FT_DIR);
	leaf_dirty(fs, dp, b);
	sfs_cache_put(fs->cache, b);
	sfs_i_set_size(dp, fs->bs);
	return sfs_inode_dirty(fs, dp);

out_undo:
	dir_unmap_from(fs, dp, 0);
	return rc;
}

/* Repoint ".." of dp at parent (dp moved).  0 or -EIO. */
int sfs_dir_set_dotdot(struct sfs_fs *fs, struct sfs_inode *dp,
		       sfs_ino_t parent)
{
	struct sfs_ddirent *de;
	struct sfs_buf *b;
	int rc;

	if (!sfs_i_isdir(dp))
		return -ENOTDIR;
	if (parent == 0)
		return -EINVAL;
	rc = dir_get_block_cat(fs, dp, 0, dir_blk0_cat(fs, dp), &b, NULL);
	if (rc)
		return rc;
	de = de_at(b->data, de_rec_len(de_at(b->data, 0)));
	de->inode = sfs_cpu_to_le32(parent);
	dir_dirty(fs, dp, b, 0);
	sfs_cache_put(fs->cache, b);
	return 0;
}

/* *empty = dp holds nothing but "." and "..".  0, -ENOTDIR, -EIO. */
int sfs_dir_is_empty(struct sfs_fs *fs, struct sfs_inode *dp, bool *empty)
{
	struct sfs_dir_index *ix;
	int rc;

	if (dir_is_dx(fs, dp))
		return dx_is_empty(fs, dp, empty);
	rc = dir_index_get(fs, dp, &ix);
	if (rc)
		return rc;
	/* every block was checked: block 0 starts with "." and ".." */
	*empty = ix->count <= 2;
	return 0;
}

/*
 * Report the live entries from cookie off on.  Hash order (invariant 6):
 * dir_iterate_hashed.  Otherwise the entries at byte positions >= off, in
 * position order, each with the position just past its record as the
 * next cookie.  A
 * cookie inside a record merged since (invariant 1) skips that record,
 * which started earlier and was reported then.  fn must not call into the
 * filesystem (fs->lock is held).  0 (also when fn stops it), -EIO.
 */
int sfs_dir_iterate(struct sfs_fs *fs, struct sfs_inode *dp, uint64_t off,
		    sfs_filldir_fn fn, void *ctx)
{
	bool ftype = dir_has_ftype(fs);
	uint32_t n, lblk, skip;
	int rc;

	if (!sfs_i_isdir(dp))
		return -ENOTDIR;
	if (dir_hash_order(fs, dp))
		return dir_iterate_hashed(fs, dp, off, fn, ctx);
	rc = dir_nblocks(fs, dp, &n);
	if (rc)
		return rc;
	if (off >= (uint64_t)n * fs->bs)
		return 0;
	lblk = (uint32_t)(off / fs->bs);
	skip = (uint32_t)(off % fs->bs);
	for (; lblk < n; lblk++, skip = 0) {
		struct sfs_buf *b;
		uint32_t rl;

		rc = dir_get_block(fs, dp, lblk, &b, NULL);
		if (rc)
			return rc;
		for (uint32_t o = 0; o < leaf_end(fs); o += rl) {
			struct sfs_ddirent *de = de_at(b->data, o);
			uint64_t next;

			rl = de_rec_len(de);
			fs->cpu_ctr.dir_entries++;
			if (o < skip || !de->inode)
				continue;
			next = (uint64_t)lblk * fs->bs + o + rl;
			if (fn(ctx, de->name, de->name_len, sfs_le32(de->inode),
			       ftype ? de->file_type : SFS_FT_UNKNOWN, next)) {
				sfs_cache_put(fs->cache, b);
				return 0;
			}
		}
		sfs_cache_put(fs->cache, b);
	}
	return 0;
}
