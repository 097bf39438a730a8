/*
 * cli.h - what the front ends of the simfs commands share: the one-line
 * error every command prints the same way ("simfs CMD: message" on
 * stderr), and byte counts written for people.
 */
#ifndef SFS_CLI_H
#define SFS_CLI_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

/* "simfs CMD: " and the message on stderr, one line. */
void G_GNUC_PRINTF(2, 3) sfs_err(const char *cmd, const char *fmt, ...);

/* "64 MiB", "1.5 GiB": bytes in the largest binary unit (B to TiB) that
 * leaves at least 1, whole or with one decimal, into buf of len. */
void sfs_human_size(uint64_t bytes, char *buf, size_t len);

#endif /* SFS_CLI_H */
