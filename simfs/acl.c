/*
 * acl.c - POSIX ACLs (doc/internals.md, section 7.1): the two encodings,
 * and what ext4 does with an ACL besides storing it.
 *
 * An ACL is stored as the value of xattr name index 2 (access) or 3
 * (default) with an empty name, in ext4's encoding (format.h: version 1,
 * short entries without id); getxattr/setxattr of system.posix_acl_access
 * and _default speak the VFS's encoding (version 2, 8-byte entries).
 * xattr.c converts at that door with sfs_acl_from_xattr/_to_disk and
 * sfs_acl_from_disk/_to_xattr; both readers check the ACL as the kernel's
 * posix_acl_valid does, so no invalid ACL is ever stored or served.
 *
 * The kernel enforces ACLs (FUSE_POSIX_ACL with default_permissions) but
 * leaves the rest to the filesystem, as ext4 does it itself:
 *  1. setting an access ACL sets the mode's permission bits from it, and
 *     an ACL the mode says all of is not stored (sfs_acl_mode: ext4's
 *     posix_acl_update_mode);
 *  2. chmod rewrites the access ACL's owner, mask (or group) and other
 *     entries (sfs_acl_chmod_inode: posix_acl_chmod);
 *  3. a new inode in a directory with a default ACL gets it, masked by
 *     the create mode, as its access ACL, a new directory also as its
 *     default ACL, and the umask is not applied; without one the umask
 *     is (sfs_acl_inherit: ext4_init_acl and posix_acl_create).
 * All of it is skipped with -o noacl.  Callers hold fs->lock.
 */
#include <errno.h>
#include <string.h>

#include "fs_priv.h"

#define ACL_PERM_MASK 07u

/* One parsed ACL: n entries in their stored order. */
struct sfs_acl {
	unsigned n;
	struct sfs_dacl_entry e[]; /* host byte order here */
};

static bool acl_named(uint16_t tag)
{
	return tag == SFS_ACL_USER || tag == SFS_ACL_GROUP;
}

/* The kernel's posix_acl_valid: owner, named users by rising uid, group,
 * named groups by rising gid, a mask if anything is named, other; each
 * unnamed tag once; permissions rwx only.  0 or -EINVAL. */
static int acl_check(const struct sfs_acl *a)
{
	enum { S_UOBJ, S_USER, S_GROUP, S_OTHER, S_DONE } state = S_UOBJ;
	bool named = false, have_id = false;
	uint32_t prev = 0;

	for (unsigned i = 0; i < a->n; i++) {
		const struct sfs_dacl_entry *e = &a->e[i];

		if (e->e_perm & ~ACL_PERM_MASK)
			return -EINVAL;
		switch (e->e_tag) {
		case SFS_ACL_USER_OBJ:
			if (state != S_UOBJ)
				return -EINVAL;
			state = S_USER;
			have_id = false;
			break;
		case SFS_ACL_USER:
		case SFS_ACL_GROUP:
			if (state !=
			    (e->e_tag == SFS_ACL_USER ? S_USER : S_GROUP))
				return -EINVAL;
			if (have_id && e->e_id <= prev)
				return -EINVAL;
			prev = e->e_id;
			have_id = true;
			named = true;
			break;
		case SFS_ACL_GROUP_OBJ:
			if (state != S_USER)
				return -EINVAL;
			state = S_GROUP;
			have_id = false;
			break;
		case SFS_ACL_MASK:
			if (state != S_GROUP)
				return -EINVAL;
			state = S_OTHER;
			break;
		case SFS_ACL_OTHER:
			if (state != S_OTHER && !(state == S_GROUP && !named))
				return -EINVAL;
			state = S_DONE;
			break;
		default:
			return -EINVAL;
		}
	}
	return state == S_DONE ? 0 : -EINVAL;
}

static struct sfs_acl *acl_new(unsigned n)
{
	struct sfs_acl *a = g_try_malloc0(sizeof(*a) + n * sizeof(a->e[0]));

	if (a)
		a->n = n;
	return a;
}

/*
 * Parse the VFS encoding (setxattr's value).  An ACL of no entries (only
 * the header) is allowed: it means "remove".  0, -EINVAL (bad version,
 * size or ACL), -ENOMEM.  *out is g_free'd by the caller.
 */
int sfs_acl_from_xattr(const void *value, size_t size, struct sfs_acl **out)
{
	const uint8_t *p = value;
	struct sfs_acl *a;
	size_t n;

	if (!value || size < sizeof(struct sfs_dacl_header) ||
	    sfs_get_le32(p) != SFS_ACL_XATTR_VERSION ||
	    (size - 4) % sizeof(struct sfs_dacl_entry))
		return -EINVAL;
	n = (size - 4) / sizeof(struct sfs_dacl_entry);
	a = acl_new((unsigned)n);
	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++, p += 8) {
		a->e[i].e_tag = sfs_get_le16(p + 4);
		a->e[i].e_perm = sfs_get_le16(p + 6);
		a->e[i].e_id = acl_named(a->e[i].e_tag) ? sfs_get_le32(p + 8)
							: SFS_ACL_UNDEFINED_ID;
	}
	if (n && acl_check(a)) {
		g_free(a);
		return -EINVAL;
	}
	*out = a;
	return 0;
}

/* Parse ext4's encoding (a stored value).  0, -EIO (not a valid ACL),
 * -ENOMEM. */
int sfs_acl_from_disk(const void *value, size_t size, struct sfs_acl **out)
{
	const uint8_t *p = value, *end = p + size;
	struct sfs_acl *a;
	unsigned n = 0;

	if (!value || size < 4 || sfs_get_le32(p) != SFS_ACL_DISK_VERSION)
		return -EIO;
	/* at most (size - 4) / 4 entries, all short */
	a = acl_new((unsigned)((size - 4) / 4));
	if (!a)
		return -ENOMEM;
	for (p += 4; p < end; n++) {
		uint16_t tag;

		if (end - p < 4)
			goto out_bad;
		tag = sfs_get_le16(p);
		a->e[n].e_tag = tag;
		a->e[n].e_perm = sfs_get_le16(p + 2);
		a->e[n].e_id = SFS_ACL_UNDEFINED_ID;
		if (acl_named(tag)) {
			if (end - p < 8)
				goto out_bad;
			a->e[n].e_id = sfs_get_le32(p + 4);
			p += 8;
		} else {
			p += 4;
		}
	}
	a->n = n;
	if (n == 0 || acl_check(a))
		goto out_bad;
	*out = a;
	return 0;
out_bad:
	g_free(a);
	return -EIO;
}

/* ext4's encoding of a (g_free it); *len_out its bytes. */
void *sfs_acl_to_disk(const struct sfs_acl *a, size_t *len_out)
{
	size_t len = 4;
	uint8_t *buf, *p;

	for (unsigned i = 0; i < a->n; i++)
		len += acl_named(a->e[i].e_tag) ? 8 : 4;
	p = buf = g_malloc(len);
	sfs_put_le32(p, SFS_ACL_DISK_VERSION);
	p += 4;
	for (unsigned i = 0; i < a->n; i++) {
		sfs_put_le16(p, a->e[i].e_tag);
		sfs_put_le16(p + 2, a->e[i].e_perm);
		if (acl_named(a->e[i].e_tag)) {
			sfs_put_le32(p + 4, a->e[i].e_id);
			p += 8;
		} else {
			p += 4;
		}
	}
	*len_out = len;
	return buf;
}

/* The VFS encoding of a into buf (NULL: only the size); returns its
 * bytes. */
size_t sfs_acl_to_xattr(const struct sfs_acl *a, void *buf)
{
	uint8_t *p = buf;

	if (p) {
		sfs_put_le32(p, SFS_ACL_XATTR_VERSION);
		for (unsigned i = 0; i < a->n; i++) {
			uint8_t *q = p + 4 + 8 * i;

			sfs_put_le16(q, a->e[i].e_tag);
			sfs_put_le16(q + 2, a->e[i].e_perm);
			sfs_put_le32(q + 4, a->e[i].e_id);
		}
	}
	return 4 + 8 * (size_t)a->n;
}

unsigned sfs_acl_count(const struct sfs_acl *a)
{
	return a->n;
}

/* Rule 1: the permission bits of *mode from a (owner, mask or else
 * group, other).  true if a says no more than those bits do (only the
 * three unnamed entries): then it need not be stored. */
bool sfs_acl_mode(const struct sfs_acl *a, uint32_t *mode)
{
	uint32_t u = 0, g = 0, o = 0, m = 0;
	bool mask = false, equiv = true;

	for (unsigned i = 0; i < a->n; i++) {
		const struct sfs_dacl_entry *e = &a->e[i];

		switch (e->e_tag) {
		case SFS_ACL_USER_OBJ:
			u = e->e_perm;
			break;
		case SFS_ACL_GROUP_OBJ:
			g = e->e_perm;
			break;
		case SFS_ACL_OTHER:
			o = e->e_perm;
			break;
		case SFS_ACL_MASK:
			m = e->e_perm;
			mask = true;
			equiv = false;
			break;
		default:
			equiv = false;
			break;
		}
	}
	*mode = (*mode & ~0777u) | u << 6 | (mask ? m : g) << 3 | o;
	return equiv;
}

/* Rule 2: owner, mask (else group) and other entries take the bits of
 * mode. */
static void acl_chmod(struct sfs_acl *a, uint32_t mode)
{
	struct sfs_dacl_entry *group = NULL, *mask = NULL;

	for (unsigned i = 0; i < a->n; i++) {
		struct sfs_dacl_entry *e = &a->e[i];

		if (e->e_tag == SFS_ACL_USER_OBJ)
			e->e_perm = (mode >> 6) & 7;
		else if (e->e_tag == SFS_ACL_OTHER)
			e->e_perm = mode & 7;
		else if (e->e_tag == SFS_ACL_GROUP_OBJ)
			group = e;
		else if (e->e_tag == SFS_ACL_MASK)
			mask = e;
	}
	if (mask)
		mask->e_perm = (mode >> 3) & 7;
	else if (group)
		group->e_perm = (mode >> 3) & 7;
}

/* Rule 3, the kernel's posix_acl_create_masq: a (a copy of the default
 * ACL) masked by the create mode *mode, and *mode masked by a.  true if
 * the result must be stored. */
static bool acl_create_masq(struct sfs_acl *a, uint32_t *mode)
{
	struct sfs_dacl_entry *group = NULL, *mask = NULL;
	uint32_t m = *mode;
	bool store = false;

	for (unsigned i = 0; i < a->n; i++) {
		struct sfs_dacl_entry *e = &a->e[i];

		switch (e->e_tag) {
		case SFS_ACL_USER_OBJ:
			e->e_perm &= (m >> 6) & 7;
			m &= (uint32_t)(e->e_perm << 6) | ~0700u;
			break;
		case SFS_ACL_OTHER:
			e->e_perm &= m & 7;
			m &= e->e_perm | ~0007u;
			break;
		case SFS_ACL_GROUP_OBJ:
			group = e;
			break;
		case SFS_ACL_MASK:
			mask = e;
			store = true;
			break;
		default:
			store = true;
			break;
		}
	}
	if (mask) {
		mask->e_perm &= (m >> 3) & 7;
		m &= (uint32_t)(mask->e_perm << 3) | ~0070u;
	} else if (group) {
		group->e_perm &= (m >> 3) & 7;
		m &= (uint32_t)(group->e_perm << 3) | ~0070u;
	}
	*mode = m;
	return store;
}

/* The ACL stored under index idx of ip: 0 with *out (g_free), -ENODATA,
 * -EIO (a bad value: one line says which inode), -ENOMEM. */
static int acl_load(struct sfs_fs *fs, struct sfs_inode *ip, uint8_t idx,
		    struct sfs_acl **out)
{
	void *val = NULL;
	size_t len = 0;
	int rc = sfs_xattr_get_index(fs, ip, idx, &val, &len);

	if (rc)
		return rc;
	rc = sfs_acl_from_disk(val, len, out);
	if (rc == -EIO)
		g_printerr("simfs: inode %u: %s ACL is not a valid ext4 ACL "
			   "(%zu bytes)\n",
			   ip->ino,
			   idx == SFS_XATTR_INDEX_ACL_ACCESS ? "access"
							     : "default",
			   len);
	g_free(val);
	return rc;
}

/* Store a under index idx of ip in ext4's encoding. */
static int acl_store(struct sfs_fs *fs, struct sfs_inode *ip, uint8_t idx,
		     const struct sfs_acl *a)
{
	size_t len;
	void *val = sfs_acl_to_disk(a, &len);
	int rc = sfs_xattr_set_index(fs, ip, idx, val, len);

	g_free(val);
	return rc;
}

/*
 * Rule 3, for ip just made in dp (not yet linked; its mode as asked):
 * inherit dp's default ACL, or apply umask (if has_umask) when there is
 * none.  Symlinks take neither.  0, -ENOSPC, -EIO.
 */
int sfs_acl_inherit(struct sfs_fs *fs, struct sfs_inode *dp,
		    struct sfs_inode *ip, bool has_umask, uint32_t umask)
{
	uint32_t mode = sfs_i_mode(ip);
	struct sfs_acl *def = NULL;
	int rc = -ENODATA;

	if ((mode & SFS_S_IFMT) == SFS_S_IFLNK)
		return 0;
	if (!fs->cfg.no_acl)
		rc = acl_load(fs, dp, SFS_XATTR_INDEX_ACL_DEFAULT, &def);
	if (rc == -ENODATA) {
		if (has_umask)
			sfs_i_set_mode(ip, mode & ~(umask & 0777));
		return 0;
	}
	if (rc)
		return rc;
	if (sfs_i_isdir(ip)) {
		rc = acl_store(fs, ip, SFS_XATTR_INDEX_ACL_DEFAULT, def);
		if (rc)
			goto out_free;
	}
	if (acl_create_masq(def, &mode))
		rc = acl_store(fs, ip, SFS_XATTR_INDEX_ACL_ACCESS, def);
	sfs_i_set_mode(ip, mode);
out_free:
	g_free(def);
	return rc;
}

/* Rule 2, after ip's mode changed: its access ACL follows, if it has
 * one.  0, -ENOSPC, -EIO. */
int sfs_acl_chmod_inode(struct sfs_fs *fs, struct sfs_inode *ip)
{
	struct sfs_acl *a;
	int rc;

	if (fs->cfg.no_acl || (sfs_i_mode(ip) & SFS_S_IFMT) == SFS_S_IFLNK)
		return 0;
	rc = acl_load(fs, ip, SFS_XATTR_INDEX_ACL_ACCESS, &a);
	if (rc == -ENODATA)
		return 0;
	if (rc)
		return rc;
	acl_chmod(a, sfs_i_mode(ip));
	rc = acl_store(fs, ip, SFS_XATTR_INDEX_ACL_ACCESS, a);
	g_free(a);
	return rc;
}
