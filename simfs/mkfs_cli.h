/*
 * mkfs_cli.h - simfs mkfs's options (mke2fs's spellings: -t, -O, -b, -I,
 * -i, -G, -j, -J, ...) as one table and one parser, shared by
 * `simfs mkfs`, `simfs run --mkfs` and the mkfs key of `simfs bench`
 * experiment files, so the three read the same words the same way.
 *
 * The options are applied in two steps, as mke2fs does: parsing records
 * what each option asked for (struct sfs_mkfs_cli), and
 * sfs_mkfs_cli_resolve turns that into sfs_mkfs_params for a filesystem
 * of a given size, in mke2fs's order whatever the command line's: -t
 * TYPE's defaults for that size, then -b, -i, -I, then the -O lists, then
 * the journal.
 */
#ifndef SFS_MKFS_CLI_H
#define SFS_MKFS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mkfs.h"

struct sfs_mkfs_cli {
	struct sfs_mkfs_params p; /* label, seed, reserved blocks */
	const char *type;	  /* -t; NULL: simfs's own defaults */
	uint32_t block_size;	  /* -b, -i, -I; 0: the type's default */
	uint32_t inode_ratio;
	uint32_t inode_size;
	int log_flex;		/* -G as log2; -1: not given */
	char *features;		/* every -O list, in order; NULL: none */
	bool journal;		/* -j, -J, a journaled --preset */
	uint64_t journal_bytes; /* -J size=: 0 = mke2fs's default size */
	char *journal_path;	/* -J device=: an external journal */
	bool journal_mid;	/* -j, -J, --preset: the contiguous journal
				   in the middle groups */
	bool force;		/* -F */
	bool help;		/* -h */
	char **words;		/* sfs_mkfs_cli_parse_words' argv (type
				   points into it), or NULL */
};

/* No option given yet: sfs_mkfs_defaults, no -t, no -G. */
void sfs_mkfs_cli_init(struct sfs_mkfs_cli *c);

/* Free what parsing allocated (features, journal_path, words). */
void sfs_mkfs_cli_clear(struct sfs_mkfs_cli *c);

/*
 * Parse argv[1..] as simfs mkfs's options with getopt_long, stopping at
 * -h.  Leaves optind at the first operand.  0, or -EINVAL with a message
 * in *err (g_free it) naming the option or value refused.
 */
int sfs_mkfs_cli_parse(struct sfs_mkfs_cli *c, int argc, char **argv,
		       char **err);

/*
 * Parse one string of simfs mkfs option words, split as the shell would
 * ("-O dir_index,^resize_inode -I 128 -G 16"), for an image another
 * command formats: operands (IMAGE, SIZE) and the options that only
 * make sense on simfs mkfs's own command line (-F, -h, -J device=) are
 * refused.  0, or -EINVAL with a message in *err naming the word.
 */
int sfs_mkfs_cli_parse_words(struct sfs_mkfs_cli *c, const char *words,
			     char **err);

/*
 * sfs_mkfs_cli_parse_words for an image that will be mounted with preset
 * (a preset's name, or ""): the word "preset" alone stands for the on-disk
 * features of that preset's era (struct sfs_config_preset.mkfs).  The
 * result is checked with sfs_mkfs_cli_resolve for a filesystem of
 * size_bytes, so every mistake shows before anything is made.  0, or
 * -EINVAL with a message in *err.
 */
int sfs_mkfs_cli_parse_for(struct sfs_mkfs_cli *c, const char *words,
			   const char *preset, uint64_t size_bytes, char **err);

/*
 * The parameters the options ask for on a filesystem of size_bytes (0:
 * not known yet), in mke2fs's order (above).  0, or -EINVAL with a
 * message in *err.
 */
int sfs_mkfs_cli_resolve(const struct sfs_mkfs_cli *c, uint64_t size_bytes,
			 struct sfs_mkfs_params *p, char **err);

/* The options' help entries, one per table row (simfs mkfs --help). */
void sfs_mkfs_cli_usage(FILE *out);

#endif /* SFS_MKFS_CLI_H */
