/*
 * test_mkfs.c - simfs mkfs against the real tools.
 *
 * For 1, 2 and 4 KiB blocks and 16 MiB, 64 MiB, 300 MiB (short last
 * group), 128 MiB + 256 KiB (last group cut off) and 1 GiB: the image
 * passes `e2fsck -fn` cleanly, and `mke2fs -t ext2 -b BS -I ISIZE -i RATIO
 * -m PCT -O none,sparse_super,filetype,large_file,ext_attr` given the same
 * UUID, hash seed and time (E2FSPROGS_FAKE_TIME) makes the same filesystem:
 * every `dumpe2fs` header field and per-group field (layout, free counts,
 * free ranges) is equal, `debugfs stat` of inodes 1, 2, 7 and 11 is equal,
 * and the two images are byte-identical (once s_kbytes_written, which
 * mke2fs adds its own I/O to, is copied over: take_kbytes_written).
 * With group descriptor checksums (plain -t ext4: metadata_csum; -O
 * uninit_bg on ext3 and ext4), a table of cases (test_mkfs_csum_matches_
 * mke2fs: sizes up to a 3 GiB sparse file, -b, -G, ^64bit) is compared the
 * same way, journal included (sfs_mkfs lays it out itself there); the
 * engine mounts such images read-write, writes files, and e2fsck stays
 * clean.
 * Also: a 1 TiB sparse image, rejected parameters (one-line message, device
 * untouched), determinism from the seed, zeroing only when the device is
 * not known to be zero, whole-device rounding, a used (garbage) device.
 *
 * mke2fs runs with a private mke2fs.conf (the stock defaults) so the host's
 * configuration cannot change the comparison.  All files live in a private
 * temp directory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "csum.h"
#include "format.h"
#include "fs.h"
#include "fs_priv.h"
#include "mkfs.h"
#include "models/journal/jbd2.h"
#include "testsupport.h"

#define MK_TIME 1700000000u
#define MiB (1ull << 20)

static const char mke2fs_conf[] =
    "[defaults]\n"
    "\tbase_features = sparse_super,large_file,filetype,resize_inode,"
    "dir_index,ext_attr\n"
    "\tdefault_mntopts = acl,user_xattr\n"
    "\tenable_periodic_fsck = 0\n"
    "\tblocksize = 4096\n"
    "\tinode_size = 256\n"
    "\tinode_ratio = 16384\n"
    "\n[fs_types]\n"
    "\text3 = {\n\t\tfeatures = has_journal\n\t}\n"
    "\text4 = {\n\t\tfeatures = has_journal,extent,huge_file,flex_bg,"
    "metadata_csum,64bit,dir_nlink,extra_isize\n\t}\n"
    "\tsmall = {\n\t\tblocksize = 1024\n\t\tinode_ratio = 4096\n\t}\n"
    "\tfloppy = {\n\t\tblocksize = 1024\n\t\tinode_ratio = 8192\n\t}\n"
    "\tbig = {\n\t\tinode_ratio = 32768\n\t}\n"
    "\thuge = {\n\t\tinode_ratio = 65536\n\t}\n";

struct fixture {
	char *dir;
	char *conf; /* private mke2fs.conf */
};

static int setup(void **state)
{
	struct fixture *f = g_new0(struct fixture, 1);

	f->dir = sfs_test_tmpdir();
	f->conf = g_build_filename(f->dir, "mke2fs.conf", NULL);
	if (!g_file_set_contents(f->conf, mke2fs_conf, -1, NULL))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	sfs_test_rmtree(f->dir);
	g_free(f->conf);
	g_free(f->dir);
	g_free(f);
	return 0;
}

/* ---- running the e2fsprogs tools ---- */

static char *find_tool(const char *name)
{
	char *p = g_find_program_in_path(name);

	if (!p) {
		char *s = g_build_filename("/usr/sbin", name, NULL);

		if (g_file_test(s, G_FILE_TEST_IS_EXECUTABLE))
			return s;
		g_free(s);
		s = g_build_filename("/sbin", name, NULL);
		if (g_file_test(s, G_FILE_TEST_IS_EXECUTABLE))
			return s;
		g_free(s);
		fail_msg("%s not found", name);
	}
	return p;
}

/* Run argv (argv[0] a tool name); returns stdout, fails on non-zero exit. */
static char *run(const char *const *args, const char *conf)
{
	GPtrArray *argv = g_ptr_array_new_with_free_func(g_free);
	char **envp = g_get_environ();
	char *out = NULL, *err = NULL;
	GError *gerr = NULL;
	int status;

	g_ptr_array_add(argv, find_tool(args[0]));
	for (int i = 1; args[i]; i++)
		g_ptr_array_add(argv, g_strdup(args[i]));
	g_ptr_array_add(argv, NULL);
	envp = g_environ_setenv(envp, "LC_ALL", "C", TRUE);
	envp = g_environ_setenv(envp, "E2FSPROGS_FAKE_TIME",
				G_STRINGIFY(MK_TIME), TRUE);
	if (conf)
		envp = g_environ_setenv(envp, "MKE2FS_CONFIG", conf, TRUE);
	if (!g_spawn_sync(NULL, (char **)argv->pdata, envp, G_SPAWN_DEFAULT,
			  NULL, NULL, &out, &err, &status, &gerr))
		fail_msg("cannot run %s: %s", args[0], gerr->message);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("%s failed (status %d): %s", args[0], status, err);
	g_free(err);
	g_strfreev(envp);
	g_ptr_array_free(argv, TRUE);
	return out;
}

/* ---- dumpe2fs, parsed ---- */

struct dgroup {
	uint64_t first, last;	   /* "Group N: (Blocks A-B)" */
	uint64_t bb, ib, it0, it1; /* bitmaps, inode table range */
	uint64_t free_b, free_i, dirs;
	char *super;	   /* superblock/GDT line, or NULL */
	char *free_blocks; /* "Free blocks:" ranges */
	char *free_inodes;
};

struct dump {
	GHashTable *hdr; /* key -> value */
	GArray *groups;	 /* struct dgroup */
};

static void dump_free(struct dump *d)
{
	for (guint i = 0; i < d->groups->len; i++) {
		struct dgroup *g = &g_array_index(d->groups, struct dgroup, i);

		g_free(g->super);
		g_free(g->free_blocks);
		g_free(g->free_inodes);
	}
	g_array_free(d->groups, TRUE);
	g_hash_table_destroy(d->hdr);
}

static void parse_dump(const char *text, struct dump *d)
{
	char **lines = g_strsplit(text, "\n", -1);
	struct dgroup *g = NULL;
	bool in_groups = false;

	d->hdr = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	d->groups = g_array_new(FALSE, TRUE, sizeof(struct dgroup));
	for (char **lp = lines; *lp; lp++) {
		char *l = g_strstrip(*lp);
		unsigned long long a, b, c;
		unsigned n;

		if (sscanf(l, "Group %u: (Blocks %llu-%llu)", &n, &a, &b) ==
		    3) {
			struct dgroup z = {.first = a, .last = b};

			assert_int_equal(n, d->groups->len);
			g_array_append_val(d->groups, z);
			g = &g_array_index(d->groups, struct dgroup, n);
			in_groups = true;
			continue;
		}
		if (!in_groups) {
			char *colon = strchr(l, ':');

			if (colon && colon != l) {
				char *key = g_strndup(l, colon - l);
				char *val = g_strstrip(g_strdup(colon + 1));

				g_hash_table_replace(d->hdr, key, val);
			}
			continue;
		}
		if (!g || !l[0])
			continue;
		if (g_str_has_prefix(l, "Primary superblock") ||
		    g_str_has_prefix(l, "Backup superblock"))
			g->super = g_strdup(l);
		else if (sscanf(l, "Block bitmap at %llu", &a) == 1)
			g->bb = a;
		else if (sscanf(l, "Inode bitmap at %llu", &a) == 1)
			g->ib = a;
		else if (sscanf(l, "Inode table at %llu-%llu", &a, &b) == 2) {
			g->it0 = a;
			g->it1 = b;
		} else if (sscanf(l,
				  "%llu free blocks, %llu free inodes, "
				  "%llu directories",
				  &a, &b, &c) == 3) {
			g->free_b = a;
			g->free_i = b;
			g->dirs = c;
		} else if (g_str_has_prefix(l, "Free blocks:"))
			g->free_blocks = g_strdup(g_strstrip(l + 12));
		else if (g_str_has_prefix(l, "Free inodes:"))
			g->free_inodes = g_strdup(g_strstrip(l + 12));
	}
	g_strfreev(lines);
}

static char *dumpe2fs(const char *img)
{
	const char *args[] = {"dumpe2fs", img, NULL};

	return run(args, NULL);
}

static const char *hdr(struct dump *d, const char *key)
{
	const char *v = g_hash_table_lookup(d->hdr, key);

	if (!v)
		fail_msg("dumpe2fs header has no '%s'", key);
	return v;
}

#define CHECK_EQ_U(ctx, what, a, b)                                            \
	do {                                                                   \
		if ((a) != (b))                                                \
			fail_msg("%s: %s is %llu, mke2fs has %llu", ctx, what, \
				 (unsigned long long)(a),                      \
				 (unsigned long long)(b));                     \
	} while (0)

static void check_str(const char *ctx, const char *what, const char *a,
		      const char *b)
{
	if (g_strcmp0(a, b) != 0)
		fail_msg("%s: %s is '%s', mke2fs has '%s'", ctx, what,
			 a ? a : "(none)", b ? b : "(none)");
}

/* Every header field and every group of ours equals mke2fs's. */
static void compare_dumps(const char *ctx, struct dump *ours, struct dump *ref)
{
	GHashTableIter it;
	gpointer k, v;

	g_hash_table_iter_init(&it, ref->hdr);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		if (strcmp(k, "Lifetime writes") == 0)
			continue;
		check_str(ctx, k, g_hash_table_lookup(ours->hdr, k), v);
	}
	g_hash_table_iter_init(&it, ours->hdr);
	while (g_hash_table_iter_next(&it, &k, &v))
		if (strcmp(k, "Lifetime writes") != 0 &&
		    !g_hash_table_contains(ref->hdr, k))
			fail_msg("%s: header field '%s' not in mke2fs's", ctx,
				 (char *)k);

	CHECK_EQ_U(ctx, "group count", ours->groups->len, ref->groups->len);
	for (guint i = 0; i < ref->groups->len; i++) {
		struct dgroup *a =
		    &g_array_index(ours->groups, struct dgroup, i);
		struct dgroup *b =
		    &g_array_index(ref->groups, struct dgroup, i);
		char *gctx = g_strdup_printf("%s group %u", ctx, i);

		CHECK_EQ_U(gctx, "first block", a->first, b->first);
		CHECK_EQ_U(gctx, "last block", a->last, b->last);
		CHECK_EQ_U(gctx, "block bitmap", a->bb, b->bb);
		CHECK_EQ_U(gctx, "inode bitmap", a->ib, b->ib);
		CHECK_EQ_U(gctx, "inode table start", a->it0, b->it0);
		CHECK_EQ_U(gctx, "inode table end", a->it1, b->it1);
		CHECK_EQ_U(gctx, "free blocks", a->free_b, b->free_b);
		CHECK_EQ_U(gctx, "free inodes", a->free_i, b->free_i);
		CHECK_EQ_U(gctx, "directories", a->dirs, b->dirs);
		check_str(gctx, "superblock copy", a->super, b->super);
		check_str(gctx, "free block ranges", a->free_blocks,
			  b->free_blocks);
		check_str(gctx, "free inode ranges", a->free_inodes,
			  b->free_inodes);
		g_free(gctx);
	}
}

/* ---- byte comparison over the data regions of two sparse files ---- */

static bool has_super(uint32_t g)
{
	return sfs_group_has_super(g, 1);
}

/* Compare [off, end) of both files; fails at the first differing byte. */
static void cmp_range(const char *ctx, int fa, int fb, uint64_t off,
		      uint64_t end)
{
	const size_t chunk = 1 << 16;
	uint8_t *a = g_malloc(chunk), *b = g_malloc(chunk);

	while (off < end) {
		size_t n = (size_t)MIN(end - off, chunk);

		assert_int_equal(pread(fa, a, n, (off_t)off), (ssize_t)n);
		assert_int_equal(pread(fb, b, n, (off_t)off), (ssize_t)n);
		if (memcmp(a, b, n) != 0) {
			for (size_t i = 0; i < n; i++) {
				if (a[i] != b[i])
					fail_msg("%s: images differ at byte "
						 "%llu: simfs %#x, mke2fs %#x",
						 ctx,
						 (unsigned long long)(off + i),
						 a[i], b[i]);
			}
		}
		off += n;
	}
	g_free(a);
	g_free(b);
}

/* Byte-compare two same-size sparse images over the data of either. */
static void compare_images(const char *ctx, const char *pa, const char *pb)
{
	int fa = open(pa, O_RDONLY), fb = open(pb, O_RDONLY);
	off_t size = lseek(fa, 0, SEEK_END);

	assert_true(fa >= 0 && fb >= 0);
	assert_int_equal(lseek(fb, 0, SEEK_END), size);
	for (int pass = 0; pass < 2; pass++) {
		int fd = pass ? fb : fa;
		off_t pos = 0;

		while (pos < size) {
			off_t d = lseek(fd, pos, SEEK_DATA);
			off_t h;

			if (d < 0)
				break;
			h = lseek(fd, d, SEEK_HOLE);
			cmp_range(ctx, fa, fb, d, h);
			pos = h;
		}
	}
	close(fa);
	close(fb);
}

/*
 * The one superblock field mke2fs fills from its own I/O: s_kbytes_written
 * (dumpe2fs "Lifetime writes"), 1 plus the KiB it wrote, where simfs
 * writes the 1 alone.  Copy ours into every superblock of the mke2fs image
 * (and recompute the superblock checksum with metadata_csum), so that
 * everything else can be compared byte for byte.
 */
static void take_kbytes_written(const char *ref, const struct sfs_dsuper *ours)
{
	int fd = open(ref, O_RDWR);
	struct sfs_dsuper sb;
	uint32_t bs, first, bpg, groups;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &sb, sizeof(sb), SFS_SUPER_OFFSET),
			 sizeof(sb));
	bs = 1024u << sfs_le32(sb.s_log_block_size);
	first = sfs_le32(sb.s_first_data_block);
	bpg = sfs_le32(sb.s_blocks_per_group);
	groups = (sfs_le32(sb.s_blocks_count) - first + bpg - 1) / bpg;
	for (uint32_t g = 0; g < groups; g++) {
		off_t off = g == 0 ? SFS_SUPER_OFFSET
				   : (off_t)(first + (uint64_t)g * bpg) * bs;

		if (!has_super(g))
			continue;
		assert_int_equal(pread(fd, &sb, sizeof(sb), off), sizeof(sb));
		sb.s_kbytes_written = ours->s_kbytes_written;
		if (sfs_le32(sb.s_feature_ro_compat) &
		    SFS_FEATURE_RO_COMPAT_METADATA_CSUM)
			sfs_csum_super_set(&sb);
		assert_int_equal(pwrite(fd, &sb, sizeof(sb), off), sizeof(sb));
	}
	close(fd);
}

/* ---- one comparison case ---- */

struct mkcase {
	uint64_t size;
	uint32_t bs, ratio, isize, pct;
};

/* features: NULL, or a -O list for sfs_mkfs_parse_features. */
static void make_simfs_dx(const char *path, const struct mkcase *mc,
			  uint64_t seed, const char *features)
{
	struct sfs_mkfs_params p;
	struct sfs_bdev *bd;
	char *err = NULL;
	int rc;

	assert_int_equal(
	    sfs_bdev_open_file(path, SFS_BDEV_CREATE, mc->size, &bd), 0);
	sfs_mkfs_defaults(&p);
	p.block_size = mc->bs;
	p.inode_ratio = mc->ratio;
	p.inode_size = mc->isize;
	p.reserved_pct = mc->pct;
	p.seed = seed;
	p.time = MK_TIME;
	if (features)
		assert_int_equal(sfs_mkfs_parse_features(&p, features, &err),
				 0);
	rc = sfs_mkfs(bd, &p, &err);
	if (rc)
		fail_msg("sfs_mkfs: %d %s", rc, err);
	if (p.has_journal && !sfs_mkfs_makes_journal(&p)) {
		/* as simfs mkfs -t ext3: mke2fs's journal size and place */
		rc = sfs_jbd2_add_internal(bd, 0, SFS_JBD2_PLACE_FIRST_FREE,
					   &err);
		if (rc == 0)
			rc = sfs_mkfs_sync_backups(bd, &err);
		if (rc)
			fail_msg("journal: %d %s", rc, err);
	}
	sfs_bdev_close(bd);
}

static void make_simfs(const char *path, const struct mkcase *mc, uint64_t seed)
{
	make_simfs_dx(path, mc, seed, NULL);
}

static char *fmt_uuid(const uint8_t *u)
{
	return g_strdup_printf("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
			       "%02x%02x%02x%02x%02x%02x",
			       u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
			       u[8], u[9], u[10], u[11], u[12], u[13], u[14],
			       u[15]);
}

/*
 * Compare our image (made at ours) with what mke2fs makes on a file of
 * the same size (at ref) given opts (NULL-terminated mke2fs options), our
 * UUID, hash seed and time, and nblocks (NULL: the whole file); want: the
 * features dumpe2fs must list.  Both files are removed.
 */
static void compare_with_mke2fs(struct fixture *f, const char *ctx,
				const char *ours, const char *ref,
				uint64_t size, const char *const *opts,
				const char *nblocks, const char *want)
{
	char *fsck_out = NULL, *uuid, *hseed, *opt_e, *d1, *d2;
	struct sfs_dsuper sb;
	struct sfs_bdev *bd;
	struct dump da, db;
	GPtrArray *args = g_ptr_array_new();

	if (!sfs_test_fsck_clean(ours, &fsck_out))
		fail_msg("%s: e2fsck -fn not clean:\n%s", ctx, fsck_out);
	g_free(fsck_out);

	/* mke2fs with our UUID, hash seed and time on a same-size file. */
	assert_int_equal(sfs_bdev_open_file(ours, SFS_BDEV_RDONLY, 0, &bd), 0);
	assert_int_equal(
	    sfs_bdev_read(bd, SFS_IO_SUPER, SFS_SUPER_OFFSET, &sb, sizeof(sb)),
	    0);
	sfs_bdev_close(bd);
	assert_int_equal(sfs_bdev_open_file(ref, SFS_BDEV_CREATE, size, &bd),
			 0);
	sfs_bdev_close(bd);
	uuid = fmt_uuid(sb.s_uuid);
	hseed = fmt_uuid((const uint8_t *)sb.s_hash_seed);
	opt_e = g_strdup_printf("hash_seed=%s", hseed);
	g_ptr_array_add(args, "mke2fs");
	g_ptr_array_add(args, "-F");
	g_ptr_array_add(args, "-q");
	for (size_t i = 0; opts[i]; i++)
		g_ptr_array_add(args, (char *)opts[i]);
	g_ptr_array_add(args, "-U");
	g_ptr_array_add(args, uuid);
	g_ptr_array_add(args, "-E");
	g_ptr_array_add(args, opt_e);
	g_ptr_array_add(args, (char *)ref);
	if (nblocks)
		g_ptr_array_add(args, (char *)nblocks);
	g_ptr_array_add(args, NULL);
	g_free(run((const char *const *)args->pdata, f->conf));
	g_ptr_array_free(args, TRUE);
	take_kbytes_written(ref, &sb);

	d1 = dumpe2fs(ours);
	d2 = dumpe2fs(ref);
	parse_dump(d1, &da);
	parse_dump(d2, &db);
	assert_true(da.groups->len > 0);
	compare_dumps(ctx, &da, &db);
	if (strcmp(hdr(&da, "Filesystem features"), want) != 0)
		fail_msg("%s: features '%s', expected '%s'", ctx,
			 hdr(&da, "Filesystem features"), want);
	assert_string_equal(hdr(&da, "Filesystem state"), "clean");
	dump_free(&da);
	dump_free(&db);
	g_free(d1);
	g_free(d2);

	/* The root, lost+found, bad-blocks, resize and journal inodes. */
	const char *stats[] = {"stat <1>",	   "stat <2>",	"stat <7>",
			       "stat <8>",	   "stat <11>", "ls -l /",
			       "ls -l /lost+found"};
	for (size_t i = 0; i < G_N_ELEMENTS(stats); i++) {
		const char *a1[] = {"debugfs", "-R", stats[i], ours, NULL};
		const char *a2[] = {"debugfs", "-R", stats[i], ref, NULL};
		char *s1 = run(a1, NULL), *s2 = run(a2, NULL);

		if (strcmp(s1, s2) != 0)
			fail_msg(
			    "%s: debugfs '%s' differs:\n%s\n--- mke2fs:\n%s",
			    ctx, stats[i], s1, s2);
		g_free(s1);
		g_free(s2);
	}

	/* Byte for byte. */
	compare_images(ctx, ours, ref);

	unlink(ours);
	unlink(ref);
	g_free(uuid);
	g_free(hseed);
	g_free(opt_e);
}

/* One case against mke2fs; features (NULL or a -O list) on both sides,
 * want: the features dumpe2fs must then list. */
static void run_case_dx(struct fixture *f, const struct mkcase *mc,
			const char *features, const char *want)
{
	char *ctx =
	    g_strdup_printf("bs=%u size=%lluK ratio=%u isize=%u%s", mc->bs,
			    (unsigned long long)(mc->size >> 10), mc->ratio,
			    mc->isize, features ? features : "");
	char *ours = g_build_filename(f->dir, "simfs.img", NULL);
	char *ref = g_build_filename(f->dir, "mke2fs.img", NULL);
	char *nblocks, *isz, *ratio, *bs, *pct, *feat;

	make_simfs_dx(ours, mc, 77, features);
	nblocks =
	    g_strdup_printf("%llu", (unsigned long long)(mc->size / mc->bs));
	isz = g_strdup_printf("%u", mc->isize);
	ratio = g_strdup_printf("%u", mc->ratio);
	bs = g_strdup_printf("%u", mc->bs);
	pct = g_strdup_printf("%u", mc->pct);
	feat = g_strdup_printf(
	    "none,sparse_super,filetype,large_file,ext_attr%s%s",
	    features ? "," : "", features ? features : "");
	const char *opts[] = {"-t",  "ext2", "-b", bs,	 "-I", isz, "-i",
			      ratio, "-m",   pct,  "-O", feat, NULL};
	compare_with_mke2fs(f, ctx, ours, ref, mc->size, opts, nblocks,
			    want ? want
				 : "ext_attr filetype sparse_super large_file");
	g_free(feat);
	g_free(nblocks);
	g_free(isz);
	g_free(ratio);
	g_free(bs);
	g_free(pct);
	g_free(ours);
	g_free(ref);
	g_free(ctx);
}

/*
 * `simfs mkfs -t TYPE [-O extra]` (sfs_mkfs_set_type on the whole file)
 * against plain `mke2fs -t TYPE [-O extra]` with the stock mke2fs.conf.
 */
static void run_case_type_bg(struct fixture *f, const char *type, uint64_t size,
			     uint32_t bsize, const char *extra,
			     uint32_t log_flex, const char *want)
{
	char *ctx = g_strdup_printf("-t %s %lluM -b %u%s%s -G %u", type,
				    (unsigned long long)(size >> 20), bsize,
				    extra ? " -O " : "", extra ? extra : "",
				    1u << log_flex);
	char *gopt = g_strdup_printf("%u", 1u << log_flex);
	char *bopt = g_strdup_printf("%u", bsize);
	char *ours = g_build_filename(f->dir, "simfs.img", NULL);
	char *ref = g_build_filename(f->dir, "mke2fs.img", NULL);
	struct sfs_mkfs_params p;
	struct sfs_bdev *bd;
	char *err = NULL;
	int rc;

	assert_int_equal(sfs_bdev_open_file(ours, SFS_BDEV_CREATE, size, &bd),
			 0);
	sfs_mkfs_defaults(&p);
	p.seed = 78;
	p.time = MK_TIME;
	assert_int_equal(sfs_mkfs_set_type(&p, type, size, NULL), 0);
	if (bsize)
		p.block_size = bsize;
	if (extra)
		assert_int_equal(sfs_mkfs_parse_features(&p, extra, NULL), 0);
	p.log_groups_per_flex = log_flex;
	rc = sfs_mkfs(bd, &p, &err);
	if (rc)
		fail_msg("%s: sfs_mkfs: %d %s", ctx, rc, err);
	if (p.has_journal && !sfs_mkfs_makes_journal(&p)) {
		rc = sfs_jbd2_add_internal(bd, 0, SFS_JBD2_PLACE_FIRST_FREE,
					   &err);
		if (rc == 0)
			rc = sfs_mkfs_sync_backups(bd, &err);
		if (rc)
			fail_msg("%s: journal: %d %s", ctx, rc, err);
	}
	sfs_bdev_close(bd);
	const char *opts[9] = {"-t", type};
	size_t n = 2;

	if (bsize) { /* else the size type's */
		opts[n++] = "-b";
		opts[n++] = bopt;
	}
	if (p.flex_bg) { /* mke2fs takes -G with flex_bg only */
		opts[n++] = "-G";
		opts[n++] = gopt;
	}
	if (extra) {
		opts[n++] = "-O";
		opts[n++] = extra;
	}
	compare_with_mke2fs(f, ctx, ours, ref, size, opts, NULL, want);
	g_free(gopt);
	g_free(bopt);
	g_free(ours);
	g_free(ref);
	g_free(ctx);
}

static void run_case_type_g(struct fixture *f, const char *type, uint64_t size,
			    const char *extra, uint32_t log_flex,
			    const char *want)
{
	run_case_type_bg(f, type, size, 0, extra, log_flex, want);
}

/* The same with mke2fs.conf's flex group size (16). */
static void run_case_type(struct fixture *f, const char *type, uint64_t size,
			  const char *extra, const char *want)
{
	run_case_type_g(f, type, size, extra, 4, want);
}

/* run_case_dx at 1, 2 and 4 KiB blocks, one inode per 4 KiB. */
static void run_each_bs(struct fixture *f, uint64_t size, const char *features,
			const char *want)
{
	const uint32_t sizes[] = {1024, 2048, 4096};

	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		struct mkcase mc = {size, sizes[i], 4096, 256, 5};

		run_case_dx(f, &mc, features, want);
	}
}

static void run_case(struct fixture *f, const struct mkcase *mc)
{
	run_case_dx(f, mc, NULL, NULL);
}

/* The size matrix for one block size (the mke2fs "small" ratio below
 * 512 MiB, the default above, as mke2fs would pick). */
static void run_sizes(void **state, uint32_t bs)
{
	const uint64_t sizes[] = {16 * MiB, 64 * MiB, 300 * MiB,
				  128 * MiB + 256 * 1024, 1024 * MiB};

	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		struct mkcase mc = {
		    sizes[i], bs, sizes[i] < 512 * MiB ? 4096 : 16384, 256, 5};

		run_case(*state, &mc);
	}
}

static void test_mkfs_1k_matches_mke2fs(void **state)
{
	run_sizes(state, 1024);
}

static void test_mkfs_2k_matches_mke2fs(void **state)
{
	run_sizes(state, 2048);
}

static void test_mkfs_4k_matches_mke2fs(void **state)
{
	run_sizes(state, 4096);
}

/* -O dir_index: the image mke2fs makes with dir_index added, byte for
 * byte, at each block size. */
static void test_mkfs_dir_index_matches_mke2fs(void **state)
{
	run_each_bs(*state, 64 * MiB, "dir_index",
		    "ext_attr dir_index filetype sparse_super large_file");
}

/* -t ext3 (-O has_journal): the journal where mke2fs puts it, and the
 * backups carrying the counts after it, byte for byte at 1, 2 and 4 KiB,
 * alone and with dir_index. */
static void test_mkfs_ext3_matches_mke2fs(void **state)
{
	run_each_bs(*state, 300 * MiB, "has_journal",
		    "has_journal ext_attr filetype sparse_super large_file");
	struct mkcase big = {1024 * MiB, 4096, 16384, 256, 5};
	run_case_dx(*state, &big, "has_journal,dir_index",
		    "has_journal ext_attr dir_index filetype sparse_super "
		    "large_file");
}

/* -O resize_inode: the reserved GDT blocks (as many as mke2fs reserves
 * for 1024 times the size) and the resize inode, byte for byte at 1, 2
 * and 4 KiB; a 1 KiB filesystem of 300 MiB has backups in ten groups,
 * each listed in every reserved GDT block; with a journal after it. */
static void test_mkfs_resize_inode_matches_mke2fs(void **state)
{
	run_each_bs(*state, 64 * MiB, "resize_inode",
		    "ext_attr resize_inode filetype sparse_super large_file");
	struct mkcase many = {300 * MiB, 1024, 4096, 256, 5};
	run_case_dx(*state, &many, "resize_inode,has_journal",
		    "has_journal ext_attr resize_inode filetype sparse_super "
		    "large_file");
	struct mkcase big = {1024 * MiB, 4096, 16384, 128, 5};
	run_case_dx(*state, &big, "resize_inode,dir_index",
		    "ext_attr resize_inode dir_index filetype sparse_super "
		    "large_file");
}

/* -O extent: the root directory and lost+found mapped by one extent each,
 * and a journal added after extent-mapped in the middle groups, byte for
 * byte as mke2fs makes them. */
static void test_mkfs_extent_matches_mke2fs(void **state)
{
	run_each_bs(*state, 64 * MiB, "extent",
		    "ext_attr filetype extent sparse_super large_file");
	struct mkcase mid = {300 * MiB, 1024, 4096, 256, 5};
	run_case_dx(*state, &mid, "extent,has_journal",
		    "has_journal ext_attr filetype extent sparse_super "
		    "large_file");
	struct mkcase big = {1024 * MiB, 4096, 16384, 256, 5};
	run_case_dx(*state, &big, "extent,has_journal,resize_inode,dir_index",
		    "has_journal ext_attr resize_inode dir_index filetype "
		    "extent sparse_super large_file");
}

/*
 * -t ext2, ext3 and ext4 with mke2fs.conf's defaults (features, and the
 * block size and inode ratio of the size type: floppy 2 MiB, small 64 MiB,
 * default 1 GiB) equal plain `mke2fs -t TYPE` byte for byte; the ext4 one
 * without the features sfs_mkfs does not lay out yet, and but for
 * s_kbytes_written (take_kbytes_written).
 */
static void test_mkfs_type_defaults_match_mke2fs(void **state)
{
	static const char *const e2 =
	    "ext_attr resize_inode dir_index filetype sparse_super large_file";
	static const char *const e3 =
	    "has_journal ext_attr resize_inode dir_index filetype "
	    "sparse_super large_file";
	static const char *const e4 =
	    "has_journal ext_attr resize_inode dir_index filetype extent "
	    "64bit flex_bg sparse_super large_file huge_file dir_nlink "
	    "extra_isize";
	static const char *const not_yet = "^metadata_csum";

	run_case_type(*state, "ext2", 2 * MiB, NULL, e2);
	run_case_type(*state, "ext2", 64 * MiB, NULL, e2);
	run_case_type(*state, "ext2", 1024 * MiB, NULL, e2);
	run_case_type(*state, "ext3", 64 * MiB, NULL, e3);
	run_case_type(*state, "ext3", 1024 * MiB, NULL, e3);
	run_case_type(*state, "ext4", 64 * MiB, not_yet, e4);
	run_case_type(*state, "ext4", 1024 * MiB, not_yet, e4);
}

/*
 * flex_bg: each flex group's block bitmaps, inode bitmaps and inode tables
 * packed as ext2fs_allocate_group_table packs them, the root directory,
 * lost+found, the resize inode's block and the journal placed from
 * mke2fs's goals; byte for byte at 1, 2 and 4 KiB, with 16 groups a flex
 * group (mke2fs.conf) and -G 4, up to 256 groups (16 flex groups, inode
 * tables running past the first group), and alone on ext2.
 */
static void test_mkfs_flex_bg_matches_mke2fs(void **state)
{
	static const char *const e4 =
	    "has_journal ext_attr resize_inode dir_index filetype extent "
	    "64bit flex_bg sparse_super large_file huge_file dir_nlink "
	    "extra_isize";
	static const char *const not_yet = "^metadata_csum";

	run_each_bs(*state, 64 * MiB, "flex_bg",
		    "ext_attr filetype flex_bg sparse_super large_file");
	/* and 64-byte descriptors (64bit needs extent) */
	run_each_bs(*state, 64 * MiB, "extent,64bit,resize_inode",
		    "ext_attr resize_inode filetype extent 64bit sparse_super "
		    "large_file");
	run_case_type_g(*state, "ext4", 300 * MiB, not_yet, 2, e4);
	run_case_type(*state, "ext4", 300 * MiB, not_yet, e4);
	run_case_type(*state, "ext4", 2048 * MiB, not_yet, e4);
}

/* One `simfs mkfs -t TYPE [-b BS] [-O LIST] [-G 2^log_flex]` case. */
struct typecase {
	const char *type;
	uint64_t size;
	uint32_t bs;	   /* 0: the size type's */
	const char *extra; /* -O list, or NULL */
	uint32_t log_flex;
	const char *want; /* dumpe2fs's feature list */
};

#define E4_BASE                                                                \
	"has_journal ext_attr resize_inode dir_index filetype extent "         \
	"64bit flex_bg sparse_super large_file huge_file "
#define E4_CSUM E4_BASE "dir_nlink extra_isize metadata_csum"
#define E4_UNINIT E4_BASE "uninit_bg dir_nlink extra_isize"
#define E3_UNINIT                                                              \
	"has_journal ext_attr resize_inode dir_index filetype sparse_super "   \
	"large_file uninit_bg"

/* The images with group descriptor checksums sfs_mkfs makes: plain -t
 * ext4 (metadata_csum), and uninit_bg (crc16) on ext3 and ext4. */
static const struct typecase csum_cases[] = {
    {"ext4", 64 * MiB, 0, NULL, 4, E4_CSUM},
    {"ext4", 1024 * MiB, 0, NULL, 4, E4_CSUM},
    {"ext4", 3072 * MiB, 0, NULL, 4, E4_CSUM},
    {"ext4", 64 * MiB, 2048, NULL, 4, E4_CSUM},
    {"ext4", 64 * MiB, 4096, NULL, 4, E4_CSUM},
    {"ext4", 1024 * MiB, 1024, NULL, 4, E4_CSUM},
    {"ext4", 1024 * MiB, 0, NULL, 2, E4_CSUM},
    {"ext4", 300 * MiB, 0, NULL, 4, E4_CSUM},
    {"ext4", 1024 * MiB, 0, "^64bit", 4,
     "has_journal ext_attr resize_inode dir_index filetype extent flex_bg "
     "sparse_super large_file huge_file dir_nlink extra_isize "
     "metadata_csum"},
    /* metadata_csum supersedes uninit_bg, as in mke2fs */
    {"ext4", 64 * MiB, 0, "uninit_bg", 4, E4_CSUM},
    {"ext4", 64 * MiB, 0, "uninit_bg,^metadata_csum", 4, E4_UNINIT},
    {"ext4", 1024 * MiB, 0, "uninit_bg,^metadata_csum", 4, E4_UNINIT},
    {"ext3", 64 * MiB, 0, "uninit_bg", 4, E3_UNINIT},
    {"ext3", 300 * MiB, 1024, "uninit_bg", 4, E3_UNINIT},
    {"ext3", 1024 * MiB, 0, "uninit_bg", 4, E3_UNINIT},
    {"ext2", 64 * MiB, 0, "metadata_csum", 4,
     "ext_attr resize_inode dir_index filetype sparse_super large_file "
     "metadata_csum"},
};

/*
 * Each of csum_cases equals what mke2fs makes with the same options, UUID,
 * hash seed and time: dumpe2fs (group flags BLOCK_UNINIT / INODE_UNINIT,
 * unused inodes, bitmap and descriptor checksums included), the inodes,
 * and byte for byte over the data of either sparse file (mke2fs leaves
 * uninitialised bitmaps and unused inode table blocks unwritten; so does
 * sfs_mkfs), but for s_kbytes_written; e2fsck is clean.
 */
static void test_mkfs_csum_matches_mke2fs(void **state)
{
	for (size_t i = 0; i < G_N_ELEMENTS(csum_cases); i++) {
		const struct typecase *c = &csum_cases[i];

		run_case_type_bg(*state, c->type, c->size, c->bs, c->extra,
				 c->log_flex, c->want);
	}
}

/*
 * The engine mounts what sfs_mkfs makes with checksums read-write: a
 * tree of files written (through groups mke2fs left uninitialised),
 * closed, then e2fsck -fn is clean and the checksums kept.
 */
static void test_mkfs_csum_image_mounts_rw(void **state)
{
	static const struct typecase cases[] = {
	    {"ext4", 64 * MiB, 0, NULL, 4, NULL},
	    {"ext4", 256 * MiB, 4096, NULL, 4, NULL},
	    {"ext4", 64 * MiB, 0, "uninit_bg,^metadata_csum", 4, NULL},
	    {"ext3", 64 * MiB, 0, "uninit_bg", 4, NULL},
	};
	struct fixture *f = *state;
	char *path = g_build_filename(f->dir, "rw.img", NULL);
	uint8_t *buf = g_malloc(1 << 20);

	memset(buf, 0xC3, 1 << 20);
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		const struct typecase *c = &cases[i];
		struct sfs_mkfs_params p;
		struct sfs_bdev *bd;
		struct sfs_fs *fs;
		char *err = NULL, *out = NULL;

		unlink(path);
		assert_int_equal(
		    sfs_bdev_open_file(path, SFS_BDEV_CREATE, c->size, &bd), 0);
		sfs_mkfs_defaults(&p);
		p.seed = 5;
		p.time = MK_TIME;
		assert_int_equal(sfs_mkfs_set_type(&p, c->type, c->size, NULL),
				 0);
		if (c->bs)
			p.block_size = c->bs;
		if (c->extra)
			assert_int_equal(
			    sfs_mkfs_parse_features(&p, c->extra, NULL), 0);
		assert_true(sfs_mkfs_makes_journal(&p));
		if (sfs_mkfs(bd, &p, &err))
			fail_msg("sfs_mkfs: %s", err);
		sfs_bdev_close(bd);

		fs = sfs_test_open(path, "");
		assert_true(fs->csum || fs->gdt_csum);
		assert_int_equal(fs->csum, c->extra == NULL);
		for (unsigned d = 0; d < 4; d++) {
			struct sfs_attr a;
			char name[16];

			g_snprintf(name, sizeof(name), "d%u", d);
			assert_int_equal(
			    sfs_mkdir(fs, SFS_ROOT_INO, name, 0755, 0, 0, &a),
			    0);
			for (unsigned k = 0; k < 20; k++) {
				size_t w = 0;
				sfs_ino_t ino;

				g_snprintf(name, sizeof(name), "f%u", k);
				ino = sfs_test_mkfile(fs, a.ino, name);
				assert_int_equal(sfs_write(fs, ino, 0, buf,
							   4096 * (k % 7 + 1),
							   &w),
						 0);
				assert_int_equal(sfs_release(fs, ino), 0);
			}
		}
		{
			/* a file large enough to reach uninitialised groups */
			sfs_ino_t ino =
			    sfs_test_mkfile(fs, SFS_ROOT_INO, "big");

			for (unsigned k = 0; k < c->size / MiB / 2; k++) {
				size_t w = 0;

				assert_int_equal(sfs_write(fs, ino,
							   (uint64_t)k << 20,
							   buf, 1 << 20, &w),
						 0);
			}
			assert_int_equal(sfs_release(fs, ino), 0);
		}
		assert_int_equal(sfs_fs_close(fs), 0);
		if (!sfs_test_fsck_clean(path, &out))
			fail_msg("-t %s %s: e2fsck -fn not clean:\n%s", c->type,
				 c->extra ? c->extra : "", out);
		g_free(out);
	}
	unlink(path);
	g_free(path);
	g_free(buf);
}

/* A journal added through the engine would initialise the groups mkfs
 * left uninitialised: sfs_jbd2_add_internal refuses a checksummed image
 * and leaves it as it was. */
static void test_mkfs_csum_image_refuses_engine_journal(void **state)
{
	struct sfs_bdev *bd = sfs_ramdev_new(16 * MiB);
	uint8_t *before = g_malloc(16 * MiB);
	struct sfs_mkfs_params p;
	char *err = NULL;

	(void)state;
	sfs_mkfs_defaults(&p);
	p.seed = 3;
	p.time = MK_TIME;
	assert_int_equal(sfs_mkfs_parse_features(&p, "metadata_csum", NULL), 0);
	assert_false(sfs_mkfs_makes_journal(&p)); /* no has_journal */
	assert_int_equal(sfs_mkfs(bd, &p, &err), 0);
	memcpy(before, sfs_ramdev_data(bd), 16 * MiB);
	assert_int_equal(
	    sfs_jbd2_add_internal(bd, 0, SFS_JBD2_PLACE_MIDDLE, &err), -EINVAL);
	assert_non_null(strstr(err, "group descriptor checksums"));
	g_free(err);
	assert_memory_equal(before, sfs_ramdev_data(bd), 16 * MiB);
	g_free(before);
	sfs_bdev_close(bd);
}

/* -O huge_file,dir_nlink,extra_isize (mke2fs spellings): the image mke2fs
 * makes with them, byte for byte but for s_kbytes_written (mke2fs's mark
 * of an ext4 feature plus its own I/O); e2fsck is clean and the engine
 * mounts the image. */
static void test_mkfs_ro_compat_features(void **state)
{
	struct fixture *f = *state;
	const uint32_t sizes[] = {1024, 4096};
	char *path = g_build_filename(f->dir, "ro.img", NULL);

	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		struct mkcase mc = {64 * MiB, sizes[i], 4096, 256, 5};
		char *out = NULL, *d;
		struct dump da;
		struct sfs_fs *fs;

		run_case_dx(f, &mc, "huge_file,dir_nlink,extra_isize",
			    "ext_attr filetype sparse_super large_file "
			    "huge_file dir_nlink extra_isize");
		unlink(path);
		make_simfs_dx(path, &mc, 77, "huge_file,dir_nlink,extra_isize");
		if (!sfs_test_fsck_clean(path, &out))
			fail_msg("e2fsck -fn not clean:\n%s", out);
		g_free(out);
		d = dumpe2fs(path);
		parse_dump(d, &da);
		assert_string_equal(hdr(&da, "Filesystem features"),
				    "ext_attr filetype sparse_super large_file "
				    "huge_file dir_nlink extra_isize");
		dump_free(&da);
		g_free(d);
		fs = sfs_test_open(path, "");
		assert_int_equal(sfs_fs_close(fs), 0);
	}
	unlink(path);
	g_free(path);
}

/* 64bit and flex_bg are mounted, not made: a clear refusal, as for a
 * name mkfs does not know or the "^" of a feature it always sets; one
 * message names every refused name. */
static void test_mkfs_feature_names_refused(void **state)
{
	static const char *const bad[] = {"inline_data",   "bigalloc",
					  "meta_bg",	   "bogus",
					  "^sparse_super", "quota"};
	struct sfs_mkfs_params p;
	char *err = NULL;

	(void)state;
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		sfs_mkfs_defaults(&p);
		assert_int_equal(sfs_mkfs_parse_features(&p, bad[i], &err),
				 -EINVAL);
		assert_non_null(err);
		assert_non_null(strstr(err, bad[i]));
		g_free(err);
		err = NULL;
	}
	sfs_mkfs_defaults(&p);
	assert_int_equal(
	    sfs_mkfs_parse_features(
		&p, "inline_data,dir_index,bogus,bigalloc,^filetype,meta_bg",
		&err),
	    -EINVAL);
	for (size_t i = 0; i < 5; i++) {
		static const char *const named[] = {"'inline_data'", "'bogus'",
						    "'bigalloc'", "'^filetype'",
						    "'meta_bg'"};
		assert_non_null(strstr(err, named[i]));
	}
	assert_null(strstr(err, "dir_index'"));
	g_free(err);
	err = NULL;
	/* removing what is never made, and the fixed ones named plainly */
	sfs_mkfs_defaults(&p);
	assert_int_equal(
	    sfs_mkfs_parse_features(&p,
				    "^64bit,^flex_bg,^metadata_csum,^extent,"
				    "sparse_super,filetype,large_file,ext_attr",
				    &err),
	    0);
	assert_int_equal(p.ro_compat, 0);
	assert_false(p.dir_index);
	sfs_mkfs_defaults(&p);
	assert_int_equal(sfs_mkfs_parse_features(
			     &p, "extra_isize,huge_file,^huge_file", NULL),
			 0);
	assert_int_equal(p.ro_compat, SFS_FEATURE_RO_COMPAT_EXTRA_ISIZE);
	/* has_journal and -t: the journal flag the caller acts on */
	sfs_mkfs_defaults(&p);
	assert_false(p.has_journal);
	assert_int_equal(sfs_mkfs_parse_features(&p, "has_journal", NULL), 0);
	assert_true(p.has_journal);
	assert_int_equal(sfs_mkfs_parse_features(&p, "^has_journal", NULL), 0);
	assert_false(p.has_journal);
	assert_int_equal(sfs_mkfs_set_type(&p, "ext3", 0, NULL), 0);
	assert_true(p.has_journal && p.dir_index && p.resize_inode);
	assert_int_equal(p.block_size, 4096);
	assert_int_equal(p.inode_ratio, 16384);
	/* mke2fs.conf's size types */
	assert_int_equal(sfs_mkfs_set_type(&p, "ext2", 64 * MiB, NULL), 0);
	assert_false(p.has_journal);
	assert_true(p.dir_index && p.resize_inode);
	assert_int_equal(p.block_size, 1024);
	assert_int_equal(p.inode_ratio, 4096);
	assert_int_equal(sfs_mkfs_set_type(&p, "ext2", 2 * MiB, NULL), 0);
	assert_int_equal(p.inode_ratio, 8192);
	assert_int_equal(sfs_mkfs_set_type(&p, "ext2", 512 * MiB, NULL), 0);
	assert_int_equal(p.block_size, 4096);
	assert_int_equal(sfs_mkfs_set_type(&p, "ext2", 5ull << 40, NULL), 0);
	assert_int_equal(p.inode_ratio, 32768);
	assert_int_equal(sfs_mkfs_set_type(&p, "ext2", 16ull << 40, NULL), 0);
	assert_int_equal(p.inode_ratio, 65536);
	/* ext4: metadata_csum, now laid out; uninit_bg switches as well */
	assert_int_equal(sfs_mkfs_set_type(&p, "ext4", 0, NULL), 0);
	assert_true(p.extent && p.has_journal);
	assert_int_equal(p.ro_compat, SFS_FEATURE_RO_COMPAT_HUGE_FILE |
					  SFS_FEATURE_RO_COMPAT_DIR_NLINK |
					  SFS_FEATURE_RO_COMPAT_EXTRA_ISIZE |
					  SFS_FEATURE_RO_COMPAT_METADATA_CSUM);
	assert_int_equal(sfs_mkfs_check_features(&p, NULL), 0);
	assert_true(sfs_mkfs_makes_journal(&p));
	assert_int_equal(sfs_mkfs_parse_features(&p, "^metadata_csum", NULL),
			 0);
	assert_false(p.ro_compat & SFS_FEATURE_RO_COMPAT_METADATA_CSUM);
	assert_false(sfs_mkfs_makes_journal(&p));
	assert_int_equal(sfs_mkfs_parse_features(&p, "uninit_bg", NULL), 0);
	assert_true(p.ro_compat & SFS_FEATURE_RO_COMPAT_GDT_CSUM);
	assert_true(sfs_mkfs_makes_journal(&p));
	p.journal_external = true; /* -J device=: the caller's journal */
	assert_false(sfs_mkfs_makes_journal(&p));
	assert_int_equal(sfs_mkfs_parse_features(&p, "^gdt_csum", NULL), 0);
	assert_false(p.ro_compat & SFS_FEATURE_RO_COMPAT_GDT_CSUM);
	/* 64bit without extent is refused, as by mke2fs */
	assert_int_equal(sfs_mkfs_parse_features(&p, "^extent", NULL), 0);
	assert_int_equal(sfs_mkfs_check_features(&p, &err), -EINVAL);
	assert_non_null(strstr(err, "64bit needs extent"));
	g_free(err);
	err = NULL;
	assert_int_equal(sfs_mkfs_set_type(&p, "xfs", 0, &err), -EINVAL);
	assert_non_null(strstr(err, "'xfs'"));
	g_free(err);
}

/* Odd corners of the geometry rules, each against mke2fs. */
static void test_mkfs_geometry_corners_match_mke2fs(void **state)
{
	const struct mkcase cases[] = {
	    /* 128-byte inodes */
	    {64 * MiB, 2048, 8192, 128, 5},
	    /* too many inodes per group: blocks_per_group shrinks */
	    {64 * MiB, 4096, 1024, 256, 5},
	    /* 8 inodes per group: lost+found (inode 11) in group 1 */
	    {64 * MiB, 1024, 4 * MiB, 256, 0},
	    /* half reserved, a tiny 4 MiB filesystem */
	    {4 * MiB, 1024, 4096, 256, 50},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
		run_case(*state, &cases[i]);
}

static void test_mkfs_1tib_sparse_formats_and_checks(void **state)
{
	struct fixture *f = *state;
	char *path = g_build_filename(f->dir, "tib.img", NULL);
	const struct mkcase mc = {1ull << 40, 4096, 4 * MiB, 256, 5};
	char *out = NULL;
	gint64 t0, t1, t2;
	struct stat st;

	t0 = g_get_monotonic_time();
	make_simfs(path, &mc, 3);
	t1 = g_get_monotonic_time();
	if (!sfs_test_fsck_clean(path, &out))
		fail_msg("1 TiB image not clean:\n%s", out);
	t2 = g_get_monotonic_time();
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 1ll << 40);
	assert_true((uint64_t)st.st_blocks * 512 < 256 * MiB);
	print_message("# 1 TiB (4 KiB blocks, 4 MiB per inode): mkfs %.2f s, "
		      "e2fsck %.2f s, %llu MiB allocated\n",
		      (t1 - t0) / 1e6, (t2 - t1) / 1e6,
		      (unsigned long long)st.st_blocks * 512 / MiB);
	g_free(out);
	unlink(path);
	g_free(path);
}

/* The oracle itself: problems that -n lets through still count. */
static void test_mkfs_fsck_oracle_sees_problems(void **state)
{
	struct fixture *f = *state;
	char *path = g_build_filename(f->dir, "oracle.img", NULL);
	struct sfs_dsuper sb;
	struct sfs_bdev *bd;
	char *out = NULL;
	uint8_t byte;

	assert_int_equal(sfs_test_mkimage(path, 16 * MiB, 1024), 0);
	assert_true(sfs_test_fsck_clean(path, &out));
	assert_non_null(strstr(out, "Pass 5"));
	g_free(out);

	/* A wrong superblock free count: e2fsck -n still exits 0. */
	assert_int_equal(sfs_bdev_open_file(path, 0, 0, &bd), 0);
	assert_int_equal(
	    sfs_bdev_read(bd, SFS_IO_SUPER, SFS_SUPER_OFFSET, &sb, sizeof(sb)),
	    0);
	sb.s_free_blocks_count =
	    sfs_cpu_to_le32(sfs_le32(sb.s_free_blocks_count) - 1);
	assert_int_equal(
	    sfs_bdev_write(bd, SFS_IO_SUPER, SFS_SUPER_OFFSET, &sb, sizeof(sb)),
	    0);
	sfs_bdev_close(bd);
	assert_false(sfs_test_fsck_clean(path, &out));
	assert_non_null(strstr(out, "Free blocks count wrong"));
	g_free(out);

	/* Bitmap padding cleared (last byte of group 1's inode bitmap). */
	assert_int_equal(sfs_test_mkimage(path, 16 * MiB, 1024), 0);
	assert_int_equal(sfs_bdev_open_file(path, 0, 0, &bd), 0);
	byte = 0;
	assert_int_equal(sfs_bdev_write(bd, SFS_IO_BITMAP,
					(8193 + 3) * 1024ull + 1023, &byte, 1),
			 0);
	sfs_bdev_close(bd);
	assert_false(sfs_test_fsck_clean(path, &out));
	assert_non_null(strstr(out, "Padding at end of inode bitmap"));
	g_free(out);

	/* Not an image at all. */
	assert_false(sfs_test_fsck_clean("/nonexistent/simfs.img", NULL));
	unlink(path);
	g_free(path);
}

/* ---- rejected parameters ---- */

static int null_io(struct sfs_bdev *bd, uint64_t off, void *buf, size_t len)
{
	fail_msg("the device was touched");
	return -EIO;
}

static int null_wr(struct sfs_bdev *bd, uint64_t off, const void *buf,
		   size_t len)
{
	fail_msg("the device was touched");
	return -EIO;
}

static const struct sfs_bdev_ops null_ops = {
    .name = "null",
    .read = null_io,
    .write = null_wr,
};

static void expect_rejected(struct sfs_bdev *bd,
			    const struct sfs_mkfs_params *p, const char *word)
{
	char *err = NULL;
	int rc = sfs_mkfs(bd, p, &err);

	if (rc != -EINVAL)
		fail_msg("expected -EINVAL for '%s', got %d", word, rc);
	assert_non_null(err);
	assert_true(strlen(err) > 10);
	assert_null(strchr(err, '\n'));
	if (!strstr(err, word))
		fail_msg("message '%s' does not mention '%s'", err, word);
	g_free(err);
}

static void test_mkfs_bad_params_rejected(void **state)
{
	struct sfs_bdev *small = sfs_bdev_new(&null_ops, NULL, 64 * MiB);
	struct sfs_bdev *huge = sfs_bdev_new(&null_ops, NULL, 20ull << 40);
	struct sfs_bdev *tiny = sfs_bdev_new(&null_ops, NULL, 8192);
	struct sfs_bdev_counters ctr;
	struct sfs_mkfs_params p;

	sfs_mkfs_defaults(&p);
	p.block_size = 512;
	expect_rejected(small, &p, "block size");
	p.block_size = 8192;
	expect_rejected(small, &p, "block size");
	p.block_size = 3000;
	expect_rejected(small, &p, "block size");
	sfs_mkfs_defaults(&p);
	p.inode_size = 512;
	expect_rejected(small, &p, "inode size");
	p.inode_size = 64;
	expect_rejected(small, &p, "inode size");
	sfs_mkfs_defaults(&p);
	p.inode_ratio = 512;
	expect_rejected(small, &p, "ratio");
	p.inode_ratio = 128u << 20;
	expect_rejected(small, &p, "ratio");
	sfs_mkfs_defaults(&p);
	p.reserved_pct = 51;
	expect_rejected(small, &p, "reserved");
	sfs_mkfs_defaults(&p);
	p.size_bytes = 65 * MiB;
	expect_rejected(small, &p, "exceeds the device");
	sfs_mkfs_defaults(&p);
	expect_rejected(tiny, &p, "small");
	/* 20 TiB of 4 KiB blocks: more than 2^32 blocks. */
	sfs_mkfs_defaults(&p);
	p.inode_ratio = 64u << 20;
	expect_rejected(huge, &p, "32-bit");
	/* 2 TiB of 1 KiB blocks: the GDT would need meta_bg. */
	p.block_size = 1024;
	p.size_bytes = 2ull << 40;
	expect_rejected(huge, &p, "meta_bg");
	/* Fewer inodes than the reserved ones + lost+found. */
	sfs_mkfs_defaults(&p);
	p.block_size = 1024;
	p.inode_ratio = 64u << 20;
	p.size_bytes = MiB;
	expect_rejected(small, &p, "inodes");
	/* A label without its NUL. */
	sfs_mkfs_defaults(&p);
	memset(p.label, 'x', sizeof(p.label));
	expect_rejected(small, &p, "label");

	sfs_bdev_counters(small, &ctr);
	assert_int_equal(ctr.reqs[SFS_IO_READ] + ctr.reqs[SFS_IO_WRITE] +
			     ctr.reqs[SFS_IO_FLUSH],
			 0);
	sfs_bdev_close(small);
	sfs_bdev_close(huge);
	sfs_bdev_close(tiny);
}

/* ---- on RAM devices ---- */

static void mkfs_ram(struct sfs_bdev *bd, uint32_t bs, uint64_t seed,
		     const char *label)
{
	struct sfs_mkfs_params p;
	char *err = NULL;

	sfs_mkfs_defaults(&p);
	p.block_size = bs;
	p.seed = seed;
	p.time = MK_TIME;
	g_strlcpy(p.label, label, sizeof(p.label));
	if (sfs_mkfs(bd, &p, &err))
		fail_msg("sfs_mkfs: %s", err);
}

static void test_mkfs_superblock_fields_and_write_order(void **state)
{
	struct sfs_bdev *bd = sfs_ramdev_new(16 * MiB);
	const struct sfs_io_req *log;
	const struct sfs_dsuper *sb, *b1;
	uint8_t *img;
	size_t n;

	mkfs_ram(bd, 1024, 9, "testvol");
	img = sfs_ramdev_data(bd);
	sb = (const struct sfs_dsuper *)(img + SFS_SUPER_OFFSET);
	assert_int_equal(sfs_le16(sb->s_magic), SFS_SUPER_MAGIC);
	assert_int_equal(sfs_le32(sb->s_rev_level), 1);
	assert_int_equal(sfs_le16(sb->s_state), SFS_STATE_VALID);
	assert_int_equal(sfs_le32(sb->s_blocks_count), 16384);
	assert_int_equal(sfs_le32(sb->s_first_data_block), 1);
	assert_int_equal(sfs_le32(sb->s_log_cluster_size), 0);
	assert_int_equal(sfs_le32(sb->s_clusters_per_group), 8192);
	assert_int_equal(sfs_le16(sb->s_max_mnt_count), 0xFFFF);
	assert_int_equal(sfs_le16(sb->s_errors), 1);
	assert_int_equal(sfs_le32(sb->s_first_ino), 11);
	assert_int_equal(sfs_le16(sb->s_min_extra_isize), 32);
	assert_int_equal(sfs_le16(sb->s_want_extra_isize), 32);
	assert_int_equal(sfs_le32(sb->s_default_mount_opts), 0xC);
	assert_int_equal(sfs_le32(sb->s_flags), 1);
	assert_int_equal(sb->s_def_hash_version, 1);
	assert_int_equal(sfs_le32(sb->s_mkfs_time), MK_TIME);
	assert_int_equal(sfs_le32(sb->s_wtime), MK_TIME);
	assert_int_equal(sfs_le32(sb->s_feature_compat), 0x08);
	assert_int_equal(sfs_le32(sb->s_feature_incompat), 0x02);
	assert_int_equal(sfs_le32(sb->s_feature_ro_compat), 0x03);
	assert_string_equal(sb->s_volume_name, "testvol");
	assert_int_equal(sfs_le32(sb->s_inodes_count),
			 sfs_le32(sb->s_inodes_per_group) * 2);
	static const uint8_t zero16[16];
	assert_memory_not_equal(sb->s_uuid, zero16, 16);
	assert_int_equal(sb->s_uuid[6] >> 4, 4); /* version 4 */

	/* The group 1 backup: at offset 0 of block 8193, group nr 1, state
	 * 0, otherwise equal. */
	b1 = (const struct sfs_dsuper *)(img + 8193ull * 1024);
	assert_int_equal(sfs_le16(b1->s_block_group_nr), 1);
	assert_int_equal(b1->s_state, 0);
	struct sfs_dsuper tmp = *b1;
	tmp.s_block_group_nr = 0;
	tmp.s_state = sb->s_state;
	assert_memory_equal(&tmp, sb, sizeof(tmp));

	/* Writes only, in range; the primary superblock last, then flush. */
	log = sfs_ramdev_log(bd, &n);
	assert_true(n >= 4);
	for (size_t i = 0; i < n; i++)
		assert_int_not_equal(log[i].op, SFS_IO_READ);
	assert_int_equal(log[n - 1].op, SFS_IO_FLUSH);
	assert_int_equal(log[n - 2].op, SFS_IO_WRITE);
	assert_int_equal(log[n - 2].cat, SFS_IO_SUPER);
	assert_int_equal(log[n - 2].off_bytes, 1024);
	sfs_bdev_close(bd);
}

static void test_mkfs_seed_makes_identical_images(void **state)
{
	struct sfs_bdev *a = sfs_ramdev_new(16 * MiB);
	struct sfs_bdev *b = sfs_ramdev_new(16 * MiB);
	struct sfs_bdev *c = sfs_ramdev_new(16 * MiB);
	const struct sfs_dsuper *sa, *sc;

	mkfs_ram(a, 2048, 42, "");
	mkfs_ram(b, 2048, 42, "");
	mkfs_ram(c, 2048, 43, "");
	assert_memory_equal(sfs_ramdev_data(a), sfs_ramdev_data(b), 16 * MiB);
	sa = (const struct sfs_dsuper *)(sfs_ramdev_data(a) + 1024);
	sc = (const struct sfs_dsuper *)(sfs_ramdev_data(c) + 1024);
	assert_memory_not_equal(sa->s_uuid, sc->s_uuid, 16);
	assert_memory_not_equal(sa->s_hash_seed, sc->s_hash_seed, 16);
	sfs_bdev_close(a);
	sfs_bdev_close(b);
	sfs_bdev_close(c);
}

/* Without a time of its own, mkfs takes $SOURCE_DATE_EPOCH, checked. */
static void test_mkfs_source_date_epoch(void **state)
{
	struct sfs_bdev *a = sfs_ramdev_new(16 * MiB);
	struct sfs_mkfs_params p;
	const struct sfs_dsuper *sa;
	char *err = NULL;

	(void)state;
	sfs_mkfs_defaults(&p);
	p.seed = 5;
	setenv("SOURCE_DATE_EPOCH", "1234567890", 1);
	assert_int_equal(sfs_mkfs(a, &p, &err), 0);
	sa = (const struct sfs_dsuper *)(sfs_ramdev_data(a) + 1024);
	assert_int_equal(sfs_le32(sa->s_mkfs_time), 1234567890);
	assert_int_equal(sfs_le32(sa->s_wtime), 1234567890);
	setenv("SOURCE_DATE_EPOCH", "12x", 1);
	assert_int_equal(sfs_mkfs(a, &p, &err), -EINVAL);
	assert_non_null(strstr(err, "SOURCE_DATE_EPOCH"));
	g_free(err);
	unsetenv("SOURCE_DATE_EPOCH");
	sfs_bdev_close(a);
}

/* Sum of zeroing (SFS_IO_OTHER write) bytes in a RAM device's log. */
static uint64_t zeroed_bytes(struct sfs_bdev *bd)
{
	size_t n;
	const struct sfs_io_req *log = sfs_ramdev_log(bd, &n);
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++)
		if (log[i].op == SFS_IO_WRITE && log[i].cat == SFS_IO_OTHER)
			sum += log[i].len_bytes;
	return sum;
}

static void test_mkfs_zeroes_tables_only_when_needed(void **state)
{
	struct sfs_bdev *fresh = sfs_ramdev_new(64 * MiB);
	struct sfs_bdev *used = sfs_ramdev_new(64 * MiB);
	const struct sfs_dsuper *sb;
	uint64_t itable_bytes;

	/* A device full of garbage: everything must be zeroed. */
	memset(sfs_ramdev_data(used), 0xA5, 64 * MiB);
	sfs_bdev_set_known_zero(used, false);
	mkfs_ram(fresh, 4096, 1, "");
	mkfs_ram(used, 4096, 1, "");
	assert_int_equal(zeroed_bytes(fresh), 0);
	sb = (const struct sfs_dsuper *)(sfs_ramdev_data(used) + 1024);
	itable_bytes = (uint64_t)sfs_le32(sb->s_inodes_count) * 256;
	/* Inode tables (less the block written with inodes 1..11) + the
	 * boot area and old superblock. */
	assert_int_equal(zeroed_bytes(used), itable_bytes - 4096 + 2048);
	/* Metadata is identical; only free blocks keep their garbage:
	 * sb, GDT, 2 bitmaps, inode table, root, 4 lost+found blocks. */
	assert_memory_equal(sfs_ramdev_data(used), sfs_ramdev_data(fresh),
			    (4 + itable_bytes / 4096 + 1 + 4) * 4096);
	assert_int_equal(sfs_ramdev_data(used)[64 * MiB - 1], 0xA5);
	sfs_bdev_close(fresh);
	sfs_bdev_close(used);
}

static void test_mkfs_used_file_passes_fsck(void **state)
{
	struct fixture *f = *state;
	char *path = g_build_filename(f->dir, "used.img", NULL);
	uint8_t *junk = g_malloc(MiB);
	struct sfs_mkfs_params p;
	struct sfs_bdev *bd;
	char *err = NULL, *out = NULL;
	GRand *r = g_rand_new_with_seed(5);
	FILE *fp = fopen(path, "wb");

	/* A 32 MiB file of random bytes, then an ext2 magic at 1024+56. */
	assert_non_null(fp);
	for (int i = 0; i < 32; i++) {
		for (size_t k = 0; k < MiB; k += 4) {
			guint32 v = g_rand_int(r);

			memcpy(junk + k, &v, 4);
		}
		assert_int_equal(fwrite(junk, 1, MiB, fp), MiB);
	}
	fclose(fp);
	assert_int_equal(sfs_bdev_open_file(path, SFS_BDEV_EXCL, 0, &bd), 0);
	assert_false(sfs_bdev_known_zero(bd));
	sfs_mkfs_defaults(&p);
	p.block_size = 1024;
	assert_int_equal(sfs_mkfs(bd, &p, &err), 0);
	sfs_bdev_close(bd);
	if (!sfs_test_fsck_clean(path, &out))
		fail_msg("mkfs over garbage not clean:\n%s", out);
	g_free(out);
	g_free(junk);
	g_rand_free(r);
	unlink(path);
	g_free(path);
}

static void test_mkfs_whole_device_rounds_to_pages(void **state)
{
	/* 64 MiB + 3 KiB at 1 KiB blocks: mke2fs takes 65536 blocks. */
	struct sfs_bdev *bd = sfs_ramdev_new(64 * MiB + 3072);
	const struct sfs_dsuper *sb;

	mkfs_ram(bd, 1024, 1, "");
	sb = (const struct sfs_dsuper *)(sfs_ramdev_data(bd) + 1024);
	assert_int_equal(sfs_le32(sb->s_blocks_count), 65536);
	sfs_bdev_close(bd);

	/* An explicit size is taken as given (then trimmed by the rules). */
	struct sfs_mkfs_params p;
	char *err = NULL;
	bd = sfs_ramdev_new(64 * MiB + 3072);
	sfs_mkfs_defaults(&p);
	p.block_size = 1024;
	p.size_bytes = 64 * MiB + 3072;
	assert_int_equal(sfs_mkfs(bd, &p, &err), 0);
	sb = (const struct sfs_dsuper *)(sfs_ramdev_data(bd) + 1024);
	assert_int_equal(sfs_le32(sb->s_blocks_count), 65537);
	sfs_bdev_close(bd);
}

static void test_mkfs_write_error_reported(void **state)
{
	struct sfs_bdev *fd = sfs_faultdev_new(sfs_ramdev_new(16 * MiB));
	struct sfs_mkfs_params p;
	char *err = NULL;

	sfs_mkfs_defaults(&p);
	sfs_faultdev_arm(fd, SFS_FAULT_WRITE, 3, false);
	assert_int_equal(sfs_mkfs(fd, &p, &err), -EIO);
	assert_non_null(err);
	assert_non_null(strstr(err, "cannot write"));
	g_free(err);
	err = NULL;
	sfs_faultdev_arm(fd, SFS_FAULT_FLUSH, 1, false);
	assert_int_equal(sfs_mkfs(fd, &p, &err), -EIO);
	assert_non_null(strstr(err, "flush"));
	g_free(err);
	sfs_faultdev_disarm(fd);
	assert_int_equal(sfs_mkfs(fd, &p, NULL), 0);
	sfs_bdev_close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mkfs_dir_index_matches_mke2fs),
	    cmocka_unit_test(test_mkfs_ext3_matches_mke2fs),
	    cmocka_unit_test(test_mkfs_resize_inode_matches_mke2fs),
	    cmocka_unit_test(test_mkfs_extent_matches_mke2fs),
	    cmocka_unit_test(test_mkfs_type_defaults_match_mke2fs),
	    cmocka_unit_test(test_mkfs_flex_bg_matches_mke2fs),
	    cmocka_unit_test(test_mkfs_csum_matches_mke2fs),
	    cmocka_unit_test(test_mkfs_csum_image_mounts_rw),
	    cmocka_unit_test(test_mkfs_csum_image_refuses_engine_journal),
	    cmocka_unit_test(test_mkfs_ro_compat_features),
	    cmocka_unit_test(test_mkfs_feature_names_refused),
	    cmocka_unit_test(test_mkfs_1k_matches_mke2fs),
	    cmocka_unit_test(test_mkfs_2k_matches_mke2fs),
	    cmocka_unit_test(test_mkfs_4k_matches_mke2fs),
	    cmocka_unit_test(test_mkfs_geometry_corners_match_mke2fs),
	    cmocka_unit_test(test_mkfs_1tib_sparse_formats_and_checks),
	    cmocka_unit_test(test_mkfs_fsck_oracle_sees_problems),
	    cmocka_unit_test(test_mkfs_bad_params_rejected),
	    cmocka_unit_test(test_mkfs_superblock_fields_and_write_order),
	    cmocka_unit_test(test_mkfs_seed_makes_identical_images),
	    cmocka_unit_test(test_mkfs_source_date_epoch),
	    cmocka_unit_test(test_mkfs_zeroes_tables_only_when_needed),
	    cmocka_unit_test(test_mkfs_used_file_passes_fsck),
	    cmocka_unit_test(test_mkfs_whole_device_rounds_to_pages),
	    cmocka_unit_test(test_mkfs_write_error_reported),
	};

	return cmocka_run_group_tests_name("mkfs", tests, setup, teardown);
}
