/*
 * test_allocprop.c - allocator properties for every configuration in
 * prop_rows[] (one line per row; "data=ordered" etc. gets a journaled
 * image).  Seeded random sequences on a small RAM image that fills up:
 * open files appended to in small and large writes, sparse writes,
 * overwrites, truncates down and up, unlinks of open and closed files,
 * closes, reopens, xattr blocks, small files and slow symlinks; -ENOSPC
 * is allowed, no other error.  Every PROP_K operations prop_check():
 *  1. metadata (superblock/GDT copies, reserved GDT, bitmaps, inode
 *     tables) and every in-use inode's map walk (data, tree or indirect
 *     blocks, xattr block, the journal inode too) own disjoint blocks,
 *     and each inode's i_blocks is what it owns;
 *  2. the bitmaps (cache view) are exactly those blocks plus the frees
 *     waiting for a commit; group and total free counts match them.
 *     mballoc PAs are free on disk (held in its buddies only):
 *     sfs_mballoc_check (buddy = bitmap + PAs) must pass, and each live
 *     PA's unused blocks (sfs_mballoc_pa_walk) are free in the bitmap,
 *     owned by no file and in no other PA; reservation windows are well
 *     formed; delalloc's reserve never exceeds the free blocks and no
 *     delayed block ever fails to be placed;
 *  3. with every file closed no inode PA or window is left; after sync
 *     the superblock's count is the total; the image closed and opened
 *     again has bitmaps = metadata + maps exactly, and e2fsck -fn is
 *     clean.
 * test_allocprop_detects_corruption: prop_check() reports a flipped
 * bitmap bit, a block owned twice and a wrong group count.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs_priv.h"
#include "journal.h"
#include "mkfs.h"
#include "models/alloc/mballoc.h"
#include "models/journal/jbd2.h"
#include "testsupport.h"

/* The matrix: one allocator configuration per line. */
static const char *const prop_rows[] = {
    "alloc=blockmap",
    "alloc=reservation",
    "alloc=extent",
    "alloc=mballoc",
    "alloc=blockmap,data=ordered",
    "alloc=reservation,data=ordered",
    "alloc=extent,data=ordered",
    "alloc=mballoc,data=ordered",
    /* delayed allocation: placement at write-back, ENOSPC at write */
    "alloc=mballoc,delalloc",
    "alloc=mballoc,delalloc,data=ordered",
    "alloc=blockmap,delalloc",
};

/* Image geometries and seeds each row runs. */
struct prop_run {
	uint32_t bs;   /* block size, bytes */
	uint64_t size; /* image bytes */
	uint32_t seed; /* g_rand seed of the operation sequence */
	unsigned ops;  /* operations */
};

static const struct prop_run prop_runs[] = {
    {1024, 20u << 20, 1, 700}, /* 3 groups: the last short, no backup */
    {1024, 20u << 20, 2, 700}, /* ... */
    {1024, 20u << 20, 3, 700}, /* ... */
    {1024, 12u << 20, 4, 700}, /* 2 groups */
    {2048, 40u << 20, 5, 600}, /* 2 groups */
    {4096, 24u << 20, 6, 600}, /* 1 group */
    {4096, 24u << 20, 7, 600}, /* ... */
};

#define PROP_K 20     /* operations between checks */
#define PROP_SLOTS 6  /* files kept open and appended to */
#define PROP_SMALL 48 /* small files / symlinks in the directory */
#define PROP_JNL_BLOCKS 1024
#define PROP_MAX_WRITE_BLK 384
#define PROP_META UINT32_MAX /* owner of the filesystem's own blocks */
#define PROP_PA (UINT32_MAX - 1) /* held by an mballoc PA (checker only) */
#define PROP_MSG_MAX 12	     /* problems described in full */

/* ---- the RAM image ---- */

static bool opts_journaled(const char *opts)
{
	const char *d = strstr(opts, "data=");

	return d && strncmp(d, "data=none", 9) != 0;
}

/* A fresh image in memory (g_free it): simfs mkfs, plus a journal. */
static uint8_t *prop_mkimage(uint32_t bs, uint64_t size, bool journal)
{
	uint8_t *bytes = g_malloc0(size);
	struct sfs_bdev *bd = sfs_ramdev_wrap(bytes, size);
	struct sfs_mkfs_params p;
	char *err = NULL;

	sfs_mkfs_defaults(&p);
	p.block_size = bs;
	p.seed = 0x5EED;
	p.time = 1234567890;
	if (sfs_mkfs(bd, &p, &err))
		fail_msg("mkfs bs %u size %" PRIu64 ": %s", bs, size,
			 err ? err : "?");
	if (journal && sfs_jbd2_add_internal(bd, PROP_JNL_BLOCKS,
					     SFS_JBD2_PLACE_FIRST_FREE, &err))
		fail_msg("journal: %s", err ? err : "?");
	sfs_bdev_close(bd);
	return bytes;
}

/* The engine on the bytes (kept after close); *ram_out its RAM device. */
static struct sfs_fs *prop_mount(uint8_t *bytes, uint64_t size,
				 const char *opts, struct sfs_bdev **ram_out)
{
	struct sfs_config cfg;
	struct sfs_bdev *ram;
	struct sfs_fs *fs = NULL;
	char *err = NULL;
	char msg[256];

	sfs_config_defaults(&cfg);
	if (sfs_config_parse(&cfg, opts, NULL, &err)) {
		g_strlcpy(msg, err ? err : "?", sizeof(msg));
		g_free(err);
		fail_msg("options '%s': %s", opts, msg);
	}
	ram = sfs_ramdev_wrap(bytes, size);
	if (sfs_fs_open(ram, &cfg, &fs, &err)) {
		g_strlcpy(msg, err ? err : "?", sizeof(msg));
		g_free(err);
		fail_msg("open '%s': %s", opts, msg);
	}
	sfs_ramdev_clear_log(ram);
	if (ram_out)
		*ram_out = ram;
	return fs;
}

/* Save the image to a sparse file and run e2fsck -fn on it. */
static void prop_fsck(const uint8_t *bytes, uint64_t size, const char *what)
{
	char *dir = sfs_test_tmpdir();
	char *img = g_build_filename(dir, "prop.img", NULL);
	char *out = NULL;
	int fd = open(img, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	bool clean;

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	for (uint64_t off = 0; off < size; off += 4096) {
		static const uint8_t zero[4096];

		if (memcmp(bytes + off, zero, 4096) == 0)
			continue;
		assert_int_equal(pwrite(fd, bytes + off, 4096, (off_t)off),
				 4096);
	}
	close(fd);
	clean = sfs_test_fsck_clean(img, &out);
	if (!clean)
		print_error("%s: e2fsck -fn:\n%s\n", what, out ? out : "");
	g_free(out);
	sfs_test_rmtree(dir);
	g_free(img);
	g_free(dir);
	assert_true(clean);
}

/* ---- the checker ---- */

struct prop_report {
	unsigned problems;  /* property violations found */
	GString *msg;	    /* the first PROP_MSG_MAX, one per line */
	uint64_t owned;	    /* blocks claimed by metadata and inodes */
	uint64_t used;	    /* blocks set in the bitmaps */
	uint64_t extra;	    /* set in the bitmaps, owned by nobody */
	uint64_t pending;   /* frees waiting for a commit */
	uint64_t inodes;    /* in-use inodes walked */
	uint64_t pa_blocks; /* mballoc: blocks held by live PAs */
};

static void G_GNUC_PRINTF(2, 3)
    prop_problem(struct prop_report *r, const char *fmt, ...)
{
	va_list ap;

	if (r->problems++ >= PROP_MSG_MAX)
		return;
	va_start(ap, fmt);
	g_string_append_vprintf(r->msg, fmt, ap);
	va_end(ap);
	g_string_append_c(r->msg, '\n');
}

struct prop_claim {
	struct sfs_fs *fs;
	uint32_t *owner; /* per block: 0 free, an inode number, PROP_META */
	struct prop_report *r;
	uint32_t who;
	uint64_t n; /* blocks claimed by who */
};

static void prop_claim_run(struct prop_claim *c, sfs_blk_t start, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++) {
		sfs_blk_t b = start + i;

		if (b < c->fs->first_data_block || b >= c->fs->blocks_count) {
			prop_problem(
			    c->r, "owner %u: block %u outside the filesystem",
			    c->who, b);
			continue;
		}
		if (c->owner[b])
			prop_problem(c->r,
				     "block %u owned twice: by %u and by %u", b,
				     c->owner[b], c->who);
		else
			c->owner[b] = c->who;
		c->n++;
	}
}

static int prop_walk_cb(void *ctx, uint32_t lblk, sfs_blk_t pblk, uint32_t len,
			bool meta)
{
	(void)lblk;
	(void)meta;
	prop_claim_run(ctx, pblk, len);
	return 0;
}

/* Claim every block ip owns (map walk + xattr block); check i_blocks. */
static void prop_claim_inode(struct prop_claim *c, struct sfs_inode *ip)
{
	struct sfs_fs *fs = c->fs;
	uint32_t type = sfs_i_mode(ip) & SFS_S_IFMT;
	uint64_t sectors;
	int rc;

	c->who = ip->ino;
	c->n = 0;
	if (type == SFS_S_IFREG || type == SFS_S_IFDIR || type == SFS_S_IFLNK) {
		rc = sfs_imap(fs, ip)->walk(fs, ip, prop_walk_cb, c);
		if (rc)
			prop_problem(c->r, "inode %u: walk %d", ip->ino, rc);
	}
	if (ip->d.i_file_acl)
		prop_claim_run(c, sfs_le32(ip->d.i_file_acl), 1);
	/* the inode's own i_blocks (stat adds delayed blocks to it) */
	sectors = sfs_le32(ip->d.i_blocks);
	if (sfs_le32(fs->sb.s_feature_ro_compat) &
	    SFS_FEATURE_RO_COMPAT_HUGE_FILE)
		sectors |= (uint64_t)sfs_le16(ip->d.i_blocks_hi) << 32;
	if (sectors != c->n * (fs->bs / 512))
		prop_problem(c->r,
			     "inode %u: i_blocks %" PRIu64
			     " sectors, owns %" PRIu64 " blocks",
			     ip->ino, sectors, c->n);
	c->r->inodes++;
}

/* A reserved inode (journal): walk a copy read from the inode table. */
static void prop_claim_reserved(struct prop_claim *c, sfs_ino_t ino)
{
	struct sfs_fs *fs = c->fs;
	struct sfs_inode tmp = {0};
	struct sfs_buf *b;
	uint32_t off =
	    (uint32_t)(((uint64_t)(ino - 1) % fs->ipg * fs->inode_size) %
		       fs->bs);

	if (sfs_cache_get(fs->cache, sfs_inode_block(fs, ino), SFS_IO_INODE,
			  &b)) {
		prop_problem(c->r, "inode %u: cannot read", ino);
		return;
	}
	tmp.ino = ino;
	memcpy(&tmp.d, b->data + off, MIN(fs->inode_size, sizeof(tmp.d)));
	sfs_cache_put(fs->cache, b);
	if (ino == SFS_RESIZE_INO) {
		/* its DIND block; the reserved GDT blocks it maps are
		 * claimed as metadata */
		c->who = ino;
		if (tmp.d.i_block[SFS_DIND_BLOCK])
			prop_claim_run(
			    c, sfs_le32(tmp.d.i_block[SFS_DIND_BLOCK]), 1);
		return;
	}
	if (tmp.d.i_mode && tmp.d.i_links_count)
		prop_claim_inode(c, &tmp);
}

/* Superblock and GDT copies, reserved GDT, bitmaps, inode tables. */
static void prop_claim_meta(struct prop_claim *c)
{
	struct sfs_fs *fs = c->fs;
	bool sparse = sfs_le32(fs->sb.s_feature_ro_compat) &
		      SFS_FEATURE_RO_COMPAT_SPARSE_SUPER;

	c->who = PROP_META;
	for (uint32_t g = 0; g < fs->groups; g++) {
		if (sfs_group_has_super(g, sparse))
			prop_claim_run(c, sfs_group_first(fs, g),
				       1 + fs->desc_blocks + fs->reserved_gdt);
		prop_claim_run(c, sfs_le32(fs->gd[g].bg_block_bitmap), 1);
		prop_claim_run(c, sfs_le32(fs->gd[g].bg_inode_bitmap), 1);
		prop_claim_run(c, sfs_le32(fs->gd[g].bg_inode_table), fs->itb);
	}
}

static bool bit_is_set(const uint8_t *map, uint32_t i)
{
	return map[i >> 3] & (1u << (i & 7));
}

/* Every in-use inode of the inode bitmaps; group inode counts. */
static void prop_claim_inodes(struct prop_claim *c)
{
	struct sfs_fs *fs = c->fs;
	bool journal =
	    sfs_le32(fs->sb.s_feature_compat) & SFS_FEATURE_COMPAT_HAS_JOURNAL;
	sfs_ino_t jino = sfs_le32(fs->sb.s_journal_inum);

	for (uint32_t g = 0; g < fs->groups; g++) {
		struct sfs_buf *b;
		uint32_t free_i = 0;

		if (sfs_cache_get(fs->cache,
				  sfs_le32(fs->gd[g].bg_inode_bitmap),
				  SFS_IO_BITMAP, &b)) {
			prop_problem(c->r, "group %u: inode bitmap", g);
			continue;
		}
		for (uint32_t i = 0; i < fs->ipg; i++) {
			sfs_ino_t ino = g * fs->ipg + i + 1;
			struct sfs_inode *ip;

			if (!bit_is_set(b->data, i)) {
				free_i++;
				continue;
			}
			if (ino < SFS_FIRST_INO && ino != SFS_ROOT_INO) {
				if ((journal && ino == jino) ||
				    ino == SFS_RESIZE_INO)
					prop_claim_reserved(c, ino);
				continue;
			}
			if (sfs_iget(fs, ino, &ip)) {
				prop_problem(
				    c->r,
				    "inode %u: in the bitmap, not readable",
				    ino);
				continue;
			}
			prop_claim_inode(c, ip);
			sfs_iput(fs, ip);
		}
		sfs_cache_put(fs->cache, b);
		if (free_i != sfs_le16(fs->gd[g].bg_free_inodes_count))
			prop_problem(c->r,
				     "group %u: %u free inodes in the bitmap, "
				     "descriptor says %u",
				     g, free_i,
				     sfs_le16(fs->gd[g].bg_free_inodes_count));
	}
}

/* Bitmaps against the owners; group and filesystem free counts. */
static void prop_compare_bitmaps(struct prop_claim *c, uint64_t *free_out)
{
	struct sfs_fs *fs = c->fs;
	struct prop_report *r = c->r;
	uint64_t total_free = 0;

	for (uint32_t g = 0; g < fs->groups; g++) {
		sfs_blk_t first = sfs_group_first(fs, g);
		uint32_t nb = sfs_group_nblocks(fs, g), free_b = 0;
		struct sfs_buf *b;

		if (sfs_block_bitmap(fs, g, &b)) {
			prop_problem(r, "group %u: block bitmap", g);
			continue;
		}
		for (uint32_t i = 0; i < nb; i++) {
			bool used = bit_is_set(b->data, i);
			uint32_t who = c->owner[first + i];

			if (!used)
				free_b++;
			else
				r->used++;
			if (who && !used)
				prop_problem(
				    r,
				    "block %u: owned by %u, free in the bitmap",
				    first + i, who);
			if (!who && used) {
				if (r->extra < 4)
					g_string_append_printf(
					    r->msg,
					    "  (block %u set, no owner)\n",
					    first + i);
				r->extra++;
			}
		}
		for (uint32_t i = nb; i < fs->bpg; i++)
			if (!bit_is_set(b->data, i)) {
				prop_problem(
				    r, "group %u: padding bit %u clear", g, i);
				break;
			}
		sfs_cache_put(fs->cache, b);
		if (free_b != sfs_le16(fs->gd[g].bg_free_blocks_count))
			prop_problem(r,
				     "group %u: %u free blocks in the bitmap, "
				     "descriptor says %u",
				     g, free_b,
				     sfs_le16(fs->gd[g].bg_free_blocks_count));
		total_free += free_b;
	}
	if (total_free != fs->free_blocks)
		prop_problem(r,
			     "bitmaps have %" PRIu64
			     " free blocks, the filesystem counts %" PRIu64,
			     total_free, fs->free_blocks);
	*free_out = total_free;
}

/* A live PA's unused blocks: each must be free and claimed by no one. */
static int prop_claim_pa(void *ctx, sfs_blk_t start, uint32_t len,
			 sfs_ino_t owner)
{
	struct prop_claim *c = ctx;
	struct sfs_fs *fs = c->fs;

	if (start < fs->first_data_block || len > fs->blocks_count ||
	    start > fs->blocks_count - len)
		return -EINVAL;
	for (uint32_t i = 0; i < len; i++) {
		sfs_blk_t b = start + i;
		uint32_t g = sfs_blk_group(fs, b);
		struct sfs_buf *buf;
		uint32_t bit = b - sfs_group_first(fs, g);

		if (c->owner[b])
			prop_problem(c->r,
				     "block %u: in a PA of inode %u and owned "
				     "by %u",
				     b, owner, c->owner[b]);
		if (sfs_block_bitmap(fs, g, &buf) == 0) {
			if (bit_is_set(buf->data, bit))
				prop_problem(c->r,
					     "block %u: in a PA of inode %u but "
					     "used in the bitmap",
					     b, owner);
			sfs_cache_put(fs->cache, buf);
		}
		c->owner[b] = PROP_PA;
	}
	return 0;
}

/*
 * Check properties 1 and 2 on fs (not locked by the caller).  The
 * bitmaps must hold exactly the owned blocks plus the pending frees.
 * Violations are counted and described in r (free r->msg).
 */
static void prop_check(struct sfs_fs *fs, struct prop_report *r)
{
	struct prop_claim c = {.fs = fs, .r = r};
	struct sfs_mballoc_counters mc;
	uint64_t free_b = 0;

	memset(r, 0, sizeof(*r));
	r->msg = g_string_new(NULL);
	sfs_lock(fs);
	c.owner = g_new0(uint32_t, fs->blocks_count);
	prop_claim_meta(&c);
	prop_claim_inodes(&c);
	for (sfs_blk_t b = 0; b < fs->blocks_count; b++)
		r->owned += c.owner[b] != 0;
	prop_compare_bitmaps(&c, &free_b);
	r->pending = fs->jnl ? sfs_jnl_pending_free(fs->jnl) : 0;
	if (r->extra != r->pending)
		prop_problem(
		    r,
		    "%" PRIu64
		    " blocks set in the bitmaps with no owner, %" PRIu64
		    " frees pending",
		    r->extra, r->pending);
	if (sfs_alloc_is(fs->alloc, "mballoc")) {
		/* every PA's unused blocks: free on disk, owned by nobody,
		 * in no other PA */
		if (sfs_mballoc_pa_walk(fs->alloc, prop_claim_pa, &c))
			prop_problem(r, "mballoc: PA outside the filesystem");
		if (sfs_mballoc_check(fs->alloc, &mc))
			prop_problem(r, "mballoc: buddy != bitmap + PAs");
		r->pa_blocks = mc.pa_blocks_live;
		if (mc.pa_blocks_live > free_b)
			prop_problem(r,
				     "mballoc: PAs hold %" PRIu64
				     " blocks, %" PRIu64 " free",
				     mc.pa_blocks_live, free_b);
	}
	/* delalloc: the reserve is always covered by free blocks, and the
	 * blocks that were placed never failed */
	if (sfs_da_reserved(fs) > fs->free_blocks)
		prop_problem(r,
			     "delalloc: %" PRIu64 " blocks reserved, %" PRIu64
			     " free",
			     sfs_da_reserved(fs), fs->free_blocks);
	if (fs->da_ctr.failed_blocks)
		prop_problem(r, "delalloc: %" PRIu64 " blocks failed to place",
			     fs->da_ctr.failed_blocks);
	if (sfs_alloc_is(fs->alloc, "reservation") &&
	    sfs_reservation_check(fs->alloc, NULL))
		prop_problem(r, "reservation: window set broken");
	if (fs->error)
		prop_problem(r, "the filesystem is in the error state");
	sfs_unlock(fs);
	g_free(c.owner);
}

/* prop_check and fail with the report unless clean; out (may be NULL)
 * gets the report (its msg freed). */
static void prop_assert_ok(struct sfs_fs *fs, const char *what,
			   struct prop_report *out)
{
	struct prop_report r;

	prop_check(fs, &r);
	if (out)
		*out = r;
	if (r.problems)
		print_error("%s: %u problems:\n%s", what, r.problems,
			    r.msg->str);
	g_string_free(r.msg, TRUE);
	assert_int_equal(r.problems, 0);
}

/* ---- the random workload ---- */

struct prop_slot {
	sfs_ino_t ino; /* 0: no file */
	bool open;
	uint64_t size; /* bytes, as the engine reports it */
	bool xattr;
};

struct prop_state {
	struct sfs_fs *fs;
	GRand *rand;
	uint32_t bs;
	const char *opts;
	uint32_t seed;
	sfs_ino_t dir; /* directory of the small files */
	struct prop_slot s[PROP_SLOTS];
	unsigned gen[PROP_SLOTS]; /* names: f<slot>.<gen> */
	bool small[PROP_SMALL];	  /* s<i> exists in dir */
	GArray *orphans;	  /* unlinked, still open: sfs_ino_t */
	uint8_t *buf;		  /* write source */
	/* what happened */
	unsigned op;	/* current operation number */
	unsigned churn; /* ops left before filling again */
	unsigned enospc;
	unsigned checks;
	unsigned orphaned; /* unlinked while open */
	uint64_t min_free;
	uint64_t max_pending; /* frees waiting for a commit */
	uint64_t max_pa;      /* blocks in mballoc PAs */
};

static void prop_rc(struct prop_state *st, int rc, bool enospc_ok,
		    const char *what)
{
	if (rc == -ENOSPC && enospc_ok) {
		st->enospc++;
		st->churn = (unsigned)g_rand_int_range(st->rand, 20, 80);
		return;
	}
	if (rc)
		fail_msg("%s seed %u op %u: %s: %s", st->opts, st->seed, st->op,
			 what, g_strerror(-rc));
}

static int rnd(struct prop_state *st, int lo, int hi) /* [lo, hi] */
{
	return g_rand_int_range(st->rand, lo, hi + 1);
}

static uint64_t size_of(struct prop_state *st, sfs_ino_t ino)
{
	struct sfs_attr a;

	assert_int_equal(sfs_getattr(st->fs, ino, &a), 0);
	return a.size;
}

static void slot_create(struct prop_state *st, int i)
{
	struct prop_slot *s = &st->s[i];
	struct sfs_attr a;
	char name[32];
	int rc;

	snprintf(name, sizeof(name), "f%d.%u", i, st->gen[i]++);
	rc = sfs_mknod(st->fs, SFS_ROOT_INO, name, SFS_S_IFREG | 0644, 0, 0, 0,
		       &a);
	prop_rc(st, rc, true, "mknod");
	if (rc)
		return;
	*s = (struct prop_slot){.ino = a.ino};
	prop_rc(st, sfs_open(st->fs, s->ino, O_RDWR), false, "open");
	s->open = true;
}

static void slot_write(struct prop_state *st, int i, uint64_t off, size_t len)
{
	struct prop_slot *s = &st->s[i];
	size_t done = 0;
	int rc;

	if (!s->open) {
		prop_rc(st, sfs_open(st->fs, s->ino, O_RDWR), false, "open");
		s->open = true;
	}
	memset(st->buf, (int)(st->op & 0xff) | 1, len);
	rc = sfs_write(st->fs, s->ino, off, st->buf, len, &done);
	prop_rc(st, rc, true, "write");
	if (!rc)
		assert_int_equal(done, len);
	s->size = size_of(st, s->ino);
	assert_true(s->size >= (rc ? 0 : off + len));
}

static void slot_truncate(struct prop_state *st, int i, uint64_t size)
{
	struct prop_slot *s = &st->s[i];
	struct sfs_attr in = {.size = size}, out;
	int rc = sfs_setattr(st->fs, s->ino, &in, SFS_SET_SIZE, &out);

	/* growing allocates nothing; shrinking frees */
	prop_rc(st, rc, size > s->size, "truncate");
	if (!rc)
		assert_int_equal(out.size, size);
	s->size = size_of(st, s->ino);
}

static void slot_unlink(struct prop_state *st, int i)
{
	struct prop_slot *s = &st->s[i];
	char name[32];

	snprintf(name, sizeof(name), "f%d.%u", i, st->gen[i] - 1);
	if (s->open && g_rand_boolean(st->rand)) {
		/* keep it open: freed at its last release */
		g_array_append_val(st->orphans, s->ino);
		st->orphaned++;
	} else if (s->open) {
		prop_rc(st, sfs_release(st->fs, s->ino), false, "release");
	}
	prop_rc(st, sfs_unlink(st->fs, SFS_ROOT_INO, name), false, "unlink");
	*s = (struct prop_slot){0};
}

static void slot_xattr(struct prop_state *st, int i)
{
	struct prop_slot *s = &st->s[i];
	int rc;

	if (s->xattr && g_rand_boolean(st->rand)) {
		prop_rc(st, sfs_removexattr(st->fs, s->ino, "user.prop"), false,
			"removexattr");
		s->xattr = false;
		return;
	}
	size_t len = (size_t)rnd(st, 100, 600);
	memset(st->buf, 'x', len);
	rc = sfs_setxattr(st->fs, s->ino, "user.prop", st->buf, len, 0);
	prop_rc(st, rc, true, "setxattr");
	if (!rc)
		s->xattr = true;
}

/* A small file (1-3 blocks, closed at once) or a slow symlink in the
 * directory, or remove one. */
static void small_churn(struct prop_state *st)
{
	int k = rnd(st, 0, PROP_SMALL - 1);
	char name[32];
	struct sfs_attr a;
	int rc;

	snprintf(name, sizeof(name), "s%d", k);
	if (st->small[k]) {
		prop_rc(st, sfs_unlink(st->fs, st->dir, name), false,
			"unlink small");
		st->small[k] = false;
		return;
	}
	if (k % 5 == 0) {
		char target[400];
		size_t len = (size_t)rnd(st, 80, (int)sizeof(target) - 1);

		memset(target, 't', len);
		target[len] = '\0';
		rc = sfs_symlink(st->fs, st->dir, name, target, 0, 0, &a);
		prop_rc(st, rc, true, "symlink");
		st->small[k] = rc == 0;
		return;
	}
	rc = sfs_mknod(st->fs, st->dir, name, SFS_S_IFREG | 0644, 0, 0, 0, &a);
	prop_rc(st, rc, true, "mknod small");
	if (rc)
		return;
	st->small[k] = true;
	prop_rc(st, sfs_open(st->fs, a.ino, O_WRONLY), false, "open small");
	size_t len = (size_t)rnd(st, 1, 3 * (int)st->bs);
	size_t done;
	memset(st->buf, 's', len);
	prop_rc(st, sfs_write(st->fs, a.ino, 0, st->buf, len, &done), true,
		"write small");
	prop_rc(st, sfs_release(st->fs, a.ino), false, "release small");
}

/* One random operation. */
static void prop_step(struct prop_state *st)
{
	int i = rnd(st, 0, PROP_SLOTS - 1);
	struct prop_slot *s = &st->s[i];
	int op = rnd(st, 0, 99);
	uint32_t bs = st->bs;

	/* fill until -ENOSPC, then churn for a while, then fill again */
	if (st->churn)
		st->churn--;
	else if (op < 88 && rnd(st, 0, 99) < 60)
		op = rnd(st, 30, 44); /* a large append */

	if (op >= 88) { /* not about the slots */
		if (op < 96)
			small_churn(st);
		else if (op < 98)
			prop_rc(st, sfs_fs_sync(st->fs), false, "sync");
		else if (s->ino && s->open)
			prop_rc(st, sfs_fsync(st->fs, s->ino, false), false,
				"fsync");
		return;
	}
	if (!s->ino) {
		slot_create(st, i);
		return;
	}
	if (op < 30) { /* small append */
		slot_write(st, i, s->size, (size_t)rnd(st, 1, 3 * (int)bs));
	} else if (op < 45) { /* large append */
		size_t n = (size_t)rnd(st, 16, PROP_MAX_WRITE_BLK);
		slot_write(st, i, s->size, n * bs - (size_t)rnd(st, 0, 1));
	} else if (op < 51) { /* sparse write past the end */
		uint64_t gap = (uint64_t)rnd(st, 1, 600) * bs + rnd(st, 0, 99);
		slot_write(st, i, s->size + gap,
			   (size_t)rnd(st, 1, 8 * (int)bs));
	} else if (op < 56) { /* overwrite or fill a hole inside */
		uint64_t off =
		    s->size ? g_rand_int_range(st->rand, 0,
					       (gint32)MIN(s->size, G_MAXINT32))
			    : 0;
		slot_write(st, i, off, (size_t)rnd(st, 1, 4 * (int)bs));
	} else if (op < 63) { /* shrink */
		uint64_t to =
		    s->size ? g_rand_int_range(st->rand, 0,
					       (gint32)MIN(s->size, G_MAXINT32))
			    : 0;
		if (g_rand_boolean(st->rand))
			to -= to % bs; /* block-aligned */
		slot_truncate(st, i, to);
	} else if (op < 67) { /* grow */
		slot_truncate(st, i,
			      s->size + (uint64_t)rnd(st, 1, 1000) * bs +
				  (uint64_t)rnd(st, 0, 1));
	} else if (op < 74) { /* close or reopen */
		if (s->open)
			prop_rc(st, sfs_release(st->fs, s->ino), false,
				"release");
		else
			prop_rc(st, sfs_open(st->fs, s->ino, O_RDWR), false,
				"open");
		s->open = !s->open;
	} else if (op < 81) {
		slot_unlink(st, i);
	} else {
		slot_xattr(st, i);
	}
}

/* Close every file and every orphan. */
static void prop_close_all(struct prop_state *st)
{
	for (int i = 0; i < PROP_SLOTS; i++)
		if (st->s[i].ino && st->s[i].open) {
			prop_rc(st, sfs_release(st->fs, st->s[i].ino), false,
				"release");
			st->s[i].open = false;
		}
	for (guint k = 0; k < st->orphans->len; k++)
		prop_rc(st,
			sfs_release(st->fs,
				    g_array_index(st->orphans, sfs_ino_t, k)),
			false, "release orphan");
	g_array_set_size(st->orphans, 0);
}

/* Property 3's allocator half: nothing held per inode once all closed. */
static void prop_assert_released(struct prop_state *st)
{
	struct sfs_fs *fs = st->fs;

	sfs_lock(fs);
	if (sfs_alloc_is(fs->alloc, "mballoc")) {
		struct sfs_mballoc_counters mc;

		assert_int_equal(sfs_mballoc_check(fs->alloc, &mc), 0);
		/* the locality group's PA may stay; no inode PA does */
		if (mc.pas_live > 1)
			fail_msg("%s seed %u: %" PRIu64
				 " PAs live after the last close",
				 st->opts, st->seed, mc.pas_live);
	}
	if (sfs_alloc_is(fs->alloc, "reservation")) {
		struct sfs_rsv_counters rc;

		assert_int_equal(sfs_reservation_check(fs->alloc, &rc), 0);
		assert_int_equal(rc.windows_live, 0);
	}
	sfs_unlock(fs);
}

/* Totals of one row, over its runs. */
struct prop_totals {
	unsigned ops, enospc, checks, orphaned;
	uint64_t discard_all, pas_made, windows, max_pending, max_pa;
	uint64_t da_placed, da_enospc, da_died; /* delalloc rows */
};

static void prop_one_run(const char *opts, const struct prop_run *run,
			 struct prop_totals *tot)
{
	bool journal = opts_journaled(opts);
	uint8_t *bytes = prop_mkimage(run->bs, run->size, journal);
	struct prop_state st = {
	    .rand = g_rand_new_with_seed(run->seed),
	    .bs = run->bs,
	    .opts = opts,
	    .seed = run->seed,
	    .orphans = g_array_new(FALSE, FALSE, sizeof(sfs_ino_t)),
	    .buf = g_malloc((size_t)PROP_MAX_WRITE_BLK * run->bs),
	    .min_free = UINT64_MAX,
	};
	struct sfs_bdev *ram;
	struct sfs_attr a;
	struct prop_report r;
	char what[128];

	st.fs = prop_mount(bytes, run->size, opts, &ram);
	assert_int_equal(sfs_mkdir(st.fs, SFS_ROOT_INO, "d", 0755, 0, 0, &a),
			 0);
	st.dir = a.ino;
	prop_assert_ok(st.fs, "fresh", NULL);
	for (st.op = 1; st.op <= run->ops; st.op++) {
		prop_step(&st);
		if (st.op % PROP_K == 0) {
			snprintf(what, sizeof(what), "%s seed %u op %u", opts,
				 run->seed, st.op);
			prop_assert_ok(st.fs, what, &r);
			st.checks++;
			st.max_pending = MAX(st.max_pending, r.pending);
			st.max_pa = MAX(st.max_pa, r.pa_blocks);
			sfs_ramdev_clear_log(ram);
		}
		sfs_lock(st.fs);
		st.min_free = MIN(st.min_free, sfs_free_blocks(st.fs));
		sfs_unlock(st.fs);
	}
	snprintf(what, sizeof(what), "%s seed %u end", opts, run->seed);
	prop_assert_ok(st.fs, what, NULL);

	/* 3. close everything: per-inode state is gone */
	prop_close_all(&st);
	prop_assert_released(&st);
	prop_assert_ok(st.fs, what, NULL);
	assert_int_equal(sfs_fs_sync(st.fs), 0);
	{
		prop_assert_ok(st.fs, what, &r);
		assert_int_equal(r.pending, 0);
		assert_int_equal(r.extra, 0);
		sfs_lock(st.fs);
		assert_int_equal(sfs_le32(st.fs->sb.s_free_blocks_count),
				 st.fs->free_blocks);
		sfs_unlock(st.fs);
	}
	sfs_lock(st.fs);
	if (sfs_alloc_is(st.fs->alloc, "mballoc")) {
		struct sfs_mballoc_counters mc;

		sfs_mballoc_check(st.fs->alloc, &mc);
		tot->discard_all += mc.discard_all;
		tot->pas_made += mc.pas_made;
	}
	if (sfs_alloc_is(st.fs->alloc, "reservation")) {
		struct sfs_rsv_counters rc;

		sfs_reservation_check(st.fs->alloc, &rc);
		tot->windows += rc.windows_made;
	}
	/* delalloc: nothing left delayed after sync */
	assert_int_equal(sfs_da_reserved(st.fs), 0);
	tot->da_placed += st.fs->da_ctr.placed_blocks;
	tot->da_enospc += st.fs->da_ctr.enospc;
	tot->da_died += st.fs->da_ctr.died_blocks;
	sfs_unlock(st.fs);
	assert_int_equal(sfs_fs_close(st.fs), 0);

	/* the image alone: bitmaps = metadata + maps, exactly */
	st.fs = prop_mount(bytes, run->size, opts, NULL);
	snprintf(what, sizeof(what), "%s seed %u reopened", opts, run->seed);
	{
		prop_assert_ok(st.fs, what, &r);
		assert_int_equal(r.extra, 0);
		sfs_lock(st.fs);
		assert_int_equal(sfs_le32(st.fs->sb.s_free_blocks_count),
				 st.fs->free_blocks);
		sfs_unlock(st.fs);
	}
	assert_int_equal(sfs_fs_close(st.fs), 0);
	prop_fsck(bytes, run->size, what);

	print_message(
	    "# %s bs %u seed %u: %u ops, %u -ENOSPC, min free %" PRIu64
	    ", %u checks, %u orphans, max pending %" PRIu64
	    ", max PA blocks %" PRIu64 "\n",
	    opts, run->bs, run->seed, run->ops, st.enospc, st.min_free,
	    st.checks, st.orphaned, st.max_pending, st.max_pa);
	tot->orphaned += st.orphaned;
	tot->max_pending = MAX(tot->max_pending, st.max_pending);
	tot->max_pa = MAX(tot->max_pa, st.max_pa);
	tot->ops += run->ops;
	tot->enospc += st.enospc;
	tot->checks += st.checks;
	g_array_free(st.orphans, TRUE);
	g_free(st.buf);
	g_rand_free(st.rand);
	g_free(bytes);
}

/*
 * $SFS_ALLOCPROP_SEEDS: a comma-separated list of prop_runs[] seeds to run
 * (unset: all).  tests/run-all.sh runs 1,4,5,6 under ASan: every block
 * size and group layout, fewer repetitions.  True if run k is selected;
 * an unknown seed or a bad list fails the test.
 */
static bool prop_run_selected(size_t k)
{
	const char *env = g_getenv("SFS_ALLOCPROP_SEEDS");
	char **seeds;
	bool sel = false;

	if (!env)
		return true;
	seeds = g_strsplit(env, ",", -1);
	for (char **s = seeds; *s; s++) {
		guint64 v;
		bool known = false;

		if (!g_ascii_string_to_unsigned(*s, 10, 1, UINT32_MAX, &v,
						NULL))
			fail_msg("SFS_ALLOCPROP_SEEDS: '%s' is not a seed", *s);
		for (size_t j = 0; j < G_N_ELEMENTS(prop_runs); j++)
			known |= prop_runs[j].seed == v;
		if (!known)
			fail_msg("SFS_ALLOCPROP_SEEDS: no run has seed %s", *s);
		sel |= prop_runs[k].seed == v;
	}
	g_strfreev(seeds);
	return sel;
}

/* One matrix row: every run; the sequences reached -ENOSPC. */
static void test_allocprop_row(void **state)
{
	const char *opts = *state;
	struct prop_totals tot = {0};

	for (size_t k = 0; k < G_N_ELEMENTS(prop_runs); k++)
		if (prop_run_selected(k))
			prop_one_run(opts, &prop_runs[k], &tot);
	print_message(
	    "# %s: %u ops, %u checks, %u -ENOSPC, discard_all %" PRIu64
	    ", pas %" PRIu64 ", windows %" PRIu64 "\n",
	    opts, tot.ops, tot.checks, tot.enospc, tot.discard_all,
	    tot.pas_made, tot.windows);
	/* the workload did what it is for: full, and ENOSPC survived */
	assert_true(tot.enospc > 0);
	assert_true(tot.orphaned > 0);
	/* journaled: some checks ran with frees waiting for the commit */
	if (opts_journaled(opts))
		assert_true(tot.max_pending > 0);
	/* mballoc: some with PAs live; ENOSPC discarded PAs */
	if (strstr(opts, "alloc=mballoc"))
		assert_true(tot.pas_made > 0 && tot.discard_all > 0 &&
			    tot.max_pa > 0);
	if (strstr(opts, "alloc=reservation"))
		assert_true(tot.windows > 0);
	/* delalloc: blocks placed at write-back, some died unplaced, and
	 * ENOSPC came from a failed reservation */
	if (strstr(opts, "delalloc"))
		assert_true(tot.da_placed > 0 && tot.da_died > 0 &&
			    tot.da_enospc > 0);
}

/* The checker itself: each injected fault is reported, and undone. */
static void test_allocprop_detects_corruption(void **state)
{
	const uint64_t size = 8u << 20;
	uint8_t *bytes = prop_mkimage(1024, size, false);
	struct sfs_fs *fs = prop_mount(bytes, size, "alloc=blockmap", NULL);
	struct prop_report r;
	struct sfs_attr a, b;
	struct sfs_inode *ia, *ib;
	struct sfs_buf *bm;
	uint8_t buf[4096];
	size_t done;
	sfs_blk_t pa, free_blk = 0;
	uint32_t bit;

	(void)state;
	memset(buf, 7, sizeof(buf));
	assert_int_equal(
	    sfs_mknod(fs, SFS_ROOT_INO, "a", SFS_S_IFREG | 0644, 0, 0, 0, &a),
	    0);
	assert_int_equal(
	    sfs_mknod(fs, SFS_ROOT_INO, "b", SFS_S_IFREG | 0644, 0, 0, 0, &b),
	    0);
	assert_int_equal(sfs_write(fs, a.ino, 0, buf, 4096, &done), 0);
	assert_int_equal(sfs_write(fs, b.ino, 0, buf, 4096, &done), 0);
	prop_assert_ok(fs, "clean", NULL);

	sfs_lock(fs);
	assert_int_equal(sfs_iget(fs, a.ino, &ia), 0);
	assert_int_equal(sfs_iget(fs, b.ino, &ib), 0);
	pa = sfs_le32(ia->d.i_block[0]);
	assert_true(pa != 0);
	/* a free block: the last of group 0 */
	free_blk = sfs_group_first(fs, 0) + sfs_group_nblocks(fs, 0) - 1;
	sfs_unlock(fs);

	/* 1. a free block set in the bitmap */
	sfs_lock(fs);
	assert_int_equal(sfs_block_bitmap(fs, 0, &bm), 0);
	bit = free_blk - sfs_group_first(fs, 0);
	assert_false(bit_is_set(bm->data, bit));
	bm->data[bit >> 3] ^= (uint8_t)(1u << (bit & 7));
	sfs_unlock(fs);
	prop_check(fs, &r);
	assert_true(r.problems > 0);
	assert_int_equal(r.extra, 1);
	g_string_free(r.msg, TRUE);
	sfs_lock(fs);
	bm->data[bit >> 3] ^= (uint8_t)(1u << (bit & 7));
	sfs_unlock(fs);

	/* 2. a file's block clear in the bitmap */
	sfs_lock(fs);
	bit = pa - sfs_group_first(fs, 0);
	assert_true(bit_is_set(bm->data, bit));
	bm->data[bit >> 3] ^= (uint8_t)(1u << (bit & 7));
	sfs_unlock(fs);
	prop_check(fs, &r);
	assert_true(r.problems > 0);
	assert_non_null(strstr(r.msg->str, "free in the bitmap"));
	g_string_free(r.msg, TRUE);
	sfs_lock(fs);
	bm->data[bit >> 3] ^= (uint8_t)(1u << (bit & 7));
	sfs_cache_put(fs->cache, bm);
	sfs_unlock(fs);
	prop_assert_ok(fs, "bitmap restored", NULL);

	/* 3. one block in two files (b's block 0 pointed at a's) */
	sfs_lock(fs);
	uint32_t saved = ib->d.i_block[0];
	ib->d.i_block[0] = sfs_cpu_to_le32(pa);
	sfs_unlock(fs);
	prop_check(fs, &r);
	assert_non_null(strstr(r.msg->str, "owned twice"));
	g_string_free(r.msg, TRUE);
	sfs_lock(fs);
	ib->d.i_block[0] = saved;
	sfs_unlock(fs);

	/* 4. a group descriptor's free count off by one */
	sfs_lock(fs);
	uint16_t fb = sfs_le16(fs->gd[0].bg_free_blocks_count);
	fs->gd[0].bg_free_blocks_count = sfs_cpu_to_le16((uint16_t)(fb - 1));
	sfs_unlock(fs);
	prop_check(fs, &r);
	assert_non_null(strstr(r.msg->str, "descriptor says"));
	g_string_free(r.msg, TRUE);
	sfs_lock(fs);
	fs->gd[0].bg_free_blocks_count = sfs_cpu_to_le16(fb);
	sfs_iput(fs, ia);
	sfs_iput(fs, ib);
	sfs_unlock(fs);

	prop_assert_ok(fs, "all restored", NULL);
	assert_int_equal(sfs_fs_close(fs), 0);
	prop_fsck(bytes, size, "corruption test");
	g_free(bytes);
}

int main(void)
{
	size_t n = G_N_ELEMENTS(prop_rows);
	struct CMUnitTest *tests = g_new0(struct CMUnitTest, n + 1);
	char **names = g_new0(char *, n + 1);
	int rc;

	tests[0] = (struct CMUnitTest)cmocka_unit_test(
	    test_allocprop_detects_corruption);
	for (size_t k = 0; k < n; k++) {
		names[k] =
		    g_strdup_printf("test_allocprop_row(%s)", prop_rows[k]);
		tests[k + 1] = (struct CMUnitTest){
		    .name = names[k],
		    .test_func = test_allocprop_row,
		    .initial_state = (void *)prop_rows[k],
		};
	}
	rc =
	    _cmocka_run_group_tests("test_allocprop", tests, n + 1, NULL, NULL);
	g_strfreev(names);
	g_free(tests);
	return rc;
}
