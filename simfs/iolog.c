/*
 * iolog.c - writing, hooking and reading the device request log (iolog.h).
 *
 * The writer is a stdio stream: records are formatted into its buffer and
 * reach the file when the buffer fills and at close.  The first error is
 * kept (sticky) and returned by every later record and by close.
 *
 * The hook sees each request twice (blockdev.h).  Before it, it notes the
 * issue time in a small table keyed by the request's address (the door
 * passes the same struct sfs_io_req to both calls), so several devices may
 * share one log; after it, it looks the issue time up and writes the
 * record.  A request whose "before" note is missing (table full, hook
 * installed mid-request) is recorded with service time 0.
 *
 * Locking: log->lock protects everything in struct sfs_iolog.  The chained
 * hook and the time source are called without it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "iolog.h"
#include "lock.h"
#include "timedev.h"

#define IOLOG_PENDING 8 /* requests in flight the hook can time */
#define IOLOG_FIELDS 6

struct iolog_pending {
	const struct sfs_io_req *req; /* NULL = free slot */
	sfs_ns_t start_ns;
};

struct sfs_iolog {
	sfs_mutex lock;
	FILE *f;
	bool is_stdout;	      /* "-": not closed */
	int err;	      /* first error, -errno; sticky */
	uint64_t count;	      /* records written */
	uint64_t failed;      /* failed requests the hook saw */
	sfs_iolog_now_fn now; /* hook time source, may be NULL */
	void *now_ctx;
	sfs_bdev_hook_fn next; /* chained hook, may be NULL */
	void *next_arg;
	struct iolog_pending pending[IOLOG_PENDING];
};

char sfs_iolog_op_char(enum sfs_io_op op)
{
	switch (op) {
	case SFS_IO_READ:
		return 'R';
	case SFS_IO_WRITE:
		return 'W';
	case SFS_IO_FLUSH:
		return 'F';
	}
	return '?';
}

/* ------------------------------------------------------------------ */
/* writer                                                              */
/* ------------------------------------------------------------------ */

int sfs_iolog_open(const char *path, struct sfs_iolog **out)
{
	struct sfs_iolog *log;
	FILE *f;

	if (!path || !out)
		return -EINVAL;
	if (strcmp(path, "-") == 0) {
		f = stdout;
	} else {
		f = fopen(path, "we");
		if (!f)
			return -errno;
	}
	log = g_new0(struct sfs_iolog, 1);
	sfs_mutex_init(&log->lock);
	log->f = f;
	log->is_stdout = f == stdout;
	if (fputs("# simfs iolog v1\n"
		  "# time_ns op offset length category service_ns\n",
		  f) == EOF)
		log->err = -EIO;
	*out = log;
	return 0;
}

int sfs_iolog_note(struct sfs_iolog *log, const char *key, const char *value)
{
	int rc;

	sfs_mutex_lock(&log->lock);
	if (!log->err && fprintf(log->f, "# %s=%s\n", key, value) < 0)
		log->err = -EIO;
	rc = log->err;
	sfs_mutex_unlock(&log->lock);
	return rc;
}

char *sfs_iolog_read_note(const char *path, const char *key)
{
	FILE *f = fopen(path, "re");
	char *line = NULL, *value = NULL;
	size_t cap = 0, n = strlen(key);

	if (!f)
		return NULL;
	/* the notes are the comment lines before the first record */
	while (!value && getline(&line, &cap, f) > 0 && line[0] == '#') {
		const char *p = line + 1;

		while (*p == ' ')
			p++;
		if (strncmp(p, key, n) == 0 && p[n] == '=')
			value = g_strchomp(g_strdup(p + n + 1));
	}
	free(line);
	fclose(f);
	return value;
}

/* Write r; caller holds log->lock. */
static int iolog_write_locked(struct sfs_iolog *log,
			      const struct sfs_iolog_rec *r)
{
	if (log->err)
		return log->err;
	if (fprintf(log->f,
		    "%" PRIu64 " %c %" PRIu64 " %" PRIu64 " %s %" PRIu64 "\n",
		    (uint64_t)r->time_ns, sfs_iolog_op_char(r->op),
		    r->off_bytes, r->len_bytes, sfs_io_cat_name(r->cat),
		    (uint64_t)r->service_ns) < 0) {
		log->err = -EIO;
		return log->err;
	}
	log->count++;
	return 0;
}

int sfs_iolog_record(struct sfs_iolog *log, const struct sfs_iolog_rec *r)
{
	int rc;

	if (!log || !r)
		return -EINVAL;
	sfs_mutex_lock(&log->lock);
	rc = iolog_write_locked(log, r);
	sfs_mutex_unlock(&log->lock);
	return rc;
}

uint64_t sfs_iolog_count(struct sfs_iolog *log)
{
	uint64_t n;

	sfs_mutex_lock(&log->lock);
	n = log->count;
	sfs_mutex_unlock(&log->lock);
	return n;
}

uint64_t sfs_iolog_failed(struct sfs_iolog *log)
{
	uint64_t n;

	sfs_mutex_lock(&log->lock);
	n = log->failed;
	sfs_mutex_unlock(&log->lock);
	return n;
}

int sfs_iolog_close(struct sfs_iolog *log)
{
	int rc;

	if (!log)
		return -EINVAL;
	rc = log->err;
	if (log->is_stdout) {
		if (fflush(log->f) == EOF && !rc)
			rc = -errno;
	} else if (fclose(log->f) == EOF && !rc) {
		rc = -errno;
	}
	sfs_mutex_clear(&log->lock);
	g_free(log);
	return rc;
}

/* ------------------------------------------------------------------ */
/* hook                                                                */
/* ------------------------------------------------------------------ */

void sfs_iolog_set_time_source(struct sfs_iolog *log, sfs_iolog_now_fn now,
			       void *ctx)
{
	sfs_mutex_lock(&log->lock);
	log->now = now;
	log->now_ctx = now ? ctx : NULL;
	sfs_mutex_unlock(&log->lock);
}

void sfs_iolog_chain_hook(struct sfs_iolog *log, sfs_bdev_hook_fn next,
			  void *next_arg)
{
	sfs_mutex_lock(&log->lock);
	log->next = next;
	log->next_arg = next ? next_arg : NULL;
	sfs_mutex_unlock(&log->lock);
}

int sfs_iolog_hook(void *arg, const struct sfs_io_req *req, bool done,
		   int result)
{
	struct sfs_iolog *log = arg;
	sfs_iolog_now_fn now;
	sfs_bdev_hook_fn next;
	void *now_ctx, *next_arg;
	sfs_ns_t t = 0;
	int rc = 0;

	sfs_mutex_lock(&log->lock);
	now = log->now;
	now_ctx = log->now_ctx;
	next = log->next;
	next_arg = log->next_arg;
	sfs_mutex_unlock(&log->lock);

	if (next)
		rc = next(next_arg, req, done, result);
	if (!done && rc)
		return rc; /* failed below us: never issued, never recorded */
	if (now)
		t = now(now_ctx);

	sfs_mutex_lock(&log->lock);
	if (!done) {
		for (unsigned i = 0; i < IOLOG_PENDING; i++) {
			if (!log->pending[i].req) {
				log->pending[i].req = req;
				log->pending[i].start_ns = t;
				break;
			}
		}
	} else {
		sfs_ns_t start = t;
		for (unsigned i = 0; i < IOLOG_PENDING; i++) {
			if (log->pending[i].req == req) {
				start = log->pending[i].start_ns;
				log->pending[i].req = NULL;
				break;
			}
		}
		if (result) {
			log->failed++;
		} else {
			struct sfs_iolog_rec r = {
			    .time_ns = now ? start : log->count,
			    .op = req->op,
			    .off_bytes = req->off_bytes,
			    .len_bytes = req->len_bytes,
			    .cat = req->cat,
			    .service_ns = now && t > start ? t - start : 0,
			};
			iolog_write_locked(log, &r);
		}
	}
	sfs_mutex_unlock(&log->lock);
	return 0;
}

void sfs_iolog_timedev_log(void *arg, const struct sfs_timedev_rec *rec)
{
	struct sfs_iolog_rec r = {
	    .time_ns = rec->start_ns,
	    .op = rec->op,
	    .off_bytes = rec->off_bytes,
	    .len_bytes = rec->len_bytes,
	    .cat = rec->cat,
	    .service_ns = rec->done_ns - rec->start_ns,
	};

	sfs_iolog_record(arg, &r);
}

/* ------------------------------------------------------------------ */
/* reader                                                              */
/* ------------------------------------------------------------------ */

static const char *const iolog_field_names[IOLOG_FIELDS] = {
    "time_ns", "op", "offset", "length", "category", "service_ns",
};

static int parse_u64(const char *text, unsigned field, uint64_t *out,
		     char **why)
{
	guint64 v;

	if (!g_ascii_isdigit(text[0]) ||
	    !g_ascii_string_to_unsigned(text, 10, 0, G_MAXUINT64, &v, NULL)) {
		*why = g_strdup_printf("bad %s '%s' (expected an unsigned "
				       "decimal number)",
				       iolog_field_names[field], text);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_cat(const char *text, enum sfs_io_cat *out, char **why)
{
	GString *names;

	for (unsigned k = 0; k < SFS_IO_NCAT; k++) {
		if (strcmp(text, sfs_io_cat_name(k)) == 0) {
			*out = k;
			return 0;
		}
	}
	names = g_string_new(NULL);
	for (unsigned k = 0; k < SFS_IO_NCAT; k++)
		g_string_append_printf(names, "%s%s", k ? ", " : "",
				       sfs_io_cat_name(k));
	*why = g_strdup_printf("unknown category '%s' (expected one of: %s)",
			       text, names->str);
	g_string_free(names, TRUE);
	return -EINVAL;
}

int sfs_iolog_parse_line(const char *line, struct sfs_iolog_rec *out,
			 char **why)
{
	struct sfs_iolog_rec r = {0};
	char **tok = g_strsplit_set(line, " \t\r\n", -1);
	const char *f[IOLOG_FIELDS];
	unsigned n = 0;
	uint64_t v;
	int rc = -EINVAL;

	for (char **t = tok; *t; t++) {
		if (!**t)
			continue; /* runs of blanks */
		if (n < IOLOG_FIELDS)
			f[n] = *t;
		n++;
	}
	if (n != IOLOG_FIELDS) {
		*why = g_strdup_printf("expected %u fields (time_ns op offset "
				       "length category service_ns), found %u",
				       IOLOG_FIELDS, n);
		goto out_free;
	}
	if (parse_u64(f[0], 0, &v, why))
		goto out_free;
	r.time_ns = v;
	if (strcmp(f[1], "R") == 0) {
		r.op = SFS_IO_READ;
	} else if (strcmp(f[1], "W") == 0) {
		r.op = SFS_IO_WRITE;
	} else if (strcmp(f[1], "F") == 0) {
		r.op = SFS_IO_FLUSH;
	} else {
		*why =
		    g_strdup_printf("bad op '%s' (expected R, W or F)", f[1]);
		goto out_free;
	}
	if (parse_u64(f[2], 2, &r.off_bytes, why) ||
	    parse_u64(f[3], 3, &r.len_bytes, why))
		goto out_free;
	if (r.off_bytes + r.len_bytes < r.off_bytes) {
		*why = g_strdup_printf("offset %" PRIu64 " + length %" PRIu64
				       " overflows",
				       r.off_bytes, r.len_bytes);
		goto out_free;
	}
	if (parse_cat(f[4], &r.cat, why))
		goto out_free;
	if (parse_u64(f[5], 5, &v, why))
		goto out_free;
	r.service_ns = v;
	*out = r;
	rc = 0;
out_free:
	g_strfreev(tok);
	return rc;
}

/* Blank or comment? */
static bool line_skip(const char *line)
{
	while (*line == ' ' || *line == '\t' || *line == '\r' || *line == '\n')
		line++;
	return *line == '\0' || *line == '#';
}

int sfs_iolog_read(const char *path, sfs_iolog_rec_fn fn, void *ctx, char **err)
{
	bool is_stdin = path && strcmp(path, "-") == 0;
	struct sfs_iolog_rec r;
	unsigned long lineno = 0;
	char *line = NULL, *why = NULL;
	size_t cap = 0;
	FILE *f;
	int rc = 0;

	if (err)
		*err = NULL;
	if (!path || !fn)
		return -EINVAL;
	f = is_stdin ? stdin : fopen(path, "re");
	if (!f) {
		rc = -errno;
		if (err)
			*err = g_strdup_printf("%s: %s", path, g_strerror(-rc));
		return rc;
	}
	for (;;) {
		errno = 0;
		if (getline(&line, &cap, f) < 0) {
			if (ferror(f)) {
				rc = errno ? -errno : -EIO;
				if (err)
					*err = g_strdup_printf(
					    "%s: read error after line "
					    "%lu: %s",
					    path, lineno, g_strerror(-rc));
			}
			break;
		}
		lineno++;
		if (line_skip(line))
			continue;
		rc = sfs_iolog_parse_line(line, &r, &why);
		if (rc) {
			if (err)
				*err = g_strdup_printf("%s:%lu: %s", path,
						       lineno, why);
			g_free(why);
			break;
		}
		rc = fn(ctx, &r, lineno);
		if (rc)
			break;
	}
	free(line);
	if (!is_stdin)
		fclose(f);
	return rc;
}
