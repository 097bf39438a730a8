/*
 * t_concurrent.c - several processes on one mount at the same time.
 *
 * The other integration tests drive the daemon from one process.  FUSE
 * hands requests to several daemon threads, so here NWORKERS processes run
 * side by side on one mount, while the parent runs `simfs sync` and
 * `simfs stats` against it.  Each worker:
 *
 *  - keeps a few files of its own in its own directory (wN/) and a copy of
 *    their bytes in memory: random writes (some O_DIRECT), appends,
 *    truncates, renames, unlinks, fsyncs, an extended attribute (user.k)
 *    set, removed and read, a subdirectory made and removed; every read of
 *    a whole file (and its attribute) must equal the copy, at once;
 *  - shares a directory with the others (shared/), on a small pool of
 *    names where they collide on purpose: it publishes records (written
 *    under a private temporary name, then renamed over fN), appends
 *    fixed-size records to shared/log with O_APPEND, reads records, links,
 *    unlinks, makes and removes directories dN and files inside them, and
 *    lists the directory.  A collision may answer ENOENT,
 *    EEXIST or ENOTEMPTY; any other error fails the test.  A record read
 *    back must be whole: its header's length and hash must match its
 *    bytes, so a read never sees half of one record or another file's
 *    blocks.
 *
 * Afterwards each worker's files are checked against the manifest it
 * left (size, hash and attribute of every file), every shared record
 * again, and the log, which must hold every worker's appends, whole and
 * in each worker's order, one after another; then umount, e2fsck -fn
 * clean, remount, the same checks, umount, e2fsck.
 * This runs once per configuration: the ext2 block map under a small
 * cache (write-back all the time), the ext3 preset with a one-second
 * commit, ext4's preset (mballoc, delayed allocation), data=journal,
 * ext3rs-ordered (reservation windows) on the modelled disk under CFQ (a stream
 * per worker process), and, on the real clock in emulate mode, every
 * journal mode (none, ordered, writeback, journal, ext4's): there the
 * workers' modelled waits overlap, slept without the engine's lock, and
 * their requests meet in the device's queue.
 *
 * usage: t_concurrent SIMFS_BINARY [SEED [OPS_PER_WORKER]]  (1, 6000;
 * $T_CONCURRENT_OPS sets the default)
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#define KiB 1024
#define NWORKERS 4
#define NOWN 6		    /* a worker's own file names: wN/o0..o5 */
#define OWN_MAX (384 * KiB) /* an own file never grows past this */
#define NSHARED 8	    /* shared/f0..f7 */
#define NSDIRS 3	    /* shared/d0..d2 */
#define REC_MAX (48 * KiB)
#define REC_MAGIC 0x73696d6673726563ULL /* "simfsrec" */
#define LOG_REC 512			/* one O_APPEND record of shared/log */
#define XNAME "user.k" /* the extended attribute an own file may carry */
#define XVAL_MAX 200
#define DIO_ALIGN 4096
#define DEADLINE_S 240 /* for all workers of one configuration */

/* ------------------------------------------------------------ worker */

/* One worker's view; it lives only in the worker process. */
struct worker {
	int id;
	const char *mnt;
	struct h_rng rng;
	char *dir;	       /* MNT/wN */
	GByteArray *own[NOWN]; /* the bytes of oK, or NULL if absent */
	char *xval[NOWN];      /* oK's user.k, or NULL if it has none */
	bool subdir;	       /* wN/sub exists */
	unsigned seq;	       /* records published */
	unsigned appends;      /* records appended to shared/log */
	int errors;
	uint8_t *buf; /* scratch, OWN_MAX + REC_MAX, aligned */
};

/* The header of a shared record; the payload follows. */
struct rec_head {
	uint64_t magic;
	uint32_t worker;
	uint32_t seq;
	uint64_t len;  /* payload bytes */
	uint64_t hash; /* XXH3 of the payload */
};

static void wfail(struct worker *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void wfail(struct worker *w, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "# worker %d: ", w->id);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	w->errors++;
}

/* Is err one of the answers a collision on a shared name may give? */
static bool collision_errno(int err)
{
	return err == ENOENT || err == EEXIST || err == ENOTEMPTY;
}

static char *own_path(struct worker *w, int k)
{
	return g_strdup_printf("%s/o%d", w->dir, k);
}

/* Read the whole of path into w->buf (at most cap bytes); the length, or
 * -errno. */
static long read_all(struct worker *w, const char *path, size_t cap)
{
	int fd = open(path, O_RDONLY);
	size_t got = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n = read(fd, w->buf + got, cap + 1 - got);

		if (n < 0) {
			int e = errno;

			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > cap)
			break;
	}
	close(fd);
	return (long)got;
}

static void own_verify(struct worker *w, int k, const char *why)
{
	char *p = own_path(w, k);
	long n = read_all(w, p, OWN_MAX);
	GByteArray *a = w->own[k];

	if (!a) {
		if (n != -ENOENT)
			wfail(w, "%s: o%d should not exist, read gave %ld", why,
			      k, n);
	} else if (n < 0) {
		wfail(w, "%s: read o%d: %s", why, k, strerror((int)-n));
	} else if ((size_t)n != a->len || memcmp(w->buf, a->data, a->len)) {
		wfail(w,
		      "%s: o%d differs from what was written (%ld bytes "
		      "read, %u expected)",
		      why, k, n, a->len);
	} else {
		char v[XVAL_MAX + 1];
		ssize_t xn = getxattr(p, XNAME, v, sizeof(v));
		const char *want = w->xval[k];

		if (want ? xn != (ssize_t)strlen(want) || memcmp(v, want, xn)
			 : xn >= 0 || errno != ENODATA)
			wfail(w, "%s: o%d's %s is not what was set (%zd: %s)",
			      why, k, XNAME, xn, xn < 0 ? strerror(errno) : "");
	}
	g_free(p);
}

/* Set, remove or check oK's user.k (the file exists). */
static void own_xattr(struct worker *w, int k)
{
	char *p = own_path(w, k);
	unsigned what = (unsigned)h_below(&w->rng, 3);

	if (what == 0) { /* set a new value: a few to XVAL_MAX hex digits */
		size_t len = 1 + (size_t)h_below(&w->rng, XVAL_MAX);
		char *v = g_malloc(len + 1);

		for (size_t i = 0; i < len; i++)
			v[i] = "0123456789abcdef"[h_below(&w->rng, 16)];
		v[len] = '\0';
		if (setxattr(p, XNAME, v, len, 0) < 0) {
			wfail(w, "setxattr o%d: %s", k, strerror(errno));
			g_free(v);
		} else {
			g_free(w->xval[k]);
			w->xval[k] = v;
		}
	} else if (what == 1) {
		int rc = removexattr(p, XNAME);

		if (w->xval[k] ? rc < 0 : rc == 0 || errno != ENODATA)
			wfail(w, "removexattr o%d: %s", k,
			      rc < 0 ? strerror(errno) : "succeeded");
		g_clear_pointer(&w->xval[k], g_free);
	} else {
		own_verify(w, k, "xattr");
	}
	g_free(p);
}

/* Write len random bytes at off to oK (creating it), O_DIRECT when
 * direct (off and len aligned by the caller). */
static void own_write(struct worker *w, int k, size_t off, size_t len,
		      bool direct)
{
	char *p = own_path(w, k);
	int fd = open(p, O_WRONLY | O_CREAT | (direct ? O_DIRECT : 0), 0644);
	GByteArray *a;
	int rc;

	if (fd < 0) {
		wfail(w, "open o%d for writing%s: %s", k,
		      direct ? " (O_DIRECT)" : "", strerror(errno));
		g_free(p);
		return;
	}
	h_fill(&w->rng, w->buf, len);
	rc = h_pwrite_all(fd, w->buf, len, (off_t)off);
	if (h_below(&w->rng, 8) == 0 && fsync(fd) < 0)
		wfail(w, "fsync o%d: %s", k, strerror(errno));
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc) {
		wfail(w, "write o%d [%zu, +%zu): %s", k, off, len,
		      strerror(-rc));
		g_free(p);
		return;
	}
	if (!w->own[k])
		w->own[k] = g_byte_array_new();
	a = w->own[k];
	if (a->len < off + len) {
		size_t old = a->len;

		g_byte_array_set_size(a, (guint)(off + len));
		memset(a->data + old, 0, off + len - old);
	}
	memcpy(a->data + off, w->buf, len);
	g_free(p);
}

static void own_step(struct worker *w)
{
	int k = (int)h_below(&w->rng, NOWN);
	GByteArray *a = w->own[k];
	size_t size = a ? a->len : 0;
	unsigned op = (unsigned)h_below(&w->rng, 100);

	if (op < 36) { /* write somewhere at or before the end */
		size_t off = (size_t)h_below(&w->rng, size + 64 * KiB);
		size_t len = 1 + (size_t)h_below(&w->rng, 64 * KiB);
		bool direct = h_below(&w->rng, 4) == 0;

		if (direct) {
			off -= off % DIO_ALIGN;
			len = DIO_ALIGN * (1 + len / (16 * KiB));
		}
		if (off + len > OWN_MAX)
			off = OWN_MAX - len;
		own_write(w, k, off, len, direct);
	} else if (op < 54) {
		own_verify(w, k, "read");
	} else if (op < 64 && a) {
		own_xattr(w, k);
	} else if (op < 72 && a) { /* truncate */
		size_t to = (size_t)h_below(&w->rng, size + 32 * KiB);
		char *p = own_path(w, k);

		to = MIN(to, (size_t)OWN_MAX);
		if (truncate(p, (off_t)to) < 0) {
			wfail(w, "truncate o%d to %zu: %s", k, to,
			      strerror(errno));
		} else {
			size_t old = a->len;

			g_byte_array_set_size(a, (guint)to);
			if (to > old)
				memset(a->data + old, 0, to - old);
		}
		g_free(p);
	} else if (op < 81 && a) { /* rename oK over oJ */
		int j = (int)h_below(&w->rng, NOWN);
		char *p = own_path(w, k), *q = own_path(w, j);

		if (rename(p, q) < 0) {
			wfail(w, "rename o%d to o%d: %s", k, j,
			      strerror(errno));
		} else if (j != k) {
			if (w->own[j])
				g_byte_array_unref(w->own[j]);
			w->own[j] = a;
			w->own[k] = NULL;
			g_free(w->xval[j]);
			w->xval[j] = g_steal_pointer(&w->xval[k]);
		}
		g_free(p);
		g_free(q);
	} else if (op < 88 && a) {
		char *p = own_path(w, k);

		if (unlink(p) < 0) {
			wfail(w, "unlink o%d: %s", k, strerror(errno));
		} else {
			g_byte_array_unref(a);
			w->own[k] = NULL;
			g_clear_pointer(&w->xval[k], g_free);
		}
		g_free(p);
	} else { /* the subdirectory comes and goes */
		char *p = g_strdup_printf("%s/sub", w->dir);
		int rc = w->subdir ? rmdir(p) : mkdir(p, 0755);

		if (rc < 0)
			wfail(w, "%s %s: %s", w->subdir ? "rmdir" : "mkdir", p,
			      strerror(errno));
		else
			w->subdir = !w->subdir;
		g_free(p);
	}
}

/* Check a shared record just read into w->buf (n bytes). */
static bool record_whole(const uint8_t *b, long n, char **why)
{
	struct rec_head h;

	if ((size_t)n < sizeof(h)) {
		*why = g_strdup_printf("%ld bytes, shorter than a header", n);
		return false;
	}
	memcpy(&h, b, sizeof(h));
	if (h.magic != REC_MAGIC) {
		*why = g_strdup("no record header");
		return false;
	}
	if (h.len != (uint64_t)n - sizeof(h)) {
		*why = g_strdup_printf("header says %llu payload bytes, the "
				       "file has %ld",
				       (unsigned long long)h.len,
				       n - (long)sizeof(h));
		return false;
	}
	if (h.hash != h_hash_buf(b + sizeof(h), h.len)) {
		*why = g_strdup_printf("payload of worker %u's record %u does "
				       "not match its hash",
				       h.worker, h.seq);
		return false;
	}
	return true;
}

static void shared_read(struct worker *w, const char *path)
{
	long n = read_all(w, path, sizeof(struct rec_head) + REC_MAX);
	char *why = NULL;

	if (n == -ENOENT)
		return;
	if (n < 0)
		wfail(w, "read %s: %s", path, strerror((int)-n));
	else if (!record_whole(w->buf, n, &why))
		wfail(w, "read %s: %s", path, why);
	g_free(why);
}

/* Publish a record: written whole under a private name, then renamed
 * over the shared one (which is always a file or absent). */
static void shared_publish(struct worker *w, const char *dst)
{
	struct rec_head h = {.magic = REC_MAGIC, .worker = (uint32_t)w->id};
	char *tmp = g_strdup_printf("%s/shared/t%d", w->mnt, w->id);
	uint8_t *pay = w->buf + sizeof(h);
	int rc;

	h.seq = w->seq++;
	h.len = 1 + h_below(&w->rng, REC_MAX);
	h_fill(&w->rng, pay, h.len);
	h.hash = h_hash_buf(pay, h.len);
	memcpy(w->buf, &h, sizeof(h));
	rc = h_write_file(tmp, w->buf, sizeof(h) + h.len, 0644);
	if (rc)
		wfail(w, "write %s: %s", tmp, strerror(-rc));
	else if (rename(tmp, dst) < 0)
		wfail(w, "rename %s over %s: %s", tmp, dst, strerror(errno));
	g_free(tmp);
}

/* Append one record to shared/log with O_APPEND, in one write(2): the
 * appends of all workers must end up whole, one after another. */
static void shared_append(struct worker *w)
{
	struct rec_head h = {.magic = REC_MAGIC,
			     .worker = (uint32_t)w->id,
			     .seq = w->appends,
			     .len = LOG_REC - sizeof(h)};
	char *log = g_strdup_printf("%s/shared/log", w->mnt);
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
	ssize_t n;

	if (fd < 0) {
		wfail(w, "open %s for appending: %s", log, strerror(errno));
		g_free(log);
		return;
	}
	h_fill(&w->rng, w->buf + sizeof(h), h.len);
	h.hash = h_hash_buf(w->buf + sizeof(h), h.len);
	memcpy(w->buf, &h, sizeof(h));
	n = write(fd, w->buf, LOG_REC);
	if (n != LOG_REC)
		wfail(w, "append to %s: %zd bytes, %s", log, n,
		      n < 0 ? strerror(errno) : "short");
	else
		w->appends++;
	close(fd);
	g_free(log);
}

static void shared_list(struct worker *w, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d) {
		if (errno != ENOENT)
			wfail(w, "opendir %s: %s", dir, strerror(errno));
		return;
	}
	while ((errno = 0, e = readdir(d)) != NULL) {
		struct stat st;
		char *p;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!strchr("ftdxl", e->d_name[0]))
			wfail(w, "%s lists a name nobody made: '%s'", dir,
			      e->d_name);
		p = g_strdup_printf("%s/%s", dir, e->d_name);
		if (lstat(p, &st) < 0 && errno != ENOENT)
			wfail(w, "lstat %s: %s", p, strerror(errno));
		g_free(p);
	}
	if (errno)
		wfail(w, "readdir %s: %s", dir, strerror(errno));
	closedir(d);
}

static void shared_step(struct worker *w)
{
	char *sh = g_strdup_printf("%s/shared", w->mnt);
	char *f = g_strdup_printf("%s/f%d", sh, (int)h_below(&w->rng, NSHARED));
	char *g = g_strdup_printf("%s/f%d", sh, (int)h_below(&w->rng, NSHARED));
	char *d = g_strdup_printf("%s/d%d", sh, (int)h_below(&w->rng, NSDIRS));
	char *x = g_strdup_printf("%s/x%d", d, w->id);
	unsigned op = (unsigned)h_below(&w->rng, 100);
	const char *what = NULL, *obj = f;
	int rc = 0;

	if (op < 24) {
		shared_publish(w, f);
	} else if (op < 30) {
		shared_append(w);
	} else if (op < 55) {
		shared_read(w, f);
	} else if (op < 62) {
		what = "link";
		rc = link(f, g);
	} else if (op < 72) {
		what = "unlink";
		rc = unlink(f);
	} else if (op < 78) {
		what = "mkdir";
		obj = d;
		rc = mkdir(d, 0755);
	} else if (op < 84) {
		what = "rmdir";
		obj = d;
		rc = rmdir(d);
	} else if (op < 90) { /* a file of our own inside a shared dir */
		int fd = open(x, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		what = "create in a shared dir";
		obj = x;
		if (fd >= 0) {
			h_fill(&w->rng, w->buf, 3000);
			rc = h_pwrite_all(fd, w->buf, 3000, 0) ? -1 : 0;
			close(fd);
		} else {
			rc = -1;
		}
	} else if (op < 94) {
		what = "unlink in a shared dir";
		obj = x;
		rc = unlink(x);
	} else {
		shared_list(w, sh);
		shared_list(w, d);
	}
	if (rc < 0 && !collision_errno(errno))
		wfail(w, "%s %s: %s", what, obj, strerror(errno));
	g_free(sh);
	g_free(f);
	g_free(g);
	g_free(d);
	g_free(x);
}

/* Leave the list of own files with size and hash for the parent. */
static void write_manifest(struct worker *w, const char *path)
{
	FILE *m = fopen(path, "w");

	if (!m) {
		wfail(w, "manifest %s: %s", path, strerror(errno));
		return;
	}
	fprintf(m, "appends %u\n", w->appends);
	for (int k = 0; k < NOWN; k++) {
		GByteArray *a = w->own[k];

		if (a)
			fprintf(m, "o%d %u %llu %s\n", k, a->len,
				(unsigned long long)h_hash_buf(a->data, a->len),
				w->xval[k] ? w->xval[k] : "-");
	}
	if (fclose(m) != 0)
		wfail(w, "manifest %s: %s", path, strerror(errno));
}

static int worker_main(int id, const char *mnt, uint64_t seed, int ops,
		       const char *manifest)
{
	struct worker w = {.id = id, .mnt = mnt};

	h_rng_seed(&w.rng, seed * 1000 + (uint64_t)id);
	w.dir = g_strdup_printf("%s/w%d", mnt, id);
	if (posix_memalign((void **)&w.buf, DIO_ALIGN,
			   OWN_MAX + REC_MAX + DIO_ALIGN) != 0)
		return 1;
	if (mkdir(w.dir, 0755) < 0) {
		wfail(&w, "mkdir %s: %s", w.dir, strerror(errno));
		return 1;
	}
	for (int i = 0; i < ops && w.errors < 10; i++) {
		if (h_below(&w.rng, 4) == 0)
			shared_step(&w);
		else
			own_step(&w);
	}
	for (int k = 0; k < NOWN; k++)
		own_verify(&w, k, "at the end");
	write_manifest(&w, manifest);
	return w.errors ? 1 : 0;
}

/* ------------------------------------------------------------ parent */

/* Every worker's files as its manifest lists them, and nothing more;
 * appends[id] gets how many log records worker id appended. */
static void check_manifests(const char *mnt, char **manifest, const char *when,
			    unsigned *appends)
{
	for (int id = 0; id < NWORKERS; id++) {
		char *text = NULL;
		char **lines;
		int listed = 0, found = 0;

		if (!g_file_get_contents(manifest[id], &text, NULL, NULL)) {
			H_OK(false, "%s: worker %d left a manifest", when, id);
			continue;
		}
		lines = g_strsplit(text, "\n", -1);
		for (char **l = lines; *l && **l; l++) {
			char name[16], xv[XVAL_MAX + 1], got[XVAL_MAX + 1];
			unsigned long long size, hash;
			ssize_t xn;
			int xerr;
			char *p;
			struct stat st;
			int err = 0;

			if (sscanf(*l, "appends %u", &appends[id]) == 1)
				continue;
			if (sscanf(*l, "%15s %llu %llu %200s", name, &size,
				   &hash, xv) != 4)
				continue;
			listed++;
			p = g_strdup_printf("%s/w%d/%s", mnt, id, name);
			xn = getxattr(p, XNAME, got, sizeof(got) - 1);
			xerr = xn < 0 ? errno : 0;
			got[MAX(xn, 0)] = '\0';
			if (stat(p, &st) == 0 && (uint64_t)st.st_size == size &&
			    h_hash_file(p, &err) == hash && err == 0 &&
			    (strcmp(xv, "-") == 0 ? xerr == ENODATA
						  : strcmp(got, xv) == 0))
				found++;
			else
				h_diag("%s: %s is not as worker %d left it",
				       when, p, id);
			g_free(p);
		}
		H_EQ(found, listed, "%s: worker %d's %d files as it left them",
		     when, id, listed);
		g_strfreev(lines);
		g_free(text);
	}
}

/* shared/log: every worker's appends, each whole, in its own order. */
static void check_log(const char *mnt, const unsigned *appends,
		      const char *when)
{
	char *p = g_strdup_printf("%s/shared/log", mnt);
	unsigned next[NWORKERS] = {0}, total = 0, good = 0;
	bool told = false;
	gchar *bytes = NULL;
	gsize n = 0;

	for (int id = 0; id < NWORKERS; id++)
		total += appends[id];
	if (!g_file_get_contents(p, &bytes, &n, NULL))
		n = 0;
	H_EQ(n, (gsize)total * LOG_REC, "%s: shared/log holds the %u appends",
	     when, total);
	for (gsize off = 0; off + LOG_REC <= n; off += LOG_REC) {
		struct rec_head h;
		char *why = NULL;

		memcpy(&h, bytes + off, sizeof(h));
		if (record_whole((uint8_t *)bytes + off, LOG_REC, &why) &&
		    h.worker < NWORKERS && h.seq == next[h.worker]) {
			next[h.worker]++;
			good++;
		} else if (!told) {
			h_diag("%s: shared/log record %zu: %s", when,
			       (size_t)(off / LOG_REC),
			       why ? why : "out of its worker's order");
			told = true;
		}
		g_free(why);
	}
	H_EQ(good, total, "%s: every appended record whole and in order", when);
	g_free(bytes);
	g_free(p);
}

/* Every shared record whole (shared/fN and the x files' sizes). */
static void check_shared(const char *mnt, const char *when)
{
	int whole = 0, seen = 0;

	for (int i = 0; i < NSHARED; i++) {
		char *p = g_strdup_printf("%s/shared/f%d", mnt, i);
		gchar *bytes = NULL;
		gsize n = 0;
		char *why = NULL;

		if (g_file_get_contents(p, &bytes, &n, NULL)) {
			seen++;
			if (n <= sizeof(struct rec_head) + REC_MAX &&
			    record_whole((uint8_t *)bytes, (long)n, &why))
				whole++;
			else
				h_diag("%s: %s: %s", when, p,
				       why ? why : "too long");
		}
		g_free(why);
		g_free(bytes);
		g_free(p);
	}
	H_EQ(whole, seen, "%s: the %d shared records are whole", when, seen);
}

/* Run the workers; meanwhile sync and read the stats of the mount. */
static void run_workers(const char *mnt, uint64_t seed, int ops,
			char **manifest)
{
	pid_t pid[NWORKERS];
	int left = NWORKERS, failed = 0, syncs = 0;
	double t0 = h_now();

	fflush(NULL);
	for (int id = 0; id < NWORKERS; id++) {
		pid[id] = fork();
		if (pid[id] < 0)
			h_bail("fork: %s", strerror(errno));
		if (pid[id] == 0)
			_exit(worker_main(id, mnt, seed, ops, manifest[id]));
	}
	while (left > 0) {
		for (int id = 0; id < NWORKERS; id++) {
			int st;

			if (pid[id] <= 0 || waitpid(pid[id], &st, WNOHANG) <= 0)
				continue;
			pid[id] = 0;
			left--;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				failed++;
		}
		if (left == 0)
			break;
		if (h_now() - t0 > DEADLINE_S * h_time_scale()) {
			for (int id = 0; id < NWORKERS; id++)
				if (pid[id] > 0) {
					kill(pid[id], SIGKILL);
					waitpid(pid[id], NULL, 0);
				}
			H_OK(false, "the workers finished within %.0f s",
			     DEADLINE_S * h_time_scale());
			return;
		}
		/* the control file and write-back, amid the workers */
		if (h_runl(NULL, NULL, h_simfs(), "sync", mnt, NULL) != 0 ||
		    h_runl(NULL, NULL, h_simfs(), "stats", mnt, NULL) != 0)
			failed += 100;
		syncs++;
		usleep(200 * 1000);
	}
	H_EQ(failed, 0,
	     "%d workers x %d operations, with %d simfs sync + "
	     "stats alongside (%.1f s)",
	     NWORKERS, ops, syncs, h_now() - t0);
}

struct conf {
	const char *name;
	const char *mkfs_preset; /* NULL: a plain image */
	const char *opts;
};

static void run_conf(const struct conf *c, uint64_t seed, int ops)
{
	char *img = h_path("%s.img", c->name);
	char *mnt = h_path("mnt-%s", c->name);
	char *sh = g_build_filename(mnt, "shared", NULL);
	char *manifest[NWORKERS];
	unsigned appends[NWORKERS] = {0};
	const char *extra[] = {"--preset", c->mkfs_preset, NULL};

	h_diag("configuration %s: -o %s", c->name, c->opts);
	for (int id = 0; id < NWORKERS; id++)
		manifest[id] = h_path("%s.manifest.%d", c->name, id);
	if (h_mkfs(img, "64M", c->mkfs_preset ? extra : NULL) != 0)
		h_bail("simfs mkfs failed");
	if (h_mount(img, mnt, c->opts) != 0)
		h_bail("simfs mount -o %s failed", c->opts);
	if (mkdir(sh, 0755) < 0)
		h_bail("mkdir %s: %s", sh, strerror(errno));

	run_workers(mnt, seed, ops, manifest);
	check_manifests(mnt, manifest, c->name, appends);
	check_log(mnt, appends, c->name);
	check_shared(mnt, c->name);
	H_OK(h_umount(mnt) == 0, "%s: umount", c->name);
	H_OK(h_fsck_clean(img, NULL), "%s: e2fsck -fn clean", c->name);

	if (h_mount(img, mnt, c->opts) != 0)
		h_bail("remount failed");
	check_manifests(mnt, manifest, "remounted", appends);
	check_log(mnt, appends, "remounted");
	check_shared(mnt, "remounted");
	H_OK(h_umount(mnt) == 0, "%s: umount after remount", c->name);
	H_OK(h_fsck_clean(img, NULL), "%s: e2fsck -fn clean again", c->name);

	for (int id = 0; id < NWORKERS; id++)
		g_free(manifest[id]);
	g_free(sh);
	g_free(mnt);
	g_free(img);
}

int main(int argc, char **argv)
{
	static const struct conf confs[] = {
	    {"ext2-mem1M", NULL, "mem=1M"},
	    {"ext3-commit1", "ext3", "preset=ext3,mem=2M,commit=1"},
	    {"ext4", "ext4", "preset=ext4,mem=4M"},
	    {"journal", "ext3-journal", "preset=ext3-journal,mem=2M"},
	    /* the timing device: each worker a CFQ stream of its own; ext3
	       as 2.6.26 has it, with reservation windows */
	    {"ext3rs-cfq", "ext3rs-ordered",
	     "preset=ext3rs-ordered,mem=2M,device=hdd-2009,sched=cfq"},
	    /* the real clock in emulate mode: operations sleep out their
	       modelled waits without the engine's lock, and their requests
	       wait together in the device's queue, in every journal mode */
	    {"ext2-emulate", NULL, "mem=1M,device=ssd,clock=emulate"},
	    {"ordered-emulate", "ext3",
	     "preset=ext3,mem=2M,commit=1,device=ssd,clock=emulate"},
	    {"writeback-emulate", "ext3-writeback",
	     "preset=ext3-writeback,mem=2M,device=ssd,clock=emulate"},
	    {"journal-emulate", "ext3-journal",
	     "preset=ext3-journal,mem=2M,device=ssd,clock=emulate"},
	    {"ext4-emulate", "ext4",
	     "preset=ext4,mem=4M,device=ssd,clock=emulate"},
	};
	uint64_t seed = 1;
	int ops = 6000;
	double t0;

	h_init(argc, argv);
	/* $T_CONCURRENT_OPS: fewer operations where each costs more (the
	 * ThreadSanitizer build) */
	if (getenv("T_CONCURRENT_OPS"))
		ops = atoi(getenv("T_CONCURRENT_OPS"));
	if (argc > 2)
		seed = strtoull(argv[2], NULL, 0);
	if (argc > 3)
		ops = atoi(argv[3]);
	if (ops < 1)
		h_bail("operations per worker must be at least 1");
	h_diag("seed %llu, %d operations per worker (rerun: %s %s %llu %d)",
	       (unsigned long long)seed, ops, argv[0], argv[1],
	       (unsigned long long)seed, ops);
	t0 = h_now();
	for (size_t i = 0; i < G_N_ELEMENTS(confs); i++)
		run_conf(&confs[i], seed, ops);
	h_diag("t_concurrent took %.1f s", h_now() - t0);
	return h_done();
}
