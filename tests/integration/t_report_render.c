/*
 * t_report_render.c - the helper of t_report.sh: makes a small `simfs
 * bench` output folder the way the runner does, without the experiment
 * parser, and renders it with sfs_bench_render.
 *
 *   t_report_render SIMFS OUTDIR
 *
 * The experiment (built by hand): ext2 and ext3 on the hdd-2009 / core2-2009
 * models, fsmark with 20 files swept over threads=1,2,4; two tables, files
 * per second (lines, threads down, systems across) and journal commits
 * (bars).  Every cell is a real `SIMFS run` on a fresh temporary image,
 * with its stats.json and results.csv in OUTDIR/cells/<id>/; their rows
 * become OUTDIR/results.csv in long form.  Exit 0, or 1 with a message.
 *
 * bench_render.c is part of the simfs program, not of libsimfs: meson
 * compiles it into this helper too.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "bench_render.h"

#define NSYS 2
#define NVAL 3

/* Append the rows of one cell's results.csv (workload,phase,metric,value,
 * unit) to LONG in long form.  0, or -EINVAL. */
static int add_cell_rows(GString *lng, const struct sfs_experiment *x,
			 const struct sfs_xp_cell *c, const char *csv)
{
	char *text = NULL, **lines;
	int rc = 0;

	if (!g_file_get_contents(csv, &text, NULL, NULL)) {
		fprintf(stderr, "t_report_render: %s: cannot read\n", csv);
		return -EINVAL;
	}
	lines = g_strsplit(text, "\n", -1);
	for (unsigned i = 1; lines[i] && !rc; i++) {
		char **f = g_strsplit(lines[i], ",", -1);

		if (!*lines[i]) {
			g_strfreev(f);
			continue;
		}
		if (g_strv_length(f) != 5) {
			fprintf(stderr, "t_report_render: %s:%u: bad line\n",
				csv, i + 1);
			rc = -EINVAL;
		} else {
			g_string_append_printf(
			    lng, "%s,,%s,%s,%s,%s,%s,%s,%s\n", x->name,
			    c->wl->name, f[1], c->sys->name, c->variant, f[2],
			    f[3], f[4]);
		}
		g_strfreev(f);
	}
	g_strfreev(lines);
	g_free(text);
	return rc;
}

int main(int argc, char **argv)
{
	struct sfs_xp_system sys[NSYS] = {
	    {.name = "ext2",
	     .options = "device=hdd-2009,cpu=core2-2009,"
			"preset=ext2"},
	    {.name = "ext3",
	     .options = "device=hdd-2009,cpu=core2-2009,"
			"preset=ext3"},
	};
	char *vals[NVAL + 1] = {"1", "2", "4", NULL};
	struct sfs_xp_workload wl = {.name = "fsmark",
				     .spec = "fsmark,files=20",
				     .sweep_key = "threads",
				     .sweep_vals = vals};
	struct sfs_xp_table tabs[2] = {
	    {.name = "files",
	     .workload = "fsmark",
	     .phase = "iteration 1",
	     .metric = "ops_s",
	     .rows = "threads",
	     .columns = "system",
	     .plot = "lines",
	     .title = "fs_mark: operations per second by threads"},
	    {.name = "commits",
	     .workload = "fsmark",
	     .phase = "all",
	     .metric = "commits",
	     .rows = "system",
	     .columns = "threads",
	     .plot = "bars",
	     .title = "fs_mark: journal commits"},
	};
	struct sfs_xp_cell cells[NSYS * NVAL] = {{0}};
	struct sfs_experiment x = {.name = "report-test",
				   .title = "Report test: ext2 against ext3",
				   .repeat = 1,
				   .seed = 1,
				   .nsystems = NSYS,
				   .nworkloads = 1,
				   .ntables = 2,
				   .ncells = NSYS * NVAL,
				   .systems = sys,
				   .workloads = &wl,
				   .tables = tabs,
				   .cells = cells};
	GString *lng = g_string_new("experiment,table,workload,phase,system,"
				    "variant,metric,value,unit\n");
	char *err = NULL, *path;
	int rc = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: t_report_render SIMFS OUTDIR\n");
		return 2;
	}
	for (unsigned i = 0; i < NSYS * NVAL && !rc; i++) {
		struct sfs_xp_cell *c = &cells[i];
		char *dir, *opts, *spec, *csv, *out = NULL, *errs = NULL;
		GError *gerr = NULL;
		int status;

		memset(c, 0, sizeof(*c));
		c->index = i;
		c->sys = &sys[i / NVAL];
		c->wl = &wl;
		c->sweep_val = vals[i % NVAL];
		c->seed = 1;
		c->variant = g_strdup_printf("threads=%s", c->sweep_val);
		c->id = g_strdup_printf("%s.fsmark.%s.r0", c->sys->name,
					c->variant);
		dir = g_build_filename(argv[2], "cells", c->id, NULL);
		g_mkdir_with_parents(dir, 0755);
		opts = g_strdup_printf("%s,stats=%s/stats.json",
				       c->sys->options, dir);
		spec = g_strdup_printf("%s,%s", wl.spec, c->variant);
		csv = g_strdup_printf("%s/results.csv", dir);
		c->argv = g_new0(char *, 10);
		c->argv[0] = g_strdup("-q");
		c->argv[1] = g_strdup("-w");
		c->argv[2] = spec;
		c->argv[3] = g_strdup("-o");
		c->argv[4] = opts;
		c->argv[5] = g_strdup("--seed");
		c->argv[6] = g_strdup("1");
		c->argv[7] = g_strdup("--results");
		c->argv[8] = csv;
		{
			char *run[12] = {argv[1], "run"};

			memcpy(run + 2, c->argv, 9 * sizeof(char *));
			if (!g_spawn_sync(NULL, run, NULL, 0, NULL, NULL, &out,
					  &errs, &status, &gerr) ||
			    !g_spawn_check_wait_status(status, &gerr)) {
				fprintf(
				    stderr, "t_report_render: %s run: %s\n%s",
				    argv[1], gerr->message, errs ? errs : "");
				g_error_free(gerr);
				rc = -EIO;
			}
		}
		if (!rc)
			rc = add_cell_rows(lng, &x, c, csv);
		g_free(out);
		g_free(errs);
		g_free(dir);
	}
	path = g_build_filename(argv[2], "results.csv", NULL);
	if (!rc && !g_file_set_contents(path, lng->str, lng->len, NULL)) {
		fprintf(stderr, "t_report_render: %s: cannot write\n", path);
		rc = -EIO;
	}
	if (!rc) {
		rc = sfs_bench_render(&x, argv[2], true, stdout, &err);
		if (rc)
			fprintf(stderr, "t_report_render: %s\n", err);
	}
	for (unsigned i = 0; i < NSYS * NVAL; i++) {
		if (!cells[i].argv)
			break;
		g_strfreev(cells[i].argv);
		g_free(cells[i].id);
		g_free(cells[i].variant);
	}
	g_free(path);
	g_free(err);
	g_string_free(lng, TRUE);
	return rc ? 1 : 0;
}
