#!/usr/bin/env bash
# bench/run_speed.sh - how fast `simfs run` drives the engine, against
# dbench itself through a simfs mount on the same machine, in one run.
#
#   bench/run_speed.sh [-B BUILDDIR] [-d WORKDIR] [-t SECONDS] [-r REPS]
#
# 1. dbench's client.txt, 1 client, device=ideal and cpu=none, one pass
#    over the loadfile through `simfs run` (with no CPU model and an ideal
#    disk, virtual time stands still, so the run is a count, not a time):
#    loadfile operations per host second, from the run's dbench table.
# 2. the same loadfile, 1 client, through dbench on a simfs mount
#    (device=ideal, clock=account) for -t host seconds: dbench's own count
#    of loadfile operations per host second.  Both count the same thing:
#    the sum of dbench's operation table.
# 3. their ratio (the target is at least 20).
# 4. a 128-client dbench of 60 modelled seconds on scsi-2002 through
#    `simfs run`: the host seconds it takes (the target is under 120 on
#    one core).
# Each of 1 and 2 runs -r times, interleaved; the medians are reported.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
B=$root/build
W=${TMPDIR:-/tmp}
T=20
R=3
. "$root/bench/lib.sh"
parse_opts B=B d=W t=T r=R -- "$@"
SIMFS=$B/simfs
LOAD=/usr/share/dbench/client.txt
command -v dbench >/dev/null || { echo "dbench is not installed (apt-get install dbench)" >&2; exit 1; }
[[ -x $SIMFS ]] || { echo "no $SIMFS: build first (meson setup build && meson compile -C build)" >&2; exit 1; }
scratch_mount runspeed

now() { date +%s.%N; }
calc() { awk "BEGIN { print $1 }"; }
# the sum of the counts in dbench's "Operation Count AvgLat MaxLat" table
optable() { awk '/^ *[A-Za-z_]+ +[0-9]+ +[0-9.]+ +[0-9.]+ *$/ {n += $2} END {print n + 0}'; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

run_ops=()
mnt_ops=()
for ((i = 0; i < R; i++)); do
	# 1. simfs run: operations carried out / host seconds
	t0=$(now)
	out=$("$SIMFS" run -q -o device=ideal,cpu=none --size 2G \
		-w "dbench,clients=1,once,warmup=0" "$dir/run.img")
	t1=$(now)
	ops=$(optable <<<"$out")
	run_ops+=("$(calc "$ops / ($t1 - $t0)")")
	rm -f "$dir/run.img"

	# 2. dbench through a simfs mount: its operation table / its seconds
	rm -f "$dir/m.img"
	"$SIMFS" mkfs -j "$dir/m.img" 2G >/dev/null
	"$SIMFS" mount -o device=ideal,clock=account "$dir/m.img" "$mnt"
	dout=$(dbench -c "$LOAD" -D "$mnt" -t "$T" 1 2>&1)
	"$SIMFS" umount "$mnt"
	dops=$(optable <<<"$dout")
	mnt_ops+=("$(calc "$dops / $T")")
done
a=$(printf '%s\n' "${run_ops[@]}" | median)
b=$(printf '%s\n' "${mnt_ops[@]}" | median)
printf 'simfs run, dbench 1 client, ideal, cpu=none: %10.0f loadfile ops per host second\n' "$a"
printf 'dbench on a simfs mount, 1 client, ideal:    %10.0f loadfile ops per host second\n' "$b"
printf 'ratio: %.1f\n' "$(calc "$a / $b")"

# 4. 128 clients, 60 modelled seconds, scsi-2002, on one core
t0=$(now)
out=$(taskset -c 0 "$SIMFS" run -q -o device=scsi-2002,preset=ext3 --size 4G \
	-w dbench,clients=128,time=60 "$dir/big.img")
t1=$(now)
printf 'dbench 128 clients, 60 modelled s, scsi-2002, one core: %.1f host seconds (%s)\n' \
	"$(calc "$t1 - $t0")" "$(awk '/^Throughput/ {print $2, $3}' <<<"$out")"
