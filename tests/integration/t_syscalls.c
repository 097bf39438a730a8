/*
 * t_syscalls.c - POSIX behaviour through a real FUSE mount, one syscall at
 * a time (in the spirit of libfuse test/test_syscalls.c).
 *
 * Each case works in its own directory of one fresh 256 MiB image: rename
 * over an existing file, unlink of an open file (still readable, space
 * freed at close), hard-link counts, sparse files at 10 GiB and 64 GiB,
 * truncate grow/shrink zero fill, O_APPEND, ENOTEMPTY and friends, 255/256
 * byte names, symlinks fast and slow, chmod/chown/utimens, xattrs,
 * renameat2 NOREPLACE/EXCHANGE, directory link counts, statvfs, O_DIRECT
 * reads and writes mixed with buffered ones on the same file.  Then:
 * snapshot the tree, umount, e2fsck -fn clean, remount, the same tree
 * (names, types, modes, owners, link counts, bytes, xattrs, mtimes), umount,
 * e2fsck clean again.
 *
 * usage: t_syscalls SIMFS_BINARY
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define KiB 1024ULL
#define MiB (1024ULL * KiB)
#define GiB (1024ULL * MiB)

static const char *mnt;

static int renameat2_(const char *a, const char *b, unsigned flags)
{
	return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, flags);
}

/* path of `rel` inside case directory `dir` (static rotating buffers) */
static const char *P(const char *dir, const char *rel)
{
	static char buf[8][PATH_MAX + 300];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s%s%s", mnt, dir, *rel ? "/" : "",
		 rel);
	return buf[i];
}

static void case_dir(const char *dir)
{
	h_diag("--- %s", dir);
	if (mkdir(P(dir, ""), 0755) < 0)
		h_bail("mkdir %s: %s", P(dir, ""), strerror(errno));
}

static bool file_is(const char *path, const void *want, size_t n)
{
	char *buf = g_malloc(n + 1);
	int fd = open(path, O_RDONLY);
	ssize_t got;
	bool ok;

	if (fd < 0) {
		g_free(buf);
		return false;
	}
	got = pread(fd, buf, n + 1, 0);
	close(fd);
	ok = got == (ssize_t)n && memcmp(buf, want, n) == 0;
	g_free(buf);
	return ok;
}

static bool all_zero(const void *buf, size_t n)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static bool read_zeros(int fd, uint64_t off, size_t n)
{
	char *buf = g_malloc(n);
	ssize_t got = pread(fd, buf, n, (off_t)off);
	bool ok = got == (ssize_t)n && all_zero(buf, n);

	g_free(buf);
	return ok;
}

static fsblkcnt_t bfree(void)
{
	struct statvfs s;

	if (statvfs(mnt, &s) < 0)
		return 0;
	return s.f_bfree;
}

static fsfilcnt_t ffree(void)
{
	struct statvfs s;

	if (statvfs(mnt, &s) < 0)
		return 0;
	return s.f_ffree;
}

/* FUSE sends RELEASE asynchronously after close(): poll for a while. */
static fsblkcnt_t wait_bfree(fsblkcnt_t want)
{
	double end = h_now() + 5 * h_time_scale();
	fsblkcnt_t b;

	while ((b = bfree()) != want && h_now() < end)
		usleep(20000);
	return b;
}

static fsfilcnt_t wait_ffree(fsfilcnt_t want)
{
	double end = h_now() + 5 * h_time_scale();
	fsfilcnt_t f;

	while ((f = ffree()) != want && h_now() < end)
		usleep(20000);
	return f;
}

static void fill_pattern(void *buf, size_t n, uint64_t seed)
{
	struct h_rng r;

	h_rng_seed(&r, seed);
	h_fill(&r, buf, n);
}

/* ------------------------------------------------------------------ */

static void t_statvfs(void)
{
	struct statvfs s;

	h_diag("--- statvfs");
	if (!H_SYS(statvfs(mnt, &s), "statvfs on the mount"))
		return;
	H_EQ(s.f_bsize, 4096, "f_bsize is the block size");
	H_OK(s.f_blocks > 60000 && s.f_blocks <= 65536,
	     "f_blocks %llu fits a 256 MiB image",
	     (unsigned long long)s.f_blocks);
	H_OK(s.f_bfree <= s.f_blocks && s.f_bavail <= s.f_bfree,
	     "bavail <= bfree <= blocks");
	H_OK(s.f_files > 0 && s.f_ffree < s.f_files, "inode counts sane");
	H_EQ(s.f_namemax, 255, "f_namemax 255");
}

static void t_rename_over(void)
{
	const char *d = "rename";
	struct stat st, st2;
	char buf[16];
	int fd;

	case_dir(d);
	h_write_file(P(d, "a"), "AAAA", 4, 0644);
	h_write_file(P(d, "b"), "BBBBBB", 6, 0644);
	stat(P(d, "a"), &st);
	fd = open(P(d, "b"), O_RDONLY);
	H_SYS(fd, "open b");
	H_SYS(rename(P(d, "a"), P(d, "b")), "rename a over existing b");
	H_ERR(stat(P(d, "a"), &st2), ENOENT, "a is gone");
	H_OK(stat(P(d, "b"), &st2) == 0 && st2.st_ino == st.st_ino,
	     "b is a's inode");
	H_OK(file_is(P(d, "b"), "AAAA", 4), "b has a's bytes");
	H_OK(pread(fd, buf, sizeof(buf), 0) == 6 && !memcmp(buf, "BBBBBB", 6),
	     "the replaced b stays readable through an open fd");
	H_OK(fstat(fd, &st2) == 0 && st2.st_nlink == 0,
	     "replaced inode has nlink 0 (got %lu)",
	     (unsigned long)st2.st_nlink);
	close(fd);

	/* across directories */
	mkdir(P(d, "sub"), 0755);
	h_write_file(P(d, "sub/c"), "CC", 2, 0644);
	h_write_file(P(d, "x"), "XXX", 3, 0644);
	H_SYS(rename(P(d, "x"), P(d, "sub/c")), "rename over a file in "
						 "another directory");
	H_OK(file_is(P(d, "sub/c"), "XXX", 3), "sub/c has x's bytes");

	/* same inode under both names: rename does nothing */
	H_SYS(link(P(d, "b"), P(d, "b2")), "link b b2");
	H_SYS(rename(P(d, "b"), P(d, "b2")), "rename b onto its own hard "
					     "link b2");
	H_OK(stat(P(d, "b"), &st) == 0 && stat(P(d, "b2"), &st2) == 0 &&
		     st.st_ino == st2.st_ino && st.st_nlink == 2,
	     "both names remain, nlink 2");
	H_SYS(rename(P(d, "b"), P(d, "b")), "rename b onto itself");

	/* directories */
	mkdir(P(d, "d1"), 0755);
	mkdir(P(d, "d2"), 0755);
	mkdir(P(d, "d3"), 0755);
	h_write_file(P(d, "d3/f"), "", 0, 0644);
	H_SYS(rename(P(d, "d1"), P(d, "d2")), "rename dir over an empty dir");
	H_ERR(stat(P(d, "d1"), &st), ENOENT, "d1 is gone");
	H_ERR(rename(P(d, "d2"), P(d, "d3")), ENOTEMPTY,
	      "rename dir over a non-empty dir");
	H_ERR(rename(P(d, "b"), P(d, "d2")), EISDIR,
	      "rename file over a dir");
	H_ERR(rename(P(d, "d2"), P(d, "b")), ENOTDIR,
	      "rename dir over a file");
	H_ERR(rename(P(d, "d2"), P(d, "d2/x")), EINVAL,
	      "rename dir under itself");
	H_ERR(rename(P(d, "nope"), P(d, "z")), ENOENT,
	      "rename of a missing name");
}

static void t_unlink_open(void)
{
	const char *d = "unlinkopen";
	size_t n = 8 * MiB;
	char *buf = g_malloc(n), *back = g_malloc(n);
	fsblkcnt_t b0, b1, b2;
	fsfilcnt_t f0;
	struct stat st;
	int fd;

	case_dir(d);
	fill_pattern(buf, n, 7);
	sync();
	b0 = wait_bfree(bfree());
	f0 = ffree();
	fd = open(P(d, "f"), O_RDWR | O_CREAT | O_EXCL, 0644);
	H_SYS(fd, "create f");
	H_EQ(h_pwrite_all(fd, buf, n, 0), 0, "write 8 MiB");
	H_SYS(fsync(fd), "fsync");
	b1 = bfree();
	H_OK(b0 - b1 >= n / 4096, "8 MiB allocated (%llu blocks)",
	     (unsigned long long)(b0 - b1));
	H_SYS(unlink(P(d, "f")), "unlink the open file");
	H_ERR(stat(P(d, "f"), &st), ENOENT, "name gone");
	H_OK(fstat(fd, &st) == 0 && st.st_nlink == 0 &&
		     st.st_size == (off_t)n,
	     "fstat: nlink 0, size kept");
	H_OK(pread(fd, back, n, 0) == (ssize_t)n && !memcmp(buf, back, n),
	     "all 8 MiB still readable after unlink");
	H_EQ(pwrite(fd, "tail", 4, (off_t)n), 4, "still writable");
	H_OK(pread(fd, back, 4, (off_t)n) == 4 && !memcmp(back, "tail", 4),
	     "the new bytes read back");
	b2 = bfree();
	H_OK(b0 - b2 >= n / 4096, "space still held while open");
	H_SYS(close(fd), "close");
	H_EQ(wait_bfree(b0), b0, "all blocks freed after the last close");
	H_EQ(wait_ffree(f0), f0, "the inode freed after the last close");
	g_free(buf);
	g_free(back);
}

static void t_hardlinks(void)
{
	const char *d = "links";
	struct stat a, b;

	case_dir(d);
	mkdir(P(d, "other"), 0755);
	h_write_file(P(d, "f"), "data", 4, 0644);
	H_OK(stat(P(d, "f"), &a) == 0 && a.st_nlink == 1, "new file nlink 1");
	H_SYS(link(P(d, "f"), P(d, "g")), "link f g");
	H_OK(stat(P(d, "f"), &a) == 0 && stat(P(d, "g"), &b) == 0 &&
		     a.st_ino == b.st_ino,
	     "f and g share the inode");
	H_EQ(a.st_nlink, 2, "nlink 2 via f");
	H_EQ(b.st_nlink, 2, "nlink 2 via g");
	H_SYS(link(P(d, "g"), P(d, "other/h")), "link into another dir");
	H_OK(stat(P(d, "f"), &a) == 0 && a.st_nlink == 3, "nlink 3");
	H_SYS(unlink(P(d, "f")), "unlink f");
	H_OK(stat(P(d, "g"), &b) == 0 && b.st_nlink == 2, "nlink 2 after "
							  "unlink");
	H_OK(file_is(P(d, "other/h"), "data", 4), "bytes via the third name");
	H_SYS(unlink(P(d, "g")), "unlink g");
	H_OK(stat(P(d, "other/h"), &b) == 0 && b.st_nlink == 1,
	     "nlink 1 after the second unlink");
	H_ERR(link(P(d, "other"), P(d, "dirlink")), EPERM,
	      "link to a directory");
	H_ERR(link(P(d, "other/h"), P(d, "other")), EEXIST,
	      "link onto an existing name");
	H_ERR(link(P(d, "missing"), P(d, "m2")), ENOENT,
	      "link of a missing file");
	/* a link kept for the remount check */
	H_SYS(link(P(d, "other/h"), P(d, "keep")), "link other/h keep");
}

static void t_sparse(void)
{
	const char *d = "sparse";
	size_t n = MiB;
	char *buf = g_malloc(n), *back = g_malloc(n);
	fsblkcnt_t b0;
	struct stat st;
	char mix[200];
	int fd;

	case_dir(d);
	sync();
	b0 = wait_bfree(bfree());
	fill_pattern(buf, n, 10);

	fd = open(P(d, "ten"), O_RDWR | O_CREAT, 0644);
	H_SYS(fd, "create ten");
	H_EQ(pwrite(fd, buf, 4096, (off_t)(10 * GiB)), 4096,
	     "write 4 KiB at 10 GiB");
	H_OK(fstat(fd, &st) == 0 && st.st_size == (off_t)(10 * GiB + 4096),
	     "size 10 GiB + 4 KiB (got %lld)", (long long)st.st_size);
	H_OK(st.st_blocks * 512 <= 4096 + 4 * 4096,
	     "st_blocks small: %lld sectors", (long long)st.st_blocks);
	H_OK(read_zeros(fd, 0, 65536), "hole at 0 reads zeros");
	H_OK(read_zeros(fd, 5 * GiB, 65536), "hole at 5 GiB reads zeros");
	H_OK(read_zeros(fd, 10 * GiB - 65536, 65536),
	     "hole just before the data reads zeros");
	H_OK(pread(fd, back, 4096, (off_t)(10 * GiB)) == 4096 &&
		     !memcmp(back, buf, 4096),
	     "data at 10 GiB reads back");
	H_OK(pread(fd, mix, 200, (off_t)(10 * GiB - 100)) == 200 &&
		     all_zero(mix, 100) && !memcmp(mix + 100, buf, 100),
	     "a read across the hole/data edge");
	H_EQ(pread(fd, back, 100, (off_t)(10 * GiB + 4096)), 0,
	     "read at EOF returns 0");
	/* fill a hole in the middle: neighbours stay zero */
	H_EQ(pwrite(fd, "mid", 3, (off_t)(3 * GiB + 5)), 3,
	     "write in the middle of the hole");
	H_OK(read_zeros(fd, 3 * GiB, 5) && read_zeros(fd, 3 * GiB + 8, 8000),
	     "bytes around it are zero");
	H_OK(pread(fd, mix, 3, (off_t)(3 * GiB + 5)) == 3 &&
		     !memcmp(mix, "mid", 3),
	     "the middle write reads back");
	close(fd);

	fd = open(P(d, "sixtyfour"), O_RDWR | O_CREAT, 0644);
	H_SYS(fd, "create sixtyfour");
	H_EQ(h_pwrite_all(fd, buf, n, (off_t)(64 * GiB - MiB)), 0,
	     "write 1 MiB at 64 GiB - 1 MiB");
	H_OK(fstat(fd, &st) == 0 && st.st_size == (off_t)(64 * GiB),
	     "size exactly 64 GiB (got %lld)", (long long)st.st_size);
	H_OK((uint64_t)st.st_blocks * 512 <= MiB + 16 * 4096,
	     "st_blocks small: %lld sectors", (long long)st.st_blocks);
	H_OK(pread(fd, back, n, (off_t)(64 * GiB - MiB)) == (ssize_t)n &&
		     !memcmp(back, buf, n),
	     "the last MiB reads back");
	H_OK(read_zeros(fd, 32 * GiB, MiB), "1 MiB at 32 GiB reads zeros");
	H_OK(read_zeros(fd, 64 * GiB - 2 * MiB, MiB),
	     "the MiB before the data reads zeros");
	close(fd);

	H_SYS(unlink(P(d, "ten")), "unlink ten");
	H_SYS(unlink(P(d, "sixtyfour")), "unlink sixtyfour");
	H_EQ(wait_bfree(b0), b0, "every data and indirect block freed");
	g_free(buf);
	g_free(back);
}

static void t_truncate(void)
{
	const char *d = "truncate";
	size_t n = 100 * KiB;
	char *buf = g_malloc(n), *back = g_malloc(300 * KiB);
	fsblkcnt_t b0;
	struct stat st;
	int fd;

	case_dir(d);
	fill_pattern(buf, n, 11);
	sync();
	b0 = wait_bfree(bfree());
	h_write_file(P(d, "f"), buf, n, 0644);
	H_SYS(truncate(P(d, "f"), 10000), "truncate 100 KiB -> 10000");
	H_OK(stat(P(d, "f"), &st) == 0 && st.st_size == 10000, "size 10000");
	H_OK(file_is(P(d, "f"), buf, 10000), "first 10000 bytes kept");
	H_SYS(truncate(P(d, "f"), 200 * KiB), "truncate up to 200 KiB");
	fd = open(P(d, "f"), O_RDWR);
	H_OK(pread(fd, back, 300 * KiB, 0) == (ssize_t)(200 * KiB),
	     "reads 200 KiB");
	H_OK(!memcmp(back, buf, 10000), "head intact");
	H_OK(all_zero(back + 10000, 200 * KiB - 10000),
	     "old bytes beyond the shrink point read as zero after grow");
	/* shrink inside a block, grow inside the same block */
	H_EQ(pwrite(fd, buf, 4096, 0), 4096, "rewrite block 0");
	H_SYS(ftruncate(fd, 1000), "ftruncate 1000");
	H_SYS(ftruncate(fd, 4096), "ftruncate 4096");
	H_OK(pread(fd, back, 4096, 0) == 4096 && !memcmp(back, buf, 1000) &&
		     all_zero(back + 1000, 3096),
	     "tail of the partial block zeroed");
	/* extend by writing past EOF */
	H_SYS(ftruncate(fd, 100), "ftruncate 100");
	H_EQ(pwrite(fd, "Z", 1, 50000), 1, "write at 50000");
	H_OK(pread(fd, back, 50001, 0) == 50001 && !memcmp(back, buf, 100) &&
		     all_zero(back + 100, 49900) && back[50000] == 'Z',
	     "gap written past EOF reads zeros");
	/* to zero */
	H_SYS(ftruncate(fd, 0), "ftruncate 0");
	H_OK(fstat(fd, &st) == 0 && st.st_size == 0 && st.st_blocks == 0,
	     "size 0 and no blocks (st_blocks %lld)", (long long)st.st_blocks);
	/* big grow: no allocation */
	H_SYS(ftruncate(fd, (off_t)GiB), "ftruncate 1 GiB");
	H_OK(fstat(fd, &st) == 0 && st.st_size == (off_t)GiB &&
		     st.st_blocks == 0,
	     "1 GiB, still no blocks");
	H_OK(read_zeros(fd, GiB - 4096, 4096), "its end reads zeros");
	close(fd);
	H_SYS(truncate(P(d, "f"), 0), "truncate 0");
	/* O_TRUNC on a file with indirect blocks */
	h_write_file(P(d, "g"), buf, n, 0644);
	fd = open(P(d, "g"), O_WRONLY | O_TRUNC);
	H_OK(fd >= 0 && fstat(fd, &st) == 0 && st.st_size == 0,
	     "O_TRUNC empties it");
	close(fd);
	H_SYS(unlink(P(d, "g")), "unlink g");
	H_SYS(unlink(P(d, "f")), "unlink f");
	H_EQ(wait_bfree(b0), b0, "all blocks back after truncates");
	H_ERR(truncate(P(d, ""), 0), EISDIR, "truncate of a directory");
	/* one file kept for the remount check */
	h_write_file(P(d, "kept"), buf, 12345, 0600);
	H_SYS(truncate(P(d, "kept"), 70000), "grow kept to 70000");
	g_free(buf);
	g_free(back);
}

static void t_append(void)
{
	const char *d = "append";
	char a[1000], back[2100];
	struct stat st;
	int fa, fw;

	case_dir(d);
	memset(a, 'A', sizeof(a));
	fa = open(P(d, "log"), O_WRONLY | O_CREAT | O_APPEND, 0644);
	fw = open(P(d, "log"), O_RDWR);
	H_OK(fa >= 0 && fw >= 0, "two descriptors");
	H_EQ(write(fa, a, 1000), 1000, "append 1000 A");
	H_EQ(pwrite(fw, "BBBBBBBBBB", 10, 0), 10, "overwrite 10 B at 0");
	H_EQ(write(fa, "CC", 2), 2, "append CC");
	H_EQ(lseek(fa, 0, SEEK_CUR), 1002, "offset after append is EOF");
	H_EQ(lseek(fa, 0, SEEK_SET), 0, "seek the append fd to 0");
	H_EQ(write(fa, "DD", 2), 2, "write after seek still appends");
	H_OK(fstat(fw, &st) == 0 && st.st_size == 1004, "size 1004");
	H_OK(pread(fw, back, sizeof(back), 0) == 1004 &&
		     !memcmp(back, "BBBBBBBBBB", 10) &&
		     !memcmp(back + 10, a, 990) &&
		     !memcmp(back + 1000, "CCDD", 4),
	     "content B*10 A*990 CC DD");
	close(fa);
	close(fw);
}

static void t_enotempty(void)
{
	const char *d = "rmdir";
	struct stat st;

	case_dir(d);
	mkdir(P(d, "d"), 0755);
	h_write_file(P(d, "d/f"), "", 0, 0644);
	H_ERR(rmdir(P(d, "d")), ENOTEMPTY, "rmdir with a file inside");
	H_SYS(unlink(P(d, "d/f")), "unlink the file");
	mkdir(P(d, "d/sub"), 0755);
	H_ERR(rmdir(P(d, "d")), ENOTEMPTY, "rmdir with a subdir inside");
	H_SYS(symlink("x", P(d, "d/sub/l")), "symlink in sub");
	H_ERR(rmdir(P(d, "d/sub")), ENOTEMPTY, "rmdir with a symlink inside");
	H_SYS(unlink(P(d, "d/sub/l")), "unlink the symlink");
	H_SYS(rmdir(P(d, "d/sub")), "rmdir the emptied sub");
	H_SYS(rmdir(P(d, "d")), "rmdir the emptied dir");
	H_ERR(stat(P(d, "d"), &st), ENOENT, "gone");
	h_write_file(P(d, "file"), "", 0, 0644);
	mkdir(P(d, "dir"), 0755);
	H_ERR(rmdir(P(d, "file")), ENOTDIR, "rmdir of a file");
	H_ERR(unlink(P(d, "dir")), EISDIR, "unlink of a directory");
	H_ERR(rmdir(P(d, "none")), ENOENT, "rmdir of a missing name");
	H_ERR(unlink(P(d, "none")), ENOENT, "unlink of a missing name");
	H_ERR(mkdir(P(d, "file"), 0755), EEXIST, "mkdir over a file");
	H_ERR(open(P(d, "file"), O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST,
	      "O_EXCL on an existing file");
	H_ERR(open(P(d, "file/x"), O_RDONLY), ENOTDIR, "file used as a dir");
}

/* Is `name` in directory `dir` exactly once, with d_type t? */
static int count_in_dir(const char *dir, const char *name, unsigned char *t)
{
	DIR *dd = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!dd)
		return -1;
	while ((de = readdir(dd)) != NULL)
		if (!strcmp(de->d_name, name)) {
			n++;
			*t = de->d_type;
		}
	closedir(dd);
	return n;
}

static void t_names(void)
{
	const char *d = "names";
	char n255[256], n256[257], bytes[256];
	char p[PATH_MAX + 300];
	unsigned char t = 0;
	struct stat st;
	int k = 0;

	case_dir(d);
	memset(n255, 'n', 255);
	n255[255] = '\0';
	memset(n256, 'm', 256);
	n256[256] = '\0';
	H_SYS(h_write_file(P(d, n255), "x", 1, 0644) == 0 ? 0 : -1,
	      "create a 255-byte name");
	H_OK(stat(P(d, n255), &st) == 0 && st.st_size == 1,
	     "stat the 255-byte name");
	H_EQ(count_in_dir(P(d, ""), n255, &t), 1,
	     "readdir lists the 255-byte name once");
	H_EQ(t, DT_REG, "with d_type DT_REG");
	H_SYS(mkdir(P(d, "dir255"), 0755), "mkdir dir255");
	snprintf(p, sizeof(p), "dir255/%s", n255);
	H_SYS(mkdir(P(d, p), 0755), "mkdir with a 255-byte name");
	H_ERR(open(P(d, n256), O_CREAT | O_WRONLY, 0644), ENAMETOOLONG,
	      "create with a 256-byte name");
	H_ERR(mkdir(P(d, n256), 0755), ENAMETOOLONG,
	      "mkdir with a 256-byte name");
	H_ERR(symlink("t", P(d, n256)), ENAMETOOLONG,
	      "symlink with a 256-byte name");
	H_ERR(link(P(d, n255), P(d, n256)), ENAMETOOLONG,
	      "link to a 256-byte name");
	H_ERR(rename(P(d, n255), P(d, n256)), ENAMETOOLONG,
	      "rename to a 256-byte name");
	H_ERR(stat(P(d, n256), &st), ENAMETOOLONG,
	      "stat of a 256-byte name");
	/* every byte value but NUL and '/' */
	for (int c = 1; c < 256; c++)
		if (c != '/')
			bytes[k++] = (char)c;
	bytes[k] = '\0';
	H_EQ(k, 254, "254-byte name of all byte values");
	H_SYS(h_write_file(P(d, bytes), "y", 1, 0644) == 0 ? 0 : -1,
	      "create the all-bytes name");
	H_EQ(count_in_dir(P(d, ""), bytes, &t), 1,
	     "readdir returns the all-bytes name intact");
	H_SYS(rename(P(d, n255), P(d, "short")), "rename 255 -> short");
	H_OK(count_in_dir(P(d, ""), n255, &t) == 0, "old long name gone");
}

static void t_symlinks(void)
{
	const char *d = "symlinks";
	static const size_t lens[] = {1, 59, 60, 61, 200, 1000, 4095};
	char target[4097], back[4200], name[32];
	struct stat st;
	unsigned char t = 0;

	case_dir(d);
	for (size_t i = 0; i < G_N_ELEMENTS(lens); i++) {
		size_t n = lens[i];
		ssize_t got;

		for (size_t j = 0; j < n; j++)
			target[j] = (char)('a' + (j * 7 + i) % 26);
		for (size_t j = 9; j < n; j += 10)
			target[j] = '/';
		target[n] = '\0';
		snprintf(name, sizeof(name), "l%zu", n);
		if (!H_SYS(symlink(target, P(d, name)),
			   "symlink with a %zu-byte target (%s)", n,
			   n < 60 ? "fast" : "slow"))
			continue;
		got = readlink(P(d, name), back, sizeof(back));
		H_OK(got == (ssize_t)n && !memcmp(back, target, n),
		     "readlink returns the %zu bytes", n);
		H_OK(lstat(P(d, name), &st) == 0 && S_ISLNK(st.st_mode) &&
			     st.st_size == (off_t)n,
		     "lstat: a symlink of size %zu", n);
	}
	memset(target, 'q', 4096);
	target[4096] = '\0';
	H_ERR(symlink(target, P(d, "toolong")), ENAMETOOLONG,
	      "4096-byte target refused");
	h_write_file(P(d, "real"), "contents", 8, 0644);
	H_SYS(symlink("real", P(d, "toreal")), "symlink to a file");
	H_OK(file_is(P(d, "toreal"), "contents", 8), "open follows it");
	H_OK(stat(P(d, "toreal"), &st) == 0 && S_ISREG(st.st_mode),
	     "stat follows it");
	H_SYS(symlink("../symlinks/real", P(d, "rel")), "relative with ..");
	H_OK(file_is(P(d, "rel"), "contents", 8), "which resolves");
	H_SYS(symlink("nowhere", P(d, "dangling")), "dangling symlink");
	H_ERR(stat(P(d, "dangling"), &st), ENOENT, "stat of it: ENOENT");
	H_OK(lstat(P(d, "dangling"), &st) == 0, "lstat of it works");
	H_ERR(symlink("x", P(d, "real")), EEXIST, "symlink over a name");
	H_EQ(count_in_dir(P(d, ""), "l61", &t), 1, "readdir lists l61");
	H_EQ(t, DT_LNK, "with d_type DT_LNK");
	H_SYS(unlink(P(d, "l4095")), "unlink a slow symlink");
	H_SYS(unlink(P(d, "l1")), "unlink a fast symlink");
}

static void t_attrs(void)
{
	const char *d = "attrs";
	struct timespec ts[2];
	struct stat st;
	time_t now;

	case_dir(d);
	h_write_file(P(d, "f"), "abc", 3, 0644);
	H_SYS(chmod(P(d, "f"), 0640), "chmod 0640");
	H_OK(stat(P(d, "f"), &st) == 0 && (st.st_mode & 07777) == 0640 &&
		     S_ISREG(st.st_mode),
	     "mode reads back 0640 (got %o)", st.st_mode);
	H_SYS(chmod(P(d, "f"), 04755), "chmod 04755");
	H_OK(stat(P(d, "f"), &st) == 0 && (st.st_mode & 07777) == 04755,
	     "setuid bit kept (got %o)", st.st_mode);
	mkdir(P(d, "dir"), 0700);
	H_SYS(chmod(P(d, "dir"), 01777), "chmod dir 01777");
	H_OK(stat(P(d, "dir"), &st) == 0 && S_ISDIR(st.st_mode) &&
		     (st.st_mode & 07777) == 01777,
	     "sticky dir mode (got %o)", st.st_mode);
	H_SYS(chown(P(d, "f"), 1234, 5678), "chown 1234:5678");
	H_OK(stat(P(d, "f"), &st) == 0 && st.st_uid == 1234 &&
		     st.st_gid == 5678,
	     "owner reads back (%u:%u)", st.st_uid, st.st_gid);
	H_SYS(chown(P(d, "f"), (uid_t)-1, 42), "chown -1:42");
	H_OK(stat(P(d, "f"), &st) == 0 && st.st_uid == 1234 &&
		     st.st_gid == 42,
	     "only the group changed");
	H_SYS(chown(P(d, "f"), 70000, 70001), "chown to ids above 16 bits");
	H_OK(stat(P(d, "f"), &st) == 0 && st.st_uid == 70000 &&
		     st.st_gid == 70001,
	     "32-bit ids read back (%u:%u)", st.st_uid, st.st_gid);
	H_SYS(symlink("f", P(d, "l")), "symlink l");
	H_SYS(lchown(P(d, "l"), 99, 98), "lchown the symlink");
	H_OK(lstat(P(d, "l"), &st) == 0 && st.st_uid == 99 &&
		     st.st_gid == 98,
	     "symlink owner changed");
	H_OK(stat(P(d, "f"), &st) == 0 && st.st_uid == 70000,
	     "target owner untouched");

	ts[0].tv_sec = 1000000000;
	ts[0].tv_nsec = 123456789;
	ts[1].tv_sec = 1500000000;
	ts[1].tv_nsec = 987654321;
	H_SYS(utimensat(AT_FDCWD, P(d, "f"), ts, 0), "utimensat explicit");
	H_OK(stat(P(d, "f"), &st) == 0 &&
		     st.st_atim.tv_sec == ts[0].tv_sec &&
		     st.st_mtim.tv_sec == ts[1].tv_sec,
	     "atime/mtime seconds read back (%lld %lld)",
	     (long long)st.st_atim.tv_sec, (long long)st.st_mtim.tv_sec);
	H_OK((st.st_mtim.tv_nsec == ts[1].tv_nsec ||
	      st.st_mtim.tv_nsec == 0) &&
		     (st.st_atim.tv_nsec == ts[0].tv_nsec ||
		      st.st_atim.tv_nsec == 0),
	     "nanoseconds exact or dropped (got %ld %ld)",
	     st.st_atim.tv_nsec, st.st_mtim.tv_nsec);
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1].tv_nsec = UTIME_NOW;
	now = time(NULL);
	H_SYS(utimensat(AT_FDCWD, P(d, "f"), ts, 0), "utimensat OMIT/NOW");
	H_OK(stat(P(d, "f"), &st) == 0 &&
		     st.st_atim.tv_sec == 1000000000 &&
		     st.st_mtim.tv_sec >= now - 2 &&
		     st.st_mtim.tv_sec <= now + 2,
	     "atime kept, mtime now (%lld vs %lld)",
	     (long long)st.st_mtim.tv_sec, (long long)now);
	ts[0].tv_sec = 2000000000;
	ts[0].tv_nsec = 0;
	ts[1].tv_sec = 2100000000;
	ts[1].tv_nsec = 0;
	H_SYS(utimensat(AT_FDCWD, P(d, "l"), ts, AT_SYMLINK_NOFOLLOW),
	      "utimensat on the symlink itself");
	H_OK(lstat(P(d, "l"), &st) == 0 && st.st_mtim.tv_sec == 2100000000,
	     "symlink mtime set");
	/* a write moves mtime forward */
	ts[0].tv_sec = ts[1].tv_sec = 1000000000;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	utimensat(AT_FDCWD, P(d, "f"), ts, 0);
	h_write_file(P(d, "f"), "new", 3, 0);
	H_OK(stat(P(d, "f"), &st) == 0 && st.st_mtim.tv_sec >= now - 2,
	     "a write updates mtime");
	H_OK(mkfifo(P(d, "fifo"), 0600) == 0 && lstat(P(d, "fifo"), &st) == 0 &&
		     S_ISFIFO(st.st_mode) && (st.st_mode & 07777) == 0600,
	     "mkfifo");
	H_SYS(mkdir(P(d, "m750"), 0750), "mkdir 0750");
	H_OK(stat(P(d, "m750"), &st) == 0 && (st.st_mode & 07777) == 0750,
	     "mkdir mode kept");
	/* fixed times for the remount comparison */
	ts[0].tv_sec = 1111111111;
	ts[1].tv_sec = 1222222222;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	H_SYS(utimensat(AT_FDCWD, P(d, "f"), ts, 0), "utimensat fixed");
}

static void t_xattrs(void)
{
	const char *d = "xattrs";
	char buf[8192], big[3000];
	ssize_t n;
	int set_ok = 0, rc = 0, err = 0;

	case_dir(d);
	h_write_file(P(d, "f"), "x", 1, 0644);
	H_SYS(setxattr(P(d, "f"), "user.a", "hello", 5, 0), "set user.a");
	H_EQ(getxattr(P(d, "f"), "user.a", NULL, 0), 5, "size query");
	n = getxattr(P(d, "f"), "user.a", buf, sizeof(buf));
	H_OK(n == 5 && !memcmp(buf, "hello", 5), "get user.a");
	H_ERR(getxattr(P(d, "f"), "user.a", buf, 2), ERANGE,
	      "buffer too small");
	H_ERR(getxattr(P(d, "f"), "user.none", buf, sizeof(buf)), ENODATA,
	      "missing attribute");
	H_ERR(setxattr(P(d, "f"), "user.a", "x", 1, XATTR_CREATE), EEXIST,
	      "XATTR_CREATE on an existing name");
	H_ERR(setxattr(P(d, "f"), "user.b", "x", 1, XATTR_REPLACE), ENODATA,
	      "XATTR_REPLACE on a missing name");
	memset(big, 'v', sizeof(big));
	H_SYS(setxattr(P(d, "f"), "user.big", big, 1000, XATTR_CREATE),
	      "set a 1000-byte value");
	H_SYS(setxattr(P(d, "f"), "user.empty", "", 0, 0), "set an empty "
							   "value");
	H_EQ(getxattr(P(d, "f"), "user.empty", buf, sizeof(buf)), 0,
	     "empty value reads back empty");
	n = listxattr(P(d, "f"), buf, sizeof(buf));
	H_OK(n == (ssize_t)sizeof("user.a\0user.big\0user.empty") ||
		     n == (ssize_t)(sizeof("user.a") + sizeof("user.big") +
				    sizeof("user.empty")),
	     "listxattr length %zd", n);
	{
		bool a = false, b = false, e = false;

		for (ssize_t i = 0; n > 0 && i < n; i += strlen(buf + i) + 1) {
			a |= !strcmp(buf + i, "user.a");
			b |= !strcmp(buf + i, "user.big");
			e |= !strcmp(buf + i, "user.empty");
		}
		H_OK(a && b && e, "listxattr names all three");
	}
	H_EQ(listxattr(P(d, "f"), NULL, 0), n, "listxattr size query");
	H_SYS(setxattr(P(d, "f"), "user.a", big, 2000, XATTR_REPLACE),
	      "replace user.a with 2000 bytes");
	n = getxattr(P(d, "f"), "user.a", buf, sizeof(buf));
	H_OK(n == 2000 && !memcmp(buf, big, 2000), "new value reads back");
	H_SYS(removexattr(P(d, "f"), "user.a"), "remove user.a");
	H_ERR(getxattr(P(d, "f"), "user.a", buf, sizeof(buf)), ENODATA,
	      "removed attribute: ENODATA");
	H_ERR(removexattr(P(d, "f"), "user.a"), ENODATA,
	      "remove it again: ENODATA");
	H_SYS(setxattr(P(d, "f"), "trusted.t", "x", 1, 0),
	      "trusted.* is stored (root)");
	H_OK(getxattr(P(d, "f"), "trusted.t", buf, sizeof(buf)) == 1 &&
		 buf[0] == 'x',
	     "trusted.t reads back");
	H_SYS(removexattr(P(d, "f"), "trusted.t"), "remove trusted.t");
	H_ERR(setxattr(P(d, "f"), "other.t", "x", 1, 0), EOPNOTSUPP,
	      "an unknown namespace is refused");
	/* a value larger than a block cannot be stored (no ea_inode) */
	{
		char *huge = g_malloc0(5000);

		rc = setxattr(P(d, "f"), "user.huge", huge, 5000, 0);
		err = errno;
		H_OK(rc == -1 && err == ENOSPC,
		     "a 5000-byte value is refused with ENOSPC, as by ext4 "
		     "(%s)",
		     rc == 0 ? "succeeded" : strerrorname_np(err));
		g_free(huge);
	}
	H_ERR(getxattr(P(d, "f"), "user.huge", buf, sizeof(buf)), ENODATA,
	      "and leaves nothing behind");
	/* more than a block's worth of small ones */
	err = 0;
	memset(big, 'w', sizeof(big));
	for (int i = 0; i < 64; i++) {
		char nm[32];

		snprintf(nm, sizeof(nm), "user.fill%02d", i);
		if (setxattr(P(d, "f"), nm, big, 200, 0) < 0) {
			err = errno;
			break;
		}
		set_ok++;
	}
	H_OK(set_ok < 64 && err == ENOSPC,
	     "filling the xattr block ends in ENOSPC (%d set, %s)", set_ok,
	     strerrorname_np(err));
	H_SYS(removexattr(P(d, "f"), "user.fill00"), "remove one");
	H_SYS(setxattr(P(d, "f"), "user.again", big, 100, 0),
	      "then a set fits again");
	/* xattrs on a directory and via a hard link */
	mkdir(P(d, "dir"), 0755);
	H_SYS(setxattr(P(d, "dir"), "user.d", "dirval", 6, 0),
	      "set on a directory");
	n = getxattr(P(d, "dir"), "user.d", buf, sizeof(buf));
	H_OK(n == 6 && !memcmp(buf, "dirval", 6), "get on a directory");
	h_write_file(P(d, "g"), "y", 1, 0644);
	H_SYS(setxattr(P(d, "g"), "user.k", "v1", 2, 0), "set on g");
	H_SYS(link(P(d, "g"), P(d, "g2")), "link g g2");
	n = getxattr(P(d, "g2"), "user.k", buf, sizeof(buf));
	H_OK(n == 2 && !memcmp(buf, "v1", 2), "visible via the hard link");
	/* two files with identical attributes (ext2 may share the block) */
	h_write_file(P(d, "h"), "z", 1, 0644);
	H_SYS(setxattr(P(d, "h"), "user.k", "v1", 2, 0), "same on h");
	H_SYS(unlink(P(d, "g")), "unlink g (g2 keeps the attributes)");
}

static void t_renameat2(void)
{
	const char *d = "rename2";
	struct stat st, pa, pb, dd;

	case_dir(d);
	h_write_file(P(d, "a"), "AAA", 3, 0644);
	h_write_file(P(d, "b"), "BB", 2, 0644);
	H_ERR(renameat2_(P(d, "a"), P(d, "b"), RENAME_NOREPLACE), EEXIST,
	      "NOREPLACE onto an existing name");
	H_OK(file_is(P(d, "a"), "AAA", 3) && file_is(P(d, "b"), "BB", 2),
	     "both unchanged");
	H_SYS(renameat2_(P(d, "a"), P(d, "c"), RENAME_NOREPLACE),
	      "NOREPLACE onto a free name");
	H_OK(file_is(P(d, "c"), "AAA", 3) && stat(P(d, "a"), &st) < 0,
	     "moved");
	H_SYS(renameat2_(P(d, "b"), P(d, "c"), RENAME_EXCHANGE),
	      "EXCHANGE two files");
	H_OK(file_is(P(d, "b"), "AAA", 3) && file_is(P(d, "c"), "BB", 2),
	     "contents swapped");
	H_ERR(renameat2_(P(d, "b"), P(d, "missing"), RENAME_EXCHANGE), ENOENT,
	      "EXCHANGE with a missing name");
	H_ERR(renameat2_(P(d, "b"), P(d, "c"),
			 RENAME_EXCHANGE | RENAME_NOREPLACE),
	      EINVAL, "EXCHANGE|NOREPLACE");
	/* exchange a directory with a file across parents */
	mkdir(P(d, "pa"), 0755);
	mkdir(P(d, "pb"), 0755);
	mkdir(P(d, "pa/dir"), 0755);
	h_write_file(P(d, "pa/dir/inner"), "in", 2, 0644);
	h_write_file(P(d, "pb/file"), "FF", 2, 0644);
	H_SYS(renameat2_(P(d, "pa/dir"), P(d, "pb/file"), RENAME_EXCHANGE),
	      "EXCHANGE a dir and a file in other parents");
	H_OK(lstat(P(d, "pa/dir"), &st) == 0 && S_ISREG(st.st_mode) &&
		     file_is(P(d, "pa/dir"), "FF", 2),
	     "pa/dir is now the file");
	H_OK(lstat(P(d, "pb/file"), &st) == 0 && S_ISDIR(st.st_mode) &&
		     file_is(P(d, "pb/file/inner"), "in", 2),
	     "pb/file is now the directory");
	stat(P(d, "pa"), &pa);
	stat(P(d, "pb"), &pb);
	H_OK(stat(P(d, "pb/file/.."), &dd) == 0 && dd.st_ino == pb.st_ino,
	     "the moved dir's .. is its new parent");
	H_EQ(pa.st_nlink, 2, "old parent lost a subdir link");
	H_EQ(pb.st_nlink, 3, "new parent gained one");
	/* exchange two directories */
	mkdir(P(d, "pa/x"), 0755);
	H_SYS(renameat2_(P(d, "pa/x"), P(d, "pb/file"), RENAME_EXCHANGE),
	      "EXCHANGE two directories");
	H_OK(stat(P(d, "pa/x/inner"), &st) == 0, "contents moved with them");
	H_OK(stat(P(d, "pa/x/.."), &dd) == 0 && dd.st_ino == pa.st_ino &&
		     stat(P(d, "pb/file/.."), &dd) == 0 &&
		     dd.st_ino == pb.st_ino,
	     "both .. entries right");
}

static void t_dirlinks(void)
{
	const char *d = "dirlinks";
	struct stat p, a, b, dd;

	case_dir(d);
	H_OK(stat(P(d, ""), &p) == 0 && p.st_nlink == 2, "new dir nlink 2");
	H_SYS(mkdir(P(d, "a"), 0755), "mkdir a");
	stat(P(d, ""), &p);
	stat(P(d, "a"), &a);
	H_EQ(p.st_nlink, 3, "parent nlink 3");
	H_EQ(a.st_nlink, 2, "a nlink 2");
	H_SYS(mkdir(P(d, "a/b"), 0755), "mkdir a/b");
	stat(P(d, "a"), &a);
	H_EQ(a.st_nlink, 3, "a nlink 3");
	h_write_file(P(d, "a/file"), "", 0, 0644);
	stat(P(d, "a"), &a);
	H_EQ(a.st_nlink, 3, "a file does not count");
	H_SYS(rename(P(d, "a/b"), P(d, "b")), "move a/b up");
	stat(P(d, ""), &p);
	stat(P(d, "a"), &a);
	stat(P(d, "b"), &b);
	H_EQ(a.st_nlink, 2, "a nlink back to 2");
	H_EQ(p.st_nlink, 4, "parent nlink 4");
	H_OK(stat(P(d, "b/.."), &dd) == 0 && dd.st_ino == p.st_ino,
	     "b/.. is the parent");
	H_SYS(rmdir(P(d, "b")), "rmdir b");
	stat(P(d, ""), &p);
	H_EQ(p.st_nlink, 3, "parent nlink 3 after rmdir");
	H_SYS(rename(P(d, "a"), P(d, "a2")), "rename a in place");
	stat(P(d, ""), &p);
	H_EQ(p.st_nlink, 3, "in-place rename keeps the count");
}

/* ------------------------------------------------------------------ */

struct probe {
	const char *rel;
	const char *xattr;
	const char *value;
	time_t mtime;
};

static void check_probes(const char *when)
{
	static const struct probe probes[] = {
		{"xattrs/g2", "user.k", "v1", 0},
		{"xattrs/dir", "user.d", "dirval", 0},
		{"attrs/f", NULL, NULL, 1222222222},
	};
	char buf[64];

	for (size_t i = 0; i < G_N_ELEMENTS(probes); i++) {
		const struct probe *p = &probes[i];
		char *path = g_build_filename(mnt, p->rel, NULL);

		if (p->xattr) {
			ssize_t n = getxattr(path, p->xattr, buf, sizeof(buf));

			H_OK(n == (ssize_t)strlen(p->value) &&
				     !memcmp(buf, p->value, (size_t)n),
			     "%s: %s %s", when, p->rel, p->xattr);
		} else {
			struct stat st;

			H_OK(stat(path, &st) == 0 &&
				     st.st_mtim.tv_sec == p->mtime,
			     "%s: %s mtime", when, p->rel);
		}
		g_free(path);
	}
}

/*
 * O_DIRECT and buffered descriptors on one file see each other's bytes:
 * a direct read after a buffered write (still dirty in the daemon's
 * cache), a buffered read after a direct write; direct requests off the
 * 512-byte grid get EINVAL as on ext4, also after fcntl(F_SETFL, O_DIRECT).
 */
static void t_direct(void)
{
	const char *d = "direct";
	size_t n = 1 << 20;
	uint8_t *a = aligned_alloc(4096, n), *b = aligned_alloc(4096, n);
	uint8_t *back = aligned_alloc(4096, n);
	int fb, fd;

	case_dir(d);
	fill_pattern(a, n, 11);
	fill_pattern(b, n, 12);
	fb = open(P(d, "f"), O_RDWR | O_CREAT, 0644);
	fd = open(P(d, "f"), O_RDWR | O_DIRECT);
	H_OK(fb >= 0 && fd >= 0, "a buffered and an O_DIRECT descriptor");
	if (fb < 0 || fd < 0)
		goto out;
	H_EQ(pwrite(fb, a, n, 0), (ssize_t)n, "buffered write of 1 MiB");
	H_OK(pread(fd, back, n, 0) == (ssize_t)n && !memcmp(back, a, n),
	     "O_DIRECT read sees the buffered bytes");
	H_EQ(pwrite(fd, b, 256 * KiB, 512 * KiB), (ssize_t)(256 * KiB),
	     "O_DIRECT write of 256 KiB in the middle");
	memcpy(a + 512 * KiB, b, 256 * KiB);
	H_OK(pread(fb, back, n, 0) == (ssize_t)n && !memcmp(back, a, n),
	     "buffered read sees the direct bytes");
	H_OK(pread(fd, back, n, 0) == (ssize_t)n && !memcmp(back, a, n),
	     "O_DIRECT read sees them too");
	/* ext4's rule: offset and length in 512-byte units */
	errno = 0;
	H_OK(pread(fd, back, 10000, 3000) < 0 && errno == EINVAL,
	     "O_DIRECT read at an unaligned offset: EINVAL");
	errno = 0;
	H_OK(pread(fd, back, 1000, 4096) < 0 && errno == EINVAL,
	     "O_DIRECT read of an unaligned length: EINVAL");
	errno = 0;
	H_OK(pwrite(fd, b, 512, 700) < 0 && errno == EINVAL,
	     "O_DIRECT write at an unaligned offset: EINVAL");
	H_OK(pread(fd, back, 4096, n) == 0,
	     "O_DIRECT read at the end of the file: 0, unchecked");
	H_OK(pread(fd, back, 1536, 512) == 1536 && !memcmp(back, a + 512, 1536),
	     "O_DIRECT read on the 512-byte grid");
	/* O_DIRECT set and cleared after open counts for each request */
	H_OK(fcntl(fb, F_SETFL, O_DIRECT) == 0, "fcntl(F_SETFL, O_DIRECT)");
	errno = 0;
	H_OK(pread(fb, back, 10, 3) < 0 && errno == EINVAL,
	     "unaligned read after F_SETFL O_DIRECT: EINVAL");
	H_OK(fcntl(fb, F_SETFL, 0) == 0, "fcntl(F_SETFL, 0)");
	H_OK(pread(fb, back, 10, 3) == 10 && !memcmp(back, a + 3, 10),
	     "unaligned read once O_DIRECT is cleared");
out:
	if (fb >= 0)
		close(fb);
	if (fd >= 0)
		close(fd);
	free(a);
	free(b);
	free(back);
}

int main(int argc, char **argv)
{
	char *img, *mntp;
	GPtrArray *before, *after;
	double t0;

	h_init(argc, argv);
	umask(0);
	img = h_path("fs.img");
	mntp = h_path("mnt");
	mnt = mntp;
	t0 = h_now();
	if (h_mkfs(img, "256M", NULL) != 0)
		h_bail("simfs mkfs failed");
	if (h_mount(img, mnt, NULL) != 0)
		h_bail("simfs mount failed");

	t_statvfs();
	t_rename_over();
	t_unlink_open();
	t_hardlinks();
	t_sparse();
	t_truncate();
	t_append();
	t_enotempty();
	t_names();
	t_symlinks();
	t_attrs();
	t_xattrs();
	t_renameat2();
	t_dirlinks();
	t_direct();

	h_diag("--- persistence of all of the above");
	check_probes("mounted");
	before = h_tree_scan(mnt);
	H_OK(before != NULL, "scan the tree (%u entries)",
	     before ? before->len : 0);
	H_OK(h_umount(mnt) == 0, "umount");
	H_OK(h_fsck_clean(img, NULL), "e2fsck -fn clean");
	if (h_mount(img, mnt, NULL) != 0)
		h_bail("remount failed");
	after = h_tree_scan(mnt);
	H_EQ(h_tree_compare(before, after, "before", "after remount",
			    H_CMP_NLINK | H_CMP_OWNER),
	     0, "the same tree after remount");
	check_probes("remounted");
	H_OK(h_umount(mnt) == 0, "umount again");
	H_OK(h_fsck_clean(img, NULL), "e2fsck -fn still clean");
	h_tree_free(before);
	h_tree_free(after);
	h_diag("t_syscalls took %.1f s", h_now() - t0);
	g_free(img);
	g_free(mntp);
	return h_done();
}
