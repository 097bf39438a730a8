/*
 * t_bigdir.c - one directory of 20,000 entries through a FUSE mount.
 *
 * Create them all (files, with some directories and symlinks mixed in),
 * readdir returns each exactly once with the right d_type, stat each, then
 * umount + e2fsck clean + remount and the listing is the same; then delete
 * everything while reading the directory (as `rm -r` does: the readdir
 * cookies must stay valid while entries go), the directory ends empty and
 * rmdir works; umount, e2fsck clean.
 *
 * usage: t_bigdir SIMFS_BINARY [N]
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static int nent = 20000;

/* entry i: every 50th a directory, every 50th + 25 a symlink */
static char kind(int i)
{
	return i % 50 == 0 ? 'd' : i % 50 == 25 ? 'l' : 'f';
}

/* Names of varying length (up to ~40 bytes) so that blocks fill unevenly. */
static void name_of(int i, char *buf, size_t n)
{
	static const char pad[] = "_abcdefghijklmnopqrstuvwxyz0123456789";

	snprintf(buf, n, "%c%05d%.*s", kind(i), i, i % 37, pad);
}

static int parse_index(const char *name)
{
	char *end;
	long v;

	if (!name[0] || !name[1])
		return -1;
	v = strtol(name + 1, &end, 10);
	if (end != name + 6 || v < 0 || v >= nent)
		return -1;
	return (int)v;
}

/* readdir the whole directory; each name exactly once; d_type right. */
static bool list_once(const char *dir, const char *when)
{
	unsigned char *seen = g_malloc0((size_t)nent);
	DIR *d = opendir(dir);
	struct dirent *de;
	int dots = 0, bad = 0, dup = 0, badtype = 0, missing = 0;
	double t0 = h_now();

	if (!H_OK(d != NULL, "%s: opendir", when)) {
		g_free(seen);
		return false;
	}
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		int i;
		char want[64];
		unsigned char wt;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) {
			dots++;
			continue;
		}
		i = parse_index(de->d_name);
		if (i < 0) {
			if (bad++ < 5)
				h_diag("unexpected name '%s'", de->d_name);
			continue;
		}
		name_of(i, want, sizeof(want));
		if (strcmp(want, de->d_name)) {
			if (bad++ < 5)
				h_diag("unexpected name '%s'", de->d_name);
			continue;
		}
		if (seen[i]++ == 1 && dup++ < 5)
			h_diag("'%s' listed twice", de->d_name);
		wt = kind(i) == 'd' ? DT_DIR : kind(i) == 'l' ? DT_LNK : DT_REG;
		if (de->d_type != wt && badtype++ < 5)
			h_diag("'%s' d_type %u, expected %u", de->d_name,
			       de->d_type, wt);
		errno = 0;
	}
	H_EQ(errno, 0, "%s: readdir ended without error", when);
	closedir(d);
	for (int i = 0; i < nent; i++)
		if (!seen[i] && missing++ < 5) {
			char nm[64];

			name_of(i, nm, sizeof(nm));
			h_diag("'%s' not listed", nm);
		}
	H_EQ(dots, 2, "%s: . and .. listed once each", when);
	H_EQ(bad, 0, "%s: no unexpected names", when);
	H_EQ(dup, 0, "%s: no name listed twice", when);
	H_EQ(missing, 0, "%s: every one of %d names listed", when, nent);
	H_EQ(badtype, 0, "%s: every d_type right", when);
	h_diag("%s: readdir of %d entries took %.2f s", when, nent,
	       h_now() - t0);
	g_free(seen);
	return !bad && !dup && !missing && !badtype;
}

int main(int argc, char **argv)
{
	char *img, *mnt, *dir;
	int fail = 0, statfail = 0, gone = 0, passes = 0;
	double t0;
	const char *mkfs_args[] = {"-i", "4096", NULL};
	struct stat st;

	h_init(argc, argv);
	if (argc > 2)
		nent = atoi(argv[2]);
	if (nent < 100 || nent > 99999)
		h_bail("N must be in 100..99999");
	umask(022);
	img = h_path("fs.img");
	mnt = h_path("mnt");
	dir = g_build_filename(mnt, "big", NULL);
	if (h_mkfs(img, "256M", mkfs_args) != 0)
		h_bail("simfs mkfs failed");
	if (h_mount(img, mnt, NULL) != 0)
		h_bail("simfs mount failed");
	H_SYS(mkdir(dir, 0755), "mkdir big");

	t0 = h_now();
	for (int i = 0; i < nent; i++) {
		char nm[64], *p;
		int rc;

		name_of(i, nm, sizeof(nm));
		p = g_build_filename(dir, nm, NULL);
		if (kind(i) == 'd') {
			rc = mkdir(p, 0755);
		} else if (kind(i) == 'l') {
			rc = symlink(nm, p);
		} else {
			rc = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
			if (rc >= 0) {
				if (i % 10 == 1 && write(rc, nm, strlen(nm)) !=
							   (ssize_t)strlen(nm))
					rc = -1;
				close(rc);
				rc = 0;
			}
		}
		if (rc < 0 && fail++ < 5)
			h_diag("create %s: %s", nm, strerror(errno));
		g_free(p);
	}
	H_EQ(fail, 0, "created %d entries", nent);
	h_diag("create took %.2f s", h_now() - t0);
	H_OK(stat(dir, &st) == 0 && st.st_nlink == 2 + (nlink_t)(nent + 49) / 50,
	     "big has nlink 2 + subdirs (%lu)", (unsigned long)st.st_nlink);

	list_once(dir, "mounted");

	t0 = h_now();
	for (int i = 0; i < nent; i++) {
		char nm[64], *p;
		bool ok;

		name_of(i, nm, sizeof(nm));
		p = g_build_filename(dir, nm, NULL);
		ok = lstat(p, &st) == 0;
		if (ok && kind(i) == 'd')
			ok = S_ISDIR(st.st_mode) && st.st_nlink == 2;
		else if (ok && kind(i) == 'l')
			ok = S_ISLNK(st.st_mode) && st.st_size == (off_t)strlen(nm);
		else if (ok)
			ok = S_ISREG(st.st_mode) &&
			     st.st_size == (i % 10 == 1 ? (off_t)strlen(nm) : 0);
		if (!ok && statfail++ < 5)
			h_diag("stat %s: wrong or failed (%s)", nm,
			       strerror(errno));
		g_free(p);
	}
	H_EQ(statfail, 0, "every entry stats right");
	h_diag("stat took %.2f s", h_now() - t0);

	H_OK(h_umount(mnt) == 0, "umount");
	H_OK(h_fsck_clean(img, NULL), "e2fsck -fn clean with %d entries", nent);
	if (h_mount(img, mnt, NULL) != 0)
		h_bail("remount failed");
	list_once(dir, "remounted");

	/* delete while listing, rm -r style: read a batch, unlink it, go on */
	t0 = h_now();
	for (;;) {
		DIR *d = opendir(dir);
		struct dirent *de;
		int n = 0;

		if (!d)
			break;
		passes++;
		while ((de = readdir(d)) != NULL) {
			char *p;
			int rc;

			if (!strcmp(de->d_name, ".") ||
			    !strcmp(de->d_name, ".."))
				continue;
			p = g_build_filename(dir, de->d_name, NULL);
			rc = de->d_type == DT_DIR ? rmdir(p) : unlink(p);
			if (rc == 0)
				gone++;
			else if (fail++ < 5)
				h_diag("remove %s: %s", de->d_name,
				       strerror(errno));
			g_free(p);
			n++;
		}
		closedir(d);
		if (n == 0 || passes > 3)
			break;
	}
	H_EQ(gone, nent, "every entry removed while reading the directory");
	H_OK(passes <= 2, "one readdir pass saw every entry (passes %d)",
	     passes);
	h_diag("unlink took %.2f s", h_now() - t0);
	H_SYS(rmdir(dir), "rmdir the emptied directory");
	H_OK(h_umount(mnt) == 0, "umount");
	H_OK(h_fsck_clean(img, NULL), "e2fsck -fn clean after deleting all");
	g_free(dir);
	g_free(img);
	g_free(mnt);
	return h_done();
}
