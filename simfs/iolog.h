/*
 * iolog.h - the device request log: one text line per request, which
 * `simfs plot` turns into seekwatcher-style pictures.
 *
 * Format (doc/measurement.md, "The I/O log"):
 *
 *   # simfs iolog v1
 *   # time_ns op offset length category service_ns
 *   123456 W 4096 8192 data 1500
 *
 * time_ns is when the request was issued (modelled time from a timing
 * model, or wall time), op is R, W or F (flush), offset and length are in
 * bytes (0 0 for a flush), category is a sfs_io_cat_name, service_ns is the
 * time from issue to completion.  Lines starting with '#' and blank lines
 * are ignored by the reader.
 *
 *   sfs_iolog_open(path, &log);                  "-" = standard output
 *   sfs_iolog_record(log, &rec);                 by hand, or
 *   sfs_timedev_set_log(td, sfs_iolog_timedev_log, log);   modelled, or
 *   sfs_iolog_set_time_source(log, now, ctx);
 *   sfs_bdev_set_hook(bd, sfs_iolog_hook, log);  records every request
 *   ...
 *   sfs_bdev_set_hook(bd, NULL, NULL);
 *   sfs_iolog_close(log);                        flushes; first error
 *
 *   sfs_iolog_read(path, fn, ctx, &err);         parse it back
 *
 * Writes are buffered (stdio) and flushed at close.  A log is thread-safe
 * (one mutex), so one log may serve the hooks of several devices.
 */
#ifndef SFS_IOLOG_H
#define SFS_IOLOG_H

#include <stdbool.h>
#include <stdint.h>

#include "blockdev.h"
#include "format.h" /* sfs_ns_t */

/* One request. */
struct sfs_iolog_rec {
	sfs_ns_t time_ns;    /* issue time, ns since the clock's origin */
	enum sfs_io_op op;   /* read, write or flush */
	uint64_t off_bytes;  /* 0 for a flush */
	uint64_t len_bytes;  /* 0 for a flush */
	enum sfs_io_cat cat; /* what the request carries */
	sfs_ns_t service_ns; /* issue to completion */
};

struct sfs_iolog;

/* Where the hook gets its time: the caller's clock, e.g. sfs_clock_now_ns. */
typedef sfs_ns_t (*sfs_iolog_now_fn)(void *ctx);

/*
 * Create (truncate) path and write the header.  "-" writes to standard
 * output (not closed at close).  0 or -errno; *out is freed by
 * sfs_iolog_close.
 */
int sfs_iolog_open(const char *path, struct sfs_iolog **out);
/* Append one record.  0, or -EIO once any write has failed (sticky). */
int sfs_iolog_record(struct sfs_iolog *log, const struct sfs_iolog_rec *r);
/* Records written so far. */
uint64_t sfs_iolog_count(struct sfs_iolog *log);
/* Flush, close and free.  0, or the first write/close error (-errno). */
int sfs_iolog_close(struct sfs_iolog *log);

/* ---- recording a device's requests through its hook point ---- */

/*
 * The hook's time source.  Without one, time_ns is the request's sequence
 * number in the log (0, 1, 2, ...) and service_ns is 0.
 */
void sfs_iolog_set_time_source(struct sfs_iolog *log, sfs_iolog_now_fn now,
			       void *ctx);
/*
 * A hook that was installed on the device before this one: sfs_iolog_hook
 * calls it first (before and after each request) and a request it fails is
 * not recorded.
 */
void sfs_iolog_chain_hook(struct sfs_iolog *log, sfs_bdev_hook_fn next,
			  void *next_arg);
/*
 * sfs_bdev_hook_fn for sfs_bdev_set_hook(bd, sfs_iolog_hook, log): notes
 * the issue time before a request and records it when it completed
 * successfully (done, result == 0).  Failed requests are counted
 * (sfs_iolog_failed), not recorded.
 */
int sfs_iolog_hook(void *arg, const struct sfs_io_req *req, bool done,
		   int result);
/* Requests the hook saw fail. */
uint64_t sfs_iolog_failed(struct sfs_iolog *log);

/*
 * sfs_timedev_log_fn for sfs_timedev_set_log(bd, sfs_iolog_timedev_log,
 * log): records each request as the timing model served it, in service
 * order: time_ns = when the device began on it (modelled), service_ns =
 * its modelled service time (merged requests appear as one).
 */
struct sfs_timedev_rec;
void sfs_iolog_timedev_log(void *arg, const struct sfs_timedev_rec *rec);

/*
 * Write a "# KEY=VALUE" note line (before the first record: a reader takes
 * notes from the head of the log).  0 or the sticky error.
 */
int sfs_iolog_note(struct sfs_iolog *log, const char *key, const char *value);

/* ---- reading ---- */

/*
 * The value of the first "# KEY=VALUE" note at the head of the log at
 * path (g_free it), or NULL if it has none or cannot be read.
 */
char *sfs_iolog_read_note(const char *path, const char *key);

/* Called per record with its line number (1-based); non-zero stops. */
typedef int (*sfs_iolog_rec_fn)(void *ctx, const struct sfs_iolog_rec *r,
				unsigned long line);

/*
 * Parse the log at path ("-" = standard input), calling fn per record in
 * file order.  Returns 0; fn's non-zero return; -EINVAL for a malformed
 * line, with "PATH:LINE: reason" in *err (g_free it; err may be NULL); or
 * -errno if the file cannot be read (message in *err too).
 */
int sfs_iolog_read(const char *path, sfs_iolog_rec_fn fn, void *ctx,
		   char **err);

/*
 * Parse one record line (no '#', not blank).  0, or -EINVAL with the
 * reason in *why (g_free it).
 */
int sfs_iolog_parse_line(const char *line, struct sfs_iolog_rec *out,
			 char **why);

/* 'R', 'W' or 'F'; '?' for anything else. */
char sfs_iolog_op_char(enum sfs_io_op op);

#endif /* SFS_IOLOG_H */
