/*
 * lab.c - the framework of `simfs lab` (lab.h): the registry, the sheet,
 * the command line, printing, --mount and grading an answer file.
 *
 *   simfs lab list
 *   simfs lab NAME [--seed N] [--level L] [--answers|-c]
 *   simfs lab NAME ... --mount DIR [--image IMG]   (mkfs, mount, script)
 *   simfs lab NAME ... --script                    (the script alone)
 *   simfs lab check NAME [--seed N] [--level L] [--show-answers] FILE
 *   simfs lab NAME --help
 *
 * A sheet is built the same way for every verb: lab->build(params), which
 * runs the scenario through the engine on a memory device
 * (sfs_lab_fs_open).  Printing and grading only read the sheet, so what a
 * student is graded against is exactly what --answers shows.
 *
 * Grading (doc/teaching.md, "Answer files"): one answer per line, "N:
 * answer", "N. answer" or "N answer"; '#' starts a comment; blank lines
 * are skipped.  Both sides are normalised (sfs_lab_normalise).  A
 * question is right when the token lists are equal; a partial question
 * with k of its n tokens in the right place, and no more tokens than n
 * given, scores k/n ("partly"); anything else scores 0.  Exit status 0
 * when every question is right, 1 otherwise, 2 for a malformed file.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "blockdev.h"
#include "config.h"
#include "frag.h"
#include "fs.h"
#include "fs_priv.h"
#include "lab.h"
#include "mkfs.h"
#include "models/journal/jbd2.h"
#include "stats.h"

#define LAB_EXIT_WRONG 1
#define LAB_EXIT_USAGE 2
#define LAB_MKFS_SEED 1 /* UUID and hash seed of every lab image */

extern const struct sfs_lab sfs_lab_alloc;
extern const struct sfs_lab sfs_lab_inode;
extern const struct sfs_lab sfs_lab_journal;
extern const struct sfs_lab sfs_lab_crash;
extern const struct sfs_lab sfs_lab_cache;
extern const struct sfs_lab sfs_lab_disk;

const struct sfs_lab *const sfs_labs[] = {
    &sfs_lab_alloc,
    &sfs_lab_inode,
    &sfs_lab_journal,
    &sfs_lab_crash,
    &sfs_lab_cache,
    &sfs_lab_disk,
};
const unsigned sfs_labs_count = G_N_ELEMENTS(sfs_labs);

const struct sfs_lab *sfs_lab_find(const char *name)
{
	for (unsigned i = 0; i < sfs_labs_count; i++)
		if (strcmp(sfs_labs[i]->name, name) == 0)
			return sfs_labs[i];
	return NULL;
}

/* ================================================================ sheet */

void sfs_lab_sheet_init(struct sfs_lab_sheet *sheet)
{
	memset(sheet, 0, sizeof(*sheet));
	sheet->scenario = g_string_new(NULL);
	sheet->questions = g_ptr_array_new();
	sheet->figure = g_string_new(NULL);
	sheet->mount_script = g_string_new(NULL);
}

void sfs_lab_sheet_clear(struct sfs_lab_sheet *sheet)
{
	if (sheet->questions) {
		for (guint i = 0; i < sheet->questions->len; i++) {
			struct sfs_lab_question *q = sheet->questions->pdata[i];

			g_free(q->text);
			g_free(q->answer);
			g_free(q->explain);
			g_free(q);
		}
		g_ptr_array_free(sheet->questions, TRUE);
	}
	if (sheet->scenario)
		g_string_free(sheet->scenario, TRUE);
	if (sheet->figure)
		g_string_free(sheet->figure, TRUE);
	if (sheet->mount_script)
		g_string_free(sheet->mount_script, TRUE);
	g_free(sheet->mkfs_args);
	g_free(sheet->mount_opts);
	memset(sheet, 0, sizeof(*sheet));
}

void sfs_lab_ask(struct sfs_lab_sheet *sheet, bool partial, const char *answer,
		 const char *explain, const char *fmt, ...)
{
	struct sfs_lab_question *q = g_new0(struct sfs_lab_question, 1);
	va_list ap;

	va_start(ap, fmt);
	q->text = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	q->answer = sfs_lab_normalise(answer);
	q->explain = g_strdup(explain ? explain : "");
	q->partial = partial;
	g_ptr_array_add(sheet->questions, q);
}

char *sfs_lab_normalise(const char *text)
{
	GString *out = g_string_new(NULL);
	bool gap = false;

	for (const char *p = text ? text : ""; *p; p++) {
		if (g_ascii_isspace(*p) || *p == ',') {
			gap = out->len > 0;
			continue;
		}
		if (gap)
			g_string_append_c(out, ' ');
		gap = false;
		g_string_append_c(out, g_ascii_tolower(*p));
	}
	return g_string_free(out, FALSE);
}

GRand *sfs_lab_rand(const struct sfs_lab *lab, const struct sfs_lab_params *p)
{
	guint32 words[4] = {
	    (guint32)p->seed, (guint32)(p->seed >> 32), (guint32)p->level,
	    0x811c9dc5u, /* FNV-1a of the name: the same on every host */
	};

	for (const char *c = lab->name; *c; c++)
		words[3] = (words[3] ^ (guint8)*c) * 16777619u;
	return g_rand_new_with_seed_array(words, G_N_ELEMENTS(words));
}

/* ================================================== the scenario's fs */

/* A device that reads zeros and keeps nothing: the base of the overlay
 * that holds a lab's image in memory. */
static int lab_zero_read(struct sfs_bdev *bd, uint64_t off, void *buf,
			 size_t len)
{
	memset(buf, 0, len);
	return 0;
}

static int lab_zero_write(struct sfs_bdev *bd, uint64_t off, const void *buf,
			  size_t len)
{
	return -EIO; /* never called: the overlay only reads its base */
}

static const struct sfs_bdev_ops lab_zero_ops = {
    .name = "zero",
    .read = lab_zero_read,
    .write = lab_zero_write,
};

char *sfs_lab_mkfs_args(const struct sfs_lab_fs_spec *spec)
{
	GString *s = g_string_new(NULL);

	g_string_append_printf(s, "-b %u",
			       spec->block_size ? spec->block_size : 4096);
	if (spec->inode_ratio)
		g_string_append_printf(s, " -i %u", spec->inode_ratio);
	if (spec->features && *spec->features)
		g_string_append_printf(s, " -O %s", spec->features);
	if (spec->journal_blocks)
		g_string_append_printf(
		    s, " -J size=%uK",
		    spec->journal_blocks *
			((spec->block_size ? spec->block_size : 4096) / 1024));
	g_string_append_printf(s, " --seed %u %" G_GUINT64_FORMAT "K",
			       LAB_MKFS_SEED, spec->size_bytes / 1024);
	return g_string_free(s, FALSE);
}

char *sfs_lab_mount_opts(const char *opts)
{
	if (!opts || !*opts)
		return g_strdup("clock=virtual");
	return g_strdup_printf("%s,clock=virtual", opts);
}

int sfs_lab_fs_open(struct sfs_lab_sheet *sheet,
		    const struct sfs_lab_fs_spec *spec, struct sfs_fs **out,
		    char **err)
{
	struct sfs_mkfs_params p;
	struct sfs_config cfg;
	struct sfs_bdev *bd;
	char *opts, *msg = NULL;
	int rc;

	*out = NULL;
	sfs_mkfs_defaults(&p);
	p.size_bytes = spec->size_bytes;
	if (spec->block_size)
		p.block_size = spec->block_size;
	if (spec->inode_ratio)
		p.inode_ratio = spec->inode_ratio;
	p.seed = LAB_MKFS_SEED;
	p.time = 1;
	if (spec->features && *spec->features &&
	    sfs_mkfs_parse_features(&p, spec->features, err))
		return -EINVAL;
	opts = sfs_lab_mount_opts(spec->mount_opts);
	sfs_config_defaults(&cfg);
	rc = sfs_config_parse(&cfg, opts, NULL, &msg);
	if (rc) {
		*err = g_strdup_printf("lab options '%s': %s", opts,
				       msg ? msg : g_strerror(-rc));
		goto out;
	}
	bd = sfs_bdev_overlay_new(
	    sfs_bdev_new(&lab_zero_ops, NULL, spec->size_bytes));
	sfs_bdev_set_known_zero(bd, true);
	/* with group descriptor checksums sfs_mkfs lays the journal out */
	p.has_journal = p.has_journal || spec->journal_blocks;
	p.journal_blocks = spec->journal_blocks;
	rc = sfs_mkfs(bd, &p, err);
	if (rc == 0 && spec->journal_blocks && !sfs_mkfs_makes_journal(&p))
		rc = sfs_jbd2_add_internal(bd, spec->journal_blocks,
					   SFS_JBD2_PLACE_MIDDLE, err);
	if (rc) {
		sfs_bdev_close(bd);
		goto out;
	}
	rc = sfs_fs_open(bd, &cfg, out, &msg);
	if (rc) {
		*err = g_strdup_printf("lab filesystem: %s",
				       msg ? msg : g_strerror(-rc));
		goto out;
	}
	if (sheet && !sheet->mkfs_args) {
		sheet->mkfs_args = sfs_lab_mkfs_args(spec);
		sheet->mount_opts = opts;
		opts = NULL;
	}
out:
	g_free(msg);
	g_free(opts);
	return rc;
}

int sfs_lab_resolve(struct sfs_fs *fs, const char *path, uint32_t *ino_out)
{
	gchar **parts = g_strsplit(path, "/", -1);
	sfs_ino_t ino = SFS_ROOT_INO;
	struct sfs_attr at;
	int rc = 0;

	for (guint i = 0; parts[i] && rc == 0; i++) {
		if (!*parts[i])
			continue;
		rc = sfs_lookup(fs, ino, parts[i], &at);
		if (rc == 0)
			ino = at.ino;
	}
	g_strfreev(parts);
	if (rc == 0)
		*ino_out = ino;
	return rc;
}

int sfs_lab_file_runs(struct sfs_fs *fs, uint32_t ino, GArray **out)
{
	struct sfs_inode *ip;
	int rc;

	*out = NULL;
	sfs_lock(fs);
	rc = sfs_iget(fs, ino, &ip);
	if (rc == 0) {
		if (sfs_i_isreg(ip) || sfs_i_isdir(ip))
			rc = sfs_frag_inode_runs(fs, ip, out);
		else
			rc = -EINVAL;
		sfs_iput(fs, ip);
	}
	sfs_unlock(fs);
	return rc;
}

int sfs_lab_stat(struct sfs_fs *fs, const char *path, uint64_t *out)
{
	char *json = sfs_stats_to_json(sfs_fs_stats(fs), false);
	JsonParser *parser = json_parser_new();
	gchar **parts = g_strsplit(path, ".", -1);
	JsonNode *node = NULL;
	int rc = -ENOENT;

	if (json && json_parser_load_from_data(parser, json, -1, NULL))
		node = json_parser_get_root(parser);
	for (guint i = 0; node && parts[i]; i++) {
		JsonObject *o = JSON_NODE_HOLDS_OBJECT(node)
				    ? json_node_get_object(node)
				    : NULL;
		node = o && json_object_has_member(o, parts[i])
			   ? json_object_get_member(o, parts[i])
			   : NULL;
	}
	if (node && JSON_NODE_HOLDS_VALUE(node) &&
	    json_node_get_value_type(node) == G_TYPE_INT64) {
		*out = (uint64_t)json_node_get_int(node);
		rc = 0;
	}
	g_strfreev(parts);
	g_object_unref(parser);
	g_free(json);
	return rc;
}

/* ============================================================ printing */

/* Print text with every line indented by ind spaces. */
static void lab_indent(FILE *f, const char *text, int ind)
{
	gchar **lines = g_strsplit(text, "\n", -1);
	guint n = g_strv_length(lines);

	if (n && !*lines[n - 1])
		n--; /* a final newline ends the text, no empty line */
	for (guint i = 0; i < n; i++)
		fprintf(f, "%*s%s\n", *lines[i] ? ind : 0, "", lines[i]);
	g_strfreev(lines);
}

/*
 * Print text wrapped at LAB_WIDTH columns: the first line after a prefix
 * already printed (first columns wide), the others indented by ind.  A
 * line of text that starts with a blank is printed as it is (a table).
 */
#define LAB_WIDTH 78
static void lab_wrap(FILE *f, const char *text, int first, int ind)
{
	gchar **lines = g_strsplit(text, "\n", -1);
	int col = first;
	bool start = true;

	for (guint l = 0; lines[l]; l++) {
		gchar **words;

		if (!lines[l + 1] && !*lines[l])
			break; /* the final newline */
		if (!start && *lines[l])
			fprintf(f, "%*s", ind, "");
		col = start ? first : ind;
		start = false;
		if (g_ascii_isspace(lines[l][0]) || !*lines[l]) {
			fprintf(f, "%s\n", lines[l]);
			continue;
		}
		words = g_strsplit(lines[l], " ", -1);
		bool fresh = true;
		for (guint w = 0; words[w]; w++) {
			int len = (int)strlen(words[w]);

			if (!len && !fresh) { /* "  " after a full stop */
				continue;
			}
			if (!fresh && col + 1 + len > LAB_WIDTH) {
				fprintf(f, "\n%*s", ind, "");
				col = ind;
				fresh = true;
			}
			if (!fresh) {
				fputc(' ', f);
				col++;
			}
			fputs(words[w], f);
			col += len;
			fresh = false;
		}
		fputc('\n', f);
		g_strfreev(words);
	}
	if (start)
		fputc('\n', f);
	g_strfreev(lines);
}

static void lab_repro(GString *s, const char *verb, const struct sfs_lab *lab,
		      const struct sfs_lab_params *p)
{
	g_string_append_printf(
	    s, "simfs lab %s%s --seed %" G_GUINT64_FORMAT " --level %d", verb,
	    lab->name, p->seed, p->level);
}

static void lab_print_sheet(const struct sfs_lab *lab,
			    const struct sfs_lab_params *p,
			    const struct sfs_lab_sheet *sh, bool answers)
{
	GString *cmd = g_string_new(NULL);

	lab_repro(cmd, "", lab, p);
	printf("simfs lab %s: seed %" G_GUINT64_FORMAT
	       ", level %d of %d (%s)\n",
	       lab->name, p->seed, p->level, lab->levels,
	       lab->level_help[p->level - 1]);
	printf("reproduce: %s%s\n\n", cmd->str, answers ? " --answers" : "");
	printf("Scenario\n\n  ");
	lab_wrap(stdout, sh->scenario->str, 2, 2);
	printf("\nQuestions\n");
	for (guint i = 0; i < sh->questions->len; i++) {
		const struct sfs_lab_question *q = sh->questions->pdata[i];

		/* "  1. text", wrapped under itself at column 5 */
		printf("\n%3u. ", i + 1);
		lab_wrap(stdout, q->text, 5, 5);
		if (answers) {
			printf("     answer: %s%s\n", q->answer,
			       q->partial && strchr(q->answer, ' ')
				   ? "   (credit per item)"
				   : "");
			if (*q->explain) {
				printf("     why: ");
				lab_wrap(stdout, q->explain, 10, 10);
			}
		}
	}
	if (answers && sh->figure->len) {
		printf("\nFigure\n\n");
		lab_indent(stdout, sh->figure->str, 2);
	}
	if (!answers) {
		g_string_truncate(cmd, 0);
		lab_repro(cmd, "check ", lab, p);
		printf("\nAnswer in a file, one line per question (\"1: "
		       "answer\"), then grade it:\n  %s FILE\n",
		       cmd->str);
		g_string_truncate(cmd, 0);
		lab_repro(cmd, "", lab, p);
		printf("or see the answers: %s --answers\n", cmd->str);
	}
	g_string_free(cmd, TRUE);
}

/* ============================================================== usage */

static void lab_usage(FILE *out)
{
	fputs(
	    "usage: simfs lab list\n"
	    "       simfs lab NAME [--seed N] [--level L] [--answers|-c]\n"
	    "       simfs lab NAME [--seed N] [--level L] --mount DIR "
	    "[--image IMG]\n"
	    "       simfs lab NAME [--seed N] [--level L] --script\n"
	    "       simfs lab check NAME [--seed N] [--level L] "
	    "[--show-answers] FILE\n"
	    "       simfs lab NAME --help\n"
	    "\n"
	    "Predict-then-check exercises on the real engine: a seeded "
	    "scenario, numbered\n"
	    "questions, and answers computed by running the scenario "
	    "through simfs (never\n"
	    "written by hand).  The same seed and level give the same sheet "
	    "everywhere.\n"
	    "\n"
	    "options:\n"
	    "      --seed N        which scenario (default 1)\n"
	    "      --level L       difficulty, 1 .. the lab's levels (default "
	    "1)\n"
	    "  -c, --answers       print the answers, their reasoning and the "
	    "figure\n"
	    "      --mount DIR     make the scenario's image and mount it at "
	    "DIR (FUSE),\n"
	    "                      then print the commands to run there\n"
	    "      --image IMG     the image for --mount (default: DIR.img, "
	    "beside DIR)\n"
	    "      --script        print only the commands that replay the "
	    "scenario on a\n"
	    "                      mount (run them with the mount as the "
	    "current directory)\n"
	    "      --show-answers  check: print the expected answer of each "
	    "question not right\n"
	    "  -h, --help          this help, or a lab's own (simfs lab NAME "
	    "--help)\n"
	    "\n"
	    "Answer files: one answer per line, \"N: answer\" (or \"N. "
	    "answer\", \"N answer\");\n"
	    "'#' starts a comment.  Case, commas and runs of blanks do not "
	    "matter.  check\n"
	    "exits 0 when every answer is right, 1 if not, 2 for a malformed "
	    "file.\n"
	    "\n"
	    "labs:\n",
	    out);
	for (unsigned i = 0; i < sfs_labs_count; i++)
		fprintf(out, "  %-8s  %s\n", sfs_labs[i]->name,
			sfs_labs[i]->summary);
}

static void lab_help(const struct sfs_lab *lab)
{
	printf("simfs lab %s: %s\n\n", lab->name, lab->summary);
	lab_indent(stdout, lab->teaches, 0);
	printf("\nlevels:\n");
	for (int i = 0; i < lab->levels; i++)
		printf("  %d  %s\n", i + 1, lab->level_help[i]);
	printf("\nsee simfs lab --help for the options\n");
}

static void G_GNUC_PRINTF(1, 2) lab_err(const char *fmt, ...)
{
	va_list ap;

	fputs("simfs lab: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int lab_unknown(const char *name)
{
	GString *names = g_string_new(NULL);

	for (unsigned i = 0; i < sfs_labs_count; i++)
		g_string_append_printf(names, "%s%s", i ? ", " : "",
				       sfs_labs[i]->name);
	lab_err("unknown lab '%s' (labs: %s; simfs lab list)", name,
		names->str);
	g_string_free(names, TRUE);
	return LAB_EXIT_USAGE;
}

/* ============================================================ grading */

/*
 * Read an answer file into answers[0..n-1] (g_free each; NULL: none).
 * 0, or -EINVAL with the reason, naming the line, in *err.
 */
static int lab_read_answers(const char *path, guint n, char **answers,
			    char **err)
{
	GError *gerr = NULL;
	gchar *text = NULL, **lines;
	int rc = 0;

	if (!g_file_get_contents(path, &text, NULL, &gerr)) {
		*err =
		    g_strdup_printf("cannot read %s: %s", path, gerr->message);
		g_error_free(gerr);
		return -EINVAL;
	}
	lines = g_strsplit(text, "\n", -1);
	for (guint l = 0; lines[l] && rc == 0; l++) {
		char *line = lines[l], *hash = strchr(line, '#'), *end;
		unsigned long num;
		int digits;

		if (hash)
			*hash = '\0';
		g_strstrip(line);
		if (!*line)
			continue;
		if (!g_ascii_isdigit(*line)) {
			*err = g_strdup_printf(
			    "%s:%u: expected 'N: answer', got '%s'", path,
			    l + 1, line);
			rc = -EINVAL;
			break;
		}
		errno = 0;
		num = strtoul(line, &end, 10);
		digits = (int)(end - line);
		if (*end == ':' || *end == '.')
			end++;
		else if (*end && !g_ascii_isspace(*end)) {
			*err = g_strdup_printf(
			    "%s:%u: expected 'N: answer' (a question number, "
			    "then ':'), got '%s'",
			    path, l + 1, line);
			rc = -EINVAL;
			break;
		}
		if (errno || num < 1 || num > n) {
			*err = g_strdup_printf("%s:%u: no question %.*s (this "
					       "sheet has 1 to %u)",
					       path, l + 1, digits, line, n);
			rc = -EINVAL;
			break;
		}
		if (answers[num - 1]) {
			*err = g_strdup_printf("%s:%u: a second answer to "
					       "question %lu",
					       path, l + 1, num);
			rc = -EINVAL;
			break;
		}
		answers[num - 1] = sfs_lab_normalise(end);
	}
	g_strfreev(lines);
	g_free(text);
	return rc;
}

/* Score of given against q (0 .. 1); *right_tokens of *tokens. */
static double lab_score(const struct sfs_lab_question *q, const char *given,
			guint *right_tokens, guint *tokens)
{
	gchar **want = g_strsplit(q->answer, " ", -1);
	gchar **got = g_strsplit(given, " ", -1);
	guint nw = *q->answer ? g_strv_length(want) : 0;
	guint ng = *given ? g_strv_length(got) : 0;
	guint k = 0;
	double score;

	for (guint i = 0; i < nw && i < ng; i++)
		if (strcmp(want[i], got[i]) == 0)
			k++;
	if (k == nw && ng == nw)
		score = 1;
	else if (q->partial && nw && ng <= nw)
		score = (double)k / nw;
	else
		score = 0;
	*right_tokens = k;
	*tokens = nw;
	g_strfreev(want);
	g_strfreev(got);
	return score;
}

static int lab_check(const struct sfs_lab *lab, const struct sfs_lab_params *p,
		     const struct sfs_lab_sheet *sh, const char *path,
		     bool show)
{
	guint n = sh->questions->len, right = 0;
	char **answers = g_new0(char *, n + 1);
	GString *cmd = g_string_new(NULL);
	char *err = NULL;
	double total = 0;
	int rc;

	rc = lab_read_answers(path, n, answers, &err);
	if (rc) {
		lab_err("%s", err);
		g_free(err);
		rc = LAB_EXIT_USAGE;
		goto out;
	}
	lab_repro(cmd, "", lab, p);
	printf("simfs lab %s: seed %" G_GUINT64_FORMAT ", level %d: grading "
	       "%s\n\n",
	       lab->name, p->seed, p->level, path);
	for (guint i = 0; i < n; i++) {
		const struct sfs_lab_question *q = sh->questions->pdata[i];
		guint k = 0, t = 0;
		double s = 0;

		if (!answers[i]) {
			printf("  %2u  missing\n", i + 1);
		} else {
			s = lab_score(q, answers[i], &k, &t);
			if (s == 1)
				printf("  %2u  right\n", i + 1);
			else if (s > 0)
				printf("  %2u  partly (%u of %u)\n", i + 1, k,
				       t);
			else
				printf("  %2u  wrong\n", i + 1);
		}
		if (s < 1 && show)
			printf("      expected: %s\n", q->answer);
		right += s == 1;
		total += s;
	}
	printf("\nscore: %.2f of %u (%u right)\n", total, n, right);
	if (right < n && !show)
		printf("the answers: %s --answers (or check "
		       "--show-answers)\n",
		       cmd->str);
	rc = right == n ? 0 : LAB_EXIT_WRONG;
out:
	for (guint i = 0; i < n; i++)
		g_free(answers[i]);
	g_free(answers);
	g_string_free(cmd, TRUE);
	return rc;
}

/* ============================================================== mount */

/* Run `simfs ARGS...` (this program); 0 or -1 with a message printed. */
static int lab_spawn(const char *const *args, bool quiet)
{
	GPtrArray *av = g_ptr_array_new();
	GError *gerr = NULL;
	int status = 0;
	bool ok;

	g_ptr_array_add(av, (gpointer) "/proc/self/exe");
	for (const char *const *a = args; *a; a++)
		g_ptr_array_add(av, (gpointer)*a);
	g_ptr_array_add(av, NULL);
	ok = g_spawn_sync(NULL, (gchar **)av->pdata, NULL,
			  G_SPAWN_CHILD_INHERITS_STDIN |
			      (quiet ? G_SPAWN_STDOUT_TO_DEV_NULL : 0),
			  NULL, NULL, NULL, NULL, &status, &gerr);
	g_ptr_array_free(av, TRUE);
	if (!ok) {
		lab_err("cannot run simfs %s: %s", args[0], gerr->message);
		g_error_free(gerr);
		return -1;
	}
	if (!g_spawn_check_wait_status(status, NULL)) {
		lab_err("simfs %s failed (its message is above)", args[0]);
		return -1;
	}
	return 0;
}

/* The image --mount makes: IMG, or DIR.img beside DIR; g_free it. */
static char *lab_image_path(const char *dir, const char *image)
{
	size_t n = strlen(dir);

	if (image)
		return g_strdup(image);
	while (n > 1 && dir[n - 1] == '/')
		n--; /* "m/" is "m": its image is m.img, not m/.img */
	return g_strdup_printf("%.*s.img", (int)n, dir);
}

/* --mount's checks before any work: DIR a directory, the image new. */
static int lab_mount_precheck(const char *dir, const char *image)
{
	char *img = lab_image_path(dir, image);
	struct stat st;
	int rc = 0;

	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		lab_err("--mount %s: not a directory", dir);
		rc = -EINVAL;
	} else if (stat(img, &st) == 0) {
		lab_err("%s exists: remove it first, or give --image IMG", img);
		rc = -EINVAL;
	}
	g_free(img);
	return rc;
}

static int lab_mount(const struct sfs_lab *lab, const struct sfs_lab_params *p,
		     const struct sfs_lab_sheet *sh, const char *dir,
		     const char *image)
{
	gchar **mk = NULL, *img, *mkcmd;
	GPtrArray *av;
	GError *gerr = NULL;
	gint n = 0;
	int rc = LAB_EXIT_WRONG;

	if (!sh->mkfs_args || !sh->mount_script->len) {
		lab_err("lab %s has no --mount part", lab->name);
		return LAB_EXIT_USAGE;
	}
	img = lab_image_path(dir, image);
	if (!g_shell_parse_argv(sh->mkfs_args, &n, &mk, &gerr) || n < 1) {
		lab_err("lab %s: bad mkfs arguments '%s'", lab->name,
			sh->mkfs_args);
		g_clear_error(&gerr);
		g_free(img);
		return LAB_EXIT_USAGE;
	}
	/* mkfs_args ends with SIZE: IMAGE goes before it */
	av = g_ptr_array_new();
	g_ptr_array_add(av, (gpointer) "mkfs");
	for (gint i = 0; i + 1 < n; i++)
		g_ptr_array_add(av, mk[i]);
	g_ptr_array_add(av, img);
	g_ptr_array_add(av, mk[n - 1]);
	g_ptr_array_add(av, NULL);
	mkcmd = g_strjoinv(" ", (gchar **)av->pdata);
	if (lab_spawn((const char *const *)av->pdata, true) < 0)
		goto out;
	{
		const char *margs[] = {"mount", "-o", sh->mount_opts,
				       img,	dir,  NULL};
		if (lab_spawn(margs, false) < 0) {
			unlink(img);
			goto out;
		}
	}
	lab_print_sheet(lab, p, sh, false);
	printf("\nThe scenario's filesystem is mounted at %s:\n"
	       "  image  %s (made with: simfs %s)\n"
	       "  mount  simfs mount -o %s %s %s\n",
	       dir, img, mkcmd, sh->mount_opts, img, dir);
	printf("\nRun the scenario there (cd %s first):\n\n", dir);
	lab_indent(stdout, sh->mount_script->str, 2);
	printf("\nThen look (the image reflects the mount after simfs sync):\n"
	       "  simfs sync %s\n"
	       "  simfs inspect %s extents PATH   # a file's blocks, as "
	       "filefrag -v\n"
	       "  simfs inspect %s groups         # per-group layout and "
	       "free counts\n"
	       "  simfs plot layout %s -f PATH -o layout.svg\n"
	       "  debugfs -R 'stat PATH' %s        # after unmounting\n"
	       "and unmount when done:\n"
	       "  simfs umount %s\n",
	       dir, img, img, img, img, dir);
	rc = 0;
out:
	g_free(mkcmd);
	g_ptr_array_free(av, TRUE);
	g_strfreev(mk);
	g_free(img);
	return rc;
}

/* ======================================================== command line */

static int lab_parse_u64(const char *what, const char *text, uint64_t max,
			 uint64_t *out)
{
	char *end;

	errno = 0;
	if (!g_ascii_isdigit(*text) ||
	    (*out = g_ascii_strtoull(text, &end, 10), errno) || *end ||
	    *out > max) {
		lab_err("bad %s '%s' (a decimal number%s)", what, text,
			max < UINT64_MAX ? " from 1" : "");
		return -EINVAL;
	}
	return 0;
}

int sfs_cmd_lab(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"seed", required_argument, NULL, 'S'},
	    {"level", required_argument, NULL, 'L'},
	    {"answers", no_argument, NULL, 'c'},
	    {"mount", required_argument, NULL, 'M'},
	    {"image", required_argument, NULL, 'I'},
	    {"script", no_argument, NULL, 's'},
	    {"show-answers", no_argument, NULL, 'A'},
	    {NULL, 0, NULL, 0},
	};
	struct sfs_lab_params p = {.seed = 1, .level = 1};
	const char *mount_dir = NULL, *image = NULL, *name, *file = NULL;
	bool answers = false, script = false, show = false, help = false;
	bool check = false, list = false;
	const struct sfs_lab *lab;
	struct sfs_lab_sheet sh;
	uint64_t level = 1;
	char *err = NULL;
	int c, rc, rest;

	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":ch", longopts, NULL)) != -1) {
		switch (c) {
		case 'S':
			if (lab_parse_u64("seed", optarg, UINT64_MAX, &p.seed))
				return LAB_EXIT_USAGE;
			break;
		case 'L':
			if (lab_parse_u64("level", optarg, INT_MAX, &level))
				return LAB_EXIT_USAGE;
			if (level == 0) {
				lab_err("bad level '%s' (from 1)", optarg);
				return LAB_EXIT_USAGE;
			}
			break;
		case 'c':
			answers = true;
			break;
		case 'M':
			mount_dir = optarg;
			break;
		case 'I':
			image = optarg;
			break;
		case 's':
			script = true;
			break;
		case 'A':
			show = true;
			break;
		case 'h':
			help = true;
			break;
		case ':':
			lab_err("option '%s' needs a value (see simfs lab "
				"--help)",
				argv[optind - 1]);
			return LAB_EXIT_USAGE;
		default:
			lab_err("unknown option '%s' (see simfs lab --help)",
				argv[optind - 1]);
			return LAB_EXIT_USAGE;
		}
	}
	rest = argc - optind;
	if (rest == 0) {
		if (help) {
			lab_usage(stdout);
			return 0;
		}
		lab_err("no lab named (simfs lab list; simfs lab --help)");
		return LAB_EXIT_USAGE;
	}
	name = argv[optind];
	if (strcmp(name, "list") == 0) {
		list = true;
	} else if (strcmp(name, "check") == 0) {
		check = true;
		if (rest < 2 && !help) {
			lab_err("check: no lab named (usage: simfs lab check "
				"NAME [--seed N] [--level L] FILE)");
			return LAB_EXIT_USAGE;
		}
		if (rest >= 2)
			name = argv[optind + 1];
	}
	if (help && (list || (check && rest < 2))) {
		lab_usage(stdout);
		return 0;
	}
	if (list) {
		if (rest > 1) {
			lab_err("list: unexpected '%s'", argv[optind + 1]);
			return LAB_EXIT_USAGE;
		}
		for (unsigned i = 0; i < sfs_labs_count; i++)
			printf("%-8s  %d levels  %s\n", sfs_labs[i]->name,
			       sfs_labs[i]->levels, sfs_labs[i]->summary);
		return 0;
	}
	lab = sfs_lab_find(name);
	if (!lab)
		return lab_unknown(name);
	if (help) {
		lab_help(lab);
		return 0;
	}
	if (check) {
		if (rest != 3) {
			lab_err(rest < 3 ? "check %s: no answer file (usage: "
					   "simfs lab check NAME [--seed N] "
					   "[--level L] FILE)"
					 : "check %s: too many arguments",
				name);
			return LAB_EXIT_USAGE;
		}
		file = argv[optind + 2];
		if (answers || mount_dir || image || script) {
			lab_err("check takes --seed, --level and "
				"--show-answers only");
			return LAB_EXIT_USAGE;
		}
	} else if (rest > 1) {
		lab_err("%s: unexpected '%s' (see simfs lab --help)", name,
			argv[optind + 1]);
		return LAB_EXIT_USAGE;
	} else if (show) {
		lab_err("--show-answers goes with simfs lab check");
		return LAB_EXIT_USAGE;
	}
	if (image && !mount_dir) {
		lab_err("--image goes with --mount DIR");
		return LAB_EXIT_USAGE;
	}
	if ((mount_dir != NULL) + script + answers > 1) {
		lab_err("--mount, --script and --answers exclude each other "
			"(--answers after the mount gives it away)");
		return LAB_EXIT_USAGE;
	}
	if ((int)level > lab->levels) {
		lab_err("bad level %d for lab %s (it has levels 1 to %d)",
			(int)level, lab->name, lab->levels);
		return LAB_EXIT_USAGE;
	}
	p.level = (int)level;
	if (sfs_parse_only())
		return 0;
	if (mount_dir && lab_mount_precheck(mount_dir, image))
		return LAB_EXIT_USAGE;

	sfs_lab_sheet_init(&sh);
	rc = lab->build(&p, &sh, &err);
	if (rc) {
		lab_err("%s: %s", lab->name, err ? err : g_strerror(-rc));
		g_free(err);
		sfs_lab_sheet_clear(&sh);
		return LAB_EXIT_WRONG;
	}
	if (check)
		rc = lab_check(lab, &p, &sh, file, show);
	else if (mount_dir)
		rc = lab_mount(lab, &p, &sh, mount_dir, image);
	else if (script) {
		if (!sh.mount_script->len) {
			lab_err("lab %s has no --mount part", lab->name);
			rc = LAB_EXIT_USAGE;
		} else
			fputs(sh.mount_script->str, stdout);
	} else
		lab_print_sheet(lab, &p, &sh, answers);
	sfs_lab_sheet_clear(&sh);
	return rc;
}
