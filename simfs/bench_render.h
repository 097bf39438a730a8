/*
 * bench_render.h - what `simfs bench` draws from an experiment's results:
 * a markdown table per [table] section, shaped like a published one, its
 * gnuplot plot (SVG and PNG), and with html one self-contained report.html
 * (doc/bench-output.md, "Tables, plots and the report").
 *
 * Input, in outdir: results.csv (long form: experiment,table,workload,
 * phase,system,variant,metric,value,unit; RFC 4180 quoting, a header line)
 * and, for the report, cells/<cell id>/stats.json.
 * Output, in outdir: tables/<table>.md, plots/<table>.{gp,dat,svg,png}
 * (gnuplot, or $SFS_GNUPLOT, run as a child in plots/), report.html.
 * Deterministic: the same results give the same files.
 */
#ifndef SFS_BENCH_RENDER_H
#define SFS_BENCH_RENDER_H

#include <stdbool.h>
#include <stdio.h>

#include "experiment.h"

/*
 * Write the tables, plots and (html) report of experiment x from outdir's
 * results.  0, or -errno with *err (the caller frees it): -ENOENT no
 * results.csv or no gnuplot, -EINVAL a results.csv or stats.json that does
 * not parse or a table that names no axis of its workload, -EIO a file
 * not written or gnuplot failing.  With out non-NULL, also prints the
 * Markdown tables there.
 */
int sfs_bench_render(const struct sfs_experiment *x, const char *outdir,
		     bool html, FILE *out, char **err);

#endif /* SFS_BENCH_RENDER_H */
