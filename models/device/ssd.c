/*
 * ssd.c - a first-order flash SSD: fixed command latency plus transfer, with
 * the flash array's internal parallelism as channels.
 *
 * A read or write of the pages [first, last] (page_size each) costs
 *
 *   latency + max(len / bandwidth, ceil(pages / channels) * page_time)
 *
 * where latency and bandwidth are per op (read_latency_us / read_mbps,
 * write_latency_us / write_mbps: controller, FTL and interface) and
 * page_time is the flash array's time per page on one channel (page_read_us,
 * page_write_us: array access plus chip-bus transfer).  Pages of one request
 * are striped over the channels, so small requests are bounded by one
 * channel's page time and large ones by the interface bandwidth.  A flush
 * costs flush_us.  No seek, no rotation, no state: the same request always
 * costs the same.  Garbage collection and write amplification are not
 * modelled (doc/device-models.md).
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>

#include <glib.h>

#include "devmodel.h"

struct ssd_params {
	double read_latency_us;	 /* fixed part of a read */
	double write_latency_us; /* fixed part of a write */
	double read_mbps;	 /* interface/controller read bandwidth */
	double write_mbps;	 /* interface/controller write bandwidth */
	uint64_t channels;	 /* flash elements working in parallel */
	uint64_t page_size;	 /* bytes */
	double page_read_us;	 /* array read + chip-bus transfer, one page */
	double page_write_us;	 /* program + chip-bus transfer, one page */
	double flush_us;	 /* cost of a cache flush command */
};

struct ssd {
	struct ssd_params p;
};

static int ssd_init(struct sfs_devmodel *m, const void *params, char **err)
{
	struct ssd *s = g_new0(struct ssd, 1);

	s->p = *(const struct ssd_params *)params;
	m->priv = s;
	return 0;
}

static void ssd_fini(struct sfs_devmodel *m)
{
	g_free(m->priv);
}

static sfs_ns_t us_to_ns(double us)
{
	return (sfs_ns_t)llround(us * 1e3);
}

static int ssd_service(struct sfs_devmodel *m, const struct sfs_io_req *req,
		       sfs_ns_t now, struct sfs_dev_cost *cost)
{
	const struct ssd_params *p = &((struct ssd *)m->priv)->p;
	bool rd = req->op == SFS_IO_READ;
	uint64_t pages, rounds;
	double bus_ns, array_ns;

	if (req->op == SFS_IO_FLUSH) {
		cost->overhead_ns = us_to_ns(p->flush_us);
		return 0;
	}
	pages = (req->off_bytes + req->len_bytes - 1) / p->page_size -
		req->off_bytes / p->page_size + 1;
	rounds = (pages + p->channels - 1) / p->channels;
	bus_ns =
	    (double)req->len_bytes * 1e3 / (rd ? p->read_mbps : p->write_mbps);
	array_ns =
	    (double)rounds * 1e3 * (rd ? p->page_read_us : p->page_write_us);
	cost->overhead_ns =
	    us_to_ns(rd ? p->read_latency_us : p->write_latency_us);
	cost->transfer_ns = (sfs_ns_t)llround(fmax(bus_ns, array_ns));
	return 0;
}

#define SSD_KNOB(k, t, d, lo, hi, h)                                           \
	{                                                                      \
		.key = #k, .type = (t),                                        \
		.offset = offsetof(struct ssd_params, k), .def = (d),          \
		.min = (lo), .max = (hi), .help = (h)                          \
	}

static const struct sfs_knob ssd_knobs[] = {
    SSD_KNOB(read_latency_us, SFS_KNOB_DOUBLE, "60", 0, 1e6,
	     "us, fixed part of every read"),
    SSD_KNOB(write_latency_us, SFS_KNOB_DOUBLE, "60", 0, 1e6,
	     "us, fixed part of every write"),
    SSD_KNOB(read_mbps, SFS_KNOB_DOUBLE, "250", 1, 1e6,
	     "MB/s (10^6 B), interface read bandwidth"),
    SSD_KNOB(write_mbps, SFS_KNOB_DOUBLE, "70", 1, 1e6,
	     "MB/s (10^6 B), interface write bandwidth"),
    SSD_KNOB(channels, SFS_KNOB_U64, "10", 1, 1024,
	     "flash channels working in parallel"),
    SSD_KNOB(page_size, SFS_KNOB_SIZE, "4K", 512, 1 << 20, "flash page, bytes"),
    SSD_KNOB(page_read_us, SFS_KNOB_DOUBLE, "25", 0, 1e6,
	     "us per page on one channel, read"),
    SSD_KNOB(page_write_us, SFS_KNOB_DOUBLE, "200", 0, 1e6,
	     "us per page on one channel, program"),
    SSD_KNOB(flush_us, SFS_KNOB_DOUBLE, "100", 0, 1e7,
	     "us per cache flush command"),
    {.key = NULL},
};

const struct sfs_devmodel_ops sfs_devmodel_ssd_ops = {
    .name = "ssd",
    .help = "flash SSD: latency + max(bandwidth, channel-parallel pages)",
    .knobs = ssd_knobs,
    .params_size = sizeof(struct ssd_params),
    .init = ssd_init,
    .fini = ssd_fini,
    .service = ssd_service,
};
