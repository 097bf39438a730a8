/*
 * dir.c - linear ext2 directories and the in-memory hashed name index that
 * keeps lookups in large directories off the disk; htree directories are
 * read as linear ones (invariant 4).
 *
 * A directory is i_size / bs blocks, each tiled exactly by records
 * {inode, rec_len, name_len, file_type, name}.  Block 0 starts with "."
 * (rec_len 12) and "..".  Verbs: sfs_dir_lookup, _add, _remove, _retarget,
 * _init, _set_dotdot, _is_empty, _iterate; all expect fs->lock held.
 *
 * Invariants:
 *  1. Live entries never move: insert splits a record's slack or reuses an
 *     inode-0 record, remove merges into the predecessor in the same block
 *     (or sets inode 0 when first in the block).  So a byte position names
 *     one entry for its whole life, which is what readdir cookies and the
 *     index rely on.
 *  2. Every block read is checked (rec_len bounds, alignment, tiling,
 *     name_len, dots) before use; a bad one gives -EIO and the sticky error
 *     state through sfs_fs_error, never a crash.
 *  3. The index (struct sfs_dir_index, built on first use, freed with the
 *     inode) maps XXH3(name) -> byte position of every live entry with open
 *     addressing, and keeps per block the largest record an insert could
 *     place there, so neither lookups nor inserts walk the directory.  Any
 *     failure while maintaining it drops it; the next use rebuilds it.
 *  4. Hashed (htree) directories, SFS_INDEX_FL, as ext3/ext4 write them,
 *     are read as linear ones: the dx_root block reads as "." and a ".."
 *     whose record spans the rest of the block, each dx_node block as one
 *     unused record spanning the block, so a scan of every block finds
 *     every name.  The index blocks stay intact while the flag is set:
 *     removing or retargeting a name leaves every other name in the leaf
 *     its hash leads to, but adding one would not, so sfs_dir_add first
 *     clears the flag (dir_drop_htree) and only then may an insert use the
 *     slack behind ".." or an index block.  doc/internals.md, "Hashed
 *     directories".
 */
#include <errno.h>
#include <string.h>
#include <xxhash.h>

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
	uint32_t off = 0, room = 0, n = 0, rl = 0;
	const char *why = NULL;
	struct sfs_ddirent *de = NULL;

	while (off < fs->bs) {
		uint32_t ino, avail;

		de = de_at(data, off);
		rl = 0;
		if (fs->bs - off < DIR_MIN_REC) {
			de = NULL;
			why = "record header crosses the block end";
			break;
		}
		rl = de_rec_len(de);
		ino = sfs_le32(de->inode);
		if (rl < DIR_MIN_REC || rl % 4 || rl > fs->bs - off) {
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
		return -EIO;
	}
	if (room_out)
		*room_out = room;
	return 0;
}

/*
 * Get logical block lblk of dp, checked.  The caller puts *out.  -EIO for a
 * hole or a corrupt block (sticky error state), or the mapping's error.
 */
static int dir_get_block(struct sfs_fs *fs, struct sfs_inode *dp, uint32_t lblk,
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
	rc = sfs_cache_get(fs->cache, pblk, SFS_IO_DIR, &b);
	if (rc)
		return rc;
	rc = dir_check_block(fs, dp, lblk, pblk, b->data, room_out);
	if (rc) {
		sfs_cache_put(fs->cache, b);
		return rc;
	}
	*out = b;
	return 0;
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
		for (uint32_t off = 0; off < fs->bs; off += rl) {
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

	for (uint32_t off = 0; off < fs->bs; off += rl) {
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

	for (uint32_t off = 0; off < fs->bs; off += rl) {
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
	de_fill(fs, b->data, 0, fs->bs, name, len, ino, ftype);
	sfs_meta_dirty(fs, b);
	sfs_cache_put(fs->cache, b);
	sfs_i_set_size(dp, old_size + fs->bs);
	return sfs_inode_dirty(fs, dp);

out_undo:
	dir_unmap_from(fs, dp, lblk);
	return rc;
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
		rc = dir_get_block(fs, dp, 0, &b, NULL);
		if (rc)
			return rc;
		off = len == 1 ? 0 : de_rec_len(de_at(b->data, 0));
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
 * Make an htree directory linear before a name is added (invariant 4):
 * clear SFS_INDEX_FL, as ext4_add_entry does when it cannot use the index
 * (and as e2fsck accepts: the blocks already read as linear records).
 * simfs does not maintain the index yet.  0, or the inode update's error
 * with the flag still set.
 */
static int dir_drop_htree(struct sfs_fs *fs, struct sfs_inode *dp)
{
	int rc;

	if (!(sfs_le32(dp->d.i_flags) & SFS_INDEX_FL))
		return 0;
	dp->d.i_flags &= ~sfs_cpu_to_le32(SFS_INDEX_FL);
	rc = sfs_inode_dirty(fs, dp);
	if (rc)
		dp->d.i_flags |= sfs_cpu_to_le32(SFS_INDEX_FL);
	return rc;
}

/*
 * Add name -> ino (the caller checked the name is absent): first block
 * with room in index order, else a new block at the end.  0, -ENOSPC,
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
		sfs_meta_dirty(fs, b);
		dix_set_room(ix, lblk, dir_block_room(fs, b->data, lblk));
		sfs_cache_put(fs->cache, b);
		dix_insert(ix, dir_hash(fs, name, len), lblk * fs->bs + off);
		return 0;
	}
	lblk = ix->nblocks;
	rc = dir_append_block(fs, dp, lblk, name, len, ino, ftype);
	if (rc) {
		if (sfs_i_size(dp) != (uint64_t)lblk * fs->bs)
			dir_index_drop(dp); /* size changed after all */
		return rc;
	}
	ix->nblocks = lblk + 1;
	dix_set_room(ix, lblk, fs->bs - need);
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
	int rc;

	if (len == 0 || len > SFS_NAME_MAX)
		return -ENOENT;
	if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')))
		return -EINVAL;
	rc = dir_find(fs, dp, name, len, &b, &off, &pos);
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
	sfs_meta_dirty(fs, b);
	dix_delete(dp->dindex, dir_hash(fs, name, len), pos);
	dix_set_room(dp->dindex, lblk, dir_block_room(fs, b->data, lblk));
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
	rc = dir_find(fs, dp, name, len, &b, &off, &pos);
	if (rc)
		return rc;
	de = de_at(b->data, off);
	de->inode = sfs_cpu_to_le32(ino);
	de->file_type = dir_has_ftype(fs) ? ftype : 0;
	sfs_meta_dirty(fs, b);
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
	de_fill(fs, b->data, DIR_MIN_REC, fs->bs - DIR_MIN_REC, "..", 2, parent,
		SFS_FT_DIR);
	sfs_meta_dirty(fs, b);
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
	rc = dir_get_block(fs, dp, 0, &b, NULL);
	if (rc)
		return rc;
	de = de_at(b->data, de_rec_len(de_at(b->data, 0)));
	de->inode = sfs_cpu_to_le32(parent);
	sfs_meta_dirty(fs, b);
	sfs_cache_put(fs->cache, b);
	return 0;
}

/* *empty = dp holds nothing but "." and "..".  0, -ENOTDIR, -EIO. */
int sfs_dir_is_empty(struct sfs_fs *fs, struct sfs_inode *dp, bool *empty)
{
	struct sfs_dir_index *ix;
	int rc;

	rc = dir_index_get(fs, dp, &ix);
	if (rc)
		return rc;
	/* every block was checked: block 0 starts with "." and ".." */
	*empty = ix->count <= 2;
	return 0;
}

/*
 * Report the live entries at byte positions >= off, in position order,
 * each with the position just past its record as the next cookie.  A
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
		for (uint32_t o = 0; o < fs->bs; o += rl) {
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
