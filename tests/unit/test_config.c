/*
 * test_config.c - the knob table and option parser (simfs/config.c).
 *
 * Every knob is parsed in each accepted form; bad values, unknown keys and
 * malformed strings are refused with a message and leave the config as it
 * was; unknown keys pass through to the caller's list when it asks for them
 * (they are FUSE's options on a mount).  Spec knobs (device=, sched=) pick
 * up the knobs of their model that follow them in the string, are checked
 * by building the model, and only clock= and device= may change on a live
 * mount (sfs_config_parse_runtime).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <glib.h>

#include "config.h"
#include "devmodel.h" /* struct sfs_knob */

#define MiB (1ull << 20)

/* Field by field: struct padding is not part of the config. */
static void assert_cfg_equal(const struct sfs_config *a,
			     const struct sfs_config *b)
{
	assert_string_equal(a->alloc, b->alloc);
	assert_string_equal(a->journal, b->journal);
	assert_int_equal(a->mem_bytes, b->mem_bytes);
	assert_int_equal(a->direct, b->direct);
	assert_int_equal(a->ro, b->ro);
	assert_string_equal(a->device, b->device);
	assert_string_equal(a->sched, b->sched);
	assert_string_equal(a->clock, b->clock);
	assert_string_equal(a->stats_path, b->stats_path);
	assert_string_equal(a->iolog_path, b->iolog_path);
}

/* Parse opts into a default config; returns rc, frees err. */
static int parse(struct sfs_config *cfg, const char *opts)
{
	char *err = NULL;
	int rc;

	sfs_config_defaults(cfg);
	rc = sfs_config_parse(cfg, opts, NULL, &err);
	if (rc == 0)
		assert_null(err);
	g_free(err);
	return rc;
}

/* One of the errnos a refused option string may get (config.h). */
static bool refusal_errno(int rc)
{
	return rc == -EINVAL || rc == -ERANGE || rc == -ENOKEY || rc == -EPERM;
}

/*
 * opts must be refused: -EINVAL, -ERANGE or -ENOKEY, a one-line message
 * containing `needle` (if non-NULL), the config and the unknown list
 * untouched.
 */
static void expect_refused(const char *opts, const char *needle)
{
	struct sfs_config cfg, before;
	char *err = NULL;
	char *unknown = g_strdup("keep");
	int rc;

	sfs_config_defaults(&cfg);
	cfg.mem_bytes = 3 * MiB; /* not a default: must survive */
	before = cfg;
	rc = sfs_config_parse(&cfg, opts, &unknown, &err);
	if (!refusal_errno(rc) || rc == -EPERM)
		fail_msg("'%s' accepted (rc %d)", opts, rc);
	assert_non_null(err);
	assert_true(strlen(err) > 0);
	assert_null(strchr(err, '\n'));
	if (needle && !strstr(err, needle))
		fail_msg("'%s': message '%s' lacks '%s'", opts, err, needle);
	assert_cfg_equal(&cfg, &before);
	assert_string_equal(unknown, "keep");
	g_free(err);
	g_free(unknown);
}

/* Without an unknown list, opts is refused for naming no knob `key`. */
static void expect_unknown(const char *opts, const char *key)
{
	struct sfs_config cfg, before;
	char *err = NULL, *want = g_strdup_printf("unknown option '%s'", key);

	sfs_config_defaults(&cfg);
	before = cfg;
	assert_int_equal(sfs_config_parse(&cfg, opts, NULL, &err), -ENOKEY);
	if (!err || !strstr(err, want))
		fail_msg("'%s': message '%s' lacks '%s'", opts, err, want);
	assert_cfg_equal(&cfg, &before);
	g_free(err);
	g_free(want);
}

static void test_config_defaults(void **state)
{
	struct sfs_config cfg;

	memset(&cfg, 0xa5, sizeof(cfg));
	sfs_config_defaults(&cfg);
	assert_string_equal(cfg.alloc, "blockmap");
	assert_string_equal(cfg.journal, "auto");
	assert_int_equal(cfg.commit_s, 5);
	assert_int_equal(cfg.journal_max_txn, 0);
	assert_string_equal(cfg.journal_dev, "");
	assert_string_equal(cfg.vm, "modern");
	assert_int_equal(cfg.dirty_ratio, 0);
	assert_int_equal(cfg.dirty_expire_cs, 0);
	assert_int_equal(cfg.mem_bytes, 256 * MiB);
	assert_false(cfg.direct);
	assert_false(cfg.ro);
	assert_string_equal(cfg.device, "ideal");
	assert_string_equal(cfg.sched, "elevator");
	assert_string_equal(cfg.clock, "virtual");
	assert_string_equal(cfg.stats_path, "");
	assert_string_equal(cfg.iolog_path, "");
}

static void test_config_empty_string(void **state)
{
	struct sfs_config cfg, def;

	sfs_config_defaults(&def);
	assert_int_equal(parse(&cfg, ""), 0);
	assert_cfg_equal(&cfg, &def);
}

static void test_config_alloc(void **state)
{
	struct sfs_config cfg;

	assert_int_equal(parse(&cfg, "alloc=blockmap"), 0);
	assert_string_equal(cfg.alloc, "blockmap");
	expect_refused("alloc=nosuch", "blockmap");
	expect_refused("alloc=", "alloc");
	expect_refused("alloc", "alloc");
	/* longer than the field: refused, not truncated */
	expect_refused("alloc=blockmapblockmapblockmapblockmapblockmap",
		       "blockmap");
}

static void test_config_data_and_journal(void **state)
{
	struct sfs_config cfg;

	assert_int_equal(parse(&cfg, "data=none"), 0);
	assert_string_equal(cfg.journal, "none");
	assert_int_equal(parse(&cfg, "journal=none"), 0);
	assert_string_equal(cfg.journal, "none");
	const char *modes[] = {"auto", "writeback", "ordered", "journal"};
	for (int i = 0; i < 4; i++) {
		char *o = g_strdup_printf("data=%s", modes[i]);
		assert_int_equal(parse(&cfg, o), 0);
		assert_string_equal(cfg.journal, modes[i]);
		g_free(o);
	}
	/* unknown policy: refused, naming the valid ones */
	expect_refused("data=bogus", "valid: auto, none, writeback, ordered");
	expect_refused("journal=", "");
}

static void test_config_journal_and_writeback_knobs(void **state)
{
	struct sfs_config cfg;

	assert_int_equal(parse(&cfg, "commit=30,journal_max_txn=2048,"
				     "journal_dev=/dev/loop7,vm=2.6,"
				     "dirty_ratio=40,dirty_background_ratio=10,"
				     "dirty_bytes=64M,dirty_background_bytes=8M,"
				     "dirty_expire_centisecs=1000,"
				     "dirty_writeback_centisecs=100"),
			 0);
	assert_int_equal(cfg.commit_s, 30);
	assert_int_equal(cfg.journal_max_txn, 2048);
	assert_string_equal(cfg.journal_dev, "/dev/loop7");
	assert_string_equal(cfg.vm, "2.6");
	assert_int_equal(cfg.dirty_ratio, 40);
	assert_int_equal(cfg.dirty_background_ratio, 10);
	assert_int_equal(cfg.dirty_bytes, 64 * MiB);
	assert_int_equal(cfg.dirty_background_bytes, 8 * MiB);
	assert_int_equal(cfg.dirty_expire_cs, 1000);
	assert_int_equal(cfg.dirty_writeback_cs, 100);
	expect_refused("commit=0", "out of range");
	expect_refused("dirty_ratio=101", "out of range");
	expect_refused("vm=2.4", "valid: 2.6");
	expect_refused("commit=5s", "commit");
}

static void test_config_mem(void **state)
{
	struct sfs_config cfg;

	assert_int_equal(parse(&cfg, "mem=1M"), 0);
	assert_int_equal(cfg.mem_bytes, MiB);
	assert_int_equal(parse(&cfg, "mem=2G"), 0);
	assert_int_equal(cfg.mem_bytes, 2048 * MiB);
	assert_int_equal(parse(&cfg, "mem=1024k"), 0);
	assert_int_equal(cfg.mem_bytes, MiB);
	assert_int_equal(parse(&cfg, "mem=3t"), 0);
	assert_int_equal(cfg.mem_bytes, 3ull << 40);
	assert_int_equal(parse(&cfg, "mem=1048576"), 0);
	assert_int_equal(cfg.mem_bytes, MiB);
	/* below the 1M minimum */
	expect_refused("mem=1048575", "minimum");
	expect_refused("mem=512K", "minimum");
	expect_refused("mem=0", "minimum");
}

static void test_config_direct_bool_forms(void **state)
{
	static const struct {
		const char *opts;
		bool want;
	} cases[] = {
	    {"direct", true},		{"nodirect", false},
	    {"direct=1", true},		{"direct=0", false},
	    {"direct=yes", true},	{"direct=no", false},
	    {"direct=on", true},	{"direct=off", false},
	    {"direct=true", true},	{"direct=false", false},
	    {"direct,nodirect", false}, {"nodirect,direct", true},
	};
	struct sfs_config cfg;

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		if (parse(&cfg, cases[i].opts) != 0)
			fail_msg("'%s' refused", cases[i].opts);
		if (cfg.direct != cases[i].want)
			fail_msg("'%s': direct = %d", cases[i].opts,
				 cfg.direct);
	}
	expect_refused("direct=maybe", "direct");
	expect_refused("direct=", "direct");
	expect_refused("nodirect=1", "nodirect");
}

static void test_config_ro_rw(void **state)
{
	struct sfs_config cfg;

	assert_int_equal(parse(&cfg, "ro"), 0);
	assert_true(cfg.ro);
	assert_int_equal(parse(&cfg, "rw"), 0);
	assert_false(cfg.ro);
	assert_int_equal(parse(&cfg, "ro,rw"), 0);
	assert_false(cfg.ro);
	assert_int_equal(parse(&cfg, "rw,ro"), 0);
	assert_true(cfg.ro);
	assert_int_equal(parse(&cfg, "ro=off"), 0);
	assert_false(cfg.ro);
	assert_int_equal(parse(&cfg, "rw=no"), 0);
	assert_true(cfg.ro);
	assert_int_equal(parse(&cfg, "noro"), 0);
	assert_false(cfg.ro);
	expect_refused("ro=2", "ro");
}

static void test_config_all_knobs_at_once(void **state)
{
	struct sfs_config cfg;

	assert_int_equal(parse(&cfg, "alloc=blockmap,data=none,mem=64M,"
				     "direct,ro"),
			 0);
	assert_string_equal(cfg.alloc, "blockmap");
	assert_string_equal(cfg.journal, "none");
	assert_int_equal(cfg.mem_bytes, 64 * MiB);
	assert_true(cfg.direct);
	assert_true(cfg.ro);
}

static void test_config_malformed_refused(void **state)
{
	expect_refused(",,", "empty");
	expect_refused(",", "empty");
	expect_refused("ro,", "empty");
	expect_refused(",ro", "empty");
	expect_refused("ro,,direct", "empty");
	expect_refused("=x", "no name");
	expect_refused("=", "no name");
	expect_refused("mem=", "mem");
	expect_refused("mem", "needs a value");
	expect_refused("mem=12Q", "12Q");
	expect_refused("mem=-1", "-1");
	expect_refused("mem=+1M", "+1M");
	expect_refused("mem= 1M", "mem");
	expect_refused("mem=1M ", "mem");
	expect_refused("mem=1MB", "1MB");
	expect_refused("mem=M", "mem");
	expect_refused("mem=1.5G", "1.5G");
	expect_refused("mem=0x100000", "0x100000");
	/* overflow: of the digits, and of the suffix multiplication */
	expect_refused("mem=99999999999999999999", "mem");
	expect_refused("mem=18446744073709551616", "mem");
	expect_refused("mem=16777216T", "mem");
}

static void test_config_error_leaves_cfg_unchanged(void **state)
{
	/* good knobs before the bad one must not stick */
	expect_refused("mem=64M,direct,ro,alloc=bad", "alloc");
	expect_refused("mem=64M,nodirect=1", "nodirect");
	expect_refused("direct,mem=1x", "mem");
}

/* The errno of a refusal says which kind it is (config.h). */
static void test_config_refusal_errnos(void **state)
{
	static const struct {
		const char *opts;
		bool runtime;
		int rc;
	} cases[] = {
	    {"mem=lots", false, -EINVAL},   {"commit=abc", false, -EINVAL},
	    {"clock=bogus", false, -EINVAL}, {"commit=0", false, -ERANGE},
	    {"mem=1", false, -ERANGE},      {"dirty_ratio=101", true, -ERANGE},
	    {"nosuch=1", false, -ENOKEY},   {"nosuch=1", true, -ENOKEY},
	    {"mem=8M", true, -EPERM},       {"alloc=blockmap", true, -EPERM},
	    {"mem=8M", false, 0},
	};
	(void)state;
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct sfs_config cfg;
		char *err = NULL;
		int rc;

		sfs_config_defaults(&cfg);
		rc = cases[i].runtime
			 ? sfs_config_parse_runtime(&cfg, cases[i].opts, &err)
			 : sfs_config_parse(&cfg, cases[i].opts, NULL, &err);
		if (rc != cases[i].rc)
			fail_msg("'%s'%s: rc %d, want %d (%s)", cases[i].opts,
				 cases[i].runtime ? " (runtime)" : "", rc,
				 cases[i].rc, err ? err : "");
		assert_true(rc == 0 ? err == NULL : err && *err);
		g_free(err);
	}
}

static void test_config_unknown_refused(void **state)
{
	struct sfs_config cfg, before;
	char *err = NULL;

	sfs_config_defaults(&cfg);
	before = cfg;
	assert_int_equal(
	    sfs_config_parse(&cfg, "mem=8M,allow_other", NULL, &err), -ENOKEY);
	assert_non_null(err);
	assert_non_null(strstr(err, "unknown option 'allow_other'"));
	/* the message lists the valid knobs */
	assert_non_null(strstr(err, "alloc"));
	assert_non_null(strstr(err, "mem"));
	assert_non_null(strstr(err, "direct"));
	assert_cfg_equal(&cfg, &before);
	g_free(err);

	/* "no" + a non-boolean knob is no knob */
	err = NULL;
	assert_int_equal(sfs_config_parse(&cfg, "nomem", NULL, &err), -ENOKEY);
	assert_non_null(strstr(err, "unknown option 'nomem'"));
	g_free(err);
}

static void test_config_unknown_passthrough(void **state)
{
	struct sfs_config cfg;
	char *err = NULL, *unknown = NULL;

	sfs_config_defaults(&cfg);
	assert_int_equal(sfs_config_parse(&cfg,
					  "allow_other,mem=64M,fsname=a\\,b,"
					  "default_permissions,nodev,direct",
					  &unknown, &err),
			 0);
	assert_null(err);
	assert_int_equal(cfg.mem_bytes, 64 * MiB);
	assert_true(cfg.direct);
	assert_non_null(unknown);
	assert_string_equal(unknown, "allow_other,fsname=a\\,b,"
				     "default_permissions,nodev");

	/* appended to what the list already holds */
	assert_int_equal(
	    sfs_config_parse(&cfg, "max_read=4096,ro", &unknown, &err), 0);
	assert_string_equal(unknown, "allow_other,fsname=a\\,b,"
				     "default_permissions,nodev,max_read=4096");
	assert_true(cfg.ro);
	g_free(unknown);

	/* nothing unknown: the list stays NULL */
	unknown = NULL;
	assert_int_equal(sfs_config_parse(&cfg, "rw", &unknown, &err), 0);
	assert_null(unknown);
}

static void test_config_set(void **state)
{
	struct sfs_config cfg, before;
	char *err = NULL;

	sfs_config_defaults(&cfg);
	assert_int_equal(sfs_config_set(&cfg, "mem", "8M", &err), 0);
	assert_int_equal(cfg.mem_bytes, 8 * MiB);
	assert_int_equal(sfs_config_set(&cfg, "direct", NULL, &err), 0);
	assert_true(cfg.direct);
	assert_int_equal(sfs_config_set(&cfg, "nodirect", NULL, &err), 0);
	assert_false(cfg.direct);
	assert_int_equal(sfs_config_set(&cfg, "journal", "none", &err), 0);
	assert_null(err);

	before = cfg;
	assert_int_equal(sfs_config_set(&cfg, "mem", NULL, &err), -EINVAL);
	assert_non_null(err);
	g_free(err);
	err = NULL;
	assert_int_equal(sfs_config_set(&cfg, "mem", "lots", &err), -EINVAL);
	assert_non_null(strstr(err, "lots"));
	g_free(err);
	err = NULL;
	assert_int_equal(sfs_config_set(&cfg, "bogus", "1", &err), -ENOKEY);
	assert_non_null(strstr(err, "bogus"));
	g_free(err);
	err = NULL;
	assert_int_equal(sfs_config_set(&cfg, "", "1", &err), -EINVAL);
	g_free(err);
	assert_cfg_equal(&cfg, &before);
}

static void test_config_parse_size(void **state)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} good[] = {
	    {"0", 0},
	    {"1", 1},
	    {"4096", 4096},
	    {"1K", 1024},
	    {"1k", 1024},
	    {"64M", 64 * MiB},
	    {"1G", 1ull << 30},
	    {"2T", 2ull << 40},
	    {"16777215T", 16777215ull << 40},
	    {"18446744073709551615", UINT64_MAX},
	};
	static const char *const bad[] = {
	    "",
	    "K",
	    "-1",
	    "+1",
	    " 1",
	    "1 ",
	    "1KK",
	    "1KB",
	    "1Q",
	    "1.0",
	    "0x10",
	    "1e3",
	    "18446744073709551616",
	    "16777216T",
	    "99999999999999999999999",
	};
	uint64_t v;

	for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
		v = 12345;
		if (sfs_parse_size(good[i].text, &v) != 0)
			fail_msg("'%s' refused", good[i].text);
		assert_int_equal(v, good[i].bytes);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		v = 12345;
		if (sfs_parse_size(bad[i], &v) != -EINVAL)
			fail_msg("'%s' accepted", bad[i]);
		assert_int_equal(v, 12345); /* untouched */
	}
}

/* Print cfg into a string (g_free it). */
static char *print_cfg(const struct sfs_config *cfg)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	sfs_config_print(cfg, f);
	fclose(f);
	return text;
}

static void test_config_print_roundtrip(void **state)
{
	struct sfs_config cfg, back;
	char *text, *opts, *err = NULL;

	sfs_config_defaults(&cfg);
	text = print_cfg(&cfg);
	assert_string_equal(text, "alloc=blockmap\ndata=auto\ncommit=5\n"
				  "journal_max_txn=0\njournal_dev=\n"
				  "vm=modern\ndirty_ratio=0\n"
				  "dirty_background_ratio=0\ndirty_bytes=0\n"
				  "dirty_background_bytes=0\n"
				  "dirty_expire_centisecs=0\n"
				  "dirty_writeback_centisecs=0\nmem=256M\n"
				  "direct=off\nro=off\ndevice=ideal\n"
				  "sched=elevator\nclock=virtual\n"
				  "cpu=core2-2009\ncpus=1\nstats=\n"
				  "iolog=\ntrace=\npreset=\nreservation_window=8\n"
				  "reservation_max=1027\nmb_max_to_scan=200\n"
				  "mb_min_to_scan=10\nmb_order2_req=2\n"
				  "mb_stream_req=16\nmb_group_prealloc=512\n"
				  "nextfit_mode=next\nnextfit_run=64\n"
				  "dirs=orlov\n"
				  "atime_policy=relatime\ndiratime=on\n"
				  "delalloc=off\n"
				  "auto_da_alloc=on\nuser_xattr=on\n"
				  "acl=on\nshared_mmap=on\ndir_index=on\n");
	free(text);

	assert_int_equal(parse(&cfg, "mem=1536K,direct,ro,device=hdd,rpm=5400,"
				     "sched=noop,max_req=64K,clock=emulate,"
				     "stats=/tmp/s.json,iolog=/tmp/io.log"),
			 0);
	text = print_cfg(&cfg);
	assert_non_null(strstr(text, "mem=1536K\n"));
	assert_non_null(strstr(text, "direct=on\n"));
	assert_non_null(strstr(text, "ro=on\n"));
	assert_non_null(strstr(text, "device=hdd,rpm=5400\n"));
	assert_non_null(strstr(text, "sched=noop,max_req=64K\n"));
	assert_non_null(strstr(text, "stats=/tmp/s.json\n"));

	/* what print writes, parse reads back to the same config */
	g_strstrip(text);
	opts = g_strdelimit(g_strdup(text), "\n", ',');
	sfs_config_defaults(&back);
	assert_int_equal(sfs_config_parse(&back, opts, NULL, &err), 0);
	assert_cfg_equal(&cfg, &back);
	g_free(opts);
	free(text);
}

static void test_config_print_help(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	sfs_config_print_help(f);
	fclose(f);
	assert_non_null(strstr(text, "alloc=NAME"));
	assert_non_null(strstr(text, "data=MODE"));
	assert_non_null(strstr(text, "journal="));
	assert_non_null(strstr(text, "mem=SIZE"));
	assert_non_null(strstr(text, "direct"));
	assert_non_null(strstr(text, "ro"));
	assert_non_null(strstr(text, "default 256M"));
	assert_non_null(strstr(text, "device=SPEC"));
	assert_non_null(strstr(text, "hdd-2009")); /* presets listed */
	assert_non_null(strstr(text, "sched=SPEC"));
	assert_non_null(strstr(text, "clock=MODE"));
	assert_non_null(strstr(text, "stats=FILE"));
	assert_non_null(strstr(text, "iolog=FILE"));
	free(text);
}

static void test_config_device(void **state)
{
	struct sfs_config cfg;
	char *err = NULL, *unknown = NULL;

	assert_int_equal(parse(&cfg, "device=hdd-2009"), 0);
	assert_string_equal(cfg.device, "hdd-2009");
	assert_int_equal(parse(&cfg, "device=ssd"), 0);
	assert_string_equal(cfg.device, "ssd");
	assert_int_equal(parse(&cfg, "device=none"), 0);
	assert_string_equal(cfg.device, "none");

	/* the model's knobs follow it; simfs's own knobs stay simfs's */
	assert_int_equal(
	    parse(&cfg, "device=hdd,rpm=7200,outer_mbps=70,mem=1G"), 0);
	assert_string_equal(cfg.device, "hdd,rpm=7200,outer_mbps=70");
	assert_int_equal(cfg.mem_bytes, 1024 * MiB);
	/* a preset takes its model's knobs */
	assert_int_equal(parse(&cfg, "mem=8M,device=hdd-2009,rpm=5400,direct"),
			 0);
	assert_string_equal(cfg.device, "hdd-2009,rpm=5400");
	assert_true(cfg.direct);
	/* an escaped spec needs nothing after it */
	assert_int_equal(parse(&cfg, "device=hdd\\,rpm=5400"), 0);
	assert_string_equal(cfg.device, "hdd,rpm=5400");
	/* given twice: the latest wins, with its own knobs only */
	assert_int_equal(parse(&cfg, "device=hdd,rpm=5400,device=ssd"), 0);
	assert_string_equal(cfg.device, "ssd");

	/* refused with the model's own message */
	expect_refused("device=hdd,rpm=abc", "rpm");
	expect_refused("device=hdd,rpm=100", "rpm");
	expect_refused("device=nosuch", "hdd-2009");
	expect_refused("device=", "device");
	expect_refused("device", "needs a value");
	expect_refused("mem=8M,device=hdd,rpm=abc", "abc");

	/* not a knob of the model: handled as usual (FUSE's, or unknown) */
	sfs_config_defaults(&cfg);
	assert_int_equal(sfs_config_parse(&cfg,
					  "device=ssd,rpm=7200,allow_other",
					  &unknown, &err),
			 0);
	assert_null(err);
	assert_string_equal(cfg.device, "ssd");
	assert_string_equal(unknown, "rpm=7200,allow_other");
	g_free(unknown);
	expect_unknown("device=ssd,rpm=7200", "rpm");
}

static void test_config_sched(void **state)
{
	struct sfs_config cfg;

	assert_int_equal(parse(&cfg, "sched=noop"), 0);
	assert_string_equal(cfg.sched, "noop");
	assert_int_equal(parse(&cfg, "sched=elevator,read_expire_ms=100,"
				     "write_expire_ms=1000,max_req=256K"),
			 0);
	assert_string_equal(cfg.sched, "elevator,read_expire_ms=100,"
				       "write_expire_ms=1000,max_req=256K");
	/* two specs: each knob goes to the model that has it */
	assert_int_equal(parse(&cfg, "device=hdd,sched=elevator,rpm=5400,"
				     "max_req=256K,ro"),
			 0);
	assert_string_equal(cfg.device, "hdd,rpm=5400");
	assert_string_equal(cfg.sched, "elevator,max_req=256K");
	assert_true(cfg.ro);

	expect_refused("sched=bfq", "elevator");
	expect_refused("sched=elevator,max_req=1", "max_req");
	/* noop has no deadlines: not its knob, so an unknown option */
	expect_unknown("sched=noop,read_expire_ms=5", "read_expire_ms");
	/* each preset brings its era's scheduler; sched= after it wins */
	static const char *const era[][2] = {
	    {"ext2", "elevator"},	{"ext3", "elevator"},
	    {"ext3-writeback", "elevator"}, {"ext3-journal", "elevator"},
	    {"ext2rs", "cfq"},		{"ext3rs", "cfq"},
	    {"ext3rs-ordered", "cfq"},	{"ext3i", "cfq"},
	    {"ext4", "cfq"},		{"ext4-nojournal", "cfq"},
	};
	for (unsigned i = 0; i < G_N_ELEMENTS(era); i++) {
		char *o = g_strdup_printf("preset=%s", era[i][0]);
		assert_int_equal(parse(&cfg, o), 0);
		assert_string_equal(cfg.sched, era[i][1]);
		g_free(o);
	}
	assert_int_equal(parse(&cfg, "preset=ext2rs,sched=elevator"), 0);
	assert_string_equal(cfg.sched, "elevator");
	assert_int_equal(parse(&cfg, "preset=ext2,sched=cfq"), 0);
	assert_string_equal(cfg.sched, "cfq");
}

static void test_config_clock_and_paths(void **state)
{
	struct sfs_config cfg;
	char *err = NULL;

	assert_int_equal(parse(&cfg, "clock=account"), 0);
	assert_string_equal(cfg.clock, "account");
	assert_int_equal(parse(&cfg, "clock=emulate"), 0);
	assert_string_equal(cfg.clock, "emulate");
	assert_int_equal(parse(&cfg, "clock=virtual"), 0);
	assert_string_equal(cfg.clock, "virtual");
	expect_refused("clock=real", "account");
	expect_refused("clock", "needs a value");

	assert_int_equal(parse(&cfg, "stats=/tmp/a b.json,iolog=rel/io.log"),
			 0);
	assert_string_equal(cfg.stats_path, "/tmp/a b.json");
	assert_string_equal(cfg.iolog_path, "rel/io.log");
	/* empty: none (what sfs_config_print writes for "none") */
	assert_int_equal(sfs_config_parse(&cfg, "stats=,iolog=", NULL, &err),
			 0);
	assert_string_equal(cfg.stats_path, "");
	assert_string_equal(cfg.iolog_path, "");
	expect_refused("stats", "needs a value");
}

static void test_config_runtime(void **state)
{
	static const char *const refused[] = {
	    "mem=1G",
	    "alloc=blockmap",
	    "data=none",
	    "direct",
	    "ro",
	    "rw",
	    "sched=noop",
	    "stats=/tmp/x",
	    "iolog=/tmp/y",
	    "allow_other",
	    "clock=bogus",
	    "device=hdd,rpm=abc",
	    "clock=emulate,mem=1G",
	};
	struct sfs_config cfg, before;
	char *err = NULL;

	sfs_config_defaults(&cfg);
	assert_int_equal(sfs_config_parse_runtime(&cfg, "clock=emulate", &err),
			 0);
	assert_string_equal(cfg.clock, "emulate");
	assert_int_equal(
	    sfs_config_parse_runtime(
		&cfg, "device=hdd-2009,rpm=5400,clock=account", &err),
	    0);
	assert_string_equal(cfg.device, "hdd-2009,rpm=5400");
	assert_string_equal(cfg.clock, "account");
	assert_null(err);

	before = cfg;
	for (size_t i = 0; i < G_N_ELEMENTS(refused); i++) {
		err = NULL;
		if (!refusal_errno(
			sfs_config_parse_runtime(&cfg, refused[i], &err)))
			fail_msg("runtime '%s' accepted", refused[i]);
		assert_non_null(err);
		assert_null(strchr(err, '\n'));
		assert_cfg_equal(&cfg, &before);
		g_free(err);
	}
	err = NULL;
	assert_int_equal(sfs_config_parse_runtime(&cfg, "mem=1G", &err),
			 -EPERM);
	assert_non_null(strstr(err, "cannot change while mounted"));
	g_free(err);
}

/*
 * Messages say what is allowed: the range of a number that does not
 * parse, "did you mean" for a near miss of a knob (also a device
 * model's), which is not passed on to FUSE as an unknown option would be.
 */
static void test_config_messages_help(void **state)
{
	struct sfs_config cfg;
	char *err = NULL, *unknown = NULL;

	(void)state;
	expect_refused("commit=-1",
		       "for commit (a decimal integer, 1 to 86400)");
	expect_refused("commit=soon", "1 to 86400");
	expect_refused("mem=12Q", "at least 1M");
	expect_refused("rmp=7200", "unknown option 'rmp' (did you mean rpm?)");
	expect_refused("device=hdd,rmp=7200", "did you mean rpm?");
	expect_refused("comit=5", "did you mean commit?");
	expect_refused("presett=ext4", "did you mean preset?");

	assert_string_equal(sfs_config_suggest("rmp"), "rpm");
	assert_string_equal(sfs_config_suggest("delaloc"), "delalloc");
	/* knobs themselves, FUSE's options and far misses: no suggestion */
	assert_null(sfs_config_suggest("commit"));
	assert_null(sfs_config_suggest("allow_other"));
	assert_null(sfs_config_suggest("nodev"));
	assert_null(sfs_config_suggest("max_read"));
	assert_null(sfs_config_suggest("frobnicate"));

	/* FUSE options still pass through as unknown */
	sfs_config_defaults(&cfg);
	assert_int_equal(
	    sfs_config_parse(&cfg, "allow_other,nodev,suid", &unknown, &err),
	    0);
	assert_string_equal(unknown, "allow_other,nodev,suid");
	g_free(unknown);

	/* a config write gets the same help */
	sfs_config_defaults(&cfg);
	assert_int_equal(sfs_config_parse_runtime(&cfg, "clok=emulate", &err),
			 -ENOKEY);
	assert_non_null(strstr(err, "did you mean clock?"));
	g_free(err);
	err = NULL;
	assert_int_equal(sfs_config_set(&cfg, "comit", "5", &err), -ENOKEY);
	assert_non_null(strstr(err, "did you mean commit?"));
	g_free(err);
}

/*
 * The journal's knobs (models/journal/knobs.c) are rows of the option
 * table: each has a type the table can hold, shows up once in the docs'
 * rows with its own default and runtime flag, and (a number) is set, read
 * back and range-checked by the parser.
 */
static void test_config_journal_knobs(void **state)
{
	unsigned n = 0;

	for (const struct sfs_knob *k = sfs_jnl_knobs; k->key; k++, n++) {
		struct sfs_config cfg;
		struct sfs_config_doc doc;
		unsigned found = 0;
		char *err = NULL, *val, *opt;

		assert_true(k->type == SFS_KNOB_U32 ||
			    k->type == SFS_KNOB_SIZE ||
			    k->type == SFS_KNOB_BOOL);
		for (unsigned i = 0; sfs_config_doc_nth(i, &doc); i++) {
			if (strcmp(doc.name, k->key) == 0) {
				found++;
				assert_string_equal(doc.def, k->def);
				assert_int_equal(doc.runtime, k->live);
			}
			g_free(doc.choices);
		}
		assert_int_equal(found, 1);

		sfs_config_defaults(&cfg);
		val = sfs_config_get(&cfg, k->key);
		assert_string_equal(val, k->def);
		g_free(val);
		if (k->type != SFS_KNOB_U32)
			continue; /* the value checks below are for numbers */
		opt = g_strdup_printf("%s=%.0f", k->key, k->max);
		assert_int_equal(k->live
				     ? sfs_config_parse_runtime(&cfg, opt, &err)
				     : sfs_config_parse(&cfg, opt, NULL, &err),
				 0);
		g_free(opt);
		val = sfs_config_get(&cfg, k->key);
		assert_int_equal(strtoull(val, NULL, 10), (uint64_t)k->max);
		g_free(val);
		if (k->min > 0) {
			opt = g_strdup_printf("%s=%.0f", k->key, k->min - 1);
			assert_int_equal(
			    sfs_config_parse(&cfg, opt, NULL, &err), -ERANGE);
			assert_non_null(strstr(err, k->key));
			g_free(err);
			g_free(opt);
		}
	}
	assert_true(n >= 2); /* commit=, journal_max_txn= */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_config_messages_help),
	    cmocka_unit_test(test_config_defaults),
	    cmocka_unit_test(test_config_empty_string),
	    cmocka_unit_test(test_config_alloc),
	    cmocka_unit_test(test_config_data_and_journal),
	    cmocka_unit_test(test_config_journal_and_writeback_knobs),
	    cmocka_unit_test(test_config_mem),
	    cmocka_unit_test(test_config_direct_bool_forms),
	    cmocka_unit_test(test_config_ro_rw),
	    cmocka_unit_test(test_config_all_knobs_at_once),
	    cmocka_unit_test(test_config_malformed_refused),
	    cmocka_unit_test(test_config_error_leaves_cfg_unchanged),
	    cmocka_unit_test(test_config_refusal_errnos),
	    cmocka_unit_test(test_config_unknown_refused),
	    cmocka_unit_test(test_config_unknown_passthrough),
	    cmocka_unit_test(test_config_set),
	    cmocka_unit_test(test_config_parse_size),
	    cmocka_unit_test(test_config_print_roundtrip),
	    cmocka_unit_test(test_config_print_help),
	    cmocka_unit_test(test_config_device),
	    cmocka_unit_test(test_config_sched),
	    cmocka_unit_test(test_config_clock_and_paths),
	    cmocka_unit_test(test_config_runtime),
	    cmocka_unit_test(test_config_journal_knobs),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
