/*
 * kernelref.h - the real kernel beside the model: one experiment cell run
 * by the host's ext2/ext3/ext4 driver on a loop device
 * (doc/kernel-reference.md).
 *
 *   sfs_kref_cell        the cell's system as mke2fs features and mount
 *                        options, its workload with `simfs run --path`,
 *                        the loop device's counters as rows of
 *                        CELLDIR/kernel/results.csv
 *   sfs_kref_simfs_rows  the same rows from a simfs cell's stats JSON,
 *                        so that a table can put the two side by side
 *
 * The rows (phase "all"): dev_bytes_written, dev_bytes_read,
 * dev_write_requests, dev_read_requests, dev_flushes (where the kernel
 * reports flushes), jbd2_transactions (0 without a journal).
 *
 * Invariant: sfs_kref_cell leaves no mount, no loop device and no image
 * behind, on every path, errors included.
 */
#ifndef SFS_KERNELREF_H
#define SFS_KERNELREF_H

#include <stdio.h>

#include "experiment.h"

/*
 * Run `cell` of `x` on the kernel: image of the experiment's size (or the
 * cell's --size) in CELLDIR/kernel/, mke2fs, losetup, mount, the workload
 * through simfs_path (`simfs run --path`), syncfs, umount, losetup -d.
 * Writes CELLDIR/kernel/{results.csv,stdout.txt,setup.txt}.  0, or -EPERM
 * (not root), -ENODEV (no loop devices), -EINVAL (a knob with no kernel
 * counterpart), -EIO (mke2fs, losetup, mount or the run failed), with a
 * one-line reason in *err (g_free it).
 */
int sfs_kref_cell(const struct sfs_experiment *x,
		  const struct sfs_xp_cell *cell, const char *celldir,
		  const char *simfs_path, char **err);

/*
 * Write the kernel reference's rows for a simfs cell: read its stats JSON
 * (simfs run -o stats=FILE) and print dev_* and jbd2_transactions rows in
 * the results.csv form (workload,phase,metric,value,unit; no header) to
 * out.  0, -ENOENT (no such file), -EINVAL (not a simfs stats JSON, or no
 * device section).
 */
int sfs_kref_simfs_rows(const char *stats_json, FILE *out,
			const char *workload);

#endif /* SFS_KERNELREF_H */
