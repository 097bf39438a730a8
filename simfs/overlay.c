/*
 * overlay.c - a copy-on-write device in memory over another device
 * (blockdev.h: sfs_bdev_overlay_new).
 *
 * What it is for: looking at an image as it would be after the engine
 * has written to it, without writing to it.  `simfs inspect` opens a
 * journaled image that still needs recovery over an overlay, lets the
 * engine replay the journal into it and shows the result; the file on
 * disk is never touched.
 *
 * Verbs: read, write, zero and flush, as every device.  A write copies the
 * 512-byte sectors it touches into memory (a sector written in part is
 * first read whole from the base); a read takes each sector from memory
 * if it was written, else from the base.  Flush does nothing: nothing
 * under the overlay may change.
 *
 * Invariant: the base device is only ever read.  Memory grows with the
 * sectors written (a journal replay writes at most the journal's size).
 */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "blockdev.h"

#define OVL_SECT 512u

struct overlay {
	struct sfs_bdev *base;
	GHashTable *sect; /* sector number (guint64 *) -> OVL_SECT bytes */
};

static int ovl_read(struct sfs_bdev *bd, uint64_t off, void *buf, size_t len)
{
	struct overlay *o = sfs_bdev_priv(bd);
	uint8_t *p = buf;
	int rc;

	rc = sfs_bdev_read(o->base, SFS_IO_OTHER, off, buf, len);
	if (rc < 0)
		return rc;
	for (uint64_t s = off / OVL_SECT; s * OVL_SECT < off + len; s++) {
		const uint8_t *mine = g_hash_table_lookup(o->sect, &s);
		uint64_t from = MAX(off, s * OVL_SECT);
		uint64_t to = MIN(off + len, (s + 1) * OVL_SECT);

		if (mine)
			memcpy(p + (from - off), mine + (from - s * OVL_SECT),
			       to - from);
	}
	return 0;
}

static int ovl_write(struct sfs_bdev *bd, uint64_t off, const void *buf,
		     size_t len)
{
	struct overlay *o = sfs_bdev_priv(bd);
	const uint8_t *p = buf;

	for (uint64_t s = off / OVL_SECT; s * OVL_SECT < off + len; s++) {
		uint8_t *mine = g_hash_table_lookup(o->sect, &s);
		uint64_t from = MAX(off, s * OVL_SECT);
		uint64_t to = MIN(off + len, (s + 1) * OVL_SECT);

		if (!mine) {
			guint64 *key = g_try_new(guint64, 1);

			mine = g_try_malloc(OVL_SECT);
			if (!key || !mine) {
				g_free(key);
				g_free(mine);
				return -ENOMEM;
			}
			*key = s;
			/* a partial write keeps the rest of the sector */
			if (to - from < OVL_SECT) {
				int rc =
				    ovl_read(bd, s * OVL_SECT, mine, OVL_SECT);

				if (rc < 0) {
					g_free(key);
					g_free(mine);
					return rc;
				}
			}
			g_hash_table_insert(o->sect, key, mine);
		}
		memcpy(mine + (from - s * OVL_SECT), p + (from - off),
		       to - from);
	}
	return 0;
}

static int ovl_flush(struct sfs_bdev *bd)
{
	(void)bd;
	return 0;
}

static void ovl_close(struct sfs_bdev *bd)
{
	struct overlay *o = sfs_bdev_priv(bd);

	g_hash_table_destroy(o->sect);
	sfs_bdev_close(o->base);
	g_free(o);
}

static const struct sfs_bdev_ops ovl_ops = {
    .name = "overlay",
    .read = ovl_read,
    .write = ovl_write,
    .flush = ovl_flush,
    .close = ovl_close,
};

struct sfs_bdev *sfs_bdev_overlay_new(struct sfs_bdev *base)
{
	struct overlay *o = g_new0(struct overlay, 1);

	o->base = base;
	o->sect =
	    g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	return sfs_bdev_new(&ovl_ops, o, sfs_bdev_size_bytes(base));
}
