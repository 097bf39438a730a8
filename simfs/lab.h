/*
 * lab.h - seeded predict-then-check exercises (`simfs lab`).
 *
 * A lab turns a seed and a level into a scenario: a small filesystem, a
 * sequence of operations, and numbered questions about what the engine
 * will do.  The answers are never written by hand: a lab computes them by
 * running its scenario through the same engine a mount runs (libsimfs on
 * a RAM or file device, in virtual time), and reads them back from the
 * engine's own state and stats.  The same seed and level give the same
 * sheet, byte for byte, on every machine.
 *
 * One lab is one file (simfs/lab_NAME.c) defining one struct sfs_lab and
 * one line in the registry (simfs/lab.c, sfs_labs[]).  The framework in
 * lab.c owns everything common: the command line, printing a sheet with
 * or without answers, setting up a mount and grading an answer file.
 *
 * Answers are canonical strings: tokens separated by one space, lower
 * case, numbers in decimal.  A student's answer is normalised the same
 * way (case folded, runs of blanks and commas made one space) and
 * compared token by token.  A question marked `partial` gives credit in
 * proportion to the tokens in the right place; otherwise it is all or
 * nothing.
 */
#ifndef SFS_LAB_H
#define SFS_LAB_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

struct sfs_fs;

/* What a lab is built from: the seed and level the user gave. */
struct sfs_lab_params {
	uint64_t seed;
	int level; /* 1 .. lab->levels */
};

/* One numbered question and its worked answer. */
struct sfs_lab_question {
	char *text;    /* the question as the student reads it */
	char *answer;  /* canonical answer (see above) */
	char *explain; /* the reasoning, printed with --answers; may be "" */
	bool partial;  /* credit per token rather than all or nothing */
};

/* A lab's output for one seed and level. */
struct sfs_lab_sheet {
	GString *scenario;	 /* setup and operations, as printed */
	GPtrArray *questions;	 /* of struct sfs_lab_question *, owned */
	GString *figure;	 /* picture printed with the answers, or "" */
	GString *mount_script;	 /* shell commands replaying the scenario
				    on a mount (cwd = the mount), or "" */
	char *mkfs_args;	 /* `simfs mkfs` options for --mount, or NULL */
	char *mount_opts;	 /* `-o` options for --mount, or NULL */
};

struct sfs_lab {
	const char *name;    /* as typed: `simfs lab NAME` */
	const char *summary; /* one line, for `simfs lab list` */
	const char *teaches; /* a paragraph for --help and doc/teaching.md */
	int levels;	     /* 3 or more */
	const char *const *level_help; /* levels entries, one line each */
	/*
	 * Build the sheet for p: generate the scenario from p->seed, run it
	 * through the engine, fill sheet (already initialised).  0, or a
	 * negative errno with *err set (g_strdup'd) to a message.
	 */
	int (*build)(const struct sfs_lab_params *p, struct sfs_lab_sheet *sheet,
		     char **err);
};

void sfs_lab_sheet_init(struct sfs_lab_sheet *sheet);
void sfs_lab_sheet_clear(struct sfs_lab_sheet *sheet);

/*
 * Append a question: answer is the canonical answer (normalised here),
 * explain may be NULL.  The text is printf-formatted.
 */
void sfs_lab_ask(struct sfs_lab_sheet *sheet, bool partial, const char *answer,
		 const char *explain, const char *fmt, ...)
	G_GNUC_PRINTF(5, 6);

/* Normalise a student's or a lab's answer text; g_free the result. */
char *sfs_lab_normalise(const char *text);

/*
 * The filesystem a lab's scenario runs on.  sfs_lab_fs_open makes it in
 * memory exactly as `simfs mkfs $(sfs_lab_mkfs_args) IMAGE SIZE` would
 * (same geometry, same --seed) and opens it with the knobs plus
 * clock=virtual, as `simfs mount -o $(sfs_lab_mount_opts)` does: so the
 * numbers a --mount run shows are the numbers the lab computed.
 */
struct sfs_lab_fs_spec {
	uint64_t size_bytes;	 /* image size, a multiple of 1 KiB */
	uint32_t block_size;	 /* 1024, 2048, 4096; 0: 4096 */
	uint32_t inode_ratio;	 /* bytes per inode; 0: mkfs's default */
	uint32_t journal_blocks; /* internal journal (mkfs -J); 0: none */
	const char *features;	 /* mkfs -O list, or NULL */
	const char *mount_opts;	 /* knobs ("alloc=extent,delalloc"), or NULL */
};

/*
 * Make spec's filesystem on a memory device and open it; *out is the fs
 * (sfs_fs_close it: the device goes with it).  If sheet is not NULL and
 * its mkfs_args is still NULL, sets sheet->mkfs_args and mount_opts from
 * spec (the first filesystem a lab opens is the one --mount makes).  0,
 * or -errno with *err set (g_free it).
 */
int sfs_lab_fs_open(struct sfs_lab_sheet *sheet,
		    const struct sfs_lab_fs_spec *spec, struct sfs_fs **out,
		    char **err);
/* `simfs mkfs` options for spec, ending with the SIZE word (the framework
 * puts IMAGE before it); g_free the result. */
char *sfs_lab_mkfs_args(const struct sfs_lab_fs_spec *spec);
/* The mount options for knobs opts (NULL: none): opts,clock=virtual. */
char *sfs_lab_mount_opts(const char *opts);

/* The inode at absolute path ("/a/b"; "/" is the root) in *ino_out:
 * 0, -ENOENT, -ENOTDIR. */
int sfs_lab_resolve(struct sfs_fs *fs, const char *path, uint32_t *ino_out);
/* The block map of inode ino as frag.h runs (struct sfs_frag_run; data
 * runs merged, metadata listed): *out, g_array_unref it.  Takes the
 * engine's lock.  0, -ESTALE (not in use), -EINVAL (no map), -EIO. */
int sfs_lab_file_runs(struct sfs_fs *fs, uint32_t ino, GArray **out);

/* The statistic at a dotted path of the engine's stats JSON ("journal.
 * commits.fsync", "device.submitted.write.bytes") in *out: 0, or -ENOENT
 * when there is no such number. */
int sfs_lab_stat(struct sfs_fs *fs, const char *path, uint64_t *out);

/* A generator seeded from all 64 bits of p->seed and the lab's name, so
 * two labs with the same seed do not draw the same numbers; g_rand_free. */
GRand *sfs_lab_rand(const struct sfs_lab *lab, const struct sfs_lab_params *p);

/* The registry, in the order `simfs lab list` prints it. */
extern const struct sfs_lab *const sfs_labs[];
extern const unsigned sfs_labs_count;
const struct sfs_lab *sfs_lab_find(const char *name);

/* `simfs lab ...` (the front end calls this). */
int sfs_cmd_lab(int argc, char **argv);

#endif
