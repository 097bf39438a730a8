/*
 * format.h - the on-disk format simfs reads and writes: real ext2/ext3/ext4,
 * the subset described in doc/internals.md ("On-disk format").
 *
 * One header for the engine, mkfs and inspect.  Every structure here is laid
 * out exactly as on disk: ext2/3/4 structures are little-endian, jbd2
 * structures big-endian.  Fields are raw on-disk words; read them through
 * sfs_le16/32/64 (and sfs_be32/64 for the journal), write them through
 * sfs_put_le* .  A static_assert pins each structure's size.
 *
 * Layout of an image with block size bs (1, 2 or 4 KiB), no flex_bg:
 *
 *   byte 1024: primary superblock (block 1 at 1 KiB, inside block 0 else)
 *   group g = [sb copy + GDT]  (groups 0, 1 and powers of 3, 5, 7 only)
 *             [block bitmap][inode bitmap][inode table][data ...]
 *
 * Group g starts at s_first_data_block + g * s_blocks_per_group.
 */
#ifndef SFS_FORMAT_H
#define SFS_FORMAT_H

#include <assert.h>
#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef uint32_t sfs_blk_t; /* filesystem block number (no 64bit feature) */
typedef uint32_t sfs_ino_t; /* ext2 inode number, 1-based */
typedef uint64_t sfs_ns_t;  /* nanoseconds */

/* ---- byte order helpers ---- */
static inline uint16_t sfs_le16(uint16_t v) { return le16toh(v); }
static inline uint32_t sfs_le32(uint32_t v) { return le32toh(v); }
static inline uint64_t sfs_le64(uint64_t v) { return le64toh(v); }
static inline uint16_t sfs_cpu_to_le16(uint16_t v) { return htole16(v); }
static inline uint32_t sfs_cpu_to_le32(uint32_t v) { return htole32(v); }
static inline uint64_t sfs_cpu_to_le64(uint64_t v) { return htole64(v); }
static inline uint16_t sfs_be16(uint16_t v) { return be16toh(v); }
static inline uint32_t sfs_be32(uint32_t v) { return be32toh(v); }
static inline uint64_t sfs_be64(uint64_t v) { return be64toh(v); }
static inline uint16_t sfs_cpu_to_be16(uint16_t v) { return htobe16(v); }
static inline uint32_t sfs_cpu_to_be32(uint32_t v) { return htobe32(v); }
static inline uint64_t sfs_cpu_to_be64(uint64_t v) { return htobe64(v); }

/* Little-endian fields at any byte offset of a block (no alignment). */
static inline uint16_t sfs_get_le16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return sfs_le16(v);
}

static inline uint32_t sfs_get_le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return sfs_le32(v);
}

static inline void sfs_put_le16(uint8_t *p, uint16_t v)
{
	v = sfs_cpu_to_le16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void sfs_put_le32(uint8_t *p, uint32_t v)
{
	v = sfs_cpu_to_le32(v);
	memcpy(p, &v, sizeof(v));
}

/* ---- constants ---- */
#define SFS_SUPER_MAGIC 0xEF53
#define SFS_SUPER_OFFSET 1024 /* bytes from the start of the device */
#define SFS_SUPER_SIZE 1024
#define SFS_MIN_BLOCK_LOG 0 /* 1 KiB */
#define SFS_MAX_BLOCK_LOG 2 /* 4 KiB */
#define SFS_ROOT_INO 2
#define SFS_RESIZE_INO 7
#define SFS_JOURNAL_INO 8
#define SFS_FIRST_INO 11 /* lost+found */
#define SFS_NAME_MAX 255
#define SFS_NDIR_BLOCKS 12
#define SFS_IND_BLOCK 12
#define SFS_DIND_BLOCK 13
#define SFS_TIND_BLOCK 14
#define SFS_N_BLOCKS 15
#define SFS_FAST_SYMLINK_MAX 59 /* targets up to this length live in i_block */
#define SFS_LINK_MAX 32000      /* below e2fsprogs' 65000 and ext2's 32000 */
#define SFS_GOOD_OLD_INODE_SIZE 128
#define SFS_EXTRA_ISIZE 32

/* s_state */
#define SFS_STATE_VALID 0x0001
#define SFS_STATE_ERROR 0x0002

/* feature bits */
#define SFS_FEATURE_COMPAT_DIR_PREALLOC 0x0001
#define SFS_FEATURE_COMPAT_IMAGIC_INODES 0x0002
#define SFS_FEATURE_COMPAT_HAS_JOURNAL 0x0004
#define SFS_FEATURE_COMPAT_EXT_ATTR 0x0008
#define SFS_FEATURE_COMPAT_RESIZE_INODE 0x0010
#define SFS_FEATURE_COMPAT_DIR_INDEX 0x0020
#define SFS_FEATURE_INCOMPAT_COMPRESSION 0x0001
#define SFS_FEATURE_INCOMPAT_FILETYPE 0x0002
#define SFS_FEATURE_INCOMPAT_RECOVER 0x0004
#define SFS_FEATURE_INCOMPAT_JOURNAL_DEV 0x0008
#define SFS_FEATURE_INCOMPAT_META_BG 0x0010
#define SFS_FEATURE_INCOMPAT_EXTENTS 0x0040
#define SFS_FEATURE_INCOMPAT_64BIT 0x0080
#define SFS_FEATURE_INCOMPAT_MMP 0x0100
#define SFS_FEATURE_INCOMPAT_FLEX_BG 0x0200
#define SFS_FEATURE_INCOMPAT_CSUM_SEED 0x2000
#define SFS_FEATURE_RO_COMPAT_SPARSE_SUPER 0x0001
#define SFS_FEATURE_RO_COMPAT_LARGE_FILE 0x0002
#define SFS_FEATURE_RO_COMPAT_HUGE_FILE 0x0008
#define SFS_FEATURE_RO_COMPAT_GDT_CSUM 0x0010
#define SFS_FEATURE_RO_COMPAT_DIR_NLINK 0x0020
#define SFS_FEATURE_RO_COMPAT_EXTRA_ISIZE 0x0040
#define SFS_FEATURE_RO_COMPAT_METADATA_CSUM 0x0400

/* What simfs understands.  Anything else is refused, naming the feature. */
#define SFS_COMPAT_SUPP                                                        \
	(SFS_FEATURE_COMPAT_EXT_ATTR | SFS_FEATURE_COMPAT_HAS_JOURNAL |        \
	 SFS_FEATURE_COMPAT_RESIZE_INODE | SFS_FEATURE_COMPAT_DIR_PREALLOC |   \
	 SFS_FEATURE_COMPAT_DIR_INDEX)
#define SFS_INCOMPAT_SUPP                                                      \
	(SFS_FEATURE_INCOMPAT_FILETYPE | SFS_FEATURE_INCOMPAT_RECOVER |        \
	 SFS_FEATURE_INCOMPAT_EXTENTS | SFS_FEATURE_INCOMPAT_CSUM_SEED)
#define SFS_RO_COMPAT_SUPP                                                     \
	(SFS_FEATURE_RO_COMPAT_SPARSE_SUPER | SFS_FEATURE_RO_COMPAT_LARGE_FILE |  \
	 SFS_FEATURE_RO_COMPAT_HUGE_FILE | SFS_FEATURE_RO_COMPAT_DIR_NLINK |      \
	 SFS_FEATURE_RO_COMPAT_EXTRA_ISIZE | SFS_FEATURE_RO_COMPAT_METADATA_CSUM)

/* i_mode type bits (same values as S_IF*) */
#define SFS_S_IFMT 0xF000
#define SFS_S_IFSOCK 0xC000
#define SFS_S_IFLNK 0xA000
#define SFS_S_IFREG 0x8000
#define SFS_S_IFBLK 0x6000
#define SFS_S_IFDIR 0x4000
#define SFS_S_IFCHR 0x2000
#define SFS_S_IFIFO 0x1000

/* i_flags */
#define SFS_SYNC_FL 0x00000008
#define SFS_IMMUTABLE_FL 0x00000010
#define SFS_APPEND_FL 0x00000020
#define SFS_NOATIME_FL 0x00000080
#define SFS_JOURNAL_DATA_FL 0x00004000
#define SFS_DIRSYNC_FL 0x00010000
#define SFS_CASEFOLD_FL 0x40000000
/* What FS_IOC_GETFLAGS shows and what SETFLAGS may change (ext4's
 * EXT4_FL_USER_VISIBLE and EXT4_FL_USER_MODIFIABLE, fs/ext4/ext4.h). */
#define SFS_FL_USER_VISIBLE 0x705BDFFF
#define SFS_FL_USER_MODIFIABLE 0x604BC0FF
#define SFS_INDEX_FL 0x00001000 /* directory has an htree index (dx_root) */
#define SFS_EXTENTS_FL 0x00080000
#define SFS_HUGE_FILE_FL 0x00040000 /* huge_file: i_blocks in fs blocks */
#define SFS_INLINE_DATA_FL 0x10000000

/* directory entry file_type */
enum sfs_ftype {
	SFS_FT_UNKNOWN = 0,
	SFS_FT_REG = 1,
	SFS_FT_DIR = 2,
	SFS_FT_CHRDEV = 3,
	SFS_FT_BLKDEV = 4,
	SFS_FT_FIFO = 5,
	SFS_FT_SOCK = 6,
	SFS_FT_SYMLINK = 7,
};

/* ---- superblock (1024 bytes at byte 1024) ---- */
struct sfs_dsuper {
	uint32_t s_inodes_count;      /* 0x00 */
	uint32_t s_blocks_count;      /* 0x04 */
	uint32_t s_r_blocks_count;    /* 0x08 */
	uint32_t s_free_blocks_count; /* 0x0C */
	uint32_t s_free_inodes_count; /* 0x10 */
	uint32_t s_first_data_block;  /* 0x14 */
	uint32_t s_log_block_size;    /* 0x18 */
	uint32_t s_log_cluster_size;  /* 0x1C */
	uint32_t s_blocks_per_group;  /* 0x20 */
	uint32_t s_clusters_per_group; /* 0x24 */
	uint32_t s_inodes_per_group;  /* 0x28 */
	uint32_t s_mtime;             /* 0x2C */
	uint32_t s_wtime;             /* 0x30 */
	uint16_t s_mnt_count;         /* 0x34 */
	uint16_t s_max_mnt_count;     /* 0x36 */
	uint16_t s_magic;             /* 0x38 */
	uint16_t s_state;             /* 0x3A */
	uint16_t s_errors;            /* 0x3C */
	uint16_t s_minor_rev_level;   /* 0x3E */
	uint32_t s_lastcheck;         /* 0x40 */
	uint32_t s_checkinterval;     /* 0x44 */
	uint32_t s_creator_os;        /* 0x48 */
	uint32_t s_rev_level;         /* 0x4C */
	uint16_t s_def_resuid;        /* 0x50 */
	uint16_t s_def_resgid;        /* 0x52 */
	uint32_t s_first_ino;         /* 0x54 */
	uint16_t s_inode_size;        /* 0x58 */
	uint16_t s_block_group_nr;    /* 0x5A */
	uint32_t s_feature_compat;    /* 0x5C */
	uint32_t s_feature_incompat;  /* 0x60 */
	uint32_t s_feature_ro_compat; /* 0x64 */
	uint8_t s_uuid[16];           /* 0x68 */
	char s_volume_name[16];       /* 0x78 */
	char s_last_mounted[64];      /* 0x88 */
	uint32_t s_algorithm_usage_bitmap; /* 0xC8 */
	uint8_t s_prealloc_blocks;    /* 0xCC */
	uint8_t s_prealloc_dir_blocks; /* 0xCD */
	uint16_t s_reserved_gdt_blocks; /* 0xCE */
	uint8_t s_journal_uuid[16];   /* 0xD0 */
	uint32_t s_journal_inum;      /* 0xE0 */
	uint32_t s_journal_dev;       /* 0xE4 */
	uint32_t s_last_orphan;       /* 0xE8 */
	uint32_t s_hash_seed[4];      /* 0xEC */
	uint8_t s_def_hash_version;   /* 0xFC */
	uint8_t s_jnl_backup_type;    /* 0xFD */
	uint16_t s_desc_size;         /* 0xFE */
	uint32_t s_default_mount_opts; /* 0x100 */
	uint32_t s_first_meta_bg;     /* 0x104 */
	uint32_t s_mkfs_time;         /* 0x108 */
	uint32_t s_jnl_blocks[17];    /* 0x10C */
	uint32_t s_blocks_count_hi;   /* 0x150 */
	uint32_t s_r_blocks_count_hi; /* 0x154 */
	uint32_t s_free_blocks_hi;    /* 0x158 */
	uint16_t s_min_extra_isize;   /* 0x15C */
	uint16_t s_want_extra_isize;  /* 0x15E */
	uint32_t s_flags;             /* 0x160 */
	uint8_t s_pad1[0x178 - 0x164];
	uint64_t s_kbytes_written;    /* 0x178 */
	uint8_t s_pad2[0x248 - 0x180];
	uint32_t s_overhead_clusters; /* 0x248 */
	uint8_t s_pad3[0x400 - 0x24C];
};
static_assert(sizeof(struct sfs_dsuper) == 1024, "superblock size");

/* A superblock that says its filesystem was cleanly unmounted: VALID
 * without ERROR, and no journal recovery pending. */
static inline bool sfs_sb_marked_clean(const struct sfs_dsuper *sb)
{
	return (sfs_le16(sb->s_state) & (SFS_STATE_VALID | SFS_STATE_ERROR)) ==
		   SFS_STATE_VALID &&
	       !(sfs_le32(sb->s_feature_incompat) &
		 SFS_FEATURE_INCOMPAT_RECOVER);
}

/* metadata_csum fields of the superblock, by offset (crc32c, doc:
 * internals "Metadata checksums"): s_checksum_type (1 = crc32c),
 * s_checksum_seed (metadata_csum_seed) and s_checksum over bytes 0..0x3FC. */
#define SFS_SB_CSUM_TYPE_OFF 0x175
#define SFS_SB_CSUM_SEED_OFF 0x270
#define SFS_SB_CSUM_OFF 0x3FC
#define SFS_CSUM_TYPE_CRC32C 1
/* the 12-byte entry ending a checksummed directory leaf (file_type 0xDE) */
#define SFS_DIRENT_TAIL_LEN 12
#define SFS_DIRENT_TAIL_FT 0xDE

/* ---- group descriptor (32 bytes, no 64bit) ---- */
struct sfs_dgroup {
	uint32_t bg_block_bitmap;       /* 0x00 absolute block */
	uint32_t bg_inode_bitmap;       /* 0x04 */
	uint32_t bg_inode_table;        /* 0x08 first block */
	uint16_t bg_free_blocks_count;  /* 0x0C */
	uint16_t bg_free_inodes_count;  /* 0x0E */
	uint16_t bg_used_dirs_count;    /* 0x10 */
	uint16_t bg_flags;              /* 0x12 SFS_BG_* */
	uint32_t bg_exclude_bitmap_lo;  /* 0x14 */
	uint16_t bg_block_bitmap_csum;  /* 0x18 */
	uint16_t bg_inode_bitmap_csum;  /* 0x1A */
	uint16_t bg_itable_unused;      /* 0x1C never-used inode slots */
	uint16_t bg_checksum;           /* 0x1E */
};
static_assert(sizeof(struct sfs_dgroup) == 32, "group descriptor size");

/* bg_flags, meant only under group descriptor checksums (uninit_bg or
 * metadata_csum; ext4_has_group_desc_csum) */
#define SFS_BG_INODE_UNINIT 0x1 /* inode bitmap not initialised */
#define SFS_BG_BLOCK_UNINIT 0x2 /* block bitmap not initialised */
#define SFS_BG_INODE_ZEROED 0x4 /* inode table zeroed */

/* The second half of a 64-byte descriptor (64bit feature, s_desc_size >=
 * 64): the high 32 bits of the locations, the high 16 of the counts. */
struct sfs_dgroup_hi {
	uint32_t bg_block_bitmap_hi;      /* 0x20 */
	uint32_t bg_inode_bitmap_hi;      /* 0x24 */
	uint32_t bg_inode_table_hi;       /* 0x28 */
	uint16_t bg_free_blocks_count_hi; /* 0x2C */
	uint16_t bg_free_inodes_count_hi; /* 0x2E */
	uint16_t bg_used_dirs_count_hi;   /* 0x30 */
	uint16_t bg_itable_unused_hi;     /* 0x32 */
	uint32_t bg_exclude_bitmap_hi;    /* 0x34 */
	uint16_t bg_block_bitmap_csum_hi; /* 0x38 */
	uint16_t bg_inode_bitmap_csum_hi; /* 0x3A */
	uint32_t bg_reserved;             /* 0x3C */
};
static_assert(sizeof(struct sfs_dgroup_hi) == 32, "descriptor high half");

#define SFS_DESC_SIZE 32        /* without 64bit */
#define SFS_DESC_SIZE_64BIT 64  /* least s_desc_size with 64bit */
#define SFS_DESC_SIZE_MAX 1024

/* Bytes per group descriptor: s_desc_size with 64bit, else 32 (the
 * kernel ignores s_desc_size then).  Unchecked: see check_geometry. */
static inline uint32_t sfs_sb_desc_size(const struct sfs_dsuper *sb)
{
	if (sfs_le32(sb->s_feature_incompat) & SFS_FEATURE_INCOMPAT_64BIT)
		return sfs_le16(sb->s_desc_size);
	return SFS_DESC_SIZE;
}

/* ---- inode (128-byte base + 256-byte extension) ---- */
struct sfs_dinode {
	uint16_t i_mode;        /* 0x00 */
	uint16_t i_uid;         /* 0x02 low 16 bits */
	uint32_t i_size;        /* 0x04 bytes, low 32 bits */
	uint32_t i_atime;       /* 0x08 seconds */
	uint32_t i_ctime;       /* 0x0C */
	uint32_t i_mtime;       /* 0x10 */
	uint32_t i_dtime;       /* 0x14 */
	uint16_t i_gid;         /* 0x18 low 16 bits */
	uint16_t i_links_count; /* 0x1A */
	uint32_t i_blocks;      /* 0x1C 512-byte sectors */
	uint32_t i_flags;       /* 0x20 */
	uint32_t i_version;     /* 0x24 osd1 */
	uint32_t i_block[SFS_N_BLOCKS]; /* 0x28 */
	uint32_t i_generation;  /* 0x64 */
	uint32_t i_file_acl;    /* 0x68 xattr block */
	uint32_t i_size_high;   /* 0x6C */
	uint32_t i_faddr;       /* 0x70 */
	uint16_t i_blocks_hi;   /* 0x74 */
	uint16_t i_file_acl_high; /* 0x76 */
	uint16_t i_uid_high;    /* 0x78 */
	uint16_t i_gid_high;    /* 0x7A */
	uint16_t i_checksum_lo; /* 0x7C */
	uint16_t i_reserved;    /* 0x7E */
	/* 256-byte inodes only: */
	uint16_t i_extra_isize; /* 0x80 */
	uint16_t i_checksum_hi; /* 0x82 */
	uint32_t i_ctime_extra; /* 0x84 (nsec << 2) | epoch */
	uint32_t i_mtime_extra; /* 0x88 */
	uint32_t i_atime_extra; /* 0x8C */
	uint32_t i_crtime;      /* 0x90 */
	uint32_t i_crtime_extra; /* 0x94 */
	uint32_t i_version_hi;  /* 0x98 */
	uint32_t i_projid;      /* 0x9C */
	uint8_t i_extra[256 - 0xA0]; /* 0xA0 in-inode xattrs (read, kept) */
};
static_assert(sizeof(struct sfs_dinode) == 256, "inode size");

/* ---- directory entry (filetype feature) ---- */
struct sfs_ddirent {
	uint32_t inode;   /* 0 = unused */
	uint16_t rec_len; /* bytes to the next entry */
	uint8_t name_len;
	uint8_t file_type; /* enum sfs_ftype */
	char name[];      /* not NUL-terminated */
};
static_assert(sizeof(struct sfs_ddirent) == 8, "dirent header size");
#define SFS_DIRENT_HDR 8
/* smallest record that holds a name of length n */
#define SFS_DIRENT_LEN(n) ((SFS_DIRENT_HDR + (n) + 3) & ~3u)

/* ---- extended attributes in a block ---- */
#define SFS_XATTR_MAGIC 0xEA020000
#define SFS_XATTR_INDEX_USER 1
#define SFS_XATTR_INDEX_ACL_ACCESS 2  /* system.posix_acl_access, name "" */
#define SFS_XATTR_INDEX_ACL_DEFAULT 3 /* system.posix_acl_default, name "" */

/* A POSIX ACL as ext4 stores it as the value of those entries
 * (fs/ext4/acl.h): a header, then entries in the order of the ACL; the
 * named ones (SFS_ACL_USER, SFS_ACL_GROUP) carry an id, the others are
 * short.  The VFS's xattr format (version 2, every entry 8 bytes with
 * id, ids of the unnamed ones -1) is what getxattr/setxattr see (acl.c). */
#define SFS_ACL_DISK_VERSION 1
#define SFS_ACL_XATTR_VERSION 2
#define SFS_ACL_USER_OBJ 0x01
#define SFS_ACL_USER 0x02
#define SFS_ACL_GROUP_OBJ 0x04
#define SFS_ACL_GROUP 0x08
#define SFS_ACL_MASK 0x10
#define SFS_ACL_OTHER 0x20
#define SFS_ACL_UNDEFINED_ID 0xFFFFFFFFu
struct sfs_dacl_header {
	uint32_t a_version; /* SFS_ACL_DISK_VERSION or _XATTR_VERSION */
};
struct sfs_dacl_entry_short {
	uint16_t e_tag;	 /* SFS_ACL_* */
	uint16_t e_perm; /* rwx = 4|2|1 */
};
struct sfs_dacl_entry {
	uint16_t e_tag;
	uint16_t e_perm;
	uint32_t e_id; /* uid or gid */
};
static_assert(sizeof(struct sfs_dacl_header) == 4, "acl header size");
static_assert(sizeof(struct sfs_dacl_entry_short) == 4, "acl entry size");
static_assert(sizeof(struct sfs_dacl_entry) == 8, "acl entry size");
struct sfs_dxattr_header {
	uint32_t h_magic;    /* SFS_XATTR_MAGIC */
	uint32_t h_refcount; /* inodes pointing here */
	uint32_t h_blocks;   /* always 1 */
	uint32_t h_hash;
	uint32_t h_checksum;
	uint32_t h_reserved[3];
};
static_assert(sizeof(struct sfs_dxattr_header) == 32, "xattr header size");
struct sfs_dxattr_entry {
	uint8_t e_name_len;
	uint8_t e_name_index; /* 1 = user. */
	uint16_t e_value_offs; /* from the block start (from the first entry in-inode) */
	uint32_t e_value_inum;
	uint32_t e_value_size;
	uint32_t e_hash;
	char e_name[];
};
static_assert(sizeof(struct sfs_dxattr_entry) == 16, "xattr entry size");
#define SFS_XATTR_ENTRY_LEN(n) ((16 + (n) + 3) & ~3u)
#define SFS_XATTR_PAD(n) (((n) + 3) & ~3u)

/* ---- extent tree (ext4 images) ---- */
#define SFS_EXT_MAGIC 0xF30A
#define SFS_EXT_INIT_MAX_LEN 32768
#define SFS_EXT_UNWRITTEN_MAX_LEN 32767
struct sfs_dextent_header {
	uint16_t eh_magic;
	uint16_t eh_entries;
	uint16_t eh_max;
	uint16_t eh_depth;
	uint32_t eh_generation;
};
struct sfs_dextent {
	uint32_t ee_block;
	uint16_t ee_len; /* > 32768: unwritten */
	uint16_t ee_start_hi;
	uint32_t ee_start_lo;
};
struct sfs_dextent_idx {
	uint32_t ei_block;
	uint32_t ei_leaf_lo;
	uint16_t ei_leaf_hi;
	uint16_t ei_unused;
};
static_assert(sizeof(struct sfs_dextent_header) == 12, "extent header");
static_assert(sizeof(struct sfs_dextent) == 12, "extent");
static_assert(sizeof(struct sfs_dextent_idx) == 12, "extent index");

/* ---- jbd2 journal (big-endian) ---- */
#define SFS_JBD2_MAGIC 0xC03B3998U
enum sfs_jbd2_blocktype {
	SFS_JBD2_DESCRIPTOR = 1,
	SFS_JBD2_COMMIT = 2,
	SFS_JBD2_SUPER_V1 = 3,
	SFS_JBD2_SUPER_V2 = 4,
	SFS_JBD2_REVOKE = 5,
};
#define SFS_JBD2_FLAG_ESCAPE 0x1
#define SFS_JBD2_FLAG_SAME_UUID 0x2
#define SFS_JBD2_FLAG_DELETED 0x4
#define SFS_JBD2_FLAG_LAST_TAG 0x8
#define SFS_JBD2_INCOMPAT_REVOKE 0x1
#define SFS_JBD2_MIN_BLOCKS 1024
struct sfs_jbd2_header {
	uint32_t h_magic;
	uint32_t h_blocktype;
	uint32_t h_sequence;
};
struct sfs_jbd2_super {
	struct sfs_jbd2_header s_header;
	uint32_t s_blocksize;  /* 0x0C */
	uint32_t s_maxlen;     /* 0x10 */
	uint32_t s_first;      /* 0x14 */
	uint32_t s_sequence;   /* 0x18 */
	uint32_t s_start;      /* 0x1C 0 = clean */
	uint32_t s_errno;      /* 0x20 */
	uint32_t s_feature_compat;   /* 0x24 */
	uint32_t s_feature_incompat; /* 0x28 */
	uint32_t s_feature_ro_compat; /* 0x2C */
	uint8_t s_uuid[16];    /* 0x30 */
	uint32_t s_nr_users;   /* 0x40 */
	uint8_t s_pad[0x100 - 0x44];
	uint8_t s_users[16 * 48]; /* 0x100 */
};
static_assert(sizeof(struct sfs_jbd2_super) == 1024, "journal superblock");
struct sfs_jbd2_tag {
	uint32_t t_blocknr;
	uint16_t t_checksum;
	uint16_t t_flags;
};
static_assert(sizeof(struct sfs_jbd2_tag) == 8, "journal tag");
struct sfs_jbd2_revoke_header {
	struct sfs_jbd2_header r_header;
	uint32_t r_count; /* bytes used, including this header */
};
struct sfs_jbd2_commit {
	struct sfs_jbd2_header c_header;
	uint8_t h_chksum_type;
	uint8_t h_chksum_size;
	uint8_t h_padding[2];
	uint32_t h_chksum[8];
	uint64_t h_commit_sec;
	uint32_t h_commit_nsec;
};

/* ---- helpers shared by mkfs, engine and inspect ---- */

/* Does group g hold a superblock + GDT backup (sparse_super)? */
static inline int sfs_group_has_super(uint32_t g, int sparse)
{
	if (!sparse || g <= 1)
		return 1;
	for (uint32_t p = 3; p <= 7; p += 2) {
		uint64_t x = p;
		while (x < g)
			x *= p;
		if (x == g)
			return 1;
	}
	return 0;
}

/* Mode type bits -> directory entry file type. */
static inline uint8_t sfs_mode_to_ftype(uint32_t mode)
{
	switch (mode & SFS_S_IFMT) {
	case SFS_S_IFREG: return SFS_FT_REG;
	case SFS_S_IFDIR: return SFS_FT_DIR;
	case SFS_S_IFCHR: return SFS_FT_CHRDEV;
	case SFS_S_IFBLK: return SFS_FT_BLKDEV;
	case SFS_S_IFIFO: return SFS_FT_FIFO;
	case SFS_S_IFSOCK: return SFS_FT_SOCK;
	case SFS_S_IFLNK: return SFS_FT_SYMLINK;
	default: return SFS_FT_UNKNOWN;
	}
}

/* Entry hash of an ext2 block xattr (doc: ext-format 6.4). */
static inline uint32_t sfs_xattr_entry_hash(const char *name, uint8_t name_len,
					    const void *value, uint32_t size)
{
	uint32_t h = 0;
	for (uint8_t i = 0; i < name_len; i++)
		h = (h << 5) ^ (h >> 27) ^ (uint8_t)name[i];
	if (size) {
		const uint8_t *v = value;
		for (uint32_t off = 0; off < size; off += 4) {
			uint32_t w = 0;
			for (uint32_t k = 0; k < 4 && off + k < size; k++)
				w |= (uint32_t)v[off + k] << (8 * k);
			h = (h << 16) ^ (h >> 16) ^ w;
		}
	}
	return h;
}

#endif /* SFS_FORMAT_H */
