/*
 * crash_data.c - data blocks that name themselves (crash_priv.h).
 *
 * A block written by a workload carries its file id, block index and
 * version in every 512-byte sector, so the checker can tell what any
 * block read back holds (crash_cb_fill, crash_cb_classify).
 */
#include <string.h>

#include <glib.h>
#include <xxhash.h>

#include "crash_priv.h"

/*
 * A data block of file `id`, block index `idx`, version `ver`: every
 * 512-byte sector starts with a 16-byte tag (magic, id, idx, ver); sector
 * 0's magic differs and its bytes 16..31 hold the xxh64 of bytes 32..bs-1
 * and bs.  Everything else is a pseudo-random stream of (id, idx, ver),
 * so a sector can be checked on its own (a torn write mixes sectors).
 */
#define CB_MAGIC0 0x30424653u /* "SFB0" */
#define CB_MAGICS 0x53424653u /* "SFBS" */
#define CB_HDR 32u

static void put64(uint8_t *p, uint64_t v)
{
	sfs_put_le32(p, (uint32_t)v);
	sfs_put_le32(p + 4, (uint32_t)(v >> 32));
}

static uint64_t get64(const uint8_t *p)
{
	return sfs_get_le32(p) | (uint64_t)sfs_get_le32(p + 4) << 32;
}

uint64_t crash_cb_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

void crash_cb_fill(uint8_t *b, uint32_t bs, uint32_t id, uint32_t idx,
		   uint32_t ver)
{
	uint64_t s = crash_cb_mix(((uint64_t)id << 32 | idx) ^
				  crash_cb_mix((uint64_t)ver + 0x5eedULL));

	for (uint32_t w = 0; w < bs / 8; w++)
		put64(b + 8 * w, crash_cb_mix(s + w));
	for (uint32_t sec = 0; sec < bs / SFS_CRASH_SECTOR; sec++) {
		uint8_t *t = b + sec * SFS_CRASH_SECTOR;

		sfs_put_le32(t, sec ? CB_MAGICS : CB_MAGIC0);
		sfs_put_le32(t + 4, id);
		sfs_put_le32(t + 8, idx);
		sfs_put_le32(t + 12, ver);
	}
	sfs_put_le32(b + 24, bs);
	sfs_put_le32(b + 28, 0);
	put64(b + 16, XXH64(b + CB_HDR, bs - CB_HDR, 0));
}

bool crash_all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

void crash_cb_classify(struct cb_gen *g, const uint8_t *b, uint32_t bs,
		       struct bsum *out)
{
	uint32_t ns = bs / SFS_CRASH_SECTOR;

	out->nsect = (uint8_t)ns;
	if (sfs_get_le32(b) == CB_MAGIC0 && sfs_get_le32(b + 24) == bs &&
	    get64(b + 16) == XXH64(b + CB_HDR, bs - CB_HDR, 0)) {
		for (uint32_t s = 0; s < ns; s++)
			out->s[s] = (struct stag){SK_DATA, sfs_get_le32(b + 4),
						  sfs_get_le32(b + 8),
						  sfs_get_le32(b + 12)};
		return;
	}
	for (uint32_t s = 0; s < ns; s++) {
		const uint8_t *t = b + s * SFS_CRASH_SECTOR;
		struct stag *st = &out->s[s];

		st->kind = SK_GARBAGE;
		st->id = st->idx = st->ver = 0;
		if (crash_all_zero(t, SFS_CRASH_SECTOR)) {
			st->kind = SK_ZERO;
			continue;
		}
		if (sfs_get_le32(t) != (s ? CB_MAGICS : CB_MAGIC0))
			continue;
		st->id = sfs_get_le32(t + 4);
		st->idx = sfs_get_le32(t + 8);
		st->ver = sfs_get_le32(t + 12);
		if (!g->valid || g->bs != bs || g->id != st->id ||
		    g->idx != st->idx || g->ver != st->ver) {
			crash_cb_fill(g->buf, bs, st->id, st->idx, st->ver);
			g->bs = bs;
			g->id = st->id;
			g->idx = st->idx;
			g->ver = st->ver;
			g->valid = true;
		}
		if (memcmp(t, g->buf + s * SFS_CRASH_SECTOR,
			   SFS_CRASH_SECTOR) == 0)
			st->kind = SK_DATA;
	}
}
