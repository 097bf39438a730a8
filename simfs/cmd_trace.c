/*
 * cmd_trace.c - `simfs trace`: tools for operation traces (trace.h,
 * traces/README.md).
 *
 *   simfs trace import-strace [--root DIR] IN OUT
 *                 convert `strace -f -ttt -T -e trace=file,desc` output
 *                 (IN, "-" for stdin) to a trace (OUT, "-" for stdout)
 *   simfs trace show FILE
 *                 a summary: clients, ops by type with their failures and
 *                 recorded service time, the span of the recording
 *
 * A trace to replay goes to `simfs run trace,file=FILE`; one is recorded
 * on a mount with `simfs mount -o trace=FILE`.  Exit status: 0, 1 for a
 * failure (a malformed trace: "FILE:LINE: what"), 2 for a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "config.h"
#include "trace.h"

#define TRC_EXIT_FAIL 1
#define TRC_EXIT_USAGE 2
#define TRC_SHOW_CLIENTS 16 /* clients listed by show */

static void trc_usage(FILE *out)
{
	fputs("usage: simfs trace import-strace [--root DIR] IN OUT\n"
	      "       simfs trace show FILE\n"
	      "\n"
	      "Operation traces (traces/README.md): record one on a mount "
	      "with\n"
	      "`simfs mount -o trace=FILE`, replay it with `simfs run "
	      "trace,file=FILE`.\n"
	      "\n"
	      "  import-strace  convert the output of\n"
	      "                   strace -f -ttt -T -e trace=file,desc -o IN "
	      "COMMAND\n"
	      "                 to a trace; '-' is stdin/stdout.  --root DIR "
	      "keeps only\n"
	      "                 paths under DIR (absolute), named relative to "
	      "it; without\n"
	      "                 it every path is kept, its leading '/' "
	      "dropped.\n"
	      "  show           print a trace's clients, its operations by "
	      "type (count,\n"
	      "                 failures, recorded service time) and its "
	      "span.\n",
	      out);
}

static int trc_import(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"root", required_argument, NULL, 'r'},
	    {NULL, 0, NULL, 0},
	};
	const char *root = NULL;
	FILE *in = stdin, *out = stdout;
	char *err = NULL;
	int c, rc;

	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":hr:", longopts, NULL)) != -1) {
		if (c == 'h') {
			trc_usage(stdout);
			return 0;
		}
		if (c == 'r') {
			root = optarg;
			continue;
		}
		fprintf(stderr,
			"simfs trace: unknown option '%s' (see simfs "
			"trace --help)\n",
			argv[optind - 1]);
		return TRC_EXIT_USAGE;
	}
	if (argc - optind != 2) {
		fprintf(stderr, "simfs trace: import-strace needs IN and OUT "
				"(usage: simfs trace import-strace [--root "
				"DIR] IN OUT)\n");
		return TRC_EXIT_USAGE;
	}
	if (sfs_parse_only())
		return 0;
	if (strcmp(argv[optind], "-") && !(in = fopen(argv[optind], "r"))) {
		fprintf(stderr, "simfs trace: %s: %s\n", argv[optind],
			g_strerror(errno));
		return TRC_EXIT_FAIL;
	}
	if (strcmp(argv[optind + 1], "-") &&
	    !(out = fopen(argv[optind + 1], "w"))) {
		fprintf(stderr, "simfs trace: %s: %s\n", argv[optind + 1],
			g_strerror(errno));
		if (in != stdin)
			fclose(in);
		return TRC_EXIT_FAIL;
	}
	rc = sfs_trace_import_strace_root(in, out, root, &err);
	if (in != stdin)
		fclose(in);
	if (out != stdout && fclose(out) != 0 && rc == 0) {
		rc = -errno;
		err = g_strdup_printf("%s: %s", argv[optind + 1],
				      g_strerror(-rc));
	}
	if (rc < 0 && out != stdout)
		unlink(argv[optind + 1]); /* no half-made trace */
	if (rc < 0) {
		/* the importer's "LINE: what" becomes "IN:LINE: what" */
		fprintf(stderr, "simfs trace: %s:%s%s\n", argv[optind],
			err && g_ascii_isdigit(*err) ? "" : " ",
			err ? err : g_strerror(-rc));
		g_free(err);
		return TRC_EXIT_FAIL;
	}
	return 0;
}

struct trc_count {
	uint64_t n, failed;
	sfs_ns_t dur_ns;
};

static int trc_show(int argc, char **argv)
{
	struct trc_count by[SFS_TOP_N] = {{0}};
	struct sfs_trace_reader *r;
	struct sfs_trace_rec rec;
	GHashTable *clients;
	GArray *order;
	sfs_ns_t first = UINT64_MAX, last = 0;
	uint64_t total = 0, bytes_r = 0, bytes_w = 0;
	char *err = NULL;
	int rc;

	if (argc == 2 &&
	    (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		trc_usage(stdout);
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "simfs trace: show needs one FILE (usage: "
				"simfs trace show FILE)\n");
		return TRC_EXIT_USAGE;
	}
	if (sfs_parse_only())
		return 0;
	rc = sfs_trace_reader_open(argv[1], &r, &err);
	if (rc < 0) {
		fprintf(stderr, "simfs trace: %s\n", err);
		g_free(err);
		return TRC_EXIT_FAIL;
	}
	clients =
	    g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	order = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	while ((rc = sfs_trace_read(r, &rec, &err)) == 1) {
		uint64_t *n = g_hash_table_lookup(clients, &rec.client);

		if (!n) {
			uint64_t *k = g_new(uint64_t, 1);

			*k = rec.client;
			n = g_new0(uint64_t, 1);
			g_hash_table_insert(clients, k, n);
			g_array_append_val(order, rec.client);
		}
		(*n)++;
		total++;
		by[rec.op].n++;
		by[rec.op].failed += rec.result != 0;
		by[rec.op].dur_ns += rec.dur_ns;
		if (rec.op == SFS_TOP_READ)
			bytes_r += rec.done;
		if (rec.op == SFS_TOP_WRITE)
			bytes_w += rec.done;
		first = MIN(first, rec.t_ns);
		last = MAX(last, rec.t_ns + rec.dur_ns);
	}
	sfs_trace_reader_free(r);
	if (rc < 0) {
		fprintf(stderr, "simfs trace: %s\n", err);
		g_free(err);
		g_hash_table_destroy(clients);
		g_array_unref(order);
		return TRC_EXIT_FAIL;
	}
	printf("trace %s: %" PRIu64 " operations by %u clients over %.6f s "
	       "(recorded time %.6f s to %.6f s)\n",
	       argv[1], total, order->len,
	       total ? (double)(last - first) / 1e9 : 0.0,
	       total ? (double)first / 1e9 : 0.0, (double)last / 1e9);
	printf("read %" PRIu64 " bytes, wrote %" PRIu64 " bytes\n", bytes_r,
	       bytes_w);
	printf("%-10s %10s %8s %14s\n", "op", "count", "failed", "service ms");
	for (int i = 0; i < SFS_TOP_N; i++)
		if (by[i].n)
			printf("%-10s %10" PRIu64 " %8" PRIu64 " %14.3f\n",
			       sfs_trace_op_name(i), by[i].n, by[i].failed,
			       (double)by[i].dur_ns / 1e6);
	printf("clients (recorded id: operations):");
	for (guint i = 0; i < order->len && i < TRC_SHOW_CLIENTS; i++) {
		uint64_t id = g_array_index(order, uint64_t, i);

		printf("%s %" PRIu64 ": %" PRIu64, i ? "," : "", id,
		       *(uint64_t *)g_hash_table_lookup(clients, &id));
	}
	if (order->len > TRC_SHOW_CLIENTS)
		printf(", ... %u more", order->len - TRC_SHOW_CLIENTS);
	printf("\n");
	g_hash_table_destroy(clients);
	g_array_unref(order);
	return 0;
}

/* `simfs trace SUBCOMMAND ...`: argv[0] is "trace". */
int sfs_cmd_trace(int argc, char **argv)
{
	if (argc < 2) {
		trc_usage(stderr);
		return TRC_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		trc_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "import-strace"))
		return trc_import(argc - 1, argv + 1);
	if (!strcmp(argv[1], "show"))
		return trc_show(argc - 1, argv + 1);
	fprintf(stderr,
		"simfs trace: unknown subcommand '%s' (valid: "
		"import-strace, show)\n",
		argv[1]);
	return TRC_EXIT_USAGE;
}
