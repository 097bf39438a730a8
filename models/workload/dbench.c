/*
 * dbench.c - the `dbench` workload of `simfs run` (workload.h): N clients
 * play dbench 4's NBENCH loadfile (/usr/share/dbench/client.txt), each in
 * its own directory clients/clientN.
 *
 * init parses the loadfile once into an array of lines shared by every
 * client (struct db_line; a malformed line: "FILE:LINE: what").  next()
 * expands the client's current line into its operations (db_expand) on
 * the client's queue and hands them out one by one; done() may put one
 * more at the head (a failed lookup makes dbench read the parent; an
 * open that should have failed is closed).
 *
 * Invariants:
 *  1. every line a client plays yields exactly one operation labelled with
 *     the NBENCH name ("NTCreateX"); the other calls dbench makes for it
 *     (name lookup, the mkdir of a directory create, a Deltree's walk) are
 *     labelled "NAME/what", so the result counts lines per name as
 *     dbench's table does, and the report adds their time in;
 *  2. a client changes phase or stops only between lines: "warmup" while
 *     now < warmup, "run" until warmup + time, then "cleanup", then done;
 *  3. a client's live set holds every path its lines made and did not
 *     remove, as the statuses say (done() drops a create that failed);
 *     Deltree removes what it holds at or below the path.
 * Each operation's mapping and the differences from dbench: doc/dbench.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>

#include <glib.h>

#include "workload.h"

#define DB_MAX_CLIENTS 65536u
#define DB_MAX_TOKENS 24 /* dbench reads 19; more is surely a typo */
#define DB_NOPATH UINT32_MAX

/* NTCreateX CreateDisposition and CreateOptions (MS-SMB). */
#define FILE_CREATE 2
#define FILE_OVERWRITE 4
#define FILE_OVERWRITE_IF 5
#define FILE_DIRECTORY_FILE 0x0001

/* The operations, in the order of dbench 4.0's table (child.c). */
enum db_opcode {
	DB_NTCREATEX = 0,
	DB_CLOSE,
	DB_RENAME,
	DB_UNLINK,
	DB_DELTREE,
	DB_RMDIR,
	DB_MKDIR,
	DB_QPATHINFO,
	DB_QFILEINFO,
	DB_QFSINFO,
	DB_SFILEINFO,
	DB_FIND_FIRST,
	DB_WRITEX,
	DB_READX,
	DB_LOCKX,
	DB_UNLOCKX,
	DB_FLUSH,
	DB_SLEEP, /* not in the table */
	DB_NOPS
};

struct db_opdef {
	const char *name;    /* in the loadfile (matched exactly, as 4.0) */
	const char *label;   /* in dbench's table, and the op's label */
	const char *args;    /* one letter per argument: p path, n number */
	const char *resolve; /* label of its name resolution, or NULL */
};

static const struct db_opdef db_ops[DB_NOPS] = {
    [DB_NTCREATEX] = {"NTCreateX", "NTCreateX", "pnnn", "NTCreateX/resolve"},
    [DB_CLOSE] = {"Close", "Close", "n", NULL},
    [DB_RENAME] = {"Rename", "Rename", "pp", "Rename/resolve"},
    [DB_UNLINK] = {"Unlink", "Unlink", "pn", "Unlink/resolve"},
    [DB_DELTREE] = {"Deltree", "Deltree", "p", NULL},
    [DB_RMDIR] = {"Rmdir", "Rmdir", "p", "Rmdir/resolve"},
    [DB_MKDIR] = {"Mkdir", "Mkdir", "p", "Mkdir/resolve"},
    [DB_QPATHINFO] = {"QUERY_PATH_INFORMATION", "Qpathinfo", "pn",
		      "Qpathinfo/resolve"},
    [DB_QFILEINFO] = {"QUERY_FILE_INFORMATION", "Qfileinfo", "nn", NULL},
    [DB_QFSINFO] = {"QUERY_FS_INFORMATION", "Qfsinfo", "n", NULL},
    [DB_SFILEINFO] = {"SET_FILE_INFORMATION", "Sfileinfo", "nn", NULL},
    [DB_FIND_FIRST] = {"FIND_FIRST", "Find", "pnnn", "Find/resolve"},
    [DB_WRITEX] = {"WriteX", "WriteX", "nnnn", NULL},
    [DB_READX] = {"ReadX", "ReadX", "nnnn", NULL},
    [DB_LOCKX] = {"LockX", "LockX", "nnn", NULL},
    [DB_UNLOCKX] = {"UnlockX", "UnlockX", "nnn", NULL},
    [DB_FLUSH] = {"Flush", "Flush", "n", NULL},
    [DB_SLEEP] = {"Sleep", "Sleep", "n", NULL},
};

/* The statuses we map to an errno; any other is DB_ST_OTHER (any result). */
enum db_status {
	DB_ST_OK = 0,
	DB_ST_NAME_NOT_FOUND,
	DB_ST_NO_SUCH_FILE,
	DB_ST_PATH_NOT_FOUND,
	DB_ST_COLLISION,
	DB_ST_NOT_EMPTY,
	DB_ST_IS_DIR,
	DB_ST_NOT_DIR,
	DB_ST_ACCESS,
	DB_ST_DISK_FULL,
	DB_ST_OTHER,
};

static const struct {
	const char *name;
	int err; /* the expected result */
} db_status_map[] = {
    [DB_ST_OK] = {"NT_STATUS_OK", 0},
    [DB_ST_NAME_NOT_FOUND] = {"NT_STATUS_OBJECT_NAME_NOT_FOUND", -ENOENT},
    [DB_ST_NO_SUCH_FILE] = {"NT_STATUS_NO_SUCH_FILE", -ENOENT},
    [DB_ST_PATH_NOT_FOUND] = {"NT_STATUS_OBJECT_PATH_NOT_FOUND", -ENOENT},
    [DB_ST_COLLISION] = {"NT_STATUS_OBJECT_NAME_COLLISION", -EEXIST},
    [DB_ST_NOT_EMPTY] = {"NT_STATUS_DIRECTORY_NOT_EMPTY", -ENOTEMPTY},
    [DB_ST_IS_DIR] = {"NT_STATUS_FILE_IS_A_DIRECTORY", -EISDIR},
    [DB_ST_NOT_DIR] = {"NT_STATUS_NOT_A_DIRECTORY", -ENOTDIR},
    [DB_ST_ACCESS] = {"NT_STATUS_ACCESS_DENIED", -EACCES},
    [DB_ST_DISK_FULL] = {"NT_STATUS_DISK_FULL", -ENOSPC},
    [DB_ST_OTHER] = {"", SFS_WOP_ANY},
};

/* One loadfile line, parsed. */
struct db_line {
	uint8_t op;	  /* enum db_opcode */
	uint8_t status;	  /* enum db_status */
	uint32_t lineno;  /* in the loadfile, for messages */
	uint32_t path[2]; /* interned paths, DB_NOPATH when absent */
	uint32_t arg[4];  /* the numbers, in order */
	sfs_ns_t t_ns;	  /* the line's timestamp; 0: none */
};

/* What done() does with the result of an op. */
enum db_role {
	DB_ROLE_NONE = 0,
	DB_ROLE_RESOLVE,   /* a failed stat: scan the parent (resolve) */
	DB_ROLE_OPEN_FAIL, /* an open that should fail: close if it did not */
	DB_ROLE_CREATE,	   /* a create: drop it from the live set if failed */
};

/* One queued operation; owns its strings. */
struct db_pend {
	struct sfs_wop op;     /* as handed out: path and path2 this
				  pend's own (g_strdup), label and phase
				  static */
	enum db_role role;     /* for done() */
	const char *aux_label; /* RESOLVE: the label of the parent scan */
	bool added;	       /* CREATE: the live set got path from it */
};

enum db_kind { DB_FILE = 1, DB_DIR = 2 };

struct db_handle {
	char *path; /* the name it was opened with */
};

enum db_phase {
	DB_PH_NONE = 0,
	DB_PH_WARMUP,
	DB_PH_RUN,
	DB_PH_CLEANUP,
	DB_PH_DONE
};

struct db_client {
	char cname[24];		     /* "client3": replaces "client1" */
	size_t next_line;	     /* index into lines */
	uint64_t loops;		     /* passes over the loadfile completed */
	sfs_ns_t loop_start_ns;	     /* when this pass began (timestamps) */
	enum db_phase phase;	     /* of the last line played */
	GArray *pend;		     /* struct db_pend, from pend_head on */
	guint pend_head;	     /* next one to hand out */
	GHashTable *live;	     /* path -> enum db_kind (invariant 3) */
	GHashTable *handles;	     /* fnum -> struct db_handle */
	struct db_pend cur;	     /* the op last handed out */
	uint64_t run_lines[DB_NOPS]; /* lines played in phase "run" */
};

struct db_state {
	char *loadfile;	       /* as given */
	char *base;	       /* its basename, for messages */
	struct db_line *lines; /* nlines of them, shared by all clients */
	size_t nlines;
	GPtrArray *paths; /* interned, '/'-separated, no leading '/' */
	unsigned nclients;
	struct db_client *clients;
	sfs_ns_t warmup_ns;
	sfs_ns_t time_ns; /* after the warm-up */
	bool resolve;	  /* scan the parent when a lookup fails */
	bool cleanup;	  /* delete the client directory at the end */
	bool once;	  /* one pass over the loadfile at most */
	bool sync;	  /* O_SYNC on every open (dbench -s) */
	bool fsync;	  /* fsync after every write (dbench -F) */
	bool flush;	  /* Flush is fsync (no: nothing, as dbench 1) */
};

enum {
	P_CLIENTS = 0,
	P_LOADFILE,
	P_TIME,
	P_WARMUP,
	P_RESOLVE,
	P_CLEANUP,
	P_ONCE,
	P_SYNC,
	P_FSYNC,
	P_FLUSH,
};

static const struct sfs_wl_param db_params[] = {
    [P_CLIENTS] = {"clients", SFS_WLP_UINT, "1",
		   "simulated clients (dbench NPROCS)"},
    [P_LOADFILE] = {"loadfile", SFS_WLP_STRING, "/usr/share/dbench/client.txt",
		    "the NBENCH loadfile (dbench -c)"},
    [P_TIME] = {"time", SFS_WLP_TIME, "60",
		"seconds measured after the warm-up (dbench -t)"},
    [P_WARMUP] = {"warmup", SFS_WLP_TIME, NULL,
		  "seconds of warm-up first (unset: time/5 in whole seconds, "
		  "as dbench)"},
    [P_RESOLVE] = {"resolve", SFS_WLP_BOOL, "yes",
		   "scan the parent directory when a lookup fails "
		   "(no: dbench --no-resolve)"},
    [P_CLEANUP] = {"cleanup", SFS_WLP_BOOL, "yes",
		   "delete clients/clientN at the end "
		   "(no: dbench --skip-cleanup)"},
    [P_ONCE] = {"once", SFS_WLP_BOOL, "no",
		"stop at the end of the loadfile (dbench --run-once)"},
    [P_SYNC] = {"sync", SFS_WLP_BOOL, "no", "open with O_SYNC (dbench -s)"},
    [P_FSYNC] = {"fsync", SFS_WLP_BOOL, "no",
		 "fsync after every write (dbench -F)"},
    [P_FLUSH] = {"flush", SFS_WLP_BOOL, "yes",
		 "Flush is fsync, as dbench 4 (no: nothing, as dbench 1.x)"},
    {.name = NULL},
};

/* ---- parsing the loadfile ---- */

/*
 * Split s in place into at most max tokens at blanks; a double-quoted
 * part may hold blanks and loses its quotes.  The count, or -1 when there
 * are more than max tokens, -2 on an unterminated quote.
 */
static int db_tokens(char *s, char **tok, int max)
{
	int n = 0;

	for (;;) {
		bool quoted = false;
		char *o;

		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			return n;
		if (n == max)
			return -1;
		tok[n++] = o = s;
		while (*s && (quoted || (*s != ' ' && *s != '\t'))) {
			if (*s == '"')
				quoted = !quoted, s++;
			else
				*o++ = *s++;
		}
		if (quoted)
			return -2;
		if (*s)
			s++;
		*o = '\0';
	}
}

/* A whole number (decimal or 0x hex, as dbench's strtol(s, 0, 0)). */
static bool db_number(const char *s, uint32_t *out)
{
	char *end;
	guint64 v;

	if (!g_ascii_isdigit(*s))
		return false;
	errno = 0;
	v = g_ascii_strtoull(s, &end, 0);
	if (errno || *end || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* A ".." component would leave the run's root (on a --path run too). */
static bool db_path_escapes(const char *tok)
{
	for (const char *s = tok; (s = strstr(s, "..")); s += 2)
		if ((s == tok || s[-1] == '\\' || s[-1] == '/') &&
		    (!s[2] || s[2] == '\\' || s[2] == '/'))
			return true;
	return false;
}

/* The index of path (a loadfile token) in the interned table. */
static uint32_t db_intern(struct db_state *st, GHashTable *idx, const char *tok)
{
	char *p = g_strdup(tok), *q;
	gpointer hit;
	size_t n;

	g_strdelimit(p, "\\", '/');
	for (q = p; *q == '/'; q++)
		;
	memmove(p, q, strlen(q) + 1);
	n = strlen(p);
	while (n > 0 && p[n - 1] == '/')
		p[--n] = '\0';
	if (!*p) {
		g_free(p);
		p = g_strdup(".");
	}
	if (g_hash_table_lookup_extended(idx, p, NULL, &hit)) {
		g_free(p);
		return GPOINTER_TO_UINT(hit);
	}
	g_ptr_array_add(st->paths, p);
	g_hash_table_insert(idx, p, GUINT_TO_POINTER(st->paths->len - 1));
	return st->paths->len - 1;
}

static enum db_status db_status_of(const char *s)
{
	if (strncmp(s, "0x", 2) == 0) {
		uint32_t v;
		return db_number(s, &v) && v == 0 ? DB_ST_OK : DB_ST_OTHER;
	}
	for (unsigned i = 0; i < DB_ST_OTHER; i++)
		if (strcmp(s, db_status_map[i].name) == 0)
			return i;
	return DB_ST_OTHER;
}

/*
 * Parse one line (modified in place) into *l.  1: a line to play, 0: a
 * line dbench skips (blank, comment, one word), -EINVAL with *err.
 */
static int db_parse_line(struct db_state *st, GHashTable *idx, char *s,
			 uint32_t lineno, struct db_line *l, char **err)
{
	char *tok[DB_MAX_TOKENS];
	int n = db_tokens(s, tok, DB_MAX_TOKENS), i = 0, nargs;
	const struct db_opdef *def = NULL;
	unsigned op;

	if (n == -1 || n == -2) {
		*err = g_strdup_printf("%s:%u: %s", st->base, lineno,
				       n == -1 ? "too many fields"
					       : "unterminated quote");
		return -EINVAL;
	}
	if (n < 2 || tok[0][0] == '#')
		return 0;
	if (strncmp(tok[0], "SMB", 3) == 0) {
		*err = g_strdup_printf("%s:%u: a dbench 1 loadfile (SMB "
				       "lines) is not supported",
				       st->base, lineno);
		return -EINVAL;
	}
	memset(l, 0, sizeof(*l));
	l->lineno = lineno;
	l->path[0] = l->path[1] = DB_NOPATH;
	if (g_ascii_isdigit(tok[0][0])) {
		char *end;
		double t = g_ascii_strtod(tok[0], &end);

		if (*end || !(t >= 0 && t < 1e9)) {
			*err = g_strdup_printf("%s:%u: bad timestamp '%s'",
					       st->base, lineno, tok[0]);
			return -EINVAL;
		}
		l->t_ns = (sfs_ns_t)(t * 1e9);
		i = 1;
	}
	if (n - i < 2) {
		*err = g_strdup_printf("%s:%u: no operation after the "
				       "timestamp",
				       st->base, lineno);
		return -EINVAL;
	}
	if (strncmp(tok[n - 1], "NT_STATUS_", 10) != 0 &&
	    strncmp(tok[n - 1], "0x", 2) != 0) {
		*err = g_strdup_printf("%s:%u: bad status '%s' (expected "
				       "NT_STATUS_... or 0x...)",
				       st->base, lineno, tok[n - 1]);
		return -EINVAL;
	}
	for (op = 0; op < DB_NOPS; op++)
		if (strcmp(tok[i], db_ops[op].name) == 0)
			break;
	if (op == DB_NOPS) {
		*err = g_strdup_printf("%s:%u: unknown operation '%s'",
				       st->base, lineno, tok[i]);
		return -EINVAL;
	}
	def = &db_ops[op];
	nargs = n - i - 2;
	if (nargs != (int)strlen(def->args)) {
		*err = g_strdup_printf("%s:%u: bad number of arguments for %s "
				       "(expected %zu, found %d)",
				       st->base, lineno, def->name,
				       strlen(def->args), nargs);
		return -EINVAL;
	}
	l->op = op;
	l->status = db_status_of(tok[n - 1]);
	for (int a = 0, np = 0, nn = 0; a < nargs; a++) {
		const char *t = tok[i + 1 + a];

		if (def->args[a] == 'p') {
			if (t[0] != '\\' && t[0] != '/') {
				*err = g_strdup_printf(
				    "%s:%u: %s: expected a path "
				    "starting with \\, found '%s'",
				    st->base, lineno, def->name, t);
				return -EINVAL;
			}
			if (db_path_escapes(t)) {
				*err = g_strdup_printf("%s:%u: %s: a path with "
						       "'..' in it: '%s'",
						       st->base, lineno,
						       def->name, t);
				return -EINVAL;
			}
			l->path[np++] = db_intern(st, idx, t);
		} else if (!db_number(t, &l->arg[nn++])) {
			*err = g_strdup_printf("%s:%u: %s: bad number '%s'",
					       st->base, lineno, def->name, t);
			return -EINVAL;
		}
	}
	return 1;
}

/* Parse the whole loadfile text (modified in place) into st->lines. */
static int db_parse(struct db_state *st, char *text, size_t len, char **err)
{
	GHashTable *idx = g_hash_table_new(g_str_hash, g_str_equal);
	size_t cap = 1, nl = 0;
	uint32_t lineno = 0;
	char *s = text, *end = text + len;
	int rc = 0;

	for (size_t k = 0; k < len; k++)
		cap += text[k] == '\n';
	st->lines = g_try_new(struct db_line, cap);
	if (!st->lines) {
		*err = g_strdup_printf("%s: out of memory for %zu lines",
				       st->base, cap);
		rc = -ENOMEM;
		goto out;
	}
	while (s < end) {
		char *e = memchr(s, '\n', (size_t)(end - s));

		if (!e)
			e = end;
		*e = '\0';
		if (e > s && e[-1] == '\r')
			e[-1] = '\0';
		if (strlen(s) != (size_t)(e - s) &&
		    strlen(s) + 1 != (size_t)(e - s)) {
			*err = g_strdup_printf("%s:%u: a NUL byte in the line",
					       st->base, lineno + 1);
			rc = -EINVAL;
			goto out;
		}
		lineno++;
		rc = db_parse_line(st, idx, s, lineno, &st->lines[nl], err);
		if (rc < 0)
			goto out;
		if (rc == 1)
			nl++;
		rc = 0;
		s = e + 1;
	}
	st->nlines = nl;
	if (nl == 0) {
		*err = g_strdup_printf("%s: no operations in the loadfile",
				       st->base);
		rc = -EINVAL;
	}
out:
	g_hash_table_destroy(idx);
	return rc;
}

/* ---- the clients' bookkeeping ---- */

static void db_pend_clear(struct db_pend *p)
{
	g_free((char *)p->op.path);
	g_free((char *)p->op.path2);
	memset(p, 0, sizeof(*p));
}

static void db_handle_free(gpointer p)
{
	struct db_handle *h = p;

	g_free(h->path);
	g_free(h);
}

/* Queue an op at the tail; the pointer is valid until the next push. */
static struct db_pend *db_push(struct db_client *c, enum sfs_wop_type t,
			       const char *label, const char *path)
{
	struct db_pend p = {.op = {.type = t, .label = label}};

	p.op.path = g_strdup(path);
	g_array_append_val(c->pend, p);
	return &g_array_index(c->pend, struct db_pend, c->pend->len - 1);
}

/* Queue an op at the head (from done()). */
static struct db_pend *db_push_front(struct db_client *c, enum sfs_wop_type t,
				     const char *label, const char *path)
{
	struct db_pend p = {.op = {.type = t, .label = label}};

	p.op.path = g_strdup(path);
	if (c->pend_head > 0) {
		c->pend_head--;
		g_array_index(c->pend, struct db_pend, c->pend_head) = p;
	} else {
		g_array_prepend_val(c->pend, p);
	}
	return &g_array_index(c->pend, struct db_pend, c->pend_head);
}

/* The loadfile path idx as client c sees it: dbench replaces every
 * "client1" by the client's own name.  The caller frees it. */
static char *db_path(const struct db_state *st, const struct db_client *c,
		     uint32_t idx)
{
	const char *p = st->paths->pdata[idx], *hit;
	GString *s = g_string_sized_new(strlen(p) + 8);

	while ((hit = strstr(p, "client1"))) {
		g_string_append_len(s, p, hit - p);
		g_string_append(s, c->cname);
		p = hit + strlen("client1");
	}
	g_string_append(s, p);
	return g_string_free(s, FALSE);
}

/* The parent directory of a client path ("." at the top). */
static char *db_parent(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? g_strndup(path, (size_t)(slash - path)) : g_strdup(".");
}

/* k is below dir (not dir itself). */
static bool db_below(const char *k, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(k, dir, n) == 0 && k[n] == '/';
}

/* Path order in which a directory's subtree follows it at once. */
static gint db_pathcmp(gconstpointer a, gconstpointer b)
{
	const unsigned char *x = *(const unsigned char *const *)a;
	const unsigned char *y = *(const unsigned char *const *)b;

	for (; *x && *x == *y; x++, y++)
		;
	unsigned cx = *x == '/' ? 1 : *x, cy = *y == '/' ? 1 : *y;
	return (int)cx - (int)cy;
}

/* Live paths at or below top, sorted by db_pathcmp; copies. */
static GPtrArray *db_live_under(struct db_client *c, const char *top)
{
	GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
	GHashTableIter it;
	gpointer k;

	g_hash_table_iter_init(&it, c->live);
	while (g_hash_table_iter_next(&it, &k, NULL))
		if (strcmp(k, top) == 0 || db_below(k, top))
			g_ptr_array_add(a, g_strdup(k));
	g_ptr_array_sort(a, db_pathcmp);
	return a;
}

static enum db_kind db_kind_of(struct db_client *c, const char *path)
{
	return GPOINTER_TO_INT(g_hash_table_lookup(c->live, path));
}

/* Add path to the live set; true if it was not there. */
static bool db_live_add(struct db_client *c, const char *path,
			enum db_kind kind)
{
	if (g_hash_table_contains(c->live, path))
		return false;
	g_hash_table_insert(c->live, g_strdup(path), GINT_TO_POINTER(kind));
	return true;
}

/* Remove path and everything below it from the live set. */
static void db_live_remove(struct db_client *c, const char *path)
{
	GPtrArray *a = db_live_under(c, path);

	for (guint i = 0; i < a->len; i++)
		g_hash_table_remove(c->live, a->pdata[i]);
	g_ptr_array_free(a, TRUE);
}

/* rename(from, to) in the live set and in the open handles' names. */
static void db_live_rename(struct db_client *c, const char *from,
			   const char *to)
{
	GPtrArray *a = db_live_under(c, from);
	size_t n = strlen(from);
	GHashTableIter it;
	gpointer v;

	if (a->len == 0 || strcmp(from, to) == 0) {
		g_ptr_array_free(a, TRUE);
		return;
	}
	gpointer *kinds = g_new(gpointer, a->len);
	for (guint i = 0; i < a->len; i++) {
		kinds[i] = g_hash_table_lookup(c->live, a->pdata[i]);
		g_hash_table_remove(c->live, a->pdata[i]);
	}
	db_live_remove(c, to); /* what the rename replaces */
	for (guint i = 0; i < a->len; i++) {
		const char *k = a->pdata[i];

		g_hash_table_insert(c->live, g_strconcat(to, k + n, NULL),
				    kinds[i]);
	}
	g_free(kinds);
	g_ptr_array_free(a, TRUE);
	g_hash_table_iter_init(&it, c->handles);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct db_handle *h = v;

		if (strcmp(h->path, from) == 0 || db_below(h->path, from)) {
			char *p = g_strconcat(to, h->path + n, NULL);
			g_free(h->path);
			h->path = p;
		}
	}
}

/*
 * Deltree of top: dbench opens each directory and reads it, unlinks each
 * file; we also remove the directories, deepest first (doc/dbench.md).
 * The first op (the scan of top) carries label; the rest "Deltree/...".
 */
static void db_deltree(struct db_client *c, const char *top, const char *label)
{
	GPtrArray *a = db_live_under(c, top);
	GPtrArray *dirs = g_ptr_array_new(); /* the open walk, into a */
	bool known = db_kind_of(c, top) == DB_DIR;
	struct db_pend *p = db_push(c, SFS_WOP_READDIR, label, top);

	p->op.expect = known ? 0 : SFS_WOP_ANY;
	if (!known) /* dbench's opendir fails: nothing more */
		goto out;
	for (guint i = 0; i < a->len; i++) {
		const char *k = a->pdata[i];

		if (strcmp(k, top) == 0) {
			g_ptr_array_add(dirs, (gpointer)k);
			continue;
		}
		while (dirs->len && !db_below(k, dirs->pdata[dirs->len - 1])) {
			db_push(c, SFS_WOP_RMDIR, "Deltree/rmdir",
				dirs->pdata[dirs->len - 1]);
			g_ptr_array_set_size(dirs, dirs->len - 1);
		}
		if (db_kind_of(c, k) == DB_DIR) {
			db_push(c, SFS_WOP_READDIR, "Deltree/readdir", k);
			g_ptr_array_add(dirs, (gpointer)k);
		} else {
			db_push(c, SFS_WOP_UNLINK, "Deltree/unlink", k);
		}
	}
	while (dirs->len) {
		db_push(c, SFS_WOP_RMDIR, "Deltree/rmdir",
			dirs->pdata[dirs->len - 1]);
		g_ptr_array_set_size(dirs, dirs->len - 1);
	}
	for (guint i = 0; i < a->len; i++)
		g_hash_table_remove(c->live, a->pdata[i]);
out:
	g_ptr_array_free(dirs, TRUE);
	g_ptr_array_free(a, TRUE);
}

/* dbench's resolve_name(): a stat of the name (done() may add the scan). */
static struct db_pend *db_resolve(struct db_client *c, const char *path,
				  const char *label, const char *aux,
				  int expect)
{
	struct db_pend *p = db_push(c, SFS_WOP_STAT, label, path);

	p->op.expect = expect;
	p->role = DB_ROLE_RESOLVE;
	p->aux_label = aux;
	return p;
}

/* The open handle fnum, or NULL with *err (dbench exits there too). */
static struct db_handle *db_handle(struct db_state *st, struct db_client *c,
				   const struct db_line *l, uint32_t fnum,
				   char **err)
{
	struct db_handle *h =
	    g_hash_table_lookup(c->handles, GUINT_TO_POINTER(fnum));

	if (!h)
		*err = g_strdup_printf("%s:%u: %s: handle %u is not open "
				       "(%s)",
				       st->base, l->lineno, db_ops[l->op].name,
				       fnum, c->cname);
	return h;
}

static void db_ntcreatex(struct db_state *st, struct db_client *c,
			 const struct db_line *l, const char *path, int expect)
{
	uint32_t opts = l->arg[0], disp = l->arg[1], fnum = l->arg[2];
	uint32_t flags = O_RDWR | (st->sync ? O_SYNC : 0);
	bool dir = opts & FILE_DIRECTORY_FILE;
	struct db_pend *p;

	db_resolve(c, path, db_ops[DB_NTCREATEX].resolve,
		   db_ops[DB_NTCREATEX].resolve, SFS_WOP_ANY);
	if (disp == FILE_CREATE)
		flags |= O_CREAT;
	if (disp == FILE_OVERWRITE || disp == FILE_OVERWRITE_IF)
		flags |= O_CREAT | O_TRUNC;
	if (dir) {
		/* "not strictly correct, but close enough" (dbench) */
		p = db_push(c, SFS_WOP_MKDIR, "NTCreateX/mkdir", path);
		p->op.mode = 0700;
		p->op.expect = SFS_WOP_ANY;
		p->added = db_live_add(c, path, DB_DIR);
		p->role = DB_ROLE_CREATE;
		flags = O_RDONLY | O_DIRECTORY;
	} else if (db_kind_of(c, path) == DB_DIR) {
		/* dbench retries with O_DIRECTORY after EISDIR */
		flags = O_RDONLY | O_DIRECTORY;
	}
	p = db_push(c, SFS_WOP_OPEN, db_ops[DB_NTCREATEX].label, path);
	p->op.fd = (int)fnum;
	p->op.flags = flags;
	p->op.mode = 0600;
	p->op.expect = expect;
	if (l->status != DB_ST_OK) {
		p->role = DB_ROLE_OPEN_FAIL;
		return;
	}
	if ((flags & O_CREAT) && db_live_add(c, path, DB_FILE)) {
		p->role = DB_ROLE_CREATE;
		p->added = true;
	}
	struct db_handle *h = g_new0(struct db_handle, 1);
	h->path = g_strdup(path);
	g_hash_table_replace(c->handles, GUINT_TO_POINTER(fnum), h);
}

/* FIND_FIRST: resolve the pattern; with a wildcard, read the directory. */
static void db_findfirst(struct db_client *c, const struct db_line *l,
			 const char *path, int expect)
{
	const char *name = db_ops[DB_FIND_FIRST].label;
	const char *res = db_ops[DB_FIND_FIRST].resolve;

	if (!strpbrk(path, "<>*?\"")) {
		db_resolve(c, path, name, res, expect);
		return;
	}
	db_resolve(c, path, res, res, SFS_WOP_ANY);
	char *dir = db_parent(path);
	struct db_pend *p = db_push(c, SFS_WOP_READDIR, name, dir);
	/* "no such file" is an empty match in an existing directory */
	p->op.expect =
	    l->status == DB_ST_PATH_NOT_FOUND ? -ENOENT
	    : l->status == DB_ST_OK || l->status == DB_ST_NO_SUCH_FILE
		? 0
		: SFS_WOP_ANY;
	g_free(dir);
}

/* Queue the ops of line l for client c (invariant 1).  -EINVAL with *err
 * on a handle the loadfile never opened. */
static int db_expand(struct db_state *st, struct db_client *c,
		     const struct db_line *l, char **err)
{
	const struct db_opdef *def = &db_ops[l->op];
	int expect = db_status_map[l->status].err;
	char *path =
	    l->path[0] != DB_NOPATH ? db_path(st, c, l->path[0]) : NULL;
	char *path2 =
	    l->path[1] != DB_NOPATH ? db_path(st, c, l->path[1]) : NULL;
	struct db_handle *h = NULL;
	struct db_pend *p;
	int rc = 0;

	switch (l->op) {
	case DB_FLUSH:
	case DB_CLOSE:
	case DB_LOCKX:
	case DB_UNLOCKX:
	case DB_READX:
	case DB_WRITEX:
	case DB_SFILEINFO:
	case DB_QFILEINFO:
		h = db_handle(st, c, l, l->arg[0], err);
		if (!h) {
			rc = -EINVAL;
			goto out;
		}
		break;
	default:
		break;
	}
	switch (l->op) {
	case DB_DELTREE:
		db_deltree(c, path, def->label);
		break;
	case DB_FLUSH:
		p = db_push(c, st->flush ? SFS_WOP_FSYNC : SFS_WOP_THINK,
			    def->label, NULL);
		p->op.fd = (int)l->arg[0];
		p->op.expect = st->flush ? expect : SFS_WOP_ANY;
		break;
	case DB_CLOSE:
		p = db_push(c, SFS_WOP_CLOSE, def->label, NULL);
		p->op.fd = (int)l->arg[0];
		p->op.expect = expect;
		g_hash_table_remove(c->handles, GUINT_TO_POINTER(l->arg[0]));
		break;
	case DB_LOCKX:
	case DB_UNLOCKX:
	case DB_SLEEP:
		/* byte-range locks: nothing for a single-host engine */
		p = db_push(c, SFS_WOP_THINK, def->label, NULL);
		p->op.think_ns =
		    l->op == DB_SLEEP ? (sfs_ns_t)l->arg[0] * 1000 : 0;
		p->op.expect = SFS_WOP_ANY;
		break;
	case DB_RMDIR:
	case DB_UNLINK:
		db_resolve(c, path, def->resolve, def->resolve, SFS_WOP_ANY);
		p = db_push(c,
			    l->op == DB_RMDIR ? SFS_WOP_RMDIR : SFS_WOP_UNLINK,
			    def->label, path);
		p->op.expect = expect;
		if (l->status == DB_ST_OK)
			db_live_remove(c, path);
		break;
	case DB_MKDIR:
		db_resolve(c, path, def->resolve, def->resolve, SFS_WOP_ANY);
		p = db_push(c, SFS_WOP_MKDIR, def->label, path);
		p->op.mode = 0777;
		p->op.expect = SFS_WOP_ANY; /* dbench ignores it; "clients" is
					    shared by every client */
		p->added = db_live_add(c, path, DB_DIR);
		p->role = DB_ROLE_CREATE;
		break;
	case DB_RENAME:
		db_resolve(c, path, def->resolve, def->resolve, SFS_WOP_ANY);
		db_resolve(c, path2, def->resolve, def->resolve, SFS_WOP_ANY);
		p = db_push(c, SFS_WOP_RENAME, def->label, path);
		p->op.path2 = g_strdup(path2);
		p->op.expect = expect;
		if (l->status == DB_ST_OK)
			db_live_rename(c, path, path2);
		break;
	case DB_READX:
	case DB_WRITEX:
		p = db_push(c, l->op == DB_READX ? SFS_WOP_READ : SFS_WOP_WRITE,
			    def->label, NULL);
		p->op.fd = (int)l->arg[0];
		p->op.off = l->arg[1];
		p->op.len = l->arg[2];
		p->op.expect = expect;
		if (l->op == DB_WRITEX && st->fsync) {
			p = db_push(c, SFS_WOP_FSYNC, "WriteX/fsync", NULL);
			p->op.fd = (int)l->arg[0];
			p->op.expect = SFS_WOP_ANY;
		}
		break;
	case DB_FIND_FIRST:
		db_findfirst(c, l, path, expect);
		break;
	case DB_SFILEINFO:
	case DB_QFILEINFO:
		/* fstat (and utime for SET_...): a stat of the name */
		p = db_push(c, SFS_WOP_STAT, def->label, h->path);
		p->op.expect = expect;
		break;
	case DB_QPATHINFO:
		db_resolve(c, path, def->label, def->resolve, expect);
		break;
	case DB_QFSINFO:
		p = db_push(c, SFS_WOP_STATFS, def->label, NULL);
		p->op.expect = expect;
		break;
	case DB_NTCREATEX:
		db_ntcreatex(st, c, l, path, expect);
		break;
	default:
		g_assert_not_reached();
	}
out:
	g_free(path);
	g_free(path2);
	return rc;
}

static const char *db_phase_name(enum db_phase ph)
{
	return ph == DB_PH_WARMUP ? "warmup"
	       : ph == DB_PH_RUN  ? "run"
				  : "cleanup";
}

/* Fill the empty queue of c: 1 with ops queued, 0 when c is done. */
static int db_refill(struct db_state *st, struct db_client *c, sfs_ns_t now,
		     char **err)
{
	guint first = c->pend->len;
	enum db_phase want;
	int rc;

	if (c->phase == DB_PH_DONE || c->phase == DB_PH_CLEANUP) {
		c->phase = DB_PH_DONE;
		return 0;
	}
	if ((st->time_ns && now >= st->warmup_ns + st->time_ns) ||
	    (st->once && c->loops)) {
		if (!st->cleanup) {
			c->phase = DB_PH_DONE;
			return 0;
		}
		/* dbench's fio_cleanup(): deltree, then rmdir "clients" */
		char *top = g_strdup_printf("clients/%s", c->cname);
		db_deltree(c, top, "Deltree");
		g_free(top);
		db_push(c, SFS_WOP_RMDIR, "Rmdir", "clients")->op.expect =
		    SFS_WOP_ANY;
		c->phase = DB_PH_CLEANUP;
		g_array_index(c->pend, struct db_pend, first).op.phase =
		    db_phase_name(DB_PH_CLEANUP);
		return 1;
	}
	want = now < st->warmup_ns ? DB_PH_WARMUP : DB_PH_RUN;
	if (c->next_line == 0)
		c->loop_start_ns = now;
	const struct db_line *l = &st->lines[c->next_line];
	rc = db_expand(st, c, l, err);
	if (rc < 0)
		return rc;
	struct db_pend *p = &g_array_index(c->pend, struct db_pend, first);
	if (want != c->phase)
		p->op.phase = db_phase_name(want);
	c->phase = want;
	/* dbench sleeps until the line's time since the pass began */
	if (l->t_ns && c->loop_start_ns + l->t_ns > now)
		p->op.think_ns += c->loop_start_ns + l->t_ns - now;
	if (want == DB_PH_RUN)
		c->run_lines[l->op]++;
	if (++c->next_line == st->nlines) {
		c->next_line = 0;
		c->loops++;
	}
	return 1;
}

/* ---- the ops table ---- */

static void db_fini(void *vst)
{
	struct db_state *st = vst;

	if (!st)
		return;
	for (unsigned i = 0; st->clients && i < st->nclients; i++) {
		struct db_client *c = &st->clients[i];

		for (guint k = 0; c->pend && k < c->pend->len; k++)
			db_pend_clear(
			    &g_array_index(c->pend, struct db_pend, k));
		if (c->pend)
			g_array_free(c->pend, TRUE);
		db_pend_clear(&c->cur);
		if (c->live)
			g_hash_table_destroy(c->live);
		if (c->handles)
			g_hash_table_destroy(c->handles);
	}
	g_free(st->clients);
	if (st->paths)
		g_ptr_array_free(st->paths, TRUE);
	g_free(st->lines);
	g_free(st->loadfile);
	g_free(st->base);
	g_free(st);
}

static int db_init(const struct sfs_wl_value *v, void **st_out, char **err)
{
	struct db_state *st;
	GError *gerr = NULL;
	char *text = NULL;
	gsize len = 0;
	int rc;

	*st_out = NULL;
	if (v[P_CLIENTS].u == 0 || v[P_CLIENTS].u > DB_MAX_CLIENTS) {
		*err = g_strdup_printf("clients must be 1 .. %u (got %s)",
				       DB_MAX_CLIENTS, v[P_CLIENTS].s);
		return -EINVAL;
	}
	if (!v[P_LOADFILE].s || !*v[P_LOADFILE].s) {
		*err = g_strdup("no loadfile given");
		return -EINVAL;
	}
	st = g_new0(struct db_state, 1);
	st->loadfile = g_strdup(v[P_LOADFILE].s);
	st->base = g_path_get_basename(st->loadfile);
	st->nclients = (unsigned)v[P_CLIENTS].u;
	st->time_ns = v[P_TIME].ns;
	/* dbench: warmup = timelimit / 5, in whole seconds */
	st->warmup_ns = v[P_WARMUP].given
			    ? v[P_WARMUP].ns
			    : st->time_ns / 1000000000ull / 5 * 1000000000ull;
	st->resolve = v[P_RESOLVE].u;
	st->cleanup = v[P_CLEANUP].u;
	st->once = v[P_ONCE].u;
	st->sync = v[P_SYNC].u;
	st->fsync = v[P_FSYNC].u;
	st->flush = v[P_FLUSH].u;
	if (st->time_ns == 0 && !st->once) {
		*err = g_strdup("time must be more than 0 (or give once)");
		rc = -EINVAL;
		goto fail;
	}
	if (!g_file_get_contents(st->loadfile, &text, &len, &gerr)) {
		*err =
		    g_strdup_printf("cannot read loadfile: %s", gerr->message);
		rc = gerr->code == G_FILE_ERROR_NOENT ? -ENOENT : -EIO;
		g_error_free(gerr);
		goto fail;
	}
	st->paths = g_ptr_array_new_with_free_func(g_free);
	rc = db_parse(st, text, len, err);
	g_free(text);
	if (rc)
		goto fail;
	st->clients = g_new0(struct db_client, st->nclients);
	for (unsigned i = 0; i < st->nclients; i++) {
		struct db_client *c = &st->clients[i];

		g_snprintf(c->cname, sizeof(c->cname), "client%u", i);
		c->pend = g_array_new(FALSE, TRUE, sizeof(struct db_pend));
		c->live = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
						NULL);
		c->handles = g_hash_table_new_full(
		    g_direct_hash, g_direct_equal, NULL, db_handle_free);
	}
	*st_out = st;
	return 0;
fail:
	db_fini(st);
	return rc;
}

static unsigned db_clients(void *vst)
{
	return ((struct db_state *)vst)->nclients;
}

static int db_next(void *vst, unsigned ci, sfs_ns_t now, struct sfs_wop *out,
		   char **err)
{
	struct db_state *st = vst;
	struct db_client *c = &st->clients[ci];
	struct db_pend *p;

	while (c->pend_head >= c->pend->len) {
		int rc;

		g_array_set_size(c->pend, 0);
		c->pend_head = 0;
		rc = db_refill(st, c, now, err);
		if (rc <= 0)
			return rc;
	}
	p = &g_array_index(c->pend, struct db_pend, c->pend_head++);
	db_pend_clear(&c->cur);
	c->cur = *p;
	memset(p, 0, sizeof(*p));
	*out = c->cur.op; /* its strings stay c->cur's until the next call */
	return 1;
}

static void db_done(void *vst, unsigned ci, const struct sfs_wop *op, int rc)
{
	struct db_state *st = vst;
	struct db_client *c = &st->clients[ci];
	struct db_pend *cur = &c->cur, *p;
	char *dir;

	(void)op;
	switch (cur->role) {
	case DB_ROLE_RESOLVE:
		if (rc >= 0 || !st->resolve || !cur->op.path)
			break;
		/* dbench reads the parent looking for the name in any case */
		dir = db_parent(cur->op.path);
		p = db_push_front(c, SFS_WOP_READDIR, cur->aux_label, dir);
		p->op.expect = SFS_WOP_ANY;
		g_free(dir);
		break;
	case DB_ROLE_OPEN_FAIL:
		if (rc < 0)
			break;
		p = db_push_front(c, SFS_WOP_CLOSE, "NTCreateX/close", NULL);
		p->op.fd = cur->op.fd;
		p->op.expect = SFS_WOP_ANY;
		break;
	case DB_ROLE_CREATE:
		if (rc < 0 && cur->added)
			g_hash_table_remove(c->live, cur->op.path);
		break;
	default:
		break;
	}
	cur->role = DB_ROLE_NONE;
}

/* The time (ns) of name and its "name/..." helpers in ph, and the
 * slowest single one of those calls. */
static void db_op_time(const struct sfs_wl_phase *ph, const char *name,
		       sfs_ns_t *sum_out, sfs_ns_t *max_out)
{
	size_t n = strlen(name);

	*sum_out = *max_out = 0;
	for (uint64_t i = 0; ph && i < ph->nlat; i++) {
		const struct sfs_wl_lat *l = &ph->lat[i];

		if (strcmp(l->label, name) == 0 ||
		    (strncmp(l->label, name, n) == 0 && l->label[n] == '/')) {
			*sum_out += l->sum_ns;
			*max_out = MAX(*max_out, l->max_ns);
		}
	}
}

/* dbench's closing lines: the table of operations (phase "run") and the
 * Throughput line (MB = 10^6 bytes read and written, over the run). */
static void db_report(void *vst, const struct sfs_wl_result *r, FILE *out)
{
	struct db_state *st = vst;
	const struct sfs_wl_phase *ph = sfs_wl_result_phase(r, "run");
	double maxlat_ms = 0, secs = 0, mbs = 0;

	fprintf(out,
		"Running for %g seconds with load '%s' and minimum warmup "
		"%g secs\n\n",
		(double)st->time_ns / 1e9, st->loadfile,
		(double)st->warmup_ns / 1e9);
	fprintf(out, " Operation      Count    AvgLat    MaxLat\n");
	fprintf(out, " ----------------------------------------\n");
	for (unsigned op = 0; op < DB_SLEEP; op++) {
		const char *name = db_ops[op].label;
		const struct sfs_wl_lat *l = sfs_wl_phase_lat(ph, name);
		uint64_t count = l ? l->count : 0;
		double avg_ms = 0, max_ms = 0;

		if (op == DB_LOCKX || op == DB_UNLOCKX ||
		    (op == DB_FLUSH && !st->flush)) {
			/* THINK ops: the result does not keep them */
			count = 0;
			for (unsigned i = 0; i < st->nclients; i++)
				count += st->clients[i].run_lines[op];
		} else if (count) {
			sfs_ns_t sum, max;

			db_op_time(ph, name, &sum, &max);
			avg_ms = (double)sum / 1e6 / (double)count;
			max_ms = (double)max / 1e6;
		}
		if (!count)
			continue;
		maxlat_ms = MAX(maxlat_ms, max_ms);
		fprintf(out, " %-12s %7" PRIu64 " %9.03f %9.03f\n", name, count,
			avg_ms, max_ms);
	}
	fprintf(out, "\n");
	if (ph && ph->end_ns > ph->start_ns) {
		secs = (double)(ph->end_ns - ph->start_ns) / 1e9;
		mbs =
		    1e-6 * (double)(ph->bytes_read + ph->bytes_written) / secs;
	}
	fprintf(out,
		"Throughput %g MB/sec%s  %u clients  %u procs  "
		"max_latency=%.03f ms\n",
		mbs, st->sync ? " (sync open)" : "", st->nclients, st->nclients,
		maxlat_ms);
}

/* The Throughput figure of db_report as a metric: phase "run",
 * throughput_mb_s (10^6 bytes read and written per second of the run). */
static void db_metrics(void *vst, const struct sfs_wl_result *r,
		       sfs_wl_emit_fn *emit, void *ctx)
{
	const struct sfs_wl_phase *ph = sfs_wl_result_phase(r, "run");
	double mbs = 0;

	(void)vst;
	if (!ph)
		return;
	if (ph->end_ns > ph->start_ns)
		mbs = 1e-6 * (double)(ph->bytes_read + ph->bytes_written) /
		      ((double)(ph->end_ns - ph->start_ns) / 1e9);
	emit(ctx, "run", "throughput_mb_s", mbs, "MB/s");
}

const struct sfs_workload_ops sfs_wl_dbench_ops = {
    .name = "dbench",
    .help = "dbench 4: N clients play the NBENCH loadfile (client.txt) "
	    "for a time",
    .doc = "Each client plays dbench's NBENCH loadfile "
	   "(/usr/share/dbench/client.txt by default) in its own directory "
	   "clients/clientN (every 'client1' in a path becomes the client's "
	   "name, backslashes become slashes), line after line, starting "
	   "over at the end, through a warm-up (default time/5, as dbench) "
	   "and then 'time' seconds; operations of the warm-up do not count. "
	   "NTCreateX is open(2) with the disposition's O_CREAT/O_TRUNC (a "
	   "directory create is mkdir + open O_DIRECTORY), ReadX/WriteX are "
	   "pread/pwrite, Flush is fsync, QUERY_PATH/FILE_INFORMATION and "
	   "SET_FILE_INFORMATION are stat, QUERY_FS_INFORMATION is statfs, "
	   "FIND_FIRST with a wildcard reads the directory, Deltree removes "
	   "what the client made below the path, and each named operation "
	   "first looks its name up as dbench does (a failed lookup reads "
	   "the parent unless resolve=no). The loadfile's status gives the "
	   "expected result. The report prints dbench 4.0's table (Count, "
	   "AvgLat, MaxLat per operation, under its names: Qpathinfo, "
	   "Find...) and 'Throughput X MB/sec' (10^6 bytes of ReadX and "
	   "WriteX per second of the run). Differences from dbench: "
	   "LockX/UnlockX do nothing, SET_FILE_INFORMATION does not change "
	   "the times (no utime), Deltree also removes directories, and "
	   "no xattrs. See doc/dbench.md.",
    .params = db_params,
    .init = db_init,
    .clients = db_clients,
    .next = db_next,
    .done = db_done,
    .report = db_report,
    .metrics = db_metrics,
    .fini = db_fini,
};
