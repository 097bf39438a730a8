/*
 * bench_render.c - the tables, plots and report of `simfs bench`
 * (doc/bench-output.md, "Tables, plots and the report").
 *
 * sfs_bench_render reads OUTDIR/results.csv once (rd_csv_read: RFC 4180
 * fields, nine columns, a header line), then per [table] section builds a
 * grid (rd_grid_build) and writes it out:
 *   tables/<table>.md       rd_md: title, what was measured on which
 *                           modelled hardware, the table (3 significant
 *                           digits, the unit in the header);
 *   plots/<table>.{gp,dat}  rd_plot: gnuplot script and data, then
 *   plots/<table>.{svg,png} gnuplot run as a child in plots/;
 *   report.html             rd_html_*, with html: every table, its SVG
 *                           inline, every cell's configuration and the
 *                           stats that explain it (cells/<id>/stats.json).
 *
 * Invariants:
 *  1. A grid cell is the mean of every results row with the table's
 *     workload, metric and phase (an axis "phase" without phase= takes
 *     every phase that has the metric) whose axis keys (system name,
 *     sweep value read out of the variant, phase) match; repetitions
 *     ("clients=4,r=1") and rows repeated per table fold into one mean.
 *     The CSV's table column is not used to select.
 *  2. Axis order is the file's: systems in section order, sweep values in
 *     the sweep's order.  A "kernel:<system>" system from the results
 *     follows its system, then a ratio entry simfs/kernel.
 *  3. Output depends only on the experiment and the input files: no dates,
 *     no paths of the machine, no locale (g_ascii_formatd).
 *  4. Bad input (a short CSV line, a bad number, unreadable JSON) ends in
 *     -EINVAL with "FILE:LINE: what" in *err; nothing aborts.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "bench_render.h"

#define RD_NCOLS 9

/* One line of results.csv. */
struct rd_row {
	char *f[RD_NCOLS]; /* the fields; f[7] also parsed into value */
	double value;
};

enum {
	RD_EXPERIMENT,
	RD_TABLE,
	RD_WORKLOAD,
	RD_PHASE,
	RD_SYSTEM,
	RD_VARIANT,
	RD_METRIC,
	RD_VALUE,
	RD_UNIT
};

/* What an axis entry stands for. */
enum rd_kind { RD_VAL, RD_KERNEL, RD_RATIO };

struct rd_ent {
	char *key;   /* matched against a results row */
	char *label; /* printed */
	enum rd_kind kind;
	unsigned a, b; /* RD_RATIO: entry a (simfs) over entry b */
};

/* An axis: "system", the workload's sweep key, "phase", or none. */
enum rd_axis_kind { RD_AX_SYSTEM, RD_AX_SWEEP, RD_AX_PHASE, RD_AX_ONE };

struct rd_axis {
	enum rd_axis_kind kind;
	const char *name; /* as in the file; "" for RD_AX_ONE */
	GPtrArray *ents;  /* of struct rd_ent */
};

struct rd_grid {
	const struct sfs_xp_table *t;
	const struct sfs_xp_workload *wl;
	const char *phase; /* the phase used, or NULL (none found) */
	const char *unit;  /* of the first matching row, or "" */
	struct rd_axis rows, cols;
	double *sum; /* [nrows * ncols] */
	unsigned *n;
	unsigned matched; /* results rows that went into the grid */
};

static void rd_row_free(gpointer p)
{
	struct rd_row *r = p;

	for (unsigned i = 0; i < RD_NCOLS; i++)
		g_free(r->f[i]);
	g_free(r);
}

static void rd_ent_free(gpointer p)
{
	struct rd_ent *e = p;

	g_free(e->key);
	g_free(e->label);
	g_free(e);
}

/*
 * Split one CSV line into fields (RFC 4180: "..." quotes, "" inside them
 * is a quote).  Returns the fields, or NULL for an unterminated quote.
 */
static GPtrArray *rd_csv_split(const char *line)
{
	GPtrArray *f = g_ptr_array_new_with_free_func(g_free);
	const char *p = line;

	for (;;) {
		GString *s = g_string_new(NULL);

		if (*p == '"') {
			p++;
			for (;;) {
				if (!*p) {
					g_string_free(s, TRUE);
					g_ptr_array_free(f, TRUE);
					return NULL;
				}
				if (*p == '"' && p[1] == '"') {
					g_string_append_c(s, '"');
					p += 2;
				} else if (*p == '"') {
					p++;
					break;
				} else {
					g_string_append_c(s, *p++);
				}
			}
		}
		while (*p && *p != ',')
			g_string_append_c(s, *p++);
		g_ptr_array_add(f, g_string_free(s, FALSE));
		if (!*p)
			return f;
		p++;
	}
}

/*
 * Read results.csv into rows (struct rd_row).  0, -ENOENT (no file) or
 * -EINVAL (a line without 9 fields, a value that is not a number), with
 * "PATH:LINE: what" in *err.
 */
static int rd_csv_read(const char *path, GPtrArray **out, char **err)
{
	char *text = NULL;
	GError *gerr = NULL;
	GPtrArray *rows;
	char **lines;
	int rc = 0;

	if (!g_file_get_contents(path, &text, NULL, &gerr)) {
		*err = g_strdup_printf("%s: %s", path, gerr->message);
		rc = gerr->code == G_FILE_ERROR_NOENT ? -ENOENT : -EIO;
		g_error_free(gerr);
		return rc;
	}
	rows = g_ptr_array_new_with_free_func(rd_row_free);
	lines = g_strsplit(text, "\n", -1);
	g_free(text);
	for (unsigned ln = 0; lines[ln]; ln++) {
		char *l = lines[ln];
		size_t len = strlen(l);
		GPtrArray *f;
		struct rd_row *r;
		char *end;

		if (len && l[len - 1] == '\r')
			l[--len] = '\0';
		if (!len)
			continue;
		f = rd_csv_split(l);
		if (!f) {
			*err = g_strdup_printf("%s:%u: unterminated quote",
					       path, ln + 1);
			rc = -EINVAL;
			goto out_free;
		}
		if (f->len != RD_NCOLS) {
			*err = g_strdup_printf(
			    "%s:%u: %u fields, expected %d (experiment,table,"
			    "workload,phase,system,variant,metric,value,unit)",
			    path, ln + 1, f->len, RD_NCOLS);
			g_ptr_array_free(f, TRUE);
			rc = -EINVAL;
			goto out_free;
		}
		if (ln == 0 && !strcmp(f->pdata[0], "experiment")) {
			g_ptr_array_free(f, TRUE);
			continue; /* the header */
		}
		r = g_new0(struct rd_row, 1);
		for (unsigned i = 0; i < RD_NCOLS; i++)
			r->f[i] = g_strdup(f->pdata[i]);
		g_ptr_array_free(f, TRUE);
		r->value = g_ascii_strtod(r->f[RD_VALUE], &end);
		if (!*r->f[RD_VALUE] || *end || !isfinite(r->value)) {
			*err = g_strdup_printf("%s:%u: bad value '%s' for %s",
					       path, ln + 1, r->f[RD_VALUE],
					       r->f[RD_METRIC]);
			rd_row_free(r);
			rc = -EINVAL;
			goto out_free;
		}
		g_ptr_array_add(rows, r);
	}
	g_strfreev(lines);
	*out = rows;
	return 0;

out_free:
	g_strfreev(lines);
	g_ptr_array_free(rows, TRUE);
	return rc;
}

/* The value of KEY in "k=v,k=v" text (a variant, -o options), last one
 * winning, as a new string; NULL if absent. */
static char *rd_kv_get(const char *text, const char *key)
{
	char **kv = g_strsplit(text ? text : "", ",", -1);
	size_t klen = strlen(key);
	char *val = NULL;

	for (unsigned i = 0; kv[i]; i++) {
		if (!strncmp(kv[i], key, klen) && kv[i][klen] == '=') {
			g_free(val);
			val = g_strdup(kv[i] + klen + 1);
		}
	}
	g_strfreev(kv);
	return val;
}

/*
 * Format V with 3 significant digits in fixed notation ("1790", "1.79",
 * "0.0326"), the same on every locale.  buf holds G_ASCII_DTOSTR_BUF_SIZE.
 */
static const char *rd_fmt3(char *buf, double v)
{
	int d, dec;
	double scale, r;
	char fmt[16];

	if (v == 0 || !isfinite(v))
		return strcpy(buf, isfinite(v) ? "0" : "-");
	d = (int)floor(log10(fabs(v)));
	scale = pow(10, d - 2);
	r = round(v / scale) * scale;
	if (fabs(r) >= pow(10, d + 1))
		d++;
	dec = d >= 2 ? 0 : 2 - d;
	g_snprintf(fmt, sizeof(fmt), "%%.%df", dec);
	g_ascii_formatd(buf, G_ASCII_DTOSTR_BUF_SIZE, fmt, r);
	return buf;
}

static unsigned rd_ent_add(struct rd_axis *ax, const char *key, char *label,
			   enum rd_kind kind)
{
	struct rd_ent *e = g_new0(struct rd_ent, 1);

	e->key = g_strdup(key);
	e->label = label;
	e->kind = kind;
	g_ptr_array_add(ax->ents, e);
	return ax->ents->len - 1;
}

static struct rd_ent *rd_ent(const struct rd_axis *ax, unsigned i)
{
	return ax->ents->pdata[i];
}

/* Whether row R belongs to grid G's table (workload, metric, phase). */
static bool rd_row_selected(const struct rd_grid *g, const struct rd_row *r)
{
	if (strcmp(r->f[RD_WORKLOAD], g->t->workload) ||
	    strcmp(r->f[RD_METRIC], g->t->metric))
		return false;
	if ((g->rows.kind == RD_AX_PHASE || g->cols.kind == RD_AX_PHASE) &&
	    !g->t->phase)
		return true; /* every phase that has the metric */
	return g->phase && !strcmp(r->f[RD_PHASE], g->phase);
}

/* Row R's key on axis AX, as a new string (NULL: not on the axis). */
static char *rd_row_key(const struct rd_axis *ax, const struct rd_row *r)
{
	switch (ax->kind) {
	case RD_AX_SYSTEM:
		return g_strdup(r->f[RD_SYSTEM]);
	case RD_AX_SWEEP:
		return rd_kv_get(r->f[RD_VARIANT], ax->name);
	case RD_AX_PHASE:
		return g_strdup(r->f[RD_PHASE]);
	case RD_AX_ONE:
		break;
	}
	return g_strdup("");
}

static bool rd_has_str(GPtrArray *a, const char *s)
{
	for (unsigned i = 0; i < a->len; i++)
		if (!strcmp(a->pdata[i], s))
			return true;
	return false;
}

/*
 * Fill axis AX named NAME for grid G (its table's rows or columns).  0, or
 * -EINVAL with *err for a name that is neither "system", the workload's
 * sweep key, "phase" nor empty / the metric.
 */
static int rd_axis_build(struct rd_grid *g, const struct sfs_experiment *x,
			 GPtrArray *rows, struct rd_axis *ax, const char *name,
			 bool is_col, char **err)
{
	const struct sfs_xp_workload *wl = g->wl;

	ax->ents = g_ptr_array_new_with_free_func(rd_ent_free);
	ax->name = name ? name : "";
	if (!strcmp(ax->name, "system")) {
		GPtrArray *kern = g_ptr_array_new_with_free_func(g_free);
		GPtrArray *ratios = g_ptr_array_new();

		ax->kind = RD_AX_SYSTEM;
		for (unsigned i = 0; i < rows->len; i++) {
			const struct rd_row *r = rows->pdata[i];

			if (rd_row_selected(g, r) &&
			    g_str_has_prefix(r->f[RD_SYSTEM], "kernel:") &&
			    !rd_has_str(kern, r->f[RD_SYSTEM]))
				g_ptr_array_add(kern,
						g_strdup(r->f[RD_SYSTEM]));
		}
		for (unsigned i = 0; i < x->nsystems; i++) {
			const char *s = x->systems[i].name;
			char *k = g_strconcat("kernel:", s, NULL);
			unsigned a = rd_ent_add(ax, s, g_strdup(s), RD_VAL);

			for (unsigned j = 0; j < kern->len; j++) {
				struct rd_ent *e;

				if (strcmp(kern->pdata[j], k))
					continue;
				rd_ent_add(ax, k, g_strdup(k), RD_KERNEL);
				e = rd_ent(ax,
					   rd_ent_add(ax, "", NULL, RD_RATIO));
				e->a = a;
				e->b = a + 1;
				g_ptr_array_add(ratios, e);
				g_free(g_ptr_array_steal_index(kern, j));
				break;
			}
			g_free(k);
		}
		for (unsigned j = 0; j < kern->len; j++)
			rd_ent_add(ax, kern->pdata[j], g_strdup(kern->pdata[j]),
				   RD_KERNEL);
		for (unsigned j = 0; j < ratios->len; j++) {
			struct rd_ent *e = ratios->pdata[j];

			e->label =
			    ratios->len == 1
				? g_strdup("simfs/kernel")
				: g_strdup_printf("simfs/kernel (%s)",
						  rd_ent(ax, e->a)->label);
		}
		g_ptr_array_free(ratios, TRUE);
		g_ptr_array_free(kern, TRUE);
	} else if (wl->sweep_key && !strcmp(ax->name, wl->sweep_key)) {
		ax->kind = RD_AX_SWEEP;
		for (unsigned i = 0; wl->sweep_vals && wl->sweep_vals[i]; i++)
			rd_ent_add(ax, wl->sweep_vals[i],
				   is_col ? g_strdup_printf("%s=%s", ax->name,
							    wl->sweep_vals[i])
					  : g_strdup(wl->sweep_vals[i]),
				   RD_VAL);
	} else if (!strcmp(ax->name, "phase")) {
		ax->kind = RD_AX_PHASE;
		for (unsigned i = 0; i < rows->len; i++) {
			const struct rd_row *r = rows->pdata[i];
			bool seen = false;

			if (!rd_row_selected(g, r))
				continue;
			for (unsigned j = 0; j < ax->ents->len && !seen; j++)
				seen =
				    !strcmp(rd_ent(ax, j)->key, r->f[RD_PHASE]);
			if (!seen)
				rd_ent_add(ax, r->f[RD_PHASE],
					   g_strdup(r->f[RD_PHASE]), RD_VAL);
		}
	} else if (!*ax->name || !strcmp(ax->name, g->t->metric)) {
		ax->kind = RD_AX_ONE;
		rd_ent_add(ax, "", g_strdup(g->t->metric), RD_VAL);
	} else {
		*err = g_strdup_printf(
		    "table %s: %s '%s' is neither \"system\", \"phase\" nor "
		    "workload %s's sweep key",
		    g->t->name, is_col ? "columns" : "rows", ax->name,
		    wl->name);
		return -EINVAL;
	}
	return 0;
}

static void rd_grid_free(struct rd_grid *g)
{
	if (g->rows.ents)
		g_ptr_array_free(g->rows.ents, TRUE);
	if (g->cols.ents)
		g_ptr_array_free(g->cols.ents, TRUE);
	g_free(g->sum);
	g_free(g->n);
}

static int rd_find(const struct rd_axis *ax, const char *key)
{
	for (unsigned i = 0; i < ax->ents->len; i++)
		if (rd_ent(ax, i)->kind != RD_RATIO &&
		    !strcmp(rd_ent(ax, i)->key, key))
			return (int)i;
	return -1;
}

/*
 * Build table T's grid from the results rows (invariant 1).  0, or
 * -EINVAL with *err (a table naming a workload or axis that is not there).
 */
static int rd_grid_build(const struct sfs_experiment *x,
			 const struct sfs_xp_table *t, GPtrArray *rows,
			 struct rd_grid *g, char **err)
{
	unsigned nr, nc;
	int rc;

	memset(g, 0, sizeof(*g));
	g->t = t;
	g->unit = "";
	for (unsigned i = 0; i < x->nworkloads; i++)
		if (!strcmp(x->workloads[i].name, t->workload))
			g->wl = &x->workloads[i];
	if (!g->wl) {
		*err = g_strdup_printf("table %s: no workload '%s'", t->name,
				       t->workload);
		return -EINVAL;
	}
	g->phase = t->phase;
	for (unsigned i = 0; i < rows->len && !g->phase; i++) {
		const struct rd_row *r = rows->pdata[i];

		if (!strcmp(r->f[RD_WORKLOAD], t->workload) &&
		    !strcmp(r->f[RD_METRIC], t->metric))
			g->phase = r->f[RD_PHASE];
	}
	g->rows.kind = g->cols.kind = RD_AX_ONE;
	if (t->rows && !strcmp(t->rows, "phase"))
		g->rows.kind = RD_AX_PHASE;
	if (t->columns && !strcmp(t->columns, "phase"))
		g->cols.kind = RD_AX_PHASE;
	rc = rd_axis_build(g, x, rows, &g->rows, t->rows, false, err);
	if (!rc)
		rc = rd_axis_build(g, x, rows, &g->cols, t->columns, true, err);
	if (rc)
		return rc;
	nr = g->rows.ents->len;
	nc = g->cols.ents->len;
	g->sum = g_new0(double, (size_t)nr *nc + 1);
	g->n = g_new0(unsigned, (size_t)nr *nc + 1);
	for (unsigned i = 0; i < rows->len; i++) {
		const struct rd_row *r = rows->pdata[i];
		char *rk, *ck;
		int ri, ci;

		if (!rd_row_selected(g, r))
			continue;
		rk = rd_row_key(&g->rows, r);
		ck = rd_row_key(&g->cols, r);
		ri = rk ? rd_find(&g->rows, rk) : -1;
		ci = ck ? rd_find(&g->cols, ck) : -1;
		g_free(rk);
		g_free(ck);
		if (ri < 0 || ci < 0)
			continue;
		if (!g->matched++)
			g->unit = r->f[RD_UNIT];
		g->sum[(size_t)ri * nc + ci] += r->value;
		g->n[(size_t)ri * nc + ci]++;
	}
	return 0;
}

/* Grid G's value at (ri, ci): a mean, or a ratio of two; false if none. */
static bool rd_value(const struct rd_grid *g, unsigned ri, unsigned ci,
		     double *v)
{
	const struct rd_ent *re = rd_ent(&g->rows, ri);
	const struct rd_ent *ce = rd_ent(&g->cols, ci);
	unsigned nc = g->cols.ents->len;
	double a, b;

	if (re->kind == RD_RATIO && ce->kind == RD_RATIO)
		return false;
	if (re->kind == RD_RATIO || ce->kind == RD_RATIO) {
		bool ok = re->kind == RD_RATIO ? rd_value(g, re->a, ci, &a) &&
						     rd_value(g, re->b, ci, &b)
					       : rd_value(g, ri, ce->a, &a) &&
						     rd_value(g, ri, ce->b, &b);
		if (!ok || b == 0)
			return false;
		*v = a / b;
		return true;
	}
	if (!g->n[(size_t)ri * nc + ci])
		return false;
	*v = g->sum[(size_t)ri * nc + ci] / g->n[(size_t)ri * nc + ci];
	return true;
}

/* "device=X, cpu=Y" of system S's options; "simfs run's defaults" parts
 * where they are not set.  Free the result. */
static char *rd_hw(const struct sfs_xp_system *s,
		   const struct sfs_xp_workload *wl)
{
	const char *key = wl->sweep_key ? wl->sweep_key : "";
	char *dev = !strcmp(key, "device") ? g_strdup("swept")
					   : rd_kv_get(s->options, "device");
	char *cpu = !strcmp(key, "cpu") ? g_strdup("swept")
					: rd_kv_get(s->options, "cpu");
	char *hw = g_strdup_printf("device %s, CPU %s", dev ? dev : "default",
				   cpu ? cpu : "default");

	g_free(dev);
	g_free(cpu);
	return hw;
}

/* The sentence saying on which modelled hardware the systems ran WL. */
static void rd_hw_text(GString *s, const struct sfs_experiment *x,
		       const struct sfs_xp_workload *wl)
{
	char *first = x->nsystems ? rd_hw(&x->systems[0], wl) : NULL;
	bool same = true;

	for (unsigned i = 1; i < x->nsystems && same; i++) {
		char *hw = rd_hw(&x->systems[i], wl);

		same = !strcmp(hw, first);
		g_free(hw);
	}
	if (!x->nsystems) {
		g_string_append(s, "Modelled hardware: none (no systems).");
	} else if (same) {
		g_string_append_printf(s, "Modelled hardware: %s.", first);
	} else {
		g_string_append(s, "Modelled hardware:");
		for (unsigned i = 0; i < x->nsystems; i++) {
			char *hw = rd_hw(&x->systems[i], wl);

			g_string_append_printf(s, "%s %s on %s", i ? ";" : "",
					       x->systems[i].name, hw);
			g_free(hw);
		}
		g_string_append_c(s, '.');
	}
	g_free(first);
}

static const char *rd_title(const struct sfs_xp_table *t)
{
	return t->title && *t->title ? t->title : t->name;
}

static const char *rd_axis_head(const struct rd_axis *ax)
{
	return ax->kind == RD_AX_ONE ? "" : ax->name;
}

/* The text under a table's title: what was measured, on what. */
static void rd_desc(GString *s, const struct sfs_experiment *x,
		    const struct rd_grid *g)
{
	const struct sfs_xp_table *t = g->t;

	g_string_append_printf(s, "%s", t->metric);
	if (*g->unit && strcmp(g->unit, t->metric))
		g_string_append_printf(s, " (%s)", g->unit);
	g_string_append_printf(s, " of workload %s (`%s`)", g->wl->name,
			       g->wl->spec ? g->wl->spec : "");
	if (t->phase ||
	    (g->rows.kind != RD_AX_PHASE && g->cols.kind != RD_AX_PHASE))
		g_string_append_printf(s, ", phase %s",
				       g->phase ? g->phase : "(none)");
	g_string_append_printf(s, "; rows: %s, columns: %s",
			       *g->rows.name ? g->rows.name : t->metric,
			       *g->cols.name ? g->cols.name : t->metric);
	if (x->repeat > 1)
		g_string_append_printf(s,
				       "; each value is the mean of %u "
				       "repetitions",
				       x->repeat);
	g_string_append(s, ".\n");
	rd_hw_text(s, x, g->wl);
	g_string_append_c(s, '\n');
	if (!g->matched)
		g_string_append_printf(s,
				       "No results for metric %s of "
				       "workload %s.\n",
				       t->metric, t->workload);
}

/* A column's header: its label and, unless a ratio, the unit. */
static char *rd_col_head(const struct rd_grid *g, unsigned ci)
{
	const struct rd_ent *e = rd_ent(&g->cols, ci);

	if (e->kind == RD_RATIO || !*g->unit)
		return g_strdup(e->label);
	return g_strdup_printf("%s (%s)", e->label, g->unit);
}

/* Markdown text of grid G: title, description, the table. */
static void rd_md(GString *s, const struct sfs_experiment *x,
		  const struct rd_grid *g)
{
	char buf[G_ASCII_DTOSTR_BUF_SIZE];

	g_string_append_printf(s, "## %s\n\n", rd_title(g->t));
	rd_desc(s, x, g);
	g_string_append_printf(s, "\n| %s |", rd_axis_head(&g->rows));
	for (unsigned c = 0; c < g->cols.ents->len; c++) {
		char *h = rd_col_head(g, c);

		g_string_append_printf(s, " %s |", h);
		g_free(h);
	}
	g_string_append(s, "\n|:---|");
	for (unsigned c = 0; c < g->cols.ents->len; c++)
		g_string_append(s, "---:|");
	g_string_append_c(s, '\n');
	for (unsigned r = 0; r < g->rows.ents->len; r++) {
		g_string_append_printf(s, "| %s |", rd_ent(&g->rows, r)->label);
		for (unsigned c = 0; c < g->cols.ents->len; c++) {
			double v;

			g_string_append_printf(
			    s, " %s |",
			    rd_value(g, r, c, &v) ? rd_fmt3(buf, v) : "-");
		}
		g_string_append_c(s, '\n');
	}
}

static int rd_write(const char *path, const char *text, size_t len, char **err)
{
	GError *gerr = NULL;

	if (!g_file_set_contents(path, text, len, &gerr)) {
		*err = g_strdup_printf("%s: %s", path, gerr->message);
		g_error_free(gerr);
		return -EIO;
	}
	return 0;
}

/* Whether NAME can be one file name under outdir (no '/', not "." or ".."
 * or hidden).  Otherwise -EINVAL with *err naming WHAT. */
static int rd_check_name(const char *what, const char *name, char **err)
{
	if (name && *name && *name != '.' && !strchr(name, '/'))
		return 0;
	*err = g_strdup_printf("%s name '%s' cannot be a file name", what,
			       name ? name : "");
	return -EINVAL;
}

static int rd_mkdir(const char *path, char **err)
{
	if (g_mkdir_with_parents(path, 0755)) {
		*err = g_strdup_printf("%s: %s", path, g_strerror(errno));
		return -EIO;
	}
	return 0;
}

/* Whether every row key is a number; and every one a power of two. */
static bool rd_rows_numeric(const struct rd_grid *g, bool *pow2)
{
	*pow2 = g->rows.ents->len > 1;
	if (g->rows.kind != RD_AX_SWEEP)
		return false;
	for (unsigned r = 0; r < g->rows.ents->len; r++) {
		const char *k = rd_ent(&g->rows, r)->key;
		char *end;
		double v = g_ascii_strtod(k, &end);
		uint64_t u = (uint64_t)v;

		if (!*k || *end || !isfinite(v))
			return false;
		if (v < 1 || v != (double)u || (u & (u - 1)))
			*pow2 = false;
	}
	return true;
}

/* A gnuplot string literal of S (double quotes, escaped). */
static void rd_gp_str(GString *s, const char *text)
{
	g_string_append_c(s, '"');
	for (const char *p = text; *p; p++) {
		if (*p == '"' || *p == '\\')
			g_string_append_c(s, '\\');
		g_string_append_c(s, *p);
	}
	g_string_append_c(s, '"');
}

/*
 * The gnuplot data of grid G: a comment naming the columns, then one line
 * per row (ratio rows left out): the row's label, quoted (the bare number
 * with NUMERIC: the x of a lines plot), then a value per
 * plotted column ("-" when missing).  Columns of ratios are left out too.
 */
static void rd_dat(GString *s, const struct rd_grid *g, bool numeric)
{
	char buf[G_ASCII_DTOSTR_BUF_SIZE];

	g_string_append_printf(s, "# %s", rd_axis_head(&g->rows));
	for (unsigned c = 0; c < g->cols.ents->len; c++)
		if (rd_ent(&g->cols, c)->kind != RD_RATIO)
			g_string_append_printf(s, "\t%s",
					       rd_ent(&g->cols, c)->label);
	g_string_append_c(s, '\n');
	for (unsigned r = 0; r < g->rows.ents->len; r++) {
		if (rd_ent(&g->rows, r)->kind == RD_RATIO)
			continue;
		if (numeric)
			g_string_append(s, rd_ent(&g->rows, r)->key);
		else
			rd_gp_str(s, rd_ent(&g->rows, r)->label);
		for (unsigned c = 0; c < g->cols.ents->len; c++) {
			double v;

			if (rd_ent(&g->cols, c)->kind == RD_RATIO)
				continue;
			g_string_append_c(s, '\t');
			g_string_append(
			    s,
			    rd_value(g, r, c, &v)
				? g_ascii_formatd(buf, sizeof(buf), "%.6g", v)
				: "-");
		}
		g_string_append_c(s, '\n');
	}
}

/* The gnuplot script for grid G drawing NAME.dat into NAME.svg/.png. */
static void rd_gp(GString *s, const struct sfs_experiment *x,
		  const struct rd_grid *g)
{
	const char *name = g->t->name;
	bool lines = !strcmp(g->t->plot, "lines"), pow2;
	bool numeric = lines && rd_rows_numeric(g, &pow2);
	unsigned col = 2;
	GString *ylab = g_string_new(g->t->metric);
	unsigned nplot = 0;

	for (unsigned c = 0; c < g->cols.ents->len; c++)
		nplot += rd_ent(&g->cols, c)->kind != RD_RATIO;
	if (*g->unit && strcmp(g->unit, g->t->metric))
		g_string_append_printf(ylab, " (%s)", g->unit);
	g_string_append(s, "# simfs bench: ");
	g_string_append_printf(s, "table %s of experiment %s\n", name,
			       x->name ? x->name : "");
	g_string_append(s, "set terminal svg size 720,432 fixed font "
			   "\"sans,11\" background \"white\"\n");
	g_string_append_printf(s, "set output \"%s.svg\"\n", name);
	g_string_append(s, nplot > 1 ? "set key outside right top\n"
				     : "unset key\n");
	g_string_append(s, "set datafile missing \"-\"\n"
			   "set grid ytics\n"
			   "set yrange [0:*]\n"
			   "set offsets 0, 0, graph 0.08, 0\n");
	g_string_append(s, "set title ");
	rd_gp_str(s, rd_title(g->t));
	g_string_append(s, " noenhanced\nset ylabel ");
	rd_gp_str(s, ylab->str);
	g_string_append(s, " noenhanced\nset xlabel ");
	rd_gp_str(s, rd_axis_head(&g->rows));
	g_string_append(s, " noenhanced\n");
	if (!lines) {
		g_string_append(s, "set style data histograms\n"
				   "set style histogram clustered gap 1\n"
				   "set style fill solid 0.8 border -1\n"
				   "set boxwidth 0.9\n");
	} else if (numeric) {
		if (pow2)
			g_string_append(s, "set logscale x 2\n");
		g_string_append(s, "set xtics (");
		for (unsigned r = 0, k = 0; r < g->rows.ents->len; r++) {
			if (rd_ent(&g->rows, r)->kind == RD_RATIO)
				continue;
			g_string_append_printf(s, "%s%s", k++ ? ", " : "",
					       rd_ent(&g->rows, r)->key);
		}
		g_string_append(s, ")\n");
		g_string_append(s, "set offsets graph 0.05, graph 0.05, "
				   "graph 0.08, 0\n");
	} else {
		g_string_append(s, "set offsets 0.25, 0.25, graph 0.08, 0\n");
	}
	g_string_append(s, "plot ");
	for (unsigned c = 0; c < g->cols.ents->len; c++) {
		if (rd_ent(&g->cols, c)->kind == RD_RATIO)
			continue;
		g_string_append(s, col > 2 ? ", \\\n     \"\"" : "");
		if (col == 2)
			g_string_append_printf(s, "\"%s.dat\"", name);
		if (!lines)
			g_string_append_printf(s, " using %u:xtic(1)", col);
		else if (numeric)
			g_string_append_printf(s, " using 1:%u", col);
		else
			g_string_append_printf(s, " using 0:%u:xtic(1)", col);
		g_string_append(s, " title ");
		rd_gp_str(s, rd_ent(&g->cols, c)->label);
		g_string_append(s, lines ? " noenhanced with linespoints lw 2"
					 : " noenhanced");
		col++;
	}
	g_string_append_c(s, '\n');
	g_string_append(s, "set terminal pngcairo size 720,432 font "
			   "\"sans,10\" background \"white\"\n");
	g_string_append_printf(s,
			       "set output \"%s.png\"\nreplot\n"
			       "set output\n",
			       name);
	g_string_free(ylab, TRUE);
}

/*
 * Run gnuplot on SCRIPT in DIR ($SFS_GNUPLOT overrides the program).  0,
 * -ENOENT (not installed: the message names the package) or -EIO.
 */
static int rd_gnuplot(const char *dir, const char *script, char **err)
{
	const char *prog = g_getenv("SFS_GNUPLOT");
	char *argv[] = {(char *)(prog && *prog ? prog : "gnuplot"),
			(char *)script, NULL};
	char *serr = NULL;
	GError *gerr = NULL;
	int status = 0, rc = 0;

	if (!g_spawn_sync(dir, argv, NULL,
			  G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL,
			  NULL, NULL, NULL, &serr, &status, &gerr)) {
		bool noent = gerr->domain == G_SPAWN_ERROR &&
			     gerr->code == G_SPAWN_ERROR_NOENT;

		*err = noent ? g_strdup_printf(
				   "cannot run %s: not installed (on Debian: "
				   "apt-get install gnuplot-nox)",
				   argv[0])
			     : g_strdup_printf("cannot run %s: %s", argv[0],
					       gerr->message);
		rc = noent ? -ENOENT : -EIO;
		g_error_free(gerr);
	} else if (!g_spawn_check_wait_status(status, &gerr)) {
		char *nl = serr ? strchr(g_strstrip(serr), '\n') : NULL;

		if (nl)
			*nl = '\0';
		*err =
		    g_strdup_printf("%s %s/%s failed: %s", argv[0], dir, script,
				    serr && *serr ? serr : gerr->message);
		g_error_free(gerr);
		rc = -EIO;
	}
	g_free(serr);
	return rc;
}

/* Write plots/<table>.{gp,dat} and run gnuplot for .svg and .png. */
static int rd_plot(const struct sfs_experiment *x, const struct rd_grid *g,
		   const char *pdir, char **err)
{
	GString *gp = g_string_new(NULL), *dat = g_string_new(NULL);
	char *gpname = g_strconcat(g->t->name, ".gp", NULL);
	char *datname = g_strconcat(g->t->name, ".dat", NULL);
	char *gppath = g_build_filename(pdir, gpname, NULL);
	char *datpath = g_build_filename(pdir, datname, NULL);
	int rc;

	bool pow2;

	rd_gp(gp, x, g);
	rd_dat(dat, g,
	       !strcmp(g->t->plot, "lines") && rd_rows_numeric(g, &pow2));
	rc = rd_write(gppath, gp->str, gp->len, err);
	if (!rc)
		rc = rd_write(datpath, dat->str, dat->len, err);
	if (!rc)
		rc = rd_gnuplot(pdir, gpname, err);
	g_free(gpname);
	g_free(datname);
	g_free(gppath);
	g_free(datpath);
	g_string_free(gp, TRUE);
	g_string_free(dat, TRUE);
	return rc;
}

/* Append TEXT to S with <, >, &, " escaped. */
static void rd_esc(GString *s, const char *text)
{
	char *e = g_markup_escape_text(text ? text : "", -1);

	g_string_append(s, e);
	g_free(e);
}

/* rd_esc, with `code` spans of TEXT (Markdown) as <code> elements. */
static void rd_esc_code(GString *s, const char *text)
{
	char **parts = g_strsplit(text, "`", -1);

	for (unsigned i = 0; parts[i]; i++) {
		bool code = i % 2 && parts[i + 1];

		g_string_append(s, code ? "<code>" : i % 2 ? "`" : "");
		rd_esc(s, parts[i]);
		if (code)
			g_string_append(s, "</code>");
	}
	g_strfreev(parts);
}

static const char rd_css[] =
    "body{font-family:sans-serif;margin:2em auto;max-width:60em;"
    "color:#222}\n"
    "table{border-collapse:collapse;margin:0.5em 0}\n"
    "th,td{border:1px solid #bbb;padding:0.2em 0.6em}\n"
    "td{text-align:right;font-variant-numeric:tabular-nums}\n"
    "thead th{background:#eee}\n"
    "table.kv td,td.text{text-align:left}\n"
    "figure{margin:0.5em 0}\n"
    "details{margin:0.4em 0}\n"
    "summary{cursor:pointer;font-family:monospace}\n"
    "code{background:#f4f4f4}\n";

/* The HTML table of grid G. */
static void rd_html_table(GString *s, const struct rd_grid *g)
{
	char buf[G_ASCII_DTOSTR_BUF_SIZE];

	g_string_append(s, "<table class=\"results\">\n<thead><tr><th>");
	rd_esc(s, rd_axis_head(&g->rows));
	g_string_append(s, "</th>");
	for (unsigned c = 0; c < g->cols.ents->len; c++) {
		char *h = rd_col_head(g, c);

		g_string_append(s, "<th>");
		rd_esc(s, h);
		g_string_append(s, "</th>");
		g_free(h);
	}
	g_string_append(s, "</tr></thead>\n<tbody>\n");
	for (unsigned r = 0; r < g->rows.ents->len; r++) {
		g_string_append(s, "<tr><th>");
		rd_esc(s, rd_ent(&g->rows, r)->label);
		g_string_append(s, "</th>");
		for (unsigned c = 0; c < g->cols.ents->len; c++) {
			double v;

			g_string_append_printf(
			    s, "<td>%s</td>",
			    rd_value(g, r, c, &v) ? rd_fmt3(buf, v) : "-");
		}
		g_string_append(s, "</tr>\n");
	}
	g_string_append(s, "</tbody>\n</table>\n");
}

/* TEXT with every FROM replaced by TO, as a new string. */
static char *rd_replace(const char *text, const char *from, const char *to)
{
	char **parts = g_strsplit(text, from, -1);
	char *r = g_strjoinv(to, parts);

	g_strfreev(parts);
	return r;
}

/*
 * Append the SVG at PATH inline, without its XML prolog, its ids (and the
 * references to them) prefixed with PFX: gnuplot names its markers and
 * filters the same in every file, and ids are unique in one HTML page.
 */
static int rd_html_svg(GString *s, const char *path, const char *pfx,
		       char **err)
{
	static const char *const refs[] = {"id='", "id=\"", "href='#",
					   "href=\"#", "url(#"};
	char *text = NULL, *svg;
	GError *gerr = NULL;

	if (!g_file_get_contents(path, &text, NULL, &gerr)) {
		*err = g_strdup_printf("%s: %s", path, gerr->message);
		g_error_free(gerr);
		return -EIO;
	}
	svg = strstr(text, "<svg");
	if (!svg) {
		*err = g_strdup_printf("%s: not an SVG file", path);
		g_free(text);
		return -EINVAL;
	}
	svg = g_strdup(svg);
	for (unsigned i = 0; i < G_N_ELEMENTS(refs); i++) {
		char *to = g_strconcat(refs[i], pfx, "-", NULL);
		char *r = rd_replace(svg, refs[i], to);

		g_free(svg);
		g_free(to);
		svg = r;
	}
	g_string_append(s, "<figure>\n");
	g_string_append(s, svg);
	g_string_append(s, "</figure>\n");
	g_free(svg);
	g_free(text);
	return 0;
}

static void rd_kv_row(GString *s, const char *k, const char *v)
{
	g_string_append(s, "<tr><th>");
	rd_esc(s, k);
	g_string_append(s, "</th><td>");
	rd_esc(s, v);
	g_string_append(s, "</td></tr>\n");
}

/* The node at PATH ("journal.commits") under root R, or NULL. */
static JsonNode *rd_json_at(JsonNode *r, const char *path)
{
	char **parts = g_strsplit(path, ".", -1);

	for (unsigned i = 0; r && parts[i]; i++) {
		JsonObject *o =
		    JSON_NODE_HOLDS_OBJECT(r) ? json_node_get_object(r) : NULL;

		r = o && json_object_has_member(o, parts[i])
			? json_object_get_member(o, parts[i])
			: NULL;
	}
	g_strfreev(parts);
	return r;
}

/* A scalar JSON node as text (numbers as the engine wrote them). */
static char *rd_json_text(JsonNode *n)
{
	char buf[G_ASCII_DTOSTR_BUF_SIZE];

	if (!n || !JSON_NODE_HOLDS_VALUE(n))
		return NULL;
	switch (json_node_get_value_type(n)) {
	case G_TYPE_INT64:
		return g_strdup_printf("%" G_GINT64_FORMAT,
				       json_node_get_int(n));
	case G_TYPE_DOUBLE:
		return g_strdup(g_ascii_formatd(buf, sizeof(buf), "%.4g",
						json_node_get_double(n)));
	case G_TYPE_BOOLEAN:
		return g_strdup(json_node_get_boolean(n) ? "true" : "false");
	case G_TYPE_STRING:
		return g_strdup(json_node_get_string(n));
	default:
		return NULL;
	}
}

/* One stats row: LABEL and the scalar at PATH, if the JSON has it. */
static void rd_stat(GString *s, JsonNode *root, const char *label,
		    const char *path)
{
	char *v = rd_json_text(rd_json_at(root, path));

	if (v)
		rd_kv_row(s, label, v);
	g_free(v);
}

/* Rows LABEL: member for each scalar member (or member.FIELD) of the
 * object at PATH, in the JSON's order. */
static void rd_stat_obj(GString *s, JsonNode *root, const char *label,
			const char *path, const char *field)
{
	JsonNode *n = rd_json_at(root, path);
	GList *members, *m;

	if (!n || !JSON_NODE_HOLDS_OBJECT(n))
		return;
	members = json_object_get_members(json_node_get_object(n));
	for (m = members; m; m = m->next) {
		JsonNode *c =
		    json_object_get_member(json_node_get_object(n), m->data);
		char *k =
		    g_strdup_printf("%s: %s", label, (const char *)m->data);
		char *v = rd_json_text(field ? rd_json_at(c, field) : c);

		if (v)
			rd_kv_row(s, k, v);
		g_free(k);
		g_free(v);
	}
	g_list_free(members);
}

/*
 * Load the stats.json at PATH into *out (NULL when the file is missing: a
 * cell that did not finish).  0, or -EINVAL with *err for bad JSON.
 */
static int rd_json_load(const char *path, JsonParser **out, char **err)
{
	JsonParser *p;
	GError *gerr = NULL;

	*out = NULL;
	if (!g_file_test(path, G_FILE_TEST_EXISTS))
		return 0;
	p = json_parser_new();
	if (!json_parser_load_from_file(p, path, &gerr) ||
	    !json_parser_get_root(p)) {
		*err = g_strdup_printf("%s: %s", path,
				       gerr ? gerr->message : "empty");
		if (gerr)
			g_error_free(gerr);
		g_object_unref(p);
		return -EINVAL;
	}
	*out = p;
	return 0;
}

/* The scalar at PATH as a number, or NAN. */
static double rd_json_num(JsonNode *root, const char *path)
{
	JsonNode *n = rd_json_at(root, path);

	if (!n || !JSON_NODE_HOLDS_VALUE(n))
		return NAN;
	switch (json_node_get_value_type(n)) {
	case G_TYPE_INT64:
		return (double)json_node_get_int(n);
	case G_TYPE_DOUBLE:
		return json_node_get_double(n);
	default:
		return NAN;
	}
}

/* A <td> with V scaled by SCALE, 3 significant digits ("-": not there). */
static void rd_td_num(GString *s, double v, double scale)
{
	char buf[G_ASCII_DTOSTR_BUF_SIZE];

	g_string_append_printf(s, "<td>%s</td>",
			       isnan(v) ? "-" : rd_fmt3(buf, v / scale));
}

/* A <td> with the count V ("-": not there). */
static void rd_td_count(GString *s, double v)
{
	if (isnan(v))
		g_string_append(s, "<td>-</td>");
	else
		g_string_append_printf(s, "<td>%.0f</td>", v);
}

/* "fsync 100, unmount 1": the non-zero commit reasons of ROOT. */
static void rd_td_commits(GString *s, JsonNode *root)
{
	JsonNode *n = rd_json_at(root, "journal.commits");
	GList *members, *m;
	unsigned k = 0;

	g_string_append(s, "<td class=\"text\">");
	if (n && JSON_NODE_HOLDS_OBJECT(n)) {
		JsonObject *o = json_node_get_object(n);

		members = json_object_get_members(o);
		for (m = members; m; m = m->next) {
			JsonNode *c = json_object_get_member(o, m->data);

			if (!JSON_NODE_HOLDS_VALUE(c) ||
			    json_node_get_value_type(c) != G_TYPE_INT64 ||
			    !json_node_get_int(c))
				continue;
			g_string_append_printf(
			    s, "%s%s %" G_GINT64_FORMAT, k++ ? ", " : "",
			    (const char *)m->data, json_node_get_int(c));
		}
		g_list_free(members);
	}
	g_string_append(s, k ? "</td>" : "-</td>");
}

/*
 * The cells at a glance: one row per cell with the counters that most
 * often explain a difference (time, commits by reason, bytes written to
 * the device and to the journal, dirty bytes that died in the cache before
 * write-back, cache misses).
 */
static void rd_html_summary(GString *s, const struct sfs_experiment *x,
			    JsonParser **stats)
{
	g_string_append(s,
			"<table class=\"cells\">\n<thead><tr>"
			"<th>cell</th><th>modelled s</th>"
			"<th>journal commits by reason</th>"
			"<th>device MB written</th><th>journal MB written</th>"
			"<th>died-dirty MB</th><th>cache misses</th>"
			"</tr></thead>\n<tbody>\n");
	for (unsigned i = 0; i < x->ncells; i++) {
		JsonNode *r = stats[i] ? json_parser_get_root(stats[i]) : NULL;

		g_string_append(s, "<tr><th><a href=\"#cell-");
		rd_esc(s, x->cells[i].id);
		g_string_append(s, "\">");
		rd_esc(s, x->cells[i].id);
		g_string_append(s, "</a></th>");
		if (!r) {
			g_string_append(s, "<td colspan=\"6\" class=\"text\">"
					   "no stats.json</td></tr>\n");
			continue;
		}
		rd_td_num(s, rd_json_num(r, "ops.clock_ns"), 1e9);
		rd_td_commits(s, r);
		rd_td_num(s, rd_json_num(r, "device.submitted.write.bytes"),
			  1e6);
		rd_td_num(s,
			  rd_json_num(r, "device.submitted.by_category."
					 "journal.write_bytes"),
			  1e6);
		rd_td_num(s, rd_json_num(r, "cache.died_dirty_bytes"), 1e6);
		rd_td_count(s, rd_json_num(r, "cache.misses"));
		g_string_append(s, "</tr>\n");
	}
	g_string_append(s, "</tbody>\n</table>\n");
}

/* All the stats of one cell that explain its result, from ROOT. */
static void rd_html_stats(GString *s, JsonNode *root)
{
	g_string_append(s, "<table class=\"kv stats\">\n");
	rd_stat(s, root, "modelled time (ns)", "ops.clock_ns");
	rd_stat(s, root, "operations", "ops.total");
	rd_stat(s, root, "bytes written by the workload", "ops.bytes_written");
	rd_stat(s, root, "write amplification", "ops.write_amplification");
	rd_stat(s, root, "journal mode", "journal.mode");
	rd_stat_obj(s, root, "journal commits", "journal.commits", NULL);
	rd_stat(s, root, "journal commits, total", "journal.commits_total");
	rd_stat(s, root, "journal log bytes", "journal.log_bytes");
	rd_stat(s, root, "journal log-full stalls", "journal.logfull_stalls");
	rd_stat(s, root, "device model", "device.model");
	rd_stat(s, root, "device write requests",
		"device.submitted.write.requests");
	rd_stat(s, root, "device write bytes", "device.submitted.write.bytes");
	rd_stat(s, root, "device flushes", "device.submitted.flush.requests");
	rd_stat_obj(s, root, "device bytes written",
		    "device.submitted.by_category", "write_bytes");
	rd_stat(s, root, "device busy (ns)", "device.busy_ns");
	rd_stat(s, root, "device seeks", "device.seeks");
	rd_stat(s, root, "cache hits", "cache.hits");
	rd_stat(s, root, "cache misses", "cache.misses");
	rd_stat(s, root, "cache hit ratio", "cache.hit_ratio");
	rd_stat(s, root, "died-dirty bytes", "cache.died_dirty_bytes");
	rd_stat(s, root, "peak dirty bytes", "cache.peak_dirty_bytes");
	rd_stat_obj(s, root, "write-back bytes", "cache.writeback_bytes", NULL);
	rd_stat(s, root, "write throttle events", "cache.throttle_events");
	rd_stat(s, root, "delayed allocation", "delalloc.enabled");
	rd_stat(s, root, "delalloc blocks that died unwritten",
		"delalloc.died_blocks");
	g_string_append(s, "</table>\n");
}

/* One cell's section: configuration, then its stats (P, or NULL). */
static void rd_html_cell(GString *s, const struct sfs_xp_cell *c, JsonParser *p)
{
	char seed[32];

	g_string_append(s, "<details class=\"cell\" id=\"cell-");
	rd_esc(s, c->id);
	g_string_append(s, "\"><summary>");
	rd_esc(s, c->id);
	g_string_append(s, "</summary>\n<table class=\"kv config\">\n");
	rd_kv_row(s, "system", c->sys ? c->sys->name : "");
	rd_kv_row(s, "options",
		  c->options ? c->options
		  : c->sys   ? c->sys->options
			     : "");
	if (c->size)
		rd_kv_row(s, "image size", c->size);
	if (c->journal_size || (c->sys && c->sys->journal_size))
		rd_kv_row(s, "journal size",
			  c->journal_size ? c->journal_size
					  : c->sys->journal_size);
	rd_kv_row(s, "workload", c->spec ? c->spec : c->wl ? c->wl->spec : "");
	rd_kv_row(s, "variant", c->variant && *c->variant ? c->variant : "-");
	g_snprintf(seed, sizeof(seed), "%" G_GUINT64_FORMAT, c->seed);
	rd_kv_row(s, "seed", seed);
	if (c->argv) {
		char *args = g_strjoinv(" ", c->argv);
		char *cmd = g_strconcat("simfs run ", args, NULL);

		rd_kv_row(s, "command", cmd);
		g_free(args);
		g_free(cmd);
	}
	g_string_append(s, "</table>\n");
	if (p)
		rd_html_stats(s, json_parser_get_root(p));
	else
		g_string_append(s, "<p>No stats.json: the cell did not "
				   "finish.</p>\n");
	g_string_append(s, "</details>\n");
}

/*
 * Begin report.html: the head (inline style only), the title.  The tables
 * are appended by the caller, the cells by rd_html_end.
 */
static void rd_html_begin(GString *s, const struct sfs_experiment *x)
{
	const char *title = x->title && *x->title ? x->title : x->name;

	g_string_append(s, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
			   "<meta charset=\"utf-8\">\n<title>");
	rd_esc(s, title);
	g_string_append_printf(s,
			       "</title>\n<style>\n%s</style>\n</head>\n"
			       "<body>\n<h1>",
			       rd_css);
	rd_esc(s, title);
	g_string_append(s, "</h1>\n<p>Experiment <code>");
	rd_esc(s, x->name);
	g_string_append_printf(s,
			       "</code>: %u system%s, %u workload%s, %u "
			       "cell%s; ",
			       x->nsystems, x->nsystems == 1 ? "" : "s",
			       x->nworkloads, x->nworkloads == 1 ? "" : "s",
			       x->ncells, x->ncells == 1 ? "" : "s");
	g_string_append_printf(s, "%u repetition%s per point.</p>\n",
			       x->repeat ? x->repeat : 1,
			       x->repeat > 1 ? "s" : "");
}

/* End report.html: the cells, at a glance and one by one. */
static int rd_html_end(GString *s, const struct sfs_experiment *x,
		       const char *outdir, char **err)
{
	JsonParser **stats = g_new0(JsonParser *, x->ncells + 1);
	int rc = 0;

	for (unsigned i = 0; i < x->ncells && !rc; i++) {
		char *path = g_build_filename(outdir, "cells", x->cells[i].id,
					      "stats.json", NULL);

		rc = rd_check_name("cell", x->cells[i].id, err);
		if (!rc)
			rc = rd_json_load(path, &stats[i], err);
		g_free(path);
	}
	if (!rc) {
		g_string_append(s, "<h2 id=\"cells\">Cells</h2>\n<p>Each cell "
				   "ran <code>simfs run</code> on a fresh "
				   "image: the counters that explain its "
				   "result, then its configuration and all "
				   "its counters.</p>\n");
		rd_html_summary(s, x, stats);
		for (unsigned i = 0; i < x->ncells; i++)
			rd_html_cell(s, &x->cells[i], stats[i]);
		g_string_append(s, "</body>\n</html>\n");
	}
	for (unsigned i = 0; i < x->ncells; i++)
		if (stats[i])
			g_object_unref(stats[i]);
	g_free(stats);
	return rc;
}

int sfs_bench_render(const struct sfs_experiment *x, const char *outdir,
		     bool html, FILE *out, char **err)
{
	char *csv = g_build_filename(outdir, "results.csv", NULL);
	char *tdir = g_build_filename(outdir, "tables", NULL);
	char *pdir = g_build_filename(outdir, "plots", NULL);
	GString *page = g_string_new(NULL);
	GPtrArray *rows = NULL;
	int rc;

	*err = NULL;
	rc = rd_csv_read(csv, &rows, err);
	if (!rc && x->ntables)
		rc = rd_mkdir(tdir, err);
	if (!rc && x->ntables)
		rc = rd_mkdir(pdir, err);
	if (!rc && html)
		rd_html_begin(page, x);
	for (unsigned i = 0; i < x->ntables && !rc; i++) {
		const struct sfs_xp_table *t = &x->tables[i];
		bool plot;
		GString *md = g_string_new(NULL);
		struct rd_grid g;
		char *path;

		memset(&g, 0, sizeof(g));
		rc = rd_check_name("table", t->name, err);
		if (!rc)
			rc = rd_grid_build(x, t, rows, &g, err);
		if (!rc) {
			rd_md(md, x, &g);
			path = g_strdup_printf("%s/%s.md", tdir, t->name);
			rc = rd_write(path, md->str, md->len, err);
			g_free(path);
		}
		if (!rc && out)
			fprintf(out, "%s%s", i ? "\n" : "", md->str);
		/* nothing to draw without a value (every cell failed) */
		plot = !rc && t->plot && strcmp(t->plot, "none") && g.matched;
		if (!rc && plot)
			rc = rd_plot(x, &g, pdir, err);
		if (!rc && html) {
			g_string_append(page, "<section class=\"table\" "
					      "id=\"table-");
			rd_esc(page, t->name);
			g_string_append(page, "\">\n<h2>");
			rd_esc(page, rd_title(t));
			g_string_append(page, "</h2>\n<p>");
			g_string_truncate(md, 0);
			rd_desc(md, x, &g);
			rd_esc_code(page, md->str);
			g_string_append(page, "</p>\n");
			rd_html_table(page, &g);
			if (plot) {
				char pfx[24];

				path =
				    g_strdup_printf("%s/%s.svg", pdir, t->name);
				g_snprintf(pfx, sizeof(pfx), "plot%u", i);
				rc = rd_html_svg(page, path, pfx, err);
				g_free(path);
			}
			g_string_append(page, "</section>\n");
		}
		rd_grid_free(&g);
		g_string_free(md, TRUE);
	}
	if (!rc && html)
		rc = rd_html_end(page, x, outdir, err);
	if (!rc && html) {
		char *path = g_build_filename(outdir, "report.html", NULL);

		rc = rd_write(path, page->str, page->len, err);
		g_free(path);
	}
	if (out)
		fflush(out);
	if (rows)
		g_ptr_array_free(rows, TRUE);
	g_string_free(page, TRUE);
	g_free(csv);
	g_free(tdir);
	g_free(pdir);
	return rc;
}
