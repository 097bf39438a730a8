/*
 * lab_engine.h - what the engine-driven labs (lab_crash.c, lab_cache.c,
 * lab_disk.c) share: devices held in memory, so a lab runs its scenario
 * through the engine without touching the host's disk.
 *
 *   bd = sfs_lab_memdev_new(size, true);    bytes kept (mkfs, crash)
 *   bd = sfs_lab_memdev_new(size, false);   bytes dropped, reads zeros
 *                                           (timing and cache labs)
 *   sfs_lab_memdev_snapshot(bd) / _restore(bd, snap)   copy of the bytes
 *
 * Both read as zeros when new and say so (sfs_bdev_known_zero), so mkfs
 * skips zeroing.  Not thread-safe (a lab is one thread).
 */
#ifndef SFS_LAB_ENGINE_H
#define SFS_LAB_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "blockdev.h"
#include "format.h"

/* A device of size_bytes in memory; keep = false: a sink that stores
 * nothing (any size).  NULL if size_bytes is 0 (or too large to keep). */
struct sfs_bdev *sfs_lab_memdev_new(uint64_t size_bytes, bool keep);
/* A copy of a keeping device's bytes (g_bytes_unref it), NULL for a sink. */
GBytes *sfs_lab_memdev_snapshot(struct sfs_bdev *bd);
/* Put a snapshot's bytes back (same size): 0 or -EINVAL. */
int sfs_lab_memdev_restore(struct sfs_bdev *bd, GBytes *snap);

/* Milliseconds with one decimal ("12.3") in buf (>= 24 bytes). */
const char *sfs_lab_ms(char *buf, sfs_ns_t ns);
/* The same with two decimals ("12.34"), for worked arithmetic. */
const char *sfs_lab_ms2(char *buf, sfs_ns_t ns);

#endif /* SFS_LAB_ENGINE_H */
