/*
 * registry.c - the allocator names `alloc=` accepts, each a pair of a
 * mapping model (how a file records its blocks) and a placement model
 * (which free blocks it gets), declared as `sfs_alloc_NAME` (a struct
 * sfs_alloc_preset) in the model's own file.  A new allocator is that file
 * and one line in SFS_ALLOCATORS below; its knobs, its name in --help, the
 * man page and error messages all come from walking this list.
 */
#include <stddef.h>
#include <string.h>

#include <glib.h>

#include "alloc.h"
#include "devmodel.h"

/* One line per allocator, in the order they are listed everywhere. */
#define SFS_ALLOCATORS(X)                                                      \
	X(blockmap)                                                            \
	X(reservation)                                                         \
	X(extent)                                                              \
	X(mballoc)                                                             \
	X(nextfit)

#define SFS_ALLOC_EXTERN(n) extern const struct sfs_alloc_preset sfs_alloc_##n;
#define SFS_ALLOC_ROW(n) &sfs_alloc_##n,

SFS_ALLOCATORS(SFS_ALLOC_EXTERN)

static const struct sfs_alloc_preset *const presets[] = {
    SFS_ALLOCATORS(SFS_ALLOC_ROW)};

const struct sfs_alloc_preset *sfs_alloc_nth(unsigned i)
{
	return i < G_N_ELEMENTS(presets) ? presets[i] : NULL;
}

const struct sfs_alloc_preset *sfs_alloc_find(const char *name)
{
	const struct sfs_alloc_preset *p;

	if (!name)
		return NULL;
	for (unsigned i = 0; (p = sfs_alloc_nth(i)); i++)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

bool sfs_alloc_is(const struct sfs_alloc *a, const char *name)
{
	return a && a->ops && name && strcmp(a->ops->name, name) == 0;
}

const struct sfs_alloc_ops *sfs_alloc_place_nth(unsigned i)
{
	const struct sfs_alloc_preset *p;
	unsigned n = 0;

	for (unsigned j = 0; (p = sfs_alloc_nth(j)); j++) {
		bool seen = false;

		/* a placement shared by two presets is listed once */
		for (unsigned k = 0; k < j && !seen; k++)
			seen = presets[k]->place == p->place;
		if (!seen && n++ == i)
			return p->place;
	}
	return NULL;
}

const struct sfs_knob *sfs_alloc_knob_find(const char *key,
					   const struct sfs_alloc_ops **owner)
{
	const struct sfs_alloc_ops *o;

	for (unsigned i = 0; key && (o = sfs_alloc_place_nth(i)); i++) {
		const struct sfs_knob *k = sfs_knob_find(o->knobs, key);

		if (k) {
			if (owner)
				*owner = o;
			return k;
		}
	}
	return NULL;
}

const char *sfs_alloc_names(void)
{
	static gsize once;
	static char *names;

	if (g_once_init_enter(&once)) {
		GString *s = g_string_new(NULL);
		const struct sfs_alloc_preset *p;

		for (unsigned i = 0; (p = sfs_alloc_nth(i)); i++)
			g_string_append_printf(s, "%s%s", i ? ", " : "",
					       p->name);
		names = g_string_free(s, FALSE);
		g_once_init_leave(&once, 1);
	}
	return names;
}
