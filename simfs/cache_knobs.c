/*
 * cache_knobs.c - the page cache's mount options: the knob table of the
 * buffer cache (cache.c) and its write-back policy (doc/cache.md).
 *
 * The values live in struct sfs_config (sfs_fs_cache_policy in remount.c
 * turns them into a struct sfs_cache_policy when the cache is set up and
 * when they change while mounted), so the offsets are into that struct.
 * config.c finds the table through the row flagged CFG_MODEL_ROWS that
 * points at it and treats each knob as one of its rows, as it does the
 * journal's (models/journal/knobs.c): the option parser, --help,
 * simfs-options(7), bash completion and /.simfs/config list them there,
 * after journal_dev=.
 *
 * vm= is an enum whose value config.c keeps as its name (cfg->vm, the
 * preset sfs_cache_policy_preset looks up), not as an index; its choices
 * are the names of cache.c's presets, in their order (test_config checks
 * both lists agree).  A dirty_* knob at 0 leaves the preset's value.
 *
 * Sources: Linux Documentation/admin-guide/sysctl/vm.rst for the dirty_*
 * knobs (the _bytes forms override the ratios when non-zero).
 */
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "devmodel.h" /* struct sfs_knob */

static const struct sfs_knob cache_knobs[] = {
    {.key = "vm",
     .type = SFS_KNOB_ENUM,
     .offset = offsetof(struct sfs_config, vm),
     .def = "modern",
     .choices = "2.6|2.6.22|modern",
     .live = true,
     .metavar = "PRESET",
     .help = "write-back defaults of an era: 2.6 (40/10 %), 2.6.22 "
	     "(10/5 %), modern (20/10 %)"},
    {.key = "dirty_ratio",
     .type = SFS_KNOB_U32,
     .offset = offsetof(struct sfs_config, dirty_ratio),
     .def = "0",
     .min = 0,
     .max = 100,
     .live = true,
     .metavar = "PERCENT",
     .help = "dirty share of mem= that throttles writers (0: vm=)"},
    {.key = "dirty_background_ratio",
     .type = SFS_KNOB_U32,
     .offset = offsetof(struct sfs_config, dirty_background_ratio),
     .def = "0",
     .min = 0,
     .max = 100,
     .live = true,
     .metavar = "PERCENT",
     .help = "dirty share of mem= that starts the flusher (0: vm=)"},
    {.key = "dirty_bytes",
     .type = SFS_KNOB_SIZE,
     .offset = offsetof(struct sfs_config, dirty_bytes),
     .def = "0",
     .min = 0,
     .max = (double)UINT64_MAX,
     .live = true,
     .metavar = "SIZE",
     .help = "dirty_ratio as bytes (0: use the ratio)"},
    {.key = "dirty_background_bytes",
     .type = SFS_KNOB_SIZE,
     .offset = offsetof(struct sfs_config, dirty_background_bytes),
     .def = "0",
     .min = 0,
     .max = (double)UINT64_MAX,
     .live = true,
     .metavar = "SIZE",
     .help = "dirty_background_ratio as bytes (0: use the ratio)"},
    {.key = "dirty_expire_centisecs",
     .type = SFS_KNOB_U32,
     .offset = offsetof(struct sfs_config, dirty_expire_cs),
     .def = "0",
     .min = 0,
     .max = 8640000,
     .live = true,
     .metavar = "CS",
     .help = "age at which dirty data is written back (0: vm=, 3000)"},
    {.key = "dirty_writeback_centisecs",
     .type = SFS_KNOB_U32,
     .offset = offsetof(struct sfs_config, dirty_writeback_cs),
     .def = "0",
     .min = 0,
     .max = 8640000,
     .live = true,
     .metavar = "CS",
     .help = "flusher wake-up interval (0: vm=, 500)"},
    {.key = "mem",
     .type = SFS_KNOB_SIZE,
     .offset = offsetof(struct sfs_config, mem_bytes),
     .def = "256M",
     .min = 1ull << 20,
     .max = (double)UINT64_MAX,
     .metavar = "SIZE",
     .help = "buffer cache budget (K/M/G/T suffix)"},
    {.key = NULL},
};

const struct sfs_knob *const sfs_cache_knobs = cache_knobs;
