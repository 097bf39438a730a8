#!/usr/bin/env bash
# bench/demo.sh - a short tour of simfs: build if needed, mkfs, mount,
# untar a generated source-like tree and write a 64 MiB file, umount,
# check with e2fsck -fn, mount again and compare every byte, then print a
# summary and `simfs inspect IMAGE summary`.  Then a small experiment: the
# same workload on the ext2, ext3, ext3-journal and ext4 presets over the
# modelled 2009 disk (device=hdd-2009, clock=account), one row per preset
# from each run's statistics: modelled disk time, bytes written, journal
# traffic, commits.
#
# usage: bench/demo.sh [-B BUILDDIR] [-k]     (-k keeps the temp dir)
# Run as root (FUSE).  Exits non-zero if anything does not check out.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$root/build}
KEEP=0
while getopts "B:kh" opt; do
	case $opt in
	B) BUILD=$OPTARG ;;
	k) KEEP=1 ;;
	h) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) exit 2 ;;
	esac
done
SIMFS=$BUILD/simfs
FSBENCH=$BUILD/bench/fsbench

step() { printf '\n== %s\n' "$*"; }

if [[ ! -x $SIMFS || ! -x $FSBENCH ]]; then
	step "building into $BUILD"
	[[ -f $BUILD/build.ninja ]] || meson setup "$BUILD" "$root"
	meson compile -C "$BUILD"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/simfs-demo.XXXXXX")
img=$tmp/demo.img
mnt=$tmp/mnt
mkdir -p "$mnt"
cleanup() {
	set +e
	if mountpoint -q "$mnt"; then
		"$SIMFS" umount "$mnt" || fusermount3 -u -z "$mnt"
	fi
	if [[ $KEEP == 1 ]]; then
		echo "kept $tmp"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# e2fsck -fn prints some problems and still exits 0: read its output.
fsck_verdict() {
	local out rc=0
	out=$(e2fsck -fn "$1" 2>&1) || rc=$?
	if [[ $rc == 0 ]] && ! grep -qvE '^(e2fsck [0-9].*|Pass [1-5]: .*|.*: [0-9]+/[0-9]+ files \([0-9.]+% non-contiguous\), [0-9]+/[0-9]+ blocks|)$' <<<"$out"; then
		echo clean
	else
		echo "NOT clean (exit $rc)"
		echo "$out" >&2
	fi
}

step "simfs mkfs $img 512M"
"$SIMFS" mkfs "$img" 512M

step "a source-like tree (deterministic) packed as a tarball"
tree_info=$("$FSBENCH" mktree "$tmp/src" 42 150 2500 65536)
echo "$tree_info"
tar -C "$tmp" -cf "$tmp/tree.tar" src
"$FSBENCH" seqwrite "$tmp/big.host" 64 1024 >/dev/null

step "simfs mount $img $mnt"
"$SIMFS" mount "$img" "$mnt"
findmnt "$mnt" || true

step "untar into the mount, write a 64 MiB file"
t0=$(date +%s.%N)
tar -C "$mnt" -xf "$tmp/tree.tar"
t1=$(date +%s.%N)
untar_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
echo "untar: ${untar_s} s"
big=$("$FSBENCH" seqwrite "$mnt/big.bin" 64 1024)
big_mibps=$(sed -n 's/^mibps=//p' <<<"$big")
echo "64 MiB write + fsync: $big_mibps MiB/s"
df -h "$mnt"

step "simfs umount $mnt"
"$SIMFS" umount "$mnt"

step "e2fsck -fn $img"
verdict1=$(fsck_verdict "$img")
echo "$verdict1"

step "mount again and compare every byte with the originals"
"$SIMFS" mount "$img" "$mnt"
same=identical
diff -r "$tmp/src" "$mnt/src" >/dev/null || same="DIFFERENT (tree)"
cmp -s "$tmp/big.host" "$mnt/big.bin" || same="DIFFERENT (big.bin)"
echo "contents after remount: $same"
files=$(find "$mnt" -type f | wc -l)
dirs=$(find "$mnt" -type d | wc -l)
bytes=$(du -sb --apparent-size "$mnt" | cut -f1)
"$SIMFS" umount "$mnt"
verdict2=$(fsck_verdict "$img")

step "simfs inspect $img summary"
"$SIMFS" inspect "$img" summary

step "summary"
printf '%-26s %s\n' \
	"files" "$files" \
	"directories" "$dirs" \
	"bytes (apparent)" "$bytes" \
	"untar time" "${untar_s} s" \
	"64 MiB write" "$big_mibps MiB/s" \
	"e2fsck -fn after use" "$verdict1" \
	"contents after remount" "$same" \
	"e2fsck -fn at the end" "$verdict2"
[[ $verdict1 == clean && $verdict2 == clean && $same == identical ]]

step "experiment: one workload, four presets, the 2009 disk model"
printf '%-14s %12s %12s %12s %9s %8s %s\n' preset "disk time ms" \
	"written MB" "journal MB" "commits" "w-amp" "e2fsck"
exp_ok=1
for preset in ext2 ext3 ext3-journal ext4; do
	eimg=$tmp/$preset.img
	"$SIMFS" mkfs --preset "$preset" "$eimg" 512M >/dev/null
	"$SIMFS" mount -o "preset=$preset,device=hdd-2009,clock=account,stats=$tmp/$preset.json" \
		"$eimg" "$mnt"
	tar -C "$mnt" -xf "$tmp/tree.tar"
	"$FSBENCH" seqwrite "$mnt/big.bin" 64 1024 >/dev/null
	"$SIMFS" umount "$mnt"
	v=$(fsck_verdict "$eimg")
	[[ $v == clean ]] || exp_ok=0
	python3 - "$tmp/$preset.json" "$preset" "$v" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
dev, j = d["device"], d.get("journal", {})
busy = dev.get("busy_ns", 0) / 1e6
w = dev["submitted"]["write"]["bytes"] / 1e6
jb = dev["submitted"]["by_category"].get("journal", {}).get("write_bytes", 0) / 1e6
print("%-14s %12.1f %12.1f %12.1f %9d %8.2f %s" % (sys.argv[2], busy, w, jb,
      j.get("commits_total", 0), d["ops"]["write_amplification"], sys.argv[3]))
PY
	rm -f "$eimg"
done
echo "(modelled time only: clock=account lets the host run at full speed;"
echo " clock=emulate would make the runs take that long)"
[[ $exp_ok == 1 ]]
