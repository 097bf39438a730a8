/*
 * cpumodel.h - the CPU model of `simfs run`: what the processor time of an
 * engine operation costs, from counts of the work the engine did.
 *
 * In virtual time a read served from the cache would take no time at all;
 * the CPU model charges every operation for its system call, the bytes it
 * copied, the blocks it mapped and allocated, the bitmap it scanned, the
 * journal blocks it logged and the device requests it issued.  The cost is
 * linear: one parameter (ns per unit) per count of struct sfs_cpu_counts.
 *
 *   sfs_cpumodel_new("piii-1ghz,per_call_ns=3000", &m, &err)
 *   sfs_fs_cpu_counts(fs, &before);  ... one operation ...
 *   sfs_fs_cpu_counts(fs, &after);
 *   sfs_cpu_counts_sub(&after, &before, &delta);
 *   burst = sfs_cpumodel_cost(m, &delta);     the runner queues it on a CPU
 *   sfs_cpumodel_free(m)
 *
 * Like the device models (devmodel.h): every parameter is a knob of one
 * self-describing table, and presets are data (a name plus knob settings):
 * none, piii-1ghz, core2-2009, modern.  A spec names a preset and may
 * override any knob.  The model only computes: it reads no clock, keeps no
 * state between calls, and identical counts give identical costs.
 *
 * What each count means, the presets and their sources: doc/cpu-model.md.
 */
#ifndef SFS_CPUMODEL_H
#define SFS_CPUMODEL_H

#include <stdint.h>
#include <stdio.h>

#include "devmodel.h" /* struct sfs_knob */
#include "format.h"   /* sfs_ns_t */

struct sfs_fs;

/*
 * Work done by the engine, cumulative (sfs_fs_cpu_counts) or over an
 * interval (sfs_cpu_counts_sub).  Each count has one cost knob.
 */
struct sfs_cpu_counts {
	uint64_t calls;		/* engine operations other than lookup: one
				   system call + VFS entry each */
	uint64_t path_steps;	/* lookups: one path component resolved */
	uint64_t bytes_copied;	/* bytes moved between the caller's buffer
				   and the cache (read + write) */
	uint64_t blocks_mapped; /* logical blocks looked up or mapped in a
				   file's block map or extent tree */
	uint64_t blocks_alloc;	/* blocks handed out by the placement model */
	uint64_t bitmap_words;	/* bitmap bytes examined by the placement
				   model (8-bit words) */
	uint64_t extent_steps;	/* extent-tree nodes searched, mballoc free
				   extents measured */
	uint64_t jnl_blocks;	/* blocks written to the journal (log) */
	uint64_t csum_bytes;	/* bytes checksummed (0 today: the engine
				   writes no metadata or journal checksums) */
	uint64_t dir_entries;	/* directory records examined */
	uint64_t io_reqs; /* device requests issued (read, write, flush) */
};

/* The parameters: ns per unit of each count (knob names in brackets). */
struct sfs_cpu_params {
	double per_call_ns;	    /* [per_call_ns] */
	double per_path_step_ns;    /* [per_path_step_ns] */
	double per_byte_ns;	    /* [per_byte_ns] bytes_copied */
	double per_block_mapped_ns; /* [per_block_mapped_ns] */
	double per_block_alloc_ns;  /* [per_block_alloc_ns] */
	double per_bitmap_word_ns;  /* [per_bitmap_word_ns] */
	double per_extent_step_ns;  /* [per_extent_step_ns] */
	double per_jnl_block_ns;    /* [per_jnl_block_ns] */
	double per_csum_byte_ns;    /* [per_csum_byte_ns] */
	double per_dir_entry_ns;    /* [per_dir_entry_ns] */
	double per_io_req_ns;	    /* [per_io_req_ns] */
};

/* A preset: a name for knob settings over the all-zero defaults. */
struct sfs_cpu_preset {
	const char *name;
	const char *params; /* "key=value,..." */
	const char *help;   /* what it imitates, one line */
};

struct sfs_cpumodel;

/* The knob table (key == NULL ends it); config.c attaches options with it. */
const struct sfs_knob *sfs_cpumodel_knobs(void);
/* Presets: i = 0, 1, ... until NULL; by name, NULL if unknown. */
const struct sfs_cpu_preset *sfs_cpumodel_nth_preset(unsigned i);
const struct sfs_cpu_preset *sfs_cpumodel_find_preset(const char *name);

/*
 * Make a model from spec "PRESET[,key=value...]"; the knobs given override
 * the preset's.  An unknown preset gets -EINVAL and a message listing the
 * presets and knobs; an unknown knob or a bad value -EINVAL and a message
 * naming the valid knobs or range.  *err (may be NULL) is g_free'd by the
 * caller; *out is freed with sfs_cpumodel_free.
 */
int sfs_cpumodel_new(const char *spec, struct sfs_cpumodel **out, char **err);
void sfs_cpumodel_free(struct sfs_cpumodel *m);

/*
 * CPU time of the work in delta: the sum of each count times its knob,
 * rounded to the nearest ns (saturating).  0 for all-zero counts.
 */
sfs_ns_t sfs_cpumodel_cost(const struct sfs_cpumodel *m,
			   const struct sfs_cpu_counts *delta);

/* The preset named by the spec ("piii-1ghz"). */
const char *sfs_cpumodel_name(const struct sfs_cpumodel *m);
/* The parameters in effect (read-only, as long as m lives). */
const struct sfs_cpu_params *sfs_cpumodel_params(const struct sfs_cpumodel *m);
/* Print "name: key=value,..." with every knob's value in effect. */
void sfs_cpumodel_print(const struct sfs_cpumodel *m, FILE *out);
/* Print the presets and the knobs (for --help). */
void sfs_cpumodel_list(FILE *out);

/* out = a - b, count by count (a later snapshot minus an earlier one);
 * a count that went backwards gives 0, never a huge difference. */
void sfs_cpu_counts_sub(const struct sfs_cpu_counts *a,
			const struct sfs_cpu_counts *b,
			struct sfs_cpu_counts *out);

/*
 * The engine's work since it was opened (simfs/cpucount.c).  Takes
 * fs->lock (and the devices' own locks): call it between operations, never
 * with the lock held.
 */
void sfs_fs_cpu_counts(struct sfs_fs *fs, struct sfs_cpu_counts *out);

#endif /* SFS_CPUMODEL_H */
