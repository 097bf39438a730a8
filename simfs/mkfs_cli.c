/*
 * mkfs_cli.c - simfs mkfs's options as a table (mkfs_cli.h): each row is
 * one option (its letter and/or long name, the name of its argument, its
 * help text and the function that applies it), and the getopt loop, the
 * option words of simfs run --mkfs and experiment files, and the --help
 * text (hence simfs-mkfs(1) and the bash completion, manpage.c) are all
 * made from it.  A row with no setter only adds a help entry to the
 * option above it (-J's two forms).
 */
#include <errno.h>
#include <getopt.h>
#include <string.h>

#include <glib.h>

#include "config.h"
#include "mkfs_cli.h"

/* Strict decimal unsigned integer; -EINVAL on junk or overflow. */
static int sfs_parse_u64(const char *text, uint64_t *out)
{
	uint64_t v = 0;

	if (!text || !g_ascii_isdigit(*text))
		return -EINVAL;
	for (; *text; text++) {
		if (!g_ascii_isdigit(*text))
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(*text - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*text - '0');
	}
	*out = v;
	return 0;
}

/* Apply one option's argument: 0, or -EINVAL with a message in *err. */
typedef int (*mkfs_opt_set)(struct sfs_mkfs_cli *c, const char *arg,
			    char **err);

struct mkfs_opt {
	char key;	  /* short option letter; 0: long only */
	const char *name; /* long name (without "--"); NULL: short only */
	const char *arg;  /* the argument's name in the help; NULL: none */
	const char *help; /* help text; '\n' starts a continuation line */
	mkfs_opt_set set; /* NULL: a further help entry of the row above */
};

#define MKFS_HELP_COL 22 /* help text column */

static int mkfs_opt_block_size(struct sfs_mkfs_cli *c, const char *arg,
			       char **err)
{
	uint64_t v;

	if (sfs_parse_size(arg, &v) < 0 ||
	    (v != 1024 && v != 2048 && v != 4096)) {
		*err = g_strdup_printf(
		    "bad block size '%s' (1024, 2048 or 4096)", arg);
		return -EINVAL;
	}
	c->block_size = (uint32_t)v;
	return 0;
}

static int mkfs_opt_inode_ratio(struct sfs_mkfs_cli *c, const char *arg,
				char **err)
{
	uint64_t v;

	if (sfs_parse_size(arg, &v) < 0 || v < 1024 || v > (64u << 20)) {
		*err = g_strdup_printf("bad bytes-per-inode '%s' (1024 to 64M)",
				       arg);
		return -EINVAL;
	}
	c->inode_ratio = (uint32_t)v;
	return 0;
}

static int mkfs_opt_inode_size(struct sfs_mkfs_cli *c, const char *arg,
			       char **err)
{
	uint64_t v;

	if (sfs_parse_u64(arg, &v) < 0 || (v != 128 && v != 256)) {
		*err = g_strdup_printf("bad inode size '%s' (128 or 256)", arg);
		return -EINVAL;
	}
	c->inode_size = (uint32_t)v;
	return 0;
}

static int mkfs_opt_flex_size(struct sfs_mkfs_cli *c, const char *arg,
			      char **err)
{
	uint64_t v;

	if (sfs_parse_u64(arg, &v) < 0 || v < 1 || v > (1u << 20) ||
	    (v & (v - 1))) {
		*err = g_strdup_printf(
		    "bad flex_bg size '%s' (a power of 2, 1 to 1048576)", arg);
		return -EINVAL;
	}
	c->log_flex = 0;
	while ((1ull << c->log_flex) < v)
		c->log_flex++;
	return 0;
}

static int mkfs_opt_reserved(struct sfs_mkfs_cli *c, const char *arg,
			     char **err)
{
	uint64_t v;

	if (sfs_parse_u64(arg, &v) < 0 || v > 50) {
		*err = g_strdup_printf("bad reserved percentage '%s' (0 to 50)",
				       arg);
		return -EINVAL;
	}
	c->p.reserved_pct = (uint32_t)v;
	return 0;
}

static int mkfs_opt_label(struct sfs_mkfs_cli *c, const char *arg, char **err)
{
	if (strlen(arg) > 16) {
		*err =
		    g_strdup_printf("label '%s' is longer than 16 bytes", arg);
		return -EINVAL;
	}
	g_strlcpy(c->p.label, arg, sizeof(c->p.label));
	return 0;
}

static int mkfs_opt_type(struct sfs_mkfs_cli *c, const char *arg, char **err)
{
	struct sfs_mkfs_params scratch = c->p;

	if (sfs_mkfs_set_type(&scratch, arg, 0, err))
		return -EINVAL;
	c->type = arg;
	return 0;
}

static int mkfs_opt_features(struct sfs_mkfs_cli *c, const char *arg,
			     char **err)
{
	char *all = c->features ? g_strconcat(c->features, ",", arg, NULL)
				: g_strdup(arg);

	g_free(c->features);
	c->features = all;
	return 0;
}

static int mkfs_opt_seed(struct sfs_mkfs_cli *c, const char *arg, char **err)
{
	uint64_t v;

	if (sfs_parse_u64(arg, &v) < 0) {
		*err = g_strdup_printf("bad seed '%s' (a decimal number)", arg);
		return -EINVAL;
	}
	c->p.seed = v;
	return 0;
}

static int mkfs_opt_journal(struct sfs_mkfs_cli *c, const char *arg, char **err)
{
	c->journal = true;
	c->journal_mid = true;
	return 0;
}

static int mkfs_opt_journal_opts(struct sfs_mkfs_cli *c, const char *arg,
				 char **err)
{
	gchar **kv = g_strsplit(arg, ",", -1);
	bool ok = kv[0] != NULL;

	for (int i = 0; kv[i] && ok; i++) {
		if (g_str_has_prefix(kv[i], "size="))
			ok =
			    sfs_parse_size(kv[i] + 5, &c->journal_bytes) == 0 &&
			    c->journal_bytes > 0;
		else if (g_str_has_prefix(kv[i], "device=") && kv[i][7]) {
			g_free(c->journal_path);
			c->journal_path = g_strdup(kv[i] + 7);
		} else
			ok = false;
	}
	g_strfreev(kv);
	if (!ok) {
		*err = g_strdup_printf(
		    "bad journal option '%s' (expected size=SIZE and/or "
		    "device=FILE)",
		    arg);
		return -EINVAL;
	}
	return mkfs_opt_journal(c, NULL, err);
}

static int mkfs_opt_force(struct sfs_mkfs_cli *c, const char *arg, char **err)
{
	c->force = true;
	return 0;
}

static int mkfs_opt_preset(struct sfs_mkfs_cli *c, const char *arg, char **err)
{
	const struct sfs_config_preset *preset = sfs_config_preset_find(arg);

	if (!preset) {
		*err = g_strdup_printf(
		    "unknown preset '%s' (simfs mount --list-presets)", arg);
		return -EINVAL;
	}
	if (preset->journaled)
		mkfs_opt_journal(c, NULL, err);
	return 0;
}

static int mkfs_opt_help(struct sfs_mkfs_cli *c, const char *arg, char **err)
{
	c->help = true;
	return 0;
}

static const struct mkfs_opt mkfs_opts[] = {
    {'b', NULL, "BLOCKSIZE", "1024, 2048 or 4096 (default 4096)",
     mkfs_opt_block_size},
    {'i', NULL, "BYTES_PER_INODE",
     "one inode per this many bytes (default "
     "16384)",
     mkfs_opt_inode_ratio},
    {'I', NULL, "INODE_SIZE", "128 or 256 bytes (default 256)",
     mkfs_opt_inode_size},
    {'m', NULL, "RESERVED_PCT", "blocks reserved for root, % (default 5)",
     mkfs_opt_reserved},
    {'L', NULL, "LABEL", "volume label, at most 16 bytes", mkfs_opt_label},
    {'t', NULL, "TYPE",
     "ext2, ext3 or ext4 with mke2fs.conf's defaults for the\n"
     "type and size (features; small, below 512M: 1K blocks,\n"
     "-i 4096); without -t: ext2, 4K blocks, the features -O\n"
     "names; -b, -i, -I, -O apply on top, -O in order",
     mkfs_opt_type},
    {'G', NULL, "GROUPS",
     "groups per flex group with flex_bg: a power of 2\n"
     "(default 16)",
     mkfs_opt_flex_size},
    {'O', NULL, "[^]dir_index",
     "htree directories on (off by default); also\n"
     "[^]has_journal, [^]resize_inode, [^]extent,\n"
     "[^]flex_bg, [^]64bit, [^]huge_file, [^]dir_nlink,\n"
     "[^]extra_isize, [^]metadata_csum, [^]uninit_bg\n"
     "(mke2fs spellings, comma-separated); the other ext4\n"
     "layouts (meta_bg, bigalloc, ...) are refused",
     mkfs_opt_features},
    {0, "seed", "N", "derive UUID and hash seed from N (default: random)",
     mkfs_opt_seed},
    {'j', NULL, NULL,
     "add an internal journal (ext3): its size from mke2fs's\n"
     "table for the filesystem's size",
     mkfs_opt_journal},
    {'J', NULL, "size=SIZE",
     "the same with a journal of SIZE (at least 1024 blocks)",
     mkfs_opt_journal_opts},
    {'J', NULL, "device=FILE[,size=SIZE]",
     "an external journal on FILE (created with SIZE,\n"
     "default 32M, if missing); mount with -o journal_dev=FILE",
     NULL},
    {'F', NULL, NULL, "overwrite an existing ext2/3/4 filesystem",
     mkfs_opt_force},
    {0, "preset", "NAME",
     "the image a mount preset needs (-j for the journaled\n"
     "ones; simfs mount --list-presets)",
     mkfs_opt_preset},
    {'h', "help", NULL, "this help", mkfs_opt_help},
};

/*
 * The parameters the options ask for on a filesystem of size_bytes (0:
 * not known yet), in mke2fs's order whatever the command line's: -t
 * TYPE's defaults for that size, then -b, -i, -I, then the -O lists, then
 * -j/-J/--preset's journal.  0, or -EINVAL with a message in *err.
 */
int sfs_mkfs_cli_resolve(const struct sfs_mkfs_cli *c, uint64_t size_bytes,
			 struct sfs_mkfs_params *p, char **err)
{
	*p = c->p;
	if (c->type && sfs_mkfs_set_type(p, c->type, size_bytes, err))
		return -EINVAL;
	if (c->block_size)
		p->block_size = c->block_size;
	if (c->inode_ratio)
		p->inode_ratio = c->inode_ratio;
	if (c->inode_size)
		p->inode_size = c->inode_size;
	if (c->features && sfs_mkfs_parse_features(p, c->features, err))
		return -EINVAL;
	if (c->journal)
		p->has_journal = true;
	p->journal_external = c->journal_path != NULL;
	if (c->journal_bytes && p->block_size)
		p->journal_blocks = (uint32_t)MAX(
		    1, MIN(c->journal_bytes / p->block_size, UINT32_MAX));
	if (c->log_flex >= 0) {
		if (!p->flex_bg) {
			*err = g_strdup("mkfs: -G needs the flex_bg feature "
					"(-O flex_bg or -t ext4)");
			return -EINVAL;
		}
		p->log_groups_per_flex = (uint32_t)c->log_flex;
	}
	return sfs_mkfs_check_features(p, err);
}

/* One help entry: "  TERM  text", the text from column MKFS_HELP_COL. */
static void sfs_mkfs_usage_entry(FILE *out, const struct mkfs_opt *o)
{
	GString *term = g_string_new(NULL);
	gchar **lines = g_strsplit(o->help, "\n", -1);

	if (o->key && o->name)
		g_string_printf(term, "-%c, --%s", o->key, o->name);
	else if (o->key)
		g_string_printf(term, "-%c", o->key);
	else
		g_string_printf(term, "    --%s", o->name);
	if (o->arg)
		g_string_append_printf(term, " %s", o->arg);
	if (term->len + 2 + 2 > MKFS_HELP_COL)
		fprintf(out, "  %s\n%*s%s\n", term->str, MKFS_HELP_COL, "",
			lines[0]);
	else
		fprintf(out, "  %-*s%s\n", MKFS_HELP_COL - 2, term->str,
			lines[0]);
	for (int i = 1; lines[i]; i++)
		fprintf(out, "%*s%s\n", MKFS_HELP_COL, "", lines[i]);
	g_strfreev(lines);
	g_string_free(term, TRUE);
}

void sfs_mkfs_cli_usage(FILE *out)
{
	for (size_t i = 0; i < G_N_ELEMENTS(mkfs_opts); i++)
		sfs_mkfs_usage_entry(out, &mkfs_opts[i]);
}

/*
 * The getopt_long arguments made from mkfs_opts: the short-option string
 * (g_free it) and the long options (g_free it); a long-only option's val
 * is 256 + its row.
 */
static char *sfs_mkfs_getopt_spec(struct option **longopts_out)
{
	GString *s = g_string_new(":");
	struct option *lo = g_new0(struct option, G_N_ELEMENTS(mkfs_opts) + 1);
	size_t n = 0;

	for (size_t i = 0; i < G_N_ELEMENTS(mkfs_opts); i++) {
		const struct mkfs_opt *o = &mkfs_opts[i];

		if (!o->set)
			continue;
		if (o->key) {
			g_string_append_c(s, o->key);
			if (o->arg)
				g_string_append_c(s, ':');
		}
		if (o->name) {
			lo[n].name = o->name;
			lo[n].has_arg =
			    o->arg ? required_argument : no_argument;
			lo[n].val = o->key ? o->key : 256 + (int)i;
			n++;
		}
	}
	*longopts_out = lo;
	return g_string_free(s, FALSE);
}

/* The row that getopt_long's return value c names, or NULL. */
static const struct mkfs_opt *sfs_mkfs_opt_find(int c)
{
	if (c >= 256 && c < 256 + (int)G_N_ELEMENTS(mkfs_opts))
		return &mkfs_opts[c - 256];
	for (size_t i = 0; i < G_N_ELEMENTS(mkfs_opts); i++)
		if (mkfs_opts[i].set && mkfs_opts[i].key == c)
			return &mkfs_opts[i];
	return NULL;
}

void sfs_mkfs_cli_init(struct sfs_mkfs_cli *c)
{
	memset(c, 0, sizeof(*c));
	sfs_mkfs_defaults(&c->p);
	c->log_flex = -1;
}

void sfs_mkfs_cli_clear(struct sfs_mkfs_cli *c)
{
	g_free(c->features);
	g_free(c->journal_path);
	g_strfreev(c->words);
	c->features = c->journal_path = NULL;
	c->words = NULL;
	c->type = NULL;
}

int sfs_mkfs_cli_parse(struct sfs_mkfs_cli *c, int argc, char **argv,
		       char **err)
{
	struct option *longopts;
	char *shortopts = sfs_mkfs_getopt_spec(&longopts);
	int ch, rc = 0;

	opterr = 0;
	optind = 0;
	while (rc == 0 && !c->help &&
	       (ch = getopt_long(argc, argv, shortopts, longopts, NULL)) !=
		   -1) {
		const struct mkfs_opt *o = sfs_mkfs_opt_find(ch);
		const char *arg = argv[optind - 1];

		if (o) {
			rc = o->set(c, optarg, err);
		} else {
			rc = -EINVAL;
			if (ch == ':')
				*err = g_strdup_printf(
				    "option '%s' needs a value (see simfs "
				    "mkfs --help)",
				    arg);
			else if (optopt)
				*err = g_strdup_printf(
				    "unknown option '-%c' (see simfs mkfs "
				    "--help)",
				    optopt);
			else
				*err = g_strdup_printf(
				    "unknown option '%s' (see simfs mkfs "
				    "--help)",
				    arg);
		}
	}
	g_free(shortopts);
	g_free(longopts);
	return rc;
}

int sfs_mkfs_cli_parse_words(struct sfs_mkfs_cli *c, const char *words,
			     char **err)
{
	GError *gerr = NULL;
	char **argv;
	int argc, rc;

	if (!g_shell_parse_argv(words, &argc, &argv, &gerr)) {
		/* an empty string is no mistake: no option at all */
		bool empty = gerr->code == G_SHELL_ERROR_EMPTY_STRING;

		if (!empty)
			*err = g_strdup_printf("mkfs options '%s': %s", words,
					       gerr->message);
		g_error_free(gerr);
		return empty ? 0 : -EINVAL;
	}
	/* getopt's argv[0], then the words */
	g_strfreev(c->words);
	c->words = g_new0(char *, (size_t)argc + 2);
	c->words[0] = g_strdup("mkfs");
	memcpy(c->words + 1, argv, sizeof(char *) * (size_t)argc);
	g_free(argv); /* the strings now belong to c->words */
	argc++;
	rc = sfs_mkfs_cli_parse(c, argc, c->words, err);
	if (rc == 0 && optind < argc) {
		*err = g_strdup_printf("'%s' is not a simfs mkfs option (the "
				       "image is made for you: no IMAGE or "
				       "SIZE)",
				       c->words[optind]);
		rc = -EINVAL;
	} else if (rc == 0 && (c->force || c->help || c->journal_path)) {
		*err = g_strdup_printf("%s: only for simfs mkfs itself",
				       c->force	 ? "-F"
				       : c->help ? "-h"
						 : "-J device=");
		rc = -EINVAL;
	}
	return rc;
}

int sfs_mkfs_cli_parse_for(struct sfs_mkfs_cli *c, const char *words,
			   const char *preset, uint64_t size_bytes, char **err)
{
	const struct sfs_config_preset *pr = sfs_config_preset_find(preset);
	struct sfs_mkfs_params p;
	char *why = NULL;
	int rc;

	if (strcmp(words, "preset") == 0) {
		if (!pr) {
			*err = g_strdup("'preset' needs a preset= in the "
					"mount options");
			return -EINVAL;
		}
		words = pr->mkfs;
	}
	rc = sfs_mkfs_cli_parse_words(c, words, &why);
	if (rc == 0)
		rc = sfs_mkfs_cli_resolve(c, size_bytes, &p, &why);
	if (rc) {
		/* sfs_mkfs's messages name their command: ours names it */
		*err =
		    g_strdup(g_str_has_prefix(why, "mkfs: ") ? why + 6 : why);
		g_free(why);
	}
	return rc;
}
