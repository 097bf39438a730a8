/*
 * harness.c - temp dirs, running simfs, mounts that are always unmounted,
 * the e2fsck oracle, TAP output, seeded data and tree comparison for the
 * integration tests.  See harness.h for the cleanup design (atexit, signal
 * handlers and a guardian process for SIGKILL).
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#define H_MAX_MOUNTS 16

struct h_mnt {
	char path[PATH_MAX];
	bool fuse;  /* simfs (else a kernel loop mount) */
	bool live;
};

/* One test process = one harness; these are process-wide by nature. */
static struct {
	const char *simfs;
	char tmpdir[PATH_MAX];
	int guard_fd;        /* write end of the pipe to the guardian */
	pid_t guard_pid;
	pid_t self;
	struct h_mnt mnt[H_MAX_MOUNTS];
	int ntests;
	int nfail;
	bool cleaned;
} H = {.guard_fd = -1};

/* ---------------------------------------------------------------- TAP */

static void vdiag(const char *fmt, va_list ap)
	__attribute__((format(printf, 1, 0)));
static void vdiag(const char *fmt, va_list ap)
{
	char *msg = g_strdup_vprintf(fmt, ap);
	char **lines = g_strsplit(msg, "\n", -1);

	for (char **l = lines; *l; l++) {
		if (**l == '\0' && l[1] == NULL)
			break;
		printf("# %s\n", *l);
	}
	fflush(stdout);
	g_strfreev(lines);
	g_free(msg);
}

void h_diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vdiag(fmt, ap);
	va_end(ap);
}

static bool report(const char *file, int line, bool cond, const char *extra,
		   const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));
static bool report(const char *file, int line, bool cond, const char *extra,
		   const char *fmt, va_list ap)
{
	char *what = g_strdup_vprintf(fmt, ap);

	H.ntests++;
	printf("%s %d - %s\n", cond ? "ok" : "not ok", H.ntests, what);
	if (!cond) {
		H.nfail++;
		printf("#   failed at %s:%d%s%s\n", file, line,
		       extra ? ": " : "", extra ? extra : "");
	}
	fflush(stdout);
	g_free(what);
	return cond;
}

bool h_ok_at(const char *file, int line, bool cond, const char *fmt, ...)
{
	va_list ap;
	bool r;

	va_start(ap, fmt);
	r = report(file, line, cond, NULL, fmt, ap);
	va_end(ap);
	return r;
}

bool h_sys_at(const char *file, int line, long rc, int err, const char *fmt,
	      ...)
{
	va_list ap;
	char *extra = NULL;
	bool r;

	if (rc == -1)
		extra = g_strdup_printf("failed with %s (%d)", strerror(err),
					err);
	va_start(ap, fmt);
	r = report(file, line, rc != -1, extra, fmt, ap);
	va_end(ap);
	g_free(extra);
	errno = err;
	return r;
}

bool h_err_at(const char *file, int line, long rc, int err, int want,
	      const char *fmt, ...)
{
	va_list ap;
	char *extra = NULL;
	bool ok = rc == -1 && err == want;
	bool r;

	if (!ok && rc != -1)
		extra = g_strdup_printf("succeeded (returned %ld), expected "
					"%s",
					rc, strerrorname_np(want));
	else if (!ok)
		extra = g_strdup_printf("failed with %s, expected %s",
					strerrorname_np(err),
					strerrorname_np(want));
	va_start(ap, fmt);
	r = report(file, line, ok, extra, fmt, ap);
	va_end(ap);
	g_free(extra);
	return r;
}

bool h_eq_at(const char *file, int line, long long a, long long b,
	     const char *fmt, ...)
{
	va_list ap;
	char *extra = NULL;
	bool r;

	if (a != b)
		extra = g_strdup_printf("got %lld (%#llx), expected %lld "
					"(%#llx)",
					a, a, b, b);
	va_start(ap, fmt);
	r = report(file, line, a == b, extra, fmt, ap);
	va_end(ap);
	g_free(extra);
	return r;
}

void h_bail(const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	printf("Bail out! %s\n", msg);
	fflush(stdout);
	g_free(msg);
	H.nfail++;
	exit(1);
}

int h_failures(void)
{
	return H.nfail;
}

int h_done(void)
{
	printf("1..%d\n", H.ntests);
	if (H.nfail)
		printf("# %d of %d checks FAILED\n", H.nfail, H.ntests);
	fflush(stdout);
	return H.nfail ? 1 : 0;
}

double h_time_scale(void)
{
	const char *s = g_getenv("SIMFS_TEST_TIMEOUT_MULTIPLIER");
	char *end;
	unsigned long v;

	if (!s || !*s)
		return 1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v == 0 || v > 999999 || *s == '-' || *s == '+')
		h_bail("SIMFS_TEST_TIMEOUT_MULTIPLIER must be an integer from "
		       "1 to 999999, not '%s'",
		       s);
	return (double)v;
}

double h_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------- the guardian */

/*
 * Runs in its own session so that meson's SIGKILL of the test's process
 * group does not reach it.  Reads "M <conn> <path>", "K <path>" and
 * "U <path>" lines; at EOF (the test is gone, however it went) it aborts
 * and detaches what is still mounted and removes the temp dir.
 */
struct g_mnt {
	char path[PATH_MAX];
	unsigned conn; /* FUSE connection number, 0 for a kernel mount */
	bool live;
};

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void rmtree(const char *dir)
{
	/* FTW_MOUNT: never descend into something still mounted */
	nftw(dir, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static void guardian(int rfd, const char *tmpdir)
{
	struct g_mnt m[H_MAX_MOUNTS * 4];
	int n = 0;
	char line[PATH_MAX + 64];
	FILE *in;
	int nullfd;

	setsid();
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	nullfd = open("/dev/null", O_RDWR);
	if (nullfd >= 0) {
		/* keep no pipe of meson's open: it waits for their EOF */
		dup2(nullfd, 0);
		dup2(nullfd, 1);
		dup2(nullfd, 2);
		if (nullfd > 2)
			close(nullfd);
	}
	in = fdopen(rfd, "r");
	while (in && fgets(line, sizeof(line), in)) {
		char path[PATH_MAX];
		unsigned conn = 0;
		size_t len = strlen(line);

		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (line[0] == 'M' &&
		    sscanf(line, "M %u %4095s", &conn, path) == 2) {
		} else if (line[0] == 'K' && sscanf(line, "K %4095s", path) == 1) {
			conn = 0;
		} else if (line[0] == 'U' && sscanf(line, "U %4095s", path) == 1) {
			for (int i = 0; i < n; i++)
				if (m[i].live && !strcmp(m[i].path, path))
					m[i].live = false;
			continue;
		} else {
			continue;
		}
		if (n < (int)G_N_ELEMENTS(m)) {
			g_strlcpy(m[n].path, path, sizeof(m[n].path));
			m[n].conn = conn;
			m[n].live = true;
			n++;
		}
	}
	/* the test has exited */
	for (int i = n - 1; i >= 0; i--) {
		if (!m[i].live)
			continue;
		if (m[i].conn) {
			char p[128];
			int fd;

			snprintf(p, sizeof(p),
				 "/sys/fs/fuse/connections/%u/abort", m[i].conn);
			fd = open(p, O_WRONLY);
			if (fd >= 0) {
				if (write(fd, "1", 1) < 0) {
				}
				close(fd);
			}
		}
		umount2(m[i].path, MNT_DETACH);
	}
	if (!getenv("H_KEEP"))
		rmtree(tmpdir);
	_exit(0);
}

static void guard_send(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static void guard_send(const char *fmt, ...)
{
	va_list ap;
	char buf[PATH_MAX + 64];
	int len;

	if (H.guard_fd < 0)
		return;
	va_start(ap, fmt);
	len = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (len > 0 && write(H.guard_fd, buf, len) < 0) {
	}
}

/* ----------------------------------------------------- running things */

/* fork + exec + wait, no output capture: usable from a signal handler */
static int run_plain(const char *const *argv)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);

		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
		}
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int h_run(char **out, char **err, const char *const *argv)
{
	GError *gerr = NULL;
	char *o = NULL, *e = NULL;
	int wait_status = 0;
	int rc;

	if (!g_spawn_sync(NULL, (char **)argv, NULL,
			  G_SPAWN_SEARCH_PATH | G_SPAWN_CHILD_INHERITS_STDIN,
			  NULL, NULL, &o, &e, &wait_status, &gerr)) {
		h_diag("cannot run %s: %s", argv[0], gerr->message);
		g_error_free(gerr);
		if (out)
			*out = g_strdup("");
		if (err)
			*err = g_strdup("");
		return -1;
	}
	if (WIFEXITED(wait_status))
		rc = WEXITSTATUS(wait_status);
	else if (WIFSIGNALED(wait_status))
		rc = 128 + WTERMSIG(wait_status);
	else
		rc = -1;
	if (out)
		*out = o;
	else
		g_free(o);
	if (err)
		*err = e;
	else
		g_free(e);
	return rc;
}

int h_runl(char **out, char **err, const char *arg0, ...)
{
	GPtrArray *a = g_ptr_array_new();
	va_list ap;
	const char *s;
	int rc;

	g_ptr_array_add(a, (gpointer)arg0);
	va_start(ap, arg0);
	while ((s = va_arg(ap, const char *)) != NULL)
		g_ptr_array_add(a, (gpointer)s);
	va_end(ap);
	g_ptr_array_add(a, NULL);
	rc = h_run(out, err, (const char *const *)a->pdata);
	g_ptr_array_free(a, TRUE);
	return rc;
}

const char *h_simfs(void)
{
	return H.simfs;
}

const char *h_tmpdir(void)
{
	return H.tmpdir;
}

char *h_path(const char *fmt, ...)
{
	va_list ap;
	char *rel, *p;

	va_start(ap, fmt);
	rel = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	p = g_build_filename(H.tmpdir, rel, NULL);
	g_free(rel);
	return p;
}

int h_mkfs(const char *image, const char *size, const char *const *extra)
{
	GPtrArray *a = g_ptr_array_new();
	char *err = NULL;
	int rc;

	g_ptr_array_add(a, (gpointer)H.simfs);
	g_ptr_array_add(a, "mkfs");
	for (; extra && *extra; extra++)
		g_ptr_array_add(a, (gpointer)*extra);
	g_ptr_array_add(a, (gpointer)image);
	if (size)
		g_ptr_array_add(a, (gpointer)size);
	g_ptr_array_add(a, NULL);
	rc = h_run(NULL, &err, (const char *const *)a->pdata);
	if (rc != 0)
		h_diag("simfs mkfs %s %s: exit %d: %s", image, size ? size : "",
		       rc, err);
	g_free(err);
	g_ptr_array_free(a, TRUE);
	return rc;
}

/* Decode the octal escapes of a mountinfo path in place. */
static void unescape(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] &&
		    s[3]) {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

/* The filesystem type mounted at mnt ("fuse.simfs", "ext2"), or NULL;
 * g_free it. */
static char *mount_type(const char *mnt)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[2 * PATH_MAX];
	char *type = NULL;

	if (!f)
		return NULL;
	while (!type && fgets(line, sizeof(line), f)) {
		char *save = NULL, *tok = strtok_r(line, " ", &save);

		for (int i = 0; tok && i < 4; i++)
			tok = strtok_r(NULL, " ", &save);
		if (!tok)
			continue;
		unescape(tok);
		if (strcmp(tok, mnt))
			continue;
		/* optional fields end with "-", then the type */
		while ((tok = strtok_r(NULL, " ", &save)) && strcmp(tok, "-"))
			;
		tok = tok ? strtok_r(NULL, " ", &save) : NULL;
		type = g_strdup(tok ? tok : "?");
	}
	fclose(f);
	return type;
}

bool h_is_mounted(const char *mnt)
{
	char *t = mount_type(mnt);
	bool found = t != NULL;

	g_free(t);
	return found;
}

static struct h_mnt *mnt_slot(const char *mnt)
{
	for (int i = 0; i < H_MAX_MOUNTS; i++)
		if (H.mnt[i].live && !strcmp(H.mnt[i].path, mnt))
			return &H.mnt[i];
	return NULL;
}

static void mnt_add(const char *mnt, bool fuse)
{
	struct stat st;
	unsigned conn = 0;

	if (mnt_slot(mnt))
		return;
	if (fuse && stat(mnt, &st) == 0 && major(st.st_dev) == 0)
		conn = minor(st.st_dev);
	for (int i = 0; i < H_MAX_MOUNTS; i++) {
		if (!H.mnt[i].live) {
			g_strlcpy(H.mnt[i].path, mnt, sizeof(H.mnt[i].path));
			H.mnt[i].fuse = fuse;
			H.mnt[i].live = true;
			break;
		}
	}
	if (fuse && conn)
		guard_send("M %u %s\n", conn, mnt);
	else
		guard_send("K %s\n", mnt);
}

static void mnt_del(const char *mnt)
{
	struct h_mnt *m = mnt_slot(mnt);

	if (m)
		m->live = false;
	guard_send("U %s\n", mnt);
}

void h_track(const char *mnt)
{
	if (h_is_mounted(mnt))
		mnt_add(mnt, true);
}

int h_mount(const char *image, const char *mnt, const char *opts)
{
	char *err = NULL, *type;
	int rc;

	if (mkdir(mnt, 0755) < 0 && errno != EEXIST) {
		h_diag("mkdir %s: %s", mnt, strerror(errno));
		return -1;
	}
	if (opts && *opts)
		rc = h_runl(NULL, &err, H.simfs, "mount", "-o", opts, image,
			    mnt, NULL);
	else
		rc = h_runl(NULL, &err, H.simfs, "mount", image, mnt, NULL);
	if (h_is_mounted(mnt))
		mnt_add(mnt, true);
	if (rc != 0) {
		h_diag("simfs mount %s %s%s%s: exit %d: %s", image, mnt,
		       opts ? " -o " : "", opts ? opts : "", rc, err);
		g_free(err);
		return -1;
	}
	g_free(err);
	type = mount_type(mnt);
	if (!type) {
		h_diag("simfs mount exited 0 but nothing is mounted at %s",
		       mnt);
		return -1;
	}
	if (strcmp(type, "fuse.simfs"))
		h_diag("note: %s is mounted with type %s, not fuse.simfs", mnt,
		       type);
	g_free(type);
	return 0;
}

int h_umount(const char *mnt)
{
	char *err = NULL;
	int rc = h_runl(NULL, &err, H.simfs, "umount", mnt, NULL);

	if (rc != 0 || h_is_mounted(mnt)) {
		h_diag("simfs umount %s: exit %d%s: %s", mnt, rc,
		       h_is_mounted(mnt) ? " and still mounted" : "", err);
		g_free(err);
		if (h_is_mounted(mnt))
			h_runl(NULL, NULL, "fusermount3", "-u", "-z", mnt,
			       NULL);
		if (!h_is_mounted(mnt))
			mnt_del(mnt);
		return -1;
	}
	g_free(err);
	mnt_del(mnt);
	return 0;
}

int h_kmount(const char *image, const char *mnt, char **err)
{
	return h_kmount_type(image, mnt, "ext2", err);
}

int h_kmount_type(const char *image, const char *mnt, const char *type,
		  char **err)
{
	return h_kmount_opts(image, mnt, type, "loop,ro", err);
}

int h_kmount_opts(const char *image, const char *mnt, const char *type,
		  const char *opts, char **err)
{
	int rc;

	if (mkdir(mnt, 0755) < 0 && errno != EEXIST) {
		if (err)
			*err = g_strdup_printf("mkdir %s: %s", mnt,
					       strerror(errno));
		return -1;
	}
	rc = h_runl(NULL, err, "mount", "-o", opts, "-t", type, image, mnt,
		    NULL);
	if (h_is_mounted(mnt))
		mnt_add(mnt, false);
	return rc == 0 && h_is_mounted(mnt) ? 0 : -1;
}

int h_tmpfs(const char *mnt, const char *size)
{
	char *opts = g_strdup_printf("size=%s", size);
	int rc;

	if (mkdir(mnt, 0755) < 0 && errno != EEXIST) {
		h_diag("mkdir %s: %s", mnt, strerror(errno));
		g_free(opts);
		return -1;
	}
	rc = mount("tmpfs", mnt, "tmpfs", 0, opts);
	if (rc < 0)
		h_diag("mount tmpfs at %s: %s", mnt, strerror(errno));
	g_free(opts);
	if (h_is_mounted(mnt))
		mnt_add(mnt, false);
	return rc < 0 ? -1 : 0;
}

int h_kumount(const char *mnt)
{
	int rc = h_runl(NULL, NULL, "umount", mnt, NULL);

	if (h_is_mounted(mnt))
		umount2(mnt, MNT_DETACH);
	if (h_is_mounted(mnt))
		return -1;
	mnt_del(mnt);
	return rc == 0 ? 0 : -1;
}

int h_mke2fs(const char *image, const char *type, const char *bs,
	     const char *size)
{
	char *err = NULL;
	int rc;

	unlink(image);
	rc = h_runl(NULL, &err, "mke2fs", "-F", "-q", "-t", type, "-b", bs,
		    image, size, NULL);
	if (rc)
		h_diag("mke2fs -t %s -b %s: %s", type, bs, err ? err : "?");
	g_free(err);
	return rc;
}

bool h_loop_possible(char **why)
{
	char *img = h_path("probe.img"), *m = h_path("probe-mnt");
	bool ok = false;

	if (h_mke2fs(img, "ext4", "4096", "64M") == 0) {
		ok = h_kmount_opts(img, m, "ext4", "loop", why) == 0;
		if (ok)
			h_kumount(m);
	} else {
		*why = g_strdup("mke2fs failed");
	}
	unlink(img);
	g_free(img);
	g_free(m);
	return ok;
}

bool h_kpair_up(struct h_kpair *p, const char *preset, const char *type,
		const char *bs)
{
	const char *mkfs_args[] = {"-b", bs, "--preset", preset, NULL};
	char *opts = g_strdup_printf("preset=%s", preset), *err = NULL;

	*p = (struct h_kpair){
	    .preset = preset,
	    .bs = bs,
	    .img = h_path("%s-%s.img", preset, bs),
	    .mnt = h_path("%s-%s-mnt", preset, bs),
	    .kimg = h_path("k-%s-%s.img", type, bs),
	    .kmnt = h_path("k-%s-%s-mnt", type, bs),
	};
	if (h_mkfs(p->img, "64M", mkfs_args) != 0 ||
	    h_mke2fs(p->kimg, type, bs, "64M")) {
		H_OK(false, "%s %s: images made", preset, bs);
		goto out;
	}
	p->mounted = h_mount(p->img, p->mnt, opts) == 0;
	p->kmounted = p->mounted && h_kmount_opts(p->kimg, p->kmnt, "ext4",
						  "loop", &err) == 0;
	if (!p->kmounted)
		H_OK(false, "%s %s: both mounted (%s)", preset, bs,
		     err ? err : "simfs mount failed");
out:
	g_free(err);
	g_free(opts);
	return p->kmounted;
}

void h_kpair_down(struct h_kpair *p)
{
	if (p->mounted) {
		H_OK(h_umount(p->mnt) == 0, "%s %s: umount", p->preset, p->bs);
		H_OK(h_fsck_clean(p->img, NULL), "%s %s: e2fsck -fn clean",
		     p->preset, p->bs);
	}
	if (p->kmounted) {
		H_OK(h_kumount(p->kmnt) == 0, "%s %s: kernel umount",
		     p->preset, p->bs);
		H_OK(h_fsck_clean(p->kimg, NULL),
		     "%s %s: the kernel's image is clean too", p->preset,
		     p->bs);
	}
	unlink(p->img);
	unlink(p->kimg);
	g_free(p->img);
	g_free(p->mnt);
	g_free(p->kimg);
	g_free(p->kmnt);
}

bool h_kpair_configs(int argc, char **argv, unsigned steps,
		     void (*fn)(const char *preset, const char *type,
				const char *bs, uint64_t seed, unsigned steps))
{
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	char *why = NULL;

	if (argc > 3)
		steps = (unsigned)atoi(argv[3]);
	h_diag("seed %llu, %u steps (rerun: %s %s %llu %u)",
	       (unsigned long long)seed, steps, argv[0], argv[1],
	       (unsigned long long)seed, steps);
	if (!h_loop_possible(&why)) {
		h_diag("SKIP: loop mounting is impossible here (%s)",
		       why ? why : "?");
		g_free(why);
		return false;
	}
	fn("ext4", "ext4", "4096", seed, steps);
	fn("ext4", "ext4", "1024", seed + 1, steps);
	fn("ext3", "ext3", "4096", seed + 2, steps);
	return true;
}

static int scan_processes(const char *needle, pid_t *first)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int count = 0;

	*first = 0;
	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char p[64], buf[8192];
		pid_t pid;
		ssize_t n;
		int fd;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid = (pid_t)atoi(de->d_name);
		if (pid == getpid() || pid == H.guard_pid)
			continue;
		snprintf(p, sizeof(p), "/proc/%d/cmdline", pid);
		fd = open(p, O_RDONLY);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		for (ssize_t i = 0; i < n; i += strlen(buf + i) + 1)
			if (strstr(buf + i, needle)) {
				if (!count++)
					*first = pid;
				break;
			}
	}
	closedir(d);
	return count;
}

pid_t h_find_process(const char *needle)
{
	pid_t first;

	scan_processes(needle, &first);
	return first;
}

int h_count_processes(const char *needle)
{
	pid_t first;

	return scan_processes(needle, &first);
}

/* Is this one of the lines a clean `e2fsck -fn` prints? */
static bool fsck_line_ok(const char *l)
{
	unsigned long a, b, c, d;
	double pct;
	const char *colon;

	if (*l == '\0')
		return true;
	if (g_str_has_prefix(l, "e2fsck ") && strchr(l, '('))
		return true;
	if (g_str_has_prefix(l, "Pass ") && l[5] >= '1' && l[5] <= '5' &&
	    l[6] == ':')
		return true;
	/* "<name>: 11/16384 files (0.0% non-contiguous), 1254/16384 blocks" */
	colon = strstr(l, ": ");
	while (colon) {
		char tail[8];

		if (sscanf(colon, ": %lu/%lu files (%lf%% non-contiguous), "
				  "%lu/%lu blocks%7s",
			   &a, &b, &pct, &c, &d, tail) == 5)
			return true;
		colon = strstr(colon + 1, ": ");
	}
	return false;
}

bool h_fsck_clean(const char *image, char **out)
{
	char *o = NULL, *e = NULL, *all;
	char **lines;
	bool clean;
	int rc;

	rc = h_runl(&o, &e, "e2fsck", "-fn", image, NULL);
	all = g_strconcat(e ? e : "", o ? o : "", NULL);
	clean = rc == 0;
	lines = g_strsplit(all, "\n", -1);
	for (char **l = lines; *l; l++)
		if (!fsck_line_ok(*l))
			clean = false;
	g_strfreev(lines);
	if (!clean)
		h_diag("e2fsck -fn %s: exit %d, output:\n%s", image, rc, all);
	if (out)
		*out = all;
	else
		g_free(all);
	g_free(o);
	g_free(e);
	return clean;
}

/* ------------------------------------------------------------ cleanup */

static void cleanup(void)
{
	if (H.cleaned || getpid() != H.self)
		return;
	H.cleaned = true;
	for (int i = H_MAX_MOUNTS - 1; i >= 0; i--) {
		struct h_mnt *m = &H.mnt[i];

		if (!m->live)
			continue;
		if (m->fuse) {
			const char *um[] = {H.simfs, "umount", m->path, NULL};
			const char *fu[] = {"fusermount3", "-u", "-z", m->path,
					    NULL};

			if (run_plain(um) != 0 || h_is_mounted(m->path))
				run_plain(fu);
		} else {
			umount2(m->path, MNT_DETACH);
		}
		if (!h_is_mounted(m->path)) {
			m->live = false;
			guard_send("U %s\n", m->path);
		}
	}
	if (H.guard_fd >= 0) {
		close(H.guard_fd);
		H.guard_fd = -1;
		if (H.guard_pid > 0)
			while (waitpid(H.guard_pid, NULL, 0) < 0 &&
			       errno == EINTR)
				;
	}
}

static void on_signal(int sig)
{
	static const char msg[] = "# harness: signal, unmounting\n";

	if (write(1, msg, sizeof(msg) - 1) < 0) {
	}
	cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

void h_init(int argc, char **argv)
{
	static const int sigs[] = {SIGINT,  SIGTERM, SIGHUP, SIGQUIT,
				   SIGSEGV, SIGBUS,  SIGABRT, SIGFPE,
				   SIGILL,  SIGALRM};
	struct sigaction sa;
	char *tmpl;
	int pfd[2];
	int fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	H.self = getpid();
	H.simfs = argc > 1 ? argv[1] : getenv("SIMFS");
	if (!H.simfs || !*H.simfs) {
		printf("Bail out! usage: %s SIMFS_BINARY [args] (or set "
		       "$SIMFS)\n",
		       argv[0]);
		exit(1);
	}
	if (access(H.simfs, X_OK) != 0) {
		printf("Bail out! %s: %s\n", H.simfs, strerror(errno));
		exit(1);
	}
	h_time_scale(); /* a bad SIMFS_TEST_TIMEOUT_MULTIPLIER: at once */
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("1..0 # SKIP cannot open /dev/fuse: %s\n",
		       strerror(errno));
		exit(77);
	}
	close(fd);

	tmpl = g_build_filename(g_get_tmp_dir(), "simfs-it-XXXXXX", NULL);
	if (!mkdtemp(tmpl)) {
		printf("Bail out! mkdtemp %s: %s\n", tmpl, strerror(errno));
		exit(1);
	}
	if (!realpath(tmpl, H.tmpdir))
		g_strlcpy(H.tmpdir, tmpl, sizeof(H.tmpdir));
	g_free(tmpl);
	printf("# temp dir %s\n", H.tmpdir);

	if (pipe2(pfd, O_CLOEXEC) < 0) {
		printf("Bail out! pipe: %s\n", strerror(errno));
		exit(1);
	}
	fflush(stdout);
	H.guard_pid = fork();
	if (H.guard_pid == 0) {
		close(pfd[1]);
		guardian(pfd[0], H.tmpdir);
	}
	close(pfd[0]);
	H.guard_fd = pfd[1];
	if (H.guard_pid < 0) {
		printf("Bail out! fork: %s\n", strerror(errno));
		exit(1);
	}
	atexit(cleanup);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < G_N_ELEMENTS(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* --------------------------------------------------------------- data */

void h_rng_seed(struct h_rng *r, uint64_t seed)
{
	r->s = seed;
}

uint64_t h_rand(struct h_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t h_below(struct h_rng *r, uint64_t n)
{
	return n ? h_rand(r) % n : 0;
}

void h_fill(struct h_rng *r, void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n >= 8) {
		uint64_t v = h_rand(r);

		memcpy(p, &v, 8);
		p += 8;
		n -= 8;
	}
	if (n) {
		uint64_t v = h_rand(r);

		memcpy(p, &v, n);
	}
}

uint64_t h_hash_buf(const void *buf, size_t n)
{
	return XXH3_64bits(buf, n);
}

uint64_t h_hash_file(const char *path, int *err)
{
	XXH3_state_t *st = XXH3_createState();
	size_t bufsz = 1 << 20;
	char *buf = g_malloc(bufsz);
	uint64_t h = 0;
	int fd;

	*err = 0;
	XXH3_64bits_reset(st);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*err = -errno;
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf, bufsz);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			*err = -errno;
			break;
		}
		if (n == 0)
			break;
		XXH3_64bits_update(st, buf, (size_t)n);
	}
	close(fd);
	h = XXH3_64bits_digest(st);
out:
	XXH3_freeState(st);
	g_free(buf);
	return h;
}

int h_pwrite_all(int fd, const void *buf, size_t n, off_t off)
{
	const char *p = buf;

	while (n) {
		ssize_t w = pwrite(fd, p, n, off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

int h_write_file(const char *path, const void *buf, size_t n, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	int rc;

	if (fd < 0)
		return -errno;
	rc = h_pwrite_all(fd, buf, n, 0);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

/* -------------------------------------------------------------- trees */

static void entry_free(gpointer p)
{
	struct h_entry *e = p;

	g_free(e->path);
	g_free(e->target);
	g_free(e);
}

GPtrArray *h_tree_new(void)
{
	return g_ptr_array_new_with_free_func(entry_free);
}

void h_tree_free(GPtrArray *tree)
{
	if (tree)
		g_ptr_array_free(tree, TRUE);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool scan_dir(const char *root, const char *rel, GPtrArray *out)
{
	char *dpath = *rel ? g_build_filename(root, rel, NULL) : g_strdup(root);
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	DIR *d = opendir(dpath);
	struct dirent *de;
	bool ok = true;

	if (!d) {
		h_diag("scan: opendir %s: %s", dpath, strerror(errno));
		ok = false;
		goto out;
	}
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		g_ptr_array_add(names, g_strdup(de->d_name));
		errno = 0;
	}
	if (errno) {
		h_diag("scan: readdir %s: %s", dpath, strerror(errno));
		ok = false;
	}
	closedir(d);
	if (names->len > 1)
		qsort(names->pdata, names->len, sizeof(char *), cmp_str);
	for (guint i = 0; i < names->len; i++) {
		const char *name = names->pdata[i];
		char *crel = *rel ? g_build_filename(rel, name, NULL)
				  : g_strdup(name);
		char *full = g_build_filename(root, crel, NULL);
		struct h_entry *e = g_new0(struct h_entry, 1);
		struct stat st;

		e->path = crel;
		g_ptr_array_add(out, e);
		if (lstat(full, &st) < 0) {
			h_diag("scan: lstat %s: %s", full, strerror(errno));
			ok = false;
			g_free(full);
			continue;
		}
		e->mode = st.st_mode;
		e->nlink = st.st_nlink;
		e->uid = st.st_uid;
		e->gid = st.st_gid;
		e->size = (uint64_t)st.st_size;
		if (S_ISREG(st.st_mode)) {
			int err;

			e->hash = h_hash_file(full, &err);
			if (err) {
				h_diag("scan: read %s: %s", full,
				       strerror(-err));
				ok = false;
			}
		} else if (S_ISLNK(st.st_mode)) {
			char buf[PATH_MAX + 1];
			ssize_t n = readlink(full, buf, sizeof(buf) - 1);

			if (n < 0) {
				h_diag("scan: readlink %s: %s", full,
				       strerror(errno));
				ok = false;
			} else {
				buf[n] = '\0';
				e->target = g_strdup(buf);
				e->hash = h_hash_buf(buf, (size_t)n);
			}
		} else if (S_ISDIR(st.st_mode)) {
			if (!scan_dir(root, crel, out))
				ok = false;
		}
		g_free(full);
	}
out:
	g_ptr_array_free(names, TRUE);
	g_free(dpath);
	return ok;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct h_entry *x = *(struct h_entry *const *)a;
	const struct h_entry *y = *(struct h_entry *const *)b;

	return strcmp(x->path, y->path);
}

void h_tree_sort(GPtrArray *tree)
{
	if (tree->len > 1)
		qsort(tree->pdata, tree->len, sizeof(gpointer), cmp_entry);
}

GPtrArray *h_tree_scan(const char *root)
{
	GPtrArray *t = g_ptr_array_new_with_free_func(entry_free);

	if (!scan_dir(root, "", t)) {
		g_ptr_array_free(t, TRUE);
		return NULL;
	}
	h_tree_sort(t);
	return t;
}

static const char *type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "symlink";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	case S_IFCHR:
		return "chardev";
	case S_IFBLK:
		return "blockdev";
	}
	return "?";
}

int h_tree_compare(GPtrArray *a, GPtrArray *b, const char *na,
		   const char *nb, unsigned flags)
{
	guint i = 0, j = 0;
	int diffs = 0;

#define DIFF(...)                                                            \
	do {                                                                 \
		if (diffs++ < 20)                                            \
			h_diag(__VA_ARGS__);                                 \
	} while (0)

	if (!a || !b)
		return 1;
	while (i < a->len || j < b->len) {
		struct h_entry *x = i < a->len ? a->pdata[i] : NULL;
		struct h_entry *y = j < b->len ? b->pdata[j] : NULL;
		int c = !x ? 1 : !y ? -1 : strcmp(x->path, y->path);

		if (c < 0) {
			DIFF("only in %s: %s (%s)", na, x->path,
			     type_name(x->mode));
			i++;
			continue;
		}
		if (c > 0) {
			DIFF("only in %s: %s (%s)", nb, y->path,
			     type_name(y->mode));
			j++;
			continue;
		}
		i++;
		j++;
		if ((x->mode & S_IFMT) != (y->mode & S_IFMT)) {
			DIFF("%s: %s is a %s, %s a %s", x->path, na,
			     type_name(x->mode), nb, type_name(y->mode));
			continue;
		}
		if (x->mode != y->mode)
			DIFF("%s: mode %s %06o, %s %06o", x->path, na,
			     (unsigned)x->mode, nb, (unsigned)y->mode);
		if ((flags & H_CMP_NLINK) && x->nlink != y->nlink)
			DIFF("%s: nlink %s %lu, %s %lu", x->path, na,
			     (unsigned long)x->nlink, nb,
			     (unsigned long)y->nlink);
		if ((flags & H_CMP_OWNER) &&
		    (x->uid != y->uid || x->gid != y->gid))
			DIFF("%s: owner %s %u:%u, %s %u:%u", x->path, na,
			     x->uid, x->gid, nb, y->uid, y->gid);
		if (S_ISDIR(x->mode))
			continue;
		if (x->size != y->size)
			DIFF("%s: size %s %llu, %s %llu", x->path, na,
			     (unsigned long long)x->size, nb,
			     (unsigned long long)y->size);
		else if (x->hash != y->hash)
			DIFF("%s: content differs (%s %016llx, %s %016llx)%s%s"
			     "%s%s",
			     x->path, na, (unsigned long long)x->hash, nb,
			     (unsigned long long)y->hash,
			     x->target ? " targets " : "",
			     x->target ? x->target : "", y->target ? " vs " : "",
			     y->target ? y->target : "");
	}
	if (diffs > 20)
		h_diag("... %d differences in all", diffs);
#undef DIFF
	return diffs;
}
