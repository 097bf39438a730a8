/*
 * test_acl.c - POSIX ACLs through the engine's xattr verbs (acl.c): the
 * VFS encoding in and out, ext4's encoding on disk (the stored bytes read
 * back through sfs_xattr_get_index), the checks posix_acl_valid makes,
 * the mode following a set ACL and an ACL following chmod, default ACL
 * inheritance with and without the creator's umask, and noacl.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fs_priv.h"
#include "testsupport.h"

#define MiB (1024 * 1024ull)
#define ROOT SFS_ROOT_INO
#define ACCESS "system.posix_acl_access"
#define DEFAULT "system.posix_acl_default"
#define NOID SFS_ACL_UNDEFINED_ID

struct ent {
	uint16_t tag, perm;
	uint32_t id;
};

/* The VFS encoding of n entries into buf; returns its bytes. */
static size_t vfs_acl(uint8_t *buf, const struct ent *e, size_t n)
{
	uint32_t v = 2;

	memcpy(buf, &v, 4);
	for (size_t i = 0; i < n; i++) {
		memcpy(buf + 4 + 8 * i, &e[i].tag, 2);
		memcpy(buf + 6 + 8 * i, &e[i].perm, 2);
		memcpy(buf + 8 + 8 * i, &e[i].id, 4);
	}
	return 4 + 8 * n;
}

static const struct ent named[] = {
    {SFS_ACL_USER_OBJ, 6, NOID}, {SFS_ACL_USER, 0, 65534},
    {SFS_ACL_USER, 6, 70000},	 {SFS_ACL_GROUP_OBJ, 4, NOID},
    {SFS_ACL_GROUP, 4, 5678},	 {SFS_ACL_MASK, 6, NOID},
    {SFS_ACL_OTHER, 4, NOID},
};

static uint32_t mode_of(struct sfs_fs *fs, sfs_ino_t ino)
{
	struct sfs_attr a;

	assert_int_equal(sfs_getattr(fs, ino, &a), 0);
	return a.mode & 07777;
}

/* The raw stored value of index idx (ext4's encoding). */
static size_t raw_acl(struct sfs_fs *fs, sfs_ino_t ino, uint8_t idx,
		      uint8_t *out)
{
	struct sfs_inode *ip;
	void *val = NULL;
	size_t len = 0;

	assert_int_equal(sfs_iget(fs, ino, &ip), 0);
	assert_int_equal(sfs_xattr_get_index(fs, ip, idx, &val, &len), 0);
	sfs_iput(fs, ip);
	memcpy(out, val, len);
	g_free(val);
	return len;
}

static void test_acl_round_trip_and_disk_encoding(void **state)
{
	struct sfs_tfs *t = sfs_tfs_new(4096, 32 * MiB, "");
	uint8_t in[128], out[128], disk[128];
	struct sfs_attr a;
	size_t n, len;

	(void)state;
	assert_int_equal(
	    sfs_mknod(t->fs, ROOT, "f", SFS_S_IFREG | 0644, 0, 0, 0, &a), 0);
	n = vfs_acl(in, named, G_N_ELEMENTS(named));
	assert_int_equal(sfs_setxattr(t->fs, a.ino, ACCESS, in, n, 0), 0);
	assert_int_equal(sfs_getxattr(t->fs, a.ino, ACCESS, NULL, 0, &len), 0);
	assert_int_equal(len, n);
	assert_int_equal(sfs_getxattr(t->fs, a.ino, ACCESS, out, 8, &len),
			 -ERANGE);
	assert_int_equal(
	    sfs_getxattr(t->fs, a.ino, ACCESS, out, sizeof(out), &len), 0);
	assert_memory_equal(out, in, n);
	/* on disk: version 1, 3 named entries of 8 bytes, 4 short of 4 */
	len = raw_acl(t->fs, a.ino, SFS_XATTR_INDEX_ACL_ACCESS, disk);
	assert_int_equal(len, 4 + 3 * 8 + 4 * 4);
	assert_int_equal(disk[0], 1);
	assert_int_equal(disk[4], SFS_ACL_USER_OBJ);
	assert_int_equal(disk[6], 6);
	assert_int_equal(disk[8], SFS_ACL_USER);
	assert_int_equal(disk[12] | disk[13] << 8, 65534);
	/* the mode's group bits are the mask's */
	assert_int_equal(mode_of(t->fs, a.ino), 0664);
	sfs_tfs_cycle(t);
	assert_int_equal(
	    sfs_getxattr(t->fs, a.ino, ACCESS, out, sizeof(out), &len), 0);
	assert_int_equal(len, n);
	assert_memory_equal(out, in, n);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_acl_invalid_refused(void **state)
{
	struct sfs_tfs *t = sfs_tfs_new(4096, 32 * MiB, "");
	static const struct ent no_mask[] = {{SFS_ACL_USER_OBJ, 6, NOID},
					     {SFS_ACL_USER, 6, 7},
					     {SFS_ACL_GROUP_OBJ, 4, NOID},
					     {SFS_ACL_OTHER, 4, NOID}};
	static const struct ent unsorted[] = {
	    {SFS_ACL_USER_OBJ, 6, NOID}, {SFS_ACL_USER, 6, 9},
	    {SFS_ACL_USER, 6, 7},	 {SFS_ACL_GROUP_OBJ, 4, NOID},
	    {SFS_ACL_MASK, 6, NOID},	 {SFS_ACL_OTHER, 4, NOID}};
	static const struct ent bad_perm[] = {{SFS_ACL_USER_OBJ, 8, NOID},
					      {SFS_ACL_GROUP_OBJ, 4, NOID},
					      {SFS_ACL_OTHER, 4, NOID}};
	static const struct ent no_other[] = {{SFS_ACL_USER_OBJ, 6, NOID},
					      {SFS_ACL_GROUP_OBJ, 4, NOID}};
	uint8_t buf[128];
	struct sfs_attr a;
	size_t n;

	(void)state;
	assert_int_equal(
	    sfs_mknod(t->fs, ROOT, "f", SFS_S_IFREG | 0644, 0, 0, 0, &a), 0);
	n = vfs_acl(buf, no_mask, G_N_ELEMENTS(no_mask));
	assert_int_equal(sfs_setxattr(t->fs, a.ino, ACCESS, buf, n, 0),
			 -EINVAL);
	n = vfs_acl(buf, unsorted, G_N_ELEMENTS(unsorted));
	assert_int_equal(sfs_setxattr(t->fs, a.ino, ACCESS, buf, n, 0),
			 -EINVAL);
	n = vfs_acl(buf, bad_perm, G_N_ELEMENTS(bad_perm));
	assert_int_equal(sfs_setxattr(t->fs, a.ino, ACCESS, buf, n, 0),
			 -EINVAL);
	n = vfs_acl(buf, no_other, G_N_ELEMENTS(no_other));
	assert_int_equal(sfs_setxattr(t->fs, a.ino, ACCESS, buf, n, 0),
			 -EINVAL);
	n = vfs_acl(buf, named, G_N_ELEMENTS(named));
	buf[0] = 1; /* ext4's version is not the VFS's */
	assert_int_equal(sfs_setxattr(t->fs, a.ino, ACCESS, buf, n, 0),
			 -EINVAL);
	buf[0] = 2;
	assert_int_equal(sfs_setxattr(t->fs, a.ino, ACCESS, buf, n - 3, 0),
			 -EINVAL);
	/* a default ACL belongs to directories */
	assert_int_equal(sfs_setxattr(t->fs, a.ino, DEFAULT, buf, n, 0),
			 -EACCES);
	assert_int_equal(mode_of(t->fs, a.ino), 0644);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_acl_mode_follows(void **state)
{
	struct sfs_tfs *t = sfs_tfs_new(4096, 32 * MiB, "");
	static const struct ent minimal[] = {{SFS_ACL_USER_OBJ, 7, NOID},
					     {SFS_ACL_GROUP_OBJ, 5, NOID},
					     {SFS_ACL_OTHER, 1, NOID}};
	uint8_t buf[128], out[128];
	struct sfs_attr a, in = {.mode = 0600};
	size_t n, len;

	(void)state;
	assert_int_equal(
	    sfs_mknod(t->fs, ROOT, "f", SFS_S_IFREG | 04644, 0, 0, 0, &a), 0);
	/* an ACL the mode can say is only a chmod: not stored */
	n = vfs_acl(buf, minimal, G_N_ELEMENTS(minimal));
	assert_int_equal(sfs_setxattr(t->fs, a.ino, ACCESS, buf, n, 0), 0);
	assert_int_equal(mode_of(t->fs, a.ino), 04751);
	assert_int_equal(
	    sfs_getxattr(t->fs, a.ino, ACCESS, out, sizeof(out), &len),
	    -ENODATA);
	/* chmod rewrites owner, mask and other; named entries stay */
	n = vfs_acl(buf, named, G_N_ELEMENTS(named));
	assert_int_equal(sfs_setxattr(t->fs, a.ino, ACCESS, buf, n, 0), 0);
	assert_int_equal(sfs_setattr(t->fs, a.ino, &in, SFS_SET_MODE, NULL), 0);
	assert_int_equal(
	    sfs_getxattr(t->fs, a.ino, ACCESS, out, sizeof(out), &len), 0);
	assert_int_equal(len, n);
	assert_int_equal(out[4 + 2], 6);      /* user::rw- */
	assert_int_equal(out[4 + 8 + 2], 0);  /* u:65534:--- kept */
	assert_int_equal(out[4 + 16 + 2], 6); /* u:70000:rw- kept */
	assert_int_equal(out[4 + 24 + 2], 4); /* group::r-- kept */
	assert_int_equal(out[4 + 40 + 2], 0); /* mask::--- */
	assert_int_equal(out[4 + 48 + 2], 0); /* other::--- */
	/* an empty ACL removes it */
	n = vfs_acl(buf, NULL, 0);
	assert_int_equal(sfs_setxattr(t->fs, a.ino, ACCESS, buf, n, 0), 0);
	assert_int_equal(
	    sfs_getxattr(t->fs, a.ino, ACCESS, out, sizeof(out), &len),
	    -ENODATA);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_acl_inherit(void **state)
{
	struct sfs_tfs *t = sfs_tfs_new(4096, 32 * MiB, "");
	static const struct ent def[] = {{SFS_ACL_USER_OBJ, 7, NOID},
					 {SFS_ACL_USER, 7, 65534},
					 {SFS_ACL_GROUP_OBJ, 5, NOID},
					 {SFS_ACL_MASK, 7, NOID},
					 {SFS_ACL_OTHER, 0, NOID}};
	uint8_t buf[128], out[128], sub[128];
	struct sfs_attr d, f, s, p, l;
	size_t n, len, slen;

	(void)state;
	assert_int_equal(sfs_mkdir(t->fs, ROOT, "d", 0755, 0, 0, &d), 0);
	n = vfs_acl(buf, def, G_N_ELEMENTS(def));
	assert_int_equal(sfs_setxattr(t->fs, d.ino, DEFAULT, buf, n, 0), 0);
	/* umask 077 is not applied under a default ACL */
	assert_int_equal(sfs_mknod(t->fs, d.ino, "f",
				   SFS_S_IFREG | 0666 | SFS_MODE_UMASK(077), 0,
				   0, 0, &f),
			 0);
	assert_int_equal(f.mode & 07777, 0660);
	assert_int_equal(
	    sfs_getxattr(t->fs, f.ino, ACCESS, out, sizeof(out), &len), 0);
	assert_int_equal(len, n);
	assert_int_equal(out[4 + 2], 6);      /* user::rw- */
	assert_int_equal(out[4 + 8 + 2], 7);  /* u:65534:rwx */
	assert_int_equal(out[4 + 24 + 2], 6); /* mask::rw- */
	assert_int_equal(out[4 + 32 + 2], 0); /* other::--- */
	assert_int_equal(
	    sfs_getxattr(t->fs, f.ino, DEFAULT, out, sizeof(out), &len),
	    -ENODATA);
	/* a directory gets the default ACL too */
	assert_int_equal(
	    sfs_mkdir(t->fs, d.ino, "s", 0777 | SFS_MODE_UMASK(022), 0, 0, &s),
	    0);
	assert_int_equal(s.mode & 07777, 0770);
	assert_int_equal(
	    sfs_getxattr(t->fs, s.ino, DEFAULT, sub, sizeof(sub), &slen), 0);
	assert_int_equal(slen, n);
	assert_memory_equal(sub, buf, n);
	/* a symlink takes nothing */
	assert_int_equal(sfs_symlink(t->fs, d.ino, "l", "f", 0, 0, &l), 0);
	assert_int_equal(
	    sfs_getxattr(t->fs, l.ino, ACCESS, out, sizeof(out), &len),
	    -ENODATA);
	/* without a default ACL the umask applies */
	assert_int_equal(sfs_mknod(t->fs, ROOT, "p",
				   SFS_S_IFREG | 0666 | SFS_MODE_UMASK(027), 0,
				   0, 0, &p),
			 0);
	assert_int_equal(p.mode & 07777, 0640);
	sfs_tfs_cycle(t);
	assert_int_equal(
	    sfs_getxattr(t->fs, s.ino, DEFAULT, sub, sizeof(sub), &slen), 0);
	assert_memory_equal(sub, buf, n);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_acl_noacl(void **state)
{
	struct sfs_tfs *t = sfs_tfs_new(4096, 32 * MiB, "");
	uint8_t buf[128];
	struct sfs_attr d, f;
	char names[256];
	size_t n, len;

	(void)state;
	assert_int_equal(sfs_mkdir(t->fs, ROOT, "d", 0755, 0, 0, &d), 0);
	n = vfs_acl(buf, named, G_N_ELEMENTS(named));
	assert_int_equal(sfs_setxattr(t->fs, d.ino, DEFAULT, buf, n, 0), 0);
	sfs_tfs_close(t);
	t->fs = sfs_test_open(t->img, "noacl");
	assert_non_null(t->fs);
	assert_int_equal(sfs_setxattr(t->fs, d.ino, ACCESS, buf, n, 0),
			 -EOPNOTSUPP);
	assert_int_equal(sfs_getxattr(t->fs, d.ino, DEFAULT, buf, 0, &len),
			 -EOPNOTSUPP);
	assert_int_equal(
	    sfs_listxattr(t->fs, d.ino, names, sizeof(names), &len), 0);
	assert_int_equal(len, 0);
	/* no inheritance: the umask applies */
	assert_int_equal(sfs_mknod(t->fs, d.ino, "f",
				   SFS_S_IFREG | 0666 | SFS_MODE_UMASK(022), 0,
				   0, 0, &f),
			 0);
	assert_int_equal(f.mode & 07777, 0644);
	sfs_tfs_reopen(t);
	assert_int_equal(
	    sfs_listxattr(t->fs, d.ino, names, sizeof(names), &len), 0);
	assert_int_equal(len, sizeof(DEFAULT));
	assert_string_equal(names, DEFAULT);
	assert_int_equal(
	    sfs_getxattr(t->fs, f.ino, ACCESS, buf, sizeof(buf), &len),
	    -ENODATA);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_acl_round_trip_and_disk_encoding),
	    cmocka_unit_test(test_acl_invalid_refused),
	    cmocka_unit_test(test_acl_mode_follows),
	    cmocka_unit_test(test_acl_inherit),
	    cmocka_unit_test(test_acl_noacl),
	};

	return cmocka_run_group_tests_name("acl", tests, NULL, NULL);
}
