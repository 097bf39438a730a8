#!/usr/bin/env bash
# bench/mount_concurrency.sh - concurrent programs on a live mount in
# emulate mode (device=hdd-2009,clock=emulate), each preset with its own
# defaults and no extra knob:
#
#  1. fio, 8 O_DIRECT writers of SIZE MiB each, 256 KiB records: MB/s per
#     preset (the 2009 comparison has ext4 near twice ext2 and ext3);
#  2. fs_mark, 4 threads creating and fsyncing 4 KiB files on ext4:
#     journal commits against fsyncs (group commit: fewer commits);
#  3. a reader of a cached file while a writer keeps the emulated disk
#     busy: the reader's MB/s alone and beside the writer.
#
#   bench/mount_concurrency.sh [-B BUILDDIR] [-d WORKDIR] [-s SIZE_MIB]
#                              [-p "ext2 ext3 ext4"] [-o MOUNT_OPTS] [-1]
#                              [-c CHECKS]
#
# -o adds mount options after each preset's in check 1 (e.g.
# sched=cfq,sync_writes=off); -c runs only the checks named by their
# digits (-c 23: checks 2 and 3); -1 is -c 1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
B=$root/build
W=${TMPDIR:-/tmp}
SIZE=256
PRESETS="ext2 ext3 ext4"
EXTRA=
CHECKS=123
. "$root/bench/lib.sh"
parse_opts B=B d=W s=SIZE p=PRESETS o=EXTRA 1=CHECKS=1 c=CHECKS -- "$@"
SIMFS=$B/simfs
[[ $CHECKS =~ ^[123]+$ ]] || { echo "-c: digits 1, 2 and 3 only" >&2; exit 2; }
tools=
[[ $CHECKS != *1* ]] || tools+=" fio"
[[ $CHECKS != *2* ]] || tools+=" fs_mark"
for t in $tools; do
	command -v "$t" >/dev/null || { echo "$t is not installed (apt-get install fio fsmark)" >&2; exit 1; }
done
[[ -x $SIMFS ]] || { echo "no $SIMFS: build first" >&2; exit 1; }
dir=$(mktemp -d "$W/simfs-mconc.XXXXXX")
mnt=$dir/mnt
mkdir -p "$mnt"
cleanup() { mountpoint -q "$mnt" && "$SIMFS" umount "$mnt" >/dev/null 2>&1; rm -rf "$dir"; }
trap cleanup EXIT

mount_preset() { # mount_preset PRESET IMAGE_SIZE [more options]
	rm -f "$dir/img"
	"$SIMFS" mkfs --preset "$1" "$dir/img" "$2" >/dev/null
	"$SIMFS" mount -o "preset=$1,device=hdd-2009,clock=emulate,stats=$dir/stats.json${3:+,$3}" \
		"$dir/img" "$mnt"
}

if [[ $CHECKS == *1* ]]; then
	echo "1. fio: 8 O_DIRECT writers x ${SIZE} MiB, 256 KiB records (MB/s)${EXTRA:+, -o $EXTRA}"
	declare -A mbs
	for p in $PRESETS; do
		mount_preset "$p" "$((SIZE * 8 + 1024))M" "$EXTRA"
		bw=$(fio --name=w --directory="$mnt" --numjobs=8 --size="${SIZE}m" --bs=256k \
			--direct=1 --rw=write --ioengine=sync --group_reporting \
			--output-format=terse --terse-version=3 2>/dev/null |
			awk -F';' '{print $48}') # write bandwidth, KiB/s
		"$SIMFS" umount "$mnt"
		mbs[$p]=$(awk -v k="$bw" 'BEGIN { printf "%.1f", k * 1024 / 1e6 }')
		# what the modelled disk saw: queue depth, requests, seeks
		dev=$(python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))['device']
s, sub = d['served'], d['submitted']['write']
n = max(s.get('write', 0), 1)
print('queue max %d mean %.1f, %d writes of %.0f KiB, %d seeks (%.1f%% busy seeking)'
      % (s.get('queue_max', 0), s.get('queue_mean', 0), s.get('write', 0),
         sub['bytes'] / n / 1024, d['seeks'],
         100 * d['busy_parts_ns']['seek'] / max(d['busy_ns'], 1)))" "$dir/stats.json")
		printf '  %-15s %6s MB/s   %s\n' "$p" "${mbs[$p]}" "$dev"
	done
	if [[ -n ${mbs[ext4]:-} ]]; then
		for p in $PRESETS; do
			[[ $p == ext4 ]] && continue
			printf '  ext4 / %s = %.2f\n' "$p" "$(awk -v a="${mbs[ext4]}" -v b="${mbs[$p]}" 'BEGIN { print a / b }')"
		done
	fi
fi

if [[ $CHECKS == *2* ]]; then
	echo "2. fs_mark: 4 threads x 100 files of 4 KiB, fsync each, ext4"
	mount_preset ext4 1G
	args=()
	for t in 0 1 2 3; do mkdir -p "$mnt/d$t"; args+=(-d "d$t"); done
	# fs_mark takes directory names shorter than 40 bytes: relative to the
	# mount; its fs_log.txt goes to $dir
	if ! (cd "$mnt" && fs_mark "${args[@]}" -l "$dir/fs_log.txt" -n 100 -s 4096 -S 1 -L 1 \
		>"$dir/fs_mark.out" 2>&1); then
		cat "$dir/fs_mark.out" >&2
		echo "fs_mark failed" >&2
		exit 1
	fi
	"$SIMFS" umount "$mnt"
	python3 - "$dir/stats.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = d["ops"]["by_type"]["fsync"]
c = d["journal"]["commits"]["fsync"]
q = d["device"]["served"]
print("  %d fsyncs, %d commits for them: %.2f fsyncs per commit"
      " (device queue max %d, mean %.2f)"
      % (f, c, f / max(c, 1), q.get("queue_max", 0), q.get("queue_mean", 0)))
PY
fi

if [[ $CHECKS == *3* ]]; then
	echo "3. a cached reader while a writer keeps the disk busy (ext4)"
	mount_preset ext4 2G mem=512M
	dd if=/dev/zero of="$mnt/cached" bs=1M count=64 status=none
	cat "$mnt/cached" >/dev/null # now in simfs's cache
	read_mbs() { dd if="$mnt/cached" of=/dev/null bs=1M 2>&1 | awk '/copied/ {print $(NF-1), $NF}'; }
	alone=$(read_mbs)
	dd if=/dev/zero of="$mnt/big" bs=1M count=1024 oflag=direct status=none &
	writer=$!
	sleep 2
	beside=$(read_mbs)
	wait $writer
	"$SIMFS" umount "$mnt"
	echo "  reader alone: $alone; beside the O_DIRECT writer: $beside"
	awk -v a="$alone" -v b="$beside" 'BEGIN {
		split(a, x, " "); split(b, y, " ")
		# dd prints kB/s, MB/s or GB/s: to MB/s
		u["kB/s"] = 1e-3; u["MB/s"] = 1; u["GB/s"] = 1e3
		printf "  beside / alone = %.2f\n", (y[1] * u[y[2]]) / (x[1] * u[x[2]])
	}'
fi
