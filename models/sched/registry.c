/*
 * registry.c - the I/O scheduler registry and the door (sched.h): every
 * call to a scheduler's ops goes through the sfs_sched_* functions here,
 * which parse the spec with the scheduler's knob table, check requests,
 * number them, count dispatches and merges, and keep the last dispatch's
 * originals for the caller.
 *
 * New scheduler = one file models/sched/<name>.c ending in its ops table,
 * its extern in sched.h, and one line in sched_registry[].
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <glib.h>

#include "devmodel.h" /* knob tables */
#include "sched.h"

static const struct sfs_sched_ops *const sched_registry[] = {
    &sfs_sched_noop_ops,
    &sfs_sched_elevator_ops,
    &sfs_sched_cfq_ops,
    NULL,
};

struct sfs_sched {
	const struct sfs_sched_ops *ops;
	void *priv;
	void *params;
	struct sfs_sched_counters cnt;
	uint64_t next_seq;
	GArray *last; /* struct sfs_sched_req: the last dispatch's originals */
};

static const struct sfs_sched_ops *sched_find(const char *name)
{
	for (unsigned i = 0; sched_registry[i]; i++)
		if (strcmp(sched_registry[i]->name, name) == 0)
			return sched_registry[i];
	return NULL;
}

int sfs_sched_new(const char *spec, struct sfs_sched **out, char **err)
{
	const struct sfs_sched_ops *ops;
	struct sfs_sched *s;
	gchar **items;
	int rc;

	*out = NULL;
	items = g_strsplit(spec ? spec : "", ",", -1);
	ops = items[0] ? sched_find(g_strstrip(items[0])) : NULL;
	if (!ops) {
		if (err) {
			GString *names = g_string_new(NULL);

			for (unsigned i = 0; sched_registry[i]; i++)
				g_string_append_printf(names, "%s%s",
						       i ? ", " : "",
						       sched_registry[i]->name);
			*err = g_strdup_printf("unknown I/O scheduler '%s' "
					       "(valid: %s)",
					       items[0] ? items[0] : "",
					       names->str);
			g_string_free(names, TRUE);
		}
		g_strfreev(items);
		return -EINVAL;
	}
	s = g_new0(struct sfs_sched, 1);
	s->ops = ops;
	s->params = g_malloc0(ops->params_size);
	rc = sfs_knobs_defaults(ops->name, ops->knobs, s->params, err);
	if (!rc)
		rc = sfs_knobs_set_all(ops->name, ops->knobs, s->params,
				       items + 1, err);
	if (!rc)
		rc = ops->init(s->params, &s->priv, err);
	g_strfreev(items);
	if (rc) {
		g_free(s->params);
		g_free(s);
		return rc;
	}
	s->last = g_array_new(FALSE, FALSE, sizeof(struct sfs_sched_req));
	*out = s;
	return 0;
}

void sfs_sched_free(struct sfs_sched *s)
{
	if (!s)
		return;
	s->ops->fini(s->priv);
	g_array_free(s->last, TRUE);
	g_free(s->params);
	g_free(s);
}

int sfs_sched_add(struct sfs_sched *s, const struct sfs_io_req *req,
		  sfs_ns_t arrival_ns, void *cookie)
{
	struct sfs_sched_node *n;

	if ((req->op != SFS_IO_READ && req->op != SFS_IO_WRITE) ||
	    req->len_bytes == 0 ||
	    req->off_bytes + req->len_bytes < req->off_bytes)
		return -EINVAL;
	n = g_new0(struct sfs_sched_node, 1);
	n->r.io = *req;
	n->r.arrival_ns = arrival_ns;
	n->r.seq = ++s->next_seq;
	n->r.cookie = cookie;
	s->ops->add(s->priv, n);
	s->cnt.added++;
	return 0;
}

size_t sfs_sched_queued(const struct sfs_sched *s)
{
	return s->ops->queued(s->priv);
}

bool sfs_sched_empty(const struct sfs_sched *s)
{
	return sfs_sched_queued(s) == 0;
}

int sfs_sched_dispatch_next(struct sfs_sched *s, uint64_t head_off,
			    sfs_ns_t now, struct sfs_sched_dispatch *out)
{
	GPtrArray *run;
	bool expired = false;

	if (sfs_sched_empty(s))
		return -ENOENT;
	run = g_ptr_array_new_with_free_func(g_free);
	s->ops->dispatch(s->priv, head_off, now, run, &expired);
	g_array_set_size(s->last, 0);
	for (guint i = 0; i < run->len; i++) {
		struct sfs_sched_node *n = g_ptr_array_index(run, i);

		g_array_append_val(s->last, n->r);
	}
	g_ptr_array_free(run, TRUE);

	out->orig = (const struct sfs_sched_req *)(void *)s->last->data;
	out->n_orig = s->last->len;
	out->expired = expired;
	out->req = out->orig[0].io;
	out->req.len_bytes = 0;
	for (size_t i = 0; i < out->n_orig; i++)
		out->req.len_bytes += out->orig[i].io.len_bytes;
	s->cnt.dispatched++;
	s->cnt.merges += out->n_orig - 1;
	s->cnt.expired += expired;
	return 0;
}

int sfs_sched_slices(const struct sfs_sched *s, struct sfs_sched_slices *out)
{
	if (!s->ops->slices)
		return -ENOENT;
	s->ops->slices(s->params, out);
	return 0;
}

void sfs_sched_counters(const struct sfs_sched *s,
			struct sfs_sched_counters *out)
{
	*out = s->cnt;
}

const char *sfs_sched_name(const struct sfs_sched *s)
{
	return s->ops->name;
}

const struct sfs_knob *sfs_sched_knobs(const char *name)
{
	const struct sfs_sched_ops *ops = name ? sched_find(name) : NULL;

	return ops ? ops->knobs : NULL;
}

const char *sfs_sched_nth(unsigned i, const char **help_out)
{
	for (unsigned n = 0; sched_registry[n]; n++)
		if (n == i) {
			if (help_out)
				*help_out = sched_registry[n]->help;
			return sched_registry[n]->name;
		}
	return NULL;
}

void sfs_sched_list(FILE *out)
{
	fputs("I/O schedulers (sched=NAME[,key=value...]):\n", out);
	for (unsigned i = 0; sched_registry[i]; i++) {
		fprintf(out, "  %s - %s\n", sched_registry[i]->name,
			sched_registry[i]->help);
		sfs_knobs_print_help(sched_registry[i]->knobs, out);
	}
}
