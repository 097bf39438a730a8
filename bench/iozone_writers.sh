#!/usr/bin/env bash
# bench/iozone_writers.sh - iozone's "initial writers", "rewriters" and
# "readers" phases with fio: N jobs each writing its own file with 256 KiB
# O_DIRECT records, then writing it again in place, then reading it, on the
# hdd-2009 disk model in emulated time, for the ext2 and ext3 presets
# (block by block), ext2rs and ext3rs-ordered (reservation windows, the 2.6.26
# kernel's) and ext4 (table A of doc/results.md: the 2009
# iozone comparison on Linux 2.6.26).  Prints MB/s per preset and job count, the
# extents per file afterwards (simfs inspect IMAGE frag), and each figure
# as a fraction of ext4's with the same number of jobs.  fio runs with
# --fallocate=none: iozone does not preallocate, and fio's default would
# give each ext4 file its blocks up front.
#
# The mount uses sched=cfq (slice_sync 100 ms, slice_idle 8 ms), as the
# 2.6.26 kernel of seed A did by default: each writer's O_DIRECT requests
# are charged as if it held the disk for a time slice, so a contiguous file
# streams and a file interleaved with the others pays a seek per record
# (doc/device-models.md 8.1, doc/benchmarks.md).
#   bench/iozone_writers.sh [-B BUILDDIR] [-d WORKDIR] [-s MB_PER_FILE] [-j "1 8"]
#                           [-p "ext2 ext3 ext2rs ext3rs-ordered ext4"]   (presets; ratios need ext4)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
B=$root/build
W=${TMPDIR:-/tmp}
SIZE=128
JOBS="1 8"
PRESETS="ext2 ext3 ext2rs ext3rs-ordered ext4"
. "$root/bench/lib.sh"
parse_opts B=B d=W s=SIZE j=JOBS p=PRESETS -- "$@"
SIMFS=$B/simfs
command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)" >&2; exit 1; }
scratch_mount iozone

# fio's terse output: field 7 is the read bandwidth, 48 the write
# bandwidth (KiB/s); printed as MB/s (10^6 B/s), as seed A's tables.
declare -A R
printf '%-8s %5s %9s %9s %9s %s\n' preset jobs write rewrite read "extents per file (mean / max)"
for preset in $PRESETS; do
	for n in $JOBS; do
		img=$dir/img
		rm -f "$img"
		# room for the files and the journal: 4 GiB, or more for big runs
		imgmb=$(( n * SIZE * 5 / 4 + 512 ))
		(( imgmb < 4096 )) && imgmb=4096
		"$SIMFS" mkfs --preset "$preset" "$img" "${imgmb}M" >/dev/null
		"$SIMFS" mount -o "preset=$preset,device=hdd-2009,sched=cfq,clock=emulate" "$img" "$mnt"
		# initial writers, rewriters over the same files, then readers;
		# between phases (untimed) the drive writes its cache out, as a
		# real disk does in the idle time between iozone's phases
		for pass in write rewrite read; do
			"$SIMFS" sync "$mnt"
			rw=write field=48
			[[ $pass == read ]] && rw=read field=7
			R[$preset:$n:$pass]=$(fio --name=w --directory="$mnt" --numjobs="$n" \
				--size="${SIZE}m" --bs=256k --direct=1 --rw=$rw \
				--ioengine=psync --fallocate=none --group_reporting \
				--output-format=terse 2>/dev/null |
				awk -F';' -v f=$field '{printf "%.1f", $f / 1000 * 1.024}')
		done
		"$SIMFS" umount "$mnt"
		frag=$("$SIMFS" inspect "$img" frag 2>/dev/null |
			awk '/extents per file/ {print $0; exit}')
		printf '%-8s %5s %9s %9s %9s %s\n' "$preset" "$n" "${R[$preset:$n:write]}" \
			"${R[$preset:$n:rewrite]}" "${R[$preset:$n:read]}" "${frag:-?}"
	done
done
echo
echo "as a fraction of ext4 with the same number of jobs:"
printf '%-8s %5s %9s %9s %9s\n' preset jobs write rewrite read
for preset in $PRESETS; do
	[[ $preset == ext4 ]] && continue
	for n in $JOBS; do
		line=$(printf '%-8s %5s' "$preset" "$n")
		for pass in write rewrite read; do
			line+=$(awk -v a="${R[$preset:$n:$pass]}" -v b="${R[ext4:$n:$pass]:-}" \
				'BEGIN { if (b > 0) printf " %9.2f", a / b; else printf " %9s", "?" }')
		done
		echo "$line"
	done
done
