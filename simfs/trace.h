/*
 * trace.h - operation traces: one file system operation a line, recorded
 * on a live mount (mount option trace=FILE) or imported from strace, and
 * replayed by `simfs run trace,file=FILE` in virtual time.  The format is
 * specified in traces/README.md ("# simfs-trace 1").
 *
 * Verbs:
 *   writer   sfs_trace_writer_open(path, with_data) / _new(FILE*, FILE*)
 *            sfs_trace_write(w, rec, data)     thread-safe, buffered
 *            sfs_trace_writer_close(w)         flush; the first error
 *   reader   sfs_trace_reader_open(path) / _new(FILE*, name)
 *            sfs_trace_read(r, &rec, &err)     1: a record, 0: end
 *   mapping  sfs_trace_to_wop(rec, &op)        a record as a workload op
 *   recorder sfs_trace_recorder_new(path, clock) for the FUSE adapter:
 *            the writer plus the inode -> (parent, name) map that turns
 *            inode numbers back into paths, and the handle numbers
 *   import   sfs_trace_import_strace(in, out, &err)
 *
 * Invariants:
 *  1. a record written and read back is the same record (paths are any
 *     byte string without NUL: percent-escaped on the line);
 *  2. a reader refuses a newer major version and any malformed line with
 *     "FILE:LINE: what is wrong", never aborting;
 *  3. the writer holds one mutex for the line and the data it appends, so
 *     a write's data offset and its line agree under any interleaving.
 */
#ifndef SFS_TRACE_H
#define SFS_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "format.h" /* sfs_ns_t */

#define SFS_TRACE_MAGIC "# simfs-trace"
#define SFS_TRACE_MAJOR 1
#define SFS_TRACE_MINOR 0
#define SFS_TRACE_NO_FD (-1)	     /* a record without a handle */
#define SFS_TRACE_OFF_CUR UINT64_MAX /* off=cur: the handle's position */
#define SFS_TRACE_NO_DATA UINT64_MAX /* a write without bytes in .data */

/* The operations of a trace (traces/README.md lists their fields). */
enum sfs_trace_op {
	SFS_TOP_OPEN = 0,
	SFS_TOP_CLOSE,
	SFS_TOP_READ,
	SFS_TOP_WRITE,
	SFS_TOP_FSYNC,
	SFS_TOP_FTRUNCATE,
	SFS_TOP_TRUNCATE, /* by path: no workload op of its own yet */
	SFS_TOP_UNLINK,
	SFS_TOP_MKDIR,
	SFS_TOP_RMDIR,
	SFS_TOP_RENAME,
	SFS_TOP_STAT,
	SFS_TOP_READDIR,
	SFS_TOP_SYMLINK,
	SFS_TOP_LINK,
	SFS_TOP_SYNC,
	SFS_TOP_STATFS,
	SFS_TOP_CHMOD, /* path, mode */
	SFS_TOP_N
};

/* One line of a trace.  Strings belong to whoever filled the record. */
struct sfs_trace_rec {
	sfs_ns_t t_ns;	 /* start, ns since the recording began */
	uint64_t client; /* the caller's process (thread) id */
	enum sfs_trace_op op;
	const char *path;  /* relative to the root, no leading '/' */
	const char *path2; /* rename/link/symlink: the new name */
	int64_t fd;	   /* handle number, or SFS_TRACE_NO_FD */
	uint64_t off;	   /* bytes, or SFS_TRACE_OFF_CUR */
	uint64_t len;	   /* bytes asked for; truncate: the new size */
	uint64_t done;	   /* read/write: bytes moved */
	uint64_t data_off; /* write: offset in FILE.data, or NO_DATA */
	uint32_t flags;	   /* open(2) flags (host values); fsync:
			      SFS_WOP_DATASYNC */
	uint32_t mode;	   /* permission bits */
	int result;	   /* 0 or -errno */
	sfs_ns_t dur_ns;   /* time the recording configuration spent */
};

/* The name of an op ("open"), or "?". */
const char *sfs_trace_op_name(enum sfs_trace_op op);
/* A record with every field at its "absent" value. */
void sfs_trace_rec_init(struct sfs_trace_rec *r);
/* A result as the trace writes it: "0", "-ENOSPC" (g_free it). */
char *sfs_trace_result_text(int rc);

/* ---- writer ---- */

struct sfs_trace_writer;

/*
 * Create path (truncating it) and, with with_data, path.data; write the
 * header.  -errno with a one-line message in *err.
 */
int sfs_trace_writer_open(const char *path, bool with_data,
			  struct sfs_trace_writer **out, char **err);
/* A writer on open streams (not closed by the writer); data may be NULL. */
struct sfs_trace_writer *sfs_trace_writer_new(FILE *out, FILE *data);
/*
 * Append one record; for a write with data (len bytes, may be NULL) the
 * bytes go to the data file and the line carries their offset (rec's
 * data_off is ignored then).  Safe from many threads at once.  An I/O
 * error is kept and returned by close.
 */
void sfs_trace_write(struct sfs_trace_writer *w,
		     const struct sfs_trace_rec *rec, const void *data);
/* Write a "# text" comment line (no newline in text). */
void sfs_trace_write_comment(struct sfs_trace_writer *w, const char *text);
/* Flush, close what open made, free.  0 or the first -errno seen. */
int sfs_trace_writer_close(struct sfs_trace_writer *w);
/* Format one record as a line (with '\n') into a new string (g_free). */
char *sfs_trace_format(const struct sfs_trace_rec *rec);

/* ---- reader ---- */

struct sfs_trace_reader;

/* Open path and check its header.  -errno and "FILE:LINE: ..." in *err. */
int sfs_trace_reader_open(const char *path, struct sfs_trace_reader **out,
			  char **err);
/* A reader on an open stream (not closed by the reader); name is used in
 * messages.  Checks the header: -EINVAL with *err. */
int sfs_trace_reader_new(FILE *in, const char *name,
			 struct sfs_trace_reader **out, char **err);
/*
 * The next record: 1 (its strings valid until the next call), 0 at the
 * end, -EINVAL with "FILE:LINE: what is wrong" in *err.
 */
int sfs_trace_read(struct sfs_trace_reader *r, struct sfs_trace_rec *out,
		   char **err);
/* The line number of the latest record read. */
unsigned sfs_trace_reader_line(const struct sfs_trace_reader *r);
void sfs_trace_reader_free(struct sfs_trace_reader *r);

/* ---- mapping to the workload (workload.h) ---- */

struct sfs_wop;
/*
 * Fill op from rec: type, fd, paths, offsets, flags, mode and expect (the
 * recorded result); think_ns, data and label are left to the caller.
 * -ENOTSUP for truncate by path (workload.h has no such op).
 */
int sfs_trace_to_wop(const struct sfs_trace_rec *rec, struct sfs_wop *op);

/* ---- recorder: the FUSE adapter's side ---- */

struct sfs_clock;
struct sfs_trace_recorder;

/* Recording to path and path.data, on clock c (its time now is the
 * trace's 0).  -errno with *err. */
int sfs_trace_recorder_new(const char *path, struct sfs_clock *c,
			   struct sfs_trace_recorder **out, char **err);
/* Close the trace: 0 or the first write error.  NULL is a no-op. */
int sfs_trace_recorder_free(struct sfs_trace_recorder *rec);
/* Time now on the recorder's clock, ns since the recording began. */
sfs_ns_t sfs_trace_now(struct sfs_trace_recorder *rec);
/* A reply named inode ino as (parent, name); ino 1 is the root. */
void sfs_trace_learn(struct sfs_trace_recorder *rec, uint64_t ino,
		     uint64_t parent, const char *name);
/* (parent, name) is gone (unlink, rmdir). */
void sfs_trace_unlearn(struct sfs_trace_recorder *rec, uint64_t parent,
		       const char *name);
/* A rename succeeded: the inode at (p, name) is now at (np, newname)
 * (exchange: and the one at (np, newname) at (p, name)). */
void sfs_trace_moved(struct sfs_trace_recorder *rec, uint64_t p,
		     const char *name, uint64_t np, const char *newname,
		     bool exchange);
/* The path of ino (with name appended if non-NULL): g_free it.  An
 * inode never seen gives "?ino/NUMBER". */
char *sfs_trace_path(struct sfs_trace_recorder *rec, uint64_t ino,
		     const char *name);
/* A new handle number for an open by client. */
int64_t sfs_trace_open_handle(struct sfs_trace_recorder *rec, uint64_t client);
/* The client that opened handle fd (0 if unknown); close drops it. */
uint64_t sfs_trace_handle_client(struct sfs_trace_recorder *rec, int64_t fd,
				 bool close);
/* Write one record (and a write's bytes). */
void sfs_trace_record(struct sfs_trace_recorder *rec,
		      const struct sfs_trace_rec *r, const void *data);

/* ---- import ---- */

/*
 * Convert `strace -f -ttt -T -e trace=file,desc` output to a trace.
 * Paths stay as strace printed them, without a leading '/'.  Lines that
 * are not calls of interest are skipped.  0, or -errno with "LINE: what"
 * in *err.
 */
int sfs_trace_import_strace(FILE *in, FILE *out, char **err);
/* The same keeping only paths under root (made relative to it), and the
 * handles opened on them; root NULL keeps everything. */
int sfs_trace_import_strace_root(FILE *in, FILE *out, const char *root,
				 char **err);

/* ---- the command (simfs/cmd_trace.c, in the simfs executable) ---- */

/* `simfs trace import-strace|show ...`; argv[0] is "trace".  The exit
 * status: 0, 1 (failed), 2 (usage). */
int sfs_cmd_trace(int argc, char **argv);

#endif /* SFS_TRACE_H */
