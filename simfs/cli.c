/*
 * cli.c - the error line and the human-readable sizes of the simfs
 * commands (cli.h).  Kept apart from any one command so that every front
 * end (main.c, inspect.c, plot.c, cmd_*.c) words them alike.
 */
#include <stdarg.h>
#include <stdio.h>

#include "cli.h"

void sfs_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "simfs %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void sfs_human_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024 && u + 1 < G_N_ELEMENTS(units)) {
		v /= 1024;
		u++;
	}
	if (u == 0 || v == (double)(uint64_t)v)
		g_snprintf(buf, len, "%.0f %s", v, units[u]);
	else
		g_snprintf(buf, len, "%.1f %s", v, units[u]);
}
