/*
 * dirhash.c - ext3/ext4 htree name hashes (dirhash.h): the legacy hash,
 * half MD4 and TEA, as Linux fs/ext4/hash.c and e2fsprogs
 * lib/ext2fs/dirhash.c define them, so that simfs finds names in the leaf
 * the kernel put them in.
 *
 * half_md4 and tea consume the name in chunks (32 and 16 bytes), each
 * packed into 32-bit words by pack_words: bytes shift in from the right,
 * and words past the name's end (or the unfilled tail of the last one)
 * hold a pad derived from the name's length.  A byte is sign-extended in
 * the signed variants (the kernel's plain char on x86), which is why a
 * superblock says which one its directories use.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "dirhash.h"

#define TEA_DELTA 0x9E3779B9u
#define MD4_K2 013240474631u /* sqrt(2) * 2^30, octal as in the kernel */
#define MD4_K3 015666365641u /* sqrt(3) * 2^30 */
#define HTREE_EOF_32 0x7fffffffu

static inline uint32_t rol32(uint32_t v, unsigned s)
{
	return (v << s) | (v >> (32 - s));
}

/* Pack up to 4 * num bytes of msg into num words (see the file head). */
static void pack_words(const unsigned char *msg, size_t len, bool is_signed,
		       uint32_t *buf, int num)
{
	uint32_t pad = (uint32_t)len | ((uint32_t)len << 8);
	uint32_t val;

	pad |= pad << 16;
	val = pad;
	if (len > (size_t)num * 4)
		len = (size_t)num * 4;
	for (size_t i = 0; i < len; i++) {
		int c = is_signed ? (int)(signed char)msg[i] : (int)msg[i];

		val = (uint32_t)c + (val << 8);
		if (i % 4 == 3) {
			*buf++ = val;
			val = pad;
			num--;
		}
	}
	if (--num >= 0)
		*buf++ = val;
	while (--num >= 0)
		*buf++ = pad;
}

static void tea_transform(uint32_t buf[4], const uint32_t in[4])
{
	uint32_t sum = 0, b0 = buf[0], b1 = buf[1];

	for (int n = 0; n < 16; n++) {
		sum += TEA_DELTA;
		b0 += ((b1 << 4) + in[0]) ^ (b1 + sum) ^ ((b1 >> 5) + in[1]);
		b1 += ((b0 << 4) + in[2]) ^ (b0 + sum) ^ ((b0 >> 5) + in[3]);
	}
	buf[0] += b0;
	buf[1] += b1;
}

#define MD4_F(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define MD4_G(x, y, z) (((x) & (y)) + (((x) ^ (y)) & (z)))
#define MD4_H(x, y, z) ((x) ^ (y) ^ (z))
#define MD4_STEP(f, a, b, c, d, x, s) ((a) = rol32((a) + f(b, c, d) + (x), s))

/* Three rounds of MD4 over 8 words (half of MD4's 16). */
static void half_md4_transform(uint32_t buf[4], const uint32_t in[8])
{
	uint32_t a = buf[0], b = buf[1], c = buf[2], d = buf[3];

	MD4_STEP(MD4_F, a, b, c, d, in[0], 3);
	MD4_STEP(MD4_F, d, a, b, c, in[1], 7);
	MD4_STEP(MD4_F, c, d, a, b, in[2], 11);
	MD4_STEP(MD4_F, b, c, d, a, in[3], 19);
	MD4_STEP(MD4_F, a, b, c, d, in[4], 3);
	MD4_STEP(MD4_F, d, a, b, c, in[5], 7);
	MD4_STEP(MD4_F, c, d, a, b, in[6], 11);
	MD4_STEP(MD4_F, b, c, d, a, in[7], 19);

	MD4_STEP(MD4_G, a, b, c, d, in[1] + MD4_K2, 3);
	MD4_STEP(MD4_G, d, a, b, c, in[3] + MD4_K2, 5);
	MD4_STEP(MD4_G, c, d, a, b, in[5] + MD4_K2, 9);
	MD4_STEP(MD4_G, b, c, d, a, in[7] + MD4_K2, 13);
	MD4_STEP(MD4_G, a, b, c, d, in[0] + MD4_K2, 3);
	MD4_STEP(MD4_G, d, a, b, c, in[2] + MD4_K2, 5);
	MD4_STEP(MD4_G, c, d, a, b, in[4] + MD4_K2, 9);
	MD4_STEP(MD4_G, b, c, d, a, in[6] + MD4_K2, 13);

	MD4_STEP(MD4_H, a, b, c, d, in[3] + MD4_K3, 3);
	MD4_STEP(MD4_H, d, a, b, c, in[7] + MD4_K3, 9);
	MD4_STEP(MD4_H, c, d, a, b, in[2] + MD4_K3, 11);
	MD4_STEP(MD4_H, b, c, d, a, in[6] + MD4_K3, 15);
	MD4_STEP(MD4_H, a, b, c, d, in[1] + MD4_K3, 3);
	MD4_STEP(MD4_H, d, a, b, c, in[5] + MD4_K3, 9);
	MD4_STEP(MD4_H, c, d, a, b, in[0] + MD4_K3, 11);
	MD4_STEP(MD4_H, b, c, d, a, in[4] + MD4_K3, 15);

	buf[0] += a;
	buf[1] += b;
	buf[2] += c;
	buf[3] += d;
}

/* The hash of the first htree code ("dx_hack_hash"). */
static uint32_t legacy_hash(const unsigned char *name, size_t len,
			    bool is_signed)
{
	uint32_t hash, hash0 = 0x12a3fe2d, hash1 = 0x37abe8f9;

	for (size_t i = 0; i < len; i++) {
		int c = is_signed ? (int)(signed char)name[i] : (int)name[i];

		hash = hash1 + (hash0 ^ (uint32_t)(c * 7152373));
		if (hash & 0x80000000u)
			hash -= 0x7fffffff;
		hash1 = hash0;
		hash0 = hash;
	}
	return hash0 << 1;
}

int sfs_dirhash(unsigned version, const uint32_t *seed, const char *name,
		size_t len, uint32_t *hash_out, uint32_t *minor_out)
{
	uint32_t buf[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
	const unsigned char *p = (const unsigned char *)name;
	bool is_signed = version < SFS_DX_HASH_UNSIGNED_DELTA;
	uint32_t in[8], hash, minor = 0;
	size_t left = len;

	if (seed && (seed[0] | seed[1] | seed[2] | seed[3]))
		memcpy(buf, seed, sizeof(buf));
	switch (version) {
	case SFS_DX_HASH_LEGACY:
	case SFS_DX_HASH_LEGACY_UNSIGNED:
		hash = legacy_hash(p, len, is_signed);
		break;
	case SFS_DX_HASH_HALF_MD4:
	case SFS_DX_HASH_HALF_MD4_UNSIGNED:
		for (; left > 0; left -= left < 32 ? left : 32, p += 32) {
			pack_words(p, left, is_signed, in, 8);
			half_md4_transform(buf, in);
		}
		hash = buf[1];
		minor = buf[2];
		break;
	case SFS_DX_HASH_TEA:
	case SFS_DX_HASH_TEA_UNSIGNED:
		for (; left > 0; left -= left < 16 ? left : 16, p += 16) {
			pack_words(p, left, is_signed, in, 4);
			tea_transform(buf, in);
		}
		hash = buf[0];
		minor = buf[1];
		break;
	default:
		return -EINVAL;
	}
	hash &= ~1u;
	if (hash == HTREE_EOF_32 << 1)
		hash = (HTREE_EOF_32 - 1) << 1;
	*hash_out = hash;
	if (minor_out)
		*minor_out = minor;
	return 0;
}
