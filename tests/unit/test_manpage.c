/*
 * test_manpage.c - simfs-options(7), as built, names every knob and model
 * the tables hold.
 *
 * The page is generated from those tables (simfs/manpage.c); this test
 * walks them again, through the doors the parser and the models use
 * (sfs_config_each for the knobs in effect, the registries for the models
 * and presets), and looks for each name as a bold term or a section title
 * of the page, so that a knob or model the generator skips, or a page left
 * stale, fails here.  argv[1] is the page (meson passes the built one).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <glib.h>

#include "alloc.h"
#include "config.h"
#include "cpumodel.h"
#include "devmodel.h"
#include "journal.h"
#include "sched.h"

static char *page; /* the roff text, with \- and \: undone */

/* Is name on the page as a term (".TP" then "\fBname") or a title? */
static bool on_page(const char *name)
{
	char *term = g_strdup_printf("\n\\fB%s", name);
	char *noterm = g_strdup_printf("\n\\fB[no]%s\\fR", name);
	char *title = g_strdup_printf("\n.SS \"%s\"\n", name);
	const char *p = page;
	bool found = strstr(page, title) || strstr(page, noterm);

	/* a term starts the line after .TP and ends at '=', '\' or ' ' */
	while (!found && (p = strstr(p, term))) {
		char end = p[strlen(term)];

		found = (end == '=' || end == '\\' || end == ' ') &&
			p - page >= 3 && strncmp(p - 3, ".TP", 3) == 0;
		p++;
	}
	if (!found)
		print_error("'%s' is not a term of simfs-options(7)\n", name);
	g_free(term);
	g_free(noterm);
	g_free(title);
	return found;
}

static void check_knobs(const struct sfs_knob *knobs, unsigned *missing)
{
	for (const struct sfs_knob *k = knobs; k && k->key; k++)
		*missing += !on_page(k->key);
}

static void each_knob(void *ctx, const char *name, const char *value)
{
	*(unsigned *)ctx += !on_page(name);
}

static void test_manpage_every_config_knob(void **state)
{
	struct sfs_config cfg;
	struct sfs_config_doc d;
	unsigned missing = 0, n = 0;

	sfs_config_defaults(&cfg);
	sfs_config_each(&cfg, true, each_knob, &missing);
	/* the models' tables the option table lists as its rows */
	check_knobs(sfs_jnl_knobs, &missing);
	check_knobs(sfs_cache_knobs, &missing);
	/* the aliases (journal=, rw, noatime, ...) too */
	for (unsigned i = 0; sfs_config_doc_nth(i, &d); i++, n++) {
		missing += !on_page(d.name);
		g_free(d.choices);
	}
	assert_true(n > 30);
	assert_int_equal(missing, 0);
}

static void test_manpage_every_model_and_preset(void **state)
{
	const struct sfs_config_preset *pr;
	const struct sfs_alloc_preset *al;
	const struct sfs_jnl_ops *jn;
	const struct sfs_devmodel_ops *dm;
	const struct sfs_devmodel_preset *dp;
	const struct sfs_cpu_preset *cp;
	const char *name;
	unsigned missing = 0, scheds = 0;

	for (unsigned i = 0; (pr = sfs_config_preset_nth(i)); i++)
		missing += !on_page(pr->name);
	for (unsigned i = 0; (al = sfs_alloc_nth(i)); i++)
		missing += !on_page(al->name);
	for (unsigned i = 0; (jn = sfs_jnl_nth(i)); i++)
		missing += !on_page(jn->name);
	for (unsigned i = 0; (dm = sfs_devmodel_nth(i)); i++) {
		missing += !on_page(dm->name);
		check_knobs(dm->knobs, &missing);
	}
	for (unsigned i = 0; (dp = sfs_devmodel_nth_preset(i)); i++)
		missing += !on_page(dp->name);
	for (unsigned i = 0; (name = sfs_sched_nth(i, NULL)); i++, scheds++) {
		missing += !on_page(name);
		check_knobs(sfs_sched_knobs(name), &missing);
	}
	for (unsigned i = 0; (cp = sfs_cpumodel_nth_preset(i)); i++)
		missing += !on_page(cp->name);
	check_knobs(sfs_cpumodel_knobs(), &missing);
	assert_int_equal(scheds, 3);
	assert_int_equal(missing, 0);
}

/* The scheduler iterator the page walks agrees with the knob lookup. */
static void test_manpage_sched_nth(void **state)
{
	const char *help = NULL;

	assert_string_equal(sfs_sched_nth(0, &help), "noop");
	assert_non_null(help);
	assert_non_null(sfs_sched_knobs(sfs_sched_nth(1, NULL)));
	assert_null(sfs_sched_nth(99, NULL));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_manpage_every_config_knob),
	    cmocka_unit_test(test_manpage_every_model_and_preset),
	    cmocka_unit_test(test_manpage_sched_nth),
	};
	GError *gerr = NULL;
	char *raw = NULL;
	GString *s;

	if (argc != 2 || !g_file_get_contents(argv[1], &raw, NULL, &gerr)) {
		fprintf(stderr, "usage: test_manpage simfs-options.7 (%s)\n",
			gerr ? gerr->message : "no page given");
		return 1;
	}
	/* undo the minus signs and the break points after commas */
	s = g_string_new(NULL);
	for (const char *p = raw; *p; p++) {
		if (p[0] == '\\' && (p[1] == '-' || p[1] == ':')) {
			if (p[1] == '-')
				g_string_append_c(s, '-');
			p++;
		} else {
			g_string_append_c(s, *p);
		}
	}
	page = g_string_free(s, FALSE);
	g_free(raw);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
