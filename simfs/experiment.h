/*
 * experiment.h - an experiment file for `simfs bench`: configurations x
 * workloads x sweep points x repetitions, and the tables to draw from
 * their results.  The file format is INI, as fio's job files
 * (doc/experiments.md):
 *
 *   [global]
 *   name = journal-size          ; the experiment's name (CSV column 1)
 *   title = What if the journal were 4 MB?
 *   size = 2G                    ; fresh image per cell (simfs run --size)
 *   device = hdd-2009            ; mount knobs every system gets first
 *   cpu = core2-2009
 *   options = mem=256M           ; more of them, as -o text
 *   repeat = 1                   ; repetitions (seeds seed, seed+1, ...)
 *   seed = 1
 *
 *   [system ext3-32M]            ; one configuration: a column or a line
 *   options = preset=ext3
 *   journal_size = 32M           ; simfs run --journal-size
 *   mkfs = -O dir_index          ; simfs run --mkfs ("preset": the era's)
 *
 *   [workload dbench]
 *   spec = dbench,time=60        ; simfs run -w SPEC
 *   sweep = clients=1,2,4,8      ; a workload parameter or a mount knob
 *
 *   [table throughput]
 *   workload = dbench
 *   phase = run                  ; optional: the phase the metric is of
 *   metric = mb_s                ; a metric of the cells' results
 *   rows = clients               ; the sweep's key, or "system"
 *   columns = system             ; "system", or the sweep's key
 *   plot = lines                 ; lines (x = rows), bars, or none
 *
 * A cell is one (system, workload, sweep point, repetition); every cell
 * runs `simfs run` on a fresh image, independently of the others.  Cells
 * come in the file's order: systems, then workloads, then sweep points,
 * then repetitions.  Everything is checked at load time (the file's line
 * in every message): nothing runs from a file that has a mistake in it.
 * The long-form results.csv and its columns: doc/experiments.md.
 */
#ifndef SFS_EXPERIMENT_H
#define SFS_EXPERIMENT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct sfs_xp_system {
	char *name;
	char *options;	    /* -o text: global knobs, then the system's */
	char *journal_size; /* --journal-size, or NULL */
	char *size;	    /* --size, or NULL: the experiment's */
	char *mkfs;	    /* --mkfs: its own, else [global]'s, or NULL */
	unsigned line;	    /* of its section header */
};

/* What a sweep varies. */
enum sfs_xp_sweep_kind {
	SFS_XP_SWEEP_NONE = 0,	   /* no sweep */
	SFS_XP_SWEEP_PARAM,	   /* a workload parameter: -w SPEC,key=v */
	SFS_XP_SWEEP_KNOB,	   /* a mount knob: -o ...,key=v */
	SFS_XP_SWEEP_JOURNAL_SIZE, /* journal_size: --journal-size v */
};

struct sfs_xp_workload {
	char *name;
	char *spec;	    /* simfs run -w SPEC */
	char *sweep_key;    /* "clients", "commit", ..., or NULL */
	char **sweep_vals;  /* NULL-terminated, or NULL */
	bool sweep_is_knob; /* a mount knob (-o key=v), not a parameter */
	enum sfs_xp_sweep_kind sweep_kind;
	unsigned nsweep; /* points (1 without a sweep) */
	unsigned line;
};

struct sfs_xp_table {
	char *name;
	char *workload; /* the workload section's name */
	char *phase;	/* or NULL: the first phase that has the metric */
	char *metric;
	char *rows;    /* "system", "phase" or the workload's sweep key */
	char *columns; /* the same choices, not rows' */
	char *plot;    /* "lines", "bars", "none" (always set) */
	char *title;   /* or NULL */
	unsigned line;
};

/* One cell: what `simfs run` is given. */
struct sfs_xp_cell {
	unsigned index; /* 0.. in the file's order */
	char *id;	/* "ext3-32M.dbench.clients=4.r0": a folder name */
	const struct sfs_xp_system *sys;
	const struct sfs_xp_workload *wl;
	const char *sweep_val; /* or NULL */
	unsigned rep;
	uint64_t seed;
	char *variant;	    /* "clients=4" or "" (CSV column 6); with
			       repeat > 1 "clients=4,r=1" or "r=1" */
	char **argv;	    /* simfs run's arguments after "run",
			       NULL-terminated, without IMAGE, for the
			       cell folder "cells/<id>" (relative) */
	char *spec;	    /* the -w text: spec[,sweep_key=sweep_val] */
	char *options;	    /* the -o text without stats= */
	char *size;	    /* --size */
	char *journal_size; /* --journal-size, or NULL */
};

struct sfs_experiment {
	char *path;
	char *name, *title; /* name: [A-Za-z0-9_+-], the file's base name
			       without [global] name; title: or NULL */
	char *size;	    /* default image size of the cells ("1G") */
	char *journal_size; /* default --journal-size, or NULL */
	char *mkfs;	    /* default --mkfs, or NULL */
	unsigned repeat;
	uint64_t seed;
	unsigned nsystems, nworkloads, ntables, ncells;
	struct sfs_xp_system *systems;
	struct sfs_xp_workload *workloads;
	struct sfs_xp_table *tables;
	struct sfs_xp_cell *cells;
};

/*
 * Read and check an experiment file: unknown sections or keys, bad values,
 * workload specs simfs run would refuse, tables naming what does not exist
 * are refused before anything runs, with "FILE:LINE: what" in *err.  0, or
 * -EINVAL / -ENOENT.  Free with sfs_experiment_free.
 */
int sfs_experiment_load(const char *path, struct sfs_experiment **out,
			char **err);
void sfs_experiment_free(struct sfs_experiment *x);

/*
 * The whole `simfs run` argument vector of a cell whose folder is celldir
 * (results.csv, stats.json and image.img go there): "run", the options,
 * celldir/image.img, NULL.  The caller g_strfreev's it.
 */
char **sfs_xp_cell_argv(const struct sfs_experiment *x,
			const struct sfs_xp_cell *cell, const char *celldir);

/* The table a results row of cell (phase, metric) belongs to: the first
 * [table] of the cell's workload showing that metric of that phase, or
 * NULL.  A table with phase= shows that phase; without, one with a
 * "phase" axis shows every phase, any other first_phase (the cell's first
 * phase having the metric). */
const struct sfs_xp_table *sfs_xp_row_table(const struct sfs_experiment *x,
					    const struct sfs_xp_cell *cell,
					    const char *phase,
					    const char *metric,
					    const char *first_phase);

/* The `simfs bench` subcommand (cmd_bench.c): argv[0] is "bench"; the
 * exit status (0, 1 a cell or the output failed, 2 usage or a bad file). */
int sfs_cmd_bench(int argc, char **argv);

#endif /* SFS_EXPERIMENT_H */
