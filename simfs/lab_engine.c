/*
 * lab_engine.c - in-memory devices for the engine-driven labs
 * (lab_engine.h).
 *
 * A keeping device holds its bytes in one zero-filled buffer; a sink holds
 * none: writes vanish and reads return zeros, which is all a timing or a
 * write-back scenario needs, at any modelled capacity.
 */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "lab_engine.h"

#define MEMDEV_MAX_KEEP (256ull << 20) /* the largest device kept */

struct memdev {
	uint8_t *data; /* size bytes, or NULL for a sink */
	uint64_t size;
};

static int mem_read(struct sfs_bdev *bd, uint64_t off, void *buf, size_t len)
{
	struct memdev *m = sfs_bdev_priv(bd);

	if (m->data)
		memcpy(buf, m->data + off, len);
	else
		memset(buf, 0, len);
	return 0;
}

static int mem_write(struct sfs_bdev *bd, uint64_t off, const void *buf,
		     size_t len)
{
	struct memdev *m = sfs_bdev_priv(bd);

	if (m->data)
		memcpy(m->data + off, buf, len);
	return 0;
}

static int mem_zero(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	struct memdev *m = sfs_bdev_priv(bd);

	if (m->data)
		memset(m->data + off, 0, len);
	return 0;
}

static void mem_close(struct sfs_bdev *bd)
{
	struct memdev *m = sfs_bdev_priv(bd);

	g_free(m->data);
	g_free(m);
}

static const struct sfs_bdev_ops mem_ops = {
    .name = "lab-mem",
    .read = mem_read,
    .write = mem_write,
    .close = mem_close,
    .zero = mem_zero,
};

struct sfs_bdev *sfs_lab_memdev_new(uint64_t size_bytes, bool keep)
{
	struct memdev *m;
	struct sfs_bdev *bd;

	if (size_bytes == 0 || (keep && size_bytes > MEMDEV_MAX_KEEP))
		return NULL;
	m = g_new0(struct memdev, 1);
	m->size = size_bytes;
	if (keep)
		m->data = g_malloc0(size_bytes);
	bd = sfs_bdev_new(&mem_ops, m, size_bytes);
	sfs_bdev_set_known_zero(bd, true);
	return bd;
}

GBytes *sfs_lab_memdev_snapshot(struct sfs_bdev *bd)
{
	struct memdev *m = sfs_bdev_priv(bd);

	return m->data ? g_bytes_new(m->data, m->size) : NULL;
}

int sfs_lab_memdev_restore(struct sfs_bdev *bd, GBytes *snap)
{
	struct memdev *m = sfs_bdev_priv(bd);
	gsize n;
	const void *p = snap ? g_bytes_get_data(snap, &n) : NULL;

	if (!m->data || !p || n != m->size)
		return -EINVAL;
	memcpy(m->data, p, n);
	sfs_bdev_set_known_zero(bd, false);
	return 0;
}

const char *sfs_lab_ms(char *buf, sfs_ns_t ns)
{
	/* round half up to 0.1 ms, in integers: the same text everywhere */
	uint64_t tenths = (ns + 50000) / 100000;

	g_snprintf(buf, 24, "%llu.%llu", (unsigned long long)(tenths / 10),
		   (unsigned long long)(tenths % 10));
	return buf;
}

const char *sfs_lab_ms2(char *buf, sfs_ns_t ns)
{
	uint64_t hundredths = (ns + 5000) / 10000;

	g_snprintf(buf, 24, "%llu.%02llu",
		   (unsigned long long)(hundredths / 100),
		   (unsigned long long)(hundredths % 100));
	return buf;
}
