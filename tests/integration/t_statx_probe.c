/*
 * tests/integration/t_statx_probe.c - statx(2) of one path, the fields
 * t_statx.sh compares with debugfs and with a kernel ext4 mount:
 *
 *   btime=SEC.NSEC | btime=none     (STATX_BTIME in stx_mask or not)
 *   dioalign=MEM,OFFSET | dioalign=none   (STATX_DIOALIGN)
 *   basic=yes | basic=no            (all of STATX_BASIC_STATS came back)
 *
 * Raw syscall and <linux/stat.h>: glibc 2.36's struct statx has no
 * stx_dio_* fields.
 */
#include <fcntl.h>
#include <linux/stat.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct statx sx;

	if (argc != 2) {
		fprintf(stderr, "usage: t_statx_probe PATH\n");
		return 2;
	}
	memset(&sx, 0, sizeof(sx));
	if (syscall(SYS_statx, AT_FDCWD, argv[1], 0,
		    STATX_BASIC_STATS | STATX_BTIME | STATX_DIOALIGN,
		    &sx) != 0) {
		perror(argv[1]);
		return 1;
	}
	if (sx.stx_mask & STATX_BTIME)
		printf("btime=%lld.%09u\n", (long long)sx.stx_btime.tv_sec,
		       sx.stx_btime.tv_nsec);
	else
		printf("btime=none\n");
	if (sx.stx_mask & STATX_DIOALIGN)
		printf("dioalign=%u,%u\n", sx.stx_dio_mem_align,
		       sx.stx_dio_offset_align);
	else
		printf("dioalign=none\n");
	printf("basic=%s\n",
	       (sx.stx_mask & STATX_BASIC_STATS) == STATX_BASIC_STATS ? "yes"
								      : "no");
	return 0;
}
