/*
 * ideal.c - the ideal device: every request costs nothing.
 *
 * With it, simfs measures what the filesystem asks of the device (requests,
 * bytes, categories) with no device time at all: the baseline against which
 * the other models' times are the cost of the hardware.
 */
#include "devmodel.h"

static int ideal_init(struct sfs_devmodel *m, const void *params, char **err)
{
	return 0;
}

static int ideal_service(struct sfs_devmodel *m, const struct sfs_io_req *req,
			 sfs_ns_t now, struct sfs_dev_cost *cost)
{
	return 0; /* the door zeroed *cost */
}

static const struct sfs_knob ideal_knobs[] = {
    {.key = NULL},
};

const struct sfs_devmodel_ops sfs_devmodel_ideal_ops = {
    .name = "ideal",
    .help = "zero-cost device: counts requests, charges no time",
    .knobs = ideal_knobs,
    .params_size = 0,
    .init = ideal_init,
    .service = ideal_service,
};
