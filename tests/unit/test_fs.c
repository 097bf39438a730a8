/*
 * test_fs.c - mounting, superblock state, inode allocation and the sticky
 * error state (simfs/fs.c), driven through the engine API on temp images.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs_priv.h"
#include "testsupport.h"

static void read_super(const char *img, struct sfs_dsuper *sb)
{
	int fd = open(img, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, sb, sizeof(*sb), SFS_SUPER_OFFSET),
			 sizeof(*sb));
	close(fd);
}

/* Open marks the image not clean and counts the mount; close restores. */
static void test_fs_state_clean_after_close(void **state)
{
	struct sfs_tfs *c = *state;
	struct sfs_dsuper sb;

	assert_int_equal(sfs_test_mkimage(c->img, 32 << 20, 4096), 0);
	read_super(c->img, &sb);
	uint16_t mnt = sfs_le16(sb.s_mnt_count);
	assert_true(sfs_le16(sb.s_state) & SFS_STATE_VALID);

	struct sfs_fs *fs = sfs_test_open(c->img, "");
	read_super(c->img, &sb);
	assert_false(sfs_le16(sb.s_state) & SFS_STATE_VALID);
	assert_int_equal(sfs_le16(sb.s_mnt_count), mnt + 1);
	assert_int_equal(sfs_fs_close(fs), 0);

	read_super(c->img, &sb);
	assert_true(sfs_le16(sb.s_state) & SFS_STATE_VALID);
	assert_true(sfs_test_fsck_clean(c->img, NULL));
}

/* A read-only open writes nothing at all. */
static void test_fs_readonly_writes_nothing(void **state)
{
	struct sfs_tfs *c = *state;
	struct sfs_attr a;

	assert_int_equal(sfs_test_mkimage(c->img, 32 << 20, 1024), 0);
	struct sfs_fs *fs = sfs_test_open(c->img, "ro");
	struct sfs_bdev_counters cnt;
	assert_int_equal(sfs_mknod(fs, SFS_ROOT_INO, "f", SFS_S_IFREG | 0644,
				   0, 0, 0, &a),
			 -EROFS);
	assert_int_equal(sfs_getattr(fs, SFS_ROOT_INO, &a), 0);
	sfs_bdev_counters(sfs_fs_bdev(fs), &cnt);
	assert_int_equal(cnt.reqs[SFS_IO_WRITE], 0);
	assert_int_equal(sfs_fs_close(fs), 0);
}

/* Unused, reserved and out-of-range inode numbers are -ESTALE. */
static void test_fs_iget_stale(void **state)
{
	struct sfs_tfs *c = *state;
	struct sfs_attr a;

	assert_int_equal(sfs_test_mkimage(c->img, 32 << 20, 4096), 0);
	struct sfs_fs *fs = sfs_test_open(c->img, "");
	assert_int_equal(sfs_getattr(fs, SFS_ROOT_INO, &a), 0);
	assert_true((a.mode & SFS_S_IFMT) == SFS_S_IFDIR);
	assert_int_equal(a.nlink, 3);
	assert_int_equal(sfs_getattr(fs, SFS_FIRST_INO, &a), 0); /* l+f */
	assert_int_equal(sfs_getattr(fs, 0, &a), -ESTALE);
	assert_int_equal(sfs_getattr(fs, 1, &a), -ESTALE);
	assert_int_equal(sfs_getattr(fs, 8, &a), -ESTALE);
	assert_int_equal(sfs_getattr(fs, 12, &a), -ESTALE);
	assert_int_equal(sfs_getattr(fs, 0x7fffffff, &a), -ESTALE);
	assert_int_equal(sfs_fs_close(fs), 0);
}

/* Inodes allocated and freed keep every count exact (e2fsck pass 5). */
static void test_fs_inode_alloc_free_counts(void **state)
{
	struct sfs_tfs *c = *state;
	struct sfs_statfs st0, st1;
	struct sfs_attr a;
	char name[32];

	assert_int_equal(sfs_test_mkimage(c->img, 64 << 20, 1024), 0);
	struct sfs_fs *fs = sfs_test_open(c->img, "");
	assert_int_equal(sfs_statfs(fs, &st0), 0);
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		assert_int_equal(sfs_mkdir(fs, SFS_ROOT_INO, name, 0755, 0, 0,
					   &a),
				 0);
		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(sfs_mknod(fs, SFS_ROOT_INO, name,
					   SFS_S_IFREG | 0644, 0, 0, 0, &a),
				 0);
	}
	assert_int_equal(sfs_statfs(fs, &st1), 0);
	assert_int_equal(st0.inodes_free - st1.inodes_free, 600);
	/* directories spread over groups (ext2's find_group_dir) */
	uint32_t groups_with_dirs = 0;
	for (uint32_t g = 0; g < fs->groups; g++)
		groups_with_dirs += fs->gd[g].bg_used_dirs_count != 0;
	assert_true(groups_with_dirs > 1);
	for (int i = 0; i < 300; i += 2) {
		snprintf(name, sizeof(name), "d%d", i);
		assert_int_equal(sfs_rmdir(fs, SFS_ROOT_INO, name), 0);
		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(sfs_unlink(fs, SFS_ROOT_INO, name), 0);
	}
	assert_int_equal(sfs_statfs(fs, &st1), 0);
	assert_int_equal(st0.inodes_free - st1.inodes_free, 300);
	assert_int_equal(sfs_fs_close(fs), 0);
	assert_true(sfs_test_fsck_clean(c->img, NULL));

	/* and the state survives a remount */
	fs = sfs_test_open(c->img, "");
	assert_int_equal(sfs_statfs(fs, &st1), 0);
	assert_int_equal(st0.inodes_free - st1.inodes_free, 300);
	assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, "d1", &a), 0);
	assert_int_equal(sfs_lookup(fs, SFS_ROOT_INO, "d0", &a), -ENOENT);
	assert_int_equal(sfs_fs_close(fs), 0);
}

/* Running out of inodes is -ENOSPC, and the filesystem stays usable. */
static void test_fs_inode_enospc(void **state)
{
	struct sfs_tfs *c = *state;
	struct sfs_statfs st;
	struct sfs_attr a;
	char name[32];
	int i, rc = 0;

	assert_int_equal(sfs_test_mkimage(c->img, 16 << 20, 4096), 0);
	struct sfs_fs *fs = sfs_test_open(c->img, "");
	assert_int_equal(sfs_statfs(fs, &st), 0);
	for (i = 0; i < 100000; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		rc = sfs_mknod(fs, SFS_ROOT_INO, name, SFS_S_IFREG | 0644, 0,
			       0, 0, &a);
		if (rc)
			break;
	}
	assert_int_equal(rc, -ENOSPC);
	assert_int_equal(i, (int)st.inodes_free);
	assert_int_equal(sfs_unlink(fs, SFS_ROOT_INO, "f7"), 0);
	assert_int_equal(sfs_mknod(fs, SFS_ROOT_INO, "again",
				   SFS_S_IFREG | 0644, 0, 0, 0, &a),
			 0);
	assert_int_equal(sfs_fs_close(fs), 0);
	assert_true(sfs_test_fsck_clean(c->img, NULL));
}

/* A device write error is -EIO for that call; the fs keeps serving. */
static void test_fs_io_error_is_eio(void **state)
{
	struct sfs_tfs *c = *state;
	struct sfs_config cfg;
	struct sfs_bdev *bd, *fd;
	struct sfs_fs *fs;
	struct sfs_attr a;
	char *err = NULL;
	char buf[4096];
	size_t n;

	assert_int_equal(sfs_test_mkimage(c->img, 32 << 20, 4096), 0);
	assert_int_equal(sfs_bdev_open_file(c->img, 0, 0, &bd), 0);
	fd = sfs_faultdev_new(bd);
	sfs_config_defaults(&cfg);
	cfg.mem_bytes = 1 << 20; /* small: reads go to the device */
	assert_int_equal(sfs_fs_open(fd, &cfg, &fs, &err), 0);
	assert_int_equal(sfs_mknod(fs, SFS_ROOT_INO, "f", SFS_S_IFREG | 0644,
				   0, 0, 0, &a),
			 0);
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(sfs_write(fs, a.ino, 0, buf, sizeof(buf), &n), 0);
	/* every flush fails: sync reports it */
	sfs_faultdev_arm(fd, SFS_FAULT_FLUSH | SFS_FAULT_WRITE, 1, true);
	assert_int_equal(sfs_fs_sync(fs), -EIO);
	assert_true(sfs_faultdev_fired(fd) >= 1);
	/* reads still served */
	assert_int_equal(sfs_read(fs, a.ino, 0, sizeof(buf), buf, &n), 0);
	assert_int_equal(n, sizeof(buf));
	assert_int_equal(buf[100], 'x');
	sfs_faultdev_disarm(fd);
	assert_int_equal(sfs_fs_sync(fs), 0);
	assert_int_equal(sfs_fs_close(fs), 0);
	assert_true(sfs_test_fsck_clean(c->img, NULL));
}

/*
 * A full host disk under the image, in each journal mode and with delayed
 * allocation.  1. The host refuses to reserve space (SFS_FAULT_RESERVE
 * failing with -ENOSPC): a 2 MiB write that needs new blocks (more than
 * the engine reserves ahead) and a create fail
 * with -ENOSPC (delayed allocation: the write is taken, sync fails with
 * -ENOSPC and the data stays delayed); an overwrite of placed blocks
 * works; the fs is not read-only.  2. The host refuses writes themselves
 * (-ENOSPC from every write; no journal and data=ordered): sync fails
 * with -ENOSPC, twice, and the fs stays writable.  3. With room back,
 * sync and close succeed, the image is e2fsck clean and the data reads
 * back.
 */
static void host_full_case(struct sfs_tfs *c, const char *mode, bool delalloc)
{
	const size_t big = 2 << 20; /* past the 1 MiB reserve-ahead window */
	struct sfs_config cfg;
	struct sfs_bdev *bd, *fd;
	struct sfs_fs *fs;
	struct sfs_attr a, b, d;
	char *err = NULL;
	char buf[16384], back[16384];
	char *data = g_malloc(big);
	size_t n;
	int rc;

	print_message("# host full: data=%s%s\n", mode,
		      delalloc ? ", delalloc" : "");
	assert_int_equal(sfs_test_mkimage(c->img, 32 << 20, 4096), 0);
	if (strcmp(mode, "none") != 0)
		sfs_test_add_journal(c->img, 1024);
	assert_int_equal(sfs_bdev_open_file(c->img, 0, 0, &bd), 0);
	fd = sfs_faultdev_new(bd);
	sfs_faultdev_set_errno(fd, -ENOSPC);
	sfs_config_defaults(&cfg);
	g_strlcpy(cfg.journal, mode, sizeof(cfg.journal));
	if (delalloc) {
		g_strlcpy(cfg.alloc, "mballoc", sizeof(cfg.alloc));
		cfg.delalloc = true;
	}
	assert_int_equal(sfs_fs_open(fd, &cfg, &fs, &err), 0);
	assert_int_equal(sfs_mknod(fs, SFS_ROOT_INO, "f", SFS_S_IFREG | 0644,
				   0, 0, 0, &a),
			 0);
	memset(buf, 'a', sizeof(buf));
	assert_int_equal(sfs_write(fs, a.ino, 0, buf, sizeof(buf), &n), 0);
	assert_int_equal(sfs_fs_sync(fs), 0); /* f's blocks are placed */

	/* 1. no host space for new blocks */
	sfs_faultdev_arm(fd, SFS_FAULT_RESERVE, 1, true);
	memset(data, 'b', big);
	n = 0;
	rc = sfs_write(fs, a.ino, sizeof(buf), data, big, &n);
	if (delalloc) {
		assert_int_equal(rc, 0);
		assert_int_equal(sfs_fs_sync(fs), -ENOSPC);
	} else {
		assert_int_equal(rc, -ENOSPC);
		assert_true(n < big);
	}
	assert_int_equal(sfs_mknod(fs, SFS_ROOT_INO, "g", SFS_S_IFREG | 0644,
				   0, 0, 0, &b),
			 -ENOSPC);
	assert_true(sfs_faultdev_fired(fd) >= 2);
	/* overwriting placed blocks needs no new space */
	memset(buf, 'c', 4096);
	assert_int_equal(sfs_write(fs, a.ino, 0, buf, 4096, &n), 0);
	sfs_faultdev_disarm(fd);

	/* 2. the host refuses the writes themselves (data=writeback and
	 * data=journal write nothing before the log, which is reserved at
	 * mount and so never refused by a full host: not their case) */
	assert_int_equal(sfs_mknod(fs, SFS_ROOT_INO, "d", SFS_S_IFREG | 0644,
				   0, 0, 0, &d),
			 0);
	assert_int_equal(sfs_write(fs, d.ino, 0, buf, 4096, &n), 0);
	if (!strcmp(mode, "none") || !strcmp(mode, "ordered")) {
		sfs_faultdev_arm(fd, SFS_FAULT_WRITE, 1, true);
		assert_int_equal(sfs_fs_sync(fs), -ENOSPC);
		assert_int_equal(sfs_fs_sync(fs), -ENOSPC);
		assert_true(sfs_faultdev_fired(fd) >= 2);
		sfs_faultdev_disarm(fd);
	}

	/* 3. room again: everything goes out, the image is clean */
	if (!delalloc)
		assert_int_equal(
		    sfs_write(fs, a.ino, sizeof(buf), data, big, &n), 0);
	assert_int_equal(sfs_mknod(fs, SFS_ROOT_INO, "g", SFS_S_IFREG | 0644,
				   0, 0, 0, &b),
			 0);
	assert_int_equal(sfs_fs_sync(fs), 0);
	assert_int_equal(sfs_fs_close(fs), 0);
	assert_true(sfs_test_fsck_clean(c->img, NULL));

	/* the data, read back from the image */
	assert_int_equal(sfs_bdev_open_file(c->img, 0, 0, &bd), 0);
	assert_int_equal(sfs_fs_open(bd, &cfg, &fs, &err), 0);
	assert_int_equal(sfs_read(fs, a.ino, 0, sizeof(back), back, &n), 0);
	assert_int_equal(n, sizeof(back));
	assert_int_equal(back[0], 'c');
	assert_int_equal(back[4095], 'c');
	assert_int_equal(back[4096], 'a');
	char *got = g_malloc(big);
	assert_int_equal(sfs_read(fs, a.ino, sizeof(buf), big, got, &n), 0);
	assert_int_equal(n, big);
	assert_memory_equal(got, data, big);
	g_free(got);
	assert_int_equal(sfs_read(fs, d.ino, 0, 4096, back, &n), 0);
	assert_int_equal(n, 4096);
	assert_int_equal(back[17], 'c');
	assert_int_equal(sfs_fs_close(fs), 0);
	unlink(c->img);
	g_free(data);
}

static void test_fs_host_full_enospc(void **state)
{
	struct sfs_tfs *c = *state;

	host_full_case(c, "none", false);
	host_full_case(c, "ordered", false);
	host_full_case(c, "writeback", false);
	host_full_case(c, "journal", false);
	host_full_case(c, "none", true);
	host_full_case(c, "ordered", true);
}

/* Read errors: each failing read is -EIO, none crashes, and after the
 * device recovers the same calls succeed. */
static void test_fs_read_error_loop(void **state)
{
	struct sfs_tfs *c = *state;
	struct sfs_config cfg;
	struct sfs_bdev *bd, *fd;
	struct sfs_fs *fs;
	struct sfs_attr a;
	char *err = NULL;
	char buf[8192];
	size_t n;
	int eio = 0;

	assert_int_equal(sfs_test_mkimage(c->img, 32 << 20, 1024), 0);
	fs = sfs_test_open(c->img, "");
	assert_int_equal(sfs_mkdir(fs, SFS_ROOT_INO, "d", 0755, 0, 0, &a), 0);
	sfs_ino_t d = a.ino;
	assert_int_equal(sfs_mknod(fs, d, "f", SFS_S_IFREG | 0644, 0, 0, 0,
				   &a),
			 0);
	memset(buf, 'y', sizeof(buf));
	assert_int_equal(sfs_write(fs, a.ino, 0, buf, sizeof(buf), &n), 0);
	assert_int_equal(sfs_fs_close(fs), 0);

	for (uint64_t nth = 1; nth < 40; nth++) {
		assert_int_equal(sfs_bdev_open_file(c->img, 0, 0, &bd), 0);
		fd = sfs_faultdev_new(bd);
		sfs_config_defaults(&cfg);
		cfg.ro = true;
		int rc = sfs_fs_open(fd, &cfg, &fs, &err);
		if (rc) {
			/* the fault hit the mount itself: a clean error */
			assert_true(rc == -EIO || rc == -EINVAL);
			assert_non_null(err);
			g_free(err);
			err = NULL;
			continue;
		}
		sfs_faultdev_arm(fd, SFS_FAULT_READ, nth, false);
		rc = sfs_lookup(fs, SFS_ROOT_INO, "d", &a);
		if (rc == 0)
			rc = sfs_lookup(fs, a.ino, "f", &a);
		if (rc == 0)
			rc = sfs_read(fs, a.ino, 0, sizeof(buf), buf, &n);
		if (rc) {
			assert_int_equal(rc, -EIO);
			eio++;
		} else {
			assert_int_equal(n, sizeof(buf));
			assert_int_equal(buf[0], 'y');
		}
		sfs_fs_close(fs);
	}
	assert_true(eio > 0);
	assert_true(sfs_test_fsck_clean(c->img, NULL));
}

/* Geometry variety: every block size formats, mounts and checks clean. */
static void test_fs_block_sizes(void **state)
{
	struct sfs_tfs *c = *state;
	const uint32_t sizes[] = {1024, 2048, 4096};

	for (size_t i = 0; i < 3; i++) {
		struct sfs_statfs st;
		unlink(c->img);
		assert_int_equal(sfs_test_mkimage(c->img, 48 << 20, sizes[i]),
				 0);
		struct sfs_fs *fs = sfs_test_open(c->img, "");
		assert_int_equal(sfs_statfs(fs, &st), 0);
		assert_int_equal(st.block_size, sizes[i]);
		assert_true(st.blocks_free > 0 && st.blocks_free < st.blocks);
		assert_true(st.blocks_avail < st.blocks_free);
		assert_int_equal(st.name_max, 255);
		assert_int_equal(sfs_fs_close(fs), 0);
		assert_true(sfs_test_fsck_clean(c->img, NULL));
	}
}

/* Bad options never reach the image. */
static void test_fs_bad_alloc_name(void **state)
{
	struct sfs_tfs *c = *state;
	struct sfs_config cfg;
	struct sfs_bdev *bd;
	struct sfs_fs *fs;
	char *err = NULL;

	assert_int_equal(sfs_test_mkimage(c->img, 16 << 20, 4096), 0);
	assert_int_equal(sfs_bdev_open_file(c->img, 0, 0, &bd), 0);
	sfs_config_defaults(&cfg);
	g_strlcpy(cfg.alloc, "nosuch", sizeof(cfg.alloc));
	assert_int_equal(sfs_fs_open(bd, &cfg, &fs, &err), -EINVAL);
	assert_non_null(err);
	assert_non_null(strstr(err, "blockmap"));
	g_free(err);
	assert_true(sfs_test_fsck_clean(c->img, NULL));
}

int main(void)
{
	static const char *const only_simfs[] = {
	    "test_fs_state_clean_after_close",
	    "the mount state of a journal-less image",
	    "test_fs_io_error_is_eio",
	    "a journal-less image after a failed sync (with a journal a "
	    "failed commit aborts it, as jbd2's does)",
	    NULL};
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_fs_state_clean_after_close,
					    sfs_tfs_setup_alloc,
					    sfs_tfs_teardown_free),
	    cmocka_unit_test_setup_teardown(test_fs_readonly_writes_nothing,
					    sfs_tfs_setup_alloc,
					    sfs_tfs_teardown_free),
	    cmocka_unit_test_setup_teardown(
		test_fs_iget_stale, sfs_tfs_setup_alloc, sfs_tfs_teardown_free),
	    cmocka_unit_test_setup_teardown(test_fs_inode_alloc_free_counts,
					    sfs_tfs_setup_alloc,
					    sfs_tfs_teardown_free),
	    cmocka_unit_test_setup_teardown(test_fs_inode_enospc,
					    sfs_tfs_setup_alloc,
					    sfs_tfs_teardown_free),
	    cmocka_unit_test_setup_teardown(test_fs_io_error_is_eio,
					    sfs_tfs_setup_alloc,
					    sfs_tfs_teardown_free),
	    cmocka_unit_test_setup_teardown(test_fs_host_full_enospc,
					    sfs_tfs_setup_alloc,
					    sfs_tfs_teardown_free),
	    cmocka_unit_test_setup_teardown(test_fs_read_error_loop,
					    sfs_tfs_setup_alloc,
					    sfs_tfs_teardown_free),
	    cmocka_unit_test_setup_teardown(test_fs_block_sizes,
					    sfs_tfs_setup_alloc,
					    sfs_tfs_teardown_free),
	    cmocka_unit_test_setup_teardown(test_fs_bad_alloc_name,
					    sfs_tfs_setup_alloc,
					    sfs_tfs_teardown_free),
	};
	size_t n = G_N_ELEMENTS(tests);
	struct CMUnitTest *run = sfs_test_select(tests, &n, only_simfs);

	return _cmocka_run_group_tests("tests", run, n, NULL, NULL);
}
