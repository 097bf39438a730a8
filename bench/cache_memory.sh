#!/usr/bin/env bash
# bench/cache_memory.sh - does the daemon stay within mem= plus a small
# fixed overhead while a workload writes several times mem=?
#
# Makes a fresh image, mounts it with -o mem=MEM (and any -o OPTS), writes
# SIZE MiB into one file (1 MiB write()s, fsync at the end), then unmounts,
# sampling the daemon's VmRSS and VmHWM (/proc/PID/status) every 0.2 s.
# Prints the peak RSS, the budget, and peak - budget (the overhead), and
# exits 1 if the overhead exceeds LIMIT MiB (default 64).
#
# usage: bench/cache_memory.sh [-m MEM] [-s SIZE_MIB] [-l LIMIT_MIB]
#                              [-b BLOCKSIZE] [-o OPTS] [-d WORKDIR] BUILDDIR
#   BUILDDIR   a meson build directory holding the simfs program
#   -m MEM     the cache budget, as mem= takes it (default 128M)
#   -s SIZE    MiB written (default 512: four times the default mem=)
#   -b BS      file system block size (default 4096; 1024 has the most
#              buffers per MiB, so the most per-buffer overhead)
#   -o OPTS    more mount options (e.g. clock=emulate,device=hdd-2009)
# Run as root (FUSE).  The mount and its temp dir are removed on every
# exit path.
set -euo pipefail

MEM=128M
SIZE_MIB=512
LIMIT_MIB=64
OPTS=""
BS=4096
WORK=${TMPDIR:-/tmp}

. "$(dirname "$0")/lib.sh"

parse_opts m=MEM s=SIZE_MIB l=LIMIT_MIB b=BS o=OPTS d=WORK -- "$@"
[[ ${#ARGS[@]} -eq 1 ]] || usage 2 >&2
BUILD=${ARGS[0]}
SIMFS=$BUILD/simfs
[[ -x $SIMFS ]] || die "$SIMFS not found (build first)"

mem_kib=$(to_kib "$MEM")

tmp=$(mktemp -d "$WORK/simfs-cachemem.XXXXXX")
mnt=$tmp/mnt
img=$tmp/img
pid=""
sampler=""
mounted=0

cleanup() {
	set +e
	[[ -n $sampler ]] && kill "$sampler" 2>/dev/null && wait "$sampler" 2>/dev/null
	if ((mounted)) && mountpoint -q "$mnt"; then
		"$SIMFS" umount "$mnt" || fusermount3 -u -z "$mnt"
	fi
	[[ -n $pid ]] && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

img_mib=$((SIZE_MIB + SIZE_MIB / 2 + 256))
"$SIMFS" mkfs -b "$BS" "$img" "${img_mib}M" >/dev/null
mkdir -p "$mnt"

# Foreground daemon in the background: $pid is its PID.
mopts="mem=$MEM${OPTS:+,$OPTS}"
mount_fg "$img" "$mnt" "$mopts" || {
	echo "cache_memory.sh: mount did not appear" >&2
	exit 1
}

status_kib() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status" 2>/dev/null || true; }

rss0=$(status_kib VmRSS)
# Sample VmRSS and VmHWM until told to stop.
(
	while :; do
		r=$(status_kib VmRSS)
		h=$(status_kib VmHWM)
		[[ -n $r ]] && echo "$(date +%s.%N) $r $h"
		sleep 0.2
	done
) >"$tmp/samples" &
sampler=$!

start=$(date +%s.%N)
dd if=/dev/zero of="$mnt/big" bs=1M count="$SIZE_MIB" conv=fsync status=none
end=$(date +%s.%N)
hwm_write=$(status_kib VmHWM)
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
sampler=""
"$SIMFS" umount "$mnt"
mounted=0
wait "$pid" || true
pid=""

peak_rss=$(awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { print m }' "$tmp/samples")
peak_hwm=$(awk 'BEGIN { m = 0 } $3 > m { m = $3 } END { print m }' "$tmp/samples")
nsamples=$(wc -l <"$tmp/samples")
((peak_hwm > peak_rss)) && peak=$peak_hwm || peak=$peak_rss
((hwm_write > peak)) && peak=$hwm_write
over_kib=$((peak - mem_kib))

mib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }
echo "simfs cache memory: wrote $SIZE_MIB MiB, $BS-byte blocks, -o $mopts"
echo "  write time          $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f s", b - a }')"
echo "  samples             $nsamples (every 0.2 s)"
echo "  RSS after mount     $(mib "${rss0:-0}")"
echo "  peak VmRSS sampled  $(mib "$peak_rss")"
echo "  VmHWM               $(mib "$peak")"
echo "  mem= budget         $(mib "$mem_kib")"
echo "  peak - mem=         $(mib "$over_kib")  (limit $LIMIT_MIB MiB)"
if ((over_kib > LIMIT_MIB * 1024)); then
	echo "  RESULT: over the limit"
	exit 1
fi
echo "  RESULT: within mem= + $LIMIT_MIB MiB"
