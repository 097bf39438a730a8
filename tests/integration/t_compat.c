/*
 * t_compat.c - what programs written for Linux ext4 ask of a filesystem,
 * checked through a real FUSE mount, once on a block-mapped image (the
 * default) and once on an extent-mapped one (preset=ext4):
 *
 *  - lseek SEEK_DATA / SEEK_HOLE on a sparse file: data runs and holes at
 *    block granularity, the implicit hole at end of file, ENXIO at or past
 *    EOF; on extents, an unwritten (fallocate KEEP_SIZE) range is a hole;
 *    right after the write (delayed blocks) and after fsync alike;
 *  - cp --sparse=always keeps the holes (st_blocks of the copy small) and
 *    the bytes;
 *  - privilege dropping: a write or truncate by uid 1001 clears setuid, and
 *    setgid when group-executable; root's write keeps them;
 *  - root may rmdir lost+found and make it again, as on ext4.
 * Each ends with umount + e2fsck -fn clean.
 *
 * usage: t_compat SIMFS_BINARY
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define KiB 1024
#define MiB (1024 * 1024)

/* data at [0, 64K) and [1M, 1M+64K); i_size 2M (a hole at the end) */
static void seek_checks(int fd, const char *tag)
{
	H_EQ(lseek(fd, 0, SEEK_DATA), 0, "%s: SEEK_DATA 0", tag);
	H_EQ(lseek(fd, 100, SEEK_DATA), 100, "%s: SEEK_DATA inside data", tag);
	H_EQ(lseek(fd, 0, SEEK_HOLE), 64 * KiB, "%s: SEEK_HOLE 0", tag);
	H_EQ(lseek(fd, 64 * KiB, SEEK_HOLE), 64 * KiB,
	     "%s: SEEK_HOLE in a hole", tag);
	H_EQ(lseek(fd, 64 * KiB, SEEK_DATA), MiB, "%s: SEEK_DATA over the hole",
	     tag);
	H_EQ(lseek(fd, MiB, SEEK_HOLE), MiB + 64 * KiB,
	     "%s: SEEK_HOLE after the second run", tag);
	H_ERR(lseek(fd, MiB + 64 * KiB, SEEK_DATA), ENXIO,
	      "%s: SEEK_DATA in the trailing hole", tag);
	H_EQ(lseek(fd, 2 * MiB - 1, SEEK_HOLE), 2 * MiB - 1,
	     "%s: SEEK_HOLE at the last byte", tag);
	H_ERR(lseek(fd, 2 * MiB, SEEK_DATA), ENXIO, "%s: SEEK_DATA at EOF",
	      tag);
	H_ERR(lseek(fd, 2 * MiB, SEEK_HOLE), ENXIO, "%s: SEEK_HOLE at EOF",
	      tag);
	H_ERR(lseek(fd, 3 * MiB, SEEK_HOLE), ENXIO, "%s: SEEK_HOLE past EOF",
	      tag);
}

static void seek_test(const char *mnt, bool extents, const char *tag)
{
	char *f = g_build_filename(mnt, "sparse", NULL);
	char *g = g_build_filename(mnt, "copy", NULL);
	uint8_t *buf = g_malloc(64 * KiB);
	struct stat st;
	char t[64];
	int fd, e1, e2;

	memset(buf, 0xa5, 64 * KiB);
	fd = open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (!H_SYS(fd, "%s: create sparse file", tag))
		goto out;
	H_SYS(h_pwrite_all(fd, buf, 64 * KiB, 0), "%s: write at 0", tag);
	H_SYS(h_pwrite_all(fd, buf, 64 * KiB, MiB), "%s: write at 1M", tag);
	H_SYS(ftruncate(fd, 2 * MiB), "%s: size 2M", tag);
	snprintf(t, sizeof(t), "%s, just written", tag);
	seek_checks(fd, t);
	H_SYS(fsync(fd), "%s: fsync", tag);
	snprintf(t, sizeof(t), "%s, after fsync", tag);
	seek_checks(fd, t);
	if (extents) {
		/* unwritten blocks read as zeros: a hole for SEEK_DATA */
		H_SYS(fallocate(fd, FALLOC_FL_KEEP_SIZE, 256 * KiB, 256 * KiB),
		      "%s: fallocate KEEP_SIZE [256K, 512K)", tag);
		H_EQ(lseek(fd, 64 * KiB, SEEK_DATA), MiB,
		     "%s: SEEK_DATA skips the unwritten range", tag);
		H_EQ(lseek(fd, 300 * KiB, SEEK_HOLE), 300 * KiB,
		     "%s: SEEK_HOLE inside the unwritten range", tag);
	}
	close(fd);
	if (H_EQ(h_runl(NULL, NULL, "cp", "--sparse=always", f, g, NULL), 0,
		 "%s: cp --sparse=always", tag)) {
		H_OK(h_hash_file(f, &e1) == h_hash_file(g, &e2) && !e1 && !e2,
		     "%s: the copy has the same bytes", tag);
		fd = open(g, O_RDONLY);
		if (fd >= 0) {
			fsync(fd); /* place delayed blocks: st_blocks counts */
			close(fd);
		}
		if (stat(g, &st) != 0)
			memset(&st, 0, sizeof(st));
		H_OK(st.st_size == 2 * MiB && st.st_blocks * 512 >= 128 * KiB &&
			 st.st_blocks * 512 < 512 * KiB,
		     "%s: the copy keeps the holes (%lld sectors)", tag,
		     (long long)st.st_blocks);
	}
out:
	g_free(buf);
	g_free(f);
	g_free(g);
}

/* In a child as uid/gid 1001 (no capabilities): append a byte through fd
 * (opened by the parent: the temp dir is private), or ftruncate it to 0.
 * Permission is checked at open; what the write does depends on who
 * writes.  Returns 0 if that worked. */
static int as_user(int fd, bool trunc)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(1001, 1001, 1001) ||
		    setresuid(1001, 1001, 1001))
			_exit(2);
		if (trunc)
			_exit(ftruncate(fd, 0) == 0 ? 0 : 3);
		_exit(write(fd, "u", 1) == 1 ? 0 : 4);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* mode after one write (or truncate) by an unprivileged process */
static mode_t mode_after(const char *mnt, const char *name, mode_t mode,
			 bool trunc, bool root)
{
	char *p = g_build_filename(mnt, name, NULL);
	struct stat st;
	mode_t got = (mode_t)-1;
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, "x", 1) != 1 || fchmod(fd, mode) != 0)
		goto out;
	close(fd);
	fd = open(p, O_WRONLY | O_APPEND);
	if (fd < 0)
		goto out;
	if (root ? write(fd, "r", 1) != 1 : as_user(fd, trunc) != 0)
		goto out;
	if (stat(p, &st) == 0)
		got = st.st_mode & 07777;
out:
	if (fd >= 0)
		close(fd);
	g_free(p);
	return got;
}

/* file_remove_privs: an unprivileged write or truncate clears setuid, and
 * setgid on a group-executable file; root's writes keep both. */
static void privs_test(const char *mnt, const char *tag)
{
	H_EQ(mode_after(mnt, "p1", 04777, false, false), 0777,
	     "%s: user write clears setuid", tag);
	H_EQ(mode_after(mnt, "p2", 02777, false, false), 0777,
	     "%s: user write clears setgid of a group-executable file", tag);
	H_EQ(mode_after(mnt, "p3", 02767, false, false), 02767,
	     "%s: user write keeps setgid without group exec (locking)", tag);
	H_EQ(mode_after(mnt, "p4", 06777, true, false), 0777,
	     "%s: user truncate clears setuid and setgid", tag);
	H_EQ(mode_after(mnt, "p5", 06777, false, true), 06777,
	     "%s: root's write keeps them (CAP_FSETID)", tag);
}

static void one_config(const char *preset)
{
	const char *extra[] = {"--preset", preset, NULL};
	char *img = h_path("%s.img", preset ? preset : "default");
	char *mnt = h_path("mnt-%s", preset ? preset : "default");
	/* allow_other: the unprivileged writer of privs_test */
	char *opts = preset ? g_strdup_printf("preset=%s,allow_other", preset)
			    : g_strdup("allow_other");
	const char *tag = preset ? preset : "blockmap";

	h_diag("--- %s", tag);
	if (h_mkfs(img, "64M", preset ? extra : NULL) != 0) {
		H_OK(false, "%s: mkfs", tag);
		goto out;
	}
	if (!H_OK(h_mount(img, mnt, opts) == 0, "%s: mount", tag))
		goto out;
	seek_test(mnt, preset != NULL, tag);
	privs_test(mnt, tag);
	{
		/* ext4 lets root remove lost+found (e2fsck makes a new one) */
		char *lf = g_build_filename(mnt, "lost+found", NULL);

		H_SYS(rmdir(lf), "%s: rmdir lost+found", tag);
		H_SYS(mkdir(lf, 0700), "%s: mkdir lost+found again", tag);
		g_free(lf);
	}
	H_OK(h_umount(mnt) == 0, "%s: umount", tag);
	H_OK(h_fsck_clean(img, NULL), "%s: e2fsck -fn clean", tag);
out:
	g_free(img);
	g_free(mnt);
	g_free(opts);
}

int main(int argc, char **argv)
{
	h_init(argc, argv);
	one_config(NULL);
	one_config("ext4");
	return h_done();
}
