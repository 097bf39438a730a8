#!/usr/bin/env bash
# bench/accounting.sh - what does the measurement cost a mount?
#
# One run writes SIZE MiB sequentially through a simfs mount (1 MiB
# write()s, fsync at the end, timed) in two configurations, interleaved,
# REPS times each, every time on a fresh image:
#   accounting  -o device=ideal,stats=FILE: the timing device stacked over
#               the image (every request counted by op and category,
#               charged to the zero-cost model), the JSON report written
#               at unmount - what every measured run pays;
#   bypass      -o device=none: no timing device, no stats file (the
#               engine's own operation counters are plain increments and
#               always on)
# Both run on the real clock in account mode, so the model never sleeps.
# It prints, for each, the median MiB/s and the median CPU time the
# daemon used for the write (user + system, all threads, from
# /proc/PID/stat: less disturbed by other load than wall time), and the
# overhead of accounting: (bypass - accounting) / bypass in MiB/s, and
# (accounting - bypass) / bypass in daemon CPU.  Target, reported and not
# asserted: under 5 %.  On a busy or virtual host use a tmpfs WORKDIR
# (-d /dev/shm) and more REPS: the host's own disk is noisier than the
# difference being measured.
#
# usage: bench/accounting.sh [-B BUILDDIR] [-d WORKDIR] [-s SIZE_MIB]
#                            [-r REPS] [-o EXTRA_MOUNT_OPTS]
# Run as root (FUSE).  Everything it mounts is unmounted, and its temp dir
# removed, on every exit path.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$root/build}
WORK=${WORK:-/tmp}
SIZE_MIB=1024
REPS=5
EXTRA=""

. "$root/bench/lib.sh"

parse_opts B=BUILD d=WORK s=SIZE_MIB r=REPS o=EXTRA -- "$@"
EXTRA=${EXTRA:+,$EXTRA}

SIMFS=${SIMFS:-$BUILD/simfs}
[ -x "$SIMFS" ] || { echo "accounting.sh: no simfs at $SIMFS (-B BUILDDIR)" >&2; exit 2; }

tmp=$(mktemp -d "$WORK/simfs-acct.XXXXXX")
mnt=$tmp/mnt
mkdir "$mnt"
cleanup() {
	if grep -qs " $mnt fuse" /proc/mounts; then
		"$SIMFS" umount "$mnt" >/dev/null 2>&1 || fusermount3 -u -z "$mnt" || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

img_mib=$((SIZE_MIB + SIZE_MIB / 4 + 64))

# The daemon serving our image: its pid (its command line names the image).
daemon_pid() {
	local p
	for p in /proc/[0-9]*; do
		if tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -q -- " mount .*$tmp/img "; then
			echo "${p#/proc/}"
			return
		fi
	done
}

# CPU seconds (user + system) of process $1 so far.
cpu_s() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"
}

# One timed run: prints "MiB/s CPU_s".
run_one() { # opts
	local t0 t1 pid c0 c1
	"$SIMFS" mkfs -F "$tmp/img" "${img_mib}M" >/dev/null
	"$SIMFS" mount -o "$1$EXTRA" "$tmp/img" "$mnt"
	pid=$(daemon_pid)
	c0=$(cpu_s "$pid")
	t0=$(date +%s.%N)
	dd if=/dev/zero of="$mnt/f" bs=1M count="$SIZE_MIB" conv=fsync status=none
	t1=$(date +%s.%N)
	c1=$(cpu_s "$pid")
	"$SIMFS" umount "$mnt"
	rm -f "$tmp/img"
	awk -v s="$SIZE_MIB" -v a="$t0" -v b="$t1" -v c0="$c0" -v c1="$c1" \
		'BEGIN { printf "%.1f %.2f\n", s / (b - a), c1 - c0 }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

acct=() bypass=() acct_cpu=() bypass_cpu=()
for ((i = 1; i <= REPS; i++)); do
	read -r r c < <(run_one "device=ideal,clock=account,stats=$tmp/stats.json")
	acct+=("$r") acct_cpu+=("$c")
	read -r r c < <(run_one "device=none,clock=account")
	bypass+=("$r") bypass_cpu+=("$c")
	echo "rep $i: accounting ${acct[-1]} MiB/s ${acct_cpu[-1]} s CPU," \
		"bypass ${bypass[-1]} MiB/s ${bypass_cpu[-1]} s CPU" >&2
done
a=$(printf '%s\n' "${acct[@]}" | median)
b=$(printf '%s\n' "${bypass[@]}" | median)
ac=$(printf '%s\n' "${acct_cpu[@]}" | median)
bc=$(printf '%s\n' "${bypass_cpu[@]}" | median)

printf '%-12s %8s %12s   %s\n' config "MiB/s" "daemon CPU s" "runs (MiB/s / CPU s)"
printf '%-12s %8s %12s   %s / %s\n' accounting "$a" "$ac" "${acct[*]}" "${acct_cpu[*]}"
printf '%-12s %8s %12s   %s / %s\n' bypass "$b" "$bc" "${bypass[*]}" "${bypass_cpu[*]}"
awk -v a="$a" -v b="$b" -v ac="$ac" -v bc="$bc" 'BEGIN {
	printf "throughput: accounting/bypass = %.3f, overhead %.1f %%\n", a / b, (b - a) / b * 100
	printf "daemon CPU: accounting/bypass = %.3f, overhead %.1f %%  (target < 5 %%)\n", ac / bc, (ac - bc) / bc * 100
}'
echo "($SIZE_MIB MiB sequential write, 1 MiB writes + fsync, $REPS runs each, medians)"
