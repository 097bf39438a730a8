/*
 * manpage.h - the manual pages and the bash completion of the `simfs`
 * program, generated from the tables the program runs on (the command
 * table of main.c, each command's --help text, the knob table of config.c
 * and the model registries), so they cannot drift from it.  Meson runs the
 * hidden `simfs help --man PAGE` and `simfs help --bash-completion` at
 * build time (doc/internals.md, "Manual pages").
 */
#ifndef SFS_MANPAGE_H
#define SFS_MANPAGE_H

#include <stddef.h>
#include <stdio.h>

/* What `simfs --help` and simfs(1) call the program. */
#define SFS_TAGLINE                                                            \
	"a filesystem laboratory: an ext2/ext3/ext4 engine behind FUSE"

/* A subcommand: `simfs NAME ARGS...` runs run(argc, argv) with argv[0] =
 * NAME; `run(2, {NAME, "--help"})` prints its usage to stdout and returns
 * 0. */
struct sfs_cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary; /* one line, for simfs --help and NAME sections */
};

/*
 * `simfs help --man PAGE | --man-list | --bash-completion` (argv[0] is
 * "help").  cmds: the program's commands, n of them, the last one `help`
 * itself (which gets no page); usage prints `simfs --help`.  Writes to
 * stdout; returns the exit status (2 and a message for a bad PAGE).
 */
int sfs_manpage_main(int argc, char **argv, const struct sfs_cmd *cmds,
		     size_t n, void (*usage)(FILE *out));

#endif /* SFS_MANPAGE_H */
