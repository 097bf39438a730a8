#!/usr/bin/env bash
# bench/dbench.sh - dbench on simfs mounts: ext2-like (data=none with the
# 2.6-era write-back), ext3 data=writeback and data=ordered, on the
# scsi-2002 disk model in emulated time (the mechanism behind table B of doc/results.md: the
# ext3 developers' 2002 dbench comparison on Linux 2.5.28).
#
#   bench/dbench.sh [-B BUILDDIR] [-d WORKDIR] [-t SECONDS] [-c "1 4 16"]
#
# Prints one line per (configuration, clients) with dbench's MB/s and the
# stats that explain it (commits, device bytes written, died-dirty bytes).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
B=$root/build
W=${TMPDIR:-/tmp}
T=30
CLIENTS="1 4 16"
. "$root/bench/lib.sh"
parse_opts B=B d=W t=T c=CLIENTS -- "$@"
SIMFS=$B/simfs
LOAD=/usr/share/dbench/client.txt
command -v dbench >/dev/null || { echo "dbench is not installed (apt-get install dbench)" >&2; exit 1; }
[[ -x $SIMFS ]] || { echo "no $SIMFS: build first (meson setup build && ninja -C build)" >&2; exit 1; }
scratch_mount dbench

common="device=scsi-2002,clock=emulate,mem=1G"
declare -A opts=(
	[ext2]="data=none,vm=2.6"
	[ext3-writeback]="data=writeback,vm=2.6"
	[ext3-ordered]="data=ordered,vm=2.6"
)
printf '%-16s %7s %9s %8s %12s %12s\n' config clients MB/s commits dev_written died_dirty
for cfg in ext2 ext3-writeback ext3-ordered; do
	for n in $CLIENTS; do
		img=$dir/img
		rm -f "$img"
		# 2 GiB, 4 KiB blocks, a 32 MiB journal as on the 2002 machine
		"$SIMFS" mkfs -J size=32M "$img" 2G >/dev/null
		"$SIMFS" mount -o "$common,${opts[$cfg]},stats=$dir/stats.json" "$img" "$mnt"
		mbs=$(dbench -c "$LOAD" -D "$mnt" -t "$T" "$n" 2>&1 |
			awk '/^Throughput/ {print $2}')
		"$SIMFS" umount "$mnt"
		read -r commits written died < <(python3 - "$dir/stats.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
j = d.get("journal", {})
w = d.get("device", {}).get("submitted", {}).get("write", {}).get("bytes", 0)
print(j.get("commits_total", 0), w, d.get("cache", {}).get("died_dirty_bytes", 0))
PY
)
		printf '%-16s %7s %9s %8s %12s %12s\n' "$cfg" "$n" "$mbs" "$commits" "$written" "$died"
	done
done
