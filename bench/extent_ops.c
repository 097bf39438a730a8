/*
 * extent_ops.c - what the extent tree's range edits cost, in the engine
 * without a mount: a file of 4000 one-block extents on 1 KiB blocks
 * (depth 2), then one phase:
 *
 *   extent_ops trunc    truncate it to 0 in 100 equal steps
 *   extent_ops falloc   100 rounds of ZERO_RANGE (4 blocks, KEEP_SIZE),
 *                       INSERT_RANGE (2) and COLLAPSE_RANGE (2) at
 *                       seeded random offsets
 *
 * and prints the extent-tree blocks read and dirtied by the phase and
 * whether e2fsck -fn then finds the image clean (or only calls a tree
 * narrower or shorter than it could be).  Count instructions, not time
 * (doc/benchmarks.md, "Extent trees"):
 *
 *   valgrind --tool=callgrind --toggle-collect=phase_trunc \
 *       build/bench/extent_ops trunc
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_priv.h"
#include "testsupport.h"

#define BS 1024u
#define EXTENTS 4000u

static void build(struct sfs_fs *fs, sfs_ino_t ino)
{
	uint8_t blk[BS];
	size_t n;

	memset(blk, 7, sizeof(blk));
	for (uint32_t i = 0; i < EXTENTS; i++)
		if (sfs_write(fs, ino, (uint64_t)(2 * i) * BS, blk, BS, &n))
			abort();
}

/* Not inlined: callgrind's --toggle-collect names them. */
__attribute__((noinline)) void phase_trunc(struct sfs_fs *fs, sfs_ino_t ino);
__attribute__((noinline)) void phase_falloc(struct sfs_fs *fs, sfs_ino_t ino);

void phase_trunc(struct sfs_fs *fs, sfs_ino_t ino)
{
	for (int s = 99; s >= 0; s--) {
		struct sfs_attr in = {.size =
					  (uint64_t)s * 2 * EXTENTS / 100 * BS},
				a;
		if (sfs_setattr(fs, ino, &in, SFS_SET_SIZE, &a))
			abort();
	}
}

static void falloc(struct sfs_fs *fs, sfs_ino_t ino, int mode, uint64_t blk,
		   uint64_t n)
{
	if (sfs_fallocate(fs, ino, mode, blk * BS, n * BS))
		abort();
}

void phase_falloc(struct sfs_fs *fs, sfs_ino_t ino)
{
	GRand *r = g_rand_new_with_seed(1);
	int hi = 2 * EXTENTS - 16;

	for (int i = 0; i < 100; i++) {
		falloc(fs, ino, SFS_FALLOC_ZERO_RANGE | SFS_FALLOC_KEEP_SIZE,
		       (uint64_t)g_rand_int_range(r, 0, hi), 4);
		falloc(fs, ino, SFS_FALLOC_INSERT_RANGE,
		       (uint64_t)g_rand_int_range(r, 0, hi), 2);
		falloc(fs, ino, SFS_FALLOC_COLLAPSE_RANGE,
		       (uint64_t)g_rand_int_range(r, 0, hi), 2);
	}
	g_rand_free(r);
}

int main(int argc, char **argv)
{
	bool trunc = argc > 1 && !strcmp(argv[1], "trunc");
	struct sfs_tfs *t;
	uint64_t reads, dirty;
	char *out = NULL;
	sfs_ino_t ino;
	bool clean;

	if (argc != 2 || (!trunc && strcmp(argv[1], "falloc"))) {
		fprintf(stderr, "usage: extent_ops trunc|falloc\n");
		return 2;
	}
	t = sfs_tfs_new(BS, 96u << 20, "alloc=extent");
	ino = sfs_test_mkfile(t->fs, SFS_ROOT_INO, "f");
	build(t->fs, ino);
	reads = t->fs->cpu_ctr.extent_reads;
	dirty = t->fs->cpu_ctr.extent_dirty;
	if (trunc)
		phase_trunc(t->fs, ino);
	else
		phase_falloc(t->fs, ino);
	printf("%s: %" PRIu64 " tree blocks read, %" PRIu64 " dirtied\n",
	       argv[1], t->fs->cpu_ctr.extent_reads - reads,
	       t->fs->cpu_ctr.extent_dirty - dirty);
	sfs_tfs_close(t);
	clean = sfs_test_fsck_clean_shape(t->img, &out);
	printf("e2fsck -fn: %s\n",
	       clean ? "clean (or a tree could be narrower)" : "NOT clean");
	if (!clean)
		printf("%s", out ? out : "");
	g_free(out);
	sfs_tfs_free(t);
	return clean ? 0 : 1;
}
