/*
 * workload.h - what `simfs run` drives: a workload is a generator of file
 * system operations for N clients, in the benchmark's own terms.
 *
 * A workload is an ops table (models/workload/<name>.c, one registry line
 * in models/workload/registry.c) with a table of parameters.  The runner
 * (run.h: the engine in virtual time; pathrun.c: system calls against a
 * real directory) pulls one operation at a time per client:
 *
 *   sfs_workload_new("iozone,threads=8,size=2G,record=256K,direct", &w, &err)
 *   n = sfs_workload_clients(w)
 *   while (client c is ready at time now)
 *       rc = sfs_workload_next(w, c, now, &op)    1: an op, 0: c is done
 *       ... serve op, recording it in a struct sfs_wl_result ...
 *   sfs_workload_report(w, &result, stdout)      the benchmark's own output
 *   sfs_workload_free(w)
 *
 * Operations name files by path, relative to the run's root (no leading
 * '/'), and open files by a per-client handle number the workload chooses
 * (dbench's fnum, a trace's fd): the runner maps handles to inodes.  A
 * workload is deterministic: the same parameters (and seed) give the same
 * operations for the same answers of `now`.
 *
 * Phases: an op whose `phase` is set starts that phase for its client
 * (the op itself belongs to the new phase); SFS_WOP_BARRIER also waits
 * until every client not yet done has reached a barrier (iozone's
 * throughput mode: all threads write, then all rewrite).  The result keeps
 * per phase the bytes, operations by label and their latencies.
 */
#ifndef SFS_WORKLOAD_H
#define SFS_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "format.h" /* sfs_ns_t */

enum sfs_wop_type {
	SFS_WOP_OPEN = 0,  /* path, flags (O_CREAT, O_TRUNC, O_EXCL,
			      O_DIRECT, O_APPEND, O_RDONLY...), mode -> fd */
	SFS_WOP_CLOSE,	   /* fd */
	SFS_WOP_READ,	   /* fd, off, len (a short read at EOF is fine) */
	SFS_WOP_WRITE,	   /* fd, off, len; the runner makes the bytes */
	SFS_WOP_FSYNC,	   /* fd; flags SFS_WOP_DATASYNC for fdatasync */
	SFS_WOP_FTRUNCATE, /* fd, len = the new size */
	SFS_WOP_UNLINK,	   /* path */
	SFS_WOP_MKDIR,	   /* path, mode */
	SFS_WOP_RMDIR,	   /* path */
	SFS_WOP_RENAME,	   /* path -> path2 */
	SFS_WOP_STAT,	   /* path (lstat) */
	SFS_WOP_READDIR,   /* path: the whole listing */
	SFS_WOP_SYMLINK,   /* path2 is made a symlink whose target is path */
	SFS_WOP_LINK,	   /* path2 becomes a hard link to path */
	SFS_WOP_SYNC,	   /* sync(2) */
	SFS_WOP_THINK,	   /* nothing but the think time (len unused) */
	SFS_WOP_BARRIER,   /* wait for the other clients (see above) */
	SFS_WOP_STATFS,	   /* statfs(2) of the root */
	SFS_WOP_CHMOD,	   /* path, mode (the permission bits) */
	SFS_WOP_NTYPES
};

#define SFS_WOP_DATASYNC 0x1 /* fsync flags */
#define SFS_WOP_ANY 1	     /* expect: any result is fine */
#define SFS_WOP_OFF_CUR                                                        \
	UINT64_MAX /* read/write at the handle's position                      \
		      (which then moves past it) */

struct sfs_wop {
	enum sfs_wop_type type;
	int fd;		   /* the client's handle number (>= 0) */
	const char *path;  /* the generator's; valid until its next call */
	const char *path2; /* rename/symlink/link target */
	uint64_t off;	   /* bytes, or SFS_WOP_OFF_CUR */
	uint64_t len;	   /* bytes */
	const void *data;  /* WRITE: the bytes (len of them), or NULL: the
			      runner makes them; the generator's, valid
			      until its next call */
	uint32_t flags;	   /* open(2) flags; fsync: SFS_WOP_DATASYNC */
	uint32_t mode;	   /* permission bits for open/mkdir */
	sfs_ns_t think_ns; /* the client's own time before this op */
	int expect;	   /* expected result: 0, -errno or SFS_WOP_ANY */
	const char *label; /* what the report counts it as ("WriteX");
			      NULL: the type's name */
	const char *phase; /* non-NULL: this op starts that phase */
};

/* ---- parameters: each workload declares a table ---- */

enum sfs_wl_ptype {
	SFS_WLP_UINT = 0, /* a whole number */
	SFS_WLP_SIZE,	  /* bytes, with K/M/G/T suffixes (sfs_parse_size) */
	SFS_WLP_TIME,	  /* seconds, a decimal ("0.5", "60", "10ms") */
	SFS_WLP_BOOL,	  /* "name" alone or name=1/0/yes/no */
	SFS_WLP_STRING,	  /* any text (a file name, a list "a:b") */
};

struct sfs_wl_param {
	const char *name;
	enum sfs_wl_ptype type;
	const char *def; /* default, as text (NULL: "0"/false/"") */
	const char *help;
};

/* Parsed values, by the index of the workload's parameter table. */
struct sfs_wl_value {
	uint64_t u;    /* UINT, SIZE, BOOL (0/1) */
	sfs_ns_t ns;   /* TIME */
	const char *s; /* STRING (and the text of every type) */
	bool given;    /* set on the command line, not defaulted */
};

/* ---- results (filled by the runner, read by the report) ---- */

/* Latencies of one label in one phase: exact count, sum and maximum, and
 * a log2 histogram for percentiles (bucket i: [2^i, 2^(i+1)) ns). */
#define SFS_WL_LAT_BUCKETS 48
struct sfs_wl_lat {
	char label[32];
	uint64_t count;
	uint64_t errors; /* results that differed from `expect` */
	sfs_ns_t sum_ns;
	sfs_ns_t max_ns;
	uint64_t bucket[SFS_WL_LAT_BUCKETS];
};

struct sfs_wl_phase {
	char name[64];
	sfs_ns_t start_ns;	/* first client entered it */
	sfs_ns_t end_ns;	/* last op of it finished */
	uint64_t bytes_read;	/* by READ ops */
	uint64_t bytes_written; /* by WRITE ops */
	uint64_t ops;		/* all but THINK and BARRIER */
	sfs_ns_t cpu_ns;	/* modelled CPU ("sys") time charged in it */
	sfs_ns_t dev_busy_ns;	/* modelled device busy time while it ran */
	uint64_t nlat;
	struct sfs_wl_lat *lat; /* nlat labels, in first-seen order */
};

struct sfs_wl_result {
	unsigned clients;
	sfs_ns_t elapsed_ns; /* first op to last */
	uint64_t nphases;
	struct sfs_wl_phase *phases; /* in first-seen order */
	uint64_t mismatches;	     /* ops whose result != expect */
	int first_error;	     /* the first unexpected -errno, or 0 */
	char first_error_what[256];  /* "client 3: write /f1: No space..." */
};

/* Percentile p (0..100) of a label's latencies, from the histogram (the
 * bucket's upper bound, clamped to max_ns). */
sfs_ns_t sfs_wl_lat_percentile(const struct sfs_wl_lat *l, double p);
/* The phase called name, or NULL. */
const struct sfs_wl_phase *sfs_wl_result_phase(const struct sfs_wl_result *r,
					       const char *name);
/* A phase's label entry, or NULL. */
const struct sfs_wl_lat *sfs_wl_phase_lat(const struct sfs_wl_phase *ph,
					  const char *label);

/* Recording, for runners: result_begin(r, clients); for each op, the
 * phase it is in and its latency; result_end frees nothing (free later). */
void sfs_wl_result_init(struct sfs_wl_result *r, unsigned clients);
/* The phase named name (created at start_ns if new). */
struct sfs_wl_phase *sfs_wl_result_enter(struct sfs_wl_result *r,
					 const char *name, sfs_ns_t start_ns);
/* One finished op: result rc against op->expect; bytes moved. */
void sfs_wl_result_op(struct sfs_wl_result *r, struct sfs_wl_phase *ph,
		      unsigned client, const struct sfs_wop *op, int rc,
		      uint64_t bytes, sfs_ns_t start_ns, sfs_ns_t end_ns);
void sfs_wl_result_free(struct sfs_wl_result *r);
/* Every phase as a table (ops, MB/s, ops/s, latency p50/p95/p99/max, CPU
 * time, device time): the runner's report beside the benchmark's own. */
void sfs_wl_result_print(const struct sfs_wl_result *r, FILE *out);

/* ---- the workload ops table ---- */

struct sfs_workload;

/* What a workload's metrics hook calls once per figure: the phase, the
 * metric's name, its value and unit. */
typedef void sfs_wl_emit_fn(void *ctx, const char *phase, const char *metric,
			    double value, const char *unit);

struct sfs_workload_ops {
	const char *name;
	const char *help; /* one line */
	const char *doc;  /* a paragraph: what it does, how it differs
			     from the real tool (for --help) */
	const struct sfs_wl_param *params; /* ends with {NULL} */
	/* Build the state from parsed values (v[i] for params[i]).  A bad
	 * combination: -EINVAL with a one-line message in *err. */
	int (*init)(const struct sfs_wl_value *v, void **st_out, char **err);
	unsigned (*clients)(void *st);
	/* Client c's next op at time now (ns since the run began; the real
	 * elapsed time on a --path run).  1: *out is filled; 0: c is done;
	 * -errno with *err on a failure (a malformed loadfile line). */
	int (*next)(void *st, unsigned c, sfs_ns_t now, struct sfs_wop *out,
		    char **err);
	/* Optional: the result of the op just returned to client c (so a
	 * trace or loadfile can follow what happened). */
	void (*done)(void *st, unsigned c, const struct sfs_wop *op, int rc);
	/* Print what the real benchmark prints, from the result. */
	void (*report)(void *st, const struct sfs_wl_result *r, FILE *out);
	/* Optional: the benchmark's own headline figures as metrics (dbench
	 * "throughput_mb_s" of phase "run", iozone "children_kb_s" of each
	 * test), for tables: emit(ctx, phase, metric, value, unit) each. */
	void (*metrics)(void *st, const struct sfs_wl_result *r,
			sfs_wl_emit_fn *emit, void *ctx);
	void (*fini)(void *st);
};

/* Registry (models/workload/registry.c). */
const struct sfs_workload_ops *sfs_workload_find(const char *name);
const struct sfs_workload_ops *sfs_workload_nth(unsigned i);
/* Every workload with its one-line help; with params: their tables. */
void sfs_workload_list(FILE *out, bool params);

/*
 * Make a workload from "NAME[,key=value|flag...]".  -EINVAL with a
 * one-line message in *err (unknown workload: the valid names; unknown
 * parameter: the workload's parameters; a bad value: what was expected).
 */
int sfs_workload_new(const char *spec, struct sfs_workload **out, char **err);
void sfs_workload_free(struct sfs_workload *w);
/* A workload from an ops table and a state made by the caller (tests,
 * other front ends); it owns st from here on (ops->fini frees it). */
struct sfs_workload *sfs_workload_wrap(const struct sfs_workload_ops *ops,
				       void *st);
const struct sfs_workload_ops *
sfs_workload_ops_of(const struct sfs_workload *w);
unsigned sfs_workload_clients(struct sfs_workload *w);
int sfs_workload_next(struct sfs_workload *w, unsigned c, sfs_ns_t now,
		      struct sfs_wop *out, char **err);
void sfs_workload_done(struct sfs_workload *w, unsigned c,
		       const struct sfs_wop *op, int rc);
void sfs_workload_report(struct sfs_workload *w, const struct sfs_wl_result *r,
			 FILE *out);

/*
 * Every metric of a result as CSV rows "workload,phase,metric,value,unit"
 * (a header line first): per phase seconds, ops, mb_s, ops_s, bytes,
 * latency (avg, p50, p95, p99, max in ms), modelled cpu_s and disk_s, then
 * the workload's own (ops->metrics).  Values with %.9g: the same result
 * gives the same bytes.
 */
void sfs_workload_write_metrics(struct sfs_workload *w,
				const struct sfs_wl_result *r, FILE *out);
/* One more row in that form (for the runner's own counters). */
void sfs_wl_metric_row(FILE *out, const char *workload, const char *phase,
		       const char *metric, double value, const char *unit);

/* ---- helpers the workloads share ---- */

/* The clients hook of a single-process benchmark (dd, tar, PostMark,
 * compilebench): always one client. */
unsigned sfs_wl_one_client(void *st);

/*
 * The line a report ends with when ops failed: "TOOL: N operations
 * failed; the first: WHAT" (nothing when none did).  tool is the name the
 * real benchmark prints its errors under ("tar" for untar).
 */
void sfs_wl_report_failures(FILE *out, const char *tool,
			    const struct sfs_wl_result *r);

/* Bounds of the thread-per-file workloads (iozone, tiobench). */
#define SFS_WL_MAX_THREADS 1024u
#define SFS_WL_MAX_FILE (1ull << 50)	/* 1P: bounds size / record */
#define SFS_WL_MAX_RECORD (16ull << 20) /* iozone's MAXBUFFERSIZE */
#define SFS_WL_SECTOR 512u		/* the O_DIRECT alignment demanded */

/*
 * The checks of a workload whose threads each work on a file of `size`
 * bytes in reads and writes of `rec` bytes (iozone's record, tiobench's
 * block; rec_name is the parameter's name): threads 1..SFS_WL_MAX_THREADS,
 * size 1 byte..SFS_WL_MAX_FILE, rec 1 byte..min(SFS_WL_MAX_RECORD, size)
 * dividing size, and with direct rec in whole SFS_WL_SECTOR sectors.
 * 0, or -EINVAL with a one-line message naming the value in *err.
 */
int sfs_wl_check_thread_files(const struct sfs_wl_value *threads,
			      const struct sfs_wl_value *size,
			      const struct sfs_wl_value *rec,
			      const char *rec_name, bool direct, char **err);

/* The name of an op type ("write"). */
const char *sfs_wop_name(enum sfs_wop_type t);

/*
 * Deterministic pseudo-random numbers for generators (SplitMix64,
 * seeded): the same seed gives the same sequence on every machine.
 */
struct sfs_wl_rng {
	uint64_t s;
};
void sfs_wl_rng_seed(struct sfs_wl_rng *r, uint64_t seed);
uint64_t sfs_wl_rng_next(struct sfs_wl_rng *r);
/* Uniform in [0, n) (n > 0). */
uint64_t sfs_wl_rng_below(struct sfs_wl_rng *r, uint64_t n);
/* The generator's output function (SplitMix64's finalizer): a bijection
 * of 64-bit words that scatters nearby inputs, for keys and hashes drawn
 * from a seed (iozone's record permutation). */
uint64_t sfs_wl_mix(uint64_t z);

#endif /* SFS_WORKLOAD_H */
