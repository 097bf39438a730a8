/*
 * t_trace.c - recording a trace on a real FUSE mount (mount option
 * trace=FILE) and replaying it with simfs run.
 *
 *  - mount -o trace=FILE; make a small tree with plain syscalls: mkdir, a
 *    file with spaces and UTF-8 in its name written in two pieces, fsync,
 *    ftruncate, truncate(2), rename of a directory, stat, a listing,
 *    unlink, rmdir, a failed rmdir (ENOTEMPTY), a hard link, a symlink;
 *  - after umount the trace reads back (sfs_trace_read) and holds those
 *    operations, with the paths as seen from the mount root (the renamed
 *    directory's files under its new name), this process as the client,
 *    handle numbers that open, write and close agree on, and the failed
 *    rmdir's -ENOTEMPTY; no operation of /.simfs is in it;
 *  - the .data file holds the written bytes at the offsets the write
 *    lines name;
 *  - simfs trace show summarises it; simfs run --trace replays it on a
 *    fresh image with every result as recorded; e2fsck -fn is clean;
 *  - the round trip: a tree copied onto a mount with cp -a (a real
 *    program), recorded, and replayed on a fresh image in virtual time
 *    over the modelled 2009 disk, gives the same tree with the same bytes
 *    (both images mounted and scanned), e2fsck clean.
 * No timing assertions.
 *
 * usage: t_trace SIMFS_BINARY
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include "trace.h"

#define FNAME "d/caf\xc3\xa9 file.txt"

static char *img, *mnt, *trace_path;
static uint8_t piece1[5000], piece2[3000];

static char *m(const char *rel)
{
	return g_build_filename(mnt, rel, NULL);
}

static void workload(void)
{
	char *d = m("d"), *f = m(FNAME), *sub = m("d/sub"), *t = m("d/t");
	char *d2 = m("e"), *f2 = m("e/caf\xc3\xa9 file.txt"), *ln = m("e/hard");
	char *sl = m("e/sym"), *ctl = m(".simfs/stats");
	struct h_rng r;
	struct stat st;
	DIR *dir;
	int fd;

	h_rng_seed(&r, 7);
	h_fill(&r, piece1, sizeof(piece1));
	h_fill(&r, piece2, sizeof(piece2));
	H_SYS(mkdir(d, 0755), "mkdir d");
	H_SYS(mkdir(sub, 0700), "mkdir d/sub");
	fd = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0640);
	H_SYS(fd, "create %s", FNAME);
	H_EQ(pwrite(fd, piece1, sizeof(piece1), 0), sizeof(piece1),
	     "write piece 1");
	H_EQ(pwrite(fd, piece2, sizeof(piece2), sizeof(piece1)), sizeof(piece2),
	     "write piece 2");
	H_SYS(fsync(fd), "fsync");
	H_SYS(ftruncate(fd, 7000), "ftruncate to 7000");
	H_SYS(close(fd), "close");
	fd = open(t, O_WRONLY | O_CREAT, 0600);
	H_SYS(fd, "create d/t");
	H_SYS(close(fd), "close d/t");
	H_SYS(truncate(t, 100), "truncate d/t");
	/* a failure the daemon answers (an existing name is the kernel's) */
	H_ERR(rmdir(d), ENOTEMPTY, "rmdir d: ENOTEMPTY");
	H_SYS(rename(d, d2), "rename d e");
	H_SYS(stat(f2, &st), "stat the file by its new path");
	dir = opendir(d2);
	H_OK(dir != NULL, "opendir e");
	while (dir && readdir(dir))
		;
	if (dir)
		closedir(dir);
	H_SYS(link(f2, ln), "link");
	H_SYS(symlink("caf\xc3\xa9 file.txt", sl), "symlink");
	/* the control files are not the application's */
	fd = open(ctl, O_RDONLY);
	if (fd >= 0)
		close(fd);
	H_SYS(unlink(ln), "unlink e/hard");
	H_SYS(rmdir(m("e/sub")), "rmdir e/sub");
	g_free(d);
	g_free(f);
	g_free(sub);
	g_free(t);
	g_free(d2);
	g_free(f2);
	g_free(ln);
	g_free(sl);
	g_free(ctl);
}

/* The first record of op (from index *from on) with path (NULL: any). */
static int find(const struct sfs_trace_rec *r, unsigned n, unsigned from,
		enum sfs_trace_op op, const char *path)
{
	for (unsigned i = from; i < n; i++)
		if (r[i].op == op &&
		    (!path || (r[i].path && !strcmp(r[i].path, path))))
			return (int)i;
	return -1;
}

static void check_trace(void)
{
	struct sfs_trace_rec recs[512];
	struct sfs_trace_reader *rd;
	char *err = NULL, *data = NULL, *dpath;
	unsigned n = 0;
	gsize dlen = 0;
	int rc, i, w1, w2;
	uint64_t me = (uint64_t)getpid();

	if (!H_OK(sfs_trace_reader_open(trace_path, &rd, &err) == 0,
		  "the trace opens: %s", err ? err : "")) {
		g_free(err);
		return;
	}
	while (n < 512 && (rc = sfs_trace_read(rd, &recs[n], &err)) == 1) {
		recs[n].path = g_strdup(recs[n].path);
		recs[n].path2 = g_strdup(recs[n].path2);
		n++;
	}
	H_OK(rc == 0, "the trace reads to its end: %s", err ? err : "");
	sfs_trace_reader_free(rd);
	h_diag("%u records", n);

	i = find(recs, n, 0, SFS_TOP_MKDIR, "d");
	H_OK(i >= 0 && recs[i].client == me && recs[i].mode == 0755 &&
		 recs[i].result == 0,
	     "mkdir d by this process, mode 0755");
	i = find(recs, n, (unsigned)(i + 1), SFS_TOP_MKDIR, "d/sub");
	H_OK(i >= 0 && recs[i].result == 0, "mkdir d/sub");
	i = find(recs, n, 0, SFS_TOP_RMDIR, "d");
	H_OK(i >= 0 && recs[i].result == -ENOTEMPTY, "rmdir d: -ENOTEMPTY");
	i = find(recs, n, 0, SFS_TOP_OPEN, FNAME);
	H_OK(i >= 0 && (recs[i].flags & O_CREAT) && recs[i].fd > 0 &&
		 recs[i].mode == 0640,
	     "the create, with O_CREAT, mode 0640 and a handle");
	if (i >= 0) {
		int64_t fd = recs[i].fd;

		w1 = find(recs, n, (unsigned)i, SFS_TOP_WRITE, NULL);
		w2 = w1 >= 0
			 ? find(recs, n, (unsigned)w1 + 1, SFS_TOP_WRITE, NULL)
			 : -1;
		H_OK(w1 >= 0 && w2 >= 0 && recs[w1].fd == fd &&
			 recs[w2].fd == fd && recs[w1].off == 0 &&
			 recs[w1].len == sizeof(piece1) &&
			 recs[w2].off == sizeof(piece1) &&
			 recs[w2].len == sizeof(piece2),
		     "two writes on its handle, offsets and lengths");
		dpath = g_strconcat(trace_path, ".data", NULL);
		if (H_OK(g_file_get_contents(dpath, &data, &dlen, NULL),
			 "the data file") &&
		    w1 >= 0 && w2 >= 0) {
			H_OK(recs[w1].data_off + sizeof(piece1) <= dlen &&
				 !memcmp(data + recs[w1].data_off, piece1,
					 sizeof(piece1)) &&
				 recs[w2].data_off + sizeof(piece2) <= dlen &&
				 !memcmp(data + recs[w2].data_off, piece2,
					 sizeof(piece2)),
			     "the data file holds the written bytes");
		}
		g_free(data);
		g_free(dpath);
		i = find(recs, n, 0, SFS_TOP_FSYNC, NULL);
		H_OK(i >= 0 && recs[i].fd == fd, "fsync on the handle");
		i = find(recs, n, 0, SFS_TOP_FTRUNCATE, NULL);
		H_OK(i >= 0 && recs[i].fd == fd && recs[i].len == 7000,
		     "ftruncate on the handle, 7000");
		i = find(recs, n, 0, SFS_TOP_CLOSE, NULL);
		H_OK(i >= 0 && recs[i].fd == fd && recs[i].client == me,
		     "close of the handle, by this process");
	}
	i = find(recs, n, 0, SFS_TOP_TRUNCATE, "d/t");
	H_OK(i >= 0 && recs[i].len == 100, "truncate(2) by path");
	i = find(recs, n, 0, SFS_TOP_RENAME, "d");
	H_OK(i >= 0 && recs[i].path2 && !strcmp(recs[i].path2, "e"),
	     "rename d e");
	/* the stat(2) is the kernel's (attributes cached for 1 s): a stat
	 * record, if any, names the new path */
	i = find(recs, n, 0, SFS_TOP_STAT, NULL);
	H_OK(i < 0 || strstr(recs[i].path, "caf\xc3\xa9 file.txt"),
	     "a stat names the file");
	H_OK(find(recs, n, 0, SFS_TOP_READDIR, "e") >= 0, "readdir e");
	i = find(recs, n, 0, SFS_TOP_LINK, "e/caf\xc3\xa9 file.txt");
	H_OK(i >= 0 && recs[i].path2 && !strcmp(recs[i].path2, "e/hard"),
	     "link");
	i = find(recs, n, 0, SFS_TOP_SYMLINK, NULL);
	H_OK(i >= 0 && !strcmp(recs[i].path, "caf\xc3\xa9 file.txt") &&
		 !strcmp(recs[i].path2, "e/sym"),
	     "symlink: target text and the new name");
	H_OK(find(recs, n, 0, SFS_TOP_UNLINK, "e/hard") >= 0, "unlink");
	H_OK(find(recs, n, 0, SFS_TOP_RMDIR, "e/sub") >= 0, "rmdir");
	bool ctl = false;
	for (unsigned k = 0; k < n; k++)
		ctl |= recs[k].path && strstr(recs[k].path, ".simfs");
	H_OK(!ctl, "nothing of /.simfs is recorded");
	for (unsigned k = 0; k < n; k++) {
		g_free((char *)recs[k].path);
		g_free((char *)recs[k].path2);
	}
}

static void check_replay(void)
{
	char *out = NULL, *err = NULL, *img2 = h_path("replay.img");
	int rc;

	rc = h_runl(&out, NULL, h_simfs(), "trace", "show", trace_path, NULL);
	H_OK(rc == 0 && out && strstr(out, "operations by") &&
		 strstr(out, "mkdir"),
	     "simfs trace show");
	g_free(out);
	out = NULL;
	rc = h_runl(&out, &err, h_simfs(), "run", "--trace", trace_path, "-q",
		    "--size", "64M", "-o", "device=ideal", img2, NULL);
	H_OK(rc == 0 && out && strstr(out, "every result as recorded"),
	     "simfs run --trace: every result as recorded");
	if (rc != 0 || !out || !strstr(out, "every result as recorded"))
		h_diag("%s%s", out ? out : "", err ? err : "");
	g_free(out);
	g_free(err);
	H_OK(h_fsck_clean(img2, NULL), "e2fsck -fn clean after the replay");
	g_free(img2);
}

/* A tree of files of several sizes, a subdirectory, a symlink. */
static void make_source(const char *src)
{
	struct h_rng rng;
	char *d = g_build_filename(src, "sub", "deeper", NULL);

	h_rng_seed(&rng, 7);
	H_SYS(g_mkdir_with_parents(d, 0755), "mkdir the source tree");
	for (unsigned i = 0; i < 24; i++) {
		size_t n = (size_t)h_below(&rng, 200 * 1024);
		char *buf = g_malloc(n + 1);
		char *f = g_strdup_printf("%s/%s/f%02u.dat", src,
					  i % 3 == 0   ? "."
					  : i % 3 == 1 ? "sub"
						       : "sub/deeper",
					  i);
		h_fill(&rng, buf, n);
		H_SYS(h_write_file(f, buf, n, 0644), "write %s", f);
		g_free(f);
		g_free(buf);
	}
	char *l = g_build_filename(src, "sub", "link", NULL);
	H_SYS(symlink("deeper/f02.dat", l), "symlink");
	g_free(l);
	g_free(d);
}

static void check_round_trip(void)
{
	char *src = h_path("src"), *img1 = h_path("copy.img");
	char *img2 = h_path("copy-replay.img"), *tr = h_path("copy.trace");
	char *m1 = h_path("m1"), *m2 = h_path("m2"), *dst, *opts, *spec;
	char *out = NULL, *err = NULL;
	int rc;

	make_source(src);
	if (h_mkfs(img1, "64M", NULL) != 0)
		h_bail("mkfs failed");
	opts = g_strdup_printf("trace=%s", tr);
	if (h_mount(img1, m1, opts) != 0)
		h_bail("mount -o %s failed", opts);
	dst = g_build_filename(m1, "copy", NULL);
	rc = h_runl(NULL, &err, "cp", "-a", src, dst, NULL);
	H_OK(rc == 0, "cp -a a tree onto the recording mount");
	g_free(err);
	err = NULL;
	H_OK(h_umount(m1) == 0, "umount the recording mount");

	/* replayed on the 2009 disk: a shell's commands are processes one
	 * after the other, so chain keeps them in order */
	spec = g_strdup_printf("trace,file=%s,chain", tr);
	rc = h_runl(&out, &err, h_simfs(), "run", "-q", "--size", "64M", "-o",
		    "device=hdd-2009", "-w", spec, img2, NULL);
	H_OK(rc == 0 && out && strstr(out, "every result as recorded"),
	     "tree copy replayed on hdd-2009: every result as recorded");
	if (rc != 0)
		h_diag("%s%s", out ? out : "", err ? err : "");
	H_OK(h_fsck_clean(img2, NULL), "e2fsck -fn clean after the replay");

	if (h_mount(img1, m1, NULL) != 0 || h_mount(img2, m2, NULL) != 0)
		h_bail("mounting the two images failed");
	char *a = g_build_filename(m1, "copy", NULL);
	char *b = g_build_filename(m2, "copy", NULL);
	GPtrArray *ta = h_tree_scan(a), *tb = h_tree_scan(b),
		  *ts = h_tree_scan(src);
	H_OK(ta && tb && ts && ta->len > 20, "scan the trees");
	if (ta && tb && ts) {
		H_OK(h_tree_compare(ts, ta, "source", "recorded copy", 0) == 0,
		     "the recorded copy is the source");
		H_OK(h_tree_compare(ta, tb, "recorded", "replayed", 0) == 0,
		     "the replayed tree is the recorded one, byte for byte");
	}
	if (ta)
		h_tree_free(ta);
	if (tb)
		h_tree_free(tb);
	if (ts)
		h_tree_free(ts);
	H_OK(h_umount(m1) == 0 && h_umount(m2) == 0, "umount both");
	g_free(a);
	g_free(b);
	g_free(out);
	g_free(err);
	g_free(spec);
	g_free(opts);
	g_free(dst);
	g_free(src);
	g_free(img1);
	g_free(img2);
	g_free(tr);
	g_free(m1);
	g_free(m2);
}

int main(int argc, char **argv)
{
	char *opts;

	h_init(argc, argv);
	img = h_path("trace.img");
	mnt = h_path("mnt");
	trace_path = h_path("rec.trace");
	if (h_mkfs(img, "64M", NULL) != 0)
		h_bail("mkfs failed");
	opts = g_strdup_printf("trace=%s", trace_path);
	if (h_mount(img, mnt, opts) != 0)
		h_bail("mount -o %s failed", opts);
	workload();
	H_OK(h_umount(mnt) == 0, "umount");
	H_OK(h_fsck_clean(img, NULL), "e2fsck -fn clean");
	check_trace();
	check_replay();
	check_round_trip();
	g_free(opts);
	return h_done();
}
