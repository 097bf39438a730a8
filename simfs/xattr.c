/*
 * xattr.c - extended attributes in the user.*, trusted.* and security.*
 * namespaces (name indexes 1, 4 and 6, as ext4 numbers them) and the POSIX
 * ACLs (2 and 3, empty name, converted by acl.c): one xattr
 * block per inode, plus the in-inode area of 256-byte inodes that the
 * kernel fills, which is read and preserved.  Who may touch trusted.*
 * (CAP_SYS_ADMIN) and security.* is the kernel's VFS's check, made
 * before a request reaches simfs; listing hides trusted.* from other
 * callers in the FUSE layer, as ext4's list handler does.
 *
 * Block layout written here: a 32-byte header (magic, h_refcount 1,
 * h_blocks 1, h_hash = block hash), entries from offset 32 sorted by
 * (index, name_len, name), 4 zero bytes, values packed down from the block
 * end with zeroed padding, e_hash = sfs_xattr_entry_hash.  The block is
 * counted in i_blocks and allocated near the inode's group.
 *
 * Every change is computed on a private copy (struct xa_state) and only
 * then written: (1) a block with h_refcount 1 is rewritten in place; (2) a
 * shared block (h_refcount > 1, made by the kernel) is copied on write: a
 * new private block, the shared one's count decremented; (3) with no entry
 * left the block is released (freed at refcount 0) and i_file_acl cleared.
 * An attribute found in the inode body that is replaced or removed leaves
 * the inode body (the others stay where they are, untouched), and a new
 * value always goes to the block.  Entries of namespaces not served (the
 * ACLs under -o noacl, unknown indexes) are kept byte for byte, in the
 * inode body and in the block, but not shown.  Reads check everything
 * (magic, h_blocks, bounds): a bad block or area is -EIO plus the sticky
 * error state.
 *
 * All sfs_xattr_* expect fs->lock held; the sfs_*xattr verbs of fs.h take
 * it.  No permission checks: the FUSE layer runs with default_permissions.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "csum.h"
#include "fs_priv.h"

#define XA_HDR_LEN ((uint32_t)sizeof(struct sfs_dxattr_header))
#define XA_ENT_HDR_LEN ((uint32_t)sizeof(struct sfs_dxattr_entry))
#define XA_SIZE_MAX 65536 /* Linux XATTR_SIZE_MAX */

/* One attribute, pointing into a private copy of its block or inode. */
struct xa_entry {
	uint8_t index;	      /* e_name_index: 1 = user. */
	uint8_t name_len;     /* bytes of name */
	const char *name;     /* not NUL-terminated */
	const uint8_t *value; /* size bytes */
	uint32_t size;	      /* value bytes */
	uint32_t hash;	      /* e_hash as stored (in-inode entries keep it) */
};

/* Everything an inode's attributes are, loaded and checked. */
struct xa_state {
	sfs_blk_t blk;	     /* i_file_acl, 0 = none */
	uint32_t refcount;   /* its h_refcount */
	uint8_t *bdata;	     /* private copy of the block */
	struct xa_entry *be; /* block entries */
	unsigned bn;	     /* how many */
	uint32_t ibeg;	     /* in-inode area [ibeg, iend), bytes into the */
	uint32_t iend;	     /* inode; ibeg == iend: no area */
	struct xa_entry *ie; /* in-inode entries */
	unsigned in;	     /* how many */
	/* private copy of the inode the in-inode entries point into */
	uint8_t ibody[sizeof(struct sfs_dinode)];
};

static void xa_state_free(struct xa_state *st)
{
	g_free(st->bdata);
	g_free(st->be);
	g_free(st->ie);
}

/* The namespaces stored, with ext4's name indexes (fs/ext4/xattr.h).
 * The POSIX ACLs are whole names with an empty suffix (xa_acl_names). */
static const struct {
	const char *prefix;
	uint8_t index;
} xa_spaces[] = {
    {"user.", SFS_XATTR_INDEX_USER},
    {"trusted.", 4},
    {"security.", 6},
};

static const struct {
	const char *name;
	uint8_t index;
} xa_acl_names[] = {
    {"system.posix_acl_access", SFS_XATTR_INDEX_ACL_ACCESS},
    {"system.posix_acl_default", SFS_XATTR_INDEX_ACL_DEFAULT},
};

static bool xa_is_acl(uint8_t idx)
{
	return idx == SFS_XATTR_INDEX_ACL_ACCESS ||
	       idx == SFS_XATTR_INDEX_ACL_DEFAULT;
}

/* The prefix of name index idx (for an ACL: its whole name), NULL if not
 * served. */
static const char *xa_prefix(uint8_t idx)
{
	for (size_t i = 0; i < G_N_ELEMENTS(xa_spaces); i++)
		if (xa_spaces[i].index == idx)
			return xa_spaces[i].prefix;
	for (size_t i = 0; i < G_N_ELEMENTS(xa_acl_names); i++)
		if (xa_acl_names[i].index == idx)
			return xa_acl_names[i].name;
	return NULL;
}

/* "user.x" -> index 1, "x".  -EOPNOTSUPP other namespaces, -EINVAL empty
 * name, -ERANGE longer than 255 bytes. */
static int xa_parse_name(const char *name, uint8_t *index_out,
			 const char **sfx_out, uint8_t *len_out)
{
	size_t n, i, plen = 0;

	if (!name)
		return -EINVAL;
	for (i = 0; i < G_N_ELEMENTS(xa_acl_names); i++)
		if (strcmp(name, xa_acl_names[i].name) == 0) {
			*index_out = xa_acl_names[i].index;
			*sfx_out = "";
			*len_out = 0;
			return 0;
		}
	for (i = 0; i < G_N_ELEMENTS(xa_spaces); i++) {
		plen = strlen(xa_spaces[i].prefix);
		if (strncmp(name, xa_spaces[i].prefix, plen) == 0)
			break;
	}
	if (i == G_N_ELEMENTS(xa_spaces))
		return -EOPNOTSUPP;
	n = strlen(name + plen);
	if (n == 0)
		return -EINVAL;
	if (n > SFS_NAME_MAX)
		return -ERANGE;
	*index_out = xa_spaces[i].index;
	*sfx_out = name + plen;
	*len_out = (uint8_t)n;
	return 0;
}

/*
 * Parse the entry list at data[first, end) whose values sit at base +
 * e_value_offs and must end by `end`.  Fills a new array (g_free it).
 * 0, or -EIO with a reason in *why.
 */
static int xa_parse(const uint8_t *data, uint32_t first, uint32_t end,
		    uint32_t base, bool block, struct xa_entry **out,
		    unsigned *n_out, const char **why)
{
	struct xa_entry *e = g_new(struct xa_entry, (end - first) / 16 + 1);
	uint32_t off = first;
	unsigned n = 0;

	*why = NULL;
	for (;;) {
		const struct sfs_dxattr_entry *de;
		uint32_t elen, size, voff;

		if (end - off < 4) {
			*why = "entry list runs past the end";
			break;
		}
		if (sfs_get_le32(data + off) == 0)
			break;
		de = (const struct sfs_dxattr_entry *)(data + off);
		if (end - off < XA_ENT_HDR_LEN + 4) {
			*why = "entry header runs past the end";
			break;
		}
		elen = SFS_XATTR_ENTRY_LEN(de->e_name_len);
		/* POSIX ACLs (index 2 access, 3 default) have an empty
		 * name, as the kernel and e2fsprogs write them */
		if ((de->e_name_len == 0 && de->e_name_index != 2 &&
		     de->e_name_index != 3) ||
		    (block && de->e_name_index == 0)) {
			*why = "empty name or name index 0";
			break;
		}
		if (elen + 4 > end - off) {
			*why = "entry name runs past the end";
			break;
		}
		if (de->e_value_inum) {
			*why = "value in an EA inode (ea_inode unsupported)";
			break;
		}
		size = sfs_le32(de->e_value_size);
		voff = sfs_le16(de->e_value_offs);
		if (size && (size > end - base || voff > end - base - size)) {
			*why = "value out of bounds";
			break;
		}
		e[n].index = de->e_name_index;
		e[n].name_len = de->e_name_len;
		e[n].name = de->e_name;
		e[n].value = size ? data + base + voff : NULL;
		e[n].size = size;
		e[n].hash = sfs_le32(de->e_hash);
		n++;
		off += elen;
	}
	for (unsigned i = 0; !*why && i < n; i++)
		if (e[i].size && e[i].value < data + off + 4)
			*why = "value overlaps the entry list";
	if (*why) {
		g_free(e);
		return -EIO;
	}
	*out = e;
	*n_out = n;
	return 0;
}

/* Load and check the in-inode area of ip (none for 128-byte inodes or a
 * zero/invalid i_extra_isize). */
static int xa_load_ibody(struct sfs_fs *fs, struct sfs_inode *ip,
			 struct xa_state *st)
{
	uint32_t isz = MIN(fs->inode_size, (uint32_t)sizeof(struct sfs_dinode));
	uint32_t extra, beg;
	const char *why;
	int rc;

	st->ibeg = st->iend = 0;
	if (isz <= SFS_GOOD_OLD_INODE_SIZE)
		return 0;
	extra = sfs_le16(ip->d.i_extra_isize);
	/* room for at least the magic and the list terminator */
	if (extra == 0 || extra % 4 ||
	    SFS_GOOD_OLD_INODE_SIZE + extra + 8 > isz)
		return 0;
	beg = SFS_GOOD_OLD_INODE_SIZE + extra;
	memcpy(st->ibody, &ip->d, isz);
	st->ibeg = beg;
	st->iend = isz;
	if (sfs_get_le32(st->ibody + beg) != SFS_XATTR_MAGIC)
		return 0;
	rc = xa_parse(st->ibody, beg + 4, isz, beg + 4, false, &st->ie, &st->in,
		      &why);
	if (rc)
		sfs_fs_error(fs, rc, "inode %u: in-inode xattrs: %s", ip->ino,
			     why);
	return rc;
}

/* Check a block's header; NULL if fine, else why not. */
static const char *xa_check_header(const struct sfs_dxattr_header *h)
{
	if (sfs_le32(h->h_magic) != SFS_XATTR_MAGIC)
		return "bad magic";
	if (sfs_le32(h->h_blocks) != 1)
		return "h_blocks is not 1";
	if (sfs_le32(h->h_refcount) == 0)
		return "h_refcount is 0";
	return NULL;
}

/* i_file_acl of ip, checked to lie in the filesystem.  -EIO if not. */
/* The reason a block's bad checksum gives, told apart from the others:
 * it is -SFS_EFSBADCRC to the caller, as in ext4, where damage is -EIO. */
static const char xa_bad_sum[] = "checksum mismatch";

static int xa_block_no(struct sfs_fs *fs, struct sfs_inode *ip, sfs_blk_t *out)
{
	sfs_blk_t blk = sfs_le32(ip->d.i_file_acl);

	if (blk && (blk < fs->first_data_block || blk >= fs->blocks_count ||
		    ip->d.i_file_acl_high)) {
		sfs_fs_error(fs, -EIO, "inode %u: xattr block %u out of range",
			     ip->ino, blk);
		return -EIO;
	}
	*out = blk;
	return 0;
}

/* Load and check ip's xattr block into a private copy. */
static int xa_load_block(struct sfs_fs *fs, struct sfs_inode *ip,
			 struct xa_state *st)
{
	const char *why;
	struct sfs_buf *b;
	int rc;

	rc = xa_block_no(fs, ip, &st->blk);
	if (rc || !st->blk)
		return rc;
	rc = sfs_cache_get(fs->cache, st->blk, SFS_IO_XATTR, &b);
	if (rc)
		return rc;
	st->bdata = g_malloc(fs->bs);
	memcpy(st->bdata, b->data, fs->bs);
	sfs_cache_put(fs->cache, b);
	why = xa_check_header((const struct sfs_dxattr_header *)st->bdata);
	if (!why && !sfs_csum_xattr_ok(fs, st->blk, st->bdata))
		why = xa_bad_sum;
	if (!why)
		rc = xa_parse(st->bdata, XA_HDR_LEN, fs->bs, 0, true, &st->be,
			      &st->bn, &why);
	if (why) {
		sfs_fs_error(fs, -EIO, "inode %u: xattr block %u: %s", ip->ino,
			     st->blk, why);
		return why == xa_bad_sum ? -SFS_EFSBADCRC : -EIO;
	}
	st->refcount =
	    sfs_le32(((struct sfs_dxattr_header *)st->bdata)->h_refcount);
	return 0;
}

/* Load both places; xa_state_free it on every path. */
static int xa_load(struct sfs_fs *fs, struct sfs_inode *ip, struct xa_state *st)
{
	int rc;

	memset(st, 0, sizeof(*st));
	rc = xa_load_ibody(fs, ip, st);
	if (!rc)
		rc = xa_load_block(fs, ip, st);
	return rc;
}

static int xa_find(const struct xa_entry *e, unsigned n, uint8_t index,
		   const char *name, uint8_t len)
{
	for (unsigned i = 0; i < n; i++)
		if (e[i].index == index && e[i].name_len == len &&
		    memcmp(e[i].name, name, len) == 0)
			return (int)i;
	return -1;
}

/* The kernel's block order: index, then name length, then name bytes. */
static int xa_cmp(const void *pa, const void *pb)
{
	const struct xa_entry *a = pa, *b = pb;

	if (a->index != b->index)
		return a->index < b->index ? -1 : 1;
	if (a->name_len != b->name_len)
		return a->name_len < b->name_len ? -1 : 1;
	return memcmp(a->name, b->name, a->name_len);
}

/* Bytes a block needs for n entries: header, entries, terminator, values. */
static uint64_t xa_block_need(const struct xa_entry *e, unsigned n)
{
	uint64_t need = XA_HDR_LEN + 4;

	for (unsigned i = 0; i < n; i++)
		need += SFS_XATTR_ENTRY_LEN(e[i].name_len) +
			SFS_XATTR_PAD((uint64_t)e[i].size);
	return need;
}

/* Lay out a block for entries e (sorted here; xa_block_need(e) <= bs). */
static void xa_block_build(struct sfs_fs *fs, struct xa_entry *e, unsigned n,
			   uint8_t *out)
{
	struct sfs_dxattr_header *h = (struct sfs_dxattr_header *)out;
	uint32_t eoff = XA_HDR_LEN, voff = fs->bs, bhash = 0;
	bool zero_hash = false;

	qsort(e, n, sizeof(*e), xa_cmp);
	memset(out, 0, fs->bs);
	h->h_magic = sfs_cpu_to_le32(SFS_XATTR_MAGIC);
	h->h_refcount = sfs_cpu_to_le32(1);
	h->h_blocks = sfs_cpu_to_le32(1);
	for (unsigned i = 0; i < n; i++) {
		struct sfs_dxattr_entry *de =
		    (struct sfs_dxattr_entry *)(out + eoff);
		uint32_t hash;

		de->e_name_len = e[i].name_len;
		de->e_name_index = e[i].index;
		if (e[i].size) {
			voff -= SFS_XATTR_PAD(e[i].size);
			memcpy(out + voff, e[i].value, e[i].size);
			de->e_value_offs = sfs_cpu_to_le16((uint16_t)voff);
		}
		de->e_value_size = sfs_cpu_to_le32(e[i].size);
		memcpy(de->e_name, e[i].name, e[i].name_len);
		hash = sfs_xattr_entry_hash(e[i].name, e[i].name_len,
					    e[i].value, e[i].size);
		de->e_hash = sfs_cpu_to_le32(hash);
		/* block hash (ext-format 6.4): a zero entry hash zeroes it */
		if (hash == 0)
			zero_hash = true;
		bhash = (bhash << 16) ^ (bhash >> 16) ^ hash;
		eoff += SFS_XATTR_ENTRY_LEN(e[i].name_len);
	}
	h->h_hash = sfs_cpu_to_le32(zero_hash ? 0 : bhash);
}

/* Set the ext_attr feature on first use, as the kernel does. */
static void xa_note_feature(struct sfs_fs *fs)
{
	uint32_t compat = sfs_le32(fs->sb.s_feature_compat);

	if (compat & SFS_FEATURE_COMPAT_EXT_ATTR)
		return;
	fs->sb.s_feature_compat =
	    sfs_cpu_to_le32(compat | SFS_FEATURE_COMPAT_EXT_ATTR);
	fs->sb_dirty = true;
}

/*
 * Drop one reference to xattr block blk: decrement a shared block's
 * h_refcount, free a private one.  0 or -EIO (block not an xattr block:
 * left alone).
 */
static int xa_block_unref(struct sfs_fs *fs, struct sfs_inode *ip,
			  sfs_blk_t blk)
{
	struct sfs_dxattr_header *h;
	const char *why;
	struct sfs_buf *b;
	uint32_t refs;
	int rc;

	rc = sfs_cache_get(fs->cache, blk, SFS_IO_XATTR, &b);
	if (rc)
		return rc;
	h = (struct sfs_dxattr_header *)b->data;
	why = xa_check_header(h);
	if (!why && !sfs_csum_xattr_ok(fs, blk, b->data))
		why = xa_bad_sum;
	if (why) {
		sfs_cache_put(fs->cache, b);
		sfs_fs_error(fs, -EIO, "inode %u: xattr block %u: %s", ip->ino,
			     blk, why);
		return why == xa_bad_sum ? -SFS_EFSBADCRC : -EIO;
	}
	refs = sfs_le32(h->h_refcount);
	if (refs > 1) {
		h->h_refcount = sfs_cpu_to_le32(refs - 1);
		sfs_csum_xattr_set(fs, blk, b->data);
		sfs_meta_dirty(fs, b);
		sfs_cache_put(fs->cache, b);
		return 0;
	}
	sfs_cache_put(fs->cache, b);
	return sfs_blocks_free(fs, blk, 1);
}

/*
 * Make ip's block hold exactly entries e (n of them, fitting): rewrite a
 * private block, copy a shared one on write, allocate one if there was
 * none, release it if n == 0.  Updates i_file_acl and i_blocks (the caller
 * writes the inode).  0, -ENOSPC, -EIO; on error nothing changed.
 */
static int xa_store_block(struct sfs_fs *fs, struct sfs_inode *ip,
			  struct xa_state *st, struct xa_entry *e, unsigned n)
{
	struct sfs_buf *b;
	sfs_blk_t nb;
	uint32_t got;
	uint8_t *img;
	int rc;

	if (n == 0) {
		if (!st->blk)
			return 0;
		rc = xa_block_unref(fs, ip, st->blk);
		if (rc)
			return rc;
		ip->d.i_file_acl = 0;
		sfs_i_add_blocks(fs, ip, -1);
		return 0;
	}
	img = g_malloc(fs->bs);
	xa_block_build(fs, e, n, img);
	if (st->blk && st->refcount == 1) {
		rc = sfs_cache_get_new(fs->cache, st->blk, SFS_IO_XATTR, &b);
		if (rc)
			goto out_free;
		memcpy(b->data, img, fs->bs);
		sfs_csum_xattr_set(fs, st->blk, b->data);
		sfs_meta_dirty(fs, b);
		sfs_cache_put(fs->cache, b);
		goto out_free;
	}
	rc = sfs_alloc_blocks(
	    fs, ip, sfs_group_first(fs, (ip->ino - 1) / fs->ipg), 1, &nb, &got);
	if (rc)
		goto out_free;
	rc = sfs_cache_get_new(fs->cache, nb, SFS_IO_XATTR, &b);
	if (rc) {
		sfs_blocks_free(fs, nb, 1);
		goto out_free;
	}
	memcpy(b->data, img, fs->bs);
	sfs_csum_xattr_set(fs, nb, b->data);
	sfs_meta_dirty(fs, b);
	sfs_cache_put(fs->cache, b);
	if (st->blk) {
		/* copy on write: the shared block keeps its other owners */
		rc = xa_block_unref(fs, ip, st->blk);
		if (rc) {
			sfs_blocks_free(fs, nb, 1);
			goto out_free;
		}
	} else {
		sfs_i_add_blocks(fs, ip, 1);
	}
	ip->d.i_file_acl = sfs_cpu_to_le32(nb);
	xa_note_feature(fs);

out_free:
	g_free(img);
	return rc;
}

/*
 * Rewrite the in-inode area of ip with entries e (a subset of what was
 * there, so it fits): magic, the entries in their order with their stored
 * e_hash, terminator, values packed down from the inode end, offsets from
 * the first entry.  No entry left: the area is zeroed.
 */
static void xa_store_ibody(struct sfs_inode *ip, const struct xa_state *st,
			   const struct xa_entry *e, unsigned n)
{
	uint8_t area[sizeof(struct sfs_dinode)];
	uint32_t first = st->ibeg + 4, eoff = first, voff = st->iend;
	uint32_t magic = sfs_cpu_to_le32(SFS_XATTR_MAGIC);

	memset(area, 0, sizeof(area));
	if (n)
		memcpy(area + st->ibeg, &magic, 4);
	for (unsigned i = 0; i < n; i++) {
		struct sfs_dxattr_entry *de =
		    (struct sfs_dxattr_entry *)(area + eoff);

		de->e_name_len = e[i].name_len;
		de->e_name_index = e[i].index;
		if (e[i].size) {
			voff -= SFS_XATTR_PAD(e[i].size);
			memcpy(area + voff, e[i].value, e[i].size);
			de->e_value_offs =
			    sfs_cpu_to_le16((uint16_t)(voff - first));
		}
		de->e_value_size = sfs_cpu_to_le32(e[i].size);
		de->e_hash = sfs_cpu_to_le32(e[i].hash);
		memcpy(de->e_name, e[i].name, e[i].name_len);
		eoff += SFS_XATTR_ENTRY_LEN(e[i].name_len);
	}
	memcpy((uint8_t *)&ip->d + st->ibeg, area + st->ibeg,
	       st->iend - st->ibeg);
}

/* Copy of e[0..n) without element skip (skip < 0: none), room for one
 * more. */
static struct xa_entry *xa_without(const struct xa_entry *e, unsigned n,
				   int skip, unsigned *n_out)
{
	struct xa_entry *out = g_new(struct xa_entry, n + 1);
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++)
		if ((int)i != skip)
			out[k++] = e[i];
	*n_out = k;
	return out;
}

/* An ACL's value in the VFS's encoding (acl.c), as sfs_xattr_get. */
static int xa_get_acl(const struct sfs_inode *ip, const struct xa_entry *hit,
		      void *buf, size_t size, size_t *len_out)
{
	struct sfs_acl *a;
	size_t need;
	int rc = sfs_acl_from_disk(hit->value, hit->size, &a);

	if (rc == -EIO)
		g_printerr("simfs: inode %u: %s is not a valid ext4 ACL (%u "
			   "bytes)\n",
			   ip->ino, xa_prefix(hit->index), hit->size);
	if (rc)
		return rc;
	need = sfs_acl_to_xattr(a, NULL);
	if (size && size < need)
		rc = -ERANGE;
	else if (size)
		sfs_acl_to_xattr(a, buf);
	*len_out = need;
	g_free(a);
	return rc;
}

/*
 * Value of attribute name ("user.x"): in-inode first, then the block.
 * size 0: *len_out = the value's size.  -ENODATA, -ERANGE (buffer too
 * small), -EOPNOTSUPP, -EIO.
 */
int sfs_xattr_get(struct sfs_fs *fs, struct sfs_inode *ip, const char *name,
		  void *buf, size_t size, size_t *len_out)
{
	const struct xa_entry *hit = NULL;
	struct xa_state st;
	const char *sfx;
	uint8_t len, idx;
	int rc, i;

	rc = xa_parse_name(name, &idx, &sfx, &len);
	if (rc)
		return rc;
	if (size && !buf)
		return -EINVAL;
	rc = xa_load(fs, ip, &st);
	if (rc)
		goto out_free;
	if ((i = xa_find(st.ie, st.in, idx, sfx, len)) >= 0)
		hit = &st.ie[i];
	else if ((i = xa_find(st.be, st.bn, idx, sfx, len)) >= 0)
		hit = &st.be[i];
	if (!hit) {
		rc = -ENODATA;
	} else if (xa_is_acl(idx)) {
		rc = xa_get_acl(ip, hit, buf, size, len_out);
	} else if (size == 0) {
		*len_out = hit->size;
	} else if (size < hit->size) {
		rc = -ERANGE;
	} else {
		if (hit->size)
			memcpy(buf, hit->value, hit->size);
		*len_out = hit->size;
	}
out_free:
	xa_state_free(&st);
	return rc;
}

static int xa_set(struct sfs_fs *fs, struct sfs_inode *ip, uint8_t idx,
		  const char *sfx, uint8_t len, const void *value, size_t size,
		  int flags);
static int xa_remove(struct sfs_fs *fs, struct sfs_inode *ip, uint8_t idx,
		     const char *sfx, uint8_t len);

/*
 * setxattr of system.posix_acl_access/_default: value in the VFS's
 * encoding, stored in ext4's (acl.c).  As ext4: an empty ACL removes
 * (absent is fine); a default ACL on a non-directory is -EACCES; an
 * access ACL sets the mode's permission bits and is not stored when the
 * mode says all of it (acl.c rule 1).  -EINVAL for a bad ACL.
 */
static int xa_set_acl(struct sfs_fs *fs, struct sfs_inode *ip, uint8_t idx,
		      const void *value, size_t size, int flags)
{
	struct sfs_acl *a;
	uint32_t mode = sfs_i_mode(ip);
	bool drop = false;
	void *disk;
	size_t dlen;
	int rc;

	if (idx == SFS_XATTR_INDEX_ACL_DEFAULT && !sfs_i_isdir(ip))
		return -EACCES;
	rc = sfs_acl_from_xattr(value, size, &a);
	if (rc)
		return rc;
	if (sfs_acl_count(a) == 0)
		drop = true;
	else if (idx == SFS_XATTR_INDEX_ACL_ACCESS && sfs_acl_mode(a, &mode))
		drop = true;
	if (drop) {
		rc = xa_remove(fs, ip, idx, "", 0);
		if (rc == -ENODATA && !(flags & SFS_XATTR_REPLACE))
			rc = 0;
		if (rc == -ENODATA && mode != sfs_i_mode(ip))
			rc = 0; /* the mode changed: not a no-op */
	} else {
		disk = sfs_acl_to_disk(a, &dlen);
		rc = xa_set(fs, ip, idx, "", 0, disk, dlen, flags);
		g_free(disk);
	}
	g_free(a);
	if (rc == 0 && mode != sfs_i_mode(ip)) {
		sfs_i_set_mode(ip, mode);
		sfs_i_touch(fs, ip, SFS_SET_CTIME);
		rc = sfs_inode_dirty(fs, ip);
	}
	return rc;
}

/*
 * Set attribute name to value (size bytes, 0 allowed).  flags: 0,
 * SFS_XATTR_CREATE (-EEXIST if present), SFS_XATTR_REPLACE (-ENODATA if
 * absent).  -E2BIG past XATTR_SIZE_MAX (the VFS's limit), -ENOSPC if the
 * block is full, if the value could never fit a block (as
 * ext4_xattr_set_entry says it without ea_inode) or no block is free,
 * -EOPNOTSUPP, -ERANGE (name > 255), -EIO.
 * Stamps ctime and writes the inode.
 */
int sfs_xattr_set(struct sfs_fs *fs, struct sfs_inode *ip, const char *name,
		  const void *value, size_t size, int flags)
{
	const char *sfx;
	uint8_t len, idx;
	int rc;

	rc = xa_parse_name(name, &idx, &sfx, &len);
	if (rc)
		return rc;
	if (flags & ~(SFS_XATTR_CREATE | SFS_XATTR_REPLACE))
		return -EINVAL;
	if (size && !value)
		return -EINVAL;
	if (size > XA_SIZE_MAX)
		return -E2BIG;
	if (xa_is_acl(idx))
		return xa_set_acl(fs, ip, idx, value, size, flags);
	return xa_set(fs, ip, idx, sfx, len, value, size, flags);
}

/* sfs_xattr_set of a parsed name, value as stored. */
static int xa_set(struct sfs_fs *fs, struct sfs_inode *ip, uint8_t idx,
		  const char *sfx, uint8_t len, const void *value, size_t size,
		  int flags)
{
	struct xa_entry *nbe = NULL, *nie = NULL;
	unsigned nbn = 0, nin = 0;
	struct xa_state st;
	int rc, ii, bi;

	rc = xa_load(fs, ip, &st);
	if (rc)
		goto out_free;
	ii = xa_find(st.ie, st.in, idx, sfx, len);
	bi = xa_find(st.be, st.bn, idx, sfx, len);
	if ((flags & SFS_XATTR_CREATE) && (ii >= 0 || bi >= 0)) {
		rc = -EEXIST;
		goto out_free;
	}
	if ((flags & SFS_XATTR_REPLACE) && ii < 0 && bi < 0) {
		rc = -ENODATA;
		goto out_free;
	}
	nbe = xa_without(st.be, st.bn, bi, &nbn);
	nbe[nbn++] = (struct xa_entry){
	    .index = idx,
	    .name_len = len,
	    .name = sfx,
	    .value = value,
	    .size = (uint32_t)size,
	};
	if (xa_block_need(nbe, nbn) > fs->bs) {
		rc = -ENOSPC;
		goto out_free;
	}
	rc = xa_store_block(fs, ip, &st, nbe, nbn);
	if (rc)
		goto out_free;
	if (ii >= 0) {
		nie = xa_without(st.ie, st.in, ii, &nin);
		xa_store_ibody(ip, &st, nie, nin);
	}
	sfs_i_touch(fs, ip, SFS_SET_CTIME);
	rc = sfs_inode_dirty(fs, ip);
out_free:
	g_free(nbe);
	g_free(nie);
	xa_state_free(&st);
	return rc;
}

/*
 * Names of ip's attributes, "user.x\0trusted.y\0": in-inode ones, then
 * the block's.  size 0: *len_out = the bytes needed.  -ERANGE, -EIO.
 */
int sfs_xattr_list(struct sfs_fs *fs, struct sfs_inode *ip, char *buf,
		   size_t size, size_t *len_out)
{
	GString *names = g_string_new(NULL);
	struct xa_state st;
	int rc;

	if (size && !buf)
		return -EINVAL;
	rc = xa_load(fs, ip, &st);
	if (rc)
		goto out_free;
	for (int where = 0; where < 2; where++) {
		const struct xa_entry *e = where ? st.be : st.ie;
		unsigned n = where ? st.bn : st.in;

		for (unsigned i = 0; i < n; i++) {
			const char *prefix = xa_prefix(e[i].index);

			/* nouser_xattr: user.* names are not listed;
			 * noacl: nor the ACLs */
			if (!prefix ||
			    (fs->cfg.no_user_xattr &&
			     e[i].index == SFS_XATTR_INDEX_USER) ||
			    (fs->cfg.no_acl && xa_is_acl(e[i].index)))
				continue;
			if (where && xa_find(st.ie, st.in, e[i].index,
					     e[i].name, e[i].name_len) >= 0)
				continue; /* shadowed by the inode's copy */
			g_string_append(names, prefix);
			g_string_append_len(names, e[i].name, e[i].name_len);
			g_string_append_c(names, '\0');
		}
	}
	if (size && size < names->len) {
		rc = -ERANGE;
		goto out_free;
	}
	if (size)
		memcpy(buf, names->str, names->len);
	*len_out = names->len;
out_free:
	g_string_free(names, TRUE);
	xa_state_free(&st);
	return rc;
}

/*
 * Remove attribute name from wherever it is (-ENODATA if nowhere); the
 * block goes when its last attribute does.  Stamps ctime, writes the
 * inode.  -EOPNOTSUPP, -EIO.
 */
int sfs_xattr_remove(struct sfs_fs *fs, struct sfs_inode *ip, const char *name)
{
	const char *sfx;
	uint8_t len, idx;
	int rc;

	rc = xa_parse_name(name, &idx, &sfx, &len);
	if (rc)
		return rc;
	return xa_remove(fs, ip, idx, sfx, len);
}

/* sfs_xattr_remove of a parsed name. */
static int xa_remove(struct sfs_fs *fs, struct sfs_inode *ip, uint8_t idx,
		     const char *sfx, uint8_t len)
{
	struct xa_entry *nbe = NULL, *nie = NULL;
	unsigned nbn = 0, nin = 0;
	struct xa_state st;
	int rc, ii, bi;

	rc = xa_load(fs, ip, &st);
	if (rc)
		goto out_free;
	ii = xa_find(st.ie, st.in, idx, sfx, len);
	bi = xa_find(st.be, st.bn, idx, sfx, len);
	if (ii < 0 && bi < 0) {
		rc = -ENODATA;
		goto out_free;
	}
	if (bi >= 0) {
		nbe = xa_without(st.be, st.bn, bi, &nbn);
		rc = xa_store_block(fs, ip, &st, nbe, nbn);
		if (rc)
			goto out_free;
	}
	if (ii >= 0) {
		nie = xa_without(st.ie, st.in, ii, &nin);
		xa_store_ibody(ip, &st, nie, nin);
	}
	sfs_i_touch(fs, ip, SFS_SET_CTIME);
	rc = sfs_inode_dirty(fs, ip);
out_free:
	g_free(nbe);
	g_free(nie);
	xa_state_free(&st);
	return rc;
}

/*
 * ip is being freed: drop its reference to its xattr block (freed when no
 * other inode shares it), clear i_file_acl and its i_blocks share, write
 * the inode.  0 or -EIO (a bad block is reported and left allocated).
 */
int sfs_xattr_drop(struct sfs_fs *fs, struct sfs_inode *ip)
{
	sfs_blk_t blk;
	int rc;

	rc = xa_block_no(fs, ip, &blk);
	if (rc || !blk)
		return rc;
	rc = xa_block_unref(fs, ip, blk);
	if (rc)
		return rc;
	ip->d.i_file_acl = 0;
	sfs_i_add_blocks(fs, ip, -1);
	return sfs_inode_dirty(fs, ip);
}

/* fs_priv.h: the raw value under index idx, empty name (acl.c). */
int sfs_xattr_get_index(struct sfs_fs *fs, struct sfs_inode *ip, uint8_t idx,
			void **value_out, size_t *len_out)
{
	const struct xa_entry *hit = NULL;
	struct xa_state st;
	int rc, i;

	rc = xa_load(fs, ip, &st);
	if (rc)
		goto out_free;
	if ((i = xa_find(st.ie, st.in, idx, "", 0)) >= 0)
		hit = &st.ie[i];
	else if ((i = xa_find(st.be, st.bn, idx, "", 0)) >= 0)
		hit = &st.be[i];
	if (!hit) {
		rc = -ENODATA;
		goto out_free;
	}
	*value_out = g_memdup2(hit->value, hit->size);
	*len_out = hit->size;
out_free:
	xa_state_free(&st);
	return rc;
}

int sfs_xattr_set_index(struct sfs_fs *fs, struct sfs_inode *ip, uint8_t idx,
			const void *value, size_t size)
{
	return xa_set(fs, ip, idx, "", 0, value, size, 0);
}

/* ---- the fs.h verbs: lock, take an inode reference, call the worker ---- */

/* -EOPNOTSUPP for a user.* name when mounted nouser_xattr, as ext4's
 * user.* handler with the option off. */
static int xa_allowed(struct sfs_fs *fs, const char *name)
{
	if (fs->cfg.no_user_xattr && strncmp(name, "user.", 5) == 0)
		return -EOPNOTSUPP;
	/* noacl: as ext4's ACL handlers without the option */
	if (fs->cfg.no_acl && strncmp(name, "system.posix_acl_", 17) == 0)
		return -EOPNOTSUPP;
	return 0;
}

/* fs.h: sfs_xattr_get under fs->lock.  -ESTALE for an unknown inode. */
int sfs_getxattr(struct sfs_fs *fs, sfs_ino_t ino, const char *name, void *buf,
		 size_t size, size_t *len_out)
{
	struct sfs_inode *ip;
	int rc;

	if (!fs || !name || !len_out)
		return -EINVAL;
	sfs_op_begin(fs, SFS_OP_GETXATTR);
	rc = xa_allowed(fs, name);
	if (rc)
		goto out_unlock;
	rc = sfs_iget(fs, ino, &ip);
	if (rc)
		goto out_unlock;
	rc = sfs_xattr_get(fs, ip, name, buf, size, len_out);
	sfs_iput(fs, ip);
out_unlock:
	sfs_op_end(fs);
	return rc;
}

/* fs.h: sfs_xattr_set under fs->lock; -EROFS on a read-only or failed
 * filesystem. */
int sfs_setxattr(struct sfs_fs *fs, sfs_ino_t ino, const char *name,
		 const void *value, size_t size, int flags)
{
	struct sfs_inode *ip;
	int rc;

	if (!fs || !name)
		return -EINVAL;
	sfs_op_begin(fs, SFS_OP_SETXATTR);
	rc = xa_allowed(fs, name);
	if (rc)
		goto out_unlock;
	rc = sfs_check_writable(fs);
	if (rc)
		goto out_unlock;
	rc = sfs_iget(fs, ino, &ip);
	if (rc)
		goto out_unlock;
	/* xattr_permission: no change to an immutable or append-only
	 * inode */
	rc = sfs_i_pinned(ip) ? -EPERM
			      : sfs_xattr_set(fs, ip, name, value, size, flags);
	sfs_iput(fs, ip);
out_unlock:
	sfs_op_end(fs);
	return rc;
}

/* fs.h: sfs_xattr_list under fs->lock. */
int sfs_listxattr(struct sfs_fs *fs, sfs_ino_t ino, char *buf, size_t size,
		  size_t *len_out)
{
	struct sfs_inode *ip;
	int rc;

	if (!fs || !len_out)
		return -EINVAL;
	sfs_op_begin(fs, SFS_OP_LISTXATTR);
	rc = sfs_iget(fs, ino, &ip);
	if (rc)
		goto out_unlock;
	rc = sfs_xattr_list(fs, ip, buf, size, len_out);
	sfs_iput(fs, ip);
out_unlock:
	sfs_op_end(fs);
	return rc;
}

/* Is name system.posix_acl_access or _default? */
static bool xa_name_is_acl(const char *name)
{
	const char *sfx;
	uint8_t len, idx;

	return xa_parse_name(name, &idx, &sfx, &len) == 0 && xa_is_acl(idx);
}

/* fs.h: sfs_xattr_remove under fs->lock; -EROFS as sfs_setxattr.  An ACL
 * that is not there is removed without error, as on ext4. */
int sfs_removexattr(struct sfs_fs *fs, sfs_ino_t ino, const char *name)
{
	struct sfs_inode *ip;
	int rc;

	if (!fs || !name)
		return -EINVAL;
	sfs_op_begin(fs, SFS_OP_REMOVEXATTR);
	rc = xa_allowed(fs, name);
	if (rc)
		goto out_unlock;
	rc = sfs_check_writable(fs);
	if (rc)
		goto out_unlock;
	rc = sfs_iget(fs, ino, &ip);
	if (rc)
		goto out_unlock;
	/* xattr_permission: no change to an immutable or append-only
	 * inode */
	rc = sfs_i_pinned(ip) ? -EPERM : sfs_xattr_remove(fs, ip, name);
	/* removing an ACL is ext4_set_acl(NULL): absent is not an error */
	if (rc == -ENODATA && xa_name_is_acl(name))
		rc = 0;
	sfs_iput(fs, ip);
out_unlock:
	sfs_op_end(fs);
	return rc;
}
