#!/usr/bin/env bash
# bench/foundation.sh - what does the FUSE foundation cost?
#
# One run measures, on three targets:
#   simfs        a simfs mount (image file in WORKDIR)
#   passthrough  libfuse's example passthrough_ll over a directory of
#                WORKDIR, run with -o cache=never,timeout=1.0: like simfs,
#                every read/write goes to the daemon (direct_io) and
#                entries/attributes are cached by the kernel for 1 s
#   host         that directory of WORKDIR itself (kernel page cache)
# the workloads
#   seq write    SIZE MiB in 1 MiB write()s, fsync at the end (timed)
#   seq read     the same file after dropping caches (host: echo 3 >
#                /proc/sys/vm/drop_caches; simfs is also unmounted and
#                mounted again so that its own cache is cold too)
#   create/stat/unlink  N files of 1 KiB in one directory
# and prints MiB/s and ops/s with the ratios simfs/passthrough and
# simfs/host.  Target, reported and not asserted: simfs at least half of
# passthrough_ll's sequential throughput.
#
# Each workload runs REPS times (default 3), the targets interleaved; the
# table shows medians and every value is listed below it.
#
# usage: bench/foundation.sh [-B BUILDDIR] [-d WORKDIR] [-s SIZE_MIB]
#                            [-n NFILES] [-r REPS] [-o SIMFS_MOUNT_OPTS]
# Run as root (FUSE mounts, drop_caches).  Everything it mounts is
# unmounted, and its temp dir removed, on every exit path.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$root/build}
WORK=${WORK:-/tmp}
SIZE_MIB=1024
NFILES=20000
FILE_BYTES=1024
SIMFS_OPTS=""
REPS=3

. "$root/bench/lib.sh"

parse_opts r=REPS B=BUILD d=WORK s=SIZE_MIB n=NFILES o=SIMFS_OPTS -- "$@"

# ---- build what is missing -------------------------------------------
build_missing

tmp=$(mktemp -d "$WORK/simfs-foundation.XXXXXX")
declare -A mounted=() # mountpoint -> simfs | fuse

cleanup() {
	set +e
	umount_all
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# ---- passthrough_ll from the libfuse examples Debian ships ------------
. "$root/bench/passthrough_ll.sh"
build_passthrough_ll "$tmp" || exit 1

drop_caches() {
	sync
	if [[ -w /proc/sys/vm/drop_caches ]]; then
		echo 3 >/proc/sys/vm/drop_caches
	else
		echo "foundation.sh: cannot drop caches (not root?): reads may be warm" >&2
	fi
}

get() { sed -n "s/^$1=//p" <<<"$2"; }

declare -A R=() # NAME.KEY -> the values of every repetition

# run_target NAME DIR REMOUNT_FUNCTION: one repetition of every workload
run_target() {
	local name=$1 dir=$2 remount=$3 out
	sync # start with nothing dirty from the previous target
	echo "  [$rep/$REPS] $name: sequential write of $SIZE_MIB MiB ..." >&2
	out=$("$FSBENCH" seqwrite "$dir/big" "$SIZE_MIB" 1024)
	R[$name.write]+=" $(get mibps "$out")"
	drop_caches
	$remount
	echo "  [$rep/$REPS] $name: sequential read ..." >&2
	out=$("$FSBENCH" seqread "$dir/big" 1024)
	R[$name.read]+=" $(get mibps "$out")"
	rm -f "$dir/big"
	sync
	echo "  [$rep/$REPS] $name: create/stat/unlink of $NFILES files ..." >&2
	out=$("$FSBENCH" meta "$dir/meta" "$NFILES" "$FILE_BYTES")
	R[$name.create]+=" $(get create_ops "$out")"
	R[$name.stat]+=" $(get stat_ops "$out")"
	R[$name.unlink]+=" $(get unlink_ops "$out")"
	rmdir "$dir/meta"
}

simfs_mount() {
	local o=()
	[[ -n $SIMFS_OPTS ]] && o=(-o "$SIMFS_OPTS")
	"$SIMFS" mount "${o[@]}" "$tmp/simfs.img" "$tmp/simfs"
	mounted[$tmp/simfs]=simfs
}
simfs_remount() {
	"$SIMFS" umount "$tmp/simfs"
	simfs_mount
}
nothing() { :; }

# passthrough_ll holds an O_PATH fd for every inode the kernel has looked
# up (until FORGET, which does not come while the inodes stay cached), so
# it cannot create more files in one go than its open-file limit allows.
# Raise the limit if we may; otherwise run the metadata phase with fewer
# files, the same number on all three targets.
ulimit -Hn $((NFILES + 4096)) 2>/dev/null || true
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
fdmax=$(ulimit -Hn)
NOTE=""
if [[ $fdmax != unlimited ]] && ((fdmax < NFILES + 1024)); then
	NOTE="(open-file limit $fdmax: cut from $NFILES on every target)"
	NFILES=$((fdmax - 2000))
	echo "foundation.sh: note: $NFILES files $NOTE" >&2
fi

echo "foundation benchmark: $SIZE_MIB MiB sequential, $NFILES x $FILE_BYTES B files, $REPS repetitions" >&2
echo "  work dir $WORK ($(findmnt -no FSTYPE -T "$WORK"))" >&2

# (a) simfs
img_mib=$((SIZE_MIB * 2 + 1024))
"$SIMFS" mkfs "$tmp/simfs.img" "${img_mib}M" >/dev/null
mkdir -p "$tmp/simfs"
simfs_mount
# (b) passthrough_ll over a host directory
mkdir -p "$tmp/ptdata" "$tmp/pt"
(
	ulimit -n "$(ulimit -Hn)"
	exec "$tmp/passthrough_ll" -o "source=$tmp/ptdata,cache=never,timeout=1.0" "$tmp/pt"
)
mounted[$tmp/pt]=fuse
# (c) the host directory
mkdir -p "$tmp/host"

# repetitions interleave the targets, so that a slow spell of the host's
# disk does not land on one target only; the table shows medians
for ((rep = 1; rep <= REPS; rep++)); do
	run_target simfs "$tmp/simfs" simfs_remount
	run_target passthrough "$tmp/pt" nothing
	run_target host "$tmp/host" nothing
done

"$SIMFS" umount "$tmp/simfs"
unset "mounted[$tmp/simfs]"
fsck_out=$(e2fsck -fn "$tmp/simfs.img" 2>&1) && fsck=clean || fsck="NOT CLEAN"
if grep -qvE '^(e2fsck [0-9].*|Pass [1-5]: .*|.*: [0-9]+/[0-9]+ files \([0-9.]+% non-contiguous\), [0-9]+/[0-9]+ blocks|)$' <<<"$fsck_out"; then
	fsck="NOT CLEAN"
fi
rm -f "$tmp/simfs.img"
fusermount3 -u "$tmp/pt"
unset "mounted[$tmp/pt]"

# ---- report ------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
mem=$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)

echo
echo "machine: ${cpu:-unknown CPU}, $(nproc) CPUs, $mem RAM, Linux $(uname -r)"
echo "work dir: $WORK on $(findmnt -no FSTYPE -T "$WORK"); simfs -o '${SIMFS_OPTS:-(defaults)}';"
echo "passthrough_ll -o cache=never,timeout=1.0 (direct_io, 1 s entry/attr cache, like simfs)"
echo "simfs image e2fsck -fn after the run: $fsck"
echo "files in the metadata phase: $NFILES x $FILE_BYTES B in one directory $NOTE"
echo
printf '| %-24s | %10s | %14s | %10s | %8s | %10s |\n' \
	workload simfs passthrough_ll host "simfs/pt" "simfs/host"
printf '|%s|%s|%s|%s|%s|%s|\n' -------------------------- ------------ \
	---------------- ------------ ---------- ------------
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
declare -A M=()
for k in "${!R[@]}"; do M[$k]=$(median "${R[$k]}"); done
row() {
	local label=$1 key=$2 unit=$3
	printf '| %-24s | %10s | %14s | %10s | %8s | %10s |\n' "$label ($unit)" \
		"${M[simfs.$key]}" "${M[passthrough.$key]}" "${M[host.$key]}" \
		"$(ratio "${M[simfs.$key]}" "${M[passthrough.$key]}")" \
		"$(ratio "${M[simfs.$key]}" "${M[host.$key]}")"
}
row "seq write 1 MiB" write "MiB/s"
row "seq read 1 MiB" read "MiB/s"
row "create 1 KiB" create "ops/s"
row "stat" stat "ops/s"
row "unlink" unlink "ops/s"
echo
echo "medians of $REPS repetitions; every value (simfs | passthrough_ll | host):"
for k in write read create stat unlink; do
	printf '  %-7s %s |%s |%s\n' "$k" "${R[simfs.$k]}" "${R[passthrough.$k]}" "${R[host.$k]}"
done
echo
for k in write read; do
	r=$(ratio "${M[simfs.$k]}" "${M[passthrough.$k]}")
	verdict=$(awk -v r="$r" 'BEGIN { print (r >= 0.5) ? "met" : "NOT met" }')
	echo "target simfs >= 0.5 x passthrough_ll, sequential $k: $r ($verdict)"
done
if [[ $fsck != clean ]]; then
	echo "$fsck_out" >&2
	exit 1
fi
