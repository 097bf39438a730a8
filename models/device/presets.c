/*
 * presets.c - named device configurations: a model plus knob settings.
 *
 * Data, not code: a preset is a row here.  A spec may name a preset and
 * override any of its knobs ("hdd-2009,rpm=5400").  Where each number comes
 * from, and how well the presets hit their targets, is in
 * doc/device-models.md ("Presets").
 */
#include <stddef.h>

#include "devmodel.h"

const struct sfs_devmodel_preset sfs_devmodel_presets[] = {
    {
	.name = "hdd-2009",
	.model = "hdd",
	.help = "500 GB 7200 rpm SATA disk of seed A (2009): 66 MB/s "
		"outer, 11-12 ms per random 256 KiB read",
	/* Hitachi Deskstar 7K500 numbers, head switch and overhead
	 * calibrated to seed A (doc/device-models.md) */
	.params = "capacity=500000000000,rpm=7200,heads=10,zones=30,"
		  "outer_mbps=76.3,inner_mbps=36.5,"
		  "seek_t2t_ms=1.0,seek_avg_ms=8.5,seek_max_ms=17,"
		  "seek_knee=0.12,write_settle_ms=1.0,"
		  "head_switch_ms=1.3,overhead_ms=0.5,"
		  "hit_overhead_ms=0.05,bus_mbps=300,"
		  "segments=8,segment_size=1M,read_ahead=1M,"
		  "write_cache=on,write_cache_size=8M,destage=fifo,"
		  "flush_ms=0.1",
    },
    {
	.name = "scsi-2002",
	.model = "hdd",
	.help = "73 GB 10k rpm Ultra320 SCSI disk of seed B (2002), "
		"after the IBM Ultrastar 146Z10",
	.params = "capacity=73400000000,rpm=10000,heads=6,zones=15,"
		  "outer_mbps=75,inner_mbps=37.6,"
		  "seek_t2t_ms=0.5,seek_avg_ms=4.7,seek_max_ms=10.5,"
		  "seek_knee=0.1,write_settle_ms=0.6,"
		  "head_switch_ms=0.8,overhead_ms=0.4,"
		  "hit_overhead_ms=0.03,bus_mbps=320,"
		  "segments=8,segment_size=512K,read_ahead=512K,"
		  "write_cache=on,write_cache_size=4M,destage=fifo,"
		  "flush_ms=0.1",
    },
    {
	.name = "ssd",
	.model = "ssd",
	.help = "2008 MLC SSD (Intel X25-M class; DiskSim SSD page "
		"times)",
	.params = "read_latency_us=60,write_latency_us=60,"
		  "read_mbps=250,write_mbps=70,channels=10,"
		  "page_size=4K,page_read_us=25,page_write_us=200,"
		  "flush_us=100",
    },
    {
	.name = "ideal",
	.model = "ideal",
	.help = "no device time at all",
	.params = "",
    },
    {.name = NULL},
};
