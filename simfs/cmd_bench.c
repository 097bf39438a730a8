/*
 * cmd_bench.c - `simfs bench`: run an experiment file (experiment.h) and
 * gather what its cells report (doc/experiments.md).
 *
 *   simfs bench FILE [-j N] [-o OUTDIR] [--report] [--keep-images]
 *   simfs bench FILE --list-cells        one shell command per cell
 *   simfs bench FILE --merge [DIR...]    gather cells run elsewhere
 *   simfs bench --diff DIR1 DIR2         what changed (statsdiff.h)
 *
 * A cell is `simfs run` (this same binary, /proc/self/exe) with the
 * cell's arguments, in a worker process of its own (fork + execv), its
 * output in OUTDIR/cells/<id>/stdout.txt.  Up to N run at once; a failed
 * cell is reported with its last lines of output and the others go on.
 * Then OUTDIR/results.csv is put together from the cells' own results.csv
 * files in cell order, whatever order they finished in, so the same file
 * gives the same bytes with any -j and with --merge; the tables, plots
 * and report are the renderer's (bench_render.h).
 *
 * The runner stays in its layer: it builds command lines, starts them and
 * reads what they wrote; it never opens an image.  Wall-clock time (the
 * progress bar's ETA) comes from a real struct sfs_clock.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "bench_render.h"
#include "cli.h"
#include "clock.h"
#include "config.h"
#include "experiment.h"
#include "kernelref.h"
#include "statsdiff.h"

#define BENCH_EXIT_FAIL 1
#define BENCH_EXIT_USAGE 2
#define BENCH_MAX_JOBS 256
#define BENCH_TAIL_LINES 8
#define BENCH_BAR_WIDTH 30
#define BENCH_CSV_HEADER                                                       \
	"experiment,table,workload,phase,system,variant,metric,value,unit\n"

/* One cell being run. */
struct bench_slot {
	const struct sfs_xp_cell *cell;
	char *dir;	/* OUTDIR/cells/<id> */
	pid_t pid;	/* 0: free */
	sfs_ns_t start; /* of the progress clock */
};

/* The progress line (stderr). */
struct bench_progress {
	bool tty;
	unsigned done, failed, total;
	struct sfs_clock *clk; /* real: the ETA */
};

static void bench_usage(FILE *out)
{
	fputs(
	    "usage: simfs bench FILE [-j N] [-o OUTDIR] [--report] "
	    "[--keep-images]\n"
	    "                        [--reference kernel]\n"
	    "       simfs bench FILE --list-cells [-o OUTDIR]\n"
	    "       simfs bench FILE --merge [-o OUTDIR] [DIR...]\n"
	    "       simfs bench --diff DIR1 DIR2\n"
	    "\n"
	    "Runs an experiment file: every system x workload x sweep point x\n"
	    "repetition is a cell, `simfs run` on a fresh image in virtual "
	    "time.\n"
	    "Writes OUTDIR/results.csv (experiment,table,workload,phase,"
	    "system,\n"
	    "variant,metric,value,unit), OUTDIR/experiment.ini, each cell's "
	    "folder\n"
	    "OUTDIR/cells/ID/ (results.csv, stats.json, stdout.txt), the "
	    "tables "
	    "and\n"
	    "plots.  The same file gives the same results.csv, byte for byte.\n"
	    "\n"
	    "  -j, --jobs N        cells run at once (default 1)\n"
	    "  -o, --output DIR    output folder (default "
	    "bench-out/<experiment name>)\n"
	    "      --report        also write OUTDIR/report.html\n"
	    "      --keep-images   keep each cell's image.img\n"
	    "      --list-cells    print one shell command per cell (GNU "
	    "parallel,\n"
	    "                      a Slurm job array) instead of running them\n"
	    "      --merge [DIR...]  gather cells/*/results.csv of those "
	    "folders\n"
	    "                      (default OUTDIR) into OUTDIR, as a local "
	    "run "
	    "would\n"
	    "      --diff DIR1 DIR2  what changed between two output folders\n"
	    "      --reference kernel  also run each cell on the host kernel "
	    "(root,\n"
	    "                      loop devices): rows of system "
	    "\"kernel:NAME\"\n"
	    "  -h, --help          this text\n"
	    "\n"
	    "Exit status: 0; 1 a cell failed or the output could not be "
	    "written;\n"
	    "2 bad usage or a bad experiment file.  The file format: "
	    "doc/experiments.md.\n",
	    out);
}

/* The absolute path of this binary (for the cells' commands). */
static char *bench_self(void)
{
	char *p = g_file_read_link("/proc/self/exe", NULL);

	return p ? p : g_strdup("/proc/self/exe");
}

/* "1m20s", "45s", "2h05m". */
static void bench_fmt_dur(char *buf, size_t n, double s)
{
	unsigned long t = (unsigned long)(s + 0.5);

	if (t >= 3600)
		snprintf(buf, n, "%luh%02lum", t / 3600, t / 60 % 60);
	else if (t >= 60)
		snprintf(buf, n, "%lum%02lus", t / 60, t % 60);
	else
		snprintf(buf, n, "%lus", t);
}

static void bench_bar(struct bench_progress *pg)
{
	char eta[32] = "?";
	unsigned fill;

	if (!pg->tty)
		return;
	fill = pg->total ? pg->done * BENCH_BAR_WIDTH / pg->total : 0;
	if (pg->done) {
		double el = (double)sfs_clock_now_ns(pg->clk) / 1e9;
		bench_fmt_dur(eta, sizeof(eta),
			      el / pg->done * (pg->total - pg->done));
	}
	fputc('\r', stderr);
	fputc('[', stderr);
	for (unsigned i = 0; i < BENCH_BAR_WIDTH; i++)
		fputc(i < fill ? '=' : i == fill ? '>' : ' ', stderr);
	fprintf(stderr, "] %u/%u cells", pg->done, pg->total);
	if (pg->failed)
		fprintf(stderr, " (%u failed)", pg->failed);
	fprintf(stderr, ", ETA %s\033[K", eta);
	fflush(stderr);
}

/* The last n lines of a file, each indented, to stderr. */
static void bench_tail(const char *path, unsigned n)
{
	char *text = NULL;
	gsize len;

	if (!g_file_get_contents(path, &text, &len, NULL)) {
		fprintf(stderr, "    (no output: %s)\n", path);
		return;
	}
	char **lines = g_strsplit(g_strchomp(text), "\n", -1);
	unsigned k = g_strv_length(lines), from = k > n ? k - n : 0;
	/* simfs run's own error lines come first when its stdout was
	 * buffered: show them even outside the tail */
	for (unsigned i = 0; i < from; i++)
		if (g_str_has_prefix(lines[i], "simfs "))
			fprintf(stderr, "    %s\n", lines[i]);
	for (unsigned i = from; i < k; i++)
		fprintf(stderr, "    %s\n", lines[i]);
	g_strfreev(lines);
	g_free(text);
}

/* Remove what an earlier run left in a cell's folder. */
static void bench_clean_cell(const char *dir)
{
	static const char *const files[] = {"image.img", "results.csv",
					    "stats.json", "stdout.txt", NULL};

	for (unsigned i = 0; files[i]; i++) {
		char *p = g_build_filename(dir, files[i], NULL);
		unlink(p);
		g_free(p);
	}
}

/* Start a cell's `simfs run`.  0, or -errno after a message. */
static int bench_start(struct bench_slot *sl, const struct sfs_experiment *x,
		       const char *exe, struct bench_progress *pg)
{
	char *out = g_build_filename(sl->dir, "stdout.txt", NULL);
	char **argv = sfs_xp_cell_argv(x, sl->cell, sl->dir);
	unsigned n = g_strv_length(argv);
	char **full = g_new0(char *, n + 2);
	int fd, rc = 0;
	pid_t pid;

	full[0] = (char *)"simfs";
	memcpy(full + 1, argv, n * sizeof(char *));
	if (g_mkdir_with_parents(sl->dir, 0777) < 0) {
		rc = -errno;
		sfs_err("bench", "cannot make %s: %s", sl->dir,
			g_strerror(errno));
		goto out;
	}
	bench_clean_cell(sl->dir);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		rc = -errno;
		sfs_err("bench", "cannot write %s: %s", out, g_strerror(errno));
		goto out;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		sfs_err("bench", "cannot start cell %s: %s", sl->cell->id,
			g_strerror(errno));
		close(fd);
		goto out;
	}
	if (pid == 0) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, STDIN_FILENO);
		execv(exe, full);
		fprintf(stderr, "simfs bench: cannot run %s: %s\n", exe,
			strerror(errno));
		_exit(127);
	}
	close(fd);
	sl->pid = pid;
	sl->start = sfs_clock_now_ns(pg->clk);
out:
	g_free(full);
	g_strfreev(argv);
	g_free(out);
	return rc;
}

/* A cell's worker ended with wait status st.  true if it succeeded. */
static bool bench_finish(struct bench_slot *sl, int st, bool keep_images,
			 struct bench_progress *pg)
{
	double secs = (double)(sfs_clock_now_ns(pg->clk) - sl->start) / 1e9;
	bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	char *p;

	if (!keep_images) {
		p = g_build_filename(sl->dir, "image.img", NULL);
		unlink(p);
		g_free(p);
	}
	pg->done++;
	if (!ok) {
		pg->failed++;
		/* a failed cell's results do not count, here or in --merge */
		p = g_build_filename(sl->dir, "results.csv", NULL);
		unlink(p);
		g_free(p);
		if (pg->tty)
			fputs("\r\033[K", stderr);
		if (WIFEXITED(st))
			sfs_err("bench",
				"cell %s failed (exit %d); the end of "
				"%s/stdout.txt:",
				sl->cell->id, WEXITSTATUS(st), sl->dir);
		else
			sfs_err("bench",
				"cell %s killed by signal %d; the end of "
				"%s/stdout.txt:",
				sl->cell->id,
				WIFSIGNALED(st) ? WTERMSIG(st) : 0, sl->dir);
		p = g_build_filename(sl->dir, "stdout.txt", NULL);
		bench_tail(p, BENCH_TAIL_LINES);
		g_free(p);
	}
	if (pg->tty)
		bench_bar(pg);
	else
		fprintf(stderr, "cell %u/%u %s: %s (%.1f s)\n", pg->done,
			pg->total, ok ? "done" : "FAILED", sl->cell->id, secs);
	sl->pid = 0;
	return ok;
}

/*
 * Run every cell, up to jobs at once.  Returns the number of cells that
 * failed (or could not be started).
 */
static unsigned bench_run_cells(const struct sfs_experiment *x,
				const char *outdir, const char *exe,
				unsigned jobs, bool keep_images)
{
	struct bench_progress pg = {.tty = isatty(STDERR_FILENO) == 1,
				    .total = x->ncells,
				    .clk = sfs_clock_new_real()};
	struct bench_slot *slots = g_new0(struct bench_slot, jobs);
	unsigned next = 0, running = 0, failed = 0;

	bench_bar(&pg);
	while (next < x->ncells || running) {
		while (running < jobs && next < x->ncells) {
			struct bench_slot *sl = NULL;
			for (unsigned i = 0; i < jobs && !sl; i++)
				if (!slots[i].pid)
					sl = &slots[i];
			g_free(sl->dir);
			sl->cell = &x->cells[next++];
			sl->dir = g_build_filename(outdir, "cells",
						   sl->cell->id, NULL);
			if (bench_start(sl, x, exe, &pg)) {
				failed++;
				pg.done++;
				pg.failed++;
				continue;
			}
			running++;
		}
		if (!running)
			break;
		int st;
		pid_t pid = waitpid(-1, &st, 0);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			sfs_err("bench", "waiting for the cells: %s",
				g_strerror(errno));
			break;
		}
		for (unsigned i = 0; i < jobs; i++)
			if (slots[i].pid == pid) {
				running--;
				if (!bench_finish(&slots[i], st, keep_images,
						  &pg))
					failed++;
				break;
			}
	}
	if (pg.tty)
		fputc('\n', stderr);
	for (unsigned i = 0; i < jobs; i++)
		g_free(slots[i].dir);
	g_free(slots);
	sfs_clock_free(pg.clk);
	return failed;
}

/* The kernel reference of every cell, one after the other (wall-clock
 * runs: never side by side).  Returns the number that failed. */
static unsigned bench_run_kernel(const struct sfs_experiment *x,
				 const char *outdir, const char *exe)
{
	unsigned failed = 0;

	for (unsigned i = 0; i < x->ncells; i++) {
		const struct sfs_xp_cell *c = &x->cells[i];
		char *dir = g_build_filename(outdir, "cells", c->id, NULL);
		char *err = NULL;
		int rc;

		g_mkdir_with_parents(dir, 0777);
		/* the model's side of the same counters, for the ratio */
		char *stats = g_build_filename(dir, "stats.json", NULL);
		char *res = g_build_filename(dir, "results.csv", NULL);
		char *wname = g_strndup(c->wl->spec, strcspn(c->wl->spec, ","));
		FILE *f = fopen(res, "a");
		if (f) {
			if (sfs_kref_simfs_rows(stats, f, wname) != 0)
				sfs_err("bench",
					"cell %s: no device counters in %s",
					c->id, stats);
			fclose(f);
		}
		g_free(wname);
		g_free(res);
		g_free(stats);
		rc = sfs_kref_cell(x, c, dir, exe, &err);
		if (rc) {
			sfs_err("bench", "kernel reference of cell %s: %s",
				c->id, err ? err : g_strerror(-rc));
			failed++;
		} else {
			fprintf(stderr, "kernel %u/%u done: %s\n", i + 1,
				x->ncells, c->id);
		}
		g_free(err);
		g_free(dir);
	}
	return failed;
}

/* One CSV field, quoted (RFC 4180) when it holds a comma, a quote or a
 * line break. */
static void bench_csv_field(GString *g, const char *s, bool last)
{
	if (strpbrk(s, ",\"\r\n")) {
		g_string_append_c(g, '"');
		for (; *s; s++) {
			if (*s == '"')
				g_string_append_c(g, '"');
			g_string_append_c(g, *s);
		}
		g_string_append_c(g, '"');
	} else {
		g_string_append(g, s);
	}
	g_string_append_c(g, last ? '\n' : ',');
}

/*
 * Append the rows of one cell's results.csv (workload,phase,metric,value,
 * unit with a header line) to csv in the long form, as system sysname.
 * 0, -ENOENT (no file) or -EINVAL after a message (a row that is not 5
 * columns).
 */
static int bench_gather_file(const struct sfs_experiment *x,
			     const struct sfs_xp_cell *c, const char *path,
			     const char *sysname, GString *csv)
{
	GHashTable *first =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	char *text = NULL, **lines = NULL;
	GPtrArray *rows =
	    g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
	gsize len;
	int rc = 0;

	if (!g_file_get_contents(path, &text, &len, NULL)) {
		rc = -ENOENT;
		goto out;
	}
	lines = g_strsplit(text, "\n", -1);
	for (unsigned i = 0; lines[i]; i++) {
		char *l = g_strchomp(lines[i]);
		if (!*l || (i == 0 && g_str_has_prefix(l, "workload,")))
			continue;
		char **f = g_strsplit(l, ",", -1);
		if (g_strv_length(f) != 5) {
			sfs_err("bench",
				"%s:%u: not a row workload,phase,metric,"
				"value,unit",
				path, i + 1);
			g_strfreev(f);
			rc = -EINVAL;
			goto out;
		}
		if (!g_hash_table_contains(first, f[2]))
			g_hash_table_insert(first, g_strdup(f[2]),
					    g_strdup(f[1]));
		g_ptr_array_add(rows, f);
	}
	for (unsigned i = 0; i < rows->len; i++) {
		char **f = rows->pdata[i];
		const struct sfs_xp_table *t = sfs_xp_row_table(
		    x, c, f[1], f[2], g_hash_table_lookup(first, f[2]));
		bench_csv_field(csv, x->name, false);
		bench_csv_field(csv, t ? t->name : "", false);
		bench_csv_field(csv, c->wl->name, false);
		bench_csv_field(csv, f[1], false);
		bench_csv_field(csv, sysname, false);
		bench_csv_field(csv, c->variant, false);
		bench_csv_field(csv, f[2], false);
		bench_csv_field(csv, f[3], false);
		bench_csv_field(csv, f[4], true);
	}
out:
	g_ptr_array_free(rows, TRUE);
	g_hash_table_destroy(first);
	g_strfreev(lines);
	g_free(text);
	return rc;
}

/*
 * Write OUTDIR/results.csv from every cell's folder (cell order, then
 * each cell's row order; with kernel, the cell's kernel rows after its
 * own), and OUTDIR/experiment.ini.  Returns the number of cells without
 * results, or -1 when the output could not be written.
 */
static int bench_write_results(const struct sfs_experiment *x,
			       const char *outdir, bool kernel)
{
	GString *csv = g_string_new(BENCH_CSV_HEADER);
	GError *ge = NULL;
	char *path, *text = NULL;
	gsize len;
	int missing = 0;

	for (unsigned i = 0; i < x->ncells; i++) {
		const struct sfs_xp_cell *c = &x->cells[i];
		char *dir = g_build_filename(outdir, "cells", c->id, NULL);
		char *p = g_build_filename(dir, "results.csv", NULL);
		int rc = bench_gather_file(x, c, p, c->sys->name, csv);
		if (rc == -ENOENT)
			sfs_err("bench", "cell %s: no results (%s)", c->id, p);
		if (rc)
			missing++;
		g_free(p);
		if (kernel) {
			char *ks = g_strdup_printf("kernel:%s", c->sys->name);
			p = g_build_filename(dir, "kernel", "results.csv",
					     NULL);
			rc = bench_gather_file(x, c, p, ks, csv);
			if (rc == -ENOENT)
				sfs_err("bench",
					"cell %s: no kernel results (%s)",
					c->id, p);
			g_free(p);
			g_free(ks);
		}
		g_free(dir);
	}
	path = g_build_filename(outdir, "results.csv", NULL);
	if (!g_file_set_contents(path, csv->str, (gssize)csv->len, &ge)) {
		sfs_err("bench", "%s", ge->message);
		g_clear_error(&ge);
		missing = -1;
	}
	g_free(path);
	g_string_free(csv, TRUE);
	if (missing < 0)
		return missing;
	path = g_build_filename(outdir, "experiment.ini", NULL);
	if (!g_file_get_contents(x->path, &text, &len, &ge) ||
	    !g_file_set_contents(path, text, (gssize)len, &ge)) {
		sfs_err("bench", "%s", ge->message);
		g_clear_error(&ge);
		missing = -1;
	}
	g_free(text);
	g_free(path);
	return missing;
}

/* Copy a file; 0 or -1 after a message.  A missing source is not copied
 * (0) unless required. */
static int bench_copy(const char *from, const char *to, bool required)
{
	GError *ge = NULL;
	char *text = NULL;
	gsize len;
	int rc = 0;

	if (!g_file_get_contents(from, &text, &len, &ge)) {
		if (!required &&
		    g_error_matches(ge, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
			g_error_free(ge);
			return 0;
		}
		rc = -1;
	} else if (!g_file_set_contents(to, text, (gssize)len, &ge)) {
		rc = -1;
	}
	if (rc) {
		sfs_err("bench", "%s", ge->message);
		g_error_free(ge);
	}
	g_free(text);
	return rc;
}

/* Is a the same folder as b? */
static bool bench_same_dir(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * --merge: for each cell, the first of dirs that has its results.csv;
 * its folder's files are copied into OUTDIR/cells/<id> (unless it is
 * OUTDIR).  Returns the number of cells found nowhere, or -1.
 */
static int bench_merge(const struct sfs_experiment *x, const char *outdir,
		       char **dirs, unsigned ndirs)
{
	static const char *const files[] = {"results.csv", "stats.json",
					    "stdout.txt", NULL};
	int missing = 0;

	for (unsigned i = 0; i < x->ncells; i++) {
		const struct sfs_xp_cell *c = &x->cells[i];
		char *to = g_build_filename(outdir, "cells", c->id, NULL);
		bool found = false;

		for (unsigned d = 0; d < ndirs && !found; d++) {
			char *from =
			    g_build_filename(dirs[d], "cells", c->id, NULL);
			char *res = g_build_filename(from, "results.csv", NULL);
			found = g_file_test(res, G_FILE_TEST_IS_REGULAR);
			if (found && !bench_same_dir(from, to)) {
				g_mkdir_with_parents(to, 0777);
				for (unsigned k = 0; files[k]; k++) {
					char *a = g_build_filename(
					    from, files[k], NULL);
					char *b = g_build_filename(to, files[k],
								   NULL);
					if (bench_copy(a, b, k == 0))
						missing = -1;
					g_free(a);
					g_free(b);
				}
				char *ka = g_build_filename(
				    from, "kernel", "results.csv", NULL);
				if (g_file_test(ka, G_FILE_TEST_IS_REGULAR)) {
					char *kd = g_build_filename(
					    to, "kernel", NULL);
					char *kb = g_build_filename(
					    kd, "results.csv", NULL);
					g_mkdir_with_parents(kd, 0777);
					if (bench_copy(ka, kb, true))
						missing = -1;
					g_free(kd);
					g_free(kb);
				}
				g_free(ka);
			}
			g_free(res);
			g_free(from);
		}
		if (!found) {
			sfs_err("bench",
				"cell %s: no cells/%s/results.csv in any "
				"folder given (not run yet, or it failed)",
				c->id, c->id);
			if (missing >= 0)
				missing++;
		}
		g_free(to);
	}
	return missing;
}

/* --list-cells: one self-contained shell command per cell. */
static void bench_list_cells(const struct sfs_experiment *x, const char *outdir,
			     const char *exe, bool keep_images)
{
	char *qexe = g_shell_quote(exe);

	for (unsigned i = 0; i < x->ncells; i++) {
		const struct sfs_xp_cell *c = &x->cells[i];
		char *dir = g_build_filename(outdir, "cells", c->id, NULL);
		char **argv = sfs_xp_cell_argv(x, c, dir);
		char *img = g_build_filename(dir, "image.img", NULL);
		char *res = g_build_filename(dir, "results.csv", NULL);
		char *out = g_build_filename(dir, "stdout.txt", NULL);
		char *qdir = g_shell_quote(dir), *qimg = g_shell_quote(img);
		char *qres = g_shell_quote(res), *qout = g_shell_quote(out);
		char *stats = g_build_filename(dir, "stats.json", NULL);
		char *qstats = g_shell_quote(stats);
		GString *cmd = g_string_new(NULL);

		g_string_append_printf(cmd,
				       "mkdir -p %s && rm -f %s %s %s && %s",
				       qdir, qimg, qres, qstats, qexe);
		for (unsigned k = 0; argv[k]; k++) {
			char *q = g_shell_quote(argv[k]);
			g_string_append_printf(cmd, " %s", q);
			g_free(q);
		}
		g_string_append_printf(cmd, " >%s 2>&1; rc=$?; ", qout);
		if (!keep_images)
			g_string_append_printf(cmd, "rm -f %s; ", qimg);
		g_string_append_printf(cmd,
				       "[ $rc = 0 ] || { rm -f %s; echo "
				       "\"cell %s failed (exit $rc): see \"%s "
				       ">&2; }; (exit $rc)",
				       qres, c->id, qout);
		puts(cmd->str);
		g_string_free(cmd, TRUE);
		g_free(qdir);
		g_free(qimg);
		g_free(qres);
		g_free(qout);
		g_free(qstats);
		g_free(stats);
		g_free(img);
		g_free(res);
		g_free(out);
		g_strfreev(argv);
		g_free(dir);
	}
	g_free(qexe);
}

/* The tables, plots and report; -ENOSYS (not built yet) is only a note.
 * 0, or -1 after a message. */
static int bench_render(const struct sfs_experiment *x, const char *outdir,
			bool report)
{
	char *err = NULL;
	int rc = sfs_bench_render(x, outdir, report, stdout, &err);

	if (rc == -ENOSYS)
		sfs_err("bench",
			"note: no tables, plots or report: the renderer is "
			"not built yet");
	else if (rc)
		sfs_err("bench", "drawing the tables: %s",
			err ? err : g_strerror(-rc));
	g_free(err);
	return rc && rc != -ENOSYS ? -1 : 0;
}

static int bench_diff(char **dirs)
{
	char *err = NULL;
	int rc = sfs_bench_diff(dirs[0], dirs[1], stdout, &err);

	if (rc)
		sfs_err("bench", "%s", err ? err : g_strerror(-rc));
	g_free(err);
	/* folders that are missing or do not parse: the run failed (1), as
	 * simfs stats --diff says of its files */
	return rc == 0 ? 0 : BENCH_EXIT_FAIL;
}

int sfs_cmd_bench(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"jobs", required_argument, NULL, 'j'},
	    {"output", required_argument, NULL, 'o'},
	    {"report", no_argument, NULL, 'r'},
	    {"keep-images", no_argument, NULL, 'k'},
	    {"list-cells", no_argument, NULL, 'l'},
	    {"merge", no_argument, NULL, 'm'},
	    {"diff", no_argument, NULL, 'd'},
	    {"reference", required_argument, NULL, 'R'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	bool report = false, keep = false, list = false, merge = false;
	bool diff = false, kernel = false;
	char *outarg = NULL, *outdir = NULL, *exe = NULL, *err = NULL;
	struct sfs_experiment *x = NULL;
	unsigned jobs = 1;
	int c, status = BENCH_EXIT_FAIL;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":j:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': {
			char *end;
			errno = 0;
			guint64 n = g_ascii_strtoull(optarg, &end, 10);
			if (errno || *end || !g_ascii_isdigit(*optarg) ||
			    n < 1 || n > BENCH_MAX_JOBS) {
				sfs_err("bench", "bad -j '%s' (1..%d)", optarg,
					BENCH_MAX_JOBS);
				goto usage;
			}
			jobs = (unsigned)n;
			break;
		}
		case 'o':
			g_free(outarg);
			outarg = g_strdup(optarg);
			break;
		case 'r':
			report = true;
			break;
		case 'k':
			keep = true;
			break;
		case 'l':
			list = true;
			break;
		case 'm':
			merge = true;
			break;
		case 'd':
			diff = true;
			break;
		case 'R':
			if (strcmp(optarg, "kernel") != 0) {
				sfs_err("bench",
					"--reference %s: the one reference is "
					"'kernel'",
					optarg);
				goto usage;
			}
			kernel = true;
			break;
		case 'h':
			bench_usage(stdout);
			status = 0;
			goto out;
		case ':':
			sfs_err("bench",
				"option '%s' needs a value (see simfs bench "
				"--help)",
				argv[optind - 1]);
			goto usage;
		default:
			sfs_err("bench",
				"unknown option '%s' (see simfs bench --help)",
				argv[optind - 1]);
			goto usage;
		}
	}
	argc -= optind;
	argv += optind;
	if (list + merge + diff > 1) {
		sfs_err("bench", "give one of --list-cells, --merge, --diff");
		goto usage;
	}
	if (diff) {
		if (argc != 2) {
			sfs_err("bench", "--diff compares two output folders: "
					 "--diff DIR1 DIR2");
			goto usage;
		}
		status = sfs_parse_only() ? 0 : bench_diff(argv);
		goto out;
	}
	if (argc < 1) {
		sfs_err("bench",
			"no experiment file (simfs bench FILE; the format: "
			"doc/experiments.md)");
		goto usage;
	}
	if (argc > 1 && !merge) {
		sfs_err("bench",
			"one experiment file at a time (folders go after "
			"--merge)");
		goto usage;
	}
	if (sfs_experiment_load(argv[0], &x, &err)) {
		sfs_err("bench", "%s", err);
		goto usage;
	}
	if (!outarg)
		outarg = g_build_filename("bench-out", x->name, NULL);
	outdir = g_canonicalize_filename(outarg, NULL);
	if (strchr(outdir, ',')) {
		sfs_err("bench",
			"output folder %s: a comma would split the cells' "
			"mount options",
			outdir);
		goto usage;
	}
	if (sfs_parse_only()) {
		status = 0;
		goto out;
	}
	exe = bench_self();
	if (list) {
		bench_list_cells(x, outdir, exe, keep);
		status = fflush(stdout) == 0 ? 0 : BENCH_EXIT_FAIL;
		goto out;
	}
	if (g_mkdir_with_parents(outdir, 0777) < 0) {
		sfs_err("bench", "cannot make %s: %s", outdir,
			g_strerror(errno));
		goto out;
	}
	int bad;
	if (merge) {
		char *self[] = {outdir, NULL};
		bad = bench_merge(x, outdir, argc > 1 ? argv + 1 : self,
				  argc > 1 ? (unsigned)argc - 1 : 1);
	} else {
		bad = (int)bench_run_cells(x, outdir, exe, jobs, keep);
		if (kernel && bench_run_kernel(x, outdir, exe))
			bad++;
	}
	int wr = bench_write_results(x, outdir, kernel);
	status = bad || wr ? BENCH_EXIT_FAIL : 0;
	if (wr >= 0 && bench_render(x, outdir, report) < 0)
		status = BENCH_EXIT_FAIL;
	if (wr >= 0)
		fprintf(stderr,
			"simfs bench: %u cells%s; results in "
			"%s/results.csv\n",
			x->ncells, bad || wr ? " (some without results)" : "",
			outdir);
	goto out;
usage:
	status = BENCH_EXIT_USAGE;
out:
	sfs_experiment_free(x);
	g_free(outarg);
	g_free(outdir);
	g_free(exe);
	g_free(err);
	return status;
}
