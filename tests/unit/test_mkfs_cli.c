/*
 * test_mkfs_cli.c - simfs mkfs's option words as simfs run --mkfs and the
 * mkfs key of experiment files read them (simfs/mkfs_cli.c): good words
 * reach sfs_mkfs_params and then the superblock of the image sfs_mkfs
 * writes; bad words are refused with a message naming the word; every
 * preset's era words ("preset") parse, and the ext4 ones give the 2009
 * ext4 layout.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include <glib.h>

#include "config.h"
#include "format.h"
#include "mkfs_cli.h"
#include "testsupport.h"

#define MiB (1024ull * 1024)

/* Parse words for preset (or "") and resolve them for size: the params. */
static struct sfs_mkfs_params parse_ok(const char *words, const char *preset,
				       uint64_t size)
{
	struct sfs_mkfs_cli c;
	struct sfs_mkfs_params p;
	char *err = NULL;

	sfs_mkfs_cli_init(&c);
	if (sfs_mkfs_cli_parse_for(&c, words, preset, size, &err))
		fail_msg("'%s': %s", words, err);
	assert_int_equal(sfs_mkfs_cli_resolve(&c, size, &p, &err), 0);
	sfs_mkfs_cli_clear(&c);
	return p;
}

static void test_words_good(void **state)
{
	struct sfs_mkfs_params p, d;

	(void)state;
	sfs_mkfs_defaults(&d);
	/* no word at all: sfs_mkfs_defaults */
	p = parse_ok("", "", 64 * MiB);
	assert_memory_equal(&p, &d, sizeof(p));
	p = parse_ok("-O dir_index,^resize_inode -I 128", "", 64 * MiB);
	assert_true(p.dir_index);
	assert_false(p.resize_inode);
	assert_int_equal(p.inode_size, 128);
	p = parse_ok("-O flex_bg -G 4 -b 2048 -i 8192", "", 64 * MiB);
	assert_true(p.flex_bg);
	assert_int_equal(p.log_groups_per_flex, 2);
	assert_int_equal(p.block_size, 2048);
	assert_int_equal(p.inode_ratio, 8192);
	/* -t's defaults first, whatever the order; quoted words */
	p = parse_ok("-O ^dir_index -t ext3 -L 'a label'", "", 1024 * MiB);
	assert_true(p.has_journal);
	assert_false(p.dir_index);
	assert_true(p.resize_inode);
	assert_string_equal(p.label, "a label");
	p = parse_ok("-J size=8M", "", 64 * MiB);
	assert_true(p.has_journal);
}

static void test_words_bad(void **state)
{
	static const struct {
		const char *words, *what;
	} bad[] = {
	    {"-O dir_index,frobnicate", "frobnicate"},
	    {"-b 3000", "bad block size '3000'"},
	    {"-I 512", "bad inode size '512'"},
	    {"-G 3 -O flex_bg", "bad flex_bg size '3'"},
	    {"-G 4", "-G needs the flex_bg feature"},
	    {"-t ext9", "ext9"},
	    {"-x", "unknown option '-x'"},
	    {"--nosuch", "unknown option '--nosuch'"},
	    {"-b", "option '-b' needs a value"},
	    {"-O dir_index image.img", "'image.img' is not a simfs mkfs"},
	    {"-F", "-F: only for simfs mkfs itself"},
	    {"-J device=j.img", "-J device=: only for simfs mkfs itself"},
	    {"-O 'unclosed", "mkfs options"},
	    {"-O meta_bg", "meta_bg"},
	    {"preset", "'preset' needs a preset="},
	};

	(void)state;
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		struct sfs_mkfs_cli c;
		char *err = NULL;

		sfs_mkfs_cli_init(&c);
		assert_int_equal(sfs_mkfs_cli_parse_for(&c, bad[i].words, "",
							64 * MiB, &err),
				 -EINVAL);
		assert_non_null(err);
		if (!strstr(err, bad[i].what))
			fail_msg("'%s': want '%s' in '%s'", bad[i].words,
				 bad[i].what, err);
		assert_null(strchr(err, '\n'));
		g_free(err);
		sfs_mkfs_cli_clear(&c);
	}
}

/* Every preset names its era's features, and they parse and lay out. */
static void test_presets_era(void **state)
{
	const struct sfs_config_preset *pr;

	(void)state;
	for (unsigned i = 0; (pr = sfs_config_preset_nth(i)); i++) {
		struct sfs_mkfs_params p;
		struct sfs_bdev *bd = sfs_ramdev_new(64 * MiB);
		char *err = NULL;

		assert_non_null(pr->mkfs);
		p = parse_ok("preset", pr->name, 64 * MiB);
		/* a journal exactly where the preset needs one */
		assert_int_equal(p.has_journal, pr->journaled);
		p.seed = 1;
		p.time = 1230768000u;
		if (sfs_mkfs(bd, &p, &err))
			fail_msg("preset %s: %s", pr->name, err);
		sfs_bdev_close(bd);
	}
	/* the 2009 ext4 of e2fsprogs 1.41 */
	struct sfs_mkfs_params e = parse_ok("preset", "ext4", 64 * MiB);
	assert_true(e.extent && e.flex_bg && e.dir_index && e.resize_inode);
	assert_true(e.has_journal);
	assert_int_equal(e.inode_size, 256);
	assert_true(e.ro_compat & SFS_FEATURE_RO_COMPAT_GDT_CSUM);
	assert_true(sfs_mkfs_makes_journal(&e));
	/* 2002: no htree, 128-byte inodes */
	e = parse_ok("preset", "ext3", 64 * MiB);
	assert_false(e.dir_index || e.resize_inode || e.extent || e.flex_bg);
	assert_int_equal(e.inode_size, 128);
}

/* What the words ask for is in the superblock sfs_mkfs writes. */
static void test_words_reach_superblock(void **state)
{
	struct sfs_bdev *bd = sfs_ramdev_new(64 * MiB);
	struct sfs_mkfs_params p =
	    parse_ok("-O dir_index,flex_bg,extent -I 128", "", 64 * MiB);
	const struct sfs_dsuper *sb;
	char *err = NULL;

	(void)state;
	p.seed = 1;
	p.time = 1230768000u;
	if (sfs_mkfs(bd, &p, &err))
		fail_msg("%s", err);
	sb =
	    (const struct sfs_dsuper *)(sfs_ramdev_data(bd) + SFS_SUPER_OFFSET);
	assert_true(sfs_le32(sb->s_feature_compat) &
		    SFS_FEATURE_COMPAT_DIR_INDEX);
	assert_false(sfs_le32(sb->s_feature_compat) &
		     SFS_FEATURE_COMPAT_RESIZE_INODE);
	assert_true(sfs_le32(sb->s_feature_incompat) &
		    SFS_FEATURE_INCOMPAT_FLEX_BG);
	assert_true(sfs_le32(sb->s_feature_incompat) &
		    SFS_FEATURE_INCOMPAT_EXTENTS);
	assert_int_equal(sfs_le16(sb->s_inode_size), 128);
	sfs_bdev_close(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_words_good),
	    cmocka_unit_test(test_words_bad),
	    cmocka_unit_test(test_presets_era),
	    cmocka_unit_test(test_words_reach_superblock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
