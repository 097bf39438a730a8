/*
 * test_dir.c - linear directories (simfs/dir.c) through the engine API:
 * insert/lookup/remove across many blocks, a 20,000-entry directory looked
 * up through the name index, readdir cookies stable under concurrent
 * change, reuse of freed space, the byte layout of "." and "..", and a
 * corrupt block answered with -EIO while other directories keep serving.
 *
 * Every case that leaves a sound image closes the filesystem and asks the
 * e2fsck oracle (sfs_test_fsck_clean) to find it clean.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs_priv.h"
#include "testsupport.h"

#define MiB (1024 * 1024ull)

/* ---- fixture ---- */

static struct sfs_tfs *tfs_new(uint32_t bs, uint64_t size)
{
	return sfs_tfs_new(bs, size, "");
}

/* Directory "d" in the root holding files "a", "b" and "c". */
static sfs_ino_t mkdir_abc(struct sfs_fs *fs)
{
	sfs_ino_t d = sfs_test_mkdir(fs, SFS_ROOT_INO, "d");

	sfs_test_mknod(fs, d, "a");
	sfs_test_mknod(fs, d, "b");
	sfs_test_mknod(fs, d, "c");
	return d;
}

static uint64_t dir_size(struct sfs_fs *fs, sfs_ino_t ino)
{
	struct sfs_attr a;

	assert_int_equal(sfs_getattr(fs, ino, &a), 0);
	return a.size;
}

/* ---- readdir collection ---- */

struct rd {
	GHashTable *seen;   /* name -> times reported */
	unsigned reported;  /* entries accepted in this call */
	unsigned limit;	    /* stop after this many (0 = no limit) */
	uint64_t next;	    /* cookie to resume from */
	bool dup;	    /* some name reported twice */
	uint8_t ftype_of_x; /* file type seen for a name starting 'x' */
};

static struct rd *rd_new(void)
{
	struct rd *r = g_new0(struct rd, 1);

	r->seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	return r;
}

static void rd_free(struct rd *r)
{
	g_hash_table_destroy(r->seen);
	g_free(r);
}

static unsigned rd_count(struct rd *r, const char *name)
{
	return GPOINTER_TO_UINT(g_hash_table_lookup(r->seen, name));
}

static int rd_fill(void *ctx, const char *name, size_t len, sfs_ino_t ino,
		   uint8_t ftype, uint64_t next_off)
{
	struct rd *r = ctx;
	char *key;
	unsigned n;

	(void)ino;
	(void)ftype;
	if (r->limit && r->reported == r->limit)
		return 1; /* full: this entry comes again next call */
	key = g_strndup(name, len);
	n = GPOINTER_TO_UINT(g_hash_table_lookup(r->seen, key));
	if (n)
		r->dup = true;
	g_hash_table_insert(r->seen, key, GUINT_TO_POINTER(n + 1));
	r->reported++;
	r->next = next_off;
	return 0;
}

/* Read a whole directory in one call. */
static struct rd *rd_all(struct sfs_fs *fs, sfs_ino_t dir)
{
	struct rd *r = rd_new();

	assert_int_equal(sfs_readdir(fs, dir, 0, rd_fill, r), 0);
	return r;
}

/* ---- cases ---- */

/* Names of assorted lengths so records of every size tile the blocks. */
static void name_of(char *buf, size_t size, unsigned i)
{
	snprintf(buf, size, "n%04u-%.*s", i, (int)(i % 37),
		 "abcdefghijklmnopqrstuvwxyz0123456789abcdef");
}

static void test_dir_insert_lookup_remove_many_blocks(void **state)
{
	struct sfs_tfs *t = tfs_new(1024, 64 * MiB);
	const unsigned n = 700;
	sfs_ino_t d, *inos = g_new0(sfs_ino_t, n);
	char name[64];
	struct sfs_attr a;

	(void)state;
	d = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "d");
	for (unsigned i = 0; i < n; i++) {
		name_of(name, sizeof(name), i);
		inos[i] = sfs_test_mknod(t->fs, d, name);
	}
	/* ~700 records of 16..56 bytes: far more than one 1 KiB block */
	assert_true(dir_size(t->fs, d) >= 20 * 1024);
	assert_int_equal(dir_size(t->fs, d) % 1024, 0);
	for (unsigned i = 0; i < n; i++) {
		name_of(name, sizeof(name), i);
		assert_int_equal(sfs_lookup(t->fs, d, name, &a), 0);
		assert_int_equal(a.ino, inos[i]);
	}
	for (unsigned i = 0; i < n; i += 3) {
		name_of(name, sizeof(name), i);
		assert_int_equal(sfs_unlink(t->fs, d, name), 0);
		assert_int_equal(sfs_unlink(t->fs, d, name), -ENOENT);
	}
	for (unsigned i = 0; i < n; i++) {
		name_of(name, sizeof(name), i);
		assert_int_equal(sfs_lookup(t->fs, d, name, &a),
				 i % 3 ? 0 : -ENOENT);
	}
	assert_int_equal(sfs_lookup(t->fs, d, "missing", &a), -ENOENT);
	/* the index is rebuilt from disk after a remount */
	sfs_tfs_reopen(t);
	for (unsigned i = 0; i < n; i++) {
		name_of(name, sizeof(name), i);
		assert_int_equal(sfs_lookup(t->fs, d, name, &a),
				 i % 3 ? 0 : -ENOENT);
		if (i % 3)
			assert_int_equal(a.ino, inos[i]);
	}
	sfs_tfs_assert_clean(t);
	g_free(inos);
	sfs_tfs_free(t);
}

static uint64_t cache_gets(struct sfs_fs *fs)
{
	struct sfs_cache_counters c;

	sfs_cache_counters(fs->cache, &c);
	return c.hits + c.misses;
}

static void test_dir_twenty_thousand_entries(void **state)
{
	struct sfs_tfs *t = tfs_new(1024, 64 * MiB);
	const unsigned n = 20000;
	sfs_ino_t d, f;
	uint64_t before, nblocks;
	struct sfs_attr a;
	struct rd *r;
	char name[32];

	(void)state;
	d = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "big");
	f = sfs_test_mknod(t->fs, d, "target");
	/* hard links: 20,000 names without 20,000 inodes */
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "entry-%05u", i);
		assert_int_equal(sfs_link(t->fs, f, d, name, NULL), 0);
	}
	nblocks = dir_size(t->fs, d) / 1024;
	assert_true(nblocks > 300); /* mapped through the double indirect */
	assert_int_equal(sfs_getattr(t->fs, f, &a), 0);
	assert_int_equal(a.nlink, n + 1);

	/* present names: each lookup touches a handful of blocks, not the
	 * directory's hundreds */
	before = cache_gets(t->fs);
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "entry-%05u", i);
		assert_int_equal(sfs_lookup(t->fs, d, name, &a), 0);
		assert_int_equal(a.ino, f);
	}
	assert_true(cache_gets(t->fs) - before <= (uint64_t)n * 8);
	/* missing names: no directory block needs reading at all */
	before = cache_gets(t->fs);
	for (unsigned i = n; i < n + 2000; i++) {
		snprintf(name, sizeof(name), "entry-%05u", i);
		assert_int_equal(sfs_lookup(t->fs, d, name, &a), -ENOENT);
	}
	assert_int_equal(sfs_lookup(t->fs, d, "entry-", &a), -ENOENT);
	assert_true(cache_gets(t->fs) - before <= 2000 * 2);

	r = rd_all(t->fs, d);
	assert_false(r->dup);
	assert_int_equal(g_hash_table_size(r->seen), n + 3);
	assert_int_equal(rd_count(r, "."), 1);
	assert_int_equal(rd_count(r, ".."), 1);
	assert_int_equal(rd_count(r, "entry-12345"), 1);
	rd_free(r);

	for (unsigned i = 0; i < n; i += 2) {
		snprintf(name, sizeof(name), "entry-%05u", i);
		assert_int_equal(sfs_unlink(t->fs, d, name), 0);
	}
	assert_int_equal(sfs_getattr(t->fs, f, &a), 0);
	assert_int_equal(a.nlink, n / 2 + 1);
	/* the index after 10,000 deletions */
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "entry-%05u", i);
		assert_int_equal(sfs_lookup(t->fs, d, name, &a),
				 i % 2 ? 0 : -ENOENT);
	}
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* Random adds, removes and lookups checked against a model, then the same
 * after a remount. */
static void check_against_model(struct sfs_fs *fs, sfs_ino_t d,
				GHashTable *model, char **pool, unsigned npool)
{
	struct sfs_attr a;
	struct rd *r = rd_all(fs, d);

	assert_false(r->dup);
	assert_int_equal(g_hash_table_size(r->seen),
			 g_hash_table_size(model) + 2);
	for (unsigned i = 0; i < npool; i++) {
		bool in = g_hash_table_contains(model, pool[i]);

		assert_int_equal(rd_count(r, pool[i]), in ? 1 : 0);
		assert_int_equal(sfs_lookup(fs, d, pool[i], &a),
				 in ? 0 : -ENOENT);
	}
	rd_free(r);
}

static void test_dir_random_ops_match_model(void **state)
{
	struct sfs_tfs *t = tfs_new(1024, 32 * MiB);
	GRand *rnd = g_rand_new_with_seed(77);
	GHashTable *model = g_hash_table_new(g_str_hash, g_str_equal);
	const unsigned npool = 1500;
	char **pool = g_new0(char *, npool);
	struct sfs_attr a;
	sfs_ino_t d, f;

	(void)state;
	for (unsigned i = 0; i < npool; i++) {
		int len = g_rand_int_range(rnd, 1, 80);
		char *nm = g_malloc(len + 8);

		snprintf(nm, len + 8, "%u_", i);
		for (int k = (int)strlen(nm); k < len + 7; k++)
			nm[k] = (char)('a' + g_rand_int_range(rnd, 0, 26));
		nm[len + 7] = '\0';
		pool[i] = nm;
	}
	d = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "d");
	f = sfs_test_mknod(t->fs, SFS_ROOT_INO, "f");
	for (unsigned op = 0; op < 12000; op++) {
		char *nm = pool[g_rand_int_range(rnd, 0, npool)];
		bool in = g_hash_table_contains(model, nm);
		int what = g_rand_int_range(rnd, 0, 10);

		if (what < 6) {
			assert_int_equal(sfs_link(t->fs, f, d, nm, NULL),
					 in ? -EEXIST : 0);
			g_hash_table_add(model, nm);
		} else if (what < 9) {
			assert_int_equal(sfs_unlink(t->fs, d, nm),
					 in ? 0 : -ENOENT);
			g_hash_table_remove(model, nm);
		} else {
			assert_int_equal(sfs_lookup(t->fs, d, nm, &a),
					 in ? 0 : -ENOENT);
		}
		if (op % 3000 == 2999)
			check_against_model(t->fs, d, model, pool, npool);
	}
	sfs_tfs_reopen(t);
	check_against_model(t->fs, d, model, pool, npool);
	assert_int_equal(sfs_getattr(t->fs, f, &a), 0);
	assert_int_equal(a.nlink, g_hash_table_size(model) + 1);
	sfs_tfs_assert_clean(t);
	for (unsigned i = 0; i < npool; i++)
		g_free(pool[i]);
	g_free(pool);
	g_hash_table_destroy(model);
	g_rand_free(rnd);
	sfs_tfs_free(t);
}

/* Fill the filesystem with one file's data until no block is left. */
static void fill_fs(struct sfs_fs *fs)
{
	static char chunk[64 * 1024];
	struct sfs_attr a;
	uint64_t off = 0;
	size_t done;
	int rc;

	assert_int_equal(sfs_mknod(fs, SFS_ROOT_INO, "filler",
				   SFS_S_IFREG | 0644, 0, 0, 0, &a),
			 0);
	for (size_t len = sizeof(chunk); len >= 1024; len /= 2) {
		do {
			done = 0;
			rc = sfs_write(fs, a.ino, off, chunk, len, &done);
			off += done;
		} while (rc == 0);
		assert_int_equal(rc, -ENOSPC);
	}
}

/* A directory that cannot grow: -ENOSPC, nothing half done. */
static void test_dir_enospc_on_grow(void **state)
{
	struct sfs_tfs *t = tfs_new(1024, 16 * MiB);
	struct sfs_attr a;
	char name[48];
	unsigned n = 0;
	uint64_t size;
	sfs_ino_t d;
	int rc;

	(void)state;
	d = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "d");
	fill_fs(t->fs);
	size = dir_size(t->fs, d);
	for (;;) {
		snprintf(name, sizeof(name), "entry-with-a-long-name-%04u", n);
		rc = sfs_mknod(t->fs, d, name, SFS_S_IFREG | 0644, 0, 0, 0, &a);
		if (rc)
			break;
		n++;
		assert_true(n < 1000);
	}
	assert_int_equal(rc, -ENOSPC);
	assert_true(n > 10); /* the first block filled up first */
	assert_int_equal(dir_size(t->fs, d), size);
	assert_int_equal(sfs_lookup(t->fs, d, name, &a), -ENOENT);
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "entry-with-a-long-name-%04u", i);
		assert_int_equal(sfs_lookup(t->fs, d, name, &a), 0);
	}
	/* room comes back: the directory grows */
	assert_int_equal(sfs_unlink(t->fs, SFS_ROOT_INO, "filler"), 0);
	sfs_test_mknod(t->fs, d, "entry-with-a-long-name-last");
	assert_int_equal(dir_size(t->fs, d), size + 1024);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* Read dir in calls of `chunk` entries; between calls remove and add
 * entries.  Every entry present throughout must come exactly once. */
static void test_dir_readdir_stable_cookies(void **state)
{
	struct sfs_tfs *t = tfs_new(1024, 64 * MiB);
	const unsigned n = 400;
	GRand *rnd = g_rand_new_with_seed(20240611);
	bool *removed = g_new0(bool, n);
	unsigned added = 0, calls = 0;
	struct rd *r = rd_new();
	char name[32];
	sfs_ino_t d;

	(void)state;
	d = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "d");
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%03u%.*s", i, (int)(i % 13),
			 "zzzzzzzzzzzzz");
		sfs_test_mknod(t->fs, d, name);
	}
	r->limit = 7;
	r->next = 0;
	for (;;) {
		unsigned before = g_hash_table_size(r->seen);

		r->reported = 0;
		assert_int_equal(sfs_readdir(t->fs, d, r->next, rd_fill, r), 0);
		calls++;
		if (r->reported == 0)
			break;
		assert_true(g_hash_table_size(r->seen) > before);
		/* churn: remove 3 random live entries, add 2 new ones */
		for (int k = 0; k < 3; k++) {
			unsigned i = (unsigned)g_rand_int_range(rnd, 0, n);

			if (removed[i])
				continue;
			snprintf(name, sizeof(name), "f%03u%.*s", i,
				 (int)(i % 13), "zzzzzzzzzzzzz");
			assert_int_equal(sfs_unlink(t->fs, d, name), 0);
			removed[i] = true;
		}
		for (int k = 0; k < 2; k++) {
			snprintf(name, sizeof(name), "new%04u", added++);
			sfs_test_mknod(t->fs, d, name);
		}
	}
	assert_true(calls > n / 7 / 2);
	assert_false(r->dup);
	assert_int_equal(rd_count(r, "."), 1);
	assert_int_equal(rd_count(r, ".."), 1);
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%03u%.*s", i, (int)(i % 13),
			 "zzzzzzzzzzzzz");
		if (!removed[i])
			assert_int_equal(rd_count(r, name), 1);
		else
			assert_true(rd_count(r, name) <= 1);
	}
	rd_free(r);
	g_free(removed);
	g_rand_free(rnd);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* A cookie at an entry removed since (its record merged into the one
 * before it) resumes with the entry after it. */
static void test_dir_readdir_cookie_of_removed_entry(void **state)
{
	struct sfs_tfs *t = tfs_new(4096, 32 * MiB);
	struct rd *r = rd_new();
	sfs_ino_t d;

	(void)state;
	d = mkdir_abc(t->fs);
	r->limit = 3; /* ".", "..", "a"; stops on "b" */
	assert_int_equal(sfs_readdir(t->fs, d, 0, rd_fill, r), 0);
	assert_int_equal(r->reported, 3);
	assert_int_equal(rd_count(r, "a"), 1);
	assert_int_equal(rd_count(r, "b"), 0);
	assert_int_equal(sfs_unlink(t->fs, d, "b"), 0);
	assert_int_equal(sfs_unlink(t->fs, d, "a"), 0);
	r->limit = 0;
	r->reported = 0;
	assert_int_equal(sfs_readdir(t->fs, d, r->next, rd_fill, r), 0);
	assert_int_equal(r->reported, 1);
	assert_int_equal(rd_count(r, "c"), 1);
	assert_false(r->dup);
	/* a cookie past the end reports nothing */
	r->reported = 0;
	assert_int_equal(sfs_readdir(t->fs, d, 1u << 20, rd_fill, r), 0);
	assert_int_equal(r->reported, 0);
	rd_free(r);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

static void test_dir_reuses_freed_space(void **state)
{
	struct sfs_tfs *t = tfs_new(1024, 64 * MiB);
	char name[32];
	uint64_t size;
	sfs_ino_t d;

	(void)state;
	d = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "d");
	for (unsigned i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "old-%04u", i);
		sfs_test_mknod(t->fs, d, name);
	}
	size = dir_size(t->fs, d);
	assert_true(size >= 5 * 1024);
	/* free every entry, then add as many of the same size: no growth */
	for (unsigned i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "old-%04u", i);
		assert_int_equal(sfs_unlink(t->fs, d, name), 0);
	}
	for (unsigned i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "new-%04u", i);
		sfs_test_mknod(t->fs, d, name);
	}
	assert_int_equal(dir_size(t->fs, d), size);
	/* a longer name fits where two short ones were merged */
	assert_int_equal(sfs_unlink(t->fs, d, "new-0100"), 0);
	assert_int_equal(sfs_unlink(t->fs, d, "new-0101"), 0);
	sfs_test_mknod(t->fs, d, "a-longer-name-than-before");
	assert_int_equal(dir_size(t->fs, d), size);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* The first entry of a block becomes an inode-0 record, reused later. */
static void test_dir_remove_first_in_block(void **state)
{
	struct sfs_tfs *t = tfs_new(1024, 64 * MiB);
	struct sfs_inode *dp;
	struct sfs_buf *b;
	sfs_blk_t pblk;
	char name[32];
	struct sfs_ddirent *de;
	char first[256];
	uint64_t size;
	sfs_ino_t d;

	(void)state;
	d = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "d");
	for (unsigned i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "e%03u", i);
		sfs_test_mknod(t->fs, d, name);
	}
	size = dir_size(t->fs, d);
	assert_true(size >= 2048);
	/* name of the first entry of block 1 */
	sfs_lock(t->fs);
	assert_int_equal(sfs_iget(t->fs, d, &dp), 0);
	assert_int_equal(sfs_bmap(t->fs, dp, 1, false, &pblk), 0);
	assert_int_equal(sfs_cache_get(t->fs->cache, pblk, SFS_IO_DIR, &b), 0);
	de = (struct sfs_ddirent *)b->data;
	memcpy(first, de->name, de->name_len);
	first[de->name_len] = '\0';
	sfs_cache_put(t->fs->cache, b);
	sfs_iput(t->fs, dp);
	sfs_unlock(t->fs);

	assert_int_equal(sfs_unlink(t->fs, d, first), 0);
	sfs_lock(t->fs);
	assert_int_equal(sfs_cache_get(t->fs->cache, pblk, SFS_IO_DIR, &b), 0);
	de = (struct sfs_ddirent *)b->data;
	assert_int_equal(sfs_le32(de->inode), 0);
	assert_int_equal(de->name_len, 0);
	sfs_cache_put(t->fs->cache, b);
	sfs_unlock(t->fs);

	sfs_tfs_reopen(t);
	struct rd *r = rd_all(t->fs, d);
	assert_int_equal(g_hash_table_size(r->seen), 2 + 99);
	assert_int_equal(rd_count(r, first), 0);
	rd_free(r);
	sfs_tfs_assert_clean(t);
	t->fs = sfs_test_open(t->img, "");
	sfs_test_mknod(t->fs, d, "zz1"); /* fits the inode-0 record */
	assert_int_equal(dir_size(t->fs, d), size);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* Byte layout of block 0: ".", ".." rec_len 12 with NUL after the names;
 * ".." spans the block when the directory is empty. */
static void test_dir_dots_layout(void **state)
{
	struct sfs_tfs *t = tfs_new(2048, 32 * MiB);
	struct sfs_inode *dp;
	struct sfs_buf *b;
	sfs_blk_t pblk;
	uint8_t blk[2048];
	sfs_ino_t d;
	bool empty;

	(void)state;
	d = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "d");
	sfs_lock(t->fs);
	assert_int_equal(sfs_iget(t->fs, d, &dp), 0);
	assert_int_equal(sfs_bmap(t->fs, dp, 0, false, &pblk), 0);
	assert_int_equal(sfs_dir_is_empty(t->fs, dp, &empty), 0);
	assert_true(empty);
	assert_int_equal(sfs_cache_get(t->fs->cache, pblk, SFS_IO_DIR, &b), 0);
	memcpy(blk, b->data, sizeof(blk));
	sfs_cache_put(t->fs->cache, b);
	sfs_iput(t->fs, dp);
	sfs_unlock(t->fs);
	static const uint8_t dots[] = {
	    0, 0, 0, 0, 12, 0, 1, 2, '.', 0,   0, 0, /* inode patched */
	    0, 0, 0, 0, 0,  0, 2, 2, '.', '.', 0, 0,
	};
	uint8_t want[24];
	memcpy(want, dots, sizeof(want));
	memcpy(want, &(uint32_t){sfs_cpu_to_le32(d)}, 4);
	memcpy(want + 12, &(uint32_t){sfs_cpu_to_le32(SFS_ROOT_INO)}, 4);
	want[16] = (2048 - 12) & 0xff;
	want[17] = (2048 - 12) >> 8;
	assert_memory_equal(blk, want, sizeof(want));
	for (unsigned i = 24; i < sizeof(blk); i++)
		assert_int_equal(blk[i], 0);

	sfs_test_mknod(t->fs, d, "x");
	sfs_lock(t->fs);
	assert_int_equal(sfs_cache_get(t->fs->cache, pblk, SFS_IO_DIR, &b), 0);
	assert_int_equal(b->data[16] | b->data[17] << 8, 12);
	assert_int_equal(b->data[24 + 4] | b->data[24 + 5] << 8, 2048 - 24);
	assert_int_equal(b->data[24 + 6], 1);	       /* name_len */
	assert_int_equal(b->data[24 + 7], SFS_FT_REG); /* file_type */
	assert_int_equal(b->data[24 + 8], 'x');
	assert_int_equal(b->data[24 + 9], 0);
	sfs_cache_put(t->fs->cache, b);
	sfs_unlock(t->fs);

	assert_int_equal(sfs_unlink(t->fs, d, "x"), 0);
	sfs_lock(t->fs);
	assert_int_equal(sfs_cache_get(t->fs->cache, pblk, SFS_IO_DIR, &b), 0);
	assert_int_equal(b->data[16] | b->data[17] << 8, 2048 - 12);
	for (unsigned i = 24; i < 2048; i++)
		assert_int_equal(b->data[i], 0);
	sfs_cache_put(t->fs->cache, b);
	sfs_unlock(t->fs);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* Write `len` bytes at byte offset `off` of the image file. */
static void poke(const char *img, uint64_t off, const void *buf, size_t len)
{
	int fd = open(img, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static void test_dir_corrupt_rec_len_eio(void **state)
{
	struct sfs_tfs *t = tfs_new(1024, 32 * MiB);
	struct sfs_inode *dp;
	struct sfs_attr a;
	sfs_ino_t bad, good;
	sfs_blk_t pblk;
	uint16_t junk[] = {7, 0, 4000, 1022};
	int want;
	char *pristine = NULL;
	gsize plen = 0;
	struct rd *r;

	(void)state;
	bad = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "bad");
	good = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "good");
	sfs_test_mknod(t->fs, bad, "victim");
	sfs_test_mknod(t->fs, bad, "other");
	sfs_test_mknod(t->fs, good, "fine");
	sfs_lock(t->fs);
	assert_int_equal(sfs_iget(t->fs, bad, &dp), 0);
	assert_int_equal(sfs_bmap(t->fs, dp, 0, false, &pblk), 0);
	sfs_iput(t->fs, dp);
	sfs_unlock(t->fs);
	sfs_tfs_close(t);
	assert_true(g_file_get_contents(t->img, &pristine, &plen, NULL));

	for (unsigned k = 0; k < G_N_ELEMENTS(junk); k++) {
		uint16_t v = sfs_cpu_to_le16(junk[k]);

		assert_true(g_file_set_contents(t->img, pristine, plen, NULL));
		/* rec_len of the third entry ("victim" at offset 24) */
		poke(t->img, (uint64_t)pblk * 1024 + 24 + 4, &v, 2);
		t->fs = sfs_test_open(t->img, "");
		/* with metadata_csum the leaf's checksum catches it first:
		 * EFSBADCRC (EBADMSG), as ext4 answers */
		want = t->fs->csum ? -EBADMSG : -EIO;
		assert_int_equal(sfs_lookup(t->fs, bad, "victim", &a), want);
		r = rd_new();
		assert_int_equal(sfs_readdir(t->fs, bad, 0, rd_fill, r), want);
		rd_free(r);
		/* the rest keeps serving reads; writes stop (sticky error) */
		assert_int_equal(sfs_lookup(t->fs, good, "fine", &a), 0);
		r = rd_all(t->fs, good);
		assert_int_equal(rd_count(r, "fine"), 1);
		rd_free(r);
		assert_int_equal(sfs_getattr(t->fs, SFS_ROOT_INO, &a), 0);
		assert_int_equal(sfs_mknod(t->fs, good, "new",
					   SFS_S_IFREG | 0644, 0, 0, 0, &a),
				 -EROFS);
		sfs_fs_close(t->fs);
		t->fs = NULL;
	}
	g_free(pristine);
	sfs_tfs_free(t);
}

/* Block 0 of directory ino, got from the cache (lock held). */
static struct sfs_buf *dir_block0(struct sfs_fs *fs, sfs_ino_t ino)
{
	struct sfs_inode *dp;
	struct sfs_buf *b;
	sfs_blk_t pblk;

	assert_int_equal(sfs_iget(fs, ino, &dp), 0);
	assert_int_equal(sfs_bmap(fs, dp, 0, false, &pblk), 0);
	sfs_iput(fs, dp);
	assert_int_equal(sfs_cache_get(fs->cache, pblk, SFS_IO_DIR, &b), 0);
	return b;
}

/*
 * Invariant 7: a block that passed the check is not walked again while
 * unchanged (its note survives dir.c's own changes), yet the modelled CPU
 * is charged the same; a change from outside dir.c (through the cache:
 * the note is cleared) is checked again and caught.
 */
static void test_dir_checked_block_rechecked_after_change(void **state)
{
	struct sfs_tfs *t = tfs_new(1024, 32 * MiB);
	struct sfs_attr a;
	struct sfs_buf *b;
	uint64_t note, c0, c1, c2;
	sfs_ino_t d;
	int want;

	(void)state;
	d = mkdir_abc(t->fs);
	assert_int_equal(sfs_lookup(t->fs, d, "c", &a), 0);
	sfs_lock(t->fs);
	b = dir_block0(t->fs, d);
	note = b->checked;
	sfs_cache_put(t->fs->cache, b);
	sfs_unlock(t->fs);
	assert_true(note != 0);

	/* dir.c's own change keeps the note; the same charge either way */
	assert_int_equal(sfs_unlink(t->fs, d, "b"), 0);
	sfs_lock(t->fs);
	b = dir_block0(t->fs, d);
	assert_true(b->checked == note);
	sfs_cache_put(t->fs->cache, b);
	c0 = t->fs->cpu_ctr.csum_bytes;
	sfs_unlock(t->fs);
	assert_int_equal(sfs_lookup(t->fs, d, "c", &a), 0); /* not walked */
	sfs_lock(t->fs);
	c1 = t->fs->cpu_ctr.csum_bytes;
	b = dir_block0(t->fs, d);
	b->checked = 0; /* forget the check: walked again */
	sfs_cache_put(t->fs->cache, b);
	sfs_unlock(t->fs);
	assert_int_equal(sfs_lookup(t->fs, d, "c", &a), 0);
	c2 = t->fs->cpu_ctr.csum_bytes;
	assert_true(c1 - c0 == c2 - c1);
	assert_true((c1 - c0 > 0) == t->fs->csum);

	/* "a" (the third record) points past the last inode: a change
	 * that does not stop a lookup of "c" unless the block is checked */
	sfs_lock(t->fs);
	b = dir_block0(t->fs, d);
	memcpy(b->data + 24, &(uint32_t){sfs_cpu_to_le32(0xfffffff0u)}, 4);
	sfs_cache_dirty(t->fs->cache, b);
	assert_true(b->checked == 0);
	sfs_cache_put(t->fs->cache, b);
	sfs_unlock(t->fs);
	want = t->fs->csum ? -EBADMSG : -EIO;
	assert_int_equal(sfs_lookup(t->fs, d, "c", &a), want);
	sfs_fs_close(t->fs);
	t->fs = NULL;
	sfs_tfs_free(t);
}

/* mke2fs's lost+found: block 0 plus empty blocks (one inode-0 record of
 * rec_len bs each).  Entries fill them before the directory grows. */
static void test_dir_mke2fs_lost_found(void **state)
{
	struct sfs_tfs *t = sfs_tfs_alloc();
	gchar *argv[] = {
	    "mke2fs", "-F",   "-q",
	    "-t",     "ext2", "-b",
	    "1024",   "-O",   "none,sparse_super,filetype,large_file,ext_attr",
	    NULL,     "16M",  NULL};
	gint status = -1;
	struct sfs_attr a;
	char name[32];
	uint64_t size;
	sfs_ino_t lf;
	unsigned n;

	(void)state;
	argv[9] = t->img;
	if (!g_spawn_sync(NULL, argv, NULL,
			  G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL |
			      G_SPAWN_STDERR_TO_DEV_NULL,
			  NULL, NULL, NULL, NULL, &status, NULL) ||
	    !g_spawn_check_wait_status(status, NULL)) {
		sfs_tfs_free(t);
		skip();
	}
	t->fs = sfs_test_open(t->img, "");
	assert_int_equal(sfs_lookup(t->fs, SFS_ROOT_INO, "lost+found", &a), 0);
	lf = a.ino;
	size = a.size;
	assert_int_equal(size, 12 * 1024); /* ext-format 5.7 */
	/* 11 empty blocks of (1024 / 20) entries, plus block 0's room */
	n = 11 * (1024 / 20) + (1024 - 24) / 20;
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "o%011u", i); /* 20-byte record */
		assert_int_equal(sfs_mknod(t->fs, lf, name, SFS_S_IFIFO | 0600,
					   0, 0, 0, NULL),
				 0);
	}
	assert_int_equal(dir_size(t->fs, lf), size);
	sfs_test_mknod(t->fs, lf, "one-more");
	assert_int_equal(dir_size(t->fs, lf), size + 1024);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* Run argv (searched in PATH, output discarded); its exit status, or -1. */
static int run_quiet(gchar **argv)
{
	gint status = -1;

	if (!g_spawn_sync(NULL, argv, NULL,
			  G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL |
			      G_SPAWN_STDERR_TO_DEV_NULL,
			  NULL, NULL, NULL, NULL, &status, NULL) ||
	    !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static bool dir_indexed(struct sfs_fs *fs, sfs_ino_t ino)
{
	struct sfs_inode *dp;
	bool indexed;

	assert_int_equal(sfs_iget(fs, ino, &dp), 0);
	indexed = sfs_le32(dp->d.i_flags) & SFS_INDEX_FL;
	sfs_iput(fs, dp);
	return indexed;
}

/* Every name i in [0, n) with alive[i] is found by lookup and readdir, the
 * others by neither. */
static void htree_names_found(struct sfs_fs *fs, sfs_ino_t dir,
			      const bool *alive, unsigned n, const char *pfx)
{
	struct sfs_attr a;
	struct rd *r;
	char name[64];

	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%05u-a-longer-name", pfx, i);
		assert_int_equal(sfs_lookup(fs, dir, name, &a),
				 alive[i] ? 0 : -ENOENT);
	}
	r = rd_all(fs, dir);
	assert_false(r->dup);
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%05u-a-longer-name", pfx, i);
		assert_int_equal(rd_count(r, name), alive[i] ? 1 : 0);
	}
	assert_true(rd_count(r, ".") == 1 && rd_count(r, "..") == 1);
	rd_free(r);
}

/*
 * An htree directory as e2fsprogs writes it (mke2fs -d, then e2fsck -D
 * indexes it): every name is found through its index; removing names
 * and adding names keep the index (flag set, e2fsck clean), also across
 * remounts.
 */
static void test_dir_htree_read_remove_add(void **state)
{
	enum { N = 600 };
	struct sfs_tfs *t = sfs_tfs_alloc();
	char *src = g_build_filename(t->dir, "src", NULL);
	char *big = g_build_filename(src, "big", NULL);
	gchar *mkfs[] = {"mke2fs", "-F", "-q", "-t",   "ext2", "-b",
			 "1024",   "-d", src,  t->img, "16M",  NULL};
	gchar *fsck[] = {"e2fsck", "-fyD", t->img, NULL};
	bool alive[N], added[N];
	struct sfs_attr a;
	char name[64];
	sfs_ino_t d;

	(void)state;
	assert_int_equal(g_mkdir_with_parents(big, 0755), 0);
	for (unsigned i = 0; i < N; i++) {
		char *p;

		snprintf(name, sizeof(name), "h%05u-a-longer-name", i);
		p = g_build_filename(big, name, NULL);
		assert_true(g_file_set_contents(p, "", 0, NULL));
		g_free(p);
		alive[i] = true;
		added[i] = false;
	}
	if (run_quiet(mkfs) != 0 || run_quiet(fsck) < 0 ||
	    run_quiet(fsck) > 1) {
		g_free(big);
		g_free(src);
		sfs_tfs_free(t);
		skip();
	}
	assert_true(sfs_test_fsck_clean(t->img, NULL));
	t->fs = sfs_test_open(t->img, "");
	assert_int_equal(sfs_lookup(t->fs, SFS_ROOT_INO, "big", &a), 0);
	d = a.ino;
	assert_true(dir_indexed(t->fs, d));
	htree_names_found(t->fs, d, alive, N, "h");

	/* removing keeps the index valid: the flag stays */
	for (unsigned i = 0; i < N; i += 3) {
		snprintf(name, sizeof(name), "h%05u-a-longer-name", i);
		assert_int_equal(sfs_unlink(t->fs, d, name), 0);
		alive[i] = false;
	}
	sfs_tfs_cycle(t);
	assert_true(dir_indexed(t->fs, d));
	htree_names_found(t->fs, d, alive, N, "h");

	/* adding keeps the index: each name goes to its hash's leaf
	 * (test_htree.c covers splits and the nodir_index knob) */
	for (unsigned i = 0; i < N / 3; i++) {
		snprintf(name, sizeof(name), "g%05u-a-longer-name", i);
		sfs_test_mknod(t->fs, d, name);
		added[i] = true;
	}
	assert_true(dir_indexed(t->fs, d));
	snprintf(name, sizeof(name), "h%05u-a-longer-name", 1);
	assert_int_equal(
	    sfs_rename(t->fs, d, name, d, "g00000-a-longer-name", 0), 0);
	alive[1] = false;
	sfs_tfs_cycle(t);
	assert_true(dir_indexed(t->fs, d));
	htree_names_found(t->fs, d, alive, N, "h");
	htree_names_found(t->fs, d, added, N, "g");
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
	g_free(big);
	g_free(src);
}

int main(void)
{
	/* mke2fs sets dir_index and metadata_csum: a directory of more than
	 * one block is indexed, a leaf ends in a checksum tail */
	static const char *const only_simfs[] = {
	    "test_dir_twenty_thousand_entries",
	    "the cost of a linear directory",
	    "test_dir_enospc_on_grow",
	    "how a linear directory grows",
	    "test_dir_readdir_cookie_of_removed_entry",
	    "offsets as the cookies of a linear directory",
	    "test_dir_reuses_freed_space",
	    "how a linear directory grows",
	    "test_dir_dots_layout",
	    "the bytes of a leaf without a checksum tail",
	    NULL};
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dir_insert_lookup_remove_many_blocks),
	    cmocka_unit_test(test_dir_twenty_thousand_entries),
	    cmocka_unit_test(test_dir_random_ops_match_model),
	    cmocka_unit_test(test_dir_enospc_on_grow),
	    cmocka_unit_test(test_dir_readdir_stable_cookies),
	    cmocka_unit_test(test_dir_readdir_cookie_of_removed_entry),
	    cmocka_unit_test(test_dir_reuses_freed_space),
	    cmocka_unit_test(test_dir_remove_first_in_block),
	    cmocka_unit_test(test_dir_dots_layout),
	    cmocka_unit_test(test_dir_corrupt_rec_len_eio),
	    cmocka_unit_test(test_dir_checked_block_rechecked_after_change),
	    cmocka_unit_test(test_dir_mke2fs_lost_found),
	    cmocka_unit_test(test_dir_htree_read_remove_add),
	};
	size_t n = G_N_ELEMENTS(tests);
	struct CMUnitTest *run = sfs_test_select(tests, &n, only_simfs);

	return _cmocka_run_group_tests("dir", run, n, NULL, NULL);
}
