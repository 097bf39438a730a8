/*
 * manpage.c - simfs(1), simfs-CMD(1), simfs-options(7) and the bash
 * completion, written from the program's own tables.
 *
 * Hidden modes of `simfs help`, run by meson at build time:
 *   simfs help --man PAGE         roff of PAGE (simfs, simfs-CMD,
 * simfs-options) simfs help --man-list         the page files, "simfs.1" ...,
 * one a line simfs help --bash-completion  the completion script
 *
 * Where each page comes from:
 *   simfs(1)          `simfs --help` (synopsis, commands), plus the prose
 *                     below (mounting from fstab, FILES, EXAMPLES)
 *   simfs-CMD(1)      the command's --help, captured by running it
 *                     (man_capture), then parsed (man_parse) and written
 *                     as roff (man_write_help): the very text --help prints
 *   simfs-options(7)  the knob table (sfs_config_doc_nth), the presets, the
 *                     allocator, journal, device-model, scheduler and CPU
 *                     registries, walked here
 *   completion        the commands, the options and actions ("plot iolog")
 *                     each --help names, the knob table's names and
 *                     choices, the models' knobs
 *
 * The parser relies on the layout every usage text keeps (and fails the
 * build when the first rule is broken):
 *   1. the text starts with "usage: simfs ..." lines, continued by indented
 *      lines, up to a blank line: the SYNOPSIS;
 *   2. a line at column 0 ending in ':' after a blank line, and followed by
 *      an indented line, is a heading ("options:" becomes OPTIONS);
 *   3. a line indented 1 to 7 columns is a list entry, "TERM  text": the
 *      term ends at the first two spaces (without two spaces: the whole
 *      line when the text starts on the next line, else the first word);
 *      lines indented 8 or more continue the entry's text;
 *   4. anything else at column 0 is running text, filled.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "alloc.h"
#include "config.h"
#include "cpumodel.h"
#include "devmodel.h"
#include "journal.h"
#include "manpage.h"
#include "sched.h"

#ifndef SFS_VERSION
#define SFS_VERSION "0.1.0"
#endif
#ifndef SFS_DOCDIR
#define SFS_DOCDIR "/usr/local/share/doc/simfs"
#endif

#define MAN_CONT_INDENT 8 /* rule 3: continuation lines start here or later */

enum man_kind {
	MAN_SYNOPSIS, /* a usage line, "usage: " taken off */
	MAN_HEADING,  /* "options:" without the ':' */
	MAN_TEXT,     /* a line of running text */
	MAN_TERM,     /* a list entry's term; its text follows as MAN_CONT */
	MAN_CONT,     /* text of the latest entry */
	MAN_BREAK,    /* a blank line */
};

struct man_line {
	enum man_kind kind;
	char *text; /* without the indentation */
};

/* ------------------------------------------------------------ parsing */

static void man_line_free(gpointer p)
{
	struct man_line *l = p;

	g_free(l->text);
	g_free(l);
}

static void man_add(GPtrArray *out, enum man_kind kind, const char *text,
		    size_t len)
{
	struct man_line *l = g_new0(struct man_line, 1);

	l->kind = kind;
	l->text = g_strndup(text, len);
	g_strchomp(l->text);
	g_ptr_array_add(out, l);
}

static size_t man_indent(const char *s)
{
	size_t i = 0;

	while (s[i] == ' ')
		i++;
	return i;
}

/*
 * Split a --help text into lines by the rules at the head of the file.
 * NULL, with *err, if it does not start with a usage line.
 */
static GPtrArray *man_parse(const char *help, char **err)
{
	GPtrArray *out = g_ptr_array_new_with_free_func(man_line_free);
	char **lines = g_strsplit(help, "\n", -1);
	bool in_entry = false, after_blank = true;
	size_t i = 0;

	if (!lines[0] || !g_str_has_prefix(lines[0], "usage: simfs")) {
		*err = g_strdup_printf("the help text does not start with "
				       "\"usage: simfs\": '%.40s'",
				       lines[0] ? lines[0] : "");
		g_strfreev(lines);
		g_ptr_array_free(out, TRUE);
		return NULL;
	}
	for (; lines[i] && *lines[i]; i++) {
		const char *s = lines[i];

		if (i > 0 && s[0] != ' ')
			break; /* the synopsis ends at a blank line */
		if (g_str_has_prefix(s, "usage: "))
			s += 7;
		else if (man_indent(s) >= 7)
			s += 7; /* keep what is indented further */
		else
			s += man_indent(s);
		man_add(out, MAN_SYNOPSIS, s, strlen(s));
	}
	for (; lines[i]; i++) {
		const char *s = lines[i];
		size_t ind = man_indent(s), len = strlen(s);

		if (ind == len) {
			man_add(out, MAN_BREAK, "", 0);
			in_entry = false;
			after_blank = true;
			continue;
		}
		if (ind == 0 && after_blank && s[len - 1] == ':' && len < 60 &&
		    lines[i + 1] && lines[i + 1][0] == ' ') {
			man_add(out, MAN_HEADING, s, len - 1);
			in_entry = false;
		} else if (ind == 0 || (ind >= MAN_CONT_INDENT && !in_entry)) {
			man_add(out, MAN_TEXT, s + ind, len - ind);
			in_entry = false;
		} else if (ind >= MAN_CONT_INDENT) {
			man_add(out, MAN_CONT, s + ind, len - ind);
		} else {
			const char *gap = strstr(s + ind, "  ");

			if (gap) {
				man_add(out, MAN_TERM, s + ind,
					(size_t)(gap - s) - ind);
				gap += man_indent(gap);
				man_add(out, MAN_CONT, gap, strlen(gap));
			} else if (lines[i + 1] && man_indent(lines[i + 1]) >=
						       MAN_CONT_INDENT) {
				man_add(out, MAN_TERM, s + ind, len - ind);
			} else if ((gap = strchr(s + ind, ' '))) {
				/* "name text": a term too wide for its
				 * column */
				man_add(out, MAN_TERM, s + ind,
					(size_t)(gap - s) - ind);
				man_add(out, MAN_CONT, gap + 1,
					strlen(gap + 1));
			} else {
				man_add(out, MAN_TERM, s + ind, len - ind);
			}
			in_entry = true;
		}
		after_blank = false;
	}
	g_strfreev(lines);
	return out;
}

/*
 * Run cmd->run(2, {name, "--help"}) with stdout sent to a temporary file
 * and return what it printed (g_free); NULL, with *err, if it fails.
 */
static char *man_capture(const struct sfs_cmd *cmd, void (*usage)(FILE *),
			 char **err)
{
	char *argv[] = {(char *)cmd->name, (char *)"--help", NULL};
	GString *text = g_string_new(NULL);
	FILE *tmp = tmpfile();
	char buf[4096];
	int saved = -1, rc = 0;
	size_t n;

	if (!tmp) {
		*err = g_strdup_printf("tmpfile: %s", g_strerror(errno));
		goto fail;
	}
	if (usage) {
		usage(tmp);
	} else {
		fflush(stdout);
		saved = dup(STDOUT_FILENO);
		if (saved < 0 || dup2(fileno(tmp), STDOUT_FILENO) < 0) {
			*err = g_strdup_printf("dup: %s", g_strerror(errno));
			goto fail;
		}
		optind = 0;
		rc = cmd->run(2, argv);
		fflush(stdout);
		dup2(saved, STDOUT_FILENO);
		close(saved);
		saved = -1;
	}
	if (rc != 0) {
		*err = g_strdup_printf("simfs %s --help exited with %d",
				       cmd->name, rc);
		goto fail;
	}
	rewind(tmp);
	while ((n = fread(buf, 1, sizeof(buf), tmp)) > 0)
		g_string_append_len(text, buf, (gssize)n);
	fclose(tmp);
	return g_string_free(text, FALSE);
fail:
	if (saved >= 0) {
		dup2(saved, STDOUT_FILENO);
		close(saved);
	}
	if (tmp)
		fclose(tmp);
	g_string_free(text, TRUE);
	return NULL;
}

/* ------------------------------------------------------- roff output */

/* text as roff: backslashes, minus signs, non-ASCII as \[uXXXX]; a
 * break point after a comma in "a=1,b=2" lists. */
static void man_esc(GString *out, const char *text)
{
	for (const char *p = text; *p;) {
		gunichar c = g_utf8_get_char_validated(p, -1);

		if (c == (gunichar)-1 || c == (gunichar)-2) {
			g_string_append_c(out, '?');
			p++;
			continue;
		}
		if (c == '\\')
			g_string_append(out, "\\e");
		else if (c == '-')
			g_string_append(out, "\\-");
		else if (c == ',' && p[1] && p[1] != ' ')
			g_string_append(out, ",\\:");
		else if (c >= 0x80)
			g_string_append_printf(out, "\\[u%04X]", c);
		else
			g_string_append_c(out, (char)c);
		p = g_utf8_next_char(p);
	}
}

/* One input line of running text (a leading '.' or '\'' made literal). */
static void man_text(GString *out, const char *text)
{
	if (*text == '.' || *text == '\'')
		g_string_append(out, "\\&");
	man_esc(out, text);
	g_string_append_c(out, '\n');
}

/* A list term: options in bold, upper-case placeholders in italics. */
static void man_term(GString *out, const char *term)
{
	char **words = g_strsplit(term, " ", -1);

	g_string_append(out, ".TP\n");
	for (int i = 0; words[i]; i++) {
		const char *w = words[i];
		bool meta = g_ascii_isupper(*w);

		if (i)
			g_string_append_c(out, ' ');
		g_string_append(out, meta ? "\\fI" : "\\fB");
		if (i == 0 && (*w == '.' || *w == '\''))
			g_string_append(out, "\\&");
		man_esc(out, w);
		g_string_append(out, "\\fR");
	}
	g_string_append_c(out, '\n');
	g_strfreev(words);
}

static void man_head(GString *out, const char *page, int section,
		     const char *name_line)
{
	char *upper = g_ascii_strup(page, -1);

	g_string_append_printf(out,
			       ".\\\" Generated by `simfs help --man %s` from "
			       "the program's tables; do not edit.\n",
			       page);
	g_string_append_printf(out,
			       ".TH %s %d \"\" \"simfs %s\" "
			       "\"simfs manual\"\n",
			       upper, section, SFS_VERSION);
	/* ragged right, no hyphenation: option names stay whole */
	g_string_append(out, ".ad l\n.nh\n.SH NAME\n");
	man_esc(out, page);
	g_string_append(out, " \\- ");
	man_esc(out, name_line);
	g_string_append_c(out, '\n');
	g_free(upper);
}

/* The parsed --help text as SYNOPSIS, DESCRIPTION and its headings. */
static void man_write_help(GString *out, GPtrArray *lines)
{
	bool para = false, synopsis = false, described = false;

	for (guint i = 0; i < lines->len; i++) {
		const struct man_line *l = lines->pdata[i];

		if (l->kind == MAN_SYNOPSIS) {
			const char *sp;

			if (!synopsis)
				g_string_append(out, ".SH SYNOPSIS\n.nf\n");
			synopsis = true;
			/* "simfs CMD" in bold, as the page's own name */
			sp = g_str_has_prefix(l->text, "simfs ")
				 ? strchr(l->text + 6, ' ')
				 : NULL;
			if (sp) {
				char *name =
				    g_strndup(l->text, (size_t)(sp - l->text));

				g_string_append(out, "\\fB");
				man_esc(out, name);
				g_string_append(out, "\\fR");
				man_esc(out, sp);
				g_string_append_c(out, '\n');
				g_free(name);
			} else {
				man_text(out, l->text);
			}
			continue;
		}
		if (synopsis) {
			g_string_append(out, ".fi\n");
			synopsis = false;
		}
		if (!described && l->kind != MAN_HEADING) {
			g_string_append(out, ".SH DESCRIPTION\n");
			described = true;
		}
		switch (l->kind) {
		case MAN_HEADING:
			if (strcmp(l->text, "options") == 0 ||
			    strcmp(l->text, "commands") == 0) {
				char *up = g_ascii_strup(l->text, -1);

				g_string_append_printf(out, ".SH %s\n", up);
				g_free(up);
			} else {
				char *t = g_strdup(l->text);

				if (!g_str_has_prefix(t, "simfs"))
					t[0] = g_ascii_toupper(t[0]);
				g_string_append(out, ".SS \"");
				man_esc(out, t);
				g_string_append(out, "\"\n");
				g_free(t);
			}
			described = true;
			para = false;
			break;
		case MAN_TEXT:
			if (!para)
				g_string_append(out, ".PP\n");
			para = true;
			man_text(out, l->text);
			break;
		case MAN_TERM:
			man_term(out, l->text);
			para = false;
			break;
		case MAN_CONT:
			man_text(out, l->text);
			break;
		case MAN_BREAK:
			para = false;
			break;
		case MAN_SYNOPSIS:
			break;
		}
	}
	if (synopsis)
		g_string_append(out, ".fi\n");
}

/* .SH SEE ALSO with the given references, "name(s)" each. */
static void man_see_also(GString *out, const char *const *refs, size_t n)
{
	g_string_append(out, ".SH SEE ALSO\n");
	for (size_t i = 0; i < n; i++) {
		const char *paren = strchr(refs[i], '(');
		char *name = g_strndup(refs[i], (size_t)(paren - refs[i]));

		g_string_append(out, "\\fB");
		man_esc(out, name);
		g_string_append_printf(out, "\\fR%s%s\n", paren,
				       i + 1 < n ? "," : "");
		g_free(name);
	}
	g_string_append(out, ".PP\nThe user guide and the design notes: ");
	man_esc(out, SFS_DOCDIR);
	g_string_append(out, "/doc/user-guide.md and the other files "
			     "there.\n");
}

static const char man_exit_status[] =
    ".SH EXIT STATUS\n"
    "0 on success, 1 when the command failed, 2 for a usage error.\n"
    "Errors are one line on standard error, \"simfs COMMAND: reason\".\n";

/* The commands whose -o takes simfs knobs: their help says "-o OPTS". */
static bool man_takes_knobs(const char *help)
{
	return strstr(help, "-o OPTS") != NULL;
}

static int man_cmd_page(GString *out, const struct sfs_cmd *cmds, size_t n,
			const struct sfs_cmd *cmd)
{
	char *err = NULL, *help = man_capture(cmd, NULL, &err);
	char *page = g_strconcat("simfs-", cmd->name, NULL);
	GPtrArray *lines = help ? man_parse(help, &err) : NULL;
	GPtrArray *refs = g_ptr_array_new_with_free_func(g_free);

	if (!lines) {
		fprintf(stderr, "simfs help: --man %s: %s\n", page, err);
		g_free(err);
		g_free(help);
		g_free(page);
		g_ptr_array_free(refs, TRUE);
		return 1;
	}
	man_head(out, page, 1, cmd->summary);
	man_write_help(out, lines);
	g_string_append(out, man_exit_status);
	g_ptr_array_add(refs, g_strdup("simfs(1)"));
	if (man_takes_knobs(help))
		g_ptr_array_add(refs, g_strdup("simfs-options(7)"));
	/* the other commands whose name the help text mentions */
	for (size_t i = 0; i + 1 < n; i++) {
		char *ref = g_strconcat("simfs ", cmds[i].name, NULL);

		if (&cmds[i] != cmd && strstr(help, ref))
			g_ptr_array_add(
			    refs, g_strdup_printf("simfs-%s(1)", cmds[i].name));
		g_free(ref);
	}
	man_see_also(out, (const char *const *)refs->pdata, refs->len);
	g_ptr_array_free(refs, TRUE);
	g_ptr_array_free(lines, TRUE);
	g_free(help);
	g_free(page);
	return 0;
}

static int man_main_page(GString *out, const struct sfs_cmd *cmds, size_t n,
			 void (*usage)(FILE *))
{
	char *err = NULL, *help = man_capture(&cmds[n - 1], usage, &err);
	GPtrArray *lines = help ? man_parse(help, &err) : NULL;
	GPtrArray *refs = g_ptr_array_new_with_free_func(g_free);

	if (!lines) {
		fprintf(stderr, "simfs help: --man simfs: %s\n", err);
		g_free(err);
		g_free(help);
		g_ptr_array_free(refs, TRUE);
		return 1;
	}
	man_head(out, "simfs", 1, SFS_TAGLINE);
	man_write_help(out, lines);
	g_string_append(
	    out,
	    ".PP\n"
	    "It keeps real ext2, ext3 and ext4 images, readable by e2fsck and "
	    "the kernel, and models the design choices of those filesystems "
	    "one by one: block placement, the journal, write-back, the disk "
	    "and its scheduler.  A mount runs the engine through FUSE; "
	    "\\fBsimfs run\\fR and \\fBsimfs bench\\fR run it in virtual "
	    "time, where the same command gives the same figures on every "
	    "machine, and \\fBsimfs crash\\fR cuts the power under it.\n"
	    ".PP\n"
	    "Each command has its own page, \\fBsimfs\\-\\fICOMMAND\\fR(1); "
	    "the options of a filesystem (\\fB\\-o\\fR of \\fBsimfs mount\\fR, "
	    "\\fBsimfs run\\fR and \\fBsimfs crash\\fR) are listed in "
	    "\\fBsimfs\\-options\\fR(7).\n"
	    ".SH MOUNTING FROM FSTAB\n"
	    "\\fBsimfs \\fIIMAGE MOUNTPOINT\\fR [\\fB\\-o \\fIOPTS\\fR] is "
	    "\\fBsimfs mount\\fR: the form \\fBmount.fuse3\\fR(8) runs for "
	    "\\fBmount \\-t fuse.simfs\\fR and for fstab lines such as\n"
	    ".PP\n.nf\n"
	    "  /srv/ext3.img  /mnt/lab  fuse.simfs  preset=ext3,noauto  0  0\n"
	    ".fi\n"
	    ".PP\n"
	    "The first word is taken as an image only when it is no command "
	    "and names an existing file or contains a '/'.\n"
	    ".SH FILES\n"
	    ".TP\n\\fIMOUNTPOINT\\fB/.simfs/stats\\fR, \\fBstats.txt\\fR\n"
	    "the live statistics of a mount, as JSON and as a table "
	    "(\\fBsimfs stats\\fR).\n"
	    ".TP\n\\fIMOUNTPOINT\\fB/.simfs/config\\fR\n"
	    "the knobs in effect; writing \\fIKNOB\\fB=\\fIVALUE\\fR to it "
	    "changes the ones that may change while mounted "
	    "(\\fBsimfs\\-options\\fR(7)).\n"
	    ".TP\n\\fIMOUNTPOINT\\fB/.simfs/last_error\\fR\n"
	    "the reason of the latest filesystem error.\n"
	    ".TP\n\\fIMOUNTPOINT\\fB/.simfs/sync\\fR\n"
	    "written by \\fBsimfs sync\\fR to write everything back.\n"
	    ".SH EXAMPLES\n"
	    ".nf\n"
	    "simfs mkfs \\-\\-preset ext3 lab.img 1G\n"
	    "simfs mount \\-o preset=ext3,device=hdd\\-2009,stats=run.json "
	    "lab.img /mnt/lab\n"
	    "cp \\-r /usr/include /mnt/lab && simfs sync /mnt/lab\n"
	    "simfs umount /mnt/lab\n"
	    "simfs stats run.json\n"
	    "simfs run \\-w untar \\-o preset=ext4\n"
	    ".fi\n");
	g_string_append(out, man_exit_status);
	for (size_t i = 0; i + 1 < n; i++)
		g_ptr_array_add(refs,
				g_strdup_printf("simfs-%s(1)", cmds[i].name));
	g_ptr_array_add(refs, g_strdup("simfs-options(7)"));
	g_ptr_array_add(refs, g_strdup("mount.fuse3(8)"));
	g_ptr_array_add(refs, g_strdup("fusermount3(1)"));
	g_ptr_array_add(refs, g_strdup("e2fsck(8)"));
	man_see_also(out, (const char *const *)refs->pdata, refs->len);
	g_ptr_array_free(refs, TRUE);
	g_ptr_array_free(lines, TRUE);
	g_free(help);
	return 0;
}

/* A size for a man page: "1M", "4K", or bytes. */
static char *man_size(uint64_t v)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (v && v % 1024 == 0 && u + 1 < 4) {
		v /= 1024;
		u++;
	}
	if (u < 0 || v > 99999) /* no round unit: bytes */
		return g_strdup_printf("%" G_GUINT64_FORMAT,
				       v << (10 * (u + 1)));
	return g_strdup_printf("%" G_GUINT64_FORMAT "%c", v, units[u]);
}

/* ".TP KEY=VALUE" and the help of a model's knob (devmodel.h). */
static void man_model_knob(GString *out, const struct sfs_knob *k)
{
	g_string_append(out, ".TP\n\\fB");
	man_esc(out, k->key);
	g_string_append(out, "=\\fIVALUE\\fR\n");
	man_text(out, k->help);
	g_string_append(out, ".br\nDefault ");
	man_esc(out, k->def);
	switch (k->type) {
	case SFS_KNOB_DOUBLE:
		g_string_append_printf(
		    out, "; a number from %g to %g%s", k->min, k->max,
		    strcmp(k->def, "auto") == 0 ? ", or auto" : "");
		break;
	case SFS_KNOB_U64:
	case SFS_KNOB_U32:
		g_string_append_printf(out, "; an integer from %.0f to %.0f",
				       k->min, k->max);
		break;
	case SFS_KNOB_SIZE: {
		char *lo = man_size((uint64_t)k->min);
		char *hi = man_size((uint64_t)k->max);

		g_string_append_printf(out, "; a size from %s to %s", lo, hi);
		g_free(lo);
		g_free(hi);
		break;
	}
	case SFS_KNOB_BOOL:
		g_string_append(out, "; on or off");
		break;
	case SFS_KNOB_ENUM: {
		char *c = g_strdup(k->choices);

		g_strdelimit(c, "|", ',');
		g_string_append(out, "; one of ");
		man_esc(out, c);
		g_free(c);
		break;
	}
	}
	g_string_append(out, ".\n");
}

static void man_model_knobs(GString *out, const struct sfs_knob *knobs)
{
	for (const struct sfs_knob *k = knobs; k && k->key; k++)
		man_model_knob(out, k);
}

/* ".TP NAME" and its one-line help. */
static void man_named(GString *out, const char *name, const char *help)
{
	g_string_append(out, ".TP\n\\fB");
	man_esc(out, name);
	g_string_append(out, "\\fR\n");
	if (help)
		man_text(out, help);
}

static void man_config_knob(GString *out, const struct sfs_config_doc *d)
{
	g_string_append(out, ".TP\n\\fB");
	if (!d->metavar && !d->alias_of)
		g_string_append(out, "[no]");
	man_esc(out, d->name);
	if (d->metavar) {
		g_string_append(out, "=\\fI");
		man_esc(out, d->metavar);
	}
	g_string_append(out, "\\fR\n");
	if (d->alias_of) {
		g_string_append(out, "Another spelling of \\fB");
		man_esc(out, d->alias_of);
		g_string_append(out, "\\fR: ");
		man_text(out, d->help);
		return;
	}
	man_text(out, d->help);
	g_string_append(out, ".br\nDefault: ");
	man_esc(out, *d->def ? d->def : "none");
	if (d->has_range && (d->min || d->max < UINT32_MAX)) {
		char *lo = d->is_size
			       ? man_size(d->min)
			       : g_strdup_printf("%" G_GUINT64_FORMAT, d->min);
		char *hi = d->is_size
			       ? man_size(d->max)
			       : g_strdup_printf("%" G_GUINT64_FORMAT, d->max);

		if (d->max >= UINT32_MAX)
			g_string_append_printf(out, "; at least %s", lo);
		else
			g_string_append_printf(out, "; from %s to %s", lo, hi);
		g_free(lo);
		g_free(hi);
	}
	g_string_append(out, ".\n");
	if (d->choices) {
		g_string_append(out, ".br\nOne of: ");
		man_esc(out, d->choices);
		g_string_append(out, ".\n");
	}
	if (d->runtime)
		g_string_append(out,
				".br\nMay change while mounted "
				"(\\fIMOUNTPOINT\\fB/.simfs/config\\fR).\n");
}

static int man_options_page(GString *out)
{
	static const char *const refs[] = {
	    "simfs(1)",	      "simfs-mount(1)", "simfs-mkfs(1)",
	    "simfs-run(1)",   "simfs-crash(1)", "simfs-bench(1)",
	    "mount.fuse3(8)",
	};
	const struct sfs_config_preset *pr;
	const struct sfs_alloc_preset *al;
	const struct sfs_jnl_ops *jn;
	const struct sfs_devmodel_ops *dm;
	const struct sfs_devmodel_preset *dp;
	const struct sfs_cpu_preset *cp;
	struct sfs_config_doc d;
	const char *name, *help;

	man_head(out, "simfs-options", 7,
		 "the options of a simfs filesystem: its models and knobs");
	g_string_append(
	    out,
	    ".SH SYNOPSIS\n.nf\n"
	    "\\fBsimfs mount\\fR \\-o \\fIKNOB\\fR[=\\fIVALUE\\fR][,...] "
	    "\\fIIMAGE MOUNTPOINT\\fR\n"
	    "\\fBsimfs run\\fR \\-o \\fIKNOB\\fR[=\\fIVALUE\\fR][,...] ...\n"
	    "\\fBsimfs crash\\fR \\-o \\fIKNOB\\fR[=\\fIVALUE\\fR][,...] ...\n"
	    "echo \\fIKNOB\\fB=\\fIVALUE\\fR > \\fIMOUNTPOINT\\fB/.simfs/"
	    "config\\fR\n"
	    ".fi\n"
	    ".SH DESCRIPTION\n"
	    "A simfs filesystem is the ext2/ext3/ext4 engine with one model "
	    "chosen for each design choice (placement, journal, write-back, "
	    "the disk, the I/O scheduler, the CPU) and the knobs of those "
	    "models.  All of them are set with mount(8)-style options: a "
	    "comma-separated list of \\fIKNOB\\fR=\\fIVALUE\\fR and "
	    "\\fIKNOB\\fR words.  A later option overrides an earlier one; "
	    "\\fBpreset=\\fR is applied before all others.\n"
	    ".PP\n"
	    "Booleans take \\fIKNOB\\fR, \\fBno\\fIKNOB\\fR, or "
	    "\\fIKNOB\\fR=1/0, yes/no, on/off, true/false.  Sizes take a K, "
	    "M, G or T suffix (powers of 1024).\n"
	    ".PP\n"
	    "A model's own knobs follow its name: in "
	    "\\fBdevice=hdd,rpm=5400,mem=1G\\fR, rpm= belongs to the disk "
	    "model (it is no filesystem knob) and mem= is the filesystem's.  "
	    "Options that are not simfs's go on to FUSE (allow_other, "
	    "nodev, ...) on a mount, and are an error elsewhere.  A bad "
	    "value is refused with a one-line message and changes nothing.\n"
	    ".PP\n"
	    "The knobs marked below as changeable while mounted may be "
	    "written to \\fIMOUNTPOINT\\fB/.simfs/config\\fR; the file reads "
	    "back every knob in effect.\n"
	    ".SH KNOBS\n");
	for (unsigned i = 0; sfs_config_doc_nth(i, &d); i++) {
		man_config_knob(out, &d);
		g_free(d.choices);
	}

	g_string_append(out, ".SH PRESETS\n"
			     "Historical systems, \\fBpreset=\\fINAME\\fR: "
			     "option text applied before the rest.\n");
	for (unsigned i = 0; (pr = sfs_config_preset_nth(i)); i++) {
		man_named(out, pr->name, pr->help);
		g_string_append(out, ".br\nSets: ");
		man_esc(out, pr->opts);
		g_string_append(out, ".\n");
		if (pr->journaled)
			g_string_append(out, ".br\nNeeds an image with a "
					     "journal (\\fBsimfs mkfs "
					     "\\-\\-preset\\fR).\n");
		if (pr->needs_alloc) {
			g_string_append(out, ".br\nNeeds the allocator ");
			man_esc(out, pr->needs_alloc);
			g_string_append(out, ".\n");
		}
	}

	g_string_append(out, ".SH ALLOCATORS\n"
			     "Block placement and file mapping, "
			     "\\fBalloc=\\fINAME\\fR.\n");
	for (unsigned i = 0; (al = sfs_alloc_nth(i)); i++)
		man_named(out, al->name, al->help);

	g_string_append(out,
			".SH JOURNAL POLICIES\n"
			"\\fBdata=\\fIMODE\\fR; \\fBauto\\fR (the default) is "
			"ordered on an image with a journal, else none.\n");
	for (unsigned i = 0; (jn = sfs_jnl_nth(i)); i++)
		man_named(out, jn->name, jn->help);

	g_string_append(out, ".SH DEVICE MODELS\n"
			     "The modelled disk, "
			     "\\fBdevice=\\fIMODEL\\fR[,\\fIKNOB\\fB=\\fIVALUE"
			     "\\fR...]; \\fBdevice=none\\fR stacks no timing "
			     "model at all.\n");
	for (unsigned i = 0; (dm = sfs_devmodel_nth(i)); i++) {
		g_string_append(out, ".SS \"");
		man_esc(out, dm->name);
		g_string_append(out, "\"\n");
		man_text(out, dm->help);
		man_model_knobs(out, dm->knobs);
	}
	g_string_append(out, ".SS \"Device presets\"\n"
			     "A preset is a model with its knobs set; knobs "
			     "given after it override them.\n");
	for (unsigned i = 0; (dp = sfs_devmodel_nth_preset(i)); i++) {
		man_named(out, dp->name, dp->help);
		g_string_append(out, ".br\nModel ");
		man_esc(out, dp->model);
		if (dp->params && *dp->params) {
			g_string_append(out, " with ");
			man_esc(out, dp->params);
		}
		g_string_append(out, ".\n");
	}

	g_string_append(out, ".SH I/O SCHEDULERS\n"
			     "\\fBsched=\\fINAME\\fR[,\\fIKNOB\\fB=\\fIVALUE"
			     "\\fR...]\n");
	for (unsigned i = 0; (name = sfs_sched_nth(i, &help)); i++) {
		g_string_append(out, ".SS \"");
		man_esc(out, name);
		g_string_append(out, "\"\n");
		man_text(out, help);
		man_model_knobs(out, sfs_sched_knobs(name));
	}

	g_string_append(out,
			".SH CPU MODELS\n"
			"The CPU that \\fBsimfs run\\fR charges, "
			"\\fBcpu=\\fIPRESET\\fR[,\\fIKNOB\\fB=\\fIVALUE\\fR...]"
			" (a mount uses the real CPU).\n");
	for (unsigned i = 0; (cp = sfs_cpumodel_nth_preset(i)); i++) {
		man_named(out, cp->name, cp->help);
		if (cp->params && *cp->params) {
			g_string_append(out, ".br\nSets ");
			man_esc(out, cp->params);
			g_string_append(out, ".\n");
		}
	}
	g_string_append(out, ".SS \"CPU knobs\"\n");
	man_model_knobs(out, sfs_cpumodel_knobs());

	man_see_also(out, refs, G_N_ELEMENTS(refs));
	return 0;
}

/* ------------------------------------------------------- completion */

/* Add the options named in s ("-x", "--long") to set, in order. */
static void comp_options(const char *s, GPtrArray *set)
{
	for (const char *p = s; *p; p++) {
		const char *q;
		char *opt = NULL;

		if (*p != '-' || (p > s && !strchr(" [|,(", p[-1])))
			continue;
		if (p[1] == '-' && g_ascii_isalpha(p[2])) {
			for (q = p + 2; g_ascii_isalnum(*q) || *q == '-'; q++)
				;
			opt = g_strndup(p, (size_t)(q - p));
		} else if (g_ascii_isalpha(p[1]) &&
			   (!p[2] || strchr(" ]|,=)", p[2]))) {
			q = p + 2;
			opt = g_strndup(p, 2);
		} else {
			continue;
		}
		if (!g_ptr_array_find_with_equal_func(set, opt, g_str_equal,
						      NULL))
			g_ptr_array_add(set, opt);
		else
			g_free(opt);
		p = q - 1;
	}
}

/*
 * "simfs plot iolog LOG ...": a literal lower-case word right after the
 * command is one of its actions; append it to words, "CMD:a b".
 */
static void comp_action(const char *synopsis, const char *cmd, GString *words)
{
	char **w = g_strsplit(synopsis, " ", 4);

	if (w[0] && w[1] && w[2] && strcmp(w[1], cmd) == 0 &&
	    g_ascii_islower(w[2][0]) && strcmp(w[2], "options") != 0 &&
	    !strstr(words->str, w[2]))
		g_string_append_printf(words, "%s%s", words->len ? " " : "",
				       w[2]);
	g_strfreev(w);
}

/* "a, b (= x + y), c" -> "a b c": the first word of each item. */
static void comp_choice_words(GString *out, const char *choices)
{
	char **items = g_strsplit(choices, ",", -1);

	for (int i = 0; items[i]; i++) {
		char *w = g_strstrip(items[i]);
		size_t len = strcspn(w, " ");

		if (len)
			g_string_append_printf(
			    out, "%s%.*s", out->len ? " " : "", (int)len, w);
	}
	g_strfreev(items);
}

static void comp_knob_names(GString *out, const struct sfs_knob *knobs)
{
	for (const struct sfs_knob *k = knobs; k && k->key; k++)
		g_string_append_printf(out, "%s%s=", out->len ? " " : "",
				       k->key);
}

/* [KIND:NAME]="knob= ..." for a spec knob's models, in shell syntax. */
static void comp_spec_entry(GString *out, const char *kind, const char *name,
			    const struct sfs_knob *knobs)
{
	GString *k = g_string_new(NULL);

	comp_knob_names(k, knobs);
	if (k->len)
		g_string_append_printf(out, "\t[%s:%s]=\"%s\"\n", kind, name,
				       k->str);
	g_string_free(k, TRUE);
}

static const char comp_body[] =
    "# Complete the -o argument $1 (all of it): sets COMPREPLY to whole\n"
    "# arguments.\n"
    "_simfs_knob_arg() {\n"
    "\tlocal cur=$1 item head key extra= it\n"
    "\tlocal -a items\n"
    "\titem=${cur##*,}\n"
    "\thead=${cur:0:${#cur}-${#item}}\n"
    "\tif [[ $item == *=* ]]; then\n"
    "\t\tkey=${item%%=*}\n"
    "\t\tCOMPREPLY=($(compgen -W \"${_simfs_values[$key]-}\" "
    "-P \"$head$key=\" -- \"${item#*=}\"))\n"
    "\t\treturn\n"
    "\tfi\n"
    "\t# a model's knobs follow it: device=hdd,rpm=...\n"
    "\tIFS=, read -ra items <<<\"$head\"\n"
    "\tfor it in \"${items[@]}\"; do\n"
    "\t\tcase $it in\n"
    "\t\tdevice=* | sched=* | cpu=*)\n"
    "\t\t\textra=${_simfs_model_knobs[${it%%=*}:${it#*=}]-} ;;\n"
    "\t\tesac\n"
    "\tdone\n"
    "\tCOMPREPLY=($(compgen -W \"$_simfs_knobs $extra\" -P \"$head\" -- "
    "\"$item\"))\n"
    "\tif ((${#COMPREPLY[@]} == 1)) && [[ ${COMPREPLY[0]} == *= ]]; then\n"
    "\t\tcompopt -o nospace 2>/dev/null || true\n"
    "\tfi\n"
    "}\n"
    "\n"
    "_simfs() {\n"
    "\tlocal cword=$COMP_CWORD j cur full prev cmd pre\n"
    "\tcur=${COMP_WORDS[COMP_CWORD]-}\n"
    "\t# words bash split at '=' (COMP_WORDBREAKS), joined again\n"
    "\tj=$cword\n"
    "\tfull=$cur\n"
    "\twhile ((j > 2)) && [[ ${COMP_WORDS[j]} == = || "
    "${COMP_WORDS[j - 1]} == = ]]; do\n"
    "\t\tfull=${COMP_WORDS[j - 1]}$full\n"
    "\t\t((j--))\n"
    "\tdone\n"
    "\tprev=${COMP_WORDS[j - 1]-}\n"
    "\tcmd=${COMP_WORDS[1]-}\n"
    "\tCOMPREPLY=()\n"
    "\tif ((cword == 1)); then\n"
    "\t\tCOMPREPLY=($(compgen -W \"$_simfs_cmds --help --version\" -- "
    "\"$cur\"))\n"
    "\t\treturn 0\n"
    "\tfi\n"
    "\tif [[ $cmd == help ]]; then\n"
    "\t\t((cword == 2)) && COMPREPLY=($(compgen -W \"$_simfs_cmds\" -- "
    "\"$cur\"))\n"
    "\t\treturn 0\n"
    "\tfi\n"
    "\t# simfs IMAGE MOUNTPOINT -o OPTS is simfs mount\n"
    "\t[[ \" $_simfs_cmds \" == *\" $cmd \"* ]] || cmd=mount\n"
    "\tif [[ $prev == -o && \" $_simfs_knob_cmds \" == *\" $cmd \"* ]]; "
    "then\n"
    "\t\t_simfs_knob_arg \"$full\"\n"
    "\t\tif ((j != cword)); then\n"
    "\t\t\t# bash replaces only the text after the last '='\n"
    "\t\t\tpre=${full%=*}=\n"
    "\t\t\tCOMPREPLY=(\"${COMPREPLY[@]#\"$pre\"}\")\n"
    "\t\tfi\n"
    "\t\treturn 0\n"
    "\tfi\n"
    "\tif [[ $prev == --preset ]]; then\n"
    "\t\tCOMPREPLY=($(compgen -W \"${_simfs_values[preset]-}\" -- "
    "\"$cur\"))\n"
    "\t\treturn 0\n"
    "\tfi\n"
    "\tif [[ $cur == -* ]]; then\n"
    "\t\tCOMPREPLY=($(compgen -W \"${_simfs_opts[$cmd]-}\" -- \"$cur\"))\n"
    "\t\treturn 0\n"
    "\tfi\n"
    "\t# the action of plot, trace, ...: the word after the command\n"
    "\tif ((cword == 2)) && [[ -n ${_simfs_actions[$cmd]-} ]]; then\n"
    "\t\tCOMPREPLY=($(compgen -W \"${_simfs_actions[$cmd]}\" -- "
    "\"$cur\"))\n"
    "\t\treturn 0\n"
    "\tfi\n"
    "\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
    "\tcompopt -o filenames 2>/dev/null || true\n"
    "\treturn 0\n"
    "}\n"
    "complete -F _simfs simfs\n";

static int man_completion(GString *out, const struct sfs_cmd *cmds, size_t n)
{
	GString *names = g_string_new(NULL), *knob_cmds = g_string_new(NULL);
	GString *knobs = g_string_new(NULL), *vals = g_string_new(NULL);
	GString *opts = g_string_new(NULL), *models = g_string_new(NULL);
	GString *acts = g_string_new(NULL);
	const struct sfs_devmodel_ops *dm;
	const struct sfs_devmodel_preset *dp;
	const struct sfs_cpu_preset *cp;
	struct sfs_config_doc d;
	const char *name;
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		g_string_append_printf(names, "%s%s", i ? " " : "",
				       cmds[i].name);
		if (i + 1 < n) {
			GString *actions = g_string_new(NULL);
			char *err = NULL;
			char *help = man_capture(&cmds[i], NULL, &err);
			GPtrArray *lines = help ? man_parse(help, &err) : NULL;
			GPtrArray *set = g_ptr_array_new_with_free_func(g_free);

			if (!lines) {
				fprintf(stderr,
					"simfs help: --bash-completion: "
					"%s: %s\n",
					cmds[i].name, err);
				g_free(err);
				g_free(help);
				g_ptr_array_free(set, TRUE);
				g_string_free(actions, TRUE);
				rc = 1;
				goto out;
			}
			for (guint l = 0; l < lines->len; l++) {
				const struct man_line *ml = lines->pdata[l];

				if (ml->kind == MAN_SYNOPSIS ||
				    ml->kind == MAN_TERM)
					comp_options(ml->text, set);
				if (ml->kind == MAN_SYNOPSIS)
					comp_action(ml->text, cmds[i].name,
						    actions);
			}
			/* every command takes --help (man_capture ran it) */
			comp_options("--help", set);
			g_string_append_printf(opts, "\t[%s]=\"", cmds[i].name);
			for (guint o = 0; o < set->len; o++)
				g_string_append_printf(opts, "%s%s",
						       o ? " " : "",
						       (char *)set->pdata[o]);
			g_string_append(opts, "\"\n");
			if (man_takes_knobs(help))
				g_string_append_printf(
				    knob_cmds, "%s%s",
				    knob_cmds->len ? " " : "", cmds[i].name);
			if (actions->len)
				g_string_append_printf(acts, "\t[%s]=\"%s\"\n",
						       cmds[i].name,
						       actions->str);
			g_string_free(actions, TRUE);
			g_ptr_array_free(set, TRUE);
			g_ptr_array_free(lines, TRUE);
			g_free(help);
		}
	}
	for (unsigned i = 0; sfs_config_doc_nth(i, &d); i++) {
		if (d.metavar)
			g_string_append_printf(
			    knobs, "%s%s=", knobs->len ? " " : "", d.name);
		else if (d.alias_of)
			g_string_append_printf(knobs, " %s", d.name);
		else
			g_string_append_printf(knobs, " %s no%s", d.name,
					       d.name);
		if (d.choices) {
			GString *w = g_string_new(NULL);

			comp_choice_words(w, d.choices);
			g_string_append_printf(vals, "\t[%s]=\"%s\"\n", d.name,
					       w->str);
			g_string_free(w, TRUE);
		}
		g_free(d.choices);
	}
	for (unsigned i = 0; (dm = sfs_devmodel_nth(i)); i++)
		comp_spec_entry(models, "device", dm->name, dm->knobs);
	for (unsigned i = 0; (dp = sfs_devmodel_nth_preset(i)); i++)
		if (!sfs_devmodel_find(dp->name))
			comp_spec_entry(
			    models, "device", dp->name,
			    sfs_devmodel_find(dp->model)
				? sfs_devmodel_find(dp->model)->knobs
				: NULL);
	for (unsigned i = 0; (name = sfs_sched_nth(i, NULL)); i++)
		comp_spec_entry(models, "sched", name, sfs_sched_knobs(name));
	for (unsigned i = 0; (cp = sfs_cpumodel_nth_preset(i)); i++)
		comp_spec_entry(models, "cpu", cp->name, sfs_cpumodel_knobs());

	g_string_append_printf(
	    out,
	    "# bash completion of simfs(1).  Generated by `simfs help "
	    "--bash-completion`\n"
	    "# from the program's tables; do not edit.\n\n"
	    "_simfs_cmds=\"%s\"\n"
	    "_simfs_knob_cmds=\"%s\"\n"
	    "_simfs_knobs=\"%s\"\n"
	    "declare -gA _simfs_opts=(\n%s)\n"
	    "declare -gA _simfs_actions=(\n%s)\n"
	    "declare -gA _simfs_values=(\n%s)\n"
	    "declare -gA _simfs_model_knobs=(\n%s)\n\n%s",
	    names->str, knob_cmds->str, knobs->str, opts->str, acts->str,
	    vals->str, models->str, comp_body);
out:
	g_string_free(names, TRUE);
	g_string_free(knob_cmds, TRUE);
	g_string_free(knobs, TRUE);
	g_string_free(vals, TRUE);
	g_string_free(opts, TRUE);
	g_string_free(models, TRUE);
	g_string_free(acts, TRUE);
	return rc;
}

/* ------------------------------------------------------------- door */

int sfs_manpage_main(int argc, char **argv, const struct sfs_cmd *cmds,
		     size_t n, void (*usage)(FILE *out))
{
	GString *out = g_string_new(NULL);
	const char *page;
	bool found = false;
	int rc = 1;

	if (argc == 2 && strcmp(argv[1], "--man-list") == 0) {
		printf("simfs.1\n");
		for (size_t i = 0; i + 1 < n; i++)
			printf("simfs-%s.1\n", cmds[i].name);
		printf("simfs-options.7\n");
		g_string_free(out, TRUE);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--bash-completion") == 0) {
		rc = man_completion(out, cmds, n);
		goto print;
	}
	if (argc != 3 || strcmp(argv[1], "--man") != 0) {
		fprintf(stderr, "simfs help: usage: simfs help --man PAGE | "
				"--man-list | --bash-completion\n");
		g_string_free(out, TRUE);
		return 2;
	}
	page = argv[2];
	if (strcmp(page, "simfs") == 0) {
		rc = man_main_page(out, cmds, n, usage);
	} else if (strcmp(page, "simfs-options") == 0) {
		rc = man_options_page(out);
	} else {
		for (size_t i = 0; i + 1 < n && !found; i++)
			if (g_str_has_prefix(page, "simfs-") &&
			    strcmp(page + 6, cmds[i].name) == 0) {
				rc = man_cmd_page(out, cmds, n, &cmds[i]);
				found = true;
			}
		if (!found) {
			fprintf(stderr,
				"simfs help: no manual page '%s' (simfs help "
				"--man-list)\n",
				page);
			g_string_free(out, TRUE);
			return 2;
		}
	}
print:
	if (rc == 0)
		fputs(out->str, stdout);
	g_string_free(out, TRUE);
	return rc;
}
