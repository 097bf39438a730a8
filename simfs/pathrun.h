/*
 * pathrun.h - `simfs run --path DIR`: a workload (workload.h) issued as
 * ordinary system calls against any mounted directory (a simfs mount, a
 * kernel ext4 on a loop device, tmpfs), timed on the wall clock, so the
 * real kernel can be put beside the model.
 *
 *   struct sfs_wl_result res;
 *   rc = sfs_pathrun(w, "/mnt/x", &(struct sfs_pathrun_opts){.seed = 1},
 *                    &res, &err);
 *   sfs_workload_report(w, &res, stdout);
 *   sfs_wl_result_free(&res);
 *
 * One thread per client; each pulls its ops from the generator under one
 * mutex and serves them with openat/pwrite/fsync/... relative to DIR.  The
 * workload's handle numbers are mapped per client to real descriptors.
 * Write data is op->data or sfs_wl_fill's pattern, the same bytes the
 * engine runner writes.  Details and caveats: doc/user-guide.md §12.1.
 */
#ifndef SFS_PATHRUN_H
#define SFS_PATHRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "workload.h"

/* The phase of ops before the first op that names one (as run.c). */
#define SFS_PATHRUN_PHASE "run"

struct sfs_pathrun_opts {
	bool verbose;  /* one line per op on stderr */
	uint64_t seed; /* of the write pattern (sfs_wl_fill) */
	bool clean;    /* afterwards, remove what the run created under DIR */
};

/*
 * Run workload w against the directory dir (paths of its ops are relative
 * to it).  o may be NULL (defaults: seed 0, quiet, no clean).  res is
 * initialized here and must be freed with sfs_wl_result_free whatever the
 * return.  Ops whose result differs from op->expect are counted in
 * res->mismatches, not returned.  Errors (message in *err, g_free it):
 * -ENOENT / -ENOTDIR for a bad dir, -EINVAL when the file system refuses
 * O_DIRECT, a generator's own error, -ENOMEM / -EAGAIN for resources.
 */
int sfs_pathrun(struct sfs_workload *w, const char *dir,
		const struct sfs_pathrun_opts *o, struct sfs_wl_result *res,
		char **err);

/*
 * The same, for a workload given as an ops table and its state (already
 * made by ops->init; the caller still owns and frees it): for tests and
 * for generators that are not in the registry.
 */
int sfs_pathrun_ops(const struct sfs_workload_ops *ops, void *st,
		    const char *dir, const struct sfs_pathrun_opts *o,
		    struct sfs_wl_result *res, char **err);

/*
 * The runners' write pattern: fills buf with the len bytes that belong at
 * file offset off.  Byte p of a file is byte (p % 8) (little-endian) of
 * XXH3_64bits_withSeed(le64(p / 8), 8, seed), so any range can be made or
 * checked on its own, and the same (offset, seed) always gives the same
 * bytes on every machine.
 */
void sfs_wl_fill(void *buf, uint64_t off, size_t len, uint64_t seed);

#endif /* SFS_PATHRUN_H */
