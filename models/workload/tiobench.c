/* tiobench.c - placeholder until the tiobench workload lands. */
#include <errno.h>

#include <glib.h>

#include "workload.h"

static int ph_init(const struct sfs_wl_value *v, void **st, char **err)
{
	(void)v;
	*st = NULL;
	*err = g_strdup("not built yet");
	return -ENOSYS;
}

static unsigned ph_clients(void *st)
{
	(void)st;
	return 1;
}

static int ph_next(void *st, unsigned c, sfs_ns_t now, struct sfs_wop *out,
		   char **err)
{
	(void)st, (void)c, (void)now, (void)out, (void)err;
	return 0;
}

static const struct sfs_wl_param ph_params[] = {{NULL}};

const struct sfs_workload_ops sfs_wl_tiobench_ops = {
    .name = "tiobench",
    .help = "(not built yet)",
    .params = ph_params,
    .init = ph_init,
    .clients = ph_clients,
    .next = ph_next,
};
