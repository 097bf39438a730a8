/*
 * workload.c - the door to the workload generators (workload.h): parsing
 * "NAME,key=value,flag" against a workload's parameter table, the wrapper
 * verbs, the shared result record and the seeded generator.
 *
 * Invariants of a result (struct sfs_wl_result):
 *  1. every op a runner served is counted once, in the phase its client
 *     was in, under its label;
 *  2. a phase's start is the earliest time a client entered it, its end
 *     the latest end of an op in it; phases keep first-seen order, so the
 *     same run gives the same table.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <glib.h>

#include "config.h"
#include "workload.h"

struct sfs_workload {
	const struct sfs_workload_ops *ops;
	struct sfs_wl_value *vals; /* one per parameter */
	char **texts;		   /* the strings vals[i].s point to */
	void *st;
};

static const char *const wop_names[SFS_WOP_NTYPES] = {
    [SFS_WOP_OPEN] = "open",	   [SFS_WOP_CLOSE] = "close",
    [SFS_WOP_READ] = "read",	   [SFS_WOP_WRITE] = "write",
    [SFS_WOP_FSYNC] = "fsync",	   [SFS_WOP_FTRUNCATE] = "ftruncate",
    [SFS_WOP_UNLINK] = "unlink",   [SFS_WOP_MKDIR] = "mkdir",
    [SFS_WOP_RMDIR] = "rmdir",	   [SFS_WOP_RENAME] = "rename",
    [SFS_WOP_STAT] = "stat",	   [SFS_WOP_READDIR] = "readdir",
    [SFS_WOP_SYMLINK] = "symlink", [SFS_WOP_LINK] = "link",
    [SFS_WOP_SYNC] = "sync",	   [SFS_WOP_THINK] = "think",
    [SFS_WOP_BARRIER] = "barrier", [SFS_WOP_STATFS] = "statfs",
    [SFS_WOP_CHMOD] = "chmod",
};

const char *sfs_wop_name(enum sfs_wop_type t)
{
	return (unsigned)t < SFS_WOP_NTYPES ? wop_names[t] : "?";
}

/* ---- parameters ---- */

static int parse_time(const char *text, sfs_ns_t *out)
{
	char *end;
	double v, mult = 1e9;

	if (!text || !*text || !(g_ascii_isdigit(*text) || *text == '.'))
		return -EINVAL;
	v = g_ascii_strtod(text, &end);
	if (strcmp(end, "ms") == 0)
		mult = 1e6;
	else if (strcmp(end, "us") == 0)
		mult = 1e3;
	else if (strcmp(end, "s") != 0 && *end)
		return -EINVAL;
	if (!isfinite(v) || v < 0 || v * mult > 1e18)
		return -EINVAL;
	*out = (sfs_ns_t)llround(v * mult);
	return 0;
}

static int parse_bool(const char *text, uint64_t *out)
{
	if (!text || !strcmp(text, "1") || !g_ascii_strcasecmp(text, "yes") ||
	    !g_ascii_strcasecmp(text, "true") ||
	    !g_ascii_strcasecmp(text, "on"))
		*out = 1;
	else if (!strcmp(text, "0") || !g_ascii_strcasecmp(text, "no") ||
		 !g_ascii_strcasecmp(text, "false") ||
		 !g_ascii_strcasecmp(text, "off"))
		*out = 0;
	else
		return -EINVAL;
	return 0;
}

static const char *ptype_what(enum sfs_wl_ptype t)
{
	switch (t) {
	case SFS_WLP_UINT:
		return "a whole number";
	case SFS_WLP_SIZE:
		return "a size like 4096, 256K, 2G";
	case SFS_WLP_TIME:
		return "a time in seconds like 60, 0.5, 10ms";
	case SFS_WLP_BOOL:
		return "yes or no (or the name alone)";
	default:
		return "text";
	}
}

/* Parse text (NULL: a flag given alone) as parameter p into v. */
static int param_set(const struct sfs_wl_param *p, const char *text,
		     struct sfs_wl_value *v)
{
	uint64_t u = 0;
	sfs_ns_t ns = 0;
	char *end;

	if (!text && p->type != SFS_WLP_BOOL)
		return -EINVAL;
	switch (p->type) {
	case SFS_WLP_UINT:
		if (!g_ascii_isdigit(*text))
			return -EINVAL;
		errno = 0;
		u = g_ascii_strtoull(text, &end, 10);
		if (errno || *end)
			return -EINVAL;
		break;
	case SFS_WLP_SIZE:
		if (sfs_parse_size(text, &u))
			return -EINVAL;
		break;
	case SFS_WLP_TIME:
		if (parse_time(text, &ns))
			return -EINVAL;
		break;
	case SFS_WLP_BOOL:
		if (parse_bool(text, &u))
			return -EINVAL;
		break;
	case SFS_WLP_STRING:
		break;
	}
	v->u = u;
	v->ns = ns;
	return 0;
}

static char *param_list(const struct sfs_workload_ops *ops)
{
	GString *s = g_string_new(NULL);

	for (const struct sfs_wl_param *p = ops->params; p && p->name; p++)
		g_string_append_printf(s, "%s%s", s->len ? ", " : "", p->name);
	if (!s->len)
		g_string_append(s, "(none)");
	return g_string_free(s, FALSE);
}

void sfs_workload_free(struct sfs_workload *w)
{
	if (!w)
		return;
	if (w->st && w->ops->fini)
		w->ops->fini(w->st);
	g_strfreev(w->texts);
	g_free(w->vals);
	g_free(w);
}

int sfs_workload_new(const char *spec, struct sfs_workload **out, char **err)
{
	struct sfs_workload *w;
	char **parts;
	size_t np = 0;
	int rc = 0;

	*out = NULL;
	if (!spec || !*spec) {
		*err = g_strdup("no workload named (see simfs run --list)");
		return -EINVAL;
	}
	parts = g_strsplit(spec, ",", -1);
	const struct sfs_workload_ops *ops = sfs_workload_find(parts[0]);
	if (!ops) {
		GString *s = g_string_new(NULL);
		const struct sfs_workload_ops *o;
		for (unsigned i = 0; (o = sfs_workload_nth(i)); i++)
			g_string_append_printf(s, "%s%s", i ? ", " : "",
					       o->name);
		*err = g_strdup_printf("unknown workload '%s' (valid: %s)",
				       parts[0], s->str);
		g_string_free(s, TRUE);
		g_strfreev(parts);
		return -EINVAL;
	}
	for (const struct sfs_wl_param *p = ops->params; p && p->name; p++)
		np++;
	w = g_new0(struct sfs_workload, 1);
	w->ops = ops;
	w->vals = g_new0(struct sfs_wl_value, np + 1);
	w->texts = g_new0(char *, np + 1);
	for (size_t i = 0; i < np; i++) {
		const struct sfs_wl_param *p = &ops->params[i];
		const char *def = p->def		      ? p->def
				  : p->type == SFS_WLP_STRING ? ""
				  : p->type == SFS_WLP_BOOL   ? "no"
							      : "0";
		w->texts[i] = g_strdup(def);
		if (param_set(p, w->texts[i], &w->vals[i])) {
			*err = g_strdup_printf("workload %s: bad default for "
					       "%s",
					       ops->name, p->name);
			rc = -EINVAL;
			goto out;
		}
		w->vals[i].s = w->texts[i];
	}
	for (size_t k = 1; parts[k]; k++) {
		char *key = parts[k], *val = strchr(key, '=');
		size_t i;

		if (!*key)
			continue; /* "a,,b" or a trailing comma */
		if (val)
			*val++ = '\0';
		for (i = 0; i < np && strcmp(ops->params[i].name, key); i++)
			;
		if (i == np) {
			char *list = param_list(ops);
			*err = g_strdup_printf("workload %s: unknown parameter "
					       "'%s' (valid: %s)",
					       ops->name, key, list);
			g_free(list);
			rc = -EINVAL;
			goto out;
		}
		if (param_set(&ops->params[i], val, &w->vals[i])) {
			*err = g_strdup_printf(
			    "workload %s: bad value '%s' for %s: expected %s",
			    ops->name, val ? val : "", key,
			    ptype_what(ops->params[i].type));
			rc = -EINVAL;
			goto out;
		}
		g_free(w->texts[i]);
		w->texts[i] = g_strdup(val ? val : "yes");
		w->vals[i].s = w->texts[i];
		w->vals[i].given = true;
	}
	char *ierr = NULL;
	rc = ops->init(w->vals, &w->st, &ierr);
	if (rc) {
		*err = g_strdup_printf("workload %s: %s", ops->name,
				       ierr ? ierr : g_strerror(-rc));
		g_free(ierr);
		w->st = NULL;
		goto out;
	}
	if (ops->clients(w->st) == 0) {
		*err = g_strdup_printf("workload %s: no clients", ops->name);
		rc = -EINVAL;
		goto out;
	}
out:
	g_strfreev(parts);
	if (rc)
		sfs_workload_free(w);
	else
		*out = w;
	return rc;
}

struct sfs_workload *sfs_workload_wrap(const struct sfs_workload_ops *ops,
				       void *st)
{
	struct sfs_workload *w = g_new0(struct sfs_workload, 1);

	w->ops = ops;
	w->vals = g_new0(struct sfs_wl_value, 1);
	w->texts = g_new0(char *, 1);
	w->st = st;
	return w;
}

const struct sfs_workload_ops *sfs_workload_ops_of(const struct sfs_workload *w)
{
	return w->ops;
}

unsigned sfs_workload_clients(struct sfs_workload *w)
{
	return w->ops->clients(w->st);
}

int sfs_workload_next(struct sfs_workload *w, unsigned c, sfs_ns_t now,
		      struct sfs_wop *out, char **err)
{
	memset(out, 0, sizeof(*out));
	if (c >= sfs_workload_clients(w))
		return -EINVAL;
	return w->ops->next(w->st, c, now, out, err);
}

void sfs_workload_done(struct sfs_workload *w, unsigned c,
		       const struct sfs_wop *op, int rc)
{
	if (w->ops->done)
		w->ops->done(w->st, c, op, rc);
}

void sfs_workload_report(struct sfs_workload *w, const struct sfs_wl_result *r,
			 FILE *out)
{
	if (w->ops->report)
		w->ops->report(w->st, r, out);
}

void sfs_workload_list(FILE *out, bool params)
{
	const struct sfs_workload_ops *o;

	for (unsigned i = 0; (o = sfs_workload_nth(i)); i++) {
		fprintf(out, "  %-12s %s\n", o->name, o->help);
		if (!params)
			continue;
		for (const struct sfs_wl_param *p = o->params; p && p->name;
		     p++)
			fprintf(out, "      %-14s %s (default %s)\n", p->name,
				p->help, p->def ? p->def : "none");
	}
}

/* ---- results ---- */

void sfs_wl_result_init(struct sfs_wl_result *r, unsigned clients)
{
	memset(r, 0, sizeof(*r));
	r->clients = clients;
}

struct sfs_wl_phase *sfs_wl_result_enter(struct sfs_wl_result *r,
					 const char *name, sfs_ns_t start_ns)
{
	for (uint64_t i = 0; i < r->nphases; i++) {
		struct sfs_wl_phase *ph = &r->phases[i];
		if (strcmp(ph->name, name) == 0) {
			ph->start_ns = MIN(ph->start_ns, start_ns);
			return ph;
		}
	}
	r->phases = g_renew(struct sfs_wl_phase, r->phases, r->nphases + 1);
	struct sfs_wl_phase *ph = &r->phases[r->nphases++];
	memset(ph, 0, sizeof(*ph));
	g_strlcpy(ph->name, name, sizeof(ph->name));
	ph->start_ns = start_ns;
	ph->end_ns = start_ns;
	return ph;
}

static struct sfs_wl_lat *phase_lat(struct sfs_wl_phase *ph, const char *label)
{
	for (uint64_t i = 0; i < ph->nlat; i++)
		if (strcmp(ph->lat[i].label, label) == 0)
			return &ph->lat[i];
	ph->lat = g_renew(struct sfs_wl_lat, ph->lat, ph->nlat + 1);
	struct sfs_wl_lat *l = &ph->lat[ph->nlat++];
	memset(l, 0, sizeof(*l));
	g_strlcpy(l->label, label, sizeof(l->label));
	return l;
}

void sfs_wl_result_op(struct sfs_wl_result *r, struct sfs_wl_phase *ph,
		      unsigned client, const struct sfs_wop *op, int rc,
		      uint64_t bytes, sfs_ns_t start_ns, sfs_ns_t end_ns)
{
	(void)client;
	if (op->type == SFS_WOP_THINK || op->type == SFS_WOP_BARRIER)
		return;
	sfs_ns_t d = end_ns - MIN(start_ns, end_ns);
	struct sfs_wl_lat *l =
	    phase_lat(ph, op->label ? op->label : sfs_wop_name(op->type));
	unsigned b = 0;

	l->count++;
	l->sum_ns += d;
	l->max_ns = MAX(l->max_ns, d);
	while (b + 1 < SFS_WL_LAT_BUCKETS && (d >> (b + 1)))
		b++;
	l->bucket[b]++;
	ph->ops++;
	ph->end_ns = MAX(ph->end_ns, end_ns);
	if (op->type == SFS_WOP_READ)
		ph->bytes_read += bytes;
	else if (op->type == SFS_WOP_WRITE)
		ph->bytes_written += bytes;
	if (op->expect != SFS_WOP_ANY && rc != op->expect) {
		l->errors++;
		r->mismatches++;
	}
}

void sfs_wl_result_free(struct sfs_wl_result *r)
{
	for (uint64_t i = 0; i < r->nphases; i++)
		g_free(r->phases[i].lat);
	g_free(r->phases);
	memset(r, 0, sizeof(*r));
}

sfs_ns_t sfs_wl_lat_percentile(const struct sfs_wl_lat *l, double p)
{
	uint64_t want, seen = 0;

	if (!l || !l->count)
		return 0;
	want = (uint64_t)ceil((double)l->count * p / 100.0);
	want = MAX(want, 1);
	for (unsigned b = 0; b < SFS_WL_LAT_BUCKETS; b++) {
		seen += l->bucket[b];
		if (seen >= want) {
			sfs_ns_t hi = b + 1 >= 64
					  ? UINT64_MAX
					  : (((sfs_ns_t)1 << (b + 1)) - 1);
			return MIN(hi, l->max_ns);
		}
	}
	return l->max_ns;
}

const struct sfs_wl_phase *sfs_wl_result_phase(const struct sfs_wl_result *r,
					       const char *name)
{
	for (uint64_t i = 0; i < r->nphases; i++)
		if (strcmp(r->phases[i].name, name) == 0)
			return &r->phases[i];
	return NULL;
}

const struct sfs_wl_lat *sfs_wl_phase_lat(const struct sfs_wl_phase *ph,
					  const char *label)
{
	for (uint64_t i = 0; ph && i < ph->nlat; i++)
		if (strcmp(ph->lat[i].label, label) == 0)
			return &ph->lat[i];
	return NULL;
}

void sfs_wl_result_print(const struct sfs_wl_result *r, FILE *out)
{
	fprintf(out, "%-22s %10s %9s %10s %10s %9s %9s %9s %9s %9s\n", "phase",
		"ops", "seconds", "MB/s", "ops/s", "p50 ms", "p99 ms", "max ms",
		"cpu s", "disk s");
	for (uint64_t i = 0; i < r->nphases; i++) {
		const struct sfs_wl_phase *ph = &r->phases[i];
		double s = (double)(ph->end_ns - ph->start_ns) / 1e9;
		double mb = (double)(ph->bytes_read + ph->bytes_written) /
			    (1024.0 * 1024.0);
		struct sfs_wl_lat all = {.max_ns = 0};
		for (uint64_t k = 0; k < ph->nlat; k++) {
			all.count += ph->lat[k].count;
			all.max_ns = MAX(all.max_ns, ph->lat[k].max_ns);
			for (unsigned b = 0; b < SFS_WL_LAT_BUCKETS; b++)
				all.bucket[b] += ph->lat[k].bucket[b];
		}
		fprintf(out,
			"%-22s %10" PRIu64 " %9.3f %10.2f %10.1f %9.3f %9.3f "
			"%9.3f %9.3f %9.3f\n",
			ph->name, ph->ops, s, s > 0 ? mb / s : 0.0,
			s > 0 ? (double)ph->ops / s : 0.0,
			(double)sfs_wl_lat_percentile(&all, 50) / 1e6,
			(double)sfs_wl_lat_percentile(&all, 99) / 1e6,
			(double)all.max_ns / 1e6, (double)ph->cpu_ns / 1e9,
			(double)ph->dev_busy_ns / 1e9);
	}
	if (r->mismatches)
		fprintf(out,
			"%" PRIu64 " operations gave another result than "
			"expected; the first: %s\n",
			r->mismatches, r->first_error_what);
}

/* ---- the generator: splitmix64, seeded ---- */

unsigned sfs_wl_one_client(void *st)
{
	(void)st;
	return 1;
}

void sfs_wl_report_failures(FILE *out, const char *tool,
			    const struct sfs_wl_result *r)
{
	if (r->mismatches)
		fprintf(out,
			"%s: %" PRIu64 " operations failed; the first: %s\n",
			tool, r->mismatches, r->first_error_what);
}

int sfs_wl_check_thread_files(const struct sfs_wl_value *threads,
			      const struct sfs_wl_value *size,
			      const struct sfs_wl_value *rec,
			      const char *rec_name, bool direct, char **err)
{
	if (threads->u < 1 || threads->u > SFS_WL_MAX_THREADS) {
		*err = g_strdup_printf("threads must be 1..%u (got %s)",
				       SFS_WL_MAX_THREADS, threads->s);
		return -EINVAL;
	}
	if (size->u == 0 || size->u > SFS_WL_MAX_FILE) {
		*err = g_strdup_printf("size must be 1 byte .. 1P (got %s)",
				       size->s);
		return -EINVAL;
	}
	if (rec->u == 0 || rec->u > SFS_WL_MAX_RECORD || rec->u > size->u) {
		*err = g_strdup_printf("%s must be 1 byte .. min(16M, size) "
				       "(got %s=%s size=%s)",
				       rec_name, rec_name, rec->s, size->s);
		return -EINVAL;
	}
	if (size->u % rec->u) {
		*err = g_strdup_printf("size=%s is not a whole number of %ss "
				       "of %s",
				       size->s, rec_name, rec->s);
		return -EINVAL;
	}
	if (direct && rec->u % SFS_WL_SECTOR) {
		*err = g_strdup_printf("direct needs %s in whole %u-byte "
				       "sectors (got %s)",
				       rec_name, SFS_WL_SECTOR, rec->s);
		return -EINVAL;
	}
	return 0;
}

void sfs_wl_rng_seed(struct sfs_wl_rng *r, uint64_t seed)
{
	r->s = seed;
}

uint64_t sfs_wl_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t sfs_wl_rng_next(struct sfs_wl_rng *r)
{
	return sfs_wl_mix(r->s += 0x9e3779b97f4a7c15ULL);
}

uint64_t sfs_wl_rng_below(struct sfs_wl_rng *r, uint64_t n)
{
	return n ? sfs_wl_rng_next(r) % n : 0;
}

/* ---- metrics as CSV rows ---- */

void sfs_wl_metric_row(FILE *out, const char *workload, const char *phase,
		       const char *metric, double value, const char *unit)
{
	fprintf(out, "%s,%s,%s,%.9g,%s\n", workload, phase, metric, value,
		unit);
}

struct metric_ctx {
	FILE *out;
	const char *wl;
};

static void metric_emit(void *ctx, const char *phase, const char *metric,
			double value, const char *unit)
{
	struct metric_ctx *m = ctx;

	sfs_wl_metric_row(m->out, m->wl, phase, metric, value, unit);
}

void sfs_workload_write_metrics(struct sfs_workload *w,
				const struct sfs_wl_result *r, FILE *out)
{
	const char *wl = w->ops->name;

	fprintf(out, "workload,phase,metric,value,unit\n");
	for (uint64_t i = 0; i < r->nphases; i++) {
		const struct sfs_wl_phase *ph = &r->phases[i];
		double s = (double)(ph->end_ns - ph->start_ns) / 1e9;
		double mb = (double)(ph->bytes_read + ph->bytes_written) / 1e6;
		struct sfs_wl_lat all = {.max_ns = 0};

		for (uint64_t k = 0; k < ph->nlat; k++) {
			all.count += ph->lat[k].count;
			all.sum_ns += ph->lat[k].sum_ns;
			all.max_ns = MAX(all.max_ns, ph->lat[k].max_ns);
			for (unsigned b = 0; b < SFS_WL_LAT_BUCKETS; b++)
				all.bucket[b] += ph->lat[k].bucket[b];
		}
		sfs_wl_metric_row(out, wl, ph->name, "seconds", s, "s");
		sfs_wl_metric_row(out, wl, ph->name, "ops", (double)ph->ops,
				  "ops");
		sfs_wl_metric_row(out, wl, ph->name, "mb_s",
				  s > 0 ? mb / s : 0, "MB/s");
		sfs_wl_metric_row(out, wl, ph->name, "ops_s",
				  s > 0 ? (double)ph->ops / s : 0, "ops/s");
		sfs_wl_metric_row(out, wl, ph->name, "bytes_read",
				  (double)ph->bytes_read, "B");
		sfs_wl_metric_row(out, wl, ph->name, "bytes_written",
				  (double)ph->bytes_written, "B");
		sfs_wl_metric_row(out, wl, ph->name, "lat_avg_ms",
				  all.count ? (double)all.sum_ns /
						  (double)all.count / 1e6
					    : 0,
				  "ms");
		sfs_wl_metric_row(out, wl, ph->name, "lat_p50_ms",
				  (double)sfs_wl_lat_percentile(&all, 50) / 1e6,
				  "ms");
		sfs_wl_metric_row(out, wl, ph->name, "lat_p95_ms",
				  (double)sfs_wl_lat_percentile(&all, 95) / 1e6,
				  "ms");
		sfs_wl_metric_row(out, wl, ph->name, "lat_p99_ms",
				  (double)sfs_wl_lat_percentile(&all, 99) / 1e6,
				  "ms");
		sfs_wl_metric_row(out, wl, ph->name, "lat_max_ms",
				  (double)all.max_ns / 1e6, "ms");
		sfs_wl_metric_row(out, wl, ph->name, "cpu_s",
				  (double)ph->cpu_ns / 1e9, "s");
		sfs_wl_metric_row(out, wl, ph->name, "disk_s",
				  (double)ph->dev_busy_ns / 1e9, "s");
	}
	if (w->ops->metrics) {
		struct metric_ctx m = {out, wl};
		w->ops->metrics(w->st, r, metric_emit, &m);
	}
}
