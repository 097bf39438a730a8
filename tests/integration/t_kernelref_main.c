/*
 * t_kernelref_main.c - a test-only door to simfs/kernelref.c, for
 * t_kernelref.sh while `simfs bench --reference kernel` is not there:
 *
 *   t_kernelref_main cell SIMFS CELLDIR OPTIONS SPEC [SIZE [JOURNAL-SIZE]]
 *       one cell, built by hand as the experiment parser would build it
 *       (-w SPEC -o OPTIONS --size SIZE [--journal-size J] --seed 1), run
 *       on the kernel with sfs_kref_cell: CELLDIR/kernel/results.csv
 *   t_kernelref_main simfs-rows STATS.json WORKLOAD
 *       the same rows from a simfs stats JSON, on stdout
 *
 * Exit status: 0; 1 on failure (the reason on stderr); 77 (meson SKIP)
 * when sfs_kref_cell says there is no root or no loop device; 2 usage.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "experiment.h"
#include "kernelref.h"

static int run_cell(char **argv, int argc)
{
	struct sfs_xp_system sys = {.name = (char *)"sys", .options = argv[3]};
	struct sfs_xp_workload wl = {.name = (char *)"wl", .spec = argv[4]};
	const char *size = argc > 5 ? argv[5] : "256M";
	GPtrArray *av = g_ptr_array_new();
	struct sfs_xp_cell cell = {.id = (char *)"sys.wl.r0",
				   .sys = &sys,
				   .wl = &wl,
				   .seed = 1,
				   .variant = (char *)""};
	struct sfs_experiment x = {.name = (char *)"kernelref",
				   .size = (char *)size,
				   .repeat = 1,
				   .seed = 1,
				   .nsystems = 1,
				   .nworkloads = 1,
				   .ncells = 1,
				   .systems = &sys,
				   .workloads = &wl,
				   .cells = &cell};
	char *err = NULL;
	int rc;

	g_ptr_array_add(av, (char *)"-w");
	g_ptr_array_add(av, argv[4]);
	g_ptr_array_add(av, (char *)"-o");
	g_ptr_array_add(av, argv[3]);
	g_ptr_array_add(av, (char *)"--size");
	g_ptr_array_add(av, (char *)size);
	if (argc > 6) {
		g_ptr_array_add(av, (char *)"--journal-size");
		g_ptr_array_add(av, argv[6]);
	}
	g_ptr_array_add(av, (char *)"--seed");
	g_ptr_array_add(av, (char *)"1");
	g_ptr_array_add(av, NULL);
	cell.argv = (char **)av->pdata;

	rc = sfs_kref_cell(&x, &cell, argv[2], argv[1], &err);
	if (rc)
		fprintf(stderr, "t_kernelref_main: %s (%s)\n", err ? err : "?",
			g_strerror(-rc));
	g_free(err);
	g_ptr_array_free(av, TRUE);
	if (rc == -EPERM || rc == -ENODEV)
		return 77;
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc >= 6 && argc <= 8 && strcmp(argv[1], "cell") == 0)
		return run_cell(argv + 1, argc - 1);
	if (argc == 4 && strcmp(argv[1], "simfs-rows") == 0) {
		rc = sfs_kref_simfs_rows(argv[2], stdout, argv[3]);
		if (rc)
			fprintf(stderr, "t_kernelref_main: %s: %s\n", argv[2],
				g_strerror(-rc));
		return rc ? 1 : 0;
	}
	fprintf(stderr,
		"usage: t_kernelref_main cell SIMFS CELLDIR OPTIONS SPEC "
		"[SIZE [JOURNAL-SIZE]]\n"
		"       t_kernelref_main simfs-rows STATS.json WORKLOAD\n");
	return 2;
}
