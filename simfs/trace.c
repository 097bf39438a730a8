/*
 * trace.c - operation traces (trace.h; the format: traces/README.md).
 *
 * A line is "TIME CLIENT OP key=value ... rc=RESULT dur=NS".  The keys an
 * op carries are one row of trc_fields[] (which the writer writes and the
 * reader requires), so the writer and the reader cannot drift apart.
 * Paths are quoted and percent-escaped (trc_escape), open flags are
 * symbolic (O_WRONLY|O_CREAT, unknown bits in hex), results are 0 or an
 * errno name (-ENOSPC).
 *
 * Invariants:
 *  1. format(parse(line)) == line for every line format() makes, and
 *     parse(format(rec)) == rec for every record (test_trace);
 *  2. the writer's mutex covers the data file's append position and the
 *     line naming it (a write's data= is where its bytes are);
 *  3. the recorder's mutex covers its two maps and the handle table; the
 *     writer's mutex is taken after it, never the other way round;
 *  4. bad input never aborts: the reader answers "FILE:LINE: what", the
 *     importer "LINE: what", and sizes from input are checked.
 *
 * The strace importer is at the end of the file; the FUSE adapter's use
 * of the recorder is in fuse.c (rule 8 there).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "clock.h"
#include "lock.h"
#include "trace.h"
#include "workload.h"

static_assert(SFS_TRACE_OFF_CUR == SFS_WOP_OFF_CUR, "off=cur");

/* ---- names ---- */

/* The fields an op carries (trc_fields). */
enum {
	TF_PATH = 1 << 0,
	TF_PATH2 = 1 << 1,
	TF_FD = 1 << 2,
	TF_OFF = 1 << 3,
	TF_LEN = 1 << 4,
	TF_DONE = 1 << 5,
	TF_DATA = 1 << 6,
	TF_FLAGS = 1 << 7,
	TF_MODE = 1 << 8,
	TF_DSYNC = 1 << 9,
	TF_DUR = 1 << 10, /* every line */
	TF_RC = 1 << 11,  /* every line */
};

/* Optional on reading: the rest of an op's fields are required. */
#define TF_OPTIONAL (TF_DONE | TF_DATA | TF_FLAGS | TF_MODE | TF_DSYNC)

static const struct {
	const char *name;
	unsigned fields;
	int wop; /* enum sfs_wop_type, or -1 */
} trc_ops[SFS_TOP_N] = {
    [SFS_TOP_OPEN] = {"open", TF_PATH | TF_FLAGS | TF_MODE | TF_FD,
		      SFS_WOP_OPEN},
    [SFS_TOP_CLOSE] = {"close", TF_FD, SFS_WOP_CLOSE},
    [SFS_TOP_READ] = {"read", TF_FD | TF_OFF | TF_LEN | TF_DONE, SFS_WOP_READ},
    [SFS_TOP_WRITE] = {"write", TF_FD | TF_OFF | TF_LEN | TF_DONE | TF_DATA,
		       SFS_WOP_WRITE},
    [SFS_TOP_FSYNC] = {"fsync", TF_FD | TF_DSYNC, SFS_WOP_FSYNC},
    [SFS_TOP_FTRUNCATE] = {"ftruncate", TF_FD | TF_LEN, SFS_WOP_FTRUNCATE},
    [SFS_TOP_TRUNCATE] = {"truncate", TF_PATH | TF_LEN, -1},
    [SFS_TOP_UNLINK] = {"unlink", TF_PATH, SFS_WOP_UNLINK},
    [SFS_TOP_MKDIR] = {"mkdir", TF_PATH | TF_MODE, SFS_WOP_MKDIR},
    [SFS_TOP_RMDIR] = {"rmdir", TF_PATH, SFS_WOP_RMDIR},
    [SFS_TOP_RENAME] = {"rename", TF_PATH | TF_PATH2, SFS_WOP_RENAME},
    [SFS_TOP_STAT] = {"stat", TF_PATH, SFS_WOP_STAT},
    [SFS_TOP_READDIR] = {"readdir", TF_PATH, SFS_WOP_READDIR},
    [SFS_TOP_SYMLINK] = {"symlink", TF_PATH | TF_PATH2, SFS_WOP_SYMLINK},
    [SFS_TOP_LINK] = {"link", TF_PATH | TF_PATH2, SFS_WOP_LINK},
    [SFS_TOP_SYNC] = {"sync", 0, SFS_WOP_SYNC},
    [SFS_TOP_STATFS] = {"statfs", 0, SFS_WOP_STATFS},
    [SFS_TOP_CHMOD] = {"chmod", TF_PATH | TF_MODE, SFS_WOP_CHMOD},
};

const char *sfs_trace_op_name(enum sfs_trace_op op)
{
	return (unsigned)op < SFS_TOP_N ? trc_ops[op].name : "?";
}

static int trc_op_find(const char *name)
{
	for (int i = 0; i < SFS_TOP_N; i++)
		if (strcmp(trc_ops[i].name, name) == 0)
			return i;
	return -1;
}

void sfs_trace_rec_init(struct sfs_trace_rec *r)
{
	memset(r, 0, sizeof(*r));
	r->fd = SFS_TRACE_NO_FD;
	r->data_off = SFS_TRACE_NO_DATA;
}

#define TRC_ERRNO(e)                                                           \
	{                                                                      \
		e, #e                                                          \
	}
static const struct {
	int no;
	const char *name;
} trc_errnos[] = {
    TRC_ERRNO(EPERM),	TRC_ERRNO(ENOENT),	 TRC_ERRNO(ESRCH),
    TRC_ERRNO(EINTR),	TRC_ERRNO(EIO),		 TRC_ERRNO(ENXIO),
    TRC_ERRNO(E2BIG),	TRC_ERRNO(EBADF),	 TRC_ERRNO(EAGAIN),
    TRC_ERRNO(ENOMEM),	TRC_ERRNO(EACCES),	 TRC_ERRNO(EFAULT),
    TRC_ERRNO(EBUSY),	TRC_ERRNO(EEXIST),	 TRC_ERRNO(EXDEV),
    TRC_ERRNO(ENODEV),	TRC_ERRNO(ENOTDIR),	 TRC_ERRNO(EISDIR),
    TRC_ERRNO(EINVAL),	TRC_ERRNO(ENFILE),	 TRC_ERRNO(EMFILE),
    TRC_ERRNO(ENOTTY),	TRC_ERRNO(ETXTBSY),	 TRC_ERRNO(EFBIG),
    TRC_ERRNO(ENOSPC),	TRC_ERRNO(ESPIPE),	 TRC_ERRNO(EROFS),
    TRC_ERRNO(EMLINK),	TRC_ERRNO(EPIPE),	 TRC_ERRNO(ERANGE),
    TRC_ERRNO(EDEADLK), TRC_ERRNO(ENAMETOOLONG), TRC_ERRNO(ENOLCK),
    TRC_ERRNO(ENOSYS),	TRC_ERRNO(ENOTEMPTY),	 TRC_ERRNO(ELOOP),
    TRC_ERRNO(ENODATA), TRC_ERRNO(EOVERFLOW),	 TRC_ERRNO(ESTALE),
    TRC_ERRNO(EDQUOT),	TRC_ERRNO(EOPNOTSUPP),	 TRC_ERRNO(ECANCELED),
    TRC_ERRNO(EUCLEAN), TRC_ERRNO(ETIMEDOUT),
};

/* "-ENOENT" for -ENOENT, "0" for 0, "-123" for an errno without a name. */
static void trc_result_format(int rc, GString *out)
{
	if (rc >= 0) {
		g_string_append_printf(out, "%d", rc);
		return;
	}
	for (size_t i = 0; i < G_N_ELEMENTS(trc_errnos); i++) {
		if (trc_errnos[i].no == -rc) {
			g_string_append_printf(out, "-%s", trc_errnos[i].name);
			return;
		}
	}
	g_string_append_printf(out, "%d", rc);
}

char *sfs_trace_result_text(int rc)
{
	GString *s = g_string_new(NULL);

	trc_result_format(rc, s);
	return g_string_free(s, FALSE);
}

/* The errno called name ("ENOENT", also "ENOTSUP"), or 0. */
static int trc_errno_find(const char *name)
{
	if (strcmp(name, "ENOTSUP") == 0)
		return ENOTSUP;
	if (strcmp(name, "EWOULDBLOCK") == 0)
		return EAGAIN;
	for (size_t i = 0; i < G_N_ELEMENTS(trc_errnos); i++)
		if (strcmp(trc_errnos[i].name, name) == 0)
			return trc_errnos[i].no;
	return 0;
}

/* "0", "-ENOENT" or "-2" -> *rc.  -EINVAL otherwise. */
static int trc_result_parse(const char *text, int *rc)
{
	char *end;
	long v;

	if (text[0] == '-' && g_ascii_isalpha(text[1])) {
		int no = trc_errno_find(text + 1);

		if (!no)
			return -EINVAL;
		*rc = -no;
		return 0;
	}
	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || *end || end == text || v > 0 || v < -4095)
		return -EINVAL;
	*rc = (int)v;
	return 0;
}

/* Open flags by name; the access mode is printed first, always. */
#define TRC_FLAG(f)                                                            \
	{                                                                      \
		f, #f                                                          \
	}
static const struct {
	uint32_t bits;
	const char *name;
} trc_flags[] = {
    /* O_SYNC contains O_DSYNC's bit: test it first */
    TRC_FLAG(O_SYNC),	   TRC_FLAG(O_DSYNC),	 TRC_FLAG(O_CREAT),
    TRC_FLAG(O_EXCL),	   TRC_FLAG(O_NOCTTY),	 TRC_FLAG(O_TRUNC),
    TRC_FLAG(O_APPEND),	   TRC_FLAG(O_NONBLOCK), TRC_FLAG(O_DIRECT),
    TRC_FLAG(O_DIRECTORY), TRC_FLAG(O_NOFOLLOW), TRC_FLAG(O_NOATIME),
    TRC_FLAG(O_CLOEXEC),   TRC_FLAG(O_PATH),
};

static void trc_flags_format(uint32_t flags, GString *out)
{
	uint32_t acc = flags & O_ACCMODE, rest = flags & ~(uint32_t)O_ACCMODE;

	g_string_append(out, acc == O_WRONLY   ? "O_WRONLY"
			     : acc == O_RDWR   ? "O_RDWR"
			     : acc == O_RDONLY ? "O_RDONLY"
					       : "O_ACCMODE");
	for (size_t i = 0; i < G_N_ELEMENTS(trc_flags); i++) {
		if ((rest & trc_flags[i].bits) == trc_flags[i].bits) {
			g_string_append_printf(out, "|%s", trc_flags[i].name);
			rest &= ~trc_flags[i].bits;
		}
	}
	if (rest)
		g_string_append_printf(out, "|0x%" PRIx32, rest);
}

/* "O_WRONLY|O_CREAT|0x8000" -> *flags (names as strace prints them too;
 * O_LARGEFILE, 0 in a 64-bit userland, is accepted and dropped). */
static int trc_flags_parse(const char *text, uint32_t *flags)
{
	char **parts = g_strsplit(text, "|", -1);
	uint32_t v = 0;
	int rc = 0;

	for (char **p = parts; *p && rc == 0; p++) {
		bool found = false;
		char *end;

		if (strcmp(*p, "O_RDONLY") == 0)
			continue;
		if (strcmp(*p, "O_WRONLY") == 0) {
			v |= O_WRONLY;
			continue;
		}
		if (strcmp(*p, "O_RDWR") == 0) {
			v |= O_RDWR;
			continue;
		}
		if (strcmp(*p, "O_ACCMODE") == 0) {
			v |= O_ACCMODE;
			continue;
		}
		if (strcmp(*p, "O_LARGEFILE") == 0)
			continue;
		for (size_t i = 0; i < G_N_ELEMENTS(trc_flags) && !found; i++)
			if (strcmp(*p, trc_flags[i].name) == 0) {
				v |= trc_flags[i].bits;
				found = true;
			}
		if (found)
			continue;
		if (g_str_has_prefix(*p, "0x") || g_str_has_prefix(*p, "0")) {
			errno = 0;
			unsigned long n = strtoul(*p, &end, 0);
			if (!errno && !*end && end != *p && n <= UINT32_MAX) {
				v |= (uint32_t)n;
				continue;
			}
		}
		rc = -EINVAL;
	}
	g_strfreev(parts);
	if (rc == 0)
		*flags = v;
	return rc;
}

/* ---- escaping ---- */

static bool trc_plain(unsigned char c)
{
	return c > 0x20 && c < 0x7f && c != '%' && c != '"';
}

/* Append s quoted: "a%20b". */
static void trc_escape(const char *s, GString *out)
{
	g_string_append_c(out, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (trc_plain(*p))
			g_string_append_c(out, (char)*p);
		else
			g_string_append_printf(out, "%%%02X", *p);
	}
	g_string_append_c(out, '"');
}

/* A quoted, escaped value -> the bytes (g_free), or NULL with *why. */
static char *trc_unescape(const char *v, const char **why)
{
	size_t n = strlen(v);
	GString *s;

	if (n >= 1 && v[0] == '"' && (n < 2 || v[n - 1] != '"')) {
		*why = "no closing quote (a space in a path is written %20)";
		return NULL;
	}
	if (n < 2 || v[0] != '"' || v[n - 1] != '"') {
		*why = "a path must be in double quotes";
		return NULL;
	}
	s = g_string_sized_new(n);
	for (size_t i = 1; i + 1 < n; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c == '%') {
			int hi =
			    i + 2 < n ? g_ascii_xdigit_value(v[i + 1]) : -1;
			int lo =
			    i + 2 < n ? g_ascii_xdigit_value(v[i + 2]) : -1;

			if (hi < 0 || lo < 0) {
				*why = "'%' not followed by two hex digits";
				goto out_bad;
			}
			if (hi == 0 && lo == 0) {
				*why = "%00: a path cannot hold a NUL byte";
				goto out_bad;
			}
			g_string_append_c(s, (char)(hi * 16 + lo));
			i += 2;
		} else if (trc_plain(c)) {
			g_string_append_c(s, (char)c);
		} else {
			*why = "a byte that must be percent-escaped";
			goto out_bad;
		}
	}
	return g_string_free(s, FALSE);

out_bad:
	g_string_free(s, TRUE);
	return NULL;
}

/* ---- formatting ---- */

static void trc_format_into(const struct sfs_trace_rec *r, GString *out)
{
	unsigned f = (unsigned)r->op < SFS_TOP_N ? trc_ops[r->op].fields : 0;

	g_string_append_printf(out, "%" PRIu64 " %" PRIu64 " %s", r->t_ns,
			       r->client, sfs_trace_op_name(r->op));
	if (f & TF_PATH) {
		g_string_append(out, " path=");
		trc_escape(r->path ? r->path : "", out);
	}
	if (f & TF_PATH2) {
		g_string_append(out, " path2=");
		trc_escape(r->path2 ? r->path2 : "", out);
	}
	if (f & TF_FLAGS) {
		g_string_append(out, " flags=");
		trc_flags_format(r->flags, out);
	}
	if (f & TF_MODE)
		g_string_append_printf(out, " mode=%04" PRIo32,
				       r->mode & 07777);
	if (f & TF_DSYNC && (r->flags & SFS_WOP_DATASYNC))
		g_string_append(out, " datasync=1");
	if (f & TF_FD && r->fd != SFS_TRACE_NO_FD)
		g_string_append_printf(out, " fd=%" PRId64, r->fd);
	if (f & TF_OFF) {
		if (r->off == SFS_TRACE_OFF_CUR)
			g_string_append(out, " off=cur");
		else
			g_string_append_printf(out, " off=%" PRIu64, r->off);
	}
	if (f & TF_LEN)
		g_string_append_printf(out, " len=%" PRIu64, r->len);
	if (f & TF_DONE)
		g_string_append_printf(out, " done=%" PRIu64, r->done);
	if (f & TF_DATA && r->data_off != SFS_TRACE_NO_DATA)
		g_string_append_printf(out, " data=%" PRIu64, r->data_off);
	g_string_append(out, " rc=");
	trc_result_format(r->result, out);
	g_string_append_printf(out, " dur=%" PRIu64 "\n", r->dur_ns);
}

char *sfs_trace_format(const struct sfs_trace_rec *rec)
{
	GString *s = g_string_sized_new(128);

	trc_format_into(rec, s);
	return g_string_free(s, FALSE);
}

/* ---- writer ---- */

#define TRC_BUF_BYTES (1u << 20) /* stdio buffer of each file */

struct sfs_trace_writer {
	sfs_mutex lock;
	FILE *out;	   /* the trace; lock */
	FILE *data;	   /* written bytes, or NULL; lock */
	bool own;	   /* opened (and closed) here */
	uint64_t data_pos; /* bytes in the data file; lock */
	int err;	   /* first -errno; lock */
	GString *line;	   /* scratch; lock */
};

static struct sfs_trace_writer *trc_writer_alloc(FILE *out, FILE *data,
						 bool own)
{
	struct sfs_trace_writer *w = g_new0(struct sfs_trace_writer, 1);

	sfs_mutex_init(&w->lock);
	w->out = out;
	w->data = data;
	w->own = own;
	w->line = g_string_sized_new(256);
	/* "# simfs-trace 1"; a minor version once there is one: "1.1" */
	if (SFS_TRACE_MINOR)
		fprintf(out, "%s %d.%d\n", SFS_TRACE_MAGIC, SFS_TRACE_MAJOR,
			SFS_TRACE_MINOR);
	else
		fprintf(out, "%s %d\n", SFS_TRACE_MAGIC, SFS_TRACE_MAJOR);
	return w;
}

struct sfs_trace_writer *sfs_trace_writer_new(FILE *out, FILE *data)
{
	return trc_writer_alloc(out, data, false);
}

int sfs_trace_writer_open(const char *path, bool with_data,
			  struct sfs_trace_writer **out, char **err)
{
	FILE *f, *d = NULL;
	char *dpath;
	int rc;

	f = fopen(path, "w");
	if (!f) {
		rc = -errno;
		*err = g_strdup_printf("trace %s: %s", path, g_strerror(-rc));
		return rc;
	}
	if (with_data) {
		dpath = g_strconcat(path, ".data", NULL);
		d = fopen(dpath, "w");
		if (!d) {
			rc = -errno;
			*err = g_strdup_printf("trace data %s: %s", dpath,
					       g_strerror(-rc));
			g_free(dpath);
			fclose(f);
			return rc;
		}
		g_free(dpath);
		setvbuf(d, NULL, _IOFBF, TRC_BUF_BYTES);
	}
	setvbuf(f, NULL, _IOFBF, TRC_BUF_BYTES);
	*out = trc_writer_alloc(f, d, true);
	return 0;
}

void sfs_trace_write(struct sfs_trace_writer *w,
		     const struct sfs_trace_rec *rec, const void *data)
{
	struct sfs_trace_rec r = *rec;

	sfs_mutex_lock(&w->lock);
	if (r.op == SFS_TOP_WRITE && data && w->data) {
		r.data_off = w->data_pos;
		if (r.len && fwrite(data, 1, r.len, w->data) != r.len) {
			if (!w->err)
				w->err = -EIO;
			r.data_off = SFS_TRACE_NO_DATA;
		} else {
			w->data_pos += r.len;
		}
	}
	g_string_truncate(w->line, 0);
	trc_format_into(&r, w->line);
	if (fwrite(w->line->str, 1, w->line->len, w->out) != w->line->len &&
	    !w->err)
		w->err = -EIO;
	sfs_mutex_unlock(&w->lock);
}

void sfs_trace_write_comment(struct sfs_trace_writer *w, const char *text)
{
	sfs_mutex_lock(&w->lock);
	fprintf(w->out, "# ");
	for (const char *p = text; *p; p++)
		fputc(*p == '\n' ? ' ' : *p, w->out);
	fputc('\n', w->out);
	sfs_mutex_unlock(&w->lock);
}

int sfs_trace_writer_close(struct sfs_trace_writer *w)
{
	int rc;

	if (!w)
		return 0;
	rc = w->err;
	if (fflush(w->out) != 0 && !rc)
		rc = -errno;
	if (w->data && fflush(w->data) != 0 && !rc)
		rc = -errno;
	if (w->own) {
		if (fclose(w->out) != 0 && !rc)
			rc = -errno;
		if (w->data && fclose(w->data) != 0 && !rc)
			rc = -errno;
	}
	g_string_free(w->line, TRUE);
	sfs_mutex_clear(&w->lock);
	g_free(w);
	return rc;
}

/* ---- reader ---- */

struct sfs_trace_reader {
	FILE *in;
	bool own;
	char *name;	/* for messages */
	unsigned line;	/* of the latest line read */
	unsigned minor; /* the file's minor version */
	char *buf;	/* getline's */
	size_t cap;
	size_t len;	    /* of the latest line, as getline read it */
	char *path, *path2; /* the latest record's strings */
};

void sfs_trace_reader_free(struct sfs_trace_reader *r)
{
	if (!r)
		return;
	if (r->own && r->in)
		fclose(r->in);
	free(r->buf);
	g_free(r->name);
	g_free(r->path);
	g_free(r->path2);
	g_free(r);
}

unsigned sfs_trace_reader_line(const struct sfs_trace_reader *r)
{
	return r->line;
}

/* The next line without its newline, or NULL at the end. */
static char *trc_getline(struct sfs_trace_reader *r)
{
	ssize_t n = getline(&r->buf, &r->cap, r->in);

	if (n < 0)
		return NULL;
	r->line++;
	r->len = (size_t)n;
	while (n > 0 && (r->buf[n - 1] == '\n' || r->buf[n - 1] == '\r'))
		r->buf[--n] = '\0';
	r->len = (size_t)n;
	return r->buf;
}

static int trc_bad(struct sfs_trace_reader *r, char **err, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
static int trc_bad(struct sfs_trace_reader *r, char **err, const char *fmt, ...)
{
	va_list ap;
	char *what;

	va_start(ap, fmt);
	what = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	*err = g_strdup_printf("%s:%u: %s", r->name, r->line, what);
	g_free(what);
	return -EINVAL;
}

/* "# simfs-trace MAJOR[.MINOR]" */
static int trc_header(struct sfs_trace_reader *r, char **err)
{
	const char *l = trc_getline(r);
	unsigned long major, minor = 0;
	char *end;

	if (!l)
		return trc_bad(r, err,
			       "empty file, not a simfs trace (the "
			       "first line must be '%s %d')",
			       SFS_TRACE_MAGIC, SFS_TRACE_MAJOR);
	if (!g_str_has_prefix(l, SFS_TRACE_MAGIC " "))
		return trc_bad(r, err,
			       "not a simfs trace (the first line "
			       "must be '%s %d')",
			       SFS_TRACE_MAGIC, SFS_TRACE_MAJOR);
	l += strlen(SFS_TRACE_MAGIC " ");
	errno = 0;
	major = strtoul(l, &end, 10);
	if (*end == '.' && g_ascii_isdigit(end[1]))
		minor = strtoul(end + 1, &end, 10);
	if (errno || end == l || !g_ascii_isdigit(*l) ||
	    (*end && !g_ascii_isspace(*end)))
		return trc_bad(r, err,
			       "bad version '%s' (expected MAJOR or "
			       "MAJOR.MINOR, e.g. %d)",
			       l, SFS_TRACE_MAJOR);
	if (major > SFS_TRACE_MAJOR)
		return trc_bad(
		    r, err,
		    "trace format version %lu.%lu is newer than this "
		    "simfs reads (%d.x): use a newer simfs",
		    major, minor, SFS_TRACE_MAJOR);
	if (major < 1)
		return trc_bad(r, err,
			       "trace format version %lu.%lu is "
			       "unknown (this simfs reads %d.x)",
			       major, minor, SFS_TRACE_MAJOR);
	r->minor = minor > UINT32_MAX ? UINT32_MAX : (unsigned)minor;
	return 0;
}

int sfs_trace_reader_new(FILE *in, const char *name,
			 struct sfs_trace_reader **out, char **err)
{
	struct sfs_trace_reader *r = g_new0(struct sfs_trace_reader, 1);
	int rc;

	r->in = in;
	r->name = g_strdup(name ? name : "trace");
	rc = trc_header(r, err);
	if (rc < 0) {
		sfs_trace_reader_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

int sfs_trace_reader_open(const char *path, struct sfs_trace_reader **out,
			  char **err)
{
	FILE *in = fopen(path, "r");
	int rc;

	if (!in) {
		rc = -errno;
		*err = g_strdup_printf("%s: %s", path, g_strerror(-rc));
		return rc;
	}
	rc = sfs_trace_reader_new(in, path, out, err);
	if (rc < 0) {
		fclose(in);
		return rc;
	}
	(*out)->own = true;
	return 0;
}

static int trc_u64(const char *v, uint64_t *out)
{
	char *end;

	if (!g_ascii_isdigit(*v))
		return -EINVAL;
	errno = 0;
	*out = g_ascii_strtoull(v, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

/* One key=value field of a record.  1: set; 0: an unknown key. */
static int trc_field(struct sfs_trace_reader *r, const char *key, const char *v,
		     struct sfs_trace_rec *rec, unsigned *seen, char **err)
{
	const char *why = NULL;
	uint64_t u;
	unsigned bit;

	if (!strcmp(key, "path") || !strcmp(key, "path2")) {
		char *s = trc_unescape(v, &why);
		bool second = key[4] == '2';

		if (!s)
			return trc_bad(r, err, "%s=%s: %s", key, v, why);
		bit = second ? TF_PATH2 : TF_PATH;
		g_free(second ? r->path2 : r->path);
		if (second)
			rec->path2 = r->path2 = s;
		else
			rec->path = r->path = s;
	} else if (!strcmp(key, "flags")) {
		bit = TF_FLAGS;
		if (trc_flags_parse(v, &rec->flags) < 0)
			return trc_bad(r, err,
				       "flags=%s: expected open flags like "
				       "O_WRONLY|O_CREAT",
				       v);
	} else if (!strcmp(key, "mode")) {
		char *end;

		bit = TF_MODE;
		errno = 0;
		u = strtoull(v, &end, 8);
		if (!g_ascii_isdigit(*v) || errno || *end || u > 07777)
			return trc_bad(r, err,
				       "mode=%s: expected octal "
				       "permission bits like 0644",
				       v);
		rec->mode = (uint32_t)u;
	} else if (!strcmp(key, "datasync")) {
		bit = TF_DSYNC;
		if (strcmp(v, "1") && strcmp(v, "0"))
			return trc_bad(r, err, "datasync=%s: expected 1 or 0",
				       v);
		if (*v == '1')
			rec->flags |= SFS_WOP_DATASYNC;
	} else if (!strcmp(key, "fd")) {
		bit = TF_FD;
		if (trc_u64(v, &u) < 0 || u > INT32_MAX)
			return trc_bad(r, err,
				       "fd=%s: expected a handle "
				       "number 0..%d",
				       v, INT32_MAX);
		rec->fd = (int64_t)u;
	} else if (!strcmp(key, "off")) {
		bit = TF_OFF;
		if (!strcmp(v, "cur"))
			rec->off = SFS_TRACE_OFF_CUR;
		else if (trc_u64(v, &rec->off) < 0 ||
			 rec->off == SFS_TRACE_OFF_CUR)
			return trc_bad(r, err,
				       "off=%s: expected bytes or 'cur'", v);
	} else if (!strcmp(key, "len") || !strcmp(key, "done") ||
		   !strcmp(key, "data") || !strcmp(key, "dur")) {
		uint64_t *dst;

		if (!strcmp(key, "len"))
			bit = TF_LEN, dst = &rec->len;
		else if (!strcmp(key, "done"))
			bit = TF_DONE, dst = &rec->done;
		else if (!strcmp(key, "data"))
			bit = TF_DATA, dst = &rec->data_off;
		else
			bit = TF_DUR, dst = &rec->dur_ns;
		if (trc_u64(v, &u) < 0 || (bit == TF_DATA && u == UINT64_MAX))
			return trc_bad(r, err, "%s=%s: expected a whole number",
				       key, v);
		*dst = u;
	} else if (!strcmp(key, "rc")) {
		bit = TF_RC;
		if (trc_result_parse(v, &rec->result) < 0)
			return trc_bad(r, err,
				       "rc=%s: expected 0 or -ERRNAME "
				       "(like -ENOENT)",
				       v);
	} else {
		return 0;
	}
	if (*seen & bit)
		return trc_bad(r, err, "%s= given twice", key);
	*seen |= bit;
	return 1;
}

/* Parse one record line (not a comment).  0 or -EINVAL with *err. */
static int trc_parse(struct sfs_trace_reader *r, char *line,
		     struct sfs_trace_rec *rec, char **err)
{
	char **tok = g_strsplit_set(line, " \t", -1);
	char *words[3];
	unsigned seen = 0, nw = 0, need;
	int op, rc = 0;

	sfs_trace_rec_init(rec);
	for (char **t = tok; *t && rc == 0; t++) {
		char *eq;

		if (!**t)
			continue;
		if (nw < 3) {
			words[nw++] = *t;
			continue;
		}
		eq = strchr(*t, '=');
		if (!eq || eq == *t) {
			rc = trc_bad(r, err, "'%s': expected key=value", *t);
			break;
		}
		*eq = '\0';
		rc = trc_field(r, *t, eq + 1, rec, &seen, err);
		if (rc == 0 && r->minor <= SFS_TRACE_MINOR)
			rc = trc_bad(r, err, "unknown field '%s'", *t);
		else if (rc == 0)
			rc = 0; /* a newer minor version's field: skipped */
		else if (rc == 1)
			rc = 0;
	}
	if (rc < 0)
		goto out;
	if (nw < 3) {
		rc = trc_bad(r, err,
			     "expected TIME CLIENT OP key=value... "
			     "rc=RESULT dur=NS");
		goto out;
	}
	if (trc_u64(words[0], &rec->t_ns) < 0) {
		rc = trc_bad(r, err, "time '%s': expected ns (a whole number)",
			     words[0]);
		goto out;
	}
	if (trc_u64(words[1], &rec->client) < 0) {
		rc = trc_bad(r, err, "client '%s': expected a process id",
			     words[1]);
		goto out;
	}
	op = trc_op_find(words[2]);
	if (op < 0) {
		GString *names = g_string_new(NULL);

		for (int i = 0; i < SFS_TOP_N; i++)
			g_string_append_printf(names, "%s%s", i ? ", " : "",
					       trc_ops[i].name);
		rc = trc_bad(r, err, "unknown op '%s' (valid: %s)", words[2],
			     names->str);
		g_string_free(names, TRUE);
		goto out;
	}
	rec->op = (enum sfs_trace_op)op;
	if (seen & ~(trc_ops[op].fields | TF_DUR | TF_RC)) {
		rc = trc_bad(r, err, "a field that %s does not take", words[2]);
		goto out;
	}
	need = trc_ops[op].fields & ~TF_OPTIONAL;
	if (op == SFS_TOP_OPEN)
		need &= ~TF_FD; /* a failed open has no handle */
	need |= TF_DUR | TF_RC;
	if ((seen & need) != need) {
		unsigned miss = need & ~seen;

		rc = trc_bad(r, err, "%s without %s", words[2],
			     miss & TF_RC      ? "rc="
			     : miss & TF_DUR   ? "dur="
			     : miss & TF_PATH  ? "path="
			     : miss & TF_PATH2 ? "path2="
			     : miss & TF_FD    ? "fd="
			     : miss & TF_OFF   ? "off="
					       : "len=");
		goto out;
	}
	if (rec->op == SFS_TOP_OPEN && rec->result == 0 &&
	    rec->fd == SFS_TRACE_NO_FD) {
		rc = trc_bad(r, err, "an open that succeeded without fd=");
		goto out;
	}
	if ((rec->op == SFS_TOP_READ || rec->op == SFS_TOP_WRITE) &&
	    rec->done > rec->len) {
		rc = trc_bad(r, err,
			     "done=%" PRIu64 " is more than len=%" PRIu64,
			     rec->done, rec->len);
		goto out;
	}
out:
	g_strfreev(tok);
	return rc;
}

int sfs_trace_read(struct sfs_trace_reader *r, struct sfs_trace_rec *out,
		   char **err)
{
	char *l;

	while ((l = trc_getline(r))) {
		const char *p = l;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0' || *p == '#')
			continue;
		if (strlen(l) != r->len)
			return trc_bad(r, err, "a NUL byte in the line");
		return trc_parse(r, l, out, err) < 0 ? -EINVAL : 1;
	}
	if (ferror(r->in))
		return trc_bad(r, err, "read error: %s", g_strerror(errno));
	return 0;
}

/* ---- mapping ---- */

int sfs_trace_to_wop(const struct sfs_trace_rec *rec, struct sfs_wop *op)
{
	if ((unsigned)rec->op >= SFS_TOP_N || trc_ops[rec->op].wop < 0)
		return -ENOTSUP;
	memset(op, 0, sizeof(*op));
	op->type = (enum sfs_wop_type)trc_ops[rec->op].wop;
	op->fd = rec->fd >= 0 && rec->fd <= INT32_MAX ? (int)rec->fd : 0;
	op->path = rec->path;
	op->path2 = rec->path2;
	op->off = rec->off;
	op->len = rec->len;
	op->flags = rec->op == SFS_TOP_OPEN || rec->op == SFS_TOP_FSYNC
			? rec->flags
			: 0;
	op->mode = rec->mode;
	op->expect = rec->result;
	return 0;
}

/* ---- recorder ---- */

/* Where an inode was last seen: (parent, name). */
struct trc_dentry {
	uint64_t parent;
	char *name;
};

struct sfs_trace_recorder {
	struct sfs_trace_writer *w;
	struct sfs_clock *clock; /* not owned */
	sfs_ns_t t0_ns;		 /* the clock's time at the start */
	sfs_mutex lock;
	GHashTable *names;   /* ino -> struct trc_dentry; lock */
	GHashTable *entries; /* "parent/name" -> ino; lock */
	GHashTable *handles; /* handle -> opener client; lock */
	int64_t next_fd;     /* lock */
};

static void trc_dentry_free(gpointer p)
{
	struct trc_dentry *d = p;

	g_free(d->name);
	g_free(d);
}

static char *trc_key(uint64_t parent, const char *name)
{
	return g_strdup_printf("%" PRIu64 "/%s", parent, name);
}

int sfs_trace_recorder_new(const char *path, struct sfs_clock *c,
			   struct sfs_trace_recorder **out, char **err)
{
	struct sfs_trace_recorder *rec;
	struct sfs_trace_writer *w;
	int rc;

	rc = sfs_trace_writer_open(path, true, &w, err);
	if (rc < 0)
		return rc;
	rec = g_new0(struct sfs_trace_recorder, 1);
	rec->w = w;
	rec->clock = c;
	rec->t0_ns = sfs_clock_now_ns(c);
	sfs_mutex_init(&rec->lock);
	rec->names = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
					   trc_dentry_free);
	rec->entries =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	rec->handles =
	    g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	rec->next_fd = 3;
	sfs_trace_write_comment(w, "recorded by simfs mount (trace=); "
				   "written bytes in the .data file");
	*out = rec;
	return 0;
}

int sfs_trace_recorder_free(struct sfs_trace_recorder *rec)
{
	int rc;

	if (!rec)
		return 0;
	rc = sfs_trace_writer_close(rec->w);
	g_hash_table_destroy(rec->names);
	g_hash_table_destroy(rec->entries);
	g_hash_table_destroy(rec->handles);
	sfs_mutex_clear(&rec->lock);
	g_free(rec);
	return rc;
}

sfs_ns_t sfs_trace_now(struct sfs_trace_recorder *rec)
{
	sfs_ns_t t = sfs_clock_now_ns(rec->clock);

	return t > rec->t0_ns ? t - rec->t0_ns : 0;
}

static uint64_t *trc_u64_new(uint64_t v)
{
	uint64_t *p = g_new(uint64_t, 1);

	*p = v;
	return p;
}

/* Forget where ino was (its entry too, if it still names ino).  lock. */
static void trc_drop_ino(struct sfs_trace_recorder *rec, uint64_t ino)
{
	struct trc_dentry *d = g_hash_table_lookup(rec->names, &ino);
	char *key;
	uint64_t *e;

	if (!d)
		return;
	key = trc_key(d->parent, d->name);
	e = g_hash_table_lookup(rec->entries, key);
	if (e && *e == ino)
		g_hash_table_remove(rec->entries, key);
	g_free(key);
	g_hash_table_remove(rec->names, &ino);
}

/* ino is at (parent, name) now.  lock. */
static void trc_place(struct sfs_trace_recorder *rec, uint64_t ino,
		      uint64_t parent, const char *name)
{
	struct trc_dentry *d = g_new(struct trc_dentry, 1);

	trc_drop_ino(rec, ino);
	d->parent = parent;
	d->name = g_strdup(name);
	g_hash_table_replace(rec->names, trc_u64_new(ino), d);
	g_hash_table_replace(rec->entries, trc_key(parent, name),
			     trc_u64_new(ino));
}

void sfs_trace_learn(struct sfs_trace_recorder *rec, uint64_t ino,
		     uint64_t parent, const char *name)
{
	if (ino == 1 || !name)
		return; /* the root has no name */
	sfs_mutex_lock(&rec->lock);
	trc_place(rec, ino, parent, name);
	sfs_mutex_unlock(&rec->lock);
}

/* The inode at (parent, name), or 0.  lock. */
static uint64_t trc_entry(struct sfs_trace_recorder *rec, uint64_t parent,
			  const char *name)
{
	char *key = trc_key(parent, name);
	uint64_t *e = g_hash_table_lookup(rec->entries, key);

	g_free(key);
	return e ? *e : 0;
}

void sfs_trace_unlearn(struct sfs_trace_recorder *rec, uint64_t parent,
		       const char *name)
{
	uint64_t ino;

	sfs_mutex_lock(&rec->lock);
	ino = trc_entry(rec, parent, name);
	if (ino) {
		struct trc_dentry *d = g_hash_table_lookup(rec->names, &ino);

		char *key = trc_key(parent, name);

		if (d && d->parent == parent && strcmp(d->name, name) == 0)
			trc_drop_ino(rec, ino); /* both maps */
		else
			g_hash_table_remove(rec->entries, key);
		g_free(key);
	}
	sfs_mutex_unlock(&rec->lock);
}

void sfs_trace_moved(struct sfs_trace_recorder *rec, uint64_t p,
		     const char *name, uint64_t np, const char *newname,
		     bool exchange)
{
	uint64_t a, b;

	sfs_mutex_lock(&rec->lock);
	a = trc_entry(rec, p, name);
	b = trc_entry(rec, np, newname);
	if (a)
		trc_drop_ino(rec, a);
	if (b)
		trc_drop_ino(rec, b); /* replaced, or exchanged */
	if (a)
		trc_place(rec, a, np, newname);
	if (b && exchange)
		trc_place(rec, b, p, name);
	sfs_mutex_unlock(&rec->lock);
}

#define TRC_MAX_DEPTH 4096 /* components in a path (a loop stops here) */

char *sfs_trace_path(struct sfs_trace_recorder *rec, uint64_t ino,
		     const char *name)
{
	GPtrArray *comps = g_ptr_array_new();
	GString *s = g_string_new(NULL);
	uint64_t cur = ino;

	sfs_mutex_lock(&rec->lock);
	while (cur != 1 && comps->len < TRC_MAX_DEPTH) {
		struct trc_dentry *d = g_hash_table_lookup(rec->names, &cur);

		if (!d)
			break;
		g_ptr_array_add(comps, d->name);
		cur = d->parent;
	}
	if (cur != 1)
		g_string_append_printf(s, "?ino/%" PRIu64, cur);
	for (guint i = comps->len; i-- > 0;)
		g_string_append_printf(s, "%s%s", s->len ? "/" : "",
				       (const char *)comps->pdata[i]);
	sfs_mutex_unlock(&rec->lock);
	if (name)
		g_string_append_printf(s, "%s%s", s->len ? "/" : "", name);
	if (!s->len)
		g_string_append_c(s, '.');
	g_ptr_array_free(comps, TRUE);
	return g_string_free(s, FALSE);
}

int64_t sfs_trace_open_handle(struct sfs_trace_recorder *rec, uint64_t client)
{
	int64_t fd;

	sfs_mutex_lock(&rec->lock);
	fd = rec->next_fd++;
	if (rec->next_fd > INT32_MAX)
		rec->next_fd = 3; /* after two billion opens: wrap */
	g_hash_table_replace(rec->handles, trc_u64_new((uint64_t)fd),
			     trc_u64_new(client));
	sfs_mutex_unlock(&rec->lock);
	return fd;
}

uint64_t sfs_trace_handle_client(struct sfs_trace_recorder *rec, int64_t fd,
				 bool close)
{
	uint64_t key = (uint64_t)fd, client = 0, *c;

	sfs_mutex_lock(&rec->lock);
	c = g_hash_table_lookup(rec->handles, &key);
	if (c)
		client = *c;
	if (c && close)
		g_hash_table_remove(rec->handles, &key);
	sfs_mutex_unlock(&rec->lock);
	return client;
}

void sfs_trace_record(struct sfs_trace_recorder *rec,
		      const struct sfs_trace_rec *r, const void *data)
{
	sfs_trace_write(rec->w, r, data);
}

/* ---- import from strace ---- */

/*
 * strace -f -ttt -T -e trace=file,desc prints, per call,
 *   [PID ]SECONDS.MICROS NAME(ARGS) = RESULT[ ERRNAME (text)] <SECONDS>
 * ("[pid N] " instead of "PID " when not writing to a file with -o), and
 * a call another process interrupts as "NAME(ARGS <unfinished ...>" plus,
 * later, "<... NAME resumed>REST".  Each process's descriptors are
 * followed (open, dup, close, lseek) so that reads and writes get an
 * offset and a handle; handles are numbered across the whole trace, so a
 * descriptor a child inherited keeps its parent's handle.
 */

/* An open file description: what descriptors of one or more processes
 * name. */
struct imp_file {
	int64_t handle;
	char *path;    /* as the trace names it (NULL: not kept) */
	char *abspath; /* as strace named it, for *at() and fstat */
	uint64_t pos;  /* the file position, when known */
	bool pos_known;
	bool dir;      /* O_DIRECTORY: no open op, getdents is readdir */
	bool listed;   /* readdir recorded */
	unsigned refs; /* descriptors naming it */
	uint64_t seq;  /* opening order, for inherited descriptors */
};

struct imp_pending {
	sfs_ns_t t_ns;
	char *name;
	char *args; /* the text after "NAME(" up to " <unfinished ...>" */
};

struct imp {
	struct sfs_trace_writer *w;
	const char *root;    /* keep only paths under it, or NULL */
	GHashTable *fds;     /* "pid:fd" -> struct imp_file * */
	GHashTable *pending; /* pid -> struct imp_pending */
	GPtrArray *files;    /* every imp_file, freed at the end */
	GHashTable *cwds;    /* pid -> its working directory (g_free) */
	char *last_cwd;	     /* the latest chdir of any process */
	int64_t next_handle;
	uint64_t seq;
	bool have_t0;
	sfs_ns_t t0_ns;
	unsigned line;
	uint64_t calls; /* lines that were calls */
};

static void imp_file_free(gpointer p)
{
	struct imp_file *f = p;

	g_free(f->path);
	g_free(f->abspath);
	g_free(f);
}

static void imp_pending_free(gpointer p)
{
	struct imp_pending *q = p;

	g_free(q->name);
	g_free(q->args);
	g_free(q);
}

/* "SECONDS.FRACTION" -> ns (the fraction has up to 9 digits). */
static int imp_time(const char *s, const char **end, sfs_ns_t *out)
{
	uint64_t sec = 0, frac = 0, scale = SFS_NS_PER_S;
	const char *p = s;

	if (!g_ascii_isdigit(*p))
		return -EINVAL;
	for (; g_ascii_isdigit(*p); p++) {
		if (sec > UINT64_MAX / 10 / SFS_NS_PER_S)
			return -EINVAL;
		sec = sec * 10 + (uint64_t)(*p - '0');
	}
	if (*p != '.')
		return -EINVAL;
	for (p++; g_ascii_isdigit(*p); p++) {
		if (scale > 1) {
			scale /= 10;
			frac += (uint64_t)(*p - '0') * scale;
		}
	}
	*end = p;
	*out = sec * SFS_NS_PER_S + frac;
	return 0;
}

/* Split "a, "b,c", {x, y}, [1, 2]" at top-level commas (args trimmed). */
static GPtrArray *imp_split_args(const char *s)
{
	GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
	GString *cur = g_string_new(NULL);
	int depth = 0;
	bool quote = false;

	for (const char *p = s; *p; p++) {
		if (quote) {
			g_string_append_c(cur, *p);
			if (*p == '\\' && p[1])
				g_string_append_c(cur, *++p);
			else if (*p == '"')
				quote = false;
			continue;
		}
		if (*p == '"')
			quote = true;
		else if (*p == '{' || *p == '[' || *p == '(')
			depth++;
		else if ((*p == '}' || *p == ']' || *p == ')') && depth > 0)
			depth--;
		else if (*p == ',' && depth == 0) {
			g_ptr_array_add(a, g_strdup(g_strstrip(cur->str)));
			g_string_truncate(cur, 0);
			continue;
		}
		g_string_append_c(cur, *p);
	}
	if (cur->len || a->len)
		g_ptr_array_add(a, g_strdup(g_strstrip(cur->str)));
	g_string_free(cur, TRUE);
	return a;
}

/* Where the ')' closing the call's arguments is (s is after "NAME("), or
 * NULL. */
static const char *imp_close_paren(const char *s)
{
	int depth = 0;
	bool quote = false;

	for (const char *p = s; *p; p++) {
		if (quote) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				quote = false;
		} else if (*p == '"') {
			quote = true;
		} else if (*p == '(' || *p == '{' || *p == '[') {
			depth++;
		} else if (*p == ')' || *p == '}' || *p == ']') {
			if (depth == 0)
				return *p == ')' ? p : NULL;
			depth--;
		}
	}
	return NULL;
}

/* A C string as strace prints it ("a\nb"...) -> bytes (g_free), or NULL
 * if arg is no string. */
static char *imp_str(const char *arg)
{
	GString *s;
	const char *p = arg;

	if (!arg || *p != '"')
		return NULL;
	s = g_string_new(NULL);
	for (p++; *p && *p != '"'; p++) {
		if (*p != '\\' || !p[1]) {
			g_string_append_c(s, *p);
			continue;
		}
		p++;
		switch (*p) {
		case 'n':
			g_string_append_c(s, '\n');
			break;
		case 't':
			g_string_append_c(s, '\t');
			break;
		case 'r':
			g_string_append_c(s, '\r');
			break;
		case 'v':
			g_string_append_c(s, '\v');
			break;
		case 'f':
			g_string_append_c(s, '\f');
			break;
		case 'x': {
			int v = 0, n = 0;

			while (n < 2 && g_ascii_isxdigit(p[1]))
				v = v * 16 + g_ascii_xdigit_value(*++p), n++;
			if (v)
				g_string_append_c(s, (char)v);
			break;
		}
		default:
			if (*p >= '0' && *p <= '7') {
				int v = *p - '0', n = 1;

				while (n < 3 && p[1] >= '0' && p[1] <= '7')
					v = v * 8 + (*++p - '0'), n++;
				if (v)
					g_string_append_c(s, (char)v);
			} else {
				g_string_append_c(s, *p); /* \" \\ */
			}
		}
	}
	return g_string_free(s, FALSE);
}

/* A number as strace prints it: 3, 3</path> (-y), 0x1f, 0644, AT_FDCWD. */
static int imp_int(const char *arg, int64_t *out)
{
	char *end;
	long long v;

	if (!arg)
		return -EINVAL;
	if (strcmp(arg, "AT_FDCWD") == 0) {
		*out = AT_FDCWD;
		return 0;
	}
	errno = 0;
	v = strtoll(arg, &end, 0);
	if (errno || end == arg || (*end && *end != '<' && *end != ' '))
		return -EINVAL;
	*out = v;
	return 0;
}

/* Open flags as strace prints them; names it knows that simfs does not
 * (O_LARGEFILE, O_TMPFILE...) are dropped. */
static uint32_t imp_flags(const char *arg)
{
	char **parts = g_strsplit(arg ? arg : "", "|", -1);
	uint32_t v = 0, one;

	for (char **p = parts; *p; p++)
		if (trc_flags_parse(g_strstrip(*p), &one) == 0)
			v |= one;
	g_strfreev(parts);
	return v;
}

static char *imp_fdkey(uint64_t pid, int64_t fd)
{
	return g_strdup_printf("%" PRIu64 ":%" PRId64, pid, fd);
}

/* The file pid's descriptor fd names: its own, else (an inherited one)
 * the latest file any process opened as fd.  NULL if none. */
static struct imp_file *imp_fd(struct imp *im, uint64_t pid, int64_t fd)
{
	char *key = imp_fdkey(pid, fd);
	struct imp_file *f = g_hash_table_lookup(im->fds, key), *best = NULL;
	GHashTableIter it;
	gpointer k, v;
	char suffix[32];

	g_free(key);
	if (f)
		return f;
	g_snprintf(suffix, sizeof(suffix), ":%" PRId64, fd);
	g_hash_table_iter_init(&it, im->fds);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		struct imp_file *c = v;

		if (g_str_has_suffix(k, suffix) &&
		    (!best || c->seq > best->seq))
			best = c;
	}
	if (best) {
		best->refs++;
		g_hash_table_replace(im->fds, imp_fdkey(pid, fd), best);
	}
	return best;
}

/*
 * The path strace printed for (dirfd, path), resolved against the
 * directory descriptor (absolute if it can be).  g_free it.
 */
static char *imp_abs(struct imp *im, uint64_t pid, int64_t dirfd,
		     const char *path)
{
	struct imp_file *d;

	if (path[0] == '/')
		return g_strdup(path);
	if (dirfd == AT_FDCWD) {
		const char *cwd = g_hash_table_lookup(im->cwds, &pid);

		/* a process not seen to chdir starts where the latest chdir
		 * went (a shell's children start where the shell is) */
		if (!cwd)
			cwd = im->last_cwd;
		if (!cwd)
			return g_strdup(path); /* relative to an unknown cwd */
		if (!*path || !strcmp(path, "."))
			return g_strdup(cwd);
		return g_strconcat(cwd, "/", path, NULL);
	}
	d = imp_fd(im, pid, dirfd);
	if (!d || !d->abspath)
		return g_strdup(path);
	if (!*path)
		return g_strdup(d->abspath);
	return g_strconcat(d->abspath, "/", path, NULL);
}

/* The trace's name for an absolute-or-relative path (g_free), or NULL if
 * it lies outside the root. */
static char *imp_keep(struct imp *im, const char *abs)
{
	size_t n;

	if (!im->root) {
		while (*abs == '/')
			abs++;
		return g_strdup(*abs ? abs : ".");
	}
	n = strlen(im->root);
	while (n > 1 && im->root[n - 1] == '/')
		n--;
	if (abs[0] != '/' || strncmp(abs, im->root, n) != 0 ||
	    (abs[n] != '/' && abs[n] != '\0'))
		return NULL;
	abs += n;
	while (*abs == '/')
		abs++;
	return g_strdup(*abs ? abs : ".");
}

/* The parsed pieces of one finished call. */
struct imp_call {
	uint64_t pid;
	sfs_ns_t t_ns, dur_ns;
	const char *name;
	GPtrArray *args;
	bool ok;     /* returned no error */
	int64_t ret; /* the return value if ok */
	int err;     /* -errno if not ok */
};

static const char *imp_arg(const struct imp_call *c, guint i)
{
	return i < c->args->len ? c->args->pdata[i] : NULL;
}

static void imp_emit(struct imp *im, const struct imp_call *c,
		     struct sfs_trace_rec *r)
{
	r->t_ns = c->t_ns;
	r->client = c->pid;
	r->dur_ns = c->dur_ns;
	if (!r->result)
		r->result = c->ok ? 0 : c->err;
	sfs_trace_write(im->w, r, NULL);
}

/* Order "pid:fd" keys of one pid by fd. */
static gint imp_key_cmp(gconstpointer a, gconstpointer b)
{
	const char *x = strchr(*(const char *const *)a, ':');
	const char *y = strchr(*(const char *const *)b, ':');
	long long fx = x ? atoll(x + 1) : 0, fy = y ? atoll(y + 1) : 0;

	return fx < fy ? -1 : fx > fy;
}

/* A descriptor naming f is gone (close, or dup2 over it): the last one
 * closes a kept file's handle. */
static void imp_unref(struct imp *im, const struct imp_call *c,
		      struct imp_file *f)
{
	struct sfs_trace_rec r;

	if (f->refs)
		f->refs--;
	if (f->refs || !f->path || f->dir)
		return; /* another descriptor still names it */
	sfs_trace_rec_init(&r);
	r.op = SFS_TOP_CLOSE;
	r.fd = f->handle;
	imp_emit(im, c, &r);
}

/* Give pid's descriptor fd to f (open, dup): what it named is closed. */
static void imp_fd_set(struct imp *im, const struct imp_call *c, int64_t fd,
		       struct imp_file *f)
{
	char *key = imp_fdkey(c->pid, fd);
	struct imp_file *old = g_hash_table_lookup(im->fds, key);

	f->refs++;
	g_hash_table_replace(im->fds, key, f);
	if (old && old != f) {
		struct imp_call at = *c;

		at.ok = true; /* the close of the old one succeeded */
		at.dur_ns = 0;
		imp_unref(im, &at, old);
	} else if (old) {
		old->refs--;
	}
}

/* A path argument i (after dirfd argument di, or -1), as the trace names
 * it, or NULL (not a string, or outside the root). *abs_out: strace's. */
static char *imp_path_arg(struct imp *im, const struct imp_call *c, int di,
			  guint i, char **abs_out)
{
	int64_t dirfd = AT_FDCWD;
	char *s = imp_str(imp_arg(c, i)), *abs, *kept;

	if (!s)
		return NULL;
	if (di >= 0 && imp_int(imp_arg(c, (guint)di), &dirfd) < 0)
		dirfd = AT_FDCWD;
	abs = imp_abs(im, c->pid, dirfd, s);
	g_free(s);
	kept = imp_keep(im, abs);
	if (abs_out)
		*abs_out = abs;
	else
		g_free(abs);
	return kept;
}

static void imp_open(struct imp *im, const struct imp_call *c, int di, guint pi,
		     int fi, uint32_t fixed_flags)
{
	struct sfs_trace_rec r;
	struct imp_file *f;
	char *abs = NULL, *path = imp_path_arg(im, c, di, pi, &abs);
	int64_t mode = 0;
	uint32_t flags =
	    fi >= 0 ? imp_flags(imp_arg(c, (guint)fi)) : fixed_flags;

	if (fi >= 0 && imp_int(imp_arg(c, (guint)fi + 1), &mode) < 0)
		mode = 0;
	if (fi < 0)
		imp_int(imp_arg(c, pi + 1), &mode);
	if (c->ok) {
		f = g_new0(struct imp_file, 1);
		f->path = path;
		f->abspath = abs;
		f->dir = (flags & O_DIRECTORY) != 0;
		f->pos_known = !(flags & O_APPEND);
		f->seq = ++im->seq;
		f->handle = path && !f->dir ? im->next_handle++ : -1;
		g_ptr_array_add(im->files, f);
		imp_fd_set(im, c, c->ret, f);
	}
	if (path && !(flags & O_DIRECTORY)) {
		sfs_trace_rec_init(&r);
		r.op = SFS_TOP_OPEN;
		r.path = path;
		r.flags = flags & ~(uint32_t)O_CLOEXEC;
		r.mode = (uint32_t)mode & 07777;
		if (c->ok)
			r.fd = im->next_handle - 1;
		imp_emit(im, c, &r);
	}
	if (!c->ok) {
		g_free(path);
		g_free(abs);
	}
}

/* The kept, non-directory file of descriptor argument 0, or NULL. */
static struct imp_file *imp_fd_arg(struct imp *im, const struct imp_call *c,
				   guint i)
{
	int64_t fd;
	struct imp_file *f;

	if (imp_int(imp_arg(c, i), &fd) < 0)
		return NULL;
	f = imp_fd(im, c->pid, fd);
	return f && f->path ? f : NULL;
}

/* copy_file_range(in, off_in, out, off_out, len, flags) and
 * sendfile(out, in, offset, count): a read of what moved from in and a
 * write of it to out, at the positions (or the offsets given "[N]"). */
static void imp_copy(struct imp *im, const struct imp_call *c, guint in_i,
		     int in_off_i, guint out_i, int out_off_i, guint len_i)
{
	struct imp_file *fi = imp_fd_arg(im, c, in_i);
	struct imp_file *fo = imp_fd_arg(im, c, out_i);
	uint64_t moved = c->ok && c->ret > 0 ? (uint64_t)c->ret : 0;
	int64_t len = 0;
	struct sfs_trace_rec r;

	if (imp_int(imp_arg(c, len_i), &len) < 0 || len < 0)
		len = (int64_t)moved;
	for (int k = 0; k < 2; k++) {
		struct imp_file *f = k ? fo : fi;
		int oi = k ? out_off_i : in_off_i;
		const char *oa = oi >= 0 ? imp_arg(c, (guint)oi) : NULL;
		int64_t off = -1;

		if (!f || f->dir || (k && !moved))
			continue;
		if (oa && oa[0] == '[' && imp_int(oa + 1, &off) < 0)
			off = -1;
		sfs_trace_rec_init(&r);
		r.op = k ? SFS_TOP_WRITE : SFS_TOP_READ;
		r.fd = f->handle;
		r.done = moved;
		/* a huge "copy everything" count is not a size to replay */
		r.len = k ? moved : MIN((uint64_t)len, MAX(moved, 1u << 20));
		r.len = MAX(r.len, r.done);
		if (off >= 0)
			r.off = (uint64_t)off;
		else
			r.off = f->pos_known ? f->pos : SFS_TRACE_OFF_CUR;
		if (off < 0 && f->pos_known)
			f->pos += moved;
		imp_emit(im, c, &r);
	}
}

/* read/write/pread64/pwrite64/readv/writev. */
static void imp_rw(struct imp *im, const struct imp_call *c, bool write,
		   int offi, bool vec)
{
	struct imp_file *f = imp_fd_arg(im, c, 0);
	struct sfs_trace_rec r;
	int64_t len = 0, off = 0;

	if (!f || f->dir)
		return;
	if (!vec && imp_int(imp_arg(c, 2), &len) < 0)
		return;
	if (offi >= 0 && imp_int(imp_arg(c, (guint)offi), &off) < 0)
		return;
	sfs_trace_rec_init(&r);
	r.op = write ? SFS_TOP_WRITE : SFS_TOP_READ;
	r.fd = f->handle;
	r.done = c->ok && c->ret > 0 ? (uint64_t)c->ret : 0;
	r.len = vec ? r.done : (uint64_t)MAX(len, 0);
	if (r.done > r.len)
		r.len = r.done;
	if (offi >= 0)
		r.off = (uint64_t)MAX(off, 0);
	else
		r.off = f->pos_known ? f->pos : SFS_TRACE_OFF_CUR;
	if (offi < 0 && f->pos_known)
		f->pos += r.done;
	imp_emit(im, c, &r);
}

static void imp_close(struct imp *im, const struct imp_call *c)
{
	struct imp_file *f;
	int64_t fd;
	char *key;

	if (imp_int(imp_arg(c, 0), &fd) < 0)
		return;
	f = imp_fd(im, c->pid, fd);
	if (!f)
		return;
	key = imp_fdkey(c->pid, fd);
	g_hash_table_remove(im->fds, key);
	g_free(key);
	imp_unref(im, c, f);
}

/* An op on one path (argument pi, after dirfd argument di or -1). */
static void imp_path_op(struct imp *im, const struct imp_call *c,
			enum sfs_trace_op op, int di, guint pi, int mi)
{
	struct sfs_trace_rec r;
	char *path = imp_path_arg(im, c, di, pi, NULL);
	int64_t v = 0;

	if (!path)
		return;
	sfs_trace_rec_init(&r);
	r.op = op;
	r.path = path;
	if (mi >= 0 && imp_int(imp_arg(c, (guint)mi), &v) == 0) {
		if (op == SFS_TOP_TRUNCATE)
			r.len = (uint64_t)MAX(v, 0);
		else
			r.mode = (uint32_t)v & 07777;
	}
	imp_emit(im, c, &r);
	g_free(path);
}

/* rename/link/symlink: two paths (each after its dirfd, or -1). */
static void imp_two(struct imp *im, const struct imp_call *c,
		    enum sfs_trace_op op, int d1, guint p1, int d2, guint p2)
{
	struct sfs_trace_rec r;
	char *a, *b = imp_path_arg(im, c, d2, p2, NULL);

	/* a symlink's target is text, not a name in the tree */
	a = op == SFS_TOP_SYMLINK ? imp_str(imp_arg(c, p1))
				  : imp_path_arg(im, c, d1, p1, NULL);
	if (a && b) {
		sfs_trace_rec_init(&r);
		r.op = op;
		r.path = a;
		r.path2 = b;
		imp_emit(im, c, &r);
	}
	g_free(a);
	g_free(b);
}

/* An op on a descriptor's file (fsync, ftruncate, fstat, getdents). */
static void imp_fd_op(struct imp *im, const struct imp_call *c,
		      enum sfs_trace_op op, uint32_t flags)
{
	struct imp_file *f = imp_fd_arg(im, c, 0);
	struct sfs_trace_rec r;
	int64_t v = 0;

	if (!f)
		return;
	sfs_trace_rec_init(&r);
	r.op = op;
	if (op == SFS_TOP_READDIR) {
		if (f->listed)
			return; /* the whole listing is one op */
		f->listed = true;
		r.path = f->path;
	} else if (op == SFS_TOP_STAT) {
		r.path = f->path;
	} else {
		if (f->dir)
			return;
		r.fd = f->handle;
		r.flags = flags;
		if (op == SFS_TOP_FTRUNCATE && imp_int(imp_arg(c, 1), &v) == 0)
			r.len = (uint64_t)MAX(v, 0);
	}
	imp_emit(im, c, &r);
}

static void imp_dup(struct imp *im, const struct imp_call *c)
{
	int64_t fd;
	struct imp_file *f;

	if (!c->ok || imp_int(imp_arg(c, 0), &fd) < 0 || c->ret == fd)
		return;
	f = imp_fd(im, c->pid, fd);
	if (f) {
		imp_fd_set(im, c, c->ret, f);
	} else {
		/* an untracked descriptor (a terminal) replaces a file */
		char *key = imp_fdkey(c->pid, c->ret);
		struct imp_file *old = g_hash_table_lookup(im->fds, key);

		if (old) {
			struct imp_call at = *c;

			g_hash_table_remove(im->fds, key);
			at.dur_ns = 0;
			imp_unref(im, &at, old);
		}
		g_free(key);
	}
}

/* chdir/fchdir: the process's working directory (absolute if known). */
static void imp_chdir(struct imp *im, const struct imp_call *c, bool by_fd)
{
	char *dir = NULL;

	if (!c->ok)
		return;
	if (by_fd) {
		int64_t fd;
		struct imp_file *f;

		if (imp_int(imp_arg(c, 0), &fd) == 0 &&
		    (f = imp_fd(im, c->pid, fd)) && f->abspath)
			dir = g_strdup(f->abspath);
	} else {
		char *s = imp_str(imp_arg(c, 0));

		if (s)
			dir = imp_abs(im, c->pid, AT_FDCWD, s);
		g_free(s);
	}
	if (!dir)
		return;
	while (strlen(dir) > 1 && g_str_has_suffix(dir, "/"))
		dir[strlen(dir) - 1] = '\0';
	g_free(im->last_cwd);
	im->last_cwd = g_strdup(dir);
	g_hash_table_replace(im->cwds, trc_u64_new(c->pid), dir);
}

/* Dispatch one finished call. */
static void imp_call(struct imp *im, const struct imp_call *c)
{
	const char *n = c->name;

	im->calls++;
	if (!strcmp(n, "open"))
		imp_open(im, c, -1, 0, 1, 0);
	else if (!strcmp(n, "openat"))
		imp_open(im, c, 0, 1, 2, 0);
	else if (!strcmp(n, "creat"))
		imp_open(im, c, -1, 0, -1, O_WRONLY | O_CREAT | O_TRUNC);
	else if (!strcmp(n, "close"))
		imp_close(im, c);
	else if (!strcmp(n, "read"))
		imp_rw(im, c, false, -1, false);
	else if (!strcmp(n, "write"))
		imp_rw(im, c, true, -1, false);
	else if (!strcmp(n, "pread64") || !strcmp(n, "pread"))
		imp_rw(im, c, false, 3, false);
	else if (!strcmp(n, "pwrite64") || !strcmp(n, "pwrite"))
		imp_rw(im, c, true, 3, false);
	else if (!strcmp(n, "readv"))
		imp_rw(im, c, false, -1, true);
	else if (!strcmp(n, "writev"))
		imp_rw(im, c, true, -1, true);
	else if (!strcmp(n, "lseek")) {
		struct imp_file *f = imp_fd_arg(im, c, 0);

		if (f && c->ok) {
			f->pos = (uint64_t)MAX(c->ret, 0);
			f->pos_known = true;
		}
	} else if (!strcmp(n, "fsync"))
		imp_fd_op(im, c, SFS_TOP_FSYNC, 0);
	else if (!strcmp(n, "fdatasync"))
		imp_fd_op(im, c, SFS_TOP_FSYNC, SFS_WOP_DATASYNC);
	else if (!strcmp(n, "ftruncate") || !strcmp(n, "ftruncate64"))
		imp_fd_op(im, c, SFS_TOP_FTRUNCATE, 0);
	else if (!strcmp(n, "truncate") || !strcmp(n, "truncate64"))
		imp_path_op(im, c, SFS_TOP_TRUNCATE, -1, 0, 1);
	else if (!strcmp(n, "unlink"))
		imp_path_op(im, c, SFS_TOP_UNLINK, -1, 0, -1);
	else if (!strcmp(n, "unlinkat"))
		imp_path_op(im, c,
			    imp_arg(c, 2) &&
				    strstr(imp_arg(c, 2), "AT_REMOVEDIR")
				? SFS_TOP_RMDIR
				: SFS_TOP_UNLINK,
			    0, 1, -1);
	else if (!strcmp(n, "rmdir"))
		imp_path_op(im, c, SFS_TOP_RMDIR, -1, 0, -1);
	else if (!strcmp(n, "mkdir"))
		imp_path_op(im, c, SFS_TOP_MKDIR, -1, 0, 1);
	else if (!strcmp(n, "mkdirat"))
		imp_path_op(im, c, SFS_TOP_MKDIR, 0, 1, 2);
	else if (!strcmp(n, "rename"))
		imp_two(im, c, SFS_TOP_RENAME, -1, 0, -1, 1);
	else if (!strcmp(n, "renameat") || !strcmp(n, "renameat2"))
		imp_two(im, c, SFS_TOP_RENAME, 0, 1, 2, 3);
	else if (!strcmp(n, "link"))
		imp_two(im, c, SFS_TOP_LINK, -1, 0, -1, 1);
	else if (!strcmp(n, "linkat"))
		imp_two(im, c, SFS_TOP_LINK, 0, 1, 2, 3);
	else if (!strcmp(n, "symlink"))
		imp_two(im, c, SFS_TOP_SYMLINK, -1, 0, -1, 1);
	else if (!strcmp(n, "symlinkat"))
		imp_two(im, c, SFS_TOP_SYMLINK, -1, 0, 1, 2);
	else if (!strcmp(n, "stat") || !strcmp(n, "lstat") ||
		 !strcmp(n, "stat64") || !strcmp(n, "lstat64"))
		imp_path_op(im, c, SFS_TOP_STAT, -1, 0, -1);
	else if (!strcmp(n, "newfstatat") || !strcmp(n, "fstatat64") ||
		 !strcmp(n, "statx"))
		imp_path_op(im, c, SFS_TOP_STAT, 0, 1, -1);
	else if (!strcmp(n, "fstat") || !strcmp(n, "fstat64"))
		imp_fd_op(im, c, SFS_TOP_STAT, 0);
	else if (!strcmp(n, "getdents64") || !strcmp(n, "getdents"))
		imp_fd_op(im, c, SFS_TOP_READDIR, 0);
	else if (!strcmp(n, "dup") || !strcmp(n, "dup2") || !strcmp(n, "dup3"))
		imp_dup(im, c);
	else if (!strcmp(n, "fcntl") && imp_arg(c, 1) &&
		 g_str_has_prefix(imp_arg(c, 1), "F_DUPFD"))
		imp_dup(im, c);
	else if (!strcmp(n, "copy_file_range"))
		imp_copy(im, c, 0, 1, 2, 3, 4);
	else if (!strcmp(n, "sendfile") || !strcmp(n, "sendfile64"))
		imp_copy(im, c, 1, 2, 0, -1, 3);
	else if (!strcmp(n, "chdir"))
		imp_chdir(im, c, false);
	else if (!strcmp(n, "fchdir"))
		imp_chdir(im, c, true);
	else if (!strcmp(n, "sync")) {
		struct sfs_trace_rec r;

		sfs_trace_rec_init(&r);
		r.op = SFS_TOP_SYNC;
		imp_emit(im, c, &r);
	} else if (!strcmp(n, "statfs")) {
		/* of a path in the tree: the root's, on replay */
		imp_path_op(im, c, SFS_TOP_STATFS, -1, 0, -1);
	} else {
		im->calls--;
	}
}

/*
 * Finish parsing "ARGS) = RET[ ERR (text)] <DUR>" (text after "NAME(")
 * and dispatch it.  Calls that do not end that way (killed, "= ?") are
 * skipped.
 */
static void imp_finish(struct imp *im, uint64_t pid, sfs_ns_t t_ns,
		       const char *name, const char *rest)
{
	const char *close = imp_close_paren(rest), *p, *lt;
	struct imp_call c = {.pid = pid, .t_ns = t_ns, .name = name};
	char *args, *end;

	if (!close)
		return;
	p = close + 1;
	while (*p == ' ')
		p++;
	if (*p != '=')
		return;
	for (p++; *p == ' ';)
		p++;
	errno = 0;
	c.ret = strtoll(p, &end, 0);
	if (end == p || errno)
		return; /* "= ?" */
	if (c.ret < 0) {
		const char *e = end;
		char ename[32];
		size_t n = 0;

		while (*e == ' ')
			e++;
		while (n + 1 < sizeof(ename) &&
		       (g_ascii_isalnum(e[n]) || e[n] == '_'))
			n++;
		memcpy(ename, e, n);
		ename[n] = '\0';
		c.err = trc_errno_find(ename);
		c.err = c.err ? -c.err : -EIO;
		c.ok = false;
	} else {
		c.ok = true;
	}
	lt = strrchr(end, '<');
	if (lt && g_ascii_isdigit(lt[1])) {
		const char *te;

		if (imp_time(lt + 1, &te, &c.dur_ns) < 0)
			c.dur_ns = 0;
	}
	args = g_strndup(rest, (gsize)(close - rest));
	c.args = imp_split_args(args);
	imp_call(im, &c);
	g_ptr_array_unref(c.args);
	g_free(args);
}

/* "+++ exited with 0 +++": the process's descriptors are closed. */
static void imp_exit(struct imp *im, uint64_t pid, sfs_ns_t t_ns)
{
	struct imp_call c = {.pid = pid, .t_ns = t_ns, .ok = true};
	char *prefix = g_strdup_printf("%" PRIu64 ":", pid);
	GPtrArray *gone = g_ptr_array_new_with_free_func(g_free);
	GHashTableIter it;
	gpointer k, v;

	g_hash_table_iter_init(&it, im->fds);
	while (g_hash_table_iter_next(&it, &k, &v))
		if (g_str_has_prefix(k, prefix))
			g_ptr_array_add(gone, g_strdup(k));
	/* in descriptor order, so the same text gives the same trace */
	g_ptr_array_sort(gone, imp_key_cmp);
	for (guint i = 0; i < gone->len; i++) {
		struct imp_file *f =
		    g_hash_table_lookup(im->fds, gone->pdata[i]);

		g_hash_table_remove(im->fds, gone->pdata[i]);
		imp_unref(im, &c, f);
	}
	g_ptr_array_unref(gone);
	g_free(prefix);
}

static int imp_line(struct imp *im, char *l, char **err)
{
	uint64_t pid = 0;
	sfs_ns_t t;
	const char *p = l, *te;
	char *name;

	while (*p == ' ')
		p++;
	if (g_str_has_prefix(p, "[pid")) {
		p += 4;
		while (*p == ' ')
			p++;
		pid = g_ascii_strtoull(p, (char **)&te, 10);
		if (te == p || *te != ']')
			return 0;
		p = te + 1;
		while (*p == ' ')
			p++;
	} else if (g_ascii_isdigit(*p)) {
		const char *q = p;

		while (g_ascii_isdigit(*q))
			q++;
		if (*q == ' ') { /* "PID TIME ..." (strace -f -o FILE) */
			pid = g_ascii_strtoull(p, NULL, 10);
			p = q;
			while (*p == ' ')
				p++;
		}
	}
	if (imp_time(p, &te, &t) < 0) {
		te = p;
		while (g_ascii_isalnum(*te) || *te == '_')
			te++;
		if (te == p || *te != '(')
			return 0; /* "--- SIGCHLD ...", a blank line */
		*err = g_strdup_printf("%u: no time stamp (strace's -ttt: "
				       "run strace -f -ttt -T -e "
				       "trace=file,desc)",
				       im->line);
		return -EINVAL;
	}
	if (!im->have_t0) {
		im->have_t0 = true;
		im->t0_ns = t;
	}
	t = t > im->t0_ns ? t - im->t0_ns : 0;
	p = te;
	while (*p == ' ')
		p++;
	if (g_str_has_prefix(p, "<... ")) {
		/* "<... NAME resumed>REST" */
		const char *ns = p + 5, *ne = strstr(ns, " resumed>");
		struct imp_pending *q = g_hash_table_lookup(im->pending, &pid);
		char *full;

		if (!ne || !q || strncmp(q->name, ns, (size_t)(ne - ns)) ||
		    q->name[ne - ns])
			return 0; /* a resumption we did not see begin */
		full = g_strconcat(q->args, ne + 9, NULL);
		imp_finish(im, pid, q->t_ns, q->name, full);
		g_free(full);
		g_hash_table_remove(im->pending, &pid);
		return 0;
	}
	if (g_str_has_prefix(p, "+++ exited") ||
	    g_str_has_prefix(p, "+++ killed")) {
		imp_exit(im, pid, t);
		return 0;
	}
	te = p;
	while (g_ascii_isalnum(*te) || *te == '_')
		te++;
	if (te == p || *te != '(')
		return 0; /* "--- SIGCHLD", ... */
	name = g_strndup(p, (gsize)(te - p));
	p = te + 1;
	te = strstr(p, " <unfinished ...>");
	if (te) {
		struct imp_pending *q = g_new0(struct imp_pending, 1);

		q->t_ns = t;
		q->name = name;
		q->args = g_strndup(p, (gsize)(te - p));
		g_hash_table_replace(im->pending, trc_u64_new(pid), q);
		return 0;
	}
	imp_finish(im, pid, t, name, p);
	g_free(name);
	return 0;
}

int sfs_trace_import_strace_root(FILE *in, FILE *out, const char *root,
				 char **err)
{
	struct imp im = {0};
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = 0;

	*err = NULL;
	if (root && root[0] != '/') {
		*err =
		    g_strdup_printf("root '%s' must be an absolute path", root);
		return -EINVAL;
	}
	im.w = sfs_trace_writer_new(out, NULL);
	im.root = root;
	im.fds = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	im.pending = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
					   imp_pending_free);
	im.files = g_ptr_array_new_with_free_func(imp_file_free);
	im.cwds =
	    g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	im.next_handle = 3;
	sfs_trace_write_comment(im.w, "imported from strace");
	while ((n = getline(&buf, &cap, in)) >= 0 && rc == 0) {
		im.line++;
		while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			buf[--n] = '\0';
		if (strlen(buf) != (size_t)n) {
			*err = g_strdup_printf("%u: a NUL byte in the line",
					       im.line);
			rc = -EINVAL;
			break;
		}
		rc = imp_line(&im, buf, err);
	}
	if (rc == 0 && ferror(in)) {
		*err = g_strdup_printf("%u: read error", im.line);
		rc = -EIO;
	}
	if (rc == 0 && im.line > 0 && !im.have_t0) {
		*err = g_strdup("no strace lines found (expected the output "
				"of strace -f -ttt -T -e trace=file,desc)");
		rc = -EINVAL;
	}
	free(buf);
	{
		int wrc = sfs_trace_writer_close(im.w);

		if (rc == 0 && wrc < 0) {
			*err = g_strdup_printf("writing the trace: %s",
					       g_strerror(-wrc));
			rc = wrc;
		}
	}
	g_hash_table_destroy(im.fds);
	g_hash_table_destroy(im.pending);
	g_ptr_array_unref(im.files);
	g_hash_table_destroy(im.cwds);
	g_free(im.last_cwd);
	return rc;
}

int sfs_trace_import_strace(FILE *in, FILE *out, char **err)
{
	return sfs_trace_import_strace_root(in, out, NULL, err);
}
