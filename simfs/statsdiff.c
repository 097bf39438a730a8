/*
 * statsdiff.c - comparing two runs (see statsdiff.h, doc/compare.md).
 *
 * Both comparisons, stats documents and bench results, come down to one
 * structure: a list of groups (top-level sections, or bench tables) and a
 * list of differences, each in one group.  They are built by
 *   sd_compare(diff, group, name, a, b, unit)   one value, either side absent
 * and printed by
 *   sd_print(diff, top, indent, out)
 * which sorts them: within a group, changed text values first (by name),
 * then changed numbers by |relative change| descending (a change from 0
 * counts as infinite), ties by name, then added and removed leaves by name.
 * With top > 0 only the top largest changes over all groups are printed,
 * in their groups.  Sorting uses g_ptr_array_sort, which is stable, over
 * entries inserted in the inputs' order, so equal keys cannot reorder.
 *
 * Invariants:
 *  1. Every leaf of either input is in exactly one of: a difference, or its
 *     group's unchanged count.
 *  2. A number is compared as a number (integers exactly, as 64-bit
 *     integers), anything else as its text; a number against a non-number
 *     compares as text.
 *  3. Nothing here aborts on input: sizes come from files that were read
 *     whole by GLib, and every error is one line in *err.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <glib.h>

#include "statsdiff.h"

#define SD_VERSION_KEY "simfs_stats_version"
#define SD_CONFIG "config"
#define SD_ABSENT "(absent)"

/* ------------------------------------------------------------------ */
/* values and differences                                              */
/* ------------------------------------------------------------------ */

/* One value to compare: a number or a text. */
struct sd_val {
	bool num;	   /* a finite number */
	bool is_int;	   /* num, and exact in i */
	gint64 i;	   /* if is_int */
	double d;	   /* if num */
	char *text;	   /* as printed; owned */
	bool zero_default; /* absent on the other side means 0 */
};

enum sd_kind {
	SD_TEXT,    /* a non-numeric value that differs */
	SD_NUM,	    /* a number that differs */
	SD_ADDED,   /* only in B */
	SD_REMOVED, /* only in A */
};

struct sd_change {
	guint group; /* index into sd_diff.groups */
	char *name;
	enum sd_kind kind;
	char *old_txt;
	char *new_txt;
	double rel; /* SD_NUM: (new - old) / |old|; INFINITY when old is 0 */
};

struct sd_diff {
	GPtrArray *groups;  /* char *: each group's header, in print order */
	GArray *unchanged;  /* guint per group: leaves equal in both */
	GPtrArray *changes; /* struct sd_change *, in the inputs' order */
};

static void sd_change_free(gpointer p)
{
	struct sd_change *c = p;

	g_free(c->name);
	g_free(c->old_txt);
	g_free(c->new_txt);
	g_free(c);
}

static struct sd_diff *sd_diff_new(void)
{
	struct sd_diff *d = g_new0(struct sd_diff, 1);

	d->groups = g_ptr_array_new_with_free_func(g_free);
	d->unchanged = g_array_new(FALSE, TRUE, sizeof(guint));
	d->changes = g_ptr_array_new_with_free_func(sd_change_free);
	return d;
}

static void sd_diff_free(struct sd_diff *d)
{
	g_ptr_array_unref(d->groups);
	g_array_unref(d->unchanged);
	g_ptr_array_unref(d->changes);
	g_free(d);
}

/* Add a group with this header; returns its index. */
static guint sd_group_add(struct sd_diff *d, char *header_owned)
{
	guint zero = 0;

	g_ptr_array_add(d->groups, header_owned);
	g_array_append_val(d->unchanged, zero);
	return d->groups->len - 1;
}

static char *sd_with_unit(const char *text, const char *unit)
{
	if (!unit || !*unit)
		return g_strdup(text);
	return g_strdup_printf("%s %s", text, unit);
}

static bool sd_equal(const struct sd_val *a, const struct sd_val *b)
{
	if (a->num && b->num) {
		if (a->is_int && b->is_int)
			return a->i == b->i;
		return a->d == b->d;
	}
	return strcmp(a->text, b->text) == 0;
}

/*
 * Compare one named value of group g: a or b NULL means absent on that
 * side.  Records a difference or counts it unchanged; unit (may be NULL)
 * is printed after the values.
 */
static void sd_compare(struct sd_diff *d, guint g, const char *name,
		       const struct sd_val *a, const struct sd_val *b,
		       const char *unit)
{
	static const struct sd_val zero = {
	    .num = true, .is_int = true, .text = (char *)"0"};
	struct sd_change *c;

	if (!a && b && b->zero_default)
		a = &zero;
	if (!b && a && a->zero_default)
		b = &zero;
	if (!a && !b)
		return;
	if (a && b && sd_equal(a, b)) {
		g_array_index(d->unchanged, guint, g)++;
		return;
	}
	c = g_new0(struct sd_change, 1);
	c->group = g;
	c->name = g_strdup(name);
	if (!a) {
		c->kind = SD_ADDED;
		c->old_txt = g_strdup(SD_ABSENT);
		c->new_txt = sd_with_unit(b->text, unit);
	} else if (!b) {
		c->kind = SD_REMOVED;
		c->old_txt = sd_with_unit(a->text, unit);
		c->new_txt = g_strdup(SD_ABSENT);
	} else {
		c->kind = a->num && b->num ? SD_NUM : SD_TEXT;
		c->old_txt = g_strdup(a->text);
		c->new_txt = sd_with_unit(b->text, unit);
		if (c->kind == SD_NUM)
			c->rel =
			    a->d != 0 ? (b->d - a->d) / fabs(a->d) : INFINITY;
	}
	g_ptr_array_add(d->changes, c);
}

/* |relative change| descending. */
static int sd_rel_cmp(const struct sd_change *x, const struct sd_change *y)
{
	double mx = fabs(x->rel), my = fabs(y->rel);

	if (mx > my)
		return -1;
	if (mx < my)
		return 1;
	return 0;
}

/* Print order: group, kind, |relative change| (numbers), name. */
static gint sd_cmp_in_group(gconstpointer pa, gconstpointer pb)
{
	const struct sd_change *x = *(struct sd_change *const *)pa;
	const struct sd_change *y = *(struct sd_change *const *)pb;
	int r;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->kind == SD_NUM && (r = sd_rel_cmp(x, y)) != 0)
		return r;
	return strcmp(x->name, y->name);
}

/* Rank over all groups, for top: text changes, then |rel|, group, name. */
static gint sd_cmp_rank(gconstpointer pa, gconstpointer pb)
{
	const struct sd_change *x = *(struct sd_change *const *)pa;
	const struct sd_change *y = *(struct sd_change *const *)pb;
	int r;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->kind == SD_NUM && (r = sd_rel_cmp(x, y)) != 0)
		return r;
	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	return strcmp(x->name, y->name);
}

static char *sd_pct(const struct sd_change *c)
{
	switch (c->kind) {
	case SD_NUM:
		if (isinf(c->rel))
			return g_strdup("from 0");
		if (c->rel != 0 && fabs(c->rel) < 0.001) /* under 0.1 % */
			return g_strdup_printf("%+.2g%%", 100.0 * c->rel);
		return g_strdup_printf("%+.1f%%", 100.0 * c->rel);
	case SD_ADDED:
		return g_strdup("added");
	case SD_REMOVED:
		return g_strdup("removed");
	default:
		return g_strdup("");
	}
}

/* Print show[from, to), all of one group, with aligned columns. */
static void sd_print_lines(GPtrArray *show, guint from, guint to,
			   const char *indent, FILE *out)
{
	int nw = 0, ow = 0, vw = 0, pw = 0;
	char **pct = g_new0(char *, to - from);

	for (guint i = from; i < to; i++) {
		const struct sd_change *c = show->pdata[i];
		pct[i - from] = sd_pct(c);
		nw = MAX(nw, (int)strlen(c->name));
		ow = MAX(ow, (int)strlen(c->old_txt));
		vw = MAX(vw, (int)strlen(c->new_txt));
		pw = MAX(pw, (int)strlen(pct[i - from]));
	}
	for (guint i = from; i < to; i++) {
		const struct sd_change *c = show->pdata[i];
		const char *p = pct[i - from];
		fprintf(out, "%s  %-*s  %*s -> ", indent, nw, c->name, ow,
			c->old_txt);
		if (*p)
			fprintf(out, "%-*s  %*s\n", vw, c->new_txt, pw, p);
		else
			fprintf(out, "%s\n", c->new_txt);
		g_free(pct[i - from]);
	}
	g_free(pct);
}

/*
 * Print d: each group with a difference shown, its header and lines, and
 * (top = 0) its unchanged count; then one summary line.
 */
static void sd_print(struct sd_diff *d, unsigned top, const char *indent,
		     FILE *out)
{
	GPtrArray *show = g_ptr_array_new();
	guint n[4] = {0}, unchanged = 0, changed, i = 0;

	for (guint k = 0; k < d->changes->len; k++) {
		struct sd_change *c = d->changes->pdata[k];
		n[c->kind]++;
		if (!top || c->kind == SD_TEXT || c->kind == SD_NUM)
			g_ptr_array_add(show, c);
	}
	if (top) {
		g_ptr_array_sort(show, sd_cmp_rank);
		if (show->len > top)
			g_ptr_array_set_size(show, top);
	}
	g_ptr_array_sort(show, sd_cmp_in_group);
	for (guint g = 0; g < d->groups->len; g++) {
		guint from = i, left = g_array_index(d->unchanged, guint, g);

		unchanged += left;
		while (i < show->len &&
		       ((struct sd_change *)show->pdata[i])->group == g)
			i++;
		if (i == from)
			continue;
		fprintf(out, "%s%s\n", indent, (char *)d->groups->pdata[g]);
		sd_print_lines(show, from, i, indent, out);
		if (!top && left)
			fprintf(out, "%s  (%u unchanged)\n", indent, left);
	}
	changed = n[SD_TEXT] + n[SD_NUM];
	if (!d->changes->len)
		fprintf(out, "%sno differences (%u value%s compared)\n", indent,
			unchanged, unchanged == 1 ? "" : "s");
	else if (top && show->len < changed)
		fprintf(out,
			"%s%u changed (the %u largest shown), %u added, "
			"%u removed, %u unchanged\n",
			indent, changed, show->len, n[SD_ADDED], n[SD_REMOVED],
			unchanged);
	else
		fprintf(out,
			"%s%u changed, %u added, %u removed, %u unchanged\n",
			indent, changed, n[SD_ADDED], n[SD_REMOVED], unchanged);
	g_ptr_array_unref(show);
}

/* ------------------------------------------------------------------ */
/* stats documents                                                     */
/* ------------------------------------------------------------------ */

struct sd_leaf {
	char *name; /* "journal.commits_total" */
	struct sd_val v;
};

/* One top-level section of a document, flattened. */
struct sd_section {
	char *name;
	GPtrArray *leaves;   /* struct sd_leaf *, in the document's order */
	GHashTable *by_name; /* name -> struct sd_leaf *, not owned */
};

struct sd_doc {
	GPtrArray *sections; /* struct sd_section *, in order */
	GHashTable *by_name; /* name -> struct sd_section *, not owned */
};

static void sd_leaf_free(gpointer p)
{
	struct sd_leaf *l = p;

	g_free(l->name);
	g_free(l->v.text);
	g_free(l);
}

static void sd_section_free(gpointer p)
{
	struct sd_section *s = p;

	g_free(s->name);
	g_hash_table_unref(s->by_name);
	g_ptr_array_unref(s->leaves);
	g_free(s);
}

static void sd_doc_free(struct sd_doc *doc)
{
	if (!doc)
		return;
	g_hash_table_unref(doc->by_name);
	g_ptr_array_unref(doc->sections);
	g_free(doc);
}

/* Numbers as printed: integers exactly, others to 7 significant digits. */
static char *sd_fmt_double(double v)
{
	if (fabs(v) < 1e7)
		return g_strdup_printf("%.7g", v);
	return g_strdup_printf("%.0f", v);
}

/* Text as printed: control characters shown as spaces. */
static char *sd_fmt_text(const char *s)
{
	char *c = g_strdup(s ? s : "");

	for (char *p = c; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	return c;
}

static void sd_leaf_add(struct sd_section *s, const char *name, struct sd_val v)
{
	struct sd_leaf *l;

	if (g_hash_table_contains(s->by_name, name)) {
		g_free(v.text); /* a duplicate member: the first one counts */
		return;
	}
	l = g_new0(struct sd_leaf, 1);
	l->name = g_strdup(name);
	l->v = v;
	g_ptr_array_add(s->leaves, l);
	g_hash_table_insert(s->by_name, l->name, l);
}

static bool sd_int_member(JsonObject *o, const char *name, gint64 *out)
{
	JsonNode *n = json_object_get_member(o, name);

	if (!n || !JSON_NODE_HOLDS_VALUE(n) ||
	    json_node_get_value_type(n) != G_TYPE_INT64)
		return false;
	*out = json_node_get_int(n);
	return true;
}

/* A histogram's buckets: objects of exactly lo, hi and count integers. */
static bool sd_is_buckets(JsonArray *arr)
{
	guint len = json_array_get_length(arr);
	gint64 x;

	if (!len)
		return false;
	for (guint i = 0; i < len; i++) {
		JsonNode *e = json_array_get_element(arr, i);
		JsonObject *o;
		if (!JSON_NODE_HOLDS_OBJECT(e))
			return false;
		o = json_node_get_object(e);
		if (json_object_get_size(o) != 3 ||
		    !sd_int_member(o, "lo", &x) ||
		    !sd_int_member(o, "hi", &x) ||
		    !sd_int_member(o, "count", &x))
			return false;
	}
	return true;
}

static struct sd_val sd_int_val(gint64 i)
{
	return (struct sd_val){.num = true,
			       .is_int = true,
			       .i = i,
			       .d = (double)i,
			       .text = g_strdup_printf("%" PRId64, i)};
}

/* Flatten node, named name, into s's leaves. */
static void sd_flatten(struct sd_section *s, const char *name, JsonNode *node)
{
	switch (JSON_NODE_TYPE(node)) {
	case JSON_NODE_OBJECT: {
		JsonObject *o = json_node_get_object(node);
		GList *members = json_object_get_members(o);
		for (GList *m = members; m; m = m->next) {
			char *sub =
			    g_strdup_printf("%s.%s", name, (char *)m->data);
			sd_flatten(s, sub, json_object_get_member(o, m->data));
			g_free(sub);
		}
		g_list_free(members);
		break;
	}
	case JSON_NODE_ARRAY: {
		JsonArray *arr = json_node_get_array(node);
		bool buckets = sd_is_buckets(arr);
		for (guint i = 0; i < json_array_get_length(arr); i++) {
			JsonNode *e = json_array_get_element(arr, i);
			JsonObject *o;
			gint64 lo, hi, count;
			char *sub;
			struct sd_val v;
			if (!buckets) {
				sub = g_strdup_printf("%s[%u]", name, i);
				sd_flatten(s, sub, e);
				g_free(sub);
				continue;
			}
			o = json_node_get_object(e);
			sd_int_member(o, "lo", &lo);
			sd_int_member(o, "hi", &hi);
			sd_int_member(o, "count", &count);
			if (lo == hi)
				sub = g_strdup_printf("%s[%" PRId64 "]", name,
						      lo);
			else
				sub = g_strdup_printf("%s[%" PRId64 "-%" PRId64
						      "]",
						      name, lo, hi);
			v = sd_int_val(count);
			v.zero_default = true;
			sd_leaf_add(s, sub, v);
			g_free(sub);
		}
		break;
	}
	case JSON_NODE_NULL:
		sd_leaf_add(s, name, (struct sd_val){.text = g_strdup("null")});
		break;
	case JSON_NODE_VALUE: {
		GType t = json_node_get_value_type(node);
		struct sd_val v = {0};
		if (t == G_TYPE_INT64) {
			v = sd_int_val(json_node_get_int(node));
		} else if (t == G_TYPE_DOUBLE &&
			   isfinite(json_node_get_double(node))) {
			v.num = true;
			v.d = json_node_get_double(node);
			v.text = sd_fmt_double(v.d);
		} else if (t == G_TYPE_BOOLEAN) {
			v.text = g_strdup(
			    json_node_get_boolean(node) ? "true" : "false");
		} else if (t == G_TYPE_STRING) {
			v.text = sd_fmt_text(json_node_get_string(node));
		} else {
			v.text = g_strdup("?");
		}
		sd_leaf_add(s, name, v);
		break;
	}
	}
}

/* Flatten a stats document; NULL and *err if it is not one. */
static struct sd_doc *sd_doc_load(JsonNode *root, const char *label,
				  gint64 *version, char **err)
{
	struct sd_doc *doc;
	JsonObject *o;
	GList *members;

	if (!root || !JSON_NODE_HOLDS_OBJECT(root) ||
	    !sd_int_member(json_node_get_object(root), SD_VERSION_KEY,
			   version)) {
		*err = g_strdup_printf("%s is not a simfs statistics "
				       "document (no " SD_VERSION_KEY ")",
				       label);
		return NULL;
	}
	o = json_node_get_object(root);
	doc = g_new0(struct sd_doc, 1);
	doc->sections = g_ptr_array_new_with_free_func(sd_section_free);
	doc->by_name = g_hash_table_new(g_str_hash, g_str_equal);
	members = json_object_get_members(o);
	for (GList *m = members; m; m = m->next) {
		struct sd_section *s;
		if (!strcmp(m->data, SD_VERSION_KEY) ||
		    g_hash_table_contains(doc->by_name, m->data))
			continue;
		s = g_new0(struct sd_section, 1);
		s->name = g_strdup(m->data);
		s->leaves = g_ptr_array_new_with_free_func(sd_leaf_free);
		s->by_name = g_hash_table_new(g_str_hash, g_str_equal);
		sd_flatten(s, s->name, json_object_get_member(o, m->data));
		g_ptr_array_add(doc->sections, s);
		g_hash_table_insert(doc->by_name, s->name, s);
	}
	g_list_free(members);
	return doc;
}

/* Compare section name of a and b (either may lack it) as a new group. */
static void sd_diff_section(struct sd_diff *d, struct sd_doc *a,
			    struct sd_doc *b, const char *name)
{
	struct sd_section *sa = g_hash_table_lookup(a->by_name, name);
	struct sd_section *sb = g_hash_table_lookup(b->by_name, name);
	char *header =
	    !strcmp(name, SD_CONFIG)
		? g_strdup("what differs in the setup (" SD_CONFIG "):")
		: g_strdup_printf("%s:", name);
	guint g = sd_group_add(d, header);

	for (guint i = 0; sa && i < sa->leaves->len; i++) {
		struct sd_leaf *la = sa->leaves->pdata[i];
		struct sd_leaf *lb =
		    sb ? g_hash_table_lookup(sb->by_name, la->name) : NULL;
		sd_compare(d, g, la->name, &la->v, lb ? &lb->v : NULL, NULL);
	}
	for (guint i = 0; sb && i < sb->leaves->len; i++) {
		struct sd_leaf *lb = sb->leaves->pdata[i];
		if (!sa || !g_hash_table_contains(sa->by_name, lb->name))
			sd_compare(d, g, lb->name, NULL, &lb->v, NULL);
	}
}

int sfs_stats_diff_json(JsonNode *a, const char *label_a, JsonNode *b,
			const char *label_b, unsigned top, const char *indent,
			FILE *out, char **err)
{
	struct sd_doc *da, *db = NULL;
	struct sd_diff *d;
	gint64 va, vb;
	int rc = -EINVAL;

	*err = NULL;
	da = sd_doc_load(a, label_a, &va, err);
	if (!da)
		goto out;
	db = sd_doc_load(b, label_b, &vb, err);
	if (!db)
		goto out;
	if (va != vb) {
		*err = g_strdup_printf("%s and %s have different stats "
				       "versions (%" PRId64 " and %" PRId64 ")",
				       label_a, label_b, va, vb);
		goto out;
	}
	d = sd_diff_new();
	/* the setup first, then the layers in A's order, then B's own */
	if (g_hash_table_contains(da->by_name, SD_CONFIG) ||
	    g_hash_table_contains(db->by_name, SD_CONFIG))
		sd_diff_section(d, da, db, SD_CONFIG);
	for (guint i = 0; i < da->sections->len; i++) {
		struct sd_section *s = da->sections->pdata[i];
		if (strcmp(s->name, SD_CONFIG))
			sd_diff_section(d, da, db, s->name);
	}
	for (guint i = 0; i < db->sections->len; i++) {
		struct sd_section *s = db->sections->pdata[i];
		if (strcmp(s->name, SD_CONFIG) &&
		    !g_hash_table_contains(da->by_name, s->name))
			sd_diff_section(d, da, db, s->name);
	}
	sd_print(d, top, indent ? indent : "", out);
	sd_diff_free(d);
	rc = 0;
out:
	sd_doc_free(da);
	sd_doc_free(db);
	return rc;
}

/* Parse a JSON file; the caller unrefs *parser.  -ENOENT or -EINVAL. */
static int sd_json_load(const char *path, JsonParser **parser, char **err)
{
	GError *gerr = NULL;
	char *text = NULL;
	gsize len = 0;

	*parser = NULL;
	if (!g_file_get_contents(path, &text, &len, &gerr)) {
		if (!g_file_test(path, G_FILE_TEST_EXISTS))
			*err = g_strdup_printf("%s: no such file", path);
		else if (g_file_test(path, G_FILE_TEST_IS_DIR))
			*err = g_strdup_printf("%s: a folder, not a stats "
					       "file",
					       path);
		else
			*err = g_strdup(gerr->message);
		g_error_free(gerr);
		return -ENOENT;
	}
	*parser = json_parser_new();
	if (!json_parser_load_from_data(*parser, text, (gssize)len, &gerr)) {
		*err = g_strdup_printf("%s: not JSON: %s", path, gerr->message);
		g_error_free(gerr);
		g_free(text);
		g_object_unref(*parser);
		*parser = NULL;
		return -EINVAL;
	}
	g_free(text);
	return 0;
}

static bool sd_has_config(JsonNode *root)
{
	return root && JSON_NODE_HOLDS_OBJECT(root) &&
	       json_object_has_member(json_node_get_object(root), SD_CONFIG);
}

int sfs_stats_diff_files(const char *path_a, const char *path_b, FILE *out,
			 char **err)
{
	JsonParser *pa = NULL, *pb = NULL;
	JsonNode *ra, *rb;
	GString *buf;
	FILE *mem;
	char *text = NULL;
	size_t len = 0;
	int rc;

	*err = NULL;
	rc = sd_json_load(path_a, &pa, err);
	if (rc)
		goto out;
	rc = sd_json_load(path_b, &pb, err);
	if (rc)
		goto out;
	ra = json_parser_get_root(pa);
	rb = json_parser_get_root(pb);
	/* print nothing unless both are stats documents */
	mem = open_memstream(&text, &len);
	if (!mem) {
		rc = -ENOMEM;
		*err = g_strdup("out of memory");
		goto out;
	}
	rc = sfs_stats_diff_json(ra, path_a, rb, path_b, 0, "", mem, err);
	fclose(mem);
	if (rc)
		goto out;
	buf = g_string_new(NULL);
	g_string_append_printf(buf, "A: %s\nB: %s\n", path_a, path_b);
	if (!sd_has_config(ra) && !sd_has_config(rb))
		g_string_append(buf, "(neither file has a " SD_CONFIG
				     " section: the setup itself is not "
				     "compared)\n");
	fputs(buf->str, out);
	fwrite(text, 1, len, out);
	g_string_free(buf, TRUE);
out:
	free(text);
	if (pa)
		g_object_unref(pa);
	if (pb)
		g_object_unref(pb);
	return rc;
}

/* ------------------------------------------------------------------ */
/* bench folders                                                       */
/* ------------------------------------------------------------------ */

enum {
	SD_F_EXPERIMENT,
	SD_F_TABLE,
	SD_F_WORKLOAD,
	SD_F_PHASE,
	SD_F_SYSTEM,
	SD_F_VARIANT,
	SD_F_METRIC,
	SD_F_VALUE,
	SD_F_UNIT,
	SD_NFIELDS,
};

static const char *const sd_columns[SD_NFIELDS] = {
    "experiment", "table",  "workload", "phase", "system",
    "variant",	  "metric", "value",	"unit",
};

/* One row of results.csv. */
struct sd_row {
	char *f[SD_NFIELDS];
	char *key; /* table..metric joined by \x1f */
	struct sd_val v;
};

static void sd_row_free(gpointer p)
{
	struct sd_row *r = p;

	for (unsigned i = 0; i < SD_NFIELDS; i++)
		g_free(r->f[i]);
	g_free(r->key);
	g_free(r->v.text);
	g_free(r);
}

/*
 * Read one CSV record (RFC 4180: quoted fields with "" inside) from *pos
 * into fields; *line counts newlines.  Returns 1 (a record), 0 (end of
 * text) or -1 (an unterminated quote).
 */
static int sd_csv_record(const char **pos, const char *end, unsigned *line,
			 GPtrArray *fields)
{
	const char *p = *pos;
	GString *f;

	g_ptr_array_set_size(fields, 0);
	while (p < end && (*p == '\n' || *p == '\r')) /* blank lines */
		if (*p++ == '\n')
			(*line)++;
	if (p >= end)
		return 0;
	f = g_string_new(NULL);
	for (;;) {
		if (p < end && *p == '"') {
			p++;
			for (;;) {
				if (p >= end) {
					g_string_free(f, TRUE);
					return -1;
				}
				if (*p == '"' && p + 1 < end && p[1] == '"') {
					g_string_append_c(f, '"');
					p += 2;
				} else if (*p == '"') {
					p++;
					break;
				} else {
					if (*p == '\n')
						(*line)++;
					g_string_append_c(f, *p++);
				}
			}
		}
		while (p < end && *p != ',' && *p != '\n' && *p != '\r')
			g_string_append_c(f, *p++);
		g_ptr_array_add(fields, g_string_free(f, FALSE));
		if (p < end && *p == ',') {
			p++;
			f = g_string_new(NULL);
			continue;
		}
		break;
	}
	while (p < end && *p == '\r')
		p++;
	if (p < end && *p == '\n') {
		p++;
		(*line)++;
	}
	*pos = p;
	return 1;
}

/* A CSV value: a number if the whole text is one. */
static struct sd_val sd_csv_val(const char *text)
{
	struct sd_val v = {.text = sd_fmt_text(text)};
	char *endp;
	double d;
	gint64 i;

	if (!*text)
		return v;
	errno = 0;
	i = g_ascii_strtoll(text, &endp, 10);
	if (!*endp && !errno) {
		v.num = v.is_int = true;
		v.i = i;
		v.d = (double)i;
		return v;
	}
	d = g_ascii_strtod(text, &endp);
	if (!*endp && isfinite(d)) {
		v.num = true;
		v.d = d;
	}
	return v;
}

/* Load path (a long-form results.csv) into rows. -ENOENT or -EINVAL. */
static int sd_csv_load(const char *path, GPtrArray **rows_out, char **err)
{
	GPtrArray *fields = g_ptr_array_new_with_free_func(g_free);
	GPtrArray *rows = NULL;
	GError *gerr = NULL;
	char *text = NULL;
	const char *pos, *end;
	unsigned line = 1, at;
	gsize len = 0;
	int rc = -EINVAL, got;

	if (!g_file_get_contents(path, &text, &len, &gerr)) {
		*err = g_strdup_printf(
		    "%s: %s (not a simfs bench output folder?)", path,
		    g_file_test(path, G_FILE_TEST_EXISTS) ? gerr->message
							  : "no such file");
		g_error_free(gerr);
		rc = -ENOENT;
		goto out;
	}
	pos = text;
	end = text + len;
	rows = g_ptr_array_new_with_free_func(sd_row_free);
	at = line;
	got = sd_csv_record(&pos, end, &line, fields);
	if (got <= 0 || fields->len != SD_NFIELDS)
		goto bad_header;
	for (unsigned i = 0; i < SD_NFIELDS; i++)
		if (strcmp(fields->pdata[i], sd_columns[i]))
			goto bad_header;
	for (;;) {
		struct sd_row *r;
		at = line;
		got = sd_csv_record(&pos, end, &line, fields);
		if (got == 0)
			break;
		if (got < 0) {
			*err = g_strdup_printf("%s:%u: a quote is not closed",
					       path, at);
			goto out;
		}
		if (fields->len != SD_NFIELDS) {
			*err =
			    g_strdup_printf("%s:%u: %u fields, expected %d",
					    path, at, fields->len, SD_NFIELDS);
			goto out;
		}
		r = g_new0(struct sd_row, 1);
		for (unsigned i = 0; i < SD_NFIELDS; i++)
			r->f[i] = g_strdup(fields->pdata[i]);
		r->key =
		    g_strjoin("\x1f", r->f[SD_F_TABLE], r->f[SD_F_WORKLOAD],
			      r->f[SD_F_PHASE], r->f[SD_F_SYSTEM],
			      r->f[SD_F_VARIANT], r->f[SD_F_METRIC], NULL);
		r->v = sd_csv_val(r->f[SD_F_VALUE]);
		g_ptr_array_add(rows, r);
	}
	*rows_out = rows;
	rows = NULL;
	rc = 0;
	goto out;
bad_header:
	*err = g_strdup_printf("%s:%u: not a simfs bench results.csv (the "
			       "header must be experiment,table,workload,"
			       "phase,system,variant,metric,value,unit)",
			       path, at);
out:
	if (rows)
		g_ptr_array_unref(rows);
	g_ptr_array_unref(fields);
	g_free(text);
	return rc;
}

/* The first row of each key; a later duplicate is ignored. */
static GHashTable *sd_rows_index(GPtrArray *rows)
{
	GHashTable *h = g_hash_table_new(g_str_hash, g_str_equal);

	for (guint i = 0; i < rows->len; i++) {
		struct sd_row *r = rows->pdata[i];
		if (!g_hash_table_contains(h, r->key))
			g_hash_table_insert(h, r->key, r);
	}
	return h;
}

/* "ext3 clients=4 dbench/run mb_s": the row's name in the listing. */
static char *sd_row_label(const struct sd_row *r)
{
	GString *s = g_string_new(NULL);
	const char *parts[3] = {r->f[SD_F_SYSTEM], r->f[SD_F_VARIANT], NULL};

	for (unsigned i = 0; i < 2; i++)
		if (*parts[i])
			g_string_append_printf(s, "%s ", parts[i]);
	g_string_append(s, r->f[SD_F_WORKLOAD]);
	if (*r->f[SD_F_PHASE])
		g_string_append_printf(s, "/%s", r->f[SD_F_PHASE]);
	g_string_append_printf(s, " %s", r->f[SD_F_METRIC]);
	return g_string_free(s, FALSE);
}

/* The group of table t, made on first use. */
static guint sd_table_group(struct sd_diff *d, GHashTable *tables,
			    const char *t)
{
	gpointer idx;

	if (g_hash_table_lookup_extended(tables, t, NULL, &idx))
		return GPOINTER_TO_UINT(idx);
	idx = GUINT_TO_POINTER(
	    sd_group_add(d, *t ? g_strdup_printf("table %s:", t)
			       : g_strdup("rows in no table:")));
	g_hash_table_insert(tables, g_strdup(t), idx);
	return GPOINTER_TO_UINT(idx);
}

/*
 * Print the rows' differences, one group per table: the named tables in
 * order of first appearance (A, then B), the rows in no table last.
 */
static void sd_diff_rows(GPtrArray *ra, GPtrArray *rb, FILE *out)
{
	GHashTable *ia = sd_rows_index(ra), *ib = sd_rows_index(rb);
	GHashTable *tables =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	struct sd_diff *d = sd_diff_new();
	bool untabled = false;

	/* the groups: named tables in order of appearance, then the rest */
	for (guint k = 0; k < 2; k++) {
		GPtrArray *rows = k ? rb : ra;
		for (guint i = 0; i < rows->len; i++) {
			const char *t =
			    ((struct sd_row *)rows->pdata[i])->f[SD_F_TABLE];
			if (*t)
				sd_table_group(d, tables, t);
			else
				untabled = true;
		}
	}
	if (untabled)
		sd_table_group(d, tables, "");
	for (guint i = 0; i < ra->len; i++) {
		struct sd_row *a = ra->pdata[i], *b;
		char *label;
		if (g_hash_table_lookup(ia, a->key) != a)
			continue;
		b = g_hash_table_lookup(ib, a->key);
		label = sd_row_label(a);
		sd_compare(d, sd_table_group(d, tables, a->f[SD_F_TABLE]),
			   label, &a->v, b ? &b->v : NULL,
			   b ? b->f[SD_F_UNIT] : a->f[SD_F_UNIT]);
		g_free(label);
	}
	for (guint i = 0; i < rb->len; i++) {
		struct sd_row *b = rb->pdata[i];
		char *label;
		if (g_hash_table_lookup(ib, b->key) != b ||
		    g_hash_table_contains(ia, b->key))
			continue;
		label = sd_row_label(b);
		sd_compare(d, sd_table_group(d, tables, b->f[SD_F_TABLE]),
			   label, NULL, &b->v, b->f[SD_F_UNIT]);
		g_free(label);
	}
	sd_print(d, 0, "", out);
	sd_diff_free(d);
	g_hash_table_unref(tables);
	g_hash_table_unref(ia);
	g_hash_table_unref(ib);
}

static gint sd_strcmp(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the folders in dir/cells, sorted (none if it has none). */
static GPtrArray *sd_cells(const char *dir)
{
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	char *cells = g_build_filename(dir, "cells", NULL);
	GDir *gd = g_dir_open(cells, 0, NULL);
	const char *n;

	while (gd && (n = g_dir_read_name(gd))) {
		char *p = g_build_filename(cells, n, NULL);
		if (g_file_test(p, G_FILE_TEST_IS_DIR))
			g_ptr_array_add(names, g_strdup(n));
		g_free(p);
	}
	if (gd)
		g_dir_close(gd);
	g_free(cells);
	g_ptr_array_sort(names, sd_strcmp);
	return names;
}

/* One cell in both folders: its stats' top changes, or why not. */
static void sd_diff_cell(const char *dir1, const char *dir2, const char *cell,
			 FILE *out)
{
	char *pa = g_build_filename(dir1, "cells", cell, "stats.json", NULL);
	char *pb = g_build_filename(dir2, "cells", cell, "stats.json", NULL);
	JsonParser *ja = NULL, *jb = NULL;
	char *err = NULL;

	fprintf(out, "cell %s:\n", cell);
	if (sd_json_load(pa, &ja, &err) || sd_json_load(pb, &jb, &err) ||
	    sfs_stats_diff_json(json_parser_get_root(ja), pa,
				json_parser_get_root(jb), pb, SFS_DIFF_CELL_TOP,
				"  ", out, &err))
		fprintf(out, "  not compared: %s\n", err);
	g_free(err);
	if (ja)
		g_object_unref(ja);
	if (jb)
		g_object_unref(jb);
	g_free(pa);
	g_free(pb);
}

static void sd_list_only(const char *what, GPtrArray *names, FILE *out)
{
	if (!names->len)
		return;
	fprintf(out, "cells only in %s:", what);
	for (guint i = 0; i < names->len; i++)
		fprintf(out, "%s %s", i ? "," : "", (char *)names->pdata[i]);
	fputc('\n', out);
}

static void sd_diff_cells(const char *dir1, const char *dir2, FILE *out)
{
	GPtrArray *ca = sd_cells(dir1), *cb = sd_cells(dir2);
	GPtrArray *only_a = g_ptr_array_new(), *only_b = g_ptr_array_new();
	guint i = 0, j = 0;

	fprintf(out,
		"\ncells (the %d largest changes of each cell's "
		"stats.json):\n",
		SFS_DIFF_CELL_TOP);
	if (!ca->len && !cb->len)
		fputs("no cells/ folders to compare\n", out);
	while (i < ca->len || j < cb->len) {
		int c = i >= ca->len   ? 1
			: j >= cb->len ? -1
				       : strcmp(ca->pdata[i], cb->pdata[j]);
		if (c < 0) {
			g_ptr_array_add(only_a, ca->pdata[i++]);
		} else if (c > 0) {
			g_ptr_array_add(only_b, cb->pdata[j++]);
		} else {
			sd_diff_cell(dir1, dir2, ca->pdata[i], out);
			i++;
			j++;
		}
	}
	sd_list_only("A", only_a, out);
	sd_list_only("B", only_b, out);
	g_ptr_array_unref(only_a);
	g_ptr_array_unref(only_b);
	g_ptr_array_unref(ca);
	g_ptr_array_unref(cb);
}

int sfs_bench_diff(const char *dir1, const char *dir2, FILE *out, char **err)
{
	GPtrArray *ra = NULL, *rb = NULL;
	const char *dirs[2] = {dir1, dir2};
	char *path;
	int rc;

	*err = NULL;
	if (!dir1 || !dir2 || !out) {
		*err = g_strdup("bench diff: two folders and an output needed");
		return -EINVAL;
	}
	for (unsigned k = 0; k < 2; k++) {
		if (!g_file_test(dirs[k], G_FILE_TEST_IS_DIR)) {
			*err = g_strdup_printf(
			    "%s: %s", dirs[k],
			    g_file_test(dirs[k], G_FILE_TEST_EXISTS)
				? "not a folder"
				: "no such folder");
			return -ENOENT;
		}
	}
	path = g_build_filename(dir1, "results.csv", NULL);
	rc = sd_csv_load(path, &ra, err);
	g_free(path);
	if (rc)
		goto out;
	path = g_build_filename(dir2, "results.csv", NULL);
	rc = sd_csv_load(path, &rb, err);
	g_free(path);
	if (rc)
		goto out;
	fprintf(out, "A: %s\nB: %s\n\nresults.csv:\n", dir1, dir2);
	sd_diff_rows(ra, rb, out);
	sd_diff_cells(dir1, dir2, out);
out:
	if (ra)
		g_ptr_array_unref(ra);
	if (rb)
		g_ptr_array_unref(rb);
	return rc;
}
