/*
 * test_experiment.c - the experiment file parser of `simfs bench`
 * (simfs/experiment.c, doc/experiments.md).
 *
 * Good files give the cells in the file's order (systems, workloads,
 * sweep points, repetitions) with the ids, variants, seeds and the exact
 * `simfs run` argument vectors; a sweep over a workload parameter goes
 * into -w, one over a mount knob into -o after stats=, journal_size into
 * --journal-size.  Every kind of mistake is refused at load time with
 * "FILE:LINE: what", the line being the one the mistake is on.
 * experiment.c is part of the simfs executable, not of libsimfs, so it is
 * compiled into this test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "experiment.c"

struct xpt {
	char *dir;
	char *path; /* dir/t.ini */
};

static int xpt_setup(void **state)
{
	struct xpt *t = g_new0(struct xpt, 1);

	t->dir = g_dir_make_tmp("simfs-txp-XXXXXX", NULL);
	assert_non_null(t->dir);
	t->path = g_build_filename(t->dir, "t.ini", NULL);
	*state = t;
	return 0;
}

static int xpt_teardown(void **state)
{
	struct xpt *t = *state;

	unlink(t->path);
	rmdir(t->dir);
	g_free(t->path);
	g_free(t->dir);
	g_free(t);
	return 0;
}

/* Write text as the experiment file and load it. */
static int xpt_load(struct xpt *t, const char *text, struct sfs_experiment **x,
		    char **err)
{
	assert_true(g_file_set_contents(t->path, text, -1, NULL));
	return sfs_experiment_load(t->path, x, err);
}

static struct sfs_experiment *xpt_good(struct xpt *t, const char *text)
{
	struct sfs_experiment *x = NULL;
	char *err = NULL;
	int rc = xpt_load(t, text, &x, &err);

	if (rc)
		print_error("%s\n", err ? err : "?");
	assert_int_equal(rc, 0);
	assert_non_null(x);
	assert_null(err);
	return x;
}

/* The argv (NULL-terminated) equals the expected words. */
static void xpt_argv_is(char **argv, const char *const *want)
{
	unsigned i;

	for (i = 0; want[i]; i++) {
		assert_non_null(argv[i]);
		assert_string_equal(argv[i], want[i]);
	}
	assert_null(argv[i]);
}

static const char good_file[] =
    "; two systems, one workload, a sweep of a parameter\n"
    "[global]\n"
    "name = jsize\n"
    "title = What if the journal were 4 MB?\n"
    "size = 256M\n"
    "device = hdd-2009   ; the modelled disk\n"
    "cpu = core2-2009\n"
    "options = mem=64M\n"
    "seed = 5\n"
    "\n"
    "[system ext3-32M]\n"
    "options = preset=ext3\n"
    "journal_size = 32M\n"
    "\n"
    "[system ext2]\n"
    "options = preset=ext2\n"
    "\n"
    "[workload dbench]\n"
    "spec = dbench,time=5\n"
    "sweep = clients=1, 4\n"
    "\n"
    "[table throughput]\n"
    "metric = mb_s\n"
    "phase = run\n";

static void test_experiment_good_cells(void **state)
{
	struct sfs_experiment *x = xpt_good(*state, good_file);
	static const char *const ids[] = {
	    "ext3-32M.dbench.clients=1.r0", "ext3-32M.dbench.clients=4.r0",
	    "ext2.dbench.clients=1.r0", "ext2.dbench.clients=4.r0"};

	assert_string_equal(x->name, "jsize");
	assert_string_equal(x->title, "What if the journal were 4 MB?");
	assert_int_equal(x->nsystems, 2);
	assert_int_equal(x->nworkloads, 1);
	assert_int_equal(x->ntables, 1);
	assert_int_equal(x->ncells, 4);
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(x->cells[i].index, i);
		assert_string_equal(x->cells[i].id, ids[i]);
		assert_int_equal(x->cells[i].seed, 5);
	}
	assert_string_equal(x->cells[1].variant, "clients=4");
	assert_string_equal(x->cells[1].sweep_val, "4");
	assert_string_equal(x->systems[0].options,
			    "device=hdd-2009,cpu=core2-2009,mem=64M,"
			    "preset=ext3");
	assert_int_equal(x->workloads[0].sweep_kind, SFS_XP_SWEEP_PARAM);
	assert_false(x->workloads[0].sweep_is_knob);
	assert_int_equal(x->workloads[0].nsweep, 2);

	static const char *const a1[] = {
	    "-q",
	    "--results",
	    "cells/ext3-32M.dbench.clients=4.r0/results.csv",
	    "-o",
	    "device=hdd-2009,cpu=core2-2009,mem=64M,preset=ext3,"
	    "stats=cells/ext3-32M.dbench.clients=4.r0/stats.json",
	    "--size",
	    "256M",
	    "--journal-size",
	    "32M",
	    "--seed",
	    "5",
	    "-w",
	    "dbench,time=5,clients=4",
	    NULL};
	xpt_argv_is(x->cells[1].argv, a1);

	char **full = sfs_xp_cell_argv(x, &x->cells[2], "/o/c");
	static const char *const a2[] = {
	    "run",
	    "-q",
	    "--results",
	    "/o/c/results.csv",
	    "-o",
	    "device=hdd-2009,cpu=core2-2009,mem=64M,preset=ext2,"
	    "stats=/o/c/stats.json",
	    "--size",
	    "256M",
	    "--seed",
	    "5",
	    "-w",
	    "dbench,time=5,clients=1",
	    "/o/c/image.img",
	    NULL};
	xpt_argv_is(full, a2);
	g_strfreev(full);

	/* the table's defaults: clients down, systems across, lines */
	assert_string_equal(x->tables[0].workload, "dbench");
	assert_string_equal(x->tables[0].rows, "clients");
	assert_string_equal(x->tables[0].columns, "system");
	assert_string_equal(x->tables[0].plot, "lines");
	/* which rows the table shows */
	assert_ptr_equal(
	    sfs_xp_row_table(x, &x->cells[0], "run", "mb_s", "warmup"),
	    &x->tables[0]);
	assert_null(
	    sfs_xp_row_table(x, &x->cells[0], "warmup", "mb_s", "warmup"));
	assert_null(sfs_xp_row_table(x, &x->cells[0], "run", "ops_s", "run"));
	sfs_experiment_free(x);
}

static void test_experiment_defaults(void **state)
{
	struct xpt *t = *state;
	struct sfs_experiment *x = xpt_good(t, "[system a]\n[workload dd]\n"
					       "[table t]\nmetric = mb_s\n");

	/* the name is the file's, the spec the section's name */
	assert_string_equal(x->name, "t");
	assert_null(x->title);
	assert_string_equal(x->size, "1G");
	assert_int_equal(x->repeat, 1);
	assert_int_equal(x->ncells, 1);
	assert_string_equal(x->cells[0].id, "a.dd.r0");
	assert_string_equal(x->cells[0].variant, "");
	assert_string_equal(x->cells[0].spec, "dd");
	assert_null(x->cells[0].journal_size);
	static const char *const a[] = {"-q",
					"--results",
					"cells/a.dd.r0/results.csv",
					"-o",
					"stats=cells/a.dd.r0/stats.json",
					"--size",
					"1G",
					"--seed",
					"1",
					"-w",
					"dd",
					NULL};
	xpt_argv_is(x->cells[0].argv, a);
	/* no sweep: phases down, systems across, bars */
	assert_string_equal(x->tables[0].rows, "phase");
	assert_string_equal(x->tables[0].columns, "system");
	assert_string_equal(x->tables[0].plot, "bars");
	/* a table over phases shows every phase */
	assert_non_null(
	    sfs_xp_row_table(x, &x->cells[0], "read", "mb_s", "write"));
	sfs_experiment_free(x);
}

static void test_experiment_sweep_knob(void **state)
{
	struct sfs_experiment *x =
	    xpt_good(*state, "[global]\nsize = 128M\n"
			     "[system ext3]\noptions = preset=ext3\n"
			     "[workload fsmark]\nspec = fsmark,files=10\n"
			     "sweep = commit=1,30\n");
	const struct sfs_xp_workload *wl = &x->workloads[0];

	assert_int_equal(wl->sweep_kind, SFS_XP_SWEEP_KNOB);
	assert_true(wl->sweep_is_knob);
	assert_int_equal(x->ncells, 2);
	assert_string_equal(x->cells[1].id, "ext3.fsmark.commit=30.r0");
	/* the spec is unchanged; the knob comes after stats= */
	assert_string_equal(x->cells[1].spec, "fsmark,files=10");
	assert_string_equal(x->cells[1].options, "preset=ext3,commit=30");
	char **a = sfs_xp_cell_argv(x, &x->cells[1], "D");
	assert_string_equal(a[5], "preset=ext3,stats=D/stats.json,commit=30");
	assert_string_equal(a[11], "fsmark,files=10");
	g_strfreev(a);
	sfs_experiment_free(x);

	/* journal_size: --journal-size, over the system's */
	x = xpt_good(*state, "[system ext3]\noptions = preset=ext3\n"
			     "journal_size = 32M\n"
			     "[workload dd]\nsweep = journal_size=4M,8M\n");
	assert_int_equal(x->workloads[0].sweep_kind, SFS_XP_SWEEP_JOURNAL_SIZE);
	assert_string_equal(x->cells[0].journal_size, "4M");
	assert_string_equal(x->cells[1].journal_size, "8M");
	assert_string_equal(x->cells[1].spec, "dd");
	assert_string_equal(x->cells[1].argv[8], "8M");
	sfs_experiment_free(x);
}

static void test_experiment_repeat_seeds(void **state)
{
	struct sfs_experiment *x = xpt_good(
	    *state, "[global]\nrepeat = 3\nseed = 10\n"
		    "[system a]\n[system b]\n"
		    "[workload dd]\nspec = dd,size=1M\nsweep = bs=4K,8K\n");

	assert_int_equal(x->ncells, 12);
	/* systems, then workloads, then points, then repetitions */
	assert_string_equal(x->cells[0].id, "a.dd.bs=4K.r0");
	assert_string_equal(x->cells[2].id, "a.dd.bs=4K.r2");
	assert_string_equal(x->cells[3].id, "a.dd.bs=8K.r0");
	assert_string_equal(x->cells[6].id, "b.dd.bs=4K.r0");
	for (unsigned i = 0; i < 12; i++) {
		assert_int_equal(x->cells[i].rep, i % 3);
		assert_int_equal(x->cells[i].seed, 10 + i % 3);
	}
	assert_string_equal(x->cells[4].variant, "bs=8K,r=1");
	assert_string_equal(x->cells[4].argv[8], "11");
	sfs_experiment_free(x);

	x = xpt_good(*state, "[global]\nrepeat = 2\n[system a]\n"
			     "[workload dd]\n");
	assert_string_equal(x->cells[1].variant, "r=1");
	assert_string_equal(x->cells[1].id, "a.dd.r1");
	sfs_experiment_free(x);
}

/* Each bad file and the "FILE:LINE: ..." it must get. */
static const struct {
	const char *text;
	unsigned line; /* 0: no line */
	const char *what;
} bad_files[] = {
    {"[system ext3]\nfoo = 1\n[workload dd]\n", 2,
     "unknown key 'foo' in [system ext3]"},
    {"[global]\nname = x\n[bogus]\n", 3, "unknown section [bogus]"},
    {"[system]\n", 1, "[system] needs a name"},
    {"[system a b]\n", 1, "unknown section"},
    {"[system a/b]\n", 1, "bad name 'a/b'"},
    {"[system a\n", 1, "ends with ']'"},
    {"just words\n", 1, "not a [section]"},
    {"size = 1G\n", 1, "before any [section]"},
    {"[system a]\n[workload dd]\n\n[system a]\n", 4,
     "duplicate section [system a] (first at line 1)"},
    {"[system a]\noptions = preset=ext2\noptions = preset=ext3\n", 3,
     "duplicate key 'options'"},
    {"[global]\nsize = big\n[system a]\n[workload dd]\n", 2,
     "bad value 'big' for size"},
    {"[global]\nrepeat = 0\n[system a]\n[workload dd]\n", 2,
     "bad value '0' for repeat"},
    {"[global]\nseed = -1\n[system a]\n[workload dd]\n", 2,
     "bad value '-1' for seed"},
    {"[system a]\njournal_size = 4Q\n[workload dd]\n", 2,
     "bad value '4Q' for journal_size"},
    {"[system a]\n[workload x]\nspec = nosuch\n", 3,
     "unknown workload 'nosuch'"},
    {"[system a]\n[workload dd]\nspec = dd,bogus=1\n", 3,
     "unknown parameter 'bogus'"},
    {"[system a]\noptions = alloc=nosuch\n[workload dd]\n", 2,
     "options of [system a]"},
    {"[system a]\noptions = bogus=1\n[workload dd]\n", 2,
     "unknown option 'bogus'"},
    {"[global]\ndevice = nosuchdisk\n[system a]\n[workload dd]\n", 2,
     "device in [global]"},
    {"[system a]\noptions = clock=emulate\n[workload dd]\n", 2, "virtual time"},
    {"[system a]\noptions = stats=/tmp/x.json\n[workload dd]\n", 2, "stats="},
    {"[system a]\n[workload dd]\nsweep = nosuch=1,2\n", 3,
     "sweep key 'nosuch' in [workload dd] is neither a parameter of dd"},
    {"[system a]\n[workload dd]\nsweep = bs=4K,xyz\n", 3, "sweep point bs=xyz"},
    {"[system a]\n[workload dd]\nsweep = commit=1,abc\n", 3,
     "sweep point commit=abc with [system a]"},
    {"[system a]\n[workload dd]\nsweep = bs\n", 3, "bad sweep 'bs'"},
    {"[system a]\n[workload dd]\nsweep = bs=4K,4K\n", 3, "given twice"},
    {"[system a]\n[workload dd]\nsweep = bs=a/b\n", 3, "bad sweep value 'a/b'"},
    {"[system a]\n[workload dd]\nspec = dd,bs=4K\nsweep = bs=8K\n", 4,
     "sets bs, which its sweep varies"},
    {"[system a]\n[workload dd]\nsweep = journal_size=4M,0\n", 3,
     "bad journal_size '0'"},
    {"[system a]\n[workload dd]\n[table t]\nworkload = nope\nmetric = x\n", 4,
     "names workload 'nope'"},
    {"[system a]\n[workload dd]\n[workload d2]\nspec = dd\n[table t]\n"
     "metric = mb_s\n",
     5, "needs workload = NAME"},
    {"[system a]\n[workload dd]\n[table t]\nrows = system\n", 3,
     "needs metric"},
    {"[system a]\n[workload dd]\n[table t]\nmetric = mb_s\n"
     "rows = clients\n",
     5, "rows = clients in [table t]: not an axis of [workload dd]"},
    {"[system a]\n[workload dd]\nsweep = bs=4K\n[table t]\nmetric = mb_s\n"
     "rows = bs\ncolumns = bs\n",
     7, "rows and columns of [table t] are both bs"},
    {"[system a]\n[workload dd]\n[table t]\nmetric = mb_s\nplot = pie\n", 5,
     "bad plot 'pie'"},
    {"[system a]\n[workload dd]\n[table t]\nmetric = mb_s\ncolour = red\n", 5,
     "unknown key 'colour' in [table t]"},
    {"[system a]\nmkfs = -O dir_index,bogus\n[workload dd]\n", 2,
     "mkfs of [system a]: unknown feature: 'bogus'"},
    {"[system a]\nmkfs = -b 3000\n[workload dd]\n", 2,
     "mkfs of [system a]: bad block size '3000'"},
    {"[system a]\nmkfs = image.img\n[workload dd]\n", 2,
     "'image.img' is not a simfs mkfs option"},
    {"[system a]\nmkfs = -F\n[workload dd]\n", 2, "-F: only for"},
    {"[system a]\nmkfs = preset\n[workload dd]\n", 2,
     "'preset' needs a preset="},
    {"[global]\nmkfs = -G 4\n[system a]\n[workload dd]\n", 3,
     "mkfs of [system a]: -G needs the flex_bg feature"},
    {"[system a]\n", 0, "no [workload NAME] section"},
    {"[workload dd]\n", 0, "no [system NAME] section"},
    {"[system a]\n[workload dd]\nspec = dd\xff\n", 3, "not UTF-8"},
};

static void test_experiment_bad_files(void **state)
{
	struct xpt *t = *state;

	for (size_t i = 0; i < G_N_ELEMENTS(bad_files); i++) {
		struct sfs_experiment *x = (void *)1;
		char *err = NULL, *want;
		int rc = xpt_load(t, bad_files[i].text, &x, &err);

		if (rc != -EINVAL || !err)
			print_error("case %zu: rc %d, %s\n", i, rc,
				    err ? err : "no message");
		assert_int_equal(rc, -EINVAL);
		assert_null(x);
		assert_non_null(err);
		want = bad_files[i].line ? g_strdup_printf("%s:%u: ", t->path,
							   bad_files[i].line)
					 : g_strdup_printf("%s: ", t->path);
		if (!g_str_has_prefix(err, want) ||
		    !strstr(err, bad_files[i].what))
			print_error("case %zu: want '%s...%s', got '%s'\n", i,
				    want, bad_files[i].what, err);
		assert_true(g_str_has_prefix(err, want));
		assert_non_null(strstr(err, bad_files[i].what));
		assert_null(strchr(err, '\n'));
		g_free(want);
		g_free(err);
	}
}

/*
 * mkfs = in [global] is every system's, one in [system X] its own; both
 * become simfs run --mkfs WORDS, "preset" unchanged (simfs run reads it
 * against the system's preset).
 */
static void test_experiment_mkfs(void **state)
{
	struct sfs_experiment *x =
	    xpt_good(*state, "[global]\nmkfs = preset\n"
			     "[system old]\noptions = preset=ext3\n"
			     "[system htree]\noptions = preset=ext3\n"
			     "mkfs = -I 128 -O has_journal,dir_index\n"
			     "[workload dd]\n");
	static const char *const a[] = {"-q",
					"--results",
					"cells/old.dd.r0/results.csv",
					"-o",
					"preset=ext3,stats=cells/old.dd.r0/"
					"stats.json",
					"--size",
					"1G",
					"--mkfs",
					"preset",
					"--seed",
					"1",
					"-w",
					"dd",
					NULL};

	assert_int_equal(x->ncells, 2);
	assert_string_equal(x->systems[0].mkfs, "preset");
	assert_string_equal(x->systems[1].mkfs,
			    "-I 128 -O has_journal,dir_index");
	xpt_argv_is(x->cells[0].argv, a);
	assert_string_equal(x->cells[1].argv[7], "--mkfs");
	assert_string_equal(x->cells[1].argv[8],
			    "-I 128 -O has_journal,dir_index");
	sfs_experiment_free(x);
}

static void test_experiment_missing_file(void **state)
{
	struct xpt *t = *state;
	struct sfs_experiment *x = NULL;
	char *err = NULL, *p = g_build_filename(t->dir, "none.ini", NULL);

	assert_int_equal(sfs_experiment_load(p, &x, &err), -ENOENT);
	assert_null(x);
	assert_non_null(strstr(err, "none.ini"));
	g_free(err);
	g_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_experiment_good_cells,
					    xpt_setup, xpt_teardown),
	    cmocka_unit_test_setup_teardown(test_experiment_defaults, xpt_setup,
					    xpt_teardown),
	    cmocka_unit_test_setup_teardown(test_experiment_sweep_knob,
					    xpt_setup, xpt_teardown),
	    cmocka_unit_test_setup_teardown(test_experiment_repeat_seeds,
					    xpt_setup, xpt_teardown),
	    cmocka_unit_test_setup_teardown(test_experiment_bad_files,
					    xpt_setup, xpt_teardown),
	    cmocka_unit_test_setup_teardown(test_experiment_mkfs, xpt_setup,
					    xpt_teardown),
	    cmocka_unit_test_setup_teardown(test_experiment_missing_file,
					    xpt_setup, xpt_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
