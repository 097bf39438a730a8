/*
 * test_dbench.c - the dbench workload (models/workload/dbench.c) on its
 * own, with a fake clock: the `now` handed to next() is the test's.
 *
 * The real client.txt (installed by tests/setup-debian.sh) parses, and
 * one pass over it yields exactly one op per line under the line's NBENCH
 * name, counted here again with plain fgets/strncmp.  Two clients work in
 * clients/client0 and clients/client1, start over at the end of the
 * loadfile, enter "run" after the warm-up and stop at warmup + time, at a
 * line boundary.  Statuses become expected results; done() adds the scan
 * of a failed lookup and the close of an open that should have failed;
 * Deltree removes what the client made.  A malformed line is refused with
 * its line number; the report computes dbench's MB/sec from a result.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "testsupport.h"
#include "workload.h"

#define CLIENT_TXT "/usr/share/dbench/client.txt"
#define SEC 1000000000ULL

/* The workload "spec,loadfile=loadfile". */
static struct sfs_workload *mk(const char *spec0, const char *loadfile)
{
	char *spec = g_strconcat(spec0, ",loadfile=", loadfile, NULL);
	struct sfs_workload *w = sfs_test_workload(spec);

	g_free(spec);
	return w;
}

/* The next op of client c at now; fails the test on an error or done. */
static void next_op(struct sfs_workload *w, unsigned c, sfs_ns_t now,
		    struct sfs_wop *op)
{
	char *err = NULL;
	int rc = sfs_workload_next(w, c, now, op, &err);

	if (rc != 1)
		print_error("next: %d %s\n", rc, err ? err : "");
	assert_int_equal(rc, 1);
	g_free(err);
}

/* The next op of c whose label is an NBENCH name (no '/'). */
static void next_main(struct sfs_workload *w, unsigned c, sfs_ns_t now,
		      struct sfs_wop *op)
{
	do
		next_op(w, c, now, op);
	while (op->label && strchr(op->label, '/'));
}

/* Each loadfile operation and the label (dbench 4.0's table name). */
static const char *const names[][2] = {
    {"NTCreateX", "NTCreateX"},
    {"Close", "Close"},
    {"Rename", "Rename"},
    {"Unlink", "Unlink"},
    {"Deltree", "Deltree"},
    {"Rmdir", "Rmdir"},
    {"Mkdir", "Mkdir"},
    {"QUERY_PATH_INFORMATION", "Qpathinfo"},
    {"QUERY_FILE_INFORMATION", "Qfileinfo"},
    {"QUERY_FS_INFORMATION", "Qfsinfo"},
    {"SET_FILE_INFORMATION", "Sfileinfo"},
    {"FIND_FIRST", "Find"},
    {"WriteX", "WriteX"},
    {"ReadX", "ReadX"},
    {"LockX", "LockX"},
    {"UnlockX", "UnlockX"},
    {"Flush", "Flush"},
};
#define NNAMES (sizeof(names) / sizeof(names[0]))
#define READX 13

/* The index of s[0..len) in column col of names, or -1. */
static int name_index(int col, const char *s, size_t len)
{
	for (unsigned i = 0; i < NNAMES; i++)
		if (strlen(names[i][col]) == len &&
		    strncmp(s, names[i][col], len) == 0)
			return (int)i;
	return -1;
}

static void test_dbench_client_txt_one_op_per_line(void **state)
{
	uint64_t want[NNAMES] = {0}, got[NNAMES] = {0}, lines = 0, ops = 0;
	char buf[4096];
	FILE *f = fopen(CLIENT_TXT, "r");
	struct sfs_workload *w;
	struct sfs_wop op;
	bool first_write = true;
	int rc;

	(void)state;
	assert_non_null(f); /* tests/setup-debian.sh installs dbench */
	while (fgets(buf, sizeof(buf), f)) {
		size_t n = strcspn(buf, " \n");
		int i = name_index(0, buf, n);

		assert_true(i >= 0);
		want[i]++;
		lines++;
	}
	fclose(f);
	assert_true(lines > 400000);

	w = mk("dbench,clients=1,once,warmup=0,time=0,cleanup=no", CLIENT_TXT);
	next_op(w, 0, 0, &op);
	assert_string_equal(op.label, "Deltree");
	assert_int_equal(op.type, SFS_WOP_READDIR);
	assert_string_equal(op.path, "clients/client0");
	assert_string_equal(op.phase, "run");
	for (;;) {
		int i;

		if (op.label && !strchr(op.label, '/')) {
			i = name_index(1, op.label, strlen(op.label));
			assert_true(i >= 0);
			got[i]++;
			ops++;
		}
		/* the first WriteX: "WriteX 9938 65534 1 1" */
		if (op.type == SFS_WOP_WRITE && first_write) {
			assert_int_equal(op.fd, 9938);
			assert_int_equal(op.off, 65534);
			assert_int_equal(op.len, 1);
			first_write = false;
		}
		char *err = NULL;
		rc = sfs_workload_next(w, 0, 0, &op, &err);
		if (rc < 0)
			print_error("rc %d: %s\n", rc, err ? err : "");
		g_free(err);
		if (rc != 1)
			break;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(ops, lines);
	for (unsigned i = 0; i < NNAMES; i++) {
		if (want[i] != got[i])
			print_error("%s: %" PRIu64 " lines, %" PRIu64 " ops\n",
				    names[i][0], want[i], got[i]);
		assert_int_equal(want[i], got[i]);
	}
	assert_true(want[READX] > 100000); /* ReadX: 124199 in Debian's file */
	sfs_workload_free(w);
}

/* ---- a toy file system: paths and kinds, enough to check statuses ---- */

struct toyfs {
	GHashTable *kind;    /* path -> 1 file, 2 dir */
	GHashTable *handles; /* fd -> path */
};

static char *toy_parent(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? g_strndup(p, (size_t)(s - p)) : g_strdup(".");
}

static int toy_kind(struct toyfs *t, const char *p)
{
	if (strcmp(p, ".") == 0)
		return 2;
	return GPOINTER_TO_INT(g_hash_table_lookup(t->kind, p));
}

static bool toy_has_children(struct toyfs *t, const char *p)
{
	GHashTableIter it;
	gpointer k;
	size_t n = strlen(p);

	g_hash_table_iter_init(&it, t->kind);
	while (g_hash_table_iter_next(&it, &k, NULL))
		if (strncmp(k, p, n) == 0 && ((char *)k)[n] == '/')
			return true;
	return false;
}

static int toy_make(struct toyfs *t, const char *p, int kind)
{
	char *par = toy_parent(p);
	int pk = toy_kind(t, par);

	g_free(par);
	if (pk != 2)
		return -ENOENT;
	g_hash_table_insert(t->kind, g_strdup(p), GINT_TO_POINTER(kind));
	return 0;
}

static int toy_run(struct toyfs *t, const struct sfs_wop *op)
{
	int k = op->path ? toy_kind(t, op->path) : 0;
	gpointer fd = GINT_TO_POINTER(op->fd);

	switch (op->type) {
	case SFS_WOP_OPEN:
		if (k == 2 && !(op->flags & O_DIRECTORY))
			return -EISDIR;
		if (k == 1 && (op->flags & O_DIRECTORY))
			return -ENOTDIR;
		if (!k) {
			if (!(op->flags & O_CREAT))
				return -ENOENT;
			int rc = toy_make(t, op->path, 1);
			if (rc)
				return rc;
		}
		g_hash_table_insert(t->handles, fd, g_strdup(op->path));
		return 0;
	case SFS_WOP_CLOSE:
		return g_hash_table_remove(t->handles, fd) ? 0 : -EBADF;
	case SFS_WOP_READ:
	case SFS_WOP_WRITE:
	case SFS_WOP_FSYNC:
		return g_hash_table_contains(t->handles, fd) ? 0 : -EBADF;
	case SFS_WOP_STAT:
		return k ? 0 : -ENOENT;
	case SFS_WOP_READDIR:
		return k == 2 ? 0 : k ? -ENOTDIR : -ENOENT;
	case SFS_WOP_MKDIR:
		return k ? -EEXIST : toy_make(t, op->path, 2);
	case SFS_WOP_RMDIR:
		if (k != 2)
			return k ? -ENOTDIR : -ENOENT;
		if (toy_has_children(t, op->path))
			return -ENOTEMPTY;
		g_hash_table_remove(t->kind, op->path);
		return 0;
	case SFS_WOP_UNLINK:
		if (k != 1)
			return k ? -EISDIR : -ENOENT;
		g_hash_table_remove(t->kind, op->path);
		return 0;
	case SFS_WOP_RENAME: {
		GPtrArray *move = g_ptr_array_new_with_free_func(g_free);
		GHashTableIter it;
		gpointer key;
		size_t n = strlen(op->path);

		if (!k)
			return -ENOENT;
		g_hash_table_iter_init(&it, t->kind);
		while (g_hash_table_iter_next(&it, &key, NULL))
			if (strcmp(key, op->path) == 0 ||
			    (strncmp(key, op->path, n) == 0 &&
			     ((char *)key)[n] == '/'))
				g_ptr_array_add(move, g_strdup(key));
		for (guint i = 0; i < move->len; i++) {
			const char *o = move->pdata[i];
			gpointer v = g_hash_table_lookup(t->kind, o);
			g_hash_table_remove(t->kind, o);
			g_hash_table_insert(
			    t->kind, g_strconcat(op->path2, o + n, NULL), v);
		}
		g_ptr_array_free(move, TRUE);
		return 0;
	}
	default:
		return 0;
	}
}

/* Two passes of the real client.txt against the toy: every status that
 * the loadfile gives comes true, on the second pass too (Deltree leaves
 * the client directory as the first pass found it). */
static void test_dbench_client_txt_statuses_hold_over_passes(void **state)
{
	struct toyfs t = {
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
	    g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free),
	};
	struct sfs_workload *w =
	    mk("dbench,clients=2,warmup=0,time=1000000,cleanup=no", CLIENT_TXT);
	uint64_t mismatches = 0, deltrees = 0, readdirs = 0, checked = 0;
	struct sfs_wop op;

	(void)state;
	/* client 1 first: "clients" is made by whoever comes first */
	for (unsigned c = 2; c-- > 0;) {
		deltrees = 0;
		while (deltrees < 5) {
			next_op(w, c, 0, &op);
			int rc = toy_run(&t, &op);
			checked += op.expect != SFS_WOP_ANY;
			if (op.expect != SFS_WOP_ANY && rc != op.expect &&
			    mismatches++ < 5)
				print_error("client %u: %s %s: %d, expected "
					    "%d\n",
					    c, op.label, op.path ? op.path : "",
					    rc, op.expect);
			if (op.type == SFS_WOP_READDIR &&
			    !strcmp(op.label, "NTCreateX/resolve"))
				readdirs++;
			sfs_workload_done(w, c, &op, rc);
			/* Deltree ends each pass and begins the next: the
			 * fifth is the third pass's first line */
			if (!strcmp(op.label, "Deltree"))
				deltrees++;
		}
	}
	assert_int_equal(mismatches, 0);
	assert_true(checked > 4 * 400000); /* 2 clients, 2 passes */
	assert_true(readdirs > 0);	   /* failed lookups read the parent */
	/* the toy holds only the two (empty) client dirs' parent */
	assert_int_equal(g_hash_table_size(t.kind), 1);
	assert_int_equal(toy_kind(&t, "clients"), 2);
	sfs_workload_free(w);
	g_hash_table_destroy(t.kind);
	g_hash_table_destroy(t.handles);
}

static const char small_load[] =
    "Deltree \"\\clients\\client1\" NT_STATUS_OK\n"
    "Mkdir \"\\clients\" NT_STATUS_OK\n"
    "NTCreateX \"\\clients\\client1\" 0x1 0x2 100 NT_STATUS_OK\n"
    "Close 100 NT_STATUS_OK\n"
    "# a comment line\n"
    "NTCreateX \"\\clients\\client1\\a b.txt\" 0x40 0x2 101 NT_STATUS_OK\n"
    "WriteX 101 0 4096 4096 NT_STATUS_OK\n"
    "Close 101 NT_STATUS_OK\n";
#define SMALL_LINES 7

static void test_dbench_two_clients_loop_warmup_and_stop(void **state)
{
	char *lf = sfs_test_tmp_file("small.txt", small_load);
	struct sfs_workload *w =
	    mk("dbench,clients=2,time=10,warmup=2,cleanup=no", lf);
	struct sfs_wop op;
	char *err = NULL;

	(void)state;
	assert_int_equal(sfs_workload_clients(w), 2);
	for (unsigned c = 0; c < 2; c++) {
		char *own = g_strdup_printf("clients/client%u", c);

		next_op(w, c, 0, &op);
		assert_string_equal(op.phase, "warmup");
		assert_string_equal(op.label, "Deltree");
		assert_string_equal(op.path, own);
		/* two passes and the first line of a third, all in warm-up */
		for (unsigned k = 1; k <= 2 * SMALL_LINES; k++) {
			next_main(w, c, 1 * SEC, &op);
			assert_null(op.phase);
			if (op.path && strcmp(op.path, "clients") != 0)
				assert_true(g_str_has_prefix(op.path, own));
			if (k == SMALL_LINES || k == 2 * SMALL_LINES) {
				/* the pass starts over with Deltree */
				assert_string_equal(op.label, "Deltree");
				assert_string_equal(op.path, own);
				assert_int_equal(op.expect, 0);
			}
			if (k == 4) {
				assert_string_equal(op.label, "NTCreateX");
				char *p = g_strdup_printf("%s/a b.txt", own);
				assert_string_equal(op.path, p);
				g_free(p);
				assert_int_equal(op.fd, 101);
			}
		}
		g_free(own);
	}
	/* the second Deltree walks what the first pass made */
	{
		struct sfs_workload *w2 =
		    mk("dbench,clients=1,time=10,warmup=0,cleanup=no", lf);
		for (unsigned k = 0; k < SMALL_LINES; k++)
			next_main(w2, 0, 0, &op);
		next_op(w2, 0, 0, &op);
		assert_string_equal(op.label, "Deltree");
		next_op(w2, 0, 0, &op);
		assert_int_equal(op.type, SFS_WOP_UNLINK);
		assert_string_equal(op.label, "Deltree/unlink");
		assert_string_equal(op.path, "clients/client0/a b.txt");
		next_op(w2, 0, 0, &op);
		assert_int_equal(op.type, SFS_WOP_RMDIR);
		assert_string_equal(op.path, "clients/client0");
		next_op(w2, 0, 0, &op);
		assert_string_equal(op.label, "Mkdir/resolve");
		sfs_workload_free(w2);
	}
	/* past the warm-up: the next line starts phase "run" */
	for (unsigned k = 0; k < 10; k++) {
		next_op(w, 0, 3 * SEC, &op);
		if (op.phase)
			break;
	}
	assert_non_null(op.phase);
	assert_string_equal(op.phase, "run");
	next_op(w, 0, 5 * SEC, &op);
	assert_null(op.phase);
	/* at warmup + time it stops within one line, and stays done */
	int rc, n = 0;
	while ((rc = sfs_workload_next(w, 0, 12 * SEC, &op, &err)) == 1)
		assert_true(++n < 10);
	assert_int_equal(rc, 0);
	assert_int_equal(sfs_workload_next(w, 0, 13 * SEC, &op, &err), 0);
	/* client 1 still runs, with cleanup=no nothing more */
	next_op(w, 1, 5 * SEC, &op);
	sfs_workload_free(w);
	sfs_test_rm_tmp_file(lf);
}

static void test_dbench_cleanup_phase(void **state)
{
	char *lf = sfs_test_tmp_file("small.txt", small_load);
	struct sfs_workload *w = mk("dbench,clients=1,time=1,warmup=0", lf);
	struct sfs_wop op;
	char *err = NULL;
	bool rmdir_clients = false;
	int rc;

	(void)state;
	for (unsigned k = 0; k < SMALL_LINES; k++)
		next_main(w, 0, 0, &op);
	next_op(w, 0, 2 * SEC, &op);
	assert_string_equal(op.phase, "cleanup");
	assert_string_equal(op.label, "Deltree");
	assert_string_equal(op.path, "clients/client0");
	while ((rc = sfs_workload_next(w, 0, 2 * SEC, &op, &err)) == 1)
		if (op.type == SFS_WOP_RMDIR && !strcmp(op.path, "clients"))
			rmdir_clients = true;
	assert_int_equal(rc, 0);
	assert_true(rmdir_clients);
	sfs_workload_free(w);
	sfs_test_rm_tmp_file(lf);
}

static void test_dbench_statuses_and_done(void **state)
{
	char *lf = sfs_test_tmp_file(
	    "st.txt",
	    "NTCreateX \"\\clients\\client1\\x\" 0x40 0x1 5 "
	    "NT_STATUS_OBJECT_NAME_NOT_FOUND\n"
	    "NTCreateX \"\\clients\\client1\\y\" 0x40 0x2 6 "
	    "NT_STATUS_OBJECT_NAME_COLLISION\n"
	    "NTCreateX \"\\clients\\client1\\z\" 0x40 0x5 7 NT_STATUS_OK\n"
	    "QUERY_PATH_INFORMATION \"\\clients\\client1\\q\" 1004 "
	    "NT_STATUS_SOMETHING_ELSE\n"
	    "FIND_FIRST \"\\clients\\client1\\*\" 260 1366 0 "
	    "NT_STATUS_NO_SUCH_FILE\n"
	    "QUERY_FILE_INFORMATION 7 258 NT_STATUS_OK\n"
	    "Unlink \"\\clients\\client1\\z\" 0x6 0x0\n"
	    "2.5 QUERY_FS_INFORMATION 1 NT_STATUS_OK\n");
	struct sfs_workload *w =
	    mk("dbench,clients=1,time=10,warmup=0,cleanup=no", lf);
	struct sfs_wop op;

	(void)state;
	/* NTCreateX x: lookup fails, dbench scans the parent */
	next_op(w, 0, 0, &op);
	assert_int_equal(op.type, SFS_WOP_STAT);
	assert_string_equal(op.label, "NTCreateX/resolve");
	assert_int_equal(op.expect, SFS_WOP_ANY);
	sfs_workload_done(w, 0, &op, -ENOENT);
	next_op(w, 0, 0, &op);
	assert_int_equal(op.type, SFS_WOP_READDIR);
	assert_string_equal(op.label, "NTCreateX/resolve");
	assert_string_equal(op.path, "clients/client0");
	sfs_workload_done(w, 0, &op, 0);
	next_op(w, 0, 0, &op);
	assert_int_equal(op.type, SFS_WOP_OPEN);
	assert_string_equal(op.label, "NTCreateX");
	assert_int_equal(op.flags, O_RDWR);
	assert_int_equal(op.expect, -ENOENT);
	assert_int_equal(op.fd, 5);
	/* it should have failed: dbench closes what it opened */
	sfs_workload_done(w, 0, &op, 0);
	next_op(w, 0, 0, &op);
	assert_int_equal(op.type, SFS_WOP_CLOSE);
	assert_string_equal(op.label, "NTCreateX/close");
	assert_int_equal(op.fd, 5);
	/* y: FILE_CREATE is O_CREAT (no O_EXCL, as dbench) */
	next_main(w, 0, 0, &op);
	assert_int_equal(op.flags, O_RDWR | O_CREAT);
	assert_int_equal(op.expect, -EEXIST);
	/* z: FILE_OVERWRITE_IF */
	next_main(w, 0, 0, &op);
	assert_int_equal(op.flags, O_RDWR | O_CREAT | O_TRUNC);
	assert_int_equal(op.expect, 0);
	assert_int_equal(op.fd, 7);
	/* an unknown status: any result */
	next_main(w, 0, 0, &op);
	assert_int_equal(op.type, SFS_WOP_STAT);
	assert_string_equal(op.label, "Qpathinfo");
	assert_int_equal(op.expect, SFS_WOP_ANY);
	/* a wildcard with no match: the directory is read, and exists */
	next_main(w, 0, 0, &op);
	assert_int_equal(op.type, SFS_WOP_READDIR);
	assert_string_equal(op.path, "clients/client0");
	assert_int_equal(op.expect, 0);
	/* fstat of handle 7: a stat of the name it was opened with */
	next_main(w, 0, 0, &op);
	assert_int_equal(op.type, SFS_WOP_STAT);
	assert_string_equal(op.path, "clients/client0/z");
	assert_int_equal(op.expect, 0);
	next_main(w, 0, 0, &op);
	assert_int_equal(op.type, SFS_WOP_UNLINK);
	assert_int_equal(op.expect, 0); /* "0x0" */
	/* a timestamp: the op waits until 2.5 s into the pass */
	next_main(w, 0, 1 * SEC, &op);
	assert_int_equal(op.type, SFS_WOP_STATFS);
	assert_int_equal(op.think_ns, 1500000000ULL);
	sfs_workload_free(w);
	sfs_test_rm_tmp_file(lf);
}

static void test_dbench_flush_and_fsync_options(void **state)
{
	char *lf = sfs_test_tmp_file(
	    "f.txt", "NTCreateX \"\\clients\\client1\\f\" 0x40 0x2 "
		     "9 NT_STATUS_OK\n"
		     "WriteX 9 0 10 10 NT_STATUS_OK\n"
		     "Flush 9 NT_STATUS_OK\n");
	struct sfs_workload *w;
	struct sfs_wop op;

	(void)state;
	/* dbench 4: Flush is fsync; -F adds an fsync after each write */
	w = mk("dbench,time=10,warmup=0,fsync", lf);
	next_main(w, 0, 0, &op);
	next_main(w, 0, 0, &op);
	assert_int_equal(op.type, SFS_WOP_WRITE);
	next_op(w, 0, 0, &op);
	assert_int_equal(op.type, SFS_WOP_FSYNC);
	assert_string_equal(op.label, "WriteX/fsync");
	next_op(w, 0, 0, &op);
	assert_int_equal(op.type, SFS_WOP_FSYNC);
	assert_string_equal(op.label, "Flush");
	sfs_workload_free(w);
	/* flush=no: nothing, as the dbench 1.x backend */
	w = mk("dbench,time=10,warmup=0,flush=no,sync", lf);
	next_main(w, 0, 0, &op);
	assert_int_equal(op.flags, O_RDWR | O_CREAT | O_SYNC);
	next_main(w, 0, 0, &op);
	next_op(w, 0, 0, &op);
	assert_int_equal(op.type, SFS_WOP_THINK);
	assert_string_equal(op.label, "Flush");
	assert_int_equal(op.think_ns, 0);
	sfs_workload_free(w);
	sfs_test_rm_tmp_file(lf);
}

static void test_dbench_unknown_handle_fails(void **state)
{
	char *lf =
	    sfs_test_tmp_file("h.txt", "QUERY_FS_INFORMATION 1 NT_STATUS_OK\n"
				       "Close 42 NT_STATUS_OK\n");
	struct sfs_workload *w =
	    mk("dbench,clients=1,time=10,warmup=0,cleanup=no", lf);
	struct sfs_wop op;
	char *err = NULL;

	(void)state;
	next_op(w, 0, 0, &op);
	assert_int_equal(sfs_workload_next(w, 0, 0, &op, &err), -EINVAL);
	assert_non_null(err);
	assert_non_null(strstr(err, "h.txt:2:"));
	assert_non_null(strstr(err, "handle 42 is not open"));
	g_free(err);
	sfs_workload_free(w);
	sfs_test_rm_tmp_file(lf);
}

static void expect_refused(const char *text, int want_rc, const char *want)
{
	char *lf = sfs_test_tmp_file("bad.txt", text);
	char *spec = g_strconcat("dbench,loadfile=", lf, NULL);
	struct sfs_workload *w = NULL;
	char *err = NULL;

	assert_int_equal(sfs_workload_new(spec, &w, &err), want_rc);
	assert_null(w);
	assert_non_null(err);
	if (!strstr(err, want))
		print_error("'%s' lacks '%s'\n", err, want);
	assert_non_null(strstr(err, want));
	g_free(err);
	g_free(spec);
	sfs_test_rm_tmp_file(lf);
}

static void test_dbench_malformed_line_refused(void **state)
{
	const char *ok = "Mkdir \"\\clients\" NT_STATUS_OK\n"
			 "QUERY_FS_INFORMATION 1 NT_STATUS_OK\n";
	char *t;

	(void)state;
	t = g_strconcat(ok, "Foo 1 NT_STATUS_OK\n", NULL);
	expect_refused(t, -EINVAL, "bad.txt:3: unknown operation 'Foo'");
	g_free(t);
	t = g_strconcat(ok, "\n# comment\nClose NT_STATUS_OK\n", NULL);
	expect_refused(t, -EINVAL, "bad.txt:5: bad number of arguments");
	g_free(t);
	expect_refused("Close 12x NT_STATUS_OK\n", -EINVAL,
		       "bad.txt:1: Close: bad number '12x'");
	expect_refused("Close 12 OK\n", -EINVAL, "bad.txt:1: bad status");
	expect_refused("Unlink clients 0x6 NT_STATUS_OK\n", -EINVAL,
		       "bad.txt:1: Unlink: expected a path");
	expect_refused("Unlink \"\\a 0x6 NT_STATUS_OK\n", -EINVAL,
		       "bad.txt:1: unterminated quote");
	expect_refused("Unlink \"\\clients\\..\\..\\x\" 0x6 NT_STATUS_OK\n",
		       -EINVAL, "bad.txt:1: Unlink: a path with '..'");
	expect_refused("# nothing\n", -EINVAL, "no operations");

	struct sfs_workload *w = NULL;
	char *err = NULL;
	assert_int_equal(
	    sfs_workload_new("dbench,loadfile=/nonexistent/x.txt", &w, &err),
	    -ENOENT);
	assert_non_null(strstr(err, "cannot read loadfile"));
	g_free(err);
	err = NULL;
	assert_int_equal(sfs_workload_new("dbench,clients=0", &w, &err),
			 -EINVAL);
	g_free(err);
}

static void test_dbench_report_throughput(void **state)
{
	char *lf = sfs_test_tmp_file("small.txt", small_load);
	/* no warmup given: dbench's timelimit / 5 */
	struct sfs_workload *w = mk("dbench,clients=2,time=10", lf);
	struct sfs_wl_result r;
	struct sfs_wl_phase *ph;
	struct sfs_wop rd = {.type = SFS_WOP_READ, .label = "ReadX"};
	struct sfs_wop wr = {.type = SFS_WOP_WRITE, .label = "WriteX"};
	struct sfs_wop op = {.type = SFS_WOP_OPEN, .label = "NTCreateX"};
	struct sfs_wop res = {.type = SFS_WOP_STAT,
			      .label = "NTCreateX/resolve"};
	char *text = NULL, *row;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	(void)state;
	sfs_wl_result_init(&r, 2);
	ph = sfs_wl_result_enter(&r, "warmup", 0);
	sfs_wl_result_op(&r, ph, 0, &rd, 0, 99000000, 0, SEC); /* not counted */
	ph = sfs_wl_result_enter(&r, "run", 2 * SEC);
	sfs_wl_result_op(&r, ph, 0, &rd, 0, 30000000, 2 * SEC,
			 2 * SEC + 500000000);
	sfs_wl_result_op(&r, ph, 1, &wr, 0, 20000000, 11 * SEC + 900000000,
			 12 * SEC);
	sfs_wl_result_op(&r, ph, 1, &res, 0, 0, 3 * SEC, 3 * SEC + 1000000);
	sfs_wl_result_op(&r, ph, 1, &op, 0, 0, 4 * SEC, 4 * SEC + 3000000);
	sfs_workload_report(w, &r, out);
	fclose(out);
	/* 50e6 bytes over the 10 s of "run" */
	if (!strstr(text, "Throughput 5 MB/sec  2 clients  2 procs  "
			  "max_latency=500.000 ms\n"))
		print_error("%s", text);
	assert_non_null(strstr(text, "Throughput 5 MB/sec  2 clients  2 procs  "
				     "max_latency=500.000 ms\n"));
	assert_non_null(
	    strstr(text, " Operation      Count    AvgLat    MaxLat\n"));
	/* the lookup's time is part of NTCreateX's average */
	/* dbench 4.0's " %-12s %7u %9.03f %9.03f" */
	assert_non_null(
	    strstr(text, " NTCreateX          1     4.000     3.000\n"));
	row = g_strdup_printf(" %-12s %7d %9.03f %9.03f\n", "ReadX", 1, 500.0,
			      500.0);
	assert_non_null(strstr(text, row));
	g_free(row);
	assert_null(strstr(text, "Deltree")); /* no count, no row */
	assert_non_null(strstr(text, "Running for 10 seconds with load '"));
	assert_non_null(strstr(text, "small.txt' and minimum warmup 2 secs\n"));
	free(text);
	sfs_wl_result_free(&r);
	sfs_workload_free(w);
	/* under 5 s, time / 5 is 0 whole seconds: no warm-up */
	struct sfs_wop first;
	w = mk("dbench,time=4", lf);
	next_op(w, 0, 0, &first);
	assert_string_equal(first.phase, "run");
	sfs_workload_free(w);
	sfs_test_rm_tmp_file(lf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dbench_client_txt_one_op_per_line),
	    cmocka_unit_test(test_dbench_client_txt_statuses_hold_over_passes),
	    cmocka_unit_test(test_dbench_two_clients_loop_warmup_and_stop),
	    cmocka_unit_test(test_dbench_cleanup_phase),
	    cmocka_unit_test(test_dbench_statuses_and_done),
	    cmocka_unit_test(test_dbench_flush_and_fsync_options),
	    cmocka_unit_test(test_dbench_unknown_handle_fails),
	    cmocka_unit_test(test_dbench_malformed_line_refused),
	    cmocka_unit_test(test_dbench_report_throughput),
	};

	return cmocka_run_group_tests_name("dbench", tests, NULL, NULL);
}
