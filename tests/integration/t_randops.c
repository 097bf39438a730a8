/*
 * t_randops.c - the same seeded sequence of >= 10,000 random operations
 * applied to a directory on the simfs mount (A) and to a reference
 * directory on the host (B); every step must give the same result (success
 * or the same errno) on both sides.
 *
 * Operations: create (with and without O_EXCL), write at random offsets
 * (some far out, making sparse files), truncate, read (bytes compared),
 * rename of files and directories (over existing files and directories,
 * into themselves, RENAME_NOREPLACE / RENAME_EXCHANGE too), unlink, link,
 * mkdir, rmdir, symlink (dangling targets of 1..300 bytes, fast and slow),
 * chmod, lstat (type, mode, size, link count compared), and, where new
 * files are extent-mapped (alloc=extent/mballoc/delalloc), fallocate with
 * and without KEEP_SIZE.  With FALLOC "all" the fallocate calls also
 * punch holes and zero ranges (with and without KEEP_SIZE), the modes the
 * FUSE module passes on and the reference filesystem supports (probed);
 * on block maps they only punch.  The mode comes from the op's content
 * seed, not a new draw, so a seed's sequence of operations is the same
 * with and without it.  A quarter of the reads and writes of regular
 * files open the simfs side with O_DIRECT (the host side stays buffered:
 * its answer is what O_DIRECT must not change); those are on the 512-byte
 * grid, except one direct write in eight, which is not and must get
 * EINVAL as on ext4 (or, on a block-mapped file where it meets a hole
 * below EOF first, succeed: ext4 writes it buffered, dio_buffered).  With
 * MORE "seek,acl" two more kinds join (in configurations of their own, so
 * the others draw as before): lseek (SEEK_SET/CUR/END compared as they
 * are; SEEK_DATA and SEEK_HOLE judged by the reference's bytes and holes,
 * as seek_verdict explains, since the two sides answer at different
 * granularities), and POSIX ACLs set, read and removed through
 * system.posix_acl_access/default (valid ACLs and some the VFS refuses;
 * the mode after a set, the bytes of a get, inheritance by the creates and
 * mkdirs in the mix, chmod rewriting them).  Names come from a
 * small pool (collisions are the point) that includes a 255-byte name;
 * directories are picked by a random walk over B's real directories
 * (sorted, so the sequence depends only on the seed).
 *
 * Half-way and at the end: the trees are compared (names, types, sizes,
 * modes, link counts, symlink targets, contents by hash); umount, e2fsck
 * -fn clean, remount, compare again.  The seed is printed; rerun with
 *   t_randops SIMFS_BINARY SEED [NOPS [BLOCKSIZE [MOUNT_OPTS [WORKERS
 *             [FALLOC [IMAGE [MORE]]]]]]]
 * (defaults: 10000 ops, 4096-byte blocks, default mount options, one
 * worker).  With WORKERS > 1, that many processes run NOPS operations
 * each at once, worker i in its own subdirectory with its own seed, so
 * every result is still exact while the engine serves them together (no
 * half-way remount then); a worker still running two minutes after the
 * others ended fails the test as a deadlock.  A preset= in MOUNT_OPTS
 * also makes the image with `simfs mkfs --preset`, and dir_index with
 * `simfs mkfs -O dir_index`.  FALLOC "all" (or empty) puts every
 * fallocate mode in the mix; IMAGE "mke2fs-ext4" makes the image with
 * `mke2fs -t ext4 -O ^metadata_csum -b BLOCKSIZE` (64bit, flex_bg, ...)
 * instead of simfs mkfs, "mke2fs-uninit_bg" the same with uninit_bg (crc16
 * descriptor sums, uninitialised groups), "mke2fs-ext4-csum" mke2fs's
 * default ext4 (metadata_csum; the journal then carries jbd2 checksum
 * v3), "mke2fs-ext3" mke2fs's default ext3 (`mke2fs -t ext3`: a journal,
 * dir_index, resize_inode).  $T_RANDOPS_OPS_MAX
 * caps NOPS (per worker) where each operation costs more (the sanitizer
 * builds, tests/run-all.sh): the same kinds of operation and the same
 * checks, a shorter sequence.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define MiB (1024ULL * 1024)
#define MAXSTEP 4

enum op_type {
	OP_CREATE,
	OP_WRITE,
	OP_TRUNC,
	OP_READ,
	OP_RENAME,
	OP_UNLINK,
	OP_LINK,
	OP_MKDIR,
	OP_RMDIR,
	OP_SYMLINK,
	OP_CHMOD,
	OP_STAT,
	OP_FALLOC,
	OP_SEEK,
	OP_ACL,
	OP_NTYPES
};

static const char *const op_names[] = {
    "create", "write", "truncate",  "read",  "rename",
    "unlink", "link",  "mkdir",	    "rmdir", "symlink",
    "chmod",  "lstat", "fallocate", "lseek", "acl",
};

/* relative weights (fallocate: only where files are extent-mapped; lseek
 * and acl: only with MORE, so older configurations draw as they did) */
static unsigned op_weight[OP_NTYPES] = {
    [OP_CREATE] = 10, [OP_WRITE] = 20,	[OP_TRUNC] = 6, [OP_READ] = 6,
    [OP_RENAME] = 12, [OP_UNLINK] = 8,	[OP_LINK] = 6,	[OP_MKDIR] = 9,
    [OP_RMDIR] = 5,   [OP_SYMLINK] = 5, [OP_CHMOD] = 5, [OP_STAT] = 5,
};

struct op {
	enum op_type type;
	char *p1, *p2; /* relative paths */
	char *target;  /* symlink target */
	unsigned mode;
	int flags;	   /* open flags, or rename flags */
	uint64_t off, len; /* write/read range, truncate size */
	uint64_t seed;	   /* write content */
	bool direct;	   /* read/write: O_DIRECT on the simfs side */
	bool dio_buffered; /* an unaligned direct write ext4 takes buffered */
	int whence;	   /* lseek: SEEK_SET/CUR/END/DATA/HOLE */
	int64_t delta;	   /* lseek: its offset (after SEEK_SET to off) */
	int acl_op;	   /* acl: ACL_SET, ACL_GET, ACL_REMOVE */
	bool acl_default;  /* acl: system.posix_acl_default, not _access */
	uint8_t acl[128];  /* acl: the xattr value to set */
	size_t acl_len;
};

enum { ACL_SET, ACL_GET, ACL_REMOVE };

/* What one side did: up to MAXSTEP syscalls' results, plus read data. */
struct res {
	int n;
	long rc[MAXSTEP];
	int err[MAXSTEP];
	uint64_t hash; /* read: XXH3 of the bytes; lstat: of the fields */
};

static struct h_rng rng;
/* FALLOC "all": the further modes fallocate picks from (0 = none) */
static int falloc_more[4];
static unsigned nfalloc_more;
static bool falloc_plain = true; /* modes 0 and KEEP_SIZE stay possible */
static char *name_pool[16];
static int npool;
static const char *refroot; /* B */
static uint64_t fs_bs;	    /* simfs block size: lseek's granularity */
static unsigned nseek_gap;  /* SEEK_DATA/HOLE answers that skipped bytes */

static char *rel_join(const char *dir, const char *name)
{
	return *dir ? g_strconcat(dir, "/", name, NULL) : g_strdup(name);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Entries of B/dir, sorted; only directories if dirs_only. */
static GPtrArray *list_ref(const char *dir, bool dirs_only)
{
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	char *p =
	    *dir ? g_build_filename(refroot, dir, NULL) : g_strdup(refroot);
	DIR *d = opendir(p);
	struct dirent *de;

	while (d && (de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (dirs_only && de->d_type != DT_DIR)
			continue;
		g_ptr_array_add(names, g_strdup(de->d_name));
	}
	if (d)
		closedir(d);
	g_free(p);
	if (names->len > 1)
		qsort(names->pdata, names->len, sizeof(char *), cmp_str);
	return names;
}

/* A random real directory of B (relative, "" = the top). */
static char *choose_dir(void)
{
	char *dir = g_strdup("");

	for (int depth = 0; depth < 6; depth++) {
		GPtrArray *subs;
		char *next;

		if (h_below(&rng, 10) < 4)
			break;
		subs = list_ref(dir, true);
		if (subs->len == 0) {
			g_ptr_array_free(subs, TRUE);
			break;
		}
		next = rel_join(dir, subs->pdata[h_below(&rng, subs->len)]);
		g_ptr_array_free(subs, TRUE);
		g_free(dir);
		dir = next;
	}
	return dir;
}

/* A name in dir: mostly an existing one, else one from the pool. */
static char *pick_path(const char *dir, unsigned pct_existing)
{
	GPtrArray *names = list_ref(dir, false);
	char *r;

	if (names->len && h_below(&rng, 100) < pct_existing)
		r = rel_join(dir, names->pdata[h_below(&rng, names->len)]);
	else
		r = rel_join(dir, name_pool[h_below(&rng, npool)]);
	g_ptr_array_free(names, TRUE);
	return r;
}

static char *any_path(unsigned pct_existing)
{
	char *dir = choose_dir();
	char *p = pick_path(dir, pct_existing);

	g_free(dir);
	return p;
}

static uint64_t ref_size(const char *rel)
{
	char *p = g_build_filename(refroot, rel, NULL);
	struct stat st;
	uint64_t s = 0;

	if (lstat(p, &st) == 0 && S_ISREG(st.st_mode))
		s = (uint64_t)st.st_size;
	g_free(p);
	return s;
}

static uint64_t pick_offset(uint64_t size)
{
	unsigned r = (unsigned)h_below(&rng, 100);

	if (r < 2)
		return h_below(&rng, 512 * MiB); /* far out: sparse */
	if (r < 12)
		return h_below(&rng, 4 * MiB);
	return h_below(&rng, size + 8192);
}

/* An O_DIRECT request whose offset or length is off the 512-byte grid:
 * ext4 refuses such a write with EINVAL. */
static bool dio_unaligned(const struct op *o)
{
	return o->len && ((o->off | o->len) & 511);
}

/* Would ext4 write this unaligned direct write through the page cache?
 * On a block-mapped file (no EXTENTS_FL) it does when the write meets a
 * hole below EOF before any written block fails the alignment check
 * (ext4_iomap_alloc's -ENOTBLK; tests/integration/t_direct.c checks the
 * rule against the kernel).  Asked of the simfs file A/p1 as it is
 * before the write, at simfs's block size. */
static bool dio_buffered(const char *A, const struct op *o)
{
	char *p = g_build_filename(A, o->p1, NULL);
	int fd = open(p, O_RDONLY | O_NOFOLLOW);
	uint64_t start = o->off - o->off % fs_bs;
	unsigned long flags = 0;
	struct stat st;
	bool r = false;
	off_t d, h;

	g_free(p);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 &&
	    !(flags & FS_EXTENT_FL) && start < (uint64_t)st.st_size) {
		d = lseek(fd, (off_t)start, SEEK_DATA);
		if (d != (off_t)start) {
			r = true;
		} else if (!(o->off & 511)) {
			h = lseek(fd, (off_t)o->off, SEEK_HOLE);
			r = h >= 0 && (uint64_t)h < o->off + o->len &&
			    h < st.st_size;
		}
	}
	close(fd);
	return r;
}

/* O_DIRECT moves whole 512-byte units (the logical block size): direct
 * reads and writes are put on that grid, except one direct write in
 * eight (chosen by the content seed), which keeps its shape so that the
 * EINVAL ext4 gives it is checked too. */
static void dio_shape(struct op *o)
{
	if (!o->direct || (o->type == OP_WRITE && ((o->seed >> 56) & 7) == 0))
		return;
	o->off &= ~(uint64_t)511;
	o->len = (o->len + 511) & ~(uint64_t)511;
}

/* A buffer for an I/O of len bytes, page-aligned as O_DIRECT wants it. */
static uint8_t *io_buf(size_t len)
{
	uint8_t *b = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);

	if (!b)
		h_bail("out of memory (%zu bytes)", len);
	return b;
}

/* An ACL in the xattr form the VFS takes (posix_acl_xattr_header, then
 * entries sorted by tag and id): the owner, group and other entries, up
 * to two named users and groups, and a mask; one in ten lacks the mask
 * its named entries need, which the VFS refuses with EINVAL. */
static void gen_acl(struct op *o)
{
	static const uint32_t uids[] = {1000, 1001, 65534};
	static const uint32_t gids[] = {100, 5678};
	uint8_t *p = o->acl;
	unsigned nu = (unsigned)h_below(&rng, 3),
		 ng = (unsigned)h_below(&rng, 2);
	bool mask = nu + ng > 0 ? h_below(&rng, 10) != 0 : h_below(&rng, 2);

#define ACL_PUT(tag, perm, id)                                                 \
	do {                                                                   \
		uint16_t t_ = (tag), p_ = (perm);                              \
		uint32_t i_ = (id);                                            \
		memcpy(p, &t_, 2);                                             \
		memcpy(p + 2, &p_, 2);                                         \
		memcpy(p + 4, &i_, 4);                                         \
		p += 8;                                                        \
	} while (0)
	uint32_t version = 2; /* POSIX_ACL_XATTR_VERSION */

	memcpy(p, &version, 4);
	p += 4;
	ACL_PUT(0x01, h_below(&rng, 8), UINT32_MAX); /* ACL_USER_OBJ */
	for (unsigned k = 0; k < nu; k++) /* ACL_USER, ids ascending */
		ACL_PUT(0x02, h_below(&rng, 8), uids[k + (nu == 1)]);
	ACL_PUT(0x04, h_below(&rng, 8), UINT32_MAX); /* ACL_GROUP_OBJ */
	for (unsigned k = 0; k < ng; k++)
		ACL_PUT(0x08, h_below(&rng, 8), gids[k]);
	if (mask)
		ACL_PUT(0x10, h_below(&rng, 8), UINT32_MAX);
	ACL_PUT(0x20, h_below(&rng, 8), UINT32_MAX); /* ACL_OTHER */
#undef ACL_PUT
	o->acl_len = (size_t)(p - o->acl);
}

static void gen_op(struct op *o)
{
	unsigned total = 0, r;
	int t;

	memset(o, 0, sizeof(*o));
	for (t = 0; t < OP_NTYPES; t++)
		total += op_weight[t];
	r = (unsigned)h_below(&rng, total);
	for (t = 0; r >= op_weight[t]; t++)
		r -= op_weight[t];
	o->type = (enum op_type)t;
	o->seed = h_rand(&rng);
	/* from the seed, not a new draw: the sequences stay as they were */
	o->direct =
	    (o->type == OP_WRITE || o->type == OP_READ) && (o->seed >> 62) == 0;
	switch (o->type) {
	case OP_CREATE:
		o->p1 = any_path(30);
		o->mode = (unsigned)h_below(&rng, 01000);
		o->flags = O_WRONLY | O_CREAT | O_NOFOLLOW |
			   (h_below(&rng, 3) == 0 ? O_EXCL : 0);
		break;
	case OP_WRITE:
		o->p1 = any_path(80);
		o->flags =
		    O_WRONLY | O_NOFOLLOW | (h_below(&rng, 2) ? O_CREAT : 0);
		o->mode = 0644;
		o->off = pick_offset(ref_size(o->p1));
		o->len = 1 + h_below(&rng, h_below(&rng, 4) ? 16384 : 200000);
		dio_shape(o);
		break;
	case OP_TRUNC:
		o->p1 = any_path(85);
		o->flags = O_WRONLY | O_NOFOLLOW;
		switch (h_below(&rng, 4)) {
		case 0:
			o->off = 0;
			break;
		case 1:
			o->off = h_below(&rng, ref_size(o->p1) + 1);
			break;
		default:
			o->off = pick_offset(ref_size(o->p1));
		}
		break;
	case OP_READ:
		o->p1 = any_path(85);
		o->flags = O_RDONLY | O_NOFOLLOW;
		o->off = h_below(&rng, ref_size(o->p1) + 4096);
		o->len = 1 + h_below(&rng, 300000);
		dio_shape(o);
		break;
	case OP_RENAME: {
		unsigned f = (unsigned)h_below(&rng, 10);

		o->p1 = any_path(90);
		o->p2 = any_path(50);
		o->flags = f == 0   ? RENAME_NOREPLACE
			   : f == 1 ? RENAME_EXCHANGE
				    : 0;
		break;
	}
	case OP_UNLINK:
	case OP_RMDIR:
	case OP_CHMOD:
	case OP_STAT:
		o->p1 = any_path(90);
		o->mode = (unsigned)h_below(&rng, 01000);
		if (o->type == OP_CHMOD && h_below(&rng, 8) == 0)
			o->mode |= 01000; /* sticky */
		break;
	case OP_LINK:
		o->p1 = any_path(90);
		o->p2 = any_path(30);
		break;
	case OP_MKDIR:
		o->p1 = any_path(30);
		o->mode = (unsigned)(0700 | h_below(&rng, 0100));
		break;
	case OP_SYMLINK: {
		/* "nx/..." never resolves: nothing is ever called nx */
		size_t len = h_below(&rng, 3) ? 1 + h_below(&rng, 50)
					      : 60 + h_below(&rng, 240);
		char *tgt = g_malloc(len + 4);

		memcpy(tgt, "nx/", 3);
		for (size_t i = 3; i < len + 3; i++)
			tgt[i] = (char)('a' + h_below(&rng, 26));
		tgt[len + 3] = '\0';
		o->p1 = any_path(30);
		o->target = tgt;
		break;
	}
	case OP_FALLOC:
		o->p1 = any_path(85);
		o->flags = h_below(&rng, 2) ? FALLOC_FL_KEEP_SIZE : 0;
		o->off = pick_offset(ref_size(o->p1));
		o->len = 1 + h_below(&rng, 200000);
		if (nfalloc_more) {
			/* from the seed: the draws stay as they were */
			unsigned k = (unsigned)((o->seed >> 40) %
						(nfalloc_more + falloc_plain));
			if (k < nfalloc_more)
				o->flags = falloc_more[k];
		}
		break;
	case OP_SEEK: {
		static const int wh[] = {SEEK_SET, SEEK_CUR, SEEK_END,
					 SEEK_DATA, SEEK_HOLE};

		o->p1 = any_path(90);
		o->whence = wh[h_below(&rng, 8) % 5 + 0];
		if (h_below(&rng, 8) < 3) /* mostly the holes */
			o->whence = h_below(&rng, 2) ? SEEK_DATA : SEEK_HOLE;
		o->off = pick_offset(ref_size(o->p1));
		o->delta = (int64_t)h_below(&rng, 16384) - 8192;
		if (o->whence == SEEK_DATA || o->whence == SEEK_HOLE)
			o->delta = (int64_t)o->off;
		break;
	}
	case OP_ACL: {
		unsigned k = (unsigned)h_below(&rng, 10);

		o->p1 = any_path(90);
		o->acl_op = k < 5 ? ACL_SET : k < 8 ? ACL_GET : ACL_REMOVE;
		o->acl_default = h_below(&rng, 3) == 0;
		if (o->acl_op == ACL_SET)
			gen_acl(o);
		break;
	}
	case OP_NTYPES:
		break;
	}
}

static void free_op(struct op *o)
{
	g_free(o->p1);
	g_free(o->p2);
	g_free(o->target);
}

/* lseek's whence and offset, or the ACL call, for describe(). */
static const char *op_detail(const struct op *o)
{
	static char buf[96];
	static const char *const acl_ops[] = {"set", "get", "remove"};

	if (o->type == OP_SEEK)
		snprintf(buf, sizeof buf, " whence=%d delta=%lld", o->whence,
			 (long long)o->delta);
	else if (o->type == OP_ACL)
		snprintf(buf, sizeof buf, " %s %s (%zu bytes)",
			 acl_ops[o->acl_op],
			 o->acl_default ? "default" : "access", o->acl_len);
	else
		buf[0] = '\0';
	return buf;
}

static char *describe(const struct op *o)
{
	return g_strdup_printf(
	    "%s %s%s%s mode=%o flags=%#x off=%llu len=%llu"
	    "%s%s%s%s",
	    op_names[o->type], o->p1, o->p2 ? " -> " : "", o->p2 ? o->p2 : "",
	    o->mode, o->flags, (unsigned long long)o->off,
	    (unsigned long long)o->len, o->target ? " target=" : "",
	    o->target ? o->target : "", o->direct ? " (O_DIRECT on simfs)" : "",
	    op_detail(o));
}

static void step(struct res *r, long rc)
{
	r->rc[r->n] = rc;
	r->err[r->n] = rc < 0 ? errno : 0;
	r->n++;
}

/* Is B/path a regular file (not following a last symlink)? */
static bool ref_is_regular(const char *path)
{
	char *p = g_build_filename(refroot, path, NULL);
	struct stat st;
	bool reg = lstat(p, &st) == 0 && S_ISREG(st.st_mode);

	g_free(p);
	return reg;
}

/* ---- lseek SEEK_DATA / SEEK_HOLE, judged by the reference's bytes ----
 *
 * The reference answers at its own granularity (4 KiB pages, or its
 * block size) and simfs at its block size, as ext4 does, so the offsets
 * are not compared.  simfs's answer must instead be one a correct
 * filesystem of its block size could give for the reference's bytes:
 * (1) sound: SEEK_DATA skips only zero bytes; the block SEEK_HOLE names
 *     holds only zeros up to EOF; ENXIO exactly when off >= size (or,
 *     for SEEK_DATA, when only zeros follow); on the block grid, or off
 *     itself, or EOF for SEEK_HOLE;
 * (2) complete: a block of simfs's size that lies wholly inside a hole
 *     of the reference, below EOF, is a hole on simfs too (nothing was
 *     written there since it was last punched, truncated away or never
 *     written), so SEEK_DATA does not stop in it and SEEK_HOLE does not
 *     pass it.  Checked only when the reference's block size is a
 *     multiple of simfs's (else a reference hole may share a simfs block
 *     with written bytes). */

/* lseek on the reference, ENXIO (no more data or holes) as `end'. */
static uint64_t ref_seek(int fd, uint64_t off, int whence, uint64_t end)
{
	off_t r = lseek(fd, (off_t)off, whence);

	if (r < 0 && errno != ENXIO)
		h_bail("lseek on the reference: %s", strerror(errno));
	return r < 0 || (uint64_t)r > end ? end : (uint64_t)r;
}

/* Are the reference's bytes [a, b) all zero? */
static bool ref_zero(int fd, uint64_t a, uint64_t b)
{
	static uint8_t buf[65536];

	while (a < b) {
		uint64_t d = ref_seek(fd, a, SEEK_DATA, b), e;

		if (d >= b)
			return true;
		e = ref_seek(fd, d, SEEK_HOLE, b);
		for (uint64_t p = d; p < e;) {
			size_t n = (size_t)MIN(e - p, sizeof buf);
			ssize_t got = pread(fd, buf, n, (off_t)p);

			if (got <= 0)
				h_bail("pread on the reference: %s",
				       got < 0 ? strerror(errno) : "EOF");
			for (ssize_t i = 0; i < got; i++)
				if (buf[i])
					return false;
			p += (uint64_t)got;
		}
		a = e;
	}
	return true;
}

/* Is simfs's block [b, b + fs_bs) wholly inside a reference hole? */
static bool ref_hole_block(int fd, uint64_t b, uint64_t size)
{
	return b + fs_bs <= size &&
	       ref_seek(fd, b, SEEK_DATA, size) >= b + fs_bs;
}

/* Why simfs's answer `got' (or -1 with err) to lseek(off, whence) on a
 * file the reference holds as fd (size bytes) is wrong, or NULL. */
static const char *seek_verdict(int fd, uint64_t size, uint64_t off, int whence,
				long got, int err, bool complete)
{
	uint64_t g = (uint64_t)got, blk = off & ~(fs_bs - 1);

	if (off >= size)
		return got < 0 && err == ENXIO ? NULL
					       : "not ENXIO at or past EOF";
	if (got < 0) {
		if (whence == SEEK_DATA && err == ENXIO)
			return ref_zero(fd, off, size)
				   ? NULL
				   : "ENXIO with data ahead";
		return "an error below EOF";
	}
	if (g < off || g > size || (g != off && g != size && g % fs_bs))
		return "off the block grid or out of [off, EOF]";
	if (whence == SEEK_DATA) {
		if (g == size)
			return "EOF is not data";
		if (!ref_zero(fd, off, g))
			return "skipped data";
		if (complete) /* the first block that may hold data */
			while (blk < size && ref_hole_block(fd, blk, size)) {
				uint64_t e = ref_seek(fd, blk, SEEK_DATA, size);

				blk = MAX(blk + fs_bs, e & ~(fs_bs - 1));
			}
		if (complete && g < MAX(blk, off))
			return "data inside a hole of the reference";
		return NULL;
	}
	if (g < size && !ref_zero(fd, g, MIN((g | (fs_bs - 1)) + 1, size)))
		return "a hole that holds data";
	if (!complete || g == off)
		return NULL;
	/* the first block wholly inside a reference hole bounds it */
	if (ref_hole_block(fd, blk, size))
		return "passed a hole of the reference";
	for (uint64_t p = blk + fs_bs; p < g;) {
		uint64_t q = ref_seek(fd, p, SEEK_HOLE, size), r, c;

		if (q >= size)
			break;
		r = ref_seek(fd, q, SEEK_DATA, size);
		c = (q + fs_bs - 1) & ~(fs_bs - 1);
		if (c + fs_bs <= MIN(r, size))
			return c < g ? "passed a hole of the reference" : NULL;
		p = r;
	}
	return NULL;
}

/* OP_SEEK on one side: open, lseek(SEEK_SET, off), lseek(whence, delta)
 * on a regular file.  Plain seeks are compared as they are; SEEK_DATA
 * and SEEK_HOLE give 0 (or ENXIO at EOF) on the reference and, on simfs,
 * 0 when seek_verdict accepts the answer, the answer itself when not. */
static void run_seek(const struct op *o, const char *root, const char *p1,
		     struct res *r)
{
	int fd = open(p1, O_RDONLY | O_NOFOLLOW);
	bool holes = o->whence == SEEK_DATA || o->whence == SEEK_HOLE;

	step(r, fd < 0 ? -1 : 0);
	if (fd < 0)
		return;
	if (ref_is_regular(o->p1)) {
		step(r, lseek(fd, (off_t)o->off, SEEK_SET));
		if (!holes) {
			step(r, lseek(fd, (off_t)o->delta, o->whence));
		} else if (root == refroot) {
			uint64_t size = ref_size(o->p1);

			errno = ENXIO;
			step(r, o->off >= size ? -1 : 0);
		} else {
			char *bp = g_build_filename(refroot, o->p1, NULL);
			int bfd = open(bp, O_RDONLY);
			struct stat st;
			long got = (long)lseek(fd, (off_t)o->off, o->whence);
			int err = errno;
			const char *why;

			if (bfd < 0 || fstat(bfd, &st) < 0)
				h_bail("open %s: %s", bp, strerror(errno));
			why = seek_verdict(
			    bfd, (uint64_t)st.st_size, o->off, o->whence, got,
			    err, (uint64_t)st.st_blksize % fs_bs == 0);
			if (why)
				h_diag("lseek %s %llu whence %d: simfs says "
				       "%ld (%s) of %lld bytes: %s",
				       o->p1, (unsigned long long)o->off,
				       o->whence, got,
				       got < 0 ? strerror(err) : "",
				       (long long)st.st_size, why);
			errno = err;
			if (!why && got > 0 &&
			    (o->whence == SEEK_DATA
				 ? (uint64_t)got > o->off
				 : (uint64_t)got < (uint64_t)st.st_size))
				nseek_gap++;
			/* accepted: what the reference side gives (ENXIO at
			 * EOF, else 0); refused: the answer itself */
			if (why)
				step(r, got < 0 ? -2 : got);
			else
				step(r,
				     o->off >= (uint64_t)st.st_size ? -1 : 0);
			close(bfd);
			g_free(bp);
		}
	}
	step(r, close(fd));
}

/* OP_ACL on one side through the system.posix_acl_* xattrs, as setfacl
 * and getfacl use them; after a set or remove, the mode (which follows
 * an access ACL) goes into the hash, after a get the value. */
static void run_acl(const struct op *o, const char *p1, struct res *r)
{
	const char *name = o->acl_default ? "system.posix_acl_default"
					  : "system.posix_acl_access";
	uint8_t buf[256];
	struct stat st;
	ssize_t n;

	switch (o->acl_op) {
	case ACL_SET:
		step(r, lsetxattr(p1, name, o->acl, o->acl_len, 0));
		break;
	case ACL_GET:
		n = lgetxattr(p1, name, buf, sizeof buf);
		step(r, n);
		if (n > 0)
			r->hash = h_hash_buf(buf, (size_t)n);
		return;
	case ACL_REMOVE:
		step(r, lremovexattr(p1, name));
		break;
	}
	if (lstat(p1, &st) == 0) {
		uint64_t m = st.st_mode;

		r->hash = h_hash_buf(&m, sizeof m);
	}
}

static void run_op(const struct op *o, const char *root, struct res *r)
{
	char *p1 = g_build_filename(root, o->p1, NULL);
	char *p2 = o->p2 ? g_build_filename(root, o->p2, NULL) : NULL;
	int direct = o->direct && root != refroot ? O_DIRECT : 0;
	int fd;

	memset(r, 0, sizeof(*r));
	switch (o->type) {
	case OP_CREATE:
		fd = open(p1, o->flags, o->mode);
		step(r, fd < 0 ? -1 : 0);
		if (fd >= 0)
			step(r, close(fd));
		break;
	case OP_WRITE: {
		uint8_t *buf = io_buf(o->len);
		struct h_rng dr;

		h_rng_seed(&dr, o->seed);
		h_fill(&dr, buf, o->len);
		fd = open(p1, o->flags | direct, o->mode);
		step(r, fd < 0 ? -1 : 0);
		if (fd >= 0 && o->direct && root == refroot &&
		    dio_unaligned(o) && !o->dio_buffered) {
			/* the buffered reference stands for ext4 */
			errno = EINVAL;
			step(r, -1);
			step(r, close(fd));
		} else if (fd >= 0) {
			step(r,
			     h_pwrite_all(fd, buf, o->len, (off_t)o->off) == 0
				 ? 0
				 : -1);
			step(r, close(fd));
		}
		free(buf);
		break;
	}
	case OP_TRUNC:
		fd = open(p1, o->flags);
		step(r, fd < 0 ? -1 : 0);
		if (fd >= 0) {
			step(r, ftruncate(fd, (off_t)o->off));
			step(r, close(fd));
		}
		break;
	case OP_READ: {
		uint8_t *buf = io_buf(o->len);

		fd = open(p1, o->flags | direct);
		step(r, fd < 0 ? -1 : 0);
		if (fd >= 0) {
			size_t got = 0;
			ssize_t n = 1;

			while (got < o->len && n > 0) {
				n = pread(fd, buf + got, o->len - got,
					  (off_t)(o->off + got));
				if (n > 0)
					got += (size_t)n;
			}
			step(r, n < 0 ? -1 : (long)got);
			r->hash = h_hash_buf(buf, got);
			close(fd);
		}
		free(buf);
		break;
	}
	case OP_RENAME:
		if (o->flags)
			step(r, syscall(SYS_renameat2, AT_FDCWD, p1, AT_FDCWD,
					p2, o->flags));
		else
			step(r, rename(p1, p2));
		break;
	case OP_UNLINK:
		step(r, unlink(p1));
		break;
	case OP_RMDIR:
		step(r, rmdir(p1));
		break;
	case OP_LINK:
		step(r, link(p1, p2));
		break;
	case OP_MKDIR:
		step(r, mkdir(p1, o->mode));
		break;
	case OP_SYMLINK:
		step(r, symlink(o->target, p1));
		break;
	case OP_CHMOD:
		step(r, chmod(p1, o->mode));
		break;
	case OP_STAT: {
		struct stat st;

		step(r, lstat(p1, &st));
		if (r->rc[0] == 0) {
			uint64_t v[4] = {
			    st.st_mode, st.st_nlink,
			    S_ISDIR(st.st_mode) ? 0 : (uint64_t)st.st_size, 0};

			r->hash = h_hash_buf(v, sizeof(v));
		}
		break;
	}
	case OP_FALLOC:
		fd = open(p1, O_WRONLY | O_NOFOLLOW);
		step(r, fd < 0 ? -1 : 0);
		if (fd >= 0) {
			step(r, fallocate(fd, o->flags, (off_t)o->off,
					  (off_t)o->len));
			step(r, close(fd));
		}
		break;
	case OP_SEEK:
		run_seek(o, root, p1, r);
		break;
	case OP_ACL:
		run_acl(o, p1, r);
		break;
	case OP_NTYPES:
		break;
	}
	g_free(p1);
	g_free(p2);
}

static bool same(const struct res *a, const struct res *b)
{
	if (a->n != b->n || a->hash != b->hash)
		return false;
	for (int i = 0; i < a->n; i++)
		if (a->rc[i] != b->rc[i] || a->err[i] != b->err[i])
			return false;
	return true;
}

static char *res_str(const struct res *r)
{
	GString *s = g_string_new(NULL);

	for (int i = 0; i < r->n; i++)
		g_string_append_printf(s, "%s%ld%s%s", i ? ", " : "", r->rc[i],
				       r->err[i] ? " " : "",
				       r->err[i] ? strerrorname_np(r->err[i])
						 : "");
	g_string_append_printf(s, " [%016llx]", (unsigned long long)r->hash);
	return g_string_free(s, FALSE);
}

static int compare_trees(const char *a, const char *b, const char *when)
{
	GPtrArray *ta = h_tree_scan(a), *tb = h_tree_scan(b);
	int d;
	double t0 = h_now();

	d = h_tree_compare(tb, ta, "reference", "simfs", H_CMP_NLINK);
	H_OK(ta && tb && d == 0,
	     "%s: trees equal (%u entries, %d "
	     "differences)",
	     when, tb ? tb->len : 0, d);
	h_diag("%s: compare took %.1f s", when, h_now() - t0);
	h_tree_free(ta);
	h_tree_free(tb);
	return d;
}

/* What one sequence of operations did. */
struct seq {
	long done;
	int mismatches;
	unsigned counts[OP_NTYPES], okcounts[OP_NTYPES];
	unsigned ndirect; /* O_DIRECT reads and writes that succeeded */
};

/*
 * Apply NOPS generated operations to A (simfs) and B (the reference),
 * comparing each result.  With IMG set, the trees are also compared,
 * unmounted, checked and remounted half-way.
 */
static void run_sequence(const char *A, const char *B, long nops,
			 const char *img, const char *mnt, const char *opts,
			 struct seq *sq)
{
	char *ring[32] = {0};
	double t0 = h_now();

	refroot = B;
	for (long i = 0; i < nops; i++) {
		struct op o;
		struct res ra, rb;

		gen_op(&o);
		o.dio_buffered = o.type == OP_WRITE && o.direct &&
				 dio_unaligned(&o) && dio_buffered(A, &o);
		run_op(&o, B, &rb);
		/* O_DIRECT only for regular files: the kernel refuses it on a
		 * FUSE directory at open (EINVAL), before simfs sees it */
		o.direct = o.direct && ref_is_regular(o.p1);
		run_op(&o, A, &ra);
		sq->counts[o.type]++;
		if (rb.n && rb.rc[rb.n - 1] >= 0 && rb.rc[0] >= 0) {
			sq->okcounts[o.type]++;
			sq->ndirect += o.direct;
		}
		g_free(ring[i % 32]);
		ring[i % 32] = describe(&o);
		if (!same(&ra, &rb)) {
			char *sa = res_str(&ra), *sb = res_str(&rb);

			if (sq->mismatches == 0) {
				h_diag("%s: first mismatch at op %ld; the ops "
				       "before it:",
				       A, i);
				for (long k = i - 31 < 0 ? 0 : i - 31; k < i;
				     k++)
					h_diag("  #%ld %s", k, ring[k % 32]);
			}
			h_diag("MISMATCH op #%ld: %s", i, ring[i % 32]);
			h_diag("   reference: %s", sb);
			h_diag("   simfs:     %s", sa);
			g_free(sa);
			g_free(sb);
			sq->mismatches++;
		}
		free_op(&o);
		sq->done = i + 1;
		if (sq->mismatches >= 5) {
			h_diag("stopping after 5 mismatches");
			break;
		}
		if (img && i + 1 == nops / 2) {
			h_diag("half-way (%ld ops, %.1f s)", i + 1,
			       h_now() - t0);
			compare_trees(A, B, "half-way");
			H_OK(h_umount(mnt) == 0, "half-way umount");
			H_OK(h_fsck_clean(img, NULL),
			     "half-way e2fsck -fn clean");
			if (h_mount(img, mnt, opts) != 0)
				h_bail("half-way remount failed");
		}
	}
	for (int k = 0; k < 32; k++)
		g_free(ring[k]);
}

/*
 * WORKERS processes at once, worker i confined to A/wI and B/wI with its
 * own seed, so each one's results are still exact while the engine serves
 * them together.  A worker that has not finished 120 s (times
 * h_time_scale()) after the others did is taken for a deadlock.  Returns the
 * workers' mismatches (or -1).
 */
static int run_workers(const char *A, const char *B, uint64_t seed, long nops,
		       int workers, struct seq *sq)
{
	pid_t pids[16];
	int bad = 0, left = workers;
	double last = 0;

	fflush(stdout);
	for (int w = 0; w < workers; w++) {
		char nm[16];
		char *a, *b;

		snprintf(nm, sizeof nm, "w%d", w);
		a = g_build_filename(A, nm, NULL);
		b = g_build_filename(B, nm, NULL);
		if (mkdir(a, 0755) < 0 || mkdir(b, 0755) < 0)
			h_bail("mkdir %s: %s", nm, strerror(errno));
		pids[w] = fork();
		if (pids[w] < 0)
			h_bail("fork: %s", strerror(errno));
		if (pids[w] == 0) {
			struct seq mine = {0};

			h_rng_seed(&rng, seed * 1000 + (uint64_t)w);
			run_sequence(a, b, nops, NULL, NULL, NULL, &mine);
			h_diag("worker %d: %ld ops, %d mismatches, %u through "
			       "O_DIRECT",
			       w, mine.done, mine.mismatches, mine.ndirect);
			if (nops >= 1000 && mine.ndirect == 0)
				mine.mismatches++;
			fflush(stdout);
			_exit(mine.mismatches == 0 && mine.done == nops ? 0
									: 1);
		}
		g_free(a);
		g_free(b);
	}
	/* Wait; once some worker is done, the rest get WAIT_S more. */
	while (left > 0) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p > 0) {
			left--;
			last = h_now();
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				bad++;
			continue;
		}
		if (last > 0 && h_now() - last > 120 * h_time_scale()) {
			h_diag("%d worker(s) still running %.0f s after the "
			       "last one ended: taken for a deadlock",
			       left, 120 * h_time_scale());
			for (int w = 0; w < workers; w++)
				kill(pids[w], SIGKILL);
			while (waitpid(-1, &st, 0) > 0)
				;
			return -1;
		}
		usleep(20000);
	}
	sq->done = nops * workers;
	return bad;
}

/* FALLOC "all": which further modes the reference directory supports
 * (its filesystem decides: tmpfs has no ZERO_RANGE, for one). */
static void probe_falloc_modes(const char *dir)
{
	static const int want[] = {
	    FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	    FALLOC_FL_ZERO_RANGE,
	    FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
	};
	char *p = g_build_filename(dir, ".probe", NULL);
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	GString *got = g_string_new(NULL);

	if (fd < 0 || ftruncate(fd, 65536) < 0)
		h_bail("probe file %s: %s", p, strerror(errno));
	for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
		if (!falloc_plain && !(want[i] & FALLOC_FL_PUNCH_HOLE))
			continue; /* block maps: ZERO_RANGE is EOPNOTSUPP */
		if (fallocate(fd, want[i], 4096, 8192) == 0) {
			falloc_more[nfalloc_more++] = want[i];
			g_string_append_printf(got, " %#x", want[i]);
		} else {
			h_diag("the reference lacks fallocate mode %#x (%s): "
			       "not in the mix",
			       want[i], strerror(errno));
		}
	}
	close(fd);
	unlink(p);
	if (!nfalloc_more && !falloc_plain)
		op_weight[OP_FALLOC] = 0;
	h_diag("fallocate modes besides 0 and KEEP_SIZE:%s%s", got->str,
	       falloc_plain ? "" : " (and not those two: block maps)");
	g_string_free(got, TRUE);
	g_free(p);
}

int main(int argc, char **argv)
{
	uint64_t seed = 1;
	long nops = 10000;
	int workers = 1;
	const char *bs = "4096", *opts = NULL;
	const char *mkfs_args[] = {"-b", NULL, NULL, NULL, NULL, NULL, NULL};
	int nargs = 2;
	char *img, *mnt, *A, *B, *preset = NULL;
	struct seq sq = {0};
	double t0 = h_now();
	GString *mix = g_string_new(NULL);
	bool falloc_all;

	h_init(argc, argv);
	if (argc > 2)
		seed = strtoull(argv[2], NULL, 0);
	if (argc > 3)
		nops = atol(argv[3]);
	if (argc > 4)
		bs = argv[4];
	if (argc > 5 && *argv[5])
		opts = argv[5];
	if (argc > 6)
		workers = atoi(argv[6]);
	if (workers < 1 || workers > 16)
		h_bail("WORKERS must be 1 to 16, not %s", argv[6]);
	if (argc > 7 && *argv[7] && strcmp(argv[7], "all") != 0)
		h_bail("FALLOC must be \"all\" or empty, not %s", argv[7]);
	if (argc > 8 && *argv[8] && strcmp(argv[8], "mke2fs-ext4") != 0 &&
	    strcmp(argv[8], "mke2fs-uninit_bg") != 0 &&
	    strcmp(argv[8], "mke2fs-ext4-csum") != 0 &&
	    strcmp(argv[8], "mke2fs-ext3") != 0)
		h_bail("IMAGE must be \"mke2fs-ext4\", \"mke2fs-uninit_bg\", "
		       "\"mke2fs-ext4-csum\" or \"mke2fs-ext3\", not %s",
		       argv[8]);
	falloc_all = argc > 7 && *argv[7];
	if (argc > 9) { /* MORE: lseek and ACL operations join the mix */
		if (strcmp(argv[9], "seek,acl") != 0)
			h_bail("MORE must be \"seek,acl\", not %s", argv[9]);
		op_weight[OP_SEEK] = 6;
		op_weight[OP_ACL] = 6;
	}
	fs_bs = strtoull(bs, NULL, 10);
	if (fs_bs < 1024 || (fs_bs & (fs_bs - 1)))
		h_bail("BLOCKSIZE must be a power of two >= 1024, not %s", bs);
	if (getenv("T_RANDOPS_OPS_MAX")) {
		const char *cap_s = getenv("T_RANDOPS_OPS_MAX");
		char *end;
		long cap = strtol(cap_s, &end, 10);

		if (*end || cap < 1000)
			h_bail(
			    "T_RANDOPS_OPS_MAX must be a number of operations "
			    ">= 1000, not '%s'",
			    cap_s);
		if (nops > cap) {
			h_diag("T_RANDOPS_OPS_MAX=%ld: %ld operations instead "
			       "of %ld",
			       cap, cap, nops);
			nops = cap;
		}
	}
	mkfs_args[1] = bs;
	/* a journaled policy needs an image with a journal; a preset makes
	 * its own kind of image */
	if (opts && strstr(opts, "preset=")) {
		const char *p = strstr(opts, "preset=") + 7;

		preset = g_strndup(p, strcspn(p, ","));
		mkfs_args[nargs++] = "--preset";
		mkfs_args[nargs++] = preset;
	} else if (opts && strstr(opts, "data=") && !strstr(opts, "data=none"))
		mkfs_args[nargs++] = "-j";
	/* the dir_index option wants an image with the feature */
	if (opts && strstr(opts, "dir_index")) {
		mkfs_args[nargs++] = "-O";
		mkfs_args[nargs++] = "dir_index";
	}
	h_diag("seed %llu, %ld operations x %d worker(s), %s-byte blocks, -o "
	       "%s (rerun: %s %s %llu %ld %s '%s' %d)",
	       (unsigned long long)seed, nops, workers, bs,
	       opts ? opts : "(none)", argv[0], argv[1],
	       (unsigned long long)seed, nops, bs, opts ? opts : "", workers);
	/* fallocate joins the mix where new files are extent-mapped (on
	 * block maps it is EOPNOTSUPP, unlike the reference directory) */
	if (opts &&
	    (strstr(opts, "alloc=extent") || strstr(opts, "alloc=mballoc") ||
	     strstr(opts, "alloc=delalloc") || strstr(opts, "preset=ext4") ||
	     strstr(opts, "preset=ext3i")))
		op_weight[OP_FALLOC] = 4;
	else if (falloc_all) /* block maps: punching only */
		falloc_plain = false;
	if (falloc_all)
		op_weight[OP_FALLOC] = 4;
	h_rng_seed(&rng, seed);
	umask(0);

	name_pool[npool++] = "a";
	name_pool[npool++] = "b";
	name_pool[npool++] = "c";
	name_pool[npool++] = "d";
	name_pool[npool++] = "e";
	name_pool[npool++] = "f";
	name_pool[npool++] = "g";
	name_pool[npool++] = "dir1";
	name_pool[npool++] = "dir2";
	name_pool[npool++] = "x.txt";
	name_pool[npool++] = "with space";
	name_pool[npool++] = "\xc3\xa9t\xc3\xa9";
	name_pool[npool] = g_malloc(256);
	memset(name_pool[npool], 'L', 255);
	name_pool[npool++][255] = '\0';

	img = h_path("fs.img");
	mnt = h_path("mnt");
	A = g_build_filename(mnt, "work", NULL);
	B = h_path("ref");
	refroot = B;
	if (argc > 8 && *argv[8]) {
		char *err = NULL;

		/* the image as mke2fs makes ext4, less metadata_csum (or
		 * with uninit_bg instead, or as it is; or its ext3) */
		const char *feat = !strcmp(argv[8], "mke2fs-uninit_bg")
				       ? "^metadata_csum,uninit_bg"
				   : !strcmp(argv[8], "mke2fs-ext4-csum")
				       ? "metadata_csum"
				       : "^metadata_csum";
		int rc =
		    !strcmp(argv[8], "mke2fs-ext3")
			? h_runl(NULL, &err, "mke2fs", "-F", "-q", "-t", "ext3",
				 "-b", bs, img, "1G", NULL)
			: h_runl(NULL, &err, "mke2fs", "-F", "-q", "-t", "ext4",
				 "-O", feat, "-b", bs, img, "1G", NULL);

		if (rc != 0)
			h_bail("mke2fs failed: %s", err ? err : "?");
		g_free(err);
	} else if (h_mkfs(img, "1G", mkfs_args) != 0) {
		h_bail("simfs mkfs failed");
	}
	if (h_mount(img, mnt, opts) != 0)
		h_bail("simfs mount failed");
	if (mkdir(A, 0755) < 0 || mkdir(B, 0755) < 0)
		h_bail("mkdir work dirs: %s", strerror(errno));
	if (falloc_all)
		probe_falloc_modes(B);
	if (op_weight[OP_ACL]) {
		static const uint8_t plain[] = {2,   0,	  0,   0,   1,	0, 6, 0,
						255, 255, 255, 255, 4,	0, 4, 0,
						255, 255, 255, 255, 32, 0, 4, 0,
						255, 255, 255, 255};

		if (setxattr(B, "system.posix_acl_access", plain, sizeof plain,
			     0) < 0)
			h_bail("the reference directory %s takes no POSIX ACL "
			       "(%s): the acl operations need one that does",
			       B, strerror(errno));
	}

	if (workers == 1) {
		run_sequence(A, B, nops, img, mnt, opts, &sq);
		for (int t = 0; t < OP_NTYPES; t++)
			g_string_append_printf(mix, " %s %u/%u", op_names[t],
					       sq.okcounts[t], sq.counts[t]);
		h_diag("ops (succeeded/issued):%s", mix->str);
	} else {
		sq.mismatches = run_workers(A, B, seed, nops, workers, &sq);
		H_OK(sq.mismatches >= 0,
		     "%d workers all finished (no "
		     "deadlock)",
		     workers);
		if (sq.mismatches < 0)
			h_bail("workers did not finish");
		nops *= workers;
	}
	if (workers == 1) /* (each worker checks its own) */
		H_OK(sq.done < 1000 || sq.ndirect > 0,
		     "%u reads and writes went through O_DIRECT on simfs",
		     sq.ndirect);
	H_EQ(sq.mismatches, 0,
	     "%ld ops: simfs and the reference agree on "
	     "every result",
	     sq.done);
	H_OK(sq.done == nops, "all %ld ops ran", nops);
	if (op_weight[OP_SEEK] && workers == 1 && sq.done >= 1000) {
		H_OK(sq.okcounts[OP_SEEK] > 0 && nseek_gap > 0,
		     "%u lseeks succeeded, %u SEEK_DATA/SEEK_HOLE answers "
		     "skipped a hole or found one",
		     sq.okcounts[OP_SEEK], nseek_gap);
		H_OK(sq.okcounts[OP_ACL] > 0, "%u ACL operations succeeded",
		     sq.okcounts[OP_ACL]);
	}
	h_diag("ops took %.1f s", h_now() - t0);

	compare_trees(A, B, "end");
	H_OK(h_umount(mnt) == 0, "umount");
	H_OK(h_fsck_clean(img, NULL), "e2fsck -fn clean");
	if (h_mount(img, mnt, opts) != 0)
		h_bail("remount failed");
	compare_trees(A, B, "after remount");
	H_OK(h_umount(mnt) == 0, "umount");
	H_OK(h_fsck_clean(img, NULL), "e2fsck -fn clean at the end");
	h_diag("seed %llu: %.1f s in all", (unsigned long long)seed,
	       h_now() - t0);
	g_string_free(mix, TRUE);
	g_free(preset);
	return h_done();
}
