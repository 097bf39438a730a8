/*
 * plot.h - pictures of what a run did, drawn by gnuplot: the verbs behind
 * `simfs plot`.
 *
 * From an I/O log (iolog.h), seekwatcher-style panels over time:
 *   offset      disk offset of each request (reads and writes in two
 *               colours): sequential streams are lines, seeks are jumps;
 *   throughput  MB/s read and written per time bucket;
 *   seeks       seeks per second per time bucket, a seek being a read or
 *               write that does not start where the previous one ended.
 * From an image, a block-layout map: one row per block group, each cell
 * coloured by the kind of block it holds (free, superblock/GDT, bitmaps,
 * inode table, data, indirect, directory, xattr, journal), with one file's
 * blocks highlighted.
 *
 * Each verb writes gnuplot data files and a script into a directory, then
 * runs gnuplot on them.  The output's extension picks the format: .svg,
 * .png (pngcairo when gnuplot has it, else png) or .pdf (pdfcairo).  With
 * `keep` the data and script go next to the output as STEM.*.dat and
 * STEM.gp (STEM = the output's name without extension), so a user can
 * adapt and rerun them (cd there; gnuplot STEM.gp); otherwise they go to a
 * private temporary directory that is removed.  What each file holds and
 * how to read each picture: doc/measurement.md.
 *
 * Errors (0 / -errno, one-line reason in *err, g_free it):
 *   -EINVAL  malformed log (the line is named), bad option, unknown format
 *   -ENOENT  input missing, or gnuplot not found
 *   -EIO     gnuplot failed (its own message quoted)
 */
#ifndef SFS_PLOT_H
#define SFS_PLOT_H

#include <stdbool.h>
#include <stdint.h>

#include "format.h"

struct sfs_fs;

/* Panels of an I/O-log picture (bits). */
enum sfs_plot_kind {
	SFS_PLOT_OFFSET = 0x1,
	SFS_PLOT_THROUGHPUT = 0x2,
	SFS_PLOT_SEEKS = 0x4,
	SFS_PLOT_ALL = 0x7,
};

/* Kinds of block in a layout map; also the values in STEM.layout.dat. */
enum sfs_layout_kind {
	SFS_LAYOUT_FREE = 0, /* free in the block bitmap */
	SFS_LAYOUT_SUPER,    /* superblock, GDT or reserved GDT copy */
	SFS_LAYOUT_BBITMAP,  /* block bitmap */
	SFS_LAYOUT_IBITMAP,  /* inode bitmap */
	SFS_LAYOUT_ITABLE,   /* inode table */
	SFS_LAYOUT_DATA,     /* regular file or symlink contents */
	SFS_LAYOUT_INDIRECT, /* indirect blocks / extent tree nodes */
	SFS_LAYOUT_DIR,	     /* directory blocks */
	SFS_LAYOUT_XATTR,    /* extended attribute blocks */
	SFS_LAYOUT_JOURNAL,  /* internal journal (inode 8) */
	SFS_LAYOUT_UNOWNED,  /* used in the bitmap, no owner found */
	SFS_LAYOUT_NKINDS,
	/* cell values only: */
	SFS_LAYOUT_HIGHLIGHT = SFS_LAYOUT_NKINDS, /* the highlighted file */
	SFS_LAYOUT_OUTSIDE, /* past the end of a short last group */
};

struct sfs_plot_opts {
	unsigned kinds;	      /* iolog: SFS_PLOT_* bits; 0 = all */
	const char *title;    /* NULL = the input's file name */
	sfs_ns_t bucket_ns;   /* iolog: time bucket; 0 = about 100 buckets */
	uint64_t max_points;  /* iolog: offset points drawn; 0 = 200000 */
	sfs_ino_t inode;      /* layout: file to highlight; 0 = none */
	uint32_t width_cells; /* layout: cells per group row; 0 = 1024 */
	bool keep;	      /* data files and script next to the output */
	bool no_render;	      /* write them only (implies keep) */
	const char *gnuplot;  /* program; NULL = "gnuplot" from PATH */
	/* iolog: the time axis.  AUTO: busy time for a log on clock=account
	 * (its gaps are the host's time), else issue time */
	enum { SFS_PLOT_TIME_AUTO, SFS_PLOT_TIME_ISSUE, SFS_PLOT_TIME_BUSY } time;
};

void sfs_plot_opts_defaults(struct sfs_plot_opts *o);

/* "offset", "throughput", "seeks", "all" or a comma list -> bits.
 * 0 or -EINVAL (message in *err). */
int sfs_plot_parse_kinds(const char *text, unsigned *out, char **err);

/* Picture of the I/O log at log_path, written to out_path. */
int sfs_plot_iolog(const char *log_path, const char *out_path,
		   const struct sfs_plot_opts *o, char **err);

/*
 * Layout map of the image at image_path, opened read-only with default
 * knobs (never written).  -EINVAL also for an image the engine refuses,
 * -ESTALE if o->inode is not in use.
 */
int sfs_plot_layout(const char *image_path, const char *out_path,
		    const struct sfs_plot_opts *o, char **err);

/*
 * `simfs plot ...`: argv[0] is "plot", then options and arguments
 * ("--help" prints the usage).  Errors as one line "simfs plot: ..." on
 * stderr.  Returns the exit status: 0, 1 (failed) or 2 (usage error).
 */
int sfs_plot_main(int argc, char **argv);

#endif /* SFS_PLOT_H */
