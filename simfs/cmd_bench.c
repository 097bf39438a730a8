/* cmd_bench.c - placeholder until simfs bench lands. */
#include <stdio.h>

#include "experiment.h"

int sfs_cmd_bench(int argc, char **argv)
{
	(void)argc, (void)argv;
	fprintf(stderr, "simfs bench: not built yet\n");
	return 1;
}
