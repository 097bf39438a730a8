/*
 * knobs.c - the journal's mount options: the knob table of the transaction
 * engine (jnl.c), shared by every journal policy.
 *
 * The values live in struct sfs_config (the engine reads cfg->commit_s and
 * cfg->journal_max_txn when it opens the journal and when they change while
 * mounted), so the offsets are into that struct.  config.c finds the table
 * through a row flagged CFG_MODEL_ROWS of its own table and treats each knob
 * as one of its rows: the option parser, --help, simfs-options(7), bash
 * completion and /.simfs/config list them there, between data= and
 * journal_dev=.  journal_dev= (a file name, a mount's device rather than a
 * tuning of the engine) stays a row of config.c.
 *
 * Sources: ext4(5) for commit= (default 5 s, jbd2's
 * JBD2_DEFAULT_MAX_COMMIT_AGE); jbd2 caps a transaction at a quarter of
 * the log (j_max_transaction_buffers, Linux fs/jbd2/journal.c).
 */
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "devmodel.h" /* struct sfs_knob */

static const struct sfs_knob jnl_knobs[] = {
    {.key = "commit",
     .type = SFS_KNOB_U32,
     .offset = offsetof(struct sfs_config, commit_s),
     .def = "5",
     .min = 1,
     .max = 86400,
     .live = true,
     .metavar = "SECONDS",
     .help = "journal commit interval"},
    {.key = "journal_max_txn",
     .type = SFS_KNOB_U32,
     .offset = offsetof(struct sfs_config, journal_max_txn),
     .def = "0",
     .min = 0,
     .max = UINT32_MAX,
     .live = true,
     .metavar = "BLOCKS",
     .help = "largest transaction before a forced commit (0: a quarter "
	     "of the log, as jbd2)"},
    {.key = NULL},
};

const struct sfs_knob *const sfs_jnl_knobs = jnl_knobs;
