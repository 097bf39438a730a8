/*
 * test_dirhash.c - the htree name hashes (simfs/dirhash.c) against
 * e2fsprogs 1.47.
 *
 * The expected values are what `debugfs -R "dx_hash -h V -s SEED NAME"`
 * printed for hash versions 0-5 (legacy, half_md4, tea and their unsigned
 * variants), with the seed below and with none (all zero), over names of
 * 1 to 68 bytes: short, one and several half_md4 / tea chunks, and bytes
 * of 0x80 and above, where the signed and unsigned variants differ.  A
 * second case checks the hash of names in a directory the kernel indexed
 * against the dx_root's ranges: each leaf's names hash within its range.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "dirhash.h"
#include "testsupport.h"

/* b1e0c3f2-7a45-4d1e-9c2b-5f6e7d8c9a0b as debugfs parses it: UUID bytes,
 * read as four little-endian words */
static const uint8_t seed_bytes[16] = {0xb1, 0xe0, 0xc3, 0xf2, 0x7a, 0x45,
				       0x4d, 0x1e, 0x9c, 0x2b, 0x5f, 0x6e,
				       0x7d, 0x8c, 0x9a, 0x0b};

static const struct {
	unsigned version;
	int seeded;
	const char *name;
	uint32_t hash, minor;
} cases[] = {
    {0, 1, "a", 0xe74b53e2u, 0x0u},
    {0, 0, "a", 0xe74b53e2u, 0x0u},
    {0, 1, "hello", 0x32252546u, 0x0u},
    {0, 0, "hello", 0x32252546u, 0x0u},
    {0, 1, "kernel-made-name-00042", 0x925f589eu, 0x0u},
    {0, 0, "kernel-made-name-00042", 0x925f589eu, 0x0u},
    {0, 1, "lost+found", 0x5e2aba24u, 0x0u},
    {0, 0, "lost+found", 0x5e2aba24u, 0x0u},
    {0, 1,
     "caf\xc3"
     "\xa9"
     "-\xff"
     "\xfe"
     "",
     0xcde4cb70u, 0x0u},
    {0, 0,
     "caf\xc3"
     "\xa9"
     "-\xff"
     "\xfe"
     "",
     0xcde4cb70u, 0x0u},
    {0, 1,
     "a-name-that-is-longer-than-thirty-two-bytes-so-two-blocks-are-hashed",
     0xd247fe42u, 0x0u},
    {0, 0,
     "a-name-that-is-longer-than-thirty-two-bytes-so-two-blocks-are-hashed",
     0xd247fe42u, 0x0u},
    {1, 1, "a", 0xe8e3918au, 0xf884b105u},
    {1, 0, "a", 0xd5fa7d7au, 0xacb48187u},
    {1, 1, "hello", 0xd99b7fbau, 0x4a37095fu},
    {1, 0, "hello", 0x1746da32u, 0x420013b5u},
    {1, 1, "kernel-made-name-00042", 0x3d276ffcu, 0xfc4c07dcu},
    {1, 0, "kernel-made-name-00042", 0x6aabcf4au, 0x52be33f4u},
    {1, 1, "lost+found", 0x1a729bd0u, 0x4a81569fu},
    {1, 0, "lost+found", 0x591de422u, 0x6ffc56e0u},
    {1, 1,
     "caf\xc3"
     "\xa9"
     "-\xff"
     "\xfe"
     "",
     0x63e4bff8u, 0x65153e34u},
    {1, 0,
     "caf\xc3"
     "\xa9"
     "-\xff"
     "\xfe"
     "",
     0x3f3ddfc4u, 0x96556382u},
    {1, 1,
     "a-name-that-is-longer-than-thirty-two-bytes-so-two-blocks-are-hashed",
     0x577fc2aau, 0x49c93535u},
    {1, 0,
     "a-name-that-is-longer-than-thirty-two-bytes-so-two-blocks-are-hashed",
     0xc1e9a6eeu, 0xe4cca483u},
    {2, 1, "a", 0x64d20470u, 0xd96e5c17u},
    {2, 0, "a", 0x6d0ea4c0u, 0xc18922dfu},
    {2, 1, "hello", 0x75fac0a4u, 0xebb1c0a9u},
    {2, 0, "hello", 0x6f5bb1a8u, 0x231917c2u},
    {2, 1, "kernel-made-name-00042", 0x27cac5d4u, 0x2a40cb74u},
    {2, 0, "kernel-made-name-00042", 0xcf1a7662u, 0x6732c10eu},
    {2, 1, "lost+found", 0x3ad02cfeu, 0x385fec61u},
    {2, 0, "lost+found", 0x2dbf9e80u, 0xbfebee4fu},
    {2, 1,
     "caf\xc3"
     "\xa9"
     "-\xff"
     "\xfe"
     "",
     0x9921ae5au, 0x16e9cbcau},
    {2, 0,
     "caf\xc3"
     "\xa9"
     "-\xff"
     "\xfe"
     "",
     0xf3150fa4u, 0x4793ace8u},
    {2, 1,
     "a-name-that-is-longer-than-thirty-two-bytes-so-two-blocks-are-hashed",
     0xeb5db37cu, 0xee3e895u},
    {2, 0,
     "a-name-that-is-longer-than-thirty-two-bytes-so-two-blocks-are-hashed",
     0xc17a4570u, 0xb2035407u},
    {3, 1, "a", 0xe74b53e2u, 0x0u},
    {3, 0, "a", 0xe74b53e2u, 0x0u},
    {3, 1, "hello", 0x32252546u, 0x0u},
    {3, 0, "hello", 0x32252546u, 0x0u},
    {3, 1, "kernel-made-name-00042", 0x925f589eu, 0x0u},
    {3, 0, "kernel-made-name-00042", 0x925f589eu, 0x0u},
    {3, 1, "lost+found", 0x5e2aba24u, 0x0u},
    {3, 0, "lost+found", 0x5e2aba24u, 0x0u},
    {3, 1,
     "caf\xc3"
     "\xa9"
     "-\xff"
     "\xfe"
     "",
     0x5bd8bb74u, 0x0u},
    {3, 0,
     "caf\xc3"
     "\xa9"
     "-\xff"
     "\xfe"
     "",
     0x5bd8bb74u, 0x0u},
    {3, 1,
     "a-name-that-is-longer-than-thirty-two-bytes-so-two-blocks-are-hashed",
     0xd247fe42u, 0x0u},
    {3, 0,
     "a-name-that-is-longer-than-thirty-two-bytes-so-two-blocks-are-hashed",
     0xd247fe42u, 0x0u},
    {4, 1, "a", 0xe8e3918au, 0xf884b105u},
    {4, 0, "a", 0xd5fa7d7au, 0xacb48187u},
    {4, 1, "hello", 0xd99b7fbau, 0x4a37095fu},
    {4, 0, "hello", 0x1746da32u, 0x420013b5u},
    {4, 1, "kernel-made-name-00042", 0x3d276ffcu, 0xfc4c07dcu},
    {4, 0, "kernel-made-name-00042", 0x6aabcf4au, 0x52be33f4u},
    {4, 1, "lost+found", 0x1a729bd0u, 0x4a81569fu},
    {4, 0, "lost+found", 0x591de422u, 0x6ffc56e0u},
    {4, 1,
     "caf\xc3"
     "\xa9"
     "-\xff"
     "\xfe"
     "",
     0xee19a7f0u, 0x3a7afa2u},
    {4, 0,
     "caf\xc3"
     "\xa9"
     "-\xff"
     "\xfe"
     "",
     0x17d58c4eu, 0x91354c0cu},
    {4, 1,
     "a-name-that-is-longer-than-thirty-two-bytes-so-two-blocks-are-hashed",
     0x577fc2aau, 0x49c93535u},
    {4, 0,
     "a-name-that-is-longer-than-thirty-two-bytes-so-two-blocks-are-hashed",
     0xc1e9a6eeu, 0xe4cca483u},
    {5, 1, "a", 0x64d20470u, 0xd96e5c17u},
    {5, 0, "a", 0x6d0ea4c0u, 0xc18922dfu},
    {5, 1, "hello", 0x75fac0a4u, 0xebb1c0a9u},
    {5, 0, "hello", 0x6f5bb1a8u, 0x231917c2u},
    {5, 1, "kernel-made-name-00042", 0x27cac5d4u, 0x2a40cb74u},
    {5, 0, "kernel-made-name-00042", 0xcf1a7662u, 0x6732c10eu},
    {5, 1, "lost+found", 0x3ad02cfeu, 0x385fec61u},
    {5, 0, "lost+found", 0x2dbf9e80u, 0xbfebee4fu},
    {5, 1,
     "caf\xc3"
     "\xa9"
     "-\xff"
     "\xfe"
     "",
     0x580629f4u, 0xf323936du},
    {5, 0,
     "caf\xc3"
     "\xa9"
     "-\xff"
     "\xfe"
     "",
     0x5e7735bcu, 0x6d7bd456u},
    {5, 1,
     "a-name-that-is-longer-than-thirty-two-bytes-so-two-blocks-are-hashed",
     0xeb5db37cu, 0xee3e895u},
    {5, 0,
     "a-name-that-is-longer-than-thirty-two-bytes-so-two-blocks-are-hashed",
     0xc17a4570u, 0xb2035407u},
};

static void test_dirhash_matches_e2fsprogs(void **state)
{
	uint32_t seed[4];

	(void)state;
	for (int i = 0; i < 4; i++)
		seed[i] = (uint32_t)seed_bytes[4 * i] |
			  (uint32_t)seed_bytes[4 * i + 1] << 8 |
			  (uint32_t)seed_bytes[4 * i + 2] << 16 |
			  (uint32_t)seed_bytes[4 * i + 3] << 24;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t h = 0, m = 0;

		assert_int_equal(
		    sfs_dirhash(cases[i].version, cases[i].seeded ? seed : NULL,
				cases[i].name, strlen(cases[i].name), &h, &m),
		    0);
		if (h != cases[i].hash || m != cases[i].minor)
			fail_msg("version %u, %s seed, name '%s': got "
				 "0x%08x/0x%08x, want 0x%08x/0x%08x",
				 cases[i].version,
				 cases[i].seeded ? "with" : "no", cases[i].name,
				 h, m, cases[i].hash, cases[i].minor);
	}
}

/* Unknown versions are refused; the end-of-directory value never comes
 * out; NULL minor is allowed. */
static void test_dirhash_edges(void **state)
{
	uint32_t h, zero[4] = {0, 0, 0, 0};

	(void)state;
	assert_int_equal(sfs_dirhash(6, NULL, "x", 1, &h, NULL), -EINVAL);
	assert_int_equal(sfs_dirhash(SFS_DX_HASH_TEA, zero, "x", 1, &h, NULL),
			 0);
	assert_int_equal(h & 1, 0);
	assert_int_equal(
	    sfs_dirhash(SFS_DX_HASH_HALF_MD4, NULL, "", 0, &h, NULL), 0);
	assert_true(h != 0xfffffffeu);
}

/* Run argv (PATH searched); its stdout (g_free) if it exits 0 or 1. */
static char *run_out(gchar **argv)
{
	char *out = NULL;
	gint status = -1;

	if (!g_spawn_sync(NULL, argv, NULL,
			  G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL,
			  NULL, NULL, &out, NULL, &status, NULL))
		return NULL;
	if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) {
		g_free(out);
		return NULL;
	}
	return out;
}

/* The seed words from dumpe2fs's "Directory Hash Seed: UUID". */
static bool parse_seed(const char *dump, uint32_t seed[4])
{
	const char *p = strstr(dump, "Directory Hash Seed:");
	uint8_t b[16];
	int n = 0;

	if (!p)
		return false;
	p += strlen("Directory Hash Seed:");
	while (*p && *p != '\n' && n < 16) {
		if (g_ascii_isxdigit(p[0]) && g_ascii_isxdigit(p[1])) {
			b[n++] = (uint8_t)(g_ascii_xdigit_value(p[0]) << 4 |
					   g_ascii_xdigit_value(p[1]));
			p += 2;
		} else {
			p++;
		}
	}
	for (int i = 0; i < 4; i++)
		seed[i] = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 |
			  (uint32_t)b[4 * i + 2] << 16 |
			  (uint32_t)b[4 * i + 3] << 24;
	return n == 16;
}

static void test_dirhash_e2fsprogs_htree(void **state)
{
	enum { N = 400, MAXB = 64 };
	char *dir = sfs_test_tmpdir();
	char *src = g_build_filename(dir, "src", NULL);
	char *big = g_build_filename(src, "big", NULL);
	char *img = g_build_filename(dir, "img", NULL);
	gchar *mkfs[] = {"mke2fs", "-F", "-q", "-t", "ext2", "-b",
			 "1024",   "-d", src,  img,  "8M",   NULL};
	gchar *fsck[] = {"e2fsck", "-fyD", img, NULL};
	gchar *dump[] = {"dumpe2fs", "-h", img, NULL};
	gchar *htree[] = {"debugfs", "-R", "htree /big", img, NULL};
	uint32_t lo[MAXB], seed[4];
	int has[MAXB] = {0}, nblocks = 0;
	char *out, *fsck_out, *sb, **lines;
	unsigned version = 99, checked = 0, cur = UINT32_MAX;

	(void)state;
	assert_int_equal(g_mkdir_with_parents(big, 0755), 0);
	for (unsigned i = 0; i < N; i++) {
		/* every third name has bytes >= 0x80 (signed vs unsigned) */
		char *name = g_strdup_printf(
		    i % 3 ? "f%u-name" : "\xc3\xa9t\xc3\xa9-%u", i);
		char *p = g_build_filename(big, name, NULL);

		assert_true(g_file_set_contents(p, "", 0, NULL));
		g_free(p);
		g_free(name);
	}
	out = run_out(mkfs);
	fsck_out = out ? run_out(fsck) : NULL;
	sb = fsck_out ? run_out(dump) : NULL;
	g_free(out);
	g_free(fsck_out);
	if (!sb) {
		sfs_test_rmtree(dir);
		g_free(img);
		g_free(big);
		g_free(src);
		g_free(dir);
		skip();
		return;
	}
	assert_true(parse_seed(sb, seed));
	if (!strstr(sb, "signed_directory_hash") ||
	    strstr(sb, "unsigned_directory_hash"))
		version = SFS_DX_HASH_UNSIGNED_DELTA; /* added below */
	else
		version = 0;
	g_free(sb);
	out = run_out(htree);
	assert_non_null(out);
	lines = g_strsplit(out, "\n", -1);
	for (char **l = lines; *l; l++) {
		unsigned hv, blk, ino, rl;
		uint32_t h, m, gh, gm;
		char name[300];
		const char *p = *l;
		int used;

		if (sscanf(p, " Hash Version: %u", &hv) == 1) {
			version += hv;
			continue;
		}
		if (sscanf(p, "Entry #%*u: Hash 0x%x, block %u", &h, &blk) ==
		    2) {
			assert_true(blk < MAXB);
			lo[blk] = h;
			has[blk] = 1;
			nblocks++;
			continue;
		}
		if (sscanf(p, "Reading directory block %u", &blk) == 1) {
			cur = blk;
			continue;
		}
		/* leaf lines: "INO 0xHASH-0xMINOR (REC_LEN) NAME   ..." */
		while (cur != UINT32_MAX &&
		       sscanf(p, "%u 0x%x-%x (%u) %299s%n", &ino, &h, &m, &rl,
			      name, &used) == 5) {
			uint32_t hi = UINT32_MAX;

			p += used;
			if (!strcmp(name, ".") || !strcmp(name, ".."))
				continue;
			assert_int_equal(sfs_dirhash(version, seed, name,
						     strlen(name), &gh, &gm),
					 0);
			if (gh != h || gm != m)
				fail_msg("'%s': 0x%08x-0x%08x, debugfs says "
					 "0x%08x-0x%08x",
					 name, gh, gm, h, m);
			/* the next range's start bounds this leaf */
			for (unsigned b = 0; b < MAXB; b++)
				if (has[b] && lo[b] > lo[cur] && lo[b] < hi)
					hi = lo[b];
			assert_true(has[cur]);
			if (gh < (lo[cur] & ~1u) || gh > hi)
				fail_msg("'%s' hash 0x%08x is outside its "
					 "leaf's range [0x%08x, 0x%08x)",
					 name, gh, lo[cur], hi);
			checked++;
		}
	}
	g_strfreev(lines);
	g_free(out);
	assert_true(nblocks > 2);
	assert_int_equal(version, SFS_DX_HASH_HALF_MD4);
	assert_int_equal(checked, N);
	sfs_test_rmtree(dir);
	g_free(img);
	g_free(big);
	g_free(src);
	g_free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dirhash_matches_e2fsprogs),
	    cmocka_unit_test(test_dirhash_edges),
	    cmocka_unit_test(test_dirhash_e2fsprogs_htree),
	};

	return cmocka_run_group_tests_name("dirhash", tests, NULL, NULL);
}
