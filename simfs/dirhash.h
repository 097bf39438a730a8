/*
 * dirhash.h - the name hashes of ext3/ext4 htree directories (dir_index).
 *
 * sfs_dirhash(version, seed, name, len, &hash, &minor) computes what the
 * kernel's ext4fs_dirhash (fs/ext4/hash.c) and e2fsprogs' ext2fs_dirhash
 * compute: the legacy hash, half_md4 or tea, each over the name's bytes
 * read as signed or unsigned chars.  The version is the dx_root's
 * hash_version plus SFS_DX_HASH_UNSIGNED_DELTA when the superblock says
 * unsigned (s_flags & SFS_FLAGS_UNSIGNED_HASH); the seed is s_hash_seed as
 * four host-order words (all zero: the MD4 initial values).  Pure
 * functions: no state, any thread.
 *
 * dir.c hashes with them to walk and maintain htree indexes
 * (doc/internals.md, "Hashed directories").
 */
#ifndef SFS_DIRHASH_H
#define SFS_DIRHASH_H

#include <stddef.h>
#include <stdint.h>

/* dx_root hash_version values (and s_def_hash_version) */
enum sfs_dx_hash {
	SFS_DX_HASH_LEGACY = 0,
	SFS_DX_HASH_HALF_MD4 = 1,
	SFS_DX_HASH_TEA = 2,
	SFS_DX_HASH_LEGACY_UNSIGNED = 3,
	SFS_DX_HASH_HALF_MD4_UNSIGNED = 4,
	SFS_DX_HASH_TEA_UNSIGNED = 5,
};
#define SFS_DX_HASH_UNSIGNED_DELTA 3

/* superblock s_flags */
#define SFS_FLAGS_SIGNED_HASH 0x0001
#define SFS_FLAGS_UNSIGNED_HASH 0x0002

/*
 * Hash name (len bytes) with hash version `version` and seed (4 words,
 * NULL or all zero for none).  *hash_out gets the major hash (low bit
 * clear, never the end-of-directory value 0xfffffffe), *minor_out the
 * minor one (0 for the legacy hash); minor_out may be NULL.  0, or
 * -EINVAL for an unknown version.
 */
int sfs_dirhash(unsigned version, const uint32_t *seed, const char *name,
		size_t len, uint32_t *hash_out, uint32_t *minor_out);

#endif /* SFS_DIRHASH_H */
