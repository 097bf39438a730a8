/*
 * promise.c - what each journal policy promises after a crash (journal.h:
 * sfs_jnl_promise), as data: the record the crash checker
 * (simfs/crash_check.c) holds a crashed and recovered image to, so the
 * checker tests promises, never a policy's name.  doc/crash.md explains
 * each promise and why the policy keeps it.
 *
 * A new policy adds its row here; the crash suite walks the policy
 * registry (sfs_jnl_nth) and fails for a policy without one.
 */
#include <stddef.h>

#include <glib.h>

#include "journal.h"

static const struct {
	const struct sfs_jnl_ops *ops;
	struct sfs_jnl_promise promise;
} jnl_promises[] = {
    /* ext2: e2fsck's repair is all there is */
    {&sfs_jnl_none_ops, {0}},
    {&sfs_jnl_writeback_ops, {.journaled = true, .fsync_durable = true}},
    {&sfs_jnl_ordered_ops,
     {.journaled = true,
      .fsync_durable = true,
      .no_foreign = true,
      .data_not_behind = true}},
    /* data goes through the log, never through delayed allocation */
    {&sfs_jnl_journal_ops,
     {.journaled = true,
      .fsync_durable = true,
      .no_foreign = true,
      .data_not_behind = true,
      .data_exact = true,
      .size_exact = true}},
};

const struct sfs_jnl_promise *sfs_jnl_promise(const struct sfs_jnl_ops *ops)
{
	for (size_t i = 0; ops && i < G_N_ELEMENTS(jnl_promises); i++)
		if (jnl_promises[i].ops == ops)
			return &jnl_promises[i].promise;
	return NULL;
}
