/*
 * bench_render.h - what `simfs bench` draws from an experiment's results:
 * a markdown table per [table] section, shaped like a published one, its
 * gnuplot plot (SVG and PNG), and with html one self-contained report.html
 * (doc/experiments.md).
 *
 * Input, in outdir: results.csv (long form: experiment,table,workload,
 * phase,system,variant,metric,value,unit) and cells/<cell id>/stats.json.
 * Output, in outdir: tables/<table>.md, plots/<table>.{gp,svg,png},
 * report.html.  Deterministic: the same results give the same files.
 */
#ifndef SFS_BENCH_RENDER_H
#define SFS_BENCH_RENDER_H

#include <stdbool.h>
#include <stdio.h>

#include "experiment.h"

/* 0, or -errno with *err (a results.csv that does not parse, gnuplot
 * failing).  With out non-NULL, also prints the tables there. */
int sfs_bench_render(const struct sfs_experiment *x, const char *outdir,
		     bool html, FILE *out, char **err);

#endif /* SFS_BENCH_RENDER_H */
