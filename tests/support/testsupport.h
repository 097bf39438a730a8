/*
 * testsupport.h - what the unit tests share: a RAM device that records
 * every request, a fault-injecting device that wraps any other, temporary
 * images, and the e2fsck oracle.
 */
#ifndef SFS_TESTSUPPORT_H
#define SFS_TESTSUPPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "blockdev.h"
#include "fs.h"

/* ---- RAM device (ramdev.c) ---- */
/* A zero-filled device of size_bytes held in memory, logging requests. */
struct sfs_bdev *sfs_ramdev_new(uint64_t size_bytes);
/* A RAM device over the caller's size_bytes at bytes (kept after close). */
struct sfs_bdev *sfs_ramdev_wrap(uint8_t *bytes, uint64_t size_bytes);
/* The request log: n entries in order (reads, writes, flushes). */
const struct sfs_io_req *sfs_ramdev_log(struct sfs_bdev *bd, size_t *n_out);
void sfs_ramdev_clear_log(struct sfs_bdev *bd);
/* Direct access to the bytes (for corrupting images in tests). */
uint8_t *sfs_ramdev_data(struct sfs_bdev *bd);

/* ---- fault device (faultdev.c) ---- */
#define SFS_FAULT_READ 0x1
#define SFS_FAULT_WRITE 0x2
#define SFS_FAULT_FLUSH 0x4
#define SFS_FAULT_RESERVE 0x8 /* sfs_bdev_reserve (host space) */
/*
 * Wrap `lower` (the fault device owns and closes it).  Once armed, the
 * nth (1-based) request matching `mask` fails with -EIO (or the errno set
 * by sfs_faultdev_set_errno, e.g. -ENOSPC for a full host disk); with
 * `sticky` every matching request after it fails too.  Unarmed it
 * forwards everything.
 */
struct sfs_bdev *sfs_faultdev_new(struct sfs_bdev *lower);
void sfs_faultdev_arm(struct sfs_bdev *fd, unsigned mask, uint64_t nth,
		      bool sticky);
void sfs_faultdev_disarm(struct sfs_bdev *fd);
/* What fired faults return from now on: a negative errno (else -EIO). */
void sfs_faultdev_set_errno(struct sfs_bdev *fd, int err);
/* How many requests it failed so far. */
uint64_t sfs_faultdev_fired(struct sfs_bdev *fd);

/* ---- temporary images and the oracle (testfs.c) ---- */
/* A fresh private directory under $TMPDIR (g_free; remove with
 * sfs_test_rmtree). */
char *sfs_test_tmpdir(void);
void sfs_test_rmtree(const char *dir);
/* Create a sparse image file of size_bytes and format it with simfs mkfs
 * (block size bs, default other parameters), or with plain `mke2fs -t
 * ext4` / `-t ext3` when SIMFS_TEST_MKFS is mke2fs-ext4 / mke2fs-ext3.
 * 0 or -errno. */
int sfs_test_mkimage(const char *path, uint64_t size_bytes, uint32_t bs);
/* `mke2fs -F -q -t type -b bs` (the installed e2fsprogs's defaults for
 * that type) making path of size_bytes, with a fixed UUID and hash seed;
 * ext_opts (or NULL) adds to -E.  0, or -EIO with mke2fs's message
 * printed. */
int sfs_test_mke2fs(const char *path, uint64_t size_bytes, uint32_t bs,
		    const char *type, const char *ext_opts);
/* Does sfs_test_mkimage use simfs mkfs (SIMFS_TEST_MKFS unset)?  Checks of
 * simfs mkfs's own layout (free counts, block numbers) hold only then. */
bool sfs_test_simfs_mkfs(void);
/*
 * The tests of tests[0..*n) to run: all on simfs mkfs's images; on
 * mke2fs's (SIMFS_TEST_MKFS) all but those named in only_simfs, pairs of
 * test name and why it checks simfs mkfs's own layout (free counts of a
 * journal-less image, where group 0's data starts, linear directories),
 * NULL-terminated.  Each one left out is named on stdout.  Returns a new
 * array (kept to the end of the process) and its length in *n, for
 * _cmocka_run_group_tests.
 */
struct CMUnitTest;
struct CMUnitTest *sfs_test_select(const struct CMUnitTest *tests, size_t *n,
				   const char *const *only_simfs);
/* Add an internal journal of `blocks` blocks to a fresh image (as
 * `simfs mkfs -j`); fails the test on error.  An image mke2fs made
 * (SIMFS_TEST_MKFS) keeps its own journal. */
void sfs_test_add_journal(const char *path, uint32_t blocks);
/* Open an image file as a filesystem with option string opts ("" ok);
 * fails the test on error. */
struct sfs_fs *sfs_test_open(const char *path, const char *opts);
/*
 * Run `e2fsck -fn path`.  Returns true only if it exits 0 and its output
 * reports no problem at all (the -n mode prints fixable problems and still
 * exits 0: the output is read).  *output (may be NULL) gets the full text.
 */
bool sfs_test_fsck_clean(const char *path, char **output);
/* The same, but a note that an extent tree "could be narrower" or "could
 * be shorter" (which exits 0 under -n; the kernel leaves such trees after
 * random inserts, punches and truncates) is allowed. */
bool sfs_test_fsck_clean_shape(const char *path, char **output);
/* The path of program name: PATH first, then the sbin and bin folders
 * root's PATH usually has (a test's PATH may not); NULL if none has it.
 * g_free it. */
char *sfs_test_which(const char *name);
/* Run argv (searched in PATH); its stdout (g_free).  Fails the test, with
 * its stderr, unless it exits 0. */
char *sfs_test_run(char **argv);

/* A regular file `name` in dir, created and opened O_RDWR (release it). */
sfs_ino_t sfs_test_mkfile(struct sfs_fs *fs, sfs_ino_t dir, const char *name);
/* Write n bytes of `fill` at off of the open file ino, all of them. */
void sfs_test_fill(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off, size_t n,
		   uint8_t fill);
/* A file `name` holding text in a fresh private temp dir: its path
 * (remove both and free it with sfs_test_rm_tmp_file). */
char *sfs_test_tmp_file(const char *name, const char *text);
void sfs_test_rm_tmp_file(char *path);
/* The end of a constructor call new(spec, &obj, &err) a test expects to
 * succeed (sfs_workload_new, sfs_devmodel_new, sfs_cpumodel_new...): fails
 * the test, printing spec and the message, unless rc is 0; frees err. */
void sfs_test_spec_ok(const char *spec, int rc, char *err);
/* The workload of spec (sfs_workload_new); fails the test, printing the
 * message, if spec is refused. */
struct sfs_workload;
struct sfs_workload *sfs_test_workload(const char *spec);
/* Client c's next op at now (sfs_workload_next): 1 with *op filled, 0
 * when c is done; fails the test, printing the message, on an error. */
struct sfs_wop;
int sfs_test_next(struct sfs_workload *w, unsigned c, sfs_ns_t now,
		  struct sfs_wop *op);

/* A regular file `name` (0644) in dir, created and not opened. */
sfs_ino_t sfs_test_mknod(struct sfs_fs *fs, sfs_ino_t dir, const char *name);
/* A directory `name` (0755) in dir. */
sfs_ino_t sfs_test_mkdir(struct sfs_fs *fs, sfs_ino_t dir, const char *name);
/* The filesystem's free-block count, under its lock. */
uint64_t sfs_test_free_blocks(struct sfs_fs *fs);

/* ---- the common fixture (testfs.c) ---- */
struct sfs_tfs {
	char *dir;	   /* private temp dir (removed by sfs_tfs_free) */
	char *img;	   /* dir/img */
	struct sfs_fs *fs; /* open on img, or NULL */
};
/* The dir and image path only: the test makes the image. */
struct sfs_tfs *sfs_tfs_alloc(void);
/* A fresh image of size_bytes with block size bs, opened with opts. */
struct sfs_tfs *sfs_tfs_new(uint32_t bs, uint64_t size_bytes, const char *opts);
/* Close (asserting success) if open. */
void sfs_tfs_close(struct sfs_tfs *t);
/* Close, then assert e2fsck -fn finds the image clean (prints its output
 * if not). */
void sfs_tfs_assert_clean(struct sfs_tfs *t);
/* Close and open again. */
void sfs_tfs_reopen(struct sfs_tfs *t);
/* Close, assert clean, open again. */
void sfs_tfs_cycle(struct sfs_tfs *t);
/* Close without asserting, remove the dir, free. */
void sfs_tfs_free(struct sfs_tfs *t);
/* cmocka fixtures around them: setup makes *state an sfs_tfs_new(bs,
 * size_bytes, opts); teardown asserts the image e2fsck-clean and frees
 * it. */
int sfs_tfs_setup(void **state, uint32_t bs, uint64_t size_bytes,
		  const char *opts);
int sfs_tfs_teardown(void **state);
/* The same for tests that make their own image: *state an sfs_tfs_alloc;
 * teardown_free frees it without asserting anything. */
int sfs_tfs_setup_alloc(void **state);
int sfs_tfs_teardown_free(void **state);

#endif /* SFS_TESTSUPPORT_H */
