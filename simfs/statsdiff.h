/*
 * statsdiff.h - what changed between two runs: two stats JSON documents
 * (`simfs stats --diff A.json B.json`) or two `simfs bench` output folders
 * (`simfs bench --diff DIR1 DIR2`).  Layout of the output: doc/compare.md.
 *
 *   sfs_stats_diff_files(a.json, b.json, out, &err)   two files, all of it
 *   sfs_stats_diff_json(a, "A", b, "B", top, "  ", out, &err)   parsed docs
 *   sfs_bench_diff(dir1, dir2, out, &err)   results.csv + cells' stats
 *
 * A stats document is flattened into leaves named by their path
 * ("journal.commits_total", "device.submitted.write.bytes"), grouped by the
 * top-level section they are in (the layer).  Histogram buckets become one
 * leaf per bucket ("journal.transaction_blocks.buckets[8-15]"), a missing
 * bucket counting as 0; other arrays are indexed ("x[0]").
 *
 * Invariants: the output depends only on the two inputs (sorting is total:
 * relative change, then name); nothing is printed for a leaf that is equal
 * in both, only counted; bad input gives -ENOENT or -EINVAL and a one-line
 * message in *err (the caller frees it with g_free), never an abort.
 */
#ifndef SFS_STATSDIFF_H
#define SFS_STATSDIFF_H

#include <stdio.h>

#include <json-glib/json-glib.h>

/* How many of each bench cell's stats changes sfs_bench_diff prints. */
#define SFS_DIFF_CELL_TOP 5

/*
 * Print what changed from document a to document b (both as the engine
 * writes them, with simfs_stats_version) to out, grouped by top-level
 * section, each line prefixed by indent.  top = 0: every difference;
 * otherwise only the top largest changes.  The labels name the documents
 * in error messages.  Returns 0, or -EINVAL (not a stats document).
 */
int sfs_stats_diff_json(JsonNode *a, const char *label_a, JsonNode *b,
			const char *label_b, unsigned top, const char *indent,
			FILE *out, char **err);

/*
 * Read two stats JSON files and print every difference (a header naming
 * A and B, then sfs_stats_diff_json's output).  Returns 0, -ENOENT (a file
 * cannot be read) or -EINVAL (not JSON, not a stats document).
 */
int sfs_stats_diff_files(const char *path_a, const char *path_b, FILE *out,
			 char **err);

/*
 * Compare two `simfs bench` output folders: their results.csv rows matched
 * on (table, workload, phase, system, variant, metric), changed values
 * largest relative change first, grouped by table, rows only in one; then,
 * for each cell in both folders, the top SFS_DIFF_CELL_TOP changes of its
 * stats.json.  Returns 0, -ENOENT (no folder or no results.csv) or -EINVAL
 * (a results.csv that is not in the long form); *err says which.
 */
int sfs_bench_diff(const char *dir1, const char *dir2, FILE *out, char **err);

#endif
