/*
 * config.h - the knobs of one simfs instance, parsed from mount-option
 * strings ("alloc=blockmap,mem=256M,direct").
 *
 * A knob is a row of a table (config.c): name, type, default, range, help,
 * where it lives in struct sfs_config.  Parsing, printing (--help, the stats
 * report) and runtime changes all walk that one table, so a new knob is one
 * field here plus one table row.  An allocator's knobs are not here: they
 * are rows of the allocator's own table (alloc.h), found by walking the
 * allocator registry, and kept as text in alloc_knobs.  The journal's
 * knobs are rows of the journal's table (models/journal/knobs.c, below)
 * over fields of this struct.  A bad value gets a one-line message and
 * changes nothing.
 */
#ifndef SFS_CONFIG_H
#define SFS_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define SFS_NAME_LEN 32
#define SFS_SPEC_LEN 256
#define SFS_PATH_LEN 4096
#define SFS_KNOBS_LEN 512

struct sfs_config {
	char alloc[SFS_NAME_LEN];   /* placement + mapping model: "blockmap" */
	char journal[SFS_NAME_LEN]; /* journal policy ("data="): "none" */
	uint64_t mem_bytes;         /* buffer cache budget */
	bool direct;                /* O_DIRECT on the backing device */
	bool ro;                    /* read-only mount */
	/* measurement (doc/device-models.md, doc/measurement.md) */
	char device[SFS_SPEC_LEN];  /* timing model spec: "ideal", "hdd-2009",
				       "hdd,rpm=5400"; "none": no timing
				       device at all */
	char sched[SFS_SPEC_LEN];   /* I/O scheduler spec: "elevator", "noop" */
	char clock[SFS_NAME_LEN];   /* "virtual", "account" or "emulate" */
	char cpu[SFS_SPEC_LEN];     /* CPU model spec of simfs run: "core2-2009",
				       "piii-1ghz,per_call_ns=3000"
				       (cpumodel.h); mounts ignore it */
	uint32_t cpus;              /* processors simfs run's clients share */
	char stats_path[SFS_PATH_LEN]; /* JSON report at unmount, or "" */
	char iolog_path[SFS_PATH_LEN]; /* device request log, or "" */
	char trace_path[SFS_PATH_LEN]; /* operation trace of a mount
					  (traces/README.md), or "" */
	/* page cache write-back (doc/cache.md); 0 keeps the preset's value */
	char vm[SFS_NAME_LEN];      /* preset: "2.6", "2.6.22", "modern" */
	uint32_t dirty_ratio;       /* % of mem= */
	uint32_t dirty_background_ratio;
	uint64_t dirty_bytes;       /* overrides dirty_ratio */
	uint64_t dirty_background_bytes;
	uint32_t dirty_expire_cs;   /* centiseconds */
	uint32_t dirty_writeback_cs;
	/* journal (doc/journal.md) */
	uint32_t commit_s;          /* commit interval, seconds (0: 5) */
	uint32_t journal_max_txn;   /* max transaction, blocks (0: log/4) */
	char journal_dev[SFS_PATH_LEN]; /* external journal, or "" */
	/* placement and policy knobs (doc/allocators.md) */
	char preset[SFS_NAME_LEN];  /* historical system applied first, or "" */
	char dirs[SFS_NAME_LEN];    /* directory placement: "orlov", "oldalloc" */
	char atime[SFS_NAME_LEN];   /* "atime", "relatime", "noatime" */
	bool no_diratime;           /* nodiratime: readdir leaves atime */
	bool no_user_xattr;         /* nouser_xattr: user.* refused */
	bool no_acl;                /* noacl: POSIX ACLs refused */
	bool no_shared_mmap;        /* noshared_mmap: MAP_SHARED not asked
				       for at INIT (fuse.c rule 9) */
	bool no_dir_index;          /* nodir_index: htree index not used */
	bool delalloc;              /* delayed allocation (any placement) */
	bool no_auto_da_alloc;      /* noauto_da_alloc: no early placement on
				       rename-over / truncate-to-zero */
	/* the allocators' own knobs (alloc.h: each placement model's knob
	 * table), as "key=value,..." of the ones set, in canonical form;
	 * a knob not named has its model's default */
	char alloc_knobs[SFS_KNOBS_LEN];
};

/* A named historical system: option text applied before the user's. */
struct sfs_config_preset {
	const char *name;
	const char *opts;        /* e.g. "data=ordered,alloc=reservation" */
	const char *help;
	bool journaled;          /* needs an image with a journal */
	const char *needs_alloc; /* allocator that must be registered, or NULL */
	const char *mkfs;	 /* simfs mkfs words for the on-disk features
				    of its era (simfs run --mkfs preset) */
};

/* Iterate the presets: i = 0, 1, ... until NULL. */
const struct sfs_config_preset *sfs_config_preset_nth(unsigned i);
/* Look a preset up by name; NULL if unknown. */
const struct sfs_config_preset *sfs_config_preset_find(const char *name);
/* Print every preset with its knobs (simfs mount --list-presets). */
void sfs_config_list_presets(FILE *out);

/* Defaults for every knob. */
void sfs_config_defaults(struct sfs_config *cfg);

/*
 * Apply a comma-separated option string to cfg.  "key=value" tokens after
 * device=SPEC or sched=SPEC that are knobs of that model (and not simfs
 * knobs) join its spec: "device=hdd,rpm=7200,mem=1G" sets device to
 * "hdd,rpm=7200" and mem to 1G.  Specs are checked by building the model.
 * Unknown keys are left to
 * the caller when `unknown` is non-NULL (they are appended to it, comma
 * separated, e.g. FUSE's own options); otherwise they are an error.
 * Returns 0, or with a one-line message in *err (g_free it): -EINVAL (a
 * value that does not parse, a malformed option), -ERANGE (a number or
 * size out of the knob's range) or -ENOKEY (no such knob).
 * On error cfg is unchanged.
 */
int sfs_config_parse(struct sfs_config *cfg, const char *opts,
		     char **unknown, char **err);

/*
 * Apply an option string, as sfs_config_parse without an unknown list, to
 * the config of a live mount: only knobs that may change while mounted
 * (clock=, device= and the device's own knobs, the journal's commit=
 * and journal_max_txn=, the write-back knobs, atime_policy= and diratime,
 * and the allocators' knobs marked live) are accepted; any other knob
 * gets -EPERM ("cannot change while mounted"), the rest the errors of
 * sfs_config_parse.  On error cfg is unchanged.
 */
int sfs_config_parse_runtime(struct sfs_config *cfg, const char *opts,
			     char **err);

/*
 * The parameters of placement model `place` (struct sfs_alloc_ops of
 * alloc.h) in cfg: its knobs' defaults, then the values cfg sets, into
 * params (place->params_size bytes).  0, or -EINVAL with *err.
 */
struct sfs_alloc_ops;
int sfs_config_alloc_params(const struct sfs_config *cfg,
			    const struct sfs_alloc_ops *place, void *params,
			    char **err);

/*
 * The journal's knobs (models/journal/knobs.c) and the page cache's
 * (simfs/cache_knobs.c), key == NULL ends each.  Their offsets are into
 * struct sfs_config: config.c lists them as rows of its own table.
 */
struct sfs_knob;
extern const struct sfs_knob *const sfs_jnl_knobs;
extern const struct sfs_knob *const sfs_cache_knobs;

/* The value of knob key (of the table or of an allocator) as option text
 * (g_free it); NULL if there is no such knob. */
char *sfs_config_get(const struct sfs_config *cfg, const char *key);

/* Set one knob by name from text; same errors as sfs_config_parse. */
int sfs_config_set(struct sfs_config *cfg, const char *key, const char *value,
		   char **err);

/* Call fn with every knob's name and value as text, in table order;
 * without with_paths, the file knobs (stats=, iolog=, trace=,
 * journal_dev=) are left out, so two runs that differ only in where they
 * write compare equal. */
void sfs_config_each(const struct sfs_config *cfg, bool with_paths,
		     void (*fn)(void *ctx, const char *name, const char *value),
		     void *ctx);

/*
 * The knob name (of the table, or of a device, scheduler or CPU model)
 * closest to key within one edit for a short key, two for a longer one,
 * for "did you mean"; NULL if none is that close, key is a knob itself
 * or one of FUSE's own options.  Points into static tables.
 */
const char *sfs_config_suggest(const char *key);

/* One row of the knob table, as documentation (simfs-options(7)). */
struct sfs_config_doc {
	const char *name;
	const char *metavar;  /* "SIZE", "NAME", ...; NULL for a boolean */
	const char *help;
	const char *def;      /* default as option text, "" = none; NULL for
				 an alias */
	const char *alias_of; /* an alias row: the name of its main row */
	bool runtime;         /* may change while mounted (.simfs/config) */
	bool has_range;       /* a number: min and max hold its range */
	bool is_size;         /* the number is a size (K/M/G/T suffix) */
	uint64_t min, max;
	char *choices;        /* "a, b, c" of a choice or spec knob, or NULL;
				 the caller g_frees it */
};

/* Row i of the knob table, aliases included, in table order; false past
 * the end. */
bool sfs_config_doc_nth(unsigned i, struct sfs_config_doc *out);

/* Print the knob table (name, default, help) for --help. */
void sfs_config_print_help(FILE *out);

/* Print "key=value" lines for every knob of cfg. */
void sfs_config_print(const struct sfs_config *cfg, FILE *out);

/*
 * Parse a size with an optional K/M/G/T suffix (powers of 1024) into bytes.
 * Returns 0 or -EINVAL.
 */
int sfs_parse_size(const char *text, uint64_t *out);

/*
 * SIMFS_PARSE_ONLY=1 in the environment: every subcommand parses its
 * arguments and -o knobs as usual (a bad one is the usual error, exit 2),
 * then exits 0 before touching an image, a mount or a file it would write.
 * The documentation test runs the command lines of README.md and doc/ so.
 */
bool sfs_parse_only(void);

#endif /* SFS_CONFIG_H */
