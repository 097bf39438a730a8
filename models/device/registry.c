/*
 * registry.c - the device-model registry, the one door to a model
 * (sfs_devmodel_cost), and the knob-table helpers that models and
 * schedulers share.
 *
 * A spec "NAME[,key=value...]" is resolved in three steps: NAME is looked
 * up as a preset, then as a model; the model's knob defaults are filled in;
 * the preset's settings and then the spec's own are applied over them, in
 * that order, so the spec wins.  The model's init then sees one complete,
 * range-checked parameter struct.
 *
 * New model = one file with its ops table + one line in sfs_dm_models[].
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "config.h" /* sfs_parse_size */
#include "devmodel.h"

static const struct sfs_devmodel_ops *const sfs_dm_models[] = {
    &sfs_devmodel_ideal_ops,
    &sfs_devmodel_hdd_ops,
    &sfs_devmodel_ssd_ops,
    NULL,
};

/* ---- knob helpers ---- */

static void *knob_field(void *params, const struct sfs_knob *k)
{
	return (char *)params + k->offset;
}

static const void *knob_cfield(const void *params, const struct sfs_knob *k)
{
	return (const char *)params + k->offset;
}

const struct sfs_knob *sfs_knob_find(const struct sfs_knob *knobs,
				     const char *key)
{
	for (const struct sfs_knob *k = knobs; k && k->key; k++)
		if (strcmp(k->key, key) == 0)
			return k;
	return NULL;
}

static char *knob_keys(const struct sfs_knob *knobs)
{
	GString *s = g_string_new(NULL);

	for (const struct sfs_knob *k = knobs; k && k->key; k++)
		g_string_append_printf(s, "%s%s", s->len ? ", " : "", k->key);
	if (!s->len)
		g_string_append(s, "none");
	return g_string_free(s, FALSE);
}

/* "a|b|c" -> index of word, or -1. */
static int knob_choice(const char *choices, const char *word)
{
	gchar **v = g_strsplit(choices, "|", -1);
	int found = -1;

	for (int i = 0; v[i]; i++)
		if (strcmp(v[i], word) == 0)
			found = i;
	g_strfreev(v);
	return found;
}

static char *knob_choice_name(const char *choices, int idx)
{
	gchar **v = g_strsplit(choices, "|", -1);
	char *name = NULL;

	if (idx >= 0 && idx < (int)g_strv_length(v))
		name = g_strdup(v[idx]);
	g_strfreev(v);
	return name ? name : g_strdup("?");
}

/* What a valid value looks like, for messages. */
char *sfs_knob_want(const struct sfs_knob *k)
{
	switch (k->type) {
	case SFS_KNOB_DOUBLE:
		return g_strdup_printf("a number in [%g, %g]%s", k->min, k->max,
				       strcmp(k->def, "auto") == 0 ? " or auto"
								   : "");
	case SFS_KNOB_U64:
	case SFS_KNOB_U32:
		return g_strdup_printf("an integer in [%.0f, %.0f]", k->min,
				       k->max);
	case SFS_KNOB_SIZE:
		return g_strdup_printf(
		    "a size (K/M/G/T suffix) in [%.0f, %.0f] "
		    "bytes",
		    k->min, k->max);
	case SFS_KNOB_BOOL:
		return g_strdup("on or off");
	case SFS_KNOB_ENUM:
		return g_strdup_printf("one of %s", k->choices);
	}
	return g_strdup("?");
}

static bool parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = {"on", "yes", "true", "1"};
	static const char *const no[] = {"off", "no", "false", "0"};

	for (unsigned i = 0; i < G_N_ELEMENTS(yes); i++) {
		if (g_ascii_strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return true;
		}
		if (g_ascii_strcasecmp(v, no[i]) == 0) {
			*out = false;
			return true;
		}
	}
	return false;
}

/* Parse value for k into *field; false if it is not valid. */
static bool knob_parse(const struct sfs_knob *k, const char *value, void *field)
{
	char *end = NULL;

	switch (k->type) {
	case SFS_KNOB_DOUBLE: {
		double d;

		if (strcmp(k->def, "auto") == 0 && strcmp(value, "auto") == 0) {
			*(double *)field = NAN;
			return true;
		}
		d = g_ascii_strtod(value, &end);
		if (!*value || *end || !isfinite(d) || d < k->min || d > k->max)
			return false;
		*(double *)field = d;
		return true;
	}
	case SFS_KNOB_U64:
	case SFS_KNOB_U32: {
		guint64 u;

		if (!g_ascii_isdigit(value[0]))
			return false;
		errno = 0;
		u = g_ascii_strtoull(value, &end, 10);
		if (errno || *end || (double)u < k->min || (double)u > k->max)
			return false;
		if (k->type == SFS_KNOB_U32)
			*(uint32_t *)field = (uint32_t)u;
		else
			*(uint64_t *)field = u;
		return true;
	}
	case SFS_KNOB_SIZE: {
		uint64_t u;

		if (sfs_parse_size(value, &u) != 0 || (double)u < k->min ||
		    (double)u > k->max)
			return false;
		*(uint64_t *)field = u;
		return true;
	}
	case SFS_KNOB_BOOL:
		return parse_bool(value, (bool *)field);
	case SFS_KNOB_ENUM: {
		int idx = knob_choice(k->choices, value);

		if (idx < 0)
			return false;
		*(int *)field = idx;
		return true;
	}
	}
	return false;
}

int sfs_knobs_set(const char *who, const struct sfs_knob *knobs, void *params,
		  const char *key, const char *value, char **err)
{
	const struct sfs_knob *k = sfs_knob_find(knobs, key);

	if (!k) {
		char *keys = knob_keys(knobs);

		if (err)
			*err = g_strdup_printf("%s: unknown knob '%s' (valid: "
					       "%s)",
					       who, key, keys);
		g_free(keys);
		return -EINVAL;
	}
	if (!knob_parse(k, value, knob_field(params, k))) {
		char *want = sfs_knob_want(k);

		if (err)
			*err = g_strdup_printf("%s: bad value '%s' for %s: "
					       "want %s",
					       who, value, key, want);
		g_free(want);
		return -EINVAL;
	}
	return 0;
}

int sfs_knobs_defaults(const char *who, const struct sfs_knob *knobs,
		       void *params, char **err)
{
	for (const struct sfs_knob *k = knobs; k && k->key; k++) {
		int rc = sfs_knobs_set(who, knobs, params, k->key, k->def, err);

		if (rc)
			return rc;
	}
	return 0;
}

int sfs_knobs_set_all(const char *who, const struct sfs_knob *knobs,
		      void *params, char *const *items, char **err)
{
	for (; items && *items; items++) {
		char *item = g_strstrip(g_strdup(*items));
		char *eq = strchr(item, '=');
		int rc = 0;

		if (*item && !eq) {
			char *keys = knob_keys(knobs);

			if (err)
				*err = g_strdup_printf("%s: '%s' is not "
						       "key=value (valid keys: "
						       "%s)",
						       who, item, keys);
			g_free(keys);
			rc = -EINVAL;
		} else if (eq) {
			*eq = '\0';
			rc = sfs_knobs_set(who, knobs, params, g_strstrip(item),
					   g_strstrip(eq + 1), err);
		}
		g_free(item);
		if (rc)
			return rc;
	}
	return 0;
}

/* Bytes as "512K" or "8M" when that is exact and short, else plain. */
static void print_size(uint64_t v, FILE *out)
{
	static const char units[] = "KMGT";

	for (int u = 3; u >= 0 && v; u--) {
		uint64_t unit = 1ULL << (10 * (u + 1));

		if (v % unit == 0 && v / unit < 1000000) {
			fprintf(out, "%llu%c", (unsigned long long)(v / unit),
				units[u]);
			return;
		}
	}
	fprintf(out, "%llu", (unsigned long long)v);
}

static void knob_print_value(const struct sfs_knob *k, const void *params,
			     FILE *out)
{
	const void *f = knob_cfield(params, k);

	switch (k->type) {
	case SFS_KNOB_DOUBLE:
		if (isnan(*(const double *)f))
			fputs("auto", out);
		else
			fprintf(out, "%g", *(const double *)f);
		break;
	case SFS_KNOB_U64:
		fprintf(out, "%llu", (unsigned long long)*(const uint64_t *)f);
		break;
	case SFS_KNOB_U32:
		fprintf(out, "%lu", (unsigned long)*(const uint32_t *)f);
		break;
	case SFS_KNOB_SIZE:
		print_size(*(const uint64_t *)f, out);
		break;
	case SFS_KNOB_BOOL:
		fputs(*(const bool *)f ? "on" : "off", out);
		break;
	case SFS_KNOB_ENUM: {
		char *name = knob_choice_name(k->choices, *(const int *)f);

		fputs(name, out);
		g_free(name);
		break;
	}
	}
}

char *sfs_knob_format(const struct sfs_knob *k, const void *params)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	char *out;

	if (!f)
		return g_strdup("?");
	knob_print_value(k, params, f);
	fclose(f);
	out = g_strdup(buf);
	free(buf);
	return out;
}

void sfs_knobs_print_values(const struct sfs_knob *knobs, const void *params,
			    FILE *out)
{
	for (const struct sfs_knob *k = knobs; k && k->key; k++) {
		fprintf(out, "%s%s=", k == knobs ? "" : ",", k->key);
		knob_print_value(k, params, out);
	}
}

void sfs_knobs_print_help(const struct sfs_knob *knobs, FILE *out)
{
	for (const struct sfs_knob *k = knobs; k && k->key; k++) {
		char *want = sfs_knob_want(k);

		fprintf(out, "    %-18s default %-8s %s; %s\n", k->key, k->def,
			k->help, want);
		g_free(want);
	}
}

/* ---- registry ---- */

const struct sfs_devmodel_ops *sfs_devmodel_nth(unsigned i)
{
	return i < G_N_ELEMENTS(sfs_dm_models) ? sfs_dm_models[i] : NULL;
}

const struct sfs_devmodel_preset *sfs_devmodel_nth_preset(unsigned i)
{
	for (unsigned j = 0; j <= i; j++)
		if (!sfs_devmodel_presets[j].name)
			return NULL;
	return &sfs_devmodel_presets[i];
}

const struct sfs_devmodel_ops *sfs_devmodel_find(const char *name)
{
	const struct sfs_devmodel_ops *ops;

	for (unsigned i = 0; (ops = sfs_devmodel_nth(i)); i++)
		if (strcmp(ops->name, name) == 0)
			return ops;
	return NULL;
}

const struct sfs_devmodel_preset *sfs_devmodel_find_preset(const char *name)
{
	const struct sfs_devmodel_preset *p;

	for (unsigned i = 0; (p = sfs_devmodel_nth_preset(i)); i++)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

static char *dm_names(void)
{
	GString *s = g_string_new("models: ");
	const struct sfs_devmodel_ops *ops;
	const struct sfs_devmodel_preset *p;

	for (unsigned i = 0; (ops = sfs_devmodel_nth(i)); i++)
		g_string_append_printf(s, "%s%s", i ? ", " : "", ops->name);
	g_string_append(s, "; presets: ");
	for (unsigned i = 0; (p = sfs_devmodel_nth_preset(i)); i++)
		g_string_append_printf(s, "%s%s", i ? ", " : "", p->name);
	return g_string_free(s, FALSE);
}

void sfs_devmodel_free(struct sfs_devmodel *m)
{
	if (!m)
		return;
	if (m->ops->fini)
		m->ops->fini(m);
	g_free(m->params);
	g_free(m->name);
	g_free(m);
}

int sfs_devmodel_new(const char *spec, struct sfs_devmodel **out, char **err)
{
	const struct sfs_devmodel_preset *preset;
	const struct sfs_devmodel_ops *ops;
	struct sfs_devmodel *m = NULL;
	gchar **items, **pitems = NULL;
	char *name, *names;
	int rc;

	*out = NULL;
	if (!spec || !*spec) {
		names = dm_names();
		if (err)
			*err = g_strdup_printf("empty device model spec (%s)",
					       names);
		g_free(names);
		return -EINVAL;
	}
	items = g_strsplit(spec, ",", -1);
	name = g_strstrip(items[0]);
	preset = sfs_devmodel_find_preset(name);
	ops = sfs_devmodel_find(preset ? preset->model : name);
	if (!ops) {
		names = dm_names();
		if (err)
			*err = g_strdup_printf("unknown device model '%s' (%s)",
					       name, names);
		g_free(names);
		rc = -EINVAL;
		goto out_free_items;
	}

	m = g_new0(struct sfs_devmodel, 1);
	m->ops = ops;
	m->name = g_strdup(name);
	m->params = g_malloc0(ops->params_size ? ops->params_size : 1);
	rc = sfs_knobs_defaults(ops->name, ops->knobs, m->params, err);
	if (rc)
		goto out_free_model;
	if (preset) {
		pitems = g_strsplit(preset->params, ",", -1);
		rc = sfs_knobs_set_all(ops->name, ops->knobs, m->params, pitems,
				       err);
		if (rc)
			goto out_free_model;
	}
	rc =
	    sfs_knobs_set_all(ops->name, ops->knobs, m->params, items + 1, err);
	if (rc)
		goto out_free_model;
	rc = ops->init(m, m->params, err);
	if (rc)
		goto out_free_model;
	*out = m;
	m = NULL;
out_free_model:
	if (m) {
		g_free(m->params);
		g_free(m->name);
		g_free(m);
	}
	g_strfreev(pitems);
out_free_items:
	g_strfreev(items);
	return rc;
}

/* A model filled the parts of *cost for a request at now: sum them, and
 * remember now (time never goes back on a model). */
static void dm_done(struct sfs_devmodel *m, sfs_ns_t now,
		    struct sfs_dev_cost *cost)
{
	cost->total_ns = cost->overhead_ns + cost->seek_ns + cost->rotation_ns +
			 cost->transfer_ns;
	m->last_now = now;
}

int sfs_devmodel_cost(struct sfs_devmodel *m, const struct sfs_io_req *req,
		      sfs_ns_t now, struct sfs_dev_cost *cost)
{
	int rc;

	if (!m || !req || !cost)
		return -EINVAL;
	switch (req->op) {
	case SFS_IO_READ:
	case SFS_IO_WRITE:
		if (req->len_bytes == 0 ||
		    req->off_bytes + req->len_bytes < req->off_bytes)
			return -EINVAL;
		break;
	case SFS_IO_FLUSH:
		if (req->off_bytes || req->len_bytes)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (now < m->last_now)
		return -EINVAL;
	memset(cost, 0, sizeof(*cost));
	rc = m->ops->service(m, req, now, cost);
	if (rc)
		return rc;
	dm_done(m, now, cost);
	return 0;
}

int sfs_devmodel_writeout(struct sfs_devmodel *m, sfs_ns_t now,
			  struct sfs_dev_cost *cost)
{
	int rc;

	if (!m || !cost || now < m->last_now)
		return -EINVAL;
	memset(cost, 0, sizeof(*cost));
	if (!m->ops->writeout)
		return 0;
	rc = m->ops->writeout(m, now, cost);
	if (rc)
		return rc;
	dm_done(m, now, cost);
	return 0;
}

void sfs_devmodel_reset(struct sfs_devmodel *m)
{
	m->last_now = 0;
	if (m->ops->reset) {
		m->ops->reset(m);
		return;
	}
	if (m->ops->fini)
		m->ops->fini(m);
	m->priv = NULL;
	/* The same parameters were accepted before: init cannot fail now. */
	if (m->ops->init(m, m->params, NULL) != 0)
		g_error("device model %s: re-init failed", m->ops->name);
}

int sfs_devmodel_seek_ns(const struct sfs_devmodel *m, uint64_t d_cyl,
			 bool write, sfs_ns_t *out)
{
	if (!m->ops->seek_time)
		return -ENOTSUP;
	*out = m->ops->seek_time(m, d_cyl, write);
	return 0;
}

int sfs_devmodel_cylinder(const struct sfs_devmodel *m, uint64_t off,
			  uint64_t *out)
{
	if (!m->ops->cylinder)
		return -ENOTSUP;
	*out = m->ops->cylinder(m, off);
	return 0;
}

void sfs_devmodel_geometry(const struct sfs_devmodel *m,
			   struct sfs_dev_geometry *out)
{
	memset(out, 0, sizeof(*out));
	if (m->ops->geometry)
		m->ops->geometry(m, out);
}

const char *sfs_devmodel_name(const struct sfs_devmodel *m)
{
	return m->name;
}

void sfs_devmodel_print(const struct sfs_devmodel *m, FILE *out)
{
	fprintf(out, "%s (%s): ", m->name, m->ops->name);
	sfs_knobs_print_values(m->ops->knobs, m->params, out);
	fputc('\n', out);
}

void sfs_devmodel_list(FILE *out)
{
	const struct sfs_devmodel_ops *ops;
	const struct sfs_devmodel_preset *p;

	fputs("device models (device=NAME[,key=value...]):\n", out);
	for (unsigned i = 0; (ops = sfs_devmodel_nth(i)); i++) {
		fprintf(out, "  %s - %s\n", ops->name, ops->help);
		sfs_knobs_print_help(ops->knobs, out);
	}
	fputs("presets (NAME[,key=value...] overrides a preset's knobs):\n",
	      out);
	for (unsigned i = 0; (p = sfs_devmodel_nth_preset(i)); i++)
		fprintf(out, "  %-10s %s: %s%s%s\n", p->name, p->help, p->model,
			*p->params ? "," : "", p->params);
}
