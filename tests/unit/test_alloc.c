/*
 * test_alloc.c - the placement models alone (the registry's allocators
 * walked as a contract) and ext2's goal search in particular: take the
 * goal, search to the 64-block boundary, prefer a free byte, spill into
 * the next group, wrap, -ENOSPC when full; seeded random alloc/free with
 * the bitmaps checked against the set of allocations after every step.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fs_priv.h"
#include "testsupport.h"

struct run {
	sfs_blk_t s;
	uint32_t n;
};

struct ctx {
	char *dir;
	char *img;
	struct sfs_fs *fs;
	uint8_t *base;  /* bitmap of blocks used before the test, 1 bit each */
};

static bool blk_used(struct sfs_fs *fs, sfs_blk_t b)
{
	uint32_t g = sfs_blk_group(fs, b);
	struct sfs_buf *buf;
	bool used;

	assert_int_equal(sfs_block_bitmap(fs, g, &buf), 0);
	uint32_t bit = b - sfs_group_first(fs, g);
	used = buf->data[bit >> 3] & (1u << (bit & 7));
	sfs_cache_put(fs->cache, buf);
	return used;
}

static void open_opts(struct ctx *c, uint32_t bs, uint64_t size,
		      const char *opts)
{
	c->dir = sfs_test_tmpdir();
	c->img = g_build_filename(c->dir, "alloc.img", NULL);
	assert_int_equal(sfs_test_mkimage(c->img, size, bs), 0);
	c->fs = sfs_test_open(c->img, opts);
	sfs_lock(c->fs);
	c->base = g_malloc0(c->fs->blocks_count / 8 + 1);
	for (sfs_blk_t b = c->fs->first_data_block; b < c->fs->blocks_count;
	     b++)
		if (blk_used(c->fs, b))
			c->base[b >> 3] |= (uint8_t)(1u << (b & 7));
}

static void open_geom(struct ctx *c, uint32_t bs, uint64_t size)
{
	open_opts(c, bs, size, "");
}

static void close_geom(struct ctx *c)
{
	sfs_unlock(c->fs);
	assert_int_equal(sfs_fs_close(c->fs), 0);
	assert_true(sfs_test_fsck_clean(c->img, NULL));
	sfs_test_rmtree(c->dir);
	g_free(c->base);
	g_free(c->img);
	g_free(c->dir);
	memset(c, 0, sizeof(*c));
}

static bool base_used(struct ctx *c, sfs_blk_t b)
{
	return c->base[b >> 3] & (1u << (b & 7));
}

/* First free block at or after b in the original layout. */
static sfs_blk_t first_free_from(struct ctx *c, sfs_blk_t b)
{
	while (b < c->fs->blocks_count && base_used(c, b))
		b++;
	return b;
}

/* Contract: every registered placement model hands out free blocks only,
 * marks them, honours `want`, and says -ENOSPC when full. */
static void test_alloc_contract_all_models(void **state)
{
	struct ctx c = {0};
	const struct sfs_alloc_preset *p;

	(void)state;
	for (unsigned i = 0; (p = sfs_alloc_nth(i)); i++) {
		char *opts = g_strdup_printf("alloc=%s", p->name);

		open_opts(&c, 1024, 24 << 20, opts); /* this model, mounted */
		g_free(opts);
		struct sfs_fs *fs = c.fs;
		uint64_t free0 = sfs_free_blocks(fs), got_total = 0;
		GArray *runs = g_array_new(FALSE, FALSE, sizeof(struct run));
		sfs_blk_t start;
		uint32_t got;
		int rc;

		while ((rc = sfs_alloc_blocks(fs, NULL, 0, 37, &start, &got)) ==
		       0) {
			assert_true(got >= 1 && got <= 37);
			for (uint32_t k = 0; k < got; k++) {
				assert_false(base_used(&c, start + k));
				assert_true(blk_used(fs, start + k));
				c.base[(start + k) >> 3] |=
					(uint8_t)(1u << ((start + k) & 7));
			}
			struct run r = {start, got};
			g_array_append_val(runs, r);
			got_total += got;
		}
		assert_int_equal(rc, -ENOSPC);
		assert_int_equal(got_total, free0);
		assert_int_equal(sfs_free_blocks(fs), 0);
		for (guint k = 0; k < runs->len; k++) {
			struct run *r = &g_array_index(runs, struct run, k);
			assert_int_equal(sfs_blocks_free(fs, r->s, r->n), 0);
		}
		assert_int_equal(sfs_free_blocks(fs), free0);
		g_array_free(runs, TRUE);
		close_geom(&c);
	}
}

/* ext2 goal rules on a clean group. */
static void test_alloc_bitmap_goal_rules(void **state)
{
	struct ctx c = {0};
	sfs_blk_t s, s2;
	uint32_t got;

	(void)state;
	open_geom(&c, 1024, 32 << 20);
	struct sfs_fs *fs = c.fs;
	/* group 2 is untouched by mkfs past its bitmaps and inode table */
	sfs_blk_t g2 = sfs_group_first(fs, 2);
	sfs_blk_t free2 = first_free_from(&c, g2);
	/* a goal on a 64-block boundary (group-relative), past free space */
	sfs_blk_t goal = g2 + ((free2 - g2 + 64 + 63) & ~63u);

	/* 1. a free goal is taken */
	assert_int_equal(sfs_alloc_blocks(fs, NULL, goal, 1, &s, &got), 0);
	assert_int_equal(s, goal);
	/* 2. goal taken: next free block before the 64-block boundary */
	assert_int_equal(sfs_alloc_blocks(fs, NULL, goal, 1, &s2, &got), 0);
	assert_int_equal(s2, goal + 1);
	/* a multi-block request extends while free */
	sfs_blk_t s3;
	assert_int_equal(sfs_alloc_blocks(fs, NULL, goal + 10, 8, &s3, &got),
			 0);
	assert_int_equal(s3, goal + 10);
	assert_int_equal(got, 8);
	/* 3. nothing free to the boundary: the first free byte, stepped back
	 * to where its free run starts */
	sfs_blk_t bnd = goal + 64; /* the next boundary */
	sfs_blk_t fill_from = goal + 18, fill_to = bnd + 13;
	sfs_blk_t f;
	for (sfs_blk_t b = fill_from; b < fill_to; b++)
		assert_int_equal(sfs_blocks_mark_used(fs, b, 1), 0);
	/* blocks goal+2..goal+9 are free but before the goal we ask for */
	assert_int_equal(sfs_alloc_blocks(fs, NULL, goal + 18, 1, &f, &got),
			 0);
	/* first free byte boundary after fill_to, stepped back to fill_to */
	assert_int_equal(f, fill_to);
	assert_int_equal(sfs_blocks_free(fs, f, 1), 0);
	for (sfs_blk_t b = fill_from; b < fill_to; b++)
		assert_int_equal(sfs_blocks_free(fs, b, 1), 0);
	assert_int_equal(sfs_blocks_free(fs, s3, 8), 0);
	assert_int_equal(sfs_blocks_free(fs, s2, 1), 0);
	assert_int_equal(sfs_blocks_free(fs, s, 1), 0);
	close_geom(&c);
}

/* A full group spills into the next; the last group wraps to the first. */
static void test_alloc_bitmap_spill_and_wrap(void **state)
{
	struct ctx c = {0};
	sfs_blk_t s;
	uint32_t got;

	(void)state;
	open_geom(&c, 1024, 32 << 20);
	struct sfs_fs *fs = c.fs;
	uint32_t last = fs->groups - 1;
	GArray *held = g_array_new(FALSE, FALSE, sizeof(struct run));

	/* fill group 1 */
	while (fs->gd[1].bg_free_blocks_count) {
		assert_int_equal(sfs_alloc_blocks(fs, NULL,
						  sfs_group_first(fs, 1), 64,
						  &s, &got),
				 0);
		assert_int_equal(sfs_blk_group(fs, s), 1);
		struct run r = {s, got};
		g_array_append_val(held, r);
	}
	assert_int_equal(sfs_alloc_blocks(fs, NULL, sfs_group_first(fs, 1) + 5,
					  1, &s, &got),
			 0);
	assert_int_equal(sfs_blk_group(fs, s), 2);
	assert_int_equal(s, first_free_from(&c, sfs_group_first(fs, 2)));
	assert_int_equal(sfs_blocks_free(fs, s, 1), 0);
	/* fill the last group: a goal there wraps to group 0 */
	while (fs->gd[last].bg_free_blocks_count) {
		assert_int_equal(sfs_alloc_blocks(fs, NULL,
						  sfs_group_first(fs, last),
						  64, &s, &got),
				 0);
		struct run r = {s, got};
		g_array_append_val(held, r);
	}
	assert_int_equal(sfs_alloc_blocks(fs, NULL,
					  sfs_group_first(fs, last) + 1, 1, &s,
					  &got),
			 0);
	assert_int_equal(sfs_blk_group(fs, s), 0);
	assert_int_equal(sfs_blocks_free(fs, s, 1), 0);
	for (guint k = 0; k < held->len; k++) {
		struct run *r = &g_array_index(held, struct run, k);
		assert_int_equal(sfs_blocks_free(fs, r->s, r->n), 0);
	}
	g_array_free(held, TRUE);
	close_geom(&c);
}

/* Seeded random alloc/free over several geometries: no block handed out
 * twice, bitmaps = base layout + live allocations, counts exact. */
static void test_alloc_random_invariants(void **state)
{
	const uint32_t bss[] = {1024, 2048, 4096};
	const uint64_t sizes[] = {20 << 20, 40 << 20, 300 << 20};

	(void)state;
	for (int gi = 0; gi < 3; gi++) {
		struct ctx c = {0};
		GRand *r = g_rand_new_with_seed(1234 + gi);
		GArray *live = g_array_new(FALSE, FALSE, sizeof(struct run));

		open_geom(&c, bss[gi], sizes[gi]);
		struct sfs_fs *fs = c.fs;
		uint64_t free0 = sfs_free_blocks(fs), nlive = 0;
		for (int step = 0; step < 3000; step++) {
			if (live->len == 0 || g_rand_int_range(r, 0, 3)) {
				sfs_blk_t goal = g_rand_int_range(
					r, 0, (gint32)fs->blocks_count);
				uint32_t want = g_rand_int_range(r, 1, 100);
				sfs_blk_t s;
				uint32_t got;
				int rc = sfs_alloc_blocks(fs, NULL, goal, want,
							  &s, &got);
				if (rc == -ENOSPC) {
					assert_int_equal(sfs_free_blocks(fs),
							 0);
					continue;
				}
				assert_int_equal(rc, 0);
				for (uint32_t k = 0; k < got; k++) {
					assert_false(base_used(&c, s + k));
					c.base[(s + k) >> 3] |=
						(uint8_t)(1u << ((s + k) & 7));
				}
				struct run run = {s, got};
				g_array_append_val(live, run);
				nlive += got;
			} else {
				guint k = g_rand_int_range(r, 0,
							   (gint32)live->len);
				struct run *run =
					&g_array_index(live, struct run, k);
				assert_int_equal(
					sfs_blocks_free(fs, run->s, run->n), 0);
				for (uint32_t j = 0; j < run->n; j++)
					c.base[(run->s + j) >> 3] &= (uint8_t)~(
						1u << ((run->s + j) & 7));
				nlive -= run->n;
				g_array_remove_index_fast(live, k);
			}
			assert_int_equal(sfs_free_blocks(fs), free0 - nlive);
		}
		/* bitmaps equal the model, block by block */
		for (sfs_blk_t b = fs->first_data_block; b < fs->blocks_count;
		     b++)
			assert_int_equal(blk_used(fs, b), base_used(&c, b));
		for (guint k = 0; k < live->len; k++) {
			struct run *run = &g_array_index(live, struct run, k);
			assert_int_equal(sfs_blocks_free(fs, run->s, run->n),
					 0);
		}
		assert_int_equal(sfs_free_blocks(fs), free0);
		g_array_free(live, TRUE);
		g_rand_free(r);
		close_geom(&c);
	}
}

/* Double free and freeing metadata are caught, not silently accepted. */
static void test_alloc_double_free_detected(void **state)
{
	struct ctx c = {0};
	sfs_blk_t s;
	uint32_t got;

	(void)state;
	open_geom(&c, 4096, 16 << 20);
	assert_int_equal(sfs_alloc_blocks(c.fs, NULL, 0, 1, &s, &got), 0);
	assert_int_equal(sfs_blocks_free(c.fs, s, 1), 0);
	assert_int_equal(sfs_blocks_free(c.fs, s, 1), -EIO);
	assert_true(c.fs->error); /* sticky error: the fs turns read-only */
	assert_int_equal(sfs_check_writable(c.fs), -EROFS);
	sfs_unlock(c.fs);
	/* close still writes nothing wrong: the free count stayed exact */
	assert_int_equal(sfs_fs_close(c.fs), 0);
	c.fs = NULL;
	char *out = NULL;
	sfs_test_fsck_clean(c.img, &out);
	/* the image is marked with errors; counts are still right */
	assert_null(strstr(out, "differences"));
	g_free(out);
	sfs_test_rmtree(c.dir);
	g_free(c.base);
	g_free(c.img);
	g_free(c.dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_contract_all_models),
		cmocka_unit_test(test_alloc_bitmap_goal_rules),
		cmocka_unit_test(test_alloc_bitmap_spill_and_wrap),
		cmocka_unit_test(test_alloc_random_invariants),
		cmocka_unit_test(test_alloc_double_free_detected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
