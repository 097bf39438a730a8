/*
 * registry.c - the journal policies `data=` accepts, each a table of verbs
 * (struct sfs_jnl_ops, simfs/journal.h) declared as sfs_jnl_NAME_ops at the
 * end of the policy's own file, models/journal/NAME.c.  A new policy is
 * that file and one line in SFS_JNL_POLICIES below; data=NAME, the list in
 * error messages, --help, simfs-options(7) and the crash suite's walk all
 * come from this list (doc/extending.md section 4).
 */
#include <string.h>

#include <glib.h>

#include "journal.h"

/* One line per policy, in the order they are listed everywhere. */
#define SFS_JNL_POLICIES(X)                                                    \
	X(none)                                                                \
	X(writeback)                                                           \
	X(ordered)                                                             \
	X(journal)                                                             \
	X(journal_async)

#define SFS_JNL_EXTERN(n) extern const struct sfs_jnl_ops sfs_jnl_##n##_ops;
#define SFS_JNL_ROW(n) &sfs_jnl_##n##_ops,

SFS_JNL_POLICIES(SFS_JNL_EXTERN)

static const struct sfs_jnl_ops *const jnl_policies[] = {
    SFS_JNL_POLICIES(SFS_JNL_ROW)};

const struct sfs_jnl_ops *sfs_jnl_nth(unsigned i)
{
	return i < G_N_ELEMENTS(jnl_policies) ? jnl_policies[i] : NULL;
}

const struct sfs_jnl_ops *sfs_jnl_find(const char *name)
{
	const struct sfs_jnl_ops *o;

	for (unsigned i = 0; name && (o = sfs_jnl_nth(i)); i++)
		if (strcmp(o->name, name) == 0)
			return o;
	return NULL;
}

const struct sfs_jnl_ops *sfs_jnl_auto(bool has_journal)
{
	return has_journal ? &sfs_jnl_ordered_ops : &sfs_jnl_none_ops;
}

bool sfs_jnl_keeps_log(const struct sfs_jnl_ops *ops)
{
	return ops->open_log != NULL;
}

const struct sfs_jnl_promise *sfs_jnl_promise(const struct sfs_jnl_ops *ops)
{
	return ops ? &ops->promise : NULL;
}
