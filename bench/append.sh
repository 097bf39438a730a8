#!/usr/bin/env bash
# bench/append.sh - what does a small append cost on a simfs mount, and
# does the cost grow with the file or come from O_APPEND?
#
# N writes of BYTES bytes at the end of one file (fsbench append), once
# with O_APPEND and write(), once with pwrite() at the offset the program
# keeps, on a fresh file and on one first written to START_MIB, on four
# targets:
#   simfs       a simfs mount with its defaults
#   simfs-ext4  a simfs mount, mkfs and mount with --preset/-o preset=ext4
#   passthrough libfuse's example passthrough_ll with -o cache=never
#               (direct_io, as simfs: every write() is one FUSE request)
#   host        a directory of the work dir (the kernel's page cache)
# For each: microseconds of wall time per write, of the writing process's
# CPU time per write (user + system: the system call and, on FUSE, the
# kernel's side of the request), and for the FUSE targets of the daemon's
# CPU time per write (/proc/PID/stat); for simfs, the requests the daemon
# counted (.simfs/stats: WRITE and GETATTR).  Each cell is the median of
# REPS runs with the targets interleaved; the machine's load moves wall
# times most, CPU times least.
#
# usage: bench/append.sh [-B BUILDDIR] [-d WORKDIR] [-n N] [-b BYTES]
#                        [-s START_MIB] [-r REPS]
#   defaults: build, /tmp, 200000 writes of 64 bytes, START_MIB 1024, 3
# Run as root (FUSE).  Everything it mounts is unmounted, and its temp dir
# removed, on every exit path.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$root/build
WORK=${TMPDIR:-/tmp}
N=200000
BYTES=64
START_MIB=1024
REPS=3

. "$root/bench/lib.sh"

parse_opts B=BUILD d=WORK n=N b=BYTES s=START_MIB r=REPS -- "$@"

build_missing

tmp=$(mktemp -d "$WORK/simfs-append.XXXXXX")
declare -A mounted=() # mountpoint -> simfs | fuse
declare -A pid=()     # target -> daemon PID

cleanup() {
	set +e
	umount_all
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# passthrough_ll from the examples Debian ships with libfuse3-dev
. "$root/bench/passthrough_ll.sh"
build_passthrough_ll "$tmp" || exit 1

img_mib=$((START_MIB * 2 + 1024))
for t in simfs simfs-ext4; do
	preset=()
	[[ $t == simfs-ext4 ]] && preset=(--preset ext4)
	"$SIMFS" mkfs "${preset[@]}" "$tmp/$t.img" "${img_mib}M" >/dev/null
	mkdir -p "$tmp/$t"
	mopts=""
	[[ $t == simfs-ext4 ]] && mopts="-o preset=ext4"
	# shellcheck disable=SC2086
	"$SIMFS" mount $mopts "$tmp/$t.img" "$tmp/$t"
	mounted[$tmp/$t]=simfs
	pid[$t]=$(pgrep -f -- "$tmp/$t.img" | head -1)
done
mkdir -p "$tmp/ptdata" "$tmp/passthrough" "$tmp/host"
"$tmp/passthrough_ll" -o "source=$tmp/ptdata,cache=never,timeout=1.0" "$tmp/passthrough"
mounted[$tmp/passthrough]=fuse
pid[passthrough]=$(pgrep -f -- "source=$tmp/ptdata" | head -1)

ticks=$(getconf CLK_TCK)
daemon_cpu() { # seconds * ticks of user + system time
	[[ -n ${pid[$1]:-} ]] && awk '{print $14 + $15}' "/proc/${pid[$1]}/stat" || echo 0
}
requests() { # WRITE GETATTR counted by a simfs mount
	python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))['ops']['by_type']
print(j.get('write', 0), j.get('getattr', 0))" "$tmp/$1/.simfs/stats"
}

declare -A R=() # target.how.start -> "wall cpu daemon" per repetition
declare -A Q=() # target.how.start -> "writes getattrs" (simfs)
targets=(simfs simfs-ext4 passthrough host)
for ((rep = 1; rep <= REPS; rep++)); do
	for start in 0 "$START_MIB"; do
		for how in oappend pwrite; do
			for t in "${targets[@]}"; do
				rm -f "$tmp/$t/f"
				((start == 0)) || "$FSBENCH" seqwrite "$tmp/$t/f" "$start" 64 >/dev/null
				[[ $t == simfs* ]] && read -r w0 g0 < <(requests "$t")
				c0=$(daemon_cpu "$t")
				out=$("$FSBENCH" append "$tmp/$t/f" "$N" "$BYTES" "$how" "$start")
				c1=$(daemon_cpu "$t")
				wall=$(sed -n 's/^us_per_write=//p' <<<"$out")
				cpu=$(sed -n 's/^cpu_us_per_write=//p' <<<"$out")
				d=$(awk -v a="$c0" -v b="$c1" -v t="$ticks" -v n="$N" \
					'BEGIN { printf "%.2f", (b - a) / t * 1e6 / n }')
				[[ $t == host ]] && d=-
				R[$t.$how.$start]+="$wall $cpu $d;"
				if [[ $t == simfs* ]]; then
					read -r w1 g1 < <(requests "$t")
					Q[$t.$how.$start]="$((w1 - w0)) $((g1 - g0))"
				fi
				rm -f "$tmp/$t/f"
			done
		done
	done
done

median() { # one column (1-based) of the ';'-separated repetitions
	tr ';' '\n' <<<"$1" | awk -v c="$2" 'NF { print $c }' | sort -g |
		awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

echo "$N writes of $BYTES bytes at the end of one file, medians of $REPS runs"
echo "(microseconds per write: wall, the writer's CPU, the daemon's CPU;"
echo " for simfs the WRITE and GETATTR requests the daemon counted)"
printf '%-12s %-8s %9s %8s %8s %8s  %s\n' target how start_MiB wall cpu daemon requests
for t in "${targets[@]}"; do
	for start in 0 "$START_MIB"; do
		for how in oappend pwrite; do
			k=$t.$how.$start
			printf '%-12s %-8s %9s %8s %8s %8s  %s\n' "$t" "$how" "$start" \
				"$(median "${R[$k]}" 1)" "$(median "${R[$k]}" 2)" \
				"$(median "${R[$k]}" 3)" "${Q[$k]:-}"
		done
	done
done
for t in simfs simfs-ext4; do
	"$SIMFS" umount "$tmp/$t"
	unset "mounted[$tmp/$t]"
	e2fsck -fn "$tmp/$t.img" >/dev/null 2>&1 || echo "append.sh: $t image NOT CLEAN" >&2
done
