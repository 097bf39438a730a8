/*
 * test_htree.c - htree (dir_index) directories in simfs/dir.c: a
 * 20,000-name directory built through the index to two levels, every name
 * found reading only its path (counted), readdir complete and stable while
 * the directory grows, removes and renames, the conversion of a linear
 * directory that outgrows one block, a hash continued across two leaves
 * (a rewritten index, and real half_md4 collisions found by brute force),
 * the nodir_index knob, read faults during inserts, the dir_index I/O
 * category, and corrupt index blocks answered with -EIO.  Every sound
 * image is checked with e2fsck -fn (which validates the htree) and the
 * larger ones are parsed by debugfs htree_dump.  And 100,000 names in one
 * directory of a plain `mke2fs -t ext4` image (metadata_csum), read back
 * by the kernel's ext4 as root (loop mount), with a flipped bit in one of
 * its dx_nodes.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "dirhash.h"
#include "fs_priv.h"
#include "mkfs.h"
#include "testsupport.h"

#define MiB (1024 * 1024ull)

/* A fresh image with dir_index (simfs mkfs -O dir_index), opened. */
static struct sfs_tfs *tfs_dx(uint32_t bs, uint64_t size, uint32_t ratio,
			      const char *opts)
{
	struct sfs_tfs *t = sfs_tfs_alloc();
	struct sfs_mkfs_params p;
	struct sfs_bdev *bd;
	char *err = NULL;

	assert_int_equal(sfs_bdev_open_file(t->img,
					    SFS_BDEV_CREATE | SFS_BDEV_EXCL,
					    size, &bd),
			 0);
	sfs_mkfs_defaults(&p);
	p.block_size = bs;
	p.inode_ratio = ratio;
	p.seed = 7;
	assert_int_equal(sfs_mkfs_parse_features(&p, "dir_index", &err), 0);
	assert_int_equal(sfs_mkfs(bd, &p, &err), 0);
	sfs_bdev_close(bd);
	t->fs = sfs_test_open(t->img, opts);
	return t;
}

static void name_of(char *buf, size_t n, unsigned i)
{
	snprintf(buf, n, "f%06u-htree", i);
}

static bool dir_indexed(struct sfs_fs *fs, sfs_ino_t ino, unsigned *levels)
{
	struct sfs_inode *dp;
	struct sfs_buf *b;
	sfs_blk_t pblk;
	bool indexed;

	sfs_lock(fs);
	assert_int_equal(sfs_iget(fs, ino, &dp), 0);
	indexed = sfs_le32(dp->d.i_flags) & SFS_INDEX_FL;
	if (indexed && levels) {
		assert_int_equal(sfs_bmap(fs, dp, 0, false, &pblk), 0);
		assert_int_equal(sfs_cache_get(fs->cache, pblk, SFS_IO_DIR, &b),
				 0);
		*levels = b->data[30] + 1u;
		sfs_cache_put(fs->cache, b);
	}
	sfs_iput(fs, dp);
	sfs_unlock(fs);
	return indexed;
}

/* Physical block of logical block lblk of directory ino. */
static sfs_blk_t dir_pblk(struct sfs_fs *fs, sfs_ino_t ino, uint32_t lblk)
{
	struct sfs_inode *dp;
	sfs_blk_t pblk;

	sfs_lock(fs);
	assert_int_equal(sfs_iget(fs, ino, &dp), 0);
	assert_int_equal(sfs_bmap(fs, dp, lblk, false, &pblk), 0);
	sfs_iput(fs, dp);
	sfs_unlock(fs);
	return pblk;
}

/* ---- readdir collection ---- */

struct rd {
	GHashTable *seen; /* name -> times reported */
	unsigned reported, limit;
	uint64_t next;
	bool dup;
};

static int rd_fill(void *ctx, const char *name, size_t len, sfs_ino_t ino,
		   uint8_t ftype, uint64_t next_off)
{
	struct rd *r = ctx;
	char *key;
	unsigned n;

	(void)ino;
	(void)ftype;
	if (r->limit && r->reported == r->limit)
		return 1;
	key = g_strndup(name, len);
	n = GPOINTER_TO_UINT(g_hash_table_lookup(r->seen, key));
	if (n)
		r->dup = true;
	g_hash_table_insert(r->seen, key, GUINT_TO_POINTER(n + 1));
	r->reported++;
	r->next = next_off;
	return 0;
}

static struct rd *rd_new(unsigned limit)
{
	struct rd *r = g_new0(struct rd, 1);

	r->seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	r->limit = limit;
	return r;
}

static void rd_free(struct rd *r)
{
	g_hash_table_destroy(r->seen);
	g_free(r);
}

/* Lookup and one readdir agree with alive[0..n). */
static void names_match(struct sfs_fs *fs, sfs_ino_t d, const bool *alive,
			unsigned n)
{
	struct rd *r = rd_new(0);
	unsigned live = 0;
	struct sfs_attr a;
	char name[64];

	for (unsigned i = 0; i < n; i++) {
		name_of(name, sizeof(name), i);
		assert_int_equal(sfs_lookup(fs, d, name, &a),
				 alive[i] ? 0 : -ENOENT);
		live += alive[i];
	}
	assert_int_equal(sfs_readdir(fs, d, 0, rd_fill, r), 0);
	assert_false(r->dup);
	assert_int_equal(g_hash_table_size(r->seen), live + 2);
	assert_true(g_hash_table_contains(r->seen, "."));
	assert_true(g_hash_table_contains(r->seen, ".."));
	for (unsigned i = 0; i < n; i++) {
		name_of(name, sizeof(name), i);
		assert_int_equal(g_hash_table_contains(r->seen, name),
				 alive[i]);
	}
	rd_free(r);
}

static int run_capture(gchar **argv, gchar **out)
{
	gint status = -1;

	if (!g_spawn_sync(NULL, argv, NULL,
			  G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL,
			  NULL, NULL, out, NULL, &status, NULL) ||
	    !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* debugfs htree_dump parses the directory: it dumps the root and reports
 * no problem; returns the number of our names it lists in the leaves it
 * reaches through the index. */
static unsigned htree_dump_ok(const char *img, const char *path)
{
	gchar *req = g_strdup_printf("htree_dump %s", path);
	gchar *argv[] = {"debugfs", "-R", req, (gchar *)img, NULL};
	gchar *out = NULL;
	unsigned entries = 0;

	assert_int_equal(run_capture(argv, &out), 0);
	assert_non_null(strstr(out, "Root node dump:"));
	assert_null(strstr(out, "Corrupted"));
	assert_null(strstr(out, "Invalid"));
	assert_null(strstr(out, "error"));
	for (const char *p = out; (p = strstr(p, "-htree")); p++)
		entries++;
	g_free(out);
	g_free(req);
	return entries;
}

/* ---- cases ---- */

/* Names 0..n-1 created in d (alive[] set), which must end with an index of
 * two levels; then each looked up: the most directory blocks one lookup
 * fetched (dir.c's count, cpu_ctr.dir_blocks). */
static uint64_t fill_two_levels(struct sfs_fs *fs, sfs_ino_t d, unsigned n,
				bool *alive)
{
	uint64_t max_blocks = 0;
	unsigned levels = 0;
	struct sfs_attr a;
	char name[64];

	for (unsigned i = 0; i < n; i++) {
		name_of(name, sizeof(name), i);
		sfs_test_mknod(fs, d, name);
		alive[i] = true;
	}
	assert_true(dir_indexed(fs, d, &levels));
	assert_int_equal(levels, 2);
	for (unsigned i = 0; i < n; i++) {
		uint64_t before = fs->cpu_ctr.dir_blocks;

		name_of(name, sizeof(name), i);
		assert_int_equal(sfs_lookup(fs, d, name, &a), 0);
		max_blocks = MAX(max_blocks, fs->cpu_ctr.dir_blocks - before);
	}
	return max_blocks;
}

static void test_htree_twenty_thousand(void **state)
{
	enum { N = 20000 };
	struct sfs_tfs *t = tfs_dx(1024, 96 * MiB, 2048, "");
	bool *alive = g_new0(bool, N);
	uint64_t max_blocks;
	unsigned levels = 2;
	struct sfs_attr a;
	char name[64], nn[64];
	sfs_ino_t d;

	(void)state;
	d = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "big");
	/* every name found, each lookup reading only its path */
	max_blocks = fill_two_levels(t->fs, d, N, alive);
	print_message(
	    "# 20000 names, 1 KiB blocks, %u levels: at most %llu "
	    "directory blocks per lookup, directory %llu blocks\n",
	    levels, (unsigned long long)max_blocks,
	    (unsigned long long)(sfs_getattr(t->fs, d, &a), a.size / 1024));
	assert_true(max_blocks >= 3 && max_blocks <= 4);
	names_match(t->fs, d, alive, N);
	sfs_tfs_assert_clean(t);
	assert_int_equal(htree_dump_ok(t->img, "/big"), N);

	/* removes and renames keep the index valid */
	t->fs = sfs_test_open(t->img, "");
	{
		/* a cold lookup reads the index blocks as dir_index, the
		 * leaf as dir */
		struct sfs_bdev_counters c0, c1;
		struct sfs_attr a2;

		sfs_bdev_counters(t->fs->bd, &c0);
		name_of(name, sizeof(name), N / 2);
		assert_int_equal(sfs_lookup(t->fs, d, name, &a2), 0);
		sfs_bdev_counters(t->fs->bd, &c1);
		assert_true(c1.cat_reqs[SFS_IO_READ][SFS_IO_DIRIDX] >
			    c0.cat_reqs[SFS_IO_READ][SFS_IO_DIRIDX]);
		assert_true(c1.cat_reqs[SFS_IO_READ][SFS_IO_DIR] >
			    c0.cat_reqs[SFS_IO_READ][SFS_IO_DIR]);
	}
	for (unsigned i = 0; i < N; i += 3) {
		name_of(name, sizeof(name), i);
		assert_int_equal(sfs_unlink(t->fs, d, name), 0);
		alive[i] = false;
	}
	for (unsigned i = 1; i < N; i += 30) {
		/* rename within, onto a removed name and onto a live one */
		name_of(name, sizeof(name), i);
		name_of(nn, sizeof(nn), i - 1);
		assert_int_equal(sfs_rename(t->fs, d, name, d, nn, 0), 0);
		alive[i] = false;
		alive[i - 1] = true;
		name_of(name, sizeof(name), i + 1);
		name_of(nn, sizeof(nn), i + 3);
		if (i + 3 < N) {
			assert_int_equal(sfs_rename(t->fs, d, name, d, nn, 0),
					 0);
			alive[i + 1] = false;
			alive[i + 3] = true;
		}
	}
	names_match(t->fs, d, alive, N);
	sfs_tfs_cycle(t);
	assert_true(dir_indexed(t->fs, d, NULL));
	names_match(t->fs, d, alive, N);
	/* emptied, it can be removed */
	for (unsigned i = 0; i < N; i++) {
		if (!alive[i])
			continue;
		name_of(name, sizeof(name), i);
		assert_int_equal(sfs_unlink(t->fs, d, name), 0);
	}
	assert_int_equal(sfs_rmdir(t->fs, SFS_ROOT_INO, "big"), 0);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
	g_free(alive);
}

/* ---- 100,000 names on mke2fs's ext4, and the kernel ---- */

static char *kmnt_active; /* a kernel mount to undo, also after a failure */

/* `mount -o opts -t ext4 img mnt`: 0, or the mount's exit status. */
static int kmount(const char *img, const char *mnt, const char *opts)
{
	gchar *argv[] = {"mount", "-o",		(gchar *)opts, "-t",
			 "ext4",  (gchar *)img, (gchar *)mnt,  NULL};
	int rc = run_capture(argv, NULL);

	if (rc == 0)
		kmnt_active = g_strdup(mnt);
	return rc;
}

static void kumount(void)
{
	gchar *argv[] = {"umount", kmnt_active, NULL};

	if (!kmnt_active)
		return;
	assert_int_equal(run_capture(argv, NULL), 0);
	g_clear_pointer(&kmnt_active, g_free);
}

static int kumount_teardown(void **state)
{
	(void)state;
	if (kmnt_active) {
		gchar *argv[] = {"umount", kmnt_active, NULL};

		run_capture(argv, NULL);
		g_clear_pointer(&kmnt_active, g_free);
	}
	return 0;
}

/* Through the kernel: readdir of dir lists exactly names 0..n-1 (and the
 * dots), and stat finds each. */
static void kernel_finds_all(const char *dir, unsigned n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	bool *seen = g_new0(bool, n);
	unsigned found = 0, other = 0;
	char path[512], name[64];
	struct stat st;

	assert_non_null(d);
	while ((de = readdir(d))) {
		unsigned i;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (sscanf(de->d_name, "f%6u-htree", &i) == 1 && i < n &&
		    !seen[i]) {
			name_of(name, sizeof(name), i);
			if (!strcmp(name, de->d_name)) {
				seen[i] = true;
				found++;
				continue;
			}
		}
		other++;
	}
	closedir(d);
	assert_int_equal(other, 0);
	assert_int_equal(found, n);
	for (unsigned i = 0; i < n; i++) {
		name_of(name, sizeof(name), i);
		g_snprintf(path, sizeof(path), "%s/%s", dir, name);
		assert_int_equal(stat(path, &st), 0);
	}
	g_free(seen);
}

/*
 * 100,000 names in one directory of the image plain `mke2fs -t ext4`
 * makes (4 KiB blocks, metadata_csum; 2 GiB, sparse, for the inodes):
 * two index levels; every lookup reads the root, one dx_node and one
 * leaf (counted, of some 700 blocks); a cold lookup reads two index
 * blocks and one leaf from the device; readdir lists every name; e2fsck
 * -fn clean and debugfs htree_dump reaches every name; the kernel's ext4
 * lists and finds every name.  Then one bit of a dx_node flipped: the
 * lookups under it are -EIO with the error state, again on retry (the
 * block is never trusted), the names under other nodes are still found,
 * and the kernel refuses the same names.
 */
static void test_htree_hundred_thousand_mke2fs(void **state)
{
	enum { N = 100000 };
	struct sfs_tfs *t = sfs_tfs_alloc();
	struct sfs_bdev_counters c0, c1;
	uint64_t max_blocks, dir_size;
	unsigned levels = 2, bad = 0, good = 0, first_bad = N;
	char name[64], *kmnt = g_build_filename(t->dir, "kmnt", NULL);
	bool *alive = g_new0(bool, N);
	struct sfs_attr a;
	sfs_blk_t root, node;
	uint8_t blk[4096];
	sfs_ino_t d;
	int fd;

	(void)state;
	assert_int_equal(
	    sfs_test_mke2fs(t->img, 2048 * MiB, 4096, "ext4", NULL), 0);
	t->fs = sfs_test_open(t->img, "");
	assert_true(t->fs->csum);
	d = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "big");
	max_blocks = fill_two_levels(t->fs, d, N, alive);
	assert_int_equal(sfs_getattr(t->fs, d, &a), 0);
	dir_size = a.size / 4096;
	print_message("# %u names on mke2fs -t ext4, 4 KiB blocks: %u levels, "
		      "at most %llu directory blocks per lookup, directory "
		      "%llu blocks\n",
		      N, levels, (unsigned long long)max_blocks,
		      (unsigned long long)dir_size);
	assert_true(max_blocks >= 3 && max_blocks <= 4);
	assert_true(dir_size > 500);
	names_match(t->fs, d, alive, N);
	sfs_tfs_assert_clean(t);
	assert_int_equal(htree_dump_ok(t->img, "/big"), N);

	/* cold: the root and one dx_node as dir_index, one leaf as dir */
	t->fs = sfs_test_open(t->img, "");
	sfs_bdev_counters(t->fs->bd, &c0);
	name_of(name, sizeof(name), N / 2);
	assert_int_equal(sfs_lookup(t->fs, d, name, &a), 0);
	sfs_bdev_counters(t->fs->bd, &c1);
	print_message(
	    "# cold lookup: %llu index and %llu leaf reads\n",
	    (unsigned long long)(c1.cat_reqs[SFS_IO_READ][SFS_IO_DIRIDX] -
				 c0.cat_reqs[SFS_IO_READ][SFS_IO_DIRIDX]),
	    (unsigned long long)(c1.cat_reqs[SFS_IO_READ][SFS_IO_DIR] -
				 c0.cat_reqs[SFS_IO_READ][SFS_IO_DIR]));
	assert_int_equal(c1.cat_reqs[SFS_IO_READ][SFS_IO_DIRIDX] -
			     c0.cat_reqs[SFS_IO_READ][SFS_IO_DIRIDX],
			 2);
	assert_int_equal(c1.cat_reqs[SFS_IO_READ][SFS_IO_DIR] -
			     c0.cat_reqs[SFS_IO_READ][SFS_IO_DIR],
			 1);
	root = dir_pblk(t->fs, d, 0);
	{
		struct sfs_buf *b;

		assert_int_equal(
		    sfs_cache_get(t->fs->cache, root, SFS_IO_DIRIDX, &b), 0);
		node = dir_pblk(t->fs, d,
				sfs_get_le32(b->data + 0x24) & 0x0FFFFFFFu);
		sfs_cache_put(t->fs->cache, b);
	}
	sfs_tfs_close(t);

	/* the kernel's ext4 */
	if (geteuid() != 0) {
		print_message("# kernel part not run: needs root for a loop "
			      "mount\n");
	} else {
		char *kbig = g_build_filename(kmnt, "big", NULL);

		assert_int_equal(mkdir(kmnt, 0755), 0);
		assert_int_equal(kmount(t->img, kmnt, "loop,ro"), 0);
		kernel_finds_all(kbig, N);
		kumount();
		g_free(kbig);
		assert_true(sfs_test_fsck_clean(t->img, NULL));
	}

	/* one bit of the first dx_node's entries: its sum no longer holds */
	fd = open(t->img, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, blk, 4096, (off_t)node * 4096), 4096);
	blk[16 + 8 * 5 + 3] ^= 0x10; /* entry 5's hash, top byte */
	assert_int_equal(pwrite(fd, blk, 4096, (off_t)node * 4096), 4096);
	close(fd);
	t->fs = sfs_test_open(t->img, "");
	for (unsigned i = 0; i < N; i++) {
		int rc;

		name_of(name, sizeof(name), i);
		rc = sfs_lookup(t->fs, d, name, &a);
		if (rc == 0) {
			good++;
			continue;
		}
		/* EFSBADCRC, as ext4's dx_probe answers */
		assert_int_equal(rc, -EBADMSG);
		if (!bad++)
			first_bad = i;
	}
	print_message("# a flipped bit in dx_node block %llu: %u lookups "
		      "-EBADMSG, "
		      "%u found\n",
		      (unsigned long long)node, bad, good);
	assert_true(bad > 0 && good > 0);
	assert_true(t->fs->error);
	name_of(name, sizeof(name), first_bad);
	assert_int_equal(sfs_lookup(t->fs, d, name, &a), -EBADMSG); /* again */
	sfs_fs_abort(t->fs);
	t->fs = NULL;
	if (geteuid() == 0) {
		char *path = g_build_filename(kmnt, "big", name, NULL);
		struct stat st;
		int err;

		/* read-only, past the log simfs's mount left */
		assert_int_equal(kmount(t->img, kmnt, "loop,ro,noload"), 0);
		err = stat(path, &st) == 0 ? 0 : errno;
		kumount();
		print_message("# the kernel's stat of %s: %s\n", name,
			      err ? g_strerror(err) : "found");
		/* ext4 answers EFSBADCRC (EBADMSG) from dx_probe, as simfs */
		assert_int_equal(err, EBADMSG);
		g_free(path);
	}
	sfs_tfs_free(t);
	g_free(kmnt);
	g_free(alive);
}

/* A linear directory becomes indexed when it outgrows its block, at every
 * block size; readdir across the conversion misses and repeats nothing. */
static void test_htree_convert_from_linear(void **state)
{
	static const uint32_t sizes[] = {1024, 2048, 4096};

	(void)state;
	for (unsigned s = 0; s < G_N_ELEMENTS(sizes); s++) {
		enum { N = 3000 };
		struct sfs_tfs *t = tfs_dx(sizes[s], 64 * MiB, 8192, "");
		bool alive[N] = {false};
		struct rd *r = rd_new(7);
		char name[64];
		unsigned first = 0;
		sfs_ino_t d = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "d");

		for (unsigned i = 0; i < N; i++) {
			name_of(name, sizeof(name), i);
			sfs_test_mknod(t->fs, d, name);
			alive[i] = true;
			if (!first && dir_indexed(t->fs, d, NULL))
				first = i + 1;
			if (i == 10) {
				/* a listing started while linear */
				assert_int_equal(
				    sfs_readdir(t->fs, d, 0, rd_fill, r), 0);
			}
			if (i > 10 && i % 97 == 0) {
				r->reported = 0;
				assert_int_equal(
				    sfs_readdir(t->fs, d, r->next, rd_fill, r),
				    0);
			}
		}
		/* the names present when the listing began came once each */
		assert_false(r->dup);
		for (unsigned i = 0; i <= 10; i++) {
			name_of(name, sizeof(name), i);
			r->limit = 0;
			assert_int_equal(
			    sfs_readdir(t->fs, d, r->next, rd_fill, r), 0);
			assert_false(r->dup);
			assert_true(g_hash_table_contains(r->seen, name));
		}
		rd_free(r);
		assert_true(first > 1);
		assert_true(first * 20 <
			    sizes[s]); /* about one block's worth */
		names_match(t->fs, d, alive, N);
		sfs_tfs_assert_clean(t);
		assert_int_equal(htree_dump_ok(t->img, "/d"), N);
		sfs_tfs_free(t);
	}
}

/* A listing in small steps while names are added and removed reports
 * every name present throughout exactly once. */
static void test_htree_readdir_stable_while_growing(void **state)
{
	enum { N = 4000, M = 6000 };
	struct sfs_tfs *t = tfs_dx(1024, 64 * MiB, 4096, "");
	struct rd *r = rd_new(13);
	char name[64];
	uint64_t cookie = 0;
	unsigned added = N;
	sfs_ino_t d = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "g");

	(void)state;
	for (unsigned i = 0; i < N; i++) {
		name_of(name, sizeof(name), i);
		sfs_test_mknod(t->fs, d, name);
	}
	for (;;) {
		r->reported = 0;
		assert_int_equal(sfs_readdir(t->fs, d, cookie, rd_fill, r), 0);
		if (r->reported == 0)
			break;
		cookie = r->next;
		/* grow (splits move names between leaves) and shrink */
		for (unsigned k = 0; k < 5 && added < N + M; k++, added++) {
			name_of(name, sizeof(name), added);
			sfs_test_mknod(t->fs, d, name);
		}
		name_of(name, sizeof(name), N + M + added);
		sfs_test_mknod(t->fs, d, name);
		assert_int_equal(sfs_unlink(t->fs, d, name), 0);
	}
	assert_false(r->dup);
	for (unsigned i = 0; i < N; i++) {
		name_of(name, sizeof(name), i);
		assert_true(g_hash_table_contains(r->seen, name));
	}
	/* a cookie kept aside resumes the same way twice */
	{
		struct rd *a = rd_new(50), *b = rd_new(50);

		assert_int_equal(sfs_readdir(t->fs, d, 0, rd_fill, a), 0);
		a->reported = 0;
		b->next = a->next;
		assert_int_equal(sfs_readdir(t->fs, d, a->next, rd_fill, a), 0);
		assert_int_equal(sfs_readdir(t->fs, d, b->next, rd_fill, b), 0);
		assert_int_equal(a->next, b->next);
		rd_free(a);
		rd_free(b);
	}
	rd_free(r);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* nodir_index: an indexed directory is read linearly; adding a name
 * clears its index flag; e2fsck accepts it; dir_index on again indexes
 * nothing new (the directory stays linear, as in the kernel). */
static void test_htree_knob_off(void **state)
{
	enum { N = 800 };
	struct sfs_tfs *t = tfs_dx(1024, 32 * MiB, 4096, "");
	bool alive[N + 10] = {false};
	char name[64];
	sfs_ino_t d = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "k");

	(void)state;
	for (unsigned i = 0; i < N; i++) {
		name_of(name, sizeof(name), i);
		sfs_test_mknod(t->fs, d, name);
		alive[i] = true;
	}
	assert_true(dir_indexed(t->fs, d, NULL));
	sfs_tfs_close(t);
	t->fs = sfs_test_open(t->img, "nodir_index");
	names_match(t->fs, d, alive, N + 10);
	assert_int_equal(sfs_unlink(t->fs, d, "f000003-htree"), 0);
	alive[3] = false;
	assert_true(dir_indexed(t->fs, d, NULL)); /* a remove keeps it */
	for (unsigned i = N; i < N + 10; i++) {
		name_of(name, sizeof(name), i);
		sfs_test_mknod(t->fs, d, name);
		alive[i] = true;
	}
	assert_false(dir_indexed(t->fs, d, NULL));
	names_match(t->fs, d, alive, N + 10);
	sfs_tfs_assert_clean(t);
	t->fs = sfs_test_open(t->img, "dir_index=1");
	names_match(t->fs, d, alive, N + 10);
	sfs_test_mknod(t->fs, d, "after");
	assert_false(dir_indexed(t->fs, d, NULL));
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* One corruption of an index block: where, what to write. */
struct dx_corrupt {
	const char *what;
	bool node;	/* in the first dx_node (else the root) */
	uint32_t off;	/* byte offset in the block */
	uint32_t len;	/* 1, 2 or 4 */
	uint32_t value; /* written little-endian */
	bool swap_hash; /* instead: swap the hashes of entries 1 and 2 */
};

static const struct dx_corrupt corruptions[] = {
    {"reserved word", false, 24, 4, 0x12345678, false},
    {"hash version", false, 28, 1, 9, false},
    {"info length", false, 29, 1, 16, false},
    {"levels", false, 30, 1, 2, false},
    {"levels 7", false, 30, 1, 7, false},
    {"root limit", false, 32, 2, 500, false},
    {"root count 0", false, 34, 2, 0, false},
    {"root count > limit", false, 34, 2, 200, false},
    {"root entry block", false, 36, 4, 0xFFFFFF, false},
    {"root hash order", false, 0, 0, 0, true},
    {"node magic record", true, 4, 2, 12, false},
    {"node limit", true, 8, 2, 5, false},
    {"node count", true, 10, 2, 0, false},
    {"node count > limit", true, 10, 2, 1000, false},
    {"node entry block", true, 12, 4, 0, false},
    {"node hash order", true, 0, 0, 0, true},
};

static void test_htree_corrupt_index_eio(void **state)
{
	enum { N = 12000 };
	struct sfs_tfs *t = tfs_dx(1024, 64 * MiB, 4096, "");
	char name[64], *pristine;
	sfs_blk_t root, node;
	unsigned levels = 0;
	sfs_ino_t d = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "c"), other;
	uint8_t blk[1024];
	gsize len;
	int fd;

	(void)state;
	for (unsigned i = 0; i < N; i++) {
		name_of(name, sizeof(name), i);
		sfs_test_mknod(t->fs, d, name);
	}
	other = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "other");
	sfs_test_mknod(t->fs, other, "x");
	assert_true(dir_indexed(t->fs, d, &levels));
	assert_int_equal(levels, 2);
	root = dir_pblk(t->fs, d, 0);
	{
		struct sfs_buf *b;

		assert_int_equal(
		    sfs_cache_get(t->fs->cache, root, SFS_IO_DIR, &b), 0);
		node = dir_pblk(t->fs, d,
				b->data[36] | b->data[37] << 8 |
				    (uint32_t)b->data[38] << 16);
		sfs_cache_put(t->fs->cache, b);
	}
	sfs_tfs_assert_clean(t);
	assert_true(g_file_get_contents(t->img, &pristine, &len, NULL));

	for (unsigned c = 0; c < G_N_ELEMENTS(corruptions); c++) {
		const struct dx_corrupt *k = &corruptions[c];
		off_t at = (off_t)(k->node ? node : root) * 1024;
		uint32_t eoff = k->node ? 8 : 32;
		struct sfs_attr a;
		struct rd *r = rd_new(0);
		int rc;

		print_message("# corrupt %s\n", k->what);
		assert_true(
		    g_file_set_contents(t->img, pristine, (gssize)len, NULL));
		fd = open(t->img, O_RDWR);
		assert_true(fd >= 0);
		assert_int_equal(pread(fd, blk, sizeof(blk), at), 1024);
		if (k->swap_hash) {
			uint8_t h[4];

			memcpy(h, blk + eoff + 8, 4);
			memcpy(blk + eoff + 8, blk + eoff + 16, 4);
			memcpy(blk + eoff + 16, h, 4);
		} else {
			for (uint32_t i = 0; i < k->len; i++)
				blk[k->off + i] =
				    (uint8_t)(k->value >> (8 * i));
		}
		assert_int_equal(pwrite(fd, blk, sizeof(blk), at), 1024);
		close(fd);
		t->fs = sfs_test_open(t->img, "");
		/* the names whose path crosses the bad block fail cleanly;
		 * for the root that is the first one */
		rc = 0;
		for (unsigned i = 0; i < N && rc == 0; i++) {
			name_of(name, sizeof(name), i);
			rc = sfs_lookup(t->fs, d, name, &a);
		}
		assert_int_equal(rc, -EIO);
		assert_int_equal(sfs_readdir(t->fs, d, 0, rd_fill, r), -EIO);
		rc = sfs_mknod(t->fs, d, "new-name", SFS_S_IFREG | 0644, 0, 0,
			       0, &a);
		assert_true(rc == -EIO || rc == -EROFS);
		/* the rest of the filesystem still answers */
		assert_int_equal(sfs_lookup(t->fs, other, "x", &a), 0);
		rd_free(r);
		sfs_fs_close(t->fs);
		t->fs = NULL;
	}
	g_free(pristine);
	sfs_tfs_free(t);
}

/*
 * A continued hash: the index entry of leaf 5 is rewritten to start at
 * the smallest hash in that leaf with the continuation bit set, so a
 * lookup of that name probes leaf 4 first and must follow the bit into
 * leaf 5 (ext4_htree_next_block).  e2fsck accepts the index; lookups,
 * readdir and further inserts all work.
 */
static void test_htree_continued_hash(void **state)
{
	enum { N = 3000 };
	struct sfs_tfs *t = tfs_dx(1024, 32 * MiB, 4096, "");
	bool alive[N + 500];
	uint8_t root[1024], leaf[1024];
	uint32_t seed[4], min_hash = UINT32_MAX, e5, e4, e6;
	char name[64], xname[256] = "";
	sfs_blk_t proot, pleaf;
	unsigned hver, levels = 0;
	struct sfs_attr a;
	int fd;
	sfs_ino_t d = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "c");

	(void)state;
	for (unsigned i = 0; i < N + 500; i++) {
		alive[i] = i < N;
		if (i < N) {
			name_of(name, sizeof(name), i);
			sfs_test_mknod(t->fs, d, name);
		}
	}
	assert_true(dir_indexed(t->fs, d, &levels));
	assert_int_equal(levels, 1);
	for (int i = 0; i < 4; i++)
		seed[i] = sfs_le32(t->fs->sb.s_hash_seed[i]);
	hver = t->fs->sb.s_def_hash_version;
	if (sfs_le32(t->fs->sb.s_flags) & SFS_FLAGS_UNSIGNED_HASH)
		hver += SFS_DX_HASH_UNSIGNED_DELTA;
	proot = dir_pblk(t->fs, d, 0);
	sfs_tfs_close(t);
	fd = open(t->img, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, root, 1024, (off_t)proot * 1024), 1024);
	close(fd);
	assert_true((root[34] | root[35] << 8) > 7);
	e4 = root[32 + 8 * 4] | root[33 + 8 * 4] << 8 |
	     (uint32_t)root[34 + 8 * 4] << 16 |
	     (uint32_t)root[35 + 8 * 4] << 24;
	e5 = root[32 + 8 * 5] | root[33 + 8 * 5] << 8 |
	     (uint32_t)root[34 + 8 * 5] << 16 |
	     (uint32_t)root[35 + 8 * 5] << 24;
	e6 = root[32 + 8 * 6] | root[33 + 8 * 6] << 8 |
	     (uint32_t)root[34 + 8 * 6] << 16 |
	     (uint32_t)root[35 + 8 * 6] << 24;
	t->fs = sfs_test_open(t->img, "");
	pleaf = dir_pblk(t->fs, d,
			 root[36 + 8 * 5] | root[37 + 8 * 5] << 8 |
			     (uint32_t)root[38 + 8 * 5] << 16);
	sfs_tfs_close(t);

	fd = open(t->img, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, leaf, 1024, (off_t)pleaf * 1024), 1024);
	for (uint32_t off = 0; off < 1024;) {
		struct sfs_ddirent *de = (struct sfs_ddirent *)(leaf + off);
		uint32_t h;

		if (de->inode) {
			assert_int_equal(sfs_dirhash(hver, seed, de->name,
						     de->name_len, &h, NULL),
					 0);
			if (h < min_hash) {
				min_hash = h;
				memcpy(xname, de->name, de->name_len);
				xname[de->name_len] = '\0';
			}
		}
		off += sfs_le16(de->rec_len);
	}
	assert_true(min_hash >= e5 && min_hash < e6 && min_hash > e4);
	min_hash |= 1;
	for (int i = 0; i < 4; i++)
		root[32 + 8 * 5 + i] = (uint8_t)(min_hash >> (8 * i));
	assert_int_equal(pwrite(fd, root, 1024, (off_t)proot * 1024), 1024);
	close(fd);
	assert_true(sfs_test_fsck_clean(t->img, NULL));

	t->fs = sfs_test_open(t->img, "");
	{
		uint64_t before = t->fs->cpu_ctr.dir_blocks;

		assert_int_equal(sfs_lookup(t->fs, d, xname, &a), 0);
		/* root, leaf 4 (miss), leaf 5 */
		assert_int_equal(t->fs->cpu_ctr.dir_blocks - before, 3);
	}
	names_match(t->fs, d, alive, N + 500);
	for (unsigned i = N; i < N + 500; i++) {
		name_of(name, sizeof(name), i);
		sfs_test_mknod(t->fs, d, name);
		alive[i] = true;
	}
	assert_int_equal(sfs_unlink(t->fs, d, xname), 0);
	assert_int_equal(sfs_lookup(t->fs, d, xname, &a), -ENOENT);
	for (unsigned i = 0; i < N; i++) {
		name_of(name, sizeof(name), i);
		if (strcmp(name, xname) == 0)
			alive[i] = false;
	}
	names_match(t->fs, d, alive, N + 500);
	sfs_tfs_assert_clean(t);
	sfs_tfs_free(t);
}

/* ---- real hash collisions ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void coll_name(char *buf, size_t n, uint32_t i)
{
	snprintf(buf, n, "k%07x", i);
}

/*
 * Pairs of names with the same major hash under (version, seed), by brute
 * force: hash "k0000000".. "k%07x" (n of them), sort (hash, index), keep
 * hashes met exactly twice.  With a 31-bit hash about n^2 / 2^32 pairs
 * exist; the same seed always gives the same pairs.  Returns the pairs as
 * name indexes, two by two, up to want pairs.
 */
static GArray *collision_pairs(unsigned version, const uint32_t *seed,
			       uint32_t n, unsigned want)
{
	uint64_t *v = g_new(uint64_t, n);
	GArray *pairs = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	char name[16];

	for (uint32_t i = 0; i < n; i++) {
		uint32_t h;
		coll_name(name, sizeof(name), i);
		assert_int_equal(
		    sfs_dirhash(version, seed, name, strlen(name), &h, NULL),
		    0);
		v[i] = (uint64_t)h << 32 | i;
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	for (uint32_t i = 0; i + 1 < n && pairs->len < 2 * want;) {
		uint32_t j = i + 1;
		while (j < n && v[j] >> 32 == v[i] >> 32)
			j++;
		if (j - i == 2) {
			uint32_t a = (uint32_t)v[i], b = (uint32_t)v[i + 1];
			g_array_append_val(pairs, a);
			g_array_append_val(pairs, b);
		}
		i = j;
	}
	g_free(v);
	return pairs;
}

/* Index entries of the (one-level) root at proot whose hash has the
 * continuation bit. */
static unsigned continued_entries(const char *img, sfs_blk_t proot,
				  unsigned *count)
{
	uint8_t root[1024];
	unsigned n = 0;
	int fd = open(img, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, root, 1024, (off_t)proot * 1024), 1024);
	close(fd);
	assert_int_equal(root[30], 0); /* indirect_levels: one level */
	*count = root[34] | root[35] << 8;
	for (unsigned i = 1; i < *count; i++)
		n += root[32 + 8 * i] & 1;
	return n;
}

/* Every name in names (NULL-terminated) stat()s on the kernel's ext4
 * (read-only loop mount); false when no loop mount can be made here. */
static bool kernel_finds(const char *img, const char *sub, GPtrArray *names)
{
	char *mnt = g_strdup_printf("%s.kmnt", img);
	gchar *mount_argv[] = {"mount",	     "-o", "loop,ro",
			       (gchar *)img, mnt,  NULL};
	gchar *umount_argv[] = {"umount", mnt, NULL};
	gchar *out = NULL;

	if (getuid() != 0 || access("/dev/loop-control", F_OK) != 0) {
		g_free(mnt);
		return false;
	}
	assert_int_equal(g_mkdir_with_parents(mnt, 0755), 0);
	if (run_capture(mount_argv, &out) != 0) {
		g_free(out);
		rmdir(mnt);
		g_free(mnt);
		return false;
	}
	g_free(out);
	for (guint i = 0; i < names->len; i++) {
		char *p = g_build_filename(
		    mnt, sub, (char *)g_ptr_array_index(names, i), NULL);
		struct stat st;
		int rc = stat(p, &st);
		if (rc != 0)
			fprintf(stderr, "# the kernel does not find %s\n", p);
		g_free(p);
		if (rc != 0) {
			run_capture(umount_argv, &out);
			g_free(out);
			fail();
		}
	}
	assert_int_equal(run_capture(umount_argv, &out), 0);
	g_free(out);
	rmdir(mnt);
	g_free(mnt);
	return true;
}

/*
 * Names that really collide: pairs with the same half_md4 hash under the
 * image's seed, all in one directory of 1 KiB blocks, so leaf splits fall
 * between the two names of a pair and set the continuation bit.  Lookups
 * (which must follow the continuation into the next leaf), readdir,
 * removes of one name of a pair, e2fsck -fn, debugfs htree_dump, and the
 * kernel finding every name.
 */
static void test_htree_real_collisions(void **state)
{
	enum { PAIRS = 400 };
	struct sfs_tfs *t = tfs_dx(1024, 32 * MiB, 4096, "");
	uint32_t seed[4];
	unsigned hver, count = 0, cont, removed = 0;
	struct sfs_attr a;
	GArray *pairs;
	GPtrArray *live = g_ptr_array_new_with_free_func(g_free);
	struct rd *r;
	char name[16];
	sfs_ino_t d = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "coll");
	sfs_blk_t proot;

	(void)state;
	for (int i = 0; i < 4; i++)
		seed[i] = sfs_le32(t->fs->sb.s_hash_seed[i]);
	hver = t->fs->sb.s_def_hash_version;
	assert_int_equal(hver, SFS_DX_HASH_HALF_MD4);
	if (sfs_le32(t->fs->sb.s_flags) & SFS_FLAGS_UNSIGNED_HASH)
		hver += SFS_DX_HASH_UNSIGNED_DELTA;
	pairs = collision_pairs(hver, seed, 1400000, PAIRS);
	fprintf(stderr, "# %u colliding pairs among 1400000 names\n",
		pairs->len / 2);
	assert_int_equal(pairs->len, 2 * PAIRS);
	/* the pairs do collide, under the hash the engine uses */
	for (guint i = 0; i < pairs->len; i += 2) {
		uint32_t h0, h1;
		char n1[16];
		coll_name(name, sizeof(name),
			  g_array_index(pairs, uint32_t, i));
		coll_name(n1, sizeof(n1),
			  g_array_index(pairs, uint32_t, i + 1));
		assert_int_equal(sfs_dirhash(hver, seed, name, 8, &h0, NULL),
				 0);
		assert_int_equal(sfs_dirhash(hver, seed, n1, 8, &h1, NULL), 0);
		assert_int_equal(h0, h1);
		assert_string_not_equal(name, n1);
	}
	/* in a shuffled order (the pairs come sorted by hash: added in that
	 * order every split would fall between two pairs) */
	{
		GRand *rnd = g_rand_new_with_seed(16);
		guint *order = g_new(guint, pairs->len);
		for (guint i = 0; i < pairs->len; i++)
			order[i] = i;
		for (guint i = pairs->len - 1; i > 0; i--) {
			guint j =
			    (guint)g_rand_int_range(rnd, 0, (gint32)i + 1);
			guint x = order[i];
			order[i] = order[j];
			order[j] = x;
		}
		for (guint i = 0; i < pairs->len; i++) {
			coll_name(name, sizeof(name),
				  g_array_index(pairs, uint32_t, order[i]));
			sfs_test_mknod(t->fs, d, name);
			g_ptr_array_add(live, g_strdup(name));
		}
		g_free(order);
		g_rand_free(rnd);
	}
	assert_true(dir_indexed(t->fs, d, NULL));
	for (guint i = 0; i < live->len; i++)
		assert_int_equal(
		    sfs_lookup(t->fs, d, g_ptr_array_index(live, i), &a), 0);
	proot = dir_pblk(t->fs, d, 0);
	sfs_tfs_close(t);
	cont = continued_entries(t->img, proot, &count);
	fprintf(stderr, "# %u leaves, %u of them continue a hash\n", count,
		cont);
	assert_true(count > 10);
	assert_true(cont > 0);
	assert_true(sfs_test_fsck_clean(t->img, NULL));
	htree_dump_ok(t->img, "/coll");

	/* every name again after a remount, and readdir once each */
	sfs_tfs_reopen(t);
	for (guint i = 0; i < live->len; i++)
		assert_int_equal(
		    sfs_lookup(t->fs, d, g_ptr_array_index(live, i), &a), 0);
	r = rd_new(0);
	assert_int_equal(sfs_readdir(t->fs, d, 0, rd_fill, r), 0);
	assert_false(r->dup);
	assert_int_equal(g_hash_table_size(r->seen), live->len + 2);
	rd_free(r);
	/* remove the first name of every third pair: its partner stays */
	for (guint i = 0; i < pairs->len; i += 6) {
		char n1[16];
		coll_name(name, sizeof(name),
			  g_array_index(pairs, uint32_t, i));
		coll_name(n1, sizeof(n1),
			  g_array_index(pairs, uint32_t, i + 1));
		assert_int_equal(sfs_unlink(t->fs, d, name), 0);
		assert_int_equal(sfs_lookup(t->fs, d, name, &a), -ENOENT);
		assert_int_equal(sfs_lookup(t->fs, d, n1, &a), 0);
		removed++;
	}
	g_ptr_array_set_size(live, 0);
	for (guint i = 0; i < pairs->len; i++) {
		if (i % 6 == 0)
			continue;
		coll_name(name, sizeof(name),
			  g_array_index(pairs, uint32_t, i));
		g_ptr_array_add(live, g_strdup(name));
	}
	assert_int_equal(live->len, pairs->len - removed);
	r = rd_new(0);
	assert_int_equal(sfs_readdir(t->fs, d, 0, rd_fill, r), 0);
	assert_false(r->dup);
	assert_int_equal(g_hash_table_size(r->seen), live->len + 2);
	rd_free(r);
	sfs_tfs_assert_clean(t);
	if (!kernel_finds(t->img, "coll", live))
		fprintf(stderr, "# no loop mount here: the kernel check is "
				"left out\n");
	g_ptr_array_free(live, TRUE);
	g_array_free(pairs, TRUE);
	sfs_tfs_free(t);
}

/*
 * Read faults while names are added to an indexed directory (leaf and
 * node splits need the directory's blocks, bitmaps and the inode table):
 * for nth = 1, 2, ... the nth device read fails.  Every call returns 0 or
 * -EIO, never crashes; an add that failed left no trace; on a fresh
 * mount without faults exactly the names whose add returned 0 are there,
 * lookups and readdir agree, and e2fsck -fn finds the image clean.
 */
static void test_htree_read_faults(void **state)
{
	enum { N = 1500, ADD = 300 };
	struct sfs_tfs *t = tfs_dx(1024, 32 * MiB, 4096, "");
	bool alive[N + ADD];
	unsigned hit = 0;
	char name[64];
	sfs_ino_t d = sfs_test_mkdir(t->fs, SFS_ROOT_INO, "f");

	(void)state;
	for (unsigned i = 0; i < N; i++) {
		name_of(name, sizeof(name), i);
		sfs_test_mknod(t->fs, d, name);
	}
	sfs_tfs_assert_clean(t);
	for (uint64_t nth = 1;; nth++) {
		struct sfs_config cfg;
		struct sfs_bdev *bd, *fd;
		struct sfs_fs *fs;
		struct sfs_attr a;
		char *err = NULL, *copy;
		int rc = 0;
		unsigned i;

		assert_true(nth < 500);
		copy = g_strconcat(t->img, ".run", NULL);
		{
			gchar *buf;
			gsize len;

			assert_true(
			    g_file_get_contents(t->img, &buf, &len, NULL));
			assert_true(
			    g_file_set_contents(copy, buf, (gssize)len, NULL));
			g_free(buf);
		}
		assert_int_equal(sfs_bdev_open_file(copy, 0, 0, &bd), 0);
		fd = sfs_faultdev_new(bd);
		sfs_config_defaults(&cfg);
		assert_int_equal(sfs_fs_open(fd, &cfg, &fs, &err), 0);
		sfs_faultdev_arm(fd, SFS_FAULT_READ, nth, false);
		for (i = 0; i < N + ADD; i++)
			alive[i] = i < N;
		for (i = N; i < N + ADD && rc == 0; i++) {
			name_of(name, sizeof(name), i);
			rc = sfs_mknod(fs, d, name, SFS_S_IFREG | 0644, 0, 0, 0,
				       &a);
			assert_true(rc == 0 || rc == -EIO);
			alive[i] = rc == 0;
		}
		sfs_faultdev_disarm(fd);
		sfs_fs_close(fs);
		if (rc)
			hit++;
		/* what a fresh mount sees */
		fs = sfs_test_open(copy, "");
		names_match(fs, d, alive, N + ADD);
		assert_int_equal(sfs_fs_close(fs), 0);
		assert_true(sfs_test_fsck_clean(copy, NULL));
		unlink(copy);
		g_free(copy);
		if (rc == 0)
			break;
	}
	print_message("# %u runs ended in -EIO before one ran clean\n", hit);
	assert_true(hit > 0);
	sfs_tfs_free(t);
}

/* mkfs -O: dir_index sets the feature, ^dir_index clears it, anything
 * else is refused with a message. */
static void test_htree_mkfs_features(void **state)
{
	struct sfs_mkfs_params p;
	char *err = NULL;

	(void)state;
	sfs_mkfs_defaults(&p);
	assert_false(p.dir_index);
	assert_int_equal(sfs_mkfs_parse_features(&p, "dir_index", &err), 0);
	assert_true(p.dir_index);
	assert_int_equal(sfs_mkfs_parse_features(&p, "^dir_index", &err), 0);
	assert_false(p.dir_index);
	assert_int_equal(
	    sfs_mkfs_parse_features(&p, "dir_index,inline_data", &err),
	    -EINVAL);
	assert_non_null(strstr(err, "'inline_data'"));
	g_free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_htree_mkfs_features),
	    cmocka_unit_test(test_htree_convert_from_linear),
	    cmocka_unit_test(test_htree_readdir_stable_while_growing),
	    cmocka_unit_test(test_htree_knob_off),
	    cmocka_unit_test(test_htree_corrupt_index_eio),
	    cmocka_unit_test(test_htree_continued_hash),
	    cmocka_unit_test(test_htree_real_collisions),
	    cmocka_unit_test(test_htree_read_faults),
	    cmocka_unit_test(test_htree_twenty_thousand),
	    cmocka_unit_test_teardown(test_htree_hundred_thousand_mke2fs,
				      kumount_teardown),
	};

	return cmocka_run_group_tests_name("htree", tests, NULL, NULL);
}
