/*
 * devmodel.h - device timing models: what one request costs on a modelled
 * disk (models/device/).
 *
 * A model is a `const struct sfs_devmodel_ops` table plus private state,
 * chosen by name from a registry (models/device/registry.c): `ideal`, `hdd`,
 * `ssd`.  Every parameter is a knob, declared once in the model's knob table
 * and parsed, defaulted and printed by the helpers below.  Presets are data
 * (models/device/presets.c): a name for a model plus knob settings.
 *
 *   sfs_devmodel_new("hdd-2009,rpm=5400", &m, &err)   preset + overrides
 *   sfs_devmodel_cost(m, &req, now, &cost)            the one door
 *   sfs_devmodel_free(m)
 *
 * A model only computes time; it moves no data and reads no clock.  `now` is
 * the time the device starts working on the request (the caller queues
 * requests: see timedev.h); it must not decrease from one call to the next.
 * Identical calls on identical models give identical costs: there is no
 * randomness anywhere, rotational position included.
 *
 * Formulas, knobs and presets: doc/device-models.md.  Not thread-safe: the
 * caller serialises calls on one model (timedev holds its lock).
 */
#ifndef SFS_DEVMODEL_H
#define SFS_DEVMODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "blockdev.h" /* struct sfs_io_req */
#include "format.h"   /* sfs_ns_t */

/* ---- knob tables (shared with the I/O schedulers, sched.h, the CPU
 * model and the allocators, alloc.h) ---- */

enum sfs_knob_type {
	SFS_KNOB_DOUBLE, /* double; "auto" (NaN) allowed when def is "auto" */
	SFS_KNOB_U64,	 /* uint64_t */
	SFS_KNOB_U32,	 /* uint32_t (max at most UINT32_MAX) */
	SFS_KNOB_SIZE,	 /* uint64_t bytes; K/M/G/T suffix, powers of 1024 */
	SFS_KNOB_BOOL,	 /* bool: on/off, yes/no, true/false, 1/0 */
	SFS_KNOB_ENUM,	 /* int: index into `choices` */
};

/* One knob: a row of a table ended by a row with key == NULL. */
struct sfs_knob {
	const char *key;
	enum sfs_knob_type type;
	size_t offset;	     /* offsetof() the field in the parameter struct */
	const char *def;     /* default, as text */
	double min, max;     /* inclusive range (DOUBLE, U64, SIZE) */
	const char *choices; /* ENUM: "fifo|clook" */
	const char *help;    /* unit and meaning, one line */
	bool live;	     /* allocator, journal and page cache knobs:
				may change while mounted (.simfs/config); a
				device's or scheduler's knobs change with its
				whole spec instead */
	const char *metavar; /* for --help and man pages: "BLOCKS"; NULL:
				from the type ("N", "SIZE", ...) */
};

/*
 * Fill params with every knob's default.  who names the owner in messages.
 * 0, or -EINVAL with a message in *err (g_free it) if a default is bad.
 */
int sfs_knobs_defaults(const char *who, const struct sfs_knob *knobs,
		       void *params, char **err);
/*
 * Set one knob from text.  Unknown keys and bad values give -EINVAL and a
 * one-line message in *err (listing the valid keys, or the valid range);
 * params is then unchanged.
 */
int sfs_knobs_set(const char *who, const struct sfs_knob *knobs, void *params,
		  const char *key, const char *value, char **err);
/* Apply "key=value" items of a NULL-terminated vector, in order. */
int sfs_knobs_set_all(const char *who, const struct sfs_knob *knobs,
		      void *params, char *const *items, char **err);
/* The knob called key in knobs, or NULL. */
const struct sfs_knob *sfs_knob_find(const struct sfs_knob *knobs,
				     const char *key);
/* k's value in params as option text (g_free it). */
char *sfs_knob_format(const struct sfs_knob *k, const void *params);
/* What a valid value of k looks like, for messages (g_free it). */
char *sfs_knob_want(const struct sfs_knob *k);
/* Print "key=value" for every knob of params, comma separated. */
void sfs_knobs_print_values(const struct sfs_knob *knobs, const void *params,
			    FILE *out);
/* Print one line per knob: key, default, range, help. */
void sfs_knobs_print_help(const struct sfs_knob *knobs, FILE *out);

/* ---- costs ---- */

/*
 * What a request costs.  total_ns is the service time: the time from the
 * moment the device starts on the request until it completes; the door sets
 * it to the sum of the four parts.  A flush's parts are those of the
 * write-cache destage it forces.
 */
struct sfs_dev_cost {
	sfs_ns_t total_ns;    /* = overhead + seek + rotation + transfer */
	sfs_ns_t overhead_ns; /* command processing */
	sfs_ns_t seek_ns;     /* arm motion incl. settle, or a head switch */
	sfs_ns_t rotation_ns; /* waiting for the first sector to come round */
	sfs_ns_t transfer_ns; /* media (or bus) transfer incl. track switches,
				 and waiting on read-ahead */
	bool cache_hit;	      /* read served from the drive cache (or its
				 read-ahead stream); write absorbed by it */
	uint32_t seeks;	      /* media accesses not starting under the head,
				 incl. background destages since the last
				 request (their time is not in total_ns) */
	uint64_t seek_bytes;  /* total distance of those, in bytes */
	uint64_t seek_cyl;    /* total distance of those, in cylinders */
};

/* Static shape of a mechanical model; zeros where it has none. */
struct sfs_dev_geometry {
	uint64_t capacity_bytes; /* modelled size; offsets beyond it clamp */
	uint64_t cylinders;
	uint32_t heads;
	uint32_t zones;
	double rev_ns; /* one revolution */
};

/* ---- models ---- */

struct sfs_devmodel;

/*
 * A model.  name, knobs, params_size, init and service are required; the
 * others may be NULL.
 */
struct sfs_devmodel_ops {
	const char *name;
	const char *help;	      /* one line for sfs_devmodel_list */
	const struct sfs_knob *knobs; /* the parameters (key == NULL ends) */
	size_t params_size;	      /* sizeof the parameter struct */
	/*
	 * Set m->priv up from params (m->params, parsed and range-checked by
	 * the knob table).  Checks what ranges cannot (knobs that contradict
	 * each other).  0, or -EINVAL with a one-line message in *err (err
	 * may be NULL); on failure it frees what it set up.
	 */
	int (*init)(struct sfs_devmodel *m, const void *params, char **err);
	/* optional: free m->priv */
	void (*fini)(struct sfs_devmodel *m);
	/*
	 * Cost of req started at time now; fills the parts of *cost (zeroed by
	 * the door), not total_ns.  Updates the model's state (head position,
	 * caches).  Read and write have len > 0; a flush has no range.
	 * 0 or -EINVAL.
	 */
	int (*service)(struct sfs_devmodel *m, const struct sfs_io_req *req,
		       sfs_ns_t now, struct sfs_dev_cost *cost);
	/*
	 * optional: write out what the drive's write cache holds, started at
	 * now, as the drive does on its own (no command is sent, so no
	 * command overhead); fills the parts of *cost like service.  NULL:
	 * the model holds no writes.
	 */
	int (*writeout)(struct sfs_devmodel *m, sfs_ns_t now,
			struct sfs_dev_cost *cost);
	/* optional: forget all state; NULL: the door re-runs fini + init */
	void (*reset)(struct sfs_devmodel *m);
	/* optional: seek time over d_cyl cylinders (0 = no move) */
	sfs_ns_t (*seek_time)(const struct sfs_devmodel *m, uint64_t d_cyl,
			      bool write);
	/* optional: geometry; NULL means none (all zero) */
	void (*geometry)(const struct sfs_devmodel *m,
			 struct sfs_dev_geometry *out);
	/* optional: the cylinder holding byte off (with seek_time, what an
	 * arm movement between two offsets costs) */
	uint64_t (*cylinder)(const struct sfs_devmodel *m, uint64_t off);
};

struct sfs_devmodel {
	const struct sfs_devmodel_ops *ops;
	void *priv;	   /* the model's state */
	void *params;	   /* parsed knobs, ops->params_size bytes; read-only */
	char *name;	   /* what was asked for: preset or model name */
	sfs_ns_t last_now; /* latest `now` seen by the door */
};

/* A preset: a name for a model with knob settings (presets.c). */
struct sfs_devmodel_preset {
	const char *name;
	const char *model;  /* registry name */
	const char *params; /* "key=value,..." applied over the defaults */
	const char *help;   /* what it imitates, one line */
};

/* Registry: NULL if unknown. */
const struct sfs_devmodel_ops *sfs_devmodel_find(const char *name);
const struct sfs_devmodel_preset *sfs_devmodel_find_preset(const char *name);
/* Iterate: i = 0, 1, ... until NULL. */
const struct sfs_devmodel_ops *sfs_devmodel_nth(unsigned i);
const struct sfs_devmodel_preset *sfs_devmodel_nth_preset(unsigned i);

/*
 * Make a model from spec: "NAME[,key=value...]" where NAME is a model or a
 * preset; knobs given here override the preset's.  Unknown names get
 * -EINVAL and a message listing models and presets; unknown keys or bad
 * values get -EINVAL and a message naming the valid keys or range.
 * *err (may be NULL) is g_free'd by the caller.  Free *out with
 * sfs_devmodel_free.
 */
int sfs_devmodel_new(const char *spec, struct sfs_devmodel **out, char **err);
void sfs_devmodel_free(struct sfs_devmodel *m);

/*
 * The one door.  Cost of req started at time now (>= any earlier now on
 * this model).  Fills *cost entirely.  0, or -EINVAL for a bad request
 * (unknown op, empty or overflowing range, a flush with a range, time going
 * backwards).
 */
int sfs_devmodel_cost(struct sfs_devmodel *m, const struct sfs_io_req *req,
		      sfs_ns_t now, struct sfs_dev_cost *cost);

/*
 * Cost of writing out the drive cache at time now without a flush command
 * (ops->writeout): all zero for a model that holds no writes.  0, or
 * -EINVAL if time goes backwards.
 */
int sfs_devmodel_writeout(struct sfs_devmodel *m, sfs_ns_t now,
			  struct sfs_dev_cost *cost);

/* Forget all state (head position, caches, clock of the model). */
void sfs_devmodel_reset(struct sfs_devmodel *m);

/* Seek time over d_cyl cylinders; -ENOTSUP if the model has no arm. */
int sfs_devmodel_seek_ns(const struct sfs_devmodel *m, uint64_t d_cyl,
			 bool write, sfs_ns_t *out);
/* The cylinder holding byte off; -ENOTSUP if the model has no arm. */
int sfs_devmodel_cylinder(const struct sfs_devmodel *m, uint64_t off,
			  uint64_t *out);
/* The model's geometry (all zero for models without one). */
void sfs_devmodel_geometry(const struct sfs_devmodel *m,
			   struct sfs_dev_geometry *out);

const char *sfs_devmodel_name(const struct sfs_devmodel *m);
/* Print "name: key=value,..." with every knob's value in effect. */
void sfs_devmodel_print(const struct sfs_devmodel *m, FILE *out);
/* Print every model with its knobs, then every preset. */
void sfs_devmodel_list(FILE *out);

/* The models (models/device/<name>.c) and presets (presets.c). */
extern const struct sfs_devmodel_ops sfs_devmodel_ideal_ops;
extern const struct sfs_devmodel_ops sfs_devmodel_hdd_ops;
extern const struct sfs_devmodel_ops sfs_devmodel_ssd_ops;
extern const struct sfs_devmodel_preset sfs_devmodel_presets[];

#endif /* SFS_DEVMODEL_H */
