/*
 * cmd_crash.c - `simfs crash`: options, the progress line, the table
 * and the summary (crash.h).
 */
#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "config.h"
#include "crash.h"

static void print_header(FILE *out)
{
	fprintf(out, "%7s %-22s %5s %-8s %-7s %-9s %-4s %-13s %-6s %s\n",
		"point", "op at the cut", "lost", "crashed", "fsck-y",
		"recovered", "same", "blk f/g/z/t/s", "fsync", "verdict");
}

static void print_row(FILE *out, const struct sfs_crash_result *r)
{
	char op[40], blk[32], fs[16], fy[16];

	g_snprintf(op, sizeof(op), "%s%s", r->op_at_cut ? "" : "-",
		   r->op_at_cut ? r->op_desc : "");
	g_snprintf(blk, sizeof(blk), "%u/%u/%u/%u/%u", r->foreign, r->garbage,
		   r->zero_bad, r->torn_blocks, r->off_state);
	g_snprintf(fs, sizeof(fs), "%u/%u", r->fsync_ok,
		   r->fsync_ok + r->fsync_lost);
	g_snprintf(fy, sizeof(fy), "%d%s", r->fsck_y,
		   r->repaired_clean ? "" : "!");
	fprintf(out, "%7llu %-22.22s %5llu %-8s %-7s %-9s %-4s %-13s %-6s %s\n",
		(unsigned long long)r->crash_req, op,
		(unsigned long long)r->dropped,
		r->needs_recovery  ? "recover"
		: r->crashed_clean ? "clean"
				   : "DAMAGED",
		fy,
		r->recover_rc	     ? "refused"
		: r->recovered_clean ? "clean"
				     : "-",
		r->same_tree < 0 ? "-"
		: r->same_tree	 ? "yes"
				 : "NO",
		blk, fs, r->violated || r->why[0] ? r->why : "ok");
}

static void print_summary(FILE *out, const struct sfs_crash_params *p,
			  const struct sfs_crash_summary *s)
{
	char err[128];
	const struct sfs_jnl_ops *pol =
	    sfs_crash_policy(p->opts, p->image, err, sizeof(err));

	fprintf(out,
		"data=%s workload=%s mode=%s seed=%llu: %zu points, %zu "
		"violations; crashed images: %zu needed journal recovery, "
		"%zu damaged (%zu repaired by e2fsck -y); %zu clean after "
		"simfs recovery, %zu equal to e2fsck's; %zu points with "
		"foreign data; fsync'd files intact %zu, lost %zu\n",
		pol ? pol->name : "?", p->workload,
		sfs_crash_mode_name(p->mode), (unsigned long long)p->seed,
		s->points, s->violations, s->needs_recovery, s->damaged,
		s->repaired, s->recovered_clean, s->same_tree,
		s->foreign_points, s->fsync_ok, s->fsync_lost);
}

/*
 * The progress line of a sweep, on stderr: by default only when stderr is
 * a terminal (and neither --quiet nor --trace), so a redirected or piped
 * run prints exactly what it always did.  On a terminal the line is
 * rewritten in place and erased when the sweep ends, before the table;
 * forced (--progress) onto a file or pipe it is one line per percent.
 */
struct crash_progress {
	FILE *out;
	bool tty;
	size_t last_pct; /* not a tty: the percent last printed, +1 */
};

static void crash_progress_cb(void *arg, size_t done, size_t total, size_t bad)
{
	struct crash_progress *pr = arg;
	size_t pct = total ? done * 100 / total : 100;

	if (pr->tty) {
		if (done < total)
			fprintf(pr->out,
				"\rsimfs crash: %zu/%zu checks done (%zu%%), "
				"%zu violation%s so far\033[K",
				done, total, pct, bad, bad == 1 ? "" : "s");
		else
			fputs("\r\033[K", pr->out);
	} else if (pct + 1 != pr->last_pct) {
		fprintf(pr->out,
			"simfs crash: %zu/%zu checks done (%zu%%), %zu "
			"violation%s so far\n",
			done, total, pct, bad, bad == 1 ? "" : "s");
		pr->last_pct = pct + 1;
	}
	fflush(pr->out);
}

static void crash_usage(FILE *out)
{
	fputs("usage: simfs crash [-o OPTS] [--workload NAME] [--seed S]\n"
	      "                   [--point N | --points all|sample:K]\n"
	      "                   [--mode cut|tear|volatile]\n"
	      "                   [--subsets K | --subset K]\n"
	      "                   [--jobs J] [--long-ops N] [--run-to-end]\n"
	      "                   [--promise MODE] [--keep] [--trace]\n"
	      "                   [--quiet] [--progress | --no-progress]\n"
	      "                   IMAGE\n"
	      "\n"
	      "Run a workload on copies of IMAGE (a fresh simfs or mke2fs\n"
	      "image; never modified), cut the power after request N,\n"
	      "recover with e2fsck -fy (a copy) and with simfs (same\n"
	      "options), run e2fsck -fn and check what the data= mode\n"
	      "promises.  One row per point, then a summary; exit 1 if a\n"
	      "promise broke.  OPTS are engine options (data=ordered, ...);\n"
	      "mem=1M comes first so the cache writes back early.\n"
	      "--promise MODE checks another mode's promise (what would\n"
	      "data=none break if it were held to ordered's?).  --keep\n"
	      "keeps the images of failed points (of the point, with\n"
	      "--point) for e2fsck, debugfs and simfs inspect.  --trace\n"
	      "lists each run's ops and device requests with their fate.\n"
	      "--quiet prints only failed points and the summary.  While\n"
	      "a sweep runs, a progress line (checks done of total,\n"
	      "violations so far) goes to stderr if it is a terminal,\n"
	      "erased before the table; --progress forces it (one line\n"
	      "per percent when stderr is not a terminal), --no-progress\n"
	      "turns it off.  stdout is the same either way.\n"
	      "Defaults: --workload mix --seed 1 --points all --mode cut,\n"
	      "--jobs = the number of CPUs.\n"
	      "\n"
	      "modes:\n"
	      "  cut       requests 1..N land, nothing after\n"
	      "  tear      as cut, request N (a write) lands in part: a\n"
	      "            seeded number of its leading 512-byte sectors\n"
	      "  volatile  a write cache without FUA: at N a seeded subset\n"
	      "            of the writes since the last flush lands\n"
	      "\n"
	      "workloads:\n",
	      out);
	for (const char *const *w = sfs_crash_workloads(); *w; w++)
		fprintf(out, "  %-9s %s\n", *w, sfs_crash_workload_help(*w));
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	*out = g_ascii_strtoull(s, &end, 0);
	return errno || *end ? -EINVAL : 0;
}

int sfs_cmd_crash(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"workload", required_argument, NULL, 'w'},
	    {"seed", required_argument, NULL, 's'},
	    {"point", required_argument, NULL, 'p'},
	    {"points", required_argument, NULL, 'P'},
	    {"mode", required_argument, NULL, 'm'},
	    {"subsets", required_argument, NULL, 'k'},
	    {"subset", required_argument, NULL, 'K'},
	    {"jobs", required_argument, NULL, 'j'},
	    {"long-ops", required_argument, NULL, 'L'},
	    {"run-to-end", no_argument, NULL, 'E'},
	    {"keep", no_argument, NULL, 'e'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"promise", required_argument, NULL, 'R'},
	    {"trace", no_argument, NULL, 'T'},
	    {"progress", no_argument, NULL, 'G'},
	    {"no-progress", no_argument, NULL, 'N'},
	    {NULL, 0, NULL, 0},
	};
	struct sfs_crash_params p = {.workload = "mix", .seed = 1};
	struct sfs_crash_plan plan;
	struct sfs_crash_summary sum;
	struct sfs_crash_result *res;
	const char *spec = "all";
	char *user_opts = NULL, *err = NULL;
	uint64_t v, point = UINT64_MAX, *points = NULL;
	uint32_t subsets = 1, subset = UINT32_MAX;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned jobs = ncpu > 0 ? (unsigned)ncpu : 1;
	bool quiet = false;
	int progress = -1; /* -1 auto, 0 off, 1 on */
	struct crash_progress pr = {.out = stderr};
	size_t n, bad;
	int c, rc;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			g_free(user_opts);
			user_opts = g_strdup(optarg);
			break;
		case 'w':
			p.workload = optarg;
			break;
		case 's':
			if (parse_u64(optarg, &p.seed))
				goto bad_value;
			break;
		case 'p':
			if (parse_u64(optarg, &point))
				goto bad_value;
			break;
		case 'P':
			spec = optarg;
			if (strcmp(spec, "all") != 0 &&
			    (!g_str_has_prefix(spec, "sample:") ||
			     parse_u64(spec + 7, &v) || v == 0))
				goto bad_value;
			break;
		case 'm':
			if (sfs_crash_mode_parse(optarg, &p.mode))
				goto bad_value;
			break;
		case 'k':
			if (parse_u64(optarg, &v) || v == 0 || v > 1000)
				goto bad_value;
			subsets = (uint32_t)v;
			break;
		case 'K':
			if (parse_u64(optarg, &v) || v > 1000)
				goto bad_value;
			subset = (uint32_t)v;
			break;
		case 'j':
			if (parse_u64(optarg, &v) || v > 256)
				goto bad_value;
			jobs = (unsigned)v;
			break;
		case 'L':
			if (parse_u64(optarg, &v) || v == 0 || v > 1000000)
				goto bad_value;
			p.long_ops = (uint32_t)v;
			break;
		case 'E':
			p.run_to_end = true;
			break;
		case 'T':
			p.trace = stdout;
			break;
		case 'R':
			if (!sfs_crash_promise_of(optarg))
				goto bad_value;
			p.promise = optarg;
			break;
		case 'e':
			p.keep_failed = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'G':
			progress = 1;
			break;
		case 'N':
			progress = 0;
			break;
		case 'h':
			crash_usage(stdout);
			g_free(user_opts);
			return 0;
		default:
			fprintf(stderr,
				"simfs crash: %s '%s' (see simfs crash "
				"--help)\n",
				c == ':' ? "option needs a value"
					 : "unknown option",
				argv[optind - 1]);
			g_free(user_opts);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "simfs crash: need exactly one IMAGE (see "
				"simfs crash --help)\n");
		g_free(user_opts);
		return 2;
	}
	p.image = argv[optind];
	char *opts =
	    g_strdup_printf(SFS_CRASH_CLI_OPTS "%s%s", user_opts ? "," : "",
			    user_opts ? user_opts : "");
	g_free(user_opts);
	p.opts = opts;
	{
		char msg[256];
		const struct sfs_jnl_ops *pol =
		    sfs_crash_policy(opts, p.image, msg, sizeof(msg));

		if (!pol) {
			fprintf(stderr, "simfs crash: %s\n", msg);
			g_free(opts);
			return 2;
		}
		if (sfs_parse_only()) {
			g_free(opts);
			return 0;
		}
		if (!p.promise && !sfs_jnl_promise(pol)) {
			fprintf(stderr,
				"simfs crash: no promise known for "
				"data=%s\n",
				pol->name);
			g_free(opts);
			return 2;
		}
	}
	if (!g_file_test(p.image, G_FILE_TEST_IS_REGULAR)) {
		fprintf(stderr, "simfs crash: %s: not an image file\n",
			p.image);
		g_free(opts);
		return 2;
	}
	rc = sfs_crash_plan(&p, &plan, &err);
	if (rc) {
		fprintf(stderr, "simfs crash: %s\n",
			err ? err : "dry run failed");
		g_free(err);
		g_free(opts);
		return 2;
	}
	if (point != UINT64_MAX) {
		points = g_new(uint64_t, 1);
		points[0] = point;
		n = 1;
	} else {
		n = sfs_crash_points(&plan, &p, spec, &points);
	}
	if (subset != UINT32_MAX && point == UINT64_MAX) {
		fprintf(stderr, "simfs crash: --subset needs --point\n");
		g_free(points);
		sfs_crash_plan_free(&plan);
		g_free(opts);
		return 2;
	}
	if (!quiet)
		printf("simfs crash: %s, workload %s (%u ops, %u durable), "
		       "%llu requests after setup; %zu point(s) x %u, mode "
		       "%s, seed %llu\n",
		       opts, p.workload, plan.n_ops, plan.n_durable,
		       (unsigned long long)plan.total_reqs, n, subsets,
		       sfs_crash_mode_name(p.mode), (unsigned long long)p.seed);
	p.keep_all = p.keep_failed && n == 1;
	if (p.trace)
		jobs = 0; /* in order, in this process */
	pr.tty = isatty(STDERR_FILENO) == 1;
	if (progress < 0)
		progress = pr.tty && !quiet && !p.trace;
	if (progress) {
		fflush(stdout); /* the first line before the progress */
		p.progress = crash_progress_cb;
		p.progress_arg = &pr;
	}
	if (subset != UINT32_MAX) {
		res = g_new0(struct sfs_crash_result, 1);
		rc = sfs_crash_check_point(&p, points[0], subset, res);
		if (rc && !res->violated)
			res->violated = true;
		bad = res->violated;
		subsets = 1;
	} else {
		res = g_new0(struct sfs_crash_result, n * subsets);
		bad = sfs_crash_sweep(&p, points, n, subsets, jobs, res);
	}
	if (!quiet)
		print_header(stdout);
	for (size_t i = 0; i < n * subsets; i++) {
		if (!quiet || res[i].violated)
			print_row(stdout, &res[i]);
		if (res[i].violated) {
			char *r = sfs_crash_repro(&p, &res[i]);

			printf("        reproduce: %s (device seed %llu)\n", r,
			       (unsigned long long)res[i].dev_seed);
			g_free(r);
		}
	}
	sfs_crash_summarize(res, n * subsets, &sum);
	print_summary(stdout, &p, &sum);
	g_free(res);
	g_free(points);
	sfs_crash_plan_free(&plan);
	g_free(opts);
	return bad ? 1 : 0;

bad_value:
	fprintf(stderr, "simfs crash: bad value '%s' for %s\n", optarg,
		argv[optind - 1]);
	g_free(user_opts);
	return 2;
}
