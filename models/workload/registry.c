/*
 * registry.c - the workloads `simfs run` knows, by name (workload.h).
 * A new workload is one file in this folder and one line here.
 */
#include <string.h>

#include <glib.h>

#include "workload.h"

extern const struct sfs_workload_ops sfs_wl_dd_ops;
extern const struct sfs_workload_ops sfs_wl_untar_ops;
extern const struct sfs_workload_ops sfs_wl_compilebench_ops;
extern const struct sfs_workload_ops sfs_wl_iozone_ops;
extern const struct sfs_workload_ops sfs_wl_tiobench_ops;
extern const struct sfs_workload_ops sfs_wl_bonnie_ops;
extern const struct sfs_workload_ops sfs_wl_fsmark_ops;
extern const struct sfs_workload_ops sfs_wl_postmark_ops;
extern const struct sfs_workload_ops sfs_wl_dbench_ops;
extern const struct sfs_workload_ops sfs_wl_trace_ops;

static const struct sfs_workload_ops *const workloads[] = {
    &sfs_wl_dd_ops,	&sfs_wl_untar_ops,    &sfs_wl_compilebench_ops,
    &sfs_wl_iozone_ops, &sfs_wl_tiobench_ops, &sfs_wl_bonnie_ops,
    &sfs_wl_fsmark_ops, &sfs_wl_postmark_ops, &sfs_wl_dbench_ops,
    &sfs_wl_trace_ops,
};

const struct sfs_workload_ops *sfs_workload_nth(unsigned i)
{
	return i < G_N_ELEMENTS(workloads) ? workloads[i] : NULL;
}

const struct sfs_workload_ops *sfs_workload_find(const char *name)
{
	for (unsigned i = 0; i < G_N_ELEMENTS(workloads); i++)
		if (name && strcmp(workloads[i]->name, name) == 0)
			return workloads[i];
	return NULL;
}
