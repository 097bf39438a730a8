/*
 * plot.c - I/O-log pictures and block-layout maps through gnuplot (plot.h).
 *
 * Both verbs have three steps: compute the series, write them as gnuplot
 * data files plus a script (plot_out_*: where the files go and how the
 * script names them), and run gnuplot on the script (plot_run).
 *
 * I/O log: two passes over the log.  The first finds the time span and
 * the request count, which fix the bucket width and the sampling stride of
 * the offset scatter; the second writes the scatter and fills per-bucket
 * byte and seek counts.  A seek is a read or write whose offset differs from
 * the end of the read or write before it in the log (flushes have no
 * position and are skipped; the first request is not a seek).
 *
 * Layout: one byte per block holds its kind (low bits) and a highlight bit.
 * Filled in this order, later steps winning: the block bitmap (used or
 * free), each group's fixed metadata (superblock/GDT copies, bitmaps, inode
 * table), then every in-use inode's map walk (data, directory, indirect,
 * xattr, journal), then the highlighted file.  A cell of the map covers K
 * blocks and shows, in this order of precedence: the highlight colour if
 * any block in it is the file's; superblock/GDT, block bitmap or inode
 * bitmap if it holds one (they are one block each and would vanish under
 * any majority); else the kind most of its blocks have (ties go to
 * metadata: see kind_rank).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "cli.h"
#include "config.h"
#include "fs_priv.h"
#include "iolog.h"
#include "plot.h"

#define PLOT_DEF_POINTS 200000
#define PLOT_DEF_CELLS 1024
#define PLOT_MAX_VEC_CELLS 65536 /* layout cells drawn one by one */
#define PLOT_MAX_BUCKETS 10000000
#define PLOT_TARGET_BUCKETS 100
#define PLOT_HL_BIT 0x80
#define PLOT_KIND_MASK 0x7f

#define COL_READ "#1f77b4"
#define COL_WRITE "#d62728"
#define COL_SEEK "#2ca02c"

/* Colour of each cell value (kinds, then highlight and outside). */
static const char *const layout_colour[SFS_LAYOUT_OUTSIDE + 1] = {
    [SFS_LAYOUT_FREE] = "#e8e8e8",     [SFS_LAYOUT_SUPER] = "#000000",
    [SFS_LAYOUT_BBITMAP] = "#ff7f0e",  [SFS_LAYOUT_IBITMAP] = "#bcbd22",
    [SFS_LAYOUT_ITABLE] = "#8c564b",   [SFS_LAYOUT_DATA] = "#1f77b4",
    [SFS_LAYOUT_INDIRECT] = "#17becf", [SFS_LAYOUT_DIR] = "#2ca02c",
    [SFS_LAYOUT_XATTR] = "#9467bd",    [SFS_LAYOUT_JOURNAL] = "#7f7f7f",
    [SFS_LAYOUT_UNOWNED] = "#d62728",  [SFS_LAYOUT_HIGHLIGHT] = "#ff00ff",
    [SFS_LAYOUT_OUTSIDE] = "#ffffff",
};

static const char *const layout_names[SFS_LAYOUT_OUTSIDE + 1] = {
    [SFS_LAYOUT_FREE] = "free",
    [SFS_LAYOUT_SUPER] = "super",
    [SFS_LAYOUT_BBITMAP] = "block_bitmap",
    [SFS_LAYOUT_IBITMAP] = "inode_bitmap",
    [SFS_LAYOUT_ITABLE] = "inode_table",
    [SFS_LAYOUT_DATA] = "data",
    [SFS_LAYOUT_INDIRECT] = "indirect",
    [SFS_LAYOUT_DIR] = "dir",
    [SFS_LAYOUT_XATTR] = "xattr",
    [SFS_LAYOUT_JOURNAL] = "journal",
    [SFS_LAYOUT_UNOWNED] = "unowned",
    [SFS_LAYOUT_HIGHLIGHT] = "highlight",
    [SFS_LAYOUT_OUTSIDE] = "outside",
};

/* Tie-break for a cell's majority: earlier in this list wins a tie. */
static const uint8_t kind_rank[SFS_LAYOUT_NKINDS] = {
    SFS_LAYOUT_SUPER,	SFS_LAYOUT_BBITMAP,  SFS_LAYOUT_IBITMAP,
    SFS_LAYOUT_ITABLE,	SFS_LAYOUT_INDIRECT, SFS_LAYOUT_DIR,
    SFS_LAYOUT_XATTR,	SFS_LAYOUT_JOURNAL,  SFS_LAYOUT_DATA,
    SFS_LAYOUT_UNOWNED, SFS_LAYOUT_FREE,
};

void sfs_plot_opts_defaults(struct sfs_plot_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->kinds = SFS_PLOT_ALL;
	o->max_points = PLOT_DEF_POINTS;
	o->width_cells = PLOT_DEF_CELLS;
}

int sfs_plot_parse_kinds(const char *text, unsigned *out, char **err)
{
	char **parts;
	unsigned bits = 0;
	int rc = 0;

	if (!text || !out)
		return -EINVAL;
	parts = g_strsplit(text, ",", -1);
	for (char **p = parts; *p && !rc; p++) {
		if (strcmp(*p, "offset") == 0) {
			bits |= SFS_PLOT_OFFSET;
		} else if (strcmp(*p, "throughput") == 0) {
			bits |= SFS_PLOT_THROUGHPUT;
		} else if (strcmp(*p, "seeks") == 0) {
			bits |= SFS_PLOT_SEEKS;
		} else if (strcmp(*p, "all") == 0) {
			bits |= SFS_PLOT_ALL;
		} else {
			if (err)
				*err = g_strdup_printf(
				    "unknown plot kind '%s' (valid: "
				    "offset, throughput, seeks, all)",
				    *p);
			rc = -EINVAL;
		}
	}
	g_strfreev(parts);
	if (!rc && !bits) {
		if (err)
			*err = g_strdup("no plot kind given (valid: offset, "
					"throughput, seeks, all)");
		rc = -EINVAL;
	}
	if (!rc)
		*out = bits;
	return rc;
}

/* ------------------------------------------------------------------ */
/* output files and running gnuplot                                    */
/* ------------------------------------------------------------------ */

/*
 * Numbers in data files and scripts are for gnuplot, whatever the
 * program's locale: switch this thread to the C locale meanwhile.
 */
static void plot_c_locale(locale_t *c_loc, locale_t *old)
{
	*c_loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	*old = *c_loc ? uselocale(*c_loc) : (locale_t)0;
}

static void plot_restore_locale(locale_t c_loc, locale_t old)
{
	if (c_loc) {
		uselocale(old);
		freelocale(c_loc);
	}
}

enum plot_fmt { FMT_SVG, FMT_PNG, FMT_PDF };

/* Where the data files, the script and the picture go. */
struct plot_out {
	char *dir;     /* data files and script live here */
	char *stem;    /* their common name prefix */
	char *out_ref; /* the picture as the script names it */
	char *out_abs; /* the picture, absolute */
	enum plot_fmt fmt;
	bool tmp;	  /* dir is a private temporary directory */
	bool render;	  /* run gnuplot */
	GPtrArray *files; /* full paths of files written, for cleanup */
};

static int plot_out_setup(const char *out_path, const struct sfs_plot_opts *o,
			  struct plot_out *po, char **err)
{
	char *base, *dot;
	GError *gerr = NULL;

	memset(po, 0, sizeof(*po));
	if (!out_path || !*out_path) {
		*err = g_strdup("no output file given");
		return -EINVAL;
	}
	base = g_path_get_basename(out_path);
	dot = strrchr(base, '.');
	if (dot && g_ascii_strcasecmp(dot, ".svg") == 0) {
		po->fmt = FMT_SVG;
	} else if (dot && g_ascii_strcasecmp(dot, ".png") == 0) {
		po->fmt = FMT_PNG;
	} else if (dot && g_ascii_strcasecmp(dot, ".pdf") == 0) {
		po->fmt = FMT_PDF;
	} else {
		*err = g_strdup_printf("%s: unknown picture format '%s' (use "
				       ".svg, .png or .pdf)",
				       out_path, dot ? dot : "");
		g_free(base);
		return -EINVAL;
	}
	po->stem = g_strndup(base, (gsize)(dot - base));
	if (!*po->stem) {
		g_free(po->stem);
		po->stem = g_strdup("plot");
	}
	po->out_abs = g_canonicalize_filename(out_path, NULL);
	po->dir = g_path_get_dirname(po->out_abs);
	if (!g_file_test(po->dir, G_FILE_TEST_IS_DIR)) {
		*err = g_strdup_printf("%s: directory %s does not exist",
				       out_path, po->dir);
		g_free(base);
		return -ENOENT;
	}
	po->render = !o->no_render;
	po->files = g_ptr_array_new_with_free_func(g_free);
	if (o->keep || o->no_render) {
		po->out_ref = base; /* the script runs in dir */
		return 0;
	}
	g_free(base);
	g_free(po->dir);
	po->dir = g_dir_make_tmp("simfs-plot-XXXXXX", &gerr);
	if (!po->dir) {
		*err = g_strdup_printf("cannot make a temporary directory: %s",
				       gerr->message);
		g_error_free(gerr);
		return -EIO;
	}
	po->tmp = true;
	po->out_ref = g_strdup(po->out_abs);
	return 0;
}

static void plot_out_free(struct plot_out *po)
{
	if (po->tmp && po->files) {
		for (guint i = 0; i < po->files->len; i++)
			g_unlink(po->files->pdata[i]);
	}
	if (po->tmp && po->dir)
		g_rmdir(po->dir);
	if (po->files)
		g_ptr_array_free(po->files, TRUE);
	g_free(po->dir);
	g_free(po->stem);
	g_free(po->out_ref);
	g_free(po->out_abs);
}

/* The name of data file STEM.suffix (as the script says it). */
static char *plot_name(const struct plot_out *po, const char *suffix)
{
	return g_strdup_printf("%s.%s", po->stem, suffix);
}

/* Open STEM.suffix for writing; remembered for cleanup. */
static FILE *plot_fopen(struct plot_out *po, const char *suffix, char **err)
{
	char *name = plot_name(po, suffix);
	char *path = g_build_filename(po->dir, name, NULL);
	FILE *f = fopen(path, "we");

	if (!f)
		*err = g_strdup_printf("cannot write %s: %s", path,
				       g_strerror(errno));
	else
		g_ptr_array_add(po->files, g_strdup(path));
	g_free(name);
	g_free(path);
	return f;
}

/* Close a data file; -EIO with a message if anything failed writing it. */
static int plot_fclose(FILE *f, const char *what, char **err)
{
	bool bad = ferror(f) != 0;

	if (fclose(f) == EOF)
		bad = true;
	if (bad && err && !*err)
		*err = g_strdup_printf("cannot write the %s data file", what);
	return bad ? -EIO : 0;
}

/* text as a gnuplot single-quoted string (quotes doubled, controls gone). */
static void gp_str(GString *s, const char *text)
{
	g_string_append_c(s, '\'');
	for (const char *p = text; *p; p++) {
		if (*p == '\'')
			g_string_append(s, "''");
		else if ((unsigned char)*p < 0x20)
			g_string_append_c(s, ' ');
		else
			g_string_append_c(s, *p);
	}
	g_string_append_c(s, '\'');
}

/* Terminal and output lines for a picture of w x h pixels. */
static void gp_terminal(GString *s, const struct plot_out *po, unsigned w,
			unsigned h)
{
	switch (po->fmt) {
	case FMT_SVG:
		g_string_append_printf(
		    s,
		    "set terminal svg size %u,%u noenhanced "
		    "font 'sans,10' background rgb 'white'\n",
		    w, h);
		break;
	case FMT_PNG:
		g_string_append_printf(
		    s,
		    "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
		    "\tset terminal pngcairo size %u,%u noenhanced "
		    "font 'sans,10' background rgb 'white'\n"
		    "} else {\n"
		    "\tset terminal png size %u,%u noenhanced\n"
		    "}\n",
		    w, h, w, h);
		break;
	case FMT_PDF:
		g_string_append_printf(
		    s,
		    "set terminal pdfcairo size %.2fin,%.2fin "
		    "noenhanced font 'sans,9'\n",
		    w / 100.0, h / 100.0);
		break;
	}
	g_string_append(s, "set output ");
	gp_str(s, po->out_ref);
	g_string_append_c(s, '\n');
}

/* Write the script STEM.gp. */
static int plot_write_script(struct plot_out *po, const GString *script,
			     char **err)
{
	FILE *f = plot_fopen(po, "gp", err);

	if (!f)
		return -EIO;
	fputs(script->str, f);
	return plot_fclose(f, "script", err);
}

/* First lines of gnuplot's complaint, for a one-line message. */
static char *gp_complaint(const char *text)
{
	GString *s = g_string_new(NULL);
	char **lines = g_strsplit(text ? text : "", "\n", -1);

	for (char **l = lines; *l && s->len < 300; l++) {
		char *t = g_strstrip(*l);
		if (!*t)
			continue;
		if (s->len)
			g_string_append(s, " / ");
		g_string_append(s, t);
	}
	g_strfreev(lines);
	if (!s->len)
		g_string_append(s, "no message");
	return g_string_free(s, FALSE);
}

/* Run gnuplot on STEM.gp in po->dir and check the picture appeared. */
static int plot_run(struct plot_out *po, const struct sfs_plot_opts *o,
		    char **err)
{
	const char *prog = o->gnuplot ? o->gnuplot : "gnuplot";
	char *exe, *script, *serr = NULL, *why;
	char *argv[3];
	GError *gerr = NULL;
	GStatBuf stb;
	int status = 0, rc = 0;

	if (!po->render)
		return 0;
	if (strchr(prog, '/'))
		exe = g_file_test(prog, G_FILE_TEST_IS_EXECUTABLE)
			  ? g_strdup(prog)
			  : NULL;
	else
		exe = g_find_program_in_path(prog);
	if (!exe) {
		*err = g_strdup_printf(
		    "%s not found%s (Debian: apt install gnuplot-nox)%s%s",
		    prog, strchr(prog, '/') ? "" : " in PATH",
		    po->tmp ? "" : "; the data files and script are in ",
		    po->tmp ? "" : po->dir);
		return -ENOENT;
	}
	script = plot_name(po, "gp");
	argv[0] = exe;
	argv[1] = script;
	argv[2] = NULL;
	g_unlink(po->out_abs);
	if (!g_spawn_sync(po->dir, argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
			  NULL, NULL, &serr, &status, &gerr)) {
		*err = g_strdup_printf("cannot run %s: %s", exe, gerr->message);
		g_error_free(gerr);
		rc = -EIO;
		goto out_free;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		why = gp_complaint(serr);
		*err = g_strdup_printf("gnuplot failed on %s/%s: %s", po->dir,
				       script, why);
		g_free(why);
		rc = -EIO;
		goto out_free;
	}
	if (g_stat(po->out_abs, &stb) || stb.st_size == 0) {
		why = gp_complaint(serr);
		*err = g_strdup_printf("gnuplot wrote no picture to %s: %s",
				       po->out_abs, why);
		g_free(why);
		rc = -EIO;
	}
out_free:
	g_free(serr);
	g_free(script);
	g_free(exe);
	return rc;
}

/* ------------------------------------------------------------------ */
/* I/O log pictures                                                    */
/* ------------------------------------------------------------------ */

/* Pass 1: span and counts. */
/*
 * The time axis.  Issue time is the record's own time_ns, on the clock the
 * log names in its "# clock=" note.  Busy time is the modelled disk's
 * working time: each record starts where the one before it (in the log's
 * service order) ended, so idle gaps vanish.  On clock=account the gaps
 * are the host's own time between requests, which a modelled timeline
 * should not show.
 */
struct timeaxis {
	sfs_iolog_rec_fn fn;
	void *ctx;
	bool busy;
	sfs_ns_t acc; /* busy: service time of the records so far */
};

static int timeaxis_rec(void *ctx, const struct sfs_iolog_rec *r,
			unsigned long line)
{
	struct timeaxis *ta = ctx;
	struct sfs_iolog_rec b;

	if (!ta->busy)
		return ta->fn(ta->ctx, r, line);
	b = *r;
	b.time_ns = ta->acc;
	ta->acc += r->service_ns;
	return ta->fn(ta->ctx, &b, line);
}

static int read_timed(const char *path, bool busy, sfs_iolog_rec_fn fn,
		      void *ctx, char **err)
{
	struct timeaxis ta = {.fn = fn, .ctx = ctx, .busy = busy};

	return sfs_iolog_read(path, timeaxis_rec, &ta, err);
}

/* The x axis's label, naming the clock. */
static char *time_label(bool busy, const char *clock)
{
	if (busy)
		return g_strdup_printf(
		    "modelled disk busy time (s; idle gaps removed%s%s)",
		    clock ? ", clock=" : "", clock ? clock : "");
	if (clock && strcmp(clock, "account") == 0)
		return g_strdup("time (s, the host's clock: clock=account)");
	if (clock)
		return g_strdup_printf("time (s, the modelled clock: clock=%s)",
				       clock);
	return g_strdup("time (s)");
}

struct scan1 {
	uint64_t n_rw;	/* reads and writes */
	uint64_t n_all; /* every record */
	sfs_ns_t tmin, tmax;
};

static int scan1_rec(void *ctx, const struct sfs_iolog_rec *r,
		     unsigned long line)
{
	struct scan1 *s = ctx;

	if (!s->n_all || r->time_ns < s->tmin)
		s->tmin = r->time_ns;
	if (!s->n_all || r->time_ns > s->tmax)
		s->tmax = r->time_ns;
	s->n_all++;
	if (r->op != SFS_IO_FLUSH)
		s->n_rw++;
	return 0;
}

/* Pass 2: scatter points and per-bucket sums. */
struct scan2 {
	FILE *rd, *wr;	 /* offset scatter files, or NULL */
	uint64_t stride; /* keep every stride-th read/write */
	uint64_t idx;	 /* reads and writes seen */
	sfs_ns_t t0, bucket;
	uint64_t nb;
	uint64_t *rbytes, *wbytes, *seeks; /* [nb] */
	uint64_t n_r, n_w;		   /* reads, writes */
	uint64_t total_seeks, total_r, total_w, flushes;
	bool have_prev;
	uint64_t prev_end; /* end offset of the previous read/write */
};

static int scan2_rec(void *ctx, const struct sfs_iolog_rec *r,
		     unsigned long line)
{
	struct scan2 *s = ctx;
	uint64_t b = (r->time_ns - s->t0) / s->bucket;
	FILE *f;

	if (r->op == SFS_IO_FLUSH) {
		s->flushes++;
		return 0;
	}
	if (b >= s->nb)
		b = s->nb - 1;
	if (r->op == SFS_IO_READ) {
		s->n_r++;
		s->rbytes[b] += r->len_bytes;
		s->total_r += r->len_bytes;
	} else {
		s->n_w++;
		s->wbytes[b] += r->len_bytes;
		s->total_w += r->len_bytes;
	}
	if (s->have_prev && r->off_bytes != s->prev_end) {
		s->seeks[b]++;
		s->total_seeks++;
	}
	s->have_prev = true;
	s->prev_end = r->off_bytes + r->len_bytes;
	f = r->op == SFS_IO_READ ? s->rd : s->wr;
	if (f && s->idx % s->stride == 0)
		fprintf(f, "%.9f %.6f %" PRIu64 "\n",
			(double)(r->time_ns - s->t0) / 1e9,
			(double)r->off_bytes / 1048576.0, r->len_bytes);
	s->idx++;
	return 0;
}

/* Smallest 1, 2 or 5 x 10^k >= v (and >= 1). */
static uint64_t nice_ceil(uint64_t v)
{
	uint64_t p = 1;

	for (;;) {
		if (p >= v)
			return p;
		if (2 * p >= v)
			return 2 * p;
		if (5 * p >= v)
			return 5 * p;
		if (p > UINT64_MAX / 100)
			return v;
		p *= 10;
	}
}

/* Human-readable duration for captions. */
static char *fmt_ns(uint64_t ns)
{
	if (ns >= 1000000000ULL)
		return g_strdup_printf("%g s", ns / 1e9);
	if (ns >= 1000000ULL)
		return g_strdup_printf("%g ms", ns / 1e6);
	if (ns >= 1000ULL)
		return g_strdup_printf("%g us", ns / 1e3);
	return g_strdup_printf("%" PRIu64 " ns", ns);
}

static int write_buckets(struct plot_out *po, const struct scan2 *s, char **err)
{
	double bs = (double)s->bucket / 1e9;
	FILE *ft, *fs;
	int rc;

	ft = plot_fopen(po, "throughput.dat", err);
	if (!ft)
		return -EIO;
	fs = plot_fopen(po, "seeks.dat", err);
	if (!fs) {
		fclose(ft);
		return -EIO;
	}
	fprintf(ft,
		"# bucket_start_s read_MBps write_MBps read_bytes "
		"write_bytes  (bucket %.9f s, MB = 10^6 bytes)\n",
		bs);
	fprintf(fs, "# bucket_start_s seeks_per_s seeks  (bucket %.9f s)\n",
		bs);
	for (uint64_t i = 0; i < s->nb; i++) {
		double t = (double)i * bs;
		fprintf(ft, "%.9f %.6f %.6f %" PRIu64 " %" PRIu64 "\n", t,
			(double)s->rbytes[i] / 1e6 / bs,
			(double)s->wbytes[i] / 1e6 / bs, s->rbytes[i],
			s->wbytes[i]);
		fprintf(fs, "%.9f %.3f %" PRIu64 "\n", t,
			(double)s->seeks[i] / bs, s->seeks[i]);
	}
	rc = plot_fclose(ft, "throughput", err);
	if (plot_fclose(fs, "seeks", err))
		rc = -EIO;
	return rc;
}

/* The gnuplot script for the chosen panels. */
static GString *iolog_script(const struct plot_out *po,
			     const struct sfs_plot_opts *o, const char *title,
			     const char *xlabel, const struct scan1 *s1,
			     const struct scan2 *s2)
{
	unsigned kinds = o->kinds ? o->kinds : SFS_PLOT_ALL;
	unsigned panels = !!(kinds & SFS_PLOT_OFFSET) +
			  !!(kinds & SFS_PLOT_THROUGHPUT) +
			  !!(kinds & SFS_PLOT_SEEKS);
	double half = (double)s2->bucket / 2e9;
	double xmax = (double)s2->nb * (double)s2->bucket / 1e9;
	char *bucket = fmt_ns(s2->bucket);
	char *rd = plot_name(po, "offset-read.dat");
	char *wr = plot_name(po, "offset-write.dat");
	char *tp = plot_name(po, "throughput.dat");
	char *sk = plot_name(po, "seeks.dat");
	GString *s = g_string_new(NULL);
	GString *cap = g_string_new(NULL);

	g_string_append_printf(s,
			       "# simfs plot: I/O log pictures.  Generated; "
			       "adapt freely.\n# Run from this directory: "
			       "gnuplot %s.gp\n",
			       po->stem);
	gp_terminal(s, po, 1000, 300 * panels + 60);
	g_string_append_printf(cap,
			       "%s: %" PRIu64 " requests, %.1f MB read, "
			       "%.1f MB written, %" PRIu64 " seeks, %" PRIu64
			       " flushes; bucket %s",
			       title, s1->n_all, s2->total_r / 1e6,
			       s2->total_w / 1e6, s2->total_seeks, s2->flushes,
			       bucket);
	if (s2->stride > 1)
		g_string_append_printf(cap, "; offsets: 1 in %" PRIu64 " shown",
				       s2->stride);
	g_string_append(s, "set grid\nset key top right\n"
			   "set multiplot layout ");
	g_string_append_printf(s, "%u,1 title ", panels);
	gp_str(s, cap->str);
	g_string_append_printf(s,
			       "\nset xrange [0:%.9f]\n"
			       "set xlabel ",
			       xmax);
	gp_str(s, xlabel);
	g_string_append_c(s, '\n');
	if (kinds & SFS_PLOT_OFFSET) {
		g_string_append(s, "\n# disk offset of each request\n"
				   "set title 'Disk offset'\n"
				   "set ylabel 'offset (MiB)'\n"
				   "set yrange [0:*]\nplot ");
		bool any = false;
		/* a series with no points would make gnuplot complain */
		if (s2->n_r) {
			gp_str(s, rd);
			g_string_append(s,
					" using 1:2 with points pt 7 ps 0.3 "
					"lc rgb '" COL_READ "' title 'read'");
			any = true;
		}
		if (s2->n_w) {
			if (any)
				g_string_append(s, ", \\\n\t");
			gp_str(s, wr);
			g_string_append(s,
					" using 1:2 with points pt 7 ps 0.3 "
					"lc rgb '" COL_WRITE "' title 'write'");
		}
		g_string_append_c(s, '\n');
	}
	if (kinds & SFS_PLOT_THROUGHPUT) {
		g_string_append(s,
				"\n# MB/s per bucket (column 1 = bucket "
				"start; drawn at its centre)\n"
				"set title 'Throughput (MB/s)'\n"
				"set ylabel 'MB/s'\nset yrange [0:*]\nplot ");
		gp_str(s, tp);
		g_string_append_printf(
		    s,
		    " using ($1+%.9f):2 with histeps lw 2 "
		    "lc rgb '" COL_READ "' title 'read', \\\n"
		    "\t'' using ($1+%.9f):3 with histeps lw 2 "
		    "lc rgb '" COL_WRITE "' title 'write'\n",
		    half, half);
	}
	if (kinds & SFS_PLOT_SEEKS) {
		g_string_append(
		    s, "\n# seeks per second per bucket\n"
		       "set title 'Seeks per second'\n"
		       "set ylabel 'seeks/s'\nset yrange [0:*]\nplot ");
		gp_str(s, sk);
		g_string_append_printf(s,
				       " using ($1+%.9f):2 with histeps lw 2 "
				       "lc rgb '" COL_SEEK "' title 'seeks'\n",
				       half);
	}
	g_string_append(s, "\nunset multiplot\n");
	g_string_free(cap, TRUE);
	g_free(bucket);
	g_free(rd);
	g_free(wr);
	g_free(tp);
	g_free(sk);
	return s;
}

static int plot_iolog(const char *log_path, const char *out_path,
		      const struct sfs_plot_opts *o, char **err)
{
	struct plot_out po;
	struct scan1 s1 = {0};
	struct scan2 s2 = {0};
	unsigned kinds;
	char *title = NULL, *clock, *xlabel = NULL;
	GString *script = NULL;
	bool busy;
	int rc;

	kinds = o->kinds ? o->kinds : SFS_PLOT_ALL;
	if (!log_path || (kinds & ~(unsigned)SFS_PLOT_ALL)) {
		*err = g_strdup("bad arguments to plot an I/O log");
		return -EINVAL;
	}
	if (strcmp(log_path, "-") == 0) {
		/* two passes over the log: it must be a file */
		*err = g_strdup("the I/O log must be a file, not standard "
				"input");
		return -EINVAL;
	}
	clock = sfs_iolog_read_note(log_path, "clock");
	busy = o->time == SFS_PLOT_TIME_BUSY ||
	       (o->time == SFS_PLOT_TIME_AUTO && clock &&
		strcmp(clock, "account") == 0);
	xlabel = time_label(busy, clock);
	g_free(clock);
	rc = read_timed(log_path, busy, scan1_rec, &s1, err);
	if (rc)
		goto out_label;
	if (!s1.n_rw) {
		*err = g_strdup_printf("%s: no read or write requests to plot",
				       log_path);
		rc = -EINVAL;
		goto out_label;
	}
	s2.t0 = s1.tmin;
	s2.bucket = o->bucket_ns;
	if (!s2.bucket)
		s2.bucket = s1.tmax > s1.tmin
				? nice_ceil((s1.tmax - s1.tmin +
					     PLOT_TARGET_BUCKETS - 1) /
					    PLOT_TARGET_BUCKETS)
				: 1000000;
	s2.nb = (s1.tmax - s1.tmin) / s2.bucket + 1;
	if (s2.nb > PLOT_MAX_BUCKETS) {
		*err = g_strdup_printf(
		    "a bucket of %" PRIu64 " ns makes %" PRIu64
		    " buckets over the log's span (at most "
		    "%u)",
		    (uint64_t)s2.bucket, s2.nb, PLOT_MAX_BUCKETS);
		rc = -EINVAL;
		goto out_label;
	}
	s2.stride = 1;
	if (o->max_points && s1.n_rw > o->max_points)
		s2.stride = (s1.n_rw + o->max_points - 1) / o->max_points;

	rc = plot_out_setup(out_path, o, &po, err);
	if (rc)
		goto out_close;
	if (kinds & SFS_PLOT_OFFSET) {
		s2.rd = plot_fopen(&po, "offset-read.dat", err);
		s2.wr = s2.rd ? plot_fopen(&po, "offset-write.dat", err) : NULL;
		if (!s2.wr) {
			rc = -EIO;
			goto out_close;
		}
		fputs("# time_s offset_MiB length_bytes\n", s2.rd);
		fputs("# time_s offset_MiB length_bytes\n", s2.wr);
	}
	s2.rbytes = g_new0(uint64_t, s2.nb);
	s2.wbytes = g_new0(uint64_t, s2.nb);
	s2.seeks = g_new0(uint64_t, s2.nb);
	rc = read_timed(log_path, busy, scan2_rec, &s2, err);
	if (rc)
		goto out_close;
	if (s2.rd) {
		rc = plot_fclose(s2.rd, "offset", err);
		s2.rd = NULL;
		if (plot_fclose(s2.wr, "offset", err))
			rc = -EIO;
		s2.wr = NULL;
		if (rc)
			goto out_close;
	}
	rc = write_buckets(&po, &s2, err);
	if (rc)
		goto out_close;
	if (o->title) {
		title = g_strdup(o->title);
	} else {
		title = g_path_get_basename(log_path);
	}
	script = iolog_script(&po, o, title, xlabel, &s1, &s2);
	rc = plot_write_script(&po, script, err);
	if (!rc)
		rc = plot_run(&po, o, err);
out_close:
	if (s2.rd)
		fclose(s2.rd);
	if (s2.wr)
		fclose(s2.wr);
	plot_out_free(&po);
	if (script)
		g_string_free(script, TRUE);
	g_free(title);
	g_free(s2.rbytes);
	g_free(s2.wbytes);
	g_free(s2.seeks);
out_label:
	g_free(xlabel);
	return rc;
}

int sfs_plot_iolog(const char *log_path, const char *out_path,
		   const struct sfs_plot_opts *o, char **err)
{
	struct sfs_plot_opts defaults;
	locale_t c_loc, old;
	char *msg = NULL;
	int rc;

	if (!err)
		err = &msg;
	*err = NULL;
	if (!o) {
		sfs_plot_opts_defaults(&defaults);
		o = &defaults;
	}
	plot_c_locale(&c_loc, &old);
	rc = plot_iolog(log_path, out_path, o, err);
	plot_restore_locale(c_loc, old);
	g_free(msg);
	return rc;
}

/* ------------------------------------------------------------------ */
/* layout maps                                                         */
/* ------------------------------------------------------------------ */

struct layout {
	struct sfs_fs *fs;
	uint8_t *kind;	  /* per block from first_data_block */
	uint64_t nblocks; /* blocks_count - first_data_block */
	uint64_t blocks[SFS_LAYOUT_NKINDS];
	uint64_t hl_blocks; /* blocks of the highlighted file */
	uint32_t bad_maps;  /* inodes whose map could not be walked */
	uint32_t files;	    /* inodes walked */
};

struct walk_ctx {
	struct layout *l;
	uint8_t data_kind; /* what the file's data blocks are */
	bool highlight;	   /* mark, don't classify */
};

static void layout_mark(struct layout *l, sfs_blk_t b, uint8_t kind,
			bool highlight)
{
	uint64_t i;

	if (b < l->fs->first_data_block)
		return;
	i = b - l->fs->first_data_block;
	if (i >= l->nblocks)
		return;
	if (highlight)
		l->kind[i] |= PLOT_HL_BIT;
	else
		l->kind[i] = (l->kind[i] & PLOT_HL_BIT) | kind;
}

static int walk_cb(void *ctx, uint32_t lblk, sfs_blk_t pblk, uint32_t len,
		   bool meta)
{
	struct walk_ctx *w = ctx;
	uint8_t kind = meta && w->data_kind != SFS_LAYOUT_JOURNAL
			   ? SFS_LAYOUT_INDIRECT
			   : w->data_kind;

	for (uint32_t i = 0; i < len; i++)
		layout_mark(w->l, pblk + i, kind, w->highlight);
	return 0;
}

/* Load inode ino straight from the inode table into *tmp (reserved
 * inodes, which sfs_iget refuses).  0, -ESTALE if unused, -EIO. */
static int raw_inode(struct sfs_fs *fs, sfs_ino_t ino, struct sfs_inode *tmp)
{
	uint32_t g = (ino - 1) / fs->ipg, idx = (ino - 1) % fs->ipg;
	uint64_t byte = (uint64_t)idx * fs->inode_size;
	struct sfs_buf *b;
	int rc;

	if (sfs_inode_slot_unzeroed(fs, ino))
		return -ESTALE; /* never used: lazy_itable_init's garbage */
	rc = sfs_cache_get(fs->cache,
			   sfs_le32(fs->gd[g].bg_inode_table) +
			       (sfs_blk_t)(byte / fs->bs),
			   SFS_IO_INODE, &b);
	if (rc)
		return rc;
	memset(tmp, 0, sizeof(*tmp));
	tmp->ino = ino;
	memcpy(&tmp->d, b->data + byte % fs->bs,
	       MIN(fs->inode_size, sizeof(tmp->d)));
	sfs_cache_put(fs->cache, b);
	return tmp->d.i_mode ? 0 : -ESTALE;
}

/* What an inode's data blocks are, or -1 if it has none to walk. */
static int inode_data_kind(const struct sfs_inode *ip)
{
	switch (sfs_i_mode(ip) & SFS_S_IFMT) {
	case SFS_S_IFDIR:
		return SFS_LAYOUT_DIR;
	case SFS_S_IFREG:
	case SFS_S_IFLNK:
		return SFS_LAYOUT_DATA;
	default:
		return -1; /* devices, FIFOs, sockets: i_block is not a map */
	}
}

/* Classify (or highlight) the blocks of one inode. */
static void layout_inode(struct layout *l, struct sfs_inode *ip, int data_kind,
			 bool highlight)
{
	struct sfs_fs *fs = l->fs;
	struct walk_ctx w = {
	    .l = l,
	    .data_kind = (uint8_t)data_kind,
	    .highlight = highlight,
	};
	sfs_blk_t acl = sfs_le32(ip->d.i_file_acl);

	if (data_kind >= 0) {
		if (sfs_map_walk(fs, ip, walk_cb, &w))
			l->bad_maps++;
		l->files++;
	}
	if (acl)
		layout_mark(l, acl, SFS_LAYOUT_XATTR, highlight);
}

/* Block bitmaps and each group's fixed metadata. */
static int layout_groups(struct layout *l, char **err)
{
	struct sfs_fs *fs = l->fs;
	int sparse = !!(sfs_le32(fs->sb.s_feature_ro_compat) &
			SFS_FEATURE_RO_COMPAT_SPARSE_SUPER);
	struct sfs_buf *b;
	int rc;

	for (uint32_t g = 0; g < fs->groups; g++) {
		sfs_blk_t first = sfs_group_first(fs, g);
		uint32_t n = sfs_group_nblocks(fs, g);

		rc = sfs_block_bitmap(fs, g, &b);
		if (rc) {
			*err = g_strdup_printf("group %u: cannot read the "
					       "block bitmap: %s",
					       g, g_strerror(-rc));
			return rc;
		}
		for (uint32_t i = 0; i < n; i++)
			layout_mark(l, first + i,
				    (b->data[i / 8] >> (i % 8)) & 1
					? SFS_LAYOUT_UNOWNED
					: SFS_LAYOUT_FREE,
				    false);
		sfs_cache_put(fs->cache, b);
		if (sfs_group_has_super(g, sparse)) {
			uint32_t m = 1 + fs->desc_blocks + fs->reserved_gdt;
			for (uint32_t i = 0; i < m && i < n; i++)
				layout_mark(l, first + i, SFS_LAYOUT_SUPER,
					    false);
		}
		layout_mark(l, sfs_le32(fs->gd[g].bg_block_bitmap),
			    SFS_LAYOUT_BBITMAP, false);
		layout_mark(l, sfs_le32(fs->gd[g].bg_inode_bitmap),
			    SFS_LAYOUT_IBITMAP, false);
		for (uint32_t i = 0; i < fs->itb; i++)
			layout_mark(l, sfs_le32(fs->gd[g].bg_inode_table) + i,
				    SFS_LAYOUT_ITABLE, false);
	}
	return 0;
}

/* A reserved inode (below s_first_ino, not the root) in use. */
/* A reserved inode (below s_first_ino, not the root): the journal and
 * the resize inode own blocks.  -ESTALE for the others or if unused. */
static int layout_reserved(struct layout *l, sfs_ino_t ino, bool highlight)
{
	struct sfs_inode tmp;
	sfs_blk_t dind;

	if (ino != SFS_RESIZE_INO && ino != SFS_JOURNAL_INO)
		return -ESTALE;
	if (raw_inode(l->fs, ino, &tmp))
		return -ESTALE;
	if (ino == SFS_JOURNAL_INO) {
		layout_inode(l, &tmp, SFS_LAYOUT_JOURNAL, highlight);
		return 0;
	}
	/* resize inode: its map points at reserved GDT blocks (already
	 * marked); only its double-indirect block is left to name.  It is
	 * not walked: its "indirect" blocks are GDT copies, not maps. */
	dind = sfs_le32(tmp.d.i_block[SFS_DIND_BLOCK]);
	if (dind)
		layout_mark(l, dind, SFS_LAYOUT_SUPER, highlight);
	return 0;
}

/* Every in-use inode, from the inode bitmaps. */
static int layout_inodes(struct layout *l, char **err)
{
	struct sfs_fs *fs = l->fs;
	sfs_ino_t first_ino = sfs_le32(fs->sb.s_first_ino);
	uint8_t *map = g_malloc(fs->bs);
	struct sfs_inode *ip;
	struct sfs_buf *b;
	int rc = 0;

	if (first_ino < SFS_FIRST_INO)
		first_ino = SFS_FIRST_INO;
	for (uint32_t g = 0; g < fs->groups && !rc; g++) {
		rc = sfs_cache_get(fs->cache,
				   sfs_le32(fs->gd[g].bg_inode_bitmap),
				   SFS_IO_BITMAP, &b);
		if (rc) {
			*err = g_strdup_printf("group %u: cannot read the "
					       "inode bitmap: %s",
					       g, g_strerror(-rc));
			break;
		}
		memcpy(map, b->data, fs->bs);
		sfs_cache_put(fs->cache, b);
		for (uint32_t i = 0; i < fs->ipg; i++) {
			sfs_ino_t ino = g * fs->ipg + i + 1;
			if (!((map[i / 8] >> (i % 8)) & 1))
				continue;
			if (ino < first_ino && ino != SFS_ROOT_INO) {
				layout_reserved(l, ino, false);
				continue;
			}
			if (sfs_iget(fs, ino, &ip)) {
				l->bad_maps++; /* marked in use, unreadable */
				continue;
			}
			layout_inode(l, ip, inode_data_kind(ip), false);
			sfs_iput(fs, ip);
		}
	}
	g_free(map);
	return rc;
}

/* Highlight inode ino's blocks.  -ESTALE if it is not in use. */
static int layout_highlight(struct layout *l, sfs_ino_t ino, char **err)
{
	struct sfs_fs *fs = l->fs;
	struct sfs_inode *ip = NULL;
	uint64_t n = 0;
	int rc;

	if (ino == 0 || ino > sfs_le32(fs->sb.s_inodes_count)) {
		rc = -ESTALE;
	} else if (ino < SFS_FIRST_INO && ino != SFS_ROOT_INO) {
		rc = layout_reserved(l, ino, true);
	} else {
		rc = sfs_iget(fs, ino, &ip);
		if (!rc) {
			layout_inode(l, ip, inode_data_kind(ip), true);
			sfs_iput(fs, ip);
		}
	}
	if (rc) {
		*err = g_strdup_printf("inode %u is not in use", ino);
		return -ESTALE;
	}
	for (uint64_t i = 0; i < l->nblocks; i++)
		n += (l->kind[i] & PLOT_HL_BIT) != 0;
	l->hl_blocks = n;
	return 0;
}

/* The kind a cell of blocks [lo, hi) shows. */
static unsigned cell_value(const struct layout *l, uint64_t lo, uint64_t hi)
{
	uint64_t cnt[SFS_LAYOUT_NKINDS] = {0};
	unsigned best = SFS_LAYOUT_FREE;
	uint64_t best_n = 0;

	for (uint64_t i = lo; i < hi; i++) {
		if (l->kind[i] & PLOT_HL_BIT)
			return SFS_LAYOUT_HIGHLIGHT;
		cnt[l->kind[i] & PLOT_KIND_MASK]++;
	}
	/* one-block structures would vanish in any wide cell: they win */
	for (unsigned k = SFS_LAYOUT_SUPER; k <= SFS_LAYOUT_IBITMAP; k++)
		if (cnt[k])
			return k;
	for (unsigned r = 0; r < SFS_LAYOUT_NKINDS; r++) {
		unsigned k = kind_rank[r];
		if (cnt[k] > best_n) {
			best = k;
			best_n = cnt[k];
		}
	}
	return best;
}

/* STEM.layout.dat (matrix: one row per group) and STEM.kinds.dat. */
static int layout_write(struct plot_out *po, const struct layout *l, uint32_t k,
			uint32_t ncols, char **err)
{
	struct sfs_fs *fs = l->fs;
	uint64_t cells[SFS_LAYOUT_OUTSIDE + 1] = {0};
	FILE *fm, *fk;
	int rc;

	fm = plot_fopen(po, "layout.dat", err);
	if (!fm)
		return -EIO;
	fprintf(fm,
		"# simfs layout map: %u groups (rows) x %u cells; "
		"1 cell = %u blocks; values: see the .kinds.dat file\n",
		fs->groups, ncols, k);
	for (uint32_t g = 0; g < fs->groups; g++) {
		uint64_t base = (uint64_t)g * fs->bpg;
		uint32_t n = sfs_group_nblocks(fs, g);
		for (uint32_t c = 0; c < ncols; c++) {
			uint64_t lo = (uint64_t)c * k;
			uint64_t hi = MIN(lo + k, (uint64_t)n);
			unsigned v = lo < n
					 ? cell_value(l, base + lo, base + hi)
					 : SFS_LAYOUT_OUTSIDE;
			cells[v]++;
			fprintf(fm, c ? " %u" : "%u", v);
		}
		fputc('\n', fm);
	}
	rc = plot_fclose(fm, "layout", err);
	if (rc)
		return rc;
	fk = plot_fopen(po, "kinds.dat", err);
	if (!fk)
		return -EIO;
	fprintf(fk, "# value kind colour blocks cells\n");
	for (unsigned v = 0; v <= SFS_LAYOUT_OUTSIDE; v++) {
		uint64_t blocks = v < SFS_LAYOUT_NKINDS	      ? l->blocks[v]
				  : v == SFS_LAYOUT_HIGHLIGHT ? l->hl_blocks
							      : 0;
		fprintf(fk, "%u %s %s %" PRIu64 " %" PRIu64 "\n", v,
			layout_names[v], layout_colour[v], blocks, cells[v]);
	}
	return plot_fclose(fk, "kinds", err);
}

static GString *layout_script(const struct plot_out *po, const struct layout *l,
			      const char *title, sfs_ino_t hl, uint32_t k,
			      uint32_t ncols)
{
	struct sfs_fs *fs = l->fs;
	unsigned rowpx = CLAMP(600 / MAX(fs->groups, 1u), 3u, 60u);
	unsigned h = MIN(160 + fs->groups * rowpx, 6000u);
	char *mat = plot_name(po, "layout.dat");
	GString *s = g_string_new(NULL);
	GString *cap = g_string_new(NULL);

	g_string_append_printf(s,
			       "# simfs plot: block layout map.  Generated; "
			       "adapt freely.\n# Run from this directory: "
			       "gnuplot %s.gp\n# %s.layout.dat: one row per "
			       "group, one value per cell (kinds: "
			       "%s.kinds.dat)\n",
			       po->stem, po->stem, po->stem);
	gp_terminal(s, po, 1200, h);
	g_string_append_printf(cap,
			       "%s: %u groups x %u blocks of %u bytes; "
			       "1 cell = %u block%s",
			       title, fs->groups, fs->bpg, fs->bs, k,
			       k == 1 ? "" : "s");
	if (hl)
		g_string_append_printf(
		    cap, "; inode %u highlighted (%" PRIu64 " blocks)", hl,
		    l->hl_blocks);
	if (l->bad_maps)
		g_string_append_printf(cap, "; %u inodes unreadable",
				       l->bad_maps);
	g_string_append(s, "set title ");
	gp_str(s, cap->str);
	g_string_append_printf(s,
			       "\nset xlabel 'block within group'\n"
			       "set ylabel 'group'\n"
			       "set xrange [%.1f:%.1f]\n"
			       "set yrange [%.1f:-0.5]\n"
			       "set cbrange [-0.5:%.1f]\n"
			       "unset colorbox\n"
			       "set style fill solid 1.0 noborder\n"
			       "set key outside right top\n",
			       -0.5 * k, (ncols - 0.5) * k, fs->groups - 0.5,
			       SFS_LAYOUT_OUTSIDE + 0.5);
	if (fs->groups <= 32)
		g_string_append(s, "set ytics 1\n");
	/* a step palette: value v gets exactly colour v */
	g_string_append(s, "set palette defined (");
	for (unsigned v = 0; v <= SFS_LAYOUT_OUTSIDE; v++)
		g_string_append_printf(s, "%s%u '%s', %u '%s'", v ? ", " : "",
				       v, layout_colour[v], v + 1,
				       layout_colour[v]);
	g_string_append(s, ")\nplot ");
	gp_str(s, mat);
	/* "pixels": each cell its own filled rectangle, so a vector format
	 * (SVG, PDF) stays sharp at any zoom and a one-block bitmap cell is
	 * never resampled away; past PLOT_MAX_VEC_CELLS the file would grow
	 * too large, and the map is drawn as a raster image */
	g_string_append_printf(
	    s,
	    " matrix using ($1*%u):2:3 with image%s "
	    "notitle",
	    k,
	    (uint64_t)ncols * fs->groups <= PLOT_MAX_VEC_CELLS ? " pixels"
							       : "");
	for (unsigned v = 0; v < SFS_LAYOUT_NKINDS; v++) {
		if (!l->blocks[v])
			continue;
		g_string_append_printf(s,
				       ", \\\n\tkeyentry with boxes fc rgb "
				       "'%s' title '%s (%" PRIu64 ")'",
				       layout_colour[v], layout_names[v],
				       l->blocks[v]);
	}
	if (hl)
		g_string_append_printf(s,
				       ", \\\n\tkeyentry with boxes fc rgb "
				       "'%s' title 'inode %u'",
				       layout_colour[SFS_LAYOUT_HIGHLIGHT], hl);
	g_string_append_c(s, '\n');
	g_string_free(cap, TRUE);
	g_free(mat);
	return s;
}

/* Scan fs (fs->lock held) and fill l. */
static int layout_scan(struct layout *l, sfs_ino_t hl, char **err)
{
	struct sfs_fs *fs = l->fs;
	int rc;

	l->nblocks = fs->blocks_count - fs->first_data_block;
	l->kind = g_try_malloc0(l->nblocks);
	if (!l->kind) {
		*err = g_strdup_printf("out of memory for a map of %" PRIu64
				       " blocks",
				       l->nblocks);
		return -ENOMEM;
	}
	rc = layout_groups(l, err);
	if (!rc)
		rc = layout_inodes(l, err);
	if (!rc && hl)
		rc = layout_highlight(l, hl, err);
	if (rc)
		return rc;
	for (uint64_t i = 0; i < l->nblocks; i++)
		l->blocks[l->kind[i] & PLOT_KIND_MASK]++;
	return 0;
}

static int plot_layout_titled(struct sfs_fs *fs, const char *out_path,
			      const struct sfs_plot_opts *o, const char *title,
			      char **err)
{
	struct layout l = {.fs = fs};
	struct plot_out po;
	uint32_t width, k, ncols;
	GString *script = NULL;
	locale_t c_loc, old;
	int rc;

	plot_c_locale(&c_loc, &old);
	rc = plot_out_setup(out_path, o, &po, err);
	if (rc)
		goto out_free;
	sfs_lock(fs);
	rc = layout_scan(&l, o->inode, err);
	sfs_unlock(fs);
	if (rc)
		goto out_free;
	width = o->width_cells ? o->width_cells : PLOT_DEF_CELLS;
	k = (fs->bpg + width - 1) / width;
	ncols = (fs->bpg + k - 1) / k;
	rc = layout_write(&po, &l, k, ncols, err);
	if (rc)
		goto out_free;
	script = layout_script(&po, &l, title, o->inode, k, ncols);
	rc = plot_write_script(&po, script, err);
	if (!rc)
		rc = plot_run(&po, o, err);
out_free:
	if (script)
		g_string_free(script, TRUE);
	plot_out_free(&po);
	g_free(l.kind);
	plot_restore_locale(c_loc, old);
	return rc;
}

static int plot_layout_image(const char *image_path, const char *out_path,
			     const struct sfs_plot_opts *o, char **err)
{
	struct sfs_config cfg;
	struct sfs_bdev *bd;
	struct sfs_fs *fs;
	char *why = NULL, *title;
	int rc;

	if (!image_path) {
		*err = g_strdup("no image given");
		return -EINVAL;
	}
	rc = sfs_bdev_open_file(image_path, SFS_BDEV_RDONLY, 0, &bd);
	if (rc) {
		*err = g_strdup_printf("%s: %s", image_path, g_strerror(-rc));
		return rc;
	}
	sfs_config_defaults(&cfg);
	cfg.ro = true;
	rc = sfs_fs_open(bd, &cfg, &fs, &why);
	if (rc) {
		*err = g_strdup_printf("%s: %s", image_path,
				       why ? why : g_strerror(-rc));
		g_free(why);
		return rc == -EIO ? -EIO : -EINVAL;
	}
	title = o->title ? g_strdup(o->title) : g_path_get_basename(image_path);
	rc = plot_layout_titled(fs, out_path, o, title, err);
	g_free(title);
	sfs_fs_close(fs);
	return rc;
}

int sfs_plot_layout(const char *image_path, const char *out_path,
		    const struct sfs_plot_opts *o, char **err)
{
	struct sfs_plot_opts defaults;
	char *msg = NULL;
	int rc;

	if (!err)
		err = &msg;
	*err = NULL;
	if (!o) {
		sfs_plot_opts_defaults(&defaults);
		o = &defaults;
	}
	rc = plot_layout_image(image_path, out_path, o, err);
	g_free(msg);
	return rc;
}

/* ------------------------------------------------------------------ */
/* `simfs plot`                                                        */
/* ------------------------------------------------------------------ */

#define PLOT_EXIT_FAIL 1
#define PLOT_EXIT_USAGE 2

static void plot_usage(FILE *out)
{
	fputs("usage: simfs plot iolog LOG -o OUT [options]\n"
	      "       simfs plot layout IMAGE -o OUT [options]\n"
	      "\n"
	      "Draw pictures with gnuplot; OUT's extension picks the format "
	      "(.svg, .png, .pdf).\n"
	      "\n"
	      "  iolog LOG     seekwatcher-style panels from a device request "
	      "log:\n"
	      "                disk offset, throughput and seeks over time\n"
	      "  layout IMAGE  block-layout map: one row per block group, "
	      "cells coloured\n"
	      "                by block kind (the image is opened "
	      "read-only)\n"
	      "\n"
	      "options:\n"
	      "  -o, --output OUT      the picture to write (required)\n"
	      "  -k, --kind KINDS      iolog: offset, throughput, seeks or "
	      "all (default),\n"
	      "                        or a comma list\n"
	      "  -b, --bucket TIME     iolog: time bucket, e.g. 10ms, 1s, "
	      "250us, 100ns\n"
	      "                        (default: about 100 buckets)\n"
	      "      --max-points N    iolog: offset points drawn at most "
	      "(default 200000)\n"
	      "      --time AXIS       iolog: issue (the log's clock), busy "
	      "(the modelled\n"
	      "                        disk's working time, idle gaps "
	      "removed) or auto\n"
	      "                        (default: busy for a clock=account "
	      "log, else issue)\n"
	      "  -i, --inode INO       layout: highlight this inode's "
	      "blocks\n"
	      "  -f, --file PATH       layout: highlight the file at PATH "
	      "(from the root)\n"
	      "  -w, --width CELLS     layout: cells per group row (default "
	      "1024)\n"
	      "  -t, --title TEXT      title (default: the input's file "
	      "name)\n"
	      "      --keep            keep the data files and gnuplot script "
	      "next to OUT\n"
	      "                        (OUT-stem.*.dat, OUT-stem.gp)\n"
	      "      --no-render       write them only, do not run gnuplot\n"
	      "      --gnuplot PROG    gnuplot program (default: gnuplot from "
	      "PATH)\n"
	      "  -h, --help            this help\n"
	      "\n"
	      "How to read the pictures: doc/measurement.md.\n",
	      out);
}

/* "10ms", "1.5s", "250us", "100ns" or a bare number of ns. */
static int parse_duration(const char *text, sfs_ns_t *out)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {
	    {"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"", 1.0},
	};
	char *end;
	double v;

	if (!g_ascii_isdigit(text[0]) && text[0] != '.')
		return -EINVAL;
	v = g_ascii_strtod(text, &end);
	for (size_t i = 0; i < G_N_ELEMENTS(units); i++) {
		if (strcmp(end, units[i].unit) == 0) {
			v *= units[i].ns;
			if (!(v >= 1.0) || v > 1.8e19)
				return -EINVAL;
			*out = (sfs_ns_t)v;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_u64_arg(const char *text, uint64_t min, uint64_t max,
			 uint64_t *out)
{
	guint64 v;

	if (!g_ascii_isdigit(text[0]) ||
	    !g_ascii_string_to_unsigned(text, 10, min, max, &v, NULL))
		return -EINVAL;
	*out = v;
	return 0;
}

/* Inode of PATH from the root (public verbs: no lock held). */
static int plot_resolve(struct sfs_fs *fs, const char *path, sfs_ino_t *out)
{
	char **parts = g_strsplit(path, "/", -1);
	struct sfs_attr attr;
	sfs_ino_t ino = SFS_ROOT_INO;
	int rc = 0;

	for (char **p = parts; *p && !rc; p++) {
		if (!**p)
			continue;
		rc = sfs_lookup(fs, ino, *p, &attr);
		if (!rc)
			ino = attr.ino;
	}
	g_strfreev(parts);
	if (!rc)
		*out = ino;
	return rc;
}

/* layout with --file: open the image here to resolve the path first. */
static int plot_layout_path(const char *image, const char *out,
			    struct sfs_plot_opts *o, const char *path,
			    char **err)
{
	struct sfs_config cfg;
	struct sfs_bdev *bd;
	struct sfs_fs *fs;
	char *why = NULL, *title;
	sfs_ino_t ino;
	int rc;

	rc = sfs_bdev_open_file(image, SFS_BDEV_RDONLY, 0, &bd);
	if (rc) {
		*err = g_strdup_printf("%s: %s", image, g_strerror(-rc));
		return rc;
	}
	sfs_config_defaults(&cfg);
	cfg.ro = true;
	rc = sfs_fs_open(bd, &cfg, &fs, &why);
	if (rc) {
		*err = g_strdup_printf("%s: %s", image,
				       why ? why : g_strerror(-rc));
		g_free(why);
		return rc;
	}
	rc = plot_resolve(fs, path, &ino);
	if (rc) {
		*err =
		    g_strdup_printf("%s: %s: %s", image, path, g_strerror(-rc));
	} else {
		o->inode = ino;
		title =
		    o->title ? g_strdup(o->title) : g_path_get_basename(image);
		rc = plot_layout_titled(fs, out, o, title, err);
		g_free(title);
	}
	sfs_fs_close(fs);
	return rc;
}

int sfs_plot_main(int argc, char **argv)
{
	enum {
		OPT_KEEP = 256,
		OPT_NO_RENDER,
		OPT_GNUPLOT,
		OPT_MAX_POINTS,
		OPT_TIME
	};
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"kind", required_argument, NULL, 'k'},
	    {"bucket", required_argument, NULL, 'b'},
	    {"inode", required_argument, NULL, 'i'},
	    {"file", required_argument, NULL, 'f'},
	    {"width", required_argument, NULL, 'w'},
	    {"title", required_argument, NULL, 't'},
	    {"keep", no_argument, NULL, OPT_KEEP},
	    {"no-render", no_argument, NULL, OPT_NO_RENDER},
	    {"gnuplot", required_argument, NULL, OPT_GNUPLOT},
	    {"max-points", required_argument, NULL, OPT_MAX_POINTS},
	    {"time", required_argument, NULL, OPT_TIME},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct sfs_plot_opts o;
	const char *out = NULL, *path = NULL, *what, *input;
	char *err = NULL;
	uint64_t v;
	int c, rc;
	bool is_iolog;

	sfs_plot_opts_defaults(&o);
	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":o:k:b:i:f:w:t:h", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'k':
			if (sfs_plot_parse_kinds(optarg, &o.kinds, &err)) {
				sfs_err("plot", "%s", err);
				g_free(err);
				return PLOT_EXIT_USAGE;
			}
			break;
		case 'b':
			if (parse_duration(optarg, &o.bucket_ns)) {
				sfs_err("plot",
					"bad bucket '%s' (e.g. 10ms, 1s, "
					"250us, 100ns)",
					optarg);
				return PLOT_EXIT_USAGE;
			}
			break;
		case 'i':
			if (parse_u64_arg(optarg, 1, UINT32_MAX, &v)) {
				sfs_err("plot", "bad inode number '%s'",
					optarg);
				return PLOT_EXIT_USAGE;
			}
			o.inode = (sfs_ino_t)v;
			break;
		case 'f':
			path = optarg;
			break;
		case 'w':
			if (parse_u64_arg(optarg, 1, 1 << 20, &v)) {
				sfs_err("plot",
					"bad width '%s' (1 to 1048576 cells)",
					optarg);
				return PLOT_EXIT_USAGE;
			}
			o.width_cells = (uint32_t)v;
			break;
		case 't':
			o.title = optarg;
			break;
		case OPT_KEEP:
			o.keep = true;
			break;
		case OPT_TIME:
			if (strcmp(optarg, "issue") == 0)
				o.time = SFS_PLOT_TIME_ISSUE;
			else if (strcmp(optarg, "busy") == 0)
				o.time = SFS_PLOT_TIME_BUSY;
			else if (strcmp(optarg, "auto") == 0)
				o.time = SFS_PLOT_TIME_AUTO;
			else {
				sfs_err("plot",
					"bad time axis '%s' (issue, busy or "
					"auto)",
					optarg);
				return PLOT_EXIT_USAGE;
			}
			break;
		case OPT_NO_RENDER:
			o.no_render = true;
			break;
		case OPT_GNUPLOT:
			o.gnuplot = optarg;
			break;
		case OPT_MAX_POINTS:
			if (parse_u64_arg(optarg, 1, UINT64_MAX,
					  &o.max_points)) {
				sfs_err("plot", "bad --max-points '%s'",
					optarg);
				return PLOT_EXIT_USAGE;
			}
			break;
		case 'h':
			plot_usage(stdout);
			return 0;
		case ':':
			sfs_err("plot",
				"option '%s' needs a value (see simfs plot "
				"--help)",
				argv[optind - 1]);
			return PLOT_EXIT_USAGE;
		default:
			if (optopt)
				sfs_err("plot",
					"unknown option '-%c' (see simfs plot "
					"--help)",
					optopt);
			else
				sfs_err("plot",
					"unknown option '%s' (see simfs plot "
					"--help)",
					argv[optind - 1]);
			return PLOT_EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		sfs_err("plot",
			"usage: simfs plot iolog LOG -o OUT | simfs plot "
			"layout IMAGE -o OUT (see --help)");
		return PLOT_EXIT_USAGE;
	}
	what = argv[optind];
	input = argv[optind + 1];
	if (strcmp(what, "iolog") == 0) {
		is_iolog = true;
	} else if (strcmp(what, "layout") == 0) {
		is_iolog = false;
	} else {
		sfs_err("plot", "unknown picture '%s' (iolog or layout)", what);
		return PLOT_EXIT_USAGE;
	}
	if (!out) {
		sfs_err("plot", "no output: give -o OUT.svg (or .png, .pdf)");
		return PLOT_EXIT_USAGE;
	}
	if (is_iolog && (o.inode || path || o.width_cells != PLOT_DEF_CELLS)) {
		sfs_err("plot",
			"--inode, --file and --width are for layout maps");
		return PLOT_EXIT_USAGE;
	}
	if (!is_iolog && (o.kinds != SFS_PLOT_ALL || o.bucket_ns || o.time)) {
		sfs_err("plot", "--kind, --bucket and --time are for I/O logs");
		return PLOT_EXIT_USAGE;
	}
	if (path && o.inode) {
		sfs_err("plot", "give --inode or --file, not both");
		return PLOT_EXIT_USAGE;
	}
	if (sfs_parse_only())
		return 0;
	if (is_iolog)
		rc = sfs_plot_iolog(input, out, &o, &err);
	else if (path)
		rc = plot_layout_path(input, out, &o, path, &err);
	else
		rc = sfs_plot_layout(input, out, &o, &err);
	if (rc) {
		sfs_err("plot", "%s", err ? err : g_strerror(-rc));
		g_free(err);
		return PLOT_EXIT_FAIL;
	}
	if (o.no_render)
		printf("wrote the data files and script for %s (run gnuplot "
		       "on the .gp file in its directory)\n",
		       out);
	return 0;
}
