/* experiment.c - placeholder until the experiment parser lands. */
#include <errno.h>

#include <glib.h>

#include "experiment.h"

int sfs_experiment_load(const char *path, struct sfs_experiment **out,
			char **err)
{
	(void)path;
	*out = NULL;
	*err = g_strdup("not built yet");
	return -ENOSYS;
}

void sfs_experiment_free(struct sfs_experiment *x)
{
	(void)x;
}
