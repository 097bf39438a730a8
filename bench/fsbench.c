/*
 * fsbench.c - the small timed workloads of bench/foundation.sh and
 * bench/demo.sh, in C so that per-file costs are the filesystem's, not a
 * shell's fork.  Each prints "key=value" lines on stdout.
 *
 *   fsbench seqwrite FILE MIB BLOCK_KIB  sequential write, fsync included
 *   fsbench seqread FILE BLOCK_KIB       sequential read to EOF
 *   fsbench meta DIR N BYTES             create N files of BYTES (write +
 *                                        close), stat each, unlink each
 *   fsbench mktree DIR SEED DIRS FILES MAXBYTES
 *                                        a deterministic source-tree-like
 *                                        tree (for the demo's tarball)
 *   fsbench append FILE N BYTES HOW START_MIB
 *                                        N writes of BYTES at the end of
 *                                        FILE, first written to START_MIB
 *                                        (kept if it is that size);
 *                                        HOW "oappend" (O_APPEND, write)
 *                                        or "pwrite" (pwrite at the
 *                                        offset the program keeps); the
 *                                        time of each tenth of the writes
 *                                        too, to show a cost that grows
 *
 * Time is CLOCK_MONOTONIC; MiB/s is 2^20 bytes per second.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "fsbench: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void fill(uint64_t *s, unsigned char *buf, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = mix(s);

		memcpy(buf + i, &v, n - i < 8 ? n - i : 8);
	}
}

static int seqwrite(const char *path, long mib, long kib)
{
	size_t bs = (size_t)kib * 1024;
	unsigned char *buf = malloc(bs);
	uint64_t total = (uint64_t)mib << 20, done = 0, seed = 1;
	double t0, t1;
	int fd;

	if (!buf || bs == 0)
		return 1;
	fill(&seed, buf, bs);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open", path);
	t0 = now_s();
	while (done < total) {
		size_t n = total - done < bs ? (size_t)(total - done) : bs;
		ssize_t w = write(fd, buf, n);

		if (w <= 0)
			die("write", path);
		done += (uint64_t)w;
		buf[done % bs] ^= 1; /* not all blocks identical */
	}
	if (fsync(fd) < 0)
		die("fsync", path);
	t1 = now_s();
	close(fd);
	printf("bytes=%llu\nseconds=%.3f\nmibps=%.1f\n",
	       (unsigned long long)done, t1 - t0,
	       (double)done / (1 << 20) / (t1 - t0));
	free(buf);
	return 0;
}

static int seqread(const char *path, long kib)
{
	size_t bs = (size_t)kib * 1024;
	unsigned char *buf = malloc(bs);
	uint64_t done = 0;
	double t0, t1;
	int fd;

	if (!buf || bs == 0)
		return 1;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		die("open", path);
	t0 = now_s();
	for (;;) {
		ssize_t r = read(fd, buf, bs);

		if (r < 0)
			die("read", path);
		if (r == 0)
			break;
		done += (uint64_t)r;
	}
	t1 = now_s();
	close(fd);
	printf("bytes=%llu\nseconds=%.3f\nmibps=%.1f\n",
	       (unsigned long long)done, t1 - t0,
	       (double)done / (1 << 20) / (t1 - t0));
	free(buf);
	return 0;
}

static int meta(const char *dir, long n, long bytes)
{
	unsigned char *buf = calloc(1, (size_t)bytes + 1);
	char path[4096];
	double t0, t1, t2, t3;
	struct stat st;
	uint64_t seed = 2;

	if (!buf)
		return 1;
	fill(&seed, buf, (size_t)bytes);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		die("mkdir", dir);
	t0 = now_s();
	for (long i = 0; i < n; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/f%06ld", dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			die("create", path);
		if (bytes && write(fd, buf, (size_t)bytes) != bytes)
			die("write", path);
		if (close(fd) < 0)
			die("close", path);
	}
	t1 = now_s();
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%06ld", dir, i);
		if (stat(path, &st) < 0 || st.st_size != bytes)
			die("stat", path);
	}
	t2 = now_s();
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%06ld", dir, i);
		if (unlink(path) < 0)
			die("unlink", path);
	}
	t3 = now_s();
	printf("files=%ld\ncreate_s=%.6f\ncreate_ops=%.0f\nstat_s=%.6f\n"
	       "stat_ops=%.0f\nunlink_s=%.6f\nunlink_ops=%.0f\n",
	       n, t1 - t0, n / (t1 - t0), t2 - t1, n / (t2 - t1), t3 - t2,
	       n / (t3 - t2));
	free(buf);
	return 0;
}

static int mktree(const char *dir, uint64_t seed, long ndirs, long nfiles,
		  long maxbytes)
{
	static const char *const ext[] = {".c", ".h", ".S", ".txt", "",
					  ".rst", ".py", "Makefile"};
	char **dirs = calloc((size_t)ndirs + 1, sizeof(char *));
	unsigned char *buf = malloc((size_t)maxbytes + 1);
	uint64_t bytes = 0;
	long i;

	if (!dirs || !buf)
		return 1;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		die("mkdir", dir);
	dirs[0] = strdup(dir);
	for (i = 1; i <= ndirs; i++) {
		const char *parent = dirs[mix(&seed) % (uint64_t)i];

		if (asprintf(&dirs[i], "%s/d%03ld", parent, i) < 0)
			return 1;
		if (mkdir(dirs[i], 0755) < 0)
			die("mkdir", dirs[i]);
	}
	for (i = 0; i < nfiles; i++) {
		const char *parent = dirs[mix(&seed) % (uint64_t)(ndirs + 1)];
		/* mostly small, like a source tree */
		uint64_t r = mix(&seed);
		long size = (long)(r % 8 == 0 ? r % (uint64_t)maxbytes
					      : r % (uint64_t)(maxbytes / 16 + 1));
		const char *e = ext[mix(&seed) % 8];
		char *path;
		int fd;

		if (asprintf(&path, "%s/f%05ld%s", parent, i, e) < 0)
			return 1;
		fill(&seed, buf, (size_t)size);
		/* text-like bytes */
		for (long k = 0; k < size; k++)
			buf[k] = (unsigned char)(' ' + buf[k] % 95);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			die("create", path);
		if (size && write(fd, buf, (size_t)size) != size)
			die("write", path);
		close(fd);
		bytes += (uint64_t)size;
		free(path);
	}
	printf("dirs=%ld\nfiles=%ld\nbytes=%llu\n", ndirs, nfiles,
	       (unsigned long long)bytes);
	for (i = 0; i <= ndirs; i++)
		free(dirs[i]);
	free(dirs);
	free(buf);
	return 0;
}

/* User plus system CPU time of a getrusage result, in seconds. */
static double cpu_s(const struct rusage *ru)
{
	return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) +
	       (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e6;
}

/* fsbench append: see the head comment. */
static int append(const char *path, long n, long bytes, const char *how,
		  long start_mib)
{
	bool oappend = !strcmp(how, "oappend");
	unsigned char buf[65536];
	double t0, tenth[10];
	struct rusage ru0, ru1;
	struct stat st;
	uint64_t seed = 7;
	off_t at;
	int fd;

	if ((!oappend && strcmp(how, "pwrite")) || n < 10 || bytes < 1 ||
	    bytes > (long)sizeof buf || start_mib < 0) {
		fprintf(stderr, "fsbench append: HOW is oappend or pwrite, "
				"N >= 10, 1 <= BYTES <= 65536\n");
		return 2;
	}
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	if (fd < 0 || fstat(fd, &st) < 0)
		die("open", path);
	fill(&seed, buf, sizeof buf);
	if (st.st_size != (off_t)start_mib << 20) { /* else: as it is */
		if (ftruncate(fd, 0) < 0)
			die("ftruncate", path);
		for (long m = 0; m < start_mib * 16; m++)
			if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
				die("write", path);
		if (fsync(fd) < 0)
			die("fsync", path);
	}
	close(fd);
	fd = open(path, O_WRONLY | (oappend ? O_APPEND : 0));
	if (fd < 0)
		die("open", path);
	at = (off_t)start_mib << 20;
	getrusage(RUSAGE_SELF, &ru0);
	t0 = now_s();
	for (long i = 0; i < n; i++) {
		ssize_t w = oappend ? write(fd, buf, (size_t)bytes)
				    : pwrite(fd, buf, (size_t)bytes, at);

		if (w != bytes)
			die("append", path);
		at += bytes;
		if ((i + 1) % (n / 10) == 0 && (i + 1) / (n / 10) <= 10)
			tenth[(i + 1) / (n / 10) - 1] = now_s();
	}
	printf("how=%s\nwrites=%ld\nbytes=%ld\nstart_mib=%ld\n", how, n, bytes,
	       start_mib);
	getrusage(RUSAGE_SELF, &ru1);
	printf("cpu_us_per_write=%.2f\n",
	       (cpu_s(&ru1) - cpu_s(&ru0)) * 1e6 / (double)n);
	printf("seconds=%.3f\nus_per_write=%.2f\n", tenth[9] - t0,
	       (tenth[9] - t0) * 1e6 / (double)(n / 10 * 10));
	printf("us_per_write_by_tenth=");
	for (int k = 0; k < 10; k++)
		printf("%s%.2f", k ? "," : "",
		       (tenth[k] - (k ? tenth[k - 1] : t0)) * 1e6 /
			   (double)(n / 10));
	printf("\n");
	if (close(fd) < 0)
		die("close", path);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "seqwrite"))
		return seqwrite(argv[2], atol(argv[3]), atol(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "seqread"))
		return seqread(argv[2], atol(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "meta"))
		return meta(argv[2], atol(argv[3]), atol(argv[4]));
	if (argc == 7 && !strcmp(argv[1], "mktree"))
		return mktree(argv[2], strtoull(argv[3], NULL, 0),
			      atol(argv[4]), atol(argv[5]), atol(argv[6]));
	if (argc == 7 && !strcmp(argv[1], "append"))
		return append(argv[2], atol(argv[3]), atol(argv[4]), argv[5],
			      atol(argv[6]));
	fprintf(stderr,
		"usage: fsbench seqwrite FILE MIB BLOCK_KIB\n"
		"       fsbench seqread FILE BLOCK_KIB\n"
		"       fsbench meta DIR N BYTES\n"
		"       fsbench mktree DIR SEED DIRS FILES MAXBYTES\n"
		"       fsbench append FILE N BYTES HOW START_MIB\n");
	return 2;
}
