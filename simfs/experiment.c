/*
 * experiment.c - reading and checking an experiment file (experiment.h,
 * doc/experiments.md) and laying out its cells.
 *
 *   sfs_experiment_load(path, &x, &err)    scan, check, build the cells
 *   sfs_xp_cell_argv(x, cell, celldir)     `simfs run` argv of one cell
 *   sfs_xp_row_table(x, cell, phase, ...)  which [table] shows a row
 *   sfs_experiment_free(x)
 *
 * GKeyFile keeps no line numbers, so the file is scanned line by line
 * first (xp_scan): that scan refuses what is not a section header, a
 * "key = value" or a comment, duplicate sections and keys, and records
 * the line of every header and key; the cleaned text (comments gone) is
 * then what GKeyFile holds.  Every later check names the line it is about.
 * Values are checked with the same code `simfs run` uses (sfs_parse_size,
 * sfs_workload_new, sfs_config_parse), so a file that loads has cells that
 * `simfs run` accepts.  Invariant: on success every cell's spec and
 * options were each accepted once here; on failure *out is NULL.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include <glib.h>

#include "config.h"
#include "experiment.h"
#include "mkfs_cli.h"
#include "workload.h"

#define XP_MAX_NAME 64
#define XP_MAX_POINTS 1000
#define XP_MAX_REPEAT 1000

/* One section of the file, as scanned. */
struct xp_sect {
	char *group;	  /* "system ext3": GKeyFile's group name */
	char *kind;	  /* "global", "system", "workload", "table" */
	char *name;	  /* NULL for [global] */
	unsigned line;	  /* of its header */
	GHashTable *keys; /* key -> GUINT_TO_POINTER(line) */
	GPtrArray *order; /* keys in file order (borrowed from keys) */
};

struct xp_load {
	const char *path;
	GKeyFile *kf;
	GPtrArray *sects; /* struct xp_sect *, file order */
	struct sfs_experiment *x;
	char **err;
};

static void xp_sect_free(gpointer p)
{
	struct xp_sect *s = p;

	g_free(s->group);
	g_free(s->kind);
	g_free(s->name);
	g_hash_table_destroy(s->keys);
	g_ptr_array_free(s->order, TRUE);
	g_free(s);
}

/* "FILE:LINE: what" into *ld->err; returns -EINVAL. */
static int G_GNUC_PRINTF(3, 4)
    xp_fail(struct xp_load *ld, unsigned line, const char *fmt, ...)
{
	va_list ap;
	char *what;

	va_start(ap, fmt);
	what = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_free(*ld->err);
	if (line)
		*ld->err = g_strdup_printf("%s:%u: %s", ld->path, line, what);
	else
		*ld->err = g_strdup_printf("%s: %s", ld->path, what);
	g_free(what);
	return -EINVAL;
}

/* A name usable in a cell id and a folder name: [A-Za-z0-9_+-]. */
static bool xp_safe_name(const char *s)
{
	if (!*s || strlen(s) > XP_MAX_NAME)
		return false;
	for (; *s; s++)
		if (!g_ascii_isalnum(*s) && !strchr("_+-", *s))
			return false;
	return true;
}

/* A sweep value: also '.' and ':' ("0.5", "hdd-2009"). */
static bool xp_safe_value(const char *s)
{
	if (!*s || strlen(s) > XP_MAX_NAME)
		return false;
	for (; *s; s++)
		if (!g_ascii_isalnum(*s) && !strchr("_+-.:", *s))
			return false;
	return true;
}

static bool xp_key_chars(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!g_ascii_isalnum(*s) && *s != '_' && *s != '-')
			return false;
	return true;
}

/* Cut a comment: a line starting with '#' or ';', or one of them after a
 * blank.  Returns the stripped text (in place). */
static char *xp_uncomment(char *t)
{
	t = g_strstrip(t);
	if (!*t)
		return t;
	if (*t == '#' || *t == ';')
		return t + strlen(t);
	for (char *p = t + 1; *p; p++)
		if ((*p == '#' || *p == ';') &&
		    (p[-1] == ' ' || p[-1] == '\t')) {
			*p = '\0';
			break;
		}
	return g_strstrip(t);
}

/* A section header's text "system  ext3" -> its section, or an error. */
static int xp_scan_header(struct xp_load *ld, char *inner, unsigned line,
			  struct xp_sect **out)
{
	static const char *const kinds[] = {"system", "workload", "table",
					    NULL};
	char **w = g_strsplit_set(g_strstrip(inner), " \t", -1);
	GPtrArray *words = g_ptr_array_new();
	struct xp_sect *s = NULL;
	int rc = 0;

	for (char **p = w; *p; p++)
		if (**p)
			g_ptr_array_add(words, *p);
	if (words->len == 1 && strcmp(words->pdata[0], "global") == 0) {
		s = g_new0(struct xp_sect, 1);
		s->kind = g_strdup("global");
		s->group = g_strdup("global");
	} else if (words->len == 2 && g_strv_contains(kinds, words->pdata[0])) {
		if (!xp_safe_name(words->pdata[1])) {
			rc = xp_fail(
			    ld, line,
			    "bad name '%s' in [%s %s]: letters, digits, "
			    "'_', '+' and '-' only, at most %d",
			    (char *)words->pdata[1], (char *)words->pdata[0],
			    (char *)words->pdata[1], XP_MAX_NAME);
			goto out;
		}
		s = g_new0(struct xp_sect, 1);
		s->kind = g_strdup(words->pdata[0]);
		s->name = g_strdup(words->pdata[1]);
		s->group = g_strdup_printf("%s %s", s->kind, s->name);
	} else if (words->len == 1 && g_strv_contains(kinds, words->pdata[0])) {
		rc = xp_fail(ld, line, "[%s] needs a name: [%s NAME]",
			     (char *)words->pdata[0], (char *)words->pdata[0]);
		goto out;
	} else {
		rc = xp_fail(ld, line,
			     "unknown section [%s] (sections: [global], "
			     "[system NAME], [workload NAME], [table NAME])",
			     inner);
		goto out;
	}
	s->line = line;
	s->keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	s->order = g_ptr_array_new();
	*out = s;
out:
	g_ptr_array_free(words, TRUE);
	g_strfreev(w);
	return rc;
}

/*
 * Scan text line by line: sections and keys with their lines into
 * ld->sects, the cleaned text into *clean.  0 or -EINVAL with the line.
 */
static int xp_scan(struct xp_load *ld, const char *text, GString *clean)
{
	char **lines = g_strsplit(text, "\n", -1);
	GHashTable *groups = g_hash_table_new(g_str_hash, g_str_equal);
	struct xp_sect *cur = NULL;
	int rc = 0;

	for (unsigned i = 0; lines[i]; i++) {
		unsigned line = i + 1;
		char *t, *eq;

		if (!lines[i + 1] && !*lines[i])
			break; /* after the last newline */
		if (!g_utf8_validate(lines[i], -1, NULL)) {
			rc = xp_fail(ld, line, "not UTF-8 text");
			goto out;
		}
		t = xp_uncomment(lines[i]);
		if (!*t) {
			g_string_append_c(clean, '\n');
			continue;
		}
		if (*t == '[') {
			size_t n = strlen(t);
			struct xp_sect *s = NULL;
			if (t[n - 1] != ']') {
				rc = xp_fail(ld, line,
					     "a section header ends with ']'");
				goto out;
			}
			t[n - 1] = '\0';
			rc = xp_scan_header(ld, t + 1, line, &s);
			if (rc)
				goto out;
			struct xp_sect *old =
			    g_hash_table_lookup(groups, s->group);
			if (old) {
				rc = xp_fail(ld, line,
					     "duplicate section [%s] (first at "
					     "line %u)",
					     s->group, old->line);
				xp_sect_free(s);
				goto out;
			}
			g_ptr_array_add(ld->sects, s);
			g_hash_table_insert(groups, s->group, s);
			cur = s;
			g_string_append_printf(clean, "[%s]\n", s->group);
			continue;
		}
		eq = strchr(t, '=');
		if (!eq) {
			rc = xp_fail(ld, line,
				     "'%s' is not a [section], a key = value "
				     "or a comment",
				     t);
			goto out;
		}
		*eq = '\0';
		char *key = g_strstrip(t), *val = g_strstrip(eq + 1);
		if (!xp_key_chars(key)) {
			rc = xp_fail(ld, line, "bad key '%s'", key);
			goto out;
		}
		if (!cur) {
			rc = xp_fail(ld, line, "key '%s' before any [section]",
				     key);
			goto out;
		}
		gpointer first = g_hash_table_lookup(cur->keys, key);
		if (first) {
			rc = xp_fail(ld, line,
				     "duplicate key '%s' in [%s] (first at "
				     "line %u)",
				     key, cur->group, GPOINTER_TO_UINT(first));
			goto out;
		}
		char *k = g_strdup(key);
		g_hash_table_insert(cur->keys, k, GUINT_TO_POINTER(line));
		g_ptr_array_add(cur->order, k);
		g_string_append_printf(clean, "%s=%s\n", key, val);
	}
out:
	g_hash_table_destroy(groups);
	g_strfreev(lines);
	return rc;
}

static unsigned xp_line(const struct xp_sect *s, const char *key)
{
	unsigned l = GPOINTER_TO_UINT(g_hash_table_lookup(s->keys, key));

	return l ? l : s->line;
}

/* The value of key in s (stripped, raw: no GKeyFile escapes), or NULL. */
static char *xp_get(struct xp_load *ld, const struct xp_sect *s,
		    const char *key)
{
	char *v;

	if (!g_hash_table_contains(s->keys, key))
		return NULL;
	v = g_key_file_get_value(ld->kf, s->group, key, NULL);
	return v ? g_strstrip(v) : g_strdup("");
}

/* Refuse keys of s not in allowed. */
static int xp_check_keys(struct xp_load *ld, const struct xp_sect *s,
			 const char *const *allowed)
{
	for (unsigned i = 0; i < s->order->len; i++) {
		const char *k = s->order->pdata[i];
		if (!g_strv_contains(allowed, k)) {
			char *names = g_strjoinv(", ", (char **)allowed);
			int rc = xp_fail(ld, xp_line(s, k),
					 "unknown key '%s' in [%s] (keys: %s)",
					 k, s->group, names);
			g_free(names);
			return rc;
		}
	}
	return 0;
}

/* A size value (sfs_parse_size, > 0) kept as text; NULL if absent. */
static int xp_size(struct xp_load *ld, const struct xp_sect *s, const char *key,
		   char **out)
{
	uint64_t b;
	char *v = xp_get(ld, s, key);

	*out = NULL;
	if (!v)
		return 0;
	if (sfs_parse_size(v, &b) || b == 0) {
		int rc = xp_fail(ld, xp_line(s, key),
				 "bad value '%s' for %s in [%s] (a size, like "
				 "512M or 2G)",
				 v, key, s->group);
		g_free(v);
		return rc;
	}
	*out = v;
	return 0;
}

static int xp_uint(struct xp_load *ld, const struct xp_sect *s, const char *key,
		   uint64_t min, uint64_t max, uint64_t *out)
{
	char *v = xp_get(ld, s, key), *end;
	uint64_t n;

	if (!v)
		return 0;
	errno = 0;
	n = g_ascii_strtoull(v, &end, 10);
	if (errno || *end || !g_ascii_isdigit(*v) || n < min || n > max) {
		int rc = xp_fail(ld, xp_line(s, key),
				 "bad value '%s' for %s in [%s] (a whole "
				 "number, %" G_GUINT64_FORMAT
				 "..%" G_GUINT64_FORMAT ")",
				 v, key, s->group, min, max);
		g_free(v);
		return rc;
	}
	g_free(v);
	*out = n;
	return 0;
}

/* Append part to a comma-separated list. */
static void xp_join(GString *g, const char *part)
{
	if (!part || !*part)
		return;
	if (g->len)
		g_string_append_c(g, ',');
	g_string_append(g, part);
}

/*
 * Check an -o text as `simfs run` would take it (after its default
 * device=hdd-2009): parsed, virtual clock, no stats=/iolog=/trace= (the
 * bench writes each cell's own).  0, or -EINVAL with "what: why" in *why.
 */
static int xp_check_opts(const char *opts, char **why)
{
	struct sfs_config cfg;
	char *full =
	    g_strdup_printf("device=hdd-2009%s%s", *opts ? "," : "", opts);
	char *e = NULL;
	int rc;

	sfs_config_defaults(&cfg);
	rc = sfs_config_parse(&cfg, full, NULL, &e);
	g_free(full);
	if (rc) {
		*why = e;
		return -EINVAL;
	}
	if (strcmp(cfg.clock, "virtual") != 0) {
		*why = g_strdup_printf("clock=%s: cells run in virtual time",
				       cfg.clock);
		return -EINVAL;
	}
	if (cfg.stats_path[0] || cfg.iolog_path[0] || cfg.trace_path[0]) {
		*why = g_strdup("stats=, iolog= and trace= are not for "
				"experiments (each cell writes its own "
				"stats.json)");
		return -EINVAL;
	}
	return 0;
}

static int xp_global(struct xp_load *ld, const struct xp_sect *s,
		     GString *gopts)
{
	static const char *const keys[] = {
	    "name",    "title",	 "size", "journal_size", "device", "cpu",
	    "options", "repeat", "seed", "mkfs",	 NULL};
	struct sfs_experiment *x = ld->x;
	uint64_t n;
	int rc;
	char *v, *why = NULL;

	rc = xp_check_keys(ld, s, keys);
	if (rc)
		return rc;
	v = xp_get(ld, s, "name");
	if (v) {
		if (!xp_safe_name(v)) {
			rc = xp_fail(ld, xp_line(s, "name"),
				     "bad name '%s': letters, digits, '_', "
				     "'+' and '-' only",
				     v);
			g_free(v);
			return rc;
		}
		g_free(x->name);
		x->name = v;
	}
	x->title = xp_get(ld, s, "title");
	rc = xp_size(ld, s, "size", &v);
	if (rc)
		return rc;
	if (v) {
		g_free(x->size);
		x->size = v;
	}
	rc = xp_size(ld, s, "journal_size", &x->journal_size);
	if (rc)
		return rc;
	x->mkfs = xp_get(ld, s, "mkfs"); /* checked per system */
	n = 1;
	rc = xp_uint(ld, s, "repeat", 1, XP_MAX_REPEAT, &n);
	if (rc)
		return rc;
	x->repeat = (unsigned)n;
	rc = xp_uint(ld, s, "seed", 0, UINT64_MAX / 2, &x->seed);
	if (rc)
		return rc;
	static const char *const knobs[] = {"device", "cpu", "options", NULL};
	for (unsigned i = 0; knobs[i]; i++) {
		v = xp_get(ld, s, knobs[i]);
		if (!v)
			continue;
		char *part =
		    i < 2 ? g_strdup_printf("%s=%s", knobs[i], v) : g_strdup(v);
		xp_join(gopts, part);
		g_free(part);
		g_free(v);
		if (xp_check_opts(gopts->str, &why)) {
			rc = xp_fail(ld, xp_line(s, knobs[i]),
				     "%s in [global]: %s", knobs[i], why);
			g_free(why);
			return rc;
		}
	}
	return 0;
}

/*
 * Check sys's mkfs words as simfs run --mkfs will read them on its image
 * ("preset": its preset's era), line: where they come from.
 */
static int xp_check_mkfs(struct xp_load *ld, unsigned line,
			 const struct xp_sect *s,
			 const struct sfs_xp_system *sys)
{
	struct sfs_mkfs_cli cli;
	struct sfs_config cfg;
	uint64_t bytes = 0;
	char *why = NULL;
	int rc;

	sfs_config_defaults(&cfg);
	if (sfs_config_parse(&cfg, sys->options, NULL, &why))
		g_clear_pointer(&why, g_free); /* refused above already */
	sfs_parse_size(sys->size ? sys->size : ld->x->size, &bytes);
	sfs_mkfs_cli_init(&cli);
	rc = sfs_mkfs_cli_parse_for(&cli, sys->mkfs, cfg.preset, bytes, &why);
	sfs_mkfs_cli_clear(&cli);
	if (rc) {
		rc = xp_fail(ld, line, "mkfs of [%s]: %s", s->group, why);
		g_free(why);
	}
	return rc;
}

static int xp_system(struct xp_load *ld, const struct xp_sect *s,
		     const char *gopts, struct sfs_xp_system *sys)
{
	static const char *const keys[] = {"options", "journal_size", "size",
					   "mkfs", NULL};
	GString *o = g_string_new(gopts);
	char *v, *why = NULL;
	int rc;

	sys->name = g_strdup(s->name);
	sys->line = s->line;
	rc = xp_check_keys(ld, s, keys);
	if (rc)
		goto out;
	rc = xp_size(ld, s, "journal_size", &sys->journal_size);
	if (rc)
		goto out;
	rc = xp_size(ld, s, "size", &sys->size);
	if (rc)
		goto out;
	v = xp_get(ld, s, "options");
	xp_join(o, v);
	g_free(v);
	if (xp_check_opts(o->str, &why)) {
		rc = xp_fail(ld, xp_line(s, "options"), "options of [%s]: %s",
			     s->group, why);
		g_free(why);
		goto out;
	}
	sys->mkfs = xp_get(ld, s, "mkfs");
	if (!sys->mkfs && ld->x->mkfs)
		sys->mkfs = g_strdup(ld->x->mkfs);
out:
	sys->options = g_string_free(o, FALSE);
	if (rc == 0 && sys->mkfs)
		rc = xp_check_mkfs(ld, xp_line(s, "mkfs"), s, sys);
	return rc;
}

/* Does the comma-separated spec set key (key=... or the flag key)? */
static bool xp_spec_has(const char *spec, const char *key)
{
	char **t = g_strsplit(spec, ",", -1);
	bool found = false;

	for (unsigned i = 1; t[i] && !found; i++) {
		char *eq = strchr(t[i], '=');
		size_t n = eq ? (size_t)(eq - t[i]) : strlen(t[i]);
		found = strlen(key) == n && strncmp(t[i], key, n) == 0;
	}
	g_strfreev(t);
	return found;
}

/* What sweep key is: a parameter of ops, a mount knob, journal_size. */
static int xp_sweep_kind(const struct sfs_workload_ops *ops, const char *key,
			 const char *val0, enum sfs_xp_sweep_kind *out)
{
	struct sfs_config cfg;
	char *e = NULL;
	int rc;

	for (const struct sfs_wl_param *p = ops->params; p && p->name; p++)
		if (strcmp(p->name, key) == 0) {
			*out = SFS_XP_SWEEP_PARAM;
			return 0;
		}
	if (strcmp(key, "journal_size") == 0) {
		*out = SFS_XP_SWEEP_JOURNAL_SIZE;
		return 0;
	}
	sfs_config_defaults(&cfg);
	rc = sfs_config_set(&cfg, key, val0, &e);
	bool unknown = rc && e && g_str_has_prefix(e, "unknown option");
	g_free(e);
	if (unknown)
		return -ENOENT;
	*out = SFS_XP_SWEEP_KNOB; /* a bad value is reported per point */
	return 0;
}

static char *xp_param_names(const struct sfs_workload_ops *ops)
{
	GString *g = g_string_new(NULL);

	for (const struct sfs_wl_param *p = ops->params; p && p->name; p++)
		xp_join(g, p->name);
	return g_string_free(g, FALSE);
}

/* sweep = key=v1,v2,...: key and the values into wl. */
static int xp_sweep(struct xp_load *ld, const struct xp_sect *s,
		    struct sfs_xp_workload *wl,
		    const struct sfs_workload_ops *ops)
{
	unsigned line = xp_line(s, "sweep");
	char *v = xp_get(ld, s, "sweep"), *eq;
	GPtrArray *vals = g_ptr_array_new();
	char **parts = NULL;
	int rc = 0;

	eq = strchr(v, '=');
	if (!eq || eq == v || !eq[1]) {
		rc = xp_fail(ld, line,
			     "bad sweep '%s' in [%s]: key=value,value,... "
			     "(clients=1,2,4)",
			     v, s->group);
		goto out;
	}
	*eq = '\0';
	wl->sweep_key = g_strdup(g_strstrip(v));
	parts = g_strsplit(eq + 1, ",", -1);
	for (unsigned i = 0; parts[i]; i++) {
		char *p = g_strstrip(parts[i]);
		if (!xp_safe_value(p)) {
			rc = xp_fail(ld, line,
				     "bad sweep value '%s' in [%s] (letters, "
				     "digits, '_', '+', '-', '.', ':')",
				     p, s->group);
			goto out;
		}
		for (unsigned k = 0; k < vals->len; k++)
			if (strcmp(vals->pdata[k], p) == 0) {
				rc = xp_fail(ld, line,
					     "sweep value '%s' given twice in "
					     "[%s]",
					     p, s->group);
				goto out;
			}
		if (vals->len >= XP_MAX_POINTS) {
			rc = xp_fail(ld, line, "more than %d sweep points",
				     XP_MAX_POINTS);
			goto out;
		}
		g_ptr_array_add(vals, g_strdup(p));
	}
	if (xp_sweep_kind(ops, wl->sweep_key, vals->pdata[0],
			  &wl->sweep_kind)) {
		char *names = xp_param_names(ops);
		rc = xp_fail(ld, line,
			     "sweep key '%s' in [%s] is neither a parameter "
			     "of %s (%s) nor a mount knob (simfs mount "
			     "--help) nor journal_size",
			     wl->sweep_key, s->group, ops->name, names);
		g_free(names);
		goto out;
	}
	wl->sweep_is_knob = wl->sweep_kind == SFS_XP_SWEEP_KNOB;
	if (xp_spec_has(wl->spec, wl->sweep_key)) {
		rc = xp_fail(ld, line,
			     "the spec of [%s] sets %s, which its sweep "
			     "varies: leave it out of spec",
			     s->group, wl->sweep_key);
		goto out;
	}
	for (unsigned i = 0; i < vals->len; i++) {
		const char *p = vals->pdata[i];
		uint64_t b;
		if (wl->sweep_kind == SFS_XP_SWEEP_JOURNAL_SIZE &&
		    (sfs_parse_size(p, &b) || b == 0)) {
			rc = xp_fail(ld, line,
				     "bad journal_size '%s' in the sweep of "
				     "[%s] (a size, like 4M)",
				     p, s->group);
			goto out;
		}
		if (wl->sweep_kind == SFS_XP_SWEEP_PARAM) {
			char *spec = g_strdup_printf("%s,%s=%s", wl->spec,
						     wl->sweep_key, p);
			struct sfs_workload *w = NULL;
			char *e = NULL;
			if (sfs_workload_new(spec, &w, &e)) {
				rc = xp_fail(ld, line, "sweep point %s=%s: %s",
					     wl->sweep_key, p, e ? e : "?");
				g_free(e);
				g_free(spec);
				goto out;
			}
			sfs_workload_free(w);
			g_free(spec);
		}
	}
	g_ptr_array_add(vals, NULL);
	wl->sweep_vals = (char **)g_ptr_array_free(vals, FALSE);
	vals = NULL;
	for (wl->nsweep = 0; wl->sweep_vals[wl->nsweep]; wl->nsweep++)
		;
out:
	if (vals) {
		g_ptr_array_set_free_func(vals, g_free);
		g_ptr_array_free(vals, TRUE);
	}
	g_strfreev(parts);
	g_free(v);
	return rc;
}

static int xp_workload(struct xp_load *ld, const struct xp_sect *s,
		       struct sfs_xp_workload *wl)
{
	static const char *const keys[] = {"spec", "sweep", NULL};
	struct sfs_workload *w = NULL;
	char *e = NULL;
	int rc;

	wl->name = g_strdup(s->name);
	wl->line = s->line;
	wl->nsweep = 1;
	rc = xp_check_keys(ld, s, keys);
	if (rc)
		return rc;
	wl->spec = xp_get(ld, s, "spec");
	if (!wl->spec)
		wl->spec = g_strdup(s->name);
	if (sfs_workload_new(wl->spec, &w, &e)) {
		rc = xp_fail(ld, xp_line(s, "spec"), "spec of [%s]: %s",
			     s->group, e ? e : "?");
		g_free(e);
		return rc;
	}
	if (g_hash_table_contains(s->keys, "sweep"))
		rc = xp_sweep(ld, s, wl, sfs_workload_ops_of(w));
	sfs_workload_free(w);
	return rc;
}

static const struct sfs_xp_workload *
xp_find_workload(const struct sfs_experiment *x, const char *name)
{
	for (unsigned i = 0; i < x->nworkloads; i++)
		if (strcmp(x->workloads[i].name, name) == 0)
			return &x->workloads[i];
	return NULL;
}

/* Is axis a valid rows/columns value for a table of wl? */
static bool xp_axis_ok(const struct sfs_xp_workload *wl, const char *axis)
{
	return strcmp(axis, "system") == 0 || strcmp(axis, "phase") == 0 ||
	       (wl->sweep_key && strcmp(axis, wl->sweep_key) == 0);
}

static int xp_table(struct xp_load *ld, const struct xp_sect *s,
		    struct sfs_xp_table *t)
{
	static const char *const keys[] = {"workload", "phase",	  "metric",
					   "rows",     "columns", "plot",
					   "title",    NULL};
	static const char *const plots[] = {"lines", "bars", "none", NULL};
	struct sfs_experiment *x = ld->x;
	const struct sfs_xp_workload *wl;
	int rc;

	t->name = g_strdup(s->name);
	t->line = s->line;
	rc = xp_check_keys(ld, s, keys);
	if (rc)
		return rc;
	t->workload = xp_get(ld, s, "workload");
	if (!t->workload) {
		if (x->nworkloads != 1)
			return xp_fail(ld, s->line,
				       "[%s] needs workload = NAME (there are "
				       "%u workloads)",
				       s->group, x->nworkloads);
		t->workload = g_strdup(x->workloads[0].name);
	}
	wl = xp_find_workload(x, t->workload);
	if (!wl)
		return xp_fail(ld, xp_line(s, "workload"),
			       "[%s] names workload '%s', which has no "
			       "[workload %s] section",
			       s->group, t->workload, t->workload);
	t->phase = xp_get(ld, s, "phase");
	if (t->phase && !*t->phase)
		return xp_fail(ld, xp_line(s, "phase"), "empty phase in [%s]",
			       s->group);
	t->metric = xp_get(ld, s, "metric");
	if (!t->metric)
		return xp_fail(ld, s->line,
			       "[%s] needs metric = NAME (mb_s, ops_s, "
			       "lat_p99_ms, ...: doc/experiments.md)",
			       s->group);
	if (!xp_key_chars(t->metric))
		return xp_fail(ld, xp_line(s, "metric"),
			       "bad metric '%s' in [%s]", t->metric, s->group);
	t->rows = xp_get(ld, s, "rows");
	if (!t->rows)
		t->rows = g_strdup(wl->sweep_key ? wl->sweep_key
				   : t->phase	 ? "system"
						 : "phase");
	t->columns = xp_get(ld, s, "columns");
	if (!t->columns)
		t->columns = g_strdup(strcmp(t->rows, "system") != 0 ? "system"
				      : wl->sweep_key ? wl->sweep_key
						      : "phase");
	const char *axes[] = {"rows", t->rows, "columns", t->columns};
	for (unsigned i = 0; i < 4; i += 2)
		if (!xp_axis_ok(wl, axes[i + 1]))
			return xp_fail(ld, xp_line(s, axes[i]),
				       "%s = %s in [%s]: not an axis of "
				       "[workload %s] (system, phase%s%s)",
				       axes[i], axes[i + 1], s->group, wl->name,
				       wl->sweep_key ? ", " : "",
				       wl->sweep_key ? wl->sweep_key : "");
	if (strcmp(t->rows, t->columns) == 0)
		return xp_fail(ld, xp_line(s, "columns"),
			       "rows and columns of [%s] are both %s", s->group,
			       t->rows);
	t->plot = xp_get(ld, s, "plot");
	if (!t->plot)
		t->plot = g_strdup(wl->sweep_key &&
					   strcmp(t->rows, wl->sweep_key) == 0
				       ? "lines"
				       : "bars");
	if (!g_strv_contains(plots, t->plot))
		return xp_fail(ld, xp_line(s, "plot"),
			       "bad plot '%s' in [%s] (lines, bars, none)",
			       t->plot, s->group);
	t->title = xp_get(ld, s, "title");
	return 0;
}

/* The cells: systems x workloads x points x repetitions; each knob point
 * checked with its system's options. */
static int xp_cells(struct xp_load *ld)
{
	struct sfs_experiment *x = ld->x;
	GArray *cells = g_array_new(FALSE, TRUE, sizeof(struct sfs_xp_cell));
	int rc = 0;

	for (unsigned si = 0; si < x->nsystems; si++) {
		const struct sfs_xp_system *sys = &x->systems[si];
		for (unsigned wi = 0; wi < x->nworkloads; wi++) {
			const struct sfs_xp_workload *wl = &x->workloads[wi];
			for (unsigned pi = 0; pi < wl->nsweep; pi++) {
				const char *pv =
				    wl->sweep_vals ? wl->sweep_vals[pi] : NULL;
				GString *o = g_string_new(sys->options);
				char *kv = pv ? g_strdup_printf(
						    "%s=%s", wl->sweep_key, pv)
					      : NULL;
				char *why = NULL;
				if (wl->sweep_kind == SFS_XP_SWEEP_KNOB) {
					xp_join(o, kv);
					if (xp_check_opts(o->str, &why)) {
						struct xp_sect *ws = NULL;
						for (unsigned k = 0;
						     k < ld->sects->len; k++) {
							struct xp_sect *c =
							    ld->sects->pdata[k];
							if (c->name &&
							    !strcmp(
								c->kind,
								"workload") &&
							    !strcmp(c->name,
								    wl->name))
								ws = c;
						}
						rc = xp_fail(
						    ld,
						    ws ? xp_line(ws, "sweep")
						       : wl->line,
						    "sweep point %s with "
						    "[system %s]: %s",
						    kv, sys->name, why);
						g_free(why);
						g_free(kv);
						g_string_free(o, TRUE);
						goto out;
					}
				}
				for (unsigned r = 0; r < x->repeat; r++) {
					struct sfs_xp_cell c = {0};
					GString *var = g_string_new(kv);
					c.index = cells->len;
					c.sys = sys;
					c.wl = wl;
					c.sweep_val = pv;
					c.rep = r;
					c.seed = x->seed + r;
					c.id = g_strdup_printf(
					    "%s.%s%s%s.r%u", sys->name,
					    wl->name, kv ? "." : "",
					    kv ? kv : "", r);
					if (x->repeat > 1) {
						char *rr =
						    g_strdup_printf("r=%u", r);
						xp_join(var, rr);
						g_free(rr);
					}
					c.variant = g_string_free(var, FALSE);
					c.spec =
					    wl->sweep_kind == SFS_XP_SWEEP_PARAM
						? g_strdup_printf("%s,%s",
								  wl->spec, kv)
						: g_strdup(wl->spec);
					c.options = g_strdup(o->str);
					c.size = g_strdup(sys->size ? sys->size
								    : x->size);
					c.journal_size = g_strdup(
					    wl->sweep_kind ==
						    SFS_XP_SWEEP_JOURNAL_SIZE
						? pv
					    : sys->journal_size
						? sys->journal_size
						: x->journal_size);
					g_array_append_val(cells, c);
				}
				g_free(kv);
				g_string_free(o, TRUE);
			}
		}
	}
out:
	x->ncells = cells->len;
	x->cells = (struct sfs_xp_cell *)g_array_free(cells, FALSE);
	for (unsigned i = 0; i < x->ncells; i++) {
		char *d = g_strdup_printf("cells/%s", x->cells[i].id);
		char **full = sfs_xp_cell_argv(x, &x->cells[i], d);
		unsigned n = g_strv_length(full);
		/* without "run" and IMAGE */
		x->cells[i].argv = g_new0(char *, n - 1);
		for (unsigned k = 1; k + 1 < n; k++)
			x->cells[i].argv[k - 1] = g_strdup(full[k]);
		g_strfreev(full);
		g_free(d);
	}
	return rc;
}

char **sfs_xp_cell_argv(const struct sfs_experiment *x,
			const struct sfs_xp_cell *cell, const char *celldir)
{
	GPtrArray *a = g_ptr_array_new();
	GString *o = g_string_new(NULL);
	const struct sfs_xp_workload *wl = cell->wl;

	(void)x;
	/* the system's options, stats=, then a knob point */
	xp_join(o, cell->sys->options);
	g_string_append_printf(o, "%sstats=%s/stats.json", o->len ? "," : "",
			       celldir);
	if (wl->sweep_kind == SFS_XP_SWEEP_KNOB)
		g_string_append_printf(o, ",%s=%s", wl->sweep_key,
				       cell->sweep_val);
	g_ptr_array_add(a, g_strdup("run"));
	g_ptr_array_add(a, g_strdup("-q"));
	g_ptr_array_add(a, g_strdup("--results"));
	g_ptr_array_add(a, g_strdup_printf("%s/results.csv", celldir));
	g_ptr_array_add(a, g_strdup("-o"));
	g_ptr_array_add(a, g_string_free(o, FALSE));
	g_ptr_array_add(a, g_strdup("--size"));
	g_ptr_array_add(a, g_strdup(cell->size));
	if (cell->journal_size) {
		g_ptr_array_add(a, g_strdup("--journal-size"));
		g_ptr_array_add(a, g_strdup(cell->journal_size));
	}
	if (cell->sys->mkfs) {
		g_ptr_array_add(a, g_strdup("--mkfs"));
		g_ptr_array_add(a, g_strdup(cell->sys->mkfs));
	}
	g_ptr_array_add(a, g_strdup("--seed"));
	g_ptr_array_add(a, g_strdup_printf("%" G_GUINT64_FORMAT, cell->seed));
	g_ptr_array_add(a, g_strdup("-w"));
	g_ptr_array_add(a, g_strdup(cell->spec));
	g_ptr_array_add(a, g_strdup_printf("%s/image.img", celldir));
	g_ptr_array_add(a, NULL);
	return (char **)g_ptr_array_free(a, FALSE);
}

const struct sfs_xp_table *
sfs_xp_row_table(const struct sfs_experiment *x, const struct sfs_xp_cell *cell,
		 const char *phase, const char *metric, const char *first_phase)
{
	for (unsigned i = 0; i < x->ntables; i++) {
		const struct sfs_xp_table *t = &x->tables[i];
		if (strcmp(t->workload, cell->wl->name) != 0 ||
		    strcmp(t->metric, metric) != 0)
			continue;
		if (t->phase) {
			if (strcmp(t->phase, phase) == 0)
				return t;
		} else if (strcmp(t->rows, "phase") == 0 ||
			   strcmp(t->columns, "phase") == 0) {
			return t; /* every phase */
		} else if (first_phase && strcmp(first_phase, phase) == 0) {
			return t;
		}
	}
	return NULL;
}

/* The experiment's default name: the file's base name up to its first
 * '.', or "experiment" when that is not a safe name. */
static char *xp_default_name(const char *path)
{
	char *b = g_path_get_basename(path), *dot = strchr(b, '.');

	if (dot)
		*dot = '\0';
	if (!xp_safe_name(b)) {
		g_free(b);
		b = g_strdup("experiment");
	}
	return b;
}

int sfs_experiment_load(const char *path, struct sfs_experiment **out,
			char **err)
{
	struct xp_load ld = {.path = path, .err = err};
	struct sfs_experiment *x;
	GString *clean = g_string_new(NULL), *gopts = g_string_new(NULL);
	unsigned ns = 0, nw = 0, nt = 0;
	GError *ge = NULL;
	char *text = NULL;
	gsize len;
	int rc;

	*out = NULL;
	*err = NULL;
	x = g_new0(struct sfs_experiment, 1);
	x->path = g_strdup(path);
	x->name = xp_default_name(path);
	x->size = g_strdup("1G");
	x->repeat = 1;
	x->seed = 1;
	ld.x = x;
	ld.sects = g_ptr_array_new_with_free_func(xp_sect_free);
	if (!g_file_get_contents(path, &text, &len, &ge)) {
		*err = g_strdup_printf("%s: %s", path, ge->message);
		rc = ge->code == G_FILE_ERROR_NOENT ? -ENOENT : -EINVAL;
		g_error_free(ge);
		goto out;
	}
	if (strlen(text) != len) {
		rc = xp_fail(&ld, 0, "not a text file (a NUL byte)");
		goto out;
	}
	rc = xp_scan(&ld, text, clean);
	if (rc)
		goto out;
	ld.kf = g_key_file_new();
	if (!g_key_file_load_from_data(ld.kf, clean->str, clean->len,
				       G_KEY_FILE_NONE, &ge)) {
		rc = xp_fail(&ld, 0, "%s", ge->message);
		g_error_free(ge);
		goto out;
	}
	for (unsigned i = 0; i < ld.sects->len; i++) {
		struct xp_sect *s = ld.sects->pdata[i];
		ns += strcmp(s->kind, "system") == 0;
		nw += strcmp(s->kind, "workload") == 0;
		nt += strcmp(s->kind, "table") == 0;
		if (strcmp(s->kind, "global") == 0) {
			rc = xp_global(&ld, s, gopts);
			if (rc)
				goto out;
		}
	}
	if (!ns || !nw) {
		rc = xp_fail(&ld, 0,
			     "no [%s NAME] section: an experiment "
			     "runs at least one system and one "
			     "workload",
			     ns ? "workload" : "system");
		goto out;
	}
	x->systems = g_new0(struct sfs_xp_system, ns);
	x->workloads = g_new0(struct sfs_xp_workload, nw);
	x->tables = g_new0(struct sfs_xp_table, nt ? nt : 1);
	for (unsigned i = 0; i < ld.sects->len; i++) {
		struct xp_sect *s = ld.sects->pdata[i];
		if (strcmp(s->kind, "system") == 0)
			rc = xp_system(&ld, s, gopts->str,
				       &x->systems[x->nsystems++]);
		else if (strcmp(s->kind, "workload") == 0)
			rc =
			    xp_workload(&ld, s, &x->workloads[x->nworkloads++]);
		if (rc)
			goto out;
	}
	for (unsigned i = 0; i < ld.sects->len; i++) {
		struct xp_sect *s = ld.sects->pdata[i];
		if (strcmp(s->kind, "table") == 0) {
			rc = xp_table(&ld, s, &x->tables[x->ntables++]);
			if (rc)
				goto out;
		}
	}
	rc = xp_cells(&ld);
out:
	if (ld.kf)
		g_key_file_free(ld.kf);
	g_ptr_array_free(ld.sects, TRUE);
	g_string_free(clean, TRUE);
	g_string_free(gopts, TRUE);
	g_free(text);
	if (rc) {
		sfs_experiment_free(x);
		return rc;
	}
	*out = x;
	return 0;
}

void sfs_experiment_free(struct sfs_experiment *x)
{
	if (!x)
		return;
	for (unsigned i = 0; i < x->ncells; i++) {
		struct sfs_xp_cell *c = &x->cells[i];
		g_free(c->id);
		g_free(c->variant);
		g_strfreev(c->argv);
		g_free(c->spec);
		g_free(c->options);
		g_free(c->size);
		g_free(c->journal_size);
	}
	for (unsigned i = 0; i < x->nsystems; i++) {
		g_free(x->systems[i].name);
		g_free(x->systems[i].options);
		g_free(x->systems[i].journal_size);
		g_free(x->systems[i].size);
		g_free(x->systems[i].mkfs);
	}
	for (unsigned i = 0; i < x->nworkloads; i++) {
		g_free(x->workloads[i].name);
		g_free(x->workloads[i].spec);
		g_free(x->workloads[i].sweep_key);
		g_strfreev(x->workloads[i].sweep_vals);
	}
	for (unsigned i = 0; i < x->ntables; i++) {
		struct sfs_xp_table *t = &x->tables[i];
		g_free(t->name);
		g_free(t->workload);
		g_free(t->phase);
		g_free(t->metric);
		g_free(t->rows);
		g_free(t->columns);
		g_free(t->plot);
		g_free(t->title);
	}
	g_free(x->cells);
	g_free(x->systems);
	g_free(x->workloads);
	g_free(x->tables);
	g_free(x->path);
	g_free(x->name);
	g_free(x->title);
	g_free(x->size);
	g_free(x->journal_size);
	g_free(x->mkfs);
	g_free(x);
}
