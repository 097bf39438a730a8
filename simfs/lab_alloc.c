/* lab_alloc.c - placeholder */
#include <errno.h>
#include "lab.h"

static const char *const alloc_levels[] = {"one", "two", "three"};

static int alloc_build(const struct sfs_lab_params *p, struct sfs_lab_sheet *sh,
		      char **err)
{
	g_string_append(sh->scenario, "A placeholder.\n");
	sfs_lab_ask(sh, false, "42", "because", "What is %d * 7?", 6);
	sfs_lab_ask(sh, true, "1, 2, 3", NULL, "Count to three.");
	return 0;
}

const struct sfs_lab sfs_lab_alloc = {
    .name = "alloc",
    .summary = "placeholder",
    .teaches = "Nothing yet.",
    .levels = 3,
    .level_help = alloc_levels,
    .build = alloc_build,
};
