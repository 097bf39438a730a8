#!/usr/bin/env bash
# bench/memory.sh - how far above its cache budget (mem=) does the simfs
# daemon's memory go while a workload runs?
#
# Makes a fresh image (simfs mkfs --preset PRESET), mounts it with
# -o mem=MEM (and preset=PRESET unless it is "default"), runs one workload,
# and reports the daemon's peak RSS (VmHWM in /proc/PID/status), its ratio
# to mem= and the margin peak - mem=.  With -l it exits 1 when the margin
# exceeds LIMIT MiB (default: report only).
#
# usage: bench/memory.sh [-p PRESET] [-m MEM] [-w WORKLOAD] [-n FILES]
#                        [-s SIZE_MIB] [-l LIMIT_MIB] [-d WORKDIR] BUILDDIR
#   BUILDDIR    a meson build directory holding the simfs program
#   -p PRESET   default (no preset=), ext4, ext3, ... (default: default)
#   -m MEM      the cache budget as mem= takes it (default 64M)
#   -w WORKLOAD create: FILES empty files, 1,000 per directory
#               write:  one file of SIZE MiB (1 MiB writes, fsync)
#               (default create)
#   -n FILES    files created (default 1000000)
#   -s SIZE     MiB written (default 2048)
#   -l LIMIT    fail when peak RSS - mem= > LIMIT MiB
#   -d WORKDIR  where the temp dir goes (default $TMPDIR or /tmp)
# The create workload prints the RSS every 100,000 files, so the growth
# per file shows.  Run as root (FUSE).  The mount and its temp dir are
# removed on every exit path (including Ctrl-C).
set -euo pipefail

PRESET=default
MEM=64M
WORKLOAD=create
NFILES=1000000
SIZE_MIB=2048
LIMIT_MIB=""
WORK=${TMPDIR:-/tmp}

. "$(dirname "$0")/lib.sh"

parse_opts p=PRESET m=MEM w=WORKLOAD n=NFILES s=SIZE_MIB l=LIMIT_MIB d=WORK -- "$@"
[[ ${#ARGS[@]} -eq 1 ]] || usage 2 >&2
BUILD=${ARGS[0]}
SIMFS=$BUILD/simfs
[[ -x $SIMFS ]] || die "$SIMFS not found (build first)"
[[ $WORKLOAD == create || $WORKLOAD == write ]] || die "-w: create or write, not '$WORKLOAD'"
[[ $NFILES =~ ^[0-9]+$ && $NFILES -gt 0 ]] || die "-n: a positive number of files, not '$NFILES'"
[[ $SIZE_MIB =~ ^[0-9]+$ && $SIZE_MIB -gt 0 ]] || die "-s: a positive size in MiB, not '$SIZE_MIB'"
[[ -z $LIMIT_MIB || $LIMIT_MIB =~ ^[0-9]+$ ]] || die "-l: a number of MiB, not '$LIMIT_MIB'"
[[ $MEM =~ ^[0-9]+[KkMmGg]?$ ]] || die "-m: a size such as 64M, not '$MEM'"
command -v python3 >/dev/null || die "python3 is needed (tests/setup-debian.sh)"

mem_kib=$(to_kib "$MEM")

tmp=$(mktemp -d "$WORK/simfs-memory.XXXXXX")
mnt=$tmp/mnt
img=$tmp/img
pid=""
mounted=0

cleanup() {
	set +e
	if ((mounted)) && mountpoint -q "$mnt"; then
		"$SIMFS" umount "$mnt" || fusermount3 -u -z "$mnt"
	fi
	if [[ -n $pid ]]; then
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

popt=()
mopts="mem=$MEM"
if [[ $PRESET != default ]]; then
	popt=(--preset "$PRESET")
	mopts="preset=$PRESET,$mopts"
fi
if [[ $WORKLOAD == create ]]; then
	# one inode per 8 KiB: room for the files and their directories
	img_mib=$((NFILES / 100 + 512))
	"$SIMFS" mkfs "${popt[@]}" -i 8192 "$img" "${img_mib}M" >/dev/null
else
	img_mib=$((SIZE_MIB + SIZE_MIB / 4 + 512))
	"$SIMFS" mkfs "${popt[@]}" "$img" "${img_mib}M" >/dev/null
fi
mkdir -p "$mnt"

# Foreground daemon in the background: $pid is its PID.
mount_fg "$img" "$mnt" "$mopts" || die "the mount did not appear"

status_kib() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status"; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }
rss0=$(status_kib VmRSS)

echo "simfs memory: workload $WORKLOAD, -o $mopts"
start=$(date +%s.%N)
if [[ $WORKLOAD == create ]]; then
	echo "  files      VmRSS      VmHWM  (every 100,000 files)"
	python3 - "$mnt" "$NFILES" "$pid" <<'EOF'
import os, sys
mnt, n, pid = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def status():
    v = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, rest = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                v[k] = int(rest.split()[0])
    return v
d = None
for i in range(n):
    if i % 1000 == 0:
        d = os.path.join(mnt, "d%04d" % (i // 1000))
        os.mkdir(d)
    os.close(os.open(os.path.join(d, "f%04d" % (i % 1000)),
                     os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644))
    if (i + 1) % 100000 == 0 or i + 1 == n:
        s = status()
        print("  %7d %7.1f MiB %7.1f MiB" % (i + 1, s["VmRSS"] / 1024,
              s["VmHWM"] / 1024), flush=True)
EOF
	sync "$mnt"
else
	dd if=/dev/zero of="$mnt/big" bs=1M count="$SIZE_MIB" conv=fsync status=none
fi
end=$(date +%s.%N)
hwm=$(status_kib VmHWM)
rss=$(status_kib VmRSS)
"$SIMFS" umount "$mnt"
mounted=0
wait "$pid" || true
pid=""

over_kib=$((hwm - mem_kib))
if [[ $WORKLOAD == create ]]; then
	what="$NFILES empty files"
else
	what="$SIZE_MIB MiB"
fi
echo "  workload        $what in $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f s", b - a }')"
echo "  RSS after mount $(mib "${rss0:-0}")"
echo "  RSS at the end  $(mib "$rss")"
echo "  peak (VmHWM)    $(mib "$hwm")"
echo "  mem=            $(mib "$mem_kib")"
echo "  peak / mem=     $(awk -v a="$hwm" -v b="$mem_kib" 'BEGIN { printf "%.2f", a / b }')"
echo "  peak - mem=     $(mib "$over_kib")${LIMIT_MIB:+  (limit $LIMIT_MIB MiB)}"
if [[ -n $LIMIT_MIB ]]; then
	if ((over_kib > LIMIT_MIB * 1024)); then
		echo "  RESULT: over mem= + $LIMIT_MIB MiB"
		exit 1
	fi
	echo "  RESULT: within mem= + $LIMIT_MIB MiB"
fi
