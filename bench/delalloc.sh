#!/usr/bin/env bash
# bench/delalloc.sh - what delayed allocation changes, on a mount with the
# hdd-2009 model (clock=account: modelled time is reported, not waited;
# mem=2G, so a copy of /usr/include stays under the background threshold):
#
#   churn    copy a source tree (default /usr/include) in, delete it
#            before write-back could run, unmount: device bytes written
#            by category, and delayed blocks that died unplaced;
#   writers  N buffered fio jobs each appending its own file in 4 KiB
#            writes, side by side, then sync: extents per file and the
#            mean run placed;
#   tree     copy the source tree in and sync: extents per file, device
#            busy time.
#
# Rows: ext3rs-ordered (reservation windows, placed at write), ext4 with nodelalloc,
# ext4 (delalloc).  Figures are recorded in doc/benchmarks.md.
#
#   bench/delalloc.sh [-B BUILDDIR] [-d WORKDIR] [-t SRC_TREE] [-j JOBS] [-s MB_PER_JOB]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
B=$root/build
W=${TMPDIR:-/tmp}
SRC=/usr/include
JOBS=8
SIZE=32
. "$root/bench/lib.sh"
parse_opts B=B d=W t=SRC j=JOBS s=SIZE -- "$@"
SIMFS=$B/simfs
[ -x "$SIMFS" ] || { echo "no simfs binary at $SIMFS (build first, or -B)" >&2; exit 1; }
[ -d "$SRC" ] || { echo "source tree $SRC not found (-t)" >&2; exit 1; }
command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 is not installed" >&2; exit 1; }
scratch_mount delalloc

# label:preset:extra options
ROWS="ext3rs-ordered:ext3rs-ordered: ext4-nodelalloc:ext4:,nodelalloc ext4:ext4:"

mount_row() { # preset extra stats-file
	rm -f "$dir/img"
	"$SIMFS" mkfs --preset "$1" "$dir/img" 4G >/dev/null
	"$SIMFS" mount -o "preset=$1$2,device=hdd-2009,clock=account,mem=2G,stats=$3" \
		"$dir/img" "$mnt"
}

# Print selected figures of a stats JSON file.
report() { # stats-file what
	python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
dev = d["device"]["submitted"]["by_category"]
mb = lambda b: b / 1e6
w = {k: v["write_bytes"] for k, v in dev.items()}
da = d.get("delalloc", {})
if sys.argv[2] == "churn":
    meta = {k: v for k, v in w.items() if k not in ("data", "journal") and v}
    print("data %.1f MB, journal %d KiB, metadata %d KiB (%s); died unplaced %d blocks"
          % (mb(w["data"]), w["journal"] // 1024, sum(meta.values()) // 1024,
             " ".join("%s %d" % (k, v // 1024) for k, v in sorted(meta.items())),
             da.get("died_blocks", 0)))
else:
    print("busy %.2f s, data written %.1f MB, placed runs %d (mean %.1f blocks)"
          % (d["device"]["busy_ns"] / 1e9, mb(w["data"]), da.get("placed_runs", 0),
             da.get("mean_run_blocks", 0.0)))
EOF
}

frag() {
	"$SIMFS" inspect "$dir/img" frag 2>/dev/null | awk '/extents per file/ {print; exit}'
}

echo "== churn: copy $SRC in, delete it at once, unmount"
for row in $ROWS; do
	IFS=: read -r label preset extra <<<"$row"
	mount_row "$preset" "$extra" "$dir/s.json"
	cp -r "$SRC" "$mnt/tree"
	rm -rf "$mnt/tree"
	"$SIMFS" umount "$mnt"
	printf '%-16s %s\n' "$label" "$(report "$dir/s.json" churn)"
done

echo "== writers: $JOBS buffered jobs x ${SIZE} MiB in 4 KiB writes, then sync"
for row in $ROWS; do
	IFS=: read -r label preset extra <<<"$row"
	mount_row "$preset" "$extra" "$dir/s.json"
	fio --name=w --directory="$mnt" --numjobs="$JOBS" --size="${SIZE}m" \
		--bs=4k --rw=write --ioengine=psync --end_fsync=0 --fallocate=none \
		--group_reporting --output-format=terse >/dev/null 2>&1
	sync -f "$mnt" 2>/dev/null || true
	"$SIMFS" umount "$mnt"
	printf '%-16s %s | %s\n' "$label" "$(report "$dir/s.json" tree)" "$(frag)"
done

echo "== tree: copy $SRC in, unmount"
for row in $ROWS; do
	IFS=: read -r label preset extra <<<"$row"
	mount_row "$preset" "$extra" "$dir/s.json"
	cp -r "$SRC" "$mnt/tree"
	"$SIMFS" umount "$mnt"
	printf '%-16s %s | %s\n' "$label" "$(report "$dir/s.json" tree)" "$(frag)"
done
