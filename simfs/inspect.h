/*
 * inspect.h - `simfs inspect IMAGE [WHAT]`: what dumpe2fs and debugfs do
 * not show at a glance (per-group free runs, a file's block map as runs,
 * the free-space histogram), read through the engine on a read-only open.
 */
#ifndef SFS_INSPECT_H
#define SFS_INSPECT_H

/*
 * Run the inspect subcommand: argv[0] is "inspect", then its options and
 * arguments ("--help" prints the usage).  Writes to stdout, errors as one
 * line "simfs inspect: ..." on stderr.  Returns the exit status: 0, 1 (the
 * image could not be read) or 2 (usage error).
 */
int sfs_inspect_main(int argc, char **argv);

#endif /* SFS_INSPECT_H */
