/* bench_render.c - placeholder until the renderer lands. */
#include <errno.h>

#include <glib.h>

#include "bench_render.h"

int sfs_bench_render(const struct sfs_experiment *x, const char *outdir,
		     bool html, FILE *out, char **err)
{
	(void)x, (void)outdir, (void)html, (void)out;
	*err = g_strdup("not built yet");
	return -ENOSYS;
}
