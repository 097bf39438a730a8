/*
 * cmd_run.c - `simfs run`: one workload against the engine in virtual time
 * (run.h), or as system calls against a directory (--path, pathrun.h).
 *
 *   simfs run -w WORKLOAD[,param=value...] [-o MOUNT-OPTIONS] [IMAGE]
 *
 * Without IMAGE (or with --fresh) a fresh image is made first: mkfs with a
 * fixed seed and time stamp, and a journal when the options ask for a
 * journaled system, so the same command gives the same image and the same
 * output on every machine.  The image has simfs mkfs's defaults (ext2,
 * 4 KiB blocks, 256-byte inodes, no optional feature) unless --mkfs gives
 * simfs mkfs's own option words (mkfs_cli.h), or "preset" for the on-disk
 * features of the preset's era (struct sfs_config_preset.mkfs).  The
 * image left behind is a real one (e2fsck clean, mountable); a temporary
 * one is removed at the end.
 *
 * Output (stdout): the benchmark's own report, the run's table per phase
 * (MB/s, ops/s, latency percentiles, modelled CPU and disk time), the
 * run's counters and, unless --quiet, the engine's statistics table.
 * Exit status: 0; 1 when the run failed (an operation failed where the
 * benchmark needs success, a workload error) or the image could not be
 * used; 2 for bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "cli.h"
#include "config.h"
#include "cpumodel.h"
#include "fs.h"
#include "mkfs.h"
#include "mkfs_cli.h"
#include "models/journal/jbd2.h"
#include "pathrun.h"
#include "run.h"
#include "workload.h"

#define RUN_EXIT_FAIL 1
#define RUN_EXIT_USAGE 2
#define RUN_DEFAULT_SIZE (1ULL << 30)
#define RUN_MKFS_TIME 1230768000u /* 2009-01-01: a fixed stamp */

static void run_usage(FILE *out)
{
	fputs(
	    "usage: simfs run -w WORKLOAD[,param=value...] [options] [IMAGE]\n"
	    "       simfs run --trace FILE [options] [IMAGE]\n"
	    "       simfs run -w WORKLOAD --path DIR\n"
	    "       simfs run --list\n"
	    "\n"
	    "Runs a workload through the engine in virtual time: no FUSE, no "
	    "kernel;\n"
	    "many clients on one clock, the modelled disk and CPU.  The same "
	    "command\n"
	    "gives the same output, byte for byte, on every machine.\n"
	    "\n"
	    "  -w, --workload SPEC   a built-in workload and its parameters "
	    "(--list)\n"
	    "      --trace FILE      replay a recorded trace "
	    "(traces/README.md)\n"
	    "      --loadfile FILE   a dbench loadfile (dbench,loadfile=FILE)\n"
	    "  -o OPTS               mount options, as simfs mount -o "
	    "(preset=ext3,\n"
	    "                        commit=15,device=scsi-2002,cpu=piii-1ghz,"
	    "cpus=2,\n"
	    "                        stats=FILE, iolog=FILE ...); device= "
	    "defaults to\n"
	    "                        hdd-2009 here, clock= must stay virtual\n"
	    "      --size SIZE       size of a fresh image (default 1G)\n"
	    "      --journal-size SIZE  its journal, when the options ask for "
	    "one\n"
	    "                        (default: mke2fs's for the size)\n"
	    "      --fresh           format IMAGE even if it holds a "
	    "filesystem\n"
	    "      --mkfs 'OPTIONS'  format a fresh image with these simfs "
	    "mkfs options\n"
	    "                        (-t, -O [^]feature,..., -b, -I, -i, "
	    "-G, -J size=...)\n"
	    "      --mkfs preset     ... with the on-disk features of the "
	    "preset's era\n"
	    "                        (simfs mount --list-presets shows "
	    "them)\n"
	    "      --seed N          seed of the bytes written (default 1)\n"
	    "      --path DIR        issue the workload as system calls in "
	    "DIR instead\n"
	    "                        (any mounted filesystem), timed on the "
	    "wall clock\n"
	    "  -q, --quiet           no engine statistics table\n"
	    "      --results FILE    every metric as CSV (workload,phase,"
	    "metric,value,unit)\n"
	    "      --list            the workloads and their parameters\n"
	    "  -h, --help            this text\n"
	    "\n"
	    "IMAGE: an existing image is used as it is; without one a "
	    "temporary\n"
	    "image is made and removed at the end.  Workloads:\n",
	    out);
	sfs_workload_list(out, false);
	fputs("Details: doc/workloads.md; how it works: doc/internals.md.\n",
	      out);
}

/* Does the configuration ask for a journal? */
static bool cfg_journaled(const struct sfs_config *cfg)
{
	return cfg->journal[0] && strcmp(cfg->journal, "none") != 0;
}

/*
 * The simfs mkfs options of a fresh image: --mkfs's words over a fixed
 * seed and time stamp.  0, or -EINVAL with *err naming the word refused.
 */
static int run_mkfs_words(struct sfs_mkfs_cli *cli, const char *words,
			  const struct sfs_config *cfg, uint64_t size,
			  char **err)
{
	char *why = NULL;

	sfs_mkfs_cli_init(cli);
	cli->p.seed = 1;
	cli->p.time = RUN_MKFS_TIME;
	if (!words ||
	    sfs_mkfs_cli_parse_for(cli, words, cfg->preset, size, &why) == 0)
		return 0;
	*err = g_strdup_printf("--mkfs: %s", why);
	g_free(why);
	return -EINVAL;
}

/* Format path (created or truncated to size) as cli asks, with a journal
 * when journaled or cli asks for one.  0, or -errno with *err. */
static int make_image(const char *path, uint64_t size, bool journaled,
		      uint64_t journal_bytes, const struct sfs_mkfs_cli *cli,
		      char **err)
{
	struct sfs_mkfs_params p;
	struct sfs_bdev *bd;
	int rc;

	if (truncate(path, 0) < 0 && errno != ENOENT) {
		*err = g_strdup_printf("cannot truncate %s: %s", path,
				       g_strerror(errno));
		return -errno;
	}
	rc = sfs_bdev_open_file(path, SFS_BDEV_CREATE, size, &bd);
	if (rc) {
		*err = g_strdup_printf("cannot create %s: %s", path,
				       g_strerror(-rc));
		return rc;
	}
	rc = sfs_mkfs_cli_resolve(cli, size, &p, err);
	if (cli->journal_bytes)
		journal_bytes = cli->journal_bytes;
	if (rc == 0 && journaled) {
		/* mount options that journal: an image with group descriptor
		 * checksums gets its journal from mkfs (sfs_mkfs_makes_journal) */
		p.has_journal = true;
		if (journal_bytes)
			p.journal_blocks = (uint32_t)MAX(
			    1, MIN(journal_bytes / p.block_size, UINT32_MAX));
	}
	if (rc == 0)
		rc = sfs_mkfs(bd, &p, err);
	if (rc == 0 && p.has_journal && !sfs_mkfs_makes_journal(&p)) {
		uint32_t blocks = (uint32_t)(journal_bytes / p.block_size);
		rc = sfs_jbd2_add_internal(bd, blocks, SFS_JBD2_PLACE_MIDDLE,
					   err);
	}
	if (rc == 0)
		rc = sfs_bdev_flush(bd);
	sfs_bdev_close(bd);
	return rc;
}

/* The result as CSV (workload.h, sfs_workload_write_metrics) plus the
 * run's counters as phase "all".  0, or -1 after a message. */
static int write_results(const char *path, struct sfs_workload *w,
			 const struct sfs_wl_result *res,
			 const struct sfs_run_counters *c)
{
	const char *wl = sfs_workload_ops_of(w)->name;
	FILE *f = fopen(path, "w");

	if (!f) {
		sfs_err("run", "cannot write %s: %s", path, g_strerror(errno));
		return -1;
	}
	sfs_workload_write_metrics(w, res, f);
	sfs_wl_metric_row(f, wl, "all", "modelled_s", (double)c->end_ns / 1e9,
			  "s");
	sfs_wl_metric_row(f, wl, "all", "cpu_s", (double)c->cpu_ns / 1e9, "s");
	sfs_wl_metric_row(f, wl, "all", "commits", (double)c->commits_seen,
			  "commits");
	sfs_wl_metric_row(f, wl, "all", "fsync_waits", (double)c->fsync_waits,
			  "fsyncs");
	sfs_wl_metric_row(f, wl, "all", "queue_max", (double)c->max_queue,
			  "requests");
	sfs_wl_metric_row(f, wl, "all", "queue_mean", c->mean_queue,
			  "requests");
	sfs_wl_metric_row(f, wl, "all", "dev_requests", (double)c->dev_requests,
			  "requests");
	sfs_wl_metric_row(f, wl, "all", "mismatches", (double)res->mismatches,
			  "ops");
	if (fclose(f) != 0) {
		sfs_err("run", "cannot write %s: %s", path, g_strerror(errno));
		return -1;
	}
	return 0;
}

static bool has_fs(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && st.st_size > 0;
}

/* Errors after which a benchmark's process stops (its run failed). */
static bool fatal_errno(int rc)
{
	return rc == -ENOSPC || rc == -EIO || rc == -EBADMSG || rc == -EROFS ||
	       rc == -EDQUOT;
}

static int run_on_path(struct sfs_workload *w, const char *dir, uint64_t seed,
		       const char *results)
{
	struct sfs_pathrun_opts po = {.seed = seed};
	struct sfs_wl_result res;
	char *err = NULL;
	int rc;

	rc = sfs_pathrun(w, dir, &po, &res, &err);
	if (rc && !res.nphases) {
		sfs_err("run", "%s", err ? err : g_strerror(-rc));
		g_free(err);
		return RUN_EXIT_FAIL;
	}
	sfs_workload_report(w, &res, stdout);
	printf("\n");
	printf("times: wall clock of this host (real system calls on %s)\n",
	       dir);
	sfs_wl_result_print(&res, stdout);
	if (rc) {
		sfs_err("run", "%s", err ? err : g_strerror(-rc));
	} else if (fatal_errno(res.first_error)) {
		/* as the benchmark would: it stopped on the error */
		sfs_err("run", "%s", res.first_error_what);
		rc = res.first_error;
	}
	if (results) {
		FILE *f = fopen(results, "w");
		bool ok = f != NULL;

		if (f) {
			sfs_workload_write_metrics(w, &res, f);
			ok = fclose(f) == 0;
		}
		if (!ok) {
			sfs_err("run", "cannot write %s: %s", results,
				g_strerror(errno));
			rc = rc ? rc : -EIO;
		}
	}
	g_free(err);
	sfs_wl_result_free(&res);
	return rc ? RUN_EXIT_FAIL : 0;
}

int sfs_cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"workload", required_argument, NULL, 'w'},
	    {"trace", required_argument, NULL, 'T'},
	    {"loadfile", required_argument, NULL, 'L'},
	    {"size", required_argument, NULL, 'S'},
	    {"journal-size", required_argument, NULL, 'J'},
	    {"fresh", no_argument, NULL, 'F'},
	    {"mkfs", required_argument, NULL, 'M'},
	    {"seed", required_argument, NULL, 's'},
	    {"path", required_argument, NULL, 'p'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"results", required_argument, NULL, 'R'},
	    {"list", no_argument, NULL, 'l'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	GString *opts = g_string_new("device=hdd-2009");
	char *spec = NULL, *path = NULL, *err = NULL, *tmpdir = NULL;
	char *results = NULL, *mkfs_words = NULL;
	struct sfs_mkfs_cli mkfs_cli = {0};
	const char *image = NULL;
	uint64_t size = RUN_DEFAULT_SIZE, jsize = 0, seed = 1;
	bool fresh = false, quiet = false;
	struct sfs_workload *w = NULL;
	struct sfs_config cfg;
	struct sfs_fs *fs = NULL;
	struct sfs_bdev *bd;
	int c, rc, status = RUN_EXIT_FAIL;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":w:o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'w':
		case 'T':
		case 'L':
			if (spec) {
				sfs_err("run",
					"give one of -w, --trace, --loadfile");
				goto usage;
			}
			spec =
			    c == 'w' ? g_strdup(optarg)
			    : c == 'T'
				? g_strdup_printf("trace,file=%s", optarg)
				: g_strdup_printf("dbench,loadfile=%s", optarg);
			break;
		case 'o':
			g_string_append_printf(opts, ",%s", optarg);
			break;
		case 'S':
		case 'J':
			if (sfs_parse_size(optarg, c == 'S' ? &size : &jsize) ||
			    (c == 'S' && size == 0)) {
				sfs_err("run", "bad size '%s' (like 512M, 2G)",
					optarg);
				goto usage;
			}
			break;
		case 'F':
			fresh = true;
			break;
		case 'M':
			g_free(mkfs_words);
			mkfs_words = g_strdup(optarg);
			break;
		case 's': {
			char *end;
			errno = 0;
			seed = g_ascii_strtoull(optarg, &end, 10);
			if (errno || *end || !g_ascii_isdigit(*optarg)) {
				sfs_err("run", "bad seed '%s'", optarg);
				goto usage;
			}
			break;
		}
		case 'p':
			g_free(path);
			path = g_strdup(optarg);
			break;
		case 'q':
			quiet = true;
			break;
		case 'R':
			g_free(results);
			results = g_strdup(optarg);
			break;
		case 'l':
			sfs_workload_list(stdout, true);
			status = 0;
			goto out;
		case 'h':
			run_usage(stdout);
			status = 0;
			goto out;
		case ':':
			sfs_err("run",
				"option '%s' needs a value (see simfs run "
				"--help)",
				argv[optind - 1]);
			goto usage;
		default:
			sfs_err("run",
				"unknown option '%s' (see simfs run --help)",
				argv[optind - 1]);
			goto usage;
		}
	}
	if (!spec) {
		sfs_err("run", "no workload: give -w WORKLOAD, --trace FILE or "
			       "--loadfile FILE (simfs run --list)");
		goto usage;
	}
	if (argc - optind > 1) {
		sfs_err("run", "too many arguments (one IMAGE at most)");
		goto usage;
	}
	image = optind < argc ? argv[optind] : NULL;
	rc = sfs_workload_new(spec, &w, &err);
	if (rc) {
		sfs_err("run", "%s", err);
		goto usage;
	}
	if (path) {
		if (image) {
			sfs_err("run",
				"--path runs against a directory: no IMAGE");
			goto usage;
		}
		status = sfs_parse_only() ? 0
					  : run_on_path(w, path, seed, results);
		goto out;
	}

	sfs_config_defaults(&cfg);
	if (sfs_config_parse(&cfg, opts->str, NULL, &err) < 0) {
		sfs_err("run", "%s", err);
		goto usage;
	}
	if (strcmp(cfg.clock, "virtual") != 0) {
		sfs_err("run",
			"clock=%s: simfs run runs in virtual time "
			"(clock=virtual); use simfs mount for the real clock",
			cfg.clock);
		goto usage;
	}
	if (cfg.trace_path[0]) {
		sfs_err("run",
			"trace= records a mount; simfs run replays traces "
			"(--trace FILE)");
		goto usage;
	}
	if (run_mkfs_words(&mkfs_cli, mkfs_words, &cfg, size, &err)) {
		sfs_err("run", "%s", err);
		goto usage;
	}
	if (sfs_parse_only()) {
		status = 0;
		goto out;
	}
	if (!image) {
		tmpdir = g_dir_make_tmp("simfs-run-XXXXXX", NULL);
		if (!tmpdir) {
			sfs_err("run", "cannot make a temporary folder");
			goto out;
		}
	}
	char *img =
	    image ? g_strdup(image) : g_build_filename(tmpdir, "run.img", NULL);
	if (!image || fresh || !has_fs(img)) {
		rc = make_image(img, size, cfg_journaled(&cfg), jsize,
				&mkfs_cli, &err);
		if (rc) {
			sfs_err("run", "%s", err ? err : g_strerror(-rc));
			g_free(img);
			goto out;
		}
	}
	rc = sfs_bdev_open_file(img, SFS_BDEV_EXCL | SFS_BDEV_NOSYNC, 0, &bd);
	if (rc) {
		sfs_err("run", "cannot open %s: %s", img,
			rc == -EBUSY ? "in use (mounted?)" : g_strerror(-rc));
		g_free(img);
		goto out;
	}
	if (tmpdir) {
		/* the open device keeps the temporary image: nothing is left
		 * behind, even if the run is killed */
		unlink(img);
		rmdir(tmpdir);
	}
	rc = sfs_fs_open(bd, &cfg, &fs, &err);
	if (rc) {
		sfs_err("run", "%s: %s", img, err ? err : g_strerror(-rc));
		g_free(img);
		goto out;
	}
	g_free(img);
	if (!quiet)
		sfs_fs_set_report(fs, stdout);

	struct sfs_run_opts ro = {
	    .cpu = cfg.cpu, .cpus = cfg.cpus, .seed = seed};
	struct sfs_run_counters cnt;
	struct sfs_wl_result res;
	char *rerr = NULL;

	status = 0;
	rc = sfs_run_engine(fs, w, &ro, &res, &cnt, &rerr);
	sfs_workload_report(w, &res, stdout);
	printf("\n");
	printf("times: virtual (the modelled disk and CPU; the same on every "
	       "host)\n");
	sfs_wl_result_print(&res, stdout);
	sfs_run_counters_print(&cnt, stdout);
	printf("\n");
	if (results && write_results(results, w, &res, &cnt) < 0)
		status = RUN_EXIT_FAIL;
	if (rc) {
		sfs_err("run", "%s", rerr ? rerr : g_strerror(-rc));
		status = RUN_EXIT_FAIL;
	} else if (cnt.clients_stopped) {
		/* as the benchmark would: its process stopped on the error */
		sfs_err("run", "%s", cnt.stop_what);
		status = RUN_EXIT_FAIL;
	}
	g_free(rerr);
	sfs_wl_result_free(&res);
	rc = sfs_fs_close(fs);
	fs = NULL;
	if (rc) {
		sfs_err("run", "writing the image back failed: %s",
			g_strerror(-rc));
		status = RUN_EXIT_FAIL;
	}
	goto out;
usage:
	status = RUN_EXIT_USAGE;
out:
	if (fs)
		sfs_fs_close(fs);
	if (tmpdir) {
		char *timg = g_build_filename(tmpdir, "run.img", NULL);
		unlink(timg);
		g_free(timg);
		rmdir(tmpdir);
		g_free(tmpdir);
	}
	sfs_workload_free(w);
	g_string_free(opts, TRUE);
	g_free(spec);
	g_free(path);
	g_free(results);
	g_free(mkfs_words);
	sfs_mkfs_cli_clear(&mkfs_cli);
	g_free(err);
	return status;
}
