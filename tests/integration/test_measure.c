/*
 * test_measure.c - what a mount reports, checked through a real FUSE mount.
 *
 *  - mount -o stats=FILE,iolog=FILE,device=hdd-2009 (clock=account, the
 *    mount's default);
 *  - /.simfs is found by name but not listed by readdir of the root; it
 *    holds stats, stats.txt, config, last_error, sync; ".simfs" elsewhere
 *    is an ordinary name;
 *  - /.simfs/stats is JSON: between two snapshots the engine counted
 *    exactly the reads and writes the test made, and their bytes; device
 *    bytes and requests by category add up to the totals; a slow reader of
 *    one open sees one consistent snapshot;
 *  - /.simfs/config: a bad value (EINVAL), a number out of range
 *    (ERANGE), an unknown knob (ENOKEY), a knob or change the live mount
 *    cannot take (EPERM), and a write mixing a good and a bad line are
 *    refused with that errno and change nothing (last_error says why);
 *    clock=emulate and a new device model take effect and read back;
 *    counters carry on;
 *  - simfs sync MOUNTPOINT (and a write to /.simfs/sync) leaves no dirty
 *    bytes and flushes the device, where sync(2) reaches nothing; the sync
 *    file cannot be read; simfs sync refuses what is not a simfs mount;
 *  - nothing in /.simfs can be created, removed, renamed, chmod'ed,
 *    touched, linked or given an xattr;
 *  - after umount: the stats= file parses and agrees with the last live
 *    snapshot; the iolog parses (sfs_iolog_read) and its bytes and requests
 *    equal the device counters; simfs stats prints both; simfs plot draws
 *    the log and the layout; e2fsck -fn is clean;
 *  - device=none: no timing device (the stats' device section is the
 *    image file's counters), iolog= refused at mount, device= and clock=
 *    refused at runtime;
 *  - simfs mount -f prints the stats table on stderr at unmount.
 * No timing assertions.
 *
 * usage: test_measure SIMFS_BINARY
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <json-glib/json-glib.h>

#include "iolog.h"

#define KiB 1024
#define N_WRITES 48 /* pwrite calls of WRITE_SIZE */
#define WRITE_SIZE (64 * KiB)
#define N_READS 40 /* pread calls of READ_SIZE */
#define READ_SIZE (32 * KiB)

static char *img, *mnt, *stats_path, *log_path;

/* ---- JSON helpers ---- */

static JsonNode *parse_json(const char *text, size_t len, const char *what)
{
	JsonParser *p = json_parser_new();
	GError *err = NULL;
	JsonNode *root = NULL;

	if (json_parser_load_from_data(p, text, (gssize)len, &err))
		root = json_node_copy(json_parser_get_root(p));
	else
		h_diag("%s: not JSON: %s", what, err->message);
	if (err)
		g_error_free(err);
	g_object_unref(p);
	return root;
}

/* Read a whole file as glib does (open, fstat for the size, read). */
static JsonNode *load_json(const char *path)
{
	GError *err = NULL;
	char *text = NULL;
	gsize len = 0;
	JsonNode *root;

	if (!g_file_get_contents(path, &text, &len, &err)) {
		h_diag("%s: %s", path, err->message);
		g_error_free(err);
		return NULL;
	}
	root = parse_json(text, len, path);
	g_free(text);
	return root;
}

/* Member at a dotted path, or NULL. */
static JsonNode *jnode(JsonNode *root, const char *path)
{
	char **parts = g_strsplit(path, ".", -1);
	JsonNode *n = root;

	for (char **p = parts; *p && n; p++)
		n = JSON_NODE_HOLDS_OBJECT(n)
			? json_object_get_member(json_node_get_object(n), *p)
			: NULL;
	g_strfreev(parts);
	return n;
}

/* Integer at a dotted path, -1 if missing or not an integer. */
static long long jint(JsonNode *root, const char *path)
{
	JsonNode *n = root ? jnode(root, path) : NULL;

	if (!n || !JSON_NODE_HOLDS_VALUE(n) ||
	    json_node_get_value_type(n) != G_TYPE_INT64) {
		h_diag("no integer at %s", path);
		return -1;
	}
	return (long long)json_node_get_int(n);
}

static const char *jstr(JsonNode *root, const char *path)
{
	JsonNode *n = root ? jnode(root, path) : NULL;

	if (!n || !JSON_NODE_HOLDS_VALUE(n) ||
	    json_node_get_value_type(n) != G_TYPE_STRING)
		return "";
	return json_node_get_string(n);
}

/* Sum of one field over every category of device.submitted.by_category. */
static long long cat_sum(JsonNode *root, const char *field)
{
	JsonNode *cats = jnode(root, "device.submitted.by_category");
	long long sum = 0;
	GList *names, *l;

	if (!cats || !JSON_NODE_HOLDS_OBJECT(cats))
		return -1;
	names = json_object_get_members(json_node_get_object(cats));
	for (l = names; l; l = l->next) {
		char *path =
		    g_strdup_printf("device.submitted.by_category.%s.%s",
				    (char *)l->data, field);

		sum += jint(root, path);
		g_free(path);
	}
	g_list_free(names);
	return sum;
}

/* The device counters add up: categories sum to the totals. */
static void check_device_sums(JsonNode *s, const char *when)
{
	H_EQ(cat_sum(s, "write_bytes"), jint(s, "device.submitted.write.bytes"),
	     "%s: device write bytes by category sum to the total", when);
	H_EQ(cat_sum(s, "read_bytes"), jint(s, "device.submitted.read.bytes"),
	     "%s: device read bytes by category sum to the total", when);
	H_EQ(cat_sum(s, "write_requests"),
	     jint(s, "device.submitted.write.requests"),
	     "%s: device write requests by category sum to the total", when);
	H_EQ(cat_sum(s, "read_requests"),
	     jint(s, "device.submitted.read.requests"),
	     "%s: device read requests by category sum to the total", when);
}

static JsonNode *live_stats(const char *when)
{
	char *p = g_build_filename(mnt, ".simfs", "stats", NULL);
	JsonNode *s = load_json(p);

	H_OK(s != NULL, "%s: /.simfs/stats is JSON", when);
	g_free(p);
	return s;
}

/* ---- small file helpers ---- */

static char *read_text(const char *path)
{
	char *text = NULL;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		return g_strdup("");
	return text;
}

/* One write(2) of text to path; returns 0 or errno. */
static int write_once(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	ssize_t n;
	int e;

	if (fd < 0)
		return errno;
	n = write(fd, text, strlen(text));
	e = n < 0 ? errno : 0;
	close(fd);
	if (!e && (size_t)n != strlen(text))
		return EIO;
	return e;
}

/* Write text to path (created or truncated), fsync, close: 0 or errno. */
static int write_fsync(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int e = 0;

	if (fd < 0)
		return errno;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    fsync(fd) < 0)
		e = errno ? errno : EIO;
	close(fd);
	return e;
}

/* ---- the parts ---- */

static void check_control_dir(void)
{
	char *ctl = g_build_filename(mnt, ".simfs", NULL);
	char *sub = g_build_filename(mnt, "sub", NULL);
	char *subctl = g_build_filename(mnt, "sub", ".simfs", NULL);
	GPtrArray *root;
	struct stat st;
	GDir *d;
	const char *name;
	int n = 0;

	H_SYS(stat(ctl, &st), "stat /.simfs");
	H_OK(S_ISDIR(st.st_mode), "/.simfs is a directory");
	root = h_tree_scan(mnt);
	for (guint i = 0; root && i < root->len; i++) {
		struct h_entry *e = root->pdata[i];

		if (g_str_has_prefix(e->path, ".simfs"))
			n++;
	}
	H_EQ(n, 0, "readdir of the root does not list .simfs");
	h_tree_free(root);

	n = 0;
	d = g_dir_open(ctl, 0, NULL);
	while (d && (name = g_dir_read_name(d)))
		if (!strcmp(name, "stats") || !strcmp(name, "stats.txt") ||
		    !strcmp(name, "config") || !strcmp(name, "last_error") ||
		    !strcmp(name, "sync"))
			n++;
	if (d)
		g_dir_close(d);
	H_EQ(n, 5, "/.simfs lists stats, stats.txt, config, last_error, sync");

	/* elsewhere it is an ordinary name */
	H_SYS(mkdir(sub, 0755), "mkdir sub");
	H_SYS(mkdir(subctl, 0755), "mkdir sub/.simfs (an ordinary name)");
	H_SYS(rmdir(subctl), "rmdir sub/.simfs");
	H_SYS(rmdir(sub), "rmdir sub");
	g_free(ctl);
	g_free(sub);
	g_free(subctl);
}

static bool perm_err(int e)
{
	return e == EPERM || e == EACCES;
}

static void check_control_is_untouchable(void)
{
	char *ctl = g_build_filename(mnt, ".simfs", NULL);
	char *st = g_build_filename(ctl, "stats", NULL);
	char *cfg = g_build_filename(ctl, "config", NULL);
	char *nw = g_build_filename(ctl, "new", NULL);
	char *other = g_build_filename(mnt, "other", NULL);
	struct timespec ts[2] = {{0, 0}, {0, 0}};
	int fd, e;

	errno = 0;
	fd = open(nw, O_CREAT | O_WRONLY, 0644);
	e = errno;
	H_OK(fd < 0 && perm_err(e), "create in /.simfs refused (%s)",
	     strerror(e));
	if (fd >= 0)
		close(fd);
	errno = 0;
	e = mkdir(nw, 0755) < 0 ? errno : 0;
	H_OK(perm_err(e), "mkdir in /.simfs refused (%s)", strerror(e));
	H_ERR(unlink(st), EPERM, "unlink /.simfs/stats");
	H_ERR(rmdir(ctl), EPERM, "rmdir /.simfs");
	H_ERR(rename(ctl, other), EPERM, "rename /.simfs");
	H_ERR(rename(st, other), EPERM, "rename /.simfs/stats out");
	H_ERR(mkdir(ctl, 0755), EEXIST, "mkdir /.simfs: it exists");
	H_ERR(chmod(cfg, 0666), EPERM, "chmod /.simfs/config");
	H_ERR(utimensat(AT_FDCWD, st, ts, 0), EPERM, "utimes /.simfs/stats");
	H_ERR(link(cfg, other), EPERM, "link to /.simfs/config");
	H_ERR(setxattr(cfg, "user.x", "1", 1, 0), EPERM,
	      "setxattr on /.simfs/config");
	H_ERR(open(st, O_WRONLY), EACCES, "open /.simfs/stats for writing");
	H_OK(access(other, F_OK) != 0, "nothing appeared in the root");
	g_free(ctl);
	g_free(st);
	g_free(cfg);
	g_free(nw);
	g_free(other);
}

/* Write 1 MiB without fsync; the daemon's cache now holds it dirty. */
static void dirty_a_file(const char *name)
{
	char *f = g_build_filename(mnt, name, NULL);
	char *buf = g_malloc0(1 << 20);
	int fd = open(f, O_CREAT | O_WRONLY | O_TRUNC, 0644);

	H_SYS(fd, "create %s", name);
	if (fd >= 0) {
		H_OK(write(fd, buf, 1 << 20) == 1 << 20, "write 1 MiB to %s",
		     name);
		close(fd);
	}
	g_free(buf);
	g_free(f);
}

/* sync(2) does not reach the daemon; simfs sync and /.simfs/sync do. */
static void check_sync(void)
{
	char *ctl = g_build_filename(mnt, ".simfs", "sync", NULL);
	char *out = NULL, *err = NULL;
	JsonNode *a, *b, *c;

	dirty_a_file("unsynced");
	sync();
	a = live_stats("after sync(2)");
	H_OK(jint(a, "cache.dirty_bytes") >= 1 << 20,
	     "sync(2) left the daemon's dirty bytes (%lld)",
	     jint(a, "cache.dirty_bytes"));
	H_OK(h_runl(&out, &err, h_simfs(), "sync", mnt, NULL) == 0,
	     "simfs sync MOUNTPOINT exits 0 (%s)", err ? err : "");
	b = live_stats("after simfs sync");
	H_EQ(jint(b, "cache.dirty_bytes"), 0, "no dirty bytes after simfs sync");
	H_OK(jint(b, "device.submitted.flush.requests") >
		 jint(a, "device.submitted.flush.requests"),
	     "simfs sync flushed the device");
	g_free(out);
	g_free(err);
	out = err = NULL;

	dirty_a_file("unsynced2");
	H_EQ(write_once(ctl, "1\n"), 0, "a write to /.simfs/sync");
	c = live_stats("after a write to /.simfs/sync");
	H_EQ(jint(c, "cache.dirty_bytes"), 0,
	     "no dirty bytes after a write to /.simfs/sync");
	H_ERR(open(ctl, O_RDONLY), EACCES, "open /.simfs/sync for reading");
	char *plain = g_path_get_dirname(mnt);

	H_OK(h_runl(&out, &err, h_simfs(), "sync", plain, NULL) != 0 && err &&
		 strstr(err, "not mounted"),
	     "simfs sync of a plain directory is refused");
	g_free(plain);
	g_free(out);
	g_free(err);
	g_clear_pointer(&a, json_node_unref);
	g_clear_pointer(&b, json_node_unref);
	g_clear_pointer(&c, json_node_unref);
	g_free(ctl);
}

/* A reader taking one open in small pieces sees one whole document. */
static void check_slow_reader(void)
{
	char *p = g_build_filename(mnt, ".simfs", "stats", NULL);
	char *f = g_build_filename(mnt, "junk", NULL);
	GString *text = g_string_new(NULL);
	char buf[97];
	ssize_t n;
	JsonNode *s;
	int fd;

	fd = open(p, O_RDONLY);
	H_SYS(fd, "open /.simfs/stats");
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf));
		if (n > 0)
			g_string_append_len(text, buf, n);
		/* change the counters between reads of one open */
		h_write_file(f, "x", 1, 0644);
		unlink(f);
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			g_string_append_len(text, buf, n);
		close(fd);
	}
	s = parse_json(text->str, text->len, "stats read in 97-byte pieces");
	H_OK(s != NULL, "a slow reader of one open gets one whole document");
	if (s)
		json_node_unref(s);
	g_string_free(text, TRUE);
	g_free(p);
	g_free(f);
}

static void workload(void)
{
	char *f = g_build_filename(mnt, "data", NULL);
	uint8_t *buf = g_malloc(WRITE_SIZE);
	struct h_rng r;
	bool ok = true;
	int fd;

	h_rng_seed(&r, 7);
	fd = open(f, O_CREAT | O_RDWR | O_TRUNC, 0644);
	H_SYS(fd, "create data");
	if (fd < 0)
		goto out;
	for (int i = 0; i < N_WRITES && ok; i++) {
		h_fill(&r, buf, WRITE_SIZE);
		ok = pwrite(fd, buf, WRITE_SIZE, (off_t)i * WRITE_SIZE) ==
		     WRITE_SIZE;
	}
	H_OK(ok, "%d writes of %d bytes", N_WRITES, WRITE_SIZE);
	H_SYS(fsync(fd), "fsync data");
	for (int i = 0; i < N_READS && ok; i++)
		ok = pread(fd, buf, READ_SIZE,
			   (off_t)((i * 7) % (N_WRITES * 2)) * READ_SIZE) ==
		     READ_SIZE;
	H_OK(ok, "%d reads of %d bytes", N_READS, READ_SIZE);
	close(fd);
out:
	g_free(buf);
	g_free(f);
}

static void check_counts(JsonNode *a, JsonNode *b)
{
	H_EQ(jint(b, "ops.by_type.write") - jint(a, "ops.by_type.write"),
	     N_WRITES, "ops: one write counted per write(2)");
	H_EQ(jint(b, "ops.bytes_written") - jint(a, "ops.bytes_written"),
	     (long long)N_WRITES * WRITE_SIZE, "ops: bytes written exactly");
	H_EQ(jint(b, "ops.by_type.read") - jint(a, "ops.by_type.read"), N_READS,
	     "ops: one read counted per read(2)");
	H_EQ(jint(b, "ops.bytes_read") - jint(a, "ops.bytes_read"),
	     (long long)N_READS * READ_SIZE, "ops: bytes read exactly");
	H_OK(jint(b, "ops.by_type.fsync") > jint(a, "ops.by_type.fsync"),
	     "ops: the fsync was counted");
	H_OK(jint(b, "device.submitted.write.bytes") >=
		 (long long)N_WRITES * WRITE_SIZE,
	     "device: at least the data was written (fsync)");
	H_OK(!strcmp(jstr(b, "device.model"), "hdd-2009"),
	     "device model is hdd-2009 (got '%s')", jstr(b, "device.model"));
	check_device_sums(b, "live");
}

static void check_config(void)
{
	char *cfg = g_build_filename(mnt, ".simfs", "config", NULL);
	char *lerr = g_build_filename(mnt, ".simfs", "last_error", NULL);
	char *before = read_text(cfg), *after, *msg;
	char *f = g_build_filename(mnt, "emulated", NULL);
	JsonNode *s1, *s2;
	bool one_line;

	H_OK(strstr(before, "\ndevice=hdd-2009\n") &&
		 strstr(before, "\nclock=account\n") &&
		 strstr(before, "\nstats=") && strstr(before, "\niolog="),
	     "config shows device=hdd-2009 and clock=account");

	/* each refusal says why in its errno and in last_error */
	static const struct {
		const char *text;
		int err;
		const char *why; /* in last_error */
	} bad[] = {
	    {"clock=bogus\n", EINVAL, "bad value 'bogus' for clock"},
	    {"commit=abc\n", EINVAL, "bad number 'abc' for commit"},
	    {"commit=0\n", ERANGE, "commit=0 is"},
	    {"dirty_ratio=101\n", ERANGE, "dirty_ratio=101 is out of range"},
	    {"mem=1G\n", EPERM, "cannot change while mounted"},
	    {"alloc=blockmap\n", EPERM, "cannot change while mounted"},
	    {"nosuchknob=1\n", ENOKEY, "unknown option 'nosuchknob'"},
	    {"clock=emulate\ndevice=hdd-2009,rpm=bogus\n", EINVAL, "rpm"},
	    {"device=nosuchmodel\n", EINVAL, "nosuchmodel"},
	    {"clock=virtual\n", EPERM, "cannot change to clock=virtual"},
	    {"device=none\n", EPERM, "device=none only at mount time"},
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		char *shown = g_strescape(bad[i].text, NULL);
		int got = write_once(cfg, bad[i].text);

		H_EQ(got, bad[i].err, "config write '%s' refused with %s (%s)",
		     shown, g_strerror(bad[i].err), g_strerror(got));
		after = read_text(cfg);
		H_OK(!strcmp(after, before), "config unchanged after '%s'",
		     shown);
		msg = read_text(lerr);
		one_line = strlen(msg) > 1 &&
			   strchr(msg, '\n') == msg + strlen(msg) - 1;
		H_OK(one_line && strstr(msg, bad[i].why),
		     "last_error explains it in one line, naming '%s': %s",
		     bad[i].why, g_strchomp(msg));
		g_free(msg);
		g_free(after);
		g_free(shown);
	}

	s1 = live_stats("before clock=emulate");
	H_EQ(write_once(cfg, "clock=emulate\n"), 0, "config: clock=emulate");
	after = read_text(cfg);
	H_OK(strstr(after, "\nclock=emulate\n") != NULL,
	     "config reads back clock=emulate");
	g_free(after);
	msg = read_text(lerr);
	H_EQ(strlen(msg), 0, "last_error empty after a good write");
	g_free(msg);
	/* some I/O in emulate mode (a few modelled ms) */
	H_EQ(write_fsync(f, "emulated\n"), 0, "write + fsync in emulate mode");

	H_EQ(write_once(cfg, "device=hdd-2009,rpm=5400\nclock=account\n"), 0,
	     "config: device=hdd-2009,rpm=5400 and clock=account at once");
	after = read_text(cfg);
	H_OK(strstr(after, "\ndevice=hdd-2009,rpm=5400\n") &&
		 strstr(after, "\nclock=account\n"),
	     "config reads back the new device and clock");
	g_free(after);
	H_EQ(write_fsync(f, "again\n"), 0, "write + fsync on the new model");
	s2 = live_stats("after the device change");
	H_OK(jint(s2, "device.submitted.write.bytes") >
		 jint(s1, "device.submitted.write.bytes"),
	     "device counters carry on across the model change");
	H_EQ(jint(s2, "ops.bytes_written"), jint(s1, "ops.bytes_written") + 15,
	     "ops counters carry on");
	H_OK(!strcmp(jstr(s2, "device.model"), "hdd-2009"),
	     "the stats name the new model");
	unlink(f);
	if (s1)
		json_node_unref(s1);
	if (s2)
		json_node_unref(s2);
	g_free(before);
	g_free(cfg);
	g_free(lerr);
	g_free(f);
}

struct log_sum {
	long long rbytes, wbytes, reqs;
};

static int log_rec(void *ctx, const struct sfs_iolog_rec *r, unsigned long line)
{
	struct log_sum *s = ctx;

	if (r->op == SFS_IO_READ)
		s->rbytes += (long long)r->len_bytes;
	else if (r->op == SFS_IO_WRITE)
		s->wbytes += (long long)r->len_bytes;
	s->reqs++;
	return 0;
}

static void check_after_umount(JsonNode *last)
{
	JsonNode *f = load_json(stats_path);
	struct log_sum sum = {0};
	char *err = NULL, *out = NULL, *x, *y, *svg;
	int rc;

	H_OK(f != NULL, "the stats= file parses");
	if (!f)
		return;
	H_OK(jint(f, "simfs_stats_version") == 1, "it has simfs_stats_version");
	H_EQ(jint(f, "ops.by_type.write"), jint(last, "ops.by_type.write"),
	     "file and last live snapshot: same writes");
	H_EQ(jint(f, "ops.bytes_written"), jint(last, "ops.bytes_written"),
	     "file and last live snapshot: same bytes written");
	H_EQ(jint(f, "ops.bytes_read"), jint(last, "ops.bytes_read"),
	     "file and last live snapshot: same bytes read");
	H_OK(jint(f, "device.submitted.write.bytes") >=
		 jint(last, "device.submitted.write.bytes"),
	     "the file includes the final write-back");
	check_device_sums(f, "file");

	rc = sfs_iolog_read(log_path, log_rec, &sum, &err);
	H_EQ(rc, 0, "the iolog parses%s%s", err ? ": " : "", err ? err : "");
	g_free(err);
	H_EQ(sum.wbytes, jint(f, "device.submitted.write.bytes"),
	     "iolog write bytes equal the device counters");
	H_EQ(sum.rbytes, jint(f, "device.submitted.read.bytes"),
	     "iolog read bytes equal the device counters");
	H_EQ(sum.reqs,
	     jint(f, "device.served.read") + jint(f, "device.served.write") +
		 jint(f, "device.served.flush"),
	     "iolog records equal the requests the device served");

	rc = h_runl(&out, NULL, h_simfs(), "stats", stats_path, NULL);
	H_OK(rc == 0 && strstr(out, "\nops\n") == NULL &&
		 g_str_has_prefix(out, "ops\n") && strstr(out, "\ndevice\n") &&
		 strstr(out, "bytes_written"),
	     "simfs stats FILE prints the table");
	g_free(out);

	x = h_path("io.svg");
	y = h_path("layout.svg");
	rc = h_runl(NULL, &err, h_simfs(), "plot", "iolog", log_path, "-o", x,
		    NULL);
	svg = read_text(x);
	H_OK(rc == 0 && strstr(svg, "<svg") && strstr(svg, "Disk offset") &&
		 strstr(svg, "measure.iolog"),
	     "simfs plot iolog draws an SVG with its titles%s%s",
	     rc ? ": " : "", rc ? err : "");
	g_free(svg);
	g_free(err);
	err = NULL;
	rc =
	    h_runl(NULL, &err, h_simfs(), "plot", "layout", img, "-o", y, NULL);
	svg = read_text(y);
	H_OK(rc == 0 && strstr(svg, "<svg") && strstr(svg, "measure.img"),
	     "simfs plot layout draws an SVG titled with the image%s%s",
	     rc ? ": " : "", rc ? err : "");
	g_free(svg);
	g_free(err);
	g_free(x);
	g_free(y);
	json_node_unref(f);
}

static void check_device_none(void)
{
	char *cfg = g_build_filename(mnt, ".simfs", "config", NULL);
	char *opts = g_strdup_printf("device=none,iolog=%s", log_path);
	char *none = g_build_filename(mnt, "none", NULL);
	char *err = NULL;
	JsonNode *s;
	int rc;

	rc = h_runl(NULL, &err, h_simfs(), "mount", "-o", opts, img, mnt, NULL);
	h_track(mnt);
	H_OK(rc != 0 && strstr(err, "iolog") && !h_is_mounted(mnt),
	     "device=none,iolog=... refused at mount: %s", g_strchomp(err));
	g_free(err);
	if (h_is_mounted(mnt))
		h_umount(mnt);
	if (!H_OK(h_mount(img, mnt, "device=none") == 0, "mount device=none"))
		goto out;
	H_EQ(write_fsync(none, "x\n"), 0,
	     "write + fsync without a timing device");
	s = live_stats("device=none");
	H_OK(!strcmp(jstr(s, "device.name"), "file") &&
		 jint(s, "device.write.bytes") > 0,
	     "device=none: the device section is the image file's");
	H_EQ(write_once(cfg, "device=ssd\n"), EPERM,
	     "device=none: device= refused at runtime");
	H_EQ(write_once(cfg, "clock=emulate\n"), EPERM,
	     "device=none: clock= refused at runtime");
	if (s)
		json_node_unref(s);
	H_OK(h_umount(mnt) == 0, "umount device=none");
	H_OK(h_fsck_clean(img, NULL), "e2fsck -fn clean after device=none");
out:
	g_free(cfg);
	g_free(opts);
	g_free(none);
}

/* simfs mount -f: the table goes to stderr at unmount. */
static void check_foreground_report(void)
{
	const char *argv[] = {h_simfs(),    "mount", "-f", "-o",
			      "device=ssd", img,     mnt,  NULL};
	GError *gerr = NULL;
	GString *text = g_string_new(NULL);
	char buf[4096];
	int errfd = -1, status = 0;
	GPid pid;
	ssize_t n;

	if (!g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
				      G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL,
				      &pid, NULL, NULL, &errfd, &gerr)) {
		H_OK(false, "spawn simfs mount -f: %s", gerr->message);
		g_error_free(gerr);
		return;
	}
	for (double end = h_now() + 10 * h_time_scale();
	     !h_is_mounted(mnt) && h_now() < end;)
		g_usleep(50000);
	h_track(mnt);
	H_OK(h_is_mounted(mnt), "simfs mount -f is mounted");
	H_OK(h_umount(mnt) == 0, "umount the foreground mount");
	while ((n = read(errfd, buf, sizeof(buf))) > 0)
		g_string_append_len(text, buf, n);
	close(errfd);
	waitpid(pid, &status, 0);
	g_spawn_close_pid(pid);
	H_OK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	     "simfs mount -f exits 0 after umount");
	H_OK(g_str_has_prefix(text->str, "ops\n") &&
		 strstr(text->str, "\ndevice\n") &&
		 strstr(text->str, "busy_ns"),
	     "simfs mount -f printed the stats table at unmount");
	g_string_free(text, TRUE);
}

int main(int argc, char **argv)
{
	JsonNode *a, *b, *last = NULL;
	char *opts, *out = NULL;

	h_init(argc, argv);
	img = h_path("measure.img");
	mnt = h_path("mnt");
	stats_path = h_path("measure.json");
	log_path = h_path("measure.iolog");

	if (h_mkfs(img, "256M", NULL) != 0)
		h_bail("mkfs failed");
	opts = g_strdup_printf("stats=%s,iolog=%s,device=hdd-2009", stats_path,
			       log_path);
	if (h_mount(img, mnt, opts) != 0)
		h_bail("mount -o %s failed", opts);

	check_control_dir();
	a = live_stats("before the workload");
	workload();
	b = live_stats("after the workload");
	if (a && b)
		check_counts(a, b);
	check_slow_reader();
	check_control_is_untouchable();
	check_sync();
	check_config();
	H_OK(h_runl(&out, NULL, h_simfs(), "stats", mnt, NULL) == 0 &&
		 strstr(out, "busy_ns"),
	     "simfs stats MOUNTPOINT prints the live table");
	g_free(out);
	sync();
	last = live_stats("last before umount");

	H_OK(h_umount(mnt) == 0, "umount");
	if (last)
		check_after_umount(last);
	H_OK(h_fsck_clean(img, NULL), "e2fsck -fn clean");
	check_device_none();
	check_foreground_report();

	if (a)
		json_node_unref(a);
	if (b)
		json_node_unref(b);
	if (last)
		json_node_unref(last);
	g_free(opts);
	return h_done();
}
